//! Rate sweeps: `goodput record --request-rate 5,10,20,40 --out 'trace-{rate}.json'`
//! runs one open-loop recording per rate, in the order given, through the
//! very same [`record_one`](crate::cli::record::single::record_one) a single recording uses.
//!
//! - **Everything is checked before anything is sent**: every rate's plan is
//!   built (schedule drawn, flags validated, output path checked writable)
//!   before the first request of the first point.
//! - `--out` is a template: `{rate}` is replaced by the rate **as written**
//!   on the command line (`2.5` → `trace-2.5.json`); without `{rate}` the
//!   points would overwrite each other, so it is a usage error, as are two
//!   points writing the same path (a repeated rate).
//! - **Seeds**: point `i` (0-based, in the order given) uses
//!   `seed + i` (wrapping), so the sweep is reproducible from `--seed` alone
//!   and no two points share a schedule or prompts: random prompts are drawn
//!   from the point's seed, and a prompt list (`--prompts`, `--dataset`) is
//!   used in an order drawn from it
//!   ([`PromptSource::in_seeded_order`], workload `promptOrder: "seed"`).
//!   Each trace records its own `seed`, plus `sweepIndex`, `sweepPoints` and
//!   `sweepBaseSeed`.
//! - `--cooldown` (default 10 s) separates points so the server drains the
//!   previous point's queue before the next point's window opens.
//! - **Ctrl-C** during point `k` writes point `k`'s trace exactly as a single
//!   recording does and stops the sweep (exit 130); during a cooldown it stops
//!   the sweep at once. Traces already written stay.
//! - At the end (or on an interrupt) it prints the `goodput frontier`
//!   command for the traces written, with `--max-rows`/`--max-bytes` raised
//!   to the largest trace when the defaults would refuse it.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::cli::error::Error;
use goodput_core::trace::Scalar;
use goodput_record::run::Load;
use goodput_record::signal::StopSignal;
use goodput_record::workload::body::PromptSource;
use goodput_record::{Plan, Written};
use goodput_render::record::frontier_next;

use crate::cli::exit::EXIT_OK;
use crate::cli::output::emit;

use crate::cli::record::progress::{Cooldown, Point};

use crate::cli::flags::usage;
use crate::cli::record::args::RecordArgs;
use crate::cli::record::plan::plan;
use crate::cli::record::single::record_one;

/// What `--out` must contain when several rates are given.
pub const RATE_PLACEHOLDER: &str = "{rate}";

/// The seed of point `index` of a sweep started with `base`.
pub fn point_seed(base: u64, index: usize) -> u64 {
    base.wrapping_add(index as u64)
}

/// One point's output path: the template with `{rate}` replaced by `rate_text`.
pub fn point_path(template: &str, rate_text: &str) -> PathBuf {
    PathBuf::from(template.replace(RATE_PLACEHOLDER, rate_text))
}

/// Validates every point of a sweep into its plan; sends nothing.
pub fn plan_sweep(args: &RecordArgs) -> Result<Vec<Plan>, Error> {
    let template = args.out.to_str().ok_or_else(|| {
        usage("--out must be valid UTF-8 to be used as a {rate} template".to_owned())
    })?;
    if !template.contains(RATE_PLACEHOLDER) {
        return Err(usage(format!(
            "--out `{template}`: with several --request-rate values, --out must contain \
             {RATE_PLACEHOLDER} (e.g. --out 'trace-{RATE_PLACEHOLDER}.json') so each rate gets its own trace"
        )));
    }
    let n = args.request_rate.len();
    let mut plans: Vec<Plan> = Vec::with_capacity(n);
    for (index, rate) in args.request_rate.iter().enumerate() {
        let mut point = args.clone();
        point.request_rate = vec![rate.clone()];
        point.seed = point_seed(args.seed, index);
        point.out = point_path(template, &rate.text);
        if plans.iter().any(|p| p.out == point.out) {
            return Err(usage(format!(
                "--request-rate: {} is given twice (both points would write {})",
                rate.text,
                point.out.display()
            )));
        }
        let mut p = plan(&point)?;
        p.run.prompts = p.run.prompts.in_seeded_order(point.seed);
        if let PromptSource::Sessions(set) = &p.run.prompts {
            // The sessions' load plays the same reordered set.
            p.run.load = Load::Sessions { set: set.clone() };
        }
        if matches!(
            p.run.prompts,
            PromptSource::List(_) | PromptSource::Sessions(_)
        ) {
            p.workload
                .insert("promptOrder".to_owned(), Scalar::String("seed".to_owned()));
        }
        let mut put = |k: &str, v: f64| {
            p.workload.insert(k.to_owned(), Scalar::Number(v));
        };
        put("sweepIndex", index as f64);
        put("sweepPoints", n as f64);
        put("sweepBaseSeed", args.seed as f64);
        plans.push(p);
    }
    Ok(plans)
}

