//! The reviewer commands end to end: every exit status, and snapshots of what
//! a reviewer reads.

use std::path::PathBuf;
use std::process::{Command, Output};

use goodput::cli::exit::{EXIT_ERROR, EXIT_NO, EXIT_OK};
use goodput::cli::{mutate_with, LimitArgs, MutateArgs};
use goodput_core::receipt::Receipt;
use goodput_core::review::mutate::{Analyzer, Calculator};
use goodput_core::trace::{Limits, Rejection};
use serde_json::Value;

const MIXED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/reviewer/mixed.json");
const CLOSED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/reviewer/closed-loop.json"
);
const TWO: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/reviewer/two-classes.json"
);

fn goodput(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_goodput"))
        .env_remove("GOODPUT_MAX_ROWS")
        .env_remove("GOODPUT_MAX_BYTES")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn code(o: &Output) -> i32 {
    o.status.code().expect("exited")
}

/// A scratch directory removed at the end of the test.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("goodput-reviewer-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn file(&self, name: &str, bytes: &[u8]) -> String {
        let p = self.0.join(name);
        std::fs::write(&p, bytes).expect("write");
        p.display().to_string()
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// -------------------------------------------------------------------- sweep

#[test]
fn sweep_prints_the_declared_line_first() {
    let o = goodput(&["sweep", MIXED]);
    assert_eq!(code(&o), EXIT_OK, "{}", stderr(&o));
    insta::assert_snapshot!("sweep_mixed_text", stdout(&o));
}

#[test]
fn sweep_json_is_an_array_with_the_declared_entry_first() {
    let o = goodput(&[
        "sweep",
        TWO,
        "--class",
        "batch",
        "--factors",
        "0.5,1.1",
        "--json",
    ]);
    assert_eq!(code(&o), EXIT_OK, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    let entries = v.as_array().expect("an array");
    // 1 declared + 3 gates × 2 factors.
    assert_eq!(entries.len(), 7);
    assert_eq!(entries[0]["hypothetical"], false);
    assert!(entries[1..].iter().all(|e| e["hypothetical"] == true));
    for key in [
        "factors",
        "classes",
        "pass",
        "goodputPerS",
        "passShare",
        "deltaPass",
        "deltaGoodputPerS",
    ] {
        assert!(entries.iter().all(|e| e.get(key).is_some()), "{key}");
    }
    insta::assert_snapshot!("sweep_two_classes_batch_json", stdout(&o));
}

#[test]
fn sweep_out_writes_the_same_array() {
    let dir = Scratch::new("sweep-out");
    let out = dir.path("sweep.json");
    let o = goodput(&[
        "sweep",
        MIXED,
        "--grid",
        "--factors",
        "0.5,2",
        "--json",
        "--out",
        out.to_str().expect("utf-8"),
    ]);
    assert_eq!(code(&o), EXIT_OK, "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).expect("written"), o.stdout);
    // 2³ = 8 alternatives + declared.
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v.as_array().map(Vec::len), Some(9));
}

#[test]
fn sweep_refuses_bad_input_with_status_2() {
    for (args, needle) in [
        (
            vec!["sweep", MIXED, "--factors", "0.5,0"],
            "--factors: 0 is not a positive finite number",
        ),
        (
            vec!["sweep", TWO, "--class", "nope"],
            "--class: \"nope\" is not a class",
        ),
        (
            vec!["sweep", "/nonexistent/trace.json"],
            "cannot read /nonexistent/trace.json",
        ),
        (vec!["sweep", MIXED, "--max-rows", "3"], "rejected: /rows"),
    ] {
        let o = goodput(&args);
        assert_eq!(code(&o), EXIT_ERROR, "{args:?}");
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn analyze_sweep_embeds_the_same_array_and_still_verifies() {
    let dir = Scratch::new("analyze-sweep");
    let o = goodput(&["analyze", MIXED, "--json", "--sweep"]);
    assert_eq!(code(&o), EXIT_OK, "{}", stderr(&o));
    let receipt: Value = serde_json::from_slice(&o.stdout).expect("json");
    let alone: Value =
        serde_json::from_slice(&goodput(&["sweep", MIXED, "--json"]).stdout).expect("json");
    assert_eq!(receipt["sweep"], alone);
    // The primary result is untouched by the sweep.
    let plain: Value =
        serde_json::from_slice(&goodput(&["analyze", MIXED, "--json"]).stdout).expect("json");
    assert_eq!(receipt["results"], plain["results"]);
    assert!(plain.get("sweep").is_none());
    let r = dir.file("receipt.json", &o.stdout);
    let v = goodput(&["verify", &r, MIXED]);
    assert_eq!(code(&v), EXIT_OK, "{}", stdout(&v));
}

// ------------------------------------------------------------------- mutate

#[test]
fn mutate_passes_on_the_real_analyzer() {
    let o = goodput(&["mutate", MIXED]);
    assert_eq!(code(&o), EXIT_OK, "{}", stdout(&o));
    insta::assert_snapshot!("mutate_mixed_text", stdout(&o));
    let j = goodput(&["mutate", MIXED, "--json"]);
    assert_eq!(code(&j), EXIT_OK);
    let v: Value = serde_json::from_slice(&j.stdout).expect("json");
    assert_eq!(v["caught"], 7);
    assert_eq!(v["mutations"][0]["status"], "caught");
}

/// A calculator that leaves failed rows out of the denominator.
struct FailuresOutOfDenominator;

impl Calculator for FailuresOutOfDenominator {
    fn receipt(&self, bytes: &[u8]) -> Result<Receipt, Rejection> {
        let mut r = Analyzer::for_mutations_of(Limits::default()).receipt(bytes)?;
        let c = &mut r.results.all.counts;
        c.cohort -= c.failed;
        r.results.all.rates.pass_share = Some(c.pass as f64 / c.cohort as f64);
        Ok(r)
    }
}

#[test]
fn mutate_exits_1_when_a_mutation_is_not_caught() {
    let args = MutateArgs {
        trace: MIXED.to_owned(),
        json: false,
        limits: LimitArgs {
            max_rows: Some(Limits::DEFAULT_MAX_ROWS),
            max_bytes: Some(Limits::DEFAULT_MAX_BYTES),
        },
    };
    let mut out = Vec::new();
    let status = mutate_with(args, &FailuresOutOfDenominator, &mut out).expect("runs");
    assert_eq!(status, EXIT_NO);
    let text = String::from_utf8(out).expect("utf-8");
    assert!(text.contains("drop_failed     NOT CAUGHT"), "{text}");
    assert!(
        text.contains("FAIL: the receipt did not move as predicted"),
        "{text}"
    );
}

#[test]
fn mutate_refuses_a_rejected_trace_with_status_2() {
    let dir = Scratch::new("mutate-bad");
    let bad = dir.file("bad.json", b"{\"schema\": \"goodput-trace/1\"}");
    let o = goodput(&["mutate", &bad]);
    assert_eq!(code(&o), EXIT_ERROR);
    assert!(stderr(&o).starts_with("rejected: "), "{}", stderr(&o));
}

// ------------------------------------------------------------------- verify

#[test]
fn verify_exit_statuses() {
    let dir = Scratch::new("verify");
    let receipt = goodput(&["analyze", MIXED, "--json", "--rows"]).stdout;
    let good = dir.file("receipt.json", &receipt);

    // 0: agreement.
    let o = goodput(&["verify", &good, MIXED]);
    assert_eq!(code(&o), EXIT_OK, "{}", stdout(&o));
    assert!(stdout(&o).contains("VERIFIED"));

    // 1: a tampered number, reported by path with both values.
    let mut v: Value = serde_json::from_slice(&receipt).expect("json");
    v["results"]["all"]["rates"]["goodputPerS"] = serde_json::json!(0.6);
    v["generator"]["version"] = serde_json::json!("0.0.1");
    let tampered = dir.file(
        "tampered.json",
        &serde_json::to_vec_pretty(&v).expect("json"),
    );
    let o = goodput(&["verify", &tampered, MIXED]);
    assert_eq!(code(&o), EXIT_NO);
    insta::assert_snapshot!("verify_tampered_text", stdout(&o));

    // 1: another trace.
    let o = goodput(&["verify", &good, TWO]);
    assert_eq!(code(&o), EXIT_NO);
    assert!(stdout(&o).contains("DIFFERENT: the receipt was made from different bytes"));

    // 2: unreadable inputs.
    let not_json = dir.file("not.json", b"{");
    let mut other_major = v.clone();
    other_major["schema"] = serde_json::json!("goodput-receipt/2");
    let major = dir.file(
        "major.json",
        &serde_json::to_vec(&other_major).expect("json"),
    );
    for (args, needle) in [
        (
            vec!["verify", &not_json, MIXED],
            "the receipt is not valid JSON",
        ),
        (vec!["verify", &major, MIXED], "same major version only"),
        (
            vec!["verify", &good, "/nonexistent/trace.json"],
            "cannot read",
        ),
        (vec!["verify", MIXED, &good], "wrong order"),
    ] {
        let o = goodput(&args);
        assert_eq!(code(&o), EXIT_ERROR, "{args:?}: {}", stdout(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn verify_json_lists_every_difference() {
    let dir = Scratch::new("verify-json");
    let receipt = dir.file("r.json", &goodput(&["analyze", MIXED, "--json"]).stdout);
    let o = goodput(&["verify", &receipt, TWO, "--json"]);
    assert_eq!(code(&o), EXIT_NO);
    let v: Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["sha256Matches"], false);
    assert_eq!(v["differences"][0]["path"], "/trace/sha256");
}

// --------------------------------------------------------------------- gate

#[test]
fn gate_admits_with_status_0() {
    let o = goodput(&[
        "gate",
        MIXED,
        "--min-goodput",
        "0.4",
        "--margin",
        "0.2",
        "--max-failure-share",
        "0.25",
        "--max-censored-share",
        "0.1",
        "--max-p95-ttft-ms",
        "1200",
    ]);
    assert_eq!(code(&o), EXIT_OK, "{}", stdout(&o));
    insta::assert_snapshot!("gate_admit_text", stdout(&o));
}

#[test]
fn gate_refuses_with_status_1_and_names_each_failing_criterion() {
    // Default ceilings (0.05): failure share 0.2 and censored share 0.1 both fail;
    // p95 E2E 3100 > 3000 fails; goodput 0.5 > 0.3 passes.
    let o = goodput(&[
        "gate",
        MIXED,
        "--min-goodput",
        "0.3",
        "--max-p95-e2e-ms",
        "3000",
    ]);
    assert_eq!(code(&o), EXIT_NO, "{}", stdout(&o));
    insta::assert_snapshot!("gate_refuse_text", stdout(&o));
    let j = goodput(&["gate", MIXED, "--min-goodput", "0.3", "--json"]);
    assert_eq!(code(&j), EXIT_NO);
    let v: Value = serde_json::from_slice(&j.stdout).expect("json");
    assert_eq!(v["admit"], false);
}

/// 18 completed rows in a 10 s window, each well inside its gates: goodput 1.8/s.
fn eighteen_passes_in_ten_seconds() -> String {
    let rows: Vec<String> = (0..18)
        .map(|i| {
            let a = i * 500;
            format!(
                r#"{{"id":"r{i}","arrivalMs":{a},"status":"completed","firstTokenMs":{},"completedMs":{},"outputTokens":2}}"#,
                a + 10,
                a + 20
            )
        })
        .collect();
    format!(
        r#"{{"schema":"goodput-trace/1","window":{{"startMs":0,"endMs":10000}},"equality":"inclusive","classes":{{"c":{{"ttftMs":100,"tpotMs":null,"e2eMs":null}}}},"rows":[{}]}}"#,
        rows.join(",")
    )
}

#[test]
fn gate_refuses_a_goodput_exactly_equal_to_the_requirement_with_its_margin() {
    // 18 / 10 s = 1.8/s; 1.5 × (1 + 0.2) = 1.8 exactly (1.7999999999999998 in
    // binary floating point): equal is not "more than", so both forms refuse,
    // and 1.79 × 1 (below) admits.
    let dir = Scratch::new("gate-equal");
    let trace = dir.file("eighteen.json", eighteen_passes_in_ten_seconds().as_bytes());
    for args in [
        ["--min-goodput", "1.5", "--margin", "0.2"],
        ["--min-goodput", "1.8", "--margin", "0"],
    ] {
        let mut all = vec!["gate", trace.as_str()];
        all.extend(args);
        let o = goodput(&all);
        assert_eq!(code(&o), EXIT_NO, "{args:?}: {}", stdout(&o));
        assert!(
            stdout(&o)
                .lines()
                .any(|l| l.starts_with("goodput/s") && l.ends_with("FAIL")),
            "{}",
            stdout(&o)
        );
    }
    let o = goodput(&["gate", trace.as_str(), "--min-goodput", "1.79"]);
    assert_eq!(code(&o), EXIT_OK, "{}", stdout(&o));
}

#[test]
fn gate_refuses_bad_input_with_status_2() {
    let dir = Scratch::new("gate-bad");
    let bad = dir.file("bad.json", b"[]");
    for (args, needle) in [
        (
            vec!["gate", MIXED, "--min-goodput", "0.1", "--margin=-1"],
            "--margin: -1 is not allowed",
        ),
        (
            vec![
                "gate",
                MIXED,
                "--min-goodput",
                "0.1",
                "--max-failure-share",
                "2",
            ],
            "--max-failure-share",
        ),
        (
            vec!["gate", TWO, "--min-goodput", "0.1", "--class", "nope"],
            "--class: \"nope\"",
        ),
        (vec!["gate", &bad, "--min-goodput", "0.1"], "rejected: "),
        (vec!["gate", MIXED], "--min-goodput"),
    ] {
        let o = goodput(&args);
        assert_eq!(code(&o), EXIT_ERROR, "{args:?}: {}", stdout(&o));
        assert!(stderr(&o).contains(needle), "{args:?}: {}", stderr(&o));
    }
}

#[test]
fn every_reviewer_command_documents_its_exit_statuses() {
    for cmd in ["sweep", "mutate", "verify", "gate"] {
        let o = goodput(&[cmd, "--help"]);
        assert_eq!(code(&o), EXIT_OK);
        let help = stdout(&o);
        assert!(help.contains("Exit status:"), "{cmd}");
        assert!(help.contains("  2  "), "{cmd}");
    }
}

#[test]
fn a_receipt_with_a_sweep_matches_the_receipt_schema() {
    let schema: Value =
        serde_json::from_str(&goodput_core::schema::receipt_schema_json()).expect("schema json");
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    for args in [
        vec!["analyze", MIXED, "--json", "--sweep"],
        vec![
            "analyze",
            MIXED,
            "--json",
            "--rows",
            "--sweep",
            "--sweep-grid",
            "--sweep-factors",
            "0.5,2",
        ],
        // null gates, in the contract and in every sweep line
        vec![
            "analyze",
            TWO,
            "--json",
            "--sweep",
            "--sweep-class",
            "batch",
        ],
    ] {
        let o = goodput(&args);
        assert_eq!(code(&o), EXIT_OK, "{}", stderr(&o));
        let receipt: Value = serde_json::from_slice(&o.stdout).expect("json");
        let errors: Vec<String> = validator
            .iter_errors(&receipt)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{args:?}: {errors:?}");
    }
}

#[test]
fn a_closed_loop_trace_is_named_in_every_view_and_refused_by_gate_unless_allowed() {
    // The receipt carries the mode it judged.
    let o = goodput(&["analyze", CLOSED, "--json"]);
    assert_eq!(code(&o), EXIT_OK, "{}", stderr(&o));
    let receipt: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(receipt["contract"]["arrivalMode"], "closed-loop");
    let o = goodput(&["analyze", MIXED, "--json"]);
    let receipt: Value = serde_json::from_str(&stdout(&o)).expect("JSON");
    assert_eq!(receipt["contract"]["arrivalMode"], "open-loop");
    // The summary says so on its second line; the open-loop one does not.
    let text = stdout(&goodput(&["analyze", CLOSED]));
    let second = text.lines().nth(1).unwrap_or_default();
    assert!(
        second.starts_with("WARNING   closed-loop workload"),
        "{text}"
    );
    assert!(!stdout(&goodput(&["analyze", MIXED])).contains("closed-loop"));
    // The report's header says so before anything else.
    let dir = Scratch::new("closed-loop-report");
    let html = dir.path("r.html").display().to_string();
    let o = goodput(&["report", CLOSED, "--out", &html]);
    assert_eq!(code(&o), EXIT_OK, "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).expect("report written");
    let header =
        &page[page.find("<header>").expect("header")..page.find("</header>").expect("end")];
    assert!(header.contains("id=\"closed-loop\""), "{header}");
    // gate: the same figures admit the open-loop trace and refuse the closed-loop one.
    let criteria = [
        "--min-goodput",
        "0.4",
        "--max-failure-share",
        "0.25",
        "--max-censored-share",
        "0.1",
    ];
    let mut args = vec!["gate", MIXED];
    args.extend(criteria);
    assert_eq!(code(&goodput(&args)), EXIT_OK);
    let mut args = vec!["gate", CLOSED];
    args.extend(criteria);
    let o = goodput(&args);
    assert_eq!(code(&o), EXIT_NO, "{}", stdout(&o));
    let text = stdout(&o);
    assert!(
        text.lines().any(|l| l.starts_with("arrival mode")
            && l.contains("closed-loop")
            && l.ends_with("FAIL")),
        "{text}"
    );
    assert!(
        text.contains("REFUSE: 1 of 5 criteria fail (arrival mode)"),
        "{text}"
    );
    args.push("--allow-closed-loop");
    let o = goodput(&args);
    assert_eq!(code(&o), EXIT_OK, "{}", stdout(&o));
    assert!(
        stdout(&o).contains("ADMIT: all 5 criteria pass"),
        "{}",
        stdout(&o)
    );
}
