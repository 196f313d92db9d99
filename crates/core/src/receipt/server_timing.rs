//! The receipt's `serverTiming` block (docs/contract.md §10.17): where a
//! request's time to first token went, read from what the server said it
//! did beside what the client measured.
//!
//! A client-side TTFT mixes the engine's queue wait, its prefill, and
//! everything outside the engine (the client, the network, any proxy or
//! gateway in front). A row that carries the server's own figures as labels
//! under [`SERVER_LABEL_PREFIX`] (`server.queueMs`, `server.prefillMs`) can
//! be split: **outside** = client TTFT − queue − prefill. The split never
//! replaces the client's instants; it stands beside them.
//!
//! Computed in a pass of its own after the rest of the receipt, so a trace
//! whose rows carry no server timing gets no `serverTiming` block and keeps
//! its receipt byte for byte.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::intervals::Confidence;
use crate::receipt::answer::summary_with_intervals;
use crate::receipt::{LatencySummary, PercentileIntervals, Results};
use crate::trace::{Gates, RawRow, Scalar, Trace};
use crate::verdict::{Judgement, Verdict};

/// The prefix under which server-reported figures sit in a row's labels.
pub const SERVER_LABEL_PREFIX: &str = "server.";
/// The engine's queue wait before the request was first scheduled, ms.
pub const QUEUE_LABEL: &str = "server.queueMs";
/// The engine's prompt processing (prefill) time, ms.
pub const PREFILL_LABEL: &str = "server.prefillMs";
/// The client check flags a block whose median time outside the engine is
/// more than this share of its smallest TTFT gate: a client or proxy that
/// eats a tenth of the promise is part of the measurement, not the server.
pub const OUTSIDE_SHARE_LIMIT: f64 = 0.10;

/// Where the TTFT of one block's rows went.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerTimingBlock {
    /// Completed cohort rows with a client TTFT and a server queue or
    /// prefill time: the rows split below.
    pub rows: u64,
    /// Of those, rows whose server reported a queue time (llama.cpp reports
    /// none: its queue wait then counts as outside the engine).
    pub queue_reported: u64,
    /// Of those, rows whose server reported a prefill time.
    pub prefill_reported: u64,
    /// Rows where the server's queue + prefill exceeded the client's TTFT
    /// (outside < 0: clocks or definitions disagree; kept, not clamped).
    pub negative_outside: u64,
    /// Client TTFT − queue − prefill per row, ms.
    pub outside_ms: LatencySummary,
    /// Server queue time over the rows that reported one, ms.
    pub queue_ms: LatencySummary,
    /// Server prefill time over the rows that reported one, ms.
    pub prefill_ms: LatencySummary,
    /// Order-statistic intervals of the three summaries' percentiles.
    pub intervals: ServerTimingIntervals,
    /// The split of all these rows' TTFT, summed.
    pub split: TimeSplit,
    /// The same split over the rows that missed their TTFT gate; null when
    /// no class of the block declares one.
    pub ttft_misses: Option<TimeSplit>,
    /// Whether the time outside the engine is a stated share of the
    /// promise; null without a TTFT gate.
    pub outside_check: Option<OutsideCheck>,
}

/// The percentile intervals of the three server-timing summaries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServerTimingIntervals {
    /// Of the time outside the engine.
    pub outside_ms: PercentileIntervals,
    /// Of the queue time.
    pub queue_ms: PercentileIntervals,
    /// Of the prefill time.
    pub prefill_ms: PercentileIntervals,
}

/// Summed client TTFT of some rows, and the shares of it spent in the
/// engine's queue, its prefill and outside the engine (they add up to 1).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TimeSplit {
    /// Rows summed.
    pub rows: u64,
    /// Their client TTFT, summed, ms.
    pub ttft_ms: f64,
    /// Σ queue / Σ TTFT; null when Σ TTFT is 0.
    pub queue_share: Option<f64>,
    /// Σ prefill / Σ TTFT; null when Σ TTFT is 0.
    pub prefill_share: Option<f64>,
    /// Σ outside / Σ TTFT (1 − the two others); null when Σ TTFT is 0.
    pub outside_share: Option<f64>,
}

/// The median time outside the engine against the smallest TTFT gate of
/// the block's classes.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OutsideCheck {
    /// The median (nearest rank) of `outsideMs`, ms.
    pub median_outside_ms: f64,
    /// The smallest TTFT gate among the block's classes, ms.
    pub smallest_ttft_gate_ms: f64,
    /// medianOutsideMs / smallestTtftGateMs; null for a gate of 0.
    pub share: Option<f64>,
    /// [`OUTSIDE_SHARE_LIMIT`].
    pub limit: f64,
    /// share > limit (a gate of 0 with a positive median is flagged too).
    pub flagged: bool,
}

/// One row's split: client TTFT, and the server's queue and prefill (each
/// `None` when not reported).
#[derive(Clone, Copy, Debug)]
struct RowSplit {
    ttft: f64,
    queue: Option<f64>,
    prefill: Option<f64>,
}

impl RowSplit {
    fn outside(&self) -> f64 {
        self.ttft - self.queue.unwrap_or(0.0) - self.prefill.unwrap_or(0.0)
    }
}

/// A finite number ≥ 0 under `key` in a row's labels.
fn label_ms(row: &RawRow, key: &str) -> Option<f64> {
    let labels = row.labels.get()?;
    let i = labels.binary_search_by(|(k, _)| (**k).cmp(key)).ok()?;
    match labels[i].1 {
        Scalar::Number(x) if x.is_finite() && x >= 0.0 => Some(x),
        _ => None,
    }
}

