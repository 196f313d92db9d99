//! Saturation against `goodput sim` on 127.0.0.1 (in-process, ephemeral
//! port): twice the sim's capacity with a short grace reads `overloaded`.
//! Runs are short (a few seconds of load) and bounded by the recorder's own
//! horizon.

mod common;

use common::recording::{receipt, record};
use goodput::sim::engine::EngineParams;
use goodput::sim::{SimConfig, SimServer};

/// The sim of the saturation examples: 4 sequences at a time, 10 ms per
/// step, 20 output tokens, no prefill cost: each request holds a slot for
/// 200 ms, so the capacity is 4 / 0.2 s = 20 requests per second.
fn sim_20_per_s() -> SimServer {
    let config = SimConfig {
        engine: EngineParams {
            max_batch: 4,
            prefill_ms_per_1k_tokens: 0.0,
            decode_step_ms: 10.0,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (20.0, 0.0),
        faults: vec![],
        seed: 1,
        model_name: "sim".into(),
        quirks: Default::default(),
    };
    SimServer::start(config, 1).expect("start sim")
}

#[test]
fn twice_the_sims_capacity_with_a_short_grace_reads_overloaded() {
    // 40/s constant for 3 s against 20/s: the queue grows by about 20 a
    // second (0 → ~60), served stays near 20/s, and a 1 s grace leaves a
    // third of the cohort censored, which must not hide the overload.
    let server = sim_20_per_s();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, stdout, _) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "40",
            "--arrival",
            "constant",
            "--duration",
            "3s",
            "--grace",
            "1s",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    let r = receipt(&out);
    let s = &r["results"]["all"]["saturation"];
    assert_eq!(s["verdict"], "overloaded", "{s}");
    assert_eq!(s["offeredPerS"], 40.0);
    let served = s["servedPerS"].as_f64().unwrap();
    assert!(served < 0.9 * 40.0, "{s}");
    assert!(
        stdout.contains("saturation: overloaded: in flight grew"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the server was the bottleneck"),
        "{stdout}"
    );
    let l = &r["results"]["all"]["littlesLaw"];
    assert_eq!(l["steadyState"], false, "{l}");
}
