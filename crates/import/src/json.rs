//! Reading other tools' JSON: typed parsing that names the place of the first
//! problem, and a repair of Python's non-standard float literals.
//!
//! Python's `json.dump` writes `NaN`, `Infinity` and `-Infinity` (e.g. vLLM's
//! `request_rate` of `inf`, or a statistic over zero requests). Those are not
//! JSON, and the analyzer rightly refuses them in a trace; in a *source* file
//! they are a fact about the tool's writer, so [`python_literals_to_json`]
//! rewrites them (outside strings) to `null`, `"inf"` and `"-inf"` before
//! parsing. A per-request number that was `NaN` then fails its typed field,
//! with the place named.

use std::borrow::Cow;

use serde::de::DeserializeOwned;

use crate::error::ImportError;

/// Rewrites `NaN` → `null`, `Infinity` → `"inf"`, `-Infinity` → `"-inf"`
/// outside JSON strings; returns the input unchanged when none occur.
pub fn python_literals_to_json(bytes: &[u8]) -> Cow<'_, [u8]> {
    let needs = bytes
        .windows(3)
        .any(|w| w == b"NaN" || w == b"Inf" || w == b"nfi");
    if !needs {
        return Cow::Borrowed(bytes);
    }
    let mut out = Vec::with_capacity(bytes.len() + 16);
    let mut in_string = false;
    let mut escaped = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            out.push(b);
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        let rest = &bytes[i..];
        if b == b'"' {
            in_string = true;
            out.push(b);
            i += 1;
        } else if rest.starts_with(b"NaN") {
            out.extend_from_slice(b"null");
            i += 3;
        } else if rest.starts_with(b"-Infinity") {
            out.extend_from_slice(b"\"-inf\"");
            i += 9;
        } else if rest.starts_with(b"Infinity") {
            out.extend_from_slice(b"\"inf\"");
            i += 8;
        } else {
            out.push(b);
            i += 1;
        }
    }
    Cow::Owned(out)
}

/// Where a JSON text sits in its file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Within {
    /// The whole file is one document.
    Document,
    /// Line N (1-based) of a JSONL file.
    Line(usize),
}

impl Within {
    /// `line N ` for a JSONL line, nothing for a document.
    pub fn prefix(self) -> String {
        match self {
            Within::Document => String::new(),
            Within::Line(n) => format!("line {n} "),
        }
    }
}

/// Parses `bytes` as one JSON document into `T`. A syntax error names its
/// line and column; a type error names the JSON pointer of the offending
/// value (after `line N` for a JSONL line).
pub fn parse_typed<T: DeserializeOwned>(bytes: &[u8], within: Within) -> Result<T, ImportError> {
    if goodput_util::json::starts_with_bom(bytes) {
        let place = match within {
            Within::Document => String::new(),
            Within::Line(n) => format!("line {n}"),
        };
        return Err(ImportError::at(place, goodput_util::json::BOM_MESSAGE));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let pointer = pointer_of(e.path());
        let inner = e.inner();
        if inner.is_syntax() || inner.is_eof() {
            syntax(within, inner)
        } else {
            let place = format!("{}{pointer}", within.prefix());
            ImportError::at(place.trim_end(), strip_position(&inner.to_string()))
        }
    })?;
    de.end().map_err(|e| syntax(within, &e))?;
    Ok(value)
}

fn syntax(within: Within, e: &serde_json::Error) -> ImportError {
    let place = match within {
        Within::Document => format!("line {}, column {}", e.line(), e.column()),
        Within::Line(n) => format!("line {n}, column {}", e.column()),
    };
    ImportError::at(
        place,
        format!("not valid JSON: {}", strip_position(&e.to_string())),
    )
}

/// serde_json appends " at line L column C" to its messages; the place is
/// already named, so drop it.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// The JSON pointer (RFC 6901) of a serde path.
pub fn pointer_of(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path.iter() {
        out.push('/');
        match segment {
            Segment::Seq { index } => out.push_str(&index.to_string()),
            Segment::Map { key } => out.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Segment::Enum { variant } => out.push_str(variant),
            Segment::Unknown => out.push('?'),
        }
    }
    if out == "/?" {
        out.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_literals_become_json_outside_strings_only() {
        let input = br#"{"a": NaN, "b": Infinity, "c": -Infinity, "s": "NaN Infinity \" NaN"}"#;
        let out = python_literals_to_json(input);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"a": null, "b": "inf", "c": "-inf", "s": "NaN Infinity \" NaN"}"#
        );
        assert!(matches!(
            python_literals_to_json(b"{\"a\": 1}"),
            Cow::Borrowed(_)
        ));
    }

    #[derive(Debug, serde::Deserialize)]
    struct Doc {
        #[allow(dead_code)]
        items: Vec<Item>,
    }
    #[derive(Debug, serde::Deserialize)]
    struct Item {
        #[allow(dead_code)]
        x: f64,
    }

    #[test]
    fn type_errors_name_the_json_pointer_and_syntax_errors_the_line() {
        let e = parse_typed::<Doc>(br#"{"items": [{"x": 1}, {"x": "no"}]}"#, Within::Document)
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "/items/1/x: invalid type: string \"no\", expected f64"
        );
        let e = parse_typed::<Doc>(b"{\"items\": [\n{\"x\": 1},", Within::Document).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("line 2, column 9: not valid JSON"),
            "{e}"
        );
        let e = parse_typed::<Doc>(br#"{"items": []} x"#, Within::Document).unwrap_err();
        assert!(e.to_string().contains("trailing characters"), "{e}");
        let e = parse_typed::<Doc>(br#"{"items": [{"x": true}]}"#, Within::Line(7)).unwrap_err();
        assert_eq!(
            e.to_string(),
            "line 7 /items/0/x: invalid type: boolean `true`, expected f64"
        );
        let e = parse_typed::<Doc>(b"{\"items\": [", Within::Line(3)).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("line 3, column 11: not valid JSON"),
            "{e}"
        );
    }
}
