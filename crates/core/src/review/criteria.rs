//! What the admission gate is asked to check: its criteria, the per-class
//! limits of a release gate, the check lines it answers with, and why a
//! set of criteria cannot be applied. One leaf module that both the base
//! gate (`gate`) and its release criteria (`release_gate`) build on, so
//! neither needs the other for a type.

use crate::review::exact::Decimal;

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
    /// Most p95 TTFA (time to first answer) allowed, ms (`--max-p95-ttfa-ms`).
    pub max_p95_ttfa_ms: Option<Decimal>,
    /// Judge this class's block instead of all rows.
    pub class: Option<String>,
    /// Most p95 TPOT allowed, ms (a release criterion: `release_gate`).
    pub max_p95_tpot_ms: Option<f64>,
    /// Most p99 TTFT, TPOT and E2E allowed, ms (`--max-p99-*-ms`).
    pub p99: P99Limits,
    /// Most recovery time after the burst allowed, s (a release criterion).
    pub max_recovery_s: Option<f64>,
    /// Limits of several classes in one run (release criteria, `--class-limits`).
    pub class_limits: Vec<ClassLimits>,
    /// Admit a closed-loop run (its latencies are then taken as evidence anyway).
    pub allow_closed_loop: bool,
    /// Admit a run whose saturation verdict is `overloaded` (its goodput,
    /// counted with the grace period's completions, can exceed what the
    /// server sustains).
    pub allow_overload: bool,
    /// The stall limits (`--max-stall-ms`, `--max-p99-gap-ms`).
    pub gaps: crate::review::gap_gate::GapLimits,
    /// The energy limit (`--max-joules-per-good-request`).
    pub energy: crate::review::energy_gate::EnergyLimits,
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
        if self.min_goodput_per_s.is_negative() {
            return bad("--min-goodput", &self.min_goodput_per_s, "a rate >= 0");
        }
        if self.margin.is_negative() {
            return bad("--margin", &self.margin, "a fraction >= 0, e.g. 0.2");
        }
        self.block_limits().check()?;
        if let Some((flag, v)) = crate::review::gap_gate::bad_limit(&self.gaps) {
            return Err(GateError::BadFlag {
                flag,
                value: v.to_string(),
                rule: "a number of ms >= 0",
            });
        }
        if let Some((flag, v)) = crate::review::energy_gate::bad_limit(&self.energy) {
            return Err(GateError::BadFlag {
                flag,
                value: v.to_string(),
                rule: "a number of joules >= 0",
            });
        }
        check_release_flags(self)
    }

    /// The gate's limits on its judged block's tails and shares: both share
    /// ceilings (with their defaults) and the p95 and p99 limits given. What
    /// [`crate::review::limits::limit_checks`] checks for `gate`, as it does
    /// for each rate of a frontier or a capacity search.
    pub fn block_limits(&self) -> BlockLimits {
        BlockLimits {
            max_failure_share: Some(self.max_failure_share.clone()),
            max_censored_share: Some(self.max_censored_share.clone()),
            max_p95_ttft_ms: self.max_p95_ttft_ms.clone(),
            max_p95_e2e_ms: self.max_p95_e2e_ms.clone(),
            max_p95_tpot_ms: self.max_p95_tpot_ms,
            max_p95_ttfa_ms: self.max_p95_ttfa_ms.clone(),
            p99: self.p99.clone(),
        }
    }
}

/// The p99 limits of `gate` (`--max-p99-ttft-ms`, `--max-p99-tpot-ms`,
/// `--max-p99-e2e-ms`): each a decimal compared exactly with the nearest-rank
/// p99 (docs/contract.md §9.2), each its own criterion line when given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct P99Limits {
    /// Most nearest-rank p99 TTFT, ms.
    pub ttft_ms: Option<Decimal>,
    /// Most nearest-rank p99 TPOT, ms.
    pub tpot_ms: Option<Decimal>,
    /// Most nearest-rank p99 E2E, ms.
    pub e2e_ms: Option<Decimal>,
}

