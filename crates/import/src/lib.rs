//! Importing another load generator's export: a `goodput-trace/1` trace,
//! and what that tool itself reported set beside what the goodput contract
//! gives for the same requests (the `goodput import` command is
//! `cli::import`).
//!
//! Each importer (`vllm`, `aiperf`, `guidellm`) is a pure function of the
//! source bytes and [`ImportOptions`] returning an [`Imported`]: the trace
//! document (built with the trace writer's [`TraceDoc`], like the recorder's
//! traces, so writer and analyzer cannot disagree) and the figures the tool
//! reported ([`Reported`]). Source formats are parsed with serde into typed
//! structs that ignore unknown fields (these formats grow); every error names
//! its place — a JSON pointer, or a line number for JSONL — so a bad input is
//! one clear line and exit 2.
//!
//! [`pipeline`] then judges the trace with the ordinary analyzer
//! ([`goodput_core::analyze`]), and [`compare()`] pairs the tool's figures with the
//! receipt's and explains every difference the contract makes on purpose
//! (failures in the denominator, one-token TPOT, percentile method, window).
//! Rules per tool: `docs/import.md`.

pub mod aiperf;
pub mod error;
pub mod fidelity;
pub mod gaps;
pub mod guidellm;
pub mod json;
pub mod model;
pub mod side_by_side;
pub mod vllm;

use schemars::JsonSchema;
use serde::Serialize;

use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::receipt::Receipt;
use goodput_core::trace::Rejection;

pub use self::error::ImportError;
pub use self::model::{failure_reason, ImportOptions, Imported, Itl, Quantiles, Reported, Source};
pub use self::model::{fmt_num, limits_for, same_figure, trace_bytes};
pub use self::side_by_side::{compare, compare_with, Comparison, FigurePair};

/// The schema of `goodput import --json`: its `goodput schema` name, its
/// committed file under `schema/`, and its text.
pub fn schema() -> (&'static str, &'static str, String) {
    (
        "import",
        "import.schema.json",
        goodput_core::schema::titled::<ImportReport<'static>>("goodput import --json"),
    )
}

/// `goodput import --json`: where the trace went, the tool's figures and
/// rules, and the comparison (schema: `goodput schema import`).
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport<'a> {
    /// No `--slo` was given: the trace declares the placeholder class, so its
    /// goodput is not the tool's goodput under the tool's SLOs.
    pub placeholder_gates: bool,
    /// The trace path.
    pub trace: &'a str,
    /// Rows written.
    pub rows: usize,
    /// Bytes written.
    pub bytes: usize,
    /// The exact analyze command.
    pub analyze: &'a str,
    /// The tool's figures and rules.
    pub reported: &'a Reported,
    /// Side by side, with the differences explained.
    pub comparison: &'a Comparison,
}

/// Dispatches on the source tool.
pub fn import(
    source: Source,
    bytes: &[u8],
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    match source {
        Source::Vllm => vllm::import(bytes, options),
        Source::Aiperf => aiperf::import(bytes, options),
        Source::Guidellm => guidellm::import(bytes, options),
    }
}

/// Everything `goodput import` produces, before any output is written.
#[derive(Debug)]
pub struct Outcome {
    /// The imported trace and the tool's figures.
    pub imported: Imported,
    /// The trace as written (canonical JSON).
    pub trace_bytes: Vec<u8>,
    /// The receipt of that trace, with per-row verdicts (limits raised to its size when needed).
    pub receipt: Receipt,
    /// The comparison.
    pub comparison: Comparison,
}

/// Why [`pipeline`] gave no outcome. Each message is the one line
/// `goodput import` prints (exit status 2).
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// A file given is not what `--from` says (the message names the place).
    #[error("rejected: cannot import {what} as {tool} output: {source}")]
    Import {
        /// The `--from` tool.
        tool: &'static str,
        /// Which input (`the source file`, `the --summary file`).
        what: String,
        /// What is wrong, and where.
        source: ImportError,
    },
    /// `--slo` declares a `ttfa` gate, but the export names no first answer
    /// token: every completed row would miss it as `no_answer`.
    #[error(
        "rejected: --slo declares a ttfa gate, but this {tool} export names no first answer \
         token (docs/import.md says which versions carry one): every completed row would miss \
         it as no_answer; drop ttfa= from --slo"
    )]
    NoFirstAnswer {
        /// The `--from` tool.
        tool: &'static str,
    },
    /// The imported trace could not be serialised.
    #[error("cannot write trace: {0}")]
    Serialize(std::io::Error),
    /// The analyzer rejected the imported trace (a bug of the importer, or
    /// a source past the contract's bounds).
    #[error("rejected: {0}")]
    Rejected(#[from] Rejection),
}

