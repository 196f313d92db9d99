//! The recorder against the sim on every API (`--api chat|completions|
//! responses|messages|embeddings`), with and without reasoning: the first
//! token, the first answer and the reasoning count checked against the
//! sim's known timing; a row whose reasoning used its whole output budget;
//! the unstreamed embeddings trace; the Messages headers. Every sim runs on
//! 127.0.0.1 in-process, every run is a few seconds of load bounded by the
//! recorder's own horizon.

mod common;

use std::process::Command;

use common::capture::{header, serve, Answer};
use common::recording::{assert_no_lost_row, f, receipt, record, rows};
use goodput_sim::engine::EngineParams;
use goodput_sim::quirks::StreamQuirks;
use goodput_sim::{SimConfig, SimServer};
use serde_json::Value;

/// The sim's decode step, ms: every token of a lone request is one step.
const STEP_MS: f64 = 20.0;
/// Output tokens of every request.
const OUTPUT: u32 = 10;

/// A sim with no prefill cost and one [`STEP_MS`] step per token (no
/// per-sequence cost), `OUTPUT` tokens per request, the first `reasoning`
/// of them reasoning.
fn sim(reasoning: u32, quirks: StreamQuirks) -> SimServer {
    let config = SimConfig {
        engine: EngineParams {
            max_batch: 64,
            prefill_ms_per_1k_tokens: 0.0,
            decode_step_ms: STEP_MS,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (f64::from(OUTPUT), 0.0),
        faults: vec![],
        seed: 1,
        model_name: "sim".into(),
        also_served: vec![],
        quirks: StreamQuirks {
            reasoning_tokens: reasoning,
            ..quirks
        },
        tokenizer: None,
    };
    SimServer::start(config, 1).expect("start sim")
}

/// Records `api` against `server`: constant 4/s for 1.5 s (6 requests,
/// each alone on the engine: a request takes 10 × 20 = 200 ms, arrivals
/// are 250 ms apart), 16-word prompts, under `slo`.
fn run(server: &SimServer, api: &str, slo: &str, extra: &[&str]) -> (String, Value, Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let mut args = vec![
        "--api",
        api,
        "--request-rate",
        "4",
        "--arrival",
        "constant",
        "--duration",
        "1.5s",
        "--grace",
        "3s",
        "--random-input-len",
        "16",
        "--slo",
        slo,
    ];
    args.extend_from_slice(extra);
    let (code, stdout, trace) = record(&server.url(), &out, &args);
    assert_eq!(code, 0, "{api}: {stdout}");
    assert_no_lost_row(&trace);
    // Constant 4/s over 1.5 s: arrivals at 0, 250, …, 1250 ms = 6 rows.
    assert_eq!(rows(&trace).len(), 6, "{api}");
    (stdout, trace, receipt(&out))
}

const STREAMED: [&str; 4] = ["chat", "completions", "responses", "messages"];
const GATES: &str = "i:ttft=1000,ttfa=2000,e2e=10000";

/// What each API's usage says of reasoning: chat, completions and
/// Responses count it (Responses says 0 when there was none); Anthropic
/// Messages reports one `output_tokens`, thinking included, and no
/// separate count.
fn reported_reasoning(api: &str, reasoning: u64) -> Value {
    match (api, reasoning) {
        ("messages", _) => Value::Null,
        ("responses", r) => r.into(),
        (_, 0) => Value::Null,
        (_, r) => r.into(),
    }
}

#[test]
fn every_streamed_api_stamps_the_first_answer_after_its_reasoning() {
    // 4 reasoning tokens, then 6 answer tokens. A lone request's k-th token
    // (0-based) leaves at the end of step k + 1, so the first answer (token
    // 4) comes 4 steps after the first token (token 0): 4 × 20 = 80 ms.
    // Tolerance: each step may run a few ms long on a loaded machine (the
    // driver's sleep is late, never early, so at most 2 ms early through
    // the client's own reading), and a step can be up to 25 ms late in all.
    // The first token's own stamp can be late too on a loaded machine (its
    // read waits for the client's loop), which shortens the difference: 8 ms
    // of that is allowed below 80 (76.4 ms was seen beside two builds).
    let server = sim(4, StreamQuirks::default());
    for api in STREAMED {
        let (stdout, trace, receipt) = run(&server, api, GATES, &[]);
        for row in rows(&trace) {
            assert_eq!(row["status"], "completed", "{api}: {row}");
            assert_eq!(row["outputTokens"], OUTPUT, "{api}: {row}");
            let thinking = f(&row["firstAnswerMs"]) - f(&row["firstTokenMs"]);
            assert!(
                (72.0..=105.0).contains(&thinking),
                "{api}: thinking {thinking} ms, {row}"
            );
            assert_eq!(row["reasoningTokens"], reported_reasoning(api, 4), "{api}");
            // The gaps count reasoning events too: 10 tokens, 9 gaps.
            assert_eq!(row["gapsMs"].as_array().map(Vec::len), Some(9), "{api}");
        }
        assert!(
            stdout.contains("first answer: TTFT p50 "),
            "{api}: {stdout}"
        );
        let answer = &receipt["results"]["all"]["answer"];
        assert_eq!(answer["answered"], 6, "{api}: {answer}");
        assert_eq!(answer["noAnswer"], 0, "{api}");
        let p50 = f(&answer["thinkingMs"]["p50"]);
        assert!((72.0..=105.0).contains(&p50), "{api}: thinking p50 {p50}");
        if api != "messages" {
            // 6 rows × 4 of 10 tokens: 24 of 60, 40 %.
            assert!(
                stdout.contains("reasoning 24 of 60 output tokens (40.0 %)"),
                "{api}: {stdout}"
            );
            assert_eq!(answer["reasoning"]["reasoningTokens"], 24, "{api}");
            assert_eq!(answer["reasoning"]["outputTokens"], 60, "{api}");
            assert_eq!(answer["reasoning"]["share"], 0.4, "{api}");
        }
        assert_eq!(receipt["results"]["all"]["counts"]["pass"], 6, "{api}");
    }
}

#[test]
fn without_reasoning_the_first_answer_is_the_first_token() {
    let server = sim(0, StreamQuirks::default());
    for api in STREAMED {
        let (stdout, trace, _) = run(&server, api, GATES, &[]);
        for row in rows(&trace) {
            assert_eq!(row["firstAnswerMs"], row["firstTokenMs"], "{api}: {row}");
            assert_eq!(row["reasoningTokens"], reported_reasoning(api, 0), "{api}");
        }
        // No row answered after reasoning: no answer line.
        assert!(!stdout.contains("first answer:"), "{api}: {stdout}");
    }
}

#[test]
fn chat_reads_reasoning_in_either_field() {
    // `reasoning_content` (older vLLM, llama.cpp): timed as `reasoning` is.
    let quirks = StreamQuirks {
        reasoning_field: goodput_sim::dialect::ReasoningField::ReasoningContent,
        ..StreamQuirks::default()
    };
    let server = sim(4, quirks);
    let (_, trace, _) = run(&server, "chat", GATES, &[]);
    for row in rows(&trace) {
        let thinking = f(&row["firstAnswerMs"]) - f(&row["firstTokenMs"]);
        assert!(
            (72.0..=105.0).contains(&thinking),
            "thinking {thinking} ms, {row}"
        );
        assert_eq!(row["reasoningTokens"], 4);
    }
}

#[test]
fn reasoning_that_uses_the_whole_budget_leaves_no_answer_and_misses_no_answer() {
    // 8 reasoning tokens, but `--max-tokens 6` (`max_output_tokens` for
    // Responses, `max_tokens` for Messages) ends every output at 6 tokens:
    // all of them reasoning, no answer comes (vLLM #42548). Each completed
    // row lacks firstAnswerMs and misses `no_answer` under the ttfa gate
    // (never `ttfa`).
    let server = sim(8, StreamQuirks::default());
    for api in STREAMED {
        let (stdout, trace, receipt) = run(&server, api, GATES, &["--max-tokens", "6"]);
        for row in rows(&trace) {
            assert_eq!(row["status"], "completed", "{api}: {row}");
            assert_eq!(row["outputTokens"], 6, "{api}: {row}");
            assert!(row.get("firstAnswerMs").is_none(), "{api}: {row}");
            assert!(row["firstTokenMs"].is_number(), "{api}: {row}");
        }
        let all = &receipt["results"]["all"];
        assert_eq!(all["counts"]["miss"], 6, "{api}: {all}");
        assert_eq!(all["reasons"]["miss"]["noAnswer"], 6, "{api}");
        assert_eq!(all["reasons"]["miss"]["ttfa"], 0, "{api}");
        assert_eq!(all["answer"]["noAnswer"], 6, "{api}");
        assert!(
            stdout.contains("6 rows completed without an answer"),
            "{api}: {stdout}"
        );
    }
}

#[test]
fn embeddings_are_unstreamed_rows_judged_on_e2e_alone() {
    // A lone embeddings request is one engine step with its prefill: 20 ms
    // here (no prefill cost); 3 inputs of 16 words = 48 prompt tokens.
    let server = sim(0, StreamQuirks::default());
    let (stdout, trace, receipt) = run(
        &server,
        "embeddings",
        "i:e2e=1000",
        &["--embeddings-batch", "3"],
    );
    assert_eq!(trace["streamed"], false);
    assert_eq!(trace["workload"]["embeddingsBatch"], 3);
    for row in rows(&trace) {
        assert_eq!(row["status"], "completed", "{row}");
        for absent in ["firstTokenMs", "firstAnswerMs", "gapsMs"] {
            assert!(row.get(absent).is_none(), "{absent}: {row}");
        }
        assert_eq!(row["outputTokens"], 0);
        assert_eq!(row["labels"]["serverPromptTokens"], 48);
        let e2e = f(&row["completedMs"]) - f(&row["arrivalMs"]);
        assert!((19.0..=60.0).contains(&e2e), "e2e {e2e} ms, {row}");
    }
    assert!(stdout.contains("0 output tokens"), "{stdout}");
    assert_eq!(receipt["contract"]["streamed"], false);
    let all = &receipt["results"]["all"];
    assert_eq!(all["counts"]["pass"], 6);
    assert_eq!(all["latency"]["ttftMs"]["n"], 0);
    assert_eq!(all["latency"]["e2eMs"]["n"], 6);
}

#[test]
fn embeddings_refuse_every_gate_on_token_instants() {
    let server = sim(0, StreamQuirks::default());
    let dir = tempfile::tempdir().unwrap();
    for gate in ["ttft=100", "tpot=10", "stall=50", "ttfa=100"] {
        let slo = format!("i:{gate},e2e=1000");
        let (code, message, trace) = record(
            &server.url(),
            &dir.path().join("t.json"),
            &[
                "--api",
                "embeddings",
                "--request-rate",
                "1",
                "--duration",
                "1s",
                "--slo",
                &slo,
            ],
        );
        assert_eq!(code, 2, "{gate}: {message}");
        let name = gate.split('=').next().unwrap();
        assert!(
            message.contains("only an e2e gate applies") && message.contains(&format!("`{name}=`")),
            "{gate}: {message}"
        );
        assert_eq!(trace, Value::Null, "nothing written");
    }
    // An output length means nothing to an embedding.
    let (code, message, _) = record(
        &server.url(),
        &dir.path().join("t.json"),
        &[
            "--api",
            "embeddings",
            "--request-rate",
            "1",
            "--duration",
            "1s",
            "--max-tokens",
            "5",
        ],
    );
    assert_eq!(code, 2, "{message}");
    assert!(
        message.contains("--max-tokens does not apply to --api embeddings"),
        "{message}"
    );
    // And --embeddings-batch belongs to embeddings alone.
    let (code, message, _) = record(
        &server.url(),
        &dir.path().join("t.json"),
        &[
            "--request-rate",
            "1",
            "--duration",
            "1s",
            "--embeddings-batch",
            "2",
        ],
    );
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("--embeddings-batch applies to --api embeddings only"));
}

