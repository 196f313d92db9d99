//! `goodput record --find-capacity --attainment 0.9 --request-rate R`: the
//! highest open-loop rate whose pass share reaches the target and, given
//! `--max-p95-ttft-ms` and the like (gate's limits), whose tails and shares
//! hold them. The search itself is pure ([`goodput_core::frontier::capacity`]);
//! this file records the points it asks for, each through the very same
//! single recording a plain `record` uses, and prints the frontier and the
//! capacity, naming what failed at the first rate above it that did not hold.
//!
//! - Point `k` (0-based) uses seed `--seed + k` and is written to the
//!   `--out` template with `{rate}` replaced by the rate (at most three
//!   decimals: `trace-22.5.json`); an `--out` without `{rate}` puts
//!   `trace-{rate}.json` beside it.
//! - `--cooldown` separates points; `--warmup` and `--grace` apply to each.
//! - Each trace records `capacityIndex`, `capacityAttainment` and
//!   `capacityBaseSeed` in its workload.
//! - The server is checked once before the first point (the preflight of a
//!   plain `record`; `--no-preflight` skips it).
//! - Ctrl-C behaves as in a rate sweep: the current point's trace is written
//!   and the search stops (exit 130).
//! - The exit status is 0 once the search ends, whatever it found; the
//!   capacity line says when no point passed.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::error::Error;
use crate::cli::exit::EXIT_OK;
use crate::cli::flags::Rate;
use goodput_core::frontier::capacity::{
    judge_point, rate_text, Capacity, SearchPoint, SearchSettings, Step,
};
use goodput_core::frontier::{BlockLimits, CriterionCheck, Limit};
use goodput_core::receipt::{Block, Receipt, SaturationVerdict};
use goodput_core::trace::Scalar;
use goodput_record::{Plan, Written};
use goodput_render::capacity::CapacityRow;
use goodput_render::record::frontier_command;

use crate::cli::flags::usage;
use crate::cli::record::args::RecordArgs;
use crate::cli::record::plan::plan;
use crate::cli::record::progress::Point;
use crate::cli::record::rate_sweep::{cooldown, point_path, point_seed, say, RATE_PLACEHOLDER};
use crate::cli::record::single::record_judged;

/// The settings of the search, checked.
fn settings(args: &RecordArgs) -> Result<SearchSettings, Error> {
    let [start] = args.request_rate.as_slice() else {
        return Err(usage(
            "--find-capacity starts from one rate: give a single --request-rate R",
        ));
    };
    if !(start.per_s.is_finite() && start.per_s > 0.0) {
        return Err(usage(format!(
            "--request-rate {}: the search starts from a rate above 0",
            start.text
        )));
    }
    if !(args.attainment > 0.0 && args.attainment <= 1.0) {
        return Err(usage(format!(
            "--attainment {}: a pass share above 0 and at most 1 (0.9 = 90 %)",
            args.attainment
        )));
    }
    if args.max_points < 2 {
        return Err(usage("--max-points must be at least 2"));
    }
    Ok(SearchSettings {
        start_per_s: start.per_s,
        attainment: args.attainment,
        precision: args.precision,
        max_points: args.max_points,
    })
}

/// The `{rate}` template the points are written to.
fn template(out: &Path) -> Result<String, Error> {
    let text = out
        .to_str()
        .ok_or_else(|| usage("--out must be valid UTF-8 to be used as a {rate} template"))?;
    if text.contains(RATE_PLACEHOLDER) {
        return Ok(text.to_owned());
    }
    let dir = out.parent().unwrap_or(Path::new(""));
    let path: PathBuf = dir.join(format!("trace-{RATE_PLACEHOLDER}.json"));
    path.to_str()
        .map(str::to_owned)
        .ok_or_else(|| usage("--out must be valid UTF-8"))
}

