//! Exit statuses, and the one place that maps every [`Error`] a command can
//! end with to the line printed on standard error and the status it exits
//! with.
//!
//! | status | meaning |
//! |---|---|
//! | 0 | done: a receipt was produced (or the check/gate passed) |
//! | 1 | done, and the answer is "no" (a later command's refusal or mismatch) |
//! | 2 | input rejected, unreadable, unwritable, or a usage error |
//! | 130 | interrupted by SIGINT (Ctrl-C); `record` still wrote its trace |
//! | 143 | interrupted by SIGTERM (`kill`, Kubernetes, `docker stop`); likewise |
//! | 129 | interrupted by SIGHUP (the terminal closed); likewise |
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

/// Exit status of a run interrupted by `signal`: 128 + its number, as a
/// shell reports a process the signal killed (SIGINT 130, SIGTERM 143,
/// SIGHUP 129), though the trace was written.
pub fn exit_for(signal: goodput_record::signal::StopSignal) -> i32 {
    match signal {
        goodput_record::signal::StopSignal::Interrupt => EXIT_INTERRUPTED,
        other => 128 + other.number(),
    }
}

impl Error {
    /// The exit status for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Rejected(_)
            | Error::Read(_)
            | Error::Write { .. }
            | Error::Output { .. }
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
            | Error::Merge(_)
            | Error::Sidecar { .. }
            | Error::Quality(_)
            | Error::SpoolFailed { .. } => EXIT_ERROR,
            Error::SpoolKept { cause, .. } => cause.exit_code(),
            Error::Interrupted { signal, .. } | Error::InterruptedSweep { signal, .. } => {
                exit_for(*signal)
            }
        }
    }

    /// The one line printed on standard error. It may quote the trace (an
    /// unknown class, a pointer to a key, a server's error text), so any
    /// control or bidi character left in it is shown escaped, never sent to
    /// the terminal raw.
    pub fn message(&self) -> String {
        let line = self.unescaped_message();
        goodput_util::escape::terminal_lines(&line).into_owned()
    }

    fn unescaped_message(&self) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_record::signal::StopSignal;

    fn interrupted(signal: StopSignal) -> Error {
        Error::Interrupted {
            path: "t.json".into(),
            rows: 3,
            drained: false,
            signal,
        }
    }

    #[test]
    fn each_signal_exits_with_128_plus_its_number_and_names_itself() {
        let cases = [
            (StopSignal::Interrupt, 130, "interrupted: wrote 3 rows"),
            (
                StopSignal::Terminate,
                143,
                "interrupted by SIGTERM: wrote 3 rows",
            ),
            (
                StopSignal::Hangup,
                129,
                "interrupted by SIGHUP: wrote 3 rows",
            ),
        ];
        for (signal, code, message) in cases {
            let e = interrupted(signal);
            assert_eq!(e.exit_code(), code);
            assert_eq!(
                e.message(),
                format!("{message} to t.json (unfinished requests are in_flight)")
            );
            let sweep = Error::InterruptedSweep {
                written: vec![],
                signal,
            };
            assert_eq!(sweep.exit_code(), code);
        }
    }

    #[test]
    fn a_trace_that_cannot_be_written_after_the_run_keeps_the_spool_and_says_how_to_recover() {
        let e = Error::SpoolKept {
            spool: "t.json.spool".into(),
            cause: Box::new(Error::Write {
                path: "t.json".into(),
                source: std::io::Error::from_raw_os_error(28),
            }),
        };
        assert_eq!(e.exit_code(), EXIT_ERROR);
        assert_eq!(
            e.message(),
            "cannot write t.json: No space left on device (os error 28); the run's spool \
             t.json.spool is kept: recover its trace with \
             `goodput record --recover t.json.spool --out TRACE`"
        );
    }
}
