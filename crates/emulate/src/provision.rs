//! IPv6 provisioning on an ISP port: Router Advertisements ([`crate::router_adv`]) and the
//! stateful DHCPv6 server ([`crate::dhcpv6`]) on one Ethernet link, from our link-local
//! address. This is what a stock DS-Lite gateway needs on its WAN to come up by itself: an RA
//! with M/O set (and a default route), then DHCPv6 with an address (IA_NA) or a delegated
//! prefix (IA_PD) for its B4, DNS servers, and the AFTR's name (option 64).
//!
//! [`Provisioner`] is fed Ethernet frames and time like every machine here; it claims Router
//! Solicitations and UDP to port 547 (sent to All_DHCP_Relay_Agents_and_Servers or to us) and
//! leaves everything else (ND, the tunnel) to the machines beside it. Neighbor Discovery for
//! our link-local address is the caller's (the AFTR port adds it to its responder).

use core::net::Ipv6Addr;

use wire::dhcpv6::{ALL_SERVERS, CLIENT_PORT, SERVER_PORT};
use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::icmpv6::{self, Icmpv6Packet};
use wire::ipv6::{Ipv6Packet, Ipv6Repr, NEXT_HEADER_ICMPV6, NEXT_HEADER_UDP};
use wire::routerdisc::{PrefixInfo, RouterSolicitRepr, TYPE_ROUTER_SOLICIT};
use wire::udp::{UdpPacket, UdpRepr};
use wire::units::Nanos;

use crate::arp_nd::ALL_NODES;
use crate::dhcpv6::{AddressPool, Dhcpv6Config, Dhcpv6Event, Dhcpv6Server, PrefixPool};
use crate::router_adv::{Advertiser, RaConfig, RaDestination};
use crate::util::{min_deadline, Counter};

/// The all-routers group Router Solicitations go to.
pub const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);

/// The link-local address of `mac` by modified EUI-64 (RFC 4291 Appendix A).
pub fn link_local(mac: MacAddr) -> Ipv6Addr {
    let m = mac.0;
    Ipv6Addr::from([
        0xfe,
        0x80,
        0,
        0,
        0,
        0,
        0,
        0,
        m[0] ^ 0x02,
        m[1],
        m[2],
        0xff,
        0xfe,
        m[3],
        m[4],
        m[5],
    ])
}

/// The RA and DHCPv6 server of one port.
#[derive(Debug, Clone)]
pub struct ProvisionConfig {
    pub mac: MacAddr,
    pub ra: RaConfig,
    pub dhcp: Dhcpv6Config,
}

/// The addresses a DS-Lite ISP port hands out by default, all in 2001:db8::/32.
pub mod defaults {
    use core::net::Ipv6Addr;

    /// The WAN link's prefix in the RA (on-link, autonomous): the B4's side of the AFTR
    /// port's link, as `wirerate dslite b4`'s default 2001:db8:c::2.
    pub const LINK_PREFIX: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, 0, 0);
    /// IA_NA addresses from here (256 of them).
    pub const FIRST_ADDRESS: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, 0, 0x100);
    /// IA_PD: /56s out of this /40 (256 of them).
    pub const PD_BASE: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x100, 0, 0, 0, 0, 0);
    pub const PD_BASE_LEN: u8 = 40;
    pub const PD_LEN: u8 = 56;
    /// The DNS server announced (RA RDNSS and DHCPv6 option 23).
    pub const DNS: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x53, 0, 0, 0, 0, 1);
    /// The AFTR's name announced with option 64 (RFC 2606 example domain).
    pub const AFTR_NAME: &str = "aftr.example.net";
}

