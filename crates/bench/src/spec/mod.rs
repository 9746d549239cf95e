//! One specification of what a UDP trial sends ([`TrialSpec`]), one builder from it to the
//! engine's [`TrialConfig`] ([`TrialSpec::build`]) and one executor call ([`execute`]), for
//! both front doors: `wirerate trial` maps its flags and `--streams` file into a spec
//! ([`crate::streams::StreamDef::spec`]), a plan's case and a search's request map into one
//! ([`from_plan::udp_spec`]); `cli::cmd::trial` and [`crate::trial_streams::assemble`] (for
//! [`crate::testbed::Testbed::udp_trial`]) then build it, and both execute it with the same
//! call.
//!
//! The 100 % of a [`Load::LineFraction`] is computed here once per stream, by
//! [`wire::linerate::path_max_pps`] on the encapsulation of the stream's path; every load is
//! turned into frames per second here ([`Load::pps`]), so the engine only ever sees
//! [`Rate::Pps`].
//!
//! Ports stay [`PortSpec`]s (their addresses, next hops, CPUs): the spec says what is sent
//! between ports A (index 0) and B (index 1). A port that plays a PPPoE session or DS-Lite
//! softwire puts the frames it sends inside it through a [`Carrier`].

mod error;
pub mod from_plan;
pub mod load;
mod record;
#[cfg(test)]
mod tests;

use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use engine::port::PortSpec;
use engine::stream::{Flows, Limit, Rate, StreamConfig};
use engine::trial::{Backend, TrialConfig, TrialReport, TrialStream};
use engine::tx::TxBackend;
use wire::encap::{EncapSpec, IpVersion};
use wire::linerate::FrameSize;
use wire::template::FrameTemplate;
use wire::units::{BitsPerSec, Pps};

use crate::error::BenchError;
use crate::results::SentStream;

pub use error::{CarryError, SpecError};
pub use load::Load;
pub use record::{differences, sent_stream};

/// Which way a stream runs between ports A and B.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    AToB,
    BToA,
    /// One stream each way (RFC 2544 §14 bidirectional), A→B first.
    Both,
}

impl Direction {
    /// `a-b`, `b-a` or `both`.
    pub fn parse(text: &str) -> Result<Direction, BenchError> {
        match text {
            "a-b" => Ok(Direction::AToB),
            "b-a" => Ok(Direction::BToA),
            "both" => Ok(Direction::Both),
            o => Err(BenchError::Usage(format!(
                "direction '{o}': give a-b, b-a or both"
            ))),
        }
    }

    /// (sending port, receiving port) of each engine stream, in stream-id order.
    fn legs(self) -> &'static [(usize, usize)] {
        match self {
            Direction::AToB => &[(0, 1)],
            Direction::BToA => &[(1, 0)],
            Direction::Both => &[(0, 1), (1, 0)],
        }
    }
}

/// What one stream definition sends (one engine stream per direction of [`Self::direction`]).
#[derive(Debug, Clone, PartialEq)]
pub struct StreamSpec {
    pub direction: Direction,
    /// The headers the frames carry as the tester sends them.
    pub encap: EncapSpec,
    /// The encapsulation of the path's far link when the DUT changes it (a plan's `encap`:
    /// plain frames in, VLAN or PPPoE out); the 100 % counts it. `None`: as sent.
    pub far_encap: Option<EncapSpec>,
    /// Reference frame size with FCS (the plain frame of the same packet), or IMIX.
    pub size: FrameSize,
    pub load: Load,
    pub limit: Limit,
    /// Frames per burst (1 = evenly spaced) and the idle time after each burst.
    pub burst: u32,
    pub burst_gap: Option<Duration>,
    pub flows: Flows,
    /// IPv4 ToS / IPv6 traffic class byte.
    pub tos: u8,
    /// Swap every K-th pair of sequence numbers (K ≥ 2).
    pub reorder_every: Option<u64>,
    /// The engine stream id of this definition's first stream; `None`: the next in order
    /// (numbered from 1). A plan's reverse probe sends the reverse stream alone, and keeps the
    /// id 2 it has in a bidirectional trial (in its frames' signature and its record).
    pub first_id: Option<u16>,
}

impl StreamSpec {
    /// One plain-settings stream from A to B: no bursts, one flow, ToS 0, no reordering.
    pub fn new(encap: EncapSpec, size: FrameSize, load: Load, limit: Limit) -> StreamSpec {
        StreamSpec {
            direction: Direction::AToB,
            encap,
            far_encap: None,
            size,
            load,
            limit,
            burst: 1,
            burst_gap: None,
            flows: Flows::default(),
            tos: 0,
            reorder_every: None,
            first_id: None,
        }
    }

