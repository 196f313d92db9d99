//! Turning one request's observation and ending into its trace row.
//!
//! Pure: no clock, no I/O. The rules:
//! - completed → `firstTokenMs`, `completedMs`, `outputTokens` (the usage
//!   count, or the content-chunk count when the document counts chunks),
//!   `reasoningTokens` when the usage block said;
//! - `firstAnswerMs` on every row that got an answer token (so a completed
//!   row without it never answered: its output went to reasoning);
//! - failed → `reason`, `endedMs`, and `firstTokenMs` when one came; the
//!   label `errorText` when the server said why (at most 200 characters);
//! - in flight → `firstTokenMs` when one came, nothing else;
//! - never sent (the run stopped before the client got to a due request) →
//!   in flight with the label `notSent: true`: it had arrived, by the
//!   schedule, and its outcome is unknown.
//!
//! Labels: `sendLagMs` (open loop: actual send − scheduled),
//! `serverPromptTokens` from the usage block, `promptChars`, `promptHash`,
//! and the workload's own (`promptTokens` counted by the client's tokenizer,
//! `requestedOutputTokens` and `outputShort`, `prefixGroup`, `session`,
//! `turn`…).

use goodput_core::trace::write::{round_us, RowStatus, TraceRow};
use goodput_core::trace::{Labels, Scalar, TokenCount};

use crate::exchange::{Ending, Observation};

/// What the recorder knows about a request before it is sent.
#[derive(Debug, Clone, PartialEq)]
pub struct RowMeta {
    /// Index in the schedule (the id is `r<index>`).
    pub index: usize,
    /// The row's explicit class, when the prompt named one.
    pub class: Option<String>,
    /// Scheduled (open loop) or actual (closed loop) arrival, ms since t0.
    pub arrival_ms: f64,
    /// Whether send lag is meaningful (open loop).
    pub open_loop: bool,
    /// Characters of the prompt text.
    pub prompt_chars: u64,
    /// Short hash of the prompt text.
    pub prompt_hash: String,
    /// The workload's labels for this request.
    pub labels: Labels,
}

