//! `mpirun storlab run …`: this process is one rank of several. With the `mpi` feature the
//! ranks run the job as one run (crates/dist, session::team); without it storlab refuses,
//! rather than run as many independent copies that each store a run of their own.

use anyhow::Result;
use storlab_dist::Launch;
use storlab_model::run::RunKind;
use storlab_workload::iozone::{IozoneArgs, IozoneCell};
use storlab_workload::Job;

use storlab_meta::job::MetaJob;

use crate::cli::{JobArgs, MetaArgs, OutputArgs};

/// This process's place among the ranks a launcher started, when it runs as one of them: any
/// launch for a storlab built with MPI (one rank too, so that `%r` and `%h` are filled in and
/// the run has its rank row), a launch of several for one without (which refuses).
pub fn launched() -> Option<Launch> {
    storlab_dist::launched().filter(|l| l.size > 1 || cfg!(feature = "mpi"))
}

/// Runs `job` as one rank of `launch`.
#[cfg(not(feature = "mpi"))]
pub fn execute(_job: &Job, _kind: RunKind, _a: &JobArgs, _out: &OutputArgs, launch: &Launch) -> Result<u8> {
    Err(refusal(launch))
}

/// Runs a metadata job as one rank of `launch`.
#[cfg(not(feature = "mpi"))]
pub fn meta(_job: MetaJob, _a: &MetaArgs, launch: &Launch) -> Result<u8> {
    Err(refusal(launch))
}

/// Runs IOzone's cells as one rank of `launch`.
#[cfg(not(feature = "mpi"))]
pub fn iozone(_a: &IozoneArgs, _jobs: Vec<(IozoneCell, Job)>, launch: &Launch) -> Result<u8> {
    Err(refusal(launch))
}

/// Why a storlab without MPI does not run under mpirun.
#[cfg(not(feature = "mpi"))]
fn refusal(launch: &Launch) -> anyhow::Error {
    crate::usage(format!(
        "this storlab was built without MPI, and {} says this process is rank {} of {}: each copy would \
         run the job and store a run of its own. Run storlab-mpi (storlab built with --features mpi) \
         under mpirun or srun, or run storlab without mpirun",
        launch.by, launch.rank, launch.size
    ))
}

/// `%r` in a target becomes the rank, `%h` the host: each rank its own directory.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
fn expand(target: &std::path::Path, rank: u32, host: &str) -> std::path::PathBuf {
    target
        .to_string_lossy()
        .replace("%r", &rank.to_string())
        .replace("%h", host)
        .into()
}

/// Runs `job` as one rank of `launch`: every rank prepares its own job (its targets with `%r`
/// and `%h` filled in), all agree that each could (else each says which rank could not, and
/// why), rank 0 opens the database, and the ranks run the phases together; rank 0 prints and
/// stores the one run.
#[cfg(feature = "mpi")]
pub fn execute(job: &Job, kind: RunKind, a: &JobArgs, out: &OutputArgs, _launch: &Launch) -> Result<u8> {
    use storlab_session::team::{agree, Team};
    use storlab_session::{LiveRun, RunOptions};

    let team = storlab_dist::mpi_team::MpiTeam::join_for(a.stonewall).map_err(anyhow::Error::msg)?;
    let rank0 = team.rank() == 0;
    let mut job = job.clone();
    job.targets = job
        .targets
        .iter()
        .map(|t| expand(t, team.rank(), team.host()))
        .collect();
    let prepared = storlab_session::prepare(&job, &a.allow_devices);
    let mut ready = prepared.as_ref().map(|_| ()).map_err(|e| e.to_string());
    // The ranks meet before each phase and, with --stonewall, watch for each other in it: a
    // rank with another number of phases, or another --stonewall, would wait for ever.
    let shape = format!(
        "{} phase(s){}",
        prepared.as_ref().map_or(0, |p| p.phase_count()),
        if a.stonewall { " with --stonewall" } else { "" }
    );
    let shapes = team.all_gather(shape.as_bytes());
    let first = String::from_utf8_lossy(&shapes[0]).into_owned();
    if ready.is_ok() && shape != first {
        ready = Err(format!("its job has {shape} where rank 0's has {first}"));
    }
    // Only rank 0 opens the database, serves --metrics and shows a status line.
    let mut store = None;
    let mut live = None;
    if rank0 && ready.is_ok() {
        match crate::running::serve_live(a, "run").and_then(|l| Ok((l, crate::results::open_new(&out.db)?))) {
            Ok((l, s)) => (live, store) = (l, Some(s)),
            Err(e) => ready = Err(e.to_string()),
        }
    }
    if let Err(why) = agree(&team, ready) {
        return Err(crate::usage(why));
    }
    let prepared = prepared.map_err(anyhow::Error::from)?;
    let command = crate::running::command_line();
    let status = if rank0 {
        crate::running::status_line(out, a.quiet, None)
    } else {
        None
    };
    let views = crate::running::views(live.as_ref(), &status);
    let executed = storlab_session::run_prepared_team(
        &team,
        store.as_mut(),
        prepared,
        &RunOptions {
            kind,
            tags: &a.tags,
            allow_devices: &a.allow_devices,
            keep: a.keep,
            command: &command,
            control: None,
            live: views.as_deref().map(|v| v as &dyn LiveRun),
        },
        a.stonewall,
    )?;
    drop((views, status));
    let (Some(e), Some(store)) = (executed, store) else {
        return Ok(0);
    };
    crate::results::print_run(&store, e.run_id, false, out)?;
    eprintln!(
        "storlab: stored as run {} in {} ({} rank{})",
        e.run_id,
        store.target(),
        team.size(),
        if team.size() == 1 { "" } else { "s" }
    );
    Ok(crate::running::code_of(e.status))
}

