//! The LAN health watch (#35 item 5): while a trial runs, a thread in the port's namespace
//! asks the gateway's address for its MAC at a fixed period — an ARP request for IPv4, a
//! Neighbor Solicitation for IPv6, from the port's own address — and notes which requests
//! were answered.
//!
//! Why ARP/ND and not ping: the gateway's kernel answers them even when its forwarding path
//! is saturated, and they need no address in the tester port's kernel (the engine's ports
//! have none; an ICMP echo would need one). The requests and the answers are `resolve`'s,
//! parsed with `wire`: the same frames that found the gateway's MAC before the first trial.
//!
//! A socket of its own with a classic BPF filter that lets only ARP and Neighbor
//! Advertisements in, so the trial's test frames never fill its queue. Time and gap
//! arithmetic are the caller's (`bench_model::results::LanWatch`); this module only logs.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::port::PortSpec;
use crate::resolve::{arp_request, is_reply_from, neighbor_solicitation};
use crate::sys::{PacketSocket, SockFilter, ETH_P_ALL};
use crate::{Error, Result};

/// One gateway address to ask, and the port's own address to ask from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchTarget {
    /// The port's own address (the request's sender address).
    pub from: IpAddr,
    /// The gateway address asked for.
    pub gateway: IpAddr,
}

/// One request as sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentProbe {
    /// Milliseconds after the watch started.
    pub sent_ms: u64,
    /// The gateway answered before the next request to it went out (or, for the last one,
    /// within a period after the watch was told to stop).
    pub answered: bool,
}

/// What the watch saw of one gateway address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GatewayLog {
    pub target: WatchTarget,
    pub probes: Vec<SentProbe>,
}

/// The whole watch of one port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchLog {
    /// When the watch started, Unix milliseconds.
    pub start_unix_ms: u64,
    /// When it was told to stop, milliseconds after it started.
    pub end_ms: u64,
    /// One log per target, in the order given.
    pub gateways: Vec<GatewayLog>,
}

/// A running watch; [`NeighborWatch::finish`] stops it and hands its log back. Dropping it
/// stops it too.
pub struct NeighborWatch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<WatchLog>>>,
}

/// The longest the watch thread sleeps in one poll: how late it notices it should stop.
const POLL_SLICE: Duration = Duration::from_millis(20);

/// Lets in ARP (any) and ICMPv6 type 136 (Neighbor Advertisement) directly after a plain
/// IPv6 header; everything else stays out of the socket's queue.
fn arp_and_na_filter() -> [SockFilter; 9] {
    const LDH_ABS: u16 = 0x28; // BPF_LD | BPF_H | BPF_ABS
    const LDB_ABS: u16 = 0x30; // BPF_LD | BPF_B | BPF_ABS
    const JEQ_K: u16 = 0x15; // BPF_JMP | BPF_JEQ | BPF_K
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    let op = |code, jt, jf, k| SockFilter { code, jt, jf, k };
    [
        op(LDH_ABS, 0, 0, 12),        // 0: ethertype
        op(JEQ_K, 5, 0, 0x0806),      // 1: ARP → accept (7)
        op(JEQ_K, 0, 5, 0x86dd),      // 2: not IPv6 → drop (8)
        op(LDB_ABS, 0, 0, 14 + 6),    // 3: next header
        op(JEQ_K, 0, 3, 58),          // 4: not ICMPv6 → drop
        op(LDB_ABS, 0, 0, 14 + 40),   // 5: ICMPv6 type
        op(JEQ_K, 0, 1, 136),         // 6: not an NA → drop
        op(RET_K, 0, 0, 0x0004_0000), // 7: accept
        op(RET_K, 0, 0, 0),           // 8: drop
    ]
}

fn since_ms(t0: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(t0).as_millis() as u64
}

