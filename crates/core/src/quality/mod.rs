//! Quality beside the load (docs/quality.md, docs/contract.md §10.17): a fixed bank of
//! prompts with expectations, the answers a server gave to it while under
//! the load (the sidecar `TRACE.quality.jsonl`), and the share of answers
//! that met their expectation, with its Wilson interval.
//!
//! Why it exists: goodput alone can be bought with broken answers (a harsher
//! quantization, a wrong chat template); a release gate must see quality
//! independently of latency (`gate --min-quality`).
//!
//! ```text
//! bank.jsonl ─▶ bank::parse ─┐
//!                            ├─▶ (recorder: send, normalise, judge) ─▶ sidecar
//! sidecar ─▶ sidecar::parse ─┴─▶ judge::judge (± a baseline sidecar) ─▶ report / receipt block / gate
//! lm-eval results.json ─▶ lm_eval::import ─▶ an imported figure for the gate
//! ```
//!
//! Every input here is untrusted: each problem is a [`QualityError`] naming
//! the line (JSON Lines) and the JSON pointer inside it, never a panic.

pub mod bank;
pub mod gate;
pub mod judge;
pub mod lm_eval;
pub mod normalise;
pub mod sidecar;

pub use bank::{parse_bank, Bank, BankItem, Expectation, Message, Prompt};
pub use judge::{judge, receipt_block, Change, ChangeKind, QualityBlock, QualityReport};
pub use normalise::normalise;
pub use sidecar::{parse_sidecar, ItemLine, ItemStatus, Sidecar, SidecarHeader, Verdict};

/// The schema tag of a sidecar's header line.
pub const SIDECAR_SCHEMA: &str = "goodput-quality/1";

/// The schema tag of `goodput quality --json`.
pub const REPORT_SCHEMA: &str = "goodput-quality-report/1";

/// The schema tag of an imported quality figure (`goodput quality import`).
pub const IMPORT_SCHEMA: &str = "goodput-quality-import/1";

/// The most characters of an item id (as for trace row ids).
pub const MAX_ID_CHARS: usize = crate::trace::model::MAX_ID_CHARS;

/// The most bytes one JSON Lines line may hold (a bank item or a sidecar line).
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// The most bytes a bank's regex may compile to (`regex` size limit), so a
/// hostile pattern cannot take the memory of a run.
pub const MAX_REGEX_BYTES: usize = 1 << 20;

/// The most characters of a regex pattern as written.
pub const MAX_REGEX_CHARS: usize = 1024;

/// The most `maxTokens` an item may ask for.
pub const MAX_ITEM_TOKENS: u64 = 1 << 20;

/// Size limits of a bank or a sidecar (both inclusive), declared like the
/// trace's 500 rows / 64 KiB: a bank is a fixed, small set, and a bounded
/// read keeps a wrong file from taking the machine's memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QualityLimits {
    /// The most items (bank lines, or sidecar lines after the header).
    pub max_items: u64,
    /// The most bytes of the file.
    pub max_bytes: u64,
}

impl QualityLimits {
    /// Default most items.
    pub const DEFAULT_ITEMS: u64 = 1000;
    /// Default most bytes (4 MiB).
    pub const DEFAULT_BYTES: u64 = 4 << 20;
}

impl Default for QualityLimits {
    fn default() -> Self {
        QualityLimits {
            max_items: Self::DEFAULT_ITEMS,
            max_bytes: Self::DEFAULT_BYTES,
        }
    }
}

/// Which file a [`QualityError::Line`] is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A bank (`bank.jsonl`).
    Bank,
    /// A quality sidecar (`TRACE.quality.jsonl`).
    Sidecar,
    /// A baseline sidecar (`--baseline`).
    Baseline,
}

impl std::fmt::Display for FileKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            FileKind::Bank => "bank",
            FileKind::Sidecar => "quality sidecar",
            FileKind::Baseline => "baseline sidecar",
        })
    }
}

/// Why a bank, a sidecar or an imported result cannot be used (exit 2 at
/// the command line).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum QualityError {
    /// One line is wrong: its 1-based number, the JSON pointer inside it
    /// (empty: the line itself), and why.
    #[error("{file} line {line}{}: {problem}", at(pointer))]
    Line {
        /// Which file.
        file: FileKind,
        /// 1-based line number.
        line: u64,
        /// JSON pointer inside the line's value.
        pointer: String,
        /// What is wrong.
        problem: String,
    },
    /// The file is over a declared limit.
    #[error("{file}: {problem} (raise it with {flag})")]
    OverLimit {
        /// Which file.
        file: FileKind,
        /// What is over.
        problem: String,
        /// The flag that raises the limit.
        flag: &'static str,
    },
    /// A file with no line to read.
    #[error("{file}: the file is empty (a header line is needed first)")]
    Empty {
        /// Which file.
        file: FileKind,
    },
    /// The sidecar's bytes are not what the trace's `quality.sha256` says.
    #[error("quality sidecar {path}: its sha256 {found} is not the trace's quality.sha256 {expected}: the sidecar belongs to another run or was changed after it")]
    Sha256Mismatch {
        /// The sidecar as shown.
        path: String,
        /// The sha256 of its bytes.
        found: String,
        /// The trace's `quality.sha256`.
        expected: String,
    },
    /// Two sidecars (or a sidecar and a bank) of different banks.
    #[error("{what}: bank sha256 {found} is not {expected}: answers to another bank cannot be compared item by item")]
    OtherBank {
        /// Which comparison.
        what: &'static str,
        /// The other file's bank sha256.
        found: String,
        /// This sidecar's bank sha256.
        expected: String,
    },
    /// A recorded verdict the bank's expectation does not give.
    #[error("quality sidecar line {line}: item {id:?} is recorded as {recorded} but the bank's expectation gives {judged}")]
    VerdictDisagrees {
        /// 1-based sidecar line.
        line: u64,
        /// The item id.
        id: String,
        /// The verdict written.
        recorded: &'static str,
        /// The verdict the bank gives.
        judged: &'static str,
    },
    /// An imported figure (`gate --quality-import`) that is not one.
    #[error("imported quality figure{}: {problem}", at(pointer))]
    ImportRecord {
        /// JSON pointer of the problem (empty: the document).
        pointer: String,
        /// What is wrong.
        problem: String,
    },
    /// An evaluation harness's results file that cannot be read as one.
    #[error("lm-eval results{}: {problem}", at(pointer))]
    Import {
        /// JSON pointer of the problem (empty: the document).
        pointer: String,
        /// What is wrong.
        problem: String,
    },
}

