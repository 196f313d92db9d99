//! The frontier of a rate sweep: goodput against offered load, the **knee**
//! and the **capacity at an attainment target**, computed from one receipt per
//! offered rate. Pure: receipts in, a [`Frontier`] out; reading files is
//! the command-line layer's job (`cli::frontier`) and drawing it is
//! `render::frontier`'s.
//!
//! Every figure of a point is copied from its receipt (the selected class's
//! block, or `all`), so the frontier can never count differently from
//! `goodput analyze`.
//!
//! ## Order and repeats
//!
//! Points are sorted by **measured** offered load (`offeredPerS` = cohort /
//! window s, not the nominal `--request-rate`), then by label. Points whose
//! offered rates are exactly equal (repeats) stay separate lines in the
//! table but are pooled into one *step* for the knee and capacity: goodput/s,
//! completed/s, failed + censored per s and p95 TTFT are the means of the
//! repeats; pass share is the **lowest** of the repeats (a capacity claim
//! must hold in every repeat). Points with an empty cohort (no pass share)
//! are shown but take no part in either rule.
//!
//! ## The knee
//!
//! With steps `0..n` sorted by offered rate `x`, goodput `g`, completed `c`,
//! lost `l` (failed + censored per window second, so `x = c + l`) and p95 TTFT
//! `t`, and `ε = KNEE_GAIN` (0.1), the knee is the offered rate `x_i` of the
//! **first** step `i < n − 1` such that
//!
//! 1. **goodput stops rising, for good**: for *every* later step `j > i`,
//!    `g_j − g_i ≤ ε · (x_j − x_i)` — no later rate turns more than a tenth
//!    of its extra offered load into extra goodput. Requiring it of every
//!    later step (not just the next) makes one noisy dip that later recovers
//!    not a knee; and
//! 2. **the extra load went somewhere visible** on the step `i → i+1`, at
//!    least one of: completions kept rising (`c_{i+1} − c_i > ε · Δx`: the
//!    server did the work, too late — misses); p95 TTFT climbed
//!    superlinearly (`t_{i+1} / t_i > x_{i+1} / x_i`: queueing); failed +
//!    censored per second rose (`l_{i+1} − l_i > ε · Δx`: shed or unfinished
//!    load). The signals that hold are named in the output.
//!
//! Because `Δx = Δc + Δl`, a step with `Δx > 0` always has `Δc` or `Δl` at
//! least `Δx / 2 > ε · Δx`, so condition 2 never vetoes a real stall; its job
//! is to say *why* goodput stopped. A knee at the lowest step means the knee
//! is at or below the lowest rate tested. With fewer than two steps no knee
//! can be named; when no step qualifies the sweep never reached the knee.
//!
//! ## Capacity at the attainment target
//!
//! DistServe's per-GPU goodput: the highest offered rate whose pass share is
//! at least the target `a`. With `k` the highest step with `p_k ≥ a`:
//! - if a step above `k` exists, its pass share is below `a`; the capacity is
//!   the rate where the straight line between the two bracketing steps
//!   crosses `a`: `x_k + (p_k − a) · (x_{k+1} − x_k) / (p_k − p_{k+1})`;
//! - if `k` is the highest step, the sweep never fell below the target: the
//!   capacity is at least the highest rate tested;
//! - if no step meets the target, there is no capacity to claim.
//!
//! Lower steps that fell below the target while a higher one met it are
//! listed (`belowTargetUnderCapacity`): a pass share that is not monotone in
//! load is a warning that the points are noisy.
//!
//! ## Capacity judged by tail and share limits too
//!
//! The pass share alone can call a rate capacity whose p95 TTFT is past what
//! the user needs (every request under a 2 s gate, p95 1.1 s, wanted under
//! 1 s). Given limits ([`BlockLimits`]: `--max-p95-ttft-ms`,
//! `--max-p95-e2e-ms`, `--max-p95-tpot-ms`, `--max-failure-share`,
//! `--max-censored-share`, the gate's criteria of the same names), each point
//! is checked by the gate's own evaluation ([`limit_checks`]) and a step
//! **holds** only when its pass share meets the target *and every repeat
//! meets every limit*. `k` is then the highest step that holds; lower steps
//! that did not hold are listed as above; and
//! - if the step above `k` missed only the pass share (every limit held at
//!   both ends), the capacity is interpolated as above;
//! - if it failed a limit, the capacity is **the highest rate that held**,
//!   `x_k`, not interpolated (a percentile need not move linearly between
//!   two rates), and the criteria that failed there are named (for repeats,
//!   each limit's worst repeat), the pass share first when it fell short too;
//! - if no step holds and some step failed a limit, the criteria that failed
//!   at the lowest rate are named.
//!
//! Without limits every step holds its limits and the rules are the ones
//! above, unchanged.

pub mod capacity;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::receipt::{Block, Receipt};
pub use crate::review::criteria::BlockLimits;
use crate::review::criteria::{Check, GateError};
use crate::review::limits::{limit_checks, limit_names};

