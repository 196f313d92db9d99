//! vLLM result files of every released shape, and the arrival-unknown mode
//! they need: the April-2025 `benchmarks/benchmark_serving.py` fixture (a real
//! run against `goodput sim`, see fixtures/import/README.txt) reproduces
//! vLLM's own `request_goodput:` to the bit, and every command that reads its
//! trace says that arrival times are unknown.

mod common;

use common::{assert_valid, fixture, goodput, validator};
use goodput::cli::flags::parse_slo;
use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::trace::write::RowStatus;
use goodput_core::trace::{Equality, Scalar};
use goodput_import::{pipeline, ImportOptions, Outcome, Source};
use serde_json::{json, Value};

const APRIL_2025: &str = "vllm_benchmark_serving_0.8.4.json";
/// The gates of the run: `--goodput ttft:50 tpot:24 e2el:300`.
const GATES: &str = "vllm:ttft=50,tpot=24,e2e=300";

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(&format!("import/{name}"))).expect("read fixture")
}

fn options() -> ImportOptions {
    let (name, gates) = parse_slo(GATES).expect("slo parses");
    ImportOptions::with_gates(&name, gates, Equality::Inclusive)
}

fn import(bytes: &[u8]) -> Outcome {
    pipeline(Source::Vllm, bytes, &options(), None).unwrap_or_else(|e| panic!("{e}"))
}

fn source() -> Value {
    serde_json::from_slice(&read(APRIL_2025)).expect("fixture is JSON")
}

#[test]
fn april_2025_request_goodput_is_reproduced_to_the_bit() {
    let src = source();
    // That version spells the key with a colon and records no send times.
    assert!(src.get("request_goodput").is_none() && src.get("start_times").is_none());
    let theirs = src["request_goodput:"].as_f64().unwrap();
    let duration = src["duration"].as_f64().unwrap();
    let o = import(&read(APRIL_2025));
    let all = &o.receipt.results.all;
    // 4.342553605216256 req/s × 6.2175398290000885 s = 27.0 good requests (README.txt).
    assert_eq!(all.counts.pass, 27);
    assert_eq!(27.0 / duration, theirs);
    assert_eq!(all.rates.goodput_per_s.to_bits(), theirs.to_bits());
    // Every request is in the cohort: 48 completed (27 pass, 21 miss), 2 failed.
    assert_eq!(
        (all.counts.cohort, all.counts.miss, all.counts.failed),
        (50, 21, 2)
    );
    // vLLM's throughput is completed / duration, the same division.
    let throughput = src["request_throughput"].as_f64().unwrap();
    assert_eq!(all.rates.completed_per_s.to_bits(), throughput.to_bits());
    assert!(o
        .comparison
        .differences
        .iter()
        .any(|d| d.starts_with("Goodput reproduced")));
}

#[test]
fn april_2025_rows_carry_vllms_latencies_and_error_text() {
    let o = import(&read(APRIL_2025));
    let rows = &o.imported.trace.rows;
    assert_eq!(rows.len(), 50);
    // Row 0 by hand: ttfts[0] = 0.0293721559999085 s, itls[0] =
    // [0.023621764999916195, 3.8360999951692065e-05] s, output_lens[0] = 2:
    // TTFT 29.3721559999085 ms; E2E = TTFT + sum of ITLs = 53.03228199977639 ms,
    // both at full precision (never rounded to the microsecond).
    let r0 = &rows[0];
    assert_eq!(r0.arrival_ms, 0.0);
    assert_eq!(r0.first_token_ms, Some(0.0293721559999085 * 1000.0));
    assert!((r0.completed_ms.unwrap() - 53.03228199977639).abs() < 1e-9);
    assert_eq!(r0.output_tokens, Some(2));
    // errors[46] and errors[47] are "Internal Server Error" (the sim's HTTP 500).
    for i in [46, 47] {
        let r = &rows[i];
        assert_eq!(r.status, RowStatus::Failed);
        assert_eq!(r.reason.as_deref(), Some("http_500"));
        assert_eq!(
            r.labels.get("error"),
            Some(&Scalar::String("Internal Server Error".into()))
        );
    }
    assert_eq!(
        rows.iter()
            .filter(|r| r.status == RowStatus::Failed)
            .count(),
        2
    );
}

