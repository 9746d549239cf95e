//! What a run is missing: searches expected by its cases against those finished, those with
//! trials but no result ("in progress"), and those never started.

use bench_model::plan::Case;

use super::index::Index;
use crate::model::Completeness;

/// Fills `completeness` from the index of the records and the run's `cases` × `reps`.
pub(crate) fn check(completeness: &mut Completeness, index: &Index, cases: &[Case], reps: u32) {
    completeness.finished = index.done.len();
    completeness.expected = cases
        .iter()
        .map(|c| c.methodologies.len() * reps as usize)
        .sum();
    for ((case, rep, m), ts) in &index.trials {
        if !index.done.contains_key(&(case.clone(), *rep, *m)) {
            completeness.in_progress.push(format!(
                "{case} ({}, repetition {rep}): {} trial{} recorded, search unfinished",
                m.name(),
                ts.len(),
                if ts.len() == 1 { "" } else { "s" }
            ));
        }
    }
    for c in cases {
        for m in &c.methodologies {
            let missing = (0..reps)
                .filter(|r| {
                    let k = (c.id.clone(), *r, *m);
                    !index.done.contains_key(&k) && !index.trials.contains_key(&k)
                })
                .count();
            if missing > 0 {
                completeness.missing.push(format!(
                    "{} ({}): {missing} of {reps} repetition{} not run",
                    c.id,
                    m.name(),
                    if reps == 1 { "" } else { "s" }
                ));
            }
        }
    }
}
