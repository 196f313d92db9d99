//! Two runs side by side: is B really better or worse than A, or is the
//! difference within the noise of runs this size?
//!
//! The comparison reads two receipts built at the same confidence and judged
//! under the same contract. For every block (all rows, then each class) and
//! every headline figure it gives A, B, the difference B − A with its
//! interval, a verdict, and the smallest difference this pair could have
//! detected. The interval methods are in [`crate::intervals`]: Newcombe's
//! hybrid score interval for shares, the MOVER on order-statistic intervals
//! for percentiles, and for goodput/s either Newcombe's interval of the pass
//! shares scaled by cohort / window (two blocks with the same cohort in the
//! same window: the pass count of a known cohort is binomial, see
//! [`goodput_difference`]) or the MOVER on exact Poisson intervals (cohorts
//! that differ: the arrivals differ too, and their count is part of the noise).
//!
//! **Verdict.** When the difference interval lies entirely on the good side
//! of 0 the figure is `better`; entirely on the bad side, `worse`; when it
//! contains 0, `indistinguishable`; when there is no interval at all (an
//! empty cohort, or too few values for a percentile's), `too_few_values`,
//! never `indistinguishable`: a figure that cannot be judged has not been
//! found equal (higher goodput and pass share are good; lower failure share
//! and latency are good).
//!
//! **Closed loop.** A closed-loop run (docs/contract.md §10.2) paced its own
//! load, so it is not compared with an open-loop run unless asked
//! ([`CompareOptions::allow_closed_loop`]); any comparison with a closed-loop
//! side says that it is not SLA evidence.
//!
//! **Minimum detectable difference** (at 80 % power):
//! `MDD = (z_{1−α/2} + z_{0.80}) · SE`, with `SE = (U − L) / (2 z_{1−α/2})`
//! recovered from the difference interval `[L, U]`. **Requests per run
//! needed** to detect the observed difference `d`:
//! `n · (MDD / |d|)²`, with `n` the mean cohort of the two runs (every
//! interval here narrows as 1/√n); null for a zero difference (nothing to
//! detect) and beyond [`PRACTICAL_REQUESTS_PER_RUN`] (no run could).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::intervals::{
    self, min_n_for_quantile_at, minimum_detectable, mover, newcombe, percent, poisson_exact,
    required_requests, Confidence, Estimate, Interval, QuantileInterval,
};
use crate::receipt::{Block, ContractInfo, LatencyMetric, Receipt};
use crate::stats::{Percentile, PercentileSet};
use crate::trace::{ArrivalMode, Trace};

/// The schema tag of every comparison this version writes.
pub const COMPARE_SCHEMA: &str = "goodput-compare/1";

/// The goodput difference of two blocks with the same cohort in windows of
/// the same length: Newcombe's interval of the pass shares times cohort /
/// window seconds ([`goodput_difference`]).
pub const KNOWN_COHORT_RATE_DIFFERENCE: &str = "known-cohort-newcombe";

/// The largest `requiredRequestsPerRun` stated: 10⁹ requests is a run at
/// 10,000 req/s for more than a day. Beyond it the figure is null with a
/// note, since a number that large (or the 2⁶⁴ − 1 an unchecked cast would
/// give for a difference of 10⁻¹²) only says "no run of this kind will tell".
pub const PRACTICAL_REQUESTS_PER_RUN: u64 = 1_000_000_000;

/// A headline figure that two runs are compared on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Figure {
    /// Passing requests per window second.
    Goodput,
    /// pass / cohort.
    PassShare,
    /// failed / cohort.
    FailureShare,
    /// Completed rows without a first answer token / completed rows
    /// (docs/contract.md §10.16), for blocks with an `answer` block.
    NoAnswerShare,
    /// Reasoning tokens / output tokens of the rows that report them.
    ReasoningShare,
    /// A nearest-rank percentile of one latency metric (`p95_ttft`, `p99.9_e2e`).
    Latency(Metric, Percentile),
}

/// Which latency metric a percentile figure reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Metric {
    /// Time to first token.
    Ttft,
    /// Time per output token (or chunk cadence).
    Tpot,
    /// End to end.
    E2e,
    /// Time to first answer token (docs/contract.md §10.16).
    Ttfa,
    /// The gaps between token-carrying events, pooled over rows (§10.15).
    Itl,
}

impl Metric {
    const ALL: [Metric; 5] = [
        Metric::Ttft,
        Metric::Tpot,
        Metric::E2e,
        Metric::Ttfa,
        Metric::Itl,
    ];

    /// The percentiles a receipt's `answer` and `gaps` blocks hold: TTFA and
    /// ITL are compared at these only.
    const FIXED: [u32; 3] = [50, 95, 99];

    fn name(self) -> &'static str {
        match self {
            Metric::Ttft => "ttft",
            Metric::Tpot => "tpot",
            Metric::E2e => "e2e",
            Metric::Ttfa => "ttfa",
            Metric::Itl => "itl",
        }
    }

    /// Whether a block's fixed fields are all it has of this metric (p50,
    /// p95 and p99; no `--percentiles`).
    fn fixed_only(self) -> bool {
        matches!(self, Metric::Ttfa | Metric::Itl)
    }
}

impl Figure {
    /// The percentiles compared when none are asked for: p95 and p99.
    pub const DEFAULT_PERCENTILES: [u32; 2] = [95, 99];

    /// The figures compared at the default percentiles, in the order they are printed.
    pub fn defaults() -> Vec<Figure> {
        let mut ps: Vec<Percentile> = Self::DEFAULT_PERCENTILES.map(Percentile::whole).to_vec();
        Figure::at(&PercentileSet::from_values(&mut ps).unwrap_or_default())
    }

    /// The figures compared at `percentiles` (`compare --percentiles`): the
    /// counts and shares, then each metric at each percentile, in print
    /// order; TTFA and ITL only at those of p50, p95 and p99 listed (the
    /// percentiles their receipt blocks hold). A block compares the answer
    /// figures only when a run has an `answer` block, and ITL only when a
    /// run has a `gaps` block.
    pub fn at(percentiles: &PercentileSet) -> Vec<Figure> {
        let mut out = vec![
            Figure::Goodput,
            Figure::PassShare,
            Figure::FailureShare,
            Figure::NoAnswerShare,
            Figure::ReasoningShare,
        ];
        for metric in Metric::ALL {
            out.extend(
                percentiles
                    .as_slice()
                    .iter()
                    .filter(|p| {
                        !metric.fixed_only() || Metric::FIXED.map(Percentile::whole).contains(p)
                    })
                    .map(|&p| Figure::Latency(metric, p)),
            );
        }
        out
    }

    /// The name used by `--fail-if-worse` and in the JSON.
    pub fn key(self) -> String {
        match self {
            Figure::Goodput => "goodput".to_owned(),
            Figure::PassShare => "pass_share".to_owned(),
            Figure::FailureShare => "failure_share".to_owned(),
            Figure::NoAnswerShare => "no_answer_share".to_owned(),
            Figure::ReasoningShare => "reasoning_share".to_owned(),
            Figure::Latency(metric, p) => format!("p{p}_{}", metric.name()),
        }
    }

    /// Whether a larger value is the better one. A lower reasoning share is
    /// read as the better one: the same work answered with fewer thinking
    /// tokens is sooner and cheaper (docs/intervals.md).
    pub fn higher_is_better(self) -> bool {
        matches!(self, Figure::Goodput | Figure::PassShare)
    }

