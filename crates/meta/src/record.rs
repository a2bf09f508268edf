//! Metadata workloads stored as runs: each kind of `storlab meta` run handed to the session's
//! one run path (`storlab_session::run_phases`) as its [`Phases`], with the run's record
//! (kind `meta`, the request as its job, the environment), and the untar study's points saved
//! as one sweep study over concurrency.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use storlab_model::env::Environment;
use storlab_model::meta::MetaOp;
use storlab_model::run::{NewRun, Phase, PhaseName, PhaseParams, RunKind, RunStatus, Tag};
use storlab_model::study::{Member, NewStudy, Role, StudyParams, SweepParams};
use storlab_session::team::{run_team_phases, Team};
use storlab_session::{Executed, IntervalObserver, LiveRun, Phases, RunOptions, SessionError};
use storlab_store::Store;

use crate::layout::Layout;
use crate::untar::{Archive, UntarPlan};

/// What every meta run is stored with, and who watches it.
#[derive(Clone, Copy)]
pub struct Record<'a> {
    /// The command line.
    pub command: &'a str,
    /// The user's tags.
    pub tags: &'a [Tag],
    /// The live view (the status line), told as the run goes.
    pub live: Option<&'a dyn LiveRun>,
}

/// A meta run's record as it starts, with its environment, and its options.
fn begin<'a>(
    target: &Path,
    job_name: String,
    job: serde_json::Value,
    rec: Record<'a>,
) -> (Environment, NewRun, RunOptions<'a>) {
    let env = storlab_env::capture(std::slice::from_ref(&target.to_path_buf()));
    let new_run = NewRun {
        kind: RunKind::Meta,
        host: env.host.clone(),
        job_name: Some(job_name),
        job,
        command: rec.command.to_string(),
        tags: rec.tags.to_vec(),
    };
    let options = RunOptions {
        kind: RunKind::Meta,
        tags: rec.tags,
        allow_devices: &[],
        keep: true,
        command: rec.command,
        control: None,
        live: rec.live,
    };
    (env, new_run, options)
}

/// Stores a meta run of `phases` on `target` through the session's one run path.
fn store_run(
    store: &mut Store,
    target: &Path,
    job_name: String,
    job: serde_json::Value,
    phases: &mut dyn Phases,
    rec: Record,
) -> Result<Executed, SessionError> {
    let (env, new_run, options) = begin(target, job_name, job, rec);
    storlab_session::run_phases(
        store,
        &new_run,
        &env,
        std::slice::from_ref(&target.to_path_buf()),
        phases,
        &options,
    )
}

/// The metadata phases, for the session to run and store.
struct MetaPhases<'a> {
    layout: &'a mut Layout,
}

impl Phases for MetaPhases<'_> {
    fn count(&self) -> usize {
        self.layout.job.phases.len()
    }

    fn describe(&self, seq: usize) -> (PhaseName, Option<f64>, Option<u64>, bool) {
        let op = self.layout.job.phases[seq];
        let making = matches!(op, MetaOp::Create | MetaOp::Mkdir);
        let runtime = self.layout.job.runtime.filter(|_| making).map(|d| d.as_secs_f64());
        (PhaseName::Other(op.name().into()), runtime, None, false)
    }

    fn run(
        &mut self,
        seq: usize,
        stop: &AtomicBool,
        _observer: Option<&dyn IntervalObserver>,
    ) -> Result<Phase, Box<dyn std::error::Error + Send + Sync>> {
        let op = self.layout.job.phases[seq];
        let watch = storlab_session::evidence::Watch::for_paths(&[self.layout.root.as_path()]);
        let mut o = crate::phase::run(self.layout, op, stop);
        (o.result.disks, o.result.context) = watch.finish();
        Ok(Phase {
            seq: seq as u32,
            kind: PhaseName::Other(op.name().into()),
            params: PhaseParams::Meta(o.params),
            result: o.result,
            cache_flattered: false,
        })
    }
}

