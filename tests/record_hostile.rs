//! The recorder against servers that try to exhaust its memory or keep it
//! busy: an endless SSE line, an endless 200 document, an endless 500 body, a
//! flood of SSE comments, a 1 MiB response header, a body that trickles one
//! byte per second — and one that holds an event just under the bound on
//! every connection at once, to check the memory formula of
//! docs/reliability.md.
//!
//! Each server is a plain `TcpListener` on 127.0.0.1, port 0, one thread per
//! connection, started by the test. The recorder is the real binary, run as
//! a child so its peak resident memory is its own: `ru_maxrss` of `wait4(2)`
//! sampled from `/proc/PID/status` (`VmHWM`, the kernel's high-water mark)
//! every 5 ms while it runs. (`ru_maxrss` from `wait4(2)` would be simpler,
//! but a spawned child inherits the test process's own high-water mark at
//! `exec`, so it reads the larger of the two.) A watchdog kills the child
//! past 1.5 GB or past 60 s, so a regression fails the test instead of
//! eating the machine. Each run schedules 4 requests (constant 2/s for 2 s).
//! Shapes that end by the timeout get 3 s (and 4 s of grace, so every
//! request ends before the horizon); the endless shapes get 20 s, which costs
//! nothing once they end at their bound, and which left to run unbounded
//! lets them grow far past 100 MB.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::recording::{assert_no_lost_row, f, receipt, rows};
use serde_json::Value;

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// The flags every run shares: 4 requests.
const RUN: [&str; 8] = [
    "--request-rate",
    "2",
    "--arrival",
    "constant",
    "--duration",
    "2s",
    "--random-input-len",
    "16",
];
const SCHEDULED: usize = 4; // constant 2/s over 2 s, the first at 0
/// For shapes that end by the timeout: 3 s, and every request ends before
/// the horizon (the last arrives at 1.5 s).
const SHORT: [&str; 4] = ["--timeout", "3s", "--grace", "4s"];
/// For shapes that should end at a bound: time enough to fill 100 MB if
/// they do not.
const LONG: [&str; 4] = ["--timeout", "20s", "--grace", "21s"];

/// The bound the issue sets on the recorder's peak RSS against any shape.
const PEAK_LIMIT_KIB: u64 = 100 * KIB;
/// The watchdog: past this, the child is killed and the test fails.
const KILL_ABOVE_KIB: u64 = 1536 * KIB;
const KILL_AFTER: Duration = Duration::from_secs(60);
/// A server thread never outlives this, whatever the client does.
const SERVER_LIFETIME: Duration = Duration::from_secs(30);

/// What a hostile server answers to every request.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// 200 `text/event-stream`, then `data: ` and `a` forever, no newline.
    EndlessLine,
    /// 200 `application/json`, a document that never ends (no newline).
    EndlessBody,
    /// 500 `text/plain`, `0123456789` forever.
    EndlessErrorBody,
    /// 200 `text/event-stream`, `: keep-alive` comment lines forever.
    CommentFlood,
    /// 200 with one 1 MiB header, then a normal stream.
    HugeHeader,
    /// 200 `text/event-stream`, one token event sent one byte per second.
    Trickle,
    /// 200 `text/event-stream`, one data line of exactly `line_bytes` bytes
    /// (no newline), then silence until the client goes.
    HeldLine { line_bytes: usize },
    /// 503 with an empty body, at once: the run's fixed overhead.
    Unavailable,
}

/// Starts a server answering every request with `shape`; returns its URL.
fn serve(shape: Shape) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let url = format!("http://{}", listener.local_addr().expect("local addr"));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            std::thread::spawn(move || {
                let _ = answer(stream, shape);
            });
        }
    });
    url
}

/// Reads one request (head, then `Content-Length` bytes of body).
fn read_request(reader: &mut BufReader<TcpStream>) -> std::io::Result<()> {
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
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
    reader.read_exact(&mut body)
}

fn head(status: &str, content_type: &str) -> String {
    format!("HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nConnection: close\r\n\r\n")
}

/// Writes `chunk` until the client goes or the server's lifetime is over.
fn forever(stream: &mut TcpStream, chunk: &[u8]) -> std::io::Result<()> {
    let start = Instant::now();
    while start.elapsed() < SERVER_LIFETIME {
        stream.write_all(chunk)?;
    }
    Ok(())
}

const TOKEN: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";

