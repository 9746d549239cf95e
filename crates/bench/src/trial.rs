//! One UDP trial on the packet engine: lab ports turned into engine ports, a search's
//! [`TrialRequest`] turned into a stream, and the engine's report turned into an [`Outcome`].
//!
//! The achieved offered load comes from the engine's send timestamps (never assumed, DESIGN.md
//! §8), so a trial the tester could not pace at the intended load is detected by the searches.

use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use engine::port::PortSpec;
use engine::stream::{Limit, Rate, StreamConfig};
use engine::trial::{self, StreamResult, TrialConfig, TrialReport, TrialStream};
use wire::encap::{EncapSpec, IpVersion};
use wire::template::{FrameTemplate, StreamSpec};
use wire::units::{BitsPerSec, Nanos, Pps};

use crate::search::{Ipdv, LatencySummary, LineFraction, Outcome, Percentiles, TrialRequest};

/// The engine port for lab port `id` of `lab`, named `label`, pinned to the tester CPUs.
/// `wirerate trial --lab` builds the same ports.
pub fn lab_port(lab: &lab::Lab, id: lab::PortId, label: &str) -> lab::Result<PortSpec> {
    let i = lab.port(id)?;
    Ok(PortSpec {
        name: label.into(),
        ifname: i.ifname,
        netns: Some(i.netns),
        ipv4: Some(i.ipv4),
        ipv6: Some(i.ipv6),
        next_hop_v4: i.gateway_v4.or(i.target_v4),
        next_hop_v6: i.gateway_v6.or(i.target_v6),
        cpus: lab::Lab::cpus_for(lab::Node::A),
        // In the forward and endpoint topologies the veth's peer is the DUT's port.
        faces_dut: lab.topology() != lab::Topology::Direct,
        xdp_rx_mode: lab_receive_mode(lab)?,
    })
}

/// How the XDP receiver of a lab port attaches, for the DUT as it is now (call again after
/// switching the fast path).
///
/// SKB mode on ports facing the lab's kernel DUT, so that the receive work runs on the
/// tester's CPU: a native program would run in the veth's receive poll on the DUT's CPU,
/// which then paid the tester's receive (quiet A/B at 64 B, 2026-11-26: the DUT forwarded
/// 7–11 % more with the receiver in SKB mode; docs/lab.md, "CPU isolation").
/// Native mode while the DUT's XDP fast path is on: it hands the tester's veth XDP frames,
/// whose receive poll runs on the DUT's CPU either way, and natively the program needs no
/// skb there. The direct topology has no DUT: native.
///
/// `WIRERATE_LAB_XDP_RX=native|skb` overrides it, for measuring one against the other.
pub fn lab_receive_mode(lab: &lab::Lab) -> lab::Result<Option<engine::xdp::rx::XdpMode>> {
    match std::env::var("WIRERATE_LAB_XDP_RX").as_deref() {
        Ok("native") => return Ok(Some(engine::xdp::rx::XdpMode::Native)),
        Ok("skb") => return Ok(Some(engine::xdp::rx::XdpMode::Skb)),
        _ => {}
    }
    if lab.topology() == lab::Topology::Direct || lab.fastpath()? {
        return Ok(None);
    }
    Ok(Some(engine::xdp::rx::XdpMode::Skb))
}

/// Ports A and B of a lab, as the engine wants them.
pub fn lab_ports(lab: &lab::Lab) -> lab::Result<(PortSpec, PortSpec)> {
    Ok((
        lab_port(lab, lab::PortId::A, "a")?,
        lab_port(lab, lab::PortId::B, "b")?,
    ))
}

/// The frame rate that is 100 % of `speed` for plain frames of `frame_size` bytes (with FCS).
pub fn line_pps(speed: BitsPerSec, frame_size: u32) -> Pps {
    wire::linerate::max_frame_rate(speed, frame_size as usize)
}

/// The search's latency figures from the engine's histogram of one stream (`samples` frames).
pub fn latency_summary(l: &engine::rx::LatencyReport, samples: u64) -> LatencySummary {
    LatencySummary {
        min: Nanos(l.min_ns),
        mean: Nanos(l.avg_ns),
        max: Nanos(l.max_ns),
        samples,
        ipdv: None,
        percentiles: Some(Percentiles {
            p50: Nanos(l.p50_ns),
            p90: Nanos(l.p90_ns),
            p99: Nanos(l.p99_ns),
            p99_9: Nanos(l.p999_ns),
        }),
    }
}

/// What a UDP trial sends: one stream from port A to port B.
#[derive(Debug, Clone)]
pub struct UdpTrial {
    /// IP version of the frames.
    pub ip: IpVersion,
    /// Frame size with FCS.
    pub frame_size: u32,
    /// Reference line rate (100 % load).
    pub speed: BitsPerSec,
    /// Receivers keep counting this long after the last frame.
    pub drain: Duration,
    /// The packet engine (`auto`: XDP where the trial fits it).
    pub backend: engine::trial::Backend,
}

