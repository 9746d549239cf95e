//! Pacing on an absolute schedule.
//!
//! Frames come in bursts of `burst` frames (1 for evenly spaced traffic). Burst `k` starts at
//! `start + k·period`; frame `j` of a burst is due `j·spacing` after its burst's start. Two
//! shapes ([`Pacer::new`], [`Pacer::with_gap`]):
//!
//! - **rate and burst** (`burst_gap` unset): `period = burst/rate`, `spacing = 0`. The frames
//!   of a burst are due together and go back to back; the average is `rate`.
//! - **burst gap**: the frames of a burst are paced at `rate` (`spacing = 1/rate`, 0 for an
//!   unlimited rate: back to back), and after the burst the line stays idle for `gap`:
//!   `period = burst·spacing + gap`. The gap is measured from the *end* of a burst (the due time
//!   of its last frame plus one frame time at `rate`) to the start of the next, i.e. the extra
//!   silence compared with evenly paced traffic. The average rate is `burst/period`.
//!
//! Each call to [`Pacer::due`] says how many frames are due now and not yet issued, capped at
//! the batch size. Because the schedule is absolute, small delays are made up and no drift
//! accumulates; after a stall the debt is capped at `max_debt` frames: anything beyond is
//! *slipped* (dropped from the schedule and reported), so a stall never turns into an unbounded
//! burst (the cap is 10 ms worth of frames at the average rate). The batch size follows the
//! rate inside a burst (about 50 µs worth of frames, at most [`MAX_BATCH`]; at least a whole
//! burst when the burst's frames are due together).
//!
//! **The link** ([`Pacer::with_link`]): a stream that leaves by a link of known line rate never
//! gets frames faster than that link carries them, whatever the schedule owes: a catch-up
//! after a stall and the frames of a burst "due together" go at most at the line rate, after
//! an allowance of `depth` frames back to back (the sender's own batching; a veth takes frames
//! 16 at a time from XDP anyway). It is the generic cell rate algorithm (ITU-T I.371, a token
//! bucket): a theoretical arrival time advancing one frame time per frame. Without it, a sender
//! on a veth — which has no line rate — made up a 10 ms stall at up to 9 Mpps into a DUT whose
//! 1 Gb/s link carries 1.49 Mpps (docs/engine.md "Catch-up after a stall"). Frames the link
//! holds back stay owed, and slip like any debt beyond `max_debt`. Streams sharing a port
//! share its link: a trial gives each its part ([`crate::trial::TrialConfig::paced_streams`]),
//! since a stall holds them all and they catch up together. One exception: where the
//! schedule is above half the line rate, a catch-up may go at twice the schedule's rate
//! ([`CATCH_UP_OVER_SCHEDULE`]), else a stall near line rate could never be made up.
//!
//! Pure arithmetic on the times it is given: no clock, no sleeping (the caller does that).
//! [`StreamPacing::for_stream`] builds the pacer a stream's configuration asks for, for every
//! transmit backend.

use crate::stream::{Limit, StreamConfig};
use wire::units::Pps;

/// The largest number of frames handed to the kernel in one go.
pub const MAX_BATCH: u64 = 256;

/// How much faster than its schedule's rate a stream may catch up when its link has less room
/// than that ([`Pacer::with_link`]).
pub const CATCH_UP_OVER_SCHEDULE: f64 = 2.0;

/// The fewest frames a link takes back to back before its line rate applies: the kernel hands
/// XDP frames to a device 16 at a time (`DEV_MAP_BULK_SIZE`).
pub const LINK_DEPTH_MIN: u64 = 16;

/// The batch size at `rate` frames/s: about 50 µs worth of frames, 1 to [`MAX_BATCH`].
fn batch_at(rate: f64) -> u64 {
    ((rate * 50e-6).ceil() as u64).clamp(1, MAX_BATCH)
}

