//! A recording's document frame: everything of the trace except its rows,
//! known before the first request leaves (window, gates, workload labels),
//! plus how observation stopped, known at the end.
//!
//! It exists so the three ways a trace is made from a run — the in-memory
//! path ([`crate::build_trace`]), the spool path (rows read back from the
//! spool, [`crate::output::spool`]) and recovery of a spool whose recorder died
//! ([`crate::output::recover`]) — share one envelope and so write the same bytes for
//! the same rows. The frame is serializable because the spool's first line
//! carries it: recovery has no plan, only the spool.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use goodput_core::trace::write::{round_us, TraceDoc, TraceRow, TRACE_SCHEMA};
use goodput_core::trace::{
    Equality, Gates, Labels, Phase, Resources, Scalar, TokenCount, Warmup, Window,
};

use crate::exchange::{Ending, Observation};
use crate::output::row::{self, RowMeta};
use crate::plan::Plan;
use crate::run::{Drain, Finished, RunOutcome, ShardClock};
use crate::schedule::phased::label_rows;
use crate::workload::body::{prompt_hash, Prompt, PromptSource};

/// The shard tag lives with the plan that holds it; its old path stays.
pub use crate::plan::ShardTag;

/// What a row says about its prompt (never the text).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptMeta {
    /// The prompt's SLO class, when its source named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Characters of the text.
    pub chars: u64,
    /// Short hash of the text.
    pub hash: String,
    /// The workload's labels for the request (`promptTokens`,
    /// `prefixGroup`, `session`…).
    #[serde(default, skip_serializing_if = "Labels::is_empty")]
    pub labels: Labels,
}

impl PromptMeta {
    /// The meta of a prompt.
    pub fn of(prompt: &Prompt) -> PromptMeta {
        PromptMeta {
            class: prompt.class.clone(),
            chars: prompt.text.chars().count() as u64,
            hash: prompt_hash(&prompt.text),
            labels: Labels::new(),
        }
    }

    /// The meta of request `index` of `source`: its prompt's, with the
    /// workload's labels for it.
    pub fn of_request(source: &PromptSource, index: usize) -> PromptMeta {
        PromptMeta {
            labels: source.extras(index).labels,
            ..PromptMeta::of(&source.prompt(index))
        }
    }
}

/// The parts of a trace fixed by the plan (serialized as the spool's header).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Frame {
    /// Warm-up length, ms (the window starts there).
    pub warmup_ms: f64,
    /// Planned end of the window, ms since t0.
    pub window_end_ms: f64,
    /// Observation continues this long after the window, ms.
    pub grace_ms: f64,
    /// The equality rule.
    pub equality: Equality,
    /// SLO classes.
    pub classes: BTreeMap<String, Gates>,
    /// The default class.
    pub default_class: String,
    /// `workload` labels known before the run.
    pub workload: Labels,
    /// Open loop (scheduled arrivals) or closed loop.
    pub open_loop: bool,
    /// The phases of a phased schedule (empty: one rate throughout); each
    /// row arriving in one is labelled with its name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<Phase>,
    /// The GPUs behind the endpoint and their price, when declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
    /// The shard this recording is, when the schedule is split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<ShardTag>,
    /// Rows carry no `gapsMs` (`--no-gaps`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_gaps: bool,
    /// The answers are not streamed (`--api embeddings`): the document says
    /// `streamed: false` and rows carry no token instants or gaps.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unstreamed: bool,
}

/// How observation of a run stopped: known only at its end (or, for a
/// recovered spool, from the spool).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Stop {
    /// When an interrupt (or, recovering, the last instant the spool proves)
    /// stopped the run, ms since t0.
    pub interrupted_at_ms: Option<f64>,
    /// Requests the full schedule held (open loop), or were issued (closed loop).
    pub planned: usize,
    /// Requests sent a second time after the keep-alive race.
    pub keep_alive_retries: u64,
    /// The trace was rebuilt from the spool of a recorder that died.
    pub recovered: bool,
    /// Recovered from a spool that holds the run's end: the run finished and
    /// only its trace was not written.
    pub run_ended: bool,
    /// A shard's own clock figures.
    pub shard_clock: Option<ShardClock>,
    /// The drain after a stop-sending interrupt (the first Ctrl-C): then
    /// observation went on past `interrupted_at_ms`, to the drain's end.
    pub drain: Option<Drain>,
}

impl Stop {
    /// How an in-memory run stopped.
    pub fn of(outcome: &RunOutcome) -> Stop {
        Stop {
            interrupted_at_ms: outcome.interrupted_at_ms,
            planned: outcome.planned,
            keep_alive_retries: outcome.keep_alive_retries,
            recovered: false,
            run_ended: false,
            shard_clock: outcome.shard_clock,
            drain: outcome.drain,
        }
    }
}

