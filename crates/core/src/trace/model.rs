//! The validated contract of a trace: the types every later stage reads.
//!
//! These types are also what `goodput schema trace` describes and what the
//! receipt echoes under `contract`, so the schema, the validator's output and the
//! receipt cannot disagree about a field's name or meaning.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use crate::trace::bounds::{
    GAP_SUM_TOLERANCE_MS, MAX_ABS_TIMESTAMP_MS, MAX_CLASS_CHARS, MAX_GAPS_PER_ROW, MAX_ID_CHARS,
    MAX_OUTPUT_TOKENS, MAX_SPAN_MS, TRACE_SCHEMA,
};

/// How a value sitting exactly on its gate is judged. The trace must declare it:
/// a reviewer must never have to guess whether `ttft == gate` passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Equality {
    /// A value equal to its gate passes (`value <= gate`).
    Inclusive,
    /// A value equal to its gate misses (`value < gate`).
    Strict,
}

impl Equality {
    /// Whether `value_ms` meets `gate_ms` under this rule.
    pub fn meets(self, value_ms: f64, gate_ms: f64) -> bool {
        match self {
            Equality::Inclusive => value_ms <= gate_ms,
            Equality::Strict => value_ms < gate_ms,
        }
    }

    /// The rule's name as written in traces and receipts.
    pub fn as_str(self) -> &'static str {
        match self {
            Equality::Inclusive => "inclusive",
            Equality::Strict => "strict",
        }
    }
}

/// What `outputTokens` counts. Chunk counts are not model tokens, so the figure
/// derived from them is labelled chunk cadence, never TPOT; a client-side
/// tokenizer's count may not be the model's, so its figure is labelled as
/// per client token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TokenCount {
    /// Server-reported model tokens (the `usage` block).
    #[default]
    Usage,
    /// Stream chunks counted by the client.
    Chunks,
    /// Tokens counted by the client's own tokenizer on the response text (a
    /// load generator's count when the server reported no usage); it need not
    /// be the model's tokenizer.
    #[serde(rename = "client-tokenizer")]
    ClientTokenizer,
}

impl TokenCount {
    /// The label of the per-token figure in force: `tpot`, `chunk_cadence`,
    /// or `tpot_client_tokens` (time per token of a client-side tokenizer).
    pub fn tpot_label(self) -> &'static str {
        match self {
            TokenCount::Usage => "tpot",
            TokenCount::Chunks => "chunk_cadence",
            TokenCount::ClientTokenizer => "tpot_client_tokens",
        }
    }

    /// The name as written in traces and receipts.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenCount::Usage => "usage",
            TokenCount::Chunks => "chunks",
            TokenCount::ClientTokenizer => "client-tokenizer",
        }
    }
}

/// The latency gates of one SLO class. `None` (JSON `null`) means "no gate on
/// this metric"; the three latency gates must be named so an omission is
/// never mistaken for a deliberate absence. The stall gate and the per-token
/// deadline came later and are optional (absent = null), so every earlier
/// trace keeps its meaning.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Gates {
    /// Time-to-first-token gate in ms (first token − arrival), or null.
    #[schemars(required, schema_with = "gate_schema")]
    pub ttft_ms: Option<f64>,
    /// Time-per-output-token gate in ms ((completed − first token) / (tokens − 1)), or null.
    #[schemars(required, schema_with = "gate_schema")]
    pub tpot_ms: Option<f64>,
    /// End-to-end gate in ms (completed − arrival), or null.
    #[schemars(required, schema_with = "gate_schema")]
    pub e2e_ms: Option<f64>,
    /// Stall gate in ms: the largest gap between token-carrying stream
    /// events a row may show (`gapsMs`), or null/absent for no stall gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "gate_schema")]
    pub stall_ms: Option<f64>,
    /// The per-token deadline in ms behind the receipt's fluidity figure
    /// (docs/contract.md §10.15), or null/absent for none; never a gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "gate_schema")]
    pub token_deadline_ms: Option<f64>,
    /// Time-to-first-answer gate in ms (firstAnswerMs − arrival: the first
    /// answer token, after any reasoning), or null/absent for none
    /// (docs/contract.md §10.16). A reasoning model's user waits for the
    /// answer, not for its first thinking token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "gate_schema")]
    pub ttfa_ms: Option<f64>,
}

