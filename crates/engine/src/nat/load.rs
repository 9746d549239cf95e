//! RFC 9693's real test for throughput: frames on the N connections the preliminary phase
//! established, both directions at once — the initiator cycles through the tuples it opened the
//! connections from (stream 1), the responder through the tuples it learned (stream 2, the
//! return traffic on the translations the DUT chose). Frame i of a direction belongs to
//! connection i mod N and carries i mod N as its sequence number, so a receiver checks every
//! frame against its own connection: the initiator counts a frame only if it arrives on the
//! tuple connection k was opened from, the responder only if it arrives on the tuple it learned
//! for k. Anything else is *misdirected* (a DUT that mixed up its translations), never counted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;
use wire::units::Pps;

use super::announce;
use super::{
    open_sender, send_paced, ConnTrialConfig, Opened, PhaseTx, ReplyWriter, Tuple, BATCH,
    PRELIMINARY_STREAM, VALIDATION_STREAM,
};
use crate::port::RxRingConfig;
use crate::resolve::{self, Identity};
use crate::stream::{FrameGen, StreamConfig};
use crate::sys::{self, MmsgBatch};
use crate::trial::Backend;
use crate::{Error, Result};

/// The load: `pps` frames/s each direction for `duration`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadPhase {
    pub pps: Pps,
    pub duration: Duration,
    /// Which engine sends and counts: `Auto` runs on XDP when the load fits it (IPv4, frames
    /// up to 3,000 B) and XDP loads, else on AF_PACKET, with the reason in
    /// [`LoadReport::note`] ([`super::load_xdp`]).
    pub backend: Backend,
    /// Keep the frames received per connection in the report (XDP only; N numbers per
    /// direction, for tests).
    pub keep_per_connection: bool,
}

impl LoadPhase {
    /// `pps` each way for `duration`, on the backend `Auto` chooses.
    pub fn new(pps: Pps, duration: Duration) -> LoadPhase {
        LoadPhase {
            pps,
            duration,
            backend: Backend::Auto,
            keep_per_connection: false,
        }
    }

    /// Frames each direction sends.
    pub fn frames(&self) -> u64 {
        (self.pps.0 * self.duration.as_secs_f64()).round().max(1.0) as u64
    }
}

/// The engine that ran a load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadEngine {
    #[default]
    AfPacket,
    Xdp,
}

impl LoadEngine {
    pub fn name(self) -> &'static str {
        match self {
            LoadEngine::AfPacket => "af_packet",
            LoadEngine::Xdp => "xdp",
        }
    }
}

/// What the load measured.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct LoadReport {
    /// Initiator → responder.
    pub forward: PhaseTx,
    /// Frames the responder received on the tuple it learned for their connection.
    pub forward_received: u64,
    pub forward_misdirected: u64,
    /// Responder → initiator.
    pub reverse: PhaseTx,
    /// Frames the initiator received on the tuple their connection was opened from.
    pub reverse_received: u64,
    pub reverse_misdirected: u64,
    /// Frames the tester's own receive rings dropped (both ports): the tester, not the DUT,
    /// lost them, so a trial with any is tester-limited.
    pub rx_ring_drops: u64,
    /// The engine that sent and counted the load, and why (a fallback's reason, or SKB mode).
    pub engine: LoadEngine,
    pub note: String,
    /// Frames the DUT's ports refused at hand-over (XDP: the veth peer's ring was full): sent,
    /// and lost in the DUT.
    pub refused_by_dut: u64,
    /// The priority the two senders ran with (XDP: [`super::priority`]; `None` on
    /// AF_PACKET, whose threads keep the port's nice −10).
    pub sender_priority: Option<super::priority::SenderPriority>,
    /// Connections that received fewer frames than were sent on them, each direction (XDP
    /// counts per connection; `None` on AF_PACKET).
    pub forward_short_connections: Option<u64>,
    pub reverse_short_connections: Option<u64>,
    /// Frames received per connection, when [`LoadPhase::keep_per_connection`] (XDP).
    #[serde(skip)]
    pub forward_per_connection: Option<Vec<u64>>,
    #[serde(skip)]
    pub reverse_per_connection: Option<Vec<u64>>,
}

/// A receiver's count: frames of `stream` whose tuple is `expected(index)`.
pub(super) struct Count {
    stream: u16,
    pub(super) received: u64,
    pub(super) misdirected: u64,
}