/// The engine's backend for a plan's `run.backend`.
pub fn engine_backend(b: crate::plan::TxBackend) -> engine::trial::Backend {
    match b {
        crate::plan::TxBackend::Auto => engine::trial::Backend::Auto,
        crate::plan::TxBackend::Xdp => engine::trial::Backend::Xdp,
        crate::plan::TxBackend::AfPacket => engine::trial::Backend::AfPacket,
    }
}

fn addr(p: &PortSpec, ip: IpVersion) -> Result<IpAddr, String> {
    match ip {
        IpVersion::V4 => p.ipv4.map(IpAddr::V4),
        IpVersion::V6 => p.ipv6.map(IpAddr::V6),
    }
    .ok_or_else(|| format!("port {} has no {ip} address", p.name))
}

impl UdpTrial {
    /// 100 % load in frames/s.
    pub fn max_pps(&self) -> Pps {
        line_pps(self.speed, self.frame_size)
    }

    /// The engine configuration for `request` between ports `a` and `b`.
    pub fn config(
        &self,
        a: &PortSpec,
        b: &PortSpec,
        request: &TrialRequest,
    ) -> Result<TrialConfig, String> {
        let encap: EncapSpec = match self.ip {
            IpVersion::V4 => "ipv4",
            IpVersion::V6 => "ipv6",
        }
        .parse()
        .map_err(|e| format!("encap: {e}"))?;
        let mut spec = StreamSpec::new(encap);
        spec.stream_id = 1;
        spec.src_ip = addr(a, self.ip)?;
        spec.dst_ip = addr(b, self.ip)?;
        spec.dst_port = 9;
        let template = FrameTemplate::new(&spec, self.frame_size as usize)
            .map_err(|e| format!("frame size {}: {e}", self.frame_size))?;
        let pps = request.load.to_pps(self.max_pps()).0.max(1.0);
        let limit = match request.burst_frames {
            Some(n) => Limit::Frames(n),
            None => Limit::DurationNs(request.duration.as_nanos() as u64),
        };
        let stream = TrialStream {
            config: StreamConfig::single(1, template, Rate::Pps(pps), limit),
            tx_port: 0,
            rx_port: 1,
        };
        let mut cfg = TrialConfig::new(vec![a.clone(), b.clone()], vec![stream]);
        cfg.drain = self.drain;
        cfg.backend = self.backend;
        Ok(cfg)
    }

    /// The B→A stream of a bidirectional trial (RFC 2544 §14): a copy of `forward` (the A→B
    /// stream of [`UdpTrial::config`], after any rate adjustment, so both directions run at
    /// the same load and length) with stream id 2, plain frames addressed from `b` to `a`.
    /// Push it onto the config's streams; [`UdpTrial::outcome`] then sums both directions.
    /// Port B then needs a next hop (it resolves the DUT's MAC like port A). Plain only: a
    /// port B that plays a PPPoE session or DS-Lite softwire sends its reverse stream inside
    /// it instead (`crate::testbed`); VLAN and MPLS would need B to resolve and send inside
    /// the tags, which the engine does not do yet, so plan check refuses `bidirectional`
    /// with them.
    pub fn reverse_of(
        &self,
        forward: &TrialStream,
        a: &PortSpec,
        b: &PortSpec,
    ) -> Result<TrialStream, String> {
        let mut spec = StreamSpec::new(EncapSpec::plain(self.ip));
        spec.stream_id = 2;
        spec.src_ip = addr(b, self.ip)?;
        spec.dst_ip = addr(a, self.ip)?;
        spec.dst_port = 9;
        let template = FrameTemplate::new(&spec, self.frame_size as usize)
            .map_err(|e| format!("frame size {}: {e}", self.frame_size))?;
        let mut config = forward.config.clone();
        config.id = 2;
        config.frames = vec![template];
        Ok(TrialStream {
            config,
            tx_port: 1,
            rx_port: 0,
        })
    }

    /// What the engine's `report` means for the search that asked for `request`. With several
    /// streams (a bidirectional trial), received and lost frames are summed and the offered
    /// load is the lowest stream's, as [`Outcome`] defines; latency is the first stream's that
    /// has it (the A→B direction).
    pub fn outcome(&self, request: &TrialRequest, report: &TrialReport) -> Outcome {
        self.outcome_of(request, &report.streams)
    }

