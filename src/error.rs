//! Every way a command can end, and the one place that maps each to a message
//! and an exit status.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | done: a receipt was produced (or the check/gate passed) |
//! | 1 | done, and the answer is "no" (a later command's refusal or mismatch) |
//! | 2 | input rejected, unreadable, unwritable, or a usage error |
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
            | Error::Usage(_) => EXIT_ERROR,
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
