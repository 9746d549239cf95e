//! Clocks and waiting: the monotonic clock of signature timestamps, the realtime clock of
//! AF_PACKET receive timestamps, and the senders' wait for their next frame.

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC as the emulated machines' time (`engine::control::now`).
pub fn machine_now() -> wire::units::Nanos {
    wire::units::Nanos(monotonic_ns())
}

/// CLOCK_MONOTONIC in nanoseconds (the clock the signature timestamp uses).
#[inline]
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds (the clock of AF_PACKET receive timestamps).
#[inline]
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// A sender's wait for its next frame due at `due_ns` (CLOCK_MONOTONIC): sleeps when it is
/// more than 60 µs away (until 50 µs before it, since a sleep may wake late), else spins once
/// and returns, so the caller re-checks its schedule.
///
/// Short waits spin rather than `sched_yield`: on a loaded machine a yield hands the CPU to
/// every other runnable thread for up to a scheduler slice (milliseconds), which showed as
/// stalls inside bursts and rates several % low at 100 kpps. Both transmit backends use this.
pub fn wait_for_due(due_ns: u64) {
    let now = monotonic_ns();
    if due_ns > now + 60_000 {
        sleep_until(due_ns - 50_000);
    } else {
        std::hint::spin_loop();
    }
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns` (absolute, so no drift accumulates).
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null with TIMER_ABSTIME.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        );
    }
}

/// `REALTIME - MONOTONIC` in nanoseconds, measured as tightly as we can (the smallest bracket
/// of several tries): converts kernel receive timestamps to the monotonic clock.
pub fn realtime_minus_monotonic_ns() -> i64 {
    let mut best = (u64::MAX, 0i64);
    for _ in 0..16 {
        let a = monotonic_ns();
        let r = realtime_ns();
        let b = monotonic_ns();
        let width = b - a;
        if width < best.0 {
            best = (width, r as i64 - (a + width / 2) as i64);
        }
    }
    best.1
}
