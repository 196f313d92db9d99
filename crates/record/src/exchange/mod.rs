//! One request, from send to its ending: the rules that turn a response into
//! "completed at t", "failed because r at t" or "still in flight".
//!
//! Timestamps are taken once per received network frame, before the frame is
//! parsed, so parsing cost never shows up as server latency. The first token
//! is the first frame holding an event with a model token of any kind,
//! reasoning included (a role-only or empty first chunk is not a token); the
//! first answer is the first frame holding an answer token
//! ([`chunk::Tokens`]: each API's reader, [`chat`], [`responses`],
//! [`messages`], says which kind an event carried). Every event with a token
//! of either kind is a content event for the gaps (a thinking stall is a
//! stall the user waits through too). An embeddings request is not
//! streamed: its document ([`embeddings`]) completes it at the end of its
//! body, with no first token. A request ends:
//! - completed at `[DONE]`, or at a clean end of the body after a finish
//!   reason (some servers omit `[DONE]`); with no content at all it fails as
//!   `no_content` instead (there is no first token to measure);
//! - failed `connect_refused` / `connect_error` before a response head,
//!   `tls_certificate` / `tls_handshake` when the TLS handshake fails,
//!   `disconnect` when the connection breaks (before the head or mid-body),
//!   `http_<status>` on a non-2xx head, `bad_stream` on an unreadable chunk or
//!   a body that ends cleanly without an end marker, `server_error` on an
//!   error object or `event: error`, `timeout` when `timeout` has passed since
//!   the *scheduled* arrival;
//! - failed `event_too_large` when one SSE line or event passes
//!   `--max-event-bytes`, `body_too_large` when a 2xx body that is not an
//!   event stream (a `Content-Type` other than `text/event-stream`) passes
//!   it, `headers_too_large` when the response head passes the client's
//!   head bound; the connection is dropped there, so the server can neither
//!   fill the recorder's memory nor keep it reading;
//! - in flight when the run is cancelled first (horizon or interrupt).
//!
//! A failed request may carry an error text (the row's `errorText` label):
//! the message of an error object or `event: error` in the stream, or the
//! first bytes of a non-2xx body or of a 2xx body that is not a stream. Only
//! the first [`ERROR_TEXT_BYTES`] bytes of such a body are ever kept (an
//! [`ErrorHead`]); an error body is read for at most [`ERROR_TEXT_WAIT`]
//! after the head, which already decided the ending. The runner turns the
//! kept bytes into the label ([`crate::transport::error_text`]: at most
//! [`ERROR_TEXT_CHARS`] characters, secrets redacted, withheld when it
//! repeats the prompt).

pub mod chat;
pub mod chunk;
pub mod embeddings;
pub mod messages;
pub mod responses;
pub mod sse;
pub mod token_scan;

use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;
use tokio::time::Instant;

use crate::exchange::chunk::{Chunk, Reader, Tokens, Usage};
use crate::exchange::sse::SseParser;
use crate::transport::client::{Head, ResponseBody, SendError, Transport};
use crate::transport::error_text::read_head;
pub use crate::transport::error_text::{
    ErrorHead, ERROR_TEXT_BYTES, ERROR_TEXT_CHARS, ERROR_TEXT_WAIT,
};
use crate::workload::body::Api;
use goodput_core::server_timing::{self, Sources};
use goodput_core::trace::Labels;

/// The run's monotonic clock: milliseconds since `t0`.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    t0: Instant,
}

impl Clock {
    /// A clock whose zero is `t0`.
    pub fn new(t0: Instant) -> Clock {
        Clock { t0 }
    }

    /// Milliseconds since t0 (0 before t0).
    pub fn now_ms(&self) -> f64 {
        Instant::now()
            .checked_duration_since(self.t0)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    }

    /// The instant `ms` after t0.
    pub fn at(&self, ms: f64) -> Instant {
        self.t0 + Duration::from_secs_f64(ms.max(0.0) / 1000.0)
    }
}

/// Why a request failed; `as_str` is the trace's `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FailReason {
    /// The connection was refused.
    ConnectRefused,
    /// The connection could not be made otherwise.
    ConnectError,
    /// A non-2xx response.
    Http(u16),
    /// The connection broke.
    Disconnect,
    /// The stream could not be read as OpenAI SSE, or ended without an end marker.
    BadStream,
    /// The server sent an error in the stream.
    ServerError,
    /// The timeout passed (measured from the scheduled arrival).
    Timeout,
    /// The stream ended normally but never carried any content.
    NoContent,
    /// One SSE line or event was longer than `--max-event-bytes`.
    EventTooLarge,
    /// A 2xx body that is not an event stream was longer than `--max-event-bytes`.
    BodyTooLarge,
    /// The response head was larger than the client accepts.
    HeadersTooLarge,
    /// The server's TLS certificate was not trusted.
    TlsCertificate,
    /// The TLS handshake failed otherwise.
    TlsHandshake,
    /// An earlier turn of the same session failed, so this turn was never
    /// sent (multi-turn sessions).
    SessionAborted,
}

impl FailReason {
    /// The trace `reason` string (`http_503`, `timeout`, …).
    pub fn as_string(self) -> String {
        match self {
            FailReason::ConnectRefused => "connect_refused".into(),
            FailReason::ConnectError => "connect_error".into(),
            FailReason::Http(status) => format!("http_{status}"),
            FailReason::Disconnect => "disconnect".into(),
            FailReason::BadStream => "bad_stream".into(),
            FailReason::ServerError => "server_error".into(),
            FailReason::Timeout => "timeout".into(),
            FailReason::NoContent => "no_content".into(),
            FailReason::EventTooLarge => "event_too_large".into(),
            FailReason::BodyTooLarge => "body_too_large".into(),
            FailReason::HeadersTooLarge => "headers_too_large".into(),
            FailReason::TlsCertificate => "tls_certificate".into(),
            FailReason::TlsHandshake => "tls_handshake".into(),
            FailReason::SessionAborted => "session_aborted".into(),
        }
    }

    /// Every reason but `http_<status>`, for reading reasons back.
    pub const NAMED: [FailReason; 13] = [
        FailReason::ConnectRefused,
        FailReason::ConnectError,
        FailReason::Disconnect,
        FailReason::BadStream,
        FailReason::ServerError,
        FailReason::Timeout,
        FailReason::NoContent,
        FailReason::EventTooLarge,
        FailReason::BodyTooLarge,
        FailReason::HeadersTooLarge,
        FailReason::TlsCertificate,
        FailReason::TlsHandshake,
        FailReason::SessionAborted,
    ];

