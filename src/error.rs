//! Every way a command can end, and the one place that maps each to a message
//! and an exit status.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | done: a receipt was produced (or the check/gate passed) |
//! | 1 | done, and the answer is "no" (a later command's refusal or mismatch) |
//! | 2 | input rejected, unreadable, unwritable, or a usage error |
//! | 130 | interrupted (Ctrl-C); `record` still wrote its trace |
//!
//! A panic is a bug on any input.

use crate::io::ReadError;
use crate::trace::Rejection;

/// Exit status: success.
pub const EXIT_OK: i32 = 0;
/// Exit status: the command ran and its answer is "no".
pub const EXIT_NO: i32 = 1;
/// Exit status: rejected input, I/O or usage error.
pub const EXIT_ERROR: i32 = 2;
/// Exit status: interrupted by SIGINT (128 + 2, the shell convention).
pub const EXIT_INTERRUPTED: i32 = 130;

/// An error that ends a command.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The trace document was rejected (SPEC §3).
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
    Receipt(#[from] crate::verify::VerifyError),
    /// The mutation check could not run on this trace.
    #[error("cannot run the mutation check: {0}")]
    Mutate(crate::mutate::MutateError),
    /// A flag or argument does not make sense.
    #[error("usage: {0}")]
    Usage(String),
    /// Ctrl-C stopped `record`; the trace was still written.
    #[error("interrupted: wrote {rows} rows to {path} (unfinished requests are in_flight)")]
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
        source: crate::import::ImportError,
    },
    /// `sim` could not listen where asked.
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        /// The address asked for.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// `compare` refuses two runs judged under different contracts.
    #[error("cannot compare: {0}")]
    Compare(#[from] crate::compare::CompareError),
}

impl Error {
    /// The exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Rejected(_)
            | Error::Read(_)
            | Error::Write { .. }
            | Error::Receipt(_)
            | Error::Mutate(_)
            | Error::Usage(_)
            | Error::RejectedFile { .. }
            | Error::Import { .. }
            | Error::Listen { .. }
            | Error::Compare(_) => EXIT_ERROR,
            Error::Interrupted { .. } | Error::InterruptedSweep { .. } => EXIT_INTERRUPTED,
        }
    }

    /// The one line printed on standard error.
    pub fn message(&self) -> String {
        match self {
            // An oversized input is a rejection too; say so the same way.
            Error::Read(ReadError::TooLarge {
                limit,
                size: Some(size),
                ..
            }) => {
                format!("rejected: {}", Rejection::too_large(*size, *limit))
            }
            Error::Read(ReadError::TooLarge {
                path,
                limit,
                size: None,
            }) => format!(
                "rejected: {path} is over the limit of {limit} bytes (raise it with --max-bytes)"
            ),
            other => other.to_string(),
        }
    }
}
