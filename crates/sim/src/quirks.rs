//! Stream quirks: behaviours of real OpenAI-compatible servers that are legal
//! (or common enough to be treated as such) but that a naive client gets
//! wrong. Each is off by default; the recorder's tests turn them on one at a
//! time against the sim.
//!
//! - `close_after_response`: the TCP connection is closed after every
//!   streamed response, silently (the response head promised keep-alive), as
//!   proxies with short idle timeouts do. The client only finds out when it
//!   next looks at the connection.
//! - `usage_before_last_token`: the usage chunk goes out one engine step
//!   before the last token (with a 1-token output: in the same frame, just
//!   before it), not after the finish chunk.
//! - `tokens_per_chunk`: N tokens per content chunk (servers that batch
//!   their stream output, like vLLM's `--stream-interval`); a chunk leaves
//!   when its N-th token is made, the last one with whatever is left. The
//!   first token is seen only when the first chunk leaves.
//! - `no_done`: no `data: [DONE]`; the body simply ends.
//! - `no_finish_reason`: no chunk with a `finish_reason`.
//! - `no_usage`: no usage chunk, even when `stream_options.include_usage`
//!   asks for one (servers that do not implement it).
//!
//! - `reasoning_tokens` (with `reasoning_field`): the first N output tokens
//!   of every stream are reasoning, in the field each API uses
//!   ([`crate::dialect`]); not a quirk of a broken server but of a
//!   reasoning model, shaped here like the rest of the stream.
//! - `embedding_dim`: the length of every embeddings vector.
//! - `server_timing`: the finish chunk of chat and completions streams
//!   carries the engine's own timing, as llama.cpp (`timings`: `prompt_n`,
//!   `prompt_ms`, `predicted_n`, `predicted_ms`, `cache_n`) and vLLM
//!   (`metrics`: `queue_time_ms`, `time_to_first_token_ms`,
//!   `generation_time_ms`, `mean_itl_ms`, `tokens_per_second`) write it,
//!   from the driver's measured queue wait and admitting step
//!   ([`crate::engine::EngineTiming`]); `prompt_ms` is that step and
//!   `predicted_ms` the time from the first token to the last.
//!
//! Quirks shape streamed bodies only; non-streaming responses are
//! unchanged (an embeddings vector's length, the one unstreamed shape,
//! excepted).

/// How the sim shapes its streamed responses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamQuirks {
    /// Close the connection after each streamed response, without announcing it.
    pub close_after_response: bool,
    /// Send the usage chunk before the last token.
    pub usage_before_last_token: bool,
    /// Tokens per content chunk (at least 1).
    pub tokens_per_chunk: u32,
    /// Omit `data: [DONE]`.
    pub no_done: bool,
    /// Omit the chunk carrying `finish_reason`.
    pub no_finish_reason: bool,
    /// Never send a usage chunk.
    pub no_usage: bool,
    /// Tokens added to every prompt's count, as a server's chat template
    /// (role markers, a BOS token) adds them to `usage.prompt_tokens`: what
    /// a client tokenizer cannot see.
    pub template_tokens: u32,
    /// Pause before every N-th token of a stream (the N-th, 2N-th, …; 0:
    /// never), so a recording shows stalls where they were put.
    pub stall_every: u32,
    /// How long each of those pauses lasts, ms.
    pub stall_ms: u64,
    /// The first this many output tokens of every stream are reasoning.
    pub reasoning_tokens: u32,
    /// Where chat and completions streams put reasoning text.
    pub reasoning_field: crate::dialect::ReasoningField,
    /// Numbers per embeddings vector.
    pub embedding_dim: u32,
    /// Which servers' timing objects the finish chunk carries.
    pub server_timing: ServerTiming,
    /// The share of prompts whose answer is corrupted (0–1; streamed and
    /// unstreamed alike: [`crate::answer`]).
    pub corrupt_answers: f64,
}

pub use crate::dialect::ServerTiming;

/// The default length of an embeddings vector: small, since a load test
/// measures the time, not the vector.
pub const DEFAULT_EMBEDDING_DIM: u32 = 8;

impl Default for StreamQuirks {
    /// No quirk: one token per chunk, finish chunk, usage when asked, `[DONE]`,
    /// no reasoning, vectors of [`DEFAULT_EMBEDDING_DIM`].
    fn default() -> StreamQuirks {
        StreamQuirks {
            close_after_response: false,
            usage_before_last_token: false,
            tokens_per_chunk: 1,
            no_done: false,
            no_finish_reason: false,
            no_usage: false,
            template_tokens: 0,
            stall_every: 0,
            stall_ms: 0,
            reasoning_tokens: 0,
            reasoning_field: crate::dialect::ReasoningField::Reasoning,
            embedding_dim: DEFAULT_EMBEDDING_DIM,
            server_timing: ServerTiming::default(),
            corrupt_answers: 0.0,
        }
    }
}

impl StreamQuirks {
    /// The quirks in force, as their flag names (empty when none).
    pub fn describe(&self) -> String {
        let mut out = Vec::new();
        if self.close_after_response {
            out.push("close-after-response".to_owned());
        }
        if self.usage_before_last_token {
            out.push("usage-before-last-token".to_owned());
        }
        if self.tokens_per_chunk > 1 {
            out.push(format!("tokens-per-chunk {}", self.tokens_per_chunk));
        }
        if self.no_done {
            out.push("no-done".to_owned());
        }
        if self.no_finish_reason {
            out.push("no-finish-reason".to_owned());
        }
        if self.stall_every > 0 {
            out.push(format!(
                "stall-every {} (stall-ms {})",
                self.stall_every, self.stall_ms
            ));
        }
        if self.no_usage {
            out.push("no-usage".to_owned());
        }
        if self.template_tokens > 0 {
            out.push(format!("template-tokens {}", self.template_tokens));
        }
        if self.server_timing.llama_cpp {
            out.push("server-timing llama.cpp".to_owned());
        }
        if self.server_timing.vllm {
            out.push("server-timing vllm".to_owned());
        }
        if self.corrupt_answers > 0.0 {
            out.push(format!("corrupt-answers {}", self.corrupt_answers));
        }
        out.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_has_no_quirk_and_says_nothing() {
        assert_eq!(StreamQuirks::default().describe(), "");
        let q = StreamQuirks {
            tokens_per_chunk: 3,
            no_done: true,
            ..StreamQuirks::default()
        };
        assert_eq!(q.describe(), "tokens-per-chunk 3, no-done");
    }
}
