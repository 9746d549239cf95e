//! One PPP link over a PPPoE session (RFC 1661 phases): LCP establishment, PAP or CHAP-MD5
//! authentication, IPCP and IPv6CP, LCP echo keepalives, termination.
//!
//! A [`Link`] is fed the PPP frames of its session (protocol field + information, i.e. the
//! PPPoE payload) and time; it leaves PPP frames to send in [`Link::take_output`] and
//! [`LinkEvent`]s in [`Link::take_events`]. [`LinkEvent::Down`] is terminal: over PPPoE the
//! session ends with the link (the owner then sends or has received a PADT).

use core::net::Ipv4Addr;
use std::sync::Arc;

use wire::ppp::chap::ChapRepr;
use wire::ppp::control::{Code, ControlPacket, ControlRepr};
use wire::ppp::pap::PapRepr;
use wire::ppp::{PppPacket, Protocol};
use wire::units::Nanos;

use super::fsm::{Discard, Fsm, FsmConfig, Packet, Signal, State};
use super::neg::{AuthMethod, IpcpNeg, Ipv6cpNeg, LcpNeg};
use crate::util::{add, md5, min_deadline, Entropy, Rng};

/// Which end of the link we are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The access concentrator: demands authentication, assigns addresses.
    Server,
    /// The subscriber: authenticates itself, is assigned addresses.
    Client,
}

/// A user name and password (PAP) or secret (CHAP).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub user: String,
    pub password: String,
}

impl Credential {
    pub fn new(user: &str, password: &str) -> Credential {
        Credential {
            user: user.into(),
            password: password.into(),
        }
    }
}

/// How a link is set up.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    pub role: Role,
    pub fsm: FsmConfig,
    /// The MRU we ask for (server default 1454, client default 1492).
    pub mru: u16,
    /// The largest MRU we let the peer claim: 1492 over PPPoE, or the PPP-Max-Payload agreed
    /// in discovery (RFC 4638).
    pub peer_mru_max: u16,
    /// Server: methods demanded, preferred first (empty: no authentication).
    /// Client: methods we are willing to perform, preferred first.
    pub auth: Vec<AuthMethod>,
    /// Server: the accepted credentials (shared by every session of an access concentrator:
    /// a subscriber table of thousands is not copied per session). Client: the first one is
    /// ours.
    pub credentials: Arc<[Credential]>,
    /// Our name in CHAP challenges.
    pub name: String,
    /// IPCP, or None to not run it.
    pub ipcp: Option<IpcpNeg>,
    /// Our IPv6CP interface identifier, or None to not run IPv6CP.
    pub ipv6cp: Option<[u8; 8]>,
    /// LCP Echo-Request interval once LCP is open (0: no keepalives).
    pub echo_interval: Nanos,
    /// Unanswered Echo-Requests after which the link is declared dead.
    pub echo_failures: u32,
    /// Magic numbers, CHAP challenges, IPv6CP identifiers, timer jitter.
    pub entropy: Entropy,
    /// Server: after authentication, report [`LinkEvent::AwaitingGrant`] and start the
    /// network phase only on [`Link::grant_network`] — the owner picks the subscriber's
    /// address once it knows who logged in (a subscriber table's fixed address, the pool, or
    /// no IPv4 at all). False: the network phase starts at once with `ipcp` as given.
    pub await_grant: bool,
}

/// Why a link (and its PPPoE session) ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DownReason {
    /// LCP Configure-Requests ran out (max-configure) without agreement.
    LcpTimeout,
    /// LCP stopped on a fatal Code-Reject or an unconverging negotiation.
    LcpFailed,
    /// Our magic number kept coming back: the link is looped.
    Loopback,
    /// No authentication protocol both ends accept.
    AuthRefused,
    /// Wrong credentials (server: the peer's; client: ours were refused).
    AuthFailed,
    /// No (or no complete) authentication exchange in time.
    AuthTimeout,
    /// Neither IPCP nor IPv6CP opened.
    NcpFailed,
    /// Too many LCP Echo-Requests went unanswered.
    EchoTimeout,
    /// The peer sent an LCP Terminate-Request.
    PeerTerminate,
    /// Closed by our owner.
    LocalClose,
    /// The peer sent a PADT.
    PeerPadt,
    /// Client: no PADO/PADS after all retries.
    DiscoveryTimeout,
    /// Client: the AC answered with a Service-Name-Error.
    ServiceNameError,
    /// Client: the AC answered with an AC-System-Error.
    AcSystemError,
    /// Client: the AC answered with a Generic-Error.
    GenericError,
}

impl DownReason {
    /// Whether this is a failure one end detected (as opposed to an orderly end: a close by
    /// either side or a PADT). Once a link closes for a failure, that failure stays its
    /// reason even if the peer hangs up (PADT, Terminate-Request) before our Terminate
    /// exchange is over: the peer hanging up is the consequence, not the cause.
    pub fn is_failure(self) -> bool {
        !matches!(
            self,
            DownReason::PeerTerminate | DownReason::LocalClose | DownReason::PeerPadt
        )
    }
}

/// Input a link did not use, by reason (the owners count these as hostile input).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Anomaly {
    /// Shorter than a PPP protocol field.
    PppTruncated,
    /// A control packet whose header or Length is broken.
    ControlMalformed,
    /// A protocol we do not run (answered with Protocol-Reject when LCP is open).
    UnknownProtocol,
    /// A code we do not know (answered with Code-Reject).
    UnknownCode,
    /// A reply whose identifier does not match our request.
    StaleReply,
    /// A Configure-Ack that does not repeat our request.
    AckMismatch,
    /// Broken option framing.
    BadOptions,
    /// A Configure-Reject naming options we never sent.
    InvalidReject,
    /// A packet for a protocol whose phase has not started.
    NotUp,
    /// An IPv4/IPv6 datagram before its NCP opened.
    DataBeforeNcp,
    /// A PAP/CHAP packet we did not expect, or a malformed one.
    UnexpectedAuth,
    /// An Echo carrying our own magic number (looped link) or no magic at all.
    BadEcho,
}

