//! The page header: the trace's identity and the contract it was judged
//! under (window, warm-up, equality, tokens, classes and their gates, labels).

use std::fmt::Write;

use crate::report::html::{escape, tpot_name};
use crate::sensitivity::short;
use goodput_core::receipt::Receipt;
use goodput_core::trace::ArrivalMode;

fn gate_text(g: Option<f64>, rule: &str) -> String {
    g.map_or_else(
        || "no gate".to_owned(),
        |v| format!("{rule} {} ms", short(v)),
    )
}

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
    let _ = writeln!(o, "<dl class=\"meta\">");
    run_items(o, r);
    class_items(o, r);
    label_items(o, r);
    let _ = writeln!(o, "</dl>\n</header>");
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

/// One line per class: its gates, and whether it is the default.
fn class_items(o: &mut String, r: &Receipt) {
    let c = &r.contract;
    let rule = if c.equality == "strict" { "<" } else { "≤" };
    let tp = tpot_name(r);
    for (name, g) in &c.classes {
        let default = if c.default_class.as_deref() == Some(name.as_str()) {
            " (default)"
        } else {
            ""
        };
        item(
            o,
            "class",
            format!(
                "<b>{}</b>{default}: TTFT {} · {tp} {} · E2E {}",
                escape(name),
                gate_text(g.ttft_ms, rule),
                gate_text(g.tpot_ms, rule),
                gate_text(g.e2e_ms, rule)
            ),
        );
    }
}

/// The boundary and workload labels, when there are any.
fn label_items(o: &mut String, r: &Receipt) {
    let c = &r.contract;
    for (what, labels) in [("boundary", &c.boundary), ("workload", &c.workload)] {
        if labels.is_empty() {
            continue;
        }
        let text: Vec<String> = labels
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    goodput_core::trace::Scalar::Bool(b) => b.to_string(),
                    goodput_core::trace::Scalar::Number(n) => short(*n),
                    goodput_core::trace::Scalar::String(s) => s.clone(),
                };
                format!("{} = {}", escape(k), escape(&v))
            })
            .collect();
        item(o, what, text.join(" · "));
    }
}
