//! Shards of one schedule: N = 1, 2 and 4 local `goodput record --shard`
//! processes (N = 4 taking K from `JOB_COMPLETION_INDEX`, exactly as a
//! Kubernetes Indexed Job sets it) against a deterministic sim, merged by
//! `goodput merge`, give the arrivals and the verdicts of one process
//! recording the same schedule; a late shard records its lag instead of
//! shifting; `merge` refuses what is not the N shards of one recording,
//! naming the file.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use clap::Parser;
use common::recording::{f, rows};
use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::trace::Limits;
use goodput_sim::engine::EngineParams;
use goodput_sim::{SimConfig, SimServer};
use serde_json::{json, Value};

fn run_cli(argv: &[String]) -> (i32, String) {
    let cli = goodput::cli::Cli::try_parse_from(argv).expect("flags parse");
    let mut stdout = Vec::new();
    match goodput::cli::run(cli, &mut stdout) {
        Ok(code) => (code, String::from_utf8_lossy(&stdout).into_owned()),
        Err(e) => (e.exit_code(), e.message()),
    }
}

fn merge(shards: &[PathBuf], out: &Path) -> (i32, String) {
    let mut argv = vec!["goodput".to_owned(), "merge".into()];
    argv.extend(shards.iter().map(|p| p.display().to_string()));
    argv.extend(["--out".into(), out.display().to_string()]);
    run_cli(&argv)
}

/// The receipt with per-row verdicts.
fn receipt_with_rows(path: &Path) -> Value {
    let bytes = std::fs::read(path).unwrap();
    let analysis = analyze_bytes(
        &bytes,
        AnalyzeOptions {
            limits: Limits {
                max_rows: 1_000_000,
                max_bytes: 1 << 30,
            },
            rows: true,
            strict: true,
        },
    )
    .expect("the analyzer accepts the trace");
    serde_json::to_value(&analysis.receipt).unwrap()
}

fn read(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("written")).expect("JSON")
}

