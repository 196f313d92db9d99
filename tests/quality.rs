//! Quality beside the load (docs/quality.md): the trace's `quality` member,
//! the receipt's `quality` block, `goodput quality` with a baseline, `gate
//! --min-quality` from a sidecar or an imported lm-eval figure. Every file
//! is written by the test; every figure is computed by hand in a comment.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

mod common;

fn goodput(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args(args)
        .env_remove("GOODPUT_MAX_ROWS")
        .env_remove("GOODPUT_MAX_BYTES")
        .output()
        .expect("the binary runs")
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

fn json(o: &Output) -> Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("{e}: {}{}", out(o), err(o)))
}

fn sha256(bytes: &[u8]) -> String {
    goodput_core::trace::sha256_hex(bytes)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

const BANK_SHA: &str = "5e1f0000000000000000000000000000000000000000000000000000000000aa";

fn header(model: &str) -> String {
    format!(
        r#"{{"schema":"goodput-quality/1","bankSha256":"{BANK_SHA}","model":"{model}","phase":"interleaved","ratePerS":0.5,"sampling":{{"temperature":0,"seed":7}}}}"#
    )
}

fn answered(id: &str, answer: &str, verdict: &str) -> String {
    format!(
        r#"{{"id":{},"status":"completed","answer":{},"answerSha256":"{}","verdict":"{verdict}","arrivalMs":1000,"completedMs":1400}}"#,
        serde_json::to_string(id).unwrap(),
        serde_json::to_string(answer).unwrap(),
        sha256(answer.as_bytes())
    )
}

fn failed(id: &str) -> String {
    format!(
        r#"{{"id":"{id}","status":"failed","reason":"http 503","verdict":"failed","arrivalMs":1000}}"#
    )
}

fn sidecar_text(model: &str, lines: &[String]) -> String {
    format!("{}\n{}\n", header(model), lines.join("\n"))
}

/// A trace whose five rows all pass (goodput 5 / 10 s = 0.5 /s), naming
/// `quality` when given.
fn trace_text(quality: Option<(&str, &str)>) -> String {
    let member = quality.map_or_else(String::new, |(name, sha)| {
        format!(r#""quality": {{"sidecar": "{name}", "sha256": "{sha}"}},"#)
    });
    let rows: Vec<String> = (0..5)
        .map(|i| {
            let t = 100 * (i + 1);
            format!(
                r#"{{"id": "r{i}", "arrivalMs": {t}, "status": "completed", "firstTokenMs": {}, "completedMs": {}, "outputTokens": 11}}"#,
                t + 200,
                t + 500
            )
        })
        .collect();
    format!(
        r#"{{"schema": "goodput-trace/1", "window": {{"startMs": 0, "endMs": 10000}}, "equality": "inclusive",
  "classes": {{"chat": {{"ttftMs": 1000, "tpotMs": 50, "e2eMs": 6000}}}}, {member}
  "rows": [{}]}}"#,
        rows.join(",\n")
    )
}

/// Writes a trace and (when given) its sidecar into `dir`; the trace's path.
fn run_dir(dir: &Path, sidecar: Option<&str>) -> PathBuf {
    let name = "run.json.quality.jsonl";
    let quality = sidecar.map(|s| {
        std::fs::write(dir.join(name), s).unwrap();
        sha256(s.as_bytes())
    });
    let trace = dir.join("run.json");
    std::fs::write(
        &trace,
        trace_text(quality.as_deref().map(|sha| (name, sha))),
    )
    .unwrap();
    trace
}

/// 45 met, 3 missed, 1 failed, 1 without an expectation.
fn mixed_sidecar() -> String {
    let mut lines: Vec<String> = (0..45)
        .map(|i| answered(&format!("m{i}"), "4", "met"))
        .collect();
    lines.extend((0..3).map(|i| answered(&format!("x{i}"), "5", "missed")));
    lines.push(failed("f0"));
    lines.push(answered("b0", "free text", "baseline"));
    sidecar_text("m", &lines)
}

