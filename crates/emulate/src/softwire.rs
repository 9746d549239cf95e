//! DS-Lite on a port: the [`crate::dslite`] AFTR and B4 together with what they need on a real
//! Ethernet link — Neighbor Discovery for the tunnel endpoint address — and a tunnel probe that
//! gives a softwire what a PPPoE session has: a moment it is "up", a setup time, retries and
//! failures by reason.
//!
//! The probe is an ICMP echo request from the B4's IPv4 address (192.0.0.2, RFC 6333 §5.7) to
//! the AFTR's (192.0.0.1) sent through the softwire; our [`AftrPort`] answers it through the
//! same softwire, which also teaches the AFTR the B4's address and MAC before any test traffic
//! flows. DS-Lite itself has no signalling: a real AFTR that does not answer 192.0.0.1 can be
//! used with `probe_attempts = 0` (the B4 is up as soon as the AFTR's MAC is resolved).
//!
//! [`SoftwireInfo`] is the data-path view of an up softwire, parallel to
//! [`crate::pppoe::SessionInfo`]: `apply_to` points a `dslite` stream at it, `max_datagram`
//! is the largest IPv4 packet the tunnel carries without fragmenting its outer IPv6.

use core::net::{Ipv4Addr, Ipv6Addr};
use std::collections::BTreeSet;
use std::net::IpAddr;

use wire::ethernet::MacAddr;
use wire::ipv4::Ipv4Packet;
use wire::template::StreamSpec;
use wire::units::Nanos;

use crate::aftr_lookup::{AftrLookup, AftrName, Heard, LookupFailure, LookupStats};
use crate::arp_nd::{NeighborConfig, NeighborEvent, Neighbors};
use crate::dslite::{
    Aftr, TunnelConfig, TunnelDrop, TunnelEvent, TunnelStats, AFTR_IPV4, B4, B4_IPV4,
};
use crate::frames::{echo_reply, echo_request, parse_echo};
use crate::provision::{ProvisionConfig, ProvisionEvent, Provisioner};
use crate::util::{add, min_deadline, Counter, Entropy};

/// Identifier of our tunnel probes ("WR").
const PROBE_ID: u16 = 0x5752;
/// Received packets kept as events before further ones are only counted (test traffic reaches
/// the control socket too).
pub const DEFAULT_MAX_EVENTS: usize = 4096;

/// An up softwire as the data path sees it (either end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SoftwireInfo {
    /// Our MAC and the next hop's (the AFTR's on the B4, the B4's on the AFTR).
    pub local_mac: MacAddr,
    pub peer_mac: MacAddr,
    /// Our tunnel endpoint and the other one.
    pub local: Ipv6Addr,
    pub remote: Ipv6Addr,
    /// The largest outer IPv6 packet the link carries whole (the tunnel MTU).
    pub mtu: usize,
    /// Whether our outer packets carry the 8-byte Tunnel Encapsulation Limit option.
    pub encap_limit: bool,
}

impl SoftwireInfo {
    /// The largest IPv4 packet carried without fragmenting the outer IPv6 packet.
    pub fn max_datagram(&self) -> usize {
        self.mtu
            .saturating_sub(wire::ipv6::HEADER_LEN + if self.encap_limit { 8 } else { 0 })
    }

    /// Points a `dslite` stream at this softwire: MACs and both tunnel endpoints. On the B4
    /// side (`b4_side`) an IPv4 source is set to the B4's own 192.0.0.2; the AFTR side leaves
    /// the inner addresses to the caller (without NAT44 they are the subscriber's).
    pub fn apply_to(&self, spec: &mut StreamSpec, b4_side: bool) {
        spec.src_mac = self.local_mac;
        spec.dst_mac = self.peer_mac;
        spec.tunnel_src = self.local;
        spec.tunnel_dst = self.remote;
        if b4_side && spec.src_ip.is_ipv4() {
            spec.src_ip = B4_IPV4.into();
        }
    }
}

/// The AFTR on a port.
#[derive(Debug, Clone)]
pub struct AftrConfig {
    pub tunnel: TunnelConfig,
    /// The AFTR's own IPv4 address (answers echo requests to it through the softwire).
    pub ipv4: Ipv4Addr,
    pub answer_echo: bool,
    /// Decapsulated packets kept as events; more are only counted.
    pub max_events: usize,
    /// Router Advertisements and DHCPv6 (address, prefix, DNS, AFTR name) for the gateways
    /// on this link, from the port's link-local address; None: the gateway's WAN is static.
    pub provision: Option<ProvisionConfig>,
}

impl AftrConfig {
    pub fn new(local: Ipv6Addr, mac: MacAddr) -> AftrConfig {
        AftrConfig {
            tunnel: TunnelConfig::new(local, mac),
            ipv4: AFTR_IPV4,
            answer_echo: true,
            max_events: DEFAULT_MAX_EVENTS,
            provision: None,
        }
    }

    /// Also provisions the link with [`ProvisionConfig::dslite`]'s defaults (its MTU the
    /// tunnel's), so a stock DS-Lite gateway learns its WAN address, a delegated prefix and
    /// the AFTR's name by itself.
    pub fn with_provisioning(mut self) -> AftrConfig {
        let mtu = u32::try_from(self.tunnel.mtu).unwrap_or(u32::MAX);
        self.provision = Some(ProvisionConfig::dslite(self.tunnel.mac, mtu));
        self
    }
}

