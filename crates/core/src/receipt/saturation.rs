//! Did the server keep up with the offered load? The receipt's `saturation`
//! block (docs/contract.md §10.3): offered and served rates, requests in
//! flight at fixed instants of the window, a few time bins, and one verdict
//! with the evidence it rests on. Pure: rows in, figures out.
//!
//! The figures are tallied row by row into a [`SaturationTally`] (integer
//! counts and a min/max, so tallies of parts of the trace merge exactly, in
//! any order) and turned into a [`Saturation`] once per result block.
//!
//! The verdict rests on two observations that an overload produces together:
//!
//! - **served short of offered**: `servedPerS < 0.9 × offeredPerS`. When the
//!   server keeps up, the cohort's completions span about as long as its
//!   arrivals, so the two rates agree within a few per cent whatever the
//!   draw; an overloaded server completes at its own capacity.
//! - **in flight still growing**: over the second half of the window, the
//!   requests in flight rose by at least `max(5, 3·√(in flight at
//!   mid-window))` (a steady queue's count wanders by about its square root).
//!
//! Both → `overloaded`; neither → `steady`; one without the other →
//! `inconclusive`, with the reason; fewer than 20 cohort requests or fewer
//! than two completions → `inconclusive` too. A censored row stays in flight
//! until the horizon, so a short grace period cannot hide a growing queue.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::trace::{RawRow, RawStatus, Slot};
use crate::verdict::Verdict;

/// The evidence of a trace whose arrival times are unknown.
pub const ARRIVALS_UNKNOWN_EVIDENCE: &str = "arrival times are unknown (boundary.arrival = \"unknown\"): no request's time in flight or completion instant can be placed, so saturation cannot be judged";

/// How many equal time bins the window is cut into.
pub const BINS: usize = 6;
/// Fewer cohort requests than this: no verdict.
pub const MIN_COHORT: u64 = 20;
/// Served below this share of offered counts as falling short.
pub const SERVED_SHARE: f64 = 0.9;
/// In-flight growth over the second half of at least this many requests (and
/// at least 3 √(in flight at mid-window)) counts as growing.
pub const MIN_GROWTH: u64 = 5;

/// Whether the server kept up with the offered load, per result block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Saturation {
    /// Cohort requests per window second, as in `rates.offeredPerS`.
    pub offered_per_s: f64,
    /// Completions per second over the span in which they happened: always
    /// equal to `rates.servedPerS` (docs/contract.md §7.6), repeated here so
    /// the verdict's evidence stands beside its figures.
    pub served_per_s: Option<f64>,
    /// The completion span `servedPerS` is measured over, ms (null with it).
    pub served_span_ms: Option<f64>,
    /// Rows (any arrival, not invalid) in flight at `window.startMs`; null
    /// when arrival times are unknown.
    pub in_flight_at_start: Option<u64>,
    /// Rows (any arrival, not invalid) in flight at `window.endMs`; null
    /// when arrival times are unknown.
    pub in_flight_at_end: Option<u64>,
    /// (inFlightAtEnd − inFlightAtStart) / window s; null with them.
    pub in_flight_growth_per_s: Option<f64>,
    /// The window cut into equal time bins, in order; null when arrival
    /// times are unknown.
    pub bins: Option<Vec<SaturationBin>>,
    /// `steady`, `overloaded` or `inconclusive`.
    pub verdict: SaturationVerdict,
    /// The figures the verdict rests on, or why there is none, in a sentence.
    pub evidence: String,
}

/// One time bin of the window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SaturationBin {
    /// Bin start (inclusive), ms.
    pub start_ms: f64,
    /// Bin end (exclusive), ms.
    pub end_ms: f64,
    /// Cohort rows arriving in the bin.
    pub arrivals: u64,
    /// Pass and miss rows completing in the bin.
    pub completions: u64,
    /// Rows (any arrival, not invalid) in flight at the bin's end.
    pub in_flight_at_end: u64,
}

/// The saturation verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SaturationVerdict {
    /// Served kept pace with offered and the in-flight count levelled off.
    Steady,
    /// Served fell short of offered while requests piled up.
    Overloaded,
    /// The figures do not support either (the evidence says why).
    Inconclusive,
}

