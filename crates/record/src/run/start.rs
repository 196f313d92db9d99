//! Where a run's t0 sits: a few ms after the start, or at a wall-clock
//! instant shared by every shard (`--start-at`), and how far the shard's
//! clocks drifted from that instant by the end ([`ShardClock`]).

use std::time::Duration;

use tokio::time::Instant;

use crate::run::ShardClock;

/// The run's t0: the monotonic instant at which the wall clock reads
/// `start_at_unix_ms` (ms since the Unix epoch) and how late this process is
/// for it (ms; negative = early); without one, 5 ms from now (so request 0
/// is not born late) and no lateness.
pub(crate) fn place_t0(start_at_unix_ms: Option<f64>) -> (Instant, Option<f64>) {
    match start_at_unix_ms {
        Some(start) => {
            let (t0, late) = anchor(start);
            (t0, Some(late))
        }
        None => (Instant::now() + Duration::from_millis(5), None),
    }
}

/// A shard's clock figures at the end of a run whose t0 was placed at
/// `start_unix_ms`, `start_late_ms` late.
pub(crate) fn shard_clock(start_unix_ms: f64, start_late_ms: f64, t0: Instant) -> ShardClock {
    let mono_ms = Instant::now().saturating_duration_since(t0).as_secs_f64() * 1000.0;
    let offset_ms = (unix_ms_now() - start_unix_ms) - mono_ms;
    ShardClock {
        offset_ms,
        skew_ppm: if mono_ms > 0.0 {
            offset_ms / mono_ms * 1e6
        } else {
            0.0
        },
        start_late_ms,
    }
}

/// The wall clock, ms since the Unix epoch.
fn unix_ms_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// The monotonic instant at which the wall clock reads `start_unix_ms`, and
/// how late (ms; negative = early) this process is for it. A late start puts
/// t0 in the past: the schedule is not shifted, and the overdue requests
/// leave at once, each with its send lag.
fn anchor(start_unix_ms: f64) -> (Instant, f64) {
    let mono = Instant::now();
    let late_ms = unix_ms_now() - start_unix_ms;
    let gap = Duration::from_secs_f64(late_ms.abs() / 1000.0);
    let t0 = if late_ms <= 0.0 {
        mono + gap
    } else {
        mono.checked_sub(gap).unwrap_or(mono)
    };
    (t0, late_ms)
}
