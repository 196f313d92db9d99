//! Token accounting over the written rows: the client's prompt count beside
//! the server's, and outputs that stopped short of what was asked.
//!
//! A row with both `promptTokens` (client, from `--tokenizer`) and
//! `serverPromptTokens` (the usage block) shows how far the two disagree:
//! a chat template, a BOS token or a different tokenizer all show up here.
//! A completed row whose `outputTokens` is below its `requestedOutputTokens`
//! stopped early (end of sequence without `ignore_eos`, or a server cap).

use goodput_core::trace::write::{RowStatus, TraceRow};
use goodput_core::trace::Scalar;

/// Prompt and output token figures of a run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TokenAccounting {
    /// Rows carrying both a client and a server prompt count.
    pub compared: usize,
    /// Of those, rows where the two are equal.
    pub equal: usize,
    /// Of those, rows off by more than max(2 tokens, 2 %)
    /// ([`goodput_core::receipt::tokenizer::row_off`]): more than half means
    /// the client's tokenizer is not the server's.
    pub off: usize,
    /// Smallest, mean and largest `server − client`, when any row compared.
    pub server_minus_client: Option<(f64, f64, f64)>,
    /// Completed rows that asked for a number of output tokens.
    pub requested: usize,
    /// Of those, rows that got fewer.
    pub short: usize,
}

fn number(row: &TraceRow, key: &str) -> Option<f64> {
    match row.labels.get(key) {
        Some(Scalar::Number(x)) => Some(*x),
        _ => None,
    }
}

/// Computes the figures from the rows written.
pub fn figures(rows: &[TraceRow]) -> TokenAccounting {
    let mut tally = TokenTally::default();
    rows.iter().for_each(|row| tally.add(row));
    tally.figures()
}

/// [`TokenAccounting`] accumulated one row at a time (the recorder streams
/// its rows from the spool; nothing per row is kept).
#[derive(Debug, Clone, Default)]
pub struct TokenTally {
    f: TokenAccounting,
    sum: f64,
    min: f64,
    max: f64,
}

impl TokenTally {
    /// Counts one row.
    pub fn add(&mut self, row: &TraceRow) {
        if let (Some(client), Some(server)) = (
            number(row, "promptTokens"),
            number(row, "serverPromptTokens"),
        ) {
            let d = server - client;
            if self.f.compared == 0 {
                (self.min, self.max) = (d, d);
            } else {
                self.min = self.min.min(d);
                self.max = self.max.max(d);
            }
            self.f.compared += 1;
            self.sum += d;
            if d == 0.0 {
                self.f.equal += 1;
            }
            if goodput_core::receipt::tokenizer::row_off(client, server) {
                self.f.off += 1;
            }
        }
        if let (RowStatus::Completed, Some(asked), Some(got)) = (
            row.status,
            number(row, "requestedOutputTokens"),
            row.output_tokens,
        ) {
            self.f.requested += 1;
            if (got as f64) < asked {
                self.f.short += 1;
            }
        }
    }

    /// The figures of the rows counted.
    pub fn figures(&self) -> TokenAccounting {
        let mut f = self.f.clone();
        if f.compared > 0 {
            f.server_minus_client = Some((self.min, self.sum / f.compared as f64, self.max));
        }
        f
    }
}

/// Marks a completed row whose output stopped below its request
/// (`outputShort: true`), so it is visible per row.
pub fn mark_short(row: &mut TraceRow) {
    if let (RowStatus::Completed, Some(asked), Some(got)) = (
        row.status,
        number(row, "requestedOutputTokens"),
        row.output_tokens,
    ) {
        if (got as f64) < asked {
            row.labels.insert("outputShort".into(), Scalar::Bool(true));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::trace::Labels;

    fn row(status: RowStatus, out: Option<u64>, labels: &[(&str, f64)]) -> TraceRow {
        let mut l = Labels::new();
        for (k, v) in labels {
            l.insert((*k).into(), Scalar::Number(*v));
        }
        TraceRow {
            output_tokens: out,
            ..TraceRow::new("r".into(), 0.0, status, l)
        }
    }

    #[test]
    fn prompt_counts_are_compared_and_short_outputs_counted() {
        let mut rows = vec![
            row(
                RowStatus::Completed,
                Some(16),
                &[
                    ("promptTokens", 100.0),
                    ("serverPromptTokens", 100.0),
                    ("requestedOutputTokens", 16.0),
                ],
            ),
            row(
                RowStatus::Completed,
                Some(9),
                &[
                    ("promptTokens", 50.0),
                    ("serverPromptTokens", 57.0),
                    ("requestedOutputTokens", 16.0),
                ],
            ),
            row(
                RowStatus::Failed,
                None,
                &[("promptTokens", 10.0), ("requestedOutputTokens", 16.0)],
            ),
            row(RowStatus::Completed, Some(3), &[]),
        ];
        let f = figures(&rows);
        assert_eq!(f.compared, 2);
        assert_eq!(f.equal, 1);
        // Differences 0 and 7: min 0, mean 3.5, max 7.
        assert_eq!(f.server_minus_client, Some((0.0, 3.5, 7.0)));
        assert_eq!((f.requested, f.short), (2, 1));
        for r in &mut rows {
            mark_short(r);
        }
        let marked: Vec<bool> = rows
            .iter()
            .map(|r| r.labels.contains_key("outputShort"))
            .collect();
        assert_eq!(marked, vec![false, true, false, false]);
    }
}
