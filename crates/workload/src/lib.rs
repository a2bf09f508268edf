//! What to run: job files (TOML), command-line flags, fio job files and command lines, and IOzone
//! command lines, merged and validated into an engine plan. Nonsense is refused here with a message
//! that names the key or flag, what was wrong and what would be right, before a single byte is
//! written.
//!
//! Precedence, lowest first: built-in defaults, the job file's top-level keys, a phase's own
//! keys, command-line flags (flags override the file, as `storlab run` documents).
//!
//! - settings.rs: the job's settings as files and flags give them (their one declaration is
//!   crates/model's `settings!` table); [`Job::parse`] reads a job file in named stages;
//! - write.rs: a job written back as a job file (`--parse-only`), read back to the same job;
//! - flags.rs: a job's command-line flags, declared once for every command that runs a job;
//! - validate/: a job into a plan — defaults, file sets (sets.rs), the rules every phase is held
//!   to (rules.rs, one table), the targets probed on the machine (targets.rs);
//! - fio/: fio's job files and command lines — text.rs reads them as fio does, value.rs reads
//!   fio's values, options.rs lists fio's options, convert/ turns a job into settings through
//!   one table with one owner per option (convert/table.rs), cli.rs is `storlab fio`;
//! - iozone/: IOzone's command line, its tests (tests_table.rs) and its cells (cells.rs);
//! - sweep.rs: `storlab sweep`'s points; presets.rs: the jobs storlab ships (`storlab demo`).
#![deny(missing_docs)]

pub mod fio;
pub mod flags;
pub mod iozone;
mod lines;
pub mod presets;
mod settings;
pub mod sweep;
mod validate;
mod write;

pub use settings::{apply, apply_str, PhaseSettings, Setting, Settings, JOB_KEYS, SETTINGS};
pub use validate::{cache_may_flatter, resolve, Plan, ResolveOptions, TargetKind};

use lines::KeyLines;
use storlab_model::plan::PhaseKind;

/// What was wrong with a job.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WorkloadError {
    /// The job file could not be read.
    #[error("cannot read the job file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The reason.
        source: std::io::Error,
    },
    /// The job file is not valid TOML.
    #[error("{path}:{line}:{column}: TOML syntax error: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
        /// What the parser said.
        message: String,
    },
    /// A key or flag has an invalid value, or the job is inconsistent.
    #[error("{origin}: {message}")]
    Invalid {
        /// Where: "--bs", "job.toml: phase 2 (read), key bs".
        origin: String,
        /// What is wrong and what would be right.
        message: String,
    },
    /// A target cannot be used.
    #[error("target {path}: {message}")]
    Target {
        /// The target.
        path: String,
        /// What is wrong and what would be right.
        message: String,
    },
}

impl WorkloadError {
    /// A refusal: what was wrong (`message`) and where (`origin`: a file, a flag, a line).
    pub fn invalid(origin: impl Into<String>, message: impl Into<String>) -> WorkloadError {
        WorkloadError::Invalid {
            origin: origin.into(),
            message: message.into(),
        }
    }
}

/// A job: a name, targets, job-wide settings and an ordered list of phases with their own.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Job {
    /// The job's name.
    pub name: Option<String>,
    /// Directories, files, or (with permission) block devices.
    pub targets: Vec<std::path::PathBuf>,
    /// Job-wide settings.
    pub settings: Settings,
    /// Phases, in order, each with its own settings.
    pub phases: Vec<(PhaseKind, Settings)>,
    /// Where the job came from (a file name, or "command line").
    pub origin: String,
    /// How the job was read, when it came from another tool's job file (a fio option taken
    /// differently, options ignored): kept with the run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Where and with what each phase runs when the phases are not simply one after another on
    /// the job's files (a fio job file's jobs): one entry per phase, or none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<Stream>,
    /// Background tasks given as commands (`[task.NAME]` tables), for `storlab impact --task
    /// cmd:NAME`.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub tasks: std::collections::BTreeMap<String, CommandTask>,
    /// A target file that does not exist is created (`--create-target`, `create_target =
    /// true`; fio's and IOzone's command lines always, as those tools do); without it such a
    /// target is refused — a mistyped path, or a mount point not mounted.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub create_target: bool,
    /// Whose rules decide which devices may be used (targets.rs): storlab's (a device is
    /// written, and a character device used, only when `--allow-device` names it) or fio's
    /// (`storlab fio`: any device read, an unmounted one written, as fio does). Both refuse to
    /// write a device in use — mounted, held, a member, swap — unless `allow_mounted_write`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fio_device_rules: bool,
    /// Write to a device (or a loop device's backing file) even while it is in use
    /// (`--allow-mounted-write`; fio's allow_mounted_write=1 on a job is its stream's).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_mounted_write: bool,
}

