//! ARP (RFC 826) and IPv6 Neighbor Discovery (RFC 4861 NS/NA) for a set of our addresses:
//! a responder that answers for them, and a resolver that finds other hosts' MACs (the
//! engine uses it for next hops). Sans-I/O like the rest of the crate.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::collections::BTreeMap;

use wire::arp::{ArpOperation, ArpPacket, ArpRepr};
use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::icmpv6::{self, Icmpv6Packet, NdiscRepr, NeighborFlags};
use wire::ipv6::{Ipv6Packet, Ipv6Repr, NEXT_HEADER_ICMPV6};
use wire::units::Nanos;

use crate::util::{add, min_deadline, Counter};

/// The all-nodes multicast group (answers to Duplicate Address Detection go there).
pub const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);

/// Our addresses and the resolver's patience.
#[derive(Debug, Clone)]
pub struct NeighborConfig {
    pub mac: MacAddr,
    pub ipv4: Vec<Ipv4Addr>,
    pub ipv6: Vec<Ipv6Addr>,
    /// Time between resolution attempts (default 1 s).
    pub retry: Nanos,
    /// Requests/solicitations before a resolution fails (default 3).
    pub attempts: u32,
}

impl NeighborConfig {
    pub fn new(mac: MacAddr) -> NeighborConfig {
        NeighborConfig {
            mac,
            ipv4: Vec::new(),
            ipv6: Vec::new(),
            retry: Nanos(1_000_000_000),
            attempts: 3,
        }
    }
}

/// What the resolver reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NeighborEvent {
    Resolved { ip: IpAddr, mac: MacAddr },
    Failed { ip: IpAddr },
}

/// Frames not answered, by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NeighborDrop {
    /// Not a well-formed Ethernet/IPv4 ARP message.
    MalformedArp,
    /// A broken IPv6 header or ND message.
    MalformedNd,
    /// An ND message whose ICMPv6 checksum does not verify.
    BadChecksum,
    /// An ND message with a hop limit other than 255 (RFC 4861 §7.1: maybe off-link).
    HopLimit,
    /// A request for an address that is not ours.
    NotOurs,
}

/// Counters of the responder and resolver.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NeighborStats {
    pub arp_replies_tx: u64,
    pub na_tx: u64,
    pub requests_tx: u64,
    pub resolved: u64,
    pub failed: u64,
    pub dropped: Counter<NeighborDrop>,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    tries: u32,
    deadline: Nanos,
}

/// ARP/ND responder and resolver for one port.
#[derive(Debug)]
pub struct Neighbors {
    cfg: NeighborConfig,
    cache: BTreeMap<IpAddr, MacAddr>,
    pending: BTreeMap<IpAddr, Pending>,
    tx: Vec<Vec<u8>>,
    events: Vec<NeighborEvent>,
    pub stats: NeighborStats,
}

