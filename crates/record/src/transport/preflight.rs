//! The preflight: one look at the server before the schedule starts, so a
//! wrong URL, a dead server, a TLS problem or a missing credential is one
//! clear line and exit status 2 — before any trace is written — instead of
//! a trace full of identical failures.
//!
//! Steps, with the run's own headers, key and TLS settings:
//! 1. `GET /v1/models` (beside the endpoint: the endpoint's path up to its
//!    `/v1`, else the server root's `/v1/models`). A 2xx answer passes when
//!    the endpoint is the standard one beside it (`…/v1/chat/completions`
//!    or `…/v1/completions`): nothing is generated.
//! 2. Otherwise (any other answer but 401/403, or a custom endpoint path,
//!    which `/v1/models` says nothing about) a one-token request goes to the
//!    endpoint itself (`max_tokens: 1`, a fixed one-word prompt). Any answer
//!    other than 401, 403 or 404 passes: a busy server (429, 503) is what a
//!    load test measures, not a setup mistake.
//!
//! Stops: unreachable (refused, no route, closed before answering), a TLS
//! failure, 401/403 at either step, 404 at step 2, or no answer within
//! [`PREFLIGHT_TIMEOUT`] (or `--timeout`, when shorter). The line names the
//! URL (without user info or query: [`public_url`]) and, for an HTTP answer, the server's own error text, redacted like
//! row labels. `--no-preflight` skips all of it.

use std::time::Duration;

use bytes::Bytes;
use hyper::Uri;

use crate::transport::client::{Head, HyperTransport, SendError};
use crate::transport::endpoint::public_url;
use crate::transport::error_text::{read_head, Secrets};
use crate::transport::tls::TlsFailure;

/// The longest the preflight waits for one answer.
pub const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(10);

/// What one probe got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// An HTTP answer, with the redacted error text of a non-2xx body.
    Status(u16, Option<String>),
    /// No response head.
    Failed(SendError),
    /// No response head in time.
    TimedOut,
}

/// Why the recording does not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PreflightError {
    /// The server could not be reached.
    #[error("cannot reach {url}: {why} (check --url; --no-preflight skips this check)")]
    Unreachable {
        /// The probed URL.
        url: String,
        /// What happened.
        why: String,
    },
    /// TLS failed.
    #[error(
        "{failure} at {url} (--cacert FILE trusts a private CA; --insecure skips verification)"
    )]
    Tls {
        /// The probed URL.
        url: String,
        /// Certificate or handshake.
        failure: TlsFailure,
    },
    /// 401 or 403.
    #[error("{url} answered {status}{}: check the API key (--api-key-env) or --header", text_suffix(.text))]
    Denied {
        /// The probed URL.
        url: String,
        /// 401 or 403.
        status: u16,
        /// The server's error text, redacted.
        text: Option<String>,
    },
    /// 404 on the endpoint.
    #[error("{url} answered 404 Not Found{}: check --url and --api", text_suffix(.text))]
    NotFound {
        /// The endpoint.
        url: String,
        /// The server's error text, redacted.
        text: Option<String>,
    },
    /// Nothing came back in time.
    #[error("no answer from {url} within {} s (--no-preflight skips this check)", *.wait_ms as f64 / 1000.0)]
    NoAnswer {
        /// The probed URL.
        url: String,
        /// The wait, ms.
        wait_ms: u64,
    },
}

fn text_suffix(text: &Option<String>) -> String {
    text.as_ref()
        .map(|t| format!(" (\"{t}\")"))
        .unwrap_or_default()
}

/// What to do after a probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// The server is there and lets us in.
    Pass,
    /// Try the one-token request.
    Fallback,
    /// Stop with this error.
    Stop(PreflightError),
}

fn unreachable_or_tls(url: &str, probe: &Probe, wait: Duration) -> Option<PreflightError> {
    let url = url.to_owned();
    match probe {
        Probe::Failed(SendError::Tls(failure)) => Some(PreflightError::Tls {
            url,
            failure: failure.clone(),
        }),
        Probe::Failed(SendError::Refused) => Some(PreflightError::Unreachable {
            url,
            why: "connection refused".into(),
        }),
        Probe::Failed(SendError::Connect(why)) => Some(PreflightError::Unreachable {
            url,
            why: why.clone(),
        }),
        Probe::Failed(SendError::Disconnected(why)) => Some(PreflightError::Unreachable {
            url,
            why: format!("the connection closed before an answer ({why})"),
        }),
        Probe::TimedOut => Some(PreflightError::NoAnswer {
            url,
            wait_ms: wait.as_millis() as u64,
        }),
        // The run itself records it (`headers_too_large`), row by row.
        Probe::Failed(SendError::HeadTooLarge) | Probe::Status(..) => None,
    }
}

