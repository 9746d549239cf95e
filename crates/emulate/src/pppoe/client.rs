//! The PPPoE subscriber (RFC 2516, RFC 4638): discovery with retries and exponential
//! backoff, then one PPP [`Link`] (LCP, PAP or CHAP-MD5, IPCP, IPv6CP, echo) until either
//! side ends it. One client is one subscriber; run many for many sessions.

use wire::ethernet::MacAddr;
use wire::ppp::lcp::PPPOE_MAX_MRU;
use wire::ppp::Protocol;
use wire::pppoe::{PppoeCode, TagType};
use wire::units::Nanos;

use super::{discovery_frame, parse, session_frame, ConfigError, HostileReason, SessionInfo, Tags};
use crate::ppp::link::{Credential, DownReason, Link, LinkConfig, LinkEvent, Role};
use crate::ppp::neg::{eui64, IpcpNeg, MIN_MRU};
use crate::ppp::{AuthMethod, FsmConfig};
use crate::util::{add, Counter, Entropy, Rng};

/// How the subscriber behaves.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub mac: MacAddr,
    /// The service asked for; empty = any.
    pub service_name: String,
    /// Only accept offers from this AC-Name.
    pub ac_name: Option<String>,
    /// Send a Host-Uniq tag (8 random bytes) and insist on it in replies.
    pub host_uniq: bool,
    /// RFC 4638: ask for this PPP-Max-Payload (above 1492 to mean anything).
    pub max_payload: Option<u16>,
    /// The MRU we request (default 1492; capped by the agreed max payload).
    pub mru: u16,
    pub credential: Credential,
    /// Authentication we are willing to perform, preferred first.
    pub auth: Vec<AuthMethod>,
    pub ipcp: bool,
    /// Ask for DNS servers (IPCP options 129/131).
    pub request_dns: bool,
    pub ipv6cp: bool,
    pub echo_interval: Nanos,
    pub echo_failures: u32,
    pub fsm: FsmConfig,
    /// First PADI/PADR timeout; doubled on each retry (RFC 2516 §5.5).
    pub discovery_timeout: Nanos,
    /// PADIs (and PADRs) sent before giving up.
    pub discovery_attempts: u32,
    /// Host-Uniq, magic numbers, IPv6CP identifiers, timer jitter. [`Entropy::Os`] (the
    /// default) on a port; [`Entropy::Seeded`] for reproducible tests.
    pub entropy: Entropy,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            mac: MacAddr([0x02, 0x77, 0x72, 0x00, 0x01, 0x01]),
            service_name: String::new(),
            ac_name: None,
            host_uniq: true,
            max_payload: None,
            mru: PPPOE_MAX_MRU,
            credential: Credential::new("wirerate", "wirerate"),
            auth: vec![AuthMethod::ChapMd5, AuthMethod::Pap],
            ipcp: true,
            request_dns: true,
            ipv6cp: true,
            echo_interval: Nanos(10_000_000_000),
            echo_failures: 3,
            fsm: FsmConfig::default(),
            discovery_timeout: Nanos(1_000_000_000),
            discovery_attempts: 5,
            entropy: Entropy::Os,
        }
    }
}

impl ClientConfig {
    /// Refuses an MRU below 64 (LCP would turn it into 64) or above what PPPoE carries (1492,
    /// or `max_payload` with RFC 4638).
    pub fn check(&self) -> Result<(), ConfigError> {
        let max = PPPOE_MAX_MRU.max(self.max_payload.unwrap_or(0));
        if !(MIN_MRU..=max).contains(&self.mru) {
            return Err(ConfigError::Mru {
                mru: self.mru,
                min: MIN_MRU,
                max,
            });
        }
        Ok(())
    }
}

/// Where the subscriber is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientState {
    Idle,
    /// PADI sent, waiting for a PADO.
    Discovering,
    /// PADR sent to an AC, waiting for its PADS.
    Requesting,
    /// PPP is running (see [`Client::is_up`]).
    Session,
    /// Ended; [`Client::start`] begins again.
    Down(DownReason),
}

/// What the subscriber reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClientEvent {
    Up(SessionInfo),
    Down(DownReason),
    Data {
        protocol: Protocol,
        payload: Vec<u8>,
    },
}

