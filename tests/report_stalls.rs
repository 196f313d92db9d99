//! The HTML report's view of streams that stall (docs/contract.md §10.15,
//! docs/report.md): the gap histogram of each class with a `gaps` block and
//! the stall bars on the verdict lanes, against figures computed by hand;
//! escaping of the strings they show; and a trace without gaps that shows
//! none of it.

mod common;

use goodput_core::analyze::Analysis;
use goodput_render::report::STALL_MARK_LIMIT;
use scraper::{ElementRef, Html, Selector};
use serde_json::{json, Value};

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap_or_else(|e| panic!("selector {s}: {e:?}"))
}

fn text(e: ElementRef) -> String {
    e.text().collect::<String>()
}

fn attr<'a>(e: ElementRef<'a>, name: &str) -> &'a str {
    e.value()
        .attr(name)
        .unwrap_or_else(|| panic!("no {name} on {:?}", e.value()))
}

fn page_of(a: &Analysis) -> String {
    goodput_render::report::analysis_page::page(a).expect("default sweep runs")
}

fn analyze(doc: &Value) -> Analysis {
    common::analyze_generated(&serde_json::to_vec(doc).unwrap())
}

/// One class, stall gate 100 ms, per-token deadline 50 ms, inclusive; the
/// window is 10,540 ms long so the lanes' axis (0 to the horizon 10,540 ms
/// over the 1,054 px plot that starts at x = 230) is exactly 10 ms a pixel.
///
/// - `a`: gaps 20, 20, 20, 20 (5 tokens): pass;
/// - `b`: gaps 30, 40, 30 (4 tokens): pass;
/// - the stalled row (id given): first token at 5200, gaps 20, 20, 250, 20,
///   10 (6 tokens): largest 250 at position 2, over the gate: miss `stall`;
/// - `d`: one token, `gapsMs: []`; `e`: no `gapsMs`: both pass, neither
///   judged on stall.
fn stall_trace(stalled_id: &str, class: &str) -> Value {
    json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 10540},
        "equality": "inclusive",
        "classes": {class: {"ttftMs": 1000, "tpotMs": null, "e2eMs": 10000,
                            "stallMs": 100, "tokenDeadlineMs": 50}},
        "rows": [
            {"id": "a", "arrivalMs": 1000, "status": "completed", "firstTokenMs": 1200,
             "completedMs": 1280, "outputTokens": 5, "gapsMs": [20, 20, 20, 20]},
            {"id": "b", "arrivalMs": 2000, "status": "completed", "firstTokenMs": 2100,
             "completedMs": 2200, "outputTokens": 4, "gapsMs": [30, 40, 30]},
            {"id": stalled_id, "arrivalMs": 5000, "status": "completed", "firstTokenMs": 5200,
             "completedMs": 5520, "outputTokens": 6, "gapsMs": [20, 20, 250, 20, 10]},
            {"id": "d", "arrivalMs": 7000, "status": "completed", "firstTokenMs": 7100,
             "completedMs": 7100, "outputTokens": 1, "gapsMs": []},
            {"id": "e", "arrivalMs": 8000, "status": "completed", "firstTokenMs": 8100,
             "completedMs": 8300, "outputTokens": 3}
        ]
    })
}

