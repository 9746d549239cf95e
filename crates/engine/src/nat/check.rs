//! The initiator's count of validated connections: which creation indices came back, each on
//! the tuple the connection was opened from (the DUT undid its translation), and which did not.

use std::net::IpAddr;

use super::learn::Tuple;
use crate::flowset::FlowSet;

/// The tuple the initiator opened connection `index` from, i.e. where its reply must arrive.
#[derive(Debug, Clone, Copy)]
pub struct Opened {
    /// The flow set the preliminary frames walked (source port fastest).
    pub flows: FlowSet,
    /// The initiator's address and the base ports of the preliminary stream.
    pub addr: IpAddr,
    pub base_src_port: u16,
    pub base_dst_port: u16,
}

impl Opened {
    /// (source port, destination port) of connection `index` as the initiator sent it.
    pub fn ports(&self, index: u64) -> (u16, u16) {
        let o = self.flows.offsets(index);
        (
            self.base_src_port.wrapping_add(o.src_port as u16),
            self.base_dst_port.wrapping_add(o.dst_port as u16),
        )
    }
}

/// Which connections validated.
#[derive(Debug, Clone)]
pub struct Validated {
    stream_id: u16,
    opened: Opened,
    seen: Vec<bool>,
    count: u64,
    duplicates: u64,
    /// Replies that arrived for a connection but not on its original tuple.
    misdirected: u64,
    out_of_range: u64,
}

/// Connections that did not validate, by creation index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Failed {
    pub count: u64,
    pub first: u64,
    pub last: u64,
}

impl Validated {
    /// An empty count for `connections` connections opened as `opened`, whose validation
    /// frames carry stream id `stream_id`.
    pub fn new(stream_id: u16, connections: u64, opened: Opened) -> Validated {
        Validated {
            stream_id,
            opened,
            seen: vec![false; connections as usize],
            count: 0,
            duplicates: 0,
            misdirected: 0,
            out_of_range: 0,
        }
    }

    /// Counts one received frame; true when it was a validation frame of this stream.
    pub fn observe(&mut self, frame: &[u8]) -> bool {
        let Some((t, id, seq)) = Tuple::of_frame(frame) else {
            return false;
        };
        if id != self.stream_id {
            return false;
        }
        self.record(u64::from(seq), &t);
        true
    }

    /// Counts the reply to connection `index` that arrived as `t`.
    pub fn record(&mut self, index: u64, t: &Tuple) {
        let Some(slot) = self.seen.get_mut(index as usize) else {
            self.out_of_range += 1;
            return;
        };
        let (sport, dport) = self.opened.ports(index);
        if t.dst != self.opened.addr || t.dst_port != sport || t.src_port != dport {
            self.misdirected += 1;
        } else if *slot {
            self.duplicates += 1;
        } else {
            *slot = true;
            self.count += 1;
        }
    }

    /// Connections validated (each counted once, on its own tuple).
    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn duplicates(&self) -> u64 {
        self.duplicates
    }

    pub fn misdirected(&self) -> u64 {
        self.misdirected
    }

    pub fn out_of_range(&self) -> u64 {
        self.out_of_range
    }

    /// The connections that did not validate: how many, the lowest and the highest index.
    pub fn failed(&self) -> Option<Failed> {
        let mut f: Option<Failed> = None;
        for (i, _) in self.seen.iter().enumerate().filter(|(_, s)| !**s) {
            let i = i as u64;
            f = Some(match f {
                None => Failed {
                    count: 1,
                    first: i,
                    last: i,
                },
                Some(f) => Failed {
                    count: f.count + 1,
                    last: i,
                    ..f
                },
            });
        }
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opened() -> Opened {
        Opened {
            flows: FlowSet::new(1, 1, 100, 3, None).unwrap(),
            addr: IpAddr::from([198, 51, 100, 2]),
            base_src_port: 1024,
            base_dst_port: 9,
        }
    }

    fn reply_to(o: &Opened, index: u64) -> Tuple {
        let (s, d) = o.ports(index);
        Tuple {
            src: IpAddr::from([203, 0, 113, 2]),
            src_port: d,
            dst: o.addr,
            dst_port: s,
        }
    }

    #[test]
    fn counts_replies_on_the_opened_tuple_and_spans_the_rest() {
        let o = opened();
        assert_eq!(o.ports(0), (1024, 9));
        assert_eq!(o.ports(101), (1025, 10), "source port fastest");
        let mut v = Validated::new(2, 10, o);
        for i in 0..7 {
            v.record(i, &reply_to(&o, i));
        }
        v.record(3, &reply_to(&o, 3));
        // A reply for connection 8 that arrives on connection 9's ports is not a validation.
        v.record(8, &reply_to(&o, 9));
        v.record(12, &reply_to(&o, 12));
        assert_eq!(v.count(), 7);
        assert_eq!(
            (v.duplicates(), v.misdirected(), v.out_of_range()),
            (1, 1, 1)
        );
        assert_eq!(
            v.failed(),
            Some(Failed {
                count: 3,
                first: 7,
                last: 9
            })
        );
        for i in 7..10 {
            v.record(i, &reply_to(&o, i));
        }
        assert_eq!(v.failed(), None);
    }
}
