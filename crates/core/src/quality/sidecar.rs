//! The quality sidecar (`TRACE.quality.jsonl`, docs/quality.md "The
//! sidecar"): a header line, then one line per bank item sent. Written by
//! the recorder (`record --quality-bank`, next), read here; its sha256 is in
//! the trace's `quality` member.
//!
//! Every line is checked against the others: a completed item carries its
//! normalised answer and that answer's sha256 (checked), a failed one its
//! reason and no answer; the verdict fits the status; ids are unique.

use std::collections::HashSet;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::quality::bank::BankItem;
use crate::quality::normalise::normalise;
use crate::quality::{check_id, line_value, lines, FileKind, QualityError, QualityLimits};

/// Where the bank's requests were placed against the load.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// Interleaved with the load at `ratePerS`.
    Interleaved,
    /// All before the measurement window.
    Before,
    /// All after it.
    After,
    /// The bank twice: before and after.
    Both,
}

/// The sampling settings the bank was sent with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sampling {
    /// The `temperature` sent (0 for a deterministic bank).
    pub temperature: f64,
    /// The `seed` sent, or null when the API takes none.
    pub seed: Option<u64>,
}

/// The header line: which bank, which model, how it was sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SidecarHeader {
    /// Always `goodput-quality/1`.
    pub schema: String,
    /// Lower-case hex sha256 of the bank file the items came from.
    pub bank_sha256: String,
    /// The model the requests named.
    pub model: String,
    /// Where the bank ran against the load.
    pub phase: Placement,
    /// Bank requests per second while interleaved (null for before/after).
    #[serde(default)]
    pub rate_per_s: Option<f64>,
    /// The sampling settings sent with every bank request.
    pub sampling: Sampling,
}

/// How a bank request ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// An answer came back.
    Completed,
    /// No answer: `reason` says why.
    Failed,
}

/// An item's verdict as the recorder wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The answer met the item's expectation.
    Met,
    /// The answer did not meet it.
    Missed,
    /// No expectation: judged against a baseline run's answer.
    Baseline,
    /// The request failed: no answer to judge (counts as not met).
    Failed,
}

impl Verdict {
    /// The name as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Met => "met",
            Verdict::Missed => "missed",
            Verdict::Baseline => "baseline",
            Verdict::Failed => "failed",
        }
    }
}

/// One item line.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ItemLine {
    /// The bank item's id.
    pub id: String,
    /// How the request ended.
    pub status: ItemStatus,
    /// Why a failed request failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The normalised answer text (completed items).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    /// Lower-case hex sha256 of the UTF-8 bytes of `answer`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answer_sha256: Option<String>,
    /// The verdict against the item's expectation.
    pub verdict: Verdict,
    /// When the request was sent, ms on the trace's clock.
    pub arrival_ms: f64,
    /// When the answer ended (completed items), ms on the trace's clock.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completed_ms: Option<f64>,
}

impl ItemLine {
    /// The line of an item that was answered: the answer normalised and
    /// hashed, the verdict from the bank item's expectation (`baseline`
    /// without one).
    pub fn answered(
        item: &BankItem,
        raw_answer: &str,
        arrival_ms: f64,
        completed_ms: f64,
    ) -> ItemLine {
        let answer = normalise(raw_answer);
        let verdict = match item.judge(raw_answer) {
            Some(true) => Verdict::Met,
            Some(false) => Verdict::Missed,
            None => Verdict::Baseline,
        };
        ItemLine {
            id: item.id.clone(),
            status: ItemStatus::Completed,
            reason: None,
            answer_sha256: Some(crate::trace::sha256_hex(answer.as_bytes())),
            answer: Some(answer),
            verdict,
            arrival_ms,
            completed_ms: Some(completed_ms.max(arrival_ms)),
        }
    }

    /// The line of an item whose request failed for `reason`.
    pub fn failed(item: &BankItem, reason: String, arrival_ms: f64) -> ItemLine {
        ItemLine {
            id: item.id.clone(),
            status: ItemStatus::Failed,
            reason: Some(reason),
            answer: None,
            answer_sha256: None,
            verdict: Verdict::Failed,
            arrival_ms,
            completed_ms: None,
        }
    }
}

/// The sidecar's bytes: the header line, then one line per item, each
/// ending in `\n` (what [`parse_sidecar`] reads back).
pub fn sidecar_bytes(header: &SidecarHeader, items: &[ItemLine]) -> Vec<u8> {
    let mut out = Vec::new();
    // Both hold only strings, finite numbers and enums: they serialize.
    let _ = serde_json::to_writer(&mut out, header);
    out.push(b'\n');
    for item in items {
        let _ = serde_json::to_writer(&mut out, item);
        out.push(b'\n');
    }
    out
}

