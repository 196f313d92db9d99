//! Recorder throughput benchmark (`cargo bench --bench record`).
//!
//! First the reference rows (`record/realistic.rs`): streams shaped like
//! real servers' — one token per event, 1 ms and 10 ms apart, and
//! 100,000-token prompts — from a sim in its own process, the two
//! processes pinned to cores of their own; p50/p99 send lag, CPU per 1,000
//! tokens and per request, and the TTFT error against the sim's own
//! measured first-token time, side by side with `GOODPUT_BENCH_BASELINE`.
//! `GOODPUT_BENCH_REALISTIC=0` skips them, `GOODPUT_BENCH_REAL_SECS=10`
//! sets their run length, `GOODPUT_BENCH_REAL_ROWS=1ms,10ms,long` picks
//! some, `GOODPUT_BENCH_NEIGHBOUR=1` adds the two loads beside a CPU-bound
//! process on each core. The rest below is the older sweep.
//!
//! Starts the sim in this process (one runtime thread) with near-zero latency
//! (no prefill, a 0.02 ms decode step, no per-sequence cost, batch 4096) and
//! 64 output tokens per request, then runs the real `goodput record` binary
//! against it at increasing Poisson rates, three runs of a few seconds each.
//! For every rate it prints, computed from the traces the recorder wrote (not
//! from its own summary): the lowest achieved/scheduled arrival ratio, the
//! median of the runs' p99 send lags, failures, streamed tokens, and the
//! recorder's CPU time (user + system, from getrusage(RUSAGE_CHILDREN) around
//! the children) per 1,000 streamed tokens.
//!
//! Pass: ratio ≥ 0.99 in every run and median p99 send lag ≤ 1 ms. Targets:
//! a pass at 10,000 requests/s with 16-token streams
//! (`GOODPUT_BENCH_RATES=10000 GOODPUT_BENCH_TOKENS=16`), and ≤ 2.5 ms CPU
//! per 1,000 tokens at 2,000 requests/s × 64 tokens.
//!
//! Each rate is run twice over: plain http, and https against a second sim
//! behind TLS (a certificate made at start by rcgen, trusted through
//! `--cacert`). The closing table sets p99 send lag and CPU per 1,000 tokens
//! of the two side by side. Targets: https costs at most 1.5× the CPU per
//! token of http; http at 2,000 requests/s keeps p99 send lag ≤ 1 ms.
//!
//! Then the workload check: at `GOODPUT_BENCH_WORKLOAD_RATE` (default 1,000)
//! requests/s, the median p99 send lag of three runs each with 32-word
//! prompts, with 2,000-word prompts, and with 2,000-token prompts made exact
//! by `--tokenizer` (the fixture tokenizer): preparing prompts happens before
//! the first send, so the send lag must not move. It prints the wall time of
//! each run too (the preparation shows there, not in the lag).
//!
//! Environment: `GOODPUT_BENCH_RATES=500,1000,…` (empty: skip the rate
//! sweep), `GOODPUT_BENCH_SECS=2`, `GOODPUT_BENCH_TLS=0` to skip the https
//! runs, `GOODPUT_BENCH_TOKENS=64` (output tokens per request),
//! `GOODPUT_BENCH_BIN=PATH` (another `goodput` binary to measure, e.g. a
//! build of an earlier commit, against the same in-process sim),
//! `GOODPUT_BENCH_BASELINE=PATH` (instead of the sweep: that binary beside
//! the one under test at every rate, run by run in turn against one sim,
//! with both figures and their ratio on one line; with
//! `GOODPUT_BENCH_TOKENS` per rate list, e.g. `…_RATES=2000 …_TOKENS=64`)
//! `GOODPUT_BENCH_KEEP=DIR` (copy each run's trace there) and
//! `GOODPUT_BENCH_WORKLOAD_RATE=1000` (0: skip the workload check).

#[path = "record/realistic.rs"]
mod realistic;

use std::process::Command;
use std::sync::atomic::Ordering;
use std::time::Instant;

use goodput_sim::engine::EngineParams;
use goodput_sim::tls::{server_config, Front};
use goodput_sim::{SimConfig, SimServer};
use serde_json::Value;

/// Runs per rate: one bad scheduling hiccup on a shared 2-core machine can
/// move a single run's p99, so each rate is judged on the median of three.
const REPEATS: usize = 3;

fn children_cpu_s() -> f64 {
    // SAFETY: getrusage fills the struct we hand it.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    cpu_s(&usage)
}

