//! The release gate: phased recordings, recovery after a burst, the
//! diagnosis, gate criteria and per-GPU and cost figures. Fixture figures are
//! computed by hand (see `fixtures/release/generate.py` for the rows); the
//! sim runs have capacities known from the sim's flags.

mod common;

use std::path::PathBuf;
use std::process::{Command, Output};

use common::recording::{assert_no_lost_row, f, receipt, record, rows};
use goodput_sim::engine::EngineParams;
use goodput_sim::{SimConfig, SimServer};
use serde_json::Value;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/release")
        .join(name)
        .display()
        .to_string()
}

fn goodput(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args(args)
        .output()
        .expect("the binary runs")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The text receipt with its wrapped lines joined again (continuations are
/// indented by six spaces).
fn unwrapped(o: &Output) -> String {
    out(o).replace("\n      ", " ")
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}", out(o)))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

// ---------------------------------------------------------------- fixtures

// burst.json, class `api`: after the burst (4000 ms) it has 60 arrivals at
// 4000 + 100 i (i = 0..59); rows 4000 … 5400 miss (15) and 7000 misses TTFT
// alone: 16 misses. Strict (tolerance 0): R is the arrival after the last
// miss, 7100, 3.1 s after 4000; 7100 … 9900 is 29 arrivals, none missed.
// Tolerance 1: the 2nd miss from the end is 5400 → R = 5500, 1.5 s; 5500 …
// 9900 is 45 arrivals, one missed (7000).
#[test]
fn recovery_is_the_first_arrival_after_the_last_miss_beyond_the_tolerance() {
    let o = goodput(&["analyze", &fixture("burst.json"), "--json"]);
    assert_eq!(code(&o), 0);
    let r = json(&o);
    let rec = &r["recovery"];
    assert_eq!(rec["burstPhase"], "burst");
    assert_eq!(f(&rec["burstEndMs"]), 4000.0);
    assert_eq!(rec["tolerance"], 0);
    assert!(rec.get("windowArrivals").is_none(), "{rec}");
    let api = &rec["classes"]["api"];
    assert_eq!(f(&api["recoveryS"]), 3.1);
    assert_eq!(f(&api["recoveredAtMs"]), 7100.0);
    assert_eq!(api["arrivalsAfterBurst"], 60);
    assert_eq!(api["missesAfterBurst"], 16);
    assert_eq!(api["arrivalsAfterRecovery"], 29);
    assert_eq!(api["missesAfterRecovery"], 0);
    assert_eq!(api["undecidedAfterRecovery"], 0);
    assert_eq!(api["reason"], Value::Null);
    let o = goodput(&[
        "analyze",
        &fixture("burst.json"),
        "--json",
        "--recovery-tolerance",
        "1",
    ]);
    let rec = &json(&o)["recovery"];
    assert_eq!(rec["tolerance"], 1);
    let api = &rec["classes"]["api"];
    assert_eq!(f(&api["recoveryS"]), 1.5);
    assert_eq!(f(&api["recoveredAtMs"]), 5500.0);
    assert_eq!(api["arrivalsAfterRecovery"], 45);
    assert_eq!(api["missesAfterRecovery"], 1);
    // Bins of 500 ms: [2000, 4000) is the burst (TTFT 800); [4000, 5500) the
    // slow rows (600); the bin [7000, 7500) holds 300, 50, 50, 50, 50: p95 =
    // rank ceil(0.95 × 5) = 5 → 300.
    let bins: Vec<f64> = api["ttftBins"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| f(&b["p95TtftMs"]))
        .collect();
    let want = [
        50., 50., 50., 50., 800., 800., 800., 800., 600., 600., 600., 50., 50., 50., 300., 50.,
        50., 50., 50., 50.,
    ];
    assert_eq!(bins, want);
    assert_eq!(f(&api["ttftBins"][0]["endMs"]), 500.0);
    assert_eq!(api["ttftBins"][0]["arrivals"], 5);
}

// `batch` arrivals from 8050 ms on (20 of its 60 after the burst) are in
// flight at the horizon (12000) without a first token: each has waited
// 12000 − arrival >= 2050 ms, past its TTFT gate of 1000, so each is
// knownLate, a miss; the last arrival (9950) is one of them: never.
#[test]
fn a_class_whose_last_arrival_is_known_late_never_recovered() {
    let o = goodput(&["analyze", &fixture("burst.json"), "--json"]);
    let batch = &json(&o)["recovery"]["classes"]["batch"];
    assert_eq!(batch["recoveryS"], Value::Null);
    assert_eq!(batch["recoveredAtMs"], Value::Null);
    assert_eq!(batch["missesAfterBurst"], 20);
    assert_eq!(batch["missesAfterRecovery"], Value::Null);
    assert_eq!(
        batch["reason"],
        "never recovered within the window: the last arrival (at 9950 ms) missed; 20 of the 60 \
         arrivals after the burst missed (failed rows and unfinished rows certain to miss count \
         as misses)"
    );
}

/// Writes `doc` as a trace in `dir` and analyzes it (`extra` flags after).
fn analyze_doc(dir: &tempfile::TempDir, doc: &Value, extra: &[&str]) -> Value {
    let path = dir.path().join("t.json");
    std::fs::write(&path, serde_json::to_vec(doc).unwrap()).unwrap();
    let mut args = vec![
        "analyze",
        path.to_str().unwrap(),
        "--json",
        "--max-bytes",
        "10000000",
    ];
    args.extend(extra);
    let o = goodput(&args);
    assert_eq!(code(&o), 0, "{}", String::from_utf8_lossy(&o.stderr));
    json(&o)
}

/// A one-class (`chat`) trace, window [0, end) observed to `horizon`, with
/// phases steady [0, b), burst [b, e), recover [e, end).
fn phased_doc(gates: Value, burst: (f64, f64), end: f64, horizon: f64, rows: Vec<Value>) -> Value {
    serde_json::json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": end, "horizonMs": horizon},
        "equality": "inclusive",
        "classes": {"chat": gates},
        "phases": [
            {"name": "steady", "startMs": 0, "endMs": burst.0},
            {"name": "burst", "startMs": burst.0, "endMs": burst.1},
            {"name": "recover", "startMs": burst.1, "endMs": end},
        ],
        "rows": rows,
    })
}

