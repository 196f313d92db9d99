//! `goodput report`: one self-contained HTML page for a person reviewing a
//! run — the receipt summary, verdict lanes over time, latency distributions
//! with the gates drawn on them, and the default sensitivity sweep.
//!
//! This module only reads, analyzes, sweeps and writes; the page itself is
//! built by the pure renderer [`crate::render::report`].

use std::io::Write;
use std::path::PathBuf;

use crate::analyze::{analyze_owned_at, Analysis, AnalyzeOptions};
use crate::error::{Error, EXIT_OK};
use crate::io::{read_limited, write_atomic};
use crate::sweep::{self, SweepPlan, DEFAULT_FACTORS};
use crate::trace::Limits;

/// The exit statuses of `goodput report`, shown by `--help`.
pub const REPORT_EXIT_HELP: &str = "\
Exit status:
  0  the report was written (its path is printed)
  2  the input was rejected (the message names the JSON pointer of the first problem),
     could not be read, or the report could not be written

The page is self-contained (inline CSS and SVG, no script, nothing fetched) and
deterministic: the same trace gives the same bytes.";

/// Flags of `goodput report`.
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// The trace file (`-` reads standard input).
    pub trace: String,
    /// Where to write the HTML page, atomically (temporary file, then rename).
    #[arg(long, value_name = "FILE", default_value = "report.html")]
    pub out: PathBuf,
    /// Most rows accepted (inclusive).
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT_MAX_ROWS)]
    pub max_rows: u64,
    /// Most bytes accepted (inclusive), checked before parsing.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT_MAX_BYTES)]
    pub max_bytes: u64,
    /// Two-sided confidence level of the intervals shown beside the figures, in [0.5, 0.9999].
    #[arg(long, value_name = "LEVEL", default_value_t = crate::intervals::Confidence::DEFAULT)]
    pub confidence: f64,
}

/// The page of an analysis with the default sweep (each gate of every class
/// scaled by [`DEFAULT_FACTORS`], one gate at a time): exactly what
/// `goodput report` writes, so tests can check the bytes without files.
pub fn page(analysis: &Analysis) -> Result<String, sweep::SweepError> {
    let plan = SweepPlan::one_at_a_time(None, &DEFAULT_FACTORS)?;
    let entries = sweep::sweep(&analysis.trace, &analysis.judgements, &plan)?;
    Ok(crate::render::report::render(analysis, &entries))
}

/// Runs `goodput report`: analyze, run the default one-at-a-time sweep over
/// all classes, render, write atomically, print the path written.
pub fn run(args: ReportArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let limits = Limits {
        max_rows: args.max_rows,
        max_bytes: args.max_bytes,
    };
    let confidence = crate::cli::confidence_flag(args.confidence)?;
    let bytes = read_limited(&args.trace, limits.max_bytes)?;
    let analysis = analyze_owned_at(
        bytes,
        AnalyzeOptions {
            limits,
            rows: false,
            strict: false,
        },
        confidence,
    )?;
    let html = page(&analysis).map_err(|e| Error::Usage(e.to_string()))?;
    write_atomic(&args.out, html.as_bytes()).map_err(|source| Error::Write {
        path: args.out.display().to_string(),
        source,
    })?;
    let line = format!("wrote {}\n", args.out.display());
    // A closed pipe (`goodput report … | head`) is not an error.
    match stdout
        .write_all(line.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(Error::Write {
            path: "standard output".to_owned(),
            source: e,
        }),
        _ => Ok(EXIT_OK),
    }
}
