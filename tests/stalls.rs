//! Gaps between token-carrying stream events (docs/contract.md §10.15): the
//! row field `gapsMs`, the class gate `stallMs`, the receipt's gap
//! distribution and fluidity, each against figures computed by hand.

mod common;

use goodput_core::analyze::{analyze_bytes, Analysis, AnalyzeOptions};
use goodput_core::trace::write::{RowStatus, TraceRow};
use goodput_core::trace::{Labels, Limits};

fn analyze(trace: &str) -> Analysis {
    analyze_bytes(
        trace.as_bytes(),
        AnalyzeOptions {
            rows: true,
            limits: Limits {
                max_rows: 10_000,
                max_bytes: 64 << 20,
            },
            ..AnalyzeOptions::default()
        },
    )
    .expect("a valid trace")
}

/// Class `chat`: TTFT 1000, no TPOT gate, E2E 10000, stall 100, token
/// deadline 100. By hand:
/// - a: gaps 100, 100, 100 (largest 100, on the gate): inclusive pass,
///   strict miss `stall`; 4 tokens, 3 gaps: one token per event;
/// - b: one token, `gapsMs: []`: not judged on stall, pass;
/// - c: no `gapsMs`: not judged on stall, pass (E2E 5000);
/// - d: gaps 50, 300 (largest 300 at position 1): miss `stall` under both.
fn stall_trace(equality: &str) -> String {
    format!(
        r#"{{
  "schema": "goodput-trace/1",
  "window": {{"startMs": 0, "endMs": 10000}},
  "equality": "{equality}",
  "classes": {{"chat": {{"ttftMs": 1000, "tpotMs": null, "e2eMs": 10000, "stallMs": 100, "tokenDeadlineMs": 100}}}},
  "rows": [
    {{"id": "a", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "completedMs": 400, "outputTokens": 4, "gapsMs": [100, 100, 100]}},
    {{"id": "b", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "completedMs": 100, "outputTokens": 1, "gapsMs": []}},
    {{"id": "c", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "completedMs": 5000, "outputTokens": 3}},
    {{"id": "d", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "completedMs": 450, "outputTokens": 3, "gapsMs": [50, 300]}}
  ]
}}"#
    )
}

fn verdicts(a: &Analysis) -> Vec<(String, Vec<String>)> {
    a.receipt
        .rows
        .as_ref()
        .unwrap()
        .iter()
        .map(|r| (r.verdict.clone(), r.reasons.clone()))
        .collect()
}

fn v(verdict: &str, reasons: &[&str]) -> (String, Vec<String>) {
    (
        verdict.to_owned(),
        reasons.iter().map(|s| s.to_string()).collect(),
    )
}

#[test]
fn a_stall_exactly_on_the_gate_passes_inclusive_and_misses_strict() {
    let inclusive = analyze(&stall_trace("inclusive"));
    assert_eq!(
        verdicts(&inclusive),
        [
            v("pass", &[]),
            v("pass", &[]),
            v("pass", &[]),
            v("miss", &["stall"])
        ]
    );
    let b = &inclusive.receipt.results.classes["chat"];
    assert_eq!((b.counts.pass, b.counts.miss), (3, 1));
    assert_eq!(b.reasons.miss.stall, Some(1));
    let strict = analyze(&stall_trace("strict"));
    assert_eq!(
        verdicts(&strict),
        [
            v("miss", &["stall"]),
            v("pass", &[]),
            v("pass", &[]),
            v("miss", &["stall"])
        ]
    );
    let b = &strict.receipt.results.all;
    assert_eq!((b.counts.pass, b.counts.miss), (2, 2));
    assert_eq!(b.reasons.miss.stall, Some(2));
}

#[test]
fn rows_without_gaps_are_counted_as_not_judged_on_stall() {
    let a = analyze(&stall_trace("inclusive"));
    let gaps = a.receipt.results.classes["chat"].gaps.as_ref().unwrap();
    // b (one token, no gap) and c (no gapsMs).
    assert_eq!(gaps.not_judged_on_stall, 2);
    assert_eq!(gaps.rows, 2);
    assert_eq!(gaps.label, "interTokenLatency");
    let rows = a.receipt.rows.as_ref().unwrap();
    let largest: Vec<(Option<f64>, Option<u64>)> = rows
        .iter()
        .map(|r| (r.max_gap_ms, r.max_gap_index))
        .collect();
    assert_eq!(
        largest,
        [
            (Some(100.0), Some(0)),
            (None, None),
            (None, None),
            (Some(300.0), Some(1))
        ]
    );
}