/// The pooled gaps are 10; 20 × 7; 30 × 2; 40; 250 (12 gaps in 3 rows). The
/// axis runs to 250 ms (the largest gap over the gate 100: step
/// nice_step(250 / 5) = 50, ceil(250 / 50) × 50 = 250), so the 40 bins are
/// 6.25 ms wide: 10 → bin 1 [6.25, 12.5); 20 → bin 3 [18.75, 25); 30 → bin
/// 4 [25, 31.25); 40 → bin 6 [37.5, 43.75); 250 → past the last bin's start,
/// bin 39 [243.75, 250). The gate's x is 40 + 100 / 250 × (396 − 40) =
/// 182.4. Nearest rank over 12 sorted gaps: p50 is the 6th (20), p95 and
/// p99 the 12th (250). Fluidity with d = 50: a meets 4 of 4, b 3 of 3
/// (30, 70, 100 against 50, 100, 150), the stalled row 4 of 5 (20, 40 met;
/// 290 > 150 missed, restart; 20 ≤ 50, 30 ≤ 100 met): 11 of 12 = 91.7 %.
#[test]
fn the_gap_histogram_holds_the_bins_counted_by_hand_with_the_stall_gate() {
    let html = page_of(&analyze(&stall_trace("c", "chat")));
    let doc = Html::parse_document(&html);
    let figs: Vec<ElementRef> = doc
        .select(&sel("figure.dist[data-metric=\"gap\"]"))
        .collect();
    assert_eq!(figs.len(), 1, "one gap histogram for the one class");
    let fig = figs[0];
    assert_eq!(attr(fig, "data-class"), "chat");
    let svg = fig.select(&sel("svg")).next().unwrap();
    assert_eq!(attr(svg, "data-ms1"), "250");
    let title = svg.select(&sel("text")).next().map(text).unwrap();
    assert_eq!(title, "inter-token latency (ms)");
    let bars: Vec<(String, String)> = svg
        .select(&sel("rect.bar"))
        .map(|b| {
            let t = b.select(&sel("title")).next().map(text).unwrap();
            (attr(b, "data-count").to_owned(), t)
        })
        .collect();
    let want = [
        ("1", "[6.25, 12.5) ms: 1 gap"),
        ("7", "[18.75, 25) ms: 7 gaps"),
        ("2", "[25, 31.25) ms: 2 gaps"),
        ("1", "[37.5, 43.75) ms: 1 gap"),
        ("1", "[243.75, 250) ms: 1 gap"),
    ];
    let want: Vec<(String, String)> = want
        .iter()
        .map(|(n, t)| (n.to_string(), t.to_string()))
        .collect();
    assert_eq!(bars, want);
    let gate = svg
        .select(&sel("line.gate"))
        .next()
        .expect("the stall gate");
    assert_eq!(attr(gate, "x1"), "182.40");
    assert_eq!(attr(gate, "data-gate-ms"), "100");
    let label: String = svg.select(&sel("text.gate-label")).map(text).collect();
    assert_eq!(label, "stall gate ≤ 100");
    let caption = fig.select(&sel("figcaption")).next().unwrap();
    let words = text(caption);
    assert!(
        words.starts_with("n 12 gaps in 3 rows · p50 20.0 · p95 250.0 · p99 250.0 · max 250.0 ms"),
        "{words}"
    );
    let col = |c: &str| {
        caption
            .select(&sel(&format!("[data-col=\"{c}\"]")))
            .next()
            .map(text)
            .unwrap_or_else(|| panic!("no {c} in {words}"))
    };
    assert_eq!(col("stallMisses"), "1");
    assert_eq!(col("notJudgedOnStall"), "2");
    assert_eq!(col("fluidity"), "91.7 %");
    assert!(
        words.contains("(11 of 12 token deadlines of 50 ms met)"),
        "{words}"
    );
}

/// The stall runs from 5200 + 20 + 20 = 5240 ms to 5240 + 250 = 5490 ms; at
/// 10 ms a pixel from x = 230 that is x = 230 + 524 = 754 and 25 px wide.
/// The miss lane is the second (lanes 26 px tall from y = 40: one class, so
/// max(14 + 8, 26)); its mark's top is 40 + 26 + 4 = 70 and the 4 px bar
/// sits at the foot of the 12 px mark: y = 70 + 12 − 4 = 78.
#[test]
fn the_stall_bar_sits_on_the_lanes_where_the_largest_gap_happened() {
    let html = page_of(&analyze(&stall_trace("c", "chat")));
    let doc = Html::parse_document(&html);
    let marks: Vec<ElementRef> = doc.select(&sel("svg#lanes rect.stall-mark")).collect();
    assert_eq!(marks.len(), 1);
    let m = marks[0];
    assert_eq!(attr(m, "x"), "754.0");
    assert_eq!(attr(m, "width"), "25.0");
    assert_eq!(attr(m, "y"), "78.0");
    assert_eq!(attr(m, "height"), "4.0");
    assert_eq!(attr(m, "data-row"), "2");
    assert_eq!(attr(m, "data-gap-ms"), "250");
    assert_eq!(attr(m, "data-gap-index"), "2");
    assert_eq!(attr(m, "data-from-ms"), "5240");
    let tip = m.select(&sel("title")).next().map(text).unwrap();
    assert_eq!(
        tip,
        "c · chat · stall 250 ms between events 2 and 3 of the stream (event 0 is the first token), \
         from 5240 ms to 5490 ms"
    );
    // The row's own mark in the miss lane is at its arrival: 230 + 500 − 1.
    let own = doc
        .select(&sel("svg#lanes rect.mark.v-miss"))
        .next()
        .unwrap();
    assert_eq!(attr(own, "x"), "729.0");
    let legend = doc.select(&sel("#lanes-legend #stall-legend")).next();
    let legend = legend.map(text).expect("a legend entry for the bars");
    assert!(legend.ends_with("(1)"), "{legend}");
    // The reasons table and the class's gates name the stall gate too.
    let stall_cells: Vec<String> = doc
        .select(&sel("table#reasons td[data-col=\"stall\"]"))
        .map(text)
        .collect();
    assert_eq!(stall_cells, ["1", "1"], "all rows, then the class");
    let gates: String = doc.select(&sel("table#gates tbody")).map(text).collect();
    assert!(
        gates.contains("TTFT ≤ 1000 ms · TPOT: no gate · E2E ≤ 10000 ms · stall ≤ 100 ms"),
        "{gates}"
    );
}

