//! Verification for a person: the hash first, then every difference by path.

use std::fmt::Write;

use serde_json::Value;

use goodput_core::review::verify::VerifyReport;

/// How many differences the text view lists (the JSON view lists all).
pub const MAX_LISTED_DIFFERENCES: usize = 50;

fn value(v: &Option<Value>) -> String {
    v.as_ref()
        .map_or_else(|| "(absent)".to_owned(), |v| v.to_string())
}

/// Renders a verification report.
pub fn render(r: &VerifyReport) -> String {
    let mut o = String::new();
    let claimed = r.receipt_sha256.as_deref().unwrap_or("(none)");
    match (&r.trace_sha256, r.sha256_matches) {
        (Some(sha), true) => {
            let _ = writeln!(o, "trace sha256  matches the receipt: {sha}");
        }
        (Some(sha), false) => {
            let _ = writeln!(
                o,
                "trace sha256  DIFFERENT: the receipt was made from different bytes\n\
                 {:14}receipt {claimed}\n{:14}trace   {sha}",
                "", ""
            );
        }
        (None, _) => {
            let _ = writeln!(o, "trace sha256  not computed (the trace was not read)");
        }
    }
    for note in &r.notes {
        let _ = writeln!(o, "note          {note}");
    }
    if let Some(why) = &r.recompute_failed {
        let _ = writeln!(o, "recompute     FAILED: {why}");
    }
    let contract = r
        .differences
        .iter()
        .filter(|d| d.path.starts_with("/contract"))
        .count();
    let _ = writeln!(
        o,
        "contract      {}",
        if r.recompute_failed.is_some() {
            "not compared".to_owned()
        } else if contract == 0 {
            "agrees".to_owned()
        } else {
            format!("{contract} differences")
        }
    );
    differences(&mut o, r);
    verdict_line(&mut o, r);
    // The net under the per-string escaping: no raw control byte leaves.
    goodput_util::escape::terminal_lines(&o).into_owned()
}

/// Every difference by path (the first [`MAX_LISTED_DIFFERENCES`]).
fn differences(o: &mut String, r: &VerifyReport) {
    if !r.differences.is_empty() {
        let _ = writeln!(o, "\nDIFFERENCES (path: receipt → recomputed)");
        for d in r.differences.iter().take(MAX_LISTED_DIFFERENCES) {
            let _ = writeln!(
                o,
                "{}: {} → {}",
                d.path,
                value(&d.receipt),
                value(&d.recomputed)
            );
        }
        if r.differences.len() > MAX_LISTED_DIFFERENCES {
            let _ = writeln!(
                o,
                "… and {} more (all are listed by --json)",
                r.differences.len() - MAX_LISTED_DIFFERENCES
            );
        }
    }
}

/// VERIFIED, or how many differences and whether the bytes differ.
fn verdict_line(o: &mut String, r: &VerifyReport) {
    let _ = writeln!(
        o,
        "\n{}",
        if r.agrees() {
            "VERIFIED: the receipt is exactly what this trace gives".to_owned()
        } else {
            format!(
                "NOT VERIFIED: {} difference{}{}",
                r.differences.len(),
                if r.differences.len() == 1 { "" } else { "s" },
                if r.sha256_matches {
                    ""
                } else {
                    "; the receipt was not made from this trace"
                }
            )
        }
    );
}
