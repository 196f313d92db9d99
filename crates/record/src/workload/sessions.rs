//! Multi-turn sessions: conversations whose next turn waits for the last
//! answer.
//!
//! Sources:
//! - `--dataset sharegpt FILE`: a JSON array of `{"conversations": [{"from",
//!   "value"}…]}`; every `human`/`user` message is a turn, in order. The
//!   dataset's own replies are dropped: each turn is sent with the model's
//!   *actual* replies so far.
//! - `--dataset multi-turn FILE`: AIPerf's multi-turn JSONL, one session per
//!   line: `{"session_id": "…", "turns": [{"text": "…", "delay": ms}…]}`
//!   (`texts`, a list of strings, is joined with a blank line; lines sharing a
//!   `session_id` are one session, in file order). A turn's `delay` is its
//!   think time; the first turn's is ignored (sessions start on the arrival
//!   schedule).
//!
//! Timing: session `s` starts at the `s`-th instant of the open-loop
//! schedule (`--request-rate`, `--arrival`) and uses conversation
//! `s mod conversations`. Turn 1 is eligible at that instant; turn `k + 1` is
//! eligible when turn `k` completed plus its think time (`delay`, else
//! `--think-time`). Each turn is one row whose `arrivalMs` is the instant it
//! became eligible, and latency counts from there, so a turn sent late by a
//! busy client is charged for the wait (see docs/recorder.md).
//!
//! Endings: a failed turn ends its session; each later turn is a failed row
//! with reason `session_aborted`, arriving (and ending) when the failure was
//! seen. A turn not yet eligible when observation stopped is an in-flight row
//! labelled `notEligible`, arriving at its eligibility instant when that is
//! known (the previous turn completed) and at the stop instant otherwise: it
//! never arrived inside the window, so it is excluded, not judged.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use crate::exchange::sse::SseParser;
use crate::exchange::{run_one, Ending, FailReason, Observation};
use crate::run::{Finished, Shared};
use crate::transport::client::{BodyError, Head, ResponseBody, SendError, Transport};
use crate::workload::prompt::prompt_hash;
use goodput_core::trace::{Labels, Scalar};

use crate::workload::WorkloadError;
use goodput_tokenizer::{sha256_hex, TokenCounter};

/// The most reply bytes kept per turn for the history (a runaway stream
/// cannot exhaust memory; a longer reply is kept cut at this size).
pub const MAX_REPLY_BYTES: usize = 4 << 20;

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
    let shown = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| WorkloadError::Io {
        path: shown.clone(),
        source,
    })?;
    Ok((shown, bytes))
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

/// The sessions of one run: which conversation each plays, when each
/// starts, and where its rows sit in the trace.
#[derive(Debug, Clone)]
pub struct SessionSet {
    /// The dataset.
    pub dataset: Arc<Dataset>,
    /// The order conversations are played in: session `s` plays conversation
    /// `order[s mod conversations]` (file order, or a seeded permutation for
    /// the points of a rate sweep).
    pub order: Vec<usize>,
    /// Scheduled start of each session, ms since t0 (ascending).
    pub starts_ms: Arc<Vec<f64>>,
    /// Row index of each session's first turn; one more entry at the end
    /// (the total number of rows).
    pub offsets: Vec<usize>,
    /// Think time for turns whose dataset gives none, ms.
    pub think_ms: f64,
    /// `max_tokens` of each row, when `--output-tokens` is set.
    pub max_tokens: Vec<Option<u32>>,
    /// The output length distribution the draws came from.
    pub output: Option<crate::workload::lengths::LengthDist>,
    /// The seed of those draws.
    pub seed: u64,
    /// Counts client-side prompt tokens, when a tokenizer is given.
    pub counter: Option<Arc<TokenCounter>>,
}

impl SessionSet {
    /// Lays out `starts_ms.len()` sessions over the dataset.
    pub fn new(
        dataset: Arc<Dataset>,
        starts_ms: Vec<f64>,
        think_ms: f64,
        output: Option<&crate::workload::lengths::LengthDist>,
        seed: u64,
        counter: Option<Arc<TokenCounter>>,
    ) -> SessionSet {
        let order = (0..dataset.conversations.len()).collect();
        SessionSet::laid_out(
            dataset,
            order,
            Arc::new(starts_ms),
            think_ms,
            output.copied(),
            seed,
            counter,
        )
    }

