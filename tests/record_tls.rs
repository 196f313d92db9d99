//! End-to-end on 127.0.0.1: `goodput sim` behind TLS and a header gate →
//! `goodput record` over https with headers, `--extra-body` and the
//! preflight. Certificates are made here, by rcgen: a CA, a server
//! certificate it signs for 127.0.0.1, an expired one, and a second,
//! unrelated CA. Every run is a fraction of a second of load.

mod common;

use std::path::{Path, PathBuf};

use common::recording::{assert_no_lost_row, receipt, record, rows};
use goodput_sim::engine::EngineParams;
use goodput_sim::tls::{server_config, Front, RequiredHeader};
use goodput_sim::{SimConfig, SimServer};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use serde_json::Value;

/// The PEM files of one test: `ca.pem`, `other-ca.pem`, and the server's
/// `good.pem`/`good.key` and `expired.pem`/`expired.key`.
struct Pki {
    dir: tempfile::TempDir,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let ca = |name: &str| {
            let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
            params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            params.distinguished_name.push(DnType::CommonName, name);
            let key = KeyPair::generate().unwrap();
            let cert = params.self_signed(&key).unwrap();
            (cert, key)
        };
        let (ca_cert, ca_key) = ca("goodput test CA");
        let (other_cert, _) = ca("another CA");
        let leaf = |expired: bool| {
            let mut params =
                CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
                    .unwrap();
            if expired {
                params.not_before = rcgen::date_time_ymd(2000, 1, 1);
                params.not_after = rcgen::date_time_ymd(2001, 1, 1);
            }
            let key = KeyPair::generate().unwrap();
            let cert = params.signed_by(&key, &ca_cert, &ca_key).unwrap();
            (cert.pem(), key.serialize_pem())
        };
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("ca.pem", &ca_cert.pem());
        // Self-signed server certificates, the server's own trust: one
        // marked CA:TRUE as `openssl req -x509` makes it (rustls' chain check
        // refuses it as CaUsedAsEndEntity), one CA:FALSE, one for another
        // name only, and one unrelated to any server here.
        let self_signed = |name: &str, ca: bool, san: &str| {
            let mut params = CertificateParams::new(vec![san.to_owned()]).unwrap();
            if ca {
                params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
            }
            params
                .distinguished_name
                .push(DnType::CommonName, "localhost");
            let key = KeyPair::generate().unwrap();
            let cert = params.self_signed(&key).unwrap();
            write(&format!("{name}.pem"), &cert.pem());
            write(&format!("{name}.key"), &key.serialize_pem());
        };
        self_signed("self-ca", true, "127.0.0.1");
        self_signed("self-leaf", false, "127.0.0.1");
        self_signed("self-other-name", true, "example.com");
        self_signed("self-unrelated", true, "127.0.0.1");
        write("other-ca.pem", &other_cert.pem());
        let (good, good_key) = leaf(false);
        write("good.pem", &good);
        write("good.key", &good_key);
        let (old, old_key) = leaf(true);
        write("expired.pem", &old);
        write("expired.key", &old_key);
        Pki { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn arg(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }
}

fn config() -> SimConfig {
    SimConfig {
        engine: EngineParams {
            max_batch: 64,
            prefill_ms_per_1k_tokens: 0.0,
            decode_step_ms: 1.0,
            decode_ms_per_seq: 0.0,
        },
        output_tokens: (4.0, 0.0),
        faults: vec![],
        seed: 1,
        model_name: "sim".into(),
        also_served: vec![],
        quirks: Default::default(),
        tokenizer: None,
    }
}

/// A sim serving TLS with `cert`/`key` of `pki`, demanding `header` if given.
fn tls_sim(pki: &Pki, cert: &str, header: Option<&str>) -> SimServer {
    let front = Front {
        tls: Some(
            server_config(
                &pki.path(&format!("{cert}.pem")),
                &pki.path(&format!("{cert}.key")),
            )
            .unwrap(),
        ),
        require_header: header.map(|h| RequiredHeader::parse(h).unwrap()),
    };
    SimServer::start_with(config(), front, 1).unwrap()
}

/// Ten requests in 0.5 s (constant arrivals), a second of grace.
const LOAD: [&str; 8] = [
    "--request-rate",
    "20",
    "--arrival",
    "constant",
    "--duration",
    "0.5s",
    "--grace",
    "1s",
];

fn run(url: &str, out: &Path, extra: &[&str]) -> (i32, String, Value) {
    let mut args: Vec<&str> = LOAD.to_vec();
    args.extend_from_slice(extra);
    record(url, out, &args)
}

fn reasons(trace: &Value) -> Vec<String> {
    rows(trace)
        .iter()
        .map(|r| r["reason"].as_str().unwrap_or("-").to_owned())
        .collect()
}

#[test]
fn https_with_a_private_ca_a_header_and_extra_body_records_every_request() {
    let pki = Pki::new();
    let server = tls_sim(&pki, "good", Some("X-Gateway-Key: gw-secret-8d1f"));
    assert!(server.url().starts_with("https://127.0.0.1:"));
    let out = pki.path("t.json");
    let cacert = pki.arg("ca.pem");
    let (code, output, trace) = run(
        &server.url(),
        &out,
        &[
            "--cacert",
            &cacert,
            "-H",
            "X-Gateway-Key: gw-secret-8d1f",
            "--header",
            "X-Tenant: team-a",
            "--extra-body",
            r#"{"temperature": 0.5, "top_p": 0.9}"#,
        ],
    );
    assert_eq!(code, 0, "{output}");
    assert_no_lost_row(&trace);
    assert_eq!(rows(&trace).len(), 10);
    assert!(rows(&trace).iter().all(|r| r["status"] == "completed"));
    let w = &trace["workload"];
    assert_eq!(w["tls"], "cacert");
    assert_eq!(w.get("insecure"), None);
    assert_eq!(w["headers"], "x-gateway-key,x-tenant");
    assert_eq!(w["extraBody"], r#"{"temperature":0.5,"top_p":0.9}"#);
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(!text.contains("gw-secret-8d1f") && !text.contains("team-a"));
    assert!(!output.contains("gw-secret-8d1f"));
    receipt(&out);
}

#[test]
fn a_certificate_from_another_ca_stops_the_preflight_and_fails_rows_as_tls_certificate() {
    let pki = Pki::new();
    let server = tls_sim(&pki, "good", None);
    let out = pki.path("t.json");
    let other = pki.arg("other-ca.pem");
    let (code, message, trace) = run(&server.url(), &out, &["--cacert", &other]);
    assert_eq!(code, 2);
    assert!(
        message.starts_with(&format!(
            "preflight: TLS certificate not trusted: the server's certificate is not in {other} \
             and not signed by a CA in it (UnknownIssuer): pass the server's own certificate or \
             the CA that signed it at {}/v1/models",
            server.url()
        )),
        "{message}"
    );
    assert_eq!(trace, Value::Null, "no trace is written");

    let (code, summary, trace) = run(&server.url(), &out, &["--cacert", &other, "--no-preflight"]);
    assert_eq!(code, 0);
    assert_eq!(reasons(&trace), vec!["tls_certificate"; 10]);
    assert!(
        summary.starts_with("most requests failed: 10 of 10 rows ended tls_certificate\n"),
        "{summary}"
    );
    receipt(&out);
}

#[test]
fn cacert_pins_a_self_signed_server_certificate_and_still_refuses_any_other() {
    let pki = Pki::new();
    for cert in ["self-ca", "self-leaf"] {
        let server = tls_sim(&pki, cert, None);
        let out = pki.path(&format!("{cert}.json"));
        let own = pki.arg(&format!("{cert}.pem"));
        let (code, output, trace) = run(&server.url(), &out, &["--cacert", &own]);
        assert_eq!(code, 0, "{cert}: {output}");
        assert_eq!(rows(&trace).len(), 10);
        assert!(rows(&trace).iter().all(|r| r["status"] == "completed"));
        assert_eq!(trace["workload"]["tls"], "cacert");
    }
    // Another self-signed certificate is neither the server's nor its CA.
    let server = tls_sim(&pki, "self-ca", None);
    let out = pki.path("t.json");
    let wrong = pki.arg("self-unrelated.pem");
    let (code, message, trace) = run(&server.url(), &out, &["--cacert", &wrong]);
    assert_eq!(code, 2);
    assert!(
        message.starts_with(&format!(
            "preflight: TLS certificate not trusted: the server's certificate is not in {wrong} \
             and not signed by a CA in it (CaUsedAsEndEntity): pass the server's own \
             certificate or the CA that signed it at {}/v1/models",
            server.url()
        )),
        "{message}"
    );
    assert_eq!(trace, Value::Null);
    // The server's own certificate, for a name it was not reached by.
    let server = tls_sim(&pki, "self-other-name", None);
    let own = pki.arg("self-other-name.pem");
    let (code, message, _) = run(&server.url(), &out, &["--cacert", &own]);
    assert_eq!(code, 2);
    assert!(
        message.starts_with(&format!(
            "preflight: TLS certificate not trusted: the server's certificate is the one in \
             {own} but not for the name it was reached by"
        )),
        "{message}"
    );
}

#[test]
fn an_expired_certificate_is_a_tls_certificate_failure_and_insecure_accepts_it() {
    let pki = Pki::new();
    let server = tls_sim(&pki, "expired", None);
    let out = pki.path("t.json");
    let ca = pki.arg("ca.pem");
    let (code, message, _) = run(&server.url(), &out, &["--cacert", &ca]);
    assert_eq!(code, 2);
    assert!(
        message.starts_with(&format!(
            "preflight: TLS certificate not trusted: the server's certificate is signed by \
                      a CA in {ca} but not valid: invalid peer certificate: certificate expired"
        )),
        "{message}"
    );
    let (code, _, trace) = run(&server.url(), &out, &["--cacert", &ca, "--no-preflight"]);
    assert_eq!(code, 0);
    assert_eq!(reasons(&trace), vec!["tls_certificate"; 10]);

    // --insecure accepts it, and the trace says so.
    let (code, output, trace) = run(&server.url(), &out, &["--insecure"]);
    assert_eq!(code, 0, "{output}");
    assert!(rows(&trace).iter().all(|r| r["status"] == "completed"));
    assert_eq!(trace["workload"]["insecure"], true);
    assert_eq!(trace["workload"]["tls"], "insecure");
}

#[test]
fn https_to_a_plain_http_server_is_a_tls_handshake_failure() {
    let server = SimServer::start(config(), 1).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let url = server.url().replace("http://", "https://");
    let (code, message, trace) = run(&url, &out, &["--insecure"]);
    assert_eq!(code, 2);
    assert!(
        message.starts_with("preflight: TLS handshake failed: "),
        "{message}"
    );
    assert_eq!(trace, Value::Null);
    let (code, _, trace) = run(&url, &out, &["--insecure", "--no-preflight"]);
    assert_eq!(code, 0);
    assert_eq!(reasons(&trace), vec!["tls_handshake"; 10]);
}

#[test]
fn a_missing_header_stops_the_preflight_with_the_url_and_no_trace() {
    let pki = Pki::new();
    let server = tls_sim(&pki, "good", Some("X-Gateway-Key: right-value"));
    let out = pki.path("t.json");
    let ca = pki.arg("ca.pem");
    let (code, message, trace) = run(&server.url(), &out, &["--cacert", &ca]);
    assert_eq!(code, 2);
    // The sim's 401 body is 220 characters: the line quotes its first 200.
    let body =
        "{\"object\":\"error\",\"error\":{\"message\":\"missing or wrong x-gateway-key header \
                (got none; authorization none)\",\"type\":\"sim_error\",\"code\":401},\"message\":\
                \"missing or wrong x-gateway-key header (got none; authorization none)\"}";
    assert_eq!(body.chars().count(), 220);
    let quoted: String = body.chars().take(200).collect();
    assert_eq!(
        message,
        format!(
            "preflight: {}/v1/models answered 401 (\"{quoted}\"): check the API key (--api-key-env) or --header",
            server.url()
        )
    );
    assert_eq!(trace, Value::Null);
    assert!(!out.exists());
}

#[test]
fn header_values_and_the_key_echoed_by_the_server_are_redacted_everywhere() {
    let pki = Pki::new();
    // The sim echoes the x-gateway-key and authorization values it gets.
    let server = tls_sim(&pki, "good", Some("X-Gateway-Key: right-value"));
    let out = pki.path("t.json");
    let ca = pki.arg("ca.pem");
    // SAFETY: no other test of this binary reads this variable.
    unsafe { std::env::set_var("GOODPUT_TLS_TEST_KEY", "sk-live-51c0ffee") };
    let common = [
        "--cacert",
        &ca,
        "--api-key-env",
        "GOODPUT_TLS_TEST_KEY",
        "-H",
        "X-Gateway-Key: wrong-secret-7a7a",
    ];

    // The preflight's one line carries the server's text, redacted.
    let (code, message, _) = run(&server.url(), &out, &common);
    assert_eq!(code, 2);
    assert!(
        message.contains("(got \\\"[redacted]\\\"; authorization \\\"Bearer [redacted]\\\")"),
        "{message}"
    );
    assert!(!message.contains("wrong-secret-7a7a") && !message.contains("sk-live-51c0ffee"));

    // Without it, every row fails http_401 with the redacted text as a label.
    let mut args = common.to_vec();
    args.push("--no-preflight");
    let (code, summary, trace) = run(&server.url(), &out, &args);
    assert_eq!(code, 0);
    assert_eq!(reasons(&trace), vec!["http_401"; 10]);
    // The sim's 401 body, redacted, is longer than 200 characters: the
    // label is its first 200.
    let full = "{\"object\":\"error\",\"error\":{\"message\":\"missing or wrong x-gateway-key header \
                (got \\\"[redacted]\\\"; authorization \\\"Bearer [redacted]\\\")\",\"type\":\"sim_error\",\
                \"code\":401},\"message\":\"missing or wrong x-gateway-key header (got \\\"[redacted]\\\"; \
                authorization \\\"Bearer [redacted]\\\")\"}";
    assert!(full.chars().count() > 200);
    let label: String = full.chars().take(200).collect();
    for row in rows(&trace) {
        assert_eq!(row["labels"]["errorText"], label.as_str());
    }
    assert!(
        summary.starts_with("most requests failed: 10 of 10 rows ended http_401 (server said: ")
    );
    let text = std::fs::read_to_string(&out).unwrap();
    for secret in ["wrong-secret-7a7a", "sk-live-51c0ffee", "right-value"] {
        assert!(!text.contains(secret), "{secret} reached the trace");
        assert!(!summary.contains(secret), "{secret} reached the summary");
    }
    assert_eq!(trace["workload"]["headers"], "authorization,x-gateway-key");
    receipt(&out);
}

#[test]
fn an_http_error_body_becomes_the_row_label() {
    let config = SimConfig {
        faults: vec![goodput_sim::fault::parse_fault("http500:1").unwrap()],
        ..config()
    };
    let server = SimServer::start(config, 1).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, _, trace) = run(&server.url(), &out, &[]);
    assert_eq!(code, 0);
    for row in rows(&trace) {
        assert_eq!(row["reason"], "http_500");
        assert_eq!(
            row["labels"]["errorText"],
            "{\"object\":\"error\",\"error\":{\"message\":\"injected fault\",\"type\":\"sim_error\",\"code\":500},\"message\":\"injected fault\"}"
        );
    }
}

#[test]
fn a_dead_server_or_a_missing_endpoint_stops_before_any_trace() {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, message, _) = run(&format!("http://127.0.0.1:{port}"), &out, &[]);
    assert_eq!(code, 2);
    assert_eq!(
        message,
        format!(
            "preflight: cannot reach http://127.0.0.1:{port}/v1/models: connection refused \
             (check --url; --no-preflight skips this check)"
        )
    );
    assert!(!out.exists());

