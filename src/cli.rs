//! Command-line parsing and dispatch. This module only turns flags into
//! library calls and their results into bytes on stdout/files; every number is
//! computed elsewhere.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::analyze::{analyze_bytes, analyze_owned, Analysis, AnalyzeOptions};
use crate::error::{Error, EXIT_NO, EXIT_OK};
use crate::gate::{self, Criteria, DEFAULT_MAX_CENSORED_SHARE, DEFAULT_MAX_FAILURE_SHARE};
use crate::io::{read_limited, write_atomic, ReadError};
use crate::mutate::{self, Analyzer};
use crate::render::json::to_canonical_json;
use crate::render::text;
use crate::schema;
use crate::sweep::{self, SweepPlan, DEFAULT_FACTORS};
use crate::trace::Limits;
use crate::verify;

const EXIT_HELP: &str = "\
Exit status:
  0  a receipt was produced
  2  the input was rejected (the message names the JSON pointer of the first problem),
     could not be read or written, or the command line is wrong; --strict with an
     invalid row also exits 2";

const SWEEP_EXIT_HELP: &str = "\
Exit status:
  0  the sweep was computed (whatever it shows)
  2  the trace was rejected or unreadable, a factor is not a positive number,
     --class names no class, or an output could not be written

Only the first line (\"hypothetical\": false) is the declared result; every other
line is hypothetical. Gates are multiplied by the factor; null gates stay null.";

const MUTATE_EXIT_HELP: &str = "\
Exit status:
  0  every applicable mutation moved the receipt as predicted (SPEC §6)
  1  at least one mutation was NOT CAUGHT
  2  the trace was rejected or could not be read";

const VERIFY_EXIT_HELP: &str = "\
Exit status:
  0  the receipt is exactly what the trace gives (same sha256, contract, numbers)
  1  any difference: other trace bytes, another contract, any number
  2  the receipt or the trace cannot be read, the receipt is not a goodput
     receipt, or its schema major version is not this one's";

const GATE_EXIT_HELP: &str = "\
Exit status:
  0  ADMIT: every criterion holds
  1  REFUSE: at least one criterion fails (each is printed with its value and limit)
  2  the trace was rejected or unreadable, or a flag is out of range

Criteria: goodput/s > min-goodput × (1 + margin); failure share <= ceiling
(default 0.05); censored share <= ceiling (default 0.05); p95 TTFT / E2E <= the
limits given. A figure that cannot be measured (empty cohort, no completed rows)
fails its criterion.";

/// goodput: count only the requests that met every declared latency gate.
#[derive(Debug, Parser)]
#[command(name = "goodput", version, about, after_help = EXIT_HELP)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate a trace, give every row a verdict and print the receipt.
    #[command(after_help = EXIT_HELP)]
    Analyze(AnalyzeArgs),
    /// Recompute the trace under neighbouring gates (sensitivity sweep).
    #[command(after_help = SWEEP_EXIT_HELP)]
    Sweep(SweepArgs),
    /// Check that the receipt moves as predicted when the trace is mutated (SPEC §6).
    #[command(after_help = MUTATE_EXIT_HELP)]
    Mutate(MutateArgs),
    /// Recompute a receipt from its trace and report every difference.
    #[command(after_help = VERIFY_EXIT_HELP)]
    Verify(VerifyArgs),
    /// Admit or refuse a run: goodput, failure and censored shares, tail limits.
    #[command(after_help = GATE_EXIT_HELP)]
    Gate(GateArgs),
    /// Drive an OpenAI-compatible server open-loop (or closed-loop) and write an honest trace.
    #[command(after_help = crate::record::RECORD_EXIT_HELP)]
    Record(Box<crate::record::RecordArgs>),
    /// Serve a simulated continuous-batching LLM engine (OpenAI-compatible) on loopback.
    #[command(after_help = crate::sim::SIM_EXIT_HELP)]
    Sim(crate::sim::SimArgs),
    /// Write one self-contained HTML page: summary, verdict lanes, distributions, sweep.
    #[command(after_help = crate::report::REPORT_EXIT_HELP)]
    Report(crate::report::ReportArgs),
    /// Goodput against offered load over a rate sweep: the knee and the capacity.
    #[command(after_help = crate::frontier::command::FRONTIER_EXIT_HELP)]
    Frontier(crate::frontier::command::FrontierArgs),
    /// Convert a vLLM, AIPerf or guidellm export to a trace and compare the tool's figures with goodput's.
    #[command(after_help = crate::import::IMPORT_EXIT_HELP)]
    Import(crate::import::ImportArgs),
    /// Print the JSON Schema of a trace or of a receipt.
    Schema {
        /// Which schema.
        #[arg(value_enum)]
        which: SchemaKind,
    },
}

