//! `storlab results list --kind qualify`: the qualifications in the database side by side,
//! newest first — a fleet's, when many hosts store into one PostgreSQL database.

use serde::Serialize;
use storlab_model::qualify::QualifyParams;
use storlab_model::run::Tag;
use storlab_model::study::{StudyKind, StudyParams};
use storlab_store::Store;

/// A qualification in a listing.
#[derive(Debug, Clone, Serialize)]
pub struct Listed {
    /// Its study id.
    pub id: i64,
    /// When it was stored.
    pub created_at: String,
    /// The hosts its runs ran on.
    pub hosts: Vec<String>,
    /// Its runs.
    pub runs: usize,
    /// What it found.
    pub params: QualifyParams,
}

/// The qualifications whose runs ran on `host` (when given) and carry every tag of `tags`,
/// newest first, at most `limit`.
pub fn list(
    store: &Store,
    host: Option<&str>,
    tags: &[Tag],
    limit: usize,
) -> Result<Vec<Listed>, storlab_store::StoreError> {
    let mut out = Vec::new();
    for id in store.studies_of_kind(StudyKind::Qualify)? {
        if out.len() >= limit {
            break;
        }
        let Some(study) = store.study(id)? else { continue };
        let StudyParams::Qualify(params) = study.params else {
            continue;
        };
        let mut hosts: Vec<String> = Vec::new();
        let mut tagged = tags.is_empty();
        for m in &study.members {
            if let Some(r) = store.run(m.run_id, false)? {
                if !hosts.contains(&r.run.host) {
                    hosts.push(r.run.host.clone());
                }
                tagged |= tags.iter().all(|t| r.run.tags.contains(t));
            }
        }
        if host.is_some_and(|h| !hosts.iter().any(|x| x == h)) || !tagged {
            continue;
        }
        out.push(Listed {
            id,
            created_at: study.created_at,
            hosts,
            runs: study.members.len(),
            params,
        });
    }
    Ok(out)
}
