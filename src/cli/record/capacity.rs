//! `goodput record --find-capacity --attainment 0.9 --request-rate R`: the
//! highest open-loop rate whose pass share reaches the target. The search
//! itself is pure ([`goodput_core::frontier::capacity`]); this file records the
//! points it asks for, each through the very same single recording a plain
//! `record` uses, and prints the frontier and the capacity.
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
use goodput_core::frontier::capacity::{rate_text, SearchPoint, SearchSettings, Step};
use goodput_core::receipt::SaturationVerdict;
use goodput_core::trace::Scalar;
use goodput_record::Written;
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
    let template = template(&args.out)?;
    let progress = crate::cli::record::progress::wanted(args.no_progress);
    let mut points: Vec<SearchPoint> = Vec::new();
    let mut rows: Vec<CapacityRow> = Vec::new();
    let mut written: Vec<(String, Written)> = Vec::new();
    loop {
        let rate = match search.next(&points) {
            Step::Record(rate) => rate,
            Step::Done(capacity) => {
                let text = goodput_render::capacity::render(&rows, &capacity, search.attainment);
                say(stdout, &text)?;
                say(stdout, &format!("next: {}\n", frontier_command(&written)))?;
                return Ok(EXIT_OK);
            }
        };
        let index = points.len();
        if index > 0 && !args.cooldown.is_zero() {
            say(
                stdout,
                &format!(
                    "cooling down for {} s\n",
                    goodput_render::sensitivity::short(args.cooldown.as_secs_f64())
                ),
            )?;
            let point = Point::Search {
                k: index + 1,
                max: search.max_points,
            };
            if cooldown(args.cooldown, progress.then_some(point)).is_err() {
                return Err(Error::InterruptedSweep {
                    written: written.into_iter().map(|(p, _)| p).collect(),
                });
            }
        }
        let text = rate_text(rate);
        let mut point = args.clone();
        point.request_rate = vec![Rate {
            per_s: rate,
            text: text.clone(),
        }];
        point.seed = point_seed(args.seed, index);
        point.out = point_path(&template, &text);
        let mut p = plan(&point)?;
        if index == 0 {
            // The same check a plain `record` and a sweep make, once.
            goodput_record::preflight(&p)?;
        }
        let mut put = |k: &str, v: f64| {
            p.workload.insert(k.to_owned(), Scalar::Number(v));
        };
        put("capacityIndex", index as f64);
        put("capacityAttainment", search.attainment);
        put("capacityBaseSeed", args.seed as f64);
        let path = p.out.display().to_string();
        say(
            stdout,
            &format!(
                "capacity point {}: {text}/s, seed {}, → {path}\n",
                index + 1,
                point.seed
            ),
        )?;
        let point = Point::Search {
            k: index + 1,
            max: search.max_points,
        };
        let (w, receipt) = match record_judged(&p, progress.then_some(point), stdout) {
            Ok(done) => done,
            Err(Error::Interrupted { path, rows }) => {
                let bytes = std::fs::metadata(&p.out).map_or(0, |m| m.len() as usize);
                written.push((path.clone(), Written { rows, bytes }));
                say(stdout, &format!("next: {}\n", frontier_command(&written)))?;
                return Err(Error::Interrupted { path, rows });
            }
            Err(e) => return Err(e),
        };
        let all = receipt.as_ref().map(|r| &r.results.all);
        let pass_share = all.and_then(|b| b.rates.pass_share).unwrap_or(0.0);
        say(stdout, &{
            let (share, target) =
                goodput_util::figures::percent_against(pass_share, search.attainment, 1);
            format!(
                "  pass share {share} → {} (target {target})\n",
                if pass_share >= search.attainment {
                    "meets"
                } else {
                    "falls short of"
                },
            )
        })?;
        points.push(SearchPoint {
            rate_per_s: rate,
            pass_share,
        });
        rows.push(CapacityRow {
            rate_per_s: rate,
            pass_share,
            goodput_per_s: all.map_or(0.0, |b| b.rates.goodput_per_s),
            served_per_s: all.and_then(|b| b.saturation.served_per_s),
            verdict: all.map_or(SaturationVerdict::Inconclusive, |b| b.saturation.verdict),
            path: path.clone(),
        });
        written.push((path, w));
    }
}
