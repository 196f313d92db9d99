//! The gate's stall criteria (docs/contract.md §10.15): the largest gap
//! between token-carrying events of the judged block, and the p99 of its
//! pooled gaps, each at or below a limit. A block with no gaps has no
//! evidence, and no evidence is never an admission: the criterion fails.

use crate::receipt::Block;
use crate::review::check::Check;

/// The stall limits given to the gate (both optional).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GapLimits {
    /// Most the largest gap of any judged row may be, ms (`--max-stall-ms`).
    pub max_stall_ms: Option<f64>,
    /// Most the p99 of the pooled gaps may be, ms (`--max-p99-gap-ms`).
    pub max_p99_gap_ms: Option<f64>,
}

/// One check line per limit given, against `block`'s `gaps`.
pub fn gap_checks(block: &Block, limits: &GapLimits) -> Vec<Check> {
    let gaps = block.gaps.as_ref().filter(|g| g.rows > 0);
    let figures = [
        (
            "largest gap ms",
            limits.max_stall_ms,
            gaps.and_then(|g| g.gap_ms.max),
        ),
        (
            "p99 gap ms",
            limits.max_p99_gap_ms,
            gaps.and_then(|g| g.gap_ms.p99),
        ),
    ];
    figures
        .into_iter()
        .filter_map(|(name, limit, measured)| {
            let limit = limit?;
            Some(Check {
                name,
                measured,
                comparison: "<=",
                limit,
                derivation: None,
                pass: measured.is_some_and(|m| m <= limit),
                class: None,
                note: gaps.is_none().then(|| {
                    "no row of the judged block carries gapsMs (record without --no-gaps)"
                        .to_owned()
                }),
            })
        })
        .collect()
}

/// Whether a stall limit is a finite number ≥ 0; the flag's name otherwise.
pub fn bad_limit(limits: &GapLimits) -> Option<(&'static str, f64)> {
    [
        ("--max-stall-ms", limits.max_stall_ms),
        ("--max-p99-gap-ms", limits.max_p99_gap_ms),
    ]
    .into_iter()
    .find_map(|(flag, v)| {
        v.filter(|v| !(v.is_finite() && *v >= 0.0))
            .map(|v| (flag, v))
    })
}
