//! JSON Schemas of every JSON document `goodput` reads or writes, generated
//! from the types: the trace and the receipt, and the `--json` output of
//! `sweep`, `mutate`, `verify`, `gate`, `frontier`, `import` and `quality`.
//!
//! The receipt schema comes straight from [`crate::receipt::Receipt`]. The trace
//! schema describes what `analyze` *accepts*: the document level is strict
//! (unknown fields, bad types and bad enums are rejected), while each row is
//! described but not constrained, because a bad row makes that row invalid,
//! never the document (docs/contract.md §5). Rules a JSON Schema cannot state (window
//! ordering, spans, class resolution) are enforced by `trace::validate`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;

use crate::receipt::Receipt;
use crate::trace::{Equality, Gates, Labels, Phase, Resources, TokenCount, Warmup, Window};

/// The tag every trace carries.
#[derive(Serialize)]
pub struct TraceSchemaTag;

impl JsonSchema for TraceSchemaTag {
    fn schema_name() -> Cow<'static, str> {
        "TraceSchemaTag".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "Always \"goodput-trace/1\".",
            "const": crate::trace::model::TRACE_SCHEMA
        })
    }
}

/// One request. Described here, checked by the analyzer: a row that breaks
/// these rules is counted as invalid, with reasons, and the receipt is still
/// produced.
#[derive(Serialize)]
pub struct RowDescription;

impl JsonSchema for RowDescription {
    fn schema_name() -> Cow<'static, str> {
        "Row".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "One request. Fields: id (non-empty string, at most 128 code points, \
                unique), class (a declared class; optional), arrivalMs (number), status \
                (\"completed\" | \"failed\" | \"in_flight\"), firstTokenMs, completedMs, \
                outputTokens (integral, 1..=10^9 on completed rows), reason (failed rows), \
                endedMs, labels (object of strings, finite numbers, booleans), gapsMs (the gaps \
                between consecutive token-carrying stream events, ms, in order: numbers >= 0, \
                at most outputTokens - 1 and at most 100,000 of them, summing to at most \
                completedMs - firstTokenMs; optional), firstAnswerMs (the first answer token, \
                between firstTokenMs and completedMs; optional), reasoningTokens (integral, \
                0..=outputTokens; optional). With streamed: false, completed rows need only \
                completedMs and carry no token instants. A row that \
                breaks a rule is counted invalid with every applicable reason (docs/contract.md §5); it \
                never rejects the document, so this schema does not constrain rows."
        })
    }
}

/// A `goodput-trace/1` document, as accepted by `goodput analyze`.
#[derive(Serialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(title = "goodput-trace/1")]
pub struct TraceDocument {
    /// Always `goodput-trace/1`.
    pub schema: TraceSchemaTag,
    /// The measurement window.
    pub window: Window,
    /// The warm-up interval, or null.
    #[serde(default)]
    pub warmup: Option<Warmup>,
    /// How a value equal to its gate is judged. Required: the rule is part of the contract.
    pub equality: Equality,
    /// SLO classes by name (at least one).
    #[schemars(extend("minProperties" = 1))]
    pub classes: BTreeMap<String, Gates>,
    /// Class of rows without `class`; required when several classes exist and a row names none.
    #[serde(default)]
    pub default_class: Option<String>,
    /// What outputTokens counts (default `usage`).
    #[serde(default)]
    pub tokens: TokenCount,
    /// `false` for responses that are not streamed (embeddings): no first
    /// token, only E2E gates (default true).
    #[serde(default)]
    pub streamed: Option<bool>,
    /// Where measurements were taken: scalar values only.
    #[serde(default)]
    pub boundary: Labels,
    /// How load was generated: scalar values only.
    #[serde(default)]
    pub workload: Labels,
    /// Named stretches of the schedule, in time order, not overlapping (optional).
    #[serde(default)]
    pub phases: Option<Vec<Phase>>,
    /// The GPUs behind the run and the price of one GPU-hour (optional).
    #[serde(default)]
    pub resources: Option<Resources>,
    /// The quality sidecar beside the trace, by file name and sha256 (optional; docs/contract.md §10.19).
    #[serde(default)]
    pub quality: Option<crate::trace::QualityRef>,
    /// The requests (may be empty; at most the row limit).
    pub rows: Vec<RowDescription>,
}

/// The trace schema as pretty JSON with a final newline.
pub fn trace_schema_json() -> String {
    pretty(&schemars::schema_for!(TraceDocument))
}

/// The receipt schema as pretty JSON with a final newline.
pub fn receipt_schema_json() -> String {
    pretty(&schemars::schema_for!(Receipt))
}

/// Every schema of this crate's documents: its `goodput schema` name, its
/// committed file under `schema/`, and its text (the importer's report is
/// `goodput_import::schema`; the command line lists them all).
pub fn all() -> Vec<(&'static str, &'static str, String)> {
    use crate::frontier::Frontier;
    use crate::review::gate::Decision;
    use crate::review::mutate::MutationReport;
    use crate::review::sensitivity::SweepEntry;
    use crate::review::verify::VerifyReport;
    vec![
        ("trace", "trace.schema.json", trace_schema_json()),
        ("receipt", "receipt.schema.json", receipt_schema_json()),
        (
            "sweep",
            "sweep.schema.json",
            titled::<Vec<SweepEntry>>("goodput sweep --json"),
        ),
        (
            "mutate",
            "mutate.schema.json",
            titled::<MutationReport>("goodput mutate --json"),
        ),
        (
            "verify",
            "verify.schema.json",
            titled::<VerifyReport>("goodput verify --json"),
        ),
        (
            "gate",
            "gate.schema.json",
            titled::<Decision>("goodput gate --json"),
        ),
        (
            "frontier",
            "frontier.schema.json",
            titled::<Frontier>("goodput-frontier/1"),
        ),
        ("compare", "compare.schema.json", compare_schema_json()),
        (
            "quality",
            "quality.schema.json",
            titled::<crate::quality::QualityReport>("goodput quality --json"),
        ),
    ]
}

/// The schema of `T`, titled, as pretty JSON with a final newline (the
/// crates above this one title their own documents with it).
pub fn titled<T: JsonSchema>(title: &str) -> String {
    let mut schema = schemars::schema_for!(T);
    schema.insert("title".to_owned(), title.into());
    pretty(&schema)
}

/// The schema of `goodput compare --json` as pretty JSON with a final newline.
pub fn compare_schema_json() -> String {
    pretty(&schemars::schema_for!(crate::compare::Comparison))
}

fn pretty(schema: &Schema) -> String {
    let mut s = serde_json::to_string_pretty(schema).unwrap_or_default();
    s.push('\n');
    s
}