/// The schema tag of the frontier JSON.
pub const FRONTIER_SCHEMA: &str = "goodput-frontier/1";
/// ε of the knee rule: a step "stops rising" when it turns at most this share
/// of its extra offered load into extra goodput.
pub const KNEE_GAIN: f64 = 0.1;
/// The default attainment target (DistServe uses 90 %).
pub const DEFAULT_ATTAINMENT: f64 = 0.9;

/// Why a frontier cannot be computed (a usage error, exit status 2).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum FrontierError {
    /// No trace was given.
    #[error("give at least one trace")]
    NoTraces,
    /// The attainment target is not in (0, 1].
    #[error("--attainment: {0} is not a share in (0, 1] (e.g. 0.9 for 90 %)")]
    BadAttainment(f64),
    /// A limit is out of range (e.g. a share above 1).
    #[error(transparent)]
    BadLimit(#[from] GateError),
    /// `--class` names a class that some trace does not declare.
    #[error("--class: {name:?} is not a class of {label} (classes: {known})")]
    UnknownClass {
        /// The name given.
        name: String,
        /// The trace lacking it.
        label: String,
        /// Its declared classes, comma-separated.
        known: String,
    },
}

/// The frontier of a sweep: one point per trace, the knee and the capacity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Frontier {
    /// Always `goodput-frontier/1`.
    pub schema: String,
    /// The class whose figures are used, or null for all rows.
    pub class: Option<String>,
    /// The pass-share target of the capacity.
    pub attainment: f64,
    /// ε of the knee rule (see `docs/frontier.md`).
    pub knee_gain: f64,
    /// One point per trace, sorted by offered rate, then label.
    pub points: Vec<FrontierPoint>,
    /// The knee of the goodput curve.
    pub knee: Knee,
    /// The highest offered rate meeting the attainment target.
    pub capacity: Capacity,
    /// The limits a rate had to hold besides the pass-share target
    /// (`--max-p95-ttft-ms` and the like); absent when the capacity was judged
    /// by the pass share alone.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<Limit>,
    /// The latency gates of the classes in scope (the `--class` class, or
    /// every class), as the traces declared them, so the chart can draw each
    /// p95 against the gate a reader cares about; one entry per distinct
    /// (class, gates), sorted by class.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gates: Vec<ClassGates>,
}

/// One class's latency gates, as a trace of the sweep declared them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClassGates {
    /// The class name.
    pub class: String,
    /// TTFT gate, ms (null: no gate).
    pub ttft_ms: Option<f64>,
    /// TPOT gate, ms (null: no gate).
    pub tpot_ms: Option<f64>,
    /// E2E gate, ms (null: no gate).
    pub e2e_ms: Option<f64>,
    /// Stall gate (largest gap), ms; absent when the class has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall_ms: Option<f64>,
    /// TTFA gate, ms; absent when the class has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfa_ms: Option<f64>,
}

/// A bracket is wide when its upper rate is more than this times its lower
/// rate: the true crossing can then be anywhere in a range more than ±20 %
/// around the bracket's middle (docs/frontier.md, "Wide brackets").
pub const WIDE_BRACKET_RATE_RATIO: f64 = 1.5;
/// A bracket is wide when the pass share falls by more than this between its
/// ends (50 points): a cliff, not the gradual fall a straight line assumes.
pub const WIDE_BRACKET_SHARE_DROP: f64 = 0.5;

/// Why an interpolated capacity is only a rough estimate: its two bracketing
/// rates are far apart, or the pass share fell off a cliff between them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WideBracket {
    /// Upper rate / lower rate of the bracket (null when the lower rate is 0).
    pub rate_ratio: Option<f64>,
    /// Pass share at the lower rate minus pass share at the upper rate.
    pub share_drop: f64,
    /// The rules it broke, in this order: `rate_ratio` (ratio above
    /// [`WIDE_BRACKET_RATE_RATIO`]), `share_drop` (drop above
    /// [`WIDE_BRACKET_SHARE_DROP`]).
    pub rules: Vec<String>,
}

impl WideBracket {
    /// The warning for a bracket from `meets` to `misses`, or `None` when it
    /// breaks neither rule.
    pub fn of(meets: &RateShare, misses: &RateShare) -> Option<WideBracket> {
        let rate_ratio = (meets.offered_per_s > 0.0)
            .then(|| misses.offered_per_s / meets.offered_per_s)
            .filter(|r| r.is_finite());
        let share_drop = meets.pass_share - misses.pass_share;
        let mut rules = Vec::new();
        if rate_ratio.is_none_or(|r| r > WIDE_BRACKET_RATE_RATIO) {
            rules.push("rate_ratio".to_owned());
        }
        if share_drop > WIDE_BRACKET_SHARE_DROP {
            rules.push("share_drop".to_owned());
        }
        (!rules.is_empty()).then_some(WideBracket {
            rate_ratio,
            share_drop,
            rules,
        })
    }
}

/// One limit a rate must hold besides the pass-share target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Limit {
    /// The gate's name of the figure: `failure share`, `censored share`,
    /// `p95 ttft ms`, `p95 e2e ms` or `p95 tpot ms`.
    pub name: String,
    /// `<=`: the figure must be at or below the limit.
    pub comparison: String,
    /// The limit: a share in [0, 1], or ms.
    pub limit: f64,
}

