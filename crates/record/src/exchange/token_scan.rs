//! The fast path for chat and completions chunks whose only news is a token.
//!
//! Nearly every event of a stream is `{"id":…,"choices":[{"index":0,
//! "delta":{"content":"word"},"finish_reason":null}]}`: a full serde parse
//! of each one was the largest share of the recorder's CPU per token.
//! [`token_only`] walks the chunk once with a small strict JSON scanner and
//! answers only when the full parse ([`crate::exchange::chat`]'s `parse`)
//! would give a `Chunk::Data` with its tokens, no finish reason and no
//! usage. It declines (`None`, and the caller parses in full) on anything
//! else or anything it cannot judge cheaply: bytes that are not UTF-8, a
//! `\u` escape or a control character in any string, an escaped key, a
//! repeated member the full parse reads, more than one choice, a non-null
//! `usage`, `error`, `finish_reason`, a non-string `object` or `message`,
//! `object: "error"`, a shape the full parse would reject, nesting past
//! [`MAX_DEPTH`]. Members are found by walking the JSON, never by searching
//! the text, so a content string that spells `"finish_reason":"stop"` is
//! only a string.

use crate::exchange::chunk::Tokens;

/// The deepest nesting of an ignored member the scanner follows before it
/// declines (a real chunk nests four deep).
pub const MAX_DEPTH: usize = 16;

/// The tokens of a chunk that carries tokens and nothing else, or `None`
/// when the full parse must decide (see the module documentation).
pub fn token_only(data: &[u8]) -> Option<Tokens> {
    let mut scan = Scan { s: data, i: 0 };
    let mut tokens = Tokens::NONE;
    let mut seen = Seen::default();
    scan.object(|scan, key| match key {
        b"choices" => {
            seen.once(0)?;
            tokens = scan.choices()?;
            Some(())
        }
        b"usage" => seen.once(1).and_then(|()| scan.null()),
        b"error" => seen.once(2).and_then(|()| scan.null()),
        b"object" => {
            seen.once(3)?;
            match scan.text_or_null()? {
                Some(b"error") => None,
                _ => Some(()),
            }
        }
        b"message" => seen.once(4).and_then(|()| scan.text_or_null().map(drop)),
        _ => scan.skip(1),
    })?;
    scan.ws();
    (scan.i == data.len()).then_some(tokens)
}

/// The members already read of one object (serde refuses a repeated one).
#[derive(Default)]
struct Seen(u8);

impl Seen {
    /// Marks member `bit`; `None` when it was already there.
    fn once(&mut self, bit: u8) -> Option<()> {
        let mask = 1 << bit;
        let fresh = self.0 & mask == 0;
        self.0 |= mask;
        fresh.then_some(())
    }
}

/// A cursor over the chunk's bytes; every method returns `None` to decline.
struct Scan<'a> {
    s: &'a [u8],
    i: usize,
}

impl<'a> Scan<'a> {
    /// Skips JSON whitespace.
    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    /// The next byte after whitespace, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    /// Consumes `b` after whitespace.
    fn eat(&mut self, b: u8) -> Option<()> {
        (self.peek()? == b).then(|| self.i += 1)
    }

