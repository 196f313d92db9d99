//! Simulated token streams whose pooled inter-token distribution is known by
//! construction (up to a Monte Carlo sample far larger than any run): rows
//! whose rates differ, heavy-tailed output lengths, and occasional stalls
//! that slow a stretch of consecutive gaps. Test support only.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One stream process: how an open-loop run's rows draw their gaps.
#[derive(Clone, Copy, Debug)]
pub struct Process {
    /// Median gap of a row, ms.
    pub median_ms: f64,
    /// σ of the log of a row's typical gap (rows differ in speed).
    pub row_sigma: f64,
    /// σ of the log of each gap around its row's typical gap.
    pub gap_sigma: f64,
    /// Pareto output length: the smallest length.
    pub min_tokens: f64,
    /// Pareto shape (1.5: a heavy tail with a finite mean).
    pub shape: f64,
    /// Longest output, tokens.
    pub max_tokens: f64,
    /// Chance that a row stalls.
    pub stall_chance: f64,
    /// Consecutive gaps a stall slows.
    pub stall_gaps: usize,
    /// How many times slower the stalled gaps are.
    pub stall_factor: f64,
}

impl Process {
    /// The process of the checks: 20 ms median gaps, rows ±35 % in speed,
    /// Pareto(20, 1.5) lengths capped at 2,000 tokens, one row in ten
    /// stalling for 30 gaps at 6 times its pace.
    pub fn base() -> Process {
        Process {
            median_ms: 20.0,
            row_sigma: 0.3,
            gap_sigma: 0.25,
            min_tokens: 20.0,
            shape: 1.5,
            max_tokens: 2000.0,
            stall_chance: 0.1,
            stall_gaps: 30,
            stall_factor: 6.0,
        }
    }

    /// The gaps of one row.
    pub fn row(&self, rng: &mut ChaCha8Rng) -> Vec<f64> {
        let typical = self.median_ms * (self.row_sigma * normal(rng)).exp();
        let u: f64 = 1.0 - rng.random::<f64>();
        let tokens = (self.min_tokens * u.powf(-1.0 / self.shape))
            .min(self.max_tokens)
            .floor() as usize;
        let mut gaps: Vec<f64> = (1..tokens)
            .map(|_| typical * (self.gap_sigma * normal(rng)).exp())
            .collect();
        if !gaps.is_empty() && rng.random::<f64>() < self.stall_chance {
            let start = rng.random_range(0..gaps.len());
            for g in gaps.iter_mut().skip(start).take(self.stall_gaps) {
                *g *= self.stall_factor;
            }
        }
        gaps
    }

    /// The gaps of `rows` rows drawn with `seed`.
    pub fn run(&self, rows: usize, seed: u64) -> Vec<Vec<f64>> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..rows).map(|_| self.row(&mut rng)).collect()
    }

    /// The true pooled percentile `p`, from one run of `rows` rows (far
    /// more than any checked run: its own error is a small fraction of the
    /// intervals' widths).
    pub fn truth(&self, p: u32, rows: usize, seed: u64) -> f64 {
        let mut pooled: Vec<f64> = self.run(rows, seed).into_iter().flatten().collect();
        pooled.sort_by(f64::total_cmp);
        let rank = (f64::from(p) / 100.0 * pooled.len() as f64).ceil() as usize;
        pooled[rank - 1]
    }
}

/// A standard normal draw (Box–Muller).
fn normal(rng: &mut ChaCha8Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}
