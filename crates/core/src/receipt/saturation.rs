//! Did the server keep up with the offered load? The receipt's `saturation`
//! block (docs/contract.md §10.3): offered and served rates, requests in
//! flight and waiting at fixed instants of the window, a few time bins, and
//! one verdict with the evidence it rests on. Pure: rows in, figures out.
//!
//! **What is observed, and when.** Everything the verdict reads is known
//! by the window's end: at an instant `t <= window.endMs <= horizonMs` a
//! row is *in flight* when it arrived at or before `t` and had not ended
//! before `t` (a row that never ended is in flight up to and including the
//! horizon), and *waiting* when it was in flight with no first token at or
//! before `t`. Whether a first token came by `t` is known for every row
//! (a censored row without one had none by the horizon), so the waiting
//! count and the age of the oldest waiting request are exact at every
//! instant of the window, with no lower bounds needed. Completions and
//! time per token are read only where they happened by the window's end.
//! So the same run cut at its window end (grace 0) and observed longer
//! gets the same verdict: observing longer adds nothing the verdict reads.
//!
//! **The verdict** rests on three tests (thresholds in the constants):
//!
//! - **Waiting grew** (queueing evidence): the window is sampled at
//!   [`SAMPLES`] + 1 equal instants; at each, the *oldest wait* is how long
//!   the oldest request still waiting for its first token had waited (0
//!   when none waits). Under overload a FIFO backlog grows without bound,
//!   so the oldest wait grows by `(1 − μ/λ)` ms per ms; in a stable queue
//!   it wanders around its stationary level. Waiting grew when every one
//!   of the 8 samples of the last third exceeds the *baseline* by at least
//!   the margin `max(¼ × gate, 50 ms)` (gate: the smallest TTFT gate of
//!   the block's classes, else the smallest E2E gate). The baseline is the
//!   larger of the first third's 8 samples and the p90 TTFT of the first
//!   tokens that came in the first third. For samples of a stationary
//!   process in random order, "all 8 above all 8" has probability
//!   1 / C(16, 8) = 1 / 12,870: a rise that cannot be a wander, and large
//!   against what the gates judge. The first third must have delivered at
//!   least [`MIN_FIRST_TOKENS`] first tokens: a server whose every request
//!   takes longer than the window to its first token shows the same rising
//!   oldest wait with no queue at all, and the delivered TTFTs are what
//!   tell the two apart (a latency L caps the oldest wait at L, which the
//!   first third's TTFTs already show).
//! - **Streams slowed** (queueing evidence for servers that admit every
//!   request and slow every stream down): the time per output token of
//!   rows completed by the window's end, those arriving in the last third
//!   against those in the first third (at least 10 each): a one-sided
//!   Mann–Whitney z of at least 3.09 (p ≤ 0.001) and a median rise of at
//!   least `max(¼ × TPOT gate, ½ × the first third's median)`. Read only
//!   when the window is long against the residence times (below), since a
//!   batch filling up during a run's first residence time also slows
//!   streams down without any queue.
//! - **Served short**: of the `A` cohort arrivals, the window saw `D`
//!   completions (of any row, whatever its arrival); short when
//!   `A − D > 3 √(A + D)`, three standard deviations of the difference of
//!   two Poisson counts.
//!
//! The window is **long against the residence times** when the p90 of the
//! cohort's time in the system, clipped at the window's end (a lower bound
//! for rows still in flight there), is at most a third of the window.
//!
//! Queueing evidence and served short → `overloaded`. Neither, in a window
//! long against the residence times → `steady`. Anything else →
//! `inconclusive`, naming what failed: long outputs alone (served short, no
//! waiting grew) or a window short against the residence times are not an
//! overload. Fewer than [`MIN_COHORT`] cohort rows → `inconclusive`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::nearest_rank;
use crate::trace::{RawRow, RawStatus, Slot};
use crate::verdict::{first_token_unknown, Verdict};

