//! Credentials against a server that echoes them back: every credential
//! the run is given — a Bearer token, Basic credentials, an API key, the user info and query of `--url` — must reach
//! no byte the recorder writes (trace, spool, summary, error lines), in any
//! form the server echoes it (raw, decoded, JSON-escaped, URL-encoded); and
//! the user info and query of `--url` must be sent (Basic auth, the query
//! on every request).
//!
//! Each server is a plain `TcpListener` on 127.0.0.1, port 0, one thread per
//! connection, answering every request with one canned response (keep-alive,
//! `Content-Length`) and keeping every request head it read. The recorder is
//! the real binary, run as a child; each test greps its stdout, its stderr
//! and every file left in its directory for each secret.

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use common::capture::{header, serve, Answer};

/// Runs `goodput record` (4 requests at 2/s) against `url` with `extra`
/// flags and `env`, output in `dir`.
fn record(url: &str, dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Output {
    let out = dir.join("t.json");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_goodput"));
    cmd.args(["record", "--url", url, "--model", "sim", "--out"])
        .arg(&out)
        .args([
            "--no-progress",
            "--request-rate",
            "2",
            "--arrival",
            "constant",
        ])
        .args([
            "--duration",
            "2s",
            "--random-input-len",
            "8",
            "--timeout",
            "5s",
        ])
        .args(extra)
        .env_remove("OPENAI_API_KEY");
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("run goodput")
}

/// Every byte the run wrote: stdout, stderr and each file in `dir`.
fn everything_written(output: &Output, dir: &Path) -> Vec<(String, String)> {
    let mut all = vec![
        (
            "stdout".to_owned(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
        ),
        (
            "stderr".to_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        ),
    ];
    for entry in std::fs::read_dir(dir).expect("read dir") {
        let path = entry.expect("entry").path();
        let bytes = std::fs::read(&path).expect("read file");
        all.push((
            path.display().to_string(),
            String::from_utf8_lossy(&bytes).into_owned(),
        ));
    }
    all
}

/// No secret in anything written; returns the trace.
fn assert_nowhere(output: &Output, dir: &Path, secrets: &[&str]) -> serde_json::Value {
    for (what, text) in everything_written(output, dir) {
        for secret in secrets {
            assert!(
                !text.contains(secret),
                "{secret} leaked into {what}:\n{text}"
            );
        }
    }
    let trace = std::fs::read(dir.join("t.json")).unwrap_or_default();
    serde_json::from_slice(&trace).unwrap_or(serde_json::Value::Null)
}

/// The `errorText` labels of the trace's rows.
fn error_texts(trace: &serde_json::Value) -> Vec<String> {
    trace["rows"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r["labels"]["errorText"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_bearer_token_echoed_in_a_500_body_reaches_no_file_and_no_summary() {
    let (url, _) = serve(Answer {
        status: "500 Internal Server Error",
        content_type: "text/plain",
        body: |_| "invalid credentials: SECRET123".into(),
    });
    let dir = tempfile::tempdir().unwrap();
    let out = record(
        &url,
        dir.path(),
        &["-H", "Authorization: Bearer SECRET123"],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = assert_nowhere(&out, dir.path(), &["SECRET123"]);
    let texts = error_texts(&trace);
    assert_eq!(texts.len(), 4, "{trace}");
    assert!(
        texts.iter().all(|t| t == "invalid credentials: [redacted]"),
        "{texts:?}"
    );
}

#[test]
fn a_401_in_the_preflight_quotes_the_server_without_the_token() {
    let (url, _) = serve(Answer {
        status: "401 Unauthorized",
        content_type: "application/json",
        body: |_| r#"{"error":"invalid credentials: SECRET123"}"#.into(),
    });
    let dir = tempfile::tempdir().unwrap();
    let out = record(
        &url,
        dir.path(),
        &["-H", "Authorization: Bearer SECRET123"],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_nowhere(&out, dir.path(), &["SECRET123"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"answered 401 ("{"error":"invalid credentials: [redacted]"}")"#),
        "{stderr}"
    );
}

#[test]
fn decoded_basic_credentials_in_an_sse_error_event_are_redacted() {
    // base64("alice:SECRET123") = "YWxpY2U6U0VDUkVUMTIz".
    let (url, heads) = serve(Answer {
        status: "200 OK",
        content_type: "text/event-stream",
        body: |_| {
            "data: {\"object\":\"error\",\"message\":\"invalid credentials: alice:SECRET123\"}\n\n"
                .into()
        },
    });
    let dir = tempfile::tempdir().unwrap();
    let auth = "Authorization: Basic YWxpY2U6U0VDUkVUMTIz";
    let out = record(&url, dir.path(), &["-H", auth], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let trace = assert_nowhere(
        &out,
        dir.path(),
        &["SECRET123", "alice", "YWxpY2U6U0VDUkVUMTIz"],
    );
    let texts = error_texts(&trace);
    assert_eq!(texts.len(), 4, "{trace}");
    assert!(
        texts.iter().all(|t| t == "invalid credentials: [redacted]"),
        "{texts:?}"
    );
    let heads = heads.lock().unwrap();
    assert!(heads
        .iter()
        .all(|h| header(h, "authorization") == Some("Basic YWxpY2U6U0VDUkVUMTIz")));
}

#[test]
fn a_json_escaped_api_key_and_its_url_encoded_form_are_redacted() {
    let (url, heads) = serve(Answer {
        status: "302 Found",
        content_type: "application/json",
        body: |_| {
            r#"{"error":"bad key sk-AB\/CD+EF==","location":"/login?key=sk-AB%2FCD%2BEF%3D%3D"}"#
                .into()
        },
    });
    let dir = tempfile::tempdir().unwrap();
    let key = [("GOODPUT_TEST_KEY", "sk-AB/CD+EF==")];
    let out = record(
        &url,
        dir.path(),
        &["--api-key-env", "GOODPUT_TEST_KEY"],
        &key,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let secrets = [
        "sk-AB/CD+EF==",
        r"sk-AB\/CD+EF==",
        "sk-AB%2FCD%2BEF%3D%3D",
        "CD+EF",
        "CD%2B",
    ];
    let trace = assert_nowhere(&out, dir.path(), &secrets);
    let texts = error_texts(&trace);
    assert_eq!(texts.len(), 4, "{trace}");
    assert!(
        texts
            .iter()
            .all(|t| t == r#"{"error":"bad key [redacted]","location":"/login?key=[redacted]"}"#),
        "{texts:?}"
    );
    let heads = heads.lock().unwrap();
    assert!(heads
        .iter()
        .all(|h| header(h, "authorization") == Some("Bearer sk-AB/CD+EF==")));
}

#[test]
fn user_info_goes_as_basic_auth_and_the_query_with_every_request_and_neither_is_written() {
    // The server echoes the request line (with its query) and the credentials.
    let (url, heads) = serve(Answer {
        status: "500 Internal Server Error",
        content_type: "text/plain",
        body: |head| {
            let line = head.lines().next().unwrap_or_default().to_owned();
            let auth = header(head, "authorization").unwrap_or_default().to_owned();
            format!("denied {line} for {auth} (alice:PASSWD1, key QSECRET)")
        },
    });
    let with_credentials = url.replacen("http://", "http://alice:PASSWD1@", 1) + "/gen?key=QSECRET";
    let dir = tempfile::tempdir().unwrap();
    let out = record(&with_credentials, dir.path(), &[], &[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // base64("alice:PASSWD1") = "YWxpY2U6UEFTU1dEMQ==".
    let secrets = ["PASSWD1", "QSECRET", "alice", "YWxpY2U6UEFTU1dEMQ"];
    let trace = assert_nowhere(&out, dir.path(), &secrets);
    let texts = error_texts(&trace);
    assert_eq!(texts.len(), 4, "{trace}");
    assert!(
        texts.iter().all(|t| t
            == "denied POST /gen?key=[redacted] HTTP/1.1 for [redacted] ([redacted], key [redacted])"),
        "{texts:?}"
    );
    assert_eq!(trace["workload"]["endpoint"], "/gen");
    let heads = heads.lock().unwrap();
    // The preflight's GET /v1/models and one-token POST, then the 4 requests.
    assert_eq!(heads.len(), 6, "{heads:?}");
    assert!(
        heads[0].starts_with("GET /v1/models?key=QSECRET HTTP/1.1\r\n"),
        "{heads:?}"
    );
    for head in &heads[1..] {
        assert!(
            head.starts_with("POST /gen?key=QSECRET HTTP/1.1\r\n"),
            "{head}"
        );
    }
    assert!(heads
        .iter()
        .all(|h| header(h, "authorization") == Some("Basic YWxpY2U6UEFTU1dEMQ==")));
}

#[test]
fn a_preflight_error_prints_the_url_without_user_info_or_query() {
    // A port nothing listens on: bind one, then close it.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://alice:PASSWD1@127.0.0.1:{port}/gen?key=QSECRET");
    let dir = tempfile::tempdir().unwrap();
    let out = record(&url, dir.path(), &[], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_nowhere(&out, dir.path(), &["PASSWD1", "QSECRET", "alice"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "cannot reach http://127.0.0.1:{port}/v1/models?…: connection refused"
        )),
        "{stderr}"
    );
    // A malformed URL is quoted without them too.
    let out = record(
        "http://alice:PASSWD1@h/ g?key=QSECRET",
        dir.path(),
        &[],
        &[],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_nowhere(&out, dir.path(), &["PASSWD1", "QSECRET", "alice"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--url `http://h/ g?…` is not a URL ("),
        "{stderr}"
    );
}

#[test]
fn user_info_beside_an_api_key_is_a_usage_error_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    let out = record(
        "http://alice:PASSWD1@127.0.0.1:9/gen",
        dir.path(),
        &[],
        &[("OPENAI_API_KEY", "sk-other")],
    );
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "--url has user info (sent as HTTP Basic auth) and the API key (--api-key-env) \
             gives a credential too: give one of them"
        ),
        "{stderr}"
    );
    assert_nowhere(&out, dir.path(), &["PASSWD1", "sk-other"]);
}

#[test]
fn the_spool_of_a_running_recording_holds_no_secret() {
    let (url, _) = serve(Answer {
        status: "500 Internal Server Error",
        content_type: "text/plain",
        body: |_| "invalid credentials: SECRET123 (Bearer SECRET123)".into(),
    });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_goodput"))
        .args(["record", "--url", &url, "--model", "sim", "--out"])
        .arg(&out)
        .args(["--no-progress", "--request-rate", "20", "--duration", "60s"])
        .args([
            "--random-input-len",
            "8",
            "-H",
            "Authorization: Bearer SECRET123",
        ])
        .env_remove("OPENAI_API_KEY")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn goodput");
    let spool = dir.path().join("t.json.spool");
    // Wait (bounded) until rows with the server's text are in the spool.
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        let text = std::fs::read_to_string(&spool).unwrap_or_default();
        if text.matches("errorText").count() >= 3 || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        text.contains("invalid credentials: [redacted] ([redacted])"),
        "{text}"
    );
    assert!(!text.contains("SECRET123"), "{text}");
}
