//! The MAP-E BR ([`crate::mape::Br`]) on a port: what it needs on a real Ethernet link —
//! Neighbor Discovery for its address, the CEs' MAC addresses, and optionally the link's
//! provisioning (RA + DHCPv6 with OPTION_S46_CONT_MAPE next to the delegated prefix, as a
//! MAP-E ISP gives its CEs their rule) — the way [`crate::softwire::AftrPort`] carries the
//! DS-Lite AFTR.
//!
//! A CE's MAC address is learned from the frames of its tunnelled packets (the BR has no
//! route table: on the tester's link every CE is a neighbour). Until a CE has sent, packets
//! towards it are refused (`no_neighbor`). The IPv4 packets out of the tunnel go either to
//! events or, with [`BrPort::enable_ip_relay`], to a TUN hand-off; the way back is the
//! rule's arithmetic (no learning needed, unlike the AFTR's).

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::collections::BTreeMap;

use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::ipv6::{Ipv6Packet, Ipv6Repr};
use wire::map_rule::CeMapping;
use wire::units::Nanos;

use crate::arp_nd::{NeighborConfig, Neighbors};
use crate::mape::{Br, BrConfig, BrDrop};
use crate::provision::{ProvisionConfig, ProvisionEvent, Provisioner};
use crate::softwire::{SoftwireInfo, DEFAULT_MAX_EVENTS};
use crate::util::min_deadline;

/// Upstream destinations whose source is remembered ([`BrPort::source_towards`]); further
/// ones are not (a test sends a handful of flows, a real CE behind it a few more).
pub const MAX_SOURCES: usize = 4096;

/// Protocol, source address and port, destination address and port of an unfragmented (or
/// first-fragment) UDP or TCP IPv4 packet.
fn ports_of(ipv4: &[u8]) -> Option<(u8, Ipv4Addr, u16, Ipv4Addr, u16)> {
    let ihl = usize::from(*ipv4.first()? & 0x0f) * 4;
    let proto = *ipv4.get(9)?;
    let frag_offset = u16::from_be_bytes([*ipv4.get(6)?, *ipv4.get(7)?]) & 0x1fff;
    if ihl < 20 || frag_offset != 0 || !(proto == 6 || proto == 17) {
        return None;
    }
    let addr = |at: usize| -> Option<Ipv4Addr> {
        Some(Ipv4Addr::new(
            *ipv4.get(at)?,
            *ipv4.get(at + 1)?,
            *ipv4.get(at + 2)?,
            *ipv4.get(at + 3)?,
        ))
    };
    let port = |at: usize| -> Option<u16> {
        Some(u16::from_be_bytes([*ipv4.get(at)?, *ipv4.get(at + 1)?]))
    };
    Some((proto, addr(12)?, port(ihl)?, addr(16)?, port(ihl + 2)?))
}

/// The BR on a port.
#[derive(Debug, Clone)]
pub struct BrPortConfig {
    pub br: BrConfig,
    pub mac: MacAddr,
    /// Decapsulated packets kept as events; more are only counted.
    pub max_events: usize,
    /// RA and DHCPv6 (address, delegated prefix, DNS, option 94) for the CEs on this link,
    /// from the port's link-local address; None: the CEs' WAN is static.
    pub provision: Option<ProvisionConfig>,
}

impl BrPortConfig {
    pub fn new(br: BrConfig, mac: MacAddr) -> BrPortConfig {
        BrPortConfig {
            br,
            mac,
            max_events: DEFAULT_MAX_EVENTS,
            provision: None,
        }
    }

