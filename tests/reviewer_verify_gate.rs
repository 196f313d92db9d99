//! `goodput verify` and `goodput gate` as library calls, on the reviewer
//! fixtures, with hand-computed expectations.

mod common;

use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::review::exact::Decimal;
use goodput_core::review::gate::{decide, Criteria, GateError};
use goodput_core::review::sensitivity::{sweep, SweepPlan, DEFAULT_FACTORS};
use goodput_core::review::verify::{read_receipt, verify, verify_oversized, VerifyError};
use goodput_core::trace::{ArrivalMode, Limits};
use goodput_util::json::to_canonical_json;
use serde_json::{json, Value};

const MIXED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/reviewer/mixed.json");
const CLOSED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/reviewer/closed-loop.json"
);
const TWO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/reviewer/two-classes.json"
);

fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(path).expect("fixture")
}

/// The JSON receipt `goodput analyze --json [--rows] [--sweep]` writes.
fn receipt_json(trace: &[u8], rows: bool, with_sweep: bool) -> Value {
    let options = AnalyzeOptions {
        limits: Limits::default(),
        rows,
        strict: false,
    };
    let mut a = analyze_bytes(trace, options).expect("accepted");
    if with_sweep {
        let plan = SweepPlan::one_at_a_time(None, &DEFAULT_FACTORS).expect("plan");
        a.receipt.sweep = Some(sweep(&a.trace, &a.judgements, &plan).expect("sweep"));
    }
    serde_json::from_slice(&to_canonical_json(&a.receipt).expect("json")).expect("json")
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec_pretty(v).expect("json")
}

// ------------------------------------------------------------------ verify

#[test]
fn a_receipt_verifies_against_its_own_trace() {
    let trace = fixture(MIXED);
    for (rows, with_sweep) in [(false, false), (true, false), (false, true), (true, true)] {
        let claimed =
            read_receipt(&bytes(&receipt_json(&trace, rows, with_sweep))).expect("receipt");
        let report = verify(&claimed, &trace);
        assert!(
            report.agrees(),
            "rows {rows}, sweep {with_sweep}: {report:#?}"
        );
        assert!(report.notes.is_empty());
    }
}

#[test]
fn a_changed_number_is_reported_by_path_with_both_values() {
    let trace = fixture(MIXED);
    let mut r = receipt_json(&trace, false, true);
    r["results"]["classes"]["chat"]["counts"]["pass"] = json!(6);
    r["sweep"][4]["goodputPerS"] = json!(0.7);
    let report = verify(&read_receipt(&bytes(&r)).expect("receipt"), &trace);
    assert!(report.sha256_matches);
    assert!(!report.agrees());
    let found: Vec<(&str, Option<&Value>, Option<&Value>)> = report
        .differences
        .iter()
        .map(|d| (d.path.as_str(), d.receipt.as_ref(), d.recomputed.as_ref()))
        .collect();
    // sweep/4 is TTFT × 1.1: pass 5 → goodput 0.5.
    assert_eq!(
        found,
        [
            (
                "/results/classes/chat/counts/pass",
                Some(&json!(6)),
                Some(&json!(5))
            ),
            ("/sweep/4/goodputPerS", Some(&json!(0.7)), Some(&json!(0.5))),
        ]
    );
}

#[test]
fn another_trace_is_reported_as_different_bytes_first_then_the_contract() {
    let claimed =
        read_receipt(&bytes(&receipt_json(&fixture(MIXED), false, false))).expect("receipt");
    let report = verify(&claimed, &fixture(TWO));
    assert!(!report.sha256_matches);
    assert_eq!(report.differences[0].path, "/trace/sha256");
    assert_eq!(report.differences[1].path, "/contract/equality");
    // Contract differences all come before any result difference.
    let first_other = report
        .differences
        .iter()
        .position(|d| d.path != "/trace/sha256" && !d.path.starts_with("/contract"))
        .expect("numbers differ too");
    assert!(report.differences[first_other..]
        .iter()
        .all(|d| !d.path.starts_with("/contract")));
}

