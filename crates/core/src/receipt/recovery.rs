//! Recovery after a burst (docs/contract.md §10.10): from which
//! arrival on was every request of a class served within its gates again.
//!
//! **What counts as a miss.** Each cohort row of the class that arrived at or
//! after the burst's end is one of three things. It *missed* when it
//! completed over its TTFT or E2E gate (TPOT is not a recovery gate), when it
//! failed, or when it is censored and already certain to miss
//! (`knownLate`, the verdict's own judgement: a seen first token over the
//! TTFT gate, or an elapsed `horizon − arrival` at or past a gate it has not
//! reached). It *met* the gates when it completed within them, or when it is
//! censored and what was seen already meets every recovery gate (a first
//! token within the TTFT gate, in a class without an E2E gate). Any other
//! censored row is *undecided*: it is not a miss, because nothing shows it
//! will miss, and not evidence of recovery either.
//!
//! **The recovery instant.** With a tolerance of `K` misses (`--recovery-
//! tolerance`, default 0), `R` is the earliest instant at or after the
//! burst's end — the burst's end or an arrival instant — such that at most
//! `K` misses arrived at or after `R`. Counting back from the last miss, that
//! is the first arrival instant strictly after the `(K + 1)`-th miss from the
//! end (a tie at that instant counts with it, since `R` is an instant); with
//! at most `K` misses after the burst, `R` is the burst's end itself. So `R`
//! never precedes the last miss beyond the tolerance, and a relapse moves it
//! past the relapse. It does not depend on any window size.
//!
//! **Never.** `recoveryS` is null, with a reason, when no arrival follows the
//! `(K + 1)`-th miss from the end ("never recovered within the window"),
//! and also when no arrival from `R` on met the gates: a recovery needs one
//! request served within them, or a tolerance would call recovered a class
//! whose every later request missed, and a run cut while its queue still
//! grows (the trailing rows unfinished but not yet certain to miss) would
//! read as recovered at the cut. It is null as well when the burst does not
//! end before the window's end, or the class has neither a TTFT nor an E2E
//! gate.
//!
//! **Time bins.** Beside the figure, the window is cut into
//! [`TTFT_BINS`] equal bins by arrival; each bin gives its arrivals, its
//! completed rows and their nearest-rank p95 TTFT, so a reader can watch the
//! tail rise with the burst and fall back.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::{nearest_rank, sort_ascending};
use crate::trace::{Contract, Gates, Phase, RawRow, Trace};
use crate::verdict::{Judgement, Verdict};

/// The phase recovery is measured from when no `--burst-phase` is given.
pub const DEFAULT_BURST_PHASE: &str = "burst";
/// The default tolerance: no miss may follow the recovery instant (SPEC
/// §8.1: strict unless a tolerance is declared).
pub const DEFAULT_TOLERANCE: u64 = 0;
/// How many equal time bins of p95 TTFT cover the window.
pub const TTFT_BINS: usize = 20;

/// How recovery is measured.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecoveryOptions {
    /// The phase whose end recovery counts from.
    pub burst_phase: String,
    /// The phase was named explicitly: a trace without it is an error, not
    /// simply a receipt without recovery.
    pub required: bool,
    /// Misses allowed among the arrivals from the recovery instant on.
    pub tolerance: u64,
}

impl Default for RecoveryOptions {
    fn default() -> Self {
        RecoveryOptions {
            burst_phase: DEFAULT_BURST_PHASE.to_owned(),
            required: false,
            tolerance: DEFAULT_TOLERANCE,
        }
    }
}

/// Why recovery cannot be measured at all.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecoveryError {
    /// `--burst-phase` names a phase the trace does not declare.
    #[error("--burst-phase: the trace declares no phase {name:?} (phases: {known})")]
    UnknownPhase {
        /// The name given.
        name: String,
        /// The phases the trace declares (`none` when it declares none).
        known: String,
    },
}

/// Recovery after the burst, per class (the receipt's `recovery`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Recovery {
    /// The phase recovery counts from.
    pub burst_phase: String,
    /// Where that phase starts, ms.
    pub burst_start_ms: f64,
    /// Where that phase ends, ms: recovery times count from here.
    pub burst_end_ms: f64,
    /// Misses allowed among the arrivals from the recovery instant on (0: every one must meet the gates).
    pub tolerance: u64,
    /// Each class's recovery.
    pub classes: BTreeMap<String, ClassRecovery>,
}

