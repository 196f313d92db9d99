//! `goodput gate`: admit or refuse a run against explicit criteria.

use std::io::Write;

use crate::cli::error::Error;
use goodput_core::review::exact::Decimal;
use goodput_core::review::gate::{
    self, Criteria, DEFAULT_MAX_CENSORED_SHARE, DEFAULT_MAX_FAILURE_SHARE,
};

use crate::cli::exit::{EXIT_NO, EXIT_OK};
use crate::cli::flags::{LimitArgs, TailArgs};
use crate::cli::input::load;
use crate::cli::output::{emit, json_bytes};
use crate::cli::release::{release_options, RecoveryArgs};
use goodput_core::receipt::release::attach;
use goodput_core::review::criteria::P99Limits;
use goodput_core::review::energy_gate::EnergyLimits;
use goodput_core::review::release_gate::{parse_class_limits, ClassLimits};

/// Exit statuses of `goodput gate`, shown in `--help`.
pub const GATE_EXIT_HELP: &str = "\
Exit status:
  0  ADMIT: every criterion holds
  1  REFUSE: at least one criterion fails (each is printed with its value and limit)
  2  the trace was rejected or unreadable, a flag is out of range, or (with
     --min-quality) the quality sidecar beside the trace is not the one its
     quality.sha256 names, or is malformed

Criteria: goodput/s > min-goodput × (1 + margin); failure share <= ceiling
(default 0.05); censored share <= ceiling (default 0.05); p95 and p99 TTFT /
TPOT / E2E <= the limits given (each its own line); recovery after the burst phase <= --max-recovery-s;
--class-limits adds the same criteria for other classes; the largest gap
between token-carrying events <= --max-stall-ms and their p99 <= --max-p99-gap-ms
(a trace without gapsMs fails them); the run is open-loop (a
closed-loop run is refused unless --allow-closed-loop); the quality share of the
trace's quality sidecar (or --quality-import) >= --min-quality, compared exactly (a
trace without its sidecar beside it refuses; docs/quality.md). A figure that cannot be
measured (empty cohort, no completed rows, no recovery) fails its criterion.
Each class that lost requests gets a diagnosis line (counts, then a reading).
The goodput, share, p95 TTFT / E2E and p99 flags are decimals compared exactly as
written (equal to the requirement refuses; docs/contract.md §9.2).";

