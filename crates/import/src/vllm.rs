//! vLLM's benchmark result JSON → trace, for every released shape of it:
//! `benchmarks/benchmark_serving.py --save-result` (2024–2025) and
//! `vllm bench serve --save-result --save-detailed` (`vllm/benchmarks/serve.py`).
//!
//! Per-request arrays (all the same length, one entry per request in send
//! order): `ttfts` (s), `itls` (lists of s), `output_lens`, `input_lens`,
//! `errors` (`""` or null = success); only newer files add `start_times`
//! (perf_counter s, the actual send) and `latencies`/`e2els` (s). Run
//! fields: `duration`, `request_rate`, `burstiness`, `max_concurrency`, the
//! goodput figure (`request_goodput:` — with a colon — in the script's files,
//! `request_goodput` in newer ones) and the aggregate statistics. The fields
//! each version saves, and the shapes below, are tabled in `docs/import.md`.
//!
//! Mapping with send times (`start_times`): t0 = the first send; `arrivalMs`
//! = send − t0 (`boundary.arrival = "sent"`).
//!
//! Without send times the file is imported in the **arrival-unknown** mode
//! (`boundary.arrival = "unknown"`): every row's `arrivalMs` is the window
//! start, so each request's TTFT, TPOT and E2E — all measured by vLLM from
//! that request's own send — are exact, while no instant on the run's
//! timeline is claimed. The cohort is every request and the window is
//! `duration`, so the pass count over the window is vLLM's `request_goodput`
//! under vLLM's own rules; the analyzer leaves every figure that needs
//! arrival instants null (`docs/contract.md`).
//!
//! Both modes: window = `[0, duration)` (vLLM's clock starts just before the
//! first send and stops after the last response, so every request lies
//! inside it and the window length is vLLM's own throughput denominator,
//! to the bit). Without `latencies`, E2E = TTFT + Σ ITLs (vLLM's own
//! `latency` is the last chunk's instant minus the send, which that sum
//! reproduces to well under a microsecond). A failed request becomes a
//! `failed` row with a short reason from its error text, and the text's
//! last line as the label `error`; a "successful" request with zero output
//! tokens becomes `failed` / `no_output` (the contract needs ≥ 1 token).

use serde::Deserialize;

use crate::error::ImportError;
use crate::fidelity::{ConfiguredRate, Process};
use crate::json::{parse_typed, python_literals_to_json, Within};
use crate::model::fmt_num;
use crate::model::{failure_reason, non_negative, ImportOptions, Imported, Quantiles, Reported};
use goodput_core::trace::model::MAX_SPAN_MS;
use goodput_core::trace::write::{round_us, RowStatus, TraceDoc, TraceRow};
use goodput_core::trace::{Labels, Scalar, Window};

/// A number Python may have written as `inf` (after the literal repair), or text.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Loose {
    Number(f64),
    Text(String),
}

impl Loose {
    fn number(&self) -> Option<f64> {
        match self {
            Loose::Number(x) => Some(*x),
            Loose::Text(_) => None,
        }
    }

    fn label(&self) -> Scalar {
        match self {
            Loose::Number(x) => Scalar::Number(*x),
            Loose::Text(t) => Scalar::String(t.clone()),
        }
    }
}