/// One class's recovery and its p95 TTFT over time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClassRecovery {
    /// Seconds from the burst's end to the recovery instant; null when there is none.
    pub recovery_s: Option<f64>,
    /// The recovery instant: the burst's end, or the first arrival after the last miss beyond the tolerance, ms; null when none.
    pub recovered_at_ms: Option<f64>,
    /// Why `recoveryS` is null (null when it is not).
    pub reason: Option<String>,
    /// Cohort rows of the class that arrived at or after the burst's end.
    pub arrivals_after_burst: u64,
    /// Of those, misses: over the TTFT or E2E gate, failed, or unfinished and certain to miss (knownLate).
    pub misses_after_burst: u64,
    /// Cohort rows of the class that arrived at or after the recovery instant; null when there is none.
    pub arrivals_after_recovery: Option<u64>,
    /// Of those, misses (at most the tolerance); null when there is no recovery instant.
    pub misses_after_recovery: Option<u64>,
    /// Of those, rows unfinished at the horizon and neither certain to miss nor to meet the gates; null when there is no recovery instant.
    pub undecided_after_recovery: Option<u64>,
    /// The window cut into equal bins by arrival: p95 TTFT of each.
    pub ttft_bins: Vec<TtftBin>,
}

/// One time bin of a class's arrivals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TtftBin {
    /// First instant of the bin (inclusive), ms.
    pub start_ms: f64,
    /// End of the bin (exclusive), ms.
    pub end_ms: f64,
    /// Cohort rows of the class arriving in the bin.
    pub arrivals: u64,
    /// Of those, completed rows (pass or miss).
    pub completed: u64,
    /// Nearest-rank p95 TTFT of the completed rows, ms; null when none completed.
    pub p95_ttft_ms: Option<f64>,
}

/// What one cohort row says about recovery (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    /// Served within the TTFT and E2E gates, as far as is known for certain.
    Met,
    /// Over a gate, failed, or unfinished and certain to miss.
    Missed,
    /// Unfinished, and not yet certain either way.
    Undecided,
}

/// One cohort row as recovery sees it.
#[derive(Clone, Copy, Debug)]
struct Point {
    arrival_ms: f64,
    /// The TTFT of a completed row (for the bins).
    ttft_ms: Option<f64>,
    outcome: Outcome,
}

/// The recovery block of a trace, or `None` when the trace has no phase of
/// that name and none was asked for by name.
pub fn recovery(
    trace: &Trace,
    judgements: &[Judgement],
    options: &RecoveryOptions,
) -> Result<Option<Recovery>, RecoveryError> {
    let contract = &trace.contract;
    let Some(burst) = burst_phase(contract, options)? else {
        return Ok(None);
    };
    let classes = contract
        .classes
        .iter()
        .zip(class_points(trace, judgements))
        .map(|((name, gates), mut pts)| {
            // A stable sort: equal arrivals keep their row order.
            pts.sort_by(|a, b| a.arrival_ms.total_cmp(&b.arrival_ms));
            let class = class_recovery(&pts, gates, burst, contract.end_ms, options.tolerance);
            let bins = ttft_bins(&pts, contract.start_ms, contract.end_ms);
            (
                name.clone(),
                ClassRecovery {
                    ttft_bins: bins,
                    ..class
                },
            )
        })
        .collect();
    Ok(Some(Recovery {
        burst_phase: burst.name.clone(),
        burst_start_ms: burst.start_ms,
        burst_end_ms: burst.end_ms,
        tolerance: options.tolerance,
        classes,
    }))
}

/// The burst phase the options name; `None` when the default is absent.
fn burst_phase<'a>(
    contract: &'a Contract,
    options: &RecoveryOptions,
) -> Result<Option<&'a Phase>, RecoveryError> {
    if let Some(burst) = contract
        .phases
        .iter()
        .find(|p| p.name == options.burst_phase)
    {
        return Ok(Some(burst));
    }
    if !options.required {
        return Ok(None);
    }
    let names: Vec<&str> = contract.phases.iter().map(|p| p.name.as_str()).collect();
    Err(RecoveryError::UnknownPhase {
        name: options.burst_phase.clone(),
        known: if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        },
    })
}

