//! ARP (RFC 826) and IPv6 neighbour discovery (RFC 4861) for a port: answer requests for our
//! own addresses, and resolve the next hop's MAC address ourselves before sending — no MAC
//! address is ever hard-coded.
//!
//! Messages are parsed and built with `wire`'s views and representations (`wire::arp`,
//! `wire::icmpv6`, `wire::ipv6`, `wire::ethernet`). ND is recognised on plain Ethernet only
//! (no VLAN tag, no IPv6 extension header), with a verified ICMPv6 checksum.

use crate::sys::PacketSocket;
use crate::{Error, Result};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};
use wire::arp::{ArpOperation, ArpPacket, ArpRepr};
use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::icmpv6::{
    solicited_node_mac, solicited_node_multicast, Icmpv6Packet, NdiscRepr, NeighborFlags,
};
use wire::ipv6::{Ipv6Packet, Ipv6Repr, NEXT_HEADER_ICMPV6};

/// The addresses a port answers for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub mac: [u8; 6],
    pub ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
}

/// ARP frames are padded to the 60-byte Ethernet minimum (without FCS).
const ARP_FRAME_LEN: usize = 60;
/// Hop limit of every ND message (RFC 4861 §7.1).
const ND_HOP_LIMIT: u8 = 255;

/// An Ethernet frame of `len` bytes with its header written; the payload is zero.
fn ethernet(dst: MacAddr, src: MacAddr, ethertype: EtherType, len: usize) -> wire::Result<Vec<u8>> {
    let mut f = vec![0u8; len];
    EthernetRepr {
        src,
        dst,
        ethertype,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]))?;
    Ok(f)
}

/// An ARP message in an Ethernet frame to `eth_dst`, from the message's source MAC.
fn arp_frame(arp: &ArpRepr, eth_dst: MacAddr) -> wire::Result<Vec<u8>> {
    let mut f = ethernet(eth_dst, arp.source_mac, EtherType::ARP, ARP_FRAME_LEN)?;
    arp.emit(&mut ArpPacket::new_unchecked(
        &mut f[wire::ethernet::HEADER_LEN..],
    ))?;
    Ok(f)
}

/// An ND message in an IPv6 packet (hop limit 255) in an Ethernet frame, checksum filled.
fn nd_frame(
    eth_dst: MacAddr,
    eth_src: MacAddr,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    nd: &NdiscRepr,
) -> wire::Result<Vec<u8>> {
    let icmp_at = wire::ethernet::HEADER_LEN + wire::ipv6::HEADER_LEN;
    let mut f = ethernet(eth_dst, eth_src, EtherType::IPV6, icmp_at + nd.buffer_len())?;
    Ipv6Repr {
        src,
        dst,
        next_header: NEXT_HEADER_ICMPV6,
        payload_len: nd.buffer_len(),
        hop_limit: ND_HOP_LIMIT,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut Ipv6Packet::new_unchecked(
        &mut f[wire::ethernet::HEADER_LEN..icmp_at],
    ))?;
    let mut icmp = Icmpv6Packet::new_unchecked(&mut f[icmp_at..]);
    nd.emit(&mut icmp)?;
    icmp.fill_checksum(src, dst);
    Ok(f)
}

/// An ARP request for `target`, broadcast.
pub fn arp_request(me: [u8; 6], my_ip: Ipv4Addr, target: Ipv4Addr) -> wire::Result<Vec<u8>> {
    let req = ArpRepr {
        operation: ArpOperation::Request,
        source_mac: MacAddr(me),
        source_ip: my_ip,
        target_mac: MacAddr::ZERO,
        target_ip: target,
    };
    arp_frame(&req, MacAddr::BROADCAST)
}

/// A neighbour solicitation for `target`, to its solicited-node multicast group.
pub fn neighbor_solicitation(
    me: [u8; 6],
    my_ip: Ipv6Addr,
    target: Ipv6Addr,
) -> wire::Result<Vec<u8>> {
    let ns = NdiscRepr::NeighborSolicit {
        target,
        source_lladdr: Some(MacAddr(me)),
    };
    nd_frame(
        solicited_node_mac(target),
        MacAddr(me),
        my_ip,
        solicited_node_multicast(target),
        &ns,
    )
}

/// The ARP message in `frame`, if it is a well-formed Ethernet/IPv4 one.
fn parse_arp(frame: &[u8]) -> Option<ArpRepr> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::ARP {
        return None;
    }
    ArpRepr::parse(&ArpPacket::new_checked(eth.payload()).ok()?).ok()
}

