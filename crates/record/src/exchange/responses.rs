//! One event of an OpenAI Responses stream (`POST /v1/responses`,
//! `stream: true`), read as a [`Chunk`].
//!
//! Every event's data is an object whose `type` names it:
//! - `response.output_text.delta` (`delta`: answer text);
//! - `response.reasoning_text.delta` and `response.reasoning_summary_text.delta`
//!   (`delta`: reasoning text, or its summary);
//! - `response.completed` and `response.incomplete` (the output budget ran
//!   out: the response still ended) end the stream with
//!   `response.usage` (`input_tokens`, `output_tokens`,
//!   `output_tokens_details.reasoning_tokens`);
//! - `response.failed` (`response.error.message`) and `error` (`message`)
//!   are server errors, and so is an `event: error` (its `message`, else
//!   its data as text);
//! - every other type (`response.created`, `response.output_item.added`,
//!   `…done`, …) carries nothing timed and is passed over.

use std::borrow::Cow;

use serde::Deserialize;

use crate::exchange::chunk::{error_event, non_empty, Chunk, RawDetails, Tokens, Usage};
use crate::exchange::sse::Event;

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<Cow<'a, str>>,
    #[serde(default)]
    response: Option<RawResponse>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    error: Option<RawError>,
}

#[derive(Deserialize)]
struct RawResponse {
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    error: Option<RawError>,
}

#[derive(Deserialize)]
struct RawError {
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    output_tokens_details: Option<RawDetails>,
}

/// Reads one event of a Responses stream.
pub fn classify(event: Event<'_>) -> Chunk {
    if event.error {
        return error_event(event.data);
    }
    let Ok(raw) = serde_json::from_slice::<RawEvent<'_>>(event.data) else {
        return Chunk::Malformed;
    };
    let text = |tokens| {
        if non_empty(&raw.delta) {
            Chunk::tokens(tokens)
        } else {
            Chunk::NOTHING
        }
    };
    match raw.kind.as_deref() {
        Some("response.output_text.delta") => text(Tokens::ANSWER),
        Some("response.reasoning_text.delta" | "response.reasoning_summary_text.delta") => {
            text(Tokens::REASONING)
        }
        Some("response.completed" | "response.incomplete") => {
            Chunk::Done(raw.response.and_then(|r| r.usage).map(|u| Usage {
                prompt_tokens: u.input_tokens,
                completion_tokens: u.output_tokens,
                reasoning_tokens: u.output_tokens_details.and_then(|d| d.reasoning_tokens),
            }))
        }
        Some("response.failed") => {
            let message = raw.response.and_then(|r| r.error).and_then(|e| e.message);
            Chunk::server_error(message.as_deref().unwrap_or("response.failed"))
        }
        Some("error") => {
            let message = raw.message.or(raw.error.and_then(|e| e.message));
            Chunk::server_error(message.as_deref().unwrap_or("error event in stream"))
        }
        _ => Chunk::NOTHING,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunks of a stream written as `frames`, in order.
    fn chunks(frames: &[&str]) -> Vec<Chunk> {
        crate::exchange::chunk::chunks_of(classify, frames)
    }

    const THINK: &str = "event: response.reasoning_text.delta\ndata: {\"type\":\"response.reasoning_text.delta\",\"item_id\":\"rs_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"hm\",\"sequence_number\":3}\n\n";
    const SUMMARY: &str =
        "data: {\"type\":\"response.reasoning_summary_text.delta\",\"delta\":\"plan\"}\n\n";
    const TEXT: &str = "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"delta\":\"Hi\"}\n\n";
    const DONE: &str = "data: {\"type\":\"response.completed\",\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":9,\"output_tokens\":12,\"output_tokens_details\":{\"reasoning_tokens\":8},\"total_tokens\":21}}}\n\n";

    #[test]
    fn reasoning_answer_and_completion_are_read_even_from_split_frames() {
        let whole = format!("{THINK}{SUMMARY}{TEXT}{DONE}");
        // Cut inside the first event's data and inside the last's.
        let (a, rest) = whole.split_at(40);
        let (b, c) = rest.split_at(rest.len() - 30);
        let want = vec![
            Chunk::tokens(Tokens::REASONING),
            Chunk::tokens(Tokens::REASONING),
            Chunk::tokens(Tokens::ANSWER),
            Chunk::Done(Some(Usage {
                prompt_tokens: Some(9),
                completion_tokens: Some(12),
                reasoning_tokens: Some(8),
            })),
        ];
        assert_eq!(chunks(&[a, b, c]), want);
        assert_eq!(chunks(&[&whole]), want);
    }

    #[test]
    fn unknown_and_empty_events_carry_nothing_and_incomplete_still_ends() {
        let got = chunks(&[
            "data: {\"type\":\"response.created\",\"response\":{\"id\":\"r\"}}\n\n",
            "data: {\"type\":\"response.output_item.added\",\"item\":{}}\n\n",
            "data: {\"type\":\"response.output_text.delta\",\"delta\":\"\"}\n\n",
            "data: {\"type\":\"response.incomplete\",\"response\":{\"usage\":{\"output_tokens\":4}}}\n\n",
        ]);
        assert_eq!(
            got,
            vec![
                Chunk::NOTHING,
                Chunk::NOTHING,
                Chunk::NOTHING,
                Chunk::Done(Some(Usage {
                    completion_tokens: Some(4),
                    ..Usage::default()
                }))
            ]
        );
    }

    #[test]
    fn failures_and_error_events_are_server_errors() {
        let got = chunks(&[
            "data: {\"type\":\"response.failed\",\"response\":{\"error\":{\"code\":\"server_error\",\"message\":\"gpu lost\"}}}\n\n",
            "data: {\"type\":\"error\",\"code\":\"rate_limit\",\"message\":\"slow down\"}\n\n",
            "event: error\ndata: broken\n\n",
            "data: [1]\n\n",
        ]);
        assert_eq!(
            got,
            vec![
                Chunk::ServerError("gpu lost".into()),
                Chunk::ServerError("slow down".into()),
                Chunk::ServerError("broken".into()),
                Chunk::Malformed,
            ]
        );
    }
}
