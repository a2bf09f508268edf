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
//! | `numjobs` | `threads` |
//! | `iodepth` | `iodepth` (1 with a synchronous engine, as fio caps it) |
//! | `ioengine` psync/sync, pvsync, io_uring, mmap, null; libaio | `engine` psync, pvsync, io_uring, mmap, null; io_uring, with a note |
//! | `direct`, `buffered` | `direct` |
//! | `runtime` with `time_based` | `runtime` |
//! | `ramp_time` | `ramp` |
//! | `rate`, `rate_iops` | `rate` with `rate_per = "worker"` (fio's rates are per job) |
//! | `rwmixread`, `rwmixwrite` | `rwmix` |
//! | `fsync`, `end_fsync` | `fsync` N, `fsync = "end"` |
//! | `directory`, `filename` | the targets |
//! | `verify` | `verify` (storlab's own stamp and check, whatever fio's method) |
//! | `stonewall`/`wait_for_previous`, `new_group`, `group_reporting`, `name`, `description`, `thread` | the phases' order; reporting and names only |

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use storlab_model::list_paths;
use storlab_model::plan::PhaseKind;

use crate::{apply_str, Job, Settings, WorkloadError};

/// A fio job file read as a storlab job.
#[derive(Debug, Clone)]
pub struct FioJob {
    /// The job to run.
    pub job: Job,
    /// The same job as a storlab job file (TOML), to keep or to read.
    pub toml: String,
    /// What differs from fio and how it was taken ("libaio runs as io_uring").
    pub notes: Vec<String>,
    /// Options left out with `--ignore-unknown`, each with its line.
    pub ignored: Vec<String>,
    /// Each phase's fio job name (the first job of the jobs that run together).
    pub phase_names: Vec<String>,
}