/// The split of a judged row, when it is a completed cohort row with a
/// TTFT and at least one server figure.
fn row_split(row: &RawRow, verdict: &Verdict) -> Option<RowSplit> {
    let ttft = verdict.measured()?.ttft_ms?;
    let (queue, prefill) = (label_ms(row, QUEUE_LABEL), label_ms(row, PREFILL_LABEL));
    (queue.is_some() || prefill.is_some()).then_some(RowSplit {
        ttft,
        queue,
        prefill,
    })
}

/// Running sums of a [`TimeSplit`].
#[derive(Clone, Copy, Default)]
struct SplitSums {
    rows: u64,
    ttft: f64,
    queue: f64,
    prefill: f64,
}

impl SplitSums {
    fn add(&mut self, s: &RowSplit) {
        self.rows += 1;
        self.ttft += s.ttft;
        self.queue += s.queue.unwrap_or(0.0);
        self.prefill += s.prefill.unwrap_or(0.0);
    }

    fn absorb(&mut self, o: &SplitSums) {
        self.rows += o.rows;
        self.ttft += o.ttft;
        self.queue += o.queue;
        self.prefill += o.prefill;
    }

    fn finish(&self) -> TimeSplit {
        let share = |x: f64| (self.ttft > 0.0).then(|| x / self.ttft);
        TimeSplit {
            rows: self.rows,
            ttft_ms: self.ttft,
            queue_share: share(self.queue),
            prefill_share: share(self.prefill),
            outside_share: share(self.ttft - self.queue - self.prefill),
        }
    }
}

/// Running server-timing figures of one block.
#[derive(Default)]
struct Tally {
    /// The smallest TTFT gate of the block's classes.
    smallest_gate: Option<f64>,
    outside: Vec<f64>,
    queue: Vec<f64>,
    prefill: Vec<f64>,
    negative_outside: u64,
    all: SplitSums,
    misses: SplitSums,
}

impl Tally {
    fn declare(&mut self, gates: &Gates) {
        if let Some(g) = gates.ttft_ms {
            self.smallest_gate = Some(self.smallest_gate.map_or(g, |s| s.min(g)));
        }
    }

    fn add(&mut self, s: &RowSplit, missed_ttft: bool) {
        let outside = s.outside();
        self.outside.push(outside);
        self.negative_outside += u64::from(outside < 0.0);
        self.queue.extend(s.queue);
        self.prefill.extend(s.prefill);
        self.all.add(s);
        if missed_ttft {
            self.misses.add(s);
        }
    }

    fn absorb(&mut self, o: &Tally) {
        if let Some(g) = o.smallest_gate {
            self.smallest_gate = Some(self.smallest_gate.map_or(g, |s| s.min(g)));
        }
        self.outside.extend_from_slice(&o.outside);
        self.queue.extend_from_slice(&o.queue);
        self.prefill.extend_from_slice(&o.prefill);
        self.negative_outside += o.negative_outside;
        self.all.absorb(&o.all);
        self.misses.absorb(&o.misses);
    }

    fn finish(mut self, confidence: Confidence) -> Option<ServerTimingBlock> {
        if self.all.rows == 0 {
            return None;
        }
        let (queue_reported, prefill_reported) =
            (self.queue.len() as u64, self.prefill.len() as u64);
        let (outside_ms, outside_i) = summary_with_intervals(&mut self.outside, confidence);
        let (queue_ms, queue_i) = summary_with_intervals(&mut self.queue, confidence);
        let (prefill_ms, prefill_i) = summary_with_intervals(&mut self.prefill, confidence);
        let outside_check = self
            .smallest_gate
            .zip(outside_ms.p50)
            .map(|(gate, median)| outside_check(median, gate));
        Some(ServerTimingBlock {
            rows: self.all.rows,
            queue_reported,
            prefill_reported,
            negative_outside: self.negative_outside,
            outside_ms,
            queue_ms,
            prefill_ms,
            intervals: ServerTimingIntervals {
                outside_ms: outside_i,
                queue_ms: queue_i,
                prefill_ms: prefill_i,
            },
            split: self.all.finish(),
            ttft_misses: self.smallest_gate.map(|_| self.misses.finish()),
            outside_check,
        })
    }
}

/// The client check of a median time outside the engine against a gate.
fn outside_check(median: f64, gate: f64) -> OutsideCheck {
    let share = (gate > 0.0).then(|| median / gate);
    OutsideCheck {
        median_outside_ms: median,
        smallest_ttft_gate_ms: gate,
        share,
        limit: OUTSIDE_SHARE_LIMIT,
        flagged: share.map_or(median > 0.0, |s| s > OUTSIDE_SHARE_LIMIT),
    }
}

/// Adds the `serverTiming` blocks to `results`, per class and for all rows
/// (docs/contract.md §10.17).
pub fn attach(
    trace: &Trace,
    judgements: &[Judgement],
    results: &mut Results,
    confidence: Confidence,
) {
    let mut per_class: Vec<Tally> = trace
        .contract
        .classes
        .values()
        .map(|g| {
            let mut t = Tally::default();
            t.declare(g);
            t
        })
        .collect();
    for (row, j) in trace.rows.iter().zip(judgements) {
        let Some(tally) = j.class.and_then(|c| per_class.get_mut(c)) else {
            continue;
        };
        if let Some(split) = row_split(row, &j.verdict) {
            let missed = matches!(&j.verdict, Verdict::Miss(_, m) if m.ttft);
            tally.add(&split, missed);
        }
    }
    let mut all = Tally::default();
    for t in &per_class {
        all.absorb(t);
    }
    results.all.server_timing = all.finish(confidence);
    for (block, tally) in results.classes.values_mut().zip(per_class) {
        block.server_timing = tally.finish(confidence);
    }
}