impl From<Discard> for Anomaly {
    fn from(d: Discard) -> Anomaly {
        match d {
            Discard::StaleIdentifier => Anomaly::StaleReply,
            Discard::AckMismatch => Anomaly::AckMismatch,
            Discard::BadOptions => Anomaly::BadOptions,
            Discard::NotUp => Anomaly::NotUp,
            Discard::InvalidReject => Anomaly::InvalidReject,
        }
    }
}

/// What a link reports to its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkEvent {
    /// The network phase is complete: every NCP we run opened or was refused, at least one
    /// opened. See [`Link::negotiated`].
    Up,
    /// The link ended; terminal.
    Down(DownReason),
    /// The peer authenticated (server side) as this user.
    Authenticated { user: String },
    /// Server with [`LinkConfig::await_grant`]: authentication is over (`user` is None
    /// when none was demanded); the network phase waits for [`Link::grant_network`].
    AwaitingGrant { user: Option<String> },
    /// A network-layer datagram from the peer.
    Data {
        protocol: Protocol,
        payload: Vec<u8>,
    },
    /// Input not used, by reason.
    Anomaly(Anomaly),
}

/// What the link agreed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Negotiated {
    /// The largest information field the peer may send us.
    pub our_mru: u16,
    /// The largest information field we may send the peer.
    pub peer_mru: u16,
    pub our_magic: u32,
    pub peer_magic: u32,
    pub auth: Option<AuthMethod>,
    pub local_ipv4: Option<Ipv4Addr>,
    pub peer_ipv4: Option<Ipv4Addr>,
    pub dns: [Option<Ipv4Addr>; 2],
    pub local_interface_id: Option<[u8; 8]>,
    pub peer_interface_id: Option<[u8; 8]>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Establish,
    Authenticate,
    Network,
    Dead,
}

#[derive(Debug)]
struct Auth {
    method: Option<AuthMethod>,
    done: bool,
    timer: Option<Nanos>,
    tries_left: u32,
    id: u8,
    challenge: [u8; 16],
    user: Option<String>,
    /// Server: the last answer, re-sent for a retransmitted request after the verdict.
    last_answer: Option<(Protocol, Vec<u8>)>,
}

/// One PPP link.
#[derive(Debug)]
pub struct Link {
    role: Role,
    fsm_cfg: FsmConfig,
    auth_cfg: Vec<AuthMethod>,
    credentials: Arc<[Credential]>,
    name: String,
    echo_interval: Nanos,
    echo_failures: u32,
    phase: Phase,
    lcp: Fsm<LcpNeg>,
    ipcp: Option<Fsm<IpcpNeg>>,
    ipv6cp: Option<Fsm<Ipv6cpNeg>>,
    auth: Auth,
    echo_next: Option<Nanos>,
    echo_outstanding: u32,
    closing_reason: Option<DownReason>,
    /// [`LinkConfig::await_grant`] not yet used up.
    await_grant: bool,
    /// Reported [`LinkEvent::AwaitingGrant`], waiting for [`Link::grant_network`].
    awaiting_grant: bool,
    /// [`Link::grant_network`] refused IPCP.
    ipcp_refused: bool,
    up: bool,
    rng: Rng,
    out: Vec<Vec<u8>>,
    events: Vec<LinkEvent>,
    /// Configure/Terminate/Challenge/PAP retransmissions so far.
    pub retransmits: u64,
}

impl Link {
    pub fn new(cfg: LinkConfig) -> Link {
        let (demand, offer) = match cfg.role {
            Role::Server => (cfg.auth.clone(), Vec::new()),
            Role::Client => (Vec::new(), cfg.auth.clone()),
        };
        let e = cfg.entropy;
        let lcp = LcpNeg::new(cfg.mru, cfg.peer_mru_max, demand, offer, e);
        Link {
            role: cfg.role,
            fsm_cfg: cfg.fsm,
            auth_cfg: cfg.auth,
            credentials: cfg.credentials,
            name: cfg.name,
            echo_interval: cfg.echo_interval,
            echo_failures: cfg.echo_failures.max(1),
            phase: Phase::Establish,
            lcp: Fsm::with_entropy(cfg.fsm, lcp, e.derive(0x1c9)),
            ipcp: cfg
                .ipcp
                .map(|n| Fsm::with_entropy(cfg.fsm, n, e.derive(0x8021))),
            ipv6cp: cfg.ipv6cp.map(|id| {
                Fsm::with_entropy(
                    cfg.fsm,
                    Ipv6cpNeg::new(id, e.derive(0x5555)),
                    e.derive(0x8057),
                )
            }),
            auth: Auth {
                method: None,
                done: false,
                timer: None,
                tries_left: 0,
                id: 0,
                challenge: [0; 16],
                user: None,
                last_answer: None,
            },
            echo_next: None,
            echo_outstanding: 0,
            closing_reason: None,
            await_grant: cfg.await_grant && cfg.role == Role::Server,
            awaiting_grant: false,
            ipcp_refused: false,
            up: false,
            rng: Rng::from_entropy(e.derive(0xa5a5)),
            out: Vec::new(),
            events: Vec::new(),
            retransmits: 0,
        }
    }

    /// The lower layer (the PPPoE session) is up: start LCP.
    pub fn open(&mut self, now: Nanos) {
        self.lcp.open(now);
        self.lcp.up(now);
        self.flush(now);
    }

