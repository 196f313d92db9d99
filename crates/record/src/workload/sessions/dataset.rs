//! Multi-turn datasets: the two file formats `--dataset` reads, parsed into
//! conversations of user turns (the dataset's own replies are dropped).

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::workload::WorkloadError;
use goodput_tokenizer::sha256_hex;

/// One user turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// The user message.
    pub text: String,
    /// Think time before it, ms, when the dataset gives one.
    pub delay_ms: Option<f64>,
}

/// One conversation of the dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    /// Its user turns, in order (at least one).
    pub turns: Vec<Turn>,
}

/// A loaded multi-turn dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// `sharegpt` or `multi-turn`.
    pub kind: &'static str,
    /// Conversations in file order.
    pub conversations: Vec<Conversation>,
    /// sha256 of the file's bytes.
    pub sha256: String,
}

#[derive(Deserialize)]
struct ShareGptEntry {
    #[serde(default)]
    conversations: Vec<ShareGptTurn>,
}

#[derive(Deserialize)]
struct ShareGptTurn {
    #[serde(default)]
    from: String,
    #[serde(default)]
    value: String,
}

fn read(path: &Path) -> Result<(String, Vec<u8>), WorkloadError> {
    let bytes = crate::workload::read_input(path, "--dataset", crate::workload::MAX_DATASET_BYTES)?;
    Ok((path.display().to_string(), bytes))
}

/// Reads a ShareGPT file, keeping whole conversations.
pub fn load_sharegpt(path: &Path) -> Result<Dataset, WorkloadError> {
    let (shown, bytes) = read(path)?;
    let entries: Vec<ShareGptEntry> =
        serde_json::from_slice(&bytes).map_err(|e| WorkloadError::Bad {
            path: shown.clone(),
            line: e.line(),
            message: format!("not a ShareGPT array ({e})"),
        })?;
    let conversations: Vec<Conversation> = entries
        .into_iter()
        .map(|e| Conversation {
            turns: e
                .conversations
                .into_iter()
                .filter(|t| (t.from == "human" || t.from == "user") && !t.value.is_empty())
                .map(|t| Turn {
                    text: t.value,
                    delay_ms: None,
                })
                .collect(),
        })
        .filter(|c| !c.turns.is_empty())
        .collect();
    if conversations.is_empty() {
        return Err(WorkloadError::Empty(shown));
    }
    Ok(Dataset {
        kind: "sharegpt",
        conversations,
        sha256: sha256_hex(&bytes),
    })
}

#[derive(Deserialize)]
struct RawSession {
    #[serde(default)]
    session_id: Option<String>,
    turns: Vec<RawTurn>,
}

#[derive(Deserialize)]
struct RawTurn {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    texts: Option<Vec<String>>,
    #[serde(default)]
    delay: Option<f64>,
    #[serde(default)]
    timestamp: Option<serde::de::IgnoredAny>,
}

