//! One verdict per row (docs/contract.md §6), pure: a validated trace in, judgements out.
//!
//! Precedence: `invalid` → `excluded` → (cohort) `censored` → `failed` →
//! `pass` / `miss`. Everything that counts rows — the receipt, the sweep, the
//! mutation check — starts from these judgements, so there is one definition of
//! a verdict in the code base.

use crate::trace::validate::{duplicate_ids, row_reasons};
use crate::trace::{
    Contract, Equality, Gates, InvalidReason, InvalidSet, RawRow, RawStatus, Scalar, Slot, Trace,
};

/// The row label that says a row's first token is *unknown*, not absent
/// (docs/contract.md §6.3): a recovered recording whose spool could not say
/// whether a first token came before the cut. On such a row a missing
/// `firstTokenMs` is no evidence of lateness, so TTFT is not judged at the
/// horizon; E2E still is (the row had not ended).
pub const FIRST_TOKEN_UNKNOWN: &str = "firstTokenUnknown";

/// Whether `row` carries `firstTokenUnknown: true` (any other value, or
/// none, is not the marker).
pub fn first_token_unknown(row: &RawRow) -> bool {
    row.labels.get().is_some_and(|labels| {
        labels
            .binary_search_by(|(k, _)| (**k).cmp(FIRST_TOKEN_UNKNOWN))
            .is_ok_and(|i| labels[i].1 == Scalar::Bool(true))
    })
}

/// Why a valid row is outside the cohort.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exclusion {
    /// Arrived in the warm-up interval (wins over `outside_window`).
    Warmup,
    /// Arrived outside `[window.startMs, window.endMs)`.
    OutsideWindow,
}

impl Exclusion {
    /// The name in receipts.
    pub fn as_str(self) -> &'static str {
        match self {
            Exclusion::Warmup => "warmup",
            Exclusion::OutsideWindow => "outside_window",
        }
    }
}

/// Why a cohort row has no final outcome by the horizon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Censor {
    /// Still running when the trace was written.
    InFlight,
    /// Completed after the horizon.
    CompletedAfterHorizon,
    /// Failed after the horizon.
    FailedAfterHorizon,
}

impl Censor {
    /// The name in receipts.
    pub fn as_str(self) -> &'static str {
        match self {
            Censor::InFlight => "in_flight",
            Censor::CompletedAfterHorizon => "completed_after_horizon",
            Censor::FailedAfterHorizon => "failed_after_horizon",
        }
    }
}

/// The latency figures of a completed row (docs/contract.md §2).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// firstTokenMs − arrivalMs; `None` for a response that was not
    /// streamed (`streamed: false`: no first token exists).
    pub ttft_ms: Option<f64>,
    /// (completedMs − firstTokenMs) / (outputTokens − 1); `None` for one-token outputs.
    pub tpot_ms: Option<f64>,
    /// completedMs − arrivalMs.
    pub e2e_ms: f64,
    /// Output tokens (or chunks) of the row.
    pub output_tokens: u64,
    /// The largest of the row's `gapsMs`; `None` without gaps (absent or
    /// empty), so the stall gate does not apply (docs/contract.md §10.15).
    pub max_gap_ms: Option<f64>,
    /// firstAnswerMs − arrivalMs; `None` when the row has no first answer
    /// token (docs/contract.md §10.16).
    pub ttfa_ms: Option<f64>,
}

/// The metrics a completed row missed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MissSet {
    /// TTFT above its gate.
    pub ttft: bool,
    /// TPOT above its gate.
    pub tpot: bool,
    /// E2E above its gate.
    pub e2e: bool,
    /// The largest gap between token-carrying events above the stall gate.
    pub stall: bool,
    /// Time to first answer above its gate.
    pub ttfa: bool,
    /// A TTFA gate, and no answer token at all (the whole output budget
    /// went to reasoning).
    pub no_answer: bool,
}

impl MissSet {
    /// Whether any metric was missed.
    pub fn any(self) -> bool {
        self.ttft || self.tpot || self.e2e || self.stall || self.ttfa || self.no_answer
    }

    /// The missed metrics, in the order `ttft`, `tpot`, `e2e`, `stall`,
    /// `ttfa`, `no_answer` (the later gates after the earlier ones, so a
    /// row's listing never changes for a trace without them).
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        [
            (self.ttft, "ttft"),
            (self.tpot, "tpot"),
            (self.e2e, "e2e"),
            (self.stall, "stall"),
            (self.ttfa, "ttfa"),
            (self.no_answer, "no_answer"),
        ]
        .into_iter()
        .filter_map(|(hit, name)| hit.then_some(name))
    }
}

