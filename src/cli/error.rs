//! Every way a command can end, as one typed error. Each library crate
//! returns its own error type; the commands convert them into this one
//! (`From` impls here), and [`crate::cli::exit`] maps each variant to the
//! line printed on standard error and to an exit status.

use goodput_core::trace::Rejection;
use goodput_record::signal::StopSignal;
use goodput_util::io::ReadError;

/// How an interrupt's message names its signal: nothing for SIGINT (the
/// message Ctrl-C has always printed), " by SIGTERM" and the like otherwise.
fn by_signal(signal: StopSignal) -> String {
    match signal {
        StopSignal::Interrupt => String::new(),
        other => format!(" by {}", other.name()),
    }
}

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
    /// An output path is not a regular file, or is one of the command's
    /// inputs (`what` names the flag: `--out`, `--svg`, "the spool").
    #[error("{what} {source}")]
    Output {
        /// The flag or file role, as the message starts.
        what: String,
        /// Why.
        source: goodput_util::io::OutputError,
    },
    /// A receipt given to `verify` cannot be used.
    #[error("cannot verify: {0}")]
    Receipt(#[from] goodput_core::review::verify::VerifyError),
    /// The mutation check could not run on this trace.
    #[error("cannot run the mutation check: {0}")]
    Mutate(goodput_core::review::mutate::MutateError),
    /// A flag or argument does not make sense.
    #[error("usage: {0}")]
    Usage(String),
    /// A signal (Ctrl-C's SIGINT, SIGTERM, SIGHUP) stopped `record`; the
    /// trace was still written. SIGINT's message names no signal (Ctrl-C is
    /// the user's own key); the others' name theirs.
    #[error(
        "interrupted{}: wrote {} to {path} ({})",
        by_signal(*signal),
        goodput_util::number::count(*rows as u64, "row"),
        if *drained {
            "sending stopped at the first Ctrl-C and what was in flight drained; a request still unfinished is in_flight"
        } else {
            "unfinished requests are in_flight"
        }
    )]
    Interrupted {
        /// Where the trace went.
        path: String,
        /// Rows written.
        rows: usize,
        /// The first Ctrl-C stopped the sending and what was in flight drained.
        drained: bool,
        /// Which signal (the exit status is 128 + its number).
        signal: StopSignal,
    },
    /// A spool write failed during the run (a full disk): sending stopped at
    /// once, and the spool written so far is kept for `record --recover`.
    #[error(
        "cannot write the spool {spool}: {source}; sending stopped at once and the spool \
         written so far is kept: recover it with `goodput record --recover {spool} --out TRACE`"
    )]
    SpoolFailed {
        /// The spool.
        spool: String,
        /// Why.
        source: std::io::Error,
    },
    /// The run ended but its trace (or metrics sidecar) could not be
    /// written: the spool, which holds the whole run and its end, is kept.
    #[error(
        "{cause}; the run's spool {spool} is kept: recover its trace with \
         `goodput record --recover {spool} --out TRACE`"
    )]
    SpoolKept {
        /// The spool.
        spool: String,
        /// What failed after the run.
        cause: Box<Error>,
    },
    /// One of several traces (`frontier`) was rejected; names which.
    #[error("rejected: {path}: {rejection}")]
    RejectedFile {
        /// The trace as named on the command line.
        path: String,
        /// The first problem.
        rejection: Rejection,
    },
    /// A signal stopped a `record` rate sweep (or capacity search) between
    /// two points; every trace written so far stays.
    #[error("interrupted{}: the rate sweep stopped after writing {}", by_signal(*signal), if written.is_empty() { "no trace".to_owned() } else { written.join(", ") })]
    InterruptedSweep {
        /// The traces written before the interrupt.
        written: Vec<String>,
        /// Which signal (the exit status is 128 + its number).
        signal: StopSignal,
    },
    /// `import` produced no trace: a file is not what `--from` says, or its
    /// trace was refused (the message names the place).
    #[error("{0}")]
    Import(#[from] goodput_import::PipelineError),
    /// `record`'s preflight found the server unusable; nothing was recorded.
    #[error("preflight: {0}")]
    Preflight(#[from] goodput_record::transport::preflight::PreflightError),
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
    Spool(#[from] goodput_record::error::SpoolError),
    /// The recorder's event loop could not start.
    #[error("{0}")]
    Runtime(goodput_record::error::RecordError),
    /// `merge` refuses the shards given (the message names the file).
    #[error("cannot merge: {0}")]
    Merge(#[from] goodput_core::merge::MergeError),
    /// `compare` refuses two runs judged under different contracts.
    #[error("cannot compare: {0}")]
    Compare(#[from] goodput_core::compare::CompareError),
    /// The `record --metrics` sidecar beside a trace is not that trace's
    /// (its sha256 differs from `workload.metricsSha256`) or does not read:
    /// the input's fault, not the command line's, so not a "usage:" error.
    #[error("server metrics sidecar {path}: {problem} (run again with --no-sidecar to leave the server panels out)")]
    Sidecar {
        /// The sidecar as found beside the trace.
        path: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A quality bank, sidecar, baseline or imported figure cannot be used:
    /// malformed (the message names the line and JSON pointer), of another
    /// bank, or a sidecar whose sha256 is not the trace's `quality.sha256`.
    #[error("rejected: {0}")]
    Quality(#[from] goodput_core::quality::QualityError),
}

/// The recorder's errors, each as the command line says it: a key that
/// cannot be a header value was given on the command line (or in its
/// variable), so it reads as a usage error; the rest keep their own kinds.
impl From<goodput_record::error::RecordError> for Error {
    fn from(e: goodput_record::error::RecordError) -> Error {
        use goodput_record::error::RecordError;
        match e {
            RecordError::Transport(t) => Error::Usage(t.to_string()),
            RecordError::Preflight(p) => Error::Preflight(p),
            RecordError::Spool(s) => Error::Spool(s),
            RecordError::Write { path, source } => Error::Write { path, source },
            runtime @ RecordError::Runtime(_) => Error::Runtime(runtime),
        }
    }
}
