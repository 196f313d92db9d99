//! `goodput demo` end to end: the built-in sim on 127.0.0.1 (a free port),
//! a two-point sweep (shortened with --rates/--duration), the frontier, the
//! report and the answer; and its refusal to write into a folder that holds
//! files.

use std::process::Command;

fn goodput() -> Command {
    Command::new(env!("CARGO_BIN_EXE_goodput"))
}

#[test]
fn demo_runs_the_sweep_and_answers_with_the_capacity_between_its_rates() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("demo");
    let run = goodput()
        .args([
            "demo",
            "--rates",
            "2,40",
            "--duration",
            "3s",
            "--no-progress",
            "--dir",
        ])
        .arg(&out)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for file in [
        "trace-2.json",
        "trace-40.json",
        "frontier.svg",
        "report.html",
        "record.log",
    ] {
        assert!(out.join(file).is_file(), "{file} missing: {stdout}");
    }
    // The sim (8 slots, 64 tokens of 10 ms at a full batch) serves about
    // 8 / 0.64 s = 12.5 requests/s: 2/s passes every gate (TTFT ~25 ms,
    // TPOT ~9 ms), 40/s queues ~27 requests/s more than it serves, so the
    // capacity lies between the two rates and the top rate is overloaded
    // (shortfall ~80 of ~120 arrivals, far beyond 3 √(A + D) ≈ 38).
    let answer = stdout
        .lines()
        .find(|l| l.starts_with("answer: "))
        .unwrap_or_else(|| panic!("no answer line: {stdout}"));
    let capacity: f64 = answer
        .strip_prefix("answer: this server holds ")
        .and_then(|rest| rest.split("/s").next())
        .and_then(|x| x.parse().ok())
        .unwrap_or_else(|| panic!("no capacity in: {answer}"));
    assert!(capacity > 1.0 && capacity < 40.0, "{answer}");
    assert!(answer.contains("overloaded"), "{answer}");
    assert!(
        stdout.contains("goodput record --url http://HOST:8000"),
        "{stdout}"
    );
    assert!(
        stdout.contains("trace-40.json), "),
        "the report is of the top rate: {stdout}"
    );
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("trace-2.json")).unwrap()).unwrap();
    assert_eq!(
        trace["classes"]["chat"]["ttftMs"], 500.0,
        "the demo's gates are declared"
    );
    assert_eq!(trace["classes"]["chat"]["tpotMs"], 50.0);
}

#[test]
fn demo_refuses_a_folder_that_holds_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("mine.txt"), "keep me").unwrap();
    let run = goodput()
        .args(["demo", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("not a new or empty folder"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("mine.txt")).unwrap(),
        "keep me"
    );
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
