//! Canonical JSON: the byte-exact form of receipts.
//!
//! Numbers are plain JSON numbers. A float with an integral value below 2^53
//! in magnitude is written as an integer (`300`, not `300.0`); any other float
//! is written as the shortest decimal that reads back to the same double
//! (serde_json's `ryu`), e.g. `1.8166666666666667`. Keys keep struct order and
//! `BTreeMap` order; output is pretty-printed with two-space indents and a final
//! newline. No clock, host or path is ever written.

use serde::Serialize;
use serde_json::{Number, Value};

const EXACT_INTEGER_LIMIT: f64 = 9_007_199_254_740_992.0; // 2^53

/// What every JSON reader says of input that starts with a UTF-8
/// byte-order mark (some Windows editors add one): JSON has none (RFC 8259
/// §8.1), and serde_json's own word for it, "expected value (line 1,
/// column 1)", sends the reader looking for a syntax error.
pub const BOM_MESSAGE: &str = "the input starts with a UTF-8 byte-order mark (EF BB BF); \
                               goodput reads JSON without one: remove it";

/// Whether `bytes` start with a UTF-8 byte-order mark (EF BB BF).
pub fn starts_with_bom(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0xEF, 0xBB, 0xBF])
}

/// Serializes `value` canonically (see the module docs).
pub fn to_canonical_json<T: Serialize>(value: &T) -> serde_json::Result<Vec<u8>> {
    let mut tree = serde_json::to_value(value)?;
    normalize_numbers(&mut tree);
    let mut out = serde_json::to_vec_pretty(&tree)?;
    out.push(b'\n');
    Ok(out)
}

/// Rewrites integral floats as integers, in place.
pub fn normalize_numbers(value: &mut Value) {
    match value {
        Value::Number(n) => {
            if let Some(x) = n.as_f64().filter(|_| n.is_f64()) {
                if x.fract() == 0.0 && x.abs() < EXACT_INTEGER_LIMIT {
                    *n = Number::from(x as i64);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(normalize_numbers),
        Value::Object(map) => map.values_mut().for_each(normalize_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integral_floats_print_as_integers_and_others_round_trip() {
        let v = serde_json::json!({"a": 300.0, "b": -0.0, "c": 1.8166666666666667, "d": 1e300, "e": 0.1});
        let text = String::from_utf8(to_canonical_json(&v).unwrap()).unwrap();
        assert!(text.contains("\"a\": 300,"), "{text}");
        assert!(text.contains("\"b\": 0,"), "{text}");
        assert!(text.contains("\"c\": 1.8166666666666667,"), "{text}");
        assert!(text.contains("\"d\": 1e+300,"), "{text}");
        assert!(text.contains("\"e\": 0.1\n"), "{text}");
        assert!(text.ends_with("}\n"));
    }
}
