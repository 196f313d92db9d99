//! The latency distributions: per class, one histogram per metric with the
//! class's gate drawn on it.

use std::fmt::Write;

use super::html::{escape, tpot_name};
use super::svg::{nice_step, px, ticks};
use crate::analyze::Analysis;
use crate::receipt::LatencySummary;
use crate::render::sweep::short;
use crate::render::text::opt;

/// Most bars in one latency histogram.
pub const HISTOGRAM_BINS: usize = 40;

/// Geometry of one histogram.
const HIST_W: f64 = 420.0;
const HIST_H: f64 = 190.0;
const HIST_LEFT: f64 = 40.0;
const HIST_RIGHT: f64 = 24.0;
const HIST_TOP: f64 = 22.0;
const HIST_BOTTOM: f64 = 36.0;

/// The distributions section.
pub(super) fn section(o: &mut String, a: &Analysis) {
    let r = &a.receipt;
    let contract = &a.trace.contract;
    let rule = if contract.equality.as_str() == "strict" {
        "<"
    } else {
        "≤"
    };
    let _ = writeln!(
        o,
        "<section id=\"distributions\">\n<h2>Latency distributions</h2>\n\
         <p class=\"note\">Histograms of completed cohort rows (pass and miss) of each class, at most {HISTOGRAM_BINS} bars from 0 ms; \
         the black line is the class's gate ({rule} under <b>{}</b> equality). {} is over rows with more than one output token.</p>",
        escape(contract.equality.as_str()),
        tpot_name(r)
    );
    for (c, (name, gates)) in contract.classes.iter().enumerate() {
        let Some(block) = r.results.classes.get(name) else {
            continue;
        };
        let _ = writeln!(
            o,
            "<h3>class {}</h3>\n<div class=\"charts\" data-class=\"{}\">",
            escape(name),
            escape(name)
        );
        let metrics: [(&str, &str, Option<f64>, &LatencySummary, u64); 3] = [
            (
                "ttft",
                "TTFT",
                gates.ttft_ms,
                &block.latency.ttft_ms,
                block.reasons.miss.ttft,
            ),
            (
                "tpot",
                tpot_name(r),
                gates.tpot_ms,
                &block.latency.tpot_ms,
                block.reasons.miss.tpot,
            ),
            (
                "e2e",
                "E2E",
                gates.e2e_ms,
                &block.latency.e2e_ms,
                block.reasons.miss.e2e,
            ),
        ];
        for (key, label, gate, summary, missed) in metrics {
            let values: Vec<f64> = a
                .judgements
                .iter()
                .filter(|j| j.class == Some(c))
                .filter_map(|j| j.verdict.measured())
                .filter_map(|m| match key {
                    "ttft" => Some(m.ttft_ms),
                    "tpot" => m.tpot_ms,
                    _ => Some(m.e2e_ms),
                })
                .collect();
            histogram(o, name, key, label, gate, rule, &values, summary, missed);
        }
        let _ = writeln!(o, "</div>");
    }
    let _ = writeln!(o, "</section>");
}

