//! The option negotiation automaton of RFC 1661 §4, shared by LCP, IPCP and IPv6CP.
//!
//! [`Fsm`] owns the state, the restart timer and counters, and the identifiers; what the
//! options mean is left to a [`Negotiator`] (see [`super::neg`]). It is fed parsed control
//! packets and time, and leaves packets to send in [`Fsm::out`] and layer signals
//! (This-Layer-Up/-Down/-Started/-Finished) in [`Fsm::signals`].

use wire::ppp::control::{Code, OptionIter, RawOption};
use wire::ppp::ConfigOption;
use wire::units::Nanos;

use crate::util::{add, Entropy, Rng};

/// The ten states of RFC 1661 §4.2.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    Initial,
    Starting,
    Closed,
    Stopped,
    Closing,
    Stopping,
    ReqSent,
    AckRcvd,
    AckSent,
    Opened,
}

/// RFC 1661 §4.6 counters and timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsmConfig {
    /// Restart timer (default 3 s).
    pub restart: Nanos,
    /// Configure-Requests sent without an answer before giving up (default 10).
    pub max_configure: u32,
    /// Terminate-Requests sent without an answer before giving up (default 2).
    pub max_terminate: u32,
    /// Configure-Naks sent without an Ack before Naks become Rejects (default 5).
    pub max_failure: u32,
    /// Up to this much is added at random to each restart timer (default 300 ms), so two
    /// ends (or thousands of sessions) do not retransmit in lockstep: with synchronized timers
    /// a periodic loss pattern can hit the same exchange forever.
    pub jitter: Nanos,
}

impl Default for FsmConfig {
    fn default() -> Self {
        FsmConfig {
            restart: Nanos(3_000_000_000),
            max_configure: 10,
            max_terminate: 2,
            max_failure: 5,
            jitter: Nanos(300_000_000),
        }
    }
}

/// Layer signals for the owner (RFC 1661 §4.4 actions tlu, tld, tls, tlf).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Up,
    Down,
    Started,
    /// This-Layer-Finished; `timeout` is true when the restart counter ran out
    /// (max-configure or max-terminate), false for a Terminate exchange or a fatal reject.
    Finished {
        timeout: bool,
    },
}

/// A control packet to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packet {
    pub code: Code,
    pub identifier: u8,
    pub data: Vec<u8>,
}

/// Appends a typed option TLV to `v`.
pub fn push_option<O: ConfigOption + ?Sized>(v: &mut Vec<u8>, o: &O) {
    let start = v.len();
    v.resize(start + o.buffer_len(), 0);
    if o.emit(&mut v[start..]).is_err() {
        v.truncate(start);
    }
}

/// The answer being built to a peer's Configure-Request.
#[derive(Debug, Default)]
pub struct Reply {
    naks: Vec<u8>,
    /// For each Nak'd option, the peer's original, in case Max-Failure turns Naks into Rejects.
    nak_originals: Vec<u8>,
    rejects: Vec<u8>,
}

impl Reply {
    /// The peer's option `(kind, value)` is acceptable only as `suggestion`.
    pub fn nak<O: ConfigOption + ?Sized>(&mut self, kind: u8, value: &[u8], suggestion: &O) {
        push_option(&mut self.naks, suggestion);
        push_option(&mut self.nak_originals, &RawOption { kind, value });
    }

    /// The peer's option is not negotiable here.
    pub fn reject(&mut self, kind: u8, value: &[u8]) {
        push_option(&mut self.rejects, &RawOption { kind, value });
    }

    /// The Nak and Reject option lists built so far.
    pub fn into_parts(self) -> (Vec<u8>, Vec<u8>) {
        (self.naks, self.rejects)
    }

    /// Whether the request is acceptable as it stands so far.
    pub fn is_ack(&self) -> bool {
        self.naks.is_empty() && self.rejects.is_empty()
    }
}

/// What the options mean, per protocol.
pub trait Negotiator {
    /// Writes the options of our next Configure-Request.
    fn request(&mut self, out: &mut Vec<u8>);
    /// Judges each option of the peer's Configure-Request (framing already checked). Records
    /// what the peer asked only if `reply.is_ack()` at the end.
    fn check(&mut self, options: &[u8], reply: &mut Reply);
    /// Our request was Nak'd with these options.
    fn nak_received(&mut self, options: &[u8]);
    /// Our request was rejected in part.
    fn reject_received(&mut self, options: &[u8]);
    /// Negotiation (re)starts from scratch (This-Layer-Started or a new Open).
    fn reset(&mut self) {}
    /// After a Nak or Reject: nothing is left that we could propose and accept (e.g. the
    /// peer refuses every authentication we demand). The automaton then sends no new
    /// Configure-Request but closes (Terminate-Request), as an administrative Close would.
    fn gave_up(&self) -> bool {
        false
    }
}

