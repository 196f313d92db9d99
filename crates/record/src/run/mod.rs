//! The run loop: who sends what when, and when observation stops.
//!
//! Open loop: a task on the event loop walks the precomputed schedule,
//! sleeping on a [`Pacer`] (a `timerfd` on Linux: microsecond precision,
//! where tokio's timer wheel has 1 ms ticks) until each instant
//! `t0 + arrival_i`, then spawns request `i` beside it. It never waits for
//! an earlier request, and there is no connection cap.
//!
//! Closed loop: `C` workers wait for t0, then each sends (stamped with the
//! instant it sends), waits for the ending, and sends again, until the
//! window ends.
//!
//! Capped open loop (`--request-rate` with `--max-concurrency C`): the same
//! schedule, but a request whose instant finds C requests in flight waits
//! for a slot (first come, first served) before it is sent; it is still
//! timed from its scheduled instant, so the wait counts against its
//! latencies, and its row says how long it waited (`capWaitMs`).
//!
//! Observation stops at the horizon (window end + grace) or at an interrupt:
//! the cancellation signal goes out, every request still running reports
//! itself in flight, and the loop ends when every spawned request has reported.
//! A *stop-sending* interrupt (the first Ctrl-C) only stops the sending:
//! what is in flight (or waiting for a slot) runs on to its ending, up to
//! the grace period after the interrupt or the horizon, whichever is first,
//! or until a cut (the second Ctrl-C) — [`Drain`].
//!
//! Every request, whichever load sends it, goes out through one send path
//! (`Shared::exchange`); multi-turn sessions ([`sessions`]) are started by
//! the same pacer and send their turns through it too. Where t0 sits when
//! shards share a start instant: `run::start`.

pub mod sessions;
pub(crate) mod start;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use goodput_core::trace::write::round_us;
use goodput_core::trace::Scalar;

use crate::exchange::{run_one, Clock, Ending, Observation, Reading};
use crate::schedule::pacer::Pacer;
use crate::transport::client::Transport;
use crate::transport::error_text::Secrets;
use crate::workload::body::{
    echoes_prompt, prompt_hash, BodyTemplate, PromptSource, WITHHELD_ERROR_TEXT,
};
use crate::workload::sessions::SessionSet;

/// How load is offered.
#[derive(Debug, Clone)]
pub enum Load {
    /// Sends at precomputed instants (ms since t0), whatever the server does.
    Open {
        /// The schedule.
        arrivals_ms: Arc<Vec<f64>>,
    },
    /// `concurrency` workers, each sending when its previous request ended.
    Closed {
        /// Number of workers.
        concurrency: u32,
    },
    /// Multi-turn sessions started at precomputed instants (open loop); each
    /// session's later turns wait for its earlier answers.
    Sessions {
        /// The sessions, their starts and their row layout.
        set: Arc<SessionSet>,
    },
}

/// What one run needs, already validated.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// How load is offered.
    pub load: Load,
    /// End of the window (no arrival at or after it), ms since t0.
    pub window_end_ms: f64,
    /// Observation stops at `window_end_ms + grace_ms`.
    pub grace_ms: f64,
    /// Per-request timeout, from the (scheduled) arrival.
    pub timeout: Duration,
    /// Prompts.
    pub prompts: PromptSource,
    /// Request bodies.
    pub template: BodyTemplate,
    /// The most bytes one SSE line or event (or a 2xx body that is not a
    /// stream) may hold before the request fails.
    pub max_event_bytes: usize,
    /// Header values and the API key: redacted from every `errorText`.
    pub secrets: Secrets,
    /// Event loops (threads) that send an open-loop schedule, each every
    /// `loops`-th request with connections of its own; 1: the run's own
    /// loop does it all. Sessions and closed loops always use one.
    pub loops: usize,
    /// An open-loop schedule's cap on requests in flight (`--max-concurrency`
    /// with `--request-rate`); `None`: no cap.
    pub max_in_flight: Option<u32>,
}

/// A request that was sent (or started): what the row needs.
#[derive(Debug, Clone)]
pub struct Finished {
    /// Arrival, ms since t0 (scheduled, or actual in closed loop).
    pub arrival_ms: f64,
    /// What was observed.
    pub obs: Observation,
    /// How it ended.
    pub ending: Ending,
    /// The prompt's class.
    pub class: Option<String>,
    /// Characters in the prompt.
    pub prompt_chars: u64,
    /// Short prompt hash.
    pub prompt_hash: String,
    /// Labels of the workload (`promptTokens`, `prefixGroup`, `session`…).
    pub labels: goodput_core::trace::Labels,
}

