//! The lease table of a [`super::Dhcpv4Server`]: which client holds which pool index, in
//! which state and until when, and which indices a DECLINE keeps out. It knows pool indices,
//! not addresses, and decides nothing about messages: the server's state machine does.

use std::collections::BTreeMap;

use wire::ethernet::MacAddr;
use wire::units::Nanos;

/// What a lease table entry holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum State {
    /// Offered, held until the deadline.
    Offered,
    /// Bound (ACKed), until the deadline.
    Bound,
    /// Released or expired: the address is free, remembered so the client gets it back.
    Free,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Lease {
    pub(super) index: u32,
    pub(super) mac: MacAddr,
    pub(super) state: State,
    pub(super) until: Nanos,
}

/// Leases by client key (its identifier, or `01` + MAC).
#[derive(Debug, Default)]
pub(super) struct LeaseTable {
    leases: BTreeMap<Vec<u8>, Lease>,
    /// Pool index → the client whose Offered/Bound lease holds it.
    taken: BTreeMap<u32, Vec<u8>>,
    /// Declined pool indices and until when they stay out.
    declined: BTreeMap<u32, Nanos>,
}

impl LeaseTable {
    /// `key`'s lease in whatever state (a Free one remembers the client's last address).
    pub(super) fn get(&self, key: &[u8]) -> Option<&Lease> {
        self.leases.get(key)
    }

    /// The bound leases: (pool index, client MAC), in index order.
    pub(super) fn bound(&self) -> impl Iterator<Item = (u32, MacAddr)> + '_ {
        self.taken.iter().filter_map(|(&i, k)| {
            let l = self.leases.get(k)?;
            (l.state == State::Bound).then_some((i, l.mac))
        })
    }

    /// The client bound to pool index `i`, if any.
    pub(super) fn bound_at(&self, i: u32) -> Option<MacAddr> {
        let l = self.leases.get(self.taken.get(&i)?)?;
        (l.state == State::Bound).then_some(l.mac)
    }

    /// How many leases are bound.
    pub(super) fn bound_count(&self) -> u64 {
        self.leases
            .values()
            .filter(|l| l.state == State::Bound)
            .count() as u64
    }

    /// When the next offer, lease or decline runs out.
    pub(super) fn next_deadline(&self) -> Option<Nanos> {
        self.leases
            .values()
            .filter(|l| l.state != State::Free)
            .map(|l| l.until)
            .chain(self.declined.values().copied())
            .min()
    }

    /// Frees the offers and leases that ran out by `now` and ends the declines that are
    /// over; the leases that were bound, with their keys (what the server reports expired).
    pub(super) fn expire(&mut self, now: Nanos) -> Vec<(Vec<u8>, Lease)> {
        let due: Vec<Vec<u8>> = self
            .leases
            .iter()
            .filter(|(_, l)| l.state != State::Free && l.until <= now)
            .map(|(k, _)| k.clone())
            .collect();
        let mut expired = Vec::new();
        for k in due {
            let Some(l) = self.leases.get_mut(&k) else {
                continue;
            };
            let before = *l;
            l.state = State::Free;
            self.taken.remove(&before.index);
            if before.state == State::Bound {
                expired.push((k, before));
            }
        }
        self.declined.retain(|_, until| *until > now);
        expired
    }

    /// Whether pool index `i` may go to `key`: not another's, not declined.
    pub(super) fn free_for(&self, i: u32, key: &[u8]) -> bool {
        !self.declined.contains_key(&i) && self.taken.get(&i).map_or(true, |k| k == key)
    }

    /// The lowest index below `pool_size` free for `key` (a scan: an IPoE port serves a few
    /// gateways).
    pub(super) fn lowest_free(&self, pool_size: u32, key: &[u8]) -> Option<u32> {
        (0..pool_size).find(|&i| self.free_for(i, key))
    }

    /// Holds index `i` for `key` in `state` until `until`.
    pub(super) fn hold(&mut self, key: &[u8], mac: MacAddr, i: u32, state: State, until: Nanos) {
        if let Some(old) = self.leases.get(key) {
            if old.index != i && old.state != State::Free {
                self.taken.remove(&old.index);
            }
        }
        self.taken.insert(i, key.to_vec());
        self.leases.insert(
            key.to_vec(),
            Lease {
                index: i,
                mac,
                state,
                until,
            },
        );
    }

    /// Frees `key`'s lease (its address stays remembered for the client); the lease as it
    /// was, or None when it held nothing.
    pub(super) fn free(&mut self, key: &[u8]) -> Option<Lease> {
        let l = self.leases.get_mut(key)?;
        if l.state == State::Free {
            return None;
        }
        let before = *l;
        l.state = State::Free;
        self.taken.remove(&before.index);
        Some(before)
    }

    /// Keeps pool index `i` out of the pool until `until` and forgets `key`'s lease: a
    /// declined address is not the client's to come back to.
    pub(super) fn decline(&mut self, key: &[u8], i: u32, until: Nanos) {
        self.declined.insert(i, until);
        self.leases.remove(key);
    }
}
