//! `goodput import`: the tools' per-request inter-token latencies become
//! `gapsMs` by one rule (docs/contract.md §10.15 "Imported gaps"), AIPerf's
//! and guidellm's first output token becomes `firstAnswerMs`, AIPerf's
//! reasoning counts `reasoningTokens` (§10.16); the comparison shows the
//! tools' own ITL and TTFA beside goodput's, and the checks count every row
//! the gap rule dropped.

mod common;

use common::{fixture, goodput};
use goodput::cli::flags::parse_slo;
use goodput_core::trace::Equality;
use goodput_import::{pipeline, ImportOptions, Outcome, Source};
use serde_json::Value;

fn options(slo: &str, gaps: bool) -> ImportOptions {
    let (name, gates) = parse_slo(slo).expect("slo parses");
    ImportOptions {
        gaps,
        ..ImportOptions::with_gates(&name, gates, Equality::Inclusive)
    }
}

fn import(source: Source, bytes: &[u8], slo: &str) -> Outcome {
    pipeline(source, bytes, &options(slo, true), None).unwrap_or_else(|e| panic!("{e}"))
}

fn trace_rows(o: &Outcome) -> Vec<Value> {
    let doc: Value = serde_json::from_slice(&o.trace_bytes).expect("trace is JSON");
    doc["rows"].as_array().expect("rows").clone()
}

fn row<'a>(rows: &'a [Value], id: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["id"] == id)
        .unwrap_or_else(|| panic!("no row {id}"))
}

fn gaps_of(r: &Value) -> Option<Vec<f64>> {
    r.get("gapsMs").map(|g| {
        g.as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect()
    })
}

/// Four vLLM requests (`vllm bench serve` with `start_times` and a fork's
/// `latencies`), one per outcome of the gap rule. TTFT is 50 ms each.
/// - r0: ITLs 20, 30.5, 19.999 ms, E2E 120.499 ms: span 70.499, the sum: kept.
/// - r1: ITLs 10, 20.5 (30.5), E2E 80 → span 30: over by 0.5 ms, trimmed to 10, 20.
/// - r2: ITLs 10, 22 (32), span 30: over by 2 ms: gaps_exceed_span, none kept.
/// - r3: three ITLs for three tokens (at most two gaps): more_gaps_than_tokens.
const VLLM: &str = r#"{"duration": 1.0, "start_times": [10.0, 10.1, 10.2, 10.3],
 "ttfts": [0.05, 0.05, 0.05, 0.05],
 "itls": [[0.02, 0.0305, 0.019999], [0.01, 0.0205], [0.01, 0.022], [0.01, 0.01, 0.00005]],
 "latencies": [0.120499, 0.08, 0.08, 0.08],
 "output_lens": [4, 3, 3, 3], "errors": ["", "", "", ""],
 "mean_itl_ms": 16.6, "median_itl_ms": 15.0, "p99_itl_ms": 30.4}"#;

#[test]
fn vllm_itls_round_trip_and_each_check_is_counted() {
    let o = import(Source::Vllm, VLLM.as_bytes(), "v:ttft=100,tpot=50");
    let rows = trace_rows(&o);
    // r0: offsets 20, 50.5, 70.499 (already whole µs) → gaps 20, 30.5, 19.999:
    // vLLM's ITLs in ms, to the µs.
    assert_eq!(gaps_of(row(&rows, "r0")), Some(vec![20.0, 30.5, 19.999]));
    // r1: the last gap becomes what the 30 ms span leaves after 10: 20.
    assert_eq!(gaps_of(row(&rows, "r1")), Some(vec![10.0, 20.0]));
    assert_eq!(gaps_of(row(&rows, "r2")), None);
    assert_eq!(gaps_of(row(&rows, "r3")), None);
    let g = o.comparison.fidelity.gaps.as_ref().expect("gap checks");
    assert_eq!(g.field, "itls");
    assert_eq!((g.rows_with_list, g.kept, g.trimmed), (4, 2, 1));
    assert_eq!(
        (g.more_gaps_than_tokens, g.gaps_exceed_span, g.over_row_cap),
        (1, 1, 0)
    );
    let text = goodput_render::import::render(&o.comparison, "t.json", 4, "next");
    // Read with the wrapping undone.
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "checks: gaps itls kept on 2 of 4 completed rows (trimmed 1); \
             more_gaps_than_tokens 1, gaps_exceed_span 1, over_row_cap 0"
        ),
        "{text}"
    );
    assert!(flat.contains("more_gaps_than_tokens: 1 row(s)"), "{text}");
    assert!(flat.contains("gaps_exceed_span: 1 row(s)"), "{text}");
}

