//! Recovery after a burst (docs/contract.md §10.10): how long after the burst
//! phase ended did each class's tail latency come back under its gates, and
//! stay there.
//!
//! **The rolling window.** A class's cohort rows that arrived at or after the
//! burst's end, in arrival order (ties by row order), are read in windows of
//! `N` consecutive arrivals (`--recovery-window`, default 50). A window
//! *holds* when its nearest-rank p95 TTFT and p95 E2E both meet the class's
//! gates under the declared equality rule (a null gate is not checked). A
//! failed or unfinished (censored) row counts as a value over every gate: it
//! was not served within them. Because nearest rank is monotone, "p95 meets
//! the gate" is the same as "at least `ceil(0.95 N)` of the `N` rows meet it",
//! which is how it is counted.
//!
//! **Recovery.** The class has recovered at the arrival of row `k` when every
//! full window starting at `k` or later holds (so it stays recovered until the
//! trace ends). The recovery time is that arrival minus the burst's end, in
//! seconds; 0 when every window after the burst holds. It is `null`, with a
//! reason, when the last full window still fails, when fewer than `N` rows
//! arrived after the burst, when the burst does not end inside the window, or
//! when the class has neither a TTFT nor an E2E gate.
//!
//! Windows are anchored at their first arrival, so the figure says "requests
//! arriving from this instant on were served within the gates", without the
//! lag a trailing window would add.
//!
//! **Time bins.** Beside the figure, the window is cut into
//! [`TTFT_BINS`] equal bins by arrival; each bin gives its arrivals, its
//! completed rows and their nearest-rank p95 TTFT, so a reader can watch the
//! tail rise with the burst and fall back.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::{nearest_rank, sort_ascending};
use crate::trace::{Equality, Gates, Phase, Trace};
use crate::verdict::{Judgement, Verdict};

/// The phase recovery is measured from when no `--burst-phase` is given.
pub const DEFAULT_BURST_PHASE: &str = "burst";
/// The default rolling window: this many consecutive arrivals of a class.
pub const DEFAULT_WINDOW_ARRIVALS: usize = 50;
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
    /// The rolling window, in consecutive arrivals of a class (>= 1).
    pub window_arrivals: usize,
}

