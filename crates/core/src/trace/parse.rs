//! Untrusted bytes → [`RawDocument`]: a single streaming pass with serde_json.
//!
//! Why not `serde_json::Value`? A million-row trace held as `Value` trees costs
//! several times the file size; rows here are read straight into the compact
//! [`RawRow`], field by field, without ever failing the document for a bad row.
//! Row-level problems (wrong types, nulls, unknown fields, rows that are not
//! objects) are recorded as [`Slot::Bad`] / flags and judged later by
//! `validate`, so a bad row makes that row invalid, never the whole trace.
//!
//! What does fail here is what makes the document unreadable (docs/contract.md §4.2): bad
//! JSON syntax, `NaN`/`Infinity`, a number overflowing a double, nesting deeper
//! than serde_json's recursion limit (128), trailing bytes.

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use crate::trace::model::{Scalar, MAX_GAPS_PER_ROW};
use crate::trace::Rejection;

/// A row field as read: absent, present but unusable (null or wrong type), or set.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum Slot<T> {
    /// The key was not in the row.
    #[default]
    Absent,
    /// The key was present with `null` or a value of the wrong type.
    Bad,
    /// The key was present with a value of the right type.
    Set(T),
}

impl<T> Slot<T> {
    /// The value, if set.
    pub fn get(&self) -> Option<&T> {
        match self {
            Slot::Set(v) => Some(v),
            _ => None,
        }
    }

    /// Whether the key was present at all.
    pub fn is_present(&self) -> bool {
        !matches!(self, Slot::Absent)
    }
}

/// A numeric row field in 8 bytes: JSON numbers are always finite, so two
/// NaN bit patterns can stand for "absent" and "present but unusable". Keeps a
/// million-row trace ~40 MB smaller than `Slot<f64>` would.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct NumSlot(u64);

const NUM_ABSENT: u64 = 0x7ff8_0000_0000_0a65;
const NUM_BAD: u64 = 0x7ff8_0000_0000_0bad;

impl NumSlot {
    /// The key was not in the row.
    pub const ABSENT: NumSlot = NumSlot(NUM_ABSENT);
    /// The key was present with `null` or a value of the wrong type.
    pub const BAD: NumSlot = NumSlot(NUM_BAD);

    /// A present number (finite, as every JSON number is).
    pub fn set(v: f64) -> NumSlot {
        if v.is_finite() {
            NumSlot(v.to_bits())
        } else {
            NumSlot::BAD
        }
    }

    /// The field as a [`Slot`].
    pub fn slot(self) -> Slot<f64> {
        match self.0 {
            NUM_ABSENT => Slot::Absent,
            NUM_BAD => Slot::Bad,
            bits => Slot::Set(f64::from_bits(bits)),
        }
    }

    /// The number, if set.
    pub fn value(self) -> Option<f64> {
        match self.slot() {
            Slot::Set(v) => Some(v),
            _ => None,
        }
    }

    /// Whether the key was present at all.
    pub fn is_present(self) -> bool {
        self.0 != NUM_ABSENT
    }

    /// Whether the key was present but unusable.
    pub fn is_bad(self) -> bool {
        self.0 == NUM_BAD
    }
}

impl Default for NumSlot {
    fn default() -> Self {
        NumSlot::ABSENT
    }
}

impl fmt::Debug for NumSlot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.slot().fmt(f)
    }
}

/// A row's `status` as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RawStatus {
    /// `"completed"`.
    Completed,
    /// `"failed"`.
    Failed,
    /// `"in_flight"`.
    InFlight,
    /// Any other string.
    Unknown,
}

/// Small strings that repeat across rows (class names, failure reasons) are
/// stored once; rows hold an index. Keeps a million-row trace compact.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    names: Vec<Box<str>>,
    index: rustc_hash::FxHashMap<Box<str>, u32>,
}

