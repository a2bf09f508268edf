//! Where each key of a job file is written (its line, from 1), so that a refusal names it as an
//! editor would: `job.toml:6: phase 1 (write), key bz: …`. toml's `Table` forgets where a value
//! came from; its `DeTable` keeps every key's span, and is read once for this index.

use std::collections::HashMap;

use toml::de::{DeTable, DeValue};

/// Lines by key path: `bs`, `phase.0` (an item of a list), `phase.0.bz`, `task.raid.start`.
#[derive(Debug, Default)]
pub struct KeyLines(HashMap<String, usize>);

impl KeyLines {
    /// The index of a job file's text (empty when the text is no TOML: its syntax error names
    /// its own line).
    pub fn of(text: &str) -> KeyLines {
        let mut lines = KeyLines::default();
        if let Ok(doc) = DeTable::parse(text) {
            let at = |offset: usize| storlab_model::source::line_of(text, offset);
            lines.table(doc.get_ref(), "", &at);
        }
        lines
    }

    fn table(&mut self, t: &DeTable, prefix: &str, at: &dyn Fn(usize) -> usize) {
        for (k, v) in t {
            let path = format!("{prefix}{}", k.get_ref());
            self.0.entry(path.clone()).or_insert_with(|| at(k.span().start));
            self.value(v.get_ref(), &path, at);
        }
    }

    fn value(&mut self, v: &DeValue, path: &str, at: &dyn Fn(usize) -> usize) {
        match v {
            DeValue::Table(t) => self.table(t, &format!("{path}."), at),
            DeValue::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let p = format!("{path}.{i}");
                    self.0.insert(p.clone(), at(item.span().start));
                    self.value(item.get_ref(), &p, at);
                }
            }
            _ => {}
        }
    }

    /// The line a key path is written on.
    pub fn line(&self, path: &str) -> Option<usize> {
        self.0.get(path).copied()
    }

    /// Where something is, for a message: `FILE:LINE: what`, or `FILE: what` when the line is
    /// not known.
    pub fn origin(&self, file: &str, path: &str, what: &str) -> String {
        match self.line(path) {
            Some(line) => format!("{file}:{line}: {what}"),
            None => format!("{file}: {what}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_of_tables_lists_and_phase_tables_have_their_lines() {
        let text = "name = \"t\"\nbs = \"4k\"\n\n[[phase]]\nkind = \"write\"\nbz = \"4k\"\n\n[[phase]]\nkind = \"read\"\n\n[task.raid]\nstart = [\"a\"]\n";
        let l = KeyLines::of(text);
        assert_eq!(l.line("bs"), Some(2));
        assert_eq!(l.line("phase.0.bz"), Some(6));
        assert_eq!(l.line("phase.1.kind"), Some(9));
        assert_eq!(l.line("task.raid.start"), Some(12));
        let inline = KeyLines::of("phase = [\n  \"write\",\n  { kind = \"raed\" },\n]\n");
        assert_eq!(inline.line("phase.1"), Some(3));
        assert_eq!(inline.line("phase.1.kind"), Some(3));
        assert_eq!(inline.origin("j.toml", "phase.0", "phase 1"), "j.toml:2: phase 1");
        assert_eq!(inline.origin("j.toml", "nope", "x"), "j.toml: x");
    }
}
