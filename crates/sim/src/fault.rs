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

/// Parses `KIND:RATE`.
pub fn parse_fault(text: &str) -> Result<Fault, String> {
    let (kind, rate) = text
        .split_once(':')
        .ok_or_else(|| format!("--fault `{text}`: expected KIND:RATE, e.g. http500:0.1"))?;
    let kind = match kind.trim() {
        "http500" => FaultKind::Http500,
        "http429" => FaultKind::Http429,
        "disconnect" => FaultKind::Disconnect,
        "malformed" => FaultKind::Malformed,
        "stall" => FaultKind::Stall,
        other => {
            return Err(format!(
                "--fault `{text}`: unknown kind `{other}` (http500, http429, disconnect, malformed, stall)"
            ))
        }
    };
    let rate: f64 = rate
        .trim()
        .parse()
        .map_err(|_| format!("--fault `{text}`: the rate must be a number in [0, 1]"))?;
    if !(0.0..=1.0).contains(&rate) {
        return Err(format!("--fault `{text}`: the rate must be in [0, 1]"));
    }
    Ok(Fault { kind, rate })
}

/// Checks that the rates add up to at most 1.
pub fn check_faults(faults: &[Fault]) -> Result<(), String> {
    let total: f64 = faults.iter().map(|f| f.rate).sum();
    if total > 1.0 + 1e-9 {
        return Err(format!("--fault rates add up to {total}, more than 1"));
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
            .contains("unknown kind"));
        assert!(parse_fault("http429:1.5").is_err());
        assert!(parse_fault("http429").is_err());
        let two = [
            parse_fault("http500:0.6").unwrap(),
            parse_fault("stall:0.6").unwrap(),
        ];
        assert!(check_faults(&two).is_err());
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
