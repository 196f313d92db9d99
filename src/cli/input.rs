//! Reading a trace for a reviewer command: within the byte limit, then
//! analyzed with the same code and limits as `goodput analyze`.

use crate::cli::error::Error;
use goodput_core::analyze::{analyze_owned, Analysis, AnalyzeOptions};
use goodput_core::trace::Limits;
use goodput_util::io::read_limited;

/// Reads and analyzes a trace within `limits`.
pub(crate) fn load(path: &str, limits: Limits, strict: bool) -> Result<Analysis, Error> {
    let bytes = read_limited(path, limits.max_bytes)?;
    let options = AnalyzeOptions {
        limits,
        rows: false,
        strict,
    };
    Ok(analyze_owned(bytes, options)?)
}
