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
use goodput_core::trace::write::round_us;
use goodput_core::trace::Scalar;
use goodput_record::exchange::{Ending, FailReason, Observation};
use goodput_record::output::frame::Stop;
use goodput_record::output::spool::{self, SpoolWriter};
use goodput_record::output::summary;
use goodput_record::run::{Collector, Finished, FirstToken, RunOutcome};
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
    let mut argv: Vec<String> = ["goodput", "record", "--url", url, "--model", "sim", "--out"]
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
                // An answer after reasoning on some rows, none on others.
                first_answer_ms: match kind {
                    9 => None,
                    3 => Some(first + (end - first) / 2.0),
                    5 => None,
                    _ => Some(first),
                },
                content_chunks: rng.random_range(1..200),
                usage_output_tokens: usage.then(|| rng.random_range(300..400)),
                usage_prompt_tokens: (kind % 2 == 0).then(|| rng.random_range(1..900)),
                usage_reasoning_tokens: matches!(kind, 3 | 5).then(|| rng.random_range(0..300)),
                finished: kind != 8,
                error_head: None,
                // The server's error text on some failed rows (the runner
                // makes the label before the row reaches the collector).
                error_text: (matches!(kind, 6 | 7) && rng.random_range(0..2u32) == 0)
                    .then(|| format!("overloaded \"queue\" {}", rng.random_range(0..3u32))),
                // Gaps on some rows, dropped (over the cap) on others: the
                // spool must carry both as the in-memory path does.
                gaps_ms: match kind {
                    2 | 3 => vec![round_us((end - first) / 4.0); 2],
                    _ => Vec::new(),
                },
                gaps_dropped: kind == 4,
                last_content_ms: None,
                // The server's own timing on some rows: its labels and the
                // trace's declared sources come through the spool alike.
                server: if kind == 2 {
                    [
                        (
                            "server.queueMs".to_owned(),
                            Scalar::Number(round_us(sent / 7.0)),
                        ),
                        ("server.prefillMs".to_owned(), Scalar::Number(12.5)),
                    ]
                    .into_iter()
                    .collect()
                } else {
                    Default::default()
                },
                server_sources: goodput_core::server_timing::Sources {
                    vllm_metrics: kind == 2,
                    ..Default::default()
                },
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
        drain: None,
    }
}

/// Spools `outcome` in a scrambled order (endings do not come in index
/// order), each first token told before its ending (as a block ahead of the
/// block's endings), with marks in between, and writes the trace from the
/// spool.
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
    let mut told = 0;
    for (n, &i) in order.iter().enumerate() {
        // The first tokens of this block of 40, before any of its endings.
        while told < order.len() && told < (n / 40 + 1) * 40 {
            let j = order[told];
            if let Some(f) = &outcome.results[j] {
                if let Some(at_ms) = f.obs.first_token_ms {
                    // Told as the runner tells it: the answer with the
                    // first token when the same frame carried it, else
                    // after it.
                    let same = f.obs.first_answer_ms == Some(at_ms);
                    let first = FirstToken {
                        arrival_ms: f.arrival_ms,
                        sent_ms: f.obs.sent_ms,
                        at_ms,
                        answer_ms: f.obs.first_answer_ms.filter(|_| same),
                    };
                    writer.first_token(j, first);
                    if let Some(answer) = f.obs.first_answer_ms.filter(|_| !same) {
                        writer.first_answer(j, answer);
                    }
                }
            }
            told += 1;
        }
        if let Some(f) = &outcome.results[i] {
            writer.ended(i, f.clone());
        }
        if n % 25 == 0 {
            writer.mark(n as f64, n);
        }
    }
    writer.finish().expect("spool flushed");
    let text = std::fs::read_to_string(&spool_file).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.starts_with("{\"first\"")).count(),
        outcome
            .results
            .iter()
            .flatten()
            .filter(|f| f.obs.first_token_ms.is_some())
            .count(),
        "one first-token line per request with a first token"
    );
    let built = spool::finish_run(
        plan,
        outcome,
        &spool_file,
        &Stop::of(outcome),
        &spool::Ends::labels(&Default::default()),
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
        // The schedule note is read from the spool's header (the drawn
        // schedule against the asked rate, tested in `output::summary`);
        // every other figure must be what the in-memory rows give.
        let mut expected = summary::figures(&memory.rows, true);
        expected.schedule = built.figures.schedule;
        assert_eq!(built.figures, expected, "case {n}");
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
        drain: None,
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
    hand_spool_of(dir, lines, true)
}