/// The evidence of a trace whose arrival times are unknown.
pub const ARRIVALS_UNKNOWN_EVIDENCE: &str = "arrival times are unknown (boundary.arrival = \"unknown\"): no request's time in flight or completion instant can be placed, so saturation cannot be judged";

/// How many equal time bins the window is cut into.
pub const BINS: usize = 6;
/// The window is sampled at this many equal steps (`SAMPLES + 1` instants,
/// from the window's start to its end); a third of them is 8.
pub const SAMPLES: usize = 24;
/// Fewer cohort requests than this: no verdict.
pub const MIN_COHORT: u64 = 20;
/// The oldest wait must rise by at least this share of the reference gate.
pub const WAIT_MARGIN_GATE_SHARE: f64 = 0.25;
/// … and by at least this many ms.
pub const MIN_WAIT_MARGIN_MS: f64 = 50.0;
/// First tokens the first third must deliver before a rise of the oldest
/// wait can be told from a latency longer than the window.
pub const MIN_FIRST_TOKENS: usize = 5;
/// Rows needed in each third for the time-per-token test.
pub const TPOT_MIN_ROWS: usize = 10;
/// The one-sided z the time-per-token rise must reach (p ≤ 0.001).
pub const TPOT_MIN_Z: f64 = 3.09;
/// The time-per-token rise must be at least this share of the TPOT gate …
pub const TPOT_MARGIN_GATE_SHARE: f64 = 0.25;
/// … and of the first third's median.
pub const TPOT_MARGIN_MEDIAN_SHARE: f64 = 0.5;
/// Served is short when arrivals − completions exceed this many standard
/// deviations of the difference of two Poisson counts.
pub const SHORTFALL_SIGMAS: f64 = 3.0;
/// The window is long against the residence times when their p90 is at most
/// this share of it.
pub const RESIDENCE_WINDOW_SHARE: f64 = 1.0 / 3.0;
const THIRD: usize = SAMPLES / 3;

/// Whether the server kept up with the offered load, per result block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Saturation {
    /// Cohort requests per window second, as in `rates.offeredPerS`.
    pub offered_per_s: f64,
    /// Completions per second over the span in which they happened: always
    /// equal to `rates.servedPerS` (docs/contract.md §7.6), repeated here so
    /// the figures stand together.
    pub served_per_s: Option<f64>,
    /// The completion span `servedPerS` is measured over, ms (null with it).
    pub served_span_ms: Option<f64>,
    /// Rows (any arrival, not invalid) in flight at `window.startMs`; null
    /// when arrival times are unknown.
    pub in_flight_at_start: Option<u64>,
    /// Rows (any arrival, not invalid) in flight at `window.endMs` (a row
    /// that never ended is in flight there); null when arrival times are
    /// unknown.
    pub in_flight_at_end: Option<u64>,
    /// (inFlightAtEnd − inFlightAtStart) / window s; null with them.
    pub in_flight_growth_per_s: Option<f64>,
    /// The window cut into equal time bins, in order; null when arrival
    /// times are unknown.
    pub bins: Option<Vec<SaturationBin>>,
    /// Completions of any row (whatever its arrival) inside the window;
    /// null when arrival times are unknown.
    pub completions_in_window: Option<u64>,
    /// `completionsInWindow` per window second.
    pub served_in_window_per_s: Option<f64>,
    /// The three tests the verdict rests on; null when arrival times are
    /// unknown.
    pub queueing: Option<Queueing>,
    /// `steady`, `overloaded` or `inconclusive`.
    pub verdict: SaturationVerdict,
    /// The figures the verdict rests on, or why there is none, in a sentence.
    pub evidence: String,
}

