//! The reference rows: streams shaped like real servers' (one token per
//! stream event, events 1 ms or 10 ms apart, 64 tokens) from a sim in its
//! own process, each process pinned to a core of its own where the machine
//! has two (`taskset`), and a long-context row (100,000-token prompts the
//! sim counts, 20 ms of prefill each).
//!
//! Per row, the median over three runs of: p50 and p99 send lag (the rows'
//! `sendLagMs`), the recorder's CPU (user + system, `wait4` on its process
//! alone) per 1,000 streamed tokens and per request, and the TTFT error: the
//! client's TTFT from its *actual* send (`firstTokenMs − arrivalMs −
//! sendLagMs`) less the sim's own measured time to first token for that
//! request (`server.ttftMs`, vLLM-style per-request metrics the sim reports
//! with `--server-timing vllm`), p50 and p99 over the rows. That difference
//! is what the client adds: the loopback, its wake-up, its reading.
//!
//! `GOODPUT_BENCH_NEIGHBOUR=1` adds each row again with a CPU-bound
//! neighbour (one busy process pinned to each core) for the whole run.
//! With `GOODPUT_BENCH_BASELINE=PATH`, every run is made by that binary and
//! by the one under test in turn (A B A B A B, one sim per row), and each
//! figure is printed for both with the ratio B/A.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// One reference row.
#[derive(Clone, Debug)]
pub struct Row {
    /// How the row is named in the table.
    pub name: &'static str,
    /// Requests per second (Poisson).
    pub rate: f64,
    /// The sim's decode step: the spacing of the stream's events.
    pub step_ms: f64,
    /// Output tokens per request (one per event).
    pub tokens: u32,
    /// Prompt length in words (the sim counts one token per word).
    pub prompt_tokens: u32,
    /// The sim's prefill cost.
    pub prefill_ms_per_1k: f64,
    /// A CPU-bound process on each core for the whole run.
    pub neighbour: bool,
}

/// The rows the bench runs: the two realistic loads, the long-context row,
/// and (`GOODPUT_BENCH_NEIGHBOUR=1`) the two loads again beside a busy
/// neighbour. `GOODPUT_BENCH_REAL_ROWS=1ms,10ms,long` picks some.
pub fn rows() -> Vec<Row> {
    let base = [
        Row {
            name: "2000/s x 64, 1 ms apart",
            rate: 2000.0,
            step_ms: 1.0,
            tokens: 64,
            prompt_tokens: 32,
            prefill_ms_per_1k: 0.0,
            neighbour: false,
        },
        Row {
            name: "1000/s x 64, 10 ms apart",
            rate: 1000.0,
            step_ms: 10.0,
            tokens: 64,
            prompt_tokens: 32,
            prefill_ms_per_1k: 0.0,
            neighbour: false,
        },
        Row {
            name: "20/s x 64, 100k-token prompts",
            rate: 20.0,
            step_ms: 10.0,
            tokens: 64,
            prompt_tokens: 100_000,
            prefill_ms_per_1k: 0.2,
            neighbour: false,
        },
    ];
    let picked =
        std::env::var("GOODPUT_BENCH_REAL_ROWS").unwrap_or_else(|_| "1ms,10ms,long".into());
    let keys = ["1ms", "10ms", "long"];
    let mut rows: Vec<Row> = base
        .iter()
        .zip(keys)
        .filter(|(_, k)| picked.split(',').any(|p| p.trim() == *k))
        .map(|(r, _)| r.clone())
        .collect();
    if std::env::var("GOODPUT_BENCH_NEIGHBOUR").is_ok_and(|v| v == "1") {
        let busy: Vec<Row> = rows
            .iter()
            .filter(|r| r.prompt_tokens < 1000)
            .map(|r| Row {
                neighbour: true,
                ..r.clone()
            })
            .collect();
        rows.extend(busy);
    }
    rows
}

/// Whether processes can be pinned to two different cores here.
fn can_pin() -> bool {
    std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)
        && Command::new("taskset")
            .args(["-c", "0", "true"])
            .status()
            .is_ok_and(|s| s.success())
}

/// `program args…`, pinned to `core` when pinning works here.
fn pinned(core: usize, program: &str) -> Command {
    if can_pin() {
        let mut c = Command::new("taskset");
        c.args(["-c", &core.to_string(), program]);
        c
    } else {
        Command::new(program)
    }
}

/// The sim of one row, in its own process on core 0.
pub struct ExternalSim {
    child: Child,
    /// Its base URL.
    pub url: String,
}

