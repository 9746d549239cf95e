//! Simulated DUTs with known limits, so that searches can be tested (and their cost counted in
//! trial-seconds) without a network or a clock.
//!
//! The model: per trial the DUT forwards at most `capacity × line_pps × duration` frames plus
//! what its `buffer_frames` absorb; everything above is lost. With `noise`, the capacity of each
//! trial is drawn uniformly from `capacity × (1 ± noise)` by a seeded generator, so a test run is
//! deterministic. A buffer makes short trials look better than long ones, which is exactly the
//! trap MLRsearch's final full-length trials exist for. An optional tester ceiling caps the
//! offered load, to exercise tester-limited detection.
//!
//! A *gradual* DUT ([`SimDut::gradual`]) has no hard limit: above a knee its loss ratio grows in
//! proportion to the load (`slope` × (load − knee)), the way a device that drops by queue
//! management or CPU contention loses more and more rather than everything above one rate. Its
//! forwarding rate at an overload says little about where the loss starts, which is the case
//! that guesses from forwarding rates get wrong.

use wire::units::{Nanos, Pps};

use super::{LatencySummary, LineFraction, Outcome, Percentiles, TrialRequest};

/// 64-byte frames at 1 Gb/s: 1,488,095 frames/s (DESIGN.md §1).
pub const GIGABIT_64B_PPS: f64 = 1_488_095.0;

