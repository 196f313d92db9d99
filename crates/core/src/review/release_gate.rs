//! The release criteria of the admission gate, kept apart from its base
//! criteria (`gate`): p95 TPOT, recovery after the burst, and limits for
//! several classes in one run.
//!
//! - `--max-p95-tpot-ms X`: the judged block's nearest-rank p95 TPOT <= X
//!   (a block limit: checked by [`crate::review::limits::limit_checks`]).
//! - `--max-recovery-s S`: the recovery time (`receipt.recovery`) <= S. For
//!   all rows, every class must have recovered and the slowest class counts;
//!   for one class, that class. A receipt without a recovery figure (no burst
//!   phase) or a class that never recovered fails: no evidence of recovery is
//!   never an admission. The tolerance (`--recovery-tolerance`) is the
//!   receipt's and is named in the check's note.
//! - `--class-limits CLASS:KEY=V,…` (repeatable): the same criteria applied to
//!   that class's block, each check labelled with its class. Keys: `goodput`
//!   (req/s, must be exceeded × (1 + margin)), `failure-share`,
//!   `censored-share`, `ttft`, `tpot`, `e2e` (p95 ms), `recovery` (s).

use crate::receipt::{Block, Receipt};

pub use crate::review::criteria::{parse_class_limits, ClassLimits, ClassLimitsError};
use crate::review::criteria::{Check, Criteria, GateError};
use crate::review::exact::{self, Decimal};

fn at_most(name: &'static str, class: Option<&str>, measured: Option<f64>, limit: f64) -> Check {
    Check {
        name,
        measured,
        comparison: "<=",
        limit,
        derivation: None,
        pass: measured.is_some_and(|m| m <= limit),
        class: class.map(str::to_owned),
        note: None,
    }
}

/// The recovery time of one class (`Some`) or the slowest class (`None`),
/// with how it was found; the time is `None` when there is none to judge.
pub fn recovery_measure(receipt: &Receipt, class: Option<&str>) -> (Option<f64>, String) {
    let Some(r) = &receipt.recovery else {
        return (
            None,
            "no recovery figure: the trace declares no burst phase (see --burst-phase)".to_owned(),
        );
    };
    let pick: Vec<(&String, &crate::receipt::recovery::ClassRecovery)> = match class {
        Some(name) => r
            .classes
            .iter()
            .filter(|(k, _)| k.as_str() == name)
            .collect(),
        None => r.classes.iter().collect(),
    };
    if let Some((name, c)) = pick.iter().find(|(_, c)| c.recovery_s.is_none()) {
        let why = c.reason.as_deref().unwrap_or("no reason recorded");
        return (None, format!("{name}: {why}"));
    }
    match pick
        .iter()
        .filter_map(|(name, c)| c.recovery_s.map(|s| (name, s)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
    {
        Some((name, s)) => (
            Some(s),
            format!(
                "after phase {:?}, tolerance {} miss{}; slowest class {name}",
                r.burst_phase,
                r.tolerance,
                if r.tolerance == 1 { "" } else { "es" }
            ),
        ),
        None => (None, "no class to judge".to_owned()),
    }
}

fn recovery_check(
    receipt: &Receipt,
    class: Option<&str>,
    limit: f64,
    label: Option<&str>,
) -> Check {
    let (measured, how) = recovery_measure(receipt, class);
    Check {
        note: Some(how),
        ..at_most("recovery s", label, measured, limit)
    }
}

/// The release criteria of the base scope (all rows, or `--class`): the
/// recovery time. (`--max-p95-tpot-ms` is a limit on the judged block,
/// checked with the other tails by [`crate::review::limits::limit_checks`].)
pub fn release_checks(receipt: &Receipt, _block: &Block, criteria: &Criteria) -> Vec<Check> {
    let mut checks = Vec::new();
    if let Some(limit) = criteria.max_recovery_s {
        checks.push(recovery_check(
            receipt,
            criteria.class.as_deref(),
            limit,
            None,
        ));
    }
    checks
}

/// Checks every `--class-limits` against its class's block.
pub fn class_limit_checks(receipt: &Receipt, criteria: &Criteria) -> Result<Vec<Check>, GateError> {
    let mut checks = Vec::new();
    for limits in &criteria.class_limits {
        let name = limits.class.as_str();
        let block = receipt
            .results
            .classes
            .get(name)
            .ok_or_else(|| GateError::UnknownClass {
                name: name.to_owned(),
                known: receipt
                    .results
                    .classes
                    .keys()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let c = Some(name);
        if let Some(min) = limits.min_goodput_per_s {
            checks.push(class_goodput_check(receipt, block, criteria, name, min));
        }
        checks.extend(class_ceiling_checks(block, limits, name));
        if let Some(limit) = limits.max_recovery_s {
            checks.push(recovery_check(receipt, c, limit, c));
        }
    }
    Ok(checks)
}

/// A class's goodput/s against its `goodput` limit × (1 + margin). Exactly,
/// as the base criterion (docs/contract.md §9.2): the class's rate as
/// written, times (1 + margin), against the count.
fn class_goodput_check(
    receipt: &Receipt,
    block: &Block,
    criteria: &Criteria,
    class: &str,
    min: f64,
) -> Check {
    let margin = &criteria.margin;
    let goodput = block.rates.goodput_per_s;
    let (limit, pass) = match Decimal::from_f64_shortest(min) {
        Some(min) => {
            let window = &receipt.contract.window;
            (
                exact::nearest_f64(&exact::required_per_s(&min, margin)),
                exact::goodput_exceeds(
                    block.counts.pass,
                    window.start_ms,
                    window.end_ms,
                    &min,
                    margin,
                ),
            )
        }
        None => {
            let required = min * (1.0 + margin.to_f64());
            (required, goodput > required)
        }
    };
    Check {
        name: "goodput/s",
        measured: Some(goodput),
        comparison: ">",
        limit,
        derivation: (!margin.is_zero()).then(|| format!("{min} × (1 + {margin})")),
        pass,
        class: Some(class.to_owned()),
        note: None,
    }
}

/// A class's share ceilings and p95 limits, those given, in a fixed order.
fn class_ceiling_checks(block: &Block, limits: &ClassLimits, class: &str) -> Vec<Check> {
    let lat = &block.latency;
    let mut checks = Vec::new();
    for (name, measured, limit) in [
        (
            "failure share",
            block.rates.failure_share,
            limits.max_failure_share,
        ),
        (
            "censored share",
            block.rates.censored_share,
            limits.max_censored_share,
        ),
        ("p95 ttft ms", lat.ttft_ms.p95, limits.max_p95_ttft_ms),
        ("p95 tpot ms", lat.tpot_ms.p95, limits.max_p95_tpot_ms),
        ("p95 e2e ms", lat.e2e_ms.p95, limits.max_p95_e2e_ms),
    ] {
        if let Some(limit) = limit {
            let mut check = at_most(name, Some(class), measured, limit);
            // A share compares its counts with the ceiling exactly.
            let part = match name {
                "failure share" => Some(block.counts.failed),
                "censored share" => Some(block.counts.censored),
                _ => None,
            };
            if let (Some(part), Some(ceiling)) = (part, Decimal::from_f64_shortest(limit)) {
                check.pass = exact::share_at_most(part, block.counts.cohort, &ceiling);
            }
            checks.push(check);
        }
    }
    checks
}