/// `goodput record --find-capacity`: record points until the search ends.
pub fn run(args: RecordArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let search = settings(&args)?;
    let limits = args.hold.limits()?;
    let template = template(&args.out)?;
    let progress = crate::cli::record::progress::wanted(args.no_progress);
    let mut recorded = Recorded::default();
    loop {
        let rate = match search.next(&recorded.points) {
            Step::Record(rate) => rate,
            Step::Done(capacity) => return recorded.finish(&capacity, &args, &limits, stdout),
        };
        let index = recorded.points.len();
        if index > 0 && !args.cooldown.is_zero() {
            cool_down(&args, &search, index, progress, &recorded.written, stdout)?;
        }
        let p = plan_point(
            &args,
            &search,
            (rate, index),
            &template,
            &mut recorded.model,
            stdout,
        )?;
        let point = search_point(&search, index);
        let (w, receipt) =
            record_point(&p, progress.then_some(point), &mut recorded.written, stdout)?;
        let all = receipt.as_ref().map(|r| &r.results.all);
        let (judged, checks) = judge_point(rate, all, &limits);
        let checks: Vec<CriterionCheck> = checks.iter().map(Into::into).collect();
        say_pass_share(judged.pass_share, search.attainment, stdout)?;
        if let Some(line) = goodput_render::capacity::point_limits_line(&checks) {
            say(stdout, &line)?;
        }
        recorded.push(judged, checks, all, p.out.display().to_string(), w);
    }
}

/// What the search has recorded so far, in order.
#[derive(Default)]
struct Recorded {
    /// What the search sees of each point.
    points: Vec<SearchPoint>,
    /// What the frontier table shows of each point.
    rows: Vec<CapacityRow>,
    /// Each point's trace, for the `next:` frontier command.
    written: Vec<(String, Written)>,
    /// What the preflight before the first point found out about the model.
    model: Option<goodput_record::transport::preflight::ModelCheck>,
}

impl Recorded {
    /// Adds a recorded point: what the search sees of it, its limits'
    /// checks and figures, and its trace.
    fn push(
        &mut self,
        point: SearchPoint,
        checks: Vec<CriterionCheck>,
        all: Option<&Block>,
        path: String,
        written: Written,
    ) {
        self.points.push(point);
        self.rows.push(CapacityRow {
            rate_per_s: point.rate_per_s,
            pass_share: point.pass_share,
            goodput_per_s: all.map_or(0.0, |b| b.rates.goodput_per_s),
            served_per_s: all.and_then(|b| b.saturation.served_per_s),
            verdict: all.map_or(SaturationVerdict::Inconclusive, |b| b.saturation.verdict),
            path: path.clone(),
            checks,
        });
        self.written.push((path, written));
    }

    /// The search is over: prints the frontier with the capacity, and the
    /// `frontier` command over every trace (judging by the same criteria).
    fn finish(
        &self,
        capacity: &Capacity,
        args: &RecordArgs,
        limits: &BlockLimits,
        stdout: &mut dyn Write,
    ) -> Result<i32, Error> {
        let listed = Limit::all(limits);
        let text = goodput_render::capacity::render(&self.rows, capacity, args.attainment, &listed);
        say(stdout, &text)?;
        let command = frontier_command(&self.written);
        say(stdout, &format!("next: {command}{}\n", judged_by(args)))?;
        Ok(EXIT_OK)
    }
}

/// The flags that make `goodput frontier` judge the traces by the search's
/// criteria: with limits, the target and every limit as written; without,
/// nothing (the command is the pass-share search's, unchanged).
fn judged_by(args: &RecordArgs) -> String {
    let h = &args.hold;
    let t = &h.tails;
    let given = [
        (
            "--max-failure-share",
            h.max_failure_share.as_ref().map(ToString::to_string),
        ),
        (
            "--max-censored-share",
            h.max_censored_share.as_ref().map(ToString::to_string),
        ),
        (
            "--max-p95-ttft-ms",
            t.max_p95_ttft_ms.as_ref().map(ToString::to_string),
        ),
        (
            "--max-p95-e2e-ms",
            t.max_p95_e2e_ms.as_ref().map(ToString::to_string),
        ),
        (
            "--max-p95-tpot-ms",
            t.max_p95_tpot_ms.map(|x| x.to_string()),
        ),
        (
            "--max-p95-ttfa-ms",
            t.max_p95_ttfa_ms.as_ref().map(ToString::to_string),
        ),
    ];
    let flags: String = given
        .iter()
        .filter_map(|(flag, v)| v.as_ref().map(|v| format!(" {flag} {v}")))
        .collect();
    if flags.is_empty() {
        return flags;
    }
    format!(" --attainment {}{flags}", args.attainment)
}

