//! The LAN health watch's record (#35 item 5): during every trial the tester asks the
//! gateway's LAN address for its MAC (ARP, or ND for IPv6) at a fixed period from the port
//! facing it, and counts the answers. A gateway that reboots or hangs under load stops
//! answering for seconds; one that only loses a reply now and then under load does not.
//!
//! This module is the pure part: what a run of unanswered probes is ([`LanGap`]) and which
//! runs count ([`LAN_GAP_THRESHOLD`]). `engine::lan_watch` sends and listens; `bench` turns
//! its log into a [`LanWatch`] with [`LanWatch::of`].

use std::net::IpAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How often the watch asks (one ARP request or NS per gateway address per period): often
/// enough to time a gap to a tenth of a second, rare enough to cost the gateway nothing (10
/// frames/s against the hundreds of thousands of a trial).
pub const LAN_WATCH_PERIOD: Duration = Duration::from_millis(100);

/// The shortest silence that is flagged: 1 s, ten probes in a row. Under load a gateway's
/// kernel can drop an ARP request or its reply with the test frames (a full backlog), and a
/// loaded tester can be late reading one; that costs a probe or two, not ten. A reboot, a
/// hung forwarding plane or a LAN port that went down keeps it silent for seconds.
pub const LAN_GAP_THRESHOLD: Duration = Duration::from_secs(1);

/// One probe as the watch sent it: when (milliseconds after the watch started) and whether
/// an answer came before the next probe to the same address went out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    /// Milliseconds after the watch started.
    pub sent_ms: u64,
    /// An answer from the gateway arrived for it.
    pub answered: bool,
}

/// The watch of one gateway address over one trial.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LanWatch {
    /// The plan's name of the port that asked.
    pub port: String,
    /// The gateway address asked for (the port's `gateway-v4` or `gateway-v6`).
    pub gateway: IpAddr,
    /// Probes sent over the trial.
    pub probes: u64,
    /// Probes answered.
    pub answered: u64,
    /// The longest time without an answer, flagged or not (ms; 0 when every probe was
    /// answered): from the first unanswered probe of a run to the next answered probe, or to
    /// the end of the watch.
    pub longest_gap_ms: u64,
    /// The silences of at least [`LAN_GAP_THRESHOLD`], in order: the gateway did not answer
    /// its LAN port, so the trial's figure is not a clean one of the DUT forwarding.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps: Vec<LanGap>,
}

/// A run of unanswered probes at least [`LAN_GAP_THRESHOLD`] long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LanGap {
    /// When its first unanswered probe went out, Unix milliseconds.
    pub unix_ms: u64,
    /// Its first unanswered probe, milliseconds after the watch (about the trial) started.
    pub start_ms: u64,
    /// How long the gateway was silent (ms): to the next answered probe, or to the end of the
    /// watch when none came. It is the real silence within one probe period either way.
    pub length_ms: u64,
    /// The probes in it, none answered.
    pub unanswered: u64,
}

impl LanWatch {
    /// The record of `probes` (in the order sent), a watch that started at `start_unix_ms`
    /// and ended `end_ms` after it.
    pub fn of(
        port: &str,
        gateway: IpAddr,
        start_unix_ms: u64,
        probes: &[Probe],
        end_ms: u64,
    ) -> LanWatch {
        let threshold = LAN_GAP_THRESHOLD.as_millis() as u64;
        let mut gaps = Vec::new();
        let mut longest = 0;
        let mut i = 0;
        while i < probes.len() {
            if probes[i].answered {
                i += 1;
                continue;
            }
            let first = i;
            while i < probes.len() && !probes[i].answered {
                i += 1;
            }
            let until = probes.get(i).map_or(end_ms, |p| p.sent_ms);
            let start = probes[first].sent_ms;
            let length = until.saturating_sub(start);
            longest = longest.max(length);
            if length >= threshold {
                gaps.push(LanGap {
                    unix_ms: start_unix_ms + start,
                    start_ms: start,
                    length_ms: length,
                    unanswered: (i - first) as u64,
                });
            }
        }
        LanWatch {
            port: port.to_string(),
            gateway,
            probes: probes.len() as u64,
            answered: probes.iter().filter(|p| p.answered).count() as u64,
            longest_gap_ms: longest,
            gaps,
        }
    }

    /// The gateway was silent for at least [`LAN_GAP_THRESHOLD`] during the trial.
    pub fn flagged(&self) -> bool {
        !self.gaps.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GW: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(192, 0, 2, 1));

    /// Probes every 100 ms from 0; those whose index is in `lost` unanswered.
    fn probes(n: u64, lost: std::ops::Range<u64>) -> Vec<Probe> {
        (0..n)
            .map(|i| Probe {
                sent_ms: i * 100,
                answered: !lost.contains(&i),
            })
            .collect()
    }

    #[test]
    fn every_probe_answered_is_no_gap() {
        let w = LanWatch::of("lan", GW, 1_000_000, &probes(30, 0..0), 3000);
        assert_eq!((w.probes, w.answered, w.longest_gap_ms), (30, 30, 0));
        assert!(w.gaps.is_empty() && !w.flagged());
    }

    #[test]
    fn a_few_lost_replies_are_not_a_gap() {
        // Probes 10..19 lost: 900 ms from the first lost one to the next answered one.
        let w = LanWatch::of("lan", GW, 0, &probes(30, 10..19), 3000);
        assert_eq!((w.answered, w.longest_gap_ms), (21, 900));
        assert!(!w.flagged());
    }

    #[test]
    fn a_second_of_silence_is_a_gap_timed_to_the_next_answer() {
        // Probes 10..20 lost: from 1000 ms to the answered probe at 2000 ms.
        let mut p = probes(30, 10..20);
        // One lone loss elsewhere is not another gap.
        p[25].answered = false;
        let w = LanWatch::of("lan", GW, 5_000, &p, 3000);
        assert_eq!(w.longest_gap_ms, 1000);
        assert_eq!(
            w.gaps,
            vec![LanGap {
                unix_ms: 6_000,
                start_ms: 1000,
                length_ms: 1000,
                unanswered: 10,
            }]
        );
        assert_eq!(w.answered, 19);
        assert!(w.flagged());
    }

    #[test]
    fn a_silence_to_the_end_of_the_watch_runs_to_its_end() {
        let w = LanWatch::of("lan", GW, 0, &probes(30, 15..30), 3050);
        assert_eq!(w.longest_gap_ms, 1550);
        assert_eq!(w.gaps.len(), 1);
        assert_eq!(w.gaps[0].unanswered, 15);
        // Nothing sent at all: nothing to say.
        let none = LanWatch::of("lan", GW, 0, &[], 3000);
        assert_eq!((none.probes, none.longest_gap_ms), (0, 0));
        assert!(!none.flagged());
    }

    #[test]
    fn the_record_reads_back_and_an_empty_gap_list_is_left_out() {
        let w = LanWatch::of("lan", GW, 0, &probes(5, 0..0), 500);
        let s = serde_json::to_string(&w).unwrap();
        assert!(!s.contains("gaps"), "{s}");
        assert!(s.contains("\"gateway\":\"192.0.2.1\""), "{s}");
        assert_eq!(serde_json::from_str::<LanWatch>(&s).unwrap(), w);
    }
}
