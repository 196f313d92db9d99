//! Key numbers of the fixtures, computed by hand (the arithmetic is in the
//! comments) and asserted against the receipt. Snapshots catch any change;
//! these say which numbers are *right*.

mod common;

use common::receipt;
use goodput_core::receipt::{Block, Receipt};

fn all(r: &Receipt) -> &Block {
    &r.results.all
}

fn class<'r>(r: &'r Receipt, name: &str) -> &'r Block {
    &r.results.classes[name]
}

fn verdicts(r: &Receipt) -> Vec<(String, String, Vec<String>)> {
    r.rows
        .as_ref()
        .expect("rows")
        .iter()
        .map(|row| {
            (
                row.id.clone().unwrap_or_default(),
                row.verdict.clone(),
                row.reasons.clone(),
            )
        })
        .collect()
}

fn v(id: &str, verdict: &str, reasons: &[&str]) -> (String, String, Vec<String>) {
    (
        id.to_owned(),
        verdict.to_owned(),
        reasons.iter().map(|s| s.to_string()).collect(),
    )
}

#[test]
fn inclusive_equality_passes_rows_sitting_on_their_gates() {
    // Gates: ttft 1000, tpot 50, e2e 6000; window [0, 10000) = 10 s.
    //   a: ttft 1100−100 = 1000 (on gate), tpot (5100−1100)/80 = 50 (on gate), e2e 5000 → pass
    //   b: ttft 300, tpot (6200−500)/200 = 28.5, e2e 6200−200 = 6000 (on gate)        → pass
    //   c: ttft 1301−300 = 1001 > 1000, tpot 2000/40 = 50, e2e 3001                   → miss ttft
    //   d: ttft 200, tpot 2000/100 = 20, e2e 2200                                      → pass
    //   e: ttft 200, tpot 4000/50 = 80 > 50, e2e 4200                                  → miss tpot
    let r = receipt("equality_inclusive.json");
    let b = all(&r);
    assert_eq!((b.counts.cohort, b.counts.pass, b.counts.miss), (5, 3, 2));
    assert_eq!(b.rates.goodput_per_s, 0.3); // 3 / 10 s
    assert_eq!(b.rates.pass_share, Some(0.6)); // 3 / 5
    assert_eq!(
        (b.reasons.miss.ttft, b.reasons.miss.tpot, b.reasons.miss.e2e),
        (1, 1, 0)
    );
    // TTFT sorted [200, 200, 300, 1000, 1001]: p50 rank ceil(2.5) = 3 → 300;
    // p90 rank ceil(4.5) = 5 → 1001; mean 2701 / 5 = 540.2.
    let ttft = &b.latency.ttft_ms;
    assert_eq!(
        (ttft.n, ttft.p50, ttft.p90, ttft.p99),
        (5, Some(300.0), Some(1001.0), Some(1001.0))
    );
    assert_eq!(ttft.mean, Some(540.2));
    // TPOT sorted [20, 28.5, 50, 50, 80]: p50 → 50; mean 228.5 / 5 = 45.7.
    assert_eq!(b.latency.tpot_ms.p50, Some(50.0));
    assert_eq!(b.latency.tpot_ms.mean, Some(45.7));
    // Tokens: 81 + 201 + 41 + 101 + 51 = 475 → 47.5/s; passing a + b + d = 383 → 38.3/s.
    assert_eq!(b.rates.output_tokens_per_s, 47.5);
    assert_eq!(b.rates.good_tokens_per_s, 38.3);
    assert_eq!(b.rates.completed_per_s, 0.5); // (3 + 2) / 10
}