impl ProvisionConfig {
    /// An RA with M and O (and the link prefix, L and A, and the MTU) and a DHCPv6 server with
    /// 256 addresses from 2001:db8:c::100, 256 /56 prefixes out of 2001:db8:100::/40, DNS
    /// 2001:db8:53::1 and the AFTR name `aftr.example.net` (see [`defaults`]).
    pub fn dslite(mac: MacAddr, mtu: u32) -> ProvisionConfig {
        let mut ra = RaConfig::new();
        ra.prefixes.push(PrefixInfo {
            prefix: defaults::LINK_PREFIX,
            prefix_len: 64,
            on_link: true,
            autonomous: true,
            valid_lifetime: 7200,
            preferred_lifetime: 3600,
        });
        ra.mtu = Some(mtu);
        ra.rdnss = vec![defaults::DNS];
        let mut dhcp = Dhcpv6Config::new(mac);
        dhcp.addresses = Some(AddressPool {
            first: defaults::FIRST_ADDRESS,
            size: 256,
        });
        dhcp.prefixes = Some(PrefixPool {
            base: defaults::PD_BASE,
            base_len: defaults::PD_BASE_LEN,
            delegated_len: defaults::PD_LEN,
            size: 256,
        });
        dhcp.dns = vec![defaults::DNS];
        dhcp.aftr_name = Some(defaults::AFTR_NAME.into());
        ProvisionConfig { mac, ra, dhcp }
    }

    /// [`Self::dslite`]'s link (RA, addresses, /56 prefixes, DNS) for a MAP-E CE: no AFTR
    /// name, and OPTION_S46_CONT_MAPE with `mape`'s rule and BR next to the delegated prefix
    /// (the CE derives its shared IPv4 address and port set from both).
    pub fn mape(mac: MacAddr, mtu: u32, mape: crate::dhcpv6::MapeProvision) -> ProvisionConfig {
        let mut c = ProvisionConfig::dslite(mac, mtu);
        c.dhcp.aftr_name = None;
        c.dhcp.mape = Some(mape);
        c
    }

    /// The DHCPv6 server's checks ([`Dhcpv6Config::check`]) and the RA's prefixes in
    /// 2001:db8::/32.
    pub fn check(&self) -> Result<(), ProvisionConfigError> {
        self.dhcp.check().map_err(ProvisionConfigError::Dhcpv6)?;
        let (doc, len) = crate::dhcpv6::DOCUMENTATION_V6;
        for p in &self.ra.prefixes {
            if p.prefix_len < len || !crate::dhcpv6::in_prefix(p.prefix, doc, len) {
                return Err(ProvisionConfigError::RaPrefixOutside {
                    prefix: p.prefix,
                    prefix_len: p.prefix_len,
                });
            }
        }
        if self.ra.min_interval > self.ra.max_interval {
            return Err(ProvisionConfigError::RaInterval);
        }
        Ok(())
    }
}

/// Why [`ProvisionConfig::check`] refused a configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProvisionConfigError {
    /// The DHCPv6 server's own refusal.
    Dhcpv6(crate::dhcpv6::Dhcpv6ConfigError),
    /// An RA prefix outside 2001:db8::/32.
    RaPrefixOutside {
        prefix: core::net::Ipv6Addr,
        prefix_len: u8,
    },
    /// The RA interval's minimum above its maximum.
    RaInterval,
}

impl std::fmt::Display for ProvisionConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ProvisionConfigError::Dhcpv6(e) => e.fmt(f),
            ProvisionConfigError::RaPrefixOutside { prefix, prefix_len } => write!(
                f,
                "the RA prefix {prefix}/{prefix_len} is not inside 2001:db8::/32"
            ),
            ProvisionConfigError::RaInterval => {
                f.write_str("the RA interval's minimum is above its maximum")
            }
        }
    }
}

impl std::error::Error for ProvisionConfigError {}

/// Frames claimed but not answered, by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProvisionDrop {
    /// A Router Solicitation with a hop limit other than 255 (RFC 4861 §6.1.1).
    HopLimit,
    /// A broken Router Solicitation or UDP header.
    Malformed,
    /// An ICMPv6 or UDP checksum that does not verify.
    BadChecksum,
}

/// Counters besides the RA's and the DHCPv6 server's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProvisionStats {
    pub rs_rx: u64,
    pub dhcp_rx: u64,
    pub dhcp_tx: u64,
    pub dropped: Counter<ProvisionDrop>,
}

/// What a [`Provisioner`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProvisionEvent {
    /// A DHCPv6 binding changed; `mac` is the client's.
    Dhcp { mac: MacAddr, event: Dhcpv6Event },
}

