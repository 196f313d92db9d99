//! What is sent: prompt sources, request bodies, prompt hashes.
//!
//! Prompts never reach the trace. A row carries the prompt's length and the
//! first 12 hex digits of its sha256, enough to group rows by prompt or to
//! check two runs used the same prompts without storing the text.
//!
//! Sources:
//! - `--random-input-len N` (the default, N = 128): N words drawn from a fixed
//!   vocabulary by ChaCha8 seeded with `--seed`, stream `index + 1`, so prompt
//!   `i` is the same on every run and differs from prompt `j` (no accidental
//!   prefix-cache hits).
//! - `--prompts FILE.jsonl`: one JSON value per line, either a string or an
//!   object `{"prompt": "…", "class": "…"}` (`class` optional, must be one of
//!   the `--slo` classes). Request `i` uses line `i mod lines`.
//! - prepared prompts (`--tokenizer`, `--input-tokens`, `--prefix-tokens`,
//!   `--replay`) and multi-turn sessions (`--dataset`): see `workload`.

pub use crate::workload::prompt::{prompt_hash, Prompt};
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

use goodput_core::trace::Scalar;

/// Which API the requests speak (docs/recorder.md, "APIs").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// `/v1/chat/completions` (messages in, `delta.content` out).
    Chat,
    /// `/v1/completions` (prompt in, `text` out).
    Completions,
    /// OpenAI Responses, `/v1/responses` (`input` in, typed events out).
    Responses,
    /// Anthropic Messages, `/v1/messages` (messages and a required
    /// `max_tokens` in, typed events out; `x-api-key` authentication).
    Messages,
    /// `/v1/embeddings` (`input` texts in, one JSON document of vectors
    /// out, not streamed).
    Embeddings,
}

/// The `max_tokens` a Messages request carries when neither the workload
/// nor `--max-tokens` sets one (the API requires the member).
pub const MESSAGES_DEFAULT_MAX_TOKENS: u32 = 4096;

impl Api {
    /// The name written into `workload.api`.
    pub fn as_str(self) -> &'static str {
        match self {
            Api::Chat => "chat",
            Api::Completions => "completions",
            Api::Responses => "responses",
            Api::Messages => "messages",
            Api::Embeddings => "embeddings",
        }
    }

    /// The default path appended to a bare base URL.
    pub fn default_path(self) -> &'static str {
        match self {
            Api::Chat => "/v1/chat/completions",
            Api::Completions => "/v1/completions",
            Api::Responses => "/v1/responses",
            Api::Messages => "/v1/messages",
            Api::Embeddings => "/v1/embeddings",
        }
    }

    /// Whether answers are streamed (every API but embeddings): a trace of
    /// an unstreamed API says `streamed: false` and has no token instants.
    pub fn streamed(self) -> bool {
        self != Api::Embeddings
    }
}

/// Where prompts come from.
#[derive(Debug, Clone)]
pub enum PromptSource {
    /// Seeded random words.
    Random {
        /// Words per prompt.
        words: u32,
        /// The run's seed.
        seed: u64,
    },
    /// A list, used cyclically.
    List(Arc<Vec<Prompt>>),
    /// Prepared prompts, one per scheduled request (token-accurate lengths,
    /// shared prefixes, replay); see `workload`.
    Recipes(Arc<crate::workload::RecipeSet>),
    /// Multi-turn sessions; row `i` is one turn (see `workload::sessions`).
    Sessions(Arc<crate::workload::sessions::SessionSet>),
    /// Another source's prompts for every `stride`-th request from `offset`:
    /// a shard's `i`-th request is request `i·N + K` of the whole schedule,
    /// and gets that request's prompt.
    Strided {
        /// The whole schedule's source.
        inner: Box<PromptSource>,
        /// N, the number of shards.
        stride: usize,
        /// K, this shard.
        offset: usize,
    },
}

/// The filler words of random prompts (also the word pool of `workload`).
pub const VOCABULARY: [&str; 64] = [
    "the", "of", "and", "to", "in", "is", "that", "for", "it", "as", "was", "with", "be", "by",
    "on", "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an",
    "had", "they", "you", "were", "their", "one", "all", "we", "can", "her", "has", "there",
    "been", "if", "more", "when", "will", "would", "who", "so", "no", "time", "sun", "river",
    "stone", "light", "green", "model", "token", "queue", "batch", "cloud", "paper", "glass",
    "music", "north", "seven",
];

