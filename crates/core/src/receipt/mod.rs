//! The receipt (`goodput-receipt/1`, docs/contract.md §7): the versioned, reproducible
//! verdict on a trace. These types are the single source of the receipt's
//! shape: serialization, `goodput schema receipt` and the committed
//! `schema/receipt.schema.json` all come from them.
//!
//! Maps are `BTreeMap` and struct fields serialize in declaration order, so the
//! same trace and options always give the same bytes.

pub mod answer;
pub mod build;
pub mod cost;
pub mod gaps;
pub mod percentiles;
pub mod recovery;
pub mod release;
pub mod saturation;
pub mod sensitivity;
pub mod server_timing;
pub mod tokenizer;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::intervals::{Interval, QuantileInterval};
use crate::trace::{ArrivalMode, Gates, Labels, Phase, Warmup};

pub use build::{build_receipt, ReceiptOptions};
pub use percentiles::attach as attach_percentiles;
pub use saturation::{Saturation, SaturationBin, SaturationVerdict};

/// The schema tag of every receipt this version writes.
pub const RECEIPT_SCHEMA: &str = "goodput-receipt/1";

/// A goodput receipt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Receipt {
    /// Always `goodput-receipt/1`.
    pub schema: String,
    /// The tool that produced the receipt.
    pub generator: Generator,
    /// Which bytes were judged.
    pub trace: TraceInfo,
    /// Input limits in force.
    pub limits: LimitsInfo,
    /// The measurement contract the verdicts were made under.
    pub contract: ContractInfo,
    /// Counts, rates, latency and reasons, rolled up and per class.
    pub results: Results,
    /// Per-row verdicts, in trace order (only with `--rows`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<Vec<RowVerdict>>,
    /// Sensitivity sweep (only with `analyze --sweep`): the declared gates first
    /// (`hypothetical: false`), then every alternative (`hypothetical: true`).
    /// Never replaces `results`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Vec<sensitivity::SweepEntry>>,
    /// Recovery after the burst phase, per class (only when the trace
    /// declares a phase named as the burst; docs/contract.md §10.10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<recovery::Recovery>,
    /// Per-GPU throughput and the cost of good work (only when resources are
    /// in force: `contract.resources`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<cost::Cost>,
    /// A warning: the trace declares `workload.promptLengths: "tokens"` but
    /// the client's prompt counts differ from the server's on most rows
    /// (docs/contract.md §7, rule in [`tokenizer`]); absent otherwise. Added
    /// within schema major version 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokenizer_mismatch: Option<tokenizer::TokenizerMismatch>,
    /// Energy over the window and per good request, from a power series in
    /// the trace's metrics sidecar (docs/contract.md §10.18); absent when no
    /// sidecar reading carries the power metric. Added within schema major
    /// version 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub energy: Option<crate::energy::EnergyBlock>,
    /// The quality bank's figures (only when the trace names a quality
    /// sidecar and it was read beside the trace, its sha256 checked;
    /// docs/contract.md §10.19). Added within schema major version 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<crate::quality::QualityBlock>,
}

impl Receipt {
    /// The `energy` block of this receipt's window and pass count from a
    /// metrics sidecar's `lines` (docs/contract.md §10.18).
    pub fn energy_from(
        &self,
        lines: &[crate::server_metrics::MetricsLine],
        metric: &str,
    ) -> Option<crate::energy::EnergyBlock> {
        let all = &self.results.all;
        let work = crate::energy::GoodWork {
            start_ms: self.contract.window.start_ms,
            end_ms: self.contract.window.end_ms,
            good_requests: all.counts.pass,
            good_tokens_per_s: all.rates.good_tokens_per_s,
        };
        crate::energy::energy(work, lines, metric)
    }
}

/// The tool that produced a receipt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Generator {
    /// `goodput`.
    pub name: String,
    /// The tool's version.
    pub version: String,
}

/// Identity of the judged input.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TraceInfo {
    /// Lower-case hex sha256 of the exact input bytes.
    pub sha256: String,
    /// Input length in bytes.
    pub bytes: u64,
    /// Number of elements of the trace's `rows` array.
    pub rows: u64,
}

/// Input limits in force (defaults 500 rows, 65,536 bytes; both inclusive).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsInfo {
    /// Most rows accepted.
    pub max_rows: u64,
    /// Most bytes accepted.
    pub max_bytes: u64,
}

