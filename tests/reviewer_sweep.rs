//! `goodput sweep`: hand-computed expectations on the reviewer fixtures, and
//! properties tying every sweep line to what `analyze` counts.

use goodput_core::analyze::{analyze_bytes, Analysis, AnalyzeOptions};
use goodput_core::review::sensitivity::{
    sweep, SweepEntry, SweepError, SweepPlan, DEFAULT_FACTORS,
};
use goodput_core::trace::Limits;
use proptest::prelude::*;
use serde_json::{json, Value};

const MIXED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/reviewer/mixed.json");
const TWO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/reviewer/two-classes.json"
);

fn analysis(bytes: &[u8]) -> Analysis {
    let options = AnalyzeOptions {
        limits: Limits {
            max_rows: 100_000,
            max_bytes: 100_000_000,
        },
        ..AnalyzeOptions::default()
    };
    analyze_bytes(bytes, options).expect("the trace is accepted")
}

fn run(path: &str, plan: &SweepPlan) -> Vec<SweepEntry> {
    let bytes = std::fs::read(path).expect("fixture");
    let a = analysis(&bytes);
    sweep(&a.trace, &a.judgements, plan).expect("sweep")
}

fn passes(entries: &[SweepEntry]) -> Vec<u64> {
    entries.iter().map(|e| e.pass).collect()
}

// mixed.json, class chat (ttft 1000, tpot 50, e2e 5000 ms, inclusive), window 10 s.
// Completed cohort rows (ttft / tpot / e2e ms):
//   p1 500/25/1500  p2 1000/25/2000  p3 960/25/1960  p4 100/50/3100  p5 200/—/200 (one token)
//   m1 1200/25/2200 (misses ttft)    m2 100/60/2500 (misses tpot)
// Cohort 10 = 7 completed + f1, f2 (failed) + c1 (in flight); x1 invalid, o1 outside the window.

#[test]
fn the_declared_line_comes_first_and_matches_the_receipt() {
    let bytes = std::fs::read(MIXED).expect("fixture");
    let a = analysis(&bytes);
    let plan = SweepPlan::one_at_a_time(None, &DEFAULT_FACTORS).expect("plan");
    let entries = sweep(&a.trace, &a.judgements, &plan).expect("sweep");
    // 1 declared + 3 gates × 7 factors.
    assert_eq!(entries.len(), 22);
    let d = &entries[0];
    assert!(!d.hypothetical);
    assert!(entries[1..].iter().all(|e| e.hypothetical));
    // pass 5 (p1..p5), goodput 5 / 10 s = 0.5, pass share 5 / 10.
    assert_eq!((d.pass, d.cohort), (5, 10));
    assert_eq!(d.goodput_per_s, 0.5);
    assert_eq!(d.pass_share, Some(0.5));
    assert_eq!(d.pass, a.receipt.results.all.counts.pass);
    assert_eq!(d.goodput_per_s, a.receipt.results.all.rates.goodput_per_s);
}

