//! The open-loop arrival schedule: every send instant, computed up front from
//! the seed, before the first request leaves.
//!
//! Computing the whole schedule first is what makes the recorder
//! coordinated-omission-safe: request `i` is due at `t0 + arrivals_ms[i]`
//! whatever happened to requests `0..i`, and its latency is measured from that
//! instant (oha's `t0 + f(i)`).
//!
//! Processes (`R` = rate per second, `B` = burstiness):
//! - `constant`: `t_i = i · 1000/R` ms, `i = 0, 1, …` (the first request at 0).
//! - `poisson`: gaps are exponential with mean `1000/R` ms; `t_0` is the first
//!   gap (a Poisson process observed from t0).
//! - `gamma`: gaps are gamma with shape `B` and scale `1000/(R·B)` ms (so the
//!   mean gap is still `1000/R`; the coefficient of variation is `1/√B`), as in
//!   `vllm bench serve`. `B = 1` is Poisson. Unlike vLLM, the gaps are not
//!   rescaled to end exactly on time: a random process that ends early or late
//!   is the honest draw.
//!
//! Arrivals are kept while `t < end_ms` (warm-up plus window). Either way the
//! expected count is `R · end_s`. With a count limit `N` (`--num-requests`)
//! the schedule also ends after its `N`-th arrival: its window ends at the
//! instant the `(N+1)`-th would be due (so it holds exactly `N` arrivals
//! and a constant rate `R` keeps `N / R` s), or at `end_ms` when that is
//! earlier ([`limited_schedule`]). `--request-rate inf` is [`burst`]: `N`
//! arrivals at once. The generator is ChaCha8 seeded with
//! `seed_from_u64(seed)`, which is specified bit-for-bit and so gives the same
//! schedule on every platform.

pub mod pacer;
pub mod phased;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Exp, Gamma};

/// The most requests one schedule may hold (a guard against `--request-rate 1e9`).
pub const MAX_SCHEDULED: usize = 5_000_000;

/// How the open-loop arrival instants are spaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrivalProcess {
    /// Exponential gaps (memoryless; the default, as in vLLM).
    Poisson,
    /// Equal gaps of 1/rate.
    Constant,
    /// Gamma gaps with shape = --burstiness (below 1: burstier than Poisson).
    Gamma,
}

impl ArrivalProcess {
    /// The name written into `workload.arrival`.
    pub fn as_str(self) -> &'static str {
        match self {
            ArrivalProcess::Poisson => "poisson",
            ArrivalProcess::Constant => "constant",
            ArrivalProcess::Gamma => "gamma",
        }
    }
}

/// Why a schedule cannot be built.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScheduleError {
    /// The rate is not a positive finite number.
    #[error("--request-rate must be a positive number of requests per second, not {0}")]
    BadRate(f64),
    /// The burstiness is not a positive finite number.
    #[error("--burstiness must be a positive number, not {0}")]
    BadBurstiness(f64),
    /// The schedule would be absurdly long.
    #[error("the schedule would hold more than {MAX_SCHEDULED} requests; lower --request-rate or --duration")]
    TooMany,
}

/// The scheduled send instants in ms after t0, ascending, all `< end_ms`.
pub fn open_schedule(
    process: ArrivalProcess,
    rate_per_s: f64,
    burstiness: f64,
    seed: u64,
    end_ms: f64,
) -> Result<Vec<f64>, ScheduleError> {
    limited_schedule(process, rate_per_s, burstiness, seed, end_ms, None).map(|(a, _)| a)
}

/// `count` arrivals all at `at_ms` (`--request-rate inf`: the whole
/// schedule sent at once).
pub fn burst(count: usize, at_ms: f64) -> Result<Vec<f64>, ScheduleError> {
    if count > MAX_SCHEDULED {
        return Err(ScheduleError::TooMany);
    }
    Ok(vec![at_ms; count])
}

