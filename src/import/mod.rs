//! `goodput import`: another load generator's export → a `goodput-trace/1`
//! trace, and what that tool itself reported set beside what the goodput
//! contract gives for the same requests.
//!
//! Each importer (`vllm`, `aiperf`, `guidellm`) is a pure function of the
//! source bytes and [`ImportOptions`] returning an [`Imported`]: the trace
//! document (the recorder's own [`TraceDoc`] types, so writer and analyzer
//! cannot disagree) and the figures the tool reported ([`Reported`]). Source
//! formats are parsed with serde into typed structs that ignore unknown fields
//! (these formats grow); every error names its place — a JSON pointer, or a
//! line number for JSONL — so a bad input is one clear line and exit 2.
//!
//! The trace is then judged by the ordinary analyzer ([`crate::analyze`]) and
//! [`compare`] pairs the tool's figures with the receipt's and explains every
//! difference the contract makes on purpose (failures in the denominator,
//! one-token TPOT, percentile method, window). Rules per tool:
//! `docs/import.md`.

pub mod aiperf;
pub mod guidellm;
pub mod json;
pub mod vllm;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use serde::Serialize;

use crate::analyze::{analyze_bytes, AnalyzeOptions};
use crate::error::{Error, EXIT_OK};
use crate::receipt::{LatencySummary, Receipt};
use crate::record::summary::analyze_command;
use crate::record::trace_out::{round_us, RowStatus, TraceDoc};
use crate::render::json::to_canonical_json;
use crate::trace::{Equality, Gates, Limits};

/// Exit statuses of `goodput import`, shown in `--help`.
pub const IMPORT_EXIT_HELP: &str = "\
Exit status:
  0  the trace was written and the comparison printed
  2  the source file is not what --from says (the message names the JSON pointer,
     or the line for JSONL, of the first problem), cannot be read, the trace cannot
     be written, or a flag is wrong

Without --slo the trace declares the placeholder class
default:ttft=1000,tpot=50,e2e=10000; give the gates the source tool used for its
own goodput figure to compare like with like.";

/// The largest source file read (exports of long runs are large; the trace
/// written from them is still subject to the analyzer's limits).
pub const DEFAULT_MAX_INPUT_BYTES: u64 = 1 << 30;

/// Which tool wrote the source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
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

/// Flags of `goodput import`.
#[derive(Debug, Clone, clap::Args)]
pub struct ImportArgs {
    /// The tool that wrote FILE.
    #[arg(long = "from", value_enum, value_name = "TOOL")]
    pub from: Source,
    /// The source file (`-` reads standard input).
    pub file: String,
    /// An SLO class `NAME:ttft=MS,tpot=MS,e2e=MS` (as `goodput record`); repeatable; the
    /// first is the default class. Without any: `default:ttft=1000,tpot=50,e2e=10000`.
    #[arg(long = "slo", value_name = "CLASS:GATES")]
    pub slo: Vec<String>,
    /// Whether a value equal to its gate passes (inclusive) or misses (strict).
    #[arg(long, value_name = "RULE", default_value = "inclusive", value_parser = ["inclusive", "strict"])]
    pub equality: String,
    /// Where to write the trace (atomically).
    #[arg(long, value_name = "FILE", default_value = "trace.json")]
    pub out: PathBuf,
    /// Print the comparison as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// AIPerf only: its aggregate export (`profile_export_aiperf.json`), whose
    /// figures (goodput, throughput, percentiles) are printed as "reported".
    #[arg(long, value_name = "FILE")]
    pub summary: Option<String>,
    /// guidellm only: which entry of `benchmarks[]` to import (one run per trace).
    #[arg(long, value_name = "INDEX", default_value_t = 0)]
    pub benchmark: usize,
    /// Most bytes read from the source file.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_INPUT_BYTES)]
    pub max_input_bytes: u64,
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
}

impl Default for ImportOptions {
    fn default() -> Self {
        let (name, gates) = crate::record::parse_slo(crate::record::DEFAULT_SLO)
            .unwrap_or_else(|_| unreachable!("the default SLO parses"));
        ImportOptions {
            classes: BTreeMap::from([(name.clone(), gates)]),
            default_class: name,
            equality: Equality::Inclusive,
            benchmark: 0,
        }
    }
}

