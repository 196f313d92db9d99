//! The OpenAI-compatible HTTP face of the sim (hyper 1, HTTP/1.1 keep-alive).
//!
//! Routes: `POST /v1/chat/completions`, `POST /v1/completions` (streaming or
//! not; a final usage chunk when `stream_options.include_usage` is true),
//! `POST /v1/responses` and `POST /v1/messages` (their event shapes are
//! [`crate::dialect`]'s; Messages requires `max_tokens`, as Anthropic's
//! API does), `POST /v1/embeddings` (one vector of `--embedding-dim`
//! numbers per input, answered when the engine has run the request as a
//! one-step sequence: its prefill and one step, queued like any other),
//! `GET /v1/models`, `GET /health`, `GET /metrics` (the batch state under
//! vLLM's names, [`crate::exposition`]). Prompt length is counted with the
//! tokenizer given to `goodput sim --tokenizer` (each message's content,
//! summed, with no chat template), else as whitespace-separated words (the
//! recorder's prompts without a tokenizer are one word per token, so the
//! count is exact for them).
//! The output length is drawn from `--output-tokens MEAN:STD` (at least 1),
//! capped by `max_tokens` (`max_output_tokens` for Responses); with
//! `ignore_eos` and `max_tokens` it is exactly `max_tokens`. With
//! `--reasoning-tokens N` the first N output tokens of every stream are
//! reasoning (all of them when the output is shorter: the answer never
//! comes), counted in the usage as each API counts reasoning.

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{BufMut, Bytes, BytesMut};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use rand::RngExt;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde::Deserialize;
use tokio::sync::mpsc;

use crate::dialect::{Close, ClosingTiming, Dialect, Kind, Shape};
use crate::driver::EngineHandle;
use crate::engine::{SeqSpec, TokenOut};
use crate::fault::{pick, Fault, FaultKind};
use crate::quirks::StreamQuirks;

/// Largest request body accepted.
const MAX_REQUEST_BYTES: usize = 8 << 20;

/// Counters a test or benchmark can read.
#[derive(Debug, Default)]
pub struct SimStats {
    /// Completion requests received.
    pub requests: AtomicU64,
    /// Output tokens handed to response bodies.
    pub tokens: AtomicU64,
    /// TCP connections accepted.
    pub connections: AtomicU64,
}

/// Everything a request handler needs.
#[derive(Debug)]
pub struct AppState {
    /// The engine.
    pub engine: EngineHandle,
    /// Faults and their rates.
    pub faults: Vec<Fault>,
    /// Output length distribution: mean and standard deviation, tokens.
    pub output_tokens: (f64, f64),
    /// The name listed first by `/v1/models` (and answered by default).
    pub model_name: String,
    /// The names `/v1/models` lists after it.
    pub also_served: Vec<String>,
    /// How streamed responses are shaped.
    pub quirks: StreamQuirks,
    /// Counts prompt tokens, when given (else words are counted).
    pub tokenizer: Option<Arc<goodput_tokenizer::TokenCounter>>,
    /// Seeded generator for output lengths and fault draws.
    pub rng: Mutex<ChaCha8Rng>,
    /// Sequence ids.
    pub next_id: AtomicU64,
    /// Counters.
    pub stats: Arc<SimStats>,
    /// A header every request (but `/health`) must carry (`--require-header`).
    pub require_header: Option<crate::tls::RequiredHeader>,
}

