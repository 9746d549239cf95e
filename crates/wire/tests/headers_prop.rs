//! Properties of the L2–L4 headers: no parser panics on any bytes, every representation
//! round-trips through emit → parse, and the TCP MSS rewrite's incremental checksum equals a
//! full recomputation.

use core::net::{Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;
use wire::arp::{ArpOperation, ArpPacket, ArpRepr};
use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::icmpv6::{Icmpv6Packet, NdiscRepr, NeighborFlags};
use wire::ipv4::{Ipv4Packet, Ipv4Repr};
use wire::ipv6::{self, FragmentRepr, Ipv6Packet, Ipv6Repr, TunnelEncapLimitRepr};
use wire::mpls::{self, MplsLabel, MplsRepr};
use wire::tcp::{TcpFlags, TcpOptions, TcpPacket, TcpRepr};
use wire::udp::{UdpPacket, UdpRepr};
use wire::vlan::{QinqRepr, VlanRepr, VlanTag};

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..160)
}

fn mac() -> impl Strategy<Value = MacAddr> {
    any::<[u8; 6]>().prop_map(MacAddr)
}

fn v4() -> impl Strategy<Value = Ipv4Addr> {
    any::<[u8; 4]>().prop_map(Ipv4Addr::from)
}

fn v6() -> impl Strategy<Value = Ipv6Addr> {
    any::<[u8; 16]>().prop_map(Ipv6Addr::from)
}

fn vlan() -> impl Strategy<Value = VlanRepr> {
    (0u8..=7, any::<bool>(), 0u16..=4094, any::<u16>()).prop_map(|(pcp, dei, vid, et)| VlanRepr {
        pcp,
        dei,
        vid,
        ethertype: EtherType(et),
    })
}

fn mpls_label() -> impl Strategy<Value = MplsRepr> {
    (0u32..=0xfffff, 0u8..=7, any::<bool>(), any::<u8>()).prop_map(|(label, tc, bottom, ttl)| {
        MplsRepr {
            label,
            tc,
            bottom,
            ttl,
        }
    })
}