/// The fields of a vLLM result file this importer reads; others are ignored.
#[derive(Debug, Deserialize)]
struct VllmResult {
    #[serde(default)]
    backend: Option<String>,
    #[serde(default)]
    model_id: Option<String>,
    #[serde(default)]
    num_prompts: Option<u64>,
    #[serde(default)]
    request_rate: Option<Loose>,
    #[serde(default)]
    burstiness: Option<Loose>,
    #[serde(default)]
    max_concurrency: Option<Loose>,
    duration: f64,
    #[serde(default)]
    completed: Option<u64>,
    #[serde(default)]
    failed: Option<u64>,
    #[serde(default)]
    request_throughput: Option<Loose>,
    /// `vllm bench serve`'s spelling; present (possibly null) or absent.
    #[serde(default, deserialize_with = "present")]
    request_goodput: Option<Option<Loose>>,
    /// `benchmark_serving.py`'s spelling, with a colon inside the key.
    #[serde(default, rename = "request_goodput:", deserialize_with = "present")]
    request_goodput_colon: Option<Option<Loose>>,
    #[serde(default)]
    output_throughput: Option<Loose>,
    #[serde(default)]
    median_ttft_ms: Option<Loose>,
    #[serde(default)]
    p99_ttft_ms: Option<Loose>,
    #[serde(default)]
    median_tpot_ms: Option<Loose>,
    #[serde(default)]
    p99_tpot_ms: Option<Loose>,
    #[serde(default)]
    median_e2el_ms: Option<Loose>,
    #[serde(default)]
    p99_e2el_ms: Option<Loose>,
    #[serde(default)]
    mean_itl_ms: Option<Loose>,
    #[serde(default)]
    median_itl_ms: Option<Loose>,
    #[serde(default)]
    p99_itl_ms: Option<Loose>,
    #[serde(default)]
    start_times: Option<Vec<f64>>,
    ttfts: Vec<Option<f64>>,
    itls: Vec<Vec<f64>>,
    #[serde(default)]
    latencies: Option<Vec<Option<f64>>>,
    #[serde(default)]
    e2els: Option<Vec<Option<f64>>>,
    output_lens: Vec<u64>,
    #[serde(default)]
    input_lens: Option<Vec<u64>>,
    errors: Vec<Option<String>>,
}

/// A field that is present (even as `null`) becomes `Some(value)`; an absent
/// one stays `None` through `#[serde(default)]`. The shape is told by which
/// keys a file has, so "present as null" must not read as "absent".
fn present<'de, D>(d: D) -> Result<Option<Option<Loose>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Option::<Loose>::deserialize(d).map(Some)
}

fn num(v: &Option<Loose>) -> Option<f64> {
    v.as_ref().and_then(Loose::number)
}

/// `request_rate` with its process: burstiness 1 (vLLM's default) is
/// Poisson, any other is gamma-distributed gaps; `inf` (all at once) is no rate.
fn configured_rate(doc: &VllmResult) -> Option<ConfiguredRate> {
    let per_s = num(&doc.request_rate).filter(|r| r.is_finite() && *r > 0.0)?;
    let burstiness = num(&doc.burstiness).unwrap_or(1.0);
    let cap = num(&doc.max_concurrency)
        .map(|c| format!(", max_concurrency {}", fmt_num(c)))
        .unwrap_or_default();
    Some(ConfiguredRate {
        per_s,
        process: if burstiness == 1.0 {
            Process::Poisson
        } else {
            Process::Other
        },
        from: format!(
            "request_rate {}, burstiness {}{cap}",
            fmt_num(per_s),
            fmt_num(burstiness)
        ),
    })
}

/// How the file spells its goodput figure (the spelling dates the writer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoodputKey {
    /// `request_goodput:` — `benchmark_serving.py` since `--goodput` (late 2024).
    Colon,
    /// `request_goodput` — `vllm bench serve`.
    Plain,
    /// No goodput key: written before `--goodput` existed.
    Absent,
}

/// The released shape of a vLLM result file, detected from its keys and
/// named in the import summary, so a reviewer sees which rules were applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    /// The file has `start_times` (per-request send instants).
    pub send_times: bool,
    /// Per-request E2E came from `latencies` or `e2els` (else TTFT + Σ ITLs).
    pub e2e_array: Option<&'static str>,
    /// The spelling of the goodput figure.
    pub goodput_key: GoodputKey,
}

