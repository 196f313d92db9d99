//! Writing a `goodput-trace/1` document: the one writer shared by the
//! recorder and the importers (and any later producer of traces), so every
//! trace this tool writes has the same shape and the same byte form.
//!
//! The contract types (`Window`, `Warmup`, `Gates`, `Equality`, `TokenCount`,
//! `Labels`) are the analyzer's own, so the writer and the reader cannot
//! disagree about a field name. Only the row and the document envelope are
//! defined here, because the analyzer reads rows with its own streaming parser.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::trace::{Equality, Gates, Labels, Phase, Resources, TokenCount, Warmup, Window};

/// The schema tag written into every trace.
pub use crate::trace::model::TRACE_SCHEMA;

/// The name of the class a writer declares when it was given none (the
/// recorder's and the importers' placeholder).
pub const DEFAULT_CLASS: &str = "default";

/// The gates of [`DEFAULT_CLASS`]: the contract's example interactive class
/// (declare your own SLOs for real evidence).
pub const DEFAULT_GATES: Gates = Gates::latency(Some(1000.0), Some(50.0), Some(10000.0));

/// A whole trace document (`docs/contract.md`), in the order a reader expects to see it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceDoc {
    /// Always `goodput-trace/1`.
    pub schema: &'static str,
    /// The measurement window and the observation horizon.
    pub window: Window,
    /// The warm-up interval, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Warmup>,
    /// How a value sitting on its gate is judged.
    pub equality: Equality,
    /// SLO classes by name.
    pub classes: BTreeMap<String, Gates>,
    /// The class of rows that name none (the first `--slo`).
    pub default_class: String,
    /// What `outputTokens` counts.
    pub tokens: TokenCount,
    /// `false` for responses that are not streamed (embeddings): no first
    /// token exists, so TTFT, TPOT, TTFA and stall gates do not apply
    /// (docs/contract.md §10.16). Left out (true) for streamed responses.
    #[serde(skip_serializing_if = "is_true")]
    pub streamed: bool,
    /// Where the measurements were taken.
    pub boundary: Labels,
    /// How the load was generated (never the API key, never the prompts).
    pub workload: Labels,
    /// Named stretches of a phased schedule (left out when there are none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// The GPUs behind the run and their price, when declared.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
    /// The quality sidecar a bank left beside the run (`record
    /// --quality-bank`; docs/contract.md §10.19), when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quality: Option<crate::trace::QualityRef>,
    /// Exactly one row per scheduled request, ids `r0`, `r1`, … in schedule
    /// order (`r<i>-s<K>` when recorded by shard K of a split schedule).
    pub rows: Vec<TraceRow>,
}

fn is_true(b: &bool) -> bool {
    *b
}

/// A row's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RowStatus {
    /// Finished normally.
    Completed,
    /// Ended without a normal finish; `reason` says why.
    Failed,
    /// Unfinished when observation stopped.
    InFlight,
}

/// One request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TraceRow {
    /// `r<index in the schedule>` (`r<i>-s<K>` from shard K).
    pub id: String,
    /// The SLO class, when the prompt source named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// The scheduled send time (open loop) or the send time (closed loop), ms since t0.
    pub arrival_ms: f64,
    /// How it ended.
    pub status: RowStatus,
    /// The first content chunk, ms since t0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_token_ms: Option<f64>,
    /// The end marker of the response (completed rows), ms since t0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_ms: Option<f64>,
    /// Output tokens (usage) or content chunks, per the document's `tokens`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// Why a failed row failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// When a failed row's failure was observed, ms since t0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_ms: Option<f64>,
    /// The gaps between consecutive token-carrying stream events, ms, in
    /// order (docs/contract.md §10.15); left out when not recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaps_ms: Option<Vec<f64>>,
    /// The first answer (content) token, ms since t0, as distinct from
    /// `firstTokenMs`, the first model token of any kind (a reasoning token
    /// counts); docs/contract.md §10.16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_answer_ms: Option<f64>,
    /// The reasoning tokens inside `outputTokens`, when the server reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
    /// `sendLagMs`, `promptTokens` or `promptChars`, `promptHash`, `notSent`.
    pub labels: Labels,
}

