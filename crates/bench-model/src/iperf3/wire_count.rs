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
use wire::units::BitsPerSec;

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
    pub fn l2_bps(&self) -> BitsPerSec {
        BitsPerSec((self.bytes + 4 * self.frames) as f64 * 8.0 / self.seconds)
    }

    /// Bits per second at L1 (plus preamble, SFD and inter-frame gap).
    pub fn l1_bps(&self) -> BitsPerSec {
        let per_frame = u64::from(ETHERNET_OVERHEAD - 14 + L1_OVERHEAD);
        BitsPerSec((self.bytes + per_frame * self.frames) as f64 * 8.0 / self.seconds)
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

/// One reading of a port's counters, timed where it was read.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Reading {
    bytes: u64,
    packets: u64,
    /// When the counters were read, seconds on the reading host's wall clock: the middle of
    /// the two clock readings that enclose the two `read`s.
    at: f64,
}

/// The command that reads `ifname`'s counters on `side` and the wall clock around them.
///
/// It runs where the port is (`ip netns exec … sh -c`), which costs a process start or two:
/// 5–30 ms on a loaded 2-vCPU machine, varying from call to call. Timing the reading from this
/// process (an `Instant` after the command returned, as until 16cf261) put that variation
/// into the window's length: 20 ms over a 2.6 s window is 0.8 %, enough for a TCP run at line
/// rate to read 100.6 % of it. So bash's own clock (`$EPOCHREALTIME`, µs) is read immediately
/// before and after the two `read` builtins, with no process started in between.
fn read_command(ifname: &str, side: Side) -> String {
    let dir = format!("/sys/class/net/{ifname}/statistics");
    let p = match side {
        Side::Tx => "tx",
        Side::Rx => "rx",
    };
    let script = format!(
        "t0=$EPOCHREALTIME; read b < \"$1/{p}_bytes\"; read p < \"$1/{p}_packets\"; echo \"$t0 $b $p $EPOCHREALTIME\""
    );
    format!(
        "LC_ALL=C bash -c {} _ {}",
        hooks::shell_quote(&script),
        hooks::shell_quote(&dir)
    )
}

/// Parses what [`read_command`] prints: `t0 bytes packets t1`.
fn parse_reading(out: &str) -> Option<Reading> {
    let f: Vec<&str> = out.split_whitespace().collect();
    let [t0, bytes, packets, t1] = f.as_slice() else {
        return None;
    };
    // bash prints the clock with the locale's decimal point; LC_ALL=C makes it a dot, and a
    // comma is read too in case the variable did not reach bash.
    let clock = |s: &str| s.replace(',', ".").parse::<f64>().ok();
    let (t0, t1) = (clock(t0)?, clock(t1)?);
    if !(t0.is_finite() && t1 >= t0) {
        return None;
    }
    Some(Reading {
        bytes: bytes.parse().ok()?,
        packets: packets.parse().ok()?,
        at: (t0 + t1) / 2.0,
    })
}

/// The counters of `ifname` on `side` where `exec` runs (local or a namespace).
fn read_counters(exec: &Exec, ifname: &str, side: Side) -> Option<Reading> {
    let hook = Hook {
        command: read_command(ifname, side),
        parse: None,
    };
    let out = hooks::run(exec, &hook, &[], Duration::from_secs(2)).ok()?;
    parse_reading(&out.stdout)
}

/// The count between two readings; `None` when a counter went backwards (the port was
/// re-created) or the clock did.
fn between(r0: Reading, r1: Reading) -> Option<WireCount> {
    let seconds = r1.at - r0.at;
    (seconds > 0.0).then_some(())?;
    Some(WireCount {
        frames: r1.packets.checked_sub(r0.packets)?,
        bytes: r1.bytes.checked_sub(r0.bytes)?,
        seconds,
    })
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
        let r0 = read_counters(&exec, &ifname, side)?;
        sleep_until(started + to);
        let r1 = read_counters(&exec, &ifname, side)?;
        between(r0, r1)
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
        assert!((w.l1_bps().0 - 1e9).abs() < 1538.0 * 8.0, "{}", w.l1_bps());
        assert_eq!(w.mean_frame_len(), 1518.0);
        assert!((w.l2_bps().0 - 81_274.0 * 1518.0 * 8.0).abs() < 1e-3);
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
    fn a_reading_is_timed_by_the_clock_around_it_not_by_when_the_command_returned() {
        let r = parse_reading("1795300000.100000 1000 10 1795300000.100200\n").unwrap();
        assert_eq!((r.bytes, r.packets), (1000, 10));
        assert!((r.at - 1_795_300_000.100_1).abs() < 1e-6, "{}", r.at);
        // A locale's decimal comma.
        let c = parse_reading("1795300000,5 1 1 1795300000,5").unwrap();
        assert!((c.at - 1_795_300_000.5).abs() < 1e-6);
        for bad in ["", "1 2 3", "x 1 1 2", "2 1 1 1", "1 -1 1 2", "1 1 1 2 3"] {
            assert_eq!(parse_reading(bad), None, "{bad:?}");
        }
        let r1 = parse_reading("1795300002.600100 81274000 1000 1795300002.600100").unwrap();
        let w = between(r, r1).unwrap();
        assert_eq!((w.frames, w.bytes), (990, 81_273_000));
        assert!((w.seconds - 2.5).abs() < 1e-6, "{}", w.seconds);
        // Counters that went backwards (a re-created port) give no count.
        assert_eq!(between(r1, r), None);
    }

    #[test]
    fn the_read_command_reads_the_clock_and_counters_in_one_shell() {
        let c = read_command("wr-a", Side::Tx);
        assert!(c.starts_with("LC_ALL=C bash -c '"), "{c}");
        assert!(
            c.contains("read b < \"$1/tx_bytes\"")
                && c.ends_with("_ /sys/class/net/wr-a/statistics"),
            "{c}"
        );
        // Run it here against loopback, whose counters every Linux host has.
        let out = std::process::Command::new("sh")
            .args(["-c", &read_command("lo", Side::Rx)])
            .output()
            .unwrap();
        let r = parse_reading(&String::from_utf8_lossy(&out.stdout))
            .unwrap_or_else(|| panic!("{out:?}"));
        assert!(r.at > 1.6e9, "{r:?}");
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