impl NeighborWatch {
    /// Starts asking each of `targets` every `period` from `port` (inside its namespace).
    /// Returns once the socket is open, or the reason it could not be.
    pub fn start(
        port: &PortSpec,
        targets: &[WatchTarget],
        period: Duration,
    ) -> Result<NeighborWatch> {
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<()>>(1);
        // Only the port's interface and namespace: the watch takes none of the trial's CPUs.
        let spec = PortSpec {
            cpus: Vec::new(),
            ..port.clone()
        };
        let targets = targets.to_vec();
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name(format!("lan-watch-{}", port.name))
            .spawn(move || {
                let sock = match open(&spec) {
                    Ok(s) => {
                        let _ = ready_tx.send(Ok(()));
                        s
                    }
                    Err(e) => {
                        let msg = e.to_string();
                        let _ = ready_tx.send(Err(e));
                        return Err(Error::Thread(msg));
                    }
                };
                watch(&sock.0, sock.1, &targets, period, &flag)
            })
            .map_err(|e| Error::io("starting the LAN watch thread", e))?;
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(NeighborWatch {
                stop,
                thread: Some(thread),
            }),
            Ok(Err(e)) => {
                let _ = thread.join();
                Err(e)
            }
            Err(_) => {
                let _ = thread.join();
                Err(Error::Thread(
                    "the LAN watch thread ended before it started".into(),
                ))
            }
        }
    }

    /// Stops the watch (within [`POLL_SLICE`], plus up to one period for the last request's
    /// answer) and returns what it saw.
    pub fn finish(mut self) -> Result<WatchLog> {
        self.stop.store(true, Ordering::SeqCst);
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(Error::Thread("the LAN watch thread panicked".into())),
            None => Err(Error::Thread("the LAN watch was already finished".into())),
        }
    }
}

impl Drop for NeighborWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Enters the port's namespace and opens the filtered socket; returns it with the port's MAC.
fn open(spec: &PortSpec) -> Result<(PacketSocket, [u8; 6])> {
    let ifindex = spec.enter(0)?;
    let sock = PacketSocket::open(ifindex, ETH_P_ALL).map_err(|e| {
        Error::io(
            format!("AF_PACKET socket on {} (are you root?)", spec.ifname),
            e,
        )
    })?;
    sock.attach_filter(&arp_and_na_filter())
        .map_err(|e| Error::io("SO_ATTACH_FILTER", e))?;
    // Our own requests are not answers; the kernel keeps them out where it can.
    let _ = sock.set_ignore_outgoing(true);
    let mac = sock.hw_addr().map_err(|e| Error::io("interface MAC", e))?;
    // Frames queued before the filter was attached are dropped unread.
    let mut buf = [0u8; 2048];
    while let Ok(Some(_)) = sock.recv_frame(&mut buf) {}
    Ok((sock, mac))
}

/// The request that asks for `t.gateway` from `t.from`.
fn request(mac: [u8; 6], t: &WatchTarget) -> Result<Vec<u8>> {
    let frame = match (t.from, t.gateway) {
        (IpAddr::V4(a), IpAddr::V4(g)) => arp_request(mac, a, g),
        (IpAddr::V6(a), IpAddr::V6(g)) => neighbor_solicitation(mac, a, g),
        _ => {
            return Err(Error::Config(format!(
                "LAN watch: {} and {} are not of one IP version",
                t.from, t.gateway
            )))
        }
    };
    frame.map_err(|e| Error::Config(format!("LAN watch request for {}: {e}", t.gateway)))
}