/// A [`Pacer`]'s constants (see [`Pacer::shape`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PacerShape {
    pub start_ns: u64,
    pub period_ns: f64,
    pub spacing_ns: f64,
    pub burst: u64,
    pub limit: u64,
    pub max_debt: u64,
    pub slips_use_limit: bool,
    /// The link's time per frame, ns (0: no link limit), and how far ahead of now its
    /// theoretical arrival time may be for a frame to go, ns: `depth - 1` frame times
    /// ([`Pacer::with_link`]).
    pub link_gap_ns: f64,
    pub link_tolerance_ns: f64,
}

#[derive(Debug, Clone)]
pub struct Pacer {
    start_ns: u64,
    /// Between the starts of two bursts.
    period_ns: f64,
    /// Between two frames of one burst (0: due together).
    spacing_ns: f64,
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
    /// The link's time per frame, ns; 0: no link limit.
    link_gap_ns: f64,
    /// `depth - 1` frame times: frames conform while the link's theoretical arrival time is
    /// at most this far ahead of now (`depth` frames may go back to back).
    link_tolerance_ns: f64,
    /// The link's theoretical arrival time of the next frame (ns after `start_ns`).
    link_tat: f64,
    /// The time of the last [`Pacer::due`], for [`Pacer::issue`] (ns after `start_ns`).
    last_due: f64,
}

impl Pacer {
    /// A schedule of `rate` frames/s in bursts of `burst` frames (due together) starting at
    /// `start_ns`.
    pub fn new(start_ns: u64, rate: f64, burst: u32, limit: Option<u64>) -> Self {
        assert!(rate > 0.0 && rate.is_finite(), "rate must be positive");
        let burst = u64::from(burst.max(1));
        let batch = batch_at(rate).max(burst);
        Self::build(
            start_ns,
            burst as f64 * 1e9 / rate,
            0.0,
            burst,
            batch,
            limit,
        )
    }

    /// Bursts of `burst` frames paced at `rate` frames/s inside the burst (`f64::INFINITY`:
    /// back to back), each followed by `gap_ns` of silence (see the module doc).
    pub fn with_gap(start_ns: u64, rate: f64, burst: u32, gap_ns: u64, limit: Option<u64>) -> Self {
        assert!(rate > 0.0, "rate must be positive");
        assert!(gap_ns > 0, "a burst gap must be positive");
        let burst = u64::from(burst.max(1));
        let spacing = if rate.is_finite() { 1e9 / rate } else { 0.0 };
        let batch = if spacing > 0.0 {
            batch_at(rate)
        } else {
            MAX_BATCH.max(burst)
        };
        let period = burst as f64 * spacing + gap_ns as f64;
        Self::build(start_ns, period, spacing, burst, batch, limit)
    }

    fn build(
        start_ns: u64,
        period_ns: f64,
        spacing_ns: f64,
        burst: u64,
        batch: u64,
        limit: Option<u64>,
    ) -> Self {
        // Catch up at most ~10 ms worth of frames (and at least a few batches) after a stall:
        // a busy machine delays wake-ups by milliseconds; longer stalls slip.
        let avg_rate = burst as f64 * 1e9 / period_ns;
        let max_debt = ((avg_rate * 10e-3).ceil() as u64).max(4 * batch).max(burst);
        Pacer {
            start_ns,
            period_ns,
            spacing_ns,
            burst,
            batch,
            max_debt,
            issued: 0,
            slipped: 0,
            limit: limit.unwrap_or(u64::MAX),
            max_seen_debt: 0,
            slips_use_limit: false,
            link_gap_ns: 0.0,
            link_tolerance_ns: 0.0,
            link_tat: 0.0,
            last_due: 0.0,
        }
    }

