//! The receipt's `gaps` block (docs/contract.md §10.15): the distribution of
//! the gaps between token-carrying stream events, of each row's largest gap,
//! the stall misses, and the fluidity figure of classes with a per-token
//! deadline.
//!
//! Computed in a pass of its own after the rest of the receipt, so the
//! tally that every other figure comes from is unchanged: a trace without
//! gaps or stall gates gets no `gaps` block and keeps its receipt byte for
//! byte.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::intervals::clustered::clustered_quantile;
use crate::intervals::{wilson, Confidence, Interval};
use crate::receipt::answer::summary_with_intervals;
use crate::receipt::{LatencySummary, PercentileIntervals, Results};
use crate::trace::{Contract, Equality, Gates, RawRow, TokenCount, Trace};
use crate::verdict::{Judgement, Verdict};

/// What the gaps measured: one token per event, or events that may each
/// carry several tokens (or chunks).
pub const INTER_TOKEN: &str = "interTokenLatency";
/// See [`INTER_TOKEN`].
pub const INTER_EVENT: &str = "interEventLatency";

/// The gaps of one block's completed cohort rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GapBlock {
    /// `interTokenLatency` when every row's gaps are one per token (and the
    /// tokens are not chunks), else `interEventLatency`.
    pub label: String,
    /// Completed cohort rows with at least one gap.
    pub rows: u64,
    /// Completed cohort rows of a class with `stallMs` that had no gap to judge.
    pub not_judged_on_stall: u64,
    /// Every gap of those rows, pooled, ms.
    pub gap_ms: LatencySummary,
    /// Each row's largest gap, one value per row, ms.
    pub largest_gap_ms: LatencySummary,
    /// Order-statistic intervals of both summaries' percentiles.
    pub intervals: GapIntervals,
    /// The share of per-token deadlines met; null when no class of the
    /// block declares `tokenDeadlineMs`.
    pub fluidity: Option<Fluidity>,
}

/// The percentile intervals of the two gap distributions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GapIntervals {
    /// Of the pooled gaps (not independent draws: see docs/contract.md §10.15).
    pub gap_ms: PercentileIntervals,
    /// Of the per-row largest gaps.
    pub largest_gap_ms: PercentileIntervals,
    /// Of the pooled gaps, clustered by row (Woodruff's interval with the
    /// row-clustered variance, docs/intervals.md "Pooled over rows"): the
    /// rows of an open-loop run are independent where their gaps are not,
    /// so this is the interval `compare` uses for the ITL percentiles.
    /// `coverage` is null: it is approximate, not a binomial sum. Added
    /// within schema major version 1 (absent from older receipts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_ms_by_row: Option<PercentileIntervals>,
}

/// Per-token deadlines met, with the schedule restarted at each miss
/// (docs/contract.md §10.15).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fluidity {
    /// Token deadlines: one per gap of the rows in classes with a deadline.
    pub deadlines: u64,
    /// Deadlines met.
    pub met: u64,
    /// met / deadlines; null when there are none.
    pub share: Option<f64>,
    /// Wilson score interval of the share; null when there are none.
    pub interval: Option<Interval>,
}

/// One row's fluidity: `(deadlines, met)` for gaps `gaps` under the
/// per-token deadline `deadline_ms`. Each event's deadline is measured from
/// the last missed event (the first token before any miss); a miss restarts
/// the schedule there.
pub fn fluidity_of(gaps: &[f64], deadline_ms: f64, equality: Equality) -> (u64, u64) {
    let (mut reference, mut since, mut met) = (0usize, 0.0f64, 0u64);
    for (i, gap) in gaps.iter().enumerate() {
        let event = i + 1;
        since += gap;
        if equality.meets(since, (event - reference) as f64 * deadline_ms) {
            met += 1;
        } else {
            reference = event;
            since = 0.0;
        }
    }
    (gaps.len() as u64, met)
}

