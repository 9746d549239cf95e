//! IPv6 provisioning inside PPPoE sessions, what a stock PPPoE gateway expects after IPv6CP
//! (RFC 5072) has given both ends their interface identifiers: a Router Advertisement over the
//! session from our link-local address (fe80:: + our identifier), answers to its Router
//! Solicitations, and DHCPv6 — prefix delegation above all (RFC 7084 WPD-1), plus an address,
//! DNS and, if configured, the AFTR name — from one server shared by every session, so no two
//! subscribers get the same prefix.
//!
//! Sans-I/O beside the access concentrator: feed it the AC's events
//! ([`PppoeProvisioning::handle_event`]) and call [`PppoeProvisioning::poll`] at its
//! deadlines; it sends through [`Server::send`]. A PPP link has no link-layer addresses, so the
//! RA carries no source link-layer option, and each session is its own link with its own RA
//! schedule.

use core::net::Ipv6Addr;
use std::collections::BTreeMap;

use wire::ethernet::MacAddr;
use wire::ppp::Protocol;
use wire::units::Nanos;

use crate::dhcpv6::{AddressPool, Dhcpv6Server, PrefixPool};
use crate::pppoe::server::{Server, ServerEvent};
use crate::pppoe::SessionKey;
use crate::provision::{
    classify, defaults, dhcp_reply_packet, ra_packet, Inbound, ProvisionConfig, ProvisionEvent,
    ProvisionStats,
};
use crate::router_adv::{Advertiser, RaDestination};
use crate::util::{min_deadline, Entropy};

use crate::arp_nd::ALL_NODES;

/// The link-local address of an IPv6CP interface identifier.
pub fn link_local_of(interface_id: [u8; 8]) -> Ipv6Addr {
    let mut a = [0u8; 16];
    a[..2].copy_from_slice(&[0xfe, 0x80]);
    a[8..].copy_from_slice(&interface_id);
    Ipv6Addr::from(a)
}

impl ProvisionConfig {
    /// For PPPoE sessions: an RA with M and O, no on-link prefix and no MTU option (the
    /// session's MRU rules), RDNSS; DHCPv6 with 256 addresses from 2001:db8:e::100, 256 /56s
    /// out of 2001:db8:200::/40, DNS and no AFTR name (set `dhcp.aftr_name` for DS-Lite over
    /// PPPoE). `mac` only makes the server DUID.
    pub fn pppoe(mac: MacAddr) -> ProvisionConfig {
        let mut c = ProvisionConfig::dslite(mac, 1500);
        c.ra.prefixes.clear();
        c.ra.mtu = None;
        c.dhcp.addresses = Some(AddressPool {
            first: Ipv6Addr::new(0x2001, 0xdb8, 0xe, 0, 0, 0, 0, 0x100),
            size: 256,
        });
        c.dhcp.prefixes = Some(PrefixPool {
            base: Ipv6Addr::new(0x2001, 0xdb8, 0x200, 0, 0, 0, 0, 0),
            base_len: 40,
            delegated_len: defaults::PD_LEN,
            size: 256,
        });
        c.dhcp.aftr_name = None;
        c
    }
}

/// One session's link.
#[derive(Debug)]
struct SessionLink {
    link_local: Ipv6Addr,
    ra: Advertiser,
}

/// RA + DHCPv6 for every PPPoE session of one access concentrator.
#[derive(Debug)]
pub struct PppoeProvisioning {
    cfg: ProvisionConfig,
    dhcp: Dhcpv6Server,
    links: BTreeMap<SessionKey, SessionLink>,
    events: Vec<ProvisionEvent>,
    seed: u64,
    pub stats: ProvisionStats,
    /// RAs sent over sessions (unsolicited + solicited).
    pub ra_tx: u64,
}

impl PppoeProvisioning {
    /// Provisioning beside `server`: the subscriber table's fixed prefixes are kept out of
    /// the DHCPv6 prefix pool, so a pool prefix never overlaps one of them.
    pub fn for_server(cfg: ProvisionConfig, server: &Server) -> PppoeProvisioning {
        let mut p = PppoeProvisioning::new(cfg);
        for (prefix, len) in server.subscriber_prefixes() {
            p.dhcp.reserve_prefix(prefix, len);
        }
        p
    }

    pub fn new(cfg: ProvisionConfig) -> PppoeProvisioning {
        PppoeProvisioning {
            dhcp: Dhcpv6Server::new(cfg.dhcp.clone()),
            cfg,
            links: BTreeMap::new(),
            events: Vec::new(),
            seed: 0,
            stats: ProvisionStats::default(),
            ra_tx: 0,
        }
    }

