//! One trial: a set of streams between ports, run once.
//!
//! Order of events: every port's receive thread starts first (and answers ARP/ND for the
//! port's addresses from then on); then each sending port's thread resolves its next hops,
//! opens its TX ring and reports ready; all senders start on one common schedule instant; after
//! the last sender finishes, the receivers keep counting for the drain time; only then is loss
//! computed (`sent − received`, exact on both sides).
//!
//! Results per stream, per direction (ordered port pair) and in total (the sum, e.g. of both
//! directions of a bidirectional trial).

use crate::port::{PortSpec, RxRingConfig, TxRingConfig};
use crate::resolve::{self, Identity};
use crate::rx::{Receiver, StreamRxReport};
use crate::stream::{FrameGen, StreamConfig};
use crate::sys;
use crate::tx::{self, TxPortReport, TxStreamReport};
use crate::{Error, Result};
use serde::Serialize;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// A stream and the ports it runs between (indexes into [`TrialConfig::ports`]).
#[derive(Debug, Clone)]
pub struct TrialStream {
    pub config: StreamConfig,
    pub tx_port: usize,
    pub rx_port: usize,
}

#[derive(Debug, Clone)]
pub struct TrialConfig {
    pub ports: Vec<PortSpec>,
    pub streams: Vec<TrialStream>,
    /// How long receivers keep counting after the last frame was sent.
    pub drain: Duration,
    /// Delay between "all senders ready" and the common start instant.
    pub start_delay: Duration,
    pub tx_ring: TxRingConfig,
    pub rx_ring: RxRingConfig,
    /// How long to wait for the next hop to answer ARP/ND.
    pub resolve_timeout: Duration,
}

impl TrialConfig {
    pub fn new(ports: Vec<PortSpec>, streams: Vec<TrialStream>) -> Self {
        TrialConfig {
            ports,
            streams,
            drain: Duration::from_millis(500),
            start_delay: Duration::from_millis(20),
            tx_ring: TxRingConfig::default(),
            rx_ring: RxRingConfig::default(),
            resolve_timeout: Duration::from_secs(3),
        }
    }
}

/// One stream's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamResult {
    pub stream_id: u16,
    pub tx_port: String,
    pub rx_port: String,
    pub tx: TxStreamReport,
    pub rx: StreamRxReport,
    /// Received frames/s over the sending interval (`received / (last_tx − first_tx + 1/rate)`).
    pub rx_pps: f64,
    /// Received L2 bit/s (with FCS) over the same interval.
    pub rx_l2_bps: f64,
    /// Received L1 bit/s (with FCS, preamble, SFD and inter-frame gap).
    pub rx_l1_bps: f64,
}

/// Sums over a set of streams (one direction, or everything).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    pub label: String,
    pub streams: usize,
    pub intended_pps: f64,
    pub offered_pps: f64,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub duplicates: u64,
    pub out_of_order: u64,
    pub rx_pps: f64,
    pub rx_l2_bps: f64,
    pub rx_l1_bps: f64,
}

/// What one port's receiver saw besides our streams.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortRxSummary {
    pub port: String,
    /// Frames that are not test frames (ARP, ICMP, anything else).
    pub foreign: u64,
    /// Test frames of streams this port was not expecting.
    pub unexpected_streams: u64,
    /// ARP/ND requests for our addresses that we answered.
    pub answered: u64,
    /// Frames the kernel dropped because the RX ring was full: if not 0, counts are not exact.
    pub ring_drops: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialReport {
    pub streams: Vec<StreamResult>,
    pub directions: Vec<Totals>,
    pub total: Totals,
    pub rx_ports: Vec<PortRxSummary>,
    pub tx_ports: Vec<(String, TxPortReport)>,
    pub drain_ms: u64,
}

/// What the receivers and the senders handed back.
type Outcomes = (Vec<RxDone>, Vec<(usize, TxPortReport)>);

struct RxDone {
    port: usize,
    receiver: Receiver,
    answered: u64,
    ring_drops: u64,
}

