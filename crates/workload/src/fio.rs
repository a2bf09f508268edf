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

/// Where a line came from.
#[derive(Debug, Clone)]
struct At {
    file: String,
    line: usize,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.file, self.line)
    }
}

#[derive(Debug, Clone)]
struct Opt {
    key: String,
    value: Option<String>,
    at: At,
}

#[derive(Debug, Clone)]
struct Section {
    name: String,
    at: At,
    opts: Vec<Opt>,
}

fn bad(at: &At, msg: impl Into<String>) -> WorkloadError {
    WorkloadError::invalid(at.to_string(), msg)
}

/// `${VAR}` from the environment; an unset variable is an error naming it.
fn substitute(line: &str, at: &At) -> Result<String, WorkloadError> {
    let mut out = String::new();
    let mut rest = line;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let Some(j) = rest[i..].find('}') else {
            return Err(bad(at, "an unclosed ${ (expected ${NAME})"));
        };
        let name = &rest[i + 2..i + j];
        let v = std::env::var(name).map_err(|_| bad(at, format!("${{{name}}} is not set in the environment")))?;
        out.push_str(&v);
        rest = &rest[i + j + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The sections of a file, with its includes read in place.
fn read_sections(text: &str, file: &Path, depth: usize, sections: &mut Vec<Section>) -> Result<(), WorkloadError> {
    let name = file.display().to_string();
    if depth > 16 {
        return Err(WorkloadError::invalid(
            &name,
            "includes nested more than 16 deep (does a file include itself?)",
        ));
    }
    for (k, raw) in text.lines().enumerate() {
        let at = At {
            file: name.clone(),
            line: k + 1,
        };
        let t = raw.trim();
        if t.is_empty() || t.starts_with(';') || t.starts_with('#') {
            continue;
        }
        let t = substitute(t, &at)?;
        if let Some(inc) = t.strip_prefix("include ") {
            let p = Path::new(inc.trim());
            let p = if p.is_absolute() {
                p.to_path_buf()
            } else {
                file.parent().unwrap_or(Path::new(".")).join(p)
            };
            let text = std::fs::read_to_string(&p).map_err(|e| bad(&at, format!("include {}: {e}", p.display())))?;
            read_sections(&text, &p, depth + 1, sections)?;
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
        let Some(sec) = sections.last_mut() else {
            return Err(bad(&at, format!("'{t}' comes before any [section]")));
        };
        let (key, value) = match t.split_once('=') {
            Some((k, v)) => (k.trim().to_string(), Some(v.trim().to_string())),
            None => (t.to_string(), None),
        };
        sec.opts.push(Opt { key, value, at });
    }
    Ok(())
}

/// fio's canonical name of an option (its aliases).
fn canonical(key: &str) -> &str {
    match key {
        "readwrite" => "rw",
        "blocksize" => "bs",
        "timeout" => "runtime",
        "wait_for_previous" => "stonewall",
        other => other,
    }
}

/// The options storlab honours; everything else is refused (or ignored with
/// `--ignore-unknown`, and listed).
const KNOWN: &[&str] = &[
    "rw",
    "bs",
    "bssplit",
    "size",
    "filesize",
    "numjobs",
    "iodepth",
    "ioengine",
    "direct",
    "buffered",
    "runtime",
    "time_based",
    "ramp_time",
    "rate",
    "rate_iops",
    "rwmixread",
    "rwmixwrite",
    "fsync",
    "end_fsync",
    "directory",
    "filename",
    "verify",
    "stonewall",
    "new_group",
    "group_reporting",
    "name",
    "description",
    "thread",
];

/// A size as fio writes it (kb_base 1024: k, K, KiB and KB are all 1024), bytes.
fn fio_size(v: &str, at: &At, key: &str) -> Result<u64, WorkloadError> {
    let t = v.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| bad(at, format!("{key}={v}: not a size (e.g. 4k, 256K, 10G)")))?;
    let m: u64 = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        "p" | "pb" | "pib" => 1 << 50,
        "%" => {
            return Err(bad(
                at,
                format!("{key}={v}: a size in percent of the device: storlab takes sizes in bytes"),
            ))
        }
        _ => {
            return Err(bad(
                at,
                format!("{key}={v}: unknown unit '{unit}' (expected k, m, g, t)"),
            ))
        }
    };
    Ok((n * m as f64) as u64)
}

/// A time as fio writes it (seconds by default; us, ms, s, m, h, d), as storlab text.
fn fio_time(v: &str, at: &At, key: &str) -> Result<String, WorkloadError> {
    let t = v.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| bad(at, format!("{key}={v}: not a time (e.g. 60, 60s, 2m)")))?;
    let secs = match unit {
        "" | "s" => n,
        "us" | "usec" => n / 1e6,
        "ms" | "msec" => n / 1e3,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        "d" => n * 86400.0,
        _ => {
            return Err(bad(
                at,
                format!("{key}={v}: unknown unit '{unit}' (expected s, m, h, ms, us)"),
            ))
        }
    };
    let ms = (secs * 1000.0).round() as u64;
    Ok(if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{ms}ms")
    })
}

