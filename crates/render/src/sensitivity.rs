//! A sweep for a person: the declared line first, one line per alternative,
//! then how fragile the declared result is. The JSON array is the record; this
//! is a view of it.

use std::fmt::Write;

use goodput_core::review::sensitivity::{
    Factors, Fragility, SweepEntry, TippingMetric, TippingPoint,
};
use goodput_core::trace::{Equality, Gates};

/// Formats a number for people: integers plainly, others with `decimals`
/// (trailing zeros kept so columns line up).
pub(crate) fn num(x: f64, decimals: usize) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.decimals$}")
    }
}

/// A change with its sign; zero is plain `0`.
fn signed(x: f64, decimals: usize) -> String {
    if x == 0.0 {
        "0".to_owned()
    } else {
        format!("{x:+.decimals$}")
    }
}

/// The changes from the declared line (pass, goodput/s, pass share in
/// percentage points) as table cells; dashes on the declared line itself.
pub(crate) fn delta_cells(e: &SweepEntry) -> (String, String, String) {
    if !e.hypothetical {
        return ("—".to_owned(), "—".to_owned(), "—".to_owned());
    }
    (
        signed(e.delta_pass as f64, 0),
        signed(e.delta_goodput_per_s, 3),
        e.delta_pass_share.map_or_else(
            || "—".to_owned(),
            |d| format!("{} pp", signed(d * 100.0, 1)),
        ),
    )
}

/// Up to three decimals, trailing zeros dropped: `0.5`, `62.5`, `55`
/// (50 × 1.1 is 55.00000000000001 in binary; the JSON keeps every digit).
pub fn short(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_owned()
    } else {
        s.to_owned()
    }
}

fn share(x: Option<f64>) -> String {
    goodput_util::figures::percent_or_dash(x, 1)
}

fn gate(g: Option<f64>) -> String {
    g.map_or_else(|| "-".to_owned(), short)
}

/// The gates in force: `ttft/tpot/e2e`, then ` stall S` and ` ttfa A`
/// where the class declares them.
pub(crate) fn gates(g: &Gates) -> String {
    let mut out = format!("{}/{}/{}", gate(g.ttft_ms), gate(g.tpot_ms), gate(g.e2e_ms));
    for (name, v) in [("stall", g.stall_ms), ("ttfa", g.ttfa_ms)] {
        if let Some(v) = v {
            let _ = write!(out, " {name} {}", short(v));
        }
    }
    out
}

/// The factors of a line: `t / p / e`, then ` · stall x` and ` · ttfa x`
/// when the line moves those gates.
pub(crate) fn factor_label(f: &Factors) -> String {
    let mut out = format!("{} / {} / {}", short(f.ttft), short(f.tpot), short(f.e2e));
    for (name, x) in [("stall", f.stall), ("ttfa", f.ttfa)] {
        if x != 1.0 {
            let _ = write!(out, " · {name} {}", short(x));
        }
    }
    out
}

