//! A diagnosis per class, read from the receipt's own counts: where a
//! class's lost requests went, and where that points to look.
//!
//! Every class with at least one miss, failure or unfinished (censored) row
//! gets one diagnosis. Its counts come first — misses by metric, the rows
//! that can only have missed E2E, failures by reason, unfinished rows — then
//! the dominant cause (the largest of those counts; ties name every tied
//! cause) and the reading that follows from it:
//!
//! | dominant | reading |
//! |---|---|
//! | TTFT misses | queueing, prefill, cold starts or admission; with the server's own timing (§10.17), whichever of queue, prefill or outside the engine took most of the misses' TTFT |
//! | TPOT misses | decode contention or streaming |
//! | stall misses | the stream froze mid-answer: preemption, interleaved prefill, the network |
//! | TTFA misses after a fast first token | the model's reasoning budget, not the server's queue |
//! | TTFA misses after a slow first token | queueing, prefill, cold starts or admission (as TTFT) |
//! | rows that never answered | the output budget went to reasoning: raise max_tokens or bound reasoning |
//! | E2E-only misses | long outputs, or an E2E promise the workload cannot meet |
//! | failures | their own investigation, by reason |
//! | unfinished rows | requests still open when observation stopped: overload or stalls |
//!
//! A row counts under every metric it missed, so the counts of the receipt
//! cannot say exactly how many rows missed E2E alone. The diagnosis uses the
//! smallest number the counts prove: `miss − ttft − tpot − stall − ttfa −
//! no_answer` (every missing row that missed none of the others missed E2E
//! alone), never more. A TTFA miss is split by the receipt's `answer` block
//! (`ttfaMisses`: thinking when the first token was fast, waiting when it
//! was not), so a reasoning model's long thinking is never read as a queue. The
//! reading names where to look; it never claims a mechanism the counts do not
//! show.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::receipt::server_timing::TimeSplit;
use crate::receipt::{Block, Receipt};

/// What lost the most requests of a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Completed rows over their TTFT gate.
    TtftMisses,
    /// Completed rows over their TPOT gate.
    TpotMisses,
    /// Completed rows over their stall gate.
    StallMisses,
    /// TTFA misses after a fast first token (the reasoning budget).
    ThinkingMisses,
    /// TTFA misses after a slow first token (the queue, as TTFT).
    WaitingMisses,
    /// Rows of a TTFA-gated class that never answered.
    NoAnswer,
    /// Completed rows over their E2E gate only (at least this many).
    E2eOnlyMisses,
    /// Failed rows.
    Failures,
    /// Rows still unfinished at the horizon.
    Unfinished,
}

impl Cause {
    /// The cause in words.
    pub fn label(self) -> &'static str {
        match self {
            Cause::TtftMisses => "TTFT misses",
            Cause::TpotMisses => "TPOT misses",
            Cause::StallMisses => "stall misses",
            Cause::ThinkingMisses => "TTFA misses after a fast first token",
            Cause::WaitingMisses => "TTFA misses after a slow first token",
            Cause::NoAnswer => "rows that never answered",
            Cause::E2eOnlyMisses => "E2E-only misses",
            Cause::Failures => "failures",
            Cause::Unfinished => "unfinished rows",
        }
    }

    /// Where the cause points to look.
    pub fn reading(self) -> &'static str {
        match self {
            Cause::TtftMisses => "look at queueing, prefill, cold starts or admission",
            Cause::TpotMisses => "look at decode contention or streaming",
            Cause::StallMisses => {
                "streams froze mid-answer: look at preemption, prefill interleaved with decode \
                 (chunked prefill) or the network"
            }
            Cause::ThinkingMisses => {
                "the model thought too long: its reasoning budget, not the server's queue (bound \
                 the reasoning, or declare a TTFA gate the model can meet)"
            }
            Cause::WaitingMisses => {
                "the first token was already late: look at queueing, prefill, cold starts or \
                 admission"
            }
            Cause::NoAnswer => {
                "the whole output budget went to reasoning: raise max_tokens or bound the \
                 reasoning (thinking budget)"
            }
            Cause::E2eOnlyMisses => "long outputs, or an E2E promise this workload cannot meet",
            Cause::Failures => "investigate the failures on their own, by reason",
            Cause::Unfinished => {
                "requests were still open when observation stopped, so check whether the server \
                 fell behind the offered load (overload) or requests stalled"
            }
        }
    }
}

/// One class's diagnosis.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClassDiagnosis {
    /// The class.
    pub class: String,
    /// Cohort rows of the class.
    pub cohort: u64,
    /// Cohort rows that did not pass (miss + failed + censored).
    pub not_passed: u64,
    /// Completed rows over the TTFT gate.
    pub ttft_misses: u64,
    /// Completed rows over the TPOT gate.
    pub tpot_misses: u64,
    /// Completed rows over the E2E gate.
    pub e2e_misses: u64,
    /// Completed rows over the stall gate (absent without one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stall_misses: Option<u64>,
    /// TTFA misses after a fast first token (absent without a TTFA gate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_misses: Option<u64>,
    /// TTFA misses after a slow first token (absent without a TTFA gate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting_misses: Option<u64>,
    /// Rows that never answered (absent without a TTFA gate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub no_answer: Option<u64>,
    /// Rows that missed E2E alone: at least this many (miss − every other
    /// gate's misses, or 0).
    pub e2e_only_at_least: u64,
    /// Failed rows, and by reason.
    pub failed: u64,
    /// Failed rows by reason.
    pub failure_reasons: BTreeMap<String, u64>,
    /// Rows unfinished at the horizon (censored).
    pub unfinished: u64,
    /// Of those, still running at the horizon.
    pub in_flight: u64,
    /// Of those, already past a TTFT or E2E gate at the horizon.
    pub known_late: u64,
    /// The largest of the counts above (several on a tie).
    pub dominant: Vec<Cause>,
    /// Where the TTFT of the rows that missed it went, by the server's own
    /// timing (the receipt's `serverTiming.ttftMisses`); absent without it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttft_miss_split: Option<TimeSplit>,
}

