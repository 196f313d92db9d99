//! Multi-turn sessions (`--dataset`) on the run loop: the pacer starts
//! session `s` at its instant (as it sends an open-loop request), and the
//! session's turns then go out one after another through the run's own send
//! path (`Shared::exchange`), each carrying the conversation so far with
//! the model's *actual* replies. What a session is, when a turn becomes
//! eligible and what rows its endings make: `workload::sessions`.
//!
//! The one thing a turn needs that an open-loop request does not is its
//! reply: `Capture` wraps the run's transport and keeps a copy of each
//! response body (up to [`MAX_REPLY_BYTES`]), so the reply can join the
//! history without touching the request path's own reading.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::Deserialize;
use tokio::task::JoinHandle;

use goodput_core::trace::{Labels, Scalar};

use crate::exchange::sse::{Event, SseParser};
use crate::exchange::{Ending, FailReason, Observation};
use crate::run::{due_by, pace, Collector, Dispatched, Finished, RowLayout, Shared};
use crate::transport::client::{BodyError, Head, ResponseBody, SendError, Transport};
use crate::workload::prompt::prompt_hash;
use crate::workload::sessions::SessionSet;

/// The most reply bytes kept per turn for the history (a runaway stream
/// cannot exhaust memory; a longer reply is kept cut at this size).
pub const MAX_REPLY_BYTES: usize = 4 << 20;