impl FioJob {
    /// `--parse-only --json`: the job as storlab runs it (`job`: with the flags laid over),
    /// the job file, the notes and what was ignored.
    pub fn document(&self, job: &Job) -> serde_json::Value {
        serde_json::json!({ "job": job, "toml": self.toml, "notes": self.notes, "ignored": self.ignored })
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

pub mod cli;
mod convert;
pub mod options;
pub mod text;
pub mod value;

use convert::{convert, Converted, Resolved};
pub use text::{At, Keywords, Opt, Section};
use value::KbBase;

fn bad(at: &At, msg: impl Into<String>) -> WorkloadError {
    WorkloadError::invalid(at.to_string(), msg)
}

/// Reads a fio job file into a storlab job. `ignore_unknown`: options storlab cannot honour
/// are listed in [`FioJob::ignored`] instead of refused.
pub fn load(path: &Path, ignore_unknown: bool) -> Result<FioJob, WorkloadError> {
    let text = std::fs::read_to_string(path).map_err(|e| WorkloadError::Read {
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
    /// The run's name when [global] gives none.
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
        let hint = options::closest(&o.key)
            .map(|c| format!(" (did you mean '{c}'?)"))
            .unwrap_or_default();
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
    let mut ignored = Vec::new();
    let mut notes: Vec<String> = unset
        .iter()
        .map(|u| format!("{u} is not set: read as empty, as fio reads it"))
        .collect();
    let mut noted = std::collections::BTreeSet::new();
    let mut global: BTreeMap<String, Opt> = BTreeMap::new();
    let mut jobs: Vec<(Resolved, bool)> = Vec::new();
    let mut run_name = None;
    for sec in sections {
        let mut own: Vec<Opt> = Vec::new();
        for o in sec.opts {
            // An unset variable is empty in fio; an empty place or pattern is refused rather
            // than read as fio would (the current directory, the defaults).
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
                        notes.push(n);
                    }
                }
                Checked::Ignored(i) => ignored.push(i),
            }
        }
        if sec.name == "global" {
            for o in own {
                if o.key == "name" {
                    run_name = o.value.clone();
                }
                global.insert(o.key.clone(), o);
            }
            continue;
        }
        let mut opts = global.clone();
        for o in own {
            opts.insert(o.key.clone(), o);
        }
        let kb = match opts.get("kb_base").and_then(|o| o.value.as_deref()) {
            None | Some("1024") => KbBase(1024),
            Some("1000") => KbBase(1000),
            Some(v) => {
                return Err(bad(
                    &opts["kb_base"].at,
                    format!("kb_base={v}: fio's kb_base is 1024 or 1000"),
                ))
            }
        };
        let r = Resolved {
            name: sec.name.clone(),
            at: sec.at.clone(),
            opts,
            kb,
        };
        // A stonewall in [global] applies to every job.
        let stonewall = r.on("stonewall")?;
        if !only.is_empty() && !only.contains(&sec.name) {
            continue;
        }
        if r.on("exitall")? {
            notes.push(format!(
                "job '{}': exitall: the jobs running with it end when it does, as in fio",
                r.name
            ));
        }
        for k in ["group_reporting", "new_group"] {
            if r.get(k).is_some() && noted.insert(k.to_string()) {
                notes.push(format!(
                    "{k}: storlab reports each phase as one group of all its workers"
                ));
            }
        }
        jobs.push((r, stonewall));
    }
    if let Some(missing) = only.iter().find(|s| !jobs.iter().any(|(j, _)| &j.name == *s)) {
        return Err(WorkloadError::invalid(
            &source.shown,
            format!("--section={missing}: there is no such job section"),
        ));
    }
    if jobs.is_empty() {
        return Err(WorkloadError::invalid(
            &source.shown,
            "no jobs: a fio job file needs at least one [section] besides [global] (a command line, a --name=)",
        ));
    }
    // Jobs between stonewalls run together in fio: one storlab phase when they differ only in
    // where they run.
    let mut groups: Vec<Vec<(Resolved, Converted)>> = Vec::new();
    for (i, (job, stonewall)) in jobs.into_iter().enumerate() {
        let c = convert(&job, &mut notes)?;
        if i == 0 || stonewall {
            groups.push(Vec::new());
        }
        groups.last_mut().expect("a group").push((job, c));
    }
    let mut phases: Vec<ReadPhase> = Vec::new();
    let mut phase_names = Vec::new();
    let mut targets: Option<Vec<PathBuf>> = None;
    let mut workers: Option<u64> = None;
    for group in &groups {
        let (first, fc) = &group[0];
        let mut group_targets = Vec::new();
        let mut threads = 0;
        for (job, c) in group {
            if c.kinds != fc.kinds || c.settings != fc.settings {
                let differ = c
                    .settings
                    .iter()
                    .find(|kv| !fc.settings.contains(kv))
                    .or_else(|| fc.settings.iter().find(|kv| !c.settings.contains(kv)))
                    .map(|(k, _)| format!("different {k}"))
                    .unwrap_or_else(|| "a different rw".into());
                return Err(bad(
                    &job.at,
                    format!(
                        "job '{}' runs at the same time as job '{}' (no stonewall between them) with {differ}: a storlab phase runs one access pattern with one set of settings; add stonewall to '{}' to run it after",
                        job.name, first.name, job.name
                    ),
                ));
            }
            for _ in 0..c.threads {
                group_targets.extend(c.targets.iter().cloned());
            }
            threads += c.threads;
        }
        // storlab's phases of a job work on the same files, one per worker.
        match workers {
            None => workers = Some(threads),
            Some(before) if before == threads => {}
            Some(before) => {
                return Err(bad(
                    &first.get("numjobs").map(|o| o.at.clone()).unwrap_or_else(|| first.at.clone()),
                    format!(
                        "job '{}' runs {threads} job(s) (numjobs) where the jobs before it ran {before}: storlab's phases of one job share their files, one per worker, so every phase has as many workers (run a job file per numjobs)",
                        first.name
                    ),
                ))
            }
        }
        // One target for all workers is said once.
        if group_targets.iter().all(|t| *t == group_targets[0]) {
            group_targets.truncate(1);
        }
        match &targets {
            None => targets = Some(group_targets),
            Some(t) if *t == group_targets => {}
            Some(t) => {
                return Err(bad(
                    &first.at,
                    format!(
                        "job '{}' runs on {} where the jobs before it ran on {}: storlab runs every phase of a job on the same targets (run a job file per place)",
                        first.name,
                        list_paths(&group_targets),
                        list_paths(t)
                    ),
                ))
            }
        }
        for (n, kind) in fc.kinds.iter().enumerate() {
            phase_names.push(if n == 0 {
                first.name.clone()
            } else {
                format!("{} (verify)", first.name)
            });
            let mut kv = fc.settings.clone();
            kv.push(("threads".into(), threads.to_string()));
            let mut settings = Settings::default();
            for (k, v) in &kv {
                apply_str(&mut settings, k, v, &format!("{} (job '{}')", first.at, first.name))?;
            }
            phases.push((*kind, settings, kv));
        }
    }
    let name = run_name.unwrap_or_else(|| source.name.clone());
    let targets = targets.unwrap_or_default();
    let toml = to_toml(&name, &targets, &phases, &source.shown, &notes, &ignored);
    let mut job_notes = notes.clone();
    if !ignored.is_empty() {
        job_notes.push(format!(
            "ignored fio options (--ignore-unknown): {}",
            ignored.join(", ")
        ));
    }
    Ok(FioJob {
        job: Job {
            name: Some(name),
            targets,
            settings: Settings::default(),
            phases: phases.into_iter().map(|(k, s, _)| (k, s)).collect(),
            origin: source.origin.clone(),
            notes: job_notes,
            ..Job::default()
        },
        toml,
        notes,
        ignored,
        phase_names,
    })
}

/// A phase as read: its kind, its settings, and the same settings as storlab text (for TOML).
type ReadPhase = (PhaseKind, Settings, Vec<(String, String)>);

/// The job as a storlab job file.
fn to_toml(
    name: &str,
    targets: &[PathBuf],
    phases: &[ReadPhase],
    shown: &str,
    notes: &[String],
    ignored: &[String],
) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let mut out = format!("# storlab's reading of {shown}\n");
    for n in notes {
        out += &format!("# {n}\n");
    }
    if !ignored.is_empty() {
        out += &format!("# ignored (--ignore-unknown): {}\n", ignored.join(", "));
    }
    out += &format!("name = {}\n", q(name));
    out += &format!(
        "target = [{}]\n",
        targets
            .iter()
            .map(|t| q(&t.display().to_string()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for (kind, _, kv) in phases {
        out += &format!("\n[[phase]]\nkind = {}\n", q(kind.name()));
        for (k, v) in kv {
            let value = match k.as_str() {
                "threads" | "iodepth" | "iodepth_batch" | "rwmix" | "direct" | "verify" | "random_map" | "loops"
                | "sync" => v.clone(),
                "fsync" if v != "end" => v.clone(),
                _ => q(v),
            };
            out += &format!("{k} = {value}\n");
        }
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
        assert!(j.toml.contains("kind = \"randread\"\nbs = \"4KiB\""), "{}", j.toml);
        // The TOML reads back as the same job.
        let back = Job::parse(&j.toml, "back.toml").unwrap();
        assert_eq!(back.phases, j.job.phases);
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
        let e = read("[x]\nrw=read\nthinktime=100\n").unwrap_err().to_string();
        assert!(
            e.starts_with("t.fio:3") && e.contains("'thinktime'") && e.contains("pauses"),
            "{e}"
        );
        let j = parse("[x]\nrw=read\nthinktime=100\nzonemode=zbd\n", Path::new("t.fio"), true).unwrap();
        assert_eq!(j.ignored, vec!["thinktime (t.fio:3)", "zonemode (t.fio:4)"]);
        // Given its "off" value it changes nothing.
        assert!(read("[x]\nrw=read\nthinktime=0\n").is_ok());
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
    fn concurrent_jobs_that_differ_are_refused_and_alike_ones_merge() {
        let e = read("[global]\nrw=randread\n[a]\niodepth=4\nioengine=io_uring\n[b]\niodepth=32\nioengine=io_uring\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("job 'b' runs at the same time as job 'a'") && e.contains("different iodepth"),
            "{e}"
        );
        let j = read("[global]\nrw=read\n[a]\ndirectory=/d1\n[b]\ndirectory=/d2\nnumjobs=2\n").unwrap();
        assert_eq!(j.job.phases.len(), 1);
        assert_eq!(j.job.phases[0].1.threads, Some(3));
        assert_eq!(
            j.job.targets,
            vec![PathBuf::from("/d1"), PathBuf::from("/d2"), PathBuf::from("/d2")]
        );
    }
}