proptest! {
    // ---- arbitrary bytes never panic -------------------------------------------------------

    #[test]
    fn parsers_never_panic(b in bytes(), et in any::<u16>(), nh in any::<u8>()) {
        if let Ok(f) = EthernetFrame::new_checked(&b[..]) {
            let _ = EthernetRepr::parse(&f);
            let _ = f.payload();
        }
        let _ = EthernetRepr::parse(&EthernetFrame::new_unchecked(&b[..]));
        if let Ok(t) = VlanTag::new_checked(&b[..]) {
            let _ = VlanRepr::parse(&t);
            let _ = t.payload();
        }
        let _ = VlanRepr::parse(&VlanTag::new_unchecked(&b[..]));
        let _ = QinqRepr::parse(EtherType(et), &b);
        if let Ok(l) = MplsLabel::new_checked(&b[..]) {
            let _ = MplsRepr::parse(&l);
        }
        if let Ok(s) = mpls::parse_stack(&b) {
            prop_assert!(s.payload_offset() <= b.len());
        }
        if let Ok(p) = ArpPacket::new_checked(&b[..]) {
            let _ = ArpRepr::parse(&p);
            let _ = (p.source_hardware_addr(), p.target_protocol_addr());
        }
        let _ = ArpRepr::parse(&ArpPacket::new_unchecked(&b[..]));
        if let Ok(p) = Ipv4Packet::new_checked(&b[..]) {
            let _ = Ipv4Repr::parse(&p);
            let _ = (p.options(), p.payload(), p.verify_checksum());
        }
        let _ = Ipv4Repr::parse(&Ipv4Packet::new_unchecked(&b[..]));
        if let Ok(p) = Ipv6Packet::new_checked(&b[..]) {
            let _ = Ipv6Repr::parse(&p);
            let _ = ipv6::walk_extension_headers(p.next_header(), p.payload());
        }
        let _ = Ipv6Repr::parse(&Ipv6Packet::new_unchecked(&b[..]));
        if let Ok(e) = ipv6::walk_extension_headers(nh, &b) {
            prop_assert!(e.offset <= b.len());
        }
        let _ = TunnelEncapLimitRepr::parse(&b);
        let _ = FragmentRepr::parse(&b);
        if let Ok(p) = UdpPacket::new_checked(&b[..]) {
            let _ = UdpRepr::parse(&p);
            let _ = p.payload();
        }
        let _ = UdpRepr::parse(&UdpPacket::new_unchecked(&b[..]));
        let _ = Ipv4Packet::new_unchecked(&b[..]).verify_checksum();
        let _ = UdpPacket::new_unchecked(&b[..]).verify_checksum_v4(Ipv4Addr::LOCALHOST, Ipv4Addr::LOCALHOST);
        let _ = UdpPacket::new_unchecked(&b[..]).verify_checksum_v6(Ipv6Addr::LOCALHOST, Ipv6Addr::LOCALHOST);
        if let Ok(p) = TcpPacket::new_checked(&b[..]) {
            let _ = TcpRepr::parse(&p);
            let _ = (p.options(), p.payload());
        }
        let _ = TcpRepr::parse(&TcpPacket::new_unchecked(&b[..]));
        let _ = TcpOptions::new(&b).count();
        let mut m = b.clone();
        let _ = TcpPacket::new_unchecked(&mut m).set_mss(1400);
        if let Ok(p) = Icmpv6Packet::new_checked(&b[..]) {
            let _ = NdiscRepr::parse(&p);
        }
        let _ = NdiscRepr::parse(&Icmpv6Packet::new_unchecked(&b[..]));
    }

    // Ethernet/IP-shaped inputs reach deeper than uniform bytes do.
    #[test]
    fn structured_ip_never_panics(ihl in 0u8..16, tl in any::<u16>(), rest in bytes()) {
        let mut b = vec![0x40 | ihl, 0, (tl >> 8) as u8, tl as u8];
        b.extend(rest);
        let _ = Ipv4Packet::new_checked(&b[..]).map(|p| Ipv4Repr::parse(&p));
        let mut t = vec![0; 12];
        t.push(ihl << 4);
        t.extend(&b);
        let _ = TcpPacket::new_checked(&t[..]).map(|p| TcpRepr::parse(&p));
        let _ = TcpPacket::new_unchecked(&mut t).set_mss(536);
    }

    // ---- round trips ------------------------------------------------------------------------

    #[test]
    fn ethernet_roundtrip(src in mac(), dst in mac(), et in any::<u16>()) {
        let r = EthernetRepr { src, dst, ethertype: EtherType(et) };
        let mut b = vec![0xa5; r.buffer_len()];
        r.emit(&mut EthernetFrame::new_unchecked(&mut b)).unwrap();
        prop_assert_eq!(EthernetRepr::parse(&EthernetFrame::new_checked(&b[..]).unwrap()), Ok(r));
    }

    #[test]
    fn mac_string_roundtrip(m in mac()) {
        prop_assert_eq!(m.to_string().parse::<MacAddr>(), Ok(m));
    }

    #[test]
    fn vlan_roundtrip(r in vlan()) {
        let mut b = vec![0xa5; r.buffer_len()];
        r.emit(&mut VlanTag::new_unchecked(&mut b)).unwrap();
        prop_assert_eq!(VlanRepr::parse(&VlanTag::new_checked(&b[..]).unwrap()), Ok(r));
    }

    #[test]
    fn qinq_roundtrip(outer in vlan(), inner in vlan(), dot1ad in any::<bool>()) {
        let outer_tpid = if dot1ad { EtherType::QINQ } else { EtherType::VLAN };
        let r = QinqRepr { outer_tpid, outer: VlanRepr { ethertype: EtherType::VLAN, ..outer }, inner };
        let mut b = vec![0xa5; r.buffer_len()];
        r.emit(&mut b).unwrap();
        prop_assert_eq!(QinqRepr::parse(outer_tpid, &b), Ok(r));
    }

    #[test]
    fn mpls_roundtrip(r in mpls_label()) {
        let mut b = vec![0xa5; r.buffer_len()];
        r.emit(&mut MplsLabel::new_unchecked(&mut b)).unwrap();
        prop_assert_eq!(MplsRepr::parse(&MplsLabel::new_checked(&b[..]).unwrap()), Ok(r));
    }

    #[test]
    fn mpls_stack_roundtrip(labels in prop::collection::vec(mpls_label(), 1..=mpls::MAX_STACK_DEPTH), tail in bytes()) {
        let mut b = vec![0xa5; labels.len() * mpls::HEADER_LEN];
        let n = mpls::emit_stack(&labels, &mut b).unwrap();
        b.extend(&tail);
        let s = mpls::parse_stack(&b).unwrap();
        prop_assert_eq!(s.payload_offset(), n);
        let last = labels.len() - 1;
        for (i, (got, want)) in s.labels().iter().zip(&labels).enumerate() {
            prop_assert_eq!(*got, MplsRepr { bottom: i == last, ..*want });
        }
        prop_assert_eq!(s.labels().len(), labels.len());
    }

    #[test]
    fn arp_roundtrip(reply in any::<bool>(), sm in mac(), si in v4(), tm in mac(), ti in v4()) {
        let operation = if reply { ArpOperation::Reply } else { ArpOperation::Request };
        let r = ArpRepr { operation, source_mac: sm, source_ip: si, target_mac: tm, target_ip: ti };
        let mut b = vec![0xa5; r.buffer_len()];
        r.emit(&mut ArpPacket::new_unchecked(&mut b)).unwrap();
        prop_assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&b[..]).unwrap()), Ok(r));
    }

    #[test]
    fn ipv4_roundtrip(
        src in v4(), dst in v4(), protocol in any::<u8>(), payload_len in 0usize..200, ttl in any::<u8>(),
        tos in any::<u8>(), ident in any::<u16>(), dont_frag in any::<bool>(), more_frags in any::<bool>(),
        frag_units in 0u16..8192,
    ) {
        let r = Ipv4Repr {
            src, dst, protocol, payload_len, ttl, tos, ident, dont_frag, more_frags, frag_offset: frag_units * 8,
        };
        let mut b = vec![0xa5; r.buffer_len() + payload_len];
        r.emit(&mut Ipv4Packet::new_unchecked(&mut b)).unwrap();
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        prop_assert!(p.verify_checksum());
        prop_assert_eq!(Ipv4Repr::parse(&p), Ok(r));
    }

    #[test]
    fn ipv6_roundtrip(
        src in v6(), dst in v6(), next_header in any::<u8>(), payload_len in 0usize..200,
        hop_limit in any::<u8>(), traffic_class in any::<u8>(), flow_label in 0u32..=0xfffff,
    ) {
        let r = Ipv6Repr { src, dst, next_header, payload_len, hop_limit, traffic_class, flow_label };
        let mut b = vec![0xa5; r.buffer_len() + payload_len];
        r.emit(&mut Ipv6Packet::new_unchecked(&mut b)).unwrap();
        prop_assert_eq!(Ipv6Repr::parse(&Ipv6Packet::new_checked(&b[..]).unwrap()), Ok(r));
    }

    #[test]
    fn ipv6_ext_roundtrip(
        next_header in any::<u8>(), limit in any::<u8>(), frag_units in 0u16..8192, more in any::<bool>(),
        ident in any::<u32>(),
    ) {
        let tel = TunnelEncapLimitRepr { next_header: ipv6::NEXT_HEADER_FRAGMENT, limit };
        let frag = FragmentRepr { next_header, frag_offset: frag_units * 8, more_frags: more, ident };
        let mut b = vec![0xa5; tel.buffer_len() + frag.buffer_len()];
        tel.emit(&mut b).unwrap();
        frag.emit(&mut b[8..]).unwrap();
        prop_assert_eq!(TunnelEncapLimitRepr::parse(&b), Ok(tel));
        prop_assert_eq!(FragmentRepr::parse(&b[8..]), Ok(frag));
        let e = ipv6::walk_extension_headers(ipv6::NEXT_HEADER_DEST_OPTS, &b).unwrap();
        prop_assert_eq!(e.tunnel_encap_limit, Some(limit));
        prop_assert_eq!(e.fragment, Some(ipv6::FragmentInfo { offset: frag.frag_offset, more, ident }));
        // A first fragment continues to the next header, a later one stops after the
        // fragment header; either way the upper protocol is at offset 16 here.
        if !matches!(next_header, 0 | 43 | 44 | 51 | 60) || frag.frag_offset != 0 {
            prop_assert_eq!((e.upper_protocol, e.offset), (next_header, 16));
        }
    }

    #[test]
    fn udp_roundtrip(
        src_port in any::<u16>(), dst_port in any::<u16>(), payload in bytes(), s4 in v4(), d4 in v4(),
        s6 in v6(), d6 in v6(),
    ) {
        let r = UdpRepr { src_port, dst_port };
        let mut b = vec![0xa5; r.buffer_len() + payload.len()];
        let mut p = UdpPacket::new_unchecked(&mut b);
        r.emit(&mut p, payload.len()).unwrap();
        p.payload_mut().copy_from_slice(&payload);
        p.fill_checksum_v4(s4, d4);
        prop_assert!(p.checksum() != 0);
        prop_assert!(p.verify_checksum_v4(s4, d4));
        p.fill_checksum_v6(s6, d6);
        prop_assert!(p.verify_checksum_v6(s6, d6));
        let p = UdpPacket::new_checked(&b[..]).unwrap();
        prop_assert_eq!(UdpRepr::parse(&p), Ok(r));
        prop_assert_eq!(p.payload(), &payload[..]);
    }

    #[test]
    fn tcp_roundtrip(
        src_port in any::<u16>(), dst_port in any::<u16>(), seq in any::<u32>(), ack in any::<u32>(),
        flags in any::<u8>(), window in any::<u16>(), urgent in any::<u16>(), mss in any::<Option<u16>>(),
        payload in bytes(), s4 in v4(), d4 in v4(),
    ) {
        let r = TcpRepr { src_port, dst_port, seq, ack, flags: TcpFlags(flags), window, urgent, mss };
        let mut b = vec![0xa5; r.buffer_len() + payload.len()];
        let mut p = TcpPacket::new_unchecked(&mut b);
        r.emit(&mut p).unwrap();
        p.payload_mut().copy_from_slice(&payload);
        p.fill_checksum_v4(s4, d4);
        prop_assert!(p.verify_checksum_v4(s4, d4));
        let p = TcpPacket::new_checked(&b[..]).unwrap();
        prop_assert_eq!(TcpRepr::parse(&p), Ok(r));
        prop_assert_eq!(p.payload(), &payload[..]);
    }

    #[test]
    fn ndisc_roundtrip(
        advert in any::<bool>(), target in v6(), lladdr in prop::option::of(mac()), flags in any::<[bool; 3]>(),
        src in v6(), dst in v6(),
    ) {
        // Multicast targets are refused by parse (RFC 4861 §7.1).
        prop_assume!(!target.is_multicast());
        let r = if advert {
            let flags = NeighborFlags { router: flags[0], solicited: flags[1], override_flag: flags[2] };
            NdiscRepr::NeighborAdvert { flags, target, target_lladdr: lladdr }
        } else {
            NdiscRepr::NeighborSolicit { target, source_lladdr: lladdr }
        };
        let mut b = vec![0xa5; r.buffer_len()];
        let mut p = Icmpv6Packet::new_unchecked(&mut b);
        r.emit(&mut p).unwrap();
        p.fill_checksum(src, dst);
        prop_assert!(p.verify_checksum(src, dst));
        prop_assert_eq!(NdiscRepr::parse(&Icmpv6Packet::new_checked(&b[..]).unwrap()), Ok(r));
    }

    // ---- TCP MSS rewrite --------------------------------------------------------------------

    /// An MSS option placed after 0–3 NOPs (so at even and odd offsets), other options after
    /// it, an arbitrary payload: the incrementally patched checksum equals a full recompute.
    #[test]
    fn set_mss_incremental_equals_full(
        nops in 0usize..4, old in any::<u16>(), new in any::<u16>(), with_ts in any::<bool>(),
        payload in bytes(), s4 in v4(), d4 in v4(), s6 in v6(), d6 in v6(), seq in any::<u32>(),
    ) {
        let mut opts = vec![1u8; nops];
        opts.extend([2, 4, (old >> 8) as u8, old as u8]);
        if with_ts {
            opts.extend([8, 10, 1, 2, 3, 4, 5, 6, 7, 8]);
        }
        while opts.len() % 4 != 0 {
            opts.push(0);
        }
        let hl = 20 + opts.len();
        let mut b = vec![0u8; hl + payload.len()];
        let mut p = TcpPacket::new_unchecked(&mut b);
        TcpRepr { src_port: 1, dst_port: 2, seq, ack: 0, flags: TcpFlags::SYN, window: 1, urgent: 0, mss: None }
            .emit(&mut p)
            .unwrap();
        p.set_header_len(hl);
        p.options_mut().copy_from_slice(&opts);
        p.payload_mut().copy_from_slice(&payload);

        p.fill_checksum_v4(s4, d4);
        prop_assert_eq!(p.set_mss(new), Ok(old));
        let incremental = p.checksum();
        p.fill_checksum_v4(s4, d4);
        prop_assert_eq!(incremental, p.checksum());
        prop_assert!(p.verify_checksum_v4(s4, d4));

        p.fill_checksum_v6(s6, d6);
        prop_assert_eq!(p.set_mss(old), Ok(new));
        prop_assert!(p.verify_checksum_v6(s6, d6));
        let parsed = TcpRepr::parse(&TcpPacket::new_checked(&b[..]).unwrap()).unwrap();
        prop_assert_eq!(parsed.mss, Some(old));
    }
}
