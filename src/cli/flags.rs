//! Flag values that several commands read the same way: input limits, SLO
//! classes (`--slo`), request rates (`--request-rate`), the tail and share
//! limits of `gate`, `frontier` and `record --find-capacity`. Durations are in
//! [`crate::cli::duration`].

use std::ffi::OsString;

use crate::cli::error::Error;
use goodput_core::review::criteria::BlockLimits;
use goodput_core::review::exact::Decimal;
use goodput_core::trace::{Gates, Limits};

/// A usage error (exit 2): the flags, not the data, are wrong.
pub(crate) fn usage(message: impl std::fmt::Display) -> Error {
    Error::Usage(message.to_string())
}

/// The p95 limits on a run's tails, as `gate` reads them; `frontier` and
/// `record --find-capacity` take the very same flags (through [`HoldArgs`]),
/// so a limit means one thing wherever it is written.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TailArgs {
    /// Most nearest-rank p95 TTFT allowed, ms.
    #[arg(long, value_name = "X")]
    pub max_p95_ttft_ms: Option<Decimal>,
    /// Most nearest-rank p95 E2E allowed, ms.
    #[arg(long, value_name = "X")]
    pub max_p95_e2e_ms: Option<Decimal>,
    /// Most nearest-rank p95 TPOT allowed, ms.
    #[arg(long, value_name = "X")]
    pub max_p95_tpot_ms: Option<f64>,
    /// Most nearest-rank p95 TTFA (time to first answer, after any
    /// reasoning) allowed, ms; a run without answer instants fails it.
    #[arg(long, value_name = "X")]
    pub max_p95_ttfa_ms: Option<Decimal>,
}

/// What a rate must hold, besides the pass-share target, to count toward
/// the capacity (`frontier`, `record --find-capacity`): the gate's tail
/// limits and share ceilings, checked by the gate's own evaluation. Each is
/// optional and has no default (unlike `gate`'s share ceilings), so without
/// them a rate is judged by its pass share alone, as it always was.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct HoldArgs {
    /// Most failed / cohort a rate may have to count toward the capacity (as `gate`).
    #[arg(long, value_name = "F")]
    pub max_failure_share: Option<Decimal>,
    /// Most censored / cohort a rate may have to count toward the capacity (as `gate`).
    #[arg(long, value_name = "F")]
    pub max_censored_share: Option<Decimal>,
    /// The p95 limits.
    #[command(flatten)]
    pub tails: TailArgs,
}

impl HoldArgs {
    /// The limits given, range-checked (a bad one is a usage error, exit 2).
    pub(crate) fn limits(&self) -> Result<BlockLimits, Error> {
        let limits = BlockLimits {
            max_failure_share: self.max_failure_share.clone(),
            max_censored_share: self.max_censored_share.clone(),
            max_p95_ttft_ms: self.tails.max_p95_ttft_ms.clone(),
            max_p95_e2e_ms: self.tails.max_p95_e2e_ms.clone(),
            max_p95_tpot_ms: self.tails.max_p95_tpot_ms,
            max_p95_ttfa_ms: self.tails.max_p95_ttfa_ms.clone(),
            ..BlockLimits::default()
        };
        limits.check().map_err(usage)?;
        Ok(limits)
    }
}

/// Input limits shared by every command that reads a trace. A flag wins; with
/// no flag, `GOODPUT_MAX_ROWS` / `GOODPUT_MAX_BYTES` set the limit (so a long
/// recording does not need the flags on every command); with neither, the
/// defaults (docs/contract.md §4.1). The limits in force are recorded in the
/// receipt either way.
#[derive(Debug, Default, clap::Args)]
pub struct LimitArgs {
    /// Most rows accepted (inclusive) [default: $GOODPUT_MAX_ROWS, else 500]; recorded in the receipt.
    #[arg(long, value_name = "N")]
    pub max_rows: Option<u64>,
    /// Most bytes accepted (inclusive), checked before parsing [default:
    /// $GOODPUT_MAX_BYTES, else 65536]; recorded in the receipt.
    #[arg(long, value_name = "N")]
    pub max_bytes: Option<u64>,
}

impl LimitArgs {
    /// The limits in force: the flags, else the environment, else the defaults.
    pub(crate) fn limits(&self) -> Result<Limits, Error> {
        resolve_limits(self.max_rows, self.max_bytes, |name| std::env::var_os(name))
    }
}