/// Pooled gaps 100, 100, 100, 50, 300 → sorted 50, 100, 100, 100, 300:
/// mean 650 / 5 = 130; p50 rank 3 → 100; p90, p95, p99 rank 5 → 300.
/// Largest gaps 100, 300: p50 rank 1 → 100, p99 rank 2 → 300, mean 200.
#[test]
fn the_gap_distribution_is_the_nearest_rank_summary_by_hand() {
    let a = analyze(&stall_trace("inclusive"));
    let gaps = a.receipt.results.all.gaps.as_ref().unwrap();
    let g = &gaps.gap_ms;
    assert_eq!(
        (g.n, g.min, g.mean, g.p50, g.p90, g.p99, g.max),
        (
            5,
            Some(50.0),
            Some(130.0),
            Some(100.0),
            Some(300.0),
            Some(300.0),
            Some(300.0)
        )
    );
    let l = &gaps.largest_gap_ms;
    assert_eq!(
        (l.n, l.mean, l.p50, l.p99),
        (2, Some(200.0), Some(100.0), Some(300.0))
    );
}

/// d = 100. Inclusive: a meets 100 ≤ 100, 200 ≤ 200, 300 ≤ 300 (3 of 3);
/// d meets 50 ≤ 100, misses 350 > 200 (1 of 2): 4 of 5 = 0.8. Strict: a
/// misses every deadline (100 < 100 is false, and each miss restarts the
/// schedule), d meets 50 < 100 and misses 350: 1 of 5 = 0.2.
#[test]
fn fluidity_counts_deadlines_met_with_the_schedule_restarted_at_each_miss() {
    let inclusive = analyze(&stall_trace("inclusive"));
    let f = inclusive.receipt.results.all.gaps.as_ref().unwrap();
    let f = f.fluidity.as_ref().unwrap();
    assert_eq!((f.deadlines, f.met, f.share), (5, 4, Some(0.8)));
    let strict = analyze(&stall_trace("strict"));
    let f = strict.receipt.results.all.gaps.as_ref().unwrap();
    let f = f.fluidity.as_ref().unwrap();
    assert_eq!((f.deadlines, f.met, f.share), (5, 1, Some(0.2)));
}

/// The contract's worked example as a trace: d = 50, gaps 40, 40, 120, 30,
/// 60 (sum 290), 6 tokens: 4 of 5 deadlines met.
#[test]
fn the_contract_example_gives_fluidity_four_fifths() {
    let trace = r#"{
  "schema": "goodput-trace/1",
  "window": {"startMs": 0, "endMs": 10000},
  "equality": "inclusive",
  "classes": {"chat": {"ttftMs": null, "tpotMs": null, "e2eMs": null, "tokenDeadlineMs": 50}},
  "rows": [
    {"id": "x", "arrivalMs": 0, "status": "completed", "firstTokenMs": 10, "completedMs": 300, "outputTokens": 6, "gapsMs": [40, 40, 120, 30, 60]}
  ]
}"#;
    let a = analyze(trace);
    let block = &a.receipt.results.all;
    let f = block.gaps.as_ref().unwrap().fluidity.as_ref().unwrap();
    assert_eq!((f.deadlines, f.met, f.share), (5, 4, Some(0.8)));
    // No stall gate: no stall count, and the row is a pass.
    assert_eq!(block.reasons.miss.stall, None);
    assert_eq!(block.counts.pass, 1);
}

/// With usage tokens, an event carrying several tokens makes the figure
/// inter-event: 10 tokens in 3 gaps (4 events).
#[test]
fn fewer_gaps_than_tokens_is_called_inter_event_latency() {
    let trace = r#"{
  "schema": "goodput-trace/1",
  "window": {"startMs": 0, "endMs": 10000},
  "equality": "inclusive",
  "classes": {"chat": {"ttftMs": 1000, "tpotMs": 50, "e2eMs": 10000}},
  "rows": [
    {"id": "x", "arrivalMs": 0, "status": "completed", "firstTokenMs": 10, "completedMs": 100, "outputTokens": 10, "gapsMs": [30, 30, 30]}
  ]
}"#;
    let a = analyze(trace);
    let gaps = a.receipt.results.all.gaps.as_ref().unwrap();
    assert_eq!(gaps.label, "interEventLatency");
    assert_eq!(gaps.fluidity, None);
    assert_eq!(gaps.not_judged_on_stall, 0);
}

/// A trace without gaps and without stall gates has no `gaps` block and
/// no `stall` count: earlier receipts keep their bytes.
#[test]
fn a_trace_without_gaps_gets_no_gap_figures() {
    let a = common::analyze_fixture("spec_example.json");
    assert!(a.receipt.results.all.gaps.is_none());
    assert_eq!(a.receipt.results.all.reasons.miss.stall, None);
    let text = common::receipt_text(&a.receipt);
    assert!(!text.contains("gap") && !text.contains("stall"), "{text}");
}

