//! Confidence intervals for the headline figures, and for the difference of
//! two runs' figures. Every method is exact or closed-form: no resampling, so
//! the same counts and values always give the same bounds, to the bit.
//!
//! - **Shares** (pass, failure, censored): the *Wilson score interval*. With
//!   `x` of `n`, `p = x/n` and `z` the two-sided normal quantile,
//!   `centre = (p + z²/2n) / (1 + z²/n)` and
//!   `half = z·√(p(1−p)/n + z²/4n²) / (1 + z²/n)`; an empty cohort has none.
//! - **Rates** (goodput/s): the *exact Poisson (Garwood) interval* on the
//!   count `k`, divided by the window seconds. The lower bound `λ_L` solves
//!   `P(X ≥ k | λ_L) = α/2` (0 when `k = 0`) and the upper bound `λ_U` solves
//!   `P(X ≤ k | λ_U) = α/2`. Those tails are the regularized incomplete gamma
//!   functions `P(k, λ)` and `Q(k + 1, λ)` (the chi-square relation
//!   `λ_L = χ²(α/2; 2k)/2`, `λ_U = χ²(1 − α/2; 2k + 2)/2`); both are
//!   monotone in `λ`, so each bound is found by bisection to the last bit.
//! - **Quantiles** (p50/p95/p99, nearest rank): the *distribution-free
//!   order-statistic interval*. For `n` values and quantile `q`, the count of
//!   values below the true quantile is Binomial(n, q), so
//!   `P(X₍ₗ₎ ≤ ξ_q ≤ X₍ᵤ₎) = F(u − 1) − F(l − 1)` with `F` the binomial CDF.
//!   With equal tails, `l` is the largest rank with `F(l − 1) ≤ α/2` and `u`
//!   the smallest with `F(u − 1) ≥ 1 − α/2`; the coverage actually reached
//!   (≥ the declared one) is reported beside them. When `(1 − q)ⁿ > α/2` or
//!   `qⁿ > α/2` no such ranks exist: the interval is null, with a reason
//!   naming the smallest `n` that would have one. A tail that *equals* α/2
//!   is enough (3 values at 75 %: ranks (1, 3) cover 1 − 2 × 0.5³ = 0.75
//!   exactly), so every comparison with α/2 allows a relative slack of
//!   [`TAIL_SLACK`]: the tabulated CDF carries rounding of about 10⁻¹⁵, and
//!   without the slack an exact boundary falls on either side by chance. A
//!   coverage that rounds under the level it meets exactly (0.75 computed
//!   as 0.7499999999999999) is reported as the level.
//! - **Differences** (B − A): the *MOVER* (method of variance estimates
//!   recovery, Zou & Donner 2008). For estimates `a ∈ [a_L, a_U]` and
//!   `b ∈ [b_L, b_U]`, `d = b − a` has
//!   `L = d − √((b − b_L)² + (a_U − a)²)` and
//!   `U = d + √((b_U − b)² + (a − a_L)²)`. With Wilson intervals this is
//!   exactly *Newcombe's hybrid score interval* (his method 10) for two
//!   proportions; the same recovery is applied to the exact Poisson
//!   intervals of two rates and to the order-statistic intervals of two
//!   quantiles.

pub mod clustered;

use crate::stats::Percentile;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, Normal};
use statrs::function::gamma::{checked_gamma_lr, checked_gamma_ur};

/// The method names written into receipts and comparisons, so a reader can
/// redo every bound.
pub mod method {
    /// Shares.
    pub const SHARE: &str = "wilson-score";
    /// Rates per window second.
    pub const RATE: &str = "exact-poisson-garwood";
    /// Nearest-rank percentiles.
    pub const QUANTILE: &str = "order-statistic-binomial-equal-tails";
    /// Differences of two proportions (Newcombe's hybrid score, method 10).
    pub const SHARE_DIFFERENCE: &str = "newcombe-hybrid-score";
    /// Differences of two rates.
    pub const RATE_DIFFERENCE: &str = "mover-exact-poisson";
    /// Differences of two quantiles.
    pub const QUANTILE_DIFFERENCE: &str = "mover-order-statistic";
    /// Percentiles of values pooled over rows (inter-token gaps): Woodruff's
    /// interval with the row-clustered variance ([`super::clustered`]).
    pub const CLUSTERED_QUANTILE: &str = super::clustered::QUANTILE;
    /// Shares of units pooled over rows (reasoning tokens): Wilson at the
    /// row-clustered effective number of trials.
    pub const CLUSTERED_SHARE: &str = super::clustered::SHARE;
    /// Differences of two pooled percentiles: the MOVER on the two
    /// row-clustered intervals.
    pub const CLUSTERED_QUANTILE_DIFFERENCE: &str = "mover-woodruff-row-clustered";
    /// Differences of two pooled shares: the MOVER on the two row-clustered
    /// Wilson intervals (Newcombe's construction).
    pub const CLUSTERED_SHARE_DIFFERENCE: &str = "newcombe-row-clustered";
}