impl Shape {
    /// The shape in words, for the summary and the trace's `boundary.shape`.
    pub fn describe(&self) -> String {
        let writer = match (self.send_times, self.goodput_key) {
            (true, _) => "vllm bench serve with start_times",
            (false, GoodputKey::Colon) => {
                "benchmark_serving.py / vllm bench serve without start_times (request_goodput:)"
            }
            (false, GoodputKey::Plain) => "vllm bench serve without start_times (request_goodput)",
            (false, GoodputKey::Absent) => {
                "benchmark_serving.py before --goodput (no request_goodput, no start_times)"
            }
        };
        let e2e = match self.e2e_array {
            Some(key) => format!("E2E from {key}"),
            None => "E2E = TTFT + sum of ITLs".to_owned(),
        };
        let arrivals = if self.send_times {
            "arrivals = sends"
        } else {
            "arrival times unknown"
        };
        format!("{writer}; {e2e}; {arrivals}")
    }
}

/// The f64 `end` closest to `duration_s × 1000` for which `end / 1000` is
/// `duration_s` exactly, so the receipt's rates (count / window seconds) are
/// vLLM's own divisions bit for bit. The microsecond rounding is kept when
/// it already has that property; `duration_s × 1000` when no neighbour has.
fn window_end_ms(duration_s: f64) -> f64 {
    let y = duration_s * 1000.0;
    let down = f64::from_bits(y.to_bits() - 1);
    let up = f64::from_bits(y.to_bits() + 1);
    [round_us(y), y, down, up]
        .into_iter()
        .find(|end| end / 1000.0 == duration_s)
        .unwrap_or(y)
}

/// The last non-empty line of an error text (a traceback ends with the
/// exception), at most 200 characters: kept as the row label `error`.
fn error_label(text: &str) -> String {
    let line = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    line.chars().take(200).collect()
}

/// Imports a vLLM result file (see the module docs for the mapping).
pub fn import(bytes: &[u8], options: &ImportOptions) -> Result<Imported, ImportError> {
    let fixed = python_literals_to_json(bytes);
    let mut doc: VllmResult = parse_typed(&fixed, Within::Document)?;
    let shape = Shape::of(&doc);
    let n = check_lengths(&doc)?;
    check_duration(doc.duration)?;
    let arrivals = arrivals_ms(&doc, n)?;
    let mut rows = Vec::with_capacity(n);
    let mut latest_ms: f64 = 0.0;
    let mut successful = 0u64;
    for (i, &arrival_ms) in arrivals.iter().enumerate() {
        let (row, done_ms) = map_row(&doc, i, arrival_ms)?;
        if let Some(done) = done_ms {
            successful += 1;
            latest_ms = latest_ms.max(done);
        }
        rows.push(row);
    }
    let gaps = apply_gaps(&mut doc, &mut rows, options.gaps)?;
    let trace = trace_doc(options, &doc, &shape, rows, latest_ms);
    let goodput = doc
        .request_goodput
        .as_ref()
        .or(doc.request_goodput_colon.as_ref())
        .and_then(num);
    let reported = reported(&doc, &shape, n, successful, goodput);
    Ok(Imported {
        trace,
        reported,
        gaps: (gaps.rows_with_list > 0).then_some(gaps),
        // vLLM's benchmark does not tell reasoning from answer tokens.
        first_answers: false,
    })
}

/// Each completed row's `itls` (s) → its `gapsMs` by the rule of
/// [`crate::gaps`]; every ITL of such a row must be a number >= 0. The lists
/// are moved out of the parsed file (they are its largest part).
fn apply_gaps(
    doc: &mut VllmResult,
    rows: &mut [TraceRow],
    keep: bool,
) -> Result<crate::gaps::GapChecks, ImportError> {
    let mut checks = crate::gaps::GapChecks::new("itls", keep);
    for (i, row) in rows.iter_mut().enumerate() {
        if row.status != RowStatus::Completed {
            continue;
        }
        let mut itls = std::mem::take(&mut doc.itls[i]);
        for (j, itl) in itls.iter_mut().enumerate() {
            *itl = non_negative(*itl, format!("/itls/{i}/{j}"))? * 1000.0;
        }
        checks.apply(row, itls);
    }
    Ok(checks)
}