/// A checked sidecar: its header, its items (line numbers kept for errors
/// found later), and the sha256 of its bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct Sidecar {
    /// Lower-case hex sha256 of the file.
    pub sha256: String,
    /// The header line.
    pub header: SidecarHeader,
    /// (1-based line number, item) in file order.
    pub items: Vec<(u64, ItemLine)>,
}

impl Sidecar {
    /// The item with this id.
    pub fn item(&self, id: &str) -> Option<&ItemLine> {
        self.items.iter().map(|(_, i)| i).find(|i| i.id == id)
    }
}

/// Parses and checks a sidecar (`file` says which one, for the messages).
pub fn parse_sidecar(
    bytes: &[u8],
    file: FileKind,
    limits: QualityLimits,
) -> Result<Sidecar, QualityError> {
    let all = lines(bytes, file, limits, limits.max_items.saturating_add(1))?;
    let (first, rest) = all.split_first().ok_or(QualityError::Empty { file })?;
    let header: SidecarHeader = line_value(file, first.0, first.1)?;
    check_header(&header).map_err(|(pointer, problem)| QualityError::Line {
        file,
        line: 1,
        pointer: pointer.to_owned(),
        problem,
    })?;
    let mut seen = HashSet::new();
    let mut items = Vec::with_capacity(rest.len());
    for &(number, line) in rest {
        let item: ItemLine = line_value(file, number, line)?;
        let bad = |(pointer, problem): (&str, String)| QualityError::Line {
            file,
            line: number,
            pointer: pointer.to_owned(),
            problem,
        };
        check_item(&item).map_err(bad)?;
        if !seen.insert(item.id.clone()) {
            return Err(bad((
                "/id",
                format!(
                    "{:?} is the id of an earlier line (one line per item)",
                    item.id
                ),
            )));
        }
        items.push((number, item));
    }
    Ok(Sidecar {
        sha256: crate::trace::sha256_hex(bytes),
        header,
        items,
    })
}