/// How the display names point `index` (0-based) of the search.
fn search_point(search: &SearchSettings, index: usize) -> Point {
    Point::Search {
        k: index + 1,
        max: search.max_points,
    }
}

/// The `--cooldown` before point `index`, announced; Ctrl-C during it ends
/// the search with the traces written so far.
fn cool_down(
    args: &RecordArgs,
    search: &SearchSettings,
    index: usize,
    progress: bool,
    written: &[(String, Written)],
    stdout: &mut dyn Write,
) -> Result<(), Error> {
    say(
        stdout,
        &format!(
            "cooling down for {} s\n",
            goodput_render::sensitivity::short(args.cooldown.as_secs_f64())
        ),
    )?;
    let point = search_point(search, index);
    if let Err(signal) = cooldown(args.cooldown, progress.then_some(point)) {
        return Err(Error::InterruptedSweep {
            written: written.iter().map(|(p, _)| p.clone()).collect(),
            signal,
        });
    }
    Ok(())
}

/// Point `index`'s plan, announced: the flags with its rate, seed
/// `--seed + index` and `{rate}` path, checked as a plain `record` checks
/// them (the server is probed before the first point only), its workload
/// declaring the search.
fn plan_point(
    args: &RecordArgs,
    search: &SearchSettings,
    (rate, index): (f64, usize),
    template: &str,
    model: &mut Option<goodput_record::transport::preflight::ModelCheck>,
    stdout: &mut dyn Write,
) -> Result<Plan, Error> {
    let text = rate_text(rate);
    let mut point = args.clone();
    point.request_rate = vec![Rate {
        per_s: rate,
        text: text.clone(),
    }];
    point.seed = point_seed(args.seed, index);
    point.out = point_path(template, &text);
    let mut p = plan(&point)?;
    if index == 0 {
        // The same check a plain `record` and a sweep make, once.
        *model = crate::cli::record::preflight(&mut p)?;
    } else if let Some(check) = model {
        p.adopt_model(check);
    }
    let mut put = |k: &str, v: f64| {
        p.workload.insert(k.to_owned(), Scalar::Number(v));
    };
    put("capacityIndex", index as f64);
    put("capacityAttainment", search.attainment);
    put("capacityBaseSeed", args.seed as f64);
    say(
        stdout,
        &format!(
            "capacity point {}: {text}/s, seed {}, → {}\n",
            index + 1,
            point.seed,
            p.out.display()
        ),
    )?;
    Ok(p)
}

/// Records one point through the single recording a plain `record` uses.
/// On Ctrl-C its trace joins `written` and the `frontier` command over
/// every trace is printed before the interrupt is returned.
fn record_point(
    p: &Plan,
    progress: Option<Point>,
    written: &mut Vec<(String, Written)>,
    stdout: &mut dyn Write,
) -> Result<(Written, Option<Receipt>), Error> {
    match record_judged(p, progress, stdout) {
        Ok(done) => Ok(done),
        Err(Error::Interrupted {
            path,
            rows,
            drained,
            signal,
        }) => {
            let bytes = std::fs::metadata(&p.out).map_or(0, |m| m.len() as usize);
            written.push((path.clone(), Written { rows, bytes }));
            say(stdout, &format!("next: {}\n", frontier_command(written)))?;
            Err(Error::Interrupted {
                path,
                rows,
                drained,
                signal,
            })
        }
        Err(e) => Err(e),
    }
}

/// The point's pass share against the target.
fn say_pass_share(pass_share: f64, attainment: f64, stdout: &mut dyn Write) -> Result<(), Error> {
    let (share, target) = goodput_util::figures::percent_against(pass_share, attainment, 1);
    let against = if pass_share >= attainment {
        "meets"
    } else {
        "falls short of"
    };
    say(
        stdout,
        &format!("  pass share {share} → {against} (target {target})\n"),
    )
}
