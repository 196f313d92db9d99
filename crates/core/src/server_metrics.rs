//! Server metrics beside the trace: what `record --metrics` leaves in its
//! sidecar (`TRACE.metrics.jsonl`, one snapshot per line, timestamps on the
//! trace's clock) and how a Prometheus page becomes one snapshot. Pure: the
//! scraping itself (HTTP, timers) is the recorder's (`goodput_record::scrape`);
//! the report and the summary read the sidecar through here.
//!
//! - **Parsing** ([`parse_exposition`]): the Prometheus text exposition
//!   format, a line at a time: `# HELP`/`# TYPE`/comments and blank lines
//!   are skipped; a sample is `name{label="value",…} value [timestamp]`.
//!   A malformed line rejects the scrape with its line number (the scrape is
//!   then a gap).
//! - **Mapping** ([`Mapped::from_samples`]): vLLM
//!   `vllm:num_requests_waiting` → `waiting`, `vllm:num_requests_running`
//!   → `running`, `vllm:kv_cache_usage_perc` (or the older
//!   `vllm:gpu_cache_usage_perc`; both a fraction 0–1) → `kvUsage`,
//!   `vllm:num_preemptions_total` (or `vllm:num_preemptions`) →
//!   `preemptions`; llama.cpp `llamacpp:requests_deferred` → `waiting`,
//!   `llamacpp:requests_processing` → `running`,
//!   `llamacpp:kv_cache_usage_ratio` → `kvUsage`. `goodput sim` serves
//!   vLLM's names. A server with several engines (data parallelism) exposes
//!   one series per engine, told apart by labels: counts (waiting, running,
//!   preemptions) add up across them, so they are summed over label sets;
//!   a ratio does not (two engines at 60 % are not a cache 120 % full), so
//!   `kvUsage` is the mean over label sets and `kvUsageMax` the fullest
//!   one, the figure that says whether any engine ran out of cache.
//!   Every series is also kept raw ([`MetricsLine::snapshot_bounded`]:
//!   the recorder bounds how many per scrape and redacts their keys).
//! - **Older sidecars** (written before `kvUsageMax`, when `kvUsage` was a
//!   sum) still read: their ratio is recomputed from the `raw` series kept
//!   beside it, and without those, `kvUsage` stands for both.
//! - **The sidecar** ([`sidecar_bytes`], [`parse_sidecar`]): one
//!   [`MetricsLine`] a line; a failed scrape is a line with `error` (a gap).
//! - **Peaks** ([`peaks`]): the largest queue, running count and KV use seen
//!   (of the fullest engine, with the largest mean across engines beside it).
//! - **Plausibility** ([`Implausible`]): a count (`waiting`, `running`,
//!   `preemptions`) that is negative, not whole or above
//!   [`MAX_PLAUSIBLE_COUNT`], or a KV use outside 0–1, is no server's
//!   figure: reading the sidecar sets it aside (the line is marked, the
//!   file is left as the server's word), so peaks and panels never show it,
//!   and the renderers name it "implausible (…)" instead.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One sample of the exposition format.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Metric name.
    pub name: String,
    /// Labels, by name.
    pub labels: BTreeMap<String, String>,
    /// Value (may be NaN or ±Inf, as the format allows).
    pub value: f64,
}

/// A line the parser could not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("metrics line {line}: {reason}")]
pub struct ExpositionError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub reason: SampleError,
}

/// What is wrong with one sample line of the exposition format.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SampleError {
    /// The line does not start with a metric name.
    #[error("a sample must start with a metric name")]
    NoName,
    /// The metric has no value.
    #[error("`{name}` has no value")]
    NoValue {
        /// The metric's name.
        name: String,
    },
    /// The value is not a number.
    #[error("`{value}` is not a number")]
    NotANumber {
        /// The value as written.
        value: String,
    },
    /// The timestamp is not an integer.
    #[error("`{timestamp}` is not a timestamp")]
    NotATimestamp {
        /// The timestamp as written.
        timestamp: String,
    },
    /// Something follows the timestamp.
    #[error("unexpected text after the timestamp")]
    TrailingText,
    /// A label without a name.
    #[error("a label must have a name")]
    UnnamedLabel,
    /// A label name not followed by `="`.
    #[error("label `{key}` must be followed by =\"…\"")]
    NoLabelValue {
        /// The label's name.
        key: String,
    },
    /// A label value without its closing quote.
    #[error("label `{key}`: unterminated value")]
    UnterminatedLabel {
        /// The label's name.
        key: String,
    },
}

