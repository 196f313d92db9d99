//! Why a request failed, in the server's own words: the `errorText` label
//! of a failed row, the one place it is made.
//!
//! The recorder keeps at most the first [`ERROR_TEXT_BYTES`] of a non-2xx
//! response body (read for at most [`ERROR_TEXT_WAIT`] after the head, which
//! already decided the ending), of a 2xx body that is not an event stream,
//! or of the message of an SSE error event (see [`crate::exchange`]);
//! [`label`] turns those bytes into at most [`ERROR_TEXT_CHARS`] characters:
//!
//! 1. decode as UTF-8 (a character cut by the byte bound is dropped, invalid
//!    bytes become U+FFFD);
//! 2. when the kept bytes were cut, drop a trailing piece that could be the
//!    start of a secret (a secret straddling the cut);
//! 3. replace every occurrence of every secret — each `--header` /
//!    `--header-env` value and the token after its auth scheme, decoded
//!    Basic credentials and their parts, the API key, the `--url` user
//!    info and query values — in every form a server may echo (raw,
//!    JSON-escaped, percent-encoded, base64: see
//!    [`crate::transport::secret_forms`]) by `[redacted]`; secrets under
//!    [`MIN_SECRET_CHARS`] characters are not redacted (they would shred
//!    ordinary text);
//! 4. turn control characters into spaces, collapse runs of whitespace, trim;
//! 5. keep the first [`ERROR_TEXT_CHARS`] characters;
//! 6. if any secret still occurs in the result (a one-character secret that
//!    also appears in `[redacted]`, say), drop the label altogether.
//!
//! Step 6 is the guarantee: a label never contains a secret, whatever the
//! server echoes back. The runner then withholds a label that repeats the
//! prompt ([`crate::workload::body::echoes_prompt`]): prompts never reach the trace.

use std::time::Duration;

use crate::transport::client::ResponseBody;
pub use crate::transport::secret_forms::MIN_SECRET_CHARS;
use crate::transport::secret_forms::{self, forms};

/// The row label holding the server's error text.
pub const LABEL: &str = "errorText";

/// Most characters in an `errorText` label.
pub const ERROR_TEXT_CHARS: usize = 200;

/// Bytes of an error body or event kept: enough for [`ERROR_TEXT_CHARS`]
/// characters of any UTF-8 text, and never more, whatever the server sends
/// (a secret straddling the cut is dropped, see the module documentation).
pub const ERROR_TEXT_BYTES: usize = 4 * ERROR_TEXT_CHARS;

/// How long an error body is read for its text after the head ended the
/// request (a body that trickles gives what it gave by then).
pub const ERROR_TEXT_WAIT: Duration = Duration::from_millis(250);

/// What replaces a secret in a label.
pub const REDACTED: &str = "[redacted]";

/// The kept first bytes of a server's error text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorHead {
    /// At most [`ERROR_TEXT_BYTES`] bytes.
    pub bytes: Vec<u8>,
    /// More bytes may have followed.
    pub truncated: bool,
}

impl ErrorHead {
    /// The first [`ERROR_TEXT_BYTES`] of `bytes`.
    pub fn of(bytes: &[u8]) -> ErrorHead {
        ErrorHead {
            bytes: bytes[..bytes.len().min(ERROR_TEXT_BYTES)].to_vec(),
            truncated: bytes.len() > ERROR_TEXT_BYTES,
        }
    }

    /// Its label (see [`label`]).
    pub fn label(&self, secrets: &Secrets) -> Option<String> {
        label(&self.bytes, self.truncated, secrets)
    }
}

/// The values that must never reach a label. `Debug` shows only how many.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secrets {
    /// Raw values and their JSON-escaped forms, longest first.
    forms: Vec<String>,
}

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({} forms, redacted)", self.forms.len())
    }
}

impl Secrets {
    /// The secrets among `values`, each in every form a server may echo
    /// ([`secret_forms::forms`]); values under [`MIN_SECRET_CHARS`]
    /// characters are dropped.
    pub fn new(values: impl IntoIterator<Item = String>) -> Secrets {
        let mut forms: Vec<String> = values.into_iter().flat_map(|v| forms(&v)).collect();
        // Longest first, so a secret containing another is replaced whole.
        forms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        forms.dedup();
        Secrets { forms }
    }

