//! The recorder's spool: the trace written from the spool is byte-identical
//! to the in-memory path's for the same rows; `record --recover` turns a
//! hand-made spool into the trace worked out by hand below, and the spool
//! of a recorder killed with SIGKILL at seeded random instants into a valid
//! trace holding every spooled row unchanged. (That resident memory does
//! not grow with the length of a run is a bench: `cargo bench --bench
//! record_rss`.)

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clap::Parser;
use common::recording::{f, receipt, rows};
use goodput::cli::{Cli, Command as Sub};
use goodput_record::exchange::{Ending, FailReason, Observation};
use goodput_record::output::frame::Stop;
use goodput_record::output::spool::{self, SpoolWriter};
use goodput_record::output::summary;
use goodput_record::run::{Collector, Finished, RunOutcome};
use goodput_record::{build_trace, Plan};
use goodput_sim::engine::EngineParams;
use goodput_sim::{SimConfig, SimServer};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::Value;

/// A plan from `goodput record` flags (nothing is sent).
fn plan(out: &Path, extra: &[&str]) -> Plan {
    plan_at("http://127.0.0.1:9", out, extra)
}

/// A plan for the server at `url`.
fn plan_at(url: &str, out: &Path, extra: &[&str]) -> Plan {
    let mut argv: Vec<String> = ["goodput", "record", "--url", url, "--model", "m", "--out"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    argv.push(out.display().to_string());
    argv.extend(extra.iter().map(|s| s.to_string()));
    let cli = Cli::try_parse_from(&argv).expect("flags parse");
    let Sub::Record(args) = cli.command else {
        panic!("not record")
    };
    goodput::cli::record::plan::plan(&args).expect("a valid plan")
}

/// A run's worth of results drawn at random: every kind of ending, times
/// with full double precision, some requests never sent.
fn random_outcome(plan: &Plan, seed: u64, with_chunks: bool) -> RunOutcome {
    let arrivals = match &plan.run.load {
        goodput_record::run::Load::Open { arrivals_ms } => arrivals_ms.as_ref().clone(),
        _ => unreachable!("open-loop plans only"),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let reasons = [
        FailReason::Http(503),
        FailReason::Timeout,
        FailReason::Disconnect,
        FailReason::BadStream,
        FailReason::NoContent,
        FailReason::ConnectRefused,
    ];
    let results: Vec<Option<Finished>> = arrivals
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let kind = rng.random_range(0..10u32);
            if kind == 0 {
                return None;
            }
            let prompt = plan.run.prompts.prompt(i);
            let sent = a + rng.random_range(0.0..3.0);
            let first = sent + rng.random_range(1.0..500.0);
            let end = first + rng.random_range(0.0..2000.0);
            let usage = !(with_chunks && kind == 1);
            let obs = Observation {
                sent_ms: Some(sent),
                first_token_ms: (kind != 9).then_some(first),
                content_chunks: rng.random_range(1..200),
                usage_output_tokens: usage.then(|| rng.random_range(1..300)),
                usage_prompt_tokens: (kind % 2 == 0).then(|| rng.random_range(1..900)),
                finished: kind != 8,
                error_head: None,
                // The server's error text on some failed rows (the runner
                // makes the label before the row reaches the collector).
                error_text: (matches!(kind, 6 | 7) && rng.random_range(0..2u32) == 0)
                    .then(|| format!("overloaded \"queue\" {}", rng.random_range(0..3u32))),
            };
            let ending = match kind {
                1..=5 => Ending::Completed { completed_ms: end },
                6 | 7 => Ending::Failed {
                    reason: reasons[rng.random_range(0..reasons.len())],
                    ended_ms: end,
                },
                _ => Ending::InFlight,
            };
            Some(Finished {
                arrival_ms: a,
                obs,
                ending,
                class: prompt.class.clone(),
                prompt_chars: prompt.text.chars().count() as u64,
                prompt_hash: goodput_record::workload::body::prompt_hash(&prompt.text),
                // Workload labels travel through the spool too.
                labels: if kind % 2 == 0 {
                    [(
                        "promptTokens".to_owned(),
                        goodput_core::trace::Scalar::Number(f64::from(kind) * 10.0),
                    )]
                    .into()
                } else {
                    Default::default()
                },
            })
        })
        .collect();
    RunOutcome {
        rows: results.len(),
        results,
        arrivals_ms: arrivals.clone(),
        interrupted_at_ms: None,
        planned: arrivals.len(),
        keep_alive_retries: 0,
        shard_clock: None,
    }
}

