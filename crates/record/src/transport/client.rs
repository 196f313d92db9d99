//! The network seam: one trait for "send this body, give me the status and a
//! stream of byte frames", and its hyper implementation.
//!
//! Everything above this seam (the SSE reading, the timeout and cancellation
//! rules, row assembly) is tested with a scripted [`Transport`] and no
//! sockets; the hyper implementation is tested against the in-process sim.
//!
//! The hyper client has no connection cap: an open-loop schedule must never be
//! throttled by the client, so a request that finds no idle keep-alive
//! connection opens a new one.
//!
//! The keep-alive race: a server (or proxy) may close an idle connection at
//! the very moment the client picks it from its pool; the request is written
//! into a dead socket and the connection ends before any response byte. The
//! server never saw that request, so charging it a `disconnect` would be the
//! client's error. Such a request — the connection closed before a response
//! head, on a connection that had already carried a response — is sent
//! again (at most twice more); its latency still counts from the
//! scheduled arrival, and the trace counts these retries
//! (`workload.keepAliveRetries`). A connection that closes before answering
//! its *first* request is the server's failure: `disconnect`, no retry.
//!
//! `https://` goes through the [`Connector`] of [`crate::transport::tls`] (rustls, HTTP/1.1);
//! a failed handshake is [`SendError::Tls`]. Extra headers
//! ([`crate::transport::headers`]) go on every request, after the recorder's own
//! (`Content-Type`, `Accept`, `Authorization`), which a header of the same
//! name replaces.
//!
//! Bounds: a response head (status line and headers) larger than
//! [`MAX_HEAD_BYTES`], or with more than 100 headers, is refused
//! ([`SendError::HeadTooLarge`]); the same figure caps each connection's
//! read buffer, so a body frame is never larger either.

use std::collections::HashSet;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Uri};
use hyper_util::client::legacy::connect::{Connected, HttpInfo};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::transport::headers::ExtraHeader;
use crate::transport::tls::{Connector, TlsFailure};

/// Why a request got no response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// The server actively refused the connection.
    Refused,
    /// The connection could not be made for another reason (unreachable, DNS…).
    Connect(String),
    /// The connection broke before a response head arrived.
    Disconnected(String),
    /// The TLS handshake failed (`tls_certificate` or `tls_handshake`).
    Tls(TlsFailure),
    /// The response head was larger than [`MAX_HEAD_BYTES`] (or had more
    /// than 100 headers); the connection was dropped.
    HeadTooLarge,
}

/// The most bytes of a response head the client reads, and the most each
/// connection buffers at once (hyper's read buffer): a real head is well
/// under a kilobyte; a server sending more is refused, not buffered.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// What the recorder reads from a response head.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    /// The HTTP status.
    pub status: u16,
    /// The body is an event stream: its `Content-Type` is `text/event-stream`
    /// (any parameters, any case) or absent.
    pub event_stream: bool,
    /// The `Server-Timing` header lines (at most [`MAX_TIMING_LINES`], each
    /// cut at [`MAX_TIMING_LINE_BYTES`]); empty, and unallocated, without.
    pub server_timing: Vec<String>,
}

/// Most `Server-Timing` header lines read from one response.
pub const MAX_TIMING_LINES: usize = 8;
/// Most bytes of one `Server-Timing` line read.
pub const MAX_TIMING_LINE_BYTES: usize = 1024;

/// The `Server-Timing` lines of a response head (see [`Head::server_timing`]);
/// a line that is not visible ASCII is skipped.
pub fn server_timing_lines(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all("server-timing")
        .iter()
        .take(MAX_TIMING_LINES)
        .filter_map(|v| v.to_str().ok())
        .map(|v| v[..v.len().min(MAX_TIMING_LINE_BYTES)].to_owned())
        .collect()
}

/// Whether headers announce an event stream (see [`Head::event_stream`]).
pub fn is_event_stream(headers: &HeaderMap) -> bool {
    match headers.get(CONTENT_TYPE) {
        None => true,
        Some(value) => value.to_str().is_ok_and(|v| {
            v.split(';')
                .next()
                .is_some_and(|media| media.trim().eq_ignore_ascii_case("text/event-stream"))
        }),
    }
}

/// The body broke off before its end (reset, truncated chunked encoding…).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyError(pub String);

