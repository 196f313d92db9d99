//! `goodput compare A B`: flags, the calls into the library, printing and
//! the exit status.

use std::io::Write;

use clap::ValueEnum;

use crate::cli::error::Error;
use crate::cli::exit::{EXIT_NO, EXIT_OK};
use crate::cli::flags::{confidence_flag, LimitArgs, PercentileArgs};
use crate::cli::output::{emit, json_bytes};
use crate::cli::release::{release_options, CostArgs};
use goodput_core::analyze::{judge_and_count, Analysis, AnalyzeOptions};
use goodput_core::compare::{
    adopt_gates, compare_at, CompareError, CompareOptions, Figure, Metric,
};
use goodput_core::intervals::Confidence;
use goodput_core::receipt::attach_percentiles;
use goodput_core::receipt::release::attach;
use goodput_core::review::verify;
use goodput_core::trace::{self, Limits, Trace};
use goodput_util::io::read_limited;

/// The exit statuses of `goodput compare`.
pub const COMPARE_EXIT_HELP: &str = "\
Exit status:
  0  the comparison was printed (and, with --fail-if-worse, B is not worse
     beyond noise on any listed figure, and every listed figure was judged)
  1  --fail-if-worse: B is worse than A beyond noise on a listed figure, or a
     listed figure has too few values to be judged (no interval), in any
     block: all rows or a class
  2  a trace was rejected or unreadable, a receipt does not verify against its
     trace, the contracts differ (gates, equality, window, warm-up, grace,
     classes; --judge-under A re-judges B under A's gates), one run is
     closed-loop and the other open-loop (--allow-closed-loop compares them
     anyway), the runs' caps on requests in flight differ (--allow-cap-mismatch
     compares them anyway), or a flag is wrong

Figures: goodput, pass_share, failure_share, p95_ttft, p99_ttft, p95_tpot,
p99_tpot, p95_e2e, p99_e2e; with --percentiles LIST, pP_ttft, pP_tpot and
pP_e2e for each P listed instead (p50_ttft, p99.9_e2e). Runs with answer
instants or reasoning counts add no_answer_share, reasoning_share, p95_ttfa
and p99_ttfa; runs with gaps add p95_itl and p99_itl (TTFA and ITL at those
of 50, 95, 99 that --percentiles lists). Differences are B - A: shares by
Newcombe's hybrid score interval; goodput/s by Newcombe's interval times
cohort / window when both blocks have the same cohort, else by the MOVER on
exact Poisson intervals; percentiles by the MOVER on order-statistic
intervals; ITL (gaps pooled over rows) by the MOVER on Woodruff's
row-clustered intervals, the reasoning share (tokens pooled over rows) by
the MOVER on row-clustered Wilson intervals (docs/intervals.md).";

/// Whose contract to judge both runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum JudgeUnder {
    /// Run A's gates and equality rule.
    #[value(name = "A", alias = "a")]
    A,
}

/// Flags of `goodput compare`.
#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// The baseline trace (A).
    pub a: String,
    /// The trace compared with it (B).
    pub b: String,
    /// A's published receipt: it must verify against trace A; its limits are used.
    #[arg(long, value_name = "FILE")]
    pub receipt_a: Option<String>,
    /// B's published receipt: it must verify against trace B; its limits are used.
    #[arg(long, value_name = "FILE")]
    pub receipt_b: Option<String>,
    /// Re-judge B under A's gates and equality rule instead of refusing when they differ.
    #[arg(long, value_enum, value_name = "A")]
    pub judge_under: Option<JudgeUnder>,
    /// Two-sided confidence level of every interval, in [0.5, 0.9999].
    #[arg(long, value_name = "LEVEL", default_value_t = Confidence::DEFAULT)]
    pub confidence: f64,
    /// Compare latency at these percentiles instead of p95 and p99 (the
    /// figures become pP_ttft, pP_tpot, pP_e2e for each P).
    #[command(flatten)]
    pub percentiles: PercentileArgs,
    /// Exit 1 when B is worse than A beyond noise on any of these figures
    /// (comma-separated), or when one of them has too few values to judge.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub fail_if_worse: Vec<Figure>,
    /// Compare a closed-loop run with an open-loop one anyway; by default it
    /// is refused (exit 2), since a closed loop paced its own load.
    #[arg(long)]
    pub allow_closed_loop: bool,
    /// Compare two open-loop runs whose caps on requests in flight
    /// (--max-concurrency with --request-rate) differ; refused by default
    /// (exit 2), since a cap's wait is in the latencies.
    #[arg(long)]
    pub allow_cap_mismatch: bool,
    /// Print the comparison as JSON (`goodput schema compare`).
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the comparison as Markdown, for a pull request.
    #[arg(long)]
    pub markdown: bool,
    /// Input limits (for each trace given without a receipt).
    #[command(flatten)]
    pub limits: LimitArgs,
    /// GPUs and price for both runs' per-GPU and cost figures.
    #[command(flatten)]
    pub cost: CostArgs,
}

