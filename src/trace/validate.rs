//! The rules of SPEC §2–§3: document-level checks (a failure rejects the whole
//! trace, naming a JSON pointer) and row-level checks (a failure makes only that
//! row invalid, with every reason that applies).
//!
//! Document checks run in a fixed order, so the "first problem" is well defined
//! whatever the key order of the input: top-level type, `schema`, unknown or
//! repeated top-level members, `rows` (presence, type, row limit), `window`,
//! `warmup`, `equality`, `classes`, `defaultClass`, `tokens`, `boundary`,
//! `workload`, and last whether rows without a `class` can be resolved.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use serde_json::{Map, Value};

use super::model::{
    Contract, Equality, Gates, Labels, Scalar, TokenCount, Warmup, MAX_ABS_TIMESTAMP_MS,
    MAX_ID_CHARS, MAX_OUTPUT_TOKENS, MAX_SPAN_MS, TRACE_SCHEMA,
};
use super::parse::{Interner, RawDocument, RawRow, RawStatus, RowsField, Slot};
use super::{Limits, Rejection};

const TOP_LEVEL_FIELDS: [&str; 10] = [
    "schema",
    "window",
    "warmup",
    "equality",
    "classes",
    "defaultClass",
    "tokens",
    "boundary",
    "workload",
    "rows",
];

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn object<'v>(v: &'v Value, ptr: &str) -> Result<&'v Map<String, Value>, Rejection> {
    v.as_object().ok_or_else(|| {
        Rejection::at(
            ptr,
            format_args!("must be an object, found {}", type_name(v)),
        )
    })
}

fn only_fields(obj: &Map<String, Value>, ptr: &str, allowed: &[&str]) -> Result<(), Rejection> {
    match obj.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(Rejection::at(
            format!("{ptr}/{}", escape(k)),
            format_args!(
                "is not a known field (expected one of: {})",
                allowed.join(", ")
            ),
        )),
        None => Ok(()),
    }
}

/// Escapes a key for use as a JSON pointer token (RFC 6901).
pub fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn timestamp(obj: &Map<String, Value>, ptr: &str, key: &str) -> Result<Option<f64>, Rejection> {
    let here = format!("{ptr}/{key}");
    match obj.get(key) {
        None => Ok(None),
        Some(v) => {
            let t = v.as_f64().ok_or_else(|| {
                Rejection::at(
                    &here,
                    format_args!("must be a number, found {}", type_name(v)),
                )
            })?;
            if t.abs() > MAX_ABS_TIMESTAMP_MS {
                return Err(Rejection::at(
                    &here,
                    format_args!("is {t}, out of range: a timestamp must be within ±10^15 ms"),
                ));
            }
            Ok(Some(t))
        }
    }
}

fn required_timestamp(obj: &Map<String, Value>, ptr: &str, key: &str) -> Result<f64, Rejection> {
    timestamp(obj, ptr, key)?.ok_or_else(|| {
        Rejection::at(
            format!("{ptr}/{key}"),
            "is missing (a number of ms is required)",
        )
    })
}

fn labels(v: &Value, ptr: &str) -> Result<Labels, Rejection> {
    let obj = object(v, ptr)?;
    let mut out = Labels::new();
    for (k, v) in obj {
        let scalar = match v {
            Value::Bool(b) => Scalar::Bool(*b),
            Value::Number(n) => Scalar::Number(n.as_f64().unwrap_or(f64::NAN)),
            Value::String(s) => Scalar::String(s.clone()),
            other => {
                return Err(Rejection::at(
                    format!("{ptr}/{}", escape(k)),
                    format_args!(
                        "must be a string, a finite number or a boolean, found {}",
                        type_name(other)
                    ),
                ))
            }
        };
        out.insert(k.clone(), scalar);
    }
    Ok(out)
}

