//! Server-reported timing end to end (docs/contract.md §10.17): the sim
//! writes its engine's own queue wait and prefill into each finish chunk, as
//! llama.cpp (`timings`) and vLLM (`metrics`) do; the recorder keeps them as
//! `server.*` labels beside its own instants and declares the sources; the
//! receipt splits the client's TTFT into queue, prefill and outside. The
//! truth is known by construction: one sequence at a time, 8 requests due
//! 1 ms apart, 4 tokens of 10 ms steps each, so the j-th request served
//! waits for the j before it. A hand-written server sends a `Server-Timing`
//! header, which lands in every row as its entries.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};

use common::recording::{f, receipt, record, rows};
use goodput_sim::engine::EngineParams;
use goodput_sim::quirks::{ServerTiming, StreamQuirks};
use goodput_sim::{SimConfig, SimServer};
use serde_json::Value;

/// Engine step: 10 ms, no per-sequence or prefill cost, batch of one, so a
/// request occupies the engine for exactly 4 steps = 40 ms.
const STEP_MS: f64 = 10.0;
const TOKENS: f64 = 4.0;

fn timing_sim(which: ServerTiming) -> SimServer {
    let config = SimConfig {
        engine: EngineParams {
            max_batch: 1,
            prefill_ms_per_1k_tokens: 0.0,
            decode_step_ms: STEP_MS,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (TOKENS, 0.0),
        faults: vec![],
        seed: 1,
        model_name: "sim".into(),
        also_served: vec![],
        quirks: StreamQuirks {
            server_timing: which,
            ..StreamQuirks::default()
        },
        tokenizer: None,
    };
    SimServer::start(config, 1).expect("start sim")
}

/// 8 requests due 1 ms apart (a burst), TTFT gate 100 ms.
fn burst(url: &str, out: &std::path::Path) -> Value {
    let (code, stdout, trace) = record(
        url,
        out,
        &[
            "--request-rate",
            "1000",
            "--arrival",
            "constant",
            "--num-requests",
            "8",
            "--grace",
            "10s",
            "--slo",
            "chat:ttft=100,e2e=10000",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    trace
}

fn label(row: &Value, key: &str) -> Option<f64> {
    row["labels"][key].as_f64()
}

/// Nearest-rank percentile of `v` (sorted ascending), as the receipt takes it.
fn nearest_rank(v: &[f64], p: f64) -> f64 {
    let n = v.len() as f64;
    v[((p / 100.0 * n).ceil() as usize).max(1) - 1]
}

#[test]
fn the_split_matches_the_engines_queue_and_prefill_by_construction() {
    let which = ServerTiming {
        llama_cpp: true,
        vllm: true,
    };
    let server = timing_sim(which);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let trace = burst(&server.url(), &out);
    assert_eq!(
        trace["workload"]["serverTiming"], "llama.cpp-timings,vllm-metrics",
        "the trace declares the sources seen"
    );
    let rows = rows(&trace);
    assert_eq!(rows.len(), 8);
    let mut queues = Vec::new();
    let mut outside = Vec::new();
    for row in rows {
        assert_eq!(row["status"], "completed", "{row}");
        let (q, p) = (
            label(row, "server.queueMs").expect("vLLM's queue_time_ms"),
            label(row, "server.prefillMs").expect("prefill"),
        );
        // The engine's TTFT (vLLM) is its queue + prefill, to the µs.
        let engine_ttft = label(row, "server.ttftMs").unwrap();
        assert!((engine_ttft - (q + p)).abs() < 0.002, "{row}");
        // The admitting step: one 10 ms step (its deadline may come up to
        // the driver's 2 ms slack early after a late step; a loaded
        // machine makes it later, never shorter than that).
        assert!((STEP_MS - 2.5..STEP_MS + 25.0).contains(&p), "{row}");
        // The client's own instants stay its own.
        let ttft = f(&row["firstTokenMs"]) - f(&row["arrivalMs"]);
        assert!(ttft > 0.0);
        outside.push(ttft - q - p);
        queues.push(q);
        // llama.cpp's counts: 4 predicted tokens; predicted_ms = 3 more steps.
        assert_eq!(label(row, "server.outputTokens"), Some(TOKENS), "{row}");
        let decode = label(row, "server.decodeMs").unwrap();
        assert!(decode >= 3.0 * STEP_MS - 3.0 * 2.5, "{row}");
    }
    queues.sort_by(f64::total_cmp);
    // By construction the j-th request served waits for j requests of 40 ms
    // each, less the 1 ms per place it arrived later: 39·j ms. The engine
    // can never serve faster (its steps keep absolute deadlines, at most the
    // 2 ms slack early), but a request the client sent late waits that much
    // less: 10 ms below covers both. A loaded machine serves slower.
    for (j, q) in queues.iter().enumerate() {
        let truth = 39.0 * j as f64;
        assert!(
            *q >= truth - 10.0,
            "queue {j}: {q} below the engine's truth {truth}: {queues:?}"
        );
        assert!(
            *q <= truth * 1.5 + 15.0,
            "queue {j}: {q} far above {truth}: {queues:?}"
        );
    }
    // Time outside the engine is the client and the loopback: never
    // negative (the engine sees the request after the client sent it).
    for o in &outside {
        assert!(*o >= -0.5, "outside {o}: {outside:?}");
    }
    // The receipt's figures are the labels' nearest-rank percentiles.
    let r = receipt(&out);
    let st = &r["results"]["all"]["serverTiming"];
    assert_eq!(st["rows"], 8);
    assert_eq!(st["queueReported"], 8);
    assert!((f(&st["queueMs"]["p50"]) - nearest_rank(&queues, 50.0)).abs() < 1e-9);
    outside.sort_by(f64::total_cmp);
    assert!((f(&st["outsideMs"]["p50"]) - nearest_rank(&outside, 50.0)).abs() < 0.002);
    // Queueing dominates: 39·(0+…+7) = 1092 ms of queue against 8 × 10 of
    // prefill and a few ms outside.
    assert!(f(&st["split"]["queueShare"]) > 0.75, "{st}");
    // Requests 3..7 wait ≥ 117 ms: they miss the 100 ms TTFT gate, by queueing.
    assert!(f(&st["ttftMisses"]["rows"]) >= 5.0, "{st}");
    assert!(f(&st["ttftMisses"]["queueShare"]) > 0.8, "{st}");
}

#[test]
fn llama_cpp_timings_alone_report_no_queue_and_declare_one_source() {
    let which = ServerTiming {
        llama_cpp: true,
        vllm: false,
    };
    let server = timing_sim(which);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let trace = burst(&server.url(), &out);
    assert_eq!(trace["workload"]["serverTiming"], "llama.cpp-timings");
    for row in rows(&trace) {
        assert!(label(row, "server.queueMs").is_none(), "{row}");
        assert!(label(row, "server.prefillMs").is_some(), "{row}");
        assert_eq!(
            label(row, "server.promptTokens").map(|n| n > 0.0),
            Some(true)
        );
    }
    // Without a queue figure the queue counts as outside the engine: the
    // split says so, and the check flags the client (outside ≫ 10 % of 100).
    let r = receipt(&out);
    let st = &r["results"]["all"]["serverTiming"];
    assert_eq!(st["queueReported"], 0);
    assert!(f(&st["split"]["outsideShare"]) > 0.75, "{st}");
}

#[test]
fn a_sim_without_server_timing_writes_no_server_label_and_no_source() {
    let server = timing_sim(ServerTiming::default());
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let trace = burst(&server.url(), &out);
    assert!(trace["workload"].get("serverTiming").is_none());
    for row in rows(&trace) {
        let labels = row["labels"].as_object().unwrap();
        assert!(!labels.keys().any(|k| k.starts_with("server.")), "{row}");
    }
}

/// A server that answers every request with one token and a
/// `Server-Timing` header of two lines (a hostile entry among them).
fn serve_with_server_timing() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(16) {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let _ = answer(stream);
            });
        }
    });
    url
}

