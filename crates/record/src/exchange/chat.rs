//! One event of an OpenAI chat or completions stream, read as a [`Chunk`].
//!
//! A chunk's choices carry answer text in `delta.content` (chat) or `text`
//! (completions), and reasoning text in `delta.reasoning` (vLLM since PR
//! #27752 renamed the field; #33402 removed the old one) or
//! `delta.reasoning_content` (older vLLM, llama.cpp, DeepSeek); both are
//! read, so a server on either side of the rename is timed alike. The usage
//! block's `completion_tokens_details.reasoning_tokens` is the reasoning
//! count. `[DONE]` ends the stream; an error object (`{"error": …}`,
//! `{"object": "error", …}`) or an `event: error` is a server error.

use std::borrow::Cow;

use serde::Deserialize;

use crate::exchange::chunk::{non_empty, Chunk, RawDetails, Tokens, Usage};
use crate::exchange::sse::Event;
use crate::exchange::token_scan::token_only;

#[derive(Deserialize)]
struct RawChunk<'a> {
    #[serde(default)]
    choices: Option<Choices>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    error: Option<serde::de::IgnoredAny>,
    #[serde(default, borrow)]
    object: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawChoice<'a> {
    #[serde(default, borrow)]
    delta: Option<RawDelta<'a>>,
    #[serde(default, borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(default)]
    finish_reason: Option<serde::de::IgnoredAny>,
}

#[derive(Deserialize)]
struct RawDelta<'a> {
    #[serde(default, borrow)]
    content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reasoning_content: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens_details: Option<RawDetails>,
}

/// What the `choices` array says, folded as it is read (no vector per
/// chunk: this runs once per streamed token).
#[derive(Debug, Default, Clone, Copy)]
struct Choices {
    /// The kinds of text some choice carries.
    tokens: Tokens,
    /// Some choice has a non-null `finish_reason`.
    finished: bool,
}

impl<'de> Deserialize<'de> for Choices {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Choices, D::Error> {
        struct Fold;
        impl<'de> serde::de::Visitor<'de> for Fold {
            type Value = Choices;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Choices, A::Error> {
                let mut all = Choices::default();
                while let Some(choice) = seq.next_element::<RawChoice<'de>>()? {
                    all.tokens = all.tokens.or(choice_tokens(&choice));
                    all.finished |= choice.finish_reason.is_some();
                }
                Ok(all)
            }
        }
        deserializer.deserialize_seq(Fold)
    }
}

/// The kinds of text one choice carries.
fn choice_tokens(choice: &RawChoice<'_>) -> Tokens {
    let delta = choice.delta.as_ref();
    Tokens {
        reasoning: delta
            .is_some_and(|d| non_empty(&d.reasoning) || non_empty(&d.reasoning_content)),
        answer: non_empty(&choice.text) || delta.is_some_and(|d| non_empty(&d.content)),
    }
}

/// Reads one event as an OpenAI chat or completions chunk: a chunk that
/// carries only tokens is recognised by [`token_only`] without a full
/// parse (most of a stream's events), anything else is parsed in full.
pub fn classify(event: Event<'_>) -> Chunk {
    let data = event.data;
    if event.error {
        return Chunk::server_error(&String::from_utf8_lossy(data));
    }
    if data.trim_ascii() == b"[DONE]" {
        return Chunk::Done(None);
    }
    if let Some(tokens) = token_only(data) {
        return Chunk::tokens(tokens);
    }
    parse(data)
}