/// Limits on one block's tails and shares, each optional: the criteria of
/// `gate` that judge a run by its own figures, whatever its rate. `gate`
/// always sets both share ceilings; `frontier` and `record --find-capacity`
/// set only those given, so without one they judge by the pass share alone.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct BlockLimits {
    /// Most failed / cohort (`--max-failure-share`).
    pub max_failure_share: Option<Decimal>,
    /// Most censored / cohort (`--max-censored-share`).
    pub max_censored_share: Option<Decimal>,
    /// Most nearest-rank p95 TTFT, ms (`--max-p95-ttft-ms`).
    pub max_p95_ttft_ms: Option<Decimal>,
    /// Most nearest-rank p95 E2E, ms (`--max-p95-e2e-ms`).
    pub max_p95_e2e_ms: Option<Decimal>,
    /// Most nearest-rank p95 TPOT, ms (`--max-p95-tpot-ms`).
    pub max_p95_tpot_ms: Option<f64>,
    /// Most nearest-rank p95 TTFA, ms (`--max-p95-ttfa-ms`): the receipt's
    /// `answer.ttfaMs.p95`; a block without an answer block fails it.
    pub max_p95_ttfa_ms: Option<Decimal>,
    /// The p99 limits (`gate --max-p99-*-ms`).
    pub p99: P99Limits,
}

impl BlockLimits {
    /// No limit is given.
    pub fn is_empty(&self) -> bool {
        self == &BlockLimits::default()
    }

    /// Checks every limit's range, naming the flag that sets it.
    pub fn check(&self) -> Result<(), GateError> {
        let bad = |flag, value: String, rule| Err(GateError::BadFlag { flag, value, rule });
        let one = Decimal::from_integer(1);
        for (flag, v) in [
            ("--max-failure-share", &self.max_failure_share),
            ("--max-censored-share", &self.max_censored_share),
        ] {
            if let Some(v) = v
                .as_ref()
                .filter(|v| v.is_negative() || v.value() > one.value())
            {
                return bad(flag, v.to_string(), "a share in [0, 1]");
            }
        }
        for (flag, v) in [
            ("--max-p95-ttft-ms", &self.max_p95_ttft_ms),
            ("--max-p95-e2e-ms", &self.max_p95_e2e_ms),
            ("--max-p95-ttfa-ms", &self.max_p95_ttfa_ms),
            ("--max-p99-ttft-ms", &self.p99.ttft_ms),
            ("--max-p99-tpot-ms", &self.p99.tpot_ms),
            ("--max-p99-e2e-ms", &self.p99.e2e_ms),
        ] {
            if let Some(v) = v.as_ref().filter(|v| v.is_negative()) {
                return bad(flag, v.to_string(), "a number of ms >= 0");
            }
        }
        if let Some(v) = self
            .max_p95_tpot_ms
            .filter(|v| !(v.is_finite() && *v >= 0.0))
        {
            return bad("--max-p95-tpot-ms", v.to_string(), "a finite number >= 0");
        }
        Ok(())
    }
}

pub use crate::review::check::Check;

/// One class's limits (`--class-limits`); every limit is optional.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ClassLimits {
    /// The class.
    pub class: String,
    /// Required goodput, requests per window second (exceeded × (1 + margin)).
    pub min_goodput_per_s: Option<f64>,
    /// Most failed / cohort.
    pub max_failure_share: Option<f64>,
    /// Most censored / cohort.
    pub max_censored_share: Option<f64>,
    /// Most p95 TTFT, ms.
    pub max_p95_ttft_ms: Option<f64>,
    /// Most p95 TPOT, ms.
    pub max_p95_tpot_ms: Option<f64>,
    /// Most p95 E2E, ms.
    pub max_p95_e2e_ms: Option<f64>,
    /// Most recovery time, s.
    pub max_recovery_s: Option<f64>,
}

/// Why a `--class-limits` value cannot be read; each message quotes the
/// value as written.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum ClassLimitsError {
    /// No `:` between the class and its limits.
    #[error("--class-limits `{text}`: expected CLASS:KEY=VALUE,… (e.g. interactive:ttft=800,recovery=30)")]
    NoClass {
        /// The value as written.
        text: String,
    },
    /// The class before the `:` is empty.
    #[error("--class-limits `{text}`: the class needs a name")]
    UnnamedClass {
        /// The value as written.
        text: String,
    },
    /// A limit without `=`.
    #[error("--class-limits `{text}`: `{part}` should be KEY=VALUE")]
    NotKeyValue {
        /// The value as written.
        text: String,
        /// The limit at fault.
        part: String,
    },
    /// A limit's value is not a finite number >= 0.
    #[error("--class-limits `{text}`: `{value}` is not a finite number >= 0")]
    BadNumber {
        /// The value as written.
        text: String,
        /// The limit's value, as written.
        value: String,
    },
    /// A key that names no limit.
    #[error(
        "--class-limits `{text}`: unknown key `{key}` (goodput, failure-share, \
         censored-share, ttft, tpot, e2e, recovery)"
    )]
    UnknownKey {
        /// The value as written.
        text: String,
        /// The key, trimmed.
        key: String,
    },
    /// A share above 1.
    #[error("--class-limits `{text}`: `{key}` is a share in [0, 1], not {value}")]
    ShareAboveOne {
        /// The value as written.
        text: String,
        /// The key, as written.
        key: String,
        /// The share given.
        value: f64,
    },
    /// The same key twice.
    #[error("--class-limits `{text}`: `{key}` is given twice")]
    GivenTwice {
        /// The value as written.
        text: String,
        /// The key, as written.
        key: String,
    },
}

