//! The PPPoE access concentrator (RFC 2516, RFC 4638), many sessions at once.
//!
//! Discovery is stateless until a valid PADR: a PADO carries an AC-Cookie that is a keyed
//! hash (SipHash-2-4) of the client's MAC, and only a PADR echoing the right cookie creates
//! a session, so a PADI flood costs no memory (and is rate-limited on top). Each session runs
//! a [`Link`] (LCP, PAP/CHAP, IPCP, IPv6CP, echo) keyed by (client MAC, session id).

use core::net::Ipv4Addr;
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

use wire::ethernet::MacAddr;
use wire::ppp::lcp::PPPOE_MAX_MRU as PPPOE_MAX_PAYLOAD_DEFAULT;
use wire::ppp::Protocol;
use wire::pppoe::{PppoeCode, TagType};
use wire::units::Nanos;

use super::subscribers::{Ipv4Assign, SubscriberTable};
use super::{
    discovery_frame, parse, session_frame, ConfigError, HostileReason, SessionInfo, SessionKey,
    Tags,
};
use crate::ppp::link::{Credential, DownReason, Link, LinkConfig, LinkEvent, Role};
use crate::ppp::neg::{eui64, IpcpNeg, MIN_MRU};
use crate::ppp::{AuthMethod, FsmConfig};
use crate::util::{siphash24, Counter, DurationSummary, Entropy, Rng};

/// A block of IPv4 addresses handed to subscribers by IPCP.
///
/// It never hands out an address outside the lab network its first address is in
/// ([`super::pool_net`]: a documentation /24, or 198.18.0.0/15 for pools of thousands), nor
/// that network's network or broadcast address, nor a [`reserve`](Self::reserve)d one (the
/// gateway's, fixed subscribers'): a larger `size` is cut to what fits.
/// [`ServerConfig::check`] refuses such configurations up front.
///
/// The lowest free address is found without a scan (tens of thousands of subscribers log in
/// at once): indices below `next` that were released wait in `free`, and `next` is the first
/// index never handed out.
#[derive(Debug, Clone)]
pub struct Ipv4Pool {
    first: u32,
    size: u32,
    used: BTreeSet<u32>,
    reserved: BTreeSet<u32>,
    /// Released indices below `next`, neither used nor reserved.
    free: BTreeSet<u32>,
    /// Every index below it is used, reserved or in `free`.
    next: u32,
}

impl Ipv4Pool {
    /// Up to `size` addresses from `first` on, within `first`'s lab network without its
    /// network and broadcast address; none if `first` is not in one.
    pub fn new(first: Ipv4Addr, size: u32) -> Ipv4Pool {
        let f = u32::from(first);
        let size = match super::pool_net(first) {
            Some(net) if f > u32::from(net.network()) && f < u32::from(net.broadcast()) => {
                size.min(u32::from(net.broadcast()) - f)
            }
            _ => 0,
        };
        Ipv4Pool {
            first: f,
            size,
            used: BTreeSet::new(),
            reserved: BTreeSet::new(),
            free: BTreeSet::new(),
            next: 0,
        }
    }

    /// Never hand out `a` (the gateway's own address).
    pub fn reserve(&mut self, a: Ipv4Addr) {
        let i = u32::from(a).wrapping_sub(self.first);
        if i < self.size {
            self.reserved.insert(i);
            self.free.remove(&i);
        }
    }

    /// How many addresses can be handed out at most.
    pub fn capacity(&self) -> u32 {
        self.size - self.reserved.len() as u32
    }

    /// The lowest free address.
    pub fn allocate(&mut self) -> Option<Ipv4Addr> {
        let i = match self.free.pop_first() {
            Some(i) => i,
            None => {
                while self.next < self.size
                    && (self.reserved.contains(&self.next) || self.used.contains(&self.next))
                {
                    self.next += 1;
                }
                if self.next >= self.size {
                    return None;
                }
                self.next += 1;
                self.next - 1
            }
        };
        self.used.insert(i);
        Some(Ipv4Addr::from(self.first.wrapping_add(i)))
    }

    pub fn release(&mut self, a: Ipv4Addr) {
        let i = u32::from(a).wrapping_sub(self.first);
        if self.used.remove(&i) && i < self.next && !self.reserved.contains(&i) {
            self.free.insert(i);
        }
    }

    pub fn in_use(&self) -> usize {
        self.used.len()
    }
}

