//! The two-phase connection trial of a stateful NAT or firewall (issue #15; RFC 9693 "Test
//! Phases"): an *initiator* port opens N connections, a *responder* port learns the tuples they
//! arrive with — translated, behind a NAT — and answers each on the learned tuple.
//!
//! 1. **Preliminary phase.** The initiator sends one UDP frame from each of N distinct tuples
//!    (a [`FlowSet`](crate::flowset::FlowSet): source port fastest, then destination port; in
//!    counting or RFC 4814 pseudorandom order) at the asked rate; frame k carries sequence
//!    number k, its connection's creation index. The responder records, per index, the tuple
//!    it arrived with ([`learn::Learned`]).
//! 2. **Gap.** Frames still in flight arrive; the caller's `between` hook runs (the runner
//!    reads the DUT's connection counters there).
//! 3. **Validation.** The responder sends one frame back on every learned tuple, in creation
//!    order, at the validation rate ([`reply::ReplyWriter`]); the initiator counts which
//!    connections came back on the tuple they were opened from ([`check::Validated`]).
//!
//! Why not [`crate::trial`]: its streams have fixed headers chosen before the start, while the
//! validation frames' headers are only known once the preliminary phase is over (the NAT
//! chose them). The preliminary phase runs on XDP when it can ([`prelim_xdp`],
//! [`ConnTrialConfig::preliminary_backend`]): sent by the XDP sender, learned by an XDP
//! program on the responder, each half on AF_PACKET (`sendmmsg` with qdisc bypass, TPACKET_V3
//! ring) when XDP cannot run it, decided before the first frame and recorded
//! ([`ConnTrialReport::preliminary_engines`]). The validation sends with `sendmmsg` on
//! AF_PACKET and counts on a TPACKET_V3 ring: its rate is the plan's, not the one searched. The
//! load of `nat-throughput` runs on XDP when it can ([`load`], [`load_xdp`]). Both ports answer
//! ARP/ND throughout, and each resolves the DUT before anything is sent, so the DUT knows both
//! (RFC 2544 §11) and no connection is lost to neighbour resolution.
//!
//! The caller empties the DUT's connection table between trials (RFC 9693 "Control of the
//! Connection Tracking Table Entries"); the engine knows nothing about the DUT.

pub mod check;
pub mod learn;
pub mod load;
mod load_backend;
mod load_xdp;
mod prelim_xdp;
pub mod priority;
pub mod reply;

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use serde::Serialize;
use wire::encap::{EncapSpec, IpVersion};
use wire::template::{FrameTemplate, StreamSpec};
use wire::units::Pps;

use crate::port::{PortSpec, RxRingConfig};
use crate::resolve::{self, Identity};
use crate::stream::{FlowMode, Flows, FrameGen, Limit, Rate, StreamConfig};
use crate::sys::{self, MmsgBatch, PacketSocket};
use crate::trial::Backend;
use crate::{Error, Result};

pub use check::{Failed, Opened, Validated};
pub use learn::{Learned, Tuple};
pub use load::{LoadEngine, LoadPhase, LoadReport};
pub use prelim_xdp::PhaseEngines;
use priority::SenderPriority;
pub use reply::ReplyWriter;

/// Stream id of the preliminary frames (initiator → responder).
pub const PRELIMINARY_STREAM: u16 = 1;
/// Stream id of the validation frames (responder → initiator).
pub const VALIDATION_STREAM: u16 = 2;
/// Source ports the initiator uses start here (below are well-known and registered ports a
/// NAT may treat specially); the flow set takes up to [`SOURCE_PORTS`] of them.
pub const BASE_SOURCE_PORT: u16 = 1024;
/// Source ports per destination port: 1024..=65535.
pub const SOURCE_PORTS: u64 = 65536 - BASE_SOURCE_PORT as u64;
/// The first destination port (discard); further destination ports follow it when N exceeds
/// [`SOURCE_PORTS`].
pub const BASE_DESTINATION_PORT: u16 = 9;
/// Most connections per trial: every source port × destination ports 9..=65535.
pub const MAX_CONNECTIONS: u64 = SOURCE_PORTS * (65536 - BASE_DESTINATION_PORT as u64);

