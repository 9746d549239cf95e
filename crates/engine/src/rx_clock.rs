//! The AF_PACKET receive clock: the kernel stamps each received frame on CLOCK_REALTIME, the
//! signature carries its send time on CLOCK_MONOTONIC, and latency is their difference. The
//! two clocks differ by an offset that stays put while NTP slews (it slews both alike) but that
//! a **step** of the realtime clock (an NTP `makestep`, `date -s`, a VM agent setting the time
//! after the VM was paused, a leap second) moves at once. Converting with one offset taken at
//! the receiver's start, a step of −0.5 s in the middle of a trial made every later frame look
//! 0.5 s in the future: 21,528 of 40,000 frames counted invalid by timestamp and as lost
//! (measured by stepping the clock during `tests/rx_validation.rs`; `tests/clock_step.rs`
//! does it by hand).
//!
//! [`RxClock`] follows the offset instead: the receive loop [`resample`](RxClock::resample)s it
//! whenever the ring hands over a block (every frame in the block was stamped before that
//! moment) and at least every poll timeout (5 ms) while idle, and a change larger than
//! [`STEP_NS`] is a step. After a step a frame may carry a stamp from either side of it (a
//! block opened before the step is handed over after it), so
//! [`to_monotonic`](RxClock::to_monotonic) tries the new offset first and keeps it when the
//! result is possible — not before the last sample preceding the step, not after the latest
//! sample — and otherwise takes the old one. Frames received after the step are always placed
//! right; a frame received before it is placed right when the step is larger than the time the
//! frame waited in the ring (a block is handed over within the ring's retire time, 2 ms, plus
//! the receive loop's delay). Smaller steps may misplace such a frame by at most the step.
//!
//! The arithmetic ([`RxClock::new`], [`resample`](RxClock::resample),
//! [`to_monotonic`](RxClock::to_monotonic)) is pure and unit-tested; [`RxClock::start`],
//! [`resample_now`](RxClock::resample_now) and [`receive_time`](RxClock::receive_time) read
//! the clocks for a receive loop.

use crate::sys::{self, RxPacket};

/// realtime − monotonic, and the monotonic time it was read at.
fn read_clocks() -> (i64, u64) {
    (sys::realtime_minus_monotonic_ns(), sys::monotonic_ns())
}

/// A change of the realtime − monotonic offset larger than this between two samples is a step.
/// Slewing does not change the offset, and it is read with a bracket of well under a
/// microsecond (the tightest of 16 tries); 1 ms is far above that noise and below any step NTP
/// makes (ntpd slews offsets under 128 ms, chrony steps from 1 s by default).
pub const STEP_NS: i64 = 1_000_000;

/// Converts kernel CLOCK_REALTIME receive stamps to CLOCK_MONOTONIC across steps of the
/// realtime clock.
#[derive(Debug, Clone)]
pub struct RxClock {
    /// realtime − monotonic at the latest sample.
    offset: i64,
    /// CLOCK_MONOTONIC of the latest sample.
    sampled_at: u64,
    /// The latest step, if any: frames may still carry stamps from before it.
    step: Option<Step>,
    steps: u64,
    largest_step_ns: u64,
}

#[derive(Debug, Clone, Copy)]
struct Step {
    /// The offset before the step.
    old_offset: i64,
    /// The last sample before the step (CLOCK_MONOTONIC): nothing after the step was received
    /// before it.
    not_before: u64,
}

impl RxClock {
    /// Starts from the offset `offset` (realtime − monotonic) sampled at monotonic time `at`.
    pub fn new(offset: i64, at: u64) -> RxClock {
        RxClock {
            offset,
            sampled_at: at,
            step: None,
            steps: 0,
            largest_step_ns: 0,
        }
    }

    /// Starts from the clocks as they read now (when a receiver starts).
    pub fn start() -> RxClock {
        let (offset, at) = read_clocks();
        RxClock::new(offset, at)
    }

    /// Re-reads the clocks: at each poll of the ring, so that samples stay close together
    /// while no block is handed over. Returns whether the realtime clock stepped.
    pub fn resample_now(&mut self) -> bool {
        let (offset, at) = read_clocks();
        self.resample(offset, at)
    }

    /// The monotonic receive time of `pkt`, re-reading the clocks first when it is the first
    /// of a block just handed over (every frame of the block was stamped before that).
    pub fn receive_time(&mut self, pkt: &RxPacket<'_>) -> u64 {
        if pkt.first_in_block {
            self.resample_now();
        }
        self.to_monotonic(pkt.ts_realtime_ns)
    }

    /// Records a new sample of the offset taken at monotonic time `at`, after the frames about
    /// to be converted were stamped. Returns whether the realtime clock stepped since the
    /// previous sample.
    pub fn resample(&mut self, offset: i64, at: u64) -> bool {
        let change = offset - self.offset;
        let stepped = change.abs() > STEP_NS;
        if stepped {
            self.step = Some(Step {
                old_offset: self.offset,
                not_before: self.sampled_at,
            });
            self.steps += 1;
            self.largest_step_ns = self.largest_step_ns.max(change.unsigned_abs());
        }
        self.offset = offset;
        self.sampled_at = self.sampled_at.max(at);
        stepped
    }

