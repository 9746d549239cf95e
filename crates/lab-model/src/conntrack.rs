//! The lab DUT's connection table counters (issue #15), as a trial record carries them
//! (`bench-model`'s connection records embed [`ConntrackStats`]: its serde form is part of
//! `trials.jsonl`). Reading them from the kernel is `lab::conntrack`'s job.

use serde::{Deserialize, Serialize};

/// The DUT's connection table counters at one moment (sums over CPUs from `conntrack -S`,
/// entries from `conntrack -C`, and the capacity rule's refusals).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ConntrackStats {
    /// Entries in the table now.
    pub entries: u64,
    pub insert: u64,
    pub insert_failed: u64,
    pub drop: u64,
    pub early_drop: u64,
    /// New connections the capacity rule dropped (0 without a rule).
    pub refused: u64,
}

impl ConntrackStats {
    /// The counters' growth from `before` to `self` (entries as they are now).
    pub fn since(&self, before: &ConntrackStats) -> ConntrackStats {
        ConntrackStats {
            entries: self.entries,
            insert: self.insert.saturating_sub(before.insert),
            insert_failed: self.insert_failed.saturating_sub(before.insert_failed),
            drop: self.drop.saturating_sub(before.drop),
            early_drop: self.early_drop.saturating_sub(before.early_drop),
            refused: self.refused.saturating_sub(before.refused),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The record form: field names and order as `trials.jsonl` has them.
    #[test]
    fn serde_form_is_the_records() {
        let s = ConntrackStats {
            entries: 1,
            insert: 2,
            insert_failed: 3,
            drop: 4,
            early_drop: 5,
            refused: 6,
        };
        let j = serde_json::to_string(&s).unwrap();
        assert_eq!(
            j,
            r#"{"entries":1,"insert":2,"insert_failed":3,"drop":4,"early_drop":5,"refused":6}"#
        );
        assert_eq!(serde_json::from_str::<ConntrackStats>(&j).unwrap(), s);
    }

    #[test]
    fn growth_saturates_and_keeps_the_entries_of_now() {
        let before = ConntrackStats {
            insert: 5,
            drop: 9,
            ..Default::default()
        };
        let now = ConntrackStats {
            entries: 3,
            insert: 20,
            drop: 2,
            ..Default::default()
        };
        let d = now.since(&before);
        assert_eq!((d.entries, d.insert, d.drop), (3, 15, 0));
    }
}
