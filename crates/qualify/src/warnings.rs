//! What a criterion's figures are, said beside its verdict: a verdict decided on runs the page
//! cache may have flattered, on runs held short of their rate, or on runs cut short is shown
//! with that on the verdict line, in the table, in `--json` and in the certificate — a PASS on
//! the page cache is not a PASS of the disks; neither is one decided on figures the benchmark's
//! own CPU bounded (crates/stats bound.rs).

use storlab_model::qualify::QualifyParams;
use storlab_store::{Store, StoreError};

/// A run held below this share of its target rate fell short of it.
const SHORTFALL: f64 = 0.99;

/// Each criterion's warnings, from its runs as stored (`phases[i]`: the phase criterion `i`
/// reads).
pub(crate) fn flag(store: &Store, params: &mut QualifyParams, phases: &[usize]) -> Result<(), StoreError> {
    for (c, &phase) in params.criteria.iter_mut().zip(phases) {
        let (mut runs, mut cache, mut short, mut cut, mut cpu) = (0, 0, 0, 0, 0);
        for id in c.runs.iter().flatten() {
            let Some(run) = store.run(*id, false)? else { continue };
            let Some(p) = run.phases.get(phase) else { continue };
            runs += 1;
            cache += usize::from(p.cache_flattered);
            short += usize::from(
                p.result
                    .rate
                    .as_ref()
                    .is_some_and(|r| r.achieved < SHORTFALL * r.target),
            );
            cut += usize::from(p.result.interrupted);
            cpu +=
                usize::from(storlab_stats::bound::of(p, &run.environment).kind == storlab_stats::bound::BoundKind::Cpu);
        }
        let of = |n: usize| format!("{n} of {runs} runs");
        c.warnings = [
            (cache, "cache? (the file set is smaller than 3 × RAM and ran without O_DIRECT: the page cache may have flattered the figures)"),
            (short, "rate shortfall (held under 99 % of the target rate)"),
            (cut, "interrupted"),
            (cpu, "cpu-bound (the CPU running the benchmark bounded the figures, not the storage)"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{what}: {}", of(n)))
        .collect();
    }
    Ok(())
}
