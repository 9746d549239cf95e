//! The server end of TCP, as much as DNS over TCP (RFC 1035 §4.2.2, RFC 7766) needs on a port
//! whose IP lives in user space: passive open (SYN → SYN-ACK with our MSS), in-order data in,
//! answers out in segments no larger than the peer's MSS, retransmission of what is not
//! acknowledged (1 s, doubling, 5 tries), and the close the client starts (its FIN is
//! acknowledged with ours). The application is a function from the bytes received so far to
//! (bytes consumed, bytes to send).
//!
//! Simplified on purpose, as a DNS server may be: out-of-order segments are not kept (the
//! peer retransmits them), the peer's window is not tracked (answers are small), there is no
//! congestion control, no TIME-WAIT (the client closes first, so it holds it), and a
//! connection idle for [`IDLE`] is dropped (RFC 7766 §6.2.3 lets a server close idle ones).
//! A segment for no connection gets a RST (RFC 793 §3.4), a SYN beyond [`MAX_CONNS`] too.

use core::net::IpAddr;
use std::collections::BTreeMap;

use wire::tcp::{TcpFlags, TcpRepr};
use wire::units::Nanos;

use crate::util::{add, Counter, Rng};

/// First retransmission timeout; it doubles with each try.
pub const RTO: Nanos = Nanos(1_000_000_000);
/// Transmissions of a segment before the connection is given up.
pub const MAX_TRIES: u32 = 5;
/// A connection with nothing to send and nothing arriving is dropped after this long.
pub const IDLE: Nanos = Nanos(30_000_000_000);
/// Connections at once.
pub const MAX_CONNS: usize = 256;
/// The window we advertise (we take any amount in order).
const WINDOW: u16 = 65535;

/// The application on a connection: given the bytes received and not yet consumed, how
/// many it consumed and what to send back.
pub type App<'a> = dyn FnMut(&[u8]) -> (usize, Vec<u8>) + 'a;

/// Both ends of a connection, from our side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ConnKey {
    pub local: IpAddr,
    pub local_port: u16,
    pub remote: IpAddr,
    pub remote_port: u16,
}

/// A segment to send on connection `key` (the IP and Ethernet framing are the caller's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutSegment {
    pub key: ConnKey,
    pub header: TcpRepr,
    pub payload: Vec<u8>,
}

/// What happened to connections, for the statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TcpEvent {
    Opened,
    /// The client's FIN, acknowledged with ours, and our FIN acknowledged.
    Closed,
    /// The peer reset it.
    Reset,
    /// Retransmissions ran out.
    TimedOut,
    Idle,
    /// A segment for no connection, answered with RST.
    NoConnection,
    /// A SYN refused because [`MAX_CONNS`] are open.
    Full,
    /// An out-of-order or duplicate segment (acknowledged, not kept).
    OutOfOrder,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TcpStats {
    pub events: Counter<TcpEvent>,
    pub retransmits: u64,
    pub segments_rx: u64,
    pub segments_tx: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    SynReceived,
    Established,
    /// The client's FIN is in, ours is sent.
    LastAck,
}

#[derive(Debug)]
struct Conn {
    state: State,
    /// Oldest unacknowledged sequence number (our SYN's until it is acknowledged).
    snd_una: u32,
    /// What we have sent up to.
    snd_nxt: u32,
    rcv_nxt: u32,
    peer_mss: u16,
    /// Received, not yet consumed by the application.
    rx: Vec<u8>,
    /// Our bytes from `snd_una` on (the SYN excluded), sent or not.
    tx: Vec<u8>,
    /// Our FIN is due after `tx` (the client closed).
    fin: bool,
    fin_sent: bool,
    retransmit_at: Option<Nanos>,
    rto: Nanos,
    tries: u32,
    idle_at: Nanos,
}

/// `a` before `b` in sequence space.
fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// The server end of TCP for one application on one port.
#[derive(Debug)]
pub struct TcpServer {
    conns: BTreeMap<ConnKey, Conn>,
    rng: Rng,
    /// The MSS we announce.
    mss: u16,
    pub stats: TcpStats,
}

