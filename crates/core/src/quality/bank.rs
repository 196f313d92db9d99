//! The quality bank (docs/quality.md "The bank"): JSON Lines, one item a
//! line — `id`, `prompt` or `messages`, optional `maxTokens`, an optional
//! expectation `expect` and `caseInsensitive`. Parsed and checked whole
//! before anything is sent, so a typo in line 37 is an error naming line 37,
//! not a silently unjudged item.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::quality::normalise::{fold_case, normalise};
use crate::quality::{
    check_id, line_value, lines, FileKind, QualityError, QualityLimits, MAX_ITEM_TOKENS,
    MAX_REGEX_BYTES, MAX_REGEX_CHARS,
};

/// One chat message of an item (`messages`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// `system`, `user`, `assistant`, … as the API takes it.
    pub role: String,
    /// The message text.
    pub content: String,
}

/// What an item sends: a completion prompt or chat messages.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prompt {
    /// `prompt`: sent as the completion prompt (or one user message).
    Text(String),
    /// `messages`: sent as the chat messages, in order.
    Messages(Vec<Message>),
}

/// An item's expectation, its strings already normalised.
#[derive(Clone, Debug)]
pub enum Expectation {
    /// The normalised answer equals this.
    Exact(String),
    /// The normalised answer contains this.
    Contains(String),
    /// The regex matches somewhere in the normalised answer (anchor it with
    /// `^…$` for a whole-answer match).
    Regex(regex::Regex),
    /// The normalised answer equals one of these.
    AnyOf(Vec<String>),
}

impl PartialEq for Expectation {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Expectation::Exact(a), Expectation::Exact(b))
            | (Expectation::Contains(a), Expectation::Contains(b)) => a == b,
            (Expectation::Regex(a), Expectation::Regex(b)) => a.as_str() == b.as_str(),
            (Expectation::AnyOf(a), Expectation::AnyOf(b)) => a == b,
            _ => false,
        }
    }
}

impl Expectation {
    /// Whether an already-normalised answer meets the expectation. For a
    /// case-insensitive item both sides are lower-cased (the regex was
    /// compiled case-insensitive instead).
    pub fn met_by(&self, answer: &str, case_insensitive: bool) -> bool {
        let fold = |s: &str| {
            if case_insensitive {
                fold_case(s)
            } else {
                s.to_owned()
            }
        };
        let answer_cmp = fold(answer);
        match self {
            Expectation::Exact(want) => answer_cmp == fold(want),
            Expectation::Contains(part) => answer_cmp.contains(&fold(part)),
            Expectation::Regex(re) => re.is_match(answer),
            Expectation::AnyOf(options) => options.iter().any(|o| answer_cmp == fold(o)),
        }
    }
}

/// One checked bank item.
#[derive(Clone, Debug, PartialEq)]
pub struct BankItem {
    /// Unique within the bank, at most 128 characters.
    pub id: String,
    /// What is sent.
    pub prompt: Prompt,
    /// The `max_tokens` to send (absent: the recorder's default).
    pub max_tokens: Option<u64>,
    /// The expectation; `None`: judged against a baseline run's answer.
    pub expect: Option<Expectation>,
    /// Compare case-insensitively.
    pub case_insensitive: bool,
}

impl BankItem {
    /// Whether the answer (raw, as the server sent it) meets the item's
    /// expectation: `Some(met)`, or `None` for an item without one (judged
    /// against a baseline instead).
    pub fn judge(&self, answer: &str) -> Option<bool> {
        let answer = normalise(answer);
        self.expect
            .as_ref()
            .map(|e| e.met_by(&answer, self.case_insensitive))
    }
}

/// A checked bank and the sha256 of its bytes (written in the sidecar's
/// header, so the answers are tied to the prompts they answer).
#[derive(Clone, Debug, PartialEq)]
pub struct Bank {
    /// Lower-case hex sha256 of the bank file.
    pub sha256: String,
    /// The items in file order.
    pub items: Vec<BankItem>,
}