impl Interner {
    /// The index of `s`, adding it when new.
    pub fn intern(&mut self, s: &str) -> u32 {
        if let Some(&ix) = self.index.get(s) {
            return ix;
        }
        let ix = self.names.len() as u32;
        self.names.push(s.into());
        self.index.insert(s.into(), ix);
        ix
    }

    /// The string behind an index returned by [`Interner::intern`].
    pub fn resolve(&self, ix: u32) -> &str {
        &self.names[ix as usize]
    }
}

/// A row's labels as read, sorted by key (a boxed slice: smaller than a map).
pub type RowLabels = Box<[(Box<str>, Scalar)]>;

/// One row as read, before any judgement.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RawRow {
    /// The row was not a JSON object at all.
    pub not_object: bool,
    /// An unknown field, or a field given twice.
    pub stray_field: bool,
    /// `id`.
    pub id: Slot<Box<str>>,
    /// `class`, interned.
    pub class: Slot<u32>,
    /// `arrivalMs`.
    pub arrival_ms: NumSlot,
    /// `status`.
    pub status: Slot<RawStatus>,
    /// `firstTokenMs`.
    pub first_token_ms: NumSlot,
    /// `completedMs`.
    pub completed_ms: NumSlot,
    /// `outputTokens` (any finite number; integrality is judged later).
    pub output_tokens: NumSlot,
    /// `reason`, interned.
    pub reason: Slot<u32>,
    /// `endedMs`.
    pub ended_ms: NumSlot,
    /// `labels`, sorted by key.
    pub labels: Slot<RowLabels>,
    /// `gapsMs`: the gaps between token-carrying stream events, in order
    /// (`Bad`: not an array of numbers).
    pub gaps_ms: Slot<Box<[f64]>>,
    /// `gapsMs` held more than [`MAX_GAPS_PER_ROW`] numbers: only that many
    /// were kept, and the row is invalid (`too_many_gaps`).
    pub gaps_over_cap: bool,
    /// `firstAnswerMs`: the first answer (content) token, after any reasoning.
    pub first_answer_ms: NumSlot,
    /// `reasoningTokens` (any finite number; integrality is judged later).
    pub reasoning_tokens: NumSlot,
}

/// The `rows` member as read.
#[derive(Debug, Default)]
pub enum RowsField {
    /// No `rows` key.
    #[default]
    Missing,
    /// `rows` was present but not an array; the JSON type found.
    NotArray(&'static str),
    /// The rows, in document order.
    Rows(Vec<RawRow>),
}

/// A trace document as read: every top-level member but `rows` as a small
/// `Value` (validated next), and the rows in compact form.
#[derive(Debug, Default)]
pub struct RawDocument {
    /// The JSON type of the top level when it is not an object.
    pub not_object: Option<&'static str>,
    /// Top-level members other than `rows`.
    pub members: BTreeMap<String, Value>,
    /// The first top-level key given twice, if any.
    pub duplicate_member: Option<String>,
    /// The `rows` member.
    pub rows: RowsField,
    /// Interned class names and failure reasons.
    pub strings: Interner,
}

/// Where the streaming parser is, for naming the place of a syntax error.
#[derive(Default)]
struct Cursor {
    in_rows: Cell<bool>,
    row: Cell<usize>,
    member: std::cell::RefCell<String>,
}

/// Reads `bytes` as a trace document. Fails only when the bytes are not one
/// readable JSON value (docs/contract.md §4.2); everything else is left to `validate`.
pub fn parse(bytes: &[u8]) -> Result<RawDocument, Rejection> {
    if goodput_util::json::starts_with_bom(bytes) {
        return Err(Rejection::at("", goodput_util::json::BOM_MESSAGE));
    }
    let cursor = Cursor::default();
    let mut strings = Interner::default();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result = de
        .deserialize_any(TopVisitor {
            cursor: &cursor,
            strings: &mut strings,
        })
        .and_then(|doc| de.end().map(|()| doc));
    match result {
        Ok(mut doc) => {
            doc.strings = strings;
            Ok(doc)
        }
        Err(err) => {
            let near = if cursor.in_rows.get() {
                format!("/rows/{}", cursor.row.get())
            } else {
                let member = cursor.member.borrow();
                if member.is_empty() {
                    String::new()
                } else {
                    format!("/{}", goodput_util::pointer::escape(&member))
                }
            };
            Err(Rejection::unreadable(&err, near))
        }
    }
}

fn json_type_of_unexpected(kind: &de::Unexpected<'_>) -> &'static str {
    match kind {
        de::Unexpected::Bool(_) => "a boolean",
        de::Unexpected::Unsigned(_) | de::Unexpected::Signed(_) | de::Unexpected::Float(_) => {
            "a number"
        }
        de::Unexpected::Str(_) => "a string",
        de::Unexpected::Unit => "null",
        de::Unexpected::Seq => "an array",
        de::Unexpected::Map => "an object",
        _ => "something else",
    }
}

/// Implements the scalar `visit_*` methods of a visitor whose `Value` is built
/// from the JSON type found by `$make(type_name)`.
macro_rules! scalars_as {
    ($make:expr) => {
        fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
            Ok($make(json_type_of_unexpected(&de::Unexpected::Bool(v))))
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($make("a number"))
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($make("a number"))
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($make("a number"))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok($make("a string"))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($make("null"))
        }
    };
}

struct TopVisitor<'a> {
    cursor: &'a Cursor,
    strings: &'a mut Interner,
}

