//! PPP over Ethernet (RFC 2516, RFC 4638): the access concentrator ([`server`]), the
//! subscriber ([`client`]), and what both share: frame building and checking, session keys,
//! hostile-input reasons, and [`SessionInfo`], the negotiated session the engine's fast path
//! needs to build `pppoe` streams.

use core::net::Ipv4Addr;

use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::ppp::Protocol;
use wire::pppoe::{
    parse_max_payload, PppoeCode, PppoeHeader, PppoeRepr, TagIter, TagType, TagWriter,
    SESSION_HEADER_LEN,
};
use wire::template::StreamSpec;

use crate::ppp::link::Anomaly;
use crate::ppp::Negotiated;

pub mod client;
pub mod fleet;
pub mod server;
pub mod subscribers;

/// The ranges subscriber addresses come from (DESIGN.md §6, RFC 5737): 192.0.2.0/24,
/// 198.51.100.0/24 and 203.0.113.0/24, each a /24 given here by its network address.
pub const DOCUMENTATION_NETS: [Ipv4Addr; 3] = [
    Ipv4Addr::new(192, 0, 2, 0),
    Ipv4Addr::new(198, 51, 100, 0),
    Ipv4Addr::new(203, 0, 113, 0),
];

/// The documentation /24 holding `a` (its network address), if any.
pub fn documentation_net(a: Ipv4Addr) -> Option<Ipv4Addr> {
    let net = Ipv4Addr::from(u32::from(a) & !0xff);
    DOCUMENTATION_NETS.contains(&net).then_some(net)
}

/// The network a subscriber pool starting at `a` lives in: the documentation /24 holding it
/// or, for pools of thousands, the benchmarking range 198.18.0.0/15 (DESIGN.md §6). A pool
/// never hands out this network's own network or broadcast address.
pub fn pool_net(a: Ipv4Addr) -> Option<crate::ranges::Ipv4Net> {
    if let Some(net) = documentation_net(a) {
        return Some(crate::ranges::Ipv4Net::new(net, 24));
    }
    let b = crate::ranges::BENCHMARK_V4;
    b.contains(a).then_some(b)
}

/// A configuration a PPPoE machine refuses to run with ([`server::ServerConfig::check`],
/// [`client::ClientConfig::check`]); the message says what is wrong and what would work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// The MRU to request is outside `min..=max` (64 to 1492, or to the RFC 4638 payload).
    Mru { mru: u16, min: u16, max: u16 },
    /// A pool of size 0: every subscriber would be refused.
    EmptyPool,
    /// The pool does not start in a documentation range.
    PoolOutsideDocumentation { first: Ipv4Addr },
    /// The pool starts at the network (`.0`) or broadcast (`.255`) address of its /24.
    PoolStartsAtNetworkOrBroadcast { first: Ipv4Addr, broadcast: bool },
    /// The pool would hand out the gateway's own address; `largest` pool from `first` does not.
    PoolHoldsGateway {
        first: Ipv4Addr,
        size: u32,
        gateway: Ipv4Addr,
        largest: u32,
    },
    /// The pool runs past `.254` of its documentation /24 (into the broadcast address and out
    /// of the range); `largest` is the biggest pool from `first` that fits.
    PoolTooLarge {
        first: Ipv4Addr,
        size: u32,
        largest: u32,
    },
    /// A subscriber table line that cannot work with this configuration (a fixed address
    /// equal to the gateway's).
    Subscriber(subscribers::TableError),
}