/// Waits `cooldown`; `Err(signal)` when SIGINT, SIGTERM or SIGHUP came
/// first (the run before installed their handlers, so a signal here must be
/// waited for, or it would be swallowed). With `progress`, the wait is shown
/// on standard error as the cooldown before that point.
pub(crate) fn cooldown(pause: Duration, progress: Option<Point>) -> Result<(), StopSignal> {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        std::thread::sleep(pause);
        return Ok(());
    };
    let display = progress.map(|point| Cooldown::new(point, pause));
    let started = std::time::Instant::now();
    runtime.block_on(async {
        let sleep = tokio::time::sleep(pause);
        tokio::pin!(sleep);
        let mut tick = tokio::time::interval(Duration::from_millis(250));
        let signal = goodput_record::signal::wait();
        tokio::pin!(signal);
        loop {
            tokio::select! {
                () = &mut sleep => return Ok(()),
                _ = tick.tick() => {
                    if let Some(d) = &display {
                        d.at(started.elapsed());
                    }
                }
                got = &mut signal => return Err(got),
            }
        }
    })
}

pub(crate) fn say(stdout: &mut dyn Write, text: &str) -> Result<(), Error> {
    emit(stdout, text.as_bytes())
}

/// `goodput record` with several rates: plan all, then record each in turn.
pub fn run(args: RecordArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let mut plans = plan_sweep(&args)?;
    if let Some((first, rest)) = plans.split_first_mut() {
        if let Some(check) = crate::cli::record::preflight(first)? {
            rest.iter_mut().for_each(|p| p.adopt_model(&check));
        }
    }
    let progress = crate::cli::record::progress::wanted(args.no_progress);
    let n = plans.len();
    let mut written: Vec<(String, Written)> = Vec::with_capacity(plans.len());
    for (index, (p, rate)) in plans.iter().zip(&args.request_rate).enumerate() {
        if index > 0 && !args.cooldown.is_zero() {
            say(
                stdout,
                &format!(
                    "cooling down for {} s\n",
                    goodput_render::sensitivity::short(args.cooldown.as_secs_f64())
                ),
            )?;
            let point = Point::Sweep { k: index + 1, n };
            if let Err(signal) = cooldown(args.cooldown, progress.then_some(point)) {
                if !written.is_empty() {
                    say(stdout, &frontier_next(&written))?;
                }
                return Err(Error::InterruptedSweep {
                    written: written.into_iter().map(|(p, _)| p).collect(),
                    signal,
                });
            }
        }
        let path = p.out.display().to_string();
        say(
            stdout,
            &format!(
                "sweep point {}/{}: {}/s, seed {}, → {path}\n",
                index + 1,
                plans.len(),
                rate.text,
                point_seed(args.seed, index)
            ),
        )?;
        let point = Point::Sweep { k: index + 1, n };
        match record_one(p, progress.then_some(point), stdout) {
            Ok(w) => written.push((path, w)),
            Err(Error::Interrupted {
                path,
                rows,
                drained,
                signal,
            }) => {
                let bytes = std::fs::metadata(&p.out).map_or(0, |m| m.len() as usize);
                written.push((path.clone(), Written { rows, bytes }));
                say(stdout, &frontier_next(&written))?;
                return Err(Error::Interrupted {
                    path,
                    rows,
                    drained,
                    signal,
                });
            }
            Err(e) => return Err(e),
        }
    }
    say(stdout, &frontier_next(&written))?;
    Ok(EXIT_OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_keep_the_rate_as_written_and_seeds_count_up() {
        assert_eq!(
            point_path("out/trace-{rate}.json", "2.5"),
            PathBuf::from("out/trace-2.5.json")
        );
        assert_eq!(point_seed(42, 0), 42);
        assert_eq!(point_seed(42, 3), 45);
        assert_eq!(point_seed(u64::MAX, 1), 0);
    }
}