/// The contract in force, echoed from the trace with defaults resolved.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContractInfo {
    /// `inclusive` (value == gate passes) or `strict` (value == gate misses).
    pub equality: String,
    /// Always `nearest-rank`: Pp is the value at 1-based rank ceil(p × n / 100).
    pub percentile_method: String,
    /// The percentiles the figures are reported at, ascending (`--percentiles`;
    /// default 50, 95, 99). With the default, each is in the fixed
    /// `latency` and `intervals` fields; with any other list, every block's
    /// `percentiles` gives each one with its interval. Added within schema
    /// major version 1 (an older receipt has none: the default).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub percentiles: Vec<f64>,
    /// The confidence level and methods of every block's `intervals`.
    pub intervals: IntervalContract,
    /// What `outputTokens` counts: `usage`, `chunks` or `client-tokenizer`.
    pub tokens: String,
    /// `false` when the trace declared unstreamed responses (embeddings):
    /// TTFT, TPOT, TTFA and stalls are not applicable (docs/contract.md
    /// §10.16). Absent for streamed traces.
    #[serde(default = "streamed_default", skip_serializing_if = "is_true")]
    pub streamed: bool,
    /// The per-token figure's name: `tpot` (model tokens from usage),
    /// `chunk_cadence` (tokens are stream chunks) or `tpot_client_tokens`
    /// (tokens counted by a client-side tokenizer, not necessarily the model's).
    pub tpot_label: String,
    /// Where measurements were taken (echoed from the trace).
    pub boundary: Labels,
    /// How load was generated (echoed from the trace).
    pub workload: Labels,
    /// The measurement window.
    pub window: WindowInfo,
    /// The warm-up interval, or null.
    pub warmup: Option<Warmup>,
    /// The class of rows that name none, or null.
    pub default_class: Option<String>,
    /// SLO gates per class.
    pub classes: BTreeMap<String, Gates>,
    /// `open-loop`, or `closed-loop` when `boundary.arrival` is `closed-loop`
    /// or `workload.arrival` is `closed`: such a run is not SLA evidence
    /// (docs/contract.md §10.2). Added within schema major version 1.
    pub arrival_mode: ArrivalMode,
    /// Present only when the trace declares `boundary.arrival = "unknown"`:
    /// why the figures that need arrival instants are null, and which they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrivals_unknown: Option<String>,
    /// The trace's phases, echoed (absent when it declares none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// The GPUs and price the cost figures use, and where they come from
    /// (absent when none are in force).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<cost::ResourcesInfo>,
}

/// The confidence level of the receipt's intervals and the method behind each
/// kind, named so a reader can recompute every bound (see `docs/contract.md`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IntervalContract {
    /// Two-sided confidence level, e.g. 0.95 (`--confidence`).
    pub confidence: f64,
    /// Method of the share intervals: `wilson-score`.
    pub share: String,
    /// Method of the goodput/s interval: `exact-poisson-garwood` (on the pass count, over window seconds).
    pub rate: String,
    /// Method of the percentile intervals: `order-statistic-binomial-equal-tails`.
    pub quantile: String,
}

/// The one line every command's text output prints for a receipt whose
/// trace declares its arrival instants unknown.
pub const ARRIVALS_UNKNOWN_LINE: &str =
    "arrival times UNKNOWN (boundary.arrival = \"unknown\"): no Little's law, no time bins";

/// The sentence a receipt carries in `contract.arrivalsUnknown`.
pub const ARRIVALS_UNKNOWN_NOTE: &str = "boundary.arrival is \"unknown\": the source recorded \
    no send instants, so every row's arrivalMs is the window start; per-row TTFT, TPOT and E2E \
    are exact and every count and per-window-second rate stands, but the figures that need \
    arrival instants are null: littlesLaw.inFlightMean, ratio and steadyState (no time in \
    flight), rates.servedPerS (completions are dated from those instants), and any \
    time-binned figure; a warm-up cannot be declared";

/// The window with its resolved horizon and length.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WindowInfo {
    /// Window start (inclusive), ms.
    pub start_ms: f64,
    /// Window end (exclusive), ms.
    pub end_ms: f64,
    /// When observation stopped, ms.
    pub horizon_ms: f64,
    /// endMs − startMs: every rate is per second of this.
    pub duration_ms: f64,
}

fn streamed_default() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

/// Results rolled up and per class.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Results {
    /// Every row, including invalid rows whose class does not resolve.
    pub all: Block,
    /// Each declared class alone.
    pub classes: BTreeMap<String, Block>,
}