fn completed_row(t: f64, ttft: f64, e2e: f64) -> Value {
    serde_json::json!({"id": format!("r{t}"), "arrivalMs": t, "status": "completed",
                       "firstTokenMs": t + ttft, "completedMs": t + e2e, "outputTokens": 20})
}

// A reported case: 5 arrivals/s over [0, 80 s) (horizon 81 s: every row
// completes), burst phase [20, 40 s); every arrival before 55.0 s has TTFT
// 3000 ms, every later one 200 ms; TTFT gate 1000. The last miss arrives at
// 54.8 s, so recovery is at 55.0 s: 15 s after the burst's end, exactly (the
// old window of 50 said 14.6 s, two misses after it). After the burst: 200
// arrivals, 75 misses (40.0 … 54.8); from 55.0 s: 125 arrivals, none
// missed. Tolerance 1 allows the miss at 54.8: R = 54.8 s, 14.8 s, 126
// arrivals from there, one miss.
#[test]
fn case_7_recovery_is_fifteen_seconds_after_the_burst_exactly() {
    let rows = (0..400)
        .map(|i| {
            let t = 200.0 * f64::from(i);
            let ttft = if t < 55_000.0 { 3000.0 } else { 200.0 };
            completed_row(t, ttft, ttft + 400.0)
        })
        .collect();
    let gates = serde_json::json!({"ttftMs": 1000, "tpotMs": null, "e2eMs": null});
    let doc = phased_doc(gates, (20_000.0, 40_000.0), 80_000.0, 81_000.0, rows);
    let dir = tempfile::tempdir().unwrap();
    let strict = &analyze_doc(&dir, &doc, &[])["recovery"]["classes"]["chat"];
    assert_eq!(f(&strict["recoveryS"]), 15.0, "{strict}");
    assert_eq!(f(&strict["recoveredAtMs"]), 55_000.0);
    assert_eq!(strict["arrivalsAfterBurst"], 200);
    assert_eq!(strict["missesAfterBurst"], 75);
    assert_eq!(strict["arrivalsAfterRecovery"], 125);
    assert_eq!(strict["missesAfterRecovery"], 0);
    let one = &analyze_doc(&dir, &doc, &["--recovery-tolerance", "1"])["recovery"];
    assert_eq!(one["tolerance"], 1);
    let one = &one["classes"]["chat"];
    assert_eq!(f(&one["recoveryS"]), 14.8);
    assert_eq!(f(&one["recoveredAtMs"]), 54_800.0);
    assert_eq!(one["arrivalsAfterRecovery"], 126);
    assert_eq!(one["missesAfterRecovery"], 1);
}

