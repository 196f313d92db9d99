//! Intervals of figures pooled over the units of independent rows: the
//! gaps of many streams (a pooled inter-token percentile), the tokens of
//! many responses (a reasoning share). The rows of an open-loop run are
//! independent draws; the units inside one row are not (a stalled stream
//! contributes many large gaps at once, a slow row shifts all of its gaps,
//! a row that reasons does so for a whole block of tokens), so an interval
//! that counts `M` pooled units as `M` independent trials is far too narrow
//! (docs/intervals.md, "Pooled over rows").
//!
//! Both methods here are closed-form, so the same rows always give the same
//! bounds: the **row-clustered share** (the ratio `R = Σ y_i / Σ m_i` of
//! `y_i` units of interest among `m_i` units of row `i`, with the
//! linearized variance of a ratio estimator over independent rows, turned
//! into an effective number of trials for Wilson's interval), and the
//! **row-clustered quantile** (Woodruff's interval: the row-clustered share
//! interval of the pooled CDF at the percentile, carried back through the
//! pooled order statistics).

use super::{percent, Confidence, Interval, QuantileInterval};
use crate::stats::sort_ascending;

/// The method name of [`clustered_share`].
pub const SHARE: &str = "wilson-row-clustered";
/// The method name of [`clustered_quantile`].
pub const QUANTILE: &str = "woodruff-row-clustered";

/// The effective number of independent trials behind the pooled share of
/// `rows` (`(y_i, m_i)`: units of interest and units of each row), and the
/// share itself. With `k` rows of `m_i > 0`, `M = Σ m_i` and `R = Σ y_i / M`,
/// the variance of `R` over independent rows is
/// `V = k/(k − 1) · Σ (y_i − R m_i)² / M²`, and `n_eff = R(1 − R) / V`
/// (the binomial variance it matches), at most `M`; `M` when `V = 0` (no
/// variation between rows was seen). `None` with fewer than two such rows:
/// one row cannot show how rows vary.
pub fn effective_trials(rows: &[(f64, f64)]) -> Option<(f64, f64)> {
    let used = rows.iter().filter(|(_, m)| *m > 0.0);
    let (k, y, m) = used.clone().fold((0u64, 0.0, 0.0), |(k, y, m), (yi, mi)| {
        (k + 1, y + yi, m + mi)
    });
    if k < 2 {
        return None;
    }
    let share = y / m;
    let sum_sq: f64 = used.map(|(yi, mi)| (yi - share * mi).powi(2)).sum();
    let kf = k as f64;
    let variance = kf / (kf - 1.0) * sum_sq / (m * m);
    let n_eff = if variance > 0.0 {
        (share * (1.0 - share) / variance).min(m)
    } else {
        m
    };
    Some((share, n_eff))
}

/// Wilson's score interval of a share `p` over `n` trials, `n` real (an
/// effective number): the formula of [`super::wilson`] with `x = p·n`,
/// exactly 0 at `p = 0` and 1 at `p = 1`.
pub fn wilson_real(p: f64, n: f64, confidence: Confidence) -> Interval {
    let z = confidence.z();
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    Interval {
        lower: if p <= 0.0 {
            0.0
        } else {
            (centre - half).max(0.0)
        },
        upper: if p >= 1.0 {
            1.0
        } else {
            (centre + half).min(1.0)
        },
    }
}

/// The row-clustered Wilson interval of the pooled share `Σ y_i / Σ m_i`:
/// Wilson's interval at the effective number of trials
/// ([`effective_trials`]); `None` with fewer than two rows of `m_i > 0`.
pub fn clustered_share(rows: &[(f64, f64)], confidence: Confidence) -> Option<Interval> {
    let (share, n_eff) = effective_trials(rows)?;
    Some(wilson_real(share, n_eff, confidence))
}

/// Woodruff's row-clustered interval of the nearest-rank percentile `p` of
/// every value of `rows` pooled. With `M` pooled values sorted as
/// `X₍₁₎ ≤ … ≤ X₍M₎` and `q̂ = X₍⌈pM/100⌉₎`: each row's count `c_i` of values
/// `≤ q̂` gives the row-clustered interval `[p_L, p_U]` of the pooled CDF at
/// `q̂`, centred on the nominal `p/100` (Wilson at `n_eff` of
/// `(c_i, m_i)`); the bounds are the order statistics at ranks
/// `l = max(1, ⌊M·p_L + ½⌋)` and `u = ⌈M·p_U + ½⌉` (the continuity
/// correction that puts the order-statistic interval's ranks at `M·p_L`
/// and `M·p_U` when every row has one value). No interval (a `reason`
/// instead) with fewer than two rows with values, or when `u > M`: the
/// upper bound would lie past the largest value seen.
pub fn clustered_quantile(rows: &[&[f64]], p: u32, confidence: Confidence) -> QuantileInterval {
    let mut pooled: Vec<f64> = rows.iter().flat_map(|r| r.iter().copied()).collect();
    sort_ascending(&mut pooled);
    let m = pooled.len();
    let none = |reason: String| QuantileInterval {
        lower: None,
        upper: None,
        lower_rank: None,
        upper_rank: None,
        coverage: None,
        reason: Some(reason),
    };
    let level = percent(confidence.level());
    if m == 0 {
        return none(format!("no values for a row-clustered {level}% interval of p{p}"));
    }
    let q = f64::from(p) / 100.0;
    let rank = ((q * m as f64).ceil() as usize).clamp(1, m);
    let at = pooled[rank - 1];
    let counts: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| (r.iter().filter(|&&g| g <= at).count() as f64, r.len() as f64))
        .collect();
    let Some((_, n_eff)) = effective_trials(&counts) else {
        return none(format!(
            "fewer than 2 rows with values: a row-clustered {level}% interval of p{p} needs the \
             spread between rows"
        ));
    };
    let band = wilson_real(q, n_eff, confidence);
    let mf = m as f64;
    let l = ((mf * band.lower + 0.5).floor() as usize).max(1);
    let u = (mf * band.upper + 0.5).ceil() as usize;
    if u > m {
        return none(format!(
            "{m} values in {} rows are too few for a row-clustered {level}% interval of p{p}: \
             its upper bound would lie past the largest value (rank {u} of {m})",
            rows.iter().filter(|r| !r.is_empty()).count()
        ));
    }
    QuantileInterval {
        lower: Some(pooled[l - 1]),
        upper: Some(pooled[u - 1]),
        lower_rank: Some(l as u64),
        upper_rank: Some(u as u64),
        coverage: None,
        reason: None,
    }
}
