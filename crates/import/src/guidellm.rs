//! guidellm `benchmarks.json` → trace (one benchmark per trace).
//!
//! `benchmarks[i].requests.{successful, incomplete, errored}[]`, each with
//! `info.timings.{targeted_start, request_start, first_token_iteration,
//! last_token_iteration, request_end}` (epoch seconds), `info.error`,
//! `prompt_tokens`, `output_tokens`; per benchmark `start_time`, `end_time`,
//! `duration` and `metrics` (distributions by status).
//!
//! Mapping:
//! - `arrivalMs` = `targeted_start` (the scheduled instant) when every
//!   request has one — `boundary.arrival = "scheduled"` — else
//!   `request_start` for all rows (`"sent"`). The dispatch delay
//!   (`request_start − targeted_start`) is the row label `dispatchDelayMs`:
//!   goodput's TTFT and E2E include it, guidellm's do not.
//! - `firstTokenMs` = `first_token_iteration`; `completedMs` =
//!   `last_token_iteration` (the final model token; `request_end` when
//!   absent), so goodput's TPOT is guidellm's inter-token latency.
//! - successful → `completed`; incomplete → `in_flight` (guidellm stopped
//!   before they finished: their outcome is unknown, so they are censored,
//!   not failed); errored → `failed` with a reason from `info.error`.
//! - t0 = the earliest of the benchmark's `start_time` and the arrivals;
//!   window = `[min(start_time, first arrival), end_time)` — guidellm's
//!   benchmark starts at its first actual send, and a scheduled arrival may
//!   precede it; horizon = the latest instant any request shows.

use serde::Deserialize;

use crate::fidelity::{ConfiguredRate, Process};
use crate::json::{parse_typed, Within};
use crate::{
    failure_reason, fmt_num, ms_since, non_negative, ImportError, ImportOptions, Imported,
    Quantiles, Reported,
};
use goodput_core::trace::model::MAX_SPAN_MS;
use goodput_core::trace::write::{RowStatus, TraceRow};
use goodput_core::trace::{Labels, Scalar, Window};

#[derive(Debug, Deserialize)]
struct Doc {
    #[serde(default)]
    metadata: Option<Metadata>,
    benchmarks: Vec<Benchmark>,
}

