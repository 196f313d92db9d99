//! The receipt's `saturation` block and Little's law with censored rows at
//! their lower bound, on traces whose every figure is worked out by hand in
//! the comments. One trace per verdict.

use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::receipt::{Block, SaturationVerdict};
use goodput_core::trace::Limits;
use serde_json::{json, Value};

/// A completed row (one output token, so the first token is the completion).
fn done(id: String, arrival: f64, completed: f64) -> Value {
    json!({"id": id, "arrivalMs": arrival, "status": "completed",
           "firstTokenMs": completed, "completedMs": completed, "outputTokens": 1})
}

fn in_flight(id: String, arrival: f64) -> Value {
    json!({"id": id, "arrivalMs": arrival, "status": "in_flight"})
}

fn analyze(window: Value, warmup: Option<Value>, rows: Vec<Value>) -> Block {
    let mut doc = json!({
        "schema": "goodput-trace/1",
        "window": window,
        "equality": "inclusive",
        "classes": {"chat": {"ttftMs": 1000, "tpotMs": null, "e2eMs": null}},
        "rows": rows,
    });
    if let Some(w) = warmup {
        doc["warmup"] = w;
    }
    let bytes = serde_json::to_vec(&doc).unwrap();
    let options = AnalyzeOptions {
        limits: Limits {
            max_rows: 10_000,
            max_bytes: 10_000_000,
        },
        ..AnalyzeOptions::default()
    };
    analyze_bytes(&bytes, options)
        .expect("trace analyzes")
        .receipt
        .results
        .all
}

#[test]
fn twice_the_capacity_with_a_short_grace_reads_overloaded() {
    // 40 req/s offered to a FIFO server that completes one request every
    // 50 ms (20/s): row i arrives at 25·i ms (i = 0..399) and completes at
    // 50·(i + 1) ms. Window [0, 10000), horizon 15000 (a 5 s grace): rows
    // 0..299 complete by the horizon, rows 300..399 are censored in flight.
    let rows: Vec<Value> = (0..400)
        .map(|i| {
            let (arrival, completed) = (25.0 * i as f64, 50.0 * (i + 1) as f64);
            if completed <= 15_000.0 {
                done(format!("r{i}"), arrival, completed)
            } else {
                in_flight(format!("r{i}"), arrival)
            }
        })
        .collect();
    let b = analyze(
        json!({"startMs": 0, "endMs": 10000, "horizonMs": 15000}),
        None,
        rows,
    );
    assert_eq!((b.counts.cohort, b.counts.censored), (400, 100));
    let s = &b.saturation;
    // 400 / 10 s.
    assert_eq!(s.offered_per_s, 40.0);
    // Completions at 50 … 15000 ms: 299 intervals over 14950 ms = 20/s.
    assert_eq!(s.served_span_ms, Some(14_950.0));
    assert_eq!(s.served_per_s, Some(20.0));
    assert_eq!(s.served_per_s, b.rates.served_per_s); // one figure, repeated
                                                      // At 0: row 0 (arrived at 0, ends at 50). At 5000: arrived i ≤ 200
                                                      // (201 rows), completed i ≤ 99 (100) → 101. At 10000: all 400 arrived,
                                                      // completed i ≤ 199 (200) → 200.
    assert_eq!(
        (s.in_flight_at_start, s.in_flight_at_end),
        (Some(1), Some(200))
    );
    let bins = s.bins.as_ref().expect("arrivals are known");
    assert_eq!(bins[2].in_flight_at_end, 101);
    // (200 − 1) / 10 s.
    assert_eq!(s.in_flight_growth_per_s, Some(19.9));
    // Bin 0 is [0, 1666.67): arrivals 25·i < 1666.67 → i ≤ 66 (67 rows);
    // completions 50·(i+1) < 1666.67 → i + 1 ≤ 33 (33 rows).
    assert_eq!((bins[0].arrivals, bins[0].completions), (67, 33));
    assert_eq!(bins.iter().map(|b| b.arrivals).sum::<u64>(), 400);
    // Completions before 10000 (exclusive): i + 1 ≤ 199.
    assert_eq!(bins.iter().map(|b| b.completions).sum::<u64>(), 199);
    // 20 < 0.9 × 40, and 200 − 101 = 99 ≥ max(5, ceil(3·√101) = 31).
    assert_eq!(s.verdict, SaturationVerdict::Overloaded);
    assert_eq!(
        s.evidence,
        "in flight grew 1 → 200 over the window (101 at mid-window); served 20.0/s of 40.0/s offered"
    );

    // Little's law. L: rows 0..199 spend 50(i+1) − 25i = 25i + 50 ms in the
    // window (sum 25·19900 + 200·50 = 507,500); rows 200..399 spend
    // 10000 − 25i (sum 200·10000 − 25·59900 = 502,500): L = 1,010,000 /
    // 10,000 = 101.
    let l = &b.littles_law;
    assert_eq!(l.in_flight_mean, Some(101.0));
    // λ counts completed and censored rows: 400 / 10 s = 40. W: completed
    // E2E 25i + 50 for i < 300 (sum 1,136,250; mean 3787.5), censored
    // 15000 − 25i for i = 300..399 (sum 626,250): (1,136,250 + 626,250) /
    // 400 = 4406.25 ms.
    assert_eq!(l.mean_e2e_ms, Some(3787.5));
    assert_eq!((l.censored_at_lower_bound, l.lambda_per_s), (100, 40.0));
    assert_eq!(l.mean_time_in_system_ms, Some(4406.25));
    // λ·W = 176.25; 101 / 176.25 = 0.573 < 0.8: not steady. Dropping the
    // censored rows (30/s × 3787.5 ms = 113.625, ratio 0.889) would have
    // called this overload steady.
    assert_eq!(l.predicted_in_flight, Some(176.25));
    assert_eq!(l.ratio, Some(101.0 / 176.25));
    assert_eq!(l.steady_state, Some(false));
}