/// The full parse of one chunk's JSON data: what [`token_only`] must agree
/// with whenever it answers.
pub fn parse(data: &[u8]) -> Chunk {
    let raw: RawChunk<'_> = match serde_json::from_slice(data) {
        Ok(raw) => raw,
        Err(_) => return Chunk::Malformed,
    };
    if raw.error.is_some() || raw.object.as_deref() == Some("error") {
        return Chunk::server_error(raw.message.as_deref().unwrap_or("error object in stream"));
    }
    let Choices { tokens, finished } = raw.choices.unwrap_or_default();
    let usage = raw.usage.map(|u| Usage {
        prompt_tokens: u.prompt_tokens,
        completion_tokens: u.completion_tokens,
        reasoning_tokens: u.completion_tokens_details.and_then(|d| d.reasoning_tokens),
    });
    Chunk::Data {
        tokens,
        finished,
        usage,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(s: &str) -> Chunk {
        classify(Event {
            data: s.as_bytes(),
            error: false,
        })
    }

    fn data(tokens: Tokens, finished: bool) -> Chunk {
        Chunk::Data {
            tokens,
            finished,
            usage: None,
        }
    }

    #[test]
    fn chat_and_completion_chunks_are_read() {
        assert_eq!(chunk("[DONE]"), Chunk::Done(None));
        let role = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#;
        assert_eq!(chunk(role), data(Tokens::NONE, false));
        let tok = r#"{"choices":[{"delta":{"content":"Hi"},"finish_reason":null}]}"#;
        assert_eq!(chunk(tok), data(Tokens::ANSWER, false));
        let text = r#"{"choices":[{"text":" the","finish_reason":"length"}]}"#;
        assert_eq!(chunk(text), data(Tokens::ANSWER, true));
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":34,"total_tokens":46}}"#;
        assert_eq!(
            chunk(usage),
            Chunk::Data {
                tokens: Tokens::NONE,
                finished: false,
                usage: Some(Usage {
                    prompt_tokens: Some(12),
                    completion_tokens: Some(34),
                    reasoning_tokens: None,
                })
            }
        );
        let null_usage = r#"{"choices":[{"delta":{"content":"x"}}],"usage":null}"#;
        assert_eq!(chunk(null_usage), data(Tokens::ANSWER, false));
    }

    #[test]
    fn both_reasoning_fields_are_reasoning_and_not_answer() {
        // Current vLLM (`reasoning`), older vLLM / llama.cpp / DeepSeek
        // (`reasoning_content`); an empty one is no token.
        for field in ["reasoning", "reasoning_content"] {
            let think = format!(r#"{{"choices":[{{"delta":{{"{field}":"hm"}}}}]}}"#);
            assert_eq!(chunk(&think), data(Tokens::REASONING, false), "{field}");
            let empty = format!(r#"{{"choices":[{{"delta":{{"{field}":"","content":null}}}}]}}"#);
            assert_eq!(chunk(&empty), data(Tokens::NONE, false), "{field}");
        }
        // One chunk with both kinds (a server that flushes the boundary).
        let both = r#"{"choices":[{"delta":{"reasoning":"so","content":"Yes"}}]}"#;
        let all = Tokens {
            reasoning: true,
            answer: true,
        };
        assert_eq!(chunk(both), data(all, false));
    }

    #[test]
    fn the_usage_block_reasoning_count_is_read() {
        let usage = r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":40,"completion_tokens_details":{"reasoning_tokens":30}}}"#;
        assert_eq!(
            chunk(usage),
            Chunk::Data {
                tokens: Tokens::NONE,
                finished: false,
                usage: Some(Usage {
                    prompt_tokens: Some(5),
                    completion_tokens: Some(40),
                    reasoning_tokens: Some(30),
                })
            }
        );
        let null_details =
            r#"{"choices":[],"usage":{"completion_tokens":4,"completion_tokens_details":null}}"#;
        assert!(matches!(
            chunk(null_details),
            Chunk::Data {
                usage: Some(Usage {
                    reasoning_tokens: None,
                    completion_tokens: Some(4),
                    ..
                }),
                ..
            }
        ));
    }

    #[test]
    fn error_objects_and_garbage_are_told_apart() {
        assert_eq!(
            chunk(r#"{"error":{"message":"overloaded"}}"#),
            Chunk::ServerError("error object in stream".into())
        );
        assert_eq!(
            chunk(r#"{"object":"error","message":"out of memory","code":500}"#),
            Chunk::ServerError("out of memory".into())
        );
        assert_eq!(
            classify(Event {
                data: b"boom",
                error: true
            }),
            Chunk::ServerError("boom".into())
        );
        assert_eq!(
            chunk(r#"{"choices":[{"delta":{"content":"x"}"#),
            Chunk::Malformed
        );
        assert_eq!(chunk("[1,2]"), Chunk::Malformed);
        assert_eq!(chunk(""), Chunk::Malformed);
    }
}
