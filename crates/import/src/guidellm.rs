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

use crate::error::ImportError;
use crate::fidelity::{ConfiguredRate, Process};
use crate::json::{parse_typed, Within};
use crate::model::fmt_num;
use crate::model::{
    failure_reason, ms_since, non_negative, ImportOptions, Imported, Quantiles, Reported,
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
    /// The first non-reasoning token (guidellm 0.7.0 on).
    #[serde(default)]
    first_output_token_iteration: Option<f64>,
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
    #[serde(default)]
    time_to_first_output_token_ms: Option<ByStatus>,
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
    let selected = Selected::of(&doc, options.benchmark)?;
    let entries = selected.entries();
    let scheduled = all_scheduled(&entries);
    let arrivals = entries
        .iter()
        .map(|e| selected.arrival_s(e, scheduled))
        .collect::<Result<Vec<f64>, _>>()?;
    let t0 = arrivals
        .iter()
        .copied()
        .fold(selected.bench.start_time, f64::min);
    let mut seen = Seen {
        latest_s: selected.bench.end_time,
        delays_ms: Vec::new(),
    };
    let mut rows = entries
        .iter()
        .zip(&arrivals)
        .map(|(e, &arrival_s)| selected.map_row(e, arrival_s, t0, &mut seen))
        .collect::<Result<Vec<_>, _>>()?;
    // Time order reads best and does not depend on guidellm's grouping.
    rows.sort_by(|a, b| a.arrival_ms.total_cmp(&b.arrival_ms));
    let window = selected.window(t0, seen.latest_s)?;
    let version = doc
        .metadata
        .as_ref()
        .and_then(|m| m.guidellm_version.clone());
    let reported = selected.reported(version, entries.len(), scheduled, seen.delays_ms, &window);
    let trace = options.trace(
        window,
        None,
        selected.boundary(scheduled),
        selected.workload(),
        rows,
    );
    Ok(Imported {
        trace,
        reported,
        gaps: None,
        first_answers: selected.answers,
    })
}

/// Whether arrivals are the scheduled instants: every request (of at least
/// one) has a `targeted_start`.
fn all_scheduled(entries: &[Entry]) -> bool {
    !entries.is_empty()
        && entries
            .iter()
            .all(|e| e.request.info.timings.targeted_start.is_some())
}

/// The benchmark being imported, and where it sits in the file.
struct Selected<'a> {
    bench: &'a Benchmark,
    /// Its index in `benchmarks`.
    index: usize,
    /// How many benchmarks the file holds.
    count: usize,
    /// Its JSON pointer, `/benchmarks/<index>`.
    base: String,
    /// Some request has `first_output_token_iteration` (guidellm 0.7.0 on):
    /// completed rows then carry `firstAnswerMs`, and a completed request
    /// without it had no answer token. When none has it, no row carries one.
    answers: bool,
}

/// One request of the benchmark, with the list it was in.
struct Entry<'a> {
    kind: Kind,
    /// Its index in that list.
    i: usize,
    request: &'a Request,
}

/// What the rows show beside themselves, gathered while they are mapped.
struct Seen {
    /// The latest instant any request shows (and at least `end_time`), s.
    latest_s: f64,
    /// Each request's `request_start − targeted_start`, ms.
    delays_ms: Vec<f64>,
}

impl<'a> Selected<'a> {
    /// Benchmark `index` of the file; its start and end must be instants,
    /// the end after the start.
    fn of(doc: &'a Doc, index: usize) -> Result<Selected<'a>, ImportError> {
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
        let r = &bench.requests;
        let answers = [&r.successful, &r.incomplete, &r.errored]
            .into_iter()
            .flatten()
            .any(|q| q.info.timings.first_output_token_iteration.is_some());
        Ok(Selected {
            bench,
            index,
            count,
            base,
            answers,
        })
    }

    /// Every request: the successful, then the incomplete, then the errored.
    fn entries(&self) -> Vec<Entry<'a>> {
        let requests = &self.bench.requests;
        [
            (Kind::Successful, &requests.successful),
            (Kind::Incomplete, &requests.incomplete),
            (Kind::Errored, &requests.errored),
        ]
        .into_iter()
        .flat_map(|(kind, list)| {
            list.iter()
                .enumerate()
                .map(move |(i, request)| Entry { kind, i, request })
        })
        .collect()
    }

    /// The JSON pointer of a field of a request.
    fn place(&self, entry: &Entry, tail: &str) -> String {
        format!(
            "{}/requests/{}/{}{tail}",
            self.base,
            entry.kind.key(),
            entry.i
        )
    }

    /// An instant of `info.timings`, checked, when the request has it.
    fn timing(
        &self,
        entry: &Entry,
        field: &str,
        v: Option<f64>,
    ) -> Result<Option<f64>, ImportError> {
        v.map(|x| non_negative(x, self.place(entry, &format!("/info/timings/{field}"))))
            .transpose()
    }