impl Limit {
    /// Each limit given, in the order of the gate's evaluation.
    pub fn all(limits: &BlockLimits) -> Vec<Limit> {
        limit_names(limits)
            .into_iter()
            .map(|(name, limit)| Limit {
                name: name.to_owned(),
                comparison: "<=".to_owned(),
                limit,
            })
            .collect()
    }
}

/// One criterion judged at one rate: a point's limit, or at a step, the
/// worst repeat's (and the pass share when it fell short of the target).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CriterionCheck {
    /// `pass share`, or a limit's name (as in `limits[].name`).
    pub name: String,
    /// The measured figure (null: not measurable, which fails).
    pub measured: Option<f64>,
    /// `>=` (the pass share) or `<=` (a limit).
    pub comparison: String,
    /// The target or limit.
    pub limit: f64,
    /// Whether it holds.
    pub pass: bool,
}

impl From<&Check> for CriterionCheck {
    fn from(c: &Check) -> CriterionCheck {
        CriterionCheck {
            name: c.name.to_owned(),
            measured: c.measured,
            comparison: c.comparison.to_owned(),
            limit: c.limit,
            pass: c.pass,
        }
    }
}

/// One trace's figures (copied from its receipt).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FrontierPoint {
    /// The trace as named on the command line.
    pub label: String,
    /// sha256 of the trace bytes (from the receipt), so a point can be traced back.
    pub sha256: String,
    /// `workload.ratePerS` of the trace (the rate asked for), when it says one.
    pub nominal_rate_per_s: Option<f64>,
    /// Cohort rows: the denominator of the shares.
    pub cohort: u64,
    /// cohort / window s: the offered load actually measured.
    pub offered_per_s: f64,
    /// (pass + miss) / window s (completions in the grace period included).
    pub completed_per_s: f64,
    /// Served throughput: (pass + miss) per second from the first to the
    /// last completion (`rates.servedPerS`); what the server kept up with,
    /// whatever the grace period. Null with fewer than two completions.
    #[serde(default)]
    pub served_per_s: Option<f64>,
    /// pass / window s.
    pub goodput_per_s: f64,
    /// pass / cohort; null for an empty cohort.
    pub pass_share: Option<f64>,
    /// Exact Poisson interval of goodput/s (the receipt's `intervals.goodputPerS`).
    pub goodput_interval: crate::intervals::Interval,
    /// Wilson score interval of the pass share; null for an empty cohort.
    pub pass_share_interval: Option<crate::intervals::Interval>,
    /// failed / cohort; null for an empty cohort.
    pub failure_share: Option<f64>,
    /// censored / cohort; null for an empty cohort.
    pub censored_share: Option<f64>,
    /// Nearest-rank p95 TTFT of completed cohort rows, ms.
    pub p95_ttft_ms: Option<f64>,
    /// Nearest-rank p95 TPOT (or chunk cadence, see `tpotLabel`), ms.
    pub p95_tpot_ms: Option<f64>,
    /// `tpot`, or `chunk_cadence` when the trace counted stream chunks.
    pub tpot_label: String,
    /// Completed cohort rows with at least one gap (`gaps.rows`); absent
    /// when the block has no `gaps` block (docs/contract.md §10.15), 0 when
    /// it has one but no row carries gaps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gap_rows: Option<u64>,
    /// Nearest-rank p99 of the gaps pooled over those rows (ITL), ms;
    /// absent when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_gap_ms: Option<f64>,
    /// Completed cohort rows with a first answer token (`answer.answered`);
    /// absent when the block has no `answer` block (§10.16).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered: Option<u64>,
    /// Nearest-rank p95 TTFA of those rows, ms; absent when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p95_ttfa_ms: Option<f64>,
    /// Little's-law in-flight estimate: completed/s × mean E2E (λ·W).
    pub littles_in_flight: Option<f64>,
    /// Measured time-averaged in-flight requests over the window (L).
    pub in_flight_mean: Option<f64>,
    /// Highest queue (requests waiting) the server reported, when the trace
    /// has a `record --metrics` sidecar that exposes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_waiting: Option<f64>,
    /// Highest KV-cache use (0–1) the server reported, as `peakWaiting`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_kv_usage: Option<f64>,
    /// Each limit given, checked on this trace (the gate's evaluation);
    /// absent without limits.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CriterionCheck>,
}

/// A signal that says where the load went at the knee.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KneeSignal {
    /// Completions kept rising while goodput did not: the extra work finished too late.
    CompletionsRising,
    /// p95 TTFT grew by a larger ratio than the offered rate: queueing.
    TtftSuperlinear,
    /// Failed + censored per second rose: load was shed or left unfinished.
    LostRising,
}

impl KneeSignal {
    /// Words for people.
    pub fn describe(self) -> &'static str {
        match self {
            KneeSignal::CompletionsRising => "completions kept rising",
            KneeSignal::TtftSuperlinear => "p95 TTFT climbed faster than load",
            KneeSignal::LostRising => "failed + censored work rose",
        }
    }
}

