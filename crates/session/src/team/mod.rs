//! One run by many processes at once (MPI ranks under `mpirun` or `srun`): every rank runs the
//! same phases on its own targets, all ranks start each phase together, and rank 0 stores one
//! run: the phases merged over the common interval ([`storlab_engine::team::merge_ranks`]),
//! each rank's host, clock offset and environment, and each rank's part of each phase.
//!
//! The ranks talk only through a [`Team`]; crates/team implements it over MPI. Nothing here
//! knows MPI, so the one run path stays the same for one process and for many.

pub mod start;

use std::sync::atomic::Ordering;

use serde::{Deserialize, Serialize};
use storlab_engine::team::{merge_ranks, RankPart};
use storlab_engine::PhaseControl;
use storlab_model::env::Environment;
use storlab_model::result::PhaseResult;
use storlab_model::run::{NewRun, Phase, PhaseName, PhaseParams, RankPhaseRow, RankRow, RunEventKind, RunStatus};
use storlab_store::Store;

use crate::{stop_flag, Executed, Phases, RunOptions, SessionError};

/// The processes running one run together.
pub trait Team {
    /// This process's rank, from 0.
    fn rank(&self) -> u32;
    /// How many ranks.
    fn size(&self) -> u32;
    /// This rank's host name.
    fn host(&self) -> &str;
    /// This rank's clock minus rank 0's, seconds (0 on rank 0), measured when the team formed.
    fn clock_offset(&self) -> f64;
    /// Every rank's bytes, by rank, on rank 0; None on the others. Every rank must call it.
    fn gather(&self, mine: &[u8]) -> Option<Vec<Vec<u8>>>;
    /// Every rank's bytes, by rank, on every rank. Every rank must call it.
    fn all_gather(&self, mine: &[u8]) -> Vec<Vec<u8>>;
    /// Runs `phase` while watching for another rank to finish its part first (stonewalling):
    /// `finish` is called, from another thread, when one did. When `phase` returns, the others
    /// are told this rank finished, and this returns once every rank has. Every rank must call
    /// it for the same phase.
    fn stonewalled(&self, finish: &(dyn Fn() + Sync), phase: &mut dyn FnMut()) {
        let _ = finish;
        phase();
    }
}

/// How one rank stands at a point where all ranks meet.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
enum Standing {
    Ok,
    Interrupted,
    Failed(String),
}

/// Every rank says how it stands; all learn the same: the first rank (lowest) that failed, with
/// its host and words, else whether any was interrupted.
fn meet(team: &dyn Team, mine: &Standing) -> (Standing, Option<(u32, String)>) {
    let words = serde_json::to_vec(&(team.host(), mine)).unwrap_or_default();
    let all = team.all_gather(&words);
    let mut interrupted = false;
    for (rank, w) in all.iter().enumerate() {
        let (host, s): (String, Standing) = serde_json::from_slice(w)
            .unwrap_or_else(|_| (String::new(), Standing::Failed("an unreadable answer".into())));
        match s {
            Standing::Failed(why) => return (Standing::Failed(why), Some((rank as u32, host))),
            Standing::Interrupted => interrupted = true,
            Standing::Ok => {}
        }
    }
    (
        if interrupted {
            Standing::Interrupted
        } else {
            Standing::Ok
        },
        None,
    )
}

/// Every rank says whether it can go on; all learn the same answer: Ok, or the first rank
/// (lowest) that cannot, as "rank R on HOST: why". A barrier that no rank can leave with a
/// different view of the others.
pub fn agree(team: &dyn Team, mine: Result<(), String>) -> Result<(), String> {
    let standing = match mine {
        Ok(()) => Standing::Ok,
        Err(why) => Standing::Failed(why),
    };
    match meet(team, &standing) {
        (Standing::Failed(why), who) => {
            let (rank, host) = who.unwrap_or_default();
            Err(rank_failed(rank, &host, &why))
        }
        _ => Ok(()),
    }
}

/// One rank's part of a phase as sent to rank 0.
#[derive(Serialize, Deserialize)]
struct Part {
    /// The measured interval on rank 0's clock, seconds since the epoch.
    start: f64,
    end: f64,
    params: PhaseParams,
    cache_flattered: bool,
    result: PhaseResult,
    /// The histograms the result does not serialize.
    histogram: Vec<u8>,
    histograms_rw: [Vec<u8>; 2],
    histogram_sync: Vec<u8>,
    histograms_slat: [Vec<u8>; 2],
    histograms_clat: [Vec<u8>; 2],
}

