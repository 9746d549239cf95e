//! A kernel-facing data path for a control plane that terminates IP: a TUN device.
//!
//! A PPPoE access concentrator or client, a DS-Lite AFTR or B4 decapsulates IP packets; with a
//! [`Tun`] the control loop ([`crate::control::ControlPort::step_relay`]) writes them into a TUN
//! device in a namespace of the caller's choosing and encapsulates what the kernel routes back
//! into the device. A normal kernel stack (iperf3, ping, a router namespace with nftables) then
//! sits behind the emulated session or softwire.
//!
//! As packets pass, client SYNs (SYN without ACK) are read for their MSS option
//! ([`SynSeen`]): what a gateway's MSS clamp let through, seen where the ISP sees it.

use std::fs::File;
use std::net::IpAddr;

use wire::ipv4::Ipv4Packet;
use wire::ipv6::Ipv6Packet;
use wire::tcp::{TcpOption, TcpPacket};

use crate::sys::tun::TunFd;
use crate::{Error, Result};

/// What a machine that terminates IP offers a hand-off, and why it refuses a packet: defined
/// beside the machines (`emulate`), implemented there for the PPPoE server and client, the
/// AFTR and the B4.
pub use emulate::control_plane::{IpRelay, RelayDrop};

/// Which way a packet crossed the relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From a session or softwire into the TUN.
    Up,
    /// From the TUN into a session or softwire.
    Down,
}

/// A client SYN (SYN set, ACK clear) that crossed the relay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SynSeen {
    pub direction: Direction,
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_port: u16,
    pub dst_port: u16,
    /// The MSS option's value, `None` without one.
    pub mss: Option<u16>,
}

/// The SYN in an IPv4 or IPv6 packet (TCP directly after the fixed header), if it is a
/// client SYN. Never panics on any bytes.
pub fn client_syn(packet: &[u8], direction: Direction) -> Option<SynSeen> {
    let (src, dst, l4): (IpAddr, IpAddr, &[u8]) = match packet.first()? >> 4 {
        4 => {
            let p = Ipv4Packet::new_checked(packet).ok()?;
            if p.protocol() != 6 || p.frag_offset() != 0 {
                return None;
            }
            (p.src_addr().into(), p.dst_addr().into(), p.payload())
        }
        6 => {
            let p = Ipv6Packet::new_checked(packet).ok()?;
            if p.next_header() != wire::ipv6::NEXT_HEADER_TCP {
                return None;
            }
            (p.src_addr().into(), p.dst_addr().into(), p.payload())
        }
        _ => return None,
    };
    let t = TcpPacket::new_checked(l4).ok()?;
    if !t.syn() || t.ack() {
        return None;
    }
    let mss = t.options_iter().find_map(|o| match o {
        Ok(TcpOption::MaxSegmentSize(m)) => Some(m),
        _ => None,
    });
    Some(SynSeen {
        direction,
        src,
        dst,
        src_port: t.src_port(),
        dst_port: t.dst_port(),
        mss,
    })
}

/// Counts of a TUN hand-off.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RelayStats {
    /// Packets (and bytes) written into the TUN.
    pub up_packets: u64,
    pub up_bytes: u64,
    /// Packets the TUN would not take (its queue full): dropped, as a full link would.
    pub up_dropped: u64,
    /// Packets (and bytes) read from the TUN and encapsulated.
    pub down_packets: u64,
    pub down_bytes: u64,
    /// Packets read from the TUN and not encapsulated, by reason.
    pub down_dropped: std::collections::BTreeMap<RelayDrop, u64>,
    /// Client SYNs seen, both ways.
    pub syns: u64,
}

/// How many SYNs a [`Tun`] keeps until [`Tun::take_syns`] collects them.
pub const MAX_PENDING_SYNS: usize = 4096;

/// A TUN device and its counters. The device exists while this lives (it is not persistent),
/// so it disappears when it is dropped or the process ends, by whatever means.
#[derive(Debug)]
pub struct Tun {
    pub(crate) fd: TunFd,
    pub(crate) buf: Vec<u8>,
    pub(crate) out: Vec<Vec<u8>>,
    syns: Vec<SynSeen>,
    pub stats: RelayStats,
}

impl Tun {
    /// Creates TUN device `name` in namespace `netns` (a name under /run/netns or a path;
    /// `None`: the calling thread's), from a short-lived thread so that the caller's own
    /// namespace is untouched. The device is down and has no address: configure it with
    /// iproute2 (`lab::tun`).
    pub fn create(name: &str, netns: Option<&str>) -> Result<Tun> {
        let name2 = name.to_string();
        let ns = netns.map(|n| {
            if n.contains('/') {
                n.to_string()
            } else {
                format!("/run/netns/{n}")
            }
        });
        let fd = std::thread::spawn(move || -> Result<TunFd> {
            if let Some(path) = &ns {
                let f =
                    File::open(path).map_err(|e| Error::io(format!("opening netns {path}"), e))?;
                crate::sys::enter_netns(&f)
                    .map_err(|e| Error::io(format!("entering netns {path}"), e))?;
            }
            TunFd::create(&name2)
                .map_err(|e| Error::io(format!("creating TUN device {name2} (are you root?)"), e))
        })
        .join()
        .map_err(|_| Error::Thread("the TUN thread panicked".into()))??;
        Ok(Tun {
            fd,
            buf: vec![0; 65536],
            out: Vec::new(),
            syns: Vec::new(),
            stats: RelayStats::default(),
        })
    }

