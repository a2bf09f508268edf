//! fio job files as storlab jobs (`storlab run --fio JOB.fio`): what administrators have kept
//! for years, run on storlab's engine, with every option either honoured or refused by name
//! and line — never silently dropped.
//!
//! The file is read as fio reads it (fio's HOWTO, "Job file format"): `[section]`s, `[global]`
//! sections whose options apply to the jobs after them, `key=value` or bare `key` (a switch),
//! comments starting with `;` or `#`, `include FILE` (relative to the including file), and
//! `${VAR}` from the environment. Each job becomes a storlab phase; jobs fio runs at the same
//! time (no `stonewall` between them) become one phase when they differ only in where they
//! write, and are refused otherwise, since a storlab phase runs one access pattern with one set
//! of settings. A job that writes with `verify` is followed by a read that verifies, as fio
//! verifies after writing.
//!
//! fio's option → storlab's setting:
//!
//! | fio | storlab |
//! |---|---|
//! | `rw`/`readwrite` read, write, randread, randwrite, randrw; `read:-N` with N twice `bs` | the phase: read, write, randread, randwrite, randrw; backread |
//! | `bs`/`blocksize`, `bssplit` | `bs` (a `bssplit` as storlab's weighted mix) |
//! | `size`, `filesize` | `size` (bytes per worker) |
//! | `nrfiles`, `filesize` ranges, `file_service_type` | `nrfiles`, `filesize`, `file_service` (each worker's files in a directory) |
//! | `numjobs` | `threads` |
//! | `iodepth` | `iodepth` (1 with a synchronous engine, as fio caps it) |
//! | `ioengine` psync/sync, pvsync, io_uring, libaio, mmap, null; posixaio | `engine` psync, pvsync, io_uring, libaio, mmap, null; psync or io_uring, with a note |
//! | `direct`, `buffered` | `direct` |
//! | `runtime` with `time_based` | `runtime` |
//! | `ramp_time` | `ramp` |
//! | `rate`, `rate_iops` | `rate` with `rate_per = "worker"` (fio's rates are per job) |
//! | `rwmixread`, `rwmixwrite` | `rwmix` |
//! | `fsync`, `end_fsync` | `fsync` N, `fsync = "end"` |
//! | `directory`, `filename` | the targets |
//! | `verify` | `verify` (storlab's own stamp and check, whatever fio's method) |
//! | `stonewall`/`wait_for_previous`, `new_group`, `name`, `description`, `thread` | the phases' order; fio's reporting groups (`new_group`) and names |
//! | `group_reporting` (absent, with numjobs > 1) | `group_reporting = false` and `worker_samples`: each clone reported apart |

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use storlab_model::plan::PhaseKind;

use crate::{apply_str, Job, Settings, Stream, WorkloadError};

/// The fio whose behaviour `storlab fio` follows, in `fio --version`'s form: the release its
/// outputs are checked against (Debian's, which the tests run beside storlab). Drivers of fio
/// (bench-fio) read it to know they may run; storlab's own version is `storlab --version`'s.
pub const FIO_VERSION: &str = "fio-3.33";

/// A section's options as fio's JSON lists them ("global options", "job options"): by fio's
/// name, the value as given (None for a bare switch, whose key fio leaves out of the object it
/// still writes), the last of a repeated one; an option fio does not know left out.
pub type GivenOptions = Vec<(String, Option<String>)>;

/// How fio reports a phase's job beside the other jobs of its group.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reporting {
    /// fio's new_group: the job starts a reporting group of its own (its `groupid`, its "Run
    /// status group") though it runs with the jobs before it.
    pub new_group: bool,
    /// fio's group_reporting on the job: its figures join the entry of the jobs before it in
    /// its group that ask for it too.
    pub group_reporting: bool,
}

