//! A job file's text, or a command line, read into sections of options as fio reads them
//! (fio's init.c `parse_jobs_ini` and `parse_cmd_line`, parse.c `strip_blank_end`):
//!
//! - a line's comment starts at its first `;` or `#`, wherever it is — after a value too
//!   (`direct=1   # O_DIRECT`), and inside one (fio cuts `filename=/a#b` to `/a`);
//! - `[name]` starts a section; `[global]` sections apply to the jobs after them;
//! - `key=value`, or a bare `key`;
//! - `include FILE` reads FILE in place (relative to the including file; no sections in it);
//! - `${VAR}` is the environment's VAR, empty when unset (said in a note, as fio is silent);
//! - `$pagesize`, `$mb_memory` and `$ncpus` are this machine's, and a value holding one of them
//!   and `+ - * /` is computed as `bc` computes it (fio runs bc).
//!
//! On the command line, options before the first `--name` are global (to the command line's
//! jobs and to the job files'), each `--name=` starts a job, and job files are read after the
//! command line's jobs, as fio does.

use std::path::Path;

use crate::WorkloadError;

/// Where an option or a section came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum At {
    /// A job file's line.
    Line {
        /// The file as given.
        file: String,
        /// From 1.
        line: usize,
    },
    /// A command-line argument.
    Arg {
        /// From 1, after `fio`.
        index: usize,
        /// The argument as given.
        text: String,
    },
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            At::Line { file, line } => write!(f, "{file}:{line}"),
            At::Arg { index, text } => write!(f, "argument {index} ({text})"),
        }
    }
}

/// One option as written: its name (not yet resolved to fio's canonical name), its value.
#[derive(Debug, Clone)]
pub struct Opt {
    /// The name as written.
    pub key: String,
    /// The value, None for a bare option.
    pub value: Option<String>,
    /// Where.
    pub at: At,
}

/// A `[section]` and its options, in order.
#[derive(Debug, Clone)]
pub struct Section {
    /// Its name (`global` for global options).
    pub name: String,
    /// Where it starts.
    pub at: At,
    /// Its options.
    pub opts: Vec<Opt>,
}

/// What the machine puts in for fio's reserved words.
#[derive(Debug, Clone)]
pub struct Keywords {
    /// `$pagesize`.
    pub pagesize: u64,
    /// `$mb_memory`.
    pub mb_memory: u64,
    /// `$ncpus`.
    pub ncpus: u64,
}

impl Keywords {
    /// This machine's.
    pub fn here() -> Keywords {
        Keywords {
            // SAFETY: sysconf reads a constant of the system.
            pagesize: unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64,
            mb_memory: storlab_env::memory_bytes() / (1024 * 1024),
            ncpus: std::thread::available_parallelism().map_or(1, |n| n.get() as u64),
        }
    }
}

fn bad(at: &At, msg: impl Into<String>) -> WorkloadError {
    WorkloadError::invalid(at.to_string(), msg)
}

/// What a line means once its comment is cut (fio's `strip_blank_end`: the first `;`, then the
/// first `#`).
pub fn strip_comment(line: &str) -> &str {
    let cut = line.find(';').map_or(line, |i| &line[..i]);
    let cut = cut.find('#').map_or(cut, |i| &cut[..i]);
    cut.trim()
}

/// `${VAR}` from the environment (empty when unset, as fio reads it; `unset` collects the
/// names), then fio's reserved words; a value that held a reserved word and arithmetic is
/// computed as bc would.
pub fn substitute(opt: &str, at: &At, kw: &Keywords, unset: &mut Vec<String>) -> Result<String, WorkloadError> {
    let mut out = String::new();
    let mut rest = opt;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let Some(j) = rest[i..].find('}') else {
            out.push_str(&rest[i..]);
            rest = "";
            break;
        };
        let name = &rest[i + 2..i + j];
        match std::env::var(name) {
            Ok(v) => out.push_str(&v),
            Err(_) => unset.push(format!("${{{name}}} ({at})")),
        }
        rest = &rest[i + j + 1..];
    }
    out.push_str(rest);
    let mut replaced = false;
    for (word, v) in [
        ("$pagesize", kw.pagesize),
        ("$mb_memory", kw.mb_memory),
        ("$ncpus", kw.ncpus),
    ] {
        if out.contains(word) {
            out = out.replace(word, &v.to_string());
            replaced = true;
        }
    }
    if replaced {
        if let Some((key, value)) = out.split_once('=') {
            if value.contains(['+', '-', '*', '/']) && !value.contains('\'') {
                let v = super::value::bc(value.trim()).map_err(|e| bad(at, format!("{key}={value}: {e}")))?;
                out = format!("{key}={v}");
            }
        }
    }
    Ok(out)
}

/// An option line `key=value` or `key` (spaces around `=` allowed, as fio allows them).
fn option(text: &str, at: At) -> Opt {
    match text.split_once('=') {
        Some((k, v)) => Opt {
            key: k.trim().to_string(),
            value: Some(v.trim().to_string()),
            at,
        },
        None => Opt {
            key: text.trim().to_string(),
            value: None,
            at,
        },
    }
}

