//! Recorder throughput benchmark (`cargo bench --bench record`).
//!
//! Starts the sim in this process with near-zero latency (no prefill, a
//! 0.02 ms decode step, no per-sequence cost, batch 4096) and 64 output tokens
//! per request, then runs the real `goodput record` binary against it at
//! increasing Poisson rates, a few seconds each. For every rate it prints,
//! computed from the trace the recorder wrote (not from its own summary):
//! the achieved/scheduled arrival ratio, the p99 send lag, failures, streamed
//! tokens, and the recorder's CPU time (user + system, from
//! getrusage(RUSAGE_CHILDREN) around the child) per 1,000 streamed tokens.
//!
//! Pass: ratio ≥ 0.99 and p99 send lag ≤ 1 ms. Targets: ≥ 2,000 requests/s
//! and ≤ 5 ms CPU per 1,000 tokens.
//!
//! Environment: `GOODPUT_BENCH_RATES=500,1000,…` and `GOODPUT_BENCH_SECS=3`.

use std::process::Command;
use std::time::Instant;

use goodput::sim::engine::EngineParams;
use goodput::sim::{SimConfig, SimServer};
use serde_json::Value;

fn children_cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct we hand it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

fn nearest_rank(sorted: &[f64], p: usize) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

struct Figures {
    rows: usize,
    ratio: f64,
    p99_lag_ms: f64,
    failed: usize,
    unfinished: usize,
    tokens: f64,
    lags: (f64, f64, f64),
}

fn figures(trace: &Value) -> Figures {
    let rows = trace["rows"].as_array().cloned().unwrap_or_default();
    let mut lags = Vec::new();
    let mut last_send = f64::MIN;
    let (mut failed, mut unfinished, mut tokens) = (0, 0, 0.0);
    for row in &rows {
        let arrival = row["arrivalMs"].as_f64().unwrap_or(0.0);
        if let Some(lag) = row["labels"]["sendLagMs"].as_f64() {
            lags.push(lag);
            last_send = last_send.max(arrival + lag);
        }
        match row["status"].as_str() {
            Some("completed") => tokens += row["outputTokens"].as_f64().unwrap_or(0.0),
            Some("failed") => failed += 1,
            _ => unfinished += 1,
        }
    }
    lags.sort_by(f64::total_cmp);
    let first = rows
        .first()
        .and_then(|r| r["arrivalMs"].as_f64())
        .unwrap_or(0.0);
    let last = rows
        .last()
        .and_then(|r| r["arrivalMs"].as_f64())
        .unwrap_or(0.0);
    let n = rows.len() as f64;
    let scheduled = (n - 1.0) / (last - first);
    let achieved = (lags.len() as f64 - 1.0) / (last_send - first);
    Figures {
        rows: rows.len(),
        ratio: achieved / scheduled,
        p99_lag_ms: nearest_rank(&lags, 99),
        failed,
        unfinished,
        tokens,
        lags: (
            nearest_rank(&lags, 50),
            nearest_rank(&lags, 90),
            lags.last().copied().unwrap_or(f64::NAN),
        ),
    }
}

fn main() {
    let rates: Vec<f64> = std::env::var("GOODPUT_BENCH_RATES")
        .unwrap_or_else(|_| "500,1000,2000,3000,4000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let secs: f64 = std::env::var("GOODPUT_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let config = SimConfig {
        engine: EngineParams {
            max_batch: 4096,
            prefill_ms_per_1k_tokens: 0.0,
            decode_step_ms: 0.02,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (64.0, 0.0),
        faults: vec![],
        seed: 0,
        model_name: "sim".into(),
    };
    let server = SimServer::start(config, 2).expect("start the sim");
    let dir = tempfile::tempdir().expect("temp dir");
    println!(
        "sim at {} (near-zero latency, 64 output tokens); {secs} s per rate, Poisson arrivals",
        server.url()
    );
    println!(
        "{:>8} {:>7} {:>8} {:>10} {:>7} {:>8} {:>9} {:>8} {:>13} {:>5}",
        "rate/s",
        "rows",
        "ratio",
        "p99 lag",
        "failed",
        "unfin.",
        "tokens",
        "cpu s",
        "cpu ms/1k tok",
        "pass"
    );
    let mut best = None;
    let mut misses = 0;
    for rate in rates {
        let out = dir.path().join(format!("bench-{rate}.json"));
        let before = children_cpu_s();
        let started = Instant::now();
        let status = Command::new(env!("CARGO_BIN_EXE_goodput"))
            .args([
                "record",
                "--url",
                &server.url(),
                "--model",
                "sim",
                "--no-progress",
            ])
            .args([
                "--request-rate",
                &rate.to_string(),
                "--duration",
                &format!("{secs}s"),
            ])
            .args([
                "--grace",
                "2s",
                "--timeout",
                "5s",
                "--max-tokens",
                "64",
                "--ignore-eos",
            ])
            .args(["--random-input-len", "32", "--seed", "1"])
            .arg("--out")
            .arg(&out)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("run goodput record");
        let cpu = children_cpu_s() - before;
        let wall = started.elapsed().as_secs_f64();
        let trace: Value = std::fs::read(&out)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null);
        if !status.success() || trace.is_null() {
            println!("{rate:>8} recorder failed ({status})");
            break;
        }
        let f = figures(&trace);
        let conns = server
            .stats
            .connections
            .load(std::sync::atomic::Ordering::Relaxed);
        eprintln!(
            "  sim connections so far: {conns}; lag p50/p90/max: {:.3}/{:.3}/{:.3} ms",
            f.lags.0, f.lags.1, f.lags.2
        );
        let pass = f.ratio >= 0.99 && f.p99_lag_ms <= 1.0;
        println!(
            "{:>8} {:>7} {:>8.4} {:>7.3} ms {:>7} {:>8} {:>9} {:>8.2} {:>13.3} {:>5}   (wall {wall:.1} s)",
            rate,
            f.rows,
            f.ratio,
            f.p99_lag_ms,
            f.failed,
            f.unfinished,
            f.tokens,
            cpu,
            cpu * 1000.0 / (f.tokens / 1000.0),
            if pass { "yes" } else { "no" }
        );
        if pass {
            best = Some(rate);
            misses = 0;
        } else {
            misses += 1;
            if misses >= 2 {
                break;
            }
        }
    }
    match best {
        Some(rate) => println!("highest passing rate: {rate}/s"),
        None => println!("no rate passed"),
    }
}