fn answer(stream: TcpStream, shape: Shape) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut reader = BufReader::new(stream.try_clone()?);
    read_request(&mut reader)?;
    let mut out = stream;
    let sse = "text/event-stream";
    match shape {
        Shape::EndlessLine => {
            out.write_all(format!("{}data: ", head("200 OK", sse)).as_bytes())?;
            forever(&mut out, &[b'a'; 64 * 1024])
        }
        Shape::EndlessBody => {
            let doc = "{\"choices\":[{\"message\":{\"content\":\"";
            out.write_all(format!("{}{doc}", head("200 OK", "application/json")).as_bytes())?;
            forever(&mut out, &[b'b'; 64 * 1024])
        }
        Shape::EndlessErrorBody => {
            out.write_all(head("500 Internal Server Error", "text/plain").as_bytes())?;
            forever(&mut out, "0123456789".repeat(6554).as_bytes())
        }
        Shape::CommentFlood => {
            out.write_all(head("200 OK", sse).as_bytes())?;
            forever(&mut out, ": keep-alive\n".repeat(5000).as_bytes())
        }
        Shape::HugeHeader => {
            let pad = "x".repeat(MIB as usize);
            let text = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {sse}\r\nX-Pad: {pad}\r\nConnection: close\r\n\r\n{TOKEN}data: [DONE]\n\n"
            );
            out.write_all(text.as_bytes())
        }
        Shape::Trickle => {
            out.write_all(head("200 OK", sse).as_bytes())?;
            for byte in TOKEN.bytes() {
                out.write_all(&[byte])?;
                std::thread::sleep(Duration::from_secs(1));
            }
            Ok(())
        }
        Shape::HeldLine { line_bytes } => {
            let mut line = b"data: ".to_vec();
            line.resize(line_bytes, b'a');
            out.write_all(head("200 OK", sse).as_bytes())?;
            out.write_all(&line)?;
            // Silence until the client closes (read returns 0 or fails).
            let _ = reader.read(&mut [0u8; 1]);
            Ok(())
        }
        Shape::Unavailable => out.write_all(
            b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        ),
    }
}

/// One run of the real binary.
struct Run {
    /// Exit status (None when killed by the watchdog).
    code: Option<i32>,
    /// Peak resident memory of the child, KiB (its last `VmHWM`).
    peak_kib: u64,
    /// Why the watchdog killed it, if it did.
    killed: Option<String>,
    stderr: String,
    trace: Value,
    dir: tempfile::TempDir,
}

impl Run {
    fn out(&self) -> std::path::PathBuf {
        self.dir.path().join("t.json")
    }
}