#[test]
fn a_file_without_send_times_declares_its_arrivals_unknown() {
    let o = import(&read(APRIL_2025));
    let t = &o.imported.trace;
    assert_eq!(
        t.boundary.get("arrival"),
        Some(&Scalar::String("unknown".into()))
    );
    assert!(t.rows.iter().all(|r| r.arrival_ms == t.window.start_ms));
    assert_eq!(
        (t.window.end_ms - t.window.start_ms) / 1000.0,
        6.2175398290000885
    );
    assert!(t.warmup.is_none());
    assert_eq!(
        o.comparison.shape.as_deref(),
        Some(
            "benchmark_serving.py / vllm bench serve without start_times (request_goodput:); \
             E2E = TTFT + sum of ITLs; arrival times unknown"
        )
    );
    // The receipt echoes the declaration and leaves the occupancy figures null.
    let r = &o.receipt;
    assert!(r.contract.arrivals_unknown.is_some());
    for block in std::iter::once(&r.results.all).chain(r.results.classes.values()) {
        let l = &block.littles_law;
        assert_eq!(
            (l.in_flight_mean, l.ratio, l.steady_state),
            (None, None, None)
        );
        assert!(l
            .note
            .as_deref()
            .unwrap_or("")
            .contains("arrival times are unknown"));
        // λ·W needs no arrival instant: completed/s × mean E2E stays.
        assert!(l.predicted_in_flight.is_some());
    }
    // The trace is ordinary: strict analysis and the committed schemas accept it.
    analyze_bytes(
        &o.trace_bytes,
        AnalyzeOptions {
            strict: true,
            ..AnalyzeOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("rejected: {e}"));
    let doc: Value = serde_json::from_slice(&o.trace_bytes).unwrap();
    assert_valid(&validator("trace.schema.json"), &doc, "imported trace");
    let receipt = serde_json::to_value(&o.receipt).unwrap();
    assert_eq!(
        receipt["results"]["all"]["littlesLaw"]["inFlightMean"],
        Value::Null
    );
    assert_valid(&validator("receipt.schema.json"), &receipt, "receipt");
}

/// A minimal result file of the shape vLLM saved from 0.6.3 (before
/// `--goodput`): two requests, the second failed.
fn before_goodput() -> Value {
    json!({
        "duration": 2.0, "completed": 1,
        "input_lens": [10, 10], "output_lens": [3, 0],
        "ttfts": [0.1, 0.0], "itls": [[0.02, 0.03], []],
        "generated_texts": ["abc", ""],
        "errors": ["", "Traceback (most recent call last):\n  ...\naiohttp.client_exceptions.ServerDisconnectedError: Server disconnected"]
    })
}

#[test]
fn each_released_shape_is_named_and_mapped() {
    // Before --goodput (0.6.3): no goodput key, E2E = 100 + 20 + 30 ms = 150 ms.
    let o = import(&serde_json::to_vec(&before_goodput()).unwrap());
    assert_eq!(
        o.comparison.shape.as_deref(),
        Some(
            "benchmark_serving.py before --goodput (no request_goodput, no start_times); \
             E2E = TTFT + sum of ITLs; arrival times unknown"
        )
    );
    let rows = &o.imported.trace.rows;
    // In doubles 0.1 + 0.02 + 0.03 s is 0.15000000000000002 s, as in vLLM's
    // own Python: kept at full precision, 150.00000000000003 ms.
    assert_eq!(rows[0].first_token_ms, Some(100.0));
    assert!((rows[0].completed_ms.unwrap() - 150.0).abs() < 1e-9);
    assert_eq!(rows[1].reason.as_deref(), Some("disconnect"));
    assert_eq!(
        rows[1].labels.get("error"),
        Some(&Scalar::String(
            "aiohttp.client_exceptions.ServerDisconnectedError: Server disconnected".into()
        ))
    );
    assert_eq!(o.imported.reported.goodput_per_s, None);

    // 0.9.2 and later: `request_goodput` without a colon (null without --goodput).
    let mut plain = before_goodput();
    plain["request_goodput"] = Value::Null;
    let o = import(&serde_json::to_vec(&plain).unwrap());
    assert!(o
        .comparison
        .shape
        .as_deref()
        .unwrap()
        .starts_with("vllm bench serve without start_times (request_goodput)"));

    // With per-request send times and E2E: arrivals are the sends, E2E the file's.
    let mut sent = before_goodput();
    sent["start_times"] = json!([100.0, 100.5]);
    sent["e2els"] = json!([0.2, null]);
    sent["request_goodput"] = json!(0.5);
    let o = import(&serde_json::to_vec(&sent).unwrap());
    assert_eq!(
        o.comparison.shape.as_deref(),
        Some("vllm bench serve with start_times; E2E from e2els; arrivals = sends")
    );
    let t = &o.imported.trace;
    assert_eq!(
        t.boundary.get("arrival"),
        Some(&Scalar::String("sent".into()))
    );
    assert_eq!(
        (t.rows[1].arrival_ms, t.rows[0].completed_ms),
        (500.0, Some(200.0))
    );
    assert!(o.receipt.contract.arrivals_unknown.is_none());
    assert!(o.receipt.results.all.littles_law.in_flight_mean.is_some());
}

#[test]
fn a_length_mismatch_without_send_times_names_ttfts_as_the_reference() {
    let mut doc = before_goodput();
    doc["errors"].as_array_mut().unwrap().pop();
    let e = pipeline(
        Source::Vllm,
        &serde_json::to_vec(&doc).unwrap(),
        &options(),
        None,
    )
    .unwrap_err();
    assert!(
        e.to_string()
            .contains("/errors: has 1 entries but /ttfts has 2 (one per request)"),
        "{e}"
    );
}

// ---- the commands on an arrival-unknown trace ----

fn run(args: &[&str]) -> std::process::Output {
    goodput().args(args).output().expect("spawn goodput")
}

const LINE: &str = "arrival times UNKNOWN (boundary.arrival = \"unknown\")";

#[test]
fn every_command_works_on_an_arrival_unknown_trace_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.json");
    let receipt = dir.path().join("receipt.json");
    let report = dir.path().join("report.html");
    let (t, r, h) = (
        trace.display().to_string(),
        receipt.display().to_string(),
        report.display().to_string(),
    );
    let src = fixture(&format!("import/{APRIL_2025}"))
        .display()
        .to_string();
    let o = run(&[
        "import", "--from", "vllm", &src, "--slo", GATES, "--out", &t,
    ]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("shape: benchmark_serving.py / vllm bench serve without start_times"),
        "{text}"
    );

    let o = run(&["analyze", &t, "--json", "--out", &r]);
    assert_eq!(o.status.code(), Some(0));
    let o = run(&["analyze", &t]);
    assert!(String::from_utf8(o.stdout).unwrap().contains(LINE));

    let o = run(&["verify", &r, &t]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains("VERIFIED") && out.contains(LINE), "{out}");

    let o = run(&["sweep", &t]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8(o.stdout)
        .unwrap()
        .starts_with("NOTE      arrival times UNKNOWN"));

    // 27 good requests over 6.2175 s = 4.34 req/s > 4: admitted, and said.
    let o = run(&["gate", &t, "--min-goodput", "4"]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert!(out.contains(LINE), "{out}");

    let o = run(&["report", &t, "--out", &h]);
    assert_eq!(o.status.code(), Some(0));
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("id=\"arrivals-unknown\""));
    assert!(html.contains("id=\"lanes-not-drawn\""));
    assert!(!html.contains("<svg id=\"lanes\""));
}

