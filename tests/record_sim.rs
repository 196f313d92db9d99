//! End-to-end: `goodput sim` on 127.0.0.1 (ephemeral port, in-process) →
//! `goodput record` → `goodput analyze`. Every run is short (≤ 3 s of load)
//! and bounded by the recorder's own horizon; no test needs the network
//! beyond loopback.

mod common;

use std::time::{Duration, Instant};

use common::recording::{assert_no_lost_row, f, receipt, record, record_model, rows};
use goodput_sim::engine::EngineParams;
use goodput_sim::fault::{Fault, FaultKind};
use goodput_sim::{SimConfig, SimServer};
use serde_json::Value;

fn sim(engine: EngineParams, output_tokens: f64, faults: Vec<Fault>) -> SimServer {
    sim_serving(engine, output_tokens, faults, &["sim"])
}

/// A sim whose `/v1/models` lists `models` (the first one answered by default).
fn serving(engine: EngineParams, output_tokens: f64, models: &[&str]) -> SimServer {
    sim_serving(engine, output_tokens, vec![], models)
}

fn sim_serving(
    engine: EngineParams,
    output_tokens: f64,
    faults: Vec<Fault>,
    models: &[&str],
) -> SimServer {
    let config = SimConfig {
        engine,
        output_tokens: (output_tokens, 0.0),
        faults,
        seed: 1,
        model_name: models[0].into(),
        also_served: models[1..].iter().map(|m| m.to_string()).collect(),
        quirks: Default::default(),
        tokenizer: None,
    };
    SimServer::start(config, 1).expect("start sim")
}

fn engine(max_batch: usize, prefill: f64, step: f64, per_seq: f64) -> EngineParams {
    EngineParams {
        max_batch,
        prefill_ms_per_1k_tokens: prefill,
        decode_step_ms: step,
        decode_ms_per_seq: per_seq,
    }
}

#[test]
fn sim_to_record_to_analyze_gives_the_configured_ttft_and_tpot() {
    // Prefill 50 ms per 1k tokens × 200 prompt words = 10 ms; a step is 20 ms
    // (no per-sequence cost), so a lone request has TTFT = 30 ms and
    // TPOT = 20 ms. Tolerances: TTFT in [30 − 2, 30 + 20 + 10 + 10] ms (a
    // request may wait out the step in progress, which may carry another's
    // prefill, plus timer slop); mean TPOT in [20 − 1, 20 × 1.25] ms (another
    // request's prefill lengthens a shared step by 10 ms; at 5 req/s that
    // touches about one step in ten).
    let server = sim(engine(64, 50.0, 20.0, 0.0), 16.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, stdout, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "5",
            "--arrival",
            "constant",
            "--duration",
            "2s",
            "--warmup",
            "0.4s",
            "--grace",
            "2s",
            "--random-input-len",
            "200",
            "--seed",
            "3",
        ],
    );
    assert_eq!(code, 0, "{stdout}");
    assert_no_lost_row(&trace);
    // Constant 5/s over 2.4 s: arrivals at 0, 200, …, 2200 ms = 12 rows.
    assert_eq!(rows(&trace).len(), 12);
    assert_eq!(trace["tokens"], "usage");
    assert_eq!(
        trace["window"],
        serde_json::json!({"startMs": 400, "endMs": 2400, "horizonMs": 4400})
    );
    assert!(stdout.contains("next: goodput analyze "), "{stdout}");
    for row in rows(&trace) {
        assert_eq!(row["status"], "completed", "{row}");
        assert_eq!(row["outputTokens"], 16);
        assert_eq!(row["labels"]["serverPromptTokens"], 200);
    }
    let r = receipt(&out);
    let all = &r["results"]["all"];
    assert_eq!(all["counts"]["cohort"], 10);
    assert_eq!(all["counts"]["pass"], 10);
    let ttft = &all["latency"]["ttftMs"];
    let tpot = &all["latency"]["tpotMs"];
    eprintln!("ttft {ttft}\ntpot {tpot}");
    assert!(f(&ttft["min"]) >= 28.0, "ttft {ttft}");
    assert!(f(&ttft["p50"]) <= 70.0, "ttft {ttft}");
    assert!(
        f(&tpot["mean"]) >= 19.0 && f(&tpot["mean"]) <= 25.0,
        "tpot {tpot}"
    );
}

