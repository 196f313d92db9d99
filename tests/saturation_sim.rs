//! Saturation against `goodput sim` on 127.0.0.1 (in-process, ephemeral
//! port): twice the sim's capacity with a short grace reads `overloaded`.
//! Runs are short (a few seconds of load) and bounded by the recorder's own
//! horizon.

mod common;

use common::recording::{receipt, record};
use goodput_sim::engine::EngineParams;
use goodput_sim::{SimConfig, SimServer};

/// The tests here measure a sim's pace: run one at a time, so two sims never
/// share the CPU (the rates they serve would drop below their capacity).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn exclusive() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The sim of the saturation examples: 4 sequences at a time, 10 ms per
/// step, 20 output tokens, no prefill cost: each request holds a slot for
/// 200 ms, so the capacity is 4 / 0.2 s = 20 requests per second.
fn sim_20_per_s() -> SimServer {
    sim(4, 10.0)
}

/// A sim of `max_batch` slots, `step_ms` per step and 20 output tokens:
/// capacity `max_batch / (20 × step_ms / 1000)` requests per second.
fn sim(max_batch: usize, step_ms: f64) -> SimServer {
    let config = SimConfig {
        engine: EngineParams {
            max_batch,
            prefill_ms_per_1k_tokens: 0.0,
            decode_step_ms: step_ms,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (20.0, 0.0),
        faults: vec![],
        seed: 1,
        model_name: "sim".into(),
        also_served: vec![],
        quirks: Default::default(),
        tokenizer: None,
    };
    SimServer::start(config, 1).expect("start sim")
}

#[test]
fn twice_the_sims_capacity_with_a_short_grace_reads_overloaded() {
    // 40/s constant for 3 s against 20/s: the queue grows by about 20 a
    // second (0 → ~60), served stays near 20/s, and a 1 s grace leaves a
    // third of the cohort censored, which must not hide the overload.
    let _alone = exclusive();
    let server = sim_20_per_s();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "40",
            "--arrival",
            "constant",
            "--duration",
            "3s",
            "--grace",
            "1s",
            "--metrics",
            "--metrics-interval",
            "200ms",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    // The sidecar: beside the trace, its sha256 in the workload, and the
    // sim's queue visible in it (40/s into 20/s for 3 s: tens waiting).
    let sidecar = dir.path().join("t.metrics.jsonl");
    let bytes = std::fs::read(&sidecar).expect("the sidecar is written");
    let sha: String =
        sha2::Digest::finalize(<sha2::Sha256 as sha2::Digest>::new_with_prefix(&bytes))
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
    assert_eq!(trace["workload"]["metricsSha256"], sha.as_str());
    assert_eq!(trace["workload"]["metricsFile"], "t.metrics.jsonl");
    let lines = goodput_core::server_metrics::parse_sidecar(&bytes).unwrap();
    // About 4 s at 200 ms: at least 10 scrapes, whatever the machine's load.
    assert!(lines.len() >= 10, "{} lines", lines.len());
    let peaks = goodput_core::server_metrics::peaks(&lines);
    assert!(peaks.waiting.is_some_and(|w| w >= 10.0), "{peaks:?}");
    assert_eq!(peaks.running, Some(4.0), "{peaks:?}");
    assert!(stdout.contains("server metrics: "), "{stdout}");
    let r = receipt(&out);
    let s = &r["results"]["all"]["saturation"];
    assert_eq!(s["verdict"], "overloaded", "{s}");
    assert_eq!(s["offeredPerS"], 40.0);
    let served = s["servedPerS"].as_f64().unwrap();
    assert!(served < 0.9 * 40.0, "{s}");
    assert!(
        stdout.contains("saturation: overloaded: waiting grew"),
        "{stdout}"
    );
    assert!(stdout.contains("the server was the bottleneck"), "{stdout}");
    let l = &r["results"]["all"]["littlesLaw"];
    assert_eq!(l["steadyState"], false, "{l}");
}

#[test]
fn the_issue_case_twice_capacity_for_10_s_with_a_5_s_grace_reads_overloaded() {
    // Exactly the case that used to pass Little's law as steady: the sim of
    // `--max-batch 4 --decode-step-ms 10 --decode-ms-per-seq 0
    // --output-tokens 20:0` (20/s, see `sim_20_per_s`), recorded with
    // `--request-rate 40 --duration 10s --grace 5s` and the recorder's
    // defaults otherwise (Poisson arrivals). About 400 arrive; by the
    // horizon (15 s) the sim has finished about 15 × 20 = 300, so about
    // a quarter of the cohort is censored, and in flight climbs by about
    // 20 a second across the window (≈ 100 at mid-window, ≈ 200 at its end).
    let _alone = exclusive();
    let server = sim_20_per_s();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, stdout, _) = record(
        &server.url(),
        &out,
        &["--request-rate", "40", "--duration", "10s", "--grace", "5s"],
    );
    assert_eq!(code, 0, "{stdout}");
    let r = receipt(&out);
    let all = &r["results"]["all"];
    let s = &all["saturation"];
    assert_eq!(s["verdict"], "overloaded", "{s}");
    // One served figure: the saturation block repeats rates.servedPerS.
    assert_eq!(s["servedPerS"], all["rates"]["servedPerS"]);
    // Served near the sim's 20/s (never above it; a loaded machine only
    // slows the sim), far from the ~40/s offered.
    let served = s["servedPerS"].as_f64().unwrap();
    assert!((14.0..=21.0).contains(&served), "{s}");
    let censored = all["counts"]["censored"].as_u64().unwrap();
    assert!(censored >= 50, "{}", all["counts"]);
    // Little's law counts the censored rows at their lower bound: not steady.
    let l = &all["littlesLaw"];
    assert_eq!(l["steadyState"], false, "{l}");
    assert!(
        stdout.contains("saturation: overloaded: waiting grew"),
        "{stdout}"
    );
    assert!(stdout.contains("the server was the bottleneck"), "{stdout}");
}

