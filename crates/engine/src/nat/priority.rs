//! The scheduling priority of the XDP senders of the connection methodologies: the
//! `nat-throughput` load's two sender threads, and the preliminary phase's one.
//!
//! Why: both directions are sent from the one tester CPU (the other is the DUT's), taking
//! turns call by call ([`crate::xdp::turns`]). Any other runnable thread on that CPU — another
//! engineer's compiler on a shared machine, a kernel worker — takes slices from the sender
//! whose turn it is, and a sender more than its debt cap (10 ms) behind its schedule slips:
//! the trial is tester-limited, not a figure. A run of 2026-11-26 put the whole tester under
//! `nice -n -15`; the engine now raises the senders itself, so a plain `wirerate run` gets the
//! same, and the record says what it got.
//!
//! Every port thread already asks for nice −10 ([`crate::port::PortSpec::enter`], an absolute
//! value: `nice -n -15 wirerate run` never reached the senders). The load's senders ask for
//! [`DEFAULT`] (chosen by measurement, docs/engine.md "The NAT load on XDP": a higher priority
//! did not help). `WIRERATE_NAT_SENDER_PRIORITY` (`fifo:N`, `nice:N` or `none`) overrides it,
//! for measuring one against another. When the wish cannot be granted (not root, no
//! CAP_SYS_NICE), the sender runs with what it has and the record says `unraised`; the trial is
//! not failed for it.
//!
//! The preliminary phase's XDP sender asks for [`PRELIMINARY_DEFAULT`], SCHED_FIFO: its phase
//! is short (N / rate: 12.5 ms for 5,000 connections at 400,000/s) and catches up at most
//! 128 frames after a stall (`prelim_xdp::MAX_CATCH_UP`), so one scheduler slice of another program
//! (8–16 ms on the tester CPU at load 8, measured with `perf record -e sched:sched_switch`,
//! 2026-11-29) slips thousands of connections and the trial is tester-limited. A real-time
//! thread is not preempted by ordinary ones — for most of a second: the kernel then runs the
//! ordinary threads it starved for 50 ms at once (`sched_rt_runtime_us` 950,000 of
//! `sched_rt_period_us` 1,000,000, or the fair server), and 50 ms is more than 128 frames at
//! any rate above 2,560/s. So a phase runs real-time when it is shorter than
//! [`PRELIMINARY_FIFO_LONGEST`] or when that stop costs no more than its catch-up
//! ([`RT_STOP`] × rate ≤ 128 frames); in between it keeps [`DEFAULT`]. Runs of the whole NAT
//! plan at load 12–15 (2026-11-29) showed both ends: with every phase real-time, the
//! firewall's 5,000 connections at 3,728/s (1.3 s) went out at 3,684/s, 58 frames short — one
//! 50 ms stall; with only the phases under 0.5 s real-time, the capacity trials at 2,500/s
//! (nice −10) went out at 2,012–2,383/s, where real-time they had all been paced in full.
//! `WIRERATE_NAT_PRELIMINARY_PRIORITY` overrides the choice (same syntax).

use serde::{Deserialize, Serialize};

/// What a sender thread asked for, or got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SenderPriority {
    /// The real-time policy SCHED_FIFO at this priority (1..=99).
    Fifo { priority: i32 },
    /// The ordinary policy at this nice value (−20..=19).
    Nice { nice: i32 },
    /// Nothing raised: the thread kept what it had (nice −10 if the port could set it).
    Unraised,
}

/// What the senders ask for unless overridden: the port's nice −10, made explicit and
/// recorded. Measured against nice −20 and SCHED_FIFO 1 (docs/engine.md, "The NAT load on
/// XDP"): neither kept the rate more often, and SCHED_FIFO fell 3–5 % short at every rate (which fits
/// the kernel's fair server running ordinary threads up to 50 ms a second).
pub const DEFAULT: SenderPriority = SenderPriority::Nice { nice: -10 };

/// The environment variable that overrides [`DEFAULT`].
pub const ENV: &str = "WIRERATE_NAT_SENDER_PRIORITY";

/// What the preliminary phase's XDP sender asks for unless overridden, when its phase is
/// shorter than [`PRELIMINARY_FIFO_LONGEST`] (see the module's documentation for why).
pub const PRELIMINARY_DEFAULT: SenderPriority = SenderPriority::Fifo { priority: 1 };

/// The longest preliminary phase always sent real-time: half the second after which the
/// kernel stops a real-time thread for [`RT_STOP`], so a phase never meets that stop.
pub const PRELIMINARY_FIFO_LONGEST: std::time::Duration = std::time::Duration::from_millis(500);

/// How long the kernel stops a real-time thread that ran most of a second: the period
/// (`sched_rt_period_us`, 1 s) less what real-time may use of it (`sched_rt_runtime_us`,
/// 0.95 s), the defaults.
pub const RT_STOP: std::time::Duration = std::time::Duration::from_millis(50);

/// The environment variable that overrides [`PRELIMINARY_DEFAULT`].
pub const PRELIMINARY_ENV: &str = "WIRERATE_NAT_PRELIMINARY_PRIORITY";

/// Parses `fifo:N`, `nice:N` or `none`.
pub fn parse(s: &str) -> Option<SenderPriority> {
    let s = s.trim();
    if s == "none" {
        return Some(SenderPriority::Unraised);
    }
    let (kind, n) = s.split_once(':')?;
    let n: i32 = n.trim().parse().ok()?;
    match kind.trim() {
        "fifo" if (1..=99).contains(&n) => Some(SenderPriority::Fifo { priority: n }),
        "nice" if (-20..=19).contains(&n) => Some(SenderPriority::Nice { nice: n }),
        _ => None,
    }
}

