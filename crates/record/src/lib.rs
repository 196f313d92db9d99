//! `goodput record`'s library half: run a validated [`Plan`] against an
//! OpenAI-compatible server and turn what happened into an honest
//! `goodput-trace/1` document. It returns data and prints nothing; the flags,
//! the progress line, the summary and the exit status are the command-line
//! layer's (`cli::record`).
//!
//! The folders, in the order a recording flows through them:
//!
//! ```text
//! plan       what one recording will do (validated before anything is sent)
//!  ─▶ schedule   when each request is due (pure, from the seed; the pacer)
//!  ─▶ workload   what each request sends (prompts, bodies, sessions' datasets)
//!  ─▶ transport  how the server is reached (the client seam, TLS, headers)
//!  ─▶ exchange   one request, from send to its ending (SSE)
//!  ─▶ run        the event loop: who sends what when, when observation stops
//!  ─▶ output     one row per request, the frame, the spool, recovery, summary
//! scrape         the server's metrics, read beside the run (`--metrics`)
//! ```
//!
//! The entry points below tie them together: [`preflight`] probes the server,
//! [`record`] (or [`execute_into`] with any transport) runs the plan, and
//! [`build_trace`] turns an in-memory outcome into the document.
//!
//! Honesty rules: arrivals are scheduled instants and latency counts from
//! them; every scheduled request becomes exactly one row (failures are rows;
//! unfinished work is `in_flight`); the API key, header values and prompts
//! never reach the trace; the trace is written atomically, also after Ctrl-C.
//!
//! Reaching real servers (`https://`, headers, `--extra-body`, the
//! preflight, the server's error text on failed rows) lives in
//! [`transport::endpoint`], [`transport::tls`], [`transport::headers`],
//! [`workload::extra_body`], [`transport::preflight`] and
//! [`transport::error_text`].

// The folders, in flow order.
// What one recording will do.
pub mod plan;
// When each request is due.
pub mod schedule;
// What each request sends.
pub mod workload;
// How the server is reached.
pub mod transport;
// One request, from send to its ending.
pub mod exchange;
// The event loop that sends the load and observes it.
pub mod run;
// The trace, the spool, recovery and the summary.
pub mod output;
// The server's metrics beside the run.
pub mod scrape;
// The quality bank beside the run.
pub mod quality;
// The recorder's error type.
pub mod error;
// The signals that end a recording (SIGINT, SIGTERM, SIGHUP).
pub mod signal;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::JoinHandle;

use goodput_core::server_timing::{Sources, SERVER_TIMING_LABEL};
use goodput_core::trace::write::{TraceDoc, TraceRow};
use goodput_core::trace::Scalar;

use self::error::RecordError;
use self::output::frame::{Frame, PromptMeta, Stop};
use self::quality::BankRunner;
use self::run::{Collector, Counters, Interrupt, RunOutcome};
use self::scrape::{Scraper, SidecarFile};
use self::transport::client::Transport;

pub use self::plan::{
    metrics_sidecar_path, quality_sidecar_path, Plan, Progress, ProgressSink, Recording, Stage,
    Written,
};

/// The preflight of [`preflight`] for a plan (nothing when `--no-preflight`):
/// its own transport and runtime, the run's headers, key and TLS settings.
/// A server that cannot serve the run — or does not serve `--model` — is
/// [`RecordError::Preflight`], before any request of the run is sent and
/// before any trace is written. What it found out about the model is
/// returned (`None` when skipped); [`Plan::adopt_model`] takes it.
pub fn preflight(plan: &Plan) -> Result<Option<transport::preflight::ModelCheck>, RecordError> {
    if !plan.preflight {
        return Ok(None);
    }
    let transport = plan.endpoint.transport(plan.uri.clone())?;
    let mut template = plan.run.template.clone();
    if template.max_tokens.is_some() || !template.extra.has("max_tokens") {
        template.max_tokens = Some(1);
    }
    template.ignore_eos = false;
    let wait = plan
        .run
        .timeout
        .min(transport::preflight::PREFLIGHT_TIMEOUT);
    let model = plan.model_given.then_some(plan.run.template.model.as_str());
    transport::preflight::check_blocking(
        &transport,
        model,
        |asked| {
            template.model = asked.to_owned();
            template.body("Hello")
        },
        &plan.endpoint.secrets,
        wait,
    )
    .map(Some)
    .map_err(RecordError::Preflight)
}

