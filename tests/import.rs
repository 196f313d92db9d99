//! `goodput import`: each fixture under `fixtures/import/` becomes a valid
//! trace whose receipt reproduces (or explains, exactly) the figures the
//! source tool reported; bad inputs exit 2 with one line naming the place.

mod common;

use std::process::Output;

use common::{assert_valid, fixture, goodput, validator};
use goodput::cli::flags::parse_slo;
use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::trace::write::RowStatus;
use goodput_core::trace::Equality;
use goodput_import::{pipeline, same_figure, ImportOptions, Outcome, Source};
use serde_json::Value;

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(&format!("import/{name}"))).expect("read fixture")
}

fn options(slo: &str) -> ImportOptions {
    let (name, gates) = parse_slo(slo).expect("slo parses");
    ImportOptions::with_gates(&name, gates, Equality::Inclusive)
}

fn run_pipeline(source: Source, file: &str, slo: &str, summary: Option<&str>) -> Outcome {
    let summary = summary.map(read);
    pipeline(source, &read(file), &options(slo), summary.as_deref())
        .unwrap_or_else(|e| panic!("{file}: {e}"))
}

fn vllm() -> Outcome {
    run_pipeline(
        Source::Vllm,
        "vllm_synthetic.json",
        "vllm:ttft=250,tpot=25,e2e=4000",
        None,
    )
}

fn aiperf() -> Outcome {
    run_pipeline(
        Source::Aiperf,
        "aiperf_profile_export.jsonl",
        "aiperf:ttft=35,tpot=12.8",
        Some("aiperf_profile_export_aiperf.json"),
    )
}

fn guidellm() -> Outcome {
    run_pipeline(
        Source::Guidellm,
        "guidellm_benchmarks.json",
        "chat:ttft=40,tpot=22,e2e=500",
        None,
    )
}

fn source_json(name: &str) -> Value {
    serde_json::from_slice(&read(name)).expect("fixture is JSON")
}

