//! The transmit loop of one port on a TX ring.
//!
//! Frames are written straight into ring slots (copy of the base frame, flow fields, signature
//! and checksums patched, CLOCK_MONOTONIC timestamp per frame) and flushed with one
//! non-blocking `send`. A frame counts as **sent only once the kernel took it**: its slot left
//! `SEND_REQUEST`. Under back-pressure (send buffer full, ring slots still in flight) the loop
//! never blocks silently: nothing new is stamped while earlier frames wait, the pacer's debt
//! grows, is capped and slips, and the report says so (`slipped`, `backpressure_flushes`).

use crate::pacing::Pacer;
use crate::stream::{FrameGen, Limit, StreamConfig};
use crate::sys::{self, TxRing, TP_STATUS_SEND_REQUEST, TP_STATUS_WRONG_FORMAT};
use crate::{Error, Result};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};

/// What one stream's sender did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TxStreamReport {
    pub stream_id: u16,
    /// Frames the kernel accepted.
    pub sent: u64,
    /// Their bytes, without FCS.
    pub bytes: u64,
    /// Bytes on the wire including FCS (4 B per frame).
    pub bytes_with_fcs: u64,
    pub intended_pps: f64,
    /// `(sent - 1) / (last - first)` send timestamps: the rate actually offered.
    pub achieved_pps: f64,
    /// Send timestamps of the first and last accepted frame (CLOCK_MONOTONIC ns).
    pub first_tx_ns: u64,
    pub last_tx_ns: u64,
    /// Frames dropped from the schedule after stalls (the sender could not keep up).
    pub slipped: u64,
    /// The largest number of due-but-unsent frames seen (catch-up burst bound in practice).
    pub max_debt: u64,
    /// Swapped sequence pairs sent (reordering on purpose).
    pub swapped_pairs: u64,
}

/// What one port's sender did, across its streams.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TxPortReport {
    pub streams: Vec<TxStreamReport>,
    /// Flushes that handed frames to the kernel.
    pub flushes: u64,
    /// Largest number of frames accepted by one flush.
    pub max_batch: u64,
    /// Mean frames per flush.
    pub mean_batch: f64,
    /// Flushes after which frames were left waiting (send buffer full / device busy).
    pub backpressure_flushes: u64,
    /// Frames still unaccepted when the port stopped (never counted as sent).
    pub abandoned: u64,
    /// Frames the kernel rejected as malformed.
    pub wrong_format: u64,
}

struct StreamState {
    gen: FrameGen,
    pacer: Pacer,
    end_ns: Option<u64>,
    /// Next frame index to write.
    next: u64,
    sent: u64,
    bytes: u64,
    first_ns: u64,
    last_ns: u64,
    intended: f64,
    unpaced: bool,
    finishing_pair: bool,
}

impl StreamState {
    fn done(&self, now: u64) -> bool {
        !self.finishing_pair && (self.pacer.done() || self.end_ns.is_some_and(|e| now >= e))
    }
}

/// Per-slot bookkeeping.
#[derive(Clone, Copy, Default)]
struct Slot {
    stream: u16,
    len: u32,
    ts: u64,
}

