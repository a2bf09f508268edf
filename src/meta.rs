//! `storlab meta`: a metadata workload (crates/meta) run through the session's one run path
//! and stored as a run of kind `meta`, one phase per operation.

use std::sync::atomic::AtomicBool;

use anyhow::Result;
use storlab_meta::job::MetaJob;
use storlab_meta::layout::Layout;
use storlab_model::meta::{MetaOp, TreeShape};
use storlab_model::run::{NewRun, Phase, PhaseName, PhaseParams, RunKind};
use storlab_session::{IntervalObserver, LiveRun, Phases, RunOptions};

use crate::cli::{MetaArgs, MetaCmd, UntarArgs, WalkArgs};
use crate::results::{open_new, print_run};
use crate::status::StatusLine;
use crate::usage;

/// The phases when none is given: mdtest's directory and file phases.
const DEFAULT_PHASES: [MetaOp; 5] = [
    MetaOp::Mkdir,
    MetaOp::Create,
    MetaOp::Stat,
    MetaOp::Remove,
    MetaOp::Rmdir,
];

/// The request from the flags.
fn job(a: &MetaArgs) -> Result<MetaJob> {
    let mut phases = Vec::new();
    for p in a
        .phases
        .iter()
        .flat_map(|p| p.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        phases.push(MetaOp::from_name(p).ok_or_else(|| {
            usage(format!(
                "--phase {p}: not a metadata phase; expected {}",
                MetaOp::names()
            ))
        })?);
    }
    if phases.is_empty() {
        phases = DEFAULT_PHASES.to_vec();
    }
    let tree = match a.tree.split_once(',') {
        Some((d, b)) => match (d.trim().parse(), b.trim().parse()) {
            (Ok(depth), Ok(branch)) => TreeShape { depth, branch },
            _ => return Err(usage(format!("--tree {}: expected DEPTH,BRANCH such as 2,10", a.tree))),
        },
        None => return Err(usage(format!("--tree {}: expected DEPTH,BRANCH such as 2,10", a.tree))),
    };
    let file_size: storlab_units::Size = a
        .file_size
        .parse()
        .map_err(|e| usage(format!("--file-size {}: {e}", a.file_size)))?;
    let runtime = a
        .runtime
        .as_deref()
        .map(|r| {
            r.parse::<storlab_units::Duration>()
                .map(|d| d.std())
                .map_err(|e| usage(format!("--runtime {r}: {e}")))
        })
        .transpose()?;
    Ok(MetaJob {
        target: a
            .target
            .clone()
            .ok_or_else(|| usage("--target DIR: the directory to work in"))?,
        workers: a.threads,
        items_per_worker: a.files_per_thread,
        runtime,
        phases,
        tree,
        shared_dir: !a.unique_dir,
        file_size: file_size.0,
        sync: a.sync,
        keep: a.keep,
    })
}

/// Stores a meta run of `phases` on `target` through the session's one run path, the status
/// line (when there is one) told as it goes.
fn store_meta_run(
    store: &mut storlab_store::Store,
    new_run: &NewRun,
    env: &storlab_model::env::Environment,
    target: &std::path::Path,
    phases: &mut dyn Phases,
    status: Option<&StatusLine>,
) -> Result<storlab_session::Executed, storlab_session::SessionError> {
    storlab_session::run_phases(
        store,
        new_run,
        env,
        std::slice::from_ref(&target.to_path_buf()),
        phases,
        &RunOptions {
            kind: RunKind::Meta,
            tags: &new_run.tags,
            allow_devices: &[],
            keep: true,
            command: &new_run.command,
            control: None,
            live: status.map(|s| s as &dyn LiveRun),
        },
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
        let o = storlab_meta::phase::run(self.layout, op, stop);
        Ok(Phase {
            seq: seq as u32,
            kind: PhaseName::Other(op.name().into()),
            params: PhaseParams::Meta(o.params),
            result: o.result,
            cache_flattered: false,
        })
    }
}

