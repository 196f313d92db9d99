//! Receipt verification: recompute someone else's receipt from the archived
//! trace and say exactly where it disagrees.
//!
//! The receipt is read as a JSON tree, not as this version's struct, so a
//! receipt of the same schema major version written by an older `goodput`
//! still reads (docs/contract.md §9.1: fields may be added, names and places are fixed).
//! The trace is recomputed with the options the receipt records (its limits;
//! its percentiles; per-row verdicts when it has `rows`; its sweep plan when it has `sweep`),
//! both trees are put in canonical number form, and they are walked side by
//! side. The trace hash is reported first, because when it differs nothing
//! else can agree for a good reason; then the contract; then everything else,
//! each difference by JSON pointer with both values.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

use crate::analyze::{analyze_bytes_at, AnalyzeOptions};
use crate::intervals::Confidence;
use crate::receipt::recovery::{RecoveryOptions, DEFAULT_TOLERANCE};
use crate::receipt::release::{attach, ReleaseOptions};
use crate::receipt::{attach_percentiles, Receipt, RECEIPT_SCHEMA};
use crate::review::sensitivity::{plan_of, sweep, SweepEntry};
use crate::server_metrics::MetricsLine;
use crate::stats::{Percentile, PercentileSet};
use crate::trace::Resources;
use crate::trace::{sha256_hex, Limits};
use goodput_util::json::normalize_numbers;
use goodput_util::pointer::escape;

/// Why a receipt cannot be verified at all (exit status 2).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    /// The receipt is not JSON.
    #[error("the receipt is not valid JSON: {0}")]
    NotJson(String),
    /// The receipt is JSON, but not a goodput receipt.
    #[error("the receipt is not a goodput receipt: {0}")]
    NotAReceipt(String),
    /// A receipt of another schema major version.
    #[error(
        "the receipt's schema is {found:?}; this goodput reads {RECEIPT_SCHEMA:?} \
         (same major version only)"
    )]
    UnsupportedSchema {
        /// The schema tag found.
        found: String,
    },
}

/// A receipt as claimed, with what is needed to recompute it.
#[derive(Clone, Debug, PartialEq)]
pub struct ClaimedReceipt {
    /// The whole receipt, numbers in canonical form.
    pub tree: Value,
    /// The limits it records (the recomputation uses them).
    pub limits: Limits,
    /// `generator.version`, when present.
    pub generator_version: Option<String>,
    /// `schema`.
    pub schema: String,
    /// The confidence level of its intervals (`/contract/intervals/confidence`;
    /// the default when an older receipt has none or an unusable one, which
    /// then shows as a difference).
    pub confidence: Confidence,
    /// The percentiles it records (`/contract/percentiles`): `None` for an
    /// older receipt without the list (recomputed without it too); the
    /// default when the list is unreadable, which then shows as a difference.
    pub percentiles: Option<PercentileSet>,
}

/// Reads a receipt's bytes as a claimed receipt of a supported schema.
pub fn read_receipt(bytes: &[u8]) -> Result<ClaimedReceipt, VerifyError> {
    if goodput_util::json::starts_with_bom(bytes) {
        return Err(VerifyError::NotAReceipt(
            goodput_util::json::BOM_MESSAGE.to_owned(),
        ));
    }
    let mut tree: Value =
        serde_json::from_slice(bytes).map_err(|e| VerifyError::NotJson(e.to_string()))?;
    normalize_numbers(&mut tree);
    let obj = tree
        .as_object()
        .ok_or_else(|| VerifyError::NotAReceipt("the top level is not an object".to_owned()))?;
    let schema = obj
        .get("schema")
        .and_then(Value::as_str)
        .ok_or_else(|| VerifyError::NotAReceipt("/schema is missing or not a string".to_owned()))?
        .to_owned();
    if !schema.starts_with("goodput-receipt/") {
        return Err(VerifyError::NotAReceipt(format!(
            "its schema is {schema:?} (were the receipt and the trace given in the wrong order?)"
        )));
    }
    if major(&schema) != major(RECEIPT_SCHEMA) {
        return Err(VerifyError::UnsupportedSchema { found: schema });
    }
    let limit = |key: &str| {
        tree.pointer(&format!("/limits/{key}"))
            .and_then(Value::as_u64)
            .ok_or_else(|| {
                VerifyError::NotAReceipt(format!(
                    "/limits/{key} is missing or not a non-negative integer \
                     (the recomputation needs the limits in force)"
                ))
            })
    };
    let limits = Limits {
        max_rows: limit("maxRows")?,
        max_bytes: limit("maxBytes")?,
    };
    let generator_version = tree
        .pointer("/generator/version")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let confidence = tree
        .pointer("/contract/intervals/confidence")
        .and_then(Value::as_f64)
        .and_then(|c| Confidence::new(c).ok())
        .unwrap_or_default();
    let percentiles = tree
        .pointer("/contract/percentiles")
        .map(|list| percentiles_of(list).unwrap_or_default());
    Ok(ClaimedReceipt {
        tree,
        limits,
        generator_version,
        schema,
        confidence,
        percentiles,
    })
}

