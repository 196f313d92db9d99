//! AIPerf `profile_export.jsonl` → trace (and, optionally, its aggregate
//! `profile_export_aiperf.json` for the figures AIPerf reported).
//!
//! One record per line: `metadata` (`request_start_ns`, `request_end_ns`,
//! `credit_issued_ns`, `benchmark_phase` = `warmup` | `profiling`,
//! `was_cancelled`, `x_request_id`), `metrics.<tag> = {value, unit}` and
//! `error` (object or null). Units are read, never assumed: time metrics in
//! `ns`, `us`, `ms`, `sec` (or `s`), token counts in `tokens`.
//!
//! Mapping:
//! - Times keep AIPerf's nanoseconds (ms with a fraction, never rounded).
//! - t0 = the earliest instant of any record; `arrivalMs` =
//!   `request_start_ns` − t0. AIPerf times TTFT and latency from the request
//!   start, so `boundary.arrival = "sent"`; the credit's lag (send −
//!   `credit_issued_ns`, the client's own dispatch delay) is the row label
//!   `creditLagMs`.
//! - `firstTokenMs` = arrival + `time_to_first_token`, `completedMs` =
//!   arrival + `request_latency`, so TTFT and E2E are AIPerf's values.
//! - `outputTokens` = `usage_completion_tokens` (the server's count) whenever
//!   the record has it; AIPerf's own `output_sequence_length` (its
//!   client-side tokenizer, which need not be the model's) is kept as the
//!   label `clientOutputTokens`, and is `outputTokens` only on a record
//!   without usage — then the trace says `"tokens": "client-tokenizer"`.
//!   So TPOT is per model token, where AIPerf's inter_token_latency is per
//!   token of its tokenizer.
//! - window = from the first profiling credit (or start, if earlier) to the
//!   last profiling response (`request_start + request_latency`), stretched
//!   to the latest profiling end when a request was sent at or after that
//!   response (cancelled at the end of `--benchmark-duration`): every
//!   profiling request is in the cohort, as AIPerf counts it; with the
//!   summary ([`apply_summary`]) its length becomes AIPerf's own observation
//!   span. horizon = the latest end of any profiling record (or the window end).
//! - warmup = `[first warm-up start, window start)` when warm-up records exist.
//! - `error` → `failed` with `http_<code>` when the error has a 4xx/5xx code,
//!   else a reason from its type and message; `was_cancelled` → `failed` /
//!   `cancelled` (AIPerf cancels on purpose, `--request-cancellation-rate`, or
//!   at the end of `--benchmark-duration`; either way no answer arrived).

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::ImportError;
use crate::fidelity::{ConfiguredRate, Process};
use crate::json::{parse_typed, Within};
use crate::model::{failure_reason, ImportOptions, Imported, Quantiles, Reported};
use goodput_core::trace::model::MAX_SPAN_MS;
use goodput_core::trace::write::{RowStatus, TraceDoc, TraceRow};
use goodput_core::trace::{Labels, Scalar, Warmup, Window};

#[derive(Debug, Deserialize)]
struct Record {
    metadata: Metadata,
    #[serde(default)]
    metrics: BTreeMap<String, MetricValue>,
    #[serde(default)]
    error: Option<ErrorDetails>,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    #[serde(default)]
    x_request_id: Option<String>,
    #[serde(default)]
    credit_issued_ns: Option<i64>,
    request_start_ns: i64,
    request_end_ns: i64,
    benchmark_phase: String,
    #[serde(default)]
    was_cancelled: bool,
    #[serde(default)]
    cancellation_time_ns: Option<i64>,
}

#[derive(Debug, Deserialize)]
struct MetricValue {
    value: serde_json::Value,
    unit: String,
}

#[derive(Debug, Deserialize)]
struct ErrorDetails {
    #[serde(default)]
    code: Option<i64>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// Milliseconds per unit of an AIPerf time unit tag.
fn ms_per_unit(unit: &str) -> Option<f64> {
    match unit {
        "ns" => Some(1e-6),
        "us" => Some(1e-3),
        "ms" => Some(1.0),
        "sec" | "s" => Some(1000.0),
        _ => None,
    }
}

/// A parsed line and where it was.
struct Line {
    number: usize,
    record: Record,
}

impl Line {
    /// Whether the record is of the measured (`profiling`) phase.
    fn is_profiling(&self) -> bool {
        self.record.metadata.benchmark_phase == "profiling"
    }