#[derive(Deserialize)]
struct CompletionRequest {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    stream: bool,
    #[serde(default)]
    stream_options: Option<StreamOptions>,
    #[serde(default)]
    max_tokens: Option<u32>,
    #[serde(default)]
    max_completion_tokens: Option<u32>,
    #[serde(default)]
    max_output_tokens: Option<u32>,
    #[serde(default)]
    input: Option<serde_json::Value>,
    #[serde(default)]
    ignore_eos: bool,
    #[serde(default)]
    messages: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    prompt: Option<serde_json::Value>,
    /// `temperature: 0` asks for a deterministic answer: its length is the
    /// mean of `--output-tokens` (capped by `max_tokens`), not a draw.
    #[serde(default)]
    temperature: Option<f64>,
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

type SimBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

fn full(bytes: impl Into<Bytes>) -> SimBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

fn json_response(status: StatusCode, body: String) -> Response<SimBody> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn error_response(status: StatusCode, message: &str) -> Response<SimBody> {
    let body = serde_json::json!({
        "object": "error",
        "error": {"message": message, "type": "sim_error", "code": status.as_u16()},
        "message": message,
    });
    json_response(status, body.to_string())
}

/// Routes one request. `closer`, when given, is notified when a streamed
/// body ends (`--close-after-response`: the connection then shuts down).
pub async fn handle(
    state: Arc<AppState>,
    req: Request<Incoming>,
    closer: Option<Arc<tokio::sync::Notify>>,
) -> Result<Response<SimBody>, Infallible> {
    Ok(serve(&state, req, closer)
        .await
        .unwrap_or_else(|refusal| refusal.response()))
}

/// A request answered with an error before any token is made: its status
/// and message (an OpenAI error body).
struct Refusal {
    status: StatusCode,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Refusal {
        Refusal {
            status,
            message: message.into(),
        }
    }

    fn response(self) -> Response<SimBody> {
        error_response(self.status, &self.message)
    }
}

/// What a request asks for.
enum Route {
    Health,
    Metrics,
    Models,
    /// A generation in one of the streamed APIs.
    Completion {
        dialect: Dialect,
    },
    /// `/v1/embeddings`.
    Embeddings,
}

/// The header gate (not on `/health`), then the route's answer.
async fn serve(
    state: &AppState,
    req: Request<Incoming>,
    closer: Option<Arc<tokio::sync::Notify>>,
) -> Result<Response<SimBody>, Refusal> {
    if let Some(gate) = &state.require_header {
        if req.uri().path() != "/health" {
            if let Some(message) = gate.refuse(req.headers()) {
                return Err(Refusal::new(StatusCode::UNAUTHORIZED, message));
            }
        }
    }
    match route(req.method(), req.uri().path())? {
        Route::Health => Ok(Response::new(full(Bytes::new()))),
        Route::Metrics => Ok(metrics_page(state)),
        Route::Models => Ok(models_list(state)),
        Route::Completion { dialect } => complete(state, req, dialect, closer).await,
        Route::Embeddings => embed(state, req).await,
    }
}

/// The route of a method and path; 405 for a known path, 404 for any other.
fn route(method: &Method, path: &str) -> Result<Route, Refusal> {
    match (method, path) {
        (&Method::GET, "/health") => Ok(Route::Health),
        (&Method::GET, "/metrics") => Ok(Route::Metrics),
        (&Method::GET, "/v1/models") => Ok(Route::Models),
        (&Method::POST, path) if dialect_of(path).is_some() => Ok(Route::Completion {
            dialect: dialect_of(path).unwrap_or(Dialect::Chat),
        }),
        (&Method::POST, "/v1/embeddings") => Ok(Route::Embeddings),
        (_, "/health" | "/metrics" | "/v1/models" | "/v1/embeddings") => Err(Refusal::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed",
        )),
        (_, path) if dialect_of(path).is_some() => Err(Refusal::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method not allowed",
        )),
        _ => Err(Refusal::new(StatusCode::NOT_FOUND, "no such route")),
    }
}

/// The streamed API served at `path`, if any.
fn dialect_of(path: &str) -> Option<Dialect> {
    match path {
        "/v1/chat/completions" => Some(Dialect::Chat),
        "/v1/completions" => Some(Dialect::Completions),
        "/v1/responses" => Some(Dialect::Responses),
        "/v1/messages" => Some(Dialect::Messages),
        _ => None,
    }
}

/// `GET /metrics`: the batch state in the Prometheus text format.
fn metrics_page(state: &AppState) -> Response<SimBody> {
    let page = state.engine.gauges.render(&state.model_name);
    let mut response = Response::new(full(page));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    response
}

