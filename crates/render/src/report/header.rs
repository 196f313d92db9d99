//! The page header: the headline (the answer), then the trace's identity and
//! the contract it was judged under (window, warm-up, equality, tokens),
//! with the boundary and workload labels as small two-column tables.

use std::fmt::Write;

use crate::report::html::escape;
use crate::sensitivity::short;
use goodput_core::receipt::Receipt;
use goodput_core::trace::ArrivalMode;

/// The header section: what was judged, under which contract.
pub(super) fn section(o: &mut String, r: &Receipt) {
    let _ = writeln!(o, "<header>\n<h1>goodput report</h1>");
    if r.contract.arrival_mode == ArrivalMode::ClosedLoop {
        let _ = writeln!(
            o,
            "<p class=\"closed-loop\" id=\"closed-loop\"><strong>Closed-loop workload.</strong> \
             Each request was sent when an earlier one ended, so the server paced its own load: \
             these figures are not evidence that an SLA holds at any offered rate \
             (docs/contract.md §10.2).</p>"
        );
    }
    crate::report::headline::section(o, r);
    let _ = writeln!(
        o,
        "<h2>Run and contract</h2>\n<div class=\"run\">\n<dl class=\"meta\">"
    );
    run_items(o, r);
    let _ = writeln!(o, "</dl>\n<div class=\"labels-box\">");
    label_tables(o, r);
    let _ = writeln!(o, "</div>");
    let _ = writeln!(o, "</div>\n</header>");
}

/// One term and its description.
fn item(o: &mut String, k: &str, v: String) {
    let _ = writeln!(o, "<dt>{k}</dt><dd>{v}</dd>");
}

/// The trace, window, warm-up, equality, tokens, percentiles and limits.
fn run_items(o: &mut String, r: &Receipt) {
    let c = &r.contract;
    let w = &c.window;
    item(
        o,
        "trace",
        format!(
            "sha256 <code id=\"sha256\">{}</code> · {} bytes · {} rows",
            escape(&r.trace.sha256),
            r.trace.bytes,
            r.trace.rows
        ),
    );
    item(
        o,
        "window",
        format!(
            "[{}, {}) ms = {} s · horizon {} ms",
            short(w.start_ms),
            short(w.end_ms),
            short(w.duration_ms / 1000.0),
            short(w.horizon_ms)
        ),
    );
    if c.arrivals_unknown.is_some() {
        item(
            o,
            "arrivals",
            format!(
                "<b id=\"arrivals-unknown\">{}</b>",
                escape(goodput_core::receipt::ARRIVALS_UNKNOWN_LINE)
            ),
        );
    }
    item(
        o,
        "warm-up",
        c.warmup.as_ref().map_or_else(
            || "none".to_owned(),
            |wu| format!("[{}, {}) ms", short(wu.start_ms), short(wu.end_ms)),
        ),
    );
    item(
        o,
        "equality",
        format!(
            "{} (a value equal to its gate {})",
            escape(&c.equality),
            if c.equality == "strict" {
                "misses"
            } else {
                "passes"
            }
        ),
    );
    item(
        o,
        "tokens",
        format!(
            "{} → per-token figure is <b>{}</b>",
            escape(&c.tokens),
            escape(&c.tpot_label)
        ),
    );
    item(
        o,
        "percentiles",
        format!("{} (rank ⌈p·n/100⌉)", escape(&c.percentile_method)),
    );
    item(
        o,
        "limits",
        format!("{} rows · {} bytes", r.limits.max_rows, r.limits.max_bytes),
    );
}

/// The boundary and workload labels, when there are any: one small table
/// each, a label per line (key, value), not a run of `key = value` pairs.
fn label_tables(o: &mut String, r: &Receipt) {
    let c = &r.contract;
    for (what, labels) in [("boundary", &c.boundary), ("workload", &c.workload)] {
        if labels.is_empty() {
            continue;
        }
        let _ = writeln!(
            o,
            "<table class=\"labels\" id=\"{what}-labels\">\n<caption>{what}</caption>\n<tbody>"
        );
        for (k, v) in labels.iter() {
            let v = match v {
                goodput_core::trace::Scalar::Bool(b) => b.to_string(),
                goodput_core::trace::Scalar::Number(n) => short(*n),
                goodput_core::trace::Scalar::String(s) => s.clone(),
            };
            let _ = writeln!(
                o,
                "<tr><th class=\"name\" scope=\"row\">{}</th><td class=\"name\">{}</td></tr>",
                escape(k),
                escape(&v)
            );
        }
        let _ = writeln!(o, "</tbody>\n</table>");
    }
}