impl SaturationVerdict {
    /// The verdict's name, as serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Steady => "steady",
            Self::Overloaded => "overloaded",
            Self::Inconclusive => "inconclusive",
        }
    }
}

/// The instants the saturation figures look at: the window start and each
/// bin's end (the last is the window end), plus the horizon.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Instants {
    /// `at[0]` = window start, `at[k]` = end of bin k − 1, `at[BINS]` = window end.
    pub at: [f64; BINS + 1],
    /// When observation stopped.
    pub horizon_ms: f64,
}

impl Instants {
    /// Cuts `[start_ms, end_ms)` into [`BINS`] equal bins.
    pub fn new(start_ms: f64, end_ms: f64, horizon_ms: f64) -> Self {
        let span = end_ms - start_ms;
        let mut at = [start_ms; BINS + 1];
        for (k, t) in at.iter_mut().enumerate().skip(1) {
            *t = start_ms + span * k as f64 / BINS as f64;
        }
        at[BINS] = end_ms;
        Self { at, horizon_ms }
    }

    /// The bin an instant of the window falls in, or `None` outside it.
    fn bin(&self, t: f64) -> Option<usize> {
        if !(self.at[0] <= t && t < self.at[BINS]) {
            return None;
        }
        (0..BINS).find(|&k| t < self.at[k + 1])
    }
}

/// When a valid row stopped being in flight, clipped to the horizon: its
/// completion or its failure's `endedMs`, or the horizon if it never ended.
/// `None` for a failure without `endedMs` (unknown).
pub(crate) fn row_end_ms(row: &RawRow, horizon_ms: f64) -> Option<f64> {
    let end = match row.status {
        Slot::Set(RawStatus::Completed) => row.completed_ms.value()?,
        Slot::Set(RawStatus::Failed) => row.ended_ms.value()?,
        _ => horizon_ms,
    };
    Some(end.min(horizon_ms))
}

/// Running saturation figures of one block. Merges exactly.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct SaturationTally {
    in_flight: [u64; BINS + 1],
    arrivals: [u64; BINS],
    completions: [u64; BINS],
}

impl SaturationTally {
    /// Counts one row under its verdict.
    pub fn add(&mut self, verdict: &Verdict, row: &RawRow, instants: &Instants) {
        if matches!(verdict, Verdict::Invalid(_)) {
            return;
        }
        let Some(arrival) = row.arrival_ms.value() else {
            return;
        };
        if let Some(end) = row_end_ms(row, instants.horizon_ms) {
            for (n, &t) in self.in_flight.iter_mut().zip(&instants.at) {
                *n += u64::from(arrival <= t && t < end);
            }
        }
        if matches!(verdict, Verdict::Excluded(_)) {
            return;
        }
        if let Some(k) = instants.bin(arrival) {
            self.arrivals[k] += 1;
        }
        if let (Verdict::Pass(_) | Verdict::Miss(..), Some(done)) =
            (verdict, row.completed_ms.value())
        {
            let done = done.min(instants.horizon_ms);
            if let Some(k) = instants.bin(done) {
                self.completions[k] += 1;
            }
        }
    }

    /// Adds another tally of other rows.
    pub fn absorb(&mut self, other: &Self) {
        for (a, b) in self.in_flight.iter_mut().zip(other.in_flight) {
            *a += b;
        }
        for (a, b) in self.arrivals.iter_mut().zip(other.arrivals) {
            *a += b;
        }
        for (a, b) in self.completions.iter_mut().zip(other.completions) {
            *a += b;
        }
    }