/// Spools `outcome` in a scrambled order (endings do not come in index
/// order), with marks in between, and writes the trace from the spool.
fn through_the_spool(plan: &Plan, outcome: &RunOutcome, seed: u64) -> (Vec<u8>, spool::Built) {
    let spool_file = spool::spool_path(&plan.out);
    let mut writer = SpoolWriter::create(&spool_file, &spool::header(plan)).expect("create");
    let mut order: Vec<usize> = (0..outcome.results.len()).collect();
    // Local disorder, as real endings have: shuffle within blocks of 40.
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for block in order.chunks_mut(40) {
        for k in (1..block.len()).rev() {
            block.swap(k, rng.random_range(0..=k));
        }
    }
    for (n, &i) in order.iter().enumerate() {
        if let Some(f) = &outcome.results[i] {
            writer.ended(i, f.clone());
        }
        if n % 25 == 0 {
            writer.mark(n as f64, n);
        }
    }
    writer.finish().expect("spool flushed");
    let built = spool::finish_run(
        plan,
        outcome,
        &spool_file,
        &Stop::of(outcome),
        &Default::default(),
    )
    .expect("the trace is written from the spool");
    std::fs::remove_file(&spool_file).unwrap();
    (std::fs::read(&plan.out).unwrap(), built)
}