/// What an [`AftrPort`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AftrEvent {
    /// The first packet from a B4 arrived: its softwire exists now.
    SoftwireUp { b4: Ipv6Addr, info: SoftwireInfo },
    /// An IPv4 packet came out of a softwire (not an echo we answered).
    Packet { b4: Ipv6Addr, packet: Vec<u8> },
    /// The link's provisioning (DHCPv6 bindings) changed.
    Provision(ProvisionEvent),
}

/// Counters of an [`AftrPort`] besides the tunnel's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AftrPortStats {
    pub softwires_up: u64,
    pub echo_replies: u64,
    /// Packets not kept as events because `max_events` were pending.
    pub events_dropped: u64,
}

/// The AFTR plus ND for its tunnel endpoint address (and its link-local one when it
/// provisions the link), plus the link's RA/DHCPv6 when configured.
#[derive(Debug)]
pub struct AftrPort {
    cfg: AftrConfig,
    aftr: Aftr,
    nd: Neighbors,
    provision: Option<Provisioner>,
    known: BTreeSet<Ipv6Addr>,
    events: Vec<AftrEvent>,
    /// IPv4 packets from softwires for a TUN hand-off (`Some` once enabled).
    ip_up: Option<Vec<Vec<u8>>>,
    /// IPv4 source address → the B4 it last came from (the hand-off's return route).
    routes: std::collections::BTreeMap<Ipv4Addr, Ipv6Addr>,
    pub stats: AftrPortStats,
}

impl AftrPort {
    pub fn new(cfg: AftrConfig) -> AftrPort {
        let mut nc = NeighborConfig::new(cfg.tunnel.mac);
        nc.ipv6.push(cfg.tunnel.local);
        let provision = cfg.provision.clone().map(Provisioner::new);
        if let Some(p) = &provision {
            nc.ipv6.push(p.link_local());
        }
        AftrPort {
            aftr: Aftr::new(cfg.tunnel.clone()),
            nd: Neighbors::new(nc),
            provision,
            cfg,
            known: BTreeSet::new(),
            events: Vec::new(),
            ip_up: None,
            routes: std::collections::BTreeMap::new(),
            stats: AftrPortStats::default(),
        }
    }

    pub fn aftr(&self) -> &Aftr {
        &self.aftr
    }

    pub fn tunnel_stats(&self) -> &TunnelStats {
        self.aftr.stats()
    }

    pub fn neighbors(&self) -> &Neighbors {
        &self.nd
    }

    /// The link's RA/DHCPv6 server, when this port provisions it.
    pub fn provisioner(&self) -> Option<&Provisioner> {
        self.provision.as_ref()
    }

    /// The softwire to `b4` as the data path sees it, once the B4 has been heard from.
    pub fn softwire_info(&self, b4: Ipv6Addr) -> Option<SoftwireInfo> {
        self.aftr.softwire(b4).map(|sw| SoftwireInfo {
            local_mac: self.cfg.tunnel.mac,
            peer_mac: sw.mac,
            local: self.cfg.tunnel.local,
            remote: b4,
            mtu: self.cfg.tunnel.mtu,
            encap_limit: self.cfg.tunnel.encap_limit.is_some(),
        })
    }

