//! The admission gate: a receipt in, yes or no out, for CI.
//!
//! The criteria are checked against one block of the receipt (all rows, or
//! one class): goodput/s must *exceed* the required rate × (1 + margin); the
//! failure and censored shares must be at or below their ceilings; every tail
//! limit given must hold (p95 at or below the limit). A figure that cannot be
//! measured (a share of an empty cohort, a percentile of no completed rows)
//! fails its criterion: no evidence is never an admission.

use serde::Serialize;

use crate::receipt::{Block, Receipt};

/// Default ceiling of the failure share when `--max-failure-share` is not given.
pub const DEFAULT_MAX_FAILURE_SHARE: f64 = 0.05;
/// Default ceiling of the censored share when `--max-censored-share` is not given.
pub const DEFAULT_MAX_CENSORED_SHARE: f64 = 0.05;

/// What the run must show to be admitted.
#[derive(Clone, Debug, PartialEq)]
pub struct Criteria {
    /// Required goodput, requests per window second.
    pub min_goodput_per_s: f64,
    /// Safety margin: goodput must exceed `min × (1 + margin)`.
    pub margin: f64,
    /// Most failed / cohort allowed.
    pub max_failure_share: f64,
    /// Most censored / cohort allowed.
    pub max_censored_share: f64,
    /// Most p95 TTFT allowed, ms.
    pub max_p95_ttft_ms: Option<f64>,
    /// Most p95 E2E allowed, ms.
    pub max_p95_e2e_ms: Option<f64>,
    /// Judge this class's block instead of all rows.
    pub class: Option<String>,
    /// Most p95 TPOT allowed, ms (a release criterion: `release_gate`).
    pub max_p95_tpot_ms: Option<f64>,
    /// Most recovery time after the burst allowed, s (a release criterion).
    pub max_recovery_s: Option<f64>,
    /// Limits of several classes in one run (release criteria, `--class-limits`).
    pub class_limits: Vec<super::release_gate::ClassLimits>,
}

/// Why the criteria cannot be applied (a usage error, exit status 2).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GateError {
    /// A flag out of range.
    #[error("{flag}: {value} is not allowed ({rule})")]
    BadFlag {
        /// The flag.
        flag: &'static str,
        /// Its value.
        value: f64,
        /// What it must be.
        rule: &'static str,
    },
    /// `--class` names no class of the receipt.
    #[error("--class: {name:?} is not a class of this trace (classes: {known})")]
    UnknownClass {
        /// The name given.
        name: String,
        /// The declared classes.
        known: String,
    },
}

impl Criteria {
    /// Checks every flag's range.
    pub fn check(&self) -> Result<(), GateError> {
        let bad = |flag, value: f64, rule| Err(GateError::BadFlag { flag, value, rule });
        let non_negative = |x: f64| x.is_finite() && x >= 0.0;
        let share = |x: f64| non_negative(x) && x <= 1.0;
        if !non_negative(self.min_goodput_per_s) {
            return bad(
                "--min-goodput",
                self.min_goodput_per_s,
                "a finite rate >= 0",
            );
        }
        if !non_negative(self.margin) {
            return bad("--margin", self.margin, "a finite fraction >= 0, e.g. 0.2");
        }
        if !share(self.max_failure_share) {
            return bad(
                "--max-failure-share",
                self.max_failure_share,
                "a share in [0, 1]",
            );
        }
        if !share(self.max_censored_share) {
            return bad(
                "--max-censored-share",
                self.max_censored_share,
                "a share in [0, 1]",
            );
        }
        for (flag, v) in [
            ("--max-p95-ttft-ms", self.max_p95_ttft_ms),
            ("--max-p95-e2e-ms", self.max_p95_e2e_ms),
        ] {
            if let Some(v) = v.filter(|v| !non_negative(*v)) {
                return bad(flag, v, "a finite number of ms >= 0");
            }
        }
        super::release_gate::check_release_flags(self)
    }
}

/// One criterion's line.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    /// What is measured, e.g. `goodput/s`.
    pub name: &'static str,
    /// The measured value (null: not measurable, which fails).
    pub measured: Option<f64>,
    /// `>` or `<=`.
    pub comparison: &'static str,
    /// The limit.
    pub limit: f64,
    /// How the limit was derived, when it is not given directly.
    pub derivation: Option<String>,
    /// Whether the criterion holds.
    pub pass: bool,
    /// The class a `--class-limits` criterion judges (absent: the decision's scope).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Where a release criterion's figure comes from, or why it is missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The admission decision.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Decision {
    /// The class judged, or null for all rows.
    pub class: Option<String>,
    /// The trace the receipt was made from.
    pub trace_sha256: String,
    /// One line per criterion.
    pub checks: Vec<Check>,
    /// Every criterion holds.
    pub admit: bool,
    /// The receipt's `contract.arrivalsUnknown`, when its trace declares its
    /// arrival instants unknown (no criterion here needs them; said anyway).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrivals_unknown: Option<String>,
    /// One diagnosis per class that lost requests (a reading of the counts, not a criterion).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub diagnosis: Vec<super::diagnosis::ClassDiagnosis>,
}

/// Applies `criteria` to `receipt`.
pub fn decide(receipt: &Receipt, criteria: &Criteria) -> Result<Decision, GateError> {
    criteria.check()?;
    let block: &Block = match &criteria.class {
        None => &receipt.results.all,
        Some(name) => receipt
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
            })?,
    };
    let at_most = |name, measured: Option<f64>, limit: f64| Check {
        name,
        measured,
        comparison: "<=",
        limit,
        derivation: None,
        pass: measured.is_some_and(|m| m <= limit),
        class: None,
        note: None,
    };
    let required = criteria.min_goodput_per_s * (1.0 + criteria.margin);
    let goodput = block.rates.goodput_per_s;
    let mut checks = vec![
        Check {
            name: "goodput/s",
            measured: Some(goodput),
            comparison: ">",
            limit: required,
            derivation: (criteria.margin != 0.0)
                .then(|| format!("{} × (1 + {})", criteria.min_goodput_per_s, criteria.margin)),
            pass: goodput > required,
            class: None,
            note: None,
        },
        at_most(
            "failure share",
            block.rates.failure_share,
            criteria.max_failure_share,
        ),
        at_most(
            "censored share",
            block.rates.censored_share,
            criteria.max_censored_share,
        ),
    ];
    if let Some(limit) = criteria.max_p95_ttft_ms {
        checks.push(at_most("p95 ttft ms", block.latency.ttft_ms.p95, limit));
    }
    if let Some(limit) = criteria.max_p95_e2e_ms {
        checks.push(at_most("p95 e2e ms", block.latency.e2e_ms.p95, limit));
    }
    checks.extend(super::release_gate::release_checks(
        receipt, block, criteria,
    ));
    checks.extend(super::release_gate::class_limit_checks(receipt, criteria)?);
    Ok(Decision {
        class: criteria.class.clone(),
        trace_sha256: receipt.trace.sha256.clone(),
        admit: checks.iter().all(|c| c.pass),
        checks,
        arrivals_unknown: receipt.contract.arrivals_unknown.clone(),
        diagnosis: super::diagnosis::diagnose(receipt),
    })
}