/// Why a received packet was not used (counted by the owner as hostile or stray input).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Discard {
    /// A reply whose identifier does not match our outstanding request.
    StaleIdentifier,
    /// A Configure-Ack whose options differ from what we asked.
    AckMismatch,
    /// Broken option framing in a Configure packet.
    BadOptions,
    /// The layer is not up (Initial/Starting): nothing is accepted.
    NotUp,
    /// A Nak/Reject that names options we never requested (Reject) or is otherwise invalid.
    InvalidReject,
}

#[derive(Debug)]
pub struct Fsm<N> {
    pub state: State,
    pub cfg: FsmConfig,
    pub neg: N,
    restart_count: u32,
    failure_count: u32,
    timer: Option<Nanos>,
    next_id: u8,
    /// Identifier and options of our outstanding Configure-Request.
    req_id: u8,
    req_options: Vec<u8>,
    req_answered: bool,
    /// The peer's last request we acked (identifier, options).
    last_acked: Option<(u8, Vec<u8>)>,
    term_id: u8,
    /// Packets to send, in order.
    pub out: Vec<Packet>,
    /// Layer signals, in order.
    pub signals: Vec<Signal>,
    /// Configure-/Terminate-Requests sent again after a timeout.
    pub retransmits: u64,
    /// Packets ignored, by reason.
    pub discards: Vec<Discard>,
    /// Whether the last tlf came from the restart counter running out.
    finished_by_timeout: bool,
    rng: Rng,
}

impl<N: Negotiator> Fsm<N> {
    pub fn new(cfg: FsmConfig, neg: N) -> Self {
        Self::with_seed(cfg, neg, 0)
    }

    /// As [`new`](Self::new), with the seed of the restart-timer jitter.
    pub fn with_seed(cfg: FsmConfig, neg: N, seed: u64) -> Self {
        Self::with_entropy(cfg, neg, Entropy::Seeded(seed))
    }

    /// As [`new`](Self::new), with the source of the restart-timer jitter.
    pub fn with_entropy(cfg: FsmConfig, neg: N, entropy: Entropy) -> Self {
        Fsm {
            rng: Rng::from_entropy(entropy),
            state: State::Initial,
            cfg,
            neg,
            restart_count: 0,
            failure_count: 0,
            timer: None,
            next_id: 1,
            req_id: 0,
            req_options: Vec::new(),
            req_answered: false,
            last_acked: None,
            term_id: 0,
            out: Vec::new(),
            signals: Vec::new(),
            retransmits: 0,
            discards: Vec::new(),
            finished_by_timeout: false,
        }
    }

    pub fn deadline(&self) -> Option<Nanos> {
        self.timer
    }

    pub fn is_opened(&self) -> bool {
        self.state == State::Opened
    }

    /// Whether the automaton has stopped negotiating (Closed or Stopped, i.e. after tlf).
    pub fn is_finished(&self) -> bool {
        matches!(self.state, State::Closed | State::Stopped)
    }

    fn alloc_id(&mut self) -> u8 {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        id
    }

    // ---- actions ----

    fn tlu(&mut self) {
        self.signals.push(Signal::Up);
    }
    fn tld(&mut self) {
        self.signals.push(Signal::Down);
    }
    fn tls(&mut self) {
        self.neg.reset();
        self.signals.push(Signal::Started);
    }
    fn tlf(&mut self) {
        self.timer = None;
        self.signals.push(Signal::Finished {
            timeout: self.finished_by_timeout,
        });
        self.finished_by_timeout = false;
    }
    fn irc_configure(&mut self) {
        self.restart_count = self.cfg.max_configure;
        self.failure_count = 0;
    }
    fn irc_terminate(&mut self) {
        self.restart_count = self.cfg.max_terminate;
    }
    fn zrc(&mut self, now: Nanos) {
        self.restart_count = 0;
        self.arm(now);
    }