    fn place(&self, tail: &str) -> String {
        format!("line {} {tail}", self.number)
    }

    /// A time metric in ms, its unit read; `None` when absent.
    fn time_ms(&self, tag: &str) -> Result<Option<f64>, ImportError> {
        let Some(m) = self.record.metrics.get(tag) else {
            return Ok(None);
        };
        let factor = ms_per_unit(&m.unit).ok_or_else(|| {
            ImportError::at(
                self.place(&format!("/metrics/{tag}/unit")),
                format!("`{}` is not a time unit (ns, us, ms, sec)", m.unit),
            )
        })?;
        let value = self.number_of(tag, &m.value)?;
        Ok(Some(value * factor))
    }

    /// A metric whose value is a list of times (AIPerf's `inter_chunk_latency`),
    /// in ms, its unit read; `None` when absent.
    fn time_list_ms(&self, tag: &str) -> Result<Option<Vec<f64>>, ImportError> {
        let Some(m) = self.record.metrics.get(tag) else {
            return Ok(None);
        };
        let factor = ms_per_unit(&m.unit).ok_or_else(|| {
            ImportError::at(
                self.place(&format!("/metrics/{tag}/unit")),
                format!("`{}` is not a time unit (ns, us, ms, sec)", m.unit),
            )
        })?;
        let list = m.value.as_array().ok_or_else(|| {
            ImportError::at(
                self.place(&format!("/metrics/{tag}/value")),
                format!("expected a list of numbers, found {}", m.value),
            )
        })?;
        let mut out = Vec::with_capacity(list.len());
        for (j, v) in list.iter().enumerate() {
            out.push(self.number_at(&format!("/metrics/{tag}/value/{j}"), v)? * factor);
        }
        Ok(Some(out))
    }

    /// A token-count metric; its unit must be `tokens`.
    fn tokens(&self, tag: &str) -> Result<Option<f64>, ImportError> {
        let Some(m) = self.record.metrics.get(tag) else {
            return Ok(None);
        };
        if m.unit != "tokens" {
            return Err(ImportError::at(
                self.place(&format!("/metrics/{tag}/unit")),
                format!("`{}` is not a token count (tokens)", m.unit),
            ));
        }
        self.number_of(tag, &m.value).map(Some)
    }

    /// A token count that must be a whole number.
    fn whole_tokens(&self, tag: &str) -> Result<Option<f64>, ImportError> {
        match self.tokens(tag)? {
            Some(x) if x.fract() != 0.0 => Err(ImportError::at(
                self.place(&format!("/metrics/{tag}/value")),
                format!("{x} is not a whole number of tokens"),
            )),
            other => Ok(other),
        }
    }

    fn number_of(&self, tag: &str, value: &serde_json::Value) -> Result<f64, ImportError> {
        self.number_at(&format!("/metrics/{tag}/value"), value)
    }