/// RA + DHCPv6 server on one Ethernet port.
#[derive(Debug)]
pub struct Provisioner {
    mac: MacAddr,
    link_local: Ipv6Addr,
    ra: Advertiser,
    dhcp: Dhcpv6Server,
    tx: Vec<Vec<u8>>,
    events: Vec<ProvisionEvent>,
    pub stats: ProvisionStats,
}

impl Provisioner {
    pub fn new(cfg: ProvisionConfig) -> Provisioner {
        Provisioner {
            mac: cfg.mac,
            link_local: link_local(cfg.mac),
            ra: Advertiser::new(cfg.ra),
            dhcp: Dhcpv6Server::new(cfg.dhcp),
            tx: Vec::new(),
            events: Vec::new(),
            stats: ProvisionStats::default(),
        }
    }

    /// Our link-local address: the RA's source, the default router, the DHCPv6 server.
    pub fn link_local(&self) -> Ipv6Addr {
        self.link_local
    }

    pub fn advertiser(&self) -> &Advertiser {
        &self.ra
    }

    pub fn dhcp(&self) -> &Dhcpv6Server {
        &self.dhcp
    }

    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.tx)
    }

    pub fn take_events(&mut self) -> Vec<ProvisionEvent> {
        std::mem::take(&mut self.events)
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        min_deadline(self.ra.next_deadline(), self.dhcp.next_deadline())
    }

    /// Unsolicited RAs and lease expiry.
    pub fn poll(&mut self, now: Nanos) {
        if self.ra.poll(now) {
            self.send_ra(RaDestination::AllNodes);
        }
        self.dhcp.poll(now);
        self.collect_dhcp_events(MacAddr::ZERO);
    }

    fn collect_dhcp_events(&mut self, mac: MacAddr) {
        for event in self.dhcp.take_events() {
            self.events.push(ProvisionEvent::Dhcp { mac, event });
        }
    }

    fn send_ra(&mut self, to: RaDestination) {
        let (dst, dst_mac) = match to {
            RaDestination::AllNodes => (ALL_NODES, icmpv6::multicast_mac(ALL_NODES)),
            RaDestination::Unicast(a, m) => (a, m),
        };
        let packet = ra_packet(&self.ra, Some(self.mac), self.link_local, dst);
        self.tx.push(ethernet(self.mac, dst_mac, &packet));
    }

    /// Claims Router Solicitations and DHCPv6 client messages; false for anything else.
    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
        let Ok(eth_frame) = EthernetFrame::new_checked(frame) else {
            return false;
        };
        let Ok(eth) = EthernetRepr::parse(&eth_frame) else {
            return false;
        };
        if eth.ethertype != EtherType::IPV6 || eth.src.is_multicast() {
            return false;
        }
        let inbound = match classify(self.link_local, eth_frame.payload(), &mut self.stats) {
            None => return false,
            Some(None) => return true,
            Some(Some(i)) => i,
        };
        match inbound {
            Inbound::RouterSolicit { src, lladdr } => {
                if let Some(to) = self.ra.solicited(now, src, lladdr.unwrap_or(eth.src)) {
                    self.send_ra(to);
                }
            }
            Inbound::Dhcp {
                src,
                src_port,
                payload,
            } => {
                let reply = self.dhcp.handle(now, payload);
                self.collect_dhcp_events(eth.src);
                if let Some(reply) = reply {
                    let p = dhcp_reply_packet(self.link_local, src, src_port, &reply);
                    self.tx.push(ethernet(self.mac, eth.src, &p));
                    self.stats.dhcp_tx += 1;
                }
            }
        }
        true
    }
}

/// A provisioning message that arrived: a Router Solicitation or a DHCPv6 client message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inbound<'a> {
    RouterSolicit {
        src: Ipv6Addr,
        lladdr: Option<MacAddr>,
    },
    Dhcp {
        src: Ipv6Addr,
        src_port: u16,
        payload: &'a [u8],
    },
}

