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

/// Renders an admission decision: the header, one line per criterion, the
/// verdict line, and what a refused arrival mode or overload means.
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
        check_line(&mut o, c);
    }
    arrival_and_overload_lines(&mut o, d);
    verdict_line(&mut o, d);
    explanations(&mut o, d);
    o.push_str(&crate::diagnosis::render(&d.diagnosis));
    // The net under the per-string escaping: no raw control byte leaves.
    goodput_util::escape::terminal_lines(&o).into_owned()
}

/// One numeric criterion, with its note.
fn check_line(o: &mut String, c: &Check) {
    let (value, limit) = shown(c);
    let limit = match &c.derivation {
        Some(how) => format!("{} {limit} = {how}", c.comparison),
        None => format!("{} {limit}", c.comparison),
    };
    let _ = writeln!(
        o,
        "{:<16} {:>12}  {:<28} {}",
        check_name(c),
        value,
        limit,
        if c.pass { "PASS" } else { "FAIL" }
    );
    if let Some(note) = &c.note {
        let _ = writeln!(o, "    ({note})");
    }
}

/// A criterion's name, with its class when it judges one.
fn check_name(c: &Check) -> String {
    match &c.class {
        Some(class) => format!("{}: {}", goodput_util::escape::terminal(class), c.name),
        None => c.name.to_owned(),
    }
}

/// The arrival-mode and saturation criteria.
fn arrival_and_overload_lines(o: &mut String, d: &Decision) {
    let a = &d.arrival;
    let capped;
    let rule = match (a.mode, a.closed_loop_allowed, a.max_concurrency) {
        (ArrivalMode::ClosedLoop, true, _) => "allowed by --allow-closed-loop",
        (ArrivalMode::OpenLoop, _, Some(c)) => {
            capped = format!(
                "= open-loop, ≤ {} in flight",
                goodput_util::number::decimal(c)
            );
            capped.as_str()
        }
        (ArrivalMode::ClosedLoop, false, _) | (ArrivalMode::OpenLoop, _, None) => "= open-loop",
    };
    let mark = |pass: bool| if pass { "PASS" } else { "FAIL" };
    let _ = writeln!(
        o,
        "{:<16} {:>12}  {:<28} {}",
        "arrival mode",
        a.mode.as_str(),
        rule,
        mark(a.pass)
    );
    let v = &d.overload;
    let rule = if v.overload_allowed {
        "allowed by --allow-overload"
    } else {
        "not overloaded"
    };
    let _ = writeln!(
        o,
        "{:<16} {:>12}  {:<28} {}",
        "saturation",
        v.verdict.as_str(),
        rule,
        mark(v.pass)
    );
}

/// ADMIT or REFUSE, naming every criterion that failed.
fn verdict_line(o: &mut String, d: &Decision) {
    let mut failed: Vec<String> = d
        .checks
        .iter()
        .filter(|c| !c.pass)
        .map(check_name)
        .collect();
    if !d.arrival.pass {
        failed.push("arrival mode".to_owned());
    }
    if !d.overload.pass {
        failed.push("saturation".to_owned());
    }
    let total = d.checks.len() + 2;
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
}

/// What a refused arrival mode or overload means, and how to allow it; and
/// what a capped open loop's latencies hold.
fn explanations(o: &mut String, d: &Decision) {
    if let (ArrivalMode::OpenLoop, Some(c)) = (d.arrival.mode, d.arrival.max_concurrency) {
        let _ = writeln!(
            o,
            "  capped open loop (≤ {} in flight): an arrival that found the cap full waited for\n  \
             a slot, and its latencies count from its scheduled instant, the wait included:\n  \
             open-loop evidence under that cap (docs/contract.md §10.2)",
            goodput_util::number::decimal(c)
        );
    }
    if d.arrival.mode == ArrivalMode::ClosedLoop && !d.arrival.pass {
        let _ = writeln!(
            o,
            "  closed-loop: each request was sent when an earlier one ended, so the server paced\n  \
             its own load; not SLA evidence (docs/contract.md §10.2); --allow-closed-loop admits it"
        );
    }
    if !d.overload.pass {
        let _ = writeln!(
            o,
            "  overloaded: waiting grew while the server fell short of the offered load, so goodput\n  \
             counted with the grace period's completions overstates what it sustains\n  \
             (docs/contract.md §10.3); --allow-overload admits it"
        );
    }
}
