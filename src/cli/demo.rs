//! `goodput demo`: the whole job in one command, on the built-in sim.
//!
//! Starts a simulated engine on a free loopback port, runs an open-loop rate
//! sweep across its knee with the very same code `goodput record
//! --request-rate A,B,…` runs, then the frontier and one HTML report, all
//! into a folder of its own, and prints the answer and the commands that do
//! the same against a real server. Nothing here computes a figure: the
//! sweep, the frontier, the report and the answer's words come from the
//! recorder, the core and the renderer.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Parser;

use crate::cli::error::Error;
use crate::cli::exit::EXIT_OK;
use crate::cli::output::emit;
use crate::cli::{Cli, Command};
use goodput_core::analyze::{analyze_owned, AnalyzeOptions};
use goodput_core::trace::Limits;
use goodput_render::demo::{self as words, DemoSetup};

/// Exit statuses of `goodput demo`, shown in `--help`.
pub const DEMO_EXIT_HELP: &str = "\
Exit status:
  0  the demo ran: traces, frontier.svg and report.html are in the folder it names
  2  --dir is not an empty or new folder, a flag is out of range, or a file could not be written
  130/143/129  stopped by Ctrl-C / SIGTERM / SIGHUP (traces already written stay)

The simulated server has 8 batch slots and streams 64 ± 16 tokens a request,
about 12 requests/s at a full batch; the sweep offers 4, 8, 12 and 20 requests/s
for 8 s each (under a minute with cooldowns), judged by
chat:ttft=500ms,tpot=50ms. Rules: docs/frontier.md, docs/contract.md.";

/// The gates the demo's traces declare.
pub const DEMO_SLO: &str = "chat:ttft=500,tpot=50";

/// The folder used when `--dir` is not given (a free sibling `-2`, `-3`, …
/// when it is taken).
pub const DEFAULT_DIR: &str = "goodput-demo";

/// Input limits for reading the demo's own traces back (a 20/s point of 8 s
/// has ~160 rows, far below; the defaults of 500 rows / 64 KiB would refuse a
/// longer `--duration`).
const MAX_ROWS: u64 = 100_000;
const MAX_BYTES: u64 = 100_000_000;

/// Flags of `goodput demo`.
#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// Write the traces, frontier.svg, report.html and record.log here (a new
    /// or empty folder; default ./goodput-demo, or the first free
    /// ./goodput-demo-N).
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// The offered rates of the sweep, requests/s.
    #[arg(long, value_name = "R,R…", default_value = "4,8,12,20")]
    pub rates: String,
    /// The window of each rate.
    #[arg(long, value_name = "DURATION", default_value = "8s")]
    pub duration: String,
    /// No live progress line on standard error.
    #[arg(long)]
    pub no_progress: bool,
}

/// The simulated engine's flags (as `goodput sim` takes them).
const SIM_FLAGS: [&str; 6] = [
    "--max-batch",
    "8",
    "--output-tokens",
    "64:16",
    "--decode-step-ms",
    "8",
];

/// `goodput demo`.
pub fn run(args: DemoArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let dir = demo_dir(args.dir.as_deref())?;
    let sim_args = match parse(["sim"].into_iter().chain(SIM_FLAGS))? {
        Command::Sim(a) => a,
        _ => unreachable!("parsed as sim"),
    };
    let config = crate::cli::sim::config_from(&sim_args)?;
    let engine = config.engine;
    let sim = goodput_sim::SimServer::start(config, 1).map_err(|source| Error::Listen {
        addr: "127.0.0.1:0".to_owned(),
        source,
    })?;
    let setup = DemoSetup {
        url: sim.url(),
        rates: args.rates.clone(),
        duration: args.duration.clone(),
        slo: DEMO_SLO.to_owned(),
        dir: dir.display().to_string(),
        full_batch_tokens_per_s: engine.full_batch_tokens_per_s(),
        max_batch: engine.max_batch,
        mean_output_tokens: 64.0,
    };
    emit(stdout, words::opening(&setup).as_bytes())?;
    let traces = sweep(&setup, &dir, args.no_progress)?;
    drop(sim);
    let frontier = frontier(&traces, &dir)?;
    emit(stdout, goodput_render::frontier::text(&frontier).as_bytes())?;
    let past = words::first_past_capacity(&frontier);
    let top = frontier.points.last();
    let reported = top.map_or_else(
        || traces[traces.len() - 1].clone(),
        |p| PathBuf::from(&p.label),
    );
    let verdict = saturation_of(&reported)?;
    report(&reported, &dir)?;
    let answer = words::answer(&frontier, past, top.map(|p| (p, verdict.as_str())));
    emit(stdout, answer.as_bytes())?;
    let label = reported.display().to_string();
    emit(stdout, words::closing(&setup, &label).as_bytes())?;
    Ok(EXIT_OK)
}

