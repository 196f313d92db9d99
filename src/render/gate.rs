//! The admission decision for a person (and a CI log): one line per criterion.

use std::fmt::Write;

use crate::render::figures::{number_against, percent, percent_against};
use crate::render::sweep::num;
use crate::review::gate::{Check, Decision};

/// The measured value and the limit as shown: shares as percentages, other
/// figures as numbers, with the digits that keep a failing value from
/// reading equal to its limit (or crossing it).
fn shown(c: &Check) -> (String, String) {
    let share = c.name.ends_with("share");
    match c.measured {
        None if share => ("n/a".to_owned(), percent(c.limit, 2)),
        None => ("n/a".to_owned(), num(c.limit, 3)),
        Some(v) if share => percent_against(v, c.limit, 2),
        Some(v) => number_against(v, c.limit, 3),
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
        let (value, limit) = shown(c);
        let limit = match &c.derivation {
            Some(how) => format!("{} {limit} = {how}", c.comparison),
            None => format!("{} {limit}", c.comparison),
        };
        let name = match &c.class {
            Some(class) => format!("{class}: {}", c.name),
            None => c.name.to_owned(),
        };
        let _ = writeln!(
            o,
            "{:<16} {:>12}  {:<28} {}",
            name,
            value,
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
