//! `record --quality-bank`: a fixed set of prompts sent beside the load, one
//! at a time, so the answers are the server's while it carries that load
//! (docs/quality.md, "Recording"). Each item is one unstreamed request
//! (`stream: false`, `temperature: 0`, a fixed `seed`, `max_tokens` from the
//! item or [`DEFAULT_MAX_TOKENS`]); its answer text, normalised and hashed,
//! and its verdict become one sidecar line. Bank requests are not rows of
//! the trace: their instants are in the sidecar and judged apart.
//!
//! The bank runs on a thread of its own with its own event loop and
//! connections (like the metrics scraper), so its requests never delay a
//! send of the load. Interleaved, it starts at t0 and sends an item every
//! `1 / rate` seconds (or when the previous one ended, whichever is later);
//! items still unsent when the run ends go right after it. After, it waits
//! for the run's end and sends them all. An interrupted run (a signal, a
//! full disk) sends nothing more: its unsent items get `failed` lines
//! (`not sent: run interrupted`). Every item gets a line, whatever happened
//! to its request.

use std::time::Duration;

use bytes::Bytes;
use hyper::Uri;
use tokio::time::Instant;

use goodput_core::quality::bank::{Bank, BankItem, Prompt};
use goodput_core::quality::sidecar::{ItemLine, Placement, Sampling, SidecarHeader};

use crate::error::RecordError;
use crate::transport::client::{HyperTransport, ResponseBody, Transport};
use crate::workload::body::Api;

/// `max_tokens` of an item that names none.
pub const DEFAULT_MAX_TOKENS: u64 = 256;
/// The most bytes of one bank answer's response body read.
const MAX_ANSWER_BYTES: usize = 4 << 20;
/// The seed sent with every bank request (APIs that take one).
pub const BANK_SEED: u64 = 7;
/// The temperature of every bank request: greedy, so the answers repeat.
pub const BANK_TEMPERATURE: u8 = 0;

/// How the bank is sent.
#[derive(Debug, Clone)]
pub struct BankPlan {
    /// The checked bank.
    pub bank: Bank,
    /// The model named in every bank request.
    pub model: String,
    /// Chat or completions (the unstreamed shapes the bank is read from).
    pub api: Api,
    /// Interleaved with the load, or after it.
    pub phase: Placement,
    /// Items per second while interleaved.
    pub rate_per_s: f64,
    /// Each request's timeout.
    pub timeout: Duration,
    /// The request URI (the load's).
    pub uri: Uri,
}

impl BankPlan {
    /// The sidecar's header line for this bank as it is sent: the sampling
    /// is the one [`item_body`] puts in every request.
    pub fn sidecar_header(&self) -> SidecarHeader {
        SidecarHeader {
            schema: goodput_core::quality::SIDECAR_SCHEMA.to_owned(),
            bank_sha256: self.bank.sha256.clone(),
            model: self.model.clone(),
            phase: self.phase,
            rate_per_s: (self.phase == Placement::Interleaved).then_some(self.rate_per_s),
            sampling: Sampling {
                temperature: f64::from(BANK_TEMPERATURE),
                seed: Some(BANK_SEED),
            },
        }
    }
}

/// The JSON body of one item's request.
pub fn item_body(plan: &BankPlan, item: &BankItem) -> Bytes {
    let max_tokens = item.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
    let mut body = serde_json::json!({
        "model": plan.model,
        "stream": false,
        "temperature": BANK_TEMPERATURE,
        "seed": BANK_SEED,
        "max_tokens": max_tokens,
    });
    let prompt = match (&item.prompt, plan.api) {
        (Prompt::Text(t), Api::Completions) => ("prompt", serde_json::json!(t)),
        (Prompt::Text(t), _) => (
            "messages",
            serde_json::json!([{"role": "user", "content": t}]),
        ),
        (Prompt::Messages(m), Api::Completions) => (
            "prompt",
            serde_json::json!(m
                .iter()
                .map(|m| m.content.as_str())
                .collect::<Vec<_>>()
                .join("\n")),
        ),
        (Prompt::Messages(m), _) => ("messages", serde_json::to_value(m).unwrap_or_default()),
    };
    body[prompt.0] = prompt.1;
    Bytes::from(body.to_string())
}

/// The answer text of an unstreamed response: chat `choices[0].message.content`
/// (its `reasoning_content` is not the answer), completions `choices[0].text`.
pub fn answer_text(body: &[u8]) -> Result<String, String> {
    let doc: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| "bad_response: not JSON".to_owned())?;
    let choice = &doc["choices"][0];
    choice["message"]["content"]
        .as_str()
        .or_else(|| choice["text"].as_str())
        .map(str::to_owned)
        .ok_or_else(|| "bad_response: no choices[0].message.content or text".to_owned())
}