/// Counters of one subscriber.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClientStats {
    pub padi_tx: u64,
    pub pado_rx: u64,
    pub padr_tx: u64,
    pub pads_rx: u64,
    pub padt_rx: u64,
    pub padt_tx: u64,
    /// PADI/PADR retries plus PPP retransmissions.
    pub retransmits: u64,
    /// First PADI to network phase complete, for the last session that came up.
    pub setup: Option<Nanos>,
    pub ended: Counter<DownReason>,
    /// PADTs and session frames for the session that had just ended (the AC's PADT crossing
    /// ours, a late Terminate-Ack): normal, not hostile.
    pub after_end: u64,
    pub hostile: Counter<HostileReason>,
}

#[derive(Debug)]
struct Offer {
    ac: MacAddr,
    cookie: Option<Vec<u8>>,
    relay: Option<Vec<u8>>,
    service: Vec<u8>,
    max_payload: Option<u16>,
}

/// One PPPoE subscriber.
#[derive(Debug)]
pub struct Client {
    cfg: ClientConfig,
    state: ClientState,
    host_uniq: Option<[u8; 8]>,
    offer: Option<Offer>,
    attempt: u32,
    deadline: Option<Nanos>,
    started: Nanos,
    session_id: u16,
    link: Option<Link>,
    up: bool,
    /// The AC sent a PADT: the session ends without one from us.
    padt_received: bool,
    rng: Rng,
    tx: Vec<Vec<u8>>,
    events: Vec<ClientEvent>,
    /// IP packets from the session for a TUN hand-off (`Some` once enabled).
    ip_up: Option<Vec<Vec<u8>>>,
    pub stats: ClientStats,
}

impl Client {
    pub fn new(cfg: ClientConfig) -> Client {
        let mut rng = Rng::from_entropy(cfg.entropy);
        let host_uniq = cfg.host_uniq.then(|| rng.next_u64().to_be_bytes());
        Client {
            cfg,
            state: ClientState::Idle,
            host_uniq,
            offer: None,
            attempt: 0,
            deadline: None,
            started: Nanos(0),
            session_id: 0,
            link: None,
            up: false,
            padt_received: false,
            rng,
            tx: Vec::new(),
            events: Vec::new(),
            ip_up: None,
            stats: ClientStats::default(),
        }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    pub fn state(&self) -> &ClientState {
        &self.state
    }

    pub fn is_up(&self) -> bool {
        self.up
    }

    pub fn take_transmit(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.tx)
    }

    pub fn take_events(&mut self) -> Vec<ClientEvent> {
        std::mem::take(&mut self.events)
    }

    /// The data-path view of the session once up.
    pub fn session_info(&self) -> Option<SessionInfo> {
        let offer = self.offer.as_ref()?;
        let link = self.link.as_ref()?;
        self.up.then(|| SessionInfo {
            local_mac: self.cfg.mac,
            peer_mac: offer.ac,
            session_id: self.session_id,
            negotiated: link.negotiated(),
        })
    }

    /// Starts (or restarts) discovery with a PADI.
    pub fn start(&mut self, now: Nanos) {
        self.state = ClientState::Discovering;
        self.offer = None;
        self.link = None;
        self.up = false;
        self.padt_received = false;
        self.session_id = 0;
        self.attempt = 0;
        self.started = now;
        self.send_padi(now);
    }

    /// Ends the session: LCP Terminate exchange, then PADT. Before a session: gives up.
    pub fn close(&mut self, now: Nanos) {
        match (&self.state, self.link.as_mut()) {
            (ClientState::Session, Some(l)) => {
                l.close(now, DownReason::LocalClose);
                self.drain(now);
            }
            (ClientState::Discovering | ClientState::Requesting, _) => {
                self.finish(DownReason::LocalClose)
            }
            _ => {}
        }
    }

    /// Ends the session at once with a PADT, without waiting for the AC's Terminate-Ack: for
    /// an owner that is stopping after [`Client::close`] had its chance (an AC busy with
    /// thousands of closing sessions may not answer in time, and a session left open on it
    /// would only end by its echo timeout). A session in discovery gives up.
    pub fn abort(&mut self, now: Nanos) {
        match (&self.state, self.link.as_mut()) {
            (ClientState::Session, Some(l)) => {
                l.kill(DownReason::LocalClose);
                self.drain(now);
            }
            (ClientState::Discovering | ClientState::Requesting, _) => {
                self.finish(DownReason::LocalClose)
            }
            _ => {}
        }
    }

