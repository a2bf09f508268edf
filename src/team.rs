//! `mpirun storlab run | meta | iozone`: this process is one rank of several. With the `mpi`
//! feature the ranks run the job as one run, a team (crates/team's MPI team; the `team`
//! modules of crates/session, crates/meta and crates/qualify); without it storlab refuses,
//! rather than run as many independent copies that each store a run of their own.

use storlab_team::Launch;

#[cfg(feature = "mpi")]
pub use mpi_team::{execute, fio, iozone, meta, qualify};
#[cfg(not(feature = "mpi"))]
pub use refused::{execute, fio, iozone, meta, qualify};

/// This process's place among the ranks a launcher started, when it runs as one of them: any
/// launch for a storlab built with MPI (one rank too, so that `%r` and `%h` are filled in and
/// the run has its rank row), a launch of several for one without (which refuses).
pub fn launched() -> Option<Launch> {
    storlab_team::launched().filter(|l| l.size > 1 || cfg!(feature = "mpi"))
}

/// A storlab without MPI under mpirun: each command refuses, naming the launcher.
#[cfg(not(feature = "mpi"))]
mod refused {
    use anyhow::Result;
    use storlab_meta::job::MetaJob;
    use storlab_model::run::RunKind;
    use storlab_team::Launch;
    use storlab_workload::iozone::{IozoneArgs, IozoneCell};
    use storlab_workload::Job;

    use crate::cli::{JobArgs, MetaArgs, OutputArgs};

    /// Runs `job` as one rank of `launch`.
    pub fn execute(_job: &Job, _kind: RunKind, _a: &JobArgs, _out: &OutputArgs, launch: &Launch) -> Result<u8> {
        Err(refusal(launch))
    }

    /// Runs a metadata job as one rank of `launch`.
    pub fn meta(_job: MetaJob, _a: &MetaArgs, launch: &Launch) -> Result<u8> {
        Err(refusal(launch))
    }

    /// Runs IOzone's cells as one rank of `launch`.
    pub fn iozone(_a: &IozoneArgs, _jobs: Vec<(IozoneCell, Job)>, launch: &Launch) -> Result<u8> {
        Err(refusal(launch))
    }

    /// Runs a qualification as one rank of `launch`.
    pub fn qualify(_a: &crate::cli::QualifyArgs, launch: &Launch) -> Result<u8> {
        Err(refusal(launch))
    }

    /// Runs a fio command line as one rank of `launch`.
    pub fn fio(
        _c: &storlab_workload::fio::cli::FioCommand,
        _fio: &storlab_workload::fio::FioJob,
        _out: &OutputArgs,
        launch: &Launch,
    ) -> Result<u8> {
        Err(refusal(launch))
    }

    /// Why a storlab without MPI does not run under mpirun.
    fn refusal(launch: &Launch) -> anyhow::Error {
        crate::usage(format!(
            "this storlab was built without MPI, and {} says this process is rank {} of {}: each copy would \
             run the job and store a run of its own. Run storlab-mpi (storlab built with --features mpi) \
             under mpirun or srun, or run storlab without mpirun",
            launch.by, launch.rank, launch.size
        ))
    }
}

/// The three commands under mpirun, each one crate call between joining the team and printing
/// what rank 0 stored.
#[cfg(feature = "mpi")]
mod mpi_team {
    use anyhow::Result;
    use storlab_meta::job::MetaJob;
    use storlab_model::run::RunKind;
    use storlab_session::team::start::{self, Rank0};
    use storlab_session::team::Team;
    use storlab_session::RunOptions;
    use storlab_team::mpi::MpiTeam;
    use storlab_team::Launch;
    use storlab_workload::iozone::{IozoneArgs, IozoneCell};
    use storlab_workload::Job;

    use crate::cli::{JobArgs, MetaArgs, OutputArgs};
    use crate::results::{open_new, print_run};
    use crate::running::{code_of, command_line, serve_live, status_line, views};

    /// Rank 0's database and status line, opened when every rank is ready.
    fn rank0(out: &OutputArgs, quiet: bool, study: Option<String>) -> Result<Rank0, String> {
        let store = open_new(&out.db).map_err(|e| e.to_string())?;
        let status = status_line(out, quiet, study);
        Ok(Rank0 {
            store,
            live: views(None, &status),
        })
    }

    /// What rank 0 says after printing the run.
    fn stored_as(run_id: i64, store: &storlab_store::Store, ranks: u32) {
        let s = if ranks == 1 { "" } else { "s" };
        eprintln!(
            "storlab: stored as run {run_id} in {} ({ranks} rank{s})",
            store.target()
        );
    }