/// Runs a validated plan against the real network, with SIGINT (Ctrl-C),
/// SIGTERM or SIGHUP as the interrupt: scheduling stops, unfinished requests
/// are kept (they become `in_flight` rows) and the outcome says when it was
/// interrupted; the recording says by which signal. Every ending goes to
/// `collector` as it comes (`record` spools them). A single `record` and
/// every point of a rate sweep go through here.
pub fn record(
    plan: &Plan,
    progress: Option<ProgressSink>,
    collector: &mut dyn Collector,
) -> Result<Recording, RecordError> {
    let transport = plan.endpoint.transport(plan.uri.clone())?;
    let retries = transport.retries();
    let caught = Arc::new(Mutex::new(None));
    let seen = caught.clone();
    let mut recording = execute_into(
        plan,
        transport,
        move || signal_interrupts(seen),
        progress,
        collector,
    )?;
    recording.outcome.keep_alive_retries = retries.load(Ordering::Relaxed);
    recording.signal = *caught.lock().unwrap_or_else(|p| p.into_inner());
    Ok(recording)
}

/// The run's interrupts from the process's signals (a task on the run's
/// event loop): a first SIGINT stops the sending, the next signal cuts; a
/// first SIGTERM or SIGHUP cuts at once. The first signal goes into `seen`.
fn signal_interrupts(seen: Arc<Mutex<Option<signal::StopSignal>>>) -> run::Interrupts {
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (cut_tx, cut_rx) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        let mut signals = signal::Signals::new();
        let first = signals.next().await;
        *seen.lock().unwrap_or_else(|p| p.into_inner()) = Some(first);
        if first == signal::StopSignal::Interrupt {
            let _ = stop_tx.send(());
            signals.next().await;
        }
        let _ = cut_tx.send(());
    });
    // A sender dropped unsent (the run ended first) never fires.
    let fired = |rx: tokio::sync::oneshot::Receiver<()>| -> Interrupt {
        Box::pin(async move {
            if rx.await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    };
    run::Interrupts {
        stop_sending: fired(stop_rx),
        cut: fired(cut_rx),
    }
}

/// Runs a plan against a transport, with `interrupt` as the Ctrl-C signal.
/// Builds its own runtime; returns the outcome with every result in memory
/// (used by the tests).
pub fn execute<T: Transport>(
    plan: &Plan,
    transport: T,
    interrupt: impl FnOnce() -> run::Interrupts,
    progress: Option<ProgressSink>,
) -> Result<Recording, RecordError> {
    let mut results: Vec<Option<run::Finished>> = Vec::new();
    let mut recording = execute_into(plan, transport, interrupt, progress, &mut results)?;
    results.resize_with(recording.outcome.rows, || None);
    recording.outcome.results = results;
    Ok(recording)
}

/// [`execute`], handing each ending to `collector` as it comes (the spool).
pub fn execute_into<T: Transport>(
    plan: &Plan,
    transport: T,
    interrupt: impl FnOnce() -> run::Interrupts,
    progress: Option<ProgressSink>,
    collector: &mut dyn Collector,
) -> Result<Recording, RecordError> {
    let runtime = one_event_loop()?;
    let mut scraper = match &plan.metrics {
        Some(m) => Some((
            m.clone(),
            m.transports(&plan.endpoint)?,
            SidecarFile::create(&metrics_sidecar_path(&plan.out))?,
        )),
        None => None,
    };
    let mut bank = match &plan.quality {
        Some(b) => Some((b.clone(), bank_transport(plan)?)),
        None => None,
    };
    let (mut outcome, t0, start_late_ms, scraping, bank) = runtime.block_on(async {
        let (t0, start_late_ms) = run::start::place_t0(plan.start_at_unix_ms);
        // The scraper runs on its own thread and event loop: nothing it
        // fetches or parses can delay a send on this one.
        let scraping = scraper.take().map(|(m, transport, sidecar)| {
            Scraper::start(m, transport, t0, sidecar, plan.endpoint.secrets.clone())
        });
        let bank = bank
            .take()
            .map(|(b, transport)| BankRunner::start(b, transport, t0));
        let counters = Arc::new(Counters::default());
        let ticker = start_progress(plan, &progress, &counters, t0);
        let outcome = run::run_into(
            Arc::new(transport),
            Arc::new(plan.run.clone()),
            t0,
            counters,
            interrupt(),
            collector,
        )
        .await;
        stop_progress(ticker, progress.as_ref());
        (outcome, t0, start_late_ms, scraping, bank)
    });
    // The bank's items still unsent go now (none after an interrupt);
    // every item gets its line.
    let interrupted = outcome.interrupted_at_ms.is_some();
    let quality = bank.map(|started| started.and_then(|b| b.finish(interrupted)));
    // The scraper ends with the run; its sidecar is closed here.
    let metrics = scraping.map(|started| started.and_then(Scraper::stop));
    if let (Some(start), Some(late)) = (plan.start_at_unix_ms, start_late_ms) {
        outcome.shard_clock = Some(run::start::shard_clock(start, late, t0));
    }
    // Requests still draining a body after cancellation are dropped here.
    runtime.shutdown_timeout(Duration::from_millis(200));
    Ok(Recording {
        outcome,
        metrics,
        quality,
        signal: None,
    })
}

/// The bank's own transport: the load's URI, headers and key, its own
/// connections.
fn bank_transport(plan: &Plan) -> Result<transport::client::HyperTransport, RecordError> {
    Ok(transport::client::HyperTransport::with_options(
        plan.uri.clone(),
        plan.endpoint.api_key.as_deref(),
        &plan.endpoint.headers,
        plan.endpoint.tls.clone(),
    )?)
}

/// Turns a finished run into the trace document (pure).
pub fn build_trace(plan: &Plan, outcome: &RunOutcome) -> TraceDoc {
    let frame = Frame::of(plan);
    let tokens = output::row::token_mode(
        outcome
            .results
            .iter()
            .flatten()
            .map(|f| (&f.obs, &f.ending)),
    );
    let rows: Vec<TraceRow> = outcome
        .results
        .iter()
        .enumerate()
        .map(|(index, slot)| match slot {
            Some(f) => frame.ended_row(index, f, tokens),
            None => frame.unsent_row(
                index,
                outcome.arrivals_ms.get(index).copied().unwrap_or(0.0),
                &PromptMeta::of_request(&plan.run.prompts, index),
            ),
        })
        .collect();
    let mut doc = frame.document(&Stop::of(outcome), tokens, rows);
    let sources = outcome
        .results
        .iter()
        .flatten()
        .fold(Sources::default(), |s, f| s.or(f.obs.server_sources));
    if let Some(names) = sources.names() {
        doc.workload
            .insert(SERVER_TIMING_LABEL.into(), Scalar::String(names));
    }
    doc
}

/// The event loop of a recording. One thread runs every connection, the
/// schedule and the spool: an event loop, like each of wrk's threads.
/// tokio's work-stealing pool cost a third more CPU per streamed token here
/// (its idle workers are woken for each new task and park again), and more
/// threads than cores beside a server on the same machine only add
/// scheduling delay to the send instants. Past one core's worth of streams,
/// run shards (`--shard K/N`), on one machine or many.
fn one_event_loop() -> Result<tokio::runtime::Runtime, RecordError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(RecordError::Runtime)
}

