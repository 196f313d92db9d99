//! Energy per good request (docs/contract.md §10.18): a power series scraped
//! beside the trace (`record --metrics`, e.g. a DCGM exporter's
//! `DCGM_FI_DEV_POWER_USAGE`, watts), integrated over the judged window and
//! divided by what passed every gate — not by raw throughput.
//!
//! **Rule** (`trapezoid`). A scrape's power is the sum of every series of
//! the named metric (one per GPU label set). Between two consecutive scrapes
//! that both read the metric, power is taken as linear (a trapezoid). The
//! window `[start, end)` is cut out of that piecewise-linear curve (the
//! value at a cut interpolated); time in the window before the first or
//! after the last reading is **uncovered**: no joules are invented for it,
//! and `coveredMs < windowMs` says so. A failed scrape (a sidecar gap line)
//! or one without the metric between two readings is bridged by the same
//! line, and the bridged time is counted in `bridgedMs`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::server_metrics::MetricsLine;

/// The power metric read when none is named: NVIDIA DCGM's per-GPU power
/// draw in watts.
pub const DEFAULT_POWER_METRIC: &str = "DCGM_FI_DEV_POWER_USAGE";

/// The receipt's `energy` block.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnergyBlock {
    /// The metric summed across its series, watts.
    pub metric: String,
    /// Always `trapezoid` (the module's rule).
    pub rule: String,
    /// Series of the metric in the scrape that had most (GPUs, usually).
    pub series: u64,
    /// Scrapes that read the metric.
    pub readings: u64,
    /// Failed scrapes, or scrapes without the metric, between the first and
    /// last reading.
    pub gaps: u64,
    /// The judged window, ms.
    pub window_ms: f64,
    /// The part of the window between the first and last reading, ms.
    pub covered_ms: f64,
    /// The part of the covered window bridged across gaps, ms.
    pub bridged_ms: f64,
    /// Energy over the covered window, J.
    pub joules: f64,
    /// Mean power over the covered window, W; null when nothing is covered.
    pub mean_watts: Option<f64>,
    /// Requests that passed every gate (the receipt's `pass` of all rows).
    pub good_requests: u64,
    /// Output tokens of those requests (`goodTokensPerS` × window s).
    pub good_output_tokens: f64,
    /// joules / goodRequests; null without a good request.
    pub joules_per_good_request: Option<f64>,
    /// joules / goodOutputTokens; null without a good token.
    pub joules_per_good_output_token: Option<f64>,
    /// goodRequests / (joules / 1000); null for 0 J.
    pub good_requests_per_kj: Option<f64>,
    /// Why a figure reads less than it seems (uncovered time), or null.
    pub note: Option<String>,
}

/// Watts of `metric` in one scrape (the sum over its series), or `None`
/// for a gap or a scrape without it: what the report's power panel draws.
pub fn power_watts(line: &MetricsLine, metric: &str) -> Option<f64> {
    watts(line, metric).map(|(w, _)| w)
}

/// Watts of `metric` in one scrape (the sum over its series) and the
/// number of series, or `None` for a gap or a scrape without it.
fn watts(line: &MetricsLine, metric: &str) -> Option<(f64, u64)> {
    if line.error.is_some() {
        return None;
    }
    let mut sum = 0.0;
    let mut n = 0;
    for (key, v) in &line.raw {
        let name = key.split('{').next().unwrap_or(key);
        if name == metric && v.is_finite() {
            sum += v;
            n += 1;
        }
    }
    (n > 0).then_some((sum, n))
}

/// What the integration found, before the division by good requests.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Integral {
    joules: f64,
    covered_ms: f64,
    bridged_ms: f64,
    readings: u64,
    gaps: u64,
    series: u64,
}

/// The endpoints (`MetricsLine::source`) whose scrapes ever read `metric`:
/// a run may scrape the server and a power exporter side by side, and only
/// the exporter's lines (readings and failed scrapes) are the power series.
fn power_sources(lines: &[MetricsLine], metric: &str) -> Vec<Option<u32>> {
    let mut sources: Vec<Option<u32>> = Vec::new();
    for line in lines {
        if watts(line, metric).is_some() && !sources.contains(&line.source) {
            sources.push(line.source);
        }
    }
    sources
}

