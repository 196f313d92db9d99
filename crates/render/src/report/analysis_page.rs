//! The HTML report of an analysis: one self-contained page for a person
//! reviewing a run — the receipt summary, verdict lanes over time, latency
//! distributions with the gates drawn on them, and the default sensitivity
//! sweep.
//!
//! This module only runs the default sweep; the page itself is built by the
//! pure renderer [`crate::report`], and the `goodput report` command
//! (reading, writing, printing) is `cli::report`.

use goodput_core::analyze::Analysis;
use goodput_core::review::sensitivity::{self, SweepPlan, DEFAULT_FACTORS};

/// The page of an analysis with the default sweep (each gate of every class
/// scaled by [`DEFAULT_FACTORS`], one gate at a time): exactly what
/// `goodput report` writes, so tests can check the bytes without files.
pub fn page(analysis: &Analysis) -> Result<String, sensitivity::SweepError> {
    page_with_server(analysis, None)
}

/// [`page`], with the server panels of a `record --metrics` sidecar.
pub fn page_with_server(
    analysis: &Analysis,
    server: Option<&[goodput_core::server_metrics::MetricsLine]>,
) -> Result<String, sensitivity::SweepError> {
    let plan = SweepPlan::one_at_a_time(None, &DEFAULT_FACTORS)?;
    let entries = sensitivity::sweep(&analysis.trace, &analysis.judgements, &plan)?;
    Ok(crate::report::render_with_server(
        analysis, &entries, server,
    ))
}
