//! `goodput mutate` must be able to fail: run against deliberately broken
//! calculators, each mutation aimed at the break must say NOT CAUGHT; run
//! against the real analyzer, every applicable mutation is caught.

use std::collections::HashMap;

use goodput_core::receipt::{Block, Receipt};
use goodput_core::review::mutate::{
    check, Analyzer, Calculator, MutateError, MutationReport, Status,
};
use goodput_core::trace::{Limits, Rejection};
use serde_json::{json, Value};

const MIXED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/reviewer/mixed.json");
const TWO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/reviewer/two-classes.json"
);

fn real() -> Analyzer {
    Analyzer::for_mutations_of(Limits::default())
}

fn status(report: &MutationReport, name: &str) -> Status {
    report
        .mutations
        .iter()
        .find(|m| m.name == name)
        .map(|m| m.status)
        .unwrap_or_else(|| panic!("no mutation {name}"))
}

fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(path).expect("fixture")
}

fn blocks(r: &mut Receipt) -> impl Iterator<Item = &mut Block> {
    std::iter::once(&mut r.results.all).chain(r.results.classes.values_mut())
}

/// Broken: failed rows are left out of the denominator (cohort − failed).
struct FailuresOutOfDenominator;

impl Calculator for FailuresOutOfDenominator {
    fn receipt(&self, bytes: &[u8]) -> Result<Receipt, Rejection> {
        let mut r = real().receipt(bytes)?;
        for b in blocks(&mut r) {
            let c = &mut b.counts;
            c.cohort -= c.failed;
            let cohort = c.cohort;
            let share = |part: u64| (cohort > 0).then(|| part as f64 / cohort as f64);
            b.rates.pass_share = share(c.pass);
            b.rates.failure_share = share(c.failed);
            b.rates.censored_share = share(c.censored);
        }
        Ok(r)
    }
}

/// Broken: `strict` is judged as `inclusive` (and the receipt still says strict).
struct StrictAsInclusive;

impl Calculator for StrictAsInclusive {
    fn receipt(&self, bytes: &[u8]) -> Result<Receipt, Rejection> {
        let mut doc: Value = serde_json::from_slice(bytes).expect("json");
        let declared = doc["equality"].clone();
        doc["equality"] = json!("inclusive");
        let mut r = real().receipt(&serde_json::to_vec(&doc).expect("json"))?;
        if let Some(eq) = declared.as_str() {
            r.contract.equality = eq.to_owned();
        }
        Ok(r)
    }
}

/// Broken: duplicate ids are not noticed (each row is judged on its own).
struct IgnoresDuplicates;

impl Calculator for IgnoresDuplicates {
    fn receipt(&self, bytes: &[u8]) -> Result<Receipt, Rejection> {
        let mut doc: Value = serde_json::from_slice(bytes).expect("json");
        let mut seen: HashMap<String, u32> = HashMap::new();
        let mut renamed: HashMap<String, String> = HashMap::new();
        if let Some(rows) = doc["rows"].as_array_mut() {
            for (i, row) in rows.iter_mut().enumerate() {
                if let Some(id) = row["id"].as_str().map(str::to_owned) {
                    let n = seen.entry(id.clone()).or_insert(0);
                    *n += 1;
                    if *n > 1 {
                        let unique = format!("{id}~copy{i}");
                        renamed.insert(unique.clone(), id);
                        row["id"] = json!(unique);
                    }
                }
            }
        }
        let mut r = real().receipt(&serde_json::to_vec(&doc).expect("json"))?;
        for row in r.rows.iter_mut().flatten() {
            if let Some(original) = row.id.as_ref().and_then(|id| renamed.get(id)) {
                row.id = Some(original.clone());
            }
        }
        Ok(r)
    }
}

/// Broken in a way no mutation here aims at: it does not report rows.
struct NoRows;

impl Calculator for NoRows {
    fn receipt(&self, bytes: &[u8]) -> Result<Receipt, Rejection> {
        let mut r = real().receipt(bytes)?;
        r.rows = None;
        Ok(r)
    }
}

#[test]
fn the_real_analyzer_is_caught_on_every_mutation_of_the_mixed_fixture() {
    // mixed.json has pass 5, miss 2, failed 2, censored 1, invalid 1, inclusive
    // equality and two passing rows on a gate (p2 ttft 1000, p4 tpot 50): all
    // nine mutations apply but the stall one (no row carries gapsMs) and the
    // answer one (no class declares ttfaMs).
    let report = check(&fixture(MIXED), &real()).expect("check runs");
    assert_eq!(
        (report.caught, report.not_caught, report.not_applicable),
        (7, 0, 2),
        "{report:#?}"
    );
    assert!(report.passed());
    assert!(report.notes.is_empty());
}

