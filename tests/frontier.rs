//! `goodput frontier` on hand-made sweeps: each synthetic trace has a 1 s
//! window, so offered/s = cohort rows and goodput/s = pass rows, and every
//! knee and capacity below can be checked with a pencil (the arithmetic is in
//! the comments). Plus snapshots of the Markdown, text and SVG, the CLI's exit
//! statuses, and one bounded rate sweep of `goodput record` against the sim.

mod common;

use std::path::{Path, PathBuf};

use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::frontier::{
    frontier, frontier_judged, BlockLimits, Capacity, Frontier, Knee, KneeSignal,
};
use goodput_render::frontier::{markdown, svg, text, MAX_TEXT_COLUMNS};
use serde_json::{json, Value};

/// One point of a hand-made sweep: rows per 1 s window by verdict, and the
/// TTFT of missing rows (passing rows have TTFT 300 ms; the gate is 1000 ms).
#[derive(Clone, Copy)]
struct Spec {
    pass: usize,
    miss: usize,
    failed: usize,
    miss_ttft_ms: f64,
}

fn spec(pass: usize, miss: usize, failed: usize, miss_ttft_ms: f64) -> Spec {
    Spec {
        pass,
        miss,
        failed,
        miss_ttft_ms,
    }
}

/// A `goodput-trace/1` document: window [0, 1000) ms, horizon 20 s, one
/// class `chat` (TTFT ≤ 1000 ms, no other gate). Pass rows: TTFT 300 ms,
/// 11 tokens over 500 ms (TPOT 50 ms). Miss rows: TTFT `miss_ttft_ms`.
/// Failed rows: `http_503` after 10 ms. Arrivals spread evenly in the window.
fn trace(s: Spec) -> Vec<u8> {
    let n = s.pass + s.miss + s.failed;
    let mut rows = Vec::new();
    for i in 0..n {
        let arrival = (i * 1000 / n.max(1)) as f64;
        let row = if i < s.pass || i < s.pass + s.miss {
            let ttft = if i < s.pass { 300.0 } else { s.miss_ttft_ms };
            json!({"id": format!("r{i}"), "arrivalMs": arrival, "status": "completed",
                   "firstTokenMs": arrival + ttft, "completedMs": arrival + ttft + 500.0,
                   "outputTokens": 11})
        } else {
            json!({"id": format!("r{i}"), "arrivalMs": arrival, "status": "failed",
                   "reason": "http_503", "endedMs": arrival + 10.0})
        };
        rows.push(row);
    }
    let doc = json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 1000, "horizonMs": 20000},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": 1000, "tpotMs": null, "e2eMs": null}},
        "workload": {"arrival": "constant", "ratePerS": n as f64},
        "rows": rows,
    });
    serde_json::to_vec(&doc).expect("serialize")
}

fn receipts(specs: &[(&str, Spec)]) -> Vec<(String, goodput_core::receipt::Receipt)> {
    specs
        .iter()
        .map(|(label, s)| {
            let a = analyze_bytes(&trace(*s), AnalyzeOptions::default()).expect("accepted");
            (label.to_string(), a.receipt)
        })
        .collect()
}