    /// [`UdpTrial::outcome`] from the report's per-stream results.
    pub fn outcome_of(&self, request: &TrialRequest, streams: &[StreamResult]) -> Outcome {
        let max = self.max_pps();
        let mut offered: Option<LineFraction> = None;
        let (mut received, mut lost, mut fragments) = (0u64, 0u64, 0u64);
        let mut latency = None;
        let mut directions = Vec::new();
        for s in streams {
            received += s.rx.received;
            lost += s.rx.lost.unwrap_or(s.tx.sent.saturating_sub(s.rx.received));
            fragments += s.rx.invalid.fragment;
            if latency.is_none() {
                latency = s.rx.latency.map(|l| LatencySummary {
                    ipdv: s.ipdv.map(|i| Ipdv {
                        pairs: i.pairs,
                        min_ns: i.min_ns,
                        median_ns: i.median_ns,
                        max_ns: i.max_ns,
                    }),
                    ..latency_summary(&l, s.rx.received)
                });
            }
            // A burst is sent back to back: its offered rate is what the sender reached inside
            // it. One frame has no rate; count it as offered at the intended load.
            let this = if s.tx.sent <= 1 {
                request.load
            } else {
                LineFraction::from_pps(Pps(s.tx.achieved_pps), max)
            };
            offered = Some(match offered {
                Some(o) if o.0 <= this.0 => o,
                _ => this,
            });
            if !directions.contains(&(&s.tx_port, &s.rx_port)) {
                directions.push((&s.tx_port, &s.rx_port));
            }
        }
        Outcome {
            intended: request.load,
            offered: offered.unwrap_or(request.load),
            received,
            lost,
            fragments,
            directions: directions.len().max(1) as u32,
            duration: request.duration,
            latency: if request.latency { latency } else { None },
        }
    }

    /// Each direction of a trial on its own (streams grouped by sending and receiving port, in
    /// the order they first appear: A→B first), for the record of a bidirectional trial;
    /// empty when the trial ran one way. `max` is one direction's line rate on the case's
    /// path, the unit of `offered`.
    pub fn per_direction(
        streams: &[StreamResult],
        max: Pps,
    ) -> Vec<crate::results::DirectionFacts> {
        let mut out: Vec<crate::results::DirectionFacts> = Vec::new();
        for s in streams {
            let lost = s.rx.lost.unwrap_or(s.tx.sent.saturating_sub(s.rx.received));
            let offered = if max.0 > 0.0 {
                s.tx.achieved_pps / max.0
            } else {
                0.0
            };
            match out
                .iter_mut()
                .find(|d| d.tx_port == s.tx_port && d.rx_port == s.rx_port)
            {
                Some(d) => {
                    d.sent += s.tx.sent;
                    d.received += s.rx.received;
                    d.lost += lost;
                    d.offered += offered;
                    d.rx_pps += s.rx_pps;
                }
                None => out.push(crate::results::DirectionFacts {
                    tx_port: s.tx_port.clone(),
                    rx_port: s.rx_port.clone(),
                    sent: s.tx.sent,
                    received: s.rx.received,
                    lost,
                    offered,
                    rx_pps: s.rx_pps,
                }),
            }
        }
        if out.len() < 2 {
            out.clear();
        }
        out
    }