    fn laid_out(
        dataset: Arc<Dataset>,
        order: Vec<usize>,
        starts_ms: Arc<Vec<f64>>,
        think_ms: f64,
        output: Option<crate::workload::lengths::LengthDist>,
        seed: u64,
        counter: Option<Arc<TokenCounter>>,
    ) -> SessionSet {
        let mut offsets = Vec::with_capacity(starts_ms.len() + 1);
        let mut total = 0;
        for s in 0..starts_ms.len() {
            offsets.push(total);
            total += dataset.conversations[order[s % order.len()]].turns.len();
        }
        offsets.push(total);
        SessionSet {
            max_tokens: crate::workload::output_draws(output.as_ref(), seed, total),
            dataset,
            order,
            starts_ms,
            offsets,
            think_ms,
            output,
            seed,
            counter,
        }
    }

    /// The same sessions playing the conversations in the order drawn by
    /// `seed` (Fisher–Yates over ChaCha8 seeded with `seed`, stream 0, as
    /// for a prompt list), so the points of a rate sweep do not send the
    /// same conversations in the same order. Rows are laid out again.
    pub fn in_seeded_order(&self, seed: u64) -> SessionSet {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut order: Vec<usize> = (0..self.dataset.conversations.len()).collect();
        for i in (1..order.len()).rev() {
            order.swap(i, rng.random_range(0..=i));
        }
        SessionSet::laid_out(
            self.dataset.clone(),
            order,
            self.starts_ms.clone(),
            self.think_ms,
            self.output,
            self.seed,
            self.counter.clone(),
        )
    }

    /// The index in the dataset of the conversation session `s` plays.
    pub fn conversation_index(&self, s: usize) -> usize {
        self.order[s % self.order.len()]
    }

    /// Sessions in the run.
    pub fn sessions(&self) -> usize {
        self.starts_ms.len()
    }

    /// Rows of the first `sessions` sessions.
    pub fn rows_of(&self, sessions: usize) -> usize {
        self.offsets[sessions.min(self.sessions())]
    }

    /// The conversation session `s` plays.
    pub fn conversation(&self, s: usize) -> &Conversation {
        &self.dataset.conversations[self.conversation_index(s)]
    }

    /// The (session, 0-based turn) of row `index`.
    pub fn locate(&self, index: usize) -> Option<(usize, usize)> {
        let s = self
            .offsets
            .partition_point(|&o| o <= index)
            .checked_sub(1)?;
        (s < self.sessions()).then(|| (s, index - self.offsets[s]))
    }

    /// The user text of row `index`.
    pub fn turn_text(&self, index: usize) -> &str {
        self.locate(index)
            .map_or("", |(s, k)| &self.conversation(s).turns[k].text)
    }

    /// The labels every row of (session, turn) carries.
    pub fn labels(&self, index: usize) -> Labels {
        let mut labels = Labels::new();
        if let Some((s, k)) = self.locate(index) {
            // A string, as docs/contract.md §10.4 has it: a name to group
            // by, not a quantity.
            labels.insert("session".into(), Scalar::String(s.to_string()));
            labels.insert("turn".into(), Scalar::Number((k + 1) as f64));
            labels.insert(
                "conversation".into(),
                Scalar::Number(self.conversation_index(s) as f64),
            );
        }
        if let Some(Some(n)) = self.max_tokens.get(index) {
            labels.insert(
                "requestedOutputTokens".into(),
                Scalar::Number(f64::from(*n)),
            );
        }
        labels
    }

    /// Think time before turn `k` (0-based, `k >= 1`) of session `s`, ms.
    pub fn think_before(&self, s: usize, k: usize) -> f64 {
        self.conversation(s).turns[k]
            .delay_ms
            .unwrap_or(self.think_ms)
    }
}

/// A transport that keeps a copy of each response body (up to
/// [`MAX_REPLY_BYTES`]), so the reply can join the history without
/// touching the request path's own reading.
struct Capture<T> {
    inner: Arc<T>,
    sink: Arc<Mutex<Vec<u8>>>,
}

