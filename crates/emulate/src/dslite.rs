//! DS-Lite (RFC 6333): the AFTR (ISP side) and the B4 (subscriber side) of an IPv4-in-IPv6
//! softwire, as sans-I/O machines.
//!
//! Both decapsulate IPv4 from IPv6 next header 4, accept a Tunnel Encapsulation Limit
//! destination option (RFC 2473) in front of it, and reassemble outer IPv6 fragments with
//! bounded memory and a timeout. Both encapsulate, fragmenting the *outer* IPv6 packet when it
//! exceeds the tunnel MTU (RFC 6333 §5.3 and §6.3: the tunnel must carry 1500-byte IPv4
//! packets even over a 1500-byte IPv6 link), never the inner IPv4 packet.
//!
//! The AFTR keys softwires by the B4's IPv6 source address and learns the Ethernet address
//! to send back to from the frames it receives. NAT44 is not done here: the engine addresses
//! return traffic to a softwire by its B4 address.

use core::net::Ipv6Addr;
use std::collections::BTreeMap;

use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::ipv4::Ipv4Packet;
use wire::ipv6::{
    walk_extension_headers, FragmentRepr, Ipv6Packet, Ipv6Repr, TunnelEncapLimitRepr,
    NEXT_HEADER_DEST_OPTS, NEXT_HEADER_FRAGMENT, NEXT_HEADER_HOP_BY_HOP, NEXT_HEADER_IPV4,
    NEXT_HEADER_ROUTING,
};
use wire::units::Nanos;

use crate::util::{add, Counter};

/// The IPv4 addresses RFC 6333 §5.7 reserves for the softwire itself.
pub const B4_IPV4: core::net::Ipv4Addr = core::net::Ipv4Addr::new(192, 0, 0, 2);
pub const AFTR_IPV4: core::net::Ipv4Addr = core::net::Ipv4Addr::new(192, 0, 0, 1);

/// Limits of the outer-fragment reassembly buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReassemblyConfig {
    /// Datagrams being reassembled at once.
    pub max_datagrams: usize,
    /// Bytes held across all of them.
    pub max_bytes: usize,
    /// A datagram not complete this long after its first fragment is dropped (RFC 8200: 60 s).
    pub timeout: Nanos,
}

impl Default for ReassemblyConfig {
    fn default() -> Self {
        ReassemblyConfig {
            max_datagrams: 256,
            max_bytes: 4 << 20,
            timeout: Nanos(60_000_000_000),
        }
    }
}

/// One end of a softwire.
#[derive(Debug, Clone)]
pub struct TunnelConfig {
    /// Our tunnel endpoint address.
    pub local: Ipv6Addr,
    pub mac: MacAddr,
    /// Largest outer IPv6 packet on the link (default 1500); bigger ones are fragmented.
    pub mtu: usize,
    pub hop_limit: u8,
    /// Insert a Tunnel Encapsulation Limit option with this value (RFC 2473); None = don't.
    pub encap_limit: Option<u8>,
    pub reassembly: ReassemblyConfig,
}

impl TunnelConfig {
    pub fn new(local: Ipv6Addr, mac: MacAddr) -> TunnelConfig {
        TunnelConfig {
            local,
            mac,
            mtu: 1500,
            hop_limit: 64,
            encap_limit: None,
            reassembly: ReassemblyConfig::default(),
        }
    }
}

/// Why a frame was not decapsulated or a packet not encapsulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TunnelDrop {
    /// IPv6 header shorter than 40 bytes or than its payload length, or not version 6.
    BadIpv6,
    /// Addressed to another IPv6 address.
    NotForUs,
    /// Broken extension headers (lengths, options).
    BadExtensionHeaders,
    /// The payload is not IPv4 (next header other than 4).
    NotIpv4,
    /// The inner IPv4 header is broken.
    BadInnerIpv4,
    /// B4: from someone other than our AFTR. AFTR: softwire table full.
    UnknownPeer,
    /// Encapsulation towards a B4 the AFTR has never heard from (no MAC to send to).
    NoSoftwire,
    /// The packet to encapsulate is larger than IPv6 can carry.
    TooBig,
    /// Fragments that overlap (RFC 5722: the whole datagram is dropped).
    FragmentOverlap,
    /// A fragment that is not a multiple of 8 bytes but says more follow, or that would
    /// make the datagram larger than 65,535 bytes, or contradicts the known end.
    BadFragment,
    /// The reassembly buffer's datagram or byte limit was reached.
    ReassemblyLimit,
    /// A datagram whose fragments did not all arrive in time.
    ReassemblyTimeout,
}