    /// B4s heard from, in address order.
    pub fn softwires(&self) -> impl Iterator<Item = Ipv6Addr> + '_ {
        self.known.iter().copied()
    }

    /// Sends an IPv4 packet down the softwire to `b4` (fragmenting the outer IPv6 above the
    /// MTU); the number of frames queued.
    pub fn encapsulate(&mut self, b4: Ipv6Addr, ipv4: &[u8]) -> Result<usize, TunnelDrop> {
        self.aftr.encapsulate(b4, ipv4)
    }

    pub fn take_events(&mut self) -> Vec<AftrEvent> {
        std::mem::take(&mut self.events)
    }

    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        let mut tx = self.nd.take_transmit();
        if let Some(p) = &mut self.provision {
            tx.extend(p.take_transmit());
        }
        tx.extend(self.aftr.take_transmit());
        tx
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        let p = self.provision.as_ref().and_then(|p| p.next_deadline());
        min_deadline(
            min_deadline(self.nd.next_deadline(), self.aftr.next_deadline()),
            p,
        )
    }

    pub fn poll(&mut self, now: Nanos) {
        self.nd.poll(now);
        self.aftr.poll(now);
        if let Some(p) = &mut self.provision {
            p.poll(now);
            self.events
                .extend(p.take_events().into_iter().map(AftrEvent::Provision));
        }
    }

    /// ND for our addresses first, then RA/DHCPv6, then the tunnel; false if it is none.
    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
        if self.nd.handle_frame(now, frame) {
            let _ = self.nd.take_events();
            return true;
        }
        if let Some(p) = &mut self.provision {
            if p.handle_frame(now, frame) {
                self.events
                    .extend(p.take_events().into_iter().map(AftrEvent::Provision));
                return true;
            }
        }
        if !self.aftr.handle_frame(now, frame) {
            return false;
        }
        for TunnelEvent::Decapsulated { peer, packet } in self.aftr.take_events() {
            if self.known.insert(peer) {
                self.stats.softwires_up += 1;
                if let Some(info) = self.softwire_info(peer) {
                    self.events.push(AftrEvent::SoftwireUp { b4: peer, info });
                }
            }
            if self.cfg.answer_echo {
                if let Some((src, dst, false, _, _, icmp)) = parse_echo(&packet) {
                    if dst == self.cfg.ipv4 {
                        let reply = echo_reply(dst, src, icmp);
                        if self.aftr.encapsulate(peer, &reply).is_ok() {
                            self.stats.echo_replies += 1;
                        }
                        continue;
                    }
                }
            }
            if let Some(up) = &mut self.ip_up {
                if let Ok(ip) = Ipv4Packet::new_checked(&packet[..]) {
                    self.routes.insert(ip.src_addr(), peer);
                }
                up.push(packet);
                continue;
            }
            if self.events.len() < self.cfg.max_events {
                self.events.push(AftrEvent::Packet { b4: peer, packet });
            } else {
                self.stats.events_dropped += 1;
            }
        }
        true
    }

    /// Hands the IPv4 packets out of every softwire to [`take_ip`](Self::take_ip) instead of
    /// [`AftrEvent::Packet`], and routes packets back with [`send_ip`](Self::send_ip): the
    /// ISP side of a TUN hand-off (`engine::tun`). With no NAT44 in this AFTR, the way back
    /// is learned: an IPv4 destination goes down the softwire its address last came from as a
    /// source (a B4's 192.0.0.2, or what a gateway behind it NATs to).
    pub fn enable_ip_relay(&mut self) {
        self.ip_up.get_or_insert_with(Vec::new);
    }

    /// Moves the IPv4 packets softwires delivered since the last call into `out`.
    pub fn take_ip(&mut self, out: &mut Vec<Vec<u8>>) {
        if let Some(up) = &mut self.ip_up {
            out.append(up);
        }
    }

    /// Sends an IPv4 packet down the softwire its destination was learned from (the outer
    /// IPv6 fragmented above the tunnel MTU); IPv6 packets and unknown destinations are
    /// refused as `NoRoute`.
    pub fn send_ip(
        &mut self,
        _now: Nanos,
        packet: &[u8],
    ) -> Result<(), crate::control_plane::RelayDrop> {
        use crate::control_plane::RelayDrop;
        if packet.first().is_some_and(|b| b >> 4 == 6) {
            return Err(RelayDrop::NoRoute); // DS-Lite carries IPv4 only
        }
        let ip = Ipv4Packet::new_checked(packet).map_err(|_| RelayDrop::Malformed)?;
        let b4 = *self.routes.get(&ip.dst_addr()).ok_or(RelayDrop::NoRoute)?;
        self.aftr
            .encapsulate(b4, packet)
            .map(drop)
            .map_err(|e| match e {
                TunnelDrop::TooBig => RelayDrop::TooBig,
                TunnelDrop::NoSoftwire => RelayDrop::NoRoute,
                _ => RelayDrop::NotUp,
            })
    }
}

/// The B4 on a port.
#[derive(Debug, Clone)]
pub struct B4Config {
    pub tunnel: TunnelConfig,
    /// The AFTR's tunnel endpoint (its MAC is resolved with ND). Unused when `aftr_name`
    /// is set: the address is then the DNS answer's.
    pub aftr: Ipv6Addr,
    /// Look the AFTR up by name first (DHCPv6 option 64) at this DNS server (option 23), as
    /// a stock DS-Lite gateway does (RFC 6334 §4; [`crate::aftr_lookup`]).
    pub aftr_name: Option<AftrName>,
    /// AAAA queries before giving up on the name, `dns_interval` apart (default 3, 1 s).
    pub dns_attempts: u32,
    pub dns_interval: Nanos,
    /// The DNS transaction ids and source ports (the OS's by default, RFC 5452).
    pub entropy: Entropy,
    /// Our IPv4 address (the probe's source) and the AFTR's (the probe's destination).
    pub ipv4: Ipv4Addr,
    pub aftr_ipv4: Ipv4Addr,
    /// Echo probes through the tunnel before giving up (0: up once the AFTR's MAC is known).
    pub probe_attempts: u32,
    /// Time between probes (default 1 s).
    pub probe_interval: Nanos,
    /// ND solicitations for the AFTR before giving up (default 3, one per second).
    pub nd_attempts: u32,
    pub max_events: usize,
}

impl B4Config {
    pub fn new(local: Ipv6Addr, mac: MacAddr, aftr: Ipv6Addr) -> B4Config {
        B4Config {
            tunnel: TunnelConfig::new(local, mac),
            aftr,
            aftr_name: None,
            dns_attempts: 3,
            dns_interval: Nanos(1_000_000_000),
            entropy: Entropy::Os,
            ipv4: B4_IPV4,
            aftr_ipv4: AFTR_IPV4,
            probe_attempts: 5,
            probe_interval: Nanos(1_000_000_000),
            nd_attempts: 3,
            max_events: DEFAULT_MAX_EVENTS,
        }
    }
}

/// Why a B4 did not come up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum B4Failure {
    /// The AFTR's address did not answer Neighbor Solicitations.
    NdFailed,
    /// No echo reply came back through the tunnel.
    ProbeTimeout,
    /// The DNS server to ask for the AFTR's name did not answer Neighbor Solicitations.
    DnsNdFailed,
    /// The AFTR's name gave no address.
    AftrName(LookupFailure),
}

/// Where a B4 is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum B4State {
    Idle,
    /// Looking the AFTR's name up (resolving the DNS server's MAC, then asking it).
    LookingUp,
    /// Resolving the AFTR's MAC.
    Resolving,
    /// Probing the tunnel (sequence number of the last probe, next probe due).
    Probing {
        sent: u32,
        due: Nanos,
    },
    Up,
    Failed(B4Failure),
}