/// Classes that make every verdict depend only on the prompt: `tight`
/// gates TTFT at 0.001 ms (every completed request misses), `loose` at
/// 100 s (every one passes). Prompt `i` is line `i mod 5`: tight, loose,
/// loose, tight, loose.
fn prompts(dir: &Path) -> PathBuf {
    let path = dir.join("prompts.jsonl");
    let lines: Vec<String> = ["tight", "loose", "loose", "tight", "loose"]
        .iter()
        .enumerate()
        .map(|(i, c)| json!({"prompt": format!("prompt number {i}"), "class": c}).to_string())
        .collect();
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

#[test]
fn one_two_and_four_shards_merge_to_the_arrivals_and_verdicts_of_one_process() {
    // A deterministic sim: 8 tokens at 2 ms a step, no prefill, no faults.
    let server = SimServer::start(
        SimConfig {
            engine: EngineParams {
                max_batch: 512,
                prefill_ms_per_1k_tokens: 0.0,
                decode_step_ms: 2.0,
                decode_ms_per_seq: 0.0,
            },
            output_tokens: (8.0, 0.0),
            faults: vec![],
            seed: 1,
            model_name: "sim".into(),
            also_served: vec![],
            quirks: Default::default(),
            tokenizer: None,
        },
        1,
    )
    .expect("start sim");
    let dir = tempfile::tempdir().unwrap();
    let prompts = prompts(dir.path());
    // Every process counts the schedule from one instant, a few seconds
    // ahead (time for the binaries to start on a busy machine).
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 5;
    let common: Vec<String> = [
        "record",
        "--url",
        &server.url(),
        "--model",
        "sim",
        "--no-progress",
        "--request-rate",
        "40",
        "--arrival",
        "poisson",
        "--seed",
        "11",
        "--duration",
        "1s",
        "--grace",
        "2s",
        "--slo",
        "tight:ttft=0.001",
        "--slo",
        "loose:ttft=100000",
        "--prompts",
        &prompts.display().to_string(),
        "--start-at",
        &start.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    // (name, N, shard flag, JOB_COMPLETION_INDEX) for every process.
    let mut runs: Vec<(String, usize, Option<String>, Option<usize>)> =
        vec![("single".into(), 0, None, None)];
    runs.push(("n1-0".into(), 1, Some("0/1".into()), None));
    for k in 0..2 {
        runs.push((format!("n2-{k}"), 2, Some(format!("{k}/2")), None));
    }
    for k in 0..4 {
        runs.push((format!("n4-{k}"), 4, Some("auto/4".into()), Some(k)));
    }
    let children: Vec<_> = runs
        .iter()
        .map(|(name, _, shard, index)| {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_goodput"));
            cmd.args(&common)
                .arg("--out")
                .arg(dir.path().join(format!("{name}.json")))
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            if let Some(s) = shard {
                cmd.args(["--shard", s]);
            }
            cmd.env_remove("JOB_COMPLETION_INDEX");
            if let Some(k) = index {
                cmd.env("JOB_COMPLETION_INDEX", k.to_string());
            }
            cmd.spawn().expect("spawn goodput record")
        })
        .collect();
    for (child, (name, ..)) in children.into_iter().zip(&runs) {
        let out = child.wait_with_output().expect("the recorder ends");
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let single_path = dir.path().join("single.json");
    let single = read(&single_path);
    let single_arrivals: Vec<f64> = rows(&single).iter().map(|r| f(&r["arrivalMs"])).collect();
    let single_receipt = receipt_with_rows(&single_path);
    let verdicts = |r: &Value| -> Vec<String> {
        r["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["verdict"].as_str().unwrap().to_owned())
            .collect()
    };
    let n = single_arrivals.len();
    // Prompt i mod 5 in {0, 3} is tight: those rows miss, the rest pass.
    let tight = (0..n).filter(|i| i % 5 == 0 || i % 5 == 3).count();
    let counts = &single_receipt["results"]["all"]["counts"];
    assert_eq!(f(&counts["pass"]), (n - tight) as f64, "{counts}");
    assert_eq!(f(&counts["miss"]), tight as f64, "{counts}");

    for shards in [1usize, 2, 4] {
        let files: Vec<PathBuf> = (0..shards)
            .map(|k| dir.path().join(format!("n{shards}-{k}.json")))
            .collect();
        for (k, file) in files.iter().enumerate() {
            let shard = read(file);
            assert_eq!(shard["boundary"]["shard"], k, "{}", file.display());
            assert_eq!(f(&shard["workload"]["scheduleSize"]), n as f64);
            for (j, row) in rows(&shard).iter().enumerate() {
                assert_eq!(row["id"], format!("r{}-s{k}", j * shards + k));
            }
        }
        let merged_path = dir.path().join(format!("merged-{shards}.json"));
        let (code, text) = merge(&files, &merged_path);
        assert_eq!(code, 0, "{text}");
        assert!(
            text.contains(&format!("merged {shards} shards: {n} rows")),
            "{text}"
        );
        let merged = read(&merged_path);
        assert_eq!(merged["boundary"]["shards"], shards);
        for k in 0..shards {
            assert!(
                merged["boundary"][format!("shard{k}OffsetMs")].is_number(),
                "{}",
                merged["boundary"]
            );
        }
        assert_eq!(f(&merged["workload"]["scheduled"]), n as f64);
        let arrivals: Vec<f64> = rows(&merged).iter().map(|r| f(&r["arrivalMs"])).collect();
        assert_eq!(arrivals, single_arrivals, "N = {shards}: the same arrivals");
        let r = receipt_with_rows(&merged_path);
        assert_eq!(verdicts(&r), verdicts(&single_receipt), "N = {shards}");
        assert_eq!(
            r["results"]["all"]["counts"], single_receipt["results"]["all"]["counts"],
            "N = {shards}"
        );
    }

    // `report` takes a merged trace like any other.
    let (code, text) = run_cli(&[
        "goodput".into(),
        "report".into(),
        dir.path().join("merged-4.json").display().to_string(),
        "--out".into(),
        dir.path().join("report.html").display().to_string(),
    ]);
    assert_eq!(code, 0, "{text}");
}

#[test]
fn a_shard_started_after_the_start_instant_records_its_lag_and_keeps_the_schedule() {
    let server = SimServer::start(
        SimConfig {
            engine: EngineParams {
                max_batch: 64,
                prefill_ms_per_1k_tokens: 0.0,
                decode_step_ms: 1.0,
                decode_ms_per_seq: 0.0,
            },
            output_tokens: (4.0, 0.0),
            faults: vec![],
            seed: 1,
            model_name: "sim".into(),
            also_served: vec![],
            quirks: Default::default(),
            tokenizer: None,
        },
        1,
    )
    .expect("start sim");
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("late.json");
    // The start instant is 600 ms in the past when the process reads it.
    let start = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        - 0.6;
    let (code, text) = run_cli(
        &[
            "goodput",
            "record",
            "--url",
            &server.url(),
            "--model",
            "sim",
            "--no-progress",
            "--request-rate",
            "20",
            "--arrival",
            "constant",
            "--duration",
            "1s",
            "--grace",
            "1s",
            "--shard",
            "0/1",
            "--start-at",
            &format!("{start:.3}"),
            "--out",
            &out.display().to_string(),
        ]
        .map(String::from),
    );
    assert_eq!(code, 0, "{text}");
    let trace = read(&out);
    assert!(f(&trace["boundary"]["shardStartLateMs"]) >= 599.0);
    let all = rows(&trace);
    // Constant 20/s: arrivals stay at 0, 50, 100, … ms, not shifted.
    assert_eq!(all.len(), 20);
    for (i, row) in all.iter().enumerate() {
        assert_eq!(f(&row["arrivalMs"]), i as f64 * 50.0, "{row}");
    }
    // The overdue ones left at least (600 ms − their arrival) late.
    for row in all.iter().take(12) {
        let lag = f(&row["labels"]["sendLagMs"]);
        assert!(lag >= 599.0 - f(&row["arrivalMs"]), "{row}");
    }
}

// ---------------------------------------------------------------- merge refusals

/// A minimal shard trace: shard `k` of `n` of a `size`-request schedule
/// (request i at 10·i ms, which its `scheduleHash` declares), every row
/// completed.
fn shard_doc(k: usize, n: usize, size: usize) -> Value {
    let schedule: Vec<f64> = (0..size).map(|i| i as f64 * 10.0).collect();
    let rows: Vec<Value> = (k..size)
        .step_by(n)
        .map(|i| {
            json!({"id": format!("r{i}-s{k}"), "arrivalMs": i as f64 * 10.0,
                   "status": "completed", "firstTokenMs": i as f64 * 10.0 + 5.0,
                   "completedMs": i as f64 * 10.0 + 9.0, "outputTokens": 4,
                   "labels": {"promptHash": "abcdef012345", "promptChars": 10}})
        })
        .collect();
    json!({
        "schema": "goodput-trace/1",
        "window": {"startMs": 0, "endMs": 1000, "horizonMs": 2000},
        "equality": "inclusive",
        "classes": {"default": {"ttftMs": 100}},
        "defaultClass": "default",
        "tokens": "usage",
        "boundary": {"arrival": "scheduled", "clock": "monotonic", "tokens": "client",
                     "shard": k, "shards": n, "shardOffsetMs": 0.01 * k as f64,
                     "shardSkewPpm": 1.5, "shardStartLateMs": -900},
        "workload": {"seed": 7, "ratePerS": 100, "scheduleSize": size,
                     "scheduleHash": goodput_core::merge::schedule_hash(&schedule), "shards": n,
                     "startAtUnixMs": 1.7e12, "scheduled": rows.len()},
        "rows": rows,
    })
}

fn write(dir: &Path, name: &str, doc: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec(doc).unwrap()).unwrap();
    path
}

#[test]
fn merge_interleaves_hand_made_shards_and_declares_their_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..3)
        .rev()
        .map(|k| write(dir.path(), &format!("s{k}.json"), &shard_doc(k, 3, 10)))
        .collect();
    let out = dir.path().join("m.json");
    let (code, text) = merge(&files, &out);
    assert_eq!(code, 0, "{text}");
    let m = read(&out);
    let ids: Vec<&str> = rows(&m).iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "r0-s0", "r1-s1", "r2-s2", "r3-s0", "r4-s1", "r5-s2", "r6-s0", "r7-s1", "r8-s2",
            "r9-s0"
        ]
    );
    let b = &m["boundary"];
    assert_eq!(b["shards"], 3);
    assert!(b.get("shard").is_none() && b.get("shardOffsetMs").is_none());
    assert_eq!(b["shard2OffsetMs"], 0.02);
    assert_eq!(b["shard1SkewPpm"], 1.5);
    assert_eq!(b["shard0StartLateMs"], -900);
    assert_eq!(m["workload"]["scheduled"], 10);
    let counts = &receipt_with_rows(&out)["results"]["all"]["counts"];
    assert_eq!(counts["pass"], 10);
}