fn is_name_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// Parses the text exposition format (module docs give the grammar read).
pub fn parse_exposition(text: &str) -> Result<Vec<Sample>, ExpositionError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let sample = parse_sample(line).map_err(|reason| ExpositionError {
            line: i + 1,
            reason,
        })?;
        out.push(sample);
    }
    Ok(out)
}

fn parse_sample(line: &str) -> Result<Sample, SampleError> {
    let end = line
        .char_indices()
        .find(|&(_, c)| !is_name_char(c))
        .map_or(line.len(), |(i, _)| i);
    let name = &line[..end];
    if !name.chars().next().is_some_and(is_name_start) {
        return Err(SampleError::NoName);
    }
    let mut rest = &line[end..];
    let mut labels = BTreeMap::new();
    if let Some(after) = rest.strip_prefix('{') {
        rest = parse_labels(after, &mut labels)?;
    }
    let mut fields = rest.split_whitespace();
    let value = fields.next().ok_or_else(|| SampleError::NoValue {
        name: name.to_owned(),
    })?;
    let value = parse_value(value).ok_or_else(|| SampleError::NotANumber {
        value: value.to_owned(),
    })?;
    if let Some(ts) = fields.next() {
        ts.parse::<i64>().map_err(|_| SampleError::NotATimestamp {
            timestamp: ts.to_owned(),
        })?;
    }
    if fields.next().is_some() {
        return Err(SampleError::TrailingText);
    }
    Ok(Sample {
        name: name.to_owned(),
        labels,
        value,
    })
}

/// Reads `name="value",…}`; returns what follows the closing brace.
fn parse_labels<'a>(
    mut rest: &'a str,
    labels: &mut BTreeMap<String, String>,
) -> Result<&'a str, SampleError> {
    loop {
        rest = rest.trim_start();
        if let Some(after) = rest.strip_prefix('}') {
            return Ok(after);
        }
        let end = rest
            .char_indices()
            .find(|&(_, c)| !is_name_char(c))
            .map_or(rest.len(), |(i, _)| i);
        let key = &rest[..end];
        if key.is_empty() {
            return Err(SampleError::UnnamedLabel);
        }
        rest = rest[end..].trim_start();
        rest = rest
            .strip_prefix("=\"")
            .ok_or_else(|| SampleError::NoLabelValue {
                key: key.to_owned(),
            })?;
        let mut value = String::new();
        let mut chars = rest.char_indices();
        let close = loop {
            match chars.next() {
                None => return Err(unterminated(key)),
                Some((i, '"')) => break i,
                Some((_, '\\')) => match chars.next() {
                    Some((_, 'n')) => value.push('\n'),
                    Some((_, c)) => value.push(c),
                    None => return Err(unterminated(key)),
                },
                Some((_, c)) => value.push(c),
            }
        };
        labels.insert(key.to_owned(), value);
        rest = rest[close + 1..].trim_start();
        rest = rest.strip_prefix(',').unwrap_or(rest);
    }
}

fn unterminated(key: &str) -> SampleError {
    SampleError::UnterminatedLabel {
        key: key.to_owned(),
    }
}

fn parse_value(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => text.parse::<f64>().ok(),
    }
}

/// The series that explain saturation, under common names (module docs give
/// the mapping); `None` when the server exposes none of its names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mapped {
    /// Requests queued, not yet running (summed over engines).
    pub waiting: Option<f64>,
    /// Requests running, in the batch (summed over engines).
    pub running: Option<f64>,
    /// KV-cache use, a fraction 0–1: the mean over engines.
    pub kv_usage: Option<f64>,
    /// KV-cache use of the fullest engine, 0–1 (absent from sidecars
    /// written before it was: see [`parse_sidecar`]).
    #[serde(default)]
    pub kv_usage_max: Option<f64>,
    /// Preemptions so far (a counter, summed over engines).
    pub preemptions: Option<f64>,
}

