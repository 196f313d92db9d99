//! The committed schemas are generated from the code; this fails when they drift.

mod common;

use std::path::Path;

fn committed(file: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(file);
    std::fs::read_to_string(path).expect("committed schema")
}

#[test]
fn committed_trace_schema_matches_the_code() {
    assert_eq!(
        committed("trace.schema.json"),
        goodput_core::schema::trace_schema_json(),
        "schema/trace.schema.json is stale: run `cargo run -- schema trace > schema/trace.schema.json`"
    );
}

#[test]
fn committed_receipt_schema_matches_the_code() {
    assert_eq!(
        committed("receipt.schema.json"),
        goodput_core::schema::receipt_schema_json(),
        "schema/receipt.schema.json is stale: run `cargo run -- schema receipt > schema/receipt.schema.json`"
    );
}

#[test]
fn committed_compare_schema_matches_the_code() {
    assert_eq!(
        committed("compare.schema.json"),
        goodput_core::schema::compare_schema_json(),
        "schema/compare.schema.json is stale: run `cargo run -- schema compare > schema/compare.schema.json`"
    );
}

#[test]
fn schema_command_prints_the_committed_schemas() {
    for (which, file) in [
        ("trace", "trace.schema.json"),
        ("receipt", "receipt.schema.json"),
        ("compare", "compare.schema.json"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"))
            .args(["schema", which])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        assert_eq!(String::from_utf8(out.stdout).unwrap(), committed(file));
    }
}

#[test]
fn every_published_schema_is_committed_and_printed_by_the_schema_command() {
    let all = goodput::cli::schema::all();
    assert_eq!(all.len(), 10);
    for (which, file, text) in all {
        assert_eq!(
            committed(file),
            text,
            "schema/{file} is stale: run `cargo run -- schema {which} > schema/{file}`"
        );
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"))
            .args(["schema", which])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{which}");
        assert_eq!(String::from_utf8(out.stdout).unwrap(), text, "{which}");
    }
}

/// Runs goodput and returns its standard output as JSON.
fn json_of(args: &[&str]) -> serde_json::Value {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"))
        .env_remove("GOODPUT_MAX_ROWS")
        .env_remove("GOODPUT_MAX_BYTES")
        .args(args)
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "{args:?}: not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

#[test]
fn every_json_the_tool_writes_matches_its_published_schema() {
    let fixture = |name: &str| {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(name)
            .display()
            .to_string()
    };
    let dir = tempfile::tempdir().unwrap();
    let receipt = dir.path().join("r.json").display().to_string();
    let trace = dir.path().join("t.json").display().to_string();
    let mixed = fixture("mixed_120.json");
    let two = fixture("two_classes.json");
    let closed = fixture("reviewer/closed-loop.json");
    json_of(&["analyze", &mixed, "--json", "--out", &receipt]);
    let vllm = fixture("import/vllm_synthetic.json");
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (
            "receipt.schema.json",
            vec!["analyze", &mixed, "--json", "--rows", "--sweep"],
        ),
        ("sweep.schema.json", vec!["sweep", &two, "--json"]),
        ("mutate.schema.json", vec!["mutate", &mixed, "--json"]),
        (
            "verify.schema.json",
            vec!["verify", &receipt, &mixed, "--json"],
        ),
        (
            "verify.schema.json",
            vec!["verify", &receipt, &two, "--json"],
        ),
        (
            "gate.schema.json",
            vec!["gate", &closed, "--min-goodput", "0.1", "--json"],
        ),
        (
            "frontier.schema.json",
            vec!["frontier", &mixed, &two, "--json"],
        ),
        (
            "import.schema.json",
            vec!["import", "--from", "vllm", &vllm, "--out", &trace, "--json"],
        ),
    ];
    for (file, args) in cases {
        let validator = common::validator(file);
        common::assert_valid(&validator, &json_of(&args), &format!("{args:?}"));
    }
    // The trace the importer wrote matches the trace schema.
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    common::assert_valid(
        &common::validator("trace.schema.json"),
        &written,
        "imported trace",
    );
}
