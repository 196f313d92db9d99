//! Every input the fuzzers ever kept (`fuzz/regressions/<target>/`) and every
//! fixture, replayed through the same invariant checks the fuzz targets run
//! (`goodput_selfcheck`), so a fixed crash stays fixed without a fuzzer.

mod common;

use std::path::{Path, PathBuf};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn regressions(target: &str) -> Vec<PathBuf> {
    files(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/regressions")
            .join(target),
    )
}

#[test]
fn every_fixture_holds_the_fuzzing_invariants() {
    let mut checked = 0;
    let reviewer = files(&common::fixture("reviewer"));
    for path in common::accepted_fixtures()
        .into_iter()
        .chain(common::rejected_fixtures())
        .chain(reviewer)
    {
        let bytes = std::fs::read(&path).unwrap();
        goodput_selfcheck::check_trace_bytes(&bytes)
            .unwrap_or_else(|broken| panic!("{}: {broken}", path.display()));
        checked += 1;
    }
    assert!(checked > 50);
}

#[test]
fn every_kept_trace_input_holds_the_invariants() {
    for path in regressions("analyze_trace") {
        let bytes = std::fs::read(&path).unwrap();
        goodput_selfcheck::check_trace_bytes(&bytes)
            .unwrap_or_else(|broken| panic!("{}: {broken}", path.display()));
    }
}

#[test]
fn every_kept_sse_input_holds_the_invariants() {
    for path in regressions("sse_chunks") {
        let bytes = std::fs::read(&path).unwrap();
        goodput_selfcheck::check_sse_input(&bytes)
            .unwrap_or_else(|broken| panic!("{}: {broken}", path.display()));
    }
}

#[test]
fn the_sse_check_accepts_real_streams_split_anywhere() {
    let stream = b"data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}]}\r\n\r\ndata: [DONE]\n\n";
    for cuts in [
        &[][..],
        &[0, 5, 17, 30, 999][..],
        &[1, 2, 3, 4, 5, 6, 7, 8][..],
    ] {
        assert!(
            goodput_selfcheck::check_sse_split(stream, cuts).is_ok(),
            "{cuts:?}"
        );
    }
}

#[test]
fn every_kept_import_input_and_every_import_fixture_holds_the_invariants() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/import");
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    for (tool, name) in [
        (0u8, "vllm_synthetic.json"),
        (0, "vllm_benchmark_serving_0.8.4.json"),
        (1, "aiperf_profile_export.jsonl"),
        (2, "guidellm_benchmarks.json"),
        (2, "guidellm_max_duration_benchmarks.json"),
    ] {
        let mut input = vec![tool];
        input.extend(std::fs::read(fixtures.join(name)).unwrap());
        inputs.push(input);
    }
    for path in regressions("import_inputs") {
        inputs.push(std::fs::read(&path).unwrap());
    }
    for input in inputs {
        goodput_selfcheck::check_import_input(&input).unwrap_or_else(|broken| panic!("{broken}"));
    }
}