/// Reads AIPerf's multi-turn JSONL.
pub fn load_multi_turn(path: &Path) -> Result<Dataset, WorkloadError> {
    let (shown, bytes) = read(path)?;
    let bad = |line: usize, message: String| WorkloadError::Bad {
        path: shown.clone(),
        line,
        message,
    };
    let text = std::str::from_utf8(&bytes).map_err(|e| bad(0, format!("not UTF-8 ({e})")))?;
    let mut conversations: Vec<Conversation> = Vec::new();
    let mut by_id: BTreeMap<String, usize> = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let raw: RawSession = serde_json::from_str(line).map_err(|e| {
            bad(n, format!("expected {{\"session_id\": …, \"turns\": [{{\"text\": …, \"delay\": ms}}]}} ({e})"))
        })?;
        if raw.turns.is_empty() {
            return Err(bad(n, "`turns` is empty".into()));
        }
        let mut turns = Vec::with_capacity(raw.turns.len());
        for (k, t) in raw.turns.into_iter().enumerate() {
            if t.timestamp.is_some() {
                return Err(bad(
                    n,
                    format!(
                        "turn {}: `timestamp` is not supported in sessions; use `delay`",
                        k + 1
                    ),
                ));
            }
            let text = match (t.text, t.texts) {
                (Some(s), None) if !s.is_empty() => s,
                (None, Some(list)) if list.iter().any(|s| !s.is_empty()) => list.join("\n\n"),
                (Some(_), Some(_)) => {
                    return Err(bad(
                        n,
                        format!("turn {}: `text` and `texts` cannot both be set", k + 1),
                    ))
                }
                _ => {
                    return Err(bad(
                        n,
                        format!("turn {}: needs a non-empty `text` or `texts`", k + 1),
                    ))
                }
            };
            let delay_ms = match t.delay {
                None => None,
                Some(d) if d.is_finite() && d >= 0.0 => Some(d),
                Some(d) => {
                    return Err(bad(
                        n,
                        format!("turn {}: `delay` {d} is not a number of ms >= 0", k + 1),
                    ))
                }
            };
            turns.push(Turn { text, delay_ms });
        }
        match raw.session_id {
            Some(id) => match by_id.get(&id) {
                Some(&c) => conversations[c].turns.extend(turns),
                None => {
                    by_id.insert(id, conversations.len());
                    conversations.push(Conversation { turns });
                }
            },
            None => conversations.push(Conversation { turns }),
        }
    }
    if conversations.is_empty() {
        return Err(WorkloadError::Empty(shown));
    }
    Ok(Dataset {
        kind: "multi-turn",
        conversations,
        sha256: sha256_hex(&bytes),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("d");
        std::fs::write(&p, text).unwrap();
        (dir, p)
    }

    #[test]
    fn sharegpt_keeps_every_human_turn_and_drops_the_datasets_replies() {
        let (_d, p) = write(
            r#"[{"conversations":[{"from":"system","value":"s"},{"from":"human","value":"q1"},{"from":"gpt","value":"a1"},{"from":"human","value":"q2"}]},
                {"conversations":[]},{"conversations":[{"from":"user","value":"only"}]}]"#,
        );
        let d = load_sharegpt(&p).unwrap();
        let turns: Vec<Vec<&str>> = d
            .conversations
            .iter()
            .map(|c| c.turns.iter().map(|t| t.text.as_str()).collect())
            .collect();
        assert_eq!(turns, vec![vec!["q1", "q2"], vec!["only"]]);
    }

    #[test]
    fn multi_turn_jsonl_reads_delays_merges_session_ids_and_names_bad_lines() {
        let (_d, p) = write(
            "{\"session_id\": \"a\", \"turns\": [{\"text\": \"hi\"}, {\"text\": \"more\", \"delay\": 250}]}\n\
             {\"turns\": [{\"texts\": [\"x\", \"y\"]}]}\n\
             {\"session_id\": \"a\", \"turns\": [{\"text\": \"last\", \"delay\": 5}]}\n",
        );
        let d = load_multi_turn(&p).unwrap();
        assert_eq!(d.conversations.len(), 2);
        assert_eq!(
            d.conversations[0].turns,
            vec![
                Turn {
                    text: "hi".into(),
                    delay_ms: None
                },
                Turn {
                    text: "more".into(),
                    delay_ms: Some(250.0)
                },
                Turn {
                    text: "last".into(),
                    delay_ms: Some(5.0)
                },
            ]
        );
        assert_eq!(d.conversations[1].turns[0].text, "x\n\ny");
        for (text, line, why) in [
            ("{\"turns\": []}\n", 1, "empty"),
            ("\n{\"turns\": [{\"delay\": 1}]}\n", 2, "turn 1: needs"),
            (
                "{\"turns\": [{\"text\": \"a\", \"delay\": -1}]}\n",
                1,
                "delay",
            ),
            (
                "{\"turns\": [{\"text\": \"a\", \"timestamp\": 3}]}\n",
                1,
                "timestamp",
            ),
            ("{\"session\": 1}\n", 1, "expected"),
        ] {
            let (_d, p) = write(text);
            let err = load_multi_turn(&p).unwrap_err().to_string();
            assert!(err.contains(&format!(":{line}: ")), "{err}");
            assert!(err.contains(why), "{err}");
        }
    }
}
