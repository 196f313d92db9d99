//! One escaping function per output kind, so a string taken from a trace
//! (an id, a class name, a reason, a label, an error text) reaches a person
//! or a program as text and never as a command.
//!
//! A trace is written by whoever ran the load test, or by a server's echo, so
//! every string in it is hostile until shown otherwise:
//!
//! - [`terminal`]: a terminal obeys control characters (ESC sequences retitle
//!   or clear it, BEL rings, NUL and DEL hide text) and bidi controls
//!   (U+202E) reorder what is read; they are shown as `\u{1b}` instead.
//! - [`terminal_lines`]: the same for a whole message whose line breaks are
//!   our own (the one line on standard error; a last line of defence).
//! - [`markdown`] and [`markdown_code`]: a pull-request comment renders
//!   emphasis, tables and raw HTML; a name must not close a heading, forge a
//!   table row or inject `<img>`.
//! - [`csv_cell`]: a spreadsheet runs a cell starting with `=`, `+`, `-`, `@`,
//!   TAB or CR as a formula (OWASP's CSV-injection rule); such a cell gets a
//!   leading `'`.
//! - [`html`]: the report page and its SVG; the five HTML specials.
//!
//! Each leaves ordinary text byte for byte as it was, so the output of an
//! ordinary trace does not change.

use std::borrow::Cow;

/// Whether a terminal would act on `c` rather than show it: C0 (NUL to US,
/// including ESC and BEL), DEL, C1 (U+0080–U+009F), the bidi controls and
/// marks, and the Unicode line and paragraph separators.
pub fn is_unsafe_for_terminal(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}'
                | '\u{200E}'
                | '\u{200F}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// Pushes `c` as `\u{hex}`, the way Rust writes it.
fn push_escaped(out: &mut String, c: char) {
    out.push_str(&format!("\\u{{{:x}}}", c as u32));
}

/// `s` with every character a terminal would act on shown as `\u{hex}`
/// (line breaks and tabs too: a trace string must not start a line of its
/// own). Borrowed when nothing needed escaping.
pub fn terminal(s: &str) -> Cow<'_, str> {
    escape_where(s, is_unsafe_for_terminal)
}

/// As [`terminal`], but keeps line feeds and tabs: for a message whose
/// layout is our own, with trace strings inside that were already escaped
/// by [`terminal`] (this catches any that were not).
pub fn terminal_lines(s: &str) -> Cow<'_, str> {
    escape_where(s, |c| c != '\n' && c != '\t' && is_unsafe_for_terminal(c))
}

fn escape_where(s: &str, unsafe_char: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !s.chars().any(&unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if unsafe_char(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` as literal Markdown text (GitHub-flavoured, in a table cell or in
/// running text): the characters of emphasis, tables, links, code, headings
/// and raw HTML are backslash-escaped, and control characters are shown as
/// by [`terminal`] (a line break would end the table row).
pub fn markdown(s: &str) -> Cow<'_, str> {
    const SPECIAL: &[char] = &[
        '\\', '|', '*', '_', '`', '[', ']', '<', '>', '#', '&', '~', '!',
    ];
    let needs = |c: char| SPECIAL.contains(&c) || is_unsafe_for_terminal(c);
    if !s.chars().any(needs) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe_for_terminal(c) {
            push_escaped(&mut out, c);
        } else {
            if SPECIAL.contains(&c) {
                out.push('\\');
            }
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `s` as a whole Markdown code span inside a table cell: fenced by one
/// backtick more than its longest run of backticks (padded with a space
/// when it starts or ends with one), `|` escaped as the table syntax
/// requires, control characters shown as by [`terminal`]. Inside a code
/// span nothing else is markup, so `<img>` stays text.
pub fn markdown_code(s: &str) -> String {
    let body = terminal(s).replace('|', "\\|");
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        run = if c == '`' { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    let fence = "`".repeat(longest + 1);
    let pad = if body.starts_with('`') || body.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// A CSV cell a spreadsheet will show rather than run: a cell starting with
/// `=`, `+`, `-`, `@`, TAB or CR gets a leading `'` (OWASP). For strings from
/// the trace only; numbers the tool wrote (a negative one starts with `-`)
/// are not passed through it.
pub fn csv_cell(s: &str) -> Cow<'_, str> {
    match s.chars().next() {
        Some('=' | '+' | '-' | '@' | '\t' | '\r') => Cow::Owned(format!("'{s}")),
        _ => Cow::Borrowed(s),
    }
}

/// Escapes the five HTML specials (`&`, `<`, `>`, `"`, `'`), for text and
/// attribute values of the report page and its SVG.
pub fn html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_shows_controls_and_bidi_as_escapes() {
        assert_eq!(
            terminal("a\u{1b}]0;t\u{7}\u{1b}[2J\0\u{202E}z"),
            "a\\u{1b}]0;t\\u{7}\\u{1b}[2J\\u{0}\\u{202e}z"
        );
        assert_eq!(terminal("x\ny\u{7f}\u{85}"), "x\\u{a}y\\u{7f}\\u{85}");
        assert!(matches!(terminal("plain é ✓"), Cow::Borrowed("plain é ✓")));
        assert_eq!(terminal_lines("a\n\tb\u{1b}"), "a\n\tb\\u{1b}");
    }

    #[test]
    fn markdown_escapes_table_emphasis_and_html() {
        assert_eq!(
            markdown("x** | 1 | <img src=x>"),
            "x\\*\\* \\| 1 \\| \\<img src=x\\>"
        );
        assert_eq!(markdown("a_b\nc"), "a\\_b\\u{a}c");
        assert!(matches!(markdown("chat-1 (b)"), Cow::Borrowed(_)));
    }

    #[test]
    fn markdown_code_fences_past_backticks() {
        assert_eq!(markdown_code("t.json"), "`t.json`");
        assert_eq!(markdown_code("a|b"), "`a\\|b`");
        assert_eq!(markdown_code("a``b"), "```a``b```");
        assert_eq!(markdown_code("`x"), "`` `x ``");
    }

    #[test]
    fn csv_cells_that_would_run_get_a_quote() {
        for s in [
            "=HYPERLINK(\"http://x\")",
            "+cmd",
            "@SUM(A1:A9)",
            "-1+1",
            "\tx",
            "\rx",
        ] {
            assert_eq!(csv_cell(s), format!("'{s}"));
        }
        assert_eq!(csv_cell("chat"), "chat");
        assert_eq!(csv_cell(""), "");
    }

    #[test]
    fn html_covers_the_five_specials() {
        assert_eq!(
            html("<script>a&b\"c'd</script>"),
            "&lt;script&gt;a&amp;b&quot;c&#39;d&lt;/script&gt;"
        );
    }
}