/// `shard_doc` with what a phased https run with headers, an extra body and
/// resources writes: the trace's phases and resources, the workload's tls,
/// headers and extraBody labels, each row's phase, and an errorText on a
/// failed row (request 5, whichever shard holds it).
fn rich_shard_doc(k: usize, n: usize, size: usize) -> Value {
    let mut doc = shard_doc(k, n, size);
    doc["phases"] = json!([
        {"name": "steady", "startMs": 0, "endMs": 500, "ratePerS": 10},
        {"name": "burst", "startMs": 500, "endMs": 1000, "ratePerS": 30}
    ]);
    doc["resources"] = json!({"gpus": 2, "gpuHourCost": 2.5});
    let w = &mut doc["workload"];
    w["tls"] = json!("system");
    w["headers"] = json!("x-team");
    w["extraBody"] = json!("{\"temperature\":0}");
    for row in doc["rows"].as_array_mut().unwrap() {
        let arrival = f(&row["arrivalMs"]);
        row["labels"]["phase"] = json!(if arrival < 500.0 { "steady" } else { "burst" });
        if row["id"].as_str().unwrap().starts_with("r5-") {
            row["status"] = json!("failed");
            row["reason"] = json!("http_503");
            row["endedMs"] = json!(arrival + 3.0);
            for key in ["firstTokenMs", "completedMs", "outputTokens"] {
                row.as_object_mut().unwrap().remove(key);
            }
            row["labels"]["errorText"] = json!("overloaded, try later");
        }
    }
    doc
}

