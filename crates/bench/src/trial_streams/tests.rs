//! The whole assembly of a plan's UDP trial, case by case: which streams go each way, in which
//! headers, between which addresses and ports, how many frames learn first, and what the
//! receivers check. The fixtures are shared with the runner's simulated executor
//! (`runner/sim_tests.rs`), which runs such trials through the runner.

use std::net::{Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use emulate::ppp::link::Negotiated;
use engine::port::PortSpec;
use wire::ethernet::MacAddr;

use super::*;
use crate::search::{LineFraction, Probe, ProbeDirection};

pub(crate) const AC_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xac]);
pub(crate) const CPE_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 0xce]);

/// The LAN port (port A) of the fixtures' plans: plain, 192.0.2.2 behind the DUT's 192.0.2.1.
pub(crate) const LAN_PLAIN: &str = "ipv4 = \"192.0.2.2\"\ngateway-v4 = \"192.0.2.1\"\n";
/// Port A as our PPPoE subscriber (its address is the session's).
pub(crate) const LAN_PPPOE: &str = "[ports.lan.pppoe]\nrole = \"client\"\nuser = \"wirerate\"\npassword = \"wirerate\"\ntimeout = \"15s\"\n";
/// The WAN port (port B) plain: 198.51.100.2 behind the DUT's 198.51.100.1.
pub(crate) const WAN_PLAIN: &str = "ipv4 = \"198.51.100.2\"\ngateway-v4 = \"198.51.100.1\"\n";
/// Port B as our PPPoE access concentrator (no address but the session's).
pub(crate) const WAN_PPPOE: &str = "[ports.wan.pppoe]\nrole = \"server\"\nmru = 1454\nauth = [\"pap\"]\nusers = [{ user = \"wirerate\", password = \"wirerate\" }]\ntimeout = \"30s\"\n";
/// Port B as the ISP's IPoE side (the gateway's DHCP WAN).
pub(crate) const WAN_IPOE: &str = "[ports.wan.ipoe]\nipv6 = false\ntimeout = \"30s\"\n";
/// Port B as our DS-Lite AFTR, 203.0.113.2 behind it.
pub(crate) const WAN_DSLITE: &str = "ipv4 = \"203.0.113.2\"\n[ports.wan.dslite]\nrole = \"aftr\"\naddress = \"2001:db8:d::1\"\ntimeout = \"30s\"\n";
/// Port B as our MAP-E BR, 203.0.113.2 behind it.
pub(crate) const WAN_MAPE: &str = "ipv4 = \"203.0.113.2\"\n[ports.wan.mape]\nrole = \"br\"\naddress = \"2001:db8:d::1\"\nrule-ipv6-prefix = \"2001:db8:100::/40\"\nrule-ipv4-prefix = \"198.51.100.0/24\"\nea-bits = 16\npsid-offset = 0\ntimeout = \"30s\"\n";

/// A plan's text over real interfaces `lan` and `wan` (each port's body given), a device DUT
/// and `tail`: its `[run]`, methodologies and matrices.
pub(crate) fn plan_text(lan: &str, wan: &str, tail: &str) -> String {
    format!(
        r#"name = "assembly"
[topology]
kind = "interfaces"
[ports.lan]
interface = "wrasm0"
speed = "1G"
{lan}[ports.wan]
interface = "wrasm1"
speed = "1G"
{wan}[dut]
kind = "device"
[dut.profiles.gateway]
{tail}"#
    )
}

/// A plan between `lan` and `wan` with one UDP matrix whose rest is `matrix`, and its cases.
pub(crate) fn plan(lan: &str, wan: &str, matrix: &str) -> (Plan, Vec<Case>) {
    let text = plan_text(
        lan,
        wan,
        &format!(
            r#"[run]
repetitions = 1
trial-duration = "0.5s"
settle = "0s"
profile-settle = "0s"
[methodology.rfc2544-throughput]
loss-tolerance = 0.0
resolution = 0.02
[[matrix]]
protocol = ["udp"]
ip = [4]
methodologies = ["rfc2544-throughput"]
{matrix}
"#
        ),
    );
    Plan::parse_expanded(&text, "assembly.toml").expect("the fixture plan parses")
}