    /// A number >= 0 at `pointer` of this line, or an error naming it.
    fn number_at(&self, pointer: &str, value: &serde_json::Value) -> Result<f64, ImportError> {
        value
            .as_f64()
            .filter(|x| x.is_finite() && *x >= 0.0)
            .ok_or_else(|| {
                ImportError::at(
                    self.place(pointer),
                    format!("expected a number >= 0, found {value}"),
                )
            })
    }
}

/// Milliseconds between two ns instants, not rounded: AIPerf measures in
/// nanoseconds, and keeping them means a value sitting on a gate and every
/// rate's denominator are AIPerf's own numbers.
fn ns_diff_ms(t_ns: i64, t0_ns: i64) -> f64 {
    (i128::from(t_ns) - i128::from(t0_ns)) as f64 / 1e6
}

/// Imports an AIPerf `profile_export.jsonl` (see the module docs).
pub fn import(bytes: &[u8], options: &ImportOptions) -> Result<Imported, ImportError> {
    let lines = read_records(bytes)?;
    let t0 = earliest_instant(&lines);
    let mut tally = Tally::new();
    let mut rules = RowRules::of(&lines, options.gaps);
    let rows = lines
        .iter()
        .map(|line| map_row(line, t0, &mut tally, &mut rules))
        .collect::<Result<Vec<_>, _>>()?;
    let span = ProfilingSpan::of(&tally, t0)?;
    let trace = trace_doc(options, &tally, &span, t0, lines.len(), rows);
    let reported = reported_figures(&tally, span.duration_ms);
    Ok(Imported {
        trace,
        reported,
        first_answers: rules.answers,
        gaps: (rules.gaps.rows_with_list > 0).then_some(rules.gaps),
    })
}

/// Parses every non-blank line into a [`Record`] of a known phase; the file
/// must hold at least one record, and one of the `profiling` phase.
fn read_records(bytes: &[u8]) -> Result<Vec<Line>, ImportError> {
    let mut lines = Vec::new();
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let trimmed = raw.trim_ascii();
        if trimmed.is_empty() {
            continue;
        }
        let record: Record = parse_typed(trimmed, Within::Line(i + 1))?;
        let phase = record.metadata.benchmark_phase.as_str();
        if phase != "warmup" && phase != "profiling" {
            return Err(ImportError::at(
                format!("line {} /metadata/benchmark_phase", i + 1),
                format!("`{phase}` is neither `warmup` nor `profiling`"),
            ));
        }
        lines.push(Line {
            number: i + 1,
            record,
        });
    }
    if lines.is_empty() {
        return Err(ImportError::Whole(
            "the file holds no records (expected one JSON object per line)".into(),
        ));
    }
    if !lines.iter().any(Line::is_profiling) {
        return Err(ImportError::Whole(
            "no record of the `profiling` phase: nothing was measured".into(),
        ));
    }
    Ok(lines)
}

/// t0: the earliest instant any record names (send or credit), so every
/// time is >= 0.
fn earliest_instant(lines: &[Line]) -> i64 {
    lines
        .iter()
        .map(|l| {
            let md = &l.record.metadata;
            md.request_start_ns
                .min(md.credit_issued_ns.unwrap_or(md.request_start_ns))
        })
        .min()
        .unwrap_or(0)
}

/// What the records add up to, gathered while their rows are mapped: the
/// profiling phase's extent, the warm-up's start, AIPerf's counts, and
/// which token count the rows carry.
struct Tally {
    /// The earliest profiling credit or send.
    window_start_ns: i64,
    /// The latest profiling response (send + `request_latency`).
    last_response_ns: i64,
    /// The latest profiling send: the window must hold every profiling request.
    last_send_ns: i64,
    /// The latest profiling end, ms since t0.
    horizon_ms: f64,
    /// The earliest warm-up send.
    warmup_start_ns: Option<i64>,
    successful: u64,
    failed: u64,
    cancelled: u64,
    in_profiling: u64,
    /// Some record carries both counts (usage and AIPerf's own).
    carries_both: bool,
    /// Some successful record had only AIPerf's own count.
    client_counted: bool,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            window_start_ns: i64::MAX,
            last_response_ns: i64::MIN,
            last_send_ns: i64::MIN,
            horizon_ms: 0.0,
            warmup_start_ns: None,
            successful: 0,
            failed: 0,
            cancelled: 0,
            in_profiling: 0,
            carries_both: false,
            client_counted: false,
        }
    }

    /// A record's instants: a profiling one widens the phase's extent, a
    /// warm-up one may move the warm-up's start.
    fn note_instants(&mut self, md: &Metadata, ended_ms: f64, latency_ms: Option<f64>) {
        if md.benchmark_phase == "profiling" {
            self.in_profiling += 1;
            let opened = md.credit_issued_ns.unwrap_or(md.request_start_ns);
            self.window_start_ns = self.window_start_ns.min(md.request_start_ns).min(opened);
            self.last_send_ns = self.last_send_ns.max(md.request_start_ns);
            self.horizon_ms = self.horizon_ms.max(ended_ms);
            if let Some(l) = latency_ms {
                let response_ns = md.request_start_ns.saturating_add((l * 1e6).round() as i64);
                self.last_response_ns = self.last_response_ns.max(response_ns);
            }
        } else {
            self.warmup_start_ns = Some(
                self.warmup_start_ns
                    .map_or(md.request_start_ns, |w| w.min(md.request_start_ns)),
            );
        }
    }
}