#[test]
fn the_trace_from_the_spool_is_byte_identical_to_the_in_memory_trace() {
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("p.jsonl");
    std::fs::write(
        &prompts,
        "{\"prompt\": \"short one\", \"class\": \"fast\"}\n\"a plain prompt\"\n{\"prompt\": \"x y z\", \"class\": \"slow\"}\n",
    )
    .unwrap();
    let prompts = prompts.display().to_string();
    let cases: [(&[&str], bool, u64); 6] = [
        (&["--request-rate", "300", "--duration", "2s"], false, 1),
        (
            &[
                "--request-rate",
                "300",
                "--duration",
                "2s",
                "--warmup",
                "0.5s",
            ],
            true,
            2,
        ),
        (
            &[
                "--request-rate",
                "200",
                "--duration",
                "1s",
                "--slo",
                "fast:ttft=100,e2e=1000",
                "--slo",
                "slow:ttft=1000",
                "--prompts",
                &prompts,
            ],
            false,
            3,
        ),
        (
            &[
                "--request-rate",
                "100",
                "--arrival",
                "gamma",
                "--burstiness",
                "0.3",
                "--duration",
                "1s",
                "--equality",
                "strict",
            ],
            true,
            4,
        ),
        // A phased schedule (every row labelled with its phase, the trace
        // declaring the phases) and resources.
        (
            &[
                "--phases",
                "steady:100/s:1s,burst:300/s:0.5s,recover:100/s:1s",
                "--warmup",
                "0.2s",
                "--gpus",
                "2",
                "--gpu-hour-cost",
                "2.5",
            ],
            false,
            5,
        ),
        // https with --insecure, headers and an extra body: the workload's
        // tls, insecure, headers and extraBody labels.
        (
            &[
                "--request-rate",
                "150",
                "--duration",
                "1s",
                "-H",
                "X-Team: never-in-the-trace",
                "--insecure",
                "--extra-body",
                "{\"temperature\": 0, \"top_p\": 0.5}",
            ],
            true,
            6,
        ),
    ];
    for (n, (flags, chunks, seed)) in cases.into_iter().enumerate() {
        let out = dir.path().join(format!("t{n}.json"));
        let url = if n == 5 {
            "https://127.0.0.1:9"
        } else {
            "http://127.0.0.1:9"
        };
        let p = plan_at(url, &out, flags);
        let mut outcome = random_outcome(&p, seed, chunks);
        if n == 3 {
            // An interrupt in the window, with keep-alive retries: the
            // envelope's every optional label.
            outcome.interrupted_at_ms = Some(654.321_987_6);
            outcome.keep_alive_retries = 3;
        }
        let memory = build_trace(&p, &outcome);
        let expected = memory.to_bytes().unwrap();
        let (bytes, built) = through_the_spool(&p, &outcome, seed);
        assert!(
            bytes == expected,
            "case {n}: the spool path wrote different bytes"
        );
        assert_eq!(built.written.bytes, expected.len(), "case {n}");
        assert_eq!(built.written.rows, memory.rows.len(), "case {n}");
        assert_eq!(
            built.figures,
            summary::figures(&memory.rows, true),
            "case {n}"
        );
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(
            text.contains("\"tokens\": \"chunks\""),
            chunks,
            "case {n}: one completed row without usage makes the document count chunks"
        );
        // The cases exercise what they are meant to (the bytes are compared
        // above; here, that those members are in them at all).
        let trace: Value = serde_json::from_str(&text).unwrap();
        let labelled = |key: &str| {
            rows(&trace)
                .iter()
                .filter(|r| r["labels"].get(key).is_some())
                .count()
        };
        assert!(labelled("errorText") > 0, "case {n}: some errorText label");
        if n == 4 {
            assert_eq!(trace["phases"].as_array().map(Vec::len), Some(3));
            assert_eq!(trace["resources"]["gpus"], 2);
            // Every row after the 0.2 s warm-up arrives in a phase.
            let in_window = rows(&trace)
                .iter()
                .filter(|r| f(&r["arrivalMs"]) >= 200.0)
                .count();
            assert_eq!(labelled("phase"), in_window);
        }
        if n == 5 {
            assert_eq!(trace["workload"]["insecure"], true);
            assert_eq!(trace["workload"]["headers"], "x-team");
            assert!(trace["workload"]["extraBody"]
                .as_str()
                .is_some_and(|b| b.contains("top_p")));
            assert!(!text.contains("never-in-the-trace"));
        }
    }
}

#[test]
fn a_run_with_no_row_writes_the_same_empty_trace_both_ways() {
    let dir = tempfile::tempdir().unwrap();
    let p = plan(
        &dir.path().join("t.json"),
        &["--request-rate", "1", "--duration", "1s", "--seed", "5"],
    );
    let outcome = RunOutcome {
        results: Vec::new(),
        arrivals_ms: Vec::new(),
        interrupted_at_ms: Some(0.5),
        planned: 1,
        keep_alive_retries: 0,
        rows: 0,
        shard_clock: None,
    };
    let (bytes, built) = through_the_spool(&p, &outcome, 0);
    assert_eq!(bytes, build_trace(&p, &outcome).to_bytes().unwrap());
    assert_eq!(built.written.rows, 0);
    assert!(String::from_utf8(bytes).unwrap().contains("\"rows\": []"));
}

// ---------------------------------------------------------------- recovery by hand

/// A spool written line by line: the header of a real plan (constant 10/s
/// for 0.5 s: arrivals at 0, 100, 200, 300, 400 ms), then the lines given.
fn hand_spool(dir: &Path, lines: &[&str]) -> std::path::PathBuf {
    let p = plan(
        &dir.join("dead.json"),
        &[
            "--request-rate",
            "10",
            "--arrival",
            "constant",
            "--duration",
            "0.5s",
            "--grace",
            "1s",
        ],
    );
    let header = serde_json::to_string(&spool::header(&p)).unwrap();
    let path = dir.join("dead.json.spool");
    let mut text = header + "\n";
    for l in lines {
        text.push_str(l);
    }
    std::fs::write(&path, text).unwrap();
    path
}

