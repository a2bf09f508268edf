//! Where something is in a file's text, for messages that name its line.

/// The line (from 1) of byte `at` of `text` (past the end: the last line).
pub fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

#[cfg(test)]
mod tests {
    #[test]
    fn lines_count_from_one() {
        let t = "a = 1\nb = 2\n";
        assert_eq!(super::line_of(t, 0), 1);
        assert_eq!(super::line_of(t, 6), 2);
        assert_eq!(super::line_of(t, 999), 3);
    }
}