/// Seconds since the epoch on this host's clock.
fn wall() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// The message of a rank's failure, as stored and returned.
fn rank_failed(rank: u32, host: &str, why: &str) -> String {
    format!("rank {rank} on {host}: {why}")
}

/// [`crate::run_phases`] for a team: every rank calls it with its own phases and environment;
/// rank 0 passes the store and gets the run back, the others pass None and get None. Before
/// each phase all ranks meet (a barrier that also carries each rank's standing), so a rank
/// that failed ends the run on every rank with its rank, host and reason, and no rank waits for
/// it; the phases finished before are stored.
///
/// With `stonewall` (the control the phases end early by), every rank's phase ends when the
/// first rank's part is done ([`Team::stonewalled`]).
pub fn run_team_phases(
    team: &dyn Team,
    store: Option<&mut Store>,
    new_run: &NewRun,
    env: &Environment,
    phases: &mut dyn Phases,
    o: &RunOptions,
    stonewall: Option<&PhaseControl>,
) -> Result<Option<Executed>, SessionError> {
    let mut run = TeamRun::begin(team, store, new_run, env, o)?;
    for seq in 0..phases.count() {
        if !run.ready(seq, phases) {
            break;
        }
        let (name, ..) = phases.describe(seq);
        let name = name.as_str().to_string();
        run.event(RunEventKind::PhaseStart, &format!("{} ({name})", seq + 1));
        let (part, standing) = run.run_phase(seq, &name, phases, stonewall);
        let gathered = team.gather(&serde_json::to_vec(&part).unwrap_or_default());
        if !run.went_on(seq, &name, standing)? {
            break;
        }
        if let Some(all) = gathered {
            run.store_phase(seq, &name, &all);
        }
    }
    run.finish()
}

/// A run of a team as it goes: where it is stored (rank 0), its hosts, how it stands, what it
/// stored, and what went wrong in rank 0's storing, to be told to every rank at the next
/// meeting (returning at once would leave the others waiting for rank 0 there).
struct TeamRun<'a> {
    team: &'a dyn Team,
    store: Option<&'a mut Store>,
    options: &'a RunOptions<'a>,
    stop: &'static std::sync::atomic::AtomicBool,
    run_id: i64,
    /// Each rank's host (rank 0 only), to name the ranks' parts of each phase.
    hosts: Vec<String>,
    trouble: Option<String>,
    results: Vec<PhaseResult>,
    status: RunStatus,
    detail: Option<String>,
    failure: Option<String>,
}

