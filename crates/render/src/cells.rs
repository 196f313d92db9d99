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
