//! A Hugging Face `tokenizer.json`, loaded from a file (never from a hub), used
//! to count model tokens: by the recorder (exact prompt lengths, the client's
//! `promptTokens`) and by the sim (its usage block's `prompt_tokens`).
//!
//! Counting uses `add_special_tokens = false`: the figure is the tokens of the
//! text itself. What a server adds around it (a BOS token, a chat template)
//! shows up as the difference between a row's `promptTokens` (this count) and
//! `serverPromptTokens` (the server's usage block), which is the point of
//! recording both.

use std::path::Path;

use sha2::{Digest, Sha256};

/// The largest `tokenizer.json` read: 256 MiB, several times the largest
/// in use (tens of MB), so a FIFO or a device is refused at the limit
/// instead of read without bound.
pub const MAX_TOKENIZER_BYTES: u64 = 256 << 20;

/// Why a tokenizer could not be loaded or used.
#[derive(Debug, thiserror::Error)]
pub enum TokenizerError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The path as given.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is larger than [`MAX_TOKENIZER_BYTES`]; nothing past the
    /// limit was read.
    #[error("{path} is larger than {limit} bytes, the limit on a tokenizer.json")]
    TooLarge {
        /// The path as given.
        path: String,
        /// The limit in force.
        limit: u64,
    },
    /// The file is not a usable `tokenizer.json`.
    #[error("{path} is not a usable tokenizer.json: {reason}")]
    Parse {
        /// The path as given.
        path: String,
        /// The parser's complaint.
        reason: NotATokenizer,
    },
    /// The tokenizer failed on a text (the text is never quoted).
    #[error("the tokenizer could not encode a prompt: {0}")]
    Encode(String),
}

/// Bytes the tokenizers library cannot parse as a `tokenizer.json`; its text
/// is the parser's message.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotATokenizer(tokenizers::Error);

/// A loaded tokenizer and the sha256 of the file it came from (the trace
/// names the file by that hash, never by its path).
pub struct TokenCounter {
    tokenizer: tokenizers::Tokenizer,
    sha256: String,
}

impl std::fmt::Debug for TokenCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenCounter")
            .field("sha256", &self.sha256)
            .finish_non_exhaustive()
    }
}

/// The lowercase hex sha256 of `bytes` (how every workload source is named).
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl TokenCounter {
    /// Reads and parses a `tokenizer.json`.
    pub fn load(path: &Path) -> Result<TokenCounter, TokenizerError> {
        let shown = path.display().to_string();
        let bytes =
            goodput_util::io::read_limited(&shown, MAX_TOKENIZER_BYTES).map_err(|e| match e {
                goodput_util::io::ReadError::Io { source, .. } => TokenizerError::Io {
                    path: shown.clone(),
                    source,
                },
                goodput_util::io::ReadError::TooLarge { .. } => TokenizerError::TooLarge {
                    path: shown.clone(),
                    limit: MAX_TOKENIZER_BYTES,
                },
            })?;
        TokenCounter::from_bytes(&bytes).map_err(|reason| TokenizerError::Parse {
            path: shown,
            reason,
        })
    }

    /// Parses the bytes of a `tokenizer.json`; the error is the parser's message.
    pub fn from_bytes(bytes: &[u8]) -> Result<TokenCounter, NotATokenizer> {
        let tokenizer = tokenizers::Tokenizer::from_bytes(bytes).map_err(NotATokenizer)?;
        Ok(TokenCounter {
            tokenizer,
            sha256: sha256_hex(bytes),
        })
    }

    /// The sha256 of the tokenizer file.
    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// Tokens in `text`, without special tokens.
    pub fn count(&self, text: &str) -> Result<usize, TokenizerError> {
        self.tokenizer
            .encode(text, false)
            .map(|e| e.len())
            .map_err(|e| TokenizerError::Encode(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> TokenCounter {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/tokenizer/tokenizer.json"
        );
        TokenCounter::load(Path::new(path)).unwrap()
    }

    // The counts below were taken with the Python `tokenizers` package on the
    // same file (see fixtures/tokenizer/make_tokenizer.py), an implementation
    // independent of this crate's use of it.
    #[test]
    fn the_fixture_counts_as_the_python_tokenizer_does() {
        let t = fixture();
        assert_eq!(t.count("the model says hello").unwrap(), 9);
        assert_eq!(t.count(" the river").unwrap(), 2);
        assert_eq!(t.count("goodput latency").unwrap(), 12);
        assert_eq!(t.count("seven north music").unwrap(), 3);
        assert_eq!(t.count("").unwrap(), 0);
    }

    #[test]
    fn a_file_that_is_not_a_tokenizer_is_refused_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.json");
        std::fs::write(&p, "{\"nope\": 1}").unwrap();
        let err = TokenCounter::load(&p).unwrap_err().to_string();
        assert!(err.contains("t.json"), "{err}");
        let err = TokenCounter::load(&dir.path().join("missing.json"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("missing.json"), "{err}");
    }

    #[test]
    fn sha256_is_lowercase_hex() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