/// Runs `streams` on `ring` from `start_ns` until every stream is done or `stop` is set.
pub fn run(
    ring: &mut TxRing,
    gens: Vec<(FrameGen, &StreamConfig)>,
    start_ns: u64,
    stop: &AtomicBool,
) -> Result<TxPortReport> {
    let n_slots = ring.slots();
    for (g, _) in &gens {
        if g.max_len() > ring.max_frame_len() {
            return Err(Error::Config(format!(
                "stream {}: {}-byte frames do not fit the {}-byte TX ring slots",
                g.stream_id(),
                g.max_len(),
                ring.max_frame_len()
            )));
        }
    }
    let mut streams: Vec<StreamState> = gens
        .into_iter()
        .map(|(gen, cfg)| {
            let pps = cfg.pps();
            let unpaced = !pps.is_finite();
            let (limit, end_ns) = match cfg.limit {
                Limit::Frames(n) => (n, None),
                Limit::DurationNs(d) if unpaced => (u64::MAX - 1, Some(start_ns + d)),
                Limit::DurationNs(d) => {
                    // Every frame scheduled before start + d; the schedule itself ends the
                    // stream (slipped frames use up the count), not the clock.
                    let burst = f64::from(cfg.burst.max(1));
                    let slots = (pps * d as f64 * 1e-9 / burst - 1e-6).ceil();
                    ((slots * burst) as u64, None)
                }
            };
            // Unpaced: a schedule so fast that a full batch is always due; no debt cap.
            let pacer = if unpaced {
                Pacer::new(start_ns, 1e15, crate::pacing::MAX_BATCH as u32, Some(limit))
                    .with_max_debt(u64::MAX / 4)
            } else if matches!(cfg.limit, Limit::DurationNs(_)) {
                Pacer::new(start_ns, pps, cfg.burst, Some(limit)).slips_use_limit()
            } else {
                Pacer::new(start_ns, pps, cfg.burst, Some(limit))
            };
            StreamState {
                pacer,
                unpaced,
                gen,
                end_ns,
                next: 0,
                sent: 0,
                bytes: 0,
                first_ns: 0,
                last_ns: 0,
                intended: pps,
                finishing_pair: false,
            }
        })
        .collect();
    let mut slots = vec![Slot::default(); n_slots];
    let (mut head, mut tail, mut unconfirmed) = (0usize, 0usize, 0usize);
    let mut rep = TxPortReport {
        streams: Vec::new(),
        flushes: 0,
        max_batch: 0,
        mean_batch: 0.0,
        backpressure_flushes: 0,
        abandoned: 0,
        wrong_format: 0,
    };
    let mut accepted_total = 0u64;
    let _ = sys::set_timer_slack_ns(1);

    // Walks the requested slots in ring order and counts those the kernel took.
    let confirm = |ring: &mut TxRing,
                   streams: &mut [StreamState],
                   slots: &[Slot],
                   tail: &mut usize,
                   unconfirmed: &mut usize,
                   rep: &mut TxPortReport|
     -> u64 {
        let mut n = 0;
        while *unconfirmed > 0 {
            let st = ring.status(*tail);
            if st & TP_STATUS_SEND_REQUEST != 0 {
                break;
            }
            let s = slots[*tail];
            if st & TP_STATUS_WRONG_FORMAT != 0 {
                rep.wrong_format += 1;
                ring.reset(*tail);
            } else {
                let ss = &mut streams[usize::from(s.stream)];
                if ss.sent == 0 {
                    ss.first_ns = s.ts;
                }
                ss.sent += 1;
                ss.bytes += u64::from(s.len);
                ss.last_ns = s.ts;
                n += 1;
            }
            *tail = (*tail + 1) % n_slots;
            *unconfirmed -= 1;
        }
        n
    };

    // Hands the requested slots to the kernel, counts what it took and records the batch.
    // A macro rather than a closure: it needs the loop's mutable state, which `confirm` borrows.
    macro_rules! flush_and_confirm {
        () => {{
            ring.flush().map_err(|e| Error::io("TX ring flush", e))?;
            let n = confirm(
                ring,
                &mut streams,
                &slots,
                &mut tail,
                &mut unconfirmed,
                &mut rep,
            );
            if n > 0 {
                rep.flushes += 1;
                rep.max_batch = rep.max_batch.max(n);
                accepted_total += n;
            }
            n
        }};
    }

    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let now = sys::monotonic_ns();
        if unconfirmed > 0 {
            // Earlier frames still wait for the kernel: retry them before stamping new ones.
            flush_and_confirm!();
            if unconfirmed > 0 {
                rep.backpressure_flushes += 1;
                std::thread::yield_now();
                continue;
            }
        }
        if streams.iter().all(|s| s.done(now)) {
            break;
        }
        let mut filled = 0u64;
        for (si, s) in streams.iter_mut().enumerate() {
            if s.done(now) {
                continue;
            }
            let mut due = s.pacer.due(now);
            if s.finishing_pair {
                due = due.max(1);
            }
            let mut issued = 0;
            while issued < due {
                if unconfirmed == n_slots || !ring.is_available(head) {
                    break; // every slot is in flight: back-pressure
                }
                let ts = sys::monotonic_ns();
                let len = s.gen.write(s.next, ts, ring.data_mut(head));
                ring.request(head, len);
                slots[head] = Slot {
                    stream: si as u16,
                    len: len as u32,
                    ts,
                };
                head = (head + 1) % n_slots;
                unconfirmed += 1;
                s.next += 1;
                issued += 1;
            }
            s.pacer.issue(issued);
            filled += issued;
            // Never stop between the two frames of a swapped pair.
            s.finishing_pair = s.gen.mid_pair(s.next);
        }
        if filled > 0 {
            flush_and_confirm!();
            if unconfirmed > 0 {
                rep.backpressure_flushes += 1;
            }
            continue;
        }
        // Nothing due: wait for the earliest next frame.
        let next = streams
            .iter()
            .filter(|s| !s.done(now))
            .map(|s| s.pacer.next_due_ns())
            .min();
        if let Some(next) = next {
            let now = sys::monotonic_ns();
            if next > now + 60_000 {
                sys::sleep_until(next - 50_000);
            } else if next > now + 5_000 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
    }
    // Give frames still waiting a last chance (up to 1 s), then take them back uncounted.
    let deadline = sys::monotonic_ns() + 1_000_000_000;
    while unconfirmed > 0 && sys::monotonic_ns() < deadline && !stop.load(Ordering::Relaxed) {
        if flush_and_confirm!() == 0 {
            std::thread::yield_now();
        }
    }
    confirm(
        ring,
        &mut streams,
        &slots,
        &mut tail,
        &mut unconfirmed,
        &mut rep,
    );
    while unconfirmed > 0 {
        // Only this thread calls send(), so the kernel is not looking at these slots now.
        ring.reset(tail);
        tail = (tail + 1) % n_slots;
        unconfirmed -= 1;
        rep.abandoned += 1;
    }
    rep.mean_batch = if rep.flushes > 0 {
        accepted_total as f64 / rep.flushes as f64
    } else {
        0.0
    };
    rep.streams = streams
        .iter()
        .map(|s| TxStreamReport {
            stream_id: s.gen.stream_id(),
            sent: s.sent,
            bytes: s.bytes,
            bytes_with_fcs: s.bytes + 4 * s.sent,
            intended_pps: if s.unpaced { 0.0 } else { s.intended },
            achieved_pps: if s.sent >= 2 && s.last_ns > s.first_ns {
                (s.sent - 1) as f64 / ((s.last_ns - s.first_ns) as f64 * 1e-9)
            } else {
                0.0
            },
            first_tx_ns: s.first_ns,
            last_tx_ns: s.last_ns,
            slipped: if s.unpaced { 0 } else { s.pacer.slipped() },
            max_debt: if s.unpaced {
                0
            } else {
                s.pacer.max_seen_debt()
            },
            swapped_pairs: s.gen.swapped_pairs(s.sent),
        })
        .collect();
    Ok(rep)
}
