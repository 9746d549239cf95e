//! Property tests for the PPPoE and PPP formats: no parser or iterator panics on any bytes,
//! and every generated Repr survives parse(emit(x)) == x.

use core::net::Ipv4Addr;

use proptest::prelude::*;
use wire::ppp::chap::ChapRepr;
use wire::ppp::control::{self, Code, ConfigOption, ControlPacket, ControlRepr, OptionIter};
use wire::ppp::ipcp::{self, IpcpOption};
use wire::ppp::ipv6cp::{self, Ipv6cpOption};
use wire::ppp::lcp::{self, AuthProtocol, LcpData, LcpOption, LcpRepr};
use wire::ppp::pap::PapRepr;
use wire::ppp::{PppPacket, PppRepr, Protocol};
use wire::pppoe::{
    self, PppoeCode, PppoeHeader, PppoeRepr, TagIter, TagType, TagWriter, HEADER_LEN,
};

fn bytes(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(any::<u8>(), 0..=max)
}

/// Runs every reader in the PPP modules over `data`.
fn read_control(data: &[u8]) {
    // Iterators must end: at most one item per two bytes, plus one error.
    assert!(OptionIter::new(data).count() <= data.len() / 2 + 1);
    let _ = lcp::options(data).count();
    let _ = ipcp::options(data).count();
    let _ = ipv6cp::options(data).count();
    if let Some((&kind, value)) = data.split_first() {
        let _ = LcpOption::parse(kind, value);
        let _ = IpcpOption::parse(kind, value);
        let _ = Ipv6cpOption::parse(kind, value);
    }
    let Ok(p) = ControlPacket::new_checked(data) else {
        return;
    };
    let declared = usize::from(p.length());
    let _ = (p.code(), p.raw_code(), p.identifier(), p.options().count());
    let _ = (p.magic_number(), p.echo_data(), p.rejected_protocol());
    let _ = (p.rejected_information(), p.rejected_packet());
    assert!(p.data().len() + 4 == declared);
    let _ = PapRepr::parse(&p);

    // Exact formats: whatever parses must emit the same bytes back (up to Length).
    if let Ok(r) = ControlRepr::parse(&p) {
        let mut out = vec![0xa5; r.buffer_len()];
        r.emit(&mut ControlPacket::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(out, &data[..declared]);
    }
    if let Ok(r) = LcpRepr::parse(&p) {
        let mut out = vec![0xa5; r.buffer_len()];
        r.emit(&mut ControlPacket::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(out, &data[..declared]);
    }
    if let Ok(r) = ChapRepr::parse(&p) {
        let mut out = vec![0xa5; r.buffer_len()];
        r.emit(&mut ControlPacket::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(out, &data[..declared]);
    }
}

fn read_pppoe(data: &[u8]) {
    assert!(TagIter::new(data).count() <= data.len() / 4 + 1);
    let _ = pppoe::find_tag(data, TagType::HostUniq);
    let _ = pppoe::parse_max_payload(data);
    if let Ok(p) = PppPacket::new_checked(data) {
        let _ = (p.protocol(), p.header_len(), p.payload());
        let _ = PppRepr::parse(&p);
    }
    let Ok(h) = PppoeHeader::new_checked(data) else {
        return;
    };
    let _ = (h.version(), h.pppoe_type(), h.code(), h.session_id());
    assert_eq!(h.payload().len(), usize::from(h.length()));
    let _ = h.tags().count();
    let _ = (h.ppp_protocol(), h.ppp_payload());
    if let Ok(r) = PppoeRepr::parse(&h) {
        let mut out = vec![0xa5; r.total_len()];
        r.emit(&mut PppoeHeader::new_unchecked(&mut out[..]))
            .unwrap();
        assert_eq!(out[..HEADER_LEN], data[..HEADER_LEN]);
    }
    if let Ok(payload) = h.ppp_payload() {
        read_control(payload);
    }
}

fn lcp_option() -> impl Strategy<Value = LcpOption<'static>> {
    // Leaked so that the borrowed variants can be generated; the test process is short-lived.
    let leak = |v: Vec<u8>| -> &'static [u8] { Box::leak(v.into_boxed_slice()) };
    prop_oneof![
        any::<u16>().prop_map(LcpOption::Mru),
        any::<u32>().prop_map(LcpOption::Accm),
        any::<u32>().prop_map(LcpOption::MagicNumber),
        Just(LcpOption::AuthProtocol(AuthProtocol::Pap)),
        any::<u8>().prop_map(|algorithm| LcpOption::AuthProtocol(AuthProtocol::Chap { algorithm })),
        (
            any::<u16>().prop_filter("not PAP or CHAP", |p| *p != 0xc023 && *p != 0xc223),
            bytes(251)
        )
            .prop_map(move |(p, d)| LcpOption::AuthProtocol(AuthProtocol::Other {
                protocol: Protocol(p),
                data: leak(d)
            })),
        Just(LcpOption::ProtocolFieldCompression),
        Just(LcpOption::AddressControlFieldCompression),
        (
            any::<u8>().prop_filter("unknown type", |k| ![1, 2, 3, 5, 7, 8].contains(k)),
            bytes(253)
        )
            .prop_map(move |(kind, d)| LcpOption::Unknown {
                kind,
                data: leak(d)
            }),
    ]
}

fn ipcp_option() -> impl Strategy<Value = IpcpOption<'static>> {
    let leak = |v: Vec<u8>| -> &'static [u8] { Box::leak(v.into_boxed_slice()) };
    prop_oneof![
        any::<u32>().prop_map(|a| IpcpOption::IpAddress(Ipv4Addr::from(a))),
        any::<u32>().prop_map(|a| IpcpOption::PrimaryDns(Ipv4Addr::from(a))),
        any::<u32>().prop_map(|a| IpcpOption::SecondaryDns(Ipv4Addr::from(a))),
        (
            any::<u8>().prop_filter("unknown type", |k| ![3, 129, 131].contains(k)),
            bytes(253)
        )
            .prop_map(move |(kind, d)| IpcpOption::Unknown {
                kind,
                data: leak(d)
            }),
    ]
}

fn ipv6cp_option() -> impl Strategy<Value = Ipv6cpOption<'static>> {
    let leak = |v: Vec<u8>| -> &'static [u8] { Box::leak(v.into_boxed_slice()) };
    prop_oneof![
        any::<[u8; 8]>().prop_map(Ipv6cpOption::InterfaceIdentifier),
        (
            any::<u8>().prop_filter("unknown type", |k| *k != 1),
            bytes(253)
        )
            .prop_map(move |(kind, d)| Ipv6cpOption::Unknown {
                kind,
                data: leak(d)
            }),
    ]
}