/// A fio job file read as a storlab job.
#[derive(Debug, Clone)]
pub struct FioJob {
    /// The job to run.
    pub job: Job,
    /// The same job as a storlab job file (TOML), to keep or to read.
    pub toml: String,
    /// The job file's first lines: where it came from, the notes, what was ignored.
    header: String,
    /// What differs from fio and how it was taken ("ioengine=sync runs as psync").
    pub notes: Vec<String>,
    /// Options left out with `--ignore-unknown`, each with its line.
    pub ignored: Vec<String>,
    /// Each phase's fio job name.
    pub phase_names: Vec<String>,
    /// Each phase's fio log files.
    pub phase_logs: Vec<Vec<FioLog>>,
    /// The global options as fio's JSON lists them under "global options" (see
    /// [`GivenOptions`]).
    pub global_options: GivenOptions,
    /// Each phase's job's own options, the same way (fio's "job options").
    pub phase_options: Vec<GivenOptions>,
    /// How fio reports each phase's job (its group, whether it joins the group's entry).
    pub phase_reporting: Vec<Reporting>,
}

impl FioJob {
    /// `--parse-only --json`: the job as storlab runs it (`job`: with the flags laid over),
    /// the job file, the notes and what was ignored.
    pub fn document(&self, job: &Job) -> serde_json::Value {
        serde_json::json!({ "job": job, "toml": self.toml_of(job), "notes": self.notes, "ignored": self.ignored })
    }

    /// `job` (this file's job with the flags laid over) as a storlab job file, headed by where
    /// it came from and the notes: what `--parse-only` prints.
    pub fn toml_of(&self, job: &Job) -> String {
        format!("{}{}", self.header, job.to_toml())
    }

    /// What a run of the file at `path` says first: each note, and what `--ignore-unknown`
    /// left out.
    pub fn remarks(&self, path: &Path) -> Vec<String> {
        let mut out: Vec<String> = self.notes.iter().map(|n| format!("{}: {n}", path.display())).collect();
        if !self.ignored.is_empty() {
            out.push(format!(
                "{}: ignored (--ignore-unknown): {}",
                path.display(),
                self.ignored.join(", ")
            ));
        }
        out
    }
}

pub mod askhelp;
pub mod cli;
mod convert;
pub mod options;
pub mod text;
pub mod value;

pub use convert::FioLog;
use convert::{convert, Converted, Resolved};
pub use text::{At, Keywords, Opt, Section};
use value::KbBase;

fn bad(at: &At, msg: impl Into<String>) -> WorkloadError {
    WorkloadError::invalid(at.to_string(), msg)
}

/// Reads a fio job file into a storlab job. `ignore_unknown`: options storlab cannot honour
/// are listed in [`FioJob::ignored`] instead of refused.
pub fn load(path: &Path, ignore_unknown: bool) -> Result<FioJob, WorkloadError> {
    let text = text::read_job_text(path).map_err(|e| WorkloadError::Read {
        path: path.display().to_string(),
        source: e,
    })?;
    parse(&text, path, ignore_unknown)
}

/// [`load`] of a file's text.
pub fn parse(text: &str, path: &Path, ignore_unknown: bool) -> Result<FioJob, WorkloadError> {
    let mut sections = Vec::new();
    let mut unset = Vec::new();
    text::read_file(text, path, 0, &Keywords::here(), &mut unset, &mut sections)?;
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "fio job".into());
    build(
        sections,
        &Source {
            name,
            origin: format!("fio job file {}", path.display()),
            shown: format!("the fio job file {}", path.display()),
        },
        unset,
        ignore_unknown,
        &[],
    )
}

/// Where a job came from, for its name, its origin and the TOML's first line.
pub struct Source {
    /// The run's name when `[global]` gives none.
    pub name: String,
    /// The job's origin ("fio job file F", "fio command line").
    pub origin: String,
    /// What the TOML says it read.
    pub shown: String,
}

/// One option checked against fio's table: its canonical name, or why it is refused.
enum Checked {
    Keep(Opt),
    Noted(String),
    Ignored(String),
}