/// The figures of the verdict's tests (docs/contract.md §10.3).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Queueing {
    /// The window at `SAMPLES + 1` equal instants, start to end.
    pub samples: Vec<WaitSample>,
    /// The largest oldest wait among the first third's 8 samples (after the start), ms.
    pub oldest_wait_first_third_max_ms: f64,
    /// First tokens (of any row) that came in the window's first third.
    pub first_tokens_first_third: u64,
    /// Nearest-rank p90 of their TTFT, ms (null when none came).
    pub first_third_ttft_p90_ms: Option<f64>,
    /// What the last third's oldest waits are measured against: the larger
    /// of `oldestWaitFirstThirdMaxMs` and `firstThirdTtftP90Ms`, ms.
    pub wait_baseline_ms: f64,
    /// The smallest oldest wait among the last third's 8 samples, ms.
    pub oldest_wait_last_third_min_ms: f64,
    /// How far the second must exceed the first: `max(¼ × gate, 50 ms)`.
    pub wait_margin_ms: f64,
    /// Whether waiting grew: the last third's minimum is at least the
    /// baseline plus the margin, with at least 5 first tokens in the first third.
    pub waiting_grew: bool,
    /// The oldest wait rose so, but fewer than 5 first tokens came in the
    /// first third: a latency longer than the window looks the same.
    pub wait_rose_unserved: bool,
    /// Time per output token of the first and last thirds' arrivals.
    pub tpot: TpotTrend,
    /// Cohort arrivals minus completions inside the window.
    pub shortfall: i64,
    /// `3 √(arrivals + completions)`.
    pub shortfall_noise: f64,
    /// Whether the shortfall exceeds its noise.
    pub served_short: bool,
    /// p90 of the cohort's time in the system, clipped at the window's end, ms.
    pub residence_p90_ms: Option<f64>,
    /// Whether that p90 is at most a third of the window.
    pub window_long: bool,
}

/// One instant of the window.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitSample {
    /// The instant, ms.
    pub t_ms: f64,
    /// Rows in flight (arrived at or before it, not ended before it).
    pub in_flight: u64,
    /// Of those, rows with no first token at or before it.
    pub waiting: u64,
    /// How long the oldest of them had waited, ms (0 when none waits).
    pub oldest_wait_ms: f64,
}

/// Time per output token by arrival, for servers that slow every stream.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TpotTrend {
    /// Rows arriving in the first third that completed (more than one token) by the window's end.
    pub early_rows: u64,
    /// The same for the last third.
    pub late_rows: u64,
    /// Nearest-rank median of the early rows' TPOT, ms.
    pub early_median_ms: Option<f64>,
    /// Nearest-rank median of the late rows' TPOT, ms.
    pub late_median_ms: Option<f64>,
    /// One-sided Mann–Whitney z of late over early (ties at mid-ranks).
    pub z: Option<f64>,
    /// The median rise needed: `max(¼ × TPOT gate, ½ × early median)`, ms.
    pub margin_ms: Option<f64>,
    /// Whether streams slowed; null when not judged (too few rows, or a
    /// window short against the residence times).
    pub slowed: Option<bool>,
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
    /// Nothing waited longer later, served kept pace, the window was long enough.
    Steady,
    /// Waiting grew (or streams slowed) while served fell short.
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

/// The instants the saturation figures look at.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Instants {
    /// Bin edges: `at[0]` = window start, `at[k]` = end of bin k − 1, `at[BINS]` = window end.
    pub at: [f64; BINS + 1],
    /// The sampled instants, `samples[0]` = start, `samples[SAMPLES]` = end.
    pub samples: [f64; SAMPLES + 1],
    /// When observation stopped.
    pub horizon_ms: f64,
}

impl Instants {
    /// Cuts `[start_ms, end_ms)` into [`BINS`] equal bins and [`SAMPLES`] steps.
    pub fn new(start_ms: f64, end_ms: f64, horizon_ms: f64) -> Self {
        let span = end_ms - start_ms;
        let mut at = [start_ms; BINS + 1];
        for (k, t) in at.iter_mut().enumerate().skip(1) {
            *t = start_ms + span * k as f64 / BINS as f64;
        }
        at[BINS] = end_ms;
        let mut samples = [start_ms; SAMPLES + 1];
        for (j, t) in samples.iter_mut().enumerate().skip(1) {
            *t = start_ms + span * j as f64 / SAMPLES as f64;
        }
        samples[SAMPLES] = end_ms;
        Self {
            at,
            samples,
            horizon_ms,
        }
    }