impl core::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let ranges = crate::ranges::LAB_V4_TEXT;
        let net_of =
            |first: Ipv4Addr| pool_net(first).unwrap_or(crate::ranges::Ipv4Net::new(first, 24));
        match *self {
            ConfigError::Mru { mru, min, max } if mru < min => write!(
                f,
                "MRU {mru} is below the {min} bytes LCP accepts (it would silently become \
                 {min}): give {min} to {max}"
            ),
            ConfigError::Mru { mru, min, max } => write!(
                f,
                "MRU {mru} is more than the {max} bytes of PPP payload this PPPoE session \
                 carries (it would silently become {max}): give {min} to {max}"
            ),
            ConfigError::EmptyPool => f.write_str(
                "an address pool of size 0 would refuse every subscriber: give a size of 1 or more",
            ),
            ConfigError::PoolOutsideDocumentation { first } => write!(
                f,
                "the pool starts at {first}, outside the documentation ranges subscribers get \
                 addresses from ({ranges})"
            ),
            ConfigError::PoolStartsAtNetworkOrBroadcast { first, broadcast } => {
                let what = if broadcast { "broadcast" } else { "network" };
                let net = net_of(first);
                let next = Ipv4Addr::from(u32::from(net.network()) + 1);
                let last = Ipv4Addr::from(u32::from(net.broadcast()) - 1);
                write!(
                    f,
                    "the pool starts at {first}, the {what} address of {net}, which is never \
                     handed out: start at {next} to {last}"
                )
            }
            ConfigError::PoolHoldsGateway {
                first,
                size,
                gateway,
                largest,
            } => {
                write!(
                    f,
                    "a pool of {size} from {first} would hand out the gateway's own address \
                     {gateway}: "
                )?;
                if largest > 0 {
                    write!(f, "the largest pool from {first} that fits is {largest}")
                } else {
                    let next = Ipv4Addr::from(u32::from(gateway) + 1);
                    write!(
                        f,
                        "start the pool after the gateway (at {next}) or move the gateway"
                    )
                }
            }
            ConfigError::PoolTooLarge {
                first,
                size,
                largest,
            } => {
                let net = net_of(first);
                let last = Ipv4Addr::from(u32::from(first).saturating_add(size.saturating_sub(1)));
                write!(
                    f,
                    "a pool of {size} from {first} would run to {last}, past the last host \
                     address of {net} and out of the lab ranges ({ranges}): the largest pool \
                     from {first} that fits is {largest}"
                )?;
                if net.len == 24 {
                    write!(
                        f,
                        " (for thousands of subscribers start the pool in 198.18.0.0/15, e.g. \
                         --pool 198.18.0.1)"
                    )?;
                }
                Ok(())
            }
            ConfigError::Subscriber(ref e) => write!(f, "subscriber table {e}"),
        }
    }
}

impl std::error::Error for ConfigError {}

impl From<subscribers::TableError> for ConfigError {
    fn from(e: subscribers::TableError) -> ConfigError {
        ConfigError::Subscriber(e)
    }
}

/// A session as RFC 2516 identifies it: the client's MAC and the session id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionKey {
    pub client: MacAddr,
    pub session_id: u16,
}

/// Input that was refused, by reason. Every frame either does something or lands here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum HostileReason {
    /// Shorter than an Ethernet header.
    TruncatedEthernet,
    /// A PPPoE header shorter than 6 bytes or than its LENGTH.
    TruncatedPppoe,
    /// VER/TYPE other than 1.
    BadVersion,
    /// A multicast source MAC.
    BadSourceMac,
    /// A discovery code on the session EtherType or vice versa.
    WrongEtherType,
    /// A PPPoE code that is not defined, or not one this end should receive.
    UnexpectedCode,
    /// A PADI or PADR whose session id is not 0.
    NonZeroSessionId,
    /// A tag list whose lengths run past the payload (or a bad End-Of-List).
    BadTags,
    /// A PPP-Max-Payload tag that is not 2 bytes.
    BadMaxPayload,
    /// A PADI or PADR without a Service-Name tag.
    MissingServiceName,
    /// A PADR without our AC-Cookie, or with one that is not ours for this MAC.
    BadCookie,
    /// PADIs beyond the configured rate (flood protection).
    PadiRateLimited,
    /// A session frame or PADT for a session that does not exist.
    UnknownSession,
    /// A unicast discovery frame for another MAC, or a unicast PADR/PADT broadcast.
    NotForUs,
    /// A reply (PADO/PADS) that does not match what we asked (Host-Uniq, AC).
    Unsolicited,
    /// Inside the session: the PPP link did not use the frame.
    Ppp(Anomaly),
}

/// Discovery tags of interest, as slices of the frame.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tags<'a> {
    pub service_names: Vec<&'a [u8]>,
    pub ac_name: Option<&'a [u8]>,
    pub host_uniq: Option<&'a [u8]>,
    pub ac_cookie: Option<&'a [u8]>,
    pub relay_session_id: Option<&'a [u8]>,
    pub max_payload: Option<u16>,
    pub error: Option<TagType>,
}

