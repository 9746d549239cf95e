//! DS-Lite: B4 -> AFTR -> B4 round trips, the Tunnel Encapsulation Limit option, outer IPv6
//! fragmentation above the tunnel MTU and its reassembly (in order, out of order, duplicated,
//! missing fragment timing out), bounded memory, and refusals by reason.

use core::net::{Ipv4Addr, Ipv6Addr};

use emulate::dslite::{Aftr, ReassemblyConfig, TunnelConfig, TunnelDrop, TunnelEvent, B4, B4_IPV4};
use emulate::Nanos;
use wire::ethernet::{EthernetFrame, MacAddr};
use wire::ipv4::{Ipv4Packet, Ipv4Repr, IPPROTO_UDP};
use wire::ipv6::{walk_extension_headers, Ipv6Packet};

const AFTR_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0xaf, 0x01]);
const B4_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0xb4, 0x01]);

fn aftr_addr() -> Ipv6Addr {
    "2001:db8:af::1".parse().unwrap()
}
fn b4_addr() -> Ipv6Addr {
    "2001:db8:b4::1".parse().unwrap()
}

fn pair(mtu: usize, encap_limit: Option<u8>) -> (B4, Aftr) {
    let mut bc = TunnelConfig::new(b4_addr(), B4_MAC);
    bc.mtu = mtu;
    bc.encap_limit = encap_limit;
    let mut ac = TunnelConfig::new(aftr_addr(), AFTR_MAC);
    ac.mtu = mtu;
    ac.reassembly = ReassemblyConfig {
        max_datagrams: 4,
        max_bytes: 64 << 10,
        timeout: Nanos(30_000_000_000),
    };
    (B4::new(bc, aftr_addr(), AFTR_MAC), Aftr::new(ac))
}

/// A UDP-carrying IPv4 packet of `len` bytes with a recognisable payload.
fn ipv4(len: usize, seed: u8) -> Vec<u8> {
    let mut p = vec![0u8; len];
    Ipv4Repr {
        src: B4_IPV4,
        dst: Ipv4Addr::new(203, 0, 113, 7),
        protocol: IPPROTO_UDP,
        payload_len: len - 20,
        ttl: 64,
        tos: 0,
        ident: 1,
        dont_frag: true,
        more_frags: false,
        frag_offset: 0,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut p[..]))
    .unwrap();
    for (i, b) in p[20..].iter_mut().enumerate() {
        *b = seed.wrapping_add(i as u8);
    }
    p
}

fn decapsulated(events: Vec<TunnelEvent>) -> Vec<(Ipv6Addr, Vec<u8>)> {
    events
        .into_iter()
        .map(|TunnelEvent::Decapsulated { peer, packet }| (peer, packet))
        .collect()
}

#[test]
fn round_trip_b4_aftr_b4() {
    let (mut b4, mut aftr) = pair(1500, None);
    let up = ipv4(100, 1);
    assert_eq!(b4.encapsulate(&up), Ok(1));
    let frames = b4.take_transmit();
    assert_eq!(frames[0].len(), 14 + 40 + 100);
    for f in &frames {
        assert!(aftr.handle_frame(Nanos(0), f));
    }
    assert_eq!(decapsulated(aftr.take_events()), vec![(b4_addr(), up)]);
    let sw = *aftr.softwire(b4_addr()).unwrap();
    assert_eq!((sw.mac, sw.rx_packets), (B4_MAC, 1));

    // Back towards the B4, to the MAC the AFTR learned.
    let down = ipv4(60, 2);
    assert_eq!(aftr.encapsulate(b4_addr(), &down), Ok(1));
    let frames = aftr.take_transmit();
    assert_eq!(
        EthernetFrame::new_checked(&frames[0][..])
            .unwrap()
            .dst_addr(),
        B4_MAC
    );
    for f in &frames {
        b4.handle_frame(Nanos(0), f);
    }
    assert_eq!(decapsulated(b4.take_events()), vec![(aftr_addr(), down)]);
    assert_eq!(aftr.softwire(b4_addr()).unwrap().tx_packets, 1);

    // No softwire, no encapsulation.
    let other: Ipv6Addr = "2001:db8:b4::99".parse().unwrap();
    assert_eq!(
        aftr.encapsulate(other, &ipv4(60, 3)),
        Err(TunnelDrop::NoSoftwire)
    );
}

