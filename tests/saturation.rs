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
                                                      // In flight at t: arrived at or before t, not ended before t. At 0: row
                                                      // 0 (ends at 50). At 5000: arrived i ≤ 200 (201 rows), ended before
                                                      // 5000 i ≤ 98 (99; row 99 ends at 5000 exactly) → 102. At 10000: all 400
                                                      // arrived, ended before 10000 i ≤ 198 (199) → 201.
    assert_eq!(
        (s.in_flight_at_start, s.in_flight_at_end),
        (Some(1), Some(201))
    );
    let bins = s.bins.as_ref().expect("arrivals are known");
    assert_eq!(bins[2].in_flight_at_end, 102);
    // (201 − 1) / 10 s.
    assert_eq!(s.in_flight_growth_per_s, Some(20.0));
    // Bin 0 is [0, 1666.67): arrivals 25·i < 1666.67 → i ≤ 66 (67 rows);
    // completions 50·(i+1) < 1666.67 → i + 1 ≤ 33 (33 rows).
    assert_eq!((bins[0].arrivals, bins[0].completions), (67, 33));
    assert_eq!(bins.iter().map(|b| b.arrivals).sum::<u64>(), 400);
    // Completions before 10000 (exclusive): i + 1 ≤ 199.
    assert_eq!(bins.iter().map(|b| b.completions).sum::<u64>(), 199);
    // The oldest waiting row at t is the first i with 50(i + 1) > t, i =
    // floor(t / 50), which has waited t − 25i. Samples at 10000·j/24: the
    // first third's largest is at j = 8 (t = 3333.33, i = 66: 1683.33 ms);
    // the first tokens of the first third (50(i+1) < 3333.33, i ≤ 65: 66 of
    // them, TTFT 25i + 50) have p90 = rank 60 → i = 59 → 1525 ms; so the
    // baseline is 1683.33. The last third's smallest is at j = 17
    // (t = 7083.33, i = 141: 3558.33 ms), ≥ 1683.33 + ¼ × 1000.
    let q = s.queueing.as_ref().expect("arrivals are known");
    assert_eq!(q.first_tokens_first_third, 66);
    assert_eq!(q.first_third_ttft_p90_ms, Some(1525.0));
    assert_eq!(q.wait_margin_ms, 250.0);
    assert!((q.wait_baseline_ms - 1683.333).abs() < 1e-3, "{q:?}");
    assert!((q.oldest_wait_last_third_min_ms - 3558.333).abs() < 1e-3);
    assert!(q.waiting_grew);
    // Completions inside [0, 10000): 199, for 400 arrivals: short by 201 >
    // 3·√599 = 73.4.
    assert_eq!(s.completions_in_window, Some(199));
    assert_eq!((q.shortfall, q.served_short), (201, true));
    assert_eq!(s.verdict, SaturationVerdict::Overloaded);
    assert_eq!(
        s.evidence,
        "waiting grew: the oldest request waiting for a first token had waited at least 3558 ms \
         throughout the window's last third, against at most 1683 ms in its first third; the \
         window saw 199 completions for 400 arrivals, short by 201 (more than 3σ = 73)"
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
    // λ·W = 176.25; 101 / 176.25 = 0.573. steadyState follows the
    // saturation verdict, not the ratio (docs/contract.md §7.9).
    assert_eq!(l.predicted_in_flight, Some(176.25));
    assert_eq!(l.ratio, Some(101.0 / 176.25));
    assert_eq!(l.steady_state, Some(false));
    assert_eq!(
        l.note.as_deref(),
        Some("not steady: the saturation verdict is overloaded (saturation.evidence says why)")
    );
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
    // At 1000: w1, w2 and r0 → 3. At 6000: r98 (ends at 6000 exactly, so
    // not before it), r99 and r100 → 3. At 11000: r198 (ends at 11000) and
    // r199 → 2.
    assert_eq!(
        (s.in_flight_at_start, s.in_flight_at_end),
        (Some(3), Some(2))
    );
    assert_eq!(s.bins.as_ref().unwrap()[2].in_flight_at_end, 3);
    // Every row waits 100 ms for its first token: the oldest wait at a
    // sample is under 100 ms (largest 83.33 in the first third, smallest 50
    // in the last); the first third's 67 first tokens (w1 300, w2 250, 65
    // rows of 100) have p90 = rank 61 = 100: baseline 100, no rise.
    let q = s.queueing.as_ref().unwrap();
    assert_eq!(
        (q.first_tokens_first_third, q.wait_baseline_ms),
        (67, 100.0)
    );
    assert_eq!(q.oldest_wait_last_third_min_ms, 50.0);
    // Completions in [1000, 11000): w1, w2 and r0..r197 = 200, for 200
    // arrivals. p90 time in the system 100 ms ≤ 10000 / 3.
    assert_eq!(s.completions_in_window, Some(200));
    assert_eq!((q.residence_p90_ms, q.window_long), (Some(100.0), true));
    assert_eq!(s.verdict, SaturationVerdict::Steady);
    assert_eq!(
        s.evidence,
        "no request waited longer later (at most 100 ms in the first third, down to 50 ms in the \
         last); the window saw 200 completions for 200 arrivals (within 3σ = 60); p90 time in \
         the system 100 ms, within a third of the window"
    );
    assert_eq!(b.littles_law.steady_state, Some(true));
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
    // 20/s for 10 s, each request taking 20 s to its first (and only)
    // token on an unbounded server: no first token comes in the window, so
    // the oldest wait (row 0's) rises with the clock, 7083 ms at the last
    // third's first sample, exactly as a queue's would. A latency longer
    // than the window cannot be told from a queue: inconclusive.
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
        "the oldest wait rose to 7083 ms in the window's last third, but only 0 first tokens came \
         in its first third: a latency longer than the window looks the same as a queue"
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

/// A FIFO server with one slot, offered a request every 100 ms from 0: it
/// starts request i at 200·i (each takes 200 ms: first token 20 ms after
/// its start, 10 tokens, done at 200·(i + 1)), so it serves 5/s of the
/// 10/s offered. The trace is written as observation stopped at `horizon`.
fn fifo_twice_capacity(end: f64, horizon: f64) -> Block {
    let rows: Vec<Value> = (0..(end / 100.0) as usize)
        .map(|i| {
            let (a, start) = (100.0 * i as f64, 200.0 * i as f64);
            let (first, done) = (start + 20.0, start + 200.0);
            if done <= horizon {
                json!({"id": format!("r{i}"), "arrivalMs": a, "status": "completed",
                       "firstTokenMs": first, "completedMs": done, "outputTokens": 10})
            } else if first <= horizon {
                json!({"id": format!("r{i}"), "arrivalMs": a, "status": "in_flight", "firstTokenMs": first})
            } else {
                in_flight(format!("r{i}"), a)
            }
        })
        .collect();
    analyze(
        json!({"startMs": 0, "endMs": end, "horizonMs": horizon}),
        None,
        rows,
    )
}

#[test]
fn an_overload_cut_at_the_window_end_reads_overloaded_and_observing_longer_changes_nothing() {
    // Window [0, 60000). At t the oldest waiting row is the first i with
    // 200i + 20 > t; it has waited t − 100i. Samples every 2500 ms: the
    // first third's largest oldest wait is at t = 20000 (i = 100): 10000
    // ms; its 100 first tokens (i ≤ 99, TTFT 100i + 20) have p90 = rank 90
    // → 8920: baseline 10000. The last third's smallest is at t = 42500
    // (i = 213): 21200 ms. Completions before 60000: i ≤ 298 (299) for 600
    // arrivals: short by 301 > 3·√899 = 90.
    let cut = fifo_twice_capacity(60_000.0, 60_000.0);
    let longer = fifo_twice_capacity(60_000.0, 70_000.0);
    for b in [&cut, &longer] {
        let s = &b.saturation;
        assert_eq!(s.verdict, SaturationVerdict::Overloaded, "{}", s.evidence);
        assert_eq!(
            s.evidence,
            "waiting grew: the oldest request waiting for a first token had waited at least 21200 \
             ms throughout the window's last third, against at most 10000 ms in its first third; \
             the window saw 299 completions for 600 arrivals, short by 301 (more than 3σ = 90)"
        );
        // 600 arrived by 60000, 299 ended before it: every unended row is
        // in flight at the window's end, even when that is the horizon.
        assert_eq!(s.in_flight_at_end, Some(301));
        assert_eq!(b.littles_law.steady_state, Some(false));
    }
    // Nothing the verdict reads lies past the window's end.
    assert_eq!(cut.saturation.queueing, longer.saturation.queueing);
    assert_eq!(cut.saturation.bins, longer.saturation.bins);
    // Row 299 completes at 60000, the horizon itself: not censored
    // (completedMs == horizonMs), yet in flight at that instant.
    assert_eq!(cut.counts.censored, 300);
    // With grace 0 the window-clipped Little's-law ratio is 1 by
    // construction: it proves nothing, so it no longer decides steadiness.
    let ratio = cut.littles_law.ratio.unwrap();
    assert!((ratio - 1.0).abs() < 1e-9, "{ratio}");
}

#[test]
fn an_overload_interrupted_at_seventy_percent_still_reads_overloaded() {
    // The same server, Ctrl-C at 42000 (window end = horizon = the cut).
    // Samples every 1750 ms: first third's largest oldest wait at t = 14000
    // (i = 70): 7000; its 70 first tokens have p90 = rank 63 → i = 62 →
    // 6220. Last third's smallest at t = 29750 (i = 149): 14850. 420
    // arrivals, 209 completions (200i + 200 < 42000): short by 211 > 75.
    let b = fifo_twice_capacity(42_000.0, 42_000.0);
    let s = &b.saturation;
    assert_eq!(s.verdict, SaturationVerdict::Overloaded, "{}", s.evidence);
    let q = s.queueing.as_ref().unwrap();
    assert_eq!(
        (q.wait_baseline_ms, q.oldest_wait_last_third_min_ms),
        (7000.0, 14850.0)
    );
    assert_eq!((q.shortfall, s.completions_in_window), (211, Some(209)));
}

#[test]
fn long_outputs_with_no_queue_are_inconclusive_not_overloaded() {
    // 5/s for 60 s; every TTFT exactly 100 ms, outputs of 100–3000 tokens at
    // 20 ms per token (2–60 s streams), observed until everything ended.
    // Nothing ever waits more than 100 ms for a first token, so no waiting
    // grew; the streams are long against the window, so few end in it.
    let rows: Vec<Value> = (0..300)
        .map(|i| {
            let a = 200.0 * i as f64;
            let tokens = 100 + (i * 977) % 2901;
            let first = a + 100.0;
            let done = first + 20.0 * (tokens - 1) as f64;
            json!({"id": format!("r{i}"), "arrivalMs": a, "status": "completed",
                   "firstTokenMs": first, "completedMs": done, "outputTokens": tokens})
        })
        .collect();
    let b = analyze(
        json!({"startMs": 0, "endMs": 60000, "horizonMs": 130000}),
        None,
        rows,
    );
    assert_eq!(b.counts.pass, 300);
    let s = &b.saturation;
    let q = s.queueing.as_ref().unwrap();
    assert!(q.wait_baseline_ms <= 100.0 && q.oldest_wait_last_third_min_ms <= 100.0);
    assert!(!q.waiting_grew && q.served_short && !q.window_long, "{q:?}");
    assert_eq!(s.verdict, SaturationVerdict::Inconclusive);
    assert!(
        s.evidence.ends_with("long requests, not a queue"),
        "{}",
        s.evidence
    );
    assert_eq!(b.littles_law.steady_state, None);
}