/// Checks every document-level rule, in the documented order.
pub fn validate_document(
    doc: RawDocument,
    limits: Limits,
) -> Result<(Contract, Vec<RawRow>, Interner), Rejection> {
    if let Some(kind) = doc.not_object {
        return Err(Rejection::at(
            "",
            format_args!("the document must be a JSON object, found {kind}"),
        ));
    }
    let m = &doc.members;
    match m.get("schema") {
        None => {
            return Err(Rejection::at(
                "/schema",
                format_args!("is missing (expected \"{TRACE_SCHEMA}\")"),
            ))
        }
        Some(Value::String(s)) if s == TRACE_SCHEMA => {}
        Some(other) => {
            return Err(Rejection::at(
                "/schema",
                format_args!(
                    "is {other}, not a schema this tool reads (expected \"{TRACE_SCHEMA}\")"
                ),
            ))
        }
    }
    if let Some(k) = m.keys().find(|k| !TOP_LEVEL_FIELDS.contains(&k.as_str())) {
        return Err(Rejection::at(
            format!("/{}", escape(k)),
            format_args!(
                "is not a known field (expected one of: {})",
                TOP_LEVEL_FIELDS.join(", ")
            ),
        ));
    }
    if let Some(k) = &doc.duplicate_member {
        return Err(Rejection::at(
            format!("/{}", escape(k)),
            "appears more than once",
        ));
    }
    let rows = match doc.rows {
        RowsField::Missing => {
            return Err(Rejection::at(
                "/rows",
                "is missing (an array of rows is required; it may be empty)",
            ))
        }
        RowsField::NotArray(kind) => {
            return Err(Rejection::at(
                "/rows",
                format_args!("must be an array, found {kind}"),
            ))
        }
        RowsField::Rows(rows) => rows,
    };
    if rows.len() as u64 > limits.max_rows {
        return Err(Rejection::at(
            "/rows",
            format_args!(
                "has {} rows, over the limit of {} (raise it with --max-rows)",
                rows.len(),
                limits.max_rows
            ),
        ));
    }

    // window
    let window = m
        .get("window")
        .ok_or_else(|| Rejection::at("/window", "is missing (startMs and endMs are required)"))?;
    let w = object(window, "/window")?;
    only_fields(w, "/window", &["startMs", "endMs", "horizonMs"])?;
    let start_ms = required_timestamp(w, "/window", "startMs")?;
    let end_ms = required_timestamp(w, "/window", "endMs")?;
    let horizon_ms = match w.get("horizonMs") {
        Some(Value::Null) => None,
        _ => timestamp(w, "/window", "horizonMs")?,
    };
    if end_ms <= start_ms {
        return Err(Rejection::at(
            "/window/endMs",
            "must be greater than /window/startMs",
        ));
    }
    if end_ms - start_ms > MAX_SPAN_MS {
        return Err(Rejection::at(
            "/window/endMs",
            "is more than 86,400,000 ms (24 h) after /window/startMs",
        ));
    }
    let horizon_ms = horizon_ms.unwrap_or(end_ms);
    if horizon_ms < end_ms {
        return Err(Rejection::at(
            "/window/horizonMs",
            "must be at least /window/endMs",
        ));
    }
    if horizon_ms - start_ms > MAX_SPAN_MS {
        return Err(Rejection::at(
            "/window/horizonMs",
            "is more than 86,400,000 ms (24 h) after /window/startMs",
        ));
    }

    // warmup
    let warmup = match m.get("warmup") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let o = object(v, "/warmup")?;
            only_fields(o, "/warmup", &["startMs", "endMs"])?;
            let ws = required_timestamp(o, "/warmup", "startMs")?;
            let we = required_timestamp(o, "/warmup", "endMs")?;
            if we < ws {
                return Err(Rejection::at(
                    "/warmup/endMs",
                    "must be at least /warmup/startMs",
                ));
            }
            if we > start_ms {
                return Err(Rejection::at(
                    "/warmup/endMs",
                    "must be at most /window/startMs",
                ));
            }
            Some(Warmup {
                start_ms: ws,
                end_ms: we,
            })
        }
    };

    // equality
    let equality = match m.get("equality") {
        None => {
            return Err(Rejection::at(
                "/equality",
                "is missing: declare \"inclusive\" (value == gate passes) or \"strict\" (value == gate misses)",
            ))
        }
        Some(Value::String(s)) if s == "inclusive" => Equality::Inclusive,
        Some(Value::String(s)) if s == "strict" => Equality::Strict,
        Some(other) => {
            return Err(Rejection::at(
                "/equality",
                format_args!("is {other}; it must be \"inclusive\" or \"strict\""),
            ))
        }
    };

    // classes
    let classes_v = m
        .get("classes")
        .ok_or_else(|| Rejection::at("/classes", "is missing (declare at least one SLO class)"))?;
    let classes_o = object(classes_v, "/classes")?;
    if classes_o.is_empty() {
        return Err(Rejection::at(
            "/classes",
            "must declare at least one SLO class",
        ));
    }
    let mut classes = BTreeMap::new();
    for (name, gates_v) in classes_o {
        let ptr = format!("/classes/{}", escape(name));
        if name.is_empty() {
            return Err(Rejection::at(ptr, "is an empty class name"));
        }
        let g = object(gates_v, &ptr)?;
        only_fields(g, &ptr, &["ttftMs", "tpotMs", "e2eMs"])?;
        let gate = |key: &str| -> Result<Option<f64>, Rejection> {
            let here = format!("{ptr}/{key}");
            match g.get(key) {
                None => Err(Rejection::at(
                    here,
                    "is missing (a gate in ms, or null for no gate)",
                )),
                Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => match n.as_f64() {
                    Some(x) if x >= 0.0 && x.is_finite() => Ok(Some(x)),
                    _ => Err(Rejection::at(
                        here,
                        format_args!("is {n}; a gate must be a finite number >= 0 or null"),
                    )),
                },
                Some(other) => Err(Rejection::at(
                    here,
                    format_args!("must be a number >= 0 or null, found {}", type_name(other)),
                )),
            }
        };
        let gates = Gates {
            ttft_ms: gate("ttftMs")?,
            tpot_ms: gate("tpotMs")?,
            e2e_ms: gate("e2eMs")?,
        };
        classes.insert(name.clone(), gates);
    }

    // defaultClass
    let default_class = match m.get("defaultClass") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if classes.contains_key(s) => Some(s.clone()),
        Some(Value::String(s)) => {
            return Err(Rejection::at(
                "/defaultClass",
                format_args!("names \"{s}\", which is not a declared class"),
            ))
        }
        Some(other) => {
            return Err(Rejection::at(
                "/defaultClass",
                format_args!("must be a class name, found {}", type_name(other)),
            ))
        }
    };

    let tokens = match m.get("tokens") {
        None => TokenCount::Usage,
        Some(Value::String(s)) if s == "usage" => TokenCount::Usage,
        Some(Value::String(s)) if s == "chunks" => TokenCount::Chunks,
        Some(other) => {
            return Err(Rejection::at(
                "/tokens",
                format_args!("is {other}; it must be \"usage\" or \"chunks\""),
            ))
        }
    };
    let boundary = match m.get("boundary") {
        None => Labels::new(),
        Some(v) => labels(v, "/boundary")?,
    };
    let workload = match m.get("workload") {
        None => Labels::new(),
        Some(v) => labels(v, "/workload")?,
    };
    let arrivals_unknown = matches!(
        boundary.get("arrival"),
        Some(Scalar::String(s)) if s == super::model::ARRIVAL_UNKNOWN
    );
    if arrivals_unknown && warmup.is_some() {
        return Err(Rejection::at(
            "/warmup",
            "cannot be applied: boundary.arrival is \"unknown\", so no row has an arrival \
             instant to compare with it",
        ));
    }

    if default_class.is_none() && classes.len() > 1 {
        if let Some(i) = rows
            .iter()
            .position(|r| !r.not_object && matches!(r.class, Slot::Absent))
        {
            return Err(Rejection::at(
                "/defaultClass",
                format_args!(
                    "is required: {} classes are declared and /rows/{i} names no class",
                    classes.len()
                ),
            ));
        }
    }

    let contract = Contract {
        start_ms,
        end_ms,
        horizon_ms,
        warmup,
        equality,
        classes,
        default_class,
        tokens,
        boundary,
        workload,
    };
    Ok((contract, rows, doc.strings))
}

