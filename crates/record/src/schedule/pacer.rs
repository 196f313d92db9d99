//! Waiting for an instant of the schedule with microsecond precision, inside
//! the event loop.
//!
//! tokio's timer wheel ticks once a millisecond: right for timeouts, too
//! coarse for an open-loop schedule whose gaps are tens of microseconds at
//! 10,000 requests/s. The recorder used to keep a thread of its own for the
//! schedule, sleeping on an OS timer and handing each request over to the
//! runtime. At high rates those hand-overs cost two wake-ups a request (the
//! thread's, then the runtime's), about a sixth of the recorder's CPU on a
//! two-core machine, and the extra thread competed with the event loop for
//! a core.
//!
//! On Linux a [`Pacer`] is a `timerfd` registered with the event loop like a
//! socket: the loop wakes on it (or notices it between tasks when busy) and
//! spawns the request on its own thread; the timer is an hrtimer without
//! slack, precise to the kernel's timer resolution. Where `timerfd` is
//! missing (other systems, or a kernel that refuses it) the pacer falls back
//! to tokio's timer, precise to about a millisecond; every request's
//! `sendLagMs` shows what that costs, and latency still counts from the
//! scheduled instant either way.

use tokio::time::Instant;

/// Sleeps until instants of the schedule; one per dispatching task.
#[derive(Debug)]
pub struct Pacer {
    #[cfg(target_os = "linux")]
    timer: Option<linux::TimerFd>,
}

impl Pacer {
    /// A pacer on the current runtime (which must have I/O enabled).
    pub fn new() -> Pacer {
        Pacer {
            #[cfg(target_os = "linux")]
            timer: linux::TimerFd::new().ok(),
        }
    }

    /// Whether the pacer has the precise timer (not tokio's 1 ms wheel).
    pub fn is_precise(&self) -> bool {
        #[cfg(target_os = "linux")]
        return self.timer.is_some();
        #[cfg(not(target_os = "linux"))]
        return false;
    }

    /// Returns at `due` or just after; at once when it has passed.
    pub async fn sleep_until(&self, due: Instant) {
        #[cfg(target_os = "linux")]
        if let Some(timer) = &self.timer {
            if timer.sleep_until(due.into_std()).await.is_ok() {
                return;
            }
        }
        tokio::time::sleep_until(due).await;
    }
}

impl Default for Pacer {
    fn default() -> Self {
        Pacer::new()
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::time::Instant;

    use tokio::io::unix::AsyncFd;

    /// A non-blocking monotonic `timerfd` watched by the event loop.
    #[derive(Debug)]
    pub struct TimerFd(AsyncFd<OwnedFd>);

    impl TimerFd {
        pub fn new() -> io::Result<TimerFd> {
            // SAFETY: timerfd_create takes two integers and returns a new
            // descriptor or -1.
            let fd = unsafe {
                libc::timerfd_create(
                    libc::CLOCK_MONOTONIC,
                    libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
                )
            };
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `fd` was just created and is owned by nothing else.
            let owned = unsafe { OwnedFd::from_raw_fd(fd) };
            // SAFETY: the `OwnedFd` is a valid descriptor, and nothing
            // replaces or closes it while the `AsyncFd` owns it.
            Ok(TimerFd(unsafe { AsyncFd::register(owned)? }))
        }

        /// Arms the timer for `due` (relative to now: std's `Instant` is
        /// CLOCK_MONOTONIC on Linux) and waits for it to expire.
        pub async fn sleep_until(&self, due: Instant) -> io::Result<()> {
            let left = due.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(());
            }
            let spec = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: left.as_secs() as libc::time_t,
                    tv_nsec: left.subsec_nanos() as libc::c_long,
                },
            };
            let fd = self.0.get_ref().as_raw_fd();
            // SAFETY: `fd` is a timerfd we own; `spec` is a valid itimerspec
            // and the old value is not asked for. Setting the timer also
            // resets its expiration count, so an expiry left over from a
            // sleep that was cancelled cannot end this one.
            if unsafe { libc::timerfd_settime(fd, 0, &spec, std::ptr::null_mut()) } != 0 {
                return Err(io::Error::last_os_error());
            }
            loop {
                let mut ready = self.0.readable().await?;
                let mut expirations: u64 = 0;
                // SAFETY: reads 8 bytes into a u64 we own.
                let n = unsafe {
                    libc::read(
                        fd,
                        std::ptr::addr_of_mut!(expirations).cast(),
                        std::mem::size_of::<u64>(),
                    )
                };
                if n == 8 {
                    return Ok(());
                }
                let error = io::Error::last_os_error();
                if error.kind() != io::ErrorKind::WouldBlock {
                    return Err(error);
                }
                // Readiness left over from an earlier, cancelled sleep.
                ready.clear_ready();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_pacer_never_wakes_early_and_is_precise_on_linux() {
        let pacer = Pacer::new();
        #[cfg(target_os = "linux")]
        assert!(pacer.is_precise(), "timerfd is available on Linux");
        for _ in 0..50 {
            let due = Instant::now() + Duration::from_micros(300);
            pacer.sleep_until(due).await;
            assert!(Instant::now() >= due, "never early");
        }
    }

    #[tokio::test]
    async fn a_cancelled_sleep_does_not_end_the_next_one_early() {
        let pacer = Pacer::new();
        // Arm for 1 ms, give up after 0.1 ms (the expiry stays behind).
        let first = Instant::now() + Duration::from_millis(1);
        let _ = tokio::time::timeout(Duration::from_micros(100), pacer.sleep_until(first)).await;
        tokio::time::sleep(Duration::from_millis(3)).await;
        let due = Instant::now() + Duration::from_millis(20);
        pacer.sleep_until(due).await;
        assert!(Instant::now() >= due);
    }

    #[tokio::test]
    async fn an_instant_in_the_past_returns_at_once() {
        let pacer = Pacer::new();
        let started = std::time::Instant::now();
        pacer
            .sleep_until(Instant::now() - Duration::from_millis(5))
            .await;
        assert!(started.elapsed() < Duration::from_millis(50));
    }
}
