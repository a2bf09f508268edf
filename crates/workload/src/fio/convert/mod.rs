//! One fio job (its options resolved: globals, then its own) as storlab phase settings.
//!
//! fio's options.c is a table with one entry per option; so is this conversion: every option
//! storlab honours belongs to exactly one row of [`table::HANDLERS`], and the row's handler
//! is the only code that reads it (a test walks fio's examples with each handler restricted to
//! its own options). A handler writes storlab's typed [`Settings`], never text, through
//! [`Conversion::set`], which refuses by name two options that set one storlab setting to
//! different values (`steadystate_check_interval=1s` with `log_avg_msec=500`: one sample
//! interval). What one handler decides that a later one needs (the phase's kind, whether the
//! job is O_DIRECT, its engine) is a typed field of [`Conversion`], set by the row that owns
//! it; the rows run in the table's order.
//!
//! The files: table.rs (the rows), shape.rs (rw, block sizes, the mix, random offsets),
//! files.rs (where, how many, how large, zones, offsets), engine.rs (engine and depth, O_DIRECT,
//! O_SYNC, the page cache, allocation and fill_device), pace.rs (time, rates, think time,
//! flows, the latency target, steady state), data.rs (flushes, what is written, dedupe,
//! verification, errors gone on past, logs, the files' life), place.rs (CPUs, memory, I/O
//! priorities).

use std::collections::BTreeMap;
use std::path::PathBuf;

use storlab_model::plan::PhaseKind;
use storlab_model::values::BackendKind;

use super::bad;
use super::text::{At, Opt};
use super::value::{self, KbBase, TimeBase};
use crate::{Settings, WorkloadError};

mod data;
mod engine;
pub(crate) use engine::engine_names;
mod files;
mod pace;
mod place;
mod shape;
pub(crate) mod table;

/// Sets storlab settings by name and typed value for the fio option `$by`:
/// `set!(cx, "bs", bs = BlockSizes::Fixed(4096))`.
macro_rules! set {
    ($cx:expr, $by:expr, $($key:ident = $v:expr),+ $(,)?) => {
        $cx.set($by, $crate::Settings { $($key: Some($v),)+ ..$crate::Settings::default() })
    };
}
pub(crate) use set;

/// One fio job resolved: its options by fio's canonical name (globals before it, then its
/// own), each with its line.
pub struct Resolved {
    /// The section's name.
    pub name: String,
    /// Where the section starts.
    pub at: At,
    /// Its options.
    pub opts: BTreeMap<String, Opt>,
    /// How it counts a `k`.
    pub kb: KbBase,
    /// Its own options as fio's JSON lists them ("job options").
    pub given: super::GivenOptions,
}

impl Resolved {
    /// Option `k` as given.
    pub fn get(&self, k: &str) -> Option<&Opt> {
        self.opts.get(k)
    }
    /// Option `k`'s value.
    pub fn val(&self, k: &str) -> Option<&str> {
        self.get(k).and_then(|o| o.value.as_deref())
    }
    /// A switch or boolean: bare is 1.
    pub fn on(&self, k: &str) -> Result<bool, WorkloadError> {
        match self.get(k) {
            None => Ok(false),
            Some(o) => match o.value.as_deref() {
                None => Ok(true),
                Some(v) => value::switch(v).map_err(|e| bad(&o.at, format!("{k}={v}: {e}"))),
            },
        }
    }
}

/// A handler's view of the job: only the options of its row (checked in debug builds, so that
/// the tests prove that each option has one reader).
#[derive(Clone, Copy)]
pub(crate) struct Opts<'j> {
    job: &'j Resolved,
    mine: &'static [&'static str],
}

