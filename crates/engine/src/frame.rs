//! Where things are in a test frame: walks the header stack (Ethernet, 802.1Q/QinQ, MPLS,
//! PPPoE session, IPv4, IPv6 with extension headers, IPv4-in-IPv6 / IPv6-in-IPv4, UDP) down to
//! the signature. The receiver uses it to classify every frame; the sender uses it once per
//! template to find the fields it rewrites per frame (signature, addresses, ports, checksums).
//!
//! It reads offsets only and never panics on any bytes.

/// The IP version of a header in the stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IpVersion {
    V4,
    V6,
}

/// Offsets of the interesting headers of a UDP frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    /// The IP header that carries the UDP header (the inner one in a tunnel).
    pub ip: usize,
    pub ip_version: IpVersion,
    /// The UDP header.
    pub udp: usize,
    /// The UDP payload (where the signature sits in a test frame).
    pub payload: usize,
}

const ETH_HLEN: usize = 14;

#[inline]
fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

/// Whether the outermost network header of `frame` is IPv6 (which neighbour protocol resolves
/// its next hop: ND rather than ARP).
pub fn outer_is_ipv6(frame: &[u8]) -> bool {
    let mut ethertype = be16(frame, 12).unwrap_or(0);
    let mut at = ETH_HLEN;
    while matches!(ethertype, 0x8100 | 0x88a8 | 0x9100) {
        ethertype = be16(frame, at + 2).unwrap_or(0);
        at += 4;
    }
    match ethertype {
        0x86dd => true,
        0x8864 => be16(frame, at + 6) == Some(0x0057),
        0x8847 | 0x8848 => {
            while frame.get(at + 2).is_some_and(|b| b & 1 == 0) {
                at += 4;
            }
            frame.get(at + 4).is_some_and(|b| b >> 4 == 6)
        }
        _ => false,
    }
}