fn build(specs: &[(&str, Spec)], attainment: f64) -> Frontier {
    frontier(&receipts(specs), None, attainment).expect("frontier")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

/// The classic shape, given out of order on purpose.
///
/// | offered | pass | miss | failed | goodput | completed | lost | share | p95 TTFT |
/// |---|---|---|---|---|---|---|---|---|
/// | 5  | 5  | 0  | 0 | 5  | 5  | 0 | 1.0  | 300  |
/// | 10 | 10 | 0  | 0 | 10 | 10 | 0 | 1.0  | 300  |
/// | 20 | 18 | 2  | 0 | 18 | 20 | 0 | 0.9  | 2000 (rank ⌈0.95·20⌉ = 19 of 18×300, 2×2000) |
/// | 40 | 10 | 26 | 4 | 10 | 36 | 4 | 0.25 | 5000 (rank 35 of 10×300, 26×5000) |
fn classic() -> Vec<(&'static str, Spec)> {
    vec![
        ("t-40.json", spec(10, 26, 4, 5000.0)),
        ("t-5.json", spec(5, 0, 0, 0.0)),
        ("t-20.json", spec(18, 2, 0, 2000.0)),
        ("t-10.json", spec(10, 0, 0, 0.0)),
    ]
}

#[test]
fn points_are_sorted_by_offered_load_whatever_the_argument_order() {
    let f = build(&classic(), 0.9);
    let offered: Vec<f64> = f.points.iter().map(|p| p.offered_per_s).collect();
    assert_eq!(offered, vec![5.0, 10.0, 20.0, 40.0]);
    let p = &f.points[3];
    assert_eq!((p.goodput_per_s, p.completed_per_s), (10.0, 36.0));
    assert_eq!(p.pass_share, Some(0.25));
    assert_eq!(p.failure_share, Some(0.1));
    assert_eq!(p.p95_ttft_ms, Some(5000.0));
    assert_eq!(p.p95_tpot_ms, Some(50.0));
    assert_eq!(p.nominal_rate_per_s, Some(40.0));
}

#[test]
fn the_knee_is_the_last_rate_before_goodput_stops_rising() {
    // Step 5: later goodput 10 − 5 = 5 > 0.1 × 5: still rising.
    // Step 10: 18 − 10 = 8 > 0.1 × 10: still rising.
    // Step 20: 10 − 18 = −8 ≤ 0.1 × 20: stalled for good. On 20 → 40
    // completions +16 > 0.1 × 20; p95 TTFT ×2.5 > load ×2; lost +4 > 2.
    let f = build(&classic(), 0.9);
    assert_eq!(
        f.knee,
        Knee::Found {
            offered_per_s: 20.0,
            goodput_per_s: 18.0,
            next_offered_per_s: 40.0,
            at_lowest_rate: false,
            signals: vec![
                KneeSignal::CompletionsRising,
                KneeSignal::TtftSuperlinear,
                KneeSignal::LostRising
            ],
        }
    );
}

#[test]
fn a_point_exactly_on_the_target_meets_it() {
    // 18/20 = 0.9 ≥ 0.9 at 20/s; 40/s has 0.25: the crossing is 20 +
    // (0.9 − 0.9) · 20 / 0.65 = 20. The bracket 20 → 40/s is wide: 40/20 =
    // 2 > 1.5, and the share fell 90 − 25 = 65 points > 50.
    let f = build(&classic(), 0.9);
    match f.capacity {
        Capacity::Interpolated {
            offered_per_s,
            meets,
            misses,
            ref below_target_under_capacity,
            ref wide_bracket,
        } => {
            assert_eq!(offered_per_s, 20.0);
            assert_eq!((meets.offered_per_s, misses.offered_per_s), (20.0, 40.0));
            assert!(below_target_under_capacity.is_empty());
            let w = wide_bracket.as_ref().expect("a wide bracket");
            assert_eq!(w.rules, ["rate_ratio", "share_drop"]);
            assert_eq!(w.rate_ratio, Some(2.0));
            assert!(close(w.share_drop, 0.65));
        }
        ref other => panic!("{other:?}"),
    }
}

#[test]
fn capacity_is_interpolated_between_the_bracketing_rates() {
    // Target 0.95: highest meeting is 10/s (1.0); next 20/s has 0.9.
    // 10 + (1.0 − 0.95) · (20 − 10) / (1.0 − 0.9) = 10 + 0.05 · 10 / 0.1 = 15.
    let f = build(&classic(), 0.95);
    match f.capacity {
        Capacity::Interpolated { offered_per_s, .. } => assert!(close(offered_per_s, 15.0)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_sweep_that_keeps_rising_never_reached_the_knee_nor_fell_below_target() {
    // Everything passes: goodput = offered = 5, 10, 20.
    let f = build(
        &[
            ("a", spec(5, 0, 0, 0.0)),
            ("b", spec(10, 0, 0, 0.0)),
            ("c", spec(20, 0, 0, 0.0)),
        ],
        0.9,
    );
    assert_eq!(
        f.knee,
        Knee::NotReached {
            highest_offered_per_s: 20.0
        }
    );
    assert_eq!(
        f.capacity,
        Capacity::AtLeast {
            offered_per_s: 20.0,
            below_target_under_capacity: vec![]
        }
    );
    let t = text(&f);
    assert!(t.contains("not reached"), "{t}");
    assert!(t.contains("never fell below the target"), "{t}");
}

#[test]
fn a_single_trace_names_no_knee() {
    let f = build(&[("only", spec(8, 2, 0, 2000.0))], 0.9);
    assert_eq!(f.knee, Knee::TooFewPoints { steps: 1 });
    // 8/10 = 0.8 < 0.9: no rate meets the target.
    assert_eq!(
        f.capacity,
        Capacity::NoneMeets {
            best_pass_share: Some(0.8),
            lowest_offered_per_s: Some(10.0)
        }
    );
}

#[test]
fn when_no_rate_meets_the_target_it_says_so() {
    // 5/s: 2 pass of 5 = 0.4; 10/s: 5 of 10 = 0.5. Goodput 2 → 5 rises by
    // 3 > 0.1 × 5, so no knee either.
    let f = build(
        &[("a", spec(2, 3, 0, 2000.0)), ("b", spec(5, 5, 0, 2000.0))],
        0.9,
    );
    assert_eq!(
        f.capacity,
        Capacity::NoneMeets {
            best_pass_share: Some(0.5),
            lowest_offered_per_s: Some(5.0)
        }
    );
    assert!(matches!(f.knee, Knee::NotReached { .. }));
    assert!(text(&f).contains("no rate tested met"));
}

#[test]
fn a_knee_at_the_lowest_rate_says_the_true_knee_may_be_lower() {
    // 10/s: goodput 10; 20/s: 8 pass, 12 miss → goodput 8 ≤ 10 + 0.1 × 10.
    let f = build(
        &[("a", spec(10, 0, 0, 0.0)), ("b", spec(8, 12, 0, 3000.0))],
        0.9,
    );
    assert!(matches!(
        f.knee,
        Knee::Found {
            offered_per_s: 10.0,
            at_lowest_rate: true,
            ..
        }
    ));
    assert!(text(&f).contains("at or below 10/s"));
}

#[test]
fn repeats_at_one_rate_are_pooled_with_the_lowest_pass_share() {
    // Two runs at 10/s: 10 pass (1.0) and 8 pass + 2 miss (0.8): one step with
    // goodput (10 + 8) / 2 = 9, completed 10, pass share min = 0.8.
    // Capacity at 0.9: 5/s has 1.0, pooled 10/s has 0.8:
    //   5 + (1.0 − 0.9) · 5 / (1.0 − 0.8) = 5 + 0.5 / 0.2 = 7.5.
    // Knee: step 10 (g 9) → 20 (10 pass, 10 miss: g 10): 10 − 9 = 1 ≤ 0.1 × 10,
    // completions 10 → 20: knee at 10.
    let f = build(
        &[
            ("rep-b", spec(8, 2, 0, 2000.0)),
            ("rep-a", spec(10, 0, 0, 0.0)),
            ("low", spec(5, 0, 0, 0.0)),
            ("high", spec(10, 10, 0, 2000.0)),
        ],
        0.9,
    );
    let labels: Vec<&str> = f.points.iter().map(|p| p.label.as_str()).collect();
    assert_eq!(labels, vec!["low", "rep-a", "rep-b", "high"]);
    match f.capacity {
        Capacity::Interpolated { offered_per_s, .. } => assert!(close(offered_per_s, 7.5)),
        ref other => panic!("{other:?}"),
    }
    assert!(matches!(
        f.knee,
        Knee::Found {
            offered_per_s: 10.0,
            goodput_per_s: 9.0,
            ..
        }
    ));
}

#[test]
fn a_pass_share_that_dips_under_capacity_is_flagged() {
    // 5/s: 0.8 (below), 10/s: 1.0, 20/s: 1.0 → capacity ≥ 20 with a warning.
    let f = build(
        &[
            ("a", spec(4, 1, 0, 2000.0)),
            ("b", spec(10, 0, 0, 0.0)),
            ("c", spec(20, 0, 0, 0.0)),
        ],
        0.9,
    );
    assert_eq!(
        f.capacity,
        Capacity::AtLeast {
            offered_per_s: 20.0,
            below_target_under_capacity: vec![5.0]
        }
    );
    assert!(text(&f).contains("not monotone"));
}

#[test]
fn a_class_can_be_selected_and_an_unknown_one_is_refused() {
    let r = receipts(&classic());
    let f = frontier(&r, Some("chat"), 0.9).expect("chat exists");
    assert_eq!(f.class.as_deref(), Some("chat"));
    assert_eq!(f.points.len(), 4);
    let err = frontier(&r, Some("batch"), 0.9).unwrap_err();
    assert!(err.to_string().contains("\"batch\""), "{err}");
    assert!(frontier(&r, None, 0.0).is_err());
    assert!(frontier(&r, None, 1.01).is_err());
}

#[test]
fn text_keeps_every_trace_path_whole_and_escaped() {
    let long = "a/very/long/directory/name/that/goes/on/and/on/and/on/trace-40.json";
    let mut specs = classic();
    specs[0].0 = long;
    specs[1].0 = "runs/\u{1b}[31mred/t-5.json";
    let t = text(&build(&specs, 0.9));
    // The figures take 9 columns of widths 9+9+9+7+7+7+11+11+7 = 77, each
    // followed by a space (86), then one more space: the path starts at 87.
    let row = t
        .lines()
        .find(|l| l.ends_with(long))
        .expect("the whole path");
    assert_eq!(row.chars().count(), 87 + long.chars().count(), "{row}");
    assert!(!t.contains('…'), "{t}");
    // A control character in a path is shown, never sent to the terminal.
    assert!(t.contains("runs/\\u{1b}[31mred/t-5.json"), "{t}");
    assert!(!t.contains('\u{1b}'));
    // Every line but the table's rows still fits in 100 columns.
    for line in t.lines().filter(|l| !l.contains(".json")) {
        assert!(
            line.chars().count() <= MAX_TEXT_COLUMNS,
            "{} columns: {line}",
            line.chars().count()
        );
    }
}

/// A hand-made sweep whose TPOT p95s are known: like [`trace`], but pass
/// rows stream 11 tokens over `tpot × 10` ms, under a class `chat` with
/// TTFT ≤ 1000 ms and TPOT ≤ 50 ms.
fn tpot_trace(n: usize, tpot_ms: f64) -> goodput_core::receipt::Receipt {
    let rows: Vec<Value> = (0..n)
        .map(|i| {
            let arrival = (i * 1000 / n) as f64;
            json!({"id": format!("r{i}"), "arrivalMs": arrival, "status": "completed",
                   "firstTokenMs": arrival + 300.0, "completedMs": arrival + 300.0 + 10.0 * tpot_ms,
                   "outputTokens": 11})
        })
        .collect();
    let doc = json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 1000, "horizonMs": 20000},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": 1000, "tpotMs": 50, "e2eMs": null}},
        "rows": rows,
    });
    analyze_bytes(
        &serde_json::to_vec(&doc).unwrap(),
        AnalyzeOptions::default(),
    )
    .expect("accepted")
    .receipt
}

/// The y of a value on a panel whose plot spans `top`–`bottom` px and whose
/// axis runs 0–`max`.
fn y_on(top: f64, bottom: f64, max: f64, v: f64) -> f64 {
    bottom - (bottom - top) * v / max
}

#[test]
fn every_latency_panel_draws_its_class_gate_at_the_known_height() {
    // TTFT panel: the classic sweep's p95 TTFTs are 300, 300, 2000, 5000
    // ms and the gate 1000 ms: the axis holds max(5000, 1000 × 1.15) = 5000
    // → 0–5000 (step 1000); the plot spans y 580–740, so the gate line is
    // at 740 − 160 × 1000/5000 = 708.0.
    let s = svg(&build(&classic(), 0.9));
    assert_eq!(y_on(580.0, 740.0, 5000.0, 1000.0), 708.0);
    assert!(
        s.contains(
            "<g class=\"gate\" data-gate-ms=\"1000\"><line x1=\"80.0\" y1=\"708.0\" x2=\"700.0\" y2=\"708.0\""
        ),
        "{s}"
    );
    assert!(s.contains(">TTFT gate 1000 ms (chat)</text>"), "{s}");
    // The classic class has no TPOT gate: its TPOT panel says so (p95 TPOT
    // 50 ms at every rate is still drawn).
    assert!(s.contains(">no TPOT gate in any class</text>"), "{s}");
    assert!(s.contains("data-name=\"p95 TPOT (ms)\""), "{s}");

    // TPOT panel: p95 TPOT 20 ms at 5/s, 40 ms at 10/s, 80 ms at 20/s
    // (every row alike), gate 50 ms: the axis holds max(80, 57.5) = 80 →
    // 0–80 (80/5 = 16 rounds up to a step of 20); plot y 800–960: the gate
    // at 960 − 160 × 50/80 = 860.0, and the points at 920.0, 880.0, 800.0.
    let receipts = vec![
        ("t-5.json".to_owned(), tpot_trace(5, 20.0)),
        ("t-10.json".to_owned(), tpot_trace(10, 40.0)),
        ("t-20.json".to_owned(), tpot_trace(20, 80.0)),
    ];
    let f = frontier(&receipts, None, 0.9).unwrap();
    let p95: Vec<Option<f64>> = f.points.iter().map(|p| p.p95_tpot_ms).collect();
    assert_eq!(p95, [Some(20.0), Some(40.0), Some(80.0)]);
    let s = svg(&f);
    assert_eq!(y_on(800.0, 960.0, 80.0, 50.0), 860.0);
    assert!(
        s.contains("<g class=\"gate\" data-gate-ms=\"50\"><line x1=\"80.0\" y1=\"860.0\""),
        "{s}"
    );
    assert!(s.contains(">TPOT gate 50 ms (chat)</text>"), "{s}");
    // x: 0–20/s over 80–700 px: 5/s at 235.0, 10/s at 390.0, 20/s at 700.0.
    assert!(
        s.contains("points=\"235.0,920.0 390.0,880.0 700.0,800.0\""),
        "{s}"
    );
    // And the TTFT gate on the same chart: p95 TTFT 300 ms everywhere, gate
    // 1000: the axis holds max(300, 1150) → 0–1500 (1150/5 = 230 rounds up
    // to a step of 500); y = 740 − 160 × 1000/1500 = 633.3.
    assert!(
        s.contains("data-gate-ms=\"1000\"><line x1=\"80.0\" y1=\"633.3\""),
        "{s}"
    );
}

/// A cliff: 20/s with 19 of 20 passing (95 %), then 60/s with none passing
/// (the shape of a 1.267/s at 94.7 % → 3.8/s at 0 % bracket).
fn cliff() -> Vec<(&'static str, Spec)> {
    vec![
        ("t-20.json", spec(19, 1, 0, 5000.0)),
        ("t-60.json", spec(0, 60, 0, 5000.0)),
    ]
}

#[test]
fn a_wide_bracket_warns_in_text_json_and_markdown_and_a_narrow_one_does_not() {
    // 20/s at 95 % (19 of 20) and 60/s at 0 %: 20 + 0.05 · 40 / 0.95 =
    // 22.105…/s. 60/20 = 3 > 1.5, and 95 points > 50: both rules.
    let f = build(&cliff(), 0.9);
    let Capacity::Interpolated {
        offered_per_s,
        ref wide_bracket,
        ..
    } = f.capacity
    else {
        panic!("{:?}", f.capacity)
    };
    assert!(close(offered_per_s, 20.0 + 0.05 * 40.0 / 0.95));
    let w = wide_bracket.as_ref().expect("wide");
    assert_eq!(w.rate_ratio, Some(3.0));
    assert!(close(w.share_drop, 0.95));
    let warning = "warning: the bracket is wide — 60/s is 3.0× 20/s (more than 1.5×) and the pass \
                   share fell 95.0 points between them (more than 50); the crossing could be \
                   anywhere from 20/s to 60/s, so the interpolated rate is a rough estimate: test \
                   rates in between";
    assert!(flat(&text(&f)).contains(warning), "{}", text(&f));
    assert!(
        markdown(&f).contains(&format!("- {warning}\n")),
        "{}",
        markdown(&f)
    );
    let json: Value = serde_json::to_value(&f).unwrap();
    assert_eq!(
        json["capacity"]["wideBracket"],
        json!({"rateRatio": 3.0, "shareDrop": 0.95, "rules": ["rate_ratio", "share_drop"]})
    );

    // Narrow: 10/s at 100 % and 12/s at 75 % (9 of 12), target 90 %:
    // 12/10 = 1.2 ≤ 1.5 and 25 points ≤ 50: no warning anywhere.
    let f = build(
        &[
            ("t-10.json", spec(10, 0, 0, 0.0)),
            ("t-12.json", spec(9, 3, 0, 5000.0)),
        ],
        0.9,
    );
    let Capacity::Interpolated {
        offered_per_s,
        ref wide_bracket,
        ..
    } = f.capacity
    else {
        panic!("{:?}", f.capacity)
    };
    // 10 + 0.1 · 2 / 0.25 = 10.8/s.
    assert!(close(offered_per_s, 10.8));
    assert_eq!(*wide_bracket, None);
    assert!(!text(&f).contains("bracket is wide"));
    assert!(!markdown(&f).contains("bracket is wide"));
    let json: Value = serde_json::to_value(&f).unwrap();
    assert!(json["capacity"].get("wideBracket").is_none(), "{json}");
}

#[test]
fn markdown_snapshot() {
    insta::assert_snapshot!("frontier_markdown", markdown(&build(&classic(), 0.9)));
}

#[test]
fn text_snapshot() {
    insta::assert_snapshot!("frontier_text", text(&build(&classic(), 0.95)));
}

#[test]
fn svg_snapshot_is_deterministic_and_labelled() {
    let f = build(&classic(), 0.95);
    let s = svg(&f);
    assert_eq!(s, svg(&build(&classic(), 0.95)), "same input, same bytes");
    for needle in [
        "offered load (requests/s)",
        "requests/s",
        "p95 TTFT (ms)",
        "class=\"knee\"",
        "knee 20/s",
        "capacity 15/s",
        "data-name=\"goodput/s\"",
        "data-name=\"served/s\"",
    ] {
        assert!(s.contains(needle), "missing {needle}");
    }
    insta::assert_snapshot!("frontier_svg", s);
}

#[test]
fn json_is_canonical_and_tagged() {
    let f = build(&classic(), 0.9);
    let bytes = goodput_util::json::to_canonical_json(&f).unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["schema"], "goodput-frontier/1");
    assert_eq!(v["knee"]["status"], "found");
    assert_eq!(v["knee"]["offeredPerS"], 20);
    assert_eq!(v["capacity"]["status"], "interpolated");
    assert_eq!(v["points"][0]["offeredPerS"], 5);
    let back: Frontier = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(back, f);
}