#[test]
fn strict_equality_fails_a_row_sitting_on_its_gate() {
    // The same rows under "strict": a (ttft and tpot on their gates), b (e2e on
    // its gate) and c (tpot on its gate, ttft already over) now miss; d still
    // passes; e still misses tpot. pass 1, miss 4.
    let r = receipt("equality_strict.json");
    let b = all(&r);
    assert_eq!((b.counts.pass, b.counts.miss), (1, 4));
    assert_eq!(b.rates.goodput_per_s, 0.1);
    assert_eq!(b.rates.pass_share, Some(0.2));
    // ttft: a, c → 2; tpot: a, c, e → 3; e2e: b → 1.
    assert_eq!(
        (b.reasons.miss.ttft, b.reasons.miss.tpot, b.reasons.miss.e2e),
        (2, 3, 1)
    );
    assert_eq!(
        verdicts(&r),
        vec![
            v("a", "miss", &["ttft", "tpot"]),
            v("b", "miss", &["e2e"]),
            v("c", "miss", &["ttft", "tpot"]),
            v("d", "pass", &[]),
            v("e", "miss", &["tpot"]),
        ]
    );
    // Latency figures do not depend on the equality rule.
    assert_eq!(b.latency, all(&receipt("equality_inclusive.json")).latency);
}

#[test]
fn a_one_token_completion_has_no_tpot_and_is_not_judged_on_it() {
    // Gates ttft 500, tpot 10, e2e 2000.
    //   o1: 1 token  → no TPOT; ttft 100, e2e 100 → pass
    //   o2: 1.0 token (counts as 1) → no TPOT → pass
    //   o3: 2 tokens, tpot (2150−2100)/1 = 50 > 10 → miss tpot
    //   o4: 6 tokens, tpot 50/5 = 10 (on gate, inclusive) → pass
    let r = receipt("one_token.json");
    let b = all(&r);
    assert_eq!((b.counts.pass, b.counts.miss), (3, 1));
    assert_eq!(b.rates.pass_share, Some(0.75));
    // TPOT block holds only o3 and o4: sorted [10, 50]; p50 rank 1 → 10; p90 rank 2 → 50.
    let tpot = &b.latency.tpot_ms;
    assert_eq!(
        (tpot.n, tpot.p50, tpot.p90, tpot.mean),
        (2, Some(10.0), Some(50.0), Some(30.0))
    );
    assert_eq!(b.latency.ttft_ms.n, 4);
    let rows = r.rows.as_ref().unwrap();
    assert_eq!(rows[0].tpot_ms, None);
    assert_eq!(rows[1].tpot_ms, None);
    assert_eq!(rows[3].tpot_ms, Some(10.0));
    // Tokens 1 + 1 + 2 + 6 = 10 over 10 s.
    assert_eq!(b.rates.output_tokens_per_s, 1.0);
}

#[test]
fn failures_stay_in_the_denominator() {
    // 5 cohort rows in a 60 s window: 4 failed (timeout ×2, http_503, disconnect), 1 pass
    // (t4: ttft 200, tpot 2000/40 = 50, e2e 2200).
    let r = receipt("timeout_failure.json");
    let b = all(&r);
    assert_eq!((b.counts.cohort, b.counts.pass, b.counts.failed), (5, 1, 4));
    assert_eq!(b.rates.pass_share, Some(0.2)); // 1 / 5, not 1 / 1
    assert_eq!(b.rates.failure_share, Some(0.8)); // 4 / 5
    assert_eq!(b.rates.goodput_per_s, 1.0 / 60.0);
    assert_eq!(b.rates.offered_per_s, 5.0 / 60.0);
    let failure: Vec<(&str, u64)> = b
        .reasons
        .failure
        .iter()
        .map(|(k, n)| (k.as_str(), *n))
        .collect();
    assert_eq!(
        failure,
        vec![("disconnect", 1), ("http_503", 1), ("timeout", 2)]
    );
}