impl Frame {
    /// The frame of a plan.
    pub fn of(plan: &Plan) -> Frame {
        Frame {
            warmup_ms: plan.warmup_ms,
            window_end_ms: plan.run.window_end_ms,
            grace_ms: plan.run.grace_ms,
            equality: plan.equality,
            classes: plan.classes.clone(),
            default_class: plan.default_class.clone(),
            workload: plan.workload.clone(),
            open_loop: plan.open_loop(),
            phases: plan.phases.clone(),
            resources: plan.resources,
            shard: plan.shard,
            no_gaps: plan.no_gaps,
            unstreamed: !plan.run.template.api.streamed(),
        }
    }

    /// The row of request `index`, which ran (or started to).
    pub fn ended_row(&self, index: usize, f: &Finished, tokens: TokenCount) -> TraceRow {
        let meta = RowMeta {
            index,
            class: f.class.clone(),
            arrival_ms: f.arrival_ms,
            open_loop: self.open_loop,
            prompt_chars: f.prompt_chars,
            prompt_hash: f.prompt_hash.clone(),
            labels: f.labels.clone(),
        };
        let row = row::assemble(&meta, &f.obs, &f.ending, tokens);
        self.finish_row(index, row)
    }

    /// The row of request `index`, due at `arrival_ms` with `prompt`, which
    /// the client never sent.
    pub fn unsent_row(&self, index: usize, arrival_ms: f64, prompt: &PromptMeta) -> TraceRow {
        let row = row::not_sent(&self.meta(index, arrival_ms, prompt));
        self.finish_row(index, row)
    }

    /// The row of request `index`, dispatched at `arrival_ms` with `prompt`,
    /// whose ending nobody saw (recovering a spool): in flight, and nothing
    /// else is known.
    pub fn unended_row(&self, index: usize, arrival_ms: f64, prompt: &PromptMeta) -> TraceRow {
        self.seen_row(index, arrival_ms, prompt, &Observation::default())
    }

    /// The row of request `index`, arriving at `arrival_ms` with `prompt`,
    /// of which `obs` was seen and no ending (recovering a spool that holds
    /// its first token): in flight with what was seen, as the recorder
    /// writes a request cut off in flight.
    pub fn seen_row(
        &self,
        index: usize,
        arrival_ms: f64,
        prompt: &PromptMeta,
        obs: &Observation,
    ) -> TraceRow {
        let meta = self.meta(index, arrival_ms, prompt);
        let row = row::assemble(&meta, obs, &Ending::InFlight, TokenCount::Usage);
        self.finish_row(index, row)
    }

    /// What the frame adds to an assembled row: its id (shards name theirs)
    /// and the label of the phase it arrived in.
    fn finish_row(&self, index: usize, mut row: TraceRow) -> TraceRow {
        row.id = self.row_id(index);
        if self.no_gaps || self.unstreamed {
            row.gaps_ms = None;
        }
        label_rows(std::slice::from_mut(&mut row), &self.phases);
        row
    }

    fn meta(&self, index: usize, arrival_ms: f64, prompt: &PromptMeta) -> RowMeta {
        RowMeta {
            index,
            class: prompt.class.clone(),
            arrival_ms,
            open_loop: self.open_loop,
            prompt_chars: prompt.chars,
            prompt_hash: prompt.hash.clone(),
            labels: prompt.labels.clone(),
        }
    }

    /// The id of the row of request `index` (the run's own numbering; a
    /// shard's rows are named by their index in the whole schedule and their
    /// shard, so the ids of all shards are distinct).
    pub fn row_id(&self, index: usize) -> String {
        match self.shard {
            Some(s) => format!("r{}-s{}", s.global(index), s.index),
            None => format!("r{index}"),
        }
    }

    /// The document without its rows: window (cut at an interrupt), warm-up,
    /// gates, boundary and workload, for `rows` rows counted in `tokens`.
    pub fn envelope(&self, stop: &Stop, rows: usize, tokens: TokenCount) -> TraceDoc {
        let start_ms = self.warmup_ms;
        let (end_ms, horizon_ms) = self.window_end(stop);
        TraceDoc {
            schema: TRACE_SCHEMA,
            window: Window {
                start_ms,
                end_ms,
                horizon_ms: Some(horizon_ms),
            },
            warmup: (start_ms > 0.0).then_some(Warmup {
                start_ms: 0.0,
                end_ms: start_ms,
            }),
            equality: self.equality,
            classes: self.classes.clone(),
            default_class: self.default_class.clone(),
            tokens,
            streamed: !self.unstreamed,
            boundary: self.boundary(stop),
            workload: self.stopped_workload(stop, rows),
            phases: self.phases.clone(),
            resources: self.resources,
            quality: None,
            rows: Vec::new(),
        }
    }

