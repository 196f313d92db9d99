//! Why rows did not pass: misses per metric, failure reasons, censoring,
//! exclusions and invalid reasons, per block.

use std::fmt::Write;

use crate::report::html::{block_row_start, blocks, escape, tpot_name};
use goodput_core::receipt::Receipt;

/// Top reasons of a map, largest first (ties by name), escaped.
fn reason_list(map: &std::collections::BTreeMap<String, u64>) -> String {
    let mut v: Vec<(&String, &u64)> = map.iter().filter(|(_, c)| **c > 0).collect();
    if v.is_empty() {
        return "none".to_owned();
    }
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    v.iter()
        .map(|(k, c)| format!("{} {c}", escape(k)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The reasons section.
pub(super) fn section(o: &mut String, r: &Receipt) {
    let tp = tpot_name(r);
    // A stall column only when some class declares a stall gate, so a page
    // without one keeps its bytes.
    let stall_gated = r.results.all.reasons.miss.stall.is_some();
    let stall_head = if stall_gated {
        "<th>miss: stall</th>"
    } else {
        ""
    };
    // TTFA and no-answer columns only when some class declares a TTFA gate.
    let ttfa_gated = r.results.all.reasons.miss.ttfa.is_some();
    let ttfa_head = if ttfa_gated {
        "<th>miss: TTFA</th><th>miss: no answer</th>"
    } else {
        ""
    };
    let _ = writeln!(
        o,
        "<section id=\"reasons-section\">\n<h2>Why rows did not pass</h2>\n<div class=\"scroll\">\n<table id=\"reasons\">\n<thead><tr>\
         <th class=\"name\">block</th><th>miss: TTFT</th><th>miss: {tp}</th><th>miss: E2E</th>{stall_head}{ttfa_head}<th class=\"name\">failures</th>\
         <th>in flight</th><th>done after horizon</th><th>failed after horizon</th><th>known late</th>\
         <th>warm-up</th><th>outside window</th><th class=\"name\">invalid</th></tr></thead>\n<tbody>"
    );
    for (name, b) in blocks(r) {
        let s = &b.reasons;
        let stall = match (stall_gated, s.miss.stall) {
            (false, _) => String::new(),
            (true, Some(n)) => format!("<td data-col=\"stall\">{n}</td>"),
            (true, None) => "<td data-col=\"stall\">—</td>".to_owned(),
        };
        let ttfa = if ttfa_gated {
            let cell = |col: &str, n: Option<u64>| {
                n.map_or_else(
                    || format!("<td data-col=\"{col}\">—</td>"),
                    |n| format!("<td data-col=\"{col}\">{n}</td>"),
                )
            };
            cell("ttfa", s.miss.ttfa) + &cell("noAnswer", s.miss.no_answer)
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "{}<td>{}</td><td>{}</td><td>{}</td>{stall}{ttfa}<td class=\"name\">{}</td>\
             <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"name\">{}</td></tr>",
            block_row_start(name),
            s.miss.ttft,
            s.miss.tpot,
            s.miss.e2e,
            reason_list(&s.failure),
            s.censored.in_flight,
            s.censored.completed_after_horizon,
            s.censored.failed_after_horizon,
            s.censored.known_late,
            s.exclusion.warmup,
            s.exclusion.outside_window,
            reason_list(&s.invalid),
        );
    }
    let _ = writeln!(o, "</tbody>\n</table>\n</div>\n</section>");
}