fn run_cli(argv: &[&str]) -> (i32, String) {
    let cli = Cli::try_parse_from(argv).expect("flags parse");
    let mut stdout = Vec::new();
    match goodput::cli::run(cli, &mut stdout) {
        Ok(code) => (code, String::from_utf8_lossy(&stdout).into_owned()),
        Err(e) => (e.exit_code(), e.message()),
    }
}

fn recover(spool_file: &Path, out: &Path) -> (i32, String, Value) {
    let (code, text) = run_cli(&[
        "goodput",
        "record",
        "--recover",
        &spool_file.display().to_string(),
        "--out",
        &out.display().to_string(),
    ]);
    let trace = std::fs::read(out)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (code, text, trace)
}

#[test]
fn recovery_keeps_ended_rows_puts_dispatched_ones_in_flight_and_cuts_at_the_last_proven_instant() {
    let dir = tempfile::tempdir().unwrap();
    // Request 0 completed at 120.5 ms; a mark at 150 ms had 2 dispatched;
    // request 1 failed at 260.25 ms; the last line was torn by the kill.
    let spool_file = hand_spool(
        dir.path(),
        &[
            "{\"ended\":{\"index\":0,\"arrivalMs\":0.0,\"sentMs\":0.25,\"firstTokenMs\":30.0,\"contentChunks\":4,\"usageOutputTokens\":5,\"finished\":true,\"ending\":{\"completed\":{\"completedMs\":120.5}},\"promptChars\":11,\"promptHash\":\"aaaaaaaaaaaa\"}}\n",
            "{\"mark\":{\"atMs\":150.0,\"dispatched\":2}}\n",
            "{\"ended\":{\"index\":1,\"arrivalMs\":100.0,\"sentMs\":100.5,\"contentChunks\":0,\"finished\":false,\"ending\":{\"failed\":{\"reason\":\"http_503\",\"endedMs\":260.25}},\"promptChars\":12,\"promptHash\":\"bbbbbbbbbbbb\"}}\n",
            "{\"ended\":{\"index\":2,\"arr",
        ],
    );
    let out = dir.path().join("recovered.json");
    let (code, text, trace) = recover(&spool_file, &out);
    assert_eq!(code, 0, "{text}");
    // The cut is 260.25 ms (the failure, later than the mark); arrivals
    // before it: 0, 100, 200 → 3 rows. Requests 0 and 1 were spooled;
    // request 2 (200 ms) is past the 2 dispatched → not sent.
    assert!(text.contains("recovered 3 rows"), "{text}");
    assert!(text.contains("2 from the spool"), "{text}");
    assert!(text.contains("0 dispatched without an ending"), "{text}");
    assert!(text.contains("1 due but not proven sent"), "{text}");
    assert_eq!(
        trace["window"],
        serde_json::json!({"startMs": 0, "endMs": 260.25, "horizonMs": 260.25})
    );
    assert_eq!(trace["workload"]["recovered"], true);
    assert_eq!(trace["workload"]["interrupted"], true);
    assert_eq!(trace["workload"]["plannedScheduled"], 5);
    assert_eq!(trace["tokens"], "usage");
    let r = rows(&trace);
    assert_eq!(r.len(), 3);
    assert_eq!(r[0]["id"], "r0");
    assert_eq!(r[0]["status"], "completed");
    assert_eq!(r[0]["completedMs"], 120.5);
    assert_eq!(r[0]["firstTokenMs"], 30);
    assert_eq!(r[0]["outputTokens"], 5);
    assert_eq!(r[0]["labels"]["sendLagMs"], 0.25);
    assert_eq!(r[0]["labels"]["promptChars"], 11);
    assert_eq!(r[1]["status"], "failed");
    assert_eq!(r[1]["reason"], "http_503");
    assert_eq!(r[1]["endedMs"], 260.25);
    assert_eq!(r[1]["labels"]["sendLagMs"], 0.5);
    assert_eq!(r[2]["status"], "in_flight");
    assert_eq!(r[2]["arrivalMs"], 200);
    assert_eq!(r[2]["labels"]["notSent"], true);
    // The analyzer takes it: 3 arrivals in [0, 260.25), 1 pass, 1 failed,
    // 1 censored.
    let counts = &receipt(&out)["results"]["all"]["counts"];
    assert_eq!(counts["cohort"], 3);
    assert_eq!(counts["pass"], 1);
    assert_eq!(counts["failed"], 1);
    assert_eq!(counts["censored"], 1);
}

