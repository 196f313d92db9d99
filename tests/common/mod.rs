//! Helpers shared by the integration tests.
#![allow(dead_code)]

pub mod capture;
pub mod queue;
pub mod recording;

use std::path::{Path, PathBuf};

use goodput_core::analyze::{analyze_bytes, Analysis, AnalyzeOptions};
use goodput_core::receipt::Receipt;
use goodput_core::trace::Limits;
use goodput_util::json::to_canonical_json;

/// The repository's `fixtures/` folder.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// A fixture's path.
pub fn fixture(name: &str) -> PathBuf {
    fixtures_dir().join(name)
}

/// Every accepted fixture (`fixtures/*.json`), sorted by name.
pub fn accepted_fixtures() -> Vec<PathBuf> {
    json_files(&fixtures_dir())
}

/// Every rejected fixture (`fixtures/rejected/*.json`), sorted by name.
pub fn rejected_fixtures() -> Vec<PathBuf> {
    json_files(&fixtures_dir().join("rejected"))
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("fixtures dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    v.sort();
    v
}

/// Analyzes a fixture with default limits.
pub fn analyze_fixture(name: &str) -> Analysis {
    let bytes = std::fs::read(fixture(name)).expect("read fixture");
    analyze_bytes(
        &bytes,
        AnalyzeOptions {
            rows: true,
            ..AnalyzeOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{name} rejected: {e}"))
}

/// The receipt of a fixture (with per-row verdicts).
pub fn receipt(name: &str) -> Receipt {
    analyze_fixture(name).receipt
}

/// Analyzes bytes with generous limits, for generated traces.
pub fn analyze_generated(bytes: &[u8]) -> Analysis {
    let options = AnalyzeOptions {
        limits: Limits {
            max_rows: 100_000,
            max_bytes: 100_000_000,
        },
        ..AnalyzeOptions::default()
    };
    analyze_bytes(bytes, options).unwrap_or_else(|e| panic!("rejected: {e}"))
}

/// The canonical JSON text of a receipt.
pub fn receipt_text(receipt: &Receipt) -> String {
    String::from_utf8(to_canonical_json(receipt).expect("serialize")).expect("utf-8")
}

/// A compiled validator for one of the committed schemas.
pub fn validator(schema_file: &str) -> jsonschema::Validator {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("schema")
        .join(schema_file);
    let schema: serde_json::Value =
        serde_json::from_slice(&std::fs::read(path).expect("read schema")).expect("schema is JSON");
    jsonschema::validator_for(&schema).expect("schema compiles")
}

/// Asserts `instance` is valid under `validator`, listing every error.
pub fn assert_valid(validator: &jsonschema::Validator, instance: &serde_json::Value, what: &str) {
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{what} does not match its schema:\n{}",
        errors.join("\n")
    );
}

/// The `goodput` binary built for these tests, with the limit variables
/// removed so the caller's shell cannot change a test's limits (tests that
/// exercise them set them on the child).
pub fn goodput() -> std::process::Command {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"));
    command
        .env_remove("GOODPUT_MAX_ROWS")
        .env_remove("GOODPUT_MAX_BYTES");
    command
}