// A reported case: a TTFT-only class (gate 1000), one arrival every 200 ms
// over [0, 30 s), the trace cut at the window's end (horizon 30 s); burst
// phase [5, 10 s). Arrivals in [5, 12 s) have TTFT 3000 (misses after the
// burst: 10.0 … 11.8 s, ten); the rest TTFT 200 and E2E 1200, so those from
// 29.0 s on (29.0 … 29.8: five) are still in flight at the horizon with
// their first token seen 200 ms after arrival: they met the only gate, not
// misses. A sixth in flight row (29.9 s, no first token, 100 ms old) is
// undecided, not a miss. Recovery: 12.0 s, 2 s after the burst; from there
// 90 + 1 = 91 arrivals, none missed, one undecided. (The old code counted
// the six as over every gate: "never recovered".)
#[test]
fn case_6_censored_rows_that_met_the_ttft_gate_do_not_block_recovery() {
    let mut rows: Vec<Value> = (0..150)
        .map(|i| {
            let t = 200.0 * f64::from(i);
            if (5000.0..12_000.0).contains(&t) {
                completed_row(t, 3000.0, 3500.0)
            } else if t >= 29_000.0 {
                serde_json::json!({"id": format!("r{t}"), "arrivalMs": t,
                                   "status": "in_flight", "firstTokenMs": t + 200.0})
            } else {
                completed_row(t, 200.0, 1200.0)
            }
        })
        .collect();
    rows.push(serde_json::json!({"id": "late", "arrivalMs": 29_900, "status": "in_flight"}));
    let gates = serde_json::json!({"ttftMs": 1000, "tpotMs": null, "e2eMs": null});
    let doc = phased_doc(gates, (5000.0, 10_000.0), 30_000.0, 30_000.0, rows);
    let dir = tempfile::tempdir().unwrap();
    let r = analyze_doc(&dir, &doc, &[]);
    assert_eq!(
        r["results"]["all"]["counts"]["censored"], 6,
        "{}",
        r["results"]["all"]["counts"]
    );
    let chat = &r["recovery"]["classes"]["chat"];
    assert_eq!(chat["reason"], Value::Null, "{chat}");
    assert_eq!(f(&chat["recoveryS"]), 2.0);
    assert_eq!(f(&chat["recoveredAtMs"]), 12_000.0);
    assert_eq!(chat["arrivalsAfterBurst"], 101);
    assert_eq!(chat["missesAfterBurst"], 10);
    assert_eq!(chat["arrivalsAfterRecovery"], 91);
    assert_eq!(chat["missesAfterRecovery"], 0);
    assert_eq!(chat["undecidedAfterRecovery"], 1);
}

// The rolling window is gone; an old script passing it must not silently get
// a figure of another meaning: a usage error naming the new flag.
#[test]
fn the_removed_recovery_window_flag_is_a_usage_error_naming_the_tolerance() {
    let trace = fixture("burst.json");
    for command in ["analyze", "gate", "report"] {
        let mut args = vec![command, trace.as_str()];
        if command == "gate" {
            args.extend(["--min-goodput", "0"]);
        }
        for flag in [&["--recovery-window", "50"][..], &["--recovery-window"][..]] {
            let mut argv = args.clone();
            argv.extend(flag);
            let o = goodput(&argv);
            assert_eq!(code(&o), 2, "{argv:?}");
            let err = String::from_utf8_lossy(&o.stderr);
            assert!(
                err.contains("--recovery-window was removed")
                    && err.contains("--recovery-tolerance"),
                "{argv:?}: {err}"
            );
        }
    }
    let o = goodput(&[
        "analyze",
        &fixture("burst.json"),
        "--recovery-tolerance",
        "x",
    ]);
    assert_eq!(code(&o), 2);
}

#[test]
fn a_burst_phase_the_trace_lacks_is_a_usage_error_and_its_absence_leaves_no_recovery() {
    let o = goodput(&["analyze", &fixture("burst.json"), "--burst-phase", "spike"]);
    assert_eq!(code(&o), 2);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("\"spike\"") && err.contains("steady, burst, recover"),
        "{err}"
    );
    // cost.json declares no phases: no recovery block, and naming one is an error.
    let o = goodput(&["analyze", &fixture("cost.json"), "--json"]);
    assert!(json(&o).get("recovery").is_none());
    let o = goodput(&["analyze", &fixture("cost.json"), "--burst-phase", "burst"]);
    assert_eq!(code(&o), 2);
    // Another phase may be named: recovery from the end of `steady` (2000 ms).
    let o = goodput(&[
        "analyze",
        &fixture("burst.json"),
        "--json",
        "--burst-phase",
        "steady",
        "--recovery-tolerance",
        "1",
    ]);
    let api = &json(&o)["recovery"]["classes"]["api"];
    assert_eq!(f(&json(&o)["recovery"]["burstEndMs"]), 2000.0);
    assert_eq!(f(&api["recoveredAtMs"]), 5500.0);
    assert_eq!(f(&api["recoveryS"]), 3.5);
}

