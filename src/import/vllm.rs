//! `vllm bench serve --save-result --save-detailed` result JSON → trace.
//!
//! Per-request arrays (all the same length, one entry per request in send
//! order): `start_times` (perf_counter s, the actual send), `ttfts` (s),
//! `itls` (lists of s), `latencies` or `e2els` (s; when absent E2E =
//! ttft + Σ itls), `output_lens`, `input_lens`, `errors` (`""` or null =
//! success). Run fields: `duration`, `request_rate`, `burstiness`,
//! `max_concurrency`, `request_goodput` and the aggregate statistics.
//!
//! Mapping: t0 = the first send; `arrivalMs` = send − t0 (vLLM records the
//! actual send, so `boundary.arrival = "sent"`); window = `[0, duration)` —
//! vLLM's clock starts just before the first send and stops after the last
//! response, so every request lies inside it and the window length is vLLM's
//! own throughput denominator. A failed request becomes a `failed` row with a
//! short reason from its error text; a "successful" request with zero output
//! tokens becomes `failed` / `no_output` (the contract needs ≥ 1 token).

use serde::Deserialize;

use super::fidelity::{ConfiguredRate, Process};
use super::json::{parse_typed, python_literals_to_json, Within};
use super::{
    failure_reason, fmt_num, ms_since, non_negative, ImportError, ImportOptions, Imported,
    Quantiles, Reported,
};
use crate::trace::model::MAX_SPAN_MS;
use crate::trace::write::{round_us, RowStatus, TraceRow};
use crate::trace::{Labels, Scalar, Window};

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
    #[serde(default)]
    request_goodput: Option<Loose>,
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
    start_times: Vec<f64>,
    ttfts: Vec<Option<f64>>,
    itls: Vec<Vec<f64>>,
    #[serde(default, alias = "e2els")]
    latencies: Option<Vec<Option<f64>>>,
    output_lens: Vec<u64>,
    #[serde(default)]
    input_lens: Option<Vec<u64>>,
    errors: Vec<Option<String>>,
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

