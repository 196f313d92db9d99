//! Whether the client's prompt token counts can be trusted (docs/contract.md
//! §7, `tokenizerMismatch`): a trace that declares `workload.promptLengths:
//! "tokens"` says its prompts were cut to a token count, and that count is
//! the client tokenizer's (`promptTokens`). When the server's own count
//! (`serverPromptTokens`, from its usage block) disagrees on most rows, the
//! tokenizer is not the model's and every prompt length the trace claims is
//! off.
//!
//! **Rule.** A row with both counts is *off* when |server − client| >
//! max(2 tokens, 2 % of the client count): a chat template or a BOS token
//! adds a few tokens, a different tokenizer many. The trace is flagged when
//! more than half of the rows with both counts are off.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::stats::{nearest_rank, sort_ascending};
use crate::trace::{Scalar, Slot, Trace};

/// The workload label whose value `tokens` says prompts were cut to a token count.
pub const PROMPT_LENGTHS: &str = "promptLengths";
/// The row label of the client's prompt count.
pub const CLIENT_LABEL: &str = "promptTokens";
/// The row label of the server's prompt count.
pub const SERVER_LABEL: &str = "serverPromptTokens";

/// Tokens of slack every row gets (a template or BOS token).
pub const SLACK_TOKENS: f64 = 2.0;
/// Slack as a share of the client count.
pub const SLACK_SHARE: f64 = 0.02;

/// The rule, as a receipt states it.
pub const RULE: &str = "a row is off when |serverPromptTokens - promptTokens| > max(2, 0.02 x \
    promptTokens); flagged when more than half of the rows with both are off and \
    workload.promptLengths is \"tokens\"";

/// Whether one row's counts disagree beyond the slack.
pub fn row_off(client: f64, server: f64) -> bool {
    (server - client).abs() > SLACK_TOKENS.max(SLACK_SHARE * client.abs())
}

/// Whether `off` of `compared` rows make a mismatch: more than half.
pub fn flagged(off: u64, compared: u64) -> bool {
    compared > 0 && 2 * off > compared
}

/// A tokenizer whose prompt counts disagree with the server's on most rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenizerMismatch {
    /// Rows carrying both `promptTokens` and `serverPromptTokens`.
    pub rows_compared: u64,
    /// Of those, rows off by more than the slack.
    pub rows_off: u64,
    /// rowsOff / rowsCompared.
    pub share_off: f64,
    /// Nearest-rank median of serverPromptTokens − promptTokens over the compared rows.
    pub median_server_minus_client: f64,
    /// The rule that flagged it.
    pub rule: String,
}

/// The mismatch of `trace`, or `None` when it does not declare
/// `promptLengths: "tokens"`, has no row with both counts, or most rows agree.
pub fn mismatch(trace: &Trace) -> Option<TokenizerMismatch> {
    let declared = matches!(
        trace.contract.workload.get(PROMPT_LENGTHS),
        Some(Scalar::String(s)) if s == "tokens"
    );
    if !declared {
        return None;
    }
    let mut differences = Vec::new();
    let mut off = 0_u64;
    for row in &trace.rows {
        let Slot::Set(labels) = &row.labels else {
            continue;
        };
        let number = |key: &str| {
            labels.iter().find_map(|(k, v)| match v {
                Scalar::Number(x) if &**k == key => Some(*x),
                _ => None,
            })
        };
        if let (Some(client), Some(server)) = (number(CLIENT_LABEL), number(SERVER_LABEL)) {
            differences.push(server - client);
            off += u64::from(row_off(client, server));
        }
    }
    let compared = differences.len() as u64;
    if !flagged(off, compared) {
        return None;
    }
    sort_ascending(&mut differences);
    Some(TokenizerMismatch {
        rows_compared: compared,
        rows_off: off,
        share_off: off as f64 / compared as f64,
        median_server_minus_client: nearest_rank(&differences, 50).unwrap_or(0.0),
        rule: RULE.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slack_is_two_tokens_or_two_percent() {
        // 200-token prompt: slack max(2, 4) = 4; 204 is within, 205 is off.
        assert!(!row_off(200.0, 204.0));
        assert!(row_off(200.0, 205.0));
        assert!(row_off(200.0, 195.0));
        // 50-token prompt: slack max(2, 1) = 2.
        assert!(!row_off(50.0, 52.0));
        assert!(row_off(50.0, 53.0));
    }

    #[test]
    fn more_than_half_is_flagged() {
        assert!(flagged(7, 10));
        assert!(flagged(6, 10));
        assert!(!flagged(5, 10));
        assert!(!flagged(3, 10));
        assert!(!flagged(0, 0));
    }
}
