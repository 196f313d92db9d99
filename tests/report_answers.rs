//! The HTML report's view of reasoning models (docs/contract.md §10.16,
//! docs/report.md): a TTFA histogram per class with answer figures, the TTFA
//! gate in the gates table, the `miss: TTFA` and `miss: no answer` columns,
//! and the p95 TTFA with its interval, against figures computed by hand; and
//! a trace without answers that shows none of it.

mod common;

use scraper::{ElementRef, Html, Selector};
use serde_json::{json, Value};

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap_or_else(|e| panic!("selector {s}: {e:?}"))
}

fn text(e: ElementRef) -> String {
    e.text().collect::<String>()
}

fn page(doc: &Value) -> Html {
    let a = common::analyze_generated(&serde_json::to_vec(doc).unwrap());
    Html::parse_document(&goodput_render::report::analysis_page::page(&a).expect("page"))
}

/// Class `think`: TTFT 1000, no TPOT gate, E2E 20000, TTFA 5000, inclusive;
/// window 10 s. a answers at 5000 (on the gate: pass), b never answers
/// (miss no_answer), c at 300 (pass), d at 9000 (miss ttfa).
fn think() -> Value {
    json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 10000, "horizonMs": 10000},
        "equality": "inclusive",
        "classes": {"think": {"ttftMs": 1000, "tpotMs": null, "e2eMs": 20000, "ttfaMs": 5000}},
        "rows": [
            {"id": "a", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200,
             "firstAnswerMs": 5000, "completedMs": 6000, "outputTokens": 50, "reasoningTokens": 30},
            {"id": "b", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200,
             "completedMs": 8000, "outputTokens": 100, "reasoningTokens": 100},
            {"id": "c", "arrivalMs": 0, "status": "completed", "firstTokenMs": 300,
             "firstAnswerMs": 300, "completedMs": 300, "outputTokens": 1},
            {"id": "d", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100,
             "firstAnswerMs": 9000, "completedMs": 9500, "outputTokens": 60, "reasoningTokens": 40}
        ]
    })
}

#[test]
fn the_ttfa_histogram_bins_the_answered_rows_and_counts_the_rest_in_its_caption() {
    let html = page(&think());
    let fig = html
        .select(&sel("figure[data-class=\"think\"][data-metric=\"ttfa\"]"))
        .next()
        .expect("a TTFA histogram");
    // The axis runs to a round number at or above max(9000, gate 5000):
    // nice_step(9000 / 5) = 2000, so 10000 ms; 40 bins of 250 ms. The three
    // answered rows: 300 → bin [250, 500), 5000 → [5000, 5250), 9000 →
    // [9000, 9250); b, which never answered, is in no bin.
    let svg = fig.select(&sel("svg")).next().expect("svg");
    assert_eq!(svg.value().attr("data-ms1"), Some("10000"));
    let bars: Vec<String> = fig.select(&sel("rect.bar")).map(|b| text(b)).collect();
    assert_eq!(
        bars,
        [
            "[250, 500) ms: 1 row",
            "[5000, 5250) ms: 1 row",
            "[9000, 9250) ms: 1 row"
        ]
    );
    // n 3; nearest rank p50 = 2nd = 5000, p95 = p99 = 3rd = 9000; d over
    // the gate; b without an answer.
    let caption = text(fig.select(&sel("figcaption")).next().expect("caption"));
    assert_eq!(
        caption,
        "n 3 · p50 5000.0 · p95 9000.0 · p99 9000.0 · max 9000.0 ms · over the gate: 1 · no answer: 1"
    );
}

#[test]
fn the_tables_name_the_ttfa_gate_its_misses_and_its_p95() {
    let html = page(&think());
    let gates = text(
        html.select(&sel("#gates tr[data-class=\"think\"]"))
            .next()
            .expect("gates row"),
    );
    assert!(gates.contains("TTFA ≤ 5000 ms"), "{gates}");
    let cell = |col: &str| {
        html.select(&sel(&format!("#reasons td[data-col=\"{col}\"]")))
            .map(text)
            .collect::<Vec<_>>()
    };
    // All rows, then class think: d misses TTFA, b has no answer.
    assert_eq!(cell("ttfa"), ["1", "1"]);
    assert_eq!(cell("noAnswer"), ["1", "1"]);
    let p95 = html
        .select(&sel("#intervals td[data-col=\"ttfa-p95\"]"))
        .map(text)
        .collect::<Vec<_>>();
    // 3 values cannot bound a p95 at 95 %: the value, "n too small".
    assert_eq!(p95, ["9000.0(n too small)", "9000.0(n too small)"]);
}

#[test]
fn a_trace_without_answers_shows_no_ttfa_anywhere() {
    let mut doc = think();
    doc["classes"]["think"]
        .as_object_mut()
        .unwrap()
        .remove("ttfaMs");
    for row in doc["rows"].as_array_mut().unwrap() {
        let row = row.as_object_mut().unwrap();
        row.remove("firstAnswerMs");
        row.remove("reasoningTokens");
    }
    let html = page(&doc);
    let raw = html.html();
    assert!(!raw.contains("data-metric=\"ttfa\""));
    assert!(!raw.contains("miss: TTFA"));
    assert!(!raw.contains("ttfa-p95"));
    assert!(!raw.contains("ttfa-note"));
}
