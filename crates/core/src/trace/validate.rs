//! The rules of docs/contract.md §3–§5: document-level checks (a failure rejects the whole
//! trace, naming a JSON pointer) and row-level checks (a failure makes only that
//! row invalid, with every reason that applies).
//!
//! Document checks run in a fixed order, so the "first problem" is well defined
//! whatever the key order of the input: top-level type, `schema`, unknown or
//! repeated top-level members, `rows` (presence, type, row limit), `window`,
//! `warmup`, `equality`, `classes`, `defaultClass`, `tokens`, `boundary`,
//! `workload`, `phases`, `resources`, `quality`, and last whether rows without a `class` can be resolved.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

use serde_json::{Map, Value};

use crate::trace::model::{
    Contract, Equality, Gates, Labels, Scalar, TokenCount, Warmup, GAP_SUM_TOLERANCE_MS,
    MAX_ABS_TIMESTAMP_MS, MAX_CLASS_CHARS, MAX_ID_CHARS, MAX_OUTPUT_TOKENS, MAX_SPAN_MS,
    TRACE_SCHEMA,
};
use crate::trace::parse::{Interner, RawDocument, RawRow, RawStatus, RowsField, Slot};
use crate::trace::{only_fields, Limits, Rejection};
use goodput_util::pointer::escape;

const TOP_LEVEL_FIELDS: [&str; 14] = [
    "schema",
    "window",
    "warmup",
    "equality",
    "classes",
    "defaultClass",
    "tokens",
    "streamed",
    "boundary",
    "workload",
    "phases",
    "resources",
    "quality",
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

/// The top-level members other than `rows`, as read.
type Members = BTreeMap<String, Value>;

/// Checks every document-level rule, in the documented order (see the
/// module doc): each step below returns the first problem it finds, so the
/// first step that fails names the document's first problem.
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
    schema(m)?;
    top_level_members(m, doc.duplicate_member.as_deref())?;
    let rows = rows_within_limit(doc.rows, limits)?;
    let (start_ms, end_ms, horizon_ms) = window(m)?;
    let warmup = warmup(m, start_ms)?;
    let equality = equality(m)?;
    let classes = classes(m)?;
    let default_class = default_class(m, &classes)?;
    let tokens = tokens(m)?;
    let streamed = streamed(m, &classes)?;
    let boundary = optional_labels(m, "boundary")?;
    let workload = optional_labels(m, "workload")?;
    no_warmup_without_arrivals(&boundary, warmup.as_ref())?;
    let phases = crate::trace::phases::validate_phases(m.get("phases"))?;
    no_phases_without_arrivals(&boundary, &phases)?;
    let resources = crate::trace::phases::validate_resources(m.get("resources"))?;
    let quality = quality_ref(m.get("quality"))?;
    classes_resolve(&rows, &classes, default_class.as_deref())?;
    let contract = Contract {
        start_ms,
        end_ms,
        horizon_ms,
        warmup,
        equality,
        classes,
        default_class,
        tokens,
        streamed,
        boundary,
        workload,
        phases,
        resources,
        quality,
    };
    Ok((contract, rows, doc.strings))
}

/// `quality` (absent or null: none): `{sidecar, sha256}`, the sidecar a
/// plain file name beside the trace, the sha256 64 lower-case hex digits
/// (docs/contract.md §10.19).
fn quality_ref(v: Option<&Value>) -> Result<Option<crate::trace::QualityRef>, Rejection> {
    let obj = match v {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => object(v, "/quality")?,
    };
    only_fields(obj, "/quality", &["sidecar", "sha256"])?;
    let text = |key: &str| match obj.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(Rejection::at(
            format!("/quality/{key}"),
            format_args!("must be a string, found {}", type_name(other)),
        )),
        None => Err(Rejection::at(format!("/quality/{key}"), "is missing")),
    };
    let sidecar = text("sidecar")?;
    if sidecar.is_empty()
        || sidecar.len() > 255
        || sidecar.contains(['/', '\\'])
        || sidecar == "."
        || sidecar == ".."
    {
        return Err(Rejection::at(
            "/quality/sidecar",
            "must be a file name beside the trace (1 to 255 bytes, no path separator)",
        ));
    }
    let sha256 = text("sha256")?;
    if sha256.len() != 64
        || !sha256
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err(Rejection::at(
            "/quality/sha256",
            "must be 64 lower-case hex digits",
        ));
    }
    Ok(Some(crate::trace::QualityRef { sidecar, sha256 }))
}

