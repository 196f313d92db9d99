//! Trace replay: a mooncake JSONL file, one request per line, sent at the
//! file's own instants.
//!
//! A line is `{"timestamp": ms, "input_length": N, "output_length": M,
//! "hash_ids": [h…]}` (other fields are ignored, as AIPerf and guidellm do).
//! Each hash id is one block of [`BLOCK_TOKENS`] tokens, and equal ids give
//! equal block text, so a server's prefix cache sees the sharing the
//! original workload had. A prompt of `N` tokens with `k` ids is the first
//! `k − 1` blocks whole and `N − 512·(k − 1)` tokens of the last one, so `k`
//! must be `ceil(N / 512)`; `output_length` becomes the request's
//! `max_tokens`.
//!
//! Arrivals: `start + (timestamp − first timestamp) × scale`, in ms, computed
//! exactly so in f64 (then rounded to the microsecond like every trace
//! timestamp). Timestamps must not decrease; a line that breaks any rule
//! stops the run before anything is sent, with its line number.

use std::path::Path;

use serde::Deserialize;

use crate::workload::lengths::MAX_LENGTH;
use crate::workload::text::{stream, Segment, StreamKind, Texts};
use crate::workload::{fit_all, PromptPlan, RecipeSet, WorkloadError};
use goodput_tokenizer::sha256_hex;

/// Tokens per hash block (the mooncake convention).
pub const BLOCK_TOKENS: u32 = 512;

/// The most entries one replay may hold (a guard, like the schedule's).
pub const MAX_ENTRIES: usize = 5_000_000;

/// One line of a mooncake trace.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Source instant, ms.
    pub timestamp_ms: f64,
    /// Prompt tokens.
    pub input_length: u32,
    /// Output tokens (`max_tokens`), when given.
    pub output_length: Option<u32>,
    /// Hash blocks of the prompt.
    pub hash_ids: Vec<u64>,
}

/// A parsed replay file.
#[derive(Debug, Clone, PartialEq)]
pub struct Replay {
    /// Entries in file order.
    pub entries: Vec<Entry>,
    /// sha256 of the file's bytes.
    pub sha256: String,
}

#[derive(Deserialize)]
struct RawEntry {
    timestamp: Option<f64>,
    input_length: Option<u64>,
    #[serde(default)]
    output_length: Option<u64>,
    hash_ids: Option<Vec<u64>>,
}

/// Reads a mooncake JSONL file.
pub fn load(path: &Path) -> Result<Replay, WorkloadError> {
    let bytes = crate::workload::read_input(path, "--replay", crate::workload::MAX_INPUT_BYTES)?;
    parse(&path.display().to_string(), &bytes)
}

/// Parses the bytes of a mooncake JSONL file (`shown` names it in errors).
pub fn parse(shown: &str, bytes: &[u8]) -> Result<Replay, WorkloadError> {
    let bad = |line: usize, message: String| WorkloadError::Bad {
        path: shown.to_owned(),
        line,
        message,
    };
    let text = std::str::from_utf8(bytes).map_err(|e| bad(0, format!("not UTF-8 ({e})")))?;
    let mut entries: Vec<Entry> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let entry = parse_entry(line, &|message| bad(n, message))?;
        if let Some(prev) = entries.last() {
            if entry.timestamp_ms < prev.timestamp_ms {
                return Err(bad(
                    n,
                    format!(
                        "timestamp {} is before the previous entry's {}",
                        entry.timestamp_ms, prev.timestamp_ms
                    ),
                ));
            }
        }
        if entries.len() >= MAX_ENTRIES {
            return Err(bad(n, format!("more than {MAX_ENTRIES} entries")));
        }
        entries.push(entry);
    }
    if entries.is_empty() {
        return Err(WorkloadError::Empty(shown.to_owned()));
    }
    Ok(Replay {
        entries,
        sha256: sha256_hex(bytes),
    })
}

/// One line of the file, checked on its own (`bad` names the line).
fn parse_entry(line: &str, bad: &dyn Fn(String) -> WorkloadError) -> Result<Entry, WorkloadError> {
    let raw: RawEntry =
        serde_json::from_str(line).map_err(|e| bad(format!("not a mooncake entry ({e})")))?;
    let timestamp_ms = raw
        .timestamp
        .filter(|t| t.is_finite() && *t >= 0.0)
        .ok_or_else(|| bad("`timestamp` (ms, >= 0) is required for replay".into()))?;
    let input_length = raw
        .input_length
        .filter(|&l| (1..=u64::from(MAX_LENGTH)).contains(&l))
        .ok_or_else(|| bad("`input_length` must be a whole number from 1 to 1000000".into()))?
        as u32;
    let output_length = match raw.output_length {
        None => None,
        Some(o) if (1..=u64::from(MAX_LENGTH)).contains(&o) => Some(o as u32),
        Some(_) => {
            return Err(bad(
                "`output_length` must be a whole number from 1 to 1000000".into(),
            ))
        }
    };
    let hash_ids = raw
        .hash_ids
        .ok_or_else(|| bad("`hash_ids` is required".into()))?;
    let blocks = input_length.div_ceil(BLOCK_TOKENS) as usize;
    if hash_ids.len() != blocks {
        return Err(bad(format!(
            "{} hash ids for input_length {input_length}: expected {blocks} (one per {BLOCK_TOKENS} tokens)",
            hash_ids.len()
        )));
    }
    Ok(Entry {
        timestamp_ms,
        input_length,
        output_length,
        hash_ids,
    })
}