/// A Messages stream of one thinking token and one answer token.
fn messages_stream(_head: &str) -> String {
    concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":8,\"output_tokens\":1}}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":2}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    )
    .to_owned()
}

#[test]
fn messages_sends_its_key_in_x_api_key_with_the_version_and_no_bearer() {
    let (url, heads) = serve(Answer {
        status: "200 OK",
        content_type: "text/event-stream",
        body: messages_stream,
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let output = Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args([
            "record", "--url", &url, "--model", "claude", "--api", "messages",
        ])
        .args(["--no-preflight", "--no-progress", "--request-rate", "2"])
        .args([
            "--arrival",
            "constant",
            "--duration",
            "1s",
            "--timeout",
            "5s",
        ])
        .arg("--out")
        .arg(&out)
        .env("OPENAI_API_KEY", "sk-ant-test-4242")
        .output()
        .expect("run goodput");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let heads = heads.lock().unwrap().clone();
    // Constant 2/s over 1 s: 2 requests.
    assert_eq!(heads.len(), 2, "{heads:?}");
    for head in &heads {
        assert!(head.starts_with("POST /v1/messages "), "{head}");
        assert_eq!(
            header(head, "x-api-key"),
            Some("sk-ant-test-4242"),
            "{head}"
        );
        assert_eq!(
            header(head, "anthropic-version"),
            Some("2023-06-01"),
            "{head}"
        );
        assert_eq!(header(head, "authorization"), None, "{head}");
    }
    let trace: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert_eq!(trace["workload"]["headers"], "x-api-key,anthropic-version");
    for row in rows(&trace) {
        // Both events came in one body: one frame, one instant.
        assert_eq!(row["firstAnswerMs"], row["firstTokenMs"], "{row}");
        assert_eq!(row["outputTokens"], 2);
        assert_eq!(row["labels"]["serverPromptTokens"], 8);
    }
    assert!(
        !stdout.contains("sk-ant-test-4242")
            && !std::fs::read_to_string(&out).unwrap().contains("sk-ant")
    );
}