/// Most connections one trial keeps state for: the responder's table and the initiator's
/// count take about 90 bytes per connection, so 4 million is ~360 MB — a bound that keeps a
/// plan's `max-connections` from exhausting the tester's memory instead of failing clearly.
pub const MAX_TRIAL_CONNECTIONS: u64 = 4_000_000;

/// One two-phase trial.
#[derive(Debug, Clone)]
pub struct ConnTrialConfig {
    /// Opens the connections (the "private" side).
    pub initiator: PortSpec,
    /// Learns and answers (the "public" side).
    pub responder: PortSpec,
    pub ip: IpVersion,
    /// Frame size with FCS, both phases.
    pub frame_size: usize,
    /// N.
    pub connections: u64,
    /// Preliminary frames (= new connections) per second.
    pub rate_pps: Pps,
    /// Validation frames per second.
    pub validation_rate_pps: Pps,
    /// Wait after the last preliminary frame before validation starts.
    pub gap: Duration,
    /// How long the initiator keeps counting after the last validation frame.
    pub drain: Duration,
    /// `None`: tuples in counting order; `Some(seed)`: RFC 4814 pseudorandom order.
    pub permutation_seed: Option<u64>,
    /// How long each port waits for the DUT to answer ARP/ND.
    pub resolve_timeout: Duration,
    /// RFC 9693's real test for throughput: after a validation in which every connection came
    /// back, load the N connections both ways ([`load`]). `None`: no load.
    pub load: Option<LoadPhase>,
    /// Which engine sends and learns the preliminary phase: `Auto` (the default) XDP when it
    /// can run it (IPv4, frames up to 3,000 B, a port that takes XDP), else AF_PACKET, decided
    /// before the first frame and recorded ([`prelim_xdp`]).
    pub preliminary_backend: Backend,
}

impl ConnTrialConfig {
    /// A trial with the usual defaults: counting order, 100 ms drain, 3 s to resolve.
    pub fn new(initiator: PortSpec, responder: PortSpec, ip: IpVersion) -> Self {
        ConnTrialConfig {
            initiator,
            responder,
            ip,
            frame_size: 64,
            connections: 1,
            rate_pps: Pps(1000.0),
            validation_rate_pps: Pps(1000.0),
            gap: Duration::from_millis(500),
            drain: Duration::from_millis(100),
            permutation_seed: None,
            resolve_timeout: Duration::from_secs(3),
            load: None,
            preliminary_backend: Backend::Auto,
        }
    }

    /// The flow variation that gives N distinct tuples: up to [`SOURCE_PORTS`] source ports,
    /// then as many destination ports as needed. The set may be larger than N; the first N
    /// positions of its cycle are distinct either way.
    pub fn flows(&self) -> Result<Flows> {
        let n = self.connections;
        if n == 0 || n > MAX_CONNECTIONS {
            return Err(Error::Config(format!(
                "connections: give 1 to {MAX_CONNECTIONS}, not {n}"
            )));
        }
        let src = n.min(SOURCE_PORTS);
        let dst = n.div_ceil(src);
        Ok(Flows {
            src_ip_count: 1,
            dst_ip_count: 1,
            src_port_count: src as u16,
            dst_port_count: dst as u16,
            mode: match self.permutation_seed {
                None => FlowMode::Tuples,
                Some(seed) => FlowMode::PermutedTuples { seed },
            },
        })
    }

    fn addr(&self, p: &PortSpec) -> Result<IpAddr> {
        match self.ip {
            IpVersion::V4 => p.ipv4.map(IpAddr::V4),
            IpVersion::V6 => p.ipv6.map(IpAddr::V6),
        }
        .ok_or_else(|| Error::Config(format!("port {} has no {} address", p.name, self.ip)))
    }

    fn next_hop(&self, p: &PortSpec) -> Result<IpAddr> {
        match self.ip {
            IpVersion::V4 => p.next_hop_v4.map(IpAddr::V4),
            IpVersion::V6 => p.next_hop_v6.map(IpAddr::V6),
        }
        .ok_or_else(|| Error::Config(format!("port {} has no {} next hop", p.name, self.ip)))
    }

