//! Every fixture, end to end: accepted ones produce a schema-valid, stable,
//! snapshotted receipt; rejected ones produce their expected one-line message
//! and exit status 2.

mod common;

use common::*;

#[test]
fn every_accepted_fixture_matches_its_receipt_snapshot() {
    let fixtures = accepted_fixtures();
    assert!(
        fixtures.len() >= 15,
        "expected the full fixture set, found {}",
        fixtures.len()
    );
    for path in fixtures {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = receipt_text(&receipt(&format!("{name}.json")));
        insta::assert_snapshot!(format!("receipt_{name}"), text);
    }
}

#[test]
fn every_accepted_fixture_is_valid_under_the_trace_schema() {
    let v = validator("trace.schema.json");
    for path in accepted_fixtures() {
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_valid(&v, &doc, &path.display().to_string());
    }
}

#[test]
fn every_receipt_is_valid_under_the_receipt_schema() {
    let v = validator("receipt.schema.json");
    for path in accepted_fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let analysis = analyze_fixture(&name);
        let with_rows: serde_json::Value =
            serde_json::from_str(&receipt_text(&analysis.receipt)).unwrap();
        assert_valid(&v, &with_rows, &format!("receipt of {name} (with rows)"));
        let mut without = analysis.receipt.clone();
        without.rows = None;
        let without: serde_json::Value = serde_json::from_str(&receipt_text(&without)).unwrap();
        assert_valid(&v, &without, &format!("receipt of {name}"));
    }
}

#[test]
fn the_same_trace_gives_byte_identical_receipts() {
    for path in accepted_fixtures() {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let first = receipt_text(&receipt(&name));
        let second = receipt_text(&receipt(&name));
        assert_eq!(first, second, "{name}");
        // The same through the binary, as a user would run it twice.
        let run = || {
            goodput()
                .args(["analyze", "--json", "--rows"])
                .arg(&path)
                .output()
                .unwrap()
                .stdout
        };
        let a = run();
        assert_eq!(a, run(), "{name} via the CLI");
        assert_eq!(
            String::from_utf8(a).unwrap(),
            first,
            "{name}: CLI and library differ"
        );
    }
}

#[test]
fn every_rejected_fixture_fails_with_its_expected_message_and_status_2() {
    let fixtures = rejected_fixtures();
    assert!(
        fixtures.len() >= 40,
        "expected one rejected fixture per rule, found {}",
        fixtures.len()
    );
    for path in fixtures {
        let expected = std::fs::read_to_string(path.with_extension("expected"))
            .unwrap_or_else(|_| panic!("{} has no .expected file", path.display()));
        let out = goodput().arg("analyze").arg(&path).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{}", path.display());
        assert!(
            out.stdout.is_empty(),
            "{}: a rejected trace printed output",
            path.display()
        );
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr, expected, "{}", path.display());
        assert_eq!(stderr.lines().count(), 1, "one line, not a backtrace");
        assert!(stderr.starts_with("rejected: "), "{stderr}");
    }
}

#[test]
fn the_trace_schema_also_refuses_what_it_can_express() {
    // Rules a JSON Schema can state: types, enums, required members, unknown
    // fields. (Ordering, spans and limits are the validator's alone.)
    let v = validator("trace.schema.json");
    for name in [
        "not_an_object",
        "schema_missing",
        "schema_unknown",
        "unknown_top_level_field",
        "rows_missing",
        "rows_not_array",
        "window_missing",
        "window_start_missing",
        "window_start_not_number",
        "window_unknown_field",
        "window_timestamp_out_of_range",
        "warmup_unknown_field",
        "equality_missing",
        "equality_unknown",
        "classes_missing",
        "classes_empty",
        "gate_negative",
        "gate_not_number",
        "gate_missing",
        "gate_boolean",
        "class_unknown_field",
        "tokens_unknown",
        "tokens_null",
        "boundary_nested",
        "workload_not_object",
        "workload_null_value",
    ] {
        let path = fixtures_dir().join("rejected").join(format!("{name}.json"));
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert!(
            !v.is_valid(&doc),
            "the trace schema accepts rejected fixture {name}"
        );
    }
}
