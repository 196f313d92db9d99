//! `goodput report`: the HTML page, parsed with a real HTML parser, against the
//! receipt it shows; and the command as a user runs it.

mod common;

use common::{analyze_fixture, analyze_generated, fixture, goodput};
use goodput_core::analyze::{analyze_bytes, Analysis, AnalyzeOptions};
use goodput_core::receipt::Block;
use goodput_render::report::{HISTOGRAM_BINS, LANE_MARK_LIMIT};
use scraper::{ElementRef, Html, Selector};

fn sel(s: &str) -> Selector {
    Selector::parse(s).unwrap_or_else(|e| panic!("selector {s}: {e:?}"))
}

fn page_of(analysis: &Analysis) -> String {
    goodput_render::report::analysis_page::page(analysis).expect("default sweep runs")
}

fn page(name: &str) -> (Analysis, String) {
    let a = analyze_fixture(name);
    let html = page_of(&a);
    (a, html)
}

fn text(e: ElementRef) -> String {
    e.text().collect::<String>()
}

/// The cell of `row` whose `data-col` is `col`, as text.
fn cell(row: ElementRef, col: &str) -> String {
    let s = sel(&format!("td[data-col=\"{col}\"]"));
    text(
        row.select(&s)
            .next()
            .unwrap_or_else(|| panic!("no {col} cell")),
    )
}

fn attr_f64(e: ElementRef, name: &str) -> f64 {
    e.value()
        .attr(name)
        .unwrap_or_else(|| panic!("no {name} on {:?}", e.value()))
        .parse()
        .unwrap_or_else(|_| panic!("{name} is not a number"))
}

fn share(x: Option<f64>) -> String {
    x.map_or_else(|| "—".to_owned(), |v| format!("{:.1} %", v * 100.0))
}

/// The summary row of a block says what the receipt says.
fn assert_summary_row(row: ElementRef, b: &Block, what: &str) {
    let k = &b.counts;
    for (col, want) in [
        ("arrivals", k.arrivals),
        ("invalid", k.invalid),
        ("excluded", k.excluded),
        ("cohort", k.cohort),
        ("pass", k.pass),
        ("miss", k.miss),
        ("failed", k.failed),
        ("censored", k.censored),
    ] {
        assert_eq!(cell(row, col), want.to_string(), "{what}: {col}");
    }
    let r = &b.rates;
    assert_eq!(
        cell(row, "goodputPerS"),
        format!("{:.3}", r.goodput_per_s),
        "{what}"
    );
    assert_eq!(cell(row, "passShare"), share(r.pass_share), "{what}");
    assert_eq!(
        cell(row, "offeredPerS"),
        format!("{:.3}", r.offered_per_s),
        "{what}"
    );
    assert_eq!(
        cell(row, "completedPerS"),
        format!("{:.3}", r.completed_per_s),
        "{what}"
    );
    assert_eq!(cell(row, "failureShare"), share(r.failure_share), "{what}");
    assert_eq!(
        cell(row, "censoredShare"),
        share(r.censored_share),
        "{what}"
    );
    let ratio = b
        .littles_law
        .ratio
        .map_or_else(|| "—".to_owned(), |v| format!("{v:.2}"));
    assert_eq!(cell(row, "littlesRatio"), ratio, "{what}");
    let steady = match b.littles_law.steady_state {
        Some(true) => "yes",
        Some(false) => "no",
        None => "—",
    };
    assert_eq!(cell(row, "littlesSteady"), steady, "{what}");
}

#[test]
fn the_summary_of_an_easy_trace_reads_pass_3_of_5_and_goodput_0_3_per_s() {
    let (_, html) = page("equality_inclusive.json");
    let doc = Html::parse_document(&html);
    let rows: Vec<ElementRef> = doc.select(&sel("table#summary tbody tr")).collect();
    assert_eq!(rows.len(), 2, "all rows + the one class");
    assert_eq!(rows[0].value().attr("data-rollup"), Some("all"));
    assert_eq!(rows[1].value().attr("data-class"), Some("chat"));
    for row in rows {
        assert_eq!(cell(row, "cohort"), "5");
        assert_eq!(cell(row, "pass"), "3");
        assert_eq!(cell(row, "miss"), "2");
        assert_eq!(cell(row, "goodputPerS"), "0.300");
        assert_eq!(cell(row, "passShare"), "60.0 %");
    }
}