/// An ND message in `frame` (plain Ethernet, no extension headers, checksum verified):
/// (Ethernet source, IPv6 source, the message).
fn parse_nd(frame: &[u8]) -> Option<(MacAddr, Ipv6Addr, NdiscRepr)> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EtherType::IPV6 {
        return None;
    }
    let ip = Ipv6Packet::new_checked(eth.payload()).ok()?;
    let repr = Ipv6Repr::parse(&ip).ok()?;
    if repr.next_header != NEXT_HEADER_ICMPV6 {
        return None;
    }
    let icmp = Icmpv6Packet::new_checked(ip.payload()).ok()?;
    let nd = NdiscRepr::parse(&icmp).ok()?;
    if !icmp.verify_checksum(repr.src, repr.dst) {
        return None;
    }
    Some((eth.src_addr(), repr.src, nd))
}

/// If `frame` asks for one of `me`'s addresses (ARP request, NS), the reply to send.
pub fn answer(frame: &[u8], me: &Identity) -> Option<Vec<u8>> {
    if let Some(req) = parse_arp(frame) {
        if req.operation != ArpOperation::Request || Some(req.target_ip) != me.ipv4 {
            return None;
        }
        let reply = ArpRepr {
            operation: ArpOperation::Reply,
            source_mac: MacAddr(me.mac),
            source_ip: req.target_ip,
            target_mac: req.source_mac,
            target_ip: req.source_ip,
        };
        return arp_frame(&reply, req.source_mac).ok();
    }
    let (eth_src, src, nd) = parse_nd(frame)?;
    let NdiscRepr::NeighborSolicit {
        target,
        source_lladdr,
    } = nd
    else {
        return None;
    };
    if Some(target) != me.ipv6 || src.is_unspecified() {
        return None;
    }
    let na = NdiscRepr::NeighborAdvert {
        flags: NeighborFlags {
            router: false,
            solicited: true,
            override_flag: true,
        },
        target,
        target_lladdr: Some(MacAddr(me.mac)),
    };
    nd_frame(
        source_lladdr.unwrap_or(eth_src),
        MacAddr(me.mac),
        target,
        src,
        &na,
    )
    .ok()
}

/// If `frame` tells `target`'s MAC (ARP reply or request from it, NA for it), that MAC.
pub fn learn(frame: &[u8], target: IpAddr) -> Option<[u8; 6]> {
    match target {
        IpAddr::V4(t) => {
            let a = parse_arp(frame)?;
            (a.source_ip == t).then_some(a.source_mac.0)
        }
        IpAddr::V6(t) => match parse_nd(frame)? {
            (
                eth_src,
                _,
                NdiscRepr::NeighborAdvert {
                    target,
                    target_lladdr,
                    ..
                },
            ) if target == t => Some(target_lladdr.unwrap_or(eth_src).0),
            _ => None,
        },
    }
}

/// Whether `frame` is `target`'s answer to a request: an ARP reply from it, or a Neighbor
/// Advertisement for it. Stricter than [`learn`], which takes the target's own ARP requests
/// too: the LAN watch (`crate::lan_watch`) asks whether the target answers *our* requests,
/// and a gateway whose link comes back up may ask for us before it has heard any.
pub fn is_reply_from(frame: &[u8], target: IpAddr) -> bool {
    match target {
        IpAddr::V4(t) => {
            parse_arp(frame).is_some_and(|a| a.operation == ArpOperation::Reply && a.source_ip == t)
        }
        IpAddr::V6(_) => learn(frame, target).is_some(),
    }
}

/// How often a request is repeated while no answer arrives.
const REQUEST_INTERVAL: Duration = Duration::from_millis(200);

/// How soon a request the port dropped (`ENOBUFS`) is tried again.
const DROPPED_RETRY: Duration = Duration::from_millis(20);

