//! The load of [`super::load`] on the XDP backend: the same frames, sent and counted inside the
//! kernel, so that the tester outruns the DUT (the AF_PACKET load, `sendmmsg` from user space,
//! tops out near the lab DUT's own rate on a 2-vCPU machine and left `nat-throughput` with
//! lower bounds only).
//!
//! - **Send.** Each port's sender is [`crate::xdp::tx`] with a connection table
//!   (`RECIPE_CONNS` of `bpf/tx.bpf.c`): frame i is connection i mod N, from the initiator on
//!   the tuple it opened the connection from, from the responder on the translation it
//!   learned, carrying i mod N as its sequence number; paced by the program like every XDP
//!   stream. A frame the DUT's port refused is the DUT's loss (sent, `refused_by_dut`), as in
//!   every XDP trial through the lab DUT.
//! - **Count.** Each port gets [`ConnReceiver`] (`bpf/conn_rx.bpf.c`): a frame counts only on
//!   its own connection's tuple, else it is misdirected; per-connection counts show which
//!   connections got fewer frames than were sent on them. An AF_PACKET socket per port still
//!   answers ARP (the program passes everything that is not a test frame) and counts, with the
//!   same rule, any test frame that reached it.
//!
//! IPv4 only (the connection table holds 32-bit addresses); IPv6 loads run on AF_PACKET.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use wire::encap::{EncapSpec, IpVersion};
use wire::template::{FrameTemplate, StreamSpec};
use wire::units::Pps;

use super::load::{spawn_receiver, wait_start, Count, LoadEngine, LoadPhase, LoadReport};
use super::priority::SenderPriority;
use super::{
    announce, open_sender, ConnTrialConfig, Opened, PhaseTx, Tuple, PRELIMINARY_STREAM,
    VALIDATION_STREAM,
};
use crate::stream::{Flows, FrameGen, Limit, Rate, StreamConfig};
use crate::tx::TxPortReport;
use crate::xdp::conn_rx::{short_connections, ConnReceiver};
use crate::xdp::sys::Conn;
use crate::xdp::turns::Turns;
use crate::{Error, Result};

/// Why the XDP load did not finish: before its first frame (the caller may run the load on
/// AF_PACKET instead) or after (frames were sent: report, never retry).
#[derive(Debug)]
pub(super) enum XdpLoadError {
    BeforeStart(Error),
    AfterStart(Error),
}

/// Why this trial's connection frames (its load, or its preliminary phase: the same sender)
/// cannot go on XDP at all, if they cannot.
pub(super) fn unfit(cfg: &ConnTrialConfig) -> Option<String> {
    if cfg.ip != IpVersion::V4 {
        return Some("the XDP connection engine is IPv4 only".into());
    }
    let len = cfg.frame_size.saturating_sub(wire::encap::FCS);
    if len > crate::xdp::tx::MAX_FRAME_LEN {
        return Some(format!(
            "{len}-byte frames are above the XDP sender's largest, {} B",
            crate::xdp::tx::MAX_FRAME_LEN
        ));
    }
    None
}

fn v4(a: std::net::IpAddr) -> Result<u32> {
    match a {
        std::net::IpAddr::V4(a) => Ok(u32::from(a)),
        std::net::IpAddr::V6(a) => Err(Error::Config(format!(
            "{a}: the XDP connection load is IPv4 only"
        ))),
    }
}

/// The four tables of one load: what each port sends per connection and what must arrive.
struct Tables {
    /// Initiator → responder: the tuples the connections were opened from.
    a_send: Vec<Conn>,
    /// What the responder must receive: the tuples it learned.
    b_expect: Vec<Conn>,
    /// Responder → initiator: replies on the learned translations.
    b_send: Vec<Conn>,
    /// What the initiator must receive: the replies, translated back.
    a_expect: Vec<Conn>,
}

