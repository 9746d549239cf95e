//! The DNS server on an Ethernet port: UDP and TCP port 53 at the server's IPv4 and IPv6
//! addresses, answered from our MAC to the MAC the query came from (the gateway's). The
//! port machine around it ([`crate::ipoe`], [`crate::softwire`]) answers ARP / ND for those
//! addresses and hands it every frame first; it claims only what is for it.

use core::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use wire::ethernet::MacAddr;
use wire::tcp::{TcpPacket, TcpRepr};
use wire::udp::{UdpPacket, UdpRepr};
use wire::units::Nanos;

use super::tcp::{ConnKey, OutSegment, TcpServer};
use super::{DnsConfig, DnsResponder};
use crate::frames::{self, PROTO_TCP, PROTO_UDP};
use crate::util::{Counter, Entropy, Rng};

/// Where the server lives and what it answers.
#[derive(Debug, Clone)]
pub struct DnsServiceConfig {
    pub mac: MacAddr,
    pub ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
    pub dns: DnsConfig,
    /// Initial TCP sequence numbers.
    pub entropy: Entropy,
}

/// Frames to our DNS address not answered, by reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DnsDrop {
    /// A broken UDP or TCP header.
    Malformed,
    BadChecksum,
    /// An IP fragment (a DNS query fits one packet; reassembly is not done here).
    Fragment,
    /// Not UDP or TCP, or not port 53.
    NotDns,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DnsServiceStats {
    pub udp_rx: u64,
    pub udp_tx: u64,
    pub tcp_rx: u64,
    pub tcp_tx: u64,
    pub dropped: Counter<DnsDrop>,
}

/// UDP/TCP DNS on one port.
#[derive(Debug)]
pub struct DnsService {
    mac: MacAddr,
    ipv4: Option<Ipv4Addr>,
    ipv6: Option<Ipv6Addr>,
    responder: DnsResponder,
    tcp: TcpServer,
    /// Where to send each TCP connection's segments (the MAC its SYN came from).
    tcp_peers: std::collections::BTreeMap<ConnKey, MacAddr>,
    tx: Vec<Vec<u8>>,
    pub stats: DnsServiceStats,
}

impl DnsService {
    pub fn new(cfg: DnsServiceConfig) -> DnsService {
        DnsService {
            mac: cfg.mac,
            ipv4: cfg.ipv4,
            ipv6: cfg.ipv6,
            responder: DnsResponder::new(cfg.dns),
            // 1460 fits IPv4 and IPv6 on a 1500-byte link with room; answers are small.
            tcp: TcpServer::new(Rng::from_entropy(cfg.entropy), 1400),
            tcp_peers: Default::default(),
            tx: Vec::new(),
            stats: DnsServiceStats::default(),
        }
    }

    /// The server's addresses (for the port's ARP / ND responder).
    pub fn addresses(&self) -> (Option<Ipv4Addr>, Option<Ipv6Addr>) {
        (self.ipv4, self.ipv6)
    }

    pub fn responder(&self) -> &DnsResponder {
        &self.responder
    }