/// Each declared class's cohort rows, in row order.
fn class_points(trace: &Trace, judgements: &[Judgement]) -> Vec<Vec<Point>> {
    let contract = &trace.contract;
    let gates: Vec<&Gates> = contract.classes.values().collect();
    let mut points: Vec<Vec<Point>> = gates.iter().map(|_| Vec::new()).collect();
    for (row, j) in trace.rows.iter().zip(judgements) {
        let (Some(class), Some(arrival_ms)) = (j.class, row.arrival_ms.value()) else {
            continue;
        };
        let (Some(g), Some(list)) = (gates.get(class), points.get_mut(class)) else {
            continue;
        };
        if let Some(outcome) = outcome(row, arrival_ms, &j.verdict, g, contract) {
            list.push(Point {
                arrival_ms,
                ttft_ms: j.verdict.measured().and_then(|m| m.ttft_ms),
                outcome,
            });
        }
    }
    points
}

/// What a row says about recovery; `None` outside the cohort. A censored
/// row is a miss exactly when the verdict found it `knownLate`, so the
/// receipt has one definition of "certain to miss"; otherwise it met the
/// gates only when what was seen already meets every one of them (a first
/// token within the TTFT gate, and no E2E gate, which an unfinished row
/// cannot be shown to meet).
fn outcome(
    row: &RawRow,
    arrival_ms: f64,
    verdict: &Verdict,
    gates: &Gates,
    contract: &Contract,
) -> Option<Outcome> {
    Some(match verdict {
        Verdict::Invalid(_) | Verdict::Excluded(_) => return None,
        Verdict::Pass(_) => Outcome::Met,
        Verdict::Miss(_, missed) if missed.ttft || missed.e2e => Outcome::Missed,
        Verdict::Miss(..) => Outcome::Met,
        Verdict::Failed { .. }
        | Verdict::Censored {
            known_late: true, ..
        } => Outcome::Missed,
        Verdict::Censored { .. } => {
            let first = row
                .first_token_ms
                .value()
                .filter(|f| *f <= contract.horizon_ms);
            let ttft_met = gates
                .ttft_ms
                .is_none_or(|g| first.is_some_and(|f| contract.equality.meets(f - arrival_ms, g)));
            if ttft_met && gates.e2e_ms.is_none() {
                Outcome::Met
            } else {
                Outcome::Undecided
            }
        }
    })
}

/// The recovery of one class from its points sorted by arrival (bins left empty).
fn class_recovery(
    pts: &[Point],
    gates: &Gates,
    burst: &Phase,
    window_end_ms: f64,
    tolerance: u64,
) -> ClassRecovery {
    let after: Vec<Point> = pts
        .iter()
        .copied()
        .filter(|p| p.arrival_ms >= burst.end_ms)
        .collect();
    let misses = count(&after, Outcome::Missed);
    let base = ClassRecovery {
        recovery_s: None,
        recovered_at_ms: None,
        reason: None,
        arrivals_after_burst: after.len() as u64,
        misses_after_burst: misses,
        arrivals_after_recovery: None,
        misses_after_recovery: None,
        undecided_after_recovery: None,
        ttft_bins: Vec::new(),
    };
    let null = |reason: String| ClassRecovery {
        reason: Some(reason),
        ..base.clone()
    };
    if let Some(reason) = unmeasurable(gates, burst, window_end_ms, after.len()) {
        return null(reason);
    }
    let Some(at) = recovery_instant(&after, burst.end_ms, tolerance) else {
        return null(never_recovered(&after, misses, tolerance));
    };
    let from: Vec<Point> = after
        .iter()
        .copied()
        .filter(|p| p.arrival_ms >= at)
        .collect();
    if count(&from, Outcome::Met) == 0 {
        return null(not_shown(&from, at, tolerance));
    }
    ClassRecovery {
        recovery_s: Some((at - burst.end_ms) / 1000.0),
        recovered_at_ms: Some(at),
        arrivals_after_recovery: Some(from.len() as u64),
        misses_after_recovery: Some(count(&from, Outcome::Missed)),
        undecided_after_recovery: Some(count(&from, Outcome::Undecided)),
        ..base
    }
}

fn count(pts: &[Point], outcome: Outcome) -> u64 {
    pts.iter().filter(|p| p.outcome == outcome).count() as u64
}

