//! Clear words for inputs that are almost right: a
//! JSON input with a UTF-8 byte-order mark is named as such by every reader
//! (trace, receipt, import file; merge shards and the metrics sidecar have
//! their own tests beside their readers), and a metrics sidecar's values no
//! server reports are named "implausible (…)", never shown as 309 digits or
//! as a clamped "100 %".

mod common;

use std::path::{Path, PathBuf};

use common::{fixture, goodput};

/// What every reader says of a byte-order mark.
const BOM: &str = "the input starts with a UTF-8 byte-order mark (EF BB BF); \
                   goodput reads JSON without one: remove it";

/// `source` with a byte-order mark in front, written to `dir/name`.
fn with_bom(dir: &Path, name: &str, source: &Path) -> PathBuf {
    let mut bytes = vec![0xEF, 0xBB, 0xBF];
    bytes.extend(std::fs::read(source).unwrap());
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path
}

/// Exit status and standard error of `goodput args…`.
fn run(args: &[&str]) -> (i32, String) {
    let out = goodput().args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_json_reader_names_a_byte_order_mark() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let trace = fixture("spec_example.json");
    let trace_s = trace.display().to_string();
    let s = |p: &Path| p.display().to_string();

    let bom_trace = with_bom(d, "t.json", &trace);
    let receipt = d.join("r.json");
    let (code, text) = run(&["analyze", &trace_s, "--json", "--out", &s(&receipt)]);
    assert_eq!(code, 0, "{text}");
    let bom_receipt = with_bom(d, "rb.json", &receipt);
    let import = |tool: &str, file: &str| {
        let source = with_bom(d, file, &fixture(&format!("import/{file}")));
        (
            tool.to_owned(),
            s(&source),
            s(&d.join(format!("{tool}.json"))),
        )
    };
    let imports = [
        import("vllm", "vllm_synthetic.json"),
        import("aiperf", "aiperf_profile_export.jsonl"),
        import("guidellm", "guidellm_benchmarks.json"),
    ];
    let mut cases: Vec<(String, Vec<String>, String)> = vec![
        (
            "analyze".into(),
            vec!["analyze".into(), s(&bom_trace)],
            format!("rejected: {BOM}"),
        ),
        (
            "verify".into(),
            vec!["verify".into(), s(&bom_receipt), trace_s.clone()],
            format!("the receipt is not a goodput receipt: {BOM}"),
        ),
        (
            "compare".into(),
            vec!["compare".into(), s(&bom_receipt), s(&receipt)],
            format!("rb.json: {BOM}"),
        ),
    ];
    for (tool, source, out) in imports {
        let args = vec![
            "import".into(),
            "--from".into(),
            tool.clone(),
            source,
            "--out".into(),
            out,
        ];
        let line = if tool == "aiperf" { "line 1: " } else { "" };
        cases.push((
            format!("import --from {tool}"),
            args,
            format!("as {tool} output: {line}{BOM}"),
        ));
    }
    for (what, args, expected) in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, text) = run(&args);
        assert_eq!(code, 2, "{what}: {text}");
        assert!(text.contains(&expected), "{what}: {text}");
        assert!(!text.contains("expected value"), "{what}: {text}");
    }
}

#[test]
fn the_report_names_implausible_server_metrics_instead_of_showing_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(fixture("spec_example.json")).unwrap()).unwrap();
    trace["workload"]["metricsFile"] = "t.metrics.jsonl".into();
    let path = dir.path().join("t.json");
    std::fs::write(&path, serde_json::to_vec(&trace).unwrap()).unwrap();
    // Snapshot 1: a queue of 1e308 and a KV use of 5.0; snapshot 2 is
    // plausible (queue 2, 3 running, KV 50 %): running peaks at 4.
    std::fs::write(
        dir.path().join("t.metrics.jsonl"),
        "{\"tMs\":100,\"waiting\":1e308,\"running\":4,\"kvUsage\":5.0,\"kvUsageMax\":5.0}\n\
         {\"tMs\":200,\"waiting\":2,\"running\":3,\"kvUsage\":0.5,\"kvUsageMax\":0.5}\n",
    )
    .unwrap();
    let html = dir.path().join("t.html");
    let (code, text) = run(&[
        "report",
        &path.display().to_string(),
        "--out",
        &html.display().to_string(),
    ]);
    assert_eq!(code, 0, "{text}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains(
            "Peak waiting implausible (1e308 in 1 snapshot, not a whole count 0–1e9), \
             running 4, KV use implausible (5 in 1 snapshot, not a fraction 0–1)."
        ),
        "{page}"
    );
    assert!(!page.contains("100000000000000001"), "no 309-digit figure");
    assert!(!page.contains("KV use 100 %"), "no clamped 100 %");
}