/// `GET /v1/models`: the model the sim serves, then every `--served-model`.
fn models_list(state: &AppState) -> Response<SimBody> {
    let data: Vec<serde_json::Value> = std::iter::once(&state.model_name)
        .chain(&state.also_served)
        .map(|id| serde_json::json!({"id": id, "object": "model", "created": 0, "owned_by": "goodput-sim"}))
        .collect();
    let body = serde_json::json!({"object": "list", "data": data});
    json_response(StatusCode::OK, body.to_string())
}

/// A completion: read the request, count its prompt, draw its output
/// length and fault, schedule it in the engine, and answer with the
/// engine's tokens as a stream or one JSON body.
async fn complete(
    state: &AppState,
    req: Request<Incoming>,
    dialect: Dialect,
    closer: Option<Arc<tokio::sync::Notify>>,
) -> Result<Response<SimBody>, Refusal> {
    let request = read_request(req).await?;
    state.stats.requests.fetch_add(1, Ordering::Relaxed);
    let prompt_tokens = count_prompt_tokens(state, &request, dialect)?;
    if dialect == Dialect::Messages && request.max_tokens.is_none() {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "max_tokens: Field required",
        ));
    }
    let draw = Draw::take(state, &request);
    refuse_drawn(&draw)?;
    let streaming = request.stream;
    let stream = schedule(state, request, dialect, prompt_tokens, &draw, closer);
    if streaming {
        let mut r = Response::new(stream.boxed());
        r.headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
        Ok(r)
    } else {
        Ok(whole_response(stream).await)
    }
}

/// The drawn fault when it is an error status, answered before any token.
fn refuse_drawn(draw: &Draw) -> Result<(), Refusal> {
    match draw.fault {
        Some(FaultKind::Http500) => Err(Refusal::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "injected fault",
        )),
        Some(FaultKind::Http429) => Err(Refusal::new(
            StatusCode::TOO_MANY_REQUESTS,
            "injected fault: rate limited",
        )),
        _ => Ok(()),
    }
}

/// `POST /v1/embeddings`: the inputs' prompt tokens run through the engine
/// as a one-step sequence (prefill and one step, queued like any other);
/// then one vector per input. A drawn error status answers at once; a
/// drawn disconnect breaks the body; the other faults do not apply.
async fn embed(state: &AppState, req: Request<Incoming>) -> Result<Response<SimBody>, Refusal> {
    let request = read_request(req).await?;
    state.stats.requests.fetch_add(1, Ordering::Relaxed);
    let inputs = embedding_inputs(state, request.input.as_ref())?;
    let draw = Draw::take(state, &request);
    refuse_drawn(&draw)?;
    let prompt_tokens: u32 = inputs
        .iter()
        .sum::<u32>()
        .saturating_add(state.quirks.template_tokens);
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let mut done = state.engine.submit(SeqSpec {
        id,
        prompt_tokens,
        output_tokens: 1,
    });
    if done.recv().await.is_none() || draw.fault == Some(FaultKind::Disconnect) {
        return Ok(Response::new(BrokenBody.boxed()));
    }
    let dim = state.quirks.embedding_dim.max(1) as usize;
    let data: Vec<serde_json::Value> = (0..inputs.len())
        .map(|i| {
            let vector: Vec<f64> = (0..dim)
                .map(|k| ((i + k) % 7) as f64 / 8.0 - 0.375)
                .collect();
            serde_json::json!({"object": "embedding", "index": i, "embedding": vector})
        })
        .collect();
    let model = request.model.unwrap_or_else(|| state.model_name.clone());
    let body = serde_json::json!({"object": "list", "data": data, "model": model,
        "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}});
    Ok(json_response(StatusCode::OK, body.to_string()))
}

/// The prompt tokens of each embeddings input: a string, an array of
/// strings, a token-id array, or an array of those; at least one.
fn embedding_inputs(
    state: &AppState,
    input: Option<&serde_json::Value>,
) -> Result<Vec<u32>, Refusal> {
    let tokenizer = state.tokenizer.as_deref();
    let counts = match input {
        Some(serde_json::Value::String(_)) => vec![count_prompt(tokenizer, input)],
        Some(serde_json::Value::Array(items))
            if items.iter().all(serde_json::Value::is_number) && !items.is_empty() =>
        {
            vec![items.len() as u32]
        }
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|item| count_prompt(tokenizer, Some(item)))
            .collect(),
        _ => Vec::new(),
    };
    if counts.is_empty() {
        return Err(Refusal::new(
            StatusCode::BAD_REQUEST,
            "`input` is required: a string or a non-empty array",
        ));
    }
    Ok(counts)
}

/// The body as a [`CompletionRequest`]: at most [`MAX_REQUEST_BYTES`], JSON.
async fn read_request(req: Request<Incoming>) -> Result<CompletionRequest, Refusal> {
    let bytes = match Limited::new(req.into_body(), MAX_REQUEST_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "unreadable or oversized body",
            ))
        }
    };
    serde_json::from_slice(&bytes)
        .map_err(|e| Refusal::new(StatusCode::BAD_REQUEST, format!("bad JSON: {e}")))
}