    /// The preliminary stream: frame k from tuple k of the flow set, N frames.
    fn preliminary(&self) -> Result<StreamConfig> {
        let mut spec = StreamSpec::new(EncapSpec::plain(self.ip));
        spec.stream_id = PRELIMINARY_STREAM;
        spec.src_ip = self.addr(&self.initiator)?;
        spec.dst_ip = self.addr(&self.responder)?;
        spec.src_port = BASE_SOURCE_PORT;
        spec.dst_port = BASE_DESTINATION_PORT;
        let t = FrameTemplate::new(&spec, self.frame_size)
            .map_err(|e| Error::Config(format!("frame size {}: {e}", self.frame_size)))?;
        let mut s = StreamConfig::single(
            PRELIMINARY_STREAM,
            t,
            Rate::Pps(self.rate_pps),
            Limit::Frames(self.connections),
        );
        s.flows = self.flows()?;
        Ok(s)
    }

    fn check(&self) -> Result<()> {
        for (what, r) in [
            ("rate", self.rate_pps),
            ("validation rate", self.validation_rate_pps),
        ] {
            let r = r.0;
            if !(r.is_finite() && r > 0.0) {
                return Err(Error::Config(format!(
                    "{what} {r}: give a positive number of frames/s"
                )));
            }
        }
        if self.connections > MAX_TRIAL_CONNECTIONS {
            return Err(Error::Config(format!(
                "{} connections: one trial keeps state for at most {MAX_TRIAL_CONNECTIONS} (about 90 B each in the tester's memory)",
                self.connections
            )));
        }
        self.flows().map(|_| ())
    }
}

/// What one phase's sender did.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize)]
pub struct PhaseTx {
    /// Frames handed to the port: accepted, or refused by the DUT's port (`refused_by_peer`).
    pub sent: u64,
    /// Of `sent`: frames the DUT's port refused (its receive ring full) where the port faces
    /// the DUT ([`PortSpec::faces_dut`]): offered and lost at the DUT (DESIGN.md §7), never
    /// retried — a connection the DUT could not take is not opened again later.
    #[serde(default)]
    pub refused_by_peer: u64,
    pub intended_pps: Pps,
    /// From the first to the last frame's send time (the intended rate for one frame).
    pub achieved_pps: Pps,
    /// The latest any frame was sent after its due time: a stall of the tester, which the
    /// average rate hides (frames then leave in a burst).
    pub max_late_ns: u64,
    pub first_tx_ns: u64,
    pub last_tx_ns: u64,
}

/// What a two-phase trial measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConnTrialReport {
    /// N.
    pub connections: u64,
    pub preliminary: PhaseTx,
    /// Distinct connections the responder learned (preliminary frames that arrived).
    pub learned: u64,
    /// Preliminary frames that arrived twice for one connection, or with an index past N.
    pub learned_duplicates: u64,
    /// Learned connections whose source address was not the initiator's (translated by a NAT).
    pub translated: u64,
    pub validation: PhaseTx,
    /// Distinct connections whose validation frame reached the initiator on its own tuple.
    pub validated: u64,
    /// Validation frames that arrived twice, with an index past N, or on another tuple than
    /// the one their connection was opened from (a DUT that mixed up its translations).
    pub validated_duplicates: u64,
    pub misdirected: u64,
    /// The connections that did not validate (never learned, or their reply lost).
    pub failed: Option<Failed>,
    /// Frames the tester's own receive rings dropped (responder over the preliminary phase,
    /// initiator over the validation): a receiver that was not scheduled in time on a loaded
    /// machine. Connections lost that way are the tester's loss, not the DUT's.
    pub rx_ring_drops: u64,
    /// Which engine sent the preliminary frames and which learned them, and why.
    pub preliminary_engines: PhaseEngines,
    /// The load on the established connections, when asked for and every connection
    /// validated (`None` otherwise: a load on a table that lacks connections measures nothing
    /// RFC 9693 asks for).
    pub load: Option<LoadReport>,
}

