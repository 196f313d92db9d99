//! `goodput schema`: print the JSON Schema of a document goodput reads or writes.

use std::io::Write;

use clap::ValueEnum;

use crate::cli::error::Error;

use crate::cli::exit::EXIT_OK;
use crate::cli::output::emit;

/// Which schema to print.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SchemaKind {
    /// The `goodput-trace/1` input document.
    Trace,
    /// The `goodput-receipt/1` output document.
    Receipt,
    /// `goodput sweep --json`.
    Sweep,
    /// `goodput mutate --json`.
    Mutate,
    /// `goodput verify --json`.
    Verify,
    /// `goodput gate --json`.
    Gate,
    /// `goodput frontier --json` (`goodput-frontier/1`).
    Frontier,
    /// `goodput import --json`.
    Import,
    /// The `goodput-compare/1` document of `goodput compare --json`.
    Compare,
    /// `goodput quality --json` (`goodput-quality-report/1`).
    Quality,
}

/// Every published schema, in the order `goodput schema` lists them: its
/// name, its committed file under `schema/`, and its text. The core crate
/// owns most documents; the importer's report is its own crate's.
pub fn all() -> Vec<(&'static str, &'static str, String)> {
    let mut all = goodput_core::schema::all();
    let at = all
        .iter()
        .position(|(name, _, _)| *name == "compare")
        .unwrap_or(all.len());
    all.insert(at, goodput_import::schema());
    all
}

/// `goodput schema`.
pub fn run(which: SchemaKind, stdout: &mut dyn Write) -> Result<i32, Error> {
    let name = which
        .to_possible_value()
        .map(|v| v.get_name().to_owned())
        .unwrap_or_default();
    let text = all()
        .into_iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, text)| text)
        .ok_or_else(|| Error::Usage(format!("no schema named {name:?}")))?;
    emit(stdout, text.as_bytes())?;
    Ok(EXIT_OK)
}