    /// The reason whose [`FailReason::as_string`] is `text` (the spool
    /// stores reasons as the trace writes them and reads them back).
    pub fn parse(text: &str) -> Option<FailReason> {
        if let Some(status) = text.strip_prefix("http_") {
            return status.parse().ok().map(FailReason::Http);
        }
        FailReason::NAMED
            .into_iter()
            .find(|r| r.as_string() == text)
    }
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ending {
    /// The response finished normally at `completed_ms`.
    Completed {
        /// When the end marker arrived, ms since t0.
        completed_ms: f64,
    },
    /// The request failed at `ended_ms`.
    Failed {
        /// Why.
        reason: FailReason,
        /// When the failure was observed, ms since t0.
        ended_ms: f64,
    },
    /// Still running when the run was cancelled (horizon or interrupt).
    InFlight,
}

impl Ending {
    /// When the request completed or failed; `None` in flight.
    pub fn ended_ms(&self) -> Option<f64> {
        match self {
            Ending::Completed { completed_ms } => Some(*completed_ms),
            Ending::Failed { ended_ms, .. } => Some(*ended_ms),
            Ending::InFlight => None,
        }
    }
}

/// What was observed of one request so far; kept outside the request future
/// so a timeout or cancellation still knows whether a first token came.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    /// When the request was handed to the transport, ms since t0.
    pub sent_ms: Option<f64>,
    /// When the first model token of any kind (reasoning included)
    /// arrived, ms since t0.
    pub first_token_ms: Option<f64>,
    /// When the first answer token arrived, ms since t0.
    pub first_answer_ms: Option<f64>,
    /// Chunks that carried content.
    pub content_chunks: u64,
    /// `usage.completion_tokens`, when the server sent a usage block.
    pub usage_output_tokens: Option<u64>,
    /// `usage.prompt_tokens`, when the server sent a usage block.
    pub usage_prompt_tokens: Option<u64>,
    /// The reasoning tokens inside `usage_output_tokens`, when the usage
    /// block said (`completion_tokens_details.reasoning_tokens`, …).
    pub usage_reasoning_tokens: Option<u64>,
    /// A choice carried a finish reason.
    pub finished: bool,
    /// The first bytes of what the server said about its failure (see the
    /// module documentation); never written as they are.
    pub error_head: Option<ErrorHead>,
    /// The row's `errorText` label, made from `error_head` by the runner
    /// ([`crate::transport::error_text`]).
    pub error_text: Option<String>,
    /// The gaps between consecutive content events, ms, each the difference
    /// of the two events' instants rounded to the microsecond (so they add
    /// up to last − first content exactly as the trace writes them); empty
    /// once more than the trace's per-row cap came (`gaps_dropped`).
    pub gaps_ms: Vec<f64>,
    /// More gaps came than a trace row may hold: the row carries none.
    pub gaps_dropped: bool,
    /// The last content event's instant, rounded to the microsecond.
    pub last_content_ms: Option<f64>,
    /// What the server said of its own timing (`server.*` labels:
    /// [`goodput_core::server_timing`]), from the response's
    /// `Server-Timing` header and its closing events; beside the client's
    /// instants, never instead of them.
    pub server: Labels,
    /// Which of the server's timing sources the response carried.
    pub server_sources: Sources,
}

impl Observation {
    /// Notes a content event at `now_ms`: its gap after the previous one.
    fn content_event(&mut self, now_ms: f64) {
        use goodput_core::trace::model::MAX_GAPS_PER_ROW;
        use goodput_core::trace::write::round_us;
        let at = round_us(now_ms);
        if let Some(last) = self.last_content_ms {
            if self.gaps_ms.capacity() == 0 {
                // Room for a typical answer's gaps at once: the list then
                // grows (by doubling) only past that many tokens, not a
                // handful of times in every stream.
                self.gaps_ms.reserve(GAPS_RESERVED.min(MAX_GAPS_PER_ROW));
            }
            if self.gaps_ms.len() < MAX_GAPS_PER_ROW {
                self.gaps_ms.push(round_us(at - last));
            } else if !self.gaps_dropped {
                self.gaps_dropped = true;
                self.gaps_ms = Vec::new();
            }
        }
        self.last_content_ms = Some(at);
    }

    /// The row's `gapsMs`: `None` when they were dropped.
    pub fn gaps(&self) -> Option<Vec<f64>> {
        (!self.gaps_dropped).then(|| self.gaps_ms.clone())
    }

    /// Notes the tokens of one event received at `now_ms`.
    fn tokens(&mut self, tokens: Tokens, now_ms: f64) {
        if tokens.any() {
            self.content_chunks += 1;
            self.first_token_ms.get_or_insert(now_ms);
            self.content_event(now_ms);
        }
        if tokens.answer {
            self.first_answer_ms.get_or_insert(now_ms);
        }
    }

    /// Reads the server's timing from a closing event's JSON `data` (the
    /// one with a finish reason or the usage: where llama.cpp puts
    /// `timings` and vLLM `metrics`). Token-only events are never parsed
    /// twice.
    fn server_report(&mut self, data: &[u8]) {
        let seen = server_timing::read_event(data, &mut self.server);
        self.server_sources = self.server_sources.or(seen);
    }

    /// Reads the response's `Server-Timing` header lines.
    fn server_header(&mut self, lines: &[String]) {
        if server_timing::read_server_timing(lines.iter().map(String::as_str), &mut self.server) {
            self.server_sources.server_timing = true;
        }
    }

    /// Takes what a usage block says (a later block overrides an earlier
    /// one member by member: Messages sends the prompt count first and the
    /// output count last).
    fn usage(&mut self, u: Usage) {
        if u.completion_tokens.is_some() {
            self.usage_output_tokens = u.completion_tokens;
        }
        if u.prompt_tokens.is_some() {
            self.usage_prompt_tokens = u.prompt_tokens;
        }
        if u.reasoning_tokens.is_some() {
            self.usage_reasoning_tokens = u.reasoning_tokens;
        }
    }
}

/// The gaps a request's list has room for from its first gap (8 bytes
/// each): answers up to this long never grow the list again.
pub const GAPS_RESERVED: usize = 256;

/// The SSE-reading half of a request, without I/O: feed frames, get the ending.
#[derive(Debug)]
pub struct StreamState {
    parser: SseParser,
    /// The API's reading of one event.
    read: Reader,
}

impl Default for StreamState {
    /// A chat stream with the default bound.
    fn default() -> StreamState {
        StreamState::new(Api::Chat, crate::exchange::sse::DEFAULT_MAX_EVENT_BYTES)
    }
}

impl StreamState {
    /// A stream of `api`'s events whose lines and events may hold
    /// `max_event_bytes` each.
    pub fn new(api: Api, max_event_bytes: usize) -> StreamState {
        StreamState {
            parser: SseParser::with_limit(max_event_bytes),
            read: reader(api),
        }
    }