fn rx_thread(
    spec: &PortSpec,
    port: usize,
    expected: Vec<u16>,
    ring_cfg: RxRingConfig,
    ready: mpsc::Sender<Result<()>>,
    stop: &AtomicBool,
) -> Result<RxDone> {
    let setup = (|| {
        let ifindex = spec.enter(1)?;
        let ring = spec.open_rx(ifindex, &ring_cfg)?;
        let mac = ring
            .socket()
            .hw_addr()
            .map_err(|e| Error::io("interface MAC", e))?;
        Ok((ring, mac))
    })();
    let (mut ring, mac) = match setup {
        Ok(x) => {
            let _ = ready.send(Ok(()));
            x
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
    let mut receiver = Receiver::new(&expected);
    let mut answered = 0u64;
    let mut ring_drops = 0u64;
    let _ = ring.socket().take_stats(); // start the drop counter from zero
    let offset = sys::realtime_minus_monotonic_ns();
    while !stop.load(Ordering::Relaxed) {
        ring.drain(5, |sock, pkt| {
            let rx_ns = (pkt.ts_realtime_ns as i64 - offset).max(0) as u64;
            if receiver.on_frame(pkt.data, rx_ns) == crate::rx::Class::Foreign {
                if let Some(reply) = resolve::answer(pkt.data, &me) {
                    if sock.send_frame(&reply).unwrap_or(false) {
                        answered += 1;
                    }
                }
            }
        })
        .map_err(|e| Error::io(format!("port {} RX ring", spec.name), e))?;
    }
    // Whatever is still in the ring arrived within the drain time: count it.
    ring.drain(0, |_, pkt| {
        let rx_ns = (pkt.ts_realtime_ns as i64 - offset).max(0) as u64;
        receiver.on_frame(pkt.data, rx_ns);
    })
    .map_err(|e| Error::io(format!("port {} RX ring", spec.name), e))?;
    if let Ok((_, drops)) = ring.socket().take_stats() {
        ring_drops += drops;
    }
    Ok(RxDone {
        port,
        receiver,
        answered,
        ring_drops,
    })
}

/// Whether the outermost network header of `frame` is IPv6 (its next hop is then resolved by
/// ND rather than ARP): an IPv6 test packet, or any packet in a DS-Lite tunnel.
fn outer_is_ipv6(frame: &[u8]) -> bool {
    wire::dissect::dissect(frame).is_ok_and(|d| d.tunnel.is_some() || d.dst.is_ipv6())
}

#[allow(clippy::too_many_arguments)]
fn tx_thread(
    spec: &PortSpec,
    streams: Vec<&StreamConfig>,
    ring_cfg: TxRingConfig,
    resolve_timeout: Duration,
    ready: mpsc::Sender<Result<()>>,
    start_ns: &AtomicU64,
    stop: &AtomicBool,
) -> Result<TxPortReport> {
    let setup = (|| {
        let ifindex = spec.enter(0)?;
        let ctl = spec.open_socket(ifindex)?;
        let mac = ctl.hw_addr().map_err(|e| Error::io("interface MAC", e))?;
        let me = Identity {
            mac,
            ipv4: spec.ipv4,
            ipv6: spec.ipv6,
        };
        let mut gens = Vec::new();
        let mut resolved: Vec<(IpAddr, [u8; 6])> = Vec::new();
        for cfg in &streams {
            let mut gen = FrameGen::new(cfg)?;
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
        drop(ctl);
        let max_len = gens.iter().map(|(g, _)| g.max_len()).max().unwrap_or(0);
        let ring = tx::open(spec, ifindex, &ring_cfg, ring_cfg.backend, max_len)?;
        Ok((ring, gens))
    })();
    let (mut ring, gens) = match setup {
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
    tx::run(&mut ring, gens, start, stop)
}

/// Runs one trial. `stop` aborts it early (Ctrl-C); counts so far are still reported.
pub fn run(cfg: &TrialConfig, stop: &AtomicBool) -> Result<TrialReport> {
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
    let rx_stop = AtomicBool::new(false);
    let tx_stop = AtomicBool::new(false);
    let start_ns = AtomicU64::new(0);
    let (rx_done, tx_done) = std::thread::scope(|sc| -> Result<Outcomes> {
        let abort = |e: Error| {
            rx_stop.store(true, Ordering::Relaxed);
            tx_stop.store(true, Ordering::Relaxed);
            e
        };
        // Receivers first, on every port (they also answer ARP/ND).
        let (rtx, rrx) = mpsc::channel();
        let mut rx_handles = Vec::new();
        for (p, spec) in cfg.ports.iter().enumerate() {
            let expected: Vec<u16> = cfg
                .streams
                .iter()
                .filter(|s| s.rx_port == p)
                .map(|s| s.config.id)
                .collect();
            let ready = rtx.clone();
            let (rx_stop, ring) = (&rx_stop, cfg.rx_ring);
            rx_handles.push(sc.spawn(move || rx_thread(spec, p, expected, ring, ready, rx_stop)));
        }
        drop(rtx);
        for _ in 0..cfg.ports.len() {
            match rrx.recv_timeout(Duration::from_secs(10)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(abort(e)),
                Err(_) => return Err(abort(Error::Timeout("a receiver did not start".into()))),
            }
        }
        // Senders: resolve, open rings, report ready.
        let (ttx, trx) = mpsc::channel();
        let mut tx_handles = Vec::new();
        for (p, spec) in cfg.ports.iter().enumerate() {
            let streams: Vec<&StreamConfig> = cfg
                .streams
                .iter()
                .filter(|s| s.tx_port == p)
                .map(|s| &s.config)
                .collect();
            if streams.is_empty() {
                continue;
            }
            let ready = ttx.clone();
            let (start_ns, tx_stop) = (&start_ns, &tx_stop);
            let (ring, timeout) = (cfg.tx_ring, cfg.resolve_timeout);
            tx_handles.push((
                p,
                sc.spawn(move || tx_thread(spec, streams, ring, timeout, ready, start_ns, tx_stop)),
            ));
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
            std::thread::sleep(cfg.drain);
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
    Ok(assemble(cfg, rx_done, tx_done))
}

fn assemble(
    cfg: &TrialConfig,
    rx_done: Vec<RxDone>,
    tx_done: Vec<(usize, TxPortReport)>,
) -> TrialReport {
    let mut streams = Vec::new();
    for s in &cfg.streams {
        let tx = tx_done
            .iter()
            .filter(|(p, _)| *p == s.tx_port)
            .flat_map(|(_, r)| r.streams.iter())
            .find(|t| t.stream_id == s.config.id)
            .cloned()
            .expect("every stream has a sender report");
        let rx = rx_done
            .iter()
            .find(|r| r.port == s.rx_port)
            .and_then(|r| r.receiver.stream(s.config.id))
            .map(|st| st.report(s.config.id, Some(tx.sent)))
            .expect("every stream has a receiver");
        // Rates over the sending interval, one frame period included.
        let rate = if tx.intended_pps > 0.0 {
            tx.intended_pps
        } else {
            tx.achieved_pps
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
            rx_pps,
            rx_l2_bps: l2,
            rx_l1_bps: l1,
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
    let rx_ports = rx_done
        .iter()
        .map(|r| PortRxSummary {
            port: cfg.ports[r.port].name.clone(),
            foreign: r.receiver.foreign(),
            unexpected_streams: r.receiver.unexpected(),
            answered: r.answered,
            ring_drops: r.ring_drops,
        })
        .collect();
    let tx_ports = tx_done
        .into_iter()
        .map(|(p, r)| (cfg.ports[p].name.clone(), r))
        .collect();
    TrialReport {
        streams,
        directions,
        total,
        rx_ports,
        tx_ports,
        drain_ms: cfg.drain.as_millis() as u64,
    }
}