/// A recorded percentile list, when every entry is a valid percentile.
fn percentiles_of(list: &Value) -> Option<PercentileSet> {
    let mut values = list
        .as_array()?
        .iter()
        .map(|v| v.as_f64().and_then(Percentile::from_value))
        .collect::<Option<Vec<_>>>()?;
    PercentileSet::from_values(&mut values).ok()
}

/// The release options a receipt records: its recovery's burst phase and
/// tolerance, and resources that came from a command's flags rather than from
/// the trace (docs/contract.md §10.10). Anything unreadable falls back to the
/// defaults, so the recomputation then shows it as a difference.
fn release_options_of(tree: &Value) -> ReleaseOptions {
    let mut options = ReleaseOptions::default();
    if let Some(phase) = tree.pointer("/recovery/burstPhase").and_then(Value::as_str) {
        options.recovery = RecoveryOptions {
            burst_phase: phase.to_owned(),
            required: false,
            tolerance: tree
                .pointer("/recovery/tolerance")
                .and_then(Value::as_u64)
                .unwrap_or(DEFAULT_TOLERANCE),
        };
    }
    let res = |key: &str| tree.pointer(&format!("/contract/resources/{key}"));
    let price = res("gpuHourCost").and_then(Value::as_f64);
    match res("source").and_then(Value::as_str) {
        Some("options") => {
            if let Some(gpus) = res("gpus").and_then(Value::as_f64) {
                options.resources = Some(Resources {
                    gpus,
                    gpu_hour_cost: price,
                });
            }
        }
        Some("trace+options") => options.price_only = price,
        _ => {}
    }
    options
}

/// A schema tag's family and major version: the part before the first `.`
/// (`goodput-receipt/1.2` and `goodput-receipt/1` are the same major).
fn major(schema: &str) -> &str {
    schema.split('.').next().unwrap_or(schema)
}

/// One place where the receipt and the recomputation disagree.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// JSON pointer of the value.
    pub path: String,
    /// The receipt's value (null in JSON and "(absent)" in text when it has none).
    pub receipt: Option<Value>,
    /// The recomputed value (absent: this version does not produce it).
    pub recomputed: Option<Value>,
}

/// What verification found.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// The receipt's schema tag.
    pub schema: String,
    /// The version that wrote the receipt, when it says.
    pub receipt_generator_version: Option<String>,
    /// This version, which recomputed it.
    pub recomputed_generator_version: String,
    /// The sha256 the receipt claims for its trace.
    pub receipt_sha256: Option<String>,
    /// The sha256 of the trace given, when it was read.
    pub trace_sha256: Option<String>,
    /// Whether the two hashes are equal.
    pub sha256_matches: bool,
    /// Why the trace could not be recomputed at all, if so.
    pub recompute_failed: Option<String>,
    /// Things said without being differences (older generator, fields it lacks).
    pub notes: Vec<String>,
    /// Every difference: sha256 first, then the contract, then the rest.
    pub differences: Vec<Difference>,
}

impl VerifyReport {
    /// The receipt is exactly what this trace gives.
    pub fn agrees(&self) -> bool {
        self.sha256_matches && self.recompute_failed.is_none() && self.differences.is_empty()
    }

    fn new(claimed: &ClaimedReceipt, trace_sha256: Option<String>) -> VerifyReport {
        let receipt_sha256 = claimed
            .tree
            .pointer("/trace/sha256")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let sha256_matches = trace_sha256.is_some() && receipt_sha256 == trace_sha256;
        let mut notes = Vec::new();
        let ours = crate::GENERATOR_VERSION;
        match &claimed.generator_version {
            Some(v) if v != ours => notes.push(format!(
                "the receipt was written by goodput {v}; recomputed with goodput {ours} \
                 (same schema major version, {})",
                claimed.schema
            )),
            None => notes.push("the receipt does not say which goodput version wrote it".into()),
            _ => {}
        }
        if claimed.tree.pointer("/contract/arrivalsUnknown").is_some() {
            notes.push(crate::receipt::ARRIVALS_UNKNOWN_LINE.to_owned());
        }
        VerifyReport {
            schema: claimed.schema.clone(),
            receipt_generator_version: claimed.generator_version.clone(),
            recomputed_generator_version: ours.to_owned(),
            receipt_sha256,
            trace_sha256,
            sha256_matches,
            recompute_failed: None,
            notes,
            differences: Vec::new(),
        }
    }
}

