//! Hostile shapes within the limits: each finishes (bounded by the byte
//! limit) with a receipt or a clear one-line rejection. The bounds are written
//! down in docs/reliability.md.

mod common;

use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::trace::Limits;

fn shell(rows: &str) -> String {
    format!(
        r#"{{"schema":"goodput-trace/1","window":{{"startMs":0,"endMs":1000}},"equality":"inclusive",
            "classes":{{"c":{{"ttftMs":100,"tpotMs":null,"e2eMs":null}}}},"rows":[{rows}]}}"#
    )
}

fn options(max_rows: u64, max_bytes: u64) -> AnalyzeOptions {
    AnalyzeOptions {
        limits: Limits {
            max_rows,
            max_bytes,
        },
        rows: true,
        strict: false,
    }
}

#[test]
fn deep_nesting_never_reaches_the_stack() {
    // A million nested arrays (2 MB). Where the value is skipped (an unknown
    // row field, a label, rows that are not objects, a top level that is not
    // an object) serde_json skips it iteratively: the row is invalid, or the
    // document is not an object. Where a value is read as a tree (top-level
    // members such as `boundary`), serde_json's recursion limit of 128 levels
    // rejects it. Either way, no recursion deeper than 128 frames.
    let deep = format!("{}{}", "[".repeat(1_000_000), "]".repeat(1_000_000));
    let big = options(10, 3_000_000);
    for row in [
        format!(r#"{{"id":"a","arrivalMs":1,"status":"in_flight","x":{deep}}}"#),
        format!(r#"{{"id":"a","arrivalMs":1,"status":"in_flight","labels":{{"k":{deep}}}}}"#),
        deep.clone(),
    ] {
        let r = analyze_bytes(shell(&row).as_bytes(), big)
            .expect("accepted")
            .receipt;
        assert_eq!(r.rows.unwrap()[0].reasons, vec!["bad_field"]);
    }
    let err = analyze_bytes(deep.as_bytes(), big).expect_err("rejected");
    assert_eq!(
        err.to_string(),
        "the document must be a JSON object, found an array"
    );
    let in_member = format!(
        r#"{{"schema":"goodput-trace/1","boundary":{{"k":{deep}}},"window":{{"startMs":0,"endMs":1}},
            "equality":"strict","classes":{{"c":{{"ttftMs":1,"tpotMs":1,"e2eMs":1}}}},"rows":[]}}"#
    );
    let err = analyze_bytes(in_member.as_bytes(), big).expect_err("rejected");
    assert!(
        err.to_string().starts_with(
            "the input nests deeper than 128 levels near /boundary: recursion limit exceeded"
        ),
        "{err}"
    );
    assert_eq!(err.to_string().lines().count(), 1);
}

#[test]
fn a_million_character_id_makes_its_row_invalid() {
    // 1,000,000 code points is far over the 128 allowed: bad_field (the document
    // needs --max-bytes raised to be read at all: about 1 MB).
    let id = "é".repeat(1_000_000); // 2,000,000 bytes
    let doc = shell(&format!(
        r#"{{"id":"{id}","arrivalMs":1,"status":"completed","firstTokenMs":2,"completedMs":3,"outputTokens":1}},
           {{"id":"ok","arrivalMs":1,"status":"completed","firstTokenMs":2,"completedMs":3,"outputTokens":1}}"#
    ));
    assert!(
        analyze_bytes(doc.as_bytes(), options(10, 65_536)).is_err(),
        "over the default byte limit"
    );
    let r = analyze_bytes(doc.as_bytes(), options(10, 3_000_000))
        .expect("accepted")
        .receipt;
    let rows = r.rows.unwrap();
    assert_eq!(rows[0].reasons, vec!["bad_field"]);
    assert_eq!(rows[1].verdict, "pass");
    // The summary for people shortens the id instead of printing a megabyte line.
    let o = common::goodput()
        .args(["analyze", "-", "--max-bytes", "3000000"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(doc.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.lines().all(|l| l.chars().count() <= 100));
}

#[test]
fn thousands_of_labels_are_kept_and_echoed() {
    // 20,000 labels on one row (about 500 KB): accepted, echoed in order.
    let labels: Vec<String> = (0..20_000).map(|i| format!(r#""k{i:05}":{i}"#)).collect();
    let doc = shell(&format!(
        r#"{{"id":"a","arrivalMs":1,"status":"in_flight","labels":{{{}}}}}"#,
        labels.join(",")
    ));
    let r = analyze_bytes(doc.as_bytes(), options(10, 1 << 20))
        .expect("accepted")
        .receipt;
    let rows = r.rows.unwrap();
    let echoed = rows[0].labels.as_ref().unwrap();
    assert_eq!(echoed.len(), 20_000);
    assert_eq!(echoed.keys().next().map(String::as_str), Some("k00000"));
    // A repeated label key makes the row invalid rather than silently keeping one.
    let doc = shell(r#"{"id":"a","arrivalMs":1,"status":"in_flight","labels":{"k":1,"k":2}}"#);
    let r = analyze_bytes(doc.as_bytes(), options(10, 1 << 20))
        .expect("accepted")
        .receipt;
    assert_eq!(r.rows.unwrap()[0].reasons, vec!["bad_field"]);
}

#[test]
fn just_under_the_byte_limit_with_raised_rows_is_a_receipt() {
    // Empty objects, as many as fit in 65,536 bytes: each is a row with no
    // fields (bad_field). With --max-rows raised to fit, the receipt counts them all.
    let mut rows = vec!["{}"; 21_700];
    let mut doc = shell(&rows.join(","));
    while doc.len() > 65_536 {
        rows.pop();
        doc = shell(&rows.join(","));
    }
    assert!(doc.len() > 65_000, "{} bytes", doc.len());
    let n = rows.len() as u64;
    assert!(
        analyze_bytes(doc.as_bytes(), options(500, 65_536)).is_err(),
        "over the default row limit"
    );
    let r = analyze_bytes(doc.as_bytes(), options(n, 65_536))
        .expect("accepted")
        .receipt;
    assert_eq!(
        (r.results.all.counts.arrivals, r.results.all.counts.invalid),
        (n, n)
    );
    assert_eq!(r.results.all.reasons.invalid.get("bad_field"), Some(&n));
}

#[test]
fn thousands_of_classes_and_failure_reasons_are_counted() {
    // 2,000 classes, each with one row failing for its own reason.
    let classes: Vec<String> = (0..2_000)
        .map(|i| format!(r#""c{i}":{{"ttftMs":1,"tpotMs":null,"e2eMs":null}}"#))
        .collect();
    let rows: Vec<String> = (0..2_000)
        .map(|i| format!(r#"{{"id":"r{i}","class":"c{i}","arrivalMs":1,"status":"failed","reason":"why_{i}"}}"#))
        .collect();
    let doc = format!(
        r#"{{"schema":"goodput-trace/1","window":{{"startMs":0,"endMs":1000}},"equality":"strict",
            "classes":{{{}}},"rows":[{}]}}"#,
        classes.join(","),
        rows.join(",")
    );
    let r = analyze_bytes(doc.as_bytes(), options(2_000, 1 << 20))
        .expect("accepted")
        .receipt;
    assert_eq!(r.results.classes.len(), 2_000);
    assert_eq!(r.results.all.reasons.failure.len(), 2_000);
    assert!(r.results.classes.values().all(|b| b.counts.failed == 1));
}