    /// The unit of the figure's values.
    pub fn unit(self) -> &'static str {
        match self {
            Figure::Goodput => "req/s",
            Figure::PassShare
            | Figure::FailureShare
            | Figure::NoAnswerShare
            | Figure::ReasoningShare => "share",
            Figure::Latency(..) => "ms",
        }
    }

    fn percentile(self) -> Option<(Metric, Percentile)> {
        match self {
            Figure::Latency(metric, p) => Some((metric, p)),
            _ => None,
        }
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.key())
    }
}

/// A figure name that is not a figure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown figure {0:?}: use goodput, pass_share, failure_share, no_answer_share, reasoning_share, or pP_ttft, pP_tpot, pP_e2e with P a percentile (p95_ttft, p99.9_e2e), pP_ttfa or pP_itl with P 50, 95 or 99")]
pub struct UnknownFigure(pub String);

impl FromStr for Figure {
    type Err = UnknownFigure;
    fn from_str(s: &str) -> Result<Figure, UnknownFigure> {
        let name = s.trim();
        let unknown = || UnknownFigure(s.to_owned());
        match name {
            "goodput" => return Ok(Figure::Goodput),
            "pass_share" => return Ok(Figure::PassShare),
            "failure_share" => return Ok(Figure::FailureShare),
            "no_answer_share" => return Ok(Figure::NoAnswerShare),
            "reasoning_share" => return Ok(Figure::ReasoningShare),
            _ => {}
        }
        let (p, metric) = name
            .strip_prefix('p')
            .and_then(|rest| rest.split_once('_'))
            .ok_or_else(unknown)?;
        let metric = Metric::ALL
            .into_iter()
            .find(|m| m.name() == metric)
            .ok_or_else(unknown)?;
        let p = Percentile::parse(p).map_err(|_| unknown())?;
        if metric.fixed_only() && !Metric::FIXED.map(Percentile::whole).contains(&p) {
            return Err(unknown());
        }
        Ok(Figure::Latency(metric, p))
    }
}

/// What a comparison concluded about one figure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// B is better than A beyond the noise.
    Better,
    /// B is worse than A beyond the noise.
    Worse,
    /// The difference interval contains 0.
    Indistinguishable,
    /// There is no difference interval (an empty cohort, or too few values
    /// for a percentile's interval): the figure cannot be judged, which is
    /// not the same as finding it equal. `--fail-if-worse` fails on it.
    TooFewValues,
}

impl Verdict {
    /// The words printed for people.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Indistinguishable => "indistinguishable",
            Verdict::TooFewValues => "too few values",
        }
    }
}

/// A comparison of two runs (`goodput compare A B --json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "goodput-compare/1")]
pub struct Comparison {
    /// Always `goodput-compare/1`.
    pub schema: String,
    /// Two-sided confidence level of every interval, e.g. 0.95.
    pub confidence: f64,
    /// How each interval and derived number was computed.
    pub methods: CompareMethods,
    /// The baseline run.
    pub a: RunInfo,
    /// The run compared with it.
    pub b: RunInfo,
    /// Whether B was re-judged under A's gates and equality rule (`--judge-under A`).
    pub judged_under_a: bool,
    /// Null when both runs are open-loop. Otherwise which run is closed-loop
    /// (docs/contract.md §10.2) and why the comparison is not SLA evidence.
    pub closed_loop: Option<String>,
    /// All rows first (`class` null), then each class by name.
    pub blocks: Vec<BlockComparison>,
    /// Quality A vs B, when both receipts carry a `quality` block
    /// (docs/contract.md §10.19); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality: Option<QualityComparison>,
}

/// The quality bank's share of met expectations, A vs B: the shares of
/// items met over items judged, their difference with Newcombe's interval
/// (Wilson per side, combined by the MOVER) and a verdict. Two different
/// banks are not compared item for item: then only the note says so.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QualityComparison {
    /// A's items met / judged (met + missed + failed); null when none judged.
    pub a: Option<f64>,
    /// B's.
    pub b: Option<f64>,
    /// A's judged items.
    pub judged_a: u64,
    /// B's judged items.
    pub judged_b: u64,
    /// B − A with its interval; null when a side has nothing judged or the
    /// banks differ.
    pub difference: Option<Interval>,
    /// `better`, `worse`, `indistinguishable`, or `not_compared`.
    pub verdict: String,
    /// Why not compared (different banks, nothing judged), or null.
    pub note: Option<String>,
}

/// Compares two receipts' quality blocks.
fn compare_quality(
    a: &crate::quality::QualityBlock,
    b: &crate::quality::QualityBlock,
    confidence: Confidence,
) -> QualityComparison {
    let judged = |q: &crate::quality::QualityBlock| q.met + q.missed + q.failed;
    let (na, nb) = (judged(a), judged(b));
    let same_bank = a.bank_sha256 == b.bank_sha256;
    let difference = if same_bank {
        newcombe(a.met, na, b.met, nb, confidence)
    } else {
        None
    };
    let d = a.share.zip(b.share).map(|(x, y)| y - x);
    let verdict = match (difference, d) {
        (Some(i), Some(_)) if i.lower > 0.0 => "better",
        (Some(i), Some(_)) if i.upper < 0.0 => "worse",
        (Some(_), Some(_)) => "indistinguishable",
        _ => "not_compared",
    };
    let note = if !same_bank {
        Some(format!(
            "the runs answered different banks (sha256 {} vs {}): shares are shown, not compared",
            &a.bank_sha256[..a.bank_sha256.len().min(12)],
            &b.bank_sha256[..b.bank_sha256.len().min(12)]
        ))
    } else if difference.is_none() {
        Some("a run has no judged item".to_owned())
    } else {
        None
    };
    QualityComparison {
        a: a.share,
        b: b.share,
        judged_a: na,
        judged_b: nb,
        difference,
        verdict: verdict.to_owned(),
        note,
    }
}

/// The methods of a comparison, named and stated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompareMethods {
    /// Difference of two shares: `newcombe-hybrid-score`.
    pub share_difference: String,
    /// Difference of two goodput rates whose blocks' cohorts differ:
    /// `mover-exact-poisson`.
    pub rate_difference: String,
    /// Difference of two goodput rates whose blocks have the same cohort in
    /// windows of the same length: `known-cohort-newcombe`.
    pub rate_difference_known_cohort: String,
    /// Difference of two percentiles: `mover-order-statistic`.
    pub quantile_difference: String,
    /// Difference of two percentiles of values pooled over rows (the ITL
    /// figures): `mover-woodruff-row-clustered`; absent when no block
    /// compares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled_quantile_difference: Option<String>,
    /// Difference of two shares of units pooled over rows (the reasoning
    /// share): `newcombe-row-clustered`; absent when no block compares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled_share_difference: Option<String>,
    /// The formula of `minimumDetectable`.
    pub minimum_detectable: String,
    /// The formula of `requiredRequestsPerRun`.
    pub required_requests_per_run: String,
}

/// Which run a side of the comparison is.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RunInfo {
    /// sha256 of the trace.
    pub sha256: String,
    /// Cohort of all rows.
    pub cohort: u64,
    /// Window length, s.
    pub window_s: f64,
    /// `open-loop` or `closed-loop`, as the run's receipt names it (§10.2).
    pub arrival_mode: ArrivalMode,
    /// The cap on requests in flight of a capped open loop (§10.2); absent
    /// when uncapped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<f64>,
    /// Per-GPU and cost figures of the run, when resources are in force
    /// (declared by its trace, or `--gpus` / `--gpu-hour-cost`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<crate::receipt::cost::Cost>,
}

