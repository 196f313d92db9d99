//! `goodput record`'s library half: run a validated [`Plan`] against an
//! OpenAI-compatible server and turn what happened into an honest
//! `goodput-trace/1` document. It returns data and prints nothing; the flags,
//! the progress line, the summary and the exit status are the command-line
//! layer's (`cli::record`).
//!
//! Data flow:
//!
//! ```text
//! Plan ─▶ schedule (pure, from the seed) ─▶ runner (one event loop, pacer)
//!      ─▶ client (the network seam) ─▶ exchange + sse (one request's ending)
//!      ─▶ row (one trace row) ─▶ build_trace (document, `trace::write`)
//!      ─▶ summary (figures)
//! ```
//!
//! Honesty rules: arrivals are scheduled instants and latency counts from
//! them; every scheduled request becomes exactly one row (failures are rows;
//! unfinished work is `in_flight`); the API key, header values and prompts
//! never reach the trace; the trace is written atomically, also after Ctrl-C.
//!
//! Reaching real servers (`https://`, headers, `--extra-body`, the
//! preflight, the server's error text on failed rows) lives in
//! [`endpoint`], [`tls`], [`headers`], [`extra_body`], [`preflight`] and
//! [`error_text`].

pub mod error;
pub mod exchange;
pub mod output;
pub mod run;
pub mod schedule;
pub mod scrape;
pub mod transport;
pub mod workload;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use hyper::Uri;

use goodput_core::trace::write::{TraceDoc, TraceRow};
use goodput_core::trace::{Equality, Gates, Labels, Phase, Resources};

use self::error::RecordError;
use self::output::frame::{Frame, PromptMeta, ShardTag, Stop};
use self::run::{Collector, Counters, Interrupt, Load, RunConfig, RunOutcome};
use self::transport::client::Transport;
use self::transport::endpoint::Endpoint;

/// A validated recording plan.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The endpoint.
    pub uri: Uri,
    /// The run configuration.
    pub run: RunConfig,
    /// Warm-up length, ms (the window starts there).
    pub warmup_ms: f64,
    /// SLO classes.
    pub classes: BTreeMap<String, Gates>,
    /// The default class (the first declared).
    pub default_class: String,
    /// The equality rule.
    pub equality: Equality,
    /// `workload` labels known before the run.
    pub workload: Labels,
    /// The phases of a phased schedule (empty: one rate throughout).
    pub phases: Vec<Phase>,
    /// The GPUs behind the endpoint and their price, when declared.
    pub resources: Option<Resources>,
    /// The output path.
    pub out: PathBuf,
    /// How the server is reached (TLS, headers, the API key, secrets).
    pub endpoint: Endpoint,
    /// Whether to probe the server before the schedule starts.
    pub preflight: bool,
    /// This recording is one shard of a shared schedule (`--shard K/N`):
    /// its load holds only that shard's requests.
    pub shard: Option<ShardTag>,
    /// t0 is this wall-clock instant, ms since the Unix epoch (`--start-at`),
    /// shared by every shard; `None`: a few ms after the start.
    pub start_at_unix_ms: Option<f64>,
    /// Where to scrape server metrics while the run lasts (`--metrics`).
    pub metrics: Option<scrape::MetricsPlan>,
}

/// A finished run with what was scraped beside it.
#[derive(Debug)]
pub struct Recording {
    /// The run.
    pub outcome: RunOutcome,
    /// One line per scrape (with `--metrics`), in order.
    pub metrics: Option<Vec<goodput_core::server_metrics::MetricsLine>>,
}

/// The sidecar's path for a trace at `out`: `t.json` → `t.metrics.jsonl`.
pub fn metrics_sidecar_path(out: &std::path::Path) -> PathBuf {
    out.with_extension("metrics.jsonl")
}

impl Plan {
    /// Whether arrivals follow the schedule (open loop) rather than the
    /// previous request's end (closed loop).
    pub fn open_loop(&self) -> bool {
        matches!(self.run.load, Load::Open { .. } | Load::Sessions { .. })
    }