/// The largest gap of a row's `gapsMs`, when it has at least one.
pub fn max_gap(row: &RawRow) -> Option<f64> {
    row.gaps_ms
        .get()
        .and_then(|gaps| gaps.iter().copied().reduce(f64::max))
}

/// The verdict of one row.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Verdict {
    /// Kept out of the pass count and the denominator, with every reason.
    Invalid(InvalidSet),
    /// Valid, but not in the cohort.
    Excluded(Exclusion),
    /// In the cohort, with no final outcome by the horizon.
    Censored {
        /// What was unfinished.
        cause: Censor,
        /// Already certain at the horizon to miss a TTFT or E2E gate (docs/contract.md §6.3).
        known_late: bool,
    },
    /// In the cohort, failed; the failure reason is interned in the trace.
    Failed {
        /// Interned failure reason (see [`Trace::strings`]).
        reason: u32,
    },
    /// Completed, and met every applicable gate.
    Pass(Measured),
    /// Completed, and missed at least one gate.
    Miss(Measured, MissSet),
}

impl Verdict {
    /// The verdict's name in receipts.
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Invalid(_) => "invalid",
            Verdict::Excluded(_) => "excluded",
            Verdict::Censored { .. } => "censored",
            Verdict::Failed { .. } => "failed",
            Verdict::Pass(_) => "pass",
            Verdict::Miss(..) => "miss",
        }
    }

    /// The latency figures, for completed cohort rows (pass or miss).
    pub fn measured(&self) -> Option<&Measured> {
        match self {
            Verdict::Pass(m) | Verdict::Miss(m, _) => Some(m),
            _ => None,
        }
    }
}

/// A row's verdict and the class it counts under (`None`: unresolved, so it
/// appears only under `all`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judgement {
    /// Index into `Contract::classes`, when the row's class resolves.
    pub class: Option<usize>,
    /// The verdict.
    pub verdict: Verdict,
}

/// Which gates a completed row missed under `equality`. A one-token output has
/// no TPOT, so the TPOT gate does not apply to it (never a pass by
/// arithmetic); a row without gaps is likewise not judged on the stall gate.
/// A row without an answer token cannot meet a TTFA gate: it misses it as
/// `no_answer` (never `ttfa`, so the two causes stay apart).
pub fn missed(m: &Measured, gates: &Gates, equality: Equality) -> MissSet {
    let fails = |value: Option<f64>, gate: Option<f64>| match (value, gate) {
        (Some(v), Some(g)) => !equality.meets(v, g),
        _ => false,
    };
    MissSet {
        ttft: fails(m.ttft_ms, gates.ttft_ms),
        tpot: fails(m.tpot_ms, gates.tpot_ms),
        e2e: fails(Some(m.e2e_ms), gates.e2e_ms),
        stall: fails(m.max_gap_ms, gates.stall_ms),
        ttfa: fails(m.ttfa_ms, gates.ttfa_ms),
        no_answer: gates.ttfa_ms.is_some() && m.ttfa_ms.is_none(),
    }
}

/// Judges every row of a validated trace, in row order.
///
/// Duplicate ids need every row, everything else needs only its own row, so
/// the duplicate scan runs on a second thread while the rows are judged; the
/// few rows that share an id are then re-marked invalid with every reason.
pub fn judge_trace(trace: &Trace) -> Vec<Judgement> {
    let contract = &trace.contract;
    // Interned string → declared class index, computed once.
    let class_of_string: Vec<Option<usize>> = (0..trace.strings.len())
        .map(|ix| contract.class_index(trace.strings.resolve(ix as u32)))
        .collect();
    let implicit = contract.implicit_class();
    let gates: Vec<&Gates> = contract.classes.values().collect();
    let judge = |row: &RawRow, duplicate: bool| -> Judgement {
        let mut invalid = row_reasons(row, &trace.strings, contract.streamed);
        if duplicate {
            invalid.insert(InvalidReason::DuplicateId);
        }
        let class = if row.not_object {
            None
        } else {
            match row.class {
                Slot::Set(ix) => {
                    let class = class_of_string.get(ix as usize).copied().flatten();
                    if class.is_none() {
                        invalid.insert(InvalidReason::UnknownClass);
                    }
                    class
                }
                Slot::Bad => None,
                Slot::Absent => implicit,
            }
        };
        let verdict = match class.and_then(|c| gates.get(c)) {
            Some(gates) if invalid.is_empty() => judge_valid_row(row, gates, contract),
            _ => {
                if invalid.is_empty() {
                    // Unreachable for a validated trace (a row without a
                    // resolvable class rejects the document), but never a pass.
                    invalid.insert(InvalidReason::UnknownClass);
                }
                Verdict::Invalid(invalid)
            }
        };
        Judgement { class, verdict }
    };
    let (duplicates, mut judgements) = std::thread::scope(|scope| {
        let scan = scope.spawn(|| duplicate_ids(&trace.rows));
        let judged: Vec<Judgement> = trace.rows.iter().map(|row| judge(row, false)).collect();
        let duplicates = scan
            .join()
            .unwrap_or_else(|payload| std::panic::resume_unwind(payload));
        (duplicates, judged)
    });
    for (i, duplicate) in duplicates.into_iter().enumerate() {
        if duplicate {
            judgements[i] = judge(&trace.rows[i], true);
        }
    }
    judgements
}

