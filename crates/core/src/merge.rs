//! Merging the traces of the shards of one schedule (`record --shard K/N`)
//! into the one trace a single recorder would have written
//! (`docs/contract.md` §10.6).
//!
//! A merge is refused, naming the file, unless the shards are exactly the
//! N shards of one recording:
//! - the same document apart from the shard's own figures: window, warm-up,
//!   horizon, equality, gates, token mode, phases, resources, every
//!   `workload` label (seed, TLS, header names, extra body,
//!   rate, arrival process, schedule hash and size, start instant, shard
//!   count…) but `scheduled`, every `boundary` label but the shard's
//!   number and clock figures; an interrupted or recovered shard has a cut
//!   window and is refused for it;
//! - shards `0` to `N − 1`, each exactly once;
//! - shard K holding exactly the requests `i ≡ K (mod N)` of the schedule's
//!   `scheduleSize`, in order, with ids `r<i>-s<K>` (so no id is in two
//!   shards).
//!
//! The merged trace holds every request of the schedule once, in schedule
//! order (request `i` is row `i div N` of shard `i mod N`); its `boundary`
//! declares `shards` and, for each K, `shard<K>OffsetMs`, `shard<K>SkewPpm`
//! and `shard<K>StartLateMs` as that shard measured them; `workload.scheduled`
//! is the whole schedule.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::trace::write::{TraceDoc, TraceRow, TRACE_SCHEMA};
use crate::trace::{Equality, Gates, Labels, Phase, Resources, Scalar, TokenCount, Warmup, Window};

/// A shard's own `boundary` labels: they differ between shards by design.
const SHARD_OWN: [&str; 4] = ["shard", "shardOffsetMs", "shardSkewPpm", "shardStartLateMs"];

/// Why shards cannot be merged; every message names the file.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file as named.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A file is not a trace this tool wrote.
    #[error("{path}: not a goodput trace: {message}")]
    NotATrace {
        /// The file as named.
        path: String,
        /// What is wrong, and where (a JSON pointer).
        message: String,
    },
    /// A trace that is not a shard (no `boundary.shard`/`shards`, or no
    /// schedule size).
    #[error("{path}: not a shard ({message}); record shards with `goodput record --shard K/N --start-at T`")]
    NotAShard {
        /// The file as named.
        path: String,
        /// What is missing.
        message: String,
    },
    /// Two shards disagree about the recording.
    #[error("{path}: {what} differs from {first}'s ({theirs} here, {ours} there): not a shard of the same recording")]
    Mismatch {
        /// The file that disagrees.
        path: String,
        /// The first file.
        first: String,
        /// What differs (`workload.seed`, `window`, …).
        what: String,
        /// Its value in `path`.
        theirs: String,
        /// Its value in `first`.
        ours: String,
    },
    /// A shard's window was cut (Ctrl-C, or a recovered spool).
    #[error("{path}: shard {shard} was interrupted (its window was cut at {at_ms} ms); record it again: a merge needs every shard's whole window")]
    Interrupted {
        /// The file.
        path: String,
        /// Its shard.
        shard: usize,
        /// Where it was cut.
        at_ms: String,
    },
    /// Two files are the same shard.
    #[error("{path}: shard {shard} is also {other}")]
    Duplicate {
        /// The second file.
        path: String,
        /// The first file with this shard.
        other: String,
        /// The shard.
        shard: usize,
    },
    /// A shard is missing.
    #[error("shard {shard} of {count} is missing (given: {given})")]
    Missing {
        /// The missing shard.
        shard: usize,
        /// N.
        count: usize,
        /// The files given.
        given: String,
    },
    /// A shard's rows are not its share of the schedule.
    #[error("{path}: row {row} is `{id}` where shard {shard} of {count} must hold `{expected}`: ids overlap another shard's or the shard is incomplete")]
    BadRow {
        /// The file.
        path: String,
        /// 0-based row in that file.
        row: usize,
        /// The id found.
        id: String,
        /// The id that belongs there.
        expected: String,
        /// The shard.
        shard: usize,
        /// N.
        count: usize,
    },
    /// A shard holds more or fewer rows than its share.
    #[error("{path}: shard {shard} of {count} holds {rows} rows, its share of a {size}-request schedule is {share}")]
    WrongCount {
        /// The file.
        path: String,
        /// The shard.
        shard: usize,
        /// N.
        count: usize,
        /// Rows found.
        rows: usize,
        /// The schedule's size.
        size: usize,
        /// Rows expected.
        share: usize,
    },
    /// The shards' arrivals, interleaved back into the schedule, do not
    /// hash to the `scheduleHash` they declare: an arrival was edited, or a
    /// shard is of another schedule. (The hash cannot say which shard.)
    #[error("the arrivals of {files} do not hash to their workload.scheduleHash `{declared}` (they hash to `{found}`): a shard's arrivalMs was edited or is not of this schedule")]
    ScheduleHash {
        /// The files, as named, comma-separated.
        files: String,
        /// The hash the shards declare.
        declared: String,
        /// The hash of the arrivals they hold.
        found: String,
    },
    /// No file given.
    #[error("give the shards' traces to merge")]
    Nothing,
}