    /// When observation stops, ms since t0: the window end plus the grace.
    pub fn horizon_ms(&self) -> f64 {
        self.run.window_end_ms + self.run.grace_ms
    }

    /// The stretch of the run an instant (ms since t0) falls in: warm-up
    /// before the window, the window, then the grace period to the horizon.
    pub fn stage_at(&self, elapsed_ms: f64) -> Stage {
        Stage::at(self.warmup_ms, self.run.window_end_ms, elapsed_ms)
    }
}

/// The stretch of one recording a progress sample falls in. (The cooldown
/// between the points of a sweep or capacity search is the caller's own.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Before the window: requests are sent but excluded from the cohort.
    Warmup,
    /// The measured window: arrivals here form the cohort.
    Window,
    /// After the last arrival: waiting for the cohort to finish, up to the horizon.
    Grace,
}

impl Stage {
    /// The stage of instant `t_ms` in a run whose window is `[start_ms, end_ms)`.
    pub fn at(start_ms: f64, end_ms: f64, t_ms: f64) -> Stage {
        if t_ms < start_ms {
            Stage::Warmup
        } else if t_ms < end_ms {
            Stage::Window
        } else {
            Stage::Grace
        }
    }

    /// The stage's name for people.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Warmup => "warm-up",
            Self::Window => "window",
            Self::Grace => "grace",
        }
    }
}

/// What one recording wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Rows in the trace.
    pub rows: usize,
    /// Bytes of the trace.
    pub bytes: usize,
}

/// One sample of a run's live counters, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Seconds since the run's t0.
    pub elapsed_s: f64,
    /// The stretch of the run `elapsed_s` falls in.
    pub stage: Stage,
    /// Seconds left to the horizon (an upper bound: a run whose requests
    /// have all ended before it stops earlier).
    pub remaining_s: f64,
    /// Requests handed to the transport.
    pub sent: u64,
    /// Requests completed.
    pub completed: u64,
    /// Requests failed.
    pub failed: u64,
    /// Send lag of the latest request, ms.
    pub send_lag_ms: f64,
}

/// Where progress samples go while a run lasts (every 250 ms); called once
/// with `None` when the run has ended, so a display can clear itself.
pub type ProgressSink = Arc<dyn Fn(Option<Progress>) + Send + Sync>;

/// Turns a finished run into the trace document (pure).
pub fn build_trace(plan: &Plan, outcome: &RunOutcome) -> TraceDoc {
    let frame = Frame::of(plan);
    let tokens = output::row::token_mode(
        outcome
            .results
            .iter()
            .flatten()
            .map(|f| (&f.obs, &f.ending)),
    );
    let rows: Vec<TraceRow> = outcome
        .results
        .iter()
        .enumerate()
        .map(|(index, slot)| match slot {
            Some(f) => frame.ended_row(index, f, tokens),
            None => frame.unsent_row(
                index,
                outcome.arrivals_ms.get(index).copied().unwrap_or(0.0),
                &PromptMeta::of_request(&plan.run.prompts, index),
            ),
        })
        .collect();
    frame.document(&Stop::of(outcome), tokens, rows)
}

/// Runs a plan against a transport, with `interrupt` as the Ctrl-C signal.
/// Builds its own runtime; returns the outcome with every result in memory
/// (used by the tests).
pub fn execute<T: Transport>(
    plan: &Plan,
    transport: T,
    interrupt: impl FnOnce() -> Interrupt,
    progress: Option<ProgressSink>,
) -> Result<Recording, RecordError> {
    let mut results: Vec<Option<run::Finished>> = Vec::new();
    let mut recording = execute_into(plan, transport, interrupt, progress, &mut results)?;
    results.resize_with(recording.outcome.rows, || None);
    recording.outcome.results = results;
    Ok(recording)
}

