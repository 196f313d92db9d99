//! `goodput sweep`: recount a trace's judged rows under scaled gates.

use std::io::Write;
use std::path::PathBuf;

use crate::cli::error::Error;
use goodput_core::analyze::Analysis;
use goodput_core::review::sensitivity::{self, SweepPlan, DEFAULT_FACTORS};

use crate::cli::exit::EXIT_OK;
use crate::cli::flags::LimitArgs;
use crate::cli::input::load;
use crate::cli::output::{check_output, emit, json_bytes, write_file};

/// Exit statuses of `goodput sweep`, shown in `--help`.
pub const SWEEP_EXIT_HELP: &str = "\
Exit status:
  0  the sweep was computed (whatever it shows)
  2  the trace was rejected or unreadable, a factor is not a positive number,
     --class names no class, or an output could not be written

Only the first line (\"hypothetical\": false) is the declared result; every other
line is hypothetical. Gates are multiplied by the factor; null gates stay null.";

/// Flags of `goodput sweep`.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// The trace file (`-` reads standard input).
    pub trace: String,
    /// Comma-separated gate multipliers, each > 0.
    #[arg(long, value_name = "LIST", value_delimiter = ',', default_values_t = DEFAULT_FACTORS)]
    pub factors: Vec<f64>,
    /// Every combination of the factors across the three gates, instead of one gate at a time.
    #[arg(long)]
    pub grid: bool,
    /// Move only this class's gates and report only its figures.
    #[arg(long, value_name = "NAME")]
    pub class: Option<String>,
    /// Print the JSON array (declared entry first) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON array to FILE, atomically.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Input limits.
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `goodput sweep`.
pub fn run(args: SweepArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    if let Some(out) = &args.out {
        check_output("--out", out, &[std::path::Path::new(&args.trace)])?;
    }
    let analysis = load(&args.trace, args.limits.limits()?, false)?;
    let entries = run_sweep(&analysis, args.class, &args.factors, args.grid)?;
    if let Some(path) = &args.out {
        write_file(path, &json_bytes(&entries, "sweep")?)?;
    }
    if args.json {
        emit(stdout, &json_bytes(&entries, "sweep")?)?;
    } else {
        if analysis.trace.contract.arrivals_unknown() {
            let line = format!(
                "NOTE      {}\n",
                goodput_core::receipt::ARRIVALS_UNKNOWN_LINE
            );
            emit(stdout, line.as_bytes())?;
        }
        emit(
            stdout,
            goodput_render::sensitivity::render(&entries).as_bytes(),
        )?;
    }
    Ok(EXIT_OK)
}

/// The sweep of an analysis (`goodput sweep`, `goodput analyze --sweep`); a
/// bad factor or an unknown class is a usage error.
pub(crate) fn run_sweep(
    analysis: &Analysis,
    class: Option<String>,
    factors: &[f64],
    grid: bool,
) -> Result<Vec<sensitivity::SweepEntry>, Error> {
    let usage = |e: sensitivity::SweepError| Error::Usage(e.to_string());
    let plan = if grid {
        SweepPlan::grid(class, factors)
    } else {
        SweepPlan::one_at_a_time(class, factors)
    }
    .map_err(usage)?;
    sensitivity::sweep(&analysis.trace, &analysis.judgements, &plan).map_err(usage)
}