impl Gates {
    /// The three latency gates with no stall gate and no token deadline.
    pub const fn latency(ttft_ms: Option<f64>, tpot_ms: Option<f64>, e2e_ms: Option<f64>) -> Gates {
        Gates {
            ttft_ms,
            tpot_ms,
            e2e_ms,
            stall_ms: None,
            token_deadline_ms: None,
            ttfa_ms: None,
        }
    }
}

/// A gate: a finite number of milliseconds >= 0, or null for "no gate".
fn gate_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": ["number", "null"],
        "minimum": 0
    })
}

/// The measurement window as written in a trace: arrivals in
/// `[startMs, endMs)` form the cohort; observation stopped at `horizonMs`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Window {
    /// First instant of the window (inclusive), ms.
    #[schemars(range(min = -1e15, max = 1e15))]
    pub start_ms: f64,
    /// End of the window (exclusive), ms; greater than `startMs`, at most 24 h after it.
    #[schemars(range(min = -1e15, max = 1e15))]
    pub end_ms: f64,
    /// When observation stopped, ms; at least `endMs` (the default), at most 24 h after `startMs`.
    #[serde(default)]
    #[schemars(range(min = -1e15, max = 1e15))]
    pub horizon_ms: Option<f64>,
}

/// The warm-up interval `[startMs, endMs)`; arrivals in it are excluded.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Warmup {
    /// First instant of the warm-up (inclusive), ms.
    #[schemars(range(min = -1e15, max = 1e15))]
    pub start_ms: f64,
    /// End of the warm-up (exclusive), ms; at most `window.startMs`.
    #[schemars(range(min = -1e15, max = 1e15))]
    pub end_ms: f64,
}

impl Warmup {
    /// Whether an arrival falls in the half-open warm-up interval.
    pub fn contains(&self, t_ms: f64) -> bool {
        self.start_ms <= t_ms && t_ms < self.end_ms
    }
}

/// A label value: free metadata echoed into the receipt, never interpreted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Scalar {
    /// A boolean label.
    Bool(bool),
    /// A finite number label.
    Number(f64),
    /// A string label.
    String(String),
}

/// Free labels (`boundary`, `workload`, row `labels`), sorted by key.
pub type Labels = BTreeMap<String, Scalar>;

/// How the judged load was generated, as far as the verdict goes
/// (docs/contract.md §10.2). In a closed loop each request was sent when an
/// earlier one ended, so the server paced its own load: its latencies are not
/// evidence that an SLA holds at any offered rate, and the tools say so.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ArrivalMode {
    /// Arrivals did not wait for earlier requests (scheduled, sent or unknown).
    OpenLoop,
    /// `boundary.arrival` is `"closed-loop"` or `workload.arrival` is `"closed"`.
    ClosedLoop,
}

/// The cap on requests in flight of a **capped open loop**
/// (docs/contract.md §10.2): `workload.loop` is `"open-capped"` and
/// `workload.maxConcurrency` a positive number. Arrivals were scheduled, but
/// one that found that many requests in flight waited for a slot; its
/// latencies count from its scheduled instant, the wait included.
pub fn concurrency_cap(workload: &Labels) -> Option<f64> {
    let capped = matches!(workload.get("loop"), Some(Scalar::String(s)) if s == "open-capped");
    match workload.get("maxConcurrency") {
        Some(Scalar::Number(c)) if capped && *c > 0.0 => Some(*c),
        _ => None,
    }
}

impl ArrivalMode {
    /// The mode of a trace with these `boundary` and `workload` labels.
    pub fn of(boundary: &Labels, workload: &Labels) -> ArrivalMode {
        let says = |labels: &Labels, value: &str| matches!(labels.get("arrival"), Some(Scalar::String(s)) if s == value);
        if says(boundary, "closed-loop") || says(workload, "closed") {
            ArrivalMode::ClosedLoop
        } else {
            ArrivalMode::OpenLoop
        }
    }

    /// The name as written in receipts.
    pub fn as_str(self) -> &'static str {
        match self {
            ArrivalMode::OpenLoop => "open-loop",
            ArrivalMode::ClosedLoop => "closed-loop",
        }
    }
}