/// Counters of one tunnel end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TunnelStats {
    pub encapsulated: u64,
    /// Packets whose outer IPv6 had to be fragmented.
    pub fragmented: u64,
    pub fragments_tx: u64,
    pub decapsulated: u64,
    pub fragments_rx: u64,
    pub reassembled: u64,
    /// Packets that carried a Tunnel Encapsulation Limit option (accepted).
    pub encap_limit_seen: u64,
    pub dropped: Counter<TunnelDrop>,
}

#[derive(Debug)]
struct Partial {
    deadline: Nanos,
    next_header: Option<u8>,
    total: Option<usize>,
    /// (offset, data), kept sorted by offset.
    pieces: Vec<(usize, Vec<u8>)>,
    bytes: usize,
    src_mac: MacAddr,
}

/// Outer IPv6 fragment reassembly with bounded memory.
#[derive(Debug)]
pub struct Reassembler {
    cfg: ReassemblyConfig,
    partial: BTreeMap<(Ipv6Addr, Ipv6Addr, u32), Partial>,
    bytes: usize,
}

impl Reassembler {
    pub fn new(cfg: ReassemblyConfig) -> Reassembler {
        Reassembler {
            cfg,
            partial: BTreeMap::new(),
            bytes: 0,
        }
    }

    /// Datagrams and bytes currently held.
    pub fn held(&self) -> (usize, usize) {
        (self.partial.len(), self.bytes)
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.partial.values().map(|p| p.deadline).min()
    }

    /// Drops datagrams past their deadline; returns how many.
    pub fn expire(&mut self, now: Nanos) -> usize {
        let old: Vec<_> = self
            .partial
            .iter()
            .filter(|(_, p)| p.deadline <= now)
            .map(|(k, _)| *k)
            .collect();
        for k in &old {
            self.remove(k);
        }
        old.len()
    }

    fn remove(&mut self, k: &(Ipv6Addr, Ipv6Addr, u32)) {
        if let Some(p) = self.partial.remove(k) {
            self.bytes -= p.bytes;
        }
    }

