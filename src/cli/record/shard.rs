//! The flags that split one schedule over several recorders: `--shard K/N`
//! (K may be `auto`: the `JOB_COMPLETION_INDEX` a Kubernetes Indexed Job
//! gives each pod) and `--start-at T` (an RFC 3339 instant or Unix epoch
//! seconds, shared by every shard).

use goodput_record::output::frame::ShardTag;

/// The environment variable an Indexed Job sets to each pod's index.
pub const INDEX_ENV: &str = "JOB_COMPLETION_INDEX";

/// The most shards one schedule may be split into.
pub const MAX_SHARDS: usize = 10_000;

/// `--shard K/N`; `index_env` is the value of [`INDEX_ENV`], used when K is
/// `auto`.
pub fn parse_shard(text: &str, index_env: Option<&str>) -> Result<ShardTag, String> {
    let bad = |why: &str| format!("--shard `{text}`: {why}");
    let (k, n) = text
        .split_once('/')
        .ok_or_else(|| bad("expected K/N (K = this shard, N = how many), e.g. 0/4 or auto/4"))?;
    let count: usize = n
        .trim()
        .parse()
        .map_err(|_| bad("N must be a whole number"))?;
    if count == 0 || count > MAX_SHARDS {
        return Err(bad(&format!("N must be between 1 and {MAX_SHARDS}")));
    }
    let (k, from_env) = if k.trim() == "auto" {
        let value = index_env.ok_or_else(|| {
            bad(&format!(
                "K is `auto` but {INDEX_ENV} is not set (a Kubernetes Indexed Job sets it)"
            ))
        })?;
        (value.trim().to_owned(), true)
    } else {
        (k.trim().to_owned(), false)
    };
    let index: usize = k.parse().map_err(|_| {
        if from_env {
            bad(&format!("{INDEX_ENV}=`{k}` is not a whole number"))
        } else {
            bad("K must be a whole number or `auto`")
        }
    })?;
    if index >= count {
        return Err(bad(&format!(
            "K = {index} is not below N = {count} (shards are numbered 0 to N - 1)"
        )));
    }
    Ok(ShardTag { index, count })
}

/// `--start-at T` → ms since the Unix epoch: an RFC 3339 instant
/// (`2026-12-01T06:40:00Z`, `…00.250+01:00`) or Unix epoch seconds
/// (`1764571200`, `1764571200.5`).
pub fn parse_start_at(text: &str) -> Result<f64, String> {
    let t = text.trim();
    let bad = |why: &str| {
        format!("--start-at `{text}`: {why} (give an RFC 3339 instant like 2026-12-01T06:40:00Z, or Unix epoch seconds)")
    };
    if t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = t.parse().map_err(|_| bad("not a number"))?;
        if !(secs.is_finite() && secs > 0.0 && secs < 1e11) {
            return Err(bad("out of range"));
        }
        return Ok(secs * 1000.0);
    }
    rfc3339_unix_ms(t).ok_or_else(|| bad("not an RFC 3339 instant"))
}

fn digits(s: &str, n: usize) -> Option<i64> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Days from 1970-01-01 to the civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn rfc3339_unix_ms(t: &str) -> Option<f64> {
    let (date, rest) = (t.get(..10)?, t.get(10..)?);
    let sep = rest.chars().next()?;
    if !matches!(sep, 'T' | 't' | ' ') {
        return None;
    }
    let rest = &rest[1..];
    let year = digits(date.get(0..4)?, 4)?;
    let month = digits(date.get(5..7)?, 2)?;
    let day = digits(date.get(8..10)?, 2)?;
    if &date[4..5] != "-" || &date[7..8] != "-" || !(1..=12).contains(&month) {
        return None;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if day < 1 || day > month_days[(month - 1) as usize] {
        return None;
    }
    let hour = digits(rest.get(0..2)?, 2)?;
    let minute = digits(rest.get(3..5)?, 2)?;
    let second = digits(rest.get(6..8)?, 2)?;
    if &rest[2..3] != ":" || &rest[5..6] != ":" || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &rest[8..];
    let mut frac_ms = 0.0;
    if let Some(f) = rest.strip_prefix('.') {
        let n = f.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        frac_ms = format!("0.{}", &f[..n]).parse::<f64>().ok()? * 1000.0;
        rest = &f[n..];
    }
    let offset_min = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.get(0..1)? {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let oh = digits(rest.get(1..3)?, 2)?;
            let om = digits(rest.get(4..6)?, 2)?;
            if rest.len() != 6 || &rest[3..4] != ":" || oh > 23 || om > 59 {
                return None;
            }
            sign * (oh * 60 + om)
        }
    };
    let secs = days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second
        - offset_min * 60;
    Some(secs as f64 * 1000.0 + frac_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_flags_take_k_from_the_job_index_when_auto() {
        assert_eq!(
            parse_shard("1/4", None),
            Ok(ShardTag { index: 1, count: 4 })
        );
        assert_eq!(
            parse_shard("auto/4", Some("3")),
            Ok(ShardTag { index: 3, count: 4 })
        );
        assert!(parse_shard("auto/4", None)
            .unwrap_err()
            .contains("JOB_COMPLETION_INDEX is not set"));
        assert!(parse_shard("auto/4", Some("4"))
            .unwrap_err()
            .contains("K = 4 is not below N = 4"));
        assert!(parse_shard("auto/4", Some("x")).is_err());
        assert!(parse_shard("0/0", None).is_err());
        assert!(parse_shard("4", None).is_err());
        assert!(parse_shard("-1/4", None).is_err());
    }

    #[test]
    fn start_instants_read_as_rfc3339_or_epoch_seconds() {
        // 2026-12-01T00:00:00Z: 20,788 days after 1970-01-01 (56 years,
        // 14 leap days from 1972 to 2024, then 334 days to December 1st).
        let midnight = 20_788.0 * 86_400_000.0;
        assert_eq!(parse_start_at("2026-12-01T00:00:00Z"), Ok(midnight));
        assert_eq!(
            parse_start_at("2026-12-01T06:40:00.25+01:00"),
            Ok(midnight + 5.0 * 3_600_000.0 + 40.0 * 60_000.0 + 250.0)
        );
        assert_eq!(parse_start_at("1970-01-01T00:00:01z"), Ok(1000.0));
        assert_eq!(parse_start_at("1764547200"), Ok(1_764_547_200_000.0));
        assert_eq!(parse_start_at("1764547200.5"), Ok(1_764_547_200_500.0));
        assert_eq!(
            parse_start_at("2024-02-29T00:00:00Z"),
            Ok(19_782.0 * 86_400_000.0)
        );
        for bad in [
            "2026-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-12-01T24:00:00Z",
            "2026-12-01T00:00:00",
            "2026-12-01",
            "tomorrow",
            "",
        ] {
            assert!(parse_start_at(bad).is_err(), "{bad}");
        }
    }
}
