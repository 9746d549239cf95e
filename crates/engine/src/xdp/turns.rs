//! Turns between XDP senders that share one CPU: at most one of them is inside a
//! `BPF_PROG_RUN` call at a time, and when both want the CPU they alternate call by call.
//!
//! Why: a kernel-paced sender spins through its calls (each about a window of its schedule,
//! mostly idle iterations waiting for the next frame, `xdp::tx`). Two such senders pinned to
//! the one tester CPU of a 2-vCPU machine (the other is the DUT's) are time-shared by the
//! scheduler in slices of milliseconds, and a sender that waits longer than its debt cap
//! (10 ms) slips its schedule: measured on the lab NAPT, both directions of the
//! `nat-throughput` load offered 64,000 of the 75,500 frames/s asked. Taking turns call by
//! call, each sender waits one short window of the other's, and catches up at once.

use std::sync::{Condvar, Mutex};

/// A gate for `parties` senders (indices 0..parties).
#[derive(Debug)]
pub struct Turns {
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Debug)]
struct State {
    /// A sender is inside a call.
    busy: bool,
    /// The sender that went last.
    last: Option<usize>,
    waiting: Vec<bool>,
    /// Every turn given, with whether another sender was waiting then (tests only).
    #[cfg(test)]
    granted: Vec<(usize, bool)>,
}

impl Turns {
    pub fn new(parties: usize) -> Turns {
        Turns {
            state: Mutex::new(State {
                busy: false,
                last: None,
                waiting: vec![false; parties],
                #[cfg(test)]
                granted: Vec::new(),
            }),
            cv: Condvar::new(),
        }
    }

    /// Waits until `me` may make a call: nobody is in one, and if another sender waits, `me`
    /// did not go last.
    pub fn take(&self, me: usize) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(w) = s.waiting.get_mut(me) {
            *w = true;
        }
        loop {
            let other_waits = s.waiting.iter().enumerate().any(|(i, &w)| w && i != me);
            // Free, and not my second call in a row while another sender waits.
            let went_last = s.last == Some(me);
            let my_turn = !(s.busy || other_waits && went_last);
            if my_turn {
                #[cfg(test)]
                s.granted.push((me, other_waits));
                break;
            }
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.busy = true;
        s.last = Some(me);
        if let Some(w) = s.waiting.get_mut(me) {
            *w = false;
        }
    }

    /// Ends `me`'s call.
    pub fn release(&self) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.busy = false;
        drop(s);
        self.cv.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn one_call_at_a_time_and_alternating_when_both_want() {
        let t = Turns::new(2);
        let inside = AtomicUsize::new(0);
        let order = Mutex::new(Vec::new());
        let start = std::sync::Barrier::new(2);
        std::thread::scope(|sc| {
            for me in 0..2 {
                let (t, inside, order, start) = (&t, &inside, &order, &start);
                sc.spawn(move || {
                    start.wait();
                    for _ in 0..200 {
                        t.take(me);
                        assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0);
                        order.lock().unwrap().push(me);
                        std::thread::sleep(std::time::Duration::from_micros(50));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        t.release();
                    }
                });
            }
        });
        let order = order.into_inner().unwrap();
        assert_eq!(order.len(), 400);
        // While the other wanted a turn, nobody went twice in a row. Judged on what `take`
        // saw when it gave each turn, not on timing: a thread held off its CPU between
        // `release` and its next `take` is not waiting, and the other rightly goes again.
        // Without turns the releasing thread takes the lock again at once, other waiting.
        let granted = t.state.into_inner().unwrap().granted;
        assert_eq!(granted.iter().map(|g| g.0).collect::<Vec<_>>(), order);
        let unfair = granted
            .windows(2)
            .filter(|w| w[0].0 == w[1].0 && w[1].1)
            .count();
        assert_eq!(unfair, 0, "second turns in a row while the other waited");
        let contended = granted.iter().filter(|g| g.1).count();
        assert!(contended > 0, "the two threads never wanted a turn at once");
    }

    #[test]
    fn a_lone_sender_never_waits() {
        let t = Turns::new(2);
        for _ in 0..1000 {
            t.take(1);
            t.release();
        }
    }
}
