//! The transmit loop of one port, on one of two AF_PACKET backends ([`TxBackend`]):
//!
//! - **TX ring** (`PACKET_TX_RING`, TPACKET_V2; the default, the faster one on veth,
//!   docs/engine.md): frames are written straight into ring slots behind a `virtio_net_hdr`
//!   that makes the kernel build linear skbs (`sys::TxRing::new`), and flushed with one
//!   non-blocking `send`. A frame counts as **sent** once its slot left `SEND_REQUEST`.
//! - **sendmmsg**: frames are written into a reused pool of buffers ([`sys::MmsgBatch`]) and
//!   handed over with one `sendmmsg(MSG_DONTWAIT)` per batch on a socket with qdisc bypass. A
//!   frame counts as **sent** once `sendmmsg` reports it accepted.
//!
//! Either way, each frame is a copy of the base frame with flow fields, signature and
//! checksums patched. The signature's timestamp is CLOCK_MONOTONIC **read once per batch**,
//! just before the batch is written: every frame of a batch carries the same send time, and
//! latency includes the time a frame waits behind the earlier frames of its batch (about 50 µs
//! at most when paced; at most one unpaced batch of 256 frames otherwise).
//!
//! Under back-pressure (send buffer full, device busy or dropping) the loop never blocks
//! silently: nothing new is stamped while earlier frames wait, the pacer's debt grows, is
//! capped and slips, and the report says so (`slipped`, `backpressure_flushes`).
//!
//! A frame the device refused on hand-over (`ENOBUFS`: on a veth, its peer's receive ring was
//! full — [`sys::Handover`]) depends on who the peer is. Where the port faces the DUT
//! ([`PortSpec::faces_dut`]) the peer *is* the DUT's port, so the frame was offered and the DUT
//! lost it (DESIGN.md §7): it counts as sent and in `refused_by_peer`, and is never retried —
//! its sequence number is spent, so the receiver sees it missing and received + lost = sent
//! holds frame by frame. Elsewhere (a real NIC's own queue, a veth to the tester's other port)
//! a refusal is the tester's shortfall: the frame is retried like one that would have blocked,
//! and the schedule slips.

use crate::pacing::{Pacer, StreamPacing};
use crate::port::{PortSpec, TxRingConfig};
use crate::stream::{FrameGen, StreamConfig};
use crate::sys::{
    self, MmsgBatch, PacketSocket, TxRing, TP_STATUS_SEND_REQUEST, TP_STATUS_WRONG_FORMAT,
};
use crate::{Error, Result};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use wire::units::Pps;

/// What one stream's sender did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TxStreamReport {
    pub stream_id: u16,
    /// Frames handed to the port: those the kernel accepted, and, where the port faces the
    /// DUT, those the DUT's port refused (`refused_by_peer`).
    pub sent: u64,
    /// Their bytes, without FCS.
    pub bytes: u64,
    /// Bytes on the wire including FCS (4 B per frame).
    pub bytes_with_fcs: u64,
    pub intended_pps: Pps,
    /// `(sent - 1) / (last - first)` send timestamps: the rate actually offered.
    pub achieved_pps: Pps,
    /// Send timestamps of the first and last accepted frame (CLOCK_MONOTONIC ns).
    pub first_tx_ns: u64,
    pub last_tx_ns: u64,
    /// Frames dropped from the schedule after stalls (the sender could not keep up).
    pub slipped: u64,
    /// The largest number of due-but-unsent frames seen (catch-up burst bound in practice).
    pub max_debt: u64,
    /// Swapped sequence pairs sent (reordering on purpose).
    pub swapped_pairs: u64,
    /// Frames the port's peer refused although they were handed to it: counted in `sent` when
    /// the peer is the DUT's port ([`crate::port::PortSpec::faces_dut`]): the DUT lost them at
    /// its ingress. 0 on other ports (their refusals are retried: the tester's shortfall).
    #[serde(default)]
    pub refused_by_peer: u64,
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
    /// XDP backend: mean nanoseconds the sending program ran per frame, when the kernel's BPF
    /// statistics are on and the caller asked for them (`bench tx`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prog_ns_per_frame: Option<f64>,
}