impl ExternalSim {
    /// Starts `binary sim` for `row` and waits for its "listening on" line.
    pub fn start(binary: &str, row: &Row) -> ExternalSim {
        let mut child = pinned(0, binary)
            .args(["sim", "--port", "0", "--max-batch", "4096"])
            .args(["--decode-step-ms", &row.step_ms.to_string()])
            .args(["--decode-ms-per-seq", "0"])
            .args([
                "--prefill-ms-per-1k-tokens",
                &row.prefill_ms_per_1k.to_string(),
            ])
            .args(["--output-tokens", &format!("{}:0", row.tokens)])
            .args(["--server-timing", "vllm"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start goodput sim");
        let stdout = child.stdout.take().expect("sim stdout");
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        reader.read_line(&mut line).expect("sim prints its address");
        // Whatever else it prints is read and dropped, so it never writes
        // into a closed pipe.
        std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .expect("a URL in the sim's first line")
            .to_owned();
        ExternalSim { child, url }
    }
}

impl Drop for ExternalSim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A CPU-bound process on each core, while it lives.
struct Neighbour(Vec<Child>);

impl Neighbour {
    fn start() -> Neighbour {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Neighbour(
            (0..cores)
                .filter_map(|c| {
                    pinned(c, "sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .ok()
                })
                .collect(),
        )
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// What one run of one row measured.
#[derive(Clone, Debug, Default)]
pub struct RunFigures {
    p50_lag_ms: f64,
    p99_lag_ms: f64,
    cpu_ms_per_1k_tokens: f64,
    cpu_ms_per_request: f64,
    ttft_err_p50_ms: f64,
    ttft_err_p99_ms: f64,
    rows: usize,
    failed: usize,
}

/// Runs `binary record` once for `row` against `url`, on core 1; `None`
/// when it failed (printed).
fn one_run(binary: &str, url: &str, row: &Row, secs: f64, run: usize) -> Option<RunFigures> {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("t.json");
    let mut command = pinned(1, binary);
    command
        .args(["record", "--url", url, "--model", "sim", "--no-progress"])
        .args(["--request-rate", &row.rate.to_string()])
        .args(["--duration", &format!("{secs}s")])
        .args(["--grace", "5s", "--timeout", "30s", "--ignore-eos"])
        .args(["--max-tokens", &row.tokens.to_string()])
        .args(["--seed", &run.to_string()])
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    if row.prompt_tokens >= 1000 {
        // Prepared before t0 (token-exact lengths), not made at send time.
        command.args(["--input-tokens", &format!("{}:0", row.prompt_tokens)]);
    } else {
        command.args(["--random-input-len", &row.prompt_tokens.to_string()]);
    }
    let child = command.spawn().expect("run goodput record");
    let (code, cpu_s) = wait_with_cpu(child);
    let trace: Value = std::fs::read(&out)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    if code != 0 || trace.is_null() {
        println!("  {} failed against {url} (exit {code})", binary);
        return None;
    }
    Some(figures(&trace, cpu_s))
}

/// Waits for `child` alone and returns its exit code and its CPU seconds
/// (user + system, from `wait4`: this process's other children, the sim
/// among them, are not counted).
fn wait_with_cpu(child: Child) -> (i32, f64) {
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: wait4 fills the status and the rusage we hand it, for our child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let got = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    std::mem::forget(child); // reaped here, not by Child
    let code = if got == pid && libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    (code, super::cpu_s(&usage))
}

/// The figures of one trace, from its rows.
fn figures(trace: &Value, cpu_s: f64) -> RunFigures {
    let rows = trace["rows"].as_array().cloned().unwrap_or_default();
    let (mut lags, mut errors) = (Vec::new(), Vec::new());
    let (mut tokens, mut failed, mut sent) = (0.0, 0, 0usize);
    for row in &rows {
        let num = |v: &Value| v.as_f64();
        let lag = num(&row["labels"]["sendLagMs"]);
        if let Some(lag) = lag {
            lags.push(lag);
            sent += 1;
        }
        match row["status"].as_str() {
            Some("completed") => tokens += num(&row["outputTokens"]).unwrap_or(0.0),
            Some("failed") => failed += 1,
            _ => {}
        }
        let client = num(&row["firstTokenMs"])
            .zip(num(&row["arrivalMs"]))
            .zip(lag)
            .map(|((first, arrival), lag)| first - arrival - lag);
        if let (Some(client), Some(engine)) = (client, num(&row["labels"]["server.ttftMs"])) {
            errors.push(client - engine);
        }
    }
    lags.sort_by(f64::total_cmp);
    errors.sort_by(f64::total_cmp);
    RunFigures {
        p50_lag_ms: super::nearest_rank(&lags, 50),
        p99_lag_ms: super::nearest_rank(&lags, 99),
        cpu_ms_per_1k_tokens: cpu_s * 1000.0 / (tokens / 1000.0),
        cpu_ms_per_request: cpu_s * 1000.0 / sent.max(1) as f64,
        ttft_err_p50_ms: super::nearest_rank(&errors, 50),
        ttft_err_p99_ms: super::nearest_rank(&errors, 99),
        rows: rows.len(),
        failed,
    }
}

/// The median of each figure over `runs`.
fn medians(runs: &[RunFigures]) -> RunFigures {
    let median = |f: fn(&RunFigures) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    RunFigures {
        p50_lag_ms: median(|r| r.p50_lag_ms),
        p99_lag_ms: median(|r| r.p99_lag_ms),
        cpu_ms_per_1k_tokens: median(|r| r.cpu_ms_per_1k_tokens),
        cpu_ms_per_request: median(|r| r.cpu_ms_per_request),
        ttft_err_p50_ms: median(|r| r.ttft_err_p50_ms),
        ttft_err_p99_ms: median(|r| r.ttft_err_p99_ms),
        rows: runs.iter().map(|r| r.rows).sum(),
        failed: runs.iter().map(|r| r.failed).sum(),
    }
}

/// The figures as one table cell group.
fn cells(f: &RunFigures) -> String {
    format!(
        "{:>7.3} {:>7.3} {:>8.3} {:>8.3} {:>7.3} {:>7.3} {:>6} {:>4}",
        f.p50_lag_ms,
        f.p99_lag_ms,
        f.cpu_ms_per_1k_tokens,
        f.cpu_ms_per_request,
        f.ttft_err_p50_ms,
        f.ttft_err_p99_ms,
        f.rows,
        f.failed
    )
}

const HEAD: &str = "lag p50 lag p99 cpu/1ktok cpu/req  ttftE50 ttftE99   rows fail";

/// Runs every row (`runs` times each, `secs` long) and prints the table;
/// with a baseline, A and B in turn and their ratios.
pub fn run(binary: &str, baseline: Option<&str>, secs: f64, runs: usize) {
    let pinning = if can_pin() {
        "sim on CPU 0, recorder on CPU 1"
    } else {
        "not pinned (one core or no taskset)"
    };
    println!("\nreference rows: sim in its own process, one token per event; {pinning}; {secs} s runs, median of {runs}");
    println!("(ms; cpu = the recorder's user + system; ttftE = client TTFT from its send − the sim's own TTFT)");
    for row in rows() {
        let sim = ExternalSim::start(binary, &row);
        let _busy = row.neighbour.then(Neighbour::start);
        let label = if row.neighbour {
            format!("{} + busy neighbour", row.name)
        } else {
            row.name.to_owned()
        };
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for run in 0..runs {
            if let Some(base) = baseline {
                a.extend(one_run(base, &sim.url, &row, secs, run));
            }
            b.extend(one_run(binary, &sim.url, &row, secs, run));
        }
        print_row(&label, baseline.is_some().then_some(&a[..]), &b);
    }
}

/// One row of the table (with its baseline and ratios when there is one).
fn print_row(label: &str, a: Option<&[RunFigures]>, b: &[RunFigures]) {
    if b.is_empty() {
        println!("{label}: no run succeeded");
        return;
    }
    let mb = medians(b);
    let p99s: Vec<String> = b.iter().map(|r| format!("{:.2}", r.p99_lag_ms)).collect();
    println!("{label}");
    println!("      {HEAD}");
    match a {
        Some(a) if !a.is_empty() => {
            let ma = medians(a);
            println!("   A  {}", cells(&ma));
            println!(
                "   B  {}   (B p99 lag per run: {})",
                cells(&mb),
                p99s.join(", ")
            );
            println!(
                "  B/A {:>7.2} {:>7.2} {:>8.2} {:>8.2} {:>7.2} {:>7.2}",
                mb.p50_lag_ms / ma.p50_lag_ms,
                mb.p99_lag_ms / ma.p99_lag_ms,
                mb.cpu_ms_per_1k_tokens / ma.cpu_ms_per_1k_tokens,
                mb.cpu_ms_per_request / ma.cpu_ms_per_request,
                mb.ttft_err_p50_ms / ma.ttft_err_p50_ms,
                mb.ttft_err_p99_ms / ma.ttft_err_p99_ms,
            );
        }
        _ => println!(
            "      {}   (p99 lag per run: {})",
            cells(&mb),
            p99s.join(", ")
        ),
    }
}