/// [`hand_spool`]; `first_tokens: false` writes the header as a recorder
/// before first-token lines did (no `firstTokens` member).
fn hand_spool_of(dir: &Path, lines: &[&str], first_tokens: bool) -> std::path::PathBuf {
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
    let mut header = serde_json::to_value(spool::header(&p)).unwrap();
    assert_eq!(header["firstTokens"], true);
    if !first_tokens {
        header.as_object_mut().unwrap().remove("firstTokens");
    }
    let path = dir.join("dead.json.spool");
    let mut text = header.to_string() + "\n";
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

/// Session 0's first turn, completed at 80 ms.
const SESSION_0_TURN_1: &str = "{\"ended\":{\"index\":0,\"arrivalMs\":0.0,\"sentMs\":0.5,\"firstTokenMs\":20.0,\"contentChunks\":3,\"usageOutputTokens\":3,\"finished\":true,\"ending\":{\"completed\":{\"completedMs\":80.0}},\"promptChars\":7,\"promptHash\":\"aaaaaaaaaaaa\",\"labels\":{\"session\":\"0\",\"turn\":1,\"conversation\":0}}}";

/// A mark at 150 ms with two sessions started.
const SESSION_MARK: &str = "{\"mark\":{\"atMs\":150.0,\"dispatched\":2}}";

/// The spool header of three sessions of two turns (each second turn 50 ms
/// after its first ends), started at 0, 100 and 200 ms.
fn multi_turn_header(dir: &Path) -> String {
    let sessions = dir.join("sessions.jsonl");
    std::fs::write(
        &sessions,
        "{\"session_id\": \"a\", \"turns\": [{\"text\": \"one two\"}, {\"text\": \"three\", \"delay\": 50}]}\n\
         {\"session_id\": \"b\", \"turns\": [{\"text\": \"four\"}, {\"text\": \"five six\", \"delay\": 50}]}\n\
         {\"session_id\": \"c\", \"turns\": [{\"text\": \"seven\"}, {\"text\": \"eight\", \"delay\": 50}]}\n",
    )
    .unwrap();
    let p = plan(
        &dir.join("dead.json"),
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
    serde_json::to_string(&spool::header(&p)).unwrap()
}

#[test]
fn a_multi_turn_spool_recovers_each_turn_with_its_session_labels() {
    let dir = tempfile::tempdir().unwrap();
    let header = multi_turn_header(dir.path());
    let spool_file = dir.path().join("dead.json.spool");
    // Session 0's first turn completed at 80 ms; a mark at 150 ms had two
    // sessions started; nothing else ended before the kill.
    let lines = [header.as_str(), SESSION_0_TURN_1, SESSION_MARK];
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
fn a_later_turn_that_told_its_first_token_is_recovered_at_its_arrival() {
    let dir = tempfile::tempdir().unwrap();
    // As above, but session 0's second turn (eligible at 80 + 50 = 130
    // ms) told its first token (140 ms): its arrival is known, in flight
    // at 130, in the window [0, 150), judged (TTFT 10 ms: not late).
    let header = multi_turn_header(dir.path());
    let told = "{\"first\":{\"index\":1,\"arrivalMs\":130.0,\"sentMs\":130.5,\"atMs\":140.0}}";
    let lines = [header.as_str(), SESSION_0_TURN_1, told, SESSION_MARK];
    let spool_file = dir.path().join("dead.json.spool");
    std::fs::write(&spool_file, lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("recovered.json");
    let (code, text, trace) = recover(&spool_file, &out);
    assert_eq!(code, 0, "{text}");
    let r = rows(&trace);
    assert_eq!(r[1]["arrivalMs"], 130);
    assert_eq!(r[1]["firstTokenMs"], 140);
    assert_eq!(r[1]["labels"]["sendLagMs"], 0.5);
    assert!(r[1]["labels"].get("arrivalUnknown").is_none());
    assert_eq!(r[1]["labels"]["turn"], 2);
    let counts = &receipt(&out)["results"]["all"]["counts"];
    assert_eq!(
        (counts["cohort"].as_u64(), counts["censored"].as_u64()),
        (Some(3), Some(2))
    );
    assert_eq!(censored(&out), (2, 0));
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

/// An ending of request `index` at its scheduled arrival `arrival`
/// (0, 100, … ms in [`hand_spool`]'s schedule), completed 50 ms later.
fn ended_line(index: usize, arrival: &str) -> String {
    format!(
        "{{\"ended\":{{\"index\":{index},\"arrivalMs\":{arrival},\"sentMs\":{arrival},\"firstTokenMs\":{arrival},\"contentChunks\":1,\"usageOutputTokens\":1,\"finished\":true,\"ending\":{{\"completed\":{{\"completedMs\":{arrival}}}}},\"promptChars\":1,\"promptHash\":\"aaaaaaaaaaaa\"}}}}\n"
    )
}

#[test]
fn a_spool_the_recorder_could_never_write_is_refused_naming_its_line() {
    // hand_spool's plan: arrivals 0, 100, 200, 300, 400 ms; window end
    // 500 ms + 1 s grace → planned horizon 1500 ms; the recorder writes
    // nothing later than that plus its 60 s drain allowance (61500 ms).
    let ok = ended_line(0, "0.0");
    let cases: Vec<(&str, Vec<String>, String)> = vec![
        (
            "a mark at 10^12 ms",
            vec![
                ok.clone(),
                "{\"mark\":{\"atMs\":1e12,\"dispatched\":2}}\n".into(),
            ],
            "dead.json.spool:3: a mark at 1000000000000 ms, past the planned horizon (1500 ms) \
             by more than the recorder's 60 s drain: the recorder never writes one"
                .into(),
        ),
        (
            "an ending past the horizon",
            vec![ended_line(1, "100.0").replace("\"completedMs\":100.0", "\"completedMs\":61500.5")],
            "dead.json.spool:2: an ending at 61500.5 ms, past the planned horizon (1500 ms)".into(),
        ),
        (
            "100000 dispatched of 5",
            vec!["{\"mark\":{\"atMs\":150.0,\"dispatched\":100000}}\n".into()],
            "dead.json.spool:2: a mark counts 100000 dispatched, but the schedule holds 5 requests"
                .into(),
        ),
        (
            "an ending off its schedule",
            vec![ok.clone(), ended_line(1, "100.5")],
            "dead.json.spool:3: request 1 arrives at 100.5 ms, but the schedule has it at 100 ms"
                .into(),
        ),
        (
            "a first token with an arrival off its schedule",
            vec![
                "{\"first\":{\"index\":2,\"arrivalMs\":150.0,\"sentMs\":200.0,\"atMs\":230.0}}\n"
                    .into(),
            ],
            "dead.json.spool:2: request 2 arrives at 150 ms, but the schedule has it at 200 ms"
                .into(),
        ),
    ];
    for (what, lines, message) in cases {
        let dir = tempfile::tempdir().unwrap();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let spool_file = hand_spool(dir.path(), &lines);
        let out = dir.path().join("recovered.json");
        let (code, text, trace) = recover(&spool_file, &out);
        assert_eq!(code, 2, "{what}: {text}");
        assert!(text.contains(&message), "{what}: {text}");
        assert!(trace.is_null(), "{what}: no trace is written");
    }
    // What the recorder can write is recovered: a last mark at the very
    // end of the drain allowance, all 5 dispatched, arrivals exactly the
    // schedule's (shortest decimals: 0.0, 100.0 and the integer 200).
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        ok,
        ended_line(1, "100.0"),
        ended_line(2, "200"),
        "{\"mark\":{\"atMs\":61500.0,\"dispatched\":5}}\n".into(),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let spool_file = hand_spool(dir.path(), &lines);
    let out = dir.path().join("recovered.json");
    let (code, text, trace) = recover(&spool_file, &out);
    assert_eq!(code, 0, "{text}");
    assert_eq!(rows(&trace).len(), 5);
    assert_eq!(f(&trace["window"]["horizonMs"]), 61500.0);
}

/// The censored counts of a trace's receipt: (in flight, knownLate).
fn censored(trace: &Path) -> (u64, u64) {
    let c = &receipt(trace)["results"]["all"]["reasons"]["censored"];
    (
        c["in_flight"].as_u64().unwrap(),
        c["knownLate"].as_u64().unwrap(),
    )
}

#[test]
fn recovery_keeps_the_first_tokens_of_requests_that_never_ended_and_invents_no_lateness() {
    let dir = tempfile::tempdir().unwrap();
    // Arrivals 0, 100, 200, 300, 400 ms; gates TTFT 1000, E2E 10000. All
    // five sent; requests 0–3 got their first token 30, 40, 50.125 and 30
    // ms after arriving; request 0 then completed at 120 ms; a mark at
    // 1350 ms, then the kill. Request 4 got none.
    let lines = [
        "{\"first\":{\"index\":0,\"sentMs\":0.5,\"atMs\":30.0}}\n",
        "{\"first\":{\"index\":1,\"sentMs\":100.25,\"atMs\":140.0}}\n",
        "{\"ended\":{\"index\":0,\"arrivalMs\":0.0,\"sentMs\":0.5,\"firstTokenMs\":30.0,\"contentChunks\":4,\"usageOutputTokens\":5,\"finished\":true,\"ending\":{\"completed\":{\"completedMs\":120.0}},\"promptChars\":11,\"promptHash\":\"aaaaaaaaaaaa\"}}\n",
        "{\"first\":{\"index\":2,\"sentMs\":200.0,\"atMs\":250.125}}\n",
        "{\"first\":{\"index\":3,\"sentMs\":300.5,\"atMs\":330.0}}\n",
        "{\"mark\":{\"atMs\":1350.0,\"dispatched\":5}}\n",
    ];
    let spool_file = hand_spool(dir.path(), &lines);
    let out = dir.path().join("recovered.json");
    let (code, text, trace) = recover(&spool_file, &out);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("4 dispatched without an ending (in_flight; 3 with their first token)"),
        "{text}"
    );
    assert!(!text.contains("firstTokenUnknown"), "{text}");
    // The cut is the mark (1350 ms), in the grace: window [0, 500),
    // horizon 1350.
    assert_eq!(
        trace["window"],
        serde_json::json!({"startMs": 0, "endMs": 500, "horizonMs": 1350})
    );
    let r = rows(&trace);
    assert_eq!(r.len(), 5);
    assert_eq!(r[0]["status"], "completed");
    assert_eq!(r[0]["completedMs"], 120);
    for (i, first, lag) in [(1, 140.0, 0.25), (2, 250.125, 0.0), (3, 330.0, 0.5)] {
        assert_eq!(r[i]["status"], "in_flight", "{}", r[i]);
        assert_eq!(f(&r[i]["firstTokenMs"]), first, "{}", r[i]);
        assert_eq!(f(&r[i]["labels"]["sendLagMs"]), lag, "{}", r[i]);
        assert!(r[i]["labels"].get("firstTokenUnknown").is_none());
    }
    assert_eq!(r[4]["status"], "in_flight");
    assert!(r[4].get("firstTokenMs").is_none());
    assert!(r[4]["labels"].get("sendLagMs").is_none());
    // Rows 1–3: TTFT 40, 50.125, 30 ≤ 1000, final; E2E evidence 1250,
    // 1150, 1050 < 10000. Row 4: no first token by 1350, TTFT evidence
    // 1350 − 400 = 950 < 1000. Nothing is known late.
    assert_eq!(censored(&out), (4, 0));

    // The same spool without its first-token lines says "no first token
    // by 1350" of rows 1–3, whose elapsed 1250, 1150, 1050 ≥ 1000: late.
    let bare = dir.path().join("bare");
    std::fs::create_dir(&bare).unwrap();
    let spool_file = hand_spool(&bare, &[lines[2], lines[5]]);
    let out = bare.join("recovered.json");
    let (code, text, _) = recover(&spool_file, &out);
    assert_eq!(code, 0, "{text}");
    assert_eq!(censored(&out), (4, 3));

    // A request that gets a first token twice: refused, the line named.
    let twice = dir.path().join("twice");
    std::fs::create_dir(&twice).unwrap();
    let spool_file = hand_spool(&twice, &[lines[1], lines[1]]);
    let (code, text, _) = recover(&spool_file, &twice.join("never.json"));
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("dead.json.spool:3:"), "{text}");
    assert!(
        text.contains("request 1 gets a first token a second time"),
        "{text}"
    );
}

#[test]
fn recovery_keeps_the_first_answers_of_requests_that_never_ended() {
    let dir = tempfile::tempdir().unwrap();
    // Arrivals 0, 100, 200 ms (10/s): request 0 thought from 30 ms and
    // answered at 80 ms (its `answer` line); request 1 answered in its
    // first token's frame at 140 ms (`answerMs` on its `first` line);
    // request 2 was still thinking at the kill.
    let lines = [
        "{\"first\":{\"index\":0,\"sentMs\":0.5,\"atMs\":30.0}}\n",
        "{\"first\":{\"index\":1,\"sentMs\":100.25,\"atMs\":140.0,\"answerMs\":140.0}}\n",
        "{\"answer\":{\"index\":0,\"atMs\":80.0}}\n",
        "{\"first\":{\"index\":2,\"sentMs\":200.0,\"atMs\":250.0}}\n",
        "{\"mark\":{\"atMs\":1350.0,\"dispatched\":5}}\n",
    ];
    let spool_file = hand_spool(dir.path(), &lines);
    let out = dir.path().join("recovered.json");
    let (code, text, trace) = recover(&spool_file, &out);
    assert_eq!(code, 0, "{text}");
    let r = rows(&trace);
    for (i, first, answer) in [
        (0, 30.0, Some(80.0)),
        (1, 140.0, Some(140.0)),
        (2, 250.0, None),
    ] {
        assert_eq!(r[i]["status"], "in_flight", "{}", r[i]);
        assert_eq!(f(&r[i]["firstTokenMs"]), first, "{}", r[i]);
        assert_eq!(r[i]["firstAnswerMs"].as_f64(), answer, "{}", r[i]);
    }
    // An answer with no first token before it is a line the recorder
    // never writes: refused, the line named.
    let stray = dir.path().join("stray");
    std::fs::create_dir(&stray).unwrap();
    let spool_file = hand_spool(&stray, &["{\"answer\":{\"index\":3,\"atMs\":80.0}}\n"]);
    let (code, text, _) = recover(&spool_file, &stray.join("never.json"));
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("dead.json.spool:2:"), "{text}");
    assert!(
        text.contains("request 3 gets a first answer without a first token or a second time"),
        "{text}"
    );
}

#[test]
fn without_a_schedule_a_first_token_line_gives_the_row_its_arrival() {
    let dir = tempfile::tempdir().unwrap();
    // Closed loop, 2 workers: requests 0 and 1 sent at 1 and 2 ms, their
    // first tokens at 40 and 45 ms; a mark at 250 ms with 3 dispatched
    // (request 2, sent at 60 ms, has no line).
    let p = plan(
        &dir.path().join("dead.json"),
        &["--max-concurrency", "2", "--duration", "1s"],
    );
    let header = serde_json::to_string(&spool::header(&p)).unwrap();
    let lines = [
        header.as_str(),
        "{\"first\":{\"index\":0,\"arrivalMs\":1.0,\"atMs\":40.0}}",
        "{\"first\":{\"index\":1,\"arrivalMs\":2.0,\"atMs\":45.0}}",
        "{\"mark\":{\"atMs\":250.0,\"dispatched\":3}}",
    ];
    let spool_file = dir.path().join("dead.json.spool");
    std::fs::write(&spool_file, lines.join("\n") + "\n").unwrap();
    let out = dir.path().join("recovered.json");
    let (code, text, trace) = recover(&spool_file, &out);
    assert_eq!(code, 0, "{text}");
    let r = rows(&trace);
    assert_eq!(r.len(), 3);
    // Their own arrivals and first tokens (closed loop: no send lag), not
    // the mark's instant.
    for (i, arrival, first) in [(0, 1.0, 40.0), (1, 2.0, 45.0)] {
        assert_eq!(f(&r[i]["arrivalMs"]), arrival, "{}", r[i]);
        assert_eq!(f(&r[i]["firstTokenMs"]), first, "{}", r[i]);
        assert!(r[i]["labels"].get("arrivalFromMark").is_none());
        assert!(r[i]["labels"].get("sendLagMs").is_none());
    }
    // Request 2: dated by the mark that counted it, as before.
    assert_eq!(f(&r[2]["arrivalMs"]), 250.0);
    assert_eq!(r[2]["labels"]["arrivalFromMark"], true);
    assert_eq!(receipt(&out)["results"]["all"]["counts"]["invalid"], 0);
}

#[test]
fn a_spool_from_before_first_token_lines_recovers_rows_whose_first_token_is_unknown() {
    let dir = tempfile::tempdir().unwrap();
    // The header of an older recorder (no `firstTokens`): request 0
    // completed at 120 ms; a mark at 1350 ms with 4 dispatched. Rows 1–3
    // are in flight, row 4 (400 ms) due but not proven sent; none of the
    // four can say whether a first token came.
    let spool_file = hand_spool_of(
        dir.path(),
        &[
            "{\"ended\":{\"index\":0,\"arrivalMs\":0.0,\"sentMs\":0.5,\"firstTokenMs\":30.0,\"contentChunks\":4,\"usageOutputTokens\":5,\"finished\":true,\"ending\":{\"completed\":{\"completedMs\":120.0}},\"promptChars\":11,\"promptHash\":\"aaaaaaaaaaaa\"}}\n",
            "{\"mark\":{\"atMs\":1350.0,\"dispatched\":4}}\n",
        ],
        false,
    );
    let out = dir.path().join("recovered.json");
    let (code, text, trace) = recover(&spool_file, &out);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("its 4 rows without an ending say firstTokenUnknown"),
        "{text}"
    );
    let r = rows(&trace);
    assert_eq!(r.len(), 5);
    assert!(r[0]["labels"].get("firstTokenUnknown").is_none());
    for row in &r[1..] {
        assert_eq!(row["status"], "in_flight", "{row}");
        assert_eq!(row["labels"]["firstTokenUnknown"], true, "{row}");
    }
    assert_eq!(r[4]["labels"]["notSent"], true);
    // Unmarked, rows 1–3 (elapsed 1250, 1150, 1050 ≥ 1000) would be late
    // on TTFT; marked, only E2E is judged (evidence ≤ 1250 < 10000).
    assert_eq!(censored(&out), (4, 0));
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
            also_served: vec![],
            quirks: Default::default(),
            tokenizer: None,
        },
        1,
    )
    .expect("start sim")
}