/// Walks `frame` (starting at the Ethernet header) to its UDP header. `None` when the frame is
/// not UDP over IP, is a non-first fragment, or is truncated.
pub fn udp_layout(frame: &[u8]) -> Option<Layout> {
    let mut ethertype = be16(frame, 12)?;
    let mut at = ETH_HLEN;
    // VLAN tags (802.1Q, 802.1ad, old QinQ).
    let mut tags = 0;
    while matches!(ethertype, 0x8100 | 0x88a8 | 0x9100) {
        ethertype = be16(frame, at + 2)?;
        at += 4;
        tags += 1;
        if tags > 4 {
            return None;
        }
    }
    let (mut version, mut ip) = match ethertype {
        0x0800 => (IpVersion::V4, at),
        0x86dd => (IpVersion::V6, at),
        0x8847 | 0x8848 => {
            // MPLS: labels until bottom of stack, then guess the payload from the version nibble.
            let mut labels = 0;
            loop {
                let bos = frame.get(at + 2)? & 1;
                at += 4;
                labels += 1;
                if bos == 1 {
                    break;
                }
                if labels > 16 {
                    return None;
                }
            }
            match frame.get(at)? >> 4 {
                4 => (IpVersion::V4, at),
                6 => (IpVersion::V6, at),
                _ => return None,
            }
        }
        0x8864 => {
            // PPPoE session: 6-byte header, then the 2-byte PPP protocol.
            let proto = be16(frame, at + 6)?;
            at += 8;
            match proto {
                0x0021 => (IpVersion::V4, at),
                0x0057 => (IpVersion::V6, at),
                _ => return None,
            }
        }
        _ => return None,
    };
    // IP, possibly tunnelled (at most two levels: DS-Lite is IPv4 in IPv6).
    for _ in 0..3 {
        let (proto, l4) = match version {
            IpVersion::V4 => {
                let vihl = *frame.get(ip)?;
                if vihl >> 4 != 4 {
                    return None;
                }
                let ihl = usize::from(vihl & 0x0f) * 4;
                if ihl < 20 {
                    return None;
                }
                let frag = be16(frame, ip + 6)?;
                if frag & 0x1fff != 0 {
                    return None; // a non-first fragment carries no UDP header
                }
                (*frame.get(ip + 9)?, ip + ihl)
            }
            IpVersion::V6 => {
                if frame.get(ip)? >> 4 != 6 {
                    return None;
                }
                let mut next = *frame.get(ip + 6)?;
                let mut at = ip + 40;
                // Extension headers: hop-by-hop, routing, destination options, fragment.
                for _ in 0..8 {
                    match next {
                        0 | 43 | 60 => {
                            let n = *frame.get(at)?;
                            let len = (usize::from(*frame.get(at + 1)?) + 1) * 8;
                            next = n;
                            at += len;
                        }
                        44 => {
                            let n = *frame.get(at)?;
                            if be16(frame, at + 2)? & 0xfff8 != 0 {
                                return None;
                            }
                            next = n;
                            at += 8;
                        }
                        _ => break,
                    }
                }
                (next, at)
            }
        };
        match proto {
            17 => {
                if frame.len() < l4 + 8 {
                    return None;
                }
                return Some(Layout {
                    ip,
                    ip_version: version,
                    udp: l4,
                    payload: l4 + 8,
                });
            }
            4 => {
                version = IpVersion::V4;
                ip = l4;
            }
            41 => {
                version = IpVersion::V6;
                ip = l4;
            }
            _ => return None,
        }
    }
    None
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A minimal IPv4/UDP frame (no FCS) of `len` bytes with a zero payload; for tests.
    pub fn ipv4_udp(len: usize) -> Vec<u8> {
        let mut f = vec![0u8; len];
        f[0..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
        f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let ip_len = (len - 14) as u16;
        f[14] = 0x45;
        f[16..18].copy_from_slice(&ip_len.to_be_bytes());
        f[22] = 64;
        f[23] = 17;
        f[26..30].copy_from_slice(&[192, 0, 2, 1]);
        f[30..34].copy_from_slice(&[198, 51, 100, 1]);
        let c = wire::checksum::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        f[34..36].copy_from_slice(&1024u16.to_be_bytes());
        f[36..38].copy_from_slice(&7u16.to_be_bytes());
        f[38..40].copy_from_slice(&(ip_len - 20).to_be_bytes());
        f
    }

    #[test]
    fn plain_ipv4() {
        let f = ipv4_udp(60);
        let l = udp_layout(&f).unwrap();
        assert_eq!(
            l,
            Layout {
                ip: 14,
                ip_version: IpVersion::V4,
                udp: 34,
                payload: 42
            }
        );
    }

    #[test]
    fn vlan_and_mpls() {
        let f = ipv4_udp(60);
        // Insert a VLAN tag.
        let mut v = f[..12].to_vec();
        v.extend_from_slice(&[0x81, 0x00, 0x00, 0x0a]);
        v.extend_from_slice(&f[12..]);
        assert_eq!(udp_layout(&v).unwrap().payload, 46);
        // Replace the ethertype with two MPLS labels.
        let mut m = f[..12].to_vec();
        m.extend_from_slice(&[0x88, 0x47, 0, 0x10, 0x00, 64, 0, 0x20, 0x01, 64]);
        m.extend_from_slice(&f[14..]);
        assert_eq!(udp_layout(&m).unwrap().payload, 50);
    }

    #[test]
    fn ipv4_in_ipv6() {
        let f = ipv4_udp(60);
        let mut t = f[..12].to_vec();
        t.extend_from_slice(&[0x86, 0xdd]);
        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        v6[6] = 4;
        t.extend_from_slice(&v6);
        t.extend_from_slice(&f[14..]);
        let l = udp_layout(&t).unwrap();
        assert_eq!(l.ip, 54);
        assert_eq!(l.ip_version, IpVersion::V4);
        assert_eq!(l.payload, 82);
    }

    #[test]
    fn never_panics_on_garbage() {
        for len in 0..80 {
            for fill in [0x00u8, 0x45, 0x60, 0x81, 0x88, 0xff] {
                let mut f = vec![fill; len];
                if len > 14 {
                    f[12] = 0x08;
                    f[13] = 0x00;
                }
                let _ = udp_layout(&f);
            }
        }
        let f = ipv4_udp(60);
        for cut in 0..f.len() {
            let _ = udp_layout(&f[..cut]);
        }
    }
}
