//! `record --metrics` given more than once (docs/recorder.md, "Server
//! metrics"): the server's own `/metrics` and a power exporter beside it are
//! read at every tick into one sidecar, each line marked with its endpoint;
//! `--power-metric` declares the exporter's series in the trace, and the
//! receipt integrates only that endpoint's readings into energy per good
//! request (docs/contract.md §10.18).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

use common::recording::{f, record};
use goodput_sim::engine::EngineParams;
use goodput_sim::quirks::StreamQuirks;
use goodput_sim::{SimConfig, SimServer};
use serde_json::Value;

/// The exporter's constant draw: two GPUs at 90 + 110 W.
const WATTS: f64 = 200.0;

fn sim() -> SimServer {
    let config = SimConfig {
        engine: EngineParams {
            max_batch: 8,
            prefill_ms_per_1k_tokens: 0.0,
            decode_step_ms: 5.0,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (4.0, 0.0),
        faults: vec![],
        seed: 1,
        model_name: "sim".into(),
        also_served: vec![],
        quirks: StreamQuirks::default(),
        tokenizer: None,
    };
    SimServer::start(config, 1).expect("start sim")
}

/// A node-exporter-like endpoint on 127.0.0.1: every GET gets the same page
/// (a bounded number of connections, one per scrape).
fn exporter() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let url = format!("http://{}/metrics", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(200) {
            let Ok(stream) = stream else { return };
            let _ = answer(stream);
        }
    });
    url
}

fn answer(stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
            break;
        }
    }
    let page = "# TYPE node_gpu_watts gauge\nnode_gpu_watts{gpu=\"0\"} 90\nnode_gpu_watts{gpu=\"1\"} 110\n";
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
        page.len()
    )?;
    out.flush()
}

fn analyze_json(trace: &std::path::Path) -> Value {
    let out = common::goodput()
        .args([
            "analyze",
            "--json",
            "--max-rows",
            "100000",
            "--max-bytes",
            "100000000",
        ])
        .arg(trace)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn two_endpoints_share_one_sidecar_and_only_the_power_endpoint_makes_the_energy() {
    let server = sim();
    let power = exporter();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "20",
            "--arrival",
            "constant",
            "--duration",
            "2s",
            "--slo",
            "chat:ttft=1000,e2e=5000",
            "--metrics",
            "--metrics",
            &power,
            "--metrics-interval",
            "200ms",
            "--power-metric",
            "node_gpu_watts",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    let workload = &trace["workload"];
    let server_metrics = format!("{}/metrics", server.url());
    assert_eq!(workload["metricsUrl"], server_metrics.as_str());
    assert_eq!(
        workload["metricsUrls"],
        format!("{server_metrics} {power}").as_str()
    );
    assert_eq!(workload["powerMetric"], "node_gpu_watts");
    // Each line names its endpoint; the exporter's carry the power series,
    // the server's its batch state.
    let sidecar = std::fs::read_to_string(dir.path().join("t.metrics.jsonl")).unwrap();
    let lines: Vec<Value> = sidecar
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let of = |s: u64| lines.iter().filter(move |l| l["source"] == s);
    assert!(of(0).count() >= 5 && of(1).count() >= 5, "{sidecar}");
    assert_eq!(of(0).count() + of(1).count(), lines.len());
    for l in of(1).filter(|l| l.get("error").is_none()) {
        assert_eq!(l["raw"]["node_gpu_watts{gpu=\"1\"}"], 110.0, "{l}");
    }
    for l in of(0).filter(|l| l.get("error").is_none()) {
        assert!(l["raw"].get("node_gpu_watts{gpu=\"0\"}").is_none(), "{l}");
        assert!(l["running"].is_number(), "{l}");
    }
    // Energy: a constant 200 W integrates to exactly 200 W × the covered
    // seconds, whatever the scrape instants; the readings are the
    // exporter's alone, the series its two GPUs.
    let receipt = analyze_json(&out);
    let e = &receipt["energy"];
    assert_eq!(e["metric"], "node_gpu_watts");
    assert_eq!(e["series"], 2);
    let readings = f(&e["readings"]);
    assert!(readings <= of(1).count() as f64, "{e}");
    let covered_s = f(&e["coveredMs"]) / 1000.0;
    assert!((f(&e["joules"]) - WATTS * covered_s).abs() < 1e-6, "{e}");
    // 2 s window, a scrape every 200 ms: at most ~one interval uncovered at
    // each end (a loaded machine may skip a tick).
    assert!(covered_s >= 1.2, "{e}");
    let good = f(&e["goodRequests"]);
    assert!(good >= 30.0, "{e}");
    assert!((f(&e["joulesPerGoodRequest"]) - f(&e["joules"]) / good).abs() < 1e-9);
}

#[test]
fn more_than_eight_endpoints_or_a_bad_power_metric_name_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let mut args: Vec<String> = ["--request-rate", "1", "--duration", "1s", "--no-preflight"]
        .map(String::from)
        .to_vec();
    for i in 0..9 {
        args.extend(["--metrics".into(), format!("http://127.0.0.1:9/m{i}")]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, message, _) = record("http://127.0.0.1:9", &out, &refs);
    assert_eq!(code, 2, "{message}");
    assert!(message.contains("at most 8 metrics endpoints"), "{message}");
    let bad = common::goodput()
        .args(["record", "--url", "http://127.0.0.1:9", "--duration", "1s"])
        .args(["--metrics", "--power-metric", "watts{gpu=\"0\"}"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("is not a Prometheus metric name"), "{err}");
}
