//! `--extra-body JSON`: fields merged into every request body (sampling
//! settings such as `temperature` and `top_p`, vendor extensions such as
//! vLLM's `ignore_eos` or `min_tokens`).
//!
//! The object is not secret: it changes what the server computes, so a
//! reviewer must see it, and it is written into the trace as
//! `workload.extraBody` (compact JSON, keys in the order given).
//!
//! Keys the recorder sets itself are refused, because overriding them would
//! silently change what is measured or make the stream unreadable:
//! `model`, `messages`, `prompt`, `stream` and `stream_options` always;
//! `max_tokens` when `--max-tokens`, `--output-tokens` or `--replay` is
//! given (the recorder sets it per request) and `ignore_eos` when
//! `--ignore-eos` is given (each may come from one place only).
//!
//! Merging is a splice: the recorder's own body is serialized as before and
//! the extra members are appended before its closing brace. Since no key can
//! be in both, the result is a JSON object with unique keys, and the cost per
//! request is one copy of a few bytes.

use serde_json::{Map, Value};

/// Keys the recorder always sets.
pub const ALWAYS_SET: [&str; 5] = ["model", "messages", "prompt", "stream", "stream_options"];

/// Why an `--extra-body` object is refused.
#[derive(Debug, thiserror::Error)]
pub enum ExtraBodyError {
    /// The text is not JSON.
    #[error("--extra-body: not JSON (line {line}, column {column}: {error})")]
    NotJson {
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What the JSON parser said.
        error: serde_json::Error,
    },
    /// The JSON is not an object.
    #[error("--extra-body: expected a JSON object such as '{{\"temperature\": 0}}'")]
    NotObject,
    /// A key the recorder always sets ([`ALWAYS_SET`]).
    #[error(
        "--extra-body: `{key}` is set by the recorder itself and cannot be overridden \
         (it always sets {always})",
        always = ALWAYS_SET.join(", ")
    )]
    SetByRecorder {
        /// The key.
        key: String,
    },
    /// A key another flag makes the recorder set.
    #[error("--extra-body: `{key}` is also set by {flag}; give it in one place only")]
    AlsoSetBy {
        /// The key.
        key: String,
        /// The flag that sets it.
        flag: String,
    },
}

/// A validated `--extra-body` object (empty when the flag is absent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExtraBody {
    /// The object, compact (`{"temperature":0}`); empty when there is none.
    compact: String,
    /// Its keys.
    keys: Vec<String>,
}

impl ExtraBody {
    /// Parses and checks `text` against the keys the recorder will set;
    /// `max_tokens_flag` and `ignore_eos_flag` name the flag that makes the
    /// recorder set that key, if any.
    pub fn parse(
        text: &str,
        max_tokens_flag: Option<&str>,
        ignore_eos_flag: Option<&str>,
    ) -> Result<ExtraBody, ExtraBodyError> {
        let value: Value = serde_json::from_str(text).map_err(|e| ExtraBodyError::NotJson {
            line: e.line(),
            column: e.column(),
            error: e,
        })?;
        let Value::Object(map) = value else {
            return Err(ExtraBodyError::NotObject);
        };
        for key in map.keys() {
            if ALWAYS_SET.contains(&key.as_str()) {
                return Err(ExtraBodyError::SetByRecorder { key: key.clone() });
            }
            let flag = match (key.as_str(), max_tokens_flag, ignore_eos_flag) {
                ("max_tokens", Some(flag), _) | ("ignore_eos", _, Some(flag)) => flag,
                _ => continue,
            };
            return Err(ExtraBodyError::AlsoSetBy {
                key: key.clone(),
                flag: flag.to_owned(),
            });
        }
        Ok(ExtraBody::from_map(&map))
    }

    fn from_map(map: &Map<String, Value>) -> ExtraBody {
        if map.is_empty() {
            return ExtraBody::default();
        }
        // Serializing a parsed JSON value cannot fail.
        ExtraBody {
            compact: serde_json::to_string(map).unwrap_or_default(),
            keys: map.keys().cloned().collect(),
        }
    }

    /// Whether there is nothing to merge.
    pub fn is_empty(&self) -> bool {
        self.compact.is_empty()
    }

    /// Whether `key` is one of the members.
    pub fn has(&self, key: &str) -> bool {
        self.keys.iter().any(|k| k == key)
    }

    /// The object as compact JSON, for `workload.extraBody`.
    pub fn as_json(&self) -> &str {
        &self.compact
    }

    /// Appends the extra members to a serialized JSON object `body`.
    pub fn merge_into(&self, mut body: Vec<u8>) -> Vec<u8> {
        if self.is_empty() || body.last() != Some(&b'}') {
            return body;
        }
        let members = &self.compact[1..self.compact.len() - 1];
        body.pop();
        if body.last() != Some(&b'{') {
            body.push(b',');
        }
        body.extend_from_slice(members.as_bytes());
        body.push(b'}');
        body
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_appended_inside_the_object() {
        let extra = ExtraBody::parse(
            r#"{"temperature": 0, "top_p": 0.9, "ignore_eos": true}"#,
            Some("--max-tokens"),
            None,
        )
        .unwrap();
        assert_eq!(
            extra.as_json(),
            r#"{"temperature":0,"top_p":0.9,"ignore_eos":true}"#
        );
        let merged = extra.merge_into(br#"{"model":"m","stream":true}"#.to_vec());
        assert_eq!(
            String::from_utf8(merged).unwrap(),
            r#"{"model":"m","stream":true,"temperature":0,"top_p":0.9,"ignore_eos":true}"#
        );
        assert_eq!(extra.merge_into(b"{}".to_vec()), extra.as_json().as_bytes());
        assert!(extra.has("top_p") && !extra.has("max_tokens"));
        let none = ExtraBody::parse("{}", None, None).unwrap();
        assert!(none.is_empty());
        assert_eq!(none.merge_into(b"{\"a\":1}".to_vec()), b"{\"a\":1}");
    }

    #[test]
    fn keys_the_recorder_sets_are_refused_by_name() {
        for key in ALWAYS_SET {
            let err = ExtraBody::parse(&format!("{{\"{key}\": 1}}"), None, None)
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with(&format!("--extra-body: `{key}` is set by the recorder")),
                "{err}"
            );
        }
        assert_eq!(
            ExtraBody::parse(r#"{"max_tokens": 5}"#, Some("--max-tokens"), None)
                .unwrap_err()
                .to_string(),
            "--extra-body: `max_tokens` is also set by --max-tokens; give it in one place only"
        );
        assert!(ExtraBody::parse(r#"{"max_tokens": 5}"#, None, None).is_ok());
        assert!(ExtraBody::parse(r#"{"ignore_eos": true}"#, None, Some("--ignore-eos")).is_err());
    }

    #[test]
    fn not_an_object_is_refused_with_where() {
        assert!(ExtraBody::parse("[1]", None, None)
            .unwrap_err()
            .to_string()
            .contains("a JSON object"));
        let err = ExtraBody::parse("{\"a\":\n tru}", None, None)
            .unwrap_err()
            .to_string();
        assert!(err.contains("line 2"), "{err}");
    }
}
