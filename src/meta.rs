//! `storlab meta`: the flags of a metadata workload, a walk or an untar study read into
//! crates/meta's requests, run and stored by crates/meta through the session's one run path,
//! and the stored run or study printed.

use std::sync::Arc;

use anyhow::Result;
use storlab_meta::job::MetaJob;
use storlab_meta::layout::Layout;
use storlab_meta::record::{Record, UntarRequest, UntarStudy, WalkRequest};
use storlab_model::meta::{MetaOp, TreeShape};
use storlab_model::run::Tag;
use storlab_session::LiveRun;

use crate::cli::{MetaArgs, MetaCmd, UntarArgs, WalkArgs};
use crate::results::{open_new, print_run};
use crate::usage;
use storlab_metrics::status::StatusLine;

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

/// The record every meta run is stored with: the command line, the tags, the status line.
fn record<'a>(command: &'a str, tags: &'a [Tag], status: &'a Option<Arc<StatusLine>>) -> Record<'a> {
    Record {
        command,
        tags,
        live: status.as_deref().map(|s| s as &dyn LiveRun),
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
    if let Some(launch) = crate::ranks::launched() {
        return crate::ranks::meta(job, &a, &launch);
    }
    // Refusals come before anything is made or stored.
    let mut layout = Layout::prepare(&job).map_err(|e| usage(e.to_string()))?;
    let mut store = open_new(&a.record.output.db)?;
    let command = crate::running::command_line();
    let status = crate::running::status_line(&a.record.output, a.record.quiet, None);
    layout.make()?;
    let ran = storlab_meta::record::run_job(&mut store, &mut layout, record(&command, &a.record.tags, &status));
    drop(status);
    if job.keep {
        eprintln!("storlab: kept the tree in {}", layout.root.display());
    } else {
        layout.remove()?;
    }
    let e = ran?;
    print_run(&store, e.run_id, false, &a.record.output)?;
    eprintln!("storlab: stored as run {} in {}", e.run_id, store.target());
    Ok(crate::running::code_of(e.status))
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
    let mut store = open_new(&a.record.output.db)?;
    let command = crate::running::command_line();
    let status = crate::running::status_line(&a.record.output, a.record.quiet, None);
    let request = WalkRequest {
        dir: a.dir.clone(),
        threads,
        compare_du: a.compare_du,
        cold: a.cold,
    };
    let e = storlab_meta::record::run_walk(&mut store, &request, record(&command, &a.record.tags, &status));
    drop(status);
    let e = e?;
    print_run(&store, e.run_id, false, &a.record.output)?;
    eprintln!("storlab: stored as run {} in {}", e.run_id, store.target());
    Ok(crate::running::code_of(e.status))
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
    let mut store = open_new(&a.record.output.db)?;
    let command = crate::running::command_line();
    let status = crate::running::status_line(
        &a.record.output,
        a.record.quiet,
        Some(format!(
            "untar of {} at {} concurrencies",
            archive.path.display(),
            levels.len()
        )),
    );
    let request = UntarRequest {
        root,
        target: &a.target,
        archive: &archive,
        levels,
        fsync: a.fsync,
        keep_last: a.keep,
        generated: a.generate.as_deref(),
    };
    let done = storlab_meta::record::run_untar(&mut store, &request, record(&command, &a.record.tags, &status));
    drop(status);
    let UntarStudy {
        study_id: id,
        aborted,
        failed,
    } = done?;
    crate::results::print_study(&store, id, a.record.output.json)?;
    eprintln!("storlab: stored study {id} in {}", store.target());
    Ok(if aborted {
        crate::exit::ABORTED
    } else if failed {
        1
    } else {
        0
    })
}
