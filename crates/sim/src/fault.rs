//! Injected faults, for tests and drills. Each request draws at most one.
//!
//! - `http500`, `http429`: the response head is that status, with an OpenAI
//!   error body; nothing reaches the engine.
//! - `disconnect`: the stream is cut (the connection closes without ending the
//!   chunked body) after half the output tokens (at least one).
//! - `malformed`: after half the tokens, an unreadable SSE data line, then
//!   the body ends.
//! - `stall`: after half the tokens, nothing more is sent until the client
//!   gives up.
//!
//! Rates are probabilities per request; they are tried in the order given
//! against one uniform draw, so they must add up to at most 1.

/// A kind of fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultKind {
    /// Respond 500.
    Http500,
    /// Respond 429.
    Http429,
    /// Cut the connection mid-stream.
    Disconnect,
    /// Send a broken SSE chunk mid-stream.
    Malformed,
    /// Stop sending mid-stream.
    Stall,
}

impl FaultKind {
    /// The flag name.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Http500 => "http500",
            FaultKind::Http429 => "http429",
            FaultKind::Disconnect => "disconnect",
            FaultKind::Malformed => "malformed",
            FaultKind::Stall => "stall",
        }
    }
}

/// One `--fault KIND:RATE`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fault {
    /// What.
    pub kind: FaultKind,
    /// Probability per request, in [0, 1].
    pub rate: f64,
}

/// Why a `--fault` flag, or the set of them, was refused. Each message is
/// the one line `goodput sim` prints (a usage error).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FaultError {
    /// No `:` between kind and rate.
    #[error("--fault `{text}`: expected KIND:RATE, e.g. http500:0.1")]
    NotKindRate {
        /// The flag's value.
        text: String,
    },
    /// A kind the sim cannot inject.
    #[error(
        "--fault `{text}`: unknown kind `{kind}` (http500, http429, disconnect, malformed, stall)"
    )]
    UnknownKind {
        /// The flag's value.
        text: String,
        /// The kind as given (trimmed).
        kind: String,
    },
    /// The rate is not a number.
    #[error("--fault `{text}`: the rate must be a number in [0, 1]")]
    RateNotNumber {
        /// The flag's value.
        text: String,
    },
    /// The rate is a number outside [0, 1].
    #[error("--fault `{text}`: the rate must be in [0, 1]")]
    RateOutOfRange {
        /// The flag's value.
        text: String,
    },
    /// The rates together exceed 1 (one uniform draw picks at most one fault).
    #[error("--fault rates add up to {total}, more than 1")]
    RatesOverOne {
        /// Their sum.
        total: f64,
    },
}

/// Parses `KIND:RATE`.
pub fn parse_fault(text: &str) -> Result<Fault, FaultError> {
    let (kind, rate) = text
        .split_once(':')
        .ok_or_else(|| FaultError::NotKindRate { text: text.into() })?;
    let kind = match kind.trim() {
        "http500" => FaultKind::Http500,
        "http429" => FaultKind::Http429,
        "disconnect" => FaultKind::Disconnect,
        "malformed" => FaultKind::Malformed,
        "stall" => FaultKind::Stall,
        other => {
            return Err(FaultError::UnknownKind {
                text: text.into(),
                kind: other.into(),
            })
        }
    };
    let rate: f64 = rate
        .trim()
        .parse()
        .map_err(|_| FaultError::RateNotNumber { text: text.into() })?;
    if !(0.0..=1.0).contains(&rate) {
        return Err(FaultError::RateOutOfRange { text: text.into() });
    }
    Ok(Fault { kind, rate })
}

/// Checks that the rates add up to at most 1.
pub fn check_faults(faults: &[Fault]) -> Result<(), FaultError> {
    let total: f64 = faults.iter().map(|f| f.rate).sum();
    if total > 1.0 + 1e-9 {
        return Err(FaultError::RatesOverOne { total });
    }
    Ok(())
}

/// The fault for a request, given a uniform draw `u` in [0, 1).
pub fn pick(faults: &[Fault], u: f64) -> Option<FaultKind> {
    let mut acc = 0.0;
    for f in faults {
        acc += f.rate;
        if u < acc {
            return Some(f.kind);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_and_bad_ones_say_why() {
        for (text, message) in [
            (
                "http500",
                "--fault `http500`: expected KIND:RATE, e.g. http500:0.1",
            ),
            (
                "boom:0.1",
                "--fault `boom:0.1`: unknown kind `boom` (http500, http429, disconnect, \
                 malformed, stall)",
            ),
            (
                "stall:x",
                "--fault `stall:x`: the rate must be a number in [0, 1]",
            ),
            ("stall:2", "--fault `stall:2`: the rate must be in [0, 1]"),
        ] {
            assert_eq!(parse_fault(text).unwrap_err().to_string(), message);
        }
        assert_eq!(
            parse_fault("http500:0.25"),
            Ok(Fault {
                kind: FaultKind::Http500,
                rate: 0.25
            })
        );
        assert_eq!(parse_fault("stall:1").map(|f| f.kind), Ok(FaultKind::Stall));
        assert!(parse_fault("boom:0.1")
            .unwrap_err()
            .to_string()
            .contains("unknown kind"));
        assert!(parse_fault("http429:1.5").is_err());
        assert!(parse_fault("http429").is_err());
        let two = [
            parse_fault("http500:0.6").unwrap(),
            parse_fault("stall:0.6").unwrap(),
        ];
        assert_eq!(
            check_faults(&two).unwrap_err().to_string(),
            "--fault rates add up to 1.2, more than 1"
        );
    }

    #[test]
    fn a_draw_falls_into_the_band_of_its_fault() {
        let faults = [
            Fault {
                kind: FaultKind::Http500,
                rate: 0.1,
            },
            Fault {
                kind: FaultKind::Stall,
                rate: 0.2,
            },
        ];
        assert_eq!(pick(&faults, 0.05), Some(FaultKind::Http500));
        assert_eq!(pick(&faults, 0.1), Some(FaultKind::Stall));
        assert_eq!(pick(&faults, 0.29), Some(FaultKind::Stall));
        assert_eq!(pick(&faults, 0.31), None);
        assert_eq!(pick(&[], 0.0), None);
    }
}