    /// Adds one fragment's data (the fragmentable part after the Fragment header). Returns
    /// the whole fragmentable part, its next header and the sender's MAC once complete.
    pub(crate) fn insert(
        &mut self,
        now: Nanos,
        key: (Ipv6Addr, Ipv6Addr, u32),
        frag: FragmentRepr,
        data: &[u8],
        src_mac: MacAddr,
    ) -> Result<Option<(u8, Vec<u8>, MacAddr)>, TunnelDrop> {
        let off = usize::from(frag.frag_offset);
        let end = off + data.len();
        if end > 65_535 || (frag.more_frags && data.len() % 8 != 0) || data.is_empty() {
            self.remove(&key);
            return Err(TunnelDrop::BadFragment);
        }
        if !self.partial.contains_key(&key) {
            if self.partial.len() >= self.cfg.max_datagrams {
                return Err(TunnelDrop::ReassemblyLimit);
            }
            self.partial.insert(
                key,
                Partial {
                    deadline: add(now, self.cfg.timeout),
                    next_header: None,
                    total: None,
                    pieces: Vec::new(),
                    bytes: 0,
                    src_mac,
                },
            );
        }
        if self.bytes + data.len() > self.cfg.max_bytes {
            self.remove(&key);
            return Err(TunnelDrop::ReassemblyLimit);
        }
        let Some(p) = self.partial.get_mut(&key) else {
            return Err(TunnelDrop::ReassemblyLimit);
        };
        // An exact duplicate (the network repeated a fragment) is ignored, not an overlap
        // (RFC 8200 §4.5).
        if p.pieces
            .iter()
            .any(|(o, d)| *o == off && d.as_slice() == data)
        {
            return Ok(None);
        }
        let bad_end = match p.total {
            Some(t) => end > t || (!frag.more_frags && end != t),
            None => !frag.more_frags && p.pieces.iter().any(|(o, d)| o + d.len() > end),
        };
        let overlap = p.pieces.iter().any(|(o, d)| off < o + d.len() && *o < end);
        if bad_end || overlap {
            self.remove(&key);
            return Err(if overlap {
                TunnelDrop::FragmentOverlap
            } else {
                TunnelDrop::BadFragment
            });
        }
        if !frag.more_frags {
            p.total = Some(end);
        }
        if off == 0 {
            p.next_header = Some(frag.next_header);
        }
        let at = p.pieces.partition_point(|(o, _)| *o < off);
        p.pieces.insert(at, (off, data.to_vec()));
        p.bytes += data.len();
        self.bytes += data.len();
        // Complete when the pieces tile 0..total.
        let complete = p.total.is_some_and(|t| {
            let mut next = 0;
            for (o, d) in &p.pieces {
                if *o != next {
                    return false;
                }
                next += d.len();
            }
            next == t
        });
        if !complete {
            return Ok(None);
        }
        let Some(p) = self.partial.remove(&key) else {
            return Ok(None);
        };
        self.bytes -= p.bytes;
        let mut whole = Vec::with_capacity(p.bytes);
        for (_, d) in p.pieces {
            whole.extend_from_slice(&d);
        }
        Ok(Some((p.next_header.unwrap_or(0), whole, p.src_mac)))
    }
}

/// Where the Fragment header is in an IPv6 payload: walks Hop-by-Hop, Routing and
/// Destination Options headers in front of it. None if there is no Fragment header there.
fn find_fragment(
    mut next: u8,
    payload: &[u8],
) -> Result<Option<(usize, FragmentRepr)>, TunnelDrop> {
    let mut pos = 0usize;
    loop {
        match next {
            NEXT_HEADER_FRAGMENT => {
                let f = FragmentRepr::parse(payload.get(pos..).unwrap_or(&[]))
                    .map_err(|_| TunnelDrop::BadExtensionHeaders)?;
                return Ok(Some((pos, f)));
            }
            NEXT_HEADER_HOP_BY_HOP | NEXT_HEADER_ROUTING | NEXT_HEADER_DEST_OPTS => {
                let h = payload
                    .get(pos..pos + 2)
                    .ok_or(TunnelDrop::BadExtensionHeaders)?;
                next = h[0];
                pos += (usize::from(h[1]) + 1) * 8;
                if pos > payload.len() {
                    return Err(TunnelDrop::BadExtensionHeaders);
                }
            }
            _ => return Ok(None),
        }
    }
}

/// What a tunnel end reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TunnelEvent {
    /// An IPv4 packet came out of the softwire of `peer` (the B4 on the AFTR, the AFTR on a B4).
    Decapsulated { peer: Ipv6Addr, packet: Vec<u8> },
}

/// What both ends share: encapsulation, decapsulation, reassembly.
#[derive(Debug)]
struct Tunnel {
    cfg: TunnelConfig,
    reasm: Reassembler,
    ident: u32,
    tx: Vec<Vec<u8>>,
    events: Vec<TunnelEvent>,
    stats: TunnelStats,
}

impl Tunnel {
    fn new(cfg: TunnelConfig) -> Tunnel {
        Tunnel {
            reasm: Reassembler::new(cfg.reassembly),
            cfg,
            ident: 0x5e00_0000,
            tx: Vec::new(),
            events: Vec::new(),
            stats: TunnelStats::default(),
        }
    }

