//! The latency distributions: per class, one histogram per metric with the
//! class's gate drawn on it.

use std::fmt::Write;

use crate::report::gap_histogram::{self, MIN_GAP_BAR_PX};
use crate::report::html::{escape, tpot_name};
use crate::report::svg::{nice_step, px, ticks};
use crate::sensitivity::short;
use crate::text::opt;
use goodput_core::analyze::Analysis;
use goodput_core::receipt::LatencySummary;

/// Most bars in one latency histogram.
pub const HISTOGRAM_BINS: usize = 40;

/// Geometry of one histogram.
const HIST_W: f64 = 420.0;
const HIST_H: f64 = 204.0;
const HIST_LEFT: f64 = 40.0;
const HIST_RIGHT: f64 = 24.0;
/// The plot starts below the title row and the gate-label row, so neither
/// label ever sits on a bar.
const HIST_TOP: f64 = 36.0;
/// Baseline of the gate label (or "no gate"), above the plot area.
const GATE_LABEL_Y: f64 = 29.0;
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
    gap_note(o, a);
    ttfa_note(o, a);
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
        let metrics = [
            Metric {
                key: "ttft",
                label: "TTFT",
                gate: gates.ttft_ms,
                summary: &block.latency.ttft_ms,
                missed: block.reasons.miss.ttft,
                no_answer: None,
            },
            Metric {
                key: "tpot",
                label: tpot_name(r),
                gate: gates.tpot_ms,
                summary: &block.latency.tpot_ms,
                missed: block.reasons.miss.tpot,
                no_answer: None,
            },
            Metric {
                key: "e2e",
                label: "E2E",
                gate: gates.e2e_ms,
                summary: &block.latency.e2e_ms,
                missed: block.reasons.miss.e2e,
                no_answer: None,
            },
        ];
        // A TTFA histogram only where the class has answer figures
        // (docs/contract.md §10.16), so a page without them keeps its bytes.
        let ttfa = block.answer.as_ref().map(|answer| Metric {
            key: "ttfa",
            label: "TTFA",
            gate: gates.ttfa_ms,
            summary: &answer.ttfa_ms,
            missed: block.reasons.miss.ttfa.unwrap_or(0),
            no_answer: Some(answer.no_answer),
        });
        for metric in metrics.into_iter().chain(ttfa) {
            let values: Vec<f64> = a
                .judgements
                .iter()
                .filter(|j| j.class == Some(c))
                .filter_map(|j| j.verdict.measured())
                .filter_map(|m| match metric.key {
                    "ttft" => m.ttft_ms,
                    "tpot" => m.tpot_ms,
                    "ttfa" => m.ttfa_ms,
                    _ => Some(m.e2e_ms),
                })
                .collect();
            histogram(o, name, &metric, rule, &values);
        }
        gap_histogram::figure(o, a, (c, name), gates, block, rule);
        let _ = writeln!(o, "</div>");
    }
    let _ = writeln!(o, "</section>");
}

/// How to read the gap histograms, when some class has one (none otherwise,
/// so a page without gaps keeps its bytes).
fn gap_note(o: &mut String, a: &Analysis) {
    let classes = &a.receipt.results.classes;
    if classes.values().all(|b| b.gaps.is_none()) {
        return;
    }
    let _ = writeln!(
        o,
        "<p class=\"note\" id=\"gaps-note\">A class whose rows carry <code>gapsMs</code> (or that declares a stall gate) \
         has a fourth histogram: <b>inter-token latency</b>, or <b>inter-event latency</b> when a stream event may carry \
         several tokens or is a chunk. It pools every gap between consecutive token-carrying stream events of the class's \
         completed cohort rows; its black line is the class's stall gate, which each row's <em>largest</em> gap must meet. \
         A bar holding any gap is at least {} px tall, so a lone stall among thousands of steady gaps still shows.</p>",
        crate::sensitivity::short(MIN_GAP_BAR_PX)
    );
}

/// How to read the TTFA histograms, when some class has one.
fn ttfa_note(o: &mut String, a: &Analysis) {
    let classes = &a.receipt.results.classes;
    if classes.values().all(|b| b.answer.is_none()) {
        return;
    }
    let _ = writeln!(
        o,
        "<p class=\"note\" id=\"ttfa-note\">A class whose rows carry <code>firstAnswerMs</code> (or that declares a TTFA gate) \
         has a <b>TTFA</b> histogram: arrival to the first <em>answer</em> token, after any reasoning. A row that answered \
         nothing is not in it; its caption counts those rows as <b>no answer</b>.</p>"
    );
}

/// One metric of one class: what its histogram shows and says.
struct Metric<'a> {
    /// `ttft`, `tpot`, `e2e` or `ttfa` (the figure's `data-metric`).
    key: &'a str,
    /// The name shown.
    label: &'a str,
    /// The class's gate on this metric.
    gate: Option<f64>,
    summary: &'a LatencySummary,
    /// Rows of the class that missed this gate.
    missed: u64,
    /// TTFA only: completed cohort rows that never answered (not in the
    /// histogram, said in its caption).
    no_answer: Option<u64>,
}

