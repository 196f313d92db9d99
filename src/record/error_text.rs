//! Why a request failed, in the server's own words: the `errorText` label
//! of a failed row.
//!
//! The recorder keeps the first [`KEEP_BYTES`] of a non-2xx response body
//! or of an SSE error event (see [`super::exchange`]); [`label`] turns those
//! bytes into at most [`MAX_LABEL_CHARS`] characters of text:
//!
//! 1. decode as UTF-8 (invalid bytes become U+FFFD);
//! 2. when the kept bytes were cut, drop a trailing piece that could be the
//!    start of a secret (a secret straddling the cut);
//! 3. replace every occurrence of every secret — each `--header` /
//!    `--header-env` value and the API key, raw and JSON-escaped — by
//!    `[redacted]`;
//! 4. turn control characters into spaces, collapse runs of whitespace, trim;
//! 5. keep the first [`MAX_LABEL_CHARS`] characters;
//! 6. if any secret still occurs in the result (a one-character secret that
//!    also appears in `[redacted]`, say), drop the label altogether.
//!
//! Step 6 is the guarantee: a label never contains a secret, whatever the
//! server echoes back.

use crate::trace::Scalar;

use super::client::ResponseBody;
use super::exchange::Observation;
use super::trace_out::TraceRow;

/// The row label holding the server's error text.
pub const LABEL: &str = "errorText";

/// Most characters in an `errorText` label.
pub const MAX_LABEL_CHARS: usize = 200;

/// Bytes of an error body or event kept for the label: far more than
/// [`MAX_LABEL_CHARS`], so redaction sees whole secrets before the cut.
pub const KEEP_BYTES: usize = 4096;

/// What replaces a secret in a label.
pub const REDACTED: &str = "[redacted]";

/// The kept first bytes of a server's error text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ErrorHead {
    /// At most [`KEEP_BYTES`] bytes.
    pub bytes: Vec<u8>,
    /// More bytes may have followed.
    pub truncated: bool,
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
    /// The secrets among `values` (empty ones are dropped).
    pub fn new(values: impl IntoIterator<Item = String>) -> Secrets {
        let mut forms = Vec::new();
        for value in values.into_iter().filter(|v| !v.is_empty()) {
            let escaped = serde_json::to_string(&value).unwrap_or_default();
            let escaped = escaped
                .strip_prefix('"')
                .and_then(|e| e.strip_suffix('"'))
                .unwrap_or("");
            if !escaped.is_empty() && escaped != value {
                forms.push(escaped.to_owned());
            }
            forms.push(value);
        }
        // Longest first, so a secret containing another is replaced whole.
        forms.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        forms.dedup();
        Secrets { forms }
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
    let decoded = String::from_utf8_lossy(bytes);
    let text = if truncated {
        secrets.drop_partial_tail(&decoded)
    } else {
        &decoded
    };
    let redacted = secrets.redact(text);
    let mut out = String::with_capacity(MAX_LABEL_CHARS);
    let mut chars = 0;
    let mut pending_space = false;
    for c in redacted.chars() {
        if c.is_whitespace() || c.is_control() {
            pending_space = !out.is_empty();
            continue;
        }
        if pending_space {
            if chars + 1 >= MAX_LABEL_CHARS {
                break;
            }
            out.push(' ');
            chars += 1;
            pending_space = false;
        }
        if chars == MAX_LABEL_CHARS {
            break;
        }
        out.push(c);
        chars += 1;
    }
    (!out.is_empty() && !secrets.occur_in(&out)).then_some(out)
}

/// Puts the `errorText` label on a failed row whose request kept error text.
pub fn attach(row: &mut TraceRow, obs: &Observation, secrets: &Secrets) {
    let Some(head) = &obs.error_head else {
        return;
    };
    if row.status != super::trace_out::RowStatus::Failed {
        return;
    }
    if let Some(text) = label(&head.bytes, head.truncated, secrets) {
        row.labels.insert(LABEL.into(), Scalar::String(text));
    }
}

/// Reads the first [`KEEP_BYTES`] of a body; returns them and whether they
/// may have been cut (the body filled them, or broke). Stops there.
pub async fn read_head<B: ResponseBody>(body: &mut B) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    loop {
        match body.next_frame().await {
            Ok(Some(frame)) => {
                let room = KEEP_BYTES - kept.len();
                if frame.len() >= room {
                    kept.extend_from_slice(&frame[..room]);
                    return (kept, true);
                }
                kept.extend_from_slice(&frame);
            }
            Ok(None) => return (kept, false),
            Err(_) => return (kept, true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> Secrets {
        Secrets::new(["tok-123".to_owned(), "k\"q".to_owned(), String::new()])
    }

    #[test]
    fn secrets_are_replaced_raw_and_json_escaped() {
        let body = br#"{"error":{"message":"bad key tok-123 and k\"q for tok-1234"}}"#;
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
        // The secret "d" is inside "[redacted]" itself.
        let s = Secrets::new(["d".to_owned()]);
        assert_eq!(label(b"bad key d", false, &s), None);
        assert_eq!(format!("{s:?}"), "Secrets(1 forms, redacted)");
    }
}