/// The limits in force given the flags and a way to read a variable: a flag
/// wins over its variable, a variable over the default. An empty variable
/// counts as unset; any other value must be a whole number, or the command
/// stops (exit 2) with a message naming the variable.
pub fn resolve_limits(
    max_rows: Option<u64>,
    max_bytes: Option<u64>,
    var: impl Fn(&str) -> Option<OsString>,
) -> Result<Limits, Error> {
    let pick = |flag: Option<u64>, name: &str, default: u64| -> Result<u64, Error> {
        if let Some(n) = flag {
            return Ok(n);
        }
        let Some(value) = var(name).filter(|v| !v.is_empty()) else {
            return Ok(default);
        };
        value
            .to_str()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{name}={} is not a whole number >= 0 (unset it, or give the flag instead)",
                    value.to_string_lossy()
                ))
            })
    };
    Ok(Limits {
        max_rows: pick(max_rows, Limits::ROWS_VARIABLE, Limits::DEFAULT_MAX_ROWS)?,
        max_bytes: pick(max_bytes, Limits::BYTES_VARIABLE, Limits::DEFAULT_MAX_BYTES)?,
    })
}

/// The class declared when no `--slo` is given, as flag text: the trace
/// writer's placeholder class ([`goodput_core::trace::write::DEFAULT_CLASS`] with
/// [`goodput_core::trace::write::DEFAULT_GATES`]); declare your own SLOs for real
/// evidence.
pub const DEFAULT_SLO: &str = "default:ttft=1000,tpot=50,e2e=10000";

/// Parses one `--slo NAME:ttft=MS,tpot=MS,e2e=MS[,stall=MS][,ttfa=MS]`.
pub fn parse_slo(text: &str) -> Result<(String, Gates), String> {
    let (name, gates) = text
        .split_once(':')
        .ok_or_else(|| format!("--slo `{text}`: expected NAME:ttft=MS,tpot=MS,e2e=MS"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("--slo `{text}`: the class needs a name"));
    }
    let mut out = Gates::latency(None, None, None);
    for part in gates.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part
            .split_once('=')
            .ok_or_else(|| format!("--slo `{text}`: `{part}` should be GATE=MS"))?;
        let value = match value.trim() {
            "none" | "null" => None,
            v => match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => Some(x),
                _ => return Err(format!("--slo `{text}`: `{v}` is not a number of ms >= 0")),
            },
        };
        let slot = match key.trim() {
            "ttft" => &mut out.ttft_ms,
            "tpot" => &mut out.tpot_ms,
            "e2e" | "e2el" => &mut out.e2e_ms,
            "stall" => &mut out.stall_ms,
            "ttfa" => &mut out.ttfa_ms,
            other => {
                return Err(format!(
                    "--slo `{text}`: unknown gate `{other}` (use ttft, tpot, e2e, stall, ttfa)"
                ))
            }
        };
        *slot = value;
    }
    Ok((name.to_owned(), out))
}

/// One `--request-rate` value: the number, and the text as written (a sweep
/// names its output files with the text, so `2.5` stays `2.5`).
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// Requests per second.
    pub per_s: f64,
    /// The value as written on the command line, trimmed.
    pub text: String,
}

/// Parses one `--request-rate` value (range checks come with the schedule).
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    let text = text.trim();
    text.parse::<f64>()
        .map(|per_s| Rate {
            per_s,
            text: text.to_owned(),
        })
        .map_err(|_| format!("`{text}` is not a number of requests per second"))
}

/// `--percentiles LIST` (alias `--metric-percentiles`), as `analyze`,
/// `report` and `compare` read it: which nearest-rank percentiles the
/// figures are given at.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct PercentileArgs {
    /// Percentiles to report, comma-separated: each in (0, 100) with at most
    /// three decimals, at most 10, sorted and de-duplicated [default:
    /// 50,95,99]; recorded in the receipt (`contract.percentiles`).
    #[arg(long, visible_alias = "metric-percentiles", value_name = "LIST")]
    pub percentiles: Option<String>,
}

impl PercentileArgs {
    /// The list in force: the flag's, checked (exit 2 naming the flag and
    /// the bad value), or `None` when the flag is not given.
    pub(crate) fn given(&self) -> Result<Option<goodput_core::stats::PercentileSet>, Error> {
        self.percentiles
            .as_deref()
            .map(|list| {
                goodput_core::stats::PercentileSet::parse(list)
                    .map_err(|e| Error::Usage(format!("--percentiles {list}: {e}")))
            })
            .transpose()
    }

    /// The list in force, the default 50, 95, 99 without the flag.
    pub(crate) fn set(&self) -> Result<goodput_core::stats::PercentileSet, Error> {
        Ok(self.given()?.unwrap_or_default())
    }
}