    /// A request's arrival: `targeted_start` when every request has one
    /// (`scheduled`), else `request_start`; s.
    fn arrival_s(&self, entry: &Entry, scheduled: bool) -> Result<f64, ImportError> {
        let t = &entry.request.info.timings;
        let (value, field) = if scheduled {
            (t.targeted_start, "targeted_start")
        } else {
            (t.request_start, "request_start")
        };
        let place = self.place(entry, &format!("/info/timings/{field}"));
        let value = value.ok_or_else(|| {
            ImportError::at(
                place.clone(),
                "is missing: a request needs an arrival instant",
            )
        })?;
        non_negative(value, place)
    }

    /// One request → its trace row: successful → `completed` (or `failed` /
    /// `no_output`), incomplete → `in_flight`, errored → `failed` with a reason.
    fn map_row(
        &self,
        entry: &Entry,
        arrival_s: f64,
        t0: f64,
        seen: &mut Seen,
    ) -> Result<TraceRow, ImportError> {
        let r = entry.request;
        let t = &r.info.timings;
        let request_start = self.timing(entry, "request_start", t.request_start)?;
        let first = self.timing(entry, "first_token_iteration", t.first_token_iteration)?;
        let last = self.timing(entry, "last_token_iteration", t.last_token_iteration)?;
        let end = self.timing(entry, "request_end", t.request_end)?;
        let resolve_end = self.timing(entry, "resolve_end", t.resolve_end)?;
        for v in [request_start, first, last, end, resolve_end]
            .into_iter()
            .flatten()
        {
            seen.latest_s = seen.latest_s.max(v);
        }
        let mut labels = Labels::new();
        if let Some(p) = r.prompt_tokens {
            labels.insert("promptTokens".into(), Scalar::Number(p));
        }
        if let (Some(sent), Some(target)) = (request_start, t.targeted_start) {
            let delay = crate::model::round_us_pub((sent - target) * 1000.0);
            labels.insert("dispatchDelayMs".into(), Scalar::Number(delay));
            seen.delays_ms.push(delay);
        }
        let id = crate::model::source_id(r.request_id.as_deref())
            .unwrap_or_else(|| format!("b{}-{}-{}", self.index, entry.kind.key(), entry.i));
        let mut row = TraceRow {
            first_token_ms: first.map(|f| ms_since(f, t0)),
            ..TraceRow::new(id, ms_since(arrival_s, t0), RowStatus::Failed, labels)
        };
        match entry.kind {
            Kind::Successful => {
                let first = first.ok_or_else(|| {
                    ImportError::at(
                        self.place(entry, "/info/timings/first_token_iteration"),
                        "is missing on a successful request (run guidellm with streaming)",
                    )
                })?;
                let done = last.or(end).ok_or_else(|| {
                    ImportError::at(
                        self.place(entry, "/info/timings/last_token_iteration"),
                        "and request_end are both missing on a successful request",
                    )
                })?;
                let done_ms = ms_since(done.max(first), t0);
                self.complete_row(&mut row, entry, done_ms)?;
                self.answer_of(&mut row, entry, t0)?;
            }
            Kind::Incomplete => row.status = RowStatus::InFlight,
            Kind::Errored => {
                row.reason = Some(failure_reason(r.info.error.as_deref().unwrap_or("")));
                row.ended_ms = end.or(resolve_end).map(|e| ms_since(e.max(arrival_s), t0));
            }
        }
        Ok(row)
    }

    /// Fills the row of a successful request ending at `done_ms`:
    /// `completed` with its output count, or `no_output` without tokens.
    fn complete_row(
        &self,
        row: &mut TraceRow,
        entry: &Entry,
        done_ms: f64,
    ) -> Result<(), ImportError> {
        let tokens = entry.request.output_tokens.unwrap_or(0.0);
        if !(tokens.is_finite() && tokens >= 0.0 && tokens.fract() == 0.0) {
            return Err(ImportError::at(
                self.place(entry, "/output_tokens"),
                format!("{tokens} is not a whole number of tokens"),
            ));
        }
        if tokens < 1.0 {
            row.reason = Some("no_output".into());
            row.ended_ms = Some(done_ms);
        } else {
            row.status = RowStatus::Completed;
            row.completed_ms = Some(done_ms);
            row.output_tokens = Some(tokens as u64);
        }
        Ok(())
    }

    /// A completed row's `firstAnswerMs` = `first_output_token_iteration`,
    /// which must lie between its first token and its completion.
    fn answer_of(&self, row: &mut TraceRow, entry: &Entry, t0: f64) -> Result<(), ImportError> {
        let field = "first_output_token_iteration";
        let t = &entry.request.info.timings;
        let (true, RowStatus::Completed) = (self.answers, row.status) else {
            return Ok(());
        };
        let Some(answer_s) = self.timing(entry, field, t.first_output_token_iteration)? else {
            return Ok(());
        };
        let answer = ms_since(answer_s, t0);
        let (Some(first), Some(done)) = (row.first_token_ms, row.completed_ms) else {
            return Ok(());
        };
        if answer < first || answer > done {
            return Err(ImportError::at(
                self.place(entry, &format!("/info/timings/{field}")),
                "is not between first_token_iteration and the last token",
            ));
        }
        row.first_answer_ms = Some(answer);
        Ok(())
    }