/// Where and when one phase of a job runs, for jobs whose phases are not simply one after the
/// other on the same files (fio's jobs: each on files of its own, some at the same time).
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Stream {
    /// Its name (the fio job's).
    pub name: String,
    /// It runs at the same time as the phase before it, on workers of its own.
    pub together: bool,
    /// Its file set: the phases of one set share their files, one per worker; each set has
    /// files of its own.
    pub set: String,
    /// Its own targets (the job's when empty).
    pub targets: Vec<std::path::PathBuf>,
    /// Its files in a directory are named as fio names them, `NAME.CLONE.FILE` (the stream's
    /// name, the worker, the worker's file), not storlab's `storlab-PID-W.dat`: a later job of
    /// the same name finds them, as under fio (job file: `fio_names = true`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub fio_names: bool,
    /// The files it makes stay when the run ends, as fio leaves its files unless `unlink=1`
    /// (job file: `keep_files = true`); storlab's own are removed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub keep_files: bool,
    /// fio's allow_mounted_write=1: this stream may write a device that is in use (job file:
    /// `allow_mounted_write = true`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub allow_mounted_write: bool,
    /// Each of its workers works on all its targets as its several files, served as
    /// `file_service` says and `size` shared among them (fio's `filename=a:b` and `opendir`),
    /// rather than the targets taking the workers in turn (job file: `all_targets = true`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub all_targets: bool,
}

/// A background task as three argument vectors (never a shell string): start it, print its
/// status (`running [PERCENT]` or `done [DETAIL]`), stop it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct CommandTask {
    /// Starts the task (returns once it runs).
    pub start: Vec<String>,
    /// Prints `running [PERCENT]` or `done [DETAIL]`.
    pub status: Vec<String>,
    /// Stops it.
    pub stop: Vec<String>,
}

fn phase_kind(name: &str, origin: &str) -> Result<PhaseKind, WorkloadError> {
    PhaseKind::from_name(name).ok_or_else(|| {
        let names: Vec<&str> = PhaseKind::ALL.iter().map(|k| k.name()).collect();
        WorkloadError::invalid(origin, storlab_model::names::unknown("phase", name, &names))
    })
}

/// A job file's text as a TOML table; a syntax error names its line and column.
fn toml_table(text: &str, path: &str) -> Result<toml::Table, WorkloadError> {
    text.parse().map_err(|e: toml::de::Error| {
        let (line, column) = e
            .span()
            .map(|s| {
                let before = &text[..s.start.min(text.len())];
                (
                    before.matches('\n').count() + 1,
                    before.len() - before.rfind('\n').map(|i| i + 1).unwrap_or(0) + 1,
                )
            })
            .unwrap_or((0, 0));
        WorkloadError::Syntax {
            path: path.to_string(),
            line,
            column,
            message: e.message().to_string(),
        }
    })
}

/// A path, or a list of paths.
fn path_list(value: &toml::Value, origin: &str) -> Result<Vec<std::path::PathBuf>, WorkloadError> {
    match value {
        toml::Value::String(s) => Ok(vec![s.into()]),
        toml::Value::Array(a) => a
            .iter()
            .map(|v| {
                v.as_str()
                    .map(Into::into)
                    .ok_or_else(|| WorkloadError::invalid(origin, "expected a list of paths"))
            })
            .collect(),
        _ => Err(WorkloadError::invalid(origin, "expected a path or a list of paths")),
    }
}

