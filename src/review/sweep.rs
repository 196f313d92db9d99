//! Sensitivity sweep (SPEC §5): does the conclusion hang on one threshold?
//!
//! The sweep recomputes the pass count of an already validated and judged
//! trace under neighbouring gates: each gate multiplied by a factor
//! (`gate × factor`; a `null` gate stays `null`). The declared result comes
//! first and is marked `hypothetical: false`; every alternative is
//! `hypothetical: true`. A sweep never replaces the primary result.
//!
//! **One definition of pass.** Every comparison goes through
//! [`verdict::missed`](crate::verdict::missed) with scaled gates, the function
//! `analyze` itself uses, so an alternative's pass count is by construction what
//! `analyze` would count on the same trace with its gates multiplied.
//!
//! **Cost.** Only completed cohort rows (pass or miss) can change verdict when
//! gates move; cohort, window and therefore every denominator stay fixed. Each
//! such row is put, per metric, into the bucket of the smallest factor whose
//! scaled gate it meets (factors are sorted; meeting is monotone in the gate
//! because gates are ≥ 0 and factors > 0). A 3-D histogram of those bucket
//! triples with prefix sums answers "how many rows meet all three scaled gates"
//! for any factor triple in O(1): the whole sweep costs O(rows × factors) plus
//! O(factors³), never a re-parse or a re-validation.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::trace::{Equality, Gates, Trace};
use crate::verdict::{missed, Judgement, Measured, Verdict};

/// The factors of the default sweep: each gate scaled one at a time.
pub const DEFAULT_FACTORS: [f64; 7] = [0.5, 0.8, 0.9, 1.1, 1.25, 1.5, 2.0];
/// The most distinct factors a sweep takes (a grid of 16 is 4,096 alternatives).
pub const MAX_FACTORS: usize = 16;
/// A passing row "sits near" a gate when its value is at least
/// `gate × (1 − NEAR_GATE_SHARE)`.
pub const NEAR_GATE_SHARE: f64 = 0.05;

/// Why a sweep cannot be run as asked (a usage error, exit status 2).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum SweepError {
    /// A factor that is not a positive finite number.
    #[error("--factors: {0} is not a positive finite number")]
    BadFactor(f64),
    /// An empty factor list.
    #[error("--factors: give at least one factor, e.g. --factors 0.9,1.1")]
    NoFactors,
    /// Too many distinct factors.
    #[error("--factors: {0} distinct factors given, at most {MAX_FACTORS} are allowed")]
    TooManyFactors(usize),
    /// `--class` names no declared class.
    #[error("--class: {name:?} is not a class of this trace (classes: {known})")]
    UnknownClass {
        /// The name given.
        name: String,
        /// The declared classes, comma-separated.
        known: String,
    },
}

/// The multipliers applied to the three gates of every class in scope.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Factors {
    /// Multiplier of the TTFT gate.
    pub ttft: f64,
    /// Multiplier of the TPOT gate.
    pub tpot: f64,
    /// Multiplier of the E2E gate.
    pub e2e: f64,
}

impl Factors {
    /// The declared gates: every factor 1.
    pub const DECLARED: Factors = Factors {
        ttft: 1.0,
        tpot: 1.0,
        e2e: 1.0,
    };

    /// `gates` with each non-null gate multiplied by its factor (plain
    /// multiplication, so anyone can reproduce the hypothetical contract).
    pub fn scale(&self, gates: &Gates) -> Gates {
        Gates {
            ttft_ms: gates.ttft_ms.map(|g| g * self.ttft),
            tpot_ms: gates.tpot_ms.map(|g| g * self.tpot),
            e2e_ms: gates.e2e_ms.map(|g| g * self.e2e),
        }
    }

    fn all(f: f64) -> Factors {
        Factors {
            ttft: f,
            tpot: f,
            e2e: f,
        }
    }
}

/// What to sweep: which class (all classes when `None`) and which factor
/// triples, in the order they are printed after the declared entry.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepPlan {
    /// The one class whose gates move and whose figures are reported; `None`
    /// moves every class at once and reports all rows.
    pub class: Option<String>,
    /// The alternatives (the declared triple 1, 1, 1 is always added first).
    pub alternatives: Vec<Factors>,
}