/// The child's high-water mark of resident memory (`VmHWM`), KiB.
fn hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs `goodput record` against `url` with [`RUN`] and `extra`, as a child
/// whose peak RSS is its last `VmHWM` before it exits; the watchdog kills it
/// past [`KILL_ABOVE_KIB`] or [`KILL_AFTER`].
fn record_child(label: &str, url: &str, extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("t.json");
    let stderr_path = dir.path().join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args(["record", "--url", url, "--model", "sim", "--no-progress"])
        .args(RUN)
        .args(extra)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr_path).expect("stderr file"))
        .spawn()
        .expect("spawn goodput record");
    let start = Instant::now();
    let mut killed = None;
    let mut hwm_seen = 0;
    let status = loop {
        // Read before reaping: a process that has exited has no VmHWM.
        hwm_seen = hwm_seen.max(hwm_kib(child.id()).unwrap_or(0));
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if killed.is_none() {
            if hwm_seen > KILL_ABOVE_KIB {
                killed = Some(format!(
                    "peak RSS {hwm_seen} KiB passed the watchdog's limit"
                ));
            } else if start.elapsed() > KILL_AFTER {
                killed = Some(format!("still running after {KILL_AFTER:?}"));
            }
            if killed.is_some() {
                let _ = child.kill();
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let code = status.code();
    let peak_kib = hwm_seen;
    eprintln!(
        "{label}: peak RSS {peak_kib} KiB ({:.1} MB){}",
        peak_kib as f64 / 1024.0,
        killed
            .as_ref()
            .map(|k| format!(" — killed: {k}"))
            .unwrap_or_default()
    );
    let trace = std::fs::read(&out)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or(Value::Null);
    Run {
        code,
        peak_kib,
        killed,
        stderr: std::fs::read_to_string(&stderr_path).unwrap_or_default(),
        trace,
        dir,
    }
}

/// The shared checks: the run ended by itself, exit 0, under the memory
/// bound; every scheduled request is a failed row with `reason`.
fn assert_every_row_failed_with(run: &Run, reason: &str) {
    assert_eq!(run.killed, None, "stderr: {}", run.stderr);
    assert_eq!(run.code, Some(0), "stderr: {}", run.stderr);
    assert!(
        run.peak_kib < PEAK_LIMIT_KIB,
        "peak RSS {} KiB, limit {PEAK_LIMIT_KIB} KiB",
        run.peak_kib
    );
    assert_no_lost_row(&run.trace);
    let rows = rows(&run.trace);
    assert_eq!(rows.len(), SCHEDULED);
    for row in rows {
        assert_eq!(row["status"], "failed", "{row}");
        assert_eq!(row["reason"], reason, "{row}");
        assert!(row.get("completedMs").is_none(), "{row}");
        assert!(f(&row["endedMs"]) >= f(&row["arrivalMs"]), "{row}");
    }
    receipt(&run.out());
}

#[test]
fn an_endless_sse_line_ends_each_request_as_event_too_large() {
    let run = record_child("endless SSE line", &serve(Shape::EndlessLine), &LONG);
    assert_every_row_failed_with(&run, "event_too_large");
}

#[test]
fn an_endless_200_document_ends_each_request_as_body_too_large() {
    let run = record_child("endless 200 body", &serve(Shape::EndlessBody), &LONG);
    assert_every_row_failed_with(&run, "body_too_large");
    let text = "{\"choices\":[{\"message\":{\"content\":\"".to_owned() + &"b".repeat(165);
    assert_eq!(text.chars().count(), 200);
    for row in rows(&run.trace) {
        assert_eq!(row["labels"]["errorText"], text.as_str(), "{row}");
    }
}

#[test]
fn an_endless_500_body_is_http_500_with_its_first_200_characters() {
    let run = record_child("endless 500 body", &serve(Shape::EndlessErrorBody), &LONG);
    assert_every_row_failed_with(&run, "http_500");
    let text = "0123456789".repeat(20);
    for row in rows(&run.trace) {
        assert_eq!(row["labels"]["errorText"], text.as_str(), "{row}");
    }
}

#[test]
fn a_flood_of_sse_comments_ends_each_request_at_its_timeout() {
    let run = record_child("SSE comment flood", &serve(Shape::CommentFlood), &SHORT);
    assert_every_row_failed_with(&run, "timeout");
    for row in rows(&run.trace) {
        assert!(row.get("firstTokenMs").is_none(), "{row}");
        // The timeout counts from the scheduled arrival: 3 s.
        assert!(f(&row["endedMs"]) >= f(&row["arrivalMs"]) + 3000.0, "{row}");
    }
}

#[test]
fn a_one_mib_response_header_ends_each_request_as_headers_too_large() {
    let run = record_child("1 MiB response header", &serve(Shape::HugeHeader), &LONG);
    assert_every_row_failed_with(&run, "headers_too_large");
}

#[test]
fn a_body_that_trickles_one_byte_per_second_ends_at_the_timeout() {
    let run = record_child("trickle 1 B/s", &serve(Shape::Trickle), &SHORT);
    assert_every_row_failed_with(&run, "timeout");
    for row in rows(&run.trace) {
        assert!(row.get("firstTokenMs").is_none(), "{row}");
        assert!(f(&row["endedMs"]) >= f(&row["arrivalMs"]) + 3000.0, "{row}");
    }
}

/// The formula of docs/reliability.md, checked: with `k` requests each
/// holding a line of `N − 1` bytes at once, the peak stays within the fixed
/// overhead (measured: the same run against a server that answers 503 at
/// once) plus `k × (2 N + 160 KiB + request body)`.
#[test]
fn the_peak_stays_within_the_documented_formula_with_every_request_holding_an_event() {
    let max_event_bytes: u64 = 4 * MIB;
    let flag = max_event_bytes.to_string();
    let extra = [
        "--max-event-bytes",
        flag.as_str(),
        SHORT[0],
        SHORT[1],
        SHORT[2],
        SHORT[3],
    ];
    let fixed = record_child(
        "fixed overhead (503 at once)",
        &serve(Shape::Unavailable),
        &extra,
    );
    assert_every_row_failed_with(&fixed, "http_503");
    let held = Shape::HeldLine {
        line_bytes: max_event_bytes as usize - 1,
    };
    let run = record_child("4 held lines of 4 MiB - 1", &serve(held), &extra);
    assert_every_row_failed_with(&run, "timeout");
    // All four requests hold their line at once: the last arrives at 1.5 s,
    // the first times out at 3 s. A request body here is under 1 KiB.
    let per_request_kib = 2 * max_event_bytes / KIB + 160 + 1;
    let bound_kib = fixed.peak_kib + SCHEDULED as u64 * per_request_kib;
    eprintln!(
        "formula: {} KiB fixed + {SCHEDULED} × {per_request_kib} KiB = {bound_kib} KiB; measured {} KiB",
        fixed.peak_kib, run.peak_kib
    );
    assert!(
        run.peak_kib <= bound_kib,
        "peak {} KiB over the formula's {bound_kib} KiB",
        run.peak_kib
    );
    // And the lines were really held: the peak is above the fixed overhead
    // by at least half the four lines' bytes (a margin for the noise of the
    // fixed run's own peak).
    assert!(
        run.peak_kib >= fixed.peak_kib + SCHEDULED as u64 * max_event_bytes / KIB / 2,
        "peak {} KiB: the held lines did not show",
        run.peak_kib
    );
}
