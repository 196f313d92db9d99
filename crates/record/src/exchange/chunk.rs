//! What one streamed event means to the exchange, whichever API sent it.
//!
//! Every API's reader ([`crate::exchange::chat`] for chat and completions,
//! [`crate::exchange::responses`], [`crate::exchange::messages`]) turns one
//! SSE event into a [`Chunk`]: which kinds of model token it carried
//! ([`Tokens`]: reasoning, answer), whether it ended the response, the usage
//! it reported, or a server error. The exchange stamps the instants from
//! that alone, so the timing rules are written once for all APIs.

use std::borrow::Cow;

use crate::exchange::sse::Event;

/// What one event's data says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk {
    /// The stream is over (`[DONE]`, `response.completed`, `message_stop`),
    /// with the usage the closing event carried, if any.
    Done(Option<Usage>),
    /// An event with (possibly) tokens, a finish reason or usage.
    Data {
        /// The kinds of model token it carried.
        tokens: Tokens,
        /// A choice has a non-null `finish_reason` (chat/completions: a
        /// clean end of the body after it completes the request).
        finished: bool,
        /// The usage block, when present and not null.
        usage: Option<Usage>,
    },
    /// An error object or error event, with its message (at most
    /// [`MESSAGE_CHARS`] characters).
    ServerError(String),
    /// Not JSON, or JSON that is not an event of the API.
    Malformed,
}

impl Chunk {
    /// An event that carries nothing the exchange uses (a role chunk, a
    /// `ping`, an event type the recorder does not know).
    pub const NOTHING: Chunk = Chunk::Data {
        tokens: Tokens::NONE,
        finished: false,
        usage: None,
    };

    /// An event carrying `tokens` and nothing else.
    pub fn tokens(tokens: Tokens) -> Chunk {
        Chunk::Data {
            tokens,
            finished: false,
            usage: None,
        }
    }

    /// A server error with `message` cut to [`MESSAGE_CHARS`] characters.
    pub fn server_error(message: &str) -> Chunk {
        Chunk::ServerError(message.chars().take(MESSAGE_CHARS).collect())
    }
}

/// The most characters of a server's error message an event keeps.
pub const MESSAGE_CHARS: usize = 200;

/// The kinds of model token one event carried: a reasoning ("thinking")
/// token and an answer token are both model tokens (`firstTokenMs`), only
/// the second is what the user waits for (`firstAnswerMs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tokens {
    /// Non-empty reasoning text (`delta.reasoning`, `reasoning_content`,
    /// a Responses reasoning delta, a Messages `thinking_delta`).
    pub reasoning: bool,
    /// Non-empty answer text (`delta.content`, `text`, `output_text`,
    /// `text_delta`).
    pub answer: bool,
}

impl Tokens {
    /// No token.
    pub const NONE: Tokens = Tokens {
        reasoning: false,
        answer: false,
    };
    /// A reasoning token only.
    pub const REASONING: Tokens = Tokens {
        reasoning: true,
        answer: false,
    };
    /// An answer token only.
    pub const ANSWER: Tokens = Tokens {
        reasoning: false,
        answer: true,
    };

    /// Any model token at all.
    pub fn any(self) -> bool {
        self.reasoning || self.answer
    }

    /// Both kinds: what either of two events carried.
    pub fn or(self, other: Tokens) -> Tokens {
        Tokens {
            reasoning: self.reasoning || other.reasoning,
            answer: self.answer || other.answer,
        }
    }
}

/// Token counts from a usage block, in the chat API's terms (each reader
/// maps its API's names onto them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// `prompt_tokens` (`input_tokens`), if given.
    pub prompt_tokens: Option<u64>,
    /// `completion_tokens` (`output_tokens`), if given.
    pub completion_tokens: Option<u64>,
    /// The reasoning tokens inside `completion_tokens`, if given
    /// (`completion_tokens_details.reasoning_tokens`,
    /// `output_tokens_details.reasoning_tokens`).
    pub reasoning_tokens: Option<u64>,
}

/// Whether an optional text field holds any text.
pub(crate) fn non_empty(s: &Option<Cow<'_, str>>) -> bool {
    s.as_deref().is_some_and(|s| !s.is_empty())
}

#[derive(serde::Deserialize)]
struct RawErrorEvent {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    error: Option<RawErrorBody>,
}

#[derive(serde::Deserialize)]
struct RawErrorBody {
    #[serde(default)]
    message: Option<String>,
}

/// The chunk of an `event: error` of a typed stream (Responses, Messages):
/// the message its JSON data names (`message`, else `error.message`), else
/// the data itself as text.
pub(crate) fn error_event(data: &[u8]) -> Chunk {
    let named = serde_json::from_slice::<RawErrorEvent>(data)
        .ok()
        .and_then(|e| e.message.or(e.error.and_then(|b| b.message)));
    match named {
        Some(message) => Chunk::server_error(&message),
        None => Chunk::server_error(&String::from_utf8_lossy(data)),
    }
}

/// The reader of one streamed event for an API.
pub type Reader = fn(Event<'_>) -> Chunk;

/// `completion_tokens_details` (and the Responses API's
/// `output_tokens_details`, which has the same member).
#[derive(serde::Deserialize)]
pub(crate) struct RawDetails {
    #[serde(default)]
    pub(crate) reasoning_tokens: Option<u64>,
}

/// The chunks `read` makes of a stream written as `frames`, in order: the
/// test harness every API's event parser is checked with.
#[cfg(test)]
pub(crate) fn chunks_of(read: Reader, frames: &[&str]) -> Vec<Chunk> {
    let mut parser = crate::exchange::sse::SseParser::new();
    let mut out = Vec::new();
    for frame in frames {
        parser
            .push(frame.as_bytes(), |e| out.push(read(e)))
            .unwrap();
    }
    out
}