/// The metrics of one record that its row is built from.
struct Measured {
    ttft_ms: Option<f64>,
    latency_ms: Option<f64>,
    /// AIPerf's own output count (`output_sequence_length`).
    client_tokens: Option<f64>,
    /// The server's count (`usage_completion_tokens`).
    usage_tokens: Option<f64>,
    /// Time to the first non-reasoning output token (`time_to_first_output_token`).
    ttfo_ms: Option<f64>,
    /// The server's reasoning count (`usage_reasoning_tokens`).
    usage_reasoning: Option<f64>,
    /// AIPerf's own reasoning count (`reasoning_token_count`).
    client_reasoning: Option<f64>,
}

/// What every record's row is built under: the import's gap checks, and
/// whether the file carries `time_to_first_output_token` at all (when no
/// record does, the AIPerf version predates it, and no row gets a
/// `firstAnswerMs`; when some do, a completed record without one had no
/// answer token).
struct RowRules {
    gaps: crate::gaps::GapChecks,
    answers: bool,
}

impl RowRules {
    fn of(lines: &[Line], keep_gaps: bool) -> RowRules {
        RowRules {
            gaps: crate::gaps::GapChecks::new(ICL_TAG, keep_gaps),
            answers: lines
                .iter()
                .any(|l| l.record.metrics.contains_key(TTFO_TAG)),
        }
    }
}

/// AIPerf's per-record list of latencies between content responses.
const ICL_TAG: &str = "inter_chunk_latency";
/// AIPerf's time to first output (non-reasoning) token.
const TTFO_TAG: &str = "time_to_first_output_token";

/// One record → its trace row: `failed` with a reason for an error or a
/// cancellation, else `completed` (or `failed` / `no_output` without tokens).
fn map_row(
    line: &Line,
    t0: i64,
    tally: &mut Tally,
    rules: &mut RowRules,
) -> Result<TraceRow, ImportError> {
    let md = &line.record.metadata;
    if md.request_end_ns < md.request_start_ns {
        return Err(ImportError::at(
            line.place("/metadata/request_end_ns"),
            "is before request_start_ns",
        ));
    }
    let arrival_ms = ns_diff_ms(md.request_start_ns, t0);
    let ended_ms = ns_diff_ms(md.request_end_ns, t0);
    let measured = Measured {
        ttft_ms: line.time_ms("time_to_first_token")?,
        latency_ms: line.time_ms("request_latency")?,
        client_tokens: line.whole_tokens("output_sequence_length")?,
        usage_tokens: line.whole_tokens("usage_completion_tokens")?,
        ttfo_ms: line.time_ms(TTFO_TAG)?,
        usage_reasoning: line.whole_tokens("usage_reasoning_tokens")?,
        client_reasoning: line.whole_tokens("reasoning_token_count")?,
    };
    tally.note_instants(md, ended_ms, measured.latency_ms);
    let labels = row_labels(line, &measured, tally)?;
    let id = crate::model::source_id(md.x_request_id.as_deref())
        .unwrap_or_else(|| format!("line{}", line.number));
    let mut row = TraceRow {
        ended_ms: Some(ended_ms),
        ..TraceRow::new(id, arrival_ms, RowStatus::Failed, labels)
    };
    let first_ms = measured.ttft_ms.map(|t| arrival_ms + t);
    let is_profiling = line.is_profiling();
    if let Some(err) = &line.record.error {
        row.reason = Some(error_reason(err));
        row.first_token_ms = first_ms;
        if is_profiling {
            tally.failed += 1;
        }
    } else if md.was_cancelled {
        row.reason = Some("cancelled".into());
        row.first_token_ms = first_ms;
        if let Some(c) = md.cancellation_time_ns {
            row.ended_ms = Some(ns_diff_ms(c, t0).max(arrival_ms));
        }
        if is_profiling {
            tally.cancelled += 1;
        }
    } else {
        complete_row(&mut row, line, &measured, tally)?;
        if row.status == RowStatus::Completed {
            answer_of(&mut row, line, &measured, rules.answers)?;
            if let Some(icl) = line.time_list_ms(ICL_TAG)? {
                rules.gaps.apply(&mut row, icl);
            }
        }
        if is_profiling {
            tally.successful += 1;
        }
    }
    Ok(row)
}