    /// Consumes the literal `word` (`null`, `true`, `false`).
    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.ws();
        let end = self.i + word.len();
        (self.s.get(self.i..end)? == word).then(|| self.i = end)
    }

    /// Consumes `null`.
    fn null(&mut self) -> Option<()> {
        self.literal(b"null")
    }

    /// Consumes a string; its raw bytes between the quotes and whether it
    /// held an escape. Declines on `\u`, on control characters and on
    /// bytes that are not UTF-8 (checked only when a byte is not ASCII:
    /// outside strings the grammar admits ASCII alone).
    fn string(&mut self) -> Option<(&'a [u8], bool)> {
        self.eat(b'"')?;
        let start = self.i;
        let (mut escaped, mut ascii) = (false, true);
        loop {
            let b = *self.s.get(self.i)?;
            self.i += 1;
            match b {
                b'"' => break,
                b'\\' => {
                    match self.s.get(self.i)? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                        _ => return None,
                    }
                    escaped = true;
                    self.i += 1;
                }
                0..0x20 => return None,
                0x80.. => ascii = false,
                _ => {}
            }
        }
        let raw = &self.s[start..self.i - 1];
        if !ascii {
            std::str::from_utf8(raw).ok()?;
        }
        Some((raw, escaped))
    }

    /// A string member's raw text (`None` inside for `null`); declines on
    /// any other value and on an escaped string.
    fn text_or_null(&mut self) -> Option<Option<&'a [u8]>> {
        if self.peek()? == b'n' {
            return self.null().map(|()| None);
        }
        match self.string()? {
            (raw, false) => Some(Some(raw)),
            (_, true) => None,
        }
    }

    /// Whether a string-or-null member holds text (any escape is text).
    fn non_empty(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            return self.null().map(|()| false);
        }
        self.string().map(|(raw, _)| !raw.is_empty())
    }

    /// Walks an object, calling `member` with each unescaped key after its
    /// colon; `member` consumes the value.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &[u8]) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            let (key, escaped) = self.string()?;
            if escaped {
                return None;
            }
            self.eat(b':')?;
            member(self, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Skips any JSON value nested at `depth`.
    fn skip(&mut self, depth: usize) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|scan, _| scan.skip(depth + 1)),
            b'[' => self.array(|scan| scan.skip(depth + 1)),
            b'n' => self.null(),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            _ => self.number(),
        }
    }

    /// Walks an array, calling `element` for each element.
    fn array(&mut self, mut element: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(());
        }
        loop {
            element(self)?;
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// Consumes a number as JSON writes it: `-? (0 | [1-9][0-9]*)
    /// (. [0-9]+)? ([eE] [+-]? [0-9]+)?`.
    fn number(&mut self) -> Option<()> {
        self.ws();
        if self.s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match self.s.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => self.digits(),
            _ => return None,
        }
        if self.s.get(self.i) == Some(&b'.') {
            self.i += 1;
            self.some_digits()?;
        }
        if let Some(b'e' | b'E') = self.s.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.s.get(self.i) {
                self.i += 1;
            }
            self.some_digits()?;
        }
        Some(())
    }

    fn digits(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
    }

    /// At least one digit.
    fn some_digits(&mut self) -> Option<()> {
        let start = self.i;
        self.digits();
        (self.i > start).then_some(())
    }

    /// `choices`: `null`, or an array of at most one choice object.
    fn choices(&mut self) -> Option<Tokens> {
        if self.peek()? == b'n' {
            return self.null().map(|()| Tokens::NONE);
        }
        let mut tokens = Tokens::NONE;
        let mut count = 0;
        self.array(|scan| {
            count += 1;
            if count > 1 {
                return None;
            }
            tokens = scan.choice()?;
            Some(())
        })?;
        Some(tokens)
    }

    /// One choice object: `delta`, `text`, a null `finish_reason`.
    fn choice(&mut self) -> Option<Tokens> {
        let mut tokens = Tokens::NONE;
        let mut seen = Seen::default();
        self.object(|scan, key| match key {
            b"delta" => {
                seen.once(0)?;
                tokens = tokens.or(scan.delta()?);
                Some(())
            }
            b"text" => {
                seen.once(1)?;
                tokens.answer |= scan.non_empty()?;
                Some(())
            }
            b"finish_reason" => seen.once(2).and_then(|()| scan.null()),
            _ => scan.skip(3),
        })?;
        Some(tokens)
    }

    /// A choice's `delta`: `null`, or an object with `content`,
    /// `reasoning`, `reasoning_content`.
    fn delta(&mut self) -> Option<Tokens> {
        if self.peek()? == b'n' {
            return self.null().map(|()| Tokens::NONE);
        }
        let mut tokens = Tokens::NONE;
        let mut seen = Seen::default();
        self.object(|scan, key| {
            let (bit, answer) = match key {
                b"content" => (0, true),
                b"reasoning" => (1, false),
                b"reasoning_content" => (2, false),
                _ => return scan.skip(4),
            };
            seen.once(bit)?;
            let text = scan.non_empty()?;
            if answer {
                tokens.answer |= text;
            } else {
                tokens.reasoning |= text;
            }
            Some(())
        })?;
        Some(tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exchange::chat::parse;
    use crate::exchange::chunk::Chunk;
    use proptest::prelude::*;

    fn scan(s: &str) -> Option<Tokens> {
        token_only(s.as_bytes())
    }

    const BOTH: Tokens = Tokens {
        reasoning: true,
        answer: true,
    };

    #[test]
    fn the_token_chunks_servers_send_are_read_without_a_full_parse() {
        // The sim's chat and completions shapes; vLLM's with logprobs; a
        // role chunk; reasoning in either field; llama.cpp's spacing.
        let chat = r#"{"id":"chatcmpl-7","object":"chat.completion.chunk","created":0,"model":"sim","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}"#;
        assert_eq!(scan(chat), Some(Tokens::ANSWER));
        let completions = r#"{"id":"cmpl-7","object":"text_completion","created":0,"model":"sim","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null}]}"#;
        assert_eq!(scan(completions), Some(Tokens::ANSWER));
        let vllm = r#"{"id":"c","object":"chat.completion.chunk","created":1718000000,"model":"m","choices":[{"index":0,"delta":{"content":"\n\"x\""},"logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}"#;
        assert_eq!(scan(vllm), Some(Tokens::ANSWER));
        let role = r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}"#;
        assert_eq!(scan(role), Some(Tokens::NONE));
        let think = r#"{"choices":[{"delta":{"reasoning_content":"hm","content":null}}]}"#;
        assert_eq!(scan(think), Some(Tokens::REASONING));
        let both = r#"{"choices":[{"delta":{"reasoning":"so","content":"Yes"}}]}"#;
        assert_eq!(scan(both), Some(BOTH));
        let spaced = "{ \"choices\" : [ { \"delta\" : { \"content\" : \"é\" } } ] }\n";
        assert_eq!(scan(spaced), Some(Tokens::ANSWER));
        assert_eq!(
            scan(r#"{"choices":[],"usage":null,"error":null}"#),
            Some(Tokens::NONE)
        );
    }

    #[test]
    fn anything_but_a_token_goes_to_the_full_parse() {
        for declined in [
            r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
            r#"{"error":{"message":"overloaded"}}"#,
            r#"{"object":"error","message":"out of memory"}"#,
            r#"{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}"#,
            r#"{"choices":[{"delta":{"content":"\u00e9"}}]}"#,
            r#"{"choices":[{"delta":{"content":"x","content":"y"}}]}"#,
            r#"{"choi\nces":[]}"#,
            r#"{"choices":[{"delta":{"content":"x"}}],}"#,
            r#"{"choices":[{"delta":["x"]}]}"#,
            r#"[1,2]"#,
            r#"{"choices":[{"delta":{"content":"x"}"#,
            r#"{"choices":[{"delta":{"content":"x"}}]} x"#,
            r#"{"choices":[{"delta":{"content":5}}]}"#,
            r#"{"a":01,"choices":[]}"#,
            r#"{"a":-,"choices":[]}"#,
            "",
        ] {
            assert_eq!(scan(declined), None, "{declined}");
        }
        // Not UTF-8, a raw control character in a string.
        assert_eq!(token_only(b"{\"choices\":[{\"text\":\"\xff\"}]}"), None);
        assert_eq!(token_only(b"{\"choices\":[{\"text\":\"a\x01\"}]}"), None);
        // Nesting past the bound in an ignored member.
        let deep = format!(
            "{{\"x\":{}1{},\"choices\":[]}}",
            "[".repeat(20),
            "]".repeat(20)
        );
        assert_eq!(scan(&deep), None);
    }

    #[test]
    fn field_names_inside_strings_are_only_text() {
        let sly = r#"{"choices":[{"delta":{"content":"\"finish_reason\":\"stop\",\"usage\":{}"},"finish_reason":null}]}"#;
        assert_eq!(scan(sly), Some(Tokens::ANSWER));
        let id = r#"{"id":"\"error\":1","choices":[{"text":"","finish_reason":null}]}"#;
        assert_eq!(scan(id), Some(Tokens::NONE));
    }

    /// Strings a chunk's values are drawn from: plain, empty, escaped,
    /// unicode (raw and `\u`), and ones that spell the fields that matter.
    fn text() -> BoxedStrategy<String> {
        prop_oneof![
            Just(r#""""#.to_string()),
            Just(r#""word ""#.to_string()),
            Just(r#""é""#.to_string()),
            Just(r#""\u00e9""#.to_string()),
            Just(r#""\ud83d\ude00""#.to_string()),
            Just(r#""a\nb\t\"c\\""#.to_string()),
            Just(r#""\"finish_reason\":null""#.to_string()),
            Just(r#""\"usage\":{\"completion_tokens\":3}""#.to_string()),
            Just(r#""error""#.to_string()),
            Just(r#""stop""#.to_string()),
            "[a-z ]{0,6}".prop_map(|s| format!("\"{s}\"")),
        ]
        .boxed()
    }

    /// Any value a member might hold, a string most often.
    fn value() -> BoxedStrategy<String> {
        prop_oneof![
            3 => text(),
            1 => Just("null".to_string()),
            1 => Just("0".to_string()),
            1 => Just("-1.5e3".to_string()),
            1 => Just("true".to_string()),
            1 => Just("{}".to_string()),
            1 => Just("[]".to_string()),
            1 => Just(r#"{"message":"boom","code":1}"#.to_string()),
        ]
        .boxed()
    }

    /// A member `"key":value` with `key` from `keys`, or an unknown one.
    fn member(keys: &'static [&'static str]) -> BoxedStrategy<String> {
        let key = prop_oneof![
            4 => proptest::sample::select(keys).prop_map(str::to_string),
            1 => Just("index".to_string()),
            1 => Just("logprobs".to_string()),
            1 => Just("role".to_string()),
        ];
        (key, value())
            .prop_map(|(k, v)| format!("\"{k}\":{v}"))
            .boxed()
    }

    /// Whitespace between tokens, often none.
    fn ws() -> impl Strategy<Value = &'static str> {
        prop_oneof![4 => Just(""), 1 => Just(" "), 1 => Just("\n"), 1 => Just(" \t\r\n")]
    }

    /// An object of `members` in the given order, `sep` around each.
    fn object(members: Vec<String>, sep: &str) -> String {
        format!("{{{sep}{}{sep}}}", members.join(&format!("{sep},{sep}")))
    }

    /// A text member: a string most often, else null or another value.
    fn text_member(key: &'static str) -> BoxedStrategy<String> {
        let v = prop_oneof![6 => text(), 2 => Just("null".to_string()), 1 => value()];
        v.prop_map(move |v| format!("\"{key}\":{v}")).boxed()
    }

    /// `members` with `extra` (unknown or repeated members) spliced in at
    /// `at`, as an object.
    fn mix(mut members: Vec<String>, extra: Vec<String>, at: usize, sep: &str) -> String {
        for (k, e) in extra.into_iter().enumerate() {
            let i = (at + k) % (members.len() + 1);
            members.insert(i, e);
        }
        object(members, sep)
    }

    fn delta() -> BoxedStrategy<String> {
        let keys = &["content", "reasoning", "reasoning_content"];
        let texts = prop_oneof![
            4 => text_member("content").prop_map(|m| vec![m]),
            1 => text_member("reasoning").prop_map(|m| vec![m]),
            1 => text_member("reasoning_content").prop_map(|m| vec![m]),
            1 => (text_member("reasoning"), text_member("content")).prop_map(|(a, b)| vec![a, b]),
            1 => Just(vec![]),
        ];
        let extra = proptest::collection::vec(member(keys), 0..2);
        prop_oneof![
            6 => (texts, extra, any::<usize>(), ws()).prop_map(|(t, e, at, w)| mix(t, e, at, w)),
            1 => Just("null".to_string()),
            1 => value(),
        ]
        .boxed()
    }

    fn choice() -> BoxedStrategy<String> {
        let keys = &["text", "finish_reason", "delta"];
        let finish = prop_oneof![
            6 => Just("null"), 1 => Just("\"stop\""), 1 => Just("\"length\""), 1 => Just("1")
        ]
        .prop_map(|f| format!("\"finish_reason\":{f}"));
        let body = prop_oneof![
            3 => delta().prop_map(|d| format!("\"delta\":{d}")),
            1 => text_member("text"),
        ];
        let extra = proptest::collection::vec(member(keys), 0..2);
        (
            body,
            proptest::option::of(finish),
            extra,
            any::<usize>(),
            ws(),
        )
            .prop_map(|(b, f, e, at, w)| mix(std::iter::once(b).chain(f).collect(), e, at, w))
            .boxed()
    }

    fn chunk() -> BoxedStrategy<String> {
        let choices = prop_oneof![
            3 => choice().prop_map(|c| vec![c]),
            1 => proptest::collection::vec(choice(), 0..4),
        ];
        let choices = prop_oneof![
            6 => (choices, ws()).prop_map(|(c, w)| format!("\"choices\":[{w}{}{w}]", c.join(","))),
            1 => Just("\"choices\":null".to_string()),
            1 => value().prop_map(|v| format!("\"choices\":{v}")),
        ];
        let usage = prop_oneof![
            Just("null"),
            Just(r#"{"prompt_tokens":3,"completion_tokens":4}"#),
            Just(r#"{"completion_tokens_details":{"reasoning_tokens":2}}"#),
        ]
        .prop_map(|u| format!("\"usage\":{u}"));
        let keys = &[
            "object", "message", "error", "id", "model", "created", "choices",
        ];
        let extra = proptest::collection::vec(prop_oneof![4 => member(keys), 1 => usage], 0..4);
        (proptest::option::of(choices), extra, any::<usize>(), ws())
            .prop_map(|(c, e, at, w)| mix(c.into_iter().collect(), e, at, w))
            .boxed()
    }

    /// The fast path answers exactly what the full parse gives, or declines.
    fn agrees(data: &[u8]) -> Result<bool, TestCaseError> {
        match token_only(data) {
            Some(tokens) => {
                prop_assert_eq!(
                    parse(data),
                    Chunk::tokens(tokens),
                    "{:?}",
                    String::from_utf8_lossy(data)
                );
                Ok(true)
            }
            None => Ok(false),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        /// Generated chat and completions chunks in any member order.
        #[test]
        fn the_fast_path_agrees_with_the_full_parse_or_declines(chunk in chunk()) {
            agrees(chunk.as_bytes())?;
        }

        /// The same chunks cut short, or with a byte overwritten: broken
        /// JSON is never read as a token.
        #[test]
        fn broken_chunks_are_never_tokens(
            chunk in chunk(),
            at in any::<usize>(),
            byte in prop_oneof![Just(b'"'), Just(b','), Just(b'}'), Just(b'\\'), Just(b':'), any::<u8>()],
        ) {
            let bytes = chunk.as_bytes();
            let at = at % (bytes.len() + 1);
            agrees(&bytes[..at])?;
            let mut changed = bytes.to_vec();
            if at < changed.len() {
                changed[at] = byte;
            }
            agrees(&changed)?;
        }
    }

    /// The generator reaches the fast path often: an agreement test whose
    /// chunks were all declined would prove nothing.
    #[test]
    fn the_generated_chunks_often_take_the_fast_path() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let strategy = chunk();
        let (mut taken, mut tokens) = (0, 0);
        for _ in 0..2000 {
            let chunk = strategy.new_tree(&mut runner).unwrap().current();
            if let Some(t) = token_only(chunk.as_bytes()) {
                taken += 1;
                tokens += usize::from(t.any());
            }
        }
        assert!(taken >= 600, "{taken} of 2000 took the fast path");
        assert!(tokens >= 50, "{tokens} of 2000 were read as tokens");
    }
}