/// A deterministic xorshift64* generator: enough for simulated noise, no dependency.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from `seed` (0 is replaced by a fixed non-zero value).
    pub fn new(seed: u64) -> XorShift {
        XorShift(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in [-1, 1).
    pub fn symmetric(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    }
}

/// A simulated device under test. See the module docs for the model.
#[derive(Debug, Clone)]
pub struct SimDut {
    /// Forwarding capacity as a fraction of line rate.
    pub capacity: LineFraction,
    /// Line rate in frames per second (turns fractions into frame counts).
    pub line_pps: f64,
    /// Relative spread of the per-trial capacity.
    pub noise: f64,
    /// Frames the DUT can queue on top of its capacity per trial.
    pub buffer_frames: u64,
    /// The most the tester can offer.
    pub tester_ceiling: Option<LineFraction>,
    /// Gradual DUT: loss ratio per unit of load above `capacity` (0 = a sharp limit).
    pub loss_slope: f64,
    rng: XorShift,
}

impl SimDut {
    /// A DUT that forwards exactly `capacity` and drops everything above it.
    pub fn sharp(capacity: LineFraction) -> SimDut {
        SimDut {
            capacity,
            line_pps: GIGABIT_64B_PPS,
            noise: 0.0,
            buffer_frames: 0,
            tester_ceiling: None,
            loss_slope: 0.0,
            rng: XorShift::new(1),
        }
    }

    /// A DUT that loses nothing up to `knee` and, above it, the ratio `slope × (load − knee)` of
    /// what it is offered (e.g. slope 0.5: 0.5 % loss per 1 % of line rate above the knee).
    pub fn gradual(knee: LineFraction, slope: f64) -> SimDut {
        SimDut {
            loss_slope: slope,
            ..SimDut::sharp(knee)
        }
    }

    /// The largest load at which this DUT's loss ratio in a trial of `duration` is at most
    /// `goal` (noise ignored): the truth a throughput search must bracket.
    pub fn limit(&self, goal: f64, duration: core::time::Duration) -> f64 {
        let l = if self.loss_slope > 0.0 {
            self.capacity.0 + goal / self.loss_slope
        } else {
            let buffered = self.buffer_frames as f64 / (self.line_pps * duration.as_secs_f64());
            (self.capacity.0 + buffered) / (1.0 - goal)
        };
        l.min(1.0)
    }

    /// A DUT whose capacity varies by ±`noise` (relative) from trial to trial.
    pub fn noisy(capacity: LineFraction, noise: f64, seed: u64) -> SimDut {
        SimDut {
            noise,
            rng: XorShift::new(seed),
            ..SimDut::sharp(capacity)
        }
    }

    /// Adds a queue of `frames` (short trials then lose less than long ones).
    pub fn with_buffer(mut self, frames: u64) -> SimDut {
        self.buffer_frames = frames;
        self
    }

    /// Caps what the tester can offer.
    pub fn with_tester_ceiling(mut self, ceiling: LineFraction) -> SimDut {
        self.tester_ceiling = Some(ceiling);
        self
    }

    /// The largest burst this DUT forwards without loss at line rate: during a burst of `n`
    /// frames it forwards `n × capacity` and queues `buffer_frames`.
    pub fn back_to_back_limit(&self) -> u64 {
        if self.capacity.0 >= 1.0 {
            u64::MAX
        } else {
            (self.buffer_frames as f64 / (1.0 - self.capacity.0)).floor() as u64
        }
    }

    /// Runs one simulated trial.
    pub fn trial(&mut self, request: &TrialRequest) -> Outcome {
        let offered = match self.tester_ceiling {
            Some(c) if c.0 < request.load.0 => c,
            _ => request.load,
        };
        let capacity = self.capacity.0 * (1.0 + self.noise * self.rng.symmetric());
        let (sent, can_forward) = match request.burst_frames {
            Some(n) => {
                let n_f = n as f64;
                // Burst at `offered` of line rate: the DUT drains capacity/offered of it meanwhile.
                let drained = if offered.0 > 0.0 {
                    n_f * (capacity / offered.0).min(1.0)
                } else {
                    n_f
                };
                (n, drained.floor() as u64 + self.buffer_frames)
            }
            None => {
                let secs = request.duration.as_secs_f64();
                let sent = (offered.0 * self.line_pps * secs).round() as u64;
                let cap = if self.loss_slope > 0.0 {
                    let ratio = (self.loss_slope * (offered.0 - capacity)).clamp(0.0, 1.0);
                    sent - (sent as f64 * ratio).round() as u64
                } else {
                    (capacity * self.line_pps * secs).floor() as u64 + self.buffer_frames
                };
                (sent, cap)
            }
        };
        let received = sent.min(can_forward);
        let latency = request.latency.then(|| {
            // Queueing grows with load; a fixed 10 µs pipeline otherwise.
            let base = 10_000.0 * (1.0 + offered.0 / capacity.max(1e-9));
            LatencySummary {
                min: Nanos(10_000),
                mean: Nanos(base as u64),
                max: Nanos((base * 3.0) as u64),
                samples: received,
                ipdv: None,
                percentiles: Some(Percentiles {
                    p50: Nanos((base * 0.9) as u64),
                    p90: Nanos((base * 1.4) as u64),
                    p99: Nanos((base * 2.2) as u64),
                    p99_9: Nanos((base * 2.8) as u64),
                }),
            }
        });
        Outcome {
            intended: request.load,
            offered,
            received,
            lost: sent - received,
            fragments: 0,
            directions: 1,
            duration: request.duration,
            latency,
        }
    }
}

/// What a simulated stateful DUT does with a new connection when its table is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TablePolicy {
    /// Refuse it: its frame is dropped (Linux conntrack when early drop finds nothing to drop).
    DropNew,
    /// Evict the oldest connection to make room (an LRU-style table).
    EvictOldest,
}

