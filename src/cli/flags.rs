//! Flag values that several commands read the same way: input limits, SLO
//! classes (`--slo`), request rates (`--request-rate`). Durations are in
//! [`super::duration`].

use crate::error::Error;
use crate::trace::{Gates, Limits};

/// Input limits shared by the reviewer commands.
#[derive(Debug, clap::Args)]
pub struct LimitArgs {
    /// Most rows accepted (inclusive).
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT_MAX_ROWS)]
    pub max_rows: u64,
    /// Most bytes accepted (inclusive), checked before parsing.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT_MAX_BYTES)]
    pub max_bytes: u64,
}

impl LimitArgs {
    pub(crate) fn limits(&self) -> Limits {
        Limits {
            max_rows: self.max_rows,
            max_bytes: self.max_bytes,
        }
    }
}

/// The class declared when no `--slo` is given, as flag text: the trace
/// writer's placeholder class ([`crate::trace::write::DEFAULT_CLASS`] with
/// [`crate::trace::write::DEFAULT_GATES`]); declare your own SLOs for real
/// evidence.
pub const DEFAULT_SLO: &str = "default:ttft=1000,tpot=50,e2e=10000";

/// Parses one `--slo NAME:ttft=MS,tpot=MS,e2e=MS`.
pub fn parse_slo(text: &str) -> Result<(String, Gates), String> {
    let (name, gates) = text
        .split_once(':')
        .ok_or_else(|| format!("--slo `{text}`: expected NAME:ttft=MS,tpot=MS,e2e=MS"))?;
    let name = name.trim();
    if name.is_empty() {
        return Err(format!("--slo `{text}`: the class needs a name"));
    }
    let mut out = Gates {
        ttft_ms: None,
        tpot_ms: None,
        e2e_ms: None,
    };
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
            other => {
                return Err(format!(
                    "--slo `{text}`: unknown gate `{other}` (use ttft, tpot, e2e)"
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

/// Checks `--confidence` (exit 2 when out of range).
pub fn confidence_flag(level: f64) -> Result<crate::intervals::Confidence, Error> {
    crate::intervals::Confidence::new(level).map_err(|e| Error::Usage(format!("--confidence: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::write::{DEFAULT_CLASS, DEFAULT_GATES};

    #[test]
    fn slo_flags_parse_with_unnamed_gates_as_none() {
        assert_eq!(
            parse_slo("interactive:ttft=1000,tpot=50,e2e=10000"),
            Ok((
                "interactive".into(),
                Gates {
                    ttft_ms: Some(1000.0),
                    tpot_ms: Some(50.0),
                    e2e_ms: Some(10000.0)
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
                    e2e_ms: None
                }
            ))
        );
        assert!(parse_slo("nocolon").is_err());
        assert!(parse_slo(":ttft=1").is_err());
        assert!(parse_slo("a:ttft=-1").is_err());
        assert!(parse_slo("a:latency=1").is_err());
        assert!(parse_slo("a:ttft=NaN").is_err());
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
                e2e_ms: Some(10000.0)
            }
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