/// The figures of one block of both runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BlockComparison {
    /// The class, or null for all rows.
    pub class: Option<String>,
    /// Cohort of this block in A.
    pub cohort_a: u64,
    /// Cohort of this block in B.
    pub cohort_b: u64,
    /// How goodput's difference interval was found: `known-cohort-newcombe`
    /// (same cohort, same window length) or `mover-exact-poisson`.
    pub goodput_method: String,
    /// One entry per figure, in a fixed order.
    pub figures: Vec<FigureComparison>,
}

/// One figure of both runs, their difference and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FigureComparison {
    /// `goodput`, `pass_share`, `failure_share`, `p95_ttft`, … (the `--fail-if-worse` names).
    pub figure: String,
    /// `req/s`, `share` or `ms`.
    pub unit: String,
    /// `higher` or `lower`: which direction is better.
    pub better_when: String,
    /// A's value (null when A has none, e.g. an empty cohort).
    pub a: Option<f64>,
    /// B's value.
    pub b: Option<f64>,
    /// B − A.
    pub difference: Option<f64>,
    /// Interval of B − A at the declared confidence (null when either side has no interval).
    pub interval: Option<Interval>,
    /// `better`, `worse`, `indistinguishable`, or `too_few_values` when
    /// there is no interval.
    pub verdict: Verdict,
    /// The smallest true difference this pair would detect at 80 % power (same unit).
    pub minimum_detectable: Option<f64>,
    /// For an indistinguishable, non-zero difference: requests per run needed
    /// to detect a difference this large at 80 % power (null beyond 10⁹).
    /// For `too_few_values` on a percentile with a non-zero difference: the
    /// values per run needed before an interval exists at all (a lower bound).
    /// Null for a zero difference: there is nothing to detect.
    pub required_requests_per_run: Option<u64>,
    /// Why something is null, for people.
    pub note: Option<String>,
}

impl Comparison {
    /// Every (block, figure) among `watched` on which B is worse: the
    /// regression gate. Blocks are named `all` or by class.
    pub fn worse_on(&self, watched: &[Figure]) -> Vec<(String, String)> {
        self.with_verdict(watched, Verdict::Worse)
    }

    /// Every (block, figure) among `watched` that cannot be judged
    /// (`too_few_values`), and every watched figure the `all` block does
    /// not compare at all (an ITL figure of two runs without gaps, a TTFA
    /// figure of two runs without answer instants): the regression gate
    /// fails on these too, since a gate that cannot judge must not say
    /// "not worse".
    pub fn unjudged_on(&self, watched: &[Figure]) -> Vec<(String, String)> {
        let mut out = self.with_verdict(watched, Verdict::TooFewValues);
        if let Some(all) = self.blocks.first() {
            for figure in watched {
                let key = figure.key();
                if !all.figures.iter().any(|f| f.figure == key) {
                    out.push((block_name(all), key));
                }
            }
        }
        out
    }

    fn with_verdict(&self, watched: &[Figure], verdict: Verdict) -> Vec<(String, String)> {
        let names: Vec<String> = watched.iter().map(|f| f.key()).collect();
        self.blocks
            .iter()
            .flat_map(|block| {
                block
                    .figures
                    .iter()
                    .filter(|f| f.verdict == verdict && names.contains(&f.figure))
                    .map(|f| (block_name(block), f.figure.clone()))
            })
            .collect()
    }
}

/// What a comparison is asked to do beyond comparing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CompareOptions {
    /// B was re-judged under A's gates and equality rule (`--judge-under A`).
    pub judged_under_a: bool,
    /// Compare a closed-loop run with an open-loop one (`--allow-closed-loop`)
    /// instead of refusing.
    pub allow_closed_loop: bool,
    /// Compare two open-loop runs whose caps on requests in flight differ
    /// (`--allow-cap-mismatch`) instead of refusing.
    pub allow_cap_mismatch: bool,
}

/// `all` or the class's name.
pub fn block_name(block: &BlockComparison) -> String {
    block.class.clone().unwrap_or_else(|| "all".to_owned())
}

/// One place where the two runs' contracts differ.
#[derive(Clone, Debug, PartialEq)]
pub struct ContractDifference {
    /// JSON pointer into the receipt.
    pub path: String,
    /// A's value.
    pub a: Value,
    /// B's value.
    pub b: Value,
}

/// Why two runs cannot be compared (exit status 2).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum CompareError {
    /// The runs were judged under different contracts.
    #[error(
        "the two runs were judged under different contracts, so their figures do not measure \
         the same thing: {}{}",
        list(.0),
        if .0.iter().all(|d| d.path.contains("/classes/") || d.path.ends_with("/equality")) {
            " (--judge-under A re-judges B under A's gates and equality rule)"
        } else {
            ""
        }
    )]
    ContractsDiffer(Vec<ContractDifference>),
    /// One run is closed-loop, the other open-loop (docs/contract.md §10.2).
    #[error(
        "{closed} is closed-loop and {open} is open-loop (contract.arrivalMode): a closed loop \
         sends each request when an earlier one ends, so its server paced its own load and its \
         figures are not comparable with a run under an offered rate (docs/contract.md §10.2); \
         --allow-closed-loop compares them anyway"
    )]
    ClosedAgainstOpen {
        /// `A` or `B`: the closed-loop run.
        closed: &'static str,
        /// The other, open-loop run.
        open: &'static str,
    },
    /// Two open-loop runs with different caps on requests in flight (§10.2).
    #[error(
        "A is {a} and B is {b} (workload.loop, workload.maxConcurrency): a cap delays \
         arrivals that find it full and their latencies include the wait, so the runs' \
         figures do not measure the same thing (docs/contract.md §10.2); \
         --allow-cap-mismatch compares them anyway"
    )]
    CapsDiffer {
        /// A's load, in words.
        a: String,
        /// B's load, in words.
        b: String,
    },
    /// A receipt given for one side is not what its trace gives.
    #[error(
        "{receipt} does not verify against {trace} ({first}); \
         run `goodput verify {receipt} {trace}` for every difference"
    )]
    ReceiptDisagrees {
        /// The receipt as named on the command line.
        receipt: String,
        /// The trace as named on the command line.
        trace: String,
        /// The first thing that differs.
        first: String,
    },
}