#[test]
fn the_receipt_of_imported_vllm_gaps_is_their_distribution_beside_vllms_itl() {
    let o = import(Source::Vllm, VLLM.as_bytes(), "v:ttft=100,tpot=50");
    let gaps = o.receipt.results.all.gaps.as_ref().expect("gaps block");
    // Kept gaps: r0 20, 30.5, 19.999; r1 10, 20. Sorted 10, 19.999, 20, 20,
    // 30.5: n 5, p50 = rank ⌈2.5⌉ = 3 → 20, p99 = rank 5 → 30.5, mean
    // 100.499 / 5 = 20.0998. Largest per row: 30.5 and 20.
    assert_eq!(gaps.rows, 2);
    let s = &gaps.gap_ms;
    assert_eq!(
        (s.n, s.p50, s.p99, s.max),
        (5, Some(20.0), Some(30.5), Some(30.5))
    );
    assert!((s.mean.unwrap() - 20.0998).abs() < 1e-9, "{s:?}");
    assert_eq!(gaps.largest_gap_ms.n, 2);
    let itl: Vec<(&str, Option<f64>, Option<f64>)> = o
        .comparison
        .figures
        .iter()
        .filter(|f| f.name.starts_with("ITL"))
        .map(|f| (f.name.as_str(), f.tool, f.goodput))
        .collect();
    assert_eq!(itl.len(), 3);
    assert_eq!(itl[1], ("ITL p50 ms", Some(15.0), Some(20.0)));
    assert_eq!(itl[2], ("ITL p99 ms", Some(30.4), Some(30.5)));
}

#[test]
fn no_gaps_leaves_every_list_out_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("v.json");
    std::fs::write(&src, VLLM).unwrap();
    let out = dir.path().join("t.json");
    let o = goodput()
        .args([
            "import",
            "--from",
            "vllm",
            "--no-gaps",
            "--slo",
            "v:ttft=100",
        ])
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(
        text.contains("  gaps    itls left out (--no-gaps) on 4 completed rows"),
        "{text}"
    );
    let trace = std::fs::read_to_string(&out).unwrap();
    assert!(!trace.contains("gapsMs"), "{trace}");
    // The ITL lines keep vLLM's figures; goodput has none to show.
    assert!(text.contains("ITL p50 ms"), "{text}");
    assert!(!trace.is_empty());
}

#[test]
fn a_negative_itl_is_refused_at_its_place() {
    let bad = VLLM.replace("[0.01, 0.0205]", "[0.01, -0.0205]");
    let e = pipeline(
        Source::Vllm,
        bad.as_bytes(),
        &options("v:ttft=100", true),
        None,
    )
    .expect_err("a negative ITL");
    assert!(
        e.to_string()
            .contains("/itls/1/1: must be a finite number >= 0"),
        "{e}"
    );
}