#[test]
fn an_edited_trace_with_the_same_receipt_is_caught_by_its_hash() {
    let trace = fixture(MIXED);
    let claimed = read_receipt(&bytes(&receipt_json(&trace, false, false))).expect("receipt");
    // Same content, one more space: different bytes, same numbers.
    let mut edited = trace.clone();
    edited.push(b' ');
    let report = verify(&claimed, &edited);
    assert!(!report.agrees());
    let paths: Vec<&str> = report.differences.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(paths, ["/trace/sha256", "/trace/bytes"]);
}

#[test]
fn an_older_generator_of_the_same_major_is_accepted_and_named() {
    let trace = fixture(MIXED);
    let mut r = receipt_json(&trace, true, false);
    r["generator"]["version"] = json!("0.0.9");
    // Pretend an older version did not write the row index yet.
    if let Some(rows) = r["rows"].as_array_mut() {
        for row in rows {
            row.as_object_mut().expect("row").remove("index");
        }
    }
    let report = verify(&read_receipt(&bytes(&r)).expect("receipt"), &trace);
    assert!(report.agrees(), "{report:#?}");
    assert!(report.notes[0].contains("written by goodput 0.0.9"));
    assert!(report.notes[1].starts_with("not in the older receipt, so not compared: /rows/0/index"));
}

#[test]
fn the_same_generator_missing_a_field_is_a_difference() {
    let trace = fixture(MIXED);
    let mut r = receipt_json(&trace, false, false);
    r["results"]["all"]["rates"]
        .as_object_mut()
        .expect("rates")
        .remove("goodTokensPerS");
    let report = verify(&read_receipt(&bytes(&r)).expect("receipt"), &trace);
    assert_eq!(report.differences.len(), 1);
    assert_eq!(
        report.differences[0].path,
        "/results/all/rates/goodTokensPerS"
    );
    assert_eq!(report.differences[0].receipt, None);
}

#[test]
fn unreadable_receipts_are_errors() {
    assert!(matches!(
        read_receipt(b"{not json"),
        Err(VerifyError::NotJson(_))
    ));
    assert!(matches!(
        read_receipt(b"[1]"),
        Err(VerifyError::NotAReceipt(_))
    ));
    let mut r = receipt_json(&fixture(MIXED), false, false);
    r["schema"] = json!("goodput-receipt/2");
    assert_eq!(
        read_receipt(&bytes(&r)),
        Err(VerifyError::UnsupportedSchema {
            found: "goodput-receipt/2".into()
        })
    );
    // A trace given where the receipt belongs.
    let err = read_receipt(&fixture(MIXED)).unwrap_err();
    assert!(err.to_string().contains("wrong order"), "{err}");
    r["schema"] = json!("goodput-receipt/1");
    r["limits"] = json!({});
    assert!(matches!(
        read_receipt(&bytes(&r)),
        Err(VerifyError::NotAReceipt(_))
    ));
}

#[test]
fn a_trace_over_the_recorded_limit_cannot_be_the_one() {
    let claimed =
        read_receipt(&bytes(&receipt_json(&fixture(MIXED), false, false))).expect("receipt");
    let report = verify_oversized(&claimed, Some(70_000));
    assert!(!report.agrees());
    assert!(report
        .recompute_failed
        .as_deref()
        .is_some_and(|m| m.contains("70000 bytes, over the receipt's recorded limit of 65536")));
}

// -------------------------------------------------------------------- gate

fn mixed_receipt() -> goodput_core::receipt::Receipt {
    analyze_bytes(&fixture(MIXED), AnalyzeOptions::default())
        .expect("accepted")
        .receipt
}

fn dec(text: &str) -> Decimal {
    text.parse().expect("decimal")
}

fn criteria(min: &str) -> Criteria {
    Criteria {
        min_goodput_per_s: dec(min),
        margin: dec("0"),
        max_failure_share: dec("0.25"),
        max_censored_share: dec("0.1"),
        max_p95_ttft_ms: None,
        max_p95_e2e_ms: None,
        max_p95_ttfa_ms: None,
        class: None,
        max_p95_tpot_ms: None,
        p99: Default::default(),
        max_recovery_s: None,
        class_limits: Vec::new(),
        allow_closed_loop: false,
        allow_overload: false,
        gaps: Default::default(),
        energy: Default::default(),
    }
}

