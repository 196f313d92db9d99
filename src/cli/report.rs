//! `goodput report`: analyze a trace, render the HTML page
//! ([`goodput_render::report::analysis_page::page`]), write it atomically and print where it went.

use std::io::Write;
use std::path::PathBuf;

use crate::cli::error::Error;
use goodput_core::analyze::{analyze_owned_at, AnalyzeOptions};
use goodput_render::report::analysis_page::page_with_server;
use goodput_util::io::read_limited;

use crate::cli::exit::EXIT_OK;
use crate::cli::flags::{LimitArgs, PercentileArgs};
use crate::cli::output::{check_output, emit, write_file};
use crate::cli::release::{release_options, CostArgs, RecoveryArgs};
use crate::cli::sidecar::Sidecar;
use goodput_core::receipt::attach_percentiles;
use goodput_core::receipt::release::attach;

/// The exit statuses of `goodput report`, shown by `--help`.
pub const REPORT_EXIT_HELP: &str = "\
Exit status:
  0  the report was written (its path is printed)
  2  the input was rejected (the message names the JSON pointer of the first problem),
     could not be read, its metrics sidecar is not its own (--no-sidecar skips it),
     or the report could not be written

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
    /// Input limits.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Two-sided confidence level of the intervals shown beside the figures, in [0.5, 0.9999].
    #[arg(long, value_name = "LEVEL", default_value_t = goodput_core::intervals::Confidence::DEFAULT)]
    pub confidence: f64,
    /// Which percentiles the page shows.
    #[command(flatten)]
    pub percentiles: PercentileArgs,
    /// How recovery after the burst phase is measured.
    #[command(flatten)]
    pub recovery: RecoveryArgs,
    /// GPUs and price for the per-GPU and cost figures.
    #[command(flatten)]
    pub cost: CostArgs,
    /// Leave the `record --metrics` sidecar out (no server panels), e.g. when
    /// it is stale or belongs to another run.
    #[arg(long)]
    pub no_sidecar: bool,
}

/// Runs `goodput report`: analyze, run the default one-at-a-time sweep over
/// all classes, render, write atomically, print the path written.
pub fn run(args: ReportArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    check_output("--out", &args.out, &[std::path::Path::new(&args.trace)])?;
    let limits = args.limits.limits()?;
    let confidence = crate::cli::flags::confidence_flag(args.confidence)?;
    let percentiles = args.percentiles.set()?;
    let release = release_options(Some(&args.recovery), Some(&args.cost))?;
    let bytes = read_limited(&args.trace, limits.max_bytes)?;
    let mut analysis = analyze_owned_at(
        bytes,
        AnalyzeOptions {
            limits,
            rows: false,
            strict: false,
        },
        confidence,
    )?;
    attach_percentiles(
        &mut analysis.receipt,
        &analysis.trace,
        &analysis.judgements,
        &percentiles,
    );
    attach(
        &mut analysis.receipt,
        &analysis.trace,
        &analysis.judgements,
        &release,
    )
    .map_err(|e| Error::Usage(e.to_string()))?;
    let sidecar = crate::cli::sidecar::load(
        &args.trace,
        &analysis.trace.contract.workload,
        args.no_sidecar,
    )?;
    let (lines, note) = match &sidecar {
        Sidecar::Loaded(lines) => (
            Some(lines.as_slice()),
            format!(
                "server metrics: {}\n",
                goodput_render::report::peak_clause(&goodput_core::server_metrics::peaks(lines))
            ),
        ),
        Sidecar::Missing(path) => (
            None,
            format!("server metrics: {path} not found; the page has no server panels\n"),
        ),
        Sidecar::Skipped => (
            None,
            "server metrics: left out (--no-sidecar); the page has no server panels\n".to_owned(),
        ),
        Sidecar::None => (None, String::new()),
    };
    if let Some(lines) = lines {
        let metric = crate::cli::sidecar::power_metric(None, &analysis.trace.contract.workload);
        analysis.receipt.energy = analysis.receipt.energy_from(lines, &metric);
    }
    let html = page_with_server(&analysis, lines).map_err(|e| Error::Usage(e.to_string()))?;
    write_file(&args.out, html.as_bytes())?;
    let line = format!("wrote {}\n{note}", args.out.display());
    emit(stdout, line.as_bytes())?;
    Ok(EXIT_OK)
}