/// The knee of the goodput curve.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Knee {
    /// Goodput stopped rising after `offeredPerS`.
    #[serde(rename_all = "camelCase")]
    Found {
        /// The last offered rate before goodput stopped rising.
        offered_per_s: f64,
        /// Goodput at the knee.
        goodput_per_s: f64,
        /// The next offered rate tested (where goodput no longer rose).
        next_offered_per_s: f64,
        /// The knee is the lowest rate tested: the true knee may be lower.
        at_lowest_rate: bool,
        /// What happened to the extra load on the step after the knee.
        signals: Vec<KneeSignal>,
    },
    /// Goodput kept rising up to the highest rate tested.
    #[serde(rename_all = "camelCase")]
    NotReached {
        /// The highest offered rate tested.
        highest_offered_per_s: f64,
    },
    /// Fewer than two distinct offered rates with a cohort: no curve to read.
    #[serde(rename_all = "camelCase")]
    TooFewPoints {
        /// Distinct offered rates with a non-empty cohort.
        steps: u64,
    },
}

/// The capacity at the attainment target.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Capacity {
    /// Pass share crossed the target between two tested rates.
    #[serde(rename_all = "camelCase")]
    Interpolated {
        /// The interpolated offered rate where pass share equals the target.
        offered_per_s: f64,
        /// The highest rate meeting the target, and its pass share.
        meets: RateShare,
        /// The next rate, below the target, and its pass share.
        misses: RateShare,
        /// Lower rates that fell below the target (non-monotone pass share).
        below_target_under_capacity: Vec<f64>,
        /// Present when the bracket is wide (rules in [`WideBracket`]): the
        /// interpolated rate is then a rough estimate; test rates in between.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        wide_bracket: Option<WideBracket>,
    },
    /// Every rate met the target: the capacity is at least the highest rate tested.
    #[serde(rename_all = "camelCase")]
    AtLeast {
        /// The highest offered rate tested.
        offered_per_s: f64,
        /// Lower rates that fell below the target (non-monotone pass share).
        below_target_under_capacity: Vec<f64>,
    },
    /// A limit failed at the next rate tested: the capacity is the highest
    /// rate that held every criterion (not interpolated).
    #[serde(rename_all = "camelCase")]
    Limited {
        /// The highest offered rate that held every criterion.
        offered_per_s: f64,
        /// That rate and its pass share.
        held: RateShare,
        /// The next rate tested, which did not hold, and its pass share.
        fails: RateShare,
        /// What failed at the next rate: the pass share when short of the
        /// target, then each limit that failed (its worst repeat).
        failed: Vec<CriterionCheck>,
        /// Lower rates that did not hold (non-monotone).
        below_target_under_capacity: Vec<f64>,
    },
    /// No rate held every criterion, and some rate failed a limit.
    #[serde(rename_all = "camelCase")]
    NoneHolds {
        /// The lowest offered rate tested.
        lowest_offered_per_s: f64,
        /// The best pass share seen.
        best_pass_share: f64,
        /// What failed at the lowest rate (as `limited.failed`).
        failed: Vec<CriterionCheck>,
    },
    /// No rate met the target.
    #[serde(rename_all = "camelCase")]
    NoneMeets {
        /// The best pass share seen, if any rate had a cohort.
        best_pass_share: Option<f64>,
        /// The lowest offered rate tested, if any rate had a cohort.
        lowest_offered_per_s: Option<f64>,
    },
}

/// An offered rate and its pass share.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RateShare {
    /// Offered rate, per s.
    pub offered_per_s: f64,
    /// Pass share at that rate.
    pub pass_share: f64,
}

/// One distinct offered rate, repeats pooled (see the module docs).
#[derive(Clone, Debug, PartialEq)]
struct Step {
    offered: f64,
    goodput: f64,
    completed: f64,
    lost: f64,
    pass_share: f64,
    p95_ttft: Option<f64>,
    /// The limits some repeat failed, each at its worst repeat (empty: every
    /// repeat held every limit, or no limit was given).
    failed: Vec<CriterionCheck>,
}

/// Copies one receipt block's figures into a point.
fn point(label: &str, receipt: &Receipt, block: &Block) -> FrontierPoint {
    let nominal = match receipt.contract.workload.get("ratePerS") {
        Some(crate::trace::Scalar::Number(x)) => Some(*x),
        _ => None,
    };
    let r = &block.rates;
    FrontierPoint {
        label: label.to_owned(),
        sha256: receipt.trace.sha256.clone(),
        nominal_rate_per_s: nominal,
        cohort: block.counts.cohort,
        offered_per_s: r.offered_per_s,
        completed_per_s: r.completed_per_s,
        served_per_s: r.served_per_s,
        goodput_per_s: r.goodput_per_s,
        pass_share: r.pass_share,
        goodput_interval: block.intervals.goodput_per_s,
        pass_share_interval: block.intervals.pass_share,
        failure_share: r.failure_share,
        censored_share: r.censored_share,
        p95_ttft_ms: block.latency.ttft_ms.p95,
        p95_tpot_ms: block.latency.tpot_ms.p95,
        tpot_label: receipt.contract.tpot_label.clone(),
        gap_rows: block.gaps.as_ref().map(|g| g.rows),
        p99_gap_ms: block.gaps.as_ref().and_then(|g| g.gap_ms.p99),
        answered: block.answer.as_ref().map(|a| a.answered),
        p95_ttfa_ms: block.answer.as_ref().and_then(|a| a.ttfa_ms.p95),
        littles_in_flight: block.littles_law.predicted_in_flight,
        in_flight_mean: block.littles_law.in_flight_mean,
        peak_waiting: None,
        peak_kv_usage: None,
        checks: Vec::new(),
    }
}