// ------------------------------------------ capacity judged by limits ----

/// The issue's case: pass share meets a 90 % target at every rate, but p95
/// TTFT crosses 1000 ms at the third.
///
/// | offered | pass | miss (TTFT) | share | p95 TTFT |
/// |---|---|---|---|---|
/// | 10 | 10 | 0           | 1.0  | 300 (every row) |
/// | 20 | 19 | 1 (1500 ms) | 0.95 | 300 (rank ⌈0.95·20⌉ = 19 of 19×300, 1×1500) |
/// | 30 | 27 | 3 (1102 ms) | 0.9  | 1102 (rank ⌈0.95·30⌉ = 29 of 27×300, 3×1102) |
fn tail_crossing() -> Vec<(&'static str, Spec)> {
    vec![
        ("t-30.json", spec(27, 3, 0, 1102.0)),
        ("t-10.json", spec(10, 0, 0, 0.0)),
        ("t-20.json", spec(19, 1, 0, 1500.0)),
    ]
}

/// The text view with its wrapped lines joined and runs of spaces made one,
/// so a sentence can be looked for whatever its line breaks.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn ttft_limit(ms: &str) -> BlockLimits {
    BlockLimits {
        max_p95_ttft_ms: Some(ms.parse().expect("decimal")),
        ..BlockLimits::default()
    }
}