struct CaptureBody<B> {
    inner: B,
    sink: Arc<Mutex<Vec<u8>>>,
}

impl<B: ResponseBody> ResponseBody for CaptureBody<B> {
    async fn next_frame(&mut self) -> Result<Option<Bytes>, BodyError> {
        let frame = self.inner.next_frame().await?;
        if let Some(bytes) = &frame {
            let mut sink = self.sink.lock().unwrap_or_else(|p| p.into_inner());
            let room = MAX_REPLY_BYTES.saturating_sub(sink.len());
            sink.extend_from_slice(&bytes[..bytes.len().min(room)]);
        }
        Ok(frame)
    }
}

impl<T: Transport> Transport for Capture<T> {
    type Body = CaptureBody<T::Body>;
    async fn send(&self, body: Bytes) -> Result<(Head, Self::Body), SendError> {
        let (head, inner) = self.inner.send(body).await?;
        Ok((
            head,
            CaptureBody {
                inner,
                sink: self.sink.clone(),
            },
        ))
    }
}

#[derive(Deserialize)]
struct ReplyChunk {
    #[serde(default)]
    choices: Vec<ReplyChoice>,
}

#[derive(Deserialize)]
struct ReplyChoice {
    #[serde(default)]
    delta: Option<ReplyDelta>,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize)]
struct ReplyDelta {
    #[serde(default)]
    content: Option<String>,
}

/// The model's reply text in a captured SSE body: every `delta.content`
/// (chat) or `text` (completions), in order. Unreadable events add nothing.
pub fn reply_text(body: &[u8]) -> String {
    let mut out = String::new();
    // The capture holds at most MAX_REPLY_BYTES, so no event can pass this
    // bound, and an event the request path refused failed the turn already.
    let mut parser = SseParser::with_limit(MAX_REPLY_BYTES);
    let mut on_event = |event: crate::exchange::sse::Event<'_>| {
        if let Ok(chunk) = serde_json::from_slice::<ReplyChunk>(event.data) {
            for c in chunk.choices {
                if let Some(s) = c.delta.and_then(|d| d.content) {
                    out.push_str(&s);
                }
                if let Some(s) = c.text {
                    out.push_str(&s);
                }
            }
        }
    };
    let _ = parser.push(body, &mut on_event);
    // A body cut by the capture limit may end without a blank line.
    let _ = parser.push(b"\n\n", &mut on_event);
    out
}

/// Waits until `at_ms` or a cancellation; returns the stop instant if
/// cancelled first.
async fn wait_until<T>(shared: &Shared<T>, at_ms: f64) -> Option<f64> {
    let mut cancel = shared.cancel.clone();
    if let Some(t) = *cancel.borrow() {
        return Some(t);
    }
    tokio::select! {
        () = tokio::time::sleep_until(shared.clock.at(at_ms)) => None,
        r = cancel.wait_for(Option::is_some) => match r {
            Ok(t) => *t,
            // The sender is gone without cancelling: keep going.
            Err(_) => None,
        },
    }
}

fn report<T>(shared: &Shared<T>, index: usize, finished: Finished) {
    // The receiver lives until every sender is gone.
    let _ = shared.results.send((index, finished));
}

/// The row of turn `index`, never sent because it was not yet eligible when
/// observation stopped at `at_ms` (or its session never started): in flight,
/// labelled `notEligible`, arriving at `at_ms`.
pub(crate) fn not_eligible_row(set: &SessionSet, index: usize, at_ms: f64) -> Finished {
    unsent_row(
        set,
        index,
        at_ms,
        Ending::InFlight,
        ("notEligible", Scalar::Bool(true)),
    )
}

fn unsent_row(
    set: &SessionSet,
    index: usize,
    arrival_ms: f64,
    ending: Ending,
    extra: (&str, Scalar),
) -> Finished {
    let mut labels = set.labels(index);
    labels.insert(extra.0.into(), extra.1);
    let text = set.turn_text(index);
    Finished {
        arrival_ms,
        obs: Observation::default(),
        ending,
        class: None,
        prompt_chars: text.chars().count() as u64,
        prompt_hash: prompt_hash(text),
        labels,
    }
}