    /// 100 % of this stream's load: the path-aware line rate of its size at `speed`.
    pub fn max_pps(&self, speed: BitsPerSec) -> Pps {
        wire::linerate::path_max_pps(speed, self.far_encap.unwrap_or(self.encap), &self.size)
    }

    /// The settings no trial can run, with the texts both front doors show.
    fn check(&self) -> Result<(), SpecError> {
        if let Some(k) = self.reorder_every {
            if k < 2 {
                return Err(SpecError::ReorderEvery { every: k });
            }
        }
        for (what, n) in [
            ("burst", self.burst),
            ("src-ips", self.flows.src_ip_count),
            ("dst-ips", self.flows.dst_ip_count),
            ("src-ports", u32::from(self.flows.src_port_count)),
            ("dst-ports", u32::from(self.flows.dst_port_count)),
        ] {
            if n == 0 {
                return Err(SpecError::ZeroCount { what });
            }
        }
        Ok(())
    }
}

/// What one UDP trial sends and how the engine runs it.
#[derive(Debug, Clone, PartialEq)]
pub struct TrialSpec {
    pub streams: Vec<StreamSpec>,
    /// The reference link speed: what 100 % of a line-fraction load refers to.
    pub speed: BitsPerSec,
    /// Receivers keep counting this long after the last frame.
    pub drain: Duration,
    pub backend: Backend,
    /// How the AF_PACKET backend hands frames to the kernel.
    pub tx_method: TxBackend,
    /// Transmit and receive threads per port.
    pub tx_threads: usize,
    pub rx_threads: usize,
}

impl TrialSpec {
    /// `streams` at `speed` with the engine's defaults (AF_PACKET on its TX ring, one thread
    /// each way, 0.5 s drain).
    pub fn new(streams: Vec<StreamSpec>, speed: BitsPerSec) -> TrialSpec {
        let d = TrialConfig::new(Vec::new(), Vec::new());
        TrialSpec {
            streams,
            speed,
            drain: d.drain,
            backend: d.backend,
            tx_method: d.tx_ring.backend,
            tx_threads: d.tx_threads,
            rx_threads: d.rx_threads,
        }
    }
}

/// Puts the frames a port sends inside the PPPoE session, DS-Lite softwire, MAP-E BR or IPoE
/// lease it plays: `wirerate trial --inside` (`crate::inside::Inside`) and a plan's ports
/// (`crate::trial_streams::PortHeaders`, port B's reverse stream the reply to the forward one).
pub trait Carrier {
    /// Points `frame` — a stream sent by port `tx_port` (0 = A) — at the session or tunnel.
    fn carry(
        &self,
        frame: &mut wire::template::StreamSpec,
        tx_port: usize,
    ) -> Result<(), CarryError>;

    /// Whether the frames port `tx_port` sends keep the MACs the carrier gave them (a
    /// session's or tunnel's ends); `false`: the engine addresses them from the port's next
    /// hop. Every port's, unless the carrier says otherwise.
    fn sets_macs(&self, _tx_port: usize) -> bool {
        true
    }

    /// Whether port `tx_port` may send without an address of its own, the carrier giving its
    /// frames their source (an access concentrator's port is addressed by IPCP alone); the
    /// frames then keep the template's placeholder source where the carrier gives none.
    fn addresses_sender(&self, _tx_port: usize) -> bool {
        false
    }
}

/// A spec built for the engine: its configuration, and the 100 % of each of its streams (in
/// the order of `config.streams`), the unit of the offered loads a record keeps.
#[derive(Debug, Clone)]
pub struct Built {
    pub config: TrialConfig,
    pub max_pps: Vec<Pps>,
    /// What each stream sends, for the trial's record (`wirerate trial --json` prints it as
    /// `sent`; a plan's record keeps it as `engine.streams`), in the order of
    /// `config.streams`.
    pub sent: Vec<SentStream>,
}

fn addr(p: &PortSpec, v: IpVersion) -> Result<IpAddr, SpecError> {
    match v {
        IpVersion::V4 => p.ipv4.map(IpAddr::V4),
        IpVersion::V6 => p.ipv6.map(IpAddr::V6),
    }
    .ok_or_else(|| SpecError::NoAddress {
        port: p.name.clone(),
        ip: v,
    })
}