fn check(mut o: Opt, ignore_unknown: bool) -> Result<Checked, WorkloadError> {
    let Some(def) = options::find(&o.key) else {
        let hint = storlab_model::names::did_you_mean(&o.key, options::names());
        return Err(bad(&o.at, format!("'{}' is not an option fio knows{hint}", o.key)));
    };
    o.key = def.name.to_string();
    if def.kind == options::Kind::Bool && o.value.is_none() {
        return Err(bad(
            &o.at,
            format!(
                "{} needs a value ({}=1 or {}=0): fio refuses it bare",
                o.key, o.key, o.key
            ),
        ));
    }
    if def.kind != options::Kind::Switch && def.kind != options::Kind::Str && o.value.as_deref() == Some("") {
        return Err(bad(&o.at, format!("{}= has no value", o.key)));
    }
    match def.does {
        options::Does::Honour => Ok(Checked::Keep(o)),
        options::Does::Note(why) => Ok(Checked::Noted(format!("{}: {why}", o.key))),
        options::Does::Refuse(why) => {
            // An option given its "off" value changes nothing.
            let off = matches!(o.value.as_deref(), Some("0") | Some("none"))
                && matches!(
                    def.kind,
                    options::Kind::Bool
                        | options::Kind::Switch
                        | options::Kind::Int
                        | options::Kind::Micros
                        | options::Kind::Seconds
                );
            if off {
                return Ok(Checked::Noted(format!(
                    "{}={}: off, as storlab runs",
                    o.key,
                    o.value.as_deref().unwrap_or("")
                )));
            }
            if ignore_unknown {
                return Ok(Checked::Ignored(format!("{} ({})", o.key, o.at)));
            }
            Err(bad(
                &o.at,
                format!(
                    "fio option '{}' is not one storlab can honour: {why} (--ignore-unknown goes on without it and lists it)",
                    o.key
                ),
            ))
        }
    }
}

/// The sections of a job file or a command line as a storlab job: every option checked
/// against fio's table, globals applied, each job converted, jobs that run together made one
/// phase. `only`: the sections to run (fio's `--section`), all when empty.
pub fn build(
    sections: Vec<Section>,
    source: &Source,
    unset: Vec<String>,
    ignore_unknown: bool,
    only: &[String],
) -> Result<FioJob, WorkloadError> {
    let mut read = read_sections(sections, &unset, ignore_unknown, only)?;
    if let Some(missing) = only.iter().find(|s| !read.jobs.iter().any(|(j, _)| &j.name == *s)) {
        return Err(WorkloadError::invalid(
            &source.shown,
            format!("--section={missing}: there is no such job section"),
        ));
    }
    if read.jobs.is_empty() {
        return Err(WorkloadError::invalid(
            &source.shown,
            "no jobs: a fio job file needs at least one [section] besides [global] (a command line, a --name=)",
        ));
    }
    let groups = convert_groups(std::mem::take(&mut read.jobs), &mut read.notes)?;
    let laid = lay_out(&groups, &mut read.notes)?;
    let name = read.run_name.unwrap_or_else(|| source.name.clone());
    let header = toml_header(&source.shown, &read.notes, &read.ignored);
    let mut job_notes = read.notes.clone();
    if !read.ignored.is_empty() {
        job_notes.push(format!(
            "ignored fio options (--ignore-unknown): {}",
            read.ignored.join(", ")
        ));
    }
    let job = Job {
        name: Some(name),
        targets: laid.targets,
        settings: Settings::default(),
        phases: laid.phases,
        streams: laid.streams,
        origin: source.origin.clone(),
        notes: job_notes,
        // fio creates a file it is told to use that does not exist.
        create_target: true,
        fio_device_rules: true,
        ..Job::default()
    };
    Ok(FioJob {
        toml: format!("{header}{}", job.to_toml()),
        header,
        job,
        notes: read.notes,
        ignored: read.ignored,
        phase_names: laid.names,
        phase_logs: laid.logs,
        global_options: read.global_options,
        phase_options: laid.options,
        phase_reporting: laid.reporting,
    })
}

/// The sections read: each job with its options resolved and whether a stonewall starts it,
/// the run's name from [global], the notes so far and what --ignore-unknown left out.
struct ReadSections {
    jobs: Vec<(Resolved, bool)>,
    run_name: Option<String>,
    notes: Vec<String>,
    ignored: Vec<String>,
    global_options: GivenOptions,
}

