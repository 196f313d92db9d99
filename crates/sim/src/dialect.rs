//! The event shapes of the four streamed APIs the sim speaks, so the stream
//! logic in `http` writes "a reasoning token", "the answer starts", "the
//! end" once for all of them.
//!
//! - chat (`/v1/chat/completions`): a role chunk, then `delta.content`
//!   chunks (reasoning in `delta.reasoning` or `delta.reasoning_content`,
//!   `--reasoning-field`), a finish chunk, a usage chunk when asked
//!   (`completion_tokens_details.reasoning_tokens` when the model reasoned),
//!   `[DONE]`;
//! - completions (`/v1/completions`): `text` chunks (reasoning in the same
//!   field as chat: vLLM's completions endpoint has none of its own), the
//!   same end;
//! - Responses (`/v1/responses`): `response.created`, then
//!   `response.reasoning_text.delta` and `response.output_text.delta`
//!   events, `response.completed` (or `response.incomplete` when the output
//!   budget ended it) with `usage.output_tokens_details.reasoning_tokens`;
//! - Messages (`/v1/messages`): `message_start` (`usage.input_tokens`), a
//!   `thinking` block of `thinking_delta`s closed by a `signature_delta`
//!   when the model reasons, a `text` block of `text_delta`s,
//!   `message_delta` (`stop_reason`, `usage.output_tokens`, thinking
//!   included, as Anthropic counts it), `message_stop`.

/// Which streamed API a response speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// `/v1/chat/completions`.
    Chat,
    /// `/v1/completions`.
    Completions,
    /// `/v1/responses`.
    Responses,
    /// `/v1/messages`.
    Messages,
}

/// Where a chat or completions stream puts its reasoning text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReasoningField {
    /// `delta.reasoning` (vLLM since PR #27752).
    #[default]
    Reasoning,
    /// `delta.reasoning_content` (older vLLM, llama.cpp, DeepSeek).
    ReasoningContent,
}

impl ReasoningField {
    /// The member's name.
    pub fn as_str(self) -> &'static str {
        match self {
            ReasoningField::Reasoning => "reasoning",
            ReasoningField::ReasoningContent => "reasoning_content",
        }
    }
}

/// The kind of one output token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A thinking token.
    Reasoning,
    /// An answer token.
    Answer,
}

/// How the stream ended, for its closing events.
#[derive(Debug, Clone, Copy)]
pub struct Close {
    /// The output budget (`max_tokens`) ended it.
    pub by_length: bool,
    /// Prompt tokens.
    pub prompt_tokens: u32,
    /// Output tokens, reasoning included.
    pub output_tokens: u32,
    /// The reasoning tokens among them.
    pub reasoning_tokens: u32,
    /// Send the finish chunk (chat, completions; `--no-finish-reason` off).
    pub finish_reason: bool,
    /// Send the usage (asked for, `--no-usage` off).
    pub usage: bool,
    /// The engine's timing, and which objects the finish chunk carries it in.
    pub timing: Option<(ClosingTiming, ServerTiming)>,
}

/// The server-timing objects a chat or completions finish chunk carries
/// (`--server-timing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ServerTiming {
    /// llama.cpp's `timings`.
    pub llama_cpp: bool,
    /// vLLM's `metrics`.
    pub vllm: bool,
}

/// What the engine measured of one sequence, for the finish chunk's
/// server-timing objects.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClosingTiming {
    /// Queue wait, ms.
    pub queue_ms: f64,
    /// The admitting step to the first token, ms.
    pub prefill_ms: f64,
    /// The first token to the last, ms.
    pub decode_ms: f64,
}

impl ClosingTiming {
    /// The members to add to a finish chunk: `,"timings":{…}` and/or
    /// `,"metrics":{…}`, as `which` says.
    fn members(&self, c: &Close, which: ServerTiming) -> String {
        let (q, p, d) = (self.queue_ms, self.prefill_ms, self.decode_ms);
        let (prompt, n) = (c.prompt_tokens, c.output_tokens);
        let mut out = String::new();
        if which.llama_cpp {
            out.push_str(&format!(
                ",\"timings\":{{\"cache_n\":0,\"prompt_n\":{prompt},\"prompt_ms\":{p:.3},\"predicted_n\":{n},\"predicted_ms\":{d:.3}}}"
            ));
        }
        if which.vllm {
            let itl = if n > 1 { d / f64::from(n - 1) } else { 0.0 };
            let rate = if d > 0.0 {
                f64::from(n) * 1000.0 / d
            } else {
                0.0
            };
            out.push_str(&format!(
                ",\"metrics\":{{\"queue_time_ms\":{q:.3},\"time_to_first_token_ms\":{:.3},\"generation_time_ms\":{d:.3},\"mean_itl_ms\":{itl:.3},\"tokens_per_second\":{rate:.3}}}",
                q + p
            ));
        }
        out
    }
}