    pub fn tcp(&self) -> &TcpServer {
        &self.tcp
    }

    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.tx)
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.tcp.next_deadline()
    }

    /// TCP retransmissions and timeouts.
    pub fn poll(&mut self, now: Nanos) {
        let out = self.tcp.poll(now);
        self.send_segments(out);
        let tcp = &self.tcp;
        self.tcp_peers.retain(|k, _| tcp.has(k));
    }

    fn is_ours(&self, dst: IpAddr) -> bool {
        match dst {
            IpAddr::V4(a) => self.ipv4 == Some(a),
            IpAddr::V6(a) => self.ipv6 == Some(a),
        }
    }

    /// Claims frames to our MAC and one of our addresses on UDP or TCP port 53; false for
    /// anything else.
    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
        let Some(ip) = frames::parse_ip(frame) else {
            return false;
        };
        if ip.dst_mac != self.mac || !self.is_ours(ip.dst) {
            return false;
        }
        if ip.fragment {
            self.stats.dropped.add(DnsDrop::Fragment);
            return true;
        }
        match ip.protocol {
            PROTO_UDP => self.udp(ip.src_mac, ip.src, ip.dst, ip.segment),
            PROTO_TCP => self.tcp_segment(now, ip.src_mac, ip.src, ip.dst, ip.segment),
            _ => {
                self.stats.dropped.add(DnsDrop::NotDns);
                return false;
            }
        }
        true
    }

    fn udp(&mut self, peer: MacAddr, src: IpAddr, dst: IpAddr, seg: &[u8]) {
        let Some((u, r)) = UdpPacket::new_checked(seg)
            .ok()
            .and_then(|u| UdpRepr::parse(&u).ok().map(|r| (u, r)))
        else {
            self.stats.dropped.add(DnsDrop::Malformed);
            return;
        };
        if r.dst_port != wire::dns::PORT {
            self.stats.dropped.add(DnsDrop::NotDns);
            return;
        }
        let ok = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => u.verify_checksum_v4(s, d),
            (IpAddr::V6(s), IpAddr::V6(d)) => u.verify_checksum_v6(s, d),
            _ => false,
        };
        if !ok {
            self.stats.dropped.add(DnsDrop::BadChecksum);
            return;
        }
        self.stats.udp_rx += 1;
        let Some(answer) = self.responder.answer(u.payload(), true) else {
            return;
        };
        if let Some(p) = frames::udp(dst, wire::dns::PORT, src, r.src_port, &answer) {
            self.tx.push(frames::ethernet(
                self.mac,
                peer,
                frames::ethertype_of(&p),
                &p,
            ));
            self.stats.udp_tx += 1;
        }
    }

    fn tcp_segment(&mut self, now: Nanos, peer: MacAddr, src: IpAddr, dst: IpAddr, seg: &[u8]) {
        let Some((t, r)) = TcpPacket::new_checked(seg)
            .ok()
            .and_then(|t| TcpRepr::parse(&t).ok().map(|r| (t, r)))
        else {
            self.stats.dropped.add(DnsDrop::Malformed);
            return;
        };
        if r.dst_port != wire::dns::PORT {
            self.stats.dropped.add(DnsDrop::NotDns);
            return;
        }
        let ok = match (src, dst) {
            (IpAddr::V4(s), IpAddr::V4(d)) => t.verify_checksum_v4(s, d),
            (IpAddr::V6(s), IpAddr::V6(d)) => t.verify_checksum_v6(s, d),
            _ => false,
        };
        if !ok {
            self.stats.dropped.add(DnsDrop::BadChecksum);
            return;
        }
        self.stats.tcp_rx += 1;
        let key = ConnKey {
            local: dst,
            local_port: r.dst_port,
            remote: src,
            remote_port: r.src_port,
        };
        self.tcp_peers.insert(key, peer);
        let responder = &mut self.responder;
        // The stream is length-prefixed messages; each whole one is answered in order.
        let mut app = |stream: &[u8]| {
            let mut used = 0;
            let mut out = Vec::new();
            while let Some((m, n)) = wire::dns::tcp_message(&stream[used..]) {
                used += n;
                if let Some(a) = responder.answer(m, false) {
                    let mut framed = vec![0u8; a.len() + 2];
                    if wire::dns::tcp_frame(&a, &mut framed).is_ok() {
                        out.extend(framed);
                    }
                }
            }
            (used, out)
        };
        let out = self.tcp.segment(now, key, &r, t.payload(), &mut app);
        self.send_segments(out);
        if !self.tcp.has(&key) {
            self.tcp_peers.remove(&key);
        }
    }

    fn send_segments(&mut self, out: Vec<OutSegment>) {
        for s in out {
            let Some(&peer) = self.tcp_peers.get(&s.key) else {
                continue;
            };
            if let Some(p) = frames::tcp(s.key.local, s.key.remote, &s.header, &s.payload) {
                self.tx.push(frames::ethernet(
                    self.mac,
                    peer,
                    frames::ethertype_of(&p),
                    &p,
                ));
                self.stats.tcp_tx += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dns::DnsConfig;
    use wire::dns::{self, DnsPacket, RData, Section};
    use wire::tcp::TcpFlags;

    const US: MacAddr = MacAddr([2, 0, 0, 0, 0, 0x0a]);
    const CPE: MacAddr = MacAddr([2, 0, 0, 0, 0, 0x0b]);
    const DNS4: Ipv4Addr = Ipv4Addr::new(203, 0, 113, 53);
    const CPE4: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);

    fn dns6() -> Ipv6Addr {
        "2001:db8:53::1".parse().unwrap()
    }

    fn cpe6() -> Ipv6Addr {
        "2001:db8:c::100".parse().unwrap()
    }

    fn service() -> DnsService {
        let mut dns = DnsConfig::new();
        dns.add(
            "aftr.example.net",
            "2001:db8:d::1".parse::<Ipv6Addr>().unwrap().into(),
        )
        .unwrap();
        DnsService::new(DnsServiceConfig {
            mac: US,
            ipv4: Some(DNS4),
            ipv6: Some(dns6()),
            dns,
            entropy: Entropy::Seeded(5),
        })
    }

    /// dig's `aftr.example.net AAAA` without EDNS (captured).
    fn query() -> Vec<u8> {
        let s = "a401012000010000000000000461667472076578616d706c65036e657400001c0001";
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn udp_frame(src: IpAddr, dst: IpAddr, dst_mac: MacAddr, dport: u16) -> Vec<u8> {
        let p = frames::udp(src, 40000, dst, dport, &query()).unwrap();
        frames::ethernet(CPE, dst_mac, frames::ethertype_of(&p), &p)
    }

    fn aaaa_of(answer: &[u8]) -> Vec<RData<'_>> {
        let p = DnsPacket::new_checked(answer).unwrap();
        p.records()
            .filter_map(|r| r.ok())
            .filter(|(s, _)| *s == Section::Answer)
            .map(|(_, r)| r.data)
            .collect()
    }

    #[test]
    fn udp_queries_over_ipv4_and_ipv6_are_answered_back_to_the_sender() {
        let mut s = service();
        for (src, dst) in [
            (IpAddr::V4(CPE4), IpAddr::V4(DNS4)),
            (cpe6().into(), dns6().into()),
        ] {
            assert!(s.handle_frame(Nanos(0), &udp_frame(src, dst, US, 53)));
            let tx = s.take_transmit();
            assert_eq!(tx.len(), 1);
            let ip = frames::parse_ip(&tx[0]).unwrap();
            assert_eq!(
                (ip.src_mac, ip.dst_mac, ip.src, ip.dst),
                (US, CPE, dst, src)
            );
            let u = UdpPacket::new_checked(ip.segment).unwrap();
            match (dst, src) {
                (IpAddr::V4(a), IpAddr::V4(b)) => assert!(u.verify_checksum_v4(a, b)),
                (IpAddr::V6(a), IpAddr::V6(b)) => assert!(u.verify_checksum_v6(a, b)),
                _ => unreachable!(),
            }
            assert_eq!((u.src_port(), u.dst_port()), (53, 40000));
            assert_eq!(
                aaaa_of(u.payload()),
                [RData::Aaaa("2001:db8:d::1".parse().unwrap())]
            );
        }
        // Not ours: another MAC, another address, another port.
        let v4 = |a| IpAddr::V4(a);
        assert!(!s.handle_frame(Nanos(0), &udp_frame(v4(CPE4), v4(DNS4), CPE, 53)));
        assert!(!s.handle_frame(
            Nanos(0),
            &udp_frame(v4(CPE4), v4(Ipv4Addr::new(203, 0, 113, 1)), US, 53)
        ));
        assert!(s.handle_frame(Nanos(0), &udp_frame(v4(CPE4), v4(DNS4), US, 54)));
        assert_eq!(s.stats.dropped.get(DnsDrop::NotDns), 1);
        // A corrupted checksum.
        let mut bad = udp_frame(v4(CPE4), v4(DNS4), US, 53);
        let n = bad.len();
        bad[n - 1] ^= 1;
        assert!(s.handle_frame(Nanos(0), &bad));
        assert_eq!(s.stats.dropped.get(DnsDrop::BadChecksum), 1);
        assert!(s.take_transmit().is_empty());
        assert_eq!((s.stats.udp_rx, s.stats.udp_tx), (2, 2));
    }

    fn tcp_frame(seq: u32, ack: u32, flags: TcpFlags, payload: &[u8]) -> Vec<u8> {
        let h = TcpRepr {
            src_port: 40001,
            dst_port: 53,
            seq,
            ack,
            flags,
            window: 64000,
            urgent: 0,
            mss: flags.contains(TcpFlags::SYN).then_some(1440),
        };
        let p = frames::tcp(cpe6().into(), dns6().into(), &h, payload).unwrap();
        frames::ethernet(CPE, US, frames::ethertype_of(&p), &p)
    }

    fn one_segment(s: &mut DnsService) -> (TcpRepr, Vec<u8>) {
        let tx = s.take_transmit();
        assert_eq!(tx.len(), 1, "{tx:?}");
        let ip = frames::parse_ip(&tx[0]).unwrap();
        assert_eq!(
            (ip.dst_mac, ip.src, ip.dst),
            (CPE, IpAddr::V6(dns6()), IpAddr::V6(cpe6()))
        );
        let t = TcpPacket::new_checked(ip.segment).unwrap();
        assert!(t.verify_checksum_v6(dns6(), cpe6()));
        (TcpRepr::parse(&t).unwrap(), t.payload().to_vec())
    }

    #[test]
    fn a_query_over_tcp_and_ipv6() {
        let mut s = service();
        let ack = TcpFlags::ACK;
        assert!(s.handle_frame(Nanos(0), &tcp_frame(10, 0, TcpFlags::SYN, &[])));
        let (sa, _) = one_segment(&mut s);
        assert_eq!(sa.flags.0, TcpFlags::SYN.0 | ack.0);
        let iss = sa.seq;
        s.handle_frame(Nanos(1), &tcp_frame(11, iss + 1, ack, &[]));
        assert!(s.take_transmit().is_empty());
        let mut framed = vec![0u8; query().len() + 2];
        dns::tcp_frame(&query(), &mut framed).unwrap();
        s.handle_frame(Nanos(2), &tcp_frame(11, iss + 1, ack, &framed));
        let (h, payload) = one_segment(&mut s);
        assert_eq!(h.ack, 11 + framed.len() as u32);
        let (msg, n) = dns::tcp_message(&payload).unwrap();
        assert_eq!(n, payload.len());
        assert_eq!(
            aaaa_of(msg),
            [RData::Aaaa("2001:db8:d::1".parse().unwrap())]
        );
        assert_eq!(s.tcp().len(), 1);
        let next = 11 + framed.len() as u32;
        let fin = TcpFlags(TcpFlags::FIN.0 | ack.0);
        s.handle_frame(Nanos(3), &tcp_frame(next, iss + 1 + n as u32, fin, &[]));
        let (h, _) = one_segment(&mut s);
        assert!(h.flags.contains(TcpFlags::FIN));
        s.handle_frame(Nanos(4), &tcp_frame(next + 1, h.seq + 1, ack, &[]));
        assert!(s.tcp().is_empty());
        assert_eq!(s.responder().stats.queries, 1);
    }

    #[test]
    fn truncated_frames_never_panic() {
        let mut s = service();
        for f in [
            udp_frame(CPE4.into(), DNS4.into(), US, 53),
            tcp_frame(1, 0, TcpFlags::SYN, &[]),
        ] {
            for n in 0..f.len() {
                let _ = s.handle_frame(Nanos(0), &f[..n]);
            }
        }
    }
}
