//! HTML pieces every section shares: escaping of trace-derived text, the
//! block order of the tables, and the name of the per-token metric.

use goodput_core::receipt::{Block, Receipt};

/// Escapes text for HTML text and double- or single-quoted attributes.
/// Every trace-derived string goes through this: the one HTML escaping,
/// `goodput_util::escape::html`, shared with the frontier's SVG.
pub use goodput_util::escape::html as escape;

/// The metric label of TPOT in force (chunk cadence when tokens are chunks;
/// per client token when a client-side tokenizer counted them).
pub(super) fn tpot_name(r: &Receipt) -> &'static str {
    match r.contract.tpot_label.as_str() {
        "tpot" => "TPOT",
        "tpot_client_tokens" => "TPOT (client tokens)",
        _ => "chunk cadence",
    }
}

/// The blocks in display order: all rows first (`None`), then each class.
pub(super) fn blocks(r: &Receipt) -> Vec<(Option<&str>, &Block)> {
    std::iter::once((None, &r.results.all))
        .chain(r.results.classes.iter().map(|(k, b)| (Some(k.as_str()), b)))
        .collect()
}

/// The opening `<tr>` of a block's row and its name cell: the roll-up is
/// marked `data-rollup`, a class row `data-class` (a class may be named "all").
pub(super) fn block_row_start(name: Option<&str>) -> String {
    match name {
        None => "<tr class=\"all\" data-rollup=\"all\"><td class=\"name\">all rows</td>".to_owned(),
        Some(n) => format!(
            "<tr data-class=\"{}\"><td class=\"name\">{}</td>",
            escape(n),
            escape(n)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_the_five_html_specials() {
        assert_eq!(
            escape("<script>a&b\"c'd</script>"),
            "&lt;script&gt;a&amp;b&quot;c&#39;d&lt;/script&gt;"
        );
    }
}