/// Sends one item and reads its answer: the sidecar line, instants on the
/// trace's clock (`t0`).
async fn send_item(
    plan: &BankPlan,
    transport: &HyperTransport,
    item: &BankItem,
    t0: Instant,
) -> ItemLine {
    let ms = |t: Instant| {
        goodput_core::trace::write::round_us(t.saturating_duration_since(t0).as_secs_f64() * 1000.0)
    };
    let arrival = ms(Instant::now());
    let answer = tokio::time::timeout(plan.timeout, fetch_answer(transport, item_body(plan, item)))
        .await
        .unwrap_or_else(|_| Err("timeout".to_owned()));
    match answer {
        Ok(text) => ItemLine::answered(item, &text, arrival, ms(Instant::now())),
        Err(reason) => ItemLine::failed(item, reason, arrival),
    }
}

async fn fetch_answer(transport: &HyperTransport, body: Bytes) -> Result<String, String> {
    let (head, mut response) = transport.send(body).await.map_err(|e| {
        format!("request failed: {e:?}")
            .chars()
            .take(200)
            .collect::<String>()
    })?;
    if !(200..300).contains(&head.status) {
        return Err(format!("http {}", head.status));
    }
    let mut bytes = Vec::new();
    while let Some(frame) = response
        .next_frame()
        .await
        .map_err(|_| "disconnect".to_owned())?
    {
        if bytes.len() + frame.len() > MAX_ANSWER_BYTES {
            return Err("body_too_large".to_owned());
        }
        bytes.extend_from_slice(&frame);
    }
    answer_text(&bytes)
}

/// Where the load is, as the bank is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LoadState {
    Running,
    Ended,
    Interrupted,
}

/// The reason on the line of an item an interrupted run never sent.
pub const NOT_SENT: &str = "not sent: run interrupted";

/// Sends the bank as `plan.phase` says, from `t0`, until every item has a
/// line; `load` says when the load has ended, and how.
async fn run_bank(
    plan: BankPlan,
    transport: HyperTransport,
    t0: Instant,
    mut load: tokio::sync::watch::Receiver<LoadState>,
) -> Vec<ItemLine> {
    if plan.phase != Placement::Interleaved {
        let _ = load.wait_for(|s| *s != LoadState::Running).await;
    }
    let every = Duration::from_secs_f64(1.0 / plan.rate_per_s.max(1e-3));
    let mut lines = Vec::with_capacity(plan.bank.items.len());
    for (k, item) in plan.bank.items.iter().enumerate() {
        if *load.borrow() == LoadState::Running {
            let due = t0 + every.mul_f64(k as f64);
            tokio::select! {
                _ = tokio::time::sleep_until(due) => {}
                _ = load.wait_for(|s| *s != LoadState::Running) => {}
            }
        }
        let line = if *load.borrow() == LoadState::Interrupted {
            let at = t0.elapsed().as_secs_f64() * 1000.0;
            ItemLine::failed(
                item,
                NOT_SENT.to_owned(),
                goodput_core::trace::write::round_us(at),
            )
        } else {
            send_item(&plan, &transport, item, t0).await
        };
        lines.push(line);
    }
    lines
}

/// The bank running beside a run: its own thread and event loop.
pub(crate) struct BankRunner {
    thread: std::thread::JoinHandle<Result<Vec<ItemLine>, RecordError>>,
    load: tokio::sync::watch::Sender<LoadState>,
}

impl BankRunner {
    /// Starts [`run_bank`] on its own thread, from `t0`.
    pub(crate) fn start(
        plan: BankPlan,
        transport: HyperTransport,
        t0: Instant,
    ) -> Result<BankRunner, RecordError> {
        let (load, told) = tokio::sync::watch::channel(LoadState::Running);
        let thread = std::thread::Builder::new()
            .name("goodput-bank".into())
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(RecordError::Runtime)?;
                let lines = runtime.block_on(run_bank(plan, transport, t0, told));
                runtime.shutdown_background();
                Ok(lines)
            })
            .map_err(RecordError::Runtime)?;
        Ok(BankRunner { thread, load })
    }

    /// Tells the bank the load has ended (`interrupted`: by a signal or a
    /// failure, so nothing more is sent) and waits for its last item.
    pub(crate) fn finish(self, interrupted: bool) -> Result<Vec<ItemLine>, RecordError> {
        let state = if interrupted {
            LoadState::Interrupted
        } else {
            LoadState::Ended
        };
        let _ = self.load.send(state);
        self.thread.join().unwrap_or_else(|_| {
            Err(RecordError::Runtime(std::io::Error::other(
                "the quality bank's thread panicked",
            )))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_from_chat_and_completions_documents() {
        let chat = br#"{"choices":[{"message":{"role":"assistant","content":" Paris.","reasoning_content":"think"}}]}"#;
        assert_eq!(answer_text(chat).unwrap(), " Paris.");
        let completion = br#"{"choices":[{"text":"4"}]}"#;
        assert_eq!(answer_text(completion).unwrap(), "4");
        assert!(answer_text(b"<html>").unwrap_err().contains("not JSON"));
        assert!(answer_text(br#"{"choices":[]}"#).is_err());
    }
}