#[derive(Debug, Deserialize)]
struct Metadata {
    #[serde(default)]
    guidellm_version: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Benchmark {
    start_time: f64,
    end_time: f64,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    warmup_duration: Option<f64>,
    #[serde(default)]
    cooldown_duration: Option<f64>,
    #[serde(default)]
    metrics: Option<Metrics>,
    #[serde(default)]
    config: Option<BenchConfig>,
    requests: Requests,
}

/// The part of a benchmark's `config` that names its load.
#[derive(Debug, Deserialize)]
struct BenchConfig {
    #[serde(default)]
    strategy: Option<Strategy>,
}

/// `config.strategy`: `type_` (`synchronous`, `concurrent`, `throughput`,
/// `constant`, `poisson`) and, for the last two, `rate` (requests per second).
#[derive(Debug, Deserialize)]
struct Strategy {
    #[serde(default)]
    type_: Option<String>,
    #[serde(default)]
    rate: Option<f64>,
}

/// The configured rate of a `constant` or `poisson` profile; other profiles
/// (closed loops, throughput) name none.
fn configured_rate(bench: &Benchmark, base: &str) -> Option<ConfiguredRate> {
    let strategy = bench.config.as_ref()?.strategy.as_ref()?;
    let process = match strategy.type_.as_deref()? {
        "poisson" => Process::Poisson,
        "constant" => Process::Constant,
        _ => return None,
    };
    let per_s = strategy.rate.filter(|r| r.is_finite() && *r > 0.0)?;
    Some(ConfiguredRate {
        per_s,
        process,
        from: format!(
            "{base}/config/strategy: {}, rate {}",
            strategy.type_.as_deref().unwrap_or(""),
            fmt_num(per_s)
        ),
    })
}

#[derive(Debug, Deserialize)]
struct Requests {
    #[serde(default)]
    successful: Vec<Request>,
    #[serde(default)]
    incomplete: Vec<Request>,
    #[serde(default)]
    errored: Vec<Request>,
}

#[derive(Debug, Deserialize)]
struct Request {
    #[serde(default)]
    request_id: Option<String>,
    info: Info,
    #[serde(default)]
    prompt_tokens: Option<f64>,
    #[serde(default)]
    output_tokens: Option<f64>,
}

#[derive(Debug, Deserialize)]
struct Info {
    timings: Timings,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Timings {
    #[serde(default)]
    targeted_start: Option<f64>,
    #[serde(default)]
    request_start: Option<f64>,
    #[serde(default)]
    first_token_iteration: Option<f64>,
    #[serde(default)]
    last_token_iteration: Option<f64>,
    #[serde(default)]
    request_end: Option<f64>,
    #[serde(default)]
    resolve_end: Option<f64>,
}

#[derive(Debug, Default, Deserialize)]
struct Metrics {
    #[serde(default)]
    request_totals: Option<Totals>,
    #[serde(default)]
    requests_per_second: Option<ByStatus>,
    #[serde(default)]
    request_latency: Option<ByStatus>,
    #[serde(default)]
    time_to_first_token_ms: Option<ByStatus>,
    #[serde(default)]
    inter_token_latency_ms: Option<ByStatus>,
    #[serde(default)]
    output_tokens_per_second: Option<ByStatus>,
}

#[derive(Debug, Deserialize)]
struct Totals {
    #[serde(default)]
    successful: Option<u64>,
    #[serde(default)]
    errored: Option<u64>,
    #[serde(default)]
    incomplete: Option<u64>,
    #[serde(default)]
    total: Option<u64>,
}

#[derive(Debug, Deserialize)]
struct ByStatus {
    #[serde(default)]
    successful: Option<Distribution>,
}

#[derive(Debug, Deserialize)]
struct Distribution {
    #[serde(default)]
    mean: Option<f64>,
    #[serde(default)]
    percentiles: Option<Percentiles>,
}

#[derive(Debug, Deserialize)]
struct Percentiles {
    #[serde(default)]
    p50: Option<f64>,
    #[serde(default)]
    p99: Option<f64>,
}

fn quantiles(d: &Option<ByStatus>, scale: f64) -> Quantiles {
    let p = d
        .as_ref()
        .and_then(|b| b.successful.as_ref())
        .and_then(|s| s.percentiles.as_ref());
    Quantiles {
        p50: p.and_then(|p| p.p50).map(|v| v * scale),
        p99: p.and_then(|p| p.p99).map(|v| v * scale),
    }
}

fn mean(d: &Option<ByStatus>) -> Option<f64> {
    d.as_ref()
        .and_then(|b| b.successful.as_ref())
        .and_then(|s| s.mean)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Successful,
    Incomplete,
    Errored,
}

impl Kind {
    fn key(self) -> &'static str {
        match self {
            Kind::Successful => "successful",
            Kind::Incomplete => "incomplete",
            Kind::Errored => "errored",
        }
    }
}

/// Imports one benchmark (`options.benchmark`) of a guidellm `benchmarks.json`.
pub fn import(bytes: &[u8], options: &ImportOptions) -> Result<Imported, ImportError> {
    let doc: Doc = parse_typed(bytes, Within::Document)?;
    let index = options.benchmark;
    let count = doc.benchmarks.len();
    let Some(bench) = doc.benchmarks.get(index) else {
        return Err(ImportError::at(
            "/benchmarks",
            format!("has {count} benchmark(s); --benchmark {index} names none"),
        ));
    };
    let base = format!("/benchmarks/{index}");
    non_negative(bench.start_time, format!("{base}/start_time"))?;
    non_negative(bench.end_time, format!("{base}/end_time"))?;
    if bench.end_time <= bench.start_time {
        return Err(ImportError::at(
            format!("{base}/end_time"),
            "must be after start_time",
        ));
    }

    let all: Vec<(Kind, usize, &Request)> = [
        (Kind::Successful, &bench.requests.successful),
        (Kind::Incomplete, &bench.requests.incomplete),
        (Kind::Errored, &bench.requests.errored),
    ]
    .into_iter()
    .flat_map(|(kind, list)| list.iter().enumerate().map(move |(i, r)| (kind, i, r)))
    .collect();
    let scheduled = !all.is_empty()
        && all
            .iter()
            .all(|(_, _, r)| r.info.timings.targeted_start.is_some());
    let place =
        |kind: Kind, i: usize, tail: &str| format!("{base}/requests/{}/{i}{tail}", kind.key());

    // Arrival of each request, checked.
    let mut arrivals = Vec::with_capacity(all.len());
    for &(kind, i, r) in &all {
        let t = &r.info.timings;
        let (value, field) = if scheduled {
            (t.targeted_start, "targeted_start")
        } else {
            (t.request_start, "request_start")
        };
        let value = value.ok_or_else(|| {
            ImportError::at(
                place(kind, i, &format!("/info/timings/{field}")),
                "is missing: a request needs an arrival instant",
            )
        })?;
        arrivals.push(non_negative(
            value,
            place(kind, i, &format!("/info/timings/{field}")),
        )?);
    }
    let t0 = arrivals.iter().copied().fold(bench.start_time, f64::min);

    let mut rows = Vec::with_capacity(all.len());
    let mut latest_s = bench.end_time;
    let mut delays_ms = Vec::new();
    for (&(kind, i, r), &arrival_s) in all.iter().zip(&arrivals) {
        let t = &r.info.timings;
        let at = |field: &str, v: Option<f64>| -> Result<Option<f64>, ImportError> {
            v.map(|x| non_negative(x, place(kind, i, &format!("/info/timings/{field}"))))
                .transpose()
        };
        let request_start = at("request_start", t.request_start)?;
        let first = at("first_token_iteration", t.first_token_iteration)?;
        let last = at("last_token_iteration", t.last_token_iteration)?;
        let end = at("request_end", t.request_end)?;
        let resolve_end = at("resolve_end", t.resolve_end)?;
        for v in [request_start, first, last, end, resolve_end]
            .into_iter()
            .flatten()
        {
            latest_s = latest_s.max(v);
        }
        let mut labels = Labels::new();
        if let Some(p) = r.prompt_tokens {
            labels.insert("promptTokens".into(), Scalar::Number(p));
        }
        if let (Some(sent), Some(target)) = (request_start, t.targeted_start) {
            let delay = crate::round_us_pub((sent - target) * 1000.0);
            labels.insert("dispatchDelayMs".into(), Scalar::Number(delay));
            delays_ms.push(delay);
        }
        let id = match &r.request_id {
            Some(x) if !x.is_empty() && x.chars().count() <= 128 => x.clone(),
            _ => format!("b{index}-{}-{i}", kind.key()),
        };
        let mut row = TraceRow {
            first_token_ms: first.map(|f| ms_since(f, t0)),
            ..TraceRow::new(id, ms_since(arrival_s, t0), RowStatus::Failed, labels)
        };
        match kind {
            Kind::Successful => {
                let first = first.ok_or_else(|| {
                    ImportError::at(
                        place(kind, i, "/info/timings/first_token_iteration"),
                        "is missing on a successful request (run guidellm with streaming)",
                    )
                })?;
                let done = last.or(end).ok_or_else(|| {
                    ImportError::at(
                        place(kind, i, "/info/timings/last_token_iteration"),
                        "and request_end are both missing on a successful request",
                    )
                })?;
                let tokens = r.output_tokens.unwrap_or(0.0);
                if !(tokens.is_finite() && tokens >= 0.0 && tokens.fract() == 0.0) {
                    return Err(ImportError::at(
                        place(kind, i, "/output_tokens"),
                        format!("{tokens} is not a whole number of tokens"),
                    ));
                }
                if tokens < 1.0 {
                    row.reason = Some("no_output".into());
                    row.ended_ms = Some(ms_since(done.max(first), t0));
                } else {
                    row.status = RowStatus::Completed;
                    row.completed_ms = Some(ms_since(done.max(first), t0));
                    row.output_tokens = Some(tokens as u64);
                }
            }
            Kind::Incomplete => row.status = RowStatus::InFlight,
            Kind::Errored => {
                row.reason = Some(failure_reason(r.info.error.as_deref().unwrap_or("")));
                row.ended_ms = end.or(resolve_end).map(|e| ms_since(e.max(arrival_s), t0));
            }
        }
        rows.push(row);
    }
    // Time order reads best and does not depend on guidellm's grouping.
    rows.sort_by(|a, b| a.arrival_ms.total_cmp(&b.arrival_ms));

    let start_ms = ms_since(bench.start_time.min(t0), t0);
    let end_ms = ms_since(bench.end_time, t0);
    if end_ms - start_ms > MAX_SPAN_MS {
        return Err(ImportError::at(
            format!("{base}/end_time"),
            "is more than a day after start_time (the trace limit)",
        ));
    }
    let horizon_ms = ms_since(latest_s, t0)
        .max(end_ms)
        .min(start_ms + MAX_SPAN_MS);
    let mut boundary = Labels::new();
    let arrival = if scheduled { "scheduled" } else { "sent" };
    boundary.insert("arrival".into(), Scalar::String(arrival.into()));
    boundary.insert(
        "tokens".into(),
        Scalar::String("guidellm-output-tokens".into()),
    );
    boundary.insert(
        "source".into(),
        Scalar::String("guidellm benchmarks.json".into()),
    );
    let mut workload = Labels::new();
    workload.insert("tool".into(), Scalar::String("guidellm".into()));
    workload.insert("benchmark".into(), Scalar::Number(index as f64));
    workload.insert("benchmarks".into(), Scalar::Number(count as f64));
    for (key, v) in [
        ("warmupDurationS", bench.warmup_duration),
        ("cooldownDurationS", bench.cooldown_duration),
    ] {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            workload.insert(key.into(), Scalar::Number(v));
        }
    }