type LineProblem = (&'static str, String);

fn is_sha256(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn check_header(h: &SidecarHeader) -> Result<(), LineProblem> {
    if h.schema != crate::quality::SIDECAR_SCHEMA {
        return Err((
            "/schema",
            format!(
                "is {:?}, not {:?}",
                h.schema,
                crate::quality::SIDECAR_SCHEMA
            ),
        ));
    }
    if !is_sha256(&h.bank_sha256) {
        return Err(("/bankSha256", "is not 64 lower-case hex digits".to_owned()));
    }
    if !(h.sampling.temperature.is_finite() && h.sampling.temperature >= 0.0) {
        return Err(("/sampling/temperature", "must be a number >= 0".to_owned()));
    }
    match (h.phase, h.rate_per_s) {
        (Placement::Interleaved, Some(r)) if r.is_finite() && r > 0.0 => Ok(()),
        (Placement::Interleaved, _) => Err((
            "/ratePerS",
            "must be a rate > 0 when the bank was interleaved".to_owned(),
        )),
        (_, Some(_)) => Err((
            "/ratePerS",
            "is given, but the bank ran apart from the load (phase before/after/both)".to_owned(),
        )),
        (_, None) => Ok(()),
    }
}

fn check_item(i: &ItemLine) -> Result<(), LineProblem> {
    check_id(&i.id).map_err(|p| ("/id", p))?;
    if !i.arrival_ms.is_finite() {
        return Err(("/arrivalMs", "must be a finite number".to_owned()));
    }
    match i.status {
        ItemStatus::Completed => check_completed(i),
        ItemStatus::Failed => check_failed(i),
    }
}

fn check_completed(i: &ItemLine) -> Result<(), LineProblem> {
    let answer = i
        .answer
        .as_deref()
        .ok_or(("/answer", "is missing on a completed item".to_owned()))?;
    if normalise(answer) != answer {
        return Err((
            "/answer",
            "is not normalised (trimmed, one space for each whitespace run)".to_owned(),
        ));
    }
    let sha = i
        .answer_sha256
        .as_deref()
        .ok_or(("/answerSha256", "is missing on a completed item".to_owned()))?;
    let actual = crate::trace::sha256_hex(answer.as_bytes());
    if sha != actual {
        return Err((
            "/answerSha256",
            format!("is not the sha256 of answer ({actual})"),
        ));
    }
    if i.verdict == Verdict::Failed {
        return Err((
            "/verdict",
            "is failed on a completed item (met, missed or baseline)".to_owned(),
        ));
    }
    match i.completed_ms {
        Some(t) if t.is_finite() && t >= i.arrival_ms => Ok(()),
        Some(_) => Err((
            "/completedMs",
            "must be a finite number at or after arrivalMs".to_owned(),
        )),
        None => Err(("/completedMs", "is missing on a completed item".to_owned())),
    }
}

fn check_failed(i: &ItemLine) -> Result<(), LineProblem> {
    if i.reason.as_deref().is_none_or(str::is_empty) {
        return Err(("/reason", "is missing on a failed item".to_owned()));
    }
    if i.answer.is_some() || i.answer_sha256.is_some() {
        return Err(("/answer", "is given on a failed item".to_owned()));
    }
    if i.verdict != Verdict::Failed {
        return Err((
            "/verdict",
            format!("is {} on a failed item (failed)", i.verdict.as_str()),
        ));
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A header line of bank `bank` (a hex digit repeated 64 times).
    pub(crate) fn header(bank: char) -> String {
        format!(
            r#"{{"schema":"goodput-quality/1","bankSha256":"{}","model":"m","phase":"interleaved","ratePerS":0.5,"sampling":{{"temperature":0,"seed":7}}}}"#,
            bank.to_string().repeat(64)
        )
    }

    /// A completed item line.
    pub(crate) fn answered(id: &str, answer: &str, verdict: &str) -> String {
        let sha = crate::trace::sha256_hex(answer.as_bytes());
        format!(
            r#"{{"id":"{id}","status":"completed","answer":{},"answerSha256":"{sha}","verdict":"{verdict}","arrivalMs":10,"completedMs":250}}"#,
            serde_json::to_string(answer).unwrap()
        )
    }

    fn parse(text: &str) -> Result<Sidecar, QualityError> {
        parse_sidecar(text.as_bytes(), FileKind::Sidecar, QualityLimits::default())
    }

    #[test]
    fn a_well_formed_sidecar_reads_with_its_line_numbers() {
        let failed =
            r#"{"id":"c","status":"failed","reason":"http 503","verdict":"failed","arrivalMs":12}"#;
        let text = format!(
            "{}\n{}\n{}\n{failed}\n",
            header('a'),
            answered("a", "Paris", "met"),
            answered("b", "4", "baseline")
        );
        let s = parse(&text).unwrap();
        assert_eq!(s.header.phase, Placement::Interleaved);
        assert_eq!(s.items.len(), 3);
        assert_eq!(s.items[2].0, 4);
        assert_eq!(s.item("c").unwrap().verdict, Verdict::Failed);
    }

    #[test]
    fn a_malformed_line_is_named_by_its_number_and_pointer() {
        let h = header('a');
        let ok = answered("a", "x", "met");
        let wrong_sha = ok.replace(&crate::trace::sha256_hex(b"x"), &"0".repeat(64));
        let cases = [
            (wrong_sha, 3, "/answerSha256"),
            (answered("a", "x", "met"), 3, "/id"),
            (answered("b", " x", "met"), 3, "/answer"),
            (answered("b", "x", "failed"), 3, "/verdict"),
            (answered("b", "x", "great"), 3, "/verdict"),
            (
                r#"{"id":"b","status":"failed","verdict":"failed","arrivalMs":1}"#.to_owned(),
                3,
                "/reason",
            ),
            (
                r#"{"id":"b","status":"failed","reason":"x","verdict":"missed","arrivalMs":1}"#
                    .to_owned(),
                3,
                "/verdict",
            ),
            (
                ok.replace("\"completedMs\":250", "\"completedMs\":1"),
                3,
                "/completedMs",
            ),
            ("[1]".to_owned(), 3, ""),
        ];
        for (line, number, pointer) in cases {
            let text = format!("{h}\n{ok}\n{line}\n");
            match parse(&text) {
                Err(QualityError::Line {
                    line: l,
                    pointer: p,
                    ..
                }) => assert_eq!((l, p.as_str()), (number, pointer), "{line}"),
                other => panic!("{line}: {other:?}"),
            }
        }
        let bad_header = h.replace("goodput-quality/1", "goodput-quality/2");
        let e = parse(&format!("{bad_header}\n")).unwrap_err();
        assert_eq!(
            e.to_string(),
            "quality sidecar line 1, /schema: is \"goodput-quality/2\", not \"goodput-quality/1\""
        );
        let before = h.replace("\"interleaved\"", "\"before\"");
        let e = parse(&format!("{before}\n")).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("quality sidecar line 1, /ratePerS: is given"));
    }
}
