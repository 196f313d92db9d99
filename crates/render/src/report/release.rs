//! The release-gate section of the page: the diagnosis per class (counts,
//! then the reading), the recovery after the burst phase with a bar chart of
//! p95 TTFT per arrival-time bin, and the per-GPU and cost figures. Left out
//! entirely when none of them applies.

use std::fmt::Write;

use crate::diagnosis::{counts, recovery_figure};
use crate::report::html::escape;
use crate::report::svg::{px, ticks};
use goodput_core::receipt::recovery::{ClassRecovery, Recovery};
use goodput_core::receipt::Receipt;
use goodput_core::review::diagnosis::diagnose;

const W: f64 = 640.0;
const H: f64 = 140.0;
const LEFT: f64 = 56.0;
const BOTTOM: f64 = 22.0;

/// The section (or nothing).
pub(super) fn section(o: &mut String, r: &Receipt) {
    let diagnoses = diagnose(r);
    if diagnoses.is_empty() && r.recovery.is_none() && r.cost.is_none() && r.energy.is_none() {
        return;
    }
    let _ = writeln!(
        o,
        "<section id=\"release-section\">\n<h2>Diagnosis, recovery and cost</h2>"
    );
    if !diagnoses.is_empty() {
        let _ = writeln!(
            o,
            "<p>A reading of each class's counts (not a measurement): counts first, then where they point.</p>\n<ul id=\"diagnosis\">"
        );
        for d in &diagnoses {
            let _ = writeln!(
                o,
                "<li><b>{}</b>: {} → {}</li>",
                escape(&d.class),
                escape(&counts(d)),
                escape(&d.reading())
            );
        }
        let _ = writeln!(o, "</ul>");
    }
    if let Some(rec) = &r.recovery {
        recovery(o, rec);
    }
    if let Some(e) = &r.energy {
        let text = crate::diagnosis::energy(e);
        let _ = writeln!(o, "<pre id=\"energy\">{}</pre>", escape(text.trim_end()));
    }
    if let Some(c) = &r.cost {
        let text = crate::diagnosis::cost(c, r.contract.resources.as_ref());
        let _ = writeln!(o, "<pre id=\"cost\">{}</pre>", escape(text.trim_end()));
    }
    let _ = writeln!(o, "</section>");
}

fn recovery(o: &mut String, rec: &Recovery) {
    let _ = writeln!(
        o,
        "<h3>Recovery after phase “{}”</h3>\n<p>The burst ends at {} ms. A class has recovered at the first arrival \
         after its last miss of the TTFT or E2E gate beyond a tolerance of {} (failed rows and unfinished rows \
         certain to miss count as misses): from there on, every arrival but at most that many met the gates.</p>",
        escape(&rec.burst_phase),
        rec.burst_end_ms,
        rec.tolerance
    );
    for (name, c) in &rec.classes {
        let _ = writeln!(
            o,
            "<p class=\"recovery\"><b>{}</b>: {}</p>",
            escape(name),
            escape(&recovery_figure(c))
        );
        bins_chart(o, rec, name, c);
    }
}

/// Bars of p95 TTFT per arrival-time bin; the burst is shaded.
fn bins_chart(o: &mut String, rec: &Recovery, name: &str, c: &ClassRecovery) {
    let (Some(first), Some(last)) = (c.ttft_bins.first(), c.ttft_bins.last()) else {
        return;
    };
    let t0 = first.start_ms;
    let span = (last.end_ms - t0).max(f64::MIN_POSITIVE);
    let top = c
        .ttft_bins
        .iter()
        .filter_map(|b| b.p95_ttft_ms)
        .fold(0.0_f64, f64::max)
        .max(1.0);
    let plot_w = W - LEFT - 8.0;
    let plot_h = H - BOTTOM - 8.0;
    let x = |t: f64| LEFT + (t - t0) / span * plot_w;
    let y = |v: f64| 8.0 + plot_h - v / top * plot_h;
    let _ = writeln!(
        o,
        "<svg class=\"ttft-bins\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\" \
         aria-label=\"p95 TTFT by arrival time, class {}\">",
        escape(name)
    );
    let (b0, b1) = (
        rec.burst_start_ms.max(t0),
        rec.burst_end_ms.min(last.end_ms),
    );
    if b1 > b0 {
        let _ = writeln!(
            o,
            "<rect x=\"{}\" y=\"8\" width=\"{}\" height=\"{}\" fill=\"#fde2e2\"><title>burst</title></rect>",
            px(x(b0)),
            px(x(b1) - x(b0)),
            px(plot_h)
        );
    }
    for b in &c.ttft_bins {
        if let Some(v) = b.p95_ttft_ms {
            let _ = writeln!(
                o,
                "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#4a6fa5\"><title>[{}, {}) ms: p95 TTFT {} ms, \
                 {} arrivals, {} completed</title></rect>",
                px(x(b.start_ms) + 1.0),
                px(y(v)),
                px((x(b.end_ms) - x(b.start_ms) - 2.0).max(1.0)),
                px(plot_h + 8.0 - y(v)),
                b.start_ms,
                b.end_ms,
                v,
                b.arrivals,
                b.completed
            );
        }
    }
    for v in ticks(0.0, top, 3.0) {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\">{v} ms</text>",
            px(LEFT - 4.0),
            px(y(v) + 3.0)
        );
    }
    for t in ticks(0.0, span / 1000.0, 6.0) {
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\">{t} s</text>",
            px(x(t0 + t * 1000.0)),
            px(H - 6.0)
        );
    }
    let _ = writeln!(o, "</svg>");
}