#[allow(clippy::too_many_arguments)]
fn histogram(
    o: &mut String,
    class: &str,
    key: &str,
    label: &str,
    gate: Option<f64>,
    rule: &str,
    values: &[f64],
    summary: &LatencySummary,
    missed: u64,
) {
    let vmax = values.iter().copied().fold(0.0f64, f64::max);
    let top_raw = vmax.max(gate.unwrap_or(0.0));
    let step = nice_step(top_raw / 5.0);
    let mut top = if top_raw > 0.0 {
        (top_raw / step).ceil() * step
    } else {
        1.0
    };
    if top <= 0.0 || !top.is_finite() {
        top = 1.0;
    }
    let x0 = HIST_LEFT;
    let x1 = HIST_W - HIST_RIGHT;
    let y0 = HIST_H - HIST_BOTTOM;
    let x_of = |v: f64| x0 + (v / top).clamp(0.0, 1.0) * (x1 - x0);
    let bins = HISTOGRAM_BINS;
    let width = top / bins as f64;
    let mut counts = vec![0u64; bins];
    for &v in values {
        let b = ((v.max(0.0) / width).floor() as usize).min(bins - 1);
        counts[b] += 1;
    }
    let cmax = counts.iter().copied().max().unwrap_or(0);
    let _ = writeln!(
        o,
        "<figure class=\"dist\" data-class=\"{}\" data-metric=\"{key}\">\n\
         <svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" \
         aria-label=\"{label} histogram\" data-ms0=\"0\" data-ms1=\"{}\" data-x0=\"{}\" data-x1=\"{}\">",
        escape(class),
        short(top),
        px(x0),
        px(x1),
        w = px(HIST_W),
        h = px(HIST_H),
    );
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"14\" font-weight=\"600\">{label} (ms)</text>",
        px(x0)
    );
    if values.is_empty() {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"no-gate\">no completed rows</text>",
            px((x0 + x1) / 2.0),
            px((HIST_TOP + y0) / 2.0)
        );
    }
    let plot_h = y0 - HIST_TOP;
    for (b, &n) in counts.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let h = n as f64 / cmax.max(1) as f64 * plot_h;
        let (lo, hi) = (b as f64 * width, (b + 1) as f64 * width);
        let _ = writeln!(
            o,
            "<rect class=\"bar\" data-count=\"{n}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>[{}, {}) ms: {n} rows</title></rect>",
            px(x_of(lo) + 0.5),
            px(y0 - h),
            px((x_of(hi) - x_of(lo) - 1.0).max(0.5)),
            px(h),
            short(lo),
            short(hi)
        );
    }
    // Axes: x ticks in ms, the tallest bar's count on y.
    let _ = writeln!(
        o,
        "<line class=\"axis\" x1=\"{}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/>\
         <line class=\"axis\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{y}\"/>\
         <text x=\"{}\" y=\"{}\" text-anchor=\"end\">{cmax}</text><text x=\"{}\" y=\"{y}\" text-anchor=\"end\">0</text>",
        px(x0),
        px(x1),
        px(HIST_TOP),
        px(x0 - 4.0),
        px(HIST_TOP + 4.0),
        px(x0 - 4.0),
        x = px(x0),
        y = px(y0),
    );
    for v in ticks(0.0, top, 5.0) {
        let x = x_of(v);
        let _ = writeln!(
            o,
            "<line class=\"axis\" x1=\"{x}\" y1=\"{}\" x2=\"{x}\" y2=\"{}\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(y0),
            px(y0 + 4.0),
            px(y0 + 15.0),
            short(v),
            x = px(x)
        );
    }
    match gate {
        Some(g) => {
            let x = x0 + (g / top).clamp(0.0, 1.0) * (x1 - x0);
            let right_half = x > (x0 + x1) / 2.0;
            let _ = writeln!(
                o,
                "<line class=\"gate\" data-gate-ms=\"{}\" x1=\"{x:.2}\" y1=\"{}\" x2=\"{x:.2}\" y2=\"{}\"/>\
                 <text class=\"gate-label\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">gate {rule} {}</text>",
                short(g),
                px(HIST_TOP - 4.0),
                px(y0),
                px(if right_half { x - 4.0 } else { x + 4.0 }),
                px(HIST_TOP + 8.0),
                if right_half { "end" } else { "start" },
                short(g)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "<text class=\"no-gate\" x=\"{}\" y=\"{}\" text-anchor=\"end\">no gate</text>",
                px(x1),
                px(HIST_TOP + 8.0)
            );
        }
    }
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">ms</text>\n</svg>",
        px((x0 + x1) / 2.0),
        px(HIST_H - 4.0)
    );
    let gate_part = match gate {
        Some(_) => format!(" · over the gate: {missed}"),
        None => " · no gate".to_owned(),
    };
    let _ = writeln!(
        o,
        "<figcaption>n {} · p50 {} · p95 {} · p99 {} · max {} ms{gate_part}</figcaption>\n</figure>",
        summary.n,
        opt(summary.p50, 1),
        opt(summary.p95, 1),
        opt(summary.p99, 1),
        opt(summary.max, 1)
    );
}