impl TraceRow {
    /// A row with only what every row has: id, arrival, status and labels;
    /// class and the optional timestamps, counts and reason start empty, for
    /// the recorder and each importer to fill in.
    pub fn new(id: String, arrival_ms: f64, status: RowStatus, labels: Labels) -> TraceRow {
        TraceRow {
            id,
            class: None,
            arrival_ms,
            status,
            first_token_ms: None,
            completed_ms: None,
            output_tokens: None,
            reason: None,
            ended_ms: None,
            gaps_ms: None,
            first_answer_ms: None,
            reasoning_tokens: None,
            labels,
        }
    }
}

/// Rounds a time to the microsecond: sub-millisecond precision is kept, the
/// trace stays compact, and rounding is monotone so no ordering flips.
pub fn round_us(ms: f64) -> f64 {
    (ms * 1000.0).round() / 1000.0
}

impl TraceDoc {
    /// The document's bytes: canonical JSON (the receipt's byte form), so the
    /// same run always writes the same bytes.
    pub fn to_bytes(&self) -> std::io::Result<Vec<u8>> {
        goodput_util::json::to_canonical_json(self).map_err(Into::into)
    }

    /// Writes the document to `path` atomically (temporary file, then
    /// rename: a reader never sees half a trace, and a failed write leaves no
    /// file); returns the number of bytes written.
    pub fn write_atomic(&self, path: &Path) -> std::io::Result<usize> {
        let bytes = self.to_bytes()?;
        goodput_util::io::write_atomic(path, &bytes)?;
        Ok(bytes.len())
    }

    /// [`TraceDoc::write_atomic`] for a document whose rows are too many to
    /// hold: the document's own rows, then `more` as they come, one row in
    /// memory at a time. The bytes are exactly those [`TraceDoc::to_bytes`]
    /// gives for the document holding all the rows (the recorder's spool
    /// path relies on it, and a test checks it).
    pub fn write_streamed_atomic(
        self,
        more: impl Iterator<Item = std::io::Result<TraceRow>>,
        path: &Path,
    ) -> std::io::Result<usize> {
        let mut written = 0;
        goodput_util::io::write_atomic_with(path, |out| {
            written = self.write_streamed(more, out)?;
            Ok(())
        })?;
        Ok(written)
    }

    /// Writes the document to `out` as [`TraceDoc::write_streamed_atomic`]
    /// does; returns the number of bytes.
    pub fn write_streamed(
        mut self,
        more: impl Iterator<Item = std::io::Result<TraceRow>>,
        out: &mut dyn Write,
    ) -> std::io::Result<usize> {
        let first = std::mem::take(&mut self.rows);
        let envelope = self.to_bytes()?;
        // The canonical form ends with the (last) rows member, empty here.
        const EMPTY_TAIL: &[u8] = b"[]\n}\n";
        let head = envelope.strip_suffix(EMPTY_TAIL).ok_or_else(|| {
            std::io::Error::other("the trace envelope does not end with its rows")
        })?;
        out.write_all(head)?;
        let mut n = head.len();
        let mut count = 0usize;
        for row in first.into_iter().map(Ok).chain(more) {
            let row = row?;
            let separator: &[u8] = if count == 0 { b"[\n" } else { b",\n" };
            out.write_all(separator)?;
            n += separator.len();
            let bytes = goodput_util::json::to_canonical_json(&row)?;
            let text = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
            // Rows sit two levels deep: every line of a row gains 4 spaces
            // (JSON strings hold no raw newline, so lines are safe to split).
            for (k, line) in text.split(|&b| b == b'\n').enumerate() {
                if k > 0 {
                    out.write_all(b"\n")?;
                    n += 1;
                }
                out.write_all(b"    ")?;
                out.write_all(line)?;
                n += 4 + line.len();
            }
            count += 1;
        }
        let tail: &[u8] = if count == 0 {
            EMPTY_TAIL
        } else {
            b"\n  ]\n}\n"
        };
        out.write_all(tail)?;
        Ok(n + tail.len())
    }
}
