//! Exact numbers for the admission gate: a flag's decimal as written, and a
//! double at its exact binary value, compared without rounding.
//!
//! Why: in binary floating point `1.5 × (1 + 0.2)` is `1.7999999999999998`,
//! so a goodput of exactly 1.8/s would pass "more than 1.5 with a 20 %
//! margin" while "more than 1.8" refuses it. The gate therefore compares
//! rationals (docs/contract.md §9.2): each flag is the decimal as written (a
//! decimal is an exact rational), counts are integers, and a double from the
//! receipt's window bounds is taken at its exact value.

use std::fmt;
use std::str::FromStr;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive, Zero};

/// Longest decimal accepted, in characters (a limit on work, not on sense:
/// no real rate or share needs more).
const MAX_DECIMAL_CHARS: usize = 64;
/// Largest decimal exponent accepted (`1e300`), either sign.
const MAX_EXPONENT: i64 = 300;

/// A decimal number exactly as a flag wrote it (`1.5`, `0.2`, `5e-2`).
///
/// Keeps the text for messages and the exact rational for comparisons, so
/// a limit is never rounded to binary before it is compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decimal {
    text: String,
    /// Boxed: flags hold several decimals, and a command's flags stay small.
    value: Box<BigRational>,
}

/// Why a text is not a decimal number.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecimalError {
    /// Not of the form `[+|-]digits[.digits][e[+|-]digits]`.
    #[error("{0:?} is not a decimal number (e.g. 1.5, 0.05 or 5e-2)")]
    Syntax(String),
    /// More characters or a larger exponent than the gate accepts.
    #[error(
        "{0:?} is too long or its exponent too large (at most {MAX_DECIMAL_CHARS} characters, exponent within ±{MAX_EXPONENT})"
    )]
    TooLarge(String),
}

impl Decimal {
    /// The exact value.
    pub fn value(&self) -> &BigRational {
        &self.value
    }

    /// The nearest double (for JSON output and display).
    pub fn to_f64(&self) -> f64 {
        nearest_f64(&self.value)
    }

    /// The decimal a flag most likely wrote for `x`: its shortest form that
    /// reads back as `x` (`1.5`, `0.2`), so a limit parsed as a double can be
    /// compared exactly too. `None` for a non-finite `x` or one whose
    /// shortest form is longer than a flag may be.
    pub fn from_f64_shortest(x: f64) -> Option<Decimal> {
        if !x.is_finite() {
            return None;
        }
        x.to_string().parse().ok()
    }

    /// Whether the value is zero (`0`, `0.0`, `0e5`).
    pub fn is_zero(&self) -> bool {
        self.value.is_zero()
    }

    /// Whether the value is below zero.
    pub fn is_negative(&self) -> bool {
        self.value.is_negative()
    }

    /// A decimal from a whole number (for defaults written in code).
    pub fn from_integer(n: i64) -> Decimal {
        Decimal {
            text: n.to_string(),
            value: Box::new(BigRational::from_integer(BigInt::from(n))),
        }
    }
}

impl fmt::Display for Decimal {
    /// The text as written.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl FromStr for Decimal {
    type Err = DecimalError;

    fn from_str(text: &str) -> Result<Decimal, DecimalError> {
        let syntax = || DecimalError::Syntax(text.to_owned());
        if text.chars().count() > MAX_DECIMAL_CHARS {
            return Err(DecimalError::TooLarge(text.to_owned()));
        }
        let (negative, rest) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let (significand, exponent) = match rest.find(['e', 'E']) {
            Some(at) => (&rest[..at], Some(&rest[at + 1..])),
            None => (rest, None),
        };
        let (whole, fraction) = significand.split_once('.').unwrap_or((significand, ""));
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if whole.len() + fraction.len() == 0 || !all_digits(whole) || !all_digits(fraction) {
            return Err(syntax());
        }
        let exponent: i64 = match exponent {
            None => 0,
            Some(e) => {
                let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
                if digits.is_empty() || !all_digits(digits) {
                    return Err(syntax());
                }
                e.parse()
                    .map_err(|_| DecimalError::TooLarge(text.to_owned()))?
            }
        };
        if exponent.abs() > MAX_EXPONENT {
            return Err(DecimalError::TooLarge(text.to_owned()));
        }
        let digits: BigInt = format!("{whole}{fraction}").parse().map_err(|_| syntax())?;
        // value = digits × 10^(exponent − len(fraction)); |exponent| and the
        // length are both bounded above, so the power is small.
        let scale = exponent - fraction.len() as i64;
        let ten = BigInt::from(10);
        let power = num_traits::pow(ten, scale.unsigned_abs() as usize);
        let mut value = if scale >= 0 {
            BigRational::from_integer(digits * power)
        } else {
            BigRational::new(digits, power)
        };
        if negative {
            value = -value;
        }
        Ok(Decimal {
            text: text.to_owned(),
            value: Box::new(value),
        })
    }
}

/// The exact value of a finite double; `None` for NaN or an infinity.
pub fn exact(x: f64) -> Option<BigRational> {
    BigRational::from_float(x)
}

/// The double nearest to `r` (ties to even).
pub fn nearest_f64(r: &BigRational) -> f64 {
    r.to_f64().unwrap_or(f64::NAN)
}