/// A confidence level strictly between 0.5 and 1 (the share of repeated runs
/// whose interval would cover the true value). Checked once, at the edge,
/// so the statistics below never see a nonsensical level.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Confidence(f64);

impl Eq for Confidence {}

impl Default for Confidence {
    fn default() -> Self {
        Confidence(Self::DEFAULT)
    }
}

/// A confidence level outside the accepted range.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("confidence {0} is out of range: give a level in [0.5, 0.9999], e.g. 0.95")]
pub struct ConfidenceError(pub f64);

impl Confidence {
    /// The level used when none is given.
    pub const DEFAULT: f64 = 0.95;

    /// A level in [0.5, 0.9999].
    pub fn new(level: f64) -> Result<Confidence, ConfidenceError> {
        if (0.5..=0.9999).contains(&level) {
            Ok(Confidence(level))
        } else {
            Err(ConfidenceError(level))
        }
    }

    /// The level, e.g. 0.95.
    pub fn level(self) -> f64 {
        self.0
    }

    /// α = 1 − level: the two tails together.
    pub fn alpha(self) -> f64 {
        1.0 - self.0
    }

    /// The two-sided standard normal quantile z with P(|Z| ≤ z) = level
    /// (1.959963984540054 at 0.95).
    pub fn z(self) -> f64 {
        normal_quantile(1.0 - self.alpha() / 2.0)
    }
}

/// The standard normal quantile Φ⁻¹(p), p in (0, 1).
pub fn normal_quantile(p: f64) -> f64 {
    match Normal::new(0.0, 1.0) {
        Ok(n) => n.inverse_cdf(p.clamp(f64::MIN_POSITIVE, 1.0 - f64::EPSILON)),
        Err(_) => f64::NAN,
    }
}

/// A two-sided interval `[lower, upper]`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Interval {
    /// Lower bound.
    pub lower: f64,
    /// Upper bound.
    pub upper: f64,
}

/// The Wilson score interval of `x` successes in `n` trials; `None` when
/// `n = 0` (or `x > n`, which no count can be).
pub fn wilson(x: u64, n: u64, confidence: Confidence) -> Option<Interval> {
    if n == 0 || x > n {
        return None;
    }
    let (xf, nf) = (x as f64, n as f64);
    let p = xf / nf;
    let z = confidence.z();
    let z2 = z * z;
    let denom = 1.0 + z2 / nf;
    let centre = (p + z2 / (2.0 * nf)) / denom;
    let half = z * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt() / denom;
    // At x = 0 and x = n the formula gives 0 and 1 up to rounding; say so exactly.
    let lower = if x == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let upper = if x == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Some(Interval { lower, upper })
}

/// The exact (Garwood) Poisson interval of the mean of a count `k`.
pub fn poisson_exact(k: u64, confidence: Confidence) -> Interval {
    let tail = confidence.alpha() / 2.0;
    let kf = k as f64;
    let lower = if k == 0 {
        0.0
    } else {
        // P(X ≥ k | λ) = P(k, λ), increasing in λ.
        solve_increasing(|lambda| lower_gamma(kf, lambda), tail, kf)
    };
    // P(X ≤ k | λ) = Q(k + 1, λ), decreasing in λ: find where 1 − Q = 1 − tail.
    let upper = solve_increasing(|lambda| 1.0 - upper_gamma(kf + 1.0, lambda), 1.0 - tail, kf);
    Interval { lower, upper }
}

fn lower_gamma(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    checked_gamma_lr(a, x).unwrap_or(f64::NAN)
}

fn upper_gamma(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    checked_gamma_ur(a, x).unwrap_or(f64::NAN)
}

