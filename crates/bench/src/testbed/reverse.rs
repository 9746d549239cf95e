//! The reverse stream of a bidirectional trial when port B plays a PPPoE session, an IPoE
//! lease or a DS-Lite softwire: the mirror of the forward stream's tuple, inside B's headers.

use std::net::IpAddr;

use emulate::pppoe::SessionInfo;
use emulate::softwire::SoftwireInfo;
use engine::port::PortSpec;
use engine::trial::TrialStream;
use wire::encap::{EncapSpec, IpVersion};
use wire::linerate::FrameSize;
use wire::template::{FrameTemplate, StreamSpec};

use crate::results::SentStream;

/// The record of a reverse stream built inside port B's session or softwire: the forward
/// stream's, with the reverse frame's own headers, addresses and lengths.
pub(super) fn sent_of_reverse(forward: &SentStream, r: &TrialStream) -> SentStream {
    let mut s = forward.clone();
    s.stream_id = r.config.id;
    std::mem::swap(&mut s.tx_port, &mut s.rx_port);
    s.lengths = r
        .config
        .frames
        .iter()
        .map(|t| (t.len() + wire::encap::FCS) as u32)
        .collect();
    if let Some(bytes) = r.config.frames.first().map(|t| t.bytes()) {
        if let Ok(d) = wire::dissect::dissect(bytes) {
            s.encap.pppoe = d.pppoe_session.is_some();
            s.encap.dslite = d.tunnel.is_some();
            s.src = d.src;
            s.dst = d.dst;
        }
    }
    if let Some((src, dst)) = forward_ports(r) {
        s.src_port = src;
        s.dst_port = dst;
    }
    s
}

/// The reverse stream of a bidirectional trial inside port B's PPPoE session: the mirror of
/// the forward stream's tuple. From an access concentrator (`isp_side`): from B's session
/// address and the forward destination port to the subscriber's IPCP address (the CPE's WAN
/// address) and the forward source port — the reply a CPE's NAPT maps back to the LAN host
/// that sent the forward stream (to port A's address when IPCP gave the peer none). From a
/// subscriber: to port A's address, behind the access concentrator.
pub(super) fn reverse_in_session(
    ip: IpVersion,
    frame_size: FrameSize,
    forward: &TrialStream,
    a: &PortSpec,
    b: &PortSpec,
    info: &SessionInfo,
    isp_side: bool,
) -> Result<TrialStream, String> {
    let mut encap = EncapSpec::plain(ip);
    encap.pppoe = true;
    let mut spec = mirrored(encap, forward, a, b)?;
    if let (true, Some(peer), IpVersion::V4) = (isp_side, info.negotiated.peer_ipv4, ip) {
        spec.dst_ip = peer.into();
    }
    info.apply_to(&mut spec);
    reverse_stream(forward, &spec, frame_size, "PPPoE")
}

/// The reverse stream from an IPoE port: plain IPv4 from our gateway address and the forward
/// destination port to the gateway's leased address and the forward source port (the reply
/// its NAPT maps back to port A), at the MAC of the lease.
pub(super) fn reverse_to_lease(
    ip: IpVersion,
    frame_size: FrameSize,
    forward: &TrialStream,
    a: &PortSpec,
    b: &PortSpec,
    info: &emulate::ipoe::LeaseInfo,
) -> Result<TrialStream, String> {
    let mut spec = mirrored(EncapSpec::plain(ip), forward, a, b)?;
    info.apply_to(&mut spec);
    reverse_stream(forward, &spec, frame_size, "IPoE")
}

/// The reverse stream inside port B's DS-Lite softwire: inner IPv4 from B (or the B4's
/// 192.0.0.2 when B plays the B4) to port A's address, in IPv6 between the tunnel's ends.
pub(super) fn reverse_in_softwire(
    ip: IpVersion,
    frame_size: FrameSize,
    forward: &TrialStream,
    a: &PortSpec,
    b: &PortSpec,
    info: &SoftwireInfo,
    b4_side: bool,
) -> Result<TrialStream, String> {
    let mut encap = EncapSpec::plain(ip);
    encap.dslite = true;
    let mut spec = mirrored(encap, forward, a, b)?;
    info.apply_to(&mut spec, b4_side);
    reverse_stream(forward, &spec, frame_size, "DS-Lite")
}

