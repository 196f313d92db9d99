//! `goodput frontier`: read and analyze each trace of a sweep (with the same
//! limits and code as `goodput analyze`), build the [`Frontier`], and print
//! it as a table, Markdown or JSON; `--svg FILE` also draws it.

use std::io::Write;
use std::path::PathBuf;

use crate::cli::error::Error;
use goodput_core::analyze::{analyze_owned_at, AnalyzeOptions};
use goodput_core::frontier::{frontier_judged, Frontier, FrontierError, DEFAULT_ATTAINMENT};
use goodput_core::intervals::Confidence;
use goodput_core::receipt::Receipt;
use goodput_core::trace::{Limits, Rejection};
use goodput_render::frontier as render;
use goodput_util::io::{read_limited, ReadError};

use crate::cli::exit::EXIT_OK;
use crate::cli::flags::{HoldArgs, LimitArgs};
use crate::cli::output::{check_output, emit, json_bytes, write_file};
use crate::cli::sidecar::Sidecar;
use goodput_core::server_metrics::{peaks, Peaks};

/// Exit statuses of `goodput frontier`, shown in `--help`.
pub const FRONTIER_EXIT_HELP: &str = "\
Exit status:
  0  the frontier was computed (whatever it shows)
  2  a trace was rejected or unreadable (the message names it; raise --max-rows /
     --max-bytes, or GOODPUT_MAX_ROWS / GOODPUT_MAX_BYTES, for long recordings), --attainment is not in (0, 1], --class
     names no class of some trace, a limit is out of range, or the SVG could not be written

