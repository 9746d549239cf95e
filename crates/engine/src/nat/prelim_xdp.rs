//! The preliminary phase on XDP (issue #37 item 3): the initiator's N frames sent by
//! [`crate::xdp::tx`], paced in the kernel like every XDP stream, and learned on the responder
//! by [`XdpLearner`] (`bpf/learn_rx.bpf.c`), so that the tester outruns the DUT.
//!
//! Why: `sendmmsg` on AF_PACKET from user space cannot open connections faster than the lab
//! DUT establishes them on a 2-vCPU machine, and left napt's connection establishment rate a
//! lower bound ("at least 24,000–32,000/s, tester-limited above").
//!
//! - **Send.** The flow walk of [`ConnTrialConfig::flows`] as a connection table
//!   (`RECIPE_CONNS` of `bpf/tx.bpf.c`, the recipe of the XDP load): entry k is the tuple
//!   the initiator opens connection k from ([`Opened::ports`]), and the stream is limited to
//!   N frames, so frame k is connection k and carries k as its sequence number — the same
//!   frames as the AF_PACKET phase. A frame the DUT's port refused is the DUT's loss (sent,
//!   `refused_by_peer`), as on AF_PACKET.
//! - **Learn.** The program records each frame's arrived tuple by its index in the kernel;
//!   the responder reads the table after the gap into the same [`Learned`].
//!
//! Each half falls back to AF_PACKET when it cannot run *before the first frame* (IPv6, a
//! frame above the XDP sender's largest, a port that refuses XDP), the reason recorded in
//! [`PhaseEngines::note`]; a failure after the first frame fails the trial, never retried on
//! the other engine.

use std::net::{IpAddr, Ipv4Addr};

use serde::Serialize;
use wire::units::Pps;

use super::load::LoadEngine;
use super::load_xdp::{phase, unfit};
use super::priority::SenderPriority;
use super::{ConnTrialConfig, Learned, Opened, PhaseTx, Tuple};
use crate::port::PortSpec;
use crate::stream::{Flows, FrameGen, StreamConfig};
use crate::trial::Backend;
use crate::xdp::learn_rx::XdpLearner;
use crate::xdp::sys::Conn;
use crate::xdp::tx::XdpSender;
use crate::{Error, Result};

/// Which engine sent the preliminary frames and which learned them, and why (a fallback's
/// reason, a learner in SKB mode), and the scheduling priority the XDP sender ran at (`None`
/// on AF_PACKET, which keeps the port thread's).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct PhaseEngines {
    pub sender: LoadEngine,
    pub learner: LoadEngine,
    pub note: String,
    pub sender_priority: Option<SenderPriority>,
}

/// The connection table of the preliminary stream: entry k is the IPv4 tuple connection k is
/// opened from.
fn opened_conns(cfg: &ConnTrialConfig, opened: Opened) -> Result<Vec<Conn>> {
    let v4 = |a: IpAddr| match a {
        IpAddr::V4(a) => Ok(u32::from(a)),
        IpAddr::V6(a) => Err(Error::Config(format!(
            "{a}: the XDP preliminary phase is IPv4 only"
        ))),
    };
    let (src, dst) = (
        v4(cfg.addr(&cfg.initiator)?)?,
        v4(cfg.addr(&cfg.responder)?)?,
    );
    Ok((0..cfg.connections)
        .map(|k| {
            let (src_port, dst_port) = opened.ports(k);
            Conn {
                src_addr: src,
                dst_addr: dst,
                src_port,
                dst_port,
            }
        })
        .collect())
}

/// The preliminary stream as the XDP sender takes it: its flow set replaced by the connection
/// table (the program writes each connection's ports over the base frame).
pub(super) fn xdp_stream(prelim: &StreamConfig) -> StreamConfig {
    let mut s = prelim.clone();
    s.flows = Flows::default();
    s
}

/// Opens the XDP sender of the preliminary phase on the initiator's port (the calling thread
/// is in its namespace; `gen` carries the resolved MACs), or says why it cannot run:
/// `Ok(Err(reason))` for [`Backend::Auto`] (the caller sends on AF_PACKET), an error for
/// [`Backend::Xdp`].
pub(super) fn open_sender(
    cfg: &ConnTrialConfig,
    opened: Opened,
    spec: &PortSpec,
    ifindex: u32,
    gen: &FrameGen,
    stream: &StreamConfig,
) -> Result<std::result::Result<XdpSender, String>> {
    let backend = cfg.preliminary_backend;
    if backend == Backend::AfPacket {
        return Ok(Err(String::new()));
    }
    let tried = match unfit(cfg) {
        Some(why) => Err(Error::Config(why)),
        None => opened_conns(cfg, opened).and_then(|conns| {
            let gens = [(gen.clone(), stream)];
            crate::xdp::tx::open_with_conns(spec, ifindex, &gens, &conns)
        }),
    };
    match (tried, backend) {
        (Ok(s), _) => Ok(Ok(s)),
        (Err(e), Backend::Xdp) => Err(Error::Config(format!("XDP preliminary sender: {e}"))),
        (Err(e), _) => Ok(Err(format!(
            "preliminary sender: af_packet, as XDP cannot run it ({e})"
        ))),
    }
}