    /// The block's saturation figures and verdict. When arrival times are
    /// unknown (docs/contract.md §10.9) every instant-based figure is null
    /// and the verdict is `inconclusive`, saying so.
    pub fn finish(
        &self,
        instants: &Instants,
        figures: BlockFigures,
        arrivals_unknown: bool,
    ) -> Saturation {
        let window_s = (instants.at[BINS] - instants.at[0]) / 1000.0;
        let offered = figures.cohort as f64 / window_s;
        let served = figures.served_per_s;
        if arrivals_unknown {
            return Saturation {
                offered_per_s: offered,
                served_per_s: served,
                served_span_ms: figures.served_span_ms,
                in_flight_at_start: None,
                in_flight_at_end: None,
                in_flight_growth_per_s: None,
                bins: None,
                verdict: SaturationVerdict::Inconclusive,
                evidence: ARRIVALS_UNKNOWN_EVIDENCE.to_owned(),
            };
        }
        let (start, end) = (self.in_flight[0], self.in_flight[BINS]);
        let bins = (0..BINS)
            .map(|k| SaturationBin {
                start_ms: instants.at[k],
                end_ms: instants.at[k + 1],
                arrivals: self.arrivals[k],
                completions: self.completions[k],
                in_flight_at_end: self.in_flight[k + 1],
            })
            .collect();
        let (verdict, evidence) = judge(&Evidence {
            cohort: figures.cohort,
            failed: figures.failed,
            censored: figures.censored,
            offered_per_s: offered,
            served_per_s: served,
            start,
            mid: self.in_flight[BINS / 2],
            end,
        });
        Saturation {
            offered_per_s: offered,
            served_per_s: served,
            served_span_ms: figures.served_span_ms,
            in_flight_at_start: Some(start),
            in_flight_at_end: Some(end),
            in_flight_growth_per_s: Some((end as f64 - start as f64) / window_s),
            bins: Some(bins),
            verdict,
            evidence,
        }
    }
}

/// The block's counts the saturation figures need.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockFigures {
    /// Cohort rows.
    pub cohort: u64,
    /// Failed cohort rows.
    pub failed: u64,
    /// Censored cohort rows.
    pub censored: u64,
    /// `rates.servedPerS` (docs/contract.md §7.6): the one served figure,
    /// copied, never computed a second way.
    pub served_per_s: Option<f64>,
    /// The completion span `rates.servedPerS` divides by, ms (null with it).
    pub served_span_ms: Option<f64>,
}

/// What the verdict is decided on.
#[derive(Clone, Copy, Debug)]
pub struct Evidence {
    /// Cohort rows.
    pub cohort: u64,
    /// Failed cohort rows.
    pub failed: u64,
    /// Censored cohort rows.
    pub censored: u64,
    /// Offered rate, per s.
    pub offered_per_s: f64,
    /// Served rate, per s (None: fewer than two completions).
    pub served_per_s: Option<f64>,
    /// In flight at window start.
    pub start: u64,
    /// In flight at mid-window.
    pub mid: u64,
    /// In flight at window end.
    pub end: u64,
}

/// The in-flight rise over the second half that counts as growing, given the
/// count at mid-window: `max(5, ceil(3 √mid))`.
pub fn growth_threshold(mid: u64) -> u64 {
    let noise = (3.0 * (mid.max(1) as f64).sqrt()).ceil() as u64;
    noise.max(MIN_GROWTH)
}