/// The largest count (`waiting`, `running`, `preemptions`) read as one a
/// server may report: a billion queued requests is no load test's.
pub const MAX_PLAUSIBLE_COUNT: f64 = 1e9;

/// A value of a mapped series no server reports: a count that is negative,
/// not whole or above [`MAX_PLAUSIBLE_COUNT`]; a KV-cache use outside 0–1.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Odd {
    /// The first such value read.
    pub value: f64,
    /// Snapshots holding one.
    pub snapshots: usize,
}

/// The implausible values of the mapped series, set aside so that no peak,
/// panel or summary shows them as figures (a `waiting` of 1e308 as 309
/// digits, a KV use of 5.0 as "100 %"); the renderers name them instead.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Implausible {
    /// Of `waiting`.
    pub waiting: Option<Odd>,
    /// Of `running`.
    pub running: Option<Odd>,
    /// Of `kvUsage` or `kvUsageMax` (then neither is kept).
    pub kv_usage: Option<Odd>,
    /// Of `preemptions`.
    pub preemptions: Option<Odd>,
}

impl Implausible {
    /// Whether no value was set aside.
    pub fn is_empty(&self) -> bool {
        *self == Implausible::default()
    }

    /// Both together: the first value of each series, snapshots added.
    pub fn and(self, other: Implausible) -> Implausible {
        let both = |a: Option<Odd>, b: Option<Odd>| match (a, b) {
            (Some(x), Some(y)) => Some(Odd {
                value: x.value,
                snapshots: x.snapshots + y.snapshots,
            }),
            (x, y) => x.or(y),
        };
        Implausible {
            waiting: both(self.waiting, other.waiting),
            running: both(self.running, other.running),
            kv_usage: both(self.kv_usage, other.kv_usage),
            preemptions: both(self.preemptions, other.preemptions),
        }
    }
}

/// A count a server may report: whole, 0 to [`MAX_PLAUSIBLE_COUNT`].
fn plausible_count(x: f64) -> bool {
    (0.0..=MAX_PLAUSIBLE_COUNT).contains(&x) && x.fract() == 0.0
}

/// A share of the KV cache: 0 to 1.
fn plausible_share(x: f64) -> bool {
    (0.0..=1.0).contains(&x)
}

/// The names each mapped ratio is read from, first found first.
const KV_USAGE: [&str; 3] = [
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "llamacpp:kv_cache_usage_ratio",
];

/// The mean and the largest of a ratio's finite values over its label sets;
/// `None` without any.
fn mean_and_max(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (n, sum, max) = values
        .filter(|v| v.is_finite())
        .fold((0_u32, 0.0, f64::NEG_INFINITY), |(n, sum, max), v| {
            (n + 1, sum + v, max.max(v))
        });
    (n > 0).then(|| (sum / f64::from(n), max))
}

impl Mapped {
    /// Maps the known series: counts summed over their label sets, the KV
    /// ratio as its mean and its largest (module docs say why).
    pub fn from_samples(samples: &[Sample]) -> Mapped {
        let named = |names: &[&str]| {
            names.iter().find_map(|n| {
                let found: Vec<f64> = samples
                    .iter()
                    .filter(|s| s.name == *n)
                    .map(|s| s.value)
                    .collect();
                (!found.is_empty()).then_some(found)
            })
        };
        let sum = |names: &[&str]| named(names).map(|v| v.iter().sum::<f64>());
        let kv = named(&KV_USAGE).and_then(|v| mean_and_max(v.into_iter()));
        Mapped {
            waiting: sum(&["vllm:num_requests_waiting", "llamacpp:requests_deferred"]),
            running: sum(&["vllm:num_requests_running", "llamacpp:requests_processing"]),
            kv_usage: kv.map(|(mean, _)| mean),
            kv_usage_max: kv.map(|(_, max)| max),
            preemptions: sum(&["vllm:num_preemptions_total", "vllm:num_preemptions"]),
        }
    }