    /// Closes the link with a Terminate exchange; [`LinkEvent::Down`] follows with `reason`.
    pub fn close(&mut self, now: Nanos, reason: DownReason) {
        if self.phase == Phase::Dead {
            return;
        }
        self.closing_reason.get_or_insert(reason);
        if matches!(
            self.lcp.state,
            State::Initial | State::Starting | State::Closed | State::Stopped
        ) {
            self.kill(reason);
            return;
        }
        self.lcp.close(now);
        self.flush(now);
    }

    /// Ends the link at once, without a Terminate exchange (peer dead, PADT received). If
    /// the link is already closing for a failure (wrong credentials, …), that failure is the
    /// reason reported, not `reason`.
    pub fn kill(&mut self, reason: DownReason) {
        if self.phase == Phase::Dead {
            return;
        }
        let reason = match self.closing_reason {
            Some(r) if r.is_failure() => r,
            _ => reason,
        };
        self.phase = Phase::Dead;
        self.up = false;
        self.echo_next = None;
        self.auth.timer = None;
        self.lcp = Fsm::new(self.fsm_cfg, self.lcp.neg.clone());
        self.ipcp = None;
        self.ipv6cp = None;
        self.events.push(LinkEvent::Down(reason));
    }

    pub fn is_dead(&self) -> bool {
        self.phase == Phase::Dead
    }

    /// Server: starts the network phase the link is holding after
    /// [`LinkEvent::AwaitingGrant`]. `ipv4` is the subscriber's address (None: the
    /// IP-Address option is rejected, as for an exhausted pool); `run_ipcp` false refuses
    /// IPCP altogether (an IPv6-only subscriber: the peer's IPCP gets a Protocol-Reject and the
    /// link comes up on IPv6CP). Does nothing unless the link is waiting for it.
    pub fn grant_network(&mut self, now: Nanos, ipv4: Option<Ipv4Addr>, run_ipcp: bool) {
        if !self.awaiting_grant || self.phase == Phase::Dead {
            return;
        }
        self.awaiting_grant = false;
        if !run_ipcp {
            self.ipcp_refused = self.ipcp.take().is_some();
        } else if let Some(f) = self.ipcp.as_mut() {
            f.neg.peer = ipv4;
        }
        self.start_network(now);
        self.flush(now);
    }

    pub fn is_up(&self) -> bool {
        self.up
    }

    pub fn lcp_state(&self) -> State {
        self.lcp.state
    }

    /// What has been agreed so far.
    pub fn negotiated(&self) -> Negotiated {
        let l = &self.lcp.neg;
        let ipcp = self.ipcp.as_ref().filter(|f| f.is_opened()).map(|f| &f.neg);
        let v6 = self
            .ipv6cp
            .as_ref()
            .filter(|f| f.is_opened())
            .map(|f| &f.neg);
        let (local_ipv4, peer_ipv4, dns) = match ipcp {
            Some(n) => (
                n.local,
                n.peer,
                if n.side == super::neg::Side::Client {
                    [
                        n.dns[0].filter(|a| !a.is_unspecified()),
                        n.dns[1].filter(|a| !a.is_unspecified()),
                    ]
                } else {
                    n.dns
                },
            ),
            None => (None, None, [None, None]),
        };
        Negotiated {
            our_mru: l.our_mru.unwrap_or(wire::ppp::lcp::DEFAULT_MRU),
            peer_mru: l.peer_mru,
            our_magic: l.magic,
            peer_magic: l.peer_magic,
            auth: self.auth.method,
            local_ipv4,
            peer_ipv4,
            dns,
            local_interface_id: v6.and_then(|n| n.local),
            peer_interface_id: v6.and_then(|n| n.peer),
        }
    }

    /// The authenticated user (server side), or our own (client side) once accepted.
    pub fn user(&self) -> Option<&str> {
        self.auth.user.as_deref()
    }

