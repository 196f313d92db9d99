//! Exit statuses, and the one place that maps every [`Error`] a command can
//! end with to the line printed on standard error and the status it exits
//! with.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | done: a receipt was produced (or the check/gate passed) |
//! | 1 | done, and the answer is "no" (a later command's refusal or mismatch) |
//! | 2 | input rejected, unreadable, unwritable, or a usage error |
//! | 130 | interrupted (Ctrl-C); `record` still wrote its trace |
//!
//! A panic is a bug on any input.

use crate::cli::error::Error;
use goodput_core::trace::Rejection;
use goodput_util::io::ReadError;

/// Exit status: success.
pub const EXIT_OK: i32 = 0;
/// Exit status: the command ran and its answer is "no".
pub const EXIT_NO: i32 = 1;
/// Exit status: rejected input, I/O or usage error.
pub const EXIT_ERROR: i32 = 2;
/// Exit status: interrupted by SIGINT (128 + 2, the shell convention).
pub const EXIT_INTERRUPTED: i32 = 130;

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
            | Error::Import(_)
            | Error::Listen { .. }
            | Error::Compare(_)
            | Error::Preflight(_)
            | Error::Spool(_)
            | Error::Runtime(_)
            | Error::Merge(_) => EXIT_ERROR,
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
                "rejected: {path} is over the limit of {limit} bytes \
                 (raise it with --max-bytes or {})",
                goodput_core::trace::Limits::BYTES_VARIABLE
            ),
            other => other.to_string(),
        }
    }
}
