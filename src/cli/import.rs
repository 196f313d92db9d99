//! `goodput import`: read another tool's export, convert and judge it
//! ([`goodput_import::pipeline`]), write the trace, print the comparison.

use std::io::Write;
use std::path::PathBuf;

use crate::cli::choices::SourceArg;
use crate::cli::error::Error;
use goodput_core::trace::Equality;
use goodput_import::{
    pipeline_owned, ImportError, ImportOptions, ImportReport, PipelineError, Source,
};
use goodput_render::record::analyze_command;
use goodput_util::io::{read_limited, write_atomic, ReadError};

use crate::cli::exit::EXIT_OK;
use crate::cli::flags::parse_slo;
use crate::cli::output::{check_output, emit, json_bytes};

/// Exit statuses of `goodput import`, shown in `--help`.
pub const IMPORT_EXIT_HELP: &str = "\
Exit status:
  0  the trace was written and the comparison printed
  2  the source file is not what --from says (the message names the JSON pointer,
     or the line for JSONL, of the first problem), cannot be read, the trace cannot
     be written, or a flag is wrong

Without --slo the trace declares the placeholder class
default:ttft=1000,tpot=50,e2e=10000; give the gates the source tool used for its
own goodput figure to compare like with like.";

/// The largest source file read (exports of long runs are large; the trace
/// written from them is still subject to the analyzer's limits).
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 1 << 30;

/// Flags of `goodput import`.
#[derive(Debug, Clone, clap::Args)]
pub struct ImportArgs {
    /// The tool that wrote FILE.
    #[arg(long = "from", value_enum, value_name = "TOOL")]
    pub from: SourceArg,
    /// The source file (`-` reads standard input).
    pub file: String,
    /// An SLO class `NAME:ttft=MS,tpot=MS,e2e=MS` (as `goodput record`); repeatable; the
    /// first is the default class. Without any: `default:ttft=1000,tpot=50,e2e=10000`.
    #[arg(long = "slo", value_name = "CLASS:GATES")]
    pub slo: Vec<String>,
    /// Whether a value equal to its gate passes (inclusive) or misses (strict).
    #[arg(long, value_name = "RULE", default_value = "inclusive", value_parser = ["inclusive", "strict"])]
    pub equality: String,
    /// Where to write the trace (atomically).
    #[arg(long, value_name = "FILE", default_value = "trace.json")]
    pub out: PathBuf,
    /// Print the comparison as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// AIPerf only: its aggregate export (`profile_export_aiperf.json`), whose
    /// figures (goodput, throughput, percentiles) are printed as "reported".
    #[arg(long, value_name = "FILE")]
    pub summary: Option<String>,
    /// guidellm only: which entry of `benchmarks[]` to import (one run per trace).
    #[arg(long, value_name = "INDEX", default_value_t = 0)]
    pub benchmark: usize,
    /// Leave out each row's gaps between tokens (`gapsMs`, from vLLM `itls` or
    /// AIPerf `inter_chunk_latency`): a smaller trace, no gap distribution.
    #[arg(long)]
    pub no_gaps: bool,
    /// Most bytes read from the source file.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_INPUT_BYTES)]
    pub max_input_bytes: u64,
}

/// Builds the options from the flags (`--slo` is read as `goodput record` reads it).
pub fn options_from(args: &ImportArgs) -> Result<ImportOptions, Error> {
    let mut options = ImportOptions {
        benchmark: args.benchmark,
        gaps: !args.no_gaps,
        equality: if args.equality == "strict" {
            Equality::Strict
        } else {
            Equality::Inclusive
        },
        ..ImportOptions::default()
    };
    if !args.slo.is_empty() {
        options.classes.clear();
        for (i, text) in args.slo.iter().enumerate() {
            let (name, gates) = parse_slo(text).map_err(Error::Usage)?;
            if options.classes.insert(name.clone(), gates).is_some() {
                return Err(Error::Usage(format!(
                    "--slo: class `{name}` is declared twice"
                )));
            }
            if i == 0 {
                options.default_class = name;
            }
        }
    }
    Ok(options)
}

/// `goodput import`: read, convert, judge, write the trace, print the comparison.
pub fn run(args: ImportArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    if args.summary.is_some() && Source::from(args.from) != Source::Aiperf {
        return Err(Error::Usage(
            "--summary is only for --from aiperf (its profile_export_aiperf.json)".into(),
        ));
    }
    let options = options_from(&args)?;
    let mut inputs = vec![std::path::Path::new(&args.file)];
    inputs.extend(args.summary.as_deref().map(std::path::Path::new));
    check_output("--out", &args.out, &inputs)?;
    let read = |path: &str, what: &str| {
        read_limited(path, args.max_input_bytes).map_err(|e| match e {
            // The analyzer's message names --max-bytes; here the flag is another.
            ReadError::TooLarge { limit, .. } => Error::Import(PipelineError::Import {
                tool: Source::from(args.from).name(),
                what: what.into(),
                source: ImportError::Whole(format!(
                    "{path} is over the limit of {limit} bytes (raise it with --max-input-bytes)"
                )),
            }),
            other => other.into(),
        })
    };
    let bytes = read(&args.file, "the source file")?;
    let summary = match &args.summary {
        Some(path) => Some(read(path, "the --summary file")?),
        None => None,
    };
    let outcome = pipeline_owned(args.from.into(), bytes, &options, summary.as_deref())?;
    let path = args.out.display().to_string();
    write_atomic(&args.out, &outcome.trace_bytes).map_err(|source| Error::Write {
        path: path.clone(),
        source,
    })?;
    let command = analyze_command(
        &path,
        outcome.imported.trace.rows.len(),
        outcome.trace_bytes.len(),
    );
    // Without --slo the trace declares the writer's placeholder class.
    let placeholder_gates = args.slo.is_empty();
    let text = if args.json {
        let doc = ImportReport {
            placeholder_gates,
            trace: &path,
            rows: outcome.imported.trace.rows.len(),
            bytes: outcome.trace_bytes.len(),
            analyze: &command,
            reported: &outcome.imported.reported,
            comparison: &outcome.comparison,
        };
        json_bytes(&doc, "comparison")?
    } else {
        let mut text = String::new();
        if placeholder_gates {
            text.push_str(&goodput_render::import::placeholder_gates_line(
                &outcome.comparison.tool,
                &outcome.comparison.gates,
            ));
        }
        text.push_str(&goodput_render::import::render(
            &outcome.comparison,
            &path,
            outcome.imported.trace.rows.len(),
            &command,
        ));
        text.into_bytes()
    };
    emit(stdout, &text)?;
    Ok(EXIT_OK)
}
