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

use crate::error::Error;
use crate::trace::write::TraceRow;
use crate::trace::{Labels, Scalar};

use super::frame::{PromptMeta, Stop};
use super::spool::{self, Built, SpoolError};

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
pub fn recover(spool_file: &Path, out: &Path) -> Result<Recovered, Error> {
    let scan = spool::scan(spool_file)?;
    let header = &scan.header;
    let frame = &header.frame;
    let cut_ms = scan.last_instant_ms;
    let dispatched = scan.last_mark.map_or(0, |(_, n)| n);
    let (rows, planned) = if frame.open_loop {
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
        let due = header.arrivals_ms.partition_point(|&a| a < cut_ms);
        (
            due.max(dispatched).max(scan.end_index).min(scheduled),
            scheduled,
        )
    } else {
        let rows = dispatched.max(scan.end_index);
        (rows, rows)
    };
    let stop = Stop {
        interrupted_at_ms: Some(cut_ms),
        planned,
        keep_alive_retries: 0,
        recovered: true,
        shard_clock: None,
    };
    let meta = |index: usize| {
        let global = frame.shard.map_or(index, |s| s.global(index));
        header.prompts.meta(global).unwrap_or(PromptMeta {
            class: None,
            chars: 0,
            hash: String::new(),
        })
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
