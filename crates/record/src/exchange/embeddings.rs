//! The answer to an embeddings request (`POST /v1/embeddings`), which is
//! not streamed: one JSON document, read whole once its body has ended.
//!
//! `{"object": "list", "data": [{"object": "embedding", "index": 0,
//! "embedding": [...]}, ...], "usage": {"prompt_tokens": N, "total_tokens":
//! N}}`: a non-empty `data` array completes the request (the vectors are
//! not kept, only counted), `usage.prompt_tokens` is the inputs' tokens;
//! an error object (`{"error": …}`, `{"object": "error", …}`) is a server
//! error; anything else is unreadable.

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::exchange::chunk::{Chunk, Usage};

#[derive(Deserialize)]
struct RawDocument {
    #[serde(default)]
    data: Option<Vec<IgnoredAny>>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default)]
    error: Option<RawError>,
    #[serde(default)]
    object: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawError {
    Object {
        #[serde(default)]
        message: Option<String>,
    },
    Text(String),
}

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
}

/// Reads a whole embeddings document: [`Chunk::Done`] with its usage (no
/// output tokens: an embedding has none), a server error, or
/// [`Chunk::Malformed`].
pub fn classify_document(bytes: &[u8]) -> Chunk {
    let Ok(raw) = serde_json::from_slice::<RawDocument>(bytes) else {
        return Chunk::Malformed;
    };
    if raw.error.is_some() || raw.object.as_deref() == Some("error") {
        let message = match raw.error {
            Some(RawError::Object { message }) => message,
            Some(RawError::Text(text)) => Some(text),
            None => None,
        };
        let message = message.or(raw.message);
        return Chunk::server_error(message.as_deref().unwrap_or("error object"));
    }
    match raw.data {
        Some(vectors) if !vectors.is_empty() => Chunk::Done(Some(Usage {
            prompt_tokens: raw.usage.and_then(|u| u.prompt_tokens),
            completion_tokens: Some(0),
            reasoning_tokens: None,
        })),
        _ => Chunk::Malformed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_of_vectors_completes_with_its_prompt_tokens() {
        let doc = br#"{"object":"list","data":[{"object":"embedding","index":0,"embedding":[0.1,-0.2]},{"object":"embedding","index":1,"embedding":[0.3,0.4]}],"model":"m","usage":{"prompt_tokens":12,"total_tokens":12}}"#;
        assert_eq!(
            classify_document(doc),
            Chunk::Done(Some(Usage {
                prompt_tokens: Some(12),
                completion_tokens: Some(0),
                reasoning_tokens: None,
            }))
        );
    }

    #[test]
    fn errors_empty_lists_and_garbage_do_not_complete() {
        assert_eq!(
            classify_document(br#"{"object":"error","message":"too long","code":400}"#),
            Chunk::ServerError("too long".into())
        );
        assert_eq!(
            classify_document(br#"{"error":{"message":"no model"}}"#),
            Chunk::ServerError("no model".into())
        );
        assert_eq!(
            classify_document(br#"{"object":"list","data":[]}"#),
            Chunk::Malformed
        );
        assert_eq!(
            classify_document(br#"{"data":[{"embedding":[1"#),
            Chunk::Malformed
        );
        assert_eq!(classify_document(b"<html>"), Chunk::Malformed);
    }
}