    fn start(&self) -> f64 {
        self.at[0]
    }

    fn end(&self) -> f64 {
        self.at[BINS]
    }

    /// The bin an instant of the window falls in, or `None` outside it.
    fn bin(&self, t: f64) -> Option<usize> {
        if !(self.start() <= t && t < self.end()) {
            return None;
        }
        (0..BINS).find(|&k| t < self.at[k + 1])
    }

    /// 0 for the window's first third, 2 for its last, 1 between.
    fn third(&self, t: f64) -> usize {
        if t < self.samples[THIRD] {
            0
        } else if t < self.samples[SAMPLES - THIRD] {
            1
        } else {
            2
        }
    }
}

/// When a valid row ended (`+∞` if it never did), or `None` for a failure
/// without `endedMs`.
fn unclipped_end_ms(row: &RawRow) -> Option<f64> {
    match row.status {
        Slot::Set(RawStatus::Completed) => row.completed_ms.value(),
        Slot::Set(RawStatus::Failed) => row.ended_ms.value(),
        _ => Some(f64::INFINITY),
    }
}

/// Running saturation figures of one block. Merges exactly: counts add,
/// maxima take the larger, value lists are sorted before they are read.
#[derive(Clone, Debug, Default)]
pub(crate) struct SaturationTally {
    in_flight_at_bin: [u64; BINS + 1],
    arrivals: [u64; BINS],
    completions: [u64; BINS],
    in_flight: [u64; SAMPLES + 1],
    waiting: [u64; SAMPLES + 1],
    oldest_wait_ms: [f64; SAMPLES + 1],
    completions_in_window: u64,
    tpot_early: Vec<f64>,
    tpot_late: Vec<f64>,
    residence_ms: Vec<f64>,
    first_third_ttft_ms: Vec<f64>,
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
        let end = unclipped_end_ms(row);
        if let Some(end) = end {
            self.add_presence(row, arrival, end, instants);
            if matches!(row.status, Slot::Set(RawStatus::Completed))
                && instants.start() <= end
                && end < instants.end()
            {
                self.completions_in_window += 1;
            }
        }
        if matches!(verdict, Verdict::Excluded(_)) {
            return;
        }
        self.add_cohort(verdict, row, arrival, end, instants);
    }

    /// In flight and waiting at each instant (the row is valid, its end known).
    fn add_presence(&mut self, row: &RawRow, arrival: f64, end: f64, instants: &Instants) {
        let present = |t: f64| arrival <= t && t <= end;
        for (n, &t) in self.in_flight_at_bin.iter_mut().zip(&instants.at) {
            *n += u64::from(present(t));
        }
        let first = row.first_token_ms.value();
        let unknown = first.is_none() && first_token_unknown(row);
        if let Some(f) = first.filter(|&f| instants.start() <= f && f < instants.samples[THIRD]) {
            self.first_third_ttft_ms.push(f - arrival);
        }
        for (j, &t) in instants.samples.iter().enumerate() {
            if !present(t) {
                continue;
            }
            self.in_flight[j] += 1;
            if !unknown && first.is_none_or(|f| f > t) {
                self.waiting[j] += 1;
                self.oldest_wait_ms[j] = self.oldest_wait_ms[j].max(t - arrival);
            }
        }
    }

    /// The cohort's bins, time per token by third, and residence.
    fn add_cohort(
        &mut self,
        verdict: &Verdict,
        row: &RawRow,
        arrival: f64,
        end: Option<f64>,
        instants: &Instants,
    ) {
        if let Some(k) = instants.bin(arrival) {
            self.arrivals[k] += 1;
        }
        if let Some(end) = end {
            self.residence_ms.push(end.min(instants.end()) - arrival);
        }
        let Some(done) = verdict.measured().and(row.completed_ms.value()) else {
            return;
        };
        if let Some(k) = instants.bin(done.min(instants.horizon_ms)) {
            self.completions[k] += 1;
        }
        let tpot = verdict.measured().and_then(|m| m.tpot_ms);
        if let (Some(tpot), true) = (tpot, done <= instants.end()) {
            match instants.third(arrival) {
                0 => self.tpot_early.push(tpot),
                2 => self.tpot_late.push(tpot),
                _ => {}
            }
        }
    }

    /// Adds another tally of other rows.
    pub fn absorb(&mut self, other: &Self) {
        let add = |a: &mut [u64], b: &[u64]| a.iter_mut().zip(b).for_each(|(a, b)| *a += b);
        add(&mut self.in_flight_at_bin, &other.in_flight_at_bin);
        add(&mut self.arrivals, &other.arrivals);
        add(&mut self.completions, &other.completions);
        add(&mut self.in_flight, &other.in_flight);
        add(&mut self.waiting, &other.waiting);
        for (a, b) in self.oldest_wait_ms.iter_mut().zip(other.oldest_wait_ms) {
            *a = a.max(b);
        }
        self.completions_in_window += other.completions_in_window;
        self.tpot_early.extend_from_slice(&other.tpot_early);
        self.tpot_late.extend_from_slice(&other.tpot_late);
        self.residence_ms.extend_from_slice(&other.residence_ms);
        self.first_third_ttft_ms
            .extend_from_slice(&other.first_third_ttft_ms);
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
        let window_ms = instants.end() - instants.start();
        let offered = figures.cohort as f64 / (window_ms / 1000.0);
        if arrivals_unknown {
            return Saturation {
                offered_per_s: offered,
                served_per_s: figures.served_per_s,
                served_span_ms: figures.served_span_ms,
                in_flight_at_start: None,
                in_flight_at_end: None,
                in_flight_growth_per_s: None,
                bins: None,
                completions_in_window: None,
                served_in_window_per_s: None,
                queueing: None,
                verdict: SaturationVerdict::Inconclusive,
                evidence: ARRIVALS_UNKNOWN_EVIDENCE.to_owned(),
            };
        }
        let queueing = self.queueing(instants, &figures);
        let (verdict, evidence) = judge(&queueing, &figures, window_ms, self.completions_in_window);
        let (start, end) = (self.in_flight_at_bin[0], self.in_flight_at_bin[BINS]);
        Saturation {
            offered_per_s: offered,
            served_per_s: figures.served_per_s,
            served_span_ms: figures.served_span_ms,
            in_flight_at_start: Some(start),
            in_flight_at_end: Some(end),
            in_flight_growth_per_s: Some((end as f64 - start as f64) / (window_ms / 1000.0)),
            bins: Some(self.bins(instants)),
            completions_in_window: Some(self.completions_in_window),
            served_in_window_per_s: Some(self.completions_in_window as f64 / (window_ms / 1000.0)),
            queueing: Some(queueing),
            verdict,
            evidence,
        }
    }

    fn bins(&self, instants: &Instants) -> Vec<SaturationBin> {
        (0..BINS)
            .map(|k| SaturationBin {
                start_ms: instants.at[k],
                end_ms: instants.at[k + 1],
                arrivals: self.arrivals[k],
                completions: self.completions[k],
                in_flight_at_end: self.in_flight_at_bin[k + 1],
            })
            .collect()
    }

    /// The figures of the three tests.
    fn queueing(&self, instants: &Instants, figures: &BlockFigures) -> Queueing {
        let window_ms = instants.end() - instants.start();
        let samples: Vec<WaitSample> = (0..=SAMPLES)
            .map(|j| WaitSample {
                t_ms: instants.samples[j],
                in_flight: self.in_flight[j],
                waiting: self.waiting[j],
                oldest_wait_ms: self.oldest_wait_ms[j],
            })
            .collect();
        let first = &self.oldest_wait_ms[1..=THIRD];
        let last = &self.oldest_wait_ms[SAMPLES - THIRD + 1..=SAMPLES];
        let first_max = first.iter().copied().fold(0.0, f64::max);
        let last_min = last.iter().copied().fold(f64::INFINITY, f64::min);
        let wait_margin_ms = wait_margin_ms(figures.wait_gate_ms);
        let delivered = sorted(&self.first_third_ttft_ms).unwrap_or_default();
        let first_third_ttft_p90_ms = nearest_rank(&delivered, 90);
        let baseline = first_max.max(first_third_ttft_p90_ms.unwrap_or(0.0));
        let enough_first_tokens = delivered.len() >= MIN_FIRST_TOKENS;
        let residence_p90_ms = sorted(&self.residence_ms).and_then(|v| nearest_rank(&v, 90));
        let window_long = residence_p90_ms.is_some_and(|p| p <= RESIDENCE_WINDOW_SHARE * window_ms);
        let arrivals = figures.cohort as f64;
        let served = self.completions_in_window as f64;
        let shortfall_noise = SHORTFALL_SIGMAS * (arrivals + served).sqrt();
        let shortfall = figures.cohort as i64 - self.completions_in_window as i64;
        Queueing {
            samples,
            oldest_wait_first_third_max_ms: first_max,
            first_tokens_first_third: delivered.len() as u64,
            first_third_ttft_p90_ms,
            wait_baseline_ms: baseline,
            oldest_wait_last_third_min_ms: last_min,
            wait_margin_ms,
            waiting_grew: enough_first_tokens && last_min >= baseline + wait_margin_ms,
            wait_rose_unserved: !enough_first_tokens && last_min >= baseline + wait_margin_ms,
            tpot: self.tpot_trend(figures.tpot_gate_ms, window_long),
            shortfall,
            shortfall_noise,
            served_short: shortfall as f64 > shortfall_noise,
            residence_p90_ms,
            window_long,
        }
    }

    /// Time per token of the first third's arrivals against the last's.
    fn tpot_trend(&self, tpot_gate_ms: Option<f64>, window_long: bool) -> TpotTrend {
        let early = sorted(&self.tpot_early).unwrap_or_default();
        let late = sorted(&self.tpot_late).unwrap_or_default();
        let early_median_ms = nearest_rank(&early, 50);
        let late_median_ms = nearest_rank(&late, 50);
        let enough = early.len() >= TPOT_MIN_ROWS && late.len() >= TPOT_MIN_ROWS;
        let z = enough.then(|| mann_whitney_z(&early, &late));
        let margin_ms = early_median_ms.map(|m| {
            (TPOT_MARGIN_MEDIAN_SHARE * m)
                .max(tpot_gate_ms.map_or(0.0, |g| TPOT_MARGIN_GATE_SHARE * g))
        });
        let slowed = match (z, early_median_ms, late_median_ms, margin_ms) {
            (Some(z), Some(e), Some(l), Some(m)) if window_long => {
                Some(z >= TPOT_MIN_Z && l - e >= m)
            }
            _ => None,
        };
        TpotTrend {
            early_rows: early.len() as u64,
            late_rows: late.len() as u64,
            early_median_ms,
            late_median_ms,
            z,
            margin_ms,
            slowed,
        }
    }
}