/// Three AIPerf profiling records (t0 = the first start).
/// - a (ms): TTFT 100, TTFO 250, latency 400; usage 5 tokens of which 2
///   reasoning, AIPerf's own counts 6 and 3; inter-chunk 150, 50, 60, 40.
/// - b (ns): TTFT = TTFO = 10 ms, latency 60.000579 ms, 3 tokens; inter-chunk
///   20.000123 and 30.000456 ms.
/// - c: TTFT 50, latency 80, 4 tokens all reasoning, no TTFO (no answer);
///   inter-chunk 10, 10, 10.
fn aiperf_export() -> String {
    let m = |v: &str, unit: &str| format!(r#"{{"value":{v},"unit":"{unit}"}}"#);
    let record = |id: &str, start: u64, metrics: Vec<(&str, String)>| {
        let body: Vec<String> = metrics
            .iter()
            .map(|(k, v)| format!(r#""{k}":{v}"#))
            .collect();
        format!(
            r#"{{"metadata":{{"x_request_id":"{id}","request_start_ns":{start},"request_end_ns":{},"benchmark_phase":"profiling"}},"metrics":{{{}}},"error":null}}"#,
            start + 400_000_000,
            body.join(",")
        )
    };
    [
        record(
            "a",
            1_000_000_000,
            vec![
                ("time_to_first_token", m("100.0", "ms")),
                ("time_to_first_output_token", m("250.0", "ms")),
                ("request_latency", m("400.0", "ms")),
                ("usage_completion_tokens", m("5", "tokens")),
                ("usage_reasoning_tokens", m("2", "tokens")),
                ("output_sequence_length", m("6", "tokens")),
                ("reasoning_token_count", m("3", "tokens")),
                ("inter_chunk_latency", m("[150.0, 50.0, 60.0, 40.0]", "ms")),
            ],
        ),
        record(
            "b",
            1_500_000_000,
            vec![
                ("time_to_first_token", m("10000000", "ns")),
                ("time_to_first_output_token", m("10000000", "ns")),
                ("request_latency", m("60000579", "ns")),
                ("usage_completion_tokens", m("3", "tokens")),
                ("inter_chunk_latency", m("[20000123, 30000456]", "ns")),
            ],
        ),
        record(
            "c",
            2_000_000_000,
            vec![
                ("time_to_first_token", m("50.0", "ms")),
                ("request_latency", m("80.0", "ms")),
                ("usage_completion_tokens", m("4", "tokens")),
                ("usage_reasoning_tokens", m("4", "tokens")),
                ("inter_chunk_latency", m("[10.0, 10.0, 10.0]", "ms")),
            ],
        ),
    ]
    .join("\n")
}

#[test]
fn aiperf_inter_chunk_latencies_ttfo_and_reasoning_counts_map_by_hand() {
    let o = import(
        Source::Aiperf,
        aiperf_export().as_bytes(),
        "x:ttft=200,ttfa=300",
    );
    let rows = trace_rows(&o);
    let a = row(&rows, "a");
    assert_eq!(gaps_of(a), Some(vec![150.0, 50.0, 60.0, 40.0]));
    // Arrival 0: first answer at 0 + 250; reasoning 2 of 5 (usage); AIPerf's 3 a label.
    assert_eq!(a["firstAnswerMs"], 250.0);
    assert_eq!(a["reasoningTokens"], 2);
    assert_eq!(a["labels"]["clientReasoningTokens"], 3.0);
    let b = row(&rows, "b");
    // Offsets 20.000123 → 20.0 and 50.000579 → 50.001 ms at the µs: gaps 20
    // and 30.001, each within 1 µs of AIPerf's 20.000123 and 30.000456.
    let gb = gaps_of(b).unwrap();
    assert_eq!(gb, [20.0, 30.001]);
    for (g, itl) in gb.iter().zip([20.000123, 30.000456]) {
        assert!((g - itl).abs() <= 0.001, "{g} vs {itl}");
    }
    // Arrival 500 ms after a; TTFO 10 ms.
    assert_eq!(b["firstAnswerMs"], 510.0);
    let c = row(&rows, "c");
    assert!(c.get("firstAnswerMs").is_none(), "{c}");
    assert_eq!(c["reasoningTokens"], 4);
    let g = o.comparison.fidelity.gaps.as_ref().unwrap();
    assert_eq!(
        (g.field.as_str(), g.rows_with_list, g.kept),
        ("inter_chunk_latency", 3, 3)
    );
}

#[test]
fn the_receipt_of_an_imported_aiperf_run_shows_gaps_ttfa_and_reasoning() {
    let o = import(
        Source::Aiperf,
        aiperf_export().as_bytes(),
        "x:ttft=200,ttfa=300",
    );
    let all = &o.receipt.results.all;
    let gaps = all.gaps.as_ref().expect("gaps");
    // 9 gaps: 150, 50, 60, 40 | 20, 30.001 | 10, 10, 10. Sorted: 10, 10, 10,
    // 20, 30.001, 40, 50, 60, 150: p50 = rank 5 → 30.001; p99 = rank 9 → 150.
    let s = &gaps.gap_ms;
    assert_eq!(
        (s.n, s.p50, s.p99, s.max),
        (9, Some(30.001), Some(150.0), Some(150.0))
    );
    let answer = all.answer.as_ref().expect("answer");
    // Answered a (TTFA 250) and b (10); c never answered: no_answer.
    assert_eq!((answer.answered, answer.no_answer), (2, 1));
    let t = &answer.ttfa_ms;
    assert_eq!(
        (t.n, t.p50, t.p99, t.mean),
        (2, Some(10.0), Some(250.0), Some(130.0))
    );
    // Thinking: a 250 − 100 = 150, b 0.
    assert_eq!(answer.thinking_ms.max, Some(150.0));
    let r = answer.reasoning.as_ref().expect("reasoning");
    // a 2 of 5, c 4 of 4: 6 of 9.
    assert_eq!((r.rows, r.reasoning_tokens, r.output_tokens), (2, 6, 9));
    assert_eq!(all.reasons.miss.no_answer, Some(1));
}

#[test]
fn the_text_receipt_of_an_imported_trace_prints_the_gap_and_ttfa_figures() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("p.jsonl");
    std::fs::write(&src, aiperf_export()).unwrap();
    let trace = dir.path().join("t.json");
    let o = goodput()
        .args(["import", "--from", "aiperf", "--slo", "x:ttft=200,ttfa=300"])
        .arg(&src)
        .arg("--out")
        .arg(&trace)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = goodput().arg("analyze").arg(&trace).output().unwrap();
    let text = String::from_utf8(r.stdout).unwrap();
    // The figures of the test above, to one decimal: 3 rows, 9 gaps, p50
    // 30.001, p99 and max 150; 2 answered, 1 not, TTFA p50 10, p95 = p99 =
    // 250 (rank 2 of 2), thinking p50 0 and p95 150, reasoning 6 / 9.
    assert!(
        text.contains("all               3        9      30.0     150.0     150.0"),
        "{text}"
    );
    assert!(
        text.contains(
            "all                 2         1      10.0     250.0     250.0        0.0      150.0      0         1    66.7 %"
        ),
        "{text}"
    );
}

#[test]
fn a_ttfo_outside_the_stream_is_refused_at_its_place() {
    let bad = aiperf_export().replace(r#""value":250.0"#, r#""value":450.0"#);
    let e = pipeline(
        Source::Aiperf,
        bad.as_bytes(),
        &options("x:ttft=200", true),
        None,
    )
    .expect_err("TTFO after the completion");
    assert!(
        e.to_string()
            .contains("line 1 /metrics/time_to_first_output_token/value"),
        "{e}"
    );
}

#[test]
fn the_real_aiperf_export_keeps_every_inter_chunk_latency_to_the_microsecond() {
    let bytes = std::fs::read(fixture("import/aiperf_profile_export.jsonl")).unwrap();
    let o = import(Source::Aiperf, &bytes, "aiperf:ttft=35,tpot=12.8");
    let rows = trace_rows(&o);
    let mut compared = 0;
    for line in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let rec: Value = serde_json::from_slice(line).unwrap();
        let Some(icl) = rec["metrics"].get("inter_chunk_latency") else {
            continue;
        };
        assert_eq!(icl["unit"], "ms");
        let r = row(&rows, rec["metadata"]["x_request_id"].as_str().unwrap());
        let gaps = gaps_of(r).expect("kept");
        let itls: Vec<f64> = icl["value"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(gaps.len(), itls.len());
        for (g, itl) in gaps.iter().zip(&itls) {
            assert!((g - itl).abs() <= 0.001, "{g} vs {itl}");
        }
        compared += 1;
    }
    // 29 of the 34 records (warm-up included) stream two or more content chunks.
    assert_eq!(compared, 29);
}

#[test]
fn the_vllm_0_8_4_export_against_the_sim_has_one_itl_per_token() {
    // benchmark_serving.py appends an ITL for every chunk with `choices`;
    // the sim ends each stream with an empty finish chunk, so every one of
    // the 48 successful requests has output_lens ITLs, one more than
    // outputTokens − 1: all 48 keep no gaps, counted, and vLLM's own ITL
    // figures (which include the empty chunks) stay on the tool's side.
    let bytes = std::fs::read(fixture("import/vllm_benchmark_serving_0.8.4.json")).unwrap();
    let o = import(Source::Vllm, &bytes, "vllm:ttft=50,tpot=24,e2e=300");
    let g = o.comparison.fidelity.gaps.as_ref().unwrap();
    assert_eq!(
        (g.rows_with_list, g.kept, g.more_gaps_than_tokens),
        (48, 0, 48)
    );
    assert!(o.receipt.results.all.gaps.is_none());
    let p50 = o
        .comparison
        .figures
        .iter()
        .find(|f| f.name == "ITL p50 ms")
        .unwrap();
    assert_eq!((p50.tool, p50.goodput), (Some(21.18266049990325), None));
}

/// A guidellm benchmark (0.7.0 on): g0's first output token 300 ms after the
/// start, after its first token at 100; g1 reasoned to the end (no answer).
const GUIDELLM: &str = r#"{"benchmarks":[{"start_time":100.0,"end_time":101.0,
 "metrics":{"time_to_first_output_token_ms":{"successful":{"percentiles":{"p50":300.0,"p99":400.0}}}},
 "requests":{"successful":[
  {"request_id":"g0","info":{"timings":{"request_start":100.0,"first_token_iteration":100.1,
   "first_output_token_iteration":100.3,"last_token_iteration":100.5}},"output_tokens":10},
  {"request_id":"g1","info":{"timings":{"request_start":100.2,"first_token_iteration":100.25,
   "first_output_token_iteration":null,"last_token_iteration":100.6}},"output_tokens":8}]}}]}"#;

