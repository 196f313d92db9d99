//! Realistic workloads end to end against the in-process sim on 127.0.0.1:
//! token-exact prompts (the sim counts with the same tokenizer), output
//! lengths, trace replay, multi-turn sessions. Each run is at most a couple
//! of seconds of load, bounded by the recorder's own horizon.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use common::recording::{assert_no_lost_row, f, receipt, record, rows};
use goodput_sim::engine::EngineParams;
use goodput_sim::fault::{Fault, FaultKind};
use goodput_sim::{SimConfig, SimServer};
use goodput_tokenizer::TokenCounter;
use serde_json::Value;

fn fixture_tokenizer() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/tokenizer/tokenizer.json")
}

/// A fast sim: 1 ms prefill per 1k tokens, 2 ms steps, `output` tokens per
/// answer (capped by max_tokens), counting prompts with the fixture
/// tokenizer when `tokenizer` is set.
fn sim(output: f64, faults: Vec<Fault>, tokenizer: bool) -> SimServer {
    let config = SimConfig {
        engine: EngineParams {
            max_batch: 256,
            prefill_ms_per_1k_tokens: 1.0,
            decode_step_ms: 2.0,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (output, 0.0),
        faults,
        seed: 5,
        model_name: "sim".into(),
        also_served: vec![],
        quirks: Default::default(),
        tokenizer: tokenizer
            .then(|| Arc::new(TokenCounter::load(&fixture_tokenizer()).expect("fixture"))),
    };
    SimServer::start(config, 2).expect("start sim")
}

fn label(row: &Value, key: &str) -> Option<f64> {
    row["labels"][key].as_f64()
}

fn sha256_of(path: &Path) -> String {
    goodput_tokenizer::sha256_hex(&std::fs::read(path).unwrap())
}

#[test]
fn prompts_are_exactly_the_drawn_token_count_and_the_server_agrees() {
    // The sim counts each prompt with the same tokenizer and no template, so
    // every row's server count must equal the client's, and with ignore_eos
    // every answer is exactly the requested 12 tokens.
    let server = sim(40.0, vec![], true);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let tok = fixture_tokenizer();
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "40",
            "--arrival",
            "constant",
            "--duration",
            "1s",
            "--grace",
            "2s",
            "--tokenizer",
            tok.to_str().unwrap(),
            "--input-tokens",
            "300:80:50:600",
            "--output-tokens",
            "12",
            "--ignore-eos",
            "--seed",
            "9",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_no_lost_row(&trace);
    // Constant 40/s over 1 s: 40 rows.
    assert_eq!(rows(&trace).len(), 40);
    let w = &trace["workload"];
    assert_eq!(w["tokenizerSha256"], sha256_of(&tok));
    assert_eq!(w["promptLengths"], "tokens");
    assert_eq!(w["inputTokens"], "300:80:50:600");
    assert_eq!(w["outputTokens"], "12:0:1:1000000");
    assert_eq!(w["ignoreEos"], true);
    let mut lengths = std::collections::BTreeSet::new();
    for row in rows(&trace) {
        assert_eq!(row["status"], "completed", "{row}");
        let client = label(row, "promptTokens").expect("promptTokens");
        assert_eq!(label(row, "serverPromptTokens"), Some(client), "{row}");
        assert!((50.0..=600.0).contains(&client));
        lengths.insert(client as u64);
        assert_eq!(f(&row["outputTokens"]), 12.0);
        assert_eq!(label(row, "requestedOutputTokens"), Some(12.0));
        assert!(row["labels"].get("outputShort").is_none());
    }
    // Drawn from Normal(300, 80): 40 draws are not all the same length.
    assert!(lengths.len() > 10, "{lengths:?}");
    assert!(
        stdout.contains("prompt tokens: server = client on 40 of 40 rows"),
        "{stdout}"
    );
    assert!(
        stdout.contains("0 of 40 completed rows stopped short"),
        "{stdout}"
    );
    receipt(&out);
}

#[test]
fn an_answer_shorter_than_asked_is_marked_on_its_row() {
    // The sim stops after 4 tokens unless told to ignore the end of
    // sequence; 12 were asked for, so every row is short.
    let server = sim(4.0, vec![], false);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "20",
            "--arrival",
            "constant",
            "--duration",
            "0.5s",
            "--grace",
            "2s",
            "--input-tokens",
            "30",
            "--output-tokens",
            "12",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(trace["workload"]["promptLengths"], "approximate");
    assert_eq!(trace["workload"]["ignoreEos"], false);
    for row in rows(&trace) {
        assert_eq!(f(&row["outputTokens"]), 4.0);
        assert_eq!(row["labels"]["outputShort"], true);
        // Without a tokenizer: no client token count; the sim counts the
        // 30 filler words.
        assert!(row["labels"].get("promptTokens").is_none());
        assert_eq!(label(row, "serverPromptTokens"), Some(30.0));
    }
    assert!(
        stdout.contains("10 of 10 completed rows stopped short"),
        "{stdout}"
    );
}

#[test]
fn shared_prefixes_label_their_group() {
    let server = sim(2.0, vec![], true);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let tok = fixture_tokenizer();
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "40",
            "--arrival",
            "constant",
            "--duration",
            "1s",
            "--tokenizer",
            tok.to_str().unwrap(),
            "--input-tokens",
            "20",
            "--prefix-tokens",
            "100",
            "--prefix-groups",
            "3",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(trace["workload"]["prefixTokens"], 100.0);
    assert_eq!(trace["workload"]["prefixGroups"], 3.0);
    let mut groups = std::collections::BTreeSet::new();
    for row in rows(&trace) {
        groups.insert(label(row, "prefixGroup").unwrap() as u64);
        // Prefix 100 + random part 20, exactly, on both sides.
        assert_eq!(label(row, "promptTokens"), Some(120.0));
        assert_eq!(label(row, "serverPromptTokens"), Some(120.0));
    }
    assert_eq!(groups, [0, 1, 2].into_iter().collect());
}

fn mooncake(dir: &Path, n: usize) -> PathBuf {
    // Entry i at 1000 + 37·i + (i mod 3) ms; lengths cycle through one to
    // three blocks; ids 0 and 1 are shared by many entries.
    let mut text = String::new();
    for i in 0..n {
        let input = [100, 600, 1100][i % 3];
        let ids: Vec<String> = (0..(input as usize).div_ceil(512))
            .map(|b| {
                if b == 0 {
                    (i % 2).to_string()
                } else {
                    (100 + i * 3 + b).to_string()
                }
            })
            .collect();
        text.push_str(&format!(
            "{{\"timestamp\": {}, \"input_length\": {input}, \"output_length\": {}, \"hash_ids\": [{}]}}\n",
            1000 + 37 * i + i % 3,
            2 + i % 4,
            ids.join(", ")
        ));
    }
    let p = dir.join("trace.jsonl");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn replayed_arrivals_are_the_files_timestamps_shifted_and_scaled_exactly() {
    let server = sim(50.0, vec![], true);
    let dir = tempfile::tempdir().unwrap();
    let file = mooncake(dir.path(), 30);
    let out = dir.path().join("t.json");
    let tok = fixture_tokenizer();
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--replay",
            "mooncake",
            file.to_str().unwrap(),
            "--time-scale",
            "0.5",
            "--warmup",
            "0.25s",
            "--duration",
            "1s",
            "--grace",
            "2s",
            "--ignore-eos",
            "--tokenizer",
            tok.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_no_lost_row(&trace);
    let rows = rows(&trace);
    assert_eq!(rows.len(), 30);
    for (i, row) in rows.iter().enumerate() {
        // Window start 250 ms + (timestamp − 1000) × 0.5.
        let want = 250.0 + ((37 * i + i % 3) as f64) * 0.5;
        assert_eq!(f(&row["arrivalMs"]), want, "row {i}");
        let input = [100.0, 600.0, 1100.0][i % 3];
        assert_eq!(label(row, "promptTokens"), Some(input));
        assert_eq!(label(row, "serverPromptTokens"), Some(input));
        assert_eq!(f(&row["outputTokens"]), (2 + i % 4) as f64);
    }
    let w = &trace["workload"];
    assert_eq!(w["arrival"], "replay");
    assert_eq!(w["replay"], "mooncake");
    assert_eq!(w["replaySha256"], sha256_of(&file));
    assert_eq!(w["replayEntries"], 30.0);
    assert_eq!(w["timeScale"], 0.5);
    assert_eq!(trace["boundary"]["arrival"], "scheduled");
    receipt(&out);
}

#[test]
fn a_malformed_replay_line_is_named_and_nothing_is_sent() {
    let server = sim(5.0, vec![], false);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.jsonl");
    std::fs::write(
        &file,
        "{\"timestamp\": 0, \"input_length\": 10, \"hash_ids\": [1]}\n{\"timestamp\": 5, \"input_length\": 10}\n",
    )
    .unwrap();
    let out = dir.path().join("t.json");
    let (code, message, trace) = record(
        &server.url(),
        &out,
        &[
            "--replay",
            "mooncake",
            file.to_str().unwrap(),
            "--duration",
            "1s",
        ],
    );
    assert_eq!(code, 2);
    assert!(
        message.contains("bad.jsonl:2:") && message.contains("hash_ids"),
        "{message}"
    );
    assert_eq!(trace, Value::Null);
    assert_eq!(server.stats.requests.load(Ordering::Relaxed), 0);
    // A replay longer than the window is refused too, with the duration it needs.
    let long = mooncake(dir.path(), 30);
    let (code, message, _) = record(
        &server.url(),
        &out,
        &[
            "--replay",
            "mooncake",
            long.to_str().unwrap(),
            "--duration",
            "0.5s",
        ],
    );
    assert_eq!(code, 2);
    // The last entry is 37·29 + 2 = 1075 ms after the first: 2 s are needed.
    assert!(message.contains("--duration 2s"), "{message}");
    assert_eq!(server.stats.requests.load(Ordering::Relaxed), 0);
}

/// Two conversations: "a" (3 turns of 2, 3 and 4 words; delays 30 and 60 ms)
/// and "b" (2 turns of 1 and 5 words; no delay, so --think-time).
fn sessions_file(dir: &Path) -> PathBuf {
    let p = dir.join("sessions.jsonl");
    std::fs::write(
        &p,
        "{\"session_id\": \"a\", \"turns\": [{\"text\": \"hello there\"}, {\"text\": \"tell me more\", \"delay\": 30}, {\"text\": \"and then what\", \"delay\": 60}]}\n\
         {\"session_id\": \"b\", \"turns\": [{\"text\": \"hi\"}, {\"text\": \"one two three four five\"}]}\n",
    )
    .unwrap();
    p
}

const USER_WORDS: [&[f64]; 2] = [&[2.0, 3.0, 3.0], &[1.0, 5.0]];
const DELAYS_MS: [&[f64]; 2] = [&[0.0, 30.0, 60.0], &[0.0, 20.0, 20.0]];

fn by_session(trace: &Value) -> std::collections::BTreeMap<u64, Vec<&Value>> {
    let mut out: std::collections::BTreeMap<u64, Vec<&Value>> = Default::default();
    for row in rows(trace) {
        out.entry(row["labels"]["session"].as_str().unwrap().parse().unwrap())
            .or_default()
            .push(row);
    }
    for turns in out.values() {
        for (k, row) in turns.iter().enumerate() {
            assert_eq!(label(row, "turn"), Some((k + 1) as f64));
        }
    }
    out
}

#[test]
fn session_turns_wait_for_the_answer_and_carry_the_history() {
    let server = sim(6.0, vec![], false);
    let dir = tempfile::tempdir().unwrap();
    let file = sessions_file(dir.path());
    let out = dir.path().join("t.json");
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "5",
            "--arrival",
            "constant",
            "--duration",
            "1s",
            "--grace",
            "3s",
            "--dataset",
            "multi-turn",
            file.to_str().unwrap(),
            "--think-time",
            "20ms",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_no_lost_row(&trace);
    // Sessions start at 0, 200, …, 800 ms and play a, b, a, b, a: 3+2+3+2+3 rows.
    assert_eq!(rows(&trace).len(), 13);
    assert_eq!(trace["workload"]["sessions"], 5.0);
    assert_eq!(trace["workload"]["conversations"], 2.0);
    assert_eq!(trace["workload"]["datasetSha256"], sha256_of(&file));
    assert_eq!(trace["workload"]["turnArrival"], "eligible");
    assert_eq!(trace["workload"]["promptLengths"], "file");
    assert_eq!(trace["workload"]["thinkTimeS"], 0.02);
    assert_eq!(trace["boundary"]["arrival"], "scheduled");
    for (s, turns) in by_session(&trace) {
        let c = (s % 2) as usize;
        assert_eq!(turns.len(), USER_WORDS[c].len());
        assert_eq!(f(&turns[0]["arrivalMs"]), s as f64 * 200.0);
        let mut history = 0.0;
        for (k, row) in turns.iter().enumerate() {
            assert_eq!(row["status"], "completed", "{row}");
            if k > 0 {
                // Eligible exactly at the previous completion + think time
                // (both rounded to the µs), and never sent before it.
                let prev_done = f(&turns[k - 1]["completedMs"]);
                let arrival = f(&row["arrivalMs"]);
                assert!(
                    (arrival - (prev_done + DELAYS_MS[c][k])).abs() <= 0.001,
                    "{row}"
                );
                let sent = arrival + label(row, "sendLagMs").unwrap();
                assert!(sent >= prev_done + DELAYS_MS[c][k] - 0.001);
            }
            // The sim counts words: every earlier user turn, every earlier
            // reply (6 one-word tokens each), and this turn.
            history += USER_WORDS[c][k];
            assert_eq!(
                label(row, "serverPromptTokens"),
                Some(history),
                "session {s} turn {k}"
            );
            history += 6.0;
            assert_eq!(label(row, "historyMessages"), Some((2 * k) as f64));
        }
    }
    receipt(&out);
}

#[test]
fn a_failed_turn_ends_its_session_and_the_rest_are_aborted_rows() {
    // Half the requests get a 500: with 12 sessions of 2 or 3 turns, some
    // session fails before its last turn (the chance that none does is
    // about 0.5^12).
    let server = sim(
        3.0,
        vec![Fault {
            kind: FaultKind::Http500,
            rate: 0.5,
        }],
        false,
    );
    let dir = tempfile::tempdir().unwrap();
    let file = sessions_file(dir.path());
    let out = dir.path().join("t.json");
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "12",
            "--arrival",
            "constant",
            "--duration",
            "1s",
            "--grace",
            "3s",
            "--dataset",
            "multi-turn",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_no_lost_row(&trace);
    let mut aborted = 0;
    for (_, turns) in by_session(&trace) {
        let failed_at = turns.iter().position(|r| r["status"] == "failed");
        for (k, row) in turns.iter().enumerate() {
            match failed_at {
                Some(j) if k == j => assert_eq!(row["reason"], "http_500"),
                Some(j) if k > j => {
                    aborted += 1;
                    assert_eq!(row["status"], "failed");
                    assert_eq!(row["reason"], "session_aborted");
                    // Abandoned when the failure was seen.
                    assert_eq!(row["arrivalMs"], turns[j]["endedMs"]);
                    assert_eq!(row["endedMs"], turns[j]["endedMs"]);
                    assert_eq!(label(row, "abortedAfterTurn"), Some((j + 1) as f64));
                }
                _ => assert_eq!(row["status"], "completed"),
            }
        }
    }
    assert!(aborted > 0);
    // The receipt counts the aborted rows that arrived inside the window
    // (a session abandoned after the window ended is excluded like any
    // late arrival).
    let end = f(&trace["window"]["endMs"]);
    let in_window = rows(&trace)
        .iter()
        .filter(|r| r["reason"] == "session_aborted" && f(&r["arrivalMs"]) < end)
        .count();
    let r = receipt(&out);
    let counted = r["results"]["all"]["reasons"]["failure"]["session_aborted"]
        .as_f64()
        .unwrap_or(0.0);
    assert_eq!(counted, in_window as f64);
    assert!(stdout.contains("session_aborted"), "{stdout}");
}

#[test]
fn a_turn_not_yet_eligible_at_the_horizon_is_an_excluded_row() {
    // ShareGPT: two human turns each; a 60 s think time puts every second
    // turn past the 1 s window + 1 s grace.
    let server = sim(2.0, vec![], false);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("s.json");
    std::fs::write(
        &file,
        r#"[{"conversations":[{"from":"human","value":"one"},{"from":"gpt","value":"dataset reply"},{"from":"human","value":"two"}]}]"#,
    )
    .unwrap();
    let out = dir.path().join("t.json");
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "4",
            "--arrival",
            "constant",
            "--duration",
            "1s",
            "--grace",
            "1s",
            "--dataset",
            "sharegpt",
            file.to_str().unwrap(),
            "--think-time",
            "60s",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_no_lost_row(&trace);
    assert_eq!(rows(&trace).len(), 8);
    for (_, turns) in by_session(&trace) {
        assert_eq!(turns[0]["status"], "completed");
        assert_eq!(turns[1]["status"], "in_flight");
        assert_eq!(turns[1]["labels"]["notEligible"], true);
        let eligible = f(&turns[0]["completedMs"]) + 60_000.0;
        assert!((f(&turns[1]["arrivalMs"]) - eligible).abs() <= 0.001);
    }
    let r = receipt(&out);
    let all = &r["results"]["all"];
    assert_eq!(all["counts"]["cohort"], 4.0);
    assert_eq!(all["reasons"]["exclusion"]["outside_window"], 4.0);
}

#[test]
fn workload_options_are_refused_in_closed_loop_and_sessions_need_chat() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, message, _) = record(
        "http://127.0.0.1:9",
        &out,
        &[
            "--max-concurrency",
            "2",
            "--duration",
            "1s",
            "--input-tokens",
            "10",
        ],
    );
    assert_eq!(code, 2);
    assert!(message.contains("open-loop"), "{message}");
    let file = sessions_file(dir.path());
    let (code, message, _) = record(
        "http://127.0.0.1:9",
        &out,
        &[
            "--request-rate",
            "1",
            "--duration",
            "1s",
            "--api",
            "completions",
            "--dataset",
            "multi-turn",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2);
    assert!(message.contains("--api chat"), "{message}");
}

#[test]
fn a_prompt_file_is_counted_by_the_tokenizer_and_a_different_server_count_shows() {
    // The fixture counts "the model says hello" as 9 tokens and "seven north
    // music" as 3 (see src/tokenizer.rs, taken with the Python tokenizers
    // package); the sim without a tokenizer counts words: 4 and 3. Constant
    // 4/s over 1 s: rows 0 and 2 get the first prompt (server − client =
    // 4 − 9 = −5), rows 1 and 3 the second (3 − 3 = 0): equal on 2 of 4,
    // min −5, mean (−5 − 5 + 0 + 0) / 4 = −2.5, max 0.
    let server = sim(2.0, vec![], false);
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("p.jsonl");
    std::fs::write(
        &prompts,
        "\"the model says hello\"\n\"seven north music\"\n",
    )
    .unwrap();
    let out = dir.path().join("t.json");
    let tok = fixture_tokenizer();
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "4",
            "--arrival",
            "constant",
            "--duration",
            "1s",
            "--prompts",
            prompts.to_str().unwrap(),
            "--tokenizer",
            tok.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(trace["workload"]["promptLengths"], "file");
    assert_eq!(trace["workload"]["tokenizerSha256"], sha256_of(&tok));
    let got: Vec<(Option<f64>, Option<f64>)> = rows(&trace)
        .iter()
        .map(|r| (label(r, "promptTokens"), label(r, "serverPromptTokens")))
        .collect();
    assert_eq!(
        got,
        vec![
            (Some(9.0), Some(4.0)),
            (Some(3.0), Some(3.0)),
            (Some(9.0), Some(4.0)),
            (Some(3.0), Some(3.0))
        ]
    );
    assert!(
        stdout.contains(
            "prompt tokens: server = client on 2 of 4 rows; server − client min -5, mean -2.50, max 0"
        ),
        "{stdout}"
    );
    // Without --tokenizer the trace says lengths are not model tokens.
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &["--request-rate", "4", "--duration", "0.5s"],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(trace["workload"]["promptLengths"], "approximate");
}

#[test]
fn extra_body_cannot_set_max_tokens_beside_a_flag_that_sets_it() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let file = mooncake(dir.path(), 3);
    let replay = [
        "--replay",
        "mooncake",
        file.to_str().unwrap(),
        "--extra-body",
        r#"{"max_tokens": 5}"#,
    ];
    let rate = [
        "--request-rate",
        "1",
        "--duration",
        "1s",
        "--output-tokens",
        "64",
        "--extra-body",
        r#"{"max_tokens": 5}"#,
    ];
    for (args, flag) in [(&replay[..], "--replay"), (&rate[..], "--output-tokens")] {
        let (code, message, trace) = record("http://127.0.0.1:9", &out, args);
        assert_eq!(code, 2, "{message}");
        assert_eq!(
            message,
            format!(
                "usage: --extra-body: `max_tokens` is also set by {flag}; give it in one place only"
            )
        );
        assert_eq!(trace, Value::Null);
    }
}

