//! The receipt as one self-contained HTML page, for a person reviewing a run.
//!
//! Pure: an [`Analysis`] and the sweep entries in, a `String` of HTML out. The
//! page fetches nothing (inline CSS and SVG, no script, no font, no URL; a
//! Content-Security-Policy of `default-src 'none'` says so to the browser too),
//! and the same trace gives the same bytes (no clock, host or path inside).
//!
//! A trace is untrusted input: every string that comes from it — row ids,
//! class names, failure reasons, labels — goes through [`escape`] before it
//! reaches the page, in text and in attributes alike.
//!
//! **Bounded output.** A trace may hold 100,000 rows or more, so:
//! - the verdict lanes draw one mark per row up to [`LANE_MARK_LIMIT`] rows;
//!   above it, rows are counted into columns [`LANE_COLUMN_PX`] pixels wide per
//!   lane and class, and each non-empty column is one mark carrying its count
//!   (at most 6 lanes × sub-lanes × 530 columns, whatever the row count);
//! - the stall bars on the lanes are at most [`STALL_MARK_LIMIT`] (the
//!   largest stalls);
//! - a histogram has at most [`HISTOGRAM_BINS`] bars;
//! - the invalid-row list shows the first [`MAX_LISTED_INVALID_ROWS`] rows.
//!
//! Every figure in the tables is read from the receipt or the sweep entries;
//! the charts only place the judged rows (they recount nothing).
//!
//! One file per section of the page, in page order: [`page`] (the document
//! head, style sheet and footer), [`header`] (the contract), [`summary`]
//! (counts, rates, latency tables), [`lanes`] (verdicts over arrival time,
//! with [`lane_stalls`]: where rows that missed their stall gate stalled),
//! [`histograms`] (latency distributions with the gates, and
//! [`gap_histogram`]: the gaps between stream events), [`reasons`] (why
//! rows did not pass), `server` (the server's own metrics, when a sidecar
//! exists, under the lanes on their time axis), [`release`] (diagnosis, recovery after a burst,
//! per-GPU and cost figures, when they apply), [`sweep`] (the sensitivity table and fragility) and
//! [`invalid`] (the invalid rows); [`html`] and [`svg`] hold the small
//! helpers the sections share.

pub mod analysis_page;
mod chart;
mod gap_histogram;
mod header;
pub mod headline;
mod histograms;
mod html;
mod intervals;
mod invalid;
mod lane_stalls;
mod lanes;
mod page;
mod reasons;
mod release;
mod sensitivity;
mod server;
mod summary;
mod svg;
mod time_split;

use goodput_core::analyze::Analysis;
use goodput_core::review::sensitivity::SweepEntry;

pub use chart::HISTOGRAM_BINS;
pub use html::escape;
pub use invalid::MAX_LISTED_INVALID_ROWS;
pub use lane_stalls::STALL_MARK_LIMIT;
pub use lanes::{LANES, LANE_COLUMN_PX, LANE_MARK_LIMIT, MAX_CLASS_SUBLANES};
pub use server::{peak_clause, peak_text};

use goodput_core::server_metrics::MetricsLine;

/// Renders the report: header, summary, verdict lanes, latency
/// distributions, reasons, the sweep table (declared row first) and the
/// invalid rows. `sweep` is what [`goodput_core::review::sensitivity::sweep`] returned (may be empty).
pub fn render(analysis: &Analysis, sweep: &[SweepEntry]) -> String {
    render_with_server(analysis, sweep, None)
}

/// [`render`], with the server panels (queue, running, KV use) drawn under
/// the verdict lanes on their time axis when a `record --metrics` sidecar
/// is given.
pub fn render_with_server(
    analysis: &Analysis,
    sweep: &[SweepEntry],
    server: Option<&[MetricsLine]>,
) -> String {
    let r = &analysis.receipt;
    let mut o = String::with_capacity(64 * 1024);
    page::head(&mut o, r);
    header::section(&mut o, r);
    summary::section(&mut o, r);
    o.push_str(&intervals::report_section(r));
    lanes::section(&mut o, analysis);
    server::section(&mut o, analysis, server);
    histograms::section(&mut o, analysis);
    time_split::section(&mut o, r);
    reasons::section(&mut o, r);
    release::section(&mut o, r);
    sensitivity::section(&mut o, sweep);
    invalid::section(&mut o, analysis);
    page::footer(&mut o, r);
    o
}
