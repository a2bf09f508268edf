//! A job, or IOzone's cells, run by every rank of a [`Team`] (`mpirun storlab run`, `mpirun
//! storlab iozone`): each rank makes the targets its own (`%r` the rank, `%h` the host) and
//! prepares its job; then the ranks start together — every rank ready, every rank's job of the
//! same shape as rank 0's, rank 0's database open — or not at all, each saying which rank could
//! not and why, with nothing stored. The phases then run together (team.rs) and rank 0 returns
//! what it stored; the binary prints it.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use storlab_model::study::{Role, StudyParams};
use storlab_store::Store;
use storlab_workload::iozone::IozoneCell;
use storlab_workload::Job;

use crate::team::{agree, Team};
use crate::{prepare, run_points_team, run_prepared_team, Executed, LiveRun, Points, RunOptions, SessionError};

/// `%r` in a target becomes the rank, `%h` the host: each rank its own directory.
pub fn expand(target: &Path, rank: u32, host: &str) -> PathBuf {
    target
        .to_string_lossy()
        .replace("%r", &rank.to_string())
        .replace("%h", host)
        .into()
}

/// `targets` as this rank's (see [`expand`]).
pub fn for_rank(team: &dyn Team, targets: &[PathBuf]) -> Vec<PathBuf> {
    targets.iter().map(|t| expand(t, team.rank(), team.host())).collect()
}

/// `job` as this rank runs it: its targets this rank's (see [`expand`]).
pub fn job_for_rank(team: &dyn Team, job: &Job) -> Job {
    Job {
        targets: for_rank(team, &job.targets),
        ..job.clone()
    }
}

/// What rank 0 alone holds through a run of many ranks: the database, and the live views of the
/// run it shows (`--metrics`, the status line).
pub struct Rank0 {
    /// The results database.
    pub store: Store,
    /// The live views, if any.
    pub live: Option<Arc<dyn LiveRun + Send + Sync>>,
}

/// The ranks meet before anything runs: each says whether it is ready and what it will run
/// (`shape`, which must be rank 0's, else it says where its `what` differs); rank 0 opens what
/// only it opens only when every rank is ready, so that a rank that cannot start leaves no
/// database behind. All learn the same answer: rank 0's [`Rank0`] (None on the other ranks), or
/// the first rank that could not start and why, as a [`SessionError::Disagreed`].
pub fn start_together(
    team: &dyn Team,
    mut ready: Result<(), String>,
    shape: &str,
    what: &str,
    open: impl FnOnce() -> Result<Rank0, String>,
) -> Result<Option<Rank0>, SessionError> {
    let mine = serde_json::to_vec(&(shape, ready.is_ok())).unwrap_or_default();
    let all: Vec<(String, bool)> = team
        .all_gather(&mine)
        .iter()
        .map(|w| serde_json::from_slice(w).unwrap_or_default())
        .collect();
    let first = all.first().map(|(s, _)| s.clone()).unwrap_or_default();
    if ready.is_ok() && shape != first {
        ready = Err(format!("its {what} has {shape} where rank 0's has {first}"));
    }
    let everyone = all.iter().all(|(s, ok)| *ok && *s == first);
    let mut rank0 = None;
    if team.rank() == 0 && ready.is_ok() && everyone {
        match open() {
            Ok(r) => rank0 = Some(r),
            Err(e) => ready = Err(e),
        }
    }
    agree(team, ready).map_err(SessionError::Disagreed)?;
    Ok(rank0)
}

/// Rank 0's store and the run it stored, when this is rank 0.
pub type Stored<T> = Option<(Store, T)>;

