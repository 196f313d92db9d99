//! The admission gate: a receipt in, yes or no out, for CI.
//!
//! The criteria are checked against one block of the receipt (all rows, or
//! one class): goodput/s must *exceed* the required rate × (1 + margin); the
//! failure and censored shares must be at or below their ceilings; every tail
//! limit given must hold (p95 at or below the limit). A figure that cannot be
//! measured (a share of an empty cohort, a percentile of no completed rows)
//! fails its criterion: no evidence is never an admission. A closed-loop run
//! is refused unless closed-loop evidence is allowed explicitly
//! (docs/contract.md §10.2), and so is a run the receipt calls overloaded
//! (its `saturation.verdict`, §10.3), unless overload is allowed explicitly:
//! goodput counted with a long grace period can exceed what the server
//! sustains, so a goodput figure alone must not admit it.
//!
//! The criteria are decimals as written and every comparison is exact
//! ([`crate::review::exact`], docs/contract.md §9.2): a goodput equal to the
//! requirement refuses whatever binary rounding would have said.

use schemars::JsonSchema;
use serde::Serialize;

use crate::receipt::{Block, Receipt, SaturationVerdict};
use crate::trace::ArrivalMode;

use crate::review::exact;

pub use crate::review::criteria::{
    Check, Criteria, GateError, DEFAULT_MAX_CENSORED_SHARE, DEFAULT_MAX_FAILURE_SHARE,
};

/// The arrival-mode criterion: the run must be open-loop, unless closed-loop
/// evidence is allowed explicitly.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArrivalCheck {
    /// The mode the receipt judged.
    pub mode: ArrivalMode,
    /// Whether closed-loop evidence was allowed (`--allow-closed-loop`).
    pub closed_loop_allowed: bool,
    /// The cap on requests in flight of a capped open loop (§10.2), when
    /// the run was one: open-loop evidence, its latencies including the
    /// wait for a slot. Absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<f64>,
    /// Whether the criterion holds.
    pub pass: bool,
}

/// The overload criterion: the judged block's saturation verdict must not be
/// `overloaded`, unless overload is allowed explicitly.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverloadCheck {
    /// The judged block's `saturation.verdict`.
    pub verdict: SaturationVerdict,
    /// Whether an overloaded run was allowed (`--allow-overload`).
    pub overload_allowed: bool,
    /// Whether the criterion holds.
    pub pass: bool,
}

/// The admission decision.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// The class judged, or null for all rows.
    pub class: Option<String>,
    /// The trace the receipt was made from.
    pub trace_sha256: String,
    /// One line per numeric criterion.
    pub checks: Vec<Check>,
    /// The arrival-mode criterion.
    pub arrival: ArrivalCheck,
    /// The overload criterion.
    pub overload: OverloadCheck,
    /// Every criterion holds (the numeric ones, the arrival mode and the overload).
    pub admit: bool,
    /// The receipt's `contract.arrivalsUnknown`, when its trace declares its
    /// arrival instants unknown (no criterion here needs them; said anyway).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals_unknown: Option<String>,
    /// One diagnosis per class that lost requests (a reading of the counts, not a criterion).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnosis: Vec<crate::review::diagnosis::ClassDiagnosis>,
}

/// Applies `criteria` to `receipt`.
pub fn decide(receipt: &Receipt, criteria: &Criteria) -> Result<Decision, GateError> {
    criteria.check()?;
    let block = judged_block(receipt, criteria)?;
    let mut checks = block_checks(receipt, block, criteria);
    checks.extend(crate::review::gap_gate::gap_checks(block, &criteria.gaps));
    checks.extend(crate::review::energy_gate::energy_checks(
        receipt,
        &criteria.energy,
    ));
    let mode = receipt.contract.arrival_mode;
    let arrival = ArrivalCheck {
        mode,
        closed_loop_allowed: criteria.allow_closed_loop,
        max_concurrency: (mode == ArrivalMode::OpenLoop)
            .then(|| crate::trace::concurrency_cap(&receipt.contract.workload))
            .flatten(),
        pass: mode == ArrivalMode::OpenLoop || criteria.allow_closed_loop,
    };
    let verdict = block.saturation.verdict;
    let overload = OverloadCheck {
        verdict,
        overload_allowed: criteria.allow_overload,
        pass: verdict != SaturationVerdict::Overloaded || criteria.allow_overload,
    };
    checks.extend(crate::review::release_gate::release_checks(
        receipt, block, criteria,
    ));
    checks.extend(crate::review::release_gate::class_limit_checks(
        receipt, criteria,
    )?);
    Ok(Decision {
        class: criteria.class.clone(),
        trace_sha256: receipt.trace.sha256.clone(),
        admit: checks.iter().all(|c| c.pass) && arrival.pass && overload.pass,
        checks,
        arrival,
        overload,
        arrivals_unknown: receipt.contract.arrivals_unknown.clone(),
        diagnosis: crate::review::diagnosis::diagnose(receipt),
    })
}

impl Decision {
    /// Adds a criterion decided outside the receipt (the quality share of
    /// `gate --min-quality`, judged from the sidecar beside the trace): its
    /// line joins the others and a failing one refuses.
    pub fn add_check(&mut self, check: Check) {
        self.admit &= check.pass;
        self.checks.push(check);
    }
}

/// The block the criteria are checked against: all rows, or the named class.
fn judged_block<'r>(receipt: &'r Receipt, criteria: &Criteria) -> Result<&'r Block, GateError> {
    let Some(name) = &criteria.class else {
        return Ok(&receipt.results.all);
    };
    receipt
        .results
        .classes
        .get(name)
        .ok_or_else(|| GateError::UnknownClass {
            name: name.clone(),
            known: receipt
                .results
                .classes
                .keys()
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The block's own criteria: goodput/s, then its tail and share limits (the
/// failure and censored shares, the p95 limits given) through the one
/// evaluation the frontier and the capacity search use too.
fn block_checks(receipt: &Receipt, block: &Block, criteria: &Criteria) -> Vec<Check> {
    let mut checks = vec![goodput_check(receipt, block, criteria)];
    checks.extend(crate::review::limits::limit_checks(
        block,
        &criteria.block_limits(),
    ));
    checks
}

/// Goodput/s must exceed the required rate × (1 + margin), compared exactly.
fn goodput_check(receipt: &Receipt, block: &Block, criteria: &Criteria) -> Check {
    let (min, margin) = (&criteria.min_goodput_per_s, &criteria.margin);
    let window = &receipt.contract.window;
    Check {
        name: "goodput/s",
        measured: Some(block.rates.goodput_per_s),
        comparison: ">",
        limit: exact::nearest_f64(&exact::required_per_s(min, margin)),
        derivation: (!margin.is_zero()).then(|| format!("{min} × (1 + {margin})")),
        pass: exact::goodput_exceeds(
            block.counts.pass,
            window.start_ms,
            window.end_ms,
            min,
            margin,
        ),
        class: None,
        note: None,
    }
}
