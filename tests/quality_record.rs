//! A quality bank recorded beside the load (docs/quality.md, "Recording"):
//! `record --quality-bank` against the sim, whose answers are a documented
//! function of the prompt (docs/quality.md, "The sim"), so every expected
//! answer and every corrupted item is computed here by hand — with an FNV-1a
//! written in this file, not the sim's — and the sidecar, the trace's
//! `quality` member, the gate and compare are checked against them.

mod common;

use std::path::{Path, PathBuf};

use common::recording::record;
use goodput_sim::engine::EngineParams;
use goodput_sim::fault::{Fault, FaultKind};
use goodput_sim::quirks::StreamQuirks;
use goodput_sim::{SimConfig, SimServer};
use serde_json::Value;
use sha2::{Digest, Sha256};

const WORDS: [&str; 8] = ["the", "model", "says", "hello", "to", "a", "queue", "again"];
/// Answer length: the sim's `--output-tokens` mean (temperature 0).
const ANSWER_TOKENS: usize = 3;
const ITEMS: usize = 20;

/// FNV-1a 64, from its definition: offset basis, xor each byte, multiply by
/// the FNV prime.
fn fnv(text: &str) -> u64 {
    let mut h: u64 = 14695981039346656037;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(1099511628211);
    }
    h
}

fn prompt(i: usize) -> String {
    format!("Question {i}: name three words.")
}

/// The sim's answer to `p` (corrupted: one word later), normalised.
fn answer(p: &str, corrupted: bool) -> String {
    let start = (fnv(p) % 8) as usize + usize::from(corrupted);
    (0..ANSWER_TOKENS)
        .map(|i| WORDS[(start + i) % 8])
        .collect::<Vec<_>>()
        .join(" ")
}

fn is_corrupted(p: &str, share: f64) -> bool {
    ((fnv(p) >> 32) % 1_000_000) < (share * 1e6).round() as u64
}

/// A bank of 20 items, each expecting the sim's clean answer exactly.
fn bank(dir: &Path) -> PathBuf {
    let lines: String = (0..ITEMS)
        .map(|i| {
            let p = prompt(i);
            serde_json::json!({"id": format!("q{i}"), "prompt": p, "maxTokens": 8,
                               "expect": {"exact": answer(&p, false)}})
            .to_string()
                + "\n"
        })
        .collect();
    let path = dir.join("bank.jsonl");
    std::fs::write(&path, lines).unwrap();
    path
}

