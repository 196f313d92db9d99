//! The preflight: one look at the server before the schedule starts, so a
//! wrong URL, a dead server, a TLS problem or a missing credential is one
//! clear line and exit status 2 — before any trace is written — instead of
//! a trace full of identical failures.
//!
//! Steps, with the run's own headers, key and TLS settings:
//! 1. `GET /v1/models` (beside the endpoint: the endpoint's path up to its
//!    `/v1`, else the server root's `/v1/models`). A 2xx answer passes when
//!    the endpoint is a standard one beside it (`…/v1/chat/completions`,
//!    `…/v1/completions`, `…/v1/responses`, `…/v1/messages` or
//!    `…/v1/embeddings`): nothing is generated.
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
//!
//! The model: when the endpoint is the standard one and `/v1/models`
//! answers 2xx with an OpenAI model list (`{"data": [{"id": …}, …]}`), the
//! requested `--model` must be one of its ids ([`ModelError::NotServed`]:
//! every run's request would fail `http_404` otherwise). Without `--model`,
//! the one model listed is taken ([`ModelCheck::Taken`]); none or several
//! is [`ModelError::Ambiguous`]. When the list cannot be read (no 2xx, not
//! JSON, a custom endpoint), a given `--model` is sent unchecked
//! ([`ModelCheck::Unchecked`], said in the summary) and a missing one is
//! [`ModelError::Unlisted`].

use std::time::Duration;

use bytes::Bytes;
use hyper::Uri;

use crate::transport::client::{Head, HyperTransport, ResponseBody, SendError};
use crate::transport::endpoint::public_url;
use crate::transport::error_text::{read_head, Secrets};
use crate::transport::tls::TlsFailure;

/// The longest the preflight waits for one answer.
pub const PREFLIGHT_TIMEOUT: Duration = Duration::from_secs(10);

/// The most bytes of a `/v1/models` body read: a list of a few thousand
/// models fits; a body past it is not read as a list.
pub const MODELS_BODY_LIMIT: usize = 1 << 20;

/// The most served names quoted in a message (the count is always said).
const NAMES_SHOWN: usize = 20;

/// The most characters of one served name quoted in a message.
const NAME_CHARS: usize = 100;

/// What the preflight found out about the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelCheck {
    /// `--model` is one of the names `/v1/models` lists.
    Listed,
    /// No `--model` was given and `/v1/models` lists exactly this one.
    Taken(String),
    /// `--model` could not be checked: why (the list was not readable).
    Unchecked(String),
}

/// Why the model the run would ask for is wrong or unknown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// `--model` is not among the served models.
    #[error("--model {model} is not served by {url}, which lists {} (give one of them to --model; --no-preflight skips this check)", names(.served))]
    NotServed {
        /// The `/v1/models` URL.
        url: String,
        /// `--model`.
        model: String,
        /// What it lists.
        served: Vec<String>,
    },
    /// No `--model`, and not exactly one served model.
    #[error("--model is required: {url} lists {} (give one of them to --model)", names(.served))]
    Ambiguous {
        /// The `/v1/models` URL.
        url: String,
        /// What it lists (none, or several).
        served: Vec<String>,
    },
    /// No `--model`, and no readable model list.
    #[error("--model is required: the served models could not be read from {url} ({why})")]
    Unlisted {
        /// The `/v1/models` URL.
        url: String,
        /// Why not.
        why: String,
    },
}

/// `no model`, `1 model: a` or `3 models: a, b, c` (at most [`NAMES_SHOWN`]
/// names, each at most [`NAME_CHARS`] characters).
fn names(served: &[String]) -> String {
    let shown: Vec<String> = served
        .iter()
        .take(NAMES_SHOWN)
        .map(|n| {
            let cut: String = n.chars().take(NAME_CHARS).collect();
            if cut.len() < n.len() {
                format!("`{cut}…`")
            } else {
                format!("`{cut}`")
            }
        })
        .collect();
    let more = served.len().saturating_sub(NAMES_SHOWN);
    let tail = if more > 0 {
        format!(" and {more} more")
    } else {
        String::new()
    };
    match served.len() {
        0 => "no model".to_owned(),
        1 => format!("1 model: {}", shown.join(", ")),
        n => format!("{n} models: {}{tail}", shown.join(", ")),
    }
}

/// The ids of an OpenAI model list (`{"data": [{"id": "…"}, …]}`), or
/// `None` when `body` is not one.
pub fn served_models(body: &[u8]) -> Option<Vec<String>> {
    let doc: serde_json::Value = serde_json::from_slice(body).ok()?;
    doc.get("data")?
        .as_array()?
        .iter()
        .map(|m| m.get("id").and_then(|id| id.as_str()).map(str::to_owned))
        .collect()
}

