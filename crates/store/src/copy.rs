//! `storlab db copy`: every run (with its environment, phases, samples, events, tags, scan and
//! MPI ranks)
//! and every study of one database into another, SQLite or PostgreSQL either way. A run's
//! identity is its UUID: one the destination has already is skipped, so copying twice adds
//! nothing — unless the destination holds it unfinished (`running` or `aborted`, as a server
//! that went away mid-run leaves it) and the source holds it finished (a spool file), when the
//! finished copy replaces it. Ids may differ between the two; study members follow their runs
//! by UUID. From a damaged SQLite file, every run that reads whole is copied and the others are
//! named.

use std::collections::HashMap;

use storlab_model::run::{RunKind, RunStatus};
use storlab_model::study::NewStudy;

use crate::db::{one, vals, Row};
use crate::runs::named;
use crate::write::{
    insert_environment, insert_event, insert_phase, insert_rank_phases, insert_ranks, insert_run, insert_scan,
    insert_study, insert_tags, RunRow,
};
use crate::{Result, Store, StoreError};

/// What a copy did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CopyReport {
    /// Runs the destination did not have.
    pub runs_copied: usize,
    /// Runs the destination had unfinished, replaced by their finished copies.
    pub runs_replaced: usize,
    /// Runs the destination had already.
    pub runs_skipped: usize,
    /// Studies the destination did not have.
    pub studies_copied: usize,
    /// Studies the destination had already.
    pub studies_skipped: usize,
    /// Runs of a damaged source that did not read whole, left out (their ids in the source).
    pub runs_unreadable: Vec<i64>,
}

impl CopyReport {
    /// What the copy from `from` to `to` did, in a line.
    pub fn summary(&self, from: &crate::DbTarget, to: &crate::DbTarget) -> String {
        let mut line = format!(
            "{from} → {to}: {} run(s) copied, {} unfinished run(s) replaced by their finished copy, {} already there; \
             {} study(ies) copied, {} already there",
            self.runs_copied, self.runs_replaced, self.runs_skipped, self.studies_copied, self.studies_skipped
        );
        if !self.runs_unreadable.is_empty() {
            let ids: Vec<String> = self.runs_unreadable.iter().map(i64::to_string).collect();
            line += &format!(
                "; {} run(s) of the source did not read whole (damaged pages, or rows no command can read) and were left out: {}",
                ids.len(),
                ids.join(", ")
            );
        }
        line
    }
}

fn unfinished(s: RunStatus) -> bool {
    matches!(s, RunStatus::Running | RunStatus::Aborted)
}

impl Store {
    /// Copies this database's runs and studies into `dest` (see the module's doc). Each run
    /// and each study is copied in one transaction of the destination's: an interrupted copy
    /// leaves whole runs, and copying again finishes it.
    pub fn copy_into(&self, dest: &Store, mut progress: impl FnMut(usize, usize)) -> Result<CopyReport> {
        let mut report = CopyReport::default();
        let runs = self.query(
            "SELECT id, uuid, started_at, finished_at, host, kind, job_name, job, command, status, status_detail, pid,
                imported, cache_flattered FROM runs ORDER BY id",
            &[],
        )?;
        // Source id → destination id, for the studies' members.
        let mut ids: HashMap<i64, i64> = HashMap::new();
        for (n, r) in runs.iter().enumerate() {
            progress(n, runs.len());
            match self.copy_run(dest, r, &mut ids, &mut report) {
                // What a damaged file still reads is copied; the rest is named: damaged pages,
                // or rows that read but not as a run (a figure stored as nothing).
                Err(
                    StoreError::Malformed { .. }
                    | StoreError::Json(_)
                    | StoreError::Type(_)
                    | StoreError::NotFinite { .. },
                ) => report.runs_unreadable.push(r.i64(0)?),
                other => other?,
            }
        }
        progress(runs.len(), runs.len());
        self.copy_studies(dest, &ids, &mut report)?;
        Ok(report)
    }