/// `values` sorted, or `None` when empty.
fn sorted(values: &[f64]) -> Option<Vec<f64>> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    (!v.is_empty()).then_some(v)
}

/// The oldest wait's required rise: `max(¼ × gate, 50 ms)`.
pub fn wait_margin_ms(gate_ms: Option<f64>) -> f64 {
    gate_ms
        .map_or(0.0, |g| WAIT_MARGIN_GATE_SHARE * g)
        .max(MIN_WAIT_MARGIN_MS)
}

/// The one-sided Mann–Whitney z that `late` runs above `early` (both
/// sorted): `(U − n₁n₂/2) / σ`, with mid-ranks for ties and the tie
/// correction in σ. 0 when σ is 0 (every value equal).
pub fn mann_whitney_z(early: &[f64], late: &[f64]) -> f64 {
    let mut all: Vec<(f64, bool)> = early
        .iter()
        .map(|&v| (v, false))
        .chain(late.iter().map(|&v| (v, true)))
        .collect();
    all.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (n1, n2) = (early.len() as f64, late.len() as f64);
    let n = n1 + n2;
    let (mut rank_sum_late, mut ties, mut i) = (0.0, 0.0, 0);
    while i < all.len() {
        let j = (i..all.len())
            .find(|&j| all[j].0 != all[i].0)
            .unwrap_or(all.len());
        let mid_rank = (i + j + 1) as f64 / 2.0;
        let t = (j - i) as f64;
        ties += t * t * t - t;
        rank_sum_late += mid_rank * all[i..j].iter().filter(|x| x.1).count() as f64;
        i = j;
    }
    let u = rank_sum_late - n2 * (n2 + 1.0) / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var > 0.0 {
        (u - n1 * n2 / 2.0) / var.sqrt()
    } else {
        0.0
    }
}