#[test]
fn a_warmup_cannot_be_declared_when_arrivals_are_unknown() {
    let doc = json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 1000, "endMs": 2000},
        "warmup": {"startMs": 0, "endMs": 1000},
        "equality": "inclusive",
        "classes": {"c": {"ttftMs": 100, "tpotMs": null, "e2eMs": null}},
        "boundary": {"arrival": "unknown"},
        "rows": []
    });
    let e = analyze_bytes(
        &serde_json::to_vec(&doc).unwrap(),
        AnalyzeOptions::default(),
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("/warmup") && text.contains("\"unknown\""),
        "{text}"
    );
}

#[test]
fn phases_cannot_be_declared_when_arrivals_are_unknown() {
    // Recovery and its time bins measure from a phase's end; with every
    // arrival at the window start they would be computed from invented
    // instants, so the document is refused at /phases.
    let doc = json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 10000},
        "equality": "inclusive",
        "classes": {"c": {"ttftMs": 100, "tpotMs": null, "e2eMs": null}},
        "boundary": {"arrival": "unknown"},
        "phases": [{"name": "burst", "startMs": 0, "endMs": 5000}],
        "rows": []
    });
    let e = analyze_bytes(
        &serde_json::to_vec(&doc).unwrap(),
        AnalyzeOptions::default(),
    )
    .unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("/phases") && text.contains("\"unknown\""),
        "{text}"
    );
    // The same phases with known arrivals are accepted.
    let mut known = doc.clone();
    known["boundary"] = json!({});
    analyze_bytes(
        &serde_json::to_vec(&known).unwrap(),
        AnalyzeOptions::default(),
    )
    .expect("phases with arrival instants are accepted");
}