    /// One run (a row of `runs`): skipped when the destination has it, unless this copy
    /// finishes a run the destination has unfinished; else copied whole in one transaction.
    fn copy_run(&self, dest: &Store, r: &Row, ids: &mut HashMap<i64, i64>, report: &mut CopyReport) -> Result<()> {
        let (id, uuid) = (r.i64(0)?, r.text(1)?);
        let status: RunStatus = named(r.text(9)?)?;
        let there = one(dest.query("SELECT id, status FROM runs WHERE uuid = ?1", vals![&uuid])?);
        let replace = match &there {
            Some(t) => {
                let theirs: RunStatus = named(t.text(1)?)?;
                let finishes_it = unfinished(theirs) && !unfinished(status);
                if !finishes_it {
                    ids.insert(id, t.i64(0)?);
                    report.runs_skipped += 1;
                    return Ok(());
                }
                Some(t.i64(0)?)
            }
            None => None,
        };
        let new_id = self.insert_copy(dest, r, replace)?;
        ids.insert(id, new_id);
        if replace.is_some() {
            report.runs_replaced += 1;
        } else {
            report.runs_copied += 1;
        }
        Ok(())
    }

    /// The run of row `r` written into `dest` (replacing its run `replace`) with everything it
    /// holds: tags, environment, phases, events, scan, ranks. Its new id.
    fn insert_copy(&self, dest: &Store, r: &Row, replace: Option<i64>) -> Result<i64> {
        let (id, uuid) = (r.i64(0)?, r.text(1)?);
        let status: RunStatus = named(r.text(9)?)?;
        let detail = self
            .run(id, true)?
            .ok_or_else(|| StoreError::Request(format!("run {id} went away during the copy")))?;
        let has_environment = !self
            .query("SELECT run_id FROM environments WHERE run_id = ?1", vals![id])?
            .is_empty();
        let scan = self.scan(id)?;
        let job = r
            .opt_text(7)?
            .map(|j| serde_json::from_str(&j))
            .transpose()?
            .unwrap_or_default();
        let kind: RunKind = named(r.text(5)?)?;
        dest.tx(|c| {
            if let Some(old) = replace {
                c.exec("DELETE FROM runs WHERE id = ?1", vals![old])?;
            }
            let new_id = insert_run(
                c,
                &RunRow {
                    id: None,
                    uuid: &uuid,
                    started_at: &r.text(2)?,
                    finished_at: r.opt_text(3)?.as_deref(),
                    host: &r.text(4)?,
                    kind,
                    job_name: r.opt_text(6)?.as_deref(),
                    job: &job,
                    command: r.opt_text(8)?.as_deref(),
                    status,
                    status_detail: r.opt_text(10)?.as_deref(),
                    pid: r.opt_i64(11)?,
                    imported: r.bool(12)?,
                    cache_flattered: r.bool(13)?,
                },
            )?;
            insert_tags(c, new_id, &detail.run.tags)?;
            if has_environment {
                insert_environment(c, new_id, &detail.environment)?;
            }
            for p in &detail.phases {
                insert_phase(c, new_id, p)?;
            }
            for e in &detail.events {
                insert_event(c, new_id, &e.at, e.kind, &e.detail)?;
            }
            if let Some(s) = &scan {
                insert_scan(c, new_id, s)?;
            }
            insert_ranks(c, new_id, &detail.ranks)?;
            insert_rank_phases(c, new_id, &detail.rank_phases)?;
            Ok(new_id)
        })
    }

    /// Every study the destination does not have, its members, events and task samples moved
    /// to the runs' new ids.
    fn copy_studies(&self, dest: &Store, ids: &HashMap<i64, i64>, report: &mut CopyReport) -> Result<()> {
        for r in self.query("SELECT id, uuid FROM studies ORDER BY id", &[])? {
            let (id, uuid) = (r.i64(0)?, r.text(1)?);
            if !dest
                .query("SELECT id FROM studies WHERE uuid = ?1", vals![&uuid])?
                .is_empty()
            {
                report.studies_skipped += 1;
                continue;
            }
            let Some(study) = self.study(id)? else { continue };
            let map = |run: i64| -> Result<i64> {
                ids.get(&run).copied().ok_or_else(|| {
                    StoreError::Request(format!("study {id} names run {run}, which is not in the database"))
                })
            };
            let mut new = NewStudy {
                params: study.params,
                members: study.members,
                events: study.events,
                task_samples: study.task_samples,
            };
            for m in &mut new.members {
                m.run_id = map(m.run_id)?;
            }
            for e in &mut new.events {
                e.run_id = e.run_id.map(map).transpose()?;
            }
            for s in &mut new.task_samples {
                s.run_id = s.run_id.map(map).transpose()?;
            }
            dest.tx(|c| insert_study(c, None, &uuid, &study.created_at, &new))?;
            report.studies_copied += 1;
        }
        Ok(())
    }
}