/// How a port hands frames to the kernel: part of a port's configuration, so defined there.
pub use crate::port::TxBackend;

/// An open sender on one interface.
#[derive(Debug)]
pub struct Sender {
    io: SenderIo,
    /// The port's peer is the DUT's port: a frame it refuses is the DUT's loss, not retried.
    faces_dut: bool,
}

#[derive(Debug)]
enum SenderIo {
    Ring(TxRing),
    Mmsg {
        sock: PacketSocket,
        batch: MmsgBatch,
    },
}

/// Frames per `sendmmsg` batch at most (the pacer's batches are at most this large).
const MMSG_SLOTS: usize = crate::pacing::MAX_BATCH as usize;

/// Opens a sender of `backend` on `ifindex` (the calling thread must already be in the port's
/// namespace) for frames of up to `max_len` bytes; `cfg` gives the socket options and, for
/// the TX ring, its geometry.
pub fn open(
    spec: &PortSpec,
    ifindex: u32,
    cfg: &TxRingConfig,
    backend: TxBackend,
    max_len: usize,
) -> Result<Sender> {
    let io = match backend {
        TxBackend::Ring => {
            // Room for the ring's virtio_net_hdr in front of each frame (`sys::TxRing::new`).
            let cfg = cfg.sized_for(max_len + 16);
            SenderIo::Ring(spec.open_tx(ifindex, &cfg)?)
        }
        TxBackend::Sendmmsg => {
            // Protocol 0: a send-only socket that receives nothing.
            let sock = PacketSocket::open(ifindex, 0).map_err(|e| {
                Error::io(
                    format!("AF_PACKET socket on {} (are you root?)", spec.ifname),
                    e,
                )
            })?;
            sock.set_qdisc_bypass(cfg.qdisc_bypass)
                .map_err(|e| Error::io("PACKET_QDISC_BYPASS", e))?;
            if cfg.sndbuf > 0 {
                sock.set_sndbuf_force(cfg.sndbuf)
                    .map_err(|e| Error::io("SO_SNDBUFFORCE", e))?;
            }
            SenderIo::Mmsg {
                sock,
                batch: MmsgBatch::new(MMSG_SLOTS, max_len),
            }
        }
    };
    Ok(Sender {
        io,
        faces_dut: spec.faces_dut,
    })
}

impl Sender {
    pub fn backend(&self) -> TxBackend {
        match self.io {
            SenderIo::Ring(_) => TxBackend::Ring,
            SenderIo::Mmsg { .. } => TxBackend::Sendmmsg,
        }
    }
}

struct StreamState {
    gen: FrameGen,
    pacer: Pacer,
    end_ns: Option<u64>,
    /// Next frame index to write.
    next: u64,
    sent: u64,
    /// Of `sent`: refused by the DUT's port.
    refused: u64,
    bytes: u64,
    first_ns: u64,
    last_ns: u64,
    /// Average frames/s intended (0 when unpaced), from [`StreamPacing`].
    intended: Pps,
    unpaced: bool,
    finishing_pair: bool,
}

impl StreamState {
    fn done(&self, now: u64) -> bool {
        !self.finishing_pair && (self.pacer.done() || self.end_ns.is_some_and(|e| now >= e))
    }

    /// Counts the frame of `slot` as handed to the port.
    fn count_sent(&mut self, slot: &Slot) {
        if self.sent == 0 {
            self.first_ns = slot.ts;
        }
        self.sent += 1;
        self.bytes += u64::from(slot.len);
        self.last_ns = slot.ts;
    }
}

