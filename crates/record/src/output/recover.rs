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
//! - **Dispatched requests without an ending** (their index is below the
//!   last mark's dispatch count) become `in_flight`: they were sent and
//!   nobody saw them end. Nothing else is known of them (no send lag).
//! - **Due requests past the last spooled dispatch** (scheduled before the
//!   cut) become `in_flight` with `notSent: true`: the spool cannot prove
//!   they left.
//! - Closed loop has no schedule: a dispatched request without an ending is
//!   dated by the first mark that counted it (the latest instant it can have
//!   been sent; label `arrivalFromMark: true`).
//!
//! A torn last line (the process died mid-write) is dropped; any other line
//! that cannot be read is refused with its line number.

use std::path::Path;

use crate::error::RecordError;
use goodput_core::trace::write::TraceRow;
use goodput_core::trace::{Labels, Scalar};

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
}

/// Recovers the trace of the spool at `spool` into `out` (atomically); the
/// spool itself is left as it is.
pub fn recover(spool_file: &Path, out: &Path) -> Result<Recovered, RecordError> {
    let scan = spool::scan(spool_file)?;
    let header = &scan.header;
    let frame = &header.frame;
    let cut_ms = scan.last_instant_ms;
    let dispatched = scan.last_mark.map_or(0, |(_, n)| n);
    if let Some(layout) = &header.sessions {
        return recover_sessions(spool_file, &scan, layout, out);
    }
    let (rows, planned) = rows_and_planned(spool_file, &scan, dispatched)?;
    let stop = recovered_stop(cut_ms, planned);
    let meta = |index: usize| {
        let global = frame.shard.map_or(index, |s| s.global(index));
        meta_or_blank(header.prompts.meta(global))
    };
    let unended = |index: usize| -> TraceRow {
        if frame.open_loop {
            let arrival = header.arrivals_ms.get(index).copied().unwrap_or(cut_ms);
            if index < dispatched {
                frame.unended_row(index, arrival, &meta(index))
            } else {
                frame.unsent_row(index, arrival, &meta(index))
            }
        } else {
            let arrival = scan
                .marks
                .iter()
                .find(|&&(_, n)| n > index)
                .map_or(cut_ms, |&(t, _)| t);
            let mut row = frame.unended_row(index, arrival, &meta(index));
            row.labels
                .insert("arrivalFromMark".into(), Scalar::Bool(true));
            row
        }
    };
    let not_sent = if frame.open_loop {
        (dispatched..rows).filter(|&i| !scan.ended(i)).count()
    } else {
        0
    };
    let unended_count = rows - scan.ended_count - not_sent;
    let built = spool::write_trace(spool_file, &scan, &stop, rows, unended, out, &Labels::new())?;
    Ok(Recovered {
        built,
        cut_ms,
        spooled: scan.ended_count,
        unended: unended_count,
        not_sent,
    })
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
    if !header.frame.open_loop {
        let rows = dispatched.max(scan.end_index);
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
    Ok((
        due.max(dispatched).max(scan.end_index).min(scheduled),
        scheduled,
    ))
}

/// How a recovered run stopped: cut at `cut_ms` as by an interrupt, with
/// `planned` requests planned, and marked recovered.
fn recovered_stop(cut_ms: f64, planned: usize) -> Stop {
    Stop {
        interrupted_at_ms: Some(cut_ms),
        planned,
        keep_alive_retries: 0,
        recovered: true,
        shard_clock: None,
    }
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
    let last_ended = scan
        .end_index
        .checked_sub(1)
        .map_or(0, |i| session_of(i) + 1);
    let sessions = due.max(dispatched).max(last_ended).min(starts.len());
    let rows = layout.offsets[sessions];
    let stop = recovered_stop(cut_ms, total);
    let meta = |index: usize| meta_or_blank(header.prompts.meta(index));
    let unended = |index: usize| -> TraceRow {
        let s = session_of(index);
        let first = index == layout.offsets[s];
        match (first, s < dispatched) {
            (true, true) => frame.unended_row(index, starts[s], &meta(index)),
            (true, false) => frame.unsent_row(index, starts[s], &meta(index)),
            (false, started) => {
                let mut row = frame.unended_row(index, cut_ms, &meta(index));
                let label = if started {
                    "arrivalUnknown"
                } else {
                    "notEligible"
                };
                row.labels.insert(label.into(), Scalar::Bool(true));
                row
            }
        }
    };
    let not_sent = (dispatched.min(sessions)..sessions)
        .filter(|&s| !scan.ended(layout.offsets[s]))
        .count();
    let unended_count = rows - scan.ended_count - not_sent;
    let built = spool::write_trace(spool_file, scan, &stop, rows, unended, out, &Labels::new())?;
    Ok(Recovered {
        built,
        cut_ms,
        spooled: scan.ended_count,
        unended: unended_count,
        not_sent,
    })
}
