//! Helpers for the recorder's end-to-end tests (`record_sim`, `record_hardening`).

use std::path::Path;

use clap::Parser;
use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::trace::Limits;
use serde_json::Value;

/// Runs `goodput record` in-process; returns (exit status, output, trace):
/// the output is what it printed when it succeeded, its error message when
/// it failed; the trace is `null` when none was written.
pub fn record(url: &str, out: &Path, extra: &[&str]) -> (i32, String, Value) {
    record_model(url, Some("sim"), out, extra)
}

/// [`record`] with `--model` as given (`None`: not given at all).
pub fn record_model(
    url: &str,
    model: Option<&str>,
    out: &Path,
    extra: &[&str],
) -> (i32, String, Value) {
    let mut argv = vec![
        "goodput".to_owned(),
        "record".into(),
        "--url".into(),
        url.into(),
        "--out".into(),
        out.display().to_string(),
        "--no-progress".into(),
    ];
    if let Some(m) = model {
        argv.extend(["--model".to_owned(), m.to_owned()]);
    }
    argv.extend(extra.iter().map(|s| s.to_string()));
    let cli = goodput::cli::Cli::try_parse_from(&argv).expect("flags parse");
    let mut stdout = Vec::new();
    let (code, output) = match goodput::cli::run(cli, &mut stdout) {
        Ok(code) => (code, String::from_utf8_lossy(&stdout).into_owned()),
        Err(e) => (e.exit_code(), e.message()),
    };
    let trace = std::fs::read(out)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    (code, output, trace)
}

/// The analyzer's receipt of a trace file, with `--strict` (any invalid row
/// is a rejection) and limits raised to fit.
pub fn receipt(out: &Path) -> Value {
    let bytes = std::fs::read(out).expect("the trace exists");
    let limits = Limits {
        max_rows: 10_000_000,
        max_bytes: 1 << 32,
    };
    let analysis = analyze_bytes(
        &bytes,
        AnalyzeOptions {
            limits,
            rows: false,
            strict: true,
        },
    )
    .expect("the analyzer accepts the recorder's trace, with no invalid row");
    let receipt = serde_json::to_value(&analysis.receipt).expect("receipt JSON");
    assert_eq!(receipt["results"]["all"]["counts"]["invalid"], 0);
    receipt
}

/// The trace's rows.
pub fn rows(trace: &Value) -> &Vec<Value> {
    trace["rows"].as_array().expect("rows")
}

/// A JSON number, or a panic naming what was there instead.
pub fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Rows = `workload.scheduled`, ids r0… unique and in schedule order.
pub fn assert_no_lost_row(trace: &Value) {
    let rows = rows(trace);
    assert_eq!(rows.len() as f64, f(&trace["workload"]["scheduled"]));
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row["id"], format!("r{i}"));
    }
}

/// Sends SIGINT to `child` once after each of `pauses` (a second one cuts
/// what the first let run on), then waits up to `limit` for it to exit;
/// kills it and fails the test if it does not.
pub fn interrupt_and_wait(
    mut child: std::process::Child,
    pauses: &[std::time::Duration],
    limit: std::time::Duration,
) -> std::process::Output {
    for pause in pauses {
        std::thread::sleep(*pause);
        // SAFETY: kill(2) on our own child's pid.
        let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        assert_eq!(sent, 0);
    }
    let deadline = std::time::Instant::now() + limit;
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("the child did not stop after SIGINT");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}