/// Runs the prepared and made `layout`'s phases as one stored run.
pub fn run_job(store: &mut Store, layout: &mut Layout, rec: Record) -> Result<Executed, SessionError> {
    let (target, name, doc) = job_record(layout);
    store_run(store, &target, name, doc, &mut MetaPhases { layout }, rec)
}

/// [`run_job`] on one rank of a run many processes run together (`mpirun storlab meta`):
/// every rank runs its own layout's phases, rank 0 passes the store and gets the one run back
/// (`storlab_session::team`).
pub fn run_job_team(
    team: &dyn Team,
    store: Option<&mut Store>,
    layout: &mut Layout,
    rec: Record,
) -> Result<Option<Executed>, SessionError> {
    let (target, name, doc) = job_record(layout);
    let (env, new_run, options) = begin(&target, name, doc, rec);
    run_team_phases(team, store, &new_run, &env, &mut MetaPhases { layout }, &options, None)
}

/// A meta job's target, name and record.
fn job_record(layout: &Layout) -> (PathBuf, String, serde_json::Value) {
    let job = layout.job.clone();
    let name = format!(
        "meta {}",
        job.phases.iter().map(|p| p.name()).collect::<Vec<_>>().join("+")
    );
    let doc = serde_json::json!({ "meta": {
        "target": job.target, "workers": job.workers, "items_per_worker": job.items_per_worker,
        "runtime_seconds": job.runtime.map(|d| d.as_secs_f64()), "phases": job.phases,
        "tree": job.tree, "shared_dir": job.shared_dir, "file_size": job.file_size, "sync": job.sync,
        "root": layout.root,
    }});
    (job.target, name, doc)
}

/// `storlab meta walk`'s request.
#[derive(Debug, Clone)]
pub struct WalkRequest {
    /// The directory walked.
    pub dir: PathBuf,
    /// Walker threads.
    pub threads: usize,
    /// Also time `du -s`.
    pub compare_du: bool,
    /// Drop the kernel's caches before each.
    pub cold: bool,
}

/// `storlab meta walk`'s flags, declared here once (the binary flattens them).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct WalkFlags {
    /// The directory to walk.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
    /// Walker threads (default: twice the CPUs, as storlab scan).
    #[arg(long, value_name = "N")]
    pub threads: Option<usize>,
    /// Also time `du -s DIR`, as a second phase of the run.
    #[arg(long = "compare-du")]
    pub compare_du: bool,
    /// Drop the kernel's page, dentry and inode caches before each walk (needs root), so that
    /// the walk reads the device rather than memory.
    #[arg(long)]
    pub cold: bool,
}

impl WalkRequest {
    /// The walk `storlab meta walk DIR` asks for: DIR must be a directory, `--cold` needs root
    /// (it drops the kernel's caches), `--threads` defaults to twice the CPUs, as storlab scan.
    pub fn new(f: &WalkFlags) -> Result<WalkRequest, crate::MetaError> {
        let (dir, threads, compare_du, cold) = (f.dir.clone(), f.threads, f.compare_du, f.cold);
        let invalid = crate::MetaError::Invalid;
        match std::fs::metadata(&dir).map(|m| m.is_dir()) {
            Ok(true) => {}
            Ok(false) => return Err(invalid(format!("{}: not a directory", dir.display()))),
            Err(e) => return Err(invalid(format!("{}: {e}", dir.display()))),
        }
        if cold && !rustix::process::geteuid().is_root() {
            return Err(invalid("--cold drops the kernel's caches, which needs root".into()));
        }
        let threads = match threads {
            Some(0) => return Err(invalid("--threads 0: at least 1".into())),
            Some(n) => n,
            None => std::thread::available_parallelism().map(|n| n.get() * 2).unwrap_or(4),
        };
        Ok(WalkRequest {
            dir,
            threads,
            compare_du,
            cold,
        })
    }
}