/// The verdict and its evidence sentence (module docs give the rule).
pub fn judge(e: &Evidence) -> (SaturationVerdict, String) {
    use SaturationVerdict::{Inconclusive, Overloaded, Steady};
    let offered = e.offered_per_s;
    if e.cohort < MIN_COHORT {
        return (
            Inconclusive,
            format!(
                "only {} requests arrived in the window; at least {MIN_COHORT} are needed to judge saturation",
                e.cohort
            ),
        );
    }
    let Some(served) = e.served_per_s else {
        return (
            Inconclusive,
            format!(
                "fewer than two requests completed by the horizon, so no served rate; in flight {} → {} over the window, {} failed, {} censored",
                e.start, e.end, e.failed, e.censored
            ),
        );
    };
    let short = served < SERVED_SHARE * offered;
    let rise = e.end.saturating_sub(e.mid);
    let growing = rise >= growth_threshold(e.mid);
    let rates = format!("served {served:.1}/s of {offered:.1}/s offered");
    let flight = format!(
        "in flight {} → {} over the window ({} at mid-window)",
        e.start, e.end, e.mid
    );
    match (short, growing) {
        (true, true) => (
            Overloaded,
            format!(
                "in flight grew {} → {} over the window ({} at mid-window); {rates}",
                e.start, e.end, e.mid
            ),
        ),
        (false, false) => (Steady, format!("{rates}; {flight}, not growing")),
        (true, false) => (
            Inconclusive,
            format!(
                "{rates}, but in flight did not keep growing ({} → {} over the second half; {} failed, {} censored)",
                e.mid, e.end, e.failed, e.censored
            ),
        ),
        (false, true) => (
            Inconclusive,
            format!(
                "in flight still rising at the window end ({} → {} over the second half) while {rates}: the window is short against the latencies",
                e.mid, e.end
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(served: Option<f64>, start: u64, mid: u64, end: u64) -> Evidence {
        Evidence {
            cohort: 400,
            failed: 0,
            censored: 0,
            offered_per_s: 40.0,
            served_per_s: served,
            start,
            mid,
            end,
        }
    }

    #[test]
    fn the_growth_threshold_is_five_or_three_square_roots() {
        assert_eq!(growth_threshold(0), 5);
        assert_eq!(growth_threshold(2), 5); // 3·√2 = 4.24 → 5
        assert_eq!(growth_threshold(4), 6); // 3·2
        assert_eq!(growth_threshold(100), 30);
        assert_eq!(growth_threshold(101), 31); // 30.15 → 31
    }

    #[test]
    fn short_service_and_a_growing_queue_is_an_overload() {
        let (v, text) = judge(&evidence(Some(20.1), 3, 110, 212));
        assert_eq!(v, SaturationVerdict::Overloaded);
        assert_eq!(
            text,
            "in flight grew 3 → 212 over the window (110 at mid-window); served 20.1/s of 40.0/s offered"
        );
    }

    #[test]
    fn kept_pace_and_level_is_steady() {
        // 36 ≥ 0.9 × 40; rise 14 − 10 = 4 < max(5, ceil(3·√10) = 10).
        let (v, text) = judge(&evidence(Some(36.0), 9, 10, 14));
        assert_eq!(v, SaturationVerdict::Steady);
        assert_eq!(
            text,
            "served 36.0/s of 40.0/s offered; in flight 9 → 14 over the window (10 at mid-window), not growing"
        );
    }

    #[test]
    fn one_sign_without_the_other_is_inconclusive() {
        // 35.9 < 36: short, but the queue held.
        let (v, text) = judge(&evidence(Some(35.9), 9, 10, 14));
        assert_eq!(v, SaturationVerdict::Inconclusive);
        assert!(text.contains("did not keep growing (10 → 14"), "{text}");
        // Kept pace, but in flight rose 10 → 20 (≥ 10): window too short.
        let (v, text) = judge(&evidence(Some(40.0), 0, 10, 20));
        assert_eq!(v, SaturationVerdict::Inconclusive);
        assert!(text.contains("short against the latencies"), "{text}");
    }

    #[test]
    fn too_few_requests_or_completions_give_no_verdict() {
        let mut e = evidence(Some(20.0), 0, 50, 100);
        e.cohort = 19;
        let (v, text) = judge(&e);
        assert_eq!(v, SaturationVerdict::Inconclusive);
        assert!(text.starts_with("only 19 requests"), "{text}");
        let (v, text) = judge(&evidence(None, 0, 50, 100));
        assert_eq!(v, SaturationVerdict::Inconclusive);
        assert!(
            text.starts_with("fewer than two requests completed"),
            "{text}"
        );
    }

    #[test]
    fn instants_cut_the_window_into_equal_bins() {
        let i = Instants::new(1000.0, 7000.0, 9000.0);
        assert_eq!(
            i.at,
            [1000.0, 2000.0, 3000.0, 4000.0, 5000.0, 6000.0, 7000.0]
        );
        assert_eq!(i.bin(999.9), None);
        assert_eq!(i.bin(1000.0), Some(0));
        assert_eq!(i.bin(1999.9), Some(0));
        assert_eq!(i.bin(2000.0), Some(1));
        assert_eq!(i.bin(6999.0), Some(5));
        assert_eq!(i.bin(7000.0), None);
    }
}