    /// The monotonic time of a frame stamped `realtime_ns` by the kernel.
    pub fn to_monotonic(&self, realtime_ns: u64) -> u64 {
        let with_new = realtime_ns as i64 - self.offset;
        let Some(step) = self.step else {
            return with_new.max(0) as u64;
        };
        let possible = with_new >= step.not_before as i64 - STEP_NS
            && with_new <= self.sampled_at as i64 + STEP_NS;
        if possible {
            with_new.max(0) as u64
        } else {
            (realtime_ns as i64 - step.old_offset).max(0) as u64
        }
    }

    /// Steps of the realtime clock seen since the start.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// The largest of them, in nanoseconds (0 without one).
    pub fn largest_step_ns(&self) -> u64 {
        self.largest_step_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    /// realtime − monotonic before any step: the realtime clock reads 1,000 s ahead.
    const OFFSET: i64 = 1_000_000_000_000;

    /// The stamp the kernel gives a frame received at monotonic `t` while the offset is `off`.
    fn stamp(t: u64, off: i64) -> u64 {
        (t as i64 + off) as u64
    }

    #[test]
    fn without_a_step_the_offset_converts() {
        let mut c = RxClock::new(OFFSET, 10 * MS);
        assert!(
            !c.resample(OFFSET + 3_000, 15 * MS),
            "a change within the reading's noise is not a step"
        );
        assert_eq!(c.to_monotonic(stamp(14 * MS, OFFSET + 3_000)), 14 * MS);
        assert_eq!((c.steps(), c.largest_step_ns()), (0, 0));
    }

    #[test]
    fn a_backward_step_places_frames_from_both_sides_of_it() {
        // Samples at 10 ms and 15 ms; the realtime clock steps back 500 ms at 12 ms.
        let back = OFFSET - 500 * MS as i64;
        let mut c = RxClock::new(OFFSET, 10 * MS);
        let before = [9 * MS, 11 * MS, 11_900_000];
        let after = [12_100_000, 14 * MS];
        assert!(c.resample(back, 15 * MS));
        for t in before {
            assert_eq!(c.to_monotonic(stamp(t, OFFSET)), t, "before the step: {t}");
        }
        for t in after {
            assert_eq!(c.to_monotonic(stamp(t, back)), t, "after the step: {t}");
        }
        // A block opened before the step and handed over later still has old stamps.
        assert!(!c.resample(back, 20 * MS));
        assert_eq!(c.to_monotonic(stamp(11_950_000, OFFSET)), 11_950_000);
        assert_eq!(c.to_monotonic(stamp(19 * MS, back)), 19 * MS);
        // Long after, frames are converted by the new offset.
        assert!(!c.resample(back, 2_000 * MS));
        assert_eq!(c.to_monotonic(stamp(1_999 * MS, back)), 1_999 * MS);
        assert_eq!((c.steps(), c.largest_step_ns()), (1, 500 * MS));
    }

    #[test]
    fn a_forward_step_places_frames_from_both_sides_of_it() {
        let ahead = OFFSET + 2_000 * MS as i64;
        let mut c = RxClock::new(OFFSET, 10 * MS);
        assert!(c.resample(ahead, 15 * MS));
        for t in [8 * MS, 11 * MS, 14_900_000] {
            assert_eq!(c.to_monotonic(stamp(t, OFFSET)), t, "before the step: {t}");
        }
        for t in [10_500_000, 14_900_000] {
            assert_eq!(c.to_monotonic(stamp(t, ahead)), t, "after the step: {t}");
        }
        assert!(!c.resample(ahead, 30 * MS));
        assert_eq!(c.to_monotonic(stamp(29 * MS, ahead)), 29 * MS);
        assert_eq!(c.to_monotonic(stamp(14 * MS, OFFSET)), 14 * MS);
        assert_eq!((c.steps(), c.largest_step_ns()), (1, 2_000 * MS));
    }

    #[test]
    fn a_second_step_replaces_the_first() {
        let back = OFFSET - 300 * MS as i64;
        let forth = back + 700 * MS as i64;
        let mut c = RxClock::new(OFFSET, 10 * MS);
        c.resample(back, 20 * MS);
        assert!(!c.resample(back, 996 * MS));
        c.resample(forth, 1_000 * MS);
        assert_eq!(c.to_monotonic(stamp(999 * MS, back)), 999 * MS);
        assert_eq!(c.to_monotonic(stamp(999 * MS, forth)), 999 * MS);
        assert_eq!((c.steps(), c.largest_step_ns()), (2, 700 * MS));
    }

    #[test]
    fn a_step_smaller_than_a_frame_s_wait_misplaces_it_by_at_most_the_step() {
        // A 3 ms step back while a frame waited 5 ms in the ring: both candidates are
        // possible, the new offset is taken, and the error is the step.
        let back = OFFSET - 3 * MS as i64;
        let mut c = RxClock::new(OFFSET, 10 * MS);
        c.resample(back, 15 * MS);
        let t = 10 * MS;
        let got = c.to_monotonic(stamp(t, OFFSET));
        assert!(got.abs_diff(t) <= 3 * MS, "{got}");
    }

    #[test]
    fn stamps_before_the_epoch_of_the_monotonic_clock_do_not_wrap() {
        let c = RxClock::new(OFFSET, 10 * MS);
        assert_eq!(c.to_monotonic(0), 0);
        let mut c = RxClock::new(OFFSET, 10 * MS);
        c.resample(OFFSET - 500 * MS as i64, 15 * MS);
        assert_eq!(c.to_monotonic(0), 0);
    }
}