/// [`open_schedule`] ending also after `limit` arrivals, when given, with
/// the window's end: the instant arrival `limit + 1` would be due, or
/// `end_ms` when earlier (always `end_ms` without a limit).
pub fn limited_schedule(
    process: ArrivalProcess,
    rate_per_s: f64,
    burstiness: f64,
    seed: u64,
    end_ms: f64,
    limit: Option<usize>,
) -> Result<(Vec<f64>, f64), ScheduleError> {
    if !(rate_per_s.is_finite() && rate_per_s > 0.0) {
        return Err(ScheduleError::BadRate(rate_per_s));
    }
    if !(burstiness.is_finite() && burstiness > 0.0) {
        return Err(ScheduleError::BadBurstiness(burstiness));
    }
    let limit = limit.unwrap_or(usize::MAX);
    let expected = (rate_per_s * end_ms / 1000.0).min(limit as f64);
    if expected > MAX_SCHEDULED as f64 * 0.9 {
        return Err(ScheduleError::TooMany);
    }
    let mean_gap_ms = 1000.0 / rate_per_s;
    let mut out = Vec::with_capacity(expected.ceil() as usize + 16);
    let ends = match process {
        ArrivalProcess::Constant => {
            // Multiply instead of accumulating, so no rounding drift builds up.
            let mut i = 0u64;
            loop {
                let t = i as f64 * mean_gap_ms;
                if t >= end_ms || out.len() >= limit {
                    break t.min(end_ms);
                }
                out.push(t);
                i += 1;
            }
        }
        ArrivalProcess::Poisson => {
            let exp =
                Exp::new(1.0 / mean_gap_ms).map_err(|_| ScheduleError::BadRate(rate_per_s))?;
            accumulate(&mut out, (end_ms, limit), seed, |rng| exp.sample(rng))?
        }
        ArrivalProcess::Gamma => {
            let gamma = Gamma::new(burstiness, mean_gap_ms / burstiness)
                .map_err(|_| ScheduleError::BadBurstiness(burstiness))?;
            accumulate(&mut out, (end_ms, limit), seed, |rng| gamma.sample(rng))?
        }
    };
    Ok((out, ends))
}

