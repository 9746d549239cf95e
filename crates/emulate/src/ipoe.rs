//! The ISP side of an IPoE home-gateway WAN (the default WAN mode of most gateways sold): on
//! one Ethernet port, a DHCPv4 server ([`crate::dhcpv4`]) that gives the gateway its WAN
//! address, mask, default router and DNS; the RA + DHCPv6 provisioner of the AFTR port
//! ([`crate::provision`]: an address, a delegated prefix, DNS, optionally the AFTR name); the
//! DNS server at the addresses handed out ([`crate::dns::service`]); ARP and ND for our
//! addresses; and ICMP echo answered at the gateway address (many gateways ping theirs to
//! decide the WAN is up).
//!
//! The data path is plain Ethernet/IPv4: test frames go to the gateway's WAN address, learned
//! from its lease ([`IpoePort::lease_info`], parallel to a PPPoE session's `SessionInfo`),
//! and come to our gateway address. With a TUN hand-off ([`IpoePort::enable_ip_relay`]) the
//! IPv4 packets the gateway routes through us (to any address but ours) go up to a kernel —
//! "the Internet" of a run — and what comes back is sent to the MAC of the lease holding the
//! destination address. IPv6 is provisioned, not routed.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use wire::dhcpv4::{CLIENT_PORT, SERVER_PORT};
use wire::ethernet::{EtherType, MacAddr};
use wire::template::StreamSpec;
use wire::udp::{UdpPacket, UdpRepr};
use wire::units::Nanos;

use crate::arp_nd::{NeighborConfig, Neighbors};
use crate::dhcpv4::{Arrival, Destination, Dhcpv4Config, Dhcpv4Event, Dhcpv4Server};
use crate::dns::service::{DnsService, DnsServiceConfig};
use crate::dns::DnsConfig;
use crate::frames::{self, echo_reply, parse_echo, PROTO_UDP};
use crate::provision::{ProvisionConfig, ProvisionEvent, Provisioner};
use crate::util::{min_deadline, Counter, Entropy};

/// Everything an IPoE port plays.
#[derive(Debug, Clone)]
pub struct IpoeConfig {
    pub mac: MacAddr,
    pub dhcp: Dhcpv4Config,
    /// RA + DHCPv6 for the gateway's IPv6 WAN and delegated prefix; None: IPv4 only.
    pub provision: Option<ProvisionConfig>,
    /// The names the DNS server answers for. It listens at the first DNS server DHCPv4 hands
    /// out and at the first one DHCPv6/RA hand out; None (or no DNS handed out): no server.
    pub dns: Option<DnsConfig>,
    /// TCP sequence numbers of the DNS server.
    pub entropy: Entropy,
}

impl ProvisionConfig {
    /// An IPoE link's IPv6 (the AFTR port's defaults without an AFTR name: the link prefix
    /// 2001:db8:c::/64 in the RA, addresses from 2001:db8:c::100, /56s out of
    /// 2001:db8:100::/40, DNS 2001:db8:53::1; MTU 1500).
    pub fn ipoe(mac: MacAddr) -> ProvisionConfig {
        let mut c = ProvisionConfig::dslite(mac, 1500);
        c.dhcp.aftr_name = None;
        c
    }
}

impl IpoeConfig {
    /// The defaults of [`Dhcpv4Config`] and [`ProvisionConfig::ipoe`], and a DNS server with
    /// no names yet.
    pub fn new(mac: MacAddr) -> IpoeConfig {
        IpoeConfig {
            mac,
            dhcp: Dhcpv4Config::default(),
            provision: Some(ProvisionConfig::ipoe(mac)),
            dns: Some(DnsConfig::new()),
            entropy: Entropy::Os,
        }
    }

    /// The DNS server's IPv4 and IPv6 addresses: the first of each handed out.
    pub fn dns_addresses(&self) -> (Option<Ipv4Addr>, Option<Ipv6Addr>) {
        if self.dns.is_none() {
            return (None, None);
        }
        (
            self.dhcp.dns.first().copied(),
            self.provision
                .as_ref()
                .and_then(|p| p.dhcp.dns.first().copied()),
        )
    }

