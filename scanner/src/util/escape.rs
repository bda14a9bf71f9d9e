//! Strings from the traced program (NVTX texts, kernel names, paths) made safe to print on a
//! terminal or in a one-line message: they are data, never control sequences.

use std::fmt::Write;

/// `s` safe to print on a terminal: control characters (C0 but the line feed, DEL, C1) and the
/// Unicode controls that reorder or hide text (bidirectional overrides and isolates, zero-width
/// joiners) written out as `\x1b` / `\u{202e}`. Names and messages come from the traced program (NVTX
/// texts, kernel names, paths): they are data, and an escape sequence in one must not drive the
/// reader's terminal. A backslash stays as it is (the output is for reading, not for parsing back).
pub fn escape(s: &str) -> std::borrow::Cow<'_, str> {
    escape_with(s, false)
}

/// `escape`, the line feed too: for a table cell or a name printed within a line, where a line feed
/// from the program would forge lines of the report.
pub fn escape_cell(s: &str) -> std::borrow::Cow<'_, str> {
    escape_with(s, true)
}

fn escape_with(s: &str, newline: bool) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| {
        (c.is_control() && (newline || c != '\n'))
            || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
    };
    if !s.chars().any(bad) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if !bad(c) {
            out.push(c);
        } else if (c as u32) < 0x100 {
            let _ = write!(out, "\\x{:02x}", c as u32);
        } else {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
    std::borrow::Cow::Owned(out)
}
