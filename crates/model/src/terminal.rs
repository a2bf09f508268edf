//! Text as a terminal shows it: a path, a name or a tag may hold control characters (an escape
//! sequence retitles a window, moves the cursor or hides what follows), so every table and
//! message that prints them shows those characters escaped, as `ls` and `git` do, and prints
//! the rest as it is.

use std::borrow::Cow;

/// `text` with each control character written as an escape (`\e`, `\a`, `\n`, `\x7f`, `\u{9b}`);
/// text without any is returned as it is.
pub fn escaped(text: &str) -> Cow<'_, str> {
    escape_except(text, &[])
}

/// As [`escaped`], keeping the characters of `keep` (a message's own line breaks).
pub fn escape_except<'a>(text: &'a str, keep: &[char]) -> Cow<'a, str> {
    if !text.chars().any(|c| c.is_control() && !keep.contains(&c)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !c.is_control() || keep.contains(&c) {
            out.push(c);
            continue;
        }
        match c {
            '\x1b' => out.push_str("\\e"),
            '\x07' => out.push_str("\\a"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x08' => out.push_str("\\b"),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_written_as_escapes() {
        assert!(matches!(escaped("/srv/data 1"), Cow::Borrowed(_)));
        assert_eq!(escaped("/tmp/\x1b]0;owned\x07x"), "/tmp/\\e]0;owned\\ax");
        assert_eq!(escaped("a\nb\u{9b}c\x7f"), "a\\nb\\u{9b}c\\x7f");
        assert_eq!(escape_except("line 1\nline\x1b2", &['\n']), "line 1\nline\\e2");
    }
}
