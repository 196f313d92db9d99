//! Reasoning models (docs/contract.md §10.16): the row fields `firstAnswerMs`
//! and `reasoningTokens`, the class gate `ttfaMs` with its reasons `ttfa`
//! and `no_answer`, the receipt's `answer` block, and unstreamed traces
//! (`streamed: false`), each against figures computed by hand.

use goodput_core::analyze::{analyze_bytes, Analysis, AnalyzeOptions};

fn analyze(trace: &str) -> Analysis {
    analyze_bytes(
        trace.as_bytes(),
        AnalyzeOptions {
            rows: true,
            ..AnalyzeOptions::default()
        },
    )
    .expect("a valid trace")
}

/// Class `think`: TTFT 1000, no TPOT gate, E2E 20000, TTFA 5000; window
/// [0, 10000), horizon 10000. By hand (arrival 0 unless said):
/// - a: first token 200, answer 5000 (TTFA exactly on the gate), 50 tokens,
///   30 reasoning: inclusive pass, strict miss `ttfa`;
/// - b: first token 200, no answer, 100 tokens all reasoning: miss
///   `no_answer` under both rules (never `ttfa`);
/// - c: a one-token answer with no reasoning, first token = answer = 300:
///   pass, TTFA 300, thinking 0;
/// - d: fast first token 100, answer 9000 (thinking 8900), 60 tokens, 40
///   reasoning: miss `ttfa` under both;
/// - e: in flight, arrival 4000, first token 4500, no answer by the
///   horizon: elapsed 6000 ≥ 5000, so known late on TTFA;
/// - f: in flight, arrival 8000, first token 8100, no answer: elapsed 2000,
///   not yet late on anything.
fn think_trace(equality: &str) -> String {
    format!(
        r#"{{
  "schema": "goodput-trace/1",
  "window": {{"startMs": 0, "endMs": 10000, "horizonMs": 10000}},
  "equality": "{equality}",
  "classes": {{"think": {{"ttftMs": 1000, "tpotMs": null, "e2eMs": 20000, "ttfaMs": 5000}}}},
  "rows": [
    {{"id": "a", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200, "firstAnswerMs": 5000, "completedMs": 6000, "outputTokens": 50, "reasoningTokens": 30}},
    {{"id": "b", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200, "completedMs": 8000, "outputTokens": 100, "reasoningTokens": 100}},
    {{"id": "c", "arrivalMs": 0, "status": "completed", "firstTokenMs": 300, "firstAnswerMs": 300, "completedMs": 300, "outputTokens": 1}},
    {{"id": "d", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "firstAnswerMs": 9000, "completedMs": 9500, "outputTokens": 60, "reasoningTokens": 40}},
    {{"id": "e", "arrivalMs": 4000, "status": "in_flight", "firstTokenMs": 4500}},
    {{"id": "f", "arrivalMs": 8000, "status": "in_flight", "firstTokenMs": 8100}}
  ]
}}"#
    )
}

