//! What the sim answers, as a function of the prompt alone, so a quality
//! bank can be checked exactly against it (docs/quality.md, "The sim").
//!
//! The prompt text is a chat request's message contents (string contents,
//! joined by `\n`) or a completions request's `prompt` string. With `h` its
//! FNV-1a 64-bit hash, the answer's token `i` is `WORDS[(h mod 8 + i) mod 8]`
//! of ` the`, ` model`, ` says`, ` hello`, ` to`, ` a`, ` queue`, ` again`.
//! `--corrupt-answers F` corrupts the prompts whose `(h >> 32) mod 10^6` is
//! below `F × 10^6`: their answer starts one word later. The same prompts
//! every run, whatever the load.

/// FNV-1a, 64 bits: small, fixed, and easy to compute by hand in a test.
pub fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The prompt text the answer is a function of.
pub fn prompt_text(
    messages: Option<&[serde_json::Value]>,
    prompt: Option<&serde_json::Value>,
) -> String {
    match (messages, prompt) {
        (Some(messages), _) => messages
            .iter()
            .filter_map(|m| m.get("content").and_then(serde_json::Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        (None, Some(serde_json::Value::String(p))) => p.clone(),
        _ => String::new(),
    }
}

/// Whether the answer to a prompt of hash `h` is corrupted at share `share`.
pub fn corrupted(h: u64, share: f64) -> bool {
    ((h >> 32) % 1_000_000) < (share * 1_000_000.0).round() as u64
}

/// The index in the vocabulary where the answer to `text` starts.
pub fn first_word(text: &str, corrupt_share: f64) -> usize {
    let h = fnv1a(text);
    (h % 8) as usize + usize::from(corrupted(h, corrupt_share))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_vectors() {
        // From the FNV reference test suite.
        assert_eq!(fnv1a(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn a_corrupted_answer_starts_one_word_later_and_none_at_share_zero() {
        let h = fnv1a("foobar");
        assert_eq!(first_word("foobar", 0.0), (h % 8) as usize);
        assert!(corrupted(h, 1.0));
        assert_eq!(first_word("foobar", 1.0), (h % 8) as usize + 1);
    }
}
