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
/// values are common), every status, small integral times.
fn trace_strategy() -> impl Strategy<Value = Value> {
    let gate = prop_oneof![
        Just(None),
        (0u32..=8).prop_map(|g| Some(f64::from(g) * 50.0))
    ];
    let gates = (gate.clone(), gate.clone(), gate);
    let row = (
        0u8..4,        // status: 0, 1 completed; 2 failed; 3 in flight
        0u32..1000,    // arrival
        tie_prone(),   // ttft
        tie_prone(),   // completion after first token
        1u32..=5,      // output tokens
        any::<bool>(), // class b (when there are two)
    );
    (
        prop::collection::vec(gates, 1..=2),
        any::<bool>(),
        prop::collection::vec(row, 0..30),
    )
        .prop_map(|(classes, strict, rows)| {
            let names = ["a", "b"];
            let mut class_map = serde_json::Map::new();
            for (i, (t, p, e)) in classes.iter().enumerate() {
                class_map.insert(
                    names[i].to_owned(),
                    json!({"ttftMs": t, "tpotMs": p, "e2eMs": e}),
                );
            }
            let two = classes.len() == 2;
            let rows: Vec<Value> = rows
                .iter()
                .enumerate()
                .map(|(i, &(status, arrival, ttft, rest, tokens, b))| {
                    let mut row = match status {
                        0 | 1 => json!({"status": "completed", "firstTokenMs": arrival + ttft,
                                        "completedMs": arrival + ttft + rest, "outputTokens": tokens}),
                        2 => json!({"status": "failed", "reason": "timeout"}),
                        _ => json!({"status": "in_flight"}),
                    };
                    row["id"] = json!(format!("r{i}"));
                    row["arrivalMs"] = json!(arrival);
                    if two && b {
                        row["class"] = json!("b");
                    }
                    row
                })
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