    /// The DHCPv4 and DHCPv6 checks, and the DNS address not in the pool.
    pub fn check(&self) -> Result<(), IpoeConfigError> {
        self.dhcp.check().map_err(IpoeConfigError::Dhcpv4)?;
        if let Some(p) = &self.provision {
            p.check().map_err(IpoeConfigError::Provision)?;
        }
        let d = &self.dhcp;
        for a in &d.dns {
            let i = u32::from(*a).wrapping_sub(u32::from(d.pool_first));
            if i < d.pool_size || *a == d.gateway {
                return Err(IpoeConfigError::DnsInPool { dns: *a });
            }
        }
        Ok(())
    }
}

/// Why [`IpoeConfig::check`] refused a port's configuration; the message says what would work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpoeConfigError {
    /// The DHCPv4 server's own refusal.
    Dhcpv4(crate::dhcpv4::Dhcpv4ConfigError),
    /// The IPv6 provisioner's (RA and DHCPv6) refusal.
    Provision(crate::provision::ProvisionConfigError),
    /// The DNS address handed out is the gateway's or a pool address.
    DnsInPool { dns: Ipv4Addr },
}

impl std::fmt::Display for IpoeConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IpoeConfigError::Dhcpv4(e) => e.fmt(f),
            IpoeConfigError::Provision(e) => e.fmt(f),
            IpoeConfigError::DnsInPool { dns } => write!(
                f,
                "the DNS server {dns} is the gateway or inside the pool; use an address of its own, e.g. {}",
                crate::dhcpv4::defaults::DNS
            ),
        }
    }
}

impl std::error::Error for IpoeConfigError {}

/// The gateway's WAN as the data path sees it: where test frames go and come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseInfo {
    /// Our MAC and address (the gateway's default router).
    pub local_mac: MacAddr,
    pub local: Ipv4Addr,
    /// The gateway's WAN MAC and leased address.
    pub peer_mac: MacAddr,
    pub peer: Ipv4Addr,
}

impl LeaseInfo {
    /// Points a plain IPv4 stream from this port at the gateway's WAN: our MAC and address
    /// as the source, the lease's as the destination.
    pub fn apply_to(&self, spec: &mut StreamSpec) {
        spec.src_mac = self.local_mac;
        spec.dst_mac = self.peer_mac;
        spec.src_ip = self.local.into();
        spec.dst_ip = self.peer.into();
    }
}

/// What an [`IpoePort`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IpoeEvent {
    /// The DHCPv4 lease table changed.
    Lease(Dhcpv4Event),
    /// A DHCPv6 binding changed.
    Provision(ProvisionEvent),
}

/// Frames of the port not handled, by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IpoeDrop {
    /// A DHCPv4 datagram with a bad UDP checksum.
    BadChecksum,
    /// IPv4 to our MAC that no service took and no relay is on for (test frames to the
    /// gateway address are counted here too: they are the engine's).
    NotRelayed,
}

/// Counters of the port besides its services'.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IpoeStats {
    pub dhcp_rx: u64,
    pub dhcp_tx: u64,
    pub echo_replies: u64,
    pub relayed_up: u64,
    pub relayed_down: u64,
    pub dropped: Counter<IpoeDrop>,
}

/// The ISP side of an IPoE link on one Ethernet port.
#[derive(Debug)]
pub struct IpoePort {
    mac: MacAddr,
    gateway: Ipv4Addr,
    nd: Neighbors,
    dhcp: Dhcpv4Server,
    provision: Option<Provisioner>,
    dns: Option<DnsService>,
    tx: Vec<Vec<u8>>,
    events: Vec<IpoeEvent>,
    /// IPv4 packets for a TUN hand-off (`Some` once enabled).
    ip_up: Option<Vec<Vec<u8>>>,
    pub stats: IpoeStats,
}

