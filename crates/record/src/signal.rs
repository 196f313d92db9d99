//! The signals that end a recording: SIGINT (Ctrl-C), SIGTERM (what
//! Kubernetes, systemd and `docker stop` send) and SIGHUP (the terminal
//! went away). SIGTERM and SIGHUP stop a run at once — scheduling stops,
//! unfinished requests become `in_flight`, the trace is written; a first
//! SIGINT only stops the sending and lets what is in flight finish, a
//! second one (or a SIGTERM, SIGHUP after it) cuts as the others do. The
//! recording says which signal came first, so the command line can exit
//! with 128 + its number.
//!
//! Once a handler is installed here the signal never again has its default
//! disposition in this process (tokio keeps its handler), so every wait for
//! the end of a recording (a run, a sweep's cooldown) goes through [`wait`].
//! That is also why the recorder stops on SIGTERM as a container's PID 1:
//! the kernel drops only signals left at their default disposition there.

/// A signal that ended a recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopSignal {
    /// SIGINT: Ctrl-C.
    Interrupt,
    /// SIGTERM: a polite kill (Kubernetes, systemd, `docker stop`).
    Terminate,
    /// SIGHUP: the controlling terminal closed.
    Hangup,
}

impl StopSignal {
    /// Its name, as `kill -l` spells it with the prefix.
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Interrupt => "SIGINT",
            StopSignal::Terminate => "SIGTERM",
            StopSignal::Hangup => "SIGHUP",
        }
    }

    /// Its number on Linux and the BSDs (the exit status is 128 + it).
    pub fn number(self) -> i32 {
        match self {
            StopSignal::Interrupt => 2,
            StopSignal::Terminate => 15,
            StopSignal::Hangup => 1,
        }
    }
}

/// Resolves at the first SIGINT, SIGTERM or SIGHUP, saying which; a signal
/// whose handler cannot be installed is never waited for (and one that
/// cannot be installed at all leaves this pending forever). Must run inside
/// a tokio runtime with signals enabled.
pub async fn wait() -> StopSignal {
    Signals::new().next().await
}

/// The three signals' handlers, installed once, so that signals delivered
/// one after the other (Ctrl-C twice) are each seen.
pub struct Signals {
    #[cfg(unix)]
    int: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    term: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    hup: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    /// Installs the handlers (inside a tokio runtime with signals enabled).
    pub fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            Signals {
                int: signal(SignalKind::interrupt()).ok(),
                term: signal(SignalKind::terminate()).ok(),
                hup: signal(SignalKind::hangup()).ok(),
            }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The next signal delivered, saying which (pending forever when none
    /// has a handler).
    pub async fn next(&mut self) -> StopSignal {
        #[cfg(unix)]
        {
            tokio::select! {
                Some(()) = recv(&mut self.int) => StopSignal::Interrupt,
                Some(()) = recv(&mut self.term) => StopSignal::Terminate,
                Some(()) = recv(&mut self.hup) => StopSignal::Hangup,
                else => std::future::pending().await,
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
            StopSignal::Interrupt
        }
    }
}

impl Default for Signals {
    fn default() -> Self {
        Signals::new()
    }
}

/// The next delivery of `signal`, or `None` when it has no handler.
#[cfg(unix)]
async fn recv(signal: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match signal {
        Some(s) => s.recv().await,
        None => None,
    }
}