    /// Reads one frame received at `now_ms`; returns the ending when the frame
    /// decides it. Events after a deciding one in the same frame are ignored.
    pub fn feed(&mut self, obs: &mut Observation, frame: &[u8], now_ms: f64) -> Option<Ending> {
        let mut ending = None;
        let pushed = self.parser.push(frame, |event| {
            if ending.is_some() {
                return;
            }
            let data = event.data;
            let chunk = (self.read)(event);
            if closing(&chunk) {
                obs.server_report(data);
            }
            ending = take(obs, chunk, now_ms);
        });
        match pushed {
            // An event decided before the bound was passed: that decides.
            Err(_) if ending.is_none() => Some(Ending::Failed {
                reason: FailReason::EventTooLarge,
                ended_ms: now_ms,
            }),
            _ => ending,
        }
    }

    /// The body ended cleanly at `now_ms` without `[DONE]`.
    pub fn end_of_body(&mut self, obs: &Observation, now_ms: f64) -> Ending {
        if obs.finished {
            finish(obs, now_ms)
        } else {
            Ending::Failed {
                reason: FailReason::BadStream,
                ended_ms: now_ms,
            }
        }
    }
}

/// Whether an event closes the answer (a finish reason or usage): the
/// events a server's own timing comes in.
fn closing(chunk: &Chunk) -> bool {
    matches!(chunk, Chunk::Data { finished, usage, .. } if *finished || usage.is_some())
}

/// Notes one event's [`Chunk`] received at `now_ms`; the ending when it
/// decides one.
fn take(obs: &mut Observation, chunk: Chunk, now_ms: f64) -> Option<Ending> {
    match chunk {
        Chunk::Done(usage) => {
            if let Some(u) = usage {
                obs.usage(u);
            }
            Some(finish(obs, now_ms))
        }
        Chunk::Data {
            tokens,
            finished,
            usage,
        } => {
            obs.tokens(tokens, now_ms);
            obs.finished |= finished;
            if let Some(u) = usage {
                obs.usage(u);
            }
            None
        }
        Chunk::ServerError(message) => {
            obs.error_head = Some(ErrorHead::of(message.as_bytes()));
            Some(Ending::Failed {
                reason: FailReason::ServerError,
                ended_ms: now_ms,
            })
        }
        Chunk::Malformed => Some(Ending::Failed {
            reason: FailReason::BadStream,
            ended_ms: now_ms,
        }),
    }
}

fn finish(obs: &Observation, now_ms: f64) -> Ending {
    if obs.first_token_ms.is_some() {
        Ending::Completed {
            completed_ms: now_ms,
        }
    } else {
        Ending::Failed {
            reason: FailReason::NoContent,
            ended_ms: now_ms,
        }
    }
}

/// What is left of a response once its ending is known.
pub enum Leftover<B> {
    /// Nothing: the body was read to its end or dropped with its connection.
    Nothing,
    /// A completed stream: drain its end so the connection can be reused.
    Drain(B),
    /// A non-2xx response: read the first bytes of its body for the error text.
    ErrorBody(B),
}

/// How a response is read: which API's events, and the bound on one SSE
/// line or event (and on a 2xx body that is not a stream, or an
/// embeddings document).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    /// The API whose events (or document) the response holds.
    pub api: Api,
    /// The most bytes one line, event or document may hold.
    pub max_event_bytes: usize,
}

impl Reading {
    /// A chat stream under `max_event_bytes`.
    pub fn chat(max_event_bytes: usize) -> Reading {
        Reading {
            api: Api::Chat,
            max_event_bytes,
        }
    }
}

/// Sends one request and reads it to its ending as `reading` says. Returns
/// what is left of the body (see [`Leftover`]). `on_first` is called, with
/// the observation so far, after the frame that carried the first token,
/// unless that frame also decided the ending (the ending then says it all),
/// and once more after the frame that carried the first answer when that
/// is a later frame (the observation then has `first_answer_ms`): the run
/// spools them so a recorder that dies keeps them. It costs two tests per
/// frame; nothing is done per token.
pub async fn exchange<T: Transport>(
    transport: &T,
    body: Bytes,
    clock: &Clock,
    obs: &mut Observation,
    reading: Reading,
    mut on_first: impl FnMut(&Observation),
) -> (Ending, Leftover<T::Body>) {
    let max_event_bytes = reading.max_event_bytes;
    obs.sent_ms = Some(clock.now_ms());
    let (head, mut response) = match transport.send(body).await {
        Ok(head) => head,
        Err(e) => {
            let reason = match e {
                SendError::Refused => FailReason::ConnectRefused,
                SendError::Connect(_) => FailReason::ConnectError,
                SendError::Disconnected(_) => FailReason::Disconnect,
                SendError::HeadTooLarge => FailReason::HeadersTooLarge,
                SendError::Tls(failure) => match failure.reason() {
                    "tls_certificate" => FailReason::TlsCertificate,
                    _ => FailReason::TlsHandshake,
                },
            };
            let ending = Ending::Failed {
                reason,
                ended_ms: clock.now_ms(),
            };
            return (ending, Leftover::Nothing);
        }
    };
    let Head {
        status,
        event_stream,
        server_timing,
    } = head;
    obs.server_header(&server_timing);
    if !(200..300).contains(&status) {
        let ending = Ending::Failed {
            reason: FailReason::Http(status),
            ended_ms: clock.now_ms(),
        };
        return (ending, Leftover::ErrorBody(response));
    }
    if reading.api == Api::Embeddings {
        let ending = read_embeddings(&mut response, clock, obs, max_event_bytes).await;
        return (ending, Leftover::Nothing);
    }
    if !event_stream {
        let ending = read_document(&mut response, clock, obs, max_event_bytes).await;
        return (ending, Leftover::Nothing);
    }
    let mut state = StreamState::new(reading.api, max_event_bytes);
    let mut told = Told::default();
    loop {
        match response.next_frame().await {
            Ok(Some(frame)) => {
                let now = clock.now_ms();
                if let Some(ending) = state.feed(obs, &frame, now) {
                    let leftover = match ending {
                        Ending::Completed { .. } => Leftover::Drain(response),
                        _ => Leftover::Nothing,
                    };
                    return (ending, leftover);
                }
                if told.news(obs) {
                    on_first(obs);
                }
            }
            Ok(None) => return (state.end_of_body(obs, clock.now_ms()), Leftover::Nothing),
            Err(_) => return (disconnect(clock), Leftover::Nothing),
        }
    }
}

/// What `on_first` was told so far.
#[derive(Debug, Default)]
struct Told {
    first: bool,
    answer: bool,
}

impl Told {
    /// Whether `obs` has a first token or a first answer not yet told
    /// (marking it told).
    fn news(&mut self, obs: &Observation) -> bool {
        if !self.first && obs.first_token_ms.is_some() {
            self.first = true;
            self.answer = obs.first_answer_ms.is_some();
            return true;
        }
        if self.first && !self.answer && obs.first_answer_ms.is_some() {
            self.answer = true;
            return true;
        }
        false
    }
}