#[test]
fn warm_up_and_out_of_window_arrivals_are_excluded() {
    // warm-up [0, 10000), window [10000, 20000) = 10 s.
    //   w1 (0), w2 (9999.5), w7 (5000, failed) → warmup; w5 (20000 = end, exclusive) and
    //   w6 (−5, before the warm-up) → outside_window.
    //   w3 (10000 = start, inclusive): ttft 500, e2e 2000 → pass; w4: ttft 1001 → miss.
    let r = receipt("warmup.json");
    let b = all(&r);
    assert_eq!(
        (b.counts.arrivals, b.counts.excluded, b.counts.cohort),
        (7, 5, 2)
    );
    assert_eq!(
        (
            b.reasons.exclusion.warmup,
            b.reasons.exclusion.outside_window
        ),
        (3, 2)
    );
    assert_eq!((b.counts.pass, b.counts.miss), (1, 1));
    assert_eq!(b.rates.goodput_per_s, 0.1);
    assert_eq!(b.rates.offered_per_s, 0.2);
    // TPOT gate is null: w4's TPOT (1000/4 = 250) is reported but never judged.
    assert_eq!(b.reasons.miss.tpot, 0);
    assert_eq!(b.latency.tpot_ms.max, Some(250.0));
}

#[test]
fn censored_rows_count_and_known_late_uses_horizon_evidence() {
    // window [0, 10000), horizon 12000; gates ttft 1000, e2e 5000.
    //   i1 in flight from 9000, no first token: ttft evidence 12000 − 9000 = 3000 > 1000 → knownLate
    //   i2 in flight from 9500, first token 9800: ttft 300, e2e evidence 2500 → not late
    //   i3 arrives 11000 → outside the window
    //   i4 completes: ttft 200, tpot 1000/20 = 50, e2e 1200 → pass
    //   i5 in flight from 6000, first token 6500: e2e evidence 6000 > 5000 → knownLate
    let r = receipt("in_flight.json");
    let b = all(&r);
    assert_eq!(
        (
            b.counts.cohort,
            b.counts.pass,
            b.counts.censored,
            b.counts.excluded
        ),
        (4, 1, 3, 1)
    );
    assert_eq!(
        (b.reasons.censored.in_flight, b.reasons.censored.known_late),
        (3, 2)
    );
    assert_eq!(b.rates.censored_share, Some(0.75));
    assert_eq!(b.rates.pass_share, Some(0.25));
}

#[test]
fn completion_after_the_horizon_is_censored_and_on_it_is_not() {
    // horizon 15000; gates ttft 2000, e2e 8000.
    //   h1 completes at 15000 (= horizon) → judged: ttft 1000, e2e 6000 → pass
    //   h2 completes 15001 → censored, ttft 500 and e2e evidence 5500: not late
    //   h3 ttft 3000 > 2000 → censored, knownLate
    //   h4 failed at 15500 → failed_after_horizon; e2e evidence 9000 > 8000 → knownLate
    //   h5 failed at 14000 → failed
    //   h6 e2e 8500 > 8000 → miss e2e
    //   h7 first token 16000 after the horizon: ttft evidence 15000 − 1000 = 14000 → knownLate
    let r = receipt("after_horizon.json");
    let b = all(&r);
    let c = b.counts;
    assert_eq!(
        (c.cohort, c.pass, c.miss, c.failed, c.censored),
        (7, 1, 1, 1, 4)
    );
    let cz = b.reasons.censored;
    assert_eq!(
        (
            cz.completed_after_horizon,
            cz.failed_after_horizon,
            cz.known_late
        ),
        (3, 1, 3)
    );
    assert_eq!(b.rates.pass_share, Some(1.0 / 7.0));
    assert_eq!(b.rates.censored_share, Some(4.0 / 7.0));
}

#[test]
fn every_row_sharing_an_id_is_invalid_and_ids_are_case_sensitive() {
    // ids a, a, A, b, b (second also has a string arrivalMs), c: both a's and both
    // b's are invalid (duplicate_id ×4; bad_field ×1); A and c pass.
    let r = receipt("duplicate_ids.json");
    let b = all(&r);
    assert_eq!(
        (
            b.counts.arrivals,
            b.counts.invalid,
            b.counts.cohort,
            b.counts.pass
        ),
        (6, 4, 2, 2)
    );
    assert_eq!(b.reasons.invalid.get("duplicate_id"), Some(&4));
    assert_eq!(b.reasons.invalid.get("bad_field"), Some(&1));
    assert_eq!(b.rates.pass_share, Some(1.0));
    assert_eq!(b.rates.goodput_per_s, 0.2); // 2 / 10 s
}

