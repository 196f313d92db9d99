//! Properties that must hold for every trace, checked on generated ones.
//!
//! Timestamps and gates sit on a coarse grid (multiples of 100 ms), so rows
//! land exactly on their gates, on the window edges and on the horizon often:
//! the boundaries are where counting bugs live.

mod common;

use common::analyze_generated;
use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::receipt::{Block, Receipt};
use goodput_core::trace::Limits;
use proptest::prelude::*;
use serde_json::{json, Value};

fn gate() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        6 => (0u32..30).prop_map(|g| json!(g * 100)),
    ]
}

fn gates() -> impl Strategy<Value = Value> {
    (gate(), (0u32..10).prop_map(|g| json!(g * 10)), gate())
        .prop_map(|(t, p, e)| json!({"ttftMs": t, "tpotMs": p, "e2eMs": e}))
}

/// A row: mostly valid, sometimes broken in one of several ways.
fn row() -> impl Strategy<Value = Value> {
    (
        0u32..12,  // id: 0 shares "r-dup" with other rows; otherwise unique
        0u32..4,   // class: none, a, b, unknown
        0u32..120, // arrival / 100
        0u32..3,   // status
        0u32..30,  // ttft / 100
        0u32..40,  // decode time / 100
        1u32..6,   // output tokens
        0u32..12,  // corruption kind (0..=8: none)
    )
        .prop_map(
            |(id, class, arrival, status, ttft, decode, tokens, corrupt)| {
                let arrival = f64::from(arrival * 100);
                let first = arrival + f64::from(ttft * 100);
                let done = first + f64::from(decode * 100);
                let id = if id == 0 {
                    "r-dup".to_owned()
                } else {
                    String::new()
                };
                let mut r = json!({"id": id, "arrivalMs": arrival});
                let o = r.as_object_mut().unwrap();
                match class {
                    1 => {
                        o.insert("class".into(), json!("a"));
                    }
                    2 => {
                        o.insert("class".into(), json!("b"));
                    }
                    3 if corrupt == 9 => {
                        o.insert("class".into(), json!("zzz"));
                    }
                    _ => {}
                }
                match status {
                    0 => {
                        o.insert("status".into(), json!("completed"));
                        o.insert("firstTokenMs".into(), json!(first));
                        o.insert("completedMs".into(), json!(done));
                        o.insert("outputTokens".into(), json!(tokens));
                    }
                    1 => {
                        o.insert("status".into(), json!("failed"));
                        o.insert(
                            "reason".into(),
                            json!(if ttft % 2 == 0 { "timeout" } else { "http_503" }),
                        );
                        if decode % 3 != 0 {
                            o.insert("endedMs".into(), json!(done));
                        }
                    }
                    _ => {
                        o.insert("status".into(), json!("in_flight"));
                        if decode % 2 == 0 {
                            o.insert("firstTokenMs".into(), json!(first));
                        }
                    }
                }
                match corrupt {
                    10 => {
                        o.insert("arrivalMs".into(), json!("soon"));
                    }
                    11 => {
                        o.insert("firstTokenMs".into(), json!(arrival - 100.0));
                    }
                    _ => {}
                }
                r
            },
        )
}

prop_compose! {
    fn trace()(
        mut rows in prop::collection::vec(row(), 0..40),
        a in gates(),
        b in gates(),
        strict in any::<bool>(),
        horizon in 0u32..30,
    ) -> Value {
        for (i, r) in rows.iter_mut().enumerate() {
            if r["id"] == json!("") {
                r["id"] = json!(format!("r{i}"));
            }
        }
        json!({
            "schema": "goodput-trace/1",
            "window": {"startMs": 1000, "endMs": 10000, "horizonMs": 10000 + horizon * 100},
            "warmup": {"startMs": 0, "endMs": 1000},
            "equality": if strict { "strict" } else { "inclusive" },
            "classes": {"a": a, "b": b},
            "defaultClass": "a",
            "rows": rows,
        })
    }
}

fn analyze(doc: &Value) -> Receipt {
    analyze_generated(&serde_json::to_vec(doc).unwrap()).receipt
}

