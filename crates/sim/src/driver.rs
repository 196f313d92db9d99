//! Runs the pure [`Engine`] in real time: one tokio task owns it, takes new
//! sequences from a channel, sleeps each step's duration, then hands every
//! token to its request's channel.
//!
//! Steps are scheduled on absolute deadlines (`previous deadline + duration`)
//! so tokio's 1 ms timer granularity delays single tokens but never the
//! average rate; after an idle spell, or when more than 2 ms behind, the clock
//! restarts from now instead of bursting to catch up. A zero-cost step only
//! yields, so a "near-zero latency" engine runs as fast as the CPU allows.
//!
//! Each first token carries its [`EngineTiming`]: the queue wait from the
//! sequence's submission to the start of the step that admitted it, and
//! that step's time to the token's delivery, both on this task's clock.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::engine::{Engine, EngineParams, EngineTiming, SeqSpec, TokenOut};
use crate::exposition::EngineGauges;

struct Submit {
    spec: SeqSpec,
    sink: mpsc::UnboundedSender<TokenOut>,
}

/// The way into the engine task.
#[derive(Debug, Clone)]
pub struct EngineHandle {
    tx: mpsc::UnboundedSender<Submit>,
    /// The engine's state for `GET /metrics`, updated after every step.
    pub gauges: Arc<EngineGauges>,
}

impl std::fmt::Debug for Submit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.spec.fmt(f)
    }
}

impl EngineHandle {
    /// Queues a sequence; its tokens arrive on the returned channel. The
    /// sequence is dropped from the engine when the receiver is dropped.
    pub fn submit(&self, spec: SeqSpec) -> mpsc::UnboundedReceiver<TokenOut> {
        let (sink, tokens) = mpsc::unbounded_channel();
        // If the engine task is gone the receiver simply ends.
        let _ = self.tx.send(Submit { spec, sink });
        tokens
    }
}

/// Starts the engine task on the current runtime.
pub fn spawn_engine(params: EngineParams) -> EngineHandle {
    let (tx, rx) = mpsc::unbounded_channel();
    let gauges = Arc::new(EngineGauges::default());
    gauges
        .max_batch
        .store(params.max_batch as u64, Ordering::Relaxed);
    tokio::spawn(engine_loop(params, rx, gauges.clone()));
    EngineHandle { tx, gauges }
}

/// A sequence's way back to its request, and when the engine got it.
struct Sink {
    tx: mpsc::UnboundedSender<TokenOut>,
    submitted: Instant,
}

/// Queues a submitted sequence, noting when it came.
fn admit(engine: &mut Engine, sinks: &mut HashMap<u64, Sink>, s: Submit) {
    engine.submit(s.spec);
    let sink = Sink {
        tx: s.sink,
        submitted: Instant::now(),
    };
    sinks.insert(s.spec.id, sink);
}

/// Milliseconds from `a` to `b` (0 if `b` is earlier).
fn ms_between(a: Instant, b: Instant) -> f64 {
    b.saturating_duration_since(a).as_secs_f64() * 1000.0
}

async fn engine_loop(
    params: EngineParams,
    mut rx: mpsc::UnboundedReceiver<Submit>,
    gauges: Arc<EngineGauges>,
) {
    let mut engine = Engine::new(params);
    let mut sinks: HashMap<u64, Sink> = HashMap::new();
    let mut deadline = Instant::now();
    let slack = Duration::from_millis(2);
    loop {
        if engine.is_idle() {
            gauges.waiting.store(0, Ordering::Relaxed);
            gauges.running.store(0, Ordering::Relaxed);
            match rx.recv().await {
                Some(s) => admit(&mut engine, &mut sinks, s),
                None => return,
            }
            deadline = Instant::now();
        }
        while let Ok(s) = rx.try_recv() {
            admit(&mut engine, &mut sinks, s);
        }
        engine.drop_waiting(|id| sinks.get(&id).is_none_or(|s| s.tx.is_closed()));
        let began = Instant::now();
        let Some(step) = engine.step() else { continue };
        gauges
            .waiting
            .store(engine.waiting() as u64, Ordering::Relaxed);
        gauges.running.store(step.batch as u64, Ordering::Relaxed);
        let now = Instant::now();
        if deadline + slack < now {
            deadline = now;
        }
        if step.duration_ms > 0.0 {
            deadline += Duration::from_secs_f64(step.duration_ms / 1000.0);
            tokio::time::sleep_until(deadline).await;
        } else {
            tokio::task::yield_now().await;
        }
        let delivered_at = Instant::now();
        for mut token in step.tokens {
            gauges.tokens.fetch_add(1, Ordering::Relaxed);
            gauges
                .finished
                .fetch_add(u64::from(token.last), Ordering::Relaxed);
            let sink = sinks.get(&token.id);
            if let (0, Some(sink)) = (token.index, sink) {
                token.timing = Some(EngineTiming {
                    queue_ms: ms_between(sink.submitted, began),
                    prefill_ms: ms_between(began, delivered_at),
                });
            }
            let delivered = sink.is_some_and(|s| s.tx.send(token).is_ok());
            if !delivered {
                engine.cancel(token.id);
                sinks.remove(&token.id);
            } else if token.last {
                sinks.remove(&token.id);
            }
        }
    }
}