/// Integrates `metric` over `[start, end)` ms by the trapezoid rule, over
/// the lines of the endpoints that report it (each endpoint's lines are in
/// time order; with two power endpoints their readings are summed
/// per endpoint integral, never interleaved).
fn integrate(lines: &[MetricsLine], metric: &str, start: f64, end: f64) -> Integral {
    let mut total = Integral::default();
    for source in power_sources(lines, metric) {
        let of_source = lines.iter().filter(|l| l.source == source);
        let one = integrate_series(of_source, metric, start, end);
        total = Integral {
            joules: total.joules + one.joules,
            // Covered is of the window, not summed: the least-covered
            // endpoint bounds what the joules are of.
            covered_ms: if total.readings == 0 {
                one.covered_ms
            } else {
                total.covered_ms.min(one.covered_ms)
            },
            bridged_ms: total.bridged_ms.max(one.bridged_ms),
            readings: total.readings + one.readings,
            gaps: total.gaps + one.gaps,
            series: total.series + one.series,
        };
    }
    total
}

/// Integrates one endpoint's lines of `metric` over `[start, end)` ms.
fn integrate_series<'a>(
    lines: impl Iterator<Item = &'a MetricsLine>,
    metric: &str,
    start: f64,
    end: f64,
) -> Integral {
    let mut out = Integral::default();
    let mut last: Option<(f64, f64)> = None;
    let mut gaps_since = 0u64;
    for line in lines {
        let Some((w, n)) = watts(line, metric) else {
            gaps_since += u64::from(last.is_some());
            continue;
        };
        out.readings += 1;
        out.series = out.series.max(n);
        if let Some((t0, w0)) = last {
            let (a, b) = (t0.max(start), line.t_ms.min(end));
            if b > a && line.t_ms > t0 {
                let at = |t: f64| w0 + (w - w0) * (t - t0) / (line.t_ms - t0);
                out.joules += (at(a) + at(b)) / 2.0 * (b - a) / 1000.0;
                out.covered_ms += b - a;
                if gaps_since > 0 {
                    out.bridged_ms += b - a;
                }
            }
            out.gaps += gaps_since;
        }
        gaps_since = 0;
        last = Some((line.t_ms, w));
    }
    out
}

/// What the energy is divided by: the judged window and the good work in it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GoodWork {
    /// The window's start, ms.
    pub start_ms: f64,
    /// The window's end, ms.
    pub end_ms: f64,
    /// Requests that passed every gate.
    pub good_requests: u64,
    /// Their output tokens per window second.
    pub good_tokens_per_s: f64,
}