/// A response body read frame by frame.
pub trait ResponseBody: Send + 'static {
    /// The next data frame; `Ok(None)` at a clean end of the body.
    fn next_frame(&mut self) -> impl Future<Output = Result<Option<Bytes>, BodyError>> + Send;
}

/// Sends one request body to the configured endpoint.
pub trait Transport: Send + Sync + 'static {
    /// The response body type.
    type Body: ResponseBody;
    /// Sends `body` (JSON) and waits for the response head.
    fn send(
        &self,
        body: Bytes,
    ) -> impl Future<Output = Result<(Head, Self::Body), SendError>> + Send;

    /// The same transport for another event loop, with connections of its
    /// own (a connection, and the requests that use it, then stay on one
    /// thread) and everything else shared; `None` (the default): the loops
    /// share this one.
    fn for_another_loop(&self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }
}

/// The real transport: hyper 1, HTTP/1.1 with keep-alive, plain or over TLS.
#[derive(Clone, Debug)]
pub struct HyperTransport {
    client: Client<Connector, Full<Bytes>>,
    /// The TLS configuration, for the connectors of other event loops.
    tls: Option<Arc<rustls::ClientConfig>>,
    uri: Uri,
    /// Every request's headers (values marked sensitive).
    headers: HeaderMap,
    /// Local addresses of connections that have carried a response head.
    carried: Arc<Mutex<HashSet<SocketAddr>>>,
    /// Requests sent again after the keep-alive race.
    retries: Arc<AtomicU64>,
}

/// Why a transport could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    /// The key would not fit in an `Authorization` header (a newline, a
    /// control character); the message never holds the key.
    #[error("the API key contains characters not allowed in a header")]
    BadApiKey,
}

impl HyperTransport {
    /// A transport for `uri`, sending `Authorization: Bearer <key>` when a key
    /// is given. The key lives only in this header value, marked sensitive.
    pub fn new(uri: Uri, api_key: Option<&str>) -> Result<HyperTransport, TransportError> {
        HyperTransport::with_options(uri, api_key, &[], None)
    }

    /// A transport for `uri` with extra headers and, for `https://`, a TLS
    /// configuration ([`crate::transport::tls::client_config`]).
    pub fn with_options(
        uri: Uri,
        api_key: Option<&str>,
        extra: &[ExtraHeader],
        tls: Option<Arc<rustls::ClientConfig>>,
    ) -> Result<HyperTransport, TransportError> {
        let client = pooled_client(tls.clone());
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Some(key) = api_key {
            let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                .map_err(|_| TransportError::BadApiKey)?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
        }
        for h in extra {
            headers.remove(&h.name);
        }
        for h in extra {
            headers.append(h.name.clone(), h.value.clone());
        }
        Ok(HyperTransport {
            client,
            tls,
            uri,
            headers,
            carried: Arc::default(),
            retries: Arc::default(),
        })
    }

    /// How many requests were sent again after losing the keep-alive race
    /// (see the module documentation); shared with clones.
    pub fn retries(&self) -> Arc<AtomicU64> {
        self.retries.clone()
    }

    fn local_addr(connected: Option<&Connected>) -> Option<SocketAddr> {
        let mut extensions = hyper::http::Extensions::new();
        connected?.get_extras(&mut extensions);
        extensions.get::<HttpInfo>().map(HttpInfo::local_addr)
    }

    fn carried(&self) -> std::sync::MutexGuard<'_, HashSet<SocketAddr>> {
        // A poisoned set is still a set of addresses.
        self.carried.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the endpoint is `https://`.
    pub fn is_https(&self) -> bool {
        self.uri.scheme_str() == Some("https")
    }

    /// The endpoint.
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    /// `GET uri` with the same headers and connection settings (the
    /// preflight's `/v1/models`); one attempt.
    pub async fn get(&self, uri: Uri) -> Result<(Head, HyperBody), SendError> {
        self.attempt(Method::GET, uri, Bytes::new())
            .await
            .map_err(|(e, _)| e)
    }

    /// One attempt; `Err((error, stale))` where `stale` means the keep-alive race.
    async fn attempt(
        &self,
        method: Method,
        uri: Uri,
        body: Bytes,
    ) -> Result<(Head, HyperBody), (SendError, bool)> {
        let mut request = hyper::Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        *request.headers_mut() = self.headers.clone();
        match self.client.request(request).await {
            Ok(response) => {
                if let Some(info) = response.extensions().get::<HttpInfo>() {
                    self.carried().insert(info.local_addr());
                }
                let head = Head {
                    status: response.status().as_u16(),
                    event_stream: is_event_stream(response.headers()),
                    server_timing: server_timing_lines(response.headers()),
                };
                Ok((head, HyperBody(response.into_body())))
            }
            Err(e) => {
                let stale = closed_before_head(&e)
                    && Self::local_addr(e.connect_info())
                        .is_some_and(|addr| self.carried().contains(&addr));
                Err((classify_send_error(&e), stale))
            }
        }
    }
}

