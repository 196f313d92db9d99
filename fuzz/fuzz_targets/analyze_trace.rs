//! Trace bytes → full analysis, receipt rendering and sweep, with the
//! invariants of `goodput_selfcheck` and the receipt schema checked on every
//! accepted input; among those invariants, `verify` of the trace's own
//! receipt (plain, with rows, with a sweep, with raised limits) agrees.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;

static RECEIPT_SCHEMA: OnceLock<jsonschema::Validator> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let receipt = match goodput_selfcheck::check_trace_bytes(data) {
        Ok(Some(receipt)) => receipt,
        Ok(None) => return,
        Err(broken) => panic!("invariant broken: {broken}"),
    };
    let schema = RECEIPT_SCHEMA.get_or_init(|| {
        let text = include_str!("../../schema/receipt.schema.json");
        let schema: serde_json::Value = serde_json::from_str(text).expect("schema is JSON");
        jsonschema::validator_for(&schema).expect("schema compiles")
    });
    let json = goodput_util::json::to_canonical_json(&receipt).expect("renders");
    let value: serde_json::Value = serde_json::from_slice(&json).expect("receipt is JSON");
    let first_error = schema
        .iter_errors(&value)
        .next()
        .map(|e| format!("{e} at {}", e.instance_path()));
    if let Some(error) = first_error {
        panic!("receipt does not match its schema: {error}");
    }
});