    /// Takes every implausible value out of these series (see [`Odd`]) and
    /// returns them; an implausible `kvUsage` or `kvUsageMax` takes both.
    pub fn set_aside_implausible(&mut self) -> Implausible {
        fn take(v: &mut Option<f64>, ok: fn(f64) -> bool) -> Option<Odd> {
            let x = (*v).filter(|&x| !ok(x))?;
            *v = None;
            Some(Odd {
                value: x,
                snapshots: 1,
            })
        }
        let mean = take(&mut self.kv_usage, plausible_share);
        let max = take(&mut self.kv_usage_max, plausible_share);
        if mean.is_some() || max.is_some() {
            self.kv_usage = None;
            self.kv_usage_max = None;
        }
        Implausible {
            waiting: take(&mut self.waiting, plausible_count),
            running: take(&mut self.running, plausible_count),
            kv_usage: max.or(mean),
            preemptions: take(&mut self.preemptions, plausible_count),
        }
    }

    /// The KV-cache use of the fullest engine: `kvUsageMax`, or, in a
    /// sidecar too old to carry it and its raw series, `kvUsage`.
    pub fn kv_fullest(&self) -> Option<f64> {
        self.kv_usage_max.or(self.kv_usage)
    }

    /// The KV ratio of an older sidecar line, recomputed from its `raw`
    /// series (keyed `name{…}`): its `kvUsage` was their sum. Left as it
    /// is when `raw` holds none of the ratio's names.
    fn repair_kv_from_raw(&mut self, raw: &BTreeMap<String, f64>) {
        let name_of = |key: &str| key.split('{').next().unwrap_or(key).to_owned();
        let kv = KV_USAGE.iter().find_map(|n| {
            mean_and_max(
                raw.iter()
                    .filter(|(k, _)| name_of(k) == *n)
                    .map(|(_, v)| *v),
            )
        });
        if let Some((mean, max)) = kv {
            self.kv_usage = Some(mean);
            self.kv_usage_max = Some(max);
        }
    }
}

/// One line of the sidecar: a snapshot, or a gap (`error` set, nothing else).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetricsLine {
    /// When the server's state was read, ms on the trace's clock.
    pub t_ms: f64,
    /// Why this scrape is a gap (absent for a snapshot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The mapped series.
    #[serde(default, flatten)]
    pub mapped: Mapped,
    /// Every finite sample, keyed `name{label="value",…}` (labels sorted),
    /// up to the recorder's bound on series per scrape.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub raw: BTreeMap<String, f64>,
    /// Finite series of the page left out of `raw` by that bound (the
    /// mapped series are still read from every sample); absent when none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub raw_dropped: usize,
    /// The mapped values [`parse_sidecar`] set aside as implausible (never
    /// written: the sidecar keeps what the server said).
    #[serde(skip)]
    pub implausible: Implausible,
    /// Which of the run's metrics endpoints this line read: its 0-based
    /// place in the trace's `workload.metricsUrls`. Absent when the run
    /// scraped one endpoint (so such a sidecar reads as it always did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<u32>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl MetricsLine {
    /// A snapshot of a scraped page.
    pub fn snapshot(t_ms: f64, samples: &[Sample]) -> MetricsLine {
        MetricsLine::snapshot_bounded(t_ms, samples, usize::MAX, &|key| key.to_owned())
    }

    /// A snapshot keeping at most `max_raw` raw series (the first distinct
    /// ones in page order; the rest are counted in `raw_dropped`), each key
    /// passed through `redact` first, so a label value carrying a credential
    /// never reaches the sidecar. The mapped series read every sample.
    pub fn snapshot_bounded(
        t_ms: f64,
        samples: &[Sample],
        max_raw: usize,
        redact: &dyn Fn(&str) -> String,
    ) -> MetricsLine {
        let mut raw = BTreeMap::new();
        let mut raw_dropped = 0;
        for s in samples.iter().filter(|s| s.value.is_finite()) {
            let key = redact(&series_key(s));
            if raw.len() < max_raw || raw.contains_key(&key) {
                raw.insert(key, s.value);
            } else {
                raw_dropped += 1;
            }
        }
        MetricsLine {
            t_ms,
            error: None,
            mapped: Mapped::from_samples(samples),
            raw,
            raw_dropped,
            implausible: Implausible::default(),
            source: None,
        }
    }

    /// A gap: the scrape at `t_ms` failed for `why`.
    pub fn gap(t_ms: f64, why: impl Into<String>) -> MetricsLine {
        MetricsLine {
            t_ms,
            error: Some(why.into()),
            mapped: Mapped::default(),
            raw: BTreeMap::new(),
            raw_dropped: 0,
            implausible: Implausible::default(),
            source: None,
        }
    }

    /// This line, marked as read from endpoint `source`.
    pub fn from_source(self, source: Option<u32>) -> MetricsLine {
        MetricsLine { source, ..self }
    }
}

