//! Why an import failed: one line naming the place in the source file (its
//! own file, so the command error can carry it without importing the
//! importers).

/// Why an import failed. Every variant names the place in the source file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// A problem at a JSON pointer, a line, or a line and a pointer.
    #[error("{place}: {message}")]
    At {
        /// `/benchmarks/0/requests`, `line 7`, `line 7 /metrics/x/unit`, `line 2, column 9`.
        place: String,
        /// What is wrong there.
        message: String,
    },
    /// A problem with the file as a whole.
    #[error("{0}")]
    Whole(String),
}

impl ImportError {
    /// An error at `place`.
    pub fn at(place: impl Into<String>, message: impl Into<String>) -> Self {
        let place = place.into();
        let message = message.into();
        if place.is_empty() {
            ImportError::Whole(message)
        } else {
            ImportError::At { place, message }
        }
    }
}