fn fault_run(kind: FaultKind, extra: &[&str]) -> Value {
    let server = sim(
        engine(64, 0.0, 2.0, 0.0),
        8.0,
        vec![Fault { kind, rate: 1.0 }],
    );
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let mut args = vec![
        "--request-rate",
        "20",
        "--arrival",
        "constant",
        "--duration",
        "0.5s",
        "--grace",
        "1s",
    ];
    args.extend_from_slice(extra);
    let started = Instant::now();
    let (code, stdout, trace) = record(&server.url(), &out, &args);
    assert_eq!(code, 0, "{stdout}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_no_lost_row(&trace);
    // Constant 20/s for 0.5 s: exactly 10 rows.
    assert_eq!(rows(&trace).len(), 10);
    let r = receipt(&out);
    assert_eq!(r["results"]["all"]["counts"]["failed"], 10);
    trace
}

fn assert_all_failed(trace: &Value, reason: &str, first_token: bool) {
    for row in rows(trace) {
        assert_eq!(row["status"], "failed", "{row}");
        assert_eq!(row["reason"], reason, "{row}");
        assert!(row["endedMs"].is_number(), "{row}");
        assert_eq!(row["firstTokenMs"].is_number(), first_token, "{row}");
    }
}

#[test]
fn http_faults_are_rows_with_their_status() {
    assert_all_failed(&fault_run(FaultKind::Http500, &[]), "http_500", false);
    assert_all_failed(&fault_run(FaultKind::Http429, &[]), "http_429", false);
}

#[test]
fn mid_stream_faults_are_rows_that_keep_their_first_token() {
    assert_all_failed(&fault_run(FaultKind::Disconnect, &[]), "disconnect", true);
    assert_all_failed(&fault_run(FaultKind::Malformed, &[]), "bad_stream", true);
    let stalled = fault_run(FaultKind::Stall, &["--timeout", "300ms"]);
    assert_all_failed(&stalled, "timeout", true);
    for row in rows(&stalled) {
        assert!(f(&row["endedMs"]) >= f(&row["arrivalMs"]) + 300.0, "{row}");
    }
}

#[test]
fn a_refused_connection_is_a_row_too() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    }; // nothing listens there any more
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, _, trace) = record(
        &format!("http://127.0.0.1:{port}"),
        &out,
        &[
            "--request-rate",
            "20",
            "--arrival",
            "constant",
            "--duration",
            "0.25s",
            "--grace",
            "0.5s",
            // The preflight would stop at the dead port (exit 2); this test
            // is about the rows of a run that went ahead anyway.
            "--no-preflight",
        ],
    );
    assert_eq!(code, 0);
    assert_no_lost_row(&trace);
    assert_eq!(rows(&trace).len(), 5);
    assert_all_failed(&trace, "connect_refused", false);
}

#[test]
fn requests_running_at_the_horizon_are_written_in_flight() {
    horizon_cuts_every_request_in_flight("1");
}

#[test]
fn several_event_loops_stop_at_the_horizon_with_every_row_in_flight() {
    horizon_cuts_every_request_in_flight("2");
}

fn horizon_cuts_every_request_in_flight(loops: &str) {
    // 100 ms per step and 50 tokens: no request can finish within 0.5 s + 0.3 s.
    let server = sim(engine(64, 0.0, 100.0, 0.0), 50.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let started = Instant::now();
    let (code, _, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "10",
            "--arrival",
            "constant",
            "--duration",
            "0.5s",
            "--grace",
            "0.3s",
            "--client-loops",
            loops,
        ],
    );
    assert_eq!(code, 0);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "the run stops at its horizon"
    );
    assert_no_lost_row(&trace);
    assert_eq!(rows(&trace).len(), 5);
    for row in rows(&trace) {
        assert_eq!(row["status"], "in_flight", "{row}");
        assert!(row.get("completedMs").is_none());
    }
    // The first request arrived at 0 and its first token came at ~100 ms.
    assert!(rows(&trace)[0]["firstTokenMs"].is_number());
    let r = receipt(&out);
    assert_eq!(r["results"]["all"]["reasons"]["censored"]["in_flight"], 5);
}