/// A completed row's first answer (arrival + `time_to_first_output_token`,
/// which must lie between its first token and its completion) and its
/// reasoning tokens: the server's `usage_reasoning_tokens` when the row's
/// count is usage, AIPerf's `reasoning_token_count` when the row's count is
/// AIPerf's own (then both are of its tokenizer); with usage counts AIPerf's
/// reasoning count is kept as the label `clientReasoningTokens`.
fn answer_of(
    row: &mut TraceRow,
    line: &Line,
    measured: &Measured,
    answers: bool,
) -> Result<(), ImportError> {
    let (Some(first), Some(done), Some(tokens)) =
        (row.first_token_ms, row.completed_ms, row.output_tokens)
    else {
        return Ok(());
    };
    if let (true, Some(ttfo)) = (answers, measured.ttfo_ms) {
        let answer = row.arrival_ms + ttfo;
        if answer < first || answer > done {
            return Err(ImportError::at(
                line.place(&format!("/metrics/{TTFO_TAG}/value")),
                format!(
                    "{ttfo} ms is not between the record's first token and its completion \
                     ({} and {} ms after its start)",
                    first - row.arrival_ms,
                    done - row.arrival_ms
                ),
            ));
        }
        row.first_answer_ms = Some(answer);
    }
    let (reasoning, tag) = match (measured.usage_tokens, measured.usage_reasoning) {
        (Some(_), Some(r)) => (Some(r), "usage_reasoning_tokens"),
        (Some(_), None) => (None, ""),
        (None, _) => (measured.client_reasoning, "reasoning_token_count"),
    };
    if let Some(r) = reasoning {
        if r > tokens as f64 {
            return Err(ImportError::at(
                line.place(&format!("/metrics/{tag}/value")),
                format!("{r} reasoning tokens are more than the record's {tokens} output tokens"),
            ));
        }
        row.reasoning_tokens = Some(r as u64);
    }
    if let (Some(_), Some(client)) = (measured.usage_tokens, measured.client_reasoning) {
        row.labels
            .insert("clientReasoningTokens".into(), Scalar::Number(client));
    }
    Ok(())
}

/// A row's labels: the phase, the prompt length, AIPerf's own output count
/// beside the server's, and the credit's lag.
fn row_labels(line: &Line, measured: &Measured, tally: &mut Tally) -> Result<Labels, ImportError> {
    let md = &line.record.metadata;
    let mut labels = Labels::new();
    labels.insert("phase".into(), Scalar::String(md.benchmark_phase.clone()));
    if let Some(isl) = line.tokens("input_sequence_length")? {
        labels.insert("promptTokens".into(), Scalar::Number(isl));
    }
    if let (Some(_), Some(client)) = (measured.usage_tokens, measured.client_tokens) {
        tally.carries_both = true;
        labels.insert(
            crate::fidelity::CLIENT_TOKENS_LABEL.into(),
            Scalar::Number(client),
        );
    }
    if let Some(credit) = md.credit_issued_ns {
        labels.insert(
            "creditLagMs".into(),
            Scalar::Number(ns_diff_ms(md.request_start_ns, credit)),
        );
    }
    Ok(labels)
}

/// The failure reason of a record's `error`: `http_<code>` for a 4xx/5xx
/// code, else read from its type and message.
fn error_reason(err: &ErrorDetails) -> String {
    match err.code {
        Some(code) if (400..600).contains(&code) => format!("http_{code}"),
        _ => failure_reason(&format!(
            "{} {}",
            err.kind.as_deref().unwrap_or(""),
            err.message.as_deref().unwrap_or("")
        )),
    }
}

/// Fills the row of a successful record: `completed` with its first token,
/// completion and output count, or `no_output` when it has no tokens.
fn complete_row(
    row: &mut TraceRow,
    line: &Line,
    measured: &Measured,
    tally: &mut Tally,
) -> Result<(), ImportError> {
    let missing = |tag: &str| {
        ImportError::at(
            line.place(&format!("/metrics/{tag}")),
            "is missing on a successful record (AIPerf needs --streaming for TTFT)",
        )
    };
    let ttft = measured
        .ttft_ms
        .ok_or_else(|| missing("time_to_first_token"))?;
    let latency = measured
        .latency_ms
        .ok_or_else(|| missing("request_latency"))?;
    let tokens = match (measured.usage_tokens, measured.client_tokens) {
        (Some(u), _) => u,
        (None, Some(o)) => {
            tally.client_counted = true;
            o
        }
        (None, None) => return Err(missing("output_sequence_length")),
    };
    if latency < ttft {
        return Err(ImportError::at(
            line.place("/metrics/request_latency/value"),
            format!("{latency} ms is shorter than the record's TTFT of {ttft} ms"),
        ));
    }
    let arrival_ms = row.arrival_ms;
    let first = arrival_ms + ttft;
    if tokens < 1.0 {
        row.reason = Some("no_output".into());
        row.first_token_ms = Some(first);
    } else {
        row.status = RowStatus::Completed;
        row.first_token_ms = Some(first);
        row.completed_ms = Some((arrival_ms + latency).max(first));
        row.output_tokens = Some(tokens as u64);
        row.ended_ms = None;
    }
    Ok(())
}