/// `met` met and 50 − `met` missed.
fn sidecar_of(met: usize) -> String {
    let lines: Vec<String> = (0..50)
        .map(|i| {
            if i < met {
                answered(&format!("q{i:02}"), "4", "met")
            } else {
                answered(&format!("q{i:02}"), "5", "missed")
            }
        })
        .collect();
    sidecar_text("m", &lines)
}

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn the_receipt_carries_the_sidecars_figures_and_stays_byte_identical_without_one() {
    let dir = tempfile::tempdir().unwrap();
    let trace = run_dir(dir.path(), Some(&mixed_sidecar()));
    let o = goodput(&["analyze", path(&trace), "--json"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let q = &json(&o)["quality"];
    // Judged alone: met 45, missed 3, failed 1 → 45 / 49 = 0.9183673; the
    // item without an expectation is counted apart.
    // Wilson 95 %: z² = 3.841459, denominator 1 + z²/49 = 1.0783971; centre
    // (0.9183673 + z²/98) / 1.0783971 = 0.8879530; half-width
    // z √(0.9183673 × 0.0816327 / 49 + z²/9604) / 1.0783971 = 0.0798442
    // → [0.8081087, 0.9677972].
    assert_eq!(
        (
            &q["items"],
            &q["met"],
            &q["missed"],
            &q["failed"],
            &q["baselineJudged"]
        ),
        (
            &Value::from(50),
            &Value::from(45),
            &Value::from(3),
            &Value::from(1),
            &Value::from(1)
        )
    );
    assert!(close(q["share"].as_f64().unwrap(), 45.0 / 49.0));
    assert!(
        close(q["interval"]["lower"].as_f64().unwrap(), 0.808_108_7),
        "{q}"
    );
    assert!(
        close(q["interval"]["upper"].as_f64().unwrap(), 0.967_797_2),
        "{q}"
    );
    assert_eq!(q["sidecar"], "run.json.quality.jsonl");
    assert_eq!(q["sidecarSha256"], sha256(mixed_sidecar().as_bytes()));
    // The receipt validates against the committed schema, and so does the report.
    common::assert_valid(
        &common::validator("receipt.schema.json"),
        &json(&o),
        "the receipt",
    );
    let report = json(&goodput(&[
        "quality",
        path(&dir.path().join("run.json.quality.jsonl")),
        "--json",
    ]));
    common::assert_valid(
        &common::validator("quality.schema.json"),
        &report,
        "the report",
    );
    let text = out(&goodput(&["analyze", path(&trace)]));
    assert!(
        text.contains("Quality: 45 of 49 bank answers met their expectation"),
        "{text}"
    );

    // The same trace without the member: no quality block, and the bytes
    // are those of a trace that never had one.
    let plain = dir.path().join("plain.json");
    std::fs::write(&plain, trace_text(None)).unwrap();
    let o = goodput(&["analyze", path(&plain), "--json"]);
    assert!(json(&o).get("quality").is_none());
    assert!(!out(&o).contains("\"quality\""));
}

#[test]
fn a_sidecar_that_is_not_the_traces_is_refused_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let trace = run_dir(dir.path(), Some(&mixed_sidecar()));
    // Changed after the run: one answer edited.
    let edited = mixed_sidecar().replacen("\"missed\"", "\"met\"", 1);
    std::fs::write(dir.path().join("run.json.quality.jsonl"), &edited).unwrap();
    for args in [
        vec!["analyze", path(&trace)],
        vec![
            "gate",
            path(&trace),
            "--min-goodput",
            "0",
            "--min-quality",
            "0.5",
        ],
    ] {
        let o = goodput(&args);
        assert_eq!(code(&o), 2, "{args:?}");
        let e = err(&o);
        assert!(
            e.contains(&format!(
                "rejected: quality sidecar {}: its sha256 {} is not the trace's quality.sha256 {}",
                dir.path().join("run.json.quality.jsonl").display(),
                sha256(edited.as_bytes()),
                sha256(mixed_sidecar().as_bytes())
            )),
            "{e}"
        );
    }
}

#[test]
fn the_gate_admits_at_the_minimum_and_refuses_below_it() {
    let dir = tempfile::tempdir().unwrap();
    // 49 / 50 = 0.98 exactly.
    let trace = run_dir(dir.path(), Some(&sidecar_of(49)));
    let admit = goodput(&[
        "gate",
        path(&trace),
        "--min-goodput",
        "0",
        "--min-quality",
        "0.98",
    ]);
    assert_eq!(code(&admit), 0, "{}{}", out(&admit), err(&admit));
    let text = out(&admit);
    // Wilson 95 % of 49 / 50: centre 0.9457532, half-width 0.0507076 → [0.8950456, 0.9964607].
    assert!(text.contains("quality share"), "{text}");
    assert!(
        text.contains("49 of 50 judged items good, 95 % interval 89.5 %–99.6 %"),
        "{text}"
    );
    let refuse = goodput(&[
        "gate",
        path(&trace),
        "--min-goodput",
        "0",
        "--min-quality",
        "0.99",
        "--json",
    ]);
    assert_eq!(code(&refuse), 1);
    let d = json(&refuse);
    let check = d["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "quality share")
        .unwrap();
    assert_eq!(
        (check["measured"].as_f64(), check["limit"].as_f64()),
        (Some(0.98), Some(0.99))
    );
    assert_eq!(
        (&check["comparison"], &check["pass"], &d["admit"]),
        (&Value::from(">="), &Value::from(false), &Value::from(false))
    );
    // Out of range is a usage error before any work.
    let o = goodput(&[
        "gate",
        path(&trace),
        "--min-goodput",
        "0",
        "--min-quality",
        "1.5",
    ]);
    assert_eq!(code(&o), 2);
    assert!(
        err(&o).contains("--min-quality: 1.5 is not allowed"),
        "{}",
        err(&o)
    );
}

#[test]
fn the_gate_refuses_a_trace_whose_sidecar_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let trace = run_dir(dir.path(), Some(&sidecar_of(50)));
    std::fs::remove_file(dir.path().join("run.json.quality.jsonl")).unwrap();
    let o = goodput(&[
        "gate",
        path(&trace),
        "--min-goodput",
        "0",
        "--min-quality",
        "0.9",
    ]);
    assert_eq!(code(&o), 1, "{}", err(&o));
    let text = out(&o);
    assert!(text.contains("quality share"), "{text}");
    assert!(text.contains("n/a"), "{text}");
    assert!(text.contains("which is not beside it"), "{text}");
    assert!(text.contains("REFUSE"), "{text}");
    // analyze still gives its receipt, without the block, and says why.
    let o = goodput(&["analyze", path(&trace), "--json"]);
    assert_eq!(code(&o), 0);
    assert!(json(&o).get("quality").is_none());
    assert!(
        err(&o).contains("the receipt has no quality block"),
        "{}",
        err(&o)
    );
    // A trace that names no sidecar refuses too, saying so.
    let plain = dir.path().join("plain.json");
    std::fs::write(&plain, trace_text(None)).unwrap();
    let o = goodput(&[
        "gate",
        path(&plain),
        "--min-goodput",
        "0",
        "--min-quality",
        "0.9",
    ]);
    assert_eq!(code(&o), 1);
    assert!(
        out(&o).contains("the trace names no quality sidecar"),
        "{}",
        out(&o)
    );
    // Without --min-quality the gate does not look for it (admits on latency).
    let o = goodput(&["gate", path(&trace), "--min-goodput", "0"]);
    assert_eq!(code(&o), 0, "{}", out(&o));
}

#[test]
fn three_of_fifty_changed_answers_are_listed_with_the_share_and_its_interval() {
    let dir = tempfile::tempdir().unwrap();
    let answers = |changed: &[usize]| {
        let lines: Vec<String> = (0..50)
            .map(|i| {
                let a = if changed.contains(&i) {
                    format!("reply {i}, changed")
                } else {
                    format!("reply {i}")
                };
                answered(&format!("q{i:02}"), &a, "baseline")
            })
            .collect();
        sidecar_text("m", &lines)
    };
    let base = dir.path().join("a.quality.jsonl");
    let run = dir.path().join("b.quality.jsonl");
    std::fs::write(&base, answers(&[])).unwrap();
    std::fs::write(&run, answers(&[3, 17, 40])).unwrap();
    let o = goodput(&["quality", path(&run), "--baseline", path(&base), "--json"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let r = json(&o);
    // 47 of 50 matched: 0.94, Wilson 95 % [0.8378291, 0.9793850] (the
    // arithmetic is in the core's judge tests).
    assert_eq!(r["counts"]["matched"], 47);
    assert_eq!(r["counts"]["changed"], 3);
    assert_eq!(r["share"], 0.94);
    assert!(close(r["interval"]["lower"].as_f64().unwrap(), 0.837_829_1));
    assert!(close(r["interval"]["upper"].as_f64().unwrap(), 0.979_385_0));
    let ids: Vec<&str> = r["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["q03", "q17", "q40"]);
    let text = out(&goodput(&[
        "quality",
        path(&run),
        "--baseline",
        path(&base),
    ]));
    assert!(
        text.contains("share    94.0 %   95 % interval 83.8 % – 97.9 %  (47 of 50 judged"),
        "{text}"
    );
    assert!(
        text.contains("changes  3: worse 0, better 0, answer changed 3"),
        "{text}"
    );
    assert!(
        text.contains(
            "  q17  answer changed (baseline → baseline)  \"reply 17\" → \"reply 17, changed\""
        ),
        "{text}"
    );
    // Without the baseline nothing is judged.
    let text = out(&goodput(&["quality", path(&run)]));
    assert!(text.contains("n/a (nothing judged)"), "{text}");
    assert!(
        text.contains("50 item(s) have no expectation: give --baseline SIDECAR"),
        "{text}"
    );
}

#[test]
fn a_hostile_answer_never_reaches_the_terminal_raw() {
    let dir = tempfile::tempdir().unwrap();
    let hostile = "\u{1b}]0;pwned\u{7}\u{1b}[2J ok \u{202e}gnp.exe";
    let base = dir.path().join("a.jsonl");
    let run = dir.path().join("b.jsonl");
    std::fs::write(
        &base,
        sidecar_text("m", &[answered("q\u{1b}[31m", "4", "met")]),
    )
    .unwrap();
    std::fs::write(
        &run,
        sidecar_text("m\\u009b", &[answered("q\u{1b}[31m", hostile, "missed")]),
    )
    .unwrap();
    let o = goodput(&["quality", path(&run), "--baseline", path(&base)]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let text = out(&o);
    for bad in ['\u{1b}', '\u{7}', '\u{202e}', '\u{9b}'] {
        assert!(!text.contains(bad), "{bad:?} in {text}");
    }
    assert!(
        text.contains(r"q\u{1b}[31m  worse (met → missed)"),
        "{text}"
    );
    assert!(
        text.contains(r#""\u{1b}]0;pwned\u{7}\u{1b}[2J ok \u{202e}gnp.exe""#),
        "{text}"
    );
}

#[test]
fn a_malformed_line_is_named_by_number_and_pointer_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = answered("q1", "4", "met").replace(&sha256(b"4"), &"0".repeat(64));
    let p = dir.path().join("s.jsonl");
    std::fs::write(&p, sidecar_text("m", &[answered("q0", "4", "met"), bad])).unwrap();
    let o = goodput(&["quality", path(&p)]);
    assert_eq!(code(&o), 2);
    assert_eq!(
        err(&o).trim_end(),
        format!(
            "rejected: quality sidecar line 3, /answerSha256: is not the sha256 of answer ({})",
            sha256(b"4")
        )
    );
    // A bank whose regex does not compile, named by line, via --bank.
    let bank = dir.path().join("bank.jsonl");
    std::fs::write(
        &bank,
        "{\"id\":\"q0\",\"prompt\":\"2+2?\",\"expect\":{\"exact\":\"4\"}}\n{\"id\":\"q1\",\"prompt\":\"x\",\"expect\":{\"regex\":\"[\"}}\n",
    )
    .unwrap();
    let good = dir.path().join("g.jsonl");
    std::fs::write(&good, sidecar_text("m", &[answered("q0", "4", "met")])).unwrap();
    let o = goodput(&["quality", path(&good), "--bank", path(&bank)]);
    assert_eq!(code(&o), 2);
    assert!(
        err(&o).starts_with("rejected: bank line 2, /expect/regex: is not a valid regex:"),
        "{}",
        err(&o)
    );
}

#[test]
fn a_bank_rejudges_the_recorded_verdicts() {
    let dir = tempfile::tempdir().unwrap();
    let bank_text = "{\"id\":\"q0\",\"prompt\":\"2+2?\",\"expect\":{\"anyOf\":[\"4\",\"four\"]}}\n\
                     {\"id\":\"q1\",\"messages\":[{\"role\":\"user\",\"content\":\"Capital of France?\"}],\"expect\":{\"contains\":\"paris\"},\"caseInsensitive\":true}\n";
    let bank = dir.path().join("bank.jsonl");
    std::fs::write(&bank, bank_text).unwrap();
    let head = header("m").replace(BANK_SHA, &sha256(bank_text.as_bytes()));
    let p = dir.path().join("s.jsonl");
    std::fs::write(
        &p,
        format!(
            "{head}\n{}\n{}\n",
            answered("q0", "four", "met"),
            answered("q1", "It is Paris.", "met")
        ),
    )
    .unwrap();
    let o = goodput(&["quality", path(&p), "--bank", path(&bank), "--json"]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    assert_eq!(json(&o)["rejudged"], true);
    assert_eq!(json(&o)["share"], 1.0);
    // Another bank's sidecar is refused.
    let other = dir.path().join("o.jsonl");
    std::fs::write(&other, sidecar_text("m", &[answered("q0", "4", "met")])).unwrap();
    let o = goodput(&["quality", path(&other), "--bank", path(&bank)]);
    assert_eq!(code(&o), 2);
    assert!(
        err(&o).contains("answers to another bank cannot be compared"),
        "{}",
        err(&o)
    );
}

/// Shaped like an lm-evaluation-harness 0.4 results file.
const LM_EVAL: &str = r#"{
  "results": {
    "arc_easy": {"alias": "arc_easy", "acc,none": 0.8, "acc_stderr,none": 0.01,
                 "acc_norm,none": 0.75, "acc_norm_stderr,none": 0.0125}
  },
  "groups": {},
  "configs": {"arc_easy": {"task": "arc_easy", "num_fewshot": 0}},
  "versions": {"arc_easy": 1.0},
  "n-shot": {"arc_easy": 0},
  "higher_is_better": {"arc_easy": {"acc": true, "acc_norm": true}},
  "n-samples": {"arc_easy": {"original": 2376, "effective": 2376}},
  "config": {"model": "local-completions", "model_args": "model=m,base_url=http://127.0.0.1:8000/v1/completions", "batch_size": 1},
  "model_name": "m",
  "git_hash": "abc1234"
}"#;

#[test]
fn an_imported_lm_eval_figure_gates_like_a_measured_one() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("results.json");
    std::fs::write(&results, LM_EVAL).unwrap();
    let figure = dir.path().join("q.json");
    let o = goodput(&[
        "quality",
        "import",
        "lm-eval",
        path(&results),
        "--metric",
        "acc",
        "--out",
        path(&figure),
    ]);
    assert_eq!(code(&o), 0, "{}", err(&o));
    let text = out(&o);
    // 0.8 ± 1.959964 × 0.01 → [0.7804, 0.8196].
    assert!(
        text.contains("task arc_easy metric acc,none: 80.0 %   95 % interval 78.0 % – 82.0 %"),
        "{text}"
    );
    assert!(
        text.contains(&format!("source sha256 {}", sha256(LM_EVAL.as_bytes()))),
        "{text}"
    );
    let q: Value = serde_json::from_slice(&std::fs::read(&figure).unwrap()).unwrap();
    assert_eq!(q["schema"], "goodput-quality-import/1");
    assert_eq!(q["samples"], 2376);
    let plain = dir.path().join("plain.json");
    std::fs::write(&plain, trace_text(None)).unwrap();
    let admit = goodput(&[
        "gate",
        path(&plain),
        "--min-goodput",
        "0",
        "--min-quality",
        "0.8",
        "--quality-import",
        path(&figure),
    ]);
    assert_eq!(code(&admit), 0, "{}", out(&admit));
    assert!(
        out(&admit).contains("imported from lm-evaluation-harness task arc_easy metric acc,none"),
        "{}",
        out(&admit)
    );
    let refuse = goodput(&[
        "gate",
        path(&plain),
        "--min-goodput",
        "0",
        "--min-quality",
        "0.81",
        "--quality-import",
        path(&figure),
    ]);
    assert_eq!(code(&refuse), 1);
    // Two metrics and no --metric: the choices are named.
    let o = goodput(&["quality", "import", "lm-eval", path(&results)]);
    assert_eq!(code(&o), 2);
    assert!(
        err(&o).contains("has 2 metrics: name one with --metric (acc,none, acc_norm,none)"),
        "{}",
        err(&o)
    );
}

#[test]
fn the_traces_quality_member_is_checked_like_the_rest_of_the_document() {
    let dir = tempfile::tempdir().unwrap();
    let sha = "a".repeat(64);
    for (quality, pointer) in [
        (
            format!(r#"{{"sidecar": "../x.jsonl", "sha256": "{sha}"}}"#),
            "/quality/sidecar",
        ),
        (
            r#"{"sidecar": "x.jsonl", "sha256": "ABC"}"#.to_owned(),
            "/quality/sha256",
        ),
        (
            format!(r#"{{"sidecar": "x.jsonl", "sha256": "{sha}", "bank": 1}}"#),
            "/quality/bank",
        ),
        (format!(r#"{{"sha256": "{sha}"}}"#), "/quality/sidecar"),
        ("[]".to_owned(), "/quality"),
    ] {
        let text = trace_text(None).replace(
            "\"rows\":",
            &format!("\"quality\": {quality},\n  \"rows\":"),
        );
        let p = dir.path().join("t.json");
        std::fs::write(&p, text).unwrap();
        let o = goodput(&["analyze", path(&p)]);
        assert_eq!(code(&o), 2, "{quality}");
        assert!(
            err(&o).starts_with(&format!("rejected: {pointer} ")),
            "{quality}: {}",
            err(&o)
        );
    }
}