/// Why a row is invalid (SPEC §3). The declaration order is the order in which
/// reasons are listed in receipts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum InvalidReason {
    /// The row's id occurs more than once.
    DuplicateId,
    /// The row names a class that is not declared.
    UnknownClass,
    /// An unknown field, a wrong type, a null, a bad id, a missing arrival or status.
    BadField,
    /// A timestamp with |t| > 10^15.
    TimestampOutOfRange,
    /// `firstTokenMs < arrivalMs`.
    FirstTokenBeforeArrival,
    /// `completedMs < arrivalMs`.
    CompletionBeforeArrival,
    /// `completedMs < firstTokenMs`.
    CompletionBeforeFirstToken,
    /// `endedMs < arrivalMs`.
    EndedBeforeArrival,
    /// A timestamp more than 24 h after arrival.
    SpanTooLong,
    /// A completed row without `firstTokenMs`.
    MissingFirstToken,
    /// A completed row without `completedMs`.
    MissingCompletion,
    /// A completed row without `outputTokens`.
    MissingOutputTokens,
    /// A completed row with `outputTokens` exactly 0.
    CompletedWithoutTokens,
    /// `outputTokens` negative, fractional or above 10^9.
    BadOutputTokens,
    /// A failed row with no or an empty `reason`.
    MissingFailureReason,
    /// A failed or in-flight row with `completedMs`.
    CompletionOnUnfinished,
}