/// The earliest instant at or after the burst's end (the end itself, or an
/// arrival instant) with at most `tolerance` misses arriving at or after it:
/// the first arrival instant strictly after the `(tolerance + 1)`-th miss
/// from the end, or the burst's end when there are not that many. `None`
/// when no arrival follows that miss. `after` is sorted by arrival.
fn recovery_instant(after: &[Point], burst_end_ms: f64, tolerance: u64) -> Option<f64> {
    let skip = usize::try_from(tolerance).unwrap_or(usize::MAX);
    match after
        .iter()
        .rev()
        .filter(|p| p.outcome == Outcome::Missed)
        .nth(skip)
    {
        None => Some(burst_end_ms),
        Some(beyond) => after
            .iter()
            .map(|p| p.arrival_ms)
            .find(|t| *t > beyond.arrival_ms),
    }
}

/// Why recovery cannot be read at all (the burst runs to the window's end,
/// the class has no gate to recover under, or nothing arrived after the burst).
fn unmeasurable(
    gates: &Gates,
    burst: &Phase,
    window_end_ms: f64,
    arrivals_after: usize,
) -> Option<String> {
    if burst.end_ms >= window_end_ms {
        return Some(format!(
            "the burst phase ends at {} ms, not before the window's end ({} ms)",
            burst.end_ms, window_end_ms
        ));
    }
    if gates.ttft_ms.is_none() && gates.e2e_ms.is_none() {
        return Some("the class has neither a TTFT nor an E2E gate to recover under".to_owned());
    }
    if arrivals_after == 0 {
        return Some(format!(
            "no arrival of the class at or after the burst's end ({} ms)",
            burst.end_ms
        ));
    }
    None
}

/// The reason when no arrival follows the last miss beyond the tolerance.
fn never_recovered(after: &[Point], misses: u64, tolerance: u64) -> String {
    let last = after.last().map_or(f64::NAN, |p| p.arrival_ms);
    let beyond = if tolerance == 0 {
        String::new()
    } else {
        format!(", with too many misses before it for the tolerance of {tolerance}")
    };
    format!(
        "never recovered within the window: the last arrival (at {last} ms) missed{beyond}; \
         {misses} of the {} arrivals after the burst missed (failed rows and unfinished rows \
         certain to miss count as misses)",
        after.len()
    )
}

/// The reason when no arrival from the instant `at` on met the gates.
fn not_shown(from: &[Point], at: f64, tolerance: u64) -> String {
    let arrivals = match from.len() {
        1 => "the 1 arrival".to_owned(),
        n => format!("the {n} arrivals"),
    };
    let missed = count(from, Outcome::Missed);
    let undecided = count(from, Outcome::Undecided);
    if undecided == 0 {
        return format!(
            "never recovered within the window: none of {arrivals} from {at} ms on met \
             the gates ({missed} missed, within the tolerance of {tolerance})"
        );
    }
    format!(
        "recovery not shown within the window: none of {arrivals} from {at} ms on is \
         known to have met the gates ({missed} missed; {undecided} unfinished at the horizon, \
         not yet certain to miss); a later horizon would tell"
    )
}