/// Runs `job` as one run of every rank of `team`: each rank's targets its own, all started
/// together (see [`start_together`]), the phases run together, ended together with
/// `stonewall`. Rank 0 gets its store and the run back (its live views ended), the others None.
/// `o.live` is not used: the live views are rank 0's, from `open`.
pub fn run_job(
    team: &dyn Team,
    job: &Job,
    o: &RunOptions,
    stonewall: bool,
    open: impl FnOnce() -> Result<Rank0, String>,
) -> Result<Stored<Executed>, SessionError> {
    if job.streams.iter().any(|s| s.together) {
        // Every rank has the same job, so every rank stops here.
        return Err(SessionError::Job(storlab_workload::WorkloadError::invalid(
            &job.origin,
            "phases that run at the same time (a fio job file's jobs without a stonewall between them) do not run under mpirun: add stonewall between the jobs",
        )));
    }
    let job = job_for_rank(team, job);
    let prepared = prepare(&job, o.allow_devices);
    // The ranks meet before each phase and, with --stonewall, watch for each other in it: a
    // rank with another number of phases, or another --stonewall, would wait for ever.
    let shape = format!(
        "{} phase(s){}",
        prepared.as_ref().map_or(0, |p| p.phase_count()),
        if stonewall { " with --stonewall" } else { "" }
    );
    let ready = prepared.as_ref().map(|_| ()).map_err(|e| e.to_string());
    let rank0 = start_together(team, ready, &shape, "job", open)?;
    let prepared = prepared?;
    let (mut store, live) = rank0.map_or((None, None), |r| (Some(r.store), r.live));
    let opts = RunOptions {
        live: live.as_deref().map(|v| v as &dyn LiveRun),
        ..*o
    };
    let executed = run_prepared_team(team, store.as_mut(), prepared, &opts, stonewall)?;
    drop(live);
    Ok(store.zip(executed))
}