fn spawn_record(url: &str, out: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args(["record", "--url", url, "--model", "sim", "--no-progress"])
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

/// What a killed recorder's spool holds, read line by line.
struct Spooled {
    /// The complete `ended` lines, by index.
    ended: Vec<(usize, Value)>,
    /// The complete `first` lines, by index.
    firsts: std::collections::BTreeMap<usize, Value>,
    /// The last mark: (ms since t0, requests dispatched).
    last_mark: (f64, usize),
}

fn spooled_rows(spool_file: &Path) -> Spooled {
    let text = std::fs::read_to_string(spool_file).expect("the spool is left");
    let mut spooled = Spooled {
        ended: Vec::new(),
        firsts: Default::default(),
        last_mark: (0.0, 0),
    };
    for line in text.split_inclusive('\n').skip(1) {
        if !line.ends_with('\n') {
            continue; // torn by the kill
        }
        let v: Value = serde_json::from_str(line).expect("a complete spool line is JSON");
        let index = |v: &Value| v["index"].as_u64().unwrap() as usize;
        if let Some(e) = v.get("ended") {
            spooled.ended.push((index(e), e.clone()));
        } else if let Some(first) = v.get("first") {
            let old = spooled.firsts.insert(index(first), first.clone());
            assert!(old.is_none(), "one first-token line per request: {first}");
        } else {
            let m = &v["mark"];
            spooled.last_mark = (f(&m["atMs"]), m["dispatched"].as_u64().unwrap() as usize);
        }
    }
    spooled
}

/// Whether a trace time is the spooled time rounded to the microsecond (at
/// most half a microsecond away, plus the doubles' own rounding).
fn close(a: &Value, b: f64) -> bool {
    (f(a) - b).abs() <= 0.0005 + 1e-9
}

/// How long after its arrival a request to `fast_sim(20.0, 50.0)` surely
/// has its first token at the recorder: the sim sends it within two 50 ms
/// decode steps; the rest is room for a loaded machine.
const SURELY_FIRST_MS: f64 = 500.0;

#[test]
fn sigkill_at_seeded_random_instants_leaves_a_spool_that_recovers_every_row() {
    let seed = kill_seed();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    // Requests of 20 ± 10 tokens at 50 ms a step: about a second each, so
    // the kill finds many in flight, most of them past their first token.
    let server = fast_sim(20.0, 50.0);
    let dir = tempfile::tempdir().unwrap();
    for attempt in 0..3 {
        // The run's schedule lasts 2.3 s from the spool's creation (its
        // t0); the kill lands anywhere in the first 2.2 s of it (the first
        // attempt's after 1.2 s, so requests older than SURELY_FIRST_MS
        // are in flight at its last mark).
        let earliest = if attempt == 0 { 1200.0 } else { 0.0 };
        let delay_ms: f64 = rng.random_range(earliest..2200.0);
        eprintln!(
            "GOODPUT_KILL_SEED={seed}: attempt {attempt}: SIGKILL {delay_ms:.1} ms after the spool appears"
        );
        let out = dir.path().join(format!("k{attempt}.json"));
        let spool_file = record_killed(&server.url(), &out, attempt, delay_ms);
        let spooled_file = spooled_rows(&spool_file);
        let ended = &spooled_file.ended;

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
        spooled_rows_unchanged(all, ended, cut);
        // Every other row: in flight with what the spool saw of it.
        let checked = unended_rows_kept(all, &spooled_file, cut);
        let with_first = all
            .iter()
            .filter(|r| r["status"] == "in_flight" && r.get("firstTokenMs").is_some())
            .count();
        eprintln!(
            "  {with_first} in flight with their first token; {checked} of them dispatched \
             {SURELY_FIRST_MS} ms or more before the last mark"
        );
        if attempt == 0 {
            assert!(
                checked > 0,
                "the kill after 1.2 s finds old requests in flight"
            );
        }
        let counts = &r["results"]["all"]["counts"];
        assert_eq!(counts["invalid"], 0);
        assert_eq!(
            f(&counts["arrivals"]),
            all.len() as f64,
            "every row is an arrival of the recovered trace"
        );
        // Every first token was within TTFT 1000 ms (sim: two steps), so
        // nothing in flight is known late unless it is late on E2E (10 s,
        // beyond this run): knownLate 0.
        assert_eq!(r["results"]["all"]["reasons"]["censored"]["knownLate"], 0);
    }
}

/// Runs `record` at 200 req/s for 2 s (0.3 s warm-up, 1 s grace) against
/// `url` into `out`, and kills it with SIGKILL `delay_ms` after its spool
/// appears; returns the spool.
fn record_killed(url: &str, out: &Path, attempt: usize, delay_ms: f64) -> std::path::PathBuf {
    let seed = attempt.to_string();
    let mut child = spawn_record(
        url,
        out,
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
            &seed,
        ],
    );
    let spool_file = spool::spool_path(out);
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
    spool_file
}