/// A conversation so far: (role, text) of every message, in order.
type History = Vec<(&'static str, String)>;

/// A transport that keeps a copy of each response body (up to
/// [`MAX_REPLY_BYTES`]), so the reply can join the history without
/// touching the request path's own reading.
struct Capture<T> {
    inner: Arc<T>,
    sink: ReplySink,
}

/// Where a [`Capture`] copies the bytes of the response it sees.
#[derive(Clone, Default)]
struct ReplySink(Arc<Mutex<Vec<u8>>>);

impl ReplySink {
    /// Appends what still fits under [`MAX_REPLY_BYTES`].
    fn keep(&self, bytes: &[u8]) {
        let mut sink = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let room = MAX_REPLY_BYTES.saturating_sub(sink.len());
        sink.extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// The bytes kept so far, leaving the sink empty.
    fn take(&self) -> Vec<u8> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

struct CaptureBody<B> {
    inner: B,
    sink: ReplySink,
}

impl<B: ResponseBody> ResponseBody for CaptureBody<B> {
    async fn next_frame(&mut self) -> Result<Option<Bytes>, BodyError> {
        let frame = self.inner.next_frame().await?;
        if let Some(bytes) = &frame {
            self.sink.keep(bytes);
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
    let mut on_event = |event: Event<'_>| {
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

/// Waits until `at_ms` or until sending stops; returns the stop instant if
/// sending stopped first.
async fn wait_until<T>(shared: &Shared<T>, at_ms: f64) -> Option<f64> {
    let mut cancel = shared.halt.clone();
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

/// The row of turn `index`, never sent because it was not yet eligible when
/// observation stopped at `at_ms` (or its session never started): in flight,
/// labelled `notEligible`, arriving at `at_ms`.
fn not_eligible_row(set: &SessionSet, index: usize, at_ms: f64) -> Finished {
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

/// Starts every session at its instant on the run's pacer (as open-loop
/// requests are sent); the handle ends when every session has started.
pub(super) fn dispatch<T: Transport>(
    set: Arc<SessionSet>,
    issued: Arc<Dispatched>,
    shared: Shared<T>,
) -> JoinHandle<()> {
    let halt = shared.halt.clone();
    let clock = shared.clock;
    tokio::spawn(async move {
        let starts = set.starts_ms.clone();
        pace(&starts, 0, clock, halt, &issued, |s, _| {
            let shared = shared.clone();
            let set = set.clone();
            tokio::spawn(run_session(shared, set, s));
        })
        .await;
    })
}

/// Plays session `s` to its end: every turn reports exactly one row.
async fn run_session<T: Transport>(shared: Shared<T>, set: Arc<SessionSet>, s: usize) {
    let base = set.offsets[s];
    let turns = set.conversation(s).turns.len();
    let mut history = History::new();
    let mut eligible_ms = set.starts_ms[s];
    for k in 0..turns {
        if k > 0 {
            if let Some(stop) = wait_until(&shared, eligible_ms).await {
                // Never eligible inside observation: this turn's eligibility
                // is known; the later ones' is not, beyond "after the stop".
                let rows = base + k..base + turns;
                report_not_eligible(&shared, &set, rows, eligible_ms.max(stop), stop);
                return;
            }
        }
        let (ending, reply) = send_turn(&shared, &set, (s, k), eligible_ms, &mut history).await;
        match ending {
            Ending::Completed { completed_ms } => {
                history.push(("assistant", reply_text(&reply.take())));
                if k + 1 < turns {
                    eligible_ms = completed_ms + set.think_before(s, k + 1);
                }
            }
            Ending::Failed { ended_ms, .. } => {
                report_aborted(&shared, &set, base + k + 1..base + turns, k, ended_ms);
                return;
            }
            Ending::InFlight => {
                let stop = shared.cancel.borrow().unwrap_or(eligible_ms);
                report_not_eligible(&shared, &set, base + k + 1..base + turns, stop, stop);
                return;
            }
        }
    }
}

/// Sends turn `k` (0-based) of session `s`, eligible at `eligible_ms`,
/// with the conversation so far (the turn joins `history`) through the
/// run's send path, and reports its row. Returns its ending and its
/// captured reply.
async fn send_turn<T: Transport>(
    shared: &Shared<T>,
    set: &SessionSet,
    (s, k): (usize, usize),
    eligible_ms: f64,
    history: &mut History,
) -> (Ending, ReplySink) {
    let index = set.offsets[s] + k;
    let text = &set.conversation(s).turns[k].text;
    history.push(("user", text.clone()));
    let max_tokens = set.max_tokens.get(index).copied().flatten();
    let body = shared.config.template.body_messages(history, max_tokens);
    let capture = Capture {
        inner: shared.transport.clone(),
        sink: ReplySink::default(),
    };
    let sent: Vec<&str> = history.iter().map(|(_, t)| t.as_str()).collect();
    let (obs, ending) = shared
        .exchange(&capture, index, body, eligible_ms, Some(eligible_ms), &sent)
        .await;
    let finished = Finished {
        arrival_ms: eligible_ms,
        obs,
        ending,
        class: None,
        prompt_chars: history.iter().map(|(_, t)| t.chars().count() as u64).sum(),
        prompt_hash: prompt_hash(text),
        labels: turn_labels(set, index, history),
    };
    shared.report(index, finished);
    (ending, capture.sink)
}

/// The labels of a sent turn: the session's, the history's length and,
/// with a tokenizer, the prompt tokens of the whole history (counted after
/// the exchange, off the request's path).
fn turn_labels(set: &SessionSet, index: usize, history: &History) -> Labels {
    let mut labels = set.labels(index);
    if let Some(c) = &set.counter {
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
    labels
}

/// Reports `rows` (later turns of one session) as never eligible: in flight,
/// `notEligible`, the first arriving at `first_at_ms`, the others at
/// `rest_at_ms`.
fn report_not_eligible<T>(
    shared: &Shared<T>,
    set: &SessionSet,
    rows: Range<usize>,
    first_at_ms: f64,
    rest_at_ms: f64,
) {
    let first = rows.start;
    for index in rows {
        let at = if index == first {
            first_at_ms
        } else {
            rest_at_ms
        };
        shared.report(index, not_eligible_row(set, index, at));
    }
}

/// Reports `rows` (the turns after failed turn `k`, 0-based) as failed
/// `session_aborted` when the failure was seen, at `ended_ms`.
fn report_aborted<T>(
    shared: &Shared<T>,
    set: &SessionSet,
    rows: Range<usize>,
    k: usize,
    ended_ms: f64,
) {
    for index in rows {
        let f = unsent_row(
            set,
            index,
            ended_ms,
            Ending::Failed {
                reason: FailReason::SessionAborted,
                ended_ms,
            },
            ("abortedAfterTurn", Scalar::Number((k + 1) as f64)),
        );
        shared.report(index, f);
    }
}

/// The rows of a multi-turn run once it stopped (`issued` sessions started,
/// interrupted at `interrupted_at_ms` or else observed to `horizon_ms`). A
/// session due but never started has its first turn due at its start (a row
/// never sent, like any open-loop request); its later turns never became
/// eligible before the stop, and are handed to `collector` as such.
pub(super) fn layout(
    set: &SessionSet,
    issued: usize,
    interrupted_at_ms: Option<f64>,
    horizon_ms: f64,
    collector: &mut dyn Collector,
) -> RowLayout {
    let starts = &set.starts_ms;
    let sessions = due_by(starts, interrupted_at_ms)
        .max(issued)
        .min(starts.len());
    let stop_ms = interrupted_at_ms.unwrap_or(horizon_ms);
    let rows = set.rows_of(sessions);
    for s in issued.min(sessions)..sessions {
        for index in set.offsets[s] + 1..set.offsets[s + 1] {
            collector.ended(index, not_eligible_row(set, index, stop_ms));
        }
    }
    let arrivals_ms = (0..rows)
        .map(|i| match set.locate(i) {
            Some((s, 0)) => starts[s],
            _ => stop_ms,
        })
        .collect();
    RowLayout {
        arrivals_ms,
        planned: set.rows_of(starts.len()),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::sessions::{Conversation, Dataset, Turn};

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
                    ..Head::default()
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
                embeddings_batch: 1,
            },
            max_event_bytes: crate::exchange::sse::DEFAULT_MAX_EVENT_BYTES,
            secrets: Default::default(),
            loops: 1,
            max_in_flight: None,
        });
        let echo = Arc::new(Echo::default());
        let t0 = tokio::time::Instant::now() + std::time::Duration::from_millis(5);
        let outcome = run(
            echo.clone(),
            config,
            t0,
            Arc::new(Counters::default()),
            crate::run::Interrupts::cut(Box::pin(std::future::pending())),
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