impl Count {
    fn observe(&mut self, frame: &[u8], expected: &dyn Fn(u64, &Tuple) -> Option<bool>) -> bool {
        let Some((t, id, seq)) = Tuple::of_frame(frame) else {
            return false;
        };
        if id != self.stream {
            return false;
        }
        match expected(u64::from(seq), &t) {
            Some(true) => self.received += 1,
            _ => self.misdirected += 1,
        }
        true
    }
}

/// The load on AF_PACKET: `sendmmsg` senders, TPACKET_V3 receivers. The ports resolve the DUT
/// again (it knows them both).
pub(super) fn run_af_packet(
    cfg: &ConnTrialConfig,
    load: LoadPhase,
    prelim: &StreamConfig,
    opened: Opened,
    learned: &[(u64, Tuple)],
    stop: &AtomicBool,
) -> Result<LoadReport> {
    let n = cfg.connections;
    if learned.is_empty() {
        return Err(Error::Config("no learned connection to load".into()));
    }
    let mut by_index: Vec<Option<Tuple>> = vec![None; n as usize];
    for (k, t) in learned {
        if let Some(slot) = by_index.get_mut(*k as usize) {
            *slot = Some(*t);
        }
    }
    let frames = load.frames();
    let (a_hop, b_hop) = (cfg.next_hop(&cfg.initiator)?, cfg.next_hop(&cfg.responder)?);
    let rx_stop = AtomicBool::new(false);
    let start_ns = AtomicU64::new(0);
    let frame_len = cfg.frame_size - wire::encap::FCS;

    std::thread::scope(|sc| -> Result<LoadReport> {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<()>>();
        let a_rx = spawn_receiver(
            sc,
            cfg.initiator.clone(),
            VALIDATION_STREAM,
            Box::new(move |k: u64, t: &Tuple| {
                (k < n).then(|| {
                    let (sport, dport) = opened.ports(k);
                    t.dst == opened.addr && t.dst_port == sport && t.src_port == dport
                })
            }),
            ready_tx.clone(),
            &rx_stop,
        );
        let by_index = &by_index;
        let b_rx = spawn_receiver(
            sc,
            cfg.responder.clone(),
            PRELIMINARY_STREAM,
            Box::new(move |k: u64, t: &Tuple| {
                by_index.get(k as usize).map(|l| l.is_some_and(|l| l == *t))
            }),
            ready_tx.clone(),
            &rx_stop,
        );
        // Senders.
        let a_tx = {
            let ready = ready_tx.clone();
            let (spec, start_ns) = (&cfg.initiator, &start_ns);
            let timeout = cfg.resolve_timeout;
            let prelim = prelim.clone();
            sc.spawn(move || -> Result<PhaseTx> {
                let setup = (|| {
                    let ifindex = spec.enter(0)?;
                    let (sock, me, dut) = open_sender(spec, ifindex, a_hop, timeout)?;
                    let mut gen = FrameGen::new(&prelim)?;
                    gen.set_macs(dut, me.mac);
                    Ok((sock, gen))
                })();
                let (sock, gen) = announce(&ready, "load sender A", setup)?;
                let start = wait_start(start_ns);
                if start == u64::MAX {
                    return Ok(PhaseTx::default());
                }
                let mut batch = MmsgBatch::new(BATCH, gen.max_len().max(128));
                send_paced(
                    &sock,
                    spec.faces_dut,
                    &mut batch,
                    frames,
                    load.pps,
                    start,
                    stop,
                    |i, ts, buf| Ok(gen.write(i % n, ts, buf)),
                )
            })
        };
        let b_tx = {
            let ready = ready_tx.clone();
            let (spec, start_ns) = (&cfg.responder, &start_ns);
            let (timeout, frame_size) = (cfg.resolve_timeout, cfg.frame_size);
            sc.spawn(move || -> Result<PhaseTx> {
                let setup = (|| {
                    let ifindex = spec.enter(0)?;
                    open_sender(spec, ifindex, b_hop, timeout)
                })();
                let (sock, me, dut) = announce(&ready, "load sender B", setup)?;
                let mut writer = ReplyWriter::new(VALIDATION_STREAM, frame_size, dut, me.mac);
                let start = wait_start(start_ns);
                if start == u64::MAX {
                    return Ok(PhaseTx::default());
                }
                let mut batch = MmsgBatch::new(BATCH, frame_len.max(128));
                let len = learned.len() as u64;
                send_paced(
                    &sock,
                    spec.faces_dut,
                    &mut batch,
                    frames,
                    load.pps,
                    start,
                    stop,
                    |i, ts, buf| {
                        let (index, t) = &learned[(i % len) as usize];
                        writer.write(*index, t, ts, buf)
                    },
                )
            })
        };
        drop(ready_tx);
        let abort = |e: Error| {
            rx_stop.store(true, Ordering::Relaxed);
            start_ns.store(u64::MAX, Ordering::Release);
            e
        };
        for _ in 0..4 {
            match ready_rx.recv_timeout(cfg.resolve_timeout + Duration::from_secs(10)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(abort(e)),
                Err(_) => return Err(abort(Error::Timeout("a port did not get ready".into()))),
            }
        }
        start_ns.store(sys::monotonic_ns() + 20_000_000, Ordering::Release);
        let join =
            |h: std::thread::ScopedJoinHandle<'_, Result<PhaseTx>>, what: &str| match h.join() {
                Ok(r) => r,
                Err(_) => Err(Error::Thread(format!("{what} panicked"))),
            };
        let forward = join(a_tx, "load sender A");
        let reverse = join(b_tx, "load sender B");
        std::thread::sleep(cfg.drain);
        rx_stop.store(true, Ordering::Relaxed);
        let (forward, reverse) = (forward?, reverse?);
        let rx = |h: std::thread::ScopedJoinHandle<'_, Result<(Count, u64)>>| match h.join() {
            Ok(r) => r,
            Err(_) => Err(Error::Thread("load receiver panicked".into())),
        };
        let (rev, a_drops) = rx(a_rx)?;
        let (fwd, b_drops) = rx(b_rx)?;
        Ok(LoadReport {
            forward,
            forward_received: fwd.received,
            forward_misdirected: fwd.misdirected,
            reverse,
            reverse_received: rev.received,
            reverse_misdirected: rev.misdirected,
            rx_ring_drops: a_drops + b_drops,
            ..LoadReport::default()
        })
    })
}

