//! Reading a trace for a reviewer command: within the byte limit, then
//! analyzed with the same code and limits as `goodput analyze`.

use crate::analyze::{analyze_owned, Analysis, AnalyzeOptions};
use crate::error::Error;
use crate::io::read_limited;
use crate::trace::Limits;

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
