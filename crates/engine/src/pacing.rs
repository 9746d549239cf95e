//! Pacing on an absolute schedule.
//!
//! Slot `j` (a burst of `burst` frames, 1 for evenly spaced traffic) is due at
//! `start + j·burst/rate`. Each call to [`Pacer::due`] says how many frames are due now and not
//! yet issued, capped at the batch size. Because the schedule is absolute, small delays are made
//! up and no drift accumulates; after a stall the debt is capped at `max_debt` frames: anything
//! beyond is *slipped* (dropped from the schedule and reported), so a stall never turns into an
//! unbounded burst (the cap is 10 ms worth of frames). The batch size follows the rate (about 50 µs worth of frames, at least one
//! burst, at most [`MAX_BATCH`]).
//!
//! Pure arithmetic on the times it is given: no clock, no sleeping (the caller does that).

/// The largest number of frames handed to the kernel in one go.
pub const MAX_BATCH: u64 = 256;

#[derive(Debug, Clone)]
pub struct Pacer {
    start_ns: u64,
    rate: f64,
    burst: u64,
    batch: u64,
    max_debt: u64,
    /// Frames handed out so far.
    issued: u64,
    /// Frames dropped from the schedule after stalls.
    slipped: u64,
    /// Stop after this many frames (u64::MAX for none).
    limit: u64,
    /// The largest debt (frames due but not yet issued) seen.
    max_seen_debt: u64,
    /// Duration-limited schedules: slipped frames use up the limit (the schedule ends on
    /// time); frame-limited ones: exactly `limit` frames are issued, however late.
    slips_use_limit: bool,
}

impl Pacer {
    /// A schedule of `rate` frames/s in bursts of `burst` frames starting at `start_ns`.
    pub fn new(start_ns: u64, rate: f64, burst: u32, limit: Option<u64>) -> Self {
        assert!(rate > 0.0 && rate.is_finite(), "rate must be positive");
        let burst = u64::from(burst.max(1));
        let batch = ((rate * 50e-6).ceil() as u64)
            .clamp(1, MAX_BATCH)
            .max(burst);
        // Catch up at most ~10 ms worth of frames (and at least a few batches) after a stall:
        // a busy machine delays wake-ups by milliseconds; longer stalls slip.
        let max_debt = ((rate * 10e-3).ceil() as u64).max(4 * batch).max(burst);
        Pacer {
            start_ns,
            rate,
            burst,
            batch,
            max_debt,
            issued: 0,
            slipped: 0,
            limit: limit.unwrap_or(u64::MAX),
            max_seen_debt: 0,
            slips_use_limit: false,
        }
    }

    /// Makes slipped frames count toward the limit, so the schedule ends at its planned time
    /// (for duration-limited streams).
    pub fn slips_use_limit(mut self) -> Self {
        self.slips_use_limit = true;
        self
    }

    fn spent(&self) -> u64 {
        if self.slips_use_limit {
            self.issued + self.slipped
        } else {
            self.issued
        }
    }

    /// Overrides the cap on catch-up debt (frames).
    pub fn with_max_debt(mut self, frames: u64) -> Self {
        self.max_debt = frames.max(self.burst);
        self
    }

    pub fn batch(&self) -> u64 {
        self.batch
    }

    pub fn issued(&self) -> u64 {
        self.issued
    }

    pub fn slipped(&self) -> u64 {
        self.slipped
    }

    pub fn max_seen_debt(&self) -> u64 {
        self.max_seen_debt
    }

    pub fn done(&self) -> bool {
        self.spent() >= self.limit
    }

    /// Frames the schedule has made due by `now_ns` (whole bursts; slot 0 is due at start).
    fn scheduled(&self, now_ns: u64) -> u64 {
        if now_ns < self.start_ns {
            return 0;
        }
        let elapsed = (now_ns - self.start_ns) as f64 * 1e-9;
        let slots = (elapsed * self.rate / self.burst as f64).floor() as u64 + 1;
        slots.saturating_mul(self.burst)
    }

    /// Frames due now and not yet issued, at most one batch; call [`Pacer::issue`] with the
    /// number actually handed to the kernel.
    pub fn due(&mut self, now_ns: u64) -> u64 {
        let sched = self
            .scheduled(now_ns)
            .min(self.limit.saturating_add(self.slipped));
        let mut debt = sched.saturating_sub(self.issued + self.slipped);
        if debt > self.max_debt {
            self.slipped += debt - self.max_debt;
            debt = self.max_debt;
        }
        self.max_seen_debt = self.max_seen_debt.max(debt);
        debt.min(self.batch)
            .min(self.limit - self.issued.min(self.limit))
    }