/// The block's counts and gates the saturation figures need.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BlockFigures {
    /// Cohort rows.
    pub cohort: u64,
    /// Failed cohort rows.
    pub failed: u64,
    /// Censored cohort rows.
    pub censored: u64,
    /// `rates.servedPerS` (docs/contract.md §7.6): copied, never computed a second way.
    pub served_per_s: Option<f64>,
    /// The completion span `rates.servedPerS` divides by, ms (null with it).
    pub served_span_ms: Option<f64>,
    /// The gate the oldest wait's rise is measured against: the smallest
    /// TTFT gate of the block's classes, else the smallest E2E gate.
    pub wait_gate_ms: Option<f64>,
    /// The smallest TPOT gate of the block's classes.
    pub tpot_gate_ms: Option<f64>,
}

/// The verdict and its evidence sentence (the module docs give the rule).
fn judge(
    q: &Queueing,
    f: &BlockFigures,
    window_ms: f64,
    served: u64,
) -> (SaturationVerdict, String) {
    use SaturationVerdict::{Inconclusive, Overloaded, Steady};
    if f.cohort < MIN_COHORT {
        return (
            Inconclusive,
            format!(
                "only {} requests arrived in the window; at least {MIN_COHORT} are needed to judge saturation",
                f.cohort
            ),
        );
    }
    let slowed = q.tpot.slowed == Some(true);
    let queueing = q.waiting_grew || slowed;
    let pace = pace_clause(q, f.cohort, served);
    let wait = wait_clause(q);
    match (queueing, q.served_short) {
        (true, true) => (Overloaded, format!("{}; {pace}", evidence_clause(q))),
        (true, false) => (
            Inconclusive,
            format!(
                "{}, but {pace}: a transient, or a load at capacity",
                evidence_clause(q)
            ),
        ),
        (false, _) if q.wait_rose_unserved => (
            Inconclusive,
            format!(
                "the oldest wait rose to {} ms in the window's last third, but only {} first tokens came in its first third: a latency longer than the window looks the same as a queue",
                ms(q.oldest_wait_last_third_min_ms),
                q.first_tokens_first_third
            ),
        ),
        (false, true) if !q.window_long => (
            Inconclusive,
            format!(
                "{pace}, but {wait}, and {}: long requests, not a queue",
                short_window_clause(q, window_ms)
            ),
        ),
        (false, true) => (
            Inconclusive,
            format!(
                "{pace}, but {wait} ({} failed, {} censored)",
                f.failed, f.censored
            ),
        ),
        (false, false) if !q.window_long => (
            Inconclusive,
            format!(
                "{wait} and {pace}, but {}",
                short_window_clause(q, window_ms)
            ),
        ),
        (false, false) => (
            Steady,
            format!(
                "{wait}; {pace}; p90 time in the system {} ms, within a third of the window",
                ms(q.residence_p90_ms.unwrap_or(0.0))
            ),
        ),
    }
}

