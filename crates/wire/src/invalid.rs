//! Why a signed frame of an expected stream does not count as received, and how many frames
//! failed for each reason. The checks themselves are the engine's (`engine::validate`); the
//! reasons are shared vocabulary: a receiver counts them, a result record stores them and a
//! report prints them, so they live here where every crate can use them.

use serde::{Deserialize, Serialize};

/// Why a signed frame of an expected stream was not counted as received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Invalid {
    /// IPv4 header or UDP checksum wrong (UDP checksum zero over IPv6).
    Checksum,
    /// IP, UDP or PPPoE length inconsistent with the frame.
    Length,
    /// Tags, MPLS, PPPoE, tunnel or IP version not what the stream was sent with.
    Encapsulation,
    /// An IP fragment where the stream is not expected to be fragmented.
    Fragment,
    /// Destination address or port outside the stream's.
    Address,
    /// Sequence number outside what the stream can have sent.
    Sequence,
    /// Send timestamp in the future, or before the trial started.
    Timestamp,
}

impl Invalid {
    pub const ALL: [Invalid; 7] = [
        Invalid::Checksum,
        Invalid::Length,
        Invalid::Encapsulation,
        Invalid::Fragment,
        Invalid::Address,
        Invalid::Sequence,
        Invalid::Timestamp,
    ];

    /// The reason's name in reports and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Invalid::Checksum => "checksum",
            Invalid::Length => "length",
            Invalid::Encapsulation => "encapsulation",
            Invalid::Fragment => "fragment",
            Invalid::Address => "address",
            Invalid::Sequence => "sequence",
            Invalid::Timestamp => "timestamp",
        }
    }

    /// Index in the XDP receiver's per-stream counters (`bpf/rx.bpf.c`, `C_INV_*`).
    pub fn index(self) -> usize {
        self as usize
    }
}

/// Invalid frames of one stream (or summed over streams) by reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct InvalidCounts {
    pub checksum: u64,
    pub length: u64,
    pub encapsulation: u64,
    pub fragment: u64,
    pub address: u64,
    pub sequence: u64,
    pub timestamp: u64,
}

impl InvalidCounts {
    fn slot(&mut self, r: Invalid) -> &mut u64 {
        match r {
            Invalid::Checksum => &mut self.checksum,
            Invalid::Length => &mut self.length,
            Invalid::Encapsulation => &mut self.encapsulation,
            Invalid::Fragment => &mut self.fragment,
            Invalid::Address => &mut self.address,
            Invalid::Sequence => &mut self.sequence,
            Invalid::Timestamp => &mut self.timestamp,
        }
    }

    #[inline]
    pub fn add(&mut self, r: Invalid) {
        *self.slot(r) += 1;
    }

    pub fn add_n(&mut self, r: Invalid, n: u64) {
        *self.slot(r) += n;
    }

    pub fn get(&self, r: Invalid) -> u64 {
        let mut c = *self;
        *c.slot(r)
    }

    pub fn is_zero(&self) -> bool {
        *self == InvalidCounts::default()
    }

    pub fn total(&self) -> u64 {
        Invalid::ALL.iter().map(|&r| self.get(r)).sum()
    }

    pub fn merge(&mut self, o: &InvalidCounts) {
        for r in Invalid::ALL {
            self.add_n(r, o.get(r));
        }
    }

    /// "3 checksum, 1 fragment" (reasons with a count only); empty when all are zero.
    pub fn describe(&self) -> String {
        Invalid::ALL
            .iter()
            .filter(|&&r| self.get(r) > 0)
            .map(|&r| format!("{} {}", self.get(r), r.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_by_reason_add_up() {
        let mut c = InvalidCounts::default();
        for (i, r) in Invalid::ALL.iter().enumerate() {
            c.add_n(*r, i as u64 + 1);
            assert_eq!(r.index(), i);
        }
        assert_eq!(c.total(), 28);
        let mut d = c;
        d.merge(&c);
        assert_eq!(d.total(), 56);
        assert_eq!(
            c.describe(),
            "1 checksum, 2 length, 3 encapsulation, 4 fragment, 5 address, 6 sequence, 7 timestamp"
        );
        assert_eq!(InvalidCounts::default().describe(), "");
    }
}
