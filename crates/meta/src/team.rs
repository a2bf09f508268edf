//! `mpirun storlab meta`: a metadata workload run by every rank of a team as one run. Every rank
//! lays out its tree in its own target (`%r`, `%h` filled in); ranks whose workers share a tree
//! and whose targets are one directory share one tree, rank 0's, as mdtest's ranks do without
//! -u (their workers numbered apart); all start together or not at all
//! (`storlab_session::team::start::start_together`), rank 0 makes a shared tree before the others
//! use it, the phases run together, rank 0 stores the one run, and each tree goes at the end
//! unless kept.

use std::path::PathBuf;

use storlab_model::run::Tag;
use storlab_session::team::start::{expand, start_together, Rank0, Stored};
use storlab_session::team::{agree, Team};
use storlab_session::{Executed, LiveRun, SessionError};

use crate::job::MetaJob;
use crate::layout::Layout;
use crate::record::{run_job_team, Record};
use crate::MetaError;

/// What a rank's part of a meta run left.
pub struct Together {
    /// Rank 0's store and the run it stored.
    pub stored: Stored<Executed>,
    /// The tree this rank kept (`--keep`) when it owns one.
    pub kept: Option<PathBuf>,
    /// The ranks shared one tree.
    pub shared: bool,
}

/// The sum of the workers of the ranks below this one: where its workers' numbers start.
fn worker_base(workers: &[Vec<u8>], rank: u32) -> u32 {
    workers[..rank as usize]
        .iter()
        .map(|b| u32::from_le_bytes(b.as_slice().try_into().unwrap_or_default()))
        .sum()
}

/// Runs `job` as one rank of `team` (see the module's doc). `open` is rank 0's database and
/// live views, called when every rank is ready.
pub fn run(
    team: &dyn Team,
    mut job: MetaJob,
    command: &str,
    tags: &[Tag],
    open: impl FnOnce() -> Result<Rank0, String>,
) -> Result<Together, MetaError> {
    let rank0 = team.rank() == 0;
    job.target = expand(&job.target, team.rank(), team.host());
    let layout = Layout::prepare(&job);
    let ready = layout.as_ref().map(|_| ()).map_err(|e| e.to_string());
    let targets = team.all_gather(job.target.as_os_str().as_encoded_bytes());
    let shared = job.shared_dir && targets.iter().all(|t| *t == targets[0]);
    let shape = format!("phases {:?}{}", job.phases, if shared { ", one tree" } else { "" });
    let workers = team.all_gather(&job.workers.to_le_bytes());
    let root = layout
        .as_ref()
        .map(|l| l.root.as_os_str().as_encoded_bytes().to_vec())
        .unwrap_or_default();
    let roots = team.all_gather(&root);
    let rank0_holds = start_together(team, ready, &shape, "job", open)?;
    let mut layout = layout?;
    if shared {
        let root = PathBuf::from(String::from_utf8_lossy(&roots[0]).into_owned());
        layout.share_among_ranks(root, worker_base(&workers, team.rank()), rank0);
    }
    // Rank 0 makes a shared tree; the meeting after is the others' wait for it.
    let made = layout.make().map_err(|e| e.to_string());
    agree(team, made).map_err(|e| MetaError::Session(SessionError::Rank(e)))?;
    let (mut store, live) = rank0_holds.map_or((None, None), |r| (Some(r.store), r.live));
    let rec = Record {
        command,
        tags,
        live: live.as_deref().map(|l| l as &dyn LiveRun),
    };
    let ran = run_job_team(team, store.as_mut(), &mut layout, rec);
    drop(live);
    let kept = if job.keep {
        layout.owns_tree().then(|| layout.root.clone())
    } else {
        layout.remove()?;
        None
    };
    Ok(Together {
        stored: store.zip(ran?),
        kept,
        shared,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_ranks_workers_are_numbered_after_the_ranks_below_it() {
        let workers: Vec<Vec<u8>> = [4u32, 2, 3].iter().map(|w| w.to_le_bytes().to_vec()).collect();
        assert_eq!(worker_base(&workers, 0), 0);
        assert_eq!(worker_base(&workers, 1), 4);
        assert_eq!(worker_base(&workers, 2), 6);
    }
}