/// What a [`B4Port`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum B4Event {
    /// The AFTR's name resolved: the tunnel goes to `aftr`, the answer's address.
    AftrResolved {
        name: String,
        aftr: Ipv6Addr,
    },
    Up(SoftwireInfo),
    Failed(B4Failure),
    /// An IPv4 packet came out of the softwire (not our probe's answer).
    Packet(Vec<u8>),
}

/// Counters of a [`B4Port`] besides the tunnel's own.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct B4PortStats {
    pub probes_tx: u64,
    pub probe_replies: u64,
    /// Probes repeated plus ND solicitations repeated.
    pub retries: u64,
    /// `start` to up (ND + the first answered probe).
    pub setup: Option<Nanos>,
    pub failed: Counter<B4Failure>,
    pub events_dropped: u64,
}

/// The B4 plus ND for its address and the AFTR's.
#[derive(Debug)]
pub struct B4Port {
    cfg: B4Config,
    /// The AFTR's address: the configured one, or the DNS answer once it came.
    aftr: Ipv6Addr,
    lookup: Option<AftrLookup>,
    nd: Neighbors,
    b4: Option<B4>,
    aftr_mac: Option<MacAddr>,
    state: B4State,
    started: Nanos,
    events: Vec<B4Event>,
    /// IPv4 packets from the softwire for a TUN hand-off (`Some` once enabled).
    ip_up: Option<Vec<Vec<u8>>>,
    pub stats: B4PortStats,
}

impl B4Port {
    pub fn new(cfg: B4Config) -> B4Port {
        let mut nc = NeighborConfig::new(cfg.tunnel.mac);
        nc.ipv6.push(cfg.tunnel.local);
        nc.attempts = cfg.nd_attempts;
        let lookup = cfg.aftr_name.clone().map(|n| {
            AftrLookup::new(
                n,
                cfg.tunnel.local,
                cfg.tunnel.mac,
                cfg.dns_attempts,
                cfg.dns_interval,
                cfg.entropy,
            )
        });
        B4Port {
            aftr: cfg.aftr,
            lookup,
            nd: Neighbors::new(nc),
            cfg,
            b4: None,
            aftr_mac: None,
            state: B4State::Idle,
            started: Nanos(0),
            events: Vec::new(),
            ip_up: None,
            stats: B4PortStats::default(),
        }
    }

    pub fn state(&self) -> B4State {
        self.state
    }

    pub fn is_up(&self) -> bool {
        self.state == B4State::Up
    }

    pub fn tunnel_stats(&self) -> Option<&TunnelStats> {
        self.b4.as_ref().map(|b| b.stats())
    }

    pub fn neighbors(&self) -> &Neighbors {
        &self.nd
    }

    /// The softwire as the data path sees it, once the AFTR's MAC is known.
    pub fn softwire_info(&self) -> Option<SoftwireInfo> {
        self.aftr_mac.map(|m| SoftwireInfo {
            local_mac: self.cfg.tunnel.mac,
            peer_mac: m,
            local: self.cfg.tunnel.local,
            remote: self.aftr,
            mtu: self.cfg.tunnel.mtu,
            encap_limit: self.cfg.tunnel.encap_limit.is_some(),
        })
    }

    /// The AFTR-name lookup's counts, when the B4 looks its AFTR up by name.
    pub fn lookup_stats(&self) -> Option<&LookupStats> {
        self.lookup.as_ref().map(|l| &l.stats)
    }

    /// The AFTR's address: the configured one, or the DNS answer once the name resolved.
    pub fn aftr(&self) -> Ipv6Addr {
        self.aftr
    }

    /// Starts looking the AFTR's name up (when configured), resolving the AFTR, then probing.
    pub fn start(&mut self, now: Nanos) {
        self.started = now;
        match self.lookup.as_ref().map(|l| l.target().server) {
            Some(server) => {
                self.state = B4State::LookingUp;
                if let Some(mac) = self.nd.resolve(now, IpAddr::V6(server)) {
                    self.ask_dns(now, mac);
                }
            }
            None => self.resolve_aftr(now),
        }
    }

    fn resolve_aftr(&mut self, now: Nanos) {
        self.state = B4State::Resolving;
        if let Some(mac) = self.nd.resolve(now, IpAddr::V6(self.aftr)) {
            self.resolved(now, mac);
        }
    }

    fn ask_dns(&mut self, now: Nanos, server_mac: MacAddr) {
        if let Some(l) = &mut self.lookup {
            l.start(now, server_mac);
        }
    }

    /// The lookup's answer: tunnel to its address, or fail.
    fn looked_up(&mut self, now: Nanos, heard: Heard) {
        if self.state != B4State::LookingUp {
            return;
        }
        match heard {
            Heard::Resolved(a) => {
                self.aftr = a;
                if let Some(l) = &self.lookup {
                    self.events.push(B4Event::AftrResolved {
                        name: l.target().name.to_string(),
                        aftr: a,
                    });
                }
                self.resolve_aftr(now);
            }
            Heard::Failed(f) => self.fail(B4Failure::AftrName(f)),
            Heard::NotOurs | Heard::Ignored => {}
        }
    }

    /// Sends an IPv4 packet up the softwire; the number of frames queued.
    pub fn encapsulate(&mut self, ipv4: &[u8]) -> Result<usize, TunnelDrop> {
        match &mut self.b4 {
            Some(b) => b.encapsulate(ipv4),
            None => Err(TunnelDrop::NoSoftwire),
        }
    }