    fn arm(&mut self, now: Nanos) {
        let jitter = match self.cfg.jitter.0 {
            0 => 0,
            j => self.rng.next_u64() % j,
        };
        self.timer = Some(add(now, Nanos(self.cfg.restart.0 + jitter)));
    }

    /// Send-Configure-Request. A new request (not a timeout retransmission) gets a new id.
    fn scr(&mut self, now: Nanos, retransmit: bool) {
        if !retransmit || self.req_id == 0 {
            self.req_options.clear();
            self.neg.request(&mut self.req_options);
            self.req_id = self.alloc_id();
        } else {
            self.retransmits += 1;
        }
        self.req_answered = false;
        self.restart_count = self.restart_count.saturating_sub(1);
        self.arm(now);
        self.out.push(Packet {
            code: Code::ConfigureRequest,
            identifier: self.req_id,
            data: self.req_options.clone(),
        });
    }

    fn str_(&mut self, now: Nanos, retransmit: bool) {
        if retransmit {
            self.retransmits += 1;
        } else {
            self.term_id = self.alloc_id();
        }
        self.restart_count = self.restart_count.saturating_sub(1);
        self.arm(now);
        self.out.push(Packet {
            code: Code::TerminateRequest,
            identifier: self.term_id,
            data: Vec::new(),
        });
    }

    fn sta(&mut self, id: u8) {
        self.out.push(Packet {
            code: Code::TerminateAck,
            identifier: id,
            data: Vec::new(),
        });
    }

    fn stop_timer_if_idle(&mut self) {
        if !matches!(
            self.state,
            State::Closing | State::Stopping | State::ReqSent | State::AckRcvd | State::AckSent
        ) {
            self.timer = None;
        }
    }

    // ---- administrative events ----

    /// The lower layer is up.
    pub fn up(&mut self, now: Nanos) {
        match self.state {
            State::Initial => self.state = State::Closed,
            State::Starting => {
                self.irc_configure();
                self.scr(now, false);
                self.state = State::ReqSent;
            }
            _ => {}
        }
    }

    /// The lower layer went down.
    pub fn down(&mut self) {
        match self.state {
            State::Closed | State::Closing => self.state = State::Initial,
            State::Stopped => {
                self.tls();
                self.state = State::Starting;
            }
            State::Stopping | State::ReqSent | State::AckRcvd | State::AckSent => {
                self.state = State::Starting
            }
            State::Opened => {
                self.tld();
                self.state = State::Starting;
            }
            State::Initial | State::Starting => {}
        }
        self.stop_timer_if_idle();
    }

    /// Administrative Open.
    pub fn open(&mut self, now: Nanos) {
        match self.state {
            State::Initial => {
                self.tls();
                self.state = State::Starting;
            }
            State::Closed => {
                self.neg.reset();
                self.irc_configure();
                self.scr(now, false);
                self.state = State::ReqSent;
            }
            State::Closing => self.state = State::Stopping,
            _ => {}
        }
    }

    /// Administrative Close.
    pub fn close(&mut self, now: Nanos) {
        match self.state {
            State::Starting => {
                self.tlf();
                self.state = State::Initial;
            }
            State::Stopped => self.state = State::Closed,
            State::Stopping => self.state = State::Closing,
            State::ReqSent | State::AckRcvd | State::AckSent => {
                self.irc_terminate();
                self.str_(now, false);
                self.state = State::Closing;
            }
            State::Opened => {
                self.tld();
                self.irc_terminate();
                self.str_(now, false);
                self.state = State::Closing;
            }
            _ => {}
        }
        self.stop_timer_if_idle();
    }

    /// Drives the restart timer.
    pub fn poll(&mut self, now: Nanos) {
        let Some(t) = self.timer else { return };
        if now < t {
            return;
        }
        self.timer = None;
        if self.restart_count > 0 {
            // TO+
            match self.state {
                State::Closing | State::Stopping => self.str_(now, true),
                State::ReqSent | State::AckRcvd => {
                    self.scr(now, true);
                    self.state = State::ReqSent;
                }
                State::AckSent => self.scr(now, true),
                _ => {}
            }
        } else {
            // TO-
            self.finished_by_timeout = true;
            match self.state {
                State::Closing => {
                    self.tlf();
                    self.state = State::Closed;
                }
                State::Stopping | State::ReqSent | State::AckRcvd | State::AckSent => {
                    self.tlf();
                    self.state = State::Stopped;
                }
                _ => self.finished_by_timeout = false,
            }
        }
    }

