//! The builder on its own: directions, the path-aware 100 %, records of what is sent, and the
//! comparison that says whether two front doors built the same trial.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use engine::port::PortSpec;
use engine::stream::Limit;
use wire::encap::{EncapSpec, IpVersion};
use wire::linerate::FrameSize;
use wire::units::BitsPerSec;

use super::*;

fn ports() -> (PortSpec, PortSpec) {
    let mut a = PortSpec::new("a", "x");
    a.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 1));
    a.ipv6 = Some(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1));
    let mut b = PortSpec::new("b", "y");
    b.ipv4 = Some(Ipv4Addr::new(198, 51, 100, 2));
    b.ipv6 = Some(Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 0, 2));
    (a, b)
}

fn stream(encap: &str, size: FrameSize, load: Load) -> StreamSpec {
    StreamSpec::new(
        encap.parse().unwrap(),
        size,
        load,
        Limit::DurationNs(1_000_000_000),
    )
}

fn fixed(bytes: usize) -> FrameSize {
    FrameSize::Fixed { bytes }
}

#[test]
fn both_ways_is_a_to_b_then_b_to_a_at_the_same_load() {
    let (a, b) = ports();
    let mut s = stream("ipv4", fixed(64), Load::LineFraction(0.5));
    s.direction = Direction::Both;
    let built = TrialSpec::new(vec![s], BitsPerSec(1e9))
        .build(&a, &b, None)
        .unwrap();
    let c = &built.config.streams;
    assert_eq!(c.len(), 2);
    assert_eq!((c[0].tx_port, c[0].rx_port, c[0].config.id), (0, 1, 1));
    assert_eq!((c[1].tx_port, c[1].rx_port, c[1].config.id), (1, 0, 2));
    assert_eq!(c[0].config.rate, c[1].config.rate, "same load both ways");
    let d = wire::dissect::dissect(c[1].config.frames[0].bytes()).unwrap();
    assert_eq!(
        (d.src, d.dst),
        (
            IpAddr::from([198, 51, 100, 2]),
            IpAddr::from([192, 0, 2, 1])
        )
    );
    assert_eq!(
        (
            built.sent[1].tx_port.as_str(),
            built.sent[1].rx_port.as_str()
        ),
        ("b", "a")
    );
}

/// 50 % is half the path's line rate: of the frame as sent, and of the far link's frame when
/// the DUT adds an encapsulation (VLAN: 4 bytes more on the far link).
#[test]
fn a_line_fraction_is_of_the_paths_line_rate() {
    let (a, b) = ports();
    let g = BitsPerSec(1e9);
    let plain = stream("ipv4", fixed(64), Load::LineFraction(0.5));
    let mut far_vlan = plain.clone();
    far_vlan.far_encap = Some("vlan+ipv4".parse().unwrap());
    let tagged = stream("vlan+ipv4", fixed(64), Load::LineFraction(0.5));
    let pps = |s: &StreamSpec| {
        TrialSpec::new(vec![s.clone()], g)
            .build(&a, &b, None)
            .unwrap()
            .config
            .streams[0]
            .config
            .pps()
            .0
    };
    assert_eq!(pps(&plain), 0.5 * 1e9 / (84.0 * 8.0));
    assert_eq!(pps(&far_vlan), 0.5 * 1e9 / (88.0 * 8.0));
    assert_eq!(
        pps(&tagged),
        pps(&far_vlan),
        "tagged as sent or by the DUT: one 100 %"
    );
    // The frames of the far-link case are plain as sent; the tagged ones carry the tag.
    let built = TrialSpec::new(vec![far_vlan, tagged], g)
        .build(&a, &b, None)
        .unwrap();
    assert_eq!(built.sent[0].lengths, vec![64]);
    assert_eq!(built.sent[1].lengths, vec![68]);
    assert_eq!(built.sent[1].sizes, vec![64]);
}