#[test]
fn the_text_receipt_shows_recovery_bins_and_the_diagnosis_counts_first() {
    let o = goodput(&[
        "analyze",
        &fixture("burst.json"),
        "--recovery-tolerance",
        "1",
    ]);
    let text = unwrapped(&o);
    // The sections this adds end the text and fit 100 columns.
    let tail = out(&o);
    let tail = &tail[tail.find("\nDIAGNOSIS").expect("a diagnosis section")..];
    assert!(tail.lines().all(|l| l.chars().count() <= 100), "{tail}");
    assert!(
        text.contains(
            "api: recovered 1.500 s after the burst (arrivals from 5500 ms on: 45, 1 missed; \
             16 of 60 arrivals after the burst missed)"
        ),
        "{text}"
    );
    assert!(
        text.contains("batch: not recovered: never recovered within the window: none of the 1 arrival from 9950 ms on met the gates (1 missed, within the tolerance of 1)"),
        "{text}"
    );
    assert!(
        text.contains("after its last miss of the TTFT or E2E gate beyond a tolerance of 1"),
        "{text}"
    );
    assert!(text.contains(
        "p95 TTFT ms by arrival, 20 bins of 500 ms from 0 ms to 10000 ms (— = no completion): \
         50 50 50 50 800 800 800 800 600 600 600 50 50 50 300 50 50 50 50 50"
    ));
    // api: 20 burst rows + 15 slow rows + the lone one at 7000 miss TTFT (36);
    // all but the lone one miss E2E (35); E2E-only ≥ 36 − 36 − 0 = 0, so not printed.
    assert!(text.contains(
        "diagnosis api: 36 of 100 cohort rows not passed: 36 missed a gate (TTFT 36, TPOT 0, E2E 35; \
         a row counts under each gate it missed) → TTFT misses dominate: look at queueing, \
         prefill, cold starts or admission"
    ));
    assert!(text.contains(
        "diagnosis batch: 20 of 100 cohort rows not passed: unfinished 20 at the horizon (all 20 \
         still running; all 20 already past a TTFT or E2E gate) → unfinished rows dominate"
    ));
    let report = std::env::temp_dir().join(format!("goodput-release-{}.html", std::process::id()));
    let o = goodput(&[
        "report",
        &fixture("burst.json"),
        "--out",
        report.to_str().unwrap(),
        "--recovery-tolerance",
        "1",
    ]);
    assert_eq!(code(&o), 0);
    let html = std::fs::read_to_string(&report).unwrap();
    let _ = std::fs::remove_file(&report);
    assert!(html.contains("<h2>Diagnosis, recovery and cost</h2>"));
    assert!(html.contains("recovered 1.500 s after the burst"));
    // One bar per bin with a completion: api 20, batch 16.
    assert_eq!(html.matches(" ms: p95 TTFT ").count(), 36);
}

// cost.json: window 10 s; pass r1 (100 tokens) and r2 (300); miss r3 (600);
// r4 failed. goodput 2 / 10 = 0.2/s; good tokens 400 / 10 = 40/s; output
// tokens 1000 / 10 = 100/s. Two GPUs at 3.6 per GPU-hour:
// per GPU 0.1 req/s, 20 and 50 tok/s; GPU-hours 2 × 10 / 3600 = 1/180;
// window cost 3.6 / 180 = 0.02; per 1,000 good requests 0.02 / 2 × 1000 = 10;
// per 10^6 good tokens 0.02 / 400 × 10^6 = 50; per 10^6 output tokens
// 0.02 / 1000 × 10^6 = 20.
#[test]
fn per_gpu_and_cost_figures_match_the_hand_computation() {
    let o = goodput(&["analyze", &fixture("cost.json"), "--json"]);
    let r = json(&o);
    assert_eq!(
        r["contract"]["resources"],
        serde_json::json!({"gpus": 2, "gpuHourCost": 3.6, "source": "trace"})
    );
    let c = &r["cost"];
    for (key, want) in [
        ("goodputPerSPerGpu", 0.1),
        ("goodTokensPerSPerGpu", 20.0),
        ("outputTokensPerSPerGpu", 50.0),
        ("gpuHours", 1.0 / 180.0),
        ("windowCost", 0.02),
        ("costPer1kGoodRequests", 10.0),
        ("costPer1mGoodTokens", 50.0),
        ("costPer1mOutputTokens", 20.0),
    ] {
        assert!(close(f(&c[key]), want), "{key}: {} vs {want}", c[key]);
    }
    assert_eq!(c["note"], Value::Null);
    let text = unwrapped(&goodput(&["analyze", &fixture("cost.json")]));
    assert!(text.contains(
        "per GPU   2 GPUs, from trace: goodput 0.1 req/s, good output tokens 20 tok/s, all output tokens 50 tok/s (raw)"
    ), "{text}");
    assert!(text.contains(
        "= 0.02 over the window: 1,000 good requests 10, 1,000,000 good output tokens 50"
    ));
}