impl<'de> Visitor<'de> for TopVisitor<'_> {
    type Value = RawDocument;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a trace document")
    }

    scalars_as!(|kind| RawDocument {
        not_object: Some(kind),
        ..RawDocument::default()
    });

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawDocument, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(RawDocument {
            not_object: Some("an array"),
            ..RawDocument::default()
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawDocument, A::Error> {
        let mut doc = RawDocument::default();
        let mut saw_rows = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            if key == "rows" {
                self.cursor.in_rows.set(true);
                let rows = map.next_value_seed(RowsSeed {
                    cursor: self.cursor,
                    strings: &mut *self.strings,
                })?;
                self.cursor.in_rows.set(false);
                if saw_rows && doc.duplicate_member.is_none() {
                    doc.duplicate_member = Some("rows".to_owned());
                }
                saw_rows = true;
                doc.rows = rows;
            } else {
                {
                    let mut member = self.cursor.member.borrow_mut();
                    member.clear();
                    member.push_str(&key);
                }
                let value: Value = map.next_value()?;
                self.cursor.member.borrow_mut().clear();
                let key = key.into_owned();
                if doc.members.contains_key(&key) && doc.duplicate_member.is_none() {
                    doc.duplicate_member = Some(key.clone());
                }
                doc.members.insert(key, value);
            }
        }
        Ok(doc)
    }
}

struct RowsSeed<'a> {
    cursor: &'a Cursor,
    strings: &'a mut Interner,
}

impl<'de> DeserializeSeed<'de> for RowsSeed<'_> {
    type Value = RowsField;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RowsField, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RowsSeed<'_> {
    type Value = RowsField;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of rows")
    }

    scalars_as!(RowsField::NotArray);

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RowsField, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(RowsField::NotArray("an object"))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RowsField, A::Error> {
        let mut rows = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        loop {
            self.cursor.row.set(rows.len());
            match seq.next_element_seed(RowSeed {
                strings: &mut *self.strings,
            })? {
                Some(row) => rows.push(row),
                None => break,
            }
        }
        Ok(RowsField::Rows(rows))
    }
}

/// Row keys, matched without allocating.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RowKey {
    Id,
    Class,
    ArrivalMs,
    Status,
    FirstTokenMs,
    CompletedMs,
    OutputTokens,
    Reason,
    EndedMs,
    Labels,
    GapsMs,
    FirstAnswerMs,
    ReasoningTokens,
    Unknown,
}