/// The figures of one class, or of all rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Block {
    /// How many rows got each verdict.
    pub counts: Counts,
    /// Rates per window second and shares of the cohort.
    pub rates: Rates,
    /// Latency of completed cohort rows (pass + miss).
    pub latency: LatencyBlock,
    /// Breakdown of misses, failures, invalid rows, exclusions and censoring.
    pub reasons: Reasons,
    /// Little's law as a steady-state check: measured occupancy against
    /// throughput × mean latency.
    pub littles_law: LittlesLaw,
    /// Confidence intervals of the headline figures, at `contract.intervals.confidence`.
    pub intervals: BlockIntervals,
    /// Whether the server kept up with the offered load: offered and served
    /// rates, requests in flight over the window, and a verdict.
    pub saturation: Saturation,
    /// Every percentile of `contract.percentiles` with its interval, per
    /// metric; present only when that list is not the default 50, 95, 99
    /// (whose figures are the fixed `latency` and `intervals` fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentiles: Option<RequestedPercentiles>,
    /// The gaps between token-carrying stream events (docs/contract.md
    /// §10.15); absent when no row of the block carries `gapsMs` and no
    /// class declares `stallMs` or `tokenDeadlineMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gaps: Option<gaps::GapBlock>,
    /// Time to first answer, thinking time and reasoning tokens
    /// (docs/contract.md §10.16); absent when no row of the block carries
    /// `firstAnswerMs` or `reasoningTokens` and no class declares `ttfaMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<answer::AnswerBlock>,
    /// Where the TTFT went by the server's own timing (docs/contract.md
    /// §10.17); absent when no completed cohort row of the block carries
    /// `server.queueMs` or `server.prefillMs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_timing: Option<server_timing::ServerTimingBlock>,
}

/// The requested percentiles of one block's latency metrics (`--percentiles`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestedPercentiles {
    /// TTFT, one entry per requested percentile, ascending.
    pub ttft_ms: Vec<PercentileFigure>,
    /// TPOT (or chunk cadence), likewise.
    pub tpot_ms: Vec<PercentileFigure>,
    /// E2E, likewise.
    pub e2e_ms: Vec<PercentileFigure>,
}

/// One nearest-rank percentile of one metric with its order-statistic interval.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PercentileFigure {
    /// The percentile, e.g. 99.9.
    pub p: f64,
    /// The value at 1-based rank ceil(p × n / 100); null when n = 0.
    pub value: Option<f64>,
    /// Its interval at `contract.intervals.confidence`.
    pub interval: QuantileInterval,
}

/// A latency metric of a block, to read one percentile of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyMetric {
    /// Time to first token.
    Ttft,
    /// Time per output token (or chunk cadence).
    Tpot,
    /// End to end.
    E2e,
}

impl Block {
    /// Percentile `p` of `metric` with its interval, wherever the receipt
    /// holds it: the block's requested `percentiles`, else the fixed fields
    /// (p50, p95, p99 with intervals; p90 without). `None` when the receipt
    /// holds neither.
    pub fn percentile(
        &self,
        metric: LatencyMetric,
        p: crate::stats::Percentile,
    ) -> Option<(Option<f64>, Option<QuantileInterval>)> {
        if let Some(requested) = &self.percentiles {
            let list = match metric {
                LatencyMetric::Ttft => &requested.ttft_ms,
                LatencyMetric::Tpot => &requested.tpot_ms,
                LatencyMetric::E2e => &requested.e2e_ms,
            };
            let want = p.value();
            if let Some(f) = list.iter().find(|f| f.p == want) {
                return Some((f.value, Some(f.interval.clone())));
            }
        }
        let (summary, intervals) = match metric {
            LatencyMetric::Ttft => (&self.latency.ttft_ms, &self.intervals.ttft_ms),
            LatencyMetric::Tpot => (&self.latency.tpot_ms, &self.intervals.tpot_ms),
            LatencyMetric::E2e => (&self.latency.e2e_ms, &self.intervals.e2e_ms),
        };
        match p.thousandths() {
            50_000 => Some((summary.p50, Some(intervals.p50.clone()))),
            90_000 => Some((summary.p90, None)),
            95_000 => Some((summary.p95, Some(intervals.p95.clone()))),
            99_000 => Some((summary.p99, Some(intervals.p99.clone()))),
            _ => None,
        }
    }
}

