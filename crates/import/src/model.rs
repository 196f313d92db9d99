//! What every importer reads into and writes out of: the options a trace is
//! imported under ([`ImportOptions`]), the imported trace with the tool's own
//! figures ([`Imported`], [`Reported`]), and the small rules every importer
//! applies alike (ids, times in ms, failure reasons). It imports no importer,
//! so the three importers, the fidelity checks and the side-by-side figures
//! all take it from below.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;

use goodput_core::trace::write::{round_us, TraceDoc, DEFAULT_CLASS, DEFAULT_GATES};
use goodput_core::trace::{Equality, Gates, Labels, Limits, Scalar};

use crate::error::ImportError;

/// The arrival process a tool was configured for, as far as the rate check
/// needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Process {
    /// Exponential gaps (vLLM burstiness 1, AIPerf and guidellm `poisson`).
    Poisson,
    /// Equal gaps (`constant`).
    Constant,
    /// Anything else with a rate (vLLM's gamma gaps with burstiness ≠ 1):
    /// shown, not judged.
    Other,
}

/// The rate a tool was asked to offer, read from its export.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConfiguredRate {
    /// Requests per second.
    pub per_s: f64,
    /// The arrival process.
    pub process: Process,
    /// Where in the export the rate was read, in words.
    pub from: String,
}

/// Which tool wrote the source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// vLLM result JSON: `benchmark_serving.py` or `vllm bench serve` (`--save-result`), any release.
    Vllm,
    /// AIPerf `profile_export.jsonl` (one record per request).
    Aiperf,
    /// guidellm `benchmarks.json`.
    Guidellm,
}

impl Source {
    /// The tool's name as printed.
    pub fn name(self) -> &'static str {
        match self {
            Source::Vllm => "vllm",
            Source::Aiperf => "aiperf",
            Source::Guidellm => "guidellm",
        }
    }
}

/// The contract the imported trace declares (the source tools record
/// latencies, not promises; the promises come from the command line).
#[derive(Clone, Debug, PartialEq)]
pub struct ImportOptions {
    /// SLO classes by name.
    pub classes: BTreeMap<String, Gates>,
    /// The class of every imported row (sources carry no class).
    pub default_class: String,
    /// The equality rule.
    pub equality: Equality,
    /// guidellm: which benchmark of the file.
    pub benchmark: usize,
    /// Write each row's `gapsMs` from the tool's inter-token latencies
    /// (`false`: `--no-gaps`, the lists are left out).
    pub gaps: bool,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            classes: BTreeMap::from([(DEFAULT_CLASS.to_owned(), DEFAULT_GATES)]),
            default_class: DEFAULT_CLASS.to_owned(),
            equality: Equality::Inclusive,
            benchmark: 0,
            gaps: true,
        }
    }
}

impl ImportOptions {
    /// The trace an importer writes: the window, warm-up, labels and rows it
    /// read from the source, and the contract (gates, equality) from these
    /// options. `tokens` is `usage`; an importer whose rows fell back to the
    /// tool's own tokenizer count sets `client-tokenizer` afterwards.
    pub(crate) fn trace(
        &self,
        window: goodput_core::trace::Window,
        warmup: Option<goodput_core::trace::Warmup>,
        boundary: goodput_core::trace::Labels,
        workload: goodput_core::trace::Labels,
        rows: Vec<goodput_core::trace::write::TraceRow>,
    ) -> TraceDoc {
        TraceDoc {
            schema: goodput_core::trace::write::TRACE_SCHEMA,
            window,
            warmup,
            equality: self.equality,
            classes: self.classes.clone(),
            default_class: self.default_class.clone(),
            tokens: goodput_core::trace::TokenCount::Usage,
            streamed: true,
            boundary,
            workload,
            phases: Vec::new(),
            resources: None,
            quality: None,
            rows,
        }
    }

    /// Options with one class of the given gates (tests and examples).
    pub fn with_gates(name: &str, gates: Gates, equality: Equality) -> Self {
        ImportOptions {
            classes: BTreeMap::from([(name.to_owned(), gates)]),
            default_class: name.to_owned(),
            equality,
            benchmark: 0,
            gaps: true,
        }
    }
}