    fn drop(&mut self, r: TunnelDrop) {
        self.stats.dropped.add(r);
    }

    /// Encapsulates `ipv4` towards `dst`, fragmenting the outer packet above the MTU.
    fn encapsulate(
        &mut self,
        dst: Ipv6Addr,
        dst_mac: MacAddr,
        ipv4: &[u8],
    ) -> Result<usize, TunnelDrop> {
        // The fragmentable part: [Destination Options with the limit] + the IPv4 packet.
        let mut body = Vec::with_capacity(8 + ipv4.len());
        let first_nh = match self.cfg.encap_limit {
            Some(limit) => {
                let mut opt = [0u8; TunnelEncapLimitRepr::HEADER_LEN];
                let _ = TunnelEncapLimitRepr {
                    next_header: NEXT_HEADER_IPV4,
                    limit,
                }
                .emit(&mut opt);
                body.extend_from_slice(&opt);
                NEXT_HEADER_DEST_OPTS
            }
            None => NEXT_HEADER_IPV4,
        };
        body.extend_from_slice(ipv4);
        if body.len() > 65_535 {
            self.drop(TunnelDrop::TooBig);
            return Err(TunnelDrop::TooBig);
        }
        let hdr = wire::ipv6::HEADER_LEN;
        self.stats.encapsulated += 1;
        if hdr + body.len() <= self.cfg.mtu {
            let f = self.outer(dst, dst_mac, first_nh, None, &body);
            self.tx.push(f);
            return Ok(1);
        }
        // RFC 6333 §5.3: fragment the IPv6 packet, in chunks of a multiple of 8 bytes.
        let chunk = (self.cfg.mtu.saturating_sub(hdr + FragmentRepr::HEADER_LEN) / 8 * 8).max(8);
        self.ident = self.ident.wrapping_add(1);
        let mut n = 0;
        for (i, piece) in body.chunks(chunk).enumerate() {
            let off = i * chunk;
            let frag = FragmentRepr {
                next_header: first_nh,
                frag_offset: off as u16,
                more_frags: off + piece.len() < body.len(),
                ident: self.ident,
            };
            let f = self.outer(dst, dst_mac, NEXT_HEADER_FRAGMENT, Some(frag), piece);
            self.tx.push(f);
            n += 1;
        }
        self.stats.fragmented += 1;
        self.stats.fragments_tx += n as u64;
        Ok(n)
    }

    fn outer(
        &self,
        dst: Ipv6Addr,
        dst_mac: MacAddr,
        nh: u8,
        frag: Option<FragmentRepr>,
        body: &[u8],
    ) -> Vec<u8> {
        let l2 = wire::ethernet::HEADER_LEN;
        let fl = if frag.is_some() {
            FragmentRepr::HEADER_LEN
        } else {
            0
        };
        let mut f = vec![0u8; l2 + wire::ipv6::HEADER_LEN + fl + body.len()];
        let _ = EthernetRepr {
            src: self.cfg.mac,
            dst: dst_mac,
            ethertype: EtherType::IPV6,
        }
        .emit(&mut EthernetFrame::new_unchecked(&mut f[..]));
        let _ = Ipv6Repr {
            src: self.cfg.local,
            dst,
            next_header: nh,
            payload_len: fl + body.len(),
            hop_limit: self.cfg.hop_limit,
            traffic_class: 0,
            flow_label: 0,
        }
        .emit(&mut Ipv6Packet::new_unchecked(&mut f[l2..]));
        let at = l2 + wire::ipv6::HEADER_LEN;
        if let Some(fr) = frag {
            let _ = fr.emit(&mut f[at..]);
        }
        f[at + fl..].copy_from_slice(body);
        f
    }

