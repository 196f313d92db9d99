//! The sensitivity sweep table (declared line first, highlighted) and the
//! fragility of the declared result.

use std::fmt::Write;

use crate::report::html::escape;
use crate::sensitivity::short;
use crate::text::{fixed, share};
use goodput_core::review::sensitivity::{Fragility, SweepEntry, TippingPoint};
use goodput_core::trace::Gates;

fn gates_text(g: &Gates) -> String {
    let one = |x: Option<f64>| x.map_or_else(|| "–".to_owned(), short);
    let mut out = format!("{}/{}/{}", one(g.ttft_ms), one(g.tpot_ms), one(g.e2e_ms));
    for (name, v) in [("stall", g.stall_ms), ("TTFA", g.ttfa_ms)] {
        if let Some(v) = v {
            let _ = write!(out, " {name} {}", short(v));
        }
    }
    out
}

/// The sweep section.
pub(super) fn section(o: &mut String, entries: &[SweepEntry]) {
    let _ = writeln!(
        o,
        "<section id=\"sweep-section\">\n<h2>Sensitivity sweep</h2>"
    );
    let Some(first) = entries.first() else {
        let _ = writeln!(
            o,
            "<p class=\"note\">No sweep was computed.</p>\n</section>"
        );
        return;
    };
    let scope = match &first.class {
        None => "all rows; every class's gates move together".to_owned(),
        Some(c) => format!("class {} alone", escape(c)),
    };
    // Stall and TTFA in the heading only where some class declares them.
    let extra = entries.iter().any(|e| {
        e.classes
            .values()
            .any(|g| g.stall_ms.is_some() || g.ttfa_ms.is_some())
    });
    let in_force = if extra {
        "TTFT/TPOT/E2E, stall, TTFA"
    } else {
        "TTFT/TPOT/E2E"
    };
    let _ = writeln!(
        o,
        "<p class=\"note\">Scope: {scope}. Each gate multiplied by a factor, one gate at a time (null gates stay null); \
         cohort {} rows under every line. Only the first, highlighted line is the declared result; every other line is hypothetical.</p>\n\
         <div class=\"scroll\">\n<table id=\"sweep\">\n<thead><tr><th class=\"name\"></th><th>factors TTFT/TPOT/E2E</th><th>pass</th><th>goodput/s</th>\
         <th>pass share</th><th>Δpass</th><th>Δgoodput/s</th><th>Δshare</th><th class=\"name\">gates in force, ms ({in_force})</th></tr></thead>\n<tbody>",
        first.cohort
    );
    for e in entries {
        let (label, cls) = if e.hypothetical {
            ("hypothetical", "hypothetical")
        } else {
            ("declared", "declared")
        };
        let factors = escape(&crate::sensitivity::factor_label(&e.factors));
        let (dp, dg, ds) = crate::sensitivity::delta_cells(e);
        let in_force: Vec<String> = e
            .classes
            .iter()
            .map(|(n, g)| format!("{} {}", escape(n), gates_text(g)))
            .collect();
        let _ = writeln!(
            o,
            "<tr class=\"{cls}\" data-hypothetical=\"{}\"><td class=\"name\">{label}</td><td>{factors}</td><td data-col=\"pass\">{}</td>\
             <td data-col=\"goodputPerS\">{}</td><td>{}</td><td>{dp}</td><td>{dg}</td><td>{ds}</td><td class=\"name\">{}</td></tr>",
            e.hypothetical,
            e.pass,
            fixed(e.goodput_per_s, 3),
            share(e.pass_share),
            in_force.join(" · ")
        );
    }
    let _ = writeln!(o, "</tbody>\n</table>\n</div>");
    if let Some(fr) = &first.fragility {
        fragility(o, fr, first.pass);
    }
    let _ = writeln!(o, "</section>");
}

/// The declared result's fragility: near-gate rows, then per metric the
/// nearest tightening and loosening that change the pass count.
fn fragility(o: &mut String, fr: &Fragility, declared_pass: u64) {
    let n = &fr.near_gate;
    let mut per_gate = format!("TTFT {}, TPOT {}, E2E {}", n.ttft, n.tpot, n.e2e);
    for (name, count) in [("stall", n.stall), ("TTFA", n.ttfa)] {
        if let Some(count) = count {
            let _ = write!(per_gate, ", {name} {count}");
        }
    }
    let _ = writeln!(
        o,
        "<p class=\"note\" id=\"fragility\">Fragility: {} of {} passing rows sit within {} % below a gate ({per_gate}).</p>\n<ul class=\"notes\">",
        n.rows,
        declared_pass,
        short(n.share * 100.0),
    );
    let strict = fr.equality == goodput_core::trace::Equality::Strict;
    let tip = &fr.tipping;
    let named = [
        ("TTFT", Some(&tip.ttft)),
        ("TPOT", Some(&tip.tpot)),
        ("E2E", Some(&tip.e2e)),
        ("stall", tip.stall.as_ref()),
        ("TTFA", tip.ttfa.as_ref()),
    ];
    for (name, t) in named.into_iter().filter_map(|(n, t)| t.map(|t| (n, t))) {
        let point = |p: &TippingPoint, verb: &str, when: &str| {
            format!(
                "pass {verb} once the gate is {when} {} ms ({:+.1} % from {} ms, class {}, {} row(s))",
                short(p.threshold_ms),
                p.change_pct,
                short(p.gate_ms),
                escape(&p.class),
                p.rows
            )
        };
        let down = t.down.as_ref().map_or_else(
            || "no tightening drops a row".to_owned(),
            |p| point(p, "falls", if strict { "at or below" } else { "below" }),
        );
        let up = t.up.as_ref().map_or_else(
            || "no loosening adds a row".to_owned(),
            |p| point(p, "rises", if strict { "above" } else { "at or above" }),
        );
        let _ = writeln!(o, "<li><b>{name}</b> down: {down}; up: {up}</li>");
    }
    let _ = writeln!(o, "</ul>");
}
