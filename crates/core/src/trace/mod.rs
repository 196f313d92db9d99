//! Trace documents: reading untrusted bytes and checking them against the
//! contract (docs/contract.md §3–§5).
//!
//! [`load`] is the whole front half of the analyzer: it enforces the byte
//! limit before parsing, parses in one streaming pass ([`parse`]), then checks
//! the document-level rules in a fixed order ([`validate`]), so the same bad
//! document always yields the same one-line rejection.

pub mod bounds;
pub mod model;
pub mod parse;
pub mod phases;
pub mod validate;
pub mod write;

use std::fmt;

pub use model::{
    concurrency_cap, ArrivalMode, Contract, Equality, Gates, Labels, QualityRef, Scalar,
    TokenCount, Warmup, Window,
};
pub use parse::{Interner, NumSlot, RawRow, RawStatus, Slot};
pub use phases::{Phase, Resources, ResourcesError};
pub use validate::{InvalidReason, InvalidSet};

use sha2::{Digest, Sha256};

/// Input limits. Both are inclusive: exactly `max_rows` rows and exactly
/// `max_bytes` bytes are accepted. The receipt records the limits in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Most rows a trace may hold.
    pub max_rows: u64,
    /// Most bytes a trace may have.
    pub max_bytes: u64,
}

impl Limits {
    /// The default row limit (docs/contract.md §4.1).
    pub const DEFAULT_MAX_ROWS: u64 = 500;
    /// The default byte limit (docs/contract.md §4.1).
    pub const DEFAULT_MAX_BYTES: u64 = 65_536;
    /// The environment variable that sets the row limit when no `--max-rows`
    /// is given (read by the command line only; named here so every
    /// rejection can say how to raise the limit).
    pub const ROWS_VARIABLE: &'static str = "GOODPUT_MAX_ROWS";
    /// The environment variable that sets the byte limit when no
    /// `--max-bytes` is given (read by the command line only).
    pub const BYTES_VARIABLE: &'static str = "GOODPUT_MAX_BYTES";
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rows: Self::DEFAULT_MAX_ROWS,
            max_bytes: Self::DEFAULT_MAX_BYTES,
        }
    }
}

/// Why a whole document was rejected: no receipt is produced (exit status 2).
///
/// `message` is one sentence that starts with the JSON pointer of the first
/// problem (empty pointer: the document as a whole).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct Rejection {
    /// JSON pointer of the problem (`""` for the whole document).
    pub pointer: String,
    /// The sentence to show, starting with the pointer when there is one.
    pub message: String,
    /// 1-based line and column in the input, where known (syntax errors).
    pub line_column: Option<(usize, usize)>,
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some((line, column)) = self.line_column {
            write!(f, " (line {line}, column {column})")?;
        }
        Ok(())
    }
}

/// Rejects the first member of `obj` (at `ptr`) that is not in `allowed`,
/// naming it: the one unknown-field rule of the document, its phases and
/// its resources (typos must not pass silently).
pub(crate) fn only_fields(
    obj: &serde_json::Map<String, serde_json::Value>,
    ptr: &str,
    allowed: &[&str],
) -> Result<(), Rejection> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(Rejection::at(
            format!("{ptr}/{}", goodput_util::pointer::escape(k)),
            format_args!(
                "is not a known field (expected one of: {})",
                allowed.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

impl Rejection {
    /// A rejection at `pointer`; `message` is what follows the pointer.
    pub fn at(pointer: impl Into<String>, message: impl fmt::Display) -> Rejection {
        let pointer = pointer.into();
        let message = if pointer.is_empty() {
            message.to_string()
        } else {
            // The sentence is for a person: a key inside the pointer is
            // shown with its control characters escaped, and cut when long.
            let shown = goodput_util::pointer::shortened(&pointer);
            format!("{} {message}", goodput_util::escape::terminal(&shown))
        };
        Rejection {
            pointer,
            message,
            line_column: None,
        }
    }

    /// The input is larger than the byte limit (checked before parsing).
    pub fn too_large(bytes: u64, limit: u64) -> Rejection {
        Rejection::at(
            "",
            format_args!(
                "the input is {bytes} bytes, over the limit of {limit} bytes \
                 (raise it with --max-bytes or {})",
                Limits::BYTES_VARIABLE
            ),
        )
    }

    /// The input has no JSON value at all: zero bytes, or only whitespace.
    pub fn empty(bytes: u64) -> Rejection {
        if bytes == 0 {
            Rejection::at(
                "",
                "the file is empty (0 bytes); a trace is one JSON object",
            )
        } else {
            Rejection::at(
                "",
                format_args!(
                    "the file is empty ({bytes} bytes of whitespace only); a trace is one JSON object"
                ),
            )
        }
    }

    /// The input is not one readable JSON value.
    pub(crate) fn unreadable(err: &serde_json::Error, near: String) -> Rejection {
        let what = match err.classify() {
            serde_json::error::Category::Eof => "the input ends early",
            _ if err.to_string().starts_with("recursion limit exceeded") => {
                "the input nests deeper than 128 levels"
            }
            _ => "the input is not valid JSON",
        };
        // serde_json appends " at line L column C"; we report the position separately.
        let detail = err.to_string();
        let detail = match detail.rfind(" at line ") {
            Some(i) => detail[..i].to_owned(),
            None => detail,
        };
        let near_text = if near.is_empty() {
            String::new()
        } else {
            format!(" near {}", goodput_util::pointer::shortened(&near))
        };
        let line_column = (err.line() > 0).then(|| (err.line(), err.column()));
        Rejection {
            pointer: near,
            message: format!("{what}{near_text}: {detail}"),
            line_column,
        }
    }
}

/// A trace that passed every document-level rule: the contract with defaults
/// resolved, and the rows as read (row-level problems are judged by `verdict`).
#[derive(Debug)]
pub struct Trace {
    /// The document-level contract.
    pub contract: Contract,
    /// Rows in document order.
    pub rows: Vec<RawRow>,
    /// Interned class names and failure reasons the rows refer to.
    pub strings: Interner,
    /// Lower-case hex sha256 of the exact input bytes.
    pub sha256: String,
    /// Length of the input in bytes.
    pub bytes: u64,
    /// The limits the trace was checked against.
    pub limits: Limits,
}

/// Hex sha256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        use fmt::Write;
        let _ = write!(out, "{byte:02x}");
    }
    out
}

/// Bytes → validated [`Trace`]: byte limit, parse, document-level checks.
///
/// Hashing runs on a second thread while the parse runs, so the sha256 of a
/// large trace costs no extra wall time on a machine with two cores.
pub fn load(bytes: &[u8], limits: Limits) -> Result<Trace, Rejection> {
    let len = bytes.len() as u64;
    if len > limits.max_bytes {
        return Err(Rejection::too_large(len, limits.max_bytes));
    }
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(Rejection::empty(len));
    }
    let (sha256, parsed) = std::thread::scope(|scope| {
        let hasher = scope.spawn(|| sha256_hex(bytes));
        let parsed = parse::parse(bytes);
        // The hashing thread cannot panic on any input; if it somehow did,
        // hashing again on this thread is still correct.
        let sha = hasher.join().unwrap_or_else(|_| sha256_hex(bytes));
        (sha, parsed)
    });
    let doc = parsed?;
    let (contract, rows, strings) = validate::validate_document(doc, limits)?;
    Ok(Trace {
        contract,
        rows,
        strings,
        sha256,
        bytes: len,
        limits,
    })
}