impl Shape {
    /// The shape of a parsed file, told by which keys it has.
    fn of(doc: &VllmResult) -> Shape {
        Shape {
            send_times: doc.start_times.is_some(),
            e2e_array: e2e_values(doc).map(|(key, _)| key),
            goodput_key: match (&doc.request_goodput, &doc.request_goodput_colon) {
                (Some(_), _) => GoodputKey::Plain,
                (None, Some(_)) => GoodputKey::Colon,
                (None, None) => GoodputKey::Absent,
            },
        }
    }
}

/// The per-request E2E array and its key: `latencies`, else `e2els`, when
/// the file has one.
fn e2e_values(doc: &VllmResult) -> Option<(&'static str, &Vec<Option<f64>>)> {
    match (&doc.latencies, &doc.e2els) {
        (Some(l), _) => Some(("latencies", l)),
        (None, Some(l)) => Some(("e2els", l)),
        (None, None) => None,
    }
}

/// The number of requests: every per-request array must have one entry
/// each, as many as `start_times` (or `ttfts`, without send times).
fn check_lengths(doc: &VllmResult) -> Result<usize, ImportError> {
    let (reference, n) = match &doc.start_times {
        Some(s) => ("start_times", s.len()),
        None => ("ttfts", doc.ttfts.len()),
    };
    let check_len = |name: &str, len: usize| {
        if len == n {
            Ok(())
        } else {
            Err(ImportError::at(
                format!("/{name}"),
                format!("has {len} entries but /{reference} has {n} (one per request)"),
            ))
        }
    };
    check_len("ttfts", doc.ttfts.len())?;
    check_len("itls", doc.itls.len())?;
    check_len("output_lens", doc.output_lens.len())?;
    check_len("errors", doc.errors.len())?;
    if let Some((key, l)) = e2e_values(doc) {
        check_len(key, l.len())?;
    }
    if let Some(l) = &doc.input_lens {
        check_len("input_lens", l.len())?;
    }
    Ok(n)
}

/// `duration` (the window, s) must be > 0 and at most a day.
fn check_duration(duration: f64) -> Result<(), ImportError> {
    if duration.is_finite() && duration > 0.0 && duration * 1000.0 <= MAX_SPAN_MS {
        return Ok(());
    }
    Err(ImportError::at(
        "/duration",
        format!("must be a number of seconds > 0 and at most a day, not {duration}"),
    ))
}

/// Each request's arrival, ms: its send since the first send, or the
/// window start for every row when the file has no send times.
fn arrivals_ms(doc: &VllmResult, n: usize) -> Result<Vec<f64>, ImportError> {
    let Some(starts) = &doc.start_times else {
        // Arrival-unknown: every row at the window start (see the module docs).
        return Ok(vec![0.0; n]);
    };
    for (i, &s) in starts.iter().enumerate() {
        non_negative(s, format!("/start_times/{i}"))?;
    }
    let t0 = starts.iter().copied().fold(f64::INFINITY, f64::min);
    // Full precision: rounding an instant to the microsecond could
    // move a latency across a gate it is within 0.5 µs of.
    Ok(starts.iter().map(|&s| (s - t0) * 1000.0).collect())
}