fn blocks(r: &Receipt) -> impl Iterator<Item = &Block> {
    std::iter::once(&r.results.all).chain(r.results.classes.values())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn counts_add_up_and_every_receipt_matches_the_schema(doc in trace()) {
        let r = analyze(&doc);
        static RECEIPT_SCHEMA: std::sync::OnceLock<jsonschema::Validator> = std::sync::OnceLock::new();
        let schema = RECEIPT_SCHEMA.get_or_init(|| common::validator("receipt.schema.json"));
        let json: Value = serde_json::from_str(&common::receipt_text(&r)).unwrap();
        common::assert_valid(schema, &json, "generated receipt");
        for b in blocks(&r) {
            let c = b.counts;
            prop_assert_eq!(c.pass + c.miss + c.failed + c.censored, c.cohort);
            prop_assert_eq!(c.cohort + c.excluded + c.invalid, c.arrivals);
        }
        prop_assert_eq!(r.results.all.counts.arrivals, doc["rows"].as_array().unwrap().len() as u64);
    }

    #[test]
    fn reordering_rows_changes_no_number(doc in trace(), seed in any::<u64>()) {
        let mut shuffled = doc.clone();
        let rows = shuffled["rows"].as_array_mut().unwrap();
        // Fisher–Yates with a tiny deterministic generator.
        let mut s = seed | 1;
        for i in (1..rows.len()).rev() {
            s ^= s << 13; s ^= s >> 7; s ^= s << 17;
            rows.swap(i, (s % (i as u64 + 1)) as usize);
        }
        prop_assert_eq!(analyze(&doc).results, analyze(&shuffled).results);
    }

    #[test]
    fn loosening_a_gate_never_lowers_pass(doc in trace(), which in 0usize..3, class in 0usize..2, by in 1u32..20) {
        let key = ["ttftMs", "tpotMs", "e2eMs"][which];
        let name = ["a", "b"][class];
        let mut loose = doc.clone();
        let g = &mut loose["classes"][name][key];
        if let Some(x) = g.as_f64() {
            *g = json!(x + f64::from(by * 50));
        }
        let before = analyze(&doc).results.all.counts.pass;
        prop_assert!(analyze(&loose).results.all.counts.pass >= before);
        // Removing the gate altogether is the loosest setting.
        let mut none = doc.clone();
        none["classes"][name][key] = Value::Null;
        prop_assert!(analyze(&none).results.all.counts.pass >= before);
    }

    #[test]
    fn strict_never_passes_more_rows_than_inclusive(doc in trace()) {
        let mut inclusive = doc.clone();
        inclusive["equality"] = json!("inclusive");
        let mut strict = doc;
        strict["equality"] = json!("strict");
        let (i, s) = (analyze(&inclusive), analyze(&strict));
        for (bi, bs) in blocks(&i).zip(blocks(&s)) {
            prop_assert!(bs.counts.pass <= bi.counts.pass);
            prop_assert_eq!(bs.counts.cohort, bi.counts.cohort);
        }
    }

    #[test]
    fn dropping_a_miss_row_never_lowers_pass_share(doc in trace(), pick in any::<prop::sample::Index>()) {
        let options = AnalyzeOptions { rows: true, limits: Limits { max_rows: 1000, max_bytes: 1 << 20 }, strict: false };
        let before = analyze_bytes(&serde_json::to_vec(&doc).unwrap(), options).unwrap().receipt;
        let misses: Vec<u64> = before.rows.as_ref().unwrap().iter()
            .filter(|r| r.verdict == "miss").map(|r| r.index).collect();
        prop_assume!(!misses.is_empty());
        let drop = misses[pick.index(misses.len())] as usize;
        let mut fewer = doc.clone();
        fewer["rows"].as_array_mut().unwrap().remove(drop);
        let after = analyze(&fewer);
        let share = |r: &Receipt| r.results.all.rates.pass_share.unwrap_or(0.0);
        prop_assert!(share(&after) >= share(&before));
        prop_assert_eq!(after.results.all.counts.pass, before.results.all.counts.pass);
    }
}