    // /v1/models answers, but the custom endpoint path does not exist.
    let server = SimServer::start(config(), 1).unwrap();
    let (code, message, _) = run(&format!("{}/custom/generate", server.url()), &out, &[]);
    assert_eq!(code, 2);
    assert!(
        message.starts_with(&format!(
            "preflight: {}/custom/generate answered 404 Not Found (\"",
            server.url()
        )),
        "{message}"
    );
    assert!(!out.exists());
}

#[test]
fn extra_body_keys_the_recorder_sets_are_refused_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.json");
    let (code, message, _) = run(
        "http://127.0.0.1:9",
        &out,
        &["--extra-body", r#"{"stream": false}"#],
    );
    assert_eq!(code, 2);
    assert_eq!(
        message,
        "usage: --extra-body: `stream` is set by the recorder itself and cannot be overridden \
         (it always sets model, messages, prompt, stream, stream_options)"
    );
}

#[test]
fn metrics_are_scraped_over_https_with_the_runs_trust_and_headers_only_at_the_servers_origin() {
    let pki = Pki::new();
    let server = tls_sim(&pki, "good", Some("X-Gateway-Key: gw-metrics-3e3e"));
    let cacert = pki.arg("ca.pem");
    let gate = ["-H", "X-Gateway-Key: gw-metrics-3e3e"];
    let sidecar = |out: &Path| {
        let bytes = std::fs::read(out.with_extension("metrics.jsonl")).unwrap();
        goodput_core::server_metrics::parse_sidecar(&bytes).unwrap()
    };

    // Default endpoint: /metrics on the server's own https origin, through
    // the private CA, carrying the gate header: every scrape is a snapshot.
    let out = pki.path("t.json");
    let mut args = vec![
        "--cacert",
        &cacert,
        "--metrics",
        "--metrics-interval",
        "100ms",
    ];
    args.extend_from_slice(&gate);
    let (code, output, trace) = run(&server.url(), &out, &args);
    assert_eq!(code, 0, "{output}");
    assert_eq!(
        trace["workload"]["metricsUrl"],
        format!("{}/metrics", server.url()).as_str()
    );
    let lines = sidecar(&out);
    // 1.5 s of run at 100 ms: at least a few scrapes, whatever the load.
    assert!(lines.len() >= 3, "{lines:?}");
    assert!(lines.iter().all(|l| l.error.is_none()), "{lines:?}");
    assert!(
        lines.iter().all(|l| l.mapped.running.is_some()),
        "{lines:?}"
    );

    // Another origin (same host, another port, plain http) demanding the
    // same header: the run's headers are not sent there, so every scrape
    // is a 401 gap, and the run itself is unaffected.
    let other = SimServer::start_with(
        config(),
        Front {
            tls: None,
            require_header: Some(RequiredHeader::parse("X-Gateway-Key: gw-metrics-3e3e").unwrap()),
        },
        1,
    )
    .unwrap();
    let out = pki.path("u.json");
    let metrics_url = format!("{}/metrics", other.url());
    let mut args = vec![
        "--cacert",
        &cacert,
        "--metrics",
        "--metrics-interval",
        "100ms",
        "--metrics-url",
        &metrics_url,
    ];
    args.extend_from_slice(&gate);
    let (code, output, trace) = run(&server.url(), &out, &args);
    assert_eq!(code, 0, "{output}");
    assert!(rows(&trace).iter().all(|r| r["status"] == "completed"));
    let lines = sidecar(&out);
    assert!(!lines.is_empty());
    assert!(
        lines.iter().all(|l| l.error.as_deref() == Some("HTTP 401")),
        "{lines:?}"
    );
    let text = std::fs::read_to_string(out.with_extension("metrics.jsonl")).unwrap();
    assert!(!text.contains("gw-metrics-3e3e"));
}