/// Plays session `s` to its end: every turn reports exactly one row.
pub(crate) async fn run_session<T: Transport>(shared: Shared<T>, set: Arc<SessionSet>, s: usize) {
    let base = set.offsets[s];
    let turns = set.conversation(s).turns.len();
    let mut history: Vec<(&'static str, String)> = Vec::new();
    let mut eligible_ms = set.starts_ms[s];
    for k in 0..turns {
        let index = base + k;
        if k > 0 {
            if let Some(stop) = wait_until(&shared, eligible_ms).await {
                // Never eligible inside observation: this turn's eligibility
                // is known; the later ones' is not, beyond "after the stop".
                for (j, at) in
                    (k..turns).map(|j| (j, if j == k { eligible_ms.max(stop) } else { stop }))
                {
                    let f = unsent_row(
                        &set,
                        base + j,
                        at,
                        Ending::InFlight,
                        ("notEligible", Scalar::Bool(true)),
                    );
                    report(&shared, base + j, f);
                }
                return;
            }
        }
        let turn = &set.conversation(s).turns[k];
        history.push(("user", turn.text.clone()));
        let max_tokens = set.max_tokens.get(index).copied().flatten();
        let body = shared.config.template.body_messages(&history, max_tokens);
        let capture = Capture {
            inner: shared.transport.clone(),
            sink: Arc::new(Mutex::new(Vec::new())),
        };
        shared.note_send(Some(eligible_ms));
        let (mut obs, ending) = run_one(
            &capture,
            body,
            &shared.clock,
            eligible_ms,
            shared.config.timeout,
            shared.cancel.clone(),
            shared.config.max_event_bytes,
        )
        .await;
        let sent: Vec<&str> = history.iter().map(|(_, t)| t.as_str()).collect();
        shared.label_error(&mut obs, &sent);
        shared.note_ending(&ending);
        let mut labels = set.labels(index);
        if let Some(c) = &set.counter {
            // Counted after the exchange, off the request's path.
            let n: usize = history
                .iter()
                .map(|(_, text)| c.count(text).unwrap_or(0))
                .sum();
            labels.insert("promptTokens".into(), Scalar::Number(n as f64));
        }
        labels.insert(
            "historyMessages".into(),
            Scalar::Number((history.len() - 1) as f64),
        );
        let finished = Finished {
            arrival_ms: eligible_ms,
            obs,
            ending,
            class: None,
            prompt_chars: history.iter().map(|(_, t)| t.chars().count() as u64).sum(),
            prompt_hash: prompt_hash(&turn.text),
            labels,
        };
        report(&shared, index, finished);
        match ending {
            Ending::Completed { completed_ms } => {
                let body =
                    std::mem::take(&mut *capture.sink.lock().unwrap_or_else(|p| p.into_inner()));
                history.push(("assistant", reply_text(&body)));
                if k + 1 < turns {
                    eligible_ms = completed_ms + set.think_before(s, k + 1);
                }
            }
            Ending::Failed { ended_ms, .. } => {
                for j in k + 1..turns {
                    let f = unsent_row(
                        &set,
                        base + j,
                        ended_ms,
                        Ending::Failed {
                            reason: FailReason::SessionAborted,
                            ended_ms,
                        },
                        ("abortedAfterTurn", Scalar::Number((k + 1) as f64)),
                    );
                    report(&shared, base + j, f);
                }
                return;
            }
            Ending::InFlight => {
                let stop = shared.cancel.borrow().unwrap_or(eligible_ms);
                for j in k + 1..turns {
                    let f = unsent_row(
                        &set,
                        base + j,
                        stop,
                        Ending::InFlight,
                        ("notEligible", Scalar::Bool(true)),
                    );
                    report(&shared, base + j, f);
                }
                return;
            }
        }
    }
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

    #[test]
    fn rows_are_laid_out_session_by_session() {
        let d = Arc::new(Dataset {
            kind: "multi-turn",
            conversations: vec![
                Conversation {
                    turns: vec![
                        Turn {
                            text: "a".into(),
                            delay_ms: None
                        };
                        3
                    ],
                },
                Conversation {
                    turns: vec![
                        Turn {
                            text: "b".into(),
                            delay_ms: Some(7.0)
                        };
                        2
                    ],
                },
            ],
            sha256: String::new(),
        });
        let set = SessionSet::new(d, vec![0.0, 10.0, 20.0], 100.0, None, 0, None);
        // Sessions play conversations 0, 1, 0: 3 + 2 + 3 rows.
        assert_eq!(set.offsets, vec![0, 3, 5, 8]);
        assert_eq!(set.locate(0), Some((0, 0)));
        assert_eq!(set.locate(4), Some((1, 1)));
        assert_eq!(set.locate(7), Some((2, 2)));
        assert_eq!(set.locate(8), None);
        assert_eq!(set.rows_of(2), 5);
        assert_eq!(set.think_before(0, 1), 100.0);
        assert_eq!(set.think_before(1, 1), 7.0);
        assert_eq!(set.labels(4)["turn"], Scalar::Number(2.0));
        assert_eq!(set.labels(4)["session"], Scalar::String("1".into()));
    }

    #[test]
    fn a_sweep_point_plays_the_conversations_in_its_own_seeded_order() {
        let conversations: Vec<Conversation> = (1..=6)
            .map(|n| Conversation {
                turns: vec![
                    Turn {
                        text: format!("c{n}"),
                        delay_ms: None
                    };
                    n
                ],
            })
            .collect();
        let d = Arc::new(Dataset {
            kind: "multi-turn",
            conversations,
            sha256: String::new(),
        });
        let set = SessionSet::new(d, vec![0.0; 6], 0.0, None, 0, None);
        assert_eq!(set.order, vec![0, 1, 2, 3, 4, 5]);
        let a = set.in_seeded_order(1);
        let b = set.in_seeded_order(2);
        for s in [&a, &b] {
            let mut sorted = s.order.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, set.order, "a permutation");
            // Conversation n has n turns: the layout follows the new order,
            // and each row names the file's conversation it plays.
            let mut offset = 0;
            for session in 0..6 {
                let c = s.order[session];
                assert_eq!(s.offsets[session], offset);
                assert_eq!(s.labels(offset)["conversation"], Scalar::Number(c as f64));
                assert_eq!(s.turn_text(offset), format!("c{}", c + 1));
                offset += c + 1;
            }
            assert_eq!(s.offsets[6], 21);
        }
        // 6! orders: two seeds giving the same one would be a 1-in-720 accident
        // (checked: they differ), and the same seed always gives the same.
        assert_ne!(a.order, b.order);
        assert_eq!(a.order, set.in_seeded_order(1).order);
    }

    #[test]
    fn the_reply_is_the_content_of_every_chunk_in_order() {
        let body = b"data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n\
data: {\"choices\":[{\"delta\":{\"content\":\" the\"}}]}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\" model\"}}]}\n\n\
data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\n\ndata: [DONE]\n\n";
        assert_eq!(reply_text(body), " the model");
        assert_eq!(reply_text(b"data: {\"choices\":[{\"text\":\"x\"}]}"), "x");
    }

    /// A server that answers every chat request with `re:<its last user
    /// message>`, streamed in two chunks, and keeps every body it received.
    #[derive(Default)]
    struct Echo {
        bodies: Mutex<Vec<serde_json::Value>>,
    }

    struct EchoBody(std::collections::VecDeque<Bytes>);

    impl ResponseBody for EchoBody {
        async fn next_frame(&mut self) -> Result<Option<Bytes>, BodyError> {
            Ok(self.0.pop_front())
        }
    }

    impl Transport for Echo {
        type Body = EchoBody;
        async fn send(&self, body: Bytes) -> Result<(Head, EchoBody), SendError> {
            let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
            let last = v["messages"].as_array().unwrap().last().unwrap()["content"]
                .as_str()
                .unwrap()
                .to_owned();
            self.bodies.lock().unwrap().push(v);
            let chunk = |c: &str| {
                Bytes::from(format!(
                    "data: {{\"choices\":[{{\"delta\":{{\"content\":{}}}}}]}}\n\n",
                    serde_json::to_string(c).unwrap()
                ))
            };
            let frames = vec![
                chunk("re:"),
                chunk(&last),
                Bytes::from_static(
                    b"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
                ),
            ];
            Ok((
                Head {
                    status: 200,
                    event_stream: true,
                },
                EchoBody(frames.into()),
            ))
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_turn_carries_the_conversation_with_the_models_actual_replies() {
        use crate::run::{run, Counters, Load, RunConfig};
        use crate::workload::body::{Api, BodyTemplate, PromptSource};

        let turn = |text: &str, delay_ms| Turn {
            text: text.into(),
            delay_ms,
        };
        let dataset = Arc::new(Dataset {
            kind: "multi-turn",
            conversations: vec![
                Conversation {
                    turns: vec![turn("a1", None), turn("a2", Some(15.0)), turn("a3", None)],
                },
                Conversation {
                    turns: vec![turn("b1", None), turn("b2", None)],
                },
            ],
            sha256: String::new(),
        });
        // Sessions at 0 and 10 ms play conversations a and b; think time 5 ms
        // where the dataset gives none.
        let set = Arc::new(SessionSet::new(
            dataset,
            vec![0.0, 10.0],
            5.0,
            None,
            0,
            None,
        ));
        let config = Arc::new(RunConfig {
            load: Load::Sessions { set: set.clone() },
            window_end_ms: 100.0,
            grace_ms: 2_000.0,
            timeout: std::time::Duration::from_secs(2),
            prompts: PromptSource::Sessions(set),
            template: BodyTemplate {
                api: Api::Chat,
                model: "m".into(),
                max_tokens: None,
                ignore_eos: false,
                extra: Default::default(),
            },
            max_event_bytes: crate::exchange::sse::DEFAULT_MAX_EVENT_BYTES,
            secrets: Default::default(),
            loops: 1,
        });
        let echo = Arc::new(Echo::default());
        let t0 = tokio::time::Instant::now() + std::time::Duration::from_millis(5);
        let outcome = run(
            echo.clone(),
            config,
            t0,
            Arc::new(Counters::default()),
            Box::pin(std::future::pending()),
        )
        .await;

        // Every history, user and assistant in turn, is what was said before:
        // the model's reply to "a1" is "re:a1", and so on.
        let said = |v: &serde_json::Value| -> Vec<(String, String)> {
            v["messages"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    (
                        m["role"].as_str().unwrap().to_owned(),
                        m["content"].as_str().unwrap().to_owned(),
                    )
                })
                .collect()
        };
        let mut seen: Vec<Vec<(String, String)>> =
            echo.bodies.lock().unwrap().iter().map(said).collect();
        seen.sort();
        let conv = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(r, c)| ((*r).to_owned(), (*c).to_owned()))
                .collect()
        };
        let mut want = vec![
            conv(&[("user", "a1")]),
            conv(&[("user", "a1"), ("assistant", "re:a1"), ("user", "a2")]),
            conv(&[
                ("user", "a1"),
                ("assistant", "re:a1"),
                ("user", "a2"),
                ("assistant", "re:a2"),
                ("user", "a3"),
            ]),
            conv(&[("user", "b1")]),
            conv(&[("user", "b1"), ("assistant", "re:b1"), ("user", "b2")]),
        ];
        want.sort();
        assert_eq!(seen, want);

        // Rows: a1 a2 a3 b1 b2; a turn arrives at the previous completion
        // plus its think time (15 ms from the dataset, else 5 ms), and is
        // never sent before that.
        assert_eq!(outcome.results.len(), 5);
        let done = |i: usize| match outcome.results[i].as_ref().unwrap().ending {
            Ending::Completed { completed_ms } => completed_ms,
            ref e => panic!("row {i}: {e:?}"),
        };
        for (row, prev, think) in [(1, 0, 15.0), (2, 1, 5.0), (4, 3, 5.0)] {
            let f = outcome.results[row].as_ref().unwrap();
            assert_eq!(f.arrival_ms, done(prev) + think, "row {row}");
            assert!(f.obs.sent_ms.unwrap() >= f.arrival_ms, "row {row}");
        }
        assert_eq!(outcome.results[0].as_ref().unwrap().arrival_ms, 0.0);
        assert_eq!(outcome.results[3].as_ref().unwrap().arrival_ms, 10.0);
    }
}
