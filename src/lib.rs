//! `goodput`: count only the LLM requests that met every declared latency gate,
//! and keep misses, failures and unfinished work visible beside that count.
//!
//! Two halves of a library, and a command-line layer on top of both.
//!
//! The analyzer follows its data flow:
//!
//! ```text
//! bytes ─▶ trace::parse ─▶ trace::validate ─▶ verdict ─▶ receipt::build ─▶ render
//! ```
//!
//! `trace` turns untrusted bytes into a [`trace::Trace`] (or a [`trace::Rejection`]
//! naming the JSON pointer of the first document-level problem); `verdict` gives
//! every row exactly one verdict under the declared gates; `receipt` aggregates
//! verdicts into the versioned receipt; `render` turns a receipt into bytes for a
//! person or a machine.
//!
//! The reviewer tools, grouped in `review`, sit beside the analyzer and reuse
//! it: `review::sweep` recounts the judged rows under scaled gates with
//! `verdict::missed`; `review::mutate` edits a trace and checks that a
//! calculator's receipt moves as the contract predicts; `review::verify`
//! recomputes a receipt from its trace and diffs the two; `review::gate` turns
//! a receipt into an admission decision. `frontier` reads the receipts of a
//! rate sweep; `report` pages an analysis as HTML.
//!
//! The other half makes traces, and writes them all with `trace::write`:
//!
//! ```text
//! record: Plan ─▶ schedule ─▶ client ─▶ SSE ─▶ rows ─▶ trace::write
//! import: vLLM / AIPerf / guidellm export ─▶ rows ─▶ trace::write ─▶ analyze ─▶ compare
//! ```
//!
//! `record` drives an OpenAI-compatible server open-loop; `sim` is a
//! simulated continuous-batching engine to aim it at; `import` converts other
//! load generators' exports.
//!
//! `cli` (one file per subcommand) is the only module that reads flags,
//! prints, or chooses an exit status; library modules return data and typed
//! errors ([`error::Error`]), and none of them imports `cli`.

pub mod analyze;
pub mod cli;
pub mod compare;
pub mod error;
pub mod frontier;
pub mod import;
pub mod intervals;
pub mod io;
pub mod merge;
pub mod receipt;
pub mod record;
pub mod render;
pub mod report;
pub mod review;
pub mod schema;
pub mod selfcheck;
pub mod sim;
pub mod stats;
pub mod tokenizer;
pub mod trace;
pub mod verdict;

/// The generator name written into every receipt.
pub const GENERATOR_NAME: &str = "goodput";
/// The generator version written into every receipt (the crate version).
pub const GENERATOR_VERSION: &str = env!("CARGO_PKG_VERSION");