/// The queueing evidence found, in words.
fn evidence_clause(q: &Queueing) -> String {
    let mut parts = Vec::new();
    if q.waiting_grew {
        parts.push(format!(
            "waiting grew: the oldest request waiting for a first token had waited at least {} ms throughout the window's last third, against at most {} ms in its first third",
            ms(q.oldest_wait_last_third_min_ms),
            ms(q.wait_baseline_ms)
        ));
    }
    if let (Some(true), Some(e), Some(l), Some(z)) = (
        q.tpot.slowed,
        q.tpot.early_median_ms,
        q.tpot.late_median_ms,
        q.tpot.z,
    ) {
        parts.push(format!(
            "streams slowed: median time per token {e:.1} → {l:.1} ms from the first third's arrivals to the last's (z = {z:.1})"
        ));
    }
    parts.join("; ")
}

/// Whether completions kept pace with arrivals, in words.
fn pace_clause(q: &Queueing, arrivals: u64, served: u64) -> String {
    let noise = q.shortfall_noise;
    if q.served_short {
        format!(
            "the window saw {served} completions for {arrivals} arrivals, short by {} (more than 3σ = {noise:.0})",
            q.shortfall
        )
    } else {
        format!(
            "the window saw {served} completions for {arrivals} arrivals (within 3σ = {noise:.0})"
        )
    }
}