/// The reverse stream from port B's MAP-E BR: a reply to what the CE's NAPT made of the
/// forward stream — inner IPv4 from B's address and the forward destination port to the CE's
/// shared address `ce_ipv4` and the port `ce_port` it mapped the forward source to (learned
/// by the BR), in IPv6 from the BR to the CE's MAP address (`info`). The CE's NAPT maps it
/// back to port A.
pub(super) fn reverse_from_br(
    frame_size: FrameSize,
    forward: &TrialStream,
    a: &PortSpec,
    b: &PortSpec,
    (ce_ipv4, ce_port): (std::net::Ipv4Addr, u16),
    info: &SoftwireInfo,
) -> Result<TrialStream, String> {
    let mut encap = EncapSpec::plain(IpVersion::V4);
    encap.mape = true;
    let mut spec = mirrored(encap, forward, a, b)?;
    spec.dst_ip = ce_ipv4.into();
    spec.dst_port = ce_port;
    info.apply_to(&mut spec, false);
    reverse_stream(forward, &spec, frame_size, "MAP-E")
}

/// A B→A stream spec: B's address to A's, the forward stream's UDP ports swapped.
fn mirrored(
    encap: EncapSpec,
    forward: &TrialStream,
    a: &PortSpec,
    b: &PortSpec,
) -> Result<StreamSpec, String> {
    let ip = encap.ip;
    let pick = |p: &PortSpec| -> Option<IpAddr> {
        match ip {
            IpVersion::V4 => p.ipv4.map(IpAddr::V4),
            IpVersion::V6 => p.ipv6.map(IpAddr::V6),
        }
    };
    let mut spec = StreamSpec::new(encap);
    spec.stream_id = 2;
    if let Some(src) = pick(b) {
        spec.src_ip = src;
    }
    spec.dst_ip = pick(a).ok_or_else(|| format!("port {} has no {ip} address", a.name))?;
    let (src_port, dst_port) = forward_ports(forward).unwrap_or((1024, 9));
    spec.src_port = dst_port;
    spec.dst_port = src_port;
    spec.tos = forward_tos(forward).unwrap_or(0);
    Ok(spec)
}

/// The ToS (IPv4) or traffic class (IPv6) byte of the forward stream's test packet, which the
/// reverse stream carries too (`run.tos`, a block's `tos`).
fn forward_tos(forward: &TrialStream) -> Option<u8> {
    let bytes = forward.config.frames.first()?.bytes();
    let d = wire::dissect::dissect(bytes).ok()?;
    let ip = bytes.get(d.ip_offset..)?;
    match d.src {
        IpAddr::V4(_) => ip.get(1).copied(),
        IpAddr::V6(_) => Some((ip.first()? << 4) | (ip.get(1)? >> 4)),
    }
}

/// The UDP source and destination ports of the forward stream's first frame.
pub(super) fn forward_ports(forward: &TrialStream) -> Option<(u16, u16)> {
    let bytes = forward.config.frames.first()?.bytes();
    let d = wire::dissect::dissect(bytes).ok()?;
    let udp = bytes.get(d.udp_offset?..)?;
    Some((
        u16::from_be_bytes([*udp.first()?, *udp.get(1)?]),
        u16::from_be_bytes([*udp.get(2)?, *udp.get(3)?]),
    ))
}

