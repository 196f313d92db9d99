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
//! - **vLLM** (`--enable-per-request-metrics` on the server and
//!   `"include_metrics": true` in the request, vLLM PR #46768): a top-level
//!   `metrics` object in the final stream chunk: `queue_time_ms` (the queue
//!   wait), `time_to_first_token_ms` (the engine's own TTFT, queue
//!   included), `generation_time_ms`, `mean_itl_ms`, `tokens_per_second`.
//!   The prefill is not reported apart: it is taken as
//!   `time_to_first_token_ms − queue_time_ms` (never below 0).
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
/// The trace's workload label naming the sources the responses carried
/// (`llama.cpp-timings,vllm-metrics,server-timing`, those seen).
pub const SERVER_TIMING_LABEL: &str = "serverTiming";
/// The engine's own time to first token (vLLM `time_to_first_token_ms`).
pub const ENGINE_TTFT_LABEL: &str = "server.ttftMs";
/// vLLM's `generation_time_ms`, kept as it says (its bounds are vLLM's).
pub const GENERATION_LABEL: &str = "server.generationMs";
/// vLLM's `mean_itl_ms`.
pub const MEAN_ITL_LABEL: &str = "server.meanItlMs";
/// vLLM's `tokens_per_second`.
pub const TOKENS_PER_S_LABEL: &str = "server.tokensPerSecond";
/// Most `Server-Timing` entries kept per response (a hostile header cannot
/// grow a row without bound).
pub const MAX_TIMING_ENTRIES: usize = 16;
/// Longest `Server-Timing` entry name kept, characters.
const MAX_NAME_CHARS: usize = 32;

/// Which sources a response carried, for the trace's
/// `workload.serverTiming`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sources {
    /// A llama.cpp `timings` object.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub llama_cpp: bool,
    /// A vLLM `metrics` object.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub vllm_metrics: bool,
    /// A `Server-Timing` header.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub server_timing: bool,
}

impl Sources {
    /// The names seen, comma-separated (`llama.cpp-timings,server-timing`);
    /// `None` when none.
    pub fn names(self) -> Option<String> {
        let names: Vec<&str> = [
            (self.llama_cpp, "llama.cpp-timings"),
            (self.vllm_metrics, "vllm-metrics"),
            (self.server_timing, "server-timing"),
        ]
        .into_iter()
        .filter_map(|(seen, n)| seen.then_some(n))
        .collect();
        (!names.is_empty()).then(|| names.join(","))
    }

    /// Whether no source was seen.
    pub fn is_none(&self) -> bool {
        *self == Sources::default()
    }

    /// Both sets of sources.
    pub fn or(self, other: Sources) -> Sources {
        Sources {
            llama_cpp: self.llama_cpp || other.llama_cpp,
            vllm_metrics: self.vllm_metrics || other.vllm_metrics,
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

/// Adds the labels of a vLLM `metrics` object found in `chunk`; whether
/// it had one.
pub fn read_vllm_metrics(chunk: &Value, labels: &mut Labels) -> bool {
    let Some(m) = chunk.get("metrics").filter(|m| m.is_object()) else {
        return false;
    };
    let queue = non_negative(m.get("queue_time_ms"));
    let ttft = non_negative(m.get("time_to_first_token_ms"));
    // Rounded to the microsecond, as the trace writes instants: the
    // difference of two decimal figures carries binary noise otherwise.
    let prefill = queue
        .zip(ttft)
        .map(|(q, t)| crate::trace::write::round_us((t - q).max(0.0)));
    for (value, label) in [
        (queue, QUEUE_LABEL),
        (ttft, ENGINE_TTFT_LABEL),
        (prefill, PREFILL_LABEL),
        (non_negative(m.get("generation_time_ms")), GENERATION_LABEL),
        (non_negative(m.get("mean_itl_ms")), MEAN_ITL_LABEL),
        (non_negative(m.get("tokens_per_second")), TOKENS_PER_S_LABEL),
    ] {
        if let Some(x) = value {
            labels.insert(label.to_owned(), Scalar::Number(x));
        }
    }
    true
}

/// The members of a stream event that may carry the server's word on its
/// timing; the rest of the event is skipped unparsed.
#[derive(serde::Deserialize)]
struct TimingMembers {
    #[serde(default)]
    timings: Option<Value>,
    #[serde(default)]
    metrics: Option<Value>,
}

/// Adds the labels of the timing objects (llama.cpp `timings`, vLLM
/// `metrics`) in one stream event's JSON `data`, replacing what an earlier
/// event or a header said; the sources it carried. Data that is not a JSON
/// object, or members of the wrong shape, add nothing (the server's timing
/// is evidence beside the row, never a reason to fail it).
pub fn read_event(data: &[u8], labels: &mut Labels) -> Sources {
    let Ok(members) = serde_json::from_slice::<TimingMembers>(data) else {
        return Sources::default();
    };
    let mut doc = serde_json::Map::new();
    if let Some(t) = members.timings {
        doc.insert("timings".into(), t);
    }
    if let Some(m) = members.metrics {
        doc.insert("metrics".into(), m);
    }
    let doc = Value::Object(doc);
    Sources {
        llama_cpp: read_llama_cpp(&doc, labels),
        vllm_metrics: read_vllm_metrics(&doc, labels),
        server_timing: false,
    }
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
    fn a_vllm_metrics_object_gives_queue_engine_ttft_and_the_prefill_between() {
        // Field names of vLLM PR #46768; values by hand: prefill = 180.5 − 42.25.
        let data = br#"{"choices":[{"delta":{},"finish_reason":"stop"}],
            "metrics":{"queue_time_ms":42.25,"time_to_first_token_ms":180.5,
            "generation_time_ms":900,"mean_itl_ms":12.5,"tokens_per_second":80}}"#;
        let mut labels = Labels::new();
        let seen = read_event(data, &mut labels);
        assert!(seen.vllm_metrics && !seen.llama_cpp);
        assert_eq!(num(&labels, QUEUE_LABEL), Some(42.25));
        assert_eq!(num(&labels, ENGINE_TTFT_LABEL), Some(180.5));
        assert_eq!(num(&labels, PREFILL_LABEL), Some(138.25));
        assert_eq!(num(&labels, GENERATION_LABEL), Some(900.0));
        assert_eq!(num(&labels, MEAN_ITL_LABEL), Some(12.5));
        assert_eq!(num(&labels, TOKENS_PER_S_LABEL), Some(80.0));
        // A TTFT below the queue wait (clocks of two processes) gives prefill 0.
        let mut odd = Labels::new();
        read_event(
            br#"{"metrics":{"queue_time_ms":50,"time_to_first_token_ms":49}}"#,
            &mut odd,
        );
        assert_eq!(num(&odd, PREFILL_LABEL), Some(0.0));
        // Not JSON, or a metrics member that is not an object: nothing.
        let mut none = Labels::new();
        assert!(read_event(b"[DONE]", &mut none).is_none());
        assert!(read_event(br#"{"metrics":[1,2]}"#, &mut none).is_none());
        assert!(none.is_empty());
    }

    #[test]
    fn one_event_with_both_objects_names_both_sources() {
        let data = br#"{"timings":{"prompt_ms":30,"prompt_n":8},"metrics":{"queue_time_ms":5}}"#;
        let mut labels = Labels::new();
        let seen = read_event(data, &mut labels);
        assert_eq!(
            seen.names().as_deref(),
            Some("llama.cpp-timings,vllm-metrics")
        );
        assert_eq!(num(&labels, PREFILL_LABEL), Some(30.0));
        assert_eq!(num(&labels, QUEUE_LABEL), Some(5.0));
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
