//! Server-sent events, incrementally, and the OpenAI chunks they carry. No I/O.
//!
//! [`SseParser`] follows the WHATWG event-stream rules: lines end with CRLF, LF
//! or a lone CR; `data:` lines accumulate (joined by LF); a blank line
//! dispatches the event; `:` lines are comments; an unfinished event at the end
//! of the stream is dropped. It keeps only the unfinished line between calls,
//! so what it emits does not depend on how the bytes were split into network
//! frames (a CR at the end of one frame and an LF at the start of the next is
//! one line ending) — a proptest below checks that for arbitrary splits.
//!
//! What it holds is bounded, so a server cannot exhaust the recorder's
//! memory with one endless line: a line (without its line ending) longer than
//! the parser's bound, or an event whose data (its data lines joined by LF)
//! is longer than it, stops the parser with [`EventTooLarge`]; neither buffer
//! ever holds more than the bound (plus the LF after the last data line).
//! The bound is checked where the bytes are, not where the frame ends, so
//! whether and after which events the parser stops does not depend on the
//! split either.
//!
//! What an event's data means is each API's own reading
//! ([`crate::exchange::chat`], [`crate::exchange::responses`],
//! [`crate::exchange::messages`]), into the one [`Chunk`] the exchange
//! understands; [`classify`], the chat/completions reading, is re-exported
//! here for the checks that fuzz the framer with it.

pub use crate::exchange::chat::classify;
pub use crate::exchange::chunk::{Chunk, Tokens, Usage};

/// The default bound on one SSE line and on one event's data (1 MiB): far
/// above any real chunk (a few hundred bytes), far below what hurts.
pub const DEFAULT_MAX_EVENT_BYTES: usize = 1 << 20;

/// A line, or an event's data, passed the parser's bound: the stream is
/// refused from there on (the request fails `event_too_large`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an SSE line or event is longer than {limit} bytes")]
pub struct EventTooLarge {
    /// The bound that was passed, in bytes.
    pub limit: usize,
}

/// An incremental SSE framer.
#[derive(Debug)]
pub struct SseParser {
    /// The unfinished line carried over from the previous `push`.
    line: Vec<u8>,
    /// Data lines of the event being assembled, each followed by LF.
    data: Vec<u8>,
    /// Whether the event being assembled has `event: error`.
    error_event: bool,
    /// The previous byte was a CR that ended a line: an LF right after it is
    /// part of the same line ending (possibly in the next frame).
    after_cr: bool,
    /// The most bytes one line, or one event's data, may hold.
    max_event_bytes: usize,
    /// The bound was passed: every later `push` is refused.
    overflowed: bool,
}

impl Default for SseParser {
    fn default() -> SseParser {
        SseParser::with_limit(DEFAULT_MAX_EVENT_BYTES)
    }
}

/// Makes room for `extra` more bytes in `buf`, growing its capacity
/// geometrically but never past `cap` (unless the contents need more), so a
/// buffer that holds at most `cap` bytes never costs more than `cap` bytes.
fn reserve_capped(buf: &mut Vec<u8>, extra: usize, cap: usize) {
    let needed = buf.len() + extra;
    if needed > buf.capacity() {
        let target = (buf.capacity() * 2).max(needed).min(cap.max(needed));
        buf.reserve_exact(target - buf.len());
    }
}

/// One dispatched event, borrowed from the parser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event<'a> {
    /// The joined data lines (without the final LF).
    pub data: &'a [u8],
    /// The event type was `error`.
    pub error: bool,
}

impl SseParser {
    /// A parser at the start of a stream, with the default bound.
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// A parser at the start of a stream whose lines and events may hold at
    /// most `max_event_bytes` bytes each.
    pub fn with_limit(max_event_bytes: usize) -> SseParser {
        SseParser {
            line: Vec::new(),
            data: Vec::new(),
            error_event: false,
            after_cr: false,
            max_event_bytes,
            overflowed: false,
        }
    }

