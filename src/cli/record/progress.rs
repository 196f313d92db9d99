//! The progress display of `goodput record` (indicatif), on standard error
//! and only when it is a terminal (and `--no-progress` is not given): the
//! stage of the run (warm-up, window, grace, or the cooldown between
//! points), which point of a sweep or capacity search it is, the time
//! elapsed and left, and how many requests were sent, completed and failed.
//! The library only reports samples ([`goodput_record::Progress`]); all the
//! drawing is here. The display is erased when the run ends, so the summary
//! on standard output reads the same with or without it.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use goodput_record::{Plan, Progress, ProgressSink};

/// Whether a display is wanted: standard error is a terminal and the user
/// did not say `--no-progress`.
pub fn wanted(no_progress: bool) -> bool {
    !no_progress && std::io::stderr().is_terminal()
}

/// What the display calls the recording in hand.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Point {
    /// A single `record`.
    Single,
    /// Point `k` (1-based) of a sweep of `n`.
    Sweep { k: usize, n: usize },
    /// Point `k` (1-based) of a capacity search of at most `max` points.
    Search { k: usize, max: usize },
}

impl Point {
    /// `point 2 of 5 · `, `point 3 of at most 12 · `, or nothing.
    fn prefix(&self) -> String {
        match *self {
            Point::Single => String::new(),
            Point::Sweep { k, n } => format!("point {k} of {n} · "),
            Point::Search { k, max } => format!("point {k} of at most {max} · "),
        }
    }
}

/// `m:ss` (or `h:mm:ss`) for a number of seconds, rounded down.
pub fn clock(seconds: f64) -> String {
    let s = if seconds.is_finite() && seconds > 0.0 {
        seconds as u64
    } else {
        0
    };
    let (h, m, s) = (s / 3600, s / 60 % 60, s % 60);
    if h > 0 {
        format!("{h}:{m:02}:{s:02}")
    } else {
        format!("{m}:{s:02}")
    }
}

/// The text of one sample (pure, so it is tested without a terminal).
pub fn message(point: &Point, p: &Progress) -> String {
    format!(
        "{}{} · {} elapsed, {} left · sent {}, completed {}, failed {}, in flight {} · send lag {:.1} ms",
        point.prefix(),
        p.stage.as_str(),
        clock(p.elapsed_s),
        clock(p.remaining_s.ceil()),
        p.sent,
        p.completed,
        p.failed,
        p.sent.saturating_sub(p.completed + p.failed),
        p.send_lag_ms
    )
}

/// The text of the cooldown before point `next` (pure).
pub fn cooldown_message(point: &Point, elapsed_s: f64, pause_s: f64) -> String {
    format!(
        "{}cooldown · {} elapsed, {} left",
        point.prefix(),
        clock(elapsed_s),
        clock((pause_s - elapsed_s).max(0.0).ceil())
    )
}

/// A bar of `total_ms` on standard error (hidden by indicatif itself when
/// standard error is not a terminal).
fn bar(total_ms: f64) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(
        Some(total_ms.max(1.0) as u64),
        ProgressDrawTarget::stderr_with_hz(4),
    );
    let style = ProgressStyle::with_template("[{bar:20}] {msg}")
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .progress_chars("=> ");
    bar.set_style(style);
    bar
}

/// The sink a recording reports its samples to: a bar over the run's time
/// to the horizon, with [`message`] beside it, erased when the run ends.
pub fn sink(plan: &Plan, point: Point) -> ProgressSink {
    let bar = bar(plan.horizon_ms());
    Arc::new(move |sample: Option<Progress>| match sample {
        Some(p) => {
            bar.set_position((p.elapsed_s * 1000.0) as u64);
            bar.set_message(message(&point, &p));
        }
        None => bar.finish_and_clear(),
    })
}

/// The display of a cooldown of `pause`: call [`Cooldown::at`] as time
/// passes; dropped, it erases itself.
pub struct Cooldown {
    bar: ProgressBar,
    point: Point,
    pause_s: f64,
}

impl Cooldown {
    /// A cooldown display before `point`.
    pub fn new(point: Point, pause: Duration) -> Cooldown {
        let pause_s = pause.as_secs_f64();
        let bar = bar(pause_s * 1000.0);
        bar.set_message(cooldown_message(&point, 0.0, pause_s));
        Cooldown {
            bar,
            point,
            pause_s,
        }
    }

    /// `elapsed` of the pause has passed.
    pub fn at(&self, elapsed: Duration) {
        let s = elapsed.as_secs_f64();
        self.bar.set_position((s * 1000.0) as u64);
        self.bar
            .set_message(cooldown_message(&self.point, s, self.pause_s));
    }
}

impl Drop for Cooldown {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_record::Stage;

    #[test]
    fn clocks_read_minutes_and_seconds() {
        assert_eq!(clock(0.0), "0:00");
        assert_eq!(clock(59.9), "0:59");
        assert_eq!(clock(61.0), "1:01");
        assert_eq!(clock(3725.0), "1:02:05");
        assert_eq!(clock(-3.0), "0:00");
        assert_eq!(clock(f64::NAN), "0:00");
    }

    #[test]
    fn a_sample_names_the_stage_point_times_and_counts() {
        let p = Progress {
            elapsed_s: 12.4,
            stage: Stage::Window,
            remaining_s: 7.6,
            sent: 480,
            completed: 300,
            failed: 2,
            send_lag_ms: 0.31,
        };
        // 12.4 s → 0:12; 7.6 s left rounds up to 0:08; in flight 480 − 302.
        assert_eq!(
            message(&Point::Sweep { k: 2, n: 5 }, &p),
            "point 2 of 5 · window · 0:12 elapsed, 0:08 left · sent 480, completed 300, \
             failed 2, in flight 178 · send lag 0.3 ms"
        );
        assert!(message(&Point::Single, &p).starts_with("window · 0:12"));
        assert!(message(&Point::Search { k: 3, max: 12 }, &p)
            .starts_with("point 3 of at most 12 · window"));
        assert_eq!(
            cooldown_message(&Point::Sweep { k: 3, n: 5 }, 1.5, 5.0),
            "point 3 of 5 · cooldown · 0:01 elapsed, 0:04 left"
        );
    }
}