Points are sorted by measured offered load (cohort / window s). The knee is the
last rate before goodput stops rising for good (each later rate adds at most
0.1 × its extra offered load as goodput) while the extra load shows up as
completions, p95 TTFT growing faster than load, or failed + censored work. The
capacity is the highest offered rate whose pass share is at least --attainment,
interpolated linearly to the crossing (DistServe's per-GPU goodput). With
--max-p95-ttft-ms, --max-p95-e2e-ms, --max-p95-tpot-ms, --max-p95-ttfa-ms,
--max-failure-share or --max-censored-share (gate's criteria, checked as gate
checks them), a rate
holds only when every repeat also meets every limit; the capacity is then the
highest rate that held, and the output names what failed at the next rate.
Full rules: docs/frontier.md.";

/// Flags of `goodput frontier`.
#[derive(Debug, clap::Args)]
pub struct FrontierArgs {
    /// The traces of the sweep, one per offered rate (any order).
    #[arg(required = true, value_name = "TRACE")]
    pub traces: Vec<String>,
    /// Pass-share target of the capacity, in (0, 1].
    #[arg(long, value_name = "F", default_value_t = DEFAULT_ATTAINMENT)]
    pub attainment: f64,
    /// Use this class's figures instead of all rows.
    #[arg(long, value_name = "NAME")]
    pub class: Option<String>,
    /// The limits a rate must hold besides the pass share.
    #[command(flatten)]
    pub hold: HoldArgs,
    /// Print the frontier as JSON (`goodput-frontier/1`).
    #[arg(long, conflicts_with = "markdown")]
    pub json: bool,
    /// Print the frontier as a Markdown table.
    #[arg(long, conflicts_with = "csv")]
    pub markdown: bool,
    /// Print the points as CSV (one line per trace, the JSON points' fields as columns).
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Also draw, against offered/s, into FILE (atomically): served/s and
    /// goodput/s, the pass share with the target, then p95 TTFT and p95 TPOT
    /// each with the classes' gates, and, when the traces carry gaps or
    /// answer instants, the p99 gap (with the stall gates) and the p95 TTFA
    /// (with the TTFA gates).
    #[arg(long, value_name = "FILE")]
    pub svg: Option<PathBuf>,
    /// Input limits, per trace.
    #[command(flatten)]
    pub limits: LimitArgs,
    /// Two-sided confidence level of the interval bars, in [0.5, 0.9999].
    #[arg(long, value_name = "LEVEL", default_value_t = Confidence::DEFAULT)]
    pub confidence: f64,
    /// Leave every trace's `record --metrics` sidecar out (no server peaks).
    #[arg(long)]
    pub no_sidecar: bool,
}

/// Reads and analyzes one trace; a rejection names the file. With it, the
/// peaks of its `record --metrics` sidecar, when it has one beside it.
fn receipt_of(
    path: &str,
    limits: Limits,
    confidence: Confidence,
    no_sidecar: bool,
) -> Result<(Receipt, Option<Peaks>), Error> {
    let rejected = |rejection| Error::RejectedFile {
        path: path.to_owned(),
        rejection,
    };
    let bytes = match read_limited(path, limits.max_bytes) {
        Ok(b) => b,
        Err(ReadError::TooLarge {
            limit,
            size: Some(size),
            ..
        }) => return Err(rejected(Rejection::too_large(size, limit))),
        Err(e) => return Err(e.into()),
    };
    let options = AnalyzeOptions {
        limits,
        rows: false,
        strict: false,
    };
    let analysis = analyze_owned_at(bytes, options, confidence).map_err(rejected)?;
    let workload = &analysis.trace.contract.workload;
    let peaks = match crate::cli::sidecar::load(path, workload, no_sidecar)? {
        Sidecar::Loaded(lines) => Some(peaks(&lines)),
        Sidecar::Missing(_) | Sidecar::Skipped | Sidecar::None => None,
    };
    Ok((analysis.receipt, peaks))
}

/// Builds the frontier of the named traces (the part of the command that
/// reads files; tests call [`goodput_core::frontier::frontier`] on receipts
/// directly).
pub fn load(args: &FrontierArgs) -> Result<Frontier, Error> {
    // Flags first: a bad target is exit 2 before any file is read.
    if !(args.attainment > 0.0 && args.attainment <= 1.0) {
        return Err(Error::Usage(
            FrontierError::BadAttainment(args.attainment).to_string(),
        ));
    }
    let hold = args.hold.limits()?;
    let confidence = crate::cli::flags::confidence_flag(args.confidence)?;
    let limits = args.limits.limits()?;
    let mut receipts = Vec::with_capacity(args.traces.len());
    let mut server = Vec::with_capacity(args.traces.len());
    for path in &args.traces {
        let (receipt, peaks) = receipt_of(path, limits, confidence, args.no_sidecar)?;
        receipts.push((path.clone(), receipt));
        server.push((path.clone(), peaks));
    }
    let mut f = frontier_judged(&receipts, args.class.as_deref(), args.attainment, &hold)
        .map_err(|e| Error::Usage(e.to_string()))?;
    for point in &mut f.points {
        if let Some((_, Some(p))) = server.iter().find(|(label, _)| *label == point.label) {
            point.peak_waiting = p.waiting;
            point.peak_kv_usage = p.kv_usage;
        }
    }
    Ok(f)
}

/// `goodput frontier`.
pub fn run(args: FrontierArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    if let Some(svg) = &args.svg {
        let inputs: Vec<&std::path::Path> = args.traces.iter().map(std::path::Path::new).collect();
        check_output("--svg", svg, &inputs)?;
    }
    let f = load(&args)?;
    if let Some(path) = &args.svg {
        write_file(path, render::svg(&f).as_bytes())?;
    }
    let bytes = if args.json {
        json_bytes(&f, "frontier")?
    } else if args.csv {
        goodput_render::csv::frontier_points(&f).map_err(|e| Error::Write {
            path: "CSV".to_owned(),
            source: e.into(),
        })?
    } else if args.markdown {
        render::markdown(&f).into_bytes()
    } else {
        render::text(&f).into_bytes()
    };
    emit(stdout, &bytes)?;
    Ok(EXIT_OK)
}