fn list(differences: &[ContractDifference]) -> String {
    differences
        .iter()
        .map(|d| format!("{} is {} in A and {} in B", d.path, d.a, d.b))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Replaces B's gates (for every class A also declares) and equality rule
/// with A's, so B can be re-judged under A's contract.
pub fn adopt_gates(a: &Trace, b: &mut Trace) {
    b.contract.equality = a.contract.equality;
    for (name, gates) in &mut b.contract.classes {
        if let Some(theirs) = a.contract.classes.get(name) {
            *gates = *theirs;
        }
    }
}

/// The parts of the contract two runs must share to be compared: gates,
/// equality, token counting, window and warm-up lengths, grace, the default
/// class and the intervals' level. Labels (seed, host, …) may differ.
pub fn contract_differences(a: &ContractInfo, b: &ContractInfo) -> Vec<ContractDifference> {
    let warmup_ms = |c: &ContractInfo| c.warmup.map(|w| w.end_ms - w.start_ms);
    let fields: [(&str, Value, Value); 8] = [
        (
            "/contract/equality",
            a.equality.clone().into(),
            b.equality.clone().into(),
        ),
        (
            "/contract/tokens",
            a.tokens.clone().into(),
            b.tokens.clone().into(),
        ),
        (
            "/contract/window/durationMs",
            a.window.duration_ms.into(),
            b.window.duration_ms.into(),
        ),
        (
            "/contract/window (horizonMs − endMs)",
            (a.window.horizon_ms - a.window.end_ms).into(),
            (b.window.horizon_ms - b.window.end_ms).into(),
        ),
        (
            "/contract/warmup (endMs − startMs)",
            warmup_ms(a).into(),
            warmup_ms(b).into(),
        ),
        (
            "/contract/defaultClass",
            a.default_class.clone().into(),
            b.default_class.clone().into(),
        ),
        (
            "/contract/intervals/confidence",
            a.intervals.confidence.into(),
            b.intervals.confidence.into(),
        ),
        (
            "/contract/classes (names)",
            a.classes.keys().cloned().collect::<Vec<_>>().into(),
            b.classes.keys().cloned().collect::<Vec<_>>().into(),
        ),
    ];
    let mut differences: Vec<ContractDifference> = fields
        .into_iter()
        .filter(|(_, x, y)| x != y)
        .map(|(path, a, b)| ContractDifference {
            path: path.to_owned(),
            a,
            b,
        })
        .collect();
    for (name, gates) in &a.classes {
        if let Some(theirs) = b.classes.get(name) {
            if gates != theirs {
                differences.push(ContractDifference {
                    path: format!("/contract/classes/{}", goodput_util::pointer::escape(name)),
                    a: serde_json::to_value(gates).unwrap_or(Value::Null),
                    b: serde_json::to_value(theirs).unwrap_or(Value::Null),
                });
            }
        }
    }
    differences
}

/// Compares two receipts judged under the same contract (checked here),
/// refusing a closed-loop run against an open-loop one unless allowed, on
/// the default figures ([`Figure::defaults`]: latency at p95 and p99).
pub fn compare(
    a: &Receipt,
    b: &Receipt,
    options: CompareOptions,
) -> Result<Comparison, CompareError> {
    compare_at(a, b, options, &Figure::defaults())
}

/// [`compare`] on the given figures (`compare --percentiles`: [`Figure::at`]).
/// A percentile figure needs both receipts built for that percentile
/// ([`crate::receipt::attach_percentiles`]); without it, it has no interval.
pub fn compare_at(
    a: &Receipt,
    b: &Receipt,
    options: CompareOptions,
    figures: &[Figure],
) -> Result<Comparison, CompareError> {
    let differences = contract_differences(&a.contract, &b.contract);
    if !differences.is_empty() {
        return Err(CompareError::ContractsDiffer(differences));
    }
    let closed_loop = closed_loop_note(
        a.contract.arrival_mode,
        b.contract.arrival_mode,
        options.allow_closed_loop,
    )?;
    let cap = |r: &Receipt| crate::trace::concurrency_cap(&r.contract.workload);
    if cap(a) != cap(b) && !options.allow_cap_mismatch {
        let said = |c: Option<f64>| match c {
            Some(c) => format!(
                "an open loop capped at {} in flight",
                goodput_util::number::decimal(c)
            ),
            None => "an uncapped open loop".to_owned(),
        };
        return Err(CompareError::CapsDiffer {
            a: said(cap(a)),
            b: said(cap(b)),
        });
    }
    let confidence = Confidence::new(a.contract.intervals.confidence).unwrap_or_default();
    let window_s = |r: &Receipt| r.contract.window.duration_ms / 1000.0;
    let windows = (window_s(a), window_s(b));
    let mut blocks = vec![compare_blocks(
        None,
        (&a.results.all, &b.results.all),
        windows,
        confidence,
        figures,
    )];
    let classes_b: &BTreeMap<String, Block> = &b.results.classes;
    for (name, block_a) in &a.results.classes {
        if let Some(block_b) = classes_b.get(name) {
            blocks.push(compare_blocks(
                Some(name),
                (block_a, block_b),
                windows,
                confidence,
                figures,
            ));
        }
    }
    let run = |r: &Receipt| RunInfo {
        sha256: r.trace.sha256.clone(),
        cohort: r.results.all.counts.cohort,
        window_s: window_s(r),
        arrival_mode: r.contract.arrival_mode,
        max_concurrency: cap(r),
        cost: r.cost.clone(),
    };
    Ok(Comparison {
        schema: COMPARE_SCHEMA.to_owned(),
        confidence: confidence.level(),
        methods: CompareMethods {
            share_difference: intervals::method::SHARE_DIFFERENCE.to_owned(),
            rate_difference: intervals::method::RATE_DIFFERENCE.to_owned(),
            rate_difference_known_cohort: KNOWN_COHORT_RATE_DIFFERENCE.to_owned(),
            quantile_difference: intervals::method::QUANTILE_DIFFERENCE.to_owned(),
            pooled_quantile_difference: compares(&blocks, |f| {
                matches!(f, Figure::Latency(Metric::Itl, _))
            })
            .then(|| intervals::method::CLUSTERED_QUANTILE_DIFFERENCE.to_owned()),
            pooled_share_difference: compares(&blocks, |f| f == Figure::ReasoningShare)
                .then(|| intervals::method::CLUSTERED_SHARE_DIFFERENCE.to_owned()),
            minimum_detectable:
                "(z(1-alpha/2) + z(0.80)) * SE, SE = (upper - lower) / (2 z(1-alpha/2))".to_owned(),
            required_requests_per_run:
                "n * (minimumDetectable / |difference|)^2, n = mean cohort of the two runs; \
                 null for a zero difference or beyond 1e9"
                    .to_owned(),
        },
        a: run(a),
        b: run(b),
        judged_under_a: options.judged_under_a,
        closed_loop,
        blocks,
        quality: a
            .quality
            .as_ref()
            .zip(b.quality.as_ref())
            .map(|(qa, qb)| compare_quality(qa, qb, confidence)),
    })
}

/// Whether any block compares a figure that `which` picks.
fn compares(blocks: &[BlockComparison], which: impl Fn(Figure) -> bool) -> bool {
    blocks
        .iter()
        .flat_map(|b| &b.figures)
        .any(|f| f.figure.parse().is_ok_and(&which))
}

/// Refuses a closed-loop run against an open-loop one unless `allow`; any
/// comparison with a closed-loop side gets the note that says so.
fn closed_loop_note(
    a: ArrivalMode,
    b: ArrivalMode,
    allow: bool,
) -> Result<Option<String>, CompareError> {
    let closed = |m: ArrivalMode| m == ArrivalMode::ClosedLoop;
    let (who, open) = match (closed(a), closed(b)) {
        (false, false) => return Ok(None),
        (true, true) => {
            return Ok(Some(
                "A and B are closed-loop: each request was sent when an earlier one ended, so \
                 each server paced its own load; the comparison is not SLA evidence at any \
                 offered rate (docs/contract.md §10.2)"
                    .to_owned(),
            ))
        }
        (true, false) => ("A", "B"),
        (false, true) => ("B", "A"),
    };
    if !allow {
        return Err(CompareError::ClosedAgainstOpen { closed: who, open });
    }
    Ok(Some(format!(
        "{who} is closed-loop and {open} is open-loop (compared with --allow-closed-loop): {who}'s \
         server paced its own load, so the comparison is not SLA evidence (docs/contract.md §10.2)"
    )))
}

fn compare_blocks(
    class: Option<&String>,
    (a, b): (&Block, &Block),
    windows: (f64, f64),
    confidence: Confidence,
    figures: &[Figure],
) -> BlockComparison {
    let n_now = (a.counts.cohort + b.counts.cohort) as f64 / 2.0;
    let side = |x: &Block, window_s: f64| PassCount {
        pass: x.counts.pass,
        cohort: x.counts.cohort,
        window_s,
    };
    let goodput = goodput_difference(side(a, windows.0), side(b, windows.1), confidence);
    let cohort = |x: &Block, count: u64| (count, x.counts.cohort);
    let figures = figures
        .iter()
        .filter(|&&figure| applies(figure, a, b))
        .map(|&figure| {
            let sides = match figure {
                Figure::Goodput => rate_sides(a, b, goodput.interval),
                Figure::PassShare => share_sides(
                    cohort(a, a.counts.pass),
                    cohort(b, b.counts.pass),
                    confidence,
                ),
                Figure::FailureShare => share_sides(
                    cohort(a, a.counts.failed),
                    cohort(b, b.counts.failed),
                    confidence,
                ),
                Figure::NoAnswerShare => no_answer_sides(a, b, confidence),
                Figure::ReasoningShare => reasoning_sides(a, b),
                Figure::Latency(..) => percentile_sides(figure, a, b, confidence),
            };
            figure_comparison(figure, sides, n_now, confidence)
        })
        .collect();
    BlockComparison {
        class: class.cloned(),
        cohort_a: a.counts.cohort,
        cohort_b: b.counts.cohort,
        goodput_method: goodput.method.to_owned(),
        figures,
    }
}

/// Both runs' values of one figure, and the difference interval when both
/// have one (or why not).
struct Sides {
    a: Option<f64>,
    b: Option<f64>,
    interval: Result<Interval, NoInterval>,
}

/// Why a figure has no difference interval; its text is the figure's `note`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
enum NoInterval {
    /// A share of an empty cohort.
    #[error("a cohort is empty")]
    EmptyCohort,
    /// The figure is not a percentile (never asked of one that is).
    #[error("not a percentile")]
    NotAPercentile,
    /// A run's receipt has no block to read the figure from.
    #[error("{side}'s receipt has no {what}")]
    Absent {
        /// `A` or `B`.
        side: &'static str,
        /// What is missing, in words.
        what: &'static str,
    },
    /// A row-clustered interval does not exist (its reason, as the receipt
    /// gives it).
    #[error("{0}")]
    TooFewRows(String),
    /// A run has too few values for a distribution-free interval of the percentile.
    #[error(
        "too few values for a distribution-free {percent}% interval of p{p}: it needs at least {needed} per run"
    )]
    TooFewValues {
        /// The confidence level, in percent as printed.
        percent: String,
        /// The percentile.
        p: Percentile,
        /// Requests per run needed before an interval exists at all.
        needed: u64,
    },
}