impl Neighbors {
    pub fn new(cfg: NeighborConfig) -> Neighbors {
        Neighbors {
            cfg,
            cache: BTreeMap::new(),
            pending: BTreeMap::new(),
            tx: Vec::new(),
            events: Vec::new(),
            stats: NeighborStats::default(),
        }
    }

    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.tx)
    }

    pub fn take_events(&mut self) -> Vec<NeighborEvent> {
        std::mem::take(&mut self.events)
    }

    /// A MAC already known for `ip`.
    pub fn lookup(&self, ip: IpAddr) -> Option<MacAddr> {
        self.cache.get(&ip).copied()
    }

    /// Records a MAC for `ip` by hand (static neighbor).
    pub fn insert(&mut self, ip: IpAddr, mac: MacAddr) {
        self.cache.insert(ip, mac);
    }

    /// The MAC of `ip` if known; otherwise starts resolving it (a request goes out now and
    /// [`NeighborEvent::Resolved`] or [`NeighborEvent::Failed`] follows) and returns None.
    pub fn resolve(&mut self, now: Nanos, ip: IpAddr) -> Option<MacAddr> {
        if let Some(m) = self.lookup(ip) {
            return Some(m);
        }
        if let std::collections::btree_map::Entry::Vacant(e) = self.pending.entry(ip) {
            e.insert(Pending {
                tries: 0,
                deadline: now,
            });
            self.poll(now);
        }
        None
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.pending
            .values()
            .fold(None, |d, p| min_deadline(d, Some(p.deadline)))
    }

    /// Sends due (re)tries; fails resolutions that ran out of attempts.
    pub fn poll(&mut self, now: Nanos) {
        let due: Vec<IpAddr> = self
            .pending
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(ip, _)| *ip)
            .collect();
        for ip in due {
            let Some(p) = self.pending.get_mut(&ip) else {
                continue;
            };
            if p.tries >= self.cfg.attempts {
                self.pending.remove(&ip);
                self.stats.failed += 1;
                self.events.push(NeighborEvent::Failed { ip });
                continue;
            }
            p.tries += 1;
            p.deadline = add(now, self.cfg.retry);
            let frame = match ip {
                IpAddr::V4(a) => self.arp_request(a),
                IpAddr::V6(a) => self.solicit(a),
            };
            self.tx.push(frame);
            self.stats.requests_tx += 1;
        }
    }

    /// Handles one received frame; false if it is neither ARP nor ICMPv6 ND.
    pub fn handle_frame(&mut self, _now: Nanos, frame: &[u8]) -> bool {
        let Ok(eth_frame) = EthernetFrame::new_checked(frame) else {
            return false;
        };
        let Ok(eth) = EthernetRepr::parse(&eth_frame) else {
            return false;
        };
        match eth.ethertype {
            EtherType::ARP => {
                self.arp(&eth, eth_frame.payload());
                true
            }
            EtherType::IPV6 => self.nd(&eth, eth_frame.payload()),
            _ => false,
        }
    }

    fn learn(&mut self, ip: IpAddr, mac: MacAddr) {
        if mac.is_multicast() || mac == MacAddr::ZERO {
            return;
        }
        let was_pending = self.pending.remove(&ip).is_some();
        if was_pending || self.cache.contains_key(&ip) {
            self.cache.insert(ip, mac);
        }
        if was_pending {
            self.stats.resolved += 1;
            self.events.push(NeighborEvent::Resolved { ip, mac });
        }
    }

    fn arp(&mut self, eth: &EthernetRepr, body: &[u8]) {
        let parsed = ArpPacket::new_checked(body).and_then(|p| ArpRepr::parse(&p));
        let Ok(a) = parsed else {
            self.stats.dropped.add(NeighborDrop::MalformedArp);
            return;
        };
        if !a.source_ip.is_unspecified() {
            self.learn(IpAddr::V4(a.source_ip), a.source_mac);
        }
        if a.operation != ArpOperation::Request {
            return;
        }
        if !self.cfg.ipv4.contains(&a.target_ip) {
            self.stats.dropped.add(NeighborDrop::NotOurs);
            return;
        }
        let reply = ArpRepr {
            operation: ArpOperation::Reply,
            source_mac: self.cfg.mac,
            source_ip: a.target_ip,
            target_mac: a.source_mac,
            target_ip: a.source_ip,
        };
        let dst = if eth.src.is_unicast() {
            eth.src
        } else {
            a.source_mac
        };
        self.tx.push(arp_frame(self.cfg.mac, dst, &reply));
        self.stats.arp_replies_tx += 1;
    }

    fn arp_request(&self, target: Ipv4Addr) -> Vec<u8> {
        let req = ArpRepr {
            operation: ArpOperation::Request,
            source_mac: self.cfg.mac,
            source_ip: self
                .cfg
                .ipv4
                .first()
                .copied()
                .unwrap_or(Ipv4Addr::UNSPECIFIED),
            target_mac: MacAddr::ZERO,
            target_ip: target,
        };
        arp_frame(self.cfg.mac, MacAddr::BROADCAST, &req)
    }

    fn nd(&mut self, eth: &EthernetRepr, body: &[u8]) -> bool {
        let Ok(ip) = Ipv6Packet::new_checked(body) else {
            return false;
        };
        let Ok(repr) = Ipv6Repr::parse(&ip) else {
            return false;
        };
        if repr.next_header != NEXT_HEADER_ICMPV6 {
            return false;
        }
        let payload = ip.payload();
        let Ok(icmp) = Icmpv6Packet::new_checked(payload) else {
            self.stats.dropped.add(NeighborDrop::MalformedNd);
            return true;
        };
        if !matches!(
            icmp.msg_type(),
            icmpv6::TYPE_NEIGHBOR_SOLICIT | icmpv6::TYPE_NEIGHBOR_ADVERT
        ) {
            return false; // other ICMPv6 (echo, RA, …) is not ours to judge
        }
        if repr.hop_limit != 255 {
            self.stats.dropped.add(NeighborDrop::HopLimit);
            return true;
        }
        if !icmp.verify_checksum(repr.src, repr.dst) {
            self.stats.dropped.add(NeighborDrop::BadChecksum);
            return true;
        }
        let Ok(nd) = NdiscRepr::parse(&icmp) else {
            self.stats.dropped.add(NeighborDrop::MalformedNd);
            return true;
        };
        match nd {
            NdiscRepr::NeighborSolicit {
                target,
                source_lladdr,
            } => {
                let dad = repr.src.is_unspecified();
                if let (false, Some(m)) = (dad, source_lladdr) {
                    self.learn(IpAddr::V6(repr.src), m);
                }
                if !self.cfg.ipv6.contains(&target) {
                    self.stats.dropped.add(NeighborDrop::NotOurs);
                    return true;
                }
                let (dst, mac) = if dad {
                    (ALL_NODES, icmpv6::multicast_mac(ALL_NODES))
                } else {
                    (repr.src, source_lladdr.unwrap_or(eth.src))
                };
                let na = NdiscRepr::NeighborAdvert {
                    flags: NeighborFlags {
                        router: false,
                        solicited: !dad,
                        override_flag: true,
                    },
                    target,
                    target_lladdr: Some(self.cfg.mac),
                };
                self.tx.push(nd_frame(self.cfg.mac, mac, target, dst, &na));
                self.stats.na_tx += 1;
            }
            NdiscRepr::NeighborAdvert {
                target,
                target_lladdr,
                ..
            } => {
                self.learn(IpAddr::V6(target), target_lladdr.unwrap_or(eth.src));
            }
        }
        true
    }

    fn solicit(&self, target: Ipv6Addr) -> Vec<u8> {
        let src = self
            .cfg
            .ipv6
            .first()
            .copied()
            .unwrap_or(Ipv6Addr::UNSPECIFIED);
        let ns = NdiscRepr::NeighborSolicit {
            target,
            source_lladdr: (!src.is_unspecified()).then_some(self.cfg.mac),
        };
        let group = icmpv6::solicited_node_multicast(target);
        nd_frame(self.cfg.mac, icmpv6::multicast_mac(group), src, group, &ns)
    }
}