/// Judges the model against what `/v1/models` said (pure): `listing` is the
/// served ids, or why they are unknown; `model` is `--model`, if given.
pub fn judge_model(
    url: &str,
    listing: Result<&[String], &str>,
    model: Option<&str>,
) -> Result<ModelCheck, ModelError> {
    match (listing, model) {
        (Ok(served), Some(m)) if served.iter().any(|s| s == m) => Ok(ModelCheck::Listed),
        (Ok(served), Some(m)) => Err(ModelError::NotServed {
            url: url.to_owned(),
            model: m.to_owned(),
            served: served.to_vec(),
        }),
        (Ok([only]), None) => Ok(ModelCheck::Taken(only.clone())),
        (Ok(served), None) => Err(ModelError::Ambiguous {
            url: url.to_owned(),
            served: served.to_vec(),
        }),
        (Err(why), Some(_)) => Ok(ModelCheck::Unchecked(format!(
            "{url} did not list the served models: {why}"
        ))),
        (Err(why), None) => Err(ModelError::Unlisted {
            url: url.to_owned(),
            why: why.to_owned(),
        }),
    }
}

/// What one probe got.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// An HTTP answer, with the redacted error text of a non-2xx body.
    Status(u16, Option<String>),
    /// A 2xx answer to `GET /v1/models` with its body (at most
    /// [`MODELS_BODY_LIMIT`] bytes; `None`: longer, or not read in time).
    Listing(u16, Option<Vec<u8>>),
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
        "{failure} at {url} (--cacert FILE trusts the server's own certificate or the CA that signed it; --insecure skips verification)"
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
    /// The model is not served, or none was given and it cannot be told.
    #[error(transparent)]
    Model(#[from] ModelError),
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
        Probe::Failed(SendError::HeadTooLarge) | Probe::Status(..) | Probe::Listing(..) => None,
    }
}