/// The sections of a job file, with its includes read in place.
pub fn read_file(
    text: &str,
    file: &Path,
    depth: usize,
    kw: &Keywords,
    unset: &mut Vec<String>,
    sections: &mut Vec<Section>,
) -> Result<(), WorkloadError> {
    let name = file.display().to_string();
    if depth > 16 {
        return Err(WorkloadError::invalid(
            &name,
            "includes nested more than 16 deep (does a file include itself?)",
        ));
    }
    for (k, raw) in text.lines().enumerate() {
        let at = At::Line {
            file: name.clone(),
            line: k + 1,
        };
        let t = strip_comment(raw);
        if t.is_empty() {
            continue;
        }
        if let Some(inc) = t.strip_prefix("include ") {
            let inc = substitute(inc.trim(), &at, kw, unset)?;
            let p = Path::new(&inc);
            let p = if p.is_absolute() {
                p.to_path_buf()
            } else {
                file.parent().unwrap_or(Path::new(".")).join(p)
            };
            let text = read_job_text(&p).map_err(|e| bad(&at, format!("include {}: {e}", p.display())))?;
            if sections.is_empty() {
                return Err(bad(
                    &at,
                    "include before any [section]: its options need a section to go to",
                ));
            }
            read_file(&text, &p, depth + 1, kw, unset, sections)?;
            continue;
        }
        if let Some(s) = t.strip_prefix('[') {
            if depth > 0 {
                return Err(bad(
                    &at,
                    format!("'{t}': an included file may not contain [] sections (fio's rule)"),
                ));
            }
            let Some(s) = s.strip_suffix(']') else {
                return Err(bad(&at, format!("'{t}' is not a section header (expected [NAME])")));
            };
            sections.push(Section {
                name: s.trim().to_string(),
                at,
                opts: Vec::new(),
            });
            continue;
        }
        let t = substitute(t, &at, kw, unset)?;
        let Some(sec) = sections.last_mut() else {
            return Err(bad(&at, format!("'{}' comes before any [section]", shorten(&t))));
        };
        sec.opts.push(option(&t, at));
    }
    Ok(())
}

/// fio's own flags (not job options) that take a value.
const FIO_FLAGS_WITH_VALUE: &[&str] = &[
    "output",
    "output-format",
    "section",
    "eta",
    "eta-interval",
    "status-interval",
    "terse-version",
    "debug",
    "alloc-size",
    "max-jobs",
    "trigger-file",
    "trigger-timeout",
    "trigger",
    "trigger-remote",
    "aux-path",
    "latency-log",
    "bandwidth-log",
    "client",
    "server",
    "remote-config",
    "idle-prof",
    "inflate-log",
    "crctest",
    "merge-blktrace-only",
];

/// fio's own flags whose value is optional (`--cmdhelp`, `--cmdhelp=bs`): never the next word.
const FIO_FLAGS_MAYBE_VALUE: &[&str] = &["cmdhelp", "enghelp"];

/// fio's own switches.
const FIO_SWITCHES: &[&str] = &[
    "minimal",
    "parse-only",
    "showcmd",
    "warnings-fatal",
    "eta-newline",
    "readonly",
    "version",
    "help",
    "append-terse",
    "cpuclock-test",
    "daemonize",
];

/// A fio command line read: fio's own flags (`--output-format` …, each with its value), the
/// sections its job options make, and the job files it names, in order.
#[derive(Debug, Default)]
pub struct CommandLine {
    /// fio's flags, as (name, value).
    pub flags: Vec<(String, Option<String>)>,
    /// The global section (options before the first `--name`) and one per `--name`.
    pub sections: Vec<Section>,
    /// Job files.
    pub files: Vec<String>,
}

/// Reads fio's command line (without `fio` itself). A job option's value is `--key=value` or
/// the next argument (`--bs 4k`), as getopt gives it; a switch takes a value only after `=`.
pub fn read_command_line(
    args: &[String],
    kw: &Keywords,
    unset: &mut Vec<String>,
) -> Result<CommandLine, WorkloadError> {
    let mut c = CommandLine {
        sections: vec![Section {
            name: "global".into(),
            at: At::Arg {
                index: 0,
                text: "fio".into(),
            },
            opts: Vec::new(),
        }],
        ..CommandLine::default()
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        let at = At::Arg {
            index: i + 1,
            text: a.clone(),
        };
        i += 1;
        let body = match a
            .strip_prefix("--")
            .or_else(|| a.strip_prefix('-').filter(|b| b.len() > 1))
        {
            Some(b) => b,
            None => {
                c.files.push(a.clone());
                continue;
            }
        };
        let (name, inline) = match body.split_once('=') {
            Some((k, v)) => (k, Some(v.to_string())),
            None => (body, None),
        };
        if FIO_SWITCHES.contains(&name) || FIO_FLAGS_MAYBE_VALUE.contains(&name) {
            c.flags.push((name.to_string(), inline));
            continue;
        }
        if FIO_FLAGS_WITH_VALUE.contains(&name) {
            let v = match inline {
                Some(v) => v,
                None if i < args.len() => {
                    i += 1;
                    args[i - 1].clone()
                }
                None => return Err(bad(&at, format!("--{name} needs a value"))),
            };
            c.flags.push((name.to_string(), Some(v)));
            continue;
        }
        let takes_value = super::options::find(name).is_some_and(|o| o.kind != super::options::Kind::Switch);
        let value = match inline {
            Some(v) => Some(v),
            None if takes_value && i < args.len() && !args[i].starts_with('-') => {
                i += 1;
                Some(args[i - 1].clone())
            }
            None => None,
        };
        let text = match &value {
            Some(v) => format!("{name}={v}"),
            None => name.to_string(),
        };
        let text = substitute(&text, &at, kw, unset)?;
        c.add_option(option(&text, at.clone()), at);
    }
    Ok(c)
}