    /// The secrets of header values: each value whole, the token after its
    /// auth scheme, and decoded Basic credentials
    /// ([`secret_forms::pieces_of_header`]), with `others` (the API key,
    /// the URL's user info and query values) as given.
    pub fn of_credentials<'a>(
        header_values: impl IntoIterator<Item = &'a str>,
        others: impl IntoIterator<Item = String>,
    ) -> Secrets {
        Secrets::new(
            header_values
                .into_iter()
                .flat_map(secret_forms::pieces_of_header)
                .chain(others),
        )
    }

    /// Whether any secret occurs in `text`.
    pub fn occur_in(&self, text: &str) -> bool {
        self.forms.iter().any(|s| text.contains(s.as_str()))
    }

    /// `text` with every occurrence of every secret replaced by [`REDACTED`].
    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for secret in &self.forms {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), REDACTED);
            }
        }
        out
    }

    /// `text` without a trailing piece that is the start of some secret.
    fn drop_partial_tail<'a>(&self, text: &'a str) -> &'a str {
        let mut cut = text.len();
        for secret in &self.forms {
            for (end, _) in secret.char_indices().skip(1) {
                if text.ends_with(&secret[..end]) {
                    cut = cut.min(text.len() - end);
                }
            }
            // A whole secret at the very end is redacted, not cut.
        }
        &text[..cut]
    }
}

/// The label for the kept bytes of an error body or event; `truncated` says
/// whether more bytes followed. `None` when nothing readable (or nothing
/// safe) remains.
pub fn label(bytes: &[u8], truncated: bool, secrets: &Secrets) -> Option<String> {
    let kept = &bytes[..bytes.len().min(ERROR_TEXT_BYTES)];
    let truncated = truncated || kept.len() < bytes.len();
    // A character cut by the byte bound is dropped, not shown as U+FFFD.
    let whole = match std::str::from_utf8(kept) {
        Err(e) if e.error_len().is_none() => &kept[..e.valid_up_to()],
        _ => kept,
    };
    let decoded = String::from_utf8_lossy(whole);
    let text = if truncated {
        secrets.drop_partial_tail(&decoded)
    } else {
        &decoded
    };
    let redacted = secrets.redact(text);
    let mut out = String::with_capacity(ERROR_TEXT_CHARS);
    let mut chars = 0;
    let mut pending_space = false;
    for c in redacted.chars() {
        if c.is_whitespace() || c.is_control() {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            if chars + 1 >= ERROR_TEXT_CHARS {
                break;
            }
            out.push(' ');
            chars += 1;
            pending_space = false;
        }
        if chars == ERROR_TEXT_CHARS {
            break;
        }
        out.push(c);
        chars += 1;
    }
    (!out.is_empty() && !secrets.occur_in(&out)).then_some(out)
}