// mixed.json: goodput 5 / 10 s = 0.5; failure share 2 / 10 = 0.2; censored share 1 / 10 = 0.1;
// TTFT sorted 100, 100, 200, 500, 960, 1000, 1200 → p95 = rank ceil(0.95 × 7) = 7 → 1200;
// E2E sorted 200, 1500, 1960, 2000, 2200, 2500, 3100 → p95 = 3100.

#[test]
fn goodput_must_exceed_the_required_rate_with_its_margin() {
    let r = mixed_receipt();
    // 0.5 > 0.4 × (1 + 0.2) = 0.48 → admit.
    let d = decide(
        &r,
        &Criteria {
            margin: dec("0.2"),
            ..criteria("0.4")
        },
    )
    .expect("decide");
    assert!(d.admit, "{d:#?}");
    // 0.5 is not > 0.5: equal to the requirement is a refusal.
    let d = decide(&r, &criteria("0.5")).expect("decide");
    assert!(!d.admit);
    assert_eq!(d.checks[0].name, "goodput/s");
    assert!(!d.checks[0].pass);
    assert!(d.checks[1..].iter().all(|c| c.pass));
}

#[test]
fn shares_at_their_ceiling_pass_and_above_fail() {
    let r = mixed_receipt();
    // censored 0.1 <= 0.1 passes; failure 0.2 > 0.1 fails.
    let d = decide(
        &r,
        &Criteria {
            max_failure_share: dec("0.1"),
            ..criteria("0.1")
        },
    )
    .expect("decide");
    let by_name = |n: &str| d.checks.iter().find(|c| c.name == n).expect("check");
    assert!(!by_name("failure share").pass);
    assert_eq!(by_name("failure share").measured, Some(0.2));
    assert!(by_name("censored share").pass);
    assert!(!d.admit);
}

#[test]
fn tail_limits_are_checked_only_when_given() {
    let r = mixed_receipt();
    assert_eq!(
        decide(&r, &criteria("0.1")).expect("decide").checks.len(),
        3
    );
    let d = decide(
        &r,
        &Criteria {
            max_p95_ttft_ms: Some(dec("1200.0")),
            max_p95_e2e_ms: Some(dec("3000.0")),
            ..criteria("0.1")
        },
    )
    .expect("decide");
    // p95 TTFT 1200 <= 1200 passes; p95 E2E 3100 > 3000 fails.
    assert_eq!(d.checks[3].measured, Some(1200.0));
    assert!(d.checks[3].pass);
    assert_eq!(d.checks[4].measured, Some(3100.0));
    assert!(!d.checks[4].pass);
    assert!(!d.admit);
}

#[test]
fn one_class_can_be_gated_and_unknown_classes_are_refused() {
    let two = analyze_bytes(&fixture(TWO), AnalyzeOptions::default())
        .expect("accepted")
        .receipt;
    // batch: pass b1 of 3 in 4 s → 0.25/s; failed b3 → failure share 1/3.
    let c = Criteria {
        class: Some("batch".into()),
        max_failure_share: dec("0.5"),
        ..criteria("0.2")
    };
    let d = decide(&two, &c).expect("decide");
    assert_eq!(d.checks[0].measured, Some(0.25));
    assert!(d.admit, "{d:#?}");
    let err = decide(
        &two,
        &Criteria {
            class: Some("x".into()),
            ..criteria("0.2")
        },
    )
    .unwrap_err();
    assert!(matches!(err, GateError::UnknownClass { .. }));
}

#[test]
fn what_cannot_be_measured_fails() {
    let doc = json!({"schema": "goodput-trace/1", "window": {"startMs": 0, "endMs": 1000},
                     "equality": "inclusive", "classes": {"a": {"ttftMs": 1, "tpotMs": 1, "e2eMs": 1}},
                     "rows": []});
    let r = analyze_bytes(&bytes(&doc), AnalyzeOptions::default())
        .expect("accepted")
        .receipt;
    let d = decide(
        &r,
        &Criteria {
            max_p95_ttft_ms: Some(dec("1e9")),
            ..criteria("0.0")
        },
    )
    .expect("decide");
    // goodput 0 is not > 0; shares of an empty cohort and p95 of no rows are null → fail.
    assert!(d.checks.iter().all(|c| !c.pass), "{d:#?}");
    assert_eq!(d.checks[1].measured, None);
}

