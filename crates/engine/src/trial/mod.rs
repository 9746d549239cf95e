//! One trial: a set of streams between ports, run once.
//!
//! Order of events: every port's receive thread starts first (and answers ARP/ND for the
//! port's addresses from then on); then each sending port's thread resolves its next hops,
//! opens its TX ring and reports ready; all senders start on one common schedule instant; after
//! the last sender finishes, the receivers keep counting for the drain time, or until every
//! frame sent has been counted ([`drain`]); only then is loss computed (`sent − received`,
//! exact on both sides).
//!
//! Results per stream, per direction (ordered port pair) and in total (the sum, e.g. of both
//! directions of a bidirectional trial).
//!
//! **Threads.** By default each port has one receive thread and each sending port one transmit
//! thread. [`TrialConfig::tx_threads`] splits a port's streams over several transmit threads
//! (stream *i* of the port on thread *i* mod *n*), each with its own socket and ring.
//! [`TrialConfig::rx_threads`] opens several receive sockets on a port, joined in one
//! `PACKET_FANOUT` group whose classic BPF program steers every frame by its signature's
//! stream id, so that each stream is counted whole by one thread (see [`crate::rx::steering`]
//! for why per-thread state is not merged instead). A port never gets more threads than it
//! has streams to send or receive.

use crate::port::{PortSpec, RxRingConfig, TxRingConfig};
use crate::resolve::{self, Identity};
use crate::rx::{steering, IpdvReport, Receiver, StreamRxReport};
use crate::rx_clock::RxClock;
use crate::stream::{FrameGen, StreamConfig};
use crate::sys;
use crate::tx::{self, TxPortReport};
use crate::{Error, Result};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Duration;
use wire::units::{BitsPerSec, Pps};

pub mod config;
pub mod report;

pub use config::{Backend, TrialConfig, TrialStream, MAX_THREADS};
pub(crate) use report::{control_ports, tx_of, RxDone};
pub use report::{PortRxSummary, StreamResult, Totals, TrialReport};

/// What the receivers and the senders handed back.
type Outcomes = (Vec<RxDone>, Vec<(usize, TxPortReport)>);

/// How a receive thread takes part in its port's fanout group.
enum Fanout {
    /// The port's only receive thread.
    None,
    /// The first of several: creates the group with this steering program.
    Create(Vec<sys::SockFilter>),
    /// Joins the group `(id, flags)` the first one created.
    Join(u16, u32),
}

/// Lets a port's receive threads close their sockets together: a fanout group steers by
/// `% members`, so a member leaving while another still drains would re-steer frames.
struct Gate {
    left: AtomicUsize,
}

