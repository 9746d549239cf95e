//! One UDP trial on the packet engine: lab ports turned into engine ports, a search's
//! [`TrialRequest`] turned into a stream, and the engine's report turned into an [`Outcome`].
//!
//! The achieved offered load comes from the engine's send timestamps (never assumed, DESIGN.md
//! §8), so a trial the tester could not pace at the intended load is detected by the searches.

use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use engine::port::PortSpec;
use engine::stream::{Flows, Limit, Rate, StreamConfig};
use engine::trial::{self, TrialConfig, TrialReport, TrialStream};
use wire::encap::{EncapSpec, IpVersion};
use wire::template::{FrameTemplate, StreamSpec};
use wire::units::{BitsPerSec, Nanos, Pps};

use crate::search::{LatencySummary, LineFraction, Outcome, Percentiles, TrialRequest};

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
    })
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
            config: StreamConfig {
                id: 1,
                frames: vec![template],
                weights: vec![1],
                flows: Flows::default(),
                rate: Rate::Pps(pps),
                burst: 1,
                burst_gap: None,
                limit,
                reorder_every: None,
                rewrite_macs: true,
            },
            tx_port: 0,
            rx_port: 1,
        };
        let mut cfg = TrialConfig::new(vec![a.clone(), b.clone()], vec![stream]);
        cfg.drain = self.drain;
        Ok(cfg)
    }

    /// What the engine's `report` means for the search that asked for `request`.
    pub fn outcome(&self, request: &TrialRequest, report: &TrialReport) -> Outcome {
        let max = self.max_pps();
        let (sent, achieved, received, lost, latency) = match report.streams.first() {
            Some(s) => (
                s.tx.sent,
                s.tx.achieved_pps,
                s.rx.received,
                s.rx.lost.unwrap_or(s.tx.sent.saturating_sub(s.rx.received)),
                s.rx.latency.map(|l| latency_summary(&l, s.rx.received)),
            ),
            None => (0, 0.0, 0, 0, None),
        };
        // A burst is sent back to back: its offered rate is what the sender reached inside it.
        // One frame has no rate; count it as offered at the intended load.
        let offered = if sent <= 1 {
            request.load
        } else {
            LineFraction::from_pps(Pps(achieved), max)
        };
        Outcome {
            intended: request.load,
            offered,
            received,
            lost,
            directions: 1,
            duration: request.duration,
            latency: if request.latency { latency } else { None },
        }
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