/// Which schema to print.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SchemaKind {
    /// The `goodput-trace/1` input document.
    Trace,
    /// The `goodput-receipt/1` output document.
    Receipt,
}

/// Flags of `goodput analyze`.
#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// The trace file (`-` reads standard input).
    pub trace: String,
    /// Print the JSON receipt instead of the summary for people.
    #[arg(long)]
    pub json: bool,
    /// Also write the JSON receipt to FILE, atomically (temporary file, then rename).
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Include per-row verdicts in the JSON receipt.
    #[arg(long)]
    pub rows: bool,
    /// Reject the trace (exit 2) at its first invalid row instead of counting it.
    #[arg(long)]
    pub strict: bool,
    /// Most rows accepted (inclusive); recorded in the receipt.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT_MAX_ROWS)]
    pub max_rows: u64,
    /// Most bytes accepted (inclusive), checked before parsing; recorded in the receipt.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT_MAX_BYTES)]
    pub max_bytes: u64,
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
}

/// Input limits shared by the reviewer commands.
#[derive(Debug, clap::Args)]
pub struct LimitArgs {
    /// Most rows accepted (inclusive).
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT_MAX_ROWS)]
    pub max_rows: u64,
    /// Most bytes accepted (inclusive), checked before parsing.
    #[arg(long, value_name = "N", default_value_t = Limits::DEFAULT_MAX_BYTES)]
    pub max_bytes: u64,
}

impl LimitArgs {
    fn limits(&self) -> Limits {
        Limits {
            max_rows: self.max_rows,
            max_bytes: self.max_bytes,
        }
    }
}

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

/// Flags of `goodput verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The receipt to check (JSON, as written by `goodput analyze --json`).
    pub receipt: String,
    /// The trace it claims to be made from; read within the receipt's recorded byte limit.
    pub trace: String,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Flags of `goodput gate`.