/// User + system seconds of a resource-usage record.
fn cpu_s(usage: &libc::rusage) -> f64 {
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
    }
}

/// How late this machine wakes a thread that sleeps 0.5 ms (p50, p99, max
/// in ms): the floor under any send lag the recorder can achieve here.
fn wakeup_noise_ms() -> (f64, f64, f64) {
    let mut over: Vec<f64> = (0..2000)
        .map(|_| {
            let t = Instant::now();
            std::thread::sleep(std::time::Duration::from_micros(500));
            (t.elapsed().as_secs_f64() - 0.0005) * 1000.0
        })
        .collect();
    over.sort_by(f64::total_cmp);
    (
        nearest_rank(&over, 50),
        nearest_rank(&over, 99),
        over[over.len() - 1],
    )
}

/// One rate, one scheme: the figures over its runs.
struct Point {
    rows: usize,
    min_ratio: f64,
    median_p99_ms: f64,
    p99s: Vec<f64>,
    failed: usize,
    unfinished: usize,
    tokens: f64,
    cpu_s: f64,
    /// Connections the sim accepted over the runs (each https one is a handshake).
    connections: u64,
}

impl Point {
    fn cpu_ms_per_1k_tokens(&self) -> f64 {
        self.cpu_s * 1000.0 / (self.tokens / 1000.0)
    }

    fn pass(&self) -> bool {
        self.min_ratio >= 0.99 && self.median_p99_ms <= 1.0
    }
}

/// What every run of the bench shares: the binary under test, the run
/// length, the output tokens per request and the scratch folder.
struct Setup<'a> {
    binary: &'a str,
    secs: f64,
    tokens: u32,
    dir: &'a std::path::Path,
}

impl Point {
    fn new() -> Point {
        Point {
            rows: 0,
            min_ratio: f64::INFINITY,
            median_p99_ms: 0.0,
            p99s: Vec::new(),
            failed: 0,
            unfinished: 0,
            tokens: 0.0,
            cpu_s: 0.0,
            connections: 0,
        }
    }

    /// Sets the median of the runs' p99s once every run is in.
    fn close(&mut self) {
        let mut sorted = self.p99s.clone();
        sorted.sort_by(f64::total_cmp);
        self.median_p99_ms = sorted[sorted.len() / 2];
    }
}

/// `binary record` against `url` at `rate` for `secs` with what every
/// bench run shares (2 s grace, 5 s timeout, `--ignore-eos`, seed `run`),
/// writing `out`; the caller adds the prompt and length flags.
fn record_command(
    binary: &str,
    url: &str,
    rate: f64,
    secs: f64,
    run: usize,
    out: &std::path::Path,
) -> Command {
    let mut command = Command::new(binary);
    command
        .args(["record", "--url", url, "--model", "sim", "--no-progress"])
        .args(["--request-rate", &rate.to_string()])
        .args(["--duration", &format!("{secs}s")])
        .args(["--grace", "2s", "--timeout", "5s", "--ignore-eos"])
        .args(["--seed", &run.to_string()])
        .arg("--out")
        .arg(out)
        .stdout(std::process::Stdio::null());
    command
}

/// Names each kept trace (`GOODPUT_BENCH_KEEP`) uniquely across binaries,
/// schemes and rates.
static KEPT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One run of `binary` at `rate` against `server`, added to `point`;
/// `false` when it failed (the reason is printed).
fn one_run(
    setup: &Setup,
    binary: &str,
    server: &SimServer,
    extra: &[String],
    rate: f64,
    run: usize,
    point: &mut Point,
) -> bool {
    let Setup {
        secs, tokens, dir, ..
    } = *setup;
    let url = server.url();
    let url = url.as_str();
    let connections_before = server.stats.connections.load(Ordering::Relaxed);
    let out = dir.join(format!("bench-{rate}-{run}.json"));
    let before = children_cpu_s();
    let status = record_command(binary, url, rate, secs, run, &out)
        .args(["--max-tokens", &tokens.to_string()])
        .args(["--random-input-len", "32"])
        .args(extra)
        .status()
        .expect("run goodput record");
    point.cpu_s += children_cpu_s() - before;
    point.connections += server.stats.connections.load(Ordering::Relaxed) - connections_before;
    let trace: Value = std::fs::read(&out)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    if let Ok(keep) = std::env::var("GOODPUT_BENCH_KEEP") {
        let seq = KEPT.fetch_add(1, Ordering::Relaxed);
        let name = format!("{seq:03}-{rate}-{run}.json");
        let _ = std::fs::copy(&out, std::path::Path::new(&keep).join(name));
    }
    let _ = std::fs::remove_file(&out);
    if !status.success() || trace.is_null() {
        println!("{rate:>8} {binary} failed against {url} ({status})");
        return false;
    }
    let f = figures(&trace);
    point.p99s.push(f.p99_lag_ms);
    point.min_ratio = point.min_ratio.min(f.ratio);
    point.tokens += f.tokens;
    point.rows += f.rows;
    point.failed += f.failed;
    point.unfinished += f.unfinished;
    true
}