/// A simulated stateful DUT (NAT or stateful firewall) for the connection searches
/// ([`super::nat`]): a connection table with a `capacity`, an insertion-rate limit, a policy for
/// a full table and an idle timeout.
///
/// The model, per [`ConnTrial`](super::nat::ConnTrial), starting from an empty table (as RFC
/// 9693 asks between trials): preliminary frame k arrives at k / rate seconds. Insertion is a token bucket
/// refilled at `insert_rate` per second holding at most `insert_burst` tokens (full at the
/// start); a frame finding less than one token is dropped and its connection never exists.
/// A frame that finds the table full is dropped (`DropNew`) or evicts the oldest entry
/// (`EvictOldest`). Entries idle longer than `timeout` are removed as soon as they expire. The
/// learned connections are then validated in creation order, the first at `gap` after the last
/// preliminary frame, one every 1 / validation_rate seconds; a reply passes if its connection is
/// still in the table at that moment. Forwarding itself never loses a frame: only the table
/// does, so every failure is the table's. The arithmetic is exact enough that the searches'
/// truth is known in closed form ([`SimStatefulDut::rate_limit`],
/// [`SimStatefulDut::capacity_limit`]).
#[derive(Debug, Clone)]
pub struct SimStatefulDut {
    /// Connections the table holds.
    pub capacity: u64,
    /// New connections per second the DUT can insert.
    pub insert_rate: f64,
    /// Insertions it can absorb above that rate (token bucket depth, at least 1).
    pub insert_burst: f64,
    /// What a full table does with a new connection.
    pub policy: TablePolicy,
    /// Idle timeout of an entry; `None` = never.
    pub timeout: Option<core::time::Duration>,
    /// The highest preliminary rate the tester reaches.
    pub tester_ceiling: Option<f64>,
    /// Entries the DUT deletes per second when its table is flushed (`nat-teardown-rate`).
    pub delete_rate: f64,
    /// The fixed cost of a flush, also on an empty table (the deleting command's start-up).
    pub delete_overhead: core::time::Duration,
    /// Frames/s per direction forwarded without loss with one connection
    /// (`nat-throughput`)…
    pub forward_pps: f64,
    /// …and the share of it lost with a full table: the limit falls linearly with N, to
    /// forward_pps × (1 − slowdown) at N = capacity.
    pub forward_slowdown: f64,
    /// The highest load rate (frames/s each way) the tester offers: asked more, it sends this
    /// (and the trial is tester-limited). `None` = any rate.
    pub load_ceiling: Option<f64>,
}

impl SimStatefulDut {
    /// A table of `capacity` entries inserting at most `insert_rate` connections/s, with a
    /// one-token bucket (no burst above the rate) and no timeout.
    pub fn new(capacity: u64, insert_rate: f64, policy: TablePolicy) -> SimStatefulDut {
        SimStatefulDut {
            capacity,
            insert_rate,
            insert_burst: 1.0,
            policy,
            timeout: None,
            tester_ceiling: None,
            delete_rate: 1e6,
            delete_overhead: core::time::Duration::from_millis(2),
            forward_pps: 1e6,
            forward_slowdown: 0.0,
            load_ceiling: None,
        }
    }

    /// The per-direction rate forwarded without loss with `n` connections in the table.
    pub fn forward_limit(&self, n: u64) -> f64 {
        let full = (n as f64 / self.capacity.max(1) as f64).min(1.0);
        self.forward_pps * (1.0 - self.forward_slowdown * full)
    }

    /// [`Self::trial`] followed by the trial's real test: the flush of the table (what is in it
    /// is deleted at `delete_rate` after `delete_overhead`, which an empty flush costs too), or
    /// the load (every frame crosses at or below [`Self::forward_limit`] of the connections
    /// present, a share of them is lost above it; frames of connections no longer in the table
    /// are lost).
    pub fn trial_real(&self, t: &super::nat::ConnTrial) -> super::nat::ConnOutcome {
        use super::nat::{LoadOutcome, RealTest, TeardownOutcome};
        let mut o = self.trial(t);
        let present = o.validation_received;
        match t.real {
            None => {}
            Some(RealTest::Teardown) => {
                let overhead = self.delete_overhead.as_nanos() as u64;
                o.teardown = Some(TeardownOutcome {
                    entries_before: present,
                    entries_after: 0,
                    delete_ns: overhead + (present as f64 / self.delete_rate * 1e9) as u64,
                    empty_ns: overhead,
                });
            }
            Some(RealTest::Load {
                pps: asked,
                duration,
            }) => {
                // What the tester really offers (its ceiling), and what the DUT does with it.
                let pps = self.load_ceiling.map_or(asked, |c| asked.min(c));
                let sent = (pps * duration.as_secs_f64()).round() as u64;
                let limit = self.forward_limit(present);
                let n = t.connections.max(1);
                // Frames of connections that are gone: sent on them, never forwarded.
                let alive = |sent: u64| sent * present / n;
                let received = |sent: u64| {
                    let a = alive(sent);
                    if pps <= limit * (1.0 + 1e-9) {
                        a
                    } else {
                        (a as f64 * limit / pps) as u64
                    }
                };
                o.load = Some(LoadOutcome {
                    intended_pps: Pps(asked),
                    forward_sent: sent,
                    forward_received: received(sent),
                    forward_pps: Pps(pps),
                    reverse_sent: sent,
                    reverse_received: received(sent),
                    reverse_pps: Pps(pps),
                    dut_entries: Some(present),
                    misdirected: 0,
                    tester_drops: 0,
                    ..LoadOutcome::default()
                });
            }
        }
        o
    }