#[test]
fn the_summary_has_one_row_per_class_and_one_for_all_rows_with_the_receipt_numbers() {
    for name in [
        "mixed_120.json",
        "two_classes.json",
        "bad_fields.json",
        "empty_rows.json",
    ] {
        let (a, html) = page(name);
        let doc = Html::parse_document(&html);
        let r = &a.receipt;
        let rows: Vec<ElementRef> = doc.select(&sel("table#summary tbody tr")).collect();
        assert_eq!(rows.len(), 1 + r.results.classes.len(), "{name}");
        assert_eq!(rows[0].value().attr("data-rollup"), Some("all"), "{name}");
        assert_summary_row(rows[0], &r.results.all, name);
        for (row, (class, block)) in rows[1..].iter().zip(&r.results.classes) {
            assert_eq!(
                row.value().attr("data-class"),
                Some(class.as_str()),
                "{name}"
            );
            assert_summary_row(*row, block, &format!("{name} {class}"));
        }
        // Latency percentiles, one row per block too.
        let lat: Vec<ElementRef> = doc.select(&sel("table#latency tbody tr")).collect();
        assert_eq!(lat.len(), rows.len(), "{name}");
        let blocks = std::iter::once(&r.results.all).chain(r.results.classes.values());
        for (row, b) in lat.iter().zip(blocks) {
            for (metric, s) in [
                ("ttft", &b.latency.ttft_ms),
                ("tpot", &b.latency.tpot_ms),
                ("e2e", &b.latency.e2e_ms),
            ] {
                assert_eq!(cell(*row, &format!("{metric}-n")), s.n.to_string());
                for (p, v) in [("p50", s.p50), ("p95", s.p95), ("p99", s.p99)] {
                    let want = v.map_or_else(|| "—".to_owned(), |v| format!("{v:.1}"));
                    assert_eq!(
                        cell(*row, &format!("{metric}-{p}")),
                        want,
                        "{name} {metric} {p}"
                    );
                }
            }
        }
    }
}

/// Marks per verdict in the lanes SVG (a per-row mark counts 1, an aggregated
/// column counts its `data-count`).
fn lane_counts(doc: &Html) -> [u64; 6] {
    let mut out = [0u64; 6];
    for (i, v) in ["pass", "miss", "failed", "censored", "excluded", "invalid"]
        .iter()
        .enumerate()
    {
        let marks = sel(&format!("svg#lanes rect.mark[data-verdict=\"{v}\"]"));
        let cells = sel(&format!("svg#lanes rect.cell[data-verdict=\"{v}\"]"));
        out[i] = doc.select(&marks).count() as u64
            + doc
                .select(&cells)
                .map(|c| attr_f64(c, "data-count") as u64)
                .sum::<u64>();
    }
    out
}

fn receipt_lane_counts(a: &Analysis) -> [u64; 6] {
    let k = &a.receipt.results.all.counts;
    [k.pass, k.miss, k.failed, k.censored, k.excluded, k.invalid]
}

#[test]
fn the_lanes_draw_exactly_one_mark_per_row_in_the_lane_of_its_verdict() {
    for name in [
        "mixed_120.json",
        "bad_fields.json",
        "warmup.json",
        "after_horizon.json",
        "duplicate_ids.json",
        "malformed_ordering.json",
        "empty_rows.json",
    ] {
        let (a, html) = page(name);
        let doc = Html::parse_document(&html);
        assert_eq!(lane_counts(&doc), receipt_lane_counts(&a), "{name}");
        let marks = doc.select(&sel("svg#lanes rect.mark")).count();
        assert_eq!(
            marks as u64, a.receipt.trace.rows,
            "{name}: one mark per row"
        );
        assert_eq!(doc.select(&sel("svg#lanes rect.cell")).count(), 0, "{name}");
    }
}

