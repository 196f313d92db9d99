//! Recorder memory against run length (`cargo bench --bench record_rss`).
//!
//! Starts the sim in this process (16 output tokens at 1 ms a step, batch
//! 512) and runs the real `goodput record` binary against it at 200
//! requests/s for 600 s (120,000 requests), reading the recorder's resident
//! memory (`VmRSS` in `/proc/PID/status`) once a second. It prints RSS at
//! 10, 30, 60, 120, 300 s and at the end of the window, the peak (`VmHWM`)
//! at the end of the window, and the verdict: RSS at the end of the window
//! is within 10 % of RSS at 60 s (the recorder spools every ending to disk,
//! so its memory must not grow with the run).
//!
//! Environment: `GOODPUT_RSS_SECS=600` (the window), `GOODPUT_RSS_RATE=200`,
//! `GOODPUT_RSS_EARLY=60` (the instant compared against, s), and
//! `GOODPUT_BENCH_BIN=PATH` (another `goodput` binary, e.g. a build of an
//! earlier commit, measured against the same sim).

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use goodput_sim::engine::EngineParams;
use goodput_sim::{SimConfig, SimServer};

fn env_f64(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// A `kB` line of `/proc/PID/status` (`VmRSS`, `VmHWM`), in KiB.
fn status_kib(pid: u32, key: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn main() {
    let secs = env_f64("GOODPUT_RSS_SECS", 600.0);
    let rate = env_f64("GOODPUT_RSS_RATE", 200.0);
    let early_s = env_f64("GOODPUT_RSS_EARLY", 60.0).min(secs * 0.5);
    let binary = std::env::var("GOODPUT_BENCH_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_goodput").to_owned());
    let server = start_sim();
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("long.json");
    println!(
        "recorder {binary}\nsim at {}; {rate} req/s for {secs} s ({} requests), 16 output tokens",
        server.url(),
        (rate * secs) as u64
    );
    let started = Instant::now();
    let mut child = spawn_recorder(&binary, &server.url(), rate, secs, &out);
    let (samples, peak_at_end) = sample_rss(child.id(), started, &checkpoints(secs, early_s));
    let status = child.wait().expect("the recorder ends");
    let rows = std::fs::read(&out)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|v| v["rows"].as_array().map(Vec::len));
    println!(
        "recorder exited {status}; trace rows: {}",
        rows.map_or_else(|| "none".into(), |n| n.to_string())
    );
    if let Some(hwm) = peak_at_end {
        println!(
            "peak RSS (VmHWM) at the end of the window: {:.1} MiB",
            hwm as f64 / 1024.0
        );
    }
    print_verdict(&samples, early_s, secs);
}

/// The sim the recorder runs against: 16 output tokens at 1 ms a step, batch 512.
fn start_sim() -> SimServer {
    SimServer::start(
        SimConfig {
            engine: EngineParams {
                max_batch: 512,
                prefill_ms_per_1k_tokens: 0.0,
                decode_step_ms: 1.0,
                decode_ms_per_seq: 0.0,
            },
            output_tokens: (16.0, 0.0),
            faults: vec![],
            seed: 3,
            model_name: "sim".into(),
            also_served: vec![],
            quirks: Default::default(),
            tokenizer: None,
        },
        1,
    )
    .expect("start the sim")
}

/// `binary record` against `url` at `rate` for `secs`, writing `out`.
fn spawn_recorder(binary: &str, url: &str, rate: f64, secs: f64, out: &Path) -> Child {
    Command::new(binary)
        .args(["record", "--url", url, "--model", "sim"])
        .args(["--no-progress", "--no-preflight"])
        .args(["--request-rate", &rate.to_string()])
        .args(["--duration", &format!("{secs}s")])
        .args(["--grace", "2s", "--timeout", "5s", "--seed", "1"])
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .spawn()
        .expect("run goodput record")
}

/// The instants RSS is read at, s: the fixed ones inside the window, the
/// early one, and the end of the window.
fn checkpoints(secs: f64, early_s: f64) -> Vec<f64> {
    let mut checkpoints: Vec<f64> = [10.0, 30.0, early_s, 120.0, 300.0]
        .into_iter()
        .filter(|&t| t < secs * 0.99)
        .collect();
    checkpoints.sort_by(f64::total_cmp);
    checkpoints.dedup();
    checkpoints.push(secs * 0.99);
    checkpoints
}

/// RSS of `pid` at each checkpoint (printed as read), and its peak at the
/// last one read; stops early when the process has ended.
fn sample_rss(pid: u32, started: Instant, checkpoints: &[f64]) -> (Vec<(f64, u64)>, Option<u64>) {
    let mut samples: Vec<(f64, u64)> = Vec::new();
    let mut peak_at_end = None;
    for &t in checkpoints {
        while started.elapsed().as_secs_f64() < t {
            std::thread::sleep(Duration::from_millis(100));
        }
        let Some(rss) = status_kib(pid, "VmRSS") else {
            println!("the recorder ended before {t} s");
            break;
        };
        println!("  {t:>6.0} s  RSS {:>8.1} MiB", rss as f64 / 1024.0);
        samples.push((t, rss));
        peak_at_end = status_kib(pid, "VmHWM");
    }
    (samples, peak_at_end)
}

/// RSS at the end of the window against RSS at the early instant: within 10 %.
fn print_verdict(samples: &[(f64, u64)], early_s: f64, secs: f64) {
    let early = samples.iter().find(|(t, _)| *t == early_s).map(|s| s.1);
    let late = samples
        .last()
        .filter(|(t, _)| *t == secs * 0.99)
        .map(|s| s.1);
    if let (Some(early), Some(late)) = (early, late) {
        let growth = late as f64 / early as f64 - 1.0;
        println!(
            "RSS at {:.0} s vs {early_s:.0} s: {:+.1} % (target: within 10 %): {}",
            secs * 0.99,
            growth * 100.0,
            if growth <= 0.10 { "pass" } else { "FAIL" }
        );
    }
}