#[test]
fn a_p95_ttft_limit_caps_the_capacity_where_the_pass_share_never_fell() {
    let r = receipts(&tail_crossing());
    // By pass share alone: 1.0, 0.95, 0.9 all ≥ 0.9 → capacity ≥ 30/s, the
    // answer that ignores p95 TTFT 1102 ms.
    let plain = frontier(&r, None, 0.9).expect("frontier");
    assert_eq!(
        plain.capacity,
        Capacity::AtLeast {
            offered_per_s: 30.0,
            below_target_under_capacity: vec![]
        }
    );
    // With p95 TTFT ≤ 1000 ms: 10/s (300) and 20/s (300) hold; 30/s (1102)
    // does not; its pass share (0.9) met the target, so only the TTFT is named.
    let f = frontier_judged(&r, None, 0.9, &ttft_limit("1000")).expect("frontier");
    let Capacity::Limited {
        offered_per_s,
        held,
        fails,
        ref failed,
        ref below_target_under_capacity,
    } = f.capacity
    else {
        panic!("{:?}", f.capacity);
    };
    assert_eq!(offered_per_s, 20.0);
    assert_eq!((held.offered_per_s, held.pass_share), (20.0, 0.95));
    assert_eq!((fails.offered_per_s, fails.pass_share), (30.0, 0.9));
    assert_eq!(failed.len(), 1);
    assert_eq!(failed[0].name, "p95 ttft ms");
    assert_eq!(
        (failed[0].measured, failed[0].limit),
        (Some(1102.0), 1000.0)
    );
    assert!(below_target_under_capacity.is_empty());
    assert_eq!(f.limits.len(), 1);
    assert_eq!(
        (f.limits[0].name.as_str(), f.limits[0].limit),
        ("p95 ttft ms", 1000.0)
    );
    let p95: Vec<Option<f64>> = f.points.iter().map(|p| p.checks[0].measured).collect();
    assert_eq!(p95, vec![Some(300.0), Some(300.0), Some(1102.0)]);
    // The views name the criteria and what failed.
    let t = flat(&text(&f));
    assert!(
        t.contains(
            "capacity 20/s, the highest rate that held every criterion; the next did not — \
             30/s: p95 TTFT 1102 ms > 1000 ms"
        ),
        "{t}"
    );
    assert!(t.contains("p95 TTFT 1102 ms > 1000 ms"), "{t}");
    assert!(
        t.contains("judged by pass share ≥ 90 %, p95 TTFT ≤ 1000 ms"),
        "{t}"
    );
    let md = markdown(&f);
    assert!(md.contains("30/s: p95 TTFT 1102 ms > 1000 ms"), "{md}");
    assert!(
        md.contains("- judged by pass share ≥ 90 %, p95 TTFT ≤ 1000 ms"),
        "{md}"
    );
    assert!(svg(&f).contains("capacity 20/s (held every limit)"));
    // The JSON says the same and reads back.
    let bytes = goodput_util::json::to_canonical_json(&f).unwrap();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(v["capacity"]["status"], "limited");
    assert_eq!(v["capacity"]["failed"][0]["measured"], 1102);
    assert_eq!(
        v["limits"],
        json!([{"name": "p95 ttft ms", "comparison": "<=", "limit": 1000}])
    );
    let back: Frontier = serde_json::from_slice(&bytes).unwrap();
    assert_eq!(back, f);
}

