//! One recording: run a validated plan against the network with every ending
//! spooled beside the output as it comes, write its trace atomically from the
//! spool, print the summary. A single `record` and every point of a rate
//! sweep go through [`record_one`].

use std::io::Write;

use crate::cli::error::Error;
use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::receipt::Receipt;
use goodput_core::trace::{Labels, Limits};
use goodput_record::output::frame::Stop;
use goodput_record::output::spool::{self, SpoolError, SpoolWriter};
use goodput_record::{Plan, Written};
use goodput_render::record::Judged;

use crate::cli::output::emit;

use crate::cli::record::progress::Point;

/// One recording of a validated plan: run it against the real network, write
/// the trace and the summary. SIGINT, SIGTERM or SIGHUP ends it with
/// [`Error::Interrupted`] after writing; a recorder that dies, a spool write
/// that fails (which stops the run) and a trace that cannot be written
/// leave the spool for `record --recover`.
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
    let sink = progress.map(|point| crate::cli::record::progress::sink(plan, point));
    let spool_file = spool::spool_path(&plan.out);
    let mut writer = SpoolWriter::create(&spool_file, &spool::header(plan))?;
    let recording = goodput_record::record(plan, sink, &mut writer)?;
    if let Err(e) = writer.finish() {
        // The failed write stopped the run at once; the spool so far is the
        // only record of it and stays (a recovery cuts it where it ends).
        return Err(match e {
            SpoolError::Io { path, source } => Error::SpoolFailed {
                spool: path,
                source,
            },
            other => other.into(),
        });
    }
    // From here on the run is over and its spool ends with its `end` line:
    // whatever fails keeps the spool and says how to recover it.
    let kept = |cause: Error| Error::SpoolKept {
        spool: spool_file.display().to_string(),
        cause: Box::new(cause),
    };
    let outcome = &recording.outcome;
    let mut extra = Labels::new();
    let sidecar = match recording.metrics {
        Some(Ok(written)) => Some(written),
        Some(Err(e)) => return Err(kept(e.into())),
        None => None,
    };
    if let Some(written) = &sidecar {
        crate::cli::record::scrape::record_sidecar(written, &mut extra);
    }
    let quality = match (&plan.quality, recording.quality) {
        (Some(bank), Some(Ok(lines))) => {
            Some(write_quality_sidecar(plan, bank, &lines).map_err(kept)?)
        }
        (_, Some(Err(e))) => return Err(kept(e.into())),
        _ => None,
    };
    let ends = spool::Ends {
        extra: &extra,
        quality: quality.as_ref(),
    };
    let built = spool::finish_run(plan, outcome, &spool_file, &Stop::of(outcome), &ends)
        .map_err(|e| kept(e.into()))?;
    // The trace is safe on disk: the spool has done its job.
    std::fs::remove_file(&spool_file).map_err(|source| Error::Write {
        path: spool_file.display().to_string(),
        source,
    })?;
    let path = plan.out.display().to_string();
    let receipt = judge(&plan.out, built.written.rows);
    let interrupted = outcome.interrupted_at_ms.is_some();
    let sidecar_path = goodput_record::metrics_sidecar_path(&plan.out)
        .display()
        .to_string();
    let judged = Judged {
        smallest_gate_ms: goodput_record::output::summary::smallest_gate_ms(plan.classes.values()),
        saturation: receipt.as_ref().map(|r| &r.results.all.saturation),
        server: sidecar
            .as_ref()
            .map(|written| (sidecar_path.as_str(), written.peaks)),
    };
    let interruption =
        outcome
            .interrupted_at_ms
            .map(|at_ms| goodput_render::record::Interruption {
                at_ms,
                drain: outcome.drain,
            });
    let text = goodput_render::record::render(
        &built.figures,
        &path,
        built.written.bytes,
        interruption.as_ref(),
        built.tokens,
        &judged,
    );
    emit(stdout, text.as_bytes())?;
    if interrupted {
        return Err(Error::Interrupted {
            path,
            rows: built.written.rows,
            drained: outcome.drain.is_some(),
            // Only a signal interrupts `record` (a broken spool returned above).
            signal: recording
                .signal
                .unwrap_or(goodput_record::signal::StopSignal::Interrupt),
        });
    }
    Ok((built.written, receipt))
}

/// Writes the quality bank's sidecar beside the trace (atomically): its
/// header, then one line per item; the trace's `quality` member for it.
fn write_quality_sidecar(
    plan: &Plan,
    bank: &goodput_record::quality::BankPlan,
    lines: &[goodput_core::quality::sidecar::ItemLine],
) -> Result<goodput_core::trace::QualityRef, Error> {
    let bytes = goodput_core::quality::sidecar::sidecar_bytes(&bank.sidecar_header(), lines);
    let path = goodput_record::quality_sidecar_path(&plan.out);
    goodput_util::io::write_atomic(&path, &bytes).map_err(|source| Error::Write {
        path: path.display().to_string(),
        source,
    })?;
    Ok(goodput_core::trace::QualityRef {
        sidecar: path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        sha256: goodput_core::trace::sha256_hex(&bytes),
    })
}

/// The receipt of the trace just written (read back from disk: the run's rows
/// were streamed there, never held), judged within limits sized to it.
fn judge(out: &std::path::Path, rows: usize) -> Option<Receipt> {
    let bytes = std::fs::read(out).ok()?;
    let options = AnalyzeOptions {
        limits: Limits {
            max_rows: (rows as u64).max(Limits::DEFAULT_MAX_ROWS),
            max_bytes: (bytes.len() as u64).max(Limits::DEFAULT_MAX_BYTES),
        },
        ..AnalyzeOptions::default()
    };
    analyze_bytes(&bytes, options).ok().map(|a| a.receipt)
}