/// [`pipeline`] for the command: takes the source by value and frees it once
/// imported, and builds no per-row echo in the receipt (`receipt.rows` is
/// `None`; the comparison reads the verdicts from the judgements, a pointer
/// per row instead of a copy of each row with its labels). The source text
/// and the parsed source are then gone while the trace is judged, and so are
/// the imported rows' labels once written (`imported.trace.rows` keep them
/// only when the comparison needs the tool's client token counts).
pub fn pipeline_owned(
    source: Source,
    bytes: Vec<u8>,
    options: &ImportOptions,
    aiperf_summary: Option<&[u8]>,
) -> Result<Outcome, PipelineError> {
    let mut imported = import_and_summary(source, &bytes, options, aiperf_summary)?;
    drop(bytes);
    let trace_bytes = trace_bytes(&mut imported.trace).map_err(PipelineError::Serialize)?;
    for row in &mut imported.trace.rows {
        // Written: the comparison reads the gaps from the receipt, and the
        // analyzer holds its own copy.
        row.gaps_ms = None;
    }
    if imported.reported.client_tokens_from.is_none() {
        // Written: without the tool's client counts the comparison reads no
        // label, and a row's labels (a map node of ~0.5 KB each) would
        // otherwise stay beside the analyzer's own copy of the trace.
        for row in &mut imported.trace.rows {
            row.labels = goodput_core::trace::Labels::new();
        }
    }
    let rows = imported.trace.rows.len();
    let limits = limits_for(rows, trace_bytes.len());
    let options = AnalyzeOptions {
        limits,
        rows: false,
        strict: false,
    };
    let analysis = analyze_bytes(&trace_bytes, options)?;
    let verdicts: Vec<&str> = analysis
        .judgements
        .iter()
        .map(|j| j.verdict.as_str())
        .collect();
    let comparison = compare_with(&imported, &analysis.receipt, &verdicts);
    Ok(Outcome {
        imported,
        trace_bytes,
        receipt: analysis.receipt,
        comparison,
    })
}

/// The import step of both pipelines, with the aiperf summary applied.
fn import_and_summary(
    source: Source,
    bytes: &[u8],
    options: &ImportOptions,
    aiperf_summary: Option<&[u8]>,
) -> Result<Imported, PipelineError> {
    let rejected = |e: ImportError| PipelineError::Import {
        tool: source.name(),
        what: "the source file".into(),
        source: e,
    };
    let mut imported = import(source, bytes, options).map_err(rejected)?;
    let ttfa_gate = options.classes.values().any(|g| g.ttfa_ms.is_some());
    if ttfa_gate && !imported.first_answers {
        return Err(PipelineError::NoFirstAnswer {
            tool: source.name(),
        });
    }
    if let Some(summary) = aiperf_summary {
        aiperf::apply_summary(&mut imported, summary).map_err(|e| PipelineError::Import {
            tool: source.name(),
            what: "the --summary file".into(),
            source: e,
        })?;
    }
    Ok(imported)
}

/// Imports, serializes and judges: pure apart from nothing (no I/O), so the
/// tests run the whole pipeline on bytes.
pub fn pipeline(
    source: Source,
    bytes: &[u8],
    options: &ImportOptions,
    aiperf_summary: Option<&[u8]>,
) -> Result<Outcome, PipelineError> {
    let mut imported = import_and_summary(source, bytes, options, aiperf_summary)?;
    let trace_bytes = trace_bytes(&mut imported.trace).map_err(PipelineError::Serialize)?;
    let limits = limits_for(imported.trace.rows.len(), trace_bytes.len());
    let analysis = analyze_bytes(
        &trace_bytes,
        AnalyzeOptions {
            limits,
            rows: true,
            strict: false,
        },
    )?;
    let comparison = compare(&imported, &analysis.receipt);
    Ok(Outcome {
        imported,
        trace_bytes,
        receipt: analysis.receipt,
        comparison,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_texts_map_to_short_stable_reasons() {
        for (text, reason) in [
            ("HTTP 500: Internal Server Error", "http_500"),
            ("Internal Server Error", "http_500"),
            ("Too Many Requests", "http_429"),
            ("status_code=503", "http_503"),
            ("504 Gateway Timeout", "http_504"),
            ("Request timed out after 30 s", "timeout"),
            ("asyncio.TimeoutError", "timeout"),
            ("Request was cancelled", "cancelled"),
            ("Cannot connect: Connection refused", "connect_refused"),
            ("ServerDisconnectedError", "disconnect"),
            (
                "Traceback (most recent call last): KeyError 'choices'",
                "error",
            ),
            ("took 500 ms", "error"),
            ("", "error"),
        ] {
            assert_eq!(failure_reason(text), reason, "{text}");
        }
    }
}
