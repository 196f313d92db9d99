//! The forms in which a server may echo a credential back, and the pieces
//! of a credential a server may echo alone: what [`Secrets`] redacts.
//!
//! A secret given to the run is redacted raw and as a server would write it
//! inside JSON (`\"`, `\\`, `\/` for `/`, `\uXXXX` for non-ASCII or for
//! `<`, `>`, `&`, either hex case), percent-encoded (every byte but the
//! unreserved `A-Z a-z 0-9 - . _ ~`, or as `encodeURIComponent` does;
//! `%20` or `+` for a space; either hex case) and, for the decoded
//! credentials of HTTP Basic, base64 (padded or not).
//!
//! The pieces ([`pieces_of_header`]): a header value whole; the token after
//! an auth scheme (`Bearer X`, `Basic X`, any `Scheme X`); for `Basic`, the
//! decoded `user:password` and each of its two parts.
//!
//! [`Secrets`]: crate::transport::error_text::Secrets

/// Secrets shorter than this many characters are not redacted: a 1–3
/// character "secret" (a header `X-Debug: 1`, a user `bob`) would shred
/// ordinary text (every `1` of a message), and cannot be kept secret by
/// redaction anyway.
pub const MIN_SECRET_CHARS: usize = 4;

/// The pieces of one header value that are secrets (see the module
/// documentation); short pieces are dropped later, by [`forms`].
pub fn pieces_of_header(value: &str) -> Vec<String> {
    let value = value.trim();
    let mut pieces = vec![value.to_owned()];
    let Some((scheme, token)) = value.split_once(char::is_whitespace) else {
        return pieces;
    };
    let token = token.trim();
    let is_scheme = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !is_scheme || token.is_empty() {
        return pieces;
    }
    pieces.push(token.to_owned());
    if scheme.eq_ignore_ascii_case("basic") {
        if let Some(decoded) = base64_decode(token).and_then(|b| String::from_utf8(b).ok()) {
            pieces.extend(pieces_of_credentials(&decoded));
        }
    }
    pieces
}

/// `user:password` whole, each part, and its base64 forms (as Basic sends it).
pub fn pieces_of_credentials(credentials: &str) -> Vec<String> {
    let mut pieces = vec![credentials.to_owned()];
    if let Some((user, password)) = credentials.split_once(':') {
        pieces.push(user.to_owned());
        pieces.push(password.to_owned());
    }
    let encoded = base64_encode(credentials.as_bytes());
    pieces.push(encoded.trim_end_matches('=').to_owned());
    pieces.push(encoded);
    pieces
}