#[test]
fn tunnel_encapsulation_limit_option_is_accepted() {
    let (mut b4, mut aftr) = pair(1500, Some(4));
    let p = ipv4(200, 4);
    b4.encapsulate(&p).unwrap();
    let f = b4.take_transmit().remove(0);
    assert_eq!(f.len(), 14 + 40 + 8 + 200);
    let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
    let ext = walk_extension_headers(ip.next_header(), ip.payload()).unwrap();
    assert_eq!(ext.tunnel_encap_limit, Some(4));
    aftr.handle_frame(Nanos(0), &f);
    assert_eq!(decapsulated(aftr.take_events()), vec![(b4_addr(), p)]);
    assert_eq!(aftr.stats().encap_limit_seen, 1);
}

/// Encapsulates `len` bytes through a B4 with `mtu` and returns the fragments.
fn fragments(mtu: usize, len: usize, limit: Option<u8>) -> (B4, Aftr, Vec<u8>, Vec<Vec<u8>>) {
    let (mut b4, aftr) = pair(mtu, limit);
    let p = ipv4(len, 9);
    let n = b4.encapsulate(&p).unwrap();
    let frames = b4.take_transmit();
    assert_eq!(frames.len(), n);
    (b4, aftr, p, frames)
}

#[test]
fn full_size_ipv4_is_carried_by_fragmenting_the_outer_ipv6() {
    // RFC 6333 §5.3: a 1500-byte IPv4 packet over a 1500-byte IPv6 link.
    let (b4, mut aftr, p, frames) = fragments(1500, 1500, None);
    assert_eq!(frames.len(), 2);
    assert_eq!(b4.stats().fragmented, 1);
    let mut offsets = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let ip = Ipv6Packet::new_checked(&f[14..]).unwrap();
        assert!(f.len() - 14 <= 1500, "fragment {i} exceeds the MTU");
        let ext = walk_extension_headers(ip.next_header(), ip.payload()).unwrap();
        let fr = ext.fragment.unwrap();
        assert_eq!(fr.offset % 8, 0);
        assert_eq!(fr.more, i == 0);
        offsets.push(fr.offset);
    }
    assert_eq!(offsets, vec![0, 1448]);
    for f in &frames {
        aftr.handle_frame(Nanos(0), f);
    }
    assert_eq!(decapsulated(aftr.take_events()), vec![(b4_addr(), p)]);
    assert_eq!(aftr.stats().reassembled, 1);
    assert_eq!(aftr.reassembly_held(), (0, 0));
}

#[test]
fn reassembly_out_of_order_and_with_duplicates() {
    for order in [
        vec![3usize, 2, 1, 0],
        vec![1, 3, 0, 2],
        vec![0, 0, 2, 1, 2, 3],
    ] {
        let (_, mut aftr, p, frames) = fragments(1280, 4000, Some(2));
        assert_eq!(frames.len(), 4);
        for i in &order {
            aftr.handle_frame(Nanos(0), &frames[*i]);
        }
        assert_eq!(
            decapsulated(aftr.take_events()),
            vec![(b4_addr(), p)],
            "{order:?}"
        );
        assert_eq!(aftr.reassembly_held(), (0, 0));
        assert_eq!(aftr.stats().dropped.total(), 0);
    }
}