/// The prompt's length in tokens: the chat messages' contents summed, or
/// the completion's `prompt`; the field is required.
fn count_prompt_tokens(
    state: &AppState,
    request: &CompletionRequest,
    dialect: Dialect,
) -> Result<u32, Refusal> {
    let tokenizer = state.tokenizer.as_deref();
    let template = state.quirks.template_tokens;
    if dialect == Dialect::Responses {
        return match &request.input {
            Some(serde_json::Value::Array(items)) => Ok(items
                .iter()
                .map(|i| count_prompt(tokenizer, i.get("content").or(Some(i))))
                .sum::<u32>()
                .saturating_add(template)),
            Some(input) => Ok(count_prompt(tokenizer, Some(input)).saturating_add(template)),
            None => Err(Refusal::new(StatusCode::BAD_REQUEST, "`input` is required")),
        };
    }
    if dialect != Dialect::Completions {
        match &request.messages {
            Some(messages) => Ok(messages
                .iter()
                .map(|m| count_prompt(tokenizer, m.get("content")))
                .sum::<u32>()
                .saturating_add(template)),
            None => Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "`messages` is required",
            )),
        }
    } else {
        match &request.prompt {
            Some(p) => Ok(count_prompt(tokenizer, Some(p)).saturating_add(template)),
            None => Err(Refusal::new(
                StatusCode::BAD_REQUEST,
                "`prompt` is required",
            )),
        }
    }
}

/// What the seeded generator decided for one request: its fault, and its
/// output length (capped by `max_tokens`, exactly it with `ignore_eos`).
struct Draw {
    fault: Option<FaultKind>,
    output_tokens: u32,
    /// The length was set by the cap (finish reason `length`).
    by_length: bool,
}

impl Draw {
    fn take(state: &AppState, request: &CompletionRequest) -> Draw {
        let cap = request
            .max_completion_tokens
            .or(request.max_tokens)
            .or(request.max_output_tokens);
        let (fault, natural) = {
            // A poisoned lock only means another handler panicked mid-draw; the
            // generator state is still a valid generator state.
            let mut rng = state.rng.lock().unwrap_or_else(|p| p.into_inner());
            let u: f64 = rng.random();
            let (mean, std) = state.output_tokens;
            let natural = if std > 0.0 {
                Normal::new(mean, std).map_or(mean, |n| n.sample(&mut *rng))
            } else {
                mean
            };
            // Drawn either way, so the other requests' draws do not move.
            let natural = if request.temperature == Some(0.0) {
                mean
            } else {
                natural
            };
            (
                pick(&state.faults, u),
                natural.round().clamp(1.0, 1e6) as u32,
            )
        };
        let (output_tokens, by_length) = match cap {
            Some(cap) if request.ignore_eos => (cap.max(1), true),
            Some(cap) if natural >= cap => (cap.max(1), true),
            _ => (natural, false),
        };
        Draw {
            fault,
            output_tokens,
            by_length,
        }
    }
}