    /// Decapsulates one frame. `Ok(None)`: not IPv6 (not ours to judge) or a fragment held
    /// for later. `Ok(Some((peer, peer_mac)))`: an event was queued.
    fn decapsulate(
        &mut self,
        now: Nanos,
        frame: &[u8],
    ) -> Option<Result<Option<(Ipv6Addr, MacAddr)>, TunnelDrop>> {
        let eth_frame = EthernetFrame::new_checked(frame).ok()?;
        let eth = EthernetRepr::parse(&eth_frame).ok()?;
        if eth.ethertype != EtherType::IPV6 {
            return None;
        }
        Some(self.decap_ipv6(now, eth.src, eth_frame.payload()))
    }

    fn decap_ipv6(
        &mut self,
        now: Nanos,
        src_mac: MacAddr,
        body: &[u8],
    ) -> Result<Option<(Ipv6Addr, MacAddr)>, TunnelDrop> {
        let ip = Ipv6Packet::new_checked(body).map_err(|_| TunnelDrop::BadIpv6)?;
        let repr = Ipv6Repr::parse(&ip).map_err(|_| TunnelDrop::BadIpv6)?;
        if repr.dst != self.cfg.local {
            return Err(TunnelDrop::NotForUs);
        }
        let payload = ip.payload();
        let (next, data, mac) = match find_fragment(repr.next_header, payload)? {
            Some((pos, frag)) => {
                self.stats.fragments_rx += 1;
                let data = &payload[pos + FragmentRepr::HEADER_LEN..];
                let key = (repr.src, repr.dst, frag.ident);
                match self.reasm.insert(now, key, frag, data, src_mac)? {
                    Some((nh, whole, mac)) => {
                        self.stats.reassembled += 1;
                        (nh, whole, mac)
                    }
                    None => return Ok(None),
                }
            }
            None => (repr.next_header, payload.to_vec(), src_mac),
        };
        let ext =
            walk_extension_headers(next, &data).map_err(|_| TunnelDrop::BadExtensionHeaders)?;
        if ext.upper_protocol != NEXT_HEADER_IPV4 || ext.fragment.is_some() {
            return Err(TunnelDrop::NotIpv4);
        }
        if ext.tunnel_encap_limit.is_some() {
            self.stats.encap_limit_seen += 1;
        }
        let inner = &data[ext.offset..];
        let v4 = Ipv4Packet::new_checked(inner).map_err(|_| TunnelDrop::BadInnerIpv4)?;
        if v4.version() != 4 {
            return Err(TunnelDrop::BadInnerIpv4);
        }
        let len = usize::from(v4.total_len());
        self.stats.decapsulated += 1;
        self.events.push(TunnelEvent::Decapsulated {
            peer: repr.src,
            packet: inner[..len].to_vec(),
        });
        Ok(Some((repr.src, mac)))
    }

    fn poll(&mut self, now: Nanos) {
        for _ in 0..self.reasm.expire(now) {
            self.drop(TunnelDrop::ReassemblyTimeout);
        }
    }
}

/// A softwire as the AFTR knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Softwire {
    /// Where to send frames for this B4 (learned from its frames).
    pub mac: MacAddr,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub last_seen: Nanos,
}

/// The AFTR: terminates many softwires, keyed by B4 address.
#[derive(Debug)]
pub struct Aftr {
    t: Tunnel,
    softwires: BTreeMap<Ipv6Addr, Softwire>,
    /// Most softwires learned (default 65,536).
    pub max_softwires: usize,
}

impl Aftr {
    pub fn new(cfg: TunnelConfig) -> Aftr {
        Aftr {
            t: Tunnel::new(cfg),
            softwires: BTreeMap::new(),
            max_softwires: 65_536,
        }
    }

    pub fn stats(&self) -> &TunnelStats {
        &self.t.stats
    }

    pub fn softwire(&self, b4: Ipv6Addr) -> Option<&Softwire> {
        self.softwires.get(&b4)
    }

    pub fn softwires(&self) -> impl Iterator<Item = (&Ipv6Addr, &Softwire)> {
        self.softwires.iter()
    }