/// The verdict of a row already known to be valid, in the class with `gates`.
pub fn judge_valid_row(row: &RawRow, gates: &Gates, contract: &Contract) -> Verdict {
    let arrival = row.arrival_ms.value().unwrap_or(f64::NAN);
    if let Some(w) = &contract.warmup {
        if w.contains(arrival) {
            return Verdict::Excluded(Exclusion::Warmup);
        }
    }
    if !(contract.start_ms <= arrival && arrival < contract.end_ms) {
        return Verdict::Excluded(Exclusion::OutsideWindow);
    }
    let horizon = contract.horizon_ms;
    let first = row.first_token_ms.value();
    let censor = match row.status {
        Slot::Set(RawStatus::InFlight) => Some(Censor::InFlight),
        Slot::Set(RawStatus::Completed)
            if row.completed_ms.value().is_some_and(|c| c > horizon) =>
        {
            Some(Censor::CompletedAfterHorizon)
        }
        Slot::Set(RawStatus::Failed) if row.ended_ms.value().is_some_and(|e| e > horizon) => {
            Some(Censor::FailedAfterHorizon)
        }
        _ => None,
    };
    if let Some(cause) = censor {
        let seen = |instant: Option<f64>| match instant {
            Some(f) => FirstToken::Seen(f),
            None if first_token_unknown(row) => FirstToken::Unknown,
            None => FirstToken::None,
        };
        let late = |token: FirstToken, gate: Option<f64>| {
            late_before(arrival, token, horizon, gate, contract.equality)
        };
        let elapsed = horizon - arrival;
        let known_late = late(seen(first), gates.ttft_ms)
            || late(seen(row.first_answer_ms.value()), gates.ttfa_ms)
            || gates.e2e_ms.is_some_and(|g| elapsed >= g);
        return Verdict::Censored { cause, known_late };
    }
    match (row.status, row.reason) {
        (Slot::Set(RawStatus::Failed), Slot::Set(reason)) => Verdict::Failed { reason },
        _ => {
            // Valid completed rows have their completion, and (streamed)
            // their first token and tokens (checked by row_reasons).
            let completed = row.completed_ms.value().unwrap_or(f64::NAN);
            let tokens = row.output_tokens.value().unwrap_or(0.0) as u64;
            let measured = Measured {
                ttft_ms: first.map(|f| f - arrival),
                tpot_ms: first
                    .filter(|_| tokens > 1)
                    .map(|f| (completed - f) / (tokens - 1) as f64),
                e2e_ms: completed - arrival,
                output_tokens: tokens,
                max_gap_ms: max_gap(row),
                ttfa_ms: row.first_answer_ms.value().map(|a| a - arrival),
            };
            let miss = missed(&measured, gates, contract.equality);
            if miss.any() {
                Verdict::Miss(measured, miss)
            } else {
                Verdict::Pass(measured)
            }
        }
    }
}

/// What a censored row says about its first token.
#[derive(Clone, Copy, Debug, PartialEq)]
enum FirstToken {
    /// `firstTokenMs` is present.
    Seen(f64),
    /// Absent: none came by the horizon.
    None,
    /// Absent, and the row says it is unknown whether one came
    /// ([`FIRST_TOKEN_UNKNOWN`]).
    Unknown,
}