/// A client with its own keep-alive pool (no connection cap).
fn pooled_client(tls: Option<Arc<rustls::ClientConfig>>) -> Client<Connector, Full<Bytes>> {
    Client::builder(TokioExecutor::new())
        .pool_idle_timeout(std::time::Duration::from_secs(30))
        .http1_max_buf_size(MAX_HEAD_BYTES)
        .build(Connector::new(tls))
}

/// Most sends of one request: the first, and up to two more after losing
/// the keep-alive race (each retry takes another pooled or fresh connection,
/// and each loss is proof of a closed idle connection, not of a server fault).
const MAX_ATTEMPTS: u32 = 3;

/// The connection ended before a response head (hyper's "incomplete message").
fn closed_before_head(e: &hyper_util::client::legacy::Error) -> bool {
    any_hyper_error(e, hyper::Error::is_incomplete_message)
}

/// Some hyper error in `e`'s chain satisfies `test`.
fn any_hyper_error(
    e: &hyper_util::client::legacy::Error,
    test: impl Fn(&hyper::Error) -> bool,
) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = source {
        if err.downcast_ref::<hyper::Error>().is_some_and(&test) {
            return true;
        }
        source = err.source();
    }
    false
}

/// A hyper response body.
#[derive(Debug)]
pub struct HyperBody(Incoming);

impl ResponseBody for HyperBody {
    async fn next_frame(&mut self) -> Result<Option<Bytes>, BodyError> {
        loop {
            match self.0.frame().await {
                None => return Ok(None),
                Some(Err(e)) => return Err(BodyError(e.to_string())),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        return Ok(Some(data));
                    }
                    // Trailers carry no tokens; keep reading.
                }
            }
        }
    }
}

impl Transport for HyperTransport {
    type Body = HyperBody;

    fn for_another_loop(&self) -> Option<Self> {
        Some(HyperTransport {
            client: pooled_client(self.tls.clone()),
            ..self.clone()
        })
    }

    async fn send(&self, body: Bytes) -> Result<(Head, HyperBody), SendError> {
        let mut attempts = 1;
        loop {
            match self
                .attempt(Method::POST, self.uri.clone(), body.clone())
                .await
            {
                Err((_, true)) if attempts < MAX_ATTEMPTS => {
                    attempts += 1;
                    self.retries.fetch_add(1, Ordering::Relaxed);
                }
                other => return other.map_err(|(e, _)| e),
            }
        }
    }
}

fn classify_send_error(e: &hyper_util::client::legacy::Error) -> SendError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut refused = false;
    while let Some(err) = source {
        if let Some(tls) = err.downcast_ref::<TlsFailure>() {
            return SendError::Tls(tls.clone());
        }
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            refused |= io.kind() == std::io::ErrorKind::ConnectionRefused;
        }
        source = err.source();
    }
    let text = error_chain(e);
    if refused {
        SendError::Refused
    } else if any_hyper_error(e, hyper::Error::is_parse_too_large) {
        SendError::HeadTooLarge
    } else if e.is_connect() {
        SendError::Connect(text)
    } else {
        SendError::Disconnected(text)
    }
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(err) = source {
        text.push_str(": ");
        text.push_str(&err.to_string());
        source = err.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn content_type(value: Option<&str>) -> bool {
        let mut headers = HeaderMap::new();
        if let Some(v) = value {
            headers.insert(CONTENT_TYPE, HeaderValue::from_str(v).unwrap());
        }
        is_event_stream(&headers)
    }

    #[test]
    fn only_an_event_stream_content_type_or_none_is_a_stream() {
        assert!(content_type(None));
        assert!(content_type(Some("text/event-stream")));
        assert!(content_type(Some("Text/Event-Stream; charset=utf-8")));
        assert!(!content_type(Some("application/json")));
        assert!(!content_type(Some("text/html; charset=utf-8")));
        assert!(!content_type(Some("text/event-streams")));
    }
}