/// Submits the sequence to the engine; the returned body turns its tokens
/// into chunks (or, not streaming, collects them).
fn schedule(
    state: &AppState,
    request: CompletionRequest,
    dialect: Dialect,
    prompt_tokens: u32,
    draw: &Draw,
    closer: Option<Arc<tokio::sync::Notify>>,
) -> SimStream {
    let output_tokens = draw.output_tokens;
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let tokens = state.engine.submit(SeqSpec {
        id,
        prompt_tokens,
        output_tokens,
    });
    let first_word = crate::answer::first_word(
        &crate::answer::prompt_text(request.messages.as_deref(), request.prompt.as_ref()),
        state.quirks.corrupt_answers,
    );
    let model = request.model.unwrap_or_else(|| state.model_name.clone());
    let shape = Shape::new(dialect, id, &model, state.quirks.reasoning_field);
    let asked_usage = match dialect {
        Dialect::Chat | Dialect::Completions => {
            request.stream_options.is_some_and(|o| o.include_usage)
        }
        // Responses and Messages always report usage.
        Dialect::Responses | Dialect::Messages => true,
    };
    SimStream {
        shape,
        tokens,
        sent_role: false,
        reasoning_tokens: if request.stream {
            state.quirks.reasoning_tokens.min(output_tokens)
        } else {
            0
        },
        include_usage: asked_usage && !(request.stream && state.quirks.no_usage),
        prompt_tokens,
        output_tokens,
        finish: if draw.by_length { "length" } else { "stop" },
        fault: draw.fault,
        fault_after: (output_tokens / 2).max(1),
        emitted: 0,
        state: StreamState::Running,
        stats: state.stats.clone(),
        text: String::new(),
        collect: !request.stream,
        quirks: if request.stream {
            state.quirks
        } else {
            StreamQuirks::default()
        },
        pending: String::new(),
        pending_tokens: 0,
        pending_kind: Kind::Answer,
        usage_sent: false,
        closer: if request.stream { closer } else { None },
        held: None,
        pause: None,
        first: None,
        first_word,
    }
}

/// Prompt tokens of one content value: the tokenizer's count of a string
/// when the sim has one, else [`count_words`].
fn count_prompt(
    tokenizer: Option<&goodput_tokenizer::TokenCounter>,
    v: Option<&serde_json::Value>,
) -> u32 {
    match (tokenizer, v) {
        (Some(t), Some(serde_json::Value::String(s))) => {
            t.count(s).map_or_else(|_| count_words(v), |n| n as u32)
        }
        _ => count_words(v),
    }
}

fn count_words(v: Option<&serde_json::Value>) -> u32 {
    match v {
        Some(serde_json::Value::String(s)) => s.split_whitespace().count() as u32,
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|i| match i {
                serde_json::Value::Number(_) => 1, // a token id
                serde_json::Value::Object(o) => count_words(o.get("text")),
                other => count_words(Some(other)),
            })
            .sum(),
        _ => 0,
    }
}