#[test]
fn scaling_one_gate_at_a_time_counts_by_hand() {
    let entries = run(
        MIXED,
        &SweepPlan::one_at_a_time(None, &DEFAULT_FACTORS).expect("plan"),
    );
    // TTFT gate 1000 × f, rows also meeting tpot 50 and e2e 5000: p1..p5 and m1
    // (ttft 500, 1000, 960, 100, 200, 1200).
    //   ×0.5 → 500: 500, 100, 200 → 3; ×0.8 → 800: 3; ×0.9 → 900: 3 (960 > 900)
    //   ×1.1 → 1100: + 1000, 960 → 5; ×1.25 → 1250: + m1 1200 → 6; ×1.5, ×2 → 6
    assert_eq!(passes(&entries[1..8]), [3, 3, 3, 5, 6, 6, 6]);
    // TPOT gate 50 × f, rows meeting ttft and e2e: p1..p5, m2 (tpot 25, 25, 25, 50, none, 60).
    //   ×0.5 → 25: p1, p2, p3 and p5 (no TPOT: gate not applicable) → 4; ×0.8, ×0.9 → 4
    //   ×1.1 → 55 (55.00000000000001): + p4 → 5; ×1.25 → 62.5: + m2 → 6; ×1.5, ×2 → 6
    assert_eq!(passes(&entries[8..15]), [4, 4, 4, 5, 6, 6, 6]);
    // E2E gate 5000 × f, rows meeting ttft and tpot: p1..p5 (e2e 1500, 2000, 1960, 3100, 200).
    //   ×0.5 → 2500: p4 (3100) drops → 4; every other factor → 5.
    assert_eq!(passes(&entries[15..22]), [4, 5, 5, 5, 5, 5, 5]);
    // Deltas against the declared 5; goodput / 10 s.
    let e = &entries[5]; // ttft × 1.25
    assert_eq!(
        (e.factors.ttft, e.factors.tpot, e.factors.e2e),
        (1.25, 1.0, 1.0)
    );
    assert_eq!(e.delta_pass, 1);
    assert_eq!(e.goodput_per_s, 0.6);
    assert!((e.delta_goodput_per_s - 0.1).abs() < 1e-12);
    assert_eq!(e.pass_share, Some(0.6));
    // Gates in force are plain products; only the scaled gate moves.
    let g = e.classes["chat"];
    assert_eq!(
        (g.ttft_ms, g.tpot_ms, g.e2e_ms),
        (Some(1250.0), Some(50.0), Some(5000.0))
    );
}

#[test]
fn fragility_names_the_rows_nearest_each_gate() {
    let entries = run(
        MIXED,
        &SweepPlan::one_at_a_time(None, &DEFAULT_FACTORS).expect("plan"),
    );
    let f = entries[0]
        .fragility
        .as_ref()
        .expect("declared entry has fragility");
    assert!(entries[1..].iter().all(|e| e.fragility.is_none()));
    // Within 5 % below a gate: ttft >= 950 (p2 1000, p3 960), tpot >= 47.5 (p4 50),
    // e2e >= 4750 (none) → 3 rows.
    let n = f.near_gate;
    assert_eq!((n.rows, n.ttft, n.tpot, n.e2e), (3, 2, 1, 0));
    // TTFT down: the largest passing TTFT is p2's 1000 = the gate (any tightening drops it).
    let d = f.tipping.ttft.down.as_ref().expect("ttft down");
    assert_eq!((d.threshold_ms, d.factor, d.rows), (1000.0, 1.0, 1));
    assert_eq!(d.row_id.as_deref(), Some("p2"));
    // TTFT up: m1 misses on TTFT alone at 1200 → factor 1.2 (+20 %).
    let u = f.tipping.ttft.up.as_ref().expect("ttft up");
    assert_eq!((u.threshold_ms, u.factor), (1200.0, 1.2));
    assert_eq!(u.row_id.as_deref(), Some("m1"));
    // TPOT up: m2 at 60 → 1.2. E2E down: p4 at 3100 → 0.62; E2E up: nobody misses on E2E alone.
    assert_eq!(
        f.tipping.tpot.up.as_ref().map(|p| p.threshold_ms),
        Some(60.0)
    );
    assert_eq!(f.tipping.e2e.down.as_ref().map(|p| p.factor), Some(0.62));
    assert!(f.tipping.e2e.up.is_none());
}