/// Pushes the arrivals of the gaps drawn from `seed` while they are before
/// `end_ms` and fewer than `limit`; returns where the window ends: the
/// first instant not kept, or `end_ms`.
fn accumulate(
    out: &mut Vec<f64>,
    (end_ms, limit): (f64, usize),
    seed: u64,
    mut gap: impl FnMut(&mut ChaCha8Rng) -> f64,
) -> Result<f64, ScheduleError> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut t = 0.0;
    loop {
        t += gap(&mut rng);
        if t >= end_ms || out.len() >= limit {
            return Ok(t.min(end_ms));
        }
        if out.len() >= MAX_SCHEDULED {
            return Err(ScheduleError::TooMany);
        }
        out.push(t);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gaps(arrivals: &[f64]) -> Vec<f64> {
        arrivals.windows(2).map(|w| w[1] - w[0]).collect()
    }

    fn mean_cv(xs: &[f64]) -> (f64, f64) {
        let n = xs.len() as f64;
        let mean = xs.iter().sum::<f64>() / n;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
        (mean, var.sqrt() / mean)
    }

    #[test]
    fn the_same_seed_gives_the_same_schedule_and_another_seed_does_not() {
        for p in [ArrivalProcess::Poisson, ArrivalProcess::Gamma] {
            let a = open_schedule(p, 50.0, 0.5, 7, 10_000.0).unwrap();
            let b = open_schedule(p, 50.0, 0.5, 7, 10_000.0).unwrap();
            let c = open_schedule(p, 50.0, 0.5, 8, 10_000.0).unwrap();
            assert_eq!(a, b);
            assert_ne!(a, c);
        }
    }

    #[test]
    fn constant_arrivals_are_evenly_spaced_from_zero() {
        let a = open_schedule(ArrivalProcess::Constant, 4.0, 1.0, 0, 1000.0).unwrap();
        assert_eq!(a, vec![0.0, 250.0, 500.0, 750.0]);
        let g = gaps(&open_schedule(ArrivalProcess::Constant, 3.0, 1.0, 0, 60_000.0).unwrap());
        let (mean, cv) = mean_cv(&g);
        assert!((mean - 1000.0 / 3.0).abs() < 1e-9);
        assert!(cv < 1e-9);
    }

    // 20,000 gaps: the sample mean has a relative standard error of
    // cv/sqrt(n) ≈ 0.7 % for Poisson, so ±3 % is > 4 standard errors; the
    // sample cv of an exponential has a standard error near 1/sqrt(n) ≈ 0.7 %
    // too (a bit more), so ±5 % is safe for the fixed seeds used here.
    #[test]
    fn poisson_gaps_have_the_mean_of_the_rate_and_a_cv_of_one() {
        let a = open_schedule(ArrivalProcess::Poisson, 100.0, 1.0, 42, 200_000.0).unwrap();
        let (mean, cv) = mean_cv(&gaps(&a));
        assert!((mean - 10.0).abs() < 0.3, "mean gap {mean}");
        assert!((cv - 1.0).abs() < 0.05, "cv {cv}");
        assert!(
            (a.len() as f64 - 20_000.0).abs() < 600.0,
            "count {}",
            a.len()
        );
        assert!(a.windows(2).all(|w| w[0] <= w[1]) && a[0] > 0.0);
    }

    #[test]
    fn gamma_gaps_keep_the_mean_and_have_cv_one_over_root_burstiness() {
        for (b, seed) in [(0.25, 1u64), (4.0, 2)] {
            let a = open_schedule(ArrivalProcess::Gamma, 100.0, b, seed, 200_000.0).unwrap();
            let (mean, cv) = mean_cv(&gaps(&a));
            let want_cv = 1.0 / f64::sqrt(b);
            assert!(
                (mean - 10.0).abs() < 10.0 * 0.04 * want_cv.max(0.5),
                "B={b} mean gap {mean}"
            );
            assert!(
                (cv - want_cv).abs() < 0.06 * want_cv,
                "B={b} cv {cv} want {want_cv}"
            );
        }
    }

    #[test]
    fn every_arrival_is_before_the_end() {
        for p in [
            ArrivalProcess::Poisson,
            ArrivalProcess::Constant,
            ArrivalProcess::Gamma,
        ] {
            let a = open_schedule(p, 10.0, 1.0, 3, 5_000.0).unwrap();
            assert!(a.iter().all(|&t| (0.0..5_000.0).contains(&t)));
        }
    }

    #[test]
    fn a_count_limit_ends_the_window_where_the_next_arrival_would_be_due() {
        // 10/s constant, 7 requests: 0, 100, …, 600; the 8th would be at 700.
        let (a, end) =
            limited_schedule(ArrivalProcess::Constant, 10.0, 1.0, 0, 60_000.0, Some(7)).unwrap();
        assert_eq!(a, vec![0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0]);
        assert_eq!(end, 700.0);
        // The duration comes first: 0.35 s holds 4 of them.
        let (a, end) =
            limited_schedule(ArrivalProcess::Constant, 10.0, 1.0, 0, 350.0, Some(7)).unwrap();
        assert_eq!((a.len(), end), (4, 350.0));
        // Poisson: the first 5 of the unlimited draw, ending at the 6th.
        let all = open_schedule(ArrivalProcess::Poisson, 10.0, 1.0, 9, 60_000.0).unwrap();
        let (a, end) =
            limited_schedule(ArrivalProcess::Poisson, 10.0, 1.0, 9, 60_000.0, Some(5)).unwrap();
        assert_eq!(a, all[..5]);
        assert_eq!(end, all[5]);
        assert_eq!(burst(3, 0.0).unwrap(), vec![0.0; 3]);
        assert_eq!(burst(MAX_SCHEDULED + 1, 0.0), Err(ScheduleError::TooMany));
    }

    #[test]
    fn nonsense_rates_are_refused() {
        assert!(open_schedule(ArrivalProcess::Poisson, 0.0, 1.0, 0, 1.0).is_err());
        assert!(open_schedule(ArrivalProcess::Poisson, f64::NAN, 1.0, 0, 1.0).is_err());
        assert!(open_schedule(ArrivalProcess::Gamma, 1.0, 0.0, 0, 1.0).is_err());
        assert_eq!(
            open_schedule(ArrivalProcess::Constant, 1e9, 1.0, 0, 60_000.0),
            Err(ScheduleError::TooMany)
        );
    }
}