/// The walk and, with --compare-du, du: the phases of a `storlab meta walk` run.
struct WalkPhases<'a> {
    a: &'a WalkRequest,
    threads: usize,
    /// The walk's count of the entries, for du's phase (du reports none).
    entries: u64,
}

impl Phases for WalkPhases<'_> {
    fn count(&self) -> usize {
        if self.a.compare_du {
            2
        } else {
            1
        }
    }

    fn describe(&self, seq: usize) -> (PhaseName, Option<f64>, Option<u64>, bool) {
        (PhaseName::Other(["walk", "du"][seq].into()), None, None, false)
    }

    fn run(
        &mut self,
        seq: usize,
        _stop: &AtomicBool,
        _observer: Option<&dyn IntervalObserver>,
    ) -> Result<Phase, Box<dyn std::error::Error + Send + Sync>> {
        if self.a.cold {
            crate::walk::drop_caches()?;
        }
        let (params, result) = if seq == 0 {
            let o = crate::walk::walk(&self.a.dir, self.threads)?;
            self.entries = o.params.entries;
            (PhaseParams::Meta(o.params), o.result)
        } else {
            let (seconds, (cpu_user, cpu_sys), version) = crate::walk::du(&self.a.dir)?;
            let all_done = storlab_model::result::Throughput::new(seconds, 0, self.entries);
            let params = storlab_model::run::ImportedParams {
                tool: version,
                test: Some(format!("du -s {}", self.a.dir.display())),
                workers: Some(1),
                notes: vec![format!(
                    "du's time from its start to its end, measured by storlab; the entries are the walk's count of the same directory ({})",
                    self.entries
                )],
                ..Default::default()
            };
            let result = storlab_model::result::PhaseResult {
                ops_read: self.entries,
                all_done: all_done.clone(),
                first_done: all_done,
                cpu_user,
                cpu_sys,
                ..Default::default()
            };
            (PhaseParams::Imported(params), result)
        };
        Ok(Phase {
            seq: seq as u32,
            kind: PhaseName::Other(["walk", "du"][seq].into()),
            params,
            result,
            cache_flattered: false,
        })
    }
}

/// Runs a walk (and du) as one stored run.
pub fn run_walk(store: &mut Store, w: &WalkRequest, rec: Record) -> Result<Executed, SessionError> {
    let name = if w.compare_du { "meta walk+du" } else { "meta walk" };
    let doc = serde_json::json!({ "walk": {
        "dir": w.dir, "threads": w.threads, "compare_du": w.compare_du, "cold": w.cold,
    }});
    let mut phases = WalkPhases {
        a: w,
        threads: w.threads,
        entries: 0,
    };
    store_run(store, &w.dir, name.into(), doc, &mut phases, rec)
}

/// The untar of one concurrency: the phase of one point of a `storlab meta untar` study.
struct UntarPhase<'a> {
    archive: &'a Archive,
    root: &'a std::path::Path,
    copies: u32,
    fsync: bool,
}

impl Phases for UntarPhase<'_> {
    fn count(&self) -> usize {
        1
    }

    fn describe(&self, _seq: usize) -> (PhaseName, Option<f64>, Option<u64>, bool) {
        (PhaseName::Other("untar".into()), None, None, false)
    }

    fn run(
        &mut self,
        seq: usize,
        stop: &AtomicBool,
        _observer: Option<&dyn IntervalObserver>,
    ) -> Result<Phase, Box<dyn std::error::Error + Send + Sync>> {
        let o = crate::untar::extract(self.archive, self.root, self.copies, self.fsync, stop);
        Ok(Phase {
            seq: seq as u32,
            kind: PhaseName::Other("untar".into()),
            params: PhaseParams::Meta(o.params),
            result: o.result,
            cache_flattered: false,
        })
    }
}

