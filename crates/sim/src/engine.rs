//! The continuous-batching model, as pure step logic (no clock, no sockets).
//!
//! State: a FIFO queue of waiting sequences and a running batch of at most
//! `max_batch`. Each [`Engine::step`]:
//! 1. admits waiting sequences while the batch has room (they are prefilled
//!    in this step, mixed with the decodes of the running ones);
//! 2. costs `prefill_ms_per_1k_tokens × (admitted prompt tokens) / 1000
//!    + decode_step_ms + decode_ms_per_seq × (sequences in the batch)`;
//! 3. gives every sequence in the batch one output token at the end of the
//!    step; a sequence that reached its length leaves the batch.
//!
//! So a lone request with `P` prompt tokens and `N` output tokens sees
//! TTFT = `prefill(P) + decode_step + decode_per_seq` and a TPOT of
//! `decode_step + decode_per_seq`; at a full batch `B` the engine makes
//! `B / (decode_step + B · decode_per_seq)` tokens per ms. Offered load above
//! that rate only lengthens the queue: completions flatten and TTFT climbs
//! (the knee).

use std::collections::VecDeque;

/// Cost model of the engine.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineParams {
    /// Most sequences decoding at once.
    pub max_batch: usize,
    /// Prefill cost per 1,000 prompt tokens admitted in a step, ms.
    pub prefill_ms_per_1k_tokens: f64,
    /// Fixed cost of one decode step, ms.
    pub decode_step_ms: f64,
    /// Extra cost of one decode step per sequence in the batch, ms.
    pub decode_ms_per_seq: f64,
}

impl EngineParams {
    /// Tokens per second at a full batch, ignoring prefill: the engine's ceiling.
    pub fn full_batch_tokens_per_s(&self) -> f64 {
        let b = self.max_batch as f64;
        let step_ms = self.decode_step_ms + self.decode_ms_per_seq * b;
        if step_ms <= 0.0 {
            f64::INFINITY
        } else {
            b * 1000.0 / step_ms
        }
    }
}

/// A sequence to serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqSpec {
    /// Caller's id.
    pub id: u64,
    /// Prompt length in tokens.
    pub prompt_tokens: u32,
    /// Output length in tokens (at least 1).
    pub output_tokens: u32,
}

/// One output token produced by a step.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenOut {
    /// The sequence.
    pub id: u64,
    /// 0-based index of this token in the sequence's output.
    pub index: u32,
    /// This was the sequence's last token.
    pub last: bool,
    /// On a first token, where its time went in the engine, measured by
    /// the real-time driver (the pure engine has no clock: `None` here).
    pub timing: Option<EngineTiming>,
}

/// Where a sequence's time to first token went inside the engine, on the
/// driver's clock: what the sim reports as its own server timing, so a
/// recording's split can be checked against the engine's truth.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EngineTiming {
    /// From the engine receiving the sequence to the start of the step that
    /// admitted it, ms.
    pub queue_ms: f64,
    /// That step, from its start to the first token's delivery (its prefill,
    /// and the decode that made the token), ms.
    pub prefill_ms: f64,
}

/// What one step did.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// How long the step takes, ms.
    pub duration_ms: f64,
    /// Sequences admitted (prefilled) in this step.
    pub admitted: usize,
    /// Sequences in the batch during the step.
    pub batch: usize,
    /// Tokens emitted at the end of the step.
    pub tokens: Vec<TokenOut>,
}

#[derive(Debug, Clone, Copy)]
struct Running {
    id: u64,
    emitted: u32,
    output_tokens: u32,
}

/// The engine state.
#[derive(Debug, Clone)]
pub struct Engine {
    params: EngineParams,
    waiting: VecDeque<SeqSpec>,
    running: Vec<Running>,
}

impl Engine {
    /// An idle engine.
    pub fn new(params: EngineParams) -> Engine {
        Engine {
            params,
            waiting: VecDeque::new(),
            running: Vec::with_capacity(params.max_batch),
        }
    }

    /// Queues a sequence.
    pub fn submit(&mut self, seq: SeqSpec) {
        self.waiting.push_back(SeqSpec {
            output_tokens: seq.output_tokens.max(1),
            ..seq
        });
    }

    /// Forgets a sequence (its client went away), waiting or running.
    pub fn cancel(&mut self, id: u64) {
        self.waiting.retain(|s| s.id != id);
        self.running.retain(|s| s.id != id);
    }

    /// Drops waiting sequences for which `gone` is true (checked before admission).
    pub fn drop_waiting(&mut self, mut gone: impl FnMut(u64) -> bool) {
        self.waiting.retain(|s| !gone(s.id));
    }