/// The x scale of one histogram: 0 ms to `top` ms (a round number at or
/// above the largest value and the gate) over the plot's width.
struct Scale {
    top: f64,
    x0: f64,
    x1: f64,
    y0: f64,
}

impl Scale {
    fn of(values: &[f64], gate: Option<f64>) -> Scale {
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
        Scale {
            top,
            x0: HIST_LEFT,
            x1: HIST_W - HIST_RIGHT,
            y0: HIST_H - HIST_BOTTOM,
        }
    }

    fn x_of(&self, v: f64) -> f64 {
        self.x0 + (v / self.top).clamp(0.0, 1.0) * (self.x1 - self.x0)
    }
}

/// One histogram figure: bars, axes, the gate line and the caption.
fn histogram(o: &mut String, class: &str, metric: &Metric, rule: &str, values: &[f64]) {
    let empty = match metric.key {
        "tpot" => "no completed rows with more than one output token",
        "ttfa" => "no completed row answered",
        _ => "no completed rows",
    };
    let look = Chart {
        key: metric.key,
        label: metric.label,
        gate: metric.gate,
        gate_word: "gate",
        empty,
        bars: Bars::ROWS,
    };
    chart(o, class, &look, rule, values);
    caption(o, metric);
}

/// What one histogram's chart shows, beside its values: the figure's
/// `data-metric`, its title, its gate and how the gate and bars are named.
pub(super) struct Chart<'a> {
    /// The figure's `data-metric` (`ttft`, `tpot`, `e2e`, `gap`).
    pub(super) key: &'a str,
    /// The title, before ` (ms)`.
    pub(super) label: &'a str,
    pub(super) gate: Option<f64>,
    /// The gate's name on its label (`gate ≤ 100`, `no gate`).
    pub(super) gate_word: &'a str,
    /// Said in the middle of the plot when there are no values.
    pub(super) empty: &'a str,
    pub(super) bars: Bars,
}

/// Opens a histogram's `<figure>` and draws its SVG: title, bars, axes and
/// the gate. The caller writes the `<figcaption>` and closes the figure.
pub(super) fn chart(o: &mut String, class: &str, look: &Chart, rule: &str, values: &[f64]) {
    let scale = Scale::of(values, look.gate);
    let (x0, x1) = (scale.x0, scale.x1);
    let _ = writeln!(
        o,
        "<figure class=\"dist\" data-class=\"{}\" data-metric=\"{}\">\n\
         <svg width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" role=\"img\" \
         aria-label=\"{} histogram\" data-ms0=\"0\" data-ms1=\"{}\" data-x0=\"{}\" data-x1=\"{}\">",
        escape(class),
        look.key,
        look.label,
        short(scale.top),
        px(x0),
        px(x1),
        w = px(HIST_W),
        h = px(HIST_H),
    );
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"14\" font-weight=\"600\">{} (ms)</text>",
        px(x0),
        look.label
    );
    if values.is_empty() {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\" class=\"no-gate\">{}</text>",
            px((x0 + x1) / 2.0),
            px((HIST_TOP + scale.y0) / 2.0),
            look.empty
        );
    }
    let cmax = bars(o, &scale, values, &look.bars);
    axes(o, &scale, cmax);
    gate_line(o, &scale, look.gate, rule, look.gate_word);
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">ms</text>\n</svg>",
        px((x0 + x1) / 2.0),
        px(HIST_H - 4.0)
    );
}

/// How the bars of one histogram read: what a count counts, and the least
/// height of a non-empty bar.
pub(super) struct Bars {
    /// The plural noun of a bar's tooltip (`12 rows`, `12 gaps`; `1 row`).
    pub(super) noun: &'static str,
    /// A non-empty bar is at least this tall, so a single value among
    /// thousands (one stall among a run's gaps) still shows; 0 for the
    /// latency histograms, whose bars are exactly proportional.
    pub(super) min_height: f64,
}

impl Bars {
    /// The latency histograms: rows, heights exactly proportional.
    const ROWS: Bars = Bars {
        noun: "rows",
        min_height: 0.0,
    };
}