impl Replay {
    /// The scheduled arrivals: `start_ms + (t − t_first) × scale`, exactly.
    pub fn arrivals_ms(&self, start_ms: f64, scale: f64) -> Vec<f64> {
        let first = self.entries.first().map_or(0.0, |e| e.timestamp_ms);
        self.entries
            .iter()
            .map(|e| start_ms + (e.timestamp_ms - first) * scale)
            .collect()
    }

    /// The span of the replay after scaling, ms (last arrival − first).
    pub fn span_ms(&self, scale: f64) -> f64 {
        match (self.entries.first(), self.entries.last()) {
            (Some(a), Some(b)) => (b.timestamp_ms - a.timestamp_ms) * scale,
            _ => 0.0,
        }
    }

    /// Prepares every entry's prompt: its hash blocks, the last one cut to
    /// the remaining length, and the whole fitted to `input_length` tokens.
    pub fn recipes(&self, texts: Texts) -> Result<RecipeSet, WorkloadError> {
        // Each distinct block is fitted alone once (its text is the same
        // wherever it appears), then each prompt as a whole.
        let mut block_words = std::collections::BTreeMap::new();
        for e in &self.entries {
            let full = e.hash_ids.len().saturating_sub(1);
            for &h in &e.hash_ids[..full] {
                if let std::collections::btree_map::Entry::Vacant(v) = block_words.entry(h) {
                    let mut seg = [Segment {
                        stream: stream(StreamKind::Block, h),
                        words: 0,
                    }];
                    texts.fit(&mut seg, BLOCK_TOKENS)?;
                    v.insert(seg[0].words);
                }
            }
        }
        let plans = self
            .entries
            .iter()
            .map(|e| {
                let full = e.hash_ids.len().saturating_sub(1);
                let mut segments: Vec<Segment> = e.hash_ids[..full]
                    .iter()
                    .map(|&h| Segment {
                        stream: stream(StreamKind::Block, h),
                        words: block_words.get(&h).copied().unwrap_or(BLOCK_TOKENS),
                    })
                    .collect();
                let last = e.hash_ids.last().copied().unwrap_or(0);
                segments.push(Segment {
                    stream: stream(StreamKind::Block, last),
                    words: 0,
                });
                PromptPlan {
                    segments,
                    target: e.input_length,
                    prefix_group: None,
                    max_tokens: e.output_length,
                }
            })
            .collect();
        Ok(RecipeSet {
            recipes: fit_all(&texts, plans)?,
            texts,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::body::VOCABULARY;
    use std::sync::Arc;

    const FILE: &str = r#"{"timestamp": 1000, "input_length": 600, "output_length": 10, "hash_ids": [7, 8]}
{"timestamp": 1000, "input_length": 512, "output_length": 3, "hash_ids": [7]}

{"timestamp": 1250, "input_length": 20, "hash_ids": [9], "extra": "ignored"}
"#;

    #[test]
    fn arrivals_are_the_timestamps_shifted_and_scaled_exactly() {
        let r = parse("t.jsonl", FILE.as_bytes()).unwrap();
        assert_eq!(r.arrivals_ms(0.0, 1.0), vec![0.0, 0.0, 250.0]);
        assert_eq!(r.arrivals_ms(5000.0, 0.5), vec![5000.0, 5000.0, 5125.0]);
        assert_eq!(r.arrivals_ms(0.0, 2.0), vec![0.0, 0.0, 500.0]);
        assert_eq!(r.span_ms(2.0), 500.0);
        assert_eq!(r.entries[2].output_length, None);
    }

    #[test]
    fn bad_lines_are_named_by_number() {
        let cases = [
            ("{\"input_length\": 5, \"hash_ids\": [1]}\n", 1, "timestamp"),
            ("\n{\"timestamp\": 1, \"input_length\": 0, \"hash_ids\": []}\n", 2, "input_length"),
            ("{\"timestamp\": 1, \"input_length\": 600, \"hash_ids\": [1]}\n", 1, "expected 2"),
            ("{\"timestamp\": 1, \"input_length\": 6}\n", 1, "hash_ids"),
            (
                "{\"timestamp\": 9, \"input_length\": 6, \"hash_ids\": [1]}\n{\"timestamp\": 8, \"input_length\": 6, \"hash_ids\": [1]}\n",
                2,
                "before the previous",
            ),
            ("{\"timestamp\": 9, \"input_length\": 6, \"hash_ids\": [1]\n", 1, "not a mooncake entry"),
        ];
        for (text, line, why) in cases {
            let err = parse("t.jsonl", text.as_bytes()).unwrap_err().to_string();
            assert!(err.starts_with(&format!("t.jsonl:{line}:")), "{err}");
            assert!(err.contains(why), "{err}");
        }
        assert!(matches!(parse("e", b"\n\n"), Err(WorkloadError::Empty(_))));
    }

    #[test]
    fn equal_hash_ids_give_equal_blocks_and_lengths_are_exact() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/tokenizer/tokenizer.json"
        );
        let c = Arc::new(goodput_tokenizer::TokenCounter::load(Path::new(path)).unwrap());
        let r = parse("t.jsonl", FILE.as_bytes()).unwrap();
        let texts = Texts::new(1, &VOCABULARY, Some(c.clone())).unwrap();
        let set = r.recipes(texts.clone()).unwrap();
        let lens: Vec<usize> = (0..3).map(|i| c.count(&set.text(i)).unwrap()).collect();
        assert_eq!(lens, vec![600, 512, 20]);
        // Block 7 is whole in the first prompt and all of the second.
        let block7 = set.text(1);
        assert!(set.text(0).starts_with(&block7));
        assert_eq!(set.extras(0).max_tokens, Some(10));
        assert_eq!(set.extras(2).max_tokens, None);
    }
}
