//! `goodput analyze`: read a trace, judge every row, print (and write) the
//! receipt.

use std::io::Write;
use std::path::PathBuf;

use crate::cli::error::Error;
use goodput_core::analyze::{analyze_owned_at, AnalyzeOptions};
use goodput_core::review::sensitivity::DEFAULT_FACTORS;
use goodput_render::text;
use goodput_util::io::read_limited;

use crate::cli::exit::EXIT_OK;
use crate::cli::flags::{LimitArgs, PercentileArgs};
use crate::cli::output::{check_output, emit, json_bytes, write_file};
use crate::cli::release::{release_options, CostArgs, RecoveryArgs};
use crate::cli::sensitivity::run_sweep;
use goodput_core::receipt::attach_percentiles;
use goodput_core::receipt::release::attach;

/// Exit statuses of `goodput` and `goodput analyze`, shown in `--help`.
pub const EXIT_HELP: &str = "\
Exit status:
  0  a receipt was produced
  2  the input was rejected (the message names the JSON pointer of the first problem),
     could not be read or written, or the command line is wrong; --strict with an
     invalid row also exits 2";

/// Flags of `goodput analyze`.
#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// The trace file (`-` reads standard input).
    pub trace: String,
    /// Print the JSON receipt instead of the summary for people.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print one CSV line per row instead of the summary: index, id, class,
    /// verdict, reasons, arrivalMs, ttftMs, tpotMs, e2eMs, outputTokens, then
    /// one column per label key (sorted).
    #[arg(long)]
    pub csv: bool,
    /// Also write the JSON receipt to FILE, atomically (temporary file, then rename).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Include per-row verdicts: in the JSON receipt, and as a table after the summary.
    #[arg(long)]
    pub rows: bool,
    /// Reject the trace (exit 2) at its first invalid row instead of counting it.
    #[arg(long)]
    pub strict: bool,
    /// Input limits.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Embed a sensitivity sweep (the same array as `goodput sweep --json`) under "sweep".
    #[arg(long)]
    pub sweep: bool,
    /// Factors of the embedded sweep (see `goodput sweep --factors`).
    #[arg(long, value_name = "LIST", value_delimiter = ',', requires = "sweep")]
    pub sweep_factors: Option<Vec<f64>>,
    /// Make the embedded sweep a grid (see `goodput sweep --grid`).
    #[arg(long, requires = "sweep")]
    pub sweep_grid: bool,
    /// Sweep one class only (see `goodput sweep --class`).
    #[arg(long, value_name = "NAME", requires = "sweep")]
    pub sweep_class: Option<String>,
    /// Two-sided confidence level of the receipt's intervals, in [0.5, 0.9999]; recorded in the receipt.
    #[arg(long, value_name = "LEVEL", default_value_t = goodput_core::intervals::Confidence::DEFAULT)]
    pub confidence: f64,
    /// Which percentiles the receipt gives.
    #[command(flatten)]
    pub percentiles: PercentileArgs,
    /// How recovery after the burst phase is measured (recorded in the receipt).
    #[command(flatten)]
    pub recovery: RecoveryArgs,
    /// GPUs and price for the per-GPU and cost figures (recorded in the receipt's contract).
    #[command(flatten)]
    pub cost: CostArgs,
    /// The power series (watts, summed over its series) integrated from the
    /// trace's metrics sidecar into the receipt's `energy` block.
    /// Default: the trace's `workload.powerMetric`, else `DCGM_FI_DEV_POWER_USAGE`.
    #[arg(long, value_name = "NAME")]
    pub power_metric: Option<String>,
    /// Leave the `record --metrics` sidecar out (no `energy` block).
    #[arg(long)]
    pub no_sidecar: bool,
}

/// `goodput analyze`.
pub fn run(args: AnalyzeArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    if let Some(out) = &args.out {
        check_output("--out", out, &[std::path::Path::new(&args.trace)])?;
    }
    let limits = args.limits.limits()?;
    let confidence = crate::cli::flags::confidence_flag(args.confidence)?;
    let percentiles = args.percentiles.set()?;
    let release = release_options(Some(&args.recovery), Some(&args.cost))?;
    let bytes = read_limited(&args.trace, limits.max_bytes)?;
    let options = AnalyzeOptions {
        limits,
        rows: args.rows,
        strict: args.strict,
    };
    let mut analysis = analyze_owned_at(bytes, options, confidence)?;
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
    let workload = &analysis.trace.contract.workload;
    if let Some(lines) =
        crate::cli::sidecar::power_readings(&args.trace, workload, args.no_sidecar)?
    {
        analysis.receipt.energy = analysis.receipt.energy_from(
            &lines,
            &crate::cli::sidecar::power_metric(args.power_metric.as_deref(), workload),
        );
    }
    attach_quality(&args.trace, &mut analysis, confidence)?;
    if args.sweep {
        let factors = args.sweep_factors.as_deref().unwrap_or(&DEFAULT_FACTORS);
        let entries = run_sweep(
            &analysis,
            args.sweep_class.clone(),
            factors,
            args.sweep_grid,
        )?;
        analysis.receipt.sweep = Some(entries);
    }
    // Rendered once, when `--out` or `--json` needs it (a large receipt with
    // `--rows` is not cheap to render).
    let json = if args.out.is_some() || args.json {
        Some(json_bytes(&analysis.receipt, "receipt")?)
    } else {
        None
    };
    if let (Some(path), Some(bytes)) = (&args.out, &json) {
        write_file(path, bytes)?;
    }
    if let (true, Some(bytes)) = (args.json, &json) {
        emit(stdout, bytes)?;
    } else if args.csv {
        let bytes = goodput_render::csv::analysis_rows(&analysis).map_err(|e| Error::Write {
            path: "CSV".to_owned(),
            source: e.into(),
        })?;
        emit(stdout, &bytes)?;
    } else {
        let invalid = analysis.invalid_rows();
        emit(stdout, text::render(&analysis.receipt, &invalid).as_bytes())?;
        if let Some(entries) = &analysis.receipt.sweep {
            let table = format!("\n{}", goodput_render::sensitivity::render(entries));
            emit(stdout, table.as_bytes())?;
        }
        if let Some(rows) = &analysis.receipt.rows {
            let tpot_name = match analysis.receipt.contract.tpot_label.as_str() {
                "tpot" => "tpot",
                _ => "chunk",
            };
            let table = format!("\n{}", goodput_render::rows::table(rows, tpot_name));
            emit(stdout, table.as_bytes())?;
        }
    }
    Ok(EXIT_OK)
}

/// The receipt's `quality` block, when the trace names a sidecar and it is
/// beside the trace (its sha256 checked: a mismatch is exit 2). A named
/// sidecar that is missing leaves the block out, and says so on standard
/// error, so the receipt never claims figures it did not judge.
pub(crate) fn attach_quality(
    trace: &str,
    analysis: &mut goodput_core::analyze::Analysis,
    confidence: goodput_core::intervals::Confidence,
) -> Result<(), Error> {
    use crate::cli::quality::{beside, Beside};
    match beside(trace, &analysis.trace.contract)? {
        Beside::None => {}
        Beside::Missing(why) => eprintln!(
            "note: {}; the receipt has no quality block",
            goodput_util::escape::terminal(&why)
        ),
        Beside::Loaded(name, sidecar) => {
            analysis.receipt.quality = Some(goodput_core::quality::receipt_block(
                &name, &sidecar, confidence,
            ));
        }
    }
    Ok(())
}
