//! ARP (RFC 826) and IPv6 neighbour discovery (RFC 4861) for a port: answer requests for our
//! own addresses, and resolve the next hop's MAC address ourselves before sending — no MAC
//! address is ever hard-coded.
//!
//! Frames are built and parsed at the byte level here (ARP for Ethernet/IPv4, NS/NA with the
//! link-layer address options); checksums come from `wire::checksum`.

use crate::sys::PacketSocket;
use crate::{Error, Result};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::{Duration, Instant};
use wire::checksum;

/// The addresses a port answers for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub mac: [u8; 6],
    pub ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
}

const ETH_ARP: [u8; 2] = [0x08, 0x06];
const ETH_IPV6: [u8; 2] = [0x86, 0xdd];
const ICMPV6: u8 = 58;
const NS: u8 = 135;
const NA: u8 = 136;

fn eth(out: &mut Vec<u8>, dst: [u8; 6], src: [u8; 6], ethertype: [u8; 2]) {
    out.extend_from_slice(&dst);
    out.extend_from_slice(&src);
    out.extend_from_slice(&ethertype);
}

fn arp(
    op: u16,
    sha: [u8; 6],
    spa: Ipv4Addr,
    tha: [u8; 6],
    tpa: Ipv4Addr,
    eth_dst: [u8; 6],
) -> Vec<u8> {
    let mut f = Vec::with_capacity(60);
    eth(&mut f, eth_dst, sha, ETH_ARP);
    f.extend_from_slice(&[0, 1, 0x08, 0x00, 6, 4]);
    f.extend_from_slice(&op.to_be_bytes());
    f.extend_from_slice(&sha);
    f.extend_from_slice(&spa.octets());
    f.extend_from_slice(&tha);
    f.extend_from_slice(&tpa.octets());
    f.resize(60, 0);
    f
}

/// An ARP request for `target`, broadcast.
pub fn arp_request(me: [u8; 6], my_ip: Ipv4Addr, target: Ipv4Addr) -> Vec<u8> {
    arp(1, me, my_ip, [0; 6], target, [0xff; 6])
}

fn solicited_node(a: Ipv6Addr) -> (Ipv6Addr, [u8; 6]) {
    let o = a.octets();
    let ip = Ipv6Addr::new(
        0xff02,
        0,
        0,
        0,
        0,
        1,
        0xff00 | u16::from(o[13]),
        u16::from_be_bytes([o[14], o[15]]),
    );
    (ip, [0x33, 0x33, 0xff, o[13], o[14], o[15]])
}

/// An ICMPv6 neighbour message (NS or NA) with one link-layer address option.
#[allow(clippy::too_many_arguments)]
fn ndisc(
    ty: u8,
    flags: u32,
    eth_dst: [u8; 6],
    src_mac: [u8; 6],
    src: Ipv6Addr,
    dst: Ipv6Addr,
    target: Ipv6Addr,
    opt_type: u8,
) -> Vec<u8> {
    let mut icmp = Vec::with_capacity(32);
    icmp.extend_from_slice(&[ty, 0, 0, 0]);
    icmp.extend_from_slice(&flags.to_be_bytes());
    icmp.extend_from_slice(&target.octets());
    icmp.extend_from_slice(&[opt_type, 1]);
    icmp.extend_from_slice(&src_mac);
    let ph = checksum::pseudo_header_v6(src, dst, ICMPV6, icmp.len() as u32);
    let c = !checksum::fold(ph + checksum::sum(&icmp));
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    let mut f = Vec::with_capacity(14 + 40 + icmp.len());
    eth(&mut f, eth_dst, src_mac, ETH_IPV6);
    f.extend_from_slice(&[0x60, 0, 0, 0]);
    f.extend_from_slice(&(icmp.len() as u16).to_be_bytes());
    f.extend_from_slice(&[ICMPV6, 255]);
    f.extend_from_slice(&src.octets());
    f.extend_from_slice(&dst.octets());
    f.extend_from_slice(&icmp);
    f
}

/// A neighbour solicitation for `target`, to its solicited-node multicast group.
pub fn neighbor_solicitation(me: [u8; 6], my_ip: Ipv6Addr, target: Ipv6Addr) -> Vec<u8> {
    let (group, mac) = solicited_node(target);
    ndisc(NS, 0, mac, me, my_ip, group, target, 1)
}

