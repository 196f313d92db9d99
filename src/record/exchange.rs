//! One request, from send to its ending: the rules that turn a response into
//! "completed at t", "failed because r at t" or "still in flight".
//!
//! Timestamps are taken once per received network frame, before the frame is
//! parsed, so parsing cost never shows up as server latency. The first token
//! is the first frame holding a chunk with non-empty content (a role-only or
//! empty first chunk is not a token). A request ends:
//! - completed at `[DONE]`, or at a clean end of the body after a finish
//!   reason (some servers omit `[DONE]`); with no content at all it fails as
//!   `no_content` instead (there is no first token to measure);
//! - failed `connect_refused` / `connect_error` before a response head,
//!   `tls_certificate` / `tls_handshake` when the TLS handshake fails,
//!   `disconnect` when the connection breaks (before the head or mid-body),
//!   `http_<status>` on a non-2xx head, `bad_stream` on an unreadable chunk or
//!   a body that ends cleanly without an end marker, `server_error` on an
//!   error object or `event: error`, `timeout` when `timeout` has passed since
//!   the *scheduled* arrival;
//! - in flight when the run is cancelled first (horizon or interrupt).
//!
//! A failure in the server's own words is kept for the row's `errorText`
//! label: the first bytes of a non-2xx body (read after the ending is
//! decided, so reading it never moves `endedMs`) or of an SSE error event
//! (see [`super::error_text`]).

use std::time::Duration;

use bytes::Bytes;
use tokio::sync::watch;
use tokio::time::Instant;

use super::client::{ResponseBody, SendError, Transport};
use super::error_text::{read_head, ErrorHead, KEEP_BYTES};
use super::sse::{classify, Chunk, SseParser};

/// The run's monotonic clock: milliseconds since `t0`.
#[derive(Clone, Copy, Debug)]
pub struct Clock {
    t0: Instant,
}

impl Clock {
    /// A clock whose zero is `t0`.
    pub fn new(t0: Instant) -> Clock {
        Clock { t0 }
    }

    /// Milliseconds since t0 (0 before t0).
    pub fn now_ms(&self) -> f64 {
        Instant::now()
            .checked_duration_since(self.t0)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
    }

    /// The instant `ms` after t0.
    pub fn at(&self, ms: f64) -> Instant {
        self.t0 + Duration::from_secs_f64(ms.max(0.0) / 1000.0)
    }
}

/// Why a request failed; `as_str` is the trace's `reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum FailReason {
    /// The connection was refused.
    ConnectRefused,
    /// The connection could not be made otherwise.
    ConnectError,
    /// A non-2xx response.
    Http(u16),
    /// The connection broke.
    Disconnect,
    /// The stream could not be read as OpenAI SSE, or ended without an end marker.
    BadStream,
    /// The server sent an error in the stream.
    ServerError,
    /// The timeout passed (measured from the scheduled arrival).
    Timeout,
    /// The stream ended normally but never carried any content.
    NoContent,
    /// The server's TLS certificate was not trusted.
    TlsCertificate,
    /// The TLS handshake failed otherwise.
    TlsHandshake,
}

impl FailReason {
    /// The trace `reason` string (`http_503`, `timeout`, …).
    pub fn as_string(self) -> String {
        match self {
            FailReason::ConnectRefused => "connect_refused".into(),
            FailReason::ConnectError => "connect_error".into(),
            FailReason::Http(status) => format!("http_{status}"),
            FailReason::Disconnect => "disconnect".into(),
            FailReason::BadStream => "bad_stream".into(),
            FailReason::ServerError => "server_error".into(),
            FailReason::Timeout => "timeout".into(),
            FailReason::NoContent => "no_content".into(),
            FailReason::TlsCertificate => "tls_certificate".into(),
            FailReason::TlsHandshake => "tls_handshake".into(),
        }
    }
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ending {
    /// The response finished normally at `completed_ms`.
    Completed {
        /// When the end marker arrived, ms since t0.
        completed_ms: f64,
    },
    /// The request failed at `ended_ms`.
    Failed {
        /// Why.
        reason: FailReason,
        /// When the failure was observed, ms since t0.
        ended_ms: f64,
    },
    /// Still running when the run was cancelled (horizon or interrupt).
    InFlight,
}

/// What was observed of one request so far; kept outside the request future
/// so a timeout or cancellation still knows whether a first token came.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Observation {
    /// When the request was handed to the transport, ms since t0.
    pub sent_ms: Option<f64>,
    /// When the first content chunk arrived, ms since t0.
    pub first_token_ms: Option<f64>,
    /// Chunks that carried content.
    pub content_chunks: u64,
    /// `usage.completion_tokens`, when the server sent a usage block.
    pub usage_output_tokens: Option<u64>,
    /// `usage.prompt_tokens`, when the server sent a usage block.
    pub usage_prompt_tokens: Option<u64>,
    /// A choice carried a finish reason.
    pub finished: bool,
    /// The first bytes of a non-2xx body or of an SSE error event.
    pub error_head: Option<ErrorHead>,
}