#[test]
fn the_lanes_draw_the_warm_up_window_and_horizon_boundaries() {
    let (_, html) = page("mixed_120.json");
    let doc = Html::parse_document(&html);
    let bounds: Vec<(String, String)> = doc
        .select(&sel("svg#lanes line.boundary"))
        .map(|l| {
            (
                l.value().attr("data-boundary").unwrap_or("").to_owned(),
                l.value().attr("data-ms").unwrap_or("").to_owned(),
            )
        })
        .collect();
    let want: Vec<(String, String)> = [
        ("warm-up start", "0"),
        ("window start", "10000"),
        ("window end", "70000"),
        ("horizon", "75000"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(bounds, want);
}

/// A generated trace with `n` rows: mostly passes and misses, some failures,
/// in-flight rows, warm-up arrivals and invalid rows, across two classes.
fn generated(n: usize) -> Vec<u8> {
    let mut rows = Vec::with_capacity(n);
    for i in 0..n {
        let t = 1000.0 + (i as f64) * 100_000.0 / n as f64;
        let class = if i % 3 == 0 { "batch" } else { "chat" };
        let row = match i % 10 {
            0 => format!(
                r#"{{"id":"r{i}","class":"{class}","arrivalMs":{t},"status":"failed","reason":"timeout"}}"#
            ),
            1 => {
                format!(r#"{{"id":"r{i}","class":"{class}","arrivalMs":{t},"status":"in_flight"}}"#)
            }
            2 => {
                format!(r#"{{"id":"r{i}","class":"{class}","arrivalMs":{t},"status":"completed"}}"#)
            }
            3 | 4 => format!(
                r#"{{"id":"r{i}","class":"{class}","arrivalMs":{t},"status":"completed","firstTokenMs":{},"completedMs":{},"outputTokens":50}}"#,
                t + 2000.0,
                t + 9000.0
            ),
            _ => format!(
                r#"{{"id":"r{i}","class":"{class}","arrivalMs":{t},"status":"completed","firstTokenMs":{},"completedMs":{},"outputTokens":50}}"#,
                t + 300.0,
                t + 2000.0
            ),
        };
        rows.push(row);
    }
    format!(
        r#"{{"schema":"goodput-trace/1","window":{{"startMs":10000,"endMs":100000,"horizonMs":102000}},
        "warmup":{{"startMs":0,"endMs":10000}},"equality":"inclusive",
        "classes":{{"chat":{{"ttftMs":1000,"tpotMs":50,"e2eMs":6000}},"batch":{{"ttftMs":5000,"tpotMs":null,"e2eMs":60000}}}},
        "rows":[{}]}}"#,
        rows.join(",\n")
    )
    .into_bytes()
}

#[test]
fn a_large_trace_aggregates_lane_marks_and_stays_bounded_yet_counts_every_row() {
    let n = 30_000;
    assert!(n > LANE_MARK_LIMIT);
    let a = analyze_generated(&generated(n));
    let html = page_of(&a);
    let doc = Html::parse_document(&html);
    assert_eq!(
        doc.select(&sel("svg#lanes"))
            .next()
            .and_then(|s| s.value().attr("data-aggregated")),
        Some("true")
    );
    assert_eq!(doc.select(&sel("svg#lanes rect.mark")).count(), 0);
    assert_eq!(lane_counts(&doc), receipt_lane_counts(&a));
    // 6 lanes × 2 classes × 650 two-pixel columns at most, whatever n is.
    assert!(doc.select(&sel("svg#lanes rect.cell")).count() <= 6 * 2 * 651);
    for svg in doc.select(&sel("figure.dist svg")) {
        assert!(svg.select(&sel("rect.bar")).count() <= HISTOGRAM_BINS);
    }
    assert!(html.len() < 1_500_000, "{} bytes", html.len());
}

#[test]
fn each_histogram_draws_its_gate_at_the_gate_x_or_says_no_gate() {
    for name in [
        "mixed_120.json",
        "two_classes.json",
        "chunks.json",
        "one_token.json",
    ] {
        let (a, html) = page(name);
        let doc = Html::parse_document(&html);
        let contract = &a.receipt.contract;
        let figures: Vec<ElementRef> = doc.select(&sel("figure.dist")).collect();
        assert_eq!(figures.len(), 3 * contract.classes.len(), "{name}");
        for fig in figures {
            let class = fig.value().attr("data-class").expect("data-class");
            let metric = fig.value().attr("data-metric").expect("data-metric");
            let gates = &contract.classes[class];
            let block = &a.receipt.results.classes[class];
            let (gate, n) = match metric {
                "ttft" => (gates.ttft_ms, block.latency.ttft_ms.n),
                "tpot" => (gates.tpot_ms, block.latency.tpot_ms.n),
                _ => (gates.e2e_ms, block.latency.e2e_ms.n),
            };
            let svg = fig.select(&sel("svg")).next().expect("svg");
            let bars: u64 = svg
                .select(&sel("rect.bar"))
                .map(|b| attr_f64(b, "data-count") as u64)
                .sum();
            assert_eq!(
                bars, n,
                "{name} {class} {metric}: the bars hold every value"
            );
            let lines: Vec<ElementRef> = svg.select(&sel("line.gate")).collect();
            match gate {
                Some(g) => {
                    assert_eq!(lines.len(), 1, "{name} {class} {metric}");
                    let (ms0, ms1) = (attr_f64(svg, "data-ms0"), attr_f64(svg, "data-ms1"));
                    let (x0, x1) = (attr_f64(svg, "data-x0"), attr_f64(svg, "data-x1"));
                    let want = x0 + (g - ms0) / (ms1 - ms0) * (x1 - x0);
                    let x = attr_f64(lines[0], "x1");
                    assert!(
                        (x - want).abs() < 0.01,
                        "{name} {class} {metric}: {x} vs {want}"
                    );
                    assert!(g <= ms1, "the gate is inside the axis");
                    assert_eq!(attr_f64(lines[0], "data-gate-ms"), g);
                }
                None => {
                    assert!(lines.is_empty(), "{name} {class} {metric}");
                    let note = svg
                        .select(&sel("text.no-gate"))
                        .map(text)
                        .collect::<String>();
                    assert!(note.contains("no gate"), "{name} {class} {metric}: {note}");
                }
            }
        }
    }
}

#[test]
fn chunk_traces_label_the_per_token_figure_chunk_cadence() {
    let (_, html) = page("chunks.json");
    assert!(html.contains("chunk cadence"));
    assert!(!html.contains(">TPOT (ms)<"));
}

#[test]
fn the_sweep_table_starts_with_the_declared_row_highlighted() {
    for name in ["mixed_120.json", "equality_inclusive.json"] {
        let (a, html) = page(name);
        let doc = Html::parse_document(&html);
        let rows: Vec<ElementRef> = doc.select(&sel("table#sweep tbody tr")).collect();
        assert_eq!(
            rows.len(),
            1 + 3 * 7,
            "{name}: declared + 7 factors × 3 gates"
        );
        let first = rows[0];
        assert_eq!(first.value().attr("class"), Some("declared"));
        assert_eq!(first.value().attr("data-hypothetical"), Some("false"));
        assert_eq!(
            cell(first, "pass"),
            a.receipt.results.all.counts.pass.to_string()
        );
        assert_eq!(
            cell(first, "goodputPerS"),
            format!("{:.3}", a.receipt.results.all.rates.goodput_per_s)
        );
        for row in &rows[1..] {
            assert_eq!(
                row.value().attr("data-hypothetical"),
                Some("true"),
                "{name}"
            );
        }
    }
}

#[test]
fn the_page_fetches_nothing() {
    for path in common::accepted_fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let (_, html) = page(&name);
        let lower = html.to_ascii_lowercase();
        for bad in [
            "http://", "https://", "<script", "<link", "@import", "url(", "src=", "href=", "<img",
            "<iframe", "<object", "<embed",
        ] {
            assert!(!lower.contains(bad), "{name}: the page contains {bad:?}");
        }
        assert!(html.contains("content=\"default-src 'none'; style-src 'unsafe-inline'\""));
    }
}

#[test]
fn trace_strings_are_escaped_everywhere() {
    let trace = r#"{"schema":"goodput-trace/1","window":{"startMs":0,"endMs":10000},"equality":"inclusive",
      "classes":{"<script>alert('class')</script>":{"ttftMs":1000,"tpotMs":null,"e2eMs":null},
                 "ok":{"ttftMs":1000,"tpotMs":50,"e2eMs":6000}},
      "defaultClass":"ok",
      "workload":{"note":"<script src=https://evil.example/x.js></script>"},
      "rows":[
        {"id":"<script>alert(1)</script>","class":"<script>alert('class')</script>","arrivalMs":100,"status":"completed","firstTokenMs":200,"completedMs":900,"outputTokens":8},
        {"id":"\"><svg onload=alert(2)>","arrivalMs":200,"status":"failed","reason":"<img src=x onerror=alert(3)>"},
        {"id":"<b>bad</b>","arrivalMs":300,"status":"completed","bogus":1},
        {"id":"r4","class":"<i>nope</i>","arrivalMs":400,"status":"in_flight"}
      ]}"#;
    let a = analyze_bytes(trace.as_bytes(), AnalyzeOptions::default()).expect("accepted");
    let html = page_of(&a);
    let lower = html.to_ascii_lowercase();
    for raw in ["<script", "<svg onload", "<img", "<b>bad", "<i>nope"] {
        assert!(!lower.contains(raw), "unescaped {raw:?}");
    }
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    let doc = Html::parse_document(&html);
    // The parser sees the strings as text, never as elements.
    let active = "script, img, [src], [href], [onload], [onerror], b svg";
    assert_eq!(doc.select(&sel(active)).count(), 0);
    let titles: String = doc.select(&sel("svg#lanes title")).map(text).collect();
    assert!(titles.contains("<script>alert(1)</script>"), "{titles}");
    assert!(titles.contains("<img src=x onerror=alert(3)>"), "{titles}");
    let invalid: String = doc.select(&sel("table#invalid")).map(text).collect();
    assert!(
        invalid.contains("<b>bad</b>") && invalid.contains("bad_field"),
        "{invalid}"
    );
    assert!(
        invalid.contains("r4") && invalid.contains("unknown_class"),
        "{invalid}"
    );
    let classes: Vec<String> = doc
        .select(&sel("table#summary tbody tr[data-class]"))
        .filter_map(|r| r.value().attr("data-class").map(str::to_owned))
        .collect();
    assert!(
        classes.contains(&"<script>alert('class')</script>".to_owned()),
        "{classes:?}"
    );
}

