//! One PPP link over a PPPoE session (RFC 1661 phases): LCP establishment, PAP or CHAP-MD5
//! authentication, IPCP and IPv6CP, LCP echo keepalives, termination.
//!
//! A [`Link`] is fed the PPP frames of its session (protocol field + information, i.e. the
//! PPPoE payload) and time; it leaves PPP frames to send in [`Link::take_output`] and
//! [`LinkEvent`]s in [`Link::take_events`]. [`LinkEvent::Down`] is terminal: over PPPoE the
//! session ends with the link (the owner then sends or has received a PADT).
//!
//! One job a file: this module is the driver (the link's state, its public calls, the
//! phases' transitions, turning the automata's output into frames); `control` handles LCP's
//! and the NCPs' packets and signals, `auth` PAP and CHAP-MD5.

use core::net::Ipv4Addr;
use std::sync::Arc;

use wire::ppp::control::{Code, ControlPacket, ControlRepr};
use wire::ppp::{PppPacket, Protocol};
use wire::units::Nanos;

use super::fsm::{Discard, Fsm, FsmConfig, Packet, Signal, State};
use super::neg::{AuthMethod, IpcpNeg, Ipv6cpNeg, LcpNeg};
use crate::util::{add, min_deadline, Entropy, Rng};

mod auth;
mod control;
#[cfg(test)]
mod tests;

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