/// The reverse stream from `spec`: the forward stream's rate and length, stream id 2, sent by
/// port B (index 1) to port A, with the session's or tunnel's MACs as they are.
fn reverse_stream(
    forward: &TrialStream,
    spec: &StreamSpec,
    frame_size: FrameSize,
    inside: &str,
) -> Result<TrialStream, String> {
    // One template per size of the forward stream's (the IMIX's three), its weights kept.
    let frames = frame_size
        .parts(spec.encap.ip)
        .into_iter()
        .map(|(size, _)| {
            FrameTemplate::new(spec, size)
                .map_err(|e| format!("frame size {size} in {inside}: {e}"))
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut config = forward.config.clone();
    config.id = 2;
    config.frames = frames;
    config.rewrite_macs = false;
    Ok(TrialStream {
        config,
        tx_port: 1,
        rx_port: 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use emulate::ppp::link::Negotiated;
    use engine::stream::{Limit, Rate, StreamConfig};
    use std::net::{Ipv4Addr, Ipv6Addr};
    use wire::ethernet::MacAddr;

    const AC_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xac]);
    const CPE_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xce]);

    fn ports() -> (PortSpec, PortSpec) {
        let mut a = PortSpec::new("lan", "eth1");
        a.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 2));
        let mut b = PortSpec::new("wan", "eth2");
        b.ipv4 = Some(Ipv4Addr::new(198, 51, 100, 1));
        (a, b)
    }

    /// The plain forward stream A→B a UDP trial sends (1024 → 9).
    fn forward(a: &PortSpec, b: &PortSpec, size: u32) -> TrialStream {
        let mut spec = StreamSpec::new(EncapSpec::plain(IpVersion::V4));
        spec.stream_id = 1;
        spec.src_ip = a.ipv4.unwrap().into();
        spec.dst_ip = b.ipv4.unwrap().into();
        spec.dst_port = 9;
        let t = FrameTemplate::new(&spec, size as usize).unwrap();
        TrialStream {
            config: StreamConfig::single(1, t, Rate::Pps(1234.0), Limit::DurationNs(1_000_000)),
            tx_port: 0,
            rx_port: 1,
        }
    }

    fn udp_ports(bytes: &[u8]) -> (u16, u16) {
        let d = wire::dissect::dissect(bytes).unwrap();
        let u = &bytes[d.udp_offset.unwrap()..];
        (
            u16::from_be_bytes([u[0], u[1]]),
            u16::from_be_bytes([u[2], u[3]]),
        )
    }

    #[test]
    fn the_reverse_stream_of_an_access_concentrator_is_the_napt_reply_inside_its_session() {
        let (a, b) = ports();
        let fwd = forward(&a, &b, 64);
        // The AC's view of the CPE's session: the CPE got 198.51.100.10 by IPCP.
        let info = SessionInfo {
            local_mac: AC_MAC,
            peer_mac: CPE_MAC,
            session_id: 0x4b9e,
            negotiated: Negotiated {
                our_mru: 1454,
                peer_mru: 1492,
                our_magic: 1,
                peer_magic: 2,
                auth: None,
                local_ipv4: Some(Ipv4Addr::new(198, 51, 100, 1)),
                peer_ipv4: Some(Ipv4Addr::new(198, 51, 100, 10)),
                dns: [None, None],
                local_interface_id: None,
                peer_interface_id: None,
            },
        };
        let r = reverse_in_session(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 64 },
            &fwd,
            &a,
            &b,
            &info,
            true,
        )
        .unwrap();
        assert_eq!((r.tx_port, r.rx_port, r.config.id), (1, 0, 2));
        assert!(!r.config.rewrite_macs, "the session's MACs are the frame's");
        assert_eq!(r.config.rate, fwd.config.rate);
        assert_eq!(r.config.limit, fwd.config.limit);
        let bytes = r.config.frames[0].bytes();
        // The reference 64-byte frame plus 8 bytes of PPPoE and PPP, without the FCS.
        assert_eq!(bytes.len(), 64 + 8 - 4);
        assert_eq!(&bytes[0..6], &CPE_MAC.0);
        assert_eq!(&bytes[6..12], &AC_MAC.0);
        let d = wire::dissect::dissect(bytes).unwrap();
        assert_eq!(d.pppoe_session, Some(0x4b9e));
        assert_eq!(d.src, IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1)));
        assert_eq!(d.dst, IpAddr::V4(Ipv4Addr::new(198, 51, 100, 10)));
        assert_eq!(udp_ports(bytes), (9, 1024), "the forward tuple mirrored");
        // Without an IPCP address for the peer: to port A's own.
        let mut bare = info;
        bare.negotiated.peer_ipv4 = None;
        let r = reverse_in_session(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 64 },
            &fwd,
            &a,
            &b,
            &bare,
            true,
        )
        .unwrap();
        let d = wire::dissect::dissect(r.config.frames[0].bytes()).unwrap();
        assert_eq!(d.dst, IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)));
        // Port B as a subscriber sends to port A behind the access concentrator, not to the
        // concentrator's own IPCP address.
        let r = reverse_in_session(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 64 },
            &fwd,
            &a,
            &b,
            &info,
            false,
        )
        .unwrap();
        let d = wire::dissect::dissect(r.config.frames[0].bytes()).unwrap();
        assert_eq!(d.dst, IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)));
        assert_eq!(d.pppoe_session, Some(0x4b9e));
        // A size the session cannot carry as a template is an error naming it.
        let e = reverse_in_session(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 20 },
            &fwd,
            &a,
            &b,
            &info,
            true,
        )
        .unwrap_err();
        assert!(e.contains("frame size 20 in PPPoE"), "{e}");
    }

    #[test]
    fn the_reverse_stream_of_an_ipoe_port_goes_to_the_lease() {
        let (a, b) = ports();
        let fwd = forward(&a, &b, 1518);
        let info = emulate::ipoe::LeaseInfo {
            local_mac: AC_MAC,
            local: Ipv4Addr::new(198, 51, 100, 1),
            peer_mac: CPE_MAC,
            peer: Ipv4Addr::new(198, 51, 100, 10),
        };
        let r = reverse_to_lease(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 1518 },
            &fwd,
            &a,
            &b,
            &info,
        )
        .unwrap();
        assert_eq!((r.tx_port, r.rx_port, r.config.id), (1, 0, 2));
        assert!(!r.config.rewrite_macs, "the lease's MACs are the frame's");
        let bytes = r.config.frames[0].bytes();
        assert_eq!(bytes.len(), 1518 - 4, "plain: IPoE adds nothing");
        assert_eq!(
            (&bytes[0..6], &bytes[6..12]),
            (&CPE_MAC.0[..], &AC_MAC.0[..])
        );
        let d = wire::dissect::dissect(bytes).unwrap();
        assert_eq!(d.src, IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1)));
        assert_eq!(d.dst, IpAddr::V4(Ipv4Addr::new(198, 51, 100, 10)));
        assert_eq!(
            udp_ports(bytes),
            (9, 1024),
            "the NAPT's reply to the forward tuple"
        );
    }

    #[test]
    fn the_reverse_stream_of_an_aftr_or_b4_rides_the_softwire() {
        let (a, mut b) = ports();
        b.ipv4 = Some(Ipv4Addr::new(203, 0, 113, 2));
        let fwd = forward(&a, &b, 1478);
        let aftr: Ipv6Addr = "2001:db8:d::1".parse().unwrap();
        let b4: Ipv6Addr = "2001:db8:c::2".parse().unwrap();
        let info = SoftwireInfo {
            local_mac: AC_MAC,
            peer_mac: CPE_MAC,
            local: aftr,
            remote: b4,
            mtu: 1500,
            encap_limit: false,
        };
        let r = reverse_in_softwire(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 1478 },
            &fwd,
            &a,
            &b,
            &info,
            false,
        )
        .unwrap();
        let bytes = r.config.frames[0].bytes();
        // 1478 B is the largest reference frame whose tunnelled packet is 1500 bytes.
        assert_eq!(bytes.len(), 1478 + 40 - 4);
        let d = wire::dissect::dissect(bytes).unwrap();
        assert_eq!(d.tunnel, Some((aftr, b4)));
        assert_eq!(d.src, IpAddr::V4(Ipv4Addr::new(203, 0, 113, 2)));
        assert_eq!(d.dst, IpAddr::V4(Ipv4Addr::new(192, 0, 2, 2)));
        assert_eq!(udp_ports(bytes), (9, 1024));
        assert_eq!((r.tx_port, r.rx_port, r.config.rewrite_macs), (1, 0, false));
        // Port B playing the B4 sends from its 192.0.0.2 (RFC 6333 §5.7).
        let r = reverse_in_softwire(
            IpVersion::V4,
            FrameSize::Fixed { bytes: 64 },
            &fwd,
            &a,
            &b,
            &info,
            true,
        )
        .unwrap();
        let d = wire::dissect::dissect(r.config.frames[0].bytes()).unwrap();
        assert_eq!(d.src, IpAddr::V4(emulate::dslite::B4_IPV4));
    }
}
