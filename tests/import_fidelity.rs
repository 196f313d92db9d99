//! Import fidelity on real exports (`fixtures/import/README.txt` says how each
//! was made): the server's token counts win over a tool's client-side
//! tokenizer, and a tool that did not send the rate it was configured for is
//! caught. Every figure asserted here was computed by hand from the fixture
//! (the arithmetic is in the comments).

mod common;

use common::{assert_valid, fixture, validator};
use goodput::cli::flags::parse_slo;
use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::trace::{Equality, Scalar, TokenCount};
use goodput_import::fidelity::{poisson_interval, Process, CLIENT_TOKENS_LABEL, POISSON_TAIL};
use goodput_import::{pipeline, same_figure, ImportOptions, Outcome, Source};
use serde_json::Value;

fn read(name: &str) -> Vec<u8> {
    std::fs::read(fixture(&format!("import/{name}"))).expect("read fixture")
}

fn run(source: Source, file: &str, slo: &str, summary: Option<&str>) -> Outcome {
    let (name, gates) = parse_slo(slo).expect("slo parses");
    let options = ImportOptions::with_gates(&name, gates, Equality::Inclusive);
    let summary = summary.map(read);
    pipeline(source, &read(file), &options, summary.as_deref())
        .unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// AIPerf 0.13.0 with a 260-token tokenizer against `goodput sim` (whose
/// usage counts one token per word): AIPerf's count is about 4× the server's.
fn aiperf_client_tokenizer() -> Outcome {
    run(
        Source::Aiperf,
        "aiperf_client_tokenizer_profile_export.jsonl",
        "aiperf:ttft=50,tpot=10",
        Some("aiperf_client_tokenizer_profile_export_aiperf.json"),
    )
}

/// guidellm 0.8.1, `poisson` at 3 req/s for 30 s: it sent 148 requests.
fn guidellm_overshoot() -> Outcome {
    run(
        Source::Guidellm,
        "guidellm_poisson_overshoot_benchmarks.json",
        "chat:ttft=40,tpot=25,e2e=1000",
        None,
    )
}

fn assert_close(got: Option<f64>, want: f64, what: &str) {
    let got = got.unwrap_or_else(|| panic!("{what}: none"));
    assert!((got - want).abs() < 1e-6, "{what}: {got} vs {want}");
}

#[test]
fn aiperf_rows_take_the_servers_usage_count_and_keep_aiperfs_as_a_label() {
    let o = aiperf_client_tokenizer();
    let t = &o.imported.trace;
    // Every record carries usage, so the trace's tokens are the server's.
    assert_eq!(t.tokens, TokenCount::Usage);
    assert_eq!(o.receipt.contract.tokens, "usage");
    assert_eq!(o.receipt.contract.tpot_label, "tpot");
    // Line 1 (warm-up): usage_completion_tokens 30, output_sequence_length 117.
    assert_eq!(t.rows[0].output_tokens, Some(30));
    assert_eq!(t.rows[0].labels[CLIENT_TOKENS_LABEL], Scalar::Number(117.0));
    // Line 5 (first profiling record): 30 and 117 as well; line 8: 64 and 256.
    assert_eq!(t.rows[4].output_tokens, Some(30));
    assert_eq!(t.rows[7].output_tokens, Some(64));
    assert_eq!(t.rows[7].labels[CLIENT_TOKENS_LABEL], Scalar::Number(256.0));
    let doc: Value = serde_json::from_slice(&o.trace_bytes).expect("trace is JSON");
    assert_eq!(doc["tokens"], "usage");
    assert_eq!(doc["boundary"]["tokens"], "aiperf usage_completion_tokens");
    assert_valid(&validator("trace.schema.json"), &doc, "imported trace");
}

#[test]
fn aiperf_token_disagreement_is_counted_with_median_and_max() {
    let o = aiperf_client_tokenizer();
    let t = o
        .comparison
        .fidelity
        .tokens
        .as_ref()
        .expect("both counts are in the export");
    assert_eq!(t.client_field, "output_sequence_length");
    // The 30 profiling records all completed, and on every one
    // output_sequence_length ≠ usage_completion_tokens (e.g. 117 vs 30).
    assert_eq!((t.rows_compared, t.rows_differing), (30, 30));
    // |osl − usage| sorted: nearest-rank median = the 15th of 30 = 135
    // (e.g. 180 vs 45); max = 256 − 64 = 192.
    assert_close(t.median_difference, 135.0, "median difference");
    assert_close(t.max_difference, 192.0, "max difference");
    // Relative to usage: the 15th of 30 is 300 % (e.g. 135 / 45).
    assert_close(t.median_difference_pct, 300.0, "median %");
    // Largest share: the record with usage 52 and osl 210 gives 158 / 52 = 303.846… %.
    assert_close(t.max_difference_pct, 158.0 / 52.0 * 100.0, "max %");
}

#[test]
fn aiperfs_goodput_is_reproduced_only_with_its_own_token_counts() {
    let o = aiperf_client_tokenizer();
    let summary: Value =
        serde_json::from_slice(&read("aiperf_client_tokenizer_profile_export_aiperf.json"))
            .unwrap();
    let theirs = summary["goodput"]["avg"].as_f64().unwrap();
    assert_eq!(summary["good_request_count"]["avg"], 22.0);
    let all = &o.receipt.results.all;
    let window_s = o.receipt.contract.window.duration_ms / 1000.0;
    // By usage, TPOT = (latency − TTFT) / (usage − 1): nearest-rank p50
    // 24.129321… ms, p99 25.934218… ms — over the 10 ms gate on every row.
    assert_close(all.latency.tpot_ms.p50, 24.129_321_339_622_64, "TPOT p50");
    assert_close(all.latency.tpot_ms.p99, 25.934_218_272_727_27, "TPOT p99");
    assert_eq!((all.counts.pass, all.counts.miss), (0, 30));
    assert_eq!(all.reasons.miss.tpot, 30);
    // By AIPerf's counts the same rows pass as AIPerf counted them: 22 (8 miss TTFT 50 ms).
    let c = o
        .comparison
        .fidelity
        .tokens
        .as_ref()
        .and_then(|t| t.with_client_counts.as_ref())
        .expect("a judgement with the client counts");
    assert_eq!((c.pass, c.one_token_pass), (22, 0));
    assert!(same_figure(c.goodput_per_s, theirs));
    assert!(same_figure(22.0 / window_s, theirs));
    // AIPerf's ITL p50 is 5.9669 ms (interpolated); by its counts, nearest rank gives 5.965866 ms.
    assert_close(c.tpot_p50_ms, 5.965_866_311_004_785, "client TPOT p50");
    assert_close(c.tpot_p99_ms, 6.339_475_577_777_777, "client TPOT p99");
    let d = &o.comparison.differences;
    assert!(
        d.iter()
            .any(|s| s.starts_with("Goodput differs by the token counts: aiperf reported")),
        "{d:#?}"
    );
    assert!(d.iter().any(|s| s.starts_with(
        "Token counts disagree: on 30 of 30 completed cohort rows aiperf's own count \
         (output_sequence_length"
    )));
}

#[test]
fn aiperfs_configured_rate_is_within_poisson_noise() {
    let o = aiperf_client_tokenizer();
    let r = o
        .comparison
        .fidelity
        .rate
        .as_ref()
        .expect("--request-rate 4");
    assert_eq!(r.configured.per_s, 4.0);
    assert_eq!(r.configured.process, Process::Poisson);
    // 30 profiling sends, first to last 7.822359689 s: (30 − 1) / 7.822359689 = 3.70732 req/s.
    assert_eq!(r.arrivals, 30);
    assert_close(Some(r.span_s), 7.822_359_689, "span");
    assert_close(Some(r.offered_per_s), 29.0 / 7.822_359_689, "offered");
    // λ·S = 31.289; Poisson(31.289): P(X ≤ 14) ≤ 0.0005 < P(X ≤ 15), P(X ≤ 51) ≥ 0.9995.
    assert_eq!(r.interval, Some([15, 51]));
    assert!(!r.beyond_noise);
}

#[test]
fn guidellms_poisson_overshoot_is_beyond_poisson_noise() {
    let o = guidellm_overshoot();
    assert_eq!(o.imported.reported.requests, Some(148));
    assert_eq!(o.receipt.results.all.counts.cohort, 148);
    let r = o
        .comparison
        .fidelity
        .rate
        .as_ref()
        .expect("poisson, rate 3");
    assert_eq!(r.configured.per_s, 3.0);
    assert_eq!(r.configured.process, Process::Poisson);
    // 148 scheduled arrivals (the 149th, cancelled, was scheduled after end_time),
    // first to last 29.719024 s: 147 gaps, 147 / 29.719024 = 4.94633 req/s.
    assert_eq!(r.arrivals, 148);
    assert!((r.span_s - 29.719_024).abs() < 1e-6, "{}", r.span_s);
    assert!((r.offered_per_s - 4.946_327).abs() < 1e-6);
    // λ·S = 3 × 29.719024 = 89.157; its central 99.9 % interval is [60, 122]; 147 > 122.
    assert!((r.expected_gaps - 89.157_071).abs() < 1e-5);
    assert_eq!(r.interval, Some([60, 122]));
    assert!(r.beyond_noise);
    let d = &o.comparison.differences;
    assert!(
        d.iter().any(|s| s.contains(
            "147 is outside: guidellm did not send what it was asked to. Every latency figure \
             of this run was measured at a load nobody asked for (4.9463 req/s, not 3)."
        )),
        "{d:#?}"
    );
    // guidellm's export carries one count per request (its output_tokens, from the
    // server's usage): nothing to set beside it.
    assert_eq!(o.comparison.fidelity.tokens, None);
}

#[test]
fn the_earlier_guidellm_fixtures_are_judged_by_the_same_rule() {
    // Constant at 6 req/s, 30 requests: 29 gaps in 4.833333 s = 6 req/s exactly;
    // λ·S = 29, interval [13, 48].
    let o = run(
        Source::Guidellm,
        "guidellm_benchmarks.json",
        "chat:ttft=40,tpot=22,e2e=500",
        None,
    );
    let r = o
        .comparison
        .fidelity
        .rate
        .as_ref()
        .expect("constant, rate 6");
    assert_eq!(r.configured.process, Process::Constant);
    assert_eq!(
        (r.arrivals, r.interval, r.beyond_noise),
        (30, Some([13, 48]), false)
    );
    assert!((r.offered_per_s - 6.0).abs() < 1e-6);
    // Poisson at 6 req/s cut at 3 s: 42 arrivals in 2.994859 s, 41 gaps where
    // λ·S = 17.969 allows [6, 33]: the same overshoot.
    let o = run(
        Source::Guidellm,
        "guidellm_max_duration_benchmarks.json",
        "chat:ttft=40,tpot=25,e2e=1500",
        None,
    );
    let r = o
        .comparison
        .fidelity
        .rate
        .as_ref()
        .expect("poisson, rate 6");
    assert_eq!(
        (r.arrivals, r.interval, r.beyond_noise),
        (42, Some([6, 33]), true)
    );
}

#[test]
fn a_record_without_usage_falls_back_to_aiperfs_count_and_says_client_tokenizer() {
    let text = String::from_utf8(read("aiperf_client_tokenizer_profile_export.jsonl")).unwrap();
    let mut lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Line 5 (usage 30, osl 117) loses its usage.
    lines[4]["metrics"]
        .as_object_mut()
        .unwrap()
        .remove("usage_completion_tokens");
    let bytes: Vec<u8> = lines
        .iter()
        .map(|v| serde_json::to_string(v).unwrap())
        .collect::<Vec<_>>()
        .join("\n")
        .into_bytes();
    let (name, gates) = parse_slo("aiperf:ttft=50,tpot=10").unwrap();
    let o = pipeline(
        Source::Aiperf,
        &bytes,
        &ImportOptions::with_gates(&name, gates, Equality::Inclusive),
        None,
    )
    .expect("imports");
    let t = &o.imported.trace;
    assert_eq!(t.tokens, TokenCount::ClientTokenizer);
    assert_eq!(t.rows[4].output_tokens, Some(117));
    assert!(!t.rows[4].labels.contains_key(CLIENT_TOKENS_LABEL));
    assert_eq!(o.receipt.contract.tokens, "client-tokenizer");
    assert_eq!(o.receipt.contract.tpot_label, "tpot_client_tokens");
    // The other 29 profiling rows still carry both counts, all differing.
    let tokens = o.comparison.fidelity.tokens.as_ref().unwrap();
    assert_eq!((tokens.rows_compared, tokens.rows_differing), (29, 29));
    // ...and the comparison says the one row without usage is judged by
    // AIPerf's own count, rather than "TPOT from usage" for all of them.
    assert_eq!(tokens.rows_without_usage, 1);
    let text =
        goodput_render::import::render(&o.comparison, "t.json", 30, "goodput analyze t.json");
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(
            "TPOT from usage, and from output_sequence_length on the 1 completed row without usage"
        ),
        "{text}"
    );
    assert!(
        flat.contains("1 completed row had no usage and keeps aiperf's own count"),
        "{text}"
    );
    // The analyzer accepts the new value, and the schema does too.
    analyze_bytes(&o.trace_bytes, AnalyzeOptions::default()).expect("analyzes");
    let doc: Value = serde_json::from_slice(&o.trace_bytes).unwrap();
    assert_eq!(doc["tokens"], "client-tokenizer");
    assert_valid(
        &validator("trace.schema.json"),
        &doc,
        "client-tokenizer trace",
    );
}

