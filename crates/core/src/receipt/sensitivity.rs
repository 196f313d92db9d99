//! The receipt's sensitivity section: one line per set of gates, the
//! declared gates first (`hypothetical: false`), each alternative after it
//! (`hypothetical: true`), and how close the declared result sits to a gate.
//! These are data the receipt carries; `review::sensitivity` computes them.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::trace::{Equality, Gates};

/// The multipliers applied to the gates of every class in scope.
///
/// `stall` and `ttfa` are written only when an alternative moves them (a
/// factor other than 1): traces that declare neither gate keep the
/// three-factor form, and a receipt written before they existed still reads.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Factors {
    /// Multiplier of the TTFT gate.
    pub ttft: f64,
    /// Multiplier of the TPOT gate.
    pub tpot: f64,
    /// Multiplier of the E2E gate.
    pub e2e: f64,
    /// Multiplier of the stall gate (largest gap, docs/contract.md §10.15); 1 when absent.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub stall: f64,
    /// Multiplier of the time-to-first-answer gate (§10.16); 1 when absent.
    #[serde(default = "one", skip_serializing_if = "is_one")]
    pub ttfa: f64,
}

fn one() -> f64 {
    1.0
}

fn is_one(x: &f64) -> bool {
    *x == 1.0
}

impl Factors {
    /// The declared gates: every factor 1.
    pub const DECLARED: Factors = Factors {
        ttft: 1.0,
        tpot: 1.0,
        e2e: 1.0,
        stall: 1.0,
        ttfa: 1.0,
    };

    /// `gates` with each non-null gate multiplied by its factor (plain
    /// multiplication, so anyone can reproduce the hypothetical contract).
    /// The per-token deadline is a rate, not a gate on a row's value, and
    /// stays as declared.
    pub fn scale(&self, gates: &Gates) -> Gates {
        Gates {
            ttft_ms: gates.ttft_ms.map(|g| g * self.ttft),
            tpot_ms: gates.tpot_ms.map(|g| g * self.tpot),
            e2e_ms: gates.e2e_ms.map(|g| g * self.e2e),
            stall_ms: gates.stall_ms.map(|g| g * self.stall),
            token_deadline_ms: gates.token_deadline_ms,
            ttfa_ms: gates.ttfa_ms.map(|g| g * self.ttfa),
        }
    }

    /// Every gate scaled by `f`.
    pub(crate) fn all(f: f64) -> Factors {
        Factors {
            ttft: f,
            tpot: f,
            e2e: f,
            stall: f,
            ttfa: f,
        }
    }

    /// The five factors in the sweep's metric order: TTFT, TPOT, E2E, stall, TTFA.
    pub fn as_array(&self) -> [f64; 5] {
        [self.ttft, self.tpot, self.e2e, self.stall, self.ttfa]
    }
}

/// One line of a sweep: the figures of the scope under one set of gates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SweepEntry {
    /// `false` for the declared gates (always the first entry), `true` for every alternative.
    pub hypothetical: bool,
    /// The class whose gates move and whose figures these are; null: every class moves and the figures are for all rows.
    pub class: Option<String>,
    /// The multipliers applied to the declared gates.
    pub factors: Factors,
    /// The gates in force in every class (classes out of scope keep their declared gates).
    pub classes: BTreeMap<String, Gates>,
    /// Cohort rows of the scope: the denominator of `passShare`, the same under every gate.
    pub cohort: u64,
    /// Rows that pass under these gates.
    pub pass: u64,
    /// pass / window s.
    pub goodput_per_s: f64,
    /// pass / cohort; null for an empty cohort.
    pub pass_share: Option<f64>,
    /// pass − declared pass.
    pub delta_pass: i64,
    /// goodputPerS − declared goodputPerS.
    pub delta_goodput_per_s: f64,
    /// passShare − declared passShare; null for an empty cohort.
    pub delta_pass_share: Option<f64>,
    /// How close the declared result is to changing (declared entry only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragility: Option<Fragility>,
}

/// How close the declared result sits to a gate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Fragility {
    /// The equality rule the thresholds below are read with.
    pub equality: Equality,
    /// Passing rows within 5 % below a gate.
    pub near_gate: NearGate,
    /// Per metric, the smallest single-gate change that changes the pass count.
    pub tipping: Tipping,
}

/// Passing rows whose value is at least `gate × (1 − share)` for some gate.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NearGate {
    /// The relative distance counted as near (0.05).
    pub share: f64,
    /// Passing rows near at least one gate (each row once).
    pub rows: u64,
    /// Passing rows near their TTFT gate.
    pub ttft: u64,
    /// Passing rows near their TPOT gate.
    pub tpot: u64,
    /// Passing rows near their E2E gate.
    pub e2e: u64,
    /// Passing rows whose largest gap is near their stall gate; absent when
    /// no class in scope declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<u64>,
    /// Passing rows near their TTFA gate; absent when no class in scope declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfa: Option<u64>,
}

/// The tipping points of each gate (stall and TTFA only where some class in
/// scope declares them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tipping {
    /// TTFT gate.
    pub ttft: TippingMetric,
    /// TPOT gate.
    pub tpot: TippingMetric,
    /// E2E gate.
    pub e2e: TippingMetric,
    /// Stall gate (largest gap); absent when no class in scope declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stall: Option<TippingMetric>,
    /// TTFA gate; absent when no class in scope declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttfa: Option<TippingMetric>,
}

/// The nearest change of one gate, downward and upward, that moves the pass count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TippingMetric {
    /// Tightening: null when no tightening can drop a row (no passing row is gated on this metric, or the gate is 0).
    pub down: Option<TippingPoint>,
    /// Loosening: null when no loosening can add a row (no row misses on this metric alone, or the gate is 0).
    pub up: Option<TippingPoint>,
}

/// Where a gate must move for the pass count to change.
///
/// Down: with `inclusive`, pass falls once the gate is below `thresholdMs`;
/// with `strict`, once it is at or below it. Up: with `inclusive`, pass rises
/// once the gate reaches `thresholdMs`; with `strict`, once it is above it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TippingPoint {
    /// The class whose row flips first (the nearest across the scope).
    pub class: String,
    /// That class's declared gate, ms.
    pub gate_ms: f64,
    /// The value of the first row(s) to flip, ms.
    pub threshold_ms: f64,
    /// thresholdMs / gateMs.
    pub factor: f64,
    /// (factor − 1) × 100.
    pub change_pct: f64,
    /// Rows of that class sitting exactly at the threshold, which flip together.
    pub rows: u64,
    /// Id of the first of them in trace order.
    pub row_id: Option<String>,
}