/// Judges the `/v1/models` probe (pure); `standard` says whether the
/// endpoint is the standard path beside it.
pub fn judge_models(url: &str, probe: &Probe, standard: bool, wait: Duration) -> Step {
    if let Some(e) = unreachable_or_tls(url, probe, wait) {
        return Step::Stop(e);
    }
    match probe {
        Probe::Status(200..=299, _) if standard => Step::Pass,
        Probe::Status(status @ (401 | 403), text) => Step::Stop(PreflightError::Denied {
            url: url.to_owned(),
            status: *status,
            text: text.clone(),
        }),
        _ => Step::Fallback,
    }
}

/// Judges the one-token probe of the endpoint (pure).
pub fn judge_endpoint(url: &str, probe: &Probe, wait: Duration) -> Result<(), PreflightError> {
    if let Some(e) = unreachable_or_tls(url, probe, wait) {
        return Err(e);
    }
    match probe {
        Probe::Status(status @ (401 | 403), text) => Err(PreflightError::Denied {
            url: url.to_owned(),
            status: *status,
            text: text.clone(),
        }),
        Probe::Status(404, text) => Err(PreflightError::NotFound {
            url: url.to_owned(),
            text: text.clone(),
        }),
        _ => Ok(()),
    }
}

/// Whether the endpoint is `…/v1/chat/completions` or `…/v1/completions`.
pub fn standard_endpoint(endpoint: &Uri) -> bool {
    let path = endpoint.path();
    path.ends_with("/v1/chat/completions") || path.ends_with("/v1/completions")
}

/// `/v1/models` beside the endpoint.
pub fn models_uri(endpoint: &Uri) -> Uri {
    let path = endpoint.path();
    let base = match path.find("/v1/") {
        Some(i) => &path[..i],
        None => path.strip_suffix("/v1").unwrap_or(""),
    };
    // The endpoint's query goes along (`?api-version=…`, `?key=…`).
    let query = endpoint
        .query()
        .map(|q| format!("?{q}"))
        .unwrap_or_default();
    let mut parts = endpoint.clone().into_parts();
    parts.path_and_query = format!("{base}/v1/models{query}").parse().ok();
    Uri::from_parts(parts).unwrap_or_else(|_| endpoint.clone())
}

async fn probe(
    request: impl std::future::Future<
        Output = Result<(Head, crate::transport::client::HyperBody), SendError>,
    >,
    wait: Duration,
    secrets: &Secrets,
) -> Probe {
    match tokio::time::timeout(wait, request).await {
        Err(_) => Probe::TimedOut,
        Ok(Err(e)) => Probe::Failed(redact_send_error(e, secrets)),
        Ok(Ok((head, mut body))) => {
            let status = head.status;
            let text = if (200..300).contains(&status) {
                None
            } else {
                // One request, before the run: it may take the whole wait.
                read_head(&mut body, wait).await.label(secrets)
            };
            // Nothing of a 2xx body matters: it is dropped with the connection.
            Probe::Status(status, text)
        }
    }
}

/// `e` with its words (the client's, which may quote what the server sent)
/// redacted like error text.
fn redact_send_error(e: SendError, secrets: &Secrets) -> SendError {
    match e {
        SendError::Connect(why) => SendError::Connect(secrets.redact(&why)),
        SendError::Disconnected(why) => SendError::Disconnected(secrets.redact(&why)),
        other => other,
    }
}

/// Runs the preflight against `transport` (a transport of its own, so no
/// pooled connection outlives this runtime). `one_token` is the body of the
/// fallback request.
pub async fn check(
    transport: &HyperTransport,
    one_token: Bytes,
    secrets: &Secrets,
    wait: Duration,
) -> Result<(), PreflightError> {
    let models = models_uri(transport.uri());
    let models_url = public_url(&models);
    let got = probe(transport.get(models), wait, secrets).await;
    let standard = standard_endpoint(transport.uri());
    match judge_models(&models_url, &got, standard, wait) {
        Step::Pass => Ok(()),
        Step::Stop(e) => Err(e),
        Step::Fallback => {
            let url = public_url(transport.uri());
            let got = probe(
                crate::transport::client::Transport::send(transport, one_token),
                wait,
                secrets,
            )
            .await;
            judge_endpoint(&url, &got, wait)
        }
    }
}

