//! One prompt and its short hash: what every part of the recorder that
//! makes, sends or describes a prompt shares (a leaf: it depends on nothing
//! of the recorder).

use sha2::{Digest, Sha256};

/// One prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The text sent.
    pub text: String,
    /// An explicit SLO class, if the source named one.
    pub class: Option<String>,
    /// Its length in model tokens, when `--tokenizer` counted it before the
    /// run (the row's `promptTokens`).
    pub tokens: Option<u32>,
}

/// The first 12 hex digits of the prompt's sha256.
pub fn prompt_hash(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest[..6].iter().map(|b| format!("{b:02x}")).collect()
}
