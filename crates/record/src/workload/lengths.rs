//! Length distributions: `MEAN[:STD[:MIN:MAX]]` tokens.
//!
//! A draw is `round(x)` for `x ~ Normal(MEAN, STD)`, then clipped to
//! `[MIN, MAX]` (defaults 1 and 1,000,000). `STD = 0` (or absent) gives MEAN
//! every time. Draws come from ChaCha8 seeded with the run's seed on a stream
//! of their own (input and output lengths use different streams), in schedule
//! order, so request `i` gets the same lengths on every run with the same
//! seed. Clipping moves the mean when a bound is within a few STD of it; the
//! spec is written into the trace as given, so a reader can tell.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// The largest length a distribution may produce (a guard, not a model limit).
pub const MAX_LENGTH: u32 = 1_000_000;

/// Why a `MEAN[:STD[:MIN:MAX]]` spec is refused: the flag, the text as
/// given, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag} `{text}`: {why} (expected MEAN[:STD[:MIN:MAX]])")]
pub struct LengthError {
    /// The flag.
    pub flag: String,
    /// The spec as given.
    pub text: String,
    /// What is wrong.
    pub why: &'static str,
}

/// A clipped, rounded normal distribution of token counts.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LengthDist {
    /// Mean before rounding and clipping.
    pub mean: f64,
    /// Standard deviation (0: always the mean).
    pub std: f64,
    /// Smallest length produced.
    pub min: u32,
    /// Largest length produced.
    pub max: u32,
}

impl LengthDist {
    /// A fixed length.
    pub fn fixed(n: u32) -> LengthDist {
        LengthDist {
            mean: f64::from(n),
            std: 0.0,
            min: n,
            max: n,
        }
    }

    /// Parses `MEAN[:STD[:MIN:MAX]]`; `flag` names the flag in the message.
    pub fn parse(flag: &str, text: &str) -> Result<LengthDist, LengthError> {
        let bad = |why: &'static str| LengthError {
            flag: flag.to_owned(),
            text: text.to_owned(),
            why,
        };
        let parts: Vec<&str> = text.split(':').map(str::trim).collect();
        let number = |s: &str| s.parse::<f64>().ok().filter(|x| x.is_finite() && *x >= 0.0);
        let bound = |s: &str| {
            s.parse::<u32>()
                .ok()
                .filter(|&n| (1..=MAX_LENGTH).contains(&n))
        };
        let mean = number(parts[0]).ok_or_else(|| bad("MEAN must be a number >= 1"))?;
        if !(1.0..=f64::from(MAX_LENGTH)).contains(&mean) {
            return Err(bad("MEAN must be between 1 and 1000000"));
        }
        let std = match parts.get(1) {
            Some(s) => number(s).ok_or_else(|| bad("STD must be a number >= 0"))?,
            None => 0.0,
        };
        let (min, max) = match parts.len() {
            1 | 2 => (1, MAX_LENGTH),
            4 => (
                bound(parts[2])
                    .ok_or_else(|| bad("MIN must be a whole number from 1 to 1000000"))?,
                bound(parts[3])
                    .ok_or_else(|| bad("MAX must be a whole number from 1 to 1000000"))?,
            ),
            _ => return Err(bad("give one, two or four numbers")),
        };
        if min > max {
            return Err(bad("MIN must not exceed MAX"));
        }
        Ok(LengthDist {
            mean,
            std,
            min,
            max,
        })
    }

    /// How the trace declares it: `MEAN:STD:MIN:MAX`.
    pub fn describe(&self) -> String {
        format!("{}:{}:{}:{}", self.mean, self.std, self.min, self.max)
    }

    /// `count` draws in order, from `seed` on stream `stream`.
    pub fn draws(&self, seed: u64, stream: u64, count: usize) -> Vec<u32> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream);
        let normal = (self.std > 0.0)
            .then(|| Normal::new(self.mean, self.std).ok())
            .flatten();
        (0..count)
            .map(|_| {
                let x = normal.map_or(self.mean, |n| n.sample(&mut rng));
                x.round().clamp(f64::from(self.min), f64::from(self.max)) as u32
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(xs: &[u32]) -> (f64, f64) {
        let n = xs.len() as f64;
        let mean = xs.iter().map(|&x| f64::from(x)).sum::<f64>() / n;
        let var = xs
            .iter()
            .map(|&x| (f64::from(x) - mean).powi(2))
            .sum::<f64>()
            / (n - 1.0);
        (mean, var.sqrt())
    }

    #[test]
    fn specs_parse_with_defaults_and_bad_ones_name_the_flag() {
        assert_eq!(
            LengthDist::parse("--input-tokens", "512"),
            Ok(LengthDist {
                mean: 512.0,
                std: 0.0,
                min: 1,
                max: MAX_LENGTH
            })
        );
        assert_eq!(
            LengthDist::parse("--input-tokens", "512:64:100:900"),
            Ok(LengthDist {
                mean: 512.0,
                std: 64.0,
                min: 100,
                max: 900
            })
        );
        for bad in ["0", "x", "5:-1", "5:1:3", "5:1:9:3", "5:1:0:3", "5:1:1:2:3"] {
            let err = LengthDist::parse("--output-tokens", bad)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("--output-tokens"), "{err}");
        }
    }

    #[test]
    fn a_fixed_length_is_always_itself() {
        let d = LengthDist::parse("--input-tokens", "300").unwrap();
        assert!(d.draws(1, 0, 100).iter().all(|&n| n == 300));
    }

    // 20,000 draws of Normal(500, 50): the sample mean has a standard error of
    // 50/sqrt(20000) ≈ 0.35, so ±2 is more than 5 standard errors; the sample
    // standard deviation has a standard error near 50/sqrt(2·20000) ≈ 0.25, and
    // rounding to integers adds 1/12 to the variance (+0.0008 on the std), so
    // ±1.5 is safe. Bounds 100 and 900 are 8 STD away and never bind here.
    #[test]
    fn draws_have_the_declared_mean_and_standard_deviation() {
        let d = LengthDist::parse("--input-tokens", "500:50:100:900").unwrap();
        for seed in [1u64, 2, 3] {
            let (mean, std) = moments(&d.draws(seed, 7, 20_000));
            assert!((mean - 500.0).abs() < 2.0, "seed {seed}: mean {mean}");
            assert!((std - 50.0).abs() < 1.5, "seed {seed}: std {std}");
        }
    }

    #[test]
    fn draws_are_clipped_to_the_bounds_and_reproducible() {
        let d = LengthDist::parse("--output-tokens", "100:80:60:140").unwrap();
        let a = d.draws(4, 1, 5_000);
        assert!(a.iter().all(|&n| (60..=140).contains(&n)));
        // Normal(100, 80) falls below 60 with probability Φ(-0.5) ≈ 0.31, so
        // about 1,540 of 5,000 draws sit on the lower bound; 1,300..1,800 is
        // more than 7 standard errors wide.
        let at_min = a.iter().filter(|&&n| n == 60).count();
        assert!((1_300..1_800).contains(&at_min), "{at_min}");
        assert_eq!(a, d.draws(4, 1, 5_000));
        assert_ne!(a, d.draws(4, 2, 5_000));
    }
}
