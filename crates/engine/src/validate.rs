//! Receive-side validation (issue 19 row 12): a frame that carries a stream's signature counts
//! for the stream only if its headers are valid for that stream; everything else is counted by
//! [`Invalid`] reason, never as received and never as latency.
//!
//! What is checked, in this order (the first failure names the reason):
//!
//! 1. **Encapsulation** ([`Shape`]): the number of 802.1Q/802.1ad tags (a tag the kernel took
//!    off into metadata counts), of MPLS labels, PPPoE or not, IPv4-in-IPv6 or not, and the
//!    test packet's IP version are those the stream was sent with. Values (VLAN ids, labels,
//!    the PPPoE session, tunnel addresses, TTL) are not compared: a DUT may rewrite them.
//! 2. **Fragment**: an IP fragment (IPv4 MF or offset, an IPv6 Fragment header) is invalid
//!    unless [`Expect::fragments`] is set; then a first fragment counts as received (its UDP
//!    length and checksum cover bytes it does not carry and are not checked). Non-first
//!    fragments carry no signature and count as foreign at the port.
//! 3. **Length**: every length field agrees with the frame: the IPv4 total length / IPv6
//!    payload length ends the packet at the end of the frame (trailing bytes are accepted only
//!    as the Ethernet padding of a minimum-size frame), the outer IPv6 of DS-Lite ends where the
//!    inner IPv4 ends, the PPPoE length covers the PPP protocol and the IP packet, and the UDP
//!    length is the IP payload. (An IP length that runs past the frame stops `wire::dissect`
//!    itself: the frame is counted as foreign, as its signature cannot be trusted to be there.)
//! 4. **Checksum**: the IPv4 header checksum (of the test packet) and the UDP checksum, which
//!    is mandatory over IPv6 and checked over IPv4 when not zero.
//! 5. **Address**: the destination address and port lie in the ranges the stream sends to
//!    (its base frame's and the flow counts). Sources are not checked: a NAT (the `napt`
//!    profiles) rewrites them, and the signature identifies the stream without them.
//! 6. **Sequence** ([`check_seq_time`]): the 64-bit sequence number is below the number of
//!    frames the stream's schedule can send at all ([`Expect::seq_limit`]).
//! 7. **Timestamp**: the send time is not after the receive time by more than
//!    [`FUTURE_TOLERANCE_NS`], nor before the receiver started (the trial's start) by more than
//!    that.
//!
//! Everything here is a pure function of the bytes; it never panics on any input.

use std::net::IpAddr;
use wire::bytes::be16;

use wire::checksum;
use wire::dissect::Dissection;

use crate::stream::StreamConfig;

/// Slack for timestamps: the receive time of the AF_PACKET backend is the kernel's realtime
/// stamp moved onto CLOCK_MONOTONIC by the clocks' offset (`crate::rx_clock`, which follows
/// steps of the realtime clock; a frame that waited in the ring across a step smaller than its
/// wait may be off by that step, a few milliseconds at most).
pub const FUTURE_TOLERANCE_NS: u64 = 100_000_000;

/// The reasons and their counts are vocabulary shared with the result records, so they live in
/// `wire` (which the pure crates can depend on without the engine).
pub use wire::invalid::{Invalid, InvalidCounts};

/// The header stack a stream's frames arrive with (structure, not values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// 802.1Q/802.1ad tags, including one the receive path moved into metadata.
    pub vlan_tags: u8,
    pub mpls_labels: u8,
    pub pppoe: bool,
    /// IPv4 in IPv6 (DS-Lite).
    pub tunnel: bool,
    /// The test packet is IPv6.
    pub ipv6: bool,
}

impl Shape {
    /// The shape of a dissected frame; `stripped_tags` tags were taken off by the kernel.
    pub fn of(d: &Dissection, stripped_tags: u8) -> Shape {
        Shape {
            vlan_tags: d.vlan_count.saturating_add(stripped_tags),
            mpls_labels: d.mpls_labels,
            pppoe: d.pppoe_session.is_some(),
            tunnel: d.tunnel.is_some(),
            ipv6: d.dst.is_ipv6(),
        }
    }
}

/// The destinations a stream sends to: `count` values from the base, in the last 32 bits of
/// the address and in the port (as `stream::Flows` varies them, wrapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DstRange {
    pub addr: IpAddr,
    pub addr_count: u32,
    pub port: u16,
    pub port_count: u16,
}