/// The sim's vocabulary: token i of an answer is
/// `WORDS[(first_word + i) % 8]` ([`crate::answer`]).
pub(crate) const WORDS: [&str; 8] = [
    " the", " model", " says", " hello", " to", " a", " queue", " again",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StreamState {
    Running,
    Ended,
    Stalled,
    BreakNext,
}

/// A streaming response body fed by the engine's token channel.
#[derive(Debug)]
struct SimStream {
    shape: Shape,
    tokens: mpsc::UnboundedReceiver<TokenOut>,
    /// The opening events went out.
    sent_role: bool,
    /// The first this many output tokens are reasoning (streams only).
    reasoning_tokens: u32,
    include_usage: bool,
    prompt_tokens: u32,
    output_tokens: u32,
    finish: &'static str,
    fault: Option<FaultKind>,
    fault_after: u32,
    emitted: u32,
    state: StreamState,
    stats: Arc<SimStats>,
    /// For non-streaming responses: the text so far.
    text: String,
    collect: bool,
    /// Stream quirks (the defaults for non-streaming responses).
    quirks: StreamQuirks,
    /// Words made but not yet sent (`tokens_per_chunk` > 1).
    pending: String,
    /// Tokens in `pending`.
    pending_tokens: u32,
    /// The kind of the tokens in `pending`.
    pending_kind: Kind,
    /// The usage chunk already went out (`usage_before_last_token`).
    usage_sent: bool,
    /// Notified once when the body ends (`close_after_response`).
    closer: Option<Arc<tokio::sync::Notify>>,
    /// A token held back while its stall runs (`stall_every`).
    held: Option<TokenOut>,
    /// The stall before `held`.
    pause: Option<Pin<Box<tokio::time::Sleep>>>,
    /// The engine's timing of the first token, and when it was taken.
    first: Option<(tokio::time::Instant, crate::engine::EngineTiming)>,
    /// Where in [`WORDS`] the answer starts ([`crate::answer::first_word`]).
    first_word: usize,
}

impl SimStream {
    /// Takes one token; a content chunk goes into `buf` when
    /// `tokens_per_chunk` of them are pending (see [`SimStream::flush`]).
    fn push_token(&mut self, buf: &mut BytesMut, index: u32) {
        let word = WORDS[(self.first_word + index as usize) % WORDS.len()];
        if self.collect {
            self.text.push_str(word);
        } else {
            if index == self.reasoning_tokens && index > 0 {
                // The answer starts: the reasoning pending goes out first.
                self.flush(buf);
                buf.put_slice(self.shape.answer_starts().as_bytes());
            }
            self.pending_kind = if index < self.reasoning_tokens {
                Kind::Reasoning
            } else {
                Kind::Answer
            };
            self.pending.push_str(word);
            self.pending_tokens += 1;
            if self.pending_tokens >= self.quirks.tokens_per_chunk.max(1) {
                self.flush(buf);
            }
        }
        self.emitted += 1;
        self.stats.tokens.fetch_add(1, Ordering::Relaxed);
    }

    /// Writes the pending tokens as one content chunk (of the kind of the
    /// last token made: a chunk never mixes reasoning and answer).
    fn flush(&mut self, buf: &mut BytesMut) {
        if self.pending_tokens == 0 {
            return;
        }
        let (prefix, suffix) = self.shape.token(self.pending_kind);
        buf.put_slice(prefix.as_bytes());
        buf.put_slice(self.pending.as_bytes());
        buf.put_slice(suffix.as_bytes());
        self.pending.clear();
        self.pending_tokens = 0;
    }

    /// What the closing events say.
    fn close(&self) -> Close {
        Close {
            by_length: self.finish == "length",
            prompt_tokens: self.prompt_tokens,
            output_tokens: self.output_tokens,
            reasoning_tokens: self.reasoning_tokens,
            finish_reason: !self.quirks.no_finish_reason,
            usage: self.include_usage,
            timing: self.closing_timing(),
        }
    }

    /// The engine's timing for the finish chunk, when `--server-timing`
    /// asks for it: the first token's queue wait and admitting step, and
    /// the time from the first token to now (the last).
    fn closing_timing(&self) -> Option<(ClosingTiming, crate::dialect::ServerTiming)> {
        let which = self.quirks.server_timing;
        if !(which.llama_cpp || which.vllm) {
            return None;
        }
        let (at, t) = self.first?;
        let decode_ms = at.elapsed().as_secs_f64() * 1000.0;
        let timing = ClosingTiming {
            queue_ms: t.queue_ms,
            prefill_ms: t.prefill_ms,
            decode_ms,
        };
        Some((timing, which))
    }

    /// Whether the stream is chat or completions (their own usage chunk,
    /// finish chunk and `[DONE]`, with their quirks).
    fn chunked(&self) -> bool {
        matches!(self.shape.dialect(), Dialect::Chat | Dialect::Completions)
    }

    fn push_usage(&mut self, buf: &mut BytesMut) {
        if self.collect || !self.include_usage || self.usage_sent || !self.chunked() {
            return;
        }
        self.usage_sent = true;
        buf.put_slice(self.shape.usage_chunk(&self.close()).as_bytes());
    }

    /// The body is over (cleanly or not): let the connection go, once.
    fn ended(&mut self) {
        if let Some(closer) = self.closer.take() {
            closer.notify_one();
        }
    }

    fn push_end(&mut self, buf: &mut BytesMut) {
        if self.collect {
            return;
        }
        self.flush(buf);
        if !self.chunked() {
            if self.reasoning_tokens == self.output_tokens && self.reasoning_tokens > 0 {
                // No answer came: the text block still opens and closes.
                buf.put_slice(self.shape.answer_starts().as_bytes());
            }
            buf.put_slice(self.shape.typed_end(&self.close()).as_bytes());
            return;
        }
        if !self.quirks.no_finish_reason {
            buf.put_slice(self.shape.finish_chunk(&self.close()).as_bytes());
        }
        self.push_usage(buf);
        if !self.quirks.no_done {
            buf.put_slice(b"data: [DONE]\n\n");
        }
    }
}

/// What a poll of the stream produced.
enum Polled {
    Frame(Bytes),
    Broken,
    End,
    Pending,
}

impl SimStream {
    fn poll_next(&mut self, cx: &mut Context<'_>) -> Polled {
        let polled = self.poll_body(cx);
        if matches!(polled, Polled::End | Polled::Broken) {
            self.ended();
        }
        polled
    }

    fn poll_body(&mut self, cx: &mut Context<'_>) -> Polled {
        match self.state {
            StreamState::Ended => return Polled::End,
            StreamState::Stalled => return Polled::Pending, // never woken: stalls until the client leaves
            StreamState::BreakNext => {
                self.state = StreamState::Ended;
                return Polled::Broken;
            }
            StreamState::Running => {}
        }
        let mut buf = BytesMut::new();
        self.push_role(&mut buf);
        loop {
            if self.held.is_some() && self.pause.is_none() {
                // What was made before the stall goes out first, and the
                // pause starts only once it has: a pause started while a
                // backlog was still being written would look shorter.
                if !buf.is_empty() {
                    return Polled::Frame(buf.freeze());
                }
                let pause = std::time::Duration::from_millis(self.quirks.stall_ms);
                self.pause = Some(Box::pin(tokio::time::sleep(pause)));
            }
            if let Some(pause) = self.pause.as_mut() {
                if std::future::Future::poll(pause.as_mut(), cx).is_pending() {
                    // What was made before the stall goes out first.
                    return if buf.is_empty() {
                        Polled::Pending
                    } else {
                        Polled::Frame(buf.freeze())
                    };
                }
                self.pause = None;
                if let Some(token) = self.held.take() {
                    if self.take_token(&mut buf, token) {
                        return Polled::Frame(buf.freeze());
                    }
                }
                continue;
            }
            match self.tokens.poll_recv(cx) {
                Poll::Ready(Some(token)) if self.stalls_before(token.index) => {
                    self.held = Some(token);
                }
                Poll::Ready(Some(token)) => {
                    if self.take_token(&mut buf, token) {
                        return Polled::Frame(buf.freeze());
                    }
                }
                Poll::Ready(None) => {
                    // The engine let go of us without a last token.
                    self.state = StreamState::Ended;
                    return Polled::Broken;
                }
                Poll::Pending => {
                    return if buf.is_empty() {
                        Polled::Pending
                    } else {
                        Polled::Frame(buf.freeze())
                    };
                }
            }
        }
    }

    /// Whether a stall comes before the token at 0-based `index`: before
    /// the N-th, 2N-th, … token of a stream when `stall_every` is N.
    fn stalls_before(&self, index: u32) -> bool {
        let every = self.quirks.stall_every;
        every > 0 && (index + 1) % every == 0
    }

    /// The opening events (once): the chat role chunk, `response.created`,
    /// `message_start` and the first content block.
    fn push_role(&mut self, buf: &mut BytesMut) {
        if self.sent_role {
            return;
        }
        self.sent_role = true;
        if !self.collect {
            let start = self
                .shape
                .start(self.prompt_tokens, self.reasoning_tokens > 0);
            buf.put_slice(start.as_bytes());
        }
    }

    /// Takes one token from the engine into `buf` (with the usage chunk
    /// where `usage_before_last_token` puts it); true when the frame must go
    /// out now: the drawn fault fired, or that was the last token.
    fn take_token(&mut self, buf: &mut BytesMut, token: TokenOut) -> bool {
        if let Some(t) = token.timing {
            self.first = Some((tokio::time::Instant::now(), t));
        }
        let before_last = self.quirks.usage_before_last_token;
        if before_last && token.last && token.index == 0 {
            // A 1-token output: the usage goes just before it.
            self.push_usage(buf);
        }
        self.push_token(buf, token.index);
        if before_last && token.index + 2 == self.output_tokens {
            // One token to go: usage now, a step before the last.
            self.push_usage(buf);
        }
        if self.inject_fault(buf) {
            return true;
        }
        if token.last {
            self.push_end(buf);
            self.state = StreamState::Ended;
            return true;
        }
        false
    }

    /// Once half the tokens are out, the drawn mid-stream fault: a cut
    /// (after delivering what was made), a broken chunk, or a stall. True
    /// when it ends this frame.
    fn inject_fault(&mut self, buf: &mut BytesMut) -> bool {
        if !(self.fault.is_some() && self.emitted >= self.fault_after) {
            return false;
        }
        if !self.collect {
            self.flush(buf);
        }
        match self.fault {
            Some(FaultKind::Disconnect) => {
                // Deliver what was made, then break the body.
                self.state = StreamState::BreakNext;
                true
            }
            Some(FaultKind::Malformed) => {
                if !self.collect {
                    buf.put_slice(b"data: {\"choices\":[{\"delta\":{\"content\":\n\n");
                }
                self.state = StreamState::Ended;
                true
            }
            Some(FaultKind::Stall) => {
                self.state = StreamState::Stalled;
                true
            }
            _ => false,
        }
    }
}

impl Body for SimStream {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = self.get_mut();
        match this.poll_next(cx) {
            Polled::Frame(bytes) => Poll::Ready(Some(Ok(Frame::data(bytes)))),
            Polled::Broken => Poll::Ready(Some(Err(std::io::Error::other("stream cut")))),
            Polled::End => Poll::Ready(None),
            Polled::Pending => Poll::Pending,
        }
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

async fn whole_response(mut stream: SimStream) -> Response<SimBody> {
    let broken = std::future::poll_fn(|cx| loop {
        match stream.poll_next(cx) {
            Polled::Frame(_) => continue,
            Polled::Broken => return Poll::Ready(true),
            Polled::End => return Poll::Ready(false),
            Polled::Pending => return Poll::Pending,
        }
    })
    .await;
    if broken {
        // A non-streaming disconnect: the head goes out, the body breaks.
        return Response::new(BrokenBody.boxed());
    }
    if stream.fault == Some(FaultKind::Malformed) && stream.emitted >= stream.fault_after {
        return json_response(StatusCode::OK, "{\"choices\":[{\"message\":".into());
    }
    let (p, n) = (stream.prompt_tokens, stream.output_tokens);
    let usage =
        serde_json::json!({"prompt_tokens": p, "completion_tokens": n, "total_tokens": p + n});
    let body = match stream.shape.dialect() {
        Dialect::Chat => {
            serde_json::json!({"id": "chatcmpl", "object": "chat.completion", "created": 0,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": stream.text},
                         "finish_reason": stream.finish}], "usage": usage})
        }
        Dialect::Completions => {
            serde_json::json!({"id": "cmpl", "object": "text_completion", "created": 0,
            "choices": [{"index": 0, "text": stream.text, "logprobs": null,
                         "finish_reason": stream.finish}], "usage": usage})
        }
        Dialect::Responses => serde_json::json!({"id": "resp_sim", "object": "response",
            "status": if stream.finish == "length" { "incomplete" } else { "completed" },
            "output": [{"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": stream.text}]}],
            "usage": {"input_tokens": p, "output_tokens": n, "total_tokens": p + n}}),
        Dialect::Messages => {
            serde_json::json!({"id": "msg_sim", "type": "message", "role": "assistant",
            "content": [{"type": "text", "text": stream.text}],
            "stop_reason": if stream.finish == "length" { "max_tokens" } else { "end_turn" },
            "usage": {"input_tokens": p, "output_tokens": n}})
        }
    };
    json_response(StatusCode::OK, body.to_string())
}

/// A body that fails at once (the connection is closed mid-response).
#[derive(Debug)]
struct BrokenBody;

impl Body for BrokenBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        Poll::Ready(Some(Err(std::io::Error::other("response cut"))))
    }
}