#[test]
fn recovery_keeps_every_spooled_row_as_the_in_memory_path_writes_it_with_every_trace_member() {
    // A phased https run with headers, an extra body and resources, whose
    // recorder died after handing over the endings of its first 60 %
    // requests (in scrambled order) and a mark counting them dispatched.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dead.json");
    let p = plan_at(
        "https://127.0.0.1:9",
        &out,
        &[
            "--phases",
            "steady:100/s:1s,burst:300/s:0.5s,recover:100/s:1s",
            "--warmup",
            "0.2s",
            "--gpus",
            "4",
            "-H",
            "X-Team: never-in-the-trace",
            "--insecure",
            "--extra-body",
            "{\"temperature\": 0}",
        ],
    );
    let outcome = random_outcome(&p, 11, false);
    let memory: Value =
        serde_json::from_slice(&build_trace(&p, &outcome).to_bytes().unwrap()).unwrap();
    let spool_file = spool::spool_path(&out);
    let mut writer = SpoolWriter::create(&spool_file, &spool::header(&p)).expect("create");
    let kept = outcome.results.len() * 6 / 10;
    let mut order: Vec<usize> = (0..kept).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for k in (1..order.len()).rev() {
        order.swap(k, rng.random_range(0..=k));
    }
    let mut spooled = std::collections::BTreeSet::new();
    for &i in &order {
        if let Some(f) = &outcome.results[i] {
            writer.ended(i, f.clone());
            spooled.insert(i);
        }
    }
    let last_arrival = outcome.arrivals_ms[kept - 1];
    writer.mark(last_arrival, kept);
    writer.finish().unwrap();

    let recovered = dir.path().join("recovered.json");
    let (code, text, trace) = recover(&spool_file, &recovered);
    assert_eq!(code, 0, "{text}");
    let (mem_rows, rec_rows) = (rows(&memory), rows(&trace));
    for &i in &spooled {
        assert_eq!(rec_rows[i], mem_rows[i], "row {i} changed in recovery");
    }
    // Rows without an ending: in flight, and still labelled with their phase.
    for (i, row) in rec_rows.iter().enumerate() {
        if !spooled.contains(&i) {
            assert_eq!(row["status"], "in_flight", "{row}");
            assert_eq!(
                row["labels"].get("phase"),
                mem_rows[i]["labels"].get("phase")
            );
        }
    }
    assert!(rec_rows
        .iter()
        .any(|r| r["labels"].get("errorText").is_some()));
    for key in ["phases", "resources"] {
        assert_eq!(trace[key], memory[key], "{key}");
    }
    for key in ["tls", "insecure", "headers", "extraBody", "seed", "arrival"] {
        assert_eq!(trace["workload"][key], memory["workload"][key], "{key}");
    }
    assert_eq!(trace["workload"]["recovered"], true);
    assert!(!std::fs::read_to_string(&recovered)
        .unwrap()
        .contains("never-in-the-trace"));
    // It validates.
    assert_eq!(
        receipt(&recovered)["results"]["all"]["counts"]["invalid"],
        0
    );
}