/// `name{a="x",b="y"}` (labels in name order), or `name` without labels.
fn series_key(s: &Sample) -> String {
    if s.labels.is_empty() {
        return s.name.clone();
    }
    let labels: Vec<String> = s
        .labels
        .iter()
        .map(|(k, v)| format!("{k}={}", serde_json::Value::from(v.as_str())))
        .collect();
    format!("{}{{{}}}", s.name, labels.join(","))
}

/// The sidecar's bytes: one JSON object per line, in scrape order.
pub fn sidecar_bytes(lines: &[MetricsLine]) -> Vec<u8> {
    lines.iter().flat_map(sidecar_line).collect()
}

/// One line of the sidecar, newline included: what the recorder appends
/// for each scrape as it comes (so no scrape is held until the end).
pub fn sidecar_line(line: &MetricsLine) -> Vec<u8> {
    // A MetricsLine holds only strings and finite numbers: it serializes.
    let mut out = serde_json::to_vec(line).unwrap_or_default();
    if !out.is_empty() {
        out.push(b'\n');
    }
    out
}

/// A sidecar line that does not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("metrics sidecar line {line}: {message}")]
pub struct SidecarError {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong.
    pub message: String,
}

/// Reads a sidecar back (blank lines are skipped). A snapshot without
/// `kvUsageMax` was written when `kvUsage` summed the engines: its ratio is
/// recomputed from its raw series (module docs).
pub fn parse_sidecar(bytes: &[u8]) -> Result<Vec<MetricsLine>, SidecarError> {
    if goodput_util::json::starts_with_bom(bytes) {
        return Err(SidecarError {
            line: 1,
            message: goodput_util::json::BOM_MESSAGE.to_owned(),
        });
    }
    let text = std::str::from_utf8(bytes).map_err(|e| SidecarError {
        line: 1 + bytes[..e.valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count(),
        message: "not UTF-8".into(),
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            let mut line: MetricsLine = serde_json::from_str(l).map_err(|e| SidecarError {
                line: i + 1,
                message: e.to_string(),
            })?;
            if line.error.is_none() && line.mapped.kv_usage_max.is_none() {
                line.mapped.repair_kv_from_raw(&line.raw);
            }
            line.implausible = line.mapped.set_aside_implausible();
            Ok(line)
        })
        .collect()
}

/// The peaks of the mapped series over a sidecar's snapshots.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Peaks {
    /// Highest `waiting`.
    pub waiting: Option<f64>,
    /// Highest `running`.
    pub running: Option<f64>,
    /// Highest KV-cache use of the fullest engine (`kvUsageMax`), the
    /// figure the report and the summary call "KV use".
    pub kv_usage: Option<f64>,
    /// Highest mean KV-cache use across engines (`kvUsage`); equal to
    /// `kv_usage` when there is one engine, or all were alike.
    pub kv_usage_mean: Option<f64>,
    /// Snapshots read.
    pub snapshots: usize,
    /// Gaps (failed scrapes).
    pub gaps: usize,
    /// Implausible values, left out of the peaks above.
    pub implausible: Implausible,
}

/// The peaks of a sidecar's mapped series.
pub fn peaks(lines: &[MetricsLine]) -> Peaks {
    lines.iter().fold(Peaks::default(), |p, l| p.with(l))
}

