//! The answer first: goodput/s and the pass share of all rows with their
//! intervals, the saturation verdict in words ("overloaded: the server
//! served 2.10/s of 3.80/s offered"), and per class the gates it was judged
//! by beside its own pass share, before any table of counts.

use std::fmt::Write;

use crate::report::html::{escape, tpot_name};
use crate::report::intervals::share_with_interval;
use crate::sensitivity::short;
use crate::text::fixed;
use goodput_core::receipt::saturation::Saturation;
use goodput_core::receipt::Receipt;

/// The saturation verdict as a sentence a reader takes in at a glance:
/// `overloaded: the server served 2.10/s of 3.80/s offered`.
pub fn saturation_sentence(s: &Saturation) -> String {
    format!("{}: {}", s.verdict.as_str(), saturation_clause(s))
}

/// [`saturation_sentence`] without the verdict (the headline shows the
/// verdict in large type above it).
fn saturation_clause(s: &Saturation) -> String {
    let served = s
        .served_per_s
        .map_or_else(|| "—".to_owned(), |v| format!("{v:.2}/s"));
    let offered = format!("{:.2}/s", s.offered_per_s);
    match s.verdict.as_str() {
        "overloaded" => format!("the server served {served} of {offered} offered"),
        "steady" => format!("the server kept up, serving {served} of {offered} offered"),
        _ => format!(
            "the server served {served} of {offered} offered; too little evidence to say whether it kept up"
        ),
    }
}

/// One gate in words: `TTFT ≤ 1000 ms`, or `TTFT: no gate`.
fn gate(name: &str, rule: &str, g: Option<f64>) -> String {
    g.map_or_else(
        || format!("{name}: no gate"),
        |v| format!("{name} {rule} {} ms", short(v)),
    )
}

/// The headline block: three figures, then the class gates table.
pub(super) fn section(o: &mut String, r: &Receipt) {
    let all = &r.results.all;
    let rt = &all.rates;
    let i = &all.intervals.goodput_per_s;
    let s = &all.saturation;
    let verdict = s.verdict.as_str();
    let _ = writeln!(
        o,
        "<section id=\"headline\" aria-label=\"headline\">\n<div class=\"figures\">\n\
         <div class=\"figure\"><div class=\"big\" id=\"headline-goodput\">{}/s</div>\
         <div class=\"what\">goodput: requests per second that met every gate <span class=\"nw\">({}–{})</span></div></div>\n\
         <div class=\"figure\"><div class=\"big\" id=\"headline-pass\">{}</div>\
         <div class=\"what\">pass share: {} of {} cohort requests met every gate <span class=\"nw\">{}</span></div></div>\n\
         <div class=\"figure verdict-{verdict}\"><div class=\"big\" id=\"headline-verdict\">{verdict}</div>\
         <div class=\"what\" id=\"headline-saturation\">{}</div></div>\n</div>",
        fixed(rt.goodput_per_s, 2),
        fixed(i.lower, 2),
        fixed(i.upper, 2),
        goodput_util::figures::percent_or_dash(rt.pass_share, 1),
        all.counts.pass,
        all.counts.cohort,
        all.intervals.pass_share.map_or_else(String::new, |i| format!(
            "({}–{})",
            goodput_util::figures::percent(i.lower, 1),
            goodput_util::figures::percent(i.upper, 1)
        )),
        escape(&saturation_clause(s)),
    );
    gates_table(o, r);
    let _ = writeln!(
        o,
        "<p class=\"note\">Ranges in brackets are {} % intervals (How sure, below). Evidence for the verdict: {}</p>\n</section>",
        goodput_core::intervals::percent(r.contract.intervals.confidence),
        escape(&s.evidence)
    );
}

/// Per class: the gates it was judged by and its own pass share.
fn gates_table(o: &mut String, r: &Receipt) {
    let c = &r.contract;
    let rule = if c.equality == "strict" { "<" } else { "≤" };
    let tp = tpot_name(r);
    let stall_gated = c
        .classes
        .values()
        .any(|g| g.stall_ms.is_some() || g.ttfa_ms.is_some());
    let _ = writeln!(
        o,
        "<div class=\"scroll\">\n<table id=\"gates\">\n<thead><tr><th class=\"name\">class</th>\
         <th class=\"name\">judged by (a request passes when it meets {})</th><th>pass share</th><th>goodput/s</th></tr></thead>\n<tbody>",
        if stall_gated {
            "every gate listed"
        } else {
            "all three"
        }
    );
    for (name, g) in &c.classes {
        let default = if c.default_class.as_deref() == Some(name.as_str()) {
            " <span class=\"muted\">(default)</span>"
        } else {
            ""
        };
        let (share, goodput) = r.results.classes.get(name).map_or_else(
            || ("—".to_owned(), "—".to_owned()),
            |b| {
                (
                    share_with_interval(b.rates.pass_share, b.intervals.pass_share),
                    fixed(b.rates.goodput_per_s, 2),
                )
            },
        );
        // A stall gate only where a class declares one (never "stall: no
        // gate": traces without gaps read as before).
        let mut stall = g.stall_ms.map_or_else(String::new, |v| {
            format!(" · {}", gate("stall", rule, Some(v)))
        });
        if let Some(v) = g.ttfa_ms {
            stall.push_str(&format!(" · {}", gate("TTFA", rule, Some(v))));
        }
        let _ = writeln!(
            o,
            "<tr data-class=\"{n}\"><td class=\"name\"><b>{n}</b>{default}</td><td class=\"name\">{} · {} · {}{}</td>\
             <td data-col=\"passShare\">{}</td><td data-col=\"goodputPerS\">{goodput}</td></tr>",
            escape(&gate("TTFT", rule, g.ttft_ms)),
            escape(&gate(tp, rule, g.tpot_ms)),
            escape(&gate("E2E", rule, g.e2e_ms)),
            escape(&stall),
            escape(&share),
            n = escape(name),
        );
    }
    let _ = writeln!(o, "</tbody>\n</table>\n</div>");
}