impl<'a> TeamRun<'a> {
    /// Rank 0 begins the run and stores every rank's row; the others learn whether it could.
    fn begin(
        team: &'a dyn Team,
        mut store: Option<&'a mut Store>,
        new_run: &NewRun,
        env: &Environment,
        options: &'a RunOptions<'a>,
    ) -> Result<TeamRun<'a>, SessionError> {
        let begun = match store.as_deref_mut() {
            Some(s) => s
                .begin_run(new_run)
                .and_then(|id| s.save_environment(id, env).map(|_| id)),
            None => Ok(0),
        };
        let here = match &begun {
            Ok(_) => Standing::Ok,
            Err(e) => Standing::Failed(format!("cannot store the run: {e}")),
        };
        if let (Standing::Failed(why), who) = meet(team, &here) {
            let (rank, host) = who.unwrap_or_default();
            return match begun {
                Err(e) => Err(e.into()),
                Ok(_) => Err(SessionError::Rank(rank_failed(rank, &host, &why))),
            };
        }
        let mut run = TeamRun {
            team,
            store,
            options,
            stop: stop_flag(),
            run_id: begun.unwrap_or(0),
            hosts: Vec::new(),
            trouble: None,
            results: Vec::new(),
            status: RunStatus::Ok,
            detail: None,
            failure: None,
        };
        run.store_ranks(env);
        if let (Some(l), true) = (options.live, team.rank() == 0) {
            l.run_started(run.run_id, new_run.kind);
        }
        Ok(run)
    }

    /// Every rank's row (rank, host, clock offset, environment), stored by rank 0.
    fn store_ranks(&mut self, env: &Environment) {
        let mine = serde_json::to_vec(&RankRow {
            rank: self.team.rank(),
            host: self.team.host().to_string(),
            clock_offset_seconds: self.team.clock_offset(),
            environment: env.clone(),
        })
        .unwrap_or_default();
        if let (Some(all), Some(s)) = (self.team.gather(&mine), self.store.as_deref_mut()) {
            let rows: Vec<RankRow> = all.iter().filter_map(|b| serde_json::from_slice(b).ok()).collect();
            self.hosts = rows.iter().map(|r| r.host.clone()).collect();
            if let Err(e) = s.save_ranks(self.run_id, &rows) {
                self.trouble = Some(format!("cannot store the ranks: {e}"));
            }
        }
    }

    /// Stores an event (rank 0); a failure is trouble, told at the next meeting.
    fn event(&mut self, kind: RunEventKind, text: &str) {
        if let Some(s) = self.store.as_deref_mut() {
            if let Err(e) = s.add_event(self.run_id, kind, text) {
                self.trouble = Some(format!("cannot store the run: {e}"));
            }
        }
    }

    /// Each rank readies phase `seq` (lays out its files), then the ranks meet: the meeting is
    /// the barrier, and the phase's timed part starts right after it on every rank. False when
    /// the run ends here.
    fn ready(&mut self, seq: usize, phases: &mut dyn Phases) -> bool {
        let stopped = || self.stop.load(Ordering::Relaxed);
        let readied = match (&self.trouble, stopped()) {
            (None, false) => phases
                .prepare(seq, self.stop)
                .map_err(|e| format!("phase {} could not be readied: {e}", seq + 1)),
            _ => Ok(()),
        };
        let here = match (&self.trouble, readied, stopped()) {
            (Some(t), _, _) => Standing::Failed(t.clone()),
            (None, Err(why), _) => Standing::Failed(why),
            (None, Ok(()), true) => Standing::Interrupted,
            (None, Ok(()), false) => Standing::Ok,
        };
        match meet(self.team, &here) {
            (Standing::Ok, _) => true,
            (Standing::Interrupted, _) => {
                self.status = RunStatus::Aborted;
                false
            }
            (Standing::Failed(why), who) => {
                let (rank, host) = who.unwrap_or_default();
                self.failure = Some(rank_failed(rank, &host, &why));
                false
            }
        }
    }

    /// This rank's part of phase `seq` (stonewalled when asked), on rank 0's clock, and how it
    /// stands after it.
    fn run_phase(
        &self,
        seq: usize,
        name: &str,
        phases: &mut dyn Phases,
        stonewall: Option<&PhaseControl>,
    ) -> (Option<Part>, Standing) {
        let observer = self
            .options
            .live
            .filter(|_| self.team.rank() == 0)
            .map(|l| l as &dyn crate::IntervalObserver);
        let mut ran = None;
        match stonewall {
            Some(control) => {
                control.rearm();
                self.team.stonewalled(&|| control.finish(), &mut || {
                    ran = Some(phases.run(seq, self.stop, observer))
                });
            }
            None => ran = Some(phases.run(seq, self.stop, observer)),
        }
        let end = wall() - self.team.clock_offset();
        match ran.unwrap_or_else(|| Err("the team never ran the phase".into())) {
            Ok(p) => {
                let standing = if p.result.interrupted {
                    Standing::Interrupted
                } else {
                    Standing::Ok
                };
                let part = Part {
                    start: end - p.result.all_done.seconds,
                    end,
                    params: p.params,
                    cache_flattered: p.cache_flattered,
                    histogram: p.result.histogram.clone(),
                    histograms_rw: p.result.histograms_rw.clone(),
                    histogram_sync: p.result.histogram_sync.clone(),
                    histograms_slat: p.result.histograms_slat.clone(),
                    histograms_clat: p.result.histograms_clat.clone(),
                    result: p.result,
                };
                (Some(part), standing)
            }
            Err(e) => (
                None,
                Standing::Failed(format!("phase {} ({name}) failed: {e}", seq + 1)),
            ),
        }
    }

    /// The ranks meet after phase `seq`: true when every rank's part is in; a failed or
    /// interrupted rank ends the run (an interrupted phase is not stored).
    fn went_on(&mut self, seq: usize, name: &str, standing: Standing) -> Result<bool, SessionError> {
        match meet(self.team, &standing) {
            (Standing::Failed(why), who) => {
                let (rank, host) = who.unwrap_or_default();
                self.failure = Some(rank_failed(rank, &host, &why));
                Ok(false)
            }
            (Standing::Interrupted, _) => {
                let msg = format!(
                    "interrupted during phase {} ({name}); that phase is not stored",
                    seq + 1
                );
                if let Some(s) = self.store.as_deref_mut() {
                    s.add_event(self.run_id, RunEventKind::Interrupted, &msg)?;
                }
                self.status = RunStatus::Aborted;
                self.detail = Some(msg);
                Ok(false)
            }
            (Standing::Ok, _) => Ok(true),
        }
    }

    /// Rank 0 stores phase `seq`: the ranks' parts merged, and each rank's part with its
    /// interval from the earliest start.
    fn store_phase(&mut self, seq: usize, name: &str, all: &[Vec<u8>]) {
        let Some(s) = self.store.as_deref_mut() else { return };
        let rows: Vec<(u32, String, Part)> = all
            .iter()
            .enumerate()
            .filter_map(|(rank, b)| {
                let p: Option<Part> = serde_json::from_slice(b).ok()?;
                Some((rank as u32, self.hosts.get(rank).cloned().unwrap_or_default(), p?))
            })
            .collect();
        if rows.len() != all.len() {
            self.trouble = Some(format!(
                "phase {} ({name}): rank 0 could read the parts of only {} of {} ranks",
                seq + 1,
                rows.len(),
                all.len()
            ));
            return;
        }
        let Some(phase) = merged_phase(seq, PhaseName::from_name(name), &rows) else {
            return;
        };
        let origin = rows.iter().map(|(_, _, p)| p.start).fold(f64::INFINITY, f64::min);
        let parts: Vec<RankPhaseRow> = rows
            .iter()
            .map(|(rank, host, p)| RankPhaseRow {
                seq: seq as u32,
                rank: *rank,
                host: host.clone(),
                start_seconds: p.start - origin,
                end_seconds: p.end - origin,
                result: p.result.clone(),
            })
            .collect();
        match s
            .save_phase(self.run_id, &phase)
            .and_then(|_| s.save_rank_phases(self.run_id, &parts))
        {
            Ok(()) => self.results.push(phase.result),
            Err(e) => self.trouble = Some(format!("cannot store phase {} ({name}): {e}", seq + 1)),
        }
    }

    /// The last meeting — a failure of rank 0's after the last phase reaches every rank, and
    /// no rank leaves while another still waits — then rank 0 finishes the run.
    fn finish(mut self) -> Result<Option<Executed>, SessionError> {
        let last = match &self.trouble {
            Some(t) if self.failure.is_none() => Standing::Failed(t.clone()),
            _ => Standing::Ok,
        };
        if let (Standing::Failed(why), who) = meet(self.team, &last) {
            let (rank, host) = who.unwrap_or_default();
            self.failure = self.failure.or(Some(rank_failed(rank, &host, &why)));
        }
        let Some(s) = self.store else {
            return match self.failure {
                Some(f) => Err(SessionError::Rank(f)),
                None => Ok(None),
            };
        };
        if let Some(f) = self.failure {
            s.add_event(self.run_id, RunEventKind::PhaseFailed, &f)?;
            s.finish_run(self.run_id, RunStatus::Failed, Some(&f))?;
            return Err(SessionError::Rank(f));
        }
        s.finish_run(self.run_id, self.status, self.detail.as_deref())?;
        Ok(Some(Executed {
            run_id: self.run_id,
            status: self.status,
            results: self.results,
        }))
    }
}