/// Starts sampling the run's counters into `progress`, when there is a sink.
fn start_progress(
    plan: &Plan,
    progress: &Option<ProgressSink>,
    counters: &Arc<Counters>,
    t0: tokio::time::Instant,
) -> Option<JoinHandle<()>> {
    progress.clone().map(|sink| {
        tokio::spawn(sample_progress(
            counters.clone(),
            t0,
            (plan.warmup_ms, plan.run.window_end_ms, plan.horizon_ms()),
            sink,
        ))
    })
}

/// Stops the sampling once the run has ended, and lets the display clear
/// itself.
fn stop_progress(ticker: Option<JoinHandle<()>>, progress: Option<&ProgressSink>) {
    if let Some(t) = ticker {
        t.abort();
        if let Some(sink) = progress {
            sink(None);
        }
    }
}

/// Samples the live counters every 250 ms into `sink`. `times` are the
/// window start, window end and horizon, ms since `t0` (as [`Plan::stage_at`]).
async fn sample_progress(
    counters: Arc<Counters>,
    t0: tokio::time::Instant,
    times: (f64, f64, f64),
    sink: ProgressSink,
) {
    let (start_ms, end_ms, horizon_ms) = times;
    let mut tick = tokio::time::interval(Duration::from_millis(250));
    loop {
        tick.tick().await;
        let elapsed_s = tokio::time::Instant::now()
            .saturating_duration_since(t0)
            .as_secs_f64();
        let elapsed_ms = elapsed_s * 1000.0;
        sink(Some(Progress {
            elapsed_s,
            stage: Stage::at(start_ms, end_ms, elapsed_ms),
            remaining_s: ((horizon_ms - elapsed_ms) / 1000.0).max(0.0),
            sent: counters.sent.load(Ordering::Relaxed),
            completed: counters.completed.load(Ordering::Relaxed),
            failed: counters.failed.load(Ordering::Relaxed),
            send_lag_ms: counters.last_lag_us.load(Ordering::Relaxed) as f64 / 1000.0,
        }));
    }
}