impl NoInterval {
    /// Requests per run needed before an interval exists at all (percentiles
    /// of runs too small).
    fn needed_per_run(&self) -> Option<u64> {
        match self {
            NoInterval::TooFewValues { needed, .. } => Some(*needed),
            NoInterval::EmptyCohort
            | NoInterval::NotAPercentile
            | NoInterval::Absent { .. }
            | NoInterval::TooFewRows(_) => None,
        }
    }
}

/// One side of a goodput figure: its pass count, cohort and window length.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PassCount {
    /// Cohort rows that passed.
    pub pass: u64,
    /// Rows arriving in the window (after any warm-up).
    pub cohort: u64,
    /// Window seconds goodput divides by.
    pub window_s: f64,
}

/// A goodput difference interval and the method that gave it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GoodputDifference {
    /// Interval of `pass_B / T_B − pass_A / T_A`.
    pub interval: Interval,
    /// [`KNOWN_COHORT_RATE_DIFFERENCE`] or `mover-exact-poisson`.
    pub method: &'static str,
}

/// The interval of goodput B − A (docs/intervals.md, "Goodput on known
/// cohorts").
///
/// Goodput is `pass / T`. Given its cohort `n` (the arrivals the schedule put
/// in the window) each row passes or not, so `pass` is Binomial(n, p); the
/// Poisson interval on `pass` adds the noise of how many arrivals there
/// were, which two runs with the same cohort do not differ by. With
/// `n_A = n_B = n > 0` and `T_A = T_B = T`, B − A is exactly
/// `(n / T)(p̂_B − p̂_A)`, so its interval is `(n / T)` times Newcombe's
/// interval of the pass shares, and goodput always reads as pass share does.
///
/// When the cohorts (or windows) differ, the runs did not see the same
/// arrivals, and the difference in how many arrived is part of the noise:
/// `n_B p̂_B − n_A p̂_A = n̄ (p̂_B − p̂_A) + (n_B − n_A) p̄`, whose variance
/// under independent Poisson schedules is `2 n̄ p q` (binomial) + `2 n̄ p²`
/// (arrivals) = `2 n̄ p`, the variance of two Poisson counts of mean `n̄ p`.
/// That is the MOVER on the exact Poisson intervals, kept for this case.
/// Binomial noise alone would call identical servers better or worse
/// whenever their seeds drew different arrival counts (a unit test below
/// measures how often).
pub fn goodput_difference(a: PassCount, b: PassCount, confidence: Confidence) -> GoodputDifference {
    if a.window_s == b.window_s && a.cohort == b.cohort && a.window_s > 0.0 {
        let scale = a.cohort as f64 / a.window_s;
        if let Some(i) = newcombe(a.pass, a.cohort, b.pass, b.cohort, confidence) {
            return GoodputDifference {
                interval: Interval {
                    lower: scale * i.lower,
                    upper: scale * i.upper,
                },
                method: KNOWN_COHORT_RATE_DIFFERENCE,
            };
        }
    }
    let estimate = |x: PassCount| {
        let i = poisson_exact(x.pass, confidence);
        Estimate {
            value: x.pass as f64 / x.window_s,
            interval: Interval {
                lower: i.lower / x.window_s,
                upper: i.upper / x.window_s,
            },
        }
    };
    GoodputDifference {
        interval: mover(estimate(a), estimate(b)),
        method: intervals::method::RATE_DIFFERENCE,
    }
}

fn rate_sides(a: &Block, b: &Block, interval: Interval) -> Sides {
    Sides {
        a: Some(a.rates.goodput_per_s),
        b: Some(b.rates.goodput_per_s),
        interval: Ok(interval),
    }
}

/// A share of `(x, n)` in each run, by Newcombe's interval.
fn share_sides((xa, na): (u64, u64), (xb, nb): (u64, u64), confidence: Confidence) -> Sides {
    let share = |x: u64, n: u64| (n > 0).then(|| x as f64 / n as f64);
    Sides {
        a: share(xa, na),
        b: share(xb, nb),
        interval: newcombe(xa, na, xb, nb, confidence).ok_or(NoInterval::EmptyCohort),
    }
}

/// Whether a block compares `figure`: the answer figures when a run has an
/// `answer` block (the reasoning share when a run has reasoning counts),
/// ITL when a run has a `gaps` block; every other figure always.
fn applies(figure: Figure, a: &Block, b: &Block) -> bool {
    let either = |has: fn(&Block) -> bool| has(a) || has(b);
    match figure {
        Figure::NoAnswerShare | Figure::Latency(Metric::Ttfa, _) => either(|x| x.answer.is_some()),
        Figure::ReasoningShare => either(|x| reasoning_of(x).is_some()),
        Figure::Latency(Metric::Itl, _) => either(|x| x.gaps.is_some()),
        _ => true,
    }
}

/// What a receipt lacks when it has no `answer` block.
const NO_ANSWER_BLOCK: &str = "answer figures (no firstAnswerMs, reasoningTokens or ttfaMs gate)";
/// What a receipt lacks when it has no reasoning counts.
const NO_REASONING: &str = "reasoning counts (no row carries reasoningTokens)";
/// What a receipt lacks when it has no `gaps` block.
const NO_GAPS: &str = "gap figures (no row carries gapsMs)";

/// `what` is missing from A's receipt when `a_lacks`, else from B's.
fn absent(a_lacks: bool, what: &'static str) -> NoInterval {
    NoInterval::Absent {
        side: if a_lacks { "A" } else { "B" },
        what,
    }
}