impl CommandLine {
    /// A job option joins the current section; `--name` opens a new one, as in a job file.
    fn add_option(&mut self, o: Opt, at: At) {
        if o.key == "name" {
            self.sections.push(Section {
                name: o.value.clone().unwrap_or_default(),
                at,
                opts: vec![o],
            });
        } else {
            self.sections.last_mut().expect("the global section").opts.push(o);
        }
    }
}

/// A line as an error quotes it: at most 80 characters.
fn shorten(t: &str) -> String {
    match t.char_indices().nth(80) {
        Some((i, _)) => format!("{}…", &t[..i]),
        None => t.to_string(),
    }
}

/// The largest job file storlab reads (fio's are a few KiB): a larger one is not a job file.
const MAX_JOB_FILE: u64 = 16 << 20;

/// A job file's text: a regular file (or a pipe) of at most 16 MiB, so that a device or a data
/// file given where a job file belongs is named as such and never read through.
pub fn read_job_text(path: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::FileTypeExt;
    let m = std::fs::metadata(path)?;
    let t = m.file_type();
    if t.is_block_device() || t.is_char_device() || t.is_dir() {
        let what = if t.is_dir() { "a directory" } else { "a device" };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("is {what}, not a job file (a device to run on goes in filename=)"),
        ));
    }
    if t.is_file() && m.len() > MAX_JOB_FILE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!(
                "is {} bytes, not a job file (fio's are a few KiB; storlab reads at most 16 MiB)",
                m.len()
            ),
        ));
    }
    let bytes = std::fs::read(path)?;
    storlab_model::source::utf8(&bytes).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kw() -> Keywords {
        Keywords {
            pagesize: 4096,
            mb_memory: 24105,
            ncpus: 2,
        }
    }

    #[test]
    fn comments_end_a_line_wherever_they_start() {
        assert_eq!(strip_comment("direct=1    #use O_DIRECT"), "direct=1");
        assert_eq!(strip_comment("numjobs=4\t; 4 threads"), "numjobs=4");
        assert_eq!(strip_comment("filename=/tmp/a#b"), "filename=/tmp/a");
        assert_eq!(strip_comment("  ; all comment"), "");
    }

    #[test]
    fn keywords_and_bc_as_fio() {
        let at = At::Line {
            file: "t".into(),
            line: 1,
        };
        let mut unset = Vec::new();
        assert_eq!(
            substitute("size=8*$mb_memory", &at, &kw(), &mut unset).unwrap(),
            "size=192840"
        );
        assert_eq!(
            substitute("numjobs=$ncpus", &at, &kw(), &mut unset).unwrap(),
            "numjobs=2"
        );
        assert_eq!(
            substitute("directory=${STORLAB_FIO_SURELY_UNSET}/x", &at, &kw(), &mut unset).unwrap(),
            "directory=/x"
        );
        assert_eq!(unset, vec!["${STORLAB_FIO_SURELY_UNSET} (t:1)"]);
    }

    #[test]
    fn a_command_line_makes_global_and_named_sections() {
        let args: Vec<String> =
            "--rw=randread --bs 4k --name=a --iodepth=8 --norandommap job.fio --name=b --output-format=json --size=1m"
                .split(' ')
                .map(String::from)
                .collect();
        let c = read_command_line(&args, &kw(), &mut Vec::new()).unwrap();
        assert_eq!(c.files, vec!["job.fio"]);
        assert_eq!(c.flags, vec![("output-format".into(), Some("json".into()))]);
        let names: Vec<&str> = c.sections.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["global", "a", "b"]);
        let g: Vec<(String, Option<String>)> = c.sections[0]
            .opts
            .iter()
            .map(|o| (o.key.clone(), o.value.clone()))
            .collect();
        assert_eq!(
            g,
            vec![("rw".into(), Some("randread".into())), ("bs".into(), Some("4k".into()))]
        );
        assert_eq!(c.sections[1].opts.len(), 3);
        assert_eq!(c.sections[1].opts[2].key, "norandommap");
        assert_eq!(c.sections[1].opts[2].value, None);
        assert_eq!(c.sections[2].opts[1].at.to_string(), "argument 10 (--size=1m)");
    }
}