    /// Nothing waiting or running.
    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.running.is_empty()
    }

    /// Sequences queued, not yet admitted.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Runs one step; `None` when idle.
    pub fn step(&mut self) -> Option<Step> {
        let mut admitted = 0;
        let mut prefill_tokens = 0u64;
        while self.running.len() < self.params.max_batch.max(1) {
            let Some(seq) = self.waiting.pop_front() else {
                break;
            };
            prefill_tokens += u64::from(seq.prompt_tokens);
            admitted += 1;
            self.running.push(Running {
                id: seq.id,
                emitted: 0,
                output_tokens: seq.output_tokens,
            });
        }
        if self.running.is_empty() {
            return None;
        }
        let batch = self.running.len();
        let p = &self.params;
        let duration_ms = p.prefill_ms_per_1k_tokens * prefill_tokens as f64 / 1000.0
            + p.decode_step_ms
            + p.decode_ms_per_seq * batch as f64;
        let mut tokens = Vec::with_capacity(batch);
        for seq in &mut self.running {
            let index = seq.emitted;
            seq.emitted += 1;
            tokens.push(TokenOut {
                id: seq.id,
                index,
                last: seq.emitted >= seq.output_tokens,
                timing: None,
            });
        }
        self.running.retain(|s| s.emitted < s.output_tokens);
        Some(Step {
            duration_ms,
            admitted,
            batch,
            tokens,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(max_batch: usize) -> EngineParams {
        EngineParams {
            max_batch,
            prefill_ms_per_1k_tokens: 20.0,
            decode_step_ms: 5.0,
            decode_ms_per_seq: 1.0,
        }
    }

    /// Runs to idle; returns (time of each token) per sequence id.
    fn timeline(engine: &mut Engine) -> std::collections::BTreeMap<u64, Vec<f64>> {
        let mut t = 0.0;
        let mut out = std::collections::BTreeMap::<u64, Vec<f64>>::new();
        while let Some(step) = engine.step() {
            t += step.duration_ms;
            for tok in step.tokens {
                out.entry(tok.id).or_default().push(t);
            }
        }
        out
    }

    #[test]
    fn a_lone_request_sees_prefill_plus_one_step_then_one_step_per_token() {
        let mut e = Engine::new(params(4));
        e.submit(SeqSpec {
            id: 1,
            prompt_tokens: 500,
            output_tokens: 4,
        });
        let times = &timeline(&mut e)[&1];
        // TTFT = 20 × 0.5 + 5 + 1 = 16 ms; then 6 ms per token.
        assert_eq!(times, &vec![16.0, 22.0, 28.0, 34.0]);
        assert!(e.is_idle());
    }

    #[test]
    fn the_batch_is_capped_and_the_rest_wait_in_order() {
        let mut e = Engine::new(params(2));
        for id in 0..3 {
            e.submit(SeqSpec {
                id,
                prompt_tokens: 0,
                output_tokens: 2,
            });
        }
        let s1 = e.step().unwrap();
        assert_eq!((s1.admitted, s1.batch, s1.duration_ms), (2, 2, 7.0));
        assert_eq!(e.waiting(), 1);
        let s2 = e.step().unwrap();
        assert!(s2.tokens.iter().all(|t| t.last));
        let s3 = e.step().unwrap();
        assert_eq!((s3.admitted, s3.batch, s3.tokens[0].id), (1, 1, 2));
    }

    #[test]
    fn a_longer_queue_means_a_later_first_token_but_the_same_token_rate() {
        let mut e = Engine::new(params(1));
        for id in 0..3 {
            e.submit(SeqSpec {
                id,
                prompt_tokens: 0,
                output_tokens: 3,
            });
        }
        let t = timeline(&mut e);
        // Each sequence takes 3 steps of 6 ms; the i-th waits for i before it.
        assert_eq!(t[&0][0], 6.0);
        assert_eq!(t[&1][0], 24.0);
        assert_eq!(t[&2][0], 42.0);
        assert_eq!(t[&2][2] - t[&2][1], 6.0);
    }

    #[test]
    fn cancelled_sequences_leave_and_the_ceiling_is_as_documented() {
        let mut e = Engine::new(params(2));
        e.submit(SeqSpec {
            id: 1,
            prompt_tokens: 0,
            output_tokens: 5,
        });
        e.submit(SeqSpec {
            id: 2,
            prompt_tokens: 0,
            output_tokens: 5,
        });
        e.step();
        e.cancel(1);
        assert_eq!(e.step().unwrap().tokens.len(), 1);
        // 2 tokens per (5 + 2 × 1) ms = 285.7… tokens/s.
        assert!((params(2).full_batch_tokens_per_s() - 2000.0 / 7.0).abs() < 1e-9);
    }
}