#[test]
fn a_server_keeping_pace_reads_steady_and_counts_warm_up_work_in_flight() {
    // Warm-up [0, 1000), window [1000, 11000), horizon 16000. Two warm-up
    // rows (900 → 1200, 950 → 1200); cohort row i (0..199) arrives at
    // 1000 + 50·i and takes 100 ms.
    let mut rows = vec![
        done("w1".into(), 900.0, 1200.0),
        done("w2".into(), 950.0, 1200.0),
    ];
    rows.extend((0..200).map(|i| {
        let arrival = 1000.0 + 50.0 * i as f64;
        done(format!("r{i}"), arrival, arrival + 100.0)
    }));
    let b = analyze(
        json!({"startMs": 1000, "endMs": 11000, "horizonMs": 16000}),
        Some(json!({"startMs": 0, "endMs": 1000})),
        rows,
    );
    assert_eq!((b.counts.cohort, b.counts.excluded), (200, 2));
    let s = &b.saturation;
    assert_eq!(s.offered_per_s, 20.0);
    // Cohort completions 1100 … 11050: 199 intervals over 9950 ms = 20/s
    // (the warm-up rows are not the cohort's).
    assert_eq!(s.served_per_s, Some(20.0));
    // At 1000: w1, w2 and r0 → 3. At 6000: r99 (5950 → 6050) and r100
    // (6000 → 6100) → 2. At 11000: r199 (10950 → 11050) → 1.
    assert_eq!(
        (s.in_flight_at_start, s.in_flight_at_end),
        (Some(3), Some(1))
    );
    assert_eq!(s.bins.as_ref().unwrap()[2].in_flight_at_end, 2);
    assert_eq!(s.verdict, SaturationVerdict::Steady);
    assert_eq!(
        s.evidence,
        "served 20.0/s of 20.0/s offered; in flight 3 → 1 over the window (2 at mid-window), not growing"
    );
    // No censored row: λ and W are completedPerS and the E2E mean exactly.
    let l = &b.littles_law;
    assert_eq!(
        (l.lambda_per_s, l.mean_time_in_system_ms),
        (20.0, Some(100.0))
    );
    // L: 199 rows × 100 ms + r199's 50 ms inside the window = 19,950 ms over
    // 10,000 ms.
    assert_eq!(l.in_flight_mean, Some(1.995));
    assert_eq!(l.predicted_in_flight, Some(2.0));
}

#[test]
fn a_window_short_against_the_latencies_is_inconclusive() {
    // 20/s for 10 s, each request taking 20 s on an unbounded server: every
    // completion falls after the window (at 20000 + 50·i, by the horizon
    // 30000), so served keeps pace (199 / 9.95 s = 20/s) while in flight
    // only rises: 101 at 5000, 200 at 10000 (rise 99 ≥ 31).
    let rows: Vec<Value> = (0..200)
        .map(|i| {
            let arrival = 50.0 * i as f64;
            done(format!("r{i}"), arrival, arrival + 20_000.0)
        })
        .collect();
    let b = analyze(
        json!({"startMs": 0, "endMs": 10000, "horizonMs": 30000}),
        None,
        rows,
    );
    let s = &b.saturation;
    assert_eq!(s.served_per_s, Some(20.0));
    assert_eq!(
        (
            s.bins.as_ref().unwrap()[2].in_flight_at_end,
            s.in_flight_at_end
        ),
        (101, Some(200))
    );
    assert_eq!(s.verdict, SaturationVerdict::Inconclusive);
    assert_eq!(
        s.evidence,
        "in flight still rising at the window end (101 → 200 over the second half) while \
         served 20.0/s of 20.0/s offered: the window is short against the latencies"
    );
}