pub(super) fn wait_start(start_ns: &AtomicU64) -> u64 {
    loop {
        let s = start_ns.load(Ordering::Acquire);
        if s != 0 {
            return s;
        }
        std::thread::sleep(Duration::from_micros(200));
    }
}

pub(super) type Expected<'a> = Box<dyn Fn(u64, &Tuple) -> Option<bool> + Send + 'a>;

/// A receiver: answers ARP/ND, counts the frames of `stream` on the tuple `expected` says.
pub(super) fn spawn_receiver<'scope, 'env>(
    sc: &'scope std::thread::Scope<'scope, 'env>,
    spec: crate::port::PortSpec,
    stream: u16,
    expected: Expected<'scope>,
    ready: std::sync::mpsc::Sender<Result<()>>,
    rx_stop: &'scope AtomicBool,
) -> std::thread::ScopedJoinHandle<'scope, Result<(Count, u64)>> {
    sc.spawn(move || -> Result<(Count, u64)> {
        let setup = (|| {
            let ifindex = spec.enter(1)?;
            let ring = spec.open_rx(ifindex, &RxRingConfig::default())?;
            let me = Identity {
                mac: ring
                    .socket()
                    .hw_addr()
                    .map_err(|e| Error::io("interface MAC", e))?,
                ipv4: spec.ipv4,
                ipv6: spec.ipv6,
            };
            // Resets the ring's counters: only this load's drops count.
            let _ = ring.socket().take_stats();
            Ok((ring, me))
        })();
        let (mut ring, me) = announce(&ready, "load receiver", setup)?;
        let mut c = Count {
            stream,
            received: 0,
            misdirected: 0,
        };
        while !rx_stop.load(Ordering::Relaxed) {
            ring.drain(5, |sock, p| {
                if !c.observe(p.data, &*expected) {
                    if let Some(r) = resolve::answer(p.data, &me) {
                        let _ = sock.send_frame(&r);
                    }
                }
            })
            .map_err(|e| Error::io("receive ring", e))?;
        }
        ring.drain(0, |_, p| {
            c.observe(p.data, &*expected);
        })
        .map_err(|e| Error::io("receive ring", e))?;
        let drops = ring.socket().take_stats().map(|(_, d)| d).unwrap_or(0);
        Ok((c, drops))
    })
}
