//! What a server says about its own handling of one request, read into the
//! row labels under `server.` (docs/contract.md §10.17). Pure: the recorder
//! hands in the final chunk's JSON and the response headers; this module
//! names the labels.
//!
//! - **llama.cpp** (`llama-server`): a `timings` object in the last stream
//!   chunk (and in unstreamed responses): `prompt_n` (prompt tokens
//!   processed, the cached ones not counted), `prompt_ms` (their prefill),
//!   `predicted_n`, `predicted_ms` (decode), `cache_n` (prompt tokens taken
//!   from the cache). It reports no queue wait.
//! - **`Server-Timing`** (W3C; gateways, proxies, some servers): entries
//!   `name;dur=MS;desc="…"`, comma-separated, possibly over several header
//!   lines. An entry named `queue`, `queue_time`, `queueing` or `wait` is the
//!   queue wait; `prefill` or `prompt` the prefill; `decode` the decode;
//!   every entry with a `dur` is also kept as `server.timing.NAME` (name
//!   reduced to `[A-Za-z0-9_-]`, at most [`MAX_TIMING_ENTRIES`]).
//!
//! A value that is not a finite number ≥ 0 is left out. When two sources
//! name the same label, the response body's `timings` win (the engine's own
//! word over a hop's).

use serde_json::Value;

use crate::receipt::server_timing::{PREFILL_LABEL, QUEUE_LABEL};
use crate::trace::{Labels, Scalar};

/// The decode time the server reported, ms.
pub const DECODE_LABEL: &str = "server.decodeMs";
/// Prompt tokens the server processed (prefilled).
pub const PROMPT_TOKENS_LABEL: &str = "server.promptTokens";
/// Prompt tokens the server took from its cache.
pub const CACHED_TOKENS_LABEL: &str = "server.cachedPromptTokens";
/// Output tokens the server says it generated.
pub const OUTPUT_TOKENS_LABEL: &str = "server.outputTokens";
/// Most `Server-Timing` entries kept per response (a hostile header cannot
/// grow a row without bound).
pub const MAX_TIMING_ENTRIES: usize = 16;
/// Longest `Server-Timing` entry name kept, characters.
const MAX_NAME_CHARS: usize = 32;

/// Which sources a response carried, for the trace's
/// `workload.serverTiming`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sources {
    /// A llama.cpp `timings` object.
    pub llama_cpp: bool,
    /// A `Server-Timing` header.
    pub server_timing: bool,
}

impl Sources {
    /// The names seen, comma-separated (`llama.cpp-timings,server-timing`);
    /// `None` when none.
    pub fn names(self) -> Option<String> {
        let names: Vec<&str> = [
            (self.llama_cpp, "llama.cpp-timings"),
            (self.server_timing, "server-timing"),
        ]
        .into_iter()
        .filter_map(|(seen, n)| seen.then_some(n))
        .collect();
        (!names.is_empty()).then(|| names.join(","))
    }

    /// Both sets of sources.
    pub fn or(self, other: Sources) -> Sources {
        Sources {
            llama_cpp: self.llama_cpp || other.llama_cpp,
            server_timing: self.server_timing || other.server_timing,
        }
    }
}

fn non_negative(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
        .filter(|x| x.is_finite() && *x >= 0.0)
}

/// Adds the labels of a llama.cpp `timings` object found in `chunk` (a
/// stream chunk or a whole response); whether it had one.
pub fn read_llama_cpp(chunk: &Value, labels: &mut Labels) -> bool {
    let Some(t) = chunk.get("timings").filter(|t| t.is_object()) else {
        return false;
    };
    for (field, label) in [
        ("prompt_ms", PREFILL_LABEL),
        ("predicted_ms", DECODE_LABEL),
        ("prompt_n", PROMPT_TOKENS_LABEL),
        ("cache_n", CACHED_TOKENS_LABEL),
        ("predicted_n", OUTPUT_TOKENS_LABEL),
    ] {
        if let Some(x) = non_negative(t.get(field)) {
            labels.insert(label.to_owned(), Scalar::Number(x));
        }
    }
    true
}