#[test]
fn two_classes_count_separately_and_an_unknown_class_only_under_all() {
    // interactive (default): i1 pass (ttft 400, tpot 50), i2 miss ttft (1500).
    // batch: b1 ttft 1500 < 5000, tpot null gate, e2e 30000 → pass; b2 e2e 61000 → miss.
    // p1 names "premium": invalid unknown_class, counted only under all.
    let r = receipt("two_classes.json");
    let (a, i, bt) = (all(&r), class(&r, "interactive"), class(&r, "batch"));
    assert_eq!(
        (
            a.counts.arrivals,
            a.counts.invalid,
            a.counts.pass,
            a.counts.miss
        ),
        (5, 1, 2, 2)
    );
    assert_eq!((i.counts.arrivals, i.counts.pass, i.counts.miss), (2, 1, 1));
    assert_eq!(
        (bt.counts.arrivals, bt.counts.pass, bt.counts.miss),
        (2, 1, 1)
    );
    assert_eq!(i.counts.invalid + bt.counts.invalid, 0);
    assert_eq!(a.rates.goodput_per_s, 2.0 / 60.0);
    assert_eq!(bt.reasons.miss.e2e, 1);
    assert_eq!(bt.reasons.miss.tpot, 0);
    // b1's TPOT (33000 − 4500) / 150 = 190 is reported though not gated.
    assert_eq!(bt.latency.tpot_ms.min, Some(190.0));
    let rows = r.rows.as_ref().unwrap();
    assert_eq!(rows[4].class, None);
}

#[test]
fn malformed_ordering_makes_rows_invalid_with_every_reason() {
    //   m1 first 900 < arrival 1000; m2 completed 1400 < first 1500;
    //   m3 first 1500 and completed 1800 both < arrival 2000; m5 ended 3999 < arrival 4000;
    //   m6 in flight with completedMs; m4 has all three instants equal: TTFT 0 is legal → pass.
    let r = receipt("malformed_ordering.json");
    let b = all(&r);
    assert_eq!(
        (b.counts.invalid, b.counts.cohort, b.counts.pass),
        (5, 1, 1)
    );
    assert_eq!(
        verdicts(&r),
        vec![
            v("m1", "invalid", &["first_token_before_arrival"]),
            v("m2", "invalid", &["completion_before_first_token"]),
            v(
                "m3",
                "invalid",
                &["first_token_before_arrival", "completion_before_arrival"]
            ),
            v("m4", "pass", &[]),
            v("m5", "invalid", &["ended_before_arrival"]),
            v("m6", "invalid", &["completion_on_unfinished"]),
        ]
    );
    assert_eq!(b.latency.ttft_ms.max, Some(0.0));
}

#[test]
fn chunk_counts_are_labelled_chunk_cadence() {
    // tokens "chunks": c1 cadence (1250 − 250)/20 = 50, c2 3000/30 = 100 > 60 → miss,
    // c3 one chunk → none. Window 5 s: goodput 2 / 5 = 0.4.
    let r = receipt("chunks.json");
    assert_eq!(r.contract.tokens, "chunks");
    assert_eq!(r.contract.tpot_label, "chunk_cadence");
    let b = all(&r);
    assert_eq!((b.counts.pass, b.counts.miss), (2, 1));
    assert_eq!(b.rates.goodput_per_s, 0.4);
    assert_eq!(
        (b.latency.tpot_ms.n, b.latency.tpot_ms.max),
        (2, Some(100.0))
    );
}

#[test]
fn the_spec_example_gives_the_spec_verdicts() {
    // r1: ttft 300, tpot 4000/80 = 50 (on gate), e2e 4300 → pass (interactive).
    // r2: batch, failed timeout at 40200 ≤ horizon 70000 → failed.
    // r3: in flight from 69000 with first token at 69500: ttft evidence 500, e2e evidence
    //     1000 → censored, not knownLate. Window 60 s: goodput 1/60, pass share 1/3.
    let r = receipt("spec_example.json");
    let b = all(&r);
    assert_eq!(
        (
            b.counts.cohort,
            b.counts.pass,
            b.counts.failed,
            b.counts.censored
        ),
        (3, 1, 1, 1)
    );
    assert_eq!(b.rates.pass_share, Some(1.0 / 3.0));
    assert_eq!(b.reasons.censored.known_late, 0);
    assert_eq!(class(&r, "batch").counts.failed, 1);
    assert_eq!(class(&r, "interactive").counts.pass, 1);
    assert_eq!(r.contract.workload.len(), 4);
}