impl<'a> Tags<'a> {
    pub fn parse(payload: &'a [u8]) -> Result<Tags<'a>, HostileReason> {
        let mut t = Tags::default();
        for tag in TagIter::new(payload) {
            let (ty, v) = tag.map_err(|_| HostileReason::BadTags)?;
            match ty {
                TagType::ServiceName => t.service_names.push(v),
                TagType::AcName => t.ac_name = t.ac_name.or(Some(v)),
                TagType::HostUniq => t.host_uniq = t.host_uniq.or(Some(v)),
                TagType::AcCookie => t.ac_cookie = t.ac_cookie.or(Some(v)),
                TagType::RelaySessionId => t.relay_session_id = t.relay_session_id.or(Some(v)),
                TagType::PppMaxPayload => {
                    t.max_payload =
                        Some(parse_max_payload(v).map_err(|_| HostileReason::BadMaxPayload)?)
                }
                e if e.is_error() => t.error = t.error.or(Some(e)),
                _ => {}
            }
        }
        Ok(t)
    }
}

/// A PPPoE frame, checked down to the PPPoE header.
pub(crate) struct Parsed<'a> {
    pub eth: EthernetRepr,
    pub pppoe: PppoeRepr,
    pub payload: &'a [u8],
}

/// Parses Ethernet and PPPoE. `Ok(None)` if the frame is not PPPoE at all.
pub(crate) fn parse(frame: &[u8]) -> Result<Option<Parsed<'_>>, HostileReason> {
    let eth_frame =
        EthernetFrame::new_checked(frame).map_err(|_| HostileReason::TruncatedEthernet)?;
    let eth = EthernetRepr::parse(&eth_frame).map_err(|_| HostileReason::TruncatedEthernet)?;
    let discovery = match eth.ethertype {
        EtherType::PPPOE_DISCOVERY => true,
        EtherType::PPPOE_SESSION => false,
        _ => return Ok(None),
    };
    if eth.src.is_multicast() {
        return Err(HostileReason::BadSourceMac);
    }
    let body = eth_frame.payload();
    let h = PppoeHeader::new_checked(body).map_err(|_| HostileReason::TruncatedPppoe)?;
    let pppoe = PppoeRepr::parse(&h).map_err(|e| match e {
        wire::Error::Unsupported(_) => HostileReason::BadVersion,
        _ => HostileReason::TruncatedPppoe,
    })?;
    if pppoe.code.is_discovery() != discovery {
        return Err(HostileReason::WrongEtherType);
    }
    Ok(Some(Parsed {
        eth,
        pppoe,
        payload: h.payload(),
    }))
}

/// Builds a discovery frame with the given tags.
pub(crate) fn discovery_frame(
    src: MacAddr,
    dst: MacAddr,
    code: PppoeCode,
    session_id: u16,
    tags: &[(TagType, &[u8])],
) -> Vec<u8> {
    let tags_len: usize = tags.iter().map(|(_, v)| 4 + v.len()).sum();
    let mut f = vec![0u8; wire::ethernet::HEADER_LEN + wire::pppoe::HEADER_LEN + tags_len];
    let eth = EthernetRepr {
        src,
        dst,
        ethertype: EtherType::PPPOE_DISCOVERY,
    };
    let _ = eth.emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    let body = &mut f[wire::ethernet::HEADER_LEN..];
    let repr = PppoeRepr {
        code,
        session_id,
        payload_len: tags_len as u16,
    };
    let mut h = PppoeHeader::new_unchecked(body);
    let _ = repr.emit(&mut h);
    let mut w = TagWriter::new(h.payload_mut());
    for (ty, v) in tags {
        let _ = w.push(*ty, v);
    }
    f
}

/// Wraps a PPP frame (protocol + information) in PPPoE session and Ethernet headers.
pub(crate) fn session_frame(src: MacAddr, dst: MacAddr, session_id: u16, ppp: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; wire::ethernet::HEADER_LEN + wire::pppoe::HEADER_LEN + ppp.len()];
    let eth = EthernetRepr {
        src,
        dst,
        ethertype: EtherType::PPPOE_SESSION,
    };
    let _ = eth.emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    let repr = PppoeRepr {
        code: PppoeCode::Session,
        session_id,
        payload_len: ppp.len() as u16,
    };
    let mut h = PppoeHeader::new_unchecked(&mut f[wire::ethernet::HEADER_LEN..]);
    let _ = repr.emit(&mut h);
    h.payload_mut().copy_from_slice(ppp);
    f
}

/// An up session as the data path sees it (either end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionInfo {
    /// Our MAC on the session.
    pub local_mac: MacAddr,
    /// The peer's MAC (the client's on the AC, the AC's on the client).
    pub peer_mac: MacAddr,
    pub session_id: u16,
    /// What PPP agreed (MRUs, addresses, interface identifiers).
    pub negotiated: Negotiated,
}