/// A warm-up needs arrival instants: a trace declaring `boundary.arrival =
/// "unknown"` (every `arrivalMs` is the window start) cannot exclude by one.
fn no_warmup_without_arrivals(boundary: &Labels, warmup: Option<&Warmup>) -> Result<(), Rejection> {
    let arrivals_unknown = matches!(
        boundary.get("arrival"),
        Some(Scalar::String(s)) if s == crate::trace::model::ARRIVAL_UNKNOWN
    );
    if arrivals_unknown && warmup.is_some() {
        return Err(Rejection::at(
            "/warmup",
            "cannot be applied: boundary.arrival is \"unknown\", so no row has an arrival \
             instant to compare with it",
        ));
    }
    Ok(())
}

/// Phases need arrival instants too: recovery and its time bins measure from
/// a phase's end, which a trace without arrival instants cannot place.
fn no_phases_without_arrivals(
    boundary: &Labels,
    phases: &[crate::trace::phases::Phase],
) -> Result<(), Rejection> {
    let arrivals_unknown = matches!(
        boundary.get("arrival"),
        Some(Scalar::String(s)) if s == crate::trace::model::ARRIVAL_UNKNOWN
    );
    if arrivals_unknown && !phases.is_empty() {
        return Err(Rejection::at(
            "/phases",
            "cannot be applied: boundary.arrival is \"unknown\", so no row has an arrival \
             instant to place in a phase",
        ));
    }
    Ok(())
}

/// `schema` names the one trace schema this tool reads.
fn schema(m: &Members) -> Result<(), Rejection> {
    match m.get("schema") {
        None => Err(Rejection::at(
            "/schema",
            format_args!("is missing (expected \"{TRACE_SCHEMA}\")"),
        )),
        Some(Value::String(s)) if s == TRACE_SCHEMA => Ok(()),
        Some(other) => Err(Rejection::at(
            "/schema",
            format_args!("is {other}, not a schema this tool reads (expected \"{TRACE_SCHEMA}\")"),
        )),
    }
}

/// Every top-level member is a known field, and none is given twice.
fn top_level_members(m: &Members, duplicate: Option<&str>) -> Result<(), Rejection> {
    if let Some(k) = m.keys().find(|k| !TOP_LEVEL_FIELDS.contains(&k.as_str())) {
        return Err(Rejection::at(
            format!("/{}", escape(k)),
            format_args!(
                "is not a known field (expected one of: {})",
                TOP_LEVEL_FIELDS.join(", ")
            ),
        ));
    }
    match duplicate {
        Some(k) => Err(Rejection::at(
            format!("/{}", escape(k)),
            "appears more than once",
        )),
        None => Ok(()),
    }
}

/// `rows` is an array of at most `limits.max_rows` rows.
fn rows_within_limit(rows: RowsField, limits: Limits) -> Result<Vec<RawRow>, Rejection> {
    let rows = match rows {
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
                "has {} rows, over the limit of {} (raise it with --max-rows or {})",
                rows.len(),
                limits.max_rows,
                Limits::ROWS_VARIABLE
            ),
        ));
    }
    Ok(rows)
}

/// `window`: start, end and horizon (the end when absent or null), ordered
/// and within 24 h of the start. Returns `(start_ms, end_ms, horizon_ms)`.
fn window(m: &Members) -> Result<(f64, f64, f64), Rejection> {
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
    Ok((start_ms, end_ms, horizon_ms))
}

/// `warmup` (optional): an ordered interval that ends by the window start.
fn warmup(m: &Members, window_start_ms: f64) -> Result<Option<Warmup>, Rejection> {
    let v = match m.get("warmup") {
        None | Some(Value::Null) => return Ok(None),
        Some(v) => v,
    };
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
    if we > window_start_ms {
        return Err(Rejection::at(
            "/warmup/endMs",
            "must be at most /window/startMs",
        ));
    }
    Ok(Some(Warmup {
        start_ms: ws,
        end_ms: we,
    }))
}

/// `equality`: required, `"inclusive"` or `"strict"` (no default: a value
/// equal to its gate must pass or miss by declaration, never by accident).
fn equality(m: &Members) -> Result<Equality, Rejection> {
    match m.get("equality") {
        None => Err(Rejection::at(
            "/equality",
            "is missing: declare \"inclusive\" (value == gate passes) or \"strict\" (value == gate misses)",
        )),
        Some(Value::String(s)) if s == "inclusive" => Ok(Equality::Inclusive),
        Some(Value::String(s)) if s == "strict" => Ok(Equality::Strict),
        Some(other) => Err(Rejection::at(
            "/equality",
            format_args!("is {other}; it must be \"inclusive\" or \"strict\""),
        )),
    }
}

