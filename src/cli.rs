//! Command-line parsing and dispatch. This module only turns flags into
//! library calls and their results into bytes on stdout/files; every number is
//! computed elsewhere.

use std::io::Write;
use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::analyze::{analyze_bytes, AnalyzeOptions};
use crate::error::{Error, EXIT_OK};
use crate::io::{read_limited, write_atomic};
use crate::render::json::to_canonical_json;
use crate::render::text::{self, InvalidRow};
use crate::schema;
use crate::trace::Limits;
use crate::verdict::Verdict;

const EXIT_HELP: &str = "\
Exit status:
  0  a receipt was produced
  2  the input was rejected (the message names the JSON pointer of the first problem),
     could not be read or written, or the command line is wrong; --strict with an
     invalid row also exits 2";

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
    /// Drive an OpenAI-compatible server open-loop (or closed-loop) and write an honest trace.
    #[command(after_help = crate::record::RECORD_EXIT_HELP)]
    Record(crate::record::RecordArgs),
    /// Serve a simulated continuous-batching LLM engine (OpenAI-compatible) on loopback.
    #[command(after_help = crate::sim::SIM_EXIT_HELP)]
    Sim(crate::sim::SimArgs),
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
}

/// Runs a parsed command line; returns the exit status for success paths.
pub fn run(cli: Cli, stdout: &mut dyn Write) -> Result<i32, Error> {
    match cli.command {
        Command::Analyze(args) => analyze(args, stdout),
        Command::Record(args) => crate::record::run(args, stdout),
        Command::Sim(args) => crate::sim::run(args, stdout),
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
    let analysis = analyze_bytes(&bytes, options)?;
    drop(bytes);
    let json = || {
        to_canonical_json(&analysis.receipt).map_err(|e| Error::Write {
            path: "receipt".to_owned(),
            source: e.into(),
        })
    };
    if let Some(path) = &args.out {
        write_atomic(path, &json()?).map_err(|source| Error::Write {
            path: path.display().to_string(),
            source,
        })?;
    }
    if args.json {
        emit(stdout, &json()?)?;
    } else {
        let invalid: Vec<InvalidRow> = analysis
            .trace
            .rows
            .iter()
            .zip(&analysis.judgements)
            .enumerate()
            .filter_map(|(index, (row, j))| match j.verdict {
                Verdict::Invalid(set) => Some(InvalidRow {
                    index,
                    id: row.id.get().map(|s| s.to_string()),
                    reasons: set.iter().map(|r| r.as_str()).collect(),
                }),
                _ => None,
            })
            .collect();
        emit(stdout, text::render(&analysis.receipt, &invalid).as_bytes())?;
    }
    Ok(EXIT_OK)
}

/// Writes to stdout; a closed pipe (`goodput … | head`) is not an error.
fn emit(stdout: &mut dyn Write, bytes: &[u8]) -> Result<(), Error> {
    match stdout.write_all(bytes).and_then(|()| stdout.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(source) => Err(Error::Write {
            path: "standard output".to_owned(),
            source,
        }),
    }
}
