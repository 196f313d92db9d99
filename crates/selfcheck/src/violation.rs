//! What a broken invariant is: one variant per invariant the checks hold
//! every input to, each displaying the sentence the fuzz targets panic with
//! and the regression tests fail on.

use std::fmt;

use goodput_core::review::sensitivity::SweepError;
use goodput_core::review::verify::VerifyError;
use goodput_core::trace::Rejection;
use goodput_import::PipelineError;
use goodput_record::exchange::sse::EventTooLarge;

/// An invariant an input broke.
#[derive(Debug, thiserror::Error)]
pub enum Violation {
    /// A block's counts or reasons do not add up.
    #[error("{block}: {rule}: {state}")]
    Counts {
        /// `all` or the class's name.
        block: String,
        /// Which sum failed.
        rule: CountRule,
        /// The block's counts (and reasons), as debugged.
        state: String,
    },
    /// A rejected trace's message is empty or spans lines.
    #[error("a rejection must be one non-empty line: {0:?}")]
    RejectionNotOneLine(String),
    /// The receipt's per-row verdicts are not one per row.
    #[error("{verdicts} row verdicts for {rows} rows")]
    RowVerdicts {
        /// Verdicts in the receipt.
        verdicts: usize,
        /// Rows in the trace.
        rows: usize,
    },
    /// The class blocks count more rows than the `all` block.
    #[error("class blocks hold more rows than `all`")]
    ClassesExceedAll,
    /// The receipt cannot be written as canonical JSON.
    #[error("receipt does not render: {0}")]
    Unrenderable(serde_json::Error),
    /// The same bytes, analysed again, were rejected.
    #[error("second analysis rejected what the first accepted: {0}")]
    SecondAnalysisRejected(Rejection),
    /// The second analysis's receipt cannot be written as canonical JSON.
    #[error("{0}")]
    SecondUnrenderable(serde_json::Error),
    /// Two analyses of the same bytes gave different receipts.
    #[error("two analyses of the same bytes differ")]
    AnalysesDiffer,
    /// The default sweep could not be planned or run.
    #[error("{0}")]
    Sweep(SweepError),
    /// The sweep's line for the declared gates is not the receipt's.
    #[error("the sweep's declared line differs from the receipt")]
    SweepDisagrees,
    /// The analysis without per-row verdicts rejected the trace.
    #[error("an analysis without rows rejected what one with rows accepted: {0}")]
    RowlessAnalysisRejected(Rejection),
    /// The receipt, written and read back, is not a receipt `verify` reads.
    #[error("{what}: own receipt unreadable: {error}")]
    OwnReceiptUnreadable {
        /// Which receipt (how it was made).
        what: String,
        /// Why it cannot be read.
        error: VerifyError,
    },
    /// `verify` of the trace's own receipt disagrees.
    #[error(
        "{what}: verify of the trace's own receipt says NOT VERIFIED ({differences} differences{}; {}){}",
        recompute_note(.recompute_failed),
        .first.join("; "),
        sha256_note(.sha256_matches)
    )]
    NotVerified {
        /// Which receipt (how it was made).
        what: String,
        /// How many figures differ.
        differences: usize,
        /// Why the recomputation failed, when it did.
        recompute_failed: Option<String>,
        /// The first few differences, as `path: claimed vs recomputed`.
        first: Vec<String>,
        /// Whether the trace's sha256 matches the receipt's.
        sha256_matches: bool,
    },
    /// An importer's refusal is empty or spans lines.
    #[error("an import error must be one line: {0:?}")]
    ImportErrorNotOneLine(String),
    /// An importer wrote a trace that a later step refuses.
    #[error("the {importer} importer wrote a trace that fails later: {error}")]
    ImportFailsLater {
        /// The tool's name.
        importer: &'static str,
        /// The later step's refusal.
        error: PipelineError,
    },
    /// The SSE parser's events depend on how the bytes were split.
    #[error(
        "events depend on the split (bound {limit} bytes): whole {whole} events ({whole_end:?}), split {split} events ({split_end:?})"
    )]
    SseSplit {
        /// The parser's bound, bytes.
        limit: usize,
        /// Events of the stream fed whole.
        whole: usize,
        /// How the whole stream ended.
        whole_end: Result<(), EventTooLarge>,
        /// Events of the stream fed in pieces.
        split: usize,
        /// How the split stream ended.
        split_end: Result<(), EventTooLarge>,
    },
}

fn recompute_note(failed: &Option<String>) -> String {
    failed
        .as_deref()
        .map_or(String::new(), |r| format!(", {r}"))
}

fn sha256_note(matches: &bool) -> &'static str {
    if *matches {
        ""
    } else {
        " (sha256 differs)"
    }
}

/// Which of a block's sums failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountRule {
    /// The cohort is pass + miss + failed + censored.
    CohortSplit,
    /// Arrivals are cohort + excluded + invalid.
    ArrivalSplit,
    /// The failure, censored and exclusion reasons sum to their counts.
    ReasonCounts,
    /// No reason counts more rows than its verdict has.
    MoreReasonsThanRows,
    /// Every missed row missed at least one metric.
    MissWithoutMetric,
    /// Invalid reasons exist exactly when invalid rows do, none above their count.
    InvalidReasons,
}

impl fmt::Display for CountRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CountRule::CohortSplit => "pass+miss+failed+censored != cohort",
            CountRule::ArrivalSplit => "cohort+excluded+invalid != arrivals",
            CountRule::ReasonCounts => "reason counts do not match the counts",
            CountRule::MoreReasonsThanRows => "more reasons than rows",
            CountRule::MissWithoutMetric => "a missed row without a missed metric",
            CountRule::InvalidReasons => "invalid reasons do not match",
        })
    }
}