#[test]
fn a_stalled_id_and_class_with_markup_are_escaped_in_the_tooltip() {
    let id = "<script>alert(\"stall\")</script>";
    let class = "<u>chat</u>&'";
    let html = page_of(&analyze(&stall_trace(id, class)));
    let lower = html.to_ascii_lowercase();
    assert!(!lower.contains("<script"), "a raw <script> in the page");
    assert!(!lower.contains("<u>"), "a raw <u> in the page");
    assert!(
        html.contains(
            "<title>&lt;script&gt;alert(&quot;stall&quot;)&lt;/script&gt; · &lt;u&gt;chat&lt;/u&gt;&amp;&#39; · stall 250 ms"
        ),
        "the tooltip, escaped"
    );
    let doc = Html::parse_document(&html);
    assert_eq!(doc.select(&sel("script, u")).count(), 0);
    let tip = doc
        .select(&sel("rect.stall-mark title"))
        .next()
        .map(text)
        .unwrap();
    assert!(tip.starts_with(&format!("{id} · {class} · stall")), "{tip}");
    let fig = doc
        .select(&sel("figure.dist[data-metric=\"gap\"]"))
        .next()
        .unwrap();
    assert_eq!(attr(fig, "data-class"), class);
}

/// The same rows without `gapsMs` and a class without `stallMs` or
/// `tokenDeadlineMs`: the receipt has no `gaps` block, and the page none of
/// the gap figure, the stall bars, their legend and notes, or the stall
/// column. (That such a page is byte for byte what it was before is the
/// insta snapshot of `fixtures/equality_inclusive.json` in tests/report.rs.)
#[test]
fn a_trace_without_gaps_shows_no_gap_figure_and_no_stall() {
    let mut doc = stall_trace("c", "chat");
    for row in doc["rows"].as_array_mut().unwrap() {
        row.as_object_mut().unwrap().remove("gapsMs");
    }
    let gates = doc["classes"]["chat"].as_object_mut().unwrap();
    gates.remove("stallMs");
    gates.remove("tokenDeadlineMs");
    let a = analyze(&doc);
    assert!(a.receipt.results.all.gaps.is_none());
    let html = page_of(&a);
    for absent in [
        "data-metric=\"gap\"",
        "stall-mark",
        "stall-legend",
        "gaps-note",
        "miss: stall",
        "inter-token",
        "stall",
    ] {
        assert!(!html.contains(absent), "{absent} on a page without gaps");
    }
}

/// 600 rows each stalling once (gaps 10 then 200 + i; gate 100, so every row
/// misses): only the 500 largest stalls, rows 100 … 599, get a bar; a note
/// counts the rest, and the legend counts all 600.
#[test]
fn at_most_stall_mark_limit_bars_the_largest_stalls_first() {
    assert_eq!(STALL_MARK_LIMIT, 500);
    let rows: Vec<Value> = (0..600)
        .map(|i| {
            let first = 100.0 + i as f64 * 10.0;
            let gap = 200.0 + i as f64;
            json!({"id": format!("r{i}"), "arrivalMs": i as f64 * 10.0, "status": "completed",
                   "firstTokenMs": first, "completedMs": first + 10.0 + gap,
                   "outputTokens": 3, "gapsMs": [10.0, gap]})
        })
        .collect();
    let doc = json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 6000, "horizonMs": 20000},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": null, "tpotMs": null, "e2eMs": null, "stallMs": 100}},
        "rows": rows
    });
    let html = page_of(&analyze(&doc));
    let doc = Html::parse_document(&html);
    let marked: Vec<usize> = doc
        .select(&sel("rect.stall-mark"))
        .map(|m| attr(m, "data-row").parse().unwrap())
        .collect();
    assert_eq!(marked, (100..600).collect::<Vec<_>>());
    let note: String = doc.select(&sel("#stalls-capped")).map(text).collect();
    assert_eq!(
        note,
        "600 rows missed their stall gate; the 500 largest stalls are marked (ties by row order)."
    );
    let legend: String = doc.select(&sel("#stall-legend")).map(text).collect();
    assert!(legend.ends_with("(600)"), "{legend}");
}