    pub fn take_output(&mut self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.out)
    }

    pub fn take_events(&mut self) -> Vec<LinkEvent> {
        std::mem::take(&mut self.events)
    }

    /// Sends a network-layer datagram; false if its NCP is not open (nothing sent).
    pub fn send(&mut self, protocol: Protocol, payload: &[u8]) -> bool {
        let open = match protocol {
            Protocol::IPV4 => self.ipcp.as_ref().is_some_and(|f| f.is_opened()),
            Protocol::IPV6 => self.ipv6cp.as_ref().is_some_and(|f| f.is_opened()),
            _ => false,
        };
        if open && self.phase == Phase::Network {
            let mut f = protocol.0.to_be_bytes().to_vec();
            f.extend_from_slice(payload);
            self.out.push(f);
        }
        open
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        if self.phase == Phase::Dead {
            return None;
        }
        let mut d = self.lcp.deadline();
        d = min_deadline(d, self.ipcp.as_ref().and_then(|f| f.deadline()));
        d = min_deadline(d, self.ipv6cp.as_ref().and_then(|f| f.deadline()));
        d = min_deadline(d, self.auth.timer);
        min_deadline(d, self.echo_next)
    }

    /// Runs timers due at `now`.
    pub fn poll(&mut self, now: Nanos) {
        if self.phase == Phase::Dead {
            return;
        }
        self.lcp.poll(now);
        if let Some(f) = self.ipcp.as_mut() {
            f.poll(now);
        }
        if let Some(f) = self.ipv6cp.as_mut() {
            f.poll(now);
        }
        self.flush(now);
        if self.auth.timer.is_some_and(|t| now >= t) {
            self.auth_timeout(now);
        }
        if self.phase != Phase::Dead && self.echo_next.is_some_and(|t| now >= t) {
            if self.echo_outstanding >= self.echo_failures {
                self.kill(DownReason::EchoTimeout);
                return;
            }
            self.echo_outstanding += 1;
            let id = self.lcp.fresh_id();
            let magic = self.lcp.neg.magic;
            self.send_control(Protocol::LCP, Code::EchoRequest, id, &magic.to_be_bytes());
            self.echo_next = Some(add(now, self.echo_interval));
        }
    }

    /// Handles one PPP frame from the peer.
    pub fn input(&mut self, now: Nanos, frame: &[u8]) {
        if self.phase == Phase::Dead {
            return;
        }
        let Ok(ppp) = PppPacket::new_checked(frame) else {
            self.anomaly(Anomaly::PppTruncated);
            return;
        };
        let protocol = ppp.protocol();
        let info = ppp.payload();
        match protocol {
            Protocol::LCP => self.lcp_input(now, info),
            Protocol::PAP | Protocol::CHAP => self.auth_input(now, protocol, info),
            Protocol::IPCP | Protocol::IPV6CP => self.ncp_input(now, protocol, info),
            Protocol::IPV4 | Protocol::IPV6 => {
                let open = if protocol == Protocol::IPV4 {
                    self.ipcp.as_ref().is_some_and(|f| f.is_opened())
                } else {
                    self.ipv6cp.as_ref().is_some_and(|f| f.is_opened())
                };
                if open && self.phase == Phase::Network {
                    self.events.push(LinkEvent::Data {
                        protocol,
                        payload: info.to_vec(),
                    });
                } else if self.lcp.is_opened() && !self.runs(protocol) {
                    self.protocol_reject(protocol, info);
                } else {
                    self.anomaly(Anomaly::DataBeforeNcp);
                }
            }
            _ => {
                if self.lcp.is_opened() {
                    self.protocol_reject(protocol, info);
                } else {
                    self.anomaly(Anomaly::UnknownProtocol);
                }
            }
        }
        self.flush(now);
    }

    /// Whether we run the NCP of this network protocol at all.
    fn runs(&self, protocol: Protocol) -> bool {
        match protocol {
            Protocol::IPV4 | Protocol::IPCP => self.ipcp.is_some(),
            Protocol::IPV6 | Protocol::IPV6CP => self.ipv6cp.is_some(),
            _ => false,
        }
    }

    fn anomaly(&mut self, a: Anomaly) {
        self.events.push(LinkEvent::Anomaly(a));
    }

    fn peer_mru(&self) -> usize {
        usize::from(self.lcp.neg.peer_mru.max(super::neg::MIN_MRU))
    }

    fn protocol_reject(&mut self, protocol: Protocol, info: &[u8]) {
        // IPCP refused by the owner's choice (an IPv6-only subscriber) is policy, not a peer
        // speaking something we do not know.
        if !(self.ipcp_refused && protocol == Protocol::IPCP) {
            self.anomaly(Anomaly::UnknownProtocol);
        }
        let mut data = protocol.0.to_be_bytes().to_vec();
        let room = self.peer_mru().saturating_sub(4 + 2);
        data.extend_from_slice(&info[..info.len().min(room)]);
        let id = self.lcp.fresh_id();
        self.send_control(Protocol::LCP, Code::ProtocolReject, id, &data);
    }

    fn send_control(&mut self, protocol: Protocol, code: Code, id: u8, data: &[u8]) {
        let repr = ControlRepr {
            code,
            identifier: id,
            data,
        };
        let mut f = vec![0u8; 2 + repr.buffer_len()];
        f[..2].copy_from_slice(&protocol.0.to_be_bytes());
        if repr
            .emit(&mut ControlPacket::new_unchecked(&mut f[2..]))
            .is_ok()
        {
            self.out.push(f);
        }
    }

    fn lcp_input(&mut self, now: Nanos, info: &[u8]) {
        let Ok(cp) = ControlPacket::new_checked(info) else {
            self.anomaly(Anomaly::ControlMalformed);
            return;
        };
        let (code, id, data) = (cp.code(), cp.identifier(), cp.data());
        if code == Code::TerminateRequest && self.closing_reason.is_none() {
            self.closing_reason = Some(DownReason::PeerTerminate);
        }
        if self.lcp.input(now, code, id, data) {
            return;
        }
        if !self.lcp.is_opened() {
            // LCP-only codes mean nothing before the link is open (RFC 1661 §5.8-5.11).
            if matches!(code, Code::Unknown(_)) {
                self.lcp
                    .code_reject(&info[..usize::from(cp.length())], self.peer_mru() - 4);
                self.anomaly(Anomaly::UnknownCode);
            } else {
                self.anomaly(Anomaly::NotUp);
            }
            return;
        }
        match code {
            Code::EchoRequest => {
                let magic = cp.magic_number();
                match magic {
                    Ok(m) if m == 0 || m != self.lcp.neg.magic || self.lcp.neg.magic == 0 => {
                        let mut reply = self.lcp.neg.magic.to_be_bytes().to_vec();
                        reply.extend_from_slice(cp.echo_data().unwrap_or(&[]));
                        self.send_control(Protocol::LCP, Code::EchoReply, id, &reply);
                    }
                    _ => self.anomaly(Anomaly::BadEcho),
                }
            }
            Code::EchoReply => match cp.magic_number() {
                Ok(m) if m == 0 || m != self.lcp.neg.magic || self.lcp.neg.magic == 0 => {
                    self.echo_outstanding = 0
                }
                _ => self.anomaly(Anomaly::BadEcho),
            },
            Code::DiscardRequest => {}
            Code::ProtocolReject => match cp.rejected_protocol() {
                Ok(Protocol::IPCP) => {
                    if let Some(f) = self.ipcp.as_mut() {
                        f.rxj(now, false);
                    }
                }
                Ok(Protocol::IPV6CP) => {
                    if let Some(f) = self.ipv6cp.as_mut() {
                        f.rxj(now, false);
                    }
                }
                Ok(Protocol::PAP | Protocol::CHAP) if self.phase == Phase::Authenticate => {
                    self.close(now, DownReason::AuthRefused)
                }
                Ok(_) => {}
                Err(_) => self.anomaly(Anomaly::ControlMalformed),
            },
            _ => {
                self.lcp
                    .code_reject(&info[..usize::from(cp.length())], self.peer_mru() - 4);
                self.anomaly(Anomaly::UnknownCode);
            }
        }
    }

    fn ncp_input(&mut self, now: Nanos, protocol: Protocol, info: &[u8]) {
        if !self.runs(protocol) {
            if self.lcp.is_opened() {
                self.protocol_reject(protocol, info);
            } else {
                self.anomaly(Anomaly::NotUp);
            }
            return;
        }
        if self.phase != Phase::Network {
            // RFC 1661 §3.6: NCP packets before the network phase are silently discarded.
            self.anomaly(Anomaly::NotUp);
            return;
        }
        let Ok(cp) = ControlPacket::new_checked(info) else {
            self.anomaly(Anomaly::ControlMalformed);
            return;
        };
        let (code, id, data) = (cp.code(), cp.identifier(), cp.data());
        let max = self.peer_mru() - 4;
        let handled = if protocol == Protocol::IPCP {
            self.ipcp.as_mut().map(|f| f.input(now, code, id, data))
        } else {
            self.ipv6cp.as_mut().map(|f| f.input(now, code, id, data))
        };
        if handled == Some(false) {
            let raw = &info[..usize::from(cp.length())];
            if protocol == Protocol::IPCP {
                if let Some(f) = self.ipcp.as_mut() {
                    f.code_reject(raw, max);
                }
            } else if let Some(f) = self.ipv6cp.as_mut() {
                f.code_reject(raw, max);
            }
            self.anomaly(Anomaly::UnknownCode);
        }
    }

    // ---- authentication ----

    fn start_auth(&mut self, now: Nanos) {
        self.auth.method = match self.role {
            Role::Server => self.lcp.neg.auth_requested,
            Role::Client => self.lcp.neg.auth_to_perform,
        };
        self.auth.done = false;
        self.auth.last_answer = None;
        let Some(method) = self.auth.method else {
            if self.role == Role::Server && !self.auth_cfg.is_empty() {
                // We demand authentication but LCP opened without it: refuse the link.
                self.close(now, DownReason::AuthRefused);
            } else {
                self.start_network(now);
            }
            return;
        };
        self.phase = Phase::Authenticate;
        let long_wait = Nanos(
            self.fsm_cfg
                .restart
                .0
                .saturating_mul(u64::from(self.fsm_cfg.max_configure)),
        );
        match (self.role, method) {
            (Role::Server, AuthMethod::Pap) | (Role::Client, AuthMethod::ChapMd5) => {
                // Wait for the peer to start.
                self.auth.timer = Some(add(now, long_wait));
            }
            (Role::Server, AuthMethod::ChapMd5) => {
                self.auth.tries_left = self.fsm_cfg.max_configure;
                self.auth.id = self.lcp.fresh_id();
                self.rng.fill(&mut self.auth.challenge);
                self.send_challenge(now);
            }
            (Role::Client, AuthMethod::Pap) => {
                self.auth.tries_left = self.fsm_cfg.max_configure;
                self.auth.id = self.lcp.fresh_id();
                self.send_pap_request(now);
            }
        }
    }

    fn send_challenge(&mut self, now: Nanos) {
        self.auth.tries_left = self.auth.tries_left.saturating_sub(1);
        self.auth.timer = Some(add(now, self.fsm_cfg.restart));
        let challenge = self.auth.challenge;
        let name = self.name.clone();
        let repr = ChapRepr::Challenge {
            identifier: self.auth.id,
            value: &challenge,
            name: name.as_bytes(),
        };
        self.emit_chap(&repr);
    }

    fn send_pap_request(&mut self, now: Nanos) {
        self.auth.tries_left = self.auth.tries_left.saturating_sub(1);
        self.auth.timer = Some(add(now, self.fsm_cfg.restart));
        let cred = self
            .credentials
            .first()
            .cloned()
            .unwrap_or(Credential::new("", ""));
        let repr = PapRepr::AuthenticateRequest {
            identifier: self.auth.id,
            peer_id: cred.user.as_bytes(),
            password: cred.password.as_bytes(),
        };
        let mut f = vec![0u8; 2 + repr.buffer_len()];
        f[..2].copy_from_slice(&Protocol::PAP.0.to_be_bytes());
        if repr
            .emit(&mut ControlPacket::new_unchecked(&mut f[2..]))
            .is_ok()
        {
            self.out.push(f);
        }
    }

    fn emit_chap(&mut self, repr: &ChapRepr<'_>) -> Vec<u8> {
        let mut f = vec![0u8; 2 + repr.buffer_len()];
        f[..2].copy_from_slice(&Protocol::CHAP.0.to_be_bytes());
        if repr
            .emit(&mut ControlPacket::new_unchecked(&mut f[2..]))
            .is_ok()
        {
            self.out.push(f.clone());
        }
        f
    }

    fn emit_pap(&mut self, repr: &PapRepr<'_>) -> Vec<u8> {
        let mut f = vec![0u8; 2 + repr.buffer_len()];
        f[..2].copy_from_slice(&Protocol::PAP.0.to_be_bytes());
        if repr
            .emit(&mut ControlPacket::new_unchecked(&mut f[2..]))
            .is_ok()
        {
            self.out.push(f.clone());
        }
        f
    }

    fn auth_timeout(&mut self, now: Nanos) {
        self.auth.timer = None;
        if self.auth.done || self.phase != Phase::Authenticate {
            return;
        }
        if self.auth.tries_left > 0 {
            self.retransmits += 1;
            match (self.role, self.auth.method) {
                (Role::Server, Some(AuthMethod::ChapMd5)) => return self.send_challenge(now),
                (Role::Client, Some(AuthMethod::Pap)) => return self.send_pap_request(now),
                (Role::Client, Some(AuthMethod::ChapMd5)) => {
                    if let Some((_, f)) = self.auth.last_answer.clone() {
                        self.auth.tries_left -= 1;
                        self.out.push(f);
                        self.auth.timer = Some(add(now, self.fsm_cfg.restart));
                        return;
                    }
                }
                _ => {}
            }
        }
        self.close(now, DownReason::AuthTimeout);
    }

    fn auth_input(&mut self, now: Nanos, protocol: Protocol, info: &[u8]) {
        let expected = match self.auth.method {
            Some(AuthMethod::Pap) => Protocol::PAP,
            Some(AuthMethod::ChapMd5) => Protocol::CHAP,
            None => Protocol(0),
        };
        let in_phase = matches!(self.phase, Phase::Authenticate | Phase::Network);
        if protocol != expected || !in_phase {
            if self.lcp.is_opened() && self.auth.method.is_none() {
                self.protocol_reject(protocol, info);
            } else {
                self.anomaly(Anomaly::UnexpectedAuth);
            }
            return;
        }
        let Ok(cp) = ControlPacket::new_checked(info) else {
            self.anomaly(Anomaly::UnexpectedAuth);
            return;
        };
        if protocol == Protocol::PAP {
            match PapRepr::parse(&cp) {
                Ok(p) => self.pap(now, p),
                Err(_) => self.anomaly(Anomaly::UnexpectedAuth),
            }
        } else {
            match ChapRepr::parse(&cp) {
                Ok(c) => self.chap(now, c),
                Err(_) => self.anomaly(Anomaly::UnexpectedAuth),
            }
        }
    }

    fn pap(&mut self, now: Nanos, p: PapRepr<'_>) {
        match (self.role, p) {
            (
                Role::Server,
                PapRepr::AuthenticateRequest {
                    identifier,
                    peer_id,
                    password,
                },
            ) => {
                if self.auth.done {
                    // A retransmitted request after our Ack was lost: answer again.
                    if let Some((_, mut f)) = self.auth.last_answer.clone() {
                        if f.len() > 3 {
                            f[3] = identifier;
                        }
                        self.out.push(f);
                    }
                    return;
                }
                let ok = self
                    .credentials
                    .iter()
                    .any(|c| c.user.as_bytes() == peer_id && c.password.as_bytes() == password);
                let user = String::from_utf8_lossy(peer_id).into_owned();
                if ok {
                    let f = self.emit_pap(&PapRepr::AuthenticateAck {
                        identifier,
                        message: b"welcome",
                    });
                    self.auth.last_answer = Some((Protocol::PAP, f));
                    self.auth_success(now, user);
                } else {
                    self.emit_pap(&PapRepr::AuthenticateNak {
                        identifier,
                        message: b"authentication failed",
                    });
                    self.close(now, DownReason::AuthFailed);
                }
            }
            (Role::Client, PapRepr::AuthenticateAck { identifier, .. })
                if identifier == self.auth.id && !self.auth.done =>
            {
                let user = self
                    .credentials
                    .first()
                    .map(|c| c.user.clone())
                    .unwrap_or_default();
                self.auth_success(now, user);
            }
            (Role::Client, PapRepr::AuthenticateNak { identifier, .. })
                if identifier == self.auth.id && !self.auth.done =>
            {
                self.auth.timer = None;
                self.close(now, DownReason::AuthFailed);
            }
            _ => self.anomaly(Anomaly::UnexpectedAuth),
        }
    }

    fn chap(&mut self, now: Nanos, c: ChapRepr<'_>) {
        match (self.role, c) {
            (
                Role::Server,
                ChapRepr::Response {
                    identifier,
                    value,
                    name,
                },
            ) if identifier == self.auth.id => {
                if self.auth.done {
                    if let Some((_, f)) = self.auth.last_answer.clone() {
                        self.out.push(f);
                    }
                    return;
                }
                let user = String::from_utf8_lossy(name).into_owned();
                let ok = self.credentials.iter().any(|cr| {
                    cr.user.as_bytes() == name
                        && md5(&[&[identifier], cr.password.as_bytes(), &self.auth.challenge])
                            == value
                });
                if ok {
                    let f = self.emit_chap(&ChapRepr::Success {
                        identifier,
                        message: b"welcome",
                    });
                    self.auth.last_answer = Some((Protocol::CHAP, f));
                    self.auth_success(now, user);
                } else {
                    self.emit_chap(&ChapRepr::Failure {
                        identifier,
                        message: b"authentication failed",
                    });
                    self.close(now, DownReason::AuthFailed);
                }
            }
            (
                Role::Client,
                ChapRepr::Challenge {
                    identifier, value, ..
                },
            ) => {
                let cred = self
                    .credentials
                    .first()
                    .cloned()
                    .unwrap_or(Credential::new("", ""));
                let digest = md5(&[&[identifier], cred.password.as_bytes(), value]);
                if self.auth.done {
                    // A re-challenge after success (RFC 1994 allows periodic ones): answer.
                    self.emit_chap(&ChapRepr::Response {
                        identifier,
                        value: &digest,
                        name: cred.user.as_bytes(),
                    });
                    return;
                }
                if identifier != self.auth.id || self.auth.last_answer.is_none() {
                    self.auth.tries_left = self.fsm_cfg.max_configure;
                }
                self.auth.id = identifier;
                let f = self.emit_chap(&ChapRepr::Response {
                    identifier,
                    value: &digest,
                    name: cred.user.as_bytes(),
                });
                // Success or Failure may be lost; RFC 1994 §4.1 has the authenticator accept
                // repeated Responses, so repeat ours until one arrives.
                self.auth.last_answer = Some((Protocol::CHAP, f));
                self.auth.timer = Some(add(now, self.fsm_cfg.restart));
            }
            (Role::Client, ChapRepr::Success { identifier, .. })
                if identifier == self.auth.id && !self.auth.done =>
            {
                let user = self
                    .credentials
                    .first()
                    .map(|c| c.user.clone())
                    .unwrap_or_default();
                self.auth_success(now, user);
            }
            (Role::Client, ChapRepr::Failure { identifier, .. }) if identifier == self.auth.id => {
                self.auth.timer = None;
                self.close(now, DownReason::AuthFailed);
            }
            _ => self.anomaly(Anomaly::UnexpectedAuth),
        }
    }

    fn auth_success(&mut self, now: Nanos, user: String) {
        self.auth.done = true;
        self.auth.timer = None;
        self.auth.user = Some(user.clone());
        if self.role == Role::Server {
            self.events.push(LinkEvent::Authenticated { user });
        }
        if self.phase == Phase::Authenticate {
            self.start_network(now);
        }
    }

    fn start_network(&mut self, now: Nanos) {
        if self.await_grant {
            // The owner decides the addresses first (see `grant_network`). The phase stays
            // where it is, so an early NCP packet is discarded as RFC 1661 §3.6 asks.
            self.await_grant = false;
            self.awaiting_grant = true;
            self.auth.timer = None;
            self.events.push(LinkEvent::AwaitingGrant {
                user: self.auth.user.clone(),
            });
            return;
        }
        self.phase = Phase::Network;
        if self.ipcp.is_none() && self.ipv6cp.is_none() {
            self.close(now, DownReason::NcpFailed);
            return;
        }
        if let Some(f) = self.ipcp.as_mut() {
            f.open(now);
            f.up(now);
        }
        if let Some(f) = self.ipv6cp.as_mut() {
            f.open(now);
            f.up(now);
        }
    }

    // ---- signals ----

    /// Moves automaton output into frames and reacts to layer signals until nothing changes.
    fn flush(&mut self, now: Nanos) {
        for _ in 0..16 {
            let mut changed = false;
            let lcp_out = std::mem::take(&mut self.lcp.out);
            let lcp_sig = std::mem::take(&mut self.lcp.signals);
            let lcp_disc = std::mem::take(&mut self.lcp.discards);
            self.retransmits += std::mem::take(&mut self.lcp.retransmits);
            changed |= !lcp_out.is_empty() || !lcp_sig.is_empty();
            self.push_packets(Protocol::LCP, lcp_out);
            for d in lcp_disc {
                self.anomaly(d.into());
            }
            for s in lcp_sig {
                self.lcp_signal(now, s);
            }
            for proto in [Protocol::IPCP, Protocol::IPV6CP] {
                let drained = if proto == Protocol::IPCP {
                    self.ipcp.as_mut().map(drain)
                } else {
                    self.ipv6cp.as_mut().map(drain)
                };
                let Some((out, sig, disc, rtx)) = drained else {
                    continue;
                };
                self.retransmits += rtx;
                changed |= !out.is_empty() || !sig.is_empty();
                self.push_packets(proto, out);
                for d in disc {
                    self.anomaly(d.into());
                }
                if !sig.is_empty() {
                    self.ncp_signal(now, &sig);
                }
            }
            // Only while not already closing: close() flushes, and these conditions stay
            // true, so without the guard a looped link would recurse without end.
            if self.phase != Phase::Dead && self.closing_reason.is_none() {
                if self.lcp.neg.looped() {
                    self.close(now, DownReason::Loopback);
                } else if self.role == Role::Server && self.lcp.neg.auth_refused {
                    self.close(now, DownReason::AuthRefused);
                }
            }
            if !changed {
                break;
            }
        }
    }

    fn push_packets(&mut self, protocol: Protocol, packets: Vec<Packet>) {
        for p in packets {
            self.send_control(protocol, p.code, p.identifier, &p.data);
        }
    }

    fn lcp_signal(&mut self, now: Nanos, s: Signal) {
        match s {
            Signal::Up => {
                self.echo_outstanding = 0;
                if self.echo_interval.0 > 0 {
                    self.echo_next = Some(add(now, self.echo_interval));
                }
                self.start_auth(now);
            }
            Signal::Down => {
                self.echo_next = None;
                self.auth.timer = None;
                self.up = false;
                if self.phase != Phase::Dead {
                    self.phase = Phase::Establish;
                }
                if let Some(f) = self.ipcp.as_mut() {
                    f.down();
                    f.close(now);
                }
                if let Some(f) = self.ipv6cp.as_mut() {
                    f.down();
                    f.close(now);
                }
            }
            Signal::Started => {}
            Signal::Finished { timeout } => {
                let reason = self.closing_reason.unwrap_or(if timeout {
                    DownReason::LcpTimeout
                } else {
                    DownReason::LcpFailed
                });
                self.kill(reason);
            }
        }
    }

    fn ncp_signal(&mut self, now: Nanos, _signals: &[Signal]) {
        if self.phase != Phase::Network {
            return;
        }
        let states: Vec<(bool, bool)> = [
            self.ipcp.as_ref().map(|f| (f.is_opened(), f.is_finished())),
            self.ipv6cp
                .as_ref()
                .map(|f| (f.is_opened(), f.is_finished())),
        ]
        .into_iter()
        .flatten()
        .collect();
        let any_open = states.iter().any(|s| s.0);
        let all_settled = states.iter().all(|s| s.0 || s.1);
        if all_settled && !any_open {
            self.close(now, DownReason::NcpFailed);
        } else if all_settled && !self.up {
            self.up = true;
            self.events.push(LinkEvent::Up);
        } else if !any_open && self.up {
            self.up = false;
        }
    }
}