/// Reads the sections in order: each option checked, [global]'s options kept for the jobs
/// after it, each job resolved (its kb_base) with its stonewall.
fn read_sections(
    sections: Vec<Section>,
    unset: &[String],
    ignore_unknown: bool,
    only: &[String],
) -> Result<ReadSections, WorkloadError> {
    let mut r = ReadSections {
        jobs: Vec::new(),
        run_name: None,
        global_options: Vec::new(),
        notes: unset
            .iter()
            .map(|u| format!("{u} is not set: read as empty, as fio reads it"))
            .collect(),
        ignored: Vec::new(),
    };
    let mut noted = std::collections::BTreeSet::new();
    let mut global: BTreeMap<String, Opt> = BTreeMap::new();
    for sec in sections {
        let given = given_options(&sec.opts);
        let own = checked_options(sec.opts, unset, ignore_unknown, &mut noted, &mut r)?;
        if sec.name == "global" {
            for o in own {
                if o.key == "name" {
                    r.run_name = o.value.clone();
                }
                global.insert(o.key.clone(), o);
            }
            r.global_options = given;
            continue;
        }
        let mut opts = global.clone();
        for o in own {
            opts.insert(o.key.clone(), o);
        }
        let job = Resolved {
            name: sec.name.clone(),
            at: sec.at.clone(),
            kb: kb_base(&opts)?,
            opts,
            given,
        };
        note_size_readings(&job, &mut noted, &mut r.notes);
        let stonewall = starts_alone(&job, &r.jobs)?;
        if !only.is_empty() && !only.contains(&sec.name) {
            continue;
        }
        r.jobs.push((job, stonewall));
    }
    Ok(r)
}

/// A section's options as fio's JSON lists them (see [`GivenOptions`]).
fn given_options(opts: &[Opt]) -> GivenOptions {
    let mut out: GivenOptions = Vec::new();
    for o in opts {
        let Some(def) = options::find(&o.key) else { continue };
        out.retain(|(k, _)| k != def.name);
        out.push((def.name.to_string(), o.value.clone()));
    }
    out
}

/// A section's options, each checked against fio's table: kept, noted once, or left out.
fn checked_options(
    opts: Vec<Opt>,
    unset: &[String],
    ignore_unknown: bool,
    noted: &mut std::collections::BTreeSet<String>,
    r: &mut ReadSections,
) -> Result<Vec<Opt>, WorkloadError> {
    let mut own = Vec::new();
    for o in opts {
        // An unset variable is empty in fio; an empty place or pattern is refused rather than
        // read as fio would (the current directory, the defaults).
        if o.value.as_deref() == Some("") && !matches!(o.key.as_str(), "description" | "name") {
            if let Some(u) = unset.iter().find(|u| u.ends_with(&format!("({})", o.at))) {
                let var = u.split(" (").next().unwrap_or(u);
                return Err(bad(
                    &o.at,
                    format!("{}= is empty: {var} is not set (fio would read it as empty)", o.key),
                ));
            }
        }
        match check(o, ignore_unknown)? {
            Checked::Keep(o) => own.push(o),
            Checked::Noted(n) => {
                if noted.insert(n.clone()) {
                    r.notes.push(n);
                }
            }
            Checked::Ignored(i) => r.ignored.push(i),
        }
    }
    Ok(own)
}

/// Says, once per option and value, where fio's reading of a size (its kb_base: `10GB` is
/// 10 GiB by default) differs from a storlab job file's (`10GB` is 10^10 bytes): the job runs
/// fio's, and the user sees both.
fn note_size_readings(job: &Resolved, noted: &mut std::collections::BTreeSet<String>, notes: &mut Vec<String>) {
    for o in job.opts.values() {
        let (Some(def), Some(v)) = (options::find(&o.key), o.value.as_deref()) else {
            continue;
        };
        if def.kind != options::Kind::Size {
            continue;
        }
        let fio = value::bytes(v, job.kb).ok();
        let own = v.parse::<storlab_units::Size>().ok().map(|s| s.0);
        if let (Some(fio), Some(own)) = (fio, own) {
            if fio != own && noted.insert(format!("{}={v}", o.key)) {
                notes.push(format!(
                    "{}={v}: read as fio reads it, {} ({fio} bytes); a storlab job file reads {v} as {own} bytes",
                    o.key,
                    storlab_units::Size(fio)
                ));
            }
        }
    }
}

