//! What a criterion's figures are, said beside its verdict: a verdict decided on runs the page
//! cache may have flattered, on runs held short of their rate, or on runs cut short is shown
//! with that on the verdict line, in the table, in `--json` and in the certificate — a PASS on
//! the page cache is not a PASS of the disks; neither is one decided on figures the benchmark's
//! own CPU bounded (crates/stats bound.rs).

use storlab_model::qualify::QualifyParams;
use storlab_stats::flags::Flag;
use storlab_store::{Store, StoreError};

/// Each criterion's warnings, from its runs as stored (`phases[i]`: the phase criterion `i`
/// reads).
pub(crate) fn flag(store: &Store, params: &mut QualifyParams, phases: &[usize]) -> Result<(), StoreError> {
    for (c, &phase) in params.criteria.iter_mut().zip(phases) {
        let mut runs = 0;
        let mut counts = [0usize; Flag::ALL.len()];
        for id in c.runs.iter().flatten() {
            let Some(run) = store.run(*id, false)? else { continue };
            let Some(p) = run.phases.get(phase) else { continue };
            runs += 1;
            for (n, f) in counts.iter_mut().zip(Flag::ALL) {
                *n += usize::from(f.on(p, &run.environment));
            }
        }
        c.warnings = Flag::ALL
            .into_iter()
            .zip(counts)
            .filter(|(_, n)| *n > 0)
            .map(|(f, n)| format!("{}: {n} of {runs} runs", f.text()))
            .collect();
    }
    Ok(())
}
