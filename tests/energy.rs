//! Energy per good request (docs/contract.md §10.18): a power series in the
//! metrics sidecar integrated by trapezoids over the window, divided by the
//! requests that passed every gate, through `analyze`, `gate` and `verify`,
//! against figures computed by hand.

mod common;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// Window [0, 10000) ms; class chat TTFT ≤ 500. Five completed rows of 10
/// tokens: four pass, e (TTFT 900) misses.
fn trace(sidecar_sha: &str) -> Value {
    let row = |id: &str, first: f64| {
        json!({"id": id, "arrivalMs": 1000, "status": "completed", "firstTokenMs": 1000.0 + first,
               "completedMs": 3000, "outputTokens": 10})
    };
    json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 10000},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": 500, "tpotMs": null, "e2eMs": 5000}},
        "workload": {"metricsFile": "t.metrics.jsonl", "metricsSha256": sidecar_sha},
        "rows": [row("a", 100.0), row("b", 200.0), row("c", 300.0), row("d", 400.0), row("e", 900.0)]
    })
}

/// Two GPUs. t 0: 100 + 100 = 200 W (beside a series that is not power);
/// t 5000: 150 + 150 = 300 W; t 7500: a failed scrape; t 10000: 300 W.
const SIDECAR: &str = concat!(
    r#"{"tMs":0,"raw":{"DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"}":100,"DCGM_FI_DEV_POWER_USAGE{gpu=\"1\"}":100,"vllm:num_requests_running":3}}"#,
    "\n",
    r#"{"tMs":5000,"raw":{"DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"}":150,"DCGM_FI_DEV_POWER_USAGE{gpu=\"1\"}":150}}"#,
    "\n",
    r#"{"tMs":7500,"error":"timeout"}"#,
    "\n",
    r#"{"tMs":10000,"raw":{"DCGM_FI_DEV_POWER_USAGE{gpu=\"0\"}":150,"DCGM_FI_DEV_POWER_USAGE{gpu=\"1\"}":150}}"#,
    "\n",
);

fn setup(sidecar: Option<&str>) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let sha = format!("{:x}", Sha256::digest(SIDECAR.as_bytes()));
    if let Some(s) = sidecar {
        std::fs::write(dir.path().join("t.metrics.jsonl"), s).unwrap();
    }
    let path = dir.path().join("t.json");
    std::fs::write(&path, serde_json::to_vec(&trace(&sha)).unwrap()).unwrap();
    (dir, path)
}

fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let out = common::goodput().args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn joules_per_good_request_are_the_trapezoids_over_the_passing_rows() {
    let (_dir, path) = setup(Some(SIDECAR));
    let (code, out, err) = run(&["analyze", path.to_str().unwrap(), "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let receipt: Value = serde_json::from_str(&out).unwrap();
    let e = &receipt["energy"];
    // [0, 5000]: (200 + 300) / 2 W × 5 s = 1250 J; [5000, 10000] across the
    // failed scrape: 300 W × 5 s = 1500 J, bridged. 2750 J over 10 s.
    assert_eq!(e["joules"], 2750.0);
    assert_eq!(
        (e["coveredMs"].as_f64(), e["bridgedMs"].as_f64()),
        (Some(10000.0), Some(5000.0))
    );
    assert_eq!(
        (
            e["readings"].as_u64(),
            e["gaps"].as_u64(),
            e["series"].as_u64()
        ),
        (Some(3), Some(1), Some(2))
    );
    assert_eq!(e["meanWatts"], 275.0);
    // 4 good requests of 10 tokens: 2750 / 4 = 687.5 J; / 40 = 68.75 J a
    // token; 4 / 2.75 kJ = 1.4545… good requests per kJ.
    assert_eq!(e["goodRequests"], 4);
    assert_eq!(e["goodOutputTokens"], 40.0);
    assert_eq!(e["joulesPerGoodRequest"], 687.5);
    assert_eq!(e["joulesPerGoodOutputToken"], 68.75);
    assert_eq!(e["goodRequestsPerKj"].as_f64(), Some(4.0 / 2.75));
    assert!(e["note"].is_null());
    let (_, text, _) = run(&["analyze", path.to_str().unwrap()]);
    assert!(
        text.contains("energy    2750 J over 10000 of 10000 ms"),
        "{text}"
    );
    // verify recomputes the block from the same sidecar.
    let receipt_path = path.with_file_name("r.json");
    std::fs::write(&receipt_path, &out).unwrap();
    let (code, vout, _) = run(&[
        "verify",
        receipt_path.to_str().unwrap(),
        path.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{vout}");
}

#[test]
fn the_gate_refuses_above_the_limit_and_without_power_readings() {
    let (_dir, path) = setup(Some(SIDECAR));
    let p = path.to_str().unwrap();
    let gate = |limit: &str| {
        run(&[
            "gate",
            p,
            "--min-goodput",
            "0",
            "--max-joules-per-good-request",
            limit,
        ])
    };
    // 687.5 ≤ 700 admits; 687.5 > 600 refuses (exit 1).
    let (admit, out, _) = gate("700");
    assert_eq!(admit, Some(0), "{out}");
    let (refuse, out, _) = gate("600");
    assert_eq!(refuse, Some(1), "{out}");
    assert!(out.contains("joules per good request"), "{out}");
    let (_dir2, bare) = setup(None);
    let (code, out, _) = run(&[
        "gate",
        bare.to_str().unwrap(),
        "--min-goodput",
        "0",
        "--max-joules-per-good-request",
        "1000000",
    ]);
    assert_eq!(
        code,
        Some(1),
        "no power readings is never an admission: {out}"
    );
    assert!(out.contains("no power readings"), "{out}");
    let (code, _, err) = run(&[
        "gate",
        p,
        "--min-goodput",
        "0",
        "--max-joules-per-good-request",
        "-1",
    ]);
    assert_eq!(code, Some(2), "{err}");
}

/// The sim draws 60 W idle plus 5 W per running sequence. At a constant 5
/// requests/s, each in the system for W (its E2E; the batch of 64 never
/// fills, so no queue), Little's law gives a mean of 5 × W sequences running,
/// so the mean power over the window is 60 + 5 × 5 × W watts. The recorder
/// scrapes every 100 ms, so the curve is sampled, not known exactly: the
/// test allows 4 W.
#[test]
fn a_sim_run_with_metrics_gets_the_energy_of_its_power_curve() {
    use goodput_sim::engine::EngineParams;
    use goodput_sim::{SimConfig, SimServer};
    let config = SimConfig {
        engine: EngineParams {
            max_batch: 64,
            prefill_ms_per_1k_tokens: 50.0,
            decode_step_ms: 20.0,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (16.0, 0.0),
        faults: vec![],
        seed: 1,
        model_name: "sim".into(),
        also_served: vec![],
        quirks: Default::default(),
        tokenizer: None,
    };
    let server = SimServer::start(config, 1).expect("sim");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, stdout, _) = common::recording::record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "5",
            "--arrival",
            "constant",
            "--duration",
            "3s",
            "--grace",
            "2s",
            "--metrics",
            "--metrics-interval",
            "100ms",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    let (code, json, err) = run(&["analyze", out.to_str().unwrap(), "--json"]);
    assert_eq!(code, Some(0), "{err}");
    let r: Value = serde_json::from_str(&json).unwrap();
    let e = &r["energy"];
    let w_s = r["results"]["all"]["latency"]["e2eMs"]["mean"]
        .as_f64()
        .unwrap()
        / 1000.0;
    let expected = 60.0 + 5.0 * 5.0 * w_s;
    let mean = e["meanWatts"].as_f64().expect("power readings");
    eprintln!("energy {e}\nexpected mean {expected} W");
    assert!(
        (mean - expected).abs() <= 4.0,
        "mean {mean} W, expected {expected} W"
    );
    assert_eq!(e["series"], 1);
    assert!(e["readings"].as_u64().unwrap() >= 20, "{e}");
    let per = e["joulesPerGoodRequest"].as_f64().unwrap();
    let joules = e["joules"].as_f64().unwrap();
    assert_eq!(per, joules / e["goodRequests"].as_f64().unwrap());
}

#[test]
fn the_report_draws_the_power_series_and_prints_the_energy() {
    let (dir, path) = setup(Some(SIDECAR));
    let html_path = dir.path().join("r.html");
    let (code, out, err) = run(&[
        "report",
        path.to_str().unwrap(),
        "--out",
        html_path.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(0), "{out}{err}");
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains(">power (W)</text>"), "a fourth server panel");
    // Readings at 0 and 5000 ms make one line; the failed scrape at 7500
    // breaks it, and 10000 starts a second: two polylines in the power panel
    // (the other three panels have no series: "not reported").
    let power = html.split(">power (W)</text>").nth(1).unwrap();
    assert_eq!(power.matches("<polyline").count(), 2);
    assert!(
        html.contains("<pre id=\"energy\">energy    2750 J over 10000 of 10000 ms"),
        "{html}"
    );
}