    /// Feeds the next bytes of the stream; calls `on_event` for every event
    /// completed by them, in order. Past the bound, the events before the
    /// oversized line or event have been delivered and `Err` is returned, now
    /// and on every later call; the buffers are freed.
    pub fn push(
        &mut self,
        mut bytes: &[u8],
        mut on_event: impl FnMut(Event<'_>),
    ) -> Result<(), EventTooLarge> {
        if self.overflowed {
            return Err(self.too_large());
        }
        if self.after_cr && !bytes.is_empty() {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        // memchr2: SIMD search for the line end (this loop runs over every
        // byte the server streams; a byte-at-a-time scan was a measurable
        // share of the recorder's CPU per token).
        while let Some(end) = memchr::memchr2(b'\n', b'\r', bytes) {
            let (head, tail) = bytes.split_at(end);
            if self.line.len() + head.len() > self.max_event_bytes {
                return Err(self.overflow());
            }
            let ends_with_cr = tail[0] == b'\r';
            if self.line.is_empty() {
                self.line_done(head, &mut on_event)?;
            } else {
                let mut line = std::mem::take(&mut self.line);
                reserve_capped(&mut line, head.len(), self.max_event_bytes);
                line.extend_from_slice(head);
                let done = self.line_done(&line, &mut on_event);
                line.clear();
                self.line = line;
                done?;
            }
            bytes = &tail[1..];
            if ends_with_cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        if self.line.len() + bytes.len() > self.max_event_bytes {
            return Err(self.overflow());
        }
        reserve_capped(&mut self.line, bytes.len(), self.max_event_bytes);
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn too_large(&self) -> EventTooLarge {
        EventTooLarge {
            limit: self.max_event_bytes,
        }
    }

    /// Stops the parser for good and gives its memory back.
    fn overflow(&mut self) -> EventTooLarge {
        self.overflowed = true;
        self.line = Vec::new();
        self.data = Vec::new();
        self.too_large()
    }

    fn line_done(
        &mut self,
        line: &[u8],
        on_event: &mut impl FnMut(Event<'_>),
    ) -> Result<(), EventTooLarge> {
        if line.is_empty() {
            if !self.data.is_empty() {
                self.data.pop(); // the LF after the last data line
                on_event(Event {
                    data: &self.data,
                    error: self.error_event,
                });
            }
            self.data.clear();
            self.error_event = false;
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(()); // comment
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match field {
            b"data" => {
                // Joined, the event's data would be `data` (whose last LF
                // becomes the separator) followed by `value`.
                if self.data.len() + value.len() > self.max_event_bytes {
                    return Err(self.overflow());
                }
                reserve_capped(&mut self.data, value.len() + 1, self.max_event_bytes + 1);
                self.data.extend_from_slice(value);
                self.data.push(b'\n');
            }
            b"event" => self.error_event = value == b"error",
            _ => {} // id, retry and unknown fields do not matter here
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    type Events = Vec<(Vec<u8>, bool)>;

    /// The events of `parts` fed in order to a parser bounded at `limit`,
    /// and whether it stopped at the bound.
    fn bounded(limit: usize, parts: &[&[u8]]) -> (Events, Result<(), EventTooLarge>) {
        let mut parser = SseParser::with_limit(limit);
        let mut out = Vec::new();
        let mut outcome = Ok(());
        for part in parts {
            outcome = parser.push(part, |e| out.push((e.data.to_vec(), e.error)));
        }
        (out, outcome)
    }

    fn events(parts: &[&[u8]]) -> Events {
        let (out, outcome) = bounded(DEFAULT_MAX_EVENT_BYTES, parts);
        assert_eq!(outcome, Ok(()));
        out
    }

    fn data(s: &str) -> (Vec<u8>, bool) {
        (s.as_bytes().to_vec(), false)
    }

    #[test]
    fn blank_lines_dispatch_and_data_lines_join() {
        let got = events(&[b"data: a\ndata: b\n\ndata:c\n\n: comment\n\ndata\n\nid: 1\n\n"]);
        assert_eq!(got, vec![data("a\nb"), data("c"), data("")]);
    }

    #[test]
    fn every_line_ending_works_even_when_split_between_frames() {
        assert_eq!(events(&[b"data: x\r\n\r\n"]), vec![data("x")]);
        assert_eq!(events(&[b"data: x\r\r"]), vec![data("x")]);
        assert_eq!(events(&[b"data: x\r", b"\n\r", b"\n"]), vec![data("x")]);
        // A CR then an LF in the next frame is one line ending, not two.
        assert_eq!(
            events(&[b"data: x\r", b"\ndata: y\n\n"]),
            vec![data("x\ny")]
        );
    }

    #[test]
    fn an_unfinished_event_at_the_end_is_not_dispatched() {
        assert_eq!(events(&[b"data: x\n"]), vec![]);
    }

    #[test]
    fn error_events_are_flagged() {
        assert_eq!(
            events(&[b"event: error\ndata: boom\n\ndata: ok\n\n"]),
            vec![(b"boom".to_vec(), true), data("ok")]
        );
    }

    const OVER_8: Result<(), EventTooLarge> = Err(EventTooLarge { limit: 8 });

    #[test]
    fn a_line_exactly_at_the_bound_passes_and_one_byte_more_stops_the_parser() {
        // `data: ab` is 8 bytes; the line ending does not count.
        assert_eq!(bounded(8, &[b"data: ab\n\n"]), (vec![data("ab")], Ok(())));
        assert_eq!(
            bounded(8, &[b"data: ab\r\n\r\n"]),
            (vec![data("ab")], Ok(()))
        );
        assert_eq!(bounded(8, &[b"data: abc\n\n"]), (vec![], OVER_8));
        // An unfinished line is held up to the bound, and refused past it.
        assert_eq!(bounded(8, &[b"data: ab"]), (vec![], Ok(())));
        assert_eq!(bounded(8, &[b"data: ab", b"c"]), (vec![], OVER_8));
        // Comments and unknown fields count like any line.
        assert_eq!(bounded(8, &[b": 1234567\n"]), (vec![], OVER_8));
        assert_eq!(bounded(8, &[b": 123456\n"]), (vec![], Ok(())));
    }

    #[test]
    fn an_event_exactly_at_the_bound_passes_and_one_byte_more_stops_the_parser() {
        // Lines of at most 8 bytes under a bound of 10: data `123`, `456`,
        // `78` join into `123\n456\n78`, 10 bytes; with `789`, 11.
        let at = b"data:123\ndata:456\ndata:78\n\n";
        assert_eq!(bounded(10, &[at]), (vec![data("123\n456\n78")], Ok(())));
        let over = b"data:123\ndata:456\ndata:789\n\n";
        assert_eq!(
            bounded(10, &[over]),
            (vec![], Err(EventTooLarge { limit: 10 }))
        );
        // Events before the oversized one are delivered; nothing after it,
        // and every later push is refused.
        let mut parser = SseParser::with_limit(8);
        let mut got = Vec::new();
        let first = parser.push(b"data: x\n\ndata: 123456789", |e| got.push(e.data.to_vec()));
        assert_eq!(first, OVER_8);
        assert_eq!(
            parser.push(b"\n\ndata: y\n\n", |e| got.push(e.data.to_vec())),
            OVER_8
        );
        assert_eq!(got, vec![b"x".to_vec()]);
    }

    #[test]
    fn the_buffers_never_grow_past_the_bound() {
        let mut parser = SseParser::with_limit(1000);
        // One 980-byte line, in 70 pieces.
        for _ in 0..70 {
            assert_eq!(parser.push(b"data:123456789", |_| {}), Ok(()));
        }
        assert!(parser.line.capacity() <= 1000, "{}", parser.line.capacity());
        // Its value (975 bytes, after `data:`) and an LF.
        assert_eq!(parser.push(b"\n", |_| {}), Ok(()));
        assert_eq!(parser.data.len(), 976);
        assert!(parser.data.capacity() <= 1001, "{}", parser.data.capacity());
        // 30 more bytes of data would make a 1006-byte event.
        let more = b"data:123456789012345678901234567890\n";
        assert_eq!(
            parser.push(more, |_| {}),
            Err(EventTooLarge { limit: 1000 })
        );
        assert_eq!((parser.line.capacity(), parser.data.capacity()), (0, 0));
    }

    fn whole(bytes: &[u8]) -> Vec<(Vec<u8>, bool)> {
        events(&[bytes])
    }

    fn split(bytes: &[u8], cuts: &[usize]) -> Vec<(Vec<u8>, bool)> {
        let mut cuts: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
        cuts.sort_unstable();
        let mut parts: Vec<&[u8]> = Vec::new();
        let mut last = 0;
        for c in cuts {
            parts.push(&bytes[last..c]);
            last = c;
        }
        parts.push(&bytes[last..]);
        events(&parts)
    }

    fn line_ending() -> impl Strategy<Value = &'static [u8]> {
        prop_oneof![Just(&b"\n"[..]), Just(&b"\r\n"[..]), Just(&b"\r"[..])]
    }

    proptest! {
        /// Arbitrary bytes from an alphabet dense in the characters that
        /// matter: any split gives the same events as no split.
        #[test]
        fn events_do_not_depend_on_how_arbitrary_bytes_are_split(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '),
                            Just(b'd'), Just(b'a'), Just(b't'), Just(b'x'), any::<u8>()], 0..200),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
        ) {
            prop_assert_eq!(split(&bytes, &cuts), whole(&bytes));
        }

        /// The same with a small bound: the events delivered before the
        /// parser stops, and whether it stops, do not depend on the split.
        #[test]
        fn the_bound_stops_the_parser_at_the_same_place_whatever_the_split(
            bytes in proptest::collection::vec(
                prop_oneof![Just(b'\n'), Just(b'\r'), Just(b':'), Just(b' '),
                            Just(b'd'), Just(b'a'), Just(b't'), Just(b'x'), any::<u8>()], 0..200),
            cuts in proptest::collection::vec(any::<usize>(), 0..12),
            limit in 1usize..24,
        ) {
            let mut positions: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
            positions.sort_unstable();
            let mut parts: Vec<&[u8]> = Vec::new();
            let mut last = 0;
            for p in positions {
                parts.push(&bytes[last..p]);
                last = p;
            }
            parts.push(&bytes[last..]);
            prop_assert_eq!(bounded(limit, &parts), bounded(limit, &[&bytes]));
        }

        /// Well-formed OpenAI-like streams with mixed line endings: any split
        /// gives exactly the events that were written, in order.
        #[test]
        fn written_events_come_back_whatever_the_split(
            payloads in proptest::collection::vec("[a-z{}\":, ]{0,40}", 0..10),
            endings in proptest::collection::vec(line_ending(), 20),
            cuts in proptest::collection::vec(any::<usize>(), 0..20),
        ) {
            let mut bytes = Vec::new();
            let mut expected = Vec::new();
            for (i, p) in payloads.iter().enumerate() {
                bytes.extend_from_slice(b"data: ");
                bytes.extend_from_slice(p.as_bytes());
                let first = endings[(2 * i) % 20];
                let mut blank = endings[(2 * i + 1) % 20];
                // A lone CR followed by an LF would be one CRLF, not a blank line.
                if first == b"\r" && blank[0] == b'\n' {
                    blank = b"\r";
                }
                bytes.extend_from_slice(first);
                bytes.extend_from_slice(blank);
                expected.push(data(p));
            }
            prop_assert_eq!(split(&bytes, &cuts), expected);
        }
    }
}
