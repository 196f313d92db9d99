//! Two runs side by side: is B really better or worse than A, or is the
//! difference within the noise of runs this size?
//!
//! The comparison reads two receipts built at the same confidence and judged
//! under the same contract. For every block (all rows, then each class) and
//! every headline figure it gives A, B, the difference B − A with its
//! interval, a verdict, and the smallest difference this pair could have
//! detected. The interval methods are in [`crate::intervals`]: Newcombe's
//! hybrid score interval for shares, the MOVER on exact Poisson intervals for
//! goodput/s, the MOVER on order-statistic intervals for percentiles.
//!
//! **Verdict.** When the difference interval lies entirely on the good side
//! of 0 the figure is `better`; entirely on the bad side, `worse`; otherwise
//! `indistinguishable` (higher goodput and pass share are good; lower failure
//! share and latency are good).
//!
//! **Minimum detectable difference** (at 80 % power):
//! `MDD = (z_{1−α/2} + z_{0.80}) · SE`, with `SE = (U − L) / (2 z_{1−α/2})`
//! recovered from the difference interval `[L, U]`. **Requests per run
//! needed** to detect the observed difference `d`:
//! `n · (MDD / |d|)²`, with `n` the mean cohort of the two runs (every
//! interval here narrows as 1/√n).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::intervals::{
    self, min_n_for_quantile, minimum_detectable, mover, newcombe, percent, required_requests,
    Confidence, Estimate, Interval, QuantileInterval,
};
use crate::receipt::{Block, ContractInfo, LatencySummary, PercentileIntervals, Receipt};
use crate::trace::Trace;

/// The schema tag of every comparison this version writes.
pub const COMPARE_SCHEMA: &str = "goodput-compare/1";

/// A headline figure that two runs are compared on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Figure {
    /// Passing requests per window second.
    Goodput,
    /// pass / cohort.
    PassShare,
    /// failed / cohort.
    FailureShare,
    /// Nearest-rank p95 of TTFT.
    P95Ttft,
    /// Nearest-rank p99 of TTFT.
    P99Ttft,
    /// Nearest-rank p95 of TPOT.
    P95Tpot,
    /// Nearest-rank p99 of TPOT.
    P99Tpot,
    /// Nearest-rank p95 of E2E.
    P95E2e,
    /// Nearest-rank p99 of E2E.
    P99E2e,
}

/// Which latency metric a percentile figure reads.
#[derive(Clone, Copy)]
enum Metric {
    Ttft,
    Tpot,
    E2e,
}

impl Figure {
    /// Every figure, in the order they are printed.
    pub const ALL: [Figure; 9] = [
        Figure::Goodput,
        Figure::PassShare,
        Figure::FailureShare,
        Figure::P95Ttft,
        Figure::P99Ttft,
        Figure::P95Tpot,
        Figure::P99Tpot,
        Figure::P95E2e,
        Figure::P99E2e,
    ];