/// The λ ≥ 0 where an increasing `f` crosses `target`, by bisection until
/// the bracket cannot shrink (deterministic; about 60 to 1,100 steps).
fn solve_increasing(f: impl Fn(f64) -> f64, target: f64, k: f64) -> f64 {
    let mut lo = 0.0_f64;
    let mut hi = k + 10.0 * (k + 1.0).sqrt() + 10.0;
    while f(hi) < target {
        hi *= 2.0;
    }
    loop {
        let mid = lo + (hi - lo) / 2.0;
        if mid <= lo || mid >= hi {
            return mid;
        }
        if f(mid) < target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
}

/// A distribution-free interval of one nearest-rank percentile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuantileInterval {
    /// The value at `lowerRank`, or null when there is no interval.
    pub lower: Option<f64>,
    /// The value at `upperRank`, or null when there is no interval.
    pub upper: Option<f64>,
    /// 1-based rank of the lower bound among the sorted values.
    pub lower_rank: Option<u64>,
    /// 1-based rank of the upper bound among the sorted values.
    pub upper_rank: Option<u64>,
    /// The binomial coverage F(upperRank − 1) − F(lowerRank − 1) these ranks
    /// give (at least the declared confidence).
    pub coverage: Option<f64>,
    /// Why there is no interval (null when there is one).
    pub reason: Option<String>,
}

/// The relative slack of every comparison with a tail α/2 (module docs):
/// a tail within `α/2 · (1 + 10⁻⁹)` counts as at most α/2. Far above the
/// CDF's rounding (about 10⁻¹⁵ relative at the small `n` where the boundary
/// matters), far below any coverage a reader could tell apart.
pub const TAIL_SLACK: f64 = 1e-9;

/// α/2 with its slack: the largest tail that still counts as α/2.
fn allowed_tail(confidence: Confidence) -> f64 {
    let tail = confidence.alpha() / 2.0;
    tail + tail * TAIL_SLACK
}

/// The ranks `(l, u)` (1-based) of the equal-tailed order-statistic interval
/// of quantile `p`/100 among `n` values, with their exact coverage; `None`
/// exactly when `n` is under [`min_n_for_quantile`] (one rule decides both,
/// so a refusal and the size it names always agree).
pub fn quantile_ranks(n: u64, p: u32, confidence: Confidence) -> Option<(u64, u64, f64)> {
    quantile_ranks_at(n, Percentile::whole(p), confidence)
}

/// [`quantile_ranks`] of any percentile in (0, 100), fractions included (99.9).
pub fn quantile_ranks_at(n: u64, p: Percentile, confidence: Confidence) -> Option<(u64, u64, f64)> {
    if n == 0 || n < min_n_for_quantile_at(p, confidence) {
        return None;
    }
    let q = p.quantile();
    let tail = allowed_tail(confidence);
    let cdf = BinomialCdf::new(n, q);
    // l: the largest l >= 1 with F(l − 1) <= tail; F is non-decreasing.
    let l = 1 + last_at_most(&cdf, tail);
    // u: the smallest u <= n with F(u − 1) >= 1 − tail.
    let u = 1 + first_at_least(&cdf, 1.0 - tail);
    // Each tail is at most α/2 · (1 + slack), so the coverage is at least
    // the level less α · slack; under the level it is a boundary met exactly
    // (rounding apart), and is reported as the level it meets.
    let coverage = cdf.at(u - 1) - cdf.at(l - 1);
    Some((l, u, coverage.max(confidence.level())))
}

