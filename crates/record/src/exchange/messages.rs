//! One event of an Anthropic Messages stream (`POST /v1/messages`,
//! `stream: true`), read as a [`Chunk`].
//!
//! Every event's data is an object whose `type` names it:
//! - `message_start`: `message.usage.input_tokens` (the prompt);
//! - `content_block_start`: a block opens (`text` or `thinking`; its
//!   initial text, normally empty, counts like a delta);
//! - `content_block_delta`: `delta.type` `text_delta` (`text`: answer),
//!   `thinking_delta` (`thinking`: reasoning); `signature_delta` (the
//!   thinking block's signature) and `input_json_delta` are not text tokens;
//! - `message_delta`: `usage.output_tokens`, the output so far (thinking
//!   included: Anthropic reports no separate thinking count), and the
//!   `stop_reason`;
//! - `message_stop` ends the stream;
//! - `error` (`error.message`), or an `event: error`, is a server error;
//! - `ping`, `content_block_stop` and unknown types carry nothing timed.

use std::borrow::Cow;

use serde::Deserialize;

use crate::exchange::chunk::{error_event, non_empty, Chunk, Tokens, Usage};
use crate::exchange::sse::Event;

#[derive(Deserialize)]
struct RawEvent<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Option<RawBlock<'a>>,
    #[serde(default, borrow)]
    content_block: Option<RawBlock<'a>>,
    #[serde(default)]
    message: Option<RawMessage>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    error: Option<RawError>,
}

/// A content block or a delta of one: the text it carries by kind.
#[derive(Deserialize)]
struct RawBlock<'a> {
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    thinking: Option<Cow<'a, str>>,
    #[serde(default)]
    stop_reason: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct RawMessage {
    #[serde(default)]
    usage: Option<RawUsage>,
}

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct RawError {
    #[serde(default)]
    message: Option<String>,
}

impl RawBlock<'_> {
    fn tokens(&self) -> Tokens {
        Tokens {
            reasoning: non_empty(&self.thinking),
            answer: non_empty(&self.text),
        }
    }
}

impl RawUsage {
    fn usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.input_tokens,
            completion_tokens: self.output_tokens,
            reasoning_tokens: None,
        }
    }
}

/// Reads one event of a Messages stream.
pub fn classify(event: Event<'_>) -> Chunk {
    if event.error {
        return error_event(event.data);
    }
    let Ok(raw) = serde_json::from_slice::<RawEvent<'_>>(event.data) else {
        return Chunk::Malformed;
    };
    match raw.kind.as_deref() {
        Some("message_start") => Chunk::Data {
            tokens: Tokens::NONE,
            finished: false,
            usage: raw.message.and_then(|m| m.usage).map(|u| u.usage()),
        },
        Some("content_block_start") => {
            Chunk::tokens(raw.content_block.map_or(Tokens::NONE, |b| b.tokens()))
        }
        Some("content_block_delta") => {
            Chunk::tokens(raw.delta.map_or(Tokens::NONE, |d| d.tokens()))
        }
        Some("message_delta") => Chunk::Data {
            tokens: Tokens::NONE,
            finished: raw.delta.is_some_and(|d| d.stop_reason.is_some()),
            usage: raw.usage.map(|u| u.usage()),
        },
        Some("message_stop") => Chunk::Done(None),
        Some("error") => {
            let message = raw.error.and_then(|e| e.message);
            Chunk::server_error(message.as_deref().unwrap_or("error event in stream"))
        }
        _ => Chunk::NOTHING,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunks(frames: &[&str]) -> Vec<Chunk> {
        crate::exchange::chunk::chunks_of(classify, frames)
    }

    /// A thinking block, its signature, a text block, the closing usage,
    /// as Anthropic's documentation shows a stream with extended thinking.
    const STREAM: &str = concat!(
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":778,\"output_tokens\":5}}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
        "event: ping\ndata: {\"type\": \"ping\"}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"Let me\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"EqQB\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":15}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );

    #[test]
    fn thinking_text_usage_and_stop_are_read_even_from_split_frames() {
        let want = vec![
            Chunk::Data {
                tokens: Tokens::NONE,
                finished: false,
                usage: Some(Usage {
                    prompt_tokens: Some(778),
                    completion_tokens: Some(5),
                    reasoning_tokens: None,
                }),
            },
            Chunk::NOTHING,                   // the thinking block opens empty
            Chunk::NOTHING,                   // ping
            Chunk::tokens(Tokens::REASONING), // thinking_delta
            Chunk::NOTHING,                   // signature_delta: not a token
            Chunk::NOTHING,                   // content_block_stop
            Chunk::NOTHING,                   // the text block opens empty
            Chunk::tokens(Tokens::ANSWER),    // text_delta
            Chunk::Data {
                tokens: Tokens::NONE,
                finished: true,
                usage: Some(Usage {
                    completion_tokens: Some(15),
                    ..Usage::default()
                }),
            },
            Chunk::Done(None),
        ];
        assert_eq!(chunks(&[STREAM]), want);
        // Every 7 bytes a new frame.
        let bytes = STREAM.as_bytes();
        let frames: Vec<&str> = bytes
            .chunks(7)
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect();
        assert_eq!(chunks(&frames), want);
    }

    #[test]
    fn error_events_are_server_errors_and_garbage_is_malformed() {
        let got = chunks(&[
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
            "data: {\"type\":\"error\",\"error\":{\"message\":\"bad\"}}\n\n",
            "event: error\ndata: not json\n\n",
            "data: {\"type\":\"content_block_delta\",\"delta\":\n\n",
            "data: {\"type\":\"future_event\",\"x\":1}\n\n",
        ]);
        assert_eq!(
            got,
            vec![
                Chunk::ServerError("Overloaded".into()),
                Chunk::ServerError("bad".into()),
                Chunk::ServerError("not json".into()),
                Chunk::Malformed,
                Chunk::NOTHING,
            ]
        );
    }
}