/// The first largest gap of a row and its 0-based position in `gapsMs`.
pub fn largest_gap(gaps: &[f64]) -> Option<(f64, usize)> {
    let mut best: Option<(f64, usize)> = None;
    for (i, &g) in gaps.iter().enumerate() {
        if best.is_none_or(|(b, _)| g > b) {
            best = Some((g, i));
        }
    }
    best
}

/// Running gap figures of one block.
#[derive(Default)]
struct GapTally {
    /// Whether the block gets a `gaps` block at all.
    shown: bool,
    /// Whether a class of the block declares a stall gate.
    stall_gated: bool,
    /// Whether a class of the block declares a per-token deadline.
    deadline_declared: bool,
    gaps: Vec<f64>,
    /// How many of `gaps` each row holds, in order.
    row_lens: Vec<usize>,
    largest: Vec<f64>,
    not_judged: u64,
    stall_misses: u64,
    /// A row's gaps were fewer than its tokens − 1 (or tokens are chunks).
    per_event: bool,
    deadlines: u64,
    met: u64,
}

impl GapTally {
    fn declare(&mut self, gates: &Gates) {
        self.stall_gated |= gates.stall_ms.is_some();
        self.deadline_declared |= gates.token_deadline_ms.is_some();
        self.shown |= self.stall_gated || self.deadline_declared;
    }

    fn add(&mut self, row: &RawRow, verdict: &Verdict, gates: &Gates, contract: &Contract) {
        let Some(m) = verdict.measured() else {
            return;
        };
        if let Verdict::Miss(_, missed) = verdict {
            self.stall_misses += u64::from(missed.stall);
        }
        let gaps: &[f64] = row.gaps_ms.get().map_or(&[], |g| g);
        self.shown |= row.gaps_ms.is_present();
        if gaps.is_empty() {
            self.not_judged += u64::from(gates.stall_ms.is_some());
            return;
        }
        self.per_event |=
            contract.tokens == TokenCount::Chunks || (gaps.len() as u64) + 1 != m.output_tokens;
        self.gaps.extend_from_slice(gaps);
        self.row_lens.push(gaps.len());
        self.largest.extend(largest_gap(gaps).map(|(g, _)| g));
        if let Some(d) = gates.token_deadline_ms {
            let (deadlines, met) = fluidity_of(gaps, d, contract.equality);
            self.deadlines += deadlines;
            self.met += met;
        }
    }

    fn absorb(&mut self, other: &GapTally) {
        self.shown |= other.shown;
        self.stall_gated |= other.stall_gated;
        self.deadline_declared |= other.deadline_declared;
        self.gaps.extend_from_slice(&other.gaps);
        self.row_lens.extend_from_slice(&other.row_lens);
        self.largest.extend_from_slice(&other.largest);
        self.not_judged += other.not_judged;
        self.stall_misses += other.stall_misses;
        self.per_event |= other.per_event;
        self.deadlines += other.deadlines;
        self.met += other.met;
    }

    /// The row-clustered intervals of the pooled p50, p95 and p99 (before
    /// `gaps` is sorted: each row's gaps are still together).
    fn by_row(&self, confidence: Confidence) -> PercentileIntervals {
        let mut rows: Vec<&[f64]> = Vec::with_capacity(self.row_lens.len());
        let mut rest: &[f64] = &self.gaps;
        for &n in &self.row_lens {
            let (row, tail) = rest.split_at(n.min(rest.len()));
            rows.push(row);
            rest = tail;
        }
        let at = |p| clustered_quantile(&rows, p, confidence);
        PercentileIntervals {
            p50: at(50),
            p95: at(95),
            p99: at(99),
        }
    }

