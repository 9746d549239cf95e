//! One UDP trial on the packet engine, around [`crate::spec`] (which builds and executes it):
//! lab ports turned into engine ports, and the engine's report turned into an [`Outcome`].
//!
//! The achieved offered load comes from the engine's send timestamps (never assumed, DESIGN.md
//! §8), so a trial the tester could not pace at the intended load is detected by the searches.

use engine::port::PortSpec;
use engine::trial::StreamResult;
use wire::units::{Nanos, Pps};

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

/// The engine's backend for a plan's `run.backend`.
pub fn engine_backend(b: crate::plan::TxBackend) -> engine::trial::Backend {
    match b {
        crate::plan::TxBackend::Auto => engine::trial::Backend::Auto,
        crate::plan::TxBackend::Xdp => engine::trial::Backend::Xdp,
        crate::plan::TxBackend::AfPacket => engine::trial::Backend::AfPacket,
    }
}

/// What the engine's report of a trial means for the search that asked for `request`; `max`
/// is the 100 % of the trial's (first) stream ([`crate::spec::Built::max_pps`]), the unit of
/// the offered load. With several streams (a bidirectional trial), received and lost frames
/// are summed and the offered load is the lowest stream's, as [`Outcome`] defines; latency is
/// the first stream's that has it (the A→B direction).
pub fn outcome(request: &TrialRequest, streams: &[StreamResult], max: Pps) -> Outcome {
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
            LineFraction::from_pps(s.tx.achieved_pps, max)
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

/// The load a trial intended on average: `load` itself, or with a burst gap (`run.burst-gap`,
/// forwarding-rate trials only) the schedule's average, which is below the load the frames of
/// a burst are paced at (`burst / (burst/rate + gap)`; the engine's `intended_pps`). So a
/// tester that kept its schedule is not tester-limited, and the record's loads are what the
/// DUT was offered.
pub fn intended_with_gaps(
    load: LineFraction,
    stream: &engine::stream::StreamConfig,
    tx: &engine::tx::TxStreamReport,
) -> LineFraction {
    let in_burst = stream.pps().0;
    let positive = |x: f64| x.is_finite() && x > 0.0;
    if stream.burst_gap.is_none() || !positive(in_burst) || !positive(tx.intended_pps.0) {
        return load;
    }
    LineFraction(load.0 * tx.intended_pps.0 / in_burst)
}

/// Each direction of a trial on its own (streams grouped by sending and receiving port, in
/// the order they first appear: A→B first), for the record of a bidirectional trial; empty
/// when the trial ran one way. `max` is one direction's line rate on the case's path, the
/// unit of `offered`.
pub fn per_direction(streams: &[StreamResult], max: Pps) -> Vec<crate::results::DirectionFacts> {
    let mut out: Vec<crate::results::DirectionFacts> = Vec::new();
    for s in streams {
        let lost = s.rx.lost.unwrap_or(s.tx.sent.saturating_sub(s.rx.received));
        let offered = if max.0 > 0.0 {
            s.tx.achieved_pps.0 / max.0
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use engine::rx::{LatencyReport, StreamRxReport};
    use engine::tx::TxStreamReport;

    /// The engine's result of stream `id` from `tx` to `rx` that sent `sent` frames at `pps`
    /// and received `received` of them, with a latency report (and IPDV for stream 1).
    pub(crate) fn stream(
        id: u16,
        tx: &str,
        rx: &str,
        sent: u64,
        received: u64,
        pps: f64,
    ) -> StreamResult {
        StreamResult {
            stream_id: id,
            tx_port: tx.into(),
            rx_port: rx.into(),
            tx: TxStreamReport {
                stream_id: id,
                sent,
                bytes: 0,
                bytes_with_fcs: 0,
                intended_pps: Pps(pps),
                achieved_pps: Pps(pps),
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
            rx_pps: Pps(0.0),
            rx_l2_bps: BitsPerSec(0.0),
            rx_l1_bps: BitsPerSec(0.0),
        }
    }

    use std::time::Duration;
    use wire::units::BitsPerSec;

    /// 100 % of 64 B frames at 1 Gb/s.
    fn max() -> Pps {
        wire::linerate::max_frame_rate(BitsPerSec(1e9), 64)
    }

    #[test]
    fn bidirectional_outcome_sums_frames_and_keeps_the_slower_direction() {
        let max = max().0;
        let mut req = TrialRequest::rate(LineFraction(0.5), Duration::from_secs(1));
        req.latency = true;
        let r = vec![
            stream(1, "a", "b", 1000, 990, 0.5 * max),
            stream(2, "b", "a", 1000, 1000, 0.45 * max),
        ];
        let o = outcome(&req, &r, Pps(max));
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
        let max = max();
        let mut fwd = stream(1, "a", "b", 1000, 1000, 0.5 * max.0);
        fwd.rx_pps = max * 0.5;
        let mut rev = stream(2, "b", "a", 1000, 0, 0.5 * max.0);
        rev.rx_pps = Pps(0.0);
        let d = per_direction(&[fwd.clone(), rev], max);
        assert_eq!(d.len(), 2);
        assert_eq!((d[0].tx_port.as_str(), d[0].rx_port.as_str()), ("a", "b"));
        assert_eq!((d[0].sent, d[0].received, d[0].lost), (1000, 1000, 0));
        assert_eq!((d[1].sent, d[1].received, d[1].lost), (1000, 0, 1000));
        assert!((d[0].offered - 0.5).abs() < 1e-12 && (d[1].offered - 0.5).abs() < 1e-12);
        assert_eq!(d[1].rx_pps.0, 0.0, "the direction the DUT did not forward");
        assert!(
            per_direction(&[fwd], max).is_empty(),
            "a one-way trial has no per-direction facts"
        );
    }

    /// `run.burst-gap`: bursts of 10 frames paced at 50 % with a gap that halves the average
    /// intend 25 % on average, which a tester that kept its schedule offered; without a gap the
    /// load is what was intended.
    #[test]
    fn a_burst_gap_makes_the_schedule_average_the_intended_load() {
        let max = max().0;
        let frame = wire::template::FrameTemplate::new(
            &wire::template::StreamSpec::new(wire::encap::EncapSpec::plain(
                wire::encap::IpVersion::V4,
            )),
            64,
        )
        .unwrap();
        let mut cfg = engine::stream::StreamConfig::single(
            1,
            frame,
            engine::stream::Rate::Pps(Pps(0.5 * max)),
            engine::stream::Limit::DurationNs(1_000_000_000),
        );
        let tx = stream(1, "a", "b", 100, 100, 0.25 * max).tx;
        let load = LineFraction(0.5);
        assert_eq!(intended_with_gaps(load, &cfg, &tx), load);
        cfg.burst = 10;
        cfg.burst_gap = Some(Duration::from_micros(10));
        let avg = intended_with_gaps(load, &cfg, &tx);
        assert!((avg.0 - 0.25).abs() < 1e-12, "{avg:?}");
        let req = TrialRequest::rate(load, Duration::from_secs(1));
        let mut o = outcome(&req, &[stream(1, "a", "b", 100, 100, 0.25 * max)], Pps(max));
        assert!(o.is_tester_limited(0.01), "against the load inside a burst");
        o.intended = avg;
        assert!(!o.is_tester_limited(0.01), "against the schedule's average");
    }

    #[test]
    fn one_way_outcome_is_one_direction() {
        let max = max().0;
        let req = TrialRequest::rate(LineFraction(0.5), Duration::from_secs(1));
        let o = outcome(&req, &[stream(1, "a", "b", 100, 100, 0.5 * max)], Pps(max));
        assert_eq!((o.directions, o.received, o.lost), (1, 100, 0));
        assert!(
            o.latency.is_none(),
            "latency only when the request asked for it"
        );
    }
}