/// A small deterministic generator (no clock, no seed from outside).
fn lcg(state: &mut u64) -> f64 {
    *state = state
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    ((*state >> 33) % 10_000) as f64 / 100.0
}

/// Nearest rank, computed here directly: the value at 1-based rank
/// ceil(p × n / 100).
fn nearest_rank(sorted: &[f64], p: usize) -> f64 {
    let rank = (p * sorted.len()).div_ceil(100).max(1);
    sorted[rank - 1]
}

#[test]
fn the_gap_distribution_matches_a_direct_computation() {
    let mut state = 7u64;
    let mut rows = Vec::new();
    let mut pooled = Vec::new();
    let mut largest = Vec::new();
    for i in 0..40 {
        let k = 1 + (i * 7) % 23;
        let gaps: Vec<f64> = (0..k).map(|_| lcg(&mut state)).collect();
        let sum: f64 = gaps.iter().sum();
        pooled.extend_from_slice(&gaps);
        largest.push(gaps.iter().copied().fold(f64::MIN, f64::max));
        rows.push(serde_json::json!({
            "id": format!("r{i}"), "arrivalMs": i * 10, "status": "completed",
            "firstTokenMs": i * 10 + 5, "completedMs": (i * 10 + 5) as f64 + sum + 1.0,
            "outputTokens": k + 1, "gapsMs": gaps,
        }));
    }
    let trace = serde_json::json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 10000},
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": null, "tpotMs": null, "e2eMs": null, "stallMs": 90}},
        "rows": rows,
    });
    let a = analyze(&trace.to_string());
    pooled.sort_by(f64::total_cmp);
    largest.sort_by(f64::total_cmp);
    let gaps = a.receipt.results.all.gaps.as_ref().unwrap();
    for (summary, values) in [(&gaps.gap_ms, &pooled), (&gaps.largest_gap_ms, &largest)] {
        assert_eq!(summary.n, values.len() as u64);
        assert_eq!(summary.p50, Some(nearest_rank(values, 50)));
        assert_eq!(summary.p95, Some(nearest_rank(values, 95)));
        assert_eq!(summary.p99, Some(nearest_rank(values, 99)));
        assert_eq!(summary.max, values.last().copied());
        assert_eq!(summary.min, values.first().copied());
    }
    let over = largest.iter().filter(|g| **g > 90.0).count() as u64;
    assert_eq!(a.receipt.results.all.reasons.miss.stall, Some(over));
    assert_eq!(a.receipt.results.all.counts.miss, over);
    // Every interval holds its point estimate.
    let i = &gaps.intervals.gap_ms.p99;
    if let (Some(lo), Some(hi)) = (i.lower, i.upper) {
        assert!(lo <= nearest_rank(&pooled, 99) && nearest_rank(&pooled, 99) <= hi);
    }
}

/// More than 100,000 gaps on one row: only the cap is kept and the row is
/// invalid (`too_many_gaps`), though its tokens would allow them.
#[test]
fn a_row_over_the_gap_cap_is_invalid() {
    let zeros = vec!["0"; 100_001].join(",");
    let trace = format!(
        r#"{{"schema": "goodput-trace/1", "window": {{"startMs": 0, "endMs": 1000}},
  "equality": "inclusive", "classes": {{"chat": {{"ttftMs": null, "tpotMs": null, "e2eMs": null}}}},
  "rows": [{{"id": "x", "arrivalMs": 0, "status": "completed", "firstTokenMs": 1, "completedMs": 2,
  "outputTokens": 200000, "gapsMs": [{zeros}]}}]}}"#
    );
    let a = analyze(&trace);
    assert_eq!(
        a.trace.rows[0].gaps_ms.get().map(|g| g.len()),
        Some(100_000)
    );
    assert_eq!(
        a.receipt.rows.as_ref().unwrap()[0].reasons,
        ["too_many_gaps"]
    );
}

#[test]
fn the_writer_writes_gaps_only_when_recorded() {
    let mut row = TraceRow::new("r0".into(), 0.0, RowStatus::Completed, Labels::new());
    let without = String::from_utf8(goodput_util::json::to_canonical_json(&row).unwrap()).unwrap();
    assert!(!without.contains("gapsMs"), "{without}");
    row.gaps_ms = Some(vec![1.5, 0.0, 20.0]);
    let with: serde_json::Value =
        serde_json::from_slice(&goodput_util::json::to_canonical_json(&row).unwrap()).unwrap();
    assert_eq!(with["gapsMs"], serde_json::json!([1.5, 0, 20]));
}