#[test]
fn missing_fragment_times_out_and_frees_memory() {
    let (_, mut aftr, _, frames) = fragments(1280, 3000, None);
    aftr.handle_frame(Nanos(0), &frames[0]);
    aftr.handle_frame(Nanos(0), &frames[2]);
    assert!(aftr.take_events().is_empty());
    let (n, bytes) = aftr.reassembly_held();
    assert_eq!(n, 1);
    assert_eq!(bytes, 1232 + 536, "chunks of (1280 - 40 - 8) / 8 * 8 bytes");
    assert_eq!(aftr.next_deadline(), Some(Nanos(30_000_000_000)));
    aftr.poll(Nanos(29_999_999_999));
    assert_eq!(aftr.reassembly_held().0, 1);
    aftr.poll(Nanos(30_000_000_000));
    assert_eq!(aftr.reassembly_held(), (0, 0));
    assert_eq!(aftr.stats().dropped.get(TunnelDrop::ReassemblyTimeout), 1);
    // The late fragment starts a new datagram that never completes either.
    aftr.handle_frame(Nanos(31_000_000_000), &frames[1]);
    assert!(aftr.take_events().is_empty());
}

#[test]
fn reassembly_memory_is_bounded() {
    let (mut b4, mut aftr) = pair(1280, None);
    // Five datagrams, only first fragments: the buffer holds 4, refuses the fifth.
    for i in 0..5 {
        b4.encapsulate(&ipv4(3000, i)).unwrap();
        let f = b4.take_transmit().remove(0);
        aftr.handle_frame(Nanos(0), &f);
    }
    assert_eq!(aftr.reassembly_held().0, 4);
    assert_eq!(aftr.stats().dropped.get(TunnelDrop::ReassemblyLimit), 1);
}

#[test]
fn overlapping_fragments_drop_the_datagram() {
    let (_, mut aftr, _, frames) = fragments(1280, 3000, None);
    aftr.handle_frame(Nanos(0), &frames[0]);
    // Same offset, different bytes: an overlap, not a duplicate.
    let mut evil = frames[0].clone();
    let last = evil.len() - 1;
    evil[last] ^= 0xff;
    aftr.handle_frame(Nanos(0), &evil);
    assert_eq!(aftr.stats().dropped.get(TunnelDrop::FragmentOverlap), 1);
    assert_eq!(aftr.reassembly_held(), (0, 0));
}

#[test]
fn refusals_are_counted_by_reason() {
    let (mut b4, mut aftr) = pair(1500, None);
    b4.encapsulate(&ipv4(100, 1)).unwrap();
    let good = b4.take_transmit().remove(0);
    // To another address.
    let mut other = good.clone();
    other[14 + 24 + 15] ^= 1;
    aftr.handle_frame(Nanos(0), &other);
    // Not IPv4 inside (next header UDP).
    let mut udp = good.clone();
    udp[14 + 6] = 17;
    aftr.handle_frame(Nanos(0), &udp);
    // Truncated outer header; broken inner IPv4.
    aftr.handle_frame(Nanos(0), &good[..14 + 30]);
    let mut inner = good.clone();
    inner[14 + 40] = 0x65;
    aftr.handle_frame(Nanos(0), &inner);
    // Not IPv6 at all: not ours.
    let mut arp = good.clone();
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    assert!(!aftr.handle_frame(Nanos(0), &arp));
    let d = &aftr.stats().dropped;
    assert_eq!(d.get(TunnelDrop::NotForUs), 1);
    assert_eq!(d.get(TunnelDrop::NotIpv4), 1);
    assert_eq!(d.get(TunnelDrop::BadIpv6), 1);
    assert_eq!(d.get(TunnelDrop::BadInnerIpv4), 1);
    assert!(aftr.take_events().is_empty());
    assert_eq!(aftr.softwires().count(), 0);

    // A B4 only takes packets from its AFTR.
    let stranger = TunnelConfig::new(
        "2001:db8:ee::1".parse().unwrap(),
        MacAddr([2, 0, 0, 0, 0xee, 1]),
    );
    let mut fake = Aftr::new(stranger);
    fake.add_softwire(b4_addr(), B4_MAC);
    fake.encapsulate(b4_addr(), &ipv4(80, 5)).unwrap();
    for f in fake.take_transmit() {
        b4.handle_frame(Nanos(0), &f);
    }
    assert!(b4.take_events().is_empty());
    assert_eq!(b4.stats().dropped.get(TunnelDrop::UnknownPeer), 1);
}