impl RowKey {
    fn from_name(s: &str) -> RowKey {
        match s {
            "id" => RowKey::Id,
            "class" => RowKey::Class,
            "arrivalMs" => RowKey::ArrivalMs,
            "status" => RowKey::Status,
            "firstTokenMs" => RowKey::FirstTokenMs,
            "completedMs" => RowKey::CompletedMs,
            "outputTokens" => RowKey::OutputTokens,
            "reason" => RowKey::Reason,
            "endedMs" => RowKey::EndedMs,
            "labels" => RowKey::Labels,
            "gapsMs" => RowKey::GapsMs,
            "firstAnswerMs" => RowKey::FirstAnswerMs,
            "reasoningTokens" => RowKey::ReasoningTokens,
            _ => RowKey::Unknown,
        }
    }
}

impl<'de> de::Deserialize<'de> for RowKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RowKey, D::Error> {
        struct KeyVisitor;
        impl Visitor<'_> for KeyVisitor {
            type Value = RowKey;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<RowKey, E> {
                Ok(RowKey::from_name(s))
            }
        }
        d.deserialize_str(KeyVisitor)
    }
}

/// Any JSON value, keeping only what a row field can use; strings are
/// borrowed from the input when they contain no escapes.
enum Lenient<'de> {
    Unusable,
    Bool(bool),
    Number(f64),
    Str(Cow<'de, str>),
}

impl<'de> de::Deserialize<'de> for Lenient<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Lenient<'de>, D::Error> {
        struct LenientVisitor;
        impl<'de> Visitor<'de> for LenientVisitor {
            type Value = Lenient<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Lenient<'de>, E> {
                Ok(Lenient::Bool(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Lenient<'de>, E> {
                Ok(Lenient::Number(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Lenient<'de>, E> {
                Ok(Lenient::Number(v as f64))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Lenient<'de>, E> {
                Ok(Lenient::Number(v))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Lenient<'de>, E> {
                Ok(Lenient::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Lenient<'de>, E> {
                Ok(Lenient::Str(Cow::Owned(v.to_owned())))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Lenient<'de>, E> {
                Ok(Lenient::Unusable)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Lenient<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Lenient::Unusable)
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Lenient<'de>, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Lenient::Unusable)
            }
        }
        d.deserialize_any(LenientVisitor)
    }
}

impl Lenient<'_> {
    fn number(self) -> NumSlot {
        match self {
            Lenient::Number(v) => NumSlot::set(v),
            _ => NumSlot::BAD,
        }
    }
}

struct RowSeed<'a> {
    strings: &'a mut Interner,
}