fn at(pointer: &str) -> String {
    if pointer.is_empty() {
        String::new()
    } else {
        format!(", {pointer}")
    }
}

/// Splits JSON Lines into (1-based line number, bytes) within `limits`: a
/// final newline ends the last line (it opens none), `\r\n` is accepted, a
/// blank line or a line over [`MAX_LINE_BYTES`] is an error naming it.
pub(crate) fn lines(
    bytes: &[u8],
    file: FileKind,
    limits: QualityLimits,
    max_lines: u64,
) -> Result<Vec<(u64, &[u8])>, QualityError> {
    if bytes.len() as u64 > limits.max_bytes {
        return Err(QualityError::OverLimit {
            file,
            problem: format!(
                "{} bytes, over the limit of {}",
                bytes.len(),
                limits.max_bytes
            ),
            flag: "--max-bytes",
        });
    }
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if body.is_empty() {
        return Err(QualityError::Empty { file });
    }
    let mut out = Vec::new();
    for (i, line) in body.split(|b| *b == b'\n').enumerate() {
        let number = i as u64 + 1;
        if number > max_lines {
            return Err(QualityError::OverLimit {
                file,
                problem: format!("more than {} items", limits.max_items),
                flag: "--max-items",
            });
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let bad = |problem: String| QualityError::Line {
            file,
            line: number,
            pointer: String::new(),
            problem,
        };
        if line.len() > MAX_LINE_BYTES {
            return Err(bad(format!(
                "{} bytes, over the {MAX_LINE_BYTES} a line may hold",
                line.len()
            )));
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            return Err(bad(
                "is blank (JSON Lines holds one value a line)".to_owned()
            ));
        }
        out.push((number, line));
    }
    Ok(out)
}

/// Reads one line as `T`, naming the JSON pointer of the first problem.
pub(crate) fn line_value<T: serde::de::DeserializeOwned>(
    file: FileKind,
    number: u64,
    line: &[u8],
) -> Result<T, QualityError> {
    // serde reads a struct from an array too; a line must be an object.
    if line.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(QualityError::Line {
            file,
            line: number,
            pointer: String::new(),
            problem: "must be a JSON object".to_owned(),
        });
    }
    let mut de = serde_json::Deserializer::from_slice(line);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let pointer = crate::merge::pointer(e.path());
        let pointer = if pointer == "/?" {
            String::new()
        } else {
            pointer
        };
        QualityError::Line {
            file,
            line: number,
            pointer,
            problem: e.inner().to_string(),
        }
    })?;
    de.end().map_err(|e| QualityError::Line {
        file,
        line: number,
        pointer: String::new(),
        problem: format!("more than one JSON value on the line ({e})"),
    })?;
    Ok(value)
}

/// Checks an item id: non-empty, at most [`MAX_ID_CHARS`] characters.
pub(crate) fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() {
        return Err("is empty (an item needs an id)".to_owned());
    }
    let n = id.chars().count();
    if n > MAX_ID_CHARS {
        return Err(format!(
            "has {n} characters, more than the {MAX_ID_CHARS} an id may"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_from_one_and_a_blank_line_is_named() {
        let l = lines(b"{}\r\n{}\n", FileKind::Bank, QualityLimits::default(), 10).unwrap();
        assert_eq!(l, vec![(1, &b"{}"[..]), (2, &b"{}"[..])]);
        let e = lines(b"{}\n\n{}\n", FileKind::Bank, QualityLimits::default(), 10).unwrap_err();
        assert_eq!(
            e.to_string(),
            "bank line 2: is blank (JSON Lines holds one value a line)"
        );
    }

    #[test]
    fn limits_name_the_flag_that_raises_them() {
        let small = QualityLimits {
            max_items: 1,
            max_bytes: 4,
        };
        let e = lines(b"{}\n{}\n", FileKind::Bank, small, 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "bank: 6 bytes, over the limit of 4 (raise it with --max-bytes)"
        );
        let small = QualityLimits {
            max_items: 1,
            max_bytes: 100,
        };
        let e = lines(b"{}\n{}\n", FileKind::Bank, small, 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "bank: more than 1 items (raise it with --max-items)"
        );
        assert_eq!(
            lines(b"\n", FileKind::Sidecar, small, 1).unwrap_err(),
            QualityError::Empty {
                file: FileKind::Sidecar
            }
        );
    }
}