/// A block's reasoning counts, when it has them.
fn reasoning_of(x: &Block) -> Option<&crate::receipt::answer::Reasoning> {
    x.answer.as_ref().and_then(|y| y.reasoning.as_ref())
}

/// The no-answer share (completed rows without a first answer token of the
/// completed rows), by Newcombe's interval: each row answers or not.
fn no_answer_sides(a: &Block, b: &Block, confidence: Confidence) -> Sides {
    let count = |x: &Block| {
        x.answer
            .as_ref()
            .map(|y| (y.no_answer, y.answered + y.no_answer))
    };
    match (count(a), count(b)) {
        (Some(ca), Some(cb)) => share_sides(ca, cb, confidence),
        (ca, cb) => Sides {
            a: ca.and_then(|(x, n)| (n > 0).then(|| x as f64 / n as f64)),
            b: cb.and_then(|(x, n)| (n > 0).then(|| x as f64 / n as f64)),
            interval: Err(absent(ca.is_none(), NO_ANSWER_BLOCK)),
        },
    }
}

/// The reasoning share, by the MOVER on the two row-clustered Wilson
/// intervals the receipts carry (a row's tokens are not independent trials).
fn reasoning_sides(a: &Block, b: &Block) -> Sides {
    let (ra, rb) = (reasoning_of(a), reasoning_of(b));
    let estimate = |r: Option<&crate::receipt::answer::Reasoning>| {
        let r = r?;
        Some(Estimate {
            value: r.share?,
            interval: r.interval?,
        })
    };
    let interval = match (estimate(ra), estimate(rb)) {
        (Some(ea), Some(eb)) => Ok(mover(ea, eb)),
        _ if ra.is_none() || rb.is_none() => Err(absent(ra.is_none(), NO_REASONING)),
        _ => Err(NoInterval::TooFewRows(
            "fewer than 2 rows with output and reasoning counts: a row-clustered interval \
             needs the spread between rows"
                .to_owned(),
        )),
    };
    Sides {
        a: ra.and_then(|r| r.share),
        b: rb.and_then(|r| r.share),
        interval,
    }
}

