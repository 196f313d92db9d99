//! JSON pointers (RFC 6901) into a document: every rejection and every
//! verification difference names its place this way.
//!
//! Its own module because the parser (a repeated top-level member), the
//! validator (an unknown field) and the receipt verifier (a differing value)
//! all build pointers, and none of them should import another for it.

/// Escapes a key for use as a JSON pointer token (RFC 6901): `~` becomes
/// `~0`, then `/` becomes `~1`.
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Longest pointer token [`shortened`] shows whole, in characters.
pub const SHOWN_TOKEN_CHARS: usize = 64;

/// A pointer for a sentence: every token longer than
/// [`SHOWN_TOKEN_CHARS`] cut to its first 48 characters and `…[N
/// characters]`, so a hostile 500,000-character key names its place in one
/// readable line instead of filling the terminal. The full pointer stays
/// where a program reads it.
pub fn shortened(pointer: &str) -> std::borrow::Cow<'_, str> {
    let long = |t: &str| t.len() > SHOWN_TOKEN_CHARS && t.chars().count() > SHOWN_TOKEN_CHARS;
    if !pointer.split('/').any(long) {
        return std::borrow::Cow::Borrowed(pointer);
    }
    let tokens: Vec<String> = pointer
        .split('/')
        .map(|t| {
            if long(t) {
                let head: String = t.chars().take(48).collect();
                format!("{head}…[{} characters]", t.chars().count())
            } else {
                t.to_owned()
            }
        })
        .collect();
    std::borrow::Cow::Owned(tokens.join("/"))
}

#[cfg(test)]
mod tests {
    use super::{escape, shortened};

    #[test]
    fn long_tokens_are_cut_in_sentences_and_short_ones_kept() {
        assert_eq!(shortened("/classes/chat"), "/classes/chat");
        let name = "x".repeat(500_000);
        let shown = shortened(&format!("/classes/{name}/ttftMs")).into_owned();
        assert_eq!(
            shown,
            format!("/classes/{}…[500000 characters]/ttftMs", "x".repeat(48))
        );
        // 64 characters are shown whole; 65 are cut.
        let edge = "é".repeat(64);
        assert_eq!(shortened(&format!("/{edge}")), format!("/{edge}"));
        let over = "é".repeat(65);
        assert_eq!(
            shortened(&format!("/{over}")),
            format!("/{}…[65 characters]", "é".repeat(48))
        );
    }

    #[test]
    fn tilde_is_escaped_before_slash_so_neither_is_read_back_as_the_other() {
        assert_eq!(escape("plain"), "plain");
        assert_eq!(escape("a/b"), "a~1b");
        assert_eq!(escape("a~b"), "a~0b");
        // "~1" as a key must come back as "~1", not "/": "~01".
        assert_eq!(escape("~1"), "~01");
        assert_eq!(escape("/~"), "~1~0");
    }
}