    /// Sends a datagram in the session; false if its NCP is not open.
    pub fn send(&mut self, now: Nanos, protocol: Protocol, payload: &[u8]) -> bool {
        let sent = self
            .link
            .as_mut()
            .is_some_and(|l| l.send(protocol, payload));
        self.drain(now);
        sent
    }

    /// Hands the session's IP packets to [`take_ip`](Self::take_ip) instead of
    /// [`ClientEvent::Data`] (IPv6 to link-local and multicast addresses stays an event);
    /// [`send_ip`](Self::send_ip) sends packets up the session. This is the subscriber side of
    /// a TUN hand-off (`engine::tun`): the session as a kernel interface, like a `ppp0`.
    pub fn enable_ip_relay(&mut self) {
        self.ip_up.get_or_insert_with(Vec::new);
    }

    /// Moves the IP packets the session delivered since the last call into `out`.
    pub fn take_ip(&mut self, out: &mut Vec<Vec<u8>>) {
        if let Some(up) = &mut self.ip_up {
            out.append(up);
        }
    }

    /// Sends an IP packet (IPv4, or IPv6 once IPv6CP is open) up the session; refused when
    /// the session is not up or the packet exceeds the AC's MRU.
    pub fn send_ip(
        &mut self,
        now: Nanos,
        packet: &[u8],
    ) -> Result<(), crate::control_plane::RelayDrop> {
        use crate::control_plane::RelayDrop;
        let (protocol, _) = super::ip_destination(packet)?;
        let Some(link) = self.link.as_ref().filter(|_| self.up) else {
            return Err(RelayDrop::NotUp);
        };
        if packet.len() > usize::from(link.negotiated().peer_mru) {
            return Err(RelayDrop::TooBig);
        }
        if self.send(now, protocol, packet) {
            Ok(())
        } else {
            Err(RelayDrop::NotUp)
        }
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        match self.state {
            ClientState::Discovering | ClientState::Requesting => self.deadline,
            ClientState::Session => self.link.as_ref().and_then(Link::next_deadline),
            _ => None,
        }
    }

    pub fn poll(&mut self, now: Nanos) {
        match self.state {
            ClientState::Discovering | ClientState::Requesting
                if self.deadline.is_some_and(|d| now >= d) =>
            {
                if self.attempt >= self.cfg.discovery_attempts {
                    self.finish(DownReason::DiscoveryTimeout);
                    return;
                }
                self.stats.retransmits += 1;
                if self.state == ClientState::Discovering {
                    self.send_padi(now);
                } else {
                    self.send_padr(now);
                }
            }
            ClientState::Session => {
                if let Some(l) = self.link.as_mut() {
                    l.poll(now);
                }
                self.drain(now);
            }
            _ => {}
        }
    }

    fn backoff(&mut self, now: Nanos) {
        self.attempt += 1;
        let shift = (self.attempt - 1).min(16);
        self.deadline = Some(add(now, Nanos(self.cfg.discovery_timeout.0 << shift)));
    }

    fn base_tags(&self) -> Vec<(TagType, Vec<u8>)> {
        let mut t = Vec::new();
        if let Some(h) = self.host_uniq {
            t.push((TagType::HostUniq, h.to_vec()));
        }
        if let Some(mp) = self.cfg.max_payload {
            t.push((TagType::PppMaxPayload, mp.to_be_bytes().to_vec()));
        }
        t
    }

    fn send_padi(&mut self, now: Nanos) {
        let mut tags = vec![(
            TagType::ServiceName,
            self.cfg.service_name.as_bytes().to_vec(),
        )];
        tags.extend(self.base_tags());
        let refs: Vec<(TagType, &[u8])> = tags.iter().map(|(t, v)| (*t, v.as_slice())).collect();
        self.tx.push(discovery_frame(
            self.cfg.mac,
            MacAddr::BROADCAST,
            PppoeCode::Padi,
            0,
            &refs,
        ));
        self.stats.padi_tx += 1;
        self.backoff(now);
    }

    fn send_padr(&mut self, now: Nanos) {
        let Some(o) = self.offer.as_ref() else { return };
        let mut tags = vec![(TagType::ServiceName, o.service.clone())];
        tags.extend(self.base_tags());
        if let Some(c) = &o.cookie {
            tags.push((TagType::AcCookie, c.clone()));
        }
        if let Some(r) = &o.relay {
            tags.push((TagType::RelaySessionId, r.clone()));
        }
        let refs: Vec<(TagType, &[u8])> = tags.iter().map(|(t, v)| (*t, v.as_slice())).collect();
        let ac = o.ac;
        self.tx
            .push(discovery_frame(self.cfg.mac, ac, PppoeCode::Padr, 0, &refs));
        self.stats.padr_tx += 1;
        self.backoff(now);
    }