/// `phase = ["write", "read"]` or `[[phase]]` tables, added to the job in order.
fn read_phases(
    value: &toml::Value,
    path: &str,
    lines: &KeyLines,
    origin: &str,
    job: &mut Job,
) -> Result<(), WorkloadError> {
    let toml::Value::Array(items) = value else {
        return Err(WorkloadError::invalid(
            origin,
            "expected a list: phase = [\"write\", \"read\"] or [[phase]] tables",
        ));
    };
    for (i, item) in items.iter().enumerate() {
        let porigin = lines.origin(path, &format!("phase.{i}"), &format!("phase {}", i + 1));
        match item {
            toml::Value::String(name) => job.phases.push((phase_kind(name, &porigin)?, Settings::default())),
            toml::Value::Table(t) => {
                let at = PhaseAt { path, lines, index: i };
                let (kind, settings, stream) = read_phase_table(t, &at)?;
                if let Some(stream) = stream {
                    job.streams.resize(job.phases.len(), Stream::default());
                    job.streams.push(stream);
                }
                job.phases.push((kind, settings));
            }
            _ => {
                return Err(WorkloadError::invalid(
                    &porigin,
                    "expected a phase name or a table with kind = ...",
                ))
            }
        }
    }
    Ok(())
}

/// Where a phase table is in its job file, for its messages.
struct PhaseAt<'a> {
    path: &'a str,
    lines: &'a KeyLines,
    index: usize,
}

impl PhaseAt<'_> {
    /// `FILE:LINE: phase N` at the line of `key` (the table's own line when `key` is "").
    fn origin(&self, key: &str, what: &str) -> String {
        let n = self.index;
        let at = if key.is_empty() {
            format!("phase.{n}")
        } else {
            format!("phase.{n}.{key}")
        };
        self.lines.origin(self.path, &at, &format!("phase {}{what}", n + 1))
    }
}

/// One `[[phase]]` table: its kind, its settings, and where and when it runs when it says
/// (name, files, together, target), and how its files are named and kept (fio_names,
/// keep_files, all_targets).
fn read_phase_table(t: &toml::Table, at: &PhaseAt) -> Result<(PhaseKind, Settings, Option<Stream>), WorkloadError> {
    let kind_name = t.get("kind").and_then(|v| v.as_str()).ok_or_else(|| {
        WorkloadError::invalid(
            at.origin("", ""),
            "a [[phase]] table needs kind = \"write\" (or another phase name)",
        )
    })?;
    let kind = phase_kind(kind_name, &at.origin("kind", ""))?;
    let mut s = Settings::default();
    let mut stream = Stream::default();
    let mut has_stream = false;
    for (k, v) in t.iter().filter(|(k, _)| k.as_str() != "kind") {
        let korigin = at.origin(k, &format!(" ({kind_name}), key {k}"));
        let text = |v: &toml::Value| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| WorkloadError::invalid(&korigin, "expected a string"))
        };
        match k.as_str() {
            "name" => stream.name = text(v)?,
            "files" => stream.set = text(v)?,
            "together" => {
                stream.together = v
                    .as_bool()
                    .ok_or_else(|| WorkloadError::invalid(&korigin, "expected true or false"))?
            }
            "target" => stream.targets = path_list(v, &korigin)?,
            "fio_names" | "keep_files" | "allow_mounted_write" | "all_targets" => {
                let on = v
                    .as_bool()
                    .ok_or_else(|| WorkloadError::invalid(&korigin, "expected true or false"))?;
                match k.as_str() {
                    "fio_names" => stream.fio_names = on,
                    "keep_files" => stream.keep_files = on,
                    "all_targets" => stream.all_targets = on,
                    _ => stream.allow_mounted_write = on,
                }
            }
            _ => {
                apply(&mut s, k, v, &korigin)?;
                continue;
            }
        }
        has_stream = true;
    }
    Ok((kind, s, has_stream.then_some(stream)))
}