    /// The name used by `--fail-if-worse` and in the JSON.
    pub fn key(self) -> &'static str {
        match self {
            Figure::Goodput => "goodput",
            Figure::PassShare => "pass_share",
            Figure::FailureShare => "failure_share",
            Figure::P95Ttft => "p95_ttft",
            Figure::P99Ttft => "p99_ttft",
            Figure::P95Tpot => "p95_tpot",
            Figure::P99Tpot => "p99_tpot",
            Figure::P95E2e => "p95_e2e",
            Figure::P99E2e => "p99_e2e",
        }
    }

    /// Whether a larger value is the better one.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Figure::Goodput | Figure::PassShare)
    }

    /// The unit of the figure's values.
    pub fn unit(self) -> &'static str {
        match self {
            Figure::Goodput => "req/s",
            Figure::PassShare | Figure::FailureShare => "share",
            _ => "ms",
        }
    }

    fn percentile(self) -> Option<(Metric, u32)> {
        match self {
            Figure::P95Ttft => Some((Metric::Ttft, 95)),
            Figure::P99Ttft => Some((Metric::Ttft, 99)),
            Figure::P95Tpot => Some((Metric::Tpot, 95)),
            Figure::P99Tpot => Some((Metric::Tpot, 99)),
            Figure::P95E2e => Some((Metric::E2e, 95)),
            Figure::P99E2e => Some((Metric::E2e, 99)),
            _ => None,
        }
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// A figure name that is not one of [`Figure::ALL`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown figure {0:?}: use goodput, pass_share, failure_share, p95_ttft, p99_ttft, p95_tpot, p99_tpot, p95_e2e or p99_e2e")]
pub struct UnknownFigure(pub String);

impl FromStr for Figure {
    type Err = UnknownFigure;
    fn from_str(s: &str) -> Result<Figure, UnknownFigure> {
        Figure::ALL
            .into_iter()
            .find(|f| f.key() == s.trim())
            .ok_or_else(|| UnknownFigure(s.to_owned()))
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
    /// The difference interval contains 0 (or there is no interval).
    Indistinguishable,
}

impl Verdict {
    /// The word printed for people.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Better => "better",
            Verdict::Worse => "worse",
            Verdict::Indistinguishable => "indistinguishable",
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
    /// All rows first (`class` null), then each class by name.
    pub blocks: Vec<BlockComparison>,
}

/// The methods of a comparison, named and stated.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompareMethods {
    /// Difference of two shares: `newcombe-hybrid-score`.
    pub share_difference: String,
    /// Difference of two goodput rates: `mover-exact-poisson`.
    pub rate_difference: String,
    /// Difference of two percentiles: `mover-order-statistic`.
    pub quantile_difference: String,
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
    /// `better`, `worse` or `indistinguishable`.
    pub verdict: Verdict,
    /// The smallest true difference this pair would detect at 80 % power (same unit).
    pub minimum_detectable: Option<f64>,
    /// For an indistinguishable, non-zero difference: requests per run needed
    /// to detect a difference this large at 80 % power.
    pub required_requests_per_run: Option<u64>,
    /// Why something is null, for people.
    pub note: Option<String>,
}

impl Comparison {
    /// Every (block, figure) among `watched` on which B is worse: the
    /// regression gate. Blocks are named `all` or by class.
    pub fn worse_on(&self, watched: &[Figure]) -> Vec<(String, String)> {
        let names: Vec<&str> = watched.iter().map(|f| f.key()).collect();
        self.blocks
            .iter()
            .flat_map(|block| {
                block
                    .figures
                    .iter()
                    .filter(|f| f.verdict == Verdict::Worse && names.contains(&f.figure.as_str()))
                    .map(|f| (block_name(block), f.figure.clone()))
            })
            .collect()
    }
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

/// Compares two receipts judged under the same contract (checked here).
pub fn compare(a: &Receipt, b: &Receipt, judged_under_a: bool) -> Result<Comparison, CompareError> {
    let differences = contract_differences(&a.contract, &b.contract);
    if !differences.is_empty() {
        return Err(CompareError::ContractsDiffer(differences));
    }
    let confidence = Confidence::new(a.contract.intervals.confidence).unwrap_or_default();
    let mut blocks = vec![compare_blocks(
        None,
        &a.results.all,
        &b.results.all,
        confidence,
    )];
    let classes_b: &BTreeMap<String, Block> = &b.results.classes;
    for (name, block_a) in &a.results.classes {
        if let Some(block_b) = classes_b.get(name) {
            blocks.push(compare_blocks(Some(name), block_a, block_b, confidence));
        }
    }
    let run = |r: &Receipt| RunInfo {
        sha256: r.trace.sha256.clone(),
        cohort: r.results.all.counts.cohort,
        window_s: r.contract.window.duration_ms / 1000.0,
        cost: r.cost.clone(),
    };
    Ok(Comparison {
        schema: COMPARE_SCHEMA.to_owned(),
        confidence: confidence.level(),
        methods: CompareMethods {
            share_difference: intervals::method::SHARE_DIFFERENCE.to_owned(),
            rate_difference: intervals::method::RATE_DIFFERENCE.to_owned(),
            quantile_difference: intervals::method::QUANTILE_DIFFERENCE.to_owned(),
            minimum_detectable:
                "(z(1-alpha/2) + z(0.80)) * SE, SE = (upper - lower) / (2 z(1-alpha/2))".to_owned(),
            required_requests_per_run:
                "n * (minimumDetectable / |difference|)^2, n = mean cohort of the two runs"
                    .to_owned(),
        },
        a: run(a),
        b: run(b),
        judged_under_a,
        blocks,
    })
}

fn compare_blocks(
    class: Option<&String>,
    a: &Block,
    b: &Block,
    confidence: Confidence,
) -> BlockComparison {
    let n_now = (a.counts.cohort + b.counts.cohort) as f64 / 2.0;
    let figures = Figure::ALL
        .into_iter()
        .map(|figure| {
            let sides = match figure {
                Figure::Goodput => rate_sides(a, b),
                Figure::PassShare => share_sides(a.counts.pass, a, b.counts.pass, b, confidence),
                Figure::FailureShare => {
                    share_sides(a.counts.failed, a, b.counts.failed, b, confidence)
                }
                _ => percentile_sides(figure, a, b, confidence),
            };
            figure_comparison(figure, sides, n_now, confidence)
        })
        .collect();
    BlockComparison {
        class: class.cloned(),
        cohort_a: a.counts.cohort,
        cohort_b: b.counts.cohort,
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
    /// A run has too few values for a distribution-free interval of the percentile.
    #[error(
        "too few values for a distribution-free {percent}% interval of p{p}: it needs at least {needed} per run"
    )]
    TooFewValues {
        /// The confidence level, in percent as printed.
        percent: String,
        /// The percentile.
        p: u32,
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
            NoInterval::EmptyCohort | NoInterval::NotAPercentile => None,
        }
    }
}

