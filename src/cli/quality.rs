//! `goodput quality`: judge a quality sidecar (against a baseline's
//! answers), and `goodput quality import lm-eval`: an evaluation harness's
//! figure for the gate. Also the one finder of a trace's quality sidecar,
//! used by `analyze` (the receipt's `quality` block) and `gate
//! --min-quality`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::cli::error::Error;
use crate::cli::exit::EXIT_OK;
use crate::cli::output::{check_output, emit, json_bytes, write_file};
use goodput_core::intervals::Confidence;
use goodput_core::quality::{
    self, judge::QualityReport, lm_eval, FileKind, QualityError, QualityLimits, Sidecar,
};
use goodput_core::trace::Contract;
use goodput_util::io::read_limited;

/// Exit statuses of `goodput quality`, shown in `--help`.
pub const QUALITY_EXIT_HELP: &str = "\
Exit status:
  0  the share was computed (or the figure imported) and printed
  2  a sidecar, baseline, bank or results file is unreadable or malformed (the message
     names the line and JSON pointer), the baseline or bank is of another bank, a
     recorded verdict disagrees with --bank, or the command line is wrong

The share is (met + matched) / judged: items with an expectation count by their
verdict, failed items count against, items without one are judged against the
baseline's answer (same sha256) and are not judged without --baseline. The
interval is Wilson's at --confidence (docs/quality.md).";

/// Flags of `goodput quality`.
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct QualityArgs {
    /// Import a figure from an evaluation harness instead.
    #[command(subcommand)]
    pub import: Option<QualityCommand>,
    /// The quality sidecar (`TRACE.quality.jsonl`) to judge.
    pub sidecar: Option<String>,
    /// A baseline run's sidecar of the same bank: items without an
    /// expectation are judged against its answers, and every item that
    /// changed is listed.
    #[arg(long, value_name = "SIDECAR")]
    pub baseline: Option<String>,
    /// The bank the sidecar answered: every recorded verdict is recomputed
    /// from it and must agree.
    #[arg(long, value_name = "BANK")]
    pub bank: Option<String>,
    /// Print the report as JSON (`goodput schema quality`).
    #[arg(long)]
    pub json: bool,
    /// Two-sided confidence level of the interval, in [0.5, 0.9999].
    #[arg(long, value_name = "LEVEL", default_value_t = Confidence::DEFAULT)]
    pub confidence: f64,
    /// Size limits of each file read.
    #[command(flatten)]
    pub limits: QualityLimitArgs,
}

/// `goodput quality import …`.
#[derive(Debug, clap::Subcommand)]
pub enum QualityCommand {
    /// Read one task's metric and stderr from an evaluation harness's results file.
    #[command(after_help = QUALITY_EXIT_HELP)]
    Import(ImportArgs),
}

/// The harnesses `quality import` reads.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum Harness {
    /// lm-evaluation-harness's results JSON (`results.<task>."<metric>,<filter>"`).
    LmEval,
}

/// Flags of `goodput quality import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    /// Which harness wrote the file.
    #[arg(value_enum)]
    pub harness: Harness,
    /// The results file.
    pub results: String,
    /// The task (needed when the file holds several).
    #[arg(long, value_name = "NAME")]
    pub task: Option<String>,
    /// The metric, `metric,filter` (`acc` means `acc,none`; needed when the task has several).
    #[arg(long, value_name = "KEY")]
    pub metric: Option<String>,
    /// Two-sided confidence level of the interval formed from the stderr.
    #[arg(long, value_name = "LEVEL", default_value_t = Confidence::DEFAULT)]
    pub confidence: f64,
    /// Also write the imported figure (JSON) to FILE, for `gate --quality-import`.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Print the imported figure as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The size limits of a bank or sidecar read.
#[derive(Debug, clap::Args)]
pub struct QualityLimitArgs {
    /// Most items per bank or sidecar (inclusive) [default: 1000].
    #[arg(long, value_name = "N", default_value_t = QualityLimits::DEFAULT_ITEMS)]
    pub max_items: u64,
    /// Most bytes per bank or sidecar (inclusive) [default: 4 MiB].
    #[arg(long, value_name = "N", default_value_t = QualityLimits::DEFAULT_BYTES)]
    pub max_bytes: u64,
}

impl QualityLimitArgs {
    fn limits(&self) -> QualityLimits {
        QualityLimits {
            max_items: self.max_items,
            max_bytes: self.max_bytes,
        }
    }
}