/// How far the headline figures of one block could move from run to run:
/// each is an interval at the receipt's declared confidence.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BlockIntervals {
    /// Wilson score interval of pass / cohort; null for an empty cohort.
    pub pass_share: Option<Interval>,
    /// Wilson score interval of failed / cohort; null for an empty cohort.
    pub failure_share: Option<Interval>,
    /// Wilson score interval of censored / cohort; null for an empty cohort.
    pub censored_share: Option<Interval>,
    /// Exact Poisson interval of the pass count, divided by window seconds.
    pub goodput_per_s: Interval,
    /// Order-statistic intervals of TTFT percentiles, ms.
    pub ttft_ms: PercentileIntervals,
    /// Order-statistic intervals of TPOT percentiles, ms.
    pub tpot_ms: PercentileIntervals,
    /// Order-statistic intervals of E2E percentiles, ms.
    pub e2e_ms: PercentileIntervals,
}

/// Distribution-free intervals of one metric's nearest-rank percentiles.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PercentileIntervals {
    /// Of the 50th percentile.
    pub p50: QuantileInterval,
    /// Of the 95th percentile.
    pub p95: QuantileInterval,
    /// Of the 99th percentile.
    pub p99: QuantileInterval,
}

/// Little's law (L = λ·W) as a consistency check on the window.
///
/// `inFlightMean` is measured: the time-average, over the window, of how many
/// cohort requests of this block were in flight (each from its arrival to its
/// completion, its failure, or the horizon if it never ended, clipped to the
/// window). `predictedInFlight` is `lambdaPerS × meanTimeInSystemMs / 1000`,
/// where censored rows count in both λ and W with their known lower bound
/// (arrival → horizon), so a short grace period cannot hide the longest
/// waits. In a steady state the two agree; a queue that builds up, work cut
/// off at the horizon or many failures pull them apart.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LittlesLaw {
    /// Time-averaged number of cohort requests in flight over the window (L,
    /// measured); null when the trace's arrival instants are unknown.
    pub in_flight_mean: Option<f64>,
    /// Completions per window second (λ), as in `rates.completedPerS`.
    pub completed_per_s: f64,
    /// Mean E2E of completed cohort rows in ms, as in `latency.e2eMs.mean`; null when none completed.
    pub mean_e2e_ms: Option<f64>,
    /// Censored cohort rows, counted in λ and W at their lower bound (arrival → horizon).
    pub censored_at_lower_bound: u64,
    /// (pass + miss + censored) / window s (λ).
    pub lambda_per_s: f64,
    /// Mean time in the system of those rows, ms (W): completed rows' E2E and
    /// censored rows' horizon − arrival; null when there are none.
    pub mean_time_in_system_ms: Option<f64>,
    /// lambdaPerS × meanTimeInSystemMs / 1000 (λ·W); null without W.
    pub predicted_in_flight: Option<f64>,
    /// inFlightMean / predictedInFlight; null when the prediction is 0 or null.
    pub ratio: Option<f64>,
    /// Whether the ratio is within [0.8, 1.25] (null when there is no ratio).
    pub steady_state: Option<bool>,
    /// Failed cohort rows with no `endedMs`: their time in flight is unknown and not counted.
    pub unknown_end: u64,
    /// A sentence for people when the run does not look steady (null otherwise).
    pub note: Option<String>,
}

/// Row counts. pass + miss + failed + censored = cohort;
/// cohort + excluded + invalid = arrivals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Counts {
    /// Every row.
    pub arrivals: u64,
    /// Rows with at least one invalid reason.
    pub invalid: u64,
    /// Valid rows arriving in the warm-up or outside the window.
    pub excluded: u64,
    /// Valid rows arriving inside the window: the denominator.
    pub cohort: u64,
    /// Completed cohort rows meeting every applicable gate.
    pub pass: u64,
    /// Completed cohort rows missing at least one gate.
    pub miss: u64,
    /// Failed cohort rows.
    pub failed: u64,
    /// Cohort rows with no outcome by the horizon.
    pub censored: u64,
}

/// Rates per window second (never per horizon second) and shares of the cohort.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rates {
    /// pass / window s.
    pub goodput_per_s: f64,
    /// pass / cohort; null for an empty cohort.
    pub pass_share: Option<f64>,
    /// cohort / window s.
    pub offered_per_s: f64,
    /// (pass + miss) / window s.
    pub completed_per_s: f64,
    /// Output tokens of pass + miss rows / window s.
    pub output_tokens_per_s: f64,
    /// Output tokens of pass rows / window s.
    pub good_tokens_per_s: f64,
    /// failed / cohort; null for an empty cohort.
    pub failure_share: Option<f64>,
    /// censored / cohort; null for an empty cohort.
    pub censored_share: Option<f64>,
    /// Served throughput: (pass + miss − 1) / the seconds from the first to
    /// the last of their `completedMs` (all at or before the horizon, so the
    /// span is clipped to it): n completions from first to last are n − 1
    /// gaps. Unlike `completedPerS` it does not divide the grace period's
    /// completions by the window, so it says what the server kept up with.
    /// Null with fewer than two completions or a zero span.
    pub served_per_s: Option<f64>,
}