/// How the access concentrator behaves.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub mac: MacAddr,
    pub ac_name: String,
    /// Services offered; empty means any requested Service-Name is served.
    pub service_names: Vec<String>,
    /// Key of the AC-Cookie hash; None (the default) draws one from `entropy` when the
    /// server is made, so a cookie from one run is worthless in the next.
    pub cookie_key: Option<[u8; 16]>,
    pub max_sessions: usize,
    /// RFC 4638: the largest PPP-Max-Payload we grant; 1492 turns the extension off.
    pub max_payload: u16,
    /// The MRU we request in LCP (default 1454).
    pub mru: u16,
    /// Authentication demanded, preferred first (empty: none).
    pub auth: Vec<AuthMethod>,
    /// The accepted logins when there is no subscriber table; every one takes a pool
    /// address, and any number of sessions may share one.
    pub credentials: Vec<Credential>,
    /// The subscriber table (`--subscribers FILE`): when given, it alone says who may log
    /// in (`credentials` is ignored) and which IPv4 address each one gets — fixed, from the
    /// pool, or none (IPv6 only) — chosen once authentication says who it is. One session
    /// per subscriber: a second login of a user replaces the first (the older session ends
    /// with a PADT and frees its address), as a CPE that rebooted without a PADT needs.
    pub subscribers: Option<Arc<SubscriberTable>>,
    /// Our IPCP address.
    pub gateway: Ipv4Addr,
    /// First address and size of the subscriber pool: inside one documentation /24, without
    /// its network, broadcast or the gateway's address (see [`ServerConfig::check`]).
    pub pool_first: Ipv4Addr,
    pub pool_size: u32,
    /// DNS servers handed out by IPCP (options 129 and 131); None rejects the option.
    pub dns: [Option<Ipv4Addr>; 2],
    pub ipcp: bool,
    pub ipv6cp: bool,
    pub echo_interval: Nanos,
    pub echo_failures: u32,
    pub fsm: FsmConfig,
    /// PADOs per second (token bucket refill); 0 = unlimited.
    pub pado_rate: u32,
    /// Token bucket depth.
    pub pado_burst: u32,
    /// Session ids, the cookie key, and each session's magic numbers, CHAP challenges and
    /// timer jitter. [`Entropy::Os`] (the default) for anything a peer talks to;
    /// [`Entropy::Seeded`] for reproducible tests.
    pub entropy: Entropy,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            mac: MacAddr([0x02, 0x77, 0x72, 0x00, 0x00, 0x01]),
            ac_name: "wirerate-ac".into(),
            service_names: Vec::new(),
            cookie_key: None,
            // The whole session-id space (1 to 65534; RFC 2516 keeps 0 and 0xffff).
            max_sessions: 0xfffe,
            max_payload: PPPOE_MAX_PAYLOAD_DEFAULT,
            mru: 1454,
            auth: vec![AuthMethod::Pap],
            credentials: vec![Credential::new("wirerate", "wirerate")],
            subscribers: None,
            gateway: Ipv4Addr::new(198, 51, 100, 1),
            pool_first: Ipv4Addr::new(198, 51, 100, 10),
            pool_size: 240,
            dns: [
                Some(Ipv4Addr::new(198, 51, 100, 53)),
                Some(Ipv4Addr::new(203, 0, 113, 53)),
            ],
            ipcp: true,
            ipv6cp: true,
            echo_interval: Nanos(10_000_000_000),
            echo_failures: 3,
            fsm: FsmConfig::default(),
            pado_rate: 1000,
            pado_burst: 1000,
            entropy: Entropy::Os,
        }
    }
}

impl ServerConfig {
    /// Refuses what cannot work as asked: an MRU below 64 (LCP would turn it into 64) or above
    /// what PPPoE carries (1492, or `max_payload` with RFC 4638); and, with IPCP, an empty
    /// pool or one that would hand out an address outside the documentation ranges, the
    /// network or broadcast address of its /24, or the gateway's own address. The error names
    /// the largest pool that fits.
    pub fn check(&self) -> Result<(), ConfigError> {
        let max = PPPOE_MAX_PAYLOAD_DEFAULT.max(self.max_payload);
        if !(MIN_MRU..=max).contains(&self.mru) {
            return Err(ConfigError::Mru {
                mru: self.mru,
                min: MIN_MRU,
                max,
            });
        }
        if self.ipcp {
            check_pool(self.pool_first, self.pool_size, self.gateway)?;
        }
        if let Some(t) = &self.subscribers {
            t.check_gateway(self.gateway)?;
        }
        Ok(())
    }
}