impl PromptSource {
    /// The prompt of request `index`.
    pub fn prompt(&self, index: usize) -> Prompt {
        match self {
            PromptSource::Random { words, seed } => {
                let mut rng = ChaCha8Rng::seed_from_u64(*seed);
                rng.set_stream(index as u64 + 1);
                let mut text = String::with_capacity(*words as usize * 6);
                for w in 0..*words {
                    if w > 0 {
                        text.push(' ');
                    }
                    text.push_str(VOCABULARY[rng.random_range(0..VOCABULARY.len())]);
                }
                Prompt {
                    text,
                    class: None,
                    tokens: None,
                }
            }
            PromptSource::List(list) => list[index % list.len()].clone(),
            PromptSource::Recipes(set) => Prompt {
                text: set.text(index),
                class: None,
                tokens: None,
            },
            PromptSource::Sessions(set) => Prompt {
                text: set.turn_text(index).to_owned(),
                class: None,
                tokens: None,
            },
            PromptSource::Strided {
                inner,
                stride,
                offset,
            } => inner.prompt(index * stride + offset),
        }
    }

    /// What request `index` carries besides its text (`max_tokens`, labels).
    pub fn extras(&self, index: usize) -> crate::workload::Extras {
        match self {
            PromptSource::Random { .. } => Default::default(),
            PromptSource::List(list) => {
                let mut extras = crate::workload::Extras::default();
                if let Some(n) = list[index % list.len()].tokens {
                    extras
                        .labels
                        .insert("promptTokens".into(), Scalar::Number(f64::from(n)));
                }
                extras
            }
            PromptSource::Recipes(set) => set.extras(index),
            PromptSource::Sessions(set) => crate::workload::Extras {
                max_tokens: set.max_tokens.get(index).copied().flatten(),
                labels: set.labels(index),
            },
            PromptSource::Strided {
                inner,
                stride,
                offset,
            } => inner.extras(index * stride + offset),
        }
    }

    /// The same prompts in the order drawn by `seed`: a list is permuted
    /// (Fisher–Yates over ChaCha8 seeded with `seed`, stream 0) and then used
    /// cyclically as before; random prompts are already drawn per request
    /// from their own seed and are returned unchanged, and so are prepared
    /// prompts (drawn per request from the seed); multi-turn sessions play
    /// their conversations in a seeded order. A rate sweep gives
    /// each point its own seed, so no two points send a list in the same
    /// order and a prefix cache cannot carry one point into the next.
    pub fn in_seeded_order(&self, seed: u64) -> PromptSource {
        match self {
            PromptSource::Random { .. } => self.clone(),
            PromptSource::List(list) => {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let mut order: Vec<Prompt> = list.as_ref().clone();
                for i in (1..order.len()).rev() {
                    order.swap(i, rng.random_range(0..=i));
                }
                PromptSource::List(Arc::new(order))
            }
            // Prepared prompts are drawn per request from the point's seed.
            PromptSource::Recipes(_) => self.clone(),
            PromptSource::Sessions(set) => {
                PromptSource::Sessions(Arc::new(set.in_seeded_order(seed)))
            }
            PromptSource::Strided {
                inner,
                stride,
                offset,
            } => PromptSource::Strided {
                inner: Box::new(inner.in_seeded_order(seed)),
                stride: *stride,
                offset: *offset,
            },
        }
    }

    /// A short description for `workload.prompts` (never a path or the text).
    pub fn describe(&self) -> String {
        match self {
            PromptSource::Random { words, .. } => format!("random:{words}"),
            PromptSource::List(list) => format!("list:{}", list.len()),
            PromptSource::Recipes(set) => format!("prepared:{}", set.recipes.len()),
            PromptSource::Sessions(set) => format!(
                "sessions:{}:{}",
                set.dataset.kind,
                set.dataset.conversations.len()
            ),
            PromptSource::Strided { inner, .. } => inner.describe(),
        }
    }
}

/// Why a prompt file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line or entry is not what the format says.
    #[error("{path}:{line}: {message}")]
    Bad {
        /// The path as given.
        path: String,
        /// 1-based line (JSONL) or entry index (ShareGPT).
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// No usable prompt at all.
    #[error("{0} holds no usable prompt")]
    Empty(String),
    /// The file is larger than the limit ([`crate::workload::MAX_INPUT_BYTES`]
    /// for `--prompts`); nothing past it was read.
    #[error("{path} is larger than {limit} bytes, the limit on a --prompts file")]
    TooLarge {
        /// The path as given.
        path: String,
        /// The limit in force.
        limit: u64,
    },
    /// The file is not UTF-8.
    #[error("{path}: not UTF-8 ({source})")]
    NotUtf8 {
        /// The path as given.
        path: String,
        /// Where.
        source: std::string::FromUtf8Error,
    },
}

