//! A job as a storlab job file (TOML): what `--parse-only` prints, and what [`Job::parse`]
//! reads back to the same job — every setting written as text its reader reads back
//! (model's `SettingText`), whole numbers and switches bare, everything else quoted.

use std::fmt::Write;

use crate::{Job, Settings};

/// A TOML string.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A setting's text as a TOML value: a whole number or a switch bare, else a string.
fn value(text: &str) -> String {
    if text == "true"
        || text == "false"
        || (!text.is_empty() && text.len() < 16 && text.bytes().all(|b| b.is_ascii_digit()))
    {
        text.to_string()
    } else {
        quoted(text)
    }
}

/// A list of paths.
fn paths(p: &[std::path::PathBuf]) -> String {
    let items: Vec<String> = p.iter().map(|t| quoted(&t.display().to_string())).collect();
    format!("[{}]", items.join(", "))
}

/// One `key = value` line per setting given.
fn settings_lines(out: &mut String, s: &Settings) {
    for (k, v) in s.entries() {
        let _ = writeln!(out, "{k} = {}", value(&v));
    }
}

impl Job {
    /// The job as a storlab job file that [`Job::parse`] reads back to the same job.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        if let Some(n) = &self.name {
            let _ = writeln!(out, "name = {}", quoted(n));
        }
        if !self.targets.is_empty() {
            let _ = writeln!(out, "target = {}", paths(&self.targets));
        }
        settings_lines(&mut out, &self.settings);
        for (i, (kind, s)) in self.phases.iter().enumerate() {
            let _ = write!(out, "\n[[phase]]\nkind = {}\n", quoted(kind.name()));
            if let Some(st) = self.streams.get(i) {
                if !st.name.is_empty() {
                    let _ = writeln!(out, "name = {}", quoted(&st.name));
                }
                if !st.set.is_empty() {
                    let _ = writeln!(out, "files = {}", quoted(&st.set));
                }
                if st.together {
                    out += "together = true\n";
                }
                if !st.targets.is_empty() {
                    let _ = writeln!(out, "target = {}", paths(&st.targets));
                }
                if st.fio_names {
                    out += "fio_names = true\n";
                }
                if st.keep_files {
                    out += "keep_files = true\n";
                }
                if st.allow_mounted_write {
                    out += "allow_mounted_write = true\n";
                }
                if st.all_targets {
                    out += "all_targets = true\n";
                }
            }
            settings_lines(&mut out, s);
        }
        for (name, t) in &self.tasks {
            let argv = |a: &[String]| format!("[{}]", a.iter().map(|w| quoted(w)).collect::<Vec<_>>().join(", "));
            let _ = write!(
                out,
                "\n[task.{}]\nstart = {}\nstatus = {}\nstop = {}\n",
                quoted(name),
                argv(&t.start),
                argv(&t.status),
                argv(&t.stop)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_file_reads_back_as_the_same_job() {
        let text = r#"
name = "mixed \"one\""
target = ["/data/a", "/data/b"]
threads = 4
bs = "4k:70,64k:30"
direct = true
rate = "20000iops"
seed = 7

[[phase]]
kind = "write"
fsync = "end"

[[phase]]
kind = "randread"
name = "rr"
runtime = "1h30m"
cpus = "3,0-2"
distribution = "zoned:60/10:40/90"

[task.raid]
start = ["tw_cli", "/c0/u0", "start verify"]
status = ["tw_cli", "/c0/u0", "show"]
stop = ["tw_cli", "/c0/u0", "stop verify"]
"#;
        let job = Job::parse(text, "t.toml").unwrap();
        let written = job.to_toml();
        let back = Job::parse(&written, "back.toml").unwrap();
        assert_eq!(back.name, job.name);
        assert_eq!(back.targets, job.targets);
        assert_eq!(back.settings, job.settings, "{written}");
        assert_eq!(back.phases, job.phases, "{written}");
        assert_eq!(back.streams, job.streams, "{written}");
        assert_eq!(back.tasks, job.tasks, "{written}");
        // Written as people read them.
        assert!(written.contains("bs = \"4KiB:70,64KiB:30\"\n"), "{written}");
        assert!(
            written.contains("threads = 4\n") && written.contains("direct = true\n"),
            "{written}"
        );
    }
}