fn rate_sides(a: &Block, b: &Block) -> Sides {
    let est = |x: &Block| Estimate {
        value: x.rates.goodput_per_s,
        interval: x.intervals.goodput_per_s,
    };
    Sides {
        a: Some(a.rates.goodput_per_s),
        b: Some(b.rates.goodput_per_s),
        interval: Ok(mover(est(a), est(b))),
    }
}

fn share_sides(xa: u64, a: &Block, xb: u64, b: &Block, confidence: Confidence) -> Sides {
    let share = |x: u64, n: u64| (n > 0).then(|| x as f64 / n as f64);
    Sides {
        a: share(xa, a.counts.cohort),
        b: share(xb, b.counts.cohort),
        interval: newcombe(xa, a.counts.cohort, xb, b.counts.cohort, confidence)
            .ok_or(NoInterval::EmptyCohort),
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
    let pick = |x: &Block| -> (Option<f64>, QuantileInterval) {
        let (summary, intervals): (&LatencySummary, &PercentileIntervals) = match metric {
            Metric::Ttft => (&x.latency.ttft_ms, &x.intervals.ttft_ms),
            Metric::Tpot => (&x.latency.tpot_ms, &x.intervals.tpot_ms),
            Metric::E2e => (&x.latency.e2e_ms, &x.intervals.e2e_ms),
        };
        if p == 95 {
            (summary.p95, intervals.p95.clone())
        } else {
            (summary.p99, intervals.p99.clone())
        }
    };
    let (va, ia) = pick(a);
    let (vb, ib) = pick(b);
    let estimate = |v: Option<f64>, i: &QuantileInterval| {
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
        _ => Err(NoInterval::TooFewValues {
            percent: percent(confidence.level()),
            p,
            needed: min_n_for_quantile(p, confidence),
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
    let (interval, needed_for_interval, note) = match sides.interval {
        Ok(i) => (Some(i), None, None),
        Err(why) => (None, why.needed_per_run(), Some(why.to_string())),
    };
    let verdict = match interval {
        Some(i) if i.lower > 0.0 => higher(figure),
        Some(i) if i.upper < 0.0 => lower(figure),
        _ => Verdict::Indistinguishable,
    };
    let mdd = interval.map(|i| minimum_detectable(i, confidence));
    let required = match (verdict, mdd, difference) {
        (Verdict::Indistinguishable, Some(m), Some(d)) => required_requests(n_now, m, d),
        (Verdict::Indistinguishable, None, _) => needed_for_interval,
        _ => None,
    };
    let note = note.or_else(|| match (verdict, difference, required) {
        (Verdict::Indistinguishable, Some(0.0), None) => {
            Some("no observed difference to size a run for".to_owned())
        }
        _ => None,
    });
    FigureComparison {
        figure: figure.key().to_owned(),
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