/// The trace's window over the profiling phase, ms since t0.
struct ProfilingSpan {
    start_ms: f64,
    duration_ms: f64,
    horizon_ms: f64,
}

impl ProfilingSpan {
    /// From the first profiling credit to the last profiling response,
    /// stretched to hold every profiling request (see the module docs); at
    /// most a day.
    fn of(tally: &Tally, t0: i64) -> Result<ProfilingSpan, ImportError> {
        let start_ms = ns_diff_ms(tally.window_start_ns, t0);
        let mut duration_ms = if tally.last_response_ns > tally.window_start_ns {
            ns_diff_ms(tally.last_response_ns, tally.window_start_ns)
        } else {
            // No profiling record has a latency (all failed): the window spans the
            // profiling records' ends, at least 1 ms.
            (tally.horizon_ms - start_ms).max(1.0)
        };
        // Every profiling request belongs to the cohort, as AIPerf counts it: a
        // request sent at or after the last response (one cancelled at the end
        // of --benchmark-duration) stretches the window to the latest profiling
        // end, and at least just past its send (the window is half-open).
        let last_send_ms = ns_diff_ms(tally.last_send_ns, t0);
        if start_ms + duration_ms <= last_send_ms {
            let past_send = f64::from_bits(last_send_ms.to_bits() + 1);
            duration_ms = tally.horizon_ms.max(past_send) - start_ms;
        }
        if duration_ms > MAX_SPAN_MS {
            return Err(ImportError::Whole(format!(
                "the profiling phase spans {duration_ms} ms, over the trace limit of a day"
            )));
        }
        let end_ms = start_ms + duration_ms;
        Ok(ProfilingSpan {
            start_ms,
            duration_ms,
            horizon_ms: tally.horizon_ms.max(end_ms).min(start_ms + MAX_SPAN_MS),
        })
    }

    fn window(&self) -> Window {
        Window {
            start_ms: self.start_ms,
            end_ms: self.start_ms + self.duration_ms,
            horizon_ms: Some(self.horizon_ms),
        }
    }
}

/// The trace document: the profiling window, the warm-up before it, the
/// boundary (arrivals are sends; which token count) and the workload.
fn trace_doc(
    options: &ImportOptions,
    tally: &Tally,
    span: &ProfilingSpan,
    t0: i64,
    records: usize,
    rows: Vec<TraceRow>,
) -> TraceDoc {
    let warmup = tally
        .warmup_start_ns
        .map(|w| ns_diff_ms(w, t0))
        .filter(|&w| w < span.start_ms)
        .map(|w| Warmup {
            start_ms: w,
            end_ms: span.start_ms,
        });
    let token_source = if tally.client_counted {
        "aiperf usage_completion_tokens, else output_sequence_length"
    } else {
        "aiperf usage_completion_tokens"
    };
    let boundary =
        crate::model::boundary_labels("sent", token_source, "aiperf profile_export.jsonl");
    let mut workload = Labels::new();
    workload.insert("tool".into(), Scalar::String("aiperf".into()));
    workload.insert("records".into(), Scalar::Number(records as f64));
    workload.insert(
        "warmupRecords".into(),
        Scalar::Number((records as u64 - tally.in_profiling) as f64),
    );
    let mut trace = options.trace(span.window(), warmup, boundary, workload, rows);
    if tally.client_counted {
        trace.tokens = goodput_core::trace::TokenCount::ClientTokenizer;
    }
    trace
}