impl Bank {
    /// The item with this id.
    pub fn item(&self, id: &str) -> Option<&BankItem> {
        self.items.iter().find(|i| i.id == id)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawItem {
    id: String,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    messages: Option<Vec<Message>>,
    #[serde(default)]
    max_tokens: Option<u64>,
    #[serde(default)]
    expect: Option<RawExpect>,
    #[serde(default)]
    case_insensitive: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
enum RawExpect {
    Exact(String),
    Contains(String),
    Regex(String),
    AnyOf(Vec<String>),
}

/// Parses and checks a bank: every line an item, ids unique, one of
/// `prompt` / `messages`, `maxTokens` in 1..=2^20, each regex compiled once
/// within [`MAX_REGEX_BYTES`]. The first problem is an error naming its
/// line and JSON pointer.
pub fn parse_bank(bytes: &[u8], limits: QualityLimits) -> Result<Bank, QualityError> {
    let mut seen = HashSet::new();
    let mut items = Vec::new();
    for (number, line) in lines(bytes, FileKind::Bank, limits, limits.max_items)? {
        let raw: RawItem = line_value(FileKind::Bank, number, line)?;
        let item = check_item(raw).map_err(|(pointer, problem)| QualityError::Line {
            file: FileKind::Bank,
            line: number,
            pointer: pointer.to_owned(),
            problem,
        })?;
        if !seen.insert(item.id.clone()) {
            return Err(QualityError::Line {
                file: FileKind::Bank,
                line: number,
                pointer: "/id".to_owned(),
                problem: format!(
                    "{:?} is the id of an earlier item (ids are unique)",
                    item.id
                ),
            });
        }
        items.push(item);
    }
    Ok(Bank {
        sha256: crate::trace::sha256_hex(bytes),
        items,
    })
}

type ItemProblem = (&'static str, String);

fn check_item(raw: RawItem) -> Result<BankItem, ItemProblem> {
    check_id(&raw.id).map_err(|p| ("/id", p))?;
    let prompt = match (raw.prompt, raw.messages) {
        (Some(p), None) => Prompt::Text(p),
        (None, Some(m)) if m.is_empty() => {
            return Err(("/messages", "is empty (at least one message)".to_owned()))
        }
        (None, Some(m)) => Prompt::Messages(m),
        (Some(_), Some(_)) => {
            return Err((
                "/messages",
                "is given beside prompt: an item has one or the other".to_owned(),
            ))
        }
        (None, None) => return Err(("", "has neither prompt nor messages".to_owned())),
    };
    if let Some(n) = raw.max_tokens {
        if n == 0 || n > MAX_ITEM_TOKENS {
            return Err(("/maxTokens", format!("is {n}: give 1..={MAX_ITEM_TOKENS}")));
        }
    }
    let expect = raw
        .expect
        .map(|e| expectation(e, raw.case_insensitive))
        .transpose()?;
    Ok(BankItem {
        id: raw.id,
        prompt,
        max_tokens: raw.max_tokens,
        expect,
        case_insensitive: raw.case_insensitive,
    })
}

fn expectation(raw: RawExpect, case_insensitive: bool) -> Result<Expectation, ItemProblem> {
    Ok(match raw {
        RawExpect::Exact(s) => Expectation::Exact(normalise(&s)),
        RawExpect::Contains(s) => {
            let s = normalise(&s);
            if s.is_empty() {
                return Err((
                    "/expect/contains",
                    "is empty after normalisation (it would match every answer)".to_owned(),
                ));
            }
            Expectation::Contains(s)
        }
        RawExpect::Regex(src) => Expectation::Regex(compile(&src, case_insensitive)?),
        RawExpect::AnyOf(options) if options.is_empty() => {
            return Err((
                "/expect/anyOf",
                "is empty (at least one acceptable answer)".to_owned(),
            ))
        }
        RawExpect::AnyOf(options) => {
            Expectation::AnyOf(options.iter().map(|o| normalise(o)).collect())
        }
    })
}

fn compile(src: &str, case_insensitive: bool) -> Result<regex::Regex, ItemProblem> {
    let n = src.chars().count();
    if n > MAX_REGEX_CHARS {
        return Err((
            "/expect/regex",
            format!("has {n} characters, more than the {MAX_REGEX_CHARS} a pattern may"),
        ));
    }
    regex::RegexBuilder::new(src)
        .case_insensitive(case_insensitive)
        .size_limit(MAX_REGEX_BYTES)
        .dfa_size_limit(MAX_REGEX_BYTES)
        .build()
        .map_err(|e| {
            // The regex crate's message spans lines (a caret under the
            // pattern); one line is kept per error.
            let text = e
                .to_string()
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            ("/expect/regex", format!("is not a valid regex: {text}"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bank(text: &str) -> Result<Bank, QualityError> {
        parse_bank(text.as_bytes(), QualityLimits::default())
    }

    fn item(expect: &str) -> BankItem {
        let line = format!(r#"{{"id":"q","prompt":"p","expect":{expect}}}"#);
        bank(&line).unwrap().items.remove(0)
    }

    #[test]
    fn exact_compares_normalised_strings_case_sensitively() {
        let i = item(r#"{"exact":"  Paris "}"#);
        assert_eq!(i.judge("Paris\n"), Some(true));
        assert_eq!(i.judge("paris"), Some(false));
        // No punctuation stripping: a trailing period is a different answer.
        assert_eq!(i.judge("Paris."), Some(false));
        let line = r#"{"id":"q","prompt":"p","expect":{"exact":"Paris"},"caseInsensitive":true}"#;
        let i = bank(line).unwrap().items.remove(0);
        assert_eq!(i.judge("PARIS"), Some(true));
    }

    #[test]
    fn contains_looks_inside_the_normalised_answer() {
        let i = item(r#"{"contains":"is 42"}"#);
        // "The answer\n  is 42." normalises to "The answer is 42.", which contains "is 42".
        assert_eq!(i.judge("The answer\n  is 42."), Some(true));
        assert_eq!(i.judge("The answer is 43."), Some(false));
    }

    #[test]
    fn regex_searches_and_anchors_when_told() {
        let i = item(r#"{"regex":"^(4|four)[.!]?$"}"#);
        assert_eq!(i.judge(" 4. "), Some(true));
        assert_eq!(i.judge("four"), Some(true));
        assert_eq!(i.judge("44"), Some(false));
        let i = item(r#"{"regex":"\\b42\\b"}"#);
        assert_eq!(i.judge("it is 42 units"), Some(true));
        assert_eq!(i.judge("it is 420"), Some(false));
    }

    #[test]
    fn any_of_accepts_each_listed_answer_and_nothing_else() {
        let i = item(r#"{"anyOf":["4","four","Four."]}"#);
        for ok in ["4", "four", " Four. "] {
            assert_eq!(i.judge(ok), Some(true), "{ok}");
        }
        assert_eq!(i.judge("FOUR"), Some(false));
        assert_eq!(i.judge("4 apples"), Some(false));
    }

    #[test]
    fn an_item_without_expectation_is_left_to_the_baseline() {
        let b = bank("{\"id\":\"a\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],\"maxTokens\":8}\n").unwrap();
        assert_eq!(b.items[0].judge("anything"), None);
        assert_eq!(b.items[0].max_tokens, Some(8));
        assert_eq!(b.sha256.len(), 64);
    }

    #[test]
    fn each_problem_names_its_line_and_pointer() {
        let good = r#"{"id":"a","prompt":"p","expect":{"exact":"x"}}"#;
        let cases = [
            (
                r#"{"id":"b","prompt":"p","expect":{"regex":"(unclosed"}}"#,
                "/expect/regex",
            ),
            (r#"{"id":"a","prompt":"p"}"#, "/id"),
            (r#"{"id":"b"}"#, ""),
            (r#"{"id":"b","prompt":"p","messages":[]}"#, "/messages"),
            (r#"{"id":"b","prompt":"p","maxTokens":0}"#, "/maxTokens"),
            (
                r#"{"id":"b","prompt":"p","expect":{"anyOf":[]}}"#,
                "/expect/anyOf",
            ),
            (
                r#"{"id":"b","prompt":"p","expect":{"exact":3}}"#,
                "/expect/exact",
            ),
            (r#"{"id":"","prompt":"p"}"#, "/id"),
            (
                r#"{"id":"b","prompt":"p","expect":{"contains":"  "}}"#,
                "/expect/contains",
            ),
            (r#"{"id":"b","prompt":"p","temperature":1}"#, "/temperature"),
            (r#"{"id":"b","prompt":"p"} {}"#, ""),
            ("not json", ""),
        ];
        for (line, pointer) in cases {
            let text = format!("{good}\n{line}\n");
            match bank(&text) {
                Err(QualityError::Line {
                    line: 2,
                    pointer: p,
                    ..
                }) => assert_eq!(p, pointer, "{line}"),
                other => panic!("{line}: {other:?}"),
            }
        }
        let e = bank(&format!("{good}\n{}\n", cases[0].0))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("bank line 2, /expect/regex: is not a valid regex: "),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }

    #[test]
    fn a_regex_too_large_to_compile_is_refused_not_built() {
        // Each \w is a Unicode class of ~140,000 code points; a counted
        // repeat of 1000 of them compiles far past the 1 MiB size limit.
        let e = bank(r#"{"id":"a","prompt":"p","expect":{"regex":"\\w{1000}"}}"#).unwrap_err();
        assert!(e.to_string().contains("is not a valid regex"), "{e}");
        let long = "a".repeat(MAX_REGEX_CHARS + 1);
        let line = format!(r#"{{"id":"a","prompt":"p","expect":{{"regex":"{long}"}}}}"#);
        assert!(bank(&line)
            .unwrap_err()
            .to_string()
            .contains("1025 characters"));
    }
}