/// Every form of `secret` a server may echo; none when it is shorter than
/// [`MIN_SECRET_CHARS`].
pub fn forms(secret: &str) -> Vec<String> {
    if secret.chars().count() < MIN_SECRET_CHARS {
        return Vec::new();
    }
    let mut out = vec![secret.to_owned()];
    for solidus in [false, true] {
        for (non_ascii, html) in [(false, false), (true, false), (false, true), (true, true)] {
            for upper in [false, true] {
                out.push(json_escape(secret, solidus, non_ascii, html, upper));
            }
        }
    }
    for keep in ["", "!'()*"] {
        for plus in [false, true] {
            for upper in [false, true] {
                out.push(percent_encode(secret, keep, plus, upper));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `text` inside a JSON string: `"`, `\` and controls always escaped; `/`
/// as `\/` when `solidus`; non-ASCII (`non_ascii`) and `<>&` (`html`) as
/// `\uXXXX` (surrogate pairs past U+FFFF), hex upper case when `upper`.
fn json_escape(text: &str, solidus: bool, non_ascii: bool, html: bool, upper: bool) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    let unicode = |out: &mut String, c: char| {
        let mut units = [0u16; 2];
        for unit in c.encode_utf16(&mut units) {
            if upper {
                out.push_str(&format!("\\u{unit:04X}"));
            } else {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    };
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '/' if solidus => out.push_str("\\/"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => unicode(&mut out, c),
            c if non_ascii && !c.is_ascii() => unicode(&mut out, c),
            '<' | '>' | '&' if html => unicode(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// `text` percent-encoded: every byte but `A-Za-z0-9-._~` and `keep`;
/// a space as `+` when `plus`; hex upper case when `upper`.
fn percent_encode(text: &str, keep: &str, plus: bool, upper: bool) -> String {
    let mut out = String::with_capacity(text.len() * 3);
    for &b in text.as_bytes() {
        let c = b as char;
        if c.is_ascii_alphanumeric() || "-._~".contains(c) || (c.is_ascii() && keep.contains(c)) {
            out.push(c);
        } else if b == b' ' && plus {
            out.push('+');
        } else if upper {
            out.push_str(&format!("%{b:02X}"));
        } else {
            out.push_str(&format!("%{b:02x}"));
        }
    }
    out
}

/// `text` with `%XX` decoded (and `+` as a space when `plus`); `None` when
/// the bytes are not UTF-8. A `%` not followed by two hex digits stays.
pub fn percent_decode(text: &str, plus: bool) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' if plus => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64, padded (what HTTP Basic sends).
pub fn base64_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &b)| n | u32::from(b) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(BASE64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Standard or URL-safe base64, padding optional; `None` if it is not.
pub fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let text = text.trim_end_matches('=');
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in text.bytes() {
        let v = match c {
            b'-' => 62,
            b'_' => 63,
            c => BASE64.iter().position(|&b| b == c)? as u32,
        };
        acc = acc << 6 | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    (bits < 6).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips_and_matches_basic_auth() {
        // RFC 7617's example.
        assert_eq!(
            base64_encode(b"Aladdin:open sesame"),
            "QWxhZGRpbjpvcGVuIHNlc2FtZQ=="
        );
        assert_eq!(base64_encode(b"alice:SECRET123"), "YWxpY2U6U0VDUkVUMTIz");
        assert_eq!(
            base64_decode("QWxhZGRpbjpvcGVuIHNlc2FtZQ").as_deref(),
            Some(&b"Aladdin:open sesame"[..])
        );
        assert_eq!(base64_decode("not base64!"), None);
        assert_eq!(base64_encode(b"ab"), "YWI=");
    }

    #[test]
    fn pieces_of_bearer_and_basic_headers() {
        assert_eq!(
            pieces_of_header("Bearer SECRET123"),
            ["Bearer SECRET123", "SECRET123"]
        );
        assert_eq!(
            pieces_of_header("Basic YWxpY2U6U0VDUkVUMTIz"),
            [
                "Basic YWxpY2U6U0VDUkVUMTIz",
                "YWxpY2U6U0VDUkVUMTIz",
                "alice:SECRET123",
                "alice",
                "SECRET123",
                "YWxpY2U6U0VDUkVUMTIz",
                "YWxpY2U6U0VDUkVUMTIz",
            ]
        );
        assert_eq!(pieces_of_header("plain-token"), ["plain-token"]);
    }

    #[test]
    fn forms_cover_json_and_percent_encodings() {
        let f = forms("sk-AB/CD+EF==");
        for want in [
            "sk-AB/CD+EF==",
            r"sk-AB\/CD+EF==",
            "sk-AB%2FCD%2BEF%3D%3D",
            "sk-AB%2fCD%2bEF%3d%3d",
        ] {
            assert!(f.iter().any(|x| x == want), "{want} missing from {f:?}");
        }
        let f = forms("p é&q");
        for want in [
            "p+%C3%A9%26q",
            "p%20%c3%a9%26q",
            r"p \u00e9&q",
            r"p \u00E9\u0026q",
        ] {
            assert!(f.iter().any(|x| x == want), "{want} missing from {f:?}");
        }
        assert!(forms("abc").is_empty());
        assert_eq!(
            percent_decode("a%2Fb+c%zz", true).as_deref(),
            Some("a/b c%zz")
        );
        assert_eq!(percent_decode("50%", false).as_deref(), Some("50%"));
    }
}
