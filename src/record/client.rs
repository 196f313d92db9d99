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

use std::future::Future;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use hyper::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// Why a request got no response head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SendError {
    /// The server actively refused the connection.
    Refused,
    /// The connection could not be made for another reason (unreachable, DNS…).
    Connect(String),
    /// The connection broke before a response head arrived.
    Disconnected(String),
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
    ) -> impl Future<Output = Result<(u16, Self::Body), SendError>> + Send;
}

/// The real transport: hyper 1 over plain HTTP/1.1 with keep-alive.
#[derive(Clone, Debug)]
pub struct HyperTransport {
    client: Client<HttpConnector, Full<Bytes>>,
    uri: Uri,
    authorization: Option<HeaderValue>,
}

impl HyperTransport {
    /// A transport for `uri`, sending `Authorization: Bearer <key>` when a key
    /// is given. The key lives only in this header value, marked sensitive.
    pub fn new(uri: Uri, api_key: Option<&str>) -> Result<HyperTransport, String> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let client = Client::builder(TokioExecutor::new())
            .pool_idle_timeout(std::time::Duration::from_secs(30))
            .build(connector);
        let authorization = match api_key {
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| {
                    "the API key contains characters not allowed in a header".to_owned()
                })?;
                value.set_sensitive(true);
                Some(value)
            }
            None => None,
        };
        Ok(HyperTransport {
            client,
            uri,
            authorization,
        })
    }
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

    async fn send(&self, body: Bytes) -> Result<(u16, HyperBody), SendError> {
        let mut builder = hyper::Request::post(self.uri.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream");
        if let Some(auth) = &self.authorization {
            builder = builder.header(AUTHORIZATION, auth.clone());
        }
        let request = builder
            .body(Full::new(body))
            .map_err(|e| SendError::Connect(e.to_string()))?;
        match self.client.request(request).await {
            Ok(response) => {
                let status = response.status().as_u16();
                Ok((status, HyperBody(response.into_body())))
            }
            Err(e) => Err(classify_send_error(&e)),
        }
    }
}

fn classify_send_error(e: &hyper_util::client::legacy::Error) -> SendError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut refused = false;
    while let Some(err) = source {
        if let Some(io) = err.downcast_ref::<std::io::Error>() {
            refused |= io.kind() == std::io::ErrorKind::ConnectionRefused;
        }
        source = err.source();
    }
    let text = error_chain(e);
    if refused {
        SendError::Refused
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