    fn resolved(&mut self, now: Nanos, mac: MacAddr) {
        if self.state != B4State::Resolving {
            return;
        }
        self.aftr_mac = Some(mac);
        self.b4 = Some(B4::new(self.cfg.tunnel.clone(), self.aftr, mac));
        if self.cfg.probe_attempts == 0 {
            self.up(now);
        } else {
            self.state = B4State::Probing { sent: 0, due: now };
            self.probe(now);
        }
    }

    fn up(&mut self, now: Nanos) {
        self.state = B4State::Up;
        self.stats.setup = Some(Nanos(now.0.saturating_sub(self.started.0)));
        if let Some(i) = self.softwire_info() {
            self.events.push(B4Event::Up(i));
        }
    }

    fn fail(&mut self, why: B4Failure) {
        self.state = B4State::Failed(why);
        self.stats.failed.add(why);
        self.events.push(B4Event::Failed(why));
    }

    /// Sends the next probe if one is due, or gives up after the last.
    fn probe(&mut self, now: Nanos) {
        let B4State::Probing { sent, due } = self.state else {
            return;
        };
        if now < due {
            return;
        }
        if sent >= self.cfg.probe_attempts {
            self.fail(B4Failure::ProbeTimeout);
            return;
        }
        if sent > 0 {
            self.stats.retries += 1;
        }
        let seq = sent as u16 + 1;
        let p = echo_request(self.cfg.ipv4, self.cfg.aftr_ipv4, PROBE_ID, seq);
        if let Some(b) = &mut self.b4 {
            let _ = b.encapsulate(&p);
        }
        self.stats.probes_tx += 1;
        self.state = B4State::Probing {
            sent: sent + 1,
            due: add(now, self.cfg.probe_interval),
        };
    }