fn verdicts(a: &Analysis) -> Vec<(String, Vec<String>)> {
    a.receipt
        .rows
        .as_ref()
        .expect("rows asked for")
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
fn a_ttfa_on_the_gate_passes_inclusive_and_misses_strict_and_no_answer_is_its_own_reason() {
    let inclusive = analyze(&think_trace("inclusive"));
    assert_eq!(
        verdicts(&inclusive),
        [
            v("pass", &[]),
            v("miss", &["no_answer"]),
            v("pass", &[]),
            v("miss", &["ttfa"]),
            v("censored", &["in_flight", "knownLate"]),
            v("censored", &["in_flight"]),
        ]
    );
    let b = &inclusive.receipt.results.classes["think"];
    assert_eq!((b.counts.pass, b.counts.miss, b.counts.censored), (2, 2, 2));
    assert_eq!(
        (b.reasons.miss.ttfa, b.reasons.miss.no_answer),
        (Some(1), Some(1))
    );
    assert_eq!(b.reasons.censored.known_late, 1);

    let strict = analyze(&think_trace("strict"));
    assert_eq!(verdicts(&strict)[0], v("miss", &["ttfa"]));
    let b = &strict.receipt.results.classes["think"];
    assert_eq!((b.counts.pass, b.counts.miss), (1, 3));
    assert_eq!(
        (b.reasons.miss.ttfa, b.reasons.miss.no_answer),
        (Some(2), Some(1))
    );
}

#[test]
fn the_answer_block_holds_ttfa_thinking_time_and_the_reasoning_share() {
    let a = analyze(&think_trace("inclusive"));
    let answer = a.receipt.results.classes["think"]
        .answer
        .as_ref()
        .expect("a class with a TTFA gate gets an answer block");
    // Completed cohort rows a, b, c, d: three answered, b did not.
    assert_eq!((answer.answered, answer.no_answer), (3, 1));
    // TTFA 5000, 300, 9000 → sorted 300, 5000, 9000; nearest rank p50 is
    // rank ceil(1.5) = 2, p95 and p99 rank 3; mean 14300 / 3.
    let t = &answer.ttfa_ms;
    assert_eq!(
        (t.n, t.min, t.p50, t.p95, t.p99, t.max),
        (
            3,
            Some(300.0),
            Some(5000.0),
            Some(9000.0),
            Some(9000.0),
            Some(9000.0)
        )
    );
    assert!((t.mean.unwrap() - 14300.0 / 3.0).abs() < 1e-9);
    // Thinking (answer − first token): 4800, 0, 8900 → p50 4800.
    let k = &answer.thinking_ms;
    assert_eq!(
        (k.min, k.p50, k.max),
        (Some(0.0), Some(4800.0), Some(8900.0))
    );
    // Reasoning rows a, b, d: 30 + 100 + 40 = 170 of 50 + 100 + 60 = 210.
    let r = answer
        .reasoning
        .as_ref()
        .expect("rows carry reasoningTokens");
    assert_eq!((r.rows, r.reasoning_tokens, r.output_tokens), (3, 170, 210));
    assert!((r.share.unwrap() - 170.0 / 210.0).abs() < 1e-12);
    // The all-rows block says the same for a one-class trace.
    assert_eq!(a.receipt.results.all.answer.as_ref(), Some(answer));
    // Per-row TTFA: a 5000, b none, c 300, d 9000.
    let rows = a.receipt.rows.as_ref().unwrap();
    let ttfa: Vec<Option<f64>> = rows.iter().map(|r| r.ttfa_ms).collect();
    assert_eq!(
        ttfa,
        [Some(5000.0), None, Some(300.0), Some(9000.0), None, None]
    );
}

#[test]
fn a_trace_without_answers_or_ttfa_gates_has_no_answer_block() {
    let a = analyze(
        r#"{"schema": "goodput-trace/1", "window": {"startMs": 0, "endMs": 1000},
        "equality": "inclusive", "classes": {"c": {"ttftMs": 100, "tpotMs": null, "e2eMs": null}},
        "rows": [{"id": "a", "arrivalMs": 0, "status": "completed", "firstTokenMs": 50, "completedMs": 90, "outputTokens": 2}]}"#,
    );
    let block = &a.receipt.results.all;
    assert!(block.answer.is_none());
    assert_eq!(
        (block.reasons.miss.ttfa, block.reasons.miss.no_answer),
        (None, None)
    );
    let json = serde_json::to_string(&a.receipt).unwrap();
    assert!(!json.contains("answer") && !json.contains("ttfa"), "{json}");
}

/// Each row breaks one rule of §10.16, by construction.
#[test]
fn answer_instants_and_reasoning_counts_that_cannot_be_are_invalid_with_their_reason() {
    let a = analyze(
        r#"{"schema": "goodput-trace/1", "window": {"startMs": 0, "endMs": 1000},
        "equality": "inclusive", "classes": {"c": {"ttftMs": null, "tpotMs": null, "e2eMs": null, "ttfaMs": 500}},
        "rows": [
          {"id": "g", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200, "firstAnswerMs": 100, "completedMs": 300, "outputTokens": 3},
          {"id": "h", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200, "firstAnswerMs": 700, "completedMs": 600, "outputTokens": 3},
          {"id": "i", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200, "firstAnswerMs": 200, "completedMs": 600, "outputTokens": 3, "reasoningTokens": 5},
          {"id": "j", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200, "firstAnswerMs": 200, "completedMs": 600, "outputTokens": 3, "reasoningTokens": 1.5},
          {"id": "k", "arrivalMs": 0, "status": "in_flight", "firstAnswerMs": 100},
          {"id": "l", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200, "firstAnswerMs": "soon", "completedMs": 600, "outputTokens": 3}
        ]}"#,
    );
    assert_eq!(
        verdicts(&a),
        [
            v("invalid", &["first_answer_before_first_token"]),
            v("invalid", &["completion_before_first_answer"]),
            v("invalid", &["bad_reasoning_tokens"]),
            v("invalid", &["bad_reasoning_tokens"]),
            v("invalid", &["first_answer_before_first_token"]),
            v("invalid", &["bad_field"]),
        ]
    );
}