fn arp_frame(src: MacAddr, dst: MacAddr, a: &ArpRepr) -> Vec<u8> {
    let mut f = vec![0u8; wire::ethernet::HEADER_LEN + a.buffer_len()];
    let eth = EthernetRepr {
        src,
        dst,
        ethertype: EtherType::ARP,
    };
    let _ = eth.emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    let _ = a.emit(&mut ArpPacket::new_unchecked(
        &mut f[wire::ethernet::HEADER_LEN..],
    ));
    f
}

fn nd_frame(
    src_mac: MacAddr,
    dst_mac: MacAddr,
    src: Ipv6Addr,
    dst: Ipv6Addr,
    nd: &NdiscRepr,
) -> Vec<u8> {
    let icmp_len = nd.buffer_len();
    let l2 = wire::ethernet::HEADER_LEN;
    let l3 = wire::ipv6::HEADER_LEN;
    let mut f = vec![0u8; l2 + l3 + icmp_len];
    let eth = EthernetRepr {
        src: src_mac,
        dst: dst_mac,
        ethertype: EtherType::IPV6,
    };
    let _ = eth.emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
    let ip = Ipv6Repr {
        src,
        dst,
        next_header: NEXT_HEADER_ICMPV6,
        payload_len: icmp_len,
        hop_limit: 255,
        traffic_class: 0,
        flow_label: 0,
    };
    let _ = ip.emit(&mut Ipv6Packet::new_unchecked(&mut f[l2..]));
    let mut icmp = Icmpv6Packet::new_unchecked(&mut f[l2 + l3..]);
    let _ = nd.emit(&mut icmp);
    icmp.fill_checksum(src, dst);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x0a]);
    const B: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x0b]);

    fn pair() -> (Neighbors, Neighbors) {
        let mut a = NeighborConfig::new(A);
        a.ipv4.push(Ipv4Addr::new(192, 0, 2, 1));
        a.ipv6.push("2001:db8::1".parse().unwrap());
        let mut b = NeighborConfig::new(B);
        b.ipv4.push(Ipv4Addr::new(192, 0, 2, 2));
        b.ipv6.push("2001:db8::2".parse().unwrap());
        (Neighbors::new(a), Neighbors::new(b))
    }

    fn deliver(from: &mut Neighbors, to: &mut Neighbors) -> usize {
        let out = from.take_transmit();
        for f in &out {
            to.handle_frame(Nanos(0), f);
        }
        out.len()
    }

    #[test]
    fn arp_and_nd_resolve_each_other() {
        let (mut a, mut b) = pair();
        let v4: IpAddr = Ipv4Addr::new(192, 0, 2, 2).into();
        let v6: IpAddr = "2001:db8::2".parse::<Ipv6Addr>().unwrap().into();
        assert_eq!(a.resolve(Nanos(0), v4), None);
        assert_eq!(a.resolve(Nanos(0), v6), None);
        assert_eq!(deliver(&mut a, &mut b), 2);
        assert_eq!((b.stats.arp_replies_tx, b.stats.na_tx), (1, 1));
        assert_eq!(deliver(&mut b, &mut a), 2);
        assert_eq!(a.lookup(v4), Some(B));
        assert_eq!(a.lookup(v6), Some(B));
        assert_eq!(
            a.take_events(),
            vec![
                NeighborEvent::Resolved { ip: v4, mac: B },
                NeighborEvent::Resolved { ip: v6, mac: B }
            ]
        );
        assert_eq!(a.next_deadline(), None);
        // b caches only answers to its own resolutions (and refreshes known entries).
        assert_eq!(b.lookup(Ipv4Addr::new(192, 0, 2, 1).into()), None);
        assert_eq!(a.resolve(Nanos(5), v4), Some(B));
    }

    #[test]
    fn na_is_well_formed() {
        let (mut a, mut b) = pair();
        a.resolve(Nanos(0), "2001:db8::2".parse::<Ipv6Addr>().unwrap().into());
        let ns = a.take_transmit().remove(0);
        assert_eq!(&ns[..3], &[0x33, 0x33, 0xff]);
        b.handle_frame(Nanos(0), &ns);
        let na = b.take_transmit().remove(0);
        let eth = EthernetFrame::new_checked(&na[..]).unwrap();
        assert_eq!(eth.dst_addr(), A);
        let ip = Ipv6Packet::new_checked(eth.payload()).unwrap();
        assert_eq!(ip.hop_limit(), 255);
        assert_eq!(ip.dst_addr(), "2001:db8::1".parse::<Ipv6Addr>().unwrap());
        let icmp = Icmpv6Packet::new_checked(ip.payload()).unwrap();
        assert!(icmp.verify_checksum(ip.src_addr(), ip.dst_addr()));
        match NdiscRepr::parse(&icmp).unwrap() {
            NdiscRepr::NeighborAdvert {
                flags,
                target_lladdr,
                ..
            } => {
                assert!(flags.solicited && flags.override_flag && !flags.router);
                assert_eq!(target_lladdr, Some(B));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn dad_probe_answered_to_all_nodes() {
        let (_, mut b) = pair();
        let mut probe = Neighbors::new(NeighborConfig::new(A));
        probe.resolve(Nanos(0), "2001:db8::2".parse::<Ipv6Addr>().unwrap().into());
        let ns = probe.take_transmit().remove(0);
        b.handle_frame(Nanos(0), &ns);
        let na = b.take_transmit().remove(0);
        assert_eq!(&na[..6], &[0x33, 0x33, 0, 0, 0, 1]);
    }

    #[test]
    fn refusals_are_counted_and_retries_fail() {
        let (mut a, mut b) = pair();
        // Not ours.
        a.resolve(Nanos(0), Ipv4Addr::new(192, 0, 2, 99).into());
        a.resolve(Nanos(0), "2001:db8::99".parse::<Ipv6Addr>().unwrap().into());
        deliver(&mut a, &mut b);
        assert_eq!(b.stats.dropped.get(NeighborDrop::NotOurs), 2);
        assert!(b.take_transmit().is_empty());
        // Hop limit and checksum.
        a.resolve(Nanos(0), "2001:db8::2".parse::<Ipv6Addr>().unwrap().into());
        let ns = a.take_transmit().remove(0);
        let mut hl = ns.clone();
        hl[14 + 7] = 64;
        b.handle_frame(Nanos(0), &hl);
        let mut cs = ns.clone();
        let last = cs.len() - 1;
        cs[last] ^= 0xff;
        b.handle_frame(Nanos(0), &cs);
        assert_eq!(b.stats.dropped.get(NeighborDrop::HopLimit), 1);
        assert_eq!(b.stats.dropped.get(NeighborDrop::BadChecksum), 1);
        // Truncated ARP.
        let mut arp = a.arp_request(Ipv4Addr::new(192, 0, 2, 2));
        arp.truncate(30);
        b.handle_frame(Nanos(0), &arp);
        assert_eq!(b.stats.dropped.get(NeighborDrop::MalformedArp), 1);
        // Nobody answers 192.0.2.99: 3 tries 1 s apart, then Failed.
        let mut t = Nanos(0);
        while let Some(d) = a.next_deadline() {
            t = d;
            a.poll(t);
        }
        assert_eq!(t, Nanos(3_000_000_000));
        let failed: Vec<_> = a
            .take_events()
            .into_iter()
            .filter(|e| matches!(e, NeighborEvent::Failed { .. }))
            .collect();
        assert_eq!(failed.len(), 3);
        assert_eq!(a.stats.requests_tx, 9);
    }
}