    fn finish(&mut self, reason: DownReason) {
        self.state = ClientState::Down(reason);
        self.deadline = None;
        self.up = false;
        self.stats.ended.add(reason);
        self.events.push(ClientEvent::Down(reason));
    }

    /// Handles one received Ethernet frame. Returns false if it is not PPPoE.
    pub fn handle_frame(&mut self, now: Nanos, frame: &[u8]) -> bool {
        let p = match parse(frame) {
            Ok(Some(p)) => p,
            Ok(None) => return false,
            Err(r) => {
                self.stats.hostile.add(r);
                return true;
            }
        };
        if p.eth.dst != self.cfg.mac {
            // PADIs of other subscribers and frames for other MACs on a shared segment.
            if !p.eth.dst.is_broadcast() {
                self.stats.hostile.add(HostileReason::NotForUs);
            }
            return true;
        }
        let r = match p.pppoe.code {
            PppoeCode::Pado => self.pado(now, p.eth.src, p.pppoe.session_id, p.payload),
            PppoeCode::Pads => self.pads(now, p.eth.src, p.pppoe.session_id, p.payload),
            PppoeCode::Padt => {
                self.stats.padt_rx += 1;
                if self.is_our_session(p.eth.src, p.pppoe.session_id) {
                    if let Some(l) = self.link.as_mut() {
                        self.padt_received = true;
                        l.kill(DownReason::PeerPadt);
                    }
                    self.drain(now);
                    Ok(())
                } else if self.just_ended(p.eth.src, p.pppoe.session_id) {
                    self.stats.after_end += 1;
                    Ok(())
                } else {
                    Err(HostileReason::UnknownSession)
                }
            }
            PppoeCode::Session => {
                if self.is_our_session(p.eth.src, p.pppoe.session_id) {
                    if let Some(l) = self.link.as_mut() {
                        l.input(now, p.payload);
                    }
                    self.drain(now);
                    Ok(())
                } else if self.just_ended(p.eth.src, p.pppoe.session_id) {
                    self.stats.after_end += 1;
                    Ok(())
                } else {
                    Err(HostileReason::UnknownSession)
                }
            }
            _ => Err(HostileReason::UnexpectedCode),
        };
        if let Err(r) = r {
            self.stats.hostile.add(r);
        }
        true
    }

    /// The session that has just ended: the AC's PADT crossing ours, a late Terminate-Ack.
    fn just_ended(&self, src: MacAddr, sid: u16) -> bool {
        matches!(self.state, ClientState::Down(_))
            && sid != 0
            && sid == self.session_id
            && self.offer.as_ref().is_some_and(|o| o.ac == src)
    }

    fn is_our_session(&self, src: MacAddr, sid: u16) -> bool {
        self.state == ClientState::Session
            && sid == self.session_id
            && self.offer.as_ref().is_some_and(|o| o.ac == src)
    }

    fn check_host_uniq(&self, tags: &Tags<'_>) -> bool {
        match self.host_uniq {
            Some(h) => tags.host_uniq == Some(&h[..]),
            None => true,
        }
    }

    fn pado(
        &mut self,
        now: Nanos,
        ac: MacAddr,
        sid: u16,
        payload: &[u8],
    ) -> Result<(), HostileReason> {
        self.stats.pado_rx += 1;
        if self.state != ClientState::Discovering {
            return Ok(()); // a second offer: the first one won
        }
        if sid != 0 {
            return Err(HostileReason::NonZeroSessionId);
        }
        let tags = Tags::parse(payload)?;
        if !self.check_host_uniq(&tags) {
            return Err(HostileReason::Unsolicited);
        }
        if let Some(want) = &self.cfg.ac_name {
            if tags.ac_name != Some(want.as_bytes()) {
                return Ok(()); // another AC: ignore, keep waiting
            }
        }
        let want = self.cfg.service_name.as_bytes();
        let service_ok = if want.is_empty() {
            !tags.service_names.is_empty()
        } else {
            tags.service_names.contains(&want)
        };
        if !service_ok || tags.error.is_some() {
            return Err(HostileReason::MissingServiceName);
        }
        self.offer = Some(Offer {
            ac,
            cookie: tags.ac_cookie.map(<[u8]>::to_vec),
            relay: tags.relay_session_id.map(<[u8]>::to_vec),
            service: want.to_vec(),
            max_payload: tags.max_payload,
        });
        self.state = ClientState::Requesting;
        self.attempt = 0;
        self.send_padr(now);
        Ok(())
    }

