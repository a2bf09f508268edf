//! `mpirun storlab run …`: this process is one rank of several. With the `mpi` feature the
//! ranks run the job as one run (crates/dist, session::team); without it storlab refuses,
//! rather than run as many independent copies that each store a run of their own.

use anyhow::Result;
use storlab_dist::Launch;
use storlab_model::run::RunKind;
use storlab_workload::Job;

use crate::cli::{JobArgs, OutputArgs};

/// Runs `job` as one rank of `launch`.
#[cfg(not(feature = "mpi"))]
pub fn execute(_job: &Job, _kind: RunKind, _a: &JobArgs, _out: &OutputArgs, launch: &Launch) -> Result<u8> {
    Err(crate::usage(format!(
        "this storlab was built without MPI, and {} says this process is rank {} of {}: each copy would \
         run the job and store a run of its own. Run storlab-mpi (storlab built with --features mpi) \
         under mpirun or srun, or run storlab without mpirun",
        launch.by, launch.rank, launch.size
    )))
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

    let team = storlab_dist::mpi_team::MpiTeam::join().map_err(anyhow::Error::msg)?;
    let rank0 = team.rank() == 0;
    let mut job = job.clone();
    job.targets = job
        .targets
        .iter()
        .map(|t| expand(t, team.rank(), team.host()))
        .collect();
    let prepared = storlab_session::prepare(&job, &a.allow_devices);
    let mut ready = prepared.as_ref().map(|_| ()).map_err(|e| e.to_string());
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
    )?;
    drop((views, status));
    let (Some(e), Some(store)) = (executed, store) else {
        return Ok(0);
    };
    crate::results::print_run(&store, e.run_id, false, out)?;
    eprintln!(
        "storlab: stored as run {} in {} ({} ranks)",
        e.run_id,
        store.target(),
        team.size()
    );
    Ok(crate::running::code_of(e.status))
}