impl InvalidReason {
    /// Every reason, in listing order.
    pub const ALL: [InvalidReason; 16] = [
        InvalidReason::DuplicateId,
        InvalidReason::UnknownClass,
        InvalidReason::BadField,
        InvalidReason::TimestampOutOfRange,
        InvalidReason::FirstTokenBeforeArrival,
        InvalidReason::CompletionBeforeArrival,
        InvalidReason::CompletionBeforeFirstToken,
        InvalidReason::EndedBeforeArrival,
        InvalidReason::SpanTooLong,
        InvalidReason::MissingFirstToken,
        InvalidReason::MissingCompletion,
        InvalidReason::MissingOutputTokens,
        InvalidReason::CompletedWithoutTokens,
        InvalidReason::BadOutputTokens,
        InvalidReason::MissingFailureReason,
        InvalidReason::CompletionOnUnfinished,
    ];

    /// The reason's name in receipts.
    pub fn as_str(self) -> &'static str {
        match self {
            InvalidReason::DuplicateId => "duplicate_id",
            InvalidReason::UnknownClass => "unknown_class",
            InvalidReason::BadField => "bad_field",
            InvalidReason::TimestampOutOfRange => "timestamp_out_of_range",
            InvalidReason::FirstTokenBeforeArrival => "first_token_before_arrival",
            InvalidReason::CompletionBeforeArrival => "completion_before_arrival",
            InvalidReason::CompletionBeforeFirstToken => "completion_before_first_token",
            InvalidReason::EndedBeforeArrival => "ended_before_arrival",
            InvalidReason::SpanTooLong => "span_too_long",
            InvalidReason::MissingFirstToken => "missing_first_token",
            InvalidReason::MissingCompletion => "missing_completion",
            InvalidReason::MissingOutputTokens => "missing_output_tokens",
            InvalidReason::CompletedWithoutTokens => "completed_without_tokens",
            InvalidReason::BadOutputTokens => "bad_output_tokens",
            InvalidReason::MissingFailureReason => "missing_failure_reason",
            InvalidReason::CompletionOnUnfinished => "completion_on_unfinished",
        }
    }
}

/// A set of [`InvalidReason`]s; empty means the row is valid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InvalidSet(u32);

impl InvalidSet {
    /// Adds a reason.
    pub fn insert(&mut self, reason: InvalidReason) {
        self.0 |= 1 << reason as u8;
    }

    /// Whether the set holds `reason`.
    pub fn contains(self, reason: InvalidReason) -> bool {
        self.0 & (1 << reason as u8) != 0
    }

    /// Whether the row is valid.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The reasons, in listing order.
    pub fn iter(self) -> impl Iterator<Item = InvalidReason> {
        InvalidReason::ALL
            .into_iter()
            .filter(move |r| self.contains(*r))
    }
}