fn check_pool(first: Ipv4Addr, size: u32, gateway: Ipv4Addr) -> Result<(), ConfigError> {
    if size == 0 {
        return Err(ConfigError::EmptyPool);
    }
    let Some(net) = super::pool_net(first) else {
        return Err(ConfigError::PoolOutsideDocumentation { first });
    };
    let (network, broadcast) = (u32::from(net.network()), u32::from(net.broadcast()));
    let f = u32::from(first);
    if f == network || f == broadcast {
        return Err(ConfigError::PoolStartsAtNetworkOrBroadcast {
            first,
            broadcast: f != network,
        });
    }
    let g = u32::from(gateway);
    if g >= f && u64::from(g) < u64::from(f) + u64::from(size) {
        return Err(ConfigError::PoolHoldsGateway {
            first,
            size,
            gateway,
            largest: g - f,
        });
    }
    let largest = broadcast - f;
    if size > largest {
        return Err(ConfigError::PoolTooLarge {
            first,
            size,
            largest,
        });
    }
    Ok(())
}

/// What the server reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerEvent {
    /// LCP, authentication and the NCPs are done.
    SessionUp {
        key: SessionKey,
        info: SessionInfo,
        /// From the PADR that created the session.
        setup: Nanos,
        user: Option<String>,
    },
    /// The session ended (a PADT was sent, or received).
    SessionDown { key: SessionKey, reason: DownReason },
    /// A datagram from a subscriber.
    Data {
        key: SessionKey,
        protocol: Protocol,
        payload: Vec<u8>,
    },
}

/// Counters of the access concentrator.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ServerStats {
    pub padi_rx: u64,
    pub pado_tx: u64,
    /// PADIs for a service we do not offer (no PADO, as RFC 2516 asks).
    pub padi_unserved: u64,
    pub padr_rx: u64,
    pub pads_tx: u64,
    /// PADS with an error tag (session refused).
    pub pads_refused: u64,
    /// PADRs answered again with the session's PADS (the first was lost).
    pub padr_repeated: u64,
    pub padt_rx: u64,
    pub padt_tx: u64,
    pub sessions_started: u64,
    /// Sessions up right now.
    pub sessions_up: u64,
    pub sessions_up_total: u64,
    /// Sessions ended because their subscriber logged in again (subscriber table only).
    pub replaced: u64,
    /// Subscribers who were to get a pool address when the pool was empty (their IPCP
    /// address request is rejected).
    pub pool_exhausted: u64,
    /// PADR to network phase complete.
    pub setup: DurationSummary,
    /// PPP retransmissions (Configure/Terminate-Request, CHAP Challenge).
    pub retransmits: u64,
    /// Sessions ended, by reason (failures and normal ends alike).
    pub ended: Counter<DownReason>,
    /// PADTs and session frames for one of the last sessions that ended (the client's PADT
    /// crossing ours, a late Terminate-Ack): normal, not hostile.
    pub after_end: u64,
    pub hostile: Counter<HostileReason>,
}

/// What [`Server::drain_once`] left to do.
enum Drained {
    Done,
    /// The link waits for its network phase: grant it to this user.
    Grant(Option<String>),
}

/// How many ended sessions are remembered for [`ServerStats::after_end`].
const ENDED_REMEMBERED: usize = 256;

#[derive(Debug)]
struct Session {
    link: Link,
    started: Nanos,
    up: bool,
    host_uniq: Option<Vec<u8>>,
    pads: Vec<u8>,
    ppp_seen: bool,
    ipv4: Option<Ipv4Addr>,
    /// Who authenticated (once the network phase was granted).
    user: Option<String>,
    /// The client sent a PADT: the session ends without one from us.
    padt_received: bool,
}

/// The access concentrator.
#[derive(Debug)]
pub struct Server {
    cfg: ServerConfig,
    rng: Rng,
    cookie_key: [u8; 16],
    sessions: BTreeMap<SessionKey, Session>,
    /// Each session's next timer, and the same ordered by time: `poll` and `next_deadline`
    /// touch only what is due, not every session (tens of thousands are up at once).
    deadlines: BTreeMap<SessionKey, Nanos>,
    timers: BTreeSet<(Nanos, SessionKey)>,
    /// With a subscriber table, the session each user authenticated on (one per user).
    by_user: BTreeMap<String, SessionKey>,
    /// The last sessions that ended, oldest first.
    ended_recently: VecDeque<SessionKey>,
    ids: BTreeSet<u16>,
    pool: Ipv4Pool,
    /// Who may log in and how each is addressed: the subscriber table, or one made of
    /// `credentials` (all from the pool).
    table: Arc<SubscriberTable>,
    /// Whether `table` is a real subscriber table (addresses chosen after authentication,
    /// one session per user) rather than made of `credentials`.
    by_table: bool,
    /// The table's logins, shared by every session's link.
    logins: Arc<[Credential]>,
    tokens: u64,
    refilled: Nanos,
    tx: Vec<Vec<u8>>,
    events: Vec<ServerEvent>,
    /// IP packets from sessions for a TUN hand-off (`Some` once enabled).
    ip_up: Option<Vec<Vec<u8>>>,
    pub stats: ServerStats,
}

