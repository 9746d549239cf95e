//! Frame templates, checked with the crate's own parsers: every length and checksum of every
//! encapsulation, and the incremental restamp against a full recomputation. (The independent
//! check with tshark is in the cli crate's tests.)

use std::net::IpAddr;

use proptest::prelude::*;
use wire::checksum;
use wire::dissect::{dissect, signature};
use wire::encap::EncapSpec;
use wire::ipv4::Ipv4Packet;
use wire::template::{FrameTemplate, StreamSpec, TemplateError};
use wire::udp::UdpPacket;

const ENCAPS: &[&str] = &[
    "ipv4",
    "ipv6",
    "vlan",
    "qinq",
    "vlan+ipv6",
    "qinq+ipv6",
    "mpls:1",
    "mpls:3",
    "mpls:2+ipv6",
    "vlan+mpls:2",
    "pppoe",
    "pppoe+ipv6",
    "pppoe+vlan",
    "pppoe+qinq+ipv6",
    "dslite",
    "dslite+pppoe",
    "dslite+vlan",
];

fn build(encap: &str, size: usize) -> (StreamSpec, FrameTemplate) {
    let e: EncapSpec = encap.parse().unwrap();
    let mut spec = StreamSpec::new(e);
    spec.stream_id = 0x1234;
    let t = FrameTemplate::new(&spec, size).unwrap_or_else(|err| panic!("{encap} {size}: {err}"));
    (spec, t)
}

/// Lengths and checksums of the test packet inside `frame` are all consistent.
fn assert_consistent(encap: &str, spec: &StreamSpec, frame: &[u8], size: usize) {
    let d = dissect(frame).unwrap_or_else(|e| panic!("{encap}: dissect: {e}"));
    let ip_len = size - 18;
    assert_eq!(d.src, spec.src_ip, "{encap}");
    assert_eq!(d.dst, spec.dst_ip, "{encap}");
    assert_eq!(
        d.ip_offset + ip_len,
        frame.len(),
        "{encap}: frame ends with the IP packet"
    );
    let udp_at = d.udp_offset.unwrap();
    let udp = UdpPacket::new_checked(&frame[udp_at..d.ip_offset + ip_len]).unwrap();
    assert_eq!(
        usize::from(udp.len()),
        ip_len - (udp_at - d.ip_offset),
        "{encap}"
    );
    match (d.src, d.dst) {
        (IpAddr::V4(s), IpAddr::V4(dst)) => {
            let ip = Ipv4Packet::new_checked(&frame[d.ip_offset..]).unwrap();
            assert_eq!(usize::from(ip.total_len()), ip_len, "{encap}");
            assert!(ip.verify_checksum(), "{encap}: IPv4 header checksum");
            assert!(udp.verify_checksum_v4(s, dst), "{encap}: UDP checksum");
        }
        (IpAddr::V6(s), IpAddr::V6(dst)) => {
            assert!(udp.verify_checksum_v6(s, dst), "{encap}: UDP checksum")
        }
        _ => unreachable!(),
    }
    let e: EncapSpec = encap.parse().unwrap();
    assert_eq!(e.pppoe, d.pppoe_session.is_some(), "{encap}");
    assert_eq!(e.dslite, d.tunnel.is_some(), "{encap}");
    assert_eq!(
        usize::from(e.mpls_labels),
        usize::from(d.mpls_labels),
        "{encap}"
    );
    assert_eq!(e.tagging.tags(), usize::from(d.vlan_count), "{encap}");
}

#[test]
fn every_encapsulation_builds_a_consistent_frame() {
    for encap in ENCAPS {
        let e: EncapSpec = encap.parse().unwrap();
        let min = e.min_frame_size();
        for size in [min, min + 1, 128, 1280, 1518] {
            let (spec, t) = build(encap, size);
            assert_eq!(t.wire_size(), size + e.overhead(), "{encap} {size}");
            assert_eq!(t.reference_size(), size);
            assert_consistent(encap, &spec, t.bytes(), size);
            let (_, sig) = signature(t.bytes()).unwrap();
            assert_eq!(sig.stream_id(), 0x1234);
            assert!(t.signature_offset() + 16 <= t.len());
        }
    }
}