    fn pads(
        &mut self,
        now: Nanos,
        ac: MacAddr,
        sid: u16,
        payload: &[u8],
    ) -> Result<(), HostileReason> {
        self.stats.pads_rx += 1;
        if self.state != ClientState::Requesting || self.offer.as_ref().map(|o| o.ac) != Some(ac) {
            return Err(HostileReason::Unsolicited);
        }
        let tags = Tags::parse(payload)?;
        if !self.check_host_uniq(&tags) {
            return Err(HostileReason::Unsolicited);
        }
        if let Some(e) = tags.error {
            self.finish(match e {
                TagType::ServiceNameError => DownReason::ServiceNameError,
                TagType::AcSystemError => DownReason::AcSystemError,
                _ => DownReason::GenericError,
            });
            return Ok(());
        }
        if sid == 0 || sid == 0xffff {
            self.finish(DownReason::GenericError);
            return Ok(());
        }
        // RFC 4638: the payload above 1492 holds only if both asked and the AC echoed it.
        let granted = match (self.cfg.max_payload, tags.max_payload) {
            (Some(asked), Some(got)) if got > PPPOE_MAX_MRU => Some(got.min(asked)),
            _ => None,
        };
        if let Some(o) = self.offer.as_mut() {
            o.max_payload = granted;
        }
        let peer_mru_max = granted.unwrap_or(PPPOE_MAX_MRU);
        self.session_id = sid;
        self.state = ClientState::Session;
        self.deadline = None;
        let mut link = Link::new(LinkConfig {
            role: Role::Client,
            fsm: self.cfg.fsm,
            mru: self.cfg.mru.min(peer_mru_max),
            peer_mru_max,
            auth: self.cfg.auth.clone(),
            credentials: vec![self.cfg.credential.clone()].into(),
            name: self.cfg.credential.user.clone(),
            ipcp: self.cfg.ipcp.then(|| IpcpNeg::client(self.cfg.request_dns)),
            ipv6cp: self.cfg.ipv6cp.then(|| eui64(self.cfg.mac.0)),
            echo_interval: self.cfg.echo_interval,
            echo_failures: self.cfg.echo_failures,
            entropy: self.rng.child(),
            await_grant: false,
        });
        link.open(now);
        self.link = Some(link);
        self.drain(now);
        Ok(())
    }

    fn drain(&mut self, now: Nanos) {
        let Some(link) = self.link.as_mut() else {
            return;
        };
        let ac = self
            .offer
            .as_ref()
            .map(|o| o.ac)
            .unwrap_or(MacAddr::BROADCAST);
        for ppp in link.take_output() {
            self.tx
                .push(session_frame(self.cfg.mac, ac, self.session_id, &ppp));
        }
        self.stats.retransmits += std::mem::take(&mut link.retransmits);
        let mut ended = None;
        for e in link.take_events() {
            match e {
                LinkEvent::Up => {
                    if !self.up {
                        self.up = true;
                        self.stats.setup = Some(Nanos(now.0.saturating_sub(self.started.0)));
                        if let Some(info) = self.session_info() {
                            self.events.push(ClientEvent::Up(info));
                        }
                    }
                }
                LinkEvent::Down(r) => ended = Some(r),
                LinkEvent::Data { protocol, payload } => match &mut self.ip_up {
                    Some(up) if super::relayed(protocol, &payload) => up.push(payload),
                    _ => self.events.push(ClientEvent::Data { protocol, payload }),
                },
                LinkEvent::Authenticated { .. } | LinkEvent::AwaitingGrant { .. } => {}
                LinkEvent::Anomaly(a) => self.stats.hostile.add(HostileReason::Ppp(a)),
            }
        }
        if let Some(reason) = ended {
            if !self.padt_received {
                self.tx.push(discovery_frame(
                    self.cfg.mac,
                    ac,
                    PppoeCode::Padt,
                    self.session_id,
                    &[],
                ));
                self.stats.padt_tx += 1;
            }
            self.finish(reason);
        }
    }
}