/// `classes`: at least one named class, each with its three gates.
fn classes(m: &Members) -> Result<BTreeMap<String, Gates>, Rejection> {
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
        // At most 128 bytes means at most 128 code points: count only long names.
        if name.len() > MAX_CLASS_CHARS && name.chars().count() > MAX_CLASS_CHARS {
            return Err(Rejection::at(
                ptr,
                format_args!(
                    "is a class name of {} characters; at most {MAX_CLASS_CHARS} are allowed",
                    name.chars().count()
                ),
            ));
        }
        classes.insert(name.clone(), class_gates(gates_v, &ptr)?);
    }
    Ok(classes)
}

/// One class's gates: an object with exactly `ttftMs`, `tpotMs` and
/// `e2eMs`, and optionally `stallMs` and `tokenDeadlineMs`.
fn class_gates(v: &Value, ptr: &str) -> Result<Gates, Rejection> {
    let g = object(v, ptr)?;
    only_fields(
        g,
        ptr,
        &[
            "ttftMs",
            "tpotMs",
            "e2eMs",
            "stallMs",
            "tokenDeadlineMs",
            "ttfaMs",
        ],
    )?;
    let optional = |key: &str| match g.get(key) {
        None => Ok(None),
        Some(_) => gate(g, ptr, key),
    };
    Ok(Gates {
        ttft_ms: gate(g, ptr, "ttftMs")?,
        tpot_ms: gate(g, ptr, "tpotMs")?,
        e2e_ms: gate(g, ptr, "e2eMs")?,
        stall_ms: optional("stallMs")?,
        token_deadline_ms: optional("tokenDeadlineMs")?,
        ttfa_ms: optional("ttfaMs")?,
    })
}

/// One gate: present, and either null (no gate) or a finite number >= 0.
fn gate(g: &Map<String, Value>, ptr: &str, key: &str) -> Result<Option<f64>, Rejection> {
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
}

/// `defaultClass` (optional): the name of a declared class.
fn default_class(
    m: &Members,
    classes: &BTreeMap<String, Gates>,
) -> Result<Option<String>, Rejection> {
    match m.get("defaultClass") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if classes.contains_key(s) => Ok(Some(s.clone())),
        Some(Value::String(s)) => Err(Rejection::at(
            "/defaultClass",
            format_args!(
                "names \"{}\", which is not a declared class",
                goodput_util::escape::terminal(s)
            ),
        )),
        Some(other) => Err(Rejection::at(
            "/defaultClass",
            format_args!("must be a class name, found {}", type_name(other)),
        )),
    }
}

/// `tokens` (optional, `"usage"` by default): how output tokens were counted.
fn tokens(m: &Members) -> Result<TokenCount, Rejection> {
    match m.get("tokens") {
        None => Ok(TokenCount::Usage),
        Some(Value::String(s)) if s == "usage" => Ok(TokenCount::Usage),
        Some(Value::String(s)) if s == "chunks" => Ok(TokenCount::Chunks),
        Some(Value::String(s)) if s == "client-tokenizer" => Ok(TokenCount::ClientTokenizer),
        Some(other) => Err(Rejection::at(
            "/tokens",
            format_args!("is {other}; it must be \"usage\", \"chunks\" or \"client-tokenizer\""),
        )),
    }
}

/// `streamed` (optional, `true` by default): `false` declares responses that
/// are not streamed (embeddings), which have no first token, so a class of
/// such a trace may gate only E2E (docs/contract.md §10.16): a token gate
/// there could never be judged, and is refused rather than left silent.
fn streamed(m: &Members, classes: &BTreeMap<String, Gates>) -> Result<bool, Rejection> {
    let streamed = match m.get("streamed") {
        None | Some(Value::Bool(true)) => return Ok(true),
        Some(Value::Bool(false)) => false,
        Some(other) => {
            return Err(Rejection::at(
                "/streamed",
                format_args!("must be true or false, found {}", type_name(other)),
            ))
        }
    };
    for (name, gates) in classes {
        let token_gates = [
            ("ttftMs", gates.ttft_ms),
            ("tpotMs", gates.tpot_ms),
            ("ttfaMs", gates.ttfa_ms),
            ("stallMs", gates.stall_ms),
        ];
        if let Some((key, _)) = token_gates.iter().find(|(_, g)| g.is_some()) {
            return Err(Rejection::at(
                format!("/classes/{}/{key}", escape(name)),
                "must be null: the trace declares streamed: false (no first token), so only e2eMs can be judged",
            ));
        }
    }
    Ok(streamed)
}