/// The result of a run, before it becomes a trace.
#[derive(Debug)]
pub struct RunOutcome {
    /// One slot per request in the trace, by index; `None` = due but never sent.
    pub results: Vec<Option<Finished>>,
    /// Scheduled arrivals of the rows (open loop), for rows never sent.
    pub arrivals_ms: Vec<f64>,
    /// When an interrupt stopped the run, ms since t0.
    pub interrupted_at_ms: Option<f64>,
    /// Requests the full schedule held (open loop), or were issued (closed loop).
    pub planned: usize,
    /// Requests the transport sent a second time after the keep-alive race
    /// (filled in by the caller that owns the transport; 0 here).
    pub keep_alive_retries: u64,
    /// Rows the trace gets (`results.len()` when the results were kept in
    /// memory; with a spool, `results` is empty and this counts).
    pub rows: usize,
    /// A run started at a shared instant (`--start-at`): its clock figures
    /// (filled in by the caller that placed t0; `None` here).
    pub shard_clock: Option<ShardClock>,
    /// How the requests in flight were let finish after a stop-sending
    /// interrupt (`None`: there was none).
    pub drain: Option<Drain>,
}

/// After a stop-sending interrupt (the first Ctrl-C) at `interruptedAtMs`:
/// how many requests were in flight then, and how their drain ended.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Drain {
    /// Requests dispatched and not yet ended when sending stopped (those
    /// waiting for a slot of a capped open loop included).
    pub in_flight: u64,
    /// When observation ended, ms since t0.
    pub ended_ms: f64,
    /// How it ended.
    pub end: DrainEnd,
}

/// How the drain after a stop-sending interrupt ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DrainEnd {
    /// Every request in flight ended.
    Finished,
    /// The grace period after the interrupt (or the horizon) ran out: what
    /// was still running was cut.
    GraceEnded,
    /// A second interrupt cut what was still running.
    Cut,
}

impl DrainEnd {
    /// The name written into `workload.drain`.
    pub fn as_str(self) -> &'static str {
        match self {
            DrainEnd::Finished => "finished",
            DrainEnd::GraceEnded => "grace-ended",
            DrainEnd::Cut => "cut",
        }
    }
}

/// A shard's clock as it measured itself (`docs/recorder.md`, "Shards").
/// Clock disagreement between machines cannot be seen from inside one: it
/// is the hosts' wall-clock offset (NTP's business), and shifts every time
/// of that shard alike.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShardClock {
    /// At the end of the run, (wall clock − start instant) − (monotonic time
    /// since t0), ms: how far the monotonic timeline every time is measured
    /// on drifted from the shard's wall clock over the run.
    pub offset_ms: f64,
    /// That drift per elapsed time, parts per million.
    pub skew_ppm: f64,
    /// The shard's wall clock when it was ready to send, minus the start
    /// instant, ms: negative when early (as it should be); positive when
    /// late, and then its first requests carry that lag.
    pub start_late_ms: f64,
}

/// A request's first token, told as it comes (before the request ends).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FirstToken {
    /// The request's arrival, ms since t0 (scheduled, eligible, or actual
    /// in closed loop).
    pub arrival_ms: f64,
    /// When it was handed to the transport, ms since t0.
    pub sent_ms: Option<f64>,
    /// When its first token arrived, ms since t0.
    pub at_ms: f64,
    /// When its first answer token arrived, ms since t0, when that was by
    /// the same frame (else it is told later: [`Collector::first_answer`]).
    pub answer_ms: Option<f64>,
}

/// What a request tells the run loop: its first token as it comes, then
/// its ending.
// A channel slot holds the large variant whichever is sent, as it held
// `(usize, Finished)` before first tokens were told: boxing it would add an
// allocation per request and save nothing.
#[allow(clippy::large_enum_variant)]
pub(crate) enum Report {
    /// The first token of request `.0`.
    First(usize, FirstToken),
    /// The first answer token of request `.0`, at `.1` ms since t0, when it
    /// came after its first token's frame (a reasoning model's answer).
    Answer(usize, f64),
    /// Request `.0` ended (or was cut off in flight).
    Ended(usize, Finished),
}

/// Where a run's requests go as they end. The in-memory collector is a
/// `Vec<Option<Finished>>` indexed by request; the spool
/// (`record::spool`) appends each to a file instead, so memory does not
/// grow with the length of the run.
pub trait Collector {
    /// Request `index` ended (or was cut off in flight).
    fn ended(&mut self, index: usize, finished: Finished);
    /// Request `index` got its first token (at most once per request, before
    /// its ending; never one stamped after the run stopped observing). The
    /// ending carries it too, so only a collector that must survive the
    /// recorder's death keeps it (the spool); the in-memory one ignores it.
    fn first_token(&mut self, _index: usize, _first: FirstToken) {}
    /// Request `index`, whose first token was told without an answer, got
    /// its first answer token at `at_ms` (at most once, before its ending;
    /// kept only by the spool, as [`Collector::first_token`]).
    fn first_answer(&mut self, _index: usize, _at_ms: f64) {}
    /// Every ending handed to the collector so far, and the first
    /// `dispatched` requests' dispatch, happened by `at_ms` (called every
    /// [`MARK_EVERY`] and once at the end; the spool flushes here).
    fn mark(&mut self, _at_ms: f64, _dispatched: usize) {}
    /// The run is over (called once, after the last [`Collector::mark`]):
    /// how it ended. The spool writes it down, so a recovery can tell a run
    /// that finished (and whose trace then failed to be written) from one
    /// that died.
    fn end(&mut self, _end: &RunEnd) {}
    /// The collector can no longer keep what it is handed (the spool's disk
    /// is full): the run stops at once, as at an interrupt, so no request
    /// is sent whose row would be lost.
    fn broken(&self) -> bool {
        false
    }
}

