//! Reviewer-tool cost on a 1,000,000-row trace (the budget of the reviewer tools):
//! the 21-alternative sweep must cost at most 2× one analysis, the 7×7×7 grid
//! at most 5×. Run with `cargo bench --bench reviewer`.
//!
//! The trace is generated in memory (about 140 bytes a row; two classes; a mix
//! of pass, miss, failed and in-flight rows), analyzed once with raised limits,
//! then swept on the already-validated trace. Each step is timed with
//! `Instant` over a few repetitions; min and median are printed.

use std::fmt::Write;
use std::time::{Duration, Instant};

use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::review::sensitivity::{sweep, SweepPlan, DEFAULT_FACTORS};
use goodput_core::trace::Limits;

const ROWS: u64 = 1_000_000;

/// A small deterministic generator (SplitMix64): no dependency, same trace every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn trace() -> Vec<u8> {
    let window_ms = 3_600_000u64;
    let mut s = String::with_capacity(150 * ROWS as usize);
    s.push_str(
        r#"{"schema":"goodput-trace/1","window":{"startMs":0,"endMs":3600000,"horizonMs":3660000},"equality":"inclusive","classes":{"batch":{"ttftMs":5000,"tpotMs":null,"e2eMs":60000},"chat":{"ttftMs":1000,"tpotMs":50,"e2eMs":10000}},"defaultClass":"chat","rows":["#,
    );
    let mut rng = Rng(42);
    for i in 0..ROWS {
        if i > 0 {
            s.push(',');
        }
        let arrival = i * window_ms / ROWS;
        let class = if rng.below(4) == 0 { "batch" } else { "chat" };
        let kind = rng.below(100);
        let _ = write!(
            s,
            r#"{{"id":"r{i:07}","class":"{class}","arrivalMs":{arrival},"#
        );
        if kind < 4 {
            let ended = arrival + 1000 + rng.below(30_000);
            let _ = write!(
                s,
                r#""status":"failed","reason":"timeout","endedMs":{ended}}}"#
            );
        } else if kind < 6 {
            let first = arrival + rng.below(3000);
            let _ = write!(s, r#""status":"in_flight","firstTokenMs":{first}}}"#);
        } else {
            let ttft = 100 + rng.below(1400);
            let tokens = 1 + rng.below(400);
            let tpot = 10 + rng.below(55);
            let first = arrival + ttft;
            let completed = first + tpot * (tokens - 1);
            let _ = write!(
                s,
                r#""status":"completed","firstTokenMs":{first},"completedMs":{completed},"outputTokens":{tokens}}}"#
            );
        }
    }
    s.push_str("]}");
    s.into_bytes()
}

fn time<T>(reps: usize, mut f: impl FnMut() -> T) -> (Vec<Duration>, T) {
    let mut times = Vec::with_capacity(reps);
    let mut last = None;
    for _ in 0..reps {
        let t = Instant::now();
        let out = f();
        times.push(t.elapsed());
        last = Some(out);
    }
    times.sort();
    (times, last.expect("at least one repetition"))
}

fn median(t: &[Duration]) -> Duration {
    t[t.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() {
    let bytes = trace();
    println!(
        "trace: {ROWS} rows, {} bytes ({:.0} bytes a row)",
        bytes.len(),
        bytes.len() as f64 / ROWS as f64
    );
    let options = AnalyzeOptions {
        limits: Limits {
            max_rows: ROWS,
            max_bytes: bytes.len() as u64,
        },
        ..AnalyzeOptions::default()
    };
    let (t_analyze, analysis) = time(3, || analyze_bytes(&bytes, options).expect("accepted"));
    let all = &analysis.receipt.results.all.counts;
    println!(
        "counts: cohort {}, pass {}, miss {}, failed {}, censored {}",
        all.cohort, all.pass, all.miss, all.failed, all.censored
    );

    let one = SweepPlan::one_at_a_time(None, &DEFAULT_FACTORS).expect("plan");
    let grid = SweepPlan::grid(None, &DEFAULT_FACTORS).expect("plan");
    let (t_sweep, entries) = time(5, || {
        sweep(&analysis.trace, &analysis.judgements, &one).expect("sweep")
    });
    assert_eq!(entries.len(), 22);
    assert_eq!(entries[0].pass, all.pass, "declared line = analyze");
    let (t_grid, entries) = time(5, || {
        sweep(&analysis.trace, &analysis.judgements, &grid).expect("sweep")
    });
    assert_eq!(entries.len(), 344);

    let a = median(&t_analyze);
    for (name, t, budget) in [
        ("one analysis", &t_analyze, None),
        ("sweep, 21 alternatives", &t_sweep, Some(2.0)),
        ("grid, 7x7x7 = 343 alternatives", &t_grid, Some(5.0)),
    ] {
        let ratio = ms(median(t)) / ms(a);
        let verdict = match budget {
            None => String::new(),
            Some(b) => format!(
                "  = {ratio:.3}x one analysis (budget {b}x: {})",
                if ratio <= b { "within" } else { "OVER" }
            ),
        };
        println!(
            "{name:<32} min {:>9.1} ms  median {:>9.1} ms{verdict}",
            ms(t[0]),
            ms(median(t))
        );
    }
}