/// Adds the labels of the `Server-Timing` header values `headers` (one per
/// header line), without replacing a label already set; whether any entry
/// had a duration.
pub fn read_server_timing<'a>(
    headers: impl IntoIterator<Item = &'a str>,
    labels: &mut Labels,
) -> bool {
    let mut kept = 0;
    for entry in headers.into_iter().flat_map(|h| h.split(',')) {
        if kept == MAX_TIMING_ENTRIES {
            break;
        }
        let Some((name, dur)) = entry_of(entry) else {
            continue;
        };
        kept += 1;
        let known = match name.to_ascii_lowercase().as_str() {
            "queue" | "queue_time" | "queueing" | "wait" => Some(QUEUE_LABEL),
            "prefill" | "prompt" => Some(PREFILL_LABEL),
            "decode" => Some(DECODE_LABEL),
            _ => None,
        };
        for key in known
            .map(str::to_owned)
            .into_iter()
            .chain([format!("server.timing.{name}")])
        {
            labels.entry(key).or_insert(Scalar::Number(dur));
        }
    }
    kept > 0
}

/// One entry's name (reduced to `[A-Za-z0-9_-]`) and `dur`, when it has a
/// usable one.
fn entry_of(entry: &str) -> Option<(String, f64)> {
    let mut parts = entry.split(';');
    let name: String = parts
        .next()?
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(MAX_NAME_CHARS)
        .collect();
    if name.is_empty() {
        return None;
    }
    let dur = parts.find_map(|p| {
        let (k, v) = p.split_once('=')?;
        (k.trim().eq_ignore_ascii_case("dur"))
            .then(|| v.trim().trim_matches('"').parse::<f64>().ok())?
    })?;
    (dur.is_finite() && dur >= 0.0).then_some((name, dur))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn num(labels: &Labels, key: &str) -> Option<f64> {
        match labels.get(key) {
            Some(Scalar::Number(x)) => Some(*x),
            _ => None,
        }
    }

    #[test]
    fn a_llama_cpp_final_chunk_fills_prefill_decode_and_counts() {
        // The shape llama-server sends (values from a real response).
        let chunk = json!({"choices": [], "timings": {"cache_n": 3, "prompt_n": 10,
            "prompt_ms": 46.5, "prompt_per_token_ms": 4.65, "predicted_n": 12,
            "predicted_ms": 174.25, "predicted_per_token_ms": 14.5}});
        let mut labels = Labels::new();
        assert!(read_llama_cpp(&chunk, &mut labels));
        assert_eq!(num(&labels, PREFILL_LABEL), Some(46.5));
        assert_eq!(num(&labels, DECODE_LABEL), Some(174.25));
        assert_eq!(num(&labels, PROMPT_TOKENS_LABEL), Some(10.0));
        assert_eq!(num(&labels, CACHED_TOKENS_LABEL), Some(3.0));
        assert_eq!(num(&labels, OUTPUT_TOKENS_LABEL), Some(12.0));
        assert_eq!(labels.len(), 5);
        assert!(!read_llama_cpp(&json!({"choices": []}), &mut labels));
        // A negative or non-numeric value is not read.
        let mut bad = Labels::new();
        read_llama_cpp(
            &json!({"timings": {"prompt_ms": -1, "predicted_ms": "9"}}),
            &mut bad,
        );
        assert!(bad.is_empty());
    }

    #[test]
    fn server_timing_entries_map_known_names_and_keep_the_rest() {
        let mut labels = Labels::new();
        labels.insert(PREFILL_LABEL.to_owned(), Scalar::Number(40.0));
        let seen = read_server_timing(
            [
                "queue;dur=12.5;desc=\"waiting\", prefill;dur=99",
                "cache;desc=hit, edge;dur=\"3\", <script>;dur=1",
            ],
            &mut labels,
        );
        assert!(seen);
        assert_eq!(num(&labels, QUEUE_LABEL), Some(12.5));
        // The body's prefill (already set) is not replaced by the header's.
        assert_eq!(num(&labels, PREFILL_LABEL), Some(40.0));
        assert_eq!(num(&labels, "server.timing.prefill"), Some(99.0));
        assert_eq!(num(&labels, "server.timing.edge"), Some(3.0));
        // `cache` has no dur; `<script>` is reduced to `script`.
        assert!(!labels.contains_key("server.timing.cache"));
        assert_eq!(num(&labels, "server.timing.script"), Some(1.0));
    }

    #[test]
    fn a_long_header_keeps_at_most_sixteen_entries() {
        let header: Vec<String> = (0..40).map(|i| format!("e{i};dur={i}")).collect();
        let joined = header.join(",");
        let mut labels = Labels::new();
        read_server_timing([joined.as_str()], &mut labels);
        assert_eq!(labels.len(), MAX_TIMING_ENTRIES);
        assert!(labels.contains_key("server.timing.e15"));
        assert!(!labels.contains_key("server.timing.e16"));
    }
}
