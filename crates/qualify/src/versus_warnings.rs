//! What a compare's runs carry that its verdicts' reader must know, read from the stored runs:
//! each phase's bound on each side (the USE reading of crates/stats' `bound`) — sides bound by
//! different things measured different resources, a side bound by the CPU or a rate measured
//! that and not the storage, a side served by the page cache measured memory —, runs the
//! engine flagged as flattered by the cache, and runs that did not end well.

use std::collections::BTreeMap;

use storlab_model::study::{Member, Role};
use storlab_model::versus::CompareParams;
use storlab_stats::bound::{self, BoundKind};
use storlab_store::Store;

use crate::QualifyError;

/// The warnings of a compare of `members`, in the phases' order.
pub fn of(store: &Store, p: &CompareParams, members: &[Member]) -> Result<Vec<String>, QualifyError> {
    // Per phase and side: how many runs each bound kind held, and the runs the cache flattered.
    let mut kinds: BTreeMap<(usize, usize), BTreeMap<&'static str, u32>> = BTreeMap::new();
    let mut flattered: BTreeMap<usize, Vec<i64>> = BTreeMap::new();
    let mut labels: BTreeMap<usize, String> = BTreeMap::new();
    for m in members {
        let Role::Side { target, .. } = &m.role else { continue };
        let Some(side) = p.names.iter().position(|n| n == target) else {
            continue;
        };
        let Some(run) = store.run(m.run_id, false)? else {
            continue;
        };
        for (i, ph) in run.phases.iter().enumerate() {
            labels.entry(i).or_insert_with(|| format!("{} {}", i + 1, ph.kind));
            let b = bound::of(ph, &run.environment);
            *kinds.entry((i, side)).or_default().entry(b.kind.name()).or_default() += 1;
            if ph.cache_flattered {
                flattered.entry(side).or_default().push(m.run_id);
            }
        }
    }
    let mut out = Vec::new();
    for (i, label) in &labels {
        let most = |side: usize| -> Option<(&'static str, u32, u32)> {
            let k = kinds.get(&(*i, side))?;
            let all = k.values().sum();
            k.iter().max_by_key(|(_, n)| **n).map(|(name, n)| (*name, *n, all))
        };
        let (Some(a), Some(b)) = (most(0), most(1)) else {
            continue;
        };
        // A side whose bound the evidence does not name (unknown, mixed) is no different limit.
        let named = |k: &str| k != BoundKind::Unknown.name() && k != BoundKind::Mixed.name();
        if a.0 != b.0 && named(a.0) && named(b.0) {
            out.push(format!(
                "phase {label}: {} was bound by {} ({} of {} runs), {} by {} ({} of {}): the two measured different limits, so the ratio is of those limits, not of the storage alone",
                p.names[0], a.0, a.1, a.2, p.names[1], b.0, b.1, b.2
            ));
        }
        for (side, (kind, n, all)) in [(0, a), (1, b)] {
            let why = match kind {
                k if k == BoundKind::Cpu.name() => "the benchmark's CPU, not the storage",
                k if k == BoundKind::Rate.name() => "a rate (asked for, or a cgroup's limit), not the storage",
                k if k == BoundKind::Cache.name() => "the page cache, not the storage",
                _ => continue,
            };
            out.push(format!(
                "phase {label}: {} was bound by {kind} in {n} of {all} runs: its figures measure {why}",
                p.names[side]
            ));
        }
    }
    for (side, runs) in flattered {
        out.push(format!(
            "{}: cache? runs {} moved more than their devices did (the page cache served or absorbed it)",
            p.names[side],
            runs.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
        ));
    }
    if p.stopped != "every figure decided" && p.stopped != "--max-repeats" && p.stopped != "--max-time" {
        out.push(format!("stopped early: {}", p.stopped));
    }
    Ok(out)
}