/// Imports a vLLM result file (see the module docs for the mapping).
pub fn import(bytes: &[u8], options: &ImportOptions) -> Result<Imported, ImportError> {
    let fixed = python_literals_to_json(bytes);
    let doc: VllmResult = parse_typed(&fixed, Within::Document)?;
    let n = doc.start_times.len();
    let check_len = |name: &str, len: usize| {
        if len == n {
            Ok(())
        } else {
            Err(ImportError::at(
                format!("/{name}"),
                format!("has {len} entries but /start_times has {n} (one per request)"),
            ))
        }
    };
    check_len("ttfts", doc.ttfts.len())?;
    check_len("itls", doc.itls.len())?;
    check_len("output_lens", doc.output_lens.len())?;
    check_len("errors", doc.errors.len())?;
    if let Some(l) = &doc.latencies {
        check_len("latencies", l.len())?;
    }
    if let Some(l) = &doc.input_lens {
        check_len("input_lens", l.len())?;
    }
    if !(doc.duration.is_finite() && doc.duration > 0.0 && doc.duration * 1000.0 <= MAX_SPAN_MS) {
        return Err(ImportError::at(
            "/duration",
            format!(
                "must be a number of seconds > 0 and at most a day, not {}",
                doc.duration
            ),
        ));
    }
    for (i, &s) in doc.start_times.iter().enumerate() {
        non_negative(s, format!("/start_times/{i}"))?;
    }
    let t0 = doc
        .start_times
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);

    let mut rows = Vec::with_capacity(n);
    let mut latest_ms: f64 = 0.0;
    let mut successful = 0u64;
    for i in 0..n {
        let arrival_ms = ms_since(doc.start_times[i], t0);
        let mut labels = Labels::new();
        if let Some(lens) = &doc.input_lens {
            labels.insert("promptTokens".into(), Scalar::Number(lens[i] as f64));
        }
        let mut row = TraceRow::new(format!("r{i}"), arrival_ms, RowStatus::Failed, labels);
        let error = doc.errors[i].as_deref().unwrap_or("");
        if !error.is_empty() {
            row.reason = Some(failure_reason(error));
            rows.push(row);
            continue;
        }
        successful += 1;
        let ttft_s = match doc.ttfts[i] {
            Some(x) => non_negative(x, format!("/ttfts/{i}"))?,
            None => {
                return Err(ImportError::at(
                    format!("/ttfts/{i}"),
                    "is null on a successful request",
                ))
            }
        };
        let e2e_s = match doc.latencies.as_ref().map(|l| l[i]) {
            Some(Some(x)) => non_negative(x, format!("/latencies/{i}"))?,
            Some(None) => {
                return Err(ImportError::at(
                    format!("/latencies/{i}"),
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
                format!("/latencies/{i}"),
                format!("{e2e_s} s is shorter than the request's TTFT of {ttft_s} s"),
            ));
        }
        // Latencies are added to the rounded arrival so TTFT and E2E in the
        // trace are vLLM's own values (to the microsecond), not differences
        // of two independently rounded instants.
        let first = round_us(arrival_ms + round_us(ttft_s * 1000.0));
        let done = round_us(arrival_ms + round_us(e2e_s * 1000.0)).max(first);
        latest_ms = latest_ms.max(done);
        if doc.output_lens[i] == 0 {
            row.reason = Some("no_output".into());
            row.first_token_ms = Some(first);
            row.ended_ms = Some(done);
            rows.push(row);
            continue;
        }
        row.status = RowStatus::Completed;
        row.first_token_ms = Some(first);
        row.completed_ms = Some(done);
        row.output_tokens = Some(doc.output_lens[i]);
        rows.push(row);
    }

    let end_ms = round_us(doc.duration * 1000.0);
    let mut boundary = Labels::new();
    boundary.insert("arrival".into(), Scalar::String("sent".into()));
    // vLLM's output_lens are the server's usage.completion_tokens when the
    // stream carried usage (vLLM asks for it), else its own tokenizer's count;
    // the file does not say which, so the boundary names the field.
    boundary.insert("tokens".into(), Scalar::String("vllm output_lens".into()));
    boundary.insert("source".into(), Scalar::String("vllm bench serve".into()));
    let mut workload = Labels::new();
    workload.insert("tool".into(), Scalar::String("vllm bench serve".into()));
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

    let trace = options.trace(
        Window {
            start_ms: 0.0,
            end_ms,
            horizon_ms: Some(end_ms.max(latest_ms)),
        },
        None,
        boundary,
        workload,
        rows,
    );
    let reported = Reported {
        tool: "vllm".into(),
        version: None,
        requests: Some(n as u64),
        successful: Some(doc.completed.unwrap_or(successful)),
        failed: Some(doc.failed.unwrap_or(n as u64 - successful)),
        incomplete: None,
        duration_s: Some(doc.duration),
        request_throughput_per_s: num(&doc.request_throughput),
        goodput_per_s: num(&doc.request_goodput),
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
        percentile_method: "vLLM reports numpy.percentile (linear interpolation between the \
                            two nearest ranks; median = p50)"
            .into(),
        window_rule: "vLLM divides by `duration`, from just before its first send to its last \
                      response; the trace's window is [first send, first send + duration), the \
                      same length"
            .into(),
        one_token_rule: "vLLM counts their TPOT as 0 for request_goodput (so they pass its TPOT \
                         gate too) and leaves them out of its TPOT statistics"
            .into(),
        latency_population: "vLLM's TTFT/TPOT/E2E statistics cover its successful requests".into(),
        figures_from: "the result file's run fields (completed, failed, duration, \
                       request_throughput, request_goodput, output_throughput, median_*_ms, \
                       p99_*_ms)"
            .into(),
        tool_gates: None,
        one_token_never_good: false,
        configured_rate: configured_rate(&doc),
        client_tokens_from: None,
    };
    Ok(Imported { trace, reported })
}