/// The engine ports of `plan`'s two ports, as the testbed makes them (a port playing a
/// session gets the address the fixture's session gives it, like the testbed's bring-up).
pub(crate) fn engine_ports(plan: &Plan) -> (PortSpec, PortSpec) {
    let spec = |p: &crate::plan::Port| {
        let mut s = PortSpec::new(&p.name, &p.interface);
        s.ipv4 = p.ipv4;
        s.ipv6 = p.ipv6;
        s.next_hop_v4 = p.gateway_v4;
        s
    };
    (spec(&plan.ports[0]), spec(&plan.ports[1]))
}

/// A trial at 1 % of line rate for 0.5 s.
pub(crate) fn request() -> TrialRequest {
    TrialRequest {
        load: LineFraction(0.01),
        duration: Duration::from_millis(500),
        burst_frames: None,
        latency: false,
        probe: None,
    }
}

/// An `mtu-probe` trial of `frame_size` one way at 1,000 frames/s.
pub(crate) fn probe(frame_size: u32, direction: ProbeDirection) -> TrialRequest {
    TrialRequest {
        load: LineFraction(1.0),
        probe: Some(Probe {
            frame_size,
            direction,
            pps: 1000,
        }),
        ..request()
    }
}

/// A PPPoE session as seen from our end `local` (`local_ipv4` its IPCP address, `peer_ipv4`
/// the other end's).
pub(crate) fn session(
    local_mac: MacAddr,
    peer_mac: MacAddr,
    local_ipv4: Ipv4Addr,
    peer_ipv4: Option<Ipv4Addr>,
) -> SessionInfo {
    SessionInfo {
        local_mac,
        peer_mac,
        session_id: 0x4b9e,
        negotiated: Negotiated {
            our_mru: 1454,
            peer_mru: 1492,
            our_magic: 1,
            peer_magic: 2,
            auth: None,
            local_ipv4: Some(local_ipv4),
            peer_ipv4,
            dns: [None, None],
            local_interface_id: None,
            peer_interface_id: None,
        },
    }
}

/// The access concentrator's view of the CPE's session: the CPE got 198.51.100.10 by IPCP.
pub(crate) fn ac_session() -> SessionInfo {
    session(
        AC_MAC,
        CPE_MAC,
        Ipv4Addr::new(198, 51, 100, 1),
        Some(Ipv4Addr::new(198, 51, 100, 10)),
    )
}

/// The gateway's DHCP lease of 198.51.100.10 from our 198.51.100.1.
pub(crate) fn lease() -> LeaseInfo {
    LeaseInfo {
        local_mac: AC_MAC,
        local: Ipv4Addr::new(198, 51, 100, 1),
        peer_mac: CPE_MAC,
        peer: Ipv4Addr::new(198, 51, 100, 10),
    }
}

pub(crate) const AFTR: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xd, 0, 0, 0, 0, 1);
pub(crate) const B4: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, 0, 2);

/// The softwire from our AFTR (or BR) to the CPE's B4 (or CE).
pub(crate) fn softwire() -> SoftwireInfo {
    SoftwireInfo {
        local_mac: AC_MAC,
        peer_mac: CPE_MAC,
        local: AFTR,
        remote: B4,
        mtu: 1500,
        encap_limit: false,
    }
}

/// Where the BR learned the CE's NAPT put the forward stream: 198.51.100.7, port 4660.
pub(crate) const CE: (Ipv4Addr, u16) = (Ipv4Addr::new(198, 51, 100, 7), 4660);

/// The ports of `plan` with these headers; a port without an address of its own gets the
/// session's, the lease's gateway or the B4's, as the testbed's bring-up gives it.
pub(crate) fn headers(
    plan: &Plan,
    a_rides: Option<ARides>,
    b_replies: Option<BReplies>,
) -> PortHeaders {
    let (mut a, mut b) = engine_ports(plan);
    a.ipv4 = a.ipv4.or(match a_rides {
        Some(ARides::Session(info)) => info.local_ipv4(),
        Some(ARides::Softwire(_)) => Some(emulate::dslite::B4_IPV4),
        None => None,
    });
    b.ipv4 = b.ipv4.or(match b_replies {
        Some(BReplies::Session { info, .. }) => info.local_ipv4(),
        Some(BReplies::Lease(l)) => Some(l.local),
        _ => None,
    });
    PortHeaders {
        a,
        b,
        a_rides,
        b_replies,
    }
}