    /// Records that `n` frames were issued.
    pub fn issue(&mut self, n: u64) {
        self.issued += n;
    }

    /// When the next frame not yet issued is due (monotonic ns).
    pub fn next_due_ns(&self) -> u64 {
        let next = self.issued + self.slipped;
        let slot = next / self.burst;
        self.start_ns + (slot as f64 * self.burst as f64 / self.rate * 1e9).round() as u64
    }

    /// The time the schedule ends for a duration-limited stream is the caller's business; for a
    /// frame-limited one it is when the last frame is due.
    pub fn end_ns(&self) -> Option<u64> {
        (self.limit != u64::MAX).then(|| {
            let last_slot = (self.limit - 1) / self.burst;
            self.start_ns + (last_slot as f64 * self.burst as f64 / self.rate * 1e9).round() as u64
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn absolute_schedule_makes_up_small_delays() {
        let mut p = Pacer::new(1_000, 1000.0, 1, None); // one frame per ms
        assert_eq!(p.due(0), 0);
        assert_eq!(p.due(1_000), 1);
        p.issue(1);
        assert_eq!(p.due(1_000 + MS / 2), 0);
        assert_eq!(p.next_due_ns(), 1_000 + MS);
        // Late by 2.5 ms: frames 1, 2 and 3 are all due now (one per batch at this rate).
        for _ in 0..3 {
            assert_eq!(p.due(1_000 + 3 * MS + MS / 2), 1);
            p.issue(1);
        }
        assert_eq!(p.due(1_000 + 3 * MS + MS / 2), 0);
        assert_eq!(p.issued(), 4);
        assert_eq!(p.slipped(), 0);
        assert_eq!(p.next_due_ns(), 1_000 + 4 * MS);
    }

    #[test]
    fn batch_follows_rate() {
        assert_eq!(Pacer::new(0, 10_000.0, 1, None).batch(), 1);
        assert_eq!(Pacer::new(0, 100_000.0, 1, None).batch(), 5);
        assert_eq!(Pacer::new(0, 1_000_000.0, 1, None).batch(), 50);
        assert_eq!(Pacer::new(0, 100e6, 1, None).batch(), MAX_BATCH);
        assert_eq!(Pacer::new(0, 1000.0, 32, None).batch(), 32);
    }

    #[test]
    fn stall_catch_up_is_bounded_and_slip_is_counted() {
        let mut p = Pacer::new(0, 1_000_000.0, 1, None).with_max_debt(100);
        assert_eq!(p.due(0), 1);
        p.issue(1);
        // A 10 ms stall: 10,000 frames would be due; only 100 are caught up, in batches.
        let now = 10 * MS;
        let mut sent = 0;
        loop {
            let n = p.due(now);
            if n == 0 {
                break;
            }
            assert!(n <= p.batch());
            p.issue(n);
            sent += n;
        }
        assert_eq!(sent, 100);
        assert_eq!(p.issued() + p.slipped(), 10_001);
        assert_eq!(p.max_seen_debt(), 100);
        // And the schedule goes on from there, not from the stall.
        assert_eq!(p.due(now + 1_000), 1);
    }

    #[test]
    fn bursts_come_whole() {
        let mut p = Pacer::new(0, 1000.0, 10, None); // 10 frames every 10 ms
        assert_eq!(p.due(0), 10);
        p.issue(10);
        assert_eq!(p.due(9 * MS), 0);
        assert_eq!(p.next_due_ns(), 10 * MS);
        assert_eq!(p.due(10 * MS), 10);
    }

    #[test]
    fn duration_limit_ends_on_time_despite_slips() {
        // 1000 frames planned over 1 s; a 100 ms stall slips most of those frames.
        let mut p = Pacer::new(0, 1000.0, 1, Some(1000))
            .with_max_debt(10)
            .slips_use_limit();
        let mut now = 0;
        while !p.done() {
            let n = p.due(now);
            p.issue(n);
            now += if now == 500 * MS { 100 * MS } else { MS };
        }
        assert_eq!(p.issued() + p.slipped(), 1000);
        assert_eq!(p.slipped(), 90);
        // (this loop issues one batch per simulated ms, so catching up 10 frames takes 10 ms)
        assert!(now <= 1_011 * MS, "ended on time: {now}");
    }

    #[test]
    fn frame_limit_is_exact() {
        let mut p = Pacer::new(0, 1e6, 1, Some(1000));
        let mut now = 0;
        while !p.done() {
            let n = p.due(now);
            p.issue(n);
            now += 7_000;
        }
        assert_eq!(p.issued(), 1000);
        assert_eq!(p.due(now + 1_000_000_000), 0);
        assert_eq!(p.end_ns(), Some(999_000));
    }
}
