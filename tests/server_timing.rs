//! Server-reported timing beside the client's (docs/contract.md §10.17): the
//! receipt's `serverTiming` split of TTFT into queue, prefill and time
//! outside the engine, the client check, and the diagnosis that reads it,
//! against figures computed by hand.

use goodput_core::analyze::{analyze_bytes, Analysis, AnalyzeOptions};
use goodput_core::review::diagnosis::diagnose;
use serde_json::{json, Value};

fn analyze(doc: &Value) -> Analysis {
    analyze_bytes(&serde_json::to_vec(doc).unwrap(), AnalyzeOptions::default()).expect("valid")
}

fn row(id: &str, first: f64, labels: Value) -> Value {
    json!({"id": id, "arrivalMs": 0, "status": "completed", "firstTokenMs": first,
           "completedMs": 1000, "outputTokens": 10, "labels": labels})
}

/// Class chat: TTFT ≤ 500, E2E ≤ 5000, inclusive. Client TTFT, server queue
/// and prefill (ms), outside = TTFT − queue − prefill:
/// - a 300 = 100 + 150 + 50 (pass)
/// - b 800 = 600 + 150 + 50 (misses TTFT)
/// - c 700 = 100 + 100 + 500 (misses TTFT)
/// - d 400 = (no queue) + 200 + 200 (pass; its queue counts as outside)
/// - e 200, no server labels: not split.
fn trace(ttft_gate: f64) -> Value {
    json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 10000},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": ttft_gate, "tpotMs": null, "e2eMs": 5000}},
        "rows": [
            row("a", 300.0, json!({"server.queueMs": 100, "server.prefillMs": 150})),
            row("b", 800.0, json!({"server.queueMs": 600, "server.prefillMs": 150})),
            row("c", 700.0, json!({"server.queueMs": 100, "server.prefillMs": 100})),
            row("d", 400.0, json!({"server.prefillMs": 200, "server.promptTokens": 512})),
            row("e", 200.0, json!({"promptTokens": 512})),
        ]
    })
}

#[test]
fn the_ttft_splits_into_queue_prefill_and_outside_by_hand() {
    let a = analyze(&trace(500.0));
    let t = a.receipt.results.classes["chat"]
        .server_timing
        .clone()
        .expect("rows carry server timing");
    assert_eq!((t.rows, t.queue_reported, t.prefill_reported), (4, 3, 4));
    assert_eq!(t.negative_outside, 0);
    // Nearest rank: queue [100, 100, 600] p50 = 2nd = 100; prefill [100,
    // 150, 150, 200] p50 = 2nd = 150; outside [50, 50, 200, 500] p50 = 2nd =
    // 50, p95 = 4th = 500.
    assert_eq!(t.queue_ms.p50, Some(100.0));
    assert_eq!(t.prefill_ms.p50, Some(150.0));
    assert_eq!(
        (t.outside_ms.p50, t.outside_ms.p95),
        (Some(50.0), Some(500.0))
    );
    // Sums: TTFT 2200, queue 800, prefill 600, outside 800.
    assert_eq!(t.split.ttft_ms, 2200.0);
    assert_eq!(t.split.queue_share, Some(800.0 / 2200.0));
    assert_eq!(t.split.prefill_share, Some(600.0 / 2200.0));
    assert_eq!(t.split.outside_share, Some(800.0 / 2200.0));
    // TTFT misses b and c: TTFT 1500, queue 700, prefill 250, outside 550.
    let m = t.ttft_misses.expect("a TTFT gate is declared");
    assert_eq!((m.rows, m.ttft_ms), (2, 1500.0));
    assert_eq!(m.queue_share, Some(700.0 / 1500.0));
    assert_eq!(m.outside_share, Some(550.0 / 1500.0));
    // Median outside 50 of the 500 gate is exactly the 10 % limit: not over it.
    let check = t.outside_check.expect("a TTFT gate is declared");
    assert_eq!(check.share, Some(0.1));
    assert!(!check.flagged);
    // The all-rows block holds the same rows.
    assert_eq!(a.receipt.results.all.server_timing, Some(t));
}