/// How the job counts a `k` (fio's kb_base).
fn kb_base(opts: &BTreeMap<String, Opt>) -> Result<KbBase, WorkloadError> {
    match opts.get("kb_base").and_then(|o| o.value.as_deref()) {
        None | Some("1024") => Ok(KbBase(1024)),
        Some("1000") => Ok(KbBase(1000)),
        Some(v) => Err(bad(
            &opts["kb_base"].at,
            format!("kb_base={v}: fio's kb_base is 1024 or 1000"),
        )),
    }
}

/// Whether a job starts after all the jobs before it: a stonewall (one in [global] applies to
/// every job), or wait_for the job just before, which runs alone; waiting for a job while
/// others run on is refused.
fn starts_alone(job: &Resolved, before: &[(Resolved, bool)]) -> Result<bool, WorkloadError> {
    let stonewall = job.on("stonewall")?;
    let Some(w) = job.val("wait_for") else {
        return Ok(stonewall);
    };
    let at = job.get("wait_for").expect("given").at.clone();
    let group_start = before.iter().rposition(|(_, sw)| *sw).unwrap_or(0);
    match before.last() {
        Some((prev, _)) if prev.name == w && (stonewall || before.len() - group_start == 1) => Ok(true),
        Some((prev, _)) if prev.name == w => Err(bad(
            &at,
            format!("wait_for={w}: '{w}' runs with other jobs, which '{}' would not wait for: storlab starts a job after all the jobs before it (stonewall)", job.name),
        )),
        _ => Err(bad(
            &at,
            format!("wait_for={w}: storlab starts a job after the job just before it (stonewall); '{w}' is not the job just before '{}'", job.name),
        )),
    }
}

/// The jobs converted, in groups that run together (fio runs the jobs between stonewalls at
/// the same time, each on files of its own). A later job that reads a file an earlier job
/// filled (fill_device) without a size of its own reads it to its end, as fio reads the
/// file's length then.
fn convert_groups(
    jobs: Vec<(Resolved, bool)>,
    notes: &mut Vec<String>,
) -> Result<Vec<Vec<(Resolved, Converted)>>, WorkloadError> {
    let mut groups: Vec<Vec<(Resolved, Converted)>> = Vec::new();
    for (i, (job, stonewall)) in jobs.into_iter().enumerate() {
        let c = convert(&job, notes)?;
        if i == 0 || stonewall {
            groups.push(Vec::new());
        }
        groups.last_mut().expect("a group").push((job, c));
    }
    let mut filled: Vec<PathBuf> = Vec::new();
    for (job, c) in groups.iter_mut().flatten() {
        if c.settings.fill == Some(true) {
            filled.extend(c.targets.iter().cloned());
        } else if c.targets.iter().any(|t| filled.contains(t)) && c.settings.size.is_none() {
            c.settings.fill = Some(true);
            notes.push(format!(
                "job '{}' reads the file an earlier job filled (fill_device): to its end",
                job.name
            ));
        }
    }
    Ok(groups)
}

/// The groups as storlab phases: each job a phase on its own file set (the first of a group
/// starting it, the others together with it), a verified write's read after the whole group;
/// the job's targets; each phase's name and logs.
struct Laid {
    phases: Vec<ReadPhase>,
    streams: Vec<Stream>,
    names: Vec<String>,
    logs: Vec<Vec<FioLog>>,
    /// Each phase's job's own options (fio's "job options").
    options: Vec<GivenOptions>,
    /// How fio reports each phase's job.
    reporting: Vec<Reporting>,
    targets: Vec<PathBuf>,
}

