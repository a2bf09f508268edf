//! `storlab qualify --against`: an earlier qualification found in the database and its plan read
//! again, to be run again after a firmware, kernel or controller change; the report compares
//! the two criterion by criterion (crates/report's `qualify::comparison`).

use std::path::Path;

use storlab_model::qualify::QualifyParams;
use storlab_model::study::{StudyKind, StudyParams};
use storlab_store::Store;

use crate::plan::Plan;
use crate::{input, QualifyError};

/// The qualification `spec` names: its study id, the id of one of its runs, or `KEY=VALUE` (the
/// newest qualification whose runs carry that tag). Returns its id and record.
pub fn earlier(store: &Store, spec: &str) -> Result<(i64, QualifyParams), QualifyError> {
    let ids = store.studies_of_kind(StudyKind::Qualify)?;
    let load = |id: i64| -> Result<Option<(i64, QualifyParams, Vec<i64>)>, QualifyError> {
        Ok(store.study(id)?.and_then(|s| match s.params {
            StudyParams::Qualify(p) => Some((id, p, s.members.iter().map(|m| m.run_id).collect())),
            _ => None,
        }))
    };
    let t = spec.trim();
    if let Ok(id) = t.parse::<i64>() {
        if let Some((id, p, _)) = load(id)? {
            return Ok((id, p));
        }
        for sid in &ids {
            if let Some((sid, p, runs)) = load(*sid)? {
                if runs.contains(&id) {
                    return Ok((sid, p));
                }
            }
        }
        return Err(input(format!(
            "--against {id}: no qualification in {} has that study id or a run with that id",
            store.target()
        )));
    }
    let (key, value) = storlab_model::run::parse_tag(t).map_err(|_| {
        input(format!(
            "--against {t}: expected a qualification's id, one of its runs' id, or KEY=VALUE"
        ))
    })?;
    for sid in &ids {
        let Some((sid, p, runs)) = load(*sid)? else { continue };
        for r in runs {
            if let Some(run) = store.run(r, false)? {
                if run.run.tags.iter().any(|(k, v)| *k == key && *v == value) {
                    return Ok((sid, p));
                }
            }
        }
    }
    Err(input(format!(
        "--against {t}: no qualification in {} has runs tagged {key}={value}",
        store.target()
    )))
}

/// The earlier qualification's plan, as it was then (its job files are read from where they
/// were, relative to the plan's place).
pub fn plan_of(p: &QualifyParams) -> Result<Plan, QualifyError> {
    Plan::parse(&p.plan_text, Path::new(&p.plan_path))
}
