//! `goodput verify`: recompute a receipt from its trace and report every
//! difference.

use std::io::Write;

use crate::cli::error::Error;
use goodput_core::review::verify;
use goodput_util::io::{read_limited, ReadError};

use crate::cli::exit::{EXIT_NO, EXIT_OK};
use crate::cli::output::{emit, json_bytes};

/// Exit statuses of `goodput verify`, shown in `--help`.
pub const VERIFY_EXIT_HELP: &str = "\
Exit status:
  0  the receipt is exactly what the trace gives (same sha256, contract, numbers)
  1  any difference: other trace bytes, another contract, any number
  2  the receipt or the trace cannot be read, the receipt is not a goodput
     receipt, or its schema major version is not this one's";

/// Flags of `goodput verify`.
#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    /// The receipt to check (JSON, as written by `goodput analyze --json`).
    pub receipt: String,
    /// The trace it claims to be made from; read within the receipt's recorded byte limit.
    pub trace: String,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// `goodput verify`.
pub fn run(args: VerifyArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    // A receipt is small next to its trace; the trace's own limit bounds the read.
    let receipt_bytes = read_limited(&args.receipt, MAX_RECEIPT_BYTES)?;
    let claimed = verify::read_receipt(&receipt_bytes).map_err(Error::Receipt)?;
    let report = match read_limited(&args.trace, claimed.limits.max_bytes) {
        Ok(trace) => {
            let power = power_of(&args.trace, &trace, claimed.tree.get("energy").is_some())?;
            verify::verify_with_power(&claimed, &trace, power.as_deref())
        }
        Err(ReadError::TooLarge { size, .. }) => verify::verify_oversized(&claimed, size),
        Err(e) => return Err(e.into()),
    };
    if args.json {
        emit(stdout, &json_bytes(&report, "report")?)?;
    } else {
        emit(stdout, goodput_render::verify::render(&report).as_bytes())?;
    }
    Ok(if report.agrees() { EXIT_OK } else { EXIT_NO })
}

/// The largest receipt `verify` reads (a receipt with per-row verdicts of a
/// million-row trace is a few hundred MB).
pub const MAX_RECEIPT_BYTES: u64 = 1 << 30;

/// The trace's sidecar readings when the receipt claims an `energy` block
/// (the trace's workload names the sidecar; a trace that does not parse
/// has none, and verify reports the trace's own problem).
fn power_of(
    path: &str,
    trace: &[u8],
    wanted: bool,
) -> Result<Option<Vec<goodput_core::server_metrics::MetricsLine>>, Error> {
    if !wanted {
        return Ok(None);
    }
    let workload = serde_json::from_slice::<serde_json::Value>(trace)
        .ok()
        .and_then(|doc| serde_json::from_value(doc.get("workload")?.clone()).ok());
    match workload {
        Some(workload) => crate::cli::sidecar::power_readings(path, &workload, false),
        None => Ok(None),
    }
}