/// Tells the trial's start barrier how a thread's set-up went (`who` names the thread in the
/// error) and hands the set-up's value on: every thread of a trial reports, success or not,
/// so the trial never waits for one that failed.
pub(crate) fn announce<T>(
    ready: &mpsc::Sender<Result<()>>,
    who: &str,
    setup: Result<T>,
) -> Result<T> {
    match setup {
        Ok(x) => {
            let _ = ready.send(Ok(()));
            Ok(x)
        }
        Err(e) => {
            let _ = ready.send(Err(Error::Thread(format!("{who}: {e}"))));
            Err(e)
        }
    }
}

/// Paces `count` frames at `pps` from `start_ns` on `sock`, each written by `write(index,
/// timestamp, buffer)`. Frames due together go in one `sendmmsg`; a frame the port would not
/// take now is retried (the tester waits, it never skips a connection) — except, where the
/// port faces the DUT (`faces_dut`), a frame the DUT's port refused: that one was offered and
/// lost by the DUT (`refused_by_peer`; crate::tx has why).
#[allow(clippy::too_many_arguments)]
fn send_paced(
    sock: &PacketSocket,
    faces_dut: bool,
    batch: &mut MmsgBatch,
    count: u64,
    pps: Pps,
    start_ns: u64,
    stop: &AtomicBool,
    mut write: impl FnMut(u64, u64, &mut [u8]) -> Result<usize>,
) -> Result<PhaseTx> {
    let interval = 1e9 / pps.0;
    let due = |i: u64| start_ns + (i as f64 * interval) as u64;
    let mut tx = PhaseTx {
        intended_pps: pps,
        ..PhaseTx::default()
    };
    let mut next = 0u64;
    while next < count {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let now = sys::monotonic_ns();
        if now < due(next) {
            sys::wait_for_due(due(next));
            continue;
        }
        tx.max_late_ns = tx.max_late_ns.max(now - due(next));
        // Every frame due by now, at most one batch.
        let mut k = 0usize;
        while k < batch.slots() && next + (k as u64) < count && due(next + k as u64) <= now {
            let len = write(next + k as u64, now, batch.frame_mut(k))?;
            batch.set_len(k, len);
            k += 1;
        }
        let mut done = 0usize;
        while done < k {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let h = batch
                .send(sock, done, k)
                .map_err(|e| Error::io("sendmmsg", e))?;
            done += h.accepted;
            if h.refused && faces_dut {
                tx.refused_by_peer += 1;
                done += 1;
            } else if h.accepted == 0 {
                std::hint::spin_loop();
            }
        }
        let t = sys::monotonic_ns();
        if tx.sent == 0 {
            tx.first_tx_ns = t;
        }
        tx.last_tx_ns = t;
        tx.sent += done as u64;
        next += done as u64;
    }
    tx.achieved_pps = if tx.sent > 1 && tx.last_tx_ns > tx.first_tx_ns {
        Pps((tx.sent - 1) as f64 * 1e9 / (tx.last_tx_ns - tx.first_tx_ns) as f64)
    } else {
        pps
    };
    Ok(tx)
}

/// A port's send socket (qdisc bypass, large buffer), its identity and the DUT's MAC, resolved
/// from inside the port's namespace (the calling thread must have entered it).
fn open_sender(
    spec: &PortSpec,
    ifindex: u32,
    hop: IpAddr,
    timeout: Duration,
) -> Result<(PacketSocket, Identity, [u8; 6])> {
    let ctl = spec.open_socket(ifindex)?;
    let me = Identity {
        mac: ctl.hw_addr().map_err(|e| Error::io("interface MAC", e))?,
        ipv4: spec.ipv4,
        ipv6: spec.ipv6,
    };
    let dut = resolve::resolve(&ctl, &me, hop, timeout)?;
    drop(ctl);
    let sock = PacketSocket::open(ifindex, 0)
        .map_err(|e| Error::io(format!("AF_PACKET socket on {}", spec.ifname), e))?;
    sock.set_qdisc_bypass(true)
        .map_err(|e| Error::io("PACKET_QDISC_BYPASS", e))?;
    let _ = sock.set_sndbuf_force(16 << 20);
    Ok((sock, me, dut))
}

/// Frames per `sendmmsg`.
const BATCH: usize = 64;