/// Runs a metadata job as one rank of `launch`: every rank lays out its tree in its target
/// (`%r`, `%h` filled in) — one tree for all ranks when their targets are one directory and
/// their workers share (mdtest without -u; rank 0 makes and removes it), else a tree each —
/// all agree that each could, the phases run together, rank 0 stores one run (entries, errors
/// and workers of all ranks), and the trees go at the end unless --keep.
#[cfg(feature = "mpi")]
pub fn meta(mut job: MetaJob, a: &MetaArgs, _launch: &Launch) -> Result<u8> {
    use storlab_meta::layout::Layout;
    use storlab_session::team::{agree, Team};
    use storlab_session::LiveRun;

    let team = storlab_dist::mpi_team::MpiTeam::join_for(false).map_err(anyhow::Error::msg)?;
    let rank0 = team.rank() == 0;
    job.target = expand(&job.target, team.rank(), team.host());
    let layout = Layout::prepare(&job);
    let mut ready = layout.as_ref().map(|_| ()).map_err(|e| e.to_string());
    // Ranks whose workers share a tree (no --unique-dir) and whose targets are one directory
    // share one tree, as mdtest's ranks do without -u: rank 0's, its workers numbered apart.
    let targets = team.all_gather(job.target.as_os_str().as_encoded_bytes());
    let shared = job.shared_dir && targets.iter().all(|t| *t == targets[0]);
    let shape = format!("phases {:?}{}", job.phases, if shared { ", one tree" } else { "" });
    let shapes = team.all_gather(shape.as_bytes());
    let first = String::from_utf8_lossy(&shapes[0]).into_owned();
    if ready.is_ok() && shape != first {
        ready = Err(format!("its job has {shape} where rank 0's has {first}"));
    }
    let workers = team.all_gather(&job.workers.to_le_bytes());
    let worker_base: u32 = workers[..team.rank() as usize]
        .iter()
        .map(|b| u32::from_le_bytes(b.as_slice().try_into().unwrap_or_default()))
        .sum();
    let root = layout
        .as_ref()
        .map(|l| l.root.as_os_str().as_encoded_bytes().to_vec())
        .unwrap_or_default();
    let roots = team.all_gather(&root);
    let mut store = None;
    if rank0 && ready.is_ok() {
        match crate::results::open_new(&a.record.output.db) {
            Ok(s) => store = Some(s),
            Err(e) => ready = Err(e.to_string()),
        }
    }
    agree(&team, ready).map_err(crate::usage)?;
    let mut layout = layout.map_err(|e| crate::usage(e.to_string()))?;
    if shared {
        let root = std::path::PathBuf::from(String::from_utf8_lossy(&roots[0]).into_owned());
        layout.share_among_ranks(root, worker_base, rank0);
    }
    // Rank 0 makes a shared tree; the meeting after is the others' wait for it.
    let made = layout.make().map_err(|e| e.to_string());
    agree(&team, made).map_err(anyhow::Error::msg)?;
    let command = crate::running::command_line();
    let status = if rank0 {
        crate::running::status_line(&a.record.output, a.record.quiet, None)
    } else {
        None
    };
    let rec = storlab_meta::record::Record {
        command: &command,
        tags: &a.record.tags,
        live: status.as_deref().map(|s| s as &dyn LiveRun),
    };
    let ran = storlab_meta::record::run_job_team(&team, store.as_mut(), &mut layout, rec);
    drop(status);
    if job.keep {
        if layout.owns_tree() {
            eprintln!(
                "storlab: rank {} kept {}tree in {}",
                team.rank(),
                if shared { "the ranks' " } else { "its " },
                layout.root.display()
            );
        }
    } else {
        layout.remove()?;
    }
    let (Some(e), Some(store)) = (ran?, store) else {
        return Ok(0);
    };
    crate::results::print_run(&store, e.run_id, false, &a.record.output)?;
    eprintln!(
        "storlab: stored as run {} in {} ({} rank{})",
        e.run_id,
        store.target(),
        team.size(),
        if team.size() == 1 { "" } else { "s" }
    );
    Ok(crate::running::code_of(e.status))
}

