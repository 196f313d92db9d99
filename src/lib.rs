//! `goodput`: count only the LLM requests that met every declared latency gate,
//! and keep misses, failures and unfinished work visible beside that count.
//!
//! The modules follow the data flow of the analyzer:
//!
//! ```text
//! bytes ─▶ trace::parse ─▶ trace::validate ─▶ verdict ─▶ receipt::build ─▶ render
//! ```
//!
//! `trace` turns untrusted bytes into a [`trace::Trace`] (or a [`trace::Rejection`]
//! naming the JSON pointer of the first document-level problem); `verdict` gives
//! every row exactly one verdict under the declared gates; `receipt` aggregates
//! verdicts into the versioned receipt; `render` turns a receipt into bytes for a
//! person or a machine. Nothing below `cli` prints or exits.
//!
//! The reviewer tools sit beside the analyzer and reuse it: `sweep` recounts
//! the judged rows under scaled gates with `verdict::missed`; `mutate` edits a
//! trace and checks that a calculator's receipt moves as SPEC §6 predicts;
//! `verify` recomputes a receipt from its trace and diffs the two; `gate` turns
//! a receipt into an admission decision.
//!
//! The other half makes traces: `record` (schedule → client → SSE → trace
//! rows, written atomically) drives an OpenAI-compatible server open-loop, and
//! `sim` is a simulated continuous-batching engine to aim it at.

pub mod analyze;
pub mod cli;
pub mod compare;
pub mod error;
pub mod frontier;
pub mod gate;
pub mod import;
pub mod intervals;
pub mod io;
pub mod mutate;
pub mod receipt;
pub mod record;
pub mod render;
pub mod report;
pub mod schema;
pub mod selfcheck;
pub mod sim;
pub mod stats;
pub mod sweep;
pub mod trace;
pub mod verdict;
pub mod verify;

/// The generator name written into every receipt.
pub const GENERATOR_NAME: &str = "goodput";
/// The generator version written into every receipt (the crate version).
pub const GENERATOR_VERSION: &str = env!("CARGO_PKG_VERSION");
