//! Sensitivity sweep (docs/contract.md §7.11): does the conclusion hang on one threshold?
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
//! such row is put, per gate (TTFT, TPOT, E2E, stall, TTFA), into the bucket
//! of the smallest factor whose scaled gate it meets (factors are sorted;
//! meeting is monotone in the gate because gates are ≥ 0 and factors > 0). A
//! histogram of those bucket tuples with prefix sums answers "how many rows
//! meet every scaled gate" for any factor tuple in O(1). A gate no
//! alternative moves is held at its declared value and costs the table no
//! axis, so the usual sweep is 3-D and the whole sweep costs
//! O(rows × factors) plus O(factors^axes), never a re-parse or a
//! re-validation.
//!
//! **Stall and TTFA** (docs/contract.md §10.15, §10.16) scale like the
//! others in one-at-a-time sweeps; a row with no gaps is not judged on stall
//! at any factor, and a row with no answer under a TTFA gate misses it at
//! every factor. A grid moves only the three latency gates.

pub use crate::receipt::sensitivity::{
    Factors, Fragility, NearGate, SweepEntry, Tipping, TippingMetric, TippingPoint,
};
use crate::trace::{Contract, Equality, Gates, Trace};
use crate::verdict::{missed, Judgement, Measured, MissSet, Verdict};

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
    /// declared): TTFT alternatives first, then TPOT, E2E, stall and TTFA.
    /// A factor of 1 would repeat the declared entry and is skipped; the
    /// stall and TTFA alternatives are dropped by [`sweep`] when no class in
    /// scope declares that gate (they would repeat it too).
    pub fn one_at_a_time(class: Option<String>, factors: &[f64]) -> Result<SweepPlan, SweepError> {
        let factors = check_factors(factors)?;
        let mut alternatives = Vec::with_capacity(METRICS.len() * factors.len());
        for metric in METRICS {
            for &f in factors.iter().filter(|&&f| f != 1.0) {
                alternatives.push(metric.moved(f));
            }
        }
        Ok(SweepPlan {
            class,
            alternatives,
        })
    }

    /// Every combination of the factors across the three latency gates (TTFT
    /// outermost, E2E innermost); the all-ones triple is the declared entry.
    /// Stall and TTFA gates stay as declared in a grid: five axes of 16
    /// factors would be a million lines, and one-at-a-time covers them.
    pub fn grid(class: Option<String>, factors: &[f64]) -> Result<SweepPlan, SweepError> {
        let factors = check_factors(factors)?;
        let mut alternatives = Vec::with_capacity(factors.len().pow(3));
        for &ttft in &factors {
            for &tpot in &factors {
                for &e2e in &factors {
                    let x = Factors {
                        ttft,
                        tpot,
                        e2e,
                        ..Factors::DECLARED
                    };
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

/// The gates a sweep can move, in their fixed order (the order of
/// [`Factors::as_array`]).
const METRICS: [Metric; 5] = [
    Metric::Ttft,
    Metric::Tpot,
    Metric::E2e,
    Metric::Stall,
    Metric::Ttfa,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Metric {
    Ttft,
    Tpot,
    E2e,
    Stall,
    Ttfa,
}

impl Metric {
    fn index(self) -> usize {
        self as usize
    }

    /// The declared factors with this gate's factor set to `f`.
    fn moved(self, f: f64) -> Factors {
        let mut x = Factors::DECLARED;
        *match self {
            Metric::Ttft => &mut x.ttft,
            Metric::Tpot => &mut x.tpot,
            Metric::E2e => &mut x.e2e,
            Metric::Stall => &mut x.stall,
            Metric::Ttfa => &mut x.ttfa,
        } = f;
        x
    }

    fn value(self, m: &Measured) -> Option<f64> {
        match self {
            Metric::Ttft => m.ttft_ms,
            Metric::Tpot => m.tpot_ms,
            Metric::E2e => Some(m.e2e_ms),
            Metric::Stall => m.max_gap_ms,
            Metric::Ttfa => m.ttfa_ms,
        }
    }

    fn gate(self, g: &Gates) -> Option<f64> {
        match self {
            Metric::Ttft => g.ttft_ms,
            Metric::Tpot => g.tpot_ms,
            Metric::E2e => g.e2e_ms,
            Metric::Stall => g.stall_ms,
            Metric::Ttfa => g.ttfa_ms,
        }
    }

    /// Whether `m` holds a miss on this gate. A row with no answer under a
    /// TTFA gate misses it at every factor (no scaling gives it an answer).
    fn hit(self, m: MissSet) -> bool {
        match self {
            Metric::Ttft => m.ttft,
            Metric::Tpot => m.tpot,
            Metric::E2e => m.e2e,
            Metric::Stall => m.stall,
            Metric::Ttfa => m.ttfa || m.no_answer,
        }
    }

    /// Whether this gate is the only one `m` misses (so moving it alone can
    /// turn the row into a pass).
    fn only_miss(self, m: MissSet) -> bool {
        !m.no_answer && METRICS.iter().all(|&o| o.hit(m) == (o == self))
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
///
/// One pass over the rows ([`scan_rows`]) fills the bucket histogram and
/// notes what fragility needs; prefix sums then turn the histogram into a
/// table of pass counts ([`PassTable`]); every entry is read from that table.
/// Alternatives that move only gates no class in scope declares are left
/// out: they would repeat the declared line.
pub fn sweep(
    trace: &Trace,
    judgements: &[Judgement],
    plan: &SweepPlan,
) -> Result<Vec<SweepEntry>, SweepError> {
    let scope = Scope::of(&trace.contract, plan.class.as_deref())?;
    let declared_gates = scope.declared_gates(&trace.contract);
    let alternatives: Vec<Factors> = plan
        .alternatives
        .iter()
        .filter(|f| moves_declared(f, declared_gates))
        .copied()
        .collect();
    let axes = Axes::of(&alternatives);
    let mut scan = scan_rows(trace, judgements, scope, axes);
    scan.table.accumulate();
    let mut declared = entry(trace, plan, scope, &scan, &Factors::DECLARED, None);
    declared.fragility = Some(fragility(trace, &scan, declared_gates));
    let mut entries = Vec::with_capacity(alternatives.len() + 1);
    let rest: Vec<SweepEntry> = alternatives
        .iter()
        .map(|f| entry(trace, plan, scope, &scan, f, Some(&declared)))
        .collect();
    entries.push(declared);
    entries.extend(rest);
    Ok(entries)
}

/// Whether `f` is kept: it moves a latency gate (TTFT, TPOT, E2E: kept even
/// when null everywhere, as sweeps always showed them), a declared stall or
/// TTFA gate, or nothing at all (what the caller asked for).
fn moves_declared(f: &Factors, declared: [bool; 5]) -> bool {
    let moved: Vec<usize> = (0..5).filter(|&i| f.as_array()[i] != 1.0).collect();
    moved.is_empty() || moved.iter().any(|&i| i < 3 || declared[i])
}

/// Which rows a sweep counts and whose gates it moves: every class, or one.
#[derive(Clone, Copy, Debug)]
struct Scope(Option<usize>);

impl Scope {
    /// The scope of `class` (every class when `None`); an unknown name is an error.
    fn of(contract: &Contract, class: Option<&str>) -> Result<Scope, SweepError> {
        let Some(name) = class else {
            return Ok(Scope(None));
        };
        match contract.class_index(name) {
            Some(c) => Ok(Scope(Some(c))),
            None => Err(SweepError::UnknownClass {
                name: name.to_owned(),
                known: contract
                    .classes
                    .keys()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(", "),
            }),
        }
    }

    /// Whether a row of `class` (or a class index) is in scope.
    fn contains(self, class: Option<usize>) -> bool {
        match self.0 {
            None => true,
            Some(s) => class == Some(s),
        }
    }

    /// Per metric, whether some class in scope declares that gate.
    fn declared_gates(self, contract: &Contract) -> [bool; 5] {
        let mut out = [false; 5];
        for (c, g) in contract.classes.values().enumerate() {
            if self.contains(Some(c)) {
                for m in METRICS {
                    out[m.index()] |= m.gate(g).is_some();
                }
            }
        }
        out
    }
}

/// The factor axis shared by every metric (every factor the plan uses, plus 1
/// for the declared gates, sorted, without repeats) and which metrics the
/// alternatives move. A metric no alternative moves is held at its declared
/// gate: its table axis has one cell, which saves `k` times the cells.
#[derive(Clone, Debug)]
struct Axes {
    factors: Vec<f64>,
    moving: [bool; 5],
}

impl Axes {
    fn of(alternatives: &[Factors]) -> Axes {
        let mut factors: Vec<f64> = alternatives
            .iter()
            .flat_map(|f| f.as_array())
            .chain([1.0])
            .collect();
        factors.sort_by(f64::total_cmp);
        factors.dedup();
        let mut moving = [false; 5];
        for f in alternatives {
            for (i, x) in f.as_array().into_iter().enumerate() {
                moving[i] |= x != 1.0;
            }
        }
        Axes { factors, moving }
    }

    /// Where the declared gate (factor 1) sits on the factor axis.
    fn declared(&self) -> usize {
        self.factors.iter().position(|&x| x == 1.0).unwrap_or(0)
    }

    /// The table cell along metric `i` of factor `f`.
    fn cell(&self, i: usize, f: f64) -> usize {
        if self.moving[i] {
            self.factors.iter().position(|&x| x == f).unwrap_or(0)
        } else {
            0
        }
    }

    /// The table cell along metric `i` of a row whose smallest met factor is
    /// at axis index `bucket`; `None` when it meets no gate the table holds.
    fn row_cell(&self, i: usize, bucket: usize) -> Option<usize> {
        if self.moving[i] {
            (bucket < self.factors.len()).then_some(bucket)
        } else {
            (bucket <= self.declared()).then_some(0)
        }
    }

    fn size(&self, i: usize) -> usize {
        if self.moving[i] {
            self.factors.len()
        } else {
            1
        }
    }
}

/// The table over the axes. While rows are added, a cell counts the rows
/// whose buckets are exactly its coordinates; after
/// [`PassTable::accumulate`], it counts the rows whose buckets are all at or
/// below them: the rows that meet every gate scaled by the cell's factors.
struct PassTable {
    axes: Axes,
    strides: [usize; 5],
    cells: Vec<u64>,
}

impl PassTable {
    fn new(axes: Axes) -> PassTable {
        let mut strides = [0usize; 5];
        let mut n = 1usize;
        for i in (0..5).rev() {
            strides[i] = n;
            n *= axes.size(i);
        }
        PassTable {
            axes,
            strides,
            cells: vec![0u64; n],
        }
    }

    /// Counts a row by its buckets; a row above a gate even at the largest
    /// factor (or above a gate the table holds at its declared value) passes
    /// no alternative and is not counted.
    fn add(&mut self, buckets: [usize; 5]) {
        let mut at = 0;
        for (i, &b) in buckets.iter().enumerate() {
            match self.axes.row_cell(i, b) {
                Some(c) => at += c * self.strides[i],
                None => return,
            }
        }
        self.cells[at] += 1;
    }

    /// Prefix sums along each moving axis in turn: visiting cells in
    /// increasing order, the cell one step back along the axis is already
    /// summed along it.
    fn accumulate(&mut self) {
        for i in (0..5).filter(|&i| self.axes.moving[i]) {
            let (stride, size) = (self.strides[i], self.axes.size(i));
            for at in 0..self.cells.len() {
                if (at / stride) % size > 0 {
                    self.cells[at] += self.cells[at - stride];
                }
            }
        }
    }

    /// Rows that pass under `f` (after [`PassTable::accumulate`]).
    fn pass(&self, f: &Factors) -> u64 {
        let at: usize = f
            .as_array()
            .into_iter()
            .enumerate()
            .map(|(i, x)| self.axes.cell(i, x) * self.strides[i])
            .sum();
        self.cells[at]
    }
}

/// Per class and metric: (largest passing value, smallest value among rows
/// that miss on this metric alone).
type ClassExtremes = [(Option<Extreme>, Option<Extreme>); 5];

/// Passing rows near each gate, counted as the scan goes.
#[derive(Default)]
struct NearCounts {
    rows: u64,
    by_metric: [u64; 5],
}

/// What one pass over the rows collects.
struct RowScan {
    table: PassTable,
    /// Cohort rows in scope: the denominator, the same under every gate.
    cohort: u64,
    near: NearCounts,
    /// Indexed by class.
    extremes: Vec<ClassExtremes>,
}

/// The one pass over the judged rows: counts the cohort, puts every completed
/// cohort row into the histogram by its buckets, and notes near-gate rows
/// and extremes for fragility.
fn scan_rows(trace: &Trace, judgements: &[Judgement], scope: Scope, axes: Axes) -> RowScan {
    let contract = &trace.contract;
    let equality = contract.equality;
    let class_gates: Vec<&Gates> = contract.classes.values().collect();
    // scaled[class][i]: the class's gates with every gate times axis[i].
    let scaled: Vec<Vec<Gates>> = class_gates
        .iter()
        .map(|g| {
            axes.factors
                .iter()
                .map(|&f| Factors::all(f).scale(g))
                .collect()
        })
        .collect();
    let mut scan = RowScan {
        table: PassTable::new(axes),
        cohort: 0,
        near: NearCounts::default(),
        extremes: vec![[(None, None); 5]; class_gates.len()],
    };
    for (row, j) in judgements.iter().enumerate() {
        if !scope.contains(j.class) {
            continue;
        }
        let (m, declared_miss) = match &j.verdict {
            Verdict::Censored { .. } | Verdict::Failed { .. } => {
                scan.cohort += 1;
                continue;
            }
            Verdict::Invalid(_) | Verdict::Excluded(_) => continue,
            Verdict::Pass(m) => (m, None),
            Verdict::Miss(m, set) => (m, Some(*set)),
        };
        scan.cohort += 1;
        let Some(c) = j.class else { continue };
        let (Some(gates), Some(scaled)) = (class_gates.get(c), scaled.get(c)) else {
            continue;
        };
        scan.table.add(buckets(m, scaled, equality));
        let ex = &mut scan.extremes[c];
        match declared_miss {
            None => note_passing(m, gates, row, ex, &mut scan.near),
            Some(set) => note_missing(m, set, row, ex),
        }
    }
    scan
}

/// Per metric, the smallest axis index whose scaled gate the row meets
/// (`scaled.len()` when it meets none).
fn buckets(m: &Measured, scaled: &[Gates], equality: Equality) -> [usize; 5] {
    let k = scaled.len();
    let mut bucket = [k; 5];
    for (i, g) in scaled.iter().enumerate() {
        let miss = missed(m, g, equality);
        for metric in METRICS {
            let b = &mut bucket[metric.index()];
            if *b == k && !metric.hit(miss) {
                *b = i;
            }
        }
        if bucket.iter().all(|&b| b < k) {
            break;
        }
    }
    bucket
}

/// A passing row: a candidate for each metric's largest passing value, and
/// counted as near a gate when within [`NEAR_GATE_SHARE`] below it.
fn note_passing(
    m: &Measured,
    gates: &Gates,
    row: usize,
    ex: &mut ClassExtremes,
    near: &mut NearCounts,
) {
    let mut any = false;
    for metric in METRICS {
        let mi = metric.index();
        if let (Some(v), Some(g)) = (metric.value(m), metric.gate(gates)) {
            note_extreme(&mut ex[mi].0, v, row, true);
            if v >= g * (1.0 - NEAR_GATE_SHARE) {
                any = true;
                near.by_metric[mi] += 1;
            }
        }
    }
    near.rows += u64::from(any);
}

/// A row that misses: a candidate for the smallest value of the one metric
/// it misses on, when it misses on one metric alone.
fn note_missing(m: &Measured, set: MissSet, row: usize, ex: &mut ClassExtremes) {
    for metric in METRICS {
        if metric.only_miss(set) {
            if let Some(v) = metric.value(m) {
                note_extreme(&mut ex[metric.index()].1, v, row, false);
            }
        }
    }
}
/// One sweep line: the figures of the scope under the gates scaled by `f`,
/// with deltas against `declared` (none for the declared line itself).
fn entry(
    trace: &Trace,
    plan: &SweepPlan,
    scope: Scope,
    scan: &RowScan,
    f: &Factors,
    declared: Option<&SweepEntry>,
) -> SweepEntry {
    let contract = &trace.contract;
    let cohort = scan.cohort;
    let pass = scan.table.pass(f);
    let goodput_per_s = pass as f64 / contract.window_s();
    let pass_share = (cohort > 0).then(|| pass as f64 / cohort as f64);
    let classes = contract
        .classes
        .iter()
        .enumerate()
        .map(|(c, (name, g))| {
            let gates = if scope.contains(Some(c)) {
                f.scale(g)
            } else {
                *g
            };
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
}

/// The declared result's fragility: near-gate rows and, per metric, the
/// nearest tipping points down and up across the classes (stall and TTFA
/// only where some class in scope declares them).
fn fragility(trace: &Trace, scan: &RowScan, declared_gates: [bool; 5]) -> Fragility {
    let tipping_metric = |mi: usize| {
        let mut down: Option<TippingPoint> = None;
        let mut up: Option<TippingPoint> = None;
        for (c, ex) in scan.extremes.iter().enumerate() {
            if let Some(p) = tipping_point(trace, c, mi, ex[mi].0) {
                // Tightening: the class whose largest passing value is nearest the gate.
                if down.as_ref().is_none_or(|d| p.factor > d.factor) {
                    down = Some(p);
                }
            }
            if let Some(p) = tipping_point(trace, c, mi, ex[mi].1) {
                if up.as_ref().is_none_or(|u| p.factor < u.factor) {
                    up = Some(p);
                }
            }
        }
        TippingMetric { down, up }
    };
    let near = &scan.near.by_metric;
    let if_declared = |mi: usize| declared_gates[mi].then_some(mi);
    Fragility {
        equality: trace.contract.equality,
        near_gate: NearGate {
            share: NEAR_GATE_SHARE,
            rows: scan.near.rows,
            ttft: near[0],
            tpot: near[1],
            e2e: near[2],
            stall: if_declared(3).map(|i| near[i]),
            ttfa: if_declared(4).map(|i| near[i]),
        },
        tipping: Tipping {
            ttft: tipping_metric(0),
            tpot: tipping_metric(1),
            e2e: tipping_metric(2),
            stall: if_declared(3).map(tipping_metric),
            ttfa: if_declared(4).map(tipping_metric),
        },
    }
}

/// Where class `c`'s gate on metric `mi` must move for the row(s) of `e` to
/// flip; `None` when there is no such row, no gate, or a gate of 0 (0 × any
/// factor is still 0: no scaling moves it).
fn tipping_point(trace: &Trace, c: usize, mi: usize, e: Option<Extreme>) -> Option<TippingPoint> {
    let (name, gates) = trace.contract.classes.iter().nth(c)?;
    let g = METRICS[mi].gate(gates)?;
    let e = e?;
    if g <= 0.0 {
        return None;
    }
    let factor = e.value / g;
    Some(TippingPoint {
        class: name.to_string(),
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
}

/// Recovers the plan of a recorded sweep (class and factor triples), so
/// `verify` can recompute a receipt's `sweep` exactly.
pub fn plan_of(entries: &[SweepEntry]) -> SweepPlan {
    SweepPlan {
        class: entries.first().and_then(|e| e.class.clone()),
        alternatives: entries.iter().skip(1).map(|e| e.factors).collect(),
    }
}
