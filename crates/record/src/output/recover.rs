//! Recovery: the spool of a recorder that died (a crash, an OOM kill,
//! `kill -9`) → a valid trace that claims only what the spool proves.
//!
//! - **The cut** is the last instant the spool proves the recorder was
//!   alive: the latest of its marks and of every timestamp on its spooled
//!   rows. The window is cut there exactly as Ctrl-C cuts it (during the
//!   window: the window and the horizon end at the cut; during the grace:
//!   the horizon does), and the trace says `recovered: true` beside the
//!   interrupt's labels.
//! - **Ended requests** keep the row the recorder would have written,
//!   unchanged.
//! - **Requests without an ending whose first token the spool holds**
//!   become `in_flight` with their `firstTokenMs` (and, in open loop, their
//!   send lag), at their arrival (the schedule's, or the one their line
//!   carries): the row the recorder writes of a request cut off in flight.
//! - **Other dispatched requests without an ending** (their index is below
//!   the last mark's dispatch count) become `in_flight`: they were sent and
//!   nobody saw them end. Nothing else is known of them (no send lag). No
//!   `firstTokenMs` there means none came by the cut, as surely as no
//!   ending means none came: every first token handed to the spool before
//!   its last complete line is in it.
//! - **Due requests past the last spooled dispatch** (scheduled before the
//!   cut) become `in_flight` with `notSent: true`: the spool cannot prove
//!   they left.
//! - Closed loop has no schedule: a dispatched request without an ending is
//!   dated by the first mark that counted it (the latest instant it can have
//!   been sent; label `arrivalFromMark: true`).
//! - A spool from before first-token lines (its header lacks
//!   `firstTokens`) cannot tell "no first token" from "not written down":
//!   every row without an ending says so (`firstTokenUnknown: true`), and
//!   the analyzer does not judge its TTFT at the horizon.
//!
//! - **A spool that ends with the run's `end` line** belongs to a run that
//!   finished (to its horizon, or at an interrupt) and whose trace was then
//!   not written (a full disk): it is recovered as the run ended, with its
//!   rows, its planned count and its interrupt if there was one (never an
//!   invented one), and says `recovered: true` and `runEnded: true`.
//!
//! A torn last line (the process died mid-write) is dropped; any other line
//! that cannot be read is refused with its line number, and so is a line
//! the recorder never writes (an instant past the planned horizon and its
//! drain, a dispatch count past the schedule, an arrival off the schedule:
//! [`spool::Scan::impossible`]): the trace would claim what no recorder saw.

use std::path::Path;

use crate::error::RecordError;
use goodput_core::trace::write::TraceRow;
use goodput_core::trace::{Labels, Scalar};
use goodput_core::verdict::FIRST_TOKEN_UNKNOWN;

use crate::output::frame::{PromptMeta, Stop};
use crate::output::spool::{self, Built, SpoolError};

/// What a recovery wrote and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Recovered {
    /// The trace and its figures.
    pub built: Built,
    /// Where the window (or horizon) was cut, ms since t0.
    pub cut_ms: f64,
    /// Rows taken from the spool as they were.
    pub spooled: usize,
    /// Dispatched requests without an ending (now `in_flight`).
    pub unended: usize,
    /// Due requests the spool cannot prove were sent (now `notSent`).
    pub not_sent: usize,
    /// Rows without an ending that keep the first token the spool holds.
    pub with_first_token: usize,
    /// Rows without an ending marked `firstTokenUnknown` (a spool from
    /// before first-token lines).
    pub first_token_unknown: usize,
    /// The spool holds the run's end: it finished, and only its trace was
    /// not written (the window is the run's, not cut at `cut_ms`).
    pub run_ended: bool,
    /// The spool's own write failed and stopped the run: the error.
    pub write_failed: Option<String>,
}