/// The largest k in [0, n] with F(k) <= target (0 when even F(0) is over it).
fn last_at_most(cdf: &BinomialCdf, target: f64) -> u64 {
    let (mut lo, mut hi) = (0, cdf.n);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if cdf.at(mid) <= target {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// The smallest k in [0, n − 1] with F(k) >= target (n − 1 when even F(n − 1) is under it).
fn first_at_least(cdf: &BinomialCdf, target: f64) -> u64 {
    let (mut lo, mut hi) = (0, cdf.n - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if cdf.at(mid) >= target {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo
}

/// The smallest `n` for which [`quantile_ranks`] gives an interval:
/// both `(1 − q)ⁿ` and `qⁿ` at most α/2 (with its [`TAIL_SLACK`]).
pub fn min_n_for_quantile(p: u32, confidence: Confidence) -> u64 {
    min_n_for_quantile_at(Percentile::whole(p), confidence)
}

/// [`min_n_for_quantile`] of any percentile in (0, 100), fractions included.
pub fn min_n_for_quantile_at(p: Percentile, confidence: Confidence) -> u64 {
    let q = p.quantile();
    let worst = q.max(1.0 - q);
    let tail = allowed_tail(confidence);
    if worst >= 1.0 {
        // p0 or p100: no sample size bounds an extreme's interval.
        return u64::MAX;
    }
    let mut n = 1_u64;
    let mut power = worst;
    while power > tail {
        n += 1;
        power *= worst;
    }
    n
}

/// The binomial CDF of Binomial(n, q), tabulated over the span where it is
/// neither 0 nor 1 to within 1e-30 of the peak: probabilities are built by
/// the ratio recurrence outward from the mode and normalized by their sum, so
/// a million trials cost a few tens of thousands of steps and nothing
/// underflows.
struct BinomialCdf {
    n: u64,
    first: u64,
    cumulative: Vec<f64>,
}

impl BinomialCdf {
    const CUTOFF: f64 = 1e-30;

    fn new(n: u64, q: f64) -> BinomialCdf {
        let nf = n as f64;
        let mode = (((nf + 1.0) * q).floor() as u64).min(n);
        let ratio = q / (1.0 - q);
        let mut below = Vec::new();
        let mut w = 1.0_f64;
        let mut k = mode;
        while k > 0 {
            // pmf(k − 1) = pmf(k) · k / (n − k + 1) · (1 − q) / q
            w *= k as f64 / (nf - k as f64 + 1.0) / ratio;
            if w < Self::CUTOFF {
                break;
            }
            below.push(w);
            k -= 1;
        }
        let first = mode - below.len() as u64;
        let mut weights: Vec<f64> = below.into_iter().rev().collect();
        weights.push(1.0);
        let mut w = 1.0_f64;
        let mut k = mode;
        while k < n {
            // pmf(k + 1) = pmf(k) · (n − k) / (k + 1) · q / (1 − q)
            w *= (nf - k as f64) / (k as f64 + 1.0) * ratio;
            if w < Self::CUTOFF {
                break;
            }
            weights.push(w);
            k += 1;
        }
        let total: f64 = weights.iter().sum();
        let mut running = 0.0;
        let cumulative = weights
            .iter()
            .map(|w| {
                running += w;
                running / total
            })
            .collect();
        BinomialCdf {
            n,
            first,
            cumulative,
        }
    }

    /// F(k) = P(B <= k).
    fn at(&self, k: u64) -> f64 {
        if k < self.first {
            return 0.0;
        }
        match self.cumulative.get((k - self.first) as usize) {
            Some(f) => *f,
            None => 1.0,
        }
    }
}

/// The order-statistic interval of nearest-rank percentile `p` of ascending
/// `sorted` values.
pub fn quantile_interval(sorted: &[f64], p: u32, confidence: Confidence) -> QuantileInterval {
    quantile_interval_at(sorted, Percentile::whole(p), confidence)
}

/// [`quantile_interval`] of any percentile in (0, 100), fractions included (99.9).
pub fn quantile_interval_at(
    sorted: &[f64],
    p: Percentile,
    confidence: Confidence,
) -> QuantileInterval {
    let n = sorted.len() as u64;
    match quantile_ranks_at(n, p, confidence) {
        Some((l, u, coverage)) => QuantileInterval {
            lower: sorted.get((l - 1) as usize).copied(),
            upper: sorted.get((u - 1) as usize).copied(),
            lower_rank: Some(l),
            upper_rank: Some(u),
            coverage: Some(coverage),
            reason: None,
        },
        None => QuantileInterval {
            lower: None,
            upper: None,
            lower_rank: None,
            upper_rank: None,
            coverage: None,
            reason: Some(format!(
                "{n} values are too few for a distribution-free {}% interval of p{p}: it needs at least {}",
                percent(confidence.level()),
                min_n_for_quantile_at(p, confidence)
            )),
        },
    }
}

/// A level as a percentage without trailing zeros (0.95 → "95", 0.999 → "99.9").
pub fn percent(level: f64) -> String {
    let s = format!("{:.4}", level * 100.0);
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// A point estimate with its interval, the input of [`mover`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Estimate {
    /// The point estimate.
    pub value: f64,
    /// Its interval.
    pub interval: Interval,
}

/// The MOVER interval of `b − a` (see the module header): with Wilson
/// intervals this is Newcombe's hybrid score interval.
pub fn mover(a: Estimate, b: Estimate) -> Interval {
    let d = b.value - a.value;
    let lower =
        d - ((b.value - b.interval.lower).powi(2) + (a.interval.upper - a.value).powi(2)).sqrt();
    let upper =
        d + ((b.interval.upper - b.value).powi(2) + (a.value - a.interval.lower).powi(2)).sqrt();
    Interval { lower, upper }
}

/// Newcombe's hybrid score interval of `xb/nb − xa/na`; `None` when either
/// sample is empty.
pub fn newcombe(xa: u64, na: u64, xb: u64, nb: u64, confidence: Confidence) -> Option<Interval> {
    let a = Estimate {
        value: xa as f64 / na as f64,
        interval: wilson(xa, na, confidence)?,
    };
    let b = Estimate {
        value: xb as f64 / nb as f64,
        interval: wilson(xb, nb, confidence)?,
    };
    Some(mover(a, b))
}

/// The statistical power the minimum detectable difference is stated at.
pub const POWER: f64 = 0.8;

/// The smallest true difference this pair would detect with probability
/// [`POWER`] at this size: `(z_{1−α/2} + z_power) · SE`, with the standard
/// error recovered from the difference interval, `SE = (U − L) / (2 z_{1−α/2})`.
pub fn minimum_detectable(difference: Interval, confidence: Confidence) -> f64 {
    let z = confidence.z();
    let se = (difference.upper - difference.lower) / (2.0 * z);
    (z + normal_quantile(POWER)) * se
}

/// Requests per run needed to detect `observed` with probability [`POWER`]:
/// every interval here narrows as 1/√n, so
/// `n_needed = n · (MDD / |observed|)²` with `n` the requests per run now.
/// `None` when nothing was observed to differ.
pub fn required_requests(n_now: f64, mdd: f64, observed: f64) -> Option<u64> {
    if observed == 0.0 || !observed.is_finite() || !mdd.is_finite() {
        return None;
    }
    let needed = n_now * (mdd / observed).powi(2);
    needed.is_finite().then(|| needed.ceil() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn ci95() -> Confidence {
        Confidence::default()
    }

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} ± {tol}");
    }

    #[test]
    fn z_of_the_common_levels() {
        // Tables of the standard normal: 1.959964 (95 %), 1.644854 (90 %),
        // 2.575829 (99 %); Φ⁻¹(0.8) = 0.841621.
        close(ci95().z(), 1.959_964, 1e-6);
        close(Confidence::new(0.9).unwrap().z(), 1.644_854, 1e-6);
        close(Confidence::new(0.99).unwrap().z(), 2.575_829, 1e-6);
        close(normal_quantile(0.8), 0.841_621, 1e-6);
    }

    #[test]
    fn confidence_outside_its_range_is_refused() {
        for bad in [0.0, 0.49, 1.0, 0.99991, f64::NAN, -0.95, 95.0] {
            assert!(Confidence::new(bad).is_err(), "{bad}");
        }
        assert!(Confidence::new(0.5).is_ok() && Confidence::new(0.9999).is_ok());
    }

    #[test]
    fn wilson_five_of_ten() {
        // p = 0.5, z² = 3.841459, z²/n = 0.3841459, denom = 1.3841459;
        // centre = (0.5 + 0.1920729) / 1.3841459 = 0.5;
        // half = 1.959964 × √(0.025 + 3.841459/400) / 1.3841459
        //      = 1.959964 × √0.0346036 / 1.3841459 = 0.3645936 / 1.3841459 = 0.2634060.
        let i = wilson(5, 10, ci95()).unwrap();
        close(i.lower, 0.236_594, 1e-6);
        close(i.upper, 0.763_406, 1e-6);
    }

    #[test]
    fn wilson_at_the_ends() {
        // x = 0, n = 10: upper = (z²/n) / (1 + z²/n) = 0.3841459 / 1.3841459 = 0.2775328.
        let i = wilson(0, 10, ci95()).unwrap();
        assert_eq!(i.lower, 0.0);
        close(i.upper, 0.277_533, 1e-6);
        // x = n = 10: the mirror image.
        let i = wilson(10, 10, ci95()).unwrap();
        assert_eq!(i.upper, 1.0);
        close(i.lower, 1.0 - 0.277_533, 1e-6);
        assert_eq!(wilson(0, 0, ci95()), None);
    }

    #[test]
    fn wilson_matches_newcombes_published_single_proportion() {
        // Newcombe (1998), single proportion example 81/263: 0.2553 to 0.3662.
        let i = wilson(81, 263, ci95()).unwrap();
        close(i.lower, 0.2553, 5e-5);
        close(i.upper, 0.3662, 5e-5);
    }

    #[test]
    fn poisson_exact_matches_the_garwood_table() {
        // Published exact 95 % limits (Garwood 1936; χ² relation):
        // k = 0: [0, 3.6889]   (upper = −ln 0.025 = 3.68888)
        // k = 1: [0.0253, 5.5716]  (lower = −ln 0.975 = 0.025318)
        // k = 5: [1.6235, 11.6683]
        // k = 10: [4.7954, 18.3904]
        let cases = [
            (0, 0.0, 3.688_879),
            (1, 0.025_318, 5.571_643),
            (5, 1.623_486, 11.668_332),
            (10, 4.795_389, 18.390_356),
        ];
        for (k, lo, hi) in cases {
            let i = poisson_exact(k, ci95());
            close(i.lower, lo, 1e-5);
            close(i.upper, hi, 1e-5);
        }
    }

    #[test]
    fn poisson_exact_for_a_large_count_is_near_the_normal_one() {
        // k = 10,000, by the Wilson–Hilferty cube-root form of the χ² quantiles
        // (accurate to about 0.01 at this size):
        // lower = k (1 − 1/9k − z/3√k)³ = 10⁴ × 0.99345568³ = 9,804.95;
        // upper = (k + 1)(1 − 1/9(k + 1) + z/3√(k + 1))³ = 10,001 × 1.00652177³ = 10,197.95.
        let i = poisson_exact(10_000, ci95());
        close(i.lower, 9_804.95, 0.05);
        close(i.upper, 10_197.95, 0.05);
    }

    #[test]
    fn median_of_ten_uses_ranks_two_and_nine() {
        // Binomial(10, 0.5): F(1) = 11/1024 = 0.0107 <= 0.025 < F(2) = 56/1024, so l = 2;
        // F(7) = 968/1024 = 0.9453 < 0.975 <= F(8) = 1013/1024, so u = 9;
        // coverage = (1013 − 11)/1024 = 0.978515625.
        let (l, u, c) = quantile_ranks(10, 50, ci95()).unwrap();
        assert_eq!((l, u), (2, 9));
        close(c, 1002.0 / 1024.0, 1e-12);
        let v: Vec<f64> = (1..=10).map(|i| f64::from(i) * 10.0).collect();
        let q = quantile_interval(&v, 50, ci95());
        assert_eq!((q.lower, q.upper), (Some(20.0), Some(90.0)));
        assert_eq!(q.reason, None);
    }

    #[test]
    fn p95_needs_seventy_two_values() {
        // 0.95^n <= 0.025 first at n = 72 (0.95^71 = 0.02624, 0.95^72 = 0.02493).
        assert_eq!(min_n_for_quantile(95, ci95()), 72);
        assert_eq!(quantile_ranks(71, 95, ci95()), None);
        // n = 72: u = 72 (F(71) = 1 − 0.95^72 = 0.97507 >= 0.975).
        let (_, u, _) = quantile_ranks(72, 95, ci95()).unwrap();
        assert_eq!(u, 72);
        // p99: 0.99^367 = 0.02501 > 0.025 >= 0.99^368 = 0.02476.
        assert_eq!(min_n_for_quantile(99, ci95()), 368);
        // p50: 0.5^5 = 0.03125 > 0.025 >= 0.5^6.
        assert_eq!(min_n_for_quantile(50, ci95()), 6);
        let q = quantile_interval(&[1.0; 10], 95, ci95());
        assert_eq!(q.lower, None);
        assert_eq!(
            q.reason.as_deref(),
            Some("10 values are too few for a distribution-free 95% interval of p95: it needs at least 72")
        );
    }

    #[test]
    fn a_coverage_equal_to_the_confidence_is_enough() {
        // p50 of 3 values at 75 %: α/2 = 0.125 = 0.5³ = F(0), so l = 1;
        // F(1) = 4/8 > 0.125. 1 − α/2 = 0.875 = F(2) = 7/8, so u = 3;
        // coverage = F(2) − F(0) = 7/8 − 1/8 = 0.75, exactly the level.
        let c75 = Confidence::new(0.75).unwrap();
        assert_eq!(min_n_for_quantile(50, c75), 3);
        let (l, u, c) = quantile_ranks(3, 50, c75).unwrap();
        assert_eq!((l, u), (1, 3));
        // F(2) − F(0) rounds to 0.7499999999999999: reported as the level it meets.
        assert_eq!(c, 0.75);
        let q = quantile_interval(&[10.0, 20.0, 30.0], 50, c75);
        assert_eq!((q.lower, q.upper), (Some(10.0), Some(30.0)));
        assert_eq!(
            (q.lower_rank, q.upper_rank, q.reason),
            (Some(1), Some(3), None)
        );
        // Two values: 0.5² = 0.25 > 0.125.
        let q = quantile_interval(&[10.0, 20.0], 50, c75);
        assert_eq!(
            q.reason.as_deref(),
            Some("2 values are too few for a distribution-free 75% interval of p50: it needs at least 3")
        );
    }

    #[test]
    fn a_coverage_just_under_the_confidence_still_refuses() {
        // 75.00001 %: α/2 = 0.12499995 < 0.125 = 0.5³ (beyond the 10⁻⁹ slack),
        // so 3 values are too few and 4 (0.5⁴ = 0.0625) are the least.
        let c = Confidence::new(0.750_000_1).unwrap();
        assert_eq!(quantile_ranks(3, 50, c), None);
        assert_eq!(min_n_for_quantile(50, c), 4);
        let q = quantile_interval(&[10.0, 20.0, 30.0], 50, c);
        assert_eq!(
            q.reason.as_deref(),
            Some("3 values are too few for a distribution-free 75% interval of p50: it needs at least 4")
        );
    }

    #[test]
    fn more_boundaries_by_hand() {
        // p50, n = 5, level 1 − 2/32 = 0.9375: α/2 = 1/32 = F(0), F(1) = 6/32,
        // so l = 1; F(3) = 26/32 < 31/32 = F(4), so u = 5; coverage 30/32.
        let c = Confidence::new(0.9375).unwrap();
        assert_eq!(min_n_for_quantile(50, c), 5);
        let (l, u, cov) = quantile_ranks(5, 50, c).unwrap();
        assert_eq!((l, u), (1, 5));
        close(cov, 0.9375, 1e-12);
        assert_eq!(quantile_ranks(4, 50, c), None);
        // p75, n = 5, level 1 − 2 × 0.75⁵ = 1 − 486/1024 = 0.525390625
        // (α/2 = 243/1024): the upper tail is the one at its boundary.
        // Binomial(5, 0.75) CDF × 1024: 1, 16, 106, 376, 781, 1024.
        // l − 1 = 2 (106 ≤ 243 < 376), u − 1 = 4 (781 = 1024 − 243);
        // coverage (781 − 106)/1024 = 675/1024.
        let c = Confidence::new(0.525_390_625).unwrap();
        assert_eq!(min_n_for_quantile(75, c), 5);
        let (l, u, cov) = quantile_ranks(5, 75, c).unwrap();
        assert_eq!((l, u), (3, 5));
        close(cov, 675.0 / 1024.0, 1e-12);
        assert_eq!(quantile_ranks(4, 75, c), None);
        // An interior boundary: p50, n = 12, level 1 − 2 × 13/4096 = 0.99365234375.
        // F(1) = (1 + 12)/4096 = α/2 and F(2) = 79/4096, so l = 2; by symmetry
        // F(10) = 1 − 13/4096 = 1 − α/2, so u = 11 (not 12); coverage 4070/4096.
        let c = Confidence::new(0.993_652_343_75).unwrap();
        let (l, u, cov) = quantile_ranks(12, 50, c).unwrap();
        assert_eq!((l, u), (2, 11));
        close(cov, 4070.0 / 4096.0, 1e-12);
    }

    #[test]
    fn every_exact_median_boundary_gets_its_exact_ranks() {
        // Binomial(n, ½) has F(k) = S(k)/2ⁿ with S(k) = Σ_{i≤k} C(n, i). At the
        // level 1 − 2F(k) (exact in binary for n ≤ 40), α/2 = F(k) and, by
        // symmetry, 1 − α/2 = F(n − 1 − k): the ranks are (k + 1, n − k) and
        // cover exactly the level.
        let mut checked = 0;
        let mut row = vec![1_u64, 1]; // Pascal's row n: C(n, 0), …, C(n, n)
        for n in 2..=40_u64 {
            row = std::iter::once(1)
                .chain(row.windows(2).map(|w| w[0] + w[1]))
                .chain(std::iter::once(1))
                .collect();
            let mut s = 0_u64; // S(k)
            for k in 0..n {
                s += row[k as usize];
                let level = 1.0 - 2.0 * s as f64 / (1_u64 << n) as f64;
                let Ok(c) = Confidence::new(level) else {
                    continue;
                };
                let (l, u, cov) = quantile_ranks(n, 50, c).unwrap();
                assert_eq!((l, u), (k + 1, n - k), "n = {n}, level {level}");
                close(cov, level, 1e-12);
                if k == 0 {
                    // α/2 = 0.5ⁿ: n is the least size, and n − 1 is refused.
                    assert_eq!(min_n_for_quantile(50, c), n);
                    assert_eq!(quantile_ranks(n - 1, 50, c), None);
                }
                checked += 1;
            }
        }
        assert!(checked > 100, "{checked}");
    }

    #[test]
    fn quantile_ranks_for_a_million_values_are_near_the_normal_ones() {
        // n = 10⁶, q = 0.99: σ = √(n q (1 − q)) = 99.499; the ranks are
        // n q ± z σ = 990,000 ± 195.0, give or take one rank each. One rank
        // more in a tail moves the coverage by about φ(z)/σ = 0.0584/99.5 =
        // 0.0006, so it lands in [0.95, 0.9512].
        let (l, u, c) = quantile_ranks(1_000_000, 99, ci95()).unwrap();
        assert!((989_804..=989_806).contains(&l), "{l}");
        assert!((990_195..=990_197).contains(&u), "{u}");
        assert!((0.95..0.9512).contains(&c), "{c}");
    }

    #[test]
    fn newcombe_matches_his_published_examples() {
        // Newcombe (1998), method 10: 56/70 − 48/80 = 0.2, interval 0.0524 to 0.3339;
        // 9/10 − 3/10 = 0.6, interval 0.1705 to 0.8090.
        let i = newcombe(48, 80, 56, 70, ci95()).unwrap();
        close(i.lower, 0.0524, 5e-5);
        close(i.upper, 0.3339, 5e-5);
        let i = newcombe(3, 10, 9, 10, ci95()).unwrap();
        close(i.lower, 0.1705, 5e-5);
        close(i.upper, 0.8090, 5e-5);
        assert_eq!(newcombe(0, 0, 1, 2, ci95()), None);
    }

    #[test]
    fn mover_by_hand() {
        // a = 10 in [8, 13], b = 15 in [12, 19]: d = 5,
        // L = 5 − √(3² + 3²) = 5 − 4.2426407 = 0.7573593,
        // U = 5 + √(4² + 2²) = 5 + 4.4721360 = 9.4721360.
        let est = |value, lower, upper| Estimate {
            value,
            interval: Interval { lower, upper },
        };
        let i = mover(est(10.0, 8.0, 13.0), est(15.0, 12.0, 19.0));
        close(i.lower, 0.757_359_3, 1e-7);
        close(i.upper, 9.472_136_0, 1e-7);
    }

    #[test]
    fn minimum_detectable_and_required_size_by_hand() {
        // Interval [−0.1, 0.3] at 95 %: SE = 0.4 / (2 × 1.9599640) = 0.10204269;
        // MDD = (1.9599640 + 0.8416212) × 0.10204269 = 2.8015852 × 0.10204269 = 0.2858813.
        let mdd = minimum_detectable(
            Interval {
                lower: -0.1,
                upper: 0.3,
            },
            ci95(),
        );
        close(mdd, 0.285_881_3, 1e-7);
        // 100 requests per run, observed 0.1: 100 × (0.2858813 / 0.1)² = 817.28 → 818.
        assert_eq!(required_requests(100.0, mdd, 0.1), Some(818));
        assert_eq!(required_requests(100.0, mdd, 0.0), None);
    }

    /// Share of `trials` seeded draws whose interval covers the truth.
    fn coverage(trials: u32, draw_covers: impl Fn(&mut ChaCha8Rng) -> bool) -> f64 {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let hits = (0..trials).filter(|_| draw_covers(&mut rng)).count();
        hits as f64 / f64::from(trials)
    }

    #[test]
    fn wilson_covers_the_true_share_about_95_percent_of_the_time() {
        // 2,000 seeded Binomial(200, 0.3) draws.
        let share = coverage(2_000, |rng| {
            let x = (0..200).filter(|_| rng.random::<f64>() < 0.3).count() as u64;
            let i = wilson(x, 200, ci95()).unwrap();
            i.lower <= 0.3 && 0.3 <= i.upper
        });
        eprintln!("wilson coverage {share}");
        assert!((0.93..=0.97).contains(&share), "{share}");
    }

    #[test]
    fn exact_poisson_covers_the_true_mean_about_95_percent_of_the_time() {
        // 2,000 seeded Poisson(30) draws (counting unit-rate arrivals in 30 s).
        let share = coverage(2_000, |rng| {
            let mut t = 0.0;
            let mut k = 0;
            loop {
                t += -(1.0 - rng.random::<f64>()).ln();
                if t > 30.0 {
                    break;
                }
                k += 1;
            }
            let i = poisson_exact(k, ci95());
            i.lower <= 30.0 && 30.0 <= i.upper
        });
        eprintln!("poisson coverage {share}");
        // The exact interval is conservative: at least 95 %, at most 97 %.
        assert!((0.93..=0.97).contains(&share), "{share}");
    }

    #[test]
    fn order_statistic_interval_covers_the_true_p95_at_least_95_percent_of_the_time() {
        // 2,000 seeded samples of 200 uniform values; the true p95 is 0.95.
        let share = coverage(2_000, |rng| {
            let mut v: Vec<f64> = (0..200).map(|_| rng.random::<f64>()).collect();
            v.sort_by(f64::total_cmp);
            let q = quantile_interval(&v, 95, ci95());
            q.lower.unwrap() <= 0.95 && 0.95 <= q.upper.unwrap()
        });
        eprintln!("order-statistic coverage {share}");
        assert!((0.93..=0.98).contains(&share), "{share}");
    }
}