impl Default for RecoveryOptions {
    fn default() -> Self {
        RecoveryOptions {
            burst_phase: DEFAULT_BURST_PHASE.to_owned(),
            required: false,
            window_arrivals: DEFAULT_WINDOW_ARRIVALS,
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
    /// A window of zero arrivals.
    #[error("--recovery-window must be at least 1 arrival")]
    EmptyWindow,
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
    /// The rolling window: this many consecutive arrivals of a class.
    pub window_arrivals: u64,
    /// Each class's recovery.
    pub classes: BTreeMap<String, ClassRecovery>,
}

/// One class's recovery and its p95 TTFT over time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClassRecovery {
    /// Seconds from the burst's end until every later window holds; null when it never does.
    pub recovery_s: Option<f64>,
    /// The arrival from which every window holds (the burst's end when all do), ms; null when never.
    pub recovered_at_ms: Option<f64>,
    /// Why `recoveryS` is null (null when it is not).
    pub reason: Option<String>,
    /// Cohort rows of the class that arrived at or after the burst's end.
    pub arrivals_after_burst: u64,
    /// Full windows after the burst's end.
    pub windows: u64,
    /// Of those, windows whose p95 TTFT or p95 E2E missed its gate.
    pub windows_missed: u64,
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

/// One cohort row as recovery sees it.
#[derive(Clone, Copy)]
struct Point {
    arrival_ms: f64,
    /// TTFT, E2E; `None` for a failed or unfinished row (over every gate).
    measured: Option<(f64, f64)>,
}

/// The recovery block of a trace, or `None` when the trace has no phase of
/// that name and none was asked for by name.
pub fn recovery(
    trace: &Trace,
    judgements: &[Judgement],
    options: &RecoveryOptions,
) -> Result<Option<Recovery>, RecoveryError> {
    if options.window_arrivals == 0 {
        return Err(RecoveryError::EmptyWindow);
    }
    let contract = &trace.contract;
    let Some(burst) = contract
        .phases
        .iter()
        .find(|p| p.name == options.burst_phase)
    else {
        if !options.required {
            return Ok(None);
        }
        let names: Vec<&str> = contract.phases.iter().map(|p| p.name.as_str()).collect();
        return Err(RecoveryError::UnknownPhase {
            name: options.burst_phase.clone(),
            known: if names.is_empty() {
                "none".to_owned()
            } else {
                names.join(", ")
            },
        });
    };
    let mut points: Vec<Vec<Point>> = contract.classes.keys().map(|_| Vec::new()).collect();
    for (row, j) in trace.rows.iter().zip(judgements) {
        let measured = match &j.verdict {
            Verdict::Invalid(_) | Verdict::Excluded(_) => continue,
            Verdict::Pass(m) | Verdict::Miss(m, _) => Some((m.ttft_ms, m.e2e_ms)),
            Verdict::Censored { .. } | Verdict::Failed { .. } => None,
        };
        let (Some(class), Some(arrival_ms)) = (j.class, row.arrival_ms.value()) else {
            continue;
        };
        if let Some(list) = points.get_mut(class) {
            list.push(Point {
                arrival_ms,
                measured,
            });
        }
    }
    let classes = contract
        .classes
        .iter()
        .zip(points)
        .map(|((name, gates), mut pts)| {
            // A stable sort: equal arrivals keep their row order.
            pts.sort_by(|a, b| a.arrival_ms.total_cmp(&b.arrival_ms));
            let class = class_recovery(
                &pts,
                gates,
                contract.equality,
                burst,
                contract.end_ms,
                options.window_arrivals,
            );
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
        window_arrivals: options.window_arrivals as u64,
        classes,
    }))
}

fn never(reason: String, after: u64, windows: u64, missed: u64) -> ClassRecovery {
    ClassRecovery {
        recovery_s: None,
        recovered_at_ms: None,
        reason: Some(reason),
        arrivals_after_burst: after,
        windows,
        windows_missed: missed,
        ttft_bins: Vec::new(),
    }
}

/// The recovery of one class from its points sorted by arrival (bins left empty).
fn class_recovery(
    pts: &[Point],
    gates: &Gates,
    equality: Equality,
    burst: &Phase,
    window_end_ms: f64,
    n: usize,
) -> ClassRecovery {
    let after: Vec<Point> = pts
        .iter()
        .copied()
        .filter(|p| p.arrival_ms >= burst.end_ms)
        .collect();
    let count = after.len() as u64;
    if let Some(reason) = unmeasurable(gates, burst, window_end_ms, after.len(), n) {
        return never(reason, count, 0, 0);
    }
    let meets = gate_meets(&after, gates, equality);
    let scan = scan_windows(&meets, n);
    let windows = scan.windows as u64;
    match scan.last_bad {
        None => ClassRecovery {
            recovery_s: Some(0.0),
            recovered_at_ms: Some(burst.end_ms),
            reason: None,
            arrivals_after_burst: count,
            windows,
            windows_missed: 0,
            ttft_bins: Vec::new(),
        },
        Some(bad) if bad + 1 == scan.windows => never(
            never_recovered(&scan, n, after[bad].arrival_ms),
            count,
            windows,
            scan.missed,
        ),
        Some(bad) => {
            let at = after[bad + 1].arrival_ms;
            ClassRecovery {
                recovery_s: Some((at - burst.end_ms) / 1000.0),
                recovered_at_ms: Some(at),
                reason: None,
                arrivals_after_burst: count,
                windows,
                windows_missed: scan.missed,
                ttft_bins: Vec::new(),
            }
        }
    }
}

/// Why no window can be read at all (the burst runs to the window's end, the
/// class has no gate to recover under, or too few arrivals follow the burst).
fn unmeasurable(
    gates: &Gates,
    burst: &Phase,
    window_end_ms: f64,
    arrivals_after: usize,
    n: usize,
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
    if arrivals_after < n {
        return Some(format!(
            "only {arrivals_after} arrivals of the class after the burst, fewer than the window of {n}"
        ));
    }
    None
}

/// Per point, (TTFT meets, E2E meets); a null gate always meets, and a failed
/// or unfinished row meets only a null gate.
fn gate_meets(after: &[Point], gates: &Gates, equality: Equality) -> Vec<(bool, bool)> {
    after
        .iter()
        .map(|p| match p.measured {
            Some((ttft, e2e)) => (
                gates.ttft_ms.is_none_or(|g| equality.meets(ttft, g)),
                gates.e2e_ms.is_none_or(|g| equality.meets(e2e, g)),
            ),
            None => (gates.ttft_ms.is_none(), gates.e2e_ms.is_none()),
        })
        .collect()
}

/// What sliding the window over the arrivals after the burst found.
struct WindowScan {
    /// Full windows after the burst's end.
    windows: usize,
    /// Rows each window needs within a gate for its p95 to meet it.
    need: usize,
    /// The start of the last window that missed, if any did.
    last_bad: Option<usize>,
    /// How many windows missed.
    missed: u64,
    /// (TTFT meets, E2E meets) counts of the last window.
    last_window: (usize, usize),
}

/// Slides a window of `n` (at most `meets.len()`) over `meets`, counting the
/// rows within each gate incrementally.
fn scan_windows(meets: &[(bool, bool)], n: usize) -> WindowScan {
    // The p95 of n values meets its gate when at least ceil(0.95 n) of them do.
    let need = (95 * n).div_ceil(100).max(1);
    let (mut ttft_ok, mut e2e_ok) = meets[..n].iter().fold((0usize, 0usize), |(t, e), m| {
        (t + usize::from(m.0), e + usize::from(m.1))
    });
    let windows = meets.len() - n + 1;
    let mut last_bad: Option<usize> = None;
    let mut missed = 0u64;
    let mut last_window = (0, 0);
    for start in 0..windows {
        if start > 0 {
            let (gone, came) = (meets[start - 1], meets[start + n - 1]);
            ttft_ok = ttft_ok + usize::from(came.0) - usize::from(gone.0);
            e2e_ok = e2e_ok + usize::from(came.1) - usize::from(gone.1);
        }
        if ttft_ok < need || e2e_ok < need {
            last_bad = Some(start);
            missed += 1;
        }
        last_window = (ttft_ok, e2e_ok);
    }
    WindowScan {
        windows,
        need,
        last_bad,
        missed,
        last_window,
    }
}

/// The reason when the last window (starting at `start_ms`) still misses.
fn never_recovered(scan: &WindowScan, n: usize, start_ms: f64) -> String {
    let need = scan.need;
    let (t, e) = scan.last_window;
    let mut over = Vec::new();
    if t < need {
        over.push(format!("{} over the TTFT gate", n - t));
    }
    if e < need {
        over.push(format!("{} over the E2E gate", n - e));
    }
    format!(
        "never recovered within the trace: the last window of {n} arrivals (from {start_ms} ms) \
         has {} (failed and unfinished rows count as over), at most {} allowed for p95",
        over.join(" and "),
        n - need
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
            if let Some((ttft, _)) = p.measured {
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