    /// Also provisions the link ([`ProvisionConfig::mape`]): option 94 carries the first rule
    /// (its F flag `fmr`) and the BR's address; the delegated prefixes are the defaults'
    /// /56s out of 2001:db8:100::/40, which the rule must cover ([`ProvisionConfig::check`]).
    pub fn with_provisioning(mut self, fmr: bool) -> BrPortConfig {
        let mtu = u32::try_from(self.br.mtu).unwrap_or(u32::MAX);
        if let Some(rule) = self.br.rules.first() {
            let m = crate::dhcpv6::MapeProvision::new(rule, fmr, self.br.local);
            self.provision = Some(ProvisionConfig::mape(self.mac, mtu, m));
        }
        self
    }
}

/// What a [`BrPort`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrEvent {
    /// The first packet from a CE passed the checks: the BR knows its MAC now.
    CeUp {
        ce: Ipv6Addr,
        mapping: CeMapping,
        info: SoftwireInfo,
    },
    /// An IPv4 packet came out of the tunnel.
    Packet { ce: Ipv6Addr, packet: Vec<u8> },
    /// The link's provisioning (DHCPv6 bindings) changed.
    Provision(ProvisionEvent),
}

/// Counters of a [`BrPort`] besides the BR's own ([`crate::mape::BrStats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrPortStats {
    pub ces_up: u64,
    /// Packets towards a CE whose MAC is not known yet (it has sent nothing).
    pub no_neighbor: u64,
    /// Packets not kept as events because `max_events` were pending.
    pub events_dropped: u64,
}

/// The BR plus ND for its address (and its link-local one when it provisions the link), plus
/// the link's RA/DHCPv6 when configured.
#[derive(Debug)]
pub struct BrPort {
    cfg: BrPortConfig,
    br: Br,
    nd: Neighbors,
    provision: Option<Provisioner>,
    /// CE MAP address → the MAC its packets came from.
    ces: BTreeMap<Ipv6Addr, MacAddr>,
    /// (protocol, destination IPv4, destination port) of a decapsulated packet → the shared
    /// IPv4 address and port its CE's NAPT sent it from: what a reply must be addressed to
    /// (a test's reverse stream learns it here). Bounded by [`MAX_SOURCES`].
    sources: BTreeMap<(u8, Ipv4Addr, u16), (Ipv4Addr, u16)>,
    events: Vec<BrEvent>,
    tx: Vec<Vec<u8>>,
    /// IPv4 packets out of the tunnel for a TUN hand-off (`Some` once enabled).
    ip_up: Option<Vec<Vec<u8>>>,
    scratch: Vec<u8>,
    pub stats: BrPortStats,
}

impl BrPort {
    pub fn new(cfg: BrPortConfig) -> BrPort {
        let mut nc = NeighborConfig::new(cfg.mac);
        nc.ipv6.push(cfg.br.local);
        let provision = cfg.provision.clone().map(Provisioner::new);
        if let Some(p) = &provision {
            nc.ipv6.push(p.link_local());
        }
        BrPort {
            br: Br::new(cfg.br.clone()),
            nd: Neighbors::new(nc),
            provision,
            cfg,
            ces: BTreeMap::new(),
            sources: BTreeMap::new(),
            events: Vec::new(),
            tx: Vec::new(),
            ip_up: None,
            scratch: Vec::new(),
            stats: BrPortStats::default(),
        }
    }

    pub fn br(&self) -> &Br {
        &self.br
    }

    pub fn neighbors(&self) -> &Neighbors {
        &self.nd
    }

    /// The link's RA/DHCPv6 server, when this port provisions it.
    pub fn provisioner(&self) -> Option<&Provisioner> {
        self.provision.as_ref()
    }