/// Builds the frontier of `(label, receipt)` pairs: `class` selects a class
/// block (all rows when `None`); `attainment` is the pass-share target in
/// (0, 1]. The capacity is judged by the pass share alone.
pub fn frontier(
    traces: &[(String, Receipt)],
    class: Option<&str>,
    attainment: f64,
) -> Result<Frontier, FrontierError> {
    frontier_judged(traces, class, attainment, &BlockLimits::default())
}

/// [`frontier`], with a rate holding only when it also meets every limit in
/// `limits` (module docs, "Capacity judged by tail and share limits too").
pub fn frontier_judged(
    traces: &[(String, Receipt)],
    class: Option<&str>,
    attainment: f64,
    limits: &BlockLimits,
) -> Result<Frontier, FrontierError> {
    if traces.is_empty() {
        return Err(FrontierError::NoTraces);
    }
    if !(attainment > 0.0 && attainment <= 1.0) {
        return Err(FrontierError::BadAttainment(attainment));
    }
    limits.check()?;
    let mut points = Vec::with_capacity(traces.len());
    for (label, receipt) in traces {
        let block = class_block(label, receipt, class)?;
        let mut p = point(label, receipt, block);
        p.checks = limit_checks(block, limits).iter().map(Into::into).collect();
        points.push(p);
    }
    points.sort_by(|a, b| {
        a.offered_per_s
            .total_cmp(&b.offered_per_s)
            .then_with(|| a.label.cmp(&b.label))
    });
    let steps = steps(&points);
    Ok(Frontier {
        schema: FRONTIER_SCHEMA.to_owned(),
        class: class.map(str::to_owned),
        attainment,
        knee_gain: KNEE_GAIN,
        knee: knee(&steps),
        capacity: capacity(&steps, attainment),
        gates: class_gates(traces, class),
        points,
        limits: Limit::all(limits),
    })
}

/// The gates of the classes in scope across the traces, one entry per
/// distinct (class, gates), sorted by class then gates.
fn class_gates(traces: &[(String, Receipt)], class: Option<&str>) -> Vec<ClassGates> {
    let mut out: Vec<ClassGates> = Vec::new();
    for (_, receipt) in traces {
        for (name, g) in &receipt.contract.classes {
            if class.is_some_and(|c| c != name) {
                continue;
            }
            let entry = ClassGates {
                class: name.clone(),
                ttft_ms: g.ttft_ms,
                tpot_ms: g.tpot_ms,
                e2e_ms: g.e2e_ms,
                stall_ms: g.stall_ms,
                ttfa_ms: g.ttfa_ms,
            };
            if !out.contains(&entry) {
                out.push(entry);
            }
        }
    }
    let key = |g: &ClassGates| {
        [g.ttft_ms, g.tpot_ms, g.e2e_ms, g.stall_ms, g.ttfa_ms].map(|v| v.unwrap_or(-1.0))
    };
    out.sort_by(|a, b| {
        a.class.cmp(&b.class).then_with(|| {
            let (x, y) = (key(a), key(b));
            x.iter()
                .zip(&y)
                .map(|(p, q)| p.total_cmp(q))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        })
    });
    out
}