fn switch(o: &Opt) -> Result<bool, WorkloadError> {
    match o.value.as_deref() {
        None | Some("1") | Some("true") => Ok(true),
        Some("0") | Some("false") => Ok(false),
        Some(v) => Err(bad(&o.at, format!("{}={v}: expected 0 or 1", o.key))),
    }
}

/// One fio job resolved: its options (globals before it, then its own), each with its line.
struct Resolved {
    name: String,
    at: At,
    opts: BTreeMap<String, Opt>,
}

impl Resolved {
    fn get(&self, k: &str) -> Option<&Opt> {
        self.opts.get(k)
    }
    fn val(&self, k: &str) -> Option<&str> {
        self.get(k).and_then(|o| o.value.as_deref())
    }
    fn on(&self, k: &str) -> Result<bool, WorkloadError> {
        self.get(k).map(switch).unwrap_or(Ok(false))
    }
}

/// What one job asks of storlab: its phase kinds (a verified write adds the read that
/// verifies), storlab settings as text, where it runs.
struct Converted {
    kinds: Vec<PhaseKind>,
    settings: Vec<(String, String)>,
    targets: Vec<PathBuf>,
    threads: u64,
}

fn convert(j: &Resolved, notes: &mut Vec<String>) -> Result<Converted, WorkloadError> {
    let mut s: Vec<(String, String)> = Vec::new();
    let at = |k: &str| j.get(k).map(|o| o.at.clone()).unwrap_or_else(|| j.at.clone());
    // Block size first: rw=read:-N is read against it.
    let bs = match (j.val("bs"), j.val("bssplit")) {
        (_, Some(split)) => {
            let mut parts = Vec::new();
            let mut given = 0u64;
            let mut blank = 0;
            for p in split.split(':') {
                let (size, pct) = p.split_once('/').unwrap_or((p, ""));
                let b = fio_size(size, &at("bssplit"), "bssplit")?;
                let pct = if pct.is_empty() {
                    blank += 1;
                    None
                } else {
                    let v: u64 = pct
                        .parse()
                        .map_err(|_| bad(&at("bssplit"), format!("bssplit={split}: '{pct}' is not a percentage")))?;
                    given += v;
                    Some(v)
                };
                parts.push((b, pct));
            }
            if split.contains(',') {
                return Err(bad(
                    &at("bssplit"),
                    format!("bssplit={split}: separate read and write splits: storlab has one mix per phase"),
                ));
            }
            // fio spreads what the given percentages leave over the blank ones.
            let rest = 100u64.saturating_sub(given);
            let mix: Vec<String> = parts
                .iter()
                .map(|(b, p)| format!("{}:{}", storlab_units::Size(*b), p.unwrap_or(rest / blank.max(1))))
                .collect();
            s.push(("bs".into(), mix.join(",")));
            None
        }
        (Some(b), None) => {
            let sizes: Vec<&str> = b.split(',').collect();
            let parsed: Vec<u64> = sizes
                .iter()
                .filter(|x| !x.is_empty())
                .map(|x| fio_size(x, &at("bs"), "bs"))
                .collect::<Result<_, _>>()?;
            if parsed.windows(2).any(|w| w[0] != w[1]) {
                return Err(bad(&at("bs"), format!("bs={b}: different sizes for reads and writes: storlab has one block size per phase (or a mix, bssplit)")));
            }
            let b = parsed.first().copied().unwrap_or(4096);
            s.push(("bs".into(), storlab_units::Size(b).to_string()));
            Some(b)
        }
        (None, None) => {
            s.push(("bs".into(), "4KiB".into()));
            Some(4096)
        }
    };
    // The access pattern.
    let rw = j.val("rw").unwrap_or("read");
    let (pattern, skip) = match rw.split_once(':') {
        Some((p, k)) => (p, Some(k)),
        None => (rw, None),
    };
    let kind = match (pattern, skip) {
        ("read", None) => PhaseKind::Read,
        ("write", None) => PhaseKind::Write,
        ("randread", None) => PhaseKind::Randread,
        ("randwrite", None) => PhaseKind::Randwrite,
        ("randrw" | "randreadwrite", None) => PhaseKind::Randrw,
        ("read", Some(k))
            if k.starts_with('-') && bs.is_some_and(|b| fio_size(&k[1..], &at("rw"), "rw").ok() == Some(2 * b)) =>
        {
            notes.push(format!(
                "job '{}': rw={rw} reads backwards block by block: storlab's backread",
                j.name
            ));
            PhaseKind::Backread
        }
        ("rw" | "readwrite", _) => {
            return Err(bad(
                &at("rw"),
                format!("rw={rw}: a sequential mix of reads and writes: storlab mixes only at random offsets (randrw)"),
            ))
        }
        _ => {
            return Err(bad(
                &at("rw"),
                format!(
                "rw={rw}: storlab runs read, write, randread, randwrite, randrw and read:-N (backwards, N twice bs)"
            ),
            ))
        }
    };
    if let Some(m) = j.val("rwmixread") {
        s.push(("rwmix".into(), m.into()));
    } else if let Some(m) = j.val("rwmixwrite") {
        let w: u32 = m
            .parse()
            .map_err(|_| bad(&at("rwmixwrite"), format!("rwmixwrite={m}: expected 0 to 100")))?;
        s.push(("rwmix".into(), (100u32.saturating_sub(w)).to_string()));
    }
    // Size.
    let size = match (j.val("size"), j.val("filesize")) {
        (Some(a), Some(b)) if fio_size(a, &at("size"), "size")? != fio_size(b, &at("filesize"), "filesize")? => {
            return Err(bad(
                &at("filesize"),
                format!("filesize={b} with size={a}: several files per job (nrfiles): storlab has one file per worker"),
            ))
        }
        (Some(v), _) => Some(("size", v)),
        (None, Some(v)) => Some(("filesize", v)),
        (None, None) => None,
    };
    if let Some((key, v)) = size {
        s.push((
            "size".into(),
            storlab_units::Size(fio_size(v, &at(key), key)?).to_string(),
        ));
    }
    let threads: u64 = match j.val("numjobs") {
        Some(n) => n
            .parse()
            .map_err(|_| bad(&at("numjobs"), format!("numjobs={n}: expected a whole number")))?,
        None => 1,
    };
    // The engine; fio caps a synchronous engine's depth at 1 and says so.
    let engine = match j.val("ioengine").unwrap_or("psync") {
        "psync" => "psync",
        "sync" => {
            notes.push(format!(
                "job '{}': ioengine=sync (read/write after lseek) runs as psync (pread/pwrite)",
                j.name
            ));
            "psync"
        }
        "pvsync" => "pvsync",
        "io_uring" => "io_uring",
        "mmap" => "mmap",
        "null" => "null",
        "libaio" => {
            notes.push(format!("job '{}': ioengine=libaio runs as io_uring (the kernel's newer asynchronous interface; storlab has no libaio)", j.name));
            "io_uring"
        }
        other => {
            return Err(bad(
                &at("ioengine"),
                format!(
                    "ioengine={other}: storlab runs psync, sync, pvsync, io_uring, libaio (as io_uring), mmap and null"
                ),
            ))
        }
    };
    s.push(("engine".into(), engine.into()));
    if let Some(d) = j.val("iodepth") {
        let depth: u32 = d
            .parse()
            .map_err(|_| bad(&at("iodepth"), format!("iodepth={d}: expected a whole number")))?;
        if engine == "io_uring" {
            s.push(("iodepth".into(), depth.to_string()));
        } else if depth > 1 {
            notes.push(format!(
                "job '{}': iodepth={depth} with a synchronous engine ({engine}): capped at 1, as fio does",
                j.name
            ));
        }
    }
    let direct = match (j.get("direct"), j.get("buffered")) {
        (Some(d), _) => switch(d)?,
        (None, Some(b)) => !switch(b)?,
        (None, None) => false,
    };
    if direct {
        s.push(("direct".into(), "true".into()));
    }
    // Time: storlab's runtime is fio's runtime with time_based; fio's runtime alone ends a
    // pass early, which storlab does not do.
    match (j.val("runtime"), j.on("time_based")?) {
        (Some(r), true) => s.push(("runtime".into(), fio_time(r, &at("runtime"), "runtime")?)),
        (Some(r), false) => {
            return Err(bad(&at("runtime"), format!("runtime={r} without time_based: fio stops at whichever comes first, one pass over size or {r}; storlab runs either one pass (leave out runtime) or for a time (add time_based)")))
        }
        (None, true) => return Err(bad(&at("time_based"), "time_based without runtime: give runtime=SECONDS")),
        (None, false) => {}
    }
    if let Some(r) = j.val("ramp_time") {
        s.push(("ramp".into(), fio_time(r, &at("ramp_time"), "ramp_time")?));
    }
    let rate = match (j.val("rate"), j.val("rate_iops")) {
        (Some(_), Some(_)) => {
            return Err(bad(
                &at("rate_iops"),
                "rate and rate_iops together: storlab keeps one target rate",
            ))
        }
        (Some(r), None) => Some(("rate", r)),
        (None, Some(r)) => Some(("rate_iops", r)),
        (None, None) => None,
    };
    if let Some((key, r)) = rate {
        if r.contains(',') {
            return Err(bad(
                &at(key),
                format!("{key}={r}: separate read and write rates: storlab keeps one target rate per phase"),
            ));
        }
        let rate = match key {
            "rate" => format!("{}/s", fio_size(r, &at(key), key)?),
            _ => format!("{r}iops"),
        };
        s.push(("rate".into(), rate));
        s.push(("rate_per".into(), "worker".into()));
    }
    match (j.val("fsync"), j.on("end_fsync")?) {
        (Some(n), _) if n != "0" => s.push(("fsync".into(), n.into())),
        (_, true) => s.push(("fsync".into(), "end".into())),
        _ => {}
    }
    let verify = match j.val("verify") {
        None | Some("0") | Some("none") | Some("null") => false,
        Some(m) => {
            notes.push(format!(
                "job '{}': verify={m}: storlab stamps and checks its own header and CRC-32C in every 4 KiB",
                j.name
            ));
            true
        }
    };
    if verify {
        s.push(("verify".into(), "true".into()));
    }
    // Where: fio's directory and filename.
    let dir = j.val("directory").map(PathBuf::from);
    let targets = match j.val("filename") {
        Some(f) if f.contains(':') => {
            return Err(bad(
                &at("filename"),
                format!("filename={f}: several files per job: storlab has one file (or device) per worker"),
            ))
        }
        Some(f) => {
            if threads > 1 {
                notes.push(format!("job '{}': its {threads} jobs share filename={f}: storlab's workers share the file in equal regions, each as large as size", j.name));
            }
            vec![match &dir {
                Some(d) => d.join(f),
                None => PathBuf::from(f),
            }]
        }
        None => vec![dir.unwrap_or_else(|| PathBuf::from("."))],
    };
    let kinds = if verify && kind.writes() {
        notes.push(format!(
            "job '{}': a write with verify is followed by a read that verifies, as fio verifies after writing",
            j.name
        ));
        vec![kind, PhaseKind::Read]
    } else {
        vec![kind]
    };
    Ok(Converted {
        kinds,
        settings: s,
        targets,
        threads,
    })
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
    read_sections(text, path, 0, &mut sections)?;
    let mut ignored = Vec::new();
    let mut notes = Vec::new();
    let mut global: BTreeMap<String, Opt> = BTreeMap::new();
    let mut jobs: Vec<(Resolved, bool)> = Vec::new();
    let mut run_name = None;
    for sec in sections {
        let mut own: Vec<Opt> = Vec::new();
        for mut o in sec.opts {
            o.key = canonical(&o.key).to_string();
            if !KNOWN.contains(&o.key.as_str()) {
                if ignore_unknown {
                    ignored.push(format!("{} ({})", o.key, o.at));
                    continue;
                }
                return Err(bad(
                    &o.at,
                    format!(
                        "fio option '{}' is not one storlab can honour (storlab runs: {}); --ignore-unknown goes on without it and lists it",
                        o.key,
                        KNOWN.join(", ")
                    ),
                ));
            }
            own.push(o);
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
        let mut stonewall = false;
        for o in own {
            if o.key == "stonewall" {
                stonewall = switch(&o)?;
            }
            opts.insert(o.key.clone(), o);
        }
        // A stonewall in [global] applies to every job.
        if let Some(g) = global.get("stonewall") {
            stonewall |= switch(g)?;
        }
        for k in ["group_reporting", "new_group"] {
            if opts.contains_key(k) && !notes.iter().any(|n: &String| n.starts_with(k)) {
                notes.push(format!(
                    "{k}: storlab reports each phase as one group of all its workers"
                ));
            }
        }
        jobs.push((
            Resolved {
                name: sec.name.clone(),
                at: sec.at.clone(),
                opts,
            },
            stonewall,
        ));
    }
    if jobs.is_empty() {
        return Err(WorkloadError::invalid(
            path.display().to_string(),
            "no jobs: a fio job file needs at least one [section] besides [global]",
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
        for kind in &fc.kinds {
            let mut kv = fc.settings.clone();
            kv.push(("threads".into(), threads.to_string()));
            let mut settings = Settings::default();
            for (k, v) in &kv {
                apply_str(&mut settings, k, v, &format!("{} (job '{}')", first.at, first.name))?;
            }
            phases.push((*kind, settings, kv));
        }
    }
    let name = run_name.unwrap_or_else(|| {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "fio job".into())
    });
    let targets = targets.unwrap_or_default();
    let toml = to_toml(&name, &targets, &phases, path, &notes, &ignored);
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
            origin: format!("fio job file {}", path.display()),
            notes: job_notes,
            ..Job::default()
        },
        toml,
        notes,
        ignored,
    })
}