impl Server {
    /// A server for a configuration [`ServerConfig::check`] accepts.
    pub fn try_new(cfg: ServerConfig) -> Result<Server, ConfigError> {
        cfg.check()?;
        Ok(Server::new(cfg))
    }

    /// A server; a configuration [`ServerConfig::check`] would refuse still runs, but its pool
    /// hands out only what [`Ipv4Pool`] allows (documentation addresses, never the gateway's).
    pub fn new(cfg: ServerConfig) -> Server {
        let mut pool = Ipv4Pool::new(cfg.pool_first, cfg.pool_size);
        pool.reserve(cfg.gateway);
        let by_table = cfg.subscribers.is_some();
        let table = cfg
            .subscribers
            .clone()
            .unwrap_or_else(|| Arc::new(SubscriberTable::from_credentials(&cfg.credentials)));
        // A fixed address inside the pool's range is never handed to someone else.
        for (a, _) in table.fixed_ipv4() {
            pool.reserve(a);
        }
        let logins: Arc<[Credential]> = table.credentials().into();
        let cookie_key = cfg.cookie_key.unwrap_or_else(|| {
            let mut k = [0u8; 16];
            Rng::from_entropy(cfg.entropy.derive(0xc00c1e)).fill(&mut k);
            k
        });
        Server {
            rng: Rng::from_entropy(cfg.entropy),
            cookie_key,
            pool,
            table,
            by_table,
            logins,
            tokens: u64::from(cfg.pado_burst),
            refilled: Nanos(0),
            sessions: BTreeMap::new(),
            deadlines: BTreeMap::new(),
            timers: BTreeSet::new(),
            by_user: BTreeMap::new(),
            ended_recently: VecDeque::new(),
            ids: BTreeSet::new(),
            tx: Vec::new(),
            events: Vec::new(),
            ip_up: None,
            stats: ServerStats::default(),
            cfg,
        }
    }

    pub fn config(&self) -> &ServerConfig {
        &self.cfg
    }