/// The one case of a plan between `lan` and `wan` whose `[[matrix]]` block adds `matrix`,
/// assembled at `request` with these headers.
fn assembled(
    (lan, wan, matrix): (&str, &str, &str),
    a: Option<ARides>,
    b: Option<BReplies>,
    request: &TrialRequest,
) -> Result<(Case, TrialStreams), AssemblyError> {
    let (p, cases) = plan(lan, wan, matrix);
    assert_eq!(cases.len(), 1, "a one-case fixture");
    let t = assemble(&p, &cases[0], request, &headers(&p, a, b))?;
    Ok((cases[0].clone(), t))
}

/// The first frame of stream `i` and its dissection.
fn frame(t: &TrialConfig, i: usize) -> (&[u8], wire::dissect::Dissection) {
    let bytes = t.streams[i].config.frames[0].bytes();
    (bytes, wire::dissect::dissect(bytes).expect("a test frame"))
}

fn udp(stream: &engine::trial::TrialStream) -> (u16, u16) {
    udp_ports(stream).expect("a UDP frame")
}

fn ends(t: &TrialConfig, i: usize) -> (usize, usize, u16) {
    let s = &t.streams[i];
    (s.tx_port, s.rx_port, s.config.id)
}

fn v4(a: u8, b: u8, c: u8, d: u8) -> std::net::IpAddr {
    Ipv4Addr::new(a, b, c, d).into()
}

const AC: BReplies = BReplies::Session {
    info: SessionInfo {
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
    },
    isp_side: true,
};

/// The learning frames: 20 of the forward stream at 1,000 frames/s on AF_PACKET, counted by
/// nothing.
fn assert_learning(t: &TrialStreams, frame_len: usize) {
    let l = &t.learning;
    assert_eq!(l.streams.len(), 1, "the forward stream only");
    assert_eq!(ends(l, 0), (0, 1, 1));
    let c = &l.streams[0].config;
    assert_eq!(c.limit, engine::stream::Limit::Frames(20));
    assert_eq!(c.rate, engine::stream::Rate::Pps(wire::units::Pps(1000.0)));
    assert_eq!(c.frames[0].len(), frame_len);
    assert_eq!(l.backend, engine::trial::Backend::AfPacket);
    assert_eq!(l.drain, Duration::from_millis(50));
    assert_eq!(l.expect, vec![(1, engine::validate::Expect::default())]);
}

#[test]
fn a_one_way_trial_between_plain_ports_is_one_stream_from_a_to_b() {
    let m = (LAN_PLAIN, WAN_PLAIN, "frame-size = [64]");
    let (case, t) = assembled(m, None, None, &request()).unwrap();
    let c = &t.config;
    assert_eq!(c.streams.len(), 1);
    assert_eq!(ends(c, 0), (0, 1, 1));
    assert!(c.streams[0].config.rewrite_macs, "a plain port's next hop");
    let (bytes, d) = frame(c, 0);
    assert_eq!(bytes.len(), 64 - 4);
    assert_eq!((d.src, d.dst), (v4(192, 0, 2, 2), v4(198, 51, 100, 2)));
    assert_eq!(udp(&c.streams[0]), (1024, 9));
    assert!(c.expect.is_empty(), "plain ports: every header checked");
    assert_eq!(t.sent.len(), 1);
    assert_eq!(
        (t.sent[0].tx_port.as_str(), t.sent[0].rx_port.as_str()),
        ("lan", "wan")
    );
    let (p, _) = plan(m.0, m.1, m.2);
    let line = p.line_pps(&case).0;
    assert!((t.max.0 - line).abs() < 1e-9 * line, "{} ≠ {line}", t.max.0);
    assert!(!t.napt_reply);
    assert_learning(&t, 60);
}

#[test]
fn a_bidirectional_trial_between_plain_ports_sends_the_same_stream_back() {
    let m = (
        LAN_PLAIN,
        WAN_PLAIN,
        "frame-size = [64]\nbidirectional = true",
    );
    let (_, t) = assembled(m, None, None, &request()).unwrap();
    let c = &t.config;
    assert_eq!(c.streams.len(), 2);
    assert_eq!((ends(c, 0), ends(c, 1)), ((0, 1, 1), (1, 0, 2)));
    let (_, d) = frame(c, 1);
    assert_eq!((d.src, d.dst), (v4(198, 51, 100, 2), v4(192, 0, 2, 2)));
    assert_eq!(
        udp(&c.streams[1]),
        (1024, 9),
        "the same definition, not a reply"
    );
    assert_eq!(c.streams[0].config.rate, c.streams[1].config.rate);
    assert_eq!(
        t.sent.iter().map(|s| s.stream_id).collect::<Vec<_>>(),
        [1, 2]
    );
    assert_eq!(t.sent[1].tx_port, "wan");
    assert!(!t.napt_reply);
}

