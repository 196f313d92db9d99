//! Human durations on the command line (`60s`, `500ms`, `2m`, `1.5s`).
//!
//! A bare number means seconds, as in `vllm bench serve`. Our own parser keeps
//! the accepted forms small and the error message specific.

use std::time::Duration;

/// Parses `N[ms|s|m|h]` (N may have a fraction; no suffix means seconds).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration (try 60s, 500ms, 2m)"))?;
    let seconds = match unit.trim() {
        "" | "s" | "sec" => value,
        "ms" => value / 1000.0,
        "m" | "min" => value * 60.0,
        "h" => value * 3600.0,
        other => {
            return Err(format!(
                "`{text}`: unknown unit `{other}` (use ms, s, m or h)"
            ))
        }
    };
    if !seconds.is_finite() || seconds > 86_400.0 {
        return Err(format!("`{text}` is longer than 24 hours"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Formats a duration the way `parse_duration` reads it back (for summaries).
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms < 1000.0 {
        format!("{ms}ms")
    } else {
        format!("{}s", ms / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_milliseconds_minutes_and_bare_numbers_parse() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
    }

    #[test]
    fn junk_units_and_absurd_lengths_are_refused() {
        assert!(parse_duration("10 parsecs").is_err());
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration("25h").is_err());
    }

    #[test]
    fn formatting_reads_back() {
        for d in [Duration::from_millis(250), Duration::from_secs(30)] {
            assert_eq!(parse_duration(&format_duration(d)), Ok(d));
        }
    }
}