/// The most frames the preliminary sender sends at once to catch up after a stall: half a
/// veth's 256-frame ring (two of the XDP sender's 64-frame flushes), so that no DUT port
/// refuses connections for a burst the trial never asked for. Beyond it the schedule slips,
/// and the phase's achieved rate shows the stall (a trial more than the tolerance below its
/// rate is tester-limited). Why not the XDP default of 10 ms of frames: every trial of a run
/// at load 10 (2026-11-29) caught up 8–10 ms at once, and napt then failed at 50,875/s with
/// 224 connections refused by its port, where paced trials passed at up to 176,799/s
/// offered. Why not less: with 32 frames, stalls of the loaded tester CPU longer than 32
/// frames' time slipped so often that 25,938/s was offered as 12,843/s.
pub(super) const MAX_CATCH_UP: u64 = 128;

/// Sends the N preliminary frames from `start_ns` on the opened sender.
pub(super) fn send(
    sender: &mut XdpSender,
    gen: FrameGen,
    stream: &StreamConfig,
    pps: Pps,
    start_ns: u64,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<PhaseTx> {
    let r = crate::xdp::tx::run_catching_up_at_most(
        sender,
        vec![(gen, stream)],
        start_ns,
        stop,
        MAX_CATCH_UP,
    )?;
    let mut tx = phase(&r, pps).0;
    // One frame has no rate of its own: as on AF_PACKET (`send_paced`), it went at the asked
    // one (the XDP sender reports 0, which read as a tester that offered nothing at N = 1).
    if tx.sent <= 1 {
        tx.achieved_pps = pps;
    }
    Ok(tx)
}

/// Attaches the XDP learner to the responder's port, or says why it cannot run (as
/// [`open_sender`]).
pub(super) fn attach_learner(
    cfg: &ConnTrialConfig,
    stream: u16,
) -> Result<std::result::Result<XdpLearner, String>> {
    let backend = cfg.preliminary_backend;
    if backend == Backend::AfPacket {
        return Ok(Err(String::new()));
    }
    let tried = if cfg.ip != wire::encap::IpVersion::V4 {
        Err(Error::Config(
            "the XDP preliminary phase is IPv4 only".into(),
        ))
    } else {
        XdpLearner::attach(&cfg.responder, stream, cfg.connections)
    };
    match (tried, backend) {
        (Ok(l), _) => Ok(Ok(l)),
        (Err(e), Backend::Xdp) => Err(Error::Config(format!("XDP preliminary learner: {e}"))),
        (Err(e), _) => Ok(Err(format!(
            "preliminary learner: af_packet, as XDP cannot run it ({e})"
        ))),
    }
}

/// Adds what the XDP learner recorded to `learned` (after the phase): each learned slot, and
/// the frames it counted as duplicates or out of range.
pub(super) fn read_learner(learner: &XdpLearner, learned: &mut Learned) -> Result<()> {
    let totals = learner.totals()?;
    for (k, c) in learner.learned()? {
        learned.record(
            k,
            Tuple {
                src: Ipv4Addr::from(c.src_addr).into(),
                src_port: c.src_port,
                dst: Ipv4Addr::from(c.dst_addr).into(),
                dst_port: c.dst_port,
            },
        );
    }
    learned.count_elsewhere(totals.duplicates, totals.out_of_range);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::encap::IpVersion;

    fn cfg(ip: IpVersion, frame_size: usize, backend: Backend) -> ConnTrialConfig {
        let mut c = ConnTrialConfig::new(
            PortSpec::new("a", "veth-a"),
            PortSpec::new("b", "veth-b"),
            ip,
        );
        c.frame_size = frame_size;
        c.connections = 10;
        c.preliminary_backend = backend;
        c
    }

    #[test]
    fn what_xdp_cannot_run_is_named_before_any_port_is_touched() {
        // Too large for a live frame's page: the reason names the largest.
        let why = unfit(&cfg(IpVersion::V4, 3100, Backend::Auto)).unwrap();
        assert!(
            why.contains("above the XDP sender's largest, 3000 B"),
            "{why}"
        );
        assert_eq!(unfit(&cfg(IpVersion::V4, 1518, Backend::Auto)), None);
        // IPv6: `auto` learns on AF_PACKET and says why; `xdp` refuses; `af_packet` never
        // tries (no reason to give).
        let why = attach_learner(&cfg(IpVersion::V6, 82, Backend::Auto), 1)
            .unwrap()
            .unwrap_err();
        assert!(
            why.contains("preliminary learner: af_packet") && why.contains("IPv4 only"),
            "{why}"
        );
        let e = attach_learner(&cfg(IpVersion::V6, 82, Backend::Xdp), 1).unwrap_err();
        assert!(e.to_string().contains("IPv4 only"), "{e}");
        let none = attach_learner(&cfg(IpVersion::V4, 64, Backend::AfPacket), 1).unwrap();
        assert_eq!(none.unwrap_err(), "");
    }
}