/// Checks `--confidence` (exit 2 when out of range).
pub fn confidence_flag(level: f64) -> Result<goodput_core::intervals::Confidence, Error> {
    goodput_core::intervals::Confidence::new(level)
        .map_err(|e| Error::Usage(format!("--confidence: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::trace::write::{DEFAULT_CLASS, DEFAULT_GATES};

    #[test]
    fn slo_reads_a_stall_gate() {
        let (name, gates) = parse_slo("chat:ttft=500,stall=250").unwrap();
        assert_eq!(name, "chat");
        assert_eq!(
            (gates.ttft_ms, gates.tpot_ms, gates.stall_ms),
            (Some(500.0), None, Some(250.0))
        );
        assert!(parse_slo("chat:stall=-1").is_err());
    }

    #[test]
    fn slo_flags_parse_with_unnamed_gates_as_none() {
        assert_eq!(
            parse_slo("interactive:ttft=1000,tpot=50,e2e=10000"),
            Ok((
                "interactive".into(),
                Gates {
                    ttft_ms: Some(1000.0),
                    tpot_ms: Some(50.0),
                    e2e_ms: Some(10000.0),
                    stall_ms: None,
                    token_deadline_ms: None,
                    ttfa_ms: None,
                }
            ))
        );
        assert_eq!(
            parse_slo("batch:ttft=5000, tpot=none"),
            Ok((
                "batch".into(),
                Gates {
                    ttft_ms: Some(5000.0),
                    tpot_ms: None,
                    e2e_ms: None,
                    stall_ms: None,
                    token_deadline_ms: None,
                    ttfa_ms: None,
                }
            ))
        );
        assert!(parse_slo("nocolon").is_err());
        assert!(parse_slo(":ttft=1").is_err());
        assert!(parse_slo("a:ttft=-1").is_err());
        assert!(parse_slo("a:latency=1").is_err());
        assert!(parse_slo("a:ttft=NaN").is_err());
        // Hand-read: the answer gate is its own key, beside the three.
        assert_eq!(
            parse_slo("think:ttft=2000,ttfa=8000").map(|(_, g)| (g.ttft_ms, g.ttfa_ms)),
            Ok((Some(2000.0), Some(8000.0)))
        );
    }

    #[test]
    fn the_default_slo_text_is_the_writers_placeholder_class() {
        assert_eq!(
            parse_slo(DEFAULT_SLO),
            Ok((DEFAULT_CLASS.to_owned(), DEFAULT_GATES))
        );
        assert_eq!(
            DEFAULT_GATES,
            Gates {
                ttft_ms: Some(1000.0),
                tpot_ms: Some(50.0),
                e2e_ms: Some(10000.0),
                stall_ms: None,
                token_deadline_ms: None,
                ttfa_ms: None,
            }
        );
    }

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<OsString> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        move |name| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.into())
    }

    #[test]
    fn a_flag_wins_over_its_variable_and_a_variable_over_the_default() {
        let limits = |rows, bytes, vars: &[(&str, &str)]| {
            resolve_limits(rows, bytes, env(vars)).map_err(|e| e.to_string())
        };
        assert_eq!(limits(None, None, &[]), Ok(Limits::default()));
        let both = [
            ("GOODPUT_MAX_ROWS", "2000"),
            ("GOODPUT_MAX_BYTES", "700000"),
        ];
        assert_eq!(
            limits(None, None, &both),
            Ok(Limits {
                max_rows: 2000,
                max_bytes: 700_000
            })
        );
        assert_eq!(
            limits(Some(3), None, &both),
            Ok(Limits {
                max_rows: 3,
                max_bytes: 700_000
            })
        );
        assert_eq!(
            limits(None, Some(10), &both),
            Ok(Limits {
                max_rows: 2000,
                max_bytes: 10
            })
        );
        // Empty counts as unset; junk names the variable.
        assert_eq!(
            limits(None, None, &[("GOODPUT_MAX_ROWS", "")]),
            Ok(Limits::default())
        );
        let junk = limits(None, None, &[("GOODPUT_MAX_BYTES", "64k")]).unwrap_err();
        assert!(junk.contains("GOODPUT_MAX_BYTES=64k"), "{junk}");
        // A flag given makes a bad variable irrelevant.
        assert_eq!(
            limits(Some(1), Some(2), &[("GOODPUT_MAX_BYTES", "64k")]),
            Ok(Limits {
                max_rows: 1,
                max_bytes: 2
            })
        );
    }

    #[test]
    fn rates_keep_their_text_and_junk_is_refused() {
        assert_eq!(
            parse_rate(" 2.5 "),
            Ok(Rate {
                per_s: 2.5,
                text: "2.5".to_owned()
            })
        );
        assert!(parse_rate("fast").is_err());
    }
}