type Drained = (Vec<Packet>, Vec<Signal>, Vec<Discard>, u64);

/// Takes what an automaton produced since the last call.
fn drain<N>(f: &mut Fsm<N>) -> Drained {
    (
        std::mem::take(&mut f.out),
        std::mem::take(&mut f.signals),
        std::mem::take(&mut f.discards),
        std::mem::take(&mut f.retransmits),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ppp::neg::eui64;

    fn server() -> Link {
        Link::new(LinkConfig {
            role: Role::Server,
            fsm: FsmConfig::default(),
            mru: 1454,
            peer_mru_max: 1492,
            auth: vec![AuthMethod::Pap],
            credentials: vec![Credential::new("u", "p")].into(),
            name: "ac".into(),
            ipcp: Some(IpcpNeg::server(
                Ipv4Addr::new(198, 51, 100, 1),
                Some(Ipv4Addr::new(198, 51, 100, 10)),
                [None, None],
            )),
            ipv6cp: Some(eui64([2, 0, 0, 0, 0, 1])),
            echo_interval: Nanos(0),
            echo_failures: 3,
            entropy: Entropy::Seeded(5),
            await_grant: false,
        })
    }

    #[test]
    fn a_link_looped_onto_itself_is_detected() {
        // Without authentication (a looped AC would otherwise refuse its own auth demand first).
        let mut l = server();
        l.auth_cfg.clear();
        l.lcp.neg.auth_demand.clear();
        l.lcp.neg.auth_requested = None;
        l.open(Nanos(0));
        let mut now = Nanos(0);
        for _ in 0..200 {
            let out = l.take_output();
            if out.is_empty() {
                match l.next_deadline() {
                    Some(d) => {
                        now = d;
                        l.poll(now);
                        continue;
                    }
                    None => break,
                }
            }
            for f in out {
                l.input(now, &f);
            }
            if l.is_dead() {
                break;
            }
        }
        let events = l.take_events();
        assert!(
            events.contains(&LinkEvent::Down(DownReason::Loopback)),
            "{events:?}"
        );
    }

    #[test]
    fn lcp_only_codes_before_open_and_garbage_are_counted() {
        let mut l = server();
        l.open(Nanos(0));
        l.take_output();
        // Echo-Request before LCP is open, a 1-byte frame, IPv4 before IPCP.
        l.input(Nanos(0), &[0xc0, 0x21, 9, 1, 0, 8, 0, 0, 0, 0]);
        l.input(Nanos(0), &[0xc0]);
        l.input(Nanos(0), &[0x00, 0x21, 0x45]);
        let a: Vec<_> = l
            .take_events()
            .into_iter()
            .filter_map(|e| match e {
                LinkEvent::Anomaly(a) => Some(a),
                _ => None,
            })
            .collect();
        assert_eq!(
            a,
            vec![
                Anomaly::NotUp,
                Anomaly::PppTruncated,
                Anomaly::DataBeforeNcp
            ]
        );
        assert!(l.take_output().is_empty());
    }

    /// A PAP-only AC whose Authentication-Protocol the client Naks towards CHAP: RFC 1661 has
    /// nothing more to propose, so the answer is a Terminate-Request alone (no new
    /// Configure-Request with the same refused option), and the link ends `AuthRefused`.
    #[test]
    fn a_nak_towards_an_auth_we_do_not_allow_gets_only_a_terminate_request() {
        for code in [3u8, 4] {
            let mut l = server();
            l.open(Nanos(0));
            let out = l.take_output();
            assert_eq!(out.len(), 1);
            assert_eq!(out[0][..3], [0xc0, 0x21, 1], "our Configure-Request");
            let id = out[0][3];
            // Nak (3): "use CHAP-MD5 instead"; Reject (4): our own PAP option back.
            let frame: Vec<u8> = if code == 3 {
                vec![0xc0, 0x21, 3, id, 0, 9, 3, 5, 0xc2, 0x23, 5]
            } else {
                vec![0xc0, 0x21, 4, id, 0, 8, 3, 4, 0xc0, 0x23]
            };
            l.input(Nanos(1_000), &frame);
            let out = l.take_output();
            assert_eq!(out.len(), 1, "code {code}: {out:02x?}");
            assert_eq!(
                out[0][..3],
                [0xc0, 0x21, 5],
                "code {code}: Terminate-Request"
            );
            assert_eq!(l.lcp_state(), State::Closing);
            // No peer answer: Terminate-Request once more, then the link is down.
            let mut sent = 0;
            while let Some(d) = l.next_deadline() {
                l.poll(d);
                for f in l.take_output() {
                    assert_eq!(
                        f[..3],
                        [0xc0, 0x21, 5],
                        "code {code}: only Terminate-Requests"
                    );
                    sent += 1;
                }
            }
            assert_eq!(sent, 1, "code {code}");
            let events = l.take_events();
            assert_eq!(
                events,
                vec![LinkEvent::Down(DownReason::AuthRefused)],
                "code {code}"
            );
        }
    }
}
