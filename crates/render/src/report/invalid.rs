//! The invalid rows: position, id and every reason, for the first
//! [`MAX_LISTED_INVALID_ROWS`] of them.

use std::fmt::Write;

use crate::report::html::escape;
use goodput_core::analyze::Analysis;

/// How many invalid rows the page lists by position, id and reasons.
pub const MAX_LISTED_INVALID_ROWS: usize = 100;

/// The invalid-rows section.
pub(super) fn section(o: &mut String, a: &Analysis) {
    let rows = a.invalid_rows();
    let _ = writeln!(o, "<section id=\"invalid-section\">\n<h2>Invalid rows</h2>");
    if rows.is_empty() {
        let _ = writeln!(
            o,
            "<p class=\"note\">None: every row was valid.</p>\n</section>"
        );
        return;
    }
    let _ = writeln!(
        o,
        "<p class=\"note\">{} invalid rows, kept out of both the pass count and the denominator; each with every reason that applies.</p>\n\
         <table id=\"invalid\">\n<thead><tr><th class=\"name\">row</th><th class=\"name\">id</th><th class=\"name\">reasons</th></tr></thead>\n<tbody>",
        rows.len()
    );
    for row in rows.iter().take(MAX_LISTED_INVALID_ROWS) {
        let id = row.id.as_deref().map_or_else(
            || "<i>(no usable id)</i>".to_owned(),
            |s| format!("<code>{}</code>", escape(s)),
        );
        let _ = writeln!(
            o,
            "<tr><td class=\"name\">/rows/{}</td><td class=\"name\">{id}</td><td class=\"name\">{}</td></tr>",
            row.index,
            escape(&row.reasons.join(", "))
        );
    }
    let _ = writeln!(o, "</tbody>\n</table>");
    if rows.len() > MAX_LISTED_INVALID_ROWS {
        let _ = writeln!(
            o,
            "<p class=\"note\">… and {} more (all are listed by <code>goodput analyze --json --rows</code>).</p>",
            rows.len() - MAX_LISTED_INVALID_ROWS
        );
    }
    let _ = writeln!(o, "</section>");
}