fn lay_out(groups: &[Vec<(Resolved, Converted)>], notes: &mut Vec<String>) -> Result<Laid, WorkloadError> {
    let mut laid = Laid {
        phases: Vec::new(),
        streams: Vec::new(),
        names: Vec::new(),
        logs: Vec::new(),
        options: Vec::new(),
        reporting: Vec::new(),
        targets: Vec::new(),
    };
    let mut index = 0usize;
    // fio numbers its threads across the run, each job counting its numjobs.
    let mut thread = 1u64;
    let mut said_deferred = false;
    for group in groups {
        let mut deferred = Vec::new();
        for (ji, (job, c)) in group.iter().enumerate() {
            let set = format!("{index}.{}", job.name);
            index += 1;
            for t in &c.targets {
                if !laid.targets.contains(t) {
                    laid.targets.push(t.clone());
                }
            }
            for (n, kind) in c.kinds.iter().enumerate() {
                if n > 0 && group.len() > 1 {
                    // A job's verifying read: after the whole group, on the job's files.
                    deferred.push((job, c, *kind, set.clone()));
                    continue;
                }
                let (name, logs) = if n == 0 {
                    let logs = c.logs.iter().map(|l| FioLog { thread, ..l.clone() }).collect();
                    (job.name.clone(), logs)
                } else {
                    (format!("{} (verify)", job.name), Vec::new())
                };
                let phase = read_phase(*kind, c, job)?;
                laid.push(job, name, logs, phase, (n == 0 && ji > 0, &set, n == 0), c)?;
            }
            thread += c.threads.max(1);
        }
        if !deferred.is_empty() && !said_deferred {
            said_deferred = true;
            notes.push("the verifying reads of jobs that run together follow the whole group (fio verifies each job's files after its own writes, while the others still run)".into());
        }
        for (k, (job, c, kind, set)) in deferred.into_iter().enumerate() {
            let name = format!("{} (verify)", job.name);
            laid.push(
                job,
                name,
                Vec::new(),
                read_phase(kind, c, job)?,
                (k > 0, &set, false),
                c,
            )?;
        }
    }
    // One job: its phases are a storlab job's usual ones, on the job's targets (the streams
    // keep only their names).
    if laid.streams.iter().all(|st| st.set == laid.streams[0].set) {
        for st in &mut laid.streams {
            st.set.clear();
            st.targets.clear();
        }
    }
    Ok(laid)
}

impl Laid {
    /// One phase of `job` with its name, logs and stream (whether it runs with the one before,
    /// its file set).
    /// `first`: the job's first phase (a verifying read after it starts no group of its own).
    fn push(
        &mut self,
        job: &Resolved,
        name: String,
        logs: Vec<FioLog>,
        phase: ReadPhase,
        (together, set, first): (bool, &str, bool),
        c: &Converted,
    ) -> Result<(), WorkloadError> {
        self.reporting.push(Reporting {
            new_group: first && job.on("new_group")?,
            group_reporting: job.on("group_reporting")?,
        });
        self.streams.push(Stream {
            name: job.name.clone(),
            together,
            set: set.to_string(),
            targets: c.targets.clone(),
            fio_names: true,
            keep_files: c.keep_files,
            allow_mounted_write: c.allow_mounted_write,
            all_targets: c.all_targets,
        });
        self.names.push(name);
        self.options.push(job.given.clone());
        self.logs.push(logs);
        self.phases.push(phase);
        Ok(())
    }
}

/// A phase as read: its kind and its settings.
type ReadPhase = (PhaseKind, Settings);

/// One phase of a converted job: its settings with its workers, each checked as storlab reads
/// it from a job file (its text through its reader: the ranges and rules of `storlab run`).
fn read_phase(kind: PhaseKind, c: &Converted, job: &Resolved) -> Result<ReadPhase, WorkloadError> {
    let mut settings = c.settings.clone();
    settings.threads =
        Some(u32::try_from(c.threads).map_err(|_| {
            WorkloadError::invalid(format!("{} (job '{}')", job.at, job.name), "numjobs: too many jobs")
        })?);
    let mut checked = Settings::default();
    for (k, v) in settings.entries() {
        apply_str(&mut checked, k, &v, &format!("{} (job '{}')", job.at, job.name))?;
    }
    Ok((kind, settings))
}