/// Per-slot bookkeeping.
#[derive(Clone, Copy, Default)]
struct Slot {
    stream: u16,
    len: u32,
    ts: u64,
    /// Refused by the DUT's port and withdrawn from the TX ring: already counted, the slot
    /// comes back `AVAILABLE` without having been sent.
    withdrawn: bool,
}

/// Counts the frame of `slot`, which the DUT's port refused, as sent and lost there.
fn count_refused(streams: &mut [StreamState], slot: &Slot) {
    let s = &mut streams[usize::from(slot.stream)];
    s.count_sent(slot);
    s.refused += 1;
}

/// Runs `gens` on `sender` from `start_ns` until every stream is done or `stop` is set.
pub fn run(
    sender: &mut Sender,
    gens: Vec<(FrameGen, &StreamConfig)>,
    start_ns: u64,
    stop: &AtomicBool,
) -> Result<TxPortReport> {
    let max_len = match &mut sender.io {
        SenderIo::Ring(ring) => ring.max_frame_len(),
        SenderIo::Mmsg { batch, .. } => batch.frame_mut(0).len(),
    };
    for (g, _) in &gens {
        if g.max_len() > max_len {
            return Err(Error::Config(format!(
                "stream {}: {}-byte frames do not fit the {}-byte TX buffers",
                g.stream_id(),
                g.max_len(),
                max_len
            )));
        }
    }
    let mut streams = stream_states(gens, start_ns);
    let mut rep = TxPortReport {
        streams: Vec::new(),
        flushes: 0,
        max_batch: 0,
        mean_batch: 0.0,
        backpressure_flushes: 0,
        abandoned: 0,
        wrong_format: 0,
        prog_ns_per_frame: None,
    };
    let _ = sys::set_timer_slack_ns(1);
    let faces_dut = sender.faces_dut;
    let accepted_total = match &mut sender.io {
        SenderIo::Ring(ring) => run_ring(ring, faces_dut, &mut streams, stop, &mut rep)?,
        SenderIo::Mmsg { sock, batch } => {
            run_mmsg(sock, batch, faces_dut, &mut streams, stop, &mut rep)?
        }
    };
    rep.mean_batch = if rep.flushes > 0 {
        accepted_total as f64 / rep.flushes as f64
    } else {
        0.0
    };
    rep.streams = streams.iter().map(StreamState::report).collect();
    Ok(rep)
}

fn stream_states(gens: Vec<(FrameGen, &StreamConfig)>, start_ns: u64) -> Vec<StreamState> {
    gens.into_iter()
        .map(|(gen, cfg)| {
            let p = StreamPacing::for_stream(cfg, start_ns);
            StreamState {
                pacer: p.pacer,
                unpaced: p.unpaced,
                gen,
                end_ns: p.end_ns,
                next: 0,
                sent: 0,
                refused: 0,
                bytes: 0,
                first_ns: 0,
                last_ns: 0,
                intended: p.intended_pps,
                finishing_pair: false,
            }
        })
        .collect()
}