/// An optional labels member (`boundary`, `workload`); empty when absent.
fn optional_labels(m: &Members, key: &str) -> Result<Labels, Rejection> {
    match m.get(key) {
        None => Ok(Labels::new()),
        Some(v) => labels(v, &format!("/{key}")),
    }
}

/// With several classes and no `defaultClass`, every row (that is an object)
/// must name its class; otherwise the first row that does not is the problem.
fn classes_resolve(
    rows: &[RawRow],
    classes: &BTreeMap<String, Gates>,
    default_class: Option<&str>,
) -> Result<(), Rejection> {
    if default_class.is_some() || classes.len() <= 1 {
        return Ok(());
    }
    match rows
        .iter()
        .position(|r| !r.not_object && matches!(r.class, Slot::Absent))
    {
        Some(i) => Err(Rejection::at(
            "/defaultClass",
            format_args!(
                "is required: {} classes are declared and /rows/{i} names no class",
                classes.len()
            ),
        )),
        None => Ok(()),
    }
}

/// Why a row is invalid (docs/contract.md §5.2). The declaration order is the order in which
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
    /// A negative number in `gapsMs`.
    NegativeGap,
    /// More `gapsMs` than `outputTokens − 1`, or more than the per-row cap.
    TooManyGaps,
    /// `gapsMs` sum to more than `completedMs − firstTokenMs` (beyond 1 µs).
    GapsExceedSpan,
    /// `firstAnswerMs` before `firstTokenMs`, or without one: an answer
    /// token is a model token, so the first token of any kind comes no later.
    FirstAnswerBeforeFirstToken,
    /// `completedMs` before `firstAnswerMs`.
    CompletionBeforeFirstAnswer,
    /// `reasoningTokens` not an integer in `[0, outputTokens]`.
    BadReasoningTokens,
    /// `firstTokenMs`, `firstAnswerMs` or `gapsMs` on a row of a trace that
    /// declares `streamed: false` (no token instants exist there).
    TokenTimesOnUnstreamed,
}