impl Gate {
    fn arrive_and_wait(&self) {
        self.left.fetch_sub(1, Ordering::AcqRel);
        // A member that failed never arrives: do not wait for it forever.
        let deadline = sys::monotonic_ns() + 2_000_000_000;
        while self.left.load(Ordering::Acquire) > 0 && sys::monotonic_ns() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// What a receive thread reports when ready: the fanout group it created, if any.
type RxReady = Result<Option<(u16, u32)>>;

#[allow(clippy::too_many_arguments)]
fn rx_thread(
    spec: &PortSpec,
    (port, thread): (usize, usize),
    expected: Vec<(u16, crate::validate::Expect)>,
    ring_cfg: RxRingConfig,
    fanout: Fanout,
    ready: mpsc::Sender<RxReady>,
    stop: &AtomicBool,
    gate: &Gate,
    counted: &AtomicU64,
) -> Result<RxDone> {
    // Every frame of the trial is sent after this (receivers start before senders).
    let not_before_ns = sys::monotonic_ns();
    let setup = (|| {
        let ifindex = spec.enter(1 + thread)?;
        let ring = spec.open_rx(ifindex, &ring_cfg)?;
        let group = match fanout {
            Fanout::None => None,
            Fanout::Create(prog) => Some(
                ring.socket()
                    .create_cbpf_fanout(&prog)
                    .map_err(|e| Error::io("PACKET_FANOUT (cBPF) group", e))?,
            ),
            Fanout::Join(id, flags) => {
                ring.socket()
                    .join_cbpf_fanout(id, flags)
                    .map_err(|e| Error::io("joining the PACKET_FANOUT group", e))?;
                None
            }
        };
        let mac = ring
            .socket()
            .hw_addr()
            .map_err(|e| Error::io("interface MAC", e))?;
        Ok((ring, mac, group))
    })();
    let (mut ring, mac) = match setup {
        Ok((ring, mac, group)) => {
            let _ = ready.send(Ok(group));
            (ring, mac)
        }
        Err(e) => {
            let _ = ready.send(Err(Error::Thread(format!(
                "port {} receiver: {e}",
                spec.name
            ))));
            return Err(e);
        }
    };
    let me = Identity {
        mac,
        ipv4: spec.ipv4,
        ipv6: spec.ipv6,
    };
    let mut receiver = Receiver::with_expect(&expected, not_before_ns);
    let mut answered = 0u64;
    let mut ring_drops = 0u64;
    let mut frames = 0u64;
    let _ = ring.socket().take_stats(); // start the drop counter from zero

    // Receive stamps are CLOCK_REALTIME; the clock follows steps of it (module `rx_clock`).
    let mut clock = RxClock::start();
    while !stop.load(Ordering::Relaxed) {
        clock.resample_now();
        frames +=
            ring.drain(5, |sock, pkt| {
                let rx_ns = clock.receive_time(&pkt);
                if receiver.on_frame_len(pkt.data, pkt.len_on_wire(), rx_ns)
                    == crate::rx::Class::Foreign
                {
                    if let Some(reply) = resolve::answer(pkt.data, &me) {
                        if sock.send_frame(&reply).unwrap_or(false) {
                            answered += 1;
                        }
                    }
                }
            })
            .map_err(|e| Error::io(format!("port {} RX ring", spec.name), e))? as u64;
        counted.store(receiver.received_total(), Ordering::Release);
    }
    // Whatever is still in the ring arrived within the drain time: count it.
    frames += ring
        .drain(0, |_, pkt| {
            let rx_ns = clock.receive_time(&pkt);
            receiver.on_frame_len(pkt.data, pkt.len_on_wire(), rx_ns);
        })
        .map_err(|e| Error::io(format!("port {} RX ring", spec.name), e))? as u64;
    gate.arrive_and_wait();
    if let Ok((_, drops)) = ring.socket().take_stats() {
        ring_drops += drops;
    }
    Ok(RxDone {
        port,
        thread,
        receiver,
        answered,
        ring_drops,
        frames,
        clock_steps: clock.steps(),
        largest_clock_step_ns: clock.largest_step_ns(),
    })
}

/// Whether the outermost network header of `frame` is IPv6 (its next hop is then resolved by
/// ND rather than ARP): an IPv6 test packet, or any packet in a DS-Lite tunnel.
fn outer_is_ipv6(frame: &[u8]) -> bool {
    wire::dissect::dissect(frame).is_ok_and(|d| d.tunnel.is_some() || d.dst.is_ipv6())
}

/// A sending thread's generators, with the next hops' MAC addresses resolved into them.
type Gens<'a> = Vec<(FrameGen, &'a StreamConfig)>;

/// Enters `spec`'s namespace (CPU of `thread`) and builds the generators of `streams`,
/// resolving their next hops by ARP/ND (answered meanwhile by the port's receive thread).
/// Shared by both backends' senders. Returns the interface index and the generators.
pub(crate) fn prepare_tx<'a>(
    spec: &PortSpec,
    thread: usize,
    streams: &[&'a StreamConfig],
    resolve_timeout: Duration,
) -> Result<(u32, Gens<'a>)> {
    let ifindex = spec.enter(thread)?;
    let ctl = spec.open_socket(ifindex)?;
    let mac = ctl.hw_addr().map_err(|e| Error::io("interface MAC", e))?;
    let me = Identity {
        mac,
        ipv4: spec.ipv4,
        ipv6: spec.ipv6,
    };
    let mtu = ctl
        .mtu(&spec.ifname)
        .map_err(|e| Error::io(format!("MTU of {}", spec.ifname), e))?;
    let mut gens = Vec::new();
    let mut resolved: Vec<(IpAddr, [u8; 6])> = Vec::new();
    for cfg in streams {
        let mut gen = FrameGen::new(cfg)?;
        refuse_oversize(spec, mtu, cfg.id, &gen)?;
        if cfg.rewrite_macs {
            let hop: IpAddr = match outer_is_ipv6(cfg.frames[0].bytes()) {
                false => spec.next_hop_v4.map(IpAddr::V4),
                true => spec.next_hop_v6.map(IpAddr::V6),
            }
            .ok_or_else(|| {
                Error::Config(format!(
                    "port {}: stream {} needs a next hop to resolve (or fixed MACs)",
                    spec.name, cfg.id
                ))
            })?;
            let dst = match resolved.iter().find(|(ip, _)| *ip == hop) {
                Some((_, m)) => *m,
                None => {
                    let m = resolve::resolve(&ctl, &me, hop, resolve_timeout)?;
                    resolved.push((hop, m));
                    m
                }
            };
            gen.set_macs(dst, mac);
        }
        gens.push((gen, *cfg));
    }
    Ok((ifindex, gens))
}

/// The largest frame (without FCS) a port of MTU `mtu` carries: the MTU plus the 14-byte
/// Ethernet header, and 4 bytes more for a frame with an 802.1Q/802.1ad tag (the allowance
/// the kernel makes for packet sockets and veth alike).
pub fn max_frame_on(mtu: u32, frame: &[u8]) -> usize {
    let tagged =
        frame.len() >= 14 && matches!(u16::from_be_bytes([frame[12], frame[13]]), 0x8100 | 0x88a8);
    mtu as usize + 14 + if tagged { 4 } else { 0 }
}

/// Refuses, before anything is sent, a stream whose largest frame the port cannot carry. The
/// kernel would refuse such frames one by one (`EMSGSIZE`, a ring slot marked wrong-format, or
/// a veth peer dropping them), which looked like a hang or like frames lost by the DUT.
fn refuse_oversize(spec: &PortSpec, mtu: u32, stream: u16, gen: &FrameGen) -> Result<()> {
    for frame in gen.base_frames() {
        let limit = max_frame_on(mtu, frame);
        if frame.len() > limit {
            return Err(Error::Config(format!(
                "stream {stream}: a {} B frame (with FCS) does not fit port {} ({}): its MTU {mtu} carries frames of at most {} B with FCS; send smaller frames or raise the interface's MTU",
                frame.len() + 4,
                spec.name,
                spec.ifname,
                limit + 4
            )));
        }
    }
    Ok(())
}

/// How long a receiving port waits for its next hop to answer its announcement.
const ANNOUNCE_TIMEOUT: Duration = Duration::from_secs(1);

/// Makes the DUT learn the receiving ports' addresses before the first test frame: each port
/// that receives a routed stream (one whose MACs the engine resolves) asks its own next hop
/// for that stream's IP version. A router answering an ARP request or a neighbour solicitation
/// also records the asker (RFC 826's merge step, RFC 4861 §7.2.3), so it forwards the first
/// test frames at once instead of queueing them behind its own resolution of our address,
/// which lost the first frames of trials on a loaded machine (the learning RFC 2544 §11 asks
/// of a tester). Best effort: a next hop that does not answer within [`ANNOUNCE_TIMEOUT`] is
/// named in `note` and the trial goes on.
fn announce_receivers(cfg: &TrialConfig, note: &mut String) {
    let mut hops: Vec<(usize, IpAddr)> = Vec::new();
    for s in cfg.streams.iter().filter(|s| s.config.rewrite_macs) {
        let spec = &cfg.ports[s.rx_port];
        let hop = match outer_is_ipv6(s.config.frames[0].bytes()) {
            false => spec.ipv4.and(spec.next_hop_v4.map(IpAddr::V4)),
            true => spec.ipv6.and(spec.next_hop_v6.map(IpAddr::V6)),
        };
        if let Some(hop) = hop.filter(|h| !hops.contains(&(s.rx_port, *h))) {
            hops.push((s.rx_port, hop));
        }
    }
    let failures: Vec<String> = std::thread::scope(|sc| {
        let handles: Vec<_> = hops
            .iter()
            .map(|&(p, hop)| {
                let spec = &cfg.ports[p];
                sc.spawn(move || -> Result<()> {
                    let ifindex = spec.enter(0)?;
                    let ctl = spec.open_socket(ifindex)?;
                    let me = Identity {
                        mac: ctl.hw_addr().map_err(|e| Error::io("interface MAC", e))?,
                        ipv4: spec.ipv4,
                        ipv6: spec.ipv6,
                    };
                    resolve::resolve(&ctl, &me, hop, ANNOUNCE_TIMEOUT).map(|_| ())
                })
            })
            .collect();
        hops.iter()
            .zip(handles)
            .filter_map(|(&(p, hop), h)| match h.join() {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(format!("port {} to {hop}: {e}", cfg.ports[p].name)),
                Err(_) => Some(format!("port {} to {hop}: panicked", cfg.ports[p].name)),
            })
            .collect()
    });
    if !failures.is_empty() {
        note.push_str(&format!(
            "; receiving ports not announced ({})",
            failures.join("; ")
        ));
    }
}

/// A port's opened sender, of either backend.
enum PortSender {
    AfPacket(tx::Sender),
    Xdp(Box<crate::xdp::tx::XdpSender>),
}

#[allow(clippy::too_many_arguments)]
fn tx_thread(
    spec: &PortSpec,
    thread: usize,
    streams: Vec<&StreamConfig>,
    (backend, ring_cfg): (Backend, TxRingConfig),
    resolve_timeout: Duration,
    ready: mpsc::Sender<Result<()>>,
    start_ns: &AtomicU64,
    stop: &AtomicBool,
) -> Result<TxPortReport> {
    let setup = (|| {
        let (ifindex, gens) = prepare_tx(spec, thread, &streams, resolve_timeout)?;
        let sender = match backend {
            Backend::Xdp => PortSender::Xdp(Box::new(crate::xdp::tx::open(spec, ifindex, &gens)?)),
            _ => {
                let max_len = gens.iter().map(|(g, _)| g.max_len()).max().unwrap_or(0);
                PortSender::AfPacket(tx::open(
                    spec,
                    ifindex,
                    &ring_cfg,
                    ring_cfg.backend,
                    max_len,
                )?)
            }
        };
        Ok((sender, gens))
    })();
    let (sender, gens) = match setup {
        Ok(x) => {
            let _ = ready.send(Ok(()));
            x
        }
        Err(e) => {
            let _ = ready.send(Err(Error::Thread(format!(
                "port {} sender: {e}",
                spec.name
            ))));
            return Err(e);
        }
    };
    // Wait for the common start instant (0 = not yet decided).
    let start = loop {
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Thread("trial aborted before start".into()));
        }
        let s = start_ns.load(Ordering::Acquire);
        if s != 0 {
            break s;
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    sys::sleep_until(start.saturating_sub(200_000));
    match sender {
        PortSender::AfPacket(mut ring) => tx::run(&mut ring, gens, start, stop),
        PortSender::Xdp(mut x) => crate::xdp::tx::run(&mut x, gens, start, stop),
    }
}

/// Blocks of the receive ring of a port whose test frames an XDP program counts and drops.
const CONTROL_RING_BLOCKS: usize = 4;

/// The ring of an XDP trial's control thread: `ring`'s blocks (so any frame that fits the
/// trial's ring fits), but at most [`CONTROL_RING_BLOCKS`] of them. That thread sees only
/// what the program passes on (ARP, ND, control planes), never a test frame, so a few MiB
/// hold far more than it can receive in a trial; the 64 MiB of the default ring took 30–110 ms
/// per port and trial to allocate (measured 2026-11-29 on the forward lab, load 5–8), more
/// than the rest of an XDP trial's setup.
fn control_ring(ring: RxRingConfig) -> RxRingConfig {
    RxRingConfig {
        blocks: ring.blocks.min(CONTROL_RING_BLOCKS),
        ..ring
    }
}

/// Splits `items` round-robin over at most `n` threads (never more threads than items, at
/// least one): item *i* goes to thread *i* mod the thread count.
fn split<T: Copy>(items: &[T], n: usize) -> Vec<Vec<T>> {
    let n = n.min(items.len()).max(1);
    (0..n)
        .map(|t| items.iter().skip(t).step_by(n).copied().collect())
        .collect()
}

/// Why `cfg` cannot run on the XDP backend, if it cannot: what [`crate::xdp::trial::check`]
/// refuses, or an explicit request for the AF_PACKET sendmmsg path.
fn unfit_for_xdp(cfg: &TrialConfig) -> Option<String> {
    if cfg.tx_ring.backend == tx::TxBackend::Sendmmsg {
        return Some("--tx-method sendmmsg is an AF_PACKET send path".into());
    }
    crate::xdp::trial::check(cfg).err().map(|e| e.to_string())
}

/// Runs one trial. `stop` aborts it early (Ctrl-C); counts so far are still reported.
///
/// [`Backend::Auto`] runs the XDP backend when the trial fits it ([`unfit_for_xdp`]); if XDP
/// fails before the first frame is sent (no XDP in the kernel or driver, a program the
/// verifier refuses, a veth peer that cannot take XDP frames), the trial runs on AF_PACKET
/// instead. Either way the note says which ran and why. A failure after the start is
/// reported, never retried: frames were sent.
pub fn run(cfg: &TrialConfig, stop: &AtomicBool) -> Result<TrialReport> {
    match cfg.backend {
        Backend::AfPacket => run_on(cfg, stop, Backend::AfPacket, "af_packet".into(), None),
        Backend::Xdp => run_on(cfg, stop, Backend::Xdp, "xdp".into(), None),
        Backend::Auto => {
            if let Some(why) = unfit_for_xdp(cfg) {
                let note = format!("auto: af_packet, as XDP cannot run this trial ({why})");
                return run_on(cfg, stop, Backend::AfPacket, note, None);
            }
            let started = AtomicBool::new(false);
            let note = "auto: xdp (the trial fits it and the kernel ran it)".to_string();
            match run_on(cfg, stop, Backend::Xdp, note, Some(&started)) {
                Err(e) if !started.load(Ordering::Acquire) && !stop.load(Ordering::Relaxed) => {
                    let note = format!("auto: af_packet, as XDP failed before sending ({e})");
                    run_on(cfg, stop, Backend::AfPacket, note, None)
                }
                other => other,
            }
        }
    }
}

/// Runs one trial on `backend` (never `Auto`), with `note` to start the backend note. Sets
/// `started` once the senders were given their start instant.
fn run_on(
    cfg: &TrialConfig,
    stop: &AtomicBool,
    backend: Backend,
    mut note: String,
    started: Option<&AtomicBool>,
) -> Result<TrialReport> {
    for (what, n) in [("TX", cfg.tx_threads), ("RX", cfg.rx_threads)] {
        if !(1..=MAX_THREADS).contains(&n) {
            return Err(Error::Config(format!(
                "{what} threads per port: give 1 to {MAX_THREADS}, not {n}"
            )));
        }
    }
    if cfg.streams.is_empty() {
        return Err(Error::Config("a trial needs at least one stream".into()));
    }
    let mut ids = std::collections::HashSet::new();
    for s in &cfg.streams {
        if s.tx_port >= cfg.ports.len() || s.rx_port >= cfg.ports.len() {
            return Err(Error::Config(format!(
                "stream {}: no such port",
                s.config.id
            )));
        }
        s.config.check()?;
        if !ids.insert(s.config.id) {
            return Err(Error::Config(format!(
                "stream id {} used twice",
                s.config.id
            )));
        }
    }
    announce_receivers(cfg, &mut note);
    // What the senders pace: streams of one port share its link (TrialConfig::paced_streams).
    let paced = cfg.paced_streams();
    // XDP: the programs count the streams (attached before anything is sent); each port keeps
    // one AF_PACKET receive thread expecting no stream, which answers ARP/ND.
    let xdp_rx = match backend {
        Backend::Xdp => Some(crate::xdp::trial::attach_receivers(cfg, &mut note)?),
        _ => None,
    };
    // Receive threads per port: the streams each one counts, and the steering program.
    let mut rx_plan = Vec::new();
    for p in 0..cfg.ports.len() {
        let expected: Vec<&StreamConfig> = cfg
            .streams
            .iter()
            .filter(|s| s.rx_port == p && xdp_rx.is_none())
            .map(|s| &s.config)
            .collect();
        let groups = split(&expected, cfg.rx_threads);
        let prog = if groups.len() > 1 {
            let pairs: Vec<(&StreamConfig, u32)> = groups
                .iter()
                .enumerate()
                .flat_map(|(t, g)| g.iter().map(move |c| (*c, t as u32)))
                .collect();
            Some(steering::program(&pairs)?)
        } else {
            None
        };
        let ids: Vec<Vec<(u16, crate::validate::Expect)>> = groups
            .iter()
            .map(|g| g.iter().map(|c| (c.id, cfg.expect_of(c))).collect())
            .collect();
        rx_plan.push((ids, prog));
    }
    let gates: Vec<Gate> = rx_plan
        .iter()
        .map(|(ids, _)| Gate {
            left: AtomicUsize::new(ids.len()),
        })
        .collect();
    // What each receive thread has counted so far, in spawn order (port by port).
    let counted: Vec<AtomicU64> = rx_plan
        .iter()
        .flat_map(|(ids, _)| ids.iter().map(|_| AtomicU64::new(0)))
        .collect();
    let rx_stop = AtomicBool::new(false);
    let tx_stop = AtomicBool::new(false);
    let start_ns = AtomicU64::new(0);
    let (rx_done, tx_done) = std::thread::scope(|sc| -> Result<Outcomes> {
        let abort = |e: Error| {
            rx_stop.store(true, Ordering::Relaxed);
            tx_stop.store(true, Ordering::Relaxed);
            e
        };
        // Receivers first, on every port (they also answer ARP/ND). The first receive thread
        // of a port creates its fanout group; the others join it once it exists.
        let mut rx_handles = Vec::new();
        for (p, spec) in cfg.ports.iter().enumerate() {
            let (ids, prog) = &rx_plan[p];
            let mut group = None;
            for (t, expected) in ids.iter().enumerate() {
                let fanout = match (t, prog, group) {
                    (_, None, _) => Fanout::None,
                    (0, Some(prog), _) => Fanout::Create(prog.clone()),
                    (_, Some(_), Some((id, flags))) => Fanout::Join(id, flags),
                    (_, Some(_), None) => {
                        return Err(abort(Error::Thread("no fanout group to join".into())))
                    }
                };
                let (ready, ready_rx) = mpsc::channel();
                let ring = match xdp_rx {
                    Some(_) => control_ring(cfg.rx_ring),
                    None => cfg.rx_ring,
                };
                let (rx_stop, gate) = (&rx_stop, &gates[p]);
                let counted = &counted[rx_handles.len()];
                let expected = expected.clone();
                rx_handles.push(sc.spawn(move || {
                    rx_thread(
                        spec,
                        (p, t),
                        expected,
                        ring,
                        fanout,
                        ready,
                        rx_stop,
                        gate,
                        counted,
                    )
                }));
                match ready_rx.recv_timeout(Duration::from_secs(10)) {
                    Ok(Ok(g)) => group = group.or(g),
                    Ok(Err(e)) => return Err(abort(e)),
                    Err(_) => return Err(abort(Error::Timeout("a receiver did not start".into()))),
                }
            }
        }
        // Senders: resolve, open rings, report ready.
        let (ttx, trx) = mpsc::channel();
        let mut tx_handles = Vec::new();
        for (p, spec) in cfg.ports.iter().enumerate() {
            let streams: Vec<&StreamConfig> = cfg
                .streams
                .iter()
                .zip(&paced)
                .filter(|(s, _)| s.tx_port == p)
                .map(|(_, c)| c)
                .collect();
            if streams.is_empty() {
                continue;
            }
            for (t, streams) in split(&streams, cfg.tx_threads).into_iter().enumerate() {
                let ready = ttx.clone();
                let (start_ns, tx_stop) = (&start_ns, &tx_stop);
                let (ring, timeout) = ((backend, cfg.tx_ring), cfg.resolve_timeout);
                tx_handles.push((
                    p,
                    sc.spawn(move || {
                        tx_thread(spec, t, streams, ring, timeout, ready, start_ns, tx_stop)
                    }),
                ));
            }
        }
        drop(ttx);
        for _ in 0..tx_handles.len() {
            match trx.recv_timeout(cfg.resolve_timeout + Duration::from_secs(10)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(abort(e)),
                Err(_) => return Err(abort(Error::Timeout("a sender did not get ready".into()))),
            }
        }
        start_ns.store(
            sys::monotonic_ns() + cfg.start_delay.as_nanos() as u64,
            Ordering::Release,
        );
        if let Some(started) = started {
            started.store(true, Ordering::Release);
        }
        // Forward an external stop to the senders while they run.
        let mut tx_done = Vec::new();
        let mut first_err = None;
        for (p, h) in tx_handles {
            while !h.is_finished() {
                if stop.load(Ordering::Relaxed) {
                    tx_stop.store(true, Ordering::Relaxed);
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            match h.join() {
                Ok(Ok(r)) => tx_done.push((p, r)),
                Ok(Err(e)) => first_err = first_err.or(Some(e)),
                Err(_) => first_err = first_err.or(Some(Error::Thread("a sender panicked".into()))),
            }
        }
        // Drain, then stop the receivers.
        if first_err.is_none() && !stop.load(Ordering::Relaxed) {
            let sent = sent_total(cfg, &tx_done);
            match &xdp_rx {
                None => drain(cfg.drain, sent, || {
                    counted.iter().map(|c| c.load(Ordering::Acquire)).sum()
                }),
                // The XDP programs count the streams (these threads count none of them).
                Some(receivers) => drain(cfg.drain, sent, || {
                    crate::xdp::trial::received_total(receivers)
                }),
            }
        }
        rx_stop.store(true, Ordering::Relaxed);
        let mut rx_done = Vec::new();
        for h in rx_handles {
            match h.join() {
                Ok(Ok(r)) => rx_done.push(r),
                Ok(Err(e)) => first_err = first_err.or(Some(e)),
                Err(_) => {
                    first_err = first_err.or(Some(Error::Thread("a receiver panicked".into())))
                }
            }
        }
        match first_err {
            Some(e) => Err(e),
            None => Ok((rx_done, tx_done)),
        }
    })?;
    let (rx, ipdv, rx_ports) = match &xdp_rx {
        Some(receivers) => crate::xdp::trial::rx_side(cfg, receivers, &rx_done, &tx_done)?,
        None => {
            let (rx, ports) = af_packet_rx_side(cfg, &rx_done, &tx_done);
            (rx, af_packet_ipdv(cfg, &rx_done), ports)
        }
    };
    Ok(assemble(cfg, (backend, note), rx, ipdv, rx_ports, tx_done))
}

/// Frames sent over all streams of the trial, or `None` when a stream has no sender's report.
fn sent_total(cfg: &TrialConfig, tx_done: &[(usize, TxPortReport)]) -> Option<u64> {
    cfg.streams
        .iter()
        .map(|s| tx_of(tx_done, s).map(|t| t.sent))
        .sum()
}

/// The receivers' drain after the last frame was sent: `longest` (the trial's
/// [`TrialConfig::drain`]), ended early once `counted()` (the frames the receivers counted as
/// received, duplicates and invalid frames not included) reaches `sent` (every frame sent, when
/// known). A frame counted is final, and a trial cannot count more than it sent, so the wait
/// that remains would only wait for nothing: a lossless trial ends as soon as its last frame
/// arrived, while a trial that lost frames still waits the whole drain for late ones (RFC 2544
/// §26.1: a frame later than the drain is lost). Polled every millisecond: the receive
/// threads' counts on AF_PACKET, the programs' maps on XDP.
fn drain(longest: Duration, sent: Option<u64>, counted: impl Fn() -> u64) {
    let Some(sent) = sent else {
        std::thread::sleep(longest);
        return;
    };
    let end = std::time::Instant::now() + longest;
    loop {
        if counted() >= sent {
            return;
        }
        let now = std::time::Instant::now();
        if now >= end {
            return;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(1)));
    }
}

/// The AF_PACKET receivers' reports: one per trial stream (in order), and one per port.
fn af_packet_rx_side(
    cfg: &TrialConfig,
    rx_done: &[RxDone],
    tx_done: &[(usize, TxPortReport)],
) -> (Vec<StreamRxReport>, Vec<PortRxSummary>) {
    let mut rx = Vec::new();
    for s in &cfg.streams {
        let sent = tx_of(tx_done, s).map(|t| t.sent);
        // Exactly one receive thread of the port expects the stream.
        rx.push(
            rx_done
                .iter()
                .filter(|r| r.port == s.rx_port)
                .find_map(|r| r.receiver.report(s.config.id, sent))
                .expect("every stream has a receiver"),
        );
    }
    (rx, control_ports(cfg, rx_done))
}

/// Per stream, the AF_PACKET receiver's inter-packet delay variation.
fn af_packet_ipdv(cfg: &TrialConfig, rx_done: &[RxDone]) -> Vec<Option<IpdvReport>> {
    cfg.streams
        .iter()
        .map(|s| {
            rx_done
                .iter()
                .filter(|r| r.port == s.rx_port)
                .find_map(|r| r.receiver.stream(s.config.id))
                .and_then(|st| st.ipdv())
        })
        .collect()
}

/// One port's sender report from its threads' reports: streams together, counters summed,
/// the mean batch weighted by flushes.
fn merge_tx(parts: Vec<TxPortReport>) -> TxPortReport {
    let mut m = TxPortReport {
        streams: Vec::new(),
        flushes: 0,
        max_batch: 0,
        mean_batch: 0.0,
        backpressure_flushes: 0,
        abandoned: 0,
        wrong_format: 0,
        prog_ns_per_frame: None,
    };
    let mut accepted = 0.0;
    for r in parts {
        m.streams.extend(r.streams);
        m.flushes += r.flushes;
        m.max_batch = m.max_batch.max(r.max_batch);
        accepted += r.mean_batch * r.flushes as f64;
        m.backpressure_flushes += r.backpressure_flushes;
        m.abandoned += r.abandoned;
        m.wrong_format += r.wrong_format;
    }
    if m.flushes > 0 {
        m.mean_batch = accepted / m.flushes as f64;
    }
    m
}

/// The report of either backend: `rx` has one receive report per trial stream (in order).
fn assemble(
    cfg: &TrialConfig,
    (backend, backend_note): (Backend, String),
    rx: Vec<StreamRxReport>,
    ipdv: Vec<Option<IpdvReport>>,
    rx_ports: Vec<PortRxSummary>,
    tx_done: Vec<(usize, TxPortReport)>,
) -> TrialReport {
    let mut streams = Vec::new();
    for ((s, rx), ipdv) in cfg.streams.iter().zip(rx).zip(ipdv) {
        let tx = tx_of(&tx_done, s)
            .cloned()
            .expect("every stream has a sender report");
        // Rates over the sending interval, one frame period included.
        let rate = if tx.intended_pps.0 > 0.0 {
            tx.intended_pps.0
        } else {
            tx.achieved_pps.0
        };
        let span = if tx.sent > 0 && rate > 0.0 {
            (tx.last_tx_ns - tx.first_tx_ns) as f64 * 1e-9 + 1.0 / rate
        } else {
            0.0
        };
        let (rx_pps, l2, l1) = if span > 0.0 {
            let pps = rx.received as f64 / span;
            let l2 = (rx.bytes + 4 * rx.received) as f64 * 8.0 / span;
            (pps, l2, l2 + rx.received as f64 * 20.0 * 8.0 / span)
        } else {
            (0.0, 0.0, 0.0)
        };
        streams.push(StreamResult {
            stream_id: s.config.id,
            tx_port: cfg.ports[s.tx_port].name.clone(),
            rx_port: cfg.ports[s.rx_port].name.clone(),
            tx,
            rx,
            ipdv,
            rx_pps: Pps(rx_pps),
            rx_l2_bps: BitsPerSec(l2),
            rx_l1_bps: BitsPerSec(l1),
        });
    }
    let sum = |label: String, it: &mut dyn Iterator<Item = &StreamResult>| {
        let mut t = Totals {
            label,
            ..Default::default()
        };
        for r in it {
            t.streams += 1;
            t.intended_pps += r.tx.intended_pps;
            t.offered_pps += r.tx.achieved_pps;
            t.sent += r.tx.sent;
            t.received += r.rx.received;
            t.lost += r.rx.lost.unwrap_or(0);
            t.duplicates += r.rx.duplicates;
            t.out_of_order += r.rx.out_of_order;
            t.invalid += r.rx.invalid.total();
            t.rx_pps += r.rx_pps;
            t.rx_l2_bps += r.rx_l2_bps;
            t.rx_l1_bps += r.rx_l1_bps;
        }
        t
    };
    let mut pairs: Vec<(String, String)> = Vec::new();
    for r in &streams {
        let k = (r.tx_port.clone(), r.rx_port.clone());
        if !pairs.contains(&k) {
            pairs.push(k);
        }
    }
    let directions = pairs
        .iter()
        .map(|(a, b)| {
            sum(
                format!("{a}->{b}"),
                &mut streams
                    .iter()
                    .filter(|r| &r.tx_port == a && &r.rx_port == b),
            )
        })
        .collect();
    let total = sum("total".into(), &mut streams.iter());
    let mut tx_ports: Vec<(String, TxPortReport)> = Vec::new();
    let mut by_port: Vec<(usize, Vec<TxPortReport>)> = Vec::new();
    for (p, r) in tx_done {
        match by_port.iter_mut().find(|(q, _)| *q == p) {
            Some((_, v)) => v.push(r),
            None => by_port.push((p, vec![r])),
        }
    }
    for (p, parts) in by_port {
        tx_ports.push((cfg.ports[p].name.clone(), merge_tx(parts)));
    }
    TrialReport {
        streams,
        directions,
        total,
        rx_ports,
        tx_ports,
        drain_ms: cfg.drain.as_millis() as u64,
        backend,
        backend_note,
        tx_threads: cfg.tx_threads,
        rx_threads: cfg.rx_threads,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An XDP trial's control ring keeps the trial ring's block size (any frame that fits
    /// one fits the other) with at most four blocks; a smaller ring stays as it is.
    #[test]
    fn control_rings_are_small_but_take_the_same_frames() {
        let c = control_ring(RxRingConfig::default());
        assert_eq!(c.block_size, RxRingConfig::default().block_size);
        assert_eq!(c.retire_ms, RxRingConfig::default().retire_ms);
        assert_eq!(c.blocks, CONTROL_RING_BLOCKS);
        let small = RxRingConfig {
            blocks: 2,
            ..RxRingConfig::default()
        };
        assert_eq!(control_ring(small), small);
    }

    #[test]
    fn the_drain_ends_when_every_frame_sent_was_counted_and_not_before() {
        use std::sync::atomic::AtomicU64;
        let long = Duration::from_secs(5);
        // Every frame counted at once: no wait at all.
        let t0 = std::time::Instant::now();
        drain(long, Some(100), || 100);
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        // The count grows to what was sent: the drain ends with the last frame.
        let n = AtomicU64::new(0);
        let t0 = std::time::Instant::now();
        drain(long, Some(20), || n.fetch_add(1, Ordering::Relaxed) + 1);
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        assert_eq!(n.load(Ordering::Relaxed), 20);
        // A frame lost: the whole drain, for a late one.
        let short = Duration::from_millis(60);
        let t0 = std::time::Instant::now();
        drain(short, Some(100), || 99);
        assert!(t0.elapsed() >= short);
        // What was sent unknown (a stream without a sender's report): the whole drain.
        let t0 = std::time::Instant::now();
        drain(short, None, || 100);
        assert!(t0.elapsed() >= short);
    }

    #[test]
    fn streams_split_round_robin_without_idle_threads() {
        assert_eq!(split(&[1, 2, 3, 4, 5], 2), vec![vec![1, 3, 5], vec![2, 4]]);
        assert_eq!(split(&[1, 2], 4), vec![vec![1], vec![2]]);
        assert_eq!(split::<u8>(&[], 3), vec![Vec::<u8>::new()]);
    }

    #[test]
    fn thread_reports_merge_per_port() {
        let part = |flushes, mean, max| TxPortReport {
            streams: Vec::new(),
            flushes,
            max_batch: max,
            mean_batch: mean,
            backpressure_flushes: 1,
            abandoned: 2,
            wrong_format: 0,
            prog_ns_per_frame: None,
        };
        let m = merge_tx(vec![part(10, 4.0, 8), part(30, 2.0, 5)]);
        assert_eq!((m.flushes, m.max_batch), (40, 8));
        assert!((m.mean_batch - 2.5).abs() < 1e-12);
        assert_eq!((m.backpressure_flushes, m.abandoned), (2, 4));
    }

    #[test]
    fn backends_parse_and_resolve() {
        assert_eq!("auto".parse::<Backend>(), Ok(Backend::Auto));
        assert_eq!("af_packet".parse::<Backend>(), Ok(Backend::AfPacket));
        assert_eq!("af-packet".parse::<Backend>(), Ok(Backend::AfPacket));
        assert_eq!("xdp".parse::<Backend>(), Ok(Backend::Xdp));
        assert!("dpdk".parse::<Backend>().is_err());
        assert_eq!(
            TrialConfig::new(Vec::new(), Vec::new()).backend,
            Backend::AfPacket
        );
        // A trial without streams is refused before touching any port, on either backend.
        let mut cfg = TrialConfig::new(vec![PortSpec::new("a", "nonexistent0")], Vec::new());
        cfg.backend = Backend::Xdp;
        assert!(matches!(
            run(&cfg, &AtomicBool::new(false)),
            Err(Error::Config(_))
        ));
        cfg.backend = Backend::AfPacket;
        cfg.rx_threads = 0;
        assert!(
            matches!(run(&cfg, &AtomicBool::new(false)), Err(Error::Config(m)) if m.contains("RX threads"))
        );
    }
}
