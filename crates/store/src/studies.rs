//! Studies: a set of runs with typed roles, the study's typed parameters, and an impact
//! study's events and task samples, stored whole in one transaction.

use storlab_model::study::{Member, Study, StudyEvent, StudyKind, StudyParams, TaskSample};

use crate::db::{one, vals};
use crate::runs::named;
use crate::{Result, Store};

impl Store {
    /// The ids of the studies of one kind, newest first.
    pub fn studies_of_kind(&self, kind: StudyKind) -> Result<Vec<i64>> {
        self.query(
            "SELECT id FROM studies WHERE kind = ?1 ORDER BY id DESC",
            vals![kind.name()],
        )?
        .iter()
        .map(|r| r.i64(0))
        .collect()
    }

    /// Every study's id and when it was created (RFC 3339), oldest first.
    pub fn study_times(&self) -> Result<Vec<(i64, String)>> {
        self.query("SELECT id, created_at FROM studies ORDER BY id", &[])?
            .iter()
            .map(|r| Ok((r.i64(0)?, r.text(1)?)))
            .collect()
    }

    /// Every study in a line, newest first: what `storlab results studies` lists.
    pub fn study_list(&self) -> Result<Vec<storlab_model::study::StudySummary>> {
        self.query(
            "SELECT s.id, s.created_at, s.kind, s.params, \
             (SELECT COUNT(*) FROM study_members m WHERE m.study_id = s.id) \
             FROM studies s ORDER BY s.id DESC",
            &[],
        )?
        .iter()
        .map(|r| {
            let params: serde_json::Value = serde_json::from_str(&r.text(3)?)?;
            Ok(storlab_model::study::StudySummary {
                id: r.i64(0)?,
                created_at: r.text(1)?,
                kind: r.text(2)?,
                runs: r.i64(4)?,
                command: params["command"].as_str().map(str::to_string),
            })
        })
        .collect()
    }

    /// A study with its members, events and task samples, or None.
    pub fn study(&self, id: i64) -> Result<Option<Study>> {
        let Some(row) = one(self.query("SELECT kind, created_at, params FROM studies WHERE id = ?1", vals![id])?)
        else {
            return Ok(None);
        };
        let kind: StudyKind = named(row.text(0)?)?;
        let created_at = row.text(1)?;
        let params = StudyParams::from_stored(kind, serde_json::from_str(&row.text(2)?)?)?;
        let members = self
            .query(
                "SELECT run_id, role FROM study_members WHERE study_id = ?1 ORDER BY run_id",
                vals![id],
            )?
            .iter()
            .map(|r| {
                Ok(Member {
                    run_id: r.i64(0)?,
                    role: serde_json::from_str(&r.text(1)?)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let events = self
            .query(
                "SELECT t, at, run_id, kind, detail FROM study_events WHERE study_id = ?1 ORDER BY seq",
                vals![id],
            )?
            .iter()
            .map(|r| {
                Ok(StudyEvent {
                    t: r.f64(0)?,
                    at: r.text(1)?,
                    run_id: r.opt_i64(2)?,
                    kind: r.text(3)?,
                    detail: r.text(4)?,
                })
            })
            .collect::<Result<_>>()?;
        let task_samples = self
            .query(
                "SELECT task, t, run_id, state, percent, bytes_done FROM task_samples WHERE study_id = ?1 ORDER BY seq",
                vals![id],
            )?
            .iter()
            .map(|r| {
                Ok(TaskSample {
                    task: r.u32(0)?,
                    t: r.f64(1)?,
                    run_id: r.opt_i64(2)?,
                    state: named(r.text(3)?)?,
                    percent: r.opt_f64(4)?,
                    bytes_done: r.opt_i64(5)?.map(|b| b as u64),
                })
            })
            .collect::<Result<_>>()?;
        Ok(Some(Study {
            id,
            created_at,
            params,
            members,
            events,
            task_samples,
        }))
    }
}
