//! The gate's energy criterion (docs/contract.md §10.18): joules per good
//! request at or below a limit. A receipt without an `energy` block fails
//! it: no power readings is never an admission.

use crate::receipt::Receipt;
use crate::review::check::Check;

/// The energy limit given to the gate (optional).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct EnergyLimits {
    /// Most the joules per good request may be (`--max-joules-per-good-request`).
    pub max_joules_per_good_request: Option<f64>,
}

/// One check line when the limit is given.
pub fn energy_checks(receipt: &Receipt, limits: &EnergyLimits) -> Vec<Check> {
    let Some(limit) = limits.max_joules_per_good_request else {
        return Vec::new();
    };
    let energy = receipt.energy.as_ref();
    let measured = energy.and_then(|e| e.joules_per_good_request);
    let note = match energy {
        None => Some(
            "no power readings: record with --metrics pointing at a power exporter (e.g. \
             DCGM's DCGM_FI_DEV_POWER_USAGE) and keep its sidecar beside the trace"
                .to_owned(),
        ),
        Some(e) if e.joules_per_good_request.is_none() => {
            Some("no request passed every gate: there is no good request to divide by".to_owned())
        }
        Some(e) => e.note.clone(),
    };
    vec![Check {
        name: "joules per good request",
        measured,
        comparison: "<=",
        limit,
        derivation: None,
        pass: measured.is_some_and(|m| m <= limit),
        class: None,
        note,
    }]
}

/// Whether the limit is a finite number ≥ 0; the flag's name otherwise.
pub fn bad_limit(limits: &EnergyLimits) -> Option<(&'static str, f64)> {
    limits
        .max_joules_per_good_request
        .filter(|v| !(v.is_finite() && *v >= 0.0))
        .map(|v| ("--max-joules-per-good-request", v))
}