    /// CEs heard from (their MAP addresses), in address order.
    pub fn ces(&self) -> impl Iterator<Item = Ipv6Addr> + '_ {
        self.ces.keys().copied()
    }

    /// The tunnel to CE `ce` as the data path sees it, once the CE has been heard from.
    pub fn softwire_info(&self, ce: Ipv6Addr) -> Option<SoftwireInfo> {
        self.ces.get(&ce).map(|mac| SoftwireInfo {
            local_mac: self.cfg.mac,
            peer_mac: *mac,
            local: self.cfg.br.local,
            remote: ce,
            mtu: self.cfg.br.mtu,
            encap_limit: false,
        })
    }

    pub fn take_events(&mut self) -> Vec<BrEvent> {
        std::mem::take(&mut self.events)
    }

    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        let mut tx = self.nd.take_transmit();
        if let Some(p) = &mut self.provision {
            tx.extend(p.take_transmit());
        }
        tx.append(&mut self.tx);
        tx
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        let p = self.provision.as_ref().and_then(|p| p.next_deadline());
        min_deadline(self.nd.next_deadline(), p)
    }

    pub fn poll(&mut self, now: Nanos) {
        self.nd.poll(now);
        if let Some(p) = &mut self.provision {
            p.poll(now);
            self.events
                .extend(p.take_events().into_iter().map(BrEvent::Provision));
        }
    }

    /// ND for our addresses first, then RA/DHCPv6, then IPv6 to the BR's address (counted by
    /// the BR whether it passes or not); false for anything else.
    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
        if self.nd.handle_frame(now, frame) {
            let _ = self.nd.take_events();
            return true;
        }
        if let Some(p) = &mut self.provision {
            if p.handle_frame(now, frame) {
                self.events
                    .extend(p.take_events().into_iter().map(BrEvent::Provision));
                return true;
            }
        }
        let Ok(eth_frame) = EthernetFrame::new_checked(frame) else {
            return false;
        };
        let Ok(eth) = EthernetRepr::parse(&eth_frame) else {
            return false;
        };
        if eth.ethertype != EtherType::IPV6 {
            return false;
        }
        let body = eth_frame.payload();
        let for_us = Ipv6Packet::new_checked(body)
            .ok()
            .and_then(|ip| Ipv6Repr::parse(&ip).ok())
            .is_some_and(|r| r.dst == self.cfg.br.local);
        if !for_us {
            return false;
        }
        let Ok(d) = self.br.decapsulate(body) else {
            return true; // counted by reason in the BR's upstream_dropped
        };
        let (ce, mapping, packet) = (d.ce, d.mapping, d.ipv4.to_vec());
        self.remember_source(&packet);
        if self.ces.insert(ce, eth.src).is_none() {
            self.stats.ces_up += 1;
            if let Some(info) = self.softwire_info(ce) {
                self.events.push(BrEvent::CeUp { ce, mapping, info });
            }
        }
        if let Some(up) = &mut self.ip_up {
            up.push(packet);
        } else if self.events.len() < self.cfg.max_events {
            self.events.push(BrEvent::Packet { ce, packet });
        } else {
            self.stats.events_dropped += 1;
        }
        true
    }

    /// The shared IPv4 address and port a CE's NAPT sent protocol `proto`'s packets to
    /// `dst`:`dst_port` from, once one passed the BR's checks: the address and port a reply
    /// goes to (the BR maps it to that CE by the rule).
    pub fn source_towards(
        &self,
        proto: u8,
        dst: Ipv4Addr,
        dst_port: u16,
    ) -> Option<(Ipv4Addr, u16)> {
        self.sources.get(&(proto, dst, dst_port)).copied()
    }

    /// Records where a decapsulated UDP or TCP packet came from (the latest source wins: a
    /// NAPT that re-maps a flow is followed).
    fn remember_source(&mut self, ipv4: &[u8]) {
        let Some((proto, src, sport, dst, dport)) = ports_of(ipv4) else {
            return;
        };
        let key = (proto, dst, dport);
        if self.sources.len() < MAX_SOURCES || self.sources.contains_key(&key) {
            self.sources.insert(key, (src, sport));
        }
    }

    /// Sends an IPv4 packet to the CE that owns its destination address and port (RFC 7597
    /// §5.3); the CE it went to. Refusals are counted by reason in the BR's
    /// `downstream_dropped`, a CE not heard from yet in `no_neighbor`.
    pub fn encapsulate(&mut self, ipv4: &[u8]) -> Result<Ipv6Addr, BrSendError> {
        let ce = self
            .br
            .encapsulate(ipv4, &mut self.scratch)
            .map_err(BrSendError::Refused)?;
        let Some(mac) = self.ces.get(&ce).copied() else {
            self.stats.no_neighbor += 1;
            return Err(BrSendError::NoNeighbor(ce));
        };
        let l2 = wire::ethernet::HEADER_LEN;
        let mut f = vec![0u8; l2 + self.scratch.len()];
        let _ = EthernetRepr {
            src: self.cfg.mac,
            dst: mac,
            ethertype: EtherType::IPV6,
        }
        .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
        f[l2..].copy_from_slice(&self.scratch);
        self.tx.push(f);
        Ok(ce)
    }

    /// Hands the IPv4 packets out of the tunnel to [`take_ip`](Self::take_ip) instead of
    /// [`BrEvent::Packet`]: the ISP side of a TUN hand-off (`engine::tun`).
    pub fn enable_ip_relay(&mut self) {
        self.ip_up.get_or_insert_with(Vec::new);
    }

    /// Moves the IPv4 packets the tunnel delivered since the last call into `out`.
    pub fn take_ip(&mut self, out: &mut Vec<Vec<u8>>) {
        if let Some(up) = &mut self.ip_up {
            out.append(up);
        }
    }

    /// [`encapsulate`](Self::encapsulate) for a TUN hand-off: IPv6 packets are refused
    /// (`NoRoute`: MAP-E carries IPv4 only), as is what the rule maps to no CE.
    pub fn send_ip(
        &mut self,
        _now: Nanos,
        packet: &[u8],
    ) -> Result<(), crate::control_plane::RelayDrop> {
        use crate::control_plane::RelayDrop;
        if packet.first().is_some_and(|b| b >> 4 == 6) {
            return Err(RelayDrop::NoRoute);
        }
        self.encapsulate(packet).map(drop).map_err(|e| match e {
            BrSendError::Refused(BrDrop::TooBig) => RelayDrop::TooBig,
            BrSendError::Refused(BrDrop::BadInnerIpv4) => RelayDrop::Malformed,
            BrSendError::Refused(_) => RelayDrop::NoRoute,
            BrSendError::NoNeighbor(_) => RelayDrop::NotUp,
        })
    }

    /// Resolves a CE's MAC address by ND (for a CE that should be reached before it sends).
    pub fn resolve(&mut self, now: Nanos, ce: Ipv6Addr) -> Option<MacAddr> {
        if let Some(m) = self.ces.get(&ce) {
            return Some(*m);
        }
        let m = self.nd.resolve(now, IpAddr::V6(ce))?;
        self.ces.insert(ce, m);
        Some(m)
    }
}