/// Latency summaries per metric.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LatencyBlock {
    /// Time to first token, ms.
    pub ttft_ms: LatencySummary,
    /// Time per output token (or chunk cadence), ms; rows with outputTokens > 1 only.
    pub tpot_ms: LatencySummary,
    /// End to end, ms.
    pub e2e_ms: LatencySummary,
}

/// Nearest-rank summary of one metric; every statistic is null when n = 0.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LatencySummary {
    /// Number of values.
    pub n: u64,
    /// Smallest value.
    pub min: Option<f64>,
    /// Sum of the values in sorted order / n.
    pub mean: Option<f64>,
    /// Nearest-rank 50th percentile.
    pub p50: Option<f64>,
    /// Nearest-rank 90th percentile.
    pub p90: Option<f64>,
    /// Nearest-rank 95th percentile.
    pub p95: Option<f64>,
    /// Nearest-rank 99th percentile.
    pub p99: Option<f64>,
    /// Largest value.
    pub max: Option<f64>,
}

/// Why rows did not pass.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Reasons {
    /// Missed metrics; a row counts under each metric it missed.
    pub miss: MissReasons,
    /// Failed cohort rows by reason (non-zero reasons only).
    pub failure: BTreeMap<String, u64>,
    /// Invalid rows by reason; a row counts under each of its reasons (non-zero only).
    pub invalid: BTreeMap<String, u64>,
    /// Excluded rows by cause.
    pub exclusion: ExclusionReasons,
    /// Censored rows by cause, and how many were already late at the horizon.
    pub censored: CensoredReasons,
}

/// Missed metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MissReasons {
    /// Rows over their TTFT gate.
    pub ttft: u64,
    /// Rows over their TPOT gate.
    pub tpot: u64,
    /// Rows over their E2E gate.
    pub e2e: u64,
    /// Rows over their stall gate (present only when a class declares `stallMs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<u64>,
    /// Rows over their TTFA gate (present only when a class declares `ttfaMs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfa: Option<u64>,
    /// Rows of a class with a TTFA gate that never answered (present only
    /// when a class declares `ttfaMs`).
    #[serde(default, rename = "noAnswer", skip_serializing_if = "Option::is_none")]
    pub no_answer: Option<u64>,
}

/// Exclusion causes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExclusionReasons {
    /// Arrived in the warm-up interval.
    pub warmup: u64,
    /// Arrived outside the window.
    pub outside_window: u64,
}

/// Censoring causes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CensoredReasons {
    /// Still running at the horizon.
    pub in_flight: u64,
    /// Completed after the horizon.
    pub completed_after_horizon: u64,
    /// Failed after the horizon.
    pub failed_after_horizon: u64,
    /// Censored rows already past a TTFT or E2E gate at the horizon (each counted once).
    #[serde(rename = "knownLate")]
    pub known_late: u64,
}

/// One row's verdict (with `--rows`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RowVerdict {
    /// Position in the trace's `rows` array (0-based), so a row without a usable id can be found.
    pub index: u64,
    /// The row's id, or null when it has no usable string id.
    pub id: Option<String>,
    /// The class the row counts under, or null when it does not resolve.
    pub class: Option<String>,
    /// `pass`, `miss`, `failed`, `censored`, `excluded` or `invalid`.
    pub verdict: String,
    /// Invalid reasons, the exclusion reason, the censor reason (plus `knownLate`),
    /// the failure reason, or the missed metrics.
    pub reasons: Vec<String>,
    /// TTFT in ms (pass and miss rows; null otherwise).
    pub ttft_ms: Option<f64>,
    /// TPOT in ms (pass and miss rows with more than one output token; null otherwise).
    pub tpot_ms: Option<f64>,
    /// E2E in ms (pass and miss rows; null otherwise).
    pub e2e_ms: Option<f64>,
    /// The row's labels, echoed (absent when the row has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<Labels>,
    /// The row's largest gap between token-carrying events, ms (absent
    /// without gaps; docs/contract.md §10.15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_gap_ms: Option<f64>,
    /// The 0-based position of that gap in `gapsMs` (the first, when equal).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_gap_index: Option<u64>,
    /// Time to first answer in ms (pass and miss rows with a first answer
    /// token; absent otherwise; docs/contract.md §10.16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfa_ms: Option<f64>,
}