#[test]
fn the_same_trace_gives_the_same_bytes() {
    let (_, one) = page("mixed_120.json");
    let (_, two) = page("mixed_120.json");
    assert_eq!(one, two);
}

#[test]
fn the_page_of_a_small_trace_is_stable() {
    let (_, html) = page("equality_inclusive.json");
    insta::assert_snapshot!("report_equality_inclusive", html);
}

fn run_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    goodput()
        .current_dir(dir)
        .args(args)
        .output()
        .expect("spawn goodput")
}

#[test]
fn report_writes_report_html_by_default_prints_its_path_and_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = fixture("mixed_120.json").display().to_string();
    let o = run_in(dir.path(), &["report", &trace]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&o.stdout), "wrote report.html\n");
    let written = std::fs::read_to_string(dir.path().join("report.html")).expect("written");
    assert_eq!(
        written,
        page("mixed_120.json").1,
        "the file is the library's page"
    );
    // Atomic write: no temporary file left beside it.
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("read dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");

    let out = dir.path().join("again.html");
    let o = run_in(
        dir.path(),
        &["report", &trace, "--out", &out.display().to_string()],
    );
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(out).expect("written"), written);
}

#[test]
fn report_exits_2_on_a_rejected_trace_a_limit_or_an_unwritable_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("r.html").display().to_string();
    let rejected = fixture("rejected/equality_missing.json")
        .display()
        .to_string();
    let o = run_in(dir.path(), &["report", &rejected, "--out", &out]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("rejected: "));
    assert!(!dir.path().join("r.html").exists());

    let trace = fixture("mixed_120.json").display().to_string();
    let o = run_in(
        dir.path(),
        &["report", &trace, "--out", &out, "--max-rows", "10"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--max-rows"));
    let o = run_in(
        dir.path(),
        &["report", &trace, "--out", &out, "--max-bytes", "100"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(!dir.path().join("r.html").exists());

    let nowhere = dir.path().join("no/such/dir/r.html").display().to_string();
    let o = run_in(dir.path(), &["report", &trace, "--out", &nowhere]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).starts_with("cannot write "));

    let o = run_in(dir.path(), &["report", "missing.json"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn report_help_states_the_exit_statuses() {
    let o = goodput()
        .args(["report", "--help"])
        .output()
        .expect("spawn");
    let help = String::from_utf8_lossy(&o.stdout);
    assert!(help.contains("0  the report was written"), "{help}");
    assert!(help.contains("2  the input was rejected"), "{help}");
}

#[test]
fn the_page_leads_with_the_answer_and_the_class_gates() {
    // mixed_120: 62 of 106 cohort rows pass in a 60 s window: 62/60 =
    // 1.033/s → "1.03/s"; 62/106 = 58.49 % → "58.5 %"; 106/60 = 1.77/s offered.
    let (_, html) = page("mixed_120.json");
    let headline = html.find("<section id=\"headline\"").expect("headline");
    // It comes before every table of counts and the run's details.
    assert!(headline < html.find("id=\"summary\"").unwrap());
    assert!(headline < html.find("<h2>Run and contract</h2>").unwrap());
    let doc = Html::parse_document(&html);
    let one = |s: &str| text(doc.select(&sel(s)).next().unwrap_or_else(|| panic!("{s}")));
    assert_eq!(one("#headline-goodput"), "1.03/s");
    assert_eq!(one("#headline-pass"), "58.5 %");
    assert!(one("#headline-saturation").contains("of 1.77/s offered"));
    // The gates of each class, in words, beside its own pass share:
    // interactive 56 of 96 = 58.3 %, batch 6 of 10 = 60.0 %.
    let interactive = one("#gates tr[data-class=\"interactive\"]");
    assert!(
        interactive.contains("TTFT ≤ 1000 ms · TPOT ≤ 50 ms · E2E ≤ 15000 ms"),
        "{interactive}"
    );
    assert!(interactive.contains("58.3 %"), "{interactive}");
    let batch = one("#gates tr[data-class=\"batch\"]");
    assert!(batch.contains("TTFT ≤ 5000 ms · TPOT: no gate · E2E ≤ 60000 ms"));
    assert!(batch.contains("60.0 %"), "{batch}");
    // The workload is a table, one label a row, not `key = value` pairs.
    let rows: Vec<String> = doc
        .select(&sel("#workload-labels tr"))
        .map(|r| r.text().collect::<Vec<_>>().join("|"))
        .collect();
    assert_eq!(
        rows,
        [
            "arrival|poisson",
            "cache|mixed",
            "model|sim-7b",
            "ratePerS|1.72",
            "seed|20261130"
        ]
    );
    assert!(!html.contains("ratePerS = "), "no key = value wall");
}

#[test]
fn the_saturation_verdict_reads_as_a_sentence() {
    use goodput_core::receipt::saturation::SaturationVerdict;
    use goodput_render::report::headline::saturation_sentence;
    let mut s = common::receipt("mixed_120.json").results.all.saturation;
    s.verdict = SaturationVerdict::Overloaded;
    s.offered_per_s = 3.8;
    s.served_per_s = Some(2.1);
    assert_eq!(
        saturation_sentence(&s),
        "overloaded: the server served 2.10/s of 3.80/s offered"
    );
    s.verdict = SaturationVerdict::Steady;
    s.served_per_s = Some(3.79);
    assert_eq!(
        saturation_sentence(&s),
        "steady: the server kept up, serving 3.79/s of 3.80/s offered"
    );
}

#[test]
fn gate_labels_sit_above_the_plot_never_on_a_bar() {
    // Every histogram's bars start at or below the plot's top (y 36); the
    // gate label's baseline is y 29 with 11 px text, so it ends above them.
    let (_, html) = page("mixed_120.json");
    let doc = Html::parse_document(&html);
    let mut labels = 0;
    for fig in doc.select(&sel("figure.dist")) {
        let top_of_bars = fig
            .select(&sel("rect.bar"))
            .map(|b| attr_f64(b, "y"))
            .fold(f64::INFINITY, f64::min);
        for label in fig.select(&sel("text.gate-label, text.no-gate")) {
            let y = attr_f64(label, "y");
            if text(label).contains("no completed rows") {
                continue;
            }
            assert!(
                y + 3.0 < top_of_bars,
                "{} at y {y}, a bar at {top_of_bars}",
                text(label)
            );
            labels += 1;
        }
    }
    // 2 classes × 3 metrics: 5 gates and batch's "no gate" on TPOT.
    assert_eq!(labels, 6);
}

/// `mixed_120.json` beside a sidecar it names; `sha` is the sha256 the
/// trace claims for it.
fn trace_with_sidecar(dir: &std::path::Path, sidecar: &str, sha: &str) -> std::path::PathBuf {
    std::fs::write(dir.join("t.metrics.jsonl"), sidecar).unwrap();
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("mixed_120.json")).unwrap()).unwrap();
    doc["workload"]["metricsFile"] = "t.metrics.jsonl".into();
    doc["workload"]["metricsSha256"] = sha.into();
    let trace = dir.join("t.json");
    std::fs::write(&trace, serde_json::to_vec(&doc).unwrap()).unwrap();
    trace
}

#[test]
fn a_stale_sidecar_is_named_not_a_usage_error_and_no_sidecar_skips_it() {
    let dir = tempfile::tempdir().unwrap();
    let stale = "0".repeat(64);
    let trace = trace_with_sidecar(
        dir.path(),
        "{\"tMs\":1000,\"waiting\":3,\"running\":2}\n",
        &stale,
    );
    let out_html = dir.path().join("r.html");
    let run = |extra: &[&str]| {
        goodput()
            .args(["report", trace.to_str().unwrap(), "--out"])
            .arg(&out_html)
            .args(extra)
            .output()
            .unwrap()
    };
    let o = run(&[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("usage:"), "{stderr}");
    assert!(
        stderr.contains("server metrics sidecar ")
            && stderr.contains("t.metrics.jsonl: its sha256"),
        "{stderr}"
    );
    assert!(stderr.contains("belongs to another run"), "{stderr}");
    assert!(stderr.contains("--no-sidecar"), "{stderr}");
    assert!(!out_html.exists(), "nothing written");

    let o = run(&["--no-sidecar"]);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.contains("server metrics: left out (--no-sidecar); the page has no server panels"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&out_html).unwrap();
    assert!(!html.contains("<section id=\"server\">"));
}

#[test]
fn the_cli_names_the_peaks_in_lower_case_and_an_absent_series_as_not_reported() {
    let dir = tempfile::tempdir().unwrap();
    // Queue 3 then 7, 2 running, no KV-cache series.
    let sidecar = "{\"tMs\":11000,\"waiting\":3,\"running\":2}\n{\"tMs\":12000,\"waiting\":7,\"running\":2}\n";
    let sha: String = {
        use sha2::Digest;
        sha2::Sha256::digest(sidecar.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    };
    let trace = trace_with_sidecar(dir.path(), sidecar, &sha);
    let out_html = dir.path().join("r.html");
    let o = goodput()
        .args(["report", trace.to_str().unwrap(), "--out"])
        .arg(&out_html)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{stdout}");
    assert!(
        stdout.ends_with("server metrics: peak waiting 7, running 2.\n"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(&out_html).unwrap();
    let server = &html[html.find("<section id=\"server\">").unwrap()..];
    let server = &server[..server.find("</section>").unwrap()];
    assert!(server.contains("Peak waiting 7, running 2."), "{server}");
    // Only the KV panel is empty, and it says why.
    assert_eq!(
        server
            .matches(">not reported by the server's metrics</text>")
            .count(),
        1
    );
    assert_eq!(server.matches("<polyline").count(), 2);
}
