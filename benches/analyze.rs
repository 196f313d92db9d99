//! Analyzer benchmark: a generated 1,000,000-row trace (about 140 MB), measured
//! side by side in one run.
//!
//! ```text
//! cargo bench --bench analyze
//! ```
//!
//! * `parse-only`: the analyzer's own streaming parse of the bytes into rows
//!   (`trace::parse::parse`), nothing else — the baseline the issue asks for;
//! * `full analysis`: byte limit + sha256 + parse + document/row validation +
//!   verdicts + receipt + canonical JSON rendering (`analyze_bytes` + render);
//! * for context, serde_json's token-level floor (`IgnoredAny`) and a generic
//!   `serde_json::Value` parse of the same bytes.
//!
//! Each measurement runs `REPS` times, interleaved, and the minimum and median
//! are printed. Peak memory of one full analysis is measured in a fresh child
//! process (this binary re-run with `GOODPUT_BENCH_CHILD`) that does what the
//! CLI does — read the file, `analyze_owned`, render — as the kernel's
//! high-water mark of resident memory (`VmHWM`), input bytes included.
//! Last, the release `goodput` binary is timed end to end (process start to
//! exit) on `fixtures/mixed_120.json`.

use std::hint::black_box;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use goodput_core::analyze::{analyze_bytes, analyze_owned, AnalyzeOptions};
use goodput_core::trace::Limits;
use goodput_util::json::to_canonical_json;

const ROWS: usize = 1_000_000;
const REPS: usize = 5;

/// A deterministic trace of `rows` rows: 86 % completed (passes, TTFT misses,
/// TPOT stalls), 5 % failed, 5 % in flight, 3 % warm-up arrivals, 1 % invalid;
/// two classes; a quarter of the rows carry labels.
fn generate(rows: usize) -> Vec<u8> {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64
    };
    let window_ms = 3_600_000.0;
    let mut out = Vec::with_capacity(rows * 150);
    out.extend_from_slice(
        br#"{"schema":"goodput-trace/1","window":{"startMs":60000,"endMs":3660000,"horizonMs":3700000},"warmup":{"startMs":0,"endMs":60000},"equality":"inclusive","classes":{"interactive":{"ttftMs":1000,"tpotMs":50,"e2eMs":15000},"batch":{"ttftMs":5000,"tpotMs":null,"e2eMs":60000}},"defaultClass":"interactive","workload":{"arrival":"poisson","ratePerS":277.8,"seed":1},"rows":["#,
    );
    for i in 0..rows {
        if i > 0 {
            out.push(b',');
        }
        let u = next();
        let arrival = if u < 0.03 {
            next() * 60_000.0
        } else {
            60_000.0 + next() * window_ms
        };
        let arrival = (arrival * 10.0).round() / 10.0;
        let class = if next() < 0.2 {
            r#""class":"batch","#
        } else {
            ""
        };
        let kind = next();
        let row = if kind < 0.86 {
            let ttft = (80.0 + next() * 1200.0).round();
            let tokens = 2 + (next() * 300.0) as u64;
            let tpot = if next() < 0.05 {
                90.0
            } else {
                20.0 + next() * 25.0
            };
            let first = arrival + ttft;
            let done = ((first + tpot * (tokens - 1) as f64) * 10.0).round() / 10.0;
            format!(
                r#"{{"id":"r{i:07}",{class}"arrivalMs":{arrival},"status":"completed","firstTokenMs":{first},"completedMs":{done},"outputTokens":{tokens}"#
            )
        } else if kind < 0.91 {
            format!(
                r#"{{"id":"r{i:07}",{class}"arrivalMs":{arrival},"status":"failed","reason":"timeout","endedMs":{}"#,
                arrival + 30_000.0
            )
        } else if kind < 0.96 {
            format!(r#"{{"id":"r{i:07}",{class}"arrivalMs":{arrival},"status":"in_flight""#)
        } else if kind < 0.97 {
            format!(r#"{{"id":"r{i:07}",{class}"arrivalMs":"{arrival}","status":"in_flight""#)
        } else {
            format!(
                r#"{{"id":"r{i:07}",{class}"arrivalMs":{arrival},"status":"completed","firstTokenMs":{},"completedMs":{},"outputTokens":1"#,
                arrival + 300.0,
                arrival + 300.0
            )
        };
        out.extend_from_slice(row.as_bytes());
        if i % 4 == 0 {
            out.extend_from_slice(br#","labels":{"promptTokens":512,"cache":"warm"}"#);
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]}\n");
    out
}

fn limits(bytes: &[u8]) -> Limits {
    Limits {
        max_rows: ROWS as u64,
        max_bytes: bytes.len() as u64,
    }
}

fn full_analysis(bytes: &[u8]) -> usize {
    let options = AnalyzeOptions {
        limits: limits(bytes),
        ..AnalyzeOptions::default()
    };
    let analysis = analyze_bytes(bytes, options).expect("generated trace is accepted");
    to_canonical_json(&analysis.receipt).expect("renders").len()
}

fn time<T>(f: impl FnOnce() -> T) -> Duration {
    let t = Instant::now();
    black_box(f());
    t.elapsed()
}

fn stats(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    (v[0].as_secs_f64(), v[v.len() / 2].as_secs_f64())
}

fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|n| n.parse().ok()))
        })
        .unwrap_or(0)
}