/// `goodput quality`.
pub fn run(args: QualityArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    if let Some(QualityCommand::Import(import)) = args.import {
        return run_import(import, stdout);
    }
    let Some(path) = &args.sidecar else {
        return Err(Error::Usage(
            "goodput quality needs a SIDECAR (or `goodput quality import lm-eval FILE`)".to_owned(),
        ));
    };
    let confidence = crate::cli::flags::confidence_flag(args.confidence)?;
    let limits = args.limits.limits();
    let sidecar = read_sidecar(path, FileKind::Sidecar, limits)?;
    let baseline = match &args.baseline {
        Some(b) => Some(read_sidecar(b, FileKind::Baseline, limits)?),
        None => None,
    };
    let mut report = quality::judge(&sidecar, baseline.as_ref(), confidence)?;
    if let Some(bank) = &args.bank {
        let bytes = read_limited(bank, limits.max_bytes)?;
        let bank = quality::parse_bank(&bytes, limits)?;
        quality::judge::rejudge(&sidecar, &bank)?;
        report.rejudged = true;
    }
    if args.json {
        emit(stdout, &json_bytes(&report, "report")?)?;
    } else {
        let text = goodput_render::quality::render(&report);
        emit(
            stdout,
            goodput_util::escape::terminal_lines(&text).as_bytes(),
        )?;
    }
    Ok(EXIT_OK)
}

fn run_import(args: ImportArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    if let Some(out) = &args.out {
        check_output("--out", out, &[Path::new(&args.results)])?;
    }
    let confidence = crate::cli::flags::confidence_flag(args.confidence)?;
    let Harness::LmEval = args.harness;
    let bytes = read_limited(&args.results, MAX_RESULTS_BYTES)?;
    let figure = lm_eval::import(
        &bytes,
        args.task.as_deref(),
        args.metric.as_deref(),
        confidence,
    )?;
    let json = json_bytes(&figure, "imported figure")?;
    if let Some(out) = &args.out {
        write_file(out, &json)?;
    }
    if args.json {
        emit(stdout, &json)?;
    } else {
        let text = goodput_render::quality::imported(&figure);
        emit(
            stdout,
            goodput_util::escape::terminal_lines(&text).as_bytes(),
        )?;
    }
    Ok(EXIT_OK)
}

/// The largest results file `quality import` reads (a results file with
/// every sample's config is a few MB).
pub const MAX_RESULTS_BYTES: u64 = 64 << 20;

/// Reads and checks one sidecar.
fn read_sidecar(path: &str, file: FileKind, limits: QualityLimits) -> Result<Sidecar, Error> {
    let bytes = read_limited(path, limits.max_bytes)?;
    Ok(quality::parse_sidecar(&bytes, file, limits)?)
}

/// What was found for a trace's quality sidecar.
#[derive(Debug)]
pub enum Beside {
    /// The trace has no `quality` member.
    None,
    /// The trace names a sidecar that cannot be found: why, in words.
    Missing(String),
    /// The sidecar, its sha256 checked against the trace's `quality.sha256`.
    Loaded(String, Sidecar),
}

/// Finds, reads and checks the quality sidecar the trace at `trace_path`
/// names. A sidecar whose sha256 is not the trace's, or that is malformed,
/// is an error (exit 2): it belongs to another run.
pub fn beside(trace_path: &str, contract: &Contract) -> Result<Beside, Error> {
    let Some(named) = &contract.quality else {
        return Ok(Beside::None);
    };
    if trace_path == "-" {
        return Ok(Beside::Missing(format!(
            "the trace came from standard input, so its quality sidecar {} cannot be found beside it",
            named.sidecar
        )));
    }
    let path = Path::new(trace_path)
        .parent()
        .unwrap_or(Path::new(""))
        .join(&named.sidecar);
    let shown = path.display().to_string();
    if !path.is_file() {
        return Ok(Beside::Missing(format!(
            "the trace names quality sidecar {shown}, which is not beside it"
        )));
    }
    let limits = QualityLimits::default();
    let bytes = read_limited(&shown, limits.max_bytes)?;
    let found = goodput_core::trace::sha256_hex(&bytes);
    if found != named.sha256 {
        return Err(QualityError::Sha256Mismatch {
            path: shown,
            found,
            expected: named.sha256.clone(),
        }
        .into());
    }
    let sidecar = quality::parse_sidecar(&bytes, FileKind::Sidecar, limits)?;
    Ok(Beside::Loaded(named.sidecar.clone(), sidecar))
}

/// The quality report the gate judges: the sidecar beside the trace,
/// against `baseline` when given; `Err(why)` in words when there is none.
pub fn gate_report(
    beside: &Beside,
    baseline: Option<&str>,
    confidence: Confidence,
) -> Result<Result<QualityReport, String>, Error> {
    let sidecar = match beside {
        Beside::Loaded(_, s) => s,
        Beside::Missing(why) => return Ok(Err(why.clone())),
        Beside::None => {
            return Ok(Err(
                "the trace names no quality sidecar (record with --quality-bank, or give --quality-import)"
                    .to_owned(),
            ))
        }
    };
    let baseline = match baseline {
        Some(b) => Some(read_sidecar(
            b,
            FileKind::Baseline,
            QualityLimits::default(),
        )?),
        None => None,
    };
    Ok(Ok(quality::judge(sidecar, baseline.as_ref(), confidence)?))
}