/// [`TTFT_BINS`] equal bins of `[start_ms, end_ms)` by arrival.
fn ttft_bins(pts: &[Point], start_ms: f64, end_ms: f64) -> Vec<TtftBin> {
    let width = (end_ms - start_ms) / TTFT_BINS as f64;
    let edge = |i: usize| {
        if i == TTFT_BINS {
            end_ms
        } else {
            start_ms + width * i as f64
        }
    };
    let mut bins: Vec<(u64, Vec<f64>)> = (0..TTFT_BINS).map(|_| (0, Vec::new())).collect();
    for p in pts {
        if !(start_ms..end_ms).contains(&p.arrival_ms) {
            continue;
        }
        // The first bin whose end is past the arrival (robust to rounding).
        let guess = (((p.arrival_ms - start_ms) / width) as usize).min(TTFT_BINS - 1);
        let i = if p.arrival_ms < edge(guess) {
            guess.saturating_sub(1)
        } else if p.arrival_ms >= edge(guess + 1) {
            (guess + 1).min(TTFT_BINS - 1)
        } else {
            guess
        };
        if let Some(bin) = bins.get_mut(i) {
            bin.0 += 1;
            if let Some(ttft) = p.ttft_ms {
                bin.1.push(ttft);
            }
        }
    }
    bins.into_iter()
        .enumerate()
        .map(|(i, (arrivals, mut ttft))| {
            sort_ascending(&mut ttft);
            TtftBin {
                start_ms: edge(i),
                end_ms: edge(i + 1),
                arrivals,
                completed: ttft.len() as u64,
                p95_ttft_ms: nearest_rank(&ttft, 95),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! Each trace is built by hand; the expected instants follow from the
    //! rule in the module docs and are worked out beside each test.
    use super::*;
    use crate::trace::{load, Limits};
    use crate::verdict::judge_trace;
    use serde_json::{json, Value};

    const LIMITS: Limits = Limits {
        max_rows: 100_000,
        max_bytes: 1 << 26,
    };

    /// A completed row of class `api`: arrival, TTFT and E2E in ms.
    fn done(t: f64, ttft: f64, e2e: f64) -> Value {
        json!({"id": format!("c{t}-{ttft}-{e2e}"), "class": "api", "arrivalMs": t,
               "status": "completed", "firstTokenMs": t + ttft, "completedMs": t + e2e,
               "outputTokens": 10})
    }

    /// A row still in flight at the horizon, with its first token if one came.
    fn unfinished(t: f64, first: Option<f64>) -> Value {
        let mut row = json!({"id": format!("u{t}"), "class": "api", "arrivalMs": t,
                             "status": "in_flight"});
        if let Some(f) = first {
            row["firstTokenMs"] = json!(f);
        }
        row
    }

    /// A one-class trace: gates, burst phase `[b0, b1)`, window `[0, end)`,
    /// the horizon and the rows.
    fn trace(gates: Value, burst: (f64, f64), end: f64, horizon: f64, rows: Vec<Value>) -> Trace {
        let doc = json!({
            "schema": "goodput-trace/1",
            "window": {"startMs": 0, "endMs": end, "horizonMs": horizon},
            "equality": "inclusive",
            "classes": {"api": gates},
            "phases": [{"name": "burst", "startMs": burst.0, "endMs": burst.1}],
            "rows": rows,
        });
        load(&serde_json::to_vec(&doc).unwrap(), LIMITS).unwrap()
    }

    fn class(trace: &Trace, tolerance: u64) -> ClassRecovery {
        let options = RecoveryOptions {
            tolerance,
            ..Default::default()
        };
        let rec = recovery(trace, &judge_trace(trace), &options)
            .unwrap()
            .unwrap();
        assert_eq!(rec.tolerance, tolerance);
        rec.classes["api"].clone()
    }

    /// (recoveredAtMs, recoveryS, arrivals, misses and undecided after it).
    type Found = (
        Option<f64>,
        Option<f64>,
        Option<u64>,
        Option<u64>,
        Option<u64>,
    );

    fn found(c: &ClassRecovery) -> Found {
        (
            c.recovered_at_ms,
            c.recovery_s,
            c.arrivals_after_recovery,
            c.misses_after_recovery,
            c.undecided_after_recovery,
        )
    }

    fn api_gates() -> Value {
        json!({"ttftMs": 100, "tpotMs": null, "e2eMs": 500})
    }

    // One arrival every 100 ms over [0, 15 s), plus a second one at 8100;
    // burst [2000, 4000). Misses after the burst: 4000 … 4900 (TTFT 800, ten
    // rows), then a relapse after an apparent recovery: 8000 (TTFT 300) and
    // the first row at 8100 (E2E 900 alone); the second row at 8100 passes.
    // After the burst: 110 + 1 = 111 arrivals, 12 misses.
    fn relapse() -> Trace {
        let mut rows = Vec::new();
        for i in 0..150 {
            let t = 100.0 * f64::from(i);
            rows.push(match t {
                t if (2000.0..5000.0).contains(&t) => done(t, 800.0, 1200.0),
                8000.0 => done(t, 300.0, 400.0),
                8100.0 => done(t, 50.0, 900.0),
                _ => done(t, 50.0, 200.0),
            });
            if t == 8100.0 {
                rows.push(done(t, 60.0, 200.0));
            }
        }
        trace(api_gates(), (2000.0, 4000.0), 15_000.0, 20_000.0, rows)
    }

    // Tolerance 0: the last miss is at 8100, so R is the next instant, 8200
    // (not the passing row that shares 8100: R is an instant, and from 8100
    // on a miss arrived); 8200 … 14900 is 68 arrivals. The old rolling
    // window of 50 (two misses allowed per window) put it at 4900 (0.9 s),
    // before the relapse and even before the last of the first ten misses. Tolerance 1: the 2nd miss from the end is 8000 →
    // R = 8100, 2 + 68 = 70 arrivals, one miss (8100). Tolerance 2: the 3rd
    // from the end is 4900 → R = 5000: 100 + 1 = 101 arrivals, two misses
    // (the relapse). Tolerance 11: the 12th from the end is 4000 → 4100;
    // tolerance 12: no 13th miss → the burst's end, 4000, with all 12.
    #[test]
    fn a_relapse_moves_the_instant_past_it_and_a_tolerance_lets_misses_follow() {
        let t = relapse();
        let strict = class(&t, 0);
        assert_eq!(
            (strict.arrivals_after_burst, strict.misses_after_burst),
            (111, 12)
        );
        assert_eq!(strict.reason, None);
        assert_eq!(
            found(&strict),
            (Some(8200.0), Some(4.2), Some(68), Some(0), Some(0))
        );
        let want: [(u64, Found); 4] = [
            (1, (Some(8100.0), Some(4.1), Some(70), Some(1), Some(0))),
            (2, (Some(5000.0), Some(1.0), Some(101), Some(2), Some(0))),
            (11, (Some(4100.0), Some(0.1), Some(110), Some(11), Some(0))),
            (12, (Some(4000.0), Some(0.0), Some(111), Some(12), Some(0))),
        ];
        for (k, w) in want {
            assert_eq!(found(&class(&t, k)), w, "tolerance {k}");
        }
    }

    // Horizon = window end = 10 s; gates TTFT 1000, E2E 5000; one arrival
    // every 100 ms, all passing (TTFT 50, E2E 100) except: 6000 unfinished
    // without a first token (elapsed 4000 >= 1000: knownLate), 7000
    // unfinished with its first token at 8500 (TTFT 1500: knownLate), 9500
    // unfinished without one (elapsed 500: undecided), 9600 unfinished with
    // TTFT 50 (E2E unknown, elapsed 400 < 5000: undecided). Misses after the
    // burst: 6000 and 7000 → R = 7100, 3.1 s; 7100 … 9900 = 29 arrivals, 2 of
    // them undecided. The old code counted all four as over: never.
    #[test]
    fn a_known_late_censored_row_is_a_miss_and_an_undecided_one_is_not() {
        let mut rows = Vec::new();
        for i in 0..100 {
            let t = 100.0 * f64::from(i);
            rows.push(match t {
                6000.0 | 9500.0 => unfinished(t, None),
                7000.0 => unfinished(t, Some(8500.0)),
                9600.0 => unfinished(t, Some(9650.0)),
                t if (2000.0..4000.0).contains(&t) => done(t, 800.0, 900.0),
                _ => done(t, 50.0, 100.0),
            });
        }
        let gates = json!({"ttftMs": 1000, "tpotMs": null, "e2eMs": 5000});
        let t = trace(gates, (2000.0, 4000.0), 10_000.0, 10_000.0, rows);
        // The verdict's own knownLate is what recovery counts.
        let late: Vec<f64> = t
            .rows
            .iter()
            .zip(judge_trace(&t))
            .filter(|(_, j)| {
                matches!(
                    j.verdict,
                    Verdict::Censored {
                        known_late: true,
                        ..
                    }
                )
            })
            .filter_map(|(r, _)| r.arrival_ms.value())
            .collect();
        assert_eq!(late, vec![6000.0, 7000.0]);
        let c = class(&t, 0);
        assert_eq!((c.arrivals_after_burst, c.misses_after_burst), (60, 2));
        assert_eq!(
            found(&c),
            (Some(7100.0), Some(3.1), Some(29), Some(0), Some(2))
        );
    }

    /// One arrival every 100 ms over [0, 10 s), horizon 12 s, burst [2000,
    /// 4000) missing (TTFT 800); after it every row passes (TTFT 50) except
    /// those at `late` (TTFT 300).
    fn tail_misses(late: &[f64]) -> Trace {
        let rows = (0..100)
            .map(|i| {
                let t = 100.0 * f64::from(i);
                if (2000.0..4000.0).contains(&t) {
                    done(t, 800.0, 900.0)
                } else if late.contains(&t) {
                    done(t, 300.0, 400.0)
                } else {
                    done(t, 50.0, 200.0)
                }
            })
            .collect();
        trace(api_gates(), (2000.0, 4000.0), 10_000.0, 12_000.0, rows)
    }

    // The last arrival (9900) misses: no arrival follows it, so never. The
    // old window of 50 let one miss in its last window: recovered at 0 s.
    // Tolerance 1 allows that one miss: R = the burst's end, one miss after.
    #[test]
    fn a_miss_at_the_last_arrival_never_recovers_unless_tolerated() {
        let t = tail_misses(&[9900.0]);
        let c = class(&t, 0);
        assert_eq!(found(&c), (None, None, None, None, None));
        assert_eq!(
            c.reason.as_deref(),
            Some(
                "never recovered within the window: the last arrival (at 9900 ms) missed; \
                 1 of the 60 arrivals after the burst missed (failed rows and unfinished rows \
                 certain to miss count as misses)"
            )
        );
        assert_eq!(
            found(&class(&t, 1)),
            (Some(4000.0), Some(0.0), Some(60), Some(1), Some(0))
        );
        // Misses at 9800 and 9900 with tolerance 1: R would be 9900, but the
        // one arrival from there on missed: nothing was served within the
        // gates after R, so that is no recovery either.
        let c = class(&tail_misses(&[9800.0, 9900.0]), 1);
        assert_eq!(c.recovery_s, None);
        assert_eq!(
            c.reason.as_deref(),
            Some(
                "never recovered within the window: none of the 1 arrival from 9900 ms on met \
                 the gates (1 missed, within the tolerance of 1)"
            )
        );
    }

    // Burst [2000, 4050) and nothing misses after it (arrivals 4100 … 6900,
    // 29 rows): R = the burst's end itself, 0 s. (With 29 arrivals after the
    // burst, the old window of 50 had no full window: null.) Every row misses
    // the TPOT gate of 10 ms ((200 − 50) / 9 = 16.7 ms), which is not a
    // recovery gate.
    #[test]
    fn no_miss_after_the_burst_is_a_recovery_of_zero_at_the_burst_end() {
        let rows = (0..70)
            .map(|i| {
                let t = 100.0 * f64::from(i);
                if (2000.0..4050.0).contains(&t) {
                    done(t, 800.0, 900.0)
                } else {
                    done(t, 50.0, 200.0)
                }
            })
            .collect();
        let gates = json!({"ttftMs": 100, "tpotMs": 10, "e2eMs": 500});
        let t = trace(gates, (2000.0, 4050.0), 7000.0, 8000.0, rows);
        assert!(judge_trace(&t)
            .iter()
            .all(|j| matches!(j.verdict, Verdict::Miss(_, m) if m.tpot)));
        let c = class(&t, 0);
        assert_eq!((c.arrivals_after_burst, c.misses_after_burst), (29, 0));
        assert_eq!(
            found(&c),
            (Some(4050.0), Some(0.0), Some(29), Some(0), Some(0))
        );
        // No arrival after the burst at all: null, with the reason.
        let t = trace(api_gates(), (2000.0, 6950.0), 7000.0, 8000.0, vec![]);
        assert_eq!(
            class(&t, 0).reason.as_deref(),
            Some("no arrival of the class at or after the burst's end (6950 ms)")
        );
    }

    // A queue that never drains, cut at the window's end (horizon 10 s), TTFT
    // gate 1000: every row from 5000 on is unfinished without a first token.
    // Those arriving at or before 9000 have waited >= 1000 ms: knownLate;
    // 9100 … 9900 (9 rows) are undecided. R would be 9100, yet nothing from
    // there on is known to have met the gate: recovery is not shown.
    #[test]
    fn trailing_undecided_rows_alone_do_not_show_a_recovery() {
        let rows = (0..100)
            .map(|i| {
                let t = 100.0 * f64::from(i);
                if t >= 5000.0 {
                    unfinished(t, None)
                } else {
                    done(t, 50.0, 200.0)
                }
            })
            .collect();
        let gates = json!({"ttftMs": 1000, "tpotMs": null, "e2eMs": null});
        let t = trace(gates, (2000.0, 4000.0), 10_000.0, 10_000.0, rows);
        let c = class(&t, 0);
        assert_eq!((c.arrivals_after_burst, c.misses_after_burst), (60, 41));
        assert_eq!(found(&c), (None, None, None, None, None));
        assert_eq!(
            c.reason.as_deref(),
            Some(
                "recovery not shown within the window: none of the 9 arrivals from 9100 ms on \
                 is known to have met the gates (0 missed; 9 unfinished at the horizon, not yet \
                 certain to miss); a later horizon would tell"
            )
        );
    }
}