#[test]
fn out_of_range_flags_are_refused() {
    let r = mixed_receipt();
    for bad in [
        Criteria {
            min_goodput_per_s: dec("-0.5"),
            ..criteria("0.0")
        },
        Criteria {
            margin: dec("-0.1"),
            ..criteria("0.0")
        },
        Criteria {
            max_failure_share: dec("1.5"),
            ..criteria("0.0")
        },
        Criteria {
            max_p95_e2e_ms: Some(dec("-1.0")),
            ..criteria("0.0")
        },
    ] {
        assert!(
            matches!(decide(&r, &bad), Err(GateError::BadFlag { .. })),
            "{bad:?}"
        );
    }
}

#[test]
fn a_closed_loop_run_is_refused_unless_allowed_and_nothing_else_changes() {
    // closed-loop.json is mixed.json with boundary.arrival "closed-loop" and
    // workload.arrival "closed": the same figures, so 0.5 > 0.4 holds.
    let closed = analyze_bytes(&fixture(CLOSED), AnalyzeOptions::default())
        .expect("accepted")
        .receipt;
    assert_eq!(closed.contract.arrival_mode, ArrivalMode::ClosedLoop);
    assert_eq!(mixed_receipt().contract.arrival_mode, ArrivalMode::OpenLoop);
    let d = decide(&closed, &criteria("0.4")).expect("decide");
    assert!(d.checks.iter().all(|c| c.pass), "{d:#?}");
    assert!(!d.arrival.pass);
    assert!(!d.admit);
    let d = decide(
        &closed,
        &Criteria {
            allow_closed_loop: true,
            ..criteria("0.4")
        },
    )
    .expect("decide");
    assert!(d.arrival.pass && d.admit, "{d:#?}");
    // The same criteria admit the open-loop original.
    assert!(
        decide(&mixed_receipt(), &criteria("0.4"))
            .expect("decide")
            .admit
    );
}

/// 40 req/s offered for 10 s to a FIFO server that completes one request
/// every 50 ms (20/s), observed for 30 s more so that every request ends:
/// row i arrives at 25·i and completes (one token) at 50·(i + 1). With no
/// gate every completion passes: goodput 400 / 10 s = 40/s, twice what the
/// server sustains.
fn overloaded_with_a_long_grace() -> Vec<u8> {
    let rows: Vec<Value> = (0..400)
        .map(|i| {
            let done = 50.0 * (i + 1) as f64;
            json!({"id": format!("r{i}"), "arrivalMs": 25.0 * i as f64, "status": "completed",
                   "firstTokenMs": done, "completedMs": done, "outputTokens": 1})
        })
        .collect();
    serde_json::to_vec(&json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 10000, "horizonMs": 40000},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": null, "tpotMs": null, "e2eMs": null}},
        "rows": rows,
    }))
    .unwrap()
}

#[test]
fn gate_refuses_an_overloaded_run_whatever_its_goodput_unless_told_to_allow_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("overloaded.json");
    std::fs::write(&path, overloaded_with_a_long_grace()).unwrap();
    let run = |extra: &[&str]| {
        let out = common::goodput()
            .args([
                "gate",
                path.to_str().unwrap(),
                "--min-goodput",
                "20",
                "--max-bytes",
                "200000",
            ])
            .args(extra)
            .output()
            .unwrap();
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    let (code, text) = run(&[]);
    assert_eq!(code, Some(1), "{text}");
    // goodput 40/s > 20 passes its own line; the saturation line refuses.
    assert!(
        text.contains("saturation         overloaded  not overloaded               FAIL"),
        "{text}"
    );
    assert!(text.contains("REFUSE: 1 of"), "{text}");
    assert!(text.contains("(saturation)"), "{text}");
    let (code, text) = run(&["--allow-overload"]);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("allowed by --allow-overload"), "{text}");
    assert!(text.starts_with("") && text.contains("ADMIT"), "{text}");
}