/// Bytes in front of every data frame of a session: Ethernet, PPPoE, PPP protocol.
pub const DATA_HEADER_LEN: usize = wire::ethernet::HEADER_LEN + SESSION_HEADER_LEN;

impl SessionInfo {
    /// The session key (client MAC first).
    pub fn key(&self, we_are_server: bool) -> SessionKey {
        SessionKey {
            client: if we_are_server {
                self.peer_mac
            } else {
                self.local_mac
            },
            session_id: self.session_id,
        }
    }

    /// The 22 header bytes to prepend to a network-layer datagram of `payload_len` bytes sent
    /// on this session (`protocol`: [`Protocol::IPV4`] or [`Protocol::IPV6`]).
    pub fn data_header(&self, protocol: Protocol, payload_len: usize) -> [u8; DATA_HEADER_LEN] {
        let mut h = [0u8; DATA_HEADER_LEN];
        h[0..6].copy_from_slice(&self.peer_mac.0);
        h[6..12].copy_from_slice(&self.local_mac.0);
        h[12..14].copy_from_slice(&EtherType::PPPOE_SESSION.0.to_be_bytes());
        h[14] = 0x11;
        h[15] = 0x00;
        h[16..18].copy_from_slice(&self.session_id.to_be_bytes());
        let len = (payload_len + 2).min(usize::from(u16::MAX)) as u16;
        h[18..20].copy_from_slice(&len.to_be_bytes());
        h[20..22].copy_from_slice(&protocol.0.to_be_bytes());
        h
    }

    /// The largest datagram we may send in this session (the peer's MRU).
    pub fn max_datagram(&self) -> usize {
        usize::from(self.negotiated.peer_mru)
    }

    /// Points a `pppoe` stream at this session: MACs and session id (and, when IPCP gave
    /// addresses, the inner IPv4 source).
    pub fn apply_to(&self, spec: &mut StreamSpec) {
        spec.src_mac = self.local_mac;
        spec.dst_mac = self.peer_mac;
        spec.pppoe_session = self.session_id;
        if let (Some(local), true) = (self.negotiated.local_ipv4, spec.src_ip.is_ipv4()) {
            spec.src_ip = local.into();
        }
    }