/// Embeddings: no first token exists. Class `emb` gates E2E at 500 only.
/// By hand: l (E2E 400) passes; m (E2E 600) misses `e2e`; n carries a first
/// token, which an unstreamed response cannot have: invalid.
#[test]
fn an_unstreamed_trace_is_judged_on_e2e_alone_and_refuses_token_gates() {
    let trace = |gates: &str| {
        format!(
            r#"{{"schema": "goodput-trace/1", "window": {{"startMs": 0, "endMs": 1000}},
            "equality": "inclusive", "streamed": false, "classes": {{"emb": {gates}}},
            "rows": [
              {{"id": "l", "arrivalMs": 0, "status": "completed", "completedMs": 400}},
              {{"id": "m", "arrivalMs": 100, "status": "completed", "completedMs": 700}},
              {{"id": "n", "arrivalMs": 0, "status": "completed", "firstTokenMs": 10, "completedMs": 400, "outputTokens": 1}}
            ]}}"#
        )
    };
    let a = analyze(&trace(r#"{"ttftMs": null, "tpotMs": null, "e2eMs": 500}"#));
    assert_eq!(
        verdicts(&a),
        [
            v("pass", &[]),
            v("miss", &["e2e"]),
            v("invalid", &["token_times_on_unstreamed"]),
        ]
    );
    assert!(!a.receipt.contract.streamed);
    let latency = &a.receipt.results.all.latency;
    assert_eq!(
        (latency.ttft_ms.n, latency.tpot_ms.n, latency.e2e_ms.n),
        (0, 0, 2)
    );
    assert_eq!(latency.e2e_ms.max, Some(600.0));

    let refused = analyze_bytes(
        trace(r#"{"ttftMs": 200, "tpotMs": null, "e2eMs": 500}"#).as_bytes(),
        AnalyzeOptions::default(),
    )
    .expect_err("a TTFT gate cannot be judged without a first token");
    assert_eq!(
        refused.to_string().split(' ').next(),
        Some("/classes/emb/ttftMs")
    );
}

/// Class `think`: TTFT 1000, TTFA 3000. Rows p, q, r answer at 6000 after a
/// first token at 200 (fast: within the TTFT gate): three TTFA misses the
/// reasoning budget explains. Row s waits 2000 for its first token (a TTFT
/// miss) and answers at 4000: a TTFA miss after a slow first token. Row t
/// passes. By hand: thinking 3, waiting 1, TTFT 1; thinking dominates.
#[test]
fn the_diagnosis_tells_a_reasoning_budget_from_a_queue() {
    let a = analyze(
        r#"{"schema": "goodput-trace/1", "window": {"startMs": 0, "endMs": 10000},
        "equality": "inclusive", "classes": {"think": {"ttftMs": 1000, "tpotMs": null, "e2eMs": null, "ttfaMs": 3000}},
        "rows": [
          {"id": "p", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200, "firstAnswerMs": 6000, "completedMs": 7000, "outputTokens": 400, "reasoningTokens": 300},
          {"id": "q", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200, "firstAnswerMs": 6000, "completedMs": 7000, "outputTokens": 400, "reasoningTokens": 300},
          {"id": "r", "arrivalMs": 0, "status": "completed", "firstTokenMs": 200, "firstAnswerMs": 6000, "completedMs": 7000, "outputTokens": 400, "reasoningTokens": 300},
          {"id": "s", "arrivalMs": 0, "status": "completed", "firstTokenMs": 2000, "firstAnswerMs": 4000, "completedMs": 5000, "outputTokens": 100, "reasoningTokens": 50},
          {"id": "t", "arrivalMs": 0, "status": "completed", "firstTokenMs": 100, "firstAnswerMs": 500, "completedMs": 900, "outputTokens": 20, "reasoningTokens": 5}
        ]}"#,
    );
    let split = a.receipt.results.classes["think"]
        .answer
        .as_ref()
        .and_then(|b| b.ttfa_misses)
        .expect("a TTFA-gated class splits its misses");
    assert_eq!((split.thinking, split.waiting), (3, 1));
    let d = goodput_core::review::diagnosis::diagnose(&a.receipt);
    assert_eq!(d.len(), 1);
    assert_eq!(
        d[0].dominant,
        [goodput_core::review::diagnosis::Cause::ThinkingMisses]
    );
    assert_eq!(
        (d[0].thinking_misses, d[0].waiting_misses),
        (Some(3), Some(1))
    );
    // Every miss is explained by a named gate: none can be E2E alone.
    assert_eq!(d[0].e2e_only_at_least, 0);
    let line = goodput_render::diagnosis::line(&d[0]);
    assert!(
        line.contains("TTFA 4 (3 after a fast first token, 1 after a slow one)"),
        "{line}"
    );
    assert!(
        line.contains("the model thought too long: its reasoning budget, not the server's queue"),
        "{line}"
    );
}

/// `--max-p95-ttfa-ms` reads the answer block's nearest-rank p95: TTFA of
/// the think trace's answered rows is 300, 5000, 9000, so p95 = rank
/// ceil(0.95 × 3) = 3 → 9000. The limit 9000 holds, 8999.999 does not, and a
/// trace without answer instants fails it (no evidence never holds).
#[test]
fn the_p95_ttfa_limit_holds_at_its_value_and_fails_without_evidence() {
    use goodput_core::review::criteria::BlockLimits;
    use goodput_core::review::limits::limit_checks;
    let limit = |ms: &str| BlockLimits {
        max_p95_ttfa_ms: Some(ms.parse().expect("decimal")),
        ..BlockLimits::default()
    };
    let a = analyze(&think_trace("inclusive"));
    let block = &a.receipt.results.all;
    let at = limit_checks(block, &limit("9000"));
    assert_eq!(
        (at[0].name, at[0].measured, at[0].pass),
        ("p95 ttfa ms", Some(9000.0), true)
    );
    assert!(!limit_checks(block, &limit("8999.999"))[0].pass);
    let plain = analyze(
        r#"{"schema": "goodput-trace/1", "window": {"startMs": 0, "endMs": 1000},
        "equality": "inclusive", "classes": {"c": {"ttftMs": 100, "tpotMs": null, "e2eMs": null}},
        "rows": [{"id": "a", "arrivalMs": 0, "status": "completed", "firstTokenMs": 50, "completedMs": 90, "outputTokens": 2}]}"#,
    );
    let none = limit_checks(&plain.receipt.results.all, &limit("1e9"));
    assert_eq!((none[0].measured, none[0].pass), (None, false));
}