#[test]
fn a_multi_turn_spool_recovers_each_turn_with_its_session_labels() {
    let dir = tempfile::tempdir().unwrap();
    // Three sessions of two turns, started at 0, 100 and 200 ms.
    let sessions = dir.path().join("sessions.jsonl");
    std::fs::write(
        &sessions,
        "{\"session_id\": \"a\", \"turns\": [{\"text\": \"one two\"}, {\"text\": \"three\", \"delay\": 50}]}\n\
         {\"session_id\": \"b\", \"turns\": [{\"text\": \"four\"}, {\"text\": \"five six\", \"delay\": 50}]}\n\
         {\"session_id\": \"c\", \"turns\": [{\"text\": \"seven\"}, {\"text\": \"eight\", \"delay\": 50}]}\n",
    )
    .unwrap();
    let p = plan(
        &dir.path().join("dead.json"),
        &[
            "--request-rate",
            "10",
            "--arrival",
            "constant",
            "--duration",
            "0.3s",
            "--warmup",
            "0s",
            "--dataset",
            "multi-turn",
            sessions.to_str().unwrap(),
        ],
    );
    let header = serde_json::to_string(&spool::header(&p)).unwrap();
    let spool_file = dir.path().join("dead.json.spool");
    // Session 0's first turn completed at 80 ms; a mark at 150 ms had two
    // sessions started; nothing else ended before the kill.
    let lines = [
        header.as_str(),
        "{\"ended\":{\"index\":0,\"arrivalMs\":0.0,\"sentMs\":0.5,\"firstTokenMs\":20.0,\"contentChunks\":3,\"usageOutputTokens\":3,\"finished\":true,\"ending\":{\"completed\":{\"completedMs\":80.0}},\"promptChars\":7,\"promptHash\":\"aaaaaaaaaaaa\",\"labels\":{\"session\":\"0\",\"turn\":1,\"conversation\":0}}}",
        "{\"mark\":{\"atMs\":150.0,\"dispatched\":2}}",
    ];
    std::fs::write(&spool_file, lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("recovered.json");
    let (code, text, trace) = recover(&spool_file, &out);
    assert_eq!(code, 0, "{text}");
    // Cut at 150 ms: sessions 0 and 1 started (starts 0 and 100 < 150),
    // session 2 (200 ms) not due: rows are the 4 turns of sessions 0 and 1.
    assert!(text.contains("recovered 4 rows"), "{text}");
    assert!(text.contains("1 from the spool"), "{text}");
    assert!(text.contains("0 due but not proven sent"), "{text}");
    let r = rows(&trace);
    assert_eq!(r.len(), 4);
    assert_eq!(trace["workload"]["plannedScheduled"], 6);
    // The spooled first turn, as it was, with its labels.
    assert_eq!(r[0]["status"], "completed");
    assert_eq!(r[0]["completedMs"], 80);
    assert_eq!(r[0]["labels"]["session"], "0");
    assert_eq!(r[0]["labels"]["turn"], 1);
    // Session 0's second turn: its eligibility instant was never written
    // down, so it is in flight at the cut, excluded, and says why.
    assert_eq!(r[1]["status"], "in_flight");
    assert_eq!(r[1]["arrivalMs"], 150);
    assert_eq!(r[1]["labels"]["arrivalUnknown"], true);
    assert_eq!(r[1]["labels"]["session"], "0");
    assert_eq!(r[1]["labels"]["turn"], 2);
    // Session 1's first turn was dispatched at its start (100 ms).
    assert_eq!(r[2]["status"], "in_flight");
    assert_eq!(r[2]["arrivalMs"], 100);
    assert_eq!(r[2]["labels"]["session"], "1");
    assert!(r[2]["labels"].get("notSent").is_none());
    assert_eq!(r[3]["labels"]["arrivalUnknown"], true);
    assert_eq!(r[3]["labels"]["turn"], 2);
    // The analyzer: window [0, 150): arrivals 0 and 100 are the cohort
    // (1 pass, 1 censored); the two turns at 150 are outside it.
    let counts = &receipt(&out)["results"]["all"]["counts"];
    assert_eq!(counts["cohort"], 2);
    assert_eq!(counts["pass"], 1);
    assert_eq!(counts["censored"], 1);
}

#[test]
fn a_dispatched_request_without_an_ending_is_recovered_in_flight_and_a_bad_line_is_named() {
    let dir = tempfile::tempdir().unwrap();
    // A mark at 350 ms with 4 dispatched and no ending: rows 0–3 in flight
    // (sent, never seen to end), cut at 350 → 4 rows (arrivals 0–300).
    let spool_file = hand_spool(
        dir.path(),
        &["{\"mark\":{\"atMs\":350.0,\"dispatched\":4}}\n"],
    );
    let out = dir.path().join("recovered.json");
    let (code, text, trace) = recover(&spool_file, &out);
    assert_eq!(code, 0, "{text}");
    let r = rows(&trace);
    assert_eq!(r.len(), 4);
    for (i, row) in r.iter().enumerate() {
        assert_eq!(row["status"], "in_flight", "{row}");
        assert_eq!(f(&row["arrivalMs"]), i as f64 * 100.0);
        assert!(row["labels"].get("notSent").is_none(), "{row}");
        assert!(row["labels"].get("sendLagMs").is_none(), "{row}");
    }
    assert_eq!(f(&trace["window"]["endMs"]), 350.0);

    let other = dir.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let broken = hand_spool(
        &other,
        &[
            "{\"mark\":{\"atMs\":150.0,\"dispatched\":2}}\n",
            "{\"ended\":{\"index\":\"zero\"}}\n",
        ],
    );
    let out = other.join("never.json");
    let (code, text, trace) = recover(&broken, &out);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("dead.json.spool:3:"), "{text}");
    assert!(trace.is_null(), "no trace is written from a bad spool");
}

