//! One recording: run a validated plan against the network, write its trace
//! atomically through the trace writer, print the summary. A single `record`
//! and every point of a rate sweep go through [`record_one`].

use std::io::Write;

use crate::analyze::{analyze_bytes, AnalyzeOptions};
use crate::error::Error;
use crate::receipt::Receipt;
use crate::record::{build_trace, summary, Plan, Recording, Written};
use crate::render::record::Judged;
use crate::trace::Limits;

use crate::cli::output::emit;

use super::progress::Point;

/// One recording of a validated plan: run it against the real network, write
/// the trace and the summary. A single `record` and every point of a sweep go
/// through here. Ctrl-C ends it with [`Error::Interrupted`] after writing.
/// `progress` names the point for the display on standard error (`None`:
/// no display, as when it is not a terminal).
pub fn record_one(
    plan: &Plan,
    progress: Option<Point>,
    stdout: &mut dyn Write,
) -> Result<Written, Error> {
    record_judged(plan, progress, stdout).map(|(written, _)| written)
}

/// [`record_one`], also returning the written trace's receipt (`None` only
/// if the recorder's own trace did not analyze, which would be a bug; the
/// summary then says nothing about saturation).
pub fn record_judged(
    plan: &Plan,
    progress: Option<Point>,
    stdout: &mut dyn Write,
) -> Result<(Written, Option<Receipt>), Error> {
    let sink = progress.map(|point| super::progress::sink(plan, point));
    let recording = crate::record::record(plan, sink)?;
    write_trace(plan, &recording, stdout)
}

/// The receipt of the trace just written, judged within limits sized to it.
fn judge(bytes: &[u8], rows: usize) -> Option<Receipt> {
    let options = AnalyzeOptions {
        limits: Limits {
            max_rows: (rows as u64).max(Limits::DEFAULT_MAX_ROWS),
            max_bytes: (bytes.len() as u64).max(Limits::DEFAULT_MAX_BYTES),
        },
        ..AnalyzeOptions::default()
    };
    analyze_bytes(bytes, options).ok().map(|a| a.receipt)
}

/// Writes the trace atomically and the summary to `stdout`; an interrupted
/// run returns [`Error::Interrupted`] after writing (exit 130).
fn write_trace(
    plan: &Plan,
    recording: &Recording,
    stdout: &mut dyn Write,
) -> Result<(Written, Option<Receipt>), Error> {
    let outcome = &recording.outcome;
    let mut doc = build_trace(plan, outcome);
    if let Some(lines) = &recording.metrics {
        super::metrics::write_sidecar(&plan.out, lines, &mut doc.workload)?;
    }
    let path = plan.out.display().to_string();
    let write_error = |source| Error::Write {
        path: path.clone(),
        source,
    };
    let trace_bytes = doc.to_bytes().map_err(write_error)?;
    crate::io::write_atomic(&plan.out, &trace_bytes).map_err(write_error)?;
    let bytes = trace_bytes.len();
    let receipt = judge(&trace_bytes, doc.rows.len());
    drop(trace_bytes);
    let figures = summary::figures(&doc.rows, plan.open_loop());
    let interrupted = outcome.interrupted_at_ms.is_some();
    let sidecar = crate::record::metrics_sidecar_path(&plan.out)
        .display()
        .to_string();
    let judged = Judged {
        smallest_gate_ms: summary::smallest_gate_ms(plan.classes.values()),
        saturation: receipt.as_ref().map(|r| &r.results.all.saturation),
        server: recording
            .metrics
            .as_ref()
            .map(|lines| (sidecar.as_str(), crate::record::metrics::peaks(lines))),
    };
    let text =
        crate::render::record::render(&figures, &path, bytes, interrupted, doc.tokens, &judged);
    emit(stdout, text.as_bytes())?;
    if interrupted {
        return Err(Error::Interrupted {
            path,
            rows: doc.rows.len(),
        });
    }
    Ok((
        Written {
            rows: doc.rows.len(),
            bytes,
        },
        receipt,
    ))
}