    /// `[min(start_time, first arrival), end_time)`, ms since t0, at most a
    /// day; the horizon is the latest instant any request shows.
    fn window(&self, t0: f64, latest_s: f64) -> Result<Window, ImportError> {
        let start_ms = ms_since(self.bench.start_time.min(t0), t0);
        let end_ms = ms_since(self.bench.end_time, t0);
        if end_ms - start_ms > MAX_SPAN_MS {
            return Err(ImportError::at(
                format!("{}/end_time", self.base),
                "is more than a day after start_time (the trace limit)",
            ));
        }
        let horizon_ms = ms_since(latest_s, t0)
            .max(end_ms)
            .min(start_ms + MAX_SPAN_MS);
        Ok(Window {
            start_ms,
            end_ms,
            horizon_ms: Some(horizon_ms),
        })
    }

    /// What arrivals are (scheduled or sent), and where counts came from.
    fn boundary(&self, scheduled: bool) -> Labels {
        let arrival = if scheduled { "scheduled" } else { "sent" };
        crate::model::boundary_labels(
            arrival,
            "guidellm-output-tokens",
            "guidellm benchmarks.json",
        )
    }

    /// The tool, which benchmark of how many, and its warm-up and cool-down.
    fn workload(&self) -> Labels {
        let mut workload = Labels::new();
        workload.insert("tool".into(), Scalar::String("guidellm".into()));
        workload.insert("benchmark".into(), Scalar::Number(self.index as f64));
        workload.insert("benchmarks".into(), Scalar::Number(self.count as f64));
        for (key, v) in [
            ("warmupDurationS", self.bench.warmup_duration),
            ("cooldownDurationS", self.bench.cooldown_duration),
        ] {
            if let Some(v) = v.filter(|v| v.is_finite()) {
                workload.insert(key.into(), Scalar::Number(v));
            }
        }
        workload
    }

    /// guidellm's figures from the benchmark's metrics (counts from its
    /// request lists when it has no totals), and its rules.
    fn reported(
        &self,
        version: Option<String>,
        requests: usize,
        scheduled: bool,
        delays_ms: Vec<f64>,
        window: &Window,
    ) -> Reported {
        let bench = self.bench;
        let metrics = bench.metrics.as_ref();
        let totals = metrics.and_then(|m| m.request_totals.as_ref());
        let duration_s = bench.duration.unwrap_or(bench.end_time - bench.start_time);
        let window_s = (window.end_ms - window.start_ms) / 1000.0;
        Reported {
            tool: "guidellm".into(),
            version,
            requests: totals.and_then(|t| t.total).or(Some(requests as u64)),
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
            // guidellm keeps no per-token times and no pooled ITL (its
            // inter_token_latency_ms is per request, shown as TPOT).
            itl_ms: crate::model::Itl::default(),
            itl_from: None,
            ttfa_ms: metrics.map_or_else(Quantiles::default, |m| {
                quantiles(&m.time_to_first_output_token_ms, 1.0)
            }),
            percentile_method: "guidellm takes the first value whose cumulative share reaches p \
                                (nearest rank, like goodput; differences come from the \
                                population and the arrival instant)"
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
            latency_population: latency_population(scheduled, delays_ms),
            figures_from: "the benchmark's metrics (request_totals, requests_per_second, \
                           output_tokens_per_second means; time_to_first_token_ms, \
                           inter_token_latency_ms, request_latency percentiles of successful \
                           requests)"
                .into(),
            tool_gates: None,
            one_token_never_good: false,
            configured_rate: configured_rate(bench, &self.base),
            client_tokens_from: None,
        }
    }
}

/// Which requests guidellm's latency figures cover, and from which instant
/// they are timed beside goodput's (with the dispatch delays when arrivals
/// are scheduled).
fn latency_population(scheduled: bool, mut delays_ms: Vec<f64>) -> String {
    if !scheduled {
        return "guidellm's statistics cover its successful requests; guidellm's TPOT includes \
                the first token, so its inter-token latency is shown as TPOT"
            .into();
    }
    let dispatch_note = if delays_ms.is_empty() {
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
    format!(
        "guidellm's statistics cover its successful requests and time TTFT and latency from \
         request_start (the send); goodput times them from targeted_start (the scheduled \
         arrival), so they include the client's dispatch delay{dispatch_note}; guidellm's E2E \
         ends at request_end, goodput's at the last token; guidellm's TPOT includes the first \
         token, so its inter-token latency is shown as TPOT"
    )
}
