//! The receipt's `answer` block (docs/contract.md §10.16): time to first
//! answer (TTFA), the thinking time before it, the rows that never
//! answered, and the reasoning tokens — what a reasoning model's user waits
//! for, beside the first token of any kind.
//!
//! Computed in a pass of its own after the rest of the receipt (as the
//! `gaps` block is), so a trace without answer instants, reasoning counts
//! or TTFA gates gets no `answer` block and keeps its receipt byte for byte.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::intervals::clustered::clustered_share;
use crate::intervals::{quantile_interval, Confidence, Interval};
use crate::receipt::{LatencySummary, PercentileIntervals, Results};
use crate::stats::summarize;
use crate::trace::{Equality, Gates, RawRow, Trace};
use crate::verdict::{Judgement, Measured, Verdict};

/// The answer figures of one block's completed cohort rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswerBlock {
    /// Completed cohort rows with a first answer token.
    pub answered: u64,
    /// Completed cohort rows without one (the output budget went to
    /// reasoning, or the answer was empty).
    pub no_answer: u64,
    /// firstAnswerMs − arrivalMs over the answered rows, ms.
    pub ttfa_ms: LatencySummary,
    /// firstAnswerMs − firstTokenMs over the answered rows, ms: the time the
    /// model spent before its answer began (0 for a row that did not reason).
    pub thinking_ms: LatencySummary,
    /// Order-statistic intervals of both summaries' percentiles.
    pub intervals: AnswerIntervals,
    /// The reasoning tokens the server reported; null when no completed
    /// cohort row of the block carries `reasoningTokens`.
    pub reasoning: Option<Reasoning>,
    /// The TTFA misses split by where the wait went; null when no class of
    /// the block declares `ttfaMs`.
    pub ttfa_misses: Option<TtfaMisses>,
}

/// Where a TTFA miss's wait went (docs/contract.md §10.16): before the
/// first token of any kind (the server's queue and prefill), or after it
/// (the model's reasoning). A miss is `thinking` when its first token was
/// fast — within the class's TTFT gate under the equality rule, or, for a
/// class without one, when the thinking time is at least the TTFT (most of
/// the wait came after the first token) — and `waiting` otherwise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TtfaMisses {
    /// TTFA misses after a fast first token: the reasoning budget.
    pub thinking: u64,
    /// TTFA misses whose first token was already slow: queueing, prefill.
    pub waiting: u64,
}

/// The percentile intervals of the two answer distributions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AnswerIntervals {
    /// Of TTFA.
    pub ttfa_ms: PercentileIntervals,
    /// Of the thinking time.
    pub thinking_ms: PercentileIntervals,
}

/// Reasoning tokens against the output they are part of.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reasoning {
    /// Completed cohort rows that carry `reasoningTokens`.
    pub rows: u64,
    /// Their reasoning tokens, summed.
    pub reasoning_tokens: u64,
    /// Their output tokens, summed (reasoning included).
    pub output_tokens: u64,
    /// reasoning / output tokens; null when the output is 0.
    pub share: Option<f64>,
    /// Interval of the share, clustered by row (Wilson at the row-clustered
    /// effective number of tokens, docs/intervals.md "Pooled over rows"):
    /// a row reasons for a whole block of tokens, so its tokens are not
    /// independent trials. Null with fewer than two rows with output.
    /// Added within schema major version 1 (absent from older receipts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
}

/// Running answer figures of one block.
#[derive(Default)]
struct AnswerTally {
    /// Whether the block gets an `answer` block at all.
    shown: bool,
    /// Whether a class of the block declares a TTFA gate.
    gated: bool,
    ttfa: Vec<f64>,
    thinking: Vec<f64>,
    no_answer: u64,
    ttfa_misses: u64,
    ttfa_thinking: u64,
    no_answer_misses: u64,
    reasoning_rows: u64,
    reasoning_tokens: u64,
    reasoning_output: u64,
    /// Each reasoning row's (reasoning tokens, output tokens).
    reasoning_by_row: Vec<(f64, f64)>,
}

impl AnswerTally {
    fn declare(&mut self, gates: &Gates) {
        self.gated |= gates.ttfa_ms.is_some();
        self.shown |= self.gated;
    }

    fn add(&mut self, row: &RawRow, verdict: &Verdict, gates: &Gates, equality: Equality) {
        let Some(m) = verdict.measured() else {
            return;
        };
        if let Verdict::Miss(_, missed) = verdict {
            self.ttfa_misses += u64::from(missed.ttfa);
            self.no_answer_misses += u64::from(missed.no_answer);
            if missed.ttfa {
                self.ttfa_thinking += u64::from(fast_first_token(m, gates, equality));
            }
        }
        self.shown |= row.first_answer_ms.is_present() || row.reasoning_tokens.is_present();
        match (m.ttfa_ms, m.ttft_ms) {
            (Some(ttfa), Some(ttft)) => {
                self.ttfa.push(ttfa);
                self.thinking.push(ttfa - ttft);
            }
            _ => self.no_answer += 1,
        }
        if let Some(n) = row.reasoning_tokens.value() {
            self.reasoning_rows += 1;
            self.reasoning_tokens += n as u64;
            self.reasoning_output += m.output_tokens;
            self.reasoning_by_row.push((n, m.output_tokens as f64));
        }
    }

