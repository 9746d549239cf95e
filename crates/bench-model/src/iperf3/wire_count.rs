//! What a TCP run put on the wire, counted by a tester port's kernel counters.
//!
//! iperf3's own figure is bytes handed to or read from sockets over its timer's interval. Over
//! a few seconds that can exceed what the link carried: data queued in socket buffers and in
//! the lab's shaper when the omitted seconds end is counted in the measured ones (seen: 964
//! Mb/s of goodput on a 1 Gb/s link, whose ceiling at MSS 1448 is 941.5). A port's kernel
//! counters cannot do that, so the runner reads them over the middle of the measured period
//! ([`window`]) and the line-rate percentage comes from them.
//!
//! Which port ([`Side`]): on the lab, the sending tester port's transmit counters — its
//! TSO/GSO are off and it is the shaped cable into the DUT, so every count is a wire frame;
//! the far port would count the DUT's GRO-merged packets as one frame each when the DUT's
//! offloads are on (seen: 5,594 "frames"/s of 18 KB). On real interfaces, the far port's
//! receive counters: a NIC counts the frames the DUT put on the wire.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::hooks::{self, Exec, Hook};
use crate::iperf3::{ETHERNET_OVERHEAD, L1_OVERHEAD};

/// Frames and bytes a port sent or received over a window of its kernel counters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct WireCount {
    /// Frames (`tx_packets` or `rx_packets`).
    pub frames: u64,
    /// Their bytes as the kernel counts them: Ethernet header and payload, no FCS.
    pub bytes: u64,
    /// Length of the window.
    pub seconds: f64,
}

impl WireCount {
    /// Frames per second.
    pub fn fps(&self) -> f64 {
        self.frames as f64 / self.seconds
    }

    /// Mean frame length with FCS (the plan's frame-size convention).
    pub fn mean_frame_len(&self) -> f64 {
        if self.frames == 0 {
            return 0.0;
        }
        self.bytes as f64 / self.frames as f64 + 4.0
    }

    /// Bits per second at L2 (frames with FCS).
    pub fn l2_bps(&self) -> f64 {
        (self.bytes + 4 * self.frames) as f64 * 8.0 / self.seconds
    }

    /// Bits per second at L1 (plus preamble, SFD and inter-frame gap).
    pub fn l1_bps(&self) -> f64 {
        let per_frame = u64::from(ETHERNET_OVERHEAD - 14 + L1_OVERHEAD);
        (self.bytes + per_frame * self.frames) as f64 * 8.0 / self.seconds
    }
}

/// The window a run of `omit` + `duration` seconds is counted over, from the client's start:
/// from 0.3 s after the omitted seconds (connection set-up and the end of slow start are
/// behind) to 0.1 s before the run's end. `None` when the run is too short to hold one.
pub fn window(omit: Duration, duration: Duration) -> Option<(Duration, Duration)> {
    let start = omit + Duration::from_millis(300);
    let end = (omit + duration).checked_sub(Duration::from_millis(100))?;
    (end > start + Duration::from_millis(200)).then_some((start, end))
}

/// Which counters of a port count the run's data frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    /// Transmitted (the sending tester port).
    Tx,
    /// Received (the far tester port).
    Rx,
}

/// Bytes and packets of `ifname` on `side` where `exec` runs (local or a namespace), with the
/// instant they were read.
fn read_counters(exec: &Exec, ifname: &str, side: Side) -> Option<(u64, u64, Instant)> {
    let dir = format!("/sys/class/net/{}/statistics", hooks::shell_quote(ifname));
    let p = match side {
        Side::Tx => "tx",
        Side::Rx => "rx",
    };
    let hook = Hook {
        command: format!("cat {dir}/{p}_bytes {dir}/{p}_packets"),
        parse: None,
    };
    let out = hooks::run(exec, &hook, &[], Duration::from_secs(2)).ok()?;
    let at = Instant::now();
    let mut it = out.stdout.split_whitespace().map(str::parse::<u64>);
    Some((it.next()?.ok()?, it.next()?.ok()?, at))
}

/// Counts what `ifname` sends or receives (`side`) between `started + from` and
/// `started + to`, on a thread of its own; join it after the run. The result is `None` when a
/// counter could not be read.
pub fn count_in_background(
    (exec, ifname, side): (Exec, String, Side),
    started: Instant,
    (from, to): (Duration, Duration),
) -> std::thread::JoinHandle<Option<WireCount>> {
    std::thread::spawn(move || {
        let sleep_until = |t: Instant| {
            let now = Instant::now();
            if t > now {
                std::thread::sleep(t - now);
            }
        };
        sleep_until(started + from);
        let (b0, p0, t0) = read_counters(&exec, &ifname, side)?;
        sleep_until(started + to);
        let (b1, p1, t1) = read_counters(&exec, &ifname, side)?;
        Some(WireCount {
            frames: p1.checked_sub(p0)?,
            bytes: b1.checked_sub(b0)?,
            seconds: (t1 - t0).as_secs_f64(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_frames_at_line_rate_are_100_percent() {
        // 1 s of 1514-byte frames (1518 with FCS) at 1 Gb/s: 81,274.38 frames/s.
        let w = WireCount {
            frames: 81_274,
            bytes: 81_274 * 1514,
            seconds: 1.0,
        };
        assert!((w.l1_bps() - 1e9).abs() < 1538.0 * 8.0, "{}", w.l1_bps());
        assert_eq!(w.mean_frame_len(), 1518.0);
        assert!((w.l2_bps() - 81_274.0 * 1518.0 * 8.0).abs() < 1e-3);
        assert_eq!(
            WireCount {
                frames: 0,
                bytes: 0,
                seconds: 1.0
            }
            .mean_frame_len(),
            0.0
        );
    }

    #[test]
    fn window_sits_inside_the_measured_period() {
        let s = Duration::from_secs;
        assert_eq!(
            window(s(1), s(3)),
            Some((Duration::from_millis(1300), Duration::from_millis(3900)))
        );
        assert_eq!(window(s(0), s(10)).unwrap().0, Duration::from_millis(300));
        // Too short to hold a window of at least 0.2 s.
        assert_eq!(window(s(0), Duration::from_millis(500)), None);
    }
}