#[test]
fn load_past_capacity_flattens_completions_and_raises_ttft() {
    // Batch 4, step 5 + 1 × 4 = 9 ms at a full batch, 16 tokens each:
    // capacity = 4 / (16 × 9 ms) = 27.8 requests/s. Completions can happen
    // until the horizon (2.5 s) but are divided by the 2 s window, so the
    // ceiling on completedPerS is 27.8 × 2.5 / 2 + 4 / 2 ≈ 36.7. Doubling the
    // offered load from 40 to 80/s must raise completions by under 30 %.
    let server = sim(engine(4, 0.0, 5.0, 1.0), 16.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let mut completed = Vec::new();
    let mut ttft_p50 = Vec::new();
    for rate in ["10", "40", "80"] {
        let out = dir.path().join(format!("t{rate}.json"));
        let (code, _, trace) = record(
            &server.url(),
            &out,
            &[
                "--request-rate",
                rate,
                "--arrival",
                "constant",
                "--duration",
                "2s",
                "--grace",
                "0.5s",
            ],
        );
        assert_eq!(code, 0);
        assert_no_lost_row(&trace);
        let r = receipt(&out);
        let all = &r["results"]["all"];
        completed.push(f(&all["rates"]["completedPerS"]));
        ttft_p50.push(f(&all["latency"]["ttftMs"]["p50"]));
    }
    eprintln!("completedPerS {completed:?}, ttft p50 {ttft_p50:?}");
    assert_eq!(
        completed[0], 10.0,
        "below capacity everything completes: {completed:?}"
    );
    assert!(completed[1] <= 36.7, "{completed:?}");
    assert!(completed[2] <= 36.7, "{completed:?}");
    assert!(
        completed[2] <= 1.3 * completed[1],
        "completions flatten: {completed:?}"
    );
    assert!(
        ttft_p50[0] < ttft_p50[1] && ttft_p50[1] < ttft_p50[2],
        "TTFT climbs: {ttft_p50:?}"
    );
    assert!(ttft_p50[2] > 10.0 * ttft_p50[0], "{ttft_p50:?}");
}

#[test]
fn closed_loop_never_exceeds_its_concurrency_and_says_so() {
    let server = sim(engine(64, 0.0, 5.0, 0.0), 10.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, _, trace) = record(
        &server.url(),
        &out,
        &[
            "--max-concurrency",
            "2",
            "--duration",
            "1s",
            "--grace",
            "1s",
        ],
    );
    assert_eq!(code, 0);
    assert_no_lost_row(&trace);
    assert_eq!(trace["workload"]["arrival"], "closed");
    assert_eq!(trace["boundary"]["arrival"], "closed-loop");
    // Each request takes about 10 × 5 ms, so 2 workers make about 40 in 1 s.
    let rows = rows(&trace);
    assert!(rows.len() >= 20 && rows.len() <= 44, "{}", rows.len());
    let mut events: Vec<(f64, i32)> = Vec::new();
    for row in rows {
        assert!(row["labels"].get("sendLagMs").is_none());
        events.push((f(&row["arrivalMs"]), 1));
        events.push((f(&row["completedMs"]), -1));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut running = 0;
    for (_, d) in events {
        running += d;
        assert!(running <= 2);
    }
    receipt(&out);
}

#[test]
fn prompts_and_keys_never_reach_the_trace() {
    let server = sim(engine(64, 0.0, 1.0, 0.0), 4.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let prompts = dir.path().join("p.jsonl");
    std::fs::write(
        &prompts,
        "\"zebra quokka axolotl\"\n{\"prompt\": \"narwhal okapi\", \"class\": \"batch\"}\n",
    )
    .unwrap();
    let out = dir.path().join("t.json");
    // SAFETY: this test binary's other tests never read this variable.
    unsafe { std::env::set_var("GOODPUT_TEST_KEY", "sk-test-VERYSECRET") };
    let (code, _, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "20",
            "--arrival",
            "constant",
            "--duration",
            "0.2s",
            "--grace",
            "1s",
            "--api",
            "completions",
            "--prompts",
            prompts.to_str().unwrap(),
            "--api-key-env",
            "GOODPUT_TEST_KEY",
            "--slo",
            "chat:ttft=500,tpot=50,e2e=5000",
            "--slo",
            "batch:ttft=5000,e2e=60000",
        ],
    );
    assert_eq!(code, 0);
    let text = std::fs::read_to_string(&out).unwrap();
    for secret in ["VERYSECRET", "zebra", "narwhal"] {
        assert!(!text.contains(secret), "{secret} leaked");
    }
    let rows = rows(&trace);
    assert_eq!(rows.len(), 4);
    assert_eq!(trace["defaultClass"], "chat");
    assert_eq!(trace["classes"]["batch"]["tpotMs"], Value::Null);
    assert_eq!(trace["workload"]["endpoint"], "/v1/completions");
    // Requests cycle through the file; the sim counts prompt words as tokens.
    assert_eq!(rows[0]["labels"]["serverPromptTokens"], 3);
    assert_eq!(rows[1]["labels"]["serverPromptTokens"], 2);
    assert_eq!(rows[1]["class"], "batch");
    assert!(rows[0].get("class").is_none());
    // sha256("zebra quokka axolotl"), first 12 hex digits, computed independently.
    let hash = goodput_core::trace::sha256_hex(b"zebra quokka axolotl");
    assert_eq!(rows[0]["labels"]["promptHash"], hash[..12]);
    receipt(&out);
}

#[test]
fn an_unwritable_output_fails_with_status_2_before_any_request() {
    let server = sim(engine(64, 0.0, 1.0, 0.0), 4.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("no-such-dir").join("t.json");
    let (code, _, _) = record(
        &server.url(),
        &out,
        &["--request-rate", "50", "--duration", "0.2s"],
    );
    assert_eq!(code, 2);
    assert_eq!(
        server
            .stats
            .requests
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    assert!(!out.exists());
}

#[test]
fn sigint_stops_the_run_writes_the_trace_and_exits_130() {
    // 50 ms steps and 100 tokens: every request is still running at the interrupt.
    let server = sim(engine(64, 0.0, 50.0, 0.0), 100.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args([
            "record",
            "--url",
            &server.url(),
            "--model",
            "sim",
            "--request-rate",
            "20",
            "--arrival",
            "constant",
            "--duration",
            "20s",
            "--warmup",
            "0.2s",
            "--out",
        ])
        .arg(&out)
        .env("OPENAI_API_KEY", "sk-test-SIGINTSECRET")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Ctrl-C twice, 300 ms apart: the first stops the sending, the second
    // cuts the requests it let run on (each needs 100 × 50 ms = 5 s).
    let output = common::recording::interrupt_and_wait(
        child,
        &[Duration::from_millis(1200), Duration::from_millis(300)],
        Duration::from_secs(10),
    );
    let status = output.status;
    assert_eq!(
        status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("SIGINTSECRET"));
    let trace: Value = serde_json::from_str(&text).unwrap();
    assert_no_lost_row(&trace);
    let w = &trace["workload"];
    assert_eq!(w["interrupted"], true);
    assert_eq!(w["plannedScheduled"], 404); // 20/s × (0.2 s warm-up + 20 s), constant
    let cut = f(&w["interruptedAtMs"]);
    assert!(cut > 800.0 && cut < 5000.0, "{cut}");
    // The window ends at the first interrupt; the horizon at the second.
    assert_eq!(w["drain"], "cut");
    let second = f(&w["drainEndedMs"]);
    assert!(second > cut, "{second} after {cut}");
    assert_eq!(f(&trace["window"]["endMs"]), cut);
    assert_eq!(f(&trace["window"]["horizonMs"]), second);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let in_flight = w["inFlightAtStop"].as_u64().unwrap();
    // Every row was in flight at the stop (one due just before it may not
    // have been dispatched yet: then it is `notSent`), and all are cut.
    let n = rows(&trace).len() as u64;
    assert!(in_flight == n || in_flight + 1 == n, "{in_flight} of {n}");
    assert!(
        stdout.contains(&format!(
            "; 0 requests in flight finished, {n} cut (a second Ctrl-C cut the rest at "
        )),
        "{stdout}"
    );
    // Constant 20/s: the rows are exactly the arrivals before the interrupt.
    assert_eq!(rows(&trace).len(), (cut / 50.0).ceil() as usize);
    assert!(rows(&trace).iter().all(|r| r["status"] == "in_flight"));
    let r = receipt(&out);
    assert_eq!(
        r["results"]["all"]["counts"]["censored"],
        r["results"]["all"]["counts"]["cohort"]
    );
}

/// Sends one HTTP/1.1 request on a fresh connection and reads to EOF.
fn http(addr: &str, request: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    let _ = stream.read_to_string(&mut out);
    out
}

#[test]
fn the_sim_binary_prints_its_loopback_address_and_serves_every_route() {
    use std::io::BufRead;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args([
            "sim",
            "--port",
            "0",
            "--decode-step-ms",
            "1",
            "--output-tokens",
            "5",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    let close = "Connection: close\r\n";
    let health = http(
        &addr,
        &format!("GET /health HTTP/1.1\r\nHost: x\r\n{close}\r\n"),
    );
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    let models = http(
        &addr,
        &format!("GET /v1/models HTTP/1.1\r\nHost: x\r\n{close}\r\n"),
    );
    assert!(models.contains("\"id\":\"sim\""), "{models}");
    let body = r#"{"model":"m","prompt":"one two three","max_tokens":3}"#;
    let whole = http(
        &addr,
        &format!(
            "POST /v1/completions HTTP/1.1\r\nHost: x\r\n{close}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ),
    );
    assert!(whole.starts_with("HTTP/1.1 200"), "{whole}");
    // Natural length 5, capped by max_tokens 3; the prompt is three words.
    assert!(
        whole.contains(r#""completion_tokens":3"#) && whole.contains(r#""prompt_tokens":3"#),
        "{whole}"
    );
    assert!(whole.contains(r#""finish_reason":"length""#), "{whole}");
    let missing = http(
        &addr,
        &format!("GET /nope HTTP/1.1\r\nHost: x\r\n{close}\r\n"),
    );
    assert!(missing.starts_with("HTTP/1.1 404"), "{missing}");
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(5);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("sim did not stop on SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0));
}

/// The real transport, noting the instant of every send (ms since `t0`,
/// negative before it), so a test can compare it with the row's stamp.
struct Stamping {
    inner: goodput_record::transport::client::HyperTransport,
    t0: tokio::time::Instant,
    sends: std::sync::Mutex<Vec<f64>>,
}

impl goodput_record::transport::client::Transport for Stamping {
    type Body =
        <goodput_record::transport::client::HyperTransport as goodput_record::transport::client::Transport>::Body;

    async fn send(
        &self,
        body: bytes::Bytes,
    ) -> Result<
        (goodput_record::transport::client::Head, Self::Body),
        goodput_record::transport::client::SendError,
    > {
        let now = tokio::time::Instant::now();
        let ms = match now.checked_duration_since(self.t0) {
            Some(d) => d.as_secs_f64() * 1000.0,
            None => -(self.t0 - now).as_secs_f64() * 1000.0,
        };
        self.sends.lock().unwrap().push(ms);
        self.inner.send(body).await
    }
}

/// Runs a closed loop of `concurrency` workers for 0.5 s against `server`,
/// with t0 50 ms after the call; returns (sends, stamped arrivals), each
/// sorted, ms since t0.
fn closed_loop_sends_and_stamps(server: &SimServer, concurrency: u32) -> (Vec<f64>, Vec<f64>) {
    use goodput_record::run::{run, Counters, Load, RunConfig};
    use goodput_record::workload::body::{Api, BodyTemplate, PromptSource};
    let uri = format!("{}/v1/chat/completions", server.url())
        .parse()
        .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let t0 = tokio::time::Instant::now() + Duration::from_millis(50);
        let transport = std::sync::Arc::new(Stamping {
            inner: goodput_record::transport::client::HyperTransport::new(uri, None).unwrap(),
            t0,
            sends: Default::default(),
        });
        let config = std::sync::Arc::new(RunConfig {
            load: Load::Closed { concurrency },
            window_end_ms: 500.0,
            grace_ms: 1000.0,
            timeout: Duration::from_secs(5),
            prompts: PromptSource::Random { words: 8, seed: 1 },
            max_event_bytes: goodput_record::exchange::sse::DEFAULT_MAX_EVENT_BYTES,
            template: BodyTemplate {
                api: Api::Chat,
                model: "sim".into(),
                max_tokens: None,
                ignore_eos: false,
                extra: Default::default(),
                embeddings_batch: 1,
            },
            secrets: Default::default(),
            loops: 1,
            max_in_flight: None,
        });
        let outcome = run(
            transport.clone(),
            config,
            t0,
            std::sync::Arc::new(Counters::default()),
            goodput_record::run::Interrupts::cut(Box::pin(std::future::pending())),
        )
        .await;
        let mut stamps: Vec<f64> = outcome
            .results
            .iter()
            .map(|r| r.as_ref().expect("every issued request reports").arrival_ms)
            .collect();
        let mut sends = transport.sends.lock().unwrap().clone();
        stamps.sort_by(f64::total_cmp);
        sends.sort_by(f64::total_cmp);
        (sends, stamps)
    })
}

#[test]
fn closed_loop_stamps_every_send_at_or_before_its_real_instant() {
    // Each request is sent at or after the instant it is stamped with (its
    // arrivalMs), and never before t0. When every request i has
    // stamp_i <= send_i, the k-th smallest stamp is <= the k-th smallest send.
    // (Before the fix, the workers sent their first requests up to 50 ms
    // before t0 and the clock stamped them 0.)
    let server = sim(engine(64, 0.0, 5.0, 0.0), 4.0, vec![]);
    for concurrency in [1, 4] {
        let (sends, stamps) = closed_loop_sends_and_stamps(&server, concurrency);
        assert_eq!(sends.len(), stamps.len(), "C = {concurrency}");
        assert!(sends.len() >= concurrency as usize, "C = {concurrency}");
        assert!(
            sends[0] >= 0.0,
            "C = {concurrency}: first send {} ms",
            sends[0]
        );
        for (k, (send, stamp)) in sends.iter().zip(&stamps).enumerate() {
            assert!(
                stamp <= send,
                "C = {concurrency}: #{k} stamped {stamp} ms, sent {send} ms"
            );
        }
    }
}

#[test]
fn no_progress_is_drawn_when_standard_error_is_not_a_terminal() {
    // The real binary, without --no-progress, its standard error a pipe: the
    // run lasts over a second (four samples at 250 ms), yet standard error
    // stays empty (no bar, no escape code), and the summary is unchanged.
    let server = sim(engine(8, 0.0, 1.0, 0.0), 4.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args(["record", "--url", &server.url(), "--model", "sim"])
        .args([
            "--request-rate",
            "10",
            "--arrival",
            "constant",
            "--duration",
            "1s",
            "--grace",
            "0.5s",
        ])
        .arg("--out")
        .arg(&out)
        .stdin(std::process::Stdio::null())
        .output()
        .expect("run goodput record");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{stdout}{stderr}");
    assert_eq!(stderr, "", "progress drawn on a pipe");
    assert!(stdout.starts_with("wrote 10 rows to "), "{stdout}");
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
}

#[test]
fn several_event_loops_send_one_schedule_each_request_once() {
    // 8 tokens at 2 ms a step: every request ends well inside the grace.
    let server = sim(engine(512, 0.0, 2.0, 0.0), 8.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let flags = [
        "--request-rate",
        "200",
        "--arrival",
        "poisson",
        "--seed",
        "5",
        "--duration",
        "1s",
        "--grace",
        "2s",
    ];
    let mut arrivals = Vec::new();
    for loops in ["1", "3"] {
        let out = dir.path().join(format!("loops-{loops}.json"));
        let mut extra = flags.to_vec();
        extra.extend(["--client-loops", loops]);
        let (code, text, trace) = record(&server.url(), &out, &extra);
        assert_eq!(code, 0, "{text}");
        assert_no_lost_row(&trace);
        for row in rows(&trace) {
            assert_eq!(row["status"], "completed", "{row}");
            assert!(f(&row["labels"]["sendLagMs"]) >= 0.0, "{row}");
        }
        let r = receipt(&out);
        assert_eq!(r["results"]["all"]["counts"]["failed"], 0);
        arrivals.push(
            rows(&trace)
                .iter()
                .map(|row| f(&row["arrivalMs"]))
                .collect::<Vec<_>>(),
        );
    }
    // One seed, one schedule: the lanes split it, they do not change it.
    assert!(arrivals[0].len() > 150, "about 200 requests in 1 s");
    assert_eq!(arrivals[0], arrivals[1]);
}

#[test]
fn a_seeded_schedule_beyond_poisson_noise_is_named_in_the_summary() {
    // `--request-rate 20 --seed 200` over 2 s draws 19 arrivals (ChaCha8 is
    // specified bit-for-bit): 21 under the λT = 40 asked, 52.5 %, beyond
    // the 95 % band 1.96 × √40 = 12.40. Seed 3 draws within it.
    let server = sim(engine(64, 1.0, 1.0, 0.0), 2.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let run = |seed: &str, name: &str| {
        let args = [
            "--request-rate",
            "20",
            "--duration",
            "2s",
            "--grace",
            "2s",
            "--seed",
            seed,
        ];
        record(&server.url(), &dir.path().join(name), &args)
    };
    let (code, stdout, trace) = run("200", "short.json");
    assert_eq!(code, 0, "{stdout}");
    assert_eq!(rows(&trace).len(), 19);
    assert!(
        stdout.contains(
            "  schedule: the drawn schedule holds 19 requests in 2 s, 52.5 % under the 40 \
             expected at 20/s: beyond Poisson noise (±12 at 95 %); another --seed draws \
             another schedule\n"
        ),
        "{stdout}"
    );
    let (code, stdout, _) = run("3", "usual.json");
    assert_eq!(code, 0, "{stdout}");
    assert!(!stdout.contains("schedule:"), "{stdout}");
}

// ------------------------------------------------- vLLM `bench serve` habits

/// Ten requests: constant 10/s for 1 s, 2 s of grace.
const SHORT: [&str; 8] = [
    "--request-rate",
    "10",
    "--arrival",
    "constant",
    "--duration",
    "1s",
    "--grace",
    "2s",
];

#[test]
fn a_model_the_server_does_not_list_is_refused_before_any_load_naming_what_is_served() {
    let server = serving(engine(64, 0.0, 1.0, 0.0), 2.0, &["real-model"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, message, trace) = record_model(&server.url(), Some("wrong-model"), &out, &SHORT);
    assert_eq!(code, 2);
    assert_eq!(
        message,
        format!(
            "preflight: --model wrong-model is not served by {}/v1/models, which lists 1 model: \
             `real-model` (give one of them to --model; --no-preflight skips this check)",
            server.url()
        )
    );
    assert_eq!(trace, Value::Null);
    // Only the preflight's GET reached the server: no completion was asked for.
    assert_eq!(
        server
            .stats
            .requests
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
}

#[test]
fn without_model_the_one_served_model_is_taken_and_declared_and_two_are_refused() {
    let server = serving(engine(64, 0.0, 1.0, 0.0), 2.0, &["real-model"]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, output, trace) = record_model(&server.url(), None, &out, &SHORT);
    assert_eq!(code, 0, "{output}");
    assert_eq!(rows(&trace).len(), 10);
    assert!(rows(&trace).iter().all(|r| r["status"] == "completed"));
    let w = &trace["workload"];
    assert_eq!(w["model"], "real-model");
    assert_eq!(w["modelFrom"], "/v1/models");
    assert_eq!(w["modelChecked"], true);

    let two = serving(engine(64, 0.0, 1.0, 0.0), 2.0, &["a", "b"]);
    let (code, message, _) = record_model(&two.url(), None, &dir.path().join("u.json"), &SHORT);
    assert_eq!(code, 2);
    assert_eq!(
        message,
        format!(
            "preflight: --model is required: {}/v1/models lists 2 models: `a`, `b` \
             (give one of them to --model)",
            two.url()
        )
    );
    // A listed model passes, and says it was checked.
    let (code, output, trace) = record_model(&two.url(), Some("b"), &out, &SHORT);
    assert_eq!(code, 0, "{output}");
    assert_eq!(trace["workload"]["model"], "b");
    assert_eq!(trace["workload"]["modelChecked"], true);
    assert_eq!(trace["workload"].get("modelFrom"), None);
}

#[test]
fn num_requests_ends_the_schedule_after_n_arrivals_and_the_window_where_the_next_was_due() {
    let server = sim(engine(64, 0.0, 1.0, 0.0), 2.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    // 10/s constant, 7 requests: arrivals 0, 100, …, 600; the 8th would be
    // due at 700 ms, where the window ends (7 in 0.7 s is the 10/s asked).
    let (code, output, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "10",
            "--arrival",
            "constant",
            "--num-prompts",
            "7",
            "--grace",
            "2s",
        ],
    );
    assert_eq!(code, 0, "{output}");
    let arrivals: Vec<f64> = rows(&trace).iter().map(|r| f(&r["arrivalMs"])).collect();
    assert_eq!(
        arrivals,
        vec![0.0, 100.0, 200.0, 300.0, 400.0, 500.0, 600.0]
    );
    assert_eq!(f(&trace["window"]["endMs"]), 700.0);
    assert_eq!(f(&trace["window"]["horizonMs"]), 2700.0);
    assert_eq!(trace["workload"]["numRequests"], 7);
    assert_eq!(f(&trace["workload"]["durationS"]), 0.7);
    assert_no_lost_row(&trace);
    // With --duration 0.35s the duration comes first: 0, 100, 200, 300.
    let (code, _, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "10",
            "--arrival",
            "constant",
            "--num-requests",
            "7",
            "--duration",
            "0.35s",
            "--grace",
            "2s",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(rows(&trace).len(), 4);
    assert_eq!(f(&trace["window"]["endMs"]), 350.0);
}

#[test]
fn request_rate_inf_sends_every_request_at_t0_and_needs_a_count() {
    let server = sim(engine(64, 0.0, 1.0, 0.0), 2.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, output, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "inf",
            "--num-requests",
            "5",
            "--timeout",
            "3s",
            "--grace",
            "1s",
        ],
    );
    assert_eq!(code, 0, "{output}");
    assert_eq!(rows(&trace).len(), 5);
    assert!(rows(&trace)
        .iter()
        .all(|r| f(&r["arrivalMs"]) == 0.0 && r["status"] == "completed"));
    let w = &trace["workload"];
    assert_eq!(
        (&w["arrival"], &w["requestRate"]),
        (&"burst".into(), &"inf".into())
    );
    assert_eq!(w.get("ratePerS"), None);
    // The window lasts --timeout when no --duration is given.
    assert_eq!(f(&trace["window"]["endMs"]), 3000.0);
    let (code, message, _) = record(
        &server.url(),
        &out,
        &["--request-rate", "inf", "--duration", "1s"],
    );
    assert_eq!(code, 2);
    assert_eq!(
        message,
        "usage: --request-rate inf sends the whole schedule at once: give --num-requests N"
    );
}

#[test]
fn a_rate_with_a_concurrency_cap_waits_for_a_slot_and_counts_the_wait_in_the_latencies() {
    // One request in flight at a time; each takes 3 decode steps of 100 ms
    // (at least 300 ms), arrivals every 100 ms: request 1, due at 100, can
    // only be sent once request 0 (sent at ≥ 0) has ended, at ≥ 300 ms; so
    // it waits ≥ 200 ms less its own dispatch lag, and its TTFT, timed from
    // its scheduled 100 ms, is ≥ 300 ms (ended r0 at ≥ 300, then a step).
    let server = sim(engine(64, 0.0, 100.0, 0.0), 3.0, vec![]);
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, output, trace) = record(
        &server.url(),
        &out,
        &[
            "--request-rate",
            "10",
            "--arrival",
            "constant",
            "--num-requests",
            "3",
            "--max-concurrency",
            "1",
            "--grace",
            "5s",
        ],
    );
    assert_eq!(code, 0, "{output}");
    assert!(
        output.contains("wait for a slot (--max-concurrency, in the latencies): p50 "),
        "{output}"
    );
    let w = &trace["workload"];
    assert_eq!(w["loop"], "open-capped");
    assert_eq!(w["maxConcurrency"], 1);
    assert_eq!(w["arrival"], "constant");
    let r = rows(&trace);
    assert_eq!(r.len(), 3);
    assert!(r.iter().all(|row| row["status"] == "completed"));
    let label = |i: usize, k: &str| f(&r[i]["labels"][k]);
    // No two overlap: each was sent after the one before ended.
    for i in 1..3 {
        let sent = f(&r[i]["arrivalMs"]) + label(i, "sendLagMs");
        assert!(sent >= f(&r[i - 1]["completedMs"]), "row {i}: {}", r[i]);
        assert!(label(i, "capWaitMs") > 0.0 && label(i, "capWaitMs") <= label(i, "sendLagMs"));
    }
    assert!(label(1, "sendLagMs") >= 200.0, "{}", r[1]);
    assert!(f(&r[1]["firstTokenMs"]) - 100.0 >= 300.0, "{}", r[1]);
    // The receipt keeps it open-loop evidence; gate says the cap.
    let receipt = receipt(&out);
    assert_eq!(receipt["contract"]["arrivalMode"], "open-loop");
    let gate = std::process::Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args([
            "gate",
            out.to_str().unwrap(),
            "--min-goodput",
            "0",
            "--allow-overload",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&gate.stdout);
    assert!(text.contains("= open-loop, ≤ 1 in flight"), "{text}");
    assert!(
        text.contains("capped open loop (≤ 1 in flight): an arrival that found the cap full"),
        "{text}"
    );
}