// ---------------------------------------------------------------- SIGKILL

fn fast_sim(output_tokens: f64, step_ms: f64) -> SimServer {
    SimServer::start(
        SimConfig {
            engine: EngineParams {
                max_batch: 512,
                prefill_ms_per_1k_tokens: 0.0,
                decode_step_ms: step_ms,
                decode_ms_per_seq: 0.0,
            },
            output_tokens: (output_tokens, output_tokens / 2.0),
            faults: vec![],
            seed: 3,
            model_name: "sim".into(),
            quirks: Default::default(),
            tokenizer: None,
        },
        1,
    )
    .expect("start sim")
}

fn spawn_record(url: &str, out: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args(["record", "--url", url, "--model", "m", "--no-progress"])
        .args(args)
        .arg("--out")
        .arg(out)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn goodput record")
}

/// The seed of the kill instants: `GOODPUT_KILL_SEED`, or the clock (printed).
fn kill_seed() -> u64 {
    std::env::var("GOODPUT_KILL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
        })
}

/// The spool's complete `ended` lines, by index.
fn spooled_rows(spool_file: &Path) -> (Vec<(usize, Value)>, usize) {
    let text = std::fs::read_to_string(spool_file).expect("the spool is left");
    let mut ended = Vec::new();
    let mut dispatched = 0;
    for line in text.split_inclusive('\n').skip(1) {
        if !line.ends_with('\n') {
            continue; // torn by the kill
        }
        let v: Value = serde_json::from_str(line).expect("a complete spool line is JSON");
        if let Some(e) = v.get("ended") {
            ended.push((e["index"].as_u64().unwrap() as usize, e.clone()));
        } else {
            dispatched = v["mark"]["dispatched"].as_u64().unwrap() as usize;
        }
    }
    (ended, dispatched)
}

/// Whether a trace time is the spooled time rounded to the microsecond (at
/// most half a microsecond away, plus the doubles' own rounding).
fn close(a: &Value, b: f64) -> bool {
    (f(a) - b).abs() <= 0.0005 + 1e-9
}