/// Runs the recorder `REPEATS` times at `rate` against `server`; `None`
/// when a run failed (the reason is printed).
fn measure(setup: &Setup, server: &SimServer, extra: &[String], rate: f64) -> Option<Point> {
    let mut point = Point::new();
    for run in 0..REPEATS {
        if !one_run(setup, setup.binary, server, extra, rate, run, &mut point) {
            return None;
        }
    }
    point.close();
    Some(point)
}

/// The baseline binary and the one under test at `rate`, run by run in
/// turn (A B A B A B) against the same sim, so both see the same machine.
fn measure_pair(
    setup: &Setup,
    baseline: &str,
    server: &SimServer,
    rate: f64,
) -> Option<(Point, Point)> {
    let (mut a, mut b) = (Point::new(), Point::new());
    for run in 0..REPEATS {
        if !one_run(setup, baseline, server, &[], rate, run, &mut a)
            || !one_run(setup, setup.binary, server, &[], rate, run, &mut b)
        {
            return None;
        }
    }
    a.close();
    b.close();
    Some((a, b))
}

/// `GOODPUT_BENCH_BASELINE`: the two binaries side by side at every rate.
fn side_by_side(setup: &Setup, baseline: &str, server: &SimServer, rates: &[f64]) {
    println!(
        "\nside by side, run by run in turn: A = {baseline}, B = {}",
        setup.binary
    );
    println!(
        "{:>8} {:>11} {:>11} {:>13} {:>13} {:>9}   p99 per run (A | B)",
        "rate/s", "A med p99", "B med p99", "A cpu/1k tok", "B cpu/1k tok", "B/A cpu"
    );
    for &rate in rates {
        let Some((a, b)) = measure_pair(setup, baseline, server, rate) else {
            return;
        };
        let runs = |p: &Point| {
            p.p99s
                .iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        println!(
            "{:>8} {:>8.3} ms {:>8.3} ms {:>10.3} ms {:>10.3} ms {:>8.2}x   {} | {} ms",
            rate,
            a.median_p99_ms,
            b.median_p99_ms,
            a.cpu_ms_per_1k_tokens(),
            b.cpu_ms_per_1k_tokens(),
            b.cpu_ms_per_1k_tokens() / a.cpu_ms_per_1k_tokens(),
            runs(&a),
            runs(&b)
        );
    }
}

fn print_point(rate: f64, scheme: &str, p: &Point) {
    let runs: Vec<String> = p.p99s.iter().map(|x| format!("{x:.2}")).collect();
    println!(
        "{:>8} {:>6} {:>7} {:>8.4} {:>7.3} ms {:>7} {:>8} {:>9} {:>8.2} {:>13.3} {:>6} {:>5}   (p99 per run: {} ms)",
        rate,
        scheme,
        p.rows,
        p.min_ratio,
        p.median_p99_ms,
        p.failed,
        p.unfinished,
        p.tokens,
        p.cpu_s,
        p.cpu_ms_per_1k_tokens(),
        p.connections,
        if p.pass() { "yes" } else { "no" },
        runs.join(", ")
    );
}

/// A sim behind TLS with a fresh certificate for 127.0.0.1, and the CA
/// file the recorder must trust.
fn tls_sim(config: SimConfig, dir: &std::path::Path) -> (SimServer, std::path::PathBuf) {
    let key = rcgen::KeyPair::generate().expect("key");
    let params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("params");
    let cert = params.self_signed(&key).expect("certificate");
    let (cert_path, key_path) = (dir.join("sim.pem"), dir.join("sim.key"));
    std::fs::write(&cert_path, cert.pem()).expect("write cert");
    std::fs::write(&key_path, key.serialize_pem()).expect("write key");
    let front = Front {
        tls: Some(server_config(&cert_path, &key_path).expect("TLS config")),
        require_header: None,
    };
    let server = SimServer::start_with(config, front, 1).expect("start the TLS sim");
    (server, cert_path)
}

/// The bench's knobs, read from the environment (module docs list them).
struct BenchEnv {
    rates: Vec<f64>,
    secs: f64,
    with_tls: bool,
    tokens: u32,
    binary: String,
    workload_rate: f64,
}

impl BenchEnv {
    fn read() -> BenchEnv {
        let number = |name: &str| std::env::var(name).ok().and_then(|s| s.parse().ok());
        BenchEnv {
            rates: std::env::var("GOODPUT_BENCH_RATES")
                .unwrap_or_else(|_| "500,1000,2000,3000,4000".into())
                .split(',')
                .filter_map(|s| s.trim().parse().ok())
                .collect(),
            secs: number("GOODPUT_BENCH_SECS").unwrap_or(2.0),
            with_tls: std::env::var("GOODPUT_BENCH_TLS").map_or(true, |v| v != "0"),
            tokens: std::env::var("GOODPUT_BENCH_TOKENS")
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(64),
            binary: std::env::var("GOODPUT_BENCH_BIN")
                .unwrap_or_else(|_| env!("CARGO_BIN_EXE_goodput").to_owned()),
            workload_rate: number("GOODPUT_BENCH_WORKLOAD_RATE").unwrap_or(1000.0),
        }
    }
}

/// The near-zero-latency sim every run records against.
fn sim_config(tokens: u32) -> SimConfig {
    SimConfig {
        engine: EngineParams {
            max_batch: 4096,
            prefill_ms_per_1k_tokens: 0.0,
            decode_step_ms: 0.02,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (f64::from(tokens), 0.0),
        faults: vec![],
        seed: 0,
        model_name: "sim".into(),
        also_served: vec![],
        quirks: Default::default(),
        tokenizer: None,
    }
}

fn main() {
    let env = BenchEnv::read();
    let config = sim_config(env.tokens);
    let noise = wakeup_noise_ms();
    println!(
        "machine wake-up noise (0.5 ms sleeps, before the runs): p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
        noise.0, noise.1, noise.2
    );
    if std::env::var("GOODPUT_BENCH_REALISTIC").map_or(true, |v| v != "0") {
        let secs = std::env::var("GOODPUT_BENCH_REAL_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(10.0);
        let baseline = std::env::var("GOODPUT_BENCH_BASELINE").ok();
        realistic::run(&env.binary, baseline.as_deref(), secs, REPEATS);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let server = SimServer::start(config.clone(), 1).expect("start the sim");
    let tls = env.with_tls.then(|| tls_sim(config, dir.path()));
    let setup = Setup {
        binary: &env.binary,
        secs: env.secs,
        tokens: env.tokens,
        dir: dir.path(),
    };
    print_sweep_header(&setup, &server, tls.as_ref().map(|(s, _)| s));
    if let Ok(baseline) = std::env::var("GOODPUT_BENCH_BASELINE") {
        side_by_side(&setup, &baseline, &server, &env.rates);
        return;
    }
    let Some(pairs) = rate_sweep(&setup, &server, tls.as_ref(), &env.rates) else {
        return;
    };
    if tls.is_some() {
        print_http_vs_https(&pairs);
    }
    if env.workload_rate > 0.0 {
        workload_check(&server.url(), dir.path(), env.workload_rate, env.secs);
    }
}

/// What the sweep runs against, and the heading of its table.
fn print_sweep_header(setup: &Setup, server: &SimServer, tls: Option<&SimServer>) {
    let (tokens, secs) = (setup.tokens, setup.secs);
    println!(
        "sim at {} (near-zero latency, {tokens} output tokens){}; {secs} s per rate, Poisson arrivals",
        server.url(),
        tls.map(|s| format!(" and {}", s.url()))
            .unwrap_or_default()
    );
    println!(
        "{:>8} {:>6} {:>7} {:>8} {:>10} {:>7} {:>8} {:>9} {:>8} {:>13} {:>6} {:>5}",
        "rate/s",
        "scheme",
        "rows",
        "min rat.",
        "med p99",
        "failed",
        "unfin.",
        "tokens",
        "cpu s",
        "cpu ms/1k tok",
        "conns",
        "pass"
    );
}

/// One rate's http point and, with TLS, its https point.
type RatePair = (f64, Point, Option<Point>);

/// Every rate over http (and https when `tls` is given) until two in a row
/// fail, printing each point and the highest passing rate; `None` when a
/// run failed (the reason is printed).
fn rate_sweep(
    setup: &Setup,
    server: &SimServer,
    tls: Option<&(SimServer, std::path::PathBuf)>,
    rates: &[f64],
) -> Option<Vec<RatePair>> {
    let mut best = None;
    let mut misses = 0;
    let mut pairs: Vec<RatePair> = Vec::new();
    for &rate in rates {
        let http = measure(setup, server, &[], rate)?;
        print_point(rate, "http", &http);
        let https = tls.and_then(|(tls_server, ca)| {
            let extra = vec!["--cacert".to_owned(), ca.display().to_string()];
            let p = measure(setup, tls_server, &extra, rate);
            if let Some(p) = &p {
                print_point(rate, "https", p);
            }
            p
        });
        let pass = http.pass();
        pairs.push((rate, http, https));
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
        Some(rate) => println!("highest passing rate (http): {rate}/s"),
        None => println!("no rate passed (http)"),
    }
    Some(pairs)
}

/// The closing table: http and https side by side at every rate both ran.
fn print_http_vs_https(pairs: &[RatePair]) {
    println!();
    println!("http vs https (median p99 send lag; recorder CPU per 1,000 tokens)");
    println!(
        "{:>8} {:>12} {:>12} {:>14} {:>14} {:>11}",
        "rate/s", "http p99", "https p99", "http cpu/1k", "https cpu/1k", "cpu ratio"
    );
    for (rate, http, https) in pairs {
        let Some(https) = https else { continue };
        println!(
            "{:>8} {:>9.3} ms {:>9.3} ms {:>11.3} ms {:>11.3} ms {:>10.2}x",
            rate,
            http.median_p99_ms,
            https.median_p99_ms,
            http.cpu_ms_per_1k_tokens(),
            https.cpu_ms_per_1k_tokens(),
            https.cpu_ms_per_1k_tokens() / http.cpu_ms_per_1k_tokens()
        );
    }
}

/// p99 send lag at one rate with short prompts, long prompts, and long
/// token-exact prompts (`--tokenizer`).
fn workload_check(url: &str, dir: &std::path::Path, rate: f64, secs: f64) {
    let tokenizer = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/fixtures/tokenizer/tokenizer.json"
    );
    let cases: [(&str, Vec<&str>); 3] = [
        ("32 words", vec!["--random-input-len", "32"]),
        ("2000 words", vec!["--input-tokens", "2000"]),
        (
            "2000 tokens, --tokenizer",
            vec!["--input-tokens", "2000", "--tokenizer", tokenizer],
        ),
    ];
    println!("\nworkload check at {rate}/s, {secs} s per run, {REPEATS} runs each (p99 send lag, from the traces)");
    println!(
        "{:>28} {:>7} {:>8} {:>10} {:>9}   p99 per run",
        "prompts", "rows", "min rat.", "med p99", "wall s"
    );
    for (name, extra) in cases {
        let mut p99s = Vec::new();
        let (mut rows, mut min_ratio, mut wall) = (0, f64::INFINITY, Vec::new());
        for run in 0..REPEATS {
            let out = dir.join(format!("workload-{run}.json"));
            let started = Instant::now();
            let status = record_command(env!("CARGO_BIN_EXE_goodput"), url, rate, secs, run, &out)
                .args(["--output-tokens", "64"])
                .args(&extra)
                .status()
                .expect("run goodput record");
            wall.push(started.elapsed().as_secs_f64());
            let trace: Value = std::fs::read(&out)
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or(Value::Null);
            if !status.success() || trace.is_null() {
                println!("{name:>28} recorder failed ({status})");
                return;
            }
            let f = figures(&trace);
            rows += f.rows;
            min_ratio = min_ratio.min(f.ratio);
            p99s.push(f.p99_lag_ms);
        }
        let mut sorted = p99s.clone();
        sorted.sort_by(f64::total_cmp);
        let runs: Vec<String> = p99s.iter().map(|p| format!("{p:.3}")).collect();
        let walls: Vec<String> = wall.iter().map(|w| format!("{w:.1}")).collect();
        println!(
            "{name:>28} {rows:>7} {min_ratio:>8.4} {:>7.3} ms {:>9}   {} ms",
            sorted[sorted.len() / 2],
            walls.join("/"),
            runs.join(", ")
        );
    }
}
