//! Every way a command can end, as one typed error. The library returns it;
//! the command-line layer (`cli::exit`) maps each variant to the line printed
//! on standard error and to an exit status.

use crate::io::ReadError;
use crate::trace::Rejection;

/// An error that ends a command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The trace document was rejected (docs/contract.md §4).
    #[error("rejected: {0}")]
    Rejected(#[from] Rejection),
    /// An input could not be read.
    #[error("{0}")]
    Read(#[from] ReadError),
    /// An output could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// Where.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A receipt given to `verify` cannot be used.
    #[error("cannot verify: {0}")]
    Receipt(#[from] crate::review::verify::VerifyError),
    /// The mutation check could not run on this trace.
    #[error("cannot run the mutation check: {0}")]
    Mutate(crate::review::mutate::MutateError),
    /// A flag or argument does not make sense.
    #[error("usage: {0}")]
    Usage(String),
    /// Ctrl-C stopped `record`; the trace was still written.
    #[error(
        "interrupted: wrote {} to {path} (unfinished requests are in_flight)",
        crate::render::number::count(*rows as u64, "row")
    )]
    Interrupted {
        /// Where the trace went.
        path: String,
        /// Rows written.
        rows: usize,
    },
    /// One of several traces (`frontier`) was rejected; names which.
    #[error("rejected: {path}: {rejection}")]
    RejectedFile {
        /// The trace as named on the command line.
        path: String,
        /// The first problem.
        rejection: Rejection,
    },
    /// Ctrl-C stopped a `record` rate sweep between two points; every trace
    /// written so far stays.
    #[error("interrupted: the rate sweep stopped after writing {}", if written.is_empty() { "no trace".to_owned() } else { written.join(", ") })]
    InterruptedSweep {
        /// The traces written before the interrupt.
        written: Vec<String>,
    },
    /// A file given to `import` is not what `--from` says (the message names the place).
    #[error("rejected: cannot import {what} as {tool} output: {source}")]
    Import {
        /// The `--from` tool.
        tool: &'static str,
        /// Which input (`the source file`, `the --summary file`).
        what: String,
        /// What is wrong, and where.
        source: crate::import::error::ImportError,
    },
    /// `record`'s preflight found the server unusable; nothing was recorded.
    #[error("preflight: {0}")]
    Preflight(#[from] crate::record::preflight::PreflightError),
    /// `sim` could not listen where asked.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The recorder's spool could not be written or read (the message names
    /// the file and, for a bad line, the line).
    #[error("spool: {0}")]
    Spool(#[from] crate::record::spool_error::SpoolError),
    /// `merge` refuses the shards given (the message names the file).
    #[error("cannot merge: {0}")]
    Merge(#[from] crate::merge::MergeError),
    /// `compare` refuses two runs judged under different contracts.
    #[error("cannot compare: {0}")]
    Compare(#[from] crate::compare::CompareError),
}