/// `[task.NAME]` tables: each a command given as three argument vectors.
fn read_tasks(
    value: &toml::Value,
    path: &str,
    lines: &KeyLines,
    origin: &str,
) -> Result<std::collections::BTreeMap<String, CommandTask>, WorkloadError> {
    let toml::Value::Table(tasks) = value else {
        return Err(WorkloadError::invalid(
            origin,
            "expected [task.NAME] tables with start, status and stop",
        ));
    };
    let mut out = std::collections::BTreeMap::new();
    for (name, t) in tasks {
        let torigin = lines.origin(path, &format!("task.{name}"), &format!("[task.{name}]"));
        let toml::Value::Table(t) = t else {
            return Err(WorkloadError::invalid(
                &torigin,
                "expected a table with start, status and stop",
            ));
        };
        if let Some(k) = t.keys().find(|k| !matches!(k.as_str(), "start" | "status" | "stop")) {
            return Err(WorkloadError::invalid(
                &torigin,
                format!("unknown key '{k}': expected start, status and stop"),
            ));
        }
        let argv = |k: &str| -> Result<Vec<String>, WorkloadError> {
            let v = t.get(k).ok_or_else(|| {
                WorkloadError::invalid(
                    &torigin,
                    format!("{k} is missing: each of start, status and stop is a command"),
                )
            })?;
            let words: Option<Vec<String>> = v
                .as_array()
                .and_then(|a| a.iter().map(|w| w.as_str().map(String::from)).collect());
            match words {
                Some(w) if !w.is_empty() => Ok(w),
                _ => Err(WorkloadError::invalid(
                    &torigin,
                    format!("{k}: expected an argument vector, e.g. {k} = [\"tw_cli\", \"/c0/u0\", \"show\"] (no shell string)"),
                )),
            }
        };
        out.insert(
            name.clone(),
            CommandTask {
                start: argv("start")?,
                status: argv("status")?,
                stop: argv("stop")?,
            },
        );
    }
    Ok(out)
}

impl Job {
    /// Parses a job file's text; `path` names it in messages.
    pub fn parse(text: &str, path: &str) -> Result<Job, WorkloadError> {
        let table = toml_table(text, path)?;
        let lines = KeyLines::of(text);
        let mut job = Job {
            origin: path.to_string(),
            ..Default::default()
        };
        for (key, value) in &table {
            let origin = lines.origin(path, key, &format!("key {key}"));
            match key.as_str() {
                "name" => {
                    job.name = Some(
                        value
                            .as_str()
                            .ok_or_else(|| WorkloadError::invalid(&origin, "expected a string"))?
                            .to_string(),
                    )
                }
                "target" | "targets" => job.targets = path_list(value, &origin)?,
                "phase" | "phases" => read_phases(value, path, &lines, &origin, &mut job)?,
                "task" => job.tasks = read_tasks(value, path, &lines, &origin)?,
                "create_target" => {
                    job.create_target = value
                        .as_bool()
                        .ok_or_else(|| WorkloadError::invalid(&origin, "expected true or false"))?
                }
                _ => apply(&mut job.settings, key, value, &origin)?,
            }
        }
        if !job.streams.is_empty() {
            // Phases that named no stream of their own run as usual, on the job's files.
            job.streams.resize(job.phases.len(), Stream::default());
        }
        Ok(job)
    }

    /// storlab's own rules for a fio job run by a storlab command (`run --fio`, a plan's fio
    /// job): its files go when the run ends (`storlab fio` leaves them, as fio does), and what
    /// only `storlab fio`'s log files are written from — every I/O (`io_log`, fio's logs
    /// without log_avg_msec) and each interval's histograms (`interval_histograms`, its
    /// histogram log) — is not kept, since no log file is written; the interval samples are.
    pub fn run_by_storlab(&mut self) {
        for st in &mut self.streams {
            st.keep_files = false;
        }
        for (_, settings) in &mut self.phases {
            settings.io_log = None;
            settings.interval_histograms = None;
        }
    }