impl ClassDiagnosis {
    /// The reading of the dominant cause(s): `TTFT misses dominate: look at
    /// …`, or on a tie `TTFT misses and failures tie: TTFT misses: look at
    /// …; failures: investigate …`.
    pub fn reading(&self) -> String {
        let reading = |c: &Cause| match (c, self.ttft_split_reading()) {
            (Cause::TtftMisses, Some(split)) => split,
            _ => c.reading().to_owned(),
        };
        match self.dominant.as_slice() {
            [one] => format!("{} dominate: {}", one.label(), reading(one)),
            several => {
                let names: Vec<&str> = several.iter().map(|c| c.label()).collect();
                let each: Vec<String> = several
                    .iter()
                    .map(|c| format!("{}: {}", c.label(), reading(c)))
                    .collect();
                format!("{} tie: {}", names.join(" and "), each.join("; "))
            }
        }
    }
}

impl ClassDiagnosis {
    /// Where the TTFT misses' time went, when the server said: the largest
    /// share of their summed TTFT names where to look (§10.17).
    fn ttft_split_reading(&self) -> Option<String> {
        let s = self.ttft_miss_split.filter(|s| s.rows > 0)?;
        let (q, p, o) = (s.queue_share?, s.prefill_share?, s.outside_share?);
        let pct = |x: f64| format!("{:.0} %", x * 100.0);
        let shares = format!(
            "of their TTFT, {} was queueing in the engine, {} prefill, {} outside the engine",
            pct(q),
            pct(p),
            pct(o)
        );
        let look = if o >= q && o >= p {
            "the time went outside the engine: look at the client, a proxy or gateway, or the \
             network, not the server"
        } else if q >= p {
            "the time went waiting in the engine's queue: the server is short of capacity for \
             this load (batch limits, admission)"
        } else {
            "the time went to prefill: long prompts, no prefix caching, or prefill starved by \
             decode (chunked prefill settings)"
        };
        Some(format!("{shares} ({} rows): {look}", s.rows))
    }
}

/// The diagnosis of one block, or `None` when every cohort row passed.
pub fn diagnose_block(class: &str, block: &Block) -> Option<ClassDiagnosis> {
    let c = &block.counts;
    let m = &block.reasons.miss;
    if c.miss + c.failed + c.censored == 0 {
        return None;
    }
    let split = block.answer.as_ref().and_then(|a| a.ttfa_misses);
    let (stall, no_answer) = (m.stall.unwrap_or(0), m.no_answer.unwrap_or(0));
    let ttfa = m.ttfa.unwrap_or(0);
    let (thinking, waiting) = split.map_or((0, ttfa), |s| (s.thinking, s.waiting));
    let e2e_only = c
        .miss
        .saturating_sub(m.ttft + m.tpot + stall + ttfa + no_answer);
    let candidates = [
        (Cause::TtftMisses, m.ttft),
        (Cause::TpotMisses, m.tpot),
        (Cause::StallMisses, stall),
        (Cause::ThinkingMisses, thinking),
        (Cause::WaitingMisses, waiting),
        (Cause::NoAnswer, no_answer),
        (Cause::E2eOnlyMisses, e2e_only),
        (Cause::Failures, c.failed),
        (Cause::Unfinished, c.censored),
    ];
    let top = candidates.iter().map(|(_, n)| *n).max().unwrap_or(0);
    let dominant = candidates
        .iter()
        .filter(|(_, n)| *n == top && top > 0)
        .map(|(cause, _)| *cause)
        .collect();
    Some(ClassDiagnosis {
        class: class.to_owned(),
        cohort: c.cohort,
        not_passed: c.miss + c.failed + c.censored,
        ttft_misses: m.ttft,
        tpot_misses: m.tpot,
        e2e_misses: m.e2e,
        stall_misses: m.stall,
        thinking_misses: m.ttfa.map(|_| thinking),
        waiting_misses: m.ttfa.map(|_| waiting),
        no_answer: m.no_answer,
        e2e_only_at_least: e2e_only,
        failed: c.failed,
        failure_reasons: block.reasons.failure.clone(),
        unfinished: c.censored,
        in_flight: block.reasons.censored.in_flight,
        known_late: block.reasons.censored.known_late,
        dominant,
        ttft_miss_split: block.server_timing.as_ref().and_then(|t| t.ttft_misses),
    })
}

/// One diagnosis per class of the receipt that lost requests, in class order.
pub fn diagnose(receipt: &Receipt) -> Vec<ClassDiagnosis> {
    receipt
        .results
        .classes
        .iter()
        .filter_map(|(name, block)| diagnose_block(name, block))
        .collect()
}
