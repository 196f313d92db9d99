//! What one recording will do: the validated [`Plan`] the command line
//! builds from its flags (endpoint, schedule, workload, gates, output), the
//! stretches of a run it defines ([`Stage`]), and the few things a run hands
//! back: the [`Recording`], what was [`Written`], and the [`Progress`]
//! samples shown while it lasts.
//!
//! Everything after it reads the plan: the schedule and workload it holds
//! are sent by `run`, and `output` turns its frame and the run's endings
//! into the trace.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use hyper::Uri;
use serde::{Deserialize, Serialize};

use goodput_core::trace::{Equality, Gates, Labels, Phase, Resources};

use crate::error::RecordError;
use crate::run::{Load, RunConfig, RunOutcome};
use crate::scrape::{MetricsPlan, WrittenSidecar};
use crate::transport::endpoint::Endpoint;

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
    /// `--model` was given; without it the preflight takes the one model
    /// `/v1/models` lists ([`Plan::adopt_model`]) before anything is sent.
    pub model_given: bool,
    /// This recording is one shard of a shared schedule (`--shard K/N`):
    /// its load holds only that shard's requests.
    pub shard: Option<ShardTag>,
    /// t0 is this wall-clock instant, ms since the Unix epoch (`--start-at`),
    /// shared by every shard; `None`: a few ms after the start.
    pub start_at_unix_ms: Option<f64>,
    /// Where to scrape server metrics while the run lasts (`--metrics`).
    pub metrics: Option<MetricsPlan>,
    /// The quality bank sent beside the load (`--quality-bank`).
    pub quality: Option<crate::quality::BankPlan>,
    /// Leave every row's `gapsMs` out of the trace (`--no-gaps`).
    pub no_gaps: bool,
}

/// A finished run with what was scraped beside it.
#[derive(Debug)]
pub struct Recording {
    /// The run.
    pub outcome: RunOutcome,
    /// The sidecar written beside the trace (with `--metrics`), or why it
    /// could not be: its lines went to disk as they came, none is held.
    pub metrics: Option<Result<WrittenSidecar, RecordError>>,
    /// The quality bank's lines, one per item, in bank order (with
    /// `--quality-bank`), or why the bank could not run.
    pub quality: Option<Result<Vec<goodput_core::quality::sidecar::ItemLine>, RecordError>>,
    /// The signal that interrupted the run ([`record`](crate::record) only;
    /// `None` when none did, or when the interrupt was the caller's own).
    pub signal: Option<crate::signal::StopSignal>,
}

/// The sidecar's path for a trace at `out`: `t.json` → `t.metrics.jsonl`.
pub fn metrics_sidecar_path(out: &Path) -> PathBuf {
    out.with_extension("metrics.jsonl")
}

/// The quality bank's sidecar path for a trace at `out`: `t.json` →
/// `t.quality.jsonl`.
pub fn quality_sidecar_path(out: &Path) -> PathBuf {
    out.with_extension("quality.jsonl")
}

impl Plan {
    /// Takes what the preflight found out about the model: the model
    /// `/v1/models` served alone goes into every request and the trace's
    /// `workload.model` (`modelFrom: "/v1/models"`); a `--model` that could
    /// not be checked is declared `modelChecked: false`, a listed one
    /// `modelChecked: true`.
    pub fn adopt_model(&mut self, check: &crate::transport::preflight::ModelCheck) {
        use crate::transport::preflight::ModelCheck;
        use goodput_core::trace::Scalar;
        let mut put = |k: &str, v: Scalar| {
            self.workload.insert(k.to_owned(), v);
        };
        match check {
            ModelCheck::Listed => put("modelChecked", Scalar::Bool(true)),
            ModelCheck::Unchecked(_) => put("modelChecked", Scalar::Bool(false)),
            ModelCheck::Taken(name) => {
                put("model", Scalar::String(name.clone()));
                put("modelFrom", Scalar::String("/v1/models".into()));
                put("modelChecked", Scalar::Bool(true));
                self.run.template.model = name.clone();
                if let Some(bank) = &mut self.quality {
                    bank.model = name.clone();
                }
                self.model_given = true;
            }
        }
    }

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

/// Which shard of a shared schedule a recording is (`record --shard K/N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardTag {
    /// K: this shard sends the requests `i` with `i mod count = index`.
    pub index: usize,
    /// N: how many shards share the schedule.
    pub count: usize,
}

impl ShardTag {
    /// The index in the whole schedule of this shard's `local`-th request.
    pub fn global(&self, local: usize) -> usize {
        local * self.count + self.index
    }
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