fn main() {
    if let Ok(path) = std::env::var("GOODPUT_BENCH_CHILD") {
        child_peak_memory(&path);
        return;
    }
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks for a list; there are no unit benches here.
    }

    let t = Instant::now();
    let bytes = generate(ROWS);
    let mb = bytes.len() as f64 / 1e6;
    println!(
        "generated {ROWS} rows, {mb:.1} MB, in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    time_in_process(&bytes, mb);
    peak_memory(bytes, mb);
    end_to_end();
}

/// The child: one full analysis from the file, then the high-water mark
/// before and after, printed.
fn child_peak_memory(path: &str) {
    let before = peak_rss_kib();
    // The CLI's path: read the file, analyze it by value (the text is freed
    // once hashed and parsed), render the receipt.
    let bytes = std::fs::read(path).expect("read trace");
    let options = AnalyzeOptions {
        limits: limits(&bytes),
        ..AnalyzeOptions::default()
    };
    let analysis = analyze_owned(bytes, options).expect("generated trace is accepted");
    black_box(to_canonical_json(&analysis.receipt).expect("renders"));
    println!("{before} {}", peak_rss_kib());
}

/// The floor, the context, parse-only and the full analysis, interleaved
/// `REPS` times (the `Value` parse twice), with their minima and medians.
fn time_in_process(bytes: &[u8], mb: f64) {
    let (mut parse, mut full, mut ignored, mut value) = (vec![], vec![], vec![], vec![]);
    for _ in 0..REPS {
        ignored.push(time(|| {
            serde_json::from_slice::<serde::de::IgnoredAny>(bytes).expect("json")
        }));
        parse.push(time(|| {
            goodput_core::trace::parse::parse(bytes).expect("parses")
        }));
        full.push(time(|| full_analysis(bytes)));
    }
    for _ in 0..2 {
        value.push(time(|| {
            serde_json::from_slice::<serde_json::Value>(bytes).expect("json")
        }));
    }
    let (p_min, p_med) = stats(parse);
    let (f_min, f_med) = stats(full);
    let (i_min, _) = stats(ignored);
    let (v_min, _) = stats(value);
    println!("serde_json IgnoredAny (floor)   min {i_min:.3} s");
    println!("serde_json::Value (context)     min {v_min:.3} s");
    println!(
        "parse-only                      min {p_min:.3} s  median {p_med:.3} s  ({:.0} MB/s)",
        mb / p_min
    );
    println!(
        "full analysis                   min {f_min:.3} s  median {f_med:.3} s  ({:.0} MB/s)",
        mb / f_min
    );
    println!(
        "full / parse-only               {:.2}x (min/min), {:.2}x (median/median)",
        f_min / p_min,
        f_med / p_med
    );
}

/// Peak memory of one full analysis, in a fresh process (this binary re-run
/// as the child) reading the trace from a file.
fn peak_memory(bytes: Vec<u8>, mb: f64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path: PathBuf = dir.path().join("trace-1m.json");
    std::fs::File::create(&path)
        .and_then(|mut f| f.write_all(&bytes))
        .expect("write trace");
    drop(bytes);
    let exe = std::env::current_exe().expect("current exe");
    let out = std::process::Command::new(exe)
        .env("GOODPUT_BENCH_CHILD", &path)
        .output()
        .expect("spawn child");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut it = text
        .split_whitespace()
        .filter_map(|n| n.parse::<f64>().ok());
    if let (Some(before), Some(peak)) = (it.next(), it.next()) {
        let peak_mb = peak * 1024.0 / 1e6;
        println!(
            "peak resident memory, full analysis: {peak_mb:.0} MB = {:.2}x the file (process baseline {:.0} MB)",
            peak_mb / mb,
            before * 1024.0 / 1e6
        );
    }
}

/// End to end on the bundled fixture: process start to exit, 30 runs.
fn end_to_end() {
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/mixed_120.json");
    let mut runs = Vec::new();
    for _ in 0..30 {
        runs.push(time(|| {
            let status = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"))
                .args(["analyze", fixture, "--json"])
                .stdout(std::process::Stdio::null())
                .status()
                .expect("spawn goodput");
            assert!(status.success());
        }));
    }
    let (e_min, e_med) = stats(runs);
    println!(
        "goodput analyze fixtures/mixed_120.json, process start to exit: min {:.2} ms, median {:.2} ms (30 runs)",
        e_min * 1e3,
        e_med * 1e3
    );
}
