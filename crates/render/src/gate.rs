//! The admission decision for a person (and a CI log): one line per criterion.

use std::fmt::Write;

use crate::sensitivity::num;
use goodput_core::review::gate::{Check, Decision};
use goodput_core::trace::ArrivalMode;
use goodput_util::figures::{number_against, percent, percent_against};

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
        let _ = writeln!(o, "      {}", goodput_core::receipt::ARRIVALS_UNKNOWN_LINE);
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
    o.push_str(&crate::diagnosis::render(&d.diagnosis));
    o
}