/// A job file's first lines, as comments: where it came from, the notes, what was ignored.
fn toml_header(shown: &str, notes: &[String], ignored: &[String]) -> String {
    let mut out = format!("# storlab's reading of {shown}\n");
    for n in notes {
        out += &format!("# {n}\n");
    }
    if !ignored.is_empty() {
        out += &format!("# ignored (--ignore-unknown): {}\n", ignored.join(", "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<FioJob, WorkloadError> {
        parse(text, Path::new("t.fio"), false)
    }

    #[test]
    fn globals_apply_to_the_jobs_after_them_and_stonewalls_order_phases() {
        let j = read("[global]\nbs=64k\nsize=16m\ndirectory=/data\nnumjobs=2\n[w]\nrw=write\n[r]\nstonewall\nrw=randread\nbs=4k\n").unwrap();
        assert_eq!(j.job.phases.len(), 2);
        assert_eq!(j.job.phases[0].0, PhaseKind::Write);
        assert_eq!(j.job.phases[1].0, PhaseKind::Randread);
        assert_eq!(j.job.phases[1].1.threads, Some(2));
        assert_eq!(j.job.targets, vec![PathBuf::from("/data")]);
        assert!(
            j.toml
                .contains("kind = \"randread\"\nname = \"r\"\nfiles = \"1.r\"\ntarget = [\"/data\"]\nfio_names = true\nkeep_files = true\nthreads = 2\nsize = \"16MiB\"\nbs = \"4KiB\""),
            "{}",
            j.toml
        );
        // Two fio jobs: each on files of its own, one after the other.
        assert_eq!(
            j.job.streams.iter().map(|s| s.together).collect::<Vec<_>>(),
            [false, false]
        );
        // The TOML reads back as the same job.
        let back = Job::parse(&j.toml, "back.toml").unwrap();
        assert_eq!(back.phases, j.job.phases);
        assert_eq!(back.streams, j.job.streams);
    }

    #[test]
    fn options_are_honoured_noted_or_refused_by_name_and_line() {
        // Not an option at all: refused as fio refuses it, with a suggestion.
        let e = read("[x]\nrw=read\niodepht=4\n").unwrap_err().to_string();
        assert!(e.starts_with("t.fio:3") && e.contains("did you mean 'iodepth'"), "{e}");
        // Changes nothing measured: a note.
        let j = read("[x]\nrw=read\ngtod_reduce=1\nrandrepeat=0\n").unwrap();
        assert!(j.notes.iter().any(|n| n.starts_with("gtod_reduce:")), "{:?}", j.notes);
        // Would measure something else: refused, or listed with --ignore-unknown.
        let e = read("[x]\nrw=read\nnice=5\n").unwrap_err().to_string();
        assert!(
            e.starts_with("t.fio:3") && e.contains("'nice'") && e.contains("priorit"),
            "{e}"
        );
        let j = parse("[x]\nrw=read\nnice=5\nmax_open_zones=4\n", Path::new("t.fio"), true).unwrap();
        assert_eq!(j.ignored, vec!["nice (t.fio:3)", "max_open_zones (t.fio:4)"]);
        // Given its "off" value it changes nothing.
        assert!(read("[x]\nrw=read\nnice=0\n").is_ok());
        // A boolean needs its value, as fio says.
        let e = read("[x]\nrw=read\ndirect\n").unwrap_err().to_string();
        assert!(e.contains("direct needs a value"), "{e}");
    }

    #[test]
    fn comments_after_values_kb_base_and_ranges() {
        let j = read("[x]\nrw=randread   ; random reads\ndirect=1    #use O_DIRECT\nbs=4kib\nsize=1m\nnorandommap\n")
            .unwrap();
        let s = &j.job.phases[0].1;
        assert_eq!(s.direct, Some(true));
        assert_eq!(s.bs, Some(storlab_model::plan::BlockSizes::Fixed(4000)));
        assert_eq!(s.random_map, Some(false));
        let j = read("[x]\nkb_base=1000\nrw=randread\nbs=4kib\nsize=1m\n").unwrap();
        let s = &j.job.phases[0].1;
        assert_eq!(s.bs, Some(storlab_model::plan::BlockSizes::Fixed(4096)));
        assert_eq!(s.size, Some(1_000_000));
        assert_eq!(s.random_map, Some(true), "fio's default random map");
        let j = read("[x]\nrw=randread\nbsrange=4k-16k\n").unwrap();
        assert_eq!(
            j.job.phases[0].1.bs,
            Some(storlab_model::plan::BlockSizes::Mix(vec![
                (4096, 4096),
                (8192, 4096),
                (12288, 4096),
                (16384, 1)
            ]))
        );
        // bs=READ,WRITE: a job that only writes takes the write size.
        let j = read("[x]\nrw=write\nbs=4k,64k\n").unwrap();
        assert_eq!(
            j.job.phases[0].1.bs,
            Some(storlab_model::plan::BlockSizes::Fixed(65536))
        );
        // runtime without time_based cuts the pass short.
        let j = read("[x]\nrw=read\nsize=1g\nruntime=60\nloops=3\n").unwrap();
        let s = &j.job.phases[0].1;
        assert_eq!(
            (s.runtime, s.timeout.map(|d| d.0), s.loops),
            (None, Some(60_000_000_000), Some(3))
        );
    }

    #[test]
    fn bssplit_spreads_the_rest_over_blank_shares() {
        let j = read("[x]\nrw=randread\nbssplit=4k/50:64k/:1m/\n").unwrap();
        assert!(j.toml.contains("bs = \"4KiB:50,64KiB:25,1MiB:25\""), "{}", j.toml);
    }

    #[test]
    fn environment_variables_are_substituted_and_unset_ones_read_as_empty() {
        std::env::set_var("STORLAB_FIO_TEST_BS", "128k");
        let j = read("[x]\nrw=read\nbs=${STORLAB_FIO_TEST_BS}\n").unwrap();
        assert!(j.toml.contains("bs = \"128KiB\""));
        let j = read("[x]\nrw=read\nbs=4k${STORLAB_FIO_NOT_SET}\n").unwrap();
        assert!(
            j.notes
                .iter()
                .any(|n| n.contains("${STORLAB_FIO_NOT_SET} (t.fio:3) is not set")),
            "{:?}",
            j.notes
        );
    }

    #[test]
    fn jobs_that_run_together_are_phases_of_their_own_on_files_of_their_own() {
        let j = read("[global]\nrw=randread\nsize=1m\ndirectory=/d\n[a]\niodepth=4\nioengine=io_uring\n[b]\niodepth=32\nioengine=io_uring\nnumjobs=2\n[c]\nstonewall\nrw=write\nverify=crc32c\n[d]\nrw=write\nverify=md5\n")
            .unwrap();
        let kinds: Vec<PhaseKind> = j.job.phases.iter().map(|p| p.0).collect();
        use PhaseKind::*;
        assert_eq!(kinds, [Randread, Randread, Write, Write, Read, Read]);
        let together: Vec<bool> = j.job.streams.iter().map(|s| s.together).collect();
        assert_eq!(together, [false, true, false, true, false, true]);
        let sets: Vec<&str> = j.job.streams.iter().map(|s| s.set.as_str()).collect();
        assert_eq!(
            sets,
            ["0.a", "1.b", "2.c", "3.d", "2.c", "3.d"],
            "each job's verifying read is on its own files"
        );
        assert_eq!(j.job.phases[1].1.threads, Some(2));
        assert_eq!(j.phase_names[4], "c (verify)");
        // The TOML reads back as the same job, streams and all.
        let back = Job::parse(&j.toml, "back.toml").unwrap();
        assert_eq!(back.phases, j.job.phases);
        assert_eq!(back.streams, j.job.streams);
    }
}