#[test]
fn an_empty_cohort_has_null_shares_and_empty_latency() {
    let r = receipt("empty_rows.json");
    let b = all(&r);
    assert_eq!(b.counts.cohort, 0);
    assert_eq!(
        (
            b.rates.pass_share,
            b.rates.failure_share,
            b.rates.censored_share
        ),
        (None, None, None)
    );
    assert_eq!(b.rates.goodput_per_s, 0.0);
    assert_eq!(
        (
            b.latency.ttft_ms.n,
            b.latency.ttft_ms.p50,
            b.latency.ttft_ms.mean
        ),
        (0, None, None)
    );
}

#[test]
fn row_level_problems_never_sink_the_document() {
    // 22 rows: 21 invalid for every kind of row-level problem, one valid pass.
    let r = receipt("bad_fields.json");
    let b = all(&r);
    assert_eq!(
        (b.counts.arrivals, b.counts.invalid, b.counts.pass),
        (22, 21, 1)
    );
    let rows = r.rows.as_ref().unwrap();
    let reasons_of = |i: usize| rows[i].reasons.join(",");
    assert_eq!(reasons_of(0), "bad_field"); // not an object
    assert_eq!(reasons_of(8), "timestamp_out_of_range"); // arrival 2e15
    assert_eq!(reasons_of(9), "span_too_long"); // completion 10^8 ms after arrival
    assert_eq!(reasons_of(11), "missing_completion,missing_output_tokens");
    assert_eq!(reasons_of(12), "completed_without_tokens");
    assert_eq!(reasons_of(13), "bad_output_tokens"); // 2.5
    assert_eq!(reasons_of(14), "bad_output_tokens"); // −3
    assert_eq!(reasons_of(15), "bad_output_tokens"); // 10^10
    assert_eq!(reasons_of(16), "missing_failure_reason");
    assert_eq!(reasons_of(17), "missing_failure_reason"); // ""
    assert_eq!(rows[19].verdict, "pass"); // outputTokens 81.0 counts as 81
    assert_eq!(rows[0].id, None);
}

#[test]
fn littles_law_agrees_when_every_request_finishes_inside_the_window() {
    // equality_inclusive: in-flight spans a 5000, b 6000, c 3001, d 2200, e 4200 ms, all
    // inside [0, 10000): L = 20401 / 10000 = 2.0401. λ = 5 / 10 s = 0.5/s, W = 4080.2 ms,
    // λ·W = 2.0401 → ratio 1. steadyState follows the saturation verdict,
    // which five requests cannot support (at least 20 are needed): null.
    let r = receipt("equality_inclusive.json");
    let l = &all(&r).littles_law;
    assert_eq!(l.in_flight_mean, Some(2.0401));
    assert_eq!(l.mean_e2e_ms, Some(4080.2));
    assert!((l.predicted_in_flight.unwrap() - 2.0401).abs() < 1e-12);
    assert!((l.ratio.unwrap() - 1.0).abs() < 1e-12);
    assert_eq!((l.steady_state, l.note.as_deref()), (None, None));
    assert_eq!(
        all(&r).saturation.evidence,
        "only 5 requests arrived in the window; at least 20 are needed to judge saturation"
    );
}