    /// Frames to send, in order.
    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.tx)
    }

    pub fn take_events(&mut self) -> Vec<ServerEvent> {
        std::mem::take(&mut self.events)
    }

    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    pub fn sessions(&self) -> impl Iterator<Item = SessionKey> + '_ {
        self.sessions.keys().copied()
    }

    /// The data-path view of an up session.
    pub fn session_info(&self, key: SessionKey) -> Option<SessionInfo> {
        let s = self.sessions.get(&key)?;
        s.up.then(|| SessionInfo {
            local_mac: self.cfg.mac,
            peer_mac: key.client,
            session_id: key.session_id,
            negotiated: s.link.negotiated(),
        })
    }

    /// The IPv6 prefix the subscriber table fixes for whoever authenticated on session `key`
    /// (`prefix=`): what that session's DHCPv6 delegates instead of a pool prefix. None
    /// without a table, before the network phase, or for a subscriber without one.
    pub fn subscriber_prefix(&self, key: SessionKey) -> Option<(core::net::Ipv6Addr, u8)> {
        if !self.by_table {
            return None;
        }
        let user = self.sessions.get(&key)?.user.as_deref()?;
        self.table.get(user)?.prefix
    }

    /// Every fixed prefix of the subscriber table (none without one).
    pub fn subscriber_prefixes(&self) -> impl Iterator<Item = (core::net::Ipv6Addr, u8)> + '_ {
        self.table
            .iter()
            .filter(|_| self.by_table)
            .filter_map(|s| s.prefix)
    }

    /// The AC-Cookie for a client MAC.
    pub fn cookie(&self, client: MacAddr) -> [u8; 8] {
        siphash24(&self.cookie_key, &client.0).to_be_bytes()
    }

    /// When [`poll`](Self::poll) has work next.
    pub fn next_deadline(&self) -> Option<Nanos> {
        self.timers.first().map(|(d, _)| *d)
    }

    /// Runs the sessions' timers due at `now`.
    pub fn poll(&mut self, now: Nanos) {
        let due: Vec<SessionKey> = self
            .timers
            .iter()
            .take_while(|(d, _)| *d <= now)
            .map(|(_, k)| *k)
            .collect();
        for key in due {
            if let Some(s) = self.sessions.get_mut(&key) {
                s.link.poll(now);
            }
            self.drain(now, key);
        }
    }

    /// Closes a session with an LCP Terminate exchange, then a PADT.
    pub fn close(&mut self, now: Nanos, key: SessionKey) {
        if let Some(s) = self.sessions.get_mut(&key) {
            s.link.close(now, DownReason::LocalClose);
        }
        self.drain(now, key);
    }

    /// Ends session `key` at once with a PADT, without waiting for the peer's Terminate-Ack:
    /// for an owner that is stopping after [`Server::close`] had its chance (a peer that left
    /// without a word never answers, and the session was neither ended nor counted). It ends
    /// under the failure it was closing for (wrong credentials, …), else `LocalClose`.
    pub fn abort(&mut self, now: Nanos, key: SessionKey) {
        if let Some(s) = self.sessions.get_mut(&key) {
            s.link.kill(DownReason::LocalClose);
        }
        self.drain(now, key);
    }

    /// Sends a datagram to a subscriber; false if there is no such session or its NCP is not
    /// open.
    pub fn send(
        &mut self,
        now: Nanos,
        key: SessionKey,
        protocol: Protocol,
        payload: &[u8],
    ) -> bool {
        let sent = self
            .sessions
            .get_mut(&key)
            .is_some_and(|s| s.link.send(protocol, payload));
        self.drain(now, key);
        sent
    }

    /// Hands the IP packets of every session to [`take_ip`](Self::take_ip) instead of
    /// [`ServerEvent::Data`] (IPv6 to link-local and multicast addresses stays an event, for
    /// the session's IPv6 provisioning); [`send_ip`](Self::send_ip) routes packets back. This
    /// is the ISP side of a TUN hand-off (`engine::tun`).
    pub fn enable_ip_relay(&mut self) {
        self.ip_up.get_or_insert_with(Vec::new);
    }

    /// Moves the IP packets sessions delivered since the last call into `out`.
    pub fn take_ip(&mut self, out: &mut Vec<Vec<u8>>) {
        if let Some(up) = &mut self.ip_up {
            out.append(up);
        }
    }

    /// Sends an IP packet down the session its destination belongs to: IPv4 by the address
    /// IPCP gave the subscriber, IPv6 by the subscriber's IPv6CP interface identifier (the low
    /// 64 bits of the destination). Refused when no session owns the address, the session's
    /// NCP is not open, or the packet exceeds the subscriber's MRU.
    pub fn send_ip(
        &mut self,
        now: Nanos,
        packet: &[u8],
    ) -> Result<(), crate::control_plane::RelayDrop> {
        use crate::control_plane::RelayDrop;
        let (protocol, dst) = super::ip_destination(packet)?;
        let key = self
            .sessions
            .iter()
            .find(|(_, s)| match dst {
                super::IpDestination::V4(a) => s.ipv4 == Some(a),
                super::IpDestination::V6 { iid } => {
                    s.up && s.link.negotiated().peer_interface_id == Some(iid)
                }
            })
            .map(|(k, s)| (*k, s.up, s.link.negotiated().peer_mru));
        let Some((key, up, mru)) = key else {
            return Err(RelayDrop::NoRoute);
        };
        if !up {
            return Err(RelayDrop::NotUp);
        }
        if packet.len() > usize::from(mru) {
            return Err(RelayDrop::TooBig);
        }
        if self.send(now, key, protocol, packet) {
            Ok(())
        } else {
            Err(RelayDrop::NotUp)
        }
    }

    /// Handles one received Ethernet frame (without FCS). Returns false if it is not PPPoE
    /// (the caller may hand it to ARP/ND or elsewhere).
    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
        let p = match parse(frame) {
            Ok(Some(p)) => p,
            Ok(None) => return false,
            Err(r) => {
                self.stats.hostile.add(r);
                return true;
            }
        };
        let unicast_to_us = p.eth.dst == self.cfg.mac;
        let result = match p.pppoe.code {
            PppoeCode::Padi if unicast_to_us || p.eth.dst.is_broadcast() => {
                self.padi(now, p.eth.src, p.pppoe.session_id, p.payload)
            }
            PppoeCode::Padr | PppoeCode::Padt | PppoeCode::Session if !unicast_to_us => {
                Err(HostileReason::NotForUs)
            }
            PppoeCode::Padi => Err(HostileReason::NotForUs),
            PppoeCode::Padr => self.padr(now, p.eth.src, p.pppoe.session_id, p.payload),
            PppoeCode::Padt => {
                self.stats.padt_rx += 1;
                let key = SessionKey {
                    client: p.eth.src,
                    session_id: p.pppoe.session_id,
                };
                match self.sessions.get_mut(&key) {
                    Some(s) => {
                        s.padt_received = true;
                        s.link.kill(DownReason::PeerPadt);
                        self.drain(now, key);
                        Ok(())
                    }
                    None => self.after_end(key),
                }
            }
            PppoeCode::Session => {
                let key = SessionKey {
                    client: p.eth.src,
                    session_id: p.pppoe.session_id,
                };
                match self.sessions.get_mut(&key) {
                    Some(s) => {
                        s.ppp_seen = true;
                        s.link.input(now, p.payload);
                        self.drain(now, key);
                        Ok(())
                    }
                    None => self.after_end(key),
                }
            }
            PppoeCode::Pado | PppoeCode::Pads | PppoeCode::Unknown(_) => {
                Err(HostileReason::UnexpectedCode)
            }
        };
        if let Err(r) = result {
            self.stats.hostile.add(r);
        }
        true
    }

    /// A frame for a session that does not exist: normal if it has just ended, else hostile.
    fn after_end(&mut self, key: SessionKey) -> Result<(), HostileReason> {
        if self.ended_recently.contains(&key) {
            self.stats.after_end += 1;
            Ok(())
        } else {
            Err(HostileReason::UnknownSession)
        }
    }

    fn serves(&self, name: &[u8]) -> bool {
        name.is_empty()
            || self.cfg.service_names.is_empty()
            || self.cfg.service_names.iter().any(|s| s.as_bytes() == name)
    }

    /// The PPP-Max-Payload to grant for a requested one (RFC 4638), None to leave it out.
    fn grant_max_payload(&self, asked: Option<u16>) -> Option<u16> {
        let asked = asked?;
        (asked > PPPOE_MAX_PAYLOAD_DEFAULT && self.cfg.max_payload > PPPOE_MAX_PAYLOAD_DEFAULT)
            .then(|| asked.min(self.cfg.max_payload))
    }

    fn take_token(&mut self, now: Nanos) -> bool {
        if self.cfg.pado_rate == 0 {
            return true;
        }
        let elapsed = now.0.saturating_sub(self.refilled.0);
        let add = elapsed.saturating_mul(u64::from(self.cfg.pado_rate)) / 1_000_000_000;
        if add > 0 {
            self.tokens = (self.tokens + add).min(u64::from(self.cfg.pado_burst));
            self.refilled = now;
        }
        if self.tokens == 0 {
            return false;
        }
        self.tokens -= 1;
        true
    }

    fn padi(
        &mut self,
        now: Nanos,
        client: MacAddr,
        sid: u16,
        payload: &[u8],
    ) -> Result<(), HostileReason> {
        self.stats.padi_rx += 1;
        if sid != 0 {
            return Err(HostileReason::NonZeroSessionId);
        }
        let tags = Tags::parse(payload)?;
        let Some(service) = tags.service_names.first().copied() else {
            return Err(HostileReason::MissingServiceName);
        };
        if !self.serves(service) {
            self.stats.padi_unserved += 1;
            return Ok(());
        }
        if !self.take_token(now) {
            return Err(HostileReason::PadiRateLimited);
        }
        let cookie = self.cookie(client);
        let ac_name = self.cfg.ac_name.clone();
        let mut out: Vec<(TagType, &[u8])> = vec![(TagType::AcName, ac_name.as_bytes())];
        out.push((TagType::ServiceName, service));
        if service.is_empty() {
            for s in &self.cfg.service_names {
                out.push((TagType::ServiceName, s.as_bytes()));
            }
        }
        out.push((TagType::AcCookie, &cookie));
        if let Some(h) = tags.host_uniq {
            out.push((TagType::HostUniq, h));
        }
        if let Some(r) = tags.relay_session_id {
            out.push((TagType::RelaySessionId, r));
        }
        let mp = self
            .grant_max_payload(tags.max_payload)
            .map(u16::to_be_bytes);
        if let Some(mp) = mp.as_ref() {
            out.push((TagType::PppMaxPayload, mp));
        }
        let f = discovery_frame(self.cfg.mac, client, PppoeCode::Pado, 0, &out);
        self.tx.push(f);
        self.stats.pado_tx += 1;
        Ok(())
    }

    fn refuse(&mut self, client: MacAddr, error: TagType, why: &str, tags: &Tags<'_>) {
        let mut out: Vec<(TagType, &[u8])> = vec![(error, why.as_bytes())];
        if let Some(s) = tags.service_names.first() {
            out.push((TagType::ServiceName, s));
        }
        if let Some(h) = tags.host_uniq {
            out.push((TagType::HostUniq, h));
        }
        if let Some(r) = tags.relay_session_id {
            out.push((TagType::RelaySessionId, r));
        }
        let f = discovery_frame(self.cfg.mac, client, PppoeCode::Pads, 0, &out);
        self.tx.push(f);
        self.stats.pads_refused += 1;
    }

    fn padr(
        &mut self,
        now: Nanos,
        client: MacAddr,
        sid: u16,
        payload: &[u8],
    ) -> Result<(), HostileReason> {
        self.stats.padr_rx += 1;
        if sid != 0 {
            return Err(HostileReason::NonZeroSessionId);
        }
        let tags = Tags::parse(payload)?;
        if tags.ac_cookie != Some(&self.cookie(client)[..]) {
            return Err(HostileReason::BadCookie);
        }
        let Some(service) = tags.service_names.first().copied() else {
            return Err(HostileReason::MissingServiceName);
        };
        if !self.serves(service) {
            self.refuse(
                client,
                TagType::ServiceNameError,
                "service not offered",
                &tags,
            );
            return Ok(());
        }
        // A repeated PADR (our PADS was lost): the same session, the same PADS.
        let of_client = SessionKey {
            client,
            session_id: 0,
        }..=SessionKey {
            client,
            session_id: u16::MAX,
        };
        if let Some((_, s)) = self
            .sessions
            .range(of_client)
            .find(|(_, s)| !s.ppp_seen && s.host_uniq.as_deref() == tags.host_uniq)
        {
            let pads = s.pads.clone();
            self.tx.push(pads);
            self.stats.padr_repeated += 1;
            return Ok(());
        }
        if self.sessions.len() >= self.cfg.max_sessions || self.ids.len() >= 0xfffe {
            self.refuse(
                client,
                TagType::AcSystemError,
                "session limit reached",
                &tags,
            );
            return Ok(());
        }
        // Without a subscriber table every login takes the pool: allocate now and refuse at
        // once when it is empty. With one, the address depends on who logs in (`grant`).
        let ipv4 = if self.cfg.ipcp && !self.by_table {
            match self.pool.allocate() {
                Some(a) => Some(a),
                None => {
                    self.refuse(
                        client,
                        TagType::AcSystemError,
                        "address pool exhausted",
                        &tags,
                    );
                    return Ok(());
                }
            }
        } else {
            None
        };
        let id = loop {
            let id = (self.rng.next_u32() % 0xfffe) as u16 + 1;
            if !self.ids.contains(&id) {
                break id;
            }
        };
        self.ids.insert(id);
        let key = SessionKey {
            client,
            session_id: id,
        };
        let granted = self.grant_max_payload(tags.max_payload);
        let mut out: Vec<(TagType, &[u8])> = vec![(TagType::ServiceName, service)];
        let ac_name = self.cfg.ac_name.clone();
        out.push((TagType::AcName, ac_name.as_bytes()));
        if let Some(h) = tags.host_uniq {
            out.push((TagType::HostUniq, h));
        }
        if let Some(r) = tags.relay_session_id {
            out.push((TagType::RelaySessionId, r));
        }
        let mp = granted.map(u16::to_be_bytes);
        if let Some(mp) = mp.as_ref() {
            out.push((TagType::PppMaxPayload, mp));
        }
        let pads = discovery_frame(self.cfg.mac, client, PppoeCode::Pads, id, &out);
        self.tx.push(pads.clone());
        self.stats.pads_tx += 1;
        self.stats.sessions_started += 1;

        let peer_mru_max = granted.unwrap_or(PPPOE_MAX_PAYLOAD_DEFAULT);
        let link = Link::new(LinkConfig {
            role: Role::Server,
            fsm: self.cfg.fsm,
            mru: self.cfg.mru.min(peer_mru_max),
            peer_mru_max,
            auth: self.cfg.auth.clone(),
            credentials: self.logins.clone(),
            name: self.cfg.ac_name.clone(),
            ipcp: self
                .cfg
                .ipcp
                .then(|| IpcpNeg::server(self.cfg.gateway, ipv4, self.cfg.dns)),
            ipv6cp: self.cfg.ipv6cp.then(|| eui64(self.cfg.mac.0)),
            echo_interval: self.cfg.echo_interval,
            echo_failures: self.cfg.echo_failures,
            entropy: self.rng.child(),
            await_grant: true,
        });
        self.sessions.insert(
            key,
            Session {
                link,
                started: now,
                up: false,
                host_uniq: tags.host_uniq.map(<[u8]>::to_vec),
                pads,
                ppp_seen: false,
                ipv4,
                user: None,
                padt_received: false,
            },
        );
        if let Some(s) = self.sessions.get_mut(&key) {
            s.link.open(now);
        }
        self.drain(now, key);
        Ok(())
    }

    /// Moves a session's output to the wire and its events to ours; grants the network phase
    /// once its link asks (which makes more output); ends it if its link died.
    fn drain(&mut self, now: Nanos, key: SessionKey) {
        while let Drained::Grant(user) = self.drain_once(now, key) {
            self.grant(now, key, user);
        }
        self.reschedule(key);
    }

    /// Files session `key`'s next timer (or forgets it, when the session is gone). Every call
    /// into a session's link is followed by [`drain`](Self::drain), which calls this.
    fn reschedule(&mut self, key: SessionKey) {
        let next = self.sessions.get(&key).and_then(|s| s.link.next_deadline());
        if self.deadlines.get(&key) == next.as_ref() {
            return;
        }
        if let Some(old) = self.deadlines.remove(&key) {
            self.timers.remove(&(old, key));
        }
        if let Some(d) = next {
            self.deadlines.insert(key, d);
            self.timers.insert((d, key));
        }
    }

    /// Picks the address of the subscriber who authenticated on session `key` and starts its
    /// network phase: the table's fixed address, the pool's next, or none (IPCP refused). With
    /// a subscriber table, an older session of the same user ends first (duplicate login:
    /// replace).
    fn grant(&mut self, now: Nanos, key: SessionKey, user: Option<String>) {
        let assign = match (&user, self.by_table) {
            (Some(u), true) => self.table.get(u).map_or(Ipv4Assign::Pool, |s| s.ipv4),
            _ => Ipv4Assign::Pool,
        };
        if let (Some(u), true) = (&user, self.by_table) {
            if let Some(&older) = self.by_user.get(u).filter(|k| **k != key) {
                self.stats.replaced += 1;
                self.abort(now, older);
            }
            if self.sessions.contains_key(&key) {
                self.by_user.insert(u.clone(), key);
            }
        }
        let Some(pre) = self.sessions.get(&key).map(|s| s.ipv4) else {
            return;
        };
        let (ipv4, run_ipcp) = match assign {
            _ if !self.cfg.ipcp => (None, false),
            _ if !self.by_table => (pre, true),
            Ipv4Assign::Fixed(a) => (Some(a), true),
            Ipv4Assign::None => (None, false),
            Ipv4Assign::Pool => {
                let a = self.pool.allocate();
                if a.is_none() {
                    self.stats.pool_exhausted += 1;
                }
                (a, true)
            }
        };
        if let Some(s) = self.sessions.get_mut(&key) {
            s.ipv4 = ipv4;
            s.user = user;
            s.link.grant_network(now, ipv4, run_ipcp);
        }
    }

    fn drain_once(&mut self, now: Nanos, key: SessionKey) -> Drained {
        let Some(s) = self.sessions.get_mut(&key) else {
            return Drained::Done;
        };
        for ppp in s.link.take_output() {
            self.tx.push(session_frame(
                self.cfg.mac,
                key.client,
                key.session_id,
                &ppp,
            ));
        }
        self.stats.retransmits += std::mem::take(&mut s.link.retransmits);
        let mut ended = None;
        let mut grant = None;
        for e in s.link.take_events() {
            match e {
                LinkEvent::Up => {
                    if !s.up {
                        s.up = true;
                        let setup = Nanos(now.0.saturating_sub(s.started.0));
                        self.stats.setup.record(setup);
                        self.stats.sessions_up += 1;
                        self.stats.sessions_up_total += 1;
                        self.events.push(ServerEvent::SessionUp {
                            key,
                            info: SessionInfo {
                                local_mac: self.cfg.mac,
                                peer_mac: key.client,
                                session_id: key.session_id,
                                negotiated: s.link.negotiated(),
                            },
                            setup,
                            user: s.link.user().map(str::to_owned),
                        });
                    }
                }
                LinkEvent::Down(reason) => ended = Some(reason),
                LinkEvent::Data { protocol, payload } => match &mut self.ip_up {
                    Some(up) if super::relayed(protocol, &payload) => up.push(payload),
                    _ => self.events.push(ServerEvent::Data {
                        key,
                        protocol,
                        payload,
                    }),
                },
                LinkEvent::Authenticated { .. } => {}
                LinkEvent::AwaitingGrant { user } => grant = Some(user),
                LinkEvent::Anomaly(a) => self.stats.hostile.add(HostileReason::Ppp(a)),
            }
        }
        if let Some(reason) = ended {
            let Some(s) = self.sessions.remove(&key) else {
                return Drained::Done;
            };
            self.ids.remove(&key.session_id);
            if let Some(u) = &s.user {
                if self.by_user.get(u) == Some(&key) {
                    self.by_user.remove(u);
                }
            }
            if let Some(a) = s.ipv4 {
                self.pool.release(a);
            }
            if s.up {
                self.stats.sessions_up -= 1;
            }
            if !s.padt_received {
                let f = discovery_frame(
                    self.cfg.mac,
                    key.client,
                    PppoeCode::Padt,
                    key.session_id,
                    &[],
                );
                self.tx.push(f);
                self.stats.padt_tx += 1;
            }
            self.stats.ended.add(reason);
            self.events.push(ServerEvent::SessionDown { key, reason });
            if self.ended_recently.len() >= ENDED_REMEMBERED {
                self.ended_recently.pop_front();
            }
            self.ended_recently.push_back(key);
            return Drained::Done;
        }
        match grant {
            Some(user) => Drained::Grant(user),
            None => Drained::Done,
        }
    }
}