/// The SSE-reading half of a request, without I/O: feed frames, get the ending.
#[derive(Debug, Default)]
pub struct StreamState {
    parser: SseParser,
}

impl StreamState {
    /// Reads one frame received at `now_ms`; returns the ending when the frame
    /// decides it. Events after a deciding one in the same frame are ignored.
    pub fn feed(&mut self, obs: &mut Observation, frame: &[u8], now_ms: f64) -> Option<Ending> {
        let mut ending = None;
        self.parser.push(frame, |event| {
            if ending.is_some() {
                return;
            }
            let data = event.data;
            match classify(event) {
                Chunk::Done => ending = Some(finish(obs, now_ms)),
                Chunk::Data {
                    content,
                    finished,
                    usage,
                } => {
                    if content {
                        obs.content_chunks += 1;
                        obs.first_token_ms.get_or_insert(now_ms);
                    }
                    obs.finished |= finished;
                    if let Some(u) = usage {
                        if u.completion_tokens.is_some() {
                            obs.usage_output_tokens = u.completion_tokens;
                        }
                        if u.prompt_tokens.is_some() {
                            obs.usage_prompt_tokens = u.prompt_tokens;
                        }
                    }
                }
                Chunk::ServerError(_) => {
                    obs.error_head = Some(ErrorHead {
                        bytes: data[..data.len().min(KEEP_BYTES)].to_vec(),
                        truncated: data.len() > KEEP_BYTES,
                    });
                    ending = Some(Ending::Failed {
                        reason: FailReason::ServerError,
                        ended_ms: now_ms,
                    })
                }
                Chunk::Malformed => {
                    ending = Some(Ending::Failed {
                        reason: FailReason::BadStream,
                        ended_ms: now_ms,
                    })
                }
            }
        });
        ending
    }

    /// The body ended cleanly at `now_ms` without `[DONE]`.
    pub fn end_of_body(&mut self, obs: &Observation, now_ms: f64) -> Ending {
        if obs.finished {
            finish(obs, now_ms)
        } else {
            Ending::Failed {
                reason: FailReason::BadStream,
                ended_ms: now_ms,
            }
        }
    }
}

fn finish(obs: &Observation, now_ms: f64) -> Ending {
    if obs.first_token_ms.is_some() {
        Ending::Completed {
            completed_ms: now_ms,
        }
    } else {
        Ending::Failed {
            reason: FailReason::NoContent,
            ended_ms: now_ms,
        }
    }
}