// --gpus 4 --gpu-hour-cost 1.8 replaces the trace's: per GPU halves (0.05
// req/s); window cost 4 × 1.8 × 10 / 3600 = 0.02 again. A price alone keeps
// the trace's 2 GPUs: 7.2 × 2 × 10 / 3600 = 0.04; per 1,000 good = 20.
#[test]
fn options_replace_the_declared_resources_and_the_receipt_says_whose_they_are() {
    let o = goodput(&[
        "analyze",
        &fixture("cost.json"),
        "--json",
        "--gpus",
        "4",
        "--gpu-hour-cost",
        "1.8",
    ]);
    let r = json(&o);
    assert_eq!(r["contract"]["resources"]["source"], "options");
    assert!(close(f(&r["cost"]["goodputPerSPerGpu"]), 0.05));
    assert!(close(f(&r["cost"]["windowCost"]), 0.02));
    let o = goodput(&[
        "analyze",
        &fixture("cost.json"),
        "--json",
        "--gpu-hour-cost",
        "7.2",
    ]);
    let r = json(&o);
    assert_eq!(r["contract"]["resources"]["source"], "trace+options");
    assert!(close(f(&r["cost"]["windowCost"]), 0.04));
    assert!(close(f(&r["cost"]["costPer1kGoodRequests"]), 20.0));
    // A price with no GPUs anywhere is a usage error.
    let o = goodput(&["analyze", &fixture("burst.json"), "--gpu-hour-cost", "2"]);
    assert_eq!(code(&o), 2);
    // GPUs without a price: per-GPU figures, null costs with a note.
    let o = goodput(&["analyze", &fixture("burst.json"), "--json", "--gpus", "8"]);
    let c = &json(&o)["cost"];
    assert_eq!(c["costPer1kGoodRequests"], Value::Null);
    assert!(c["note"].as_str().unwrap().contains("no price"));
    // api passes 64, batch 80 in 10 s: 14.4/s over 8 GPUs = 1.8.
    assert!(close(f(&c["goodputPerSPerGpu"]), 1.8));
}