/// An ICMPv6 message in `f` (plain Ethernet, no extension headers): (src ip, payload).
fn icmpv6(f: &[u8]) -> Option<(Ipv6Addr, Ipv6Addr, &[u8])> {
    if f.len() < 14 + 40 + 24 || f[12..14] != ETH_IPV6 || f[14] >> 4 != 6 || f[20] != ICMPV6 {
        return None;
    }
    let plen = usize::from(u16::from_be_bytes([f[18], f[19]]));
    let icmp = f.get(54..54 + plen)?;
    let src = Ipv6Addr::from(<[u8; 16]>::try_from(&f[22..38]).ok()?);
    let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&f[38..54]).ok()?);
    let ph = checksum::pseudo_header_v6(src, dst, ICMPV6, plen as u32);
    if checksum::fold(ph + checksum::sum(icmp)) != 0xffff {
        return None;
    }
    Some((src, dst, icmp))
}

fn ll_option(icmp: &[u8], want: u8) -> Option<[u8; 6]> {
    let mut opts = icmp.get(24..)?;
    while opts.len() >= 8 {
        let len = usize::from(opts[1]) * 8;
        if len == 0 || len > opts.len() {
            return None;
        }
        if opts[0] == want && len >= 8 {
            return opts[2..8].try_into().ok();
        }
        opts = &opts[len..];
    }
    None
}

/// If `frame` asks for one of `me`'s addresses (ARP request, NS), the reply to send.
pub fn answer(frame: &[u8], me: &Identity) -> Option<Vec<u8>> {
    if frame.len() >= 42 && frame[12..14] == ETH_ARP {
        let a = &frame[14..42];
        if a[0..6] != [0, 1, 0x08, 0x00, 6, 4] || a[6..8] != [0, 1] {
            return None;
        }
        let tpa = Ipv4Addr::new(a[24], a[25], a[26], a[27]);
        if Some(tpa) != me.ipv4 {
            return None;
        }
        let sha: [u8; 6] = a[8..14].try_into().ok()?;
        let spa = Ipv4Addr::new(a[14], a[15], a[16], a[17]);
        return Some(arp(2, me.mac, tpa, sha, spa, sha));
    }
    let (src, _dst, icmp) = icmpv6(frame)?;
    if icmp[0] != NS {
        return None;
    }
    let target = Ipv6Addr::from(<[u8; 16]>::try_from(icmp.get(8..24)?).ok()?);
    if Some(target) != me.ipv6 || src.is_unspecified() {
        return None;
    }
    let peer_mac = ll_option(icmp, 1).or_else(|| frame[6..12].try_into().ok())?;
    // Solicited + override.
    Some(ndisc(
        NA,
        0x6000_0000,
        peer_mac,
        me.mac,
        target,
        src,
        target,
        2,
    ))
}

/// If `frame` tells `target`'s MAC (ARP reply or request from it, NA for it), that MAC.
pub fn learn(frame: &[u8], target: IpAddr) -> Option<[u8; 6]> {
    match target {
        IpAddr::V4(t) => {
            if frame.len() < 42 || frame[12..14] != ETH_ARP {
                return None;
            }
            let a = &frame[14..42];
            let spa = Ipv4Addr::new(a[14], a[15], a[16], a[17]);
            (spa == t).then(|| a[8..14].try_into().ok()).flatten()
        }
        IpAddr::V6(t) => {
            let (_, _, icmp) = icmpv6(frame)?;
            if icmp[0] != NA {
                return None;
            }
            let tgt = Ipv6Addr::from(<[u8; 16]>::try_from(icmp.get(8..24)?).ok()?);
            if tgt != t {
                return None;
            }
            ll_option(icmp, 2).or_else(|| frame[6..12].try_into().ok())
        }
    }
}

/// Resolves `target`'s MAC on `sock`: sends a request every 200 ms until a reply arrives or
/// `timeout` passes. Requests from others for our own addresses are answered meanwhile.
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
    };
    let deadline = Instant::now() + timeout;
    let mut buf = vec![0u8; 2048];
    let mut next_send = Instant::now();
    loop {
        let now = Instant::now();
        if now >= deadline {
            return Err(Error::Timeout(format!(
                "no ARP/ND answer from next hop {target} within {timeout:?}"
            )));
        }
        if now >= next_send {
            sock.send_frame(&request)
                .map_err(|e| Error::io("sending ARP/ND request", e))?;
            next_send = now + Duration::from_millis(200);
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
        let req = arp_request(A, a_ip, b_ip);
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
        let ns = neighbor_solicitation(A, a_ip, b_ip);
        assert_eq!(&ns[0..6], &[0x33, 0x33, 0xff, 0, 0, 1]);
        assert!(icmpv6(&ns).is_some(), "checksum verifies");
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