fn mutation_status(
    report: &goodput_core::review::mutate::MutationReport,
    name: &str,
) -> goodput_core::review::mutate::Status {
    report
        .mutations
        .iter()
        .find(|m| m.name == name)
        .map(|m| m.status)
        .expect("the mutation ran")
}

/// A calculator that judges without the TTFA gate but echoes the declared
/// one: the answer mutation must catch it.
struct IgnoresTtfa;

impl goodput_core::review::mutate::Calculator for IgnoresTtfa {
    fn receipt(
        &self,
        bytes: &[u8],
    ) -> Result<goodput_core::receipt::Receipt, goodput_core::trace::Rejection> {
        let mut doc: serde_json::Value = serde_json::from_slice(bytes).unwrap();
        for gates in doc["classes"].as_object_mut().unwrap().values_mut() {
            gates.as_object_mut().unwrap().remove("ttfaMs");
        }
        let mut receipt = analyze(&doc.to_string()).receipt;
        receipt.contract.classes = analyze(std::str::from_utf8(bytes).unwrap())
            .receipt
            .contract
            .classes;
        Ok(receipt)
    }
}

/// The think trace's row a sits on its TTFA gate (5000) and passes: moving
/// its answer to 5001 (inclusive: the first step past the gate) must make
/// exactly one more `ttfa` miss, and flipping to strict must fail it.
#[test]
fn the_answer_mutation_is_caught_and_catches_a_calculator_that_ignores_ttfa() {
    use goodput_core::review::mutate::{check, Analyzer, Status};
    use goodput_core::trace::Limits;
    let trace = think_trace("inclusive");
    let real = check(
        trace.as_bytes(),
        &Analyzer::for_mutations_of(Limits::default()),
    )
    .unwrap();
    assert_eq!(real.not_caught, 0, "{:?}", real.mutations);
    assert_eq!(mutation_status(&real, "push_past_ttfa"), Status::Caught);
    assert_eq!(mutation_status(&real, "flip_equality"), Status::Caught);
    let broken = check(trace.as_bytes(), &IgnoresTtfa).unwrap();
    assert_eq!(
        mutation_status(&broken, "push_past_ttfa"),
        Status::NotCaught
    );
}

/// verify recomputes the answer block like every other figure: a receipt
/// whose TTFA p95 was edited from 9000 to 4000 is caught at that pointer.
#[test]
fn verify_finds_an_edited_ttfa_percentile() {
    use goodput_core::review::verify::{read_receipt, verify};
    let trace = think_trace("inclusive");
    let receipt = analyze_bytes(trace.as_bytes(), AnalyzeOptions::default())
        .unwrap()
        .receipt;
    let mut tree = serde_json::to_value(&receipt).unwrap();
    assert_eq!(tree["results"]["all"]["answer"]["ttfaMs"]["p95"], 9000.0);
    let honest = read_receipt(tree.to_string().as_bytes()).unwrap();
    assert!(verify(&honest, trace.as_bytes()).agrees());
    tree["results"]["all"]["answer"]["ttfaMs"]["p95"] = serde_json::json!(4000.0);
    let edited = read_receipt(tree.to_string().as_bytes()).unwrap();
    let report = verify(&edited, trace.as_bytes());
    let pointers: Vec<&str> = report.differences.iter().map(|d| d.path.as_str()).collect();
    assert_eq!(pointers, ["/results/all/answer/ttfaMs/p95"]);
}