/// Request `i` → its trace row, and its end (ms) when vLLM counted it
/// successful: a failed request becomes `failed` with a reason and its
/// error's last line; a successful one `completed`, or `failed` /
/// `no_output` without output tokens.
fn map_row(
    doc: &VllmResult,
    i: usize,
    arrival_ms: f64,
) -> Result<(TraceRow, Option<f64>), ImportError> {
    let mut labels = Labels::new();
    if let Some(lens) = &doc.input_lens {
        labels.insert("promptTokens".into(), Scalar::Number(lens[i] as f64));
    }
    let error = doc.errors[i].as_deref().unwrap_or("");
    if !error.is_empty() {
        labels.insert("error".into(), Scalar::String(error_label(error)));
        let mut row = TraceRow::new(format!("r{i}"), arrival_ms, RowStatus::Failed, labels);
        row.reason = Some(failure_reason(error));
        return Ok((row, None));
    }
    let mut row = TraceRow::new(format!("r{i}"), arrival_ms, RowStatus::Failed, labels);
    let (first, done) = success_times(doc, i, arrival_ms)?;
    row.first_token_ms = Some(first);
    if doc.output_lens[i] == 0 {
        row.reason = Some("no_output".into());
        row.ended_ms = Some(done);
    } else {
        row.status = RowStatus::Completed;
        row.completed_ms = Some(done);
        row.output_tokens = Some(doc.output_lens[i]);
    }
    Ok((row, Some(done)))
}

/// The first token and the end of successful request `i`, ms: arrival +
/// TTFT, and arrival + E2E (the file's, else TTFT + Σ ITLs), checked.
fn success_times(doc: &VllmResult, i: usize, arrival_ms: f64) -> Result<(f64, f64), ImportError> {
    let e2e = e2e_values(doc);
    let ttft_s = match doc.ttfts[i] {
        Some(x) => non_negative(x, format!("/ttfts/{i}"))?,
        None => {
            return Err(ImportError::at(
                format!("/ttfts/{i}"),
                "is null on a successful request",
            ))
        }
    };
    let e2e_place = format!("/{}/{i}", e2e.map_or("itls", |(key, _)| key));
    let e2e_s = match e2e.map(|(_, l)| l[i]) {
        Some(Some(x)) => non_negative(x, e2e_place.clone())?,
        Some(None) => {
            return Err(ImportError::at(
                e2e_place,
                "is null on a successful request",
            ))
        }
        None => {
            for (j, &itl) in doc.itls[i].iter().enumerate() {
                non_negative(itl, format!("/itls/{i}/{j}"))?;
            }
            ttft_s + doc.itls[i].iter().sum::<f64>()
        }
    };
    if e2e_s < ttft_s {
        return Err(ImportError::at(
            e2e_place,
            format!("{e2e_s} s is shorter than the request's TTFT of {ttft_s} s"),
        ));
    }
    // Latencies are added to the arrival at full precision (never rounded
    // to the microsecond), so TTFT and E2E in the trace are vLLM's own
    // values to within a rounding of the sum, far below any clock: a
    // request 0.4 µs over a gate stays over it, as vLLM judged it.
    let first = arrival_ms + ttft_s * 1000.0;
    let done = (arrival_ms + e2e_s * 1000.0).max(first);
    if done > MAX_SPAN_MS {
        return Err(ImportError::at(
            e2e_place,
            format!("ends {done} ms after the first send: more than a day"),
        ));
    }
    Ok((first, done))
}

/// The trace document: the window `[0, duration)`, the boundary (what
/// arrivals are, the detected shape) and the run's settings as workload.
fn trace_doc(
    options: &ImportOptions,
    doc: &VllmResult,
    shape: &Shape,
    rows: Vec<TraceRow>,
    latest_ms: f64,
) -> TraceDoc {
    let end_ms = window_end_ms(doc.duration);
    let tool = if shape.send_times {
        "vllm bench serve"
    } else {
        "vllm benchmark_serving.py / bench serve"
    };
    let arrival = if shape.send_times { "sent" } else { "unknown" };
    // vLLM's output_lens are the server's usage.completion_tokens when the
    // stream carried usage (vLLM asks for it), else its own tokenizer's count;
    // the file does not say which, so the boundary names the field.
    let mut boundary = crate::model::boundary_labels(arrival, "vllm output_lens", tool);
    boundary.insert("shape".into(), Scalar::String(shape.describe()));
    let window = Window {
        start_ms: 0.0,
        end_ms,
        horizon_ms: Some(end_ms.max(latest_ms)),
    };
    options.trace(window, None, boundary, workload(doc, tool), rows)
}