    fn finish(mut self, confidence: Confidence) -> Option<GapBlock> {
        if !self.shown {
            return None;
        }
        let rows = self.largest.len() as u64;
        let by_row = self.by_row(confidence);
        let (gap_ms, gap_intervals) = summary_with_intervals(&mut self.gaps, confidence);
        let (largest_gap_ms, largest_intervals) =
            summary_with_intervals(&mut self.largest, confidence);
        let fluidity = self.deadline_declared.then(|| Fluidity {
            deadlines: self.deadlines,
            met: self.met,
            share: (self.deadlines > 0).then(|| self.met as f64 / self.deadlines as f64),
            interval: wilson(self.met, self.deadlines, confidence),
        });
        Some(GapBlock {
            label: if self.per_event || rows == 0 {
                INTER_EVENT
            } else {
                INTER_TOKEN
            }
            .to_owned(),
            rows,
            not_judged_on_stall: self.not_judged,
            gap_ms,
            largest_gap_ms,
            intervals: GapIntervals {
                gap_ms: gap_intervals,
                largest_gap_ms: largest_intervals,
                gap_ms_by_row: Some(by_row),
            },
            fluidity,
        })
    }
}

/// Adds the `gaps` blocks and the `stall` miss counts to `results`, per
/// class and for all rows (docs/contract.md §10.15).
pub fn attach(
    trace: &Trace,
    judgements: &[Judgement],
    results: &mut Results,
    confidence: Confidence,
) {
    let contract = &trace.contract;
    let gates: Vec<&Gates> = contract.classes.values().collect();
    let mut per_class: Vec<GapTally> = gates
        .iter()
        .map(|g| {
            let mut tally = GapTally::default();
            tally.declare(g);
            tally
        })
        .collect();
    for (row, j) in trace.rows.iter().zip(judgements) {
        if let Some((tally, g)) = j.class.and_then(|c| per_class.get_mut(c).zip(gates.get(c))) {
            tally.add(row, &j.verdict, g, contract);
        }
    }
    let mut all = GapTally::default();
    for tally in &per_class {
        all.absorb(tally);
    }
    let stall = |t: &GapTally| t.stall_gated.then_some(t.stall_misses);
    results.all.reasons.miss.stall = stall(&all);
    results.all.gaps = all.finish(confidence);
    for (block, tally) in results.classes.values_mut().zip(per_class) {
        block.reasons.miss.stall = stall(&tally);
        block.gaps = tally.finish(confidence);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/contract.md §10.15's example: d = 50, gaps 40, 40, 120, 30, 60.
    /// Event times 40, 80, 200, 230, 290 against deadlines 50, 100, 150
    /// (missed: restart at 200), 250, 300 → 4 of 5 met.
    #[test]
    fn the_contract_example_meets_four_of_five_deadlines() {
        let gaps = [40.0, 40.0, 120.0, 30.0, 60.0];
        assert_eq!(fluidity_of(&gaps, 50.0, Equality::Inclusive), (5, 4));
    }

    /// Gaps exactly on the deadline: inclusive meets all three; strict
    /// misses the first (50 < 50 is false), restarts, misses again: 0 of 3.
    #[test]
    fn a_gap_on_its_deadline_follows_the_equality_rule() {
        let gaps = [50.0, 50.0, 50.0];
        assert_eq!(fluidity_of(&gaps, 50.0, Equality::Inclusive), (3, 3));
        assert_eq!(fluidity_of(&gaps, 50.0, Equality::Strict), (3, 0));
    }

    /// Slack carries forward until a miss: 10 then 85 (elapsed 95 ≤ 100)
    /// meets both deadlines though the second gap alone is over 50.
    #[test]
    fn slack_carries_forward_until_a_miss() {
        assert_eq!(
            fluidity_of(&[10.0, 85.0], 50.0, Equality::Inclusive),
            (2, 2)
        );
    }

    #[test]
    fn the_largest_gap_is_the_first_of_equal_largest() {
        assert_eq!(largest_gap(&[1.0, 5.0, 2.0, 5.0]), Some((5.0, 1)));
        assert_eq!(largest_gap(&[]), None);
    }
}