impl IpoePort {
    pub fn new(cfg: IpoeConfig) -> IpoePort {
        let (dns4, dns6) = cfg.dns_addresses();
        let mut nc = NeighborConfig::new(cfg.mac);
        nc.ipv4.push(cfg.dhcp.gateway);
        nc.ipv4.extend(dns4);
        let provision = cfg.provision.clone().map(Provisioner::new);
        if let Some(p) = &provision {
            nc.ipv6.push(p.link_local());
        }
        nc.ipv6.extend(dns6);
        let dns = cfg.dns.clone().map(|names| {
            DnsService::new(DnsServiceConfig {
                mac: cfg.mac,
                ipv4: dns4,
                ipv6: dns6,
                dns: names,
                entropy: cfg.entropy,
            })
        });
        IpoePort {
            mac: cfg.mac,
            gateway: cfg.dhcp.gateway,
            nd: Neighbors::new(nc),
            dhcp: Dhcpv4Server::new(cfg.dhcp),
            provision,
            dns,
            tx: Vec::new(),
            events: Vec::new(),
            ip_up: None,
            stats: IpoeStats::default(),
        }
    }

    pub fn dhcp(&self) -> &Dhcpv4Server {
        &self.dhcp
    }

    pub fn provisioner(&self) -> Option<&Provisioner> {
        self.provision.as_ref()
    }

    pub fn dns(&self) -> Option<&DnsService> {
        self.dns.as_ref()
    }

    pub fn neighbors(&self) -> &Neighbors {
        &self.nd
    }

    /// The data-path view of the newest bound lease (the gateway test frames go to).
    pub fn lease_info(&self) -> Option<LeaseInfo> {
        self.dhcp.bound().last().map(|(mac, addr)| LeaseInfo {
            local_mac: self.mac,
            local: self.gateway,
            peer_mac: mac,
            peer: addr,
        })
    }

    /// The lease of the gateway at `mac`, if it holds one.
    pub fn lease_of(&self, mac: MacAddr) -> Option<LeaseInfo> {
        self.dhcp
            .bound()
            .find(|(m, _)| *m == mac)
            .map(|(mac, addr)| LeaseInfo {
                local_mac: self.mac,
                local: self.gateway,
                peer_mac: mac,
                peer: addr,
            })
    }