fn tables(cfg: &ConnTrialConfig, opened: Opened, learned: &[(u64, Tuple)]) -> Result<Tables> {
    let n = cfg.connections;
    let mut by_index: Vec<Option<Tuple>> = vec![None; n as usize];
    for (k, t) in learned {
        if let Some(slot) = by_index.get_mut(*k as usize) {
            *slot = Some(*t);
        }
    }
    let (ia, ra) = (
        v4(cfg.addr(&cfg.initiator)?)?,
        v4(cfg.addr(&cfg.responder)?)?,
    );
    let mut t = Tables {
        a_send: Vec::with_capacity(n as usize),
        b_expect: Vec::with_capacity(n as usize),
        b_send: Vec::with_capacity(n as usize),
        a_expect: Vec::with_capacity(n as usize),
    };
    for (k, l) in by_index.iter().enumerate() {
        let l = l.ok_or_else(|| {
            Error::Config(format!(
                "connection {k} was not learned: the load needs all {n}"
            ))
        })?;
        let (sport, dport) = opened.ports(k as u64);
        t.a_send.push(Conn {
            src_addr: ia,
            dst_addr: ra,
            src_port: sport,
            dst_port: dport,
        });
        let (ls, ld) = (v4(l.src)?, v4(l.dst)?);
        t.b_expect.push(Conn {
            src_addr: ls,
            dst_addr: ld,
            src_port: l.src_port,
            dst_port: l.dst_port,
        });
        t.b_send.push(Conn {
            src_addr: ld,
            dst_addr: ls,
            src_port: l.dst_port,
            dst_port: l.src_port,
        });
        t.a_expect.push(Conn {
            src_addr: ra,
            dst_addr: ia,
            src_port: dport,
            dst_port: sport,
        });
    }
    Ok(t)
}

/// One direction's stream: the base frame is connection 0's; the program writes each
/// connection's addresses and ports over it.
fn stream(
    cfg: &ConnTrialConfig,
    id: u16,
    first: &Conn,
    load: &LoadPhase,
    frames: u64,
) -> Result<StreamConfig> {
    let mut spec = StreamSpec::new(EncapSpec::plain(IpVersion::V4));
    spec.stream_id = id;
    spec.src_ip = std::net::Ipv4Addr::from(first.src_addr).into();
    spec.dst_ip = std::net::Ipv4Addr::from(first.dst_addr).into();
    spec.src_port = first.src_port;
    spec.dst_port = first.dst_port;
    let t = FrameTemplate::new(&spec, cfg.frame_size)
        .map_err(|e| Error::Config(format!("frame size {}: {e}", cfg.frame_size)))?;
    let mut s = StreamConfig::single(id, t, Rate::Pps(load.pps), Limit::Frames(frames));
    s.flows = Flows::default();
    Ok(s)
}

/// The sender's report as the load's [`PhaseTx`], and the frames the program processed (sent
/// or refused: the indices the connections were cycled through).
pub(super) fn phase(r: &TxPortReport, pps: Pps) -> (PhaseTx, u64, u64) {
    let Some(s) = r.streams.first() else {
        return (PhaseTx::default(), 0, 0);
    };
    let tx = PhaseTx {
        sent: s.sent,
        intended_pps: s.intended_pps,
        achieved_pps: s.achieved_pps,
        // The largest debt, in frames, as time behind the schedule.
        max_late_ns: (s.max_debt as f64 / pps.0 * 1e9) as u64,
        first_tx_ns: s.first_tx_ns,
        last_tx_ns: s.last_tx_ns,
        refused_by_peer: s.refused_by_peer,
    };
    (tx, s.sent + r.abandoned, s.refused_by_peer)
}