#[test]
fn the_reverse_stream_of_an_access_concentrator_is_the_napt_reply_inside_its_session() {
    let m = (
        LAN_PLAIN,
        WAN_PPPOE,
        "frame-size = [64]\nbidirectional = true\nencap = [\"pppoe\"]",
    );
    let (_, t) = assembled(m, None, Some(AC), &request()).unwrap();
    let c = &t.config;
    assert_eq!((ends(c, 0), ends(c, 1)), ((0, 1, 1), (1, 0, 2)));
    assert!(c.streams[0].config.rewrite_macs, "port A is plain");
    assert!(
        !c.streams[1].config.rewrite_macs,
        "the session's MACs are the frame's"
    );
    assert_eq!(c.streams[1].config.rate, c.streams[0].config.rate);
    assert_eq!(c.streams[1].config.limit, c.streams[0].config.limit);
    let (bytes, d) = frame(c, 1);
    // The reference 64-byte frame plus 8 bytes of PPPoE and PPP, without the FCS.
    assert_eq!(bytes.len(), 64 + 8 - 4);
    assert_eq!(
        (&bytes[0..6], &bytes[6..12]),
        (&CPE_MAC.0[..], &AC_MAC.0[..])
    );
    assert_eq!(d.pppoe_session, Some(0x4b9e));
    assert_eq!((d.src, d.dst), (v4(198, 51, 100, 1), v4(198, 51, 100, 10)));
    assert_eq!(udp(&c.streams[1]), (9, 1024), "the forward tuple mirrored");
    let (_, d) = frame(c, 0);
    assert_eq!(d.pppoe_session, None, "the forward stream is plain");
    // What the record says of it.
    let r = &t.sent[1];
    assert!(r.encap.pppoe && !r.encap.dslite && !r.encap.mape);
    assert_eq!((r.tx_port.as_str(), r.rx_port.as_str()), ("wan", "lan"));
    assert_eq!((r.src, r.dst), (v4(198, 51, 100, 1), v4(198, 51, 100, 10)));
    assert_eq!(
        (r.src_port, r.dst_port, r.lengths.as_slice()),
        (9, 1024, &[72][..])
    );
    assert_eq!(r.max_pps, t.sent[0].max_pps, "one direction's line rate");
    // The receivers: any header stack; the reply's destination is the NAPT's to rewrite.
    assert_eq!(c.expect.len(), 2);
    assert!(c.expect.iter().all(|(_, e)| e.shape.is_none()));
    assert!(c.expect[0].1.dst.is_some() && c.expect[1].1.dst.is_none());
    assert!(t.napt_reply, "learning frames first");
    assert_learning(&t, 60);

    // Without an IPCP address for the peer: to port A's own.
    let BReplies::Session { mut info, .. } = AC else {
        unreachable!()
    };
    info.negotiated.peer_ipv4 = None;
    let bare = BReplies::Session {
        info,
        isp_side: true,
    };
    let (_, t) = assembled(m, None, Some(bare), &request()).unwrap();
    assert_eq!(frame(&t.config, 1).1.dst, v4(192, 0, 2, 2));
    // Port B as a subscriber sends to port A behind the access concentrator, not to the
    // concentrator's own IPCP address; nothing rewrites it.
    let BReplies::Session { info, .. } = AC else {
        unreachable!()
    };
    let subscriber = BReplies::Session {
        info,
        isp_side: false,
    };
    let (_, t) = assembled(m, None, Some(subscriber), &request()).unwrap();
    let (_, d) = frame(&t.config, 1);
    assert_eq!((d.dst, d.pppoe_session), (v4(192, 0, 2, 2), Some(0x4b9e)));
    assert!(!t.napt_reply);
    assert!(t.config.expect[1].1.dst.is_some());
}

