//! One recording: run a validated plan against the network, write its trace
//! atomically through the trace writer, print the summary. A single `record`
//! and every point of a rate sweep go through [`record_one`].

use std::io::Write;
use std::sync::Arc;

use crate::error::Error;
use crate::record::frame::Stop;
use crate::record::runner::RunOutcome;
use crate::record::spool::{self, Built, SpoolError, SpoolWriter};
use crate::record::{Plan, Progress, ProgressSink, Written};

use crate::cli::output::emit;

/// One recording of a validated plan: run it against the real network with
/// every ending spooled beside the output as it comes, write the trace from
/// the spool, remove the spool, print the summary. A single `record` and
/// every point of a sweep go through here. Ctrl-C ends it with
/// [`Error::Interrupted`] after writing; a recorder that dies leaves the
/// spool for `record --recover`.
pub fn record_one(plan: &Plan, progress: bool, stdout: &mut dyn Write) -> Result<Written, Error> {
    let sink: Option<ProgressSink> = progress.then(|| Arc::new(progress_line) as ProgressSink);
    let spool_file = spool::spool_path(&plan.out);
    let mut writer = SpoolWriter::create(&spool_file, &spool::header(plan))?;
    let outcome = crate::record::record(plan, sink, &mut writer)?;
    if let Err(e) = writer.finish() {
        // Rows after the failure are lost, so recovering this spool would
        // call finished requests in flight: it is removed, not left.
        let _ = std::fs::remove_file(&spool_file);
        return Err(match e {
            SpoolError::Io { path, source } => Error::Write { path, source },
            other => other.into(),
        });
    }
    let built = spool::finish_run(plan, &outcome, &spool_file, &Stop::of(&outcome))?;
    // The trace is safe on disk: the spool has done its job.
    std::fs::remove_file(&spool_file).map_err(|source| Error::Write {
        path: spool_file.display().to_string(),
        source,
    })?;
    report(plan, &outcome, built, stdout)
}

/// Prints the summary to `stdout`; an interrupted run returns
/// [`Error::Interrupted`] after it (exit 130).
fn report(
    plan: &Plan,
    outcome: &RunOutcome,
    built: Built,
    stdout: &mut dyn Write,
) -> Result<Written, Error> {
    let path = plan.out.display().to_string();
    let interrupted = outcome.interrupted_at_ms.is_some();
    let text = crate::render::record::render(
        &built.figures,
        &path,
        built.written.bytes,
        interrupted,
        built.tokens,
    );
    emit(stdout, text.as_bytes())?;
    if interrupted {
        return Err(Error::Interrupted {
            path,
            rows: built.written.rows,
        });
    }
    Ok(built.written)
}

/// The progress line on standard error (a terminal only): redrawn in place
/// with each sample, erased when the run ends (`None`).
fn progress_line(sample: Option<Progress>) {
    match sample {
        Some(p) => {
            eprint!(
                "\r\x1b[K{:7.1}s  sent {}  in flight {}  completed {}  failed {}  send lag {:.3} ms",
                p.elapsed_s,
                p.sent,
                p.sent.saturating_sub(p.completed + p.failed),
                p.completed,
                p.failed,
                p.send_lag_ms
            );
            let _ = std::io::stderr().flush();
        }
        None => eprint!("\r\x1b[K"),
    }
}
