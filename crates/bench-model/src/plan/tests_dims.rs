//! The case id is written and read back by the same rows of the dimension table: every
//! generated case's dimensions survive `Dims::id` then `Dims::of_id`.

use proptest::prelude::*;
use wire::encap::{EncapSpec, IpVersion};
use wire::linerate::FrameSize;

use super::{Dims, Protocol};

/// Encapsulations as plans write them (the IP version comes from the case).
const ENCAPS: &[&str] = &[
    "plain",
    "vlan",
    "qinq",
    "pppoe",
    "vlan+pppoe",
    "qinq+pppoe",
    "mpls:2",
    "dslite",
];

fn frame() -> impl Strategy<Value = FrameSize> {
    prop_oneof![
        (64usize..=9018).prop_map(|bytes| FrameSize::Fixed { bytes }),
        Just(FrameSize::Imix),
    ]
}

prop_compose! {
    fn dims()(
        profile in "[a-z][a-z0-9-]{0,10}",
        tcp in any::<bool>(),
        v6 in any::<bool>(),
        frame in frame(),
        sessions in 1u32..=128,
        mss in proptest::option::of(536u32..=9000),
        encap in proptest::option::of(0..ENCAPS.len()),
        bidirectional in any::<bool>(),
        offload in proptest::option::of(any::<bool>()),
        fastpath in proptest::option::of(any::<bool>()),
        flows in proptest::option::of(1u16..=u16::MAX),
        tos in proptest::option::of(any::<u8>()),
        vars in proptest::collection::vec(("v[a-z_-]{0,6}", "[A-Za-z0-9.:-]{1,8}"), 0..3),
    ) -> Dims {
        let ip = if v6 { IpVersion::V6 } else { IpVersion::V4 };
        let protocol = if tcp { Protocol::Tcp } else { Protocol::Udp };
        // A DS-Lite softwire carries IPv4 only; the parser refuses it for IPv6 cases.
        let encap = encap
            .and_then(|i| super::dimension::parse_encap(ENCAPS[i]).ok())
            .map(|e: EncapSpec| EncapSpec { ip, ..e })
            .filter(|e| !(e.dslite && ip == IpVersion::V6));
        Dims {
            profile,
            protocol,
            ip,
            frame: (!tcp).then_some(frame),
            sessions: tcp.then_some(sessions),
            mss: if tcp { mss } else { None },
            encap,
            bidirectional,
            offload,
            fastpath,
            flows,
            tos,
            vars,
        }
    }
}

proptest! {
    #[test]
    fn every_case_id_reads_back_into_its_dimensions(d in dims()) {
        let id = d.id();
        prop_assert_eq!(Dims::of_id(&id), d, "id {}", id);
    }
}