/// Recovers the trace of the spool at `spool` into `out` (atomically); the
/// spool itself is left as it is.
pub fn recover(spool_file: &Path, out: &Path) -> Result<Recovered, RecordError> {
    let scan = spool::scan(spool_file)?;
    scan.refuse_impossible(spool_file)?;
    let header = &scan.header;
    let frame = &header.frame;
    let cut_ms = scan.last_instant_ms;
    let dispatched = scan.last_mark.map_or(0, |(_, n)| n);
    if let Some(layout) = &header.sessions {
        return recover_sessions(spool_file, &scan, layout, out);
    }
    let (rows, planned) = rows_and_planned(spool_file, &scan, dispatched)?;
    let rows = ended_rows(&scan, rows);
    let stop = recovered_stop(&scan, planned);
    let meta = |index: usize| {
        let global = frame.shard.map_or(index, |s| s.global(index));
        meta_or_blank(header.prompts.meta(global))
    };
    let unended = |index: usize| -> TraceRow {
        if frame.open_loop {
            let arrival = header.arrivals_ms.get(index).copied().unwrap_or(cut_ms);
            unended_row(&scan, index, arrival, &meta(index), |meta| {
                if index < dispatched {
                    frame.unended_row(index, arrival, meta)
                } else {
                    frame.unsent_row(index, arrival, meta)
                }
            })
        } else {
            let arrival = scan
                .marks
                .iter()
                .find(|&&(_, n)| n > index)
                .map_or(cut_ms, |&(t, _)| t);
            unended_row(&scan, index, arrival, &meta(index), |meta| {
                let mut row = frame.unended_row(index, arrival, meta);
                row.labels
                    .insert("arrivalFromMark".into(), Scalar::Bool(true));
                row
            })
        }
    };
    let not_sent = if frame.open_loop {
        (dispatched..rows)
            .filter(|&i| unproven_sent(&scan, i))
            .count()
    } else {
        0
    };
    let built = spool::write_trace(
        spool_file,
        &scan,
        &stop,
        rows,
        unended,
        out,
        &spool::Ends::labels(&stopped_by(&scan)),
    )?;
    let _ = std::fs::remove_file(spool::reserve_path(spool_file));
    Ok(recovered(&scan, built, rows, not_sent))
}

/// What the recovered trace's workload adds: `spoolWriteFailed`, the error
/// that stopped the run, when its spool says its own write failed (a full
/// disk: the interrupt is the recorder's, not the operator's).
fn stopped_by(scan: &spool::Scan) -> Labels {
    let mut extra = Labels::new();
    if let Some(why) = &scan.write_failed {
        extra.insert("spoolWriteFailed".into(), Scalar::String(why.clone()));
    }
    extra
}

/// The row of request `index` without an ending: in flight with its first
/// token (at the arrival its line carries, else `arrival_ms`) when the
/// spool holds one; else `otherwise` makes it from what the header and the
/// marks say, marked `firstTokenUnknown` when the spool predates
/// first-token lines.
fn unended_row(
    scan: &spool::Scan,
    index: usize,
    arrival_ms: f64,
    meta: &PromptMeta,
    otherwise: impl FnOnce(&PromptMeta) -> TraceRow,
) -> TraceRow {
    if let Some(first) = scan.first_token(index) {
        let arrival = first.arrival_ms.unwrap_or(arrival_ms);
        return scan
            .header
            .frame
            .seen_row(index, arrival, meta, &first.observation());
    }
    let mut row = otherwise(meta);
    if !scan.header.first_tokens {
        row.labels
            .insert(FIRST_TOKEN_UNKNOWN.into(), Scalar::Bool(true));
    }
    row
}

/// Whether request `index`, due, has nothing in the spool that proves it
/// was sent (no ending, no first token).
fn unproven_sent(scan: &spool::Scan, index: usize) -> bool {
    !scan.ended(index) && scan.first_token(index).is_none()
}

/// What a recovery of `rows` rows, `not_sent` of them unproven sent, wrote.
fn recovered(scan: &spool::Scan, built: Built, rows: usize, not_sent: usize) -> Recovered {
    let without_ending = rows - scan.ended_count;
    Recovered {
        built,
        cut_ms: scan.last_instant_ms,
        spooled: scan.ended_count,
        unended: without_ending - not_sent,
        not_sent,
        with_first_token: scan.firsts_below(rows),
        first_token_unknown: if scan.header.first_tokens {
            0
        } else {
            without_ending
        },
        run_ended: scan.end.is_some(),
        write_failed: scan.write_failed.clone(),
    }
}

/// The rows of a recovered run that was not multi-turn, and the requests it
/// planned. Open loop: every request due by the cut, dispatched or ended,
/// within the schedule (which must hold every ended request). Closed loop:
/// every request dispatched or ended.
fn rows_and_planned(
    spool_file: &Path,
    scan: &spool::Scan,
    dispatched: usize,
) -> Result<(usize, usize), RecordError> {
    let header = &scan.header;
    // A request whose first token is spooled was dispatched.
    let seen = scan.end_index.max(scan.first_token_end());
    if !header.frame.open_loop {
        let rows = dispatched.max(seen);
        return Ok((rows, rows));
    }
    let scheduled = header.arrivals_ms.len();
    if scan.end_index > scheduled {
        return Err(SpoolError::Bad {
            path: spool_file.display().to_string(),
            line: 1,
            message: format!(
                "the schedule holds {scheduled} requests but request {} ended",
                scan.end_index - 1
            ),
        }
        .into());
    }
    let due = header
        .arrivals_ms
        .partition_point(|&a| a < scan.last_instant_ms);
    Ok((due.max(dispatched).max(seen).min(scheduled), scheduled))
}