/// How a run ended, as its collector is told at the end.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunEnd {
    /// When observation ended, ms since t0.
    pub at_ms: f64,
    /// When an interrupt stopped the run, ms since t0 (`None`: it ran to
    /// its horizon).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted_at_ms: Option<f64>,
    /// Requests the full schedule held (open loop), or were issued (closed loop).
    pub planned: usize,
    /// Rows the trace gets.
    pub rows: usize,
    /// The drain after a stop-sending interrupt, if there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain: Option<Drain>,
}

/// How often a run tells its collector how far it got.
pub const MARK_EVERY: Duration = Duration::from_millis(250);

impl Collector for Vec<Option<Finished>> {
    fn ended(&mut self, index: usize, finished: Finished) {
        if self.len() <= index {
            self.resize_with(index + 1, || None);
        }
        self[index] = Some(finished);
    }
}

/// Live counters for the progress line.
#[derive(Debug, Default)]
pub struct Counters {
    /// Requests handed to the transport.
    pub sent: AtomicU64,
    /// Requests completed.
    pub completed: AtomicU64,
    /// Requests failed.
    pub failed: AtomicU64,
    /// Send lag of the latest request, µs.
    pub last_lag_us: AtomicU64,
}

/// A future that resolves on an interrupt (Ctrl-C in the CLI).
pub type Interrupt = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The two interrupts a run listens for: `stop_sending` (the first Ctrl-C:
/// no new request is sent, what is in flight finishes) and `cut` (the
/// second Ctrl-C, SIGTERM, SIGHUP: every running request is cut in flight).
pub struct Interrupts {
    /// Stops the sending only.
    pub stop_sending: Interrupt,
    /// Stops everything.
    pub cut: Interrupt,
}

impl Interrupts {
    /// Only a cut, at `cut`.
    pub fn cut(cut: Interrupt) -> Interrupts {
        Interrupts {
            stop_sending: Box::pin(std::future::pending()),
            cut,
        }
    }
}

/// What every request task shares (the session loop uses it too).
pub(crate) struct Shared<T> {
    pub(crate) transport: Arc<T>,
    pub(crate) config: Arc<RunConfig>,
    pub(crate) clock: Clock,
    pub(crate) cancel: watch::Receiver<Option<f64>>,
    /// The instant sending stopped (a stop-sending interrupt, or the cut).
    pub(crate) halt: watch::Receiver<Option<f64>>,
    /// The slots of a capped open loop.
    pub(crate) cap: Option<Arc<tokio::sync::Semaphore>>,
    pub(crate) results: mpsc::UnboundedSender<Report>,
    pub(crate) counters: Arc<Counters>,
}

impl<T> Shared<T> {
    /// Sends request `index` through `transport` (the run's own, or a
    /// wrapper of it) and reads it to its ending: the run's one send path.
    /// Counts the send (`due_ms`: its scheduled instant, kept for the send
    /// lag), runs the exchange with the run's timeout from `arrival_ms` and
    /// its cancellation, reports its first token as it comes, labels the
    /// error text (withheld when it repeats any of `sent`, the texts sent)
    /// and counts the ending.
    pub(crate) async fn exchange<U: Transport>(
        &self,
        transport: &U,
        index: usize,
        body: Bytes,
        arrival_ms: f64,
        due_ms: Option<f64>,
        sent: &[&str],
    ) -> (Observation, Ending) {
        self.note_send(due_ms);
        let results = &self.results;
        let mut told_first = false;
        let tell_first = move |obs: &Observation| {
            // The receiver lives until every sender is gone.
            match (told_first, obs.first_token_ms, obs.first_answer_ms) {
                (false, Some(at_ms), answer_ms) => {
                    told_first = true;
                    let first = FirstToken {
                        arrival_ms,
                        sent_ms: obs.sent_ms,
                        at_ms,
                        answer_ms,
                    };
                    let _ = results.send(Report::First(index, first));
                }
                (true, _, Some(answer_ms)) => {
                    let _ = results.send(Report::Answer(index, answer_ms));
                }
                _ => {}
            }
        };
        let deadline_ms = arrival_ms + self.config.timeout.as_secs_f64() * 1000.0;
        let (mut obs, ending) = run_one(
            transport,
            body,
            &self.clock,
            deadline_ms,
            self.cancel.clone(),
            Reading {
                api: self.config.template.api,
                max_event_bytes: self.config.max_event_bytes,
            },
            tell_first,
        )
        .await;
        self.label_error(&mut obs, sent);
        self.note_ending(&ending);
        (obs, ending)
    }

    /// Hands request `index`'s row to the run loop.
    pub(crate) fn report(&self, index: usize, finished: Finished) {
        // The receiver lives until every sender is gone.
        let _ = self.results.send(Report::Ended(index, finished));
    }

    /// Counts a send; in open loop, `due_ms` is its scheduled instant and
    /// the send lag is kept for the progress line.
    fn note_send(&self, due_ms: Option<f64>) {
        self.counters.sent.fetch_add(1, Ordering::Relaxed);
        if let Some(due) = due_ms {
            let lag_us = ((self.clock.now_ms() - due).max(0.0) * 1000.0) as u64;
            self.counters.last_lag_us.store(lag_us, Ordering::Relaxed);
        }
    }

    /// Makes the row's `errorText` from the bounded error head: the one
    /// place the label is made (secrets redacted, at most 200 characters,
    /// withheld when it repeats any of `prompts`, the texts sent). The raw
    /// bytes are not kept past here.
    fn label_error(&self, obs: &mut Observation, prompts: &[&str]) {
        obs.error_text = obs
            .error_head
            .take()
            .and_then(|head| head.label(&self.config.secrets))
            .map(|text| {
                if prompts.iter().any(|p| echoes_prompt(&text, p)) {
                    WITHHELD_ERROR_TEXT.to_owned()
                } else {
                    text
                }
            });
    }

    /// Counts an ending.
    fn note_ending(&self, ending: &Ending) {
        match ending {
            Ending::Completed { .. } => self.counters.completed.fetch_add(1, Ordering::Relaxed),
            Ending::Failed { .. } => self.counters.failed.fetch_add(1, Ordering::Relaxed),
            Ending::InFlight => 0,
        };
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Shared {
            transport: self.transport.clone(),
            config: self.config.clone(),
            clock: self.clock,
            cancel: self.cancel.clone(),
            halt: self.halt.clone(),
            cap: self.cap.clone(),
            results: self.results.clone(),
            counters: self.counters.clone(),
        }
    }
}

/// Sends request `index` (open or closed loop) with its prompt and reports
/// its row.
async fn one_request<T: Transport>(
    shared: &Shared<T>,
    index: usize,
    arrival_ms: f64,
    open_loop: bool,
) {
    let prompt = shared.config.prompts.prompt(index);
    let mut extras = shared.config.prompts.extras(index);
    let slot = match &shared.cap {
        Some(cap) if open_loop => match wait_for_slot(shared, cap).await {
            Ok((permit, waited_ms)) => {
                extras
                    .labels
                    .insert("capWaitMs".into(), Scalar::Number(round_us(waited_ms)));
                Some(permit)
            }
            Err(waited_ms) => {
                // Cut while waiting: due, never sent, outcome unknown.
                extras
                    .labels
                    .insert("capWaitMs".into(), Scalar::Number(round_us(waited_ms)));
                extras.labels.insert("notSent".into(), Scalar::Bool(true));
                let finished = Finished {
                    arrival_ms,
                    obs: Observation::default(),
                    ending: Ending::InFlight,
                    prompt_chars: prompt.text.chars().count() as u64,
                    prompt_hash: prompt_hash(&prompt.text),
                    class: prompt.class,
                    labels: extras.labels,
                };
                shared.report(index, finished);
                return;
            }
        },
        _ => None,
    };
    let body = shared
        .config
        .template
        .body_with(&prompt.text, extras.max_tokens);
    let due_ms = open_loop.then_some(arrival_ms);
    let (obs, ending) = shared
        .exchange(
            &*shared.transport,
            index,
            body,
            arrival_ms,
            due_ms,
            &[&prompt.text],
        )
        .await;
    drop(slot);
    let finished = Finished {
        arrival_ms,
        obs,
        ending,
        prompt_chars: prompt.text.chars().count() as u64,
        prompt_hash: prompt_hash(&prompt.text),
        class: prompt.class,
        labels: extras.labels,
    };
    shared.report(index, finished);
}

/// Waits for a slot of a capped open loop (first come, first served);
/// returns it with the ms waited, or the ms waited until the run was cut.
async fn wait_for_slot<T>(
    shared: &Shared<T>,
    cap: &Arc<tokio::sync::Semaphore>,
) -> Result<(tokio::sync::OwnedSemaphorePermit, f64), f64> {
    let started = shared.clock.now_ms();
    let mut cancel = shared.cancel.clone();
    let acquired = tokio::select! {
        biased;
        permit = cap.clone().acquire_owned() => permit.ok(),
        _ = cancel.wait_for(Option::is_some) => None,
    };
    let waited = (shared.clock.now_ms() - started).max(0.0);
    acquired.map(|p| (p, waited)).ok_or(waited)
}

/// Runs the load to its end (horizon or interrupt), keeping every result in
/// memory. `t0` is the zero of every timestamp; it should be a little in the
/// future so request 0 is not born late.
pub async fn run<T: Transport>(
    transport: Arc<T>,
    config: Arc<RunConfig>,
    t0: Instant,
    counters: Arc<Counters>,
    interrupt: Interrupts,
) -> RunOutcome {
    let mut results: Vec<Option<Finished>> = Vec::new();
    let mut outcome = run_into(transport, config, t0, counters, interrupt, &mut results).await;
    results.resize_with(outcome.rows, || None);
    outcome.results = results;
    outcome
}

/// Runs the load to its end, handing each ending to `collector` as it
/// comes; the outcome's `results` are empty.
pub async fn run_into<T: Transport>(
    transport: Arc<T>,
    config: Arc<RunConfig>,
    t0: Instant,
    counters: Arc<Counters>,
    interrupt: Interrupts,
    collector: &mut dyn Collector,
) -> RunOutcome {
    let clock = Clock::new(t0);
    let (cancel_tx, cancel_rx) = watch::channel(None);
    let (halt_tx, halt_rx) = watch::channel(None);
    let (res_tx, mut res_rx) = mpsc::unbounded_channel();
    let cap = config
        .max_in_flight
        .filter(|_| matches!(config.load, Load::Open { .. }))
        .map(|c| Arc::new(tokio::sync::Semaphore::new(c as usize)));
    let shared = Shared {
        transport,
        config: config.clone(),
        clock,
        cancel: cancel_rx,
        halt: halt_rx,
        cap,
        results: res_tx,
        counters,
    };
    let observer = Observer {
        clock,
        issued: Arc::new(Dispatched::new(loops_of(&config))),
        stopped: Arc::new(AtomicBool::new(false)),
        cancel: cancel_tx,
        halt: halt_tx,
        horizon_ms: config.window_end_ms + config.grace_ms,
        grace_ms: config.grace_ms,
    };
    let dispatcher = dispatch(&config.load, shared, &observer);
    let Stopped {
        interrupted_at_ms,
        drain,
    } = observer
        .observe(&mut res_rx, dispatcher, interrupt, collector)
        .await;
    let issued = observer.issued.count();
    let layout = match &config.load {
        Load::Open { arrivals_ms } => open_layout(arrivals_ms, issued, interrupted_at_ms),
        Load::Sessions { set } => {
            let horizon_ms = observer.horizon_ms;
            sessions::layout(set, issued, interrupted_at_ms, horizon_ms, collector)
        }
        Load::Closed { .. } => RowLayout {
            arrivals_ms: Vec::new(),
            planned: issued,
            rows: issued,
        },
    };
    let at_ms = clock.now_ms();
    collector.mark(at_ms, issued);
    collector.end(&RunEnd {
        at_ms,
        interrupted_at_ms,
        planned: layout.planned,
        rows: layout.rows,
        drain,
    });
    RunOutcome {
        results: Vec::new(),
        arrivals_ms: layout.arrivals_ms,
        interrupted_at_ms,
        planned: layout.planned,
        keep_alive_retries: 0,
        rows: layout.rows,
        shard_clock: None,
        drain,
    }
}

/// The event loops that send the load: the configured number for an open
/// loop, one for sessions and closed loops.
fn loops_of(config: &RunConfig) -> usize {
    match &config.load {
        Load::Open { .. } => config.loops.max(1),
        _ => 1,
    }
}

/// Starts sending the load; the handle ends when every request has been
/// dispatched (open loop, sessions) or at once (closed loop, whose workers
/// stop themselves).
fn dispatch<T: Transport>(load: &Load, shared: Shared<T>, observer: &Observer) -> JoinHandle<()> {
    let issued = observer.issued.clone();
    match load {
        Load::Open { arrivals_ms } if issued.lanes.len() > 1 => {
            spawn_loops(arrivals_ms, issued, shared)
        }
        Load::Open { arrivals_ms } => {
            let arrivals = arrivals_ms.clone();
            tokio::spawn(async move { send_lane(&arrivals, 0, &issued, shared).await })
        }
        Load::Sessions { set } => sessions::dispatch(set.clone(), issued, shared),
        Load::Closed { concurrency } => {
            for _ in 0..*concurrency {
                let worker =
                    closed_worker(shared.clone(), issued.clone(), observer.stopped.clone());
                tokio::spawn(worker);
            }
            drop(shared);
            tokio::spawn(async {})
        }
    }
}

/// Sends an open-loop schedule from one event loop per lane of `issued`,
/// each on a thread of its own with its own connections.
fn spawn_loops<T: Transport>(
    arrivals_ms: &Arc<Vec<f64>>,
    issued: Arc<Dispatched>,
    shared: Shared<T>,
) -> JoinHandle<()> {
    let threads = (0..issued.lanes.len())
        .map(|lane| {
            let arrivals = arrivals_ms.clone();
            let issued = issued.clone();
            let mut shared = shared.clone();
            if let Some(own) = shared.transport.for_another_loop() {
                shared.transport = Arc::new(own);
            }
            // A lane whose thread cannot start sends nothing: its
            // requests stay due and unsent, and the trace says so.
            std::thread::Builder::new()
                .name(format!("goodput-loop-{lane}"))
                .spawn(move || lane_on_its_own_loop(&arrivals, lane, &issued, shared))
                .ok()
        })
        .collect::<Vec<_>>();
    // Each lane holds its own results sender; this one goes.
    drop(shared);
    tokio::task::spawn_blocking(move || {
        for thread in threads.into_iter().flatten() {
            let _ = thread.join();
        }
    })
}

/// One closed-loop worker: sends, waits for the ending, and sends again,
/// until the window ends or the run stops.
async fn closed_worker<T: Transport>(
    shared: Shared<T>,
    issued: Arc<Dispatched>,
    stopped: Arc<AtomicBool>,
) {
    // Every timestamp counts from t0, and the clock reads 0
    // before it: a worker that sent early would be stamped
    // later than its real send. So the workers start at t0.
    tokio::time::sleep_until(shared.clock.at(0.0)).await;
    loop {
        let now = shared.clock.now_ms();
        if stopped.load(Ordering::Relaxed)
            || shared.halt.borrow().is_some()
            || now >= shared.config.window_end_ms
        {
            break;
        }
        let index = issued.lanes[0].fetch_add(1, Ordering::Relaxed);
        one_request(&shared, index, now, false).await;
    }
}

/// The observing half of a run: the clock, how far dispatch got, and the
/// signals that stop it.
struct Observer {
    clock: Clock,
    issued: Arc<Dispatched>,
    /// Closed-loop workers stop sending once it is set.
    stopped: Arc<AtomicBool>,
    /// Carries the instant observation stopped to every request.
    cancel: watch::Sender<Option<f64>>,
    /// Carries the instant sending stopped to the pacers and workers.
    halt: watch::Sender<Option<f64>>,
    horizon_ms: f64,
    /// How long requests in flight may run on after a stop-sending interrupt.
    grace_ms: f64,
}

/// How observation of a run stopped.
struct Stopped {
    /// When an interrupt (or the broken collector) stopped it, ms since t0.
    interrupted_at_ms: Option<f64>,
    /// The drain after a stop-sending interrupt.
    drain: Option<Drain>,
}

/// Where a run's observation is: sending; draining after a stop-sending
/// interrupt (with its deadline and the count in flight then); or stopped.
#[derive(Clone, Copy, PartialEq)]
enum Phase {
    Sending,
    Draining {
        at_ms: f64,
        deadline_ms: f64,
        in_flight: u64,
    },
    Stopped,
}

impl Observer {
    /// Stops sending at `at_ms`: no new request leaves; what is in flight runs on.
    fn halt(&self, at_ms: f64) {
        self.stopped.store(true, Ordering::Relaxed);
        self.halt.send_if_modified(|h| {
            let unset = h.is_none();
            if unset {
                *h = Some(at_ms);
            }
            unset
        });
    }

    /// Stops the run at `at_ms`: no more sends, every running request cut.
    fn stop(&self, at_ms: f64) {
        self.halt(at_ms);
        self.cancel.send_replace(Some(at_ms));
    }

    /// Hands `report` to `collector`; a first token stamped after the run
    /// stopped observing is dropped (its request's ending drops it too).
    /// Returns 1 for an ending, 0 for a first token.
    fn hand_over(&self, report: Report, collector: &mut dyn Collector) -> u64 {
        match report {
            Report::Ended(index, finished) => {
                collector.ended(index, finished);
                1
            }
            Report::First(index, mut first) => {
                let cut = *self.cancel.borrow();
                if cut.is_none_or(|cut_ms| first.at_ms <= cut_ms) {
                    if cut.is_some_and(|cut_ms| first.answer_ms.is_some_and(|a| a > cut_ms)) {
                        first.answer_ms = None;
                    }
                    collector.first_token(index, first);
                }
                0
            }
            Report::Answer(index, at_ms) => {
                let cut = *self.cancel.borrow();
                if cut.is_none_or(|cut_ms| at_ms <= cut_ms) {
                    collector.first_answer(index, at_ms);
                }
                0
            }
        }
    }

    /// Hands every first token and ending to `collector` (with a mark every
    /// [`MARK_EVERY`]) until every request has reported, stopping the run at
    /// the horizon, at a cut or when the collector breaks, and the sending
    /// at a stop-sending interrupt (then the rest drains up to the grace
    /// period after it); says how it stopped.
    async fn observe(
        &self,
        results: &mut mpsc::UnboundedReceiver<Report>,
        mut dispatcher: JoinHandle<()>,
        interrupt: Interrupts,
        collector: &mut dyn Collector,
    ) -> Stopped {
        let clock = self.clock;
        let Interrupts {
            mut stop_sending,
            mut cut,
        } = interrupt;
        let deadline = tokio::time::sleep_until(clock.at(self.horizon_ms));
        tokio::pin!(deadline);
        let mut phase = Phase::Sending;
        let mut stopped = Stopped {
            interrupted_at_ms: None,
            drain: None,
        };
        let mut ended = 0u64;
        let mut dispatcher_done = false;
        let mut marks = tokio::time::interval_at(clock.at(0.0) + MARK_EVERY, MARK_EVERY);
        marks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let live = phase != Phase::Stopped;
            tokio::select! {
                message = results.recv() => match message {
                    Some(report) => ended += self.hand_over(report, collector),
                    None => break,
                },
                _ = marks.tick() => {
                    // Hand over what has already come, so the mark covers it.
                    while let Ok(report) = results.try_recv() {
                        ended += self.hand_over(report, collector);
                    }
                    collector.mark(clock.now_ms(), self.issued.count());
                }
                _ = &mut dispatcher, if !dispatcher_done => dispatcher_done = true,
                () = &mut deadline, if live => {
                    let at_ms = match phase {
                        Phase::Draining { deadline_ms, .. } => deadline_ms,
                        _ => self.horizon_ms,
                    };
                    self.end_drain(&mut phase, &mut stopped, DrainEnd::GraceEnded, at_ms);
                    self.stop(at_ms);
                }
                () = &mut stop_sending, if phase == Phase::Sending => {
                    let now = clock.now_ms();
                    let deadline_ms = (now + self.grace_ms).min(self.horizon_ms);
                    phase = Phase::Draining {
                        at_ms: now,
                        deadline_ms,
                        in_flight: self.issued.total().saturating_sub(ended as usize) as u64,
                    };
                    stopped.interrupted_at_ms = Some(now);
                    deadline.as_mut().reset(clock.at(deadline_ms));
                    self.halt(now);
                }
                () = &mut cut, if live => {
                    let now = clock.now_ms();
                    self.end_drain(&mut phase, &mut stopped, DrainEnd::Cut, now);
                    stopped.interrupted_at_ms.get_or_insert(now);
                    self.stop(now);
                }
            }
            if phase != Phase::Stopped && collector.broken() {
                let now = clock.now_ms();
                self.end_drain(&mut phase, &mut stopped, DrainEnd::Cut, now);
                stopped.interrupted_at_ms.get_or_insert(now);
                self.stop(now);
            }
        }
        // Every request reported before the cut: the drain finished.
        self.end_drain(&mut phase, &mut stopped, DrainEnd::Finished, clock.now_ms());
        if !dispatcher_done {
            let _ = dispatcher.await;
        }
        stopped
    }

    /// Ends the phase: a drain under way ends `how` at `at_ms`; the run is
    /// stopped from here on.
    fn end_drain(&self, phase: &mut Phase, stopped: &mut Stopped, how: DrainEnd, at_ms: f64) {
        if let Phase::Draining { in_flight, .. } = *phase {
            stopped.drain = Some(Drain {
                in_flight,
                ended_ms: at_ms,
                end: how,
            });
        }
        *phase = Phase::Stopped;
    }
}

