//! The row-clustered interval of a pooled inter-token percentile, checked on
//! simulated streams whose truth is known by construction
//! (`tests/common/streams.rs`): over seeded replications, how often the interval
//! of B − A covers the true difference, and how often two runs of the same
//! process get a verdict other than "indistinguishable". The naive interval
//! (order statistics over the pooled gaps, as if every gap were independent)
//! fails the same checks. `GOODPUT_LONG_SIM=1` runs 2,000 replications
//! instead of 200 (docs/intervals.md quotes both).

#[path = "common/streams.rs"]
mod streams;

use goodput_core::intervals::clustered::clustered_quantile;
use goodput_core::intervals::{mover, quantile_interval, Confidence, Estimate, QuantileInterval};
use streams::Process;

/// Replications: 200, or 2,000 with `GOODPUT_LONG_SIM`.
fn replications() -> u64 {
    if std::env::var_os("GOODPUT_LONG_SIM").is_some() {
        2000
    } else {
        200
    }
}

/// Rows per run: an open-loop run of 200 requests.
const ROWS: usize = 200;
/// Rows of the Monte Carlo truth.
const TRUTH_ROWS: usize = 40_000;

fn estimate(value: f64, i: &QuantileInterval) -> Option<Estimate> {
    Some(Estimate {
        value,
        interval: goodput_core::intervals::Interval {
            lower: i.lower?,
            upper: i.upper?,
        },
    })
}

/// The pooled p`p` of a run and its two intervals: (value, clustered, naive).
fn figures(rows: &[Vec<f64>], p: u32) -> (f64, QuantileInterval, QuantileInterval) {
    let slices: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
    let clustered = clustered_quantile(&slices, p, Confidence::default());
    let mut pooled: Vec<f64> = rows.iter().flatten().copied().collect();
    pooled.sort_by(f64::total_cmp);
    let rank = (f64::from(p) / 100.0 * pooled.len() as f64).ceil() as usize;
    let naive = quantile_interval(&pooled, p, Confidence::default());
    (pooled[rank - 1], clustered, naive)
}

/// Over the replications of A and B: (clustered covers, naive covers,
/// clustered excludes 0, naive excludes 0, clustered had no interval), as
/// shares of the replications.
fn check(a: Process, b: Process, truth: f64, p: u32, seed: u64) -> [f64; 5] {
    let reps = replications();
    let mut tally = [0u64; 5];
    for r in 0..reps {
        let (va, ca, na) = figures(&a.run(ROWS, seed + 2 * r), p);
        let (vb, cb, nb) = figures(&b.run(ROWS, seed + 2 * r + 1), p);
        let judged = |ia: &QuantileInterval, ib: &QuantileInterval| {
            Some(mover(estimate(va, ia)?, estimate(vb, ib)?))
        };
        match judged(&ca, &cb) {
            Some(d) => {
                tally[0] += u64::from(d.lower <= truth && truth <= d.upper);
                tally[2] += u64::from(d.lower > 0.0 || d.upper < 0.0);
            }
            None => tally[4] += 1,
        }
        let d = judged(&na, &nb).expect("thousands of gaps: the naive interval exists");
        tally[1] += u64::from(d.lower <= truth && truth <= d.upper);
        tally[3] += u64::from(d.lower > 0.0 || d.upper < 0.0);
    }
    tally.map(|t| t as f64 / reps as f64)
}

/// B: the same rows, but one in five stalls (twice A's stall chance).
fn worse() -> Process {
    Process {
        stall_chance: 0.2,
        ..Process::base()
    }
}

#[test]
fn the_clustered_interval_covers_a_true_p99_difference_and_the_naive_one_does_not() {
    let (a, b) = (Process::base(), worse());
    let truth = b.truth(99, TRUTH_ROWS, 7) - a.truth(99, TRUTH_ROWS, 8);
    let [covered, naive_covered, _, _, unjudged] = check(a, b, truth, 99, 1_000);
    eprintln!(
        "p99 B − A true {truth:.2} ms: clustered covers {covered}, naive {naive_covered}, \
         clustered without interval {unjudged}"
    );
    // 95 % nominal; 200 replications have a binomial SD of 1.5 points.
    assert!(covered >= 0.90, "clustered coverage {covered}");
    assert!(naive_covered <= 0.80, "naive coverage {naive_covered}");
}

#[test]
fn two_runs_of_one_process_rarely_differ_under_the_clustered_interval() {
    let a = Process::base();
    let [covered, naive_covered, false_verdicts, naive_false, unjudged] =
        check(a, a, 0.0, 99, 50_000);
    eprintln!(
        "same process p99: clustered false verdicts {false_verdicts} (covers 0: {covered}), \
         naive {naive_false} (covers 0: {naive_covered}), without interval {unjudged}"
    );
    // α = 0.05 plus a slack of 4 points (2.6 binomial SDs at 200 replications).
    assert!(
        false_verdicts <= 0.09,
        "clustered false verdicts {false_verdicts}"
    );
    assert!(naive_false >= 0.2, "naive false verdicts {naive_false}");
}