/// The `energy` block of a window's good work from the sidecar `lines`, or
/// `None` when no scrape read `metric` (`Receipt::energy_from` fills it in
/// from a receipt).
pub fn energy(work: GoodWork, lines: &[MetricsLine], metric: &str) -> Option<EnergyBlock> {
    let (start, end) = (work.start_ms, work.end_ms);
    let i = integrate(lines, metric, start, end);
    if i.readings == 0 {
        return None;
    }
    let window_ms = end - start;
    let good = work.good_requests;
    let good_tokens = work.good_tokens_per_s * window_ms / 1000.0;
    let per = |d: f64| (d > 0.0).then(|| i.joules / d);
    let note = (i.covered_ms < window_ms).then(|| {
        format!(
            "the power readings cover {:.0} of the window's {:.0} ms: the joules are of that part \
             only, so the per-request figures are lower bounds",
            i.covered_ms, window_ms
        )
    });
    Some(EnergyBlock {
        metric: metric.to_owned(),
        rule: "trapezoid".to_owned(),
        series: i.series,
        readings: i.readings,
        gaps: i.gaps,
        window_ms,
        covered_ms: i.covered_ms,
        bridged_ms: i.bridged_ms,
        joules: i.joules,
        mean_watts: (i.covered_ms > 0.0).then(|| i.joules / (i.covered_ms / 1000.0)),
        good_requests: good,
        good_output_tokens: good_tokens,
        joules_per_good_request: per(good as f64),
        joules_per_good_output_token: per(good_tokens),
        good_requests_per_kj: (i.joules > 0.0).then(|| good as f64 / (i.joules / 1000.0)),
        note,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn reading(t_ms: f64, gpus: &[f64]) -> MetricsLine {
        let mut line = MetricsLine::gap(t_ms, "x");
        line.error = None;
        line.raw = gpus
            .iter()
            .enumerate()
            .map(|(g, w)| (format!("{DEFAULT_POWER_METRIC}{{gpu=\"{g}\"}}"), *w))
            .chain([("other_metric".to_owned(), 1e9)])
            .collect::<BTreeMap<_, _>>();
        line
    }

    /// Two GPUs; window [1000, 5000). Readings (sum of both GPUs):
    /// t 0: 200 W, t 2000: 300 W, t 3000 a failed scrape, t 4000: 100 W,
    /// t 6000: 100 W. Cut at 1000 (250 W, halfway from 200 to 300) and 5000
    /// (100 W). Trapezoids: [1000, 2000] (250 + 300) / 2 × 1 s = 275 J;
    /// [2000, 4000] (300 + 100) / 2 × 2 s = 400 J, bridged over the gap;
    /// [4000, 5000] 100 × 1 s = 100 J. Total 775 J over 4000 ms.
    #[test]
    fn trapezoids_cut_at_the_window_and_bridged_over_a_gap_add_up_by_hand() {
        let lines = [
            reading(0.0, &[100.0, 100.0]),
            reading(2000.0, &[150.0, 150.0]),
            MetricsLine::gap(3000.0, "timeout"),
            reading(4000.0, &[50.0, 50.0]),
            reading(6000.0, &[60.0, 40.0]),
        ];
        let i = integrate(&lines, DEFAULT_POWER_METRIC, 1000.0, 5000.0);
        assert_eq!(i.joules, 775.0);
        assert_eq!((i.covered_ms, i.bridged_ms), (4000.0, 2000.0));
        assert_eq!((i.readings, i.gaps, i.series), (4, 1, 2));
    }

    /// The run scraped the server (endpoint 0: no power series, one failed
    /// scrape) and a DCGM exporter (endpoint 1) side by side, lines
    /// interleaved as they came. Only endpoint 1's lines are the power
    /// series: the same 775 J as the test above, its one gap at t 3000,
    /// and the server's lines neither bridge nor break it.
    #[test]
    fn only_the_endpoints_that_report_power_make_the_series() {
        let server = |t: f64| {
            let mut line = reading(t, &[]);
            line.raw.insert("vllm:num_requests_running".into(), 3.0);
            line.from_source(Some(0))
        };
        let dcgm = |t: f64, w: &[f64]| reading(t, w).from_source(Some(1));
        let lines = [
            server(0.0),
            dcgm(0.0, &[100.0, 100.0]),
            server(1000.0),
            MetricsLine::gap(1500.0, "HTTP 503").from_source(Some(0)),
            dcgm(2000.0, &[150.0, 150.0]),
            MetricsLine::gap(3000.0, "timeout").from_source(Some(1)),
            server(3500.0),
            dcgm(4000.0, &[50.0, 50.0]),
            dcgm(6000.0, &[60.0, 40.0]),
        ];
        let i = integrate(&lines, DEFAULT_POWER_METRIC, 1000.0, 5000.0);
        assert_eq!(i.joules, 775.0);
        assert_eq!((i.covered_ms, i.bridged_ms), (4000.0, 2000.0));
        assert_eq!((i.readings, i.gaps, i.series), (4, 1, 2));
    }

    /// Readings only from t 2000 to 3000 at a steady 100 W in a window
    /// [0, 4000): 100 J over 1000 ms covered; nothing invented for the rest.
    #[test]
    fn time_outside_the_readings_is_uncovered_not_extrapolated() {
        let lines = [reading(2000.0, &[100.0]), reading(3000.0, &[100.0])];
        let i = integrate(&lines, DEFAULT_POWER_METRIC, 0.0, 4000.0);
        assert_eq!((i.joules, i.covered_ms), (100.0, 1000.0));
    }

    #[test]
    fn a_sidecar_without_the_metric_gives_no_readings() {
        let lines = [reading(0.0, &[]), MetricsLine::gap(1.0, "x")];
        assert_eq!(
            integrate(&lines, DEFAULT_POWER_METRIC, 0.0, 10.0).readings,
            0
        );
    }
}