    /// Where the window and the horizon end, ms since t0.
    fn window_end(&self, stop: &Stop) -> (f64, f64) {
        let (end_ms, horizon_ms) = self.cut_window(stop);
        // After a stop-sending interrupt, observation went on to the drain's
        // end: completions up to it are seen, and the horizon says so.
        match stop.drain {
            Some(d) if stop.interrupted_at_ms.is_some() => {
                (end_ms, round_us(d.ended_ms).max(horizon_ms))
            }
            _ => (end_ms, horizon_ms),
        }
    }

    /// [`Frame::window_end`] as a cut leaves it (no drain).
    fn cut_window(&self, stop: &Stop) -> (f64, f64) {
        let start_ms = self.warmup_ms;
        let planned_end_ms = self.window_end_ms;
        match stop.interrupted_at_ms {
            // Cut the window at the interrupt: rates are per observed second and
            // nothing after the interrupt is claimed. Interrupted during warm-up,
            // the window is an empty 1 ms: no row arrives in it.
            Some(t) if t < planned_end_ms => {
                let end = if t > start_ms {
                    round_us(t)
                } else {
                    start_ms + 1.0
                };
                (end, end)
            }
            Some(t) => (planned_end_ms, round_us(t).max(planned_end_ms)),
            None => (planned_end_ms, planned_end_ms + self.grace_ms),
        }
    }

    /// The workload labels with what the end of the run added: the rows
    /// scheduled, keep-alive retries, the interrupt, recovery.
    fn stopped_workload(&self, stop: &Stop, rows: usize) -> Labels {
        let mut workload = self.workload.clone();
        workload.insert("scheduled".into(), Scalar::Number(rows as f64));
        if stop.keep_alive_retries > 0 {
            workload.insert(
                "keepAliveRetries".into(),
                Scalar::Number(stop.keep_alive_retries as f64),
            );
        }
        if let Some(t) = stop.interrupted_at_ms {
            workload.insert("interrupted".into(), Scalar::Bool(true));
            workload.insert("interruptedAtMs".into(), Scalar::Number(round_us(t)));
            workload.insert(
                "plannedScheduled".into(),
                Scalar::Number(stop.planned as f64),
            );
            workload.insert(
                "plannedWindowEndMs".into(),
                Scalar::Number(self.window_end_ms),
            );
        }
        if let Some(d) = stop.drain {
            workload.insert("sendingStopped".into(), Scalar::Bool(true));
            workload.insert("drain".into(), Scalar::String(d.end.as_str().into()));
            workload.insert("drainEndedMs".into(), Scalar::Number(round_us(d.ended_ms)));
            workload.insert("inFlightAtStop".into(), Scalar::Number(d.in_flight as f64));
        }
        if stop.recovered {
            workload.insert("recovered".into(), Scalar::Bool(true));
        }
        if stop.run_ended {
            workload.insert("runEnded".into(), Scalar::Bool(true));
        }
        workload
    }

    /// The boundary labels: how arrivals, tokens and the clock were
    /// measured, and a shard's place and clock figures.
    fn boundary(&self, stop: &Stop) -> Labels {
        let mut boundary = Labels::new();
        let arrival = if self.open_loop {
            "scheduled"
        } else {
            "closed-loop"
        };
        boundary.insert("arrival".into(), Scalar::String(arrival.into()));
        boundary.insert("tokens".into(), Scalar::String("client".into()));
        boundary.insert("clock".into(), Scalar::String("monotonic".into()));
        if let Some(shard) = self.shard {
            boundary.insert("shard".into(), Scalar::Number(shard.index as f64));
            boundary.insert("shards".into(), Scalar::Number(shard.count as f64));
            if let Some(c) = stop.shard_clock {
                let mut put = |k: &str, v: f64| {
                    boundary.insert(k.into(), Scalar::Number(round_us(v)));
                };
                put("shardOffsetMs", c.offset_ms);
                put("shardSkewPpm", c.skew_ppm);
                put("shardStartLateMs", c.start_late_ms);
            }
        }
        boundary
    }

    /// The whole document, rows given (the in-memory path).
    pub fn document(&self, stop: &Stop, tokens: TokenCount, rows: Vec<TraceRow>) -> TraceDoc {
        let mut doc = self.envelope(stop, rows.len(), tokens);
        doc.rows = rows;
        doc
    }
}
