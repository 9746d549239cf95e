//! What `bench rx` checks, from its counts alone, apart from how they were taken (so that a
//! test can feed it real counts and show it fails when a frame is counted twice or missed).

/// What `bench rx` checks, from its counts alone (so that a test can show it fails when a
/// frame is counted twice or missed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxVerdict {
    /// Every frame put on the wire was counted exactly once: counted = sent, and when the
    /// source numbers its frames, distinct sequence numbers = sent and no duplicates.
    pub counted_once: bool,
    /// [`Self::counted_once`] and sent = N (the veth refused none).
    pub exact: bool,
}

impl RxVerdict {
    /// `numbered`: the source gives every frame its own sequence number (the XDP sender;
    /// trafgen repeats one frame).
    pub fn of(
        frames: u64,
        sent: u64,
        counted: u64,
        distinct: u64,
        duplicates: u64,
        numbered: bool,
    ) -> RxVerdict {
        let distinct_ok = !numbered || (distinct == sent && duplicates == 0);
        let counted_once = counted == sent && distinct_ok;
        RxVerdict {
            counted_once,
            exact: counted_once && sent == frames,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rx_verdict_needs_every_frame_on_the_wire_counted_once_and_none_refused() {
        // All 1000 sent, counted once each.
        let ok = RxVerdict::of(1000, 1000, 1000, 1000, 0, true);
        assert!(ok.counted_once && ok.exact);
        // One frame counted twice (another missed): the totals agree, the distinct count not.
        let twice = RxVerdict::of(1000, 1000, 1000, 999, 1, true);
        assert!(!twice.counted_once && !twice.exact);
        // One frame counted twice on top of all the others.
        let extra = RxVerdict::of(1000, 1000, 1001, 1000, 1, true);
        assert!(!extra.counted_once && !extra.exact);
        // One frame put on the wire and never counted.
        let missed = RxVerdict::of(1000, 1000, 999, 999, 0, true);
        assert!(!missed.counted_once && !missed.exact);
        // Two frames refused by the veth: what was sent was counted once, but not exact.
        let refused = RxVerdict::of(1000, 998, 998, 998, 0, true);
        assert!(refused.counted_once && !refused.exact);
        // trafgen repeats one frame: only the total counts.
        let trafgen = RxVerdict::of(1000, 1000, 1000, 1, 999, false);
        assert!(trafgen.counted_once && trafgen.exact);
    }
}
