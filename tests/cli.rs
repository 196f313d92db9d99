//! The binary as a user runs it: outputs, files, limits and exit statuses.

mod common;

use common::{fixture, goodput};
use std::io::Write;
use std::process::{Output, Stdio};

fn run(args: &[&str]) -> Output {
    goodput().args(args).output().expect("spawn goodput")
}

fn path(name: &str) -> String {
    fixture(name).display().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

#[test]
fn the_summary_for_people_fits_100_columns_and_names_what_matters() {
    for name in ["bad_fields.json", "two_classes.json", "warmup.json"] {
        let o = run(&["analyze", &path(name)]);
        for line in String::from_utf8(o.stdout).unwrap().lines() {
            assert!(
                line.chars().count() <= 100,
                "{name}: too wide ({}): {line}",
                line.chars().count()
            );
        }
    }
    let o = run(&["analyze", &path("mixed_120.json")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    for line in text.lines() {
        assert!(
            line.chars().count() <= 100,
            "too wide ({}): {line}",
            line.chars().count()
        );
    }
    for needle in [
        "sha256 ",
        "COUNTS",
        "cohort",
        "censored",
        "goodput",
        "pass share",
        "offered",
        "completed",
        "output tok",
        "p50",
        "p95",
        "p99",
        "max",
        "interactive",
        "batch",
        "miss: ttft",
        "failure:",
        "invalid:",
    ] {
        assert!(text.contains(needle), "summary lacks {needle:?}:\n{text}");
    }
}

#[test]
fn the_summary_lists_invalid_rows_by_id_with_their_reasons() {
    let o = run(&["analyze", &path("duplicate_ids.json")]);
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("INVALID ROWS"), "{text}");
    assert!(
        text.contains("/rows/4      \"b\": duplicate_id, bad_field"),
        "{text}"
    );
}

#[test]
fn json_goes_to_stdout_and_out_writes_the_same_bytes_atomically() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("receipt.json");
    let o = run(&[
        "analyze",
        &path("spec_example.json"),
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(std::fs::read(&out).unwrap(), o.stdout);
    // Nothing but the receipt is left in the directory (no temporary file).
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("receipt.json")]);
    assert!(json(&o).get("rows").is_none(), "rows only with --rows");
}

#[test]
fn an_unwritable_out_path_is_an_error_with_status_2_and_no_output() {
    let o = run(&[
        "analyze",
        &path("spec_example.json"),
        "--json",
        "--out",
        "/nonexistent-dir/receipt.json",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(o.stdout.is_empty());
    assert!(
        stderr(&o).starts_with("cannot write /nonexistent-dir/receipt.json"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn standard_input_gives_the_same_receipt_as_the_file() {
    let bytes = std::fs::read(fixture("mixed_120.json")).unwrap();
    let mut child = goodput()
        .args(["analyze", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&bytes).unwrap();
    let from_stdin = child.wait_with_output().unwrap();
    let from_file = run(&["analyze", &path("mixed_120.json"), "--json"]);
    assert_eq!(from_stdin.status.code(), Some(0));
    assert_eq!(from_stdin.stdout, from_file.stdout);
}

#[test]
fn strict_turns_the_first_invalid_row_into_a_rejection() {
    let o = run(&["analyze", &path("duplicate_ids.json"), "--strict"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        "rejected: /rows/0 is invalid (duplicate_id) and --strict is set\n"
    );
    assert!(o.stdout.is_empty());
    let clean = run(&["analyze", &path("equality_inclusive.json"), "--strict"]);
    assert_eq!(clean.status.code(), Some(0));
}

#[test]
fn raised_limits_are_recorded_in_the_receipt() {
    // 501 rows: rejected by default, accepted (and recorded) with --max-rows 501.
    let too_many = fixture("rejected/too_many_rows.json").display().to_string();
    assert_eq!(run(&["analyze", &too_many]).status.code(), Some(2));
    let o = run(&["analyze", &too_many, "--json", "--max-rows", "501"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let r = json(&o);
    assert_eq!(
        r["limits"],
        serde_json::json!({"maxRows": 501, "maxBytes": 65536})
    );
    assert_eq!(r["results"]["all"]["counts"]["arrivals"], 501);
    let big = fixture("rejected/over_byte_limit.json")
        .display()
        .to_string();
    let o = run(&["analyze", &big, "--json", "--max-bytes", "70000"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json(&o)["limits"]["maxBytes"], 70000);
}

#[test]
fn both_limits_are_inclusive() {
    let bytes = std::fs::read(fixture("spec_example.json")).unwrap();
    let n = bytes.len().to_string();
    let less = (bytes.len() - 1).to_string();
    let p = path("spec_example.json");
    assert_eq!(
        run(&["analyze", &p, "--max-bytes", &n]).status.code(),
        Some(0)
    );
    let o = run(&["analyze", &p, "--max-bytes", &less]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stderr(&o),
        format!("rejected: the input is {n} bytes, over the limit of {less} bytes (raise it with --max-bytes or GOODPUT_MAX_BYTES)\n")
    );
    // spec_example has 3 rows: --max-rows 3 accepts, 2 rejects.
    assert_eq!(
        run(&["analyze", &p, "--max-rows", "3"]).status.code(),
        Some(0)
    );
    let o = run(&["analyze", &p, "--max-rows", "2"]);
    assert_eq!(
        stderr(&o),
        "rejected: /rows has 3 rows, over the limit of 2 (raise it with --max-rows or GOODPUT_MAX_ROWS)\n"
    );
}

#[test]
fn exactly_500_rows_are_accepted_by_default() {
    let rows: Vec<String> = (0..500)
        .map(|i| format!("{{\"id\":\"{i}\",\"arrivalMs\":{i},\"status\":\"in_flight\"}}"))
        .collect();
    let doc = format!(
        "{{\"schema\":\"goodput-trace/1\",\"window\":{{\"startMs\":0,\"endMs\":1000}},\"equality\":\"strict\",\
         \"classes\":{{\"c\":{{\"ttftMs\":null,\"tpotMs\":null,\"e2eMs\":null}}}},\"rows\":[{}]}}",
        rows.join(",")
    );
    let mut child = goodput()
        .args(["analyze", "-", "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(doc.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(json(&o)["results"]["all"]["counts"]["censored"], 500);
}

#[test]
fn a_missing_file_and_a_bad_flag_exit_2() {
    let o = run(&["analyze", "/nonexistent/trace.json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).starts_with("cannot read /nonexistent/trace.json:"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        run(&["analyze", &path("spec_example.json"), "--no-such-flag"])
            .status
            .code(),
        Some(2)
    );
    assert_eq!(run(&["analyze"]).status.code(), Some(2));
    assert_eq!(
        run(&["analyze", &path("spec_example.json"), "--max-rows", "many"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn help_documents_the_exit_statuses() {
    for args in [&["--help"][..], &["analyze", "--help"][..]] {
        let o = run(args);
        assert_eq!(o.status.code(), Some(0));
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(
            text.contains("Exit status:") && text.contains("0  a receipt was produced"),
            "{text}"
        );
        assert!(text.contains("2  the input was rejected"), "{text}");
    }
}

#[test]
fn a_closed_pipe_on_stdout_is_not_an_error() {
    // 20,000 rows with --rows make several MB of JSON; `head -c 1` closes the pipe early.
    let rows: Vec<String> = (0..20_000)
        .map(|i| format!("{{\"id\":\"r{i}\",\"arrivalMs\":{i},\"status\":\"failed\",\"reason\":\"timeout\"}}"))
        .collect();
    let doc = format!(
        "{{\"schema\":\"goodput-trace/1\",\"window\":{{\"startMs\":0,\"endMs\":100000}},\"equality\":\"strict\",\
         \"classes\":{{\"c\":{{\"ttftMs\":1,\"tpotMs\":null,\"e2eMs\":null}}}},\"rows\":[{}]}}",
        rows.join(",")
    );
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("big.json");
    std::fs::write(&trace, doc).unwrap();
    let script = format!(
        "'{}' analyze '{}' --json --rows --max-rows 20000 --max-bytes 10000000 | head -c 1 >/dev/null; \
         echo \"${{PIPESTATUS[0]}}\"",
        env!("CARGO_BIN_EXE_goodput"),
        trace.display()
    );
    let o = std::process::Command::new("bash")
        .args(["-c", &script])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim(),
        "0",
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[cfg(unix)]
#[test]
fn the_written_receipt_is_readable_by_others() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("receipt.json");
    let o = run(&[
        "analyze",
        &path("spec_example.json"),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(
        std::fs::metadata(&out).unwrap().permissions().mode() & 0o777,
        0o644
    );
}

/// Runs `goodput args…` with the environment variables `vars` set on the child.
fn run_with(vars: &[(&str, &str)], args: &[&str]) -> Output {
    goodput()
        .envs(vars.iter().copied())
        .args(args)
        .output()
        .expect("spawn goodput")
}

#[test]
fn the_limit_variables_reach_every_command_that_reads_a_trace_and_a_flag_wins() {
    let dir = tempfile::tempdir().unwrap();
    let p = path("spec_example.json"); // 3 rows
    let html = dir.path().join("r.html").display().to_string();
    let commands: [Vec<&str>; 6] = [
        vec!["analyze", &p],
        vec!["sweep", &p],
        vec!["mutate", &p],
        vec!["gate", &p, "--min-goodput", "0"],
        vec!["report", &p, "--out", &html],
        vec!["frontier", &p],
    ];
    for args in &commands {
        let o = run_with(&[("GOODPUT_MAX_ROWS", "2")], args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&o).contains(
                "/rows has 3 rows, over the limit of 2 (raise it with --max-rows or GOODPUT_MAX_ROWS)"
            ),
            "{args:?}: {}",
            stderr(&o)
        );
        let o = run_with(&[("GOODPUT_MAX_BYTES", "100")], args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&o).contains(
                "over the limit of 100 bytes (raise it with --max-bytes or GOODPUT_MAX_BYTES)"
            ),
            "{args:?}: {}",
            stderr(&o)
        );
        // The flag wins over the variable.
        let mut with_flag = args.clone();
        with_flag.extend(["--max-rows", "3"]);
        let o = run_with(&[("GOODPUT_MAX_ROWS", "2")], &with_flag);
        assert_ne!(o.status.code(), Some(2), "{args:?}: {}", stderr(&o));
        // A variable that is not a number is a usage error naming it.
        let o = run_with(&[("GOODPUT_MAX_ROWS", "lots")], args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&o).contains("GOODPUT_MAX_ROWS=lots"),
            "{}",
            stderr(&o)
        );
    }
}

#[test]
fn the_receipt_records_limits_from_the_variables_and_verify_uses_the_receipts() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("r.json").display().to_string();
    let p = path("spec_example.json");
    let vars = [("GOODPUT_MAX_ROWS", "7"), ("GOODPUT_MAX_BYTES", "100000")];
    let o = run_with(&vars, &["analyze", &p, "--json", "--out", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(json(&o)["limits"]["maxRows"], 7);
    assert_eq!(json(&o)["limits"]["maxBytes"], 100000);
    // verify recomputes under the receipt's recorded limits, whatever the
    // variables say in the reviewer's shell.
    let o = run_with(&[("GOODPUT_MAX_ROWS", "1")], &["verify", &out, &p]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
}