/// Which rows a stopped run's trace gets, and their scheduled arrivals.
struct RowLayout {
    /// Scheduled arrivals of the rows (open loop and sessions).
    arrivals_ms: Vec<f64>,
    /// Requests the full schedule held (open loop), or were issued (closed loop).
    planned: usize,
    /// Rows the trace gets.
    rows: usize,
}

/// The rows of an open-loop run once it stopped: every request due (by an
/// interrupt, else the whole schedule) or dispatched.
fn open_layout(arrivals_ms: &[f64], issued: usize, interrupted_at_ms: Option<f64>) -> RowLayout {
    let rows = due_by(arrivals_ms, interrupted_at_ms)
        .max(issued)
        .min(arrivals_ms.len());
    RowLayout {
        arrivals_ms: arrivals_ms[..rows].to_vec(),
        planned: arrivals_ms.len(),
        rows,
    }
}

/// How many of the (ascending) `instants` fell before an interrupt at
/// `interrupted_at_ms`; all of them when there was none.
fn due_by(instants: &[f64], interrupted_at_ms: Option<f64>) -> usize {
    match interrupted_at_ms {
        Some(t) => instants.partition_point(|&a| a < t),
        None => instants.len(),
    }
}

/// How far the pacers got: the first [`Dispatched::count`] requests of the
/// schedule have all been handed to the transport. One lane per event loop;
/// lane `k` of `n` sends requests `k, k + n, k + 2n, …` and holds the index
/// of the next one it will send (closed loop: one lane, the next index).
#[derive(Debug)]
struct Dispatched {
    lanes: Vec<AtomicUsize>,
}

