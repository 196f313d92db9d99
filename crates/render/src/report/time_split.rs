//! "Where the time went": per class with the server's own timing
//! (docs/contract.md §10.17), the summed client TTFT as one stacked bar —
//! the engine's queue, its prefill, and the time outside the engine — and a
//! second bar for the rows that missed their TTFT gate. Left out when no
//! class has a `serverTiming` block, so such pages keep their bytes.

use std::fmt::Write;

use crate::report::html::escape;
use crate::report::svg::px;
use goodput_core::receipt::server_timing::TimeSplit;
use goodput_core::receipt::Receipt;

/// Width of a full bar, SVG pixels.
const BAR_W: f64 = 600.0;
/// Left edge of the bars (room for the bar's label).
const BAR_X: f64 = 110.0;
const BAR_H: f64 = 18.0;
/// Queue, prefill, outside: the Okabe–Ito orange and sky blue, and grey.
const PARTS: [(&str, &str); 3] = [
    ("queue", "#E69F00"),
    ("prefill", "#56B4E9"),
    ("outside the engine", "#999999"),
];

/// The section.
pub(super) fn section(o: &mut String, r: &Receipt) {
    let classes: Vec<_> = r
        .results
        .classes
        .iter()
        .filter_map(|(n, b)| b.server_timing.as_ref().map(|t| (n, t)))
        .collect();
    if classes.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "<section id=\"time-split\">\n<h2>Where the time went</h2>\n<p class=\"note\">The client's TTFT \
         of the rows whose server reported its own timing, summed and split into the engine's \
         <b>queue</b>, its <b>prefill</b>, and the time <b>outside the engine</b> (client, network, \
         anything in front of the server: TTFT − queue − prefill). The second bar of a class is the \
         same split over the rows that missed their TTFT gate.</p>"
    );
    for (name, t) in classes {
        let bars: Vec<(&str, TimeSplit)> = std::iter::once(("all split rows", t.split))
            .chain(
                t.ttft_misses
                    .filter(|m| m.rows > 0)
                    .map(|m| ("TTFT misses", m)),
            )
            .collect();
        let h = 26.0 + 30.0 * bars.len() as f64;
        let _ = writeln!(
            o,
            "<h3>class {n}</h3>\n<svg class=\"time-split\" data-class=\"{n}\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" role=\"img\" aria-label=\"where the TTFT went\">",
            n = escape(name),
            w = px(BAR_X + BAR_W + 10.0),
            h = px(h),
        );
        for (k, (label, split)) in bars.iter().enumerate() {
            bar(o, label, split, 4.0 + 30.0 * k as f64);
        }
        legend(o, h - 8.0);
        let _ = writeln!(o, "</svg>");
    }
    let _ = writeln!(o, "</section>");
}

/// One stacked bar at `y`: its label, then one rect per part with a title.
fn bar(o: &mut String, label: &str, s: &TimeSplit, y: f64) {
    let _ = writeln!(
        o,
        "<text x=\"0\" y=\"{}\">{label} ({})</text>",
        px(y + 13.0),
        s.rows
    );
    let shares = [s.queue_share, s.prefill_share, s.outside_share];
    let mut x = BAR_X;
    for ((part, colour), share) in PARTS.iter().zip(shares) {
        // A negative outside share (server figures past the client's TTFT)
        // draws nothing; its title still says it.
        let w = share.unwrap_or(0.0).clamp(0.0, 1.0) * BAR_W;
        let pct = share.map_or_else(|| "—".to_owned(), |v| format!("{:.1} %", v * 100.0));
        let _ = writeln!(
            o,
            "<rect data-part=\"{part}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{BAR_H}\" fill=\"{colour}\">\
             <title>{part}: {pct} of {} ms</title></rect>",
            px(x),
            px(y),
            px(w),
            px(s.ttft_ms),
        );
        x += w;
    }
}

fn legend(o: &mut String, y: f64) {
    let mut x = BAR_X;
    for (part, colour) in PARTS {
        let _ = writeln!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{colour}\"/><text x=\"{}\" y=\"{}\">{part}</text>",
            px(x),
            px(y - 9.0),
            px(x + 14.0),
            px(y)
        );
        x += 150.0;
    }
}
