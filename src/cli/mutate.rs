//! `goodput mutate`: check that a calculator's receipt moves as predicted
//! when the trace is mutated.

use std::io::Write;

use crate::cli::error::Error;
use goodput_core::analyze::{analyze_bytes, AnalyzeOptions};
use goodput_core::review::mutate::{self, Analyzer};
use goodput_util::io::read_limited;

use crate::cli::exit::{EXIT_NO, EXIT_OK};
use crate::cli::flags::LimitArgs;
use crate::cli::output::{emit, json_bytes};

/// Exit statuses of `goodput mutate`, shown in `--help`.
pub const MUTATE_EXIT_HELP: &str = "\
Exit status:
  0  every applicable mutation moved the receipt as predicted (docs/contract.md §8)
  1  at least one mutation was NOT CAUGHT
  2  the trace was rejected or could not be read";

/// Flags of `goodput mutate`.
#[derive(Debug, clap::Args)]
pub struct MutateArgs {
    /// The trace file (`-` reads standard input).
    pub trace: String,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Input limits (the mutated copies may exceed them by one row and their re-serialization).
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `goodput mutate` with the real analyzer.
pub fn run(args: MutateArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let calc = Analyzer::for_mutations_of(args.limits.limits()?);
    mutate_with(args, &calc, stdout)
}

/// `goodput mutate` with the calculator as a parameter: the binary passes the
/// real analyzer; tests pass broken ones to see exit status 1.
pub fn mutate_with(
    args: MutateArgs,
    calc: &dyn mutate::Calculator,
    stdout: &mut dyn Write,
) -> Result<i32, Error> {
    let limits = args.limits.limits()?;
    let bytes = read_limited(&args.trace, limits.max_bytes)?;
    // The trace itself must pass the limits the reviewer gave.
    analyze_bytes(
        &bytes,
        AnalyzeOptions {
            limits,
            rows: false,
            strict: false,
        },
    )?;
    let report = mutate::check(&bytes, calc).map_err(|e| match e {
        mutate::MutateError::Rejected(r) => Error::Rejected(r),
        other => Error::Mutate(other),
    })?;
    if args.json {
        emit(stdout, &json_bytes(&report, "report")?)?;
    } else {
        emit(stdout, goodput_render::mutate::render(&report).as_bytes())?;
    }
    Ok(if report.passed() { EXIT_OK } else { EXIT_NO })
}