fn header(key: &ConnKey, seq: u32, ack: u32, flags: TcpFlags) -> TcpRepr {
    TcpRepr {
        src_port: key.local_port,
        dst_port: key.remote_port,
        seq,
        ack,
        flags,
        window: WINDOW,
        urgent: 0,
        mss: None,
    }
}

impl TcpServer {
    /// `rng` draws initial sequence numbers (RFC 6528 asks for unpredictable ones); `mss`
    /// is what we announce (the link MTU minus 40 or 60).
    pub fn new(rng: Rng, mss: u16) -> TcpServer {
        TcpServer {
            conns: BTreeMap::new(),
            rng,
            mss,
            stats: TcpStats::default(),
        }
    }

    /// Open connections.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// Whether connection `key` is open.
    pub fn has(&self, key: &ConnKey) -> bool {
        self.conns.contains_key(key)
    }

    pub fn next_deadline(&self) -> Option<Nanos> {
        self.conns
            .values()
            .map(|c| c.retransmit_at.unwrap_or(c.idle_at))
            .min()
    }

    /// One received segment (checksum already verified) on `key`; `app` turns the received
    /// stream into (bytes consumed, answer bytes). The segments to send.
    pub fn segment(
        &mut self,
        now: Nanos,
        key: ConnKey,
        seg: &TcpRepr,
        payload: &[u8],
        app: &mut App<'_>,
    ) -> Vec<OutSegment> {
        self.stats.segments_rx += 1;
        let mut out = Vec::new();
        let f = seg.flags;
        let Some(c) = self.conns.get_mut(&key) else {
            if f.contains(TcpFlags::RST) {
                return out;
            }
            if f.contains(TcpFlags::SYN) && !f.contains(TcpFlags::ACK) {
                if self.conns.len() >= MAX_CONNS {
                    self.stats.events.add(TcpEvent::Full);
                    out.push(reset_for(&key, seg, payload.len()));
                } else {
                    self.open(now, key, seg, &mut out);
                }
            } else {
                self.stats.events.add(TcpEvent::NoConnection);
                out.push(reset_for(&key, seg, payload.len()));
            }
            self.stats.segments_tx += out.len() as u64;
            return out;
        };
        c.idle_at = add(now, IDLE);
        if f.contains(TcpFlags::RST) {
            if seg.seq.wrapping_sub(c.rcv_nxt) < u32::from(WINDOW) {
                self.conns.remove(&key);
                self.stats.events.add(TcpEvent::Reset);
            }
            return out;
        }
        if f.contains(TcpFlags::SYN) {
            // A repeated SYN (our SYN-ACK was lost): answer it again; anything else gets an
            // acknowledgment of where we are (RFC 5961 §4's challenge ACK).
            if c.state == State::SynReceived && seg.seq.wrapping_add(1) == c.rcv_nxt {
                out.push(syn_ack(&key, c, self.mss));
            } else {
                out.push(OutSegment {
                    key,
                    header: header(&key, c.snd_nxt, c.rcv_nxt, TcpFlags::ACK),
                    payload: Vec::new(),
                });
            }
            self.stats.segments_tx += out.len() as u64;
            return out;
        }
        if f.contains(TcpFlags::ACK) {
            acknowledge(c, seg.ack);
            if c.state == State::LastAck && c.fin_sent && c.snd_una == c.snd_nxt {
                self.conns.remove(&key);
                self.stats.events.add(TcpEvent::Closed);
                return out;
            }
        }
        if c.state == State::SynReceived {
            // Data before the handshake completes is not taken.
            return out;
        }
        let mut need_ack = false;
        if !payload.is_empty() || f.contains(TcpFlags::FIN) {
            if seg.seq == c.rcv_nxt {
                c.rx.extend_from_slice(payload);
                c.rcv_nxt = c.rcv_nxt.wrapping_add(payload.len() as u32);
                if f.contains(TcpFlags::FIN) && !c.fin {
                    c.rcv_nxt = c.rcv_nxt.wrapping_add(1);
                    c.fin = true;
                    c.state = State::LastAck;
                }
                let (used, answer) = app(&c.rx);
                c.rx.drain(..used.min(c.rx.len()));
                c.tx.extend(answer);
            } else {
                self.stats.events.add(TcpEvent::OutOfOrder);
            }
            need_ack = true;
        }
        let sent = flush(now, &key, c, &mut out);
        if need_ack && !sent {
            out.push(OutSegment {
                key,
                header: header(&key, c.snd_nxt, c.rcv_nxt, TcpFlags::ACK),
                payload: Vec::new(),
            });
        }
        self.stats.segments_tx += out.len() as u64;
        out
    }