/// The bars: `values` counted into [`HISTOGRAM_BINS`] equal bins from 0 ms
/// (a value past the top goes into the last). Returns the tallest count.
fn bars(o: &mut String, scale: &Scale, values: &[f64], look: &Bars) -> u64 {
    let bins = HISTOGRAM_BINS;
    let width = scale.top / bins as f64;
    let mut counts = vec![0u64; bins];
    for &v in values {
        let b = ((v.max(0.0) / width).floor() as usize).min(bins - 1);
        counts[b] += 1;
    }
    let cmax = counts.iter().copied().max().unwrap_or(0);
    let plot_h = scale.y0 - HIST_TOP;
    for (b, &n) in counts.iter().enumerate() {
        if n == 0 {
            continue;
        }
        let h = (n as f64 / cmax.max(1) as f64 * plot_h).max(look.min_height);
        let (lo, hi) = (b as f64 * width, (b + 1) as f64 * width);
        let _ = writeln!(
            o,
            "<rect class=\"bar\" data-count=\"{n}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>[{}, {}) ms: {n} {}</title></rect>",
            px(scale.x_of(lo) + 0.5),
            px(scale.y0 - h),
            px((scale.x_of(hi) - scale.x_of(lo) - 1.0).max(0.5)),
            px(h),
            short(lo),
            short(hi),
            if n == 1 {
                look.noun.trim_end_matches('s')
            } else {
                look.noun
            }
        );
    }
    cmax
}

/// Axes: x ticks in ms, the tallest bar's count on y.
fn axes(o: &mut String, scale: &Scale, cmax: u64) {
    let (x0, x1, y0) = (scale.x0, scale.x1, scale.y0);
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
    for v in ticks(0.0, scale.top, 5.0) {
        let x = scale.x_of(v);
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
}

/// The gate as a black line with its value, or "no {word}"; the label
/// (`{word} ≤ 100`) sits in its own row above the plot area, beside the
/// line's top, never on a bar.
fn gate_line(o: &mut String, scale: &Scale, gate: Option<f64>, rule: &str, word: &str) {
    let (x0, x1, y0) = (scale.x0, scale.x1, scale.y0);
    match gate {
        Some(g) => {
            let x = x0 + (g / scale.top).clamp(0.0, 1.0) * (x1 - x0);
            let right_half = x > (x0 + x1) / 2.0;
            let _ = writeln!(
                o,
                "<line class=\"gate\" data-gate-ms=\"{}\" x1=\"{x:.2}\" y1=\"{}\" x2=\"{x:.2}\" y2=\"{}\"/>\
                 <text class=\"gate-label\" x=\"{}\" y=\"{}\" text-anchor=\"{}\">{word} {rule} {}</text>",
                short(g),
                px(GATE_LABEL_Y - 8.0),
                px(y0),
                px(if right_half { x - 4.0 } else { x + 4.0 }),
                px(GATE_LABEL_Y),
                if right_half { "end" } else { "start" },
                short(g)
            );
        }
        None => {
            let _ = writeln!(
                o,
                "<text class=\"no-gate\" x=\"{}\" y=\"{}\" text-anchor=\"end\">no {word}</text>",
                px(x1),
                px(GATE_LABEL_Y)
            );
        }
    }
}

/// The caption: count, percentiles, max, and how many rows were over the gate.
fn caption(o: &mut String, metric: &Metric) {
    let summary = metric.summary;
    let gate_part = match metric.gate {
        Some(_) => format!(" · over the gate: {}", metric.missed),
        None => " · no gate".to_owned(),
    };
    let no_answer = metric
        .no_answer
        .map_or_else(String::new, |n| format!(" · no answer: {n}"));
    let _ = writeln!(
        o,
        "<figcaption>n {} · p50 {} · p95 {} · p99 {} · max {} ms{gate_part}{no_answer}</figcaption>\n</figure>",
        summary.n,
        opt(summary.p50, 1),
        opt(summary.p95, 1),
        opt(summary.p99, 1),
        opt(summary.max, 1)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1000 values of 1 ms and one of 100 ms: the axis runs to 100 ms
    /// (step nice_step(20) = 20), bins 2.5 ms wide; the lone value is bin 39,
    /// 1/1000 of the tallest bar: 0.132 px of the 132 px plot (168 − 36).
    /// The latency look keeps that exactly (0.1 tall, top 167.9); the gap look
    /// lifts it to its floor of 2 px (top 166).
    #[test]
    fn a_lone_value_gets_the_least_bar_height_only_where_asked() {
        let mut values = vec![1.0; 1000];
        values.push(100.0);
        let scale = Scale::of(&values, None);
        assert_eq!(scale.top, 100.0);
        let lone = |look: &Bars| {
            let mut o = String::new();
            assert_eq!(bars(&mut o, &scale, &values, look), 1000);
            o.lines()
                .find(|l| l.contains("data-count=\"1\""))
                .map(str::to_owned)
                .expect("the lone bar")
        };
        let exact = lone(&Bars::ROWS);
        assert!(
            exact.contains("y=\"167.9\"") && exact.contains("height=\"0.1\""),
            "{exact}"
        );
        assert!(exact.contains(": 1 row</title>"), "{exact}");
        let floored = lone(&Bars {
            noun: "gaps",
            min_height: 2.0,
        });
        assert!(
            floored.contains("y=\"166.0\"") && floored.contains("height=\"2.0\""),
            "{floored}"
        );
        assert!(floored.contains(": 1 gap</title>"), "{floored}");
    }
}