/// The watch loop: a request to each target every `period` until `stop`, then up to one
/// period more for the last requests' answers. A reply (an ARP reply or NA from the
/// gateway's address, not its own requests) answers the latest request to that address (ARP
/// and ND carry no request id). A request the port could not send counts as
/// sent and unanswered: the watch asks whether the gateway could be reached at all.
fn watch(
    sock: &PacketSocket,
    mac: [u8; 6],
    targets: &[WatchTarget],
    period: Duration,
    stop: &AtomicBool,
) -> Result<WatchLog> {
    let requests: Vec<Vec<u8>> = targets
        .iter()
        .map(|t| request(mac, t))
        .collect::<Result<_>>()?;
    let start_unix_ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let t0 = Instant::now();
    let mut logs: Vec<GatewayLog> = targets
        .iter()
        .map(|&target| GatewayLog {
            target,
            probes: Vec::new(),
        })
        .collect();
    let mut next = t0;
    let mut ended: Option<Instant> = None;
    let mut buf = vec![0u8; 2048];
    loop {
        let now = Instant::now();
        if ended.is_none() && stop.load(Ordering::SeqCst) {
            ended = Some(now);
        }
        match ended {
            Some(end) => {
                let pending = logs
                    .iter()
                    .any(|l| l.probes.last().is_some_and(|p| !p.answered));
                if !pending || now >= end + period {
                    break;
                }
            }
            None if now >= next => {
                for (log, req) in logs.iter_mut().zip(&requests) {
                    let _ = sock.send_frame(req);
                    log.probes.push(SentProbe {
                        sent_ms: since_ms(t0, now),
                        answered: false,
                    });
                }
                next += period;
                // A thread the machine kept waiting does not catch up with a burst.
                if next <= now {
                    next = now + period;
                }
            }
            None => {}
        }
        let wait = match ended {
            Some(_) => POLL_SLICE,
            None => next.saturating_duration_since(now).min(POLL_SLICE),
        };
        sock.poll_readable(wait.as_millis().max(1) as i32)
            .map_err(|e| Error::io("poll", e))?;
        while let Some(n) = sock
            .recv_frame(&mut buf)
            .map_err(|e| Error::io("recv", e))?
        {
            for log in &mut logs {
                if is_reply_from(&buf[..n], log.target.gateway) {
                    if let Some(p) = log.probes.last_mut() {
                        p.answered = true;
                    }
                }
            }
        }
    }
    Ok(WatchLog {
        start_unix_ms,
        end_ms: since_ms(t0, ended.unwrap_or_else(Instant::now)),
        gateways: logs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the filter program over `frame` the way the kernel does for these instructions.
    fn accepts(frame: &[u8]) -> bool {
        let prog = arp_and_na_filter();
        let (mut pc, mut a) = (0usize, 0u32);
        loop {
            let i = prog[pc];
            match i.code {
                0x28 => {
                    let k = i.k as usize;
                    match frame.get(k..k + 2) {
                        Some(b) => a = u32::from(u16::from_be_bytes([b[0], b[1]])),
                        None => return false,
                    }
                }
                0x30 => match frame.get(i.k as usize) {
                    Some(&b) => a = u32::from(b),
                    None => return false,
                },
                0x15 => {
                    pc += usize::from(if a == i.k { i.jt } else { i.jf });
                }
                0x06 => return i.k > 0,
                c => panic!("opcode {c:#x}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn the_filter_lets_in_arp_and_neighbor_advertisements_only() {
        let me = [2, 0, 0, 0, 0, 0xa];
        let gw = [2, 0, 0, 0, 0, 0xb];
        let arp = arp_request(
            me,
            "192.0.2.2".parse().unwrap(),
            "192.0.2.1".parse().unwrap(),
        )
        .unwrap();
        assert!(accepts(&arp));
        let gw6: std::net::Ipv6Addr = "2001:db8:1::1".parse().unwrap();
        let ns = neighbor_solicitation(me, "2001:db8:1::2".parse().unwrap(), gw6).unwrap();
        assert!(!accepts(&ns), "a solicitation is not an answer");
        let na = crate::resolve::answer(
            &ns,
            &crate::resolve::Identity {
                mac: gw,
                ipv4: None,
                ipv6: Some(gw6),
            },
        )
        .unwrap();
        assert!(accepts(&na));
        // A test frame (IPv4/UDP) and a short frame stay out.
        let mut udp = vec![0u8; 64];
        udp[12..14].copy_from_slice(&[0x08, 0x00]);
        assert!(!accepts(&udp));
        assert!(!accepts(&[0u8; 10]));
    }

    #[test]
    fn a_request_needs_one_ip_version() {
        let t = WatchTarget {
            from: "192.0.2.2".parse().unwrap(),
            gateway: "2001:db8::1".parse().unwrap(),
        };
        assert!(request([2, 0, 0, 0, 0, 1], &t).is_err());
    }
}
