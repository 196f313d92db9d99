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
//! delete-one-row jackknife variance of a ratio over independent rows,
//! turned into an effective number of trials for Wilson's interval), and the
//! **row-clustered quantile** (Woodruff's interval: the row-clustered share
//! interval of the pooled CDF at the percentile, carried back through the
//! pooled order statistics).

use super::{min_n_for_quantile, percent, Confidence, Interval, QuantileInterval};
use crate::stats::sort_ascending;

/// The method name of [`clustered_share`].
pub const SHARE: &str = "wilson-row-clustered";
/// The method name of [`clustered_quantile`].
pub const QUANTILE: &str = "woodruff-row-clustered";

/// The effective number of independent trials behind the pooled share of
/// `rows` (`(y_i, m_i)`: units of interest and units of each row), and the
/// share itself. With `k` rows of `m_i > 0`, `M = Σ m_i`, `R = Σ y_i / M`,
/// the residuals `e_i = y_i − R m_i` and the leverages `h_i = m_i / M`, the
/// variance of `R` over independent rows is the delete-one-row jackknife's,
/// `V = (k − 1)/k · Σ (e_i / (1 − h_i))² / M²` (leaving row `i` out moves
/// `R` by `−e_i / (M (1 − h_i))`), which with rows of equal length is the
/// linearized `k/(k − 1) · Σ e_i² / M²`, and with one long row (a heavy
/// tail of output lengths) weighs it as the influence it has. Then
/// `n_eff = R(1 − R) / V` (the binomial variance it matches), at most `M`;
/// `M` when `V = 0` (no variation between rows was seen). `None` with fewer
/// than two such rows: one row cannot show how rows vary.
pub fn effective_trials(rows: &[(f64, f64)]) -> Option<(f64, f64)> {
    let used = rows.iter().filter(|(_, m)| *m > 0.0);
    let (k, y, m) = used.clone().fold((0u64, 0.0, 0.0), |(k, y, m), (yi, mi)| {
        (k + 1, y + yi, m + mi)
    });
    if k < 2 {
        return None;
    }
    let share = y / m;
    // Every used m_i < M (k ≥ 2 rows of m_i > 0), so 1 − h_i > 0.
    let sum_sq: f64 = used
        .map(|(yi, mi)| ((yi - share * mi) / (1.0 - mi / m)).powi(2))
        .sum();
    let kf = k as f64;
    let variance = (kf - 1.0) / kf * sum_sq / (m * m);
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
/// instead) with fewer values than the distribution-free interval of `M`
/// independent values needs ([`min_n_for_quantile`]: values that cluster
/// by row carry no more information than independent ones, and the normal
/// band is no guide where the exact one refuses), with fewer than two rows
/// with values, or when `u > M`: the upper bound would lie past the largest
/// value seen.
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
        return none(format!(
            "no values for a row-clustered {level}% interval of p{p}"
        ));
    }
    let least = min_n_for_quantile(p, confidence);
    if (m as u64) < least {
        return none(format!(
            "{m} values are too few for a row-clustered {level}% interval of p{p}: it needs at \
             least {least}, as a distribution-free interval of independent values does"
        ));
    }
    let q = f64::from(p) / 100.0;
    let rank = ((q * m as f64).ceil() as usize).clamp(1, m);
    let at = pooled[rank - 1];
    let counts: Vec<(f64, f64)> = rows
        .iter()
        .map(|r| {
            (
                r.iter().filter(|&&g| g <= at).count() as f64,
                r.len() as f64,
            )
        })
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intervals::{quantile_ranks, wilson};

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} ± {tol}");
    }

    /// Two rows of 4 tokens reasoning 1 and 3: M = 8, R = 0.5,
    /// Σ (y − R m)² = (1 − 2)² + (3 − 2)² = 2, V = 2/1 × 2/64 = 0.0625,
    /// n_eff = 0.25 / 0.0625 = 4. Wilson(0.5, 4), z = 1.959964:
    /// z²/n = 0.9603647, half = z √(0.0625 + 0.0600228) / 1.9603647 =
    /// 0.3499610: [0.1500390, 0.8499610], wider than the token-level
    /// Wilson 4 of 8, [0.2152161, 0.7847839].
    #[test]
    fn rows_that_differ_count_as_fewer_trials() {
        let rows = [(1.0, 4.0), (3.0, 4.0)];
        assert_eq!(effective_trials(&rows), Some((0.5, 4.0)));
        let i = clustered_share(&rows, Confidence::default()).unwrap();
        close(i.lower, 0.150_039_0, 1e-7);
        close(i.upper, 0.849_961_0, 1e-7);
        let tokens = wilson(4, 8, Confidence::default()).unwrap();
        close(tokens.lower, 0.215_216_1, 1e-7);
    }

    /// Rows that all reason 2 of 4 show no variation (V = 0): the
    /// token-level interval, n_eff = M = 8. One row shows none at all.
    #[test]
    fn equal_rows_give_the_token_interval_and_one_row_none() {
        let rows = [(2.0, 4.0), (2.0, 4.0)];
        assert_eq!(effective_trials(&rows), Some((0.5, 8.0)));
        let i = clustered_share(&rows, Confidence::default()).unwrap();
        assert_eq!(Some(i), wilson(4, 8, Confidence::default()));
        assert_eq!(
            clustered_share(&[(2.0, 4.0), (0.0, 0.0)], Confidence::default()),
            None
        );
    }

    /// Four rows of five gaps, 1‥20 in row order: p50 = X₍₁₀₎ = 10, rows
    /// 1 and 2 are wholly ≤ 10 (c = 5, 5, 0, 0), Σ (c − 2.5)² = 25,
    /// V = 4/3 × 25/400 = 0.0833333, n_eff = 0.25 / V = 3; Wilson(0.5, 3):
    /// [0.1253345, 0.8746655]; ranks ⌊20 × 0.1253345 + ½⌋ = 3 and
    /// ⌈20 × 0.8746655 + ½⌉ = 18: [3, 18]. The same twenty values dealt
    /// round the rows (row j holds j, j + 4, …) give c = 3, 3, 2, 2,
    /// Σ = 1, V = 4/3 × 1/400, n_eff = 75 capped at M = 20: Wilson(0.5, 20)
    /// = [0.2992980, 0.7007020], ranks 6 and 15, exactly the
    /// distribution-free interval of 20 independent values.
    #[test]
    fn clustered_rows_widen_the_median_and_mixed_rows_do_not() {
        let blocks: Vec<Vec<f64>> = (0..4)
            .map(|r| (1..=5).map(|j| f64::from(r * 5 + j)).collect())
            .collect();
        let rows: Vec<&[f64]> = blocks.iter().map(Vec::as_slice).collect();
        let i = clustered_quantile(&rows, 50, Confidence::default());
        assert_eq!((i.lower_rank, i.upper_rank), (Some(3), Some(18)));
        assert_eq!((i.lower, i.upper), (Some(3.0), Some(18.0)));
        assert_eq!(i.coverage, None);
        let dealt: Vec<Vec<f64>> = (1..=4)
            .map(|r| (0..5).map(|j| f64::from(r + 4 * j)).collect())
            .collect();
        let rows: Vec<&[f64]> = dealt.iter().map(Vec::as_slice).collect();
        let i = clustered_quantile(&rows, 50, Confidence::default());
        assert_eq!((i.lower, i.upper), (Some(6.0), Some(15.0)));
        let (l, u, _) = quantile_ranks(20, 50, Confidence::default()).unwrap();
        assert_eq!((l, u), (6, 15));
    }

    /// One row cannot show the spread between rows; fewer values than the
    /// distribution-free interval needs (p99 at 95 %: 368) get none either;
    /// and a p99 whose tail sits in one short row has none. Rows 0‥359 and
    /// 1000‥1009 (M = 370): p99 = X₍₃₆₇₎ = 1006, c = 360, 7, F̂ = 367/370,
    /// residuals ±2.9189 over 1 − h = 10/370 and 360/370: 108.0 and −3.0,
    /// V = ½ × 11,673 / 370² = 0.0426333, n_eff = 0.99189 × 0.00811 / V =
    /// 0.189; Wilson(0.99, 0.189) upper 0.999995, u = ⌈369.998 + ½⌉ = 371.
    #[test]
    fn too_few_rows_or_values_have_a_reason_not_an_interval() {
        let ci = Confidence::default();
        let one: Vec<f64> = (0..400).map(f64::from).collect();
        let i = clustered_quantile(&[&one], 50, ci);
        assert_eq!(i.lower, None);
        assert!(i.reason.unwrap().starts_with("fewer than 2 rows"));
        let a: Vec<f64> = (0..50).map(f64::from).collect();
        let b: Vec<f64> = (50..100).map(f64::from).collect();
        let i = clustered_quantile(&[&a, &b], 99, ci);
        assert_eq!(i.upper, None);
        assert!(i.reason.unwrap().contains("it needs at least 368"));
        let long: Vec<f64> = (0..360).map(f64::from).collect();
        let short: Vec<f64> = (1000..1010).map(f64::from).collect();
        let i = clustered_quantile(&[&long, &short], 99, ci);
        assert_eq!(i.upper, None);
        let reason = i.reason.unwrap();
        assert!(reason.contains("(rank 371 of 370)"), "{reason}");
        let (_, n_eff) = effective_trials(&[(360.0, 360.0), (7.0, 10.0)]).unwrap();
        assert!((n_eff - 0.188_640_5).abs() < 1e-6, "{n_eff}");
    }
}