/// Checks and de-duplicates a factor list (first occurrence order kept).
pub fn check_factors(factors: &[f64]) -> Result<Vec<f64>, SweepError> {
    let mut out: Vec<f64> = Vec::with_capacity(factors.len());
    for &f in factors {
        if !(f.is_finite() && f > 0.0) {
            return Err(SweepError::BadFactor(f));
        }
        if !out.contains(&f) {
            out.push(f);
        }
    }
    if out.is_empty() {
        return Err(SweepError::NoFactors);
    }
    if out.len() > MAX_FACTORS {
        return Err(SweepError::TooManyFactors(out.len()));
    }
    Ok(out)
}

impl SweepPlan {
    /// Each gate scaled by each factor, one gate at a time (the others as
    /// declared): TTFT alternatives first, then TPOT, then E2E. A factor of 1
    /// would repeat the declared entry and is skipped.
    pub fn one_at_a_time(class: Option<String>, factors: &[f64]) -> Result<SweepPlan, SweepError> {
        let factors = check_factors(factors)?;
        let mut alternatives = Vec::with_capacity(3 * factors.len());
        for metric in 0..3 {
            for &f in factors.iter().filter(|&&f| f != 1.0) {
                let mut x = Factors::DECLARED;
                match metric {
                    0 => x.ttft = f,
                    1 => x.tpot = f,
                    _ => x.e2e = f,
                }
                alternatives.push(x);
            }
        }
        Ok(SweepPlan {
            class,
            alternatives,
        })
    }

    /// Every combination of the factors across the three gates (TTFT
    /// outermost, E2E innermost); the all-ones triple is the declared entry.
    pub fn grid(class: Option<String>, factors: &[f64]) -> Result<SweepPlan, SweepError> {
        let factors = check_factors(factors)?;
        let mut alternatives = Vec::with_capacity(factors.len().pow(3));
        for &ttft in &factors {
            for &tpot in &factors {
                for &e2e in &factors {
                    let x = Factors { ttft, tpot, e2e };
                    if x != Factors::DECLARED {
                        alternatives.push(x);
                    }
                }
            }
        }
        Ok(SweepPlan {
            class,
            alternatives,
        })
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
}

/// The tipping points of the three gates.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Tipping {
    /// TTFT gate.
    pub ttft: TippingMetric,
    /// TPOT gate.
    pub tpot: TippingMetric,
    /// E2E gate.
    pub e2e: TippingMetric,
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

/// The metrics in their fixed order.
const METRICS: [Metric; 3] = [Metric::Ttft, Metric::Tpot, Metric::E2e];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Metric {
    Ttft,
    Tpot,
    E2e,
}

impl Metric {
    fn value(self, m: &Measured) -> Option<f64> {
        match self {
            Metric::Ttft => Some(m.ttft_ms),
            Metric::Tpot => m.tpot_ms,
            Metric::E2e => Some(m.e2e_ms),
        }
    }

    fn gate(self, g: &Gates) -> Option<f64> {
        match self {
            Metric::Ttft => g.ttft_ms,
            Metric::Tpot => g.tpot_ms,
            Metric::E2e => g.e2e_ms,
        }
    }