/// The phase rank 0 stores: the ranks' parts merged; a metadata phase's entries and errors
/// summed.
fn merged_phase(seq: usize, kind: PhaseName, rows: &[(u32, String, Part)]) -> Option<Phase> {
    let parts: Vec<RankPart> = rows
        .iter()
        .map(|(rank, host, p)| RankPart {
            rank: *rank,
            host: host.clone(),
            start: p.start,
            end: p.end,
            result: PhaseResult {
                histogram: p.histogram.clone(),
                histograms_rw: p.histograms_rw.clone(),
                histogram_sync: p.histogram_sync.clone(),
                histograms_slat: p.histograms_slat.clone(),
                histograms_clat: p.histograms_clat.clone(),
                ..p.result.clone()
            },
        })
        .collect();
    let mut params = rows.first()?.2.params.clone();
    if let PhaseParams::Meta(m) = &mut params {
        let metas = rows.iter().filter_map(|(_, _, p)| match &p.params {
            PhaseParams::Meta(m) => Some(m),
            _ => None,
        });
        let (mut entries, mut errors, mut workers, mut first) = (0, 0, 0, Vec::new());
        for x in metas {
            entries += x.entries;
            errors += x.errors;
            workers += x.workers;
            first.extend(x.first_errors.iter().cloned());
        }
        first.truncate(storlab_model::meta::NAMED_ERRORS);
        m.workers = workers;
        (m.entries, m.errors, m.first_errors) = (entries, errors, first);
    }
    Some(Phase {
        seq: seq as u32,
        kind,
        params,
        result: merge_ranks(&parts),
        cache_flattered: rows.iter().any(|(_, _, p)| p.cache_flattered),
    })
}