#[derive(Deserialize)]
#[serde(untagged)]
enum JsonlLine {
    Text(String),
    Object {
        prompt: String,
        #[serde(default)]
        class: Option<String>,
    },
}

/// Reads a JSONL prompt file.
pub fn load_jsonl(path: &Path) -> Result<Vec<Prompt>, PromptError> {
    load_jsonl_within(path, crate::workload::MAX_INPUT_BYTES)
}

/// [`load_jsonl`] with its byte limit: a larger file (or a FIFO, a device
/// that never ends) is refused once `limit` is passed, never read whole.
pub fn load_jsonl_within(path: &Path, limit: u64) -> Result<Vec<Prompt>, PromptError> {
    let shown = path.display().to_string();
    let bytes = goodput_util::io::read_limited(&shown, limit).map_err(|e| match e {
        goodput_util::io::ReadError::Io { source, .. } => PromptError::Io {
            path: shown.clone(),
            source,
        },
        goodput_util::io::ReadError::TooLarge { .. } => PromptError::TooLarge {
            path: shown.clone(),
            limit,
        },
    })?;
    let text = String::from_utf8(bytes).map_err(|source| PromptError::NotUtf8 {
        path: shown.clone(),
        source,
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed: JsonlLine = serde_json::from_str(line).map_err(|e| PromptError::Bad {
            path: shown.clone(),
            line: i + 1,
            message: format!("expected a JSON string or {{\"prompt\": \"…\"}} ({e})"),
        })?;
        out.push(match parsed {
            JsonlLine::Text(text) => Prompt {
                text,
                class: None,
                tokens: None,
            },
            JsonlLine::Object { prompt, class } => Prompt {
                text: prompt,
                class,
                tokens: None,
            },
        });
    }
    if out.is_empty() {
        return Err(PromptError::Empty(shown));
    }
    Ok(out)
}

/// What a row's error text becomes when it repeats the prompt.
pub const WITHHELD_ERROR_TEXT: &str = "(withheld: it repeats the prompt)";

/// Characters compared at a time by [`echoes_prompt`]: any run of at least
/// `2 × ECHO_WINDOW_CHARS − 1` characters of the prompt is caught.
const ECHO_WINDOW_CHARS: usize = 12;

/// Whether a server's error text repeats part of the prompt, as sent or
/// JSON-escaped (validation errors often echo the request body). Prompts
/// never reach the trace, so such a text is withheld from the row. Checks
/// the text's windows of [`ECHO_WINDOW_CHARS`] characters that start at
/// multiples of it: a few substring searches for a 200-character text.
pub fn echoes_prompt(text: &str, prompt: &str) -> bool {
    let escaped = serde_json::to_string(prompt).unwrap_or_default();
    let chars: Vec<char> = text.chars().collect();
    chars
        .chunks_exact(ECHO_WINDOW_CHARS)
        .map(|w| w.iter().collect::<String>())
        .any(|w| prompt.contains(&w) || escaped.contains(&w))
}

/// The fixed part of every request body.
#[derive(Debug, Clone)]
pub struct BodyTemplate {
    /// Endpoint family.
    pub api: Api,
    /// `model`.
    pub model: String,
    /// `max_tokens`, when set.
    pub max_tokens: Option<u32>,
    /// `ignore_eos` (a vLLM extension), sent only when set.
    pub ignore_eos: bool,
    /// `--extra-body` members, merged into every body.
    pub extra: crate::workload::extra_body::ExtraBody,
    /// Inputs per embeddings request (`--embeddings-batch`, at least 1):
    /// the request's prompt, that many times.
    pub embeddings_batch: u32,
}

#[derive(Serialize)]
struct Message<'a> {
    role: &'static str,
    content: &'a str,
}

#[derive(Serialize)]
struct StreamOptions {
    include_usage: bool,
}

/// `input`: one text (Responses) or a batch of them (embeddings).
#[derive(Serialize)]
#[serde(untagged)]
enum Input<'a> {
    One(&'a str),
    Many(Vec<&'a str>),
}

/// Every member any API's body may carry; each API sets its own.
#[derive(Serialize, Default)]
struct Body<'a> {
    model: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    messages: Option<Vec<Message<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    prompt: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    input: Option<Input<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    encoding_format: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<StreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_output_tokens: Option<u32>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    ignore_eos: bool,
}

impl BodyTemplate {
    /// The JSON body for one prompt: always streaming, always asking for usage.
    pub fn body(&self, prompt: &str) -> Bytes {
        self.body_with(prompt, self.max_tokens)
    }