    // ---- received packets ----

    /// Handles a parsed control packet whose code is one of the seven common to LCP and the
    /// NCPs. Returns false if the code is not one of them (the owner handles LCP-only codes or
    /// Code-Rejects unknown ones).
    pub fn input(&mut self, now: Nanos, code: Code, id: u8, data: &[u8]) -> bool {
        if !matches!(
            code,
            Code::ConfigureRequest
                | Code::ConfigureAck
                | Code::ConfigureNak
                | Code::ConfigureReject
                | Code::TerminateRequest
                | Code::TerminateAck
                | Code::CodeReject
        ) {
            return false;
        }
        if matches!(self.state, State::Initial | State::Starting) {
            self.discards.push(Discard::NotUp);
            return true;
        }
        if code.has_options() && OptionIter::new(data).any(|o| o.is_err()) {
            self.discards.push(Discard::BadOptions);
            return true;
        }
        match code {
            Code::ConfigureRequest => self.rcr(now, id, data),
            Code::ConfigureAck => {
                if id != self.req_id || !self.awaiting_reply() {
                    self.discards.push(Discard::StaleIdentifier);
                } else if data != self.req_options.as_slice() {
                    self.discards.push(Discard::AckMismatch);
                } else {
                    self.req_answered = true;
                    self.rca(now);
                }
            }
            Code::ConfigureNak | Code::ConfigureReject => {
                if id != self.req_id || !self.awaiting_reply() {
                    self.discards.push(Discard::StaleIdentifier);
                } else if code == Code::ConfigureReject && !self.reject_is_subset(data) {
                    self.discards.push(Discard::InvalidReject);
                } else {
                    self.req_answered = true;
                    if code == Code::ConfigureNak {
                        self.neg.nak_received(data);
                    } else {
                        self.neg.reject_received(data);
                    }
                    if self.neg.gave_up() {
                        // A request we would not stand by is pointless: only Terminate.
                        self.close(now);
                    } else {
                        self.rcn(now);
                    }
                }
            }
            Code::TerminateRequest => self.rtr(now, id),
            Code::TerminateAck => self.rta(now),
            Code::CodeReject => {
                // A rejected code among the ones every implementation must know is fatal.
                let rejected = data.first().copied().map(Code::from);
                let fatal = matches!(rejected, Some(c) if c.has_options()
                    || matches!(c, Code::TerminateRequest | Code::TerminateAck | Code::CodeReject));
                self.rxj(now, !fatal);
            }
            _ => unreachable!("filtered above"),
        }
        true
    }

    /// Whether a reply to our outstanding request is still expected: one reply per request
    /// (as pppd does), so a duplicate Ack of a retransmitted request cannot restart an opened
    /// link.
    fn awaiting_reply(&self) -> bool {
        !self.req_answered
            && matches!(
                self.state,
                State::ReqSent | State::AckRcvd | State::AckSent | State::Opened
            )
    }

    /// RFC 1661 §5.4: a Configure-Reject may only carry options from our request, unchanged.
    fn reject_is_subset(&self, data: &[u8]) -> bool {
        OptionIter::new(data).all(|o| match o {
            Ok((k, v)) => OptionIter::new(&self.req_options)
                .any(|r| matches!(r, Ok((rk, rv)) if rk == k && rv == v)),
            Err(_) => false,
        })
    }