    /// Reads and parses a job file.
    pub fn load(path: &std::path::Path) -> Result<Job, WorkloadError> {
        let bytes = std::fs::read(path).map_err(|e| WorkloadError::Read {
            path: path.display().to_string(),
            source: e,
        })?;
        let text = storlab_model::source::utf8(&bytes).map_err(|e| WorkloadError::Read {
            path: path.display().to_string(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        })?;
        Job::parse(&text, &path.display().to_string())
    }

    /// Verifies data an earlier run wrote with `seed` (`--verify-against RUN`): its seed, and
    /// verification on. A different seed given is refused: the blocks would not match.
    pub fn verify_against(&mut self, run: i64, seed: u64) -> Result<(), WorkloadError> {
        match self.settings.seed {
            Some(given) if given != seed => {
                return Err(WorkloadError::invalid(
                    format!("--seed {given} and --verify-against {run}"),
                    format!("run {run} wrote with seed 0x{seed:016x}; give one or the other"),
                ))
            }
            _ => self.settings.seed = Some(seed),
        }
        self.settings.verify = Some(true);
        Ok(())
    }

    /// Applies command-line phases (replacing the file's list) and targets (replacing the file's).
    pub fn override_with(
        &mut self,
        targets: &[std::path::PathBuf],
        phases: &[String],
        flags: &Settings,
    ) -> Result<(), WorkloadError> {
        if !targets.is_empty() {
            self.targets = targets.to_vec();
            // The targets given replace each stream's own.
            for st in &mut self.streams {
                st.targets.clear();
            }
        }
        if !phases.is_empty() {
            self.streams.clear();
            self.phases = phases
                .iter()
                .map(|p| Ok((phase_kind(p, "--phase")?, Settings::default())))
                .collect::<Result<_, WorkloadError>>()?;
        }
        self.settings.overlay(flags);
        for (_, s) in &mut self.phases {
            s.overlay(flags);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_phase_forms() {
        let j = Job::parse(
            "name = \"t\"\ntarget = [\"/a\", \"/b\"]\nbs = \"64k\"\nthreads = 2\nphase = [\"write\", { kind = \"randread\", bs = \"4k\", runtime = \"5s\" }]\n",
            "j.toml",
        )
        .unwrap();
        assert_eq!(j.name.as_deref(), Some("t"));
        assert_eq!(j.targets.len(), 2);
        assert_eq!(j.phases.len(), 2);
        assert_eq!(j.phases[1].0, PhaseKind::Randread);
        assert_eq!(j.settings.threads, Some(2));

        let j2 = Job::parse(
            "[[phase]]\nkind = \"write\"\n[[phase]]\nkind = \"read\"\nverify = true\n",
            "j.toml",
        )
        .unwrap();
        assert_eq!(j2.phases.len(), 2);
        assert_eq!(j2.phases[1].1.verify, Some(true));
    }

    #[test]
    fn syntax_errors_have_line_and_column() {
        let e = Job::parse("threads = 2\nbs = \"4k\nsize = 1\n", "bad.toml").unwrap_err();
        match e {
            WorkloadError::Syntax { line, column, .. } => {
                assert_eq!(line, 2, "{e}");
                assert!(column >= 1);
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn unknown_things_are_named() {
        let e = Job::parse("blocksize = \"4k\"\n", "j.toml").unwrap_err().to_string();
        assert!(e.contains("blocksize") && e.contains("bs"), "{e}");
        let e = Job::parse("phase = [\"scribble\"]\n", "j.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("scribble") && e.contains("randread"), "{e}");
        let e = Job::parse("size = \"12q\"\n", "j.toml").unwrap_err().to_string();
        assert!(e.contains("key size") && e.contains("12q"), "{e}");
    }

    #[test]
    fn flags_override_the_file() {
        let mut j = Job::parse("bs = \"64k\"\nphase = [{ kind = \"read\", bs = \"1m\" }]\n", "j.toml").unwrap();
        let mut flags = Settings::default();
        apply_str(&mut flags, "bs", "4k", "--bs").unwrap();
        j.override_with(&[], &[], &flags).unwrap();
        assert_eq!(j.phases[0].1.bs, Some(storlab_model::plan::BlockSizes::Fixed(4096)));
    }
}