/// AIPerf's figures as recomputed from the records (its own come with
/// [`apply_summary`]), and its rules.
fn reported_figures(tally: &Tally, duration_ms: f64) -> Reported {
    Reported {
        tool: "aiperf".into(),
        version: None,
        requests: Some(tally.in_profiling),
        successful: Some(tally.successful),
        failed: Some(tally.failed),
        incomplete: Some(tally.cancelled),
        duration_s: Some(duration_ms / 1000.0),
        percentile_method: "AIPerf interpolates linearly between the two nearest ranks \
                            (numpy's default)"
            .into(),
        window_rule: "without --summary the window runs from the first profiling credit to the \
                      last profiling response, or to the latest profiling end when a request \
                      was sent after that response, so every profiling request is in the \
                      cohort (AIPerf's phase starts earlier, before its first credit, an \
                      interval the records do not show)"
            .into(),
        one_token_rule: "AIPerf has no inter_token_latency for them, so with an \
                         inter_token_latency SLO it never counts them as good"
            .into(),
        latency_population: "AIPerf's latency statistics cover its successful profiling \
                             records"
            .into(),
        figures_from: "counts and duration recomputed from the records; give --summary \
                       profile_export_aiperf.json for AIPerf's own figures"
            .into(),
        client_tokens_from: tally
            .carries_both
            .then(|| "output_sequence_length".to_owned()),
        ..Reported::default()
    }
}

/// `{avg, p50, p99, unit}` of one aggregate metric.
#[derive(Debug, Deserialize)]
struct Aggregate {
    unit: String,
    #[serde(default)]
    avg: Option<f64>,
    #[serde(default)]
    p50: Option<f64>,
    #[serde(default)]
    p99: Option<f64>,
}

/// The parts of `input_config` that name AIPerf's own goodput gates and its load.
#[derive(Debug, Default, Deserialize)]
struct InputConfig {
    #[serde(default)]
    slos: Option<BTreeMap<String, f64>>,
    #[serde(default)]
    phases: Option<Vec<Phase>>,
}

/// One of `input_config.phases`: `kind` (`warmup`, `profiling`), `type`
/// (the arrival pattern: `poisson`, `constant`, …) and `rate` (`--request-rate`).
#[derive(Debug, Deserialize)]
struct Phase {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default, rename = "type")]
    pattern: Option<String>,
    #[serde(default)]
    rate: Option<f64>,
}

/// The profiling phase's `--request-rate` and arrival pattern, when set.
fn configured_rate(phases: &[Phase]) -> Option<ConfiguredRate> {
    let (i, phase) = phases
        .iter()
        .enumerate()
        .find(|(_, p)| p.kind.as_deref() == Some("profiling"))?;
    let per_s = phase.rate.filter(|r| r.is_finite() && *r > 0.0)?;
    let pattern = phase.pattern.as_deref().unwrap_or("");
    let process = match pattern {
        "poisson" => Process::Poisson,
        "constant" => Process::Constant,
        _ => Process::Other,
    };
    Some(ConfiguredRate {
        per_s,
        process,
        from: format!(
            "--summary /input_config/phases/{i}: {pattern}, rate {}",
            crate::model::fmt_num(per_s)
        ),
    })
}

/// The fields of `profile_export_aiperf.json` the comparison shows.
#[derive(Debug, Deserialize)]
struct Summary {
    #[serde(default)]
    input_config: Option<InputConfig>,
    #[serde(default)]
    aiperf_version: Option<String>,
    #[serde(default)]
    request_count: Option<Aggregate>,
    #[serde(default)]
    completed_request_count: Option<Aggregate>,
    #[serde(default)]
    error_request_count: Option<Aggregate>,
    #[serde(default)]
    request_throughput: Option<Aggregate>,
    #[serde(default)]
    goodput: Option<Aggregate>,
    #[serde(default)]
    output_token_throughput: Option<Aggregate>,
    #[serde(default)]
    time_to_first_token: Option<Aggregate>,
    #[serde(default)]
    inter_token_latency: Option<Aggregate>,
    #[serde(default)]
    request_latency: Option<Aggregate>,
    #[serde(default)]
    inter_chunk_latency: Option<Aggregate>,
    #[serde(default)]
    time_to_first_output_token: Option<Aggregate>,
}

