//! Studies: a set of runs with typed roles, the study's typed parameters, and an impact
//! study's events and task samples, stored whole in one transaction.

use rusqlite::{params, OptionalExtension};
use storlab_model::study::{Member, NewStudy, Study, StudyEvent, StudyKind, StudyParams, TaskSample};

use crate::runs::named;
use crate::{now_rfc3339, Result, Store};

impl Store {
    /// Stores a study whole — its members with their roles, its events and task samples — in
    /// one transaction, so that it is either there complete or not at all; returns its id.
    pub fn save_study(&mut self, study: &NewStudy) -> Result<i64> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO studies (kind, created_at, params) VALUES (?1, ?2, ?3)",
            params![
                study.params.kind().name(),
                now_rfc3339(),
                serde_json::to_string(&study.params.to_stored()?)?
            ],
        )?;
        let id = tx.last_insert_rowid();
        for m in &study.members {
            tx.execute(
                "INSERT OR REPLACE INTO study_members (study_id, run_id, role) VALUES (?1, ?2, ?3)",
                params![id, m.run_id, serde_json::to_string(&m.role)?],
            )?;
        }
        for (seq, e) in study.events.iter().enumerate() {
            tx.execute(
                "INSERT INTO study_events (study_id, seq, at, t, run_id, kind, detail) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![id, seq as i64, e.at, e.t, e.run_id, e.kind, e.detail],
            )?;
        }
        for (seq, s) in study.task_samples.iter().enumerate() {
            tx.execute(
                "INSERT INTO task_samples (study_id, seq, task, t, run_id, state, percent, bytes_done) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![id, seq as i64, s.task, s.t, s.run_id, s.state.name(), s.percent, s.bytes_done.map(|b| b as i64)],
            )?;
        }
        tx.commit()?;
        Ok(id)
    }

    /// The ids of the studies of one kind, newest first.
    pub fn studies_of_kind(&self, kind: StudyKind) -> Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM studies WHERE kind = ?1 ORDER BY id DESC")?;
        let rows = stmt
            .query_map([kind.name()], |r| r.get(0))?
            .collect::<std::result::Result<Vec<i64>, _>>()?;
        Ok(rows)
    }

    /// A study with its members, events and task samples, or None.
    pub fn study(&self, id: i64) -> Result<Option<Study>> {
        let Some((kind, created_at, params)) = self
            .conn
            .query_row(
                "SELECT kind, created_at, params FROM studies WHERE id = ?1",
                [id],
                |r| {
                    Ok((
                        named::<StudyKind>(0, r.get(0)?)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                },
            )
            .optional()?
        else {
            return Ok(None);
        };
        let params = StudyParams::from_stored(kind, serde_json::from_str(&params)?)?;
        let mut stmt = self
            .conn
            .prepare("SELECT run_id, role FROM study_members WHERE study_id = ?1 ORDER BY run_id")?;
        let members = stmt
            .query_map([id], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?
            .collect::<std::result::Result<Vec<_>, _>>()?
            .into_iter()
            .map(|(run_id, role)| {
                Ok(Member {
                    run_id,
                    role: serde_json::from_str(&role)?,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut stmt = self
            .conn
            .prepare("SELECT t, at, run_id, kind, detail FROM study_events WHERE study_id = ?1 ORDER BY seq")?;
        let events = stmt
            .query_map([id], |r| {
                Ok(StudyEvent {
                    t: r.get(0)?,
                    at: r.get(1)?,
                    run_id: r.get(2)?,
                    kind: r.get(3)?,
                    detail: r.get(4)?,
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
        let mut stmt = self.conn.prepare(
            "SELECT task, t, run_id, state, percent, bytes_done FROM task_samples WHERE study_id = ?1 ORDER BY seq",
        )?;
        let task_samples = stmt
            .query_map([id], |r| {
                Ok(TaskSample {
                    task: r.get(0)?,
                    t: r.get(1)?,
                    run_id: r.get(2)?,
                    state: named(3, r.get(3)?)?,
                    percent: r.get(4)?,
                    bytes_done: r.get::<_, Option<i64>>(5)?.map(|b| b as u64),
                })
            })?
            .collect::<std::result::Result<_, _>>()?;
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