/// The trace was larger than the receipt's recorded byte limit, so it cannot
/// be the trace the receipt was made from (it was not read further).
pub fn verify_oversized(claimed: &ClaimedReceipt, size: Option<u64>) -> VerifyReport {
    let mut report = VerifyReport::new(claimed, None);
    let size = size.map_or_else(|| "larger".to_owned(), |s| format!("{s} bytes"));
    report.recompute_failed = Some(format!(
        "the trace is {size}, over the receipt's recorded limit of {} bytes: \
         it cannot be the trace this receipt was made from",
        claimed.limits.max_bytes
    ));
    report
}

/// Recomputes the receipt from `trace_bytes` and compares.
///
/// An accepted trace is hashed once: the analysis hashes it (beside the
/// parse) and the report takes that hash. A rejection carries no hash, so a
/// rejected trace is hashed here (the error path, where the cost is moot).
pub fn verify(claimed: &ClaimedReceipt, trace_bytes: &[u8]) -> VerifyReport {
    verify_with_power(claimed, trace_bytes, None)
}

/// [`verify`], with the trace's metrics sidecar when one was found, so a
/// receipt's `energy` block is recomputed from the same power readings
/// (docs/contract.md §10.18). Without the sidecar, a claimed `energy` is
/// not compared, and a note says so.
pub fn verify_with_power(
    claimed: &ClaimedReceipt,
    trace_bytes: &[u8],
    power: Option<&[MetricsLine]>,
) -> VerifyReport {
    let has = |key: &str| claimed.tree.get(key).is_some_and(|v| !v.is_null());
    let options = AnalyzeOptions {
        limits: claimed.limits,
        rows: has("rows"),
        strict: false,
    };
    let analysis = match analyze_bytes_at(trace_bytes, options, claimed.confidence) {
        Ok(a) => a,
        Err(rejection) => {
            let mut report = VerifyReport::new(claimed, Some(sha256_hex(trace_bytes)));
            report.recompute_failed = Some(format!("the trace is rejected: {rejection}"));
            return report;
        }
    };
    let mut report = VerifyReport::new(claimed, Some(analysis.trace.sha256.clone()));
    let mut receipt = analysis.receipt;
    match &claimed.percentiles {
        Some(set) => attach_percentiles(&mut receipt, &analysis.trace, &analysis.judgements, set),
        None => receipt.contract.percentiles.clear(),
    }
    let release = release_options_of(&claimed.tree);
    if release != ReleaseOptions::default() {
        if let Err(e) = attach(
            &mut receipt,
            &analysis.trace,
            &analysis.judgements,
            &release,
        ) {
            report
                .notes
                .push(format!("/recovery and /cost cannot be recomputed: {e}"));
        }
    }
    if has("sweep") {
        let recorded: Result<Vec<SweepEntry>, _> =
            serde_json::from_value(claimed.tree.get("sweep").cloned().unwrap_or(Value::Null));
        match recorded {
            Ok(entries) => match sweep(&analysis.trace, &analysis.judgements, &plan_of(&entries)) {
                Ok(entries) => receipt.sweep = Some(entries),
                Err(e) => report
                    .notes
                    .push(format!("/sweep cannot be recomputed: {e}")),
            },
            Err(e) => report
                .notes
                .push(format!("/sweep cannot be read as a sweep: {e}")),
        }
    }
    if has("energy") {
        recompute_energy(claimed, &mut receipt, power, &mut report);
    }
    if has("quality") {
        carry_quality(claimed, &analysis.trace, &mut receipt, &mut report);
    }
    let mut recomputed = match serde_json::to_value(&receipt) {
        Ok(v) => v,
        Err(e) => {
            report.recompute_failed =
                Some(format!("the recomputed receipt cannot be written: {e}"));
            return report;
        }
    };
    normalize_numbers(&mut recomputed);
    let same_version = claimed.generator_version.as_deref() == Some(crate::GENERATOR_VERSION);
    let walk = diff_values(&claimed.tree, &recomputed, !same_version);
    if !walk.unchecked.is_empty() {
        report.notes.push(format!(
            "not in the older receipt, so not compared: {}",
            walk.unchecked.join(", ")
        ));
    }
    report.differences = walk
        .differences
        .into_iter()
        .filter(|d| d.path != "/generator/version")
        .collect();
    // sha256 first, then the contract, then everything else in document order.
    report.differences.sort_by_key(|d| {
        if d.path == "/trace/sha256" {
            0
        } else if d.path.starts_with("/contract") {
            1
        } else {
            2
        }
    });
    report
}