impl DstRange {
    pub fn contains(&self, addr: IpAddr, port: u16) -> bool {
        let low = |a: &[u8]| {
            let n = a.len();
            u32::from_be_bytes([a[n - 4], a[n - 3], a[n - 2], a[n - 1]])
        };
        let addr_ok = match (self.addr, addr) {
            (IpAddr::V4(b), IpAddr::V4(a)) => {
                low(&a.octets()).wrapping_sub(low(&b.octets())) < self.addr_count.max(1)
            }
            (IpAddr::V6(b), IpAddr::V6(a)) => {
                let (a, b) = (a.octets(), b.octets());
                a[..12] == b[..12] && low(&a).wrapping_sub(low(&b)) < self.addr_count.max(1)
            }
            _ => false,
        };
        addr_ok && port.wrapping_sub(self.port) < self.port_count.max(1)
    }
}

/// What a receiver may require of one stream's frames. The default checks only what holds for
/// any stream (lengths, checksums, no fragments, timestamps not in the future).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Expect {
    /// The header stack; `None`: any.
    pub shape: Option<Shape>,
    /// Destination addresses and ports; `None`: any.
    pub dst: Option<DstRange>,
    /// First fragments count as received (a path that is expected to fragment).
    pub fragments: bool,
    /// Sequence numbers must be below this (the frames the stream's schedule can send);
    /// `None`: no bound known (an unpaced stream limited by time).
    pub seq_limit: Option<u64>,
}

impl Expect {
    /// What `cfg`'s frames arrive as when the path keeps their encapsulation and destination
    /// (every path wirerate runs: routers, NAPT, its own PPPoE and DS-Lite ends).
    pub fn of(cfg: &StreamConfig) -> Expect {
        let shapes: Vec<(Shape, IpAddr, u16)> = cfg
            .frames
            .iter()
            .filter_map(|t| {
                let d = wire::dissect::dissect(t.bytes()).ok()?;
                let port = d
                    .udp_offset
                    .and_then(|o| t.bytes().get(o + 2..o + 4))
                    .map(|b| u16::from_be_bytes([b[0], b[1]]))?;
                Some((Shape::of(&d, 0), d.dst, port))
            })
            .collect();
        // Templates of one stream share their headers; if they did not, check neither.
        let same_shape = shapes.windows(2).all(|w| w[0].0 == w[1].0);
        let first = shapes.first().copied();
        let limit = crate::pacing::StreamPacing::for_stream(cfg, 0)
            .pacer
            .shape()
            .limit;
        Expect {
            shape: first.filter(|_| same_shape).map(|f| f.0),
            dst: first
                .filter(|f| shapes.iter().all(|s| (s.1, s.2) == (f.1, f.2)))
                .map(|f| DstRange {
                    addr: f.1,
                    addr_count: cfg.flows.dst_ip_count,
                    port: f.2,
                    port_count: cfg.flows.dst_port_count,
                }),
            fragments: false,
            // A stream with deliberate reordering never stops between the two frames of a
            // swapped pair: one frame beyond the schedule's count may be sent.
            seq_limit: (limit < u64::MAX - 1)
                .then(|| limit.saturating_add(u64::from(cfg.reorder_every.is_some()))),
        }
    }
}