#[test]
fn the_diagnosis_names_the_queue_when_the_queue_took_most_of_the_misses_ttft() {
    let a = analyze(&trace(500.0));
    let d = diagnose(&a.receipt);
    assert_eq!(
        d[0].reading(),
        "TTFT misses dominate: of their TTFT, 47 % was queueing in the engine, 17 % prefill, \
         37 % outside the engine (2 rows): the time went waiting in the engine's queue: the \
         server is short of capacity for this load (batch limits, admission)"
    );
}

#[test]
fn a_client_that_eats_the_promise_is_flagged_and_named() {
    // TTFT gate 250: a (300), b, c and d (400) miss. Misses' TTFT 2200,
    // queue 800, prefill 600, outside 800: outside and queue tie at 36 %,
    // and a tie names the outside (the client is the cheaper suspect to rule
    // out). Median outside 50 of 250 = 20 % > 10 %: flagged.
    let a = analyze(&trace(250.0));
    let t = a.receipt.results.classes["chat"]
        .server_timing
        .clone()
        .unwrap();
    let check = t.outside_check.unwrap();
    assert_eq!(check.share, Some(0.2));
    assert!(check.flagged);
    let reading = diagnose(&a.receipt)[0].reading();
    assert!(
        reading.starts_with(
            "TTFT misses dominate: of their TTFT, 36 % was queueing in the engine, 27 % \
             prefill, 36 % outside the engine (4 rows): the time went outside the engine"
        ),
        "{reading}"
    );
    let text = goodput_render::text::render(&a.receipt, &[]);
    assert!(text.contains("\nWHERE THE TIME WENT"), "{text}");
    assert!(
        text.contains(
            "CHECK chat: the median time outside the engine, 50.0 ms, is 20.0 % of the smallest \
             TTFT gate (250 ms; limit 10.0 %)"
        ),
        "{text}"
    );
    assert!(
        text.contains("CHECK chat: 1 of 4 rows carry no server queue time"),
        "{text}"
    );
}

#[test]
fn a_trace_without_server_labels_has_no_server_timing() {
    let mut doc = trace(500.0);
    for r in doc["rows"].as_array_mut().unwrap() {
        r["labels"] = json!({"promptTokens": 512});
    }
    let a = analyze(&doc);
    assert!(a.receipt.results.all.server_timing.is_none());
    let json = serde_json::to_string(&a.receipt).unwrap();
    assert!(!json.contains("serverTiming"));
    let text = goodput_render::text::render(&a.receipt, &[]);
    assert!(!text.contains("WHERE THE TIME WENT"));
}

#[test]
fn the_report_draws_the_split_as_stacked_bars_with_the_shares_by_hand() {
    let a = analyze(&trace(500.0));
    let html = goodput_render::report::analysis_page::page(&a).expect("page");
    let doc = scraper::Html::parse_document(&html);
    let sel = |s: &str| scraper::Selector::parse(s).unwrap();
    let bars: Vec<(String, String)> = doc
        .select(&sel("svg.time-split[data-class=\"chat\"] rect[data-part]"))
        .map(|r| {
            (
                r.value().attr("width").unwrap().to_owned(),
                r.text().collect::<String>(),
            )
        })
        .collect();
    // All four split rows: 800, 600, 800 of 2200 ms → 600 px × 0.364 =
    // 218.2, × 0.273 = 163.6; the two misses: 700, 250, 550 of 1500 ms →
    // 280, 100, 220 px.
    assert_eq!(
        bars,
        [
            ("218.2".into(), "queue: 36.4 % of 2200.0 ms".into()),
            ("163.6".into(), "prefill: 27.3 % of 2200.0 ms".into()),
            (
                "218.2".into(),
                "outside the engine: 36.4 % of 2200.0 ms".into()
            ),
            ("280.0".into(), "queue: 46.7 % of 1500.0 ms".into()),
            ("100.0".into(), "prefill: 16.7 % of 1500.0 ms".into()),
            (
                "220.0".into(),
                "outside the engine: 36.7 % of 1500.0 ms".into()
            ),
        ]
    );
}
