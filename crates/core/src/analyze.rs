//! The analyzer as a library call: bytes + options → receipt.
//!
//! This is the one function the CLI, the sweep, the mutation check and the
//! verifier call, so they can never count differently.

use crate::intervals::Confidence;
use crate::receipt::build::row_verdicts;
use crate::receipt::release::{self, ReleaseOptions};
use crate::receipt::{build_receipt, Receipt, ReceiptOptions, RowVerdict};
use crate::trace::{self, Limits, Rejection, Trace};
use crate::verdict::{judge_trace, Judgement, Verdict};

/// An invalid row to list by position and id.
#[derive(Clone, Debug, PartialEq)]
pub struct InvalidRow {
    /// Position in `rows`.
    pub index: usize,
    /// The row's id, when it has a usable one.
    pub id: Option<String>,
    /// Its reasons.
    pub reasons: Vec<&'static str>,
}

/// Options of one analysis.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AnalyzeOptions {
    /// Input limits.
    pub limits: Limits,
    /// Include per-row verdicts in the receipt.
    pub rows: bool,
    /// Reject the document at its first invalid row instead of counting it.
    pub strict: bool,
}

/// A finished analysis: the validated trace, one judgement per row, the receipt.
#[derive(Debug)]
pub struct Analysis {
    /// The validated trace.
    pub trace: Trace,
    /// One judgement per row, in row order.
    pub judgements: Vec<Judgement>,
    /// The receipt.
    pub receipt: Receipt,
}

impl Analysis {
    /// One verdict per row, in trace order (the receipt's `rows` when it has
    /// them): what the per-row text table and the CSV show.
    pub fn row_verdicts(&self) -> Vec<RowVerdict> {
        match &self.receipt.rows {
            Some(rows) => rows.clone(),
            None => row_verdicts(&self.trace, &self.judgements),
        }
    }

    /// The invalid rows, by position, with their ids and reasons (for people:
    /// the text summary lists them).
    pub fn invalid_rows(&self) -> Vec<InvalidRow> {
        self.trace
            .rows
            .iter()
            .zip(&self.judgements)
            .enumerate()
            .filter_map(|(index, (row, j))| match j.verdict {
                Verdict::Invalid(set) => Some(InvalidRow {
                    index,
                    id: row.id.get().map(|s| s.to_string()),
                    reasons: set.iter().map(|r| r.as_str()).collect(),
                }),
                _ => None,
            })
            .collect()
    }
}

/// Validates, judges and aggregates one trace (intervals at the default 95 %).
pub fn analyze_bytes(bytes: &[u8], options: AnalyzeOptions) -> Result<Analysis, Rejection> {
    analyze_bytes_at(bytes, options, Confidence::default())
}

/// Like [`analyze_bytes`], with the receipt's intervals at `confidence`.
pub fn analyze_bytes_at(
    bytes: &[u8],
    options: AnalyzeOptions,
    confidence: Confidence,
) -> Result<Analysis, Rejection> {
    judge_and_count(trace::load(bytes, options.limits)?, options, confidence)
}

/// Like [`analyze_bytes`], but takes the bytes by value and frees them as soon
/// as they are hashed and parsed, so a large trace's text never shares the
/// heap with its judgements (this is what the CLI does).
pub fn analyze_owned(bytes: Vec<u8>, options: AnalyzeOptions) -> Result<Analysis, Rejection> {
    analyze_owned_at(bytes, options, Confidence::default())
}

/// Like [`analyze_owned`], with the receipt's intervals at `confidence`.
pub fn analyze_owned_at(
    bytes: Vec<u8>,
    options: AnalyzeOptions,
    confidence: Confidence,
) -> Result<Analysis, Rejection> {
    let trace = trace::load(&bytes, options.limits)?;
    drop(bytes);
    judge_and_count(trace, options, confidence)
}

/// Judges an already validated trace and builds its receipt (the comparison
/// re-judges a trace under another run's gates with this).
pub fn judge_and_count(
    trace: Trace,
    options: AnalyzeOptions,
    confidence: Confidence,
) -> Result<Analysis, Rejection> {
    let judgements = judge_trace(&trace);
    if options.strict {
        if let Some((i, set)) = judgements
            .iter()
            .enumerate()
            .find_map(|(i, j)| match j.verdict {
                Verdict::Invalid(set) => Some((i, set)),
                _ => None,
            })
        {
            let reasons: Vec<&str> = set.iter().map(|r| r.as_str()).collect();
            return Err(Rejection::at(
                format!("/rows/{i}"),
                format_args!("is invalid ({}) and --strict is set", reasons.join(", ")),
            ));
        }
    }
    let mut receipt = build_receipt(
        &trace,
        &judgements,
        ReceiptOptions {
            rows: options.rows,
            confidence,
        },
    );
    // The trace's own burst phase and resources; a command with release
    // flags attaches them again with its options. The default options
    // name no phase explicitly, so this cannot fail.
    if let Err(e) = release::attach(
        &mut receipt,
        &trace,
        &judgements,
        &ReleaseOptions::default(),
    ) {
        return Err(Rejection::at("", e));
    }
    Ok(Analysis {
        trace,
        judgements,
        receipt,
    })
}