    /// Hands frames to a link that carries at most `link_pps` frames/s: at most `depth`
    /// (≥ 1) back to back, then one per `1/link_pps` (see the module doc) — or one per
    /// `1/(CATCH_UP_OVER_SCHEDULE × rate)` where that is faster, i.e. where the schedule
    /// leaves the link less room than its own rate again: near the line rate a real link
    /// cannot make up a stall at all, and a sender on a VM that stalls for milliseconds would
    /// then fall behind for good in every trial near line rate (tester-limited, no DUT
    /// figure). There the catch-up may exceed the link, by at most the schedule's own rate.
    pub fn with_link(mut self, link_pps: f64, depth: u64) -> Self {
        if link_pps.is_finite() && link_pps > 0.0 {
            let fastest = if self.spacing_ns > 0.0 {
                1e9 / self.spacing_ns
            } else {
                self.avg_rate()
            };
            self.link_gap_ns = 1e9 / link_pps.max(CATCH_UP_OVER_SCHEDULE * fastest);
            self.link_tolerance_ns = (depth.max(1) - 1) as f64 * self.link_gap_ns;
        }
        self
    }

    /// Frames the link takes at `now` (ns after start), `u64::MAX` without a link limit.
    fn link_allows(&self, now: f64) -> u64 {
        if self.link_gap_ns <= 0.0 {
            return u64::MAX;
        }
        let tat = self.link_tat.max(now);
        if tat > now + self.link_tolerance_ns {
            return 0;
        }
        ((now + self.link_tolerance_ns - tat) / self.link_gap_ns).floor() as u64 + 1
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

    /// The schedule's constants, for a sender that keeps the schedule elsewhere (the XDP
    /// program, [`crate::xdp::tx`]): the same arithmetic as [`Pacer::due`] with a batch of one.
    pub fn shape(&self) -> PacerShape {
        PacerShape {
            start_ns: self.start_ns,
            period_ns: self.period_ns,
            spacing_ns: self.spacing_ns,
            burst: self.burst,
            limit: self.limit,
            max_debt: self.max_debt,
            slips_use_limit: self.slips_use_limit,
            link_gap_ns: self.link_gap_ns,
            link_tolerance_ns: self.link_tolerance_ns,
        }
    }

    /// Takes over the progress a schedule kept elsewhere made (frames issued and slipped), so
    /// [`Pacer::next_due_ns`], [`Pacer::done`] and the reports follow it.
    pub fn sync(&mut self, issued: u64, slipped: u64, max_seen_debt: u64) {
        self.issued = issued;
        self.slipped = slipped;
        self.max_seen_debt = self.max_seen_debt.max(max_seen_debt);
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

    /// Average frames/s of the schedule (gaps included).
    pub fn avg_rate(&self) -> f64 {
        self.burst as f64 * 1e9 / self.period_ns
    }

    pub fn done(&self) -> bool {
        self.spent() >= self.limit
    }

    /// Frames the schedule has made due by `now_ns` (frame 0 is due at start).
    fn scheduled(&self, now_ns: u64) -> u64 {
        if now_ns < self.start_ns {
            return 0;
        }
        let elapsed = (now_ns - self.start_ns) as f64;
        let k = (elapsed / self.period_ns).floor();
        let in_burst = if self.spacing_ns > 0.0 {
            let within = elapsed - k * self.period_ns;
            ((within / self.spacing_ns).floor() as u64 + 1).min(self.burst)
        } else {
            self.burst
        };
        (k as u64)
            .saturating_mul(self.burst)
            .saturating_add(in_burst)
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
        let now = now_ns.saturating_sub(self.start_ns) as f64;
        self.last_due = now;
        debt.min(self.batch)
            .min(self.limit - self.issued.min(self.limit))
            .min(self.link_allows(now))
    }

    /// Records that `n` frames were issued (at the time of the last [`Pacer::due`]).
    pub fn issue(&mut self, n: u64) {
        self.issued += n;
        if self.link_gap_ns > 0.0 && n > 0 {
            self.link_tat = self.link_tat.max(self.last_due) + n as f64 * self.link_gap_ns;
        }
    }

    /// When frame `n` of the schedule is due (monotonic ns).
    fn due_ns(&self, n: u64) -> u64 {
        let (k, j) = (n / self.burst, n % self.burst);
        self.start_ns + (k as f64 * self.period_ns + j as f64 * self.spacing_ns).round() as u64
    }

    /// When the next frame not yet issued may go (monotonic ns): when the schedule makes it
    /// due, or later when the link is still busy with the frames before it.
    pub fn next_due_ns(&self) -> u64 {
        let due = self.due_ns(self.issued + self.slipped);
        if self.link_gap_ns <= 0.0 {
            return due;
        }
        let link_free =
            self.start_ns + (self.link_tat - self.link_tolerance_ns).max(0.0).ceil() as u64;
        due.max(link_free)
    }

    /// The time the schedule ends for a duration-limited stream is the caller's business; for a
    /// frame-limited one it is when the last frame is due.
    pub fn end_ns(&self) -> Option<u64> {
        (self.limit != u64::MAX).then(|| self.due_ns(self.limit - 1))
    }

    /// How many frames of this schedule are due before `duration_ns` after its start.
    pub fn frames_within(&self, duration_ns: u64) -> u64 {
        if duration_ns == 0 {
            return 0;
        }
        let d = duration_ns as f64;
        // Bursts that start before the end (a millionth of a frame time of tolerance against
        // rounding, as the schedule's own times are rounded to whole nanoseconds).
        let bursts = (d / self.period_ns - 1e-6).ceil().max(1.0) as u64;
        let last_start = (bursts - 1) as f64 * self.period_ns;
        let in_last = if self.spacing_ns > 0.0 {
            (((d - last_start) / self.spacing_ns - 1e-6).ceil().max(1.0) as u64).min(self.burst)
        } else {
            self.burst
        };
        (bursts - 1) * self.burst + in_last
    }
}

/// The schedule a stream's configuration asks for, as every transmit backend runs it.
#[derive(Debug, Clone)]
pub struct StreamPacing {
    pub pacer: Pacer,
    /// A clock deadline that ends the stream (unpaced duration-limited streams only; paced
    /// ones end with their schedule).
    pub end_ns: Option<u64>,
    /// As fast as the port goes: no schedule, no debt cap, no slip accounting.
    pub unpaced: bool,
    /// The average frames/s intended (gaps included); 0 when unpaced.
    pub intended_pps: Pps,
}

impl StreamPacing {
    /// The pacer of `cfg` starting at `start_ns`.
    ///
    /// - Unpaced (`Rate::Unlimited` without a burst gap): a schedule so fast that a full batch
    ///   is always due and no debt cap; a duration ends it by the clock.
    /// - Paced and duration-limited: every frame scheduled before `start + duration`; the
    ///   schedule itself ends the stream (slipped frames use up the count), not the clock.
    /// - Paced and frame-limited: exactly that many frames, however late.
    pub fn for_stream(cfg: &StreamConfig, start_ns: u64) -> Self {
        let pps = cfg.pps().0;
        let burst = cfg.burst.max(1);
        let paced = |limit| match cfg.burst_gap {
            Some(gap) => Pacer::with_gap(start_ns, pps, burst, gap.as_nanos() as u64, limit),
            None => Pacer::new(start_ns, pps, burst, limit),
        };
        if cfg.burst_gap.is_none() && !pps.is_finite() {
            let (limit, end_ns) = match cfg.limit {
                Limit::Frames(n) => (n, None),
                Limit::DurationNs(d) => (u64::MAX - 1, Some(start_ns + d)),
            };
            let pacer = Pacer::new(start_ns, 1e15, MAX_BATCH as u32, Some(limit))
                .with_max_debt(u64::MAX / 4);
            return StreamPacing {
                pacer,
                end_ns,
                unpaced: true,
                intended_pps: Pps(0.0),
            };
        }
        let mut pacer = match cfg.limit {
            Limit::Frames(n) => paced(Some(n)),
            Limit::DurationNs(d) => {
                let n = paced(None).frames_within(d);
                paced(Some(n)).slips_use_limit()
            }
        };
        if let Some(link_pps) = cfg.link_pps() {
            // Back to back up to a batch (the user-space senders hand the kernel a batch at
            // once) or a devmap bulk of 16 (how XDP frames reach a device), then the line rate.
            let depth = pacer.batch().max(LINK_DEPTH_MIN);
            pacer = pacer.with_link(link_pps.0, depth);
        }
        StreamPacing {
            intended_pps: match cfg.burst_gap {
                Some(_) => Pps(pacer.avg_rate()),
                None => Pps(pps),
            },
            pacer,
            end_ns: None,
            unpaced: false,
        }
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

    /// Frames a pacer hands out when asked at every `step_ns` up to `end_ns`, with the times
    /// they were handed out.
    fn drain(p: &mut Pacer, from_ns: u64, end_ns: u64, step_ns: u64) -> Vec<(u64, u64)> {
        let mut out = Vec::new();
        let mut now = from_ns;
        while now <= end_ns {
            let n = p.due(now);
            if n > 0 {
                p.issue(n);
                out.push((now, n));
            }
            now += step_ns;
        }
        out
    }

    #[test]
    fn a_catch_up_leaves_no_faster_than_the_link() {
        // 100 kpps on a link carrying 1 Mpps (1 µs a frame), 16 back to back allowed; a 5 ms
        // stall owes 500 frames.
        let mut p = Pacer::new(0, 100_000.0, 1, None).with_link(1_000_000.0, 16);
        assert_eq!(p.due(0), 1);
        p.issue(1);
        let sent = drain(&mut p, 5 * MS, 6 * MS, 100);
        // Up to 16 back to back, then one per µs: never more than 16 + (t - t0) / 1 µs frames
        // by time t.
        let t0 = sent[0].0;
        let mut total = 0;
        for &(t, n) in &sent {
            total += n;
            assert!(
                total <= 16 + (t - t0) / 1_000,
                "{total} frames by {} ns after the catch-up began",
                t - t0
            );
        }
        // Still all caught up (the debt is below the cap), at the link's pace: ~480 µs.
        let caught = p.issued();
        assert!(caught > 500, "{caught} issued");
        assert_eq!(p.slipped(), 0);
        // Without the link the same stall goes out at once, a batch at a time.
        let mut q = Pacer::new(0, 100_000.0, 1, None);
        assert_eq!(q.due(0), 1);
        q.issue(1);
        let unlimited = drain(&mut q, 5 * MS, 5 * MS, 100);
        assert_eq!(unlimited.iter().map(|s| s.1).sum::<u64>(), q.batch());
    }

    #[test]
    fn the_link_does_not_slow_a_schedule_it_can_carry() {
        // 1 Mpps on a link of exactly 1 Mpps, asked every 100 ns for 10 ms: every frame goes
        // when due, nothing owed or slipped. A schedule faster than its link is not throttled
        // below its own rate (the link is taken to carry it).
        for (rate, link) in [(1e6, 1e6), (1e6, 1e7), (2e6, 1e6)] {
            let mut p = Pacer::new(0, rate, 1, Some(10_000)).with_link(link, 16);
            let sent = drain(&mut p, 0, 20 * MS, 100);
            let frames: u64 = sent.iter().map(|s| s.1).sum();
            assert_eq!(frames, 10_000, "rate {rate}, link {link}");
            assert_eq!(p.slipped(), 0);
            let last = sent.last().unwrap().0;
            let end = (10_000.0 / rate * 1e9) as u64;
            assert!(
                last <= end,
                "rate {rate}, link {link}: done at {last} ns, due by {end}"
            );
        }
    }

    #[test]
    fn near_the_line_rate_a_stall_is_made_up_at_twice_the_schedule() {
        // 1 Mpps on a 1 Mpps link: 1 ms late, 1000 frames owed. The link alone could never
        // make them up (it is full); the catch-up goes at 2 Mpps: never more than 16 + 2 per µs,
        // and owed no more after about 1 ms.
        let mut p = Pacer::new(0, 1e6, 1, None).with_link(1e6, 16);
        let sent = drain(&mut p, MS, 3 * MS, 100);
        let mut total = 0;
        for &(t, n) in &sent {
            total += n;
            assert!(
                total <= 16 + 2 * (t - MS) / 1_000,
                "{total} frames by {t} ns"
            );
        }
        let by = |t: u64| sent.iter().filter(|s| s.0 <= t).map(|s| s.1).sum::<u64>();
        assert!(
            by(2 * MS + 100) >= 2000,
            "{} frames by 2.1 ms",
            by(2 * MS + 100)
        );
        assert_eq!(p.slipped(), 0);
    }

    #[test]
    fn next_due_waits_for_the_link() {
        let mut p = Pacer::new(0, 1000.0, 100, None).with_link(1e6, 16); // bursts of 100
        assert_eq!(p.due(0), 16);
        p.issue(16);
        // 84 frames of the burst are owed, but the link is busy for 16 µs less the 15 it let
        // go early: the next frame may go at 1 µs.
        assert_eq!(p.due(0), 0);
        assert_eq!(p.next_due_ns(), 1_000);
        assert_eq!(p.due(1_000), 1);
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

    #[test]
    fn burst_gap_schedule() {
        // 4 frames 10 µs apart (100 kpps), then 1 ms of silence: bursts start every 1.04 ms.
        let us = 1_000;
        let mut p = Pacer::with_gap(0, 100_000.0, 4, MS, None);
        let dues: Vec<u64> = (0..9).map(|n| p.due_ns(n)).collect();
        assert_eq!(
            dues,
            [
                0,
                10 * us,
                20 * us,
                30 * us,
                1_040 * us,
                1_050 * us,
                1_060 * us,
                1_070 * us,
                2_080 * us
            ]
        );
        assert!((p.avg_rate() - 4.0 / 1.04e-3).abs() < 1e-6);
        // Inside a burst the frames come one by one, as at 100 kpps.
        assert_eq!(p.batch(), 5);
        assert_eq!(p.due(0), 1);
        p.issue(1);
        assert_eq!(p.due(25 * us), 2);
        p.issue(2);
        assert_eq!(p.due(500 * us), 1); // the last frame of the burst; then the gap
        p.issue(1);
        assert_eq!(p.due(1_039 * us), 0);
        assert_eq!(p.next_due_ns(), 1_040 * us);
        assert_eq!(p.due(1_040 * us), 1);
        // Duration: frames due before 2.1 ms are two whole bursts and two frames of the third
        // (due at 2.08 and 2.09 ms).
        assert_eq!(p.frames_within(2_100 * us), 10);
        assert_eq!(p.frames_within(2_080 * us), 8);
        assert_eq!(p.frames_within(1), 1);
        let p = Pacer::with_gap(0, 100_000.0, 4, MS, Some(8));
        assert_eq!(p.end_ns(), Some(1_070 * us));
    }

    #[test]
    fn burst_gap_unlimited_rate_sends_bursts_whole() {
        // Back to back inside the burst: the whole burst is due at its start, every 2 ms.
        let mut p = Pacer::with_gap(0, f64::INFINITY, 300, 2 * MS, None);
        assert!(p.batch() >= 300);
        assert_eq!(p.due(0), 300);
        p.issue(300);
        assert_eq!(p.due(2 * MS - 1), 0);
        assert_eq!(p.next_due_ns(), 2 * MS);
        assert_eq!(p.due(2 * MS), 300);
        assert!((p.avg_rate() - 150_000.0).abs() < 1e-6);
        assert_eq!(p.frames_within(5 * MS), 900);
    }

    #[test]
    fn rate_and_burst_durations_match_the_old_slot_arithmetic() {
        // Without a gap, frames within a duration are whole bursts: ceil(rate·d/burst)·burst.
        for (rate, burst, d) in [
            (10_000.0, 1, 5 * 1000 * MS),
            (1000.0, 10, 15 * MS),
            (3.0, 2, 1000 * MS),
        ] {
            let p = Pacer::new(0, rate, burst, None);
            let slots = (rate * d as f64 * 1e-9 / f64::from(burst) - 1e-6).ceil() as u64;
            assert_eq!(
                p.frames_within(d),
                slots * u64::from(burst),
                "{rate} {burst} {d}"
            );
        }
    }
}