/// The row-level reasons of one row that need no other row: everything but
/// `duplicate_id` and `unknown_class`.
pub fn row_reasons(row: &RawRow, strings: &Interner) -> InvalidSet {
    use InvalidReason as R;
    let mut set = InvalidSet::default();
    if row.not_object {
        set.insert(R::BadField);
        return set;
    }
    // A string id of at most 128 bytes has at most 128 code points: count
    // characters only for long ids.
    let good_id = matches!(&row.id, Slot::Set(id)
        if !id.is_empty() && (id.len() <= MAX_ID_CHARS || id.chars().count() <= MAX_ID_CHARS));
    let good_status = matches!(
        row.status,
        Slot::Set(RawStatus::Completed | RawStatus::Failed | RawStatus::InFlight)
    );
    let bad_field = row.stray_field
        || !good_id
        || matches!(row.class, Slot::Bad)
        || row.arrival_ms.value().is_none()
        || !good_status
        || [
            row.first_token_ms,
            row.completed_ms,
            row.output_tokens,
            row.ended_ms,
        ]
        .iter()
        .any(|slot| slot.is_bad())
        || matches!(row.reason, Slot::Bad)
        || matches!(row.labels, Slot::Bad);
    if bad_field {
        set.insert(R::BadField);
    }

    let arrival = row.arrival_ms.value();
    let first = row.first_token_ms.value();
    let completed = row.completed_ms.value();
    let ended = row.ended_ms.value();
    if [arrival, first, completed, ended]
        .iter()
        .flatten()
        .any(|t| t.abs() > MAX_ABS_TIMESTAMP_MS)
    {
        set.insert(R::TimestampOutOfRange);
    }
    if let Some(a) = arrival {
        if first.is_some_and(|f| f < a) {
            set.insert(R::FirstTokenBeforeArrival);
        }
        if completed.is_some_and(|c| c < a) {
            set.insert(R::CompletionBeforeArrival);
        }
        if ended.is_some_and(|e| e < a) {
            set.insert(R::EndedBeforeArrival);
        }
        if [first, completed, ended]
            .iter()
            .flatten()
            .any(|t| t - a > MAX_SPAN_MS)
        {
            set.insert(R::SpanTooLong);
        }
    }
    if let (Some(f), Some(c)) = (first, completed) {
        if c < f {
            set.insert(R::CompletionBeforeFirstToken);
        }
    }
    if let Some(n) = row.output_tokens.value() {
        if n < 0.0 || n.fract() != 0.0 || n > MAX_OUTPUT_TOKENS {
            set.insert(R::BadOutputTokens);
        }
    }
    match row.status {
        Slot::Set(RawStatus::Completed) => {
            if !row.first_token_ms.is_present() {
                set.insert(R::MissingFirstToken);
            }
            if !row.completed_ms.is_present() {
                set.insert(R::MissingCompletion);
            }
            if !row.output_tokens.is_present() {
                set.insert(R::MissingOutputTokens);
            }
            if row.output_tokens.value() == Some(0.0) {
                set.insert(R::CompletedWithoutTokens);
            }
        }
        Slot::Set(RawStatus::Failed) => {
            match row.reason {
                Slot::Set(ix) if !strings.resolve(ix).is_empty() => {}
                Slot::Bad => {} // already bad_field: the reason is there, but unusable
                _ => set.insert(R::MissingFailureReason),
            }
            if row.completed_ms.is_present() {
                set.insert(R::CompletionOnUnfinished);
            }
        }
        Slot::Set(RawStatus::InFlight) if row.completed_ms.is_present() => {
            set.insert(R::CompletionOnUnfinished);
        }
        _ => {}
    }
    set
}

/// Marks every row whose string id occurs more than once (SPEC §3: whatever
/// else is wrong with it; ids compare exactly). One pass over a hash map from
/// id to the first row that used it: a repeat marks both rows.
pub fn duplicate_ids(rows: &[RawRow]) -> Vec<bool> {
    let mut first_use: FxHashMap<&str, usize> =
        FxHashMap::with_capacity_and_hasher(rows.len(), Default::default());
    let mut duplicate = vec![false; rows.len()];
    for (i, row) in rows.iter().enumerate() {
        if let Slot::Set(id) = &row.id {
            match first_use.entry(id) {
                std::collections::hash_map::Entry::Occupied(first) => {
                    duplicate[*first.get()] = true;
                    duplicate[i] = true;
                }
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(i);
                }
            }
        }
    }
    duplicate
}