/// Flags of `goodput gate`.
#[derive(Debug, clap::Args)]
pub struct GateArgs {
    /// The trace file (`-` reads standard input).
    pub trace: String,
    /// Required goodput, requests per window second; the measured rate must exceed it × (1 + margin).
    #[arg(long, value_name = "R")]
    pub min_goodput: Decimal,
    /// Judge this class instead of all rows.
    #[arg(long, value_name = "NAME")]
    pub class: Option<String>,
    /// Safety margin on the required goodput (0.2 = 20 % headroom).
    #[arg(long, value_name = "F", default_value = "0")]
    pub margin: Decimal,
    /// Most failed / cohort allowed.
    #[arg(long, value_name = "F", default_value = DEFAULT_MAX_FAILURE_SHARE)]
    pub max_failure_share: Decimal,
    /// Most censored / cohort allowed.
    #[arg(long, value_name = "F", default_value = DEFAULT_MAX_CENSORED_SHARE)]
    pub max_censored_share: Decimal,
    /// The p95 limits (shared with `frontier` and `record --find-capacity`).
    #[command(flatten)]
    pub tails: TailArgs,
    /// Most nearest-rank p99 TTFT allowed, ms.
    #[arg(long, value_name = "X")]
    pub max_p99_ttft_ms: Option<Decimal>,
    /// Most nearest-rank p99 TPOT allowed, ms.
    #[arg(long, value_name = "X")]
    pub max_p99_tpot_ms: Option<Decimal>,
    /// Most nearest-rank p99 E2E allowed, ms.
    #[arg(long, value_name = "X")]
    pub max_p99_e2e_ms: Option<Decimal>,
    /// Most recovery time after the burst phase, s (fails when the run never
    /// recovers or the trace has no burst phase).
    #[arg(long, value_name = "S")]
    pub max_recovery_s: Option<f64>,
    /// Limits of one class, `CLASS:KEY=V,…` (keys goodput, failure-share,
    /// censored-share, ttft, tpot, e2e as p95 ms, recovery in s); repeatable,
    /// one per class, all checked in the same run.
    #[arg(long = "class-limits", value_name = "CLASS:LIMITS", value_parser = parse_class_limits)]
    pub class_limits: Vec<ClassLimits>,
    /// How recovery is measured.
    #[command(flatten)]
    pub recovery: RecoveryArgs,
    /// The stall limits.
    #[command(flatten)]
    pub gaps: crate::cli::gaps::GapArgs,
    /// Reject the trace (exit 2) at its first invalid row.
    #[arg(long)]
    pub strict: bool,
    /// Admit a closed-loop run (`--max-concurrency` recordings) anyway; by
    /// default it is refused, since the server paced its own load.
    #[arg(long)]
    pub allow_closed_loop: bool,
    /// Admit a run whose saturation verdict is overloaded anyway; by default
    /// it is refused, since goodput counted with the grace period's
    /// completions can exceed what the server sustains.
    #[arg(long)]
    pub allow_overload: bool,
    /// Most joules per good request (from the power series in the trace's
    /// metrics sidecar; fails when there is none).
    #[arg(long, value_name = "J")]
    pub max_joules_per_good_request: Option<f64>,
    /// The power series integrated for --max-joules-per-good-request.
    /// Default: the trace's `workload.powerMetric`, else `DCGM_FI_DEV_POWER_USAGE`.
    #[arg(long, value_name = "NAME")]
    pub power_metric: Option<String>,
    /// Least quality share allowed (its own criterion line): the share of the
    /// trace's quality sidecar (docs/quality.md), or of --quality-import.
    /// A trace without a sidecar beside it then refuses.
    #[arg(long, value_name = "F")]
    pub min_quality: Option<Decimal>,
    /// A baseline sidecar: the items without an expectation are judged
    /// against its answers.
    #[arg(
        long,
        value_name = "SIDECAR",
        requires = "min_quality",
        conflicts_with = "quality_import"
    )]
    pub quality_baseline: Option<String>,
    /// Judge --min-quality by an imported figure (`goodput quality import
    /// lm-eval … --out FILE`) instead of the trace's sidecar.
    #[arg(long, value_name = "FILE", requires = "min_quality")]
    pub quality_import: Option<String>,
    /// Print the decision as JSON.
    #[arg(long)]
    pub json: bool,
    /// Input limits.
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// `goodput gate`.
pub fn run(args: GateArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let quality = QualitySource {
        trace: args.trace.clone(),
        import: args.quality_import.clone(),
        baseline: args.quality_baseline.clone(),
    };
    let criteria = Criteria {
        min_goodput_per_s: args.min_goodput,
        margin: args.margin,
        max_failure_share: args.max_failure_share,
        max_censored_share: args.max_censored_share,
        max_p95_ttft_ms: args.tails.max_p95_ttft_ms,
        max_p95_e2e_ms: args.tails.max_p95_e2e_ms,
        max_p95_ttfa_ms: args.tails.max_p95_ttfa_ms,
        class: args.class,
        max_p95_tpot_ms: args.tails.max_p95_tpot_ms,
        p99: P99Limits {
            ttft_ms: args.max_p99_ttft_ms,
            tpot_ms: args.max_p99_tpot_ms,
            e2e_ms: args.max_p99_e2e_ms,
        },
        max_recovery_s: args.max_recovery_s,
        class_limits: args.class_limits,
        allow_closed_loop: args.allow_closed_loop,
        allow_overload: args.allow_overload,
        gaps: args.gaps.limits(),
        energy: EnergyLimits {
            max_joules_per_good_request: args.max_joules_per_good_request,
        },
    };
    // Flags first: a bad flag is exit 2 before any work.
    if let Some(min) = &args.min_quality {
        if min.is_negative() || min.value() > num_one().value() {
            return Err(Error::Usage(format!(
                "--min-quality: {min} is not allowed (a share in [0, 1], e.g. 0.98)"
            )));
        }
    }
    criteria.check().map_err(|e| Error::Usage(e.to_string()))?;
    let release = release_options(Some(&args.recovery), None)?;
    let mut analysis = load(&args.trace, args.limits.limits()?, args.strict)?;
    attach(
        &mut analysis.receipt,
        &analysis.trace,
        &analysis.judgements,
        &release,
    )
    .map_err(|e| Error::Usage(e.to_string()))?;
    if criteria.energy.max_joules_per_good_request.is_some() {
        let workload = &analysis.trace.contract.workload;
        if let Some(lines) = crate::cli::sidecar::power_readings(&args.trace, workload, false)? {
            analysis.receipt.energy = analysis.receipt.energy_from(
                &lines,
                &crate::cli::sidecar::power_metric(args.power_metric.as_deref(), workload),
            );
        }
    }
    let mut decision =
        gate::decide(&analysis.receipt, &criteria).map_err(|e| Error::Usage(e.to_string()))?;
    if let Some(min) = &args.min_quality {
        decision.add_check(quality_check(&quality, &analysis, min)?);
    }
    if args.json {
        emit(stdout, &json_bytes(&decision, "decision")?)?;
    } else {
        emit(stdout, goodput_render::gate::render(&decision).as_bytes())?;
    }
    Ok(if decision.admit { EXIT_OK } else { EXIT_NO })
}

fn num_one() -> goodput_core::review::exact::Decimal {
    Decimal::from_integer(1)
}

/// The `quality share >= F` line: from an imported figure, or the sidecar
/// beside the trace (checked; a mismatch is exit 2), or failing with why
/// there is no figure.
/// Where `--min-quality` takes its figure from.
struct QualitySource {
    trace: String,
    import: Option<String>,
    baseline: Option<String>,
}

fn quality_check(
    args: &QualitySource,
    analysis: &goodput_core::analyze::Analysis,
    min: &Decimal,
) -> Result<goodput_core::review::gate::Check, Error> {
    use goodput_core::quality::gate::{quality_check, QualityFigure};
    if let Some(path) = &args.import {
        let bytes = goodput_util::io::read_limited(path, 1 << 20)?;
        let figure = goodput_core::quality::lm_eval::read_imported(&bytes)?;
        return Ok(quality_check(QualityFigure::Imported(&figure), min));
    }
    let found = crate::cli::quality::beside(&args.trace, &analysis.trace.contract)?;
    let confidence =
        goodput_core::intervals::Confidence::new(analysis.receipt.contract.intervals.confidence)
            .unwrap_or_default();
    let report = crate::cli::quality::gate_report(&found, args.baseline.as_deref(), confidence)?;
    Ok(match (&found, &report) {
        (crate::cli::quality::Beside::Loaded(name, _), Ok(r)) => {
            quality_check(QualityFigure::Sidecar(name, r), min)
        }
        (_, Err(why)) => quality_check(QualityFigure::Missing(why), min),
        (_, Ok(_)) => quality_check(QualityFigure::Missing("no quality sidecar"), min),
    })
}
