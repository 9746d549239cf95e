//! The DHCPv4 server's state machine (RFC 2131 §4.3): what each client message does to the
//! lease table and what it is answered with.

use core::net::Ipv4Addr;

use wire::dhcpv4::{op, Dhcpv4Packet, Dhcpv4Repr, Ipv4List, MessageType};
use wire::ethernet::MacAddr;
use wire::units::Nanos;

use super::config::Dhcpv4Config;
use super::leases::{LeaseTable, State};
use super::messages::{
    Arrival, Destination, Dhcpv4Drop, Dhcpv4Event, Dhcpv4Reply, Dhcpv4Stats, NakReason,
};
use crate::util::add;

fn secs(s: u32) -> Nanos {
    Nanos(u64::from(s) * 1_000_000_000)
}

/// The lease key of a client: its identifier, or `01` + MAC.
fn client_key(r: &Dhcpv4Repr<'_>) -> Vec<u8> {
    match r.client_id {
        Some(id) => id.to_vec(),
        None => {
            let mut k = vec![1u8];
            k.extend(r.client_mac.0);
            k
        }
    }
}

/// The DHCPv4 server with its lease table.
#[derive(Debug)]
pub struct Dhcpv4Server {
    cfg: Dhcpv4Config,
    leases: LeaseTable,
    routers: [u8; 4],
    dns: Vec<u8>,
    events: Vec<Dhcpv4Event>,
    pub stats: Dhcpv4Stats,
}

impl Dhcpv4Server {
    /// A server with `cfg` as it is (check it first: [`Dhcpv4Config::check`]).
    pub fn new(cfg: Dhcpv4Config) -> Dhcpv4Server {
        Dhcpv4Server {
            routers: cfg.gateway.octets(),
            dns: cfg.dns.iter().flat_map(|a| a.octets()).collect(),
            cfg,
            leases: LeaseTable::default(),
            events: Vec::new(),
            stats: Dhcpv4Stats::default(),
        }
    }

    pub fn config(&self) -> &Dhcpv4Config {
        &self.cfg
    }

    pub fn take_events(&mut self) -> Vec<Dhcpv4Event> {
        std::mem::take(&mut self.events)
    }