// two-classes.json (strict; window 4 s; horizon 12 s):
//   chat  (ttft 1000, tpot null, e2e 5000):  c1 400/—/1000 pass; c2 1000 = gate → miss (strict)
//   batch (ttft 5000, tpot null, e2e 20000): b1 2000/—/10000 pass; b2 5000 = gate → miss; b3 failed
#[test]
fn one_class_moves_alone_and_null_gates_stay_null() {
    let entries = run(
        TWO,
        &SweepPlan::one_at_a_time(Some("batch".into()), &DEFAULT_FACTORS).expect("plan"),
    );
    let d = &entries[0];
    // batch: pass 1 (b1) of cohort 3; goodput 1 / 4 s.
    assert_eq!((d.pass, d.cohort, d.goodput_per_s), (1, 3, 0.25));
    assert_eq!(d.class.as_deref(), Some("batch"));
    // TTFT 5000 × f, strict: b2 (5000) passes once 5000 < 5000 f, i.e. f > 1.
    assert_eq!(passes(&entries[1..8]), [1, 1, 1, 2, 2, 2, 2]);
    // TPOT is null in batch: scaling it changes nothing and it stays null.
    assert_eq!(passes(&entries[8..15]), [1; 7]);
    assert!(entries[8..15]
        .iter()
        .all(|e| e.classes["batch"].tpot_ms.is_none()));
    // E2E 20000 × 0.5 = 10000: b1's 10000 is not < 10000 (strict) → 0.
    assert_eq!(passes(&entries[15..22]), [0, 1, 1, 1, 1, 1, 1]);
    // chat keeps its declared gates on every line.
    assert!(entries
        .iter()
        .all(|e| e.classes["chat"].ttft_ms == Some(1000.0)));
}

#[test]
fn a_grid_takes_every_combination() {
    let entries = run(
        MIXED,
        &SweepPlan::grid(None, &DEFAULT_FACTORS).expect("plan"),
    );
    // 7³ = 343 alternatives (1 is not among the factors) + the declared line.
    assert_eq!(entries.len(), 344);
    let at = |t: f64, p: f64, e: f64| {
        entries
            .iter()
            .find(|x| {
                x.hypothetical && (x.factors.ttft, x.factors.tpot, x.factors.e2e) == (t, p, e)
            })
            .map(|x| x.pass)
    };
    // ttft <= 500, tpot <= 25, e2e <= 2500: p1 (500/25/1500) and p5 (200/—/200) → 2.
    assert_eq!(at(0.5, 0.5, 0.5), Some(2));
    // Everything doubled: all 7 completed rows pass.
    assert_eq!(at(2.0, 2.0, 2.0), Some(7));
}

#[test]
fn bad_factors_and_unknown_classes_are_refused() {
    assert_eq!(
        SweepPlan::one_at_a_time(None, &[0.5, -1.0]),
        Err(SweepError::BadFactor(-1.0))
    );
    assert_eq!(
        SweepPlan::grid(None, &[f64::NAN])
            .map(|_| ())
            .unwrap_err()
            .to_string(),
        "--factors: NaN is not a positive finite number"
    );
    assert_eq!(SweepPlan::grid(None, &[]), Err(SweepError::NoFactors));
    let bytes = std::fs::read(TWO).expect("fixture");
    let a = analysis(&bytes);
    let plan = SweepPlan::one_at_a_time(Some("nope".into()), &[0.5]).expect("plan");
    let err = sweep(&a.trace, &a.judgements, &plan).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--class: \"nope\" is not a class of this trace (classes: batch, chat)"
    );
}

// ---------------------------------------------------------------- properties

/// A time in ms, half the time a multiple of 50 so values often sit exactly
/// on a gate (or on a scaled gate): where equality rules matter.
fn tie_prone() -> impl Strategy<Value = u32> {
    prop_oneof![0u32..=400, (0u32..=8).prop_map(|k| k * 50)]
}