/// That nothing waited longer later, in words.
fn wait_clause(q: &Queueing) -> String {
    format!(
        "no request waited longer later (at most {} ms in the first third, down to {} ms in the last)",
        ms(q.wait_baseline_ms),
        ms(q.oldest_wait_last_third_min_ms)
    )
}

/// That the window is short against the residence times, in words.
fn short_window_clause(q: &Queueing, window_ms: f64) -> String {
    match q.residence_p90_ms {
        Some(p) => format!(
            "the window is short against the residence times (p90 time in the system {} ms, over a third of the {} ms window)",
            ms(p),
            ms(window_ms)
        ),
        None => "no request's time in the system is known".to_owned(),
    }
}

/// Milliseconds for a sentence: whole ms.
fn ms(x: f64) -> String {
    format!("{x:.0}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wait_margin_is_a_quarter_gate_or_fifty_ms() {
        assert_eq!(wait_margin_ms(Some(1000.0)), 250.0);
        assert_eq!(wait_margin_ms(Some(100.0)), 50.0);
        assert_eq!(wait_margin_ms(None), 50.0);
    }

    #[test]
    fn mann_whitney_z_matches_a_hand_count() {
        // early 1,2,3 / late 4,5,6: U = 9 (every late above every early),
        // mean 4.5, σ² = 3·3·7/12 = 5.25 → z = 4.5/√5.25 = 1.9640.
        let z = mann_whitney_z(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert!((z - 4.5 / 5.25f64.sqrt()).abs() < 1e-12, "{z}");
        // All equal: σ = 0 → 0.
        assert_eq!(mann_whitney_z(&[1.0, 1.0], &[1.0, 1.0]), 0.0);
        // early 1,2 / late 2,3: ranks 1, 2.5, 2.5, 4; late sum 6.5,
        // U = 6.5 − 3 = 3.5, mean 2; ties t = 2: Σ(t³ − t) = 6;
        // σ² = 2·2/12 · (5 − 6/12) = 1.5 → z = 1.5/√1.5.
        let z = mann_whitney_z(&[1.0, 2.0], &[2.0, 3.0]);
        assert!((z - 1.5 / 1.5f64.sqrt()).abs() < 1e-12, "{z}");
    }

    #[test]
    fn instants_cut_the_window_into_equal_bins_thirds_and_samples() {
        let i = Instants::new(1000.0, 7000.0, 9000.0);
        assert_eq!(
            i.at,
            [1000.0, 2000.0, 3000.0, 4000.0, 5000.0, 6000.0, 7000.0]
        );
        assert_eq!(i.samples[1], 1250.0);
        assert_eq!(i.samples[8], 3000.0);
        assert_eq!(i.samples[24], 7000.0);
        assert_eq!(i.bin(999.9), None);
        assert_eq!(i.bin(1000.0), Some(0));
        assert_eq!(i.bin(6999.0), Some(5));
        assert_eq!(i.bin(7000.0), None);
        assert_eq!(i.third(2999.0), 0);
        assert_eq!(i.third(3000.0), 1);
        assert_eq!(i.third(5000.0), 2);
    }
}