#[test]
fn a_limit_exactly_met_holds_and_a_limit_held_everywhere_changes_nothing() {
    let r = receipts(&tail_crossing());
    // 1102 ≤ 1102: every rate holds, capacity ≥ 30/s; the text says every
    // rate held every criterion instead of "never fell below the target".
    let f = frontier_judged(&r, None, 0.9, &ttft_limit("1102")).expect("frontier");
    assert!(matches!(f.capacity, Capacity::AtLeast { offered_per_s, .. } if offered_per_s == 30.0));
    assert!(flat(&text(&f)).contains("every rate held every criterion"));
    // 200 fails everywhere (300, 300, 1102): none holds, and the lowest
    // rate's failure is named.
    let f = frontier_judged(&r, None, 0.9, &ttft_limit("200")).expect("frontier");
    assert!(matches!(
        f.capacity,
        Capacity::NoneHolds { lowest_offered_per_s, best_pass_share, .. }
            if lowest_offered_per_s == 10.0 && best_pass_share == 1.0
    ));
    assert!(
        flat(&text(&f)).contains(
            "no rate tested held every criterion; at the lowest, 10/s: p95 TTFT 300 ms > 200 ms"
        ),
        "{}",
        text(&f)
    );
    // 1101.9 fails at 30/s.
    let f = frontier_judged(&r, None, 0.9, &ttft_limit("1101.9")).expect("frontier");
    assert!(matches!(f.capacity, Capacity::Limited { offered_per_s, .. } if offered_per_s == 20.0));
}

#[test]
fn without_limits_the_frontier_and_its_json_are_as_before() {
    // No limit: the same frontier as `frontier`, and the JSON has no
    // `limits` nor per-point `checks` (the snapshots hold the views).
    let r = receipts(&classic());
    let plain = frontier(&r, None, 0.9).expect("frontier");
    let judged = frontier_judged(&r, None, 0.9, &BlockLimits::default()).expect("frontier");
    assert_eq!(plain, judged);
    let v: Value =
        serde_json::from_slice(&goodput_util::json::to_canonical_json(&plain).unwrap()).unwrap();
    assert!(v.get("limits").is_none(), "{v}");
    assert!(v["points"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| p.get("checks").is_none()));
    assert!(!text(&plain).contains("judged by"));
}

#[test]
fn a_share_ceiling_names_the_pass_share_first_then_the_share() {
    // Classic sweep with --max-failure-share 0.05: 20/s (failure 0) holds;
    // 40/s has pass share 0.25 and failure share 4/40 = 0.1 > 0.05: a limit
    // failed, so no interpolation (without it, "met exactly at 20/s").
    let f = frontier_judged(
        &receipts(&classic()),
        None,
        0.9,
        &BlockLimits {
            max_failure_share: Some("0.05".parse().unwrap()),
            ..BlockLimits::default()
        },
    )
    .expect("frontier");
    assert!(matches!(f.capacity, Capacity::Limited { offered_per_s, .. } if offered_per_s == 20.0));
    let t = flat(&text(&f));
    assert!(
        t.contains("40/s: pass share 25.0 % < 90.0 %; failure share 10.0 % > 5.0 %"),
        "{t}"
    );
}