    pub fn name(&self) -> &str {
        self.fd.name()
    }

    /// The client SYNs seen since the last call, in order (at most [`MAX_PENDING_SYNS`]; the
    /// rest are only counted in `stats.syns`).
    pub fn take_syns(&mut self) -> Vec<SynSeen> {
        std::mem::take(&mut self.syns)
    }

    fn record(&mut self, s: SynSeen) {
        self.stats.syns += 1;
        if self.syns.len() < MAX_PENDING_SYNS {
            self.syns.push(s);
        }
    }

    /// Writes the packets the machine decapsulated into the device.
    pub(crate) fn hand_up<C: IpRelay + ?Sized>(&mut self, cp: &mut C) {
        let mut out = std::mem::take(&mut self.out);
        cp.take_ip(&mut out);
        for p in out.drain(..) {
            if let Some(s) = client_syn(&p, Direction::Up) {
                self.record(s);
            }
            match self.fd.write(&p) {
                Ok(true) => {
                    self.stats.up_packets += 1;
                    self.stats.up_bytes += p.len() as u64;
                }
                Ok(false) | Err(_) => self.stats.up_dropped += 1,
            }
        }
        self.out = out;
    }

    /// Reads at most `max` packets from the device and encapsulates them.
    pub(crate) fn hand_down<C: IpRelay + ?Sized>(&mut self, cp: &mut C, max: usize) -> Result<()> {
        for _ in 0..max {
            let n = match self.fd.read(&mut self.buf) {
                Ok(Some(n)) => n,
                Ok(None) => return Ok(()),
                Err(e) => return Err(Error::io(format!("reading TUN {}", self.fd.name()), e)),
            };
            if let Some(s) = client_syn(&self.buf[..n], Direction::Down) {
                self.record(s);
            }
            match cp.send_ip(crate::sys::machine_now(), &self.buf[..n]) {
                Ok(()) => {
                    self.stats.down_packets += 1;
                    self.stats.down_bytes += n as u64;
                }
                Err(r) => *self.stats.down_dropped.entry(r).or_default() += 1,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// IPv4 + TCP SYN from 192.0.2.2:40000 to 203.0.113.1:5201 with MSS `mss` (and a NOP,
    /// window scale after it), ACK clear unless `ack`.
    fn syn_v4(mss: u16, ack: bool) -> Vec<u8> {
        let mut p = vec![
            0x45, 0, 0, 52, 0, 1, 0x40, 0, 64, 6, 0, 0, 192, 0, 2, 2, 203, 0, 113, 1,
        ];
        let flags = if ack { 0x12 } else { 0x02 };
        p.extend_from_slice(&[0x9c, 0x40, 0x14, 0x51, 0, 0, 0, 1, 0, 0, 0, 0]);
        p.extend_from_slice(&[0x80, flags, 0xff, 0xff, 0, 0, 0, 0]);
        p.extend_from_slice(&[2, 4, (mss >> 8) as u8, mss as u8, 1, 3, 3, 7, 0, 0, 0, 0]);
        p
    }

    #[test]
    fn reads_the_mss_of_a_client_syn_only() {
        let s = client_syn(&syn_v4(1414, false), Direction::Up).expect("a SYN");
        assert_eq!(s.mss, Some(1414));
        assert_eq!((s.src_port, s.dst_port), (40000, 5201));
        assert_eq!(s.src, "192.0.2.2".parse::<IpAddr>().unwrap());
        assert_eq!(s.dst, "203.0.113.1".parse::<IpAddr>().unwrap());
        assert_eq!(
            client_syn(&syn_v4(1414, true), Direction::Up),
            None,
            "SYN-ACK"
        );
        // A SYN whose options area is broken before the MSS: seen, without an MSS.
        let mut broken = syn_v4(1414, false);
        broken[41] = 1;
        assert_eq!(client_syn(&broken, Direction::Up).unwrap().mss, None);
    }

    #[test]
    fn never_panics_on_truncated_packets() {
        let p = syn_v4(1200, false);
        for n in 0..p.len() {
            let _ = client_syn(&p[..n], Direction::Down);
        }
        for b in 0..=255u8 {
            let _ = client_syn(&[b; 60], Direction::Down);
        }
    }
}