/// The fingerprint of a schedule a shard declares (`workload.scheduleHash`):
/// sha256 over each instant rounded to the microsecond as a trace writes it
/// (the bits of the f64, little-endian, in schedule order), its first 12
/// hex digits. Hashing the instants as written lets `merge` recompute it
/// from the merged rows' `arrivalMs`.
pub fn schedule_hash(arrivals_ms: &[f64]) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for a in arrivals_ms {
        // `+ 0.0` writes −0 as 0, as the trace's JSON does.
        let written = crate::trace::write::round_us(*a) + 0.0;
        h.update(written.to_bits().to_le_bytes());
    }
    h.finalize()[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A shard's trace as read back (every member the recorder writes; a member
/// it does not know is refused rather than dropped from the merge).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ShardDoc {
    schema: String,
    window: Window,
    #[serde(default)]
    warmup: Option<Warmup>,
    equality: Equality,
    classes: BTreeMap<String, Gates>,
    default_class: String,
    tokens: TokenCount,
    #[serde(default = "streamed_default")]
    streamed: bool,
    boundary: Labels,
    workload: Labels,
    #[serde(default)]
    phases: Vec<Phase>,
    #[serde(default)]
    resources: Option<Resources>,
    #[serde(default)]
    quality: Option<crate::trace::QualityRef>,
    rows: Vec<TraceRow>,
}

fn streamed_default() -> bool {
    true
}

/// One shard's file, parsed and placed.
struct Shard {
    path: String,
    index: usize,
    count: usize,
    size: usize,
    doc: ShardDoc,
}

fn number(labels: &Labels, key: &str) -> Option<f64> {
    match labels.get(key) {
        Some(Scalar::Number(x)) => Some(*x),
        _ => None,
    }
}

fn whole(x: f64) -> Option<usize> {
    (x.is_finite() && x >= 0.0 && x.fract() == 0.0 && x < 1e12).then_some(x as usize)
}

/// The JSON pointer of a place serde reached.
pub(crate) fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    path.iter()
        .map(|segment| match segment {
            Segment::Seq { index } => format!("/{index}"),
            Segment::Map { key } => format!("/{}", goodput_util::pointer::escape(key)),
            Segment::Enum { variant } => format!("/{}", goodput_util::pointer::escape(variant)),
            Segment::Unknown => "/?".to_owned(),
        })
        .collect()
}