    fn absorb(&mut self, other: &AnswerTally) {
        self.shown |= other.shown;
        self.gated |= other.gated;
        self.ttfa.extend_from_slice(&other.ttfa);
        self.thinking.extend_from_slice(&other.thinking);
        self.no_answer += other.no_answer;
        self.ttfa_misses += other.ttfa_misses;
        self.ttfa_thinking += other.ttfa_thinking;
        self.no_answer_misses += other.no_answer_misses;
        self.reasoning_rows += other.reasoning_rows;
        self.reasoning_tokens += other.reasoning_tokens;
        self.reasoning_output += other.reasoning_output;
        self.reasoning_by_row
            .extend_from_slice(&other.reasoning_by_row);
    }

    fn finish(mut self, confidence: Confidence) -> Option<AnswerBlock> {
        if !self.shown {
            return None;
        }
        let answered = self.ttfa.len() as u64;
        let (ttfa_ms, ttfa_intervals) = summary_with_intervals(&mut self.ttfa, confidence);
        let (thinking_ms, thinking_intervals) =
            summary_with_intervals(&mut self.thinking, confidence);
        let reasoning = (self.reasoning_rows > 0).then(|| Reasoning {
            rows: self.reasoning_rows,
            reasoning_tokens: self.reasoning_tokens,
            output_tokens: self.reasoning_output,
            share: (self.reasoning_output > 0)
                .then(|| self.reasoning_tokens as f64 / self.reasoning_output as f64),
            interval: clustered_share(&self.reasoning_by_row, confidence),
        });
        Some(AnswerBlock {
            answered,
            no_answer: self.no_answer,
            ttfa_ms,
            thinking_ms,
            intervals: AnswerIntervals {
                ttfa_ms: ttfa_intervals,
                thinking_ms: thinking_intervals,
            },
            reasoning,
            ttfa_misses: self.gated.then_some(TtfaMisses {
                thinking: self.ttfa_thinking,
                waiting: self.ttfa_misses - self.ttfa_thinking,
            }),
        })
    }
}

/// Whether a row's first token was fast, in the sense of [`TtfaMisses`].
fn fast_first_token(m: &Measured, gates: &Gates, equality: Equality) -> bool {
    match (m.ttft_ms, m.ttfa_ms) {
        (Some(ttft), Some(ttfa)) => match gates.ttft_ms {
            Some(gate) => equality.meets(ttft, gate),
            None => ttfa - ttft >= ttft,
        },
        _ => false,
    }
}

/// The nearest-rank summary of `values` (sorted in place) and the intervals
/// of its p50, p95 and p99, as the latency percentiles get them.
pub(crate) fn summary_with_intervals(
    values: &mut [f64],
    confidence: Confidence,
) -> (LatencySummary, PercentileIntervals) {
    let s = summarize(values);
    let [p50, p90, p95, p99] = s.percentiles;
    let summary = LatencySummary {
        n: s.n,
        min: s.min,
        mean: s.mean,
        p50,
        p90,
        p95,
        p99,
        max: s.max,
    };
    let intervals = PercentileIntervals {
        p50: quantile_interval(values, 50, confidence),
        p95: quantile_interval(values, 95, confidence),
        p99: quantile_interval(values, 99, confidence),
    };
    (summary, intervals)
}

/// Adds the `answer` blocks and the `ttfa` / `noAnswer` miss counts to
/// `results`, per class and for all rows (docs/contract.md §10.16).
pub fn attach(
    trace: &Trace,
    judgements: &[Judgement],
    results: &mut Results,
    confidence: Confidence,
) {
    let gates: Vec<&Gates> = trace.contract.classes.values().collect();
    let mut per_class: Vec<AnswerTally> = gates
        .iter()
        .map(|g| {
            let mut tally = AnswerTally::default();
            tally.declare(g);
            tally
        })
        .collect();
    let equality = trace.contract.equality;
    for (row, j) in trace.rows.iter().zip(judgements) {
        if let Some((tally, g)) = j.class.and_then(|c| per_class.get_mut(c).zip(gates.get(c))) {
            tally.add(row, &j.verdict, g, equality);
        }
    }
    let mut all = AnswerTally::default();
    for tally in &per_class {
        all.absorb(tally);
    }
    let misses = |t: &AnswerTally| {
        (
            t.gated.then_some(t.ttfa_misses),
            t.gated.then_some(t.no_answer_misses),
        )
    };
    (
        results.all.reasons.miss.ttfa,
        results.all.reasons.miss.no_answer,
    ) = misses(&all);
    results.all.answer = all.finish(confidence);
    for (block, tally) in results.classes.values_mut().zip(per_class) {
        (block.reasons.miss.ttfa, block.reasons.miss.no_answer) = misses(&tally);
        block.answer = tally.finish(confidence);
    }
}