/// Sorts an IPv6 packet: None if it is not for provisioning (not an RS to all-routers or
/// `link_local`, not UDP to port 547 at All_DHCP_Relay_Agents_and_Servers or `link_local`);
/// Some(None) if it is but was refused (counted in `stats` by reason); else the message.
/// Shared by the Ethernet port and the PPPoE session paths.
pub(crate) fn classify<'a>(
    link_local: Ipv6Addr,
    packet: &'a [u8],
    stats: &mut ProvisionStats,
) -> Option<Option<Inbound<'a>>> {
    let ip = Ipv6Packet::new_checked(packet).ok()?;
    let r = Ipv6Repr::parse(&ip).ok()?;
    let for_us = r.dst == link_local;
    let body = ip.payload();
    match r.next_header {
        NEXT_HEADER_ICMPV6 if for_us || r.dst == ALL_ROUTERS => {
            let icmp = Icmpv6Packet::new_checked(body).ok()?;
            if icmp.msg_type() != TYPE_ROUTER_SOLICIT {
                return None;
            }
            stats.rs_rx += 1;
            let drop = if r.hop_limit != 255 {
                ProvisionDrop::HopLimit
            } else if !icmp.verify_checksum(r.src, r.dst) {
                ProvisionDrop::BadChecksum
            } else {
                match RouterSolicitRepr::parse(&icmp) {
                    Ok(rs) => {
                        return Some(Some(Inbound::RouterSolicit {
                            src: r.src,
                            lladdr: rs.source_lladdr,
                        }))
                    }
                    Err(_) => ProvisionDrop::Malformed,
                }
            };
            stats.dropped.add(drop);
            Some(None)
        }
        NEXT_HEADER_UDP if for_us || r.dst == ALL_SERVERS => {
            let udp = UdpPacket::new_checked(body).ok()?;
            let u = UdpRepr::parse(&udp).ok()?;
            if u.dst_port != SERVER_PORT {
                return None;
            }
            stats.dhcp_rx += 1;
            if !udp.verify_checksum_v6(r.src, r.dst) {
                stats.dropped.add(ProvisionDrop::BadChecksum);
                return Some(None);
            }
            Some(Some(Inbound::Dhcp {
                src: r.src,
                src_port: u.src_port,
                payload: udp.payload(),
            }))
        }
        _ => None,
    }
}

/// Our RA from `src` to `dst` as an IPv6 packet (hop limit 255, checksum filled).
pub(crate) fn ra_packet(
    ra: &Advertiser,
    source_mac: Option<MacAddr>,
    src: Ipv6Addr,
    dst: Ipv6Addr,
) -> Vec<u8> {
    let mut msg = ra.message(source_mac);
    Icmpv6Packet::new_unchecked(&mut msg[..]).fill_checksum(src, dst);
    ipv6_packet(src, dst, NEXT_HEADER_ICMPV6, 255, &msg)
}

/// A DHCPv6 reply from our port 547 to the client's port (546 if it sent from port 0).
pub(crate) fn dhcp_reply_packet(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    dst_port: u16,
    reply: &[u8],
) -> Vec<u8> {
    let mut seg = vec![0u8; wire::udp::HEADER_LEN + reply.len()];
    let hdr = UdpRepr {
        src_port: SERVER_PORT,
        dst_port: if dst_port == 0 { CLIENT_PORT } else { dst_port },
    };
    let mut p = UdpPacket::new_unchecked(&mut seg[..]);
    let _ = hdr.emit(&mut p, reply.len());
    p.payload_mut().copy_from_slice(reply);
    p.fill_checksum_v6(src, dst);
    ipv6_packet(src, dst, NEXT_HEADER_UDP, 64, &seg)
}

/// An IPv6 header around an upper-layer `payload` whose checksum is already filled.
pub(crate) fn ipv6_packet(
    src: Ipv6Addr,
    dst: Ipv6Addr,
    next_header: u8,
    hop_limit: u8,
    payload: &[u8],
) -> Vec<u8> {
    let l3 = wire::ipv6::HEADER_LEN;
    let mut p = vec![0u8; l3 + payload.len()];
    let ip = Ipv6Repr {
        src,
        dst,
        next_header,
        payload_len: payload.len(),
        hop_limit,
        traffic_class: 0,
        flow_label: 0,
    };
    let _ = ip.emit(&mut Ipv6Packet::new_unchecked(&mut p[..]));
    p[l3..].copy_from_slice(payload);
    p
}