/// Runs IOzone's cells (`mpirun storlab iozone -t 4 -F /mnt/%r/f1 …`) with every rank of
/// `team`: every rank prepares every cell on its own files, all start together when they agree
/// on the cells and their phases, and each cell is one run of all ranks' workers (its figures
/// theirs together, over the common interval). With `study`, rank 0 stores the cells that ran
/// as that study. Rank 0 gets its store, the study's id and the cells back.
pub fn run_cells(
    team: &dyn Team,
    cells: Vec<(IozoneCell, Job)>,
    study: Option<StudyParams>,
    o: &RunOptions,
    open: impl FnOnce() -> Result<Rank0, String>,
) -> Result<Stored<(Option<i64>, Points)>, SessionError> {
    let jobs: Vec<(IozoneCell, Job)> = cells
        .into_iter()
        .map(|(c, mut job)| {
            job.targets = for_rank(team, &job.targets);
            (c, job)
        })
        .collect();
    let prepared: Result<Vec<_>, String> = jobs
        .iter()
        .map(|(c, job)| {
            // A cell's workers are every rank's: its figures are theirs together.
            let all = IozoneCell {
                workers: c.workers * team.size(),
                ..*c
            };
            prepare(job, &[]).map(|p| (all.role(), p)).map_err(|e| e.to_string())
        })
        .collect();
    let shape = match &prepared {
        Ok(points) => {
            let phases: Vec<usize> = points.iter().map(|(_, p)| p.phase_count()).collect();
            format!("{} cell(s) of {phases:?} phases", points.len())
        }
        Err(_) => String::new(),
    };
    let ready = prepared.as_ref().map(|_| ()).map_err(String::clone);
    let rank0 = start_together(team, ready, &shape, "IOzone run", open)?;
    let points = prepared.map_err(SessionError::Disagreed)?;
    let (mut store, live) = rank0.map_or((None, None), |r| (Some(r.store), r.live));
    let n = points.len();
    let opts = RunOptions {
        live: live.as_deref().map(|v| v as &dyn LiveRun),
        ..*o
    };
    let announce = |i: usize, role: &Role| {
        if let (Some(l), true) = (&live, n > 1) {
            l.study_progress(i, n, &role.to_string());
        }
    };
    let done = run_points_team(team, store.as_mut(), points, &opts, announce)?;
    drop(live);
    let (Some(mut store), Some(done)) = (store, done) else {
        return Ok(None);
    };
    let id = match study {
        Some(params) => Some(crate::save_points_study(&mut store, params, &done)?),
        None => None,
    };
    Ok(Some((store, (id, done))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Barrier, Mutex};

    /// Ranks as threads of one process: all_gather through a shared table and a barrier, as
    /// MPI's would through the network. Stands in for crates/team's MpiTeam, which needs mpirun.
    struct Threads {
        rank: u32,
        size: u32,
        host: String,
        table: Arc<(Mutex<Vec<Vec<u8>>>, Barrier)>,
    }

    impl Team for Threads {
        fn rank(&self) -> u32 {
            self.rank
        }
        fn size(&self) -> u32 {
            self.size
        }
        fn host(&self) -> &str {
            &self.host
        }
        fn clock_offset(&self) -> f64 {
            0.0
        }
        fn gather(&self, mine: &[u8]) -> Option<Vec<Vec<u8>>> {
            let all = self.all_gather(mine);
            (self.rank == 0).then_some(all)
        }
        fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>> {
            let (table, barrier) = &*self.table;
            table.lock().unwrap()[self.rank as usize] = mine.to_vec();
            barrier.wait();
            let all = table.lock().unwrap().clone();
            barrier.wait();
            all
        }
    }

    /// Runs `f` on `size` ranks at once and returns what each returned, by rank.
    fn on_ranks<T: Send>(size: u32, f: impl Fn(&dyn Team) -> T + Sync) -> Vec<T> {
        let table = Arc::new((Mutex::new(vec![Vec::new(); size as usize]), Barrier::new(size as usize)));
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..size)
                .map(|rank| {
                    let team = Threads {
                        rank,
                        size,
                        host: format!("h{rank}"),
                        table: table.clone(),
                    };
                    let f = &f;
                    s.spawn(move || f(&team))
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn targets_take_the_rank_and_the_host() {
        assert_eq!(
            expand(Path::new("/mnt/%h/r%r/f"), 3, "node7"),
            PathBuf::from("/mnt/node7/r3/f")
        );
        assert_eq!(expand(Path::new("/mnt/plain"), 3, "node7"), PathBuf::from("/mnt/plain"));
    }

    #[test]
    fn one_rank_not_ready_stops_every_rank_with_its_words_and_rank_0_opens_nothing() {
        let opened = Mutex::new(0);
        let answers = on_ranks(3, |team| {
            let ready = if team.rank() == 2 {
                Err("no space".to_string())
            } else {
                Ok(())
            };
            start_together(team, ready, "2 phase(s)", "job", || {
                *opened.lock().unwrap() += 1;
                Err("must not be opened".into())
            })
            .map(|r| r.is_some())
            .map_err(|e| e.to_string())
        });
        for a in &answers {
            assert_eq!(a, &Err("rank 2 on h2: no space".to_string()));
        }
        assert_eq!(*opened.lock().unwrap(), 0);
    }

    #[test]
    fn a_rank_whose_job_differs_from_rank_0s_is_named_and_rank_0_opens_nothing() {
        let opened = Mutex::new(0);
        let answers = on_ranks(2, |team| {
            let shape = if team.rank() == 1 { "3 phase(s)" } else { "2 phase(s)" };
            start_together(team, Ok(()), shape, "job", || {
                *opened.lock().unwrap() += 1;
                Err("must not be opened".into())
            })
            .map(|r| r.is_some())
            .map_err(|e| e.to_string())
        });
        let want = "rank 1 on h1: its job has 3 phase(s) where rank 0's has 2 phase(s)".to_string();
        assert_eq!(answers, vec![Err(want.clone()), Err(want)]);
        assert_eq!(*opened.lock().unwrap(), 0);
    }

    #[test]
    fn when_all_are_ready_rank_0_alone_opens_and_its_failure_stops_all() {
        let dir = tempfile::tempdir().unwrap();
        let db = storlab_store::DbTarget::Sqlite(dir.path().join("results.db"));
        let answers = on_ranks(3, |team| {
            start_together(team, Ok(()), "2 phase(s)", "job", || {
                let store = Store::connect(&db, "h0").map_err(|e| e.to_string())?;
                Ok(Rank0 { store, live: None })
            })
            .map(|r| r.is_some())
            .map_err(|e| e.to_string())
        });
        assert_eq!(answers, vec![Ok(true), Ok(false), Ok(false)]);
        let answers = on_ranks(2, |team| {
            start_together(team, Ok(()), "2 phase(s)", "job", || {
                Err("cannot open the database".into())
            })
            .map(|r| r.is_some())
            .map_err(|e| e.to_string())
        });
        let want = "rank 0 on h0: cannot open the database".to_string();
        assert_eq!(answers, vec![Err(want.clone()), Err(want)]);
    }
}
