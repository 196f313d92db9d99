//! The command-line layer: one file per subcommand, each holding its flags
//! (clap), its call into the library, its printing and its exit status;
//! [`output`] is where bytes go, [`exit`] maps every error to a message and
//! an exit status. Nothing here computes a figure: every number comes from
//! the library, and no library module imports this one.

pub mod analyze;
pub mod choices;
pub mod compare;
pub mod demo;
pub mod duration;
pub mod error;
pub mod exit;
pub mod flags;
pub mod frontier;
pub mod gaps;
pub mod gate;
pub mod import;
pub mod input;
pub mod merge;
pub mod mutate;
pub mod output;
pub mod quality;
pub mod record;
pub mod release;
pub mod report;
pub mod schema;
pub mod sensitivity;
pub mod sidecar;
pub mod sim;
pub mod verify;

use std::io::Write;

use clap::{Parser, Subcommand};

use crate::cli::error::Error;

pub use self::analyze::AnalyzeArgs;
pub use self::flags::LimitArgs;
pub use self::gate::GateArgs;
pub use self::mutate::{mutate_with, MutateArgs};
pub use self::schema::SchemaKind;
pub use self::sensitivity::SweepArgs;
pub use self::verify::{VerifyArgs, MAX_RECEIPT_BYTES};

use self::analyze::EXIT_HELP;
use self::gate::GATE_EXIT_HELP;
use self::mutate::MUTATE_EXIT_HELP;
use self::sensitivity::SWEEP_EXIT_HELP;
use self::verify::VERIFY_EXIT_HELP;

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
    /// Run the whole job on the built-in sim: a rate sweep across its knee, the frontier, a report, the answer.
    #[command(after_help = demo::DEMO_EXIT_HELP)]
    Demo(demo::DemoArgs),
    /// Validate a trace, give every row a verdict and print the receipt.
    #[command(after_help = EXIT_HELP)]
    Analyze(AnalyzeArgs),
    /// Recompute the trace under neighbouring gates (sensitivity sweep).
    #[command(after_help = SWEEP_EXIT_HELP)]
    Sweep(SweepArgs),
    /// Check that the receipt moves as predicted when the trace is mutated (docs/contract.md §8).
    #[command(after_help = MUTATE_EXIT_HELP)]
    Mutate(MutateArgs),
    /// Recompute a receipt from its trace and report every difference.
    #[command(after_help = VERIFY_EXIT_HELP)]
    Verify(VerifyArgs),
    /// Admit or refuse a run: goodput, failure and censored shares, tail limits.
    #[command(after_help = GATE_EXIT_HELP)]
    Gate(Box<GateArgs>),
    /// Drive an OpenAI-compatible server open-loop (or closed-loop) and write an honest trace.
    #[command(after_help = record::RECORD_EXIT_HELP)]
    Record(Box<record::RecordArgs>),
    /// Merge the traces of the shards of one schedule (record --shard K/N) into one trace.
    #[command(after_help = merge::MERGE_EXIT_HELP)]
    Merge(merge::MergeArgs),
    /// Serve a simulated continuous-batching LLM engine (OpenAI-compatible) on loopback.
    #[command(after_help = sim::SIM_EXIT_HELP)]
    Sim(sim::SimArgs),
    /// Write one self-contained HTML page: summary, verdict lanes, distributions, sweep.
    #[command(after_help = report::REPORT_EXIT_HELP)]
    Report(report::ReportArgs),
    /// Goodput against offered load over a rate sweep: the knee and the capacity.
    #[command(after_help = frontier::FRONTIER_EXIT_HELP)]
    Frontier(frontier::FrontierArgs),
    /// Convert a vLLM, AIPerf or guidellm export to a trace and compare the tool's figures with goodput's.
    #[command(after_help = import::IMPORT_EXIT_HELP)]
    Import(import::ImportArgs),
    /// Is B better or worse than A beyond noise? Every headline figure with its interval.
    #[command(after_help = compare::COMPARE_EXIT_HELP)]
    Compare(compare::CompareArgs),
    /// The share of a quality bank's answers that met their expectation (or a baseline's answers), with its interval; or import a harness's figure.
    #[command(after_help = quality::QUALITY_EXIT_HELP)]
    Quality(quality::QualityArgs),
    /// Print the JSON Schema of a trace, a receipt, a comparison, or another command's `--json` output.
    Schema {
        /// Which schema.
        #[arg(value_enum)]
        which: SchemaKind,
    },
}

/// Runs a parsed command line; returns the exit status for success paths.
pub fn run(cli: Cli, stdout: &mut dyn Write) -> Result<i32, Error> {
    match cli.command {
        Command::Demo(args) => demo::run(args, stdout),
        Command::Analyze(args) => analyze::run(args, stdout),
        Command::Sweep(args) => sensitivity::run(args, stdout),
        Command::Mutate(args) => mutate::run(args, stdout),
        Command::Verify(args) => verify::run(args, stdout),
        Command::Gate(args) => gate::run(*args, stdout),
        Command::Record(args) => record::run(*args, stdout),
        Command::Sim(args) => sim::run(args, stdout),
        Command::Merge(args) => merge::run(args, stdout),
        Command::Report(args) => report::run(args, stdout),
        Command::Frontier(args) => frontier::run(args, stdout),
        Command::Import(args) => import::run(args, stdout),
        Command::Compare(args) => compare::run(args, stdout),
        Command::Quality(args) => quality::run(args, stdout),
        Command::Schema { which } => schema::run(which, stdout),
    }
}
