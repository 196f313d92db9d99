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

#[cfg(test)]
mod tests {
    use super::escape;

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