/// `storlab meta`.
pub fn meta(a: MetaArgs) -> Result<u8> {
    match a.what {
        Some(MetaCmd::Walk(w)) => return walk(w),
        Some(MetaCmd::Untar(u)) => return untar(u),
        None => {}
    }
    let job = job(&a)?;
    // Refusals come before anything is made or stored.
    let mut layout = Layout::prepare(&job).map_err(|e| usage(e.to_string()))?;
    let mut store = open_new(&a.output.db)?;
    let command = crate::commands::command_line();
    let status = crate::commands::status_line(&a.output, a.quiet, None);
    let env = storlab_env::capture(std::slice::from_ref(&job.target));
    layout.make()?;
    let new_run = NewRun {
        kind: RunKind::Meta,
        host: env.host.clone(),
        job_name: Some(format!(
            "meta {}",
            job.phases.iter().map(|p| p.name()).collect::<Vec<_>>().join("+")
        )),
        job: serde_json::json!({ "meta": {
            "target": job.target, "workers": job.workers, "items_per_worker": job.items_per_worker,
            "runtime_seconds": job.runtime.map(|d| d.as_secs_f64()), "phases": job.phases,
            "tree": job.tree, "shared_dir": job.shared_dir, "file_size": job.file_size, "sync": job.sync,
            "root": layout.root,
        }}),
        command: command.clone(),
        tags: a.tags.clone(),
    };
    let ran = store_meta_run(
        &mut store,
        &new_run,
        &env,
        &job.target,
        &mut MetaPhases { layout: &mut layout },
        status.as_deref(),
    );
    drop(status);
    if job.keep {
        eprintln!("storlab: kept the tree in {}", layout.root.display());
    } else {
        layout.remove()?;
    }
    let e = ran?;
    print_run(&store, e.run_id, false, &a.output)?;
    eprintln!("storlab: stored as run {} in {}", e.run_id, store.target());
    Ok(crate::commands::code_of(e.status))
}

/// The walk and, with --compare-du, du: the phases of a `storlab meta walk` run.
struct WalkPhases<'a> {
    a: &'a WalkArgs,
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
            storlab_meta::walk::drop_caches()?;
        }
        let (params, result) = if seq == 0 {
            let o = storlab_meta::walk::walk(&self.a.dir, self.threads)?;
            self.entries = o.params.entries;
            (PhaseParams::Meta(o.params), o.result)
        } else {
            let (seconds, (cpu_user, cpu_sys), version) = storlab_meta::walk::du(&self.a.dir)?;
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

/// `storlab meta walk DIR`.
fn walk(a: WalkArgs) -> Result<u8> {
    let dir_ok = std::fs::metadata(&a.dir).map(|m| m.is_dir());
    match dir_ok {
        Ok(true) => {}
        Ok(false) => return Err(usage(format!("{}: not a directory", a.dir.display()))),
        Err(e) => return Err(usage(format!("{}: {e}", a.dir.display()))),
    }
    // SAFETY: geteuid has no preconditions and cannot fail.
    if a.cold && unsafe { libc::geteuid() } != 0 {
        return Err(usage("--cold drops the kernel's caches, which needs root"));
    }
    let threads = match a.threads {
        Some(0) => return Err(usage("--threads 0: at least 1")),
        Some(n) => n,
        None => std::thread::available_parallelism().map(|n| n.get() * 2).unwrap_or(4),
    };
    let mut store = open_new(&a.output.db)?;
    let command = crate::commands::command_line();
    let status = crate::commands::status_line(&a.output, a.quiet, None);
    let env = storlab_env::capture(std::slice::from_ref(&a.dir));
    let new_run = NewRun {
        kind: RunKind::Meta,
        host: env.host.clone(),
        job_name: Some(if a.compare_du { "meta walk+du" } else { "meta walk" }.into()),
        job: serde_json::json!({ "walk": {
            "dir": a.dir, "threads": threads, "compare_du": a.compare_du, "cold": a.cold,
        }}),
        command: command.clone(),
        tags: a.tags.clone(),
    };
    let e = store_meta_run(
        &mut store,
        &new_run,
        &env,
        &a.dir,
        &mut WalkPhases {
            a: &a,
            threads,
            entries: 0,
        },
        status.as_deref(),
    );
    drop(status);
    let e = e?;
    print_run(&store, e.run_id, false, &a.output)?;
    eprintln!("storlab: stored as run {} in {}", e.run_id, store.target());
    Ok(crate::commands::code_of(e.status))
}

/// The untar of one concurrency: the phase of one point of a `storlab meta untar` study.
struct UntarPhase<'a> {
    archive: &'a storlab_meta::untar::Archive,
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
        let o = storlab_meta::untar::extract(self.archive, self.root, self.copies, self.fsync, stop);
        Ok(Phase {
            seq: seq as u32,
            kind: PhaseName::Other("untar".into()),
            params: PhaseParams::Meta(o.params),
            result: o.result,
            cache_flattered: false,
        })
    }
}

/// `--concurrency 1,2,4`: the copies extracted at once at each point.
fn concurrency(list: &str) -> Result<Vec<u32>> {
    let mut out = Vec::new();
    for part in list.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        match part.parse::<u32>() {
            Ok(n) if (1..=256).contains(&n) => out.push(n),
            _ => {
                return Err(usage(format!(
                    "--concurrency {part}: a whole number of copies from 1 to 256"
                )))
            }
        }
    }
    if out.is_empty() {
        return Err(usage(
            "--concurrency: give the copies to extract at once, e.g. 1,2,4,8,16",
        ));
    }
    Ok(out)
}