/// The test packet's header fields of a stream from `src` to `dst`: the ports' addresses (for
/// DS-Lite the inner packet from the B4's 192.0.0.2, in IPv6 between the ports' IPv6
/// addresses), then the carrier's session or tunnel.
fn frame_spec(
    s: &StreamSpec,
    id: u16,
    (src, dst): (&PortSpec, &PortSpec),
    tx: usize,
    carrier: Option<&dyn Carrier>,
) -> Result<wire::template::StreamSpec, SpecError> {
    let encap = s.encap;
    let mut spec = wire::template::StreamSpec::new(encap);
    spec.stream_id = id;
    if encap.dslite {
        spec.src_ip = IpAddr::V4(Ipv4Addr::new(192, 0, 0, 2));
        spec.dst_ip = addr(dst, IpVersion::V4).unwrap_or(IpAddr::V4(Ipv4Addr::new(203, 0, 113, 2)));
        if let (Some(s6), Some(d6)) = (src.ipv6, dst.ipv6) {
            spec.tunnel_src = s6;
            spec.tunnel_dst = d6;
        }
    } else {
        spec.src_ip = match addr(src, encap.ip) {
            Ok(ip) => ip,
            Err(_) if carrier.is_some_and(|c| c.addresses_sender(tx)) => spec.src_ip,
            Err(e) => return Err(e),
        };
        spec.dst_ip = addr(dst, encap.ip)?;
    }
    spec.tos = s.tos;
    spec.dst_port = 9;
    if let Some(c) = carrier {
        c.carry(&mut spec, tx)?;
    }
    Ok(spec)
}

impl TrialSpec {
    /// The engine's configuration of this spec between ports `a` (0) and `b` (1): streams
    /// numbered from 1 in order (a `both` definition gives A→B, then B→A; a definition's
    /// [`StreamSpec::first_id`] sets its own), each at its load in frames per second. Every
    /// error is the user's to fix.
    pub fn build(
        &self,
        a: &PortSpec,
        b: &PortSpec,
        carrier: Option<&dyn Carrier>,
    ) -> Result<Built, SpecError> {
        let mut streams = Vec::new();
        let mut max_pps = Vec::new();
        let mut sent = Vec::new();
        for s in &self.streams {
            s.check()?;
            let max = s.max_pps(self.speed);
            let first_id = s.first_id.unwrap_or(streams.len() as u16 + 1);
            for (leg, &(tx, rx)) in (0u16..).zip(s.direction.legs()) {
                let ends = if tx == 0 { (a, b) } else { (b, a) };
                let id = first_id + leg;
                let spec = frame_spec(s, id, ends, tx, carrier)?;
                let mut frames = Vec::new();
                let mut weights = Vec::new();
                for (size, w) in s.size.parts(s.encap.ip) {
                    let t =
                        FrameTemplate::new(&spec, size).map_err(|source| SpecError::Template {
                            stream: id,
                            size,
                            source,
                        })?;
                    frames.push(t);
                    weights.push(w);
                }
                let lens: Vec<(usize, u32)> = frames
                    .iter()
                    .zip(&weights)
                    .map(|(f, w)| (f.len() + wire::encap::FCS, *w))
                    .collect();
                let config = StreamConfig {
                    id,
                    frames,
                    weights,
                    flows: s.flows,
                    rate: Rate::Pps(Pps(s.load.pps(max, &lens))),
                    burst: s.burst,
                    burst_gap: s.burst_gap,
                    limit: s.limit,
                    reorder_every: s.reorder_every,
                    rewrite_macs: !s.encap.pppoe && !carrier.is_some_and(|c| c.sets_macs(tx)),
                    // The tester's port is a link of the reference speed: catch-ups and
                    // bursts leave it no faster than such a link carries them (or twice the
                    // stream's rate, near line rate: engine::pacing::Pacer::with_link).
                    link_l1_bps: Some(self.speed),
                };
                config.check().map_err(SpecError::Stream)?;
                sent.push(sent_stream(
                    &config,
                    (&ends.0.name, &ends.1.name),
                    &spec,
                    &s.size,
                    max,
                ));
                streams.push(TrialStream {
                    config,
                    tx_port: tx,
                    rx_port: rx,
                });
                max_pps.push(max);
            }
        }
        if streams.is_empty() {
            return Err(SpecError::NoStreams);
        }
        let mut config = TrialConfig::new(vec![a.clone(), b.clone()], streams);
        config.drain = self.drain;
        config.backend = self.backend;
        config.tx_ring.backend = self.tx_method;
        config.tx_threads = self.tx_threads;
        config.rx_threads = self.rx_threads;
        Ok(Built {
            config,
            max_pps,
            sent,
        })
    }
}

/// Runs a built trial on the engine; `stop` aborts it. The one call both front doors make
/// (`wirerate trial`, and the testbed for every UDP trial of a plan) once the configuration
/// is complete.
pub fn execute(config: &TrialConfig, stop: &AtomicBool) -> Result<TrialReport, BenchError> {
    engine::trial::run(config, stop).map_err(|e| match e {
        // A configuration that cannot run is the user's to fix (a frame larger than a port's
        // MTU, a trial XDP cannot run on `--backend xdp`, ...).
        engine::Error::Config(m) => BenchError::Usage(m),
        // The engine's BPF objects failing to load or attach, a system call, a thread: the
        // tester's or the system's fault, exit 1, never blamed on the plan.
        e => BenchError::Failed(e.to_string()),
    })
}
