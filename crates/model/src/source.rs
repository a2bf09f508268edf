//! Where something is in a file's text, for messages that name its line.

/// The line (from 1) of byte `at` of `text` (past the end: the last line).
pub fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// A file's bytes as text, or where they stop being UTF-8: "line 3, byte 17 (byte 95 of the
/// file): not UTF-8 (0xff); save it as UTF-8". Every reader of a user's file takes its text
/// through this (or [`read_text`]), so that no message says only "stream did not contain valid
/// UTF-8".
pub fn utf8(bytes: &[u8]) -> Result<String, String> {
    match std::str::from_utf8(bytes) {
        Ok(t) => Ok(t.to_string()),
        Err(e) => {
            let at = e.valid_up_to();
            let before = &bytes[..at];
            let line = before.iter().filter(|b| **b == b'\n').count() + 1;
            let line_start = before.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
            Err(format!(
                "line {line}, byte {} (byte {} of the file): not UTF-8 (0x{:02x}); save the file as UTF-8",
                at - line_start + 1,
                at + 1,
                bytes[at]
            ))
        }
    }
}

/// A file read as UTF-8 text; the error names the file and, for bytes that are not UTF-8,
/// where they are (see [`utf8`]).
pub fn read_text(path: &std::path::Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    utf8(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn bytes_that_are_not_utf8_are_named_by_line_and_byte() {
        assert_eq!(super::utf8(b"a\nb").unwrap(), "a\nb");
        let e = super::utf8(b"ok = 1\nname = \"x\xffy\"\n").unwrap_err();
        assert_eq!(
            e,
            "line 2, byte 10 (byte 17 of the file): not UTF-8 (0xff); save the file as UTF-8"
        );
    }

    #[test]
    fn lines_count_from_one() {
        let t = "a = 1\nb = 2\n";
        assert_eq!(super::line_of(t, 0), 1);
        assert_eq!(super::line_of(t, 6), 2);
        assert_eq!(super::line_of(t, 999), 3);
    }
}