impl<'j> Opts<'j> {
    fn mine(&self, k: &str) {
        debug_assert!(
            self.mine.contains(&k),
            "a fio option read by a handler that does not own it: {k} (owners: {:?})",
            self.mine
        );
    }
    /// The job's name.
    pub(crate) fn name(&self) -> &'j str {
        &self.job.name
    }
    /// How the job counts a `k`.
    pub(crate) fn kb(&self) -> KbBase {
        self.job.kb
    }
    /// Whether option `k` was given.
    pub(crate) fn given(&self, k: &str) -> bool {
        self.mine(k);
        self.job.get(k).is_some()
    }
    /// Option `k`'s value.
    pub(crate) fn val(&self, k: &str) -> Option<&'j str> {
        self.mine(k);
        self.job.val(k)
    }
    /// A switch or boolean: bare is 1.
    pub(crate) fn on(&self, k: &str) -> Result<bool, WorkloadError> {
        self.mine(k);
        self.job.on(k)
    }
    /// A boolean with fio's default when not given.
    pub(crate) fn on_or(&self, k: &str, default: bool) -> Result<bool, WorkloadError> {
        if self.given(k) {
            self.on(k)
        } else {
            Ok(default)
        }
    }
    /// Where option `k` was given (the section when it was not).
    pub(crate) fn at(&self, k: &str) -> At {
        self.job
            .get(k)
            .map(|o| o.at.clone())
            .unwrap_or_else(|| self.job.at.clone())
    }
    /// `text` (option `k`'s value or a part of it) as bytes.
    pub(crate) fn bytes(&self, k: &str, text: &str) -> Result<u64, WorkloadError> {
        value::bytes(text, self.job.kb).map_err(|e| bad(&self.at(k), format!("{k}={text}: {e}")))
    }
    /// Option `k` as a whole number (sizes' units allowed).
    pub(crate) fn int(&self, k: &str) -> Result<Option<u64>, WorkloadError> {
        self.val(k).map(|v| self.bytes(k, v)).transpose()
    }
    /// Option `k` as a time in microseconds, bare numbers in `base`.
    pub(crate) fn time_us(&self, k: &str, base: TimeBase) -> Result<Option<u64>, WorkloadError> {
        self.val(k)
            .map(|v| value::time_us(v, base).map_err(|e| bad(&self.at(k), format!("{k}={v}: {e}"))))
            .transpose()
    }
    /// Refuses option `k` with `why`.
    pub(crate) fn refuse(&self, k: &str, why: impl Into<String>) -> WorkloadError {
        bad(
            &self.at(k),
            format!("{k}={}: {}", self.job.val(k).unwrap_or("1"), why.into()),
        )
    }
}

/// The state of one job's conversion: the settings the rows have set and which option set
/// each, and what the rows decided that the rows after them read.
pub(crate) struct Conversion<'n> {
    settings: Settings,
    /// For each storlab setting set: the fio option that set it, with its value.
    owners: BTreeMap<&'static str, String>,
    notes: &'n mut Vec<String>,
    job_name: String,
    /// The phase's kind (shape.rs: rw).
    pub(crate) kind: PhaseKind,
    /// `rw` as given, for notes.
    pub(crate) rw: String,
    /// The block size, when one fixed size (shape.rs).
    pub(crate) fixed_bs: Option<u64>,
    /// Where it runs (files.rs: filename, directory).
    pub(crate) targets: Vec<PathBuf>,
    /// The target is a named file or device, not a directory (files.rs: filename).
    pub(crate) named_file: bool,
    /// Each worker works on all the targets, its several files (files.rs: filename=a:b,
    /// opendir).
    pub(crate) all_targets: bool,
    /// fio's numjobs: the workers (files.rs).
    pub(crate) threads: u64,
    /// A size was given (files.rs).
    pub(crate) size_given: bool,
    /// O_DIRECT (engine.rs: direct, buffered).
    pub(crate) direct: bool,
    /// The engine storlab runs (engine.rs: ioengine).
    pub(crate) engine: BackendKind,
    /// The job writes with verification (data.rs: verify).
    pub(crate) verify: bool,
    /// A written block is read back soon after (data.rs: verify_backlog).
    pub(crate) backlog: bool,
    /// fio's do_verify: a verified write is followed by its verifying read (data.rs).
    pub(crate) verify_after_write: bool,
    /// fio's overwrite: a write of a laid-out file, storlab's rewrite (data.rs).
    pub(crate) overwrite: bool,
    /// fio's log files (data.rs).
    pub(crate) logs: Vec<FioLog>,
    /// fio's unlink: the job's files go when it ends (data.rs: lifecycle); else they stay.
    pub(crate) unlink: bool,
    /// fio's allow_mounted_write: it may write a device in use (data.rs: lifecycle).
    pub(crate) allow_mounted_write: bool,
}