/// `at POINTER: why` for a value of the wrong shape; where no value was
/// reached (not JSON at all, or cut short) the pointer is empty, so the
/// place is the line and column instead of a bare `at :` (or `at /?`).
fn place_and_message(pointer: &str, e: &serde_json::Error) -> String {
    if !pointer.is_empty() && pointer != "/?" {
        return format!("at {pointer}: {e}");
    }
    let text = e.to_string();
    let why = text
        .rfind(" at line ")
        .map_or(text.as_str(), |i| &text[..i]);
    format!("line {}, column {}: {why}", e.line(), e.column())
}

/// A value as the trace writes it (`8`, not `8.0`), for messages.
fn show<T: serde::Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(mut v) => {
            goodput_util::json::normalize_numbers(&mut v);
            v.to_string()
        }
        Err(_) => "?".into(),
    }
}

impl Shard {
    fn read(path: &str, bytes: &[u8]) -> Result<Shard, MergeError> {
        if goodput_util::json::starts_with_bom(bytes) {
            return Err(MergeError::NotATrace {
                path: path.to_owned(),
                message: goodput_util::json::BOM_MESSAGE.to_owned(),
            });
        }
        let de = &mut serde_json::Deserializer::from_slice(bytes);
        let doc: ShardDoc =
            serde_path_to_error::deserialize(de).map_err(|e| MergeError::NotATrace {
                path: path.to_owned(),
                message: place_and_message(&pointer(e.path()), e.inner()),
            })?;
        if doc.schema != TRACE_SCHEMA {
            return Err(MergeError::NotATrace {
                path: path.to_owned(),
                message: format!("schema `{}`, expected `{TRACE_SCHEMA}`", doc.schema),
            });
        }
        let not_shard = |message: &str| MergeError::NotAShard {
            path: path.to_owned(),
            message: message.to_owned(),
        };
        let index = number(&doc.boundary, "shard")
            .and_then(whole)
            .ok_or_else(|| not_shard("no boundary.shard"))?;
        let count = number(&doc.boundary, "shards")
            .and_then(whole)
            .filter(|&n| n > index)
            .ok_or_else(|| not_shard("no boundary.shards above boundary.shard"))?;
        let size = number(&doc.workload, "scheduleSize")
            .and_then(whole)
            .ok_or_else(|| not_shard("no workload.scheduleSize"))?;
        if !matches!(doc.workload.get("scheduleHash"), Some(Scalar::String(_))) {
            return Err(not_shard("no workload.scheduleHash"));
        }
        if doc.workload.contains_key("interrupted") || doc.workload.contains_key("recovered") {
            return Err(MergeError::Interrupted {
                path: path.to_owned(),
                shard: index,
                at_ms: doc
                    .workload
                    .get("interruptedAtMs")
                    .map_or_else(|| "?".into(), show),
            });
        }
        Ok(Shard {
            path: path.to_owned(),
            index,
            count,
            size,
            doc,
        })
    }

    /// The first way `self` is not a shard of the same recording as `first`.
    fn compare(&self, first: &Shard) -> Result<(), MergeError> {
        let differ = |what: &str, theirs: String, ours: String| MergeError::Mismatch {
            path: self.path.clone(),
            first: first.path.clone(),
            what: what.to_owned(),
            theirs,
            ours,
        };
        let (a, b) = (&self.doc, &first.doc);
        let pairs: [(&str, String, String); 8] = [
            ("boundary.shards", show(&self.count), show(&first.count)),
            ("window", show(&a.window), show(&b.window)),
            ("warmup", show(&a.warmup), show(&b.warmup)),
            ("equality", show(&a.equality), show(&b.equality)),
            ("classes", show(&a.classes), show(&b.classes)),
            (
                "defaultClass",
                show(&a.default_class),
                show(&b.default_class),
            ),
            ("phases", show(&a.phases), show(&b.phases)),
            ("resources", show(&a.resources), show(&b.resources)),
        ];
        for (what, theirs, ours) in pairs {
            if theirs != ours {
                return Err(differ(what, theirs, ours));
            }
        }
        if a.tokens != b.tokens {
            return Err(differ("tokens", show(&a.tokens), show(&b.tokens)));
        }
        if a.streamed != b.streamed {
            return Err(differ("streamed", show(&a.streamed), show(&b.streamed)));
        }
        let labels = |section: &str, ours: &Labels, theirs: &Labels, skip: &[&str]| {
            let keys: std::collections::BTreeSet<&String> =
                ours.keys().chain(theirs.keys()).collect();
            for key in keys {
                if skip.contains(&key.as_str()) {
                    continue;
                }
                let (x, y) = (theirs.get(key), ours.get(key));
                if x != y {
                    return Err(differ(
                        &format!("{section}.{key}"),
                        x.map_or_else(|| "absent".into(), show),
                        y.map_or_else(|| "absent".into(), show),
                    ));
                }
            }
            Ok(())
        };
        labels("workload", &b.workload, &a.workload, &["scheduled"])?;
        labels("boundary", &b.boundary, &a.boundary, &SHARD_OWN)
    }