#[test]
fn observed_effects_are_the_hand_computed_ones() {
    let report = check(&fixture(MIXED), &real()).expect("check runs");
    let observed = |name: &str| {
        report
            .mutations
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| m.observed.clone())
            .unwrap_or_default()
    };
    // Dropping m1, m2: cohort 10 → 8, pass share 5/10 → 5/8 = 0.625, goodput 5/10 s stays 0.5.
    assert!(observed("drop_miss").contains("passShare 0.5 → 0.625"));
    assert!(observed("drop_miss").contains("goodput/s 0.5 → 0.5"));
    // Dropping c1: 5/10 → 5/9 = 0.5555…, shown to three decimals (the JSON
    // report's numbers elsewhere stay exact; this is a sentence for people).
    assert!(observed("drop_censored").contains("passShare 0.5 → 0.556;"));
    // p1 (first passing row, TTFT 500) pushed to 1000 + 1 ms.
    assert!(observed("push_past_ttft").contains("row \"p1\" TTFT 500 → 1001 ms; pass 5 → 4"));
    // Two passing rows sit on a gate: strict drops both.
    assert!(observed("flip_equality").contains("pass 5 → 3"));
    // Appending a copy of p1: p1 and its copy invalid (1 → 3), pass 5 → 4.
    assert!(observed("duplicate_id").contains("pass 5 → 4; invalid 1 → 3; duplicate_id 0 → 2"));
}

#[test]
fn failures_left_out_of_the_denominator_are_not_caught() {
    let report = check(&fixture(MIXED), &FailuresOutOfDenominator).expect("check runs");
    // Dropping failed rows cannot raise a share whose denominator never had them.
    assert_eq!(status(&report, "drop_failed"), Status::NotCaught);
    assert!(!report.passed());
}

#[test]
fn strict_read_as_inclusive_is_not_caught() {
    let report = check(&fixture(MIXED), &StrictAsInclusive).expect("check runs");
    // Flipping to strict should drop p2 and p4; read as inclusive, pass stays 5.
    assert_eq!(status(&report, "flip_equality"), Status::NotCaught);
    assert!(!report.passed());
}

#[test]
fn ignored_duplicates_are_not_caught() {
    let report = check(&fixture(MIXED), &IgnoresDuplicates).expect("check runs");
    // The copy of p1 passes too: pass rises to 6 instead of falling to 4.
    assert_eq!(status(&report, "duplicate_id"), Status::NotCaught);
    assert!(!report.passed());
}

#[test]
fn mutations_without_their_precondition_say_why() {
    // two-classes.json is strict, has no invalid row and no censored row
    // (pass c1, b1; miss c2, b2; failed b3).
    let report = check(&fixture(TWO), &real()).expect("check runs");
    let why = |name: &str| {
        report
            .mutations
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| m.why_not_applicable.clone())
    };
    assert_eq!(
        why("drop_invalid").as_deref(),
        Some("there is no invalid row to drop")
    );
    assert_eq!(
        why("flip_equality").as_deref(),
        Some("the trace already declares strict equality")
    );
    assert_eq!(
        why("drop_censored").as_deref(),
        Some("there is no censored row to drop")
    );
    assert_eq!(
        (report.caught, report.not_caught, report.not_applicable),
        (4, 0, 5)
    );
}

#[test]
fn a_trace_with_no_rows_has_nothing_applicable_and_still_passes() {
    let doc = json!({"schema": "goodput-trace/1", "window": {"startMs": 0, "endMs": 1000},
                     "equality": "inclusive", "classes": {"a": {"ttftMs": 1, "tpotMs": 1, "e2eMs": 1}},
                     "rows": []});
    let report = check(&serde_json::to_vec(&doc).expect("json"), &real()).expect("check runs");
    assert_eq!(
        (report.caught, report.not_caught, report.not_applicable),
        (0, 0, 9)
    );
    assert!(report.passed());
    assert!(report
        .mutations
        .iter()
        .all(|m| m.status == Status::NotApplicable && m.why_not_applicable.is_some()));
}

#[test]
fn a_calculator_without_row_verdicts_cannot_be_checked() {
    assert_eq!(
        check(&fixture(MIXED), &NoRows).unwrap_err(),
        MutateError::NoRows
    );
}

#[test]
fn a_rejected_trace_is_an_error_not_a_verdict() {
    let err = check(b"{\"schema\": \"nope\"}", &real()).unwrap_err();
    assert!(matches!(err, MutateError::Rejected(_)), "{err:?}");
}
