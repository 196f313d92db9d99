//! `goodput-core`: count only the LLM requests that met every declared
//! latency gate, and keep misses, failures and unfinished work visible beside
//! that count. No async runtime, HTTP, TLS or tokenizer: everything here is a
//! pure function of bytes and options, and builds and tests alone.
//!
//! The analyzer follows its data flow:
//!
//! ```text
//! bytes ─▶ trace::parse ─▶ trace::validate ─▶ verdict ─▶ receipt::build ─▶ (goodput-render)
//! ```
//!
//! `trace` turns untrusted bytes into a [`trace::Trace`] (or a [`trace::Rejection`]
//! naming the JSON pointer of the first document-level problem); `verdict` gives
//! every row exactly one verdict under the declared gates; `receipt` aggregates
//! verdicts into the versioned receipt. [`analyze`] is the whole flow as one
//! call.
//!
//! The reviewer tools, grouped in `review`, sit beside the analyzer and reuse
//! it: `review::sensitivity` recounts the judged rows under scaled gates with
//! `verdict::missed`; `review::mutate` edits a trace and checks that a
//! calculator's receipt moves as the contract predicts; `review::verify`
//! recomputes a receipt from its trace and diffs the two; `review::gate` turns
//! a receipt into an admission decision. `frontier` reads the receipts of a
//! rate sweep (and searches for the capacity); `compare` sets two receipts
//! side by side with intervals; `merge` puts the shards of one schedule back
//! together. `server_metrics` reads the metrics sidecar a recording leaves
//! beside its trace; `quality` reads a quality bank, the answers sidecar
//! and an evaluation harness's results, and judges the share of good answers. `trace::write` is the one writer of trace documents: the
//! recorder and the importers build their traces with it.

pub mod analyze;
pub mod compare;
pub mod energy;
pub mod frontier;
pub mod intervals;
pub mod merge;
pub mod quality;
pub mod receipt;
pub mod review;
pub mod schema;
pub mod server_metrics;
pub mod server_timing;
pub mod stats;
pub mod trace;
pub mod verdict;

/// The generator name written into every receipt.
pub const GENERATOR_NAME: &str = "goodput";
/// The generator version written into every receipt (the workspace version).
pub const GENERATOR_VERSION: &str = env!("CARGO_PKG_VERSION");