    fn only_miss(self, m: crate::verdict::MissSet) -> bool {
        let (a, b, c) = (m.ttft, m.tpot, m.e2e);
        match self {
            Metric::Ttft => a && !b && !c,
            Metric::Tpot => !a && b && !c,
            Metric::E2e => !a && !b && c,
        }
    }
}

/// The extreme row of a class on one metric (largest passing value, or
/// smallest value among rows that miss on this metric alone).
#[derive(Clone, Copy, Debug)]
struct Extreme {
    value: f64,
    rows: u64,
    first_row: usize,
}

fn note_extreme(slot: &mut Option<Extreme>, value: f64, row: usize, larger_wins: bool) {
    match slot {
        None => {
            *slot = Some(Extreme {
                value,
                rows: 1,
                first_row: row,
            })
        }
        Some(e) if e.value == value => e.rows += 1,
        Some(e) => {
            if (value > e.value) == larger_wins {
                *e = Extreme {
                    value,
                    rows: 1,
                    first_row: row,
                };
            }
        }
    }
}

/// Runs a sweep on a validated trace and its judgements (one per row, in
/// order, as `judge_trace` returns them). The declared entry comes first.
pub fn sweep(
    trace: &Trace,
    judgements: &[Judgement],
    plan: &SweepPlan,
) -> Result<Vec<SweepEntry>, SweepError> {
    let contract = &trace.contract;
    let equality = contract.equality;
    let class_gates: Vec<&Gates> = contract.classes.values().collect();
    let scope: Option<usize> = match &plan.class {
        None => None,
        Some(name) => Some(contract.class_index(name).ok_or_else(|| {
            SweepError::UnknownClass {
                name: name.clone(),
                known: contract
                    .classes
                    .keys()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
            }
        })?),
    };
    let in_scope = |class: Option<usize>| match scope {
        None => true,
        Some(s) => class == Some(s),
    };

    // The factor axis: every factor used, plus 1 (the declared gates), sorted.
    let mut axis: Vec<f64> = plan
        .alternatives
        .iter()
        .flat_map(|f| [f.ttft, f.tpot, f.e2e])
        .chain([1.0])
        .collect();
    axis.sort_by(f64::total_cmp);
    axis.dedup();
    let k = axis.len();
    // scaled[class][i]: the class's gates with every gate times axis[i].
    let scaled: Vec<Vec<Gates>> = class_gates
        .iter()
        .map(|g| axis.iter().map(|&f| Factors::all(f).scale(g)).collect())
        .collect();

    // Cell (t, p, e) of the histogram: rows whose TTFT, TPOT and E2E buckets are t, p, e.
    let mut histogram = vec![0u64; k * k * k];
    let at = |a: usize, b: usize, c: usize| (a * k + b) * k + c;
    let mut cohort = 0u64;
    let mut near = NearGate {
        share: NEAR_GATE_SHARE,
        rows: 0,
        ttft: 0,
        tpot: 0,
        e2e: 0,
    };
    // [class][metric]: (largest passing value, smallest only-this-metric miss).
    let mut extremes: Vec<[(Option<Extreme>, Option<Extreme>); 3]> =
        vec![[(None, None); 3]; class_gates.len()];

    for (row, j) in judgements.iter().enumerate() {
        if !in_scope(j.class) {
            continue;
        }
        let (m, declared_miss) = match &j.verdict {
            Verdict::Censored { .. } | Verdict::Failed { .. } => {
                cohort += 1;
                continue;
            }
            Verdict::Invalid(_) | Verdict::Excluded(_) => continue,
            Verdict::Pass(m) => (m, None),
            Verdict::Miss(m, set) => (m, Some(*set)),
        };
        cohort += 1;
        let Some(c) = j.class else { continue };
        let (Some(gates), Some(scaled)) = (class_gates.get(c), scaled.get(c)) else {
            continue;
        };
        // Bucket per metric: the smallest axis index whose scaled gate is met.
        let mut bucket = [k; 3];
        for (i, g) in scaled.iter().enumerate() {
            let miss = missed(m, g, equality);
            for (b, hit) in bucket.iter_mut().zip([miss.ttft, miss.tpot, miss.e2e]) {
                if *b == k && !hit {
                    *b = i;
                }
            }
            if bucket.iter().all(|&b| b < k) {
                break;
            }
        }
        let [t, p, e] = bucket;
        // A row above a gate even at the largest factor passes no alternative.
        if t < k && p < k && e < k {
            histogram[at(t, p, e)] += 1;
        }
        let ex = &mut extremes[c];
        match declared_miss {
            None => {
                let mut any = false;
                for (mi, metric) in METRICS.iter().enumerate() {
                    if let (Some(v), Some(g)) = (metric.value(m), metric.gate(gates)) {
                        note_extreme(&mut ex[mi].0, v, row, true);
                        if v >= g * (1.0 - NEAR_GATE_SHARE) {
                            any = true;
                            match metric {
                                Metric::Ttft => near.ttft += 1,
                                Metric::Tpot => near.tpot += 1,
                                Metric::E2e => near.e2e += 1,
                            }
                        }
                    }
                }
                near.rows += u64::from(any);
            }
            Some(set) => {
                for (mi, metric) in METRICS.iter().enumerate() {
                    if metric.only_miss(set) {
                        if let Some(v) = metric.value(m) {
                            note_extreme(&mut ex[mi].1, v, row, false);
                        }
                    }
                }
            }
        }
    }

    // Prefix sums along each axis in turn: cell (a, b, c) becomes the number
    // of rows whose buckets are all at or below (a, b, c).
    for a in 0..k {
        for b in 0..k {
            for c in 1..k {
                histogram[at(a, b, c)] += histogram[at(a, b, c - 1)];
            }
        }
    }
    for a in 0..k {
        for b in 1..k {
            for c in 0..k {
                histogram[at(a, b, c)] += histogram[at(a, b - 1, c)];
            }
        }
    }
    for a in 1..k {
        for b in 0..k {
            for c in 0..k {
                histogram[at(a, b, c)] += histogram[at(a - 1, b, c)];
            }
        }
    }
    let index = |f: f64| axis.iter().position(|&x| x == f).unwrap_or(0);
    let pass_at = |f: &Factors| histogram[at(index(f.ttft), index(f.tpot), index(f.e2e))];

    let window_s = contract.window_s();
    let names: Vec<&String> = contract.classes.keys().collect();
    let entry = |f: &Factors, declared: Option<&SweepEntry>| {
        let pass = pass_at(f);
        let goodput_per_s = pass as f64 / window_s;
        let pass_share = (cohort > 0).then(|| pass as f64 / cohort as f64);
        let classes = contract
            .classes
            .iter()
            .enumerate()
            .map(|(c, (name, g))| {
                let gates = if in_scope(Some(c)) { f.scale(g) } else { *g };
                (name.clone(), gates)
            })
            .collect();
        let (delta_pass, delta_goodput_per_s, delta_pass_share) = match declared {
            None => (0, 0.0, pass_share.map(|_| 0.0)),
            Some(d) => (
                pass as i64 - d.pass as i64,
                goodput_per_s - d.goodput_per_s,
                pass_share.zip(d.pass_share).map(|(a, b)| a - b),
            ),
        };
        SweepEntry {
            hypothetical: declared.is_some(),
            class: plan.class.clone(),
            factors: *f,
            classes,
            cohort,
            pass,
            goodput_per_s,
            pass_share,
            delta_pass,
            delta_goodput_per_s,
            delta_pass_share,
            fragility: None,
        }
    };

    let mut declared = entry(&Factors::DECLARED, None);
    let point = |c: usize, mi: usize, e: Option<Extreme>| {
        let g = METRICS[mi].gate(class_gates.get(c)?)?;
        let e = e?;
        if g <= 0.0 {
            return None; // 0 × any factor is still 0: no scaling moves this gate.
        }
        let factor = e.value / g;
        Some(TippingPoint {
            class: names.get(c)?.to_string(),
            gate_ms: g,
            threshold_ms: e.value,
            factor,
            change_pct: (factor - 1.0) * 100.0,
            rows: e.rows,
            row_id: trace
                .rows
                .get(e.first_row)
                .and_then(|r| r.id.get())
                .map(|s| s.to_string()),
        })
    };
    let tipping_metric = |mi: usize| {
        let mut down: Option<TippingPoint> = None;
        let mut up: Option<TippingPoint> = None;
        for (c, ex) in extremes.iter().enumerate() {
            if let Some(p) = point(c, mi, ex[mi].0) {
                // Tightening: the class whose largest passing value is nearest the gate.
                if down.as_ref().is_none_or(|d| p.factor > d.factor) {
                    down = Some(p);
                }
            }
            if let Some(p) = point(c, mi, ex[mi].1) {
                if up.as_ref().is_none_or(|u| p.factor < u.factor) {
                    up = Some(p);
                }
            }
        }
        TippingMetric { down, up }
    };
    declared.fragility = Some(Fragility {
        equality,
        near_gate: near,
        tipping: Tipping {
            ttft: tipping_metric(0),
            tpot: tipping_metric(1),
            e2e: tipping_metric(2),
        },
    });
    let mut entries = Vec::with_capacity(plan.alternatives.len() + 1);
    let alternatives: Vec<SweepEntry> = plan
        .alternatives
        .iter()
        .map(|f| entry(f, Some(&declared)))
        .collect();
    entries.push(declared);
    entries.extend(alternatives);
    Ok(entries)
}

/// Recovers the plan of a recorded sweep (class and factor triples), so
/// `verify` can recompute a receipt's `sweep` exactly.
pub fn plan_of(entries: &[SweepEntry]) -> SweepPlan {
    SweepPlan {
        class: entries.first().and_then(|e| e.class.clone()),
        alternatives: entries.iter().skip(1).map(|e| e.factors).collect(),
    }
}