/// The send loop on a TX ring; returns the frames accepted. `faces_dut`: refused frames are
/// withdrawn and counted as the DUT's loss (module doc), else retried.
fn run_ring(
    ring: &mut TxRing,
    faces_dut: bool,
    streams: &mut [StreamState],
    stop: &AtomicBool,
    rep: &mut TxPortReport,
) -> Result<u64> {
    let n_slots = ring.slots();
    let mut slots = vec![Slot::default(); n_slots];
    let (mut head, mut tail, mut unconfirmed) = (0usize, 0usize, 0usize);
    let mut accepted_total = 0u64;

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
            } else if !s.withdrawn {
                streams[usize::from(s.stream)].count_sent(&s);
                n += 1;
            }
            *tail = (*tail + 1) % n_slots;
            *unconfirmed -= 1;
        }
        n
    };

    // Hands the requested slots to the kernel, counts what it took and records the batch. A
    // frame the DUT's port refused is withdrawn (the kernel stopped at it: it is the first
    // unconfirmed slot) and the rest handed over again at once. A macro rather than a closure:
    // it needs the loop's mutable state, which `confirm` borrows.
    macro_rules! flush_and_confirm {
        () => {{
            let mut n = 0;
            loop {
                let h = ring.flush().map_err(|e| Error::io("TX ring flush", e))?;
                n += confirm(ring, streams, &slots, &mut tail, &mut unconfirmed, rep);
                let at_refused = unconfirmed > 0
                    && !slots[tail].withdrawn
                    && ring.status(tail) & TP_STATUS_SEND_REQUEST != 0;
                if !(faces_dut && h.refused && at_refused) {
                    break;
                }
                slots[tail].withdrawn = true;
                ring.withdraw(tail);
                count_refused(streams, &slots[tail]);
            }
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
            // One clock read per batch (see the module doc).
            let ts = sys::monotonic_ns();
            while issued < due {
                if unconfirmed == n_slots || !ring.is_available(head) {
                    break; // every slot is in flight: back-pressure
                }
                let len = s.gen.write(s.next, ts, ring.data_mut(head));
                ring.request(head, len);
                slots[head] = Slot {
                    stream: si as u16,
                    len: len as u32,
                    ts,
                    withdrawn: false,
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
        wait_for_next_due(streams.iter(), now);
    }
    // Give frames still waiting a last chance (up to 1 s), then take them back uncounted.
    let deadline = sys::monotonic_ns() + 1_000_000_000;
    while unconfirmed > 0 && sys::monotonic_ns() < deadline && !stop.load(Ordering::Relaxed) {
        if flush_and_confirm!() == 0 {
            std::thread::yield_now();
        }
    }
    confirm(ring, streams, &slots, &mut tail, &mut unconfirmed, rep);
    while unconfirmed > 0 {
        // Only this thread calls send(), so the kernel is not looking at these slots now.
        ring.reset(tail);
        if !slots[tail].withdrawn {
            rep.abandoned += 1; // a withdrawn frame is already counted, as the DUT's loss
        }
        tail = (tail + 1) % n_slots;
        unconfirmed -= 1;
    }
    Ok(accepted_total)
}

/// The send loop with `sendmmsg` from a reused buffer pool; returns the frames accepted.
///
/// Slots `from..to` of the pool hold stamped frames the kernel has not accepted yet. New
/// frames are stamped only once the whole batch is handed over, so a frame is retried with the
/// same sequence number and timestamp until the kernel takes it or the port stops — or, where
/// the port faces the DUT (`faces_dut`), until the DUT's port refuses it: then it is counted
/// as the DUT's loss and the rest of the batch handed over at once (module doc).
fn run_mmsg(
    sock: &PacketSocket,
    batch: &mut MmsgBatch,
    faces_dut: bool,
    streams: &mut [StreamState],
    stop: &AtomicBool,
    rep: &mut TxPortReport,
) -> Result<u64> {
    let n_slots = batch.slots();
    let mut meta = vec![Slot::default(); n_slots];
    let (mut from, mut to) = (0usize, 0usize);
    let mut accepted_total = 0u64;

    // Sends `from..to` and counts what the kernel accepted; past a frame the DUT's port
    // refused, sends the rest again.
    let mut send = |batch: &mut MmsgBatch,
                    streams: &mut [StreamState],
                    meta: &[Slot],
                    from: &mut usize,
                    to: usize,
                    rep: &mut TxPortReport|
     -> Result<u64> {
        let mut n = 0;
        loop {
            let h = batch
                .send(sock, *from, to)
                .map_err(|e| Error::io("sendmmsg", e))?;
            for m in &meta[*from..*from + h.accepted] {
                streams[usize::from(m.stream)].count_sent(m);
            }
            *from += h.accepted;
            n += h.accepted;
            if *from == to || !faces_dut {
                break;
            }
            if h.refused {
                count_refused(streams, &meta[*from]);
                *from += 1;
            } else if h.accepted == 0 {
                break; // would block: the tester's own back-pressure
            }
        }
        let n = n as u64;
        if n > 0 {
            rep.flushes += 1;
            rep.max_batch = rep.max_batch.max(n);
            accepted_total += n;
        }
        Ok(n)
    };

    loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if from < to {
            // Earlier frames still wait for the kernel: retry them before stamping new ones.
            send(batch, streams, &meta, &mut from, to, rep)?;
            if from < to {
                rep.backpressure_flushes += 1;
                std::thread::yield_now();
                continue;
            }
        }
        let now = sys::monotonic_ns();
        if streams.iter().all(|s| s.done(now)) {
            break;
        }
        (from, to) = (0, 0);
        for (si, s) in streams.iter_mut().enumerate() {
            if s.done(now) {
                continue;
            }
            let mut due = s.pacer.due(now);
            if s.finishing_pair {
                due = due.max(1);
            }
            let issued = (due as usize).min(n_slots - to);
            // One clock read per batch (see the module doc).
            let ts = sys::monotonic_ns();
            for (slot, m) in meta.iter_mut().enumerate().skip(to).take(issued) {
                let len = s.gen.write(s.next, ts, batch.frame_mut(slot));
                batch.set_len(slot, len);
                *m = Slot {
                    stream: si as u16,
                    len: len as u32,
                    ts,
                    withdrawn: false,
                };
                s.next += 1;
            }
            to += issued;
            s.pacer.issue(issued as u64);
            // Never stop between the two frames of a swapped pair.
            s.finishing_pair = s.gen.mid_pair(s.next);
        }
        if to > 0 {
            send(batch, streams, &meta, &mut from, to, rep)?;
            if from < to {
                rep.backpressure_flushes += 1;
            }
            continue;
        }
        // Nothing due: wait for the earliest next frame.
        wait_for_next_due(streams.iter(), now);
    }
    // Give frames still waiting a last chance (up to 1 s), then drop them uncounted.
    let deadline = sys::monotonic_ns() + 1_000_000_000;
    while from < to && sys::monotonic_ns() < deadline && !stop.load(Ordering::Relaxed) {
        if send(batch, streams, &meta, &mut from, to, rep)? == 0 {
            std::thread::yield_now();
        }
    }
    rep.abandoned += (to - from) as u64;
    Ok(accepted_total)
}

impl StreamState {
    fn report(&self) -> TxStreamReport {
        TxStreamReport {
            stream_id: self.gen.stream_id(),
            sent: self.sent,
            bytes: self.bytes,
            bytes_with_fcs: self.bytes + 4 * self.sent,
            intended_pps: self.intended,
            achieved_pps: if self.sent >= 2 && self.last_ns > self.first_ns {
                Pps((self.sent - 1) as f64 / ((self.last_ns - self.first_ns) as f64 * 1e-9))
            } else {
                Pps(0.0)
            },
            first_tx_ns: self.first_ns,
            last_tx_ns: self.last_ns,
            slipped: if self.unpaced {
                0
            } else {
                self.pacer.slipped()
            },
            max_debt: if self.unpaced {
                0
            } else {
                self.pacer.max_seen_debt()
            },
            swapped_pairs: self.gen.swapped_pairs(self.sent),
            refused_by_peer: self.refused,
        }
    }
}

/// Waits until shortly before the earliest frame any unfinished stream has due
/// ([`sys::wait_for_due`]: sleeps when it is far, spins when it is near), so that pacing stays
/// on schedule without burning a core at low rates.
fn wait_for_next_due<'a>(streams: impl Iterator<Item = &'a StreamState>, now: u64) {
    let next = streams
        .filter(|s| !s.done(now))
        .map(|s| s.pacer.next_due_ns())
        .min();
    if let Some(next) = next {
        sys::wait_for_due(next);
    }
}