/// Pre-rendered JSON around each token, so a chunk costs two copies.
#[derive(Debug)]
pub struct Shape {
    dialect: Dialect,
    /// The members every chat or completions chunk starts with.
    head: String,
    answer: (String, &'static str),
    reasoning: (String, &'static str),
}

impl Shape {
    /// The shape of response `id` of `model` in `dialect`, reasoning in `field`.
    pub fn new(dialect: Dialect, id: u64, model: &str, field: ReasoningField) -> Shape {
        let model = serde_json::to_string(model).unwrap_or_else(|_| "\"sim\"".into());
        let head = match dialect {
            Dialect::Completions => format!(
                "{{\"id\":\"cmpl-{id}\",\"object\":\"text_completion\",\"created\":0,\"model\":{model},"
            ),
            _ => format!(
                "{{\"id\":\"chatcmpl-{id}\",\"object\":\"chat.completion.chunk\",\"created\":0,\"model\":{model},"
            ),
        };
        let chat = |member: &str| {
            (
                format!("data: {head}\"choices\":[{{\"index\":0,\"delta\":{{\"{member}\":\""),
                "\"},\"finish_reason\":null}]}\n\n",
            )
        };
        let typed = |event: &str, extra: &str| {
            (
                format!("event: {event}\ndata: {{\"type\":\"{event}\",{extra}\"delta\":\""),
                "\"}\n\n",
            )
        };
        let (answer, reasoning) = match dialect {
            Dialect::Chat => (chat("content"), chat(field.as_str())),
            Dialect::Completions => (
                (
                    format!("data: {head}\"choices\":[{{\"index\":0,\"text\":\""),
                    "\",\"logprobs\":null,\"finish_reason\":null}]}\n\n",
                ),
                chat(field.as_str()),
            ),
            Dialect::Responses => (
                typed("response.output_text.delta", "\"output_index\":1,\"content_index\":0,"),
                typed("response.reasoning_text.delta", "\"output_index\":0,\"content_index\":0,"),
            ),
            Dialect::Messages => (
                (
                    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"".into(),
                    "\"}}\n\n",
                ),
                (
                    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"".into(),
                    "\"}}\n\n",
                ),
            ),
        };
        Shape {
            dialect,
            head,
            answer,
            reasoning,
        }
    }

    /// The dialect.
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The text before and after a token of `kind`.
    pub fn token(&self, kind: Kind) -> (&str, &'static str) {
        let (prefix, suffix) = match kind {
            Kind::Answer => &self.answer,
            Kind::Reasoning => &self.reasoning,
        };
        (prefix, suffix)
    }

    /// What opens the stream: the chat role chunk, `response.created`, or
    /// `message_start` and the first content block (`thinking` when the
    /// model reasons).
    pub fn start(&self, prompt_tokens: u32, reasons: bool) -> String {
        match self.dialect {
            Dialect::Chat => format!(
                "data: {}\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"finish_reason\":null}}]}}\n\n",
                self.head
            ),
            Dialect::Completions => String::new(),
            Dialect::Responses => "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_sim\",\"status\":\"in_progress\"}}\n\n".into(),
            Dialect::Messages => {
                let block = if reasons {
                    "{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}"
                } else {
                    "{\"type\":\"text\",\"text\":\"\"}"
                };
                let index = if reasons { 0 } else { 1 };
                format!(
                    "event: message_start\ndata: {{\"type\":\"message_start\",\"message\":{{\"id\":\"msg_sim\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{{\"input_tokens\":{prompt_tokens},\"output_tokens\":1}}}}}}\n\n\
                     event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{index},\"content_block\":{block}}}\n\n"
                )
            }
        }
    }

    /// What goes between the last reasoning token and the first answer
    /// token: Messages closes the thinking block (its signature, which is
    /// no token) and opens the text block; the others need nothing.
    pub fn answer_starts(&self) -> &'static str {
        match self.dialect {
            Dialect::Messages => concat!(
                "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"c2lt\"}}\n\n",
                "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
                "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
            ),
            _ => "",
        }
    }

    /// The chat/completions usage chunk.
    pub fn usage_chunk(&self, c: &Close) -> String {
        let (p, n, r) = (c.prompt_tokens, c.output_tokens, c.reasoning_tokens);
        let details = if r > 0 {
            format!(",\"completion_tokens_details\":{{\"reasoning_tokens\":{r}}}")
        } else {
            String::new()
        };
        format!(
            "data: {}\"choices\":[],\"usage\":{{\"prompt_tokens\":{p},\"completion_tokens\":{n},\"total_tokens\":{}{details}}}}}\n\n",
            self.head,
            p + n
        )
    }

    /// The chat/completions finish chunk (with the engine's timing objects
    /// when asked).
    pub fn finish_chunk(&self, c: &Close) -> String {
        let finish = if c.by_length { "length" } else { "stop" };
        let head = &self.head;
        let timing = c
            .timing
            .map(|(t, which)| t.members(c, which))
            .unwrap_or_default();
        match self.dialect {
            Dialect::Completions => format!("data: {head}\"choices\":[{{\"index\":0,\"text\":\"\",\"logprobs\":null,\"finish_reason\":\"{finish}\"}}]{timing}}}\n\n"),
            _ => format!("data: {head}\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"{finish}\"}}]{timing}}}\n\n"),
        }
    }

    /// The closing events of a Responses or Messages stream (chat and
    /// completions close in `http`, where their quirks apply).
    pub fn typed_end(&self, c: &Close) -> String {
        let (p, n, r) = (c.prompt_tokens, c.output_tokens, c.reasoning_tokens);
        match self.dialect {
            Dialect::Responses => {
                let (event, status) = if c.by_length {
                    ("response.incomplete", "incomplete")
                } else {
                    ("response.completed", "completed")
                };
                let usage = if c.usage {
                    format!(",\"usage\":{{\"input_tokens\":{p},\"output_tokens\":{n},\"output_tokens_details\":{{\"reasoning_tokens\":{r}}},\"total_tokens\":{}}}", p + n)
                } else {
                    String::new()
                };
                format!("event: {event}\ndata: {{\"type\":\"{event}\",\"response\":{{\"id\":\"resp_sim\",\"status\":\"{status}\"{usage}}}}}\n\n")
            }
            Dialect::Messages => {
                let stop = if c.by_length {
                    "max_tokens"
                } else {
                    "end_turn"
                };
                let usage = if c.usage {
                    format!(",\"usage\":{{\"output_tokens\":{n}}}")
                } else {
                    String::new()
                };
                format!(
                    "event: content_block_stop\ndata: {{\"type\":\"content_block_stop\",\"index\":1}}\n\n\
                     event: message_delta\ndata: {{\"type\":\"message_delta\",\"delta\":{{\"stop_reason\":\"{stop}\",\"stop_sequence\":null}}{usage}}}\n\n\
                     event: message_stop\ndata: {{\"type\":\"message_stop\"}}\n\n"
                )
            }
            Dialect::Chat | Dialect::Completions => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event a shape writes is one SSE event whose data is JSON.
    fn each_event_is_json(text: &str) {
        for event in text.split("\n\n").filter(|e| !e.is_empty()) {
            let data = event
                .lines()
                .find_map(|l| l.strip_prefix("data: "))
                .unwrap_or_else(|| panic!("no data in {event:?}"));
            serde_json::from_str::<serde_json::Value>(data)
                .unwrap_or_else(|e| panic!("{e}: {data}"));
        }
    }

    #[test]
    fn every_dialect_writes_json_events_with_its_reasoning_member() {
        let close = Close {
            by_length: false,
            prompt_tokens: 3,
            output_tokens: 5,
            reasoning_tokens: 2,
            finish_reason: true,
            usage: true,
            timing: None,
        };
        for dialect in [
            Dialect::Chat,
            Dialect::Completions,
            Dialect::Responses,
            Dialect::Messages,
        ] {
            let shape = Shape::new(dialect, 7, "m\"x", ReasoningField::ReasoningContent);
            let token = |kind| {
                let (p, s) = shape.token(kind);
                format!("{p} the{s}")
            };
            let all = [
                shape.start(3, true),
                token(Kind::Reasoning),
                shape.answer_starts().to_owned(),
                token(Kind::Answer),
                shape.finish_chunk(&close),
                shape.usage_chunk(&close),
                shape.typed_end(&close),
            ]
            .concat();
            each_event_is_json(&all);
            let member = match dialect {
                Dialect::Chat | Dialect::Completions => "\"reasoning_content\":\" the\"",
                Dialect::Responses => "\"response.reasoning_text.delta\"",
                Dialect::Messages => "\"thinking\":\" the\"",
            };
            assert!(all.contains(member), "{dialect:?}: {all}");
        }
    }
}