    /// The highest preliminary rate at which all of `n` connections are inserted: with a bucket
    /// of depth B ≥ 1, frame k (0-based) needs k + 1 ≤ B + insert_rate × k / rate, which binds at
    /// k = n − 1: rate ≤ insert_rate × (n − 1) / (n − B); any rate when n ≤ B.
    pub fn rate_limit(&self, n: u64) -> f64 {
        let b = self.insert_burst.max(1.0);
        let n = n as f64;
        if n <= b {
            f64::INFINITY
        } else {
            self.insert_rate * (n - 1.0) / (n - b)
        }
    }

    /// The largest N that passes a trial like `t` (its N ignored), for a rate the DUT sustains:
    /// the capacity, or fewer when the timeout expires an entry before its validation. The
    /// oldest age at validation is that of the first or the last connection (the age grows or
    /// shrinks along the validation order), so the predicate is monotone in N; it is evaluated
    /// with the same float expressions [`Self::trial`] uses, so the two agree to the last
    /// connection.
    pub fn capacity_limit(&self, t: &super::nat::ConnTrial) -> u64 {
        let Some(to) = self.timeout.map(|d| d.as_secs_f64()) else {
            return self.capacity;
        };
        let rate = match self.tester_ceiling {
            Some(c) if c < t.rate.0 => c,
            _ => t.rate.0,
        };
        let fits = |n: u64| {
            if n == 0 {
                return true;
            }
            let end = (n - 1) as f64 / rate + t.gap.as_secs_f64();
            let first = end;
            let last = end + (n - 1) as f64 / t.validation_rate.0 - (n - 1) as f64 / rate;
            first <= to && last <= to
        };
        // Largest n in 0..=capacity with fits(n), by bisection.
        let (mut lo, mut hi) = (0u64, self.capacity);
        if fits(hi) {
            return hi;
        }
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The outcome of a trial in closed form, without the per-connection walk of
    /// [`Self::trial`] (which allocates per connection): for plan time estimates, where N may
    /// be billions. Timeouts are ignored; above the insertion limit the number inserted is
    /// approximated by the sustained rate's share.
    pub fn estimate_trial(&self, t: &super::nat::ConnTrial) -> super::nat::ConnOutcome {
        use super::nat::{ConnOutcome, ConnRate, FailedSpan};
        let rate = match self.tester_ceiling {
            Some(c) if c < t.rate.0 => c,
            _ => t.rate.0,
        };
        let n = t.connections;
        let inserted = if rate <= self.rate_limit(n) * (1.0 + 1e-9) {
            n
        } else {
            let share = (self.insert_rate / rate).clamp(0.0, 1.0);
            ((n.saturating_sub(1) as f64 * share) as u64 + 1).min(n)
        };
        let validated = inserted.min(self.capacity);
        let learned = match self.policy {
            TablePolicy::DropNew => validated,
            TablePolicy::EvictOldest => inserted,
        };
        let lost = n - validated;
        let failed = (lost > 0).then(|| match self.policy {
            TablePolicy::DropNew => FailedSpan {
                count: lost,
                first: n - lost,
                last: n - 1,
            },
            TablePolicy::EvictOldest => FailedSpan {
                count: lost,
                first: 0,
                last: lost - 1,
            },
        });
        ConnOutcome {
            connections: n,
            intended_rate: t.rate,
            offered_rate: ConnRate(rate),
            preliminary_sent: n,
            preliminary_received: learned,
            validation_sent: learned,
            validation_received: validated,
            failed,
            teardown: None,
            load: None,
        }
    }

    /// Runs one simulated trial, connection by connection (it allocates per connection: for
    /// tests; [`Self::estimate_trial`] is the closed form for any N).
    pub fn trial(&self, t: &super::nat::ConnTrial) -> super::nat::ConnOutcome {
        use super::nat::{ConnOutcome, ConnRate, FailedSpan};
        use std::collections::VecDeque;

        let rate = match self.tester_ceiling {
            Some(c) if c < t.rate.0 => c,
            _ => t.rate.0,
        };
        let n = t.connections;
        let timeout = self.timeout.map(|d| d.as_secs_f64());
        let burst = self.insert_burst.max(1.0);
        // Relative slack for float rounding: a rate exactly at the limit passes.
        const EPS: f64 = 1e-9;
        // Present connections in creation order (all share one timeout, so expiry and eviction
        // both take from the front): (index, created at).
        let mut table: VecDeque<(u64, f64)> = VecDeque::new();
        // The learned (forwarded) connections, in creation order.
        let mut learned: Vec<u64> = Vec::new();
        let mut tokens = burst;
        let step = self.insert_rate / rate;
        for k in 0..n {
            let now = k as f64 / rate;
            if k > 0 {
                tokens = (tokens + step).min(burst);
            }
            if let Some(to) = timeout {
                while table.front().is_some_and(|&(_, c)| now - c > to) {
                    table.pop_front();
                }
            }
            if tokens < 1.0 - EPS {
                continue; // insertion too fast: the frame is dropped
            }
            if table.len() as u64 >= self.capacity {
                match self.policy {
                    TablePolicy::DropNew => continue,
                    TablePolicy::EvictOldest => {
                        if table.pop_front().is_none() {
                            continue; // capacity 0
                        }
                    }
                }
            }
            tokens -= 1.0;
            table.push_back((k, now));
            learned.push(k);
        }
        // Validation in creation order of the learned tuples.
        let end = n.saturating_sub(1) as f64 / rate + t.gap.as_secs_f64();
        // Creation time of each connection still present (NaN: gone or never created).
        let mut present = vec![f64::NAN; n as usize];
        for (k, c) in table {
            present[k as usize] = c;
        }
        let mut received = 0u64;
        let mut failed: Option<FailedSpan> = None;
        let mut fail = |k: u64| {
            let f = failed.get_or_insert(FailedSpan {
                count: 0,
                first: k,
                last: k,
            });
            f.count += 1;
            f.first = f.first.min(k);
            f.last = f.last.max(k);
        };
        let mut next_learned = learned.iter().peekable();
        let mut j = 0u64;
        for k in 0..n {
            if next_learned.peek() != Some(&&k) {
                fail(k); // never learned: no reply at all
                continue;
            }
            next_learned.next();
            let at = end + j as f64 / t.validation_rate.0;
            j += 1;
            let c = present[k as usize];
            let alive = !c.is_nan() && timeout.is_none_or(|to| at - c <= to);
            if alive {
                received += 1;
            } else {
                fail(k);
            }
        }
        ConnOutcome {
            connections: n,
            intended_rate: t.rate,
            offered_rate: ConnRate(rate),
            preliminary_sent: n,
            preliminary_received: learned.len() as u64,
            validation_sent: learned.len() as u64,
            validation_received: received,
            failed,
            teardown: None,
            load: None,
        }
    }
}