#[test]
fn receipts_made_with_release_options_verify_against_their_trace() {
    let dir = std::env::temp_dir().join(format!("goodput-release-verify-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for (name, extra) in [
        (
            "burst.json",
            vec!["--recovery-tolerance", "1", "--burst-phase", "steady"],
        ),
        ("cost.json", vec!["--gpus", "4", "--gpu-hour-cost", "1.8"]),
        ("cost.json", vec!["--gpu-hour-cost", "7.2"]),
        ("burst.json", vec![]),
    ] {
        let receipt = dir.join("r.json");
        let mut args = vec!["analyze", &fixture(name), "--json"]
            .into_iter()
            .map(str::to_owned)
            .collect::<Vec<_>>();
        args.extend(extra.iter().map(|s| s.to_string()));
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = goodput(&argv);
        std::fs::write(&receipt, &o.stdout).unwrap();
        let v = goodput(&["verify", receipt.to_str().unwrap(), &fixture(name)]);
        assert_eq!(code(&v), 0, "{name} {extra:?}: {}", out(&v));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_tie_names_both_causes_and_their_readings() {
    // cost.json: one TTFT miss, one failure (timeout).
    let text = unwrapped(&goodput(&["analyze", &fixture("cost.json")]));
    assert!(text.contains(
        "diagnosis chat: 2 of 4 cohort rows not passed: 1 missed a gate (TTFT 1, TPOT 0, E2E 0; a row \
         counts under each gate it missed); failed 1 (timeout 1) → TTFT misses and failures tie: TTFT misses: look at queueing, \
         prefill, cold starts or admission; failures: investigate the failures on their own, by reason"
    ), "{text}");
}

#[test]
fn the_gate_checks_recovery_tpot_and_several_classes_in_one_run() {
    let trace = fixture("burst.json");
    // api alone: recovered in 1.5 s <= 2 → admit.
    let o = goodput(&[
        "gate",
        &trace,
        "--min-goodput",
        "0",
        "--class",
        "api",
        "--recovery-tolerance",
        "1",
        "--max-recovery-s",
        "2",
    ]);
    assert_eq!(code(&o), 0, "{}", out(&o));
    // All rows: batch never recovered → the recovery check fails, naming it.
    let o = goodput(&[
        "gate",
        &trace,
        "--min-goodput",
        "0",
        "--recovery-tolerance",
        "1",
        "--max-recovery-s",
        "2",
        "--max-censored-share",
        "1",
        "--json",
    ]);
    assert_eq!(code(&o), 1);
    let d = json(&o);
    let rec = d["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "recovery s")
        .unwrap();
    assert_eq!(rec["measured"], Value::Null);
    assert!(rec["note"]
        .as_str()
        .unwrap()
        .starts_with("batch: never recovered"));
    assert_eq!(d["diagnosis"].as_array().unwrap().len(), 2);
    // Class limits: api recovery 1.5 > 1 fails; batch p95 E2E (all 400) <= 500
    // holds; batch goodput 80 / 10 = 8 > 5 holds.
    let o = goodput(&[
        "gate",
        &trace,
        "--min-goodput",
        "0",
        "--recovery-tolerance",
        "1",
        "--max-censored-share",
        "1",
        "--class-limits",
        "api:recovery=1",
        "--class-limits",
        "batch:e2e=500,goodput=5",
        "--json",
    ]);
    assert_eq!(code(&o), 1);
    let checks = json(&o)["checks"].clone();
    let find = |class: &str, name: &str| {
        checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["class"] == class && c["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{class} {name}: {checks}"))
    };
    assert_eq!(find("api", "recovery s")["pass"], false);
    assert_eq!(f(&find("api", "recovery s")["measured"]), 1.5);
    assert_eq!(find("batch", "p95 e2e ms")["pass"], true);
    assert_eq!(f(&find("batch", "p95 e2e ms")["measured"]), 400.0);
    assert_eq!(f(&find("batch", "goodput/s")["measured"]), 8.0);
    // The text names the class of each limit and the diagnosis lines follow.
    let o = goodput(&[
        "gate",
        &trace,
        "--min-goodput",
        "0",
        "--recovery-tolerance",
        "1",
        "--max-censored-share",
        "1",
        "--class-limits",
        "api:recovery=1",
    ]);
    let text = out(&o);
    assert!(text.contains("api: recovery s"), "{text}");
    assert!(
        text.contains("REFUSE: 1 of 6 criteria fail (api: recovery s)"),
        "{text}"
    );
    assert!(text.contains("diagnosis api: 36 of 100"), "{text}");
    // A class limit naming no class is a usage error; so is a bad key.
    let o = goodput(&[
        "gate",
        &trace,
        "--min-goodput",
        "0",
        "--class-limits",
        "x:ttft=1",
    ]);
    assert_eq!(code(&o), 2);
    let o = goodput(&[
        "gate",
        &trace,
        "--min-goodput",
        "0",
        "--class-limits",
        "api:speed=1",
    ]);
    assert_eq!(code(&o), 2);
    // --max-recovery-s without a burst phase fails with the reason.
    let o = goodput(&[
        "gate",
        &fixture("cost.json"),
        "--min-goodput",
        "0",
        "--max-failure-share",
        "1",
        "--max-recovery-s",
        "100",
        "--json",
    ]);
    assert_eq!(code(&o), 1);
    assert!(out(&o).contains("the trace declares no burst phase"));
}

#[test]
fn the_gate_checks_p95_tpot() {
    // cost.json has no TPOT gate, but TPOTs: r1 (3000 − 1100) / 99 = 19.19…,
    // r2 (6000 − 2200) / 299 = 12.7…, r3 (9000 − 3900) / 599 = 8.5…; the
    // p95 of three is rank 3, the largest: 1900 / 99 ms.
    let o = goodput(&["analyze", &fixture("cost.json"), "--json"]);
    let p95 = f(&json(&o)["results"]["all"]["latency"]["tpotMs"]["p95"]);
    assert!(close(p95, 1900.0 / 99.0), "{p95}");
    let gate = |limit: &str| {
        code(&goodput(&[
            "gate",
            &fixture("cost.json"),
            "--min-goodput",
            "0",
            "--max-failure-share",
            "1",
            "--max-p95-tpot-ms",
            limit,
        ]))
    };
    assert_eq!(gate("19.2"), 0);
    assert_eq!(gate("19.1"), 1);
    assert_eq!(gate("-1"), 2);
}

// ---------------------------------------------------------------- the sim

/// One sim test at a time: their timings are the point.
static SIM: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    SIM.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn sim(max_batch: usize, step_ms: f64, output_tokens: f64) -> SimServer {
    SimServer::start(
        SimConfig {
            engine: EngineParams {
                max_batch,
                prefill_ms_per_1k_tokens: 0.0,
                decode_step_ms: step_ms,
                decode_ms_per_seq: 0.0,
            },
            output_tokens: (output_tokens, 0.0),
            faults: vec![],
            seed: 1,
            model_name: "sim".into(),
            also_served: vec![],
            quirks: Default::default(),
            tokenizer: None,
        },
        1,
    )
    .expect("start sim")
}

// The sim serves one request at a time (batch 1), one 40 ms step per request
// (one output token): capacity C = 25 requests/s. Constant arrivals:
// steady 12.5/s for 1 s, burst 50/s (2C) for 5 s, recover 12.5/s (C/2) for 16 s.
//
// Queue drain by hand, for a server of capacity C (requests/s): the burst's
// 250 arrivals come at 1010 … 5990 ms, and the server is busy from 1010 ms,
// so at the burst's end (6000 ms) Q0 = 250 − 4.99 C requests wait. After it,
// arrivals come at 12.5/s and leave at C/s: a request arriving d s after the
// burst has Q0 − (C − 12.5) d ahead of it and waits that many services of
// 1/C s; its TTFT (wait + its own 1/C s step) is within the 1000 ms gate
// once Q0 − (C − 12.5) d <= C − 1, i.e. from d = (Q0 − C + 1) / (C − 12.5).
// Recovery (tolerance 0) is the first arrival after the last late one: the
// first on time, at d (to within one gap of 80 ms). E2E equals TTFT here
// (one token) and its gate is 2000 ms, so TTFT decides.
// At C = 25: Q0 = 125.25, d = 101.25 / 12.5 = 8.1 s.
// A loaded machine runs the sim's steps late, so C is also measured from the
// trace (from the burst's start to the recovered arrival the queue never
// empties, so those rows' completions are back to back: C = (n − 1) / their
// span) and the recovery must be within 0.5 s of the same formula at that C;
// the measured C must be within [0.85, 1.02] × 25 (a sim faster than its
// steps would be a bug). At 0.85 × 25 the formula gives 14.1 s, so the 16 s
// recover phase leaves room for on-time arrivals after it. The sim
// tests of this file run one at a time (`SIM`), so they do not slow each
// other's sims down.
#[test]
fn a_burst_at_twice_capacity_recovers_within_the_hand_computed_drain_time() {
    let _turn = one_at_a_time();
    let server = sim(1, 40.0, 1.0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let (status, _, trace) = record(
        &server.url(),
        &path,
        &[
            "--phases",
            "steady:12.5/s:1s,burst:50/s:5s,recover:12.5/s:16s",
            "--arrival",
            "constant",
            "--slo",
            "api:ttft=1000,tpot=none,e2e=2000",
            "--grace",
            "1s",
            "--gpus",
            "2",
            "--gpu-hour-cost",
            "3",
        ],
    );
    assert_eq!(status, 0);
    assert_no_lost_row(&trace);
    // Phases on the trace's clock; Λ = 12.5 at 1 s, 262.5 at 6 s, 462.5 at
    // 22 s: arrivals s = 0..12 steady (13), 13..262 burst (250), 263..462
    // recover (200).
    let phases = trace["phases"].as_array().unwrap();
    let bounds: Vec<(String, f64, f64)> = phases
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_owned(),
                f(&p["startMs"]),
                f(&p["endMs"]),
            )
        })
        .collect();
    assert_eq!(
        bounds,
        vec![
            ("steady".into(), 0.0, 1000.0),
            ("burst".into(), 1000.0, 6000.0),
            ("recover".into(), 6000.0, 22000.0)
        ]
    );
    assert_eq!(f(&trace["window"]["endMs"]), 22000.0);
    assert_eq!(
        trace["resources"],
        serde_json::json!({"gpus": 2, "gpuHourCost": 3})
    );
    let count = |name: &str| {
        rows(&trace)
            .iter()
            .filter(|r| r["labels"]["phase"] == name)
            .count()
    };
    assert_eq!(
        (count("steady"), count("burst"), count("recover")),
        (13, 250, 200)
    );
    assert_eq!(f(&rows(&trace)[13]["arrivalMs"]), 1010.0);

    let r = receipt(&path);
    let bytes = std::fs::read(&path).unwrap();
    let analysis = goodput_core::analyze::analyze_bytes(
        &bytes,
        goodput_core::analyze::AnalyzeOptions {
            limits: goodput_core::trace::Limits {
                max_rows: 10_000,
                max_bytes: 1 << 30,
            },
            ..Default::default()
        },
    )
    .unwrap();
    let mut receipt_struct = analysis.receipt.clone();
    goodput_core::receipt::release::attach(
        &mut receipt_struct,
        &analysis.trace,
        &analysis.judgements,
        &goodput_core::receipt::release::ReleaseOptions::default(),
    )
    .unwrap();
    let api = &receipt_struct.recovery.as_ref().unwrap().classes["api"];
    let s = api.recovery_s.unwrap_or_else(|| panic!("{api:?}"));
    let expected = |c: f64| (250.0 - 4.99 * c - c + 1.0) / (c - 12.5);
    assert!((expected(25.0) - 8.1).abs() < 1e-9);
    // Rows arriving from the burst's start to the recovered arrival were
    // served back to back (the queue never emptied): their completions give
    // the capacity the drain actually had.
    let until = api.recovered_at_ms.unwrap_or(f64::INFINITY);
    let mut done: Vec<f64> = rows(&trace)
        .iter()
        .filter(|r| (1000.0..=until).contains(&f(&r["arrivalMs"])))
        .map(|r| f(&r["completedMs"]))
        .collect();
    done.sort_by(f64::total_cmp);
    let measured_c = (done.len() - 1) as f64 / (done[done.len() - 1] - done[0]) * 1000.0;
    eprintln!(
        "recovery {s} s; measured capacity {measured_c}/s, expected {} s",
        expected(measured_c)
    );
    assert!(
        (0.85 * 25.0..=1.02 * 25.0).contains(&measured_c),
        "capacity {measured_c}"
    );
    assert!(
        (s - expected(measured_c)).abs() <= 0.5,
        "recovery {s} s, expected {} s at {measured_c}/s",
        expected(measured_c)
    );
    // The diagnosis of an overload: TTFT misses dominate → queueing.
    let d = goodput_core::review::diagnosis::diagnose(&receipt_struct);
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].dominant,
        vec![goodput_core::review::diagnosis::Cause::TtftMisses]
    );
    assert!(d[0].reading().contains("queueing"));
    // Declared resources reach the receipt: 2 GPUs at 3 per GPU-hour.
    assert_eq!(r["contract"]["resources"]["source"], "trace");
    let goodput_per_s = f(&r["results"]["all"]["rates"]["goodputPerS"]);
    assert!(close(
        f(&r["cost"]["goodputPerSPerGpu"]),
        goodput_per_s / 2.0
    ));
}