/// Parses `goodput ARGS…` with the real command line's parser.
fn parse<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<Command, Error> {
    let argv = std::iter::once("goodput").chain(args);
    Cli::try_parse_from(argv)
        .map(|cli| cli.command)
        .map_err(|e| Error::Usage(e.to_string()))
}

/// The folder to write into, created: `asked` when it is new or empty,
/// else the default or its first free `-N` sibling.
fn demo_dir(asked: Option<&Path>) -> Result<PathBuf, Error> {
    let usable = |p: &Path| match std::fs::read_dir(p) {
        Ok(mut entries) => p.is_dir() && entries.next().is_none(),
        Err(_) => !p.exists(),
    };
    let dir = match asked {
        Some(p) if usable(p) => p.to_path_buf(),
        Some(p) => {
            return Err(Error::Usage(format!(
                "--dir {}: not a new or empty folder (the demo never writes over files)",
                goodput_util::escape::terminal(&p.display().to_string())
            )))
        }
        None => (1..=99)
            .map(|n| match n {
                1 => PathBuf::from(DEFAULT_DIR),
                n => PathBuf::from(format!("{DEFAULT_DIR}-{n}")),
            })
            .find(|p| usable(p))
            .ok_or_else(|| {
                Error::Usage(format!(
                    "{DEFAULT_DIR} … {DEFAULT_DIR}-99 are all taken: pass --dir"
                ))
            })?,
    };
    std::fs::create_dir_all(&dir).map_err(|source| Error::Write {
        path: dir.display().to_string(),
        source,
    })?;
    Ok(dir)
}

/// Runs the sweep (its own lines go to `record.log`); the traces written,
/// in the order of the rates.
fn sweep(setup: &DemoSetup, dir: &Path, no_progress: bool) -> Result<Vec<PathBuf>, Error> {
    let template = dir.join("trace-{rate}.json").display().to_string();
    let mut argv = vec![
        "record",
        "--url",
        &setup.url,
        "--model",
        "sim",
        "--request-rate",
        &setup.rates,
        "--duration",
        &setup.duration,
        "--cooldown",
        "1s",
        "--grace",
        "20s",
        "--slo",
        &setup.slo,
        "--input-tokens",
        "256:64",
        "--metrics",
        "--out",
        &template,
    ];
    if no_progress {
        argv.push("--no-progress");
    }
    let Command::Record(args) = parse(argv)? else {
        unreachable!("parsed as record")
    };
    let traces: Vec<PathBuf> = args
        .request_rate
        .iter()
        .map(|r| crate::cli::record::rate_sweep::point_path(&template, &r.text))
        .collect();
    let mut log = Vec::new();
    let outcome = crate::cli::record::rate_sweep::run(*args, &mut log);
    let log_path = dir.join("record.log");
    crate::cli::output::write_file(&log_path, &log)?;
    outcome?;
    Ok(traces)
}

/// The frontier of the sweep, its SVG written beside the traces.
fn frontier(traces: &[PathBuf], dir: &Path) -> Result<goodput_core::frontier::Frontier, Error> {
    let mut argv: Vec<String> = vec!["frontier".into()];
    argv.extend(traces.iter().map(|p| p.display().to_string()));
    argv.extend(["--max-rows", "100000", "--max-bytes", "100000000"].map(String::from));
    let Command::Frontier(args) = parse(argv.iter().map(String::as_str))? else {
        unreachable!("parsed as frontier")
    };
    let f = crate::cli::frontier::load(&args)?;
    let svg = dir.join("frontier.svg");
    crate::cli::output::write_file(&svg, goodput_render::frontier::svg(&f).as_bytes())?;
    Ok(f)
}

/// The saturation verdict of one trace, in the receipt's words.
fn saturation_of(trace: &Path) -> Result<String, Error> {
    let bytes = goodput_util::io::read_limited(&trace.display().to_string(), MAX_BYTES)?;
    let options = AnalyzeOptions {
        limits: Limits {
            max_rows: MAX_ROWS,
            max_bytes: MAX_BYTES,
        },
        rows: false,
        strict: false,
    };
    let analysis = analyze_owned(bytes, options).map_err(|rejection| Error::RejectedFile {
        path: trace.display().to_string(),
        rejection,
    })?;
    Ok(analysis
        .receipt
        .results
        .all
        .saturation
        .verdict
        .as_str()
        .to_owned())
}

/// Writes `report.html` of one trace into the folder.
fn report(trace: &Path, dir: &Path) -> Result<(), Error> {
    let out = dir.join("report.html").display().to_string();
    let trace = trace.display().to_string();
    let argv = [
        "report",
        &trace,
        "--out",
        &out,
        "--max-rows",
        "100000",
        "--max-bytes",
        "100000000",
    ];
    let Command::Report(args) = parse(argv)? else {
        unreachable!("parsed as report")
    };
    crate::cli::report::run(args, &mut std::io::sink())?;
    Ok(())
}