/// Reads the first [`ERROR_TEXT_BYTES`] of a body, for at most `wait`;
/// keeps what came by then. `truncated` unless the body ended cleanly
/// within the bound and the wait.
pub async fn read_head<B: ResponseBody>(body: &mut B, wait: Duration) -> ErrorHead {
    let mut head = ErrorHead {
        bytes: Vec::new(),
        truncated: true,
    };
    let read = async {
        while head.bytes.len() < ERROR_TEXT_BYTES {
            match body.next_frame().await {
                Ok(Some(frame)) => {
                    let room = ERROR_TEXT_BYTES - head.bytes.len();
                    head.bytes
                        .extend_from_slice(&frame[..frame.len().min(room)]);
                }
                Ok(None) => {
                    head.truncated = false;
                    break;
                }
                Err(_) => break,
            }
        }
    };
    let _ = tokio::time::timeout(wait, read).await;
    head
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> Secrets {
        Secrets::new(["tok-123".to_owned(), "k\"qq".to_owned(), String::new()])
    }

    #[test]
    fn secrets_are_replaced_raw_and_json_escaped() {
        let body = br#"{"error":{"message":"bad key tok-123 and k\"qq for tok-1234"}}"#;
        assert_eq!(
            label(body, false, &secrets()).as_deref(),
            Some(r#"{"error":{"message":"bad key [redacted] and [redacted] for [redacted]4"}}"#)
        );
    }

    #[test]
    fn a_label_is_at_most_200_characters_with_whitespace_collapsed() {
        // 150 'é' (2 bytes each), a newline and tab run, then 100 'x':
        // 150 + 1 space + 49 x = 200 characters.
        let text = format!("{}\n\t  {}", "é".repeat(150), "x".repeat(100));
        let got = label(text.as_bytes(), false, &Secrets::default()).unwrap();
        assert_eq!(got.chars().count(), 200);
        assert_eq!(got, format!("{} {}", "é".repeat(150), "x".repeat(49)));
        assert_eq!(label(b"  \r\n ", false, &Secrets::default()), None);
    }

    #[test]
    fn a_secret_cut_at_the_end_of_the_kept_bytes_does_not_leak_its_start() {
        let s = secrets();
        assert_eq!(
            label(b"denied for tok-1", true, &s).as_deref(),
            Some("denied for")
        );
        // Not cut: the same text is only text.
        assert_eq!(
            label(b"denied for tok-1", false, &s).as_deref(),
            Some("denied for tok-1")
        );
    }

    #[test]
    fn a_secret_that_survives_redaction_drops_the_label() {
        // The secret "acted" is inside "[redacted]" itself.
        let s = Secrets::new(["acted".to_owned()]);
        assert_eq!(label(b"bad key acted", false, &s), None);
        assert_eq!(format!("{s:?}"), "Secrets(1 forms, redacted)");
    }

    #[test]
    fn a_secret_straddling_the_800_byte_bound_leaves_no_piece() {
        // 795 spaces, then "tok-123" from byte 795: bytes 795..800 are "tok-1".
        let body = format!("{}tok-123 tail", " ".repeat(795));
        let head = ErrorHead::of(body.as_bytes());
        assert_eq!((head.bytes.len(), head.truncated), (800, true));
        // Only whitespace is left once the start of the secret is dropped.
        assert_eq!(head.label(&secrets()), None);
        // Without that secret, the five bytes are only text.
        assert_eq!(head.label(&Secrets::default()).as_deref(), Some("tok-1"));
    }

    /// The issue's echoes, each for the credential that the run was given.
    fn redacted(header: &str, body: &str) -> Option<String> {
        let secrets = Secrets::of_credentials([header], []);
        label(body.as_bytes(), false, &secrets)
    }

    #[test]
    fn the_token_after_any_auth_scheme_is_redacted() {
        assert_eq!(
            redacted("Bearer SECRET123", "invalid credentials: SECRET123").as_deref(),
            Some("invalid credentials: [redacted]")
        );
        assert_eq!(
            redacted("Token SECRET123", r#"{"detail":"bad token SECRET123"}"#).as_deref(),
            Some(r#"{"detail":"bad token [redacted]"}"#)
        );
        assert_eq!(
            redacted("Bearer SECRET123", "key=SECRET123&x=1").as_deref(),
            Some("key=[redacted]&x=1")
        );
    }

    #[test]
    fn decoded_basic_credentials_and_their_parts_are_redacted() {
        // base64("alice:SECRET123") = "YWxpY2U6U0VDUkVUMTIz".
        let header = "Basic YWxpY2U6U0VDUkVUMTIz";
        assert_eq!(
            redacted(header, "invalid credentials: alice:SECRET123").as_deref(),
            Some("invalid credentials: [redacted]")
        );
        assert_eq!(
            redacted(
                header,
                "user alice, password SECRET123, b64 YWxpY2U6U0VDUkVUMTIz"
            )
            .as_deref(),
            Some("user [redacted], password [redacted], b64 [redacted]")
        );
        // Percent-encoded, as a redirect's Location would carry it.
        assert_eq!(
            redacted(header, "Location: /login?u=alice%3ASECRET123").as_deref(),
            Some("Location: /login?u=[redacted]")
        );
    }

    #[test]
    fn json_escaped_and_url_encoded_api_keys_are_redacted() {
        let secrets = Secrets::of_credentials([], ["sk-AB/CD+EF==".to_owned()]);
        let body = r#"{"error":"no key sk-AB\/CD+EF== (sent sk-AB%2FCD%2BEF%3D%3D)"}"#;
        assert_eq!(
            label(body.as_bytes(), false, &secrets).as_deref(),
            Some(r#"{"error":"no key [redacted] (sent [redacted])"}"#)
        );
        let secrets = Secrets::of_credentials([], ["pässwörd".to_owned()]);
        let body = r#"{"e":"pässwörd? p%C3%A4ssw%C3%B6rd"}"#;
        assert_eq!(
            label(body.as_bytes(), false, &secrets).as_deref(),
            Some(r#"{"e":"[redacted]? [redacted]"}"#)
        );
    }

    #[test]
    fn secrets_under_four_characters_are_not_redacted() {
        // "Bearer abc" is a secret (10 characters); its token "abc" is not.
        assert_eq!(
            redacted("Bearer abc", "abc: Bearer abc").as_deref(),
            Some("abc: [redacted]")
        );
        assert_eq!(
            redacted("1", "error 1 of 1").as_deref(),
            Some("error 1 of 1")
        );
    }
}