/// Runs `goodput compare`.
pub fn run(args: CompareArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let confidence = confidence_flag(args.confidence)?;
    let percentiles = args.percentiles.given()?;
    let figures = match &percentiles {
        Some(set) => Figure::at(set),
        None => Figure::defaults(),
    };
    if let Some(missing) = args.fail_if_worse.iter().find(|f| !figures.contains(f)) {
        return Err(Error::Usage(format!(
            "--fail-if-worse {missing}: that figure is not compared (the latency figures are \
             at {}; --percentiles sets them)",
            percentile_names(&figures)
        )));
    }
    let limits = args.limits.limits()?;
    let trace_a = load(&args.a, args.receipt_a.as_deref(), limits)?;
    let mut trace_b = load(&args.b, args.receipt_b.as_deref(), limits)?;
    let judged_under_a = args.judge_under.is_some();
    if judged_under_a {
        adopt_gates(&trace_a, &mut trace_b);
    }
    let release = release_options(None, Some(&args.cost))?;
    let mut a = judge(trace_a, confidence)?;
    let mut b = judge(trace_b, confidence)?;
    for (path, run) in [(&args.a, &mut a), (&args.b, &mut b)] {
        attach(&mut run.receipt, &run.trace, &run.judgements, &release)
            .map_err(|e| Error::Usage(e.to_string()))?;
        // Quality A vs B, from the sidecar beside each trace.
        crate::cli::analyze::attach_quality(path, run, confidence)?;
        if let Some(set) = &percentiles {
            attach_percentiles(&mut run.receipt, &run.trace, &run.judgements, set);
        }
    }
    let options = CompareOptions {
        judged_under_a,
        allow_closed_loop: args.allow_closed_loop,
        allow_cap_mismatch: args.allow_cap_mismatch,
    };
    let comparison = compare_at(&a.receipt, &b.receipt, options, &figures)?;
    let worse = comparison.worse_on(&args.fail_if_worse);
    let unjudged = comparison.unjudged_on(&args.fail_if_worse);
    if args.json {
        emit(stdout, &json_bytes(&comparison, "comparison")?)?;
    } else {
        let mut text = if args.markdown {
            goodput_render::compare::render_markdown(&comparison)
        } else {
            goodput_render::compare::render_text(&comparison)
        };
        for (side, run) in [("A", &a.receipt), ("B", &b.receipt)] {
            if let Some(cost) = &run.cost {
                text.push_str(&format!("\n{side}\n"));
                text.push_str(&goodput_render::diagnosis::cost(
                    cost,
                    run.contract.resources.as_ref(),
                ));
            }
        }
        if !args.fail_if_worse.is_empty() {
            text.push_str(&gate_line(&worse, &unjudged));
        }
        emit(stdout, text.as_bytes())?;
    }
    Ok(if worse.is_empty() && unjudged.is_empty() {
        EXIT_OK
    } else {
        EXIT_NO
    })
}

/// The percentiles among `figures`, for a message (`p95, p99`).
fn percentile_names(figures: &[Figure]) -> String {
    let names: Vec<String> = figures
        .iter()
        .filter_map(|f| match f {
            Figure::Latency(Metric::Ttft, p) => Some(format!("p{p}")),
            _ => None,
        })
        .collect();
    names.join(", ")
}

/// The regression gate's verdict: a listed figure that cannot be judged
/// fails it as a worse one does, since "cannot tell" is not "not worse".
fn gate_line(worse: &[(String, String)], unjudged: &[(String, String)]) -> String {
    let list = |xs: &[(String, String)]| {
        xs.iter()
            .map(|(b, f)| format!("{f} ({b})"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = String::new();
    if !worse.is_empty() {
        out.push_str(&format!(
            "\nFAIL: B is worse than A beyond noise on {}.\n",
            list(worse)
        ));
    }
    if !unjudged.is_empty() {
        out.push_str(&format!(
            "\nFAIL: too few values to judge {}: no interval, so the gate cannot say B is not worse.\n",
            list(unjudged)
        ));
    }
    if out.is_empty() {
        out.push_str("\nPASS: B is not worse than A beyond noise on any listed figure.\n");
    }
    out
}

/// Reads a trace; with a receipt, first checks that the receipt is exactly
/// what the trace gives, and reads the trace within the receipt's limits.
fn load(path: &str, receipt: Option<&str>, limits: Limits) -> Result<Trace, Error> {
    let (bytes, limits) = match receipt {
        None => (read_limited(path, limits.max_bytes)?, limits),
        Some(receipt) => {
            let claimed =
                verify::read_receipt(&read_limited(receipt, crate::cli::MAX_RECEIPT_BYTES)?)?;
            let bytes = read_limited(path, claimed.limits.max_bytes)?;
            let report = verify::verify(&claimed, &bytes);
            if !report.agrees() {
                let first = report
                    .recompute_failed
                    .clone()
                    .or_else(|| {
                        report
                            .differences
                            .first()
                            .map(|d| format!("{} differs", d.path))
                    })
                    .unwrap_or_else(|| "the trace's sha256 differs".to_owned());
                return Err(CompareError::ReceiptDisagrees {
                    receipt: receipt.to_owned(),
                    trace: path.to_owned(),
                    first,
                }
                .into());
            }
            (bytes, claimed.limits)
        }
    };
    trace::load(&bytes, limits).map_err(|rejection| Error::RejectedFile {
        path: path.to_owned(),
        rejection,
    })
}

fn judge(trace: Trace, confidence: Confidence) -> Result<Analysis, Error> {
    let options = AnalyzeOptions {
        limits: trace.limits,
        rows: false,
        strict: false,
    };
    Ok(judge_and_count(trace, options, confidence)?)
}
