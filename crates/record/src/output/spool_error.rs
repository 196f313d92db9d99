//! Why a spool could not be written or read: its own file, so the crate's
//! error type can name it without depending on the spool itself.

use std::io;

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