impl Dispatched {
    fn new(lanes: usize) -> Dispatched {
        Dispatched {
            lanes: (0..lanes).map(AtomicUsize::new).collect(),
        }
    }

    /// How many requests have been dispatched, over every lane (lane `k`
    /// of `n` whose next index is `x` has sent `(x − k) / n`).
    fn total(&self) -> usize {
        let n = self.lanes.len();
        self.lanes
            .iter()
            .enumerate()
            .map(|(k, lane)| lane.load(Ordering::Relaxed).saturating_sub(k) / n)
            .sum()
    }

    /// Every request below this index has been dispatched: the smallest
    /// next index over the lanes.
    fn count(&self) -> usize {
        self.lanes
            .iter()
            .map(|lane| lane.load(Ordering::Relaxed))
            .min()
            .unwrap_or(0)
    }
}

/// [`send_lane`] on an event loop of its own (a current-thread runtime on
/// this thread).
fn lane_on_its_own_loop<T: Transport>(
    arrivals_ms: &[f64],
    lane: usize,
    issued: &Dispatched,
    shared: Shared<T>,
) {
    // Without a runtime nothing of this lane is sent; its requests stay due
    // and unsent, and the trace says so (rows never sent are in flight,
    // `notSent`).
    if let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        runtime.block_on(send_lane(arrivals_ms, lane, issued, shared));
    }
}