/// Why [`BrPort::encapsulate`] sent nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BrSendError {
    /// The BR refused it (no rule, port outside every set, too big, …).
    Refused(BrDrop),
    /// The CE's MAC is not known: it has sent nothing yet.
    NoNeighbor(Ipv6Addr),
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::net::Ipv4Addr;
    use wire::ipv4::{Ipv4Packet, Ipv4Repr};
    use wire::ipv6::NEXT_HEADER_IPV4;
    use wire::map_rule::MapRule;

    const BR: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xffff, 0, 0, 0, 0, 1);
    /// RFC 7597 Appendix A Example 1: 192.0.2.18 with PSID 0x34 (ports 1232–1235, …).
    const CE: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x12, 0x3400, 0, 0xc000, 0x212, 0x34);
    const CE4: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 18);
    const PEER: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 7);
    const OUR_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    const CE_MAC: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

    fn port() -> BrPort {
        let rule = MapRule::new(
            "2001:db8::".parse().unwrap(),
            40,
            "192.0.2.0".parse().unwrap(),
            24,
            16,
            None,
        )
        .unwrap();
        BrPort::new(BrPortConfig::new(BrConfig::new(BR, vec![rule]), OUR_MAC))
    }

    fn udp(src: Ipv4Addr, sport: u16, dst: Ipv4Addr, dport: u16) -> Vec<u8> {
        let mut b = vec![0u8; 28];
        Ipv4Repr {
            src,
            dst,
            protocol: 17,
            payload_len: 8,
            ttl: 64,
            tos: 0,
            ident: 1,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
        }
        .emit(&mut Ipv4Packet::new_unchecked(&mut b[..]))
        .unwrap();
        b[20..22].copy_from_slice(&sport.to_be_bytes());
        b[22..24].copy_from_slice(&dport.to_be_bytes());
        b[24..26].copy_from_slice(&8u16.to_be_bytes());
        b
    }

    /// An Ethernet frame from the CE carrying `inner` in IPv6 to the BR.
    fn from_ce(inner: &[u8]) -> Vec<u8> {
        let l2 = wire::ethernet::HEADER_LEN;
        let mut f = vec![0u8; l2 + 40 + inner.len()];
        EthernetRepr {
            src: CE_MAC,
            dst: OUR_MAC,
            ethertype: EtherType::IPV6,
        }
        .emit(&mut EthernetFrame::new_unchecked(&mut f[..]))
        .unwrap();
        Ipv6Repr {
            src: CE,
            dst: BR,
            next_header: NEXT_HEADER_IPV4,
            payload_len: inner.len(),
            hop_limit: 64,
            traffic_class: 0,
            flow_label: 0,
        }
        .emit(&mut Ipv6Packet::new_unchecked(&mut f[l2..]))
        .unwrap();
        f[l2 + 40..].copy_from_slice(inner);
        f
    }

    #[test]
    fn a_ce_comes_up_with_its_first_good_packet_and_is_reached_back_through_the_rule() {
        let mut p = port();
        let back = udp(PEER, 53, CE4, 1233);
        assert_eq!(
            p.encapsulate(&back),
            Err(BrSendError::NoNeighbor(CE)),
            "nothing heard from the CE yet"
        );
        let up = udp(CE4, 1232, PEER, 53);
        assert!(p.handle_frame(Nanos(0), &from_ce(&up)));
        let ev = p.take_events();
        assert!(
            matches!(&ev[0], BrEvent::CeUp { ce, mapping, .. } if *ce == CE && mapping.ports.psid() == 0x34)
        );
        assert_eq!(ev[1], BrEvent::Packet { ce: CE, packet: up });
        assert_eq!(p.encapsulate(&back), Ok(CE));
        let tx = p.take_transmit();
        assert_eq!(tx.len(), 1);
        let eth = EthernetFrame::new_checked(&tx[0][..]).unwrap();
        let repr = EthernetRepr::parse(&eth).unwrap();
        assert_eq!((repr.src, repr.dst), (OUR_MAC, CE_MAC));
        let ip = Ipv6Repr::parse(&Ipv6Packet::new_checked(eth.payload()).unwrap()).unwrap();
        assert_eq!((ip.src, ip.dst, ip.next_header), (BR, CE, NEXT_HEADER_IPV4));
        assert_eq!(&eth.payload()[40..], &back[..]);
        assert_eq!(p.stats.ces_up, 1);
    }

    #[test]
    fn frames_outside_the_port_set_are_counted_by_reason_and_not_delivered() {
        let mut p = port();
        p.enable_ip_relay();
        // 1236 is PSID 0x35's port; 80 is in the range a = 6 keeps out of every set.
        assert!(p.handle_frame(Nanos(0), &from_ce(&udp(CE4, 1236, PEER, 53))));
        assert!(p.handle_frame(Nanos(0), &from_ce(&udp(CE4, 80, PEER, 53))));
        assert!(p.handle_frame(Nanos(0), &from_ce(&udp(CE4, 1235, PEER, 53))));
        let mut out = Vec::new();
        p.take_ip(&mut out);
        assert_eq!(out.len(), 1, "only the packet inside the set");
        let s = p.br().stats();
        assert_eq!(s.upstream_dropped.get(BrDrop::WrongPsid), 1);
        assert_eq!(s.upstream_dropped.get(BrDrop::ExcludedPort), 1);
        assert_eq!(s.decapsulated, 1);
        // Towards a CE: a port in no set is refused, counted downstream; a port of another
        // PSID belongs to another CE, which has not been heard from.
        use crate::control_plane::RelayDrop;
        assert_eq!(
            p.send_ip(Nanos(0), &udp(PEER, 53, CE4, 80)),
            Err(RelayDrop::NoRoute)
        );
        assert_eq!(
            p.br().stats().downstream_dropped.get(BrDrop::ExcludedPort),
            1
        );
        assert_eq!(
            p.send_ip(Nanos(0), &udp(PEER, 53, CE4, 1236)),
            Err(RelayDrop::NotUp)
        );
        assert_eq!(p.stats.no_neighbor, 1);
        assert_eq!(p.send_ip(Nanos(0), &udp(PEER, 53, CE4, 1234)), Ok(()));
    }

    #[test]
    fn the_source_a_ce_sent_a_destination_from_is_remembered_only_when_it_passes() {
        let mut p = port();
        assert_eq!(p.source_towards(17, PEER, 53), None);
        // Outside the set: dropped, so not remembered.
        assert!(p.handle_frame(Nanos(0), &from_ce(&udp(CE4, 1236, PEER, 53))));
        assert_eq!(p.source_towards(17, PEER, 53), None);
        assert!(p.handle_frame(Nanos(0), &from_ce(&udp(CE4, 1233, PEER, 53))));
        assert_eq!(p.source_towards(17, PEER, 53), Some((CE4, 1233)));
        assert_eq!(p.source_towards(6, PEER, 53), None, "UDP is not TCP");
        assert_eq!(p.source_towards(17, PEER, 54), None);
        // The NAPT moves the flow: the latest source wins.
        assert!(p.handle_frame(Nanos(0), &from_ce(&udp(CE4, 1234, PEER, 53))));
        assert_eq!(p.source_towards(17, PEER, 53), Some((CE4, 1234)));
        // A reply to it goes back to the CE the rule names.
        assert_eq!(p.encapsulate(&udp(PEER, 53, CE4, 1234)), Ok(CE));
        // Bytes that are no UDP/TCP packet are ignored, not a panic.
        assert_eq!(ports_of(&[0x45, 0, 0]), None);
        assert_eq!(ports_of(&[]), None);
    }

    #[test]
    fn ipv6_not_for_the_br_is_not_claimed() {
        let mut p = port();
        let mut f = from_ce(&udp(CE4, 1232, PEER, 53));
        f[wire::ethernet::HEADER_LEN + 24 + 15] ^= 1; // the destination's last byte
        assert!(!p.handle_frame(Nanos(0), &f));
        assert!(!p.handle_frame(Nanos(0), &f[..10]));
    }

    #[test]
    fn provisioning_offers_option_94_for_the_first_rule() {
        let rule = MapRule::new(
            "2001:db8:100::".parse().unwrap(),
            40,
            "198.51.100.0".parse().unwrap(),
            24,
            16,
            None,
        )
        .unwrap();
        let c = BrPortConfig::new(BrConfig::new(BR, vec![rule]), OUR_MAC).with_provisioning(true);
        let prov = c.provision.as_ref().unwrap();
        prov.check().unwrap();
        let m = prov.dhcp.mape.unwrap();
        assert_eq!((m.br, m.rule.fmr, m.rule.ea_len), (BR, true, 16));
        assert!(prov.dhcp.aftr_name.is_none());
        assert!(BrPort::new(c).provisioner().is_some());
    }
}