    /// [`BodyTemplate::body`] with this request's own `max_tokens` (a drawn
    /// or replayed output length), or the template's when `None`.
    pub fn body_with(&self, prompt: &str, max_tokens: Option<u32>) -> Bytes {
        let user = || {
            Some(vec![Message {
                role: "user",
                content: prompt,
            }])
        };
        let max_tokens = max_tokens.or(self.max_tokens);
        let body = match self.api {
            Api::Chat => self.streaming(user(), max_tokens),
            Api::Completions => Body {
                prompt: Some(prompt),
                ..self.streaming(None, max_tokens)
            },
            Api::Responses => Body {
                input: Some(Input::One(prompt)),
                stream: Some(true),
                max_output_tokens: max_tokens,
                ..self.common()
            },
            Api::Messages => Body {
                messages: user(),
                stream: Some(true),
                max_tokens: Some(max_tokens.unwrap_or(MESSAGES_DEFAULT_MAX_TOKENS)),
                ..self.common()
            },
            Api::Embeddings => Body {
                input: Some(Input::Many(vec![
                    prompt;
                    self.embeddings_batch.max(1) as usize
                ])),
                encoding_format: Some("float"),
                ..Body {
                    model: &self.model,
                    ..Body::default()
                }
            },
        };
        self.finish(&body)
    }