/// Whether `pass` requests in the window `[start_ms, end_ms)` are *more*
/// than `min_per_s × (1 + margin)` per second, computed exactly:
/// `pass × 1000 > min × (1 + margin) × (end − start)`, with the window bounds
/// at their exact double values. Equality refuses, whatever the digits.
/// A window that is not finite or not positive never admits.
pub fn goodput_exceeds(
    pass: u64,
    start_ms: f64,
    end_ms: f64,
    min_per_s: &Decimal,
    margin: &Decimal,
) -> bool {
    let (Some(start), Some(end)) = (exact(start_ms), exact(end_ms)) else {
        return false;
    };
    let span_ms = end - start;
    if !span_ms.is_positive() {
        return false;
    }
    let measured = BigRational::from_integer(BigInt::from(pass) * BigInt::from(1000));
    measured > required_per_s(min_per_s, margin) * span_ms
}

/// `min × (1 + margin)`, exactly.
pub fn required_per_s(min_per_s: &Decimal, margin: &Decimal) -> BigRational {
    min_per_s.value() * (BigRational::from_integer(BigInt::from(1)) + margin.value())
}

/// Whether `part / whole ≤ ceiling`, exactly (`false` for an empty whole:
/// no evidence is never an admission).
pub fn share_at_most(part: u64, whole: u64, ceiling: &Decimal) -> bool {
    if whole == 0 {
        return false;
    }
    BigRational::new(BigInt::from(part), BigInt::from(whole)) <= *ceiling.value()
}

/// Whether `part / whole ≥ floor`, exactly (`false` for an empty whole: no
/// evidence is never an admission). The quality gate's comparison.
pub fn share_at_least(part: u64, whole: u64, floor: &Decimal) -> bool {
    if whole == 0 {
        return false;
    }
    BigRational::new(BigInt::from(part), BigInt::from(whole)) >= *floor.value()
}

/// Whether the double `x` is at least `floor`, exactly (`false` for NaN or
/// an infinity): an imported figure against the quality gate.
pub fn at_least(x: f64, floor: &Decimal) -> bool {
    exact(x).is_some_and(|x| x >= *floor.value())
}

/// Whether a measured latency is at most `limit`. Latencies are doubles
/// computed from the trace's times, and the trace's own gates are judged in
/// doubles (docs/contract.md §6.5), so the limit is read the way a trace
/// number is (the nearest double) and compared with the measured double:
/// `--max-p95-ttft-ms 0.1` admits a p95 the trace wrote as `0.1`.
/// `false` for NaN.
pub fn latency_at_most(measured: f64, limit: &Decimal) -> bool {
    measured <= limit.to_f64()
}

impl Default for Decimal {
    /// Zero.
    fn default() -> Decimal {
        Decimal {
            text: "0".to_owned(),
            value: Box::new(BigRational::zero()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        s.parse().expect("decimal")
    }

    #[test]
    fn decimals_parse_to_their_exact_value() {
        assert_eq!(d("1.5").value(), &BigRational::new(3.into(), 2.into()));
        assert_eq!(d("0.2").value(), &BigRational::new(1.into(), 5.into()));
        assert_eq!(d("5e-2").value(), &BigRational::new(1.into(), 20.into()));
        assert_eq!(d("+.5").value(), &BigRational::new(1.into(), 2.into()));
        assert_eq!(d("12.").value(), &BigRational::from_integer(12.into()));
        assert_eq!(d("-3E1").value(), &BigRational::from_integer((-30).into()));
        assert_eq!(d("0.2").to_string(), "0.2");
        assert_eq!(d("0.1").to_f64(), 0.1);
    }

    #[test]
    fn anything_else_is_refused_with_its_text() {
        for bad in [
            "", ".", "e5", "1e", "1.2.3", "NaN", "inf", "0x10", "1 ", "--1", "1e+",
        ] {
            assert!(
                matches!(bad.parse::<Decimal>(), Err(DecimalError::Syntax(t)) if t == bad),
                "{bad:?}"
            );
        }
        assert!(matches!(
            "1e301".parse::<Decimal>(),
            Err(DecimalError::TooLarge(_))
        ));
        assert!(matches!(
            "1".repeat(65).parse::<Decimal>(),
            Err(DecimalError::TooLarge(_))
        ));
    }

    #[test]
    fn one_and_a_half_with_a_fifth_margin_is_exactly_one_point_eight() {
        // 18 passes in 10 s = 1.8/s; 1.5 × 1.2 = 1.8 exactly → not more.
        assert!(!goodput_exceeds(18, 0.0, 10_000.0, &d("1.5"), &d("0.2")));
        assert!(!goodput_exceeds(18, 0.0, 10_000.0, &d("1.8"), &d("0")));
        assert!(goodput_exceeds(19, 0.0, 10_000.0, &d("1.5"), &d("0.2")));
        assert!(goodput_exceeds(18, 0.0, 10_000.0, &d("1.79"), &d("0")));
    }

    #[test]
    fn shares_and_limits_compare_exactly() {
        // 1 of 20 = 0.05 exactly: at the ceiling passes; 0.049 refuses.
        assert!(share_at_most(1, 20, &d("0.05")));
        assert!(!share_at_most(1, 20, &d("0.049")));
        assert!(!share_at_most(0, 0, &d("1")));
        // A latency is compared as the trace's gates are: in doubles.
        assert!(latency_at_most(0.1, &d("0.1")));
        assert!(latency_at_most(1200.0, &d("1200")));
        assert!(!latency_at_most(1200.5, &d("1200")));
        assert!(!latency_at_most(f64::NAN, &d("1200")));
    }
}
