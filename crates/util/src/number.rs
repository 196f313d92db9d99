//! Decimal numbers for people. JSON and CSV keep every number exact; text
//! rounds for display, so `284.70000000000005` reads `284.7` — without ever
//! making a figure look exact (or equal to another) when it is not.

/// Fewest decimals a non-integral figure is shown with (a microsecond, for
/// milliseconds).
const DECIMALS: usize = 3;

/// `x` rounded to [`DECIMALS`] places, trailing zeros dropped; more places
/// when the rounding would print a non-integral value as an integer
/// (`1000.9999` → `1000.9999`, never `1001`; `0.00012` → `0.0001`, never `0`).
/// Integral values print without a fraction; `-0` prints as `0`.
pub fn decimal(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    if x == 0.0 {
        return "0".to_owned();
    }
    if x.fract() == 0.0 {
        return format!("{x:.0}");
    }
    let mut places = DECIMALS;
    loop {
        let text = format!("{x:.places$}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        if text.contains('.') || places >= 17 {
            return text.to_owned();
        }
        places += 1;
    }
}

/// `a → b` for people: both rounded by [`decimal`], or both exact when the
/// rounding would make two different values look the same.
pub fn transition(a: f64, b: f64) -> String {
    let (ra, rb) = (decimal(a), decimal(b));
    if ra == rb && a != b {
        format!("{a} → {b}")
    } else {
        format!("{ra} → {rb}")
    }
}

/// `1 row`, `2 rows`, `0 rows`: a count with its noun (`word` is the
/// singular; the plural adds `s`).
pub fn count(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_agree_with_their_noun() {
        assert_eq!(count(1, "row"), "1 row");
        assert_eq!(count(0, "row"), "0 rows");
        assert_eq!(count(2, "trace"), "2 traces");
    }

    #[test]
    fn figures_round_to_three_places_without_looking_exact() {
        // 1000 − 715.3 in doubles is 284.70000000000005.
        assert_eq!(1000.0 - 715.3, 284.700_000_000_000_05);
        assert_eq!(decimal(1000.0 - 715.3), "284.7");
        assert_eq!(decimal(1001.0), "1001");
        assert_eq!(decimal(-0.0), "0");
        assert_eq!(decimal(2.0 / 3.0), "0.667");
        assert_eq!(decimal(1.25), "1.25");
        // Rounding never turns a non-integral value into an integer.
        assert_eq!(decimal(1000.9999), "1000.9999");
        assert_eq!(decimal(0.000_12), "0.0001");
        assert_eq!(decimal(-0.000_12), "-0.0001");
    }

    #[test]
    fn a_transition_shows_exact_values_only_when_rounding_would_hide_a_change() {
        assert_eq!(transition(1000.0 - 715.3, 1001.0), "284.7 → 1001");
        assert_eq!(transition(31.0 / 30.0, 31.0 / 30.0), "1.033 → 1.033");
        let next = f64::from_bits((31.0f64 / 30.0).to_bits() + 1);
        assert_eq!(
            transition(31.0 / 30.0, next),
            "1.0333333333333334 → 1.0333333333333337"
        );
    }
}