/// The result of walking two JSON trees side by side.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Walk {
    /// Every place where they differ, in document order.
    pub differences: Vec<Difference>,
    /// Paths only the recomputation has, when those are tolerated.
    pub unchecked: Vec<String>,
}

/// Walks `claimed` and `recomputed` side by side. With `tolerate_new_fields`,
/// an object member the claimed tree lacks is listed in `unchecked` instead of
/// being a difference (an older version did not write it yet).
pub fn diff_values(claimed: &Value, recomputed: &Value, tolerate_new_fields: bool) -> Walk {
    let mut walk = Walk::default();
    diff_at(
        &mut String::new(),
        claimed,
        recomputed,
        tolerate_new_fields,
        &mut walk,
    );
    walk
}

fn diff_at(path: &mut String, a: &Value, b: &Value, tolerate: bool, walk: &mut Walk) {
    let differ = |walk: &mut Walk, path: &str, a: Option<&Value>, b: Option<&Value>| {
        walk.differences.push(Difference {
            path: path.to_owned(),
            receipt: a.cloned(),
            recomputed: b.cloned(),
        })
    };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (key, va) in x {
                let len = path.len();
                path.push('/');
                path.push_str(&escape(key));
                match y.get(key) {
                    Some(vb) => diff_at(path, va, vb, tolerate, walk),
                    None => differ(walk, path, Some(va), None),
                }
                path.truncate(len);
            }
            for (key, vb) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                let p = format!("{path}/{}", escape(key));
                if tolerate {
                    walk.unchecked.push(p);
                } else {
                    differ(walk, &p, None, Some(vb));
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                let len = path.len();
                path.push('/');
                path.push_str(&i.to_string());
                match (x.get(i), y.get(i)) {
                    (Some(va), Some(vb)) => diff_at(path, va, vb, tolerate, walk),
                    (va, vb) => differ(walk, path, va, vb),
                }
                path.truncate(len);
            }
        }
        (Value::Number(x), Value::Number(y)) => {
            let same = match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
                (Some(p), Some(q), _, _) => p == q,
                (_, _, Some(p), Some(q)) => p == q,
                _ => x.as_f64() == y.as_f64(),
            };
            if !same {
                differ(walk, path, Some(a), Some(b));
            }
        }
        _ => {
            if a != b {
                differ(walk, path, Some(a), Some(b));
            }
        }
    }
}

/// Recomputes a claimed `energy` block from the sidecar's readings of the
/// same metric; without the sidecar, copies the claim so it is not reported
/// as a difference, and notes that it was not compared.
fn recompute_energy(
    claimed: &ClaimedReceipt,
    receipt: &mut Receipt,
    power: Option<&[MetricsLine]>,
    report: &mut VerifyReport,
) {
    let claim = claimed.tree.get("energy").cloned().unwrap_or(Value::Null);
    let metric = claim.get("metric").and_then(Value::as_str);
    match (power, metric) {
        (Some(lines), Some(metric)) => receipt.energy = receipt.energy_from(lines, metric),
        _ => {
            receipt.energy = serde_json::from_value(claim).ok();
            report.notes.push(
                "/energy not compared: the metrics sidecar with its power readings is not \
                 beside the trace"
                    .to_owned(),
            );
        }
    }
}

/// A receipt's `quality` block is judged from the sidecar, which `verify`
/// does not read: it is carried over as claimed, with a note, unless its
/// sidecar sha256 is not the one the trace names (then the recomputed
/// receipt has none, and the difference shows).
fn carry_quality(
    claimed: &ClaimedReceipt,
    trace: &crate::trace::Trace,
    receipt: &mut crate::receipt::Receipt,
    report: &mut VerifyReport,
) {
    let block: Option<crate::quality::QualityBlock> = claimed
        .tree
        .get("quality")
        .and_then(|v| serde_json::from_value(v.clone()).ok());
    let named = trace.contract.quality.as_ref().map(|q| q.sha256.as_str());
    match block {
        Some(b) if Some(b.sidecar_sha256.as_str()) == named => {
            receipt.quality = Some(b);
            report.notes.push(
                "/quality is carried over, not recomputed: it is judged from the sidecar \
                 (its sha256 is the trace's quality.sha256; judge it with `goodput quality`)"
                    .to_owned(),
            );
        }
        _ => report.notes.push(
            "/quality does not belong to this trace: its sidecar sha256 is not the trace's quality.sha256"
                .to_owned(),
        ),
    }
}