impl Peaks {
    /// These peaks with one more sidecar line: how the recorder keeps them
    /// while it streams the sidecar, holding no line.
    pub fn with(self, l: &MetricsLine) -> Peaks {
        let max = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        };
        if l.error.is_some() {
            return Peaks {
                gaps: self.gaps + 1,
                ..self
            };
        }
        // A line read by `parse_sidecar` has its implausible values set
        // aside already; one the recorder just scraped has them still.
        let mut mapped = l.mapped;
        let odd = l.implausible.and(mapped.set_aside_implausible());
        Peaks {
            waiting: max(self.waiting, mapped.waiting),
            running: max(self.running, mapped.running),
            kv_usage: max(self.kv_usage, mapped.kv_fullest()),
            kv_usage_mean: max(self.kv_usage_mean, mapped.kv_usage),
            snapshots: self.snapshots + 1,
            gaps: self.gaps,
            implausible: self.implausible.and(odd),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VLLM: &str = "\
# HELP vllm:num_requests_waiting Number of requests waiting.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 7.0
vllm:num_requests_waiting{engine=\"1\",model_name=\"m\"} 5.0
vllm:num_requests_running{model_name=\"m\"} 4
vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.625
vllm:num_preemptions_total{model_name=\"m\"} 3 1700000000000
process_cpu_seconds_total 12.5
odd{l=\"a \\\"q\\\" \\\\ b\\nc\"} NaN
";

    #[test]
    fn vllm_series_map_and_sum_over_label_sets() {
        let samples = parse_exposition(VLLM).unwrap();
        assert_eq!(samples.len(), 7);
        let m = Mapped::from_samples(&samples);
        assert_eq!(
            m,
            Mapped {
                waiting: Some(12.0), // 7 + 5
                running: Some(4.0),
                kv_usage: Some(0.625),
                kv_usage_max: Some(0.625),
                preemptions: Some(3.0),
            }
        );
        assert_eq!(samples[6].labels["l"], "a \"q\" \\ b\nc");
        let line = MetricsLine::snapshot(250.0, &samples);
        // NaN is not kept raw; every other series is, labels sorted.
        assert_eq!(line.raw.len(), 6);
        assert_eq!(
            line.raw[r#"vllm:num_requests_waiting{engine="0",model_name="m"}"#],
            7.0
        );
        assert_eq!(line.raw["process_cpu_seconds_total"], 12.5);
    }

    #[test]
    fn every_prefix_of_a_page_parses_or_names_its_line() {
        // What a cut-off response looks like: never a panic, and an error
        // always points at a line that exists.
        for end in 0..=VLLM.len() {
            let Some(prefix) = VLLM.get(..end) else {
                continue;
            };
            if let Err(e) = parse_exposition(prefix) {
                assert!(e.line >= 1 && e.line <= prefix.lines().count(), "{e}");
            }
        }
    }

    #[test]
    fn llamacpp_series_map_too() {
        let text = "llamacpp:requests_processing 2\nllamacpp:requests_deferred 9\n\
                    llamacpp:kv_cache_usage_ratio 0.5\n";
        let m = Mapped::from_samples(&parse_exposition(text).unwrap());
        assert_eq!(
            (
                m.waiting,
                m.running,
                m.kv_usage,
                m.kv_usage_max,
                m.preemptions
            ),
            (Some(9.0), Some(2.0), Some(0.5), Some(0.5), None)
        );
    }

    #[test]
    fn engines_add_up_their_counts_but_not_their_cache_ratios() {
        // Two vLLM engines: KV 0.6 and 0.8 are a mean of (0.6 + 0.8)/2 = 0.7
        // and a fullest engine at 0.8 (never 1.4); queues 3 + 4 = 7, running
        // 2 + 5 = 7, preemptions 1 + 2 = 3 add up.
        let text = "\
vllm:kv_cache_usage_perc{engine=\"0\"} 0.6
vllm:kv_cache_usage_perc{engine=\"1\"} 0.8
vllm:num_requests_waiting{engine=\"0\"} 3
vllm:num_requests_waiting{engine=\"1\"} 4
vllm:num_requests_running{engine=\"0\"} 2
vllm:num_requests_running{engine=\"1\"} 5
vllm:num_preemptions_total{engine=\"0\"} 1
vllm:num_preemptions_total{engine=\"1\"} 2
";
        let m = Mapped::from_samples(&parse_exposition(text).unwrap());
        assert_eq!(
            m,
            Mapped {
                waiting: Some(7.0),
                running: Some(7.0),
                kv_usage: Some(0.7),
                kv_usage_max: Some(0.8),
                preemptions: Some(3.0),
            }
        );
        // Two engines each at 0.6: 0.6 both ways (the report once said 100 %).
        let even = "vllm:kv_cache_usage_perc{engine=\"0\"} 0.6\n\
                    vllm:kv_cache_usage_perc{engine=\"1\"} 0.6\n";
        let m = Mapped::from_samples(&parse_exposition(even).unwrap());
        assert_eq!((m.kv_usage, m.kv_usage_max), (Some(0.6), Some(0.6)));
        // llama.cpp's ratio likewise: slots at 0.25 and 0.75 give 0.5 and
        // 0.75; its deferred requests 9 + 1 = 10 add up.
        let llama = "llamacpp:kv_cache_usage_ratio{slot=\"a\"} 0.25\n\
                     llamacpp:kv_cache_usage_ratio{slot=\"b\"} 0.75\n\
                     llamacpp:requests_deferred{slot=\"a\"} 9\n\
                     llamacpp:requests_deferred{slot=\"b\"} 1\n";
        let m = Mapped::from_samples(&parse_exposition(llama).unwrap());
        assert_eq!(
            (m.waiting, m.kv_usage, m.kv_usage_max),
            (Some(10.0), Some(0.5), Some(0.75))
        );
    }

    #[test]
    fn peaks_name_the_fullest_engine_with_the_mean_beside_it() {
        // Snapshot 1: engines 0.6 and 0.8 (mean 0.7); snapshot 2: 0.9 and 0.1
        // (mean 0.5). The fullest engine peaked at 0.9, the mean at 0.7.
        let kv = |a: f64, b: f64| {
            parse_exposition(&format!(
                "vllm:kv_cache_usage_perc{{engine=\"0\"}} {a}\n\
                 vllm:kv_cache_usage_perc{{engine=\"1\"}} {b}\n"
            ))
            .unwrap()
        };
        let lines = vec![
            MetricsLine::snapshot(0.0, &kv(0.6, 0.8)),
            MetricsLine::snapshot(1000.0, &kv(0.9, 0.1)),
        ];
        let p = peaks(&lines);
        assert_eq!((p.kv_usage, p.kv_usage_mean), (Some(0.9), Some(0.7)));
        // And it survives the sidecar.
        assert_eq!(peaks(&parse_sidecar(&sidecar_bytes(&lines)).unwrap()), p);
    }

    #[test]
    fn an_older_sidecar_without_the_fullest_engine_still_reads() {
        // Written when kvUsage summed two engines at 0.6 (1.2): the ratio is
        // recomputed from its raw series, 0.6 mean and 0.6 fullest. A line
        // without raw series keeps its kvUsage, which stands for both.
        let old = br#"{"tMs":0,"waiting":7,"running":2,"kvUsage":1.2,"preemptions":0,"raw":{"vllm:kv_cache_usage_perc{engine=\"0\"}":0.6,"vllm:kv_cache_usage_perc{engine=\"1\"}":0.6,"vllm:num_requests_waiting":7}}
{"tMs":1000,"waiting":3,"running":1,"kvUsage":0.5,"preemptions":0}
{"tMs":2000,"error":"timeout","waiting":null,"running":null,"kvUsage":null,"preemptions":null}
"#;
        let lines = parse_sidecar(old).unwrap();
        assert_eq!(
            (lines[0].mapped.kv_usage, lines[0].mapped.kv_usage_max),
            (Some(0.6), Some(0.6))
        );
        assert_eq!(lines[0].mapped.waiting, Some(7.0));
        assert_eq!(
            (lines[1].mapped.kv_usage, lines[1].mapped.kv_usage_max),
            (Some(0.5), None)
        );
        let p = peaks(&lines);
        assert_eq!(
            (p.kv_usage, p.kv_usage_mean, p.snapshots, p.gaps),
            (Some(0.6), Some(0.6), 2, 1)
        );
    }

    #[test]
    fn a_malformed_line_is_named_by_number() {
        let err = parse_exposition("ok 1\n\nbad{x=1} 2\n").unwrap_err();
        assert_eq!(err.line, 3);
        assert!(err.reason.to_string().contains("label `x`"), "{err}");
        assert_eq!(parse_exposition("9lives 1").unwrap_err().line, 1);
        assert!(parse_exposition("x one").is_err());
        assert!(parse_exposition("x 1 2 3").is_err());
        assert!(parse_exposition("x{a=\"b").is_err());
    }

    #[test]
    fn the_sidecar_reads_back_and_gaps_are_counted_apart() {
        let samples = parse_exposition(VLLM).unwrap();
        let lines = vec![
            MetricsLine::snapshot(0.5, &samples),
            MetricsLine::gap(1000.5, "timeout"),
            MetricsLine::snapshot(
                2000.5,
                &parse_exposition("vllm:num_requests_waiting 20\n").unwrap(),
            ),
        ];
        let bytes = sidecar_bytes(&lines);
        assert_eq!(
            String::from_utf8(bytes.clone()).unwrap().lines().nth(1),
            Some(
                r#"{"tMs":1000.5,"error":"timeout","waiting":null,"running":null,"kvUsage":null,"kvUsageMax":null,"preemptions":null}"#
            )
        );
        assert_eq!(parse_sidecar(&bytes).unwrap(), lines);
        let p = peaks(&lines);
        assert_eq!(
            (
                p.waiting,
                p.running,
                p.kv_usage,
                p.kv_usage_mean,
                p.snapshots,
                p.gaps
            ),
            (Some(20.0), Some(4.0), Some(0.625), Some(0.625), 2, 1)
        );
        assert_eq!(parse_sidecar(b"{}\nnope\n").unwrap_err().line, 1);
    }

    #[test]
    fn implausible_values_are_set_aside_and_counted_not_peaked() {
        // Line 1: every value implausible (1e308, negative, half a request,
        // a KV use of 5.0); line 2: plausible, so the peaks are its own.
        let text = "{\"tMs\":100,\"waiting\":1e308,\"running\":-1,\"kvUsage\":5.0,\
                    \"kvUsageMax\":5.0,\"preemptions\":2.5}\n\
                    {\"tMs\":200,\"waiting\":3,\"running\":1000000000,\"kvUsage\":0.5,\
                    \"kvUsageMax\":1.0,\"preemptions\":0}\n";
        let lines = parse_sidecar(text.as_bytes()).unwrap();
        assert_eq!(lines[0].mapped, Mapped::default());
        let odd = |value| {
            Some(Odd {
                value,
                snapshots: 1,
            })
        };
        assert_eq!(
            lines[0].implausible,
            Implausible {
                waiting: odd(1e308),
                running: odd(-1.0),
                kv_usage: odd(5.0),
                preemptions: odd(2.5),
            }
        );
        // 10^9 and a full cache are plausible.
        assert!(lines[1].implausible.is_empty());
        let p = peaks(&lines);
        assert_eq!(
            (p.waiting, p.running, p.kv_usage, p.snapshots),
            (Some(3.0), Some(1e9), Some(1.0), 2)
        );
        assert_eq!(p.implausible, lines[0].implausible);
        // A line the recorder scraped (not read back) is checked by the
        // peaks themselves, and a line read back is not counted twice.
        let mut live = lines[0].clone();
        live.mapped.waiting = Some(-3.0);
        live.implausible = Implausible::default();
        let p = peaks(&[live, lines[0].clone()]);
        assert_eq!(
            p.implausible.waiting,
            Some(Odd {
                value: -3.0,
                snapshots: 2
            })
        );
        assert_eq!(p.waiting, None);
    }

    #[test]
    fn a_sidecar_with_a_byte_order_mark_is_named_so() {
        let e = parse_sidecar(b"\xEF\xBB\xBF{\"tMs\":1}\n").unwrap_err();
        assert_eq!(e.line, 1);
        assert!(
            e.message.contains("UTF-8 byte-order mark (EF BB BF)"),
            "{e}"
        );
    }
}