/// Every spooled ending of a killed run is its row of the recovered trace
/// (`all`, cut at `cut`), unchanged.
fn spooled_rows_unchanged(all: &[Value], ended: &[(usize, Value)], cut: f64) {
    for (index, e) in ended {
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
}

/// Checks the rows without an ending of a recovered trace (`all`, cut at
/// `cut`) against its spool: in flight, not sent only when nothing proves
/// they left, never "first token unknown"; a row with a `first` line keeps
/// that first token and send lag, one without has none, and every row
/// dispatched at least [`SURELY_FIRST_MS`] before the last mark (so it got
/// its first token before that mark) has one. Returns how many rows the
/// last check saw.
fn unended_rows_kept(all: &[Value], spooled: &Spooled, cut: f64) -> usize {
    let ended: std::collections::BTreeSet<usize> = spooled.ended.iter().map(|(i, _)| *i).collect();
    let (mark_ms, dispatched) = spooled.last_mark;
    let mut checked = 0;
    for (index, row) in all.iter().enumerate() {
        if ended.contains(&index) {
            continue;
        }
        assert_eq!(row["status"], "in_flight", "{row}");
        let unsent = row["labels"].get("notSent") == Some(&Value::Bool(true));
        let sent = index < dispatched || spooled.firsts.contains_key(&index);
        assert_eq!(unsent, !sent, "{row} dispatched {dispatched}");
        assert!(f(&row["arrivalMs"]) < cut, "{row} cut {cut}");
        assert!(row["labels"].get("firstTokenUnknown").is_none(), "{row}");
        let arrival = f(&row["arrivalMs"]);
        if let Some(line) = spooled.firsts.get(&index) {
            assert!(
                close(&row["firstTokenMs"], f(&line["atMs"])),
                "{row} {line}"
            );
            // The lag from the row's arrival (itself rounded to the µs).
            let lag = (f(&line["sentMs"]) - arrival).max(0.0);
            let kept = f(&row["labels"]["sendLagMs"]);
            assert!((kept - lag).abs() <= 0.001 + 1e-9, "{row} {line}");
            assert!(f(&row["firstTokenMs"]) <= cut + 0.0005, "{row} cut {cut}");
        } else {
            assert!(row.get("firstTokenMs").is_none(), "{row}");
        }
        if index < dispatched && arrival + SURELY_FIRST_MS <= mark_ms {
            checked += 1;
            assert!(
                row.get("firstTokenMs").is_some(),
                "{row}: its first token came before the mark at {mark_ms} ms"
            );
        }
    }
    checked
}

// ---------------------------------------------------------------- a failing disk

/// A spool's disk that takes `room` bytes, then fails every write as a full
/// disk does (ENOSPC).
struct FullAfter {
    room: usize,
}

impl std::io::Write for FullAfter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.room == 0 {
            return Err(std::io::Error::from_raw_os_error(libc::ENOSPC));
        }
        let n = buf.len().min(self.room);
        self.room -= n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The spool's write fails at its first flush (the 250 ms mark: 25 rows
/// at 100/s outgrow the 4 KiB after the header): the run stops sending
/// there, as at an interrupt, instead of loading the server to its 2 s
/// window's end, and the failure is reported.
#[test]
fn a_failing_spool_write_stops_the_run_at_once() {
    let server = fast_sim(4.0, 1.0);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let plan = plan_at(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "100",
            "--arrival",
            "constant",
            "--duration",
            "2s",
        ],
    );
    let header = spool::header(&plan);
    let header_bytes = serde_json::to_vec(&header).unwrap().len() + 1;
    let disk = FullAfter {
        room: header_bytes + 4096,
    };
    let spool_file = spool::spool_path(&out);
    let mut writer = SpoolWriter::with_writer(&spool_file, Box::new(disk), &header).unwrap();
    let recording = goodput_record::record(&plan, None, &mut writer).unwrap();
    let err = writer.finish().expect_err("the disk filled");
    assert!(err.to_string().contains("No space left on device"), "{err}");
    let stop = recording
        .outcome
        .interrupted_at_ms
        .expect("the failed write stopped the run");
    assert!(stop < 2000.0, "stopped at {stop} ms");
    assert_eq!(recording.signal, None, "no signal stopped it");
    let sent = server
        .stats
        .requests
        .load(std::sync::atomic::Ordering::Relaxed);
    assert!(sent < 200, "{sent} of 200 sent");
    assert_eq!(recording.outcome.rows, (stop / 10.0).ceil() as usize);
}