    pub fn take_events(&mut self) -> Vec<IpoeEvent> {
        std::mem::take(&mut self.events)
    }

    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        let mut tx = self.nd.take_transmit();
        if let Some(p) = &mut self.provision {
            tx.extend(p.take_transmit());
        }
        if let Some(d) = &mut self.dns {
            tx.extend(d.take_transmit());
        }
        tx.append(&mut self.tx);
        tx
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        let mut d = min_deadline(self.nd.next_deadline(), self.dhcp.next_deadline());
        d = min_deadline(d, self.provision.as_ref().and_then(|p| p.next_deadline()));
        min_deadline(d, self.dns.as_ref().and_then(|s| s.next_deadline()))
    }

    pub fn poll(&mut self, now: Nanos) {
        self.nd.poll(now);
        self.dhcp.poll(now);
        self.collect_dhcp();
        if let Some(p) = &mut self.provision {
            p.poll(now);
            self.events
                .extend(p.take_events().into_iter().map(IpoeEvent::Provision));
        }
        if let Some(d) = &mut self.dns {
            d.poll(now);
        }
    }

    fn collect_dhcp(&mut self) {
        self.events
            .extend(self.dhcp.take_events().into_iter().map(IpoeEvent::Lease));
    }

    /// ARP/ND, then DHCPv4, RA/DHCPv6, DNS, echo to the gateway, the relay; false for what
    /// is none of those (or not for us).
    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
        if self.nd.handle_frame(now, frame) {
            let _ = self.nd.take_events();
            return true;
        }
        if self.dhcp_frame(now, frame) {
            return true;
        }
        if let Some(p) = &mut self.provision {
            if p.handle_frame(now, frame) {
                self.events
                    .extend(p.take_events().into_iter().map(IpoeEvent::Provision));
                return true;
            }
        }
        if let Some(d) = &mut self.dns {
            if d.handle_frame(now, frame) {
                return true;
            }
        }
        let Some(ip) = frames::parse_ip(frame) else {
            return false;
        };
        let IpAddr::V4(dst) = ip.dst else {
            return false;
        };
        if ip.dst_mac != self.mac {
            return false;
        }
        if dst == self.gateway {
            if let Some((src, _, false, _, _, icmp)) = parse_echo(ip.packet) {
                let reply = echo_reply(dst, src, icmp);
                self.tx.push(frames::ethernet(
                    self.mac,
                    ip.src_mac,
                    EtherType::IPV4,
                    &reply,
                ));
                self.stats.echo_replies += 1;
                return true;
            }
            // Test frames to the gateway address are the engine's to count.
            self.stats.dropped.add(IpoeDrop::NotRelayed);
            return false;
        }
        match &mut self.ip_up {
            Some(up) => {
                up.push(ip.packet.to_vec());
                self.stats.relayed_up += 1;
                true
            }
            None => {
                self.stats.dropped.add(IpoeDrop::NotRelayed);
                false
            }
        }
    }

    /// A DHCPv4 client message: UDP 68 → 67, broadcast or to our gateway address.
    fn dhcp_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
        let Some(ip) = frames::parse_ip(frame) else {
            return false;
        };
        let IpAddr::V4(dst) = ip.dst else {
            return false;
        };
        let IpAddr::V4(src) = ip.src else {
            return false;
        };
        if ip.protocol != PROTO_UDP
            || ip.fragment
            || !(dst == Ipv4Addr::BROADCAST || dst == self.gateway)
        {
            return false;
        }
        let Ok(u) = UdpPacket::new_checked(ip.segment) else {
            return false;
        };
        let Ok(r) = UdpRepr::parse(&u) else {
            return false;
        };
        if r.dst_port != SERVER_PORT {
            return false;
        }
        self.stats.dhcp_rx += 1;
        if !u.verify_checksum_v4(src, dst) {
            self.stats.dropped.add(IpoeDrop::BadChecksum);
            return true;
        }
        let arrival = if ip.dst_mac.is_broadcast() || dst == Ipv4Addr::BROADCAST {
            Arrival::Broadcast
        } else {
            Arrival::Unicast
        };
        let reply = self.dhcp.handle(now, u.payload(), arrival);
        self.collect_dhcp();
        if let Some(reply) = reply {
            let (to_ip, to_mac) = match reply.to {
                Destination::Broadcast => (Ipv4Addr::BROADCAST, MacAddr::BROADCAST),
                Destination::Unicast(a, m) => (a, m),
            };
            if let Some(p) = frames::udp(
                self.gateway.into(),
                SERVER_PORT,
                to_ip.into(),
                CLIENT_PORT,
                &reply.message,
            ) {
                self.tx
                    .push(frames::ethernet(self.mac, to_mac, EtherType::IPV4, &p));
                self.stats.dhcp_tx += 1;
            }
        }
        true
    }

    /// Hands the IPv4 packets the gateway routes through us (to any address but ours) to
    /// [`take_ip`](Self::take_ip), and sends packets from above with
    /// [`send_ip`](Self::send_ip): the ISP side of a TUN hand-off (`engine::tun`).
    pub fn enable_ip_relay(&mut self) {
        self.ip_up.get_or_insert_with(Vec::new);
    }

    /// Moves the IPv4 packets relayed since the last call into `out`.
    pub fn take_ip(&mut self, out: &mut Vec<Vec<u8>>) {
        if let Some(up) = &mut self.ip_up {
            out.append(up);
        }
    }

    /// Sends an IPv4 packet to the gateway whose lease holds its destination; IPv6 and
    /// destinations without a lease are refused as `NoRoute`, packets above 1500 bytes as
    /// `TooBig`.
    pub fn send_ip(
        &mut self,
        _now: Nanos,
        packet: &[u8],
    ) -> Result<(), crate::control_plane::RelayDrop> {
        use crate::control_plane::RelayDrop;
        if packet.first().is_some_and(|b| b >> 4 == 6) {
            return Err(RelayDrop::NoRoute);
        }
        let ip = wire::ipv4::Ipv4Packet::new_checked(packet).map_err(|_| RelayDrop::Malformed)?;
        let mac = self
            .dhcp
            .bound_to(ip.dst_addr())
            .ok_or(RelayDrop::NoRoute)?;
        if packet.len() > 1500 {
            return Err(RelayDrop::TooBig);
        }
        self.tx
            .push(frames::ethernet(self.mac, mac, EtherType::IPV4, packet));
        self.stats.relayed_down += 1;
        Ok(())
    }
}