/// A random trace: one or two classes, gates on a coarse grid (ties with row
/// values are common), every status, small integral times; some classes
/// declare a stall and a TTFA gate, some rows carry gaps and a first answer.
fn trace_strategy() -> impl Strategy<Value = Value> {
    let gate = prop_oneof![
        Just(None),
        (0u32..=8).prop_map(|g| Some(f64::from(g) * 50.0))
    ];
    let small_gate = prop_oneof![
        Just(None),
        (0u32..=8).prop_map(|g| Some(f64::from(g) * 10.0))
    ];
    let gates = (gate.clone(), gate.clone(), gate.clone(), small_gate, gate);
    let row = (
        0u8..4,                                 // status: 0, 1 completed; 2 failed; 3 in flight
        0u32..1000,                             // arrival
        tie_prone(),                            // ttft
        tie_prone(),                            // completion after first token
        1u32..=5,                               // output tokens
        any::<bool>(),                          // class b (when there are two)
        prop::collection::vec(0u32..=8, 0..=4), // gaps, tens of ms, cut to fit
        prop::option::of(0u32..=8), // first answer: eighths of the span after the first token
    );
    (
        prop::collection::vec(gates, 1..=2),
        any::<bool>(),
        prop::collection::vec(row, 0..30),
    )
        .prop_map(|(classes, strict, rows)| {
            let names = ["a", "b"];
            let mut class_map = serde_json::Map::new();
            for (i, (t, p, e, stall, ttfa)) in classes.iter().enumerate() {
                let mut g = json!({"ttftMs": t, "tpotMs": p, "e2eMs": e});
                if let Some(stall) = stall {
                    g["stallMs"] = json!(stall);
                }
                if let Some(ttfa) = ttfa {
                    g["ttfaMs"] = json!(ttfa);
                }
                class_map.insert(names[i].to_owned(), g);
            }
            let two = classes.len() == 2;
            let rows: Vec<Value> = rows
                .iter()
                .enumerate()
                .map(
                    |(i, (status, arrival, ttft, rest, tokens, b, gaps, answer))| {
                        let (arrival, ttft, rest, tokens) = (*arrival, *ttft, *rest, *tokens);
                        let mut row = match status {
                            0 | 1 => completed_row(arrival + ttft, rest, tokens, gaps, *answer),
                            2 => json!({"status": "failed", "reason": "timeout"}),
                            _ => json!({"status": "in_flight"}),
                        };
                        row["id"] = json!(format!("r{i}"));
                        row["arrivalMs"] = json!(arrival);
                        if two && *b {
                            row["class"] = json!("b");
                        }
                        row
                    },
                )
                .collect();
            let mut doc = json!({
                "schema": "goodput-trace/1",
                "window": {"startMs": 0, "endMs": 800, "horizonMs": 1200},
                "equality": if strict { "strict" } else { "inclusive" },
                "classes": class_map,
                "rows": rows,
            });
            if two {
                doc["defaultClass"] = json!("a");
            }
            doc
        })
}

/// A completed row whose gaps (tens of ms) are cut to at most
/// `outputTokens − 1` and to the span, and whose first answer, when drawn,
/// lies within the span, so every drawn row is valid.
fn completed_row(first: u32, span: u32, tokens: u32, gaps: &[u32], answer: Option<u32>) -> Value {
    let mut row = json!({"status": "completed", "firstTokenMs": first,
                         "completedMs": first + span, "outputTokens": tokens});
    let mut kept = Vec::new();
    let mut sum = 0;
    for g in gaps.iter().map(|g| g * 10).take(tokens as usize - 1) {
        if sum + g <= span {
            sum += g;
            kept.push(g);
        }
    }
    if !gaps.is_empty() {
        row["gapsMs"] = json!(kept);
    }
    if let Some(eighths) = answer {
        row["firstAnswerMs"] = json!(f64::from(first) + f64::from(span) * f64::from(eighths) / 8.0);
    }
    row
}

fn factors_strategy() -> impl Strategy<Value = Vec<f64>> {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(vec![0.5, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0]),
            (1u32..400).prop_map(|x| f64::from(x) / 100.0),
        ],
        1..5,
    )
}