    pub fn dhcp(&self) -> &Dhcpv6Server {
        &self.dhcp
    }

    /// Our link-local address on a session (None before it came up with IPv6CP).
    pub fn link_local(&self, key: SessionKey) -> Option<Ipv6Addr> {
        self.links.get(&key).map(|l| l.link_local)
    }

    pub fn take_events(&mut self) -> Vec<ProvisionEvent> {
        std::mem::take(&mut self.events)
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.links.values().fold(self.dhcp.next_deadline(), |d, l| {
            min_deadline(d, l.ra.next_deadline())
        })
    }

    /// Unsolicited RAs due on each session, and lease expiry.
    pub fn poll(&mut self, now: Nanos, server: &mut Server) {
        let keys: Vec<SessionKey> = self.links.keys().copied().collect();
        for key in keys {
            let due = self.links.get_mut(&key).is_some_and(|l| l.ra.poll(now));
            if due {
                self.send_ra(now, key, ALL_NODES, server);
            }
        }
        self.dhcp.poll(now);
        self.collect(MacAddr::ZERO);
    }

    fn collect(&mut self, mac: MacAddr) {
        for event in self.dhcp.take_events() {
            self.events.push(ProvisionEvent::Dhcp { mac, event });
        }
    }

    fn send_ra(&mut self, now: Nanos, key: SessionKey, dst: Ipv6Addr, server: &mut Server) {
        let Some(l) = self.links.get(&key) else {
            return;
        };
        let p = ra_packet(&l.ra, None, l.link_local, dst);
        if server.send(now, key, Protocol::IPV6, &p) {
            self.ra_tx += 1;
        }
    }

    /// Reacts to one of the AC's events: a session up with IPv6CP gets its link (and an RA at
    /// once); IPv6 from a subscriber may be an RS or DHCPv6; a session down is forgotten (its
    /// bindings run out at their lifetime, as they would at a real ISP). Returns whether the
    /// event was ours (an IPv6 provisioning message).
    pub fn handle_event(&mut self, now: Nanos, e: &ServerEvent, server: &mut Server) -> bool {
        match e {
            ServerEvent::SessionUp { key, info, .. } => {
                if let Some(id) = info.negotiated.local_interface_id {
                    let mut ra = self.cfg.ra.clone();
                    ra.entropy = match ra.entropy {
                        Entropy::Os => Entropy::Os,
                        Entropy::Seeded(s) => {
                            self.seed += 1;
                            Entropy::Seeded(s ^ self.seed)
                        }
                    };
                    self.links.insert(
                        *key,
                        SessionLink {
                            link_local: link_local_of(id),
                            ra: Advertiser::new(ra),
                        },
                    );
                    self.poll(now, server);
                }
                false
            }
            ServerEvent::SessionDown { key, .. } => {
                self.links.remove(key);
                false
            }
            ServerEvent::Data {
                key,
                protocol,
                payload,
            } if *protocol == Protocol::IPV6 => self.ipv6(now, *key, payload, server),
            ServerEvent::Data { .. } => false,
        }
    }

    fn ipv6(&mut self, now: Nanos, key: SessionKey, packet: &[u8], server: &mut Server) -> bool {
        let Some(link_local) = self.link_local(key) else {
            return false;
        };
        let inbound = match classify(link_local, packet, &mut self.stats) {
            None => return false,
            Some(None) => return true,
            Some(Some(i)) => i,
        };
        match inbound {
            Inbound::RouterSolicit { src, .. } => {
                let to = self
                    .links
                    .get_mut(&key)
                    .and_then(|l| l.ra.solicited(now, src, key.client));
                let dst = match to {
                    Some(RaDestination::Unicast(a, _)) => Some(a),
                    Some(RaDestination::AllNodes) => Some(ALL_NODES),
                    None => None,
                };
                if let Some(dst) = dst {
                    self.send_ra(now, key, dst, server);
                }
            }
            Inbound::Dhcp {
                src,
                src_port,
                payload,
            } => {
                // A subscriber with a fixed prefix in the AC's table is delegated exactly it.
                let fixed = server.subscriber_prefix(key);
                let reply = self.dhcp.handle_with_prefix(now, payload, fixed);
                self.collect(key.client);
                if let Some(r) = reply {
                    let p = dhcp_reply_packet(link_local, src, src_port, &r);
                    if server.send(now, key, Protocol::IPV6, &p) {
                        self.stats.dhcp_tx += 1;
                    }
                }
            }
        }
        true
    }
}