fn sim(corrupt: f64, faults: Vec<Fault>) -> SimServer {
    let config = SimConfig {
        engine: EngineParams {
            max_batch: 16,
            prefill_ms_per_1k_tokens: 0.0,
            decode_step_ms: 2.0,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (ANSWER_TOKENS as f64, 0.0),
        faults,
        seed: 1,
        model_name: "sim".into(),
        also_served: vec![],
        quirks: StreamQuirks {
            corrupt_answers: corrupt,
            ..StreamQuirks::default()
        },
        tokenizer: None,
    };
    SimServer::start(config, 1).expect("start sim")
}

/// Records 1 s of load with the bank interleaved at 40 items/s.
fn recorded(server: &SimServer, dir: &Path, name: &str, bank: &Path) -> (PathBuf, Value) {
    let out = dir.join(name);
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "10",
            "--arrival",
            "constant",
            "--duration",
            "1s",
            "--slo",
            "chat:ttft=2000,e2e=5000",
            "--quality-bank",
            bank.to_str().unwrap(),
            "--quality-rate",
            "40",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    (out, trace)
}

fn sidecar(out: &Path) -> (Vec<u8>, Vec<Value>) {
    let bytes = std::fs::read(out.with_extension("quality.jsonl")).unwrap();
    let lines = String::from_utf8(bytes.clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (bytes, lines)
}

fn gate(trace: &Path) -> (Option<i32>, String) {
    let out = common::goodput()
        .args(["gate", "--min-goodput", "0", "--min-quality", "0.98"])
        .arg(trace)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn a_clean_sim_meets_every_item_and_a_corrupted_one_misses_exactly_the_corrupted_items() {
    let dir = tempfile::tempdir().unwrap();
    let bank = bank(dir.path());
    let clean = sim(0.0, vec![]);
    let (clean_out, trace) = recorded(&clean, dir.path(), "clean.json", &bank);
    let (bytes, lines) = sidecar(&clean_out);
    // The trace names its sidecar by file name and sha256.
    assert_eq!(trace["quality"]["sidecar"], "clean.quality.jsonl");
    assert_eq!(
        trace["quality"]["sha256"],
        format!("{:x}", Sha256::digest(&bytes)).as_str()
    );
    // Bank requests are not load rows: 10 rows for 10 scheduled arrivals.
    assert_eq!(trace["rows"].as_array().unwrap().len(), 10);
    assert_eq!(lines[0]["schema"], "goodput-quality/1");
    assert_eq!(lines[0]["phase"], "interleaved");
    assert_eq!(lines.len(), 1 + ITEMS);
    for (i, line) in lines[1..].iter().enumerate() {
        assert_eq!(line["id"], format!("q{i}"));
        assert_eq!(line["answer"], answer(&prompt(i), false).as_str(), "{line}");
        assert_eq!(line["verdict"], "met", "{line}");
    }
    let (code, text) = gate(&clean_out);
    assert_eq!(code, Some(0), "{text}");

    // 40 % corrupted: the items whose hash falls in the share, by hand.
    let share = 0.4;
    let corrupted: Vec<usize> = (0..ITEMS)
        .filter(|&i| is_corrupted(&prompt(i), share))
        .collect();
    assert!(
        corrupted.len() >= 4,
        "the bank must hold corrupted items: {corrupted:?}"
    );
    let bad = sim(share, vec![]);
    let (bad_out, _) = recorded(&bad, dir.path(), "bad.json", &bank);
    let (_, lines) = sidecar(&bad_out);
    for (i, line) in lines[1..].iter().enumerate() {
        let hit = corrupted.contains(&i);
        assert_eq!(line["answer"], answer(&prompt(i), hit).as_str(), "{line}");
        assert_eq!(
            line["verdict"],
            if hit { "missed" } else { "met" },
            "{line}"
        );
    }
    let (code, text) = gate(&bad_out);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("quality"), "{text}");

    // Compare: A clean (20/20) vs B corrupted (20 − k of 20).
    let out = common::goodput()
        .args(["compare", "--json"])
        .arg(&clean_out)
        .arg(&bad_out)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: Value = serde_json::from_slice(&out.stdout).unwrap();
    let q = &c["quality"];
    assert_eq!(q["a"], 1.0);
    let k = corrupted.len() as f64;
    assert!((q["b"].as_f64().unwrap() - (ITEMS as f64 - k) / ITEMS as f64).abs() < 1e-12);
    // Newcombe at 95 %: Wilson's lower bound for 20/20 is 0.839; with at
    // least 4 of 20 missed B's upper bound is at most 0.92, so the difference
    // interval lies below 0 once k ≥ 5; k = 4 may be indistinguishable.
    if k >= 5.0 {
        assert_eq!(q["verdict"], "worse", "{q}");
    }
}

#[test]
fn the_same_bank_twice_gives_the_same_answers() {
    let dir = tempfile::tempdir().unwrap();
    let bank = bank(dir.path());
    let server = sim(0.0, vec![]);
    let (a, _) = recorded(&server, dir.path(), "a.json", &bank);
    let (b, _) = recorded(&server, dir.path(), "b.json", &bank);
    let hashes = |out: &Path| -> Vec<Value> {
        sidecar(out).1[1..]
            .iter()
            .map(|l| l["answerSha256"].clone())
            .collect()
    };
    assert_eq!(hashes(&a), hashes(&b));
    let out = common::goodput()
        .arg("quality")
        .arg(a.with_extension("quality.jsonl"))
        .arg("--baseline")
        .arg(b.with_extension("quality.jsonl"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("changes  0"), "{text}");
}

#[test]
fn a_bank_item_whose_request_fails_has_its_line_as_failed() {
    let dir = tempfile::tempdir().unwrap();
    let bank = bank(dir.path());
    let server = sim(
        0.0,
        vec![Fault {
            kind: FaultKind::Http500,
            rate: 1.0,
        }],
    );
    let out = dir.path().join("f.json");
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "5",
            "--duration",
            "1s",
            "--no-preflight",
            "--slo",
            "chat:ttft=2000,e2e=5000",
            "--quality-bank",
            bank.to_str().unwrap(),
            "--quality-phase",
            "after",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    let (_, lines) = sidecar(&out);
    assert_eq!(lines[0]["phase"], "after");
    let last_send = trace["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["arrivalMs"].as_f64().unwrap())
        .fold(0.0, f64::max);
    assert_eq!(lines.len(), 1 + ITEMS);
    for line in &lines[1..] {
        assert_eq!(line["status"], "failed", "{line}");
        assert_eq!(line["reason"], "http 500", "{line}");
        assert_eq!(line["verdict"], "failed", "{line}");
        // After the load: sent once its last request had ended.
        assert!(line["arrivalMs"].as_f64().unwrap() > last_send, "{line}");
    }
}

#[test]
fn a_bank_that_does_not_parse_fails_the_run_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bank.jsonl");
    std::fs::write(
        &path,
        "{\"id\":\"a\",\"prompt\":\"x\",\"expect\":{\"regex\":\"(\"}}\n",
    )
    .unwrap();
    let server = sim(0.0, vec![]);
    let out = dir.path().join("t.json");
    let (code, message, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "5",
            "--duration",
            "1s",
            "--quality-bank",
            path.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2, "{message}");
    assert!(
        message.contains("line 1") && message.contains("/expect/regex"),
        "{message}"
    );
    assert!(trace.is_null());
    assert_eq!(
        server
            .stats
            .requests
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
}

#[test]
fn an_interrupted_run_writes_every_item_and_sends_no_more_after_the_signal() {
    let dir = tempfile::tempdir().unwrap();
    let bank = bank(dir.path());
    let server = sim(0.0, vec![]);
    let out = dir.path().join("t.json");
    // One item every 4 s from t0: q0 goes at t0, q1 would go at 4 s; the
    // signal comes at about 1.5 s, so q1 … q19 are never sent.
    let child = common::goodput()
        .args([
            "record",
            "--url",
            &server.url(),
            "--model",
            "sim",
            "--no-preflight",
        ])
        .args([
            "--request-rate",
            "10",
            "--arrival",
            "constant",
            "--duration",
            "30s",
        ])
        .args(["--slo", "chat:ttft=2000,e2e=5000", "--quality-rate", "0.25"])
        .arg("--quality-bank")
        .arg(&bank)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let ms = std::time::Duration::from_millis;
    let output = common::recording::interrupt_and_wait(child, &[ms(1500), ms(300)], ms(15_000));
    assert_eq!(
        output.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let (bytes, lines) = sidecar(&out);
    assert_eq!(lines.len(), 1 + ITEMS);
    assert_eq!(lines[1]["id"], "q0");
    assert_eq!(lines[1]["verdict"], "met", "{}", lines[1]);
    for line in &lines[2..] {
        assert_eq!(line["status"], "failed", "{line}");
        assert_eq!(line["reason"], "not sent: run interrupted", "{line}");
    }
    // Only q0 reached the server beside the load's rows.
    let trace: Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let rows = trace["rows"].as_array().unwrap().len() as u64;
    let sent = server
        .stats
        .requests
        .load(std::sync::atomic::Ordering::Relaxed);
    let unsent = trace["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["labels"]["notSent"] == true)
        .count() as u64;
    assert_eq!(sent, rows - unsent + 1, "{rows} rows, {unsent} never sent");
    let hex: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(trace["quality"]["sha256"], hex);
}
