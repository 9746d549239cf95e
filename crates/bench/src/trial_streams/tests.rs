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

/// A plan over real interfaces `lan` and `wan` (each port's body given), one UDP matrix whose
/// rest is `matrix`, and its cases.
pub(crate) fn plan(lan: &str, wan: &str, matrix: &str) -> (Plan, Vec<Case>) {
    let text = format!(
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
[run]
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