    fn open(&mut self, now: Nanos, key: ConnKey, seg: &TcpRepr, out: &mut Vec<OutSegment>) {
        let iss = self.rng.next_u32();
        let c = Conn {
            state: State::SynReceived,
            snd_una: iss,
            snd_nxt: iss.wrapping_add(1),
            rcv_nxt: seg.seq.wrapping_add(1),
            // RFC 9293 §3.7.1: 536 when the peer names none.
            peer_mss: seg.mss.unwrap_or(536).max(64),
            rx: Vec::new(),
            tx: Vec::new(),
            fin: false,
            fin_sent: false,
            retransmit_at: Some(add(now, RTO)),
            rto: RTO,
            tries: 1,
            idle_at: add(now, IDLE),
        };
        out.push(syn_ack(&key, &c, self.mss));
        self.conns.insert(key, c);
        self.stats.events.add(TcpEvent::Opened);
    }

    /// Retransmissions due and connections given up or idle; the segments to send.
    pub fn poll(&mut self, now: Nanos) -> Vec<OutSegment> {
        let mut out = Vec::new();
        let mut gone = Vec::new();
        for (key, c) in &mut self.conns {
            // Idle only counts with nothing outstanding; the retransmissions decide otherwise.
            match c.retransmit_at {
                Some(t) if t <= now => {}
                Some(_) => continue,
                None if c.idle_at <= now => {
                    gone.push((*key, TcpEvent::Idle));
                    continue;
                }
                None => continue,
            }
            if c.tries >= MAX_TRIES {
                gone.push((*key, TcpEvent::TimedOut));
                continue;
            }
            c.tries += 1;
            c.rto = Nanos(c.rto.0.saturating_mul(2));
            c.retransmit_at = Some(add(now, c.rto));
            self.stats.retransmits += 1;
            if c.state == State::SynReceived {
                out.push(syn_ack(key, c, self.mss));
            } else {
                // Everything outstanding again, from the oldest unacknowledged byte.
                c.snd_nxt = c.snd_una;
                c.fin_sent = false;
                send_new(key, c, &mut out);
            }
        }
        for (key, why) in gone {
            self.conns.remove(&key);
            self.stats.events.add(why);
        }
        self.stats.segments_tx += out.len() as u64;
        out
    }
}

fn syn_ack(key: &ConnKey, c: &Conn, mss: u16) -> OutSegment {
    let mut h = header(
        key,
        c.snd_una,
        c.rcv_nxt,
        TcpFlags(TcpFlags::SYN.0 | TcpFlags::ACK.0),
    );
    h.mss = Some(mss);
    OutSegment {
        key: *key,
        header: h,
        payload: Vec::new(),
    }
}

/// The RST for a segment that belongs to no connection (RFC 9293 §3.10.7.1).
fn reset_for(key: &ConnKey, seg: &TcpRepr, len: usize) -> OutSegment {
    let h = if seg.flags.contains(TcpFlags::ACK) {
        header(key, seg.ack, 0, TcpFlags::RST)
    } else {
        let mut consumed = len as u32;
        if seg.flags.contains(TcpFlags::SYN) {
            consumed += 1;
        }
        if seg.flags.contains(TcpFlags::FIN) {
            consumed += 1;
        }
        header(
            key,
            0,
            seg.seq.wrapping_add(consumed),
            TcpFlags(TcpFlags::RST.0 | TcpFlags::ACK.0),
        )
    };
    OutSegment {
        key: *key,
        header: h,
        payload: Vec::new(),
    }
}

