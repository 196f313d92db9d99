//! `goodput compare`: contracts that must match, the regression gate, and
//! three end-to-end pairs recorded from `goodput sim` on 127.0.0.1 (each
//! pair recorded at the same time, on two sims, so both runs see the same
//! machine load; every recording is 2.5 s of load plus a short grace).

mod common;

use std::path::{Path, PathBuf};

use clap::Parser;
use common::recording::{f, record};
use goodput_sim::engine::EngineParams;
use goodput_sim::{SimConfig, SimServer};
use serde_json::Value;

/// Runs `goodput compare` in-process: (exit status, stdout or error message).
fn compare(args: &[&str]) -> (i32, String) {
    let mut argv = vec!["goodput", "compare"];
    argv.extend_from_slice(args);
    let cli = goodput::cli::Cli::try_parse_from(&argv).expect("flags parse");
    let mut stdout = Vec::new();
    match goodput::cli::run(cli, &mut stdout) {
        Ok(code) => (code, String::from_utf8(stdout).expect("utf-8")),
        Err(e) => (e.exit_code(), e.message()),
    }
}

fn compare_json(a: &Path, b: &Path) -> Value {
    let (code, out) = compare(&[&a.display().to_string(), &b.display().to_string(), "--json"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(&out).expect("JSON");
    let errors: Vec<String> = common::validator("compare.schema.json")
        .iter_errors(&v)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
    v
}

fn fixture(name: &str) -> String {
    common::fixture(name).display().to_string()
}

/// The figure of the `all` block.
fn figure<'a>(c: &'a Value, name: &str) -> &'a Value {
    c["blocks"][0]["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .find(|x| x["figure"] == name)
        .unwrap_or_else(|| panic!("no figure {name}"))
}

#[test]
fn different_equality_rules_are_refused_unless_b_is_judged_under_a() {
    let (code, message) = compare(&[
        &fixture("equality_inclusive.json"),
        &fixture("equality_strict.json"),
    ]);
    assert_eq!(code, 2);
    assert!(
        message.contains("/contract/equality is \"inclusive\" in A and \"strict\" in B")
            && message.contains("--judge-under A"),
        "{message}"
    );
    // The two fixtures differ only in the rule: judged under A's, B is A.
    let (code, out) = compare(&[
        &fixture("equality_inclusive.json"),
        &fixture("equality_strict.json"),
        "--judge-under",
        "A",
        "--json",
    ]);
    assert_eq!(code, 0, "{out}");
    let c: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(c["judgedUnderA"], true);
    for x in c["blocks"][0]["figures"].as_array().unwrap() {
        assert_eq!(x["a"], x["b"], "{x}");
        assert_eq!(x["verdict"], "indistinguishable", "{x}");
    }
}

#[test]
fn a_run_against_itself_is_indistinguishable_with_a_hand_computed_interval() {
    // A run against itself: d = p − p = 0 and Newcombe's interval is
    // [−√((p − l)² + (u − p)²), +√((u − p)² + (p − l)²)], symmetric, from the
    // receipt's own Wilson interval [l, u].
    let receipt = common::receipt("mixed_120.json");
    let all = &receipt.results.all;
    let wilson = all.intervals.pass_share.unwrap();
    let p = all.rates.pass_share.unwrap();
    let c = compare_json(
        &common::fixture("mixed_120.json"),
        &common::fixture("mixed_120.json"),
    );
    let pass = figure(&c, "pass_share");
    assert_eq!(pass["difference"], 0.0);
    // L = 0 − √((p − l)² + (u − p)²) = −U.
    let half = ((p - wilson.lower).powi(2) + (wilson.upper - p).powi(2)).sqrt();
    assert!((f(&pass["interval"]["lower"]) + half).abs() < 1e-12);
    assert!((f(&pass["interval"]["upper"]) - half).abs() < 1e-12);
    assert_eq!(pass["verdict"], "indistinguishable");
    assert_eq!(pass["requiredRequestsPerRun"], Value::Null);
}

#[test]
fn an_unknown_figure_or_a_bad_confidence_is_a_usage_error() {
    let a = fixture("mixed_120.json");
    let cli = goodput::cli::Cli::try_parse_from([
        "goodput",
        "compare",
        &a,
        &a,
        "--fail-if-worse",
        "goodput,p97_ttft",
    ]);
    let err = cli.expect_err("unknown figure refused");
    assert!(err.to_string().contains("p97_ttft"), "{err}");
    let (code, message) = compare(&[&a, &a, "--confidence", "1.5"]);
    assert_eq!(code, 2);
    assert!(message.contains("--confidence"), "{message}");
}

fn sim(step_ms: f64) -> SimServer {
    let config = SimConfig {
        engine: EngineParams {
            max_batch: 64,
            prefill_ms_per_1k_tokens: 20.0,
            decode_step_ms: step_ms,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (8.0, 0.0),
        faults: vec![],
        seed: 1,
        model_name: "sim".into(),
        quirks: Default::default(),
        tokenizer: None,
    };
    SimServer::start(config, 1).expect("start sim")
}

/// Records two runs at the same time (one per sim) at `rate` req/s for
/// `duration`, with gates TTFT 5 s, TPOT `tpot_gate` ms, E2E 20 s (loose, so a loaded test machine
/// cannot turn TTFT or E2E into misses: only the TPOT gate separates the runs).
fn record_pair(
    dir: &Path,
    sims: (&SimServer, &SimServer),
    seeds: (&str, &str),
    rate: &str,
    duration: &str,
    tpot_gate: &str,
) -> (PathBuf, PathBuf) {
    let (a, b) = (dir.join("a.json"), dir.join("b.json"));
    let run = |url: String, out: PathBuf, seed: &'static str| {
        let tpot_gate = tpot_gate.to_owned();
        let rate = rate.to_owned();
        let duration = duration.to_owned();
        std::thread::spawn(move || {
            let (code, msg, _) = record(
                &url,
                &out,
                &[
                    "--request-rate",
                    &rate,
                    "--duration",
                    &duration,
                    "--warmup",
                    "0.5s",
                    "--grace",
                    "1.5s",
                    "--random-input-len",
                    "100",
                    "--seed",
                    seed,
                    "--slo",
                    &format!("chat:ttft=5000,tpot={tpot_gate},e2e=20000"),
                ],
            );
            assert_eq!(code, 0, "{msg}");
        })
    };
    let seed = |s: &str| -> &'static str { Box::leak(s.to_owned().into_boxed_str()) };
    let ta = run(sims.0.url(), a.clone(), seed(seeds.0));
    let tb = run(sims.1.url(), b.clone(), seed(seeds.1));
    ta.join().expect("run A");
    tb.join().expect("run B");
    (a, b)
}

#[test]
fn two_runs_with_identical_settings_and_different_seeds_are_indistinguishable() {
    let (sa, sb) = (sim(10.0), sim(10.0));
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = record_pair(dir.path(), (&sa, &sb), ("11", "12"), "30", "3s", "40");
    let c = compare_json(&a, &b);
    eprintln!(
        "{}",
        compare(&[&a.display().to_string(), &b.display().to_string()]).1
    );
    for block in c["blocks"].as_array().unwrap() {
        for x in block["figures"].as_array().unwrap() {
            assert_eq!(x["verdict"], "indistinguishable", "{x}");
        }
    }
    // The gate passes (exit 0) on every figure.
    let (code, out) = compare(&[
        &a.display().to_string(),
        &b.display().to_string(),
        "--fail-if-worse",
        "goodput,pass_share,failure_share,p95_ttft,p99_ttft,p95_tpot,p99_tpot,p95_e2e,p99_e2e",
    ]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("PASS: B is not worse"), "{out}");
}

#[test]
fn a_slower_decode_step_is_worse_on_tpot_and_pass_share() {
    // A decodes a token every 10 ms, B every 30 ms; the TPOT gate is 20 ms,
    // so A's rows pass and B's miss.
    let (sa, sb) = (sim(10.0), sim(30.0));
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = record_pair(dir.path(), (&sa, &sb), ("21", "21"), "40", "2.5s", "20");
    let c = compare_json(&a, &b);
    let (a, b) = (a.display().to_string(), b.display().to_string());
    eprintln!("{}", compare(&[&a, &b]).1);
    assert_eq!(figure(&c, "pass_share")["verdict"], "worse");
    assert_eq!(figure(&c, "p95_tpot")["verdict"], "worse");
    assert_eq!(figure(&c, "goodput")["verdict"], "worse");
    // The regression gate: exit 1, naming the figure.
    let (code, out) = compare(&[&a, &b, "--fail-if-worse", "p95_tpot"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("FAIL: B is worse than A beyond noise on p95_tpot (all)"),
        "{out}"
    );
    // Not listed, not gated: failure share is 0 % in both.
    let (code, out) = compare(&[&a, &b, "--fail-if-worse", "failure_share"]);
    assert_eq!(code, 0, "{out}");
    // Markdown for a pull request.
    let (code, md) = compare(&[&a, &b, "--markdown"]);
    assert_eq!(code, 0);
    assert!(
        md.contains("| pass share |") && md.contains("**worse**"),
        "{md}"
    );
}

#[test]
fn a_tiny_run_is_indistinguishable_and_says_how_many_requests_it_would_take() {
    // About 20 requests per run (Poisson 8 req/s over a 2.5 s window; the two
    // seeded schedules give 21 and 22): too few values for any p95 interval
    // (it needs 72: 0.95^71 = 0.0262 > 0.025 >= 0.95^72 = 0.0249).
    let (sa, sb) = (sim(10.0), sim(10.0));
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = record_pair(dir.path(), (&sa, &sb), ("31", "32"), "8", "2.5s", "40");
    let c = compare_json(&a, &b);
    eprintln!(
        "{}",
        compare(&[&a.display().to_string(), &b.display().to_string()]).1
    );
    let p95 = figure(&c, "p95_ttft");
    assert_eq!(p95["verdict"], "indistinguishable");
    assert_eq!(p95["interval"], Value::Null);
    assert_eq!(p95["requiredRequestsPerRun"], 72);
    let cohort = f(&c["blocks"][0]["cohortA"]);
    assert!((15.0..=25.0).contains(&cohort), "{cohort}");
    let goodput = figure(&c, "goodput");
    assert_eq!(goodput["verdict"], "indistinguishable");
    // The two seeded Poisson schedules put different counts in the window, so
    // goodput differs; the size needed is n × (MDD / |d|)², n the mean cohort.
    let d = f(&goodput["difference"]);
    assert_ne!(d, 0.0, "{goodput}");
    let n = (f(&c["blocks"][0]["cohortA"]) + f(&c["blocks"][0]["cohortB"])) / 2.0;
    let mdd = f(&goodput["minimumDetectable"]);
    let needed = (n * (mdd / d).powi(2)).ceil();
    assert_eq!(f(&goodput["requiredRequestsPerRun"]), needed);
    assert!(needed > n, "{needed} <= {n}");
}