/// Parses `CLASS:KEY=V,…` (keys: goodput, failure-share, censored-share,
/// ttft, tpot, e2e, recovery), checking each value's range.
pub fn parse_class_limits(text: &str) -> Result<ClassLimits, ClassLimitsError> {
    let (class, rest) = text
        .split_once(':')
        .ok_or_else(|| ClassLimitsError::NoClass {
            text: text.to_owned(),
        })?;
    let class = class.trim();
    if class.is_empty() {
        return Err(ClassLimitsError::UnnamedClass {
            text: text.to_owned(),
        });
    }
    let mut out = ClassLimits {
        class: class.to_owned(),
        ..ClassLimits::default()
    };
    for part in rest.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| ClassLimitsError::NotKeyValue {
                text: text.to_owned(),
                part: part.to_owned(),
            })?;
        let v: f64 = value
            .trim()
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| ClassLimitsError::BadNumber {
                text: text.to_owned(),
                value: value.to_owned(),
            })?;
        let (slot, share) = match key.trim() {
            "goodput" => (&mut out.min_goodput_per_s, false),
            "failure-share" => (&mut out.max_failure_share, true),
            "censored-share" => (&mut out.max_censored_share, true),
            "ttft" => (&mut out.max_p95_ttft_ms, false),
            "tpot" => (&mut out.max_p95_tpot_ms, false),
            "e2e" => (&mut out.max_p95_e2e_ms, false),
            "recovery" => (&mut out.max_recovery_s, false),
            other => {
                return Err(ClassLimitsError::UnknownKey {
                    text: text.to_owned(),
                    key: other.to_owned(),
                })
            }
        };
        if share && v > 1.0 {
            return Err(ClassLimitsError::ShareAboveOne {
                text: text.to_owned(),
                key: key.to_owned(),
                value: v,
            });
        }
        if slot.replace(v).is_some() {
            return Err(ClassLimitsError::GivenTwice {
                text: text.to_owned(),
                key: key.to_owned(),
            });
        }
    }
    Ok(out)
}

/// Checks the range of the release flag of the base scope (`--max-p95-tpot-ms`
/// is a block limit, checked with the others).
fn check_release_flags(criteria: &Criteria) -> Result<(), GateError> {
    if let Some(v) = criteria
        .max_recovery_s
        .filter(|v| !(v.is_finite() && *v >= 0.0))
    {
        return Err(GateError::BadFlag {
            flag: "--max-recovery-s",
            value: v.to_string(),
            rule: "a finite number >= 0",
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn class_limits_read_every_key() {
        let l = parse_class_limits(
            "interactive: goodput=2.5, failure-share=0.01, censored-share=0.02, ttft=800, tpot=40, e2e=5000, recovery=30",
        )
        .unwrap();
        assert_eq!(
            l,
            ClassLimits {
                class: "interactive".into(),
                min_goodput_per_s: Some(2.5),
                max_failure_share: Some(0.01),
                max_censored_share: Some(0.02),
                max_p95_ttft_ms: Some(800.0),
                max_p95_tpot_ms: Some(40.0),
                max_p95_e2e_ms: Some(5000.0),
                max_recovery_s: Some(30.0),
            }
        );
    }

    #[test]
    fn bad_class_limits_say_what_is_wrong() {
        for (text, needle) in [
            ("interactive", "expected CLASS:KEY=VALUE"),
            (":ttft=1", "needs a name"),
            ("a:ttft", "should be KEY=VALUE"),
            ("a:ttft=-1", "not a finite number"),
            ("a:speed=1", "unknown key `speed`"),
            ("a:failure-share=2", "a share in [0, 1]"),
            ("a:ttft=1,ttft=2", "given twice"),
        ] {
            let e = parse_class_limits(text).unwrap_err().to_string();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