/// The trace is an ordinary trace: the default limits, the strict mode and
/// the committed JSON Schema all accept it.
fn assert_ordinary_trace(outcome: &Outcome) {
    analyze_bytes(
        &outcome.trace_bytes,
        AnalyzeOptions {
            strict: true,
            ..AnalyzeOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("the imported trace is rejected: {e}"));
    let doc: Value = serde_json::from_slice(&outcome.trace_bytes).expect("trace is JSON");
    assert_valid(&validator("trace.schema.json"), &doc, "imported trace");
}

fn render(outcome: &Outcome) -> String {
    goodput_render::import::render(
        &outcome.comparison,
        "trace.json",
        outcome.imported.trace.rows.len(),
        "goodput analyze trace.json",
    )
}

#[test]
fn vllm_rows_keep_every_request_with_vllms_own_latencies() {
    let o = vllm();
    let src = source_json("vllm_synthetic.json");
    let rows = &o.imported.trace.rows;
    assert_eq!(rows.len(), 30);
    let failed: Vec<(&str, &str)> = rows
        .iter()
        .filter(|r| r.status == RowStatus::Failed)
        .map(|r| (r.id.as_str(), r.reason.as_deref().unwrap_or("")))
        .collect();
    // errors[7] = "Internal Server Error", errors[19] = a TimeoutError traceback.
    assert_eq!(failed, [("r7", "http_500"), ("r19", "timeout")]);
    // Row 0 by hand: first send is t0; TTFT and E2E are vLLM's seconds in ms.
    let r0 = &rows[0];
    assert_eq!(r0.arrival_ms, 0.0);
    let ttft_ms = src["ttfts"][0].as_f64().unwrap() * 1000.0;
    let e2e_ms = src["latencies"][0].as_f64().unwrap() * 1000.0;
    assert!(
        (r0.first_token_ms.unwrap() - ttft_ms).abs() < 1e-9,
        "{r0:?}"
    );
    assert!((r0.completed_ms.unwrap() - e2e_ms).abs() < 1e-9, "{r0:?}");
    assert_eq!(r0.output_tokens, src["output_lens"][0].as_u64());
    // Row 1 arrives (start_times[1] - start_times[0]) later.
    let gap_ms = (src["start_times"][1].as_f64().unwrap()
        - src["start_times"][0].as_f64().unwrap())
        * 1000.0;
    assert!((rows[1].arrival_ms - gap_ms).abs() < 1e-3);
    let w = o.imported.trace.window;
    // The window is vLLM's `duration` to the bit: (endMs - startMs) / 1000 is
    // 4.795939 exactly (4795.939 / 1000 is not: it is one ulp off).
    assert_eq!(w.start_ms, 0.0);
    assert_eq!((w.end_ms - w.start_ms) / 1000.0, 4.795939);
    assert_ne!(4795.939_f64 / 1000.0, 4.795939);
    assert_eq!(
        o.imported.trace.boundary["arrival"],
        goodput_core::trace::Scalar::String("sent".into())
    );
    assert_ordinary_trace(&o);
}

#[test]
fn vllm_request_goodput_is_reproduced_with_the_same_gates() {
    let o = vllm();
    let src = source_json("vllm_synthetic.json");
    let theirs = src["request_goodput"].as_f64().unwrap();
    let all = &o.receipt.results.all;
    assert_eq!(all.counts.pass, 19);
    assert_eq!(all.counts.cohort, 30);
    assert!(
        same_figure(all.rates.goodput_per_s, theirs),
        "{} vs {theirs}",
        all.rates.goodput_per_s
    );
    // The throughput vLLM reported is goodput's completed rate over the same window.
    assert!(same_figure(
        all.rates.completed_per_s,
        src["request_throughput"].as_f64().unwrap()
    ));
    assert!(o
        .comparison
        .differences
        .iter()
        .any(|d| d.starts_with("Goodput reproduced")));
}

#[test]
fn aiperf_rows_split_warmup_from_profiling_and_read_units() {
    let o = aiperf();
    let t = &o.imported.trace;
    assert_eq!(t.rows.len(), 34);
    let c = &o.receipt.results.all.counts;
    // 4 warm-up records excluded; 30 profiling records form the cohort, one HTTP 500.
    assert_eq!((c.arrivals, c.excluded, c.cohort, c.failed), (34, 4, 30, 1));
    assert_eq!(o.receipt.results.all.reasons.exclusion.warmup, 4);
    assert_eq!(
        o.receipt.results.all.reasons.failure.get("http_500"),
        Some(&1)
    );
    let warmup = t.warmup.expect("a warm-up interval");
    assert_eq!(warmup.end_ms, t.window.start_ms);
    // First record by hand: TTFT 24.841289 ms, latency from the record, one token.
    let first = &t.rows[0];
    assert!((first.first_token_ms.unwrap() - first.arrival_ms - 24.841289).abs() < 1e-9);
    assert_eq!(first.output_tokens, Some(1));
    assert_eq!(
        first.labels["phase"],
        goodput_core::trace::Scalar::String("warmup".into())
    );
    assert_ordinary_trace(&o);
}

#[test]
fn aiperf_goodput_is_reproduced_with_its_token_counts_and_one_token_rule() {
    let o = aiperf();
    let summary = source_json("aiperf_profile_export_aiperf.json");
    let theirs = summary["goodput"]["avg"].as_f64().unwrap();
    let good = summary["good_request_count"]["avg"].as_f64().unwrap() as u64;
    let all = &o.receipt.results.all;
    let window_s = o.receipt.contract.window.duration_ms / 1000.0;
    // The window has AIPerf's observation length: throughput is reproduced exactly.
    assert!(same_figure(
        all.rates.completed_per_s,
        summary["request_throughput"]["avg"].as_f64().unwrap()
    ));
    // By the server's usage counts (e.g. 16 where AIPerf's tokenizer counts 26)
    // TPOT is about 20 ms and only the three one-token outputs pass.
    let verdicts = o.receipt.rows.as_ref().expect("per-row verdicts");
    let one_token_pass = o
        .imported
        .trace
        .rows
        .iter()
        .zip(verdicts)
        .filter(|(r, v)| r.output_tokens == Some(1) && v.verdict == "pass")
        .count() as u64;
    assert_eq!((all.counts.pass, one_token_pass), (3, 3));
    assert!(!same_figure(all.rates.goodput_per_s, theirs));
    // By AIPerf's own counts 10 pass; AIPerf counted 7 good: the difference is
    // exactly the three passing one-token outputs, which AIPerf cannot judge
    // on inter_token_latency and therefore never counts as good.
    let c = o
        .comparison
        .fidelity
        .tokens
        .as_ref()
        .and_then(|t| t.with_client_counts.as_ref())
        .expect("judged with AIPerf's counts too");
    assert_eq!((c.pass, c.one_token_pass, good), (10, 3, 7));
    assert_eq!(c.pass - c.one_token_pass, good);
    assert!(same_figure(
        (c.pass - c.one_token_pass) as f64 / window_s,
        theirs
    ));
    assert!(o.comparison.differences.iter().any(|d| d.starts_with(
        "Goodput differs by the token counts and the one-token rule: aiperf reported"
    )));
}

#[test]
fn aiperf_without_its_summary_uses_the_records_span_and_reports_no_goodput() {
    let o = pipeline(
        Source::Aiperf,
        &read("aiperf_profile_export.jsonl"),
        &options("aiperf:ttft=35,tpot=12.8"),
        None,
    )
    .expect("imports");
    assert_eq!(o.imported.reported.goodput_per_s, None);
    let w = o.imported.trace.window;
    // From the first profiling credit to the last response: shorter than AIPerf's phase.
    assert!(w.end_ms - w.start_ms < 4349.0 && w.end_ms - w.start_ms > 4200.0);
    // By usage counts only the three one-token outputs pass (see above).
    assert_eq!(o.receipt.results.all.counts.pass, 3);
}

#[test]
fn guidellm_rows_arrive_at_their_scheduled_instant() {
    let o = guidellm();
    let t = &o.imported.trace;
    assert_eq!(t.rows.len(), 30);
    let c = &o.receipt.results.all.counts;
    assert_eq!(
        (c.cohort, c.pass + c.miss, c.failed, c.censored),
        (30, 25, 5, 0)
    );
    assert_eq!(
        o.receipt.results.all.reasons.failure.get("http_500"),
        Some(&5)
    );
    assert_eq!(
        t.boundary["arrival"],
        goodput_core::trace::Scalar::String("scheduled".into())
    );
    // One successful request by hand: goodput's TPOT is guidellm's inter-token
    // latency (last − first token over n − 1), and its TTFT adds the dispatch
    // delay to guidellm's (which starts at request_start).
    let src = source_json("guidellm_benchmarks.json");
    let req = &src["benchmarks"][0]["requests"]["successful"][0];
    let id = req["request_id"].as_str().unwrap();
    let row = t
        .rows
        .iter()
        .find(|r| r.id == id)
        .expect("row by request id");
    let n = row.output_tokens.unwrap() as f64;
    let tpot = (row.completed_ms.unwrap() - row.first_token_ms.unwrap()) / (n - 1.0);
    assert!(
        (tpot - req["inter_token_latency_ms"].as_f64().unwrap()).abs() < 1e-3,
        "{tpot}"
    );
    let ttft = row.first_token_ms.unwrap() - row.arrival_ms;
    let Some(goodput_core::trace::Scalar::Number(delay)) = row.labels.get("dispatchDelayMs") else {
        panic!("no dispatch delay label: {row:?}")
    };
    let theirs = req["time_to_first_token_ms"].as_f64().unwrap();
    assert!(
        (ttft - (theirs + delay)).abs() < 2e-3,
        "{ttft} vs {theirs} + {delay}"
    );
    assert_ordinary_trace(&o);
}

#[test]
fn comparison_texts_are_stable_and_fit_100_columns() {
    for (name, o) in [
        ("vllm", vllm()),
        ("aiperf", aiperf()),
        ("guidellm", guidellm()),
    ] {
        let text = render(&o);
        for line in text.lines() {
            assert!(line.chars().count() <= 100, "{name}: too wide: {line}");
        }
        insta::assert_snapshot!(format!("comparison_{name}"), text);
    }
}

// ---- the binary: files, exit statuses, messages ----

fn run(args: &[&str]) -> Output {
    goodput().args(args).output().expect("spawn goodput")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn path(name: &str) -> String {
    fixture(&format!("import/{name}")).display().to_string()
}

#[test]
fn the_command_writes_a_trace_that_goodput_analyze_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("trace.json");
    let out_s = out.display().to_string();
    let o = run(&[
        "import",
        "--from",
        "aiperf",
        &path("aiperf_profile_export.jsonl"),
        "--summary",
        &path("aiperf_profile_export_aiperf.json"),
        "--slo",
        "aiperf:ttft=35,tpot=12.8",
        "--out",
        &out_s,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("aiperf reported"), "{text}");
    assert!(
        text.contains(&format!("next: goodput analyze {out_s}")),
        "{text}"
    );
    let a = run(&["analyze", &out_s]);
    assert_eq!(a.status.code(), Some(0), "{}", stderr(&a));
    // --json: the same comparison for machines.
    let j = run(&[
        "import",
        "--from",
        "vllm",
        &path("vllm_synthetic.json"),
        "--out",
        &out_s,
        "--json",
    ]);
    assert_eq!(j.status.code(), Some(0), "{}", stderr(&j));
    let v: Value = serde_json::from_slice(&j.stdout).expect("JSON");
    assert_eq!(v["rows"], 30);
    assert_eq!(v["comparison"]["tool"], "vllm");
    assert_eq!(v["reported"]["failed"], 2);
}

fn rejected(args: &[&str], bytes: &[u8], needle: &str) {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("input");
    std::fs::write(&input, bytes).unwrap();
    let out = dir.path().join("trace.json");
    let mut full: Vec<String> = vec!["import".into()];
    full.extend(args.iter().map(|s| s.to_string()));
    full.push(input.display().to_string());
    full.push("--out".into());
    full.push(out.display().to_string());
    let refs: Vec<&str> = full.iter().map(String::as_str).collect();
    let o = run(&refs);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    assert!(err.contains(needle), "expected `{needle}` in: {err}");
    assert!(!out.exists(), "no trace is written for a rejected input");
}

#[test]
fn a_truncated_vllm_file_names_its_line_and_column() {
    let bytes = read("vllm_synthetic.json");
    rejected(
        &["--from", "vllm"],
        &bytes[..bytes.len() / 2],
        "rejected: cannot import the source file as vllm output: line ",
    );
    rejected(
        &["--from", "vllm"],
        &bytes[..bytes.len() / 2],
        "not valid JSON",
    );
}

#[test]
fn a_vllm_value_of_the_wrong_type_names_its_json_pointer() {
    let mut doc = source_json("vllm_synthetic.json");
    doc["ttfts"][3] = Value::String("fast".into());
    rejected(
        &["--from", "vllm"],
        &serde_json::to_vec(&doc).unwrap(),
        "/ttfts/3: invalid type: string \"fast\"",
    );
    let mut doc = source_json("vllm_synthetic.json");
    doc["errors"].as_array_mut().unwrap().pop();
    rejected(
        &["--from", "vllm"],
        &serde_json::to_vec(&doc).unwrap(),
        "/errors: has 29 entries but /start_times has 30",
    );
}

#[test]
fn a_jsonl_line_that_is_not_json_names_its_line() {
    let text = String::from_utf8(read("aiperf_profile_export.jsonl")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{\"metadata\": oops";
    rejected(
        &["--from", "aiperf"],
        lines.join("\n").as_bytes(),
        "line 3, column 14: not valid JSON",
    );
}

#[test]
fn an_unknown_time_unit_is_refused_at_its_place() {
    let text = String::from_utf8(read("aiperf_profile_export.jsonl")).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let mut rec: Value = serde_json::from_str(&lines[1]).unwrap();
    if rec["metrics"]["time_to_first_token"].is_null() {
        rec["metrics"]["time_to_first_token"] = serde_json::json!({"value": 1, "unit": "ms"});
    }
    rec["metrics"]["time_to_first_token"]["unit"] = Value::String("fortnights".into());
    lines[1] = serde_json::to_string(&rec).unwrap();
    rejected(
        &["--from", "aiperf"],
        lines.join("\n").as_bytes(),
        "line 2 /metrics/time_to_first_token/unit: `fortnights` is not a time unit",
    );
    // A token count in a time unit is refused too.
    let mut rec: Value = serde_json::from_str(&lines[0]).unwrap();
    rec["metrics"]["output_sequence_length"]["unit"] = Value::String("ms".into());
    lines[0] = serde_json::to_string(&rec).unwrap();
    rejected(
        &["--from", "aiperf"],
        lines.join("\n").as_bytes(),
        "line 1 /metrics/output_sequence_length/unit: `ms` is not a token count",
    );
}

#[test]
fn guidellm_problems_name_the_benchmark_and_request() {
    let bytes = read("guidellm_benchmarks.json");
    rejected(
        &["--from", "guidellm", "--benchmark", "3"],
        &bytes,
        "/benchmarks: has 1 benchmark(s); --benchmark 3 names none",
    );
    let mut doc = source_json("guidellm_benchmarks.json");
    doc["benchmarks"][0]["requests"]["successful"][2]["info"]["timings"]["first_token_iteration"] =
        Value::Null;
    rejected(
        &["--from", "guidellm"],
        &serde_json::to_vec(&doc).unwrap(),
        "/benchmarks/0/requests/successful/2/info/timings/first_token_iteration: is missing",
    );
}

#[test]
fn summary_is_refused_for_tools_other_than_aiperf() {
    rejected(
        &["--from", "vllm", "--summary", "x.json"],
        &read("vllm_synthetic.json"),
        "usage: --summary is only for --from aiperf",
    );
}

#[test]
fn guidellm_incomplete_requests_are_censored_in_flight_not_failed() {
    let o = run_pipeline(
        Source::Guidellm,
        "guidellm_max_duration_benchmarks.json",
        "chat:ttft=40,tpot=25,e2e=1500",
        None,
    );
    let c = &o.receipt.results.all.counts;
    assert_eq!(
        (c.cohort, c.pass + c.miss, c.failed, c.censored),
        (42, 24, 2, 16)
    );
    assert_eq!(o.receipt.results.all.reasons.censored.in_flight, 16);
    let in_flight: Vec<_> = o
        .imported
        .trace
        .rows
        .iter()
        .filter(|r| r.status == RowStatus::InFlight)
        .collect();
    assert_eq!(in_flight.len(), 16);
    assert!(in_flight
        .iter()
        .all(|r| r.completed_ms.is_none() && r.reason.is_none()));
    // guidellm cut them at its max_duration; most had already streamed a first token.
    assert!(in_flight.iter().any(|r| r.first_token_ms.is_some()));
    assert_eq!(o.imported.reported.incomplete, Some(16));
    assert_ordinary_trace(&o);
    insta::assert_snapshot!("comparison_guidellm_max_duration", render(&o));
}

#[test]
fn a_large_import_prints_the_analyze_command_with_raised_limits() {
    // 600 requests: over the analyzer's default 500 rows.
    let n = 600;
    let doc = serde_json::json!({
        "duration": 70.0,
        "start_times": (0..n).map(|i| 100.0 + f64::from(i) * 0.1).collect::<Vec<_>>(),
        "ttfts": vec![0.05; n as usize],
        "itls": vec![vec![0.01; 3]; n as usize],
        "output_lens": vec![4; n as usize],
        "errors": vec![""; n as usize],
    });
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("big.json");
    std::fs::write(&input, serde_json::to_vec(&doc).unwrap()).unwrap();
    let out = dir.path().join("big-trace.json");
    let o = run(&[
        "import",
        "--from",
        "vllm",
        &input.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let bytes = std::fs::metadata(&out).unwrap().len();
    let command = format!(
        "next: goodput analyze {} --max-rows 600 --max-bytes {bytes}",
        out.display()
    );
    assert!(text.contains(&command), "{text}");
    // Without the raised limits the analyzer refuses it, as any trace.
    let a = run(&["analyze", &out.display().to_string()]);
    assert_eq!(a.status.code(), Some(2));
    // A source over --max-input-bytes names that flag.
    rejected(
        &["--from", "vllm", "--max-input-bytes", "10"],
        &read("vllm_synthetic.json"),
        "(raise it with --max-input-bytes)",
    );
}

/// One AIPerf profiling record starting at `start_ms` (ns since an epoch).
fn aiperf_record(id: &str, start_ms: u64, cancelled_at_ms: Option<u64>) -> String {
    let ns = |ms: u64| 1_700_000_000_000_000_000u64 + ms * 1_000_000;
    match cancelled_at_ms {
        None => format!(
            r#"{{"metadata":{{"x_request_id":"{id}","credit_issued_ns":{s},"request_start_ns":{s},"request_end_ns":{e},"benchmark_phase":"profiling","was_cancelled":false}},"metrics":{{"time_to_first_token":{{"value":10,"unit":"ms"}},"request_latency":{{"value":50,"unit":"ms"}},"usage_completion_tokens":{{"value":5,"unit":"tokens"}}}},"error":null}}"#,
            s = ns(start_ms),
            e = ns(start_ms + 50)
        ),
        Some(c) => format!(
            r#"{{"metadata":{{"x_request_id":"{id}","credit_issued_ns":{s},"request_start_ns":{s},"request_end_ns":{e},"benchmark_phase":"profiling","was_cancelled":true,"cancellation_time_ns":{e}}},"metrics":{{}},"error":null}}"#,
            s = ns(start_ms),
            e = ns(c)
        ),
    }
}

#[test]
fn aiperf_cancelled_profiling_requests_stay_in_the_cohort() {
    // 10 profiling records 100 ms apart: q0–q7 complete (TTFT 10 ms, latency
    // 50 ms), q8 (800 ms) and q9 (900 ms) are cancelled at 1000 ms, the end of
    // --benchmark-duration. AIPerf counted 10 requests, 2 incomplete. The
    // window [0, 1000) covers every send: cohort 10, pass 8, failed 2
    // (cancelled), pass share 8 / 10 = 0.8.
    let lines: Vec<String> = (0..10u64)
        .map(|i| aiperf_record(&format!("q{i}"), i * 100, (i >= 8).then_some(1000)))
        .collect();
    let o = pipeline(
        Source::Aiperf,
        lines.join("\n").as_bytes(),
        &options("aiperf:ttft=35,tpot=12.8"),
        None,
    )
    .expect("imports");
    let w = o.imported.trace.window;
    assert_eq!((w.start_ms, w.end_ms), (0.0, 1000.0));
    let all = &o.receipt.results.all;
    let c = all.counts;
    assert_eq!((c.cohort, c.pass, c.failed, c.excluded), (10, 8, 2, 0));
    assert_eq!(all.rates.pass_share, Some(0.8));
    assert_eq!(all.reasons.failure.get("cancelled"), Some(&2));
    assert_eq!(o.imported.reported.requests, Some(10));
    assert!(
        !o.comparison
            .differences
            .iter()
            .any(|d| d.contains("excluded by goodput as by")),
        "{:?}",
        o.comparison.differences
    );
}

/// A `vllm bench serve` result with send times: `ttfts` (s), one ITL each,
/// `duration` and `request_goodput` as given.
fn vllm_doc(duration: f64, starts: &[f64], ttfts: &[f64], goodput: f64) -> Vec<u8> {
    let n = ttfts.len();
    serde_json::to_vec(&serde_json::json!({
        "duration": duration,
        "completed": n,
        "request_throughput": n as f64 / duration,
        "request_goodput": goodput,
        "start_times": starts,
        "ttfts": ttfts,
        "itls": vec![vec![0.01]; n],
        "output_lens": vec![2; n],
        "errors": vec![""; n],
    }))
    .unwrap()
}

#[test]
fn vllm_goodput_is_reproduced_with_a_raw_timer_duration() {
    // 10 requests, every one passing (TTFT 0.1 s ≤ 0.25 s, E2E 0.11 s); vLLM
    // divides by its raw timer difference: 10 / 4.7959394321 req/s.
    let duration = 4.7959394321;
    let starts: Vec<f64> = (0..10).map(|i| 1000.0 + 0.4 * i as f64).collect();
    let doc = vllm_doc(duration, &starts, &[0.1; 10], 10.0 / duration);
    let o =
        pipeline(Source::Vllm, &doc, &options("vllm:ttft=250,e2e=4000"), None).expect("imports");
    assert_eq!(o.receipt.results.all.counts.pass, 10);
    let said = o.comparison.differences.join("\n");
    assert!(said.contains("Goodput reproduced"), "{said}");
    assert!(!said.contains("Goodput differs"), "{said}");
}

#[test]
fn vllm_times_keep_their_precision_so_no_verdict_flips_near_a_gate() {
    // TTFT gate 250 ms. vLLM: 0.2500004 s (0.4 µs over) is not good,
    // 0.2499996 s (0.4 µs under) is. Rounded to the microsecond both would
    // read 250.000 ms: a pass under "inclusive" for the first, a miss under
    // "strict" for the second. Kept at full precision, each verdict stays.
    let starts = [2000.123456789, 2000.523456789];
    let ttfts = [0.2500004, 0.2499996];
    let doc = vllm_doc(1.5, &starts, &ttfts, 1.0 / 1.5);
    for equality in [Equality::Inclusive, Equality::Strict] {
        let (name, gates) = parse_slo("vllm:ttft=250").unwrap();
        let o = pipeline(
            Source::Vllm,
            &doc,
            &ImportOptions::with_gates(&name, gates, equality),
            None,
        )
        .expect("imports");
        let rows = o.receipt.rows.as_ref().expect("rows");
        let verdicts: Vec<&str> = rows.iter().map(|r| r.verdict.as_str()).collect();
        assert_eq!(verdicts, ["miss", "pass"], "{equality:?}");
        let ttft0 = rows[0].ttft_ms.unwrap();
        assert!((ttft0 - 250.0004).abs() < 1e-9, "{ttft0}");
    }
}