/// [`execute`], handing each ending to `collector` as it comes (the spool).
pub fn execute_into<T: Transport>(
    plan: &Plan,
    transport: T,
    interrupt: impl FnOnce() -> Interrupt,
    progress: Option<ProgressSink>,
    collector: &mut dyn Collector,
) -> Result<Recording, RecordError> {
    // One thread runs every connection, the schedule and the spool: an
    // event loop, like each of wrk's threads. tokio's work-stealing pool
    // cost a third more CPU per streamed token here (its idle workers are
    // woken for each new task and park again), and more threads than cores
    // beside a server on the same machine only add scheduling delay to the
    // send instants. Past one core's worth of streams, run shards
    // (`--shard K/N`), on one machine or many.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RecordError::Runtime)?;
    let counters = Arc::new(Counters::default());
    let config = Arc::new(plan.run.clone());
    let transport = Arc::new(transport);
    let scraped = Arc::new(std::sync::Mutex::new(Vec::new()));
    let scraper = match &plan.metrics {
        Some(m) => Some((m.clone(), m.transport(&plan.endpoint)?)),
        None => None,
    };
    let mut start_late_ms = None;
    let mut outcome = runtime.block_on(async {
        let t0 = match plan.start_at_unix_ms {
            Some(start) => {
                let (t0, late) = anchor(start);
                start_late_ms = Some(late);
                t0
            }
            None => tokio::time::Instant::now() + Duration::from_millis(5),
        };
        let ticker = progress.clone().map(|sink| {
            tokio::spawn(sample_progress(
                counters.clone(),
                t0,
                (plan.warmup_ms, plan.run.window_end_ms, plan.horizon_ms()),
                sink,
            ))
        });
        let (stop_scraping, stop) = tokio::sync::watch::channel(false);
        let scraper = scraper.map(|(m, transport)| {
            tokio::spawn(scrape::scrape_loop(m, transport, t0, scraped.clone(), stop))
        });
        let outcome = run::run_into(
            transport,
            config,
            t0,
            counters.clone(),
            interrupt(),
            collector,
        )
        .await;
        if let Some(task) = scraper {
            let _ = stop_scraping.send(true);
            // A scrape in progress ends within its timeout; do not wait longer.
            if tokio::time::timeout(Duration::from_secs(1), task)
                .await
                .is_err()
            {
                // Still blocked: the runtime's shutdown drops it.
            }
        }
        if let Some(t) = ticker {
            t.abort();
            if let Some(sink) = &progress {
                sink(None);
            }
        }
        (outcome, t0)
    });
    if let (Some(start), Some(late)) = (plan.start_at_unix_ms, start_late_ms) {
        let mono_ms = tokio::time::Instant::now()
            .saturating_duration_since(outcome.1)
            .as_secs_f64()
            * 1000.0;
        let offset_ms = (unix_ms_now() - start) - mono_ms;
        outcome.0.shard_clock = Some(run::ShardClock {
            offset_ms,
            skew_ppm: if mono_ms > 0.0 {
                offset_ms / mono_ms * 1e6
            } else {
                0.0
            },
            start_late_ms: late,
        });
    }
    let outcome = outcome.0;
    // Requests still draining a body after cancellation are dropped here.
    runtime.shutdown_timeout(Duration::from_millis(200));
    let metrics = plan.metrics.as_ref().map(|_| {
        std::mem::take(
            &mut *scraped
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
    });
    Ok(Recording { outcome, metrics })
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
fn anchor(start_unix_ms: f64) -> (tokio::time::Instant, f64) {
    let mono = tokio::time::Instant::now();
    let late_ms = unix_ms_now() - start_unix_ms;
    let gap = Duration::from_secs_f64(late_ms.abs() / 1000.0);
    let t0 = if late_ms <= 0.0 {
        mono + gap
    } else {
        mono.checked_sub(gap).unwrap_or(mono)
    };
    (t0, late_ms)
}

/// Samples the live counters every 250 ms into `sink`. `times` are the
/// window start, window end and horizon, ms since `t0` (as [`Plan::stage_at`]).
async fn sample_progress(
    counters: Arc<Counters>,
    t0: tokio::time::Instant,
    times: (f64, f64, f64),
    sink: ProgressSink,
) {
    let (start_ms, end_ms, horizon_ms) = times;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tick.tick().await;
        let elapsed_s = tokio::time::Instant::now()
            .saturating_duration_since(t0)
            .as_secs_f64();
        let elapsed_ms = elapsed_s * 1000.0;
        sink(Some(Progress {
            elapsed_s,
            stage: Stage::at(start_ms, end_ms, elapsed_ms),
            remaining_s: ((horizon_ms - elapsed_ms) / 1000.0).max(0.0),
            sent: counters.sent.load(Ordering::Relaxed),
            completed: counters.completed.load(Ordering::Relaxed),
            failed: counters.failed.load(Ordering::Relaxed),
            send_lag_ms: counters.last_lag_us.load(Ordering::Relaxed) as f64 / 1000.0,
        }));
    }
}

/// Runs a validated plan against the real network, with Ctrl-C as the
/// interrupt: scheduling stops, unfinished requests are kept (they become
/// `in_flight` rows) and the outcome says when it was interrupted. Every
/// ending goes to `collector` as it comes (`record` spools them). A single
/// `record` and every point of a rate sweep go through here.
pub fn record(
    plan: &Plan,
    progress: Option<ProgressSink>,
    collector: &mut dyn Collector,
) -> Result<Recording, RecordError> {
    let transport = plan.endpoint.transport(plan.uri.clone())?;
    let retries = transport.retries();
    let mut recording = execute_into(
        plan,
        transport,
        || {
            Box::pin(async {
                if tokio::signal::ctrl_c().await.is_err() {
                    // No signal handling on this platform: never interrupt.
                    std::future::pending::<()>().await;
                }
            })
        },
        progress,
        collector,
    )?;
    recording.outcome.keep_alive_retries = retries.load(Ordering::Relaxed);
    Ok(recording)
}

/// The preflight of [`preflight`] for a plan (nothing when `--no-preflight`):
/// its own transport and runtime, the run's headers, key and TLS settings.
/// A server that cannot serve the run is [`RecordError::Preflight`], before any
/// request of the run is sent and before any trace is written.
pub fn preflight(plan: &Plan) -> Result<(), RecordError> {
    if !plan.preflight {
        return Ok(());
    }
    let transport = plan.endpoint.transport(plan.uri.clone())?;
    let mut template = plan.run.template.clone();
    if template.max_tokens.is_some() || !template.extra.has("max_tokens") {
        template.max_tokens = Some(1);
    }
    template.ignore_eos = false;
    let wait = plan
        .run
        .timeout
        .min(transport::preflight::PREFLIGHT_TIMEOUT);
    transport::preflight::check_blocking(
        &transport,
        template.body("Hello"),
        &plan.endpoint.secrets,
        wait,
    )
    .map_err(RecordError::Preflight)
}

#[cfg(test)]
mod tests {
    use super::Stage;

    #[test]
    fn stages_split_at_the_window_start_and_end() {
        // Window [2000, 12000): before it warm-up, in it window, after it grace.
        assert_eq!(Stage::at(2000.0, 12_000.0, 0.0), Stage::Warmup);
        assert_eq!(Stage::at(2000.0, 12_000.0, 1999.9), Stage::Warmup);
        assert_eq!(Stage::at(2000.0, 12_000.0, 2000.0), Stage::Window);
        assert_eq!(Stage::at(2000.0, 12_000.0, 11_999.9), Stage::Window);
        assert_eq!(Stage::at(2000.0, 12_000.0, 12_000.0), Stage::Grace);
        // No warm-up: the window starts at once.
        assert_eq!(Stage::at(0.0, 10_000.0, 0.0), Stage::Window);
        assert_eq!(Stage::Grace.as_str(), "grace");
    }
}