    fn rcr(&mut self, now: Nanos, id: u8, data: &[u8]) {
        // Deviation from the RFC 1661 table, on purpose: in Opened, an exact duplicate of the
        // request we acked (same identifier, same options) is a retransmission whose Ack was
        // lost. Re-Ack it instead of tearing the link down; a periodic loss pattern could
        // otherwise hit the renegotiation every time (seen with every-3rd-frame loss). Any
        // changed request renegotiates as the table says.
        if self.state == State::Opened
            && self
                .last_acked
                .as_ref()
                .is_some_and(|(i, d)| *i == id && d.as_slice() == data)
        {
            self.out.push(Packet {
                code: Code::ConfigureAck,
                identifier: id,
                data: data.to_vec(),
            });
            return;
        }
        let mut reply = Reply::default();
        self.neg.check(data, &mut reply);
        let good = reply.is_ack();
        let answer = if !reply.rejects.is_empty() {
            Packet {
                code: Code::ConfigureReject,
                identifier: id,
                data: reply.rejects,
            }
        } else if !reply.naks.is_empty() {
            self.failure_count += 1;
            if self.failure_count > self.cfg.max_failure {
                // Not converging: refuse outright what we kept Nak'ing (RFC 1661 §4.6).
                Packet {
                    code: Code::ConfigureReject,
                    identifier: id,
                    data: reply.nak_originals,
                }
            } else {
                Packet {
                    code: Code::ConfigureNak,
                    identifier: id,
                    data: reply.naks,
                }
            }
        } else {
            self.failure_count = 0;
            self.last_acked = Some((id, data.to_vec()));
            Packet {
                code: Code::ConfigureAck,
                identifier: id,
                data: data.to_vec(),
            }
        };
        match self.state {
            State::Closed => self.sta(id),
            State::Closing | State::Stopping => {}
            State::Stopped => {
                self.irc_configure();
                self.scr(now, false);
                self.out.push(answer);
                self.state = if good { State::AckSent } else { State::ReqSent };
            }
            State::ReqSent => {
                self.out.push(answer);
                self.state = if good { State::AckSent } else { State::ReqSent };
            }
            State::AckRcvd => {
                self.out.push(answer);
                if good {
                    self.state = State::Opened;
                    self.timer = None;
                    self.tlu();
                }
            }
            State::AckSent => {
                self.out.push(answer);
                if !good {
                    self.state = State::ReqSent;
                }
            }
            State::Opened => {
                self.tld();
                self.scr(now, false);
                self.out.push(answer);
                self.state = if good { State::AckSent } else { State::ReqSent };
            }
            State::Initial | State::Starting => {}
        }
    }

    fn rca(&mut self, now: Nanos) {
        match self.state {
            State::ReqSent => {
                self.irc_configure();
                self.state = State::AckRcvd;
            }
            State::AckRcvd => {
                self.scr(now, false);
                self.state = State::ReqSent;
            }
            State::AckSent => {
                self.irc_configure();
                self.state = State::Opened;
                self.timer = None;
                self.tlu();
            }
            State::Opened => {
                self.tld();
                self.scr(now, false);
                self.state = State::ReqSent;
            }
            _ => {}
        }
    }

    fn rcn(&mut self, now: Nanos) {
        match self.state {
            State::ReqSent | State::AckSent => {
                self.irc_configure();
                self.scr(now, false);
            }
            State::AckRcvd => {
                self.scr(now, false);
                self.state = State::ReqSent;
            }
            State::Opened => {
                self.tld();
                self.scr(now, false);
                self.state = State::ReqSent;
            }
            _ => {}
        }
    }

    fn rtr(&mut self, now: Nanos, id: u8) {
        match self.state {
            State::ReqSent | State::AckRcvd | State::AckSent => {
                self.sta(id);
                self.state = State::ReqSent;
            }
            State::Opened => {
                self.tld();
                self.zrc(now);
                self.sta(id);
                self.state = State::Stopping;
            }
            _ => self.sta(id),
        }
    }

    fn rta(&mut self, now: Nanos) {
        match self.state {
            State::Closing => {
                self.tlf();
                self.state = State::Closed;
            }
            State::Stopping => {
                self.tlf();
                self.state = State::Stopped;
            }
            State::AckRcvd => self.state = State::ReqSent,
            State::Opened => {
                self.tld();
                self.scr(now, false);
                self.state = State::ReqSent;
            }
            _ => {}
        }
        self.stop_timer_if_idle();
    }

    /// Receive-Code-Reject or Protocol-Reject: `permitted` for RXJ+, false for RXJ-.
    pub fn rxj(&mut self, now: Nanos, permitted: bool) {
        if permitted {
            if self.state == State::AckRcvd {
                self.state = State::ReqSent;
            }
            return;
        }
        match self.state {
            State::Closed | State::Closing => {
                self.tlf();
                self.state = State::Closed;
            }
            State::Stopped | State::Stopping | State::ReqSent | State::AckRcvd | State::AckSent => {
                self.tlf();
                self.state = State::Stopped;
            }
            State::Opened => {
                self.tld();
                self.irc_terminate();
                self.str_(now, false);
                self.state = State::Stopping;
            }
            _ => {}
        }
        self.stop_timer_if_idle();
    }