    /// Runs `request` on the engine between `a` and `b`; `stop` aborts it.
    pub fn run(
        &self,
        a: &PortSpec,
        b: &PortSpec,
        request: &TrialRequest,
        stop: &AtomicBool,
    ) -> Result<(Outcome, TrialReport), String> {
        let cfg = self.config(a, b, request)?;
        let report = trial::run(&cfg, stop).map_err(|e| format!("engine trial: {e}"))?;
        Ok((self.outcome(request, &report), report))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::rx::{LatencyReport, StreamRxReport};
    use engine::tx::TxStreamReport;

    fn stream(id: u16, tx: &str, rx: &str, sent: u64, received: u64, pps: f64) -> StreamResult {
        StreamResult {
            stream_id: id,
            tx_port: tx.into(),
            rx_port: rx.into(),
            tx: TxStreamReport {
                stream_id: id,
                sent,
                bytes: 0,
                bytes_with_fcs: 0,
                intended_pps: pps,
                achieved_pps: pps,
                first_tx_ns: 0,
                last_tx_ns: 0,
                slipped: 0,
                max_debt: 0,
                swapped_pairs: 0,
                refused_by_peer: 0,
            },
            rx: StreamRxReport {
                stream_id: id,
                received,
                bytes: 0,
                lost: Some(sent - received),
                lost_by_sequence: 0,
                duplicates: 0,
                out_of_order: 0,
                late: 0,
                negative_latency: 0,
                highest_seq: None,
                first_rx_ns: 0,
                last_rx_ns: 0,
                latency: Some(LatencyReport {
                    min_ns: 1_000,
                    avg_ns: 2_000,
                    max_ns: 9_000,
                    p50_ns: 1_900,
                    p90_ns: 2_500,
                    p99_ns: 4_000,
                    p999_ns: 8_000,
                    jitter_ns: 0.0,
                }),
                invalid: Default::default(),
            },
            ipdv: (id == 1).then_some(engine::rx::IpdvReport {
                pairs: received.saturating_sub(1),
                min_ns: -900,
                median_ns: 20,
                max_ns: 1_200,
            }),
            rx_pps: 0.0,
            rx_l2_bps: 0.0,
            rx_l1_bps: 0.0,
        }
    }

    fn trial() -> UdpTrial {
        UdpTrial {
            ip: IpVersion::V4,
            frame_size: 64,
            speed: BitsPerSec(1e9),
            drain: Duration::from_millis(100),
            backend: engine::trial::Backend::Auto,
        }
    }

    #[test]
    fn bidirectional_outcome_sums_frames_and_keeps_the_slower_direction() {
        let t = trial();
        let max = t.max_pps().0;
        let mut req = TrialRequest::rate(LineFraction(0.5), Duration::from_secs(1));
        req.latency = true;
        let r = vec![
            stream(1, "a", "b", 1000, 990, 0.5 * max),
            stream(2, "b", "a", 1000, 1000, 0.45 * max),
        ];
        let o = t.outcome_of(&req, &r);
        assert_eq!(o.directions, 2);
        assert_eq!((o.received, o.lost), (1990, 10));
        assert!((o.offered.0 - 0.45).abs() < 1e-9, "{:?}", o.offered);
        assert!(o.is_tester_limited(0.01), "the B→A sender fell behind");
        let p = o.latency.unwrap().percentiles.unwrap();
        assert_eq!((p.p50.0, p.p99_9.0), (1_900, 8_000));
        // IPDV comes with the latency of the same (A→B) stream.
        assert_eq!(
            o.latency.unwrap().ipdv,
            Some(Ipdv {
                pairs: 989,
                min_ns: -900,
                median_ns: 20,
                max_ns: 1_200
            })
        );
    }

    #[test]
    fn per_direction_facts_keep_what_the_sums_hide() {
        let t = trial();
        let max = t.max_pps();
        let mut fwd = stream(1, "a", "b", 1000, 1000, 0.5 * max.0);
        fwd.rx_pps = 0.5 * max.0;
        let mut rev = stream(2, "b", "a", 1000, 0, 0.5 * max.0);
        rev.rx_pps = 0.0;
        let d = UdpTrial::per_direction(&[fwd.clone(), rev], max);
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].tx_port.as_str(), d[0].rx_port.as_str()), ("a", "b"));
        assert_eq!((d[0].sent, d[0].received, d[0].lost), (1000, 1000, 0));
        assert_eq!((d[1].sent, d[1].received, d[1].lost), (1000, 0, 1000));
        assert!((d[0].offered - 0.5).abs() < 1e-12 && (d[1].offered - 0.5).abs() < 1e-12);
        assert_eq!(d[1].rx_pps, 0.0, "the direction the DUT did not forward");
        assert!(
            UdpTrial::per_direction(&[fwd], max).is_empty(),
            "a one-way trial has no per-direction facts"
        );
    }

    #[test]
    fn one_way_outcome_is_one_direction() {
        let t = trial();
        let max = t.max_pps().0;
        let req = TrialRequest::rate(LineFraction(0.5), Duration::from_secs(1));
        let o = t.outcome_of(&req, &[stream(1, "a", "b", 100, 100, 0.5 * max)]);
        assert_eq!((o.directions, o.received, o.lost), (1, 100, 0));
        assert!(
            o.latency.is_none(),
            "latency only when the request asked for it"
        );
    }

    #[test]
    fn reverse_stream_runs_from_b_to_a_at_the_forward_load() {
        let port = |name: &str, v4: [u8; 4]| PortSpec {
            name: name.into(),
            ifname: format!("veth-{name}"),
            netns: None,
            ipv4: Some(v4.into()),
            ipv6: None,
            next_hop_v4: None,
            next_hop_v6: None,
            cpus: Vec::new(),
            faces_dut: false,
            xdp_rx_mode: None,
        };
        let (a, b) = (port("a", [10, 0, 0, 2]), port("b", [10, 0, 1, 2]));
        let req = TrialRequest::rate(LineFraction(0.5), Duration::from_secs(1));
        let t = trial();
        let mut cfg = t.config(&a, &b, &req).unwrap();
        cfg.streams[0].config.rate = engine::stream::Rate::Pps(1234.0);
        let s = t.reverse_of(&cfg.streams[0], &a, &b).unwrap();
        assert_eq!((s.tx_port, s.rx_port, s.config.id), (1, 0, 2));
        assert_eq!(
            s.config.rate,
            engine::stream::Rate::Pps(1234.0),
            "same load both ways"
        );
        let d = wire::dissect::dissect(s.config.frames[0].bytes()).unwrap();
        assert_eq!(d.dst, IpAddr::from([10, 0, 0, 2]));
    }
}