fn disconnect(clock: &Clock) -> Ending {
    Ending::Failed {
        reason: FailReason::Disconnect,
        ended_ms: clock.now_ms(),
    }
}

/// Reads a 2xx body that is not an event stream: it carries no tokens, so
/// the request fails — `bad_stream` at its end, `body_too_large` past
/// `max_bytes` — keeping only its first bytes, for the error text.
async fn read_document<B: ResponseBody>(
    response: &mut B,
    clock: &Clock,
    obs: &mut Observation,
    max_bytes: usize,
) -> Ending {
    let mut first = Vec::new();
    let mut total = 0usize;
    let reason = loop {
        match response.next_frame().await {
            Ok(Some(frame)) => {
                let room = ERROR_TEXT_BYTES - first.len();
                first.extend_from_slice(&frame[..frame.len().min(room)]);
                total = total.saturating_add(frame.len());
                if total > max_bytes {
                    break FailReason::BodyTooLarge;
                }
            }
            Ok(None) => break FailReason::BadStream,
            Err(_) => break FailReason::Disconnect,
        }
    };
    // Cut unless the body ended cleanly within the kept bytes.
    let truncated = reason != FailReason::BadStream || total > first.len();
    obs.error_head = Some(ErrorHead {
        bytes: first,
        truncated,
    });
    Ending::Failed {
        reason,
        ended_ms: clock.now_ms(),
    }
}

/// Reads an embeddings document to the end of its body (at most
/// `max_bytes`, else `body_too_large`): completed at its end when it holds
/// vectors ([`embeddings::classify_document`]), failed `server_error` on an
/// error object, `bad_stream` otherwise (its first bytes kept for the error
/// text). No first token: the answer is not streamed.
async fn read_embeddings<B: ResponseBody>(
    response: &mut B,
    clock: &Clock,
    obs: &mut Observation,
    max_bytes: usize,
) -> Ending {
    let mut doc = Vec::new();
    loop {
        match response.next_frame().await {
            Ok(Some(frame)) => {
                if doc.len() + frame.len() > max_bytes {
                    obs.error_head = Some(ErrorHead::of(&doc));
                    return Ending::Failed {
                        reason: FailReason::BodyTooLarge,
                        ended_ms: clock.now_ms(),
                    };
                }
                doc.extend_from_slice(&frame);
            }
            Ok(None) => break,
            Err(_) => return disconnect(clock),
        }
    }
    let now = clock.now_ms();
    match embeddings::classify_document(&doc) {
        Chunk::Done(usage) => {
            if let Some(u) = usage {
                obs.usage(u);
            }
            obs.finished = true;
            Ending::Completed { completed_ms: now }
        }
        chunk => {
            if chunk == Chunk::Malformed {
                obs.error_head = Some(ErrorHead::of(&doc));
            }
            take(obs, chunk, now).unwrap_or(Ending::Failed {
                reason: FailReason::BadStream,
                ended_ms: now,
            })
        }
    }
}

/// Runs one request until `deadline_ms` (its timeout, counted from its
/// arrival) under the run's cancellation signal, which carries the instant
/// the run stopped observing; `reading` says how the response is read;
/// `on_first` is told of the first token and the first answer
/// ([`exchange`]).
pub async fn run_one<T: Transport>(
    transport: &T,
    body: Bytes,
    clock: &Clock,
    deadline_ms: f64,
    mut cancel: watch::Receiver<Option<f64>>,
    reading: Reading,
    on_first: impl FnMut(&Observation),
) -> (Observation, Ending) {
    let mut obs = Observation::default();
    if cancel.borrow().is_some() {
        return (obs, Ending::InFlight);
    }
    let mut leftover = Leftover::Nothing;
    let mut ending = {
        let request = exchange(transport, body, clock, &mut obs, reading, on_first);
        // The cancellation first: once the run has taken its cut instant,
        // no frame read later may reach the row.
        tokio::select! {
            biased;
            () = cancelled(&mut cancel) => Ending::InFlight,
            (ending, rest) = request => {
                leftover = rest;
                ending
            }
            () = tokio::time::sleep_until(clock.at(deadline_ms)) => Ending::Failed {
                reason: FailReason::Timeout,
                ended_ms: clock.now_ms(),
            },
        }
    };
    // Another event loop may have stamped a frame in the instant between
    // the cut and its seeing the cancellation: nothing after the cut is kept.
    if let Some(cut_ms) = *cancel.borrow() {
        if obs.first_token_ms.is_some_and(|t| t > cut_ms) {
            obs.first_token_ms = None;
        }
        if obs.first_answer_ms.is_some_and(|t| t > cut_ms) {
            obs.first_answer_ms = None;
        }
        if ending.ended_ms().is_some_and(|t| t > cut_ms) {
            leftover = Leftover::Nothing;
            ending = Ending::InFlight;
        }
    }
    match leftover {
        Leftover::Nothing => {}
        Leftover::Drain(mut body) => {
            // Read the end of the chunked body so the connection returns to
            // the pool; it normally follows `[DONE]` in the same read.
            // Bounded, and it changes nothing in the row.
            let drain = async { while let Ok(Some(_)) = body.next_frame().await {} };
            let _ = tokio::time::timeout(Duration::from_millis(100), drain).await;
        }
        Leftover::ErrorBody(mut body) => {
            obs.error_head = Some(read_head(&mut body, ERROR_TEXT_WAIT).await);
        }
    }
    (obs, ending)
}

