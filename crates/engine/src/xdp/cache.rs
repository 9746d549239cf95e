//! Loaded BPF objects kept for the next trial of this process (issue 36).
//!
//! Loading an object costs far more than a trial's traffic setup: aya parses the kernel's BTF
//! for every `EbpfLoader::load` and the verifier walks the program (measured 2026-11-29 on the
//! forward lab: about 0.25 s for the receiver, 0.05–0.2 s for the sender, every trial). A
//! program does not depend on the trial: only its maps do. So a receiver or sender that is
//! done gives its loaded object back here ([`Idle::put`]), and the next one of the same shape
//! takes it ([`Idle::take`]), resets the maps the new trial will use and writes its own values
//! before the program can see a frame (`xdp::rx`, `xdp::tx`: "Loaded once").
//!
//! An object is given back only once its owner has detached it from every interface; one that
//! could not be detached or reset is dropped (closed) instead, so it can never count another
//! trial's frames. The kernel frees everything when the process ends.

use std::sync::Mutex;

/// Most idle objects kept per kind (beyond that, the oldest is closed): enough for the
/// receivers and senders of one trial's ports, with room for a second shape.
const MAX_IDLE: usize = 8;

/// Idle loaded objects of one kind, each with the shape (`K`: its map sizes) it was loaded for.
pub(crate) struct Idle<K, T> {
    objects: Mutex<Vec<(K, T)>>,
}

impl<K: PartialEq, T> Idle<K, T> {
    pub(crate) const fn new() -> Self {
        Idle {
            objects: Mutex::new(Vec::new()),
        }
    }

    /// An idle object loaded for `key`, if one is kept (the most recently given back).
    pub(crate) fn take(&self, key: &K) -> Option<T> {
        let mut v = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        let i = v.iter().rposition(|(k, _)| k == key)?;
        Some(v.remove(i).1)
    }

    /// Keeps `object` (loaded for `key`, detached) for a later [`take`](Self::take).
    pub(crate) fn put(&self, key: K, object: T) {
        let mut v = self.objects.lock().unwrap_or_else(|e| e.into_inner());
        if v.len() >= MAX_IDLE {
            v.remove(0);
        }
        v.push((key, object));
    }

    /// Idle objects kept now (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.objects.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_object_is_taken_only_for_its_own_shape_and_only_once() {
        let idle: Idle<u32, &str> = Idle::new();
        assert_eq!(idle.take(&4), None);
        idle.put(4, "a");
        idle.put(8, "b");
        assert_eq!(idle.take(&16), None);
        assert_eq!(idle.take(&8), Some("b"));
        assert_eq!(idle.take(&8), None);
        idle.put(4, "c");
        // The most recently given back first.
        assert_eq!(idle.take(&4), Some("c"));
        assert_eq!(idle.take(&4), Some("a"));
        assert_eq!(idle.len(), 0);
    }

    #[test]
    fn at_most_max_idle_are_kept_the_oldest_closed_first() {
        let idle: Idle<u32, usize> = Idle::new();
        for i in 0..MAX_IDLE + 2 {
            idle.put(1, i);
        }
        assert_eq!(idle.len(), MAX_IDLE);
        let mut got = Vec::new();
        while let Some(i) = idle.take(&1) {
            got.push(i);
        }
        assert_eq!(got, (2..MAX_IDLE + 2).rev().collect::<Vec<_>>());
    }
}