/// `fixtures/bad_gaps.json`: the two valid rows' gaps are 30, 30, 40 and
/// 30, 30, 40.001, so the largest gap is 40.001 and p99 (rank 6 of 6) too.
#[test]
fn the_gate_checks_the_largest_gap_and_the_p99_gap() {
    let gate = |max_stall: &str| {
        common::goodput()
            .args(["gate", "--min-goodput", "0", "--max-p99-gap-ms", "40.001"])
            .args(["--max-stall-ms", max_stall])
            .arg(common::fixture("bad_gaps.json"))
            .output()
            .unwrap()
    };
    let refused = gate("40");
    assert_eq!(refused.status.code(), Some(1));
    let text = String::from_utf8(refused.stdout).unwrap();
    assert!(
        text.contains("REFUSE: 1 of 7 criteria fail (largest gap ms)"),
        "{text}"
    );
    assert_eq!(gate("40.001").status.code(), Some(0));
    let bad = gate("-1");
    assert_eq!(bad.status.code(), Some(2));
}

/// Without gaps the gate has no evidence: the criterion fails.
#[test]
fn the_stall_criterion_fails_without_gaps() {
    let out = common::goodput()
        .args(["gate", "--min-goodput", "0", "--max-stall-ms", "1000"])
        .arg(common::fixture("spec_example.json"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn the_text_receipt_has_one_gap_line_per_block() {
    let out = common::goodput()
        .arg("analyze")
        .arg(common::fixture("bad_gaps.json"))
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    // Pooled 30, 30, 30, 30, 40, 40.001: p50 rank 3 → 30, p99 → 40.001.
    let gaps_line = text
        .lines()
        .skip_while(|l| !l.starts_with("GAPS ms"))
        .nth(2)
        .unwrap();
    let cells: Vec<&str> = gaps_line.split_whitespace().collect();
    assert_eq!(
        cells,
        ["chat", "2", "6", "30.0", "40.0", "40.0", "0", "0", "—"]
    );
}

/// Rows a, b pass (a's largest gap 100 sits on the stall gate 100), d
/// misses on stall (300).
const MUTATE_TRACE: &str = r#"{
  "schema": "goodput-trace/1",
  "window": {"startMs": 0, "endMs": 10000},
  "equality": "inclusive",
  "classes": {"chat": {"ttftMs": 1000, "tpotMs": null, "e2eMs": 10000, "stallMs": 100}},
  "rows": [
    {"id": "a", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "completedMs": 400, "outputTokens": 4, "gapsMs": [100, 100, 100]},
    {"id": "b", "arrivalMs": 10, "status": "completed", "firstTokenMs": 100, "completedMs": 300, "outputTokens": 4, "gapsMs": [50, 60, 70]},
    {"id": "d", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "completedMs": 450, "outputTokens": 3, "gapsMs": [50, 300]}
  ]
}"#;

fn mutation_status(
    report: &goodput_core::review::mutate::MutationReport,
    name: &str,
) -> goodput_core::review::mutate::Status {
    report
        .mutations
        .iter()
        .find(|m| m.name == name)
        .map(|m| m.status)
        .unwrap()
}

/// A calculator that judges without the stall gate but echoes the
/// declared one: the stall mutation must catch it.
struct IgnoresStall;

impl goodput_core::review::mutate::Calculator for IgnoresStall {
    fn receipt(
        &self,
        bytes: &[u8],
    ) -> Result<goodput_core::receipt::Receipt, goodput_core::trace::Rejection> {
        let mut doc: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        for gates in doc["classes"].as_object_mut().unwrap().values_mut() {
            gates.as_object_mut().unwrap().remove("stallMs");
        }
        let mut receipt = analyze(&doc.to_string()).receipt;
        receipt.contract.classes = analyze(std::str::from_utf8(bytes).unwrap())
            .receipt
            .contract
            .classes;
        Ok(receipt)
    }
}

#[test]
fn the_stall_mutation_is_caught_and_catches_a_calculator_that_ignores_stalls() {
    use goodput_core::review::mutate::{check, Analyzer, Status};
    let real = check(
        MUTATE_TRACE.as_bytes(),
        &Analyzer::for_mutations_of(Limits::default()),
    )
    .unwrap();
    assert_eq!(real.not_caught, 0, "{:?}", real.mutations);
    assert_eq!(mutation_status(&real, "push_past_stall"), Status::Caught);
    // Row a sits on the stall gate: strict equality must fail it.
    assert_eq!(mutation_status(&real, "flip_equality"), Status::Caught);
    let broken = check(MUTATE_TRACE.as_bytes(), &IgnoresStall).unwrap();
    assert_eq!(
        mutation_status(&broken, "push_past_stall"),
        Status::NotCaught
    );
}