#[test]
fn sigkill_at_seeded_random_instants_leaves_a_spool_that_recovers_every_row() {
    let seed = kill_seed();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let server = fast_sim(12.0, 3.0);
    let dir = tempfile::tempdir().unwrap();
    for attempt in 0..3 {
        // The run's schedule lasts 2.3 s from the spool's creation (its
        // t0); the kill lands anywhere in the first 2.2 s of it.
        let delay_ms: f64 = rng.random_range(0.0..2200.0);
        eprintln!(
            "GOODPUT_KILL_SEED={seed}: attempt {attempt}: SIGKILL {delay_ms:.1} ms after the spool appears"
        );
        let out = dir.path().join(format!("k{attempt}.json"));
        let mut child = spawn_record(
            &server.url(),
            &out,
            &[
                "--request-rate",
                "200",
                "--duration",
                "2s",
                "--warmup",
                "0.3s",
                "--grace",
                "1s",
                "--seed",
                &attempt.to_string(),
            ],
        );
        let spool_file = spool::spool_path(&out);
        let started = Instant::now();
        while !spool_file.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the recorder never created its spool"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_secs_f64(delay_ms / 1000.0));
        child.kill().expect("SIGKILL");
        let _ = child.wait();
        assert!(!out.exists(), "killed before its end: no trace");
        let (ended, dispatched) = spooled_rows(&spool_file);

        let recovered = dir.path().join(format!("k{attempt}-recovered.json"));
        let (code, text, trace) = recover(&spool_file, &recovered);
        assert_eq!(code, 0, "{text}");
        eprintln!("  {}", text.lines().next().unwrap_or(""));
        // It validates (strict: no invalid row) and says it was recovered.
        let r = receipt(&recovered);
        assert_eq!(trace["workload"]["recovered"], true);
        let all = rows(&trace);
        let cut = f(&trace["workload"]["interruptedAtMs"]);
        // Every spooled row is there, unchanged.
        for (index, e) in &ended {
            let row = &all[*index];
            assert_eq!(row["id"], format!("r{index}"));
            assert!(close(&row["arrivalMs"], f(&e["arrivalMs"])), "{row} {e}");
            let lag = f(&e["sentMs"]) - f(&e["arrivalMs"]);
            assert!(close(&row["labels"]["sendLagMs"], lag), "{row} {e}");
            if let Some(t) = e.get("firstTokenMs") {
                assert!(close(&row["firstTokenMs"], f(t)), "{row} {e}");
            }
            match &e["ending"] {
                Value::Object(m) if m.contains_key("completed") => {
                    assert_eq!(row["status"], "completed", "{row}");
                    assert!(close(
                        &row["completedMs"],
                        f(&m["completed"]["completedMs"])
                    ));
                    assert_eq!(row["outputTokens"], e["usageOutputTokens"], "{row} {e}");
                    assert!(f(&row["completedMs"]) <= cut + 0.0005);
                }
                Value::Object(m) if m.contains_key("failed") => {
                    assert_eq!(row["status"], "failed", "{row}");
                    assert_eq!(row["reason"], m["failed"]["reason"]);
                }
                other => panic!("a request killed mid-run cannot have ended {other}"),
            }
        }
        // Every other row: dispatched → in flight, else not sent.
        let spooled: std::collections::BTreeSet<usize> = ended.iter().map(|(i, _)| *i).collect();
        for (index, row) in all.iter().enumerate() {
            if spooled.contains(&index) {
                continue;
            }
            assert_eq!(row["status"], "in_flight", "{row}");
            let unsent = row["labels"].get("notSent") == Some(&Value::Bool(true));
            assert_eq!(unsent, index >= dispatched, "{row} dispatched {dispatched}");
            assert!(f(&row["arrivalMs"]) < cut, "{row} cut {cut}");
        }
        let counts = &r["results"]["all"]["counts"];
        assert_eq!(counts["invalid"], 0);
        assert_eq!(
            f(&counts["arrivals"]),
            all.len() as f64,
            "every row is an arrival of the recovered trace"
        );
    }
}