/// Replaces the recomputed figures with AIPerf's own, read from its
/// aggregate export (units read: latencies converted to ms, the duration to
/// s), and gives the trace's window AIPerf's observation length.
///
/// AIPerf divides every rate (throughput, goodput) by its profiling phase's
/// span, phase start to phase end; the phase starts before its first credit
/// (a Poisson schedule's first gap), which the records do not show. The
/// summary gives that span exactly as `request_count / request_throughput`;
/// the window keeps its start (the first profiling credit) and takes that
/// length, so goodput's rates divide by AIPerf's number.
pub fn apply_summary(imported: &mut Imported, bytes: &[u8]) -> Result<(), ImportError> {
    let s: Summary = parse_typed(bytes, Within::Document)?;
    let reported = &mut imported.reported;
    let time = |a: &Option<Aggregate>, tag: &str| -> Result<Quantiles, ImportError> {
        match a {
            None => Ok(Quantiles::default()),
            Some(a) => {
                let f = ms_per_unit(&a.unit).ok_or_else(|| {
                    ImportError::at(
                        format!("/{tag}/unit"),
                        format!("`{}` is not a time unit (ns, us, ms, sec)", a.unit),
                    )
                })?;
                Ok(Quantiles {
                    p50: a.p50.map(|v| v * f),
                    p99: a.p99.map(|v| v * f),
                })
            }
        }
    };
    let count = |a: &Option<Aggregate>| a.as_ref().and_then(|a| a.avg).map(|v| v as u64);
    let rate = |a: &Option<Aggregate>| a.as_ref().and_then(|a| a.avg);
    reported.version = s.aiperf_version.clone();
    reported.ttft_ms = time(&s.time_to_first_token, "time_to_first_token")?;
    reported.tpot_ms = time(&s.inter_token_latency, "inter_token_latency")?;
    reported.e2e_ms = time(&s.request_latency, "request_latency")?;
    reported.ttfa_ms = time(&s.time_to_first_output_token, TTFO_TAG)?;
    if let Some(icl) = &s.inter_chunk_latency {
        let q = time(&s.inter_chunk_latency, ICL_TAG)?;
        let f = ms_per_unit(&icl.unit).unwrap_or(1.0);
        reported.itl_ms = crate::model::Itl {
            mean: icl.avg.map(|v| v * f),
            p50: q.p50,
            p99: q.p99,
        };
        reported.itl_from = Some(
            "inter_chunk_latency (every record's latencies between content responses, pooled)"
                .into(),
        );
    }
    // AIPerf's request_count is its successful requests; completed_request_count
    // counts every finished record, errors included.
    reported.successful = count(&s.request_count).or(reported.successful);
    reported.requests = count(&s.completed_request_count).or(reported.requests);
    reported.failed = count(&s.error_request_count).or(reported.failed);
    reported.request_throughput_per_s = rate(&s.request_throughput);
    reported.goodput_per_s = rate(&s.goodput);
    reported.output_tokens_per_s = rate(&s.output_token_throughput);
    let observed_s = match (rate(&s.request_count), reported.request_throughput_per_s) {
        (Some(n), Some(r)) if n > 0.0 && r > 0.0 => Some(n / r),
        _ => None,
    };
    if let Some(d) = observed_s {
        reported.duration_s = Some(d);
        let w = &mut imported.trace.window;
        let end = w.start_ms + d * 1000.0;
        if end > w.end_ms && end - w.start_ms <= MAX_SPAN_MS {
            w.end_ms = end;
            w.horizon_ms = Some(w.horizon_ms.unwrap_or(end).max(end));
        }
    }
    let config = s.input_config.unwrap_or_default();
    if let Some(phases) = &config.phases {
        reported.configured_rate = configured_rate(phases);
    }
    if let Some(slos) = config.slos.filter(|m| !m.is_empty()) {
        reported.one_token_never_good = slos.contains_key("inter_token_latency");
        reported.tool_gates = Some(format!(
            "--goodput '{}'",
            slos.iter()
                .map(|(k, v)| format!("{k}:{}", crate::model::fmt_num(*v)))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    reported.window_rule = "AIPerf divides every rate by its profiling phase's span (phase start \
                            to end, request_count / request_throughput in its summary); the \
                            trace's window has that length from the first profiling credit"
        .into();
    reported.figures_from = "profile_export_aiperf.json (request_count, \
                             completed_request_count, error_request_count, request_throughput, \
                             goodput, output_token_throughput, time_to_first_token, \
                             inter_token_latency as TPOT, request_latency, inter_chunk_latency as \
                             ITL, time_to_first_output_token as TTFA, input_config.slos)"
        .into();
    Ok(())
}