fn bytes_of(doc: &Value) -> Vec<u8> {
    serde_json::to_vec(doc).expect("serializable")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// The declared line of any sweep is exactly what `analyze` reports.
    #[test]
    fn the_declared_line_always_equals_analyze(
        doc in trace_strategy(),
        factors in factors_strategy(),
        grid in any::<bool>(),
        scoped in any::<bool>(),
    ) {
        let a = analysis(&bytes_of(&doc));
        let class = (scoped).then(|| "a".to_owned());
        let plan = if grid {
            SweepPlan::grid(class.clone(), &factors)
        } else {
            SweepPlan::one_at_a_time(class.clone(), &factors)
        }.expect("plan");
        let entries = sweep(&a.trace, &a.judgements, &plan).expect("sweep");
        let block = match &class {
            None => &a.receipt.results.all,
            Some(c) => &a.receipt.results.classes[c],
        };
        let d = &entries[0];
        prop_assert!(!d.hypothetical);
        prop_assert_eq!(d.pass, block.counts.pass);
        prop_assert_eq!(d.cohort, block.counts.cohort);
        prop_assert_eq!(d.goodput_per_s, block.rates.goodput_per_s);
        prop_assert_eq!(d.pass_share, block.rates.pass_share);
        prop_assert_eq!(&d.classes, &a.receipt.contract.classes);
        prop_assert_eq!(d.delta_pass, 0);
        prop_assert!(entries[1..].iter().all(|e| e.hypothetical));
    }

    /// Every alternative counts what `analyze` counts on the same trace with
    /// the alternative's gates written into it (for all rows, or for the one
    /// class swept).
    #[test]
    fn every_alternative_equals_analyze_on_the_scaled_trace(
        doc in trace_strategy(),
        factors in factors_strategy(),
        grid in any::<bool>(),
        scoped in any::<bool>(),
    ) {
        let a = analysis(&bytes_of(&doc));
        let class = scoped.then(|| "a".to_owned());
        let plan = if grid {
            SweepPlan::grid(class.clone(), &factors)
        } else {
            SweepPlan::one_at_a_time(class.clone(), &factors)
        }.expect("plan");
        let entries = sweep(&a.trace, &a.judgements, &plan).expect("sweep");
        for e in &entries {
            let mut scaled = doc.clone();
            scaled["classes"] = serde_json::to_value(&e.classes).expect("gates");
            let b = analysis(&bytes_of(&scaled));
            let block = match &class {
                None => &b.receipt.results.all,
                Some(c) => &b.receipt.results.classes[c],
            };
            prop_assert_eq!(e.pass, block.counts.pass, "factors {:?}", e.factors);
            prop_assert_eq!(e.goodput_per_s, block.rates.goodput_per_s);
            prop_assert_eq!(e.pass_share, block.rates.pass_share);
        }
    }
}

// ------------------------------------------------------- stall and TTFA gates

fn sweep_of(trace: &str, factors: &[f64]) -> Vec<SweepEntry> {
    let a = analysis(trace.as_bytes());
    let plan = SweepPlan::one_at_a_time(None, factors).expect("plan");
    sweep(&a.trace, &a.judgements, &plan).expect("sweep")
}

/// Class `s`: TTFT 1000, TPOT null, E2E 5000, stall 100; window [0, 1000).
/// Largest gaps: a 100 (on the gate), b 150, c no gaps (not judged on
/// stall), d 40. All meet TTFT and E2E.
fn stall_trace(equality: &str) -> String {
    format!(
        r#"{{"schema": "goodput-trace/1", "window": {{"startMs": 0, "endMs": 1000, "horizonMs": 1000}},
  "equality": "{equality}",
  "classes": {{"s": {{"ttftMs": 1000, "tpotMs": null, "e2eMs": 5000, "stallMs": 100}}}},
  "rows": [
    {{"id": "a", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "completedMs": 400, "outputTokens": 4, "gapsMs": [100, 100, 100]}},
    {{"id": "b", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "completedMs": 400, "outputTokens": 4, "gapsMs": [150, 50, 50]}},
    {{"id": "c", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "completedMs": 400, "outputTokens": 4}},
    {{"id": "d", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "completedMs": 400, "outputTokens": 4, "gapsMs": [40, 40, 40]}}
  ]}}"#
    )
}