/// The wish: [`ENV`] if set and valid, else [`DEFAULT`] (an invalid value is ignored, and
/// [`raise`]'s result says what was used).
pub fn wish() -> SenderPriority {
    wish_from(ENV, DEFAULT)
}

/// The preliminary sender's wish for a phase of `phase` (N / rate) that may catch up
/// `catch_up` of schedule after a stall (its catch-up frames / rate), learned in the kernel
/// or not (`learner_in_kernel`): [`PRELIMINARY_ENV`] if set and valid, else
/// [`PRELIMINARY_DEFAULT`] for a phase shorter than [`PRELIMINARY_FIFO_LONGEST`] or one that
/// catches up a whole [`RT_STOP`], [`DEFAULT`] otherwise — and always [`DEFAULT`] when an
/// AF_PACKET learner must read its ring on the same tester CPU during the phase: a real-time
/// sender spinning there starved it (1,000 connections at 5,000/s: its ring dropped 365 of
/// them, `nat_prelim_xdp`, 2026-11-29).
pub fn preliminary_wish(
    phase: std::time::Duration,
    catch_up: std::time::Duration,
    learner_in_kernel: bool,
) -> SenderPriority {
    let short = phase < PRELIMINARY_FIFO_LONGEST || catch_up >= RT_STOP;
    let default = if short && learner_in_kernel {
        PRELIMINARY_DEFAULT
    } else {
        DEFAULT
    };
    wish_from(PRELIMINARY_ENV, default)
}

fn wish_from(env: &str, default: SenderPriority) -> SenderPriority {
    std::env::var(env)
        .ok()
        .and_then(|v| parse(&v))
        .unwrap_or(default)
}

/// Raises the calling thread to `want`; returns what it got. Best effort: a refused
/// SCHED_FIFO falls back to nice −20, a refused nice to nothing.
pub fn raise(want: SenderPriority) -> SenderPriority {
    match want {
        SenderPriority::Fifo { priority } => match crate::sys::set_thread_fifo(0, priority) {
            Ok(()) => want,
            Err(_) => raise(SenderPriority::Nice { nice: -20 }),
        },
        SenderPriority::Nice { nice } => match crate::sys::set_thread_nice(nice) {
            Ok(()) => want,
            Err(_) => SenderPriority::Unraised,
        },
        SenderPriority::Unraised => SenderPriority::Unraised,
    }
}

/// The priority a load ran with, from its two senders: the weaker one (a sender left unraised
/// makes the load unraised).
pub fn weaker(a: SenderPriority, b: SenderPriority) -> SenderPriority {
    let rank = |p: SenderPriority| match p {
        SenderPriority::Unraised => (0, 0),
        SenderPriority::Nice { nice } => (1, -nice),
        SenderPriority::Fifo { priority } => (2, priority),
    };
    if rank(a) <= rank(b) {
        a
    } else {
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_override_and_rejects_nonsense() {
        assert_eq!(parse("fifo:1"), Some(SenderPriority::Fifo { priority: 1 }));
        assert_eq!(
            parse(" nice:-15 "),
            Some(SenderPriority::Nice { nice: -15 })
        );
        assert_eq!(parse("none"), Some(SenderPriority::Unraised));
        for bad in [
            "", "fifo", "fifo:0", "fifo:100", "nice:-21", "nice:x", "rr:1",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn only_a_short_preliminary_phase_runs_real_time() {
        if std::env::var_os(PRELIMINARY_ENV).is_some() {
            println!("SKIP: {PRELIMINARY_ENV} is set and overrides the choice");
            return;
        }
        let ms = std::time::Duration::from_millis;
        // 5,000 connections at 400,000/s and at 10,001/s (128 frames: 0.3 and 12.8 ms):
        // real-time.
        assert_eq!(preliminary_wish(ms(12), ms(0), true), PRELIMINARY_DEFAULT);
        assert_eq!(preliminary_wish(ms(499), ms(12), true), PRELIMINARY_DEFAULT);
        // Not with a learner in user space on the same CPU.
        assert_eq!(preliminary_wish(ms(12), ms(0), false), DEFAULT);
        // At 10,000/s down to 2,561/s the kernel's 50 ms stop could fall inside the phase
        // and slip frames.
        assert_eq!(preliminary_wish(ms(500), ms(12), true), DEFAULT);
        assert_eq!(preliminary_wish(ms(1341), ms(34), true), DEFAULT);
        // At 2,560/s and slower the phase catches up the whole stop: real-time again.
        assert_eq!(
            preliminary_wish(ms(2400), ms(50), true),
            PRELIMINARY_DEFAULT
        );
        assert_eq!(preliminary_wish(ms(2400), ms(50), false), DEFAULT);
    }

    #[test]
    fn the_weaker_of_two_senders_is_the_loads() {
        let f = SenderPriority::Fifo { priority: 1 };
        let n = SenderPriority::Nice { nice: -20 };
        let n10 = SenderPriority::Nice { nice: -10 };
        assert_eq!(weaker(f, n), n);
        assert_eq!(weaker(n10, n), n10);
        assert_eq!(
            weaker(f, SenderPriority::Unraised),
            SenderPriority::Unraised
        );
    }
}