impl InvalidReason {
    /// Every reason, in listing order.
    pub const ALL: [InvalidReason; 23] = [
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
        InvalidReason::NegativeGap,
        InvalidReason::TooManyGaps,
        InvalidReason::GapsExceedSpan,
        InvalidReason::FirstAnswerBeforeFirstToken,
        InvalidReason::CompletionBeforeFirstAnswer,
        InvalidReason::BadReasoningTokens,
        InvalidReason::TokenTimesOnUnstreamed,
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
            InvalidReason::NegativeGap => "negative_gap",
            InvalidReason::TooManyGaps => "too_many_gaps",
            InvalidReason::GapsExceedSpan => "gaps_exceed_span",
            InvalidReason::FirstAnswerBeforeFirstToken => "first_answer_before_first_token",
            InvalidReason::CompletionBeforeFirstAnswer => "completion_before_first_answer",
            InvalidReason::BadReasoningTokens => "bad_reasoning_tokens",
            InvalidReason::TokenTimesOnUnstreamed => "token_times_on_unstreamed",
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
/// `duplicate_id` and `unknown_class`. `streamed` is the document's
/// `streamed` (false: no token instants, and no tokens required).
pub fn row_reasons(row: &RawRow, strings: &Interner, streamed: bool) -> InvalidSet {
    let mut set = InvalidSet::default();
    if row.not_object {
        set.insert(InvalidReason::BadField);
        return set;
    }
    if has_bad_field(row) {
        set.insert(InvalidReason::BadField);
    }
    time_reasons(row, &mut set);
    if let Some(n) = row.output_tokens.value() {
        if n < 0.0 || n.fract() != 0.0 || n > MAX_OUTPUT_TOKENS {
            set.insert(InvalidReason::BadOutputTokens);
        }
    }
    status_reasons(row, strings, streamed, &mut set);
    gap_reasons(row, &mut set);
    answer_reasons(row, &mut set);
    if !streamed
        && (row.first_token_ms.is_present()
            || row.first_answer_ms.is_present()
            || row.gaps_ms.is_present())
    {
        set.insert(InvalidReason::TokenTimesOnUnstreamed);
    }
    set
}

/// `firstAnswerMs` and `reasoningTokens` (docs/contract.md §10.16): the
/// first answer token no earlier than the first token of any kind and no
/// later than the completion; reasoning tokens a whole number no larger
/// than the output they are part of.
fn answer_reasons(row: &RawRow, set: &mut InvalidSet) {
    use InvalidReason as R;
    if let Some(answer) = row.first_answer_ms.value() {
        if row.first_token_ms.value().is_none_or(|f| answer < f) {
            set.insert(R::FirstAnswerBeforeFirstToken);
        }
        if row.completed_ms.value().is_some_and(|c| c < answer) {
            set.insert(R::CompletionBeforeFirstAnswer);
        }
    }
    if let Some(n) = row.reasoning_tokens.value() {
        let over = row.output_tokens.value().is_some_and(|out| n > out);
        if n < 0.0 || n.fract() != 0.0 || n > MAX_OUTPUT_TOKENS || over {
            set.insert(R::BadReasoningTokens);
        }
    }
}

/// `gapsMs`: every gap ≥ 0, at most `outputTokens − 1` of them (and at most
/// the per-row cap), and together no longer than first token → completion,
/// within [`GAP_SUM_TOLERANCE_MS`] (docs/contract.md §10.15).
fn gap_reasons(row: &RawRow, set: &mut InvalidSet) {
    use InvalidReason as R;
    if row.gaps_over_cap {
        set.insert(R::TooManyGaps);
    }
    let Slot::Set(gaps) = &row.gaps_ms else {
        return;
    };
    if gaps.iter().any(|g| *g < 0.0) {
        set.insert(R::NegativeGap);
    }
    if let Some(n) = row.output_tokens.value() {
        if gaps.len() as f64 > n - 1.0 && !gaps.is_empty() {
            set.insert(R::TooManyGaps);
        }
    }
    if let (Some(f), Some(c)) = (row.first_token_ms.value(), row.completed_ms.value()) {
        let sum: f64 = gaps.iter().sum();
        if sum > c - f + GAP_SUM_TOLERANCE_MS {
            set.insert(R::GapsExceedSpan);
        }
    }
}

/// `bad_field`: a stray field, an unusable id, class or status, a missing
/// arrival, or a field of the wrong type.
fn has_bad_field(row: &RawRow) -> bool {
    // A string id of at most 128 bytes has at most 128 code points: count
    // characters only for long ids.
    let good_id = matches!(&row.id, Slot::Set(id)
        if !id.is_empty() && (id.len() <= MAX_ID_CHARS || id.chars().count() <= MAX_ID_CHARS));
    let good_status = matches!(
        row.status,
        Slot::Set(RawStatus::Completed | RawStatus::Failed | RawStatus::InFlight)
    );
    row.stray_field
        || !good_id
        || matches!(row.class, Slot::Bad)
        || row.arrival_ms.value().is_none()
        || !good_status
        || [
            row.first_token_ms,
            row.completed_ms,
            row.output_tokens,
            row.ended_ms,
            row.first_answer_ms,
            row.reasoning_tokens,
        ]
        .iter()
        .any(|slot| slot.is_bad())
        || matches!(row.reason, Slot::Bad)
        || matches!(row.labels, Slot::Bad)
        || matches!(row.gaps_ms, Slot::Bad)
}

/// The timestamps: in range, in order (arrival ≤ first token ≤ completion,
/// arrival ≤ end), and within 24 h of the arrival.
fn time_reasons(row: &RawRow, set: &mut InvalidSet) {
    use InvalidReason as R;
    let arrival = row.arrival_ms.value();
    let first = row.first_token_ms.value();
    let completed = row.completed_ms.value();
    let ended = row.ended_ms.value();
    let answer = row.first_answer_ms.value();
    if [arrival, first, completed, ended, answer]
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
        if [first, completed, ended, answer]
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
}

/// What each status requires: a completed row its first token, completion
/// and tokens (at least one); a failed row its reason; an unfinished row no
/// completion.
fn status_reasons(row: &RawRow, strings: &Interner, streamed: bool, set: &mut InvalidSet) {
    use InvalidReason as R;
    match row.status {
        Slot::Set(RawStatus::Completed) => {
            if !row.completed_ms.is_present() {
                set.insert(R::MissingCompletion);
            }
            if !streamed {
                // An unstreamed response (embeddings) has no first token
                // and may have no output tokens at all.
                return;
            }
            if !row.first_token_ms.is_present() {
                set.insert(R::MissingFirstToken);
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
}

/// Marks every row whose string id occurs more than once (docs/contract.md §5.2: whatever
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