/// Renders a sweep (declared entry first, as [`goodput_core::review::sensitivity::sweep`] returns it).
pub fn render(entries: &[SweepEntry]) -> String {
    let mut o = String::new();
    let Some(first) = entries.first() else {
        return o;
    };
    let scope = match &first.class {
        None => "all rows; every class's gates move together".to_owned(),
        Some(c) => format!("class {c:?} alone; other classes keep their gates"),
    };
    let _ = writeln!(o, "SWEEP     scope: {scope}");
    let _ = writeln!(
        o,
        "          cohort {} rows; gates scaled by plain multiplication (gate × factor); \
         only the first line is the declared result",
        first.cohort
    );
    let width = entries
        .iter()
        .map(|e| factor_label(&e.factors).chars().count())
        .max()
        .unwrap_or(0)
        .max(17);
    let extra = entries.iter().any(|e| {
        e.classes
            .values()
            .any(|g| g.stall_ms.is_some() || g.ttfa_ms.is_some())
    });
    let in_force_head = if extra {
        "gates in force (ttft/tpot/e2e, stall, ttfa ms)"
    } else {
        "gates in force (ttft/tpot/e2e ms)"
    };
    let _ = writeln!(
        o,
        "\n{:<13} {:<width$} {:>7} {:>10} {:>10} {:>7} {:>11} {:>9}  {in_force_head}",
        "", "factors t/p/e", "pass", "goodput/s", "pass share", "Δpass", "Δgoodput/s", "Δshare"
    );
    for e in entries {
        let label = if e.hypothetical {
            "hypothetical"
        } else {
            "declared"
        };
        let factors = factor_label(&e.factors);
        let (dp, dg, ds) = delta_cells(e);
        let in_force: Vec<String> = e
            .classes
            .iter()
            .map(|(name, g)| format!("{} {}", goodput_util::escape::terminal(name), gates(g)))
            .collect();
        let _ = writeln!(
            o,
            "{label:<13} {factors:<width$} {:>7} {:>10} {:>10} {dp:>7} {dg:>11} {ds:>9}  {}",
            e.pass,
            format!("{:.3}", e.goodput_per_s),
            share(e.pass_share),
            in_force.join(", ")
        );
    }
    if let Some(fragility) = &first.fragility {
        render_fragility(&mut o, fragility, first.pass);
    }
    // The net under the per-string escaping: no raw control byte leaves.
    goodput_util::escape::terminal_lines(&o).into_owned()
}

fn render_fragility(o: &mut String, f: &Fragility, pass: u64) {
    let n = &f.near_gate;
    let _ = writeln!(o, "\nFRAGILITY of the declared result");
    let mut per_gate = format!("ttft {}, tpot {}, e2e {}", n.ttft, n.tpot, n.e2e);
    for (name, count) in [("stall", n.stall), ("ttfa", n.ttfa)] {
        if let Some(count) = count {
            let _ = write!(per_gate, ", {name} {count}");
        }
    }
    let _ = writeln!(
        o,
        "near a gate  {} of {pass} passing rows sit within {} % below a gate ({per_gate})",
        n.rows,
        num(n.share * 100.0, 1),
    );
    let strict = f.equality == Equality::Strict;
    let t = &f.tipping;
    for (name, t) in [
        ("ttft", Some(&t.ttft)),
        ("tpot", Some(&t.tpot)),
        ("e2e", Some(&t.e2e)),
        ("stall", t.stall.as_ref()),
        ("ttfa", t.ttfa.as_ref()),
    ] {
        if let Some(t) = t {
            render_tipping(o, name, t, strict);
        }
    }
}

fn render_tipping(o: &mut String, name: &str, t: &TippingMetric, strict: bool) {
    let describe = |p: &TippingPoint, verb: &str, when: &str| {
        let rows = if p.rows == 1 {
            "1 row".to_owned()
        } else {
            format!("{} rows", p.rows)
        };
        let first = p
            .row_id
            .as_deref()
            .map_or_else(String::new, |id| format!(", first {id:?}"));
        format!(
            "pass {verb} once the gate is {when} {} ms ({:+.1} % from {} ms; class {:?}: {rows}{first})",
            short(p.threshold_ms),
            p.change_pct,
            short(p.gate_ms),
            p.class,
        )
    };
    let down = t.down.as_ref().map_or_else(
        || "no tightening drops a row".to_owned(),
        |p| {
            let when = if strict { "at or below" } else { "below" };
            describe(p, "falls", when)
        },
    );
    let up = t.up.as_ref().map_or_else(
        || "no loosening adds a row (none misses on this gate alone)".to_owned(),
        |p| {
            let when = if strict { "above" } else { "at or above" };
            describe(p, "rises", when)
        },
    );
    let _ = writeln!(o, "{name:<12} down: {down}");
    let _ = writeln!(o, "{:<12} up:   {up}", "");
}