/// Whether a censored row is already certain, at the horizon, to miss the
/// gate on a first instant — its first token (TTFT) or its first answer
/// token (TTFA) — (docs/contract.md §6.3, §10.16).
///
/// An instant seen by the horizon gives a final value, judged under the
/// declared equality rule. Otherwise the final value is strictly greater than
/// the elapsed `horizon − arrival` (the row was unfinished), so an elapsed time
/// at or past the gate is late under either rule. A row whose first token is
/// unknown gives no evidence on either instant (it may have come at any
/// moment after the arrival). The caller adds E2E, which is late whenever
/// the elapsed time reached its gate; TPOT is never judged at the horizon.
fn late_before(
    arrival: f64,
    instant: FirstToken,
    horizon: f64,
    gate: Option<f64>,
    equality: Equality,
) -> bool {
    let Some(gate) = gate else { return false };
    match instant {
        FirstToken::Seen(f) if f <= horizon => !equality.meets(f - arrival, gate),
        FirstToken::Unknown => false,
        FirstToken::Seen(_) | FirstToken::None => horizon - arrival >= gate,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::{analyze_bytes, AnalyzeOptions};

    /// Window [0, 2000), horizon 2000; gates TTFT 500, E2E 1500; every row
    /// in flight at the horizon. By hand (elapsed = 2000 − arrival):
    /// - a: arrival 0, no first token: TTFT > 2000 ≥ 500 → late;
    /// - b: arrival 0, first token unknown: TTFT not judged, but E2E > 2000
    ///   ≥ 1500 → late;
    /// - c: arrival 1000, first token unknown: TTFT not judged, E2E > 1000 <
    ///   1500 → not late (unmarked, as d, it would be late on TTFT);
    /// - d: arrival 1000, no first token: TTFT > 1000 ≥ 500 → late;
    /// - e: arrival 1000, marked but with a first token at 1800: the seen
    ///   first token is final, TTFT 800 > 500 → late;
    /// - f, g: arrival 1000, the label `"yes"` or `false` is not the
    ///   marker: as d, late.
    ///
    /// knownLate 6 of 7 (the old rule: 7, c included).
    #[test]
    fn a_row_whose_first_token_is_unknown_is_never_late_on_ttft_but_still_on_e2e() {
        let trace = br#"{
          "schema": "goodput-trace/1",
          "window": {"startMs": 0, "endMs": 2000, "horizonMs": 2000},
          "equality": "inclusive",
          "classes": {"chat": {"ttftMs": 500, "tpotMs": null, "e2eMs": 1500}},
          "rows": [
            {"id": "a", "arrivalMs": 0, "status": "in_flight"},
            {"id": "b", "arrivalMs": 0, "status": "in_flight", "labels": {"firstTokenUnknown": true}},
            {"id": "c", "arrivalMs": 1000, "status": "in_flight", "labels": {"firstTokenUnknown": true, "promptChars": 3}},
            {"id": "d", "arrivalMs": 1000, "status": "in_flight"},
            {"id": "e", "arrivalMs": 1000, "status": "in_flight", "firstTokenMs": 1800, "labels": {"firstTokenUnknown": true}},
            {"id": "f", "arrivalMs": 1000, "status": "in_flight", "labels": {"firstTokenUnknown": "yes"}},
            {"id": "g", "arrivalMs": 1000, "status": "in_flight", "labels": {"firstTokenUnknown": false}}
          ]
        }"#;
        let analysis = analyze_bytes(trace, AnalyzeOptions::default()).expect("a valid trace");
        let late: Vec<bool> = analysis
            .judgements
            .iter()
            .map(|j| match j.verdict {
                Verdict::Censored { known_late, .. } => known_late,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(late, [true, true, false, true, true, true, true]);
        let censored = &analysis.receipt.results.all.reasons.censored;
        assert_eq!((censored.in_flight, censored.known_late), (7, 6));
    }

    #[test]
    fn the_marker_is_found_among_other_labels_only_when_it_is_true() {
        let row = |labels: &[(&str, Scalar)]| RawRow {
            labels: Slot::Set(
                labels
                    .iter()
                    .map(|(k, v)| (Box::<str>::from(*k), v.clone()))
                    .collect(),
            ),
            ..RawRow::default()
        };
        assert!(first_token_unknown(&row(&[
            ("a", Scalar::Number(1.0)),
            (FIRST_TOKEN_UNKNOWN, Scalar::Bool(true)),
            ("z", Scalar::Bool(false)),
        ])));
        assert!(!first_token_unknown(&row(&[(
            FIRST_TOKEN_UNKNOWN,
            Scalar::Number(1.0)
        )])));
        assert!(!first_token_unknown(&row(&[])));
        assert!(!first_token_unknown(&RawRow::default()));
    }
}