#[test]
fn littles_law_flags_work_still_in_flight_at_the_horizon() {
    // in_flight: window [0, 10000), horizon 12000. Time in flight inside the window:
    // i1 [9000, 10000) = 1000, i2 [9500, 10000) = 500, i3 arrives at 11000 (0),
    // i4 [1000, 2200) = 1200, i5 [6000, 10000) = 4000 → 6700 / 10000 = 0.67.
    // Censored rows count in λ and W at their lower bound (arrival → horizon):
    // i1 12000 − 9000 = 3000, i2 2500, i5 6000 (sum 11500); i4 completed in
    // 1200. λ = (1 + 3) / 10 s = 0.4/s, W = (1200 + 11500) / 4 = 3175 ms →
    // λ·W = 1.27; ratio 0.67 / 1.27 = 0.53: the work ran on past the
    // window end. (Dropping the censored rows, λ·W = 0.1 × 1.2 = 0.12 would
    // have blamed a queue for what the grace period cut off.) steadyState
    // follows the saturation verdict: 4 requests are too few, so null.
    let r = receipt("in_flight.json");
    let l = &all(&r).littles_law;
    assert_eq!(l.in_flight_mean, Some(0.67));
    assert_eq!(l.censored_at_lower_bound, 3);
    assert_eq!(l.lambda_per_s, 0.4);
    assert_eq!(l.mean_time_in_system_ms, Some(3175.0));
    assert!((l.predicted_in_flight.unwrap() - 1.27).abs() < 1e-12);
    assert!((l.ratio.unwrap() - 0.67 / 1.27).abs() < 1e-9);
    assert_eq!((l.steady_state, l.note.as_deref()), (None, None));
}

#[test]
fn littles_law_leaves_failures_without_an_end_out_and_counts_them() {
    // timeout_failure: t2 failed with no endedMs → unknown end. Others inside [0, 60000):
    // t1 [0, 30000) = 30000, t3 10, t4 2200, t5 2000 → 34210 / 60000.
    // Only t4 completed: λ = 1/60, W = 2200 → λ·W = 0.0366…; ratio = 34210 / 2200 = 15.55.
    let r = receipt("timeout_failure.json");
    let l = &all(&r).littles_law;
    assert_eq!(l.unknown_end, 1);
    assert_eq!(l.in_flight_mean, Some(34210.0 / 60000.0));
    assert!((l.ratio.unwrap() - 34210.0 / 2200.0).abs() < 1e-9);
}

#[test]
fn an_empty_cohort_has_no_littles_law_ratio() {
    let r = receipt("empty_rows.json");
    let l = &all(&r).littles_law;
    assert_eq!(
        (l.in_flight_mean, l.mean_e2e_ms, l.ratio, l.steady_state),
        (Some(0.0), None, None, None)
    );
}