/// [`check`] on a runtime of its own.
pub fn check_blocking(
    transport: &HyperTransport,
    one_token: Bytes,
    secrets: &Secrets,
    wait: Duration,
) -> Result<(), PreflightError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| PreflightError::Unreachable {
            url: public_url(transport.uri()),
            why: format!("cannot start the async runtime: {e}"),
        })?;
    let result = runtime.block_on(check(transport, one_token, secrets, wait));
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAIT: Duration = Duration::from_secs(10);

    #[test]
    fn models_sit_beside_the_endpoint() {
        let m = |s: &str| models_uri(&s.parse().unwrap()).to_string();
        assert_eq!(
            m("https://h:8443/v1/chat/completions"),
            "https://h:8443/v1/models"
        );
        assert_eq!(
            m("http://h/gateway/v1/completions"),
            "http://h/gateway/v1/models"
        );
        assert_eq!(m("http://h/custom/generate"), "http://h/v1/models");
        assert_eq!(
            m("http://h/v1/chat/completions?api-version=2024-06&key=QSECRET"),
            "http://h/v1/models?api-version=2024-06&key=QSECRET"
        );
        let standard = |s: &str| standard_endpoint(&s.parse().unwrap());
        assert!(standard("http://h/v1/chat/completions"));
        assert!(standard("http://h/gw/v1/completions"));
        assert!(!standard("http://h/custom/generate"));
    }

    #[test]
    fn models_pass_deny_or_fall_back() {
        let url = "http://h/v1/models";
        let ok = Probe::Status(200, None);
        assert_eq!(judge_models(url, &ok, true, WAIT), Step::Pass);
        // A custom endpoint path is probed even when the models answer.
        assert_eq!(judge_models(url, &ok, false, WAIT), Step::Fallback);
        assert_eq!(
            judge_models(url, &Probe::Status(404, None), true, WAIT),
            Step::Fallback
        );
        assert_eq!(
            judge_models(url, &Probe::Status(500, None), true, WAIT),
            Step::Fallback
        );
        let denied = Probe::Status(401, Some("no key".into()));
        let Step::Stop(e) = judge_models(url, &denied, true, WAIT) else {
            panic!("401 must stop");
        };
        assert_eq!(
            e.to_string(),
            "http://h/v1/models answered 401 (\"no key\"): check the API key (--api-key-env) or --header"
        );
        let refused = Probe::Failed(SendError::Refused);
        let Step::Stop(e) = judge_models(url, &refused, true, WAIT) else {
            panic!("refused must stop");
        };
        assert_eq!(
            e.to_string(),
            "cannot reach http://h/v1/models: connection refused (check --url; --no-preflight skips this check)"
        );
    }

    #[test]
    fn the_endpoint_stops_only_on_404_401_403_or_no_connection() {
        let url = "https://h/v1/chat/completions";
        assert_eq!(judge_endpoint(url, &Probe::Status(200, None), WAIT), Ok(()));
        assert_eq!(judge_endpoint(url, &Probe::Status(503, None), WAIT), Ok(()));
        assert_eq!(judge_endpoint(url, &Probe::Status(429, None), WAIT), Ok(()));
        assert_eq!(
            judge_endpoint(url, &Probe::Status(404, None), WAIT)
                .unwrap_err()
                .to_string(),
            "https://h/v1/chat/completions answered 404 Not Found: check --url and --api"
        );
        assert!(matches!(
            judge_endpoint(url, &Probe::Status(403, None), WAIT),
            Err(PreflightError::Denied { status: 403, .. })
        ));
        assert_eq!(
            judge_endpoint(url, &Probe::TimedOut, WAIT).unwrap_err().to_string(),
            "no answer from https://h/v1/chat/completions within 10 s (--no-preflight skips this check)"
        );
        let tls = Probe::Failed(SendError::Tls(TlsFailure::Certificate("expired".into())));
        assert_eq!(
            judge_endpoint(url, &tls, WAIT).unwrap_err().to_string(),
            "TLS certificate not trusted: expired at https://h/v1/chat/completions \
             (--cacert FILE trusts a private CA; --insecure skips verification)"
        );
    }
}