    /// Declares a softwire before any traffic (e.g. the engine sends first).
    pub fn add_softwire(&mut self, b4: Ipv6Addr, mac: MacAddr) {
        self.softwires.entry(b4).or_insert(Softwire {
            mac,
            rx_packets: 0,
            tx_packets: 0,
            last_seen: Nanos(0),
        });
    }

    /// Outer fragments held for reassembly (datagrams, bytes).
    pub fn reassembly_held(&self) -> (usize, usize) {
        self.t.reasm.held()
    }

    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.t.tx)
    }

    pub fn take_events(&mut self) -> Vec<TunnelEvent> {
        std::mem::take(&mut self.t.events)
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.t.reasm.next_deadline()
    }

    pub fn poll(&mut self, now: Nanos) {
        self.t.poll(now);
    }

    /// Handles one received frame; false if it is not IPv6.
    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
        let full = self.softwires.len() >= self.max_softwires;
        match self.t.decapsulate(now, frame) {
            None => false,
            Some(Ok(Some((b4, mac)))) => {
                if full && !self.softwires.contains_key(&b4) {
                    self.t.events.pop();
                    self.t.stats.decapsulated -= 1;
                    self.t.drop(TunnelDrop::UnknownPeer);
                    return true;
                }
                let sw = self.softwires.entry(b4).or_insert(Softwire {
                    mac,
                    rx_packets: 0,
                    tx_packets: 0,
                    last_seen: now,
                });
                sw.mac = mac;
                sw.rx_packets += 1;
                sw.last_seen = now;
                true
            }
            Some(Ok(None)) => true,
            Some(Err(r)) => {
                self.t.drop(r);
                true
            }
        }
    }

    /// Encapsulates an IPv4 packet towards the B4 `b4`; returns the number of frames queued.
    pub fn encapsulate(&mut self, b4: Ipv6Addr, ipv4: &[u8]) -> Result<usize, TunnelDrop> {
        let Some(sw) = self.softwires.get_mut(&b4) else {
            self.t.drop(TunnelDrop::NoSoftwire);
            return Err(TunnelDrop::NoSoftwire);
        };
        sw.tx_packets += 1;
        let mac = sw.mac;
        self.t.encapsulate(b4, mac, ipv4)
    }
}

/// The B4: one softwire to one AFTR.
#[derive(Debug)]
pub struct B4 {
    t: Tunnel,
    aftr: Ipv6Addr,
    aftr_mac: MacAddr,
}

impl B4 {
    /// `aftr_mac` is the next hop towards the AFTR (resolve it with [`crate::arp_nd`]).
    pub fn new(cfg: TunnelConfig, aftr: Ipv6Addr, aftr_mac: MacAddr) -> B4 {
        B4 {
            t: Tunnel::new(cfg),
            aftr,
            aftr_mac,
        }
    }

    pub fn stats(&self) -> &TunnelStats {
        &self.t.stats
    }

    pub fn reassembly_held(&self) -> (usize, usize) {
        self.t.reasm.held()
    }

    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.t.tx)
    }

    pub fn take_events(&mut self) -> Vec<TunnelEvent> {
        std::mem::take(&mut self.t.events)
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.t.reasm.next_deadline()
    }

    pub fn poll(&mut self, now: Nanos) {
        self.t.poll(now);
    }

    /// Encapsulates an IPv4 packet towards the AFTR; returns the number of frames queued.
    pub fn encapsulate(&mut self, ipv4: &[u8]) -> Result<usize, TunnelDrop> {
        let (aftr, mac) = (self.aftr, self.aftr_mac);
        self.t.encapsulate(aftr, mac, ipv4)
    }

    /// Handles one received frame; false if it is not IPv6.
    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
        match self.t.decapsulate(now, frame) {
            None => false,
            Some(Ok(Some((peer, _)))) => {
                if peer != self.aftr {
                    self.t.events.pop();
                    self.t.stats.decapsulated -= 1;
                    self.t.drop(TunnelDrop::UnknownPeer);
                }
                true
            }
            Some(Ok(None)) => true,
            Some(Err(r)) => {
                self.t.drop(r);
                true
            }
        }
    }
}