/// The run's settings as the trace's workload labels.
fn workload(doc: &VllmResult, tool: &str) -> Labels {
    let mut workload = Labels::new();
    workload.insert("tool".into(), Scalar::String(tool.into()));
    if let Some(b) = &doc.backend {
        workload.insert("backend".into(), Scalar::String(b.clone()));
    }
    if let Some(m) = &doc.model_id {
        workload.insert("model".into(), Scalar::String(m.clone()));
    }
    if let Some(p) = doc.num_prompts {
        workload.insert("numPrompts".into(), Scalar::Number(p as f64));
    }
    for (key, value) in [
        ("requestRate", &doc.request_rate),
        ("burstiness", &doc.burstiness),
        ("maxConcurrency", &doc.max_concurrency),
    ] {
        if let Some(v) = value {
            workload.insert(key.into(), v.label());
        }
    }
    workload.insert("durationS".into(), Scalar::Number(doc.duration));
    workload
}

fn reported(
    doc: &VllmResult,
    shape: &Shape,
    n: usize,
    successful: u64,
    goodput: Option<f64>,
) -> Reported {
    let window_rule = if shape.send_times {
        "vLLM divides by `duration`, from just before its first send to its last response; the \
         trace's window is [first send, first send + duration), the same length"
    } else {
        "vLLM divides by `duration`, from just before its first send to its last response; the \
         file has no send times, so the window is [0, duration) and every row's arrival is set \
         to its start (boundary.arrival = \"unknown\": the latencies are exact, no instant is)"
    };
    let e2e = match shape.e2e_array {
        Some(key) => format!("E2E is the file's `{key}`"),
        None => "E2E is TTFT + the sum of the request's ITLs (the file has no per-request E2E)"
            .to_owned(),
    };
    Reported {
        tool: "vllm".into(),
        version: None,
        requests: Some(n as u64),
        successful: Some(doc.completed.unwrap_or(successful)),
        failed: Some(doc.failed.unwrap_or(n as u64 - successful)),
        incomplete: None,
        duration_s: Some(doc.duration),
        request_throughput_per_s: num(&doc.request_throughput),
        goodput_per_s: goodput,
        output_tokens_per_s: num(&doc.output_throughput),
        ttft_ms: Quantiles {
            p50: num(&doc.median_ttft_ms),
            p99: num(&doc.p99_ttft_ms),
        },
        tpot_ms: Quantiles {
            p50: num(&doc.median_tpot_ms),
            p99: num(&doc.p99_tpot_ms),
        },
        e2e_ms: Quantiles {
            p50: num(&doc.median_e2el_ms),
            p99: num(&doc.p99_e2el_ms),
        },
        itl_ms: crate::model::Itl {
            mean: num(&doc.mean_itl_ms),
            p50: num(&doc.median_itl_ms),
            p99: num(&doc.p99_itl_ms),
        },
        itl_from: (doc.mean_itl_ms.is_some() || doc.median_itl_ms.is_some())
            .then(|| "mean_itl_ms, median_itl_ms, p99_itl_ms (every ITL of every successful request, pooled)".to_owned()),
        ttfa_ms: Quantiles::default(),
        percentile_method: "vLLM reports numpy.percentile (linear interpolation between the \
                            two nearest ranks; median = p50)"
            .into(),
        window_rule: window_rule.into(),
        one_token_rule: "vLLM counts their TPOT as 0 for request_goodput (so they pass its TPOT \
                         gate too) and leaves them out of its TPOT statistics"
            .into(),
        latency_population: format!(
            "vLLM's TTFT/TPOT/E2E statistics cover its successful requests; {e2e}"
        ),
        figures_from: "the result file's run fields (completed, failed, duration, \
                       request_throughput, request_goodput or request_goodput:, \
                       output_throughput, median_*_ms, p99_*_ms)"
            .into(),
        tool_gates: None,
        one_token_never_good: false,
        configured_rate: configured_rate(doc),
        client_tokens_from: None,
    }
}