    /// Send-Code-Reject for an unknown code (RUC); `packet` is the whole rejected packet.
    pub fn code_reject(&mut self, packet: &[u8], max_len: usize) {
        if matches!(self.state, State::Initial | State::Starting) {
            return;
        }
        let mut data = packet.to_vec();
        data.truncate(max_len);
        let id = self.alloc_id();
        self.out.push(Packet {
            code: Code::CodeReject,
            identifier: id,
            data,
        });
    }

    /// A fresh identifier for an LCP-only packet (Echo-Request, Protocol-Reject).
    pub fn fresh_id(&mut self) -> u8 {
        self.alloc_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests one option (type 1, 1 byte value `want`); accepts the peer's option 1 only
    /// with value `accept`, Naks it otherwise; rejects anything else.
    #[derive(Debug, Default)]
    struct Toy {
        want: u8,
        accept: u8,
        rejected: bool,
    }
    impl Negotiator for Toy {
        fn request(&mut self, out: &mut Vec<u8>) {
            if !self.rejected {
                push_option(
                    out,
                    &RawOption {
                        kind: 1,
                        value: &[self.want],
                    },
                );
            }
        }
        fn check(&mut self, options: &[u8], reply: &mut Reply) {
            for (k, v) in OptionIter::new(options).flatten() {
                if k != 1 {
                    reply.reject(k, v);
                } else if v != [self.accept] {
                    reply.nak(
                        k,
                        v,
                        &RawOption {
                            kind: 1,
                            value: &[self.accept],
                        },
                    );
                }
            }
        }
        fn nak_received(&mut self, options: &[u8]) {
            if let Some(Ok((1, [v]))) = OptionIter::new(options).next() {
                self.want = *v;
            }
        }
        fn reject_received(&mut self, _: &[u8]) {
            self.rejected = true;
        }
    }

    fn fsm(want: u8, accept: u8) -> Fsm<Toy> {
        let mut f = Fsm::new(
            FsmConfig::default(),
            Toy {
                want,
                accept,
                rejected: false,
            },
        );
        f.open(Nanos(0));
        f.up(Nanos(0));
        f
    }

    /// Delivers every queued packet of `a` to `b`; returns how many.
    fn pump(now: Nanos, a: &mut Fsm<Toy>, b: &mut Fsm<Toy>) -> usize {
        let out = std::mem::take(&mut a.out);
        let n = out.len();
        for p in out {
            b.input(now, p.code, p.identifier, &p.data);
        }
        n
    }

    fn converge(a: &mut Fsm<Toy>, b: &mut Fsm<Toy>) {
        for _ in 0..20 {
            if pump(Nanos(0), a, b) + pump(Nanos(0), b, a) == 0 {
                break;
            }
        }
    }

    #[test]
    fn straight_ack_both_ways() {
        let mut a = fsm(7, 9);
        let mut b = fsm(9, 7);
        assert_eq!(a.state, State::ReqSent);
        converge(&mut a, &mut b);
        assert_eq!((a.state, b.state), (State::Opened, State::Opened));
        assert!(a.signals.contains(&Signal::Up) && b.signals.contains(&Signal::Up));
        assert_eq!(a.deadline(), None);
    }

    #[test]
    fn nak_path_converges() {
        // a asks 3, b only accepts 7: b Naks with 7, a asks again with 7.
        let mut a = fsm(3, 9);
        let mut b = fsm(9, 7);
        converge(&mut a, &mut b);
        assert_eq!((a.state, b.state), (State::Opened, State::Opened));
        assert_eq!(a.neg.want, 7);
    }

    #[test]
    fn max_failure_turns_naks_into_reject() {
        // a never changes its request (ignores Naks): after max_failure Naks, b rejects.
        let mut b = fsm(9, 7);
        b.out.clear();
        let req = [1u8, 3, 3];
        for i in 0..=b.cfg.max_failure {
            b.input(Nanos(0), Code::ConfigureRequest, i as u8, &req);
            let last = b.out.pop().unwrap();
            if i < b.cfg.max_failure {
                assert_eq!(last.code, Code::ConfigureNak, "round {i}");
                assert_eq!(last.data, [1, 3, 7]);
            } else {
                assert_eq!(last.code, Code::ConfigureReject);
                assert_eq!(last.data, req);
            }
        }
    }

    #[test]
    fn reject_path_and_invalid_reject() {
        let mut a = fsm(3, 9);
        let id = a.out[0].identifier;
        // A Reject naming an option we did not send is ignored.
        a.input(Nanos(0), Code::ConfigureReject, id, &[2, 3, 0]);
        assert_eq!(a.discards, vec![Discard::InvalidReject]);
        a.input(Nanos(0), Code::ConfigureReject, id, &[1, 3, 3]);
        assert!(a.neg.rejected);
        let last = a.out.last().unwrap();
        assert_eq!((last.code, last.data.len()), (Code::ConfigureRequest, 0));
        assert_ne!(last.identifier, id);
    }

    #[test]
    fn restart_timer_and_max_configure() {
        let mut a = fsm(3, 9);
        a.cfg.jitter = Nanos(0);
        a.timer = Some(Nanos(a.cfg.restart.0));
        let mut t = Nanos(0);
        let mut sent = 1;
        while let Some(d) = a.deadline() {
            t = d;
            a.poll(t);
            sent = a.out.len();
        }
        assert_eq!(sent as u32, a.cfg.max_configure);
        assert_eq!(a.retransmits, u64::from(a.cfg.max_configure) - 1);
        assert_eq!(a.state, State::Stopped);
        assert_eq!(a.signals.last(), Some(&Signal::Finished { timeout: true }));
        // Retransmissions keep the identifier.
        assert!(a.out.iter().all(|p| p.identifier == a.out[0].identifier));
        assert_eq!(t, Nanos(3_000_000_000 * 10));
    }

    #[test]
    fn duplicate_request_in_opened_is_re_acked_a_changed_one_renegotiates() {
        let mut a = fsm(7, 9);
        let mut b = fsm(9, 7);
        converge(&mut a, &mut b);
        let req = [1u8, 3, 7];
        // b acked a's request with a's id; the same packet again only gets an Ack.
        let id = b.last_acked.as_ref().unwrap().0;
        b.input(Nanos(0), Code::ConfigureRequest, id, &req);
        assert_eq!(b.state, State::Opened);
        assert_eq!(b.out.pop().unwrap().code, Code::ConfigureAck);
        assert!(b.out.is_empty());
        // A new identifier means a new negotiation (RFC 1661: Opened + RCR+ -> AckSent).
        b.input(Nanos(0), Code::ConfigureRequest, id.wrapping_add(1), &req);
        assert_eq!(b.state, State::AckSent);
        assert!(b.signals.contains(&Signal::Down));
    }

    #[test]
    fn terminate_both_ways() {
        let mut a = fsm(7, 9);
        let mut b = fsm(9, 7);
        converge(&mut a, &mut b);
        a.close(Nanos(1));
        assert_eq!(a.state, State::Closing);
        assert_eq!(a.out.last().unwrap().code, Code::TerminateRequest);
        pump(Nanos(1), &mut a, &mut b);
        assert_eq!(b.state, State::Stopping);
        assert!(b.signals.contains(&Signal::Down));
        pump(Nanos(1), &mut b, &mut a);
        assert_eq!(a.state, State::Closed);
        assert_eq!(a.signals.last(), Some(&Signal::Finished { timeout: false }));
        // b finishes when its zero restart counter times out.
        b.poll(b.deadline().unwrap());
        assert_eq!(b.state, State::Stopped);
        assert_eq!(b.signals.last(), Some(&Signal::Finished { timeout: true }));
    }

    #[test]
    fn stale_ack_and_bad_options_are_discarded() {
        let mut a = fsm(3, 9);
        let id = a.out[0].identifier;
        a.input(Nanos(0), Code::ConfigureAck, id.wrapping_add(5), &[1, 3, 3]);
        a.input(Nanos(0), Code::ConfigureAck, id, &[1, 3, 4]);
        a.input(Nanos(0), Code::ConfigureRequest, 1, &[1, 9]);
        assert_eq!(
            a.discards,
            vec![
                Discard::StaleIdentifier,
                Discard::AckMismatch,
                Discard::BadOptions
            ]
        );
        assert_eq!(a.state, State::ReqSent);
    }

    #[test]
    fn fatal_code_reject_finishes() {
        let mut a = fsm(3, 9);
        a.input(Nanos(0), Code::CodeReject, 1, &[1, 1, 0, 4]);
        assert_eq!(a.state, State::Stopped);
        let mut b = fsm(3, 9);
        b.input(Nanos(0), Code::CodeReject, 1, &[9, 1, 0, 8]);
        assert_eq!(b.state, State::ReqSent);
    }
}
