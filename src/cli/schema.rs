//! `goodput schema`: print the JSON Schema of a trace or of a receipt.

use std::io::Write;

use clap::ValueEnum;

use crate::error::Error;
use crate::schema;

use super::exit::EXIT_OK;
use super::output::emit;

/// Which schema to print.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SchemaKind {
    /// The `goodput-trace/1` input document.
    Trace,
    /// The `goodput-receipt/1` output document.
    Receipt,
    /// The `goodput-compare/1` document of `goodput compare --json`.
    Compare,
}

/// `goodput schema`.
pub fn run(which: SchemaKind, stdout: &mut dyn Write) -> Result<i32, Error> {
    let text = match which {
        SchemaKind::Trace => schema::trace_schema_json(),
        SchemaKind::Receipt => schema::receipt_schema_json(),
        SchemaKind::Compare => schema::compare_schema_json(),
    };
    emit(stdout, text.as_bytes())?;
    Ok(EXIT_OK)
}