impl Conversion<'_> {
    /// Sets `settings` for the fio option `by` (its canonical name). A storlab setting that
    /// another option set to another value is refused naming both.
    pub(crate) fn set(&mut self, by: &str, settings: Settings) -> Result<(), WorkloadError> {
        let mut merged = self.settings.clone();
        if let Err(key) = merged.merge_disjoint(&settings) {
            let theirs = self.owners.get(key).cloned().unwrap_or_default();
            let mine = settings.entries().into_iter().find(|(k, _)| *k == key).map(|e| e.1);
            let had = self
                .settings
                .entries()
                .into_iter()
                .find(|(k, _)| *k == key)
                .map(|e| e.1);
            return Err(WorkloadError::invalid(
                format!("job '{}'", self.job_name),
                format!(
                    "{by} sets storlab's {key} to {}, and {theirs} set it to {}: a phase has one {key}; give the two the same value, or leave one out",
                    mine.unwrap_or_default(),
                    had.unwrap_or_default()
                ),
            ));
        }
        for (key, _) in settings.entries() {
            self.owners.entry(key).or_insert_with(|| by.to_string());
        }
        self.settings = merged;
        Ok(())
    }

    /// A note about how the job is taken.
    pub(crate) fn note(&mut self, n: impl Into<String>) {
        self.notes.push(format!("job '{}': {}", self.job_name, n.into()));
    }

    /// What was set so far (a row reads its own earlier settings, or a decided fact).
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }
}

/// What one job asks of storlab: its phase kinds (a verified write adds the read that
/// verifies), storlab's settings, where it runs, how many workers.
pub struct Converted {
    pub kinds: Vec<PhaseKind>,
    pub settings: Settings,
    pub targets: Vec<PathBuf>,
    /// Each worker works on all the targets (fio's filename=a:b, opendir).
    pub all_targets: bool,
    pub threads: u64,
    /// fio's log files the job asks for.
    pub logs: Vec<FioLog>,
    /// The files it makes stay when the run ends (fio's unlink=0, its default).
    pub keep_files: bool,
    /// fio's allow_mounted_write=1: it may write a device that is in use.
    pub allow_mounted_write: bool,
}

/// One of fio's log files a job asks for (write_bw_log and its kin).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FioLog {
    /// "bw", "iops", "lat", "slat", "clat" or "clat_hist" (write_hist_log).
    pub what: String,
    /// The file name's prefix (the option's value, else the job's name).
    pub prefix: String,
    /// fio's per_job_logs (on by default): one file per job, its number in the name.
    pub per_job: bool,
    /// fio's number of the job's first thread (1 for the first job of a run; each job
    /// counts its numjobs), set as the jobs are laid out.
    pub thread: u64,
    /// fio's log_offset: each line has an offset column (0 in an averaged line, as fio's).
    pub offset: bool,
    /// fio's log_hist_coarseness: a histogram log line sums 2^N of fio's bins into one.
    pub hist_coarseness: u32,
    /// A line per I/O (fio without log_avg_msec), not per interval.
    pub per_io: bool,
}

impl FioLog {
    /// fio's file name of clone `clone` (0 for the job's first worker): `PREFIX_bw.N.log`, N the
    /// clone's thread number, with per_job_logs (fio's default); `PREFIX_bw.log`, every clone's
    /// samples together, without.
    pub fn file_name(&self, clone: u64) -> String {
        if self.per_job {
            format!("{}_{}.{}.log", self.prefix, self.what, self.thread + clone)
        } else {
            self.shared_file_name()
        }
    }

    /// `PREFIX_bw.log`: the file of every clone's samples together (per_job_logs=0, or a run
    /// stored before storlab kept each worker's samples).
    pub fn shared_file_name(&self) -> String {
        format!("{}_{}.log", self.prefix, self.what)
    }
}