/// Checks the headers of `frame` (dissected as `d`, its signature found) against `exp`.
/// `wire_len` is the frame's length on the wire without FCS: more than `frame.len()` when the
/// kernel took the outer VLAN tag off (4 bytes per tag).
pub fn check_headers(
    frame: &[u8],
    d: &Dissection,
    wire_len: usize,
    exp: &Expect,
) -> Result<(), Invalid> {
    let stripped = (wire_len.saturating_sub(frame.len()) / 4).min(2) as u8;
    if let Some(shape) = exp.shape {
        if Shape::of(d, stripped) != shape {
            return Err(Invalid::Encapsulation);
        }
    }
    if d.fragment && !exp.fragments {
        return Err(Invalid::Fragment);
    }
    let udp = d.udp_offset.ok_or(Invalid::Length)?;
    let len_err = Err(Invalid::Length);
    // Where the test packet ends, by its own header.
    let ip = d.ip_offset;
    let (ip_end, ip_payload) = if d.dst.is_ipv4() {
        let hl = usize::from(frame.get(ip).ok_or(Invalid::Length)? & 0x0f) * 4;
        let total = usize::from(be16(frame, ip + 2).ok_or(Invalid::Length)?);
        (ip + total, ip + hl)
    } else {
        let plen = usize::from(be16(frame, ip + 4).ok_or(Invalid::Length)?);
        (ip + 40 + plen, udp)
    };
    // The outermost IP header ends the frame's payload (DS-Lite: the outer IPv6 must end
    // exactly where the inner IPv4 does).
    let end = if d.tunnel.is_some() {
        let o = d.outer_ip_offset;
        let outer_end = o + 40 + usize::from(be16(frame, o + 4).ok_or(Invalid::Length)?);
        if outer_end != ip_end {
            return len_err;
        }
        outer_end
    } else {
        ip_end
    };
    if end > frame.len() {
        return len_err;
    }
    // Trailing bytes: only the padding of a minimum-size frame (60 bytes + 4 per tag).
    let tags = usize::from(d.vlan_count) + usize::from(stripped);
    if end < frame.len() && wire_len > 60 + 4 * tags {
        return len_err;
    }
    if d.pppoe_session.is_some() {
        // PPPoE header 6 bytes, then the 2-byte PPP protocol, then the (outer) IP packet.
        let p = d.outer_ip_offset.checked_sub(8).ok_or(Invalid::Length)?;
        let plen = usize::from(be16(frame, p + 4).ok_or(Invalid::Length)?);
        if p + 6 + plen != end {
            return len_err;
        }
    }
    let first_fragment = d.fragment;
    let udp_len = usize::from(be16(frame, udp + 4).ok_or(Invalid::Length)?);
    if !first_fragment && (udp_len != ip_end.saturating_sub(ip_payload) || udp_len < 8) {
        return len_err;
    }
    // Checksums.
    if d.dst.is_ipv4() {
        let hl = usize::from(frame.get(ip).map_or(0, |b| b & 0x0f)) * 4;
        match frame.get(ip..ip + hl) {
            Some(h) if hl >= 20 && checksum::verifies(h) => {}
            _ => return Err(Invalid::Checksum),
        }
    }
    if !first_fragment {
        let c = be16(frame, udp + 6).ok_or(Invalid::Length)?;
        let datagram = frame.get(udp..ip_end).ok_or(Invalid::Length)?;
        let ok = match (d.src, d.dst) {
            (IpAddr::V4(_), IpAddr::V4(_)) if c == 0 => true,
            (IpAddr::V4(s), IpAddr::V4(t)) => {
                checksum::fold(
                    checksum::pseudo_header_v4(s, t, 17, udp_len as u16) + checksum::sum(datagram),
                ) == 0xffff
            }
            (IpAddr::V6(s), IpAddr::V6(t)) => {
                c != 0
                    && checksum::fold(
                        checksum::pseudo_header_v6(s, t, 17, udp_len as u32)
                            + checksum::sum(datagram),
                    ) == 0xffff
            }
            _ => false,
        };
        if !ok {
            return Err(Invalid::Checksum);
        }
    }
    if let Some(dst) = exp.dst {
        let port = be16(frame, udp + 2).ok_or(Invalid::Length)?;
        if !dst.contains(d.dst, port) {
            return Err(Invalid::Address);
        }
    }
    Ok(())
}