    /// Runs `job` as one rank: every rank's job its own (`%r`, `%h`), all started together,
    /// rank 0 printing and storing the one run.
    pub fn execute(job: &Job, kind: RunKind, a: &JobArgs, out: &OutputArgs, _launch: &Launch) -> Result<u8> {
        let team = MpiTeam::join_for(a.stonewall).map_err(anyhow::Error::msg)?;
        let command = command_line();
        let opts = RunOptions::of_job(kind, a, &command, None);
        // Only rank 0 serves --metrics and shows a status line; it holds the endpoint here.
        let mut live = None;
        let stored = start::run_job(&team, job, &opts, a.stonewall, || {
            live = serve_live(a.metrics.as_deref(), a.web_config.as_deref(), "run").map_err(|e| e.to_string())?;
            let status = status_line(out, a.quiet, None);
            let store = open_new(&out.db).map_err(|e| e.to_string())?;
            Ok(Rank0 {
                store,
                live: views(live.as_ref(), &status),
            })
        })?;
        let Some((store, e)) = stored else {
            return Ok(0);
        };
        print_run(&store, e.run_id, false, out)?;
        stored_as(e.run_id, &store, team.size());
        Ok(code_of(e.status))
    }

    /// Runs a fio command line as one rank (`mpirun storlab-mpi fio …`): every rank runs the
    /// job on its own targets (`%r`, `%h`), all started together; rank 0 stores the one run and
    /// writes fio's outputs as fio's client does with a server per host (`client_stats`: each
    /// rank's jobs, then all of them together), and says nothing on stderr, as fio.
    pub fn fio(
        c: &storlab_workload::fio::cli::FioCommand,
        fio: &storlab_workload::fio::FioJob,
        out: &OutputArgs,
        _launch: &Launch,
    ) -> Result<u8> {
        let team = MpiTeam::join_for(false).map_err(anyhow::Error::msg)?;
        // Each worker keeps its own figures, so that each rank's jobs report their latency
        // whole (a rank's row keeps its figures, not its histograms).
        let mut job = fio.job.clone();
        job.settings.worker_samples = Some(true);
        let opts = crate::fio::run_options(c, None);
        let stored = start::run_job(&team, &job, &opts, false, || rank0(out, true, None))?;
        let Some((store, e)) = stored else {
            return Ok(0);
        };
        crate::fio::write_outputs(c, fio, &store, e.run_id, out, None)?;
        Ok(crate::fio::fio_exit(e.status))
    }

    /// Runs a metadata job as one rank (crates/meta's `together`).
    pub fn meta(job: MetaJob, a: &MetaArgs, _launch: &Launch) -> Result<u8> {
        let team = MpiTeam::join_for(false).map_err(anyhow::Error::msg)?;
        let out = &a.record.output;
        let command = command_line();
        let t = storlab_meta::team::run(&team, job, &command, &a.record.tags, || {
            rank0(out, a.record.quiet, None)
        })?;
        if let Some(root) = &t.kept {
            let whose = if t.shared { "the ranks' " } else { "its " };
            eprintln!("storlab: rank {} kept {whose}tree in {}", team.rank(), root.display());
        }
        let Some((store, e)) = t.stored else {
            return Ok(0);
        };
        print_run(&store, e.run_id, false, out)?;
        stored_as(e.run_id, &store, team.size());
        Ok(code_of(e.status))
    }

    /// Runs a qualification as one rank (crates/qualify's `team`): rank 0 decides, stores and
    /// prints the verdict.
    pub fn qualify(a: &crate::cli::QualifyArgs, _launch: &Launch) -> Result<u8> {
        let team = MpiTeam::join_for(false).map_err(anyhow::Error::msg)?;
        let plan = a.plan.prepared_file()?;
        let o = a.plan.run_options(command_line(), None)?;
        let open = || open_new(&a.output.db).map_err(|e| e.to_string());
        let stop = storlab_session::stop_flag();
        match storlab_qualify::team::qualify_rank(&team, plan, &o, open, stop, &crate::qualify::sayer(a))? {
            Some((store, out)) => crate::qualify::report(a, &store, out.study_id, &out.params, None),
            None => Ok(0),
        }
    }

    /// Runs IOzone's cells as one rank: each cell one run of all ranks, several a study, rank 0
    /// printing IOzone's report.
    pub fn iozone(a: &IozoneArgs, jobs: Vec<(IozoneCell, Job)>, _launch: &Launch) -> Result<u8> {
        let team = MpiTeam::join_for(false).map_err(anyhow::Error::msg)?;
        let cells: Vec<IozoneCell> = jobs.iter().map(|(c, _)| *c).collect();
        let params = a.study_params(&cells);
        let n = jobs.len();
        let out = crate::iozone::output(a);
        let opts = crate::iozone::options(a, None);
        let study = (n > 1).then(|| a.study(&params));
        let stored = start::run_cells(&team, jobs, study, &opts, || {
            rank0(&out, a.quiet, (n > 1).then(|| format!("IOzone, {n} cells")))
        })?;
        let Some((store, (study, done))) = stored else {
            return Ok(0);
        };
        crate::iozone::print_iozone(&store, a, study, &done, params.note.as_deref())?;
        Ok(crate::iozone::exit_code(&done))
    }
}