/// Judges the `/v1/models` probe (pure); `standard` says whether the
/// endpoint is the standard path beside it.
pub fn judge_models(url: &str, probe: &Probe, standard: bool, wait: Duration) -> Step {
    if let Some(e) = unreachable_or_tls(url, probe, wait) {
        return Step::Stop(e);
    }
    match probe {
        Probe::Status(200..=299, _) | Probe::Listing(..) if standard => Step::Pass,
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

/// The paths of the standard endpoints, whose models `/v1/models` beside
/// them lists (every `--api`'s default path).
pub const STANDARD_PATHS: [&str; 5] = [
    "/v1/chat/completions",
    "/v1/completions",
    "/v1/responses",
    "/v1/messages",
    "/v1/embeddings",
];

/// Whether the endpoint's path ends in one of [`STANDARD_PATHS`].
pub fn standard_endpoint(endpoint: &Uri) -> bool {
    let path = endpoint.path();
    STANDARD_PATHS.iter().any(|p| path.ends_with(p))
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
    keep_2xx_body: bool,
) -> Probe {
    match tokio::time::timeout(wait, request).await {
        Err(_) => Probe::TimedOut,
        Ok(Err(e)) => Probe::Failed(redact_send_error(e, secrets)),
        Ok(Ok((head, mut body))) => {
            let status = head.status;
            if (200..300).contains(&status) {
                if keep_2xx_body {
                    return Probe::Listing(status, read_bounded(&mut body, wait).await);
                }
                // Nothing of a 2xx body matters: it is dropped with the connection.
                return Probe::Status(status, None);
            }
            // One request, before the run: it may take the whole wait.
            let text = read_head(&mut body, wait).await.label(secrets);
            Probe::Status(status, text)
        }
    }
}

/// The whole body, if it ends within [`MODELS_BODY_LIMIT`] bytes and `wait`.
async fn read_bounded<B: ResponseBody>(body: &mut B, wait: Duration) -> Option<Vec<u8>> {
    let read = async {
        let mut bytes = Vec::new();
        loop {
            match body.next_frame().await {
                Ok(Some(frame)) if bytes.len() + frame.len() <= MODELS_BODY_LIMIT => {
                    bytes.extend_from_slice(&frame);
                }
                Ok(Some(_)) | Err(_) => return None,
                Ok(None) => return Some(bytes),
            }
        }
    };
    tokio::time::timeout(wait, read).await.ok().flatten()
}

/// The served ids `/v1/models` gave, or why they are not known.
fn listing_of(probe: &Probe, standard: bool) -> Result<Vec<String>, String> {
    if !standard {
        return Err(
            "the endpoint is not a standard …/v1/ path (chat/completions, completions, \
             responses, messages, embeddings), so /v1/models need not describe it"
                .to_owned(),
        );
    }
    match probe {
        Probe::Listing(_, Some(body)) => {
            served_models(body).ok_or_else(|| "its answer is not an OpenAI model list".to_owned())
        }
        Probe::Listing(_, None) => Err(format!(
            "its answer was longer than {} MiB or did not end in time",
            MODELS_BODY_LIMIT >> 20
        )),
        Probe::Status(status, _) => Err(format!("it answered {status}")),
        _ => Err("it did not answer".to_owned()),
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
/// pooled connection outlives this runtime), checking `model` (`--model`,
/// if given) against `/v1/models`. `one_token` makes the body of the
/// fallback request for the model the run will ask for.
pub async fn check(
    transport: &HyperTransport,
    model: Option<&str>,
    one_token: impl FnOnce(&str) -> Bytes,
    secrets: &Secrets,
    wait: Duration,
) -> Result<ModelCheck, PreflightError> {
    let models = models_uri(transport.uri());
    let models_url = public_url(&models);
    let got = probe(transport.get(models), wait, secrets, true).await;
    let standard = standard_endpoint(transport.uri());
    let step = judge_models(&models_url, &got, standard, wait);
    if let Step::Stop(e) = step {
        return Err(e);
    }
    let listing = listing_of(&got, standard);
    let listing = listing.as_deref().map_err(String::as_str);
    let checked = judge_model(&models_url, listing, model)?;
    if step == Step::Pass {
        return Ok(checked);
    }
    let asked = match (&checked, model) {
        (ModelCheck::Taken(name), _) => name.as_str(),
        (_, Some(m)) => m,
        // A missing model is either taken or refused above.
        (_, None) => "",
    };
    let url = public_url(transport.uri());
    let got = probe(
        crate::transport::client::Transport::send(transport, one_token(asked)),
        wait,
        secrets,
        false,
    )
    .await;
    judge_endpoint(&url, &got, wait).map(|()| checked)
}

/// [`check`] on a runtime of its own.
pub fn check_blocking(
    transport: &HyperTransport,
    model: Option<&str>,
    one_token: impl FnOnce(&str) -> Bytes,
    secrets: &Secrets,
    wait: Duration,
) -> Result<ModelCheck, PreflightError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| PreflightError::Unreachable {
            url: public_url(transport.uri()),
            why: format!("cannot start the async runtime: {e}"),
        })?;
    let result = runtime.block_on(check(transport, model, one_token, secrets, wait));
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
             (--cacert FILE trusts the server's own certificate or the CA that signed it; \
             --insecure skips verification)"
        );
    }

    #[test]
    fn the_model_must_be_served_and_is_taken_when_alone() {
        let url = "http://h/v1/models";
        let one = vec!["real-model".to_owned()];
        let two = vec!["a".to_owned(), "b".to_owned()];
        assert_eq!(
            judge_model(url, Ok(&one), Some("real-model")),
            Ok(ModelCheck::Listed)
        );
        assert_eq!(
            judge_model(url, Ok(&one), Some("wrong-model"))
                .unwrap_err()
                .to_string(),
            "--model wrong-model is not served by http://h/v1/models, which lists 1 model: \
             `real-model` (give one of them to --model; --no-preflight skips this check)"
        );
        assert_eq!(
            judge_model(url, Ok(&one), None),
            Ok(ModelCheck::Taken("real-model".into()))
        );
        assert_eq!(
            judge_model(url, Ok(&two), None).unwrap_err().to_string(),
            "--model is required: http://h/v1/models lists 2 models: `a`, `b` \
             (give one of them to --model)"
        );
        assert_eq!(
            judge_model(url, Ok(&[]), None).unwrap_err().to_string(),
            "--model is required: http://h/v1/models lists no model (give one of them to --model)"
        );
        // No list: a given model goes unchecked, a missing one is refused.
        assert_eq!(
            judge_model(url, Err("it answered 404"), Some("m")),
            Ok(ModelCheck::Unchecked(
                "http://h/v1/models did not list the served models: it answered 404".into()
            ))
        );
        assert_eq!(
            judge_model(url, Err("it answered 404"), None)
                .unwrap_err()
                .to_string(),
            "--model is required: the served models could not be read from \
             http://h/v1/models (it answered 404)"
        );
    }

    #[test]
    fn model_lists_are_read_from_openai_json_only() {
        let body = br#"{"object":"list","data":[{"id":"x","object":"model"},{"id":"y"}]}"#;
        assert_eq!(served_models(body), Some(vec!["x".into(), "y".into()]));
        assert_eq!(served_models(br#"{"data":[]}"#), Some(vec![]));
        assert_eq!(served_models(br#"{"data":[{"name":"x"}]}"#), None);
        assert_eq!(served_models(b"<html>"), None);
        // 25 names: 20 quoted, the rest counted; a long one is cut at 100.
        let many: Vec<String> = (0..25).map(|i| format!("m{i}")).collect();
        let listed = names(&many);
        assert!(listed.starts_with("25 models: `m0`, `m1`"), "{listed}");
        assert!(listed.ends_with("`m19` and 5 more"), "{listed}");
        let long = names(&["x".repeat(150)]);
        assert_eq!(long, format!("1 model: `{}…`", "x".repeat(100)));
        // A 2xx listing passes the models step like any 2xx answer.
        let listing = Probe::Listing(200, Some(body.to_vec()));
        assert_eq!(judge_models("u", &listing, true, WAIT), Step::Pass);
        assert_eq!(listing_of(&listing, true), Ok(vec!["x".into(), "y".into()]));
        assert!(listing_of(&listing, false).is_err());
        assert_eq!(
            listing_of(&Probe::Status(404, None), true),
            Err("it answered 404".into())
        );
    }
}