impl ImportOptions {
    /// The trace an importer writes: the window, warm-up, labels and rows it
    /// read from the source, and the contract (gates, equality) from these
    /// options. Source tools report model tokens, so `tokens` is `usage`.
    pub(crate) fn trace(
        &self,
        window: crate::trace::Window,
        warmup: Option<crate::trace::Warmup>,
        boundary: crate::trace::Labels,
        workload: crate::trace::Labels,
        rows: Vec<crate::record::trace_out::TraceRow>,
    ) -> TraceDoc {
        TraceDoc {
            schema: crate::trace::model::TRACE_SCHEMA,
            window,
            warmup,
            equality: self.equality,
            classes: self.classes.clone(),
            default_class: self.default_class.clone(),
            tokens: crate::trace::TokenCount::Usage,
            boundary,
            workload,
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
}

/// Two percentiles as a tool reported them, ms.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Quantiles {
    /// Median.
    pub p50: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
}

/// What the source tool reported for its run, and the rules behind those
/// figures, so each difference from the receipt can be explained. `None`
/// means the source file does not carry the figure.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
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
}

/// Why an import failed. Every variant names the place in the source file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ImportError {
    /// A problem at a JSON pointer, a line, or a line and a pointer.
    #[error("{place}: {message}")]
    At {
        /// `/benchmarks/0/requests`, `line 7`, `line 7 /metrics/x/unit`, `line 2, column 9`.
        place: String,
        /// What is wrong there.
        message: String,
    },
    /// A problem with the file as a whole.
    #[error("{0}")]
    Whole(String),
}

impl ImportError {
    /// An error at `place`.
    pub fn at(place: impl Into<String>, message: impl Into<String>) -> Self {
        let place = place.into();
        let message = message.into();
        if place.is_empty() {
            ImportError::Whole(message)
        } else {
            ImportError::At { place, message }
        }
    }
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

/// Dispatches on the source tool.
pub fn import(
    source: Source,
    bytes: &[u8],
    options: &ImportOptions,
) -> Result<Imported, ImportError> {
    match source {
        Source::Vllm => vllm::import(bytes, options),
        Source::Aiperf => aiperf::import(bytes, options),
        Source::Guidellm => guidellm::import(bytes, options),
    }
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

/// The source tool's figures beside the receipt's, with every difference
/// explained. Built by [`compare`]; rendered by `render::import`.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    /// The source tool.
    pub tool: String,
    /// Its version, when known.
    pub version: Option<String>,
    /// The shape of the tool's file that was detected (the trace's
    /// `boundary.shape`), when the tool has several (vLLM's changed across
    /// releases, and the shape decides the mapping).
    pub shape: Option<String>,
    /// The gates the trace declares (`class: ttft=…,tpot=…,e2e=…`).
    pub gates: String,
    /// The equality rule.
    pub equality: String,
    /// Figure by figure.
    pub figures: Vec<FigurePair>,
    /// Why figures differ, one sentence each.
    pub differences: Vec<String>,
}

/// One figure as the tool reported it and as the receipt gives it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FigurePair {
    /// What it is (`requests`, `goodput/s`, `TTFT p99 ms`, …).
    pub name: String,
    /// The tool's value, when its file carries one.
    pub tool: Option<f64>,
    /// The receipt's value (`all` block), when defined.
    pub goodput: Option<f64>,
    /// Where goodput's figure comes from in the receipt.
    pub receipt_field: String,
}

/// Whether two reported rates are the same figure (the tool rounds nothing,
/// but divides in another order; 1e-9 relative is far below any display).
pub fn same_figure(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12)
}