/// A run that finished but whose trace could not be written (the trace's
/// directory is gone) leaves a spool ending with the run's `end` line; its
/// recovery is the trace the run would have written, marked `recovered`
/// and `runEnded`, and not `interrupted` (the run was not).
#[test]
fn a_finished_run_whose_trace_write_failed_recovers_as_it_ended() {
    let server = fast_sim(4.0, 1.0);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let mut plan = plan_at(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "50",
            "--arrival",
            "constant",
            "--duration",
            "0.4s",
        ],
    );
    let spool_file = spool::spool_path(&out);
    let mut writer = SpoolWriter::create(&spool_file, &spool::header(&plan)).unwrap();
    let recording = goodput_record::record(&plan, None, &mut writer).unwrap();
    writer.finish().unwrap();
    let outcome = &recording.outcome;
    assert_eq!(outcome.interrupted_at_ms, None);
    let labels = goodput_core::trace::Labels::new();
    plan.out = dir.path().join("gone").join("t.json");
    let failed = spool::finish_run(
        &plan,
        outcome,
        &spool_file,
        &Stop::of(outcome),
        &spool::Ends::labels(&labels),
    );
    assert!(failed.is_err(), "the trace's directory is gone");
    assert!(spool_file.exists(), "the spool stays");

    // What the run would have written, and what its spool recovers.
    plan.out = dir.path().join("expected.json");
    spool::finish_run(
        &plan,
        outcome,
        &spool_file,
        &Stop::of(outcome),
        &spool::Ends::labels(&labels),
    )
    .unwrap();
    let recovered = dir.path().join("recovered.json");
    let r = goodput_record::output::recover::recover(&spool_file, &recovered).unwrap();
    assert!(r.run_ended);
    assert_eq!((r.built.written.rows, r.unended, r.not_sent), (20, 0, 0));
    receipt(&recovered);
    let read = |p: &Path| -> Value { serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap() };
    let mut expected = read(&plan.out);
    expected["workload"]["recovered"] = Value::Bool(true);
    expected["workload"]["runEnded"] = Value::Bool(true);
    // The transport's count of keep-alive resends is not in the spool.
    expected["workload"]
        .as_object_mut()
        .unwrap()
        .remove("keepAliveRetries");
    let got = read(&recovered);
    assert!(
        got["workload"].get("interrupted").is_none(),
        "{}",
        got["workload"]
    );
    assert_eq!(got, expected);
    let cli = Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args(["record", "--recover"])
        .arg(&spool_file)
        .arg("--out")
        .arg(dir.path().join("again.json"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&cli.stdout);
    assert!(cli.status.success(), "{cli:?}");
    assert!(
        said.contains("the run had ended (only its trace was not written): its window is kept"),
        "{said}"
    );
}