#[test]
fn too_small_names_the_smallest_size_that_works() {
    let e: EncapSpec = "ipv6".parse().unwrap();
    match FrameTemplate::new(&StreamSpec::new(e), 81) {
        Err(err @ TemplateError::TooSmall { min: 82, .. }) => {
            assert!(err.to_string().contains("82 B"))
        }
        other => panic!("{other:?}"),
    }
    let e: EncapSpec = "pppoe".parse().unwrap();
    assert!(matches!(
        FrameTemplate::new(&StreamSpec::new(e), 63),
        Err(TemplateError::TooSmall { min: 64, .. })
    ));
}

#[test]
fn mismatched_values_are_refused() {
    let e: EncapSpec = "ipv6".parse().unwrap();
    let mut spec = StreamSpec::new(e);
    spec.src_ip = "192.0.2.1".parse().unwrap();
    assert!(matches!(
        FrameTemplate::new(&spec, 128),
        Err(TemplateError::Invalid(_))
    ));
    let mut spec = StreamSpec::new("vlan".parse().unwrap());
    spec.vlans[0].vid = 4095;
    assert!(FrameTemplate::new(&spec, 128).is_err());
    let mut spec = StreamSpec::new("pppoe".parse().unwrap());
    spec.pppoe_session = 0xffff;
    assert!(FrameTemplate::new(&spec, 128).is_err());
}

proptest! {
    /// Restamping equals building the same frame from scratch with a full checksum.
    #[test]
    fn stamp_equals_full_recomputation(idx in 0..ENCAPS.len(), extra in 0usize..400, seq: u64, ts: u64) {
        let encap = ENCAPS[idx];
        let e: EncapSpec = encap.parse().unwrap();
        let size = e.min_frame_size() + extra;
        let (spec, t) = build(encap, size);
        let mut frame = vec![0xa5; t.len()];
        frame.copy_from_slice(t.bytes());
        // Stamp twice: the second must not depend on the first.
        t.stamp(&mut frame, seq.wrapping_add(7), ts ^ 0xdead);
        t.stamp(&mut frame, seq, ts);
        assert_consistent(encap, &spec, &frame, size);
        let (d, sig) = signature(&frame).unwrap();
        prop_assert_eq!(sig.seq32(), seq as u32);
        prop_assert_eq!(sig.timestamp_ns(), ts);
        // Full recomputation of the UDP checksum over the stamped frame.
        let udp_at = d.udp_offset.unwrap();
        let end = d.ip_offset + size - 18;
        let mut copy = frame[udp_at..end].to_vec();
        copy[6] = 0;
        copy[7] = 0;
        let pseudo = match (d.src, d.dst) {
            (IpAddr::V4(s), IpAddr::V4(dd)) => checksum::pseudo_header_v4(s, dd, 17, copy.len() as u16),
            (IpAddr::V6(s), IpAddr::V6(dd)) => checksum::pseudo_header_v6(s, dd, 17, copy.len() as u32),
            _ => unreachable!(),
        };
        let full = checksum::udp_nonzero(!checksum::fold(pseudo + checksum::sum(&copy)));
        prop_assert_eq!(u16::from_be_bytes([frame[udp_at + 6], frame[udp_at + 7]]), full);
    }

    /// dissect never panics on arbitrary bytes, nor on a template frame cut short anywhere.
    #[test]
    fn dissect_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200), idx in 0..ENCAPS.len(), cut in 0usize..200) {
        let _ = dissect(&bytes);
        let (_, t) = build(ENCAPS[idx], 128);
        let cut = cut.min(t.len());
        let _ = dissect(&t.bytes()[..cut]);
        let _ = signature(&t.bytes()[..cut]);
    }
}
