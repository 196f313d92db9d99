//! The admission gate: a receipt in, yes or no out, for CI.
//!
//! The criteria are checked against one block of the receipt (all rows, or
//! one class): goodput/s must *exceed* the required rate × (1 + margin); the
//! failure and censored shares must be at or below their ceilings; every tail
//! limit given must hold (p95 at or below the limit). A figure that cannot be
//! measured (a share of an empty cohort, a percentile of no completed rows)
//! fails its criterion: no evidence is never an admission. A closed-loop run
//! is refused unless closed-loop evidence is allowed explicitly
//! (docs/contract.md §10.2).
//!
//! The criteria are decimals as written and every comparison is exact
//! ([`super::exact`], docs/contract.md §9.2): a goodput equal to the
//! requirement refuses whatever binary rounding would have said.

use schemars::JsonSchema;
use serde::Serialize;

use crate::receipt::{Block, Receipt};
use crate::trace::ArrivalMode;

use super::exact::{self, Decimal};

/// Default ceiling of the failure share when `--max-failure-share` is not given.
pub const DEFAULT_MAX_FAILURE_SHARE: &str = "0.05";
/// Default ceiling of the censored share when `--max-censored-share` is not given.
pub const DEFAULT_MAX_CENSORED_SHARE: &str = "0.05";

/// What the run must show to be admitted.
#[derive(Clone, Debug, PartialEq)]
pub struct Criteria {
    /// Required goodput, requests per window second.
    pub min_goodput_per_s: Decimal,
    /// Safety margin: goodput must exceed `min × (1 + margin)`.
    pub margin: Decimal,
    /// Most failed / cohort allowed.
    pub max_failure_share: Decimal,
    /// Most censored / cohort allowed.
    pub max_censored_share: Decimal,
    /// Most p95 TTFT allowed, ms.
    pub max_p95_ttft_ms: Option<Decimal>,
    /// Most p95 E2E allowed, ms.
    pub max_p95_e2e_ms: Option<Decimal>,
    /// Judge this class's block instead of all rows.
    pub class: Option<String>,
    /// Most p95 TPOT allowed, ms (a release criterion: `release_gate`).
    pub max_p95_tpot_ms: Option<f64>,
    /// Most recovery time after the burst allowed, s (a release criterion).
    pub max_recovery_s: Option<f64>,
    /// Limits of several classes in one run (release criteria, `--class-limits`).
    pub class_limits: Vec<super::release_gate::ClassLimits>,
    /// Admit a closed-loop run (its latencies are then taken as evidence anyway).
    pub allow_closed_loop: bool,
}

/// Why the criteria cannot be applied (a usage error, exit status 2).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum GateError {
    /// A flag out of range.
    #[error("{flag}: {value} is not allowed ({rule})")]
    BadFlag {
        /// The flag.
        flag: &'static str,
        /// Its value, as written.
        value: String,
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
        let bad = |flag, value: &Decimal, rule| {
            Err(GateError::BadFlag {
                flag,
                value: value.to_string(),
                rule,
            })
        };
        let one = Decimal::from_integer(1);
        let share = |x: &Decimal| !x.is_negative() && x.value() <= one.value();
        if self.min_goodput_per_s.is_negative() {
            return bad("--min-goodput", &self.min_goodput_per_s, "a rate >= 0");
        }
        if self.margin.is_negative() {
            return bad("--margin", &self.margin, "a fraction >= 0, e.g. 0.2");
        }
        if !share(&self.max_failure_share) {
            return bad(
                "--max-failure-share",
                &self.max_failure_share,
                "a share in [0, 1]",
            );
        }
        if !share(&self.max_censored_share) {
            return bad(
                "--max-censored-share",
                &self.max_censored_share,
                "a share in [0, 1]",
            );
        }
        for (flag, v) in [
            ("--max-p95-ttft-ms", &self.max_p95_ttft_ms),
            ("--max-p95-e2e-ms", &self.max_p95_e2e_ms),
        ] {
            if let Some(v) = v.as_ref().filter(|v| v.is_negative()) {
                return bad(flag, v, "a number of ms >= 0");
            }
        }
        super::release_gate::check_release_flags(self)
    }
}

/// One criterion's line.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
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

/// The arrival-mode criterion: the run must be open-loop, unless closed-loop
/// evidence is allowed explicitly.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArrivalCheck {
    /// The mode the receipt judged.
    pub mode: ArrivalMode,
    /// Whether closed-loop evidence was allowed (`--allow-closed-loop`).
    pub closed_loop_allowed: bool,
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
    /// Every criterion holds (the numeric ones and the arrival mode).
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
    let share = |name, measured: Option<f64>, part: u64, ceiling: &Decimal| Check {
        name,
        measured,
        comparison: "<=",
        limit: ceiling.to_f64(),
        derivation: None,
        pass: exact::share_at_most(part, block.counts.cohort, ceiling),
        class: None,
        note: None,
    };
    let latency = |name, measured: Option<f64>, limit: &Decimal| Check {
        name,
        measured,
        comparison: "<=",
        limit: limit.to_f64(),
        derivation: None,
        pass: measured.is_some_and(|m| exact::latency_at_most(m, limit)),
        class: None,
        note: None,
    };
    let (min, margin) = (&criteria.min_goodput_per_s, &criteria.margin);
    let window = &receipt.contract.window;
    let mut checks = vec![
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
        },
        share(
            "failure share",
            block.rates.failure_share,
            block.counts.failed,
            &criteria.max_failure_share,
        ),
        share(
            "censored share",
            block.rates.censored_share,
            block.counts.censored,
            &criteria.max_censored_share,
        ),
    ];
    if let Some(limit) = &criteria.max_p95_ttft_ms {
        checks.push(latency("p95 ttft ms", block.latency.ttft_ms.p95, limit));
    }
    if let Some(limit) = &criteria.max_p95_e2e_ms {
        checks.push(latency("p95 e2e ms", block.latency.e2e_ms.p95, limit));
    }
    let mode = receipt.contract.arrival_mode;
    let arrival = ArrivalCheck {
        mode,
        closed_loop_allowed: criteria.allow_closed_loop,
        pass: mode == ArrivalMode::OpenLoop || criteria.allow_closed_loop,
    };
    checks.extend(super::release_gate::release_checks(
        receipt, block, criteria,
    ));
    checks.extend(super::release_gate::class_limit_checks(receipt, criteria)?);
    Ok(Decision {
        class: criteria.class.clone(),
        trace_sha256: receipt.trace.sha256.clone(),
        admit: checks.iter().all(|c| c.pass) && arrival.pass,
        checks,
        arrival,
        arrivals_unknown: receipt.contract.arrivals_unknown.clone(),
        diagnosis: super::diagnosis::diagnose(receipt),
    })
}
