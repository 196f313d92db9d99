//! `goodput merge SHARD.json… --out TRACE`: the traces of the shards of one
//! schedule (`record --shard K/N`) → the one trace a single recorder would
//! have written (refusals and the merged `boundary`: `merge`).

use std::io::Write;
use std::path::PathBuf;

use crate::cli::error::Error;
use goodput_core::merge::{merge, MergeError};
use goodput_core::trace::Scalar;
use goodput_render::record::analyze_command;

use crate::cli::exit::EXIT_OK;
use crate::cli::flags::resolve_limits;
use crate::cli::output::{check_output, emit};
use goodput_util::io::{read_limited, ReadError};

/// Exit statuses of `goodput merge`, shown in `--help`.
pub const MERGE_EXIT_HELP: &str = "\
Exit status:
  0    the merged trace was written
  2    a file is unreadable, larger than --max-bytes, or not a shard, the shards are not the N shards of one
       recording (seed, schedule, gates, window, N, a missing or repeated shard,
       overlapping ids: the message names the file), or the output cannot be written

Every shard must have recorded its whole window: an interrupted or recovered shard
is refused. See docs/recorder.md, \"Shards\", and deploy/kubernetes/.";

/// Flags of `goodput merge`.
#[derive(Debug, Clone, clap::Args)]
pub struct MergeArgs {
    /// The shards' traces, in any order (every shard 0 to N − 1 once).
    #[arg(value_name = "SHARD.json", required = true)]
    pub shards: Vec<PathBuf>,
    /// Where to write the merged trace (atomically).
    #[arg(long, value_name = "FILE", default_value = "trace.json")]
    pub out: PathBuf,
    /// Most bytes read from each shard (inclusive), checked before parsing, as
    /// `analyze` reads a trace [default: $GOODPUT_MAX_BYTES, else 65536].
    #[arg(long, value_name = "N")]
    pub max_bytes: Option<u64>,
}

/// Reads the shards, merges them, writes the trace, prints what it holds.
pub fn run(args: MergeArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    let inputs: Vec<&std::path::Path> = args.shards.iter().map(PathBuf::as_path).collect();
    check_output("--out", &args.out, &inputs)?;
    // Each shard is read within the byte limit `analyze` would apply to it,
    // so an oversized file is refused (naming it) before it is buffered.
    let limits = resolve_limits(None, args.max_bytes, |name| std::env::var_os(name))?;
    let mut files = Vec::with_capacity(args.shards.len());
    for p in &args.shards {
        let path = p.display().to_string();
        let bytes = read_limited(&path, limits.max_bytes).map_err(|e| shard_unread(&path, e))?;
        files.push((path, bytes));
    }
    let doc = merge(&files)?;
    let rows = doc.rows.len();
    let shards = doc.boundary.get("shards").cloned();
    let mut text = String::new();
    let out = args.out.display().to_string();
    let clocks: Vec<String> = doc
        .boundary
        .iter()
        .filter(|(k, _)| k.starts_with("shard") && k.ends_with("OffsetMs"))
        .map(|(k, v)| match v {
            Scalar::Number(x) => format!("{k} {x}"),
            other => format!("{k} {other:?}"),
        })
        .collect();
    let bytes = doc.write_atomic(&args.out).map_err(|source| Error::Write {
        path: out.clone(),
        source,
    })?;
    let n = match shards {
        Some(Scalar::Number(n)) => n as usize,
        _ => files.len(),
    };
    text.push_str(&format!(
        "merged {n} shards: {rows} rows to {out} ({bytes} bytes)\n"
    ));
    if !clocks.is_empty() {
        text.push_str(&format!("  clock offsets (ms): {}\n", clocks.join(", ")));
    }
    text.push_str(&format!("next: {}\n", analyze_command(&out, rows, bytes)));
    emit(stdout, text.as_bytes())?;
    Ok(EXIT_OK)
}

/// A shard that could not be read, named (several are given): the reason,
/// or its size beside the byte limit.
fn shard_unread(path: &str, e: ReadError) -> MergeError {
    let source = match e {
        ReadError::Io { source, .. } => source,
        ReadError::TooLarge { limit, size, .. } => {
            let size = size.map_or_else(|| "more than that".to_owned(), |s| format!("{s} bytes"));
            std::io::Error::other(format!(
                "it is over the limit of {limit} bytes ({size}; raise it with --max-bytes or {})",
                goodput_core::trace::Limits::BYTES_VARIABLE
            ))
        }
    };
    MergeError::Read {
        path: path.to_owned(),
        source,
    }
}