/// Sends one request and reads it to its ending. Returns the body when the
/// response completed, so the caller can drain it and keep the connection.
pub async fn exchange<T: Transport>(
    transport: &T,
    body: Bytes,
    clock: &Clock,
    obs: &mut Observation,
) -> (Ending, Option<T::Body>) {
    obs.sent_ms = Some(clock.now_ms());
    let (status, mut response) = match transport.send(body).await {
        Ok(head) => head,
        Err(e) => {
            let reason = match e {
                SendError::Refused => FailReason::ConnectRefused,
                SendError::Connect(_) => FailReason::ConnectError,
                SendError::Disconnected(_) => FailReason::Disconnect,
                SendError::Tls(failure) => match failure.reason() {
                    "tls_certificate" => FailReason::TlsCertificate,
                    _ => FailReason::TlsHandshake,
                },
            };
            let ending = Ending::Failed {
                reason,
                ended_ms: clock.now_ms(),
            };
            return (ending, None);
        }
    };
    if !(200..300).contains(&status) {
        let ending = Ending::Failed {
            reason: FailReason::Http(status),
            ended_ms: clock.now_ms(),
        };
        // The body (the server's error text) is read by `run_one`.
        return (ending, Some(response));
    }
    let mut state = StreamState::default();
    loop {
        match response.next_frame().await {
            Ok(Some(frame)) => {
                let now = clock.now_ms();
                if let Some(ending) = state.feed(obs, &frame, now) {
                    let keep = matches!(ending, Ending::Completed { .. });
                    return (ending, keep.then_some(response));
                }
            }
            Ok(None) => return (state.end_of_body(obs, clock.now_ms()), None),
            Err(_) => {
                let ending = Ending::Failed {
                    reason: FailReason::Disconnect,
                    ended_ms: clock.now_ms(),
                };
                return (ending, None);
            }
        }
    }
}

/// Runs one request with its timeout (from `arrival_ms`) and the run's
/// cancellation signal, which carries the instant the run stopped observing.
pub async fn run_one<T: Transport>(
    transport: &T,
    body: Bytes,
    clock: &Clock,
    arrival_ms: f64,
    timeout: Duration,
    mut cancel: watch::Receiver<Option<f64>>,
) -> (Observation, Ending) {
    let mut obs = Observation::default();
    if cancel.borrow().is_some() {
        return (obs, Ending::InFlight);
    }
    let deadline_ms = arrival_ms + timeout.as_secs_f64() * 1000.0;
    let mut leftover = None;
    let ending = {
        let request = exchange(transport, body, clock, &mut obs);
        tokio::select! {
            biased;
            (ending, body) = request => {
                leftover = body;
                ending
            }
            () = cancelled(&mut cancel) => Ending::InFlight,
            () = tokio::time::sleep_until(clock.at(deadline_ms)) => Ending::Failed {
                reason: FailReason::Timeout,
                ended_ms: clock.now_ms(),
            },
        }
    };
    if let (Some(body), Ending::Failed { .. }) = (&mut leftover, ending) {
        // The error text of a non-2xx response; bounded in bytes and time.
        let head = tokio::time::timeout(ERROR_BODY_WAIT, read_head(body)).await;
        if let Ok((bytes, truncated)) = head {
            obs.error_head = Some(ErrorHead { bytes, truncated });
        }
    } else if let Some(mut body) = leftover {
        // Read the end of the chunked body so the connection returns to the
        // pool; it normally follows `[DONE]` in the same read. Bounded, and
        // it changes nothing in the row.
        let drain = async { while let Ok(Some(_)) = body.next_frame().await {} };
        let _ = tokio::time::timeout(Duration::from_millis(100), drain).await;
    }
    (obs, ending)
}

/// How long `run_one` waits for the body of a non-2xx response after its
/// head (the row's ending is already decided; this only bounds the label).
pub const ERROR_BODY_WAIT: Duration = Duration::from_millis(200);