/// A time in microseconds as storlab's duration.
pub(crate) fn micros(us: u64) -> storlab_units::Duration {
    storlab_units::Duration(us * 1000)
}

/// fio's bwavgtime and iopsavgtime default, ns.
const FIO_AVG_TIME_NS: u64 = 500_000_000;

/// Converts one job: each row of the table in order, then the phases it makes.
pub fn convert(j: &Resolved, notes: &mut Vec<String>) -> Result<Converted, WorkloadError> {
    let mut cx = Conversion {
        settings: Settings::default(),
        owners: BTreeMap::new(),
        notes,
        job_name: j.name.clone(),
        kind: PhaseKind::Read,
        rw: String::new(),
        fixed_bs: None,
        targets: Vec::new(),
        named_file: false,
        all_targets: false,
        threads: 1,
        size_given: false,
        direct: false,
        engine: BackendKind::Psync,
        verify: false,
        backlog: false,
        verify_after_write: true,
        overwrite: false,
        logs: Vec::new(),
        unlink: false,
        allow_mounted_write: false,
    };
    for row in table::HANDLERS {
        if let table::Owner::Convert(handle) = row.owner {
            handle(
                Opts {
                    job: j,
                    mine: row.options,
                },
                &mut cx,
            )?;
        }
    }
    // fio samples bandwidth and IOPS every 500 ms (bwavgtime, iopsavgtime) unless told
    // otherwise: storlab's samples, which its bw and iops figures come from, likewise.
    if cx.settings.interval.is_none() {
        cx.settings.interval = Some(storlab_units::Duration(FIO_AVG_TIME_NS));
    }
    let kind = if cx.overwrite && cx.kind == PhaseKind::Write {
        PhaseKind::Rewrite
    } else {
        cx.kind
    };
    let kinds = if cx.verify && kind.writes() && !cx.backlog && cx.verify_after_write {
        cx.note("a write with verify is followed by a read that verifies, as fio verifies after writing");
        vec![kind, PhaseKind::Read]
    } else {
        vec![kind]
    };
    Ok(Converted {
        kinds,
        settings: cx.settings,
        targets: cx.targets,
        all_targets: cx.all_targets,
        threads: cx.threads,
        logs: cx.logs,
        keep_files: !cx.unlink,
        allow_mounted_write: cx.allow_mounted_write,
    })
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    fn read(text: &str) -> Result<crate::fio::FioJob, crate::WorkloadError> {
        crate::fio::parse(text, Path::new("t.fio"), false)
    }

    #[test]
    fn two_options_that_set_one_setting_differently_are_refused_by_name() {
        // fio checks steady state every second and averages its logs over 500 ms; storlab has
        // one sample interval per phase, so it says which two options disagree.
        let e = read("[x]\nrw=randread\nsize=1m\nsteadystate=iops:5%\nss_dur=10s\nsteadystate_check_interval=1s\nwrite_bw_log=x\nlog_avg_msec=500\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("log_avg_msec sets storlab's interval to 500ms, and steadystate_check_interval set it to 1s"),
            "{e}"
        );
        // The same value from both is one setting, written once.
        let j = read("[x]\nrw=randread\nsize=1m\nsteadystate=iops:5%\nss_dur=10s\nwrite_bw_log=x\nlog_avg_msec=1000\n")
            .unwrap();
        assert_eq!(j.toml.matches("interval = ").count(), 1, "{}", j.toml);
        assert_eq!(j.job.phases[0].1.interval, Some(storlab_units::Duration(1_000_000_000)));
    }

    #[test]
    fn verify_pattern_fills_the_buffers_over_zero_buffers_as_in_fio() {
        let j = read("[x]\nrw=write\nsize=1m\nverify=crc32c\nverify_pattern=0xaa55\nzero_buffers=1\n").unwrap();
        assert_eq!(
            j.job.phases[0].1.pattern,
            Some(storlab_model::values::DataPattern::Bytes(vec![0xaa, 0x55]))
        );
        assert!(
            j.notes
                .iter()
                .any(|n| n.contains("zero_buffers: verify_pattern fills the buffers instead")),
            "{:?}",
            j.notes
        );
    }
}