/// An imported run: the trace, and what the tool itself reported about it.
#[derive(Clone, Debug)]
pub struct Imported {
    /// The `goodput-trace/1` document.
    pub trace: TraceDoc,
    /// The source tool's own figures and rules.
    pub reported: Reported,
    /// What the gap rule did (`crate::gaps`), when the export carries
    /// per-request inter-token latencies.
    pub gaps: Option<crate::gaps::GapChecks>,
    /// The export names the first answer (output, non-reasoning) token of
    /// its requests (AIPerf's `time_to_first_output_token`, guidellm's
    /// `first_output_token_iteration`): a completed row without
    /// `firstAnswerMs` then had no answer. When false no row has one, and a
    /// `ttfaMs` gate could only say `no_answer`.
    pub first_answers: bool,
}

/// A tool's inter-token latency figures over all its ITLs pooled, ms, by
/// its method (the counterpart of the receipt's `gaps.gapMs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct Itl {
    /// Mean.
    pub mean: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

/// Two percentiles as a tool reported them, ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct Quantiles {
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

/// What the source tool reported for its run, and the rules behind those
/// figures, so each difference from the receipt can be explained. `None`
/// means the source file does not carry the figure.
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reported {
    /// The tool (`vllm`, `aiperf`, `guidellm`).
    pub tool: String,
    /// The tool's version, when its file says.
    pub version: Option<String>,
    /// Requests in the tool's measurement (warm-up excluded).
    pub requests: Option<u64>,
    /// Requests the tool counted as successful.
    pub successful: Option<u64>,
    /// Requests the tool counted as failed (errored).
    pub failed: Option<u64>,
    /// Requests the tool counted as incomplete or cancelled.
    pub incomplete: Option<u64>,
    /// The tool's measurement duration, s (its throughput denominator).
    pub duration_s: Option<f64>,
    /// Successful requests per second, as the tool reported it.
    pub request_throughput_per_s: Option<f64>,
    /// The tool's own goodput, requests per second.
    pub goodput_per_s: Option<f64>,
    /// Output tokens per second, as the tool reported it.
    pub output_tokens_per_s: Option<f64>,
    /// TTFT percentiles, ms, by the tool's method.
    pub ttft_ms: Quantiles,
    /// TPOT (or the tool's nearest figure) percentiles, ms, by the tool's method.
    pub tpot_ms: Quantiles,
    /// End-to-end latency percentiles, ms, by the tool's method.
    pub e2e_ms: Quantiles,
    /// The tool's pooled inter-token (inter-chunk) latency figures, ms.
    pub itl_ms: Itl,
    /// Where the tool's ITL figures were read, when it reports them.
    pub itl_from: Option<String>,
    /// Time to first answer (output, non-reasoning) token percentiles, ms.
    pub ttfa_ms: Quantiles,
    /// How the tool computes percentiles, in words.
    pub percentile_method: String,
    /// How the tool's window was mapped to the trace's, in words.
    pub window_rule: String,
    /// How the tool treats one-token outputs in TPOT and goodput, in words.
    pub one_token_rule: String,
    /// Which requests the tool's latency figures cover, in words.
    pub latency_population: String,
    /// Where the reported figures came from (file, field), in words.
    pub figures_from: String,
    /// The gates the tool used for its own goodput, as it spells them, when known.
    pub tool_gates: Option<String>,
    /// The tool never counts a one-token output as good (AIPerf with an
    /// `inter_token_latency` SLO: the metric does not exist for it), where
    /// goodput lets it pass because its TPOT gate does not apply.
    pub one_token_never_good: bool,
    /// The rate the tool was configured to offer, when its export says.
    pub configured_rate: Option<ConfiguredRate>,
    /// The tool's own output-token count field, when rows carry it beside the
    /// server's usage count (as the label `clientOutputTokens`).
    pub client_tokens_from: Option<String>,
}

/// A time or duration read from a source file: finite and not negative, or
/// an error naming its place.
pub(crate) fn non_negative(x: f64, place: String) -> Result<f64, ImportError> {
    if x.is_finite() && x >= 0.0 {
        Ok(x)
    } else {
        Err(ImportError::at(
            place,
            format!("must be a finite number >= 0, not {x}"),
        ))
    }
}

/// A source's own request id, when it can be a row id (not empty, at most
/// 128 characters); else the importer names the row by its place.
pub(crate) fn source_id(id: Option<&str>) -> Option<String> {
    match id {
        Some(x) if !x.is_empty() && x.chars().count() <= 128 => Some(x.to_owned()),
        _ => None,
    }
}