#[test]
fn too_few_requests_are_inconclusive_and_say_so() {
    let rows: Vec<Value> = (0..5)
        .map(|i| done(format!("r{i}"), 100.0 * i as f64, 100.0 * i as f64 + 10.0))
        .collect();
    let b = analyze(json!({"startMs": 0, "endMs": 1000}), None, rows);
    assert_eq!(b.saturation.verdict, SaturationVerdict::Inconclusive);
    assert_eq!(
        b.saturation.evidence,
        "only 5 requests arrived in the window; at least 20 are needed to judge saturation"
    );
    // Completions at 10 … 410: 4 intervals over 400 ms.
    assert_eq!(b.saturation.served_per_s, Some(10.0));
}

#[test]
fn unknown_arrival_times_leave_every_instant_figure_null_and_say_why() {
    // Every arrivalMs is the window start (docs/contract.md §10.9): nothing
    // here can be placed in time, whatever the rows hold.
    let rows: Vec<Value> = (0..30)
        .map(|i| done(format!("r{i}"), 0.0, 100.0 + 10.0 * i as f64))
        .collect();
    let mut doc = json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 1000},
        "equality": "inclusive",
        "boundary": {"arrival": "unknown"},
        "classes": {"chat": {"ttftMs": 1000, "tpotMs": null, "e2eMs": null}},
        "rows": rows,
    });
    doc["rows"][0]["arrivalMs"] = json!(0);
    let bytes = serde_json::to_vec(&doc).unwrap();
    let b = analyze_bytes(&bytes, AnalyzeOptions::default())
        .expect("trace analyzes")
        .receipt
        .results
        .all;
    let s = &b.saturation;
    assert_eq!(s.offered_per_s, 30.0); // 30 rows / 1 s
    assert_eq!((s.in_flight_at_start, s.in_flight_at_end), (None, None));
    // servedPerS is rates.servedPerS, repeated (docs/contract.md §10.3), and
    // both are null here (§10.9): the "completions" at 100 … 390 ms are the
    // window start plus each row's E2E, a spread of latencies, not 29 gaps
    // over 290 ms of time (which would have read as 100/s).
    assert_eq!(b.rates.served_per_s, None);
    assert_eq!((s.served_per_s, s.served_span_ms), (None, None));
    assert_eq!((s.in_flight_growth_per_s, s.bins.is_none()), (None, true));
    assert_eq!(s.verdict, SaturationVerdict::Inconclusive);
    assert!(
        s.evidence.starts_with("arrival times are unknown"),
        "{}",
        s.evidence
    );
}

#[test]
fn the_report_draws_the_server_series_broken_at_gaps_and_names_their_peaks() {
    use goodput_core::server_metrics::{parse_exposition, MetricsLine};
    let rows: Vec<Value> = (0..5)
        .map(|i| done(format!("r{i}"), 100.0 * i as f64, 100.0 * i as f64 + 50.0))
        .collect();
    let doc = json!({"schema": "goodput-trace/1", "window": {"startMs": 0, "endMs": 2000},
        "equality": "inclusive", "classes": {"chat": {"ttftMs": 1000, "tpotMs": null, "e2eMs": null}},
        "rows": rows});
    let analysis = analyze_bytes(
        &serde_json::to_vec(&doc).unwrap(),
        AnalyzeOptions::default(),
    )
    .unwrap();
    let waiting = |n: u32| parse_exposition(&format!("vllm:num_requests_waiting {n}\n")).unwrap();
    // Waiting 1, a failed scrape, then 7 and 3: two runs of the line (one
    // point, then two); running and KV use are never exposed, so no line.
    let lines = vec![
        MetricsLine::snapshot(0.0, &waiting(1)),
        MetricsLine::gap(500.0, "timeout"),
        MetricsLine::snapshot(1000.0, &waiting(7)),
        MetricsLine::snapshot(1500.0, &waiting(3)),
    ];
    let page =
        goodput_render::report::analysis_page::page_with_server(&analysis, Some(&lines)).unwrap();
    let server = &page[page
        .find("<section id=\"server\">")
        .expect("server section")..];
    let server = &server[..server.find("</section>").unwrap()];
    assert!(
        server.contains("(3 snapshots, 1 failed scrape shown as breaks"),
        "{server}"
    );
    assert!(server.contains("Peak waiting 7."), "{server}");
    assert_eq!(server.matches("<polyline").count(), 2, "{server}");
    // Without a sidecar there is no server section at all.
    let plain = goodput_render::report::analysis_page::page(&analysis).unwrap();
    assert!(!plain.contains("<section id=\"server\">"));
    // The summary names the saturation verdict of every block, with its
    // evidence: 5 rows are fewer than 20, so inconclusive; 5 completions at
    // 50 … 450 ms are 4 gaps over 0.4 s, 10.00 served/s; 5 in 2 s offered.
    assert!(
        plain.contains(
            "<li data-verdict=\"inconclusive\"><b>all rows</b>: <b>inconclusive</b> \
             (2.50 offered/s, 10.00 served/s): only 5 requests arrived in the window"
        ),
        "{plain}"
    );
}
