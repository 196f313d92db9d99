//! `goodput record`: check the flags into a [`Plan`](goodput_record::Plan)
//! (output path probed before any request), run it
//! ([`goodput_record::record`]), write the trace through the trace writer and
//! print the summary; with several rates, a rate sweep ([`rate_sweep`]) of
//! the same single recording; with `--find-capacity`, the search of
//! [`capacity`].
//!
//! ```text
//! args (flags) ─▶ plan (validated Plan) ─▶ single (run, write, summary)
//!                  │                  ├─▶ rate_sweep (one single recording per rate)
//!                  │                  └─▶ capacity (recordings until the capacity is bracketed)
//!                  └─ workload (files read, every prompt prepared, nothing sent)
//! ```

pub mod args;
pub mod capacity;
pub mod plan;
pub mod progress;
pub mod rate_sweep;
pub mod recover;
pub mod scrape;
pub mod shard;
pub mod single;
pub mod workload;

use std::io::Write;

use crate::cli::error::Error;
use goodput_record::transport::preflight::ModelCheck;

pub use self::args::{RecordArgs, RECORD_EXIT_HELP};

use crate::cli::exit::EXIT_OK;

/// `goodput record`: plan, run, write the trace, print the summary; with
/// several rates, a rate sweep ([`rate_sweep`]) of the same single recording.
pub fn run(args: RecordArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    if args.recover.is_some() {
        return recover::run(&args, stdout);
    }
    if args.find_capacity {
        if args.shard.is_some() || args.start_at.is_some() {
            return Err(Error::Usage(
                "--shard and --start-at record one point of a shared schedule; \
                 --find-capacity searches rates on one machine"
                    .into(),
            ));
        }
        return capacity::run(args, stdout);
    }
    if args.hold.limits()? != Default::default() {
        return Err(Error::Usage(
            "--max-p95-ttft-ms, --max-p95-e2e-ms, --max-p95-tpot-ms, --max-failure-share and \
             --max-censored-share judge the points of a capacity search: add --find-capacity \
             (`goodput gate` judges one trace, `goodput frontier` a sweep)"
                .into(),
        ));
    }
    if args.request_rate.len() > 1 {
        if args.shard.is_some() || args.start_at.is_some() {
            return Err(Error::Usage(
                "--shard and --start-at take one --request-rate, not a sweep".into(),
            ));
        }
        return rate_sweep::run(args, stdout);
    }
    let mut plan = plan::plan(&args)?;
    preflight(&mut plan)?;
    let progress = progress::wanted(args.no_progress).then_some(progress::Point::Single);
    single::record_one(&plan, progress, stdout).map(|_| EXIT_OK)
}

/// The preflight of `plan` ([`goodput_record::preflight`]), its model
/// finding adopted into the plan ([`goodput_record::Plan::adopt_model`]) and
/// said on a line of its own when the model was taken from `/v1/models` or
/// could not be checked. Returns the finding, for the other points of a
/// sweep or search.
pub(crate) fn preflight(plan: &mut goodput_record::Plan) -> Result<Option<ModelCheck>, Error> {
    let check = goodput_record::preflight(plan)?;
    if let Some(c) = &check {
        plan.adopt_model(c);
        say_model(c, &plan.run.template.model);
    }
    Ok(check)
}

/// The line, on standard error (standard output is the summary), that says
/// where the model came from, when it is news.
fn say_model(check: &ModelCheck, model: &str) {
    let line = match check {
        ModelCheck::Listed => return,
        ModelCheck::Taken(name) => {
            format!("model: {name} (the one model the server lists at /v1/models)")
        }
        ModelCheck::Unchecked(why) => {
            format!("note: --model {model} was not checked against the served models: {why}")
        }
    };
    eprintln!("{}", goodput_util::escape::terminal_lines(&line));
}