/// Takes an acknowledgment up to `ack`: the SYN, then bytes of `tx`, then our FIN.
fn acknowledge(c: &mut Conn, ack: u32) {
    if before(ack, c.snd_una) || before(c.snd_nxt, ack) {
        return;
    }
    let mut n = ack.wrapping_sub(c.snd_una);
    if n == 0 {
        return;
    }
    c.snd_una = ack;
    if c.state == State::SynReceived {
        c.state = State::Established;
        n -= 1;
    }
    let data = (n as usize).min(c.tx.len());
    c.tx.drain(..data);
    // Whatever is left of `n` is our FIN.
    if c.snd_una == c.snd_nxt {
        c.retransmit_at = None;
        c.tries = 0;
        c.rto = RTO;
    } else {
        c.tries = 1;
    }
}

/// Sends what of `tx` (and our FIN) has not been sent; whether anything was.
fn flush(now: Nanos, key: &ConnKey, c: &mut Conn, out: &mut Vec<OutSegment>) -> bool {
    let before_len = out.len();
    send_new(key, c, out);
    let sent = out.len() > before_len;
    if sent && c.retransmit_at.is_none() {
        c.retransmit_at = Some(add(now, c.rto));
        c.tries = 1;
    }
    sent
}

/// Segments for the bytes of `tx` past `snd_nxt` (at most the peer's MSS each), the last
/// with our FIN when it is due.
fn send_new(key: &ConnKey, c: &mut Conn, out: &mut Vec<OutSegment>) {
    let sent = c.snd_nxt.wrapping_sub(c.snd_una) as usize;
    // In LastAck after a FIN that was sent, `sent` counts it: nothing new then.
    let mut at = sent.min(c.tx.len());
    let mss = usize::from(c.peer_mss);
    while at < c.tx.len() {
        let end = (at + mss).min(c.tx.len());
        let last = end == c.tx.len();
        let with_fin = last && c.fin && !c.fin_sent;
        let mut flags = TcpFlags(TcpFlags::ACK.0 | TcpFlags::PSH.0);
        if with_fin {
            flags = TcpFlags(flags.0 | TcpFlags::FIN.0);
            c.fin_sent = true;
        }
        let seq = c.snd_una.wrapping_add(at as u32);
        out.push(OutSegment {
            key: *key,
            header: header(key, seq, c.rcv_nxt, flags),
            payload: c.tx[at..end].to_vec(),
        });
        c.snd_nxt = c
            .snd_una
            .wrapping_add(end as u32)
            .wrapping_add(u32::from(with_fin));
        at = end;
    }
    if c.fin && !c.fin_sent {
        let seq = c.snd_una.wrapping_add(c.tx.len() as u32);
        out.push(OutSegment {
            key: *key,
            header: header(
                key,
                seq,
                c.rcv_nxt,
                TcpFlags(TcpFlags::FIN.0 | TcpFlags::ACK.0),
            ),
            payload: Vec::new(),
        });
        c.fin_sent = true;
        c.snd_nxt = seq.wrapping_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::Entropy;
    use core::net::Ipv4Addr;

    fn key() -> ConnKey {
        ConnKey {
            local: Ipv4Addr::new(203, 0, 113, 53).into(),
            local_port: 53,
            remote: Ipv4Addr::new(198, 51, 100, 10).into(),
            remote_port: 40000,
        }
    }

    fn seg(seq: u32, ack: u32, flags: TcpFlags) -> TcpRepr {
        TcpRepr {
            src_port: 40000,
            dst_port: 53,
            seq,
            ack,
            flags,
            window: 64240,
            urgent: 0,
            mss: None,
        }
    }

    const ACK: TcpFlags = TcpFlags::ACK;
    fn fl(a: TcpFlags, b: TcpFlags) -> TcpFlags {
        TcpFlags(a.0 | b.0)
    }

    /// An application that answers each 4-byte request "ping" with "pong!" and keeps a
    /// partial request for later.
    fn pong(b: &[u8]) -> (usize, Vec<u8>) {
        let whole = b.len() / 4 * 4;
        (whole, b"pong!".repeat(whole / 4))
    }

    fn server() -> TcpServer {
        TcpServer::new(Rng::from_entropy(Entropy::Seeded(3)), 1460)
    }

    fn ms(n: u64) -> Nanos {
        Nanos(n * 1_000_000)
    }

    #[test]
    fn handshake_request_answer_and_the_clients_close() {
        let mut s = server();
        let mut syn = seg(1000, 0, TcpFlags::SYN);
        syn.mss = Some(1400);
        let o = s.segment(ms(0), key(), &syn, &[], &mut pong);
        assert_eq!(o.len(), 1);
        let sa = o[0].header;
        assert_eq!(sa.flags.0, TcpFlags::SYN.0 | TcpFlags::ACK.0);
        assert_eq!(
            (sa.ack, sa.mss, sa.src_port, sa.dst_port),
            (1001, Some(1460), 53, 40000)
        );
        let iss = sa.seq;
        // The handshake's ACK, then a request in two pieces.
        assert!(s
            .segment(ms(1), key(), &seg(1001, iss + 1, ACK), &[], &mut pong)
            .is_empty());
        let o = s.segment(ms(2), key(), &seg(1001, iss + 1, ACK), b"pi", &mut pong);
        assert_eq!(o.len(), 1, "a pure ACK for the partial request");
        assert_eq!((o[0].header.ack, o[0].payload.len()), (1003, 0));
        let o = s.segment(ms(3), key(), &seg(1003, iss + 1, ACK), b"ng", &mut pong);
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].payload, b"pong!");
        assert_eq!((o[0].header.seq, o[0].header.ack), (iss + 1, 1005));
        assert!(o[0].header.flags.contains(TcpFlags::PSH));
        // The client acknowledges and closes: we ACK its FIN with our FIN.
        assert!(s
            .segment(ms(4), key(), &seg(1005, iss + 6, ACK), &[], &mut pong)
            .is_empty());
        let o = s.segment(
            ms(5),
            key(),
            &seg(1005, iss + 6, fl(TcpFlags::FIN, ACK)),
            &[],
            &mut pong,
        );
        assert_eq!(o.len(), 1);
        assert_eq!(o[0].header.flags.0, TcpFlags::FIN.0 | ACK.0);
        assert_eq!((o[0].header.seq, o[0].header.ack), (iss + 6, 1006));
        assert_eq!(s.len(), 1);
        assert!(s
            .segment(ms(6), key(), &seg(1006, iss + 7, ACK), &[], &mut pong)
            .is_empty());
        assert!(s.is_empty());
        assert_eq!(s.stats.events.get(TcpEvent::Closed), 1);
        assert_eq!(s.next_deadline(), None);
    }

    #[test]
    fn lost_answers_are_sent_again_then_given_up() {
        let mut s = server();
        let iss = s.segment(ms(0), key(), &seg(1, 0, TcpFlags::SYN), &[], &mut pong)[0]
            .header
            .seq;
        // The SYN-ACK is lost: a repeated SYN gets it again; so does the timer.
        let o = s.segment(ms(500), key(), &seg(1, 0, TcpFlags::SYN), &[], &mut pong);
        assert_eq!(o[0].header.seq, iss);
        assert_eq!(s.next_deadline(), Some(ms(1000)));
        let o = s.poll(ms(1000));
        assert_eq!(
            (o.len(), o[0].header.flags.contains(TcpFlags::SYN)),
            (1, true)
        );
        s.segment(ms(1100), key(), &seg(2, iss + 1, ACK), &[], &mut pong);
        let o = s.segment(ms(1200), key(), &seg(2, iss + 1, ACK), b"ping", &mut pong);
        assert_eq!(o[0].payload, b"pong!");
        // Unacknowledged: sent again at 1 s, 2 s, 4 s, 8 s after, then given up.
        let mut t = 1200;
        for (i, wait) in [1000u64, 2000, 4000, 8000].into_iter().enumerate() {
            t += wait;
            assert_eq!(s.next_deadline(), Some(ms(t)), "try {}", i + 2);
            let o = s.poll(ms(t));
            assert_eq!(o.len(), 1);
            assert_eq!(
                (o[0].header.seq, &o[0].payload[..]),
                (iss + 1, &b"pong!"[..])
            );
        }
        t += 16000;
        assert!(s.poll(ms(t)).is_empty());
        assert!(s.is_empty());
        assert_eq!(s.stats.events.get(TcpEvent::TimedOut), 1);
        assert_eq!(s.stats.retransmits, 5);
    }

    #[test]
    fn out_of_order_strangers_resets_mss_and_idle() {
        let mut s = server();
        let mut syn = seg(100, 0, TcpFlags::SYN);
        syn.mss = Some(3);
        let iss = s.segment(ms(0), key(), &syn, &[], &mut pong)[0].header.seq;
        s.segment(ms(1), key(), &seg(101, iss + 1, ACK), &[], &mut pong);
        // A segment from the future is acknowledged at where we are, not kept.
        let o = s.segment(ms(2), key(), &seg(105, iss + 1, ACK), b"ping", &mut pong);
        assert_eq!((o.len(), o[0].header.ack, o[0].payload.len()), (1, 101, 0));
        assert_eq!(s.stats.events.get(TcpEvent::OutOfOrder), 1);
        // The peer's MSS (64, the least we take) splits 20 answers (100 bytes) in 64 + 36.
        let o = s.segment(
            ms(3),
            key(),
            &seg(101, iss + 1, ACK),
            &b"ping".repeat(20),
            &mut pong,
        );
        let parts: Vec<usize> = o.iter().map(|x| x.payload.len()).collect();
        assert_eq!(parts, [64, 36]);
        assert_eq!(o[1].header.seq, iss + 65);
        // A partial acknowledgment keeps the rest outstanding, sent again from there.
        s.segment(ms(4), key(), &seg(181, iss + 4, ACK), &[], &mut pong);
        let o = s.poll(ms(1003));
        let parts: Vec<(u32, usize)> = o.iter().map(|x| (x.header.seq, x.payload.len())).collect();
        assert_eq!(parts, [(iss + 4, 64), (iss + 68, 33)]);
        // All acknowledged, then nothing heard for 30 s: dropped.
        s.segment(ms(5), key(), &seg(181, iss + 101, ACK), &[], &mut pong);
        assert_eq!(s.next_deadline(), Some(ms(5 + 30_000)));
        assert!(s.poll(ms(5 + 30_000)).is_empty());
        assert!(s.is_empty());
        assert_eq!(s.stats.events.get(TcpEvent::Idle), 1);
        // A stranger's ACK gets a RST with its acknowledgment number as sequence.
        let o = s.segment(ms(0), key(), &seg(7, 77, ACK), b"x", &mut pong);
        assert_eq!(
            (o[0].header.flags.0, o[0].header.seq),
            (TcpFlags::RST.0, 77)
        );
        // A RST inside the window ends a connection; one outside it does not.
        let iss = s.segment(ms(0), key(), &seg(500, 0, TcpFlags::SYN), &[], &mut pong)[0]
            .header
            .seq;
        s.segment(ms(1), key(), &seg(501, iss + 1, ACK), &[], &mut pong);
        s.segment(
            ms(2),
            key(),
            &seg(501 + 70_000, 0, TcpFlags::RST),
            &[],
            &mut pong,
        );
        assert_eq!(s.len(), 1);
        s.segment(ms(3), key(), &seg(501, 0, TcpFlags::RST), &[], &mut pong);
        assert!(s.is_empty());
        assert_eq!(s.stats.events.get(TcpEvent::Reset), 1);
    }

    #[test]
    fn at_most_max_conns() {
        let mut s = server();
        for p in 0..MAX_CONNS as u16 {
            let mut k = key();
            k.remote_port = 1000 + p;
            s.segment(ms(0), k, &seg(1, 0, TcpFlags::SYN), &[], &mut pong);
        }
        let mut k = key();
        k.remote_port = 9;
        let o = s.segment(ms(0), k, &seg(1, 0, TcpFlags::SYN), &[], &mut pong);
        assert_eq!(o[0].header.flags.0, TcpFlags::RST.0 | ACK.0);
        assert_eq!(o[0].header.ack, 2);
        assert_eq!(s.stats.events.get(TcpEvent::Full), 1);
    }
}