/// `storlab meta untar`'s request.
#[derive(Debug, Clone)]
pub struct UntarRequest<'a> {
    /// Where the copies go: storlab's own directory in the target.
    pub root: &'a Path,
    /// The target the user gave (its environment is stored).
    pub target: &'a Path,
    /// The archive, inspected.
    pub archive: &'a Archive,
    /// Copies at once, one point each.
    pub levels: &'a [u32],
    /// fsync each file.
    pub fsync: bool,
    /// Leave the last point's copies.
    pub keep_last: bool,
    /// The shape generated, when the archive was (stored with each run).
    pub generated: Option<&'a str>,
}

impl<'a> UntarRequest<'a> {
    /// The request a prepared untar study's runs take.
    pub fn of(plan: &'a UntarPlan) -> UntarRequest<'a> {
        UntarRequest {
            root: &plan.root,
            target: &plan.flags.target,
            archive: &plan.archive,
            levels: &plan.levels,
            fsync: plan.flags.fsync,
            keep_last: plan.flags.keep,
            generated: plan.flags.generate.as_deref(),
        }
    }
}

/// What an untar study left.
#[derive(Debug, Clone, Copy)]
pub struct UntarStudy {
    /// The stored study.
    pub study_id: i64,
    /// Ctrl-C ended it early.
    pub aborted: bool,
    /// A point's run ended otherwise than well.
    pub failed: bool,
}

/// Runs each concurrency as a stored run and saves them as one sweep study over it.
pub fn run_untar(store: &mut Store, u: &UntarRequest, rec: Record) -> Result<UntarStudy, SessionError> {
    let archive = u.archive;
    let n = u.levels.len();
    let mut members = Vec::new();
    let (mut aborted, mut failed) = (false, false);
    for (i, &copies) in u.levels.iter().enumerate() {
        if let Some(l) = rec.live {
            l.study_progress(i, n, &format!("concurrency={copies}"));
        }
        let doc = serde_json::json!({ "untar": {
            "archive": archive.path, "compressed_bytes": archive.compressed_bytes, "files": archive.files,
            "dirs": archive.dirs, "links": archive.links, "bytes": archive.bytes, "copies": copies,
            "fsync": u.fsync, "generated": u.generated,
        }});
        let mut phase = UntarPhase {
            archive,
            root: u.root,
            copies,
            fsync: u.fsync,
        };
        let e = store_run(store, u.target, format!("meta untar ×{copies}"), doc, &mut phase, rec)?;
        // The copies go before the next point, untimed (with keep_last, the last point's stay).
        if !(u.keep_last && i + 1 == n) {
            for c in 0..copies {
                let _ = std::fs::remove_dir_all(u.root.join(format!("c{c}")));
            }
        }
        members.push(Member {
            run_id: e.run_id,
            role: Role::Point {
                values: vec![("concurrency".into(), copies.to_string())],
            },
        });
        match e.status {
            RunStatus::Aborted => {
                aborted = true;
                break;
            }
            RunStatus::Ok => {}
            _ => failed = true,
        }
    }
    let study_id = store.save_study(&NewStudy {
        params: StudyParams::Sweep(SweepParams {
            vary: vec!["concurrency".into()],
            points: vec![("concurrency".into(), u.levels.iter().map(|c| c.to_string()).collect())],
            command: rec.command.to_string(),
            skipped: 0,
            note: Some(format!(
                "untar of {}: {} files, {} directories, {} links, {} in files ({} compressed); each point extracts that many copies at once",
                archive.path.file_name().unwrap_or_default().to_string_lossy(),
                archive.files,
                archive.dirs,
                archive.links,
                storlab_units::Size(archive.bytes).human(),
                storlab_units::Size(archive.compressed_bytes).human()
            )),
        }),
        members,
        events: Vec::new(),
        task_samples: Vec::new(),
    })?;
    Ok(UntarStudy {
        study_id,
        aborted,
        failed,
    })
}