/// The client's tokenizer against a server whose chat template adds 35
/// tokens to every prompt's count (200 → 235, off by more than max(2, 4)):
/// the recorder's end-of-run check flags the trace; with a 2-token template
/// (within the slack) it does not.
#[test]
fn a_client_tokenizer_that_is_not_the_servers_flags_the_trace() {
    let tok = fixture_tokenizer();
    for template_tokens in [35, 2] {
        let mut config = quirky_config(template_tokens);
        config.tokenizer = Some(Arc::new(TokenCounter::load(&tok).expect("fixture")));
        let server = SimServer::start(config, 2).expect("start sim");
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("t.json");
        let (code, stdout, trace) = record(
            &server.url(),
            &out,
            &[
                "--request-rate",
                "20",
                "--arrival",
                "constant",
                "--duration",
                "1s",
                "--tokenizer",
                tok.to_str().unwrap(),
                "--input-tokens",
                "200",
            ],
        );
        assert_eq!(code, 0, "{stdout}");
        assert_eq!(trace["workload"]["promptLengths"], "tokens");
        for row in rows(&trace) {
            assert_eq!(label(row, "promptTokens"), Some(200.0));
            assert_eq!(
                label(row, "serverPromptTokens"),
                Some(200.0 + f64::from(template_tokens))
            );
        }
        let flag = trace["workload"].get("tokenizerMismatch");
        if template_tokens == 35 {
            assert_eq!(flag, Some(&Value::Bool(true)), "{stdout}");
            assert!(stdout.contains("tokenizer mismatch"), "{stdout}");
        } else {
            assert!(flag.is_none(), "{stdout}");
            assert!(!stdout.contains("tokenizer mismatch"), "{stdout}");
        }
    }
}

/// The fast sim of [`sim`] (1 output token) with a chat template of `n` tokens.
fn quirky_config(template_tokens: u32) -> SimConfig {
    SimConfig {
        engine: EngineParams {
            max_batch: 256,
            prefill_ms_per_1k_tokens: 1.0,
            decode_step_ms: 2.0,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (2.0, 0.0),
        faults: vec![],
        seed: 5,
        model_name: "sim".into(),
        also_served: vec![],
        quirks: goodput_sim::quirks::StreamQuirks {
            template_tokens,
            ..Default::default()
        },
        tokenizer: None,
    }
}