/// The document-level contract of a validated trace, with defaults resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct Contract {
    /// Window start (inclusive), ms.
    pub start_ms: f64,
    /// Window end (exclusive), ms.
    pub end_ms: f64,
    /// Observation horizon, ms (`endMs` when the trace gave none).
    pub horizon_ms: f64,
    /// The warm-up interval, if declared.
    pub warmup: Option<Warmup>,
    /// The equality rule in force.
    pub equality: Equality,
    /// SLO classes by name; a class's index is its position in this map.
    pub classes: BTreeMap<String, Gates>,
    /// The class of rows that name none, if declared.
    pub default_class: Option<String>,
    /// What `outputTokens` counts.
    pub tokens: TokenCount,
    /// `false` when the responses were not streamed (embeddings): no row
    /// has a first token, and only E2E gates apply.
    pub streamed: bool,
    /// Where the measurements were taken (echoed).
    pub boundary: Labels,
    /// How the load was generated (echoed).
    pub workload: Labels,
    /// Named stretches of the schedule, in time order (empty: none declared).
    pub phases: Vec<crate::trace::phases::Phase>,
    /// The GPUs (and their price) behind the run, when declared.
    pub resources: Option<crate::trace::phases::Resources>,
    /// The quality sidecar recorded beside the run, when declared
    /// (docs/contract.md §10.19).
    pub quality: Option<QualityRef>,
}

/// The trace's `quality` member (docs/contract.md §10.19): the answers
/// sidecar a quality bank left beside the trace, by file name and sha256,
/// so a reader finds it and knows it is this run's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QualityRef {
    /// The sidecar's file name, in the trace's directory (no path
    /// separator), e.g. `run.json.quality.jsonl`.
    #[schemars(length(min = 1, max = 255))]
    pub sidecar: String,
    /// Lower-case hex sha256 of the sidecar's bytes.
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub sha256: String,
}

/// The `boundary.arrival` value of a trace whose sources recorded no arrival
/// (send) instants: each row's `arrivalMs` is then the window start, its
/// latencies are exact, and every figure that needs arrival instants is null
/// in the receipt (`docs/contract.md`).
pub const ARRIVAL_UNKNOWN: &str = "unknown";

impl Contract {
    /// Whether the trace declares its arrival instants unknown
    /// (`boundary.arrival = "unknown"`).
    pub fn arrivals_unknown(&self) -> bool {
        matches!(self.boundary.get("arrival"), Some(Scalar::String(s)) if s == ARRIVAL_UNKNOWN)
    }

    /// The window length in seconds: the denominator of every rate.
    pub fn window_s(&self) -> f64 {
        (self.end_ms - self.start_ms) / 1000.0
    }

    /// The index of a declared class in `classes`, or `None`.
    pub fn class_index(&self, name: &str) -> Option<usize> {
        self.classes.keys().position(|k| k == name)
    }

    /// The arrival mode the trace declares (docs/contract.md §10.2).
    pub fn arrival_mode(&self) -> ArrivalMode {
        ArrivalMode::of(&self.boundary, &self.workload)
    }

    /// The class a row without an explicit `class` belongs to, if any:
    /// `defaultClass`, else the only class when there is exactly one.
    pub fn implicit_class(&self) -> Option<usize> {
        match &self.default_class {
            Some(name) => self.class_index(name),
            None if self.classes.len() == 1 => Some(0),
            None => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_declared_open_capped_loop_has_a_cap() {
        let labels = |pairs: &[(&str, Scalar)]| -> Labels {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect()
        };
        let capped = labels(&[
            ("loop", Scalar::String("open-capped".into())),
            ("maxConcurrency", Scalar::Number(4.0)),
        ]);
        assert_eq!(concurrency_cap(&capped), Some(4.0));
        // A closed loop (or an import) with maxConcurrency alone is not one.
        let closed = labels(&[
            ("arrival", Scalar::String("closed".into())),
            ("maxConcurrency", Scalar::Number(4.0)),
        ]);
        assert_eq!(concurrency_cap(&closed), None);
        let zero = labels(&[
            ("loop", Scalar::String("open-capped".into())),
            ("maxConcurrency", Scalar::Number(0.0)),
        ]);
        assert_eq!(concurrency_cap(&zero), None);
    }
}