#[derive(Debug, clap::Args)]
pub struct GateArgs {
    /// The trace file (`-` reads standard input).
    pub trace: String,
    /// Required goodput, requests per window second; the measured rate must exceed it × (1 + margin).
    #[arg(long, value_name = "R")]
    pub min_goodput: f64,
    /// Judge this class instead of all rows.
    #[arg(long, value_name = "NAME")]
    pub class: Option<String>,
    /// Safety margin on the required goodput (0.2 = 20 % headroom).
    #[arg(long, value_name = "F", default_value_t = 0.0)]
    pub margin: f64,
    /// Most failed / cohort allowed.
    #[arg(long, value_name = "F", default_value_t = DEFAULT_MAX_FAILURE_SHARE)]
    pub max_failure_share: f64,
    /// Most censored / cohort allowed.
    #[arg(long, value_name = "F", default_value_t = DEFAULT_MAX_CENSORED_SHARE)]
    pub max_censored_share: f64,
    /// Most nearest-rank p95 TTFT allowed, ms.
    #[arg(long, value_name = "X")]
    pub max_p95_ttft_ms: Option<f64>,
    /// Most nearest-rank p95 E2E allowed, ms.
    #[arg(long, value_name = "X")]
    pub max_p95_e2e_ms: Option<f64>,
    /// Reject the trace (exit 2) at its first invalid row.
    #[arg(long)]
    pub strict: bool,
    /// Print the decision as JSON.
    #[arg(long)]
    pub json: bool,
    /// Input limits.
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// Runs a parsed command line; returns the exit status for success paths.
pub fn run(cli: Cli, stdout: &mut dyn Write) -> Result<i32, Error> {
    match cli.command {
        Command::Analyze(args) => analyze(args, stdout),
        Command::Sweep(args) => sweep_command(args, stdout),
        Command::Mutate(args) => mutate_command(args, stdout),
        Command::Verify(args) => verify_command(args, stdout),
        Command::Gate(args) => gate_command(args, stdout),
        Command::Record(args) => crate::record::run(*args, stdout),
        Command::Sim(args) => crate::sim::run(args, stdout),
        Command::Report(args) => crate::report::run(args, stdout),
        Command::Frontier(args) => crate::frontier::command::run(args, stdout),
        Command::Import(args) => crate::import::run(args, stdout),
        Command::Schema { which } => {
            let text = match which {
                SchemaKind::Trace => schema::trace_schema_json(),
                SchemaKind::Receipt => schema::receipt_schema_json(),
            };
            emit(stdout, text.as_bytes())?;
            Ok(EXIT_OK)
        }
    }
}

fn analyze(args: AnalyzeArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let limits = Limits {
        max_rows: args.max_rows,
        max_bytes: args.max_bytes,
    };
    let bytes = read_limited(&args.trace, limits.max_bytes)?;
    let options = AnalyzeOptions {
        limits,
        rows: args.rows,
        strict: args.strict,
    };
    let mut analysis = analyze_owned(bytes, options)?;
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
        Some(
            to_canonical_json(&analysis.receipt).map_err(|e| Error::Write {
                path: "receipt".to_owned(),
                source: e.into(),
            })?,
        )
    } else {
        None
    };
    if let (Some(path), Some(bytes)) = (&args.out, &json) {
        write_atomic(path, bytes).map_err(|source| Error::Write {
            path: path.display().to_string(),
            source,
        })?;
    }
    if let (true, Some(bytes)) = (args.json, &json) {
        emit(stdout, bytes)?;
    } else {
        let invalid = analysis.invalid_rows();
        emit(stdout, text::render(&analysis.receipt, &invalid).as_bytes())?;
        if let Some(entries) = &analysis.receipt.sweep {
            let table = format!("\n{}", crate::render::sweep::render(entries));
            emit(stdout, table.as_bytes())?;
        }
    }
    Ok(EXIT_OK)
}

/// Reads and analyzes a trace within `limits`.
fn load(path: &str, limits: Limits, strict: bool) -> Result<Analysis, Error> {
    let bytes = read_limited(path, limits.max_bytes)?;
    let options = AnalyzeOptions {
        limits,
        rows: false,
        strict,
    };
    Ok(analyze_owned(bytes, options)?)
}

fn run_sweep(
    analysis: &Analysis,
    class: Option<String>,
    factors: &[f64],
    grid: bool,
) -> Result<Vec<sweep::SweepEntry>, Error> {
    let usage = |e: sweep::SweepError| Error::Usage(e.to_string());
    let plan = if grid {
        SweepPlan::grid(class, factors)
    } else {
        SweepPlan::one_at_a_time(class, factors)
    }
    .map_err(usage)?;
    sweep::sweep(&analysis.trace, &analysis.judgements, &plan).map_err(usage)
}

fn json_bytes<T: serde::Serialize>(value: &T, what: &str) -> Result<Vec<u8>, Error> {
    to_canonical_json(value).map_err(|e| Error::Write {
        path: what.to_owned(),
        source: e.into(),
    })
}