/// Runs one two-phase trial. `between` runs after the gap, before validation (read the DUT's
/// counters there). `stop` aborts (counts so far are reported).
pub fn run(
    cfg: &ConnTrialConfig,
    stop: &AtomicBool,
    between: &mut dyn FnMut(),
) -> Result<ConnTrialReport> {
    cfg.check()?;
    let prelim = cfg.preliminary()?;
    let n = cfg.connections;
    let opened = Opened {
        flows: prelim
            .flows
            .flow_set()
            .ok_or_else(|| Error::Config("no flow set".into()))?,
        addr: cfg.addr(&cfg.initiator)?,
        base_src_port: BASE_SOURCE_PORT,
        base_dst_port: BASE_DESTINATION_PORT,
    };
    let (a_hop, b_hop) = (cfg.next_hop(&cfg.initiator)?, cfg.next_hop(&cfg.responder)?);
    let rx_stop = AtomicBool::new(false);
    let start_ns = AtomicU64::new(0);
    let validate_ns = AtomicU64::new(0);
    let frame_len = cfg.frame_size - wire::encap::FCS;
    // The preliminary phase's learner, attached before any frame is sent (or why not).
    let (learner, learner_note) = match prelim_xdp::attach_learner(cfg, PRELIMINARY_STREAM)? {
        Ok(l) => (Some(l), String::new()),
        Err(why) => (None, why),
    };
    let learner_engine = if learner.is_some() {
        LoadEngine::Xdp
    } else {
        LoadEngine::AfPacket
    };
    let xdp_prelim = prelim_xdp::xdp_stream(&prelim);

    std::thread::scope(|sc| -> Result<ConnTrialReport> {
        let abort = |e: Error| {
            rx_stop.store(true, Ordering::Relaxed);
            // Wakes a responder waiting for its validation start, and the initiator's sender.
            start_ns.store(u64::MAX, Ordering::Release);
            validate_ns.store(u64::MAX, Ordering::Release);
            e
        };
        // The initiator's receiver: answers ARP/ND, counts validation frames.
        let (ready_tx, ready_rx) = mpsc::channel::<Result<()>>();
        let a_rx = {
            let ready = ready_tx.clone();
            let (spec, rx_stop) = (&cfg.initiator, &rx_stop);
            sc.spawn(move || -> Result<(Validated, u64)> {
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
                    // Resets the ring's counters: only this trial's drops count.
                    let _ = ring.socket().take_stats();
                    Ok((ring, me))
                })();
                let (mut ring, me) = announce(&ready, "initiator receiver", setup)?;
                let mut v = Validated::new(VALIDATION_STREAM, n, opened);
                while !rx_stop.load(Ordering::Relaxed) {
                    ring.drain(5, |sock, p| {
                        if !v.observe(p.data) {
                            if let Some(r) = resolve::answer(p.data, &me) {
                                let _ = sock.send_frame(&r);
                            }
                        }
                    })
                    .map_err(|e| Error::io("receive ring", e))?;
                }
                let drops = ring.socket().take_stats().map(|(_, d)| d).unwrap_or(0);
                Ok((v, drops))
            })
        };
        // The responder: resolves the DUT, learns during the preliminary phase, then answers.
        let b = {
            let ready = ready_tx.clone();
            let (spec, validate_ns, stop) = (&cfg.responder, &validate_ns, stop);
            let (timeout, frame_size, vpps) =
                (cfg.resolve_timeout, cfg.frame_size, cfg.validation_rate_pps);
            sc.spawn(move || -> Result<(Learned, PhaseTx, u64, Option<String>)> {
                let setup = (|| {
                    let ifindex = spec.enter(0)?;
                    let ring = spec.open_rx(ifindex, &RxRingConfig::default())?;
                    let _ = ring.socket().take_stats();
                    let (sock, me, dut) = open_sender(spec, ifindex, b_hop, timeout)?;
                    Ok((ring, sock, me, dut))
                })();
                let (mut ring, sock, me, dut) = announce(&ready, "responder", setup)?;
                let mut learned = Learned::new(PRELIMINARY_STREAM, n);
                let mut on_frame = |sock: &PacketSocket, data: &[u8]| {
                    if !learned.observe(data) {
                        if let Some(r) = resolve::answer(data, &me) {
                            let _ = sock.send_frame(&r);
                        }
                    }
                };
                let at = loop {
                    let at = validate_ns.load(Ordering::Acquire);
                    if at != 0 {
                        break at;
                    }
                    ring.drain(5, |s, p| on_frame(s, p.data))
                        .map_err(|e| Error::io("receive ring", e))?;
                };
                // What is queued now arrived within the gap and still counts.
                ring.drain(0, |s, p| on_frame(s, p.data))
                    .map_err(|e| Error::io("receive ring", e))?;
                let drops = ring.socket().take_stats().map(|(_, d)| d).unwrap_or(0);
                // The XDP learner's table, read after the gap like the ring; detached here,
                // before validation (and before a load's own programs).
                let mut learner_mode = None;
                if let Some(l) = learner {
                    prelim_xdp::read_learner(&l, &mut learned)?;
                    learner_mode = l.mode_note().map(str::to_string);
                }
                if at == u64::MAX {
                    return Ok((learned, PhaseTx::default(), drops, learner_mode));
                }
                let order: Vec<(u64, Tuple)> = learned.iter().collect();
                let mut writer = ReplyWriter::new(VALIDATION_STREAM, frame_size, dut, me.mac);
                let mut batch = MmsgBatch::new(BATCH, frame_len.max(128));
                let tx = send_paced(
                    &sock,
                    spec.faces_dut,
                    &mut batch,
                    order.len() as u64,
                    vpps,
                    at,
                    stop,
                    |i, ts, buf| {
                        let (index, t) = &order[i as usize];
                        writer.write(*index, t, ts, buf)
                    },
                )?;
                Ok((learned, tx, drops, learner_mode))
            })
        };
        // The initiator's sender.
        let a_tx = {
            let ready = ready_tx.clone();
            let (spec, start_ns, stop) = (&cfg.initiator, &start_ns, stop);
            let (timeout, pps) = (cfg.resolve_timeout, cfg.rate_pps);
            let (prelim, xdp_prelim) = (prelim.clone(), &xdp_prelim);
            sc.spawn(
                move || -> Result<(PhaseTx, LoadEngine, String, Option<SenderPriority>)> {
                    let setup = (|| {
                        let ifindex = spec.enter(0)?;
                        let (sock, me, dut) = open_sender(spec, ifindex, a_hop, timeout)?;
                        let mut gen = FrameGen::new(&prelim)?;
                        gen.set_macs(dut, me.mac);
                        // The XDP sender, opened before the start (or why not: then AF_PACKET).
                        let mut xgen = FrameGen::new(xdp_prelim)?;
                        xgen.set_macs(dut, me.mac);
                        let xdp =
                            prelim_xdp::open_sender(cfg, opened, spec, ifindex, &xgen, xdp_prelim)?;
                        Ok((sock, gen, xgen, xdp))
                    })();
                    let (sock, gen, xgen, xdp) = announce(&ready, "initiator sender", setup)?;
                    // After `enter` (nice −10), before the start: a short XDP phase cannot sit
                    // out another program's scheduler slice (priority::PRELIMINARY_DEFAULT).
                    let per_frame =
                        |frames: u64| Duration::from_secs_f64(frames as f64 / pps.0.max(1.0));
                    let wish = priority::preliminary_wish(
                        per_frame(n),
                        per_frame(prelim_xdp::MAX_CATCH_UP),
                        learner_engine == LoadEngine::Xdp,
                    );
                    let prio = xdp.is_ok().then(|| priority::raise(wish));
                    let start = loop {
                        let s = start_ns.load(Ordering::Acquire);
                        if s != 0 {
                            break s;
                        }
                        std::thread::sleep(Duration::from_micros(200));
                    };
                    if start == u64::MAX {
                        return Ok((
                            PhaseTx::default(),
                            LoadEngine::AfPacket,
                            String::new(),
                            None,
                        ));
                    }
                    match xdp {
                        Ok(mut sender) => {
                            prelim_xdp::send(&mut sender, xgen, xdp_prelim, pps, start, stop)
                                .map(|tx| (tx, LoadEngine::Xdp, String::new(), prio))
                        }
                        Err(why) => {
                            let mut batch = MmsgBatch::new(BATCH, gen.max_len().max(128));
                            send_paced(
                                &sock,
                                spec.faces_dut,
                                &mut batch,
                                n,
                                pps,
                                start,
                                stop,
                                |i, ts, buf| Ok(gen.write(i, ts, buf)),
                            )
                            .map(|tx| (tx, LoadEngine::AfPacket, why, None))
                        }
                    }
                },
            )
        };
        drop(ready_tx);
        for _ in 0..3 {
            match ready_rx.recv_timeout(cfg.resolve_timeout + Duration::from_secs(10)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(abort(e)),
                Err(_) => return Err(abort(Error::Timeout("a port did not get ready".into()))),
            }
        }
        start_ns.store(sys::monotonic_ns() + 20_000_000, Ordering::Release);
        let (preliminary, sender_engine, sender_note, sender_priority) = match a_tx.join() {
            Ok(Ok(t)) => t,
            Ok(Err(e)) => return Err(abort(e)),
            Err(_) => return Err(abort(Error::Thread("initiator sender panicked".into()))),
        };
        std::thread::sleep(cfg.gap);
        between();
        validate_ns.store(sys::monotonic_ns(), Ordering::Release);
        let (learned, validation, b_drops, learner_mode) = match b.join() {
            Ok(Ok(x)) => x,
            Ok(Err(e)) => return Err(abort(e)),
            Err(_) => return Err(abort(Error::Thread("responder panicked".into()))),
        };
        std::thread::sleep(cfg.drain);
        rx_stop.store(true, Ordering::Relaxed);
        let (validated, a_drops) = match a_rx.join() {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(Error::Thread("initiator receiver panicked".into())),
        };
        let load = match cfg.load {
            Some(l) if validated.count() == n && !stop.load(Ordering::Relaxed) => {
                let order: Vec<(u64, Tuple)> = learned.iter().collect();
                Some(load_backend::run(cfg, l, &prelim, opened, &order, stop)?)
            }
            _ => None,
        };
        Ok(ConnTrialReport {
            connections: n,
            preliminary,
            learned: learned.distinct(),
            learned_duplicates: learned.duplicates() + learned.out_of_range(),
            translated: learned.translated_from(opened.addr),
            validation,
            validated: validated.count(),
            validated_duplicates: validated.duplicates() + validated.out_of_range(),
            misdirected: validated.misdirected(),
            failed: validated.failed(),
            rx_ring_drops: a_drops + b_drops,
            preliminary_engines: PhaseEngines {
                sender: sender_engine,
                learner: learner_engine,
                note: [sender_note, learner_note, learner_mode.unwrap_or_default()]
                    .into_iter()
                    .filter(|s| !s.is_empty())
                    .collect::<Vec<_>>()
                    .join("; "),
                sender_priority,
            },
            load,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(n: u64) -> ConnTrialConfig {
        let mut c = ConnTrialConfig::new(
            PortSpec::new("a", "veth-a"),
            PortSpec::new("b", "veth-b"),
            IpVersion::V4,
        );
        c.connections = n;
        c
    }

    #[test]
    fn flow_sets_cover_n_with_source_ports_first() {
        let f = cfg(1000).flows().unwrap();
        assert_eq!((f.src_port_count, f.dst_port_count), (1000, 1));
        let f = cfg(SOURCE_PORTS + 1).flows().unwrap();
        assert_eq!(
            (u64::from(f.src_port_count), f.dst_port_count),
            (SOURCE_PORTS, 2)
        );
        assert!(cfg(0).flows().is_err());
    }

    #[test]
    fn trials_beyond_the_memory_bound_or_without_a_rate_are_refused() {
        assert!(cfg(MAX_TRIAL_CONNECTIONS).check().is_ok());
        let e = cfg(MAX_TRIAL_CONNECTIONS + 1).check().unwrap_err();
        assert!(e.to_string().contains("at most 4000000"), "{e}");
        let mut c = cfg(10);
        c.rate_pps = Pps(0.0);
        assert!(c.check().is_err());
    }
}