/// A phase as read: its kind, its settings, and the same settings as storlab text (for TOML).
type ReadPhase = (PhaseKind, Settings, Vec<(String, String)>);

/// The job as a storlab job file.
fn to_toml(
    name: &str,
    targets: &[PathBuf],
    phases: &[ReadPhase],
    path: &Path,
    notes: &[String],
    ignored: &[String],
) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""));
    let mut out = format!("# storlab's reading of the fio job file {}\n", path.display());
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
                "threads" | "iodepth" | "rwmix" | "direct" | "verify" => v.clone(),
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
    fn unknown_options_are_refused_by_name_and_line_or_listed() {
        let e = read("[x]\nrw=read\ngtod_reduce=1\n").unwrap_err().to_string();
        assert!(e.starts_with("t.fio:3") && e.contains("'gtod_reduce'"), "{e}");
        let j = parse("[x]\nrw=read\ngtod_reduce=1\nnorandommap\n", Path::new("t.fio"), true).unwrap();
        assert_eq!(j.ignored, vec!["gtod_reduce (t.fio:3)", "norandommap (t.fio:4)"]);
        assert!(j.job.notes.iter().any(|n| n.contains("gtod_reduce")));
    }

    #[test]
    fn bssplit_spreads_the_rest_over_blank_shares() {
        let j = read("[x]\nrw=randread\nbssplit=4k/50:64k/:1m/\n").unwrap();
        assert!(j.toml.contains("bs = \"4KiB:50,64KiB:25,1MiB:25\""), "{}", j.toml);
    }

    #[test]
    fn environment_variables_are_substituted_and_unset_ones_named() {
        std::env::set_var("STORLAB_FIO_TEST_BS", "128k");
        let j = read("[x]\nrw=read\nbs=${STORLAB_FIO_TEST_BS}\n").unwrap();
        assert!(j.toml.contains("bs = \"128KiB\""));
        let e = read("[x]\nrw=read\nbs=${STORLAB_FIO_NOT_SET}\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("t.fio:3") && e.contains("${STORLAB_FIO_NOT_SET} is not set"),
            "{e}"
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