#[test]
fn a_merged_trace_keeps_phases_resources_and_labels_and_frontier_and_report_take_it() {
    let dir = tempfile::tempdir().unwrap();
    // Two recordings of 10 and 20 requests over the same 1 s window, as 2
    // and 4 shards: offered 10/s and 20/s.
    let mut merged = Vec::new();
    for (size, n) in [(10usize, 2usize), (20, 4)] {
        let files: Vec<PathBuf> = (0..n)
            .map(|k| {
                write(
                    dir.path(),
                    &format!("rich-{size}-{k}.json"),
                    &rich_shard_doc(k, n, size),
                )
            })
            .collect();
        let out = dir.path().join(format!("merged-{size}.json"));
        let (code, text) = merge(&files, &out);
        assert_eq!(code, 0, "{text}");
        let m = read(&out);
        let one = rich_shard_doc(0, n, size);
        assert_eq!(m["phases"], one["phases"]);
        assert_eq!(m["resources"], one["resources"]);
        for key in ["tls", "headers", "extraBody"] {
            assert_eq!(m["workload"][key], one["workload"][key], "{key}");
        }
        let all = rows(&m);
        assert_eq!(all.len(), size);
        assert_eq!(all[5]["labels"]["errorText"], "overloaded, try later");
        assert_eq!(all[5]["reason"], "http_503");
        for row in all {
            let phase = if f(&row["arrivalMs"]) < 500.0 {
                "steady"
            } else {
                "burst"
            };
            assert_eq!(row["labels"]["phase"], phase, "{row}");
        }
        // Every row passes its 100 ms TTFT gate (5 ms) but row 5, failed.
        let counts = &receipt_with_rows(&out)["results"]["all"]["counts"];
        assert_eq!(f(&counts["pass"]), (size - 1) as f64, "{counts}");
        assert_eq!(counts["failed"], 1, "{counts}");
        merged.push(out);
    }

    // frontier: a point per merged trace; cohort / window s = 10 and 20
    // (arrivals 0, 10, … ms all fall in the 1 s window).
    let mut argv = vec!["goodput".to_owned(), "frontier".into(), "--json".into()];
    argv.extend(merged.iter().map(|p| p.display().to_string()));
    let (code, text) = run_cli(&argv);
    assert_eq!(code, 0, "{text}");
    let fr: Value = serde_json::from_str(&text).expect("frontier JSON");
    let offered: Vec<f64> = fr["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| f(&p["offeredPerS"]))
        .collect();
    assert_eq!(offered, [10.0, 20.0]);
    let goodput: Vec<f64> = fr["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| f(&p["goodputPerS"]))
        .collect();
    assert_eq!(goodput, [9.0, 19.0]);

    // report: one page, the phases' section included.
    let html = dir.path().join("merged.html");
    let (code, text) = run_cli(&[
        "goodput".into(),
        "report".into(),
        merged[1].display().to_string(),
        "--out".into(),
        html.display().to_string(),
    ]);
    assert_eq!(code, 0, "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("burst"), "the report shows the phases");
}

#[test]
fn merge_refuses_what_is_not_the_n_shards_of_one_recording_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let good: Vec<Value> = (0..2).map(|k| shard_doc(k, 2, 9)).collect();
    let out = dir.path().join("m.json");
    type Tamper = Box<dyn Fn(&mut Vec<Value>)>;
    let cases: Vec<(&str, Tamper, &str)> = vec![
        (
            "another seed",
            Box::new(|s| s[1]["workload"]["seed"] = json!(8)),
            "b.json: workload.seed differs from a.json's (8 here, 7 there)",
        ),
        (
            "another schedule",
            Box::new(|s| s[1]["workload"]["scheduleHash"] = json!("ffffffffffff")),
            "b.json: workload.scheduleHash differs",
        ),
        (
            "other gates",
            Box::new(|s| s[1]["classes"]["default"]["ttftMs"] = json!(200)),
            "b.json: classes differs",
        ),
        (
            "another window",
            Box::new(|s| s[1]["window"]["endMs"] = json!(900)),
            "b.json: window differs",
        ),
        (
            "another N",
            Box::new(|s| {
                s[1] = shard_doc(1, 3, 9);
            }),
            "b.json: boundary.shards differs",
        ),
        (
            "a repeated shard",
            Box::new(|s| s[1] = s[0].clone()),
            "b.json: shard 0 is also a.json",
        ),
        (
            "overlapping ids",
            Box::new(|s| s[1]["rows"][2]["id"] = json!("r4-s0")),
            "b.json: row 2 is `r4-s0` where shard 1 of 2 must hold `r5-s1`",
        ),
        (
            "a shard that lost a row",
            Box::new(|s| {
                s[1]["rows"].as_array_mut().unwrap().pop();
            }),
            "b.json: shard 1 of 2 holds 3 rows, its share of a 9-request schedule is 4",
        ),
        (
            "an interrupted shard",
            Box::new(|s| {
                s[1]["workload"]["interrupted"] = json!(true);
                s[1]["workload"]["interruptedAtMs"] = json!(512.5);
            }),
            "b.json: shard 1 was interrupted (its window was cut at 512.5 ms)",
        ),
        (
            "other phases",
            Box::new(|s| {
                s[1]["phases"] =
                    json!([{"name": "all", "startMs": 0, "endMs": 1000, "ratePerS": 10}]);
            }),
            "b.json: phases differs",
        ),
        (
            "other resources",
            Box::new(|s| s[1]["resources"] = json!({"gpus": 8})),
            "b.json: resources differs",
        ),
        (
            "a member the merge does not know",
            Box::new(|s| s[1]["futureMember"] = json!(1)),
            "b.json: not a goodput trace",
        ),
        (
            "a trace that is not a shard",
            Box::new(|s| {
                s[1]["boundary"].as_object_mut().unwrap().remove("shard");
            }),
            "b.json: not a shard (no boundary.shard)",
        ),
        (
            "not a trace",
            Box::new(|s| s[1]["rows"][0]["status"] = json!("done")),
            "b.json: not a goodput trace: at /rows/0/status",
        ),
        (
            "an edited arrival",
            // Request 3 (row 1 of shard 1) moved from 30 to 31 ms.
            Box::new(|s| s[1]["rows"][1]["arrivalMs"] = json!(31)),
            "the arrivals of a.json, b.json do not hash to their workload.scheduleHash",
        ),
        (
            "two arrivals swapped between shards",
            Box::new(|s| {
                s[0]["rows"][0]["arrivalMs"] = json!(10);
                s[1]["rows"][0]["arrivalMs"] = json!(0);
            }),
            "a shard's arrivalMs was edited or is not of this schedule",
        ),
        (
            "no schedule hash",
            Box::new(|s| {
                for d in s.iter_mut() {
                    d["workload"]
                        .as_object_mut()
                        .unwrap()
                        .remove("scheduleHash");
                }
            }),
            "a.json: not a shard (no workload.scheduleHash)",
        ),
    ];
    for (what, tamper, expected) in cases {
        let mut docs = good.clone();
        tamper(&mut docs);
        let files = vec![
            write(dir.path(), "a.json", &docs[0]),
            write(dir.path(), "b.json", &docs[1]),
        ];
        let (code, text) = merge(&files, &out);
        let text = text.replace(&format!("{}/", dir.path().display()), "");
        assert_eq!(code, 2, "{what}: {text}");
        assert!(text.contains(expected), "{what}: {text}");
        assert!(!out.exists(), "{what}: nothing is written");
    }
    let only = vec![write(dir.path(), "a.json", &good[0])];
    let (code, text) = merge(&only, &out);
    assert_eq!(code, 2);
    assert!(text.contains("shard 1 of 2 is missing (given: "), "{text}");
}

#[test]
fn a_shard_with_a_byte_order_mark_is_named_so() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let mut bytes = vec![0xEF, 0xBB, 0xBF];
    bytes.extend(serde_json::to_vec(&shard_doc(0, 2, 4)).unwrap());
    std::fs::write(&a, bytes).unwrap();
    let b = write(dir.path(), "b.json", &shard_doc(1, 2, 4));
    let out = dir.path().join("m.json");
    let (code, text) = merge(&[a, b], &out);
    assert_eq!(code, 2, "{text}");
    assert!(
        text.contains(
            "a.json: not a goodput trace: the input starts with a UTF-8 byte-order mark \
             (EF BB BF); goodput reads JSON without one: remove it"
        ),
        "{text}"
    );
}

/// The plan `goodput record` makes of `flags` (nothing is sent).
fn plan_of(flags: &[&str], out: &Path) -> goodput_record::Plan {
    let mut argv: Vec<String> = [
        "goodput",
        "record",
        "--url",
        "http://127.0.0.1:9",
        "--model",
        "sim",
        "--out",
    ]
    .map(String::from)
    .to_vec();
    argv.push(out.display().to_string());
    argv.extend(flags.iter().map(|s| s.to_string()));
    let cli = goodput::cli::Cli::try_parse_from(&argv).expect("flags parse");
    let goodput::cli::Command::Record(args) = cli.command else {
        panic!("not record")
    };
    goodput::cli::record::plan::plan(&args).expect("a valid plan")
}

fn arrivals(plan: &goodput_record::Plan) -> Vec<f64> {
    match &plan.run.load {
        goodput_record::run::Load::Open { arrivals_ms } => arrivals_ms.as_ref().clone(),
        other => panic!("open loop, not {other:?}"),
    }
}

#[test]
fn the_shards_of_a_phased_schedule_hold_its_requests_i_mod_n() {
    let dir = tempfile::tempdir().unwrap();
    let phased = [
        "--phases",
        "steady:50/s:1s,burst:200/s:0.5s,recover:50/s:1s",
        "--seed",
        "9",
    ];
    let whole = plan_of(&phased, &dir.path().join("whole.json"));
    let all = arrivals(&whole);
    assert!(all.len() > 150, "{}", all.len());
    let n = 3;
    let mut merged = vec![f64::NAN; all.len()];
    let mut hashes = std::collections::BTreeSet::new();
    for k in 0..n {
        let mut flags = phased.to_vec();
        let shard = format!("{k}/{n}");
        flags.extend(["--shard", &shard, "--start-at", "2030-01-01T00:00:00Z"]);
        let p = plan_of(&flags, &dir.path().join(format!("s{k}.json")));
        assert_eq!(p.phases, whole.phases, "shard {k} declares the same phases");
        assert_eq!(
            p.workload.get("scheduleSize"),
            Some(&goodput_core::trace::Scalar::Number(all.len() as f64))
        );
        hashes.insert(format!("{:?}", p.workload.get("scheduleHash")));
        for (j, a) in arrivals(&p).into_iter().enumerate() {
            merged[j * n + k] = a;
        }
    }
    assert_eq!(hashes.len(), 1, "one schedule hash for every shard");
    assert_eq!(
        hashes.first().unwrap(),
        &format!(
            "{:?}",
            Some(goodput_core::trace::Scalar::String(
                goodput_core::merge::schedule_hash(&all)
            ))
        ),
        "the hash merge recomputes from the merged arrivals"
    );
    assert_eq!(
        merged, all,
        "the shards' requests interleave into the schedule"
    );
}

/// A 40-entry mooncake file: entry i at 1000 + 25·i ms, one or two blocks.
fn mooncake(dir: &Path) -> PathBuf {
    let mut text = String::new();
    for i in 0..40 {
        let (input, ids) = if i % 2 == 0 {
            (300, format!("{}", i % 3))
        } else {
            (700, format!("{}, {}", i % 3, 50 + i))
        };
        text.push_str(&format!(
            "{{\"timestamp\": {}, \"input_length\": {input}, \"output_length\": {}, \"hash_ids\": [{ids}]}}\n",
            1000 + 25 * i,
            4 + i % 5,
        ));
    }
    let p = dir.join("replay.jsonl");
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_sharded_replay_sends_request_i_with_its_own_instant_and_prompt_on_shard_i_mod_n() {
    let dir = tempfile::tempdir().unwrap();
    let file = mooncake(dir.path());
    let file = file.to_str().unwrap();
    let replay = ["--replay", "mooncake", file, "--warmup", "0s"];
    let whole = plan_of(&replay, &dir.path().join("whole.json"));
    let all = arrivals(&whole);
    // Entry i at (1000 + 25·i) − 1000 ms after the window start (0 here).
    let expected: Vec<f64> = (0..40).map(|i| 25.0 * i as f64).collect();
    assert_eq!(all, expected);
    let n = 3;
    for k in 0..n {
        let mut flags = replay.to_vec();
        let shard = format!("{k}/{n}");
        flags.extend(["--shard", &shard, "--start-at", "2030-01-01T00:00:00Z"]);
        let p = plan_of(&flags, &dir.path().join(format!("s{k}.json")));
        let mine = arrivals(&p);
        // Shard k holds entries k, k+3, k+6, … of the 40.
        assert_eq!(mine.len(), (40usize - k).div_ceil(n), "shard {k}");
        for (j, a) in mine.iter().enumerate() {
            let i = j * n + k;
            assert_eq!(*a, expected[i], "shard {k} request {j} is entry {i}");
            let (mine, theirs) = (p.run.prompts.prompt(j), whole.run.prompts.prompt(i));
            assert_eq!(mine.text, theirs.text, "entry {i}'s prompt");
            assert_eq!(
                p.run.prompts.extras(j).max_tokens,
                Some(4 + (i % 5) as u32),
                "entry {i}'s output_length is its max_tokens"
            );
        }
        assert_eq!(
            p.workload.get("scheduleSize"),
            Some(&goodput_core::trace::Scalar::Number(40.0))
        );
    }
}

#[test]
fn sessions_cannot_be_sharded_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let sessions = dir.path().join("sessions.jsonl");
    std::fs::write(
        &sessions,
        "{\"session_id\": \"a\", \"turns\": [{\"text\": \"hi\"}, {\"text\": \"more\", \"delay\": 100}]}\n",
    )
    .unwrap();
    let argv: Vec<String> = [
        "goodput",
        "record",
        "--url",
        "http://127.0.0.1:9",
        "--model",
        "sim",
        "--request-rate",
        "2",
        "--duration",
        "2s",
        "--dataset",
        "multi-turn",
        sessions.to_str().unwrap(),
        "--shard",
        "0/2",
        "--start-at",
        "2030-01-01T00:00:00Z",
        "--out",
        dir.path().join("t.json").to_str().unwrap(),
    ]
    .map(String::from)
    .to_vec();
    let (code, text) = run_cli(&argv);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("multi-turn sessions"), "{text}");
    assert!(!dir.path().join("t.json").exists());
}
