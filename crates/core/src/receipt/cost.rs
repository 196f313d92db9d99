//! Per-GPU and cost figures (docs/contract.md §10.10): the receipt's own rates
//! of all rows divided by the GPUs behind the run, and, with a price per
//! GPU-hour, what good work cost over the window.
//!
//! With `G` GPUs at price `P` per GPU-hour over a window of `W` seconds:
//! - per GPU: `goodputPerS / G`, `goodTokensPerS / G`, and beside them the raw
//!   `outputTokensPerS / G`, so the gap between tokens made and good tokens
//!   made is visible;
//! - `gpuHours = G · W / 3600`, `windowCost = gpuHours · P`;
//! - cost of 1,000 good requests = `windowCost / pass · 1000`
//!   = `G · P / 3600 / goodputPerS · 1000`;
//! - cost of 1,000,000 good output tokens = `G · P / 3600 / goodTokensPerS · 10^6`,
//!   and of 1,000,000 output tokens of any verdict likewise from `outputTokensPerS`.
//!
//! A cost per unit of nothing (no good request, no good token) is null, with
//! a note. The GPUs serve every class at once, so the figures are for all
//! rows only: a class's share of the hardware is not something a trace shows.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::trace::Resources;

use crate::receipt::Block;

/// The GPUs and price in force, as the receipt's contract records them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourcesInfo {
    /// GPUs behind the endpoint during the window.
    pub gpus: f64,
    /// Price of one GPU-hour (any currency), or null when unknown.
    pub gpu_hour_cost: Option<f64>,
    /// Where they come from: `trace` (declared by the recording), `options`
    /// (`--gpus` given to the reviewer command), or `trace+options` (the
    /// trace's GPUs, `--gpu-hour-cost` from the command).
    pub source: String,
}

impl ResourcesInfo {
    /// The resources alone.
    pub fn resources(&self) -> Resources {
        Resources {
            gpus: self.gpus,
            gpu_hour_cost: self.gpu_hour_cost,
        }
    }
}

/// Per-GPU throughput and the cost of good work, over the window, for all rows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cost {
    /// GPUs the figures are divided by.
    pub gpus: f64,
    /// goodputPerS / gpus: good requests per second per GPU.
    pub goodput_per_s_per_gpu: f64,
    /// goodTokensPerS / gpus: output tokens of passing rows per second per GPU.
    pub good_tokens_per_s_per_gpu: f64,
    /// outputTokensPerS / gpus: output tokens of every completed row per second per GPU (the raw figure).
    pub output_tokens_per_s_per_gpu: f64,
    /// gpus × window seconds / 3600.
    pub gpu_hours: f64,
    /// Price of one GPU-hour, or null (then every cost below is null).
    pub gpu_hour_cost: Option<f64>,
    /// gpuHours × gpuHourCost: what the window cost.
    pub window_cost: Option<f64>,
    /// windowCost / pass × 1000; null without a price or without a passing row.
    pub cost_per_1k_good_requests: Option<f64>,
    /// gpus × price / 3600 / goodTokensPerS × 10^6; null without a price or a good token.
    pub cost_per_1m_good_tokens: Option<f64>,
    /// gpus × price / 3600 / outputTokensPerS × 10^6 (every completed row's tokens); null without a price or a token.
    pub cost_per_1m_output_tokens: Option<f64>,
    /// Why a cost is null, when one is (null otherwise).
    pub note: Option<String>,
}

/// The figures of `all` (the receipt's block of all rows) on `resources`,
/// over a window of `window_s` seconds.
pub fn cost(all: &Block, resources: Resources, window_s: f64) -> Cost {
    let g = resources.gpus;
    let rates = &all.rates;
    let gpu_hours = g * window_s / 3600.0;
    let per_s = resources.gpu_hour_cost.map(|p| g * p / 3600.0);
    let per = |rate: f64, unit: f64| match per_s {
        Some(c) if rate > 0.0 => Some(c / rate * unit),
        _ => None,
    };
    let mut notes = Vec::new();
    if per_s.is_none() {
        notes.push("no price per GPU-hour was declared (--gpu-hour-cost)");
    } else {
        if all.counts.pass == 0 {
            notes.push("no request passed, so good work has no unit cost");
        } else if rates.good_tokens_per_s == 0.0 {
            notes.push("passing rows made no output tokens");
        }
        if rates.output_tokens_per_s == 0.0 {
            notes.push("no completed row made output tokens");
        }
    }
    Cost {
        gpus: g,
        goodput_per_s_per_gpu: rates.goodput_per_s / g,
        good_tokens_per_s_per_gpu: rates.good_tokens_per_s / g,
        output_tokens_per_s_per_gpu: rates.output_tokens_per_s / g,
        gpu_hours,
        gpu_hour_cost: resources.gpu_hour_cost,
        window_cost: resources.gpu_hour_cost.map(|p| gpu_hours * p),
        cost_per_1k_good_requests: match resources.gpu_hour_cost {
            Some(p) if all.counts.pass > 0 => Some(gpu_hours * p / all.counts.pass as f64 * 1000.0),
            _ => None,
        },
        cost_per_1m_good_tokens: per(rates.good_tokens_per_s, 1e6),
        cost_per_1m_output_tokens: per(rates.output_tokens_per_s, 1e6),
        note: (!notes.is_empty()).then(|| notes.join("; ")),
    }
}