#[test]
fn poisson_intervals_match_a_direct_sum() {
    // Each bound by summing e^-mu mu^k / k! from k = 0 (done by hand in Python for
    // the fixtures' means): mu = 31.289438756 → [15, 51]; 89.157071 → [60, 122].
    assert_eq!(
        poisson_interval(31.289_438_756, POISSON_TAIL),
        Some([15, 51])
    );
    assert_eq!(
        poisson_interval(89.157_071_11, POISSON_TAIL),
        Some([60, 122])
    );
    assert_eq!(poisson_interval(17.969_151, POISSON_TAIL), Some([6, 33]));
    assert_eq!(poisson_interval(29.0, POISSON_TAIL), Some([13, 48]));
}

#[test]
fn comparison_texts_of_the_fidelity_fixtures_are_stable() {
    for (name, o) in [
        ("aiperf_client_tokenizer", aiperf_client_tokenizer()),
        ("guidellm_poisson_overshoot", guidellm_overshoot()),
    ] {
        let text = goodput_render::import::render(
            &o.comparison,
            "trace.json",
            o.imported.trace.rows.len(),
            "goodput analyze trace.json",
        );
        for line in text.lines() {
            assert!(line.chars().count() <= 100, "{name}: too wide: {line}");
        }
        insta::assert_snapshot!(format!("comparison_{name}"), text);
    }
}
