//! The sim's `GET /metrics`: its batch state in the Prometheus text format,
//! under vLLM's names, so `record --metrics` reads the sim as it reads vLLM.
//!
//! - `vllm:num_requests_waiting`: sequences queued, not yet admitted;
//! - `vllm:num_requests_running`: sequences in the batch;
//! - `vllm:kv_cache_usage_perc`: the sim has no KV cache, so this is the
//!   share of batch slots in use (running / max batch), a fraction 0–1 as
//!   vLLM's is;
//! - `vllm:num_preemptions_total`: always 0 (the sim never preempts);
//! - `vllm:request_success_total` and `vllm:generation_tokens_total`:
//!   sequences finished and tokens made so far;
//! - `DCGM_FI_DEV_POWER_USAGE{gpu="0"}`: a power gauge as NVIDIA's DCGM
//!   exporter names it, in watts, following the batch:
//!   [`IDLE_WATTS`] + [`WATTS_PER_SEQUENCE`] × running, so energy per good
//!   request can be tested against a known curve.
//!
//! The engine task updates the gauges after every step ([`EngineGauges`]).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

/// The sim's power draw with an empty batch, W.
pub const IDLE_WATTS: f64 = 60.0;
/// What each running sequence adds to the sim's power draw, W.
pub const WATTS_PER_SEQUENCE: f64 = 5.0;

/// The engine's state as the metrics page shows it; updated by the engine
/// task, read by the HTTP handler.
#[derive(Debug, Default)]
pub struct EngineGauges {
    /// Sequences queued.
    pub waiting: AtomicU64,
    /// Sequences in the batch.
    pub running: AtomicU64,
    /// The batch's size limit.
    pub max_batch: AtomicU64,
    /// Sequences finished.
    pub finished: AtomicU64,
    /// Tokens made.
    pub tokens: AtomicU64,
}

impl EngineGauges {
    /// The page, for the model named `model`.
    pub fn render(&self, model: &str) -> String {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let running = get(&self.running);
        let slots = get(&self.max_batch).max(1);
        let label = serde_json::Value::from(model).to_string();
        let mut s = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, value: String| {
            let _ = writeln!(s, "# HELP {name} {help}");
            let _ = writeln!(s, "# TYPE {name} {kind}");
            let _ = writeln!(s, "{name}{{model_name={label}}} {value}");
        };
        metric(
            "vllm:num_requests_waiting",
            "gauge",
            "Requests queued, not yet admitted to the batch.",
            get(&self.waiting).to_string(),
        );
        metric(
            "vllm:num_requests_running",
            "gauge",
            "Requests in the batch.",
            running.to_string(),
        );
        metric(
            "vllm:kv_cache_usage_perc",
            "gauge",
            "Share of batch slots in use (the sim has no KV cache), 0-1.",
            format!("{}", running as f64 / slots as f64),
        );
        metric(
            "vllm:num_preemptions_total",
            "counter",
            "Preemptions (the sim never preempts).",
            "0".to_owned(),
        );
        metric(
            "vllm:request_success_total",
            "counter",
            "Requests finished.",
            get(&self.finished).to_string(),
        );
        metric(
            "vllm:generation_tokens_total",
            "counter",
            "Output tokens made.",
            get(&self.tokens).to_string(),
        );
        let watts = IDLE_WATTS + WATTS_PER_SEQUENCE * running as f64;
        let _ = writeln!(
            s,
            "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n\
             # TYPE DCGM_FI_DEV_POWER_USAGE gauge\n\
             DCGM_FI_DEV_POWER_USAGE{{gpu=\"0\",modelName=\"goodput sim\"}} {watts}"
        );
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use goodput_core::server_metrics::{parse_exposition, Mapped};

    #[test]
    fn the_page_reads_back_under_vllms_names() {
        let g = EngineGauges::default();
        g.waiting.store(9, Ordering::Relaxed);
        g.running.store(3, Ordering::Relaxed);
        g.max_batch.store(4, Ordering::Relaxed);
        let samples = parse_exposition(&g.render("sim")).unwrap();
        assert_eq!(samples.len(), 7);
        // 60 W idle + 5 W for each of the 3 running sequences.
        assert_eq!(samples[6].name, "DCGM_FI_DEV_POWER_USAGE");
        assert_eq!(samples[6].value, 75.0);
        assert_eq!(samples[0].labels["model_name"], "sim");
        assert_eq!(
            Mapped::from_samples(&samples),
            Mapped {
                waiting: Some(9.0),
                running: Some(3.0),
                kv_usage: Some(0.75), // 3 of 4 slots
                kv_usage_max: Some(0.75),
                preemptions: Some(0.0),
            }
        );
    }
}