#[test]
fn guidellm_first_output_token_is_the_first_answer() {
    let o = import(Source::Guidellm, GUIDELLM.as_bytes(), "g:ttft=200,ttfa=500");
    let rows = trace_rows(&o);
    // t0 = start_time 100.0: (100.3 − 100.0) s = 300 ms at the µs.
    assert_eq!(row(&rows, "g0")["firstAnswerMs"], 300.0);
    assert!(row(&rows, "g1").get("firstAnswerMs").is_none());
    assert!(
        o.comparison.fidelity.gaps.is_none(),
        "guidellm keeps no per-token times"
    );
    let ttfa: Vec<(Option<f64>, Option<f64>)> = o
        .comparison
        .figures
        .iter()
        .filter(|f| f.name.starts_with("TTFA"))
        .map(|f| (f.tool, f.goodput))
        .collect();
    // goodput's TTFA over the one answered row: 300 at p50 and p99.
    assert_eq!(
        ttfa,
        [(Some(300.0), Some(300.0)), (Some(400.0), Some(300.0))]
    );
    assert_eq!(o.receipt.results.all.reasons.miss.no_answer, Some(1));
}

#[test]
fn exports_without_a_first_output_token_carry_no_first_answer() {
    // The committed guidellm and vLLM fixtures name no first output token:
    // no row may claim "no answer came".
    for (source, name) in [
        (Source::Guidellm, "guidellm_benchmarks.json"),
        (Source::Vllm, "vllm_synthetic.json"),
    ] {
        let bytes = std::fs::read(fixture(&format!("import/{name}"))).unwrap();
        let o = import(source, &bytes, "x:ttft=1000");
        let text = String::from_utf8(o.trace_bytes.clone()).unwrap();
        assert!(!text.contains("firstAnswerMs"), "{name}");
        assert!(o.receipt.results.all.answer.is_none(), "{name}");
    }
}

#[test]
fn a_ttfa_gate_on_an_export_without_first_answers_is_refused() {
    // vLLM's benchmark records no first answer token: a ttfa gate would
    // make every completed row a no_answer miss, so the import exits 2.
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("v.json");
    std::fs::write(&src, VLLM).unwrap();
    let out = dir.path().join("t.json");
    let o = goodput()
        .args(["import", "--from", "vllm", "--slo", "v:ttft=100,ttfa=300"])
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8(o.stderr).unwrap();
    assert!(
        err.contains("--slo declares a ttfa gate, but this vllm export names no first answer"),
        "{err}"
    );
    assert!(!out.exists(), "nothing is written on exit 2");
    // AIPerf's export names its first output tokens: the same gate is judged.
    let e = pipeline(
        Source::Aiperf,
        aiperf_export().as_bytes(),
        &options("x:ttft=200,ttfa=300", true),
        None,
    );
    assert!(e.is_ok());
}
