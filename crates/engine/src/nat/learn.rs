//! The responder's table of learned translations (issue #15 item 2, RFC 9693 "Test Phases"):
//! which (translated) 4-tuple each preliminary-phase frame arrived with, by its creation index.
//!
//! The creation index is the frame's sequence number: the initiator sends connection k as the
//! k-th frame of its stream, and the signature carries k through any NAT (DESIGN.md §5), so the
//! responder needs no header the NAT may rewrite to know *which* connection a frame opened.
//! What the NAT did rewrite — the source address and port it chose — is exactly what is
//! learned, and what the validation frame is then sent back to.
//!
//! Pure: fed frames, no I/O.

use std::net::IpAddr;

use wire::dissect;

/// One connection's 4-tuple as the responder saw it (UDP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Tuple {
    /// The source as it arrived: after a NAT, the DUT's public address.
    pub src: IpAddr,
    /// The source port as it arrived: after a NAPT, the port the DUT chose.
    pub src_port: u16,
    /// The destination (the responder's own address).
    pub dst: IpAddr,
    pub dst_port: u16,
}

impl Tuple {
    /// The tuple of a UDP test frame, with its stream id and 32-bit sequence number; `None`
    /// for anything else (ARP, a fragment, a frame without our signature).
    pub fn of_frame(frame: &[u8]) -> Option<(Tuple, u16, u32)> {
        let (d, sig) = dissect::signature(frame)?;
        let udp = d.udp_offset?;
        let port = |at: usize| Some(u16::from_be_bytes([*frame.get(at)?, *frame.get(at + 1)?]));
        let t = Tuple {
            src: d.src,
            src_port: port(udp)?,
            dst: d.dst,
            dst_port: port(udp + 2)?,
        };
        Some((t, sig.stream_id(), sig.seq32()))
    }
}

/// The tuples learned in one preliminary phase of `connections` connections.
#[derive(Debug, Clone)]
pub struct Learned {
    stream_id: u16,
    tuples: Vec<Option<Tuple>>,
    distinct: u64,
    duplicates: u64,
    out_of_range: u64,
}

impl Learned {
    /// An empty table for `connections` connections sent as stream `stream_id` (`connections`
    /// must fit in memory: one slot per connection, up to a few tens of bytes each).
    pub fn new(stream_id: u16, connections: u64) -> Learned {
        Learned {
            stream_id,
            tuples: vec![None; connections as usize],
            distinct: 0,
            duplicates: 0,
            out_of_range: 0,
        }
    }

    /// Learns from one received frame; returns true when it was a preliminary frame of this
    /// stream (learned, or counted as a duplicate or out of range).
    pub fn observe(&mut self, frame: &[u8]) -> bool {
        match Tuple::of_frame(frame) {
            Some((t, id, seq)) if id == self.stream_id => {
                self.record(u64::from(seq), t);
                true
            }
            _ => false,
        }
    }

    /// Records that connection `index` arrived with tuple `t`. The first arrival stands: a
    /// second frame for the same connection is a duplicate (the initiator sends one each).
    pub fn record(&mut self, index: u64, t: Tuple) {
        match self.tuples.get_mut(index as usize) {
            None => self.out_of_range += 1,
            Some(Some(_)) => self.duplicates += 1,
            Some(slot) => {
                *slot = Some(t);
                self.distinct += 1;
            }
        }
    }

    /// Adds frames another learner counted (the XDP learner of [`super::prelim_xdp`], which
    /// records tuples in the kernel): `duplicates` for connections it had already learned,
    /// `out_of_range` past N.
    pub fn count_elsewhere(&mut self, duplicates: u64, out_of_range: u64) {
        self.duplicates += duplicates;
        self.out_of_range += out_of_range;
    }

    /// Distinct connections learned.
    pub fn distinct(&self) -> u64 {
        self.distinct
    }

    /// Frames for a connection already learned.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    /// Frames whose index is past the phase's N (not from this phase).
    pub fn out_of_range(&self) -> u64 {
        self.out_of_range
    }

    /// The tuple connection `index` arrived with, if it arrived.
    pub fn get(&self, index: u64) -> Option<Tuple> {
        self.tuples.get(index as usize).copied().flatten()
    }

    /// Learned connections in creation order: (index, tuple).
    pub fn iter(&self) -> impl Iterator<Item = (u64, Tuple)> + '_ {
        self.tuples
            .iter()
            .enumerate()
            .filter_map(|(i, t)| t.map(|t| (i as u64, t)))
    }

    /// How many learned tuples have a source other than `sent_from` — the connections a NAT
    /// translated (0 through a stateful filter that does not translate).
    pub fn translated_from(&self, sent_from: IpAddr) -> u64 {
        self.iter().filter(|(_, t)| t.src != sent_from).count() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::tests_support::signed_frame;

    #[test]
    fn learns_the_arrived_tuple_by_sequence() {
        let t = signed_frame(60, 5);
        let mut f = t.bytes().to_vec();
        t.stamp(&mut f, 3, 0);
        let mut l = Learned::new(5, 4);
        assert!(l.observe(&f));
        let got = l.get(3).unwrap();
        assert_eq!(got.src, IpAddr::from([192, 0, 2, 1]));
        assert_eq!((got.src_port, got.dst_port), (1024, 7));
        assert_eq!(l.distinct(), 1);
        // The same connection again is a duplicate; another stream is not ours.
        assert!(l.observe(&f));
        assert_eq!((l.distinct(), l.duplicates()), (1, 1));
        let other = signed_frame(60, 6);
        assert!(!l.observe(other.bytes()));
        // An index past N is counted, not stored.
        t.stamp(&mut f, 9, 0);
        assert!(l.observe(&f));
        assert_eq!(l.out_of_range(), 1);
        assert_eq!(l.iter().map(|(i, _)| i).collect::<Vec<_>>(), vec![3]);
        assert_eq!(l.translated_from(IpAddr::from([192, 0, 2, 1])), 0);
        assert_eq!(l.translated_from(IpAddr::from([192, 0, 2, 9])), 1);
    }

    #[test]
    fn arp_and_garbage_are_not_learned() {
        let mut l = Learned::new(1, 10);
        assert!(!l.observe(&[0u8; 60]));
        assert!(!l.observe(&[]));
        assert_eq!(l.distinct(), 0);
    }
}
