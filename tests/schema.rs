//! The committed schemas are generated from the code; this fails when they drift.

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
        goodput::schema::trace_schema_json(),
        "schema/trace.schema.json is stale: run `cargo run -- schema trace > schema/trace.schema.json`"
    );
}

#[test]
fn committed_receipt_schema_matches_the_code() {
    assert_eq!(
        committed("receipt.schema.json"),
        goodput::schema::receipt_schema_json(),
        "schema/receipt.schema.json is stale: run `cargo run -- schema receipt > schema/receipt.schema.json`"
    );
}

#[test]
fn committed_compare_schema_matches_the_code() {
    assert_eq!(
        committed("compare.schema.json"),
        goodput::schema::compare_schema_json(),
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