    /// The members every generating API shares: the model, `ignore_eos`.
    fn common(&self) -> Body<'_> {
        Body {
            model: &self.model,
            ignore_eos: self.ignore_eos,
            ..Body::default()
        }
    }

    /// A chat or completions body: streaming, asking for usage.
    fn streaming<'a>(
        &'a self,
        messages: Option<Vec<Message<'a>>>,
        max_tokens: Option<u32>,
    ) -> Body<'a> {
        Body {
            messages,
            stream: Some(true),
            stream_options: Some(StreamOptions {
                include_usage: true,
            }),
            max_tokens,
            ..self.common()
        }
    }

    /// The body's bytes, with the `--extra-body` members merged in.
    fn finish(&self, body: &Body<'_>) -> Bytes {
        // Serializing strings and integers into a Vec cannot fail.
        let body = serde_json::to_vec(body).unwrap_or_default();
        Bytes::from(self.extra.merge_into(body))
    }

    /// A chat body carrying a whole conversation (`(role, content)` pairs in
    /// order), for multi-turn sessions.
    pub fn body_messages(
        &self,
        messages: &[(&'static str, String)],
        max_tokens: Option<u32>,
    ) -> Bytes {
        let messages: Vec<Message<'_>> = messages
            .iter()
            .map(|(role, content)| Message {
                role,
                content: content.as_str(),
            })
            .collect();
        self.finish(&self.streaming(Some(messages), max_tokens.or(self.max_tokens)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_text_repeating_23_characters_of_the_prompt_is_caught() {
        let prompt = "Summarize: \"the quick brown fox\" jumps over the lazy dog";
        // Any 23-character run of the prompt holds a whole aligned window.
        for start in 0..prompt.len() - 23 {
            let pad = "x".repeat(start % ECHO_WINDOW_CHARS);
            let text = format!("{pad}{}!", &prompt[start..start + 23]);
            assert!(echoes_prompt(&text, prompt), "{text}");
        }
        // JSON-escaped, as a validation error would show it.
        let echoed =
            r#"{"detail":[{"input":{"messages":[{"content":"Summarize: \"the quick brown fox\""#;
        assert!(echoes_prompt(echoed, prompt));
        assert!(!echoes_prompt(
            "maximum context length is 4096 tokens",
            prompt
        ));
        assert!(!echoes_prompt("", prompt));
    }

    #[test]
    fn random_prompts_are_reproducible_distinct_and_of_the_asked_length() {
        let src = PromptSource::Random { words: 50, seed: 9 };
        let a = src.prompt(3);
        assert_eq!(a, src.prompt(3));
        assert_ne!(a, src.prompt(4));
        assert_eq!(a.text.split_whitespace().count(), 50);
        assert_ne!(
            a,
            PromptSource::Random {
                words: 50,
                seed: 10
            }
            .prompt(3)
        );
    }

    #[test]
    fn chat_and_completion_bodies_stream_and_ask_for_usage() {
        let t = BodyTemplate {
            api: Api::Chat,
            model: "m".into(),
            max_tokens: Some(64),
            ignore_eos: true,
            extra: Default::default(),
            embeddings_batch: 1,
        };
        let v: serde_json::Value = serde_json::from_slice(&t.body("hi \"there\"")).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"model": "m", "messages": [{"role": "user", "content": "hi \"there\""}],
                "stream": true, "stream_options": {"include_usage": true}, "max_tokens": 64, "ignore_eos": true})
        );
        let t = BodyTemplate {
            api: Api::Completions,
            model: "m".into(),
            max_tokens: None,
            ignore_eos: false,
            extra: crate::workload::extra_body::ExtraBody::parse(
                r#"{"temperature":0.5}"#,
                None,
                None,
            )
            .unwrap(),
            embeddings_batch: 1,
        };
        let v: serde_json::Value = serde_json::from_slice(&t.body("x")).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"model": "m", "prompt": "x", "stream": true, "stream_options": {"include_usage": true},
                "temperature": 0.5})
        );
    }

    fn template(api: Api, max_tokens: Option<u32>) -> BodyTemplate {
        BodyTemplate {
            api,
            model: "m".into(),
            max_tokens,
            ignore_eos: false,
            extra: Default::default(),
            embeddings_batch: 3,
        }
    }

    fn json(t: &BodyTemplate, prompt: &str, max_tokens: Option<u32>) -> serde_json::Value {
        serde_json::from_slice(&t.body_with(prompt, max_tokens)).unwrap()
    }

    #[test]
    fn responses_messages_and_embeddings_bodies_follow_their_apis() {
        use serde_json::json;
        let t = template(Api::Responses, Some(64));
        assert_eq!(
            json(&t, "hi", None),
            json!({"model": "m", "input": "hi", "stream": true, "max_output_tokens": 64})
        );
        // Messages: max_tokens is required; the request's own wins, then
        // the template's, then the default.
        let t = template(Api::Messages, None);
        let messages = json!([{"role": "user", "content": "hi"}]);
        assert_eq!(
            json(&t, "hi", None),
            json!({"model": "m", "messages": messages, "stream": true, "max_tokens": 4096})
        );
        assert_eq!(json(&t, "hi", Some(7))["max_tokens"], 7);
        assert_eq!(
            json(&template(Api::Messages, Some(9)), "hi", None)["max_tokens"],
            9
        );
        // Embeddings: the prompt 3 times (--embeddings-batch 3), not
        // streamed, no output budget.
        let t = template(Api::Embeddings, Some(64));
        assert_eq!(
            json(&t, "hi", Some(5)),
            json!({"model": "m", "input": ["hi", "hi", "hi"], "encoding_format": "float"})
        );
    }

    #[test]
    fn prompt_hash_is_twelve_hex_digits_of_sha256() {
        // sha256("abc") = ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad
        assert_eq!(prompt_hash("abc"), "ba7816bf8f01");
    }

    #[cfg(unix)]
    #[test]
    fn an_endless_prompt_source_is_refused_at_the_limit_not_read_whole() {
        // /dev/zero never ends: read_limited stops one byte past the limit.
        let err = load_jsonl_within(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(
            err.to_string(),
            "/dev/zero is larger than 1048576 bytes, the limit on a --prompts file"
        );
        // A FIFO whose writer would go on for 64 MiB: refused at 1 MiB, the
        // writer then sees the reader gone.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("p.fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            return; // no mkfifo here: the /dev/zero case stands.
        }
        let writer_path = fifo.clone();
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .open(writer_path)
                .unwrap();
            let chunk = vec![b' '; 1 << 16];
            let mut written = 0usize;
            while written < 64 << 20 && f.write_all(&chunk).is_ok() {
                written += chunk.len();
            }
            written
        });
        let err = load_jsonl_within(&fifo, 1 << 20).unwrap_err();
        assert!(
            matches!(err, PromptError::TooLarge { limit: 1048576, .. }),
            "{err}"
        );
        let written = writer.join().unwrap();
        assert!(
            written < 64 << 20,
            "the whole FIFO was read: {written} bytes"
        );
    }

    #[test]
    fn jsonl_takes_strings_and_objects_and_names_the_bad_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("p.jsonl");
        std::fs::write(
            &p,
            "\"one\"\n\n{\"prompt\": \"two\", \"class\": \"batch\"}\n",
        )
        .unwrap();
        let got = load_jsonl(&p).unwrap();
        assert_eq!(
            got[0],
            Prompt {
                text: "one".into(),
                class: None,
                tokens: None
            }
        );
        assert_eq!(
            got[1],
            Prompt {
                text: "two".into(),
                class: Some("batch".into()),
                tokens: None
            }
        );
        std::fs::write(&p, "\"ok\"\n{\"nope\": 1}\n").unwrap();
        let err = load_jsonl(&p).unwrap_err().to_string();
        assert!(err.contains(":2:"), "{err}");
    }
}