    pub fn take_events(&mut self) -> Vec<B4Event> {
        std::mem::take(&mut self.events)
    }

    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        let mut tx = self.nd.take_transmit();
        if let Some(l) = &mut self.lookup {
            tx.extend(l.take_transmit());
        }
        if let Some(b) = &mut self.b4 {
            tx.extend(b.take_transmit());
        }
        tx
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        let probe = match self.state {
            B4State::Probing { due, .. } => Some(due),
            _ => None,
        };
        let tunnel = self.b4.as_ref().and_then(|b| b.next_deadline());
        let lookup = self.lookup.as_ref().and_then(|l| l.next_deadline());
        let ours = min_deadline(probe, lookup);
        min_deadline(min_deadline(self.nd.next_deadline(), tunnel), ours)
    }

    fn neighbor_events(&mut self, now: Nanos) {
        for e in self.nd.take_events() {
            let dns = self.lookup.as_ref().map(|l| IpAddr::V6(l.target().server));
            let looking = self.state == B4State::LookingUp;
            match e {
                NeighborEvent::Resolved { ip, mac } if looking && Some(ip) == dns => {
                    self.ask_dns(now, mac)
                }
                NeighborEvent::Failed { ip } if looking && Some(ip) == dns => {
                    self.fail(B4Failure::DnsNdFailed);
                }
                NeighborEvent::Resolved { ip, mac } if ip == IpAddr::V6(self.aftr) => {
                    self.resolved(now, mac)
                }
                NeighborEvent::Failed { ip }
                    if ip == IpAddr::V6(self.aftr) && self.state == B4State::Resolving =>
                {
                    self.fail(B4Failure::NdFailed);
                }
                _ => {}
            }
        }
    }

    pub fn poll(&mut self, now: Nanos) {
        let before = self.nd.stats.requests_tx;
        self.nd.poll(now);
        let resolving = matches!(self.state, B4State::Resolving | B4State::LookingUp);
        if resolving && before > 0 {
            self.stats.retries += self.nd.stats.requests_tx - before;
        }
        self.neighbor_events(now);
        if let Some(l) = &mut self.lookup {
            let before = l.stats.queries_tx;
            let timeout = l.poll(now);
            self.stats.retries += l.stats.queries_tx - before;
            if let (Some(f), B4State::LookingUp) = (timeout, self.state) {
                self.fail(B4Failure::AftrName(f));
            }
        }
        if let Some(b) = &mut self.b4 {
            b.poll(now);
        }
        self.probe(now);
    }

    /// ND first, then the tunnel; false if it is neither.
    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
        if self.nd.handle_frame(now, frame) {
            self.neighbor_events(now);
            return true;
        }
        if let Some(l) = &mut self.lookup {
            let heard = l.handle_frame(frame);
            if heard != Heard::NotOurs {
                self.looked_up(now, heard);
                return true;
            }
        }
        let Some(b) = &mut self.b4 else {
            return false;
        };
        if !b.handle_frame(now, frame) {
            return false;
        }
        for TunnelEvent::Decapsulated { packet, .. } in b.take_events() {
            if let Some((src, dst, true, PROBE_ID, _, _)) = parse_echo(&packet) {
                if src == self.cfg.aftr_ipv4 && dst == self.cfg.ipv4 {
                    self.stats.probe_replies += 1;
                    if matches!(self.state, B4State::Probing { .. }) {
                        self.up(now);
                    }
                    continue;
                }
            }
            if let Some(up) = &mut self.ip_up {
                up.push(packet);
                continue;
            }
            if self.events.len() < self.cfg.max_events {
                self.events.push(B4Event::Packet(packet));
            } else {
                self.stats.events_dropped += 1;
            }
        }
        true
    }

    /// Hands the IPv4 packets out of the softwire to [`take_ip`](Self::take_ip) instead of
    /// [`B4Event::Packet`] (our probe's answers stay ours); [`send_ip`](Self::send_ip) sends
    /// packets up the softwire: the subscriber side of a TUN hand-off (`engine::tun`).
    pub fn enable_ip_relay(&mut self) {
        self.ip_up.get_or_insert_with(Vec::new);
    }

    /// Moves the IPv4 packets the softwire delivered since the last call into `out`.
    pub fn take_ip(&mut self, out: &mut Vec<Vec<u8>>) {
        if let Some(up) = &mut self.ip_up {
            out.append(up);
        }
    }

    /// Sends an IPv4 packet up the softwire once it is up; IPv6 is refused (DS-Lite carries
    /// IPv4).
    pub fn send_ip(
        &mut self,
        _now: Nanos,
        packet: &[u8],
    ) -> Result<(), crate::control_plane::RelayDrop> {
        use crate::control_plane::RelayDrop;
        Ipv4Packet::new_checked(packet).map_err(|_| RelayDrop::Malformed)?;
        if !self.is_up() {
            return Err(RelayDrop::NotUp);
        }
        self.encapsulate(packet).map(drop).map_err(|e| match e {
            TunnelDrop::TooBig => RelayDrop::TooBig,
            _ => RelayDrop::NotUp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AFTR: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xd, 0, 0, 0, 0, 1);
    const B4A: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xc, 0, 0, 0, 0, 2);
    const AM: MacAddr = MacAddr([2, 0, 0, 0, 0, 1]);
    const BM: MacAddr = MacAddr([2, 0, 0, 0, 0, 2]);

    /// Moves every queued frame between the two machines until both are quiet.
    fn exchange(a: &mut AftrPort, b: &mut B4Port, now: Nanos, lose_to_aftr: bool) {
        for _ in 0..10 {
            let (fa, fb) = (a.take_transmit(), b.take_transmit());
            if fa.is_empty() && fb.is_empty() {
                return;
            }
            for f in fa {
                b.handle_frame(now, &f);
            }
            if !lose_to_aftr {
                for f in fb {
                    a.handle_frame(now, &f);
                }
            }
        }
    }

    #[test]
    fn b4_resolves_probes_and_comes_up_and_the_aftr_learns_the_softwire() {
        let mut a = AftrPort::new(AftrConfig::new(AFTR, AM));
        let mut b = B4Port::new(B4Config::new(B4A, BM, AFTR));
        b.start(Nanos(1_000));
        assert_eq!(b.state(), B4State::Resolving);
        exchange(&mut a, &mut b, Nanos(2_000), false);
        assert!(b.is_up(), "{:?}", b.state());
        assert_eq!(b.stats.setup, Some(Nanos(1_000)));
        assert_eq!(
            (b.stats.probes_tx, b.stats.probe_replies, b.stats.retries),
            (1, 1, 0)
        );
        let info = b.softwire_info().unwrap();
        assert_eq!(
            (info.peer_mac, info.remote, info.max_datagram()),
            (AM, AFTR, 1460)
        );
        assert!(matches!(b.take_events()[..], [B4Event::Up(_)]));
        let ev = a.take_events();
        assert!(matches!(&ev[..], [AftrEvent::SoftwireUp { b4, info }]
            if *b4 == B4A && info.peer_mac == BM && info.remote == B4A));
        assert_eq!(a.stats.echo_replies, 1);
        assert_eq!(a.neighbors().stats.na_tx, 1);
        // Data both ways, with the 1500-byte packet fragmented and reassembled.
        let mut pkt = echo_request(B4_IPV4, Ipv4Addr::new(203, 0, 113, 9), 1, 1);
        pkt.resize(1500, 0);
        pkt[2..4].copy_from_slice(&1500u16.to_be_bytes());
        assert_eq!(b.encapsulate(&pkt), Ok(2));
        exchange(&mut a, &mut b, Nanos(3_000), false);
        assert!(
            matches!(&a.take_events()[..], [AftrEvent::Packet { b4, packet }] if *b4 == B4A && *packet == pkt)
        );
        assert_eq!(a.encapsulate(B4A, &pkt), Ok(2));
        exchange(&mut a, &mut b, Nanos(4_000), false);
        assert!(matches!(&b.take_events()[..], [B4Event::Packet(p)] if *p == pkt));
        assert_eq!(a.tunnel_stats().reassembled, 1);
        assert_eq!(b.tunnel_stats().unwrap().reassembled, 1);
    }

    /// The ISP side of a link with a DNS server beside the AFTR: ND for the server's address
    /// and the server itself (holding `name` → `answer`).
    struct DnsSide {
        nd: Neighbors,
        dns: crate::dns::service::DnsService,
    }

    const DNS6: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0x53, 0, 0, 0, 0, 1);
    const DM: MacAddr = MacAddr([2, 0, 0, 0, 0, 3]);
    /// The AFTR as DNS knows it: not the B4's configured (default) AFTR address.
    const ANSWERED: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xd, 0, 0, 0, 0, 0x77);

    impl DnsSide {
        fn new(name: &str, answer: Ipv6Addr) -> DnsSide {
            let mut nc = NeighborConfig::new(DM);
            nc.ipv6.push(DNS6);
            let mut dns = crate::dns::DnsConfig::new();
            dns.add(name, answer.into()).unwrap();
            DnsSide {
                nd: Neighbors::new(nc),
                dns: crate::dns::service::DnsService::new(crate::dns::service::DnsServiceConfig {
                    mac: DM,
                    ipv4: None,
                    ipv6: Some(DNS6),
                    dns,
                    entropy: Entropy::Seeded(1),
                }),
            }
        }
    }

    /// One link: every frame the B4 sends reaches the AFTR and the DNS side (`dns_answers`:
    /// whether the server answers queries, its ND always does), theirs reach the B4.
    fn link(a: &mut AftrPort, d: &mut DnsSide, b: &mut B4Port, now: Nanos, dns_answers: bool) {
        for _ in 0..10 {
            let mut to_b = a.take_transmit();
            to_b.extend(d.nd.take_transmit());
            to_b.extend(d.dns.take_transmit());
            let from_b = b.take_transmit();
            if to_b.is_empty() && from_b.is_empty() {
                return;
            }
            for f in to_b {
                b.handle_frame(now, &f);
            }
            for f in from_b {
                a.handle_frame(now, &f);
                if !d.nd.handle_frame(now, &f) && dns_answers {
                    d.dns.handle_frame(now, &f);
                }
            }
        }
    }

    fn by_name(name: &str) -> B4Port {
        // Configured with the default AFTR address, which nothing on the link answers for:
        // only the DNS answer leads to the AFTR.
        let mut cfg = B4Config::new(B4A, BM, AFTR);
        cfg.aftr_name = Some(AftrName::new(name, DNS6).unwrap());
        cfg.entropy = Entropy::Seeded(7);
        B4Port::new(cfg)
    }

    #[test]
    fn b4_looks_the_aftr_up_by_name_and_tunnels_to_the_answer_not_its_configured_address() {
        let mut a = AftrPort::new(AftrConfig::new(ANSWERED, AM));
        let mut d = DnsSide::new("aftr.example.net", ANSWERED);
        let mut b = by_name("AFTR.Example.net");
        b.start(Nanos(1_000));
        assert_eq!(b.state(), B4State::LookingUp);
        link(&mut a, &mut d, &mut b, Nanos(2_000), true);
        assert!(b.is_up(), "{:?}", b.state());
        assert_eq!(b.aftr(), ANSWERED);
        let ev = b.take_events();
        assert!(
            matches!(&ev[..], [B4Event::AftrResolved { name, aftr }, B4Event::Up(info)]
                if name == "AFTR.Example.net" && *aftr == ANSWERED
                    && info.remote == ANSWERED && info.peer_mac == AM),
            "{ev:?}"
        );
        let l = b.lookup_stats().unwrap();
        assert_eq!((l.queries_tx, l.answers_rx, l.ignored), (1, 1, 0));
        assert_eq!(d.dns.responder().stats.queries, 1);
        assert_eq!(a.softwires().collect::<Vec<_>>(), [B4A]);
        assert_eq!(a.stats.echo_replies, 1);
        assert_eq!(b.stats.retries, 0);
    }

    #[test]
    fn b4_fails_by_reason_when_the_aftr_name_does_not_resolve() {
        // NXDOMAIN: a name of the server's zone it does not hold.
        let mut a = AftrPort::new(AftrConfig::new(ANSWERED, AM));
        let mut d = DnsSide::new("aftr.example.net", ANSWERED);
        let mut b = by_name("other.example.net");
        b.start(Nanos(0));
        link(&mut a, &mut d, &mut b, Nanos(1), true);
        let nx = B4Failure::AftrName(LookupFailure::NotFound {
            rcode: wire::dns::rcode::NXDOMAIN,
            truncated: false,
        });
        assert_eq!(b.state(), B4State::Failed(nx));
        assert_eq!(b.stats.failed.get(nx), 1);
        assert!(a.softwires().next().is_none());
        // No answer: three queries one second apart, then a timeout at exactly 3 s.
        let mut b = by_name("aftr.example.net");
        b.start(Nanos(0));
        for s in 0..3u64 {
            let now = Nanos(s * 1_000_000_000);
            b.poll(now);
            link(&mut a, &mut d, &mut b, now, false);
            assert_eq!(b.state(), B4State::LookingUp);
        }
        assert_eq!(b.next_deadline(), Some(Nanos(3_000_000_000)));
        b.poll(Nanos(3_000_000_000));
        let t = B4Failure::AftrName(LookupFailure::Timeout);
        assert_eq!(b.state(), B4State::Failed(t));
        assert_eq!(b.lookup_stats().unwrap().queries_tx, 3);
        assert_eq!(b.stats.retries, 2);
        // Nobody at the DNS server's address: ND fails.
        let mut b = by_name("aftr.example.net");
        b.start(Nanos(0));
        for s in 1..=3u64 {
            b.poll(Nanos(s * 1_000_000_000));
            let _ = b.take_transmit();
        }
        assert_eq!(b.state(), B4State::Failed(B4Failure::DnsNdFailed));
    }

    #[test]
    fn ip_relay_routes_back_by_the_learned_source_and_refuses_what_it_cannot() {
        use crate::control_plane::RelayDrop;
        let mut a = AftrPort::new(AftrConfig::new(AFTR, AM));
        let mut b = B4Port::new(B4Config::new(B4A, BM, AFTR));
        a.enable_ip_relay();
        b.enable_ip_relay();
        let far = Ipv4Addr::new(203, 0, 113, 1);
        let up = echo_request(B4_IPV4, far, 7, 1);
        assert_eq!(b.send_ip(Nanos(0), &up), Err(RelayDrop::NotUp));
        // Nothing learned yet: the AFTR has no way back to 192.0.0.2.
        let down = echo_request(far, B4_IPV4, 7, 1);
        assert_eq!(a.send_ip(Nanos(0), &down), Err(RelayDrop::NoRoute));
        b.start(Nanos(1_000));
        exchange(&mut a, &mut b, Nanos(2_000), false);
        assert!(b.is_up());
        // The probe and its answer stayed the machines' own.
        let mut got = Vec::new();
        a.take_ip(&mut got);
        b.take_ip(&mut got);
        assert!(got.is_empty(), "{got:?}");
        assert_eq!(b.send_ip(Nanos(3_000), &up), Ok(()));
        exchange(&mut a, &mut b, Nanos(3_000), false);
        a.take_ip(&mut got);
        assert_eq!(got, vec![up.clone()]);
        assert!(a
            .take_events()
            .iter()
            .all(|e| !matches!(e, AftrEvent::Packet { .. })));
        assert_eq!(a.send_ip(Nanos(4_000), &down), Ok(()));
        exchange(&mut a, &mut b, Nanos(4_000), false);
        got.clear();
        b.take_ip(&mut got);
        assert_eq!(got, vec![down]);
        let other = echo_request(far, Ipv4Addr::new(192, 0, 0, 3), 7, 1);
        assert_eq!(a.send_ip(Nanos(5_000), &other), Err(RelayDrop::NoRoute));
        assert_eq!(
            a.send_ip(Nanos(5_000), &[0x60; 40]),
            Err(RelayDrop::NoRoute)
        );
        assert_eq!(
            a.send_ip(Nanos(5_000), &[0x45; 19]),
            Err(RelayDrop::Malformed)
        );
        assert_eq!(
            b.send_ip(Nanos(5_000), &[0x45; 3]),
            Err(RelayDrop::Malformed)
        );
    }

    #[test]
    fn b4_retries_probes_then_fails_by_reason() {
        let mut a = AftrPort::new(AftrConfig::new(AFTR, AM));
        let mut cfg = B4Config::new(B4A, BM, AFTR);
        cfg.probe_attempts = 3;
        let mut b = B4Port::new(cfg);
        b.start(Nanos(0));
        // ND works (the B4 hears the NA) but nothing the B4 sends reaches the AFTR afterwards.
        let ns = b.take_transmit();
        for f in ns {
            a.handle_frame(Nanos(0), &f);
        }
        exchange(&mut a, &mut b, Nanos(0), true);
        assert!(matches!(b.state(), B4State::Probing { sent: 1, .. }));
        let mut t = Nanos(0);
        while let Some(d) = b.next_deadline() {
            t = d;
            b.poll(t);
            let _ = b.take_transmit();
            if matches!(b.state(), B4State::Failed(_)) {
                break;
            }
        }
        assert_eq!(b.state(), B4State::Failed(B4Failure::ProbeTimeout));
        assert_eq!(
            t,
            Nanos(3_000_000_000),
            "3 probes one second apart, then give up"
        );
        assert_eq!((b.stats.probes_tx, b.stats.retries), (3, 2));
        assert_eq!(b.stats.failed.get(B4Failure::ProbeTimeout), 1);
        assert!(b.stats.setup.is_none());
    }

    #[test]
    fn b4_without_an_aftr_fails_nd() {
        let mut b = B4Port::new(B4Config::new(B4A, BM, AFTR));
        b.start(Nanos(0));
        assert_eq!(b.take_transmit().len(), 1, "one NS");
        while let Some(d) = b.next_deadline() {
            b.poll(d);
            let _ = b.take_transmit();
        }
        assert_eq!(b.state(), B4State::Failed(B4Failure::NdFailed));
        assert_eq!(b.stats.retries, 2);
        assert_eq!(b.encapsulate(&[0x45; 20]), Err(TunnelDrop::NoSoftwire));
    }

    #[test]
    fn without_probes_the_b4_is_up_once_resolved() {
        let mut a = AftrPort::new(AftrConfig::new(AFTR, AM));
        let mut cfg = B4Config::new(B4A, BM, AFTR);
        cfg.probe_attempts = 0;
        let mut b = B4Port::new(cfg);
        b.start(Nanos(0));
        exchange(&mut a, &mut b, Nanos(5), false);
        assert!(b.is_up());
        assert_eq!(b.stats.probes_tx, 0);
        assert!(
            a.softwires().next().is_none(),
            "nothing crossed the tunnel yet"
        );
    }

    #[test]
    fn echo_messages_round_trip_and_bad_ones_are_refused() {
        let p = echo_request(B4_IPV4, AFTR_IPV4, 7, 9);
        let (s, d, reply, id, seq, icmp) = parse_echo(&p).unwrap();
        assert_eq!((s, d, reply, id, seq), (B4_IPV4, AFTR_IPV4, false, 7, 9));
        let r = echo_reply(d, s, icmp);
        assert_eq!(parse_echo(&r).map(|e| (e.2, e.3, e.4)), Some((true, 7, 9)));
        let mut bad = p.clone();
        bad[30] ^= 1;
        assert!(parse_echo(&bad).is_none(), "bad ICMP checksum");
        for n in 0..p.len() {
            let _ = parse_echo(&p[..n]);
        }
    }
}