#[test]
fn a_reverse_probe_is_the_reverse_stream_alone_as_stream_2_after_learning_in_the_smallest_frame() {
    let m = (
        LAN_PLAIN,
        WAN_PPPOE,
        "frame-size = [64]\nbidirectional = true\nencap = [\"pppoe\"]",
    );
    let (_, t) = assembled(m, None, Some(AC), &probe(1400, ProbeDirection::Reverse)).unwrap();
    let c = &t.config;
    assert_eq!(c.streams.len(), 1);
    assert_eq!(ends(c, 0), (1, 0, 2));
    let (bytes, d) = frame(c, 0);
    assert_eq!((bytes.len(), d.pppoe_session), (1400 + 8 - 4, Some(0x4b9e)));
    assert_eq!(
        c.streams[0].config.rate,
        engine::stream::Rate::Pps(wire::units::Pps(1000.0))
    );
    assert_eq!(t.sent.len(), 1);
    assert_eq!(
        (t.sent[0].stream_id, t.sent[0].tx_port.as_str()),
        (2, "wan")
    );
    assert_learning(&t, 60);
    // A forward probe: the forward stream alone, learning in the probe's own frames.
    let (_, t) = assembled(m, None, Some(AC), &probe(1400, ProbeDirection::Forward)).unwrap();
    assert_eq!(t.config.streams.len(), 1);
    assert_eq!(ends(&t.config, 0), (0, 1, 1));
    assert!(!t.napt_reply);
    assert_learning(&t, 1400 - 4);
    // A size the session cannot carry is an error naming it.
    let e = assembled(m, None, Some(AC), &probe(20, ProbeDirection::Reverse)).unwrap_err();
    assert!(
        matches!(
            e,
            AssemblyError::ReverseFrame {
                size: 20,
                inside: "PPPoE",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().starts_with("frame size 20 in PPPoE: "), "{e}");
}

#[test]
fn the_reverse_stream_of_an_ipoe_port_goes_to_the_lease() {
    let m = (
        LAN_PLAIN,
        WAN_IPOE,
        "frame-size = [1518]\nbidirectional = true",
    );
    let (_, t) = assembled(m, None, Some(BReplies::Lease(lease())), &request()).unwrap();
    let c = &t.config;
    assert_eq!(ends(c, 1), (1, 0, 2));
    assert!(
        !c.streams[1].config.rewrite_macs,
        "the lease's MACs are the frame's"
    );
    let (bytes, d) = frame(c, 1);
    assert_eq!(bytes.len(), 1518 - 4, "plain: IPoE adds nothing");
    assert_eq!(
        (&bytes[0..6], &bytes[6..12]),
        (&CPE_MAC.0[..], &AC_MAC.0[..])
    );
    assert_eq!((d.src, d.dst), (v4(198, 51, 100, 1), v4(198, 51, 100, 10)));
    assert_eq!(
        udp(&c.streams[1]),
        (9, 1024),
        "the NAPT's reply to the forward tuple"
    );
    let r = &t.sent[1];
    assert!(!r.encap.pppoe && !r.encap.dslite && !r.encap.mape);
    assert!(t.napt_reply);
}

#[test]
fn the_reverse_stream_of_an_aftr_or_b4_rides_the_softwire() {
    let m = (
        LAN_PLAIN,
        WAN_DSLITE,
        "frame-size = [1478]\nbidirectional = true\nencap = [\"dslite\"]",
    );
    let aftr = BReplies::Softwire {
        info: softwire(),
        b4_side: false,
    };
    let (_, t) = assembled(m, None, Some(aftr), &request()).unwrap();
    let c = &t.config;
    let (bytes, d) = frame(c, 1);
    // 1478 B is the largest reference frame whose tunnelled packet is 1500 bytes.
    assert_eq!(bytes.len(), 1478 + 40 - 4);
    assert_eq!(d.tunnel, Some((AFTR, B4)));
    assert_eq!((d.src, d.dst), (v4(203, 0, 113, 2), v4(192, 0, 2, 2)));
    assert_eq!(udp(&c.streams[1]), (9, 1024));
    assert_eq!(ends(c, 1), (1, 0, 2));
    assert!(!c.streams[1].config.rewrite_macs);
    let (_, d) = frame(c, 0);
    assert_eq!(
        (d.tunnel, d.dst),
        (None, v4(203, 0, 113, 2)),
        "port A is plain"
    );
    assert!(t.sent[1].encap.dslite && !t.sent[1].encap.mape);
    assert!(!t.napt_reply, "a B4 does no NAT");
    assert!(t.config.expect[1].1.dst.is_some());
    // Port B playing the B4 sends from its 192.0.0.2 (RFC 6333 §5.7).
    let b4 = BReplies::Softwire {
        info: softwire(),
        b4_side: true,
    };
    let (_, t) = assembled(m, None, Some(b4), &request()).unwrap();
    assert_eq!(
        frame(&t.config, 1).1.src,
        std::net::IpAddr::V4(emulate::dslite::B4_IPV4)
    );
}

#[test]
fn the_reverse_stream_of_a_br_goes_to_the_ces_shared_address_and_port() {
    let m = (
        LAN_PLAIN,
        WAN_MAPE,
        "frame-size = [64]\nbidirectional = true\nencap = [\"mape\"]",
    );
    let br = BReplies::Br {
        ce: CE,
        info: softwire(),
    };
    let (_, t) = assembled(m, None, Some(br), &request()).unwrap();
    let c = &t.config;
    let (bytes, d) = frame(c, 1);
    assert_eq!(bytes.len(), 64 + 40 - 4);
    assert_eq!(d.tunnel, Some((AFTR, B4)));
    assert_eq!((d.src, d.dst), (v4(203, 0, 113, 2), CE.0.into()));
    assert_eq!(udp(&c.streams[1]), (9, CE.1));
    let r = &t.sent[1];
    assert!(
        r.encap.mape && !r.encap.dslite,
        "MAP-E, though the frame is DS-Lite's"
    );
    assert_eq!((r.dst, r.dst_port), (CE.0.into(), CE.1));
    assert!(t.napt_reply);
    assert!(t.config.expect[1].1.dst.is_none());
}

#[test]
fn both_ends_ours_send_inside_the_session_both_ways() {
    let m = (
        LAN_PPPOE,
        WAN_PPPOE,
        "frame-size = [64]\nbidirectional = true\nencap = [\"pppoe\"]",
    );
    let sub = ARides::Session(session(
        CPE_MAC,
        AC_MAC,
        Ipv4Addr::new(198, 51, 100, 10),
        Some(Ipv4Addr::new(198, 51, 100, 1)),
    ));
    let (_, t) = assembled(m, Some(sub), Some(AC), &request()).unwrap();
    let c = &t.config;
    for i in 0..2 {
        assert!(!c.streams[i].config.rewrite_macs);
        assert_eq!(frame(c, i).1.pppoe_session, Some(0x4b9e), "stream {i}");
    }
    let (bytes, d) = frame(c, 0);
    assert_eq!(
        (&bytes[0..6], &bytes[6..12]),
        (&AC_MAC.0[..], &CPE_MAC.0[..])
    );
    assert_eq!(d.src, v4(198, 51, 100, 10), "the subscriber's IPCP address");
    assert_eq!(frame(c, 1).1.dst, v4(198, 51, 100, 10));
    assert!(t.sent.iter().all(|s| s.encap.pppoe));
    assert_eq!(frame(&t.learning, 0).1.pppoe_session, Some(0x4b9e));
}

#[test]
fn a_port_b_session_without_headers_is_refused_only_when_the_trial_sends_from_it() {
    // Port B's address is the session's (the testbed's bring-up gives it), its headers unknown.
    let no_headers = |p: &Plan| {
        let mut h = headers(p, None, None);
        h.b.ipv4 = Some(Ipv4Addr::new(198, 51, 100, 1));
        h
    };
    let (p, cases) = plan(
        LAN_PLAIN,
        WAN_PPPOE,
        "frame-size = [64]\nencap = [\"pppoe\"]",
    );
    let t = assemble(&p, &cases[0], &request(), &no_headers(&p)).unwrap();
    assert_eq!(t.config.streams.len(), 1, "one way: nothing from port B");
    let (p, cases) = plan(
        LAN_PLAIN,
        WAN_PPPOE,
        "frame-size = [64]\nbidirectional = true\nencap = [\"pppoe\"]",
    );
    let e = assemble(&p, &cases[0], &request(), &no_headers(&p)).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "{}: port B plays a session the testbed has no headers of, so the reverse stream has nothing to ride; nothing was measured",
            cases[0].id
        )
    );
}