/// One lane of an open-loop schedule on the current event loop: its share
/// of the requests at their instants, then every one of them to its ending.
/// `shared` (and its results sender) is dropped when the last has ended.
async fn send_lane<T: Transport>(
    arrivals_ms: &[f64],
    lane: usize,
    issued: &Dispatched,
    shared: Shared<T>,
) {
    let mut tasks = tokio::task::JoinSet::new();
    let halt = shared.halt.clone();
    let clock = shared.clock;
    pace(arrivals_ms, lane, clock, halt, issued, |index, arrival| {
        let shared = shared.clone();
        tasks.spawn(async move { one_request(&shared, index, arrival, true).await });
        // Reap what has ended, so the set holds only running requests.
        while tasks.try_join_next().is_some() {}
    })
    .await;
    drop(shared);
    while tasks.join_next().await.is_some() {}
}

/// Walks lane `lane` of the schedule on the current event loop (requests
/// `lane, lane + n, …` for `n` lanes of `issued`), spawning
/// `spawn(i, arrival_i)` at each instant `t0 + arrival_i` ([`Pacer`]:
/// microsecond precision, where tokio's own timer has 1 ms ticks); returns
/// when it is done or sending stops (`halt`). It never waits for an earlier
/// request.
async fn pace(
    arrivals_ms: &[f64],
    lane: usize,
    clock: Clock,
    mut halt: watch::Receiver<Option<f64>>,
    issued: &Dispatched,
    mut spawn: impl FnMut(usize, f64),
) {
    let pacer = Pacer::new();
    let stride = issued.lanes.len();
    let progress = &issued.lanes[lane];
    for index in (lane..arrivals_ms.len()).step_by(stride) {
        if halt.borrow().is_some() {
            return;
        }
        let arrival = arrivals_ms[index];
        let due = clock.at(arrival);
        if Instant::now() < due {
            tokio::select! {
                biased;
                // Sending stopped, or the run gone (the sender dropped).
                _ = halt.changed() => return,
                () = pacer.sleep_until(due) => {}
            }
        }
        progress.store(index + stride, Ordering::Relaxed);
        spawn(index, arrival);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatched_counts_the_requests_below_every_lanes_next_one() {
        // Three lanes: lane k sends k, k + 3, k + 6, …
        let d = Dispatched::new(3);
        // Nothing sent: lane 0's next is 0.
        assert_eq!(d.count(), 0);
        // Lanes 0 and 2 sent 0, 3 and 2; lane 1 has not sent 1 yet.
        d.lanes[0].store(6, Ordering::Relaxed);
        d.lanes[2].store(5, Ordering::Relaxed);
        assert_eq!(d.count(), 1);
        // Lane 1 sent 1 and 4: 0 … 4 are all out, 5 (lane 2's next) is not.
        d.lanes[1].store(7, Ordering::Relaxed);
        assert_eq!(d.count(), 5);
    }
}