/// Checks a frame's 64-bit sequence number and send time (`tx_ns`) against `exp`, its receive
/// time `rx_ns` and the receiver's start `not_before_ns` (all CLOCK_MONOTONIC).
#[inline]
pub fn check_seq_time(
    seq: u64,
    tx_ns: u64,
    rx_ns: u64,
    not_before_ns: u64,
    exp: &Expect,
) -> Result<(), Invalid> {
    if exp.seq_limit.is_some_and(|l| seq >= l) {
        return Err(Invalid::Sequence);
    }
    if tx_ns > rx_ns.saturating_add(FUTURE_TOLERANCE_NS)
        || tx_ns < not_before_ns.saturating_sub(FUTURE_TOLERANCE_NS)
    {
        return Err(Invalid::Timestamp);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rx::{Class, Receiver};
    use crate::stream::{Limit, Rate};
    use std::net::{Ipv4Addr, Ipv6Addr};
    use wire::encap::EncapSpec;
    use wire::template::{FrameTemplate, StreamSpec};
    use wire::units::Pps;

    const ID: u16 = 3;
    /// Receive times are on this clock: the trial started at 10 s.
    const START: u64 = 10_000_000_000;

    fn template(encap: &str, size: usize) -> FrameTemplate {
        let encap: EncapSpec = encap.parse().unwrap();
        let mut spec = StreamSpec::new(encap);
        spec.stream_id = ID;
        if encap.ip == wire::encap::IpVersion::V6 {
            spec.src_ip = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1).into();
            spec.dst_ip = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2).into();
        } else {
            spec.src_ip = Ipv4Addr::new(192, 0, 2, 1).into();
            spec.dst_ip = Ipv4Addr::new(198, 51, 100, 1).into();
        }
        spec.dst_port = 9;
        FrameTemplate::new(&spec, size).unwrap()
    }

    fn stream(t: &FrameTemplate, frames: u64) -> StreamConfig {
        StreamConfig::single(ID, t.clone(), Rate::Pps(Pps(1e6)), Limit::Frames(frames))
    }

    fn frame(t: &FrameTemplate, seq: u64, tx_ns: u64) -> Vec<u8> {
        let mut f = t.bytes().to_vec();
        t.stamp(&mut f, seq, tx_ns);
        f
    }

    /// Recomputes the test packet's IPv4 header and UDP checksums after an edit (a forger
    /// who knows the checksums), from the packet's own length fields.
    fn refresh(f: &mut [u8]) {
        let ip4_header = |f: &mut [u8], ip: usize| {
            let hl = usize::from(f[ip] & 0x0f) * 4;
            f[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
            let c = checksum::checksum(&f[ip..ip + hl]);
            f[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
        };
        let Ok(d) = wire::dissect::dissect(f) else {
            // Only plain IPv4 frames are edited beyond dissection here.
            return ip4_header(f, 14);
        };
        let ip = d.ip_offset;
        if d.dst.is_ipv4() {
            ip4_header(f, ip);
        }
        let Some(udp) = d.udp_offset else { return };
        let udp_len = usize::from(u16::from_be_bytes([f[udp + 4], f[udp + 5]]));
        let end = (udp + udp_len).min(f.len());
        f[udp + 6..udp + 8].copy_from_slice(&[0, 0]);
        let ph = match (d.src, d.dst) {
            (IpAddr::V4(s), IpAddr::V4(t)) => checksum::pseudo_header_v4(s, t, 17, udp_len as u16),
            (IpAddr::V6(s), IpAddr::V6(t)) => checksum::pseudo_header_v6(s, t, 17, udp_len as u32),
            _ => unreachable!(),
        };
        let c = checksum::udp_nonzero(!checksum::fold(ph + checksum::sum(&f[udp..end])));
        f[udp + 6..udp + 8].copy_from_slice(&c.to_be_bytes());
    }

    /// Adds `d` to the big-endian u16 at `at`.
    fn add16(f: &mut [u8], at: usize, d: i32) {
        let v = i32::from(u16::from_be_bytes([f[at], f[at + 1]])) + d;
        f[at..at + 2].copy_from_slice(&(v as u16).to_be_bytes());
    }

    fn rx_for(t: &FrameTemplate) -> Receiver {
        Receiver::with_expect(&[(ID, Expect::of(&stream(t, 1000)))], START)
    }

    /// The class of `f` received at START + 1 ms by a receiver expecting `t`'s stream.
    fn class(t: &FrameTemplate, f: &[u8]) -> Class {
        rx_for(t).on_frame(f, START + 1_000_000)
    }

    fn bad(reason: Invalid) -> Class {
        Class::Invalid { slot: 0, reason }
    }

    const ENCAPS: [&str; 9] = [
        "ipv4",
        "ipv6",
        "ipv4+vlan",
        "ipv6+qinq",
        "ipv4+mpls:3",
        "ipv4+pppoe",
        "ipv6+pppoe",
        "ipv4+dslite",
        "ipv4+vlan+pppoe",
    ];

    fn sizes(encap: &str) -> [usize; 2] {
        if encap.starts_with("ipv6") {
            [86, 1518]
        } else {
            [64, 1518]
        }
    }

    #[test]
    fn valid_frames_of_every_encapsulation_count() {
        for e in ENCAPS {
            for size in sizes(e) {
                let t = template(e, size);
                let f = frame(&t, 5, START);
                assert_eq!(class(&t, &f), Class::Ours { slot: 0 }, "{e} {size}");
            }
        }
    }

    #[test]
    fn corrupted_payload_or_header_is_a_checksum_error() {
        for e in ENCAPS {
            let t = template(e, sizes(e)[1]);
            let mut f = frame(&t, 5, START);
            let n = f.len();
            f[n - 1] ^= 0x40; // a payload byte after the signature
            assert_eq!(class(&t, &f), bad(Invalid::Checksum), "{e} payload");
        }
        // The IPv4 header: a TTL changed without its checksum.
        let t = template("ipv4", 64);
        let mut f = frame(&t, 5, START);
        f[22] ^= 0x01;
        assert_eq!(class(&t, &f), bad(Invalid::Checksum));
        // The signature itself (sequence number) changed: the UDP checksum catches it.
        let mut f = frame(&t, 5, START);
        f[42 + 7] ^= 0x01;
        assert_eq!(class(&t, &f), bad(Invalid::Checksum));
        // UDP checksum zero: "none" over IPv4 (valid), never over IPv6.
        let mut f = frame(&t, 5, START);
        f[40..42].copy_from_slice(&[0, 0]);
        assert_eq!(class(&t, &f), Class::Ours { slot: 0 });
        let t6 = template("ipv6", 86);
        let mut f = frame(&t6, 5, START);
        let udp = wire::dissect::dissect(&f).unwrap().udp_offset.unwrap();
        f[udp + 6..udp + 8].copy_from_slice(&[0, 0]);
        assert_eq!(class(&t6, &f), bad(Invalid::Checksum));
    }

    #[test]
    fn inconsistent_lengths() {
        for e in ENCAPS {
            let t = template(e, sizes(e)[1]);
            // UDP length one short, checksums made right for it.
            let mut f = frame(&t, 5, START);
            let udp = wire::dissect::dissect(&f).unwrap().udp_offset.unwrap();
            let l = u16::from_be_bytes([f[udp + 4], f[udp + 5]]) - 2;
            f[udp + 4..udp + 6].copy_from_slice(&l.to_be_bytes());
            refresh(&mut f);
            assert_eq!(class(&t, &f), bad(Invalid::Length), "{e} udp length");
            // Bytes appended after the packet (not the padding of a minimum frame).
            let mut f = frame(&t, 5, START);
            f.extend_from_slice(&[0; 6]);
            assert_eq!(class(&t, &f), bad(Invalid::Length), "{e} trailing bytes");
        }
        // IPv4 total length shorter than the frame (the rest passed off as padding).
        let t = template("ipv4", 128);
        let mut f = frame(&t, 5, START);
        add16(&mut f, 16, -4);
        let l = u16::from_be_bytes([f[38], f[39]]) - 4;
        f[38..40].copy_from_slice(&l.to_be_bytes());
        refresh(&mut f);
        assert_eq!(class(&t, &f), bad(Invalid::Length));
        // Longer than the frame: the frame cannot be followed at all (foreign, not counted).
        let mut f = frame(&t, 5, START);
        add16(&mut f, 16, 4);
        refresh(&mut f);
        let mut rx = rx_for(&t);
        assert_eq!(rx.on_frame(&f, START), Class::Foreign);
        // PPPoE length one too many.
        let t = template("ipv4+pppoe", 128);
        let mut f = frame(&t, 5, START);
        let l = u16::from_be_bytes([f[18], f[19]]);
        f[18..20].copy_from_slice(&(l - 1).to_be_bytes());
        assert_eq!(class(&t, &f), bad(Invalid::Length));
        // DS-Lite: outer IPv6 payload length disagreeing with the inner packet.
        let t = template("ipv4+dslite", 128);
        let mut f = frame(&t, 5, START);
        let l = u16::from_be_bytes([f[18], f[19]]);
        f[18..20].copy_from_slice(&(l - 2).to_be_bytes());
        assert_eq!(class(&t, &f), bad(Invalid::Length));
        // Ethernet padding of a minimum-size frame is fine: a 58-byte packet padded to 60.
        let t = template("ipv4", 64);
        let mut f = frame(&t, 5, START);
        assert_eq!(f.len(), 60);
        add16(&mut f, 16, -2);
        add16(&mut f, 38, -2);
        refresh(&mut f);
        assert_eq!(class(&t, &f), Class::Ours { slot: 0 });
    }

    #[test]
    fn unexpected_encapsulation() {
        // A plain stream arriving tagged, an untagged one expected tagged, MPLS popped, PPPoE
        // missing, IPv4 arriving as IPv6: each with its own valid checksums.
        let pairs = [
            ("ipv4", "ipv4+vlan"),
            ("ipv4+vlan", "ipv4+qinq"),
            ("ipv4+mpls:3", "ipv4+mpls:2"),
            ("ipv4+mpls:1", "ipv4"),
            ("ipv4+pppoe", "ipv4"),
            ("ipv4+dslite", "ipv4"),
            ("ipv4", "ipv6"),
        ];
        for (sent, arrived) in pairs {
            let t = template(sent, 128);
            let f = frame(&template(arrived, 128), 5, START);
            assert_eq!(
                class(&t, &f),
                bad(Invalid::Encapsulation),
                "{sent} as {arrived}"
            );
        }
        // A tag the kernel took off into metadata still counts as the stream's tag.
        let t = template("ipv4+vlan", 128);
        let f = frame(&t, 5, START);
        let stripped: Vec<u8> = f[..12].iter().chain(&f[16..]).copied().collect();
        let mut rx = rx_for(&t);
        assert_eq!(
            rx.on_frame_len(&stripped, f.len(), START),
            Class::Ours { slot: 0 }
        );
        assert_eq!(rx.on_frame(&stripped, START), bad(Invalid::Encapsulation));
        // VLAN ids and MPLS labels may be rewritten on the way: not compared.
        let mut g = f.clone();
        g[15] ^= 0x07;
        assert_eq!(class(&t, &g), Class::Ours { slot: 0 });
    }

    #[test]
    fn fragments_only_where_expected() {
        let t = template("ipv4", 128);
        let mut f = frame(&t, 5, START);
        f[20] |= 0x20; // more fragments, offset 0: a first fragment
        refresh(&mut f);
        assert_eq!(class(&t, &f), bad(Invalid::Fragment));
        let mut e = Expect::of(&stream(&t, 1000));
        e.fragments = true;
        let mut rx = Receiver::with_expect(&[(ID, e)], START);
        assert_eq!(rx.on_frame(&f, START), Class::Ours { slot: 0 });
        // A non-first fragment has no signature: foreign.
        let mut g = frame(&t, 5, START);
        g[21] = 0x10;
        refresh(&mut g);
        assert_eq!(class(&t, &g), Class::Foreign);
    }

    #[test]
    fn foreign_destinations_but_translated_sources_are_fine() {
        let t = template("ipv4", 128);
        let mut cfg = stream(&t, 1000);
        cfg.flows.dst_ip_count = 4;
        cfg.flows.dst_port_count = 2;
        let mut rx = Receiver::with_expect(&[(ID, Expect::of(&cfg))], START);
        let mut with = |edit: &dyn Fn(&mut Vec<u8>)| {
            let mut f = frame(&t, 5, START);
            edit(&mut f);
            refresh(&mut f);
            rx.on_frame(&f, START)
        };
        // In range: 198.51.100.1..=4, ports 9..=10.
        assert_eq!(with(&|f| f[33] = 4), Class::Ours { slot: 0 });
        assert_eq!(with(&|f| f[37] = 10), Class::Ours { slot: 0 });
        assert_eq!(with(&|f| f[33] = 5), bad(Invalid::Address));
        assert_eq!(with(&|f| f[30] = 203), bad(Invalid::Address));
        assert_eq!(with(&|f| f[37] = 11), bad(Invalid::Address));
        // NAPT rewrites the source address and port: still the stream's.
        assert_eq!(
            with(&|f| f[26..30].copy_from_slice(&[203, 0, 113, 9])),
            Class::Ours { slot: 0 }
        );
        assert_eq!(
            with(&|f| f[34..36].copy_from_slice(&[0xc3, 0x51])),
            Class::Ours { slot: 0 }
        );
        // IPv6: the upper 96 bits must match.
        let t = template("ipv6", 128);
        let mut f = frame(&t, 5, START);
        f[14 + 24 + 3] ^= 1;
        refresh(&mut f);
        assert_eq!(class(&t, &f), bad(Invalid::Address));
    }

    #[test]
    fn sequence_outside_what_was_sent() {
        // The probe's "5001 received of 5000 sent": a forged sequence number is not received.
        let t = template("ipv4", 64);
        let mut rx = Receiver::with_expect(&[(ID, Expect::of(&stream(&t, 5000)))], START);
        for s in 0..5000u64 {
            rx.on_frame(&frame(&t, s, START + s), START + s + 1000);
        }
        for forged in [5000u64, 5001, 1 << 31, u32::MAX as u64] {
            assert_eq!(
                rx.on_frame(&frame(&t, forged, START), START + 10_000),
                bad(Invalid::Sequence)
            );
        }
        let r = rx.report(ID, Some(5000)).unwrap();
        assert_eq!((r.received, r.lost, r.out_of_order), (5000, Some(0), 0));
        assert_eq!((r.highest_seq, r.invalid.sequence), (Some(4999), 4));
        // A forged far-ahead number first does not move the highest either.
        let mut rx = Receiver::with_expect(&[(ID, Expect::of(&stream(&t, 100)))], START);
        assert_eq!(
            rx.on_frame(&frame(&t, 0xffff_fff0, START), START),
            bad(Invalid::Sequence)
        );
        for s in 0..100u64 {
            assert_eq!(
                rx.on_frame(&frame(&t, s, START), START),
                Class::Ours { slot: 0 }
            );
        }
        let r = rx.report(ID, Some(100)).unwrap();
        assert_eq!(
            (r.received, r.out_of_order, r.lost_by_sequence),
            (100, 0, 0)
        );
        // Duration-limited paced streams: the schedule's frame count is the limit.
        let mut cfg = stream(&t, 1);
        cfg.rate = Rate::Pps(Pps(1000.0));
        cfg.limit = Limit::DurationNs(2_000_000_000);
        assert_eq!(Expect::of(&cfg).seq_limit, Some(2000));
        cfg.rate = Rate::Unlimited;
        assert_eq!(
            Expect::of(&cfg).seq_limit,
            None,
            "unpaced by time: no bound known"
        );
    }

    #[test]
    fn timestamps_in_the_future_or_before_the_trial() {
        let t = template("ipv4", 64);
        let mut rx = rx_for(&t);
        let rx_ns = START + 1_000_000_000;
        // 12,084 s of "latency" in the probe: a timestamp of (almost) zero.
        assert_eq!(
            rx.on_frame(&frame(&t, 0, 1), rx_ns),
            bad(Invalid::Timestamp)
        );
        assert_eq!(
            rx.on_frame(&frame(&t, 1, START - FUTURE_TOLERANCE_NS - 1), rx_ns),
            bad(Invalid::Timestamp)
        );
        assert_eq!(
            rx.on_frame(&frame(&t, 2, rx_ns + FUTURE_TOLERANCE_NS + 1), rx_ns),
            bad(Invalid::Timestamp)
        );
        assert_eq!(
            rx.on_frame(&frame(&t, 3, u64::MAX), rx_ns),
            bad(Invalid::Timestamp)
        );
        // Within the tolerance: received (a negative latency is clock trouble, counted).
        assert_eq!(
            rx.on_frame(&frame(&t, 4, rx_ns + 5), rx_ns),
            Class::Ours { slot: 0 }
        );
        assert_eq!(
            rx.on_frame(&frame(&t, 5, rx_ns - 7_000), rx_ns),
            Class::Ours { slot: 0 }
        );
        let r = rx.report(ID, None).unwrap();
        assert_eq!(
            (r.received, r.negative_latency, r.invalid.timestamp),
            (2, 1, 4)
        );
        assert_eq!(r.latency.unwrap().max_ns, 7_000);
        assert_eq!(r.invalid.total(), 4);
        assert_eq!(r.invalid.describe(), "4 timestamp");
    }

    mod fuzz {
        use super::*;
        use proptest::prelude::*;

        /// One edit of a valid frame.
        #[derive(Debug, Clone)]
        enum Edit {
            Flip { at: usize, mask: u8 },
            Set { at: usize, value: u8 },
            Truncate(usize),
            Append(Vec<u8>),
            Insert { at: usize, bytes: Vec<u8> },
            Refresh,
            Seq(u32),
            Timestamp(u64),
        }

        fn edit() -> impl Strategy<Value = Edit> {
            prop_oneof![
                (0usize..1600, 1u8..=255).prop_map(|(at, mask)| Edit::Flip { at, mask }),
                (0usize..64, any::<u8>()).prop_map(|(at, value)| Edit::Set { at, value }),
                (0usize..1600).prop_map(Edit::Truncate),
                proptest::collection::vec(any::<u8>(), 0..8).prop_map(Edit::Append),
                (0usize..64, proptest::collection::vec(any::<u8>(), 1..9))
                    .prop_map(|(at, bytes)| Edit::Insert { at, bytes }),
                Just(Edit::Refresh),
                any::<u32>().prop_map(Edit::Seq),
                any::<u64>().prop_map(Edit::Timestamp),
            ]
        }

        fn apply(t: &FrameTemplate, f: &mut Vec<u8>, e: &Edit) {
            match e {
                Edit::Flip { at, mask } => {
                    let n = f.len();
                    if n > 0 {
                        f[at % n] ^= mask;
                    }
                }
                Edit::Set { at, value } => {
                    if let Some(b) = f.get_mut(*at) {
                        *b = *value;
                    }
                }
                Edit::Truncate(n) => f.truncate(*n),
                Edit::Append(b) => f.extend_from_slice(b),
                Edit::Insert { at, bytes } => {
                    let at = (*at).min(f.len());
                    f.splice(at..at, bytes.iter().copied());
                }
                Edit::Refresh => {
                    if wire::dissect::dissect(f)
                        .is_ok_and(|d| d.udp_offset.is_some_and(|u| u + 8 <= f.len()))
                    {
                        refresh(f);
                    }
                }
                Edit::Seq(s) => {
                    let at = t.signature_offset() + wire::signature::SEQ_OFFSET;
                    if let Some(b) = f.get_mut(at..at + 4) {
                        b.copy_from_slice(&s.to_be_bytes());
                    }
                }
                Edit::Timestamp(ts) => {
                    let at = t.signature_offset() + wire::signature::TIMESTAMP_OFFSET;
                    if let Some(b) = f.get_mut(at..at + 8) {
                        b.copy_from_slice(&ts.to_be_bytes());
                    }
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig {
                cases: 512,
                failure_persistence: None,
                // Repeatable in CI: the same 512 cases every run.
                rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
                rng_seed: proptest::test_runner::RngSeed::Fixed(0x5752_0019),
                ..ProptestConfig::default()
            })]

            /// Whatever arrives: no panic; every frame is received, a duplicate, invalid,
            /// unexpected or foreign (exactly one); nothing beyond the stream's schedule or
            /// outside the trial's time is ever received or measured.
            #[test]
            fn receiver_accounts_every_frame_and_never_counts_the_impossible(
                encap in 0usize..ENCAPS.len(),
                big in any::<bool>(),
                frames in proptest::collection::vec(
                    (0u64..200, proptest::collection::vec(edit(), 0..4), any::<bool>()),
                    1..40,
                ),
                wire_extra in prop_oneof![Just(0usize), Just(4)],
            ) {
                let e = ENCAPS[encap];
                let t = template(e, sizes(e)[usize::from(big)]);
                const LIMIT: u64 = 100;
                let mut rx = Receiver::with_expect(&[(ID, Expect::of(&stream(&t, LIMIT)))], START);
                let (mut ours, mut invalid, mut other) = (0u64, 0u64, 0u64);
                let mut rx_ns = START;
                for (seq, edits, keep) in &frames {
                    rx_ns += 1_000;
                    let mut f = frame(&t, *seq, rx_ns - 500);
                    if !keep {
                        for ed in edits {
                            apply(&t, &mut f, ed);
                        }
                    }
                    match rx.on_frame_len(&f, f.len() + wire_extra, rx_ns) {
                        Class::Ours { slot } => { prop_assert_eq!(slot, 0); ours += 1 }
                        Class::Invalid { slot, .. } => { prop_assert_eq!(slot, 0); invalid += 1 }
                        Class::UnexpectedStream | Class::Foreign => other += 1,
                    }
                }
                let r = rx.report(ID, None).unwrap();
                let n = frames.len() as u64;
                prop_assert_eq!(ours + invalid + other, n);
                prop_assert_eq!(r.received + r.duplicates, ours);
                prop_assert_eq!(r.invalid.total(), invalid);
                prop_assert_eq!(rx.foreign() + rx.unexpected(), other);
                prop_assert!(r.highest_seq.is_none_or(|h| h < LIMIT), "{:?}", r.highest_seq);
                if let Some(l) = r.latency {
                    // Sent no earlier than the trial's start (less the tolerance).
                    prop_assert!(l.max_ns <= rx_ns - START + FUTURE_TOLERANCE_NS, "{l:?}");
                }
                // Unedited frames of the stream (untouched wire length) are always counted.
                if wire_extra == 0 && frames.iter().all(|(s, _, keep)| *keep && *s < LIMIT) {
                    prop_assert_eq!(ours, n);
                }
            }

            /// Arbitrary bytes: never a panic, always exactly one class.
            #[test]
            fn receiver_never_panics_on_random_bytes(
                bytes in proptest::collection::vec(any::<u8>(), 0..200),
                rx_ns in any::<u64>(),
                extra in 0usize..9,
            ) {
                let t = template("ipv4", 64);
                let mut rx = rx_for(&t);
                let _ = rx.on_frame_len(&bytes, bytes.len() + extra, rx_ns);
                let r = rx.report(ID, None).unwrap();
                prop_assert_eq!(
                    r.received + r.duplicates + r.invalid.total() + rx.foreign() + rx.unexpected(),
                    1
                );
            }
        }
    }
}