    /// Our IPv4 address on the session, if IPCP gave one.
    pub fn local_ipv4(&self) -> Option<Ipv4Addr> {
        self.negotiated.local_ipv4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::encap::EncapSpec;
    use wire::template::FrameTemplate;

    fn info() -> SessionInfo {
        SessionInfo {
            local_mac: MacAddr([2, 0, 0, 0, 0, 1]),
            peer_mac: MacAddr([2, 0, 0, 0, 0, 2]),
            session_id: 0x1234,
            negotiated: Negotiated {
                our_mru: 1492,
                peer_mru: 1454,
                our_magic: 1,
                peer_magic: 2,
                auth: None,
                local_ipv4: Some(Ipv4Addr::new(198, 51, 100, 10)),
                peer_ipv4: Some(Ipv4Addr::new(198, 51, 100, 1)),
                dns: [None, None],
                local_interface_id: None,
                peer_interface_id: None,
            },
        }
    }

    #[test]
    fn data_header_matches_the_template_and_parses() {
        let s = info();
        let h = s.data_header(Protocol::IPV4, 46);
        let f = [&h[..], &[0x45; 46][..]].concat();
        let p = parse(&f).unwrap().unwrap();
        assert_eq!(p.pppoe.code, PppoeCode::Session);
        assert_eq!(p.pppoe.session_id, 0x1234);
        assert_eq!(p.eth.dst, s.peer_mac);
        let ppp = wire::ppp::PppPacket::new_checked(p.payload).unwrap();
        assert_eq!(ppp.protocol(), Protocol::IPV4);
        assert_eq!(ppp.payload().len(), 46);
        assert_eq!(s.max_datagram(), 1454);

        // The same 22 bytes as wire::template builds for a pppoe stream on this session.
        let mut spec = StreamSpec::new("pppoe".parse::<EncapSpec>().unwrap());
        s.apply_to(&mut spec);
        let t = FrameTemplate::new(&spec, 64).unwrap();
        let ip_len = t.bytes().len() - DATA_HEADER_LEN;
        let ours = s.data_header(Protocol::IPV4, ip_len);
        assert_eq!(&t.bytes()[..DATA_HEADER_LEN], &ours[..]);
        assert_eq!(s.key(true).client, s.peer_mac);
    }

    #[test]
    fn parse_refuses_by_reason() {
        let a = MacAddr([2, 0, 0, 0, 0, 1]);
        let good = discovery_frame(
            a,
            MacAddr::BROADCAST,
            PppoeCode::Padi,
            0,
            &[(TagType::ServiceName, b"")],
        );
        assert!(parse(&good).unwrap().is_some());
        assert_eq!(
            parse(&good[..10]).err(),
            Some(HostileReason::TruncatedEthernet)
        );
        assert_eq!(
            parse(&good[..17]).err(),
            Some(HostileReason::TruncatedPppoe)
        );
        let mut v2 = good.clone();
        v2[14] = 0x21;
        assert_eq!(parse(&v2).err(), Some(HostileReason::BadVersion));
        let mut wrong = good.clone();
        wrong[13] = 0x64;
        assert_eq!(parse(&wrong).err(), Some(HostileReason::WrongEtherType));
        let mut mc = good.clone();
        mc[6] = 0x01;
        assert_eq!(parse(&mc).err(), Some(HostileReason::BadSourceMac));
        let mut other = good;
        other[12] = 0x08;
        other[13] = 0x00;
        assert!(parse(&other).unwrap().is_none());
        // Tags: truncated, bad max payload.
        assert_eq!(
            Tags::parse(&[0x01, 0x01, 0x00, 0x05, 0]).err(),
            Some(HostileReason::BadTags)
        );
        assert_eq!(
            Tags::parse(&[0x01, 0x20, 0x00, 0x01, 5]).err(),
            Some(HostileReason::BadMaxPayload)
        );
    }
}

/// Whether a datagram a session delivered goes to a TUN hand-off (`enable_ip_relay`): IPv4,
/// and IPv6 except to link-local and multicast destinations (Router Solicitations, DHCPv6:
/// the session's own IPv6 provisioning answers those, so they stay events).
pub(crate) fn relayed(protocol: Protocol, payload: &[u8]) -> bool {
    match protocol {
        Protocol::IPV4 => true,
        Protocol::IPV6 => payload
            .get(24)
            .is_some_and(|&b| b != 0xff && !(b == 0xfe && payload[25] & 0xc0 == 0x80)),
        _ => false,
    }
}

/// Where an IP packet handed down from a TUN is going: its PPP protocol and destination.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IpDestination {
    V4(Ipv4Addr),
    /// The interface identifier (low 64 bits) of an IPv6 destination.
    V6 {
        iid: [u8; 8],
    },
}

pub(crate) fn ip_destination(
    packet: &[u8],
) -> Result<(Protocol, IpDestination), crate::control_plane::RelayDrop> {
    use crate::control_plane::RelayDrop;
    match packet.first().map(|b| b >> 4) {
        Some(4) if packet.len() >= 20 => {
            let d = Ipv4Addr::new(packet[16], packet[17], packet[18], packet[19]);
            Ok((Protocol::IPV4, IpDestination::V4(d)))
        }
        Some(6) if packet.len() >= 40 => {
            let mut iid = [0u8; 8];
            iid.copy_from_slice(&packet[32..40]);
            Ok((Protocol::IPV6, IpDestination::V6 { iid }))
        }
        _ => Err(RelayDrop::Malformed),
    }
}

#[cfg(test)]
mod relay_tests {
    use super::*;

    #[test]
    fn link_local_and_multicast_ipv6_stay_with_the_session() {
        let mut v6 = vec![0x60; 40];
        v6[24] = 0x20;
        v6[25] = 0x01;
        assert!(relayed(Protocol::IPV6, &v6), "2001:…");
        v6[24] = 0xfe;
        v6[25] = 0x80;
        assert!(!relayed(Protocol::IPV6, &v6), "fe80::");
        v6[24] = 0xff;
        v6[25] = 0x02;
        assert!(!relayed(Protocol::IPV6, &v6), "ff02::");
        assert!(!relayed(Protocol::IPV6, &v6[..20]), "truncated");
        assert!(relayed(Protocol::IPV4, &[0x45]));
        assert!(!relayed(Protocol(0xc021), &[0x45]));
        assert_eq!(
            ip_destination(&[0x45; 19]),
            Err(crate::control_plane::RelayDrop::Malformed)
        );
        let mut v4 = vec![0x45; 20];
        v4[16..20].copy_from_slice(&[198, 51, 100, 10]);
        assert_eq!(
            ip_destination(&v4),
            Ok((
                Protocol::IPV4,
                IpDestination::V4(Ipv4Addr::new(198, 51, 100, 10))
            ))
        );
    }
}
