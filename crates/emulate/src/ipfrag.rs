//! IPv4 fragmentation and reassembly for the tester's own PPPoE session: a 1500-byte IPv4
//! packet does not fit an MRU of 1492 or 1454, so a subscriber (or the AC) that must send it
//! fragments it (RFC 791) and the other end puts it together again. Reassembly reuses the
//! DS-Lite reassembler (bounded memory, timeout, overlaps refused) with IPv4 keys mapped into
//! its IPv6-keyed table.

use core::net::Ipv6Addr;

use wire::ipv4::{Ipv4Packet, Ipv4Repr};
use wire::ipv6::FragmentRepr;
use wire::units::Nanos;

use crate::dslite::{Reassembler, ReassemblyConfig, TunnelDrop};
use wire::ethernet::MacAddr;

/// Splits `packet` into IPv4 fragments of at most `mtu` bytes each. `None` when the packet
/// has Don't Fragment set, is malformed, or the MTU leaves no room for 8 data bytes. A packet
/// that already fits comes back as one piece.
pub fn fragment(packet: &[u8], mtu: usize) -> Option<Vec<Vec<u8>>> {
    let ip = Ipv4Packet::new_checked(packet).ok()?;
    let r = Ipv4Repr::parse(&ip).ok()?;
    let total = usize::from(ip.total_len());
    if total <= mtu {
        return Some(vec![packet[..total].to_vec()]);
    }
    if r.dont_frag || ip.header_len() != 20 {
        return None;
    }
    let chunk = mtu.checked_sub(20)? / 8 * 8;
    if chunk == 0 {
        return None;
    }
    let data = ip.payload();
    let base = usize::from(r.frag_offset);
    let mut out = Vec::new();
    for (i, piece) in data.chunks(chunk).enumerate() {
        let off = i * chunk;
        let last = off + piece.len() == data.len();
        let mut f = vec![0u8; 20 + piece.len()];
        Ipv4Repr {
            payload_len: piece.len(),
            more_frags: !last || r.more_frags,
            frag_offset: (base + off) as u16,
            ..r
        }
        .emit(&mut Ipv4Packet::new_unchecked(&mut f[..]))
        .ok()?;
        f[20..].copy_from_slice(piece);
        out.push(f);
    }
    Some(out)
}

/// Puts IPv4 fragments together again.
#[derive(Debug)]
pub struct Ipv4Reassembler {
    inner: Reassembler,
    /// Datagrams completed from fragments.
    pub reassembled: u64,
    pub fragments: u64,
}

fn mapped(a: core::net::Ipv4Addr) -> Ipv6Addr {
    a.to_ipv6_mapped()
}

impl Ipv4Reassembler {
    pub fn new(cfg: ReassemblyConfig) -> Ipv4Reassembler {
        Ipv4Reassembler {
            inner: Reassembler::new(cfg),
            reassembled: 0,
            fragments: 0,
        }
    }

    /// A whole packet: `packet` itself if it is not a fragment, the reassembled datagram when
    /// this fragment completes one, `None` while fragments are missing.
    pub fn push(&mut self, now: Nanos, packet: &[u8]) -> Result<Option<Vec<u8>>, TunnelDrop> {
        let ip = Ipv4Packet::new_checked(packet).map_err(|_| TunnelDrop::BadInnerIpv4)?;
        let r = Ipv4Repr::parse(&ip).map_err(|_| TunnelDrop::BadInnerIpv4)?;
        if !r.more_frags && r.frag_offset == 0 {
            return Ok(Some(packet[..usize::from(ip.total_len())].to_vec()));
        }
        self.fragments += 1;
        let key = (
            mapped(r.src),
            mapped(r.dst),
            u32::from(r.ident) | u32::from(r.protocol) << 16,
        );
        let frag = FragmentRepr {
            next_header: r.protocol,
            frag_offset: r.frag_offset,
            more_frags: r.more_frags,
            ident: key.2,
        };
        let Some((_, data, _)) = self
            .inner
            .insert(now, key, frag, ip.payload(), MacAddr::ZERO)?
        else {
            return Ok(None);
        };
        let mut whole = vec![0u8; 20 + data.len()];
        Ipv4Repr {
            payload_len: data.len(),
            more_frags: false,
            frag_offset: 0,
            ..r
        }
        .emit(&mut Ipv4Packet::new_unchecked(&mut whole[..]))
        .map_err(|_| TunnelDrop::TooBig)?;
        whole[20..].copy_from_slice(&data);
        self.reassembled += 1;
        Ok(Some(whole))
    }

    /// Drops datagrams past their deadline; how many.
    pub fn expire(&mut self, now: Nanos) -> usize {
        self.inner.expire(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(len: usize, df: bool) -> Vec<u8> {
        let mut p = vec![0u8; len];
        Ipv4Repr {
            src: "198.51.100.10".parse().unwrap(),
            dst: "203.0.113.2".parse().unwrap(),
            protocol: 17,
            payload_len: len - 20,
            ttl: 64,
            tos: 0,
            ident: 0x1234,
            dont_frag: df,
            more_frags: false,
            frag_offset: 0,
        }
        .emit(&mut Ipv4Packet::new_unchecked(&mut p[..]))
        .unwrap();
        for (i, b) in p[20..].iter_mut().enumerate() {
            *b = i as u8;
        }
        p
    }

    #[test]
    fn a_1500_byte_packet_splits_for_mru_1454_and_1492_and_comes_back_whole() {
        for mru in [1454usize, 1492] {
            let p = packet(1500, false);
            let frags = fragment(&p, mru).unwrap();
            assert_eq!(frags.len(), 2, "{mru}");
            assert!(frags.iter().all(|f| f.len() <= mru));
            for f in &frags {
                assert!(Ipv4Packet::new_checked(&f[..]).unwrap().verify_checksum());
            }
            let mut r = Ipv4Reassembler::new(ReassemblyConfig::default());
            // Out of order.
            assert_eq!(r.push(Nanos(0), &frags[1]), Ok(None));
            let whole = r.push(Nanos(1), &frags[0]).unwrap().unwrap();
            assert_eq!(whole, p);
            assert_eq!((r.fragments, r.reassembled), (2, 1));
        }
    }

    #[test]
    fn small_packets_pass_and_df_or_tiny_mtus_refuse() {
        let p = packet(1000, true);
        assert_eq!(fragment(&p, 1454).unwrap(), vec![p.clone()]);
        assert!(fragment(&packet(1500, true), 1454).is_none());
        assert!(fragment(&packet(1500, false), 27).is_none());
        let mut r = Ipv4Reassembler::new(ReassemblyConfig::default());
        assert_eq!(r.push(Nanos(0), &p), Ok(Some(p.clone())));
        assert!(r.push(Nanos(0), &p[..10]).is_err());
    }
}
