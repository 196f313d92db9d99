//! Finding a trace's `record --metrics` sidecar: the file its workload names
//! (`metricsFile`), beside the trace, checked against `metricsSha256`. Used
//! by `goodput report` (the server panels) and `goodput frontier` (peaks per
//! point).

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::cli::error::Error;
use goodput_core::server_metrics::{parse_sidecar, MetricsLine};
use goodput_core::trace::{Labels, Scalar};
use goodput_util::io::read_limited;

/// The largest sidecar read.
const MAX_SIDECAR_BYTES: u64 = 256 << 20;

/// What was found for one trace.
#[derive(Debug)]
pub enum Sidecar {
    /// The trace names no sidecar (or came from standard input).
    None,
    /// The trace names a sidecar that is not beside it.
    Missing(String),
    /// The sidecar, read and checked.
    Loaded(Vec<MetricsLine>),
    /// The trace names a sidecar and `--no-sidecar` said to leave it out.
    Skipped,
}

fn string<'a>(workload: &'a Labels, key: &str) -> Option<&'a str> {
    match workload.get(key) {
        Some(Scalar::String(s)) => Some(s),
        _ => None,
    }
}

/// Loads the sidecar a trace at `trace_path` names, unless `skip`
/// (`--no-sidecar`). A sidecar whose bytes do not match the trace's
/// `metricsSha256`, or that does not read, is an [`Error::Sidecar`] naming
/// it and the flag that skips it (exit 2): it belongs to another run.
pub fn load(trace_path: &str, workload: &Labels, skip: bool) -> Result<Sidecar, Error> {
    let Some(name) = string(workload, "metricsFile") else {
        return Ok(Sidecar::None);
    };
    if skip {
        return Ok(Sidecar::Skipped);
    }
    if trace_path == "-" || name.contains('/') || name.contains('\\') {
        return Ok(Sidecar::None);
    }
    let path = Path::new(trace_path)
        .parent()
        .unwrap_or(Path::new(""))
        .join(name);
    let shown = path.display().to_string();
    if !path.exists() {
        return Ok(Sidecar::Missing(shown));
    }
    let problem = |problem: String| Error::Sidecar {
        path: shown.clone(),
        problem,
    };
    let bytes = read_limited(&shown, MAX_SIDECAR_BYTES).map_err(|e| problem(e.to_string()))?;
    let sha: String = Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if string(workload, "metricsSha256").is_some_and(|want| want != sha) {
        return Err(problem(format!(
            "its sha256 {sha} is not the trace's workload.metricsSha256 {want}: the sidecar belongs to another run or was changed after it",
            want = string(workload, "metricsSha256").unwrap_or_default()
        )));
    }
    parse_sidecar(&bytes)
        .map(Sidecar::Loaded)
        .map_err(|e| problem(e.to_string()))
}

/// The trace workload's label naming its power series (`record
/// --power-metric`).
pub const POWER_METRIC_LABEL: &str = "powerMetric";

/// The power series to integrate: `--power-metric` when given, else the one
/// the trace declares (`workload.powerMetric`, from `record
/// --power-metric`), else DCGM's `DCGM_FI_DEV_POWER_USAGE`.
pub fn power_metric(flag: Option<&str>, workload: &Labels) -> String {
    let declared = match workload.get(POWER_METRIC_LABEL) {
        Some(goodput_core::trace::Scalar::String(name)) => Some(name.as_str()),
        _ => None,
    };
    flag.or(declared)
        .unwrap_or(goodput_core::energy::DEFAULT_POWER_METRIC)
        .to_owned()
}

/// The sidecar's readings of a trace, or none (no sidecar named, not
/// beside the trace, or `skip`): what `analyze`, `report` and `verify`
/// integrate the power series of (`--power-metric`, docs/contract.md §10.18).
pub fn power_readings(
    trace_path: &str,
    workload: &Labels,
    skip: bool,
) -> Result<Option<Vec<MetricsLine>>, Error> {
    Ok(match load(trace_path, workload, skip)? {
        Sidecar::Loaded(lines) => Some(lines),
        Sidecar::None | Sidecar::Missing(_) | Sidecar::Skipped => None,
    })
}