/// An Ethernet frame carrying an IPv6 packet.
fn ethernet(src: MacAddr, dst: MacAddr, packet: &[u8]) -> Vec<u8> {
    let l2 = wire::ethernet::HEADER_LEN;
    let mut f = vec![0u8; l2 + packet.len()];
    let eth = EthernetRepr {
        src,
        dst,
        ethertype: EtherType::IPV6,
    };
    let _ = eth.emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    f[l2..].copy_from_slice(packet);
    f
}

#[cfg(test)]
/// Ethernet + IPv6 around an upper-layer `payload` whose checksum is already filled.
fn ipv6_frame(
    src_mac: MacAddr,
    dst_mac: MacAddr,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    next_header: u8,
    hop_limit: u8,
    payload: &[u8],
) -> Vec<u8> {
    ethernet(
        src_mac,
        dst_mac,
        &ipv6_packet(src, dst, next_header, hop_limit, payload),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dhcpv6::Leased;
    use crate::util::Entropy;
    use wire::dhcpv6::{msg, opt, Dhcpv6Packet, OptionWriter};
    use wire::routerdisc::{NdOption, NdOptions, RouterAdvertHeader, RA_LEN};

    const SERVER: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x0a]);
    const CLIENT: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x0b]);

    fn provisioner() -> Provisioner {
        let mut c = ProvisionConfig::dslite(SERVER, 1500);
        c.ra.entropy = Entropy::Seeded(1);
        assert_eq!(c.check(), Ok(()));
        Provisioner::new(c)
    }

    /// An RS from fe80::b to ff02::2 with the client's link-layer address.
    fn rs_frame(hop_limit: u8) -> Vec<u8> {
        let src = link_local(CLIENT);
        let rs = RouterSolicitRepr {
            source_lladdr: Some(CLIENT),
        };
        let mut m = vec![0u8; rs.buffer_len()];
        let mut p = Icmpv6Packet::new_unchecked(&mut m[..]);
        rs.emit(&mut p).unwrap();
        p.fill_checksum(src, ALL_ROUTERS);
        ipv6_frame(
            CLIENT,
            icmpv6::multicast_mac(ALL_ROUTERS),
            src,
            ALL_ROUTERS,
            NEXT_HEADER_ICMPV6,
            hop_limit,
            &m,
        )
    }

    fn solicit_frame() -> Vec<u8> {
        let mut b = vec![0u8; 200];
        b[..4].copy_from_slice(&[msg::SOLICIT, 0, 0, 9]);
        let mut w = OptionWriter::new(&mut b, 4);
        w.put(opt::CLIENTID, &[0, 3, 0, 1, 2, 0, 0, 0, 0, 0x0b])
            .unwrap();
        w.put(opt::RAPID_COMMIT, &[]).unwrap();
        let o = w.begin_ia(opt::IA_NA, 1, 0, 0).unwrap();
        w.end(o).unwrap();
        let o = w.begin_ia(opt::IA_PD, 2, 0, 0).unwrap();
        w.end(o).unwrap();
        w.put(opt::ORO, &[0, 23, 0, 64]).unwrap();
        let n = w.len();
        b.truncate(n);
        let src = link_local(CLIENT);
        let mut seg = vec![0u8; 8 + n];
        let mut u = UdpPacket::new_unchecked(&mut seg[..]);
        UdpRepr {
            src_port: CLIENT_PORT,
            dst_port: SERVER_PORT,
        }
        .emit(&mut u, n)
        .unwrap();
        u.payload_mut().copy_from_slice(&b);
        u.fill_checksum_v6(src, ALL_SERVERS);
        ipv6_frame(
            CLIENT,
            icmpv6::multicast_mac(ALL_SERVERS),
            src,
            ALL_SERVERS,
            NEXT_HEADER_UDP,
            1,
            &seg,
        )
    }

    #[test]
    fn link_local_is_modified_eui64() {
        assert_eq!(
            link_local(MacAddr([0x52, 0x54, 0x00, 0x12, 0x34, 0x56])),
            "fe80::5054:ff:fe12:3456".parse::<Ipv6Addr>().unwrap()
        );
    }

    #[test]
    fn router_solicitation_gets_a_unicast_ra_from_our_link_local() {
        let mut p = provisioner();
        assert!(p.handle_frame(Nanos(0), &rs_frame(255)));
        let tx = p.take_transmit();
        assert_eq!(tx.len(), 1);
        let f = EthernetFrame::new_checked(&tx[0][..]).unwrap();
        assert_eq!((f.src_addr(), f.dst_addr()), (SERVER, CLIENT));
        let ip = Ipv6Packet::new_checked(f.payload()).unwrap();
        let r = Ipv6Repr::parse(&ip).unwrap();
        assert_eq!(
            (r.src, r.dst, r.hop_limit),
            (link_local(SERVER), link_local(CLIENT), 255)
        );
        let icmp = Icmpv6Packet::new_checked(ip.payload()).unwrap();
        assert!(icmp.verify_checksum(r.src, r.dst));
        let h = RouterAdvertHeader::parse(&icmp).unwrap();
        assert!(h.managed && h.other && h.router_lifetime > 0);
        let opts: Vec<_> = NdOptions::new(&ip.payload()[RA_LEN..])
            .map(Result::unwrap)
            .collect();
        assert!(opts.contains(&NdOption::SourceLladdr(SERVER)));
        assert!(opts.contains(&NdOption::Mtu(1500)));
        // A solicitation with a hop limit below 255 may come from off-link: refused.
        assert!(p.handle_frame(Nanos(0), &rs_frame(64)));
        assert!(p.take_transmit().is_empty());
        assert_eq!(p.stats.dropped.get(ProvisionDrop::HopLimit), 1);
    }

    #[test]
    fn unsolicited_ra_at_start_to_all_nodes() {
        let mut p = provisioner();
        assert_eq!(p.next_deadline(), Some(Nanos(0)));
        p.poll(Nanos(0));
        let tx = p.take_transmit();
        assert_eq!(tx.len(), 1);
        assert_eq!(&tx[0][..6], &[0x33, 0x33, 0, 0, 0, 1]);
        assert!(p.next_deadline().unwrap() > Nanos(0));
    }

    #[test]
    fn solicit_with_rapid_commit_gets_a_reply_to_the_client() {
        let mut p = provisioner();
        assert!(p.handle_frame(Nanos(5), &solicit_frame()));
        let tx = p.take_transmit();
        assert_eq!(tx.len(), 1);
        let f = EthernetFrame::new_checked(&tx[0][..]).unwrap();
        assert_eq!(f.dst_addr(), CLIENT);
        let ip = Ipv6Packet::new_checked(f.payload()).unwrap();
        let r = Ipv6Repr::parse(&ip).unwrap();
        assert_eq!((r.src, r.dst), (link_local(SERVER), link_local(CLIENT)));
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        assert!(udp.verify_checksum_v6(r.src, r.dst));
        assert_eq!((udp.src_port(), udp.dst_port()), (SERVER_PORT, CLIENT_PORT));
        let d = Dhcpv6Packet::new_checked(udp.payload()).unwrap();
        assert_eq!((d.msg_type(), d.transaction_id()), (msg::REPLY, 9));
        let name = d.options().find(opt::AFTR_NAME).unwrap().unwrap();
        assert_eq!(
            wire::dhcpv6::decode_name(name).unwrap().0,
            "aftr.example.net"
        );
        let ev = p.take_events();
        assert_eq!(ev.len(), 2);
        assert!(matches!(
            &ev[1],
            ProvisionEvent::Dhcp {
                mac: CLIENT,
                event: Dhcpv6Event::Bound {
                    iaid: 2,
                    leased: Leased::Prefix(_, 56),
                    ..
                }
            }
        ));
        // A corrupted checksum is refused and counted.
        let mut bad = solicit_frame();
        let last = bad.len() - 1;
        bad[last] ^= 0xff;
        assert!(p.handle_frame(Nanos(6), &bad));
        assert!(p.take_transmit().is_empty());
        assert_eq!(p.stats.dropped.get(ProvisionDrop::BadChecksum), 1);
    }

    #[test]
    fn other_traffic_is_not_claimed_and_nothing_panics() {
        let mut p = provisioner();
        let mut ns = rs_frame(255);
        ns[54] = 135; // an NS: ND's, not ours
        assert!(!p.handle_frame(Nanos(0), &ns));
        for f in [rs_frame(255), solicit_frame()] {
            for n in 0..f.len() {
                let _ = p.handle_frame(Nanos(0), &f[..n]);
            }
        }
    }
}