/// `storlab meta untar`.
fn untar(a: UntarArgs) -> Result<u8> {
    use storlab_meta::untar;
    let levels = concurrency(&a.concurrency)?;
    match std::fs::metadata(&a.target) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return Err(usage(format!("--target {}: not a directory", a.target.display()))),
        Err(e) => return Err(usage(format!("--target {}: {e}", a.target.display()))),
    }
    let given = match (&a.archive, a.generate.as_deref()) {
        (Some(p), None) => Some(untar::inspect(p).map_err(|e| usage(e.to_string()))?),
        (None, Some("kernel-like")) if a.files > 0 => None,
        (None, Some("kernel-like")) => return Err(usage("--files 0: the generated archive needs files")),
        (None, Some(other)) => {
            return Err(usage(format!(
                "--generate {other}: the shape storlab makes is kernel-like"
            )))
        }
        _ => {
            return Err(usage(
                "give --archive FILE (.tar, .tar.gz, .tar.xz) or --generate kernel-like",
            ))
        }
    };
    let root = a.target.join(format!("storlab-untar-{}", std::process::id()));
    std::fs::create_dir(&root).map_err(|e| usage(format!("{}: {e}", root.display())))?;
    let outcome = untar_points(&a, &levels, given, &root);
    if a.keep {
        eprintln!("storlab: kept {}", root.display());
    } else if let Err(e) = std::fs::remove_dir_all(&root) {
        eprintln!("storlab: warning: could not remove {}: {e}", root.display());
    }
    outcome
}

/// The points of an untar study, run in storlab's directory `root`.
fn untar_points(
    a: &UntarArgs,
    levels: &[u32],
    given: Option<storlab_meta::untar::Archive>,
    root: &std::path::Path,
) -> Result<u8> {
    use storlab_meta::untar;
    let archive = match given {
        Some(x) => x,
        None => untar::generate(&root.join("kernel-like.tar.gz"), a.files)?,
    };
    let most = *levels.iter().max().unwrap_or(&1) as u64;
    storlab_meta::job::check_inodes(&a.target, archive.entries() * most).map_err(|e| usage(e.to_string()))?;
    let mut store = open_new(&a.output.db)?;
    let command = crate::commands::command_line();
    let n = levels.len();
    let status = crate::commands::status_line(
        &a.output,
        a.quiet,
        Some(format!("untar of {} at {n} concurrencies", archive.path.display())),
    );
    let env = storlab_env::capture(std::slice::from_ref(&a.target));
    let mut members = Vec::new();
    let (mut aborted, mut failed) = (false, false);
    for (i, &copies) in levels.iter().enumerate() {
        if let Some(s) = &status {
            s.study_progress(i, n, &format!("concurrency={copies}"));
        }
        let new_run = NewRun {
            kind: RunKind::Meta,
            host: env.host.clone(),
            job_name: Some(format!("meta untar ×{copies}")),
            job: serde_json::json!({ "untar": {
                "archive": archive.path, "compressed_bytes": archive.compressed_bytes, "files": archive.files,
                "dirs": archive.dirs, "links": archive.links, "bytes": archive.bytes, "copies": copies,
                "fsync": a.fsync, "generated": a.generate,
            }}),
            command: command.clone(),
            tags: a.tags.clone(),
        };
        let e = store_meta_run(
            &mut store,
            &new_run,
            &env,
            &a.target,
            &mut UntarPhase {
                archive: &archive,
                root,
                copies,
                fsync: a.fsync,
            },
            status.as_deref(),
        )?;
        // The copies go before the next point, untimed (with --keep, the last point's stay).
        if !(a.keep && i + 1 == n) {
            for c in 0..copies {
                let _ = std::fs::remove_dir_all(root.join(format!("c{c}")));
            }
        }
        members.push(storlab_model::study::Member {
            run_id: e.run_id,
            role: storlab_model::study::Role::Point {
                values: vec![("concurrency".into(), copies.to_string())],
            },
        });
        match e.status {
            storlab_model::run::RunStatus::Aborted => {
                aborted = true;
                break;
            }
            storlab_model::run::RunStatus::Ok => {}
            _ => failed = true,
        }
    }
    drop(status);
    let id = store.save_study(&storlab_model::study::NewStudy {
        params: storlab_model::study::StudyParams::Sweep(storlab_model::study::SweepParams {
            vary: vec!["concurrency".into()],
            points: vec![("concurrency".into(), levels.iter().map(|c| c.to_string()).collect())],
            command: command.clone(),
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
    crate::results::print_study(&store, id, a.output.json)?;
    eprintln!("storlab: stored study {id} in {}", store.target());
    Ok(if aborted {
        crate::exit::ABORTED
    } else if failed {
        1
    } else {
        0
    })
}
