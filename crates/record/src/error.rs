//! Why a recording (or the recovery of one) ended without a trace: the
//! recorder's own error types ([`RecordError`], and [`SpoolError`] for the
//! spool, kept here so the error types sit below everything that fails).
//! The command line maps each kind to its message and exit status; nothing
//! here is a "usage" error, since the flags were checked before a plan
//! existed.

use std::io;

use crate::transport::client::TransportError;
use crate::transport::preflight::PreflightError;

/// Why a recording could not run or could not be written.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The event loop could not start (the system refused a thread, an
    /// epoll instance or a timer).
    #[error("cannot start the async runtime: {0}")]
    Runtime(io::Error),
    /// The client for the server (or for its metrics) could not be built
    /// from the plan's settings.
    #[error("{0}")]
    Transport(#[from] TransportError),
    /// The preflight found the server unusable; nothing was recorded.
    #[error("preflight: {0}")]
    Preflight(#[from] PreflightError),
    /// The spool could not be written or read.
    #[error("spool: {0}")]
    Spool(#[from] SpoolError),
    /// The trace could not be written.
    #[error("cannot write {path}: {source}")]
    Write {
        /// Where.
        path: String,
        /// Why.
        source: io::Error,
    },
}

/// Why a spool could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// The file system refused.
    #[error("{path}: {source}")]
    Io {
        /// The spool.
        path: String,
        /// Why.
        source: io::Error,
    },
    /// A spool is already there: an earlier run's, perhaps one that died.
    #[error("{path} already exists (an earlier run's spool: recover it with `goodput record --recover {path} --out TRACE`, or remove it)")]
    Exists {
        /// The spool.
        path: String,
    },
    /// A line is not what the format says.
    #[error("{path}:{line}: {message}")]
    Bad {
        /// The spool.
        path: String,
        /// 1-based line.
        line: usize,
        /// What is wrong.
        message: String,
    },
}