fn sweep_command(args: SweepArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let analysis = load(&args.trace, args.limits.limits(), false)?;
    let entries = run_sweep(&analysis, args.class, &args.factors, args.grid)?;
    if let Some(path) = &args.out {
        write_atomic(path, &json_bytes(&entries, "sweep")?).map_err(|source| Error::Write {
            path: path.display().to_string(),
            source,
        })?;
    }
    if args.json {
        emit(stdout, &json_bytes(&entries, "sweep")?)?;
    } else {
        if analysis.trace.contract.arrivals_unknown() {
            let line = format!("NOTE      {}\n", crate::receipt::ARRIVALS_UNKNOWN_LINE);
            emit(stdout, line.as_bytes())?;
        }
        emit(stdout, crate::render::sweep::render(&entries).as_bytes())?;
    }
    Ok(EXIT_OK)
}

fn mutate_command(args: MutateArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let calc = Analyzer::for_mutations_of(args.limits.limits());
    mutate_with(args, &calc, stdout)
}

/// `goodput mutate` with the calculator as a parameter: the binary passes the
/// real analyzer; tests pass broken ones to see exit status 1.
pub fn mutate_with(
    args: MutateArgs,
    calc: &dyn mutate::Calculator,
    stdout: &mut dyn Write,
) -> Result<i32, Error> {
    let limits = args.limits.limits();
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
        emit(stdout, crate::render::mutate::render(&report).as_bytes())?;
    }
    Ok(if report.passed() { EXIT_OK } else { EXIT_NO })
}

fn verify_command(args: VerifyArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    // A receipt is small next to its trace; the trace's own limit bounds the read.
    let receipt_bytes = read_limited(&args.receipt, MAX_RECEIPT_BYTES)?;
    let claimed = verify::read_receipt(&receipt_bytes).map_err(Error::Receipt)?;
    let report = match read_limited(&args.trace, claimed.limits.max_bytes) {
        Ok(trace) => verify::verify(&claimed, &trace),
        Err(ReadError::TooLarge { size, .. }) => verify::verify_oversized(&claimed, size),
        Err(e) => return Err(e.into()),
    };
    if args.json {
        emit(stdout, &json_bytes(&report, "report")?)?;
    } else {
        emit(stdout, crate::render::verify::render(&report).as_bytes())?;
    }
    Ok(if report.agrees() { EXIT_OK } else { EXIT_NO })
}

/// The largest receipt `verify` reads (a receipt with per-row verdicts of a
/// million-row trace is a few hundred MB).
pub const MAX_RECEIPT_BYTES: u64 = 1 << 30;

fn gate_command(args: GateArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let criteria = Criteria {
        min_goodput_per_s: args.min_goodput,
        margin: args.margin,
        max_failure_share: args.max_failure_share,
        max_censored_share: args.max_censored_share,
        max_p95_ttft_ms: args.max_p95_ttft_ms,
        max_p95_e2e_ms: args.max_p95_e2e_ms,
        class: args.class,
    };
    // Flags first: a bad flag is exit 2 before any work.
    criteria.check().map_err(|e| Error::Usage(e.to_string()))?;
    let analysis = load(&args.trace, args.limits.limits(), args.strict)?;
    let decision =
        gate::decide(&analysis.receipt, &criteria).map_err(|e| Error::Usage(e.to_string()))?;
    if args.json {
        emit(stdout, &json_bytes(&decision, "decision")?)?;
    } else {
        emit(stdout, crate::render::gate::render(&decision).as_bytes())?;
    }
    Ok(if decision.admit { EXIT_OK } else { EXIT_NO })
}

/// Writes to stdout; a closed pipe (`goodput … | head`) is not an error.
pub(crate) fn emit(stdout: &mut dyn Write, bytes: &[u8]) -> Result<(), Error> {
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(source) => Err(Error::Write {
            path: "standard output".to_owned(),
            source,
        }),
    }
}