/// The `boundary` labels every importer writes: what `arrivalMs` is
/// (`sent`, `scheduled`, `unknown`), where output token counts came from,
/// and which tool's file the trace was read from.
pub(crate) fn boundary_labels(arrival: &str, tokens: &str, source: &str) -> Labels {
    let mut boundary = Labels::new();
    boundary.insert("arrival".into(), Scalar::String(arrival.into()));
    boundary.insert("tokens".into(), Scalar::String(tokens.into()));
    boundary.insert("source".into(), Scalar::String(source.into()));
    boundary
}

/// Milliseconds from `t0_s` to `t_s` (both seconds), rounded to the
/// microsecond like the recorder's (compact, monotone).
pub(crate) fn ms_since(t_s: f64, t0_s: f64) -> f64 {
    round_us((t_s - t0_s) * 1000.0)
}

/// Rounds ms to the microsecond (the recorder's rule), for importers.
pub(crate) fn round_us_pub(ms: f64) -> f64 {
    round_us(ms)
}

/// Maps a tool's free error text to a short, stable failure reason. The
/// order matters: an HTTP status wins over words ("504 Gateway Timeout" is
/// `http_504`, not `timeout`).
pub fn failure_reason(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    if let Some(code) = http_status(&lower) {
        return format!("http_{code}");
    }
    const PHRASES: [(&str, u16); 8] = [
        ("bad request", 400),
        ("unauthorized", 401),
        ("not found", 404),
        ("too many requests", 429),
        ("internal server error", 500),
        ("bad gateway", 502),
        ("service unavailable", 503),
        ("gateway timeout", 504),
    ];
    if let Some((_, code)) = PHRASES.iter().find(|(p, _)| lower.contains(p)) {
        return format!("http_{code}");
    }
    let has = |words: &[&str]| words.iter().any(|w| lower.contains(w));
    if has(&["cancel"]) {
        "cancelled".into()
    } else if has(&["timeout", "timed out", "time out"]) {
        "timeout".into()
    } else if has(&["connection refused", "connectionrefused"]) {
        "connect_refused".into()
    } else if has(&[
        "disconnect",
        "connection reset",
        "broken pipe",
        "connection closed",
        "incomplete",
        "payload",
    ]) {
        "disconnect".into()
    } else {
        "error".into()
    }
}

/// A 4xx/5xx status named as such in an error text: `http 500`, `status 503`,
/// `status_code=429`, `error code: 500`, `(500)`, `500 internal…`.
fn http_status(lower: &str) -> Option<u16> {
    let bytes = lower.as_bytes();
    let mut i = 0;
    while i + 3 <= bytes.len() {
        let is_digit_run = bytes[i..i + 3].iter().all(u8::is_ascii_digit)
            && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric())
            && bytes.get(i + 3).is_none_or(|b| !b.is_ascii_alphanumeric());
        if is_digit_run {
            let code: u16 = lower[i..i + 3].parse().ok()?;
            let before = lower[..i].trim_end_matches([' ', ':', '=', '(', '"', '\'']);
            let named = ["http", "status", "code", "status_code", "error"]
                .iter()
                .any(|w| before.ends_with(w));
            let leading = before.is_empty();
            if (400..600).contains(&code) && (named || leading || lower[..i].ends_with('(')) {
                return Some(code);
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    None
}

/// Whether two reported rates are the same figure (the tool rounds nothing,
/// but divides in another order; 1e-9 relative is far below any display).
pub fn same_figure(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// A number as people read it: integers without a fraction, others to 4
/// significant decimals.
pub fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        let s = format!("{x:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// The analyzer's limits, raised to the trace's size only when the defaults
/// would refuse it (as `goodput analyze` must then be told).
pub fn limits_for(rows: usize, bytes: usize) -> Limits {
    Limits {
        max_rows: Limits::DEFAULT_MAX_ROWS.max(rows as u64),
        max_bytes: Limits::DEFAULT_MAX_BYTES.max(bytes as u64),
    }
}

/// The trace's canonical bytes, written row by row: the same bytes as
/// [`TraceDoc::to_bytes`], without building the whole document as a
/// `serde_json::Value` tree first (about 1.5 KB per row, several times the
/// text it becomes).
pub fn trace_bytes(trace: &mut goodput_core::trace::write::TraceDoc) -> std::io::Result<Vec<u8>> {
    let rows = std::mem::take(&mut trace.rows);
    let envelope = trace.clone();
    let mut out = Vec::new();
    let written = envelope.write_streamed(rows.iter().cloned().map(Ok), &mut out);
    trace.rows = rows;
    written.map(|_| out)
}