    let metrics = bench.metrics.as_ref();
    let totals = metrics.and_then(|m| m.request_totals.as_ref());
    let dispatch_note = if delays_ms.is_empty() || !scheduled {
        String::new()
    } else {
        delays_ms.sort_by(f64::total_cmp);
        let rank = delays_ms.len().div_ceil(2);
        format!(
            " (request_start − targeted_start: median {} ms, max {} ms)",
            fmt_num(delays_ms[rank - 1]),
            fmt_num(delays_ms[delays_ms.len() - 1])
        )
    };
    let duration_s = bench.duration.unwrap_or(bench.end_time - bench.start_time);
    let window_s = (end_ms - start_ms) / 1000.0;
    let reported = Reported {
        tool: "guidellm".into(),
        version: doc.metadata.and_then(|m| m.guidellm_version),
        requests: totals.and_then(|t| t.total).or(Some(all.len() as u64)),
        successful: totals
            .and_then(|t| t.successful)
            .or(Some(bench.requests.successful.len() as u64)),
        failed: totals
            .and_then(|t| t.errored)
            .or(Some(bench.requests.errored.len() as u64)),
        incomplete: totals
            .and_then(|t| t.incomplete)
            .or(Some(bench.requests.incomplete.len() as u64)),
        duration_s: Some(duration_s),
        request_throughput_per_s: metrics.and_then(|m| mean(&m.requests_per_second)),
        goodput_per_s: None,
        output_tokens_per_s: metrics.and_then(|m| mean(&m.output_tokens_per_second)),
        ttft_ms: metrics.map_or_else(Quantiles::default, |m| {
            quantiles(&m.time_to_first_token_ms, 1.0)
        }),
        tpot_ms: metrics.map_or_else(Quantiles::default, |m| {
            quantiles(&m.inter_token_latency_ms, 1.0)
        }),
        e2e_ms: metrics.map_or_else(Quantiles::default, |m| {
            quantiles(&m.request_latency, 1000.0)
        }),
        percentile_method: "guidellm takes the first value whose cumulative share reaches p \
                            (nearest rank, like goodput; differences come from the population \
                            and the arrival instant)"
            .into(),
        window_rule: format!(
            "guidellm's benchmark runs from start_time (its first actual send) to end_time, \
             {} s; the trace's window opens at the earlier of start_time and the first \
             scheduled arrival, {} s in all; guidellm's requests/s is a time-averaged rate \
             distribution, not a count over the window",
            fmt_num(duration_s),
            fmt_num(window_s)
        ),
        one_token_rule: "guidellm gives them no inter-token latency either".into(),
        latency_population: if scheduled {
            format!(
                "guidellm's statistics cover its successful requests and time TTFT and latency \
                 from request_start (the send); goodput times them from targeted_start (the \
                 scheduled arrival), so they include the client's dispatch delay{dispatch_note}; \
                 guidellm's E2E ends at request_end, goodput's at the last token; guidellm's \
                 TPOT includes the first token, so its inter-token latency is shown as TPOT"
            )
        } else {
            "guidellm's statistics cover its successful requests; guidellm's TPOT includes the \
             first token, so its inter-token latency is shown as TPOT"
                .into()
        },
        figures_from: "the benchmark's metrics (request_totals, requests_per_second, \
                       output_tokens_per_second means; time_to_first_token_ms, \
                       inter_token_latency_ms, request_latency percentiles of successful \
                       requests)"
            .into(),
        tool_gates: None,
        one_token_never_good: false,
        configured_rate: configured_rate(bench, &base),
        client_tokens_from: None,
    };
    let trace = options.trace(
        Window {
            start_ms,
            end_ms,
            horizon_ms: Some(horizon_ms),
        },
        None,
        boundary,
        workload,
        rows,
    );
    Ok(Imported { trace, reported })
}