/// Resolves `target`'s MAC on `sock`: sends a request every 200 ms until a reply arrives or
/// `timeout` passes. Requests from others for our own addresses are answered meanwhile.
///
/// A request the port drops on hand-over (`ENOBUFS`: with the qdisc bypassed, a veth whose
/// peer has no carrier yet or whose receive ring is full) is a lost request, like one lost on
/// a wire: it is sent again 20 ms later instead of failing the trial. On a loaded machine a
/// lab link can be down for a moment just after it was switched, and the trial then failed
/// with "sending ARP/ND request: No buffer space available".
pub fn resolve(
    sock: &PacketSocket,
    me: &Identity,
    target: IpAddr,
    timeout: Duration,
) -> Result<[u8; 6]> {
    let request = match target {
        IpAddr::V4(t) => {
            let ip = me.ipv4.ok_or_else(|| {
                Error::Config(format!("resolving {t} needs an IPv4 address on the port"))
            })?;
            arp_request(me.mac, ip, t)
        }
        IpAddr::V6(t) => {
            let ip = me.ipv6.ok_or_else(|| {
                Error::Config(format!("resolving {t} needs an IPv6 address on the port"))
            })?;
            neighbor_solicitation(me.mac, ip, t)
        }
    }
    .map_err(|e| Error::Config(format!("cannot build the ARP/ND request for {target}: {e}")))?;
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; 2048];
    let mut next_send = Instant::now();
    let (mut sent, mut dropped) = (0u32, 0u32);
    loop {
        let now = Instant::now();
        if now >= deadline {
            let drops = match dropped {
                0 => String::new(),
                d => format!(
                    " ({d} of {} requests were dropped by the port itself: its link is down or its peer's queue is full)",
                    sent + d
                ),
            };
            return Err(Error::Timeout(format!(
                "no ARP/ND answer from next hop {target} within {timeout:?}{drops}"
            )));
        }
        if now >= next_send {
            match sock.send_frame(&request) {
                Ok(true) => {
                    sent += 1;
                    next_send = now + REQUEST_INTERVAL;
                }
                // The socket's buffer is full for a moment: not sent, so not lost either.
                Ok(false) => next_send = now + DROPPED_RETRY,
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {
                    dropped += 1;
                    next_send = now + DROPPED_RETRY;
                }
                Err(e) => return Err(Error::io("sending ARP/ND request", e)),
            }
        }
        let wait = next_send.min(deadline).saturating_duration_since(now);
        sock.poll_readable(wait.as_millis().max(1) as i32)
            .map_err(|e| Error::io("poll", e))?;
        while let Some(n) = sock
            .recv_frame(&mut buf)
            .map_err(|e| Error::io("recv", e))?
        {
            let f = &buf[..n];
            if let Some(mac) = learn(f, target) {
                return Ok(mac);
            }
            if let Some(reply) = answer(f, me) {
                let _ = sock.send_frame(&reply);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: [u8; 6] = [2, 0, 0, 0, 0, 0xa];
    const B: [u8; 6] = [2, 0, 0, 0, 0, 0xb];

    #[test]
    fn arp_request_answer_learn() {
        let a_ip = Ipv4Addr::new(192, 0, 2, 2);
        let b_ip = Ipv4Addr::new(192, 0, 2, 1);
        let req = arp_request(A, a_ip, b_ip).unwrap();
        assert_eq!(req.len(), 60);
        assert_eq!(&req[0..6], &[0xff; 6]);
        let b = Identity {
            mac: B,
            ipv4: Some(b_ip),
            ipv6: None,
        };
        let reply = answer(&req, &b).expect("B answers");
        assert_eq!(&reply[0..6], &A);
        assert_eq!(&reply[20..22], &[0, 2]);
        assert_eq!(learn(&reply, IpAddr::V4(b_ip)), Some(B));
        assert!(is_reply_from(&reply, IpAddr::V4(b_ip)));
        // B's own request tells its MAC but answers nothing.
        let asks = arp_request(B, b_ip, a_ip).unwrap();
        assert_eq!(learn(&asks, IpAddr::V4(b_ip)), Some(B));
        assert!(!is_reply_from(&asks, IpAddr::V4(b_ip)));
        // Nobody else answers, and a reply is not answered.
        let other = Identity {
            mac: B,
            ipv4: Some(Ipv4Addr::new(192, 0, 2, 9)),
            ipv6: None,
        };
        assert!(answer(&req, &other).is_none());
        assert!(answer(&reply, &b).is_none());
        assert_eq!(learn(&reply, IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9))), None);
    }

    #[test]
    fn ndisc_solicit_advertise_learn() {
        let a_ip: Ipv6Addr = "2001:db8:1::2".parse().unwrap();
        let b_ip: Ipv6Addr = "2001:db8:1::1".parse().unwrap();
        let ns = neighbor_solicitation(A, a_ip, b_ip).unwrap();
        assert_eq!(&ns[0..6], &[0x33, 0x33, 0xff, 0, 0, 1]);
        assert!(parse_nd(&ns).is_some(), "checksum verifies");
        let b = Identity {
            mac: B,
            ipv4: None,
            ipv6: Some(b_ip),
        };
        let na = answer(&ns, &b).expect("B advertises");
        assert_eq!(&na[0..6], &A);
        assert_eq!(learn(&na, IpAddr::V6(b_ip)), Some(B));
        let mut bad = na.clone();
        let last = bad.len() - 1;
        bad[last] ^= 1;
        assert_eq!(
            learn(&bad, IpAddr::V6(b_ip)),
            None,
            "bad checksum is ignored"
        );
    }
}