/// Runs IOzone's cells as one rank of `launch` (`mpirun storlab iozone -t 4 -F /mnt/%r/f1 …`):
/// every rank prepares every cell on its own files (`%r`, `%h` filled in), all agree that each
/// could and on the number of cells and phases, and each cell is one run of all ranks (the
/// throughput IOzone's children report, here of all ranks' workers over the common interval);
/// several cells are a study, stored by rank 0, which prints IOzone's report.
#[cfg(feature = "mpi")]
pub fn iozone(a: &IozoneArgs, jobs: Vec<(IozoneCell, Job)>, _launch: &Launch) -> Result<u8> {
    use storlab_session::team::{agree, Team};
    use storlab_session::{LiveRun, RunOptions};

    let team = storlab_dist::mpi_team::MpiTeam::join_for(false).map_err(anyhow::Error::msg)?;
    let rank0 = team.rank() == 0;
    let cells: Vec<IozoneCell> = jobs.iter().map(|(c, _)| *c).collect();
    let jobs: Vec<(IozoneCell, Job)> = jobs
        .into_iter()
        .map(|(c, mut job)| {
            job.targets = job
                .targets
                .iter()
                .map(|t| expand(t, team.rank(), team.host()))
                .collect();
            (c, job)
        })
        .collect();
    let prepared: Result<Vec<_>, String> = jobs
        .iter()
        .map(|(c, job)| {
            storlab_session::prepare(job, &[])
                // A cell's workers are every rank's: its figures are theirs together.
                .map(|p| {
                    let all = IozoneCell {
                        workers: c.workers * team.size(),
                        ..*c
                    };
                    (all.role(), p)
                })
                .map_err(|e| e.to_string())
        })
        .collect();
    let mut ready = prepared.as_ref().map(|_| ()).map_err(String::clone);
    let shape = match &prepared {
        Ok(points) => {
            let phases: Vec<usize> = points.iter().map(|(_, p)| p.phase_count()).collect();
            format!("{} cell(s) of {phases:?} phases", points.len())
        }
        Err(_) => String::new(),
    };
    let shapes = team.all_gather(shape.as_bytes());
    let first = String::from_utf8_lossy(&shapes[0]).into_owned();
    if ready.is_ok() && shape != first {
        ready = Err(format!("its IOzone run has {shape} where rank 0's has {first}"));
    }
    let out = crate::iozone::output(a);
    let mut store = None;
    if rank0 && ready.is_ok() {
        match crate::results::open_new(&out.db) {
            Ok(s) => store = Some(s),
            Err(e) => ready = Err(e.to_string()),
        }
    }
    agree(&team, ready).map_err(crate::usage)?;
    let points = prepared.map_err(anyhow::Error::msg)?;
    let n = points.len();
    let status = if rank0 {
        crate::running::status_line(&out, a.quiet, (n > 1).then(|| format!("IOzone, {n} cells")))
    } else {
        None
    };
    let opts = RunOptions {
        kind: RunKind::Iozone,
        tags: &a.tags,
        allow_devices: &[],
        keep: a.keep,
        command: &a.command_line,
        control: None,
        live: status.as_deref().map(|s| s as &dyn LiveRun),
    };
    let announce = |i: usize, role: &storlab_model::study::Role| {
        if let (Some(s), true) = (&status, n > 1) {
            s.study_progress(i, n, &role.to_string());
        }
    };
    let params = a.study_params(&cells);
    let ran = if n > 1 {
        let kind = a.study(&params);
        storlab_session::run_study_team(&team, store.as_mut(), kind, points, &opts, announce)?
            .map(|(id, done)| (Some(id), done))
    } else {
        storlab_session::run_points_team(&team, store.as_mut(), points, &opts, announce)?.map(|done| (None, done))
    };
    drop(status);
    let (Some((study, done)), Some(store)) = (ran, store) else {
        return Ok(0);
    };
    crate::results::print_iozone(&store, a, study, &done, params.note.as_deref())?;
    Ok(crate::iozone::exit_code(&done))
}
