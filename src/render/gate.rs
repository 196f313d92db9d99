//! The admission decision for a person (and a CI log): one line per criterion.

use std::fmt::Write;

use crate::render::sweep::num;
use crate::review::gate::Decision;

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
    let failed: Vec<String> = d
        .checks
        .iter()
        .filter(|c| !c.pass)
        .map(|c| match &c.class {
            Some(class) => format!("{class}: {}", c.name),
            None => c.name.to_owned(),
        })
        .collect();
    if d.admit {
        let _ = writeln!(o, "ADMIT: all {} criteria pass", d.checks.len());
    } else {
        let _ = writeln!(
            o,
            "REFUSE: {} of {} criteria fail ({})",
            failed.len(),
            d.checks.len(),
            failed.join(", ")
        );
    }
    o.push_str(&super::diagnosis::render(&d.diagnosis));
    o
}
