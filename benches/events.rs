//! The recorder's cost per streamed event, without sockets (`cargo bench
//! --bench events`).
//!
//! Feeds sim-shaped chat and completions streams (a role chunk, 64 token
//! chunks, a finish chunk, a usage chunk, `[DONE]`) through the exchange's
//! own reading ([`StreamState::feed`]: SSE framing, the chunk reader, the
//! observation), one event per frame as a server that flushes every token
//! sends them, and eight per frame as a busy connection's read returns
//! them. It prints nanoseconds per event, and heap allocations per token
//! event counted by a wrapper around the system allocator, and the time of
//! one chunk through the token fast path (`chat::classify`) and through the
//! full parse (`chat::parse`). Verdict: no allocation per token event once
//! a stream's buffers have grown (a stream's first events may grow them;
//! the gaps list grows by doubling, a handful of times a stream).
//!
//! Environment: `GOODPUT_EVENTS_STREAMS=20000` (streams per case).

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use goodput_record::exchange::chat;
use goodput_record::exchange::sse::Event;
use goodput_record::exchange::{Observation, StreamState};
use goodput_record::workload::body::Api;

/// The system allocator, counting every allocation and reallocation.
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Token events per stream.
const TOKENS: usize = 64;

/// One stream's SSE bytes, event by event, in the sim's shape.
fn stream_events(completions: bool) -> Vec<String> {
    let head = r#"{"id":"chatcmpl-17","object":"chat.completion.chunk","created":0,"model":"sim","#;
    let mut events = vec![format!(
        "data: {head}\"choices\":[{{\"index\":0,\"delta\":{{\"role\":\"assistant\",\"content\":\"\"}},\"finish_reason\":null}}]}}\n\n"
    )];
    for i in 0..TOKENS {
        events.push(if completions {
            format!("data: {{\"id\":\"cmpl-17\",\"object\":\"text_completion\",\"created\":0,\"model\":\"sim\",\"choices\":[{{\"index\":0,\"text\":\" w{i}\",\"logprobs\":null,\"finish_reason\":null}}]}}\n\n")
        } else {
            format!("data: {head}\"choices\":[{{\"index\":0,\"delta\":{{\"content\":\" w{i}\"}},\"finish_reason\":null}}]}}\n\n")
        });
    }
    events.push(format!(
        "data: {head}\"choices\":[{{\"index\":0,\"delta\":{{}},\"finish_reason\":\"length\"}}]}}\n\n"
    ));
    events.push(format!(
        "data: {head}\"choices\":[],\"usage\":{{\"prompt_tokens\":32,\"completion_tokens\":{TOKENS},\"total_tokens\":{}}}}}\n\n",
        32 + TOKENS
    ));
    events.push("data: [DONE]\n\n".into());
    events
}

/// The events joined `per_frame` to a frame.
fn frames(events: &[String], per_frame: usize) -> Vec<Vec<u8>> {
    events
        .chunks(per_frame)
        .map(|c| c.concat().into_bytes())
        .collect()
}

/// Feeds `streams` streams of `frames`; (ns per event, allocations per
/// token event while the token frames were fed, after the first eight).
fn run(frames: &[Vec<u8>], events: usize, streams: usize) -> (f64, f64) {
    let steady = 8.min(frames.len());
    let mut steady_allocs = 0;
    let mut steady_events = 0;
    let started = Instant::now();
    for _ in 0..streams {
        let mut state = StreamState::new(Api::Chat, 1 << 20);
        let mut obs = Observation::default();
        for (k, frame) in frames.iter().enumerate() {
            let before = ALLOCATIONS.load(Ordering::Relaxed);
            let ending = state.feed(&mut obs, frame, k as f64);
            if k >= steady && k + 3 < frames.len() {
                steady_allocs += ALLOCATIONS.load(Ordering::Relaxed) - before;
                steady_events += 1;
            }
            black_box(ending);
        }
        assert_eq!(obs.content_chunks, TOKENS as u64, "every token counted");
    }
    let ns = started.elapsed().as_nanos() as f64 / (streams * events) as f64;
    (ns, steady_allocs as f64 / steady_events.max(1) as f64)
}

/// Nanoseconds per call of `read` on `data`.
fn per_chunk(read: fn(Event<'_>) -> chat_chunk::Chunk, data: &[u8], n: usize) -> f64 {
    let started = Instant::now();
    for _ in 0..n {
        black_box(read(Event {
            data: black_box(data),
            error: false,
        }));
    }
    started.elapsed().as_nanos() as f64 / n as f64
}

use goodput_record::exchange::chunk as chat_chunk;

fn full(event: Event<'_>) -> chat_chunk::Chunk {
    chat::parse(event.data)
}

fn main() {
    let streams: usize = std::env::var("GOODPUT_EVENTS_STREAMS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let mut worst = 0.0f64;
    for (name, completions) in [("chat", false), ("completions", true)] {
        let events = stream_events(completions);
        for per_frame in [1, 8] {
            let (ns, allocs) = run(&frames(&events, per_frame), events.len(), streams);
            worst = worst.max(allocs);
            println!(
                "{name:<12} {per_frame} event(s)/frame: {ns:>7.1} ns/event, {allocs:.4} allocations per frame of tokens"
            );
        }
        let token = events[5].trim_start_matches("data: ").trim_end().as_bytes();
        let fast = per_chunk(chat::classify, token, 2_000_000);
        let slow = per_chunk(full, token, 2_000_000);
        println!(
            "{name:<12} one token chunk: fast path {fast:.1} ns, full parse {slow:.1} ns ({:.1}x)",
            slow / fast
        );
    }
    if worst == 0.0 {
        println!("verdict: no allocation per token event");
    } else {
        println!("verdict: FAIL, {worst} allocations per frame of tokens");
        std::process::exit(1);
    }
}