#[test]
fn the_cli_takes_the_gates_limits_and_refuses_bad_ones() {
    let dir = tempfile::tempdir().unwrap();
    let mut paths = Vec::new();
    for (name, s) in tail_crossing() {
        let p = dir.path().join(name);
        std::fs::write(&p, trace(s)).unwrap();
        paths.push(p.display().to_string());
    }
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = vec!["frontier"];
        a.extend(paths.iter().map(String::as_str));
        a.extend_from_slice(extra);
        run(&a)
    };
    let (code, stdout, stderr) = with(&["--max-p95-ttft-ms", "1000"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        flat(&stdout).contains("30/s: p95 TTFT 1102 ms > 1000 ms"),
        "{stdout}"
    );
    let (code, stdout, _) = with(&["--max-p95-ttft-ms", "1000", "--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["capacity"]["status"], "limited");
    assert_eq!(v["capacity"]["offeredPerS"], 20);
    let (_, stdout, _) = with(&[]);
    assert!(flat(&stdout).contains("capacity ≥ 30/s"), "{stdout}");
    for bad in [
        vec!["--max-failure-share", "1.5"],
        vec!["--max-censored-share=-0.1"],
        vec!["--max-p95-ttft-ms=-1"],
        vec!["--max-p95-tpot-ms", "inf"],
        vec!["--max-p95-e2e-ms", "soon"],
    ] {
        let (code, _, stderr) = with(&bad);
        assert_eq!(code, 2, "{bad:?}: {stderr}");
    }
    // A limit without --find-capacity judges nothing: refused before any request.
    let (code, _, stderr) = run(&[
        "record",
        "--model",
        "sim",
        "--url",
        "http://127.0.0.1:9",
        "--request-rate",
        "5",
        "--duration",
        "1s",
        "--max-p95-ttft-ms",
        "1000",
        "--out",
        dir.path().join("never.json").to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("add --find-capacity"), "{stderr}");
    assert!(!dir.path().join("never.json").exists());
}

// ------------------------------------------------------------- the CLI ----

fn write_sweep(dir: &Path) -> Vec<PathBuf> {
    classic()
        .iter()
        .map(|(name, s)| {
            let p = dir.join(name);
            std::fs::write(&p, trace(*s)).unwrap();
            p
        })
        .collect()
}

fn run(args: &[&str]) -> (i32, String, String) {
    let out = common::goodput().args(args).output().expect("run goodput");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_cli_exits_0_on_a_sweep_and_2_on_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let paths = write_sweep(dir.path());
    let mut args: Vec<String> = vec!["frontier".into()];
    args.extend(paths.iter().map(|p| p.display().to_string()));
    let svg_path = dir.path().join("f.svg");
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a.extend_from_slice(extra);
        run(&a)
    };

    let (code, stdout, stderr) = with(&["--svg", svg_path.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stdout.contains("knee      20/s"), "{stdout}");
    assert!(std::fs::read_to_string(&svg_path)
        .unwrap()
        .starts_with("<svg"));

    let (code, stdout, _) = with(&["--json"]);
    assert_eq!(code, 0);
    let v: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["points"].as_array().unwrap().len(), 4);

    let (code, stdout, _) = with(&["--markdown", "--attainment", "0.95"]);
    assert_eq!(code, 0);
    assert!(stdout.contains("| offered/s |"), "{stdout}");

    for bad in [
        vec!["--attainment", "1.5"],
        vec!["--attainment", "0"],
        vec!["--class", "nope"],
        vec!["--json", "--markdown"],
    ] {
        let (code, _, stderr) = with(&bad);
        assert_eq!(code, 2, "{bad:?}: {stderr}");
    }

    // A rejected trace is named, with the JSON pointer of the problem.
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, b"{\"schema\": \"goodput-trace/1\"}").unwrap();
    let (code, _, stderr) = run(&[
        "frontier",
        paths[0].to_str().unwrap(),
        broken.to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("broken.json"), "{stderr}");

    let (code, _, stderr) = run(&["frontier", "/nonexistent/t.json"]);
    assert_eq!(code, 2, "{stderr}");
    let (code, _, _) = run(&["frontier"]);
    assert_eq!(code, 2, "at least one trace is required");
}

#[test]
fn limits_are_per_trace_and_the_message_says_how_to_raise_them() {
    let dir = tempfile::tempdir().unwrap();
    let paths = write_sweep(dir.path());
    let p40 = paths[0].to_str().unwrap(); // 40 rows
    let (code, _, stderr) = run(&["frontier", p40, "--max-rows", "39"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("t-40.json") && stderr.contains("--max-rows"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&["frontier", p40, "--max-bytes", "100"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("t-40.json") && stderr.contains("--max-bytes"),
        "{stderr}"
    );
    let (code, _, stderr) = run(&["frontier", p40, "--max-rows", "40"]);
    assert_eq!(code, 0, "{stderr}");
}

// ------------------------------------------------- the recorder's sweep ----

fn record_in_process(argv: &[&str]) -> (i32, String) {
    use clap::Parser;
    let mut full = vec!["goodput", "record", "--model", "sim", "--no-progress"];
    full.extend_from_slice(argv);
    let cli = goodput::cli::Cli::try_parse_from(&full).expect("flags parse");
    let mut stdout = Vec::new();
    let code = match goodput::cli::run(cli, &mut stdout) {
        Ok(code) => code,
        Err(e) => e.exit_code(),
    };
    (code, String::from_utf8_lossy(&stdout).into_owned())
}

#[test]
fn a_rate_list_records_one_trace_per_rate_with_its_own_seed() {
    use goodput_sim::engine::EngineParams;
    use goodput_sim::{SimConfig, SimServer};
    let server = SimServer::start(
        SimConfig {
            engine: EngineParams {
                max_batch: 64,
                prefill_ms_per_1k_tokens: 0.0,
                decode_step_ms: 2.0,
                decode_ms_per_seq: 0.0,
            },
            output_tokens: (4.0, 0.0),
            faults: vec![],
            seed: 1,
            model_name: "sim".into(),
            also_served: vec![],
            quirks: Default::default(),
            tokenizer: None,
        },
        1,
    )
    .expect("start sim");
    let dir = tempfile::tempdir().unwrap();
    let template = dir.path().join("trace-{rate}.json");
    let url = server.url();
    // Constant arrivals over a 1 s window: 5 and 10 rows, exactly.
    let (code, stdout) = record_in_process(&[
        "--url",
        &url,
        "--request-rate",
        "5,10",
        "--arrival",
        "constant",
        "--duration",
        "1s",
        "--grace",
        "1s",
        "--cooldown",
        "0.2s",
        "--random-input-len",
        "8",
        "--seed",
        "7",
        "--out",
        template.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}");
    let mut paths = Vec::new();
    for (rate, rows, seed) in [("5", 5.0, 7.0), ("10", 10.0, 8.0)] {
        let path = dir.path().join(format!("trace-{rate}.json"));
        let trace: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let w = &trace["workload"];
        assert_eq!(trace["rows"].as_array().unwrap().len() as f64, rows);
        assert_eq!(w["scheduled"], rows);
        assert_eq!(w["seed"], seed, "seed + index");
        assert_eq!(w["sweepBaseSeed"], 7.0);
        assert_eq!(w["ratePerS"], rows);
        paths.push(path.display().to_string());
    }
    assert!(
        stdout.contains(&format!("next: goodput frontier {} {}", paths[0], paths[1])),
        "{stdout}"
    );
    let (code, out, err) = run(&["frontier", &paths[0], &paths[1], "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["points"][1]["offeredPerS"], 10);
}

#[test]
fn a_rate_list_needs_a_rate_template_and_distinct_rates_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("trace.json");
    let template = dir.path().join("t-{rate}.json");
    let base = ["--url", "http://127.0.0.1:9", "--duration", "1s"];
    for (rates, out) in [
        ("5,10", plain.to_str().unwrap()),
        ("5,5", template.to_str().unwrap()),
        ("5,-1", template.to_str().unwrap()),
    ] {
        let mut argv = base.to_vec();
        argv.extend_from_slice(&["--request-rate", rates, "--out", out]);
        let (code, stdout) = record_in_process(&argv);
        assert_eq!(code, 2, "{rates} {out}: {stdout}");
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing written"
        );
    }
}

/// `n` rows arriving evenly over a 2 s window (horizon 10 s), row `i`
/// completing at `first_done + gap × i` ms (first token 10 ms before).
fn served_trace(n: usize, first_done: f64, gap: f64) -> goodput_core::receipt::Receipt {
    let rows: Vec<Value> = (0..n)
        .map(|i| {
            let arrival = (i * 2000 / n) as f64;
            let done = first_done + gap * i as f64;
            json!({"id": format!("r{i}"), "arrivalMs": arrival, "status": "completed",
                   "firstTokenMs": done - 10.0, "completedMs": done, "outputTokens": 10})
        })
        .collect();
    let doc = json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 2000, "horizonMs": 10000},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": 1000, "tpotMs": null, "e2eMs": null}},
        "rows": rows,
    });
    analyze_bytes(
        &serde_json::to_vec(&doc).unwrap(),
        AnalyzeOptions::default(),
    )
    .expect("accepted")
    .receipt
}

#[test]
fn served_throughput_parts_from_offered_load_where_the_server_stops_keeping_up() {
    // 10/s: 20 rows, one completion every 100 ms from 50 to 1950 ms: 19 gaps
    // over 1.9 s → served 10/s = offered. 60/s: 120 rows, but the server
    // completes one every 50 ms (20/s) from 200 to 6150 ms, in the grace
    // period: 119 gaps over 5.95 s → served 20/s, while completed/s (per
    // window second) is 120 / 2 = 60, as high as offered.
    let f = frontier(
        &[
            ("t-60.json".to_owned(), served_trace(120, 200.0, 50.0)),
            ("t-10.json".to_owned(), served_trace(20, 50.0, 100.0)),
        ],
        None,
        0.9,
    )
    .expect("frontier");
    let (low, high) = (&f.points[0], &f.points[1]);
    assert_eq!((low.offered_per_s, high.offered_per_s), (10.0, 60.0));
    assert!(close(low.served_per_s.unwrap(), 10.0));
    assert!(close(high.served_per_s.unwrap(), 20.0));
    assert_eq!(high.completed_per_s, 60.0);
    // The text table shows served/s, not the window-second completions.
    let t = text(&f);
    let row = t.lines().find(|l| l.ends_with("t-60.json")).expect("row");
    assert!(row.trim_start().starts_with("60.00     20.00"), "{row}");
    // The chart plots served/s against offered load, with the served = offered line.
    let s = svg(&f);
    assert!(s.contains(r#"data-name="served/s""#) && s.contains(r#"class="diagonal""#));
    assert!(!s.contains(r#"data-name="completed/s""#));
}

#[test]
fn each_sweep_point_draws_its_prompt_list_in_its_own_seeded_order() {
    use goodput_record::workload::body::prompt_hash;
    use goodput_sim::engine::EngineParams;
    use goodput_sim::{SimConfig, SimServer};
    let server = SimServer::start(
        SimConfig {
            engine: EngineParams {
                max_batch: 64,
                prefill_ms_per_1k_tokens: 0.0,
                decode_step_ms: 2.0,
                decode_ms_per_seq: 0.0,
            },
            output_tokens: (2.0, 0.0),
            faults: vec![],
            seed: 1,
            model_name: "sim".into(),
            also_served: vec![],
            quirks: Default::default(),
            tokenizer: None,
        },
        1,
    )
    .expect("start sim");
    let dir = tempfile::tempdir().unwrap();
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
    ];
    let prompts = dir.path().join("p.jsonl");
    let lines: Vec<String> = words.iter().map(|w| format!("\"{w} prompt\"")).collect();
    std::fs::write(&prompts, lines.join("\n")).unwrap();
    let template = dir.path().join("trace-{rate}.json");
    let url = server.url();
    // Constant arrivals over a 1 s window: 8 and 16 rows, seeds 7 and 8.
    let (code, stdout) = record_in_process(&[
        "--url",
        &url,
        "--request-rate",
        "8,16",
        "--arrival",
        "constant",
        "--duration",
        "1s",
        "--grace",
        "0.5s",
        "--cooldown",
        "0.1s",
        "--prompts",
        prompts.to_str().unwrap(),
        "--seed",
        "7",
        "--out",
        template.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}");
    let mut file_order: Vec<String> = words
        .iter()
        .map(|w| prompt_hash(&format!("{w} prompt")))
        .collect();
    let hashes = |rate: &str| -> Vec<String> {
        let path = dir.path().join(format!("trace-{rate}.json"));
        let trace: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        trace["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["labels"]["promptHash"].as_str().unwrap().to_owned())
            .collect()
    };
    let (a, b) = (hashes("8"), hashes("16"));
    assert_eq!((a.len(), b.len()), (8, 16));
    // Point 1 goes round its order twice: rows 8..16 repeat rows 0..8.
    assert_eq!(b[..8], b[8..]);
    // Each point uses every prompt once per round, in an order of its own.
    let (mut a8, mut b8) = (a.clone(), b[..8].to_vec());
    a8.sort();
    b8.sort();
    file_order.sort();
    assert_eq!((&a8, &b8), (&file_order, &file_order));
    assert_ne!(
        a,
        b[..8].to_vec(),
        "both points sent the prompts in the same order"
    );
}

#[test]
fn the_chart_draws_pass_share_interval_bars_beside_the_attainment_target() {
    // The 40/s point of `classic`: 10 passes of 40. Wilson 95 %:
    // centre (0.25 + z²/80) / (1 + z²/40) = 0.27190, half-width
    // z·√(0.25·0.75/40 + z²/6400) / (1 + z²/40) = 0.13003, so
    // [0.14187, 0.40194]. The share panel spans y 510 (0 %) to 360 (100 %),
    // the x axis 0–40/s spans x 80–700: the bar runs at x 700.0 from
    // y 510 − 150 × 0.14187 = 488.7 up to 510 − 150 × 0.40194 = 449.7;
    // the 90 % target line sits at y 510 − 135 = 375.0.
    let f = build(&classic(), 0.9);
    let s = svg(&f);
    assert!(s.contains(r#"data-name="pass share interval""#), "{s}");
    assert!(s.contains("M700.0,488.7V449.7"), "{s}");
    assert!(s.contains(r#"y1="375.0" x2="700.0" y2="375.0""#), "{s}");
    // The 5/s and 10/s points passed every request: 5 of 5 gives a Wilson
    // upper bound of exactly 1 (bar top at y 360.0) and a lower one below it.
    let share_bars = s
        .split(r#"data-name="pass share interval""#)
        .nth(1)
        .and_then(|rest| rest.split("</g>").next())
        .expect("share bars");
    assert_eq!(share_bars.matches("<path").count(), 4, "{share_bars}");
    assert_eq!(share_bars.matches("V360.0").count(), 2, "{share_bars}");
}

#[test]
fn the_help_says_what_the_chart_draws() {
    let (code, out, _) = run(&["frontier", "--help"]);
    assert_eq!(code, 0);
    let flat = flat(&out);
    assert!(
        flat.contains("served/s and goodput/s, the pass share with the target, then p95 TTFT and p95 TPOT each with the classes' gates"),
        "{out}"
    );
    assert!(!flat.contains("completed/s (top)"), "{out}");
    assert!(flat.contains("--no-sidecar"), "{out}");
}

/// A trace of `n` completed rows in a 1 s window (class `chat`: TTFT ≤ 1000,
/// stall ≤ 200, TTFA ≤ 400 ms), each TTFT 300 ms then 11 tokens over 500 ms
/// and its first answer token `ttfa_ms` after arrival. With `gaps`, a row's
/// ten gaps are 50 ms each, except the first `stalled` rows: nine of 25 ms
/// and one of 275 ms (500 ms in all, a stall over the gate).
fn stream_trace(n: usize, stalled: usize, ttfa_ms: f64, gaps: bool) -> Vec<u8> {
    let rows: Vec<Value> = (0..n)
        .map(|i| {
            let arrival = (i * 1000 / n) as f64;
            let mut row = json!({"id": format!("r{i}"), "arrivalMs": arrival,
                "status": "completed", "firstTokenMs": arrival + 300.0,
                "firstAnswerMs": arrival + ttfa_ms, "completedMs": arrival + 800.0,
                "outputTokens": 11});
            if gaps {
                let g: Vec<f64> = if i < stalled {
                    let mut g = vec![25.0; 9];
                    g.push(275.0);
                    g
                } else {
                    vec![50.0; 10]
                };
                row["gapsMs"] = json!(g);
            }
            row
        })
        .collect();
    serde_json::to_vec(&json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 1000, "horizonMs": 20000},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": 1000, "tpotMs": null, "e2eMs": null,
                             "stallMs": 200, "ttfaMs": 400}},
        "workload": {"arrival": "constant", "ratePerS": n as f64},
        "rows": rows,
    }))
    .expect("serialize")
}

fn stream_frontier(gaps: bool) -> Frontier {
    let receipts: Vec<_> = [("s-10.json", 10, 2, 380.0), ("s-5.json", 5, 0, 350.0)]
        .iter()
        .map(|(label, n, stalled, ttfa)| {
            let bytes = stream_trace(*n, *stalled, *ttfa, gaps);
            let a = analyze_bytes(&bytes, AnalyzeOptions::default()).expect("accepted");
            (label.to_string(), a.receipt)
        })
        .collect();
    frontier(&receipts, None, 0.9).expect("frontier")
}

#[test]
fn each_step_shows_its_p99_gap_and_p95_ttfa_with_the_stall_and_ttfa_gates() {
    let f = stream_frontier(true);
    // 5/s: 50 gaps of 50 ms, p99 = 50; TTFA 350 on every row, p95 = 350.
    // 10/s: 80 gaps of 50, 18 of 25 and 2 of 275 (M = 100): sorted, rank
    // ⌈0.99 × 100⌉ = 99 is 275; TTFA 380 everywhere.
    let got: Vec<_> = f
        .points
        .iter()
        .map(|p| {
            (
                p.offered_per_s,
                p.gap_rows,
                p.p99_gap_ms,
                p.answered,
                p.p95_ttfa_ms,
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (5.0, Some(5), Some(50.0), Some(5), Some(350.0)),
            (10.0, Some(10), Some(275.0), Some(10), Some(380.0))
        ]
    );
    assert_eq!(
        (f.gates[0].stall_ms, f.gates[0].ttfa_ms),
        (Some(200.0), Some(400.0))
    );
    let t = text(&f);
    let row = |label: &str| -> Vec<String> {
        t.lines()
            .filter(|l| l.ends_with(label))
            .nth(1)
            .unwrap_or_else(|| panic!("no stream row for {label}: {t}"))
            .split_whitespace()
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(row("s-10.json"), ["10.00", "275.0", "380.0", "s-10.json"]);
    assert!(t.contains("offered/s p99 gap ms p95 TTFA ms  trace"), "{t}");
    assert!(!t.contains("no step has gaps"), "{t}");
    let md = markdown(&f);
    assert!(
        md.contains("| p99 gap (ms) | p95 TTFA (ms) | in flight (λW) |"),
        "{md}"
    );
    let s = svg(&f);
    // Two stream panels below TPOT: 1010 + 2 × 220 = 1450 px tall.
    assert!(s.contains("height=\"1450\""), "{s}");
    assert!(s.contains("p99 gap between token-carrying events (pooled) vs offered load"));
    assert!(s.contains("stall gate 200 ms (chat)") && s.contains("TTFA gate 400 ms (chat)"));
    let v = serde_json::to_value(&f).unwrap();
    assert_eq!(v["points"][1]["p99GapMs"], 275.0);
}

#[test]
fn a_frontier_whose_rows_have_no_gaps_says_so_rather_than_drawing_zeros() {
    // The stall gate puts a `gaps` block in every receipt, with no row.
    let f = stream_frontier(false);
    assert!(f
        .points
        .iter()
        .all(|p| p.gap_rows == Some(0) && p.p99_gap_ms.is_none()));
    let v = serde_json::to_value(&f).unwrap();
    assert!(v["points"][0].get("p99GapMs").is_none(), "{v}");
    let t = text(&f);
    assert!(
        t.contains("no step has gaps: no completed cohort row carries gapsMs"),
        "{t}"
    );
    assert!(
        t.lines()
            .filter(|l| l.ends_with("s-5.json"))
            .nth(1)
            .unwrap()
            .contains('—'),
        "{t}"
    );
    assert!(markdown(&f).contains("- **Note:** no step has gaps"));
    let s = svg(&f);
    assert!(
        s.contains("no step has gaps (no row carries gapsMs)"),
        "{s}"
    );
    // TTFA is still there, and a frontier with neither has no stream lines.
    assert!(!t.contains("no step has a first answer"), "{t}");
    let plain = build(&classic(), 0.9);
    assert!(!text(&plain).contains("p99 gap") && !svg(&plain).contains("p99 gap"));
}

#[test]
fn a_p95_ttfa_limit_names_its_figure_in_ms_like_the_other_tails() {
    // p95 TTFA ≤ 370 ms: 5/s (350) holds, 10/s (380) does not. Before, the
    // text read "p95 ttfa ms 38000.0 % > 37000.0 %" (taken for a share).
    let receipts: Vec<_> = [("s-10.json", 10, 0, 380.0), ("s-5.json", 5, 0, 350.0)]
        .iter()
        .map(|(label, n, stalled, ttfa)| {
            let bytes = stream_trace(*n, *stalled, *ttfa, true);
            let a = analyze_bytes(&bytes, AnalyzeOptions::default()).expect("accepted");
            (label.to_string(), a.receipt)
        })
        .collect();
    let limits = BlockLimits {
        max_p95_ttfa_ms: Some("370".parse().expect("decimal")),
        ..BlockLimits::default()
    };
    let f = frontier_judged(&receipts, None, 0.9, &limits).expect("frontier");
    assert!(matches!(f.capacity, Capacity::Limited { offered_per_s, .. } if offered_per_s == 5.0));
    let t = flat(&text(&f));
    assert!(t.contains("10/s: p95 TTFA 380 ms > 370 ms"), "{t}");
    assert!(t.contains("p95 TTFA ≤ 370 ms"), "{t}");
    assert!(!t.contains("ttfa ms"), "{t}");
}