/// Emits `options` as one Configure-Request and returns the packet bytes.
fn emit_list<O: ConfigOption>(options: &[O]) -> Vec<u8> {
    let mut buf = vec![0xa5; 4 + options.iter().map(|o| o.buffer_len()).sum::<usize>()];
    let n = control::emit_options(&mut buf, Code::ConfigureRequest, 9, |w| {
        options.iter().try_for_each(|o| w.push(o))
    })
    .unwrap();
    assert_eq!(n, buf.len());
    buf
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(data in bytes(300)) {
        read_pppoe(&data);
        read_control(&data);
    }

    #[test]
    fn plausible_headers_never_panic(
        code in any::<u8>(),
        len in 0u16..80,
        rest in bytes(80),
    ) {
        // Shapes that get past the length checks more often than random bytes do.
        let mut c = vec![code, 1];
        c.extend_from_slice(&len.to_be_bytes());
        c.extend_from_slice(&rest);
        read_control(&c);
        let mut p = vec![0x11, code, 0, 1];
        p.extend_from_slice(&(len + 6).to_be_bytes());
        p.extend_from_slice(&[0xc0, 0x21]);
        p.extend_from_slice(&c);
        read_pppoe(&p);
    }

    #[test]
    fn pppoe_repr_round_trip(code in any::<u8>(), session_id in any::<u16>(), payload_len in 0u16..300) {
        let repr = PppoeRepr { code: PppoeCode::from(code), session_id, payload_len };
        let mut buf = vec![0xa5; repr.total_len()];
        repr.emit(&mut PppoeHeader::new_unchecked(&mut buf[..])).unwrap();
        let h = PppoeHeader::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(PppoeRepr::parse(&h), Ok(repr));
        let mut small = vec![0xa5; repr.total_len() - 1];
        prop_assert!(repr.emit(&mut PppoeHeader::new_unchecked(&mut small[..])).is_err());
    }

    #[test]
    fn tags_round_trip(tags in prop::collection::vec((1u16.., bytes(40)), 0..8)) {
        let mut buf = vec![0xa5; tags.iter().map(|(_, v)| 4 + v.len()).sum()];
        let mut w = TagWriter::new(&mut buf);
        for (t, v) in &tags {
            w.push(TagType::from(*t), v).unwrap();
        }
        prop_assert_eq!(w.finish(), buf.len());
        let back: Vec<(u16, Vec<u8>)> = TagIter::new(&buf)
            .map(|t| t.map(|(ty, v)| (u16::from(ty), v.to_vec())))
            .collect::<Result<_, _>>()
            .unwrap();
        prop_assert_eq!(back, tags);
    }

    #[test]
    fn control_repr_round_trip(code in any::<u8>(), identifier in any::<u8>(), data in bytes(300)) {
        let repr = ControlRepr { code: Code::from(code), identifier, data: &data };
        let mut buf = vec![0xa5; repr.buffer_len()];
        repr.emit(&mut ControlPacket::new_unchecked(&mut buf[..])).unwrap();
        let p = ControlPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(ControlRepr::parse(&p), Ok(repr));
    }

    #[test]
    fn lcp_options_round_trip(options in prop::collection::vec(lcp_option(), 0..6)) {
        let buf = emit_list(&options);
        let p = ControlPacket::new_checked(&buf[..]).unwrap();
        let back: Vec<_> = lcp::options(p.data()).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(back, options);
        let repr = LcpRepr::parse(&p).unwrap();
        prop_assert_eq!(repr.data, LcpData::Options(&buf[4..]));
    }

    #[test]
    fn ipcp_options_round_trip(options in prop::collection::vec(ipcp_option(), 0..6)) {
        let buf = emit_list(&options);
        let p = ControlPacket::new_checked(&buf[..]).unwrap();
        let back: Vec<_> = ipcp::options(p.data()).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(back, options);
    }

    #[test]
    fn ipv6cp_options_round_trip(options in prop::collection::vec(ipv6cp_option(), 0..6)) {
        let buf = emit_list(&options);
        let p = ControlPacket::new_checked(&buf[..]).unwrap();
        let back: Vec<_> = ipv6cp::options(p.data()).collect::<Result<_, _>>().unwrap();
        prop_assert_eq!(back, options);
    }

    #[test]
    fn lcp_repr_round_trip(
        which in 0u8..5,
        code_pick in any::<u8>(),
        identifier in any::<u8>(),
        magic_number in any::<u32>(),
        protocol in any::<u16>(),
        data in bytes(200),
    ) {
        let (code, data) = match which {
            0 => (Code::from([9u8, 10, 11][usize::from(code_pick % 3)]),
                  LcpData::Echo { magic_number, data: &data }),
            1 => (Code::ProtocolReject,
                  LcpData::ProtocolReject { protocol: Protocol(protocol), information: &data }),
            2 => (Code::CodeReject, LcpData::CodeReject(&data)),
            3 => {
                let code = match code_pick % 3 { 0 => 5, 1 => 6, _ => code_pick.max(12) };
                (Code::from(code), LcpData::Raw(&data))
            }
            // Options: any bytes that frame as options; build them from the data.
            _ => {
                let n = data.len().min(253);
                let mut opts = vec![0u8; n + 2];
                opts[0] = code_pick;
                opts[1] = (n + 2) as u8;
                opts[2..].copy_from_slice(&data[..n]);
                let leaked: &'static [u8] = Box::leak(opts.into_boxed_slice());
                (Code::from(1 + code_pick % 4), LcpData::Options(leaked))
            }
        };
        let repr = LcpRepr { code, identifier, data };
        let mut buf = vec![0xa5; repr.buffer_len()];
        repr.emit(&mut ControlPacket::new_unchecked(&mut buf[..])).unwrap();
        let p = ControlPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(LcpRepr::parse(&p), Ok(repr));
    }

    #[test]
    fn pap_round_trip(
        which in 0u8..3,
        identifier in any::<u8>(),
        a in bytes(255),
        b in bytes(255),
    ) {
        let repr = match which {
            0 => PapRepr::AuthenticateRequest { identifier, peer_id: &a, password: &b },
            1 => PapRepr::AuthenticateAck { identifier, message: &a },
            _ => PapRepr::AuthenticateNak { identifier, message: &a },
        };
        let mut buf = vec![0xa5; repr.buffer_len()];
        repr.emit(&mut ControlPacket::new_unchecked(&mut buf[..])).unwrap();
        let p = ControlPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(PapRepr::parse(&p), Ok(repr));
    }

    #[test]
    fn chap_round_trip(
        which in 0u8..4,
        identifier in any::<u8>(),
        a in bytes(255),
        b in bytes(100),
    ) {
        let repr = match which {
            0 => ChapRepr::Challenge { identifier, value: &a, name: &b },
            1 => ChapRepr::Response { identifier, value: &a, name: &b },
            2 => ChapRepr::Success { identifier, message: &b },
            _ => ChapRepr::Failure { identifier, message: &b },
        };
        let mut buf = vec![0xa5; repr.buffer_len()];
        repr.emit(&mut ControlPacket::new_unchecked(&mut buf[..])).unwrap();
        let p = ControlPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(ChapRepr::parse(&p), Ok(repr));
    }

    #[test]
    fn ppp_repr_round_trip(protocol in any::<u16>()) {
        let repr = PppRepr { protocol: Protocol(protocol & !0x0100) };
        let mut buf = vec![0xa5; repr.buffer_len()];
        repr.emit(&mut PppPacket::new_unchecked(&mut buf[..])).unwrap();
        let p = PppPacket::new_checked(&buf[..]).unwrap();
        prop_assert_eq!(PppRepr::parse(&p), Ok(repr));
    }
}