#[test]
fn neighbouring_stall_gates_count_by_hand_under_both_rules() {
    let factors = [0.5, 1.1, 1.5, 2.0];
    // Inclusive, declared 100: a (100 ≤ 100), c, d pass = 3.
    // Stall alternatives: 50 → c, d = 2; 110 → 3; 150 → a, b (150 ≤ 150), c, d = 4; 200 → 4.
    let inclusive = sweep_of(&stall_trace("inclusive"), &factors);
    let stall: Vec<&SweepEntry> = inclusive
        .iter()
        .filter(|e| e.factors.stall != 1.0)
        .collect();
    assert_eq!(inclusive[0].pass, 3);
    assert_eq!(
        stall.iter().map(|e| e.pass).collect::<Vec<_>>(),
        [2, 3, 4, 4]
    );
    assert_eq!(stall[0].classes["s"].stall_ms, Some(50.0));
    // Strict, declared 100: a misses (100 is not < 100): c, d = 2.
    // 50 → 2; 110 → a, c, d = 3; 150 → b still misses (150 is not < 150) = 3; 200 → 4.
    let strict = sweep_of(&stall_trace("strict"), &factors);
    let stall: Vec<u64> = strict
        .iter()
        .filter(|e| e.factors.stall != 1.0)
        .map(|e| e.pass)
        .collect();
    assert_eq!(strict[0].pass, 2);
    assert_eq!(stall, [2, 3, 3, 4]);
    // Fragility: the largest passing gap is a's 100 (down: factor 1), the
    // smallest gap of a row missing on stall alone is b's 150 (up: factor 1.5).
    let tipping = inclusive[0]
        .fragility
        .as_ref()
        .expect("declared")
        .tipping
        .clone();
    let stall = tipping.stall.expect("a stall gate is declared");
    assert_eq!(
        stall.down.map(|p| (p.threshold_ms, p.row_id)),
        Some((100.0, Some("a".into())))
    );
    assert_eq!(
        stall.up.map(|p| (p.factor, p.row_id)),
        Some((1.5, Some("b".into())))
    );
    assert!(tipping.ttfa.is_none(), "no class declares a TTFA gate");
}

/// The TTFA trace of tests/answers.rs, completed rows only (class `think`:
/// TTFT 1000, E2E 20000, TTFA 5000; window 10 s): a TTFA 5000, b no answer,
/// c TTFA 300, d TTFA 9000; all meet TTFT and E2E.
const THINK: &str = r#"{"schema": "goodput-trace/1",
  "window": {"startMs": 0, "endMs": 10000, "horizonMs": 10000}, "equality": "inclusive",
  "classes": {"think": {"ttftMs": 1000, "tpotMs": null, "e2eMs": 20000, "ttfaMs": 5000}},
  "rows": [
    {"id": "a", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200, "firstAnswerMs": 5000, "completedMs": 6000, "outputTokens": 50, "reasoningTokens": 30},
    {"id": "b", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200, "completedMs": 8000, "outputTokens": 100, "reasoningTokens": 100},
    {"id": "c", "arrivalMs": 0, "status": "completed", "firstTokenMs": 300, "firstAnswerMs": 300, "completedMs": 300, "outputTokens": 1},
    {"id": "d", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "firstAnswerMs": 9000, "completedMs": 9500, "outputTokens": 60, "reasoningTokens": 40}
  ]}"#;

