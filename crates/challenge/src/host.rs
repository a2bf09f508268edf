//! What a host checks and decides around its share of a challenge: that the database's pools
//! are the ones it names, which of its own processes are gone (resume takes their files over),
//! the account with each bad file named by its path, and the challenge's end.

use std::path::{Path, PathBuf};

use storlab_model::challenge::{Account, ChallengeSpec, Pool};
use storlab_store::{Store, StoredChallenge};

use crate::run::{check_and_clean, HostOutcome};
use crate::{pool_dir, ChallengeError};

fn canonical(p: &Path) -> Option<PathBuf> {
    std::fs::canonicalize(p).ok()
}

/// Every pool of the challenge must be named by this host with the same directory: the database
/// cannot steer an agent running as root to a directory its host did not name.
pub fn check_pools(spec: &ChallengeSpec, mine: &[Pool]) -> Result<(), ChallengeError> {
    if mine.is_empty() {
        return Err(ChallengeError::Input(format!(
            "name this host's pools: {} (an agent touches only the directories its own host names)",
            spec.pools
                .iter()
                .map(|p| format!("--pool {}={}", p.name, p.path.display()))
                .collect::<Vec<_>>()
                .join(" ")
        )));
    }
    for p in &spec.pools {
        let Some(m) = mine.iter().find(|m| m.name == p.name) else {
            return Err(ChallengeError::Input(format!(
                "the challenge's pool {} ({}) is not named on this host: give --pool {}=DIR",
                p.name,
                p.path.display(),
                p.name
            )));
        };
        let here = canonical(&m.path).ok_or_else(|| {
            ChallengeError::Input(format!("pool {}: {} does not exist here", m.name, m.path.display()))
        })?;
        if canonical(&p.path).as_deref() != Some(here.as_path()) {
            return Err(ChallengeError::Input(format!(
                "pool {}: the database says {}, this host says {}; refusing to start (an agent touches only the directories its own host names)",
                p.name,
                p.path.display(),
                m.path.display()
            )));
        }
    }
    Ok(())
}

/// True when the process `pid` is alive on this host.
fn alive(pid: &str) -> bool {
    if pid.parse::<u32>().is_err() {
        return false;
    }
    // A killed process not yet reaped (a zombie, state Z) is dead too.
    match std::fs::read_to_string(Path::new("/proc").join(pid).join("stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// The agents of this host (`HOST/PID`) holding files in flight whose process is gone: a
/// resumed host takes their files over.
pub fn dead_agents_here(store: &Store, id: i64) -> Result<Vec<String>, ChallengeError> {
    let prefix = format!("{}/", storlab_env::hostname());
    Ok(store
        .agents_in_flight(id)?
        .into_iter()
        .filter(|h| h.strip_prefix(&prefix).is_some_and(|pid| !alive(pid)))
        .collect())
}

/// The account, with each bad file named by its path.
pub fn account(store: &Store, c: &StoredChallenge) -> Result<Account, ChallengeError> {
    Ok(
        store.challenge_account(c.id, |pool, name| match c.spec.pools.get(pool) {
            Some(p) => (p.name.clone(), pool_dir(p, &c.uuid).join(name).display().to_string()),
            None => (format!("#{pool}"), name.to_string()),
        })?,
    )
}

/// The account after this host's share; when nothing is in flight anywhere (and this host was
/// not interrupted), the one host that claims the end checks the pools against the catalogue
/// and removes what is left. Returns the account, what did not match, and whether it ended.
pub fn end_if_over(
    store: &Store,
    c: &StoredChallenge,
    outcome: &HostOutcome,
) -> Result<(Account, Vec<String>, bool), ChallengeError> {
    let acc = account(store, c)?;
    if outcome.interrupted || acc.in_flight() > 0 || !store.claim_end(c.id)? {
        return Ok((acc, Vec::new(), false));
    }
    let problems = check_and_clean(store, c, &acc)?;
    let holds = acc.holds() && problems.is_empty();
    store.set_challenge_status(c.id, if holds { "done" } else { "failed" })?;
    Ok((account(store, c)?, problems, true))
}
