//! Waiting for a count to settle after traffic ends: until it reaches what was sent, or stops
//! changing for [`QUIET`], at most [`MAX`] in all. A fixed wait (300 ms, as `bench rx` and the
//! inside trial's oversize streams had) counts a busy machine's late frames as lost; waiting
//! only for the full count would hang on a real loss.

use std::time::{Duration, Instant};

/// How long the count must stand still before it is final.
pub const QUIET: Duration = Duration::from_millis(300);
/// The longest wait in all.
pub const MAX: Duration = Duration::from_secs(5);

/// Reads `count` every 10 ms until it reaches `want`, stands still for [`QUIET`], or [`MAX`]
/// has passed; returns the last reading. An error from `count` ends the wait.
pub fn until_count<E>(want: u64, mut count: impl FnMut() -> Result<u64, E>) -> Result<u64, E> {
    let start = Instant::now();
    let mut last = count()?;
    let mut changed = start;
    while last < want && changed.elapsed() < QUIET && start.elapsed() < MAX {
        std::thread::sleep(Duration::from_millis(10));
        let now = count()?;
        if now != last {
            last = now;
            changed = Instant::now();
        }
    }
    Ok(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    #[test]
    fn settling_waits_for_the_count_or_a_quiet_time() {
        // The count grows over several readings: returned once it reaches what was sent.
        let mut readings = [10u64, 50, 90, 100].into_iter();
        let got = until_count(100, || Ok::<_, Infallible>(readings.next().unwrap_or(100)));
        assert_eq!(got, Ok(100));
        // It stops short: returned after it stood still for the quiet time.
        let t0 = Instant::now();
        let mut readings = [10u64, 40].into_iter();
        let got = until_count(100, || Ok::<_, Infallible>(readings.next().unwrap_or(40)));
        assert_eq!(got, Ok(40));
        assert!(t0.elapsed() >= QUIET);
        // Nothing at all (a stream the path drops).
        assert_eq!(until_count(5, || Ok::<_, Infallible>(0)), Ok(0));
    }
}