#[test]
fn neighbouring_ttfa_gates_count_by_hand_and_a_row_without_answer_never_passes() {
    let entries = sweep_of(THINK, &DEFAULT_FACTORS);
    // Declared: a and c pass; b misses no_answer, d misses ttfa. (A sweep
    // once counted b and d as passes: it looked at TTFT/TPOT/E2E only.)
    assert_eq!(entries[0].pass, 2);
    let ttfa: Vec<(f64, u64)> = entries
        .iter()
        .filter(|e| e.factors.ttfa != 1.0)
        .map(|e| (e.factors.ttfa, e.pass))
        .collect();
    // 2500, 4000, 4500: only c; 5500, 6250, 7500: a, c; 10000: a, c, d (b never).
    assert_eq!(
        ttfa,
        [
            (0.5, 1),
            (0.8, 1),
            (0.9, 1),
            (1.1, 2),
            (1.25, 2),
            (1.5, 2),
            (2.0, 3)
        ]
    );
    // TTFT and E2E lines keep the TTFA gate: 2 everywhere (c's TTFT 300 at
    // 0.5 × 1000 still passes). TPOT lines stay (null gates stay null).
    // 1 declared + 3 × 7 latency lines + 7 TTFA lines; no stall line (none declared).
    assert_eq!(entries.len(), 1 + 21 + 7);
    assert!(entries.iter().all(|e| e.factors.stall == 1.0));
    let fragility = entries[0].fragility.as_ref().expect("declared");
    assert_eq!(fragility.near_gate.ttfa, Some(1), "a sits on its TTFA gate");
    assert_eq!(fragility.near_gate.stall, None);
    let up = fragility.tipping.ttfa.as_ref().and_then(|t| t.up.clone());
    assert_eq!(
        up.map(|p| (p.threshold_ms, p.row_id)),
        Some((9000.0, Some("d".into())))
    );
}

#[test]
fn factors_of_gates_a_line_does_not_move_are_not_written() {
    let entries = sweep_of(THINK, &[2.0]);
    let json = serde_json::to_value(&entries).expect("json");
    // The TTFT line moves only TTFT: three factors, as before stall and TTFA existed.
    assert_eq!(
        json[1]["factors"],
        json!({"ttft": 2.0, "tpot": 1.0, "e2e": 1.0})
    );
    assert_eq!(
        json[4]["factors"],
        json!({"ttft": 1.0, "tpot": 1.0, "e2e": 1.0, "ttfa": 2.0})
    );
    // And a receipt written before the two factors existed still reads.
    let old: SweepEntry = serde_json::from_value(json[1].clone()).expect("reads");
    assert_eq!((old.factors.stall, old.factors.ttfa), (1.0, 1.0));
}

#[test]
fn a_grid_moves_only_the_three_latency_gates() {
    let a = analysis(THINK.as_bytes());
    let plan = SweepPlan::grid(None, &[0.5, 2.0]).expect("plan");
    let entries = sweep(&a.trace, &a.judgements, &plan).expect("sweep");
    // The grid takes the given factors only: 2 × 2 × 2 = 8 triples (none
    // is 1, 1, 1), after the declared line.
    assert_eq!(entries.len(), 9);
    assert!(entries
        .iter()
        .all(|e| e.factors.ttfa == 1.0 && e.factors.stall == 1.0));
}

#[test]
fn the_table_names_a_moved_ttfa_gate_and_its_fragility() {
    let entries = sweep_of(THINK, &[2.0]);
    let text = goodput_render::sensitivity::render(&entries);
    // The TTFA line: factor 2 → gate 10000 ms, pass 3 (a, c, d), +1 from 2.
    let line = text
        .lines()
        .find(|l| l.contains("· ttfa 2"))
        .expect("a TTFA line");
    assert!(
        line.starts_with("hypothetical  1 / 1 / 1 · ttfa 2"),
        "{line}"
    );
    assert!(line.contains("think 1000/-/20000 ttfa 10000"), "{line}");
    assert!(line.split_whitespace().any(|w| w == "+1"), "{line}");
    // a's TTFA 5000 is the largest passing one (down at factor 1), d's
    // 9000 the smallest among rows missing on TTFA alone (up at 1.8).
    assert!(
        text.contains("ttfa         down: pass falls once the gate is below 5000 ms"),
        "{text}"
    );
    assert!(
        text.contains("up:   pass rises once the gate is at or above 9000 ms (+80.0 %"),
        "{text}"
    );
    assert!(text.contains("(ttft 0, tpot 0, e2e 0, ttfa 1)"), "{text}");
}