    /// The bound leases: (client MAC, address), in address order.
    pub fn bound(&self) -> impl Iterator<Item = (MacAddr, Ipv4Addr)> + '_ {
        self.leases
            .bound()
            .map(|(i, mac)| (mac, self.cfg.pool_addr(i)))
    }

    /// The client bound to `addr`, if any.
    pub fn bound_to(&self, addr: Ipv4Addr) -> Option<MacAddr> {
        self.leases.bound_at(self.cfg.pool_index(addr)?)
    }

    /// When the next offer, lease or decline runs out.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.leases.next_deadline()
    }

    /// Ends offers and leases that ran out, and declines that are over.
    pub fn poll(&mut self, now: Nanos) {
        for (client, l) in self.leases.expire(now) {
            self.stats.expired += 1;
            self.events.push(Dhcpv4Event::Expired {
                mac: l.mac,
                client,
                addr: self.cfg.pool_addr(l.index),
            });
        }
        self.stats.leases_now = self.leases.bound_count();
    }

    /// Handles one client message (a UDP payload to port 67) that arrived as `arrival`; the
    /// reply to send, if any.
    pub fn handle(&mut self, now: Nanos, bytes: &[u8], arrival: Arrival) -> Option<Dhcpv4Reply> {
        self.poll(now);
        match arrival {
            Arrival::Broadcast => self.stats.broadcast_rx += 1,
            Arrival::Unicast => self.stats.unicast_rx += 1,
        }
        let parsed = Dhcpv4Packet::new_checked(bytes).and_then(|p| Dhcpv4Repr::parse(&p));
        let Ok(m) = parsed else {
            self.stats.dropped.add(Dhcpv4Drop::Malformed);
            return None;
        };
        let Some(kind) = m.message_type else {
            self.stats.dropped.add(Dhcpv4Drop::NoMessageType);
            return None;
        };
        self.stats.rx.add(kind);
        if m.op != op::REQUEST
            || matches!(
                kind,
                MessageType::Offer | MessageType::Ack | MessageType::Nak
            )
        {
            self.stats.dropped.add(Dhcpv4Drop::NotFromClient);
            return None;
        }
        if !m.giaddr.is_unspecified() {
            self.stats.dropped.add(Dhcpv4Drop::Relayed);
            return None;
        }
        let key = client_key(&m);
        let reply = match kind {
            MessageType::Discover => self.discover(now, &m, &key),
            MessageType::Request => self.request(now, &m, &key),
            MessageType::Release | MessageType::Decline => {
                self.release_or_decline(now, &m, &key, kind);
                None
            }
            MessageType::Inform => Some(self.reply(&m, MessageType::Ack, None)),
            MessageType::Offer | MessageType::Ack | MessageType::Nak => None,
        };
        self.stats.leases_now = self.leases.bound_count();
        if let Some(r) = &reply {
            self.stats.tx.add(r.kind);
        }
        reply
    }

    fn discover(&mut self, now: Nanos, m: &Dhcpv4Repr<'_>, key: &[u8]) -> Option<Dhcpv4Reply> {
        // The client's current or last address, then the one it asks for, then the lowest.
        let previous = self.leases.get(key).map(|l| l.index);
        let asked = m.requested_ip.and_then(|a| self.cfg.pool_index(a));
        let pick = previous
            .filter(|&i| self.leases.free_for(i, key))
            .or(asked.filter(|&i| self.leases.free_for(i, key)))
            .or_else(|| self.leases.lowest_free(self.cfg.pool_size, key));
        let Some(i) = pick else {
            self.stats.dropped.add(Dhcpv4Drop::PoolExhausted);
            return None;
        };
        let bound = self
            .leases
            .get(key)
            .is_some_and(|l| l.state == State::Bound && l.index == i);
        if !bound {
            self.leases.hold(
                key,
                m.client_mac,
                i,
                State::Offered,
                add(now, secs(self.cfg.offer_hold)),
            );
        }
        Some(self.reply(m, MessageType::Offer, Some(self.cfg.pool_addr(i))))
    }

    /// A REQUEST in SELECTING, INIT-REBOOT, RENEWING or REBINDING (the last two differ only
    /// in how they arrive, which the reply does not depend on).
    fn request(&mut self, now: Nanos, m: &Dhcpv4Repr<'_>, key: &[u8]) -> Option<Dhcpv4Reply> {
        let ours = self.cfg.gateway;
        let (addr, renewing) = match (m.server_id, m.requested_ip) {
            // SELECTING: our offer must be what the client requests.
            (Some(sid), _) if sid != ours => {
                self.stats.other_server += 1;
                if self
                    .leases
                    .get(key)
                    .is_some_and(|l| l.state == State::Offered)
                {
                    self.leases.free(key);
                }
                return None;
            }
            (Some(_), Some(req)) => {
                let held = self.leases.get(key).filter(|l| l.state != State::Free);
                if held.map(|l| self.cfg.pool_addr(l.index)) != Some(req) {
                    return Some(self.nak(m, Some(req), NakReason::NotOffered));
                }
                (req, false)
            }
            (Some(_), None) => return Some(self.nak(m, None, NakReason::NoAddress)),
            // INIT-REBOOT.
            (None, Some(req)) if m.ciaddr.is_unspecified() => (req, false),
            // RENEWING (unicast) or REBINDING (broadcast).
            (None, _) if !m.ciaddr.is_unspecified() => (m.ciaddr, true),
            (None, _) => return Some(self.nak(m, m.requested_ip, NakReason::NoAddress)),
        };
        let Some(i) = self.cfg.pool_index(addr) else {
            return Some(self.nak(m, Some(addr), NakReason::NotInPool));
        };
        if !self.leases.free_for(i, key) {
            return Some(self.nak(m, Some(addr), NakReason::InUse));
        }
        let was_bound = self
            .leases
            .get(key)
            .is_some_and(|l| l.state == State::Bound && l.index == i);
        let lease = self.cfg.lease_time;
        self.leases
            .hold(key, m.client_mac, i, State::Bound, add(now, secs(lease)));
        let (mac, client) = (m.client_mac, key.to_vec());
        self.events.push(if was_bound && renewing {
            Dhcpv4Event::Renewed {
                mac,
                client,
                addr,
                lease,
            }
        } else {
            Dhcpv4Event::Bound {
                mac,
                client,
                addr,
                lease,
            }
        });
        Some(self.reply(m, MessageType::Ack, Some(addr)))
    }

    fn release_or_decline(
        &mut self,
        now: Nanos,
        m: &Dhcpv4Repr<'_>,
        key: &[u8],
        kind: MessageType,
    ) {
        if m.server_id != Some(self.cfg.gateway) {
            self.stats.dropped.add(Dhcpv4Drop::NotForUs);
            return;
        }
        let Some(l) = self.leases.free(key) else {
            return;
        };
        let addr = self.cfg.pool_addr(l.index);
        let (mac, client) = (m.client_mac, key.to_vec());
        if kind == MessageType::Decline {
            self.stats.declined += 1;
            self.leases
                .decline(key, l.index, add(now, secs(self.cfg.decline_hold)));
            self.events
                .push(Dhcpv4Event::Declined { mac, client, addr });
        } else {
            self.events
                .push(Dhcpv4Event::Released { mac, client, addr });
        }
    }

    fn nak(
        &mut self,
        m: &Dhcpv4Repr<'_>,
        requested: Option<Ipv4Addr>,
        why: NakReason,
    ) -> Dhcpv4Reply {
        self.stats.naks.add(why);
        self.events.push(Dhcpv4Event::Nak {
            mac: m.client_mac,
            requested,
            why,
        });
        let mut r = Dhcpv4Repr::new(op::REPLY, m.xid, m.client_mac);
        r.message_type = Some(MessageType::Nak);
        r.server_id = Some(self.cfg.gateway);
        r.message = Some(why.text());
        r.client_id = m.client_id;
        Dhcpv4Reply {
            message: emit(&r),
            to: Destination::Broadcast,
            kind: MessageType::Nak,
        }
    }

    /// An OFFER or ACK (`addr` None: the ACK to an INFORM, without a lease).
    fn reply(&self, m: &Dhcpv4Repr<'_>, kind: MessageType, addr: Option<Ipv4Addr>) -> Dhcpv4Reply {
        let c = &self.cfg;
        let mut r = Dhcpv4Repr::new(op::REPLY, m.xid, m.client_mac);
        r.message_type = Some(kind);
        r.broadcast = m.broadcast;
        r.ciaddr = m.ciaddr;
        r.server_id = Some(c.gateway);
        r.subnet_mask = Some(c.subnet().mask());
        r.routers = Ipv4List::new(&self.routers).ok();
        r.dns_servers = Ipv4List::new(&self.dns).ok();
        r.client_id = m.client_id;
        if let Some(a) = addr {
            r.yiaddr = a;
            r.lease_time = Some(c.lease_time);
            r.renewal_time = Some(c.lease_time / 2);
            r.rebinding_time = Some((u64::from(c.lease_time) * 7 / 8) as u32);
        }
        // RFC 2131 §4.1: to ciaddr when the client has one, broadcast when it asked,
        // else to the address being given at the client's MAC.
        let to = if !m.ciaddr.is_unspecified() {
            Destination::Unicast(m.ciaddr, m.client_mac)
        } else if m.broadcast {
            Destination::Broadcast
        } else {
            match addr {
                Some(a) => Destination::Unicast(a, m.client_mac),
                None => Destination::Broadcast,
            }
        };
        Dhcpv4Reply {
            message: emit(&r),
            to,
            kind,
        }
    }
}

/// The bytes of a message we built.
pub(super) fn emit(r: &Dhcpv4Repr<'_>) -> Vec<u8> {
    let mut b = vec![0u8; r.buffer_len()];
    // Our own replies: every value is within the format's bounds.
    let _ = r.emit(&mut Dhcpv4Packet::new_unchecked(&mut b[..]));
    b
}