fn answer(stream: TcpStream) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    let sse = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n\
               data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\
               data: [DONE]\n\n";
    let mut out = stream;
    write!(
        out,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
         Server-Timing: queue;dur=12.5;desc=\"gateway queue\", edge;dur=0.75\r\n\
         Server-Timing: prefill;dur=30, cache;desc=hit, <b onclick=x>;dur=1\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{sse}",
        sse.len()
    )?;
    out.flush()
}

#[test]
fn a_server_timing_header_lands_in_every_row_as_its_entries() {
    let url = serve_with_server_timing();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, stdout, trace) = record(
        &url,
        &out,
        &[
            "--request-rate",
            "20",
            "--arrival",
            "constant",
            "--num-requests",
            "3",
            "--no-preflight",
            "--slo",
            "chat:ttft=1000,e2e=5000",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(trace["workload"]["serverTiming"], "server-timing");
    let rows = rows(&trace);
    assert_eq!(rows.len(), 3);
    for row in rows {
        assert_eq!(row["status"], "completed", "{row}");
        assert_eq!(label(row, "server.queueMs"), Some(12.5), "{row}");
        assert_eq!(label(row, "server.prefillMs"), Some(30.0), "{row}");
        assert_eq!(label(row, "server.timing.queue"), Some(12.5), "{row}");
        assert_eq!(label(row, "server.timing.edge"), Some(0.75), "{row}");
        assert_eq!(label(row, "server.timing.prefill"), Some(30.0), "{row}");
        // No `dur`: not kept. A name with markup is reduced to
        // `[A-Za-z0-9_-]` (`bonclickx`): nothing the server sends becomes
        // markup in a report. (A control character in a header value never
        // gets this far: the HTTP parser refuses the response.)
        assert!(label(row, "server.timing.cache").is_none(), "{row}");
        assert_eq!(label(row, "server.timing.bonclickx"), Some(1.0), "{row}");
        let text = row.to_string();
        assert!(!text.contains('<') && !text.contains('='), "{text}");
    }
}
