//! Answer normalisation (docs/quality.md "Normalisation"): what an answer
//! (and an `exact` / `contains` / `anyOf` expectation) is turned into before
//! it is compared, hashed and written to the sidecar.
//!
//! The rule, and why it is this small:
//!
//! 1. leading and trailing whitespace is removed (a model's closing newline
//!    is not part of its answer);
//! 2. every run of whitespace inside (Unicode `White_Space`: spaces, tabs,
//!    newlines, NBSP, …) becomes one ASCII space (a re-wrapped line is the
//!    same answer).
//!
//! Nothing else: no Unicode NFC (a server that starts emitting decomposed
//! accents has changed its output, and that is worth seeing), no
//! punctuation stripping (`"Paris."` is not `"Paris"` unless the bank says
//! so with `anyOf` or `regex`), no case folding unless the item asks
//! (`caseInsensitive`). A bank that wants tolerance writes it down.

/// The normalised form of `text`: trimmed, each inner whitespace run one space.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for word in text.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The form compared for a case-insensitive item: Unicode lower case of the
/// normalised text (`str::to_lowercase`, no locale).
pub fn fold_case(normalised: &str) -> String {
    normalised.to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_is_trimmed_and_collapsed_and_nothing_else_changes() {
        assert_eq!(
            normalise("  The answer\n\tis\u{a0} 42.\n"),
            "The answer is 42."
        );
        assert_eq!(normalise(""), "");
        assert_eq!(normalise(" \n "), "");
        // Punctuation, case and composition are kept: e + U+0301 stays two code points.
        assert_eq!(normalise("Cafe\u{301}."), "Cafe\u{301}.");
        assert_eq!(fold_case("ÉCOLE Paris"), "école paris");
    }
}