    /// Checks the rows are exactly this shard's share, in order.
    fn check_rows(&self) -> Result<(), MergeError> {
        let share = self.size.saturating_sub(self.index).div_ceil(self.count);
        for (row, r) in self.doc.rows.iter().enumerate() {
            let global = row * self.count + self.index;
            let expected = format!("r{global}-s{}", self.index);
            if r.id != expected {
                return Err(MergeError::BadRow {
                    path: self.path.clone(),
                    row,
                    id: r.id.clone(),
                    expected,
                    shard: self.index,
                    count: self.count,
                });
            }
        }
        if self.doc.rows.len() != share {
            return Err(MergeError::WrongCount {
                path: self.path.clone(),
                shard: self.index,
                count: self.count,
                rows: self.doc.rows.len(),
                size: self.size,
                share,
            });
        }
        Ok(())
    }
}

/// Merges the shards' traces (`(name, bytes)` each) into one trace document.
pub fn merge(files: &[(String, Vec<u8>)]) -> Result<TraceDoc, MergeError> {
    let mut shards = files
        .iter()
        .map(|(path, bytes)| Shard::read(path, bytes))
        .collect::<Result<Vec<_>, _>>()?;
    let Some(first) = shards.first() else {
        return Err(MergeError::Nothing);
    };
    for s in &shards[1..] {
        s.compare(first)?;
    }
    let count = first.count;
    let mut by_index: Vec<Option<usize>> = vec![None; count];
    for (pos, s) in shards.iter().enumerate() {
        if let Some(other) = by_index[s.index] {
            return Err(MergeError::Duplicate {
                path: s.path.clone(),
                other: shards[other].path.clone(),
                shard: s.index,
            });
        }
        by_index[s.index] = Some(pos);
    }
    if let Some(missing) = by_index.iter().position(Option::is_none) {
        return Err(MergeError::Missing {
            shard: missing,
            count,
            given: shards
                .iter()
                .map(|s| s.path.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    for s in &shards {
        s.check_rows()?;
    }
    check_quality(&shards)?;
    shards.sort_by_key(|s| s.index);
    let merged = assemble(shards);
    check_schedule_hash(&merged, files)?;
    Ok(merged)
}

/// Refuses shards naming different quality sidecars: one bank's answers
/// belong to the merged trace; two would leave it naming one and losing the
/// other. The bank is run on one shard (`record --quality-bank` on shard 0).
fn check_quality(shards: &[Shard]) -> Result<(), MergeError> {
    let mut named = shards.iter().filter(|s| s.doc.quality.is_some());
    let Some(first) = named.next() else {
        return Ok(());
    };
    for other in named {
        if other.doc.quality != first.doc.quality {
            let show = |s: &Shard| {
                s.doc
                    .quality
                    .as_ref()
                    .map(|q| format!("{} ({})", q.sidecar, q.sha256))
                    .unwrap_or_default()
            };
            return Err(MergeError::Mismatch {
                path: other.path.clone(),
                first: first.path.clone(),
                what: "quality (the quality sidecar; run the bank on one shard only)".into(),
                theirs: show(other),
                ours: show(first),
            });
        }
    }
    Ok(())
}

/// Refuses merged shards whose arrivals are not the schedule they declare:
/// the hash of the merged rows' arrivals must be `workload.scheduleHash`
/// (which every shard declares alike, checked before). Statuses and every
/// other member of a row have no such fingerprint and are not checked.
fn check_schedule_hash(merged: &TraceDoc, files: &[(String, Vec<u8>)]) -> Result<(), MergeError> {
    // Every shard declares one (`Shard::read`).
    let Some(Scalar::String(declared)) = merged.workload.get("scheduleHash") else {
        return Ok(());
    };
    let arrivals: Vec<f64> = merged.rows.iter().map(|r| r.arrival_ms).collect();
    let found = schedule_hash(&arrivals);
    if &found == declared {
        return Ok(());
    }
    Err(MergeError::ScheduleHash {
        files: files
            .iter()
            .map(|(p, _)| p.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        declared: declared.clone(),
        found,
    })
}

/// The merged document: the first shard's envelope, every shard's clock
/// figures, the rows interleaved back into schedule order.
fn assemble(shards: Vec<Shard>) -> TraceDoc {
    let count = shards.len();
    let size = shards[0].size;
    let mut boundary = shards[0].doc.boundary.clone();
    for key in SHARD_OWN {
        boundary.remove(key);
    }
    boundary.insert("shards".into(), Scalar::Number(count as f64));
    for s in &shards {
        for (own, name) in [
            ("shardOffsetMs", "OffsetMs"),
            ("shardSkewPpm", "SkewPpm"),
            ("shardStartLateMs", "StartLateMs"),
        ] {
            if let Some(v) = s.doc.boundary.get(own) {
                boundary.insert(format!("shard{}{name}", s.index), v.clone());
            }
        }
    }
    let mut workload = shards[0].doc.workload.clone();
    workload.insert("scheduled".into(), Scalar::Number(size as f64));
    let mut docs: Vec<ShardDoc> = shards.into_iter().map(|s| s.doc).collect();
    let mut columns: Vec<std::vec::IntoIter<TraceRow>> = docs
        .iter_mut()
        .map(|d| std::mem::take(&mut d.rows).into_iter())
        .collect();
    // The quality bank runs on one shard (docs/recorder.md): its sidecar
    // is the merged trace's; `merge` refused shards naming different ones.
    let quality = docs.iter().find_map(|d| d.quality.clone());
    let head = docs.swap_remove(0);
    let rows: Vec<TraceRow> = (0..size)
        .filter_map(|i| columns[i % count].next())
        .collect();
    TraceDoc {
        schema: TRACE_SCHEMA,
        window: head.window,
        warmup: head.warmup,
        equality: head.equality,
        classes: head.classes,
        default_class: head.default_class,
        tokens: head.tokens,
        streamed: head.streamed,
        boundary,
        workload,
        phases: head.phases,
        resources: head.resources,
        quality,
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::schedule_hash;

    #[test]
    fn the_schedule_hash_is_of_the_instants_as_a_trace_writes_them() {
        // sha256 of the 8 zero bytes of 0.0: af5570f5a1810b7a…; −0 and
        // 0.0004 ms (0 to the microsecond) are written 0, so hash alike.
        assert_eq!(schedule_hash(&[0.0]), "af5570f5a181");
        assert_eq!(schedule_hash(&[-0.0]), "af5570f5a181");
        assert_eq!(schedule_hash(&[0.0004]), "af5570f5a181");
        // sha256 of the bits of 0.0 then 100.25, little-endian.
        assert_eq!(schedule_hash(&[0.0, 100.2504]), "a8b0f1365cee");
    }
}
