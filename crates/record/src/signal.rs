//! The signals that end a recording: SIGINT (Ctrl-C), SIGTERM (what
//! Kubernetes, systemd and `docker stop` send) and SIGHUP (the terminal
//! went away). Each stops a run the same way — scheduling stops, unfinished
//! requests become `in_flight`, the trace is written — and says which one
//! it was, so the command line can exit with 128 + its number.
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
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).ok();
        let mut hup = signal(SignalKind::hangup()).ok();
        let mut int = signal(SignalKind::interrupt()).ok();
        tokio::select! {
            Some(()) = recv(&mut int) => StopSignal::Interrupt,
            Some(()) = recv(&mut term) => StopSignal::Terminate,
            Some(()) = recv(&mut hup) => StopSignal::Hangup,
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

/// The next delivery of `signal`, or `None` when it has no handler.
#[cfg(unix)]
async fn recv(signal: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match signal {
        Some(s) => s.recv().await,
        None => None,
    }
}