#[test]
fn a_large_trace_is_counted_exactly_when_tallied_on_two_threads() {
    // 200,000 rows (over the two-thread threshold), one arrival per ms over a
    // 200 s window, in a repeating pattern of five:
    //   i % 5 == 0 → pass:  ttft 100, e2e 1100, 11 tokens (tpot 100 ≤ gate 200)
    //   i % 5 == 1 → miss:  ttft 2000 > 1000
    //   i % 5 == 2 → failed (timeout)
    //   i % 5 == 3 → in flight (no first token)
    //   i % 5 == 4 → pass:  one token, ttft 100, e2e 100
    // Each kind: 40,000 rows; the horizon (204 s) is after the last completion (≤ 202,996 ms).
    let mut rows = Vec::with_capacity(200_000);
    for i in 0..200_000u64 {
        let a = i;
        rows.push(match i % 5 {
            0 => format!(r#"{{"id":"r{i}","arrivalMs":{a},"status":"completed","firstTokenMs":{},"completedMs":{},"outputTokens":11}}"#, a + 100, a + 1100),
            1 => format!(r#"{{"id":"r{i}","arrivalMs":{a},"status":"completed","firstTokenMs":{},"completedMs":{},"outputTokens":11}}"#, a + 2000, a + 3000),
            2 => format!(r#"{{"id":"r{i}","arrivalMs":{a},"status":"failed","reason":"timeout","endedMs":{}}}"#, a + 500),
            3 => format!(r#"{{"id":"r{i}","arrivalMs":{a},"status":"in_flight"}}"#),
            _ => format!(r#"{{"id":"r{i}","arrivalMs":{a},"status":"completed","firstTokenMs":{},"completedMs":{},"outputTokens":1}}"#, a + 100, a + 100),
        });
    }
    let doc = format!(
        r#"{{"schema":"goodput-trace/1","window":{{"startMs":0,"endMs":200000,"horizonMs":204000}},"equality":"inclusive","classes":{{"c":{{"ttftMs":1000,"tpotMs":200,"e2eMs":null}}}},"rows":[{}]}}"#,
        rows.join(",")
    );
    let options = goodput_core::analyze::AnalyzeOptions {
        limits: goodput_core::trace::Limits {
            max_rows: 200_000,
            max_bytes: 100_000_000,
        },
        ..Default::default()
    };
    let r = goodput_core::analyze::analyze_bytes(doc.as_bytes(), options)
        .expect("accepted")
        .receipt;
    let b = all(&r);
    let c = b.counts;
    assert_eq!(
        (c.cohort, c.pass, c.miss, c.failed, c.censored),
        (200_000, 80_000, 40_000, 40_000, 40_000)
    );
    assert_eq!(b.rates.goodput_per_s, 400.0); // 80,000 / 200 s
    assert_eq!(b.rates.pass_share, Some(0.4));
    // TTFT: 80,000 × 100 and 40,000 × 2000; n = 120,000: p50 rank 60,000 → 100,
    // p90 rank 108,000 → 2000; mean (8e6 + 8e7) / 120,000 = 733.33…
    let ttft = &b.latency.ttft_ms;
    assert_eq!(
        (ttft.n, ttft.p50, ttft.p90),
        (120_000, Some(100.0), Some(2000.0))
    );
    assert_eq!(ttft.mean, Some(88_000_000.0 / 120_000.0));
    // TPOT only for 11-token rows: 40,000 × 100 (pass) and 40,000 × 100 (miss: (3000−2000)/10).
    assert_eq!(
        (b.latency.tpot_ms.n, b.latency.tpot_ms.max),
        (80_000, Some(100.0))
    );
    // Little's law: in flight inside [0, 200000): pass rows 1100 ms each, miss rows 3000
    // (the last few are clipped at the window end), failed 500, in-flight rows until the
    // window end, one-token rows 100. The class block equals the all block.
    assert_eq!(r.results.classes["c"].littles_law, b.littles_law);
    assert_eq!(r.results.classes["c"].counts, c);
    // Tokens: 80,000 rows × 11 + 40,000 × 1 = 920,000 over 200 s.
    assert_eq!(b.rates.output_tokens_per_s, 4600.0);
}

/// Analyzes a small inline trace (window [0, 10000), horizon 11000) with rows.
fn inline_receipt(equality: &str, gates: &str, rows: &str) -> Receipt {
    let doc = format!(
        r#"{{"schema":"goodput-trace/1","window":{{"startMs":0,"endMs":10000,"horizonMs":11000}},"equality":"{equality}","classes":{{"c":{gates}}},"rows":[{rows}]}}"#
    );
    goodput_core::analyze::analyze_bytes(
        doc.as_bytes(),
        goodput_core::analyze::AnalyzeOptions {
            rows: true,
            ..Default::default()
        },
    )
    .expect("accepted")
    .receipt
}

#[test]
fn a_censored_row_that_ran_exactly_its_gate_by_the_horizon_is_known_late() {
    // Gates ttft 2000, e2e 2000 (inclusive); arrival 9000, horizon 11000, so
    // elapsed = 11000 − 9000 = 2000 for every row.
    //   done: first token 9500 (ttft 500 ≤ 2000), completed 11500 > horizon →
    //         final e2e > 2000 = elapsed ≥ gate → late on e2e.
    //   open: in flight, no first token → final ttft > 2000 → late on ttft.
    //   early: arrival 9000.5, in flight, no first token: elapsed 1999.5 < 2000 → not late.
    let rows = r#"
      {"id":"done","arrivalMs":9000,"status":"completed","firstTokenMs":9500,"completedMs":11500,"outputTokens":5},
      {"id":"open","arrivalMs":9000,"status":"in_flight"},
      {"id":"early","arrivalMs":9000.5,"status":"in_flight"}"#;
    for equality in ["inclusive", "strict"] {
        let r = inline_receipt(
            equality,
            r#"{"ttftMs":2000,"tpotMs":null,"e2eMs":2000}"#,
            rows,
        );
        assert_eq!(all(&r).counts.censored, 3, "{equality}");
        assert_eq!(all(&r).reasons.censored.known_late, 2, "{equality}");
        assert_eq!(
            verdicts(&r),
            vec![
                v(
                    "done",
                    "censored",
                    &["completed_after_horizon", "knownLate"]
                ),
                v("open", "censored", &["in_flight", "knownLate"]),
                v("early", "censored", &["in_flight"]),
            ],
            "{equality}"
        );
    }
}

#[test]
fn a_first_token_on_its_gate_at_the_horizon_is_judged_by_the_equality_rule() {
    // Gates ttft 2000, e2e 5000; arrival 9000, in flight, first token 11000 (=
    // horizon, so seen): final ttft 2000, on the gate. elapsed 2000 < e2e gate.
    //   strict: 2000 == gate misses → knownLate; inclusive: 2000 == gate meets → not late.
    let rows = r#"{"id":"edge","arrivalMs":9000,"status":"in_flight","firstTokenMs":11000}"#;
    let gates = r#"{"ttftMs":2000,"tpotMs":null,"e2eMs":5000}"#;
    let strict = inline_receipt("strict", gates, rows);
    assert_eq!(all(&strict).reasons.censored.known_late, 1);
    let inclusive = inline_receipt("inclusive", gates, rows);
    assert_eq!(all(&inclusive).reasons.censored.known_late, 0);
}

#[test]
fn served_throughput_divides_completions_by_the_span_they_happened_in() {
    // Window [0, 10000), horizon 11000; gate ttft 1000 (inclusive).
    //   a completes 1000, b 3000, c 5000 (miss: ttft 2000), d 10500 (in the grace period):
    //   4 completions over 10500 − 1000 = 9500 ms are 3 gaps → 3 / 9.5 = 0.3157894736842105/s,
    //   while completedPerS = 4 / 10 window s = 0.4.
    //   e completes at 11500, after the horizon: censored, not a completion.
    //   f fails, g is in flight: neither is a completion.
    let rows = r#"
      {"id":"a","arrivalMs":500,"status":"completed","firstTokenMs":600,"completedMs":1000,"outputTokens":2},
      {"id":"b","arrivalMs":2500,"status":"completed","firstTokenMs":2600,"completedMs":3000,"outputTokens":2},
      {"id":"c","arrivalMs":2900,"status":"completed","firstTokenMs":4900,"completedMs":5000,"outputTokens":2},
      {"id":"d","arrivalMs":9900,"status":"completed","firstTokenMs":10000,"completedMs":10500,"outputTokens":2},
      {"id":"e","arrivalMs":9950,"status":"completed","firstTokenMs":10050,"completedMs":11500,"outputTokens":2},
      {"id":"f","arrivalMs":100,"status":"failed","reason":"timeout","endedMs":200},
      {"id":"g","arrivalMs":9990,"status":"in_flight"}"#;
    let r = inline_receipt(
        "inclusive",
        r#"{"ttftMs":1000,"tpotMs":null,"e2eMs":null}"#,
        rows,
    );
    let b = all(&r);
    assert_eq!((b.counts.pass, b.counts.miss), (3, 1));
    assert_eq!(b.rates.completed_per_s, 0.4);
    assert_eq!(b.rates.served_per_s, Some(3.0 / 9.5));
    assert_eq!(r.results.classes["c"].rates.served_per_s, Some(3.0 / 9.5));

    // One completion has no span: null.
    let one = inline_receipt(
        "inclusive",
        r#"{"ttftMs":1000,"tpotMs":null,"e2eMs":null}"#,
        r#"{"id":"a","arrivalMs":500,"status":"completed","firstTokenMs":600,"completedMs":1000,"outputTokens":2}"#,
    );
    assert_eq!(all(&one).rates.served_per_s, None);
}