/// How a recovered run stopped, marked recovered: as its `end` line says
/// when the run finished (only its trace was not written), else cut at the
/// last instant the spool proves, as by an interrupt, with `planned`
/// requests planned.
fn recovered_stop(scan: &spool::Scan, planned: usize) -> Stop {
    let (interrupted_at_ms, planned) = match scan.end {
        Some(end) => (end.interrupted_at_ms, end.planned),
        None => (Some(scan.last_instant_ms), planned),
    };
    Stop {
        interrupted_at_ms,
        planned,
        keep_alive_retries: 0,
        recovered: true,
        run_ended: scan.end.is_some(),
        shard_clock: None,
        drain: scan.end.and_then(|end| end.drain),
    }
}

/// The rows of a recovered run: those its `end` line counts when the run
/// finished (never fewer than the spool holds endings for), else `rows`.
fn ended_rows(scan: &spool::Scan, rows: usize) -> usize {
    scan.end.map_or(rows, |end| end.rows.max(scan.end_index))
}

/// A prompt's meta as spooled, or a blank one when the spool has none.
fn meta_or_blank(meta: Option<PromptMeta>) -> PromptMeta {
    meta.unwrap_or(PromptMeta {
        class: None,
        chars: 0,
        hash: String::new(),
        labels: Labels::new(),
    })
}

/// [`recover`] for a multi-turn run. `dispatched` counts sessions started.
/// A first turn without an ending is in flight from its session's start if
/// the session started, else never sent; a later turn without an ending is
/// in flight at the cut with `arrivalUnknown` (its eligibility instant was
/// never written down) if its session started, else `notEligible` at the
/// cut, as the recorder itself writes turns it never reached. Both arrive at
/// the cut, outside the cut window, so they are excluded, never judged.
fn recover_sessions(
    spool_file: &Path,
    scan: &spool::Scan,
    layout: &spool::SessionLayout,
    out: &Path,
) -> Result<Recovered, RecordError> {
    let header = &scan.header;
    let frame = &header.frame;
    let cut_ms = scan.last_instant_ms;
    let dispatched = scan.last_mark.map_or(0, |(_, n)| n);
    let starts = &layout.starts_ms;
    let total = layout.offsets.last().copied().unwrap_or(0);
    if scan.end_index > total || layout.offsets.len() != starts.len() + 1 {
        return Err(SpoolError::Bad {
            path: spool_file.display().to_string(),
            line: 1,
            message: format!(
                "the sessions hold {total} turns but turn {} ended",
                scan.end_index.saturating_sub(1)
            ),
        }
        .into());
    }
    let session_of = |index: usize| layout.offsets.partition_point(|&o| o <= index) - 1;
    let due = starts.partition_point(|&a| a < cut_ms);
    let last_seen = scan
        .end_index
        .max(scan.first_token_end().min(total))
        .checked_sub(1)
        .map_or(0, |i| session_of(i) + 1);
    let sessions = due.max(dispatched).max(last_seen).min(starts.len());
    let rows = ended_rows(scan, layout.offsets[sessions]).min(total);
    let stop = recovered_stop(scan, total);
    let meta = |index: usize| meta_or_blank(header.prompts.meta(index));
    let unended = |index: usize| -> TraceRow {
        let s = session_of(index);
        let first = index == layout.offsets[s];
        let arrival = if first { starts[s] } else { cut_ms };
        unended_row(scan, index, arrival, &meta(index), |meta| {
            match (first, s < dispatched) {
                (true, true) => frame.unended_row(index, arrival, meta),
                (true, false) => frame.unsent_row(index, arrival, meta),
                (false, started) => {
                    let mut row = frame.unended_row(index, arrival, meta);
                    let label = if started {
                        "arrivalUnknown"
                    } else {
                        "notEligible"
                    };
                    row.labels.insert(label.into(), Scalar::Bool(true));
                    row
                }
            }
        })
    };
    let not_sent = (dispatched.min(sessions)..sessions)
        .filter(|&s| unproven_sent(scan, layout.offsets[s]))
        .count();
    let built = spool::write_trace(
        spool_file,
        scan,
        &stop,
        rows,
        unended,
        out,
        &spool::Ends::labels(&stopped_by(scan)),
    )?;
    let _ = std::fs::remove_file(spool::reserve_path(spool_file));
    Ok(recovered(scan, built, rows, not_sent))
}