// Burst at 2C for 2 s, then 1.5 C: the backlog only grows. With 0.5 s of
// grace (horizon 5 s) every row arriving before 4 s that was not yet served
// has waited over the 1000 ms TTFT gate (knownLate, a miss); those arriving
// from 4 s on wait over 2 s, so none has a first token by the horizon: they
// are undecided, and nothing after the last miss is known to have met the
// gate. Recovery is not shown; the gate refuses on recovery.
#[test]
fn a_burst_that_never_drains_has_no_recovery_and_the_gate_refuses() {
    let _turn = one_at_a_time();
    let server = sim(1, 40.0, 1.0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let (status, _, trace) = record(
        &server.url(),
        &path,
        &[
            "--phases",
            "steady:12.5/s:0.5s,burst:50/s:2s,recover:37.5/s:2s",
            "--arrival",
            "constant",
            "--slo",
            "api:ttft=1000,tpot=none,e2e=2000",
            "--grace",
            "0.5s",
        ],
    );
    assert_eq!(status, 0);
    assert_no_lost_row(&trace);
    let r = receipt(&path);
    let api = &r["recovery"]["classes"]["api"];
    assert_eq!(api["recoveryS"], Value::Null, "{api}");
    assert!(
        api["reason"]
            .as_str()
            .unwrap()
            .starts_with("recovery not shown within the window: none of the "),
        "{api}"
    );
    assert!(api["missesAfterBurst"].as_u64().unwrap() > 0, "{api}");
    let o = goodput(&[
        "gate",
        path.to_str().unwrap(),
        "--min-goodput",
        "0",
        "--max-censored-share",
        "1",
        "--max-recovery-s",
        "60",
        "--max-bytes",
        "10000000",
    ]);
    assert_eq!(code(&o), 1, "{}", out(&o));
    let text = out(&o);
    assert!(
        text.contains("recovery s") && text.contains("FAIL"),
        "{text}"
    );
    assert!(text.contains("diagnosis api:"), "{text}");
}

// Batch 8, a 60 ms decode step, 6 output tokens, 5 requests/s: no queue
// (a request needs 6 steps = 360 ms, at most 2 run at once), so TTFT is one
// step plus at most one step in progress (<= 120 ms + timer slack) and TPOT
// is 60 ms: every row misses a TPOT gate of 30 ms and nothing else.
#[test]
fn a_slow_decode_step_is_diagnosed_as_tpot_decode() {
    let _turn = one_at_a_time();
    let server = sim(8, 60.0, 6.0);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.json");
    let (status, _, _) = record(
        &server.url(),
        &path,
        &[
            "--request-rate",
            "5",
            "--arrival",
            "constant",
            "--duration",
            "2s",
            "--slo",
            "chat:ttft=500,tpot=30,e2e=5000",
            "--grace",
            "1s",
        ],
    );
    assert_eq!(status, 0);
    let o = goodput(&["analyze", path.to_str().unwrap()]);
    let text = unwrapped(&o);
    assert!(
        text.contains(
            "diagnosis chat: 10 of 10 cohort rows not passed: 10 missed a gate (TTFT 0, TPOT 10, E2E 0;"
        ),
        "{text}"
    );
    assert!(
        text.contains("TPOT misses dominate: look at decode contention or streaming"),
        "{text}"
    );
}