/// Any JSON value, nested a few levels.
fn any_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |x| x.is_finite())
            .prop_map(|x| json!(x)),
        "[a-zA-Z_]{0,12}".prop_map(Value::String),
        prop::sample::select(vec![
            "goodput-trace/1",
            "completed",
            "failed",
            "in_flight",
            "inclusive",
            "strict",
            "id",
            "arrivalMs",
            "status",
            "firstTokenMs",
            "completedMs",
            "outputTokens",
        ])
        .prop_map(|s| json!(s)),
    ];
    leaf.prop_recursive(4, 64, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::btree_map(
                prop::sample::select(vec![
                    "schema",
                    "window",
                    "startMs",
                    "endMs",
                    "horizonMs",
                    "warmup",
                    "equality",
                    "classes",
                    "a",
                    "ttftMs",
                    "tpotMs",
                    "e2eMs",
                    "rows",
                    "id",
                    "arrivalMs",
                    "status",
                    "firstTokenMs",
                    "completedMs",
                    "outputTokens",
                    "reason",
                    "endedMs",
                    "labels",
                    "class",
                    "tokens",
                    "defaultClass",
                    "x",
                ])
                .prop_map(str::to_owned),
                inner,
                0..8,
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

fn ends_in_receipt_or_rejection(bytes: &[u8]) {
    // Ok → exit 0; Err(Rejection) → exit 2. Anything else (a panic) fails the test.
    let options = AnalyzeOptions {
        limits: Limits {
            max_rows: 10_000,
            max_bytes: 1 << 20,
        },
        ..AnalyzeOptions::default()
    };
    if let Ok(a) = analyze_bytes(bytes, options) {
        let c = a.receipt.results.all.counts;
        assert_eq!(c.cohort + c.excluded + c.invalid, c.arrivals);
        goodput_util::json::to_canonical_json(&a.receipt).expect("renders");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        ends_in_receipt_or_rejection(&bytes);
    }

    #[test]
    fn arbitrary_json_values_never_panic(v in any_json()) {
        ends_in_receipt_or_rejection(&serde_json::to_vec(&v).unwrap());
    }

    #[test]
    fn arbitrary_rows_in_a_valid_shell_never_panic(rows in prop::collection::vec(any_json(), 0..12), two in any::<bool>()) {
        let classes = if two {
            json!({"a": {"ttftMs": 1, "tpotMs": null, "e2eMs": 5}, "b": {"ttftMs": null, "tpotMs": null, "e2eMs": null}})
        } else {
            json!({"a": {"ttftMs": 1, "tpotMs": null, "e2eMs": 5}})
        };
        let doc = json!({"schema": "goodput-trace/1", "window": {"startMs": -5, "endMs": 5},
                         "equality": "strict", "classes": classes, "rows": rows});
        ends_in_receipt_or_rejection(&serde_json::to_vec(&doc).unwrap());
    }
}

proptest! {
    // Through the real binary: a handful of cases, since each spawns a process.
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn the_binary_exits_0_or_2_on_any_input(v in any_json(), raw in prop::collection::vec(any::<u8>(), 0..64), use_raw in any::<bool>()) {
        use std::io::Write;
        let bytes = if use_raw { raw } else { serde_json::to_vec(&v).unwrap() };
        let mut child = common::goodput()
            .args(["analyze", "-", "--json"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(&bytes).unwrap();
        let out = child.wait_with_output().unwrap();
        let code = out.status.code();
        prop_assert!(code == Some(0) || code == Some(2), "exit {:?}: {}", code, String::from_utf8_lossy(&out.stderr));
        prop_assert!(!String::from_utf8_lossy(&out.stderr).contains("panicked"));
    }
}

/// `digits / 10^scale` written as a decimal (`15`, 1 → `"1.5"`).
fn decimal_text(digits: u64, scale: u32) -> String {
    let s = format!("{digits:0>width$}", width = scale as usize + 1);
    let (whole, fraction) = s.split_at(s.len() - scale as usize);
    if fraction.is_empty() {
        whole.to_owned()
    } else {
        format!("{whole}.{fraction}")
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Milliseconds with three decimals, as the recorder writes them.
fn ms3(thousandths: u64) -> Value {
    json!(thousandths as f64 / 1000.0)
}

prop_compose! {
    /// A recorder-shaped trace: timestamps with three decimals, a window that
    /// does not start or end on a whole millisecond, and many classes. Rates
    /// and means over such windows are 17-digit decimals: the numbers a
    /// receipt must read back exactly for `verify` to agree.
    fn recorded_trace()(
        start in 0u64..5_000_000,
        length in 1_000_000u64..60_000_000,
        n_classes in 2usize..12,
        gates in prop::collection::vec((1u64..3_000_000, 1u64..200_000, 1u64..30_000_000), 12),
        rows in prop::collection::vec((0u64..1_000_000, 0usize..12, 0u64..3_000_000, 0u64..20_000_000, 1u32..500, 0u32..10), 1..80),
    ) -> Value {
        let end = start + length;
        let classes: serde_json::Map<String, Value> = gates.iter().take(n_classes).enumerate()
            .map(|(i, (t, p, e))| (format!("class-{i}"), json!({"ttftMs": ms3(*t), "tpotMs": ms3(*p), "e2eMs": ms3(*e)})))
            .collect();
        let rows: Vec<Value> = rows.iter().enumerate().map(|(i, (at, class, ttft, decode, tokens, kind))| {
            // Arrivals spread over the window (and a little past its end).
            let arrival = start + at * (length + length / 10) / 1_000_000;
            let first = arrival + ttft;
            let done = first + decode;
            let class = format!("class-{}", class % n_classes);
            match kind {
                0 => json!({"id": format!("r{i}"), "class": class, "arrivalMs": ms3(arrival),
                            "status": "failed", "reason": "http_503", "endedMs": ms3(first)}),
                1 => json!({"id": format!("r{i}"), "class": class, "arrivalMs": ms3(arrival),
                            "status": "in_flight", "firstTokenMs": ms3(first)}),
                _ => json!({"id": format!("r{i}"), "class": class, "arrivalMs": ms3(arrival),
                            "status": "completed", "firstTokenMs": ms3(first),
                            "completedMs": ms3(done), "outputTokens": tokens}),
            }
        }).collect();
        json!({
            "schema": "goodput-trace/1",
            "window": {"startMs": ms3(start), "endMs": ms3(end), "horizonMs": ms3(end + 30_000_000)},
            "equality": "inclusive",
            "classes": classes,
            "rows": rows,
        })
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// A goodput exactly equal to `R × (1 + margin)` never admits, one more
    /// pass always does, whatever the digits of R and margin and the window.
    #[test]
    fn a_goodput_equal_to_the_requirement_always_refuses(
        a in 1u64..=1_000_000, k in 0u32..=4,
        b in 0u64..1000, j in 0u32..=3,
        t in 1u64..=1000, start in 0u64..(1 << 20),
    ) {
        use goodput_core::review::exact::{goodput_exceeds, Decimal};
        let b = b % 10u64.pow(j);
        let rate: Decimal = decimal_text(a, k).parse().expect("rate");
        let margin: Decimal = decimal_text(b, j).parse().expect("margin");
        // required = a (10^j + b) / 10^(k + j) per s; over W ms that is
        // a (10^j + b) W / 10^(k + j + 3) requests. W = t × D / g makes it the
        // integer t × N / g.
        let n = a * (10u64.pow(j) + b);
        let d = 10u64.pow(k + j + 3);
        let g = gcd(n, d);
        let (window_ms, pass) = (t * d / g, t * (n / g));
        let (start_ms, end_ms) = (start as f64, (start + window_ms) as f64);
        prop_assert!(!goodput_exceeds(pass, start_ms, end_ms, &rate, &margin),
            "{pass} in {window_ms} ms vs {rate} × (1 + {margin})");
        prop_assert!(goodput_exceeds(pass + 1, start_ms, end_ms, &rate, &margin));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every honest receipt verifies: plain, with `--rows`, with `--sweep` and
    /// with raised limits, each written, read back and recomputed.
    #[test]
    fn every_recorded_shape_receipt_verifies_against_its_trace(doc in recorded_trace()) {
        let bytes = serde_json::to_vec(&doc).unwrap();
        let outcome = goodput_selfcheck::check_trace_bytes(&bytes);
        prop_assert!(matches!(outcome, Ok(Some(_))), "{:?}", outcome.err());
    }
}