#[test]
fn imix_loads_count_the_weighted_mean_frame() {
    let (a, b) = ports();
    let g = BitsPerSec(1e9);
    let built = TrialSpec::new(
        vec![
            stream("ipv4", FrameSize::Imix, Load::LineFraction(1.0)),
            stream("ipv4", FrameSize::Imix, Load::L1Bps(1e9)),
        ],
        g,
    )
    .build(&a, &b, None)
    .unwrap();
    let mean_l1 = (7.0 * 84.0 + 4.0 * 614.0 + 1538.0) * 8.0 / 12.0;
    for s in &built.config.streams {
        assert!(
            (s.config.pps().0 - 1e9 / mean_l1).abs() < 1e-6,
            "{}",
            s.config.pps().0
        );
        assert_eq!(s.config.weights, vec![7, 4, 1]);
    }
    assert_eq!(built.sent[0].sizes, vec![64, 594, 1518]);
    assert!(differences(&built, &built, 0.0).is_empty());
}

/// The comparison finds a difference in any deterministic field, rates included.
#[test]
fn differences_name_what_differs() {
    let (a, b) = ports();
    let g = BitsPerSec(1e9);
    let one = |s: StreamSpec| TrialSpec::new(vec![s], g).build(&a, &b, None).unwrap();
    let base = one(stream("ipv4", fixed(128), Load::LineFraction(0.1)));
    assert!(differences(&base, &base, 0.0).is_empty());
    let faster = one(stream("ipv4", fixed(128), Load::LineFraction(0.1000001)));
    let d = differences(&base, &faster, 0.0);
    assert!(d.iter().any(|d| d.contains("rate")), "{d:?}");
    assert!(differences(&base, &faster, 1e-3).is_empty());
    let mut tos = stream("ipv4", fixed(128), Load::LineFraction(0.1));
    tos.tos = 0x20;
    let d = differences(&base, &one(tos), 0.0);
    assert!(d.iter().any(|d| d.contains("bytes")), "{d:?}");
    let mut v6 = stream("ipv6", fixed(128), Load::LineFraction(0.1));
    v6.encap = EncapSpec::plain(IpVersion::V6);
    assert!(!differences(&base, &one(v6), 0.0).is_empty());
}

/// The numbers no trial runs are refused with the texts both front doors show.
#[test]
fn nonsense_is_refused_with_one_text() {
    let (a, b) = ports();
    let refused = |f: &dyn Fn(&mut StreamSpec)| {
        let mut s = stream("ipv4", fixed(64), Load::Pps(1000.0));
        f(&mut s);
        TrialSpec::new(vec![s], BitsPerSec(1e9))
            .build(&a, &b, None)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(refused(&|s| s.burst = 0), "burst 0: give at least 1");
    assert_eq!(
        refused(&|s| s.flows.dst_port_count = 0),
        "dst-ports 0: give at least 1"
    );
    assert_eq!(
        refused(&|s| s.reorder_every = Some(1)),
        "reorder_every: give K ≥ 2"
    );
    let e = refused(&|s| s.size = fixed(9019));
    assert!(e.contains("above the largest supported, 9018 B"), "{e}");
    let mut b4 = b.clone();
    b4.ipv6 = None;
    let mut s = stream("ipv6", fixed(128), Load::Pps(1000.0));
    s.encap = EncapSpec::plain(IpVersion::V6);
    let e = TrialSpec::new(vec![s], BitsPerSec(1e9))
        .build(&a, &b4, None)
        .unwrap_err();
    assert!(
        matches!(&e, SpecError::NoAddress { port, ip: IpVersion::V6 } if port == "b"),
        "{e:?}"
    );
    assert_eq!(e.to_string(), "port b has no ipv6 address (give --b-addr)");
}

/// A plan's thread limit is the engine's.
#[test]
fn plans_allow_the_engines_threads() {
    assert_eq!(
        usize::from(crate::plan::MAX_THREADS),
        engine::trial::MAX_THREADS
    );
}