/// Resolves when the run is cancelled; never, if the sender is gone without
/// having cancelled (a dropped sender is not a cancellation).
async fn cancelled(cancel: &mut watch::Receiver<Option<f64>>) {
    if cancel.wait_for(Option::is_some).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::Mutex;

    fn feed_all(frames: &[(&str, f64)]) -> (Observation, Option<Ending>) {
        let mut obs = Observation::default();
        let mut state = StreamState::default();
        for (frame, t) in frames {
            if let Some(e) = state.feed(&mut obs, frame.as_bytes(), *t) {
                return (obs, Some(e));
            }
        }
        (obs, None)
    }

    const ROLE: &str =
        "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n";
    const TOK: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n";
    const FIN: &str = "data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n";
    const USAGE: &str =
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n";
    const DONE: &str = "data: [DONE]\n\n";

    #[test]
    fn the_first_token_is_the_first_frame_with_content_not_the_role_chunk() {
        let (obs, ending) = feed_all(&[
            (ROLE, 10.0),
            (TOK, 20.0),
            (TOK, 30.0),
            (&format!("{TOK}{FIN}{USAGE}"), 40.0),
            (DONE, 41.0),
        ]);
        assert_eq!(obs.first_token_ms, Some(20.0));
        assert_eq!(obs.content_chunks, 3);
        assert_eq!(obs.usage_output_tokens, Some(3));
        assert_eq!(obs.usage_prompt_tokens, Some(7));
        assert_eq!(ending, Some(Ending::Completed { completed_ms: 41.0 }));
    }

    #[test]
    fn a_stream_with_no_content_fails_as_no_content() {
        let (_, ending) = feed_all(&[(ROLE, 1.0), (FIN, 2.0), (DONE, 3.0)]);
        assert_eq!(
            ending,
            Some(Ending::Failed {
                reason: FailReason::NoContent,
                ended_ms: 3.0
            })
        );
    }

    #[test]
    fn garbage_and_error_objects_end_the_request_at_their_frame() {
        let (obs, ending) = feed_all(&[(TOK, 5.0), ("data: {\"choices\":[\n\n", 6.0)]);
        assert_eq!(obs.first_token_ms, Some(5.0));
        assert_eq!(
            ending,
            Some(Ending::Failed {
                reason: FailReason::BadStream,
                ended_ms: 6.0
            })
        );
        let (_, ending) = feed_all(&[
            (TOK, 5.0),
            ("data: {\"error\":{\"message\":\"x\"}}\n\n", 7.0),
        ]);
        assert_eq!(
            ending,
            Some(Ending::Failed {
                reason: FailReason::ServerError,
                ended_ms: 7.0
            })
        );
    }

    #[test]
    fn an_sse_error_event_keeps_its_data_for_the_label() {
        let (obs, ending) = feed_all(&[
            (TOK, 5.0),
            ("data: {\"error\":{\"message\":\"boom\"}}\n\n", 7.0),
        ]);
        assert!(matches!(
            ending,
            Some(Ending::Failed {
                reason: FailReason::ServerError,
                ..
            })
        ));
        assert_eq!(
            obs.error_head,
            Some(ErrorHead {
                bytes: b"{\"error\":{\"message\":\"boom\"}}".to_vec(),
                truncated: false
            })
        );
    }

    #[test]
    fn a_clean_end_without_done_completes_only_after_a_finish_reason() {
        let mut obs = Observation::default();
        let mut state = StreamState::default();
        assert_eq!(state.feed(&mut obs, TOK.as_bytes(), 1.0), None);
        assert_eq!(
            state.end_of_body(&obs, 2.0),
            Ending::Failed {
                reason: FailReason::BadStream,
                ended_ms: 2.0
            }
        );
        assert_eq!(state.feed(&mut obs, FIN.as_bytes(), 3.0), None);
        assert_eq!(
            state.end_of_body(&obs, 4.0),
            Ending::Completed { completed_ms: 4.0 }
        );
    }

    /// A transport that plays back a script: a head (or a send error), then
    /// frames, then an end (clean, broken, or never).
    struct Scripted {
        head: Result<u16, SendError>,
        frames: Vec<&'static str>,
        end: ScriptEnd,
    }

    #[derive(Clone, Copy)]
    enum ScriptEnd {
        Clean,
        Broken,
        Hang,
    }

    struct ScriptBody(Mutex<VecDeque<&'static str>>, ScriptEnd);

    impl ResponseBody for ScriptBody {
        async fn next_frame(&mut self) -> Result<Option<Bytes>, super::super::client::BodyError> {
            let next = self.0.lock().unwrap().pop_front();
            match (next, self.1) {
                (Some(f), _) => Ok(Some(Bytes::from_static(f.as_bytes()))),
                (None, ScriptEnd::Clean) => Ok(None),
                (None, ScriptEnd::Broken) => Err(super::super::client::BodyError("reset".into())),
                (None, ScriptEnd::Hang) => std::future::pending().await,
            }
        }
    }

    impl Transport for Scripted {
        type Body = ScriptBody;
        async fn send(&self, _body: Bytes) -> Result<(u16, ScriptBody), SendError> {
            let status = self.head.clone()?;
            Ok((
                status,
                ScriptBody(Mutex::new(self.frames.iter().copied().collect()), self.end),
            ))
        }
    }

    async fn play(
        script: Scripted,
        timeout_ms: u64,
        cancel_after_ms: Option<u64>,
    ) -> (Observation, Ending) {
        let clock = Clock::new(Instant::now());
        let (tx, rx) = watch::channel(None);
        if let Some(ms) = cancel_after_ms {
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis(ms)).await;
                let _ = tx.send(Some(ms as f64));
            });
        } else {
            drop(tx);
        }
        run_one(
            &script,
            Bytes::new(),
            &clock,
            0.0,
            Duration::from_millis(timeout_ms),
            rx,
        )
        .await
    }

    fn reason(e: Ending) -> Option<FailReason> {
        match e {
            Ending::Failed { reason, .. } => Some(reason),
            _ => None,
        }
    }

    #[tokio::test]
    async fn every_failure_kind_gets_its_reason() {
        let cases = [
            (
                Scripted {
                    head: Err(SendError::Refused),
                    frames: vec![],
                    end: ScriptEnd::Clean,
                },
                FailReason::ConnectRefused,
            ),
            (
                Scripted {
                    head: Err(SendError::Connect("dns".into())),
                    frames: vec![],
                    end: ScriptEnd::Clean,
                },
                FailReason::ConnectError,
            ),
            (
                Scripted {
                    head: Err(SendError::Disconnected("eof".into())),
                    frames: vec![],
                    end: ScriptEnd::Clean,
                },
                FailReason::Disconnect,
            ),
            (
                Scripted {
                    head: Ok(503),
                    frames: vec![],
                    end: ScriptEnd::Clean,
                },
                FailReason::Http(503),
            ),
            (
                Scripted {
                    head: Ok(200),
                    frames: vec![ROLE, TOK],
                    end: ScriptEnd::Broken,
                },
                FailReason::Disconnect,
            ),
            (
                Scripted {
                    head: Ok(200),
                    frames: vec![TOK, "data: nope\n\n"],
                    end: ScriptEnd::Clean,
                },
                FailReason::BadStream,
            ),
            (
                Scripted {
                    head: Ok(200),
                    frames: vec![TOK, "event: error\ndata: x\n\n"],
                    end: ScriptEnd::Clean,
                },
                FailReason::ServerError,
            ),
            (
                Scripted {
                    head: Ok(200),
                    frames: vec![TOK],
                    end: ScriptEnd::Hang,
                },
                FailReason::Timeout,
            ),
        ];
        for (script, want) in cases {
            let (_, ending) = play(script, 50, None).await;
            assert_eq!(reason(ending), Some(want));
            assert_eq!(FailReason::Http(429).as_string(), "http_429");
        }
    }

    #[tokio::test]
    async fn a_timeout_keeps_the_first_token_and_ends_after_the_deadline() {
        let script = Scripted {
            head: Ok(200),
            frames: vec![ROLE, TOK],
            end: ScriptEnd::Hang,
        };
        let (obs, ending) = play(script, 40, None).await;
        assert!(obs.first_token_ms.is_some());
        match ending {
            Ending::Failed {
                reason: FailReason::Timeout,
                ended_ms,
            } => assert!(ended_ms >= 40.0),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn cancellation_leaves_the_request_in_flight_with_its_first_token() {
        let script = Scripted {
            head: Ok(200),
            frames: vec![TOK],
            end: ScriptEnd::Hang,
        };
        let (obs, ending) = play(script, 10_000, Some(20)).await;
        assert_eq!(ending, Ending::InFlight);
        assert!(obs.first_token_ms.is_some());
    }

    #[tokio::test]
    async fn a_normal_stream_completes_with_usage_tokens() {
        let script = Scripted {
            head: Ok(200),
            frames: vec![ROLE, TOK, TOK, FIN, USAGE, DONE],
            end: ScriptEnd::Clean,
        };
        let (obs, ending) = play(script, 1_000, None).await;
        assert!(matches!(ending, Ending::Completed { .. }));
        assert_eq!(obs.usage_output_tokens, Some(3));
        assert_eq!(obs.content_chunks, 2);
    }
}