/// The row of a request that ran (or started to).
pub fn assemble(
    meta: &RowMeta,
    obs: &Observation,
    ending: &Ending,
    tokens: TokenCount,
) -> TraceRow {
    let mut row = base(meta);
    row.first_token_ms = obs.first_token_ms.map(round_us);
    row.first_answer_ms = obs.first_answer_ms.map(round_us);
    match *ending {
        Ending::Completed { completed_ms } => {
            row.status = RowStatus::Completed;
            row.completed_ms = Some(round_us(completed_ms));
            row.output_tokens = Some(match tokens {
                TokenCount::Usage => obs.usage_output_tokens.unwrap_or(obs.content_chunks),
                // The recorder has no tokenizer and never declares client-tokenizer.
                TokenCount::Chunks | TokenCount::ClientTokenizer => obs.content_chunks,
            });
            row.gaps_ms = obs.gaps();
            row.reasoning_tokens = reasoning_tokens(obs, tokens);
        }
        Ending::Failed { reason, ended_ms } => {
            row.status = RowStatus::Failed;
            row.reason = Some(reason.as_string());
            row.ended_ms = Some(round_us(ended_ms));
            if let Some(text) = &obs.error_text {
                row.labels
                    .insert("errorText".into(), Scalar::String(text.clone()));
            }
        }
        Ending::InFlight => row.status = RowStatus::InFlight,
    }
    if meta.open_loop {
        if let Some(sent) = obs.sent_ms {
            let lag = round_us((sent - meta.arrival_ms).max(0.0));
            row.labels.insert("sendLagMs".into(), Scalar::Number(lag));
        }
    }
    row.labels
        .extend(obs.server.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(n) = obs.usage_prompt_tokens {
        row.labels
            .insert("serverPromptTokens".into(), Scalar::Number(n as f64));
    }
    row.labels.insert(
        "promptChars".into(),
        Scalar::Number(meta.prompt_chars as f64),
    );
    crate::workload::accounting::mark_short(&mut row);
    row
}

/// The row's `reasoningTokens`: the usage block's count, in a document
/// that counts usage, never more than the output tokens (a server whose two
/// counts disagree gets no reasoning count rather than an invalid row).
fn reasoning_tokens(obs: &Observation, tokens: TokenCount) -> Option<u64> {
    let output = obs.usage_output_tokens?;
    match tokens {
        TokenCount::Usage => obs.usage_reasoning_tokens.filter(|&r| r <= output),
        TokenCount::Chunks | TokenCount::ClientTokenizer => None,
    }
}

/// The row of a due request the client never sent.
pub fn not_sent(meta: &RowMeta) -> TraceRow {
    let mut row = base(meta);
    row.labels.insert("notSent".into(), Scalar::Bool(true));
    row.labels.insert(
        "promptChars".into(),
        Scalar::Number(meta.prompt_chars as f64),
    );
    row
}

fn base(meta: &RowMeta) -> TraceRow {
    let mut labels = meta.labels.clone();
    labels.insert(
        "promptHash".into(),
        Scalar::String(meta.prompt_hash.clone()),
    );
    TraceRow {
        class: meta.class.clone(),
        ..TraceRow::new(
            format!("r{}", meta.index),
            round_us(meta.arrival_ms),
            RowStatus::InFlight,
            labels,
        )
    }
}

/// The document's token mode: `usage` when every completed request reported
/// usage (or none completed), else `chunks` for all rows, since one document
/// cannot mix the two.
pub fn token_mode<'a>(
    results: impl IntoIterator<Item = (&'a Observation, &'a Ending)>,
) -> TokenCount {
    let all_usage = results
        .into_iter()
        .filter(|(_, e)| matches!(e, Ending::Completed { .. }))
        .all(|(o, _)| o.usage_output_tokens.is_some());
    if all_usage {
        TokenCount::Usage
    } else {
        TokenCount::Chunks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::FailReason;

    fn meta() -> RowMeta {
        RowMeta {
            index: 7,
            class: None,
            arrival_ms: 1000.0,
            open_loop: true,
            prompt_chars: 42,
            prompt_hash: "abcdef012345".into(),
            labels: Labels::new(),
        }
    }

    fn obs() -> Observation {
        Observation {
            sent_ms: Some(1000.25),
            first_token_ms: Some(1100.0004),
            first_answer_ms: Some(1100.0004),
            content_chunks: 9,
            usage_output_tokens: Some(10),
            usage_prompt_tokens: Some(12),
            usage_reasoning_tokens: None,
            finished: true,
            error_head: None,
            error_text: None,
            gaps_ms: vec![20.0, 0.5],
            gaps_dropped: false,
            last_content_ms: None,
            ..Observation::default()
        }
    }

    #[test]
    fn a_reasoning_row_keeps_its_first_answer_and_its_reasoning_count() {
        let done = Ending::Completed {
            completed_ms: 1500.0,
        };
        let thought = Observation {
            first_answer_ms: Some(1180.0000004),
            usage_reasoning_tokens: Some(4),
            ..obs()
        };
        let row = assemble(&meta(), &thought, &done, TokenCount::Usage);
        assert_eq!(row.first_token_ms, Some(1100.0));
        assert_eq!(row.first_answer_ms, Some(1180.0));
        assert_eq!(
            (row.reasoning_tokens, row.output_tokens),
            (Some(4), Some(10))
        );
        // No answer at all: none written (a completed row without it never
        // answered); chunk counting and a count above the output give no
        // reasoning count (the row would be invalid).
        let unanswered = Observation {
            first_answer_ms: None,
            ..thought.clone()
        };
        let row = assemble(&meta(), &unanswered, &done, TokenCount::Usage);
        assert_eq!(row.first_answer_ms, None);
        let row = assemble(&meta(), &thought, &done, TokenCount::Chunks);
        assert_eq!(row.reasoning_tokens, None);
        let over = Observation {
            usage_reasoning_tokens: Some(11),
            ..thought.clone()
        };
        assert_eq!(
            assemble(&meta(), &over, &done, TokenCount::Usage).reasoning_tokens,
            None
        );
        // In flight: the first answer stays, no count (no usage yet counts).
        let row = assemble(&meta(), &thought, &Ending::InFlight, TokenCount::Usage);
        assert_eq!(
            (row.first_answer_ms, row.reasoning_tokens),
            (Some(1180.0), None)
        );
    }

    #[test]
    fn a_completed_request_becomes_a_completed_row_with_usage_tokens() {
        let row = assemble(
            &meta(),
            &obs(),
            &Ending::Completed {
                completed_ms: 1500.0,
            },
            TokenCount::Usage,
        );
        assert_eq!(row.id, "r7");
        assert_eq!(row.status, RowStatus::Completed);
        assert_eq!(row.arrival_ms, 1000.0);
        assert_eq!(row.first_token_ms, Some(1100.0));
        assert_eq!(row.completed_ms, Some(1500.0));
        assert_eq!(row.output_tokens, Some(10));
        assert_eq!(row.gaps_ms, Some(vec![20.0, 0.5]));
        assert_eq!(row.labels["sendLagMs"], Scalar::Number(0.25));
        assert_eq!(row.labels["serverPromptTokens"], Scalar::Number(12.0));
        assert_eq!(row.labels["promptChars"], Scalar::Number(42.0));
        assert!(!row.labels.contains_key("promptTokens"));
        let chunks = assemble(
            &meta(),
            &obs(),
            &Ending::Completed {
                completed_ms: 1500.0,
            },
            TokenCount::Chunks,
        );
        assert_eq!(chunks.output_tokens, Some(9));
    }

    #[test]
    fn a_failed_request_keeps_its_reason_end_and_first_token() {
        let ending = Ending::Failed {
            reason: FailReason::Timeout,
            ended_ms: 61_000.0,
        };
        let row = assemble(&meta(), &obs(), &ending, TokenCount::Usage);
        assert_eq!(row.status, RowStatus::Failed);
        assert_eq!(row.reason.as_deref(), Some("timeout"));
        assert_eq!(row.ended_ms, Some(61_000.0));
        assert_eq!(row.first_token_ms, Some(1100.0));
        assert_eq!(row.completed_ms, None);
        assert_eq!(row.output_tokens, None);
        assert!(!row.labels.contains_key("errorText"));
        let said = Observation {
            error_text: Some("overloaded".into()),
            ..obs()
        };
        let row = assemble(&meta(), &said, &ending, TokenCount::Usage);
        assert_eq!(row.labels["errorText"], Scalar::String("overloaded".into()));
    }

    #[test]
    fn in_flight_and_unsent_rows_carry_no_completion() {
        let row = assemble(
            &meta(),
            &Observation::default(),
            &Ending::InFlight,
            TokenCount::Usage,
        );
        assert_eq!(row.status, RowStatus::InFlight);
        assert_eq!(
            (row.first_token_ms, row.completed_ms, row.reason.clone()),
            (None, None, None)
        );
        assert_eq!(row.labels["promptChars"], Scalar::Number(42.0));
        let unsent = not_sent(&meta());
        assert_eq!(unsent.status, RowStatus::InFlight);
        assert_eq!(unsent.labels["notSent"], Scalar::Bool(true));
        assert!(!unsent.labels.contains_key("sendLagMs"));
    }

    #[test]
    fn one_completed_request_without_usage_switches_the_document_to_chunks() {
        let done = Ending::Completed { completed_ms: 1.0 };
        let with = obs();
        let without = Observation {
            usage_output_tokens: None,
            ..obs()
        };
        assert_eq!(
            token_mode([(&with, &done), (&with, &done)]),
            TokenCount::Usage
        );
        assert_eq!(
            token_mode([(&with, &done), (&without, &done)]),
            TokenCount::Chunks
        );
        let failed = Ending::InFlight;
        assert_eq!(token_mode([(&without, &failed)]), TokenCount::Usage);
    }
}
