//! Table cells every text view shares (the receipt's text, its stall
//! lines, the report's tables): below them all, so none imports another
//! for a cell.

/// A table cell: always `decimals` places, so columns line up.
pub(crate) fn fixed(x: f64, decimals: usize) -> String {
    format!("{x:.decimals$}")
}

/// A table cell for an optional figure (`—` when there is none).
pub(crate) fn opt(x: Option<f64>, decimals: usize) -> String {
    x.map_or_else(|| "—".to_owned(), |v| fixed(v, decimals))
}

/// A share as a percentage with one decimal, or more when one would read
/// 100 % or 0 % for a share that is neither (`—` for an empty cohort).
pub(crate) fn share(x: Option<f64>) -> String {
    goodput_util::figures::percent_or_dash(x, 1)
}

/// The blocks of a receipt as a text section lists them: `all`, then each
/// class (its name escaped for the terminal), with the width of the name
/// column (the longest name, between `min` and 24 characters).
pub(crate) fn named_blocks(
    receipt: &goodput_core::receipt::Receipt,
    min: usize,
) -> (Vec<(String, &goodput_core::receipt::Block)>, usize) {
    let r = &receipt.results;
    let blocks: Vec<_> = std::iter::once(("all".to_owned(), &r.all))
        .chain(
            r.classes
                .iter()
                .map(|(k, b)| (goodput_util::escape::terminal(k).into_owned(), b)),
        )
        .collect();
    let w = blocks
        .iter()
        .map(|(n, _)| n.chars().count())
        .max()
        .unwrap_or(3)
        .clamp(min, 24);
    (blocks, w)
}
