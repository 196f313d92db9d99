//! The admission decision for a person (and a CI log): one line per criterion.

use std::fmt::Write;

use crate::render::sweep::num;
use crate::review::gate::Decision;
use crate::trace::ArrivalMode;

fn measured(name: &str, v: Option<f64>) -> String {
    match v {
        None => "n/a".to_owned(),
        Some(v) if name.ends_with("share") => format!("{:.2} %", v * 100.0),
        Some(v) => num(v, 3),
    }
}

/// Renders an admission decision.
pub fn render(d: &Decision) -> String {
    let mut o = String::new();
    let scope = d
        .class
        .as_ref()
        .map_or_else(|| "all rows".to_owned(), |c| format!("class {c:?}"));
    let _ = writeln!(o, "GATE  {scope}; trace sha256 {}", d.trace_sha256);
    if d.arrivals_unknown.is_some() {
        let _ = writeln!(o, "      {}", crate::receipt::ARRIVALS_UNKNOWN_LINE);
    }
    for c in &d.checks {
        let limit = match &c.derivation {
            Some(how) => format!(
                "{} {} = {how}",
                c.comparison,
                measured(c.name, Some(c.limit))
            ),
            None => format!("{} {}", c.comparison, measured(c.name, Some(c.limit))),
        };
        let name = match &c.class {
            Some(class) => format!("{class}: {}", c.name),
            None => c.name.to_owned(),
        };
        let _ = writeln!(
            o,
            "{:<16} {:>12}  {:<28} {}",
            name,
            measured(c.name, c.measured),
            limit,
            if c.pass { "PASS" } else { "FAIL" }
        );
        if let Some(note) = &c.note {
            let _ = writeln!(o, "    ({note})");
        }
    }
    let a = &d.arrival;
    let rule = match (a.mode, a.closed_loop_allowed) {
        (ArrivalMode::ClosedLoop, true) => "allowed by --allow-closed-loop",
        (ArrivalMode::ClosedLoop, false) | (ArrivalMode::OpenLoop, _) => "= open-loop",
    };
    let _ = writeln!(
        o,
        "{:<16} {:>12}  {:<28} {}",
        "arrival mode",
        a.mode.as_str(),
        rule,
        if a.pass { "PASS" } else { "FAIL" }
    );
    let mut failed: Vec<String> = d
        .checks
        .iter()
        .filter(|c| !c.pass)
        .map(|c| match &c.class {
            Some(class) => format!("{class}: {}", c.name),
            None => c.name.to_owned(),
        })
        .collect();
    if !a.pass {
        failed.push("arrival mode".to_owned());
    }
    let total = d.checks.len() + 1;
    if d.admit {
        let _ = writeln!(o, "ADMIT: all {total} criteria pass");
    } else {
        let _ = writeln!(
            o,
            "REFUSE: {} of {total} criteria fail ({})",
            failed.len(),
            failed.join(", ")
        );
    }
    if a.mode == ArrivalMode::ClosedLoop && !a.pass {
        let _ = writeln!(
            o,
            "  closed-loop: each request was sent when an earlier one ended, so the server paced\n  \
             its own load; not SLA evidence (docs/contract.md §10.2); --allow-closed-loop admits it"
        );
    }
    o.push_str(&super::diagnosis::render(&d.diagnosis));
    o
}
