//! Jobs run as the points of a study (a sweep, IOzone's matrix), here or on every rank of a team.

use storlab_model::result::PhaseResult;
use storlab_model::run::RunStatus;
use storlab_model::study::{Member, NewStudy, Role, StudyParams};
use storlab_store::Store;
use storlab_workload::Job;

use crate::{run, run_prepared_team, team, Prepared, RunOptions, SessionError};

/// What a study's points left: each point's member (run and role) and results, in the order
/// run, and whether Ctrl-C ended the study early.
#[derive(Debug, Default)]
pub struct Points {
    /// Each point run: its member and its phases' results.
    pub done: Vec<(Member, Vec<PhaseResult>)>,
    /// Ctrl-C ended the study before every point ran.
    pub aborted: bool,
    /// A point's run ended otherwise than well (failed verification).
    pub not_ok: bool,
}

/// Runs each job as one point of a study, in order, until all ran or Ctrl-C, and stores the
/// study with the points that ran (also when Ctrl-C ended it early); `announce` is called before
/// each point (for progress on a terminal). Returns the study's id and the points.
pub fn run_study(
    store: &mut Store,
    params: StudyParams,
    points: &[(Role, Job)],
    o: &RunOptions,
    announce: impl FnMut(usize, &Role),
) -> Result<(i64, Points), SessionError> {
    let done = run_points(store, points, o, announce)?;
    let id = save_points_study(store, params, &done)?;
    Ok((id, done))
}

/// [`run_points`] on one rank of runs many processes run together (`mpirun storlab iozone`):
/// every rank passes its own prepared points (as many, in the same order; the caller has had
/// the ranks agree on that); each point is one run of all ranks ([`run_prepared_team`]). Rank 0
/// passes the store and gets the points back, the other ranks None. After each point rank 0
/// tells every rank whether another follows, so that all stop together when Ctrl-C ended one.
pub fn run_points_team(
    team: &dyn team::Team,
    mut store: Option<&mut Store>,
    points: Vec<(Role, Prepared)>,
    o: &RunOptions,
    mut announce: impl FnMut(usize, &Role),
) -> Result<Option<Points>, SessionError> {
    let rank0 = store.is_some();
    let mut out = Points::default();
    for (i, (role, prepared)) in points.into_iter().enumerate() {
        announce(i, &role);
        let executed = run_prepared_team(team, store.as_deref_mut(), prepared, o, false)?;
        let mut go_on = true;
        if let Some(e) = executed {
            match e.status {
                RunStatus::Aborted => {
                    out.aborted = true;
                    go_on = false;
                }
                RunStatus::Ok => {}
                _ => out.not_ok = true,
            }
            out.done.push((
                Member {
                    run_id: e.run_id,
                    role: role.clone(),
                },
                e.results,
            ));
        }
        // Rank 0's word decides for all: every rank learns it from the same gather.
        let word = team.all_gather(&[u8::from(go_on)]);
        if word.first().map(Vec::as_slice) != Some(&[1]) {
            break;
        }
    }
    Ok(rank0.then_some(out))
}

/// Stores the points that ran as a study with `params`: its id.
pub fn save_points_study(store: &mut Store, params: StudyParams, done: &Points) -> Result<i64, SessionError> {
    Ok(store.save_study(&NewStudy {
        params,
        members: done.done.iter().map(|(m, _)| m.clone()).collect(),
        events: Vec::new(),
        task_samples: Vec::new(),
    })?)
}

/// Runs IOzone's cells in this process (`storlab iozone`; the caller has resolved each before
/// opening the database): one cell as one run, several as a study with `study` (IOzone's
/// matrix, or a range of workers), each cell announced to the live view when there are
/// several. Returns the study's id and the cells that ran.
pub fn run_cells(
    store: &mut Store,
    cells: Vec<(storlab_workload::iozone::IozoneCell, Job)>,
    study: StudyParams,
    o: &RunOptions,
) -> Result<(Option<i64>, Points), SessionError> {
    let points: Vec<(Role, Job)> = cells.into_iter().map(|(c, j)| (c.role(), j)).collect();
    let n = points.len();
    let announce = |i: usize, role: &Role| {
        if let (Some(l), true) = (o.live, n > 1) {
            l.study_progress(i, n, &role.to_string());
        }
    };
    if n > 1 {
        let (id, done) = run_study(store, study, &points, o, announce)?;
        Ok((Some(id), done))
    } else {
        Ok((None, run_points(store, &points, o, announce)?))
    }
}

/// Runs each job as one point of a study, in order, until all ran or Ctrl-C; `announce` is
/// called before each (for progress on a terminal).
pub fn run_points(
    store: &mut Store,
    points: &[(Role, Job)],
    o: &RunOptions,
    mut announce: impl FnMut(usize, &Role),
) -> Result<Points, SessionError> {
    let mut out = Points::default();
    for (i, (role, job)) in points.iter().enumerate() {
        announce(i, role);
        let e = run(store, job, o)?;
        out.done.push((
            Member {
                run_id: e.run_id,
                role: role.clone(),
            },
            e.results,
        ));
        match e.status {
            RunStatus::Aborted => {
                out.aborted = true;
                break;
            }
            RunStatus::Ok => {}
            _ => out.not_ok = true,
        }
    }
    Ok(out)
}