/// Resolves when the run is cancelled; never, if the sender is gone without
/// having cancelled (a dropped sender is not a cancellation).
async fn cancelled(cancel: &mut watch::Receiver<Option<f64>>) {
    if cancel.wait_for(Option::is_some).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// The event reader of `api`'s streams (embeddings are not streamed: their
/// document is read by [`embeddings`], and an event stream in answer to one
/// is read as chat chunks, which fail it as `no_content`).
pub fn reader(api: Api) -> Reader {
    match api {
        Api::Chat | Api::Completions | Api::Embeddings => chat::classify,
        Api::Responses => responses::classify,
        Api::Messages => messages::classify,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::sse::DEFAULT_MAX_EVENT_BYTES;
    use crate::transport::error_text::{label, Secrets};

    /// The label the runner makes of a kept error text (no secrets here).
    fn text(obs: &Observation) -> Option<String> {
        obs.error_head.as_ref()?.label(&Secrets::default())
    }

    fn error_text(bytes: &[u8]) -> Option<String> {
        label(bytes, false, &Secrets::default())
    }
    use std::collections::VecDeque;
    use std::sync::Mutex;

    fn feed_all(frames: &[(&str, f64)]) -> (Observation, Option<Ending>) {
        let mut obs = Observation::default();
        let mut state = StreamState::default();
        for (frame, t) in frames {
            if let Some(e) = state.feed(&mut obs, frame.as_bytes(), *t) {
                return (obs, Some(e));
            }
        }
        (obs, None)
    }

    const ROLE: &str =
        "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
    const TOK: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
    const FIN: &str = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    const USAGE: &str =
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n";
    const DONE: &str = "data: [DONE]\n\n";

    #[test]
    fn the_closing_chunk_s_timings_and_metrics_become_server_labels() {
        use goodput_core::trace::Scalar;
        // llama-server's last chunk (finish reason, usage and timings in one).
        let llama = "data: {\"choices\":[{\"finish_reason\":\"stop\",\"index\":0,\"delta\":{}}],\
            \"usage\":{\"completion_tokens\":2,\"prompt_tokens\":9},\
            \"timings\":{\"cache_n\":1,\"prompt_n\":8,\"prompt_ms\":43.25,\"predicted_n\":2,\"predicted_ms\":19.5}}\n\n";
        let (obs, _) = feed_all(&[(TOK, 5.0), (TOK, 6.0), (llama, 7.0), (DONE, 8.0)]);
        let num = |k: &str| match obs.server.get(k) {
            Some(Scalar::Number(x)) => Some(*x),
            _ => None,
        };
        assert_eq!(num("server.prefillMs"), Some(43.25));
        assert_eq!(num("server.decodeMs"), Some(19.5));
        assert_eq!(num("server.promptTokens"), Some(8.0));
        assert_eq!(num("server.cachedPromptTokens"), Some(1.0));
        assert!(obs.server_sources.llama_cpp && !obs.server_sources.vllm_metrics);
        // The client's instants are its own: the first token at 5, not moved.
        assert_eq!(obs.first_token_ms, Some(5.0));
        // vLLM puts `metrics` on its usage chunk.
        let vllm = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2},\
            \"metrics\":{\"queue_time_ms\":12.5,\"time_to_first_token_ms\":40}}\n\n";
        let (obs, _) = feed_all(&[(TOK, 5.0), (FIN, 6.0), (vllm, 7.0), (DONE, 8.0)]);
        assert_eq!(obs.server_sources.names().as_deref(), Some("vllm-metrics"));
        assert_eq!(
            obs.server.get("server.queueMs"),
            Some(&Scalar::Number(12.5))
        );
        assert_eq!(
            obs.server.get("server.prefillMs"),
            Some(&Scalar::Number(27.5))
        );
        // A token chunk that happens to name `timings` is not read as the
        // server's word: only closing events are.
        let sly = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"timings\":{\"prompt_ms\":1}}\n\n";
        let (obs, _) = feed_all(&[(sly, 5.0), (FIN, 6.0), (DONE, 7.0)]);
        assert!(obs.server.is_empty() && obs.server_sources.is_none());
    }

    #[test]
    fn the_first_token_is_the_first_frame_with_content_not_the_role_chunk() {
        let (obs, ending) = feed_all(&[
            (ROLE, 10.0),
            (TOK, 20.0),
            (TOK, 30.0),
            (&format!("{TOK}{FIN}{USAGE}"), 40.0),
            (DONE, 41.0),
        ]);
        assert_eq!(obs.first_token_ms, Some(20.0));
        assert_eq!(obs.content_chunks, 3);
        assert_eq!(obs.usage_output_tokens, Some(3));
        assert_eq!(obs.usage_prompt_tokens, Some(7));
        assert_eq!(ending, Some(Ending::Completed { completed_ms: 41.0 }));
    }

    /// `frames` of `api`'s stream fed at their instants.
    fn feed_api(api: Api, frames: &[(&str, f64)]) -> (Observation, Option<Ending>) {
        let mut obs = Observation::default();
        let mut state = StreamState::new(api, sse::DEFAULT_MAX_EVENT_BYTES);
        for (frame, t) in frames {
            if let Some(e) = state.feed(&mut obs, frame.as_bytes(), *t) {
                return (obs, Some(e));
            }
        }
        (obs, None)
    }

    /// Thinking at 10 and 20 ms, the answer from 30 ms (its event split
    /// across two frames: stamped when its end arrives, at 31), the end at
    /// 40: first token 10, first answer 31, 4 content events, gaps 10, 11, 9
    /// (the reasoning events count), and each API's reasoning count.
    #[test]
    fn every_api_stamps_the_first_token_at_reasoning_and_the_first_answer_at_text() {
        let chat_think = "data: {\"choices\":[{\"delta\":{\"reasoning\":\"hm\"}}]}\n\n";
        let chat_end = "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4,\"completion_tokens_details\":{\"reasoning_tokens\":2}}}\n\ndata: [DONE]\n\n";
        let resp_think = "data: {\"type\":\"response.reasoning_text.delta\",\"delta\":\"hm\"}\n\n";
        let resp_end = "data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":3,\"output_tokens\":4,\"output_tokens_details\":{\"reasoning_tokens\":2}}}}\n\n";
        let msg_think = "data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n";
        let msg_end = "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}\n\ndata: {\"type\":\"message_stop\"}\n\n";
        let cases = [
            (Api::Chat, chat_think, TOK, chat_end, Some(2)),
            (
                Api::Responses,
                resp_think,
                "data: {\"type\":\"response.output_text.delta\",\"delta\":\"a\"}\n\n",
                resp_end,
                Some(2),
            ),
            (
                Api::Messages,
                msg_think,
                "data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\",\"text\":\"a\"}}\n\n",
                msg_end,
                None,
            ),
        ];
        for (api, think, answer, end, reasoning) in cases {
            let (head, tail) = answer.split_at(answer.len() / 2);
            let (obs, ending) = feed_api(
                api,
                &[
                    (think, 10.0),
                    (think, 20.0),
                    (head, 30.0),
                    (tail, 31.0),
                    (answer, 40.0),
                    (end, 41.0),
                ],
            );
            assert_eq!(
                ending,
                Some(Ending::Completed { completed_ms: 41.0 }),
                "{api:?}"
            );
            assert_eq!(obs.first_token_ms, Some(10.0), "{api:?}");
            assert_eq!(obs.first_answer_ms, Some(31.0), "{api:?}");
            assert_eq!(obs.content_chunks, 4, "{api:?}");
            assert_eq!(obs.gaps_ms, [10.0, 11.0, 9.0], "{api:?}");
            assert_eq!(obs.usage_output_tokens, Some(4), "{api:?}");
            assert_eq!(obs.usage_reasoning_tokens, reasoning, "{api:?}");
        }
    }

    #[test]
    fn error_events_of_every_api_fail_the_row_with_their_message() {
        let cases = [
            (Api::Chat, "event: error\ndata: out of memory\n\n"),
            (
                Api::Responses,
                "data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"message\":\"out of memory\"}}}\n\n",
            ),
            (
                Api::Responses,
                "event: error\ndata: {\"type\":\"error\",\"message\":\"out of memory\"}\n\n",
            ),
            (
                Api::Messages,
                "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"out of memory\"}}\n\n",
            ),
        ];
        for (api, error) in cases {
            let (obs, ending) = feed_api(api, &[(error, 7.0)]);
            assert_eq!(
                ending,
                Some(Ending::Failed {
                    reason: FailReason::ServerError,
                    ended_ms: 7.0
                }),
                "{api:?}"
            );
            assert_eq!(text(&obs).as_deref(), Some("out of memory"), "{api:?}");
        }
        // A stream that ends with nothing but reasoning still completes: the
        // row has a first token and no answer (the analyzer's `no_answer`).
        let think = "data: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hm\"}}\n\n";
        let (obs, ending) = feed_api(
            Api::Messages,
            &[(think, 5.0), ("data: {\"type\":\"message_stop\"}\n\n", 6.0)],
        );
        assert_eq!(ending, Some(Ending::Completed { completed_ms: 6.0 }));
        assert_eq!((obs.first_token_ms, obs.first_answer_ms), (Some(5.0), None));
    }

    /// Content at 20.0004, 30.0001, and twice at 45 (one frame): gaps
    /// between the µs-rounded instants 20, 30, 45, 45 → 10, 15, 0; the
    /// role chunk is no content event.
    #[test]
    fn gaps_are_the_differences_of_content_instants_rounded_to_the_microsecond() {
        let (obs, _) = feed_all(&[
            (ROLE, 10.0),
            (TOK, 20.0000004),
            (TOK, 30.0000001),
            (&format!("{TOK}{TOK}"), 45.0),
            (DONE, 46.0),
        ]);
        assert_eq!(obs.gaps_ms, [10.0, 15.0, 0.0]);
        assert_eq!(obs.gaps(), Some(vec![10.0, 15.0, 0.0]));
    }

    #[test]
    fn a_stream_with_no_content_fails_as_no_content() {
        let (_, ending) = feed_all(&[(ROLE, 1.0), (FIN, 2.0), (DONE, 3.0)]);
        assert_eq!(
            ending,
            Some(Ending::Failed {
                reason: FailReason::NoContent,
                ended_ms: 3.0
            })
        );
    }

    #[test]
    fn garbage_and_error_objects_end_the_request_at_their_frame() {
        let (obs, ending) = feed_all(&[(TOK, 5.0), ("data: {\"choices\":[\n\n", 6.0)]);
        assert_eq!(obs.first_token_ms, Some(5.0));
        assert_eq!(
            ending,
            Some(Ending::Failed {
                reason: FailReason::BadStream,
                ended_ms: 6.0
            })
        );
        let (_, ending) = feed_all(&[
            (TOK, 5.0),
            ("data: {\"error\":{\"message\":\"x\"}}\n\n", 7.0),
        ]);
        assert_eq!(
            ending,
            Some(Ending::Failed {
                reason: FailReason::ServerError,
                ended_ms: 7.0
            })
        );
    }

    #[test]
    fn a_clean_end_without_done_completes_only_after_a_finish_reason() {
        let mut obs = Observation::default();
        let mut state = StreamState::default();
        assert_eq!(state.feed(&mut obs, TOK.as_bytes(), 1.0), None);
        assert_eq!(
            state.end_of_body(&obs, 2.0),
            Ending::Failed {
                reason: FailReason::BadStream,
                ended_ms: 2.0
            }
        );
        assert_eq!(state.feed(&mut obs, FIN.as_bytes(), 3.0), None);
        assert_eq!(
            state.end_of_body(&obs, 4.0),
            Ending::Completed { completed_ms: 4.0 }
        );
    }

    /// A transport that plays back a script: a head (or a send error), then
    /// frames, then an end (clean, broken, or never).
    struct Scripted {
        head: Result<u16, SendError>,
        /// The head's Content-Type is `text/event-stream` (or absent).
        event_stream: bool,
        frames: Vec<&'static str>,
        end: ScriptEnd,
    }

    #[derive(Clone, Copy)]
    enum ScriptEnd {
        Clean,
        Broken,
        Hang,
    }

    struct ScriptBody(Mutex<VecDeque<&'static str>>, ScriptEnd);

    impl ResponseBody for ScriptBody {
        async fn next_frame(
            &mut self,
        ) -> Result<Option<Bytes>, crate::transport::client::BodyError> {
            let next = self.0.lock().unwrap().pop_front();
            match (next, self.1) {
                (Some(f), _) => Ok(Some(Bytes::from_static(f.as_bytes()))),
                (None, ScriptEnd::Clean) => Ok(None),
                (None, ScriptEnd::Broken) => {
                    Err(crate::transport::client::BodyError("reset".into()))
                }
                (None, ScriptEnd::Hang) => std::future::pending().await,
            }
        }
    }

    impl Transport for Scripted {
        type Body = ScriptBody;
        async fn send(&self, _body: Bytes) -> Result<(Head, ScriptBody), SendError> {
            let status = self.head.clone()?;
            Ok((
                Head {
                    status,
                    event_stream: self.event_stream,
                    ..Head::default()
                },
                ScriptBody(Mutex::new(self.frames.iter().copied().collect()), self.end),
            ))
        }
    }

    async fn play(
        script: Scripted,
        timeout_ms: u64,
        cancel_after_ms: Option<u64>,
    ) -> (Observation, Ending) {
        play_cut(
            script,
            timeout_ms,
            cancel_after_ms.map(|ms| (ms, ms as f64)),
        )
        .await
    }

    /// [`play`], the run cancelled after `.0` ms with `.1` as its cut instant.
    async fn play_cut(
        script: Scripted,
        timeout_ms: u64,
        cancel: Option<(u64, f64)>,
    ) -> (Observation, Ending) {
        let clock = Clock::new(Instant::now());
        let (tx, rx) = watch::channel(None);
        if let Some((after_ms, cut_ms)) = cancel {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(after_ms)).await;
                let _ = tx.send(Some(cut_ms));
            });
        } else {
            drop(tx);
        }
        run_one(
            &script,
            Bytes::new(),
            &clock,
            timeout_ms as f64,
            rx,
            Reading::chat(DEFAULT_MAX_EVENT_BYTES),
            |_: &Observation| {},
        )
        .await
    }

    fn reason(e: Ending) -> Option<FailReason> {
        match e {
            Ending::Failed { reason, .. } => Some(reason),
            _ => None,
        }
    }

    #[tokio::test]
    async fn every_failure_kind_gets_its_reason() {
        let cases = [
            (
                Scripted {
                    head: Err(SendError::Refused),
                    event_stream: true,
                    frames: vec![],
                    end: ScriptEnd::Clean,
                },
                FailReason::ConnectRefused,
            ),
            (
                Scripted {
                    head: Err(SendError::Connect("dns".into())),
                    event_stream: true,
                    frames: vec![],
                    end: ScriptEnd::Clean,
                },
                FailReason::ConnectError,
            ),
            (
                Scripted {
                    head: Err(SendError::Disconnected("eof".into())),
                    event_stream: true,
                    frames: vec![],
                    end: ScriptEnd::Clean,
                },
                FailReason::Disconnect,
            ),
            (
                Scripted {
                    head: Ok(503),
                    event_stream: true,
                    frames: vec![],
                    end: ScriptEnd::Clean,
                },
                FailReason::Http(503),
            ),
            (
                Scripted {
                    head: Ok(200),
                    event_stream: true,
                    frames: vec![ROLE, TOK],
                    end: ScriptEnd::Broken,
                },
                FailReason::Disconnect,
            ),
            (
                Scripted {
                    head: Ok(200),
                    event_stream: true,
                    frames: vec![TOK, "data: nope\n\n"],
                    end: ScriptEnd::Clean,
                },
                FailReason::BadStream,
            ),
            (
                Scripted {
                    head: Ok(200),
                    event_stream: true,
                    frames: vec![TOK, "event: error\ndata: x\n\n"],
                    end: ScriptEnd::Clean,
                },
                FailReason::ServerError,
            ),
            (
                Scripted {
                    head: Ok(200),
                    event_stream: true,
                    frames: vec![TOK],
                    end: ScriptEnd::Hang,
                },
                FailReason::Timeout,
            ),
        ];
        for (script, want) in cases {
            let (_, ending) = play(script, 50, None).await;
            assert_eq!(reason(ending), Some(want));
            assert_eq!(FailReason::Http(429).as_string(), "http_429");
        }
    }

    #[tokio::test]
    async fn a_timeout_keeps_the_first_token_and_ends_after_the_deadline() {
        let script = Scripted {
            head: Ok(200),
            event_stream: true,
            frames: vec![ROLE, TOK],
            end: ScriptEnd::Hang,
        };
        let (obs, ending) = play(script, 40, None).await;
        assert!(obs.first_token_ms.is_some());
        match ending {
            Ending::Failed {
                reason: FailReason::Timeout,
                ended_ms,
            } => assert!(ended_ms >= 40.0),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn nothing_observed_after_the_cut_instant_reaches_the_row() {
        // The run says it stopped observing at -1 ms (before this request's
        // first token, which came at about 0 ms): as when another event
        // loop took the cut an instant before this one read a frame.
        let script = Scripted {
            head: Ok(200),
            event_stream: true,
            frames: vec![TOK],
            end: ScriptEnd::Hang,
        };
        let (obs, ending) = play_cut(script, 10_000, Some((20, -1.0))).await;
        assert_eq!(ending, Ending::InFlight);
        assert_eq!(
            obs.first_token_ms, None,
            "the first token came after the cut"
        );
    }

    #[tokio::test]
    async fn cancellation_leaves_the_request_in_flight_with_its_first_token() {
        let script = Scripted {
            head: Ok(200),
            event_stream: true,
            frames: vec![TOK],
            end: ScriptEnd::Hang,
        };
        let (obs, ending) = play(script, 10_000, Some(20)).await;
        assert_eq!(ending, Ending::InFlight);
        assert!(obs.first_token_ms.is_some());
    }

    /// The observations `on_first` was called with, over one exchange of `frames`.
    async fn told_of_first(frames: Vec<&'static str>) -> (Vec<Observation>, Ending) {
        let script = Scripted {
            head: Ok(200),
            event_stream: true,
            frames,
            end: ScriptEnd::Clean,
        };
        let clock = Clock::new(Instant::now());
        let told = Mutex::new(Vec::new());
        let mut obs = Observation::default();
        let (ending, _) = exchange(
            &script,
            Bytes::new(),
            &clock,
            &mut obs,
            Reading::chat(1000),
            |o| told.lock().unwrap().push(o.clone()),
        )
        .await;
        (told.into_inner().unwrap(), ending)
    }

    #[tokio::test]
    async fn the_first_token_is_told_once_and_not_when_its_frame_ends_the_request() {
        // Role chunk, three tokens, finish, done: told once, after the
        // first token's frame (one chunk counted, the first token stamped).
        let (told, ending) = told_of_first(vec![ROLE, TOK, TOK, TOK, FIN, DONE]).await;
        assert!(matches!(ending, Ending::Completed { .. }), "{ending:?}");
        assert_eq!(told.len(), 1);
        assert_eq!(told[0].content_chunks, 1);
        assert!(told[0].first_token_ms.is_some() && told[0].sent_ms.is_some());
        // One frame holding the token and the end: the ending says it all.
        let whole: &'static str = Box::leak(format!("{TOK}{FIN}{DONE}").into_boxed_str());
        let (told, ending) = told_of_first(vec![whole]).await;
        assert!(matches!(ending, Ending::Completed { .. }), "{ending:?}");
        assert!(told.is_empty());
        // No content at all: never told.
        let (told, _) = told_of_first(vec![ROLE, FIN, DONE]).await;
        assert!(told.is_empty());
    }

    #[tokio::test]
    async fn a_first_answer_after_reasoning_is_told_a_second_time() {
        const THINK: &str = "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hm\"}}]}\n\n";
        // Thinking, thinking, answer, answer, end: told after the first
        // thinking frame (no answer yet) and after the first answer frame.
        let (told, ending) = told_of_first(vec![ROLE, THINK, THINK, TOK, TOK, FIN, DONE]).await;
        assert!(matches!(ending, Ending::Completed { .. }), "{ending:?}");
        assert_eq!(told.len(), 2);
        assert_eq!((told[0].content_chunks, told[0].first_answer_ms), (1, None));
        assert_eq!(told[1].content_chunks, 3);
        assert!(told[1].first_answer_ms.is_some());
        // No reasoning: the one telling carries the answer already.
        let (told, _) = told_of_first(vec![ROLE, TOK, TOK, FIN, DONE]).await;
        assert_eq!(told.len(), 1);
        assert_eq!(told[0].first_answer_ms, told[0].first_token_ms);
    }

    #[tokio::test]
    async fn a_normal_stream_completes_with_usage_tokens() {
        let script = Scripted {
            head: Ok(200),
            event_stream: true,
            frames: vec![ROLE, TOK, TOK, FIN, USAGE, DONE],
            end: ScriptEnd::Clean,
        };
        let (obs, ending) = play(script, 1_000, None).await;
        assert!(matches!(ending, Ending::Completed { .. }));
        assert_eq!(obs.usage_output_tokens, Some(3));
        assert_eq!(obs.content_chunks, 2);
    }

    fn failed(reason: FailReason) -> impl Fn(&Ending) -> bool {
        move |e| matches!(e, Ending::Failed { reason: r, .. } if *r == reason)
    }

    #[tokio::test]
    async fn an_event_past_the_bound_ends_the_request_as_event_too_large() {
        // The lines: TOK's `data: {…}` is 45 bytes, FIN's 55.
        let clock = Clock::new(Instant::now());
        let run = |limit| {
            let script = Scripted {
                head: Ok(200),
                event_stream: true,
                frames: vec![TOK, FIN, DONE],
                end: ScriptEnd::Hang,
            };
            async move {
                let mut obs = Observation::default();
                let (ending, _) = exchange(
                    &script,
                    Bytes::new(),
                    &clock,
                    &mut obs,
                    Reading::chat(limit),
                    |_| {},
                )
                .await;
                (obs, ending)
            }
        };
        let (obs, ending) = run(55).await;
        assert!(matches!(ending, Ending::Completed { .. }), "{ending:?}");
        assert_eq!(obs.content_chunks, 1);
        let (obs, ending) = run(54).await;
        assert!(failed(FailReason::EventTooLarge)(&ending), "{ending:?}");
        assert_eq!(obs.content_chunks, 1, "the token before the bound counts");
        let (obs, ending) = run(44).await;
        assert!(failed(FailReason::EventTooLarge)(&ending), "{ending:?}");
        assert_eq!(obs.first_token_ms, None);
    }

    #[tokio::test]
    async fn a_2xx_body_that_is_not_a_stream_fails_with_its_first_characters() {
        let doc = |frames, end| Scripted {
            head: Ok(200),
            event_stream: false,
            frames,
            end,
        };
        let clock = Clock::new(Instant::now());
        let mut obs = Observation::default();
        let page = doc(
            vec!["<html>\n<b>bad", " gateway</b></html>"],
            ScriptEnd::Clean,
        );
        let (ending, _) = exchange(
            &page,
            Bytes::new(),
            &clock,
            &mut obs,
            Reading::chat(1000),
            |_| {},
        )
        .await;
        assert!(failed(FailReason::BadStream)(&ending), "{ending:?}");
        assert_eq!(
            text(&obs).as_deref(),
            Some("<html> <b>bad gateway</b></html>")
        );
        // 32 bytes in all (13 + 19): a bound of 32 takes them, 31 does not.
        let mut obs = Observation::default();
        let page = doc(
            vec!["<html>\n<b>bad", " gateway</b></html>"],
            ScriptEnd::Clean,
        );
        let (ending, _) = exchange(
            &page,
            Bytes::new(),
            &clock,
            &mut obs,
            Reading::chat(32),
            |_| {},
        )
        .await;
        assert!(failed(FailReason::BadStream)(&ending), "{ending:?}");
        let mut obs = Observation::default();
        let page = doc(
            vec!["<html>\n<b>bad", " gateway</b></html>"],
            ScriptEnd::Hang,
        );
        let (ending, _) = exchange(
            &page,
            Bytes::new(),
            &clock,
            &mut obs,
            Reading::chat(31),
            |_| {},
        )
        .await;
        assert!(failed(FailReason::BodyTooLarge)(&ending), "{ending:?}");
        assert_eq!(
            text(&obs).as_deref(),
            Some("<html> <b>bad gateway</b></html>")
        );
        // Even a body that is an SSE stream: the head says it is not one.
        let mut obs = Observation::default();
        let sse = doc(vec![TOK, FIN, DONE], ScriptEnd::Clean);
        let (ending, _) = exchange(
            &sse,
            Bytes::new(),
            &clock,
            &mut obs,
            Reading::chat(1000),
            |_| {},
        )
        .await;
        assert!(failed(FailReason::BadStream)(&ending), "{ending:?}");
        assert_eq!(obs.first_token_ms, None);
    }

    #[tokio::test]
    async fn an_error_status_keeps_the_first_200_characters_of_its_body() {
        let long: &'static str = Box::leak("0123456789".repeat(100).into_boxed_str());
        let script = Scripted {
            head: Ok(500),
            event_stream: false,
            frames: vec!["  ", long],
            end: ScriptEnd::Hang,
        };
        let (obs, ending) = play(script, 1_000, None).await;
        assert!(failed(FailReason::Http(500))(&ending), "{ending:?}");
        assert_eq!(text(&obs), Some("0123456789".repeat(20)));
        // A body that never comes leaves no text, and the same ending.
        let script = Scripted {
            head: Ok(503),
            event_stream: true,
            frames: vec![],
            end: ScriptEnd::Hang,
        };
        let (obs, ending) = play(script, 1_000, None).await;
        assert!(failed(FailReason::Http(503))(&ending), "{ending:?}");
        assert_eq!(text(&obs), None);
    }

    #[tokio::test]
    async fn an_error_event_keeps_its_message() {
        let script = Scripted {
            head: Ok(200),
            event_stream: true,
            frames: vec![
                TOK,
                "data: {\"object\":\"error\",\"message\":\"out of\\nmemory\"}\n\n",
            ],
            end: ScriptEnd::Clean,
        };
        let (obs, ending) = play(script, 1_000, None).await;
        assert!(failed(FailReason::ServerError)(&ending), "{ending:?}");
        assert_eq!(text(&obs).as_deref(), Some("out of memory"));
    }

    #[test]
    fn every_reason_reads_back_from_its_string() {
        // Each variant is named here by an exhaustive match, so a new reason
        // that is not in NAMED fails to compile this test or fails it.
        let listed = |r: FailReason| match r {
            FailReason::Http(_) => true,
            FailReason::ConnectRefused
            | FailReason::ConnectError
            | FailReason::Disconnect
            | FailReason::BadStream
            | FailReason::ServerError
            | FailReason::Timeout
            | FailReason::NoContent
            | FailReason::EventTooLarge
            | FailReason::BodyTooLarge
            | FailReason::HeadersTooLarge
            | FailReason::TlsCertificate
            | FailReason::TlsHandshake
            | FailReason::SessionAborted => FailReason::NAMED.contains(&r),
        };
        for r in FailReason::NAMED.into_iter().chain([FailReason::Http(503)]) {
            assert!(listed(r));
            assert_eq!(FailReason::parse(&r.as_string()), Some(r));
        }
        assert_eq!(FailReason::parse("http_x"), None);
        assert_eq!(FailReason::parse("gone"), None);
    }

    #[test]
    fn error_text_cuts_at_characters_not_bytes() {
        assert_eq!(error_text(b""), None);
        assert_eq!(error_text(b" \r\n\t "), None);
        assert_eq!(
            error_text("é".repeat(300).as_bytes()),
            Some("é".repeat(200))
        );
        // 800 bytes of 3-byte characters: 266 whole ones, then a cut one.
        assert_eq!(
            error_text("€".repeat(300).as_bytes()),
            Some("€".repeat(200))
        );
        let cut = &"€".as_bytes()[..2];
        assert_eq!(
            error_text(&[b"ok ".as_slice(), cut].concat()),
            Some("ok".into())
        );
        assert_eq!(error_text(b"a\xffb"), Some("a\u{fffd}b".into()));
    }
}