impl<'de> DeserializeSeed<'de> for RowSeed<'_> {
    type Value = RawRow;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<RawRow, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for RowSeed<'_> {
    type Value = RawRow;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a row")
    }

    scalars_as!(|_| RawRow {
        not_object: true,
        ..RawRow::default()
    });

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<RawRow, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(RawRow {
            not_object: true,
            ..RawRow::default()
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawRow, A::Error> {
        let mut row = RawRow::default();
        let mut seen: u16 = 0;
        while let Some(key) = map.next_key::<RowKey>()? {
            if key == RowKey::Unknown {
                map.next_value::<IgnoredAny>()?;
                row.stray_field = true;
                continue;
            }
            let bit = 1u16 << (key as u16);
            if seen & bit != 0 {
                row.stray_field = true;
            }
            seen |= bit;
            if key == RowKey::Labels {
                row.labels = map.next_value_seed(LabelsSeed)?;
                continue;
            }
            if key == RowKey::GapsMs {
                (row.gaps_ms, row.gaps_over_cap) = map.next_value_seed(GapsSeed)?;
                continue;
            }
            let value: Lenient<'de> = map.next_value()?;
            match key {
                RowKey::Id => {
                    row.id = match value {
                        Lenient::Str(s) => Slot::Set(s.into()),
                        _ => Slot::Bad,
                    }
                }
                RowKey::Class => {
                    row.class = match value {
                        Lenient::Str(s) => Slot::Set(self.strings.intern(&s)),
                        _ => Slot::Bad,
                    }
                }
                RowKey::Reason => {
                    row.reason = match value {
                        Lenient::Str(s) => Slot::Set(self.strings.intern(&s)),
                        _ => Slot::Bad,
                    }
                }
                RowKey::Status => {
                    row.status = match value {
                        Lenient::Str(s) => Slot::Set(match &*s {
                            "completed" => RawStatus::Completed,
                            "failed" => RawStatus::Failed,
                            "in_flight" => RawStatus::InFlight,
                            _ => RawStatus::Unknown,
                        }),
                        _ => Slot::Bad,
                    }
                }
                RowKey::ArrivalMs => row.arrival_ms = value.number(),
                RowKey::FirstTokenMs => row.first_token_ms = value.number(),
                RowKey::CompletedMs => row.completed_ms = value.number(),
                RowKey::OutputTokens => row.output_tokens = value.number(),
                RowKey::EndedMs => row.ended_ms = value.number(),
                RowKey::FirstAnswerMs => row.first_answer_ms = value.number(),
                RowKey::ReasoningTokens => row.reasoning_tokens = value.number(),
                RowKey::Labels | RowKey::GapsMs | RowKey::Unknown => {}
            }
        }
        Ok(row)
    }
}

/// Reads `gapsMs` straight into a boxed slice of doubles (never a `Value`
/// tree), keeping at most [`MAX_GAPS_PER_ROW`] of them; the flag says more
/// were given. Anything but an array of numbers is `Bad`.
struct GapsSeed;

impl<'de> DeserializeSeed<'de> for GapsSeed {
    type Value = (Slot<Box<[f64]>>, bool);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for GapsSeed {
    type Value = (Slot<Box<[f64]>>, bool);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of gaps in ms")
    }

    scalars_as!(|_| (Slot::Bad, false));

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok((Slot::Bad, false))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut gaps: Vec<f64> = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        let (mut bad, mut over_cap) = (false, false);
        while let Some(value) = seq.next_element::<Lenient<'de>>()? {
            match value {
                Lenient::Number(v) if gaps.len() < MAX_GAPS_PER_ROW => gaps.push(v),
                Lenient::Number(_) => over_cap = true,
                _ => bad = true,
            }
        }
        if bad {
            return Ok((Slot::Bad, over_cap));
        }
        Ok((Slot::Set(gaps.into_boxed_slice()), over_cap))
    }
}

struct LabelsSeed;

impl<'de> DeserializeSeed<'de> for LabelsSeed {
    type Value = Slot<RowLabels>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LabelsSeed {
    type Value = Slot<RowLabels>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object of labels")
    }

    scalars_as!(|_| Slot::Bad);

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Slot::Bad)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut labels: Vec<(Box<str>, Scalar)> = Vec::new();
        let mut bad = false;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let value: Lenient<'de> = map.next_value()?;
            let scalar = match value {
                Lenient::Bool(b) => Scalar::Bool(b),
                Lenient::Number(n) => Scalar::Number(n),
                Lenient::Str(s) => Scalar::String(s.into_owned()),
                Lenient::Unusable => {
                    bad = true;
                    continue;
                }
            };
            labels.push((key.into(), scalar));
        }
        labels.sort_by(|a, b| a.0.cmp(&b.0));
        if bad || labels.windows(2).any(|w| w[0].0 == w[1].0) {
            return Ok(Slot::Bad);
        }
        Ok(Slot::Set(labels.into_boxed_slice()))
    }
}

impl Interner {
    /// How many distinct strings are interned.
    pub fn len(&self) -> usize {
        self.names.len()
    }

    /// Whether nothing is interned.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }
}