/// The block a trace's point is read from: the named class's, or all rows.
fn class_block<'r>(
    label: &str,
    receipt: &'r Receipt,
    class: Option<&str>,
) -> Result<&'r Block, FrontierError> {
    let Some(name) = class else {
        return Ok(&receipt.results.all);
    };
    receipt
        .results
        .classes
        .get(name)
        .ok_or_else(|| FrontierError::UnknownClass {
            name: name.to_owned(),
            label: label.to_owned(),
            known: receipt
                .results
                .classes
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Pools the points (sorted by offered rate) into distinct steps.
fn steps(points: &[FrontierPoint]) -> Vec<Step> {
    let usable: Vec<&FrontierPoint> = points.iter().filter(|p| p.pass_share.is_some()).collect();
    let mut out: Vec<Step> = Vec::new();
    let mut i = 0;
    while i < usable.len() {
        let offered = usable[i].offered_per_s;
        let group: Vec<&FrontierPoint> = usable[i..]
            .iter()
            .take_while(|p| p.offered_per_s == offered)
            .copied()
            .collect();
        i += group.len();
        let n = group.len() as f64;
        let mean = |f: &dyn Fn(&FrontierPoint) -> f64| group.iter().map(|p| f(p)).sum::<f64>() / n;
        let ttfts: Vec<f64> = group.iter().filter_map(|p| p.p95_ttft_ms).collect();
        out.push(Step {
            offered,
            goodput: mean(&|p| p.goodput_per_s),
            completed: mean(&|p| p.completed_per_s),
            lost: mean(&|p| p.offered_per_s - p.completed_per_s),
            pass_share: group
                .iter()
                .filter_map(|p| p.pass_share)
                .fold(f64::INFINITY, f64::min),
            p95_ttft: (!ttfts.is_empty()).then(|| ttfts.iter().sum::<f64>() / ttfts.len() as f64),
            failed: worst_failures(&group),
        });
    }
    out
}

/// The limits the repeats of one step failed, in the limits' order, each
/// at its worst repeat (highest figure; one that could not be measured is
/// worst): a capacity claim must hold in every repeat, as the pass share's
/// lowest repeat says.
fn worst_failures(group: &[&FrontierPoint]) -> Vec<CriterionCheck> {
    let mut out: Vec<CriterionCheck> = Vec::new();
    for c in group.iter().flat_map(|p| &p.checks).filter(|c| !c.pass) {
        let worse = |old: &CriterionCheck| match (old.measured, c.measured) {
            (None, _) => false,
            (Some(_), None) => true,
            (Some(a), Some(b)) => b > a,
        };
        match out.iter_mut().find(|o| o.name == c.name) {
            Some(old) if worse(old) => *old = c.clone(),
            Some(_) => {}
            None => out.push(c.clone()),
        }
    }
    out
}

/// The knee rule (module docs).
fn knee(steps: &[Step]) -> Knee {
    if steps.len() < 2 {
        return Knee::TooFewPoints {
            steps: steps.len() as u64,
        };
    }
    for i in 0..steps.len() - 1 {
        let s = &steps[i];
        let stalled = steps[i + 1..]
            .iter()
            .all(|later| later.goodput - s.goodput <= KNEE_GAIN * (later.offered - s.offered));
        if !stalled {
            continue;
        }
        let next = &steps[i + 1];
        let dx = next.offered - s.offered;
        let mut signals = Vec::new();
        if next.completed - s.completed > KNEE_GAIN * dx {
            signals.push(KneeSignal::CompletionsRising);
        }
        if let (Some(t0), Some(t1)) = (s.p95_ttft, next.p95_ttft) {
            if t0 > 0.0 && s.offered > 0.0 && t1 / t0 > next.offered / s.offered {
                signals.push(KneeSignal::TtftSuperlinear);
            }
        }
        if next.lost - s.lost > KNEE_GAIN * dx {
            signals.push(KneeSignal::LostRising);
        }
        if signals.is_empty() {
            continue;
        }
        return Knee::Found {
            offered_per_s: s.offered,
            goodput_per_s: s.goodput,
            next_offered_per_s: next.offered,
            at_lowest_rate: i == 0,
            signals,
        };
    }
    Knee::NotReached {
        highest_offered_per_s: steps[steps.len() - 1].offered,
    }
}

/// The capacity rule (module docs).
fn capacity(steps: &[Step], target: f64) -> Capacity {
    let holds = |s: &Step| s.pass_share >= target && s.failed.is_empty();
    let Some(k) = steps.iter().rposition(holds) else {
        return none_holds(steps, target);
    };
    let below: Vec<f64> = steps[..k]
        .iter()
        .filter(|s| !holds(s))
        .map(|s| s.offered)
        .collect();
    let meets = &steps[k];
    let share = |s: &Step| RateShare {
        offered_per_s: s.offered,
        pass_share: s.pass_share,
    };
    match steps.get(k + 1) {
        None => Capacity::AtLeast {
            offered_per_s: meets.offered,
            below_target_under_capacity: below,
        },
        Some(next) if next.failed.is_empty() => {
            // Only the pass share failed: p_k ≥ target > p_{k+1}, so the
            // denominator is positive.
            let offered = meets.offered
                + (meets.pass_share - target) * (next.offered - meets.offered)
                    / (meets.pass_share - next.pass_share);
            let (meets, misses) = (share(meets), share(next));
            Capacity::Interpolated {
                offered_per_s: offered,
                wide_bracket: WideBracket::of(&meets, &misses),
                meets,
                misses,
                below_target_under_capacity: below,
            }
        }
        Some(next) => Capacity::Limited {
            offered_per_s: meets.offered,
            held: share(meets),
            fails: share(next),
            failed: failures(next, target),
            below_target_under_capacity: below,
        },
    }
}

/// No step holds: by the pass share alone when no step failed a limit (as
/// without limits), else naming what failed at the lowest rate.
fn none_holds(steps: &[Step], target: f64) -> Capacity {
    let best_pass_share = steps.iter().map(|s| s.pass_share).reduce(f64::max);
    match steps.first() {
        Some(lowest) if steps.iter().any(|s| !s.failed.is_empty()) => Capacity::NoneHolds {
            lowest_offered_per_s: lowest.offered,
            best_pass_share: best_pass_share.unwrap_or(0.0),
            failed: failures(lowest, target),
        },
        _ => Capacity::NoneMeets {
            best_pass_share,
            lowest_offered_per_s: steps.first().map(|s| s.offered),
        },
    }
}

/// What failed at a step that did not hold: the pass share first when it
/// fell short of the target, then the limits it failed.
fn failures(step: &Step, target: f64) -> Vec<CriterionCheck> {
    let short = (step.pass_share < target).then(|| CriterionCheck {
        name: "pass share".to_owned(),
        measured: Some(step.pass_share),
        comparison: ">=".to_owned(),
        limit: target,
        pass: false,
    });
    short
        .into_iter()
        .chain(step.failed.iter().cloned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(offered: f64, goodput: f64, completed: f64, pass_share: f64, ttft: f64) -> Step {
        Step {
            offered,
            goodput,
            completed,
            lost: offered - completed,
            pass_share,
            p95_ttft: Some(ttft),
            failed: Vec::new(),
        }
    }

    #[test]
    fn a_dip_that_recovers_is_not_a_knee() {
        // 10 → 20: goodput 10 → 9 (a dip), but at 40 it is 38: 38 − 10 = 28 >
        // 0.1 × 30, so 10 is not a knee; 20 → 40 rises; no knee.
        let s = [
            step(10.0, 10.0, 10.0, 1.0, 100.0),
            step(20.0, 9.0, 20.0, 0.45, 100.0),
            step(40.0, 38.0, 40.0, 0.95, 120.0),
        ];
        assert_eq!(
            knee(&s),
            Knee::NotReached {
                highest_offered_per_s: 40.0
            }
        );
    }

    #[test]
    fn ttft_growing_exactly_as_fast_as_load_is_not_superlinear() {
        // 10 → 20 doubles load and doubles TTFT: not superlinear; goodput flat
        // and completions +10 > 1: completions signal only.
        let s = [
            step(10.0, 10.0, 10.0, 1.0, 100.0),
            step(20.0, 10.0, 20.0, 0.5, 200.0),
        ];
        match knee(&s) {
            Knee::Found { signals, .. } => {
                assert_eq!(signals, vec![KneeSignal::CompletionsRising]);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn capacity_interpolates_between_the_bracketing_steps() {
        // 0.95 at 10, 0.75 at 20: 0.9 is a quarter of the way down → 12.5.
        let s = [
            step(10.0, 9.5, 10.0, 0.95, 1.0),
            step(20.0, 15.0, 20.0, 0.75, 1.0),
        ];
        match capacity(&s, 0.9) {
            Capacity::Interpolated { offered_per_s, .. } => {
                assert!((offered_per_s - 12.5).abs() < 1e-12)
            }
            other => panic!("{other:?}"),
        }
    }

    fn ttft_check(measured: Option<f64>) -> CriterionCheck {
        CriterionCheck {
            name: "p95 ttft ms".into(),
            measured,
            comparison: "<=".into(),
            limit: 1000.0,
            pass: measured.is_some_and(|m| m <= 1000.0),
        }
    }

    fn failing(s: Step, ttft: f64) -> Step {
        Step {
            failed: vec![ttft_check(Some(ttft))],
            ..s
        }
    }

    #[test]
    fn a_limit_failing_above_the_highest_held_rate_caps_the_capacity_there() {
        // Pass share 1.0, 0.95, 0.92 ≥ 0.9 at every rate, but 30/s failed its
        // p95 TTFT: the capacity is 20/s (no interpolation), 30/s is named.
        let s = [
            step(10.0, 10.0, 10.0, 1.0, 300.0),
            step(20.0, 19.0, 20.0, 0.95, 600.0),
            failing(step(30.0, 27.6, 30.0, 0.92, 1102.0), 1102.0),
        ];
        assert_eq!(
            capacity(&s, 0.9),
            Capacity::Limited {
                offered_per_s: 20.0,
                held: RateShare {
                    offered_per_s: 20.0,
                    pass_share: 0.95
                },
                fails: RateShare {
                    offered_per_s: 30.0,
                    pass_share: 0.92
                },
                failed: vec![ttft_check(Some(1102.0))],
                below_target_under_capacity: vec![],
            }
        );
    }

    #[test]
    fn a_rate_short_of_the_target_only_is_still_interpolated() {
        // The limits held at 10 and 20/s; 20/s missed only the pass share
        // (0.8): 10 + (1.0 − 0.9) · 10 / (1.0 − 0.8) = 15, as without limits.
        let s = [
            step(10.0, 10.0, 10.0, 1.0, 300.0),
            step(20.0, 16.0, 20.0, 0.8, 600.0),
        ];
        match capacity(&s, 0.9) {
            Capacity::Interpolated { offered_per_s, .. } => {
                assert!((offered_per_s - 15.0).abs() < 1e-12)
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn when_no_rate_holds_a_limit_the_lowest_rate_says_what_failed() {
        // 10/s: pass share 0.85 < 0.9 and p95 TTFT 1200 > 1000; 20/s fails
        // the TTFT too. The pass share comes first, then the limit.
        let s = [
            failing(step(10.0, 8.5, 10.0, 0.85, 1200.0), 1200.0),
            failing(step(20.0, 19.0, 20.0, 0.95, 1500.0), 1500.0),
        ];
        let Capacity::NoneHolds {
            lowest_offered_per_s,
            best_pass_share,
            failed,
        } = capacity(&s, 0.9)
        else {
            panic!("{:?}", capacity(&s, 0.9));
        };
        assert_eq!((lowest_offered_per_s, best_pass_share), (10.0, 0.95));
        assert_eq!(failed.len(), 2);
        assert_eq!(
            (failed[0].name.as_str(), failed[0].measured, failed[0].limit),
            ("pass share", Some(0.85), 0.9)
        );
        assert_eq!(failed[1], ttft_check(Some(1200.0)));
    }

    #[test]
    fn repeats_fail_a_limit_at_their_worst() {
        // Three repeats at one rate: p95 TTFT 1100 (fails), 900 (holds), 1300
        // (fails): the step keeps 1300; an unmeasurable one is worse still.
        let point = |ttft: Option<f64>| FrontierPoint {
            checks: vec![ttft_check(ttft)],
            ..serde_json::from_value(serde_json::json!({
                "label": "t", "sha256": "", "nominalRatePerS": null, "cohort": 1,
                "offeredPerS": 1.0, "completedPerS": 1.0, "goodputPerS": 1.0,
                "passShare": 1.0, "goodputInterval": {"lower": 0.0, "upper": 1.0},
                "passShareInterval": null, "failureShare": 0.0, "censoredShare": 0.0,
                "p95TtftMs": null, "p95TpotMs": null, "tpotLabel": "tpot",
                "littlesInFlight": null, "inFlightMean": null
            }))
            .expect("a point")
        };
        let (a, b, c) = (point(Some(1100.0)), point(Some(900.0)), point(Some(1300.0)));
        assert_eq!(
            worst_failures(&[&a, &b, &c]),
            vec![ttft_check(Some(1300.0))]
        );
        let none = point(None);
        assert_eq!(worst_failures(&[&a, &none, &c]), vec![ttft_check(None)]);
        assert!(worst_failures(&[&b]).is_empty());
    }

    fn rate(offered_per_s: f64, pass_share: f64) -> RateShare {
        RateShare {
            offered_per_s,
            pass_share,
        }
    }

    #[test]
    fn a_bracket_far_apart_or_over_a_cliff_is_wide() {
        // 1.267/s at 94.7 % and 3.8/s at 0 %: 3.8 / 1.267 = 2.999 > 1.5 and
        // 0.947 − 0 = 94.7 points > 50: both rules.
        let w = WideBracket::of(&rate(1.267, 0.947), &rate(3.8, 0.0)).unwrap();
        assert_eq!(w.rules, ["rate_ratio", "share_drop"]);
        assert!((w.rate_ratio.unwrap() - 2.999_210_734_017_364).abs() < 1e-12);
        assert!((w.share_drop - 0.947).abs() < 1e-12);
        // 10/s at 100 % and 20/s at 90 % (a doubling sweep): ratio 2, drop 10 points.
        let w = WideBracket::of(&rate(10.0, 1.0), &rate(20.0, 0.9)).unwrap();
        assert_eq!(w.rules, ["rate_ratio"]);
        // 10/s at 95 % and 12/s at 30 %: ratio 1.2, but a 65-point cliff.
        let w = WideBracket::of(&rate(10.0, 0.95), &rate(12.0, 0.3)).unwrap();
        assert_eq!(w.rules, ["share_drop"]);
    }

    #[test]
    fn a_bracket_at_the_limits_or_inside_them_is_not_wide() {
        // 10/s and 15/s (ratio exactly 1.5), 100 % → 50 % (drop exactly 50 points).
        assert_eq!(WideBracket::of(&rate(10.0, 1.0), &rate(15.0, 0.5)), None);
        // 10/s at 100 %, 12/s at 80 %: ratio 1.2, drop 20 points.
        assert_eq!(WideBracket::of(&rate(10.0, 1.0), &rate(12.0, 0.8)), None);
    }

    #[test]
    fn the_interpolated_capacity_carries_its_bracket_warning() {
        // 100 % at 10/s, 90 % at 20/s, target 95 %: 15/s, bracket ratio 2 → wide.
        let steps = [
            step(10.0, 10.0, 10.0, 1.0, 100.0),
            step(20.0, 18.0, 20.0, 0.9, 150.0),
        ];
        match capacity(&steps, 0.95) {
            Capacity::Interpolated {
                offered_per_s,
                wide_bracket: Some(w),
                ..
            } => {
                assert!((offered_per_s - 15.0).abs() < 1e-9);
                assert_eq!(w.rules, ["rate_ratio"]);
            }
            other => panic!("{other:?}"),
        }
        // 100 % at 10/s, 90 % at 12/s: 11/s, narrow → no warning.
        let steps = [
            step(10.0, 10.0, 10.0, 1.0, 100.0),
            step(12.0, 10.8, 12.0, 0.9, 110.0),
        ];
        match capacity(&steps, 0.95) {
            Capacity::Interpolated {
                offered_per_s,
                wide_bracket: None,
                ..
            } => assert!((offered_per_s - 11.0).abs() < 1e-9),
            other => panic!("{other:?}"),
        }
    }
}