/// One percentile of one block's metric, as the receipt holds it.
enum Held {
    /// The value and its interval (either may be null).
    Found(Option<f64>, Option<QuantileInterval>),
    /// The block has no such figures at all.
    Absent(&'static str),
}

/// A held figure's value, and what its block lacks when it is absent.
fn found_value(h: Held) -> (Option<f64>, Option<&'static str>) {
    match h {
        Held::Found(v, _) => (v, None),
        Held::Absent(what) => (None, Some(what)),
    }
}

/// The p50, p95 or p99 of a summary with its fixed intervals.
fn fixed_percentile(
    summary: &crate::receipt::LatencySummary,
    intervals: Option<&crate::receipt::PercentileIntervals>,
    p: Percentile,
) -> Held {
    let (value, interval) = match p.thousandths() {
        50_000 => (summary.p50, intervals.map(|i| &i.p50)),
        95_000 => (summary.p95, intervals.map(|i| &i.p95)),
        99_000 => (summary.p99, intervals.map(|i| &i.p99)),
        _ => (None, None),
    };
    Held::Found(value, interval.cloned())
}

/// Percentile `p` of `metric` in block `x`, wherever the receipt holds it.
fn held(metric: Metric, x: &Block, p: Percentile) -> Held {
    let of_block = |m| match x.percentile(m, p) {
        Some((v, i)) => Held::Found(v, i),
        None => Held::Found(None, None),
    };
    match metric {
        Metric::Ttft => of_block(LatencyMetric::Ttft),
        Metric::Tpot => of_block(LatencyMetric::Tpot),
        Metric::E2e => of_block(LatencyMetric::E2e),
        Metric::Ttfa => match &x.answer {
            Some(y) => fixed_percentile(&y.ttfa_ms, Some(&y.intervals.ttfa_ms), p),
            None => Held::Absent(NO_ANSWER_BLOCK),
        },
        Metric::Itl => match &x.gaps {
            Some(g) => fixed_percentile(&g.gap_ms, g.intervals.gap_ms_by_row.as_ref(), p),
            None => Held::Absent(NO_GAPS),
        },
    }
}

fn percentile_sides(figure: Figure, a: &Block, b: &Block, confidence: Confidence) -> Sides {
    let Some((metric, p)) = figure.percentile() else {
        return Sides {
            a: None,
            b: None,
            interval: Err(NoInterval::NotAPercentile),
        };
    };
    // A receipt holds the interval of every percentile it was built for
    // (`contract.percentiles`); one it was not built for has no interval.
    let (va, ia, vb, ib) = match (held(metric, a, p), held(metric, b, p)) {
        (Held::Found(va, ia), Held::Found(vb, ib)) => (va, ia, vb, ib),
        (ha, hb) => {
            let (value_a, a_lacks) = found_value(ha);
            let (value_b, b_lacks) = found_value(hb);
            let what = a_lacks.or(b_lacks).unwrap_or(NO_GAPS);
            return Sides {
                a: value_a,
                b: value_b,
                interval: Err(absent(a_lacks.is_some(), what)),
            };
        }
    };
    let estimate = |v: Option<f64>, i: &Option<QuantileInterval>| {
        let i = i.as_ref()?;
        Some(Estimate {
            value: v?,
            interval: Interval {
                lower: i.lower?,
                upper: i.upper?,
            },
        })
    };
    let interval = match (estimate(va, &ia), estimate(vb, &ib)) {
        (Some(ea), Some(eb)) => Ok(mover(ea, eb)),
        _ if metric == Metric::Itl => Err(NoInterval::TooFewRows(
            [&ia, &ib]
                .into_iter()
                .find_map(|i| i.as_ref().and_then(|i| i.reason.clone()))
                .unwrap_or_else(|| {
                    "no row-clustered interval of the pooled gaps (a receipt older than it)"
                        .to_owned()
                }),
        )),
        _ => Err(NoInterval::TooFewValues {
            percent: percent(confidence.level()),
            p,
            needed: min_n_for_quantile_at(p, confidence),
        }),
    };
    Sides {
        a: va,
        b: vb,
        interval,
    }
}

fn figure_comparison(
    figure: Figure,
    sides: Sides,
    n_now: f64,
    confidence: Confidence,
) -> FigureComparison {
    let difference = sides.a.zip(sides.b).map(|(a, b)| b - a);
    let (interval, needed_for_interval, why) = match sides.interval {
        Ok(i) => (Some(i), None, None),
        Err(why) => (None, why.needed_per_run(), Some(why.to_string())),
    };
    let verdict = match interval {
        Some(i) if i.lower > 0.0 => higher(figure),
        Some(i) if i.upper < 0.0 => lower(figure),
        Some(_) => Verdict::Indistinguishable,
        None => Verdict::TooFewValues,
    };
    let mdd = interval.map(|i| minimum_detectable(i, confidence));
    let (required, sizing_note) = match (verdict, mdd) {
        (Verdict::Indistinguishable, Some(m)) => size_for(difference, n_now, m),
        (Verdict::TooFewValues, _) if difference == Some(0.0) => (None, Some(NOTHING_TO_SIZE)),
        (Verdict::TooFewValues, _) => (needed_for_interval, None),
        _ => (None, None),
    };
    let note = match (why, sizing_note) {
        (Some(why), Some(more)) => Some(format!("{why}; {more}")),
        (why, more) => why.or_else(|| more.map(str::to_owned)),
    };
    FigureComparison {
        figure: figure.key(),
        unit: figure.unit().to_owned(),
        better_when: if figure.higher_is_better() {
            "higher"
        } else {
            "lower"
        }
        .to_owned(),
        a: sides.a,
        b: sides.b,
        difference,
        interval,
        verdict,
        minimum_detectable: mdd,
        required_requests_per_run: required,
        note,
    }
}

/// The note of a zero difference: there is no run size that detects it.
const NOTHING_TO_SIZE: &str = "no observed difference to size a run for";

/// The note of a difference too small for any run to detect.
const BEYOND_PRACTICAL: &str = "beyond any practical run: detecting a difference this small \
                                would take more than 1,000,000,000 requests per run";

/// Requests per run needed to detect `difference` (an indistinguishable
/// figure with minimum detectable difference `mdd`), or null with the reason:
/// nothing to detect (0), or beyond [`PRACTICAL_REQUESTS_PER_RUN`].
fn size_for(difference: Option<f64>, n_now: f64, mdd: f64) -> (Option<u64>, Option<&'static str>) {
    match difference {
        None => (None, None),
        Some(0.0) => (None, Some(NOTHING_TO_SIZE)),
        Some(d) => match required_requests(n_now, mdd, d) {
            Some(n) if n <= PRACTICAL_REQUESTS_PER_RUN => (Some(n), None),
            _ => (None, Some(BEYOND_PRACTICAL)),
        },
    }
}

fn higher(figure: Figure) -> Verdict {
    if figure.higher_is_better() {
        Verdict::Better
    } else {
        Verdict::Worse
    }
}

fn lower(figure: Figure) -> Verdict {
    if figure.higher_is_better() {
        Verdict::Worse
    } else {
        Verdict::Better
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn ci95() -> Confidence {
        Confidence::default()
    }

    fn close(got: f64, want: f64, tol: f64) {
        assert!((got - want).abs() <= tol, "got {got}, want {want} ± {tol}");
    }

    fn side(pass: u64, cohort: u64, window_s: f64) -> PassCount {
        PassCount {
            pass,
            cohort,
            window_s,
        }
    }

    fn sign(i: Interval) -> i8 {
        if i.lower > 0.0 {
            1
        } else if i.upper < 0.0 {
            -1
        } else {
            0
        }
    }

    #[test]
    fn goodput_of_equal_cohorts_is_newcombe_times_cohort_per_second() {
        // A reported case: 1,000 arrivals in 100 s, A passes 1,000, B 950.
        // Wilson (z = 1.959964): 1000/1000 → [1000/(1000 + z²), 1] =
        // [0.9961732, 1]; 950/1000 → [0.9346862, 0.9618697]. Newcombe:
        // L = −0.05 − (0.95 − 0.9346862) = −0.0653138,
        // U = −0.05 + √(0.0118697² + 0.0038268²) = −0.0375286; times
        // n / T = 1000 / 100 = 10: [−0.653138, −0.375286] req/s, wholly
        // below 0 (the old Poisson MOVER gave [−1.373216, +0.372696]).
        let d = goodput_difference(side(1000, 1000, 100.0), side(950, 1000, 100.0), ci95());
        assert_eq!(d.method, KNOWN_COHORT_RATE_DIFFERENCE);
        close(d.interval.lower, -0.653_138_202_4, 1e-9);
        close(d.interval.upper, -0.375_286_427_6, 1e-9);
    }

    #[test]
    fn on_equal_cohorts_goodput_always_reads_as_pass_share() {
        // Every pair of pass counts of two 20-row cohorts in 8 s: the goodput
        // interval is 20/8 = 2.5 times the pass share's, so the verdicts agree.
        // The Poisson MOVER disagrees on e.g. 20 vs 14 (share worse, goodput
        // indistinguishable).
        let mut disagreed_before = 0;
        for xa in 0..=20 {
            for xb in 0..=20 {
                let share = newcombe(xa, 20, xb, 20, ci95()).expect("non-empty");
                let d = goodput_difference(side(xa, 20, 8.0), side(xb, 20, 8.0), ci95());
                close(d.interval.lower, 2.5 * share.lower, 1e-12);
                close(d.interval.upper, 2.5 * share.upper, 1e-12);
                assert_eq!(sign(d.interval), sign(share), "{xa} vs {xb}");
                let poisson = poisson_goodput(side(xa, 20, 8.0), side(xb, 20, 8.0));
                disagreed_before += usize::from(sign(poisson) != sign(share));
            }
        }
        assert!(disagreed_before > 0);
    }

    fn poisson_goodput(a: PassCount, b: PassCount) -> Interval {
        // Different windows force the Poisson branch (compare itself refuses them).
        let b = PassCount {
            window_s: b.window_s * (1.0 + f64::EPSILON),
            ..b
        };
        goodput_difference(a, b, ci95()).interval
    }

    #[test]
    fn unequal_cohorts_keep_the_exact_poisson_mover() {
        // A: 1000 of 1000 pass, B: 1045 of 1045, both in 100 s (two seeds of
        // one schedule at 10/s). Garwood 95 %: 1000 → [938.9730, 1063.9521],
        // 1045 → [982.5937, 1110.3308]; MOVER on /100 s:
        // L = 0.45 − √(0.6240630² + 0.6395214²) = −0.4435559,
        // U = 0.45 + √(0.6533078² + 0.6102698²) = +1.3440024.
        // Binomial noise alone (MOVER on 10 × Wilson and 10.45 × Wilson) would
        // give [0.4117, 0.4883]: "better" for two servers that passed everything.
        let d = goodput_difference(side(1000, 1000, 100.0), side(1045, 1045, 100.0), ci95());
        assert_eq!(d.method, "mover-exact-poisson");
        close(d.interval.lower, -0.443_555_863, 1e-6);
        close(d.interval.upper, 1.344_002_397, 1e-6);
    }

    /// How often an interval method excludes 0 over `trials` seeded draws of
    /// (n_A, pass_A, n_B, pass_B).
    fn rejection_rate(
        trials: u32,
        draw: impl Fn(&mut ChaCha8Rng) -> (u64, u64, u64, u64),
        method: impl Fn(PassCount, PassCount) -> Interval,
    ) -> f64 {
        let mut rng = ChaCha8Rng::seed_from_u64(26);
        let rejected = (0..trials)
            .filter(|_| {
                let (na, xa, nb, xb) = draw(&mut rng);
                sign(method(side(xa, na, 40.0), side(xb, nb, 40.0))) != 0
            })
            .count();
        rejected as f64 / f64::from(trials)
    }

    /// Arrivals of a Poisson schedule at 10/s over 40 s (mean 400).
    fn poisson_count(rng: &mut ChaCha8Rng) -> u64 {
        let (mut t, mut n) = (0.0, 0);
        loop {
            t += -(1.0 - rng.random::<f64>()).ln() / 10.0;
            if t >= 40.0 {
                return n;
            }
            n += 1;
        }
    }

    fn binomial(rng: &mut ChaCha8Rng, n: u64, p: f64) -> u64 {
        (0..n).filter(|_| rng.random::<f64>() < p).count() as u64
    }

    /// The rejected alternative for unequal cohorts: binomial noise only.
    fn binomial_only(a: PassCount, b: PassCount) -> Interval {
        let est = |x: PassCount| {
            let w = intervals::wilson(x.pass, x.cohort, ci95()).expect("non-empty");
            let scale = x.cohort as f64 / x.window_s;
            Estimate {
                value: x.pass as f64 / x.window_s,
                interval: Interval {
                    lower: scale * w.lower,
                    upper: scale * w.upper,
                },
            }
        };
        mover(est(a), est(b))
    }

    #[test]
    fn identical_servers_rarely_differ_and_a_5_point_drop_is_found() {
        // 1,000 seeded pairs of identical servers (p = 0.9) at 10/s for 40 s.
        let chosen = |a, b| goodput_difference(a, b, ci95()).interval;
        // Two seeds: independent schedules, so the cohorts differ. The chosen
        // method (Poisson there) is near 5 %; binomial noise alone, far above
        // (its SD is √(2·400·0.09) = 8.5 passes against √(2·400·0.9) = 26.8).
        let two_seeds = |rng: &mut ChaCha8Rng| {
            let (na, nb) = (poisson_count(rng), poisson_count(rng));
            (na, binomial(rng, na, 0.9), nb, binomial(rng, nb, 0.9))
        };
        let chosen_rate = rejection_rate(1000, two_seeds, chosen);
        let binomial_rate = rejection_rate(1000, two_seeds, binomial_only);
        eprintln!("two seeds: chosen {chosen_rate}, binomial only {binomial_rate}");
        assert!(chosen_rate <= 0.08, "{chosen_rate}");
        assert!(binomial_rate >= 0.3, "{binomial_rate}");
        // One schedule replayed: the cohort is shared, the known-cohort
        // interval applies, and it is near 5 % too.
        let one_seed = |rng: &mut ChaCha8Rng| {
            let n = poisson_count(rng);
            (n, binomial(rng, n, 0.9), n, binomial(rng, n, 0.9))
        };
        let replay_rate = rejection_rate(1000, one_seed, chosen);
        eprintln!("one schedule: known cohort {replay_rate}");
        assert!(replay_rate <= 0.08, "{replay_rate}");
        // Power on the replayed schedule: A passes all, B 95 %. The drop is
        // 20 ± 4.4 passes of 400 (binomial SD √(400 · 0.0475)), about 4.6 SDs
        // of the pass-share difference: always found. The Poisson MOVER's
        // half-width is 1.96 × √(400 + 380) = 54.7 passes: never.
        let drop = |rng: &mut ChaCha8Rng| {
            let n = poisson_count(rng);
            (n, n, n, binomial(rng, n, 0.95))
        };
        let found = rejection_rate(1000, drop, chosen);
        let found_poisson = rejection_rate(1000, drop, poisson_goodput);
        eprintln!("5-point drop found: known cohort {found}, Poisson {found_poisson}");
        assert!(found >= 0.95, "{found}");
        assert!(found_poisson <= 0.01, "{found_poisson}");
    }

    fn percentile_sides(a: f64, b: f64) -> Sides {
        Sides {
            a: Some(a),
            b: Some(b),
            interval: Err(NoInterval::TooFewValues {
                percent: "95".to_owned(),
                p: Percentile::whole(95),
                needed: 72,
            }),
        }
    }

    #[test]
    fn no_interval_reads_too_few_values_never_indistinguishable() {
        // A reported case: p95 TPOT 28.3 vs 86.2 ms on tiny runs.
        let f = figure_comparison(
            Figure::Latency(Metric::Tpot, Percentile::whole(95)),
            percentile_sides(28.3, 86.2),
            10.0,
            ci95(),
        );
        assert_eq!(f.verdict, Verdict::TooFewValues);
        assert_eq!(f.verdict.as_str(), "too few values");
        assert_eq!(
            serde_json::to_value(f.verdict).unwrap(),
            serde_json::json!("too_few_values")
        );
        assert_eq!(f.interval, None);
        // A lower bound: no run under 72 values has an interval at all.
        assert_eq!(f.required_requests_per_run, Some(72));
        assert!(f.note.as_deref().unwrap().starts_with("too few values"));
    }

    #[test]
    fn a_zero_difference_has_no_required_size() {
        // Without an interval (the old code said 72) and with one.
        let f = figure_comparison(
            Figure::Latency(Metric::Ttft, Percentile::whole(95)),
            percentile_sides(410.0, 410.0),
            5.0,
            ci95(),
        );
        assert_eq!(f.difference, Some(0.0));
        assert_eq!(f.required_requests_per_run, None);
        assert!(
            f.note.as_deref().unwrap().ends_with(NOTHING_TO_SIZE),
            "{f:?}"
        );
        let with = Sides {
            a: Some(0.5),
            b: Some(0.5),
            interval: Ok(Interval {
                lower: -0.1,
                upper: 0.1,
            }),
        };
        let f = figure_comparison(Figure::PassShare, with, 100.0, ci95());
        assert_eq!(f.verdict, Verdict::Indistinguishable);
        assert_eq!(f.required_requests_per_run, None);
        assert_eq!(f.note.as_deref(), Some(NOTHING_TO_SIZE));
    }

    fn share_sides(d: f64, lower: f64, upper: f64) -> Sides {
        Sides {
            a: Some(0.5),
            b: Some(0.5 + d),
            interval: Ok(Interval { lower, upper }),
        }
    }

    #[test]
    fn a_required_size_is_stated_up_to_a_practical_run_and_null_beyond() {
        // Interval [−0.1, 0.3] at 95 %: MDD = 0.2858813 (intervals' own test).
        // d = 0.1 (b = 0.6 − a = 0.5 is 0.09999999999999998 in doubles), n = 100:
        // 100 × (0.2858813 / 0.1)² = 817.28… → 818.
        let f = figure_comparison(
            Figure::PassShare,
            share_sides(0.1, -0.1, 0.3),
            100.0,
            ci95(),
        );
        assert_eq!(f.required_requests_per_run, Some(818));
        assert_eq!(f.note, None);
        // d = 10⁻⁶ in [−0.1, 0.1]: MDD = 2.8015852 × 0.2 / (2 × 1.959964) =
        // 0.1429406; 1000 × (0.1429406 / 10⁻⁶)² = 2.04 × 10¹³ > 10⁹: null
        // (the old code stated about 20,432,028,820,966 requests per run).
        let f = figure_comparison(
            Figure::PassShare,
            share_sides(1e-6, -0.1, 0.1),
            1000.0,
            ci95(),
        );
        assert_eq!(f.verdict, Verdict::Indistinguishable);
        assert_eq!(f.required_requests_per_run, None);
        assert_eq!(f.note.as_deref(), Some(BEYOND_PRACTICAL));
        // d = 10⁻¹²: the old unchecked cast gave u64::MAX.
        let f = figure_comparison(
            Figure::PassShare,
            share_sides(1e-12, -0.1, 0.1),
            1000.0,
            ci95(),
        );
        assert_eq!(f.required_requests_per_run, None);
    }

    #[test]
    fn closed_loop_against_open_loop_is_refused_unless_allowed() {
        use ArrivalMode::{ClosedLoop, OpenLoop};
        assert_eq!(closed_loop_note(OpenLoop, OpenLoop, false), Ok(None));
        let refused = closed_loop_note(OpenLoop, ClosedLoop, false).unwrap_err();
        assert_eq!(
            refused,
            CompareError::ClosedAgainstOpen {
                closed: "B",
                open: "A"
            }
        );
        assert!(refused
            .to_string()
            .starts_with("B is closed-loop and A is open-loop"));
        let refused = closed_loop_note(ClosedLoop, OpenLoop, false).unwrap_err();
        assert!(refused.to_string().starts_with("A is closed-loop"));
        let allowed = closed_loop_note(OpenLoop, ClosedLoop, true)
            .unwrap()
            .unwrap();
        assert!(
            allowed.starts_with("B is closed-loop") && allowed.contains("not SLA evidence"),
            "{allowed}"
        );
        // Two closed loops compare without the flag, and say what they are not.
        let both = closed_loop_note(ClosedLoop, ClosedLoop, false)
            .unwrap()
            .unwrap();
        assert!(both.contains("not SLA evidence"), "{both}");
    }
}