/// Runs the load on XDP (see the module's documentation).
pub(super) fn run(
    cfg: &ConnTrialConfig,
    load: LoadPhase,
    opened: Opened,
    learned: &[(u64, Tuple)],
    stop: &AtomicBool,
) -> std::result::Result<LoadReport, XdpLoadError> {
    use XdpLoadError::{AfterStart, BeforeStart};
    let t = tables(cfg, opened, learned).map_err(BeforeStart)?;
    let frames = load.frames();
    let a_cfg =
        stream(cfg, PRELIMINARY_STREAM, &t.a_send[0], &load, frames).map_err(BeforeStart)?;
    let b_cfg = stream(cfg, VALIDATION_STREAM, &t.b_send[0], &load, frames).map_err(BeforeStart)?;
    let (a_hop, b_hop) = (
        cfg.next_hop(&cfg.initiator).map_err(BeforeStart)?,
        cfg.next_hop(&cfg.responder).map_err(BeforeStart)?,
    );
    let a_rx = ConnReceiver::attach(&cfg.initiator, VALIDATION_STREAM, &t.a_expect)
        .map_err(BeforeStart)?;
    let b_rx = ConnReceiver::attach(&cfg.responder, PRELIMINARY_STREAM, &t.b_expect)
        .map_err(BeforeStart)?;
    let rx_stop = AtomicBool::new(false);
    let start_ns = AtomicU64::new(0);
    let timeout = cfg.resolve_timeout;
    // Both senders run on the tester's CPU(s): one `BPF_PROG_RUN` call at a time ([`Turns`]),
    // so that neither waits a scheduler slice for the other.
    let turns = Turns::new(2);
    let want = super::priority::wish();

    std::thread::scope(|sc| {
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<()>>();
        // The control sockets: answer ARP, and count (by the same rule) any test frame that
        // got past the programs.
        let a_expect = &t.a_expect;
        let a_ctl = spawn_receiver(
            sc,
            cfg.initiator.clone(),
            VALIDATION_STREAM,
            Box::new(move |k: u64, got: &Tuple| a_expect.get(k as usize).map(|w| tuple_is(got, w))),
            ready_tx.clone(),
            &rx_stop,
        );
        let b_expect = &t.b_expect;
        let b_ctl = spawn_receiver(
            sc,
            cfg.responder.clone(),
            PRELIMINARY_STREAM,
            Box::new(move |k: u64, got: &Tuple| b_expect.get(k as usize).map(|w| tuple_is(got, w))),
            ready_tx.clone(),
            &rx_stop,
        );
        let turns = &turns;
        let spawn_tx = |who: &'static str,
                        party: usize,
                        spec: &crate::port::PortSpec,
                        hop: std::net::IpAddr,
                        scfg: &StreamConfig,
                        conns: &[Conn]| {
            let ready = ready_tx.clone();
            let (spec, scfg, start_ns) = (spec.clone(), scfg.clone(), &start_ns);
            let conns = conns.to_vec();
            sc.spawn(move || -> Result<Option<(TxPortReport, SenderPriority)>> {
                let setup = (|| {
                    let ifindex = spec.enter(0)?;
                    let (_sock, me, dut) = open_sender(&spec, ifindex, hop, timeout)?;
                    let mut gen = FrameGen::new(&scfg)?;
                    gen.set_macs(dut, me.mac);
                    let gens = vec![(gen, &scfg)];
                    let sender = crate::xdp::tx::open_with_conns(&spec, ifindex, &gens, &conns)?;
                    Ok((sender, gens))
                })();
                let (mut sender, gens) = announce(&ready, who, setup)?;
                // After `enter` (nice −10): this thread's turn must not wait for other work
                // on the tester CPU (super::priority).
                let got = super::priority::raise(want);
                let start = wait_start(start_ns);
                if start == u64::MAX {
                    return Ok(None);
                }
                crate::xdp::tx::run_taking_turns(
                    &mut sender,
                    gens,
                    start,
                    stop,
                    Some((turns, party)),
                )
                .map(|r| Some((r, got)))
            })
        };
        let a_tx = spawn_tx(
            "XDP load sender A",
            0,
            &cfg.initiator,
            a_hop,
            &a_cfg,
            &t.a_send,
        );
        let b_tx = spawn_tx(
            "XDP load sender B",
            1,
            &cfg.responder,
            b_hop,
            &b_cfg,
            &t.b_send,
        );
        drop(ready_tx);
        let abort = |e: Error| {
            rx_stop.store(true, Ordering::Relaxed);
            start_ns.store(u64::MAX, Ordering::Release);
            e
        };
        for _ in 0..4 {
            match ready_rx.recv_timeout(timeout + Duration::from_secs(10)) {
                Ok(Ok(())) => {}
                Ok(Err(e)) => return Err(BeforeStart(abort(e))),
                Err(_) => {
                    return Err(BeforeStart(abort(Error::Timeout(
                        "a port did not get ready".into(),
                    ))))
                }
            }
        }
        start_ns.store(crate::sys::monotonic_ns() + 20_000_000, Ordering::Release);
        type Sent = Result<Option<(TxPortReport, SenderPriority)>>;
        let join = |h: std::thread::ScopedJoinHandle<'_, Sent>, what: &str| match h.join() {
            Ok(Ok(Some(r))) => Ok(r),
            Ok(Ok(None)) => Err(Error::Thread(format!("{what} did not start"))),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(Error::Thread(format!("{what} panicked"))),
        };
        let a_rep = join(a_tx, "XDP load sender A");
        let b_rep = join(b_tx, "XDP load sender B");
        std::thread::sleep(cfg.drain);
        rx_stop.store(true, Ordering::Relaxed);
        let ((a_rep, a_prio), (b_rep, b_prio)) =
            (a_rep.map_err(AfterStart)?, b_rep.map_err(AfterStart)?);
        let sender_priority = super::priority::weaker(a_prio, b_prio);
        let ctl = |h: std::thread::ScopedJoinHandle<'_, Result<(Count, u64)>>| match h.join() {
            Ok(r) => r,
            Err(_) => Err(Error::Thread("load control socket panicked".into())),
        };
        let (a_leak, a_drops) = ctl(a_ctl).map_err(AfterStart)?;
        let (b_leak, b_drops) = ctl(b_ctl).map_err(AfterStart)?;
        let (a_tot, b_tot) = (
            a_rx.totals().map_err(AfterStart)?,
            b_rx.totals().map_err(AfterStart)?,
        );
        let (fwd, fwd_cycled, fwd_refused) = phase(&a_rep, load.pps);
        let (rev, rev_cycled, rev_refused) = phase(&b_rep, load.pps);
        let b_per = b_rx.per_connection().map_err(AfterStart)?;
        let a_per = a_rx.per_connection().map_err(AfterStart)?;
        let modes: Vec<String> = [&a_rx, &b_rx]
            .iter()
            .filter_map(|r| r.mode_note().map(str::to_string))
            .collect();
        Ok(LoadReport {
            forward: fwd,
            forward_received: b_tot.received + b_leak.received,
            forward_misdirected: b_tot.misdirected + b_tot.out_of_range + b_leak.misdirected,
            reverse: rev,
            reverse_received: a_tot.received + a_leak.received,
            reverse_misdirected: a_tot.misdirected + a_tot.out_of_range + a_leak.misdirected,
            rx_ring_drops: a_drops + b_drops,
            engine: LoadEngine::Xdp,
            note: if modes.is_empty() {
                String::new()
            } else {
                modes.join("; ")
            },
            refused_by_dut: fwd_refused + rev_refused,
            sender_priority: Some(sender_priority),
            forward_short_connections: Some(short_connections(&b_per, fwd_cycled).0),
            reverse_short_connections: Some(short_connections(&a_per, rev_cycled).0),
            forward_per_connection: load.keep_per_connection.then_some(b_per),
            reverse_per_connection: load.keep_per_connection.then_some(a_per),
        })
    })
}

fn tuple_is(got: &Tuple, want: &Conn) -> bool {
    matches!((got.src, got.dst), (std::net::IpAddr::V4(s), std::net::IpAddr::V4(d))
        if u32::from(s) == want.src_addr && u32::from(d) == want.dst_addr)
        && got.src_port == want.src_port
        && got.dst_port == want.dst_port
}