#[test]
fn the_capacity_search_lands_within_ten_percent_of_the_sims_capacity() {
    // 20 slots, 50 ms steps, 20 tokens: each request holds a slot for 1 s,
    // so the capacity is 20/s (long steps keep timer slop on a busy machine
    // to a few per cent of it). A 200 ms TTFT gate: below 20/s a request
    // waits at most two steps (≤ 100 ms); above it the queue grows by
    // (r − 20) a second and the extra wait (r − 20)·t / 20 s passes 100 ms
    // after t = 2 / (r − 20) s: at 21/s a fifth of the 2.5 s window misses.
    // Starting at 12/s: 12 passes, 24 fails, then bisection to 10 %
    // precision (at most 6 points).
    let _alone = exclusive();
    let server = sim(20, 50.0);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trace-{rate}.json");
    let (code, stdout, _) = record(
        &server.url(),
        &out,
        &[
            "--find-capacity",
            "--attainment",
            "0.9",
            "--request-rate",
            "12",
            "--precision",
            "10%",
            "--max-points",
            "6",
            "--arrival",
            "constant",
            "--duration",
            "2.5s",
            "--grace",
            "1.5s",
            "--cooldown",
            "0.3s",
            "--slo",
            "chat:ttft=200",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert!(dir.path().join("trace-12.json").exists(), "{stdout}");
    assert!(dir.path().join("trace-24.json").exists(), "{stdout}");
    let line = stdout
        .lines()
        .find(|l| l.starts_with("capacity: "))
        .unwrap_or_else(|| panic!("no capacity line: {stdout}"));
    let low: f64 = line["capacity: ".len()..]
        .split('/')
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!((18.0..=22.0).contains(&low), "{stdout}");
    assert!(line.contains("(bracket "), "{line}");
}

#[test]
fn a_capacity_search_judged_by_p95_ttft_stops_where_the_tail_does() {
    // The sim of the search above (20/s), under a 5 s TTFT gate that every
    // request meets at every rate tried, so the pass share alone would keep
    // doubling past 24/s. With --max-p95-ttft-ms 200: below 20/s a request
    // waits at most two 50 ms steps; at 24/s the queue grows 4/s and the
    // p95 arrival (t ≈ 2.4 s) waits about 0.2 t ≈ 475 ms: 12 holds, 24 does
    // not, and the bisection lands between 18 and 22.
    let _alone = exclusive();
    let server = sim(20, 50.0);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trace-{rate}.json");
    let (code, stdout, _) = record(
        &server.url(),
        &out,
        &[
            "--find-capacity",
            "--request-rate",
            "12",
            "--max-p95-ttft-ms",
            "200",
            "--precision",
            "10%",
            "--max-points",
            "5",
            "--arrival",
            "constant",
            "--duration",
            "2.5s",
            "--grace",
            "2.5s",
            "--cooldown",
            "0.3s",
            "--slo",
            "chat:ttft=5000",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("frontier (5 points, target pass share 90 %, p95 TTFT ≤ 200 ms):"),
        "{stdout}"
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("capacity: "))
        .unwrap_or_else(|| panic!("no capacity line: {stdout}"));
    assert!(
        line.contains("holding pass share ≥ 90 %, p95 TTFT ≤ 200 ms (bracket "),
        "{line}"
    );
    let low: f64 = line["capacity: ".len()..]
        .split('/')
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
    assert!((15.0..=22.0).contains(&low), "{stdout}");
    // The first rate above it that did not hold is named by its p95 TTFT.
    let not_held = stdout
        .lines()
        .find(|l| l.starts_with("  not held at "))
        .unwrap_or_else(|| panic!("no `not held` line: {stdout}"));
    assert!(
        not_held.contains("p95 TTFT") && not_held.contains("ms > 200 ms"),
        "{not_held}"
    );
    // The `frontier` it suggests judges the traces by the same criteria.
    assert!(
        stdout.contains("--svg frontier.svg --attainment 0.9 --max-p95-ttft-ms 200\n"),
        "{stdout}"
    );
}
