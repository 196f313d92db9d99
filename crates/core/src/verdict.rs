//! One verdict per row (docs/contract.md §6), pure: a validated trace in, judgements out.
//!
//! Precedence: `invalid` → `excluded` → (cohort) `censored` → `failed` →
//! `pass` / `miss`. Everything that counts rows — the receipt, the sweep, the
//! mutation check — starts from these judgements, so there is one definition of
//! a verdict in the code base.

use crate::trace::validate::{duplicate_ids, row_reasons};
use crate::trace::{
    Contract, Equality, Gates, InvalidReason, InvalidSet, RawRow, RawStatus, Slot, Trace,
};

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
    /// firstTokenMs − arrivalMs.
    pub ttft_ms: f64,
    /// (completedMs − firstTokenMs) / (outputTokens − 1); `None` for one-token outputs.
    pub tpot_ms: Option<f64>,
    /// completedMs − arrivalMs.
    pub e2e_ms: f64,
    /// Output tokens (or chunks) of the row.
    pub output_tokens: u64,
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
}

impl MissSet {
    /// Whether any metric was missed.
    pub fn any(self) -> bool {
        self.ttft || self.tpot || self.e2e
    }

    /// The missed metrics, in the order `ttft`, `tpot`, `e2e`.
    pub fn names(self) -> impl Iterator<Item = &'static str> {
        [(self.ttft, "ttft"), (self.tpot, "tpot"), (self.e2e, "e2e")]
            .into_iter()
            .filter_map(|(hit, name)| hit.then_some(name))
    }
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
/// no TPOT, so the TPOT gate does not apply to it (never a pass by arithmetic).
pub fn missed(m: &Measured, gates: &Gates, equality: Equality) -> MissSet {
    let fails = |value: Option<f64>, gate: Option<f64>| match (value, gate) {
        (Some(v), Some(g)) => !equality.meets(v, g),
        _ => false,
    };
    MissSet {
        ttft: fails(Some(m.ttft_ms), gates.ttft_ms),
        tpot: fails(m.tpot_ms, gates.tpot_ms),
        e2e: fails(Some(m.e2e_ms), gates.e2e_ms),
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
        let mut invalid = row_reasons(row, &trace.strings);
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
        return Verdict::Censored {
            cause,
            known_late: known_late(arrival, first, horizon, gates, contract.equality),
        };
    }
    match (row.status, row.reason) {
        (Slot::Set(RawStatus::Failed), Slot::Set(reason)) => Verdict::Failed { reason },
        _ => {
            // Valid completed rows have all three fields (checked by row_reasons).
            let first = first.unwrap_or(f64::NAN);
            let completed = row.completed_ms.value().unwrap_or(f64::NAN);
            let tokens = row.output_tokens.value().unwrap_or(0.0) as u64;
            let measured = Measured {
                ttft_ms: first - arrival,
                tpot_ms: (tokens > 1).then(|| (completed - first) / (tokens - 1) as f64),
                e2e_ms: completed - arrival,
                output_tokens: tokens,
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

/// Whether a censored row is already certain, at the horizon, to miss a TTFT
/// or E2E gate (docs/contract.md §6.3).
///
/// A first token seen by the horizon gives a final TTFT, judged under the
/// declared equality rule. Otherwise the final value is strictly greater than
/// the elapsed `horizon − arrival` (the row was unfinished), so an elapsed time
/// at or past the gate is late under either rule — for TTFT without a first
/// token, and always for E2E. TPOT is never judged at the horizon.
fn known_late(
    arrival: f64,
    first_token: Option<f64>,
    horizon: f64,
    gates: &Gates,
    equality: Equality,
) -> bool {
    let elapsed = horizon - arrival;
    let unfinished_late = |gate: Option<f64>| gate.is_some_and(|g| elapsed >= g);
    let ttft_late = match first_token {
        Some(f) if f <= horizon => gates
            .ttft_ms
            .is_some_and(|g| !equality.meets(f - arrival, g)),
        _ => unfinished_late(gates.ttft_ms),
    };
    ttft_late || unfinished_late(gates.e2e_ms)
}
