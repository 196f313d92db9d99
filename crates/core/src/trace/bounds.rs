//! The numeric bounds and the schema tag of a trace (docs/contract.md §3):
//! one leaf module that the contract types (`model`) and the parts that
//! check them (`validate`, `phases`) all read, so none of those needs the
//! other for a constant.

/// The largest magnitude any timestamp may have, in milliseconds (docs/contract.md §3.3).
pub const MAX_ABS_TIMESTAMP_MS: f64 = 1e15;
/// The longest window, horizon or row span, in milliseconds (24 hours).
pub const MAX_SPAN_MS: f64 = 86_400_000.0;
/// The largest `outputTokens` a row may claim.
pub const MAX_OUTPUT_TOKENS: f64 = 1e9;
/// The longest row id, in Unicode code points.
pub const MAX_ID_CHARS: usize = 128;
/// The longest class name, in Unicode code points: bounded like an id, so
/// a name repeated in every table of a report cannot make it unbounded.
pub const MAX_CLASS_CHARS: usize = 128;
/// The most `gapsMs` a row may carry (docs/contract.md §10.15): a bound on
/// the memory one row can claim while the trace is read; a stream longer
/// than this is recorded without its gaps.
pub const MAX_GAPS_PER_ROW: usize = 100_000;
/// The tolerance, in ms, of the check that a row's gaps fit between its
/// first token and its completion (1 µs: the trace writer's rounding).
pub const GAP_SUM_TOLERANCE_MS: f64 = 0.001;
/// The schema tag a trace must carry.
pub const TRACE_SCHEMA: &str = "goodput-trace/1";
