//! The latency distributions: per class, one histogram per metric with the
//! class's gate drawn on it.

use std::fmt::Write;

use crate::report::chart::{chart, Bars, Chart, HISTOGRAM_BINS};
use crate::report::gap_histogram::{self, MIN_GAP_BAR_PX};
use crate::report::html::{escape, tpot_name};
use crate::text::opt;
use goodput_core::analyze::Analysis;
use goodput_core::receipt::LatencySummary;

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