/// Pairs the tool's figures with the receipt's and explains each difference.
pub fn compare(imported: &Imported, receipt: &Receipt) -> Comparison {
    let r = &imported.reported;
    let all = &receipt.results.all;
    let c = &all.counts;
    let trace = &imported.trace;
    let count = |n: u64| Some(n as f64);
    let q = |s: &LatencySummary| (s.p50, s.p99);
    let (ttft50, ttft99) = q(&all.latency.ttft_ms);
    let (tpot50, tpot99) = q(&all.latency.tpot_ms);
    let (e2e50, e2e99) = q(&all.latency.e2e_ms);
    let pair = |name: &str, tool: Option<f64>, goodput: Option<f64>, field: &str| FigurePair {
        name: name.to_owned(),
        tool,
        goodput,
        receipt_field: field.to_owned(),
    };
    let window_s = (receipt.contract.window.end_ms - receipt.contract.window.start_ms) / 1000.0;
    let figures = vec![
        pair(
            "requests",
            r.requests.map(|n| n as f64),
            count(c.cohort),
            "counts.cohort",
        ),
        pair(
            "successful",
            r.successful.map(|n| n as f64),
            count(c.pass + c.miss),
            "counts.pass + counts.miss",
        ),
        pair(
            "failed",
            r.failed.map(|n| n as f64),
            count(c.failed),
            "counts.failed",
        ),
        pair(
            "incomplete",
            r.incomplete.map(|n| n as f64),
            count(c.censored),
            "counts.censored",
        ),
        pair(
            "duration s",
            r.duration_s,
            Some(window_s),
            "contract.window.durationMs / 1000",
        ),
        pair(
            "throughput req/s",
            r.request_throughput_per_s,
            Some(all.rates.completed_per_s),
            "rates.completedPerS",
        ),
        pair(
            "goodput req/s",
            r.goodput_per_s,
            Some(all.rates.goodput_per_s),
            "rates.goodputPerS",
        ),
        pair(
            "output tok/s",
            r.output_tokens_per_s,
            Some(all.rates.output_tokens_per_s),
            "rates.outputTokensPerS",
        ),
        pair("TTFT p50 ms", r.ttft_ms.p50, ttft50, "latency.ttftMs.p50"),
        pair("TTFT p99 ms", r.ttft_ms.p99, ttft99, "latency.ttftMs.p99"),
        pair("TPOT p50 ms", r.tpot_ms.p50, tpot50, "latency.tpotMs.p50"),
        pair("TPOT p99 ms", r.tpot_ms.p99, tpot99, "latency.tpotMs.p99"),
        pair("E2E p50 ms", r.e2e_ms.p50, e2e50, "latency.e2eMs.p50"),
        pair("E2E p99 ms", r.e2e_ms.p99, e2e99, "latency.e2eMs.p99"),
    ];

    let mut differences = Vec::new();
    let tool = r.tool.as_str();
    let excluded = c.excluded;
    if excluded > 0 {
        differences.push(format!(
            "{excluded} request(s) arrived in the warm-up or outside the window: excluded by \
             goodput as by {tool} (counts.excluded)."
        ));
    }
    if c.failed > 0 {
        let share = all.rates.failure_share.unwrap_or(0.0) * 100.0;
        differences.push(format!(
            "{} failed request(s) stay in goodput's cohort ({share:.1} % failure share) and \
             count against passShare; {tool} leaves failures out of its latency figures.",
            c.failed
        ));
    }
    if c.censored > 0 {
        differences.push(format!(
            "{} request(s) unfinished when {tool} stopped are censored (in_flight) in goodput's \
             cohort: neither pass nor miss, but visible in censoredShare.",
            c.censored
        ));
    }
    // One-token rows of the cohort, by verdict (the receipt's rows are in trace order).
    let verdicts = receipt.rows.as_deref().unwrap_or(&[]);
    let one_token_verdict = |verdict: &str| {
        trace
            .rows
            .iter()
            .zip(verdicts)
            .filter(|(row, v)| {
                row.status == RowStatus::Completed
                    && row.output_tokens == Some(1)
                    && v.verdict == verdict
            })
            .count() as u64
    };
    let one_token_pass = one_token_verdict("pass");
    let one_token = one_token_pass + one_token_verdict("miss");
    if one_token > 0 {
        differences.push(format!(
            "{one_token} completed cohort request(s) produced one token ({one_token_pass} of them \
             pass): goodput gives them no TPOT (the TPOT gate does not apply; they are absent \
             from the TPOT percentiles); {}.",
            r.one_token_rule
        ));
    }
    let n = all.latency.ttft_ms.n;
    if n > 0 {
        let rank99 = (99 * n).div_ceil(100);
        differences.push(format!(
            "Percentiles: {}; goodput uses nearest rank, the value at rank ⌈p·n/100⌉ \
             (with n = {n}, p99 is the {rank99}{} smallest value).",
            r.percentile_method,
            ordinal_suffix(rank99)
        ));
    }
    if !r.latency_population.is_empty() {
        differences.push(format!(
            "Latency population: {}; goodput's latency blocks cover the completed cohort \
             rows (pass + miss).",
            r.latency_population
        ));
    }
    if !r.window_rule.is_empty() {
        differences.push(format!(
            "Window: {}. Every goodput rate is per window second ({} s).",
            r.window_rule,
            fmt_num(window_s)
        ));
    }
    if let Some(gates) = &r.tool_gates {
        differences.push(format!(
            "{tool}'s own goodput used {gates}; goodput's trace declares the gates above \
             (--slo): compare like with like."
        ));
    }
    if let Some(tool_goodput) = r.goodput_per_s {
        differences.push(explain_goodput(
            r,
            c.pass,
            one_token_pass,
            window_s,
            all.rates.goodput_per_s,
            tool_goodput,
        ));
    }
    let gates = receipt
        .contract
        .classes
        .iter()
        .map(|(name, g)| {
            let gate = |v: Option<f64>| v.map_or_else(|| "none".to_owned(), fmt_num);
            format!(
                "{name}: ttft={},tpot={},e2e={}",
                gate(g.ttft_ms),
                gate(g.tpot_ms),
                gate(g.e2e_ms)
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Comparison {
        tool: r.tool.clone(),
        version: r.version.clone(),
        shape: match trace.boundary.get("shape") {
            Some(crate::trace::Scalar::String(s)) => Some(s.clone()),
            _ => None,
        },
        gates,
        equality: receipt.contract.equality.clone(),
        figures,
        differences,
    }
}

/// The sentence that reconciles the tool's goodput with the receipt's: the
/// same figure, or the same figure once the tool's documented one-token rule
/// is applied, or an unexplained difference (then the gates probably differ).
fn explain_goodput(
    r: &Reported,
    pass: u64,
    one_token_pass: u64,
    window_s: f64,
    ours: f64,
    tool_goodput: f64,
) -> String {
    let tool = r.tool.as_str();
    let w = fmt_num(window_s);
    if same_figure(tool_goodput, ours) {
        return format!(
            "Goodput reproduced: {tool} reported {tool_goodput} req/s; goodput gives {pass} \
             passing / {w} s = {ours} req/s with the same gates."
        );
    }
    let tool_rule = (pass - one_token_pass) as f64 / window_s;
    if r.one_token_never_good && one_token_pass > 0 && same_figure(tool_goodput, tool_rule) {
        return format!(
            "Goodput differs by the one-token rule alone: {tool} reported {tool_goodput} req/s = \
             ({pass} passing − {one_token_pass} one-token passes) / {w} s; goodput counts those \
             {one_token_pass} (their TPOT gate does not apply) and gives {pass} / {w} s = {ours} \
             req/s."
        );
    }
    let implied = r
        .duration_s
        .map(|d| {
            format!(
                " (≈ {} good requests over its {} s)",
                fmt_num(tool_goodput * d),
                fmt_num(d)
            )
        })
        .unwrap_or_default();
    format!(
        "Goodput differs: {tool} reported {tool_goodput} req/s{implied}; goodput gives {pass} \
         passing / {w} s = {ours} req/s. Check that --slo and --equality match the gates {tool} \
         used, and the window and one-token rules above."
    )
}

fn ordinal_suffix(n: u64) -> &'static str {
    match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    }
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

/// Everything `goodput import` produces, before any output is written.
#[derive(Debug)]
pub struct Outcome {
    /// The imported trace and the tool's figures.
    pub imported: Imported,
    /// The trace as written (canonical JSON).
    pub trace_bytes: Vec<u8>,
    /// The receipt of that trace, with per-row verdicts (limits raised to its size when needed).
    pub receipt: Receipt,
    /// The comparison.
    pub comparison: Comparison,
}

/// Imports, serializes and judges: pure apart from nothing (no I/O), so the
/// tests run the whole pipeline on bytes.
pub fn pipeline(
    source: Source,
    bytes: &[u8],
    options: &ImportOptions,
    aiperf_summary: Option<&[u8]>,
) -> Result<Outcome, Error> {
    let rejected = |e: ImportError| Error::Import {
        tool: source.name(),
        what: "the source file".into(),
        source: e,
    };
    let mut imported = import(source, bytes, options).map_err(rejected)?;
    if let Some(summary) = aiperf_summary {
        aiperf::apply_summary(&mut imported, summary).map_err(|e| Error::Import {
            tool: source.name(),
            what: "the --summary file".into(),
            source: e,
        })?;
    }
    let trace_bytes = to_canonical_json(&imported.trace).map_err(|e| Error::Write {
        path: "trace".into(),
        source: e.into(),
    })?;
    let limits = limits_for(imported.trace.rows.len(), trace_bytes.len());
    let analysis = analyze_bytes(
        &trace_bytes,
        AnalyzeOptions {
            limits,
            rows: true,
            strict: false,
        },
    )?;
    let comparison = compare(&imported, &analysis.receipt);
    Ok(Outcome {
        imported,
        trace_bytes,
        receipt: analysis.receipt,
        comparison,
    })
}

/// The analyzer's limits, raised to the trace's size only when the defaults
/// would refuse it (as `goodput analyze` must then be told).
pub fn limits_for(rows: usize, bytes: usize) -> Limits {
    Limits {
        max_rows: Limits::DEFAULT_MAX_ROWS.max(rows as u64),
        max_bytes: Limits::DEFAULT_MAX_BYTES.max(bytes as u64),
    }
}

/// Builds the options from the flags (the `--slo` parser is the recorder's).
pub fn options_from(args: &ImportArgs) -> Result<ImportOptions, Error> {
    let mut options = ImportOptions {
        benchmark: args.benchmark,
        equality: if args.equality == "strict" {
            Equality::Strict
        } else {
            Equality::Inclusive
        },
        ..ImportOptions::default()
    };
    if !args.slo.is_empty() {
        options.classes.clear();
        for (i, text) in args.slo.iter().enumerate() {
            let (name, gates) = crate::record::parse_slo(text).map_err(Error::Usage)?;
            if options.classes.insert(name.clone(), gates).is_some() {
                return Err(Error::Usage(format!(
                    "--slo: class `{name}` is declared twice"
                )));
            }
            if i == 0 {
                options.default_class = name;
            }
        }
    }
    Ok(options)
}

/// `goodput import`: read, convert, judge, write the trace, print the comparison.
pub fn run(args: ImportArgs, stdout: &mut dyn Write) -> Result<i32, Error> {
    if args.summary.is_some() && args.from != Source::Aiperf {
        return Err(Error::Usage(
            "--summary is only for --from aiperf (its profile_export_aiperf.json)".into(),
        ));
    }
    let options = options_from(&args)?;
    crate::record::check_writable(&args.out)?;
    let read = |path: &str, what: &str| {
        crate::io::read_limited(path, args.max_input_bytes).map_err(|e| match e {
            // The analyzer's message names --max-bytes; here the flag is another.
            crate::io::ReadError::TooLarge { limit, .. } => Error::Import {
                tool: args.from.name(),
                what: what.into(),
                source: ImportError::Whole(format!(
                    "{path} is over the limit of {limit} bytes (raise it with --max-input-bytes)"
                )),
            },
            other => other.into(),
        })
    };
    let bytes = read(&args.file, "the source file")?;
    let summary = match &args.summary {
        Some(path) => Some(read(path, "the --summary file")?),
        None => None,
    };
    let outcome = pipeline(args.from, &bytes, &options, summary.as_deref())?;
    let path = args.out.display().to_string();
    crate::io::write_atomic(&args.out, &outcome.trace_bytes).map_err(|source| Error::Write {
        path: path.clone(),
        source,
    })?;
    let command = analyze_command(
        &path,
        outcome.imported.trace.rows.len(),
        outcome.trace_bytes.len(),
    );
    let text = if args.json {
        let doc = JsonReport {
            trace: &path,
            rows: outcome.imported.trace.rows.len(),
            bytes: outcome.trace_bytes.len(),
            analyze: &command,
            reported: &outcome.imported.reported,
            comparison: &outcome.comparison,
        };
        to_canonical_json(&doc).map_err(|e| Error::Write {
            path: "comparison".into(),
            source: e.into(),
        })?
    } else {
        crate::render::import::render(
            &outcome.comparison,
            &path,
            outcome.imported.trace.rows.len(),
            &command,
        )
        .into_bytes()
    };
    crate::cli::emit(stdout, &text)?;
    Ok(EXIT_OK)
}

/// `goodput import --json`: where the trace went, the tool's figures and rules, the comparison.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonReport<'a> {
    /// The trace path.
    trace: &'a str,
    /// Rows written.
    rows: usize,
    /// Bytes written.
    bytes: usize,
    /// The exact analyze command.
    analyze: &'a str,
    /// The tool's figures and rules.
    reported: &'a Reported,
    /// Side by side, with the differences explained.
    comparison: &'a Comparison,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_texts_map_to_short_stable_reasons() {
        for (text, reason) in [
            ("HTTP 500: Internal Server Error", "http_500"),
            ("Internal Server Error", "http_500"),
            ("Too Many Requests", "http_429"),
            ("status_code=503", "http_503"),
            ("504 Gateway Timeout", "http_504"),
            ("Request timed out after 30 s", "timeout"),
            ("asyncio.TimeoutError", "timeout"),
            ("Request was cancelled", "cancelled"),
            ("Cannot connect: Connection refused", "connect_refused"),
            ("ServerDisconnectedError", "disconnect"),
            (
                "Traceback (most recent call last): KeyError 'choices'",
                "error",
            ),
            ("took 500 ms", "error"),
            ("", "error"),
        ] {
            assert_eq!(failure_reason(text), reason, "{text}");
        }
    }

    #[test]
    fn ordinals_read_as_english() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101]
            .iter()
            .map(|&n| format!("{n}{}", ordinal_suffix(n)))
            .collect();
        assert_eq!(
            got,
            ["1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st"]
        );
    }
}
