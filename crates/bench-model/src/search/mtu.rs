//! `mtu-probe`: per direction, the largest frame size that crosses the DUT whole, and what
//! becomes of the next byte up.
//!
//! A home gateway's uplink (PPPoE, DS-Lite) carries less than the LAN's 1500-byte MTU, and
//! what it does with a bigger packet — drop it, fragment it, answer ICMP "fragmentation
//! needed" — differs per direction and per device; the published CPE tests found it by hand
//! (1472 B through PPPoE, 1478 B one way and 1470 B the other through DS-Lite). This search
//! finds it with 1-byte resolution by bisection over the frame size, per direction:
//!
//! 1. a trial at the smallest size (if that fails, nothing crosses whole: the direction is
//!    done and its fate is the smallest size's);
//! 2. a trial at the largest size (if that passes, the threshold is the largest size and
//!    nothing above it was probed);
//! 3. bisection between the largest size that passed and the smallest that failed until they
//!    are one byte apart. The threshold is the one that passed; the fate above it is that of
//!    the one that failed — measured exactly one byte up, never inferred.
//!
//! A trial is a short stream at a low fixed frame rate ([`MtuProbeConfig::pps`], one
//! direction only, [`Probe`]), so the rate never decides the answer. It passes when every
//! frame sent arrived whole: nothing lost, and the receiver counted no fragment of it. A
//! frame the receiver sees as an IP fragment is not counted received (the engine counts it
//! under `fragment`, [`Outcome::fragments`]); reassembly is not attempted.
//!
//! The frame size is the reference frame's (plain Ethernet with FCS on port A's side, as
//! every size in a plan): through PPPoE the frame on the uplink is 8 bytes longer, through
//! DS-Lite 40 bytes. So 1472 B through a session with MRU 1454 and 1478 B through a
//! softwire on a 1500-byte IPv6 MTU are the arithmetic (IPv4 packets of 1454 and 1460 B).

use core::fmt;
use core::time::Duration;

use serde::{Deserialize, Serialize};

use super::{
    check, Finding, InvalidConfig, Ledger, LineFraction, Outcome, Search, SearchResult, Step,
    TrialRequest,
};

/// A probe's rate is only kept low, never measured: its trial is tester-limited only when the
/// tester reached less than half of it (a tester that sent every frame a little late still
/// probed the size).
pub const PROBE_TESTER_TOLERANCE: f64 = 0.5;

/// Which way a probe's frames go: forward is the case's stream (port A → port B), reverse
/// the mirror (B → A, inside B's session or softwire when it plays one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProbeDirection {
    Forward,
    Reverse,
}

impl ProbeDirection {
    /// The direction's name in records and reports.
    pub fn name(self) -> &'static str {
        match self {
            ProbeDirection::Forward => "forward",
            ProbeDirection::Reverse => "reverse",
        }
    }
}

impl fmt::Display for ProbeDirection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// What an `mtu-probe` trial sends instead of the case's stream: frames of `frame_size`
/// bytes (reference frame, with FCS), one way, at `pps` frames per second. The request's
/// `load` is then a fraction of `pps` (1.0 = the probe's rate), not of line rate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    pub frame_size: u32,
    pub direction: ProbeDirection,
    pub pps: u32,
}

/// What became of the frames of one probe trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Crossing {
    /// Every frame arrived whole.
    Whole,
    /// None arrived and the receiver saw no fragment of them: the DUT dropped them (a DUT
    /// that answers ICMP "fragmentation needed" shows here too; the engine does not count
    /// the ICMP messages).
    Dropped,
    /// The receiver saw them as IP fragments: the DUT fragmented them.
    Fragmented,
    /// Some arrived whole and some did not: loss the frame size does not explain by itself
    /// (the DUT or the tester lost frames at the probe's rate).
    Partial,
    /// Nothing was sent: the tester's own port cannot carry a frame this large (its MTU), or
    /// its PPPoE session cannot (the MRU the DUT negotiated: an access concentrator sends no
    /// larger datagram), so nothing above was probed; the threshold is then the port's or the
    /// session's.
    NotSent,
}

impl Crossing {
    /// How the frames of `o` crossed.
    pub fn of(o: &Outcome) -> Crossing {
        if o.received + o.lost + o.fragments == 0 {
            Crossing::NotSent
        } else if o.lost == 0 && o.fragments == 0 && o.received > 0 {
            Crossing::Whole
        } else if o.fragments > 0 {
            Crossing::Fragmented
        } else if o.received == 0 {
            Crossing::Dropped
        } else {
            Crossing::Partial
        }
    }

    /// The name in records and reports.
    pub fn name(self) -> &'static str {
        match self {
            Crossing::Whole => "whole",
            Crossing::Dropped => "dropped",
            Crossing::Fragmented => "fragmented",
            Crossing::Partial => "partly lost",
            Crossing::NotSent => {
                "not sent (larger than the tester's port or PPPoE session carries)"
            }
        }
    }
}

/// One probed size and what its frames did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeFate {
    /// Reference frame size, bytes with FCS.
    pub frame_size: u32,
    pub crossing: Crossing,
    /// Frames sent, received whole, and seen as fragments.
    pub sent: u64,
    pub received: u64,
    #[serde(default)]
    pub fragments: u64,
}

/// The answer for one direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct MtuThreshold {
    pub direction: ProbeDirection,
    /// The sizes searched (inclusive).
    pub min_size: u32,
    pub max_size: u32,
    /// The largest frame size that crossed whole; `None` when not even `min_size` did.
    pub largest_whole: Option<u32>,
    /// The fate one byte above `largest_whole` (of `min_size` when nothing crossed whole);
    /// `None` when `max_size` crossed whole (nothing above it was probed).
    pub above: Option<SizeFate>,
    /// Whether the bisection for this direction finished.
    pub complete: bool,
}

/// Parameters of [`MtuProbe`].
#[derive(Debug, Clone, PartialEq)]
pub struct MtuProbeConfig {
    /// Smallest and largest reference frame size searched.
    pub min_size: u32,
    pub max_size: u32,
    /// Frames per second of every probe trial.
    pub pps: u32,
    /// Length of every probe trial.
    pub duration: Duration,
    /// The directions, in the order probed.
    pub directions: Vec<ProbeDirection>,
    /// See [`Outcome::is_tester_limited`].
    pub tester_tolerance: f64,
}

/// Bisection state of one direction: the largest size that passed and the smallest that
/// failed so far, with the failed one's fate.
#[derive(Debug, Clone, Copy)]
struct Bracket {
    pass: Option<u32>,
    fail: Option<SizeFate>,
}

/// The `mtu-probe` search. See the module docs.
#[derive(Debug, Clone)]
pub struct MtuProbe {
    cfg: MtuProbeConfig,
    ledger: Ledger,
    /// One per direction started; the last is the one being probed.
    brackets: Vec<Bracket>,
    /// The size of the trial in flight.
    pending: Option<u32>,
}

impl MtuProbe {
    /// Checks `cfg` and builds the search.
    pub fn new(cfg: MtuProbeConfig) -> Result<MtuProbe, InvalidConfig> {
        check(cfg.min_size >= 1 && cfg.min_size <= cfg.max_size, || {
            format!(
                "the smallest probed frame size ({} B) must be at least 1 and not above the largest ({} B)",
                cfg.min_size, cfg.max_size
            )
        })?;
        check(cfg.pps >= 1, || "the probe rate is zero".into())?;
        check(!cfg.duration.is_zero(), || "trial duration is zero".into())?;
        check(!cfg.directions.is_empty(), || {
            "no direction to probe".into()
        })?;
        Ok(MtuProbe {
            ledger: Ledger::new(cfg.tester_tolerance),
            cfg,
            brackets: Vec::new(),
            pending: None,
        })
    }

    /// The next size to try for `b`, or `None` when its answer is settled.
    fn choose(&self, b: &Bracket) -> Option<u32> {
        let (min, max) = (self.cfg.min_size, self.cfg.max_size);
        match (b.pass, b.fail) {
            (None, None) => Some(min),
            // Not even the smallest crossed whole.
            (None, Some(_)) => None,
            (Some(p), None) if p < max => Some(max),
            (Some(_), None) => None,
            (Some(p), Some(f)) if f.frame_size - p > 1 => Some(p + (f.frame_size - p) / 2),
            (Some(_), Some(_)) => None,
        }
    }

    fn request(&self, size: u32, direction: ProbeDirection) -> TrialRequest {
        TrialRequest {
            probe: Some(Probe {
                frame_size: size,
                direction,
                pps: self.cfg.pps,
            }),
            ..TrialRequest::rate(LineFraction::FULL, self.cfg.duration)
        }
    }

    fn threshold(&self, i: usize, b: &Bracket, complete: bool) -> MtuThreshold {
        MtuThreshold {
            direction: self.cfg.directions[i],
            min_size: self.cfg.min_size,
            max_size: self.cfg.max_size,
            largest_whole: b.pass,
            above: b.fail,
            complete,
        }
    }
}

impl Search for MtuProbe {
    fn next(&mut self, last: Option<&Outcome>) -> Option<TrialRequest> {
        match self.ledger.take(last) {
            // Not a bounding ledger: a tester-limited trial stops this search.
            Step::Stop | Step::Ceiling(_) => return None,
            Step::Learn(o) => {
                if let (Some(size), Some(b)) = (self.pending.take(), self.brackets.last_mut()) {
                    let crossing = Crossing::of(o);
                    if crossing == Crossing::Whole {
                        b.pass = Some(size);
                    } else {
                        b.fail = Some(SizeFate {
                            frame_size: size,
                            crossing,
                            sent: o.received + o.lost,
                            received: o.received,
                            fragments: o.fragments,
                        });
                    }
                }
            }
            Step::Start => {}
        }
        loop {
            if self.brackets.is_empty() {
                self.brackets.push(Bracket {
                    pass: None,
                    fail: None,
                });
            }
            let i = self.brackets.len() - 1;
            if let Some(size) = self.choose(&self.brackets[i]) {
                self.pending = Some(size);
                return self
                    .ledger
                    .issue(self.request(size, self.cfg.directions[i]));
            }
            if self.brackets.len() >= self.cfg.directions.len() {
                return None;
            }
            self.brackets.push(Bracket {
                pass: None,
                fail: None,
            });
        }
    }

    fn result(&self) -> SearchResult {
        let n = self.cfg.directions.len();
        let directions = self
            .brackets
            .iter()
            .enumerate()
            .map(|(i, b)| self.threshold(i, b, self.choose(b).is_none()))
            .collect::<Vec<_>>();
        let finished = directions.len() == n && directions.iter().all(|d| d.complete);
        self.ledger
            .result(finished, Finding::MtuProbe { directions })
    }
}

/// A simulated DUT with a largest whole frame size per direction, and what it does above:
/// the truth [`MtuProbe`] must find, byte for byte.
#[derive(Debug, Clone, Copy)]
pub struct MtuDut {
    pub forward: u32,
    pub reverse: u32,
    /// What a frame above the threshold becomes.
    pub above: Crossing,
    /// Frames that vanish in every trial whatever their size (a lossy DUT).
    pub always_lost: u64,
    /// The largest frame the tester's ports can send (bigger ones are not sent).
    pub tester_max: u32,
}

impl MtuDut {
    /// A DUT that passes up to `forward` / `reverse` bytes and drops everything bigger.
    pub fn dropping(forward: u32, reverse: u32) -> MtuDut {
        MtuDut {
            forward,
            reverse,
            above: Crossing::Dropped,
            always_lost: 0,
            tester_max: u32::MAX,
        }
    }

    /// Runs one simulated probe trial (a request without a probe forwards everything).
    pub fn trial(&self, request: &TrialRequest) -> Outcome {
        if request
            .probe
            .is_some_and(|p| p.frame_size > self.tester_max)
        {
            return Outcome {
                intended: request.load,
                offered: request.load,
                received: 0,
                lost: 0,
                fragments: 0,
                directions: 1,
                duration: request.duration,
                latency: None,
            };
        }
        let (sent, fits) = match request.probe {
            Some(p) => {
                let limit = match p.direction {
                    ProbeDirection::Forward => self.forward,
                    ProbeDirection::Reverse => self.reverse,
                };
                let sent = (f64::from(p.pps) * request.duration.as_secs_f64()).round() as u64;
                (sent.max(1), p.frame_size <= limit)
            }
            None => (1000, true),
        };
        let (received, fragments) = match (fits, self.above) {
            (true, _) => (sent.saturating_sub(self.always_lost), 0),
            (false, Crossing::Fragmented) => (0, sent),
            (false, Crossing::Partial) => (sent / 2, 0),
            (false, _) => (0, 0),
        };
        Outcome {
            intended: request.load,
            offered: request.load,
            received,
            lost: sent - received,
            fragments,
            directions: 1,
            duration: request.duration,
            latency: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{drive, Status, DEFAULT_TESTER_TOLERANCE};
    use super::*;

    fn cfg(min: u32, max: u32) -> MtuProbeConfig {
        MtuProbeConfig {
            min_size: min,
            max_size: max,
            pps: 1000,
            duration: Duration::from_secs(1),
            directions: vec![ProbeDirection::Forward, ProbeDirection::Reverse],
            tester_tolerance: DEFAULT_TESTER_TOLERANCE,
        }
    }

    fn directions(r: &SearchResult) -> Vec<MtuThreshold> {
        match &r.finding {
            Finding::MtuProbe { directions } => directions.clone(),
            f => panic!("{f:?}"),
        }
    }

    /// DS-Lite as the published CPE test found it: 1478 B one way, 1470 B the other, the
    /// rest dropped. Exactly those sizes, and the fate measured one byte up (1479, 1471): a
    /// search one byte off in either bound fails here.
    #[test]
    fn finds_each_directions_threshold_to_the_byte() {
        let dut = MtuDut::dropping(1478, 1470);
        let mut s = MtuProbe::new(cfg(64, 1518)).unwrap();
        let mut sizes = Vec::new();
        let r = drive(&mut s, |t| {
            sizes.push((t.probe.unwrap().direction, t.probe.unwrap().frame_size));
            dut.trial(t)
        });
        assert_eq!(r.status, Status::Complete);
        let d = directions(&r);
        assert_eq!(d.len(), 2);
        assert_eq!(d[0].direction, ProbeDirection::Forward);
        assert_eq!(d[0].largest_whole, Some(1478));
        let above = d[0].above.unwrap();
        assert_eq!(
            (above.frame_size, above.crossing),
            (1479, Crossing::Dropped)
        );
        assert_eq!((above.sent, above.received), (1000, 0));
        assert_eq!(d[1].direction, ProbeDirection::Reverse);
        assert_eq!(d[1].largest_whole, Some(1470));
        assert_eq!(d[1].above.unwrap().frame_size, 1471);
        // Both neighbours of each threshold were measured, forward first, then reverse.
        for (dir, t) in [
            (ProbeDirection::Forward, 1478),
            (ProbeDirection::Reverse, 1470),
        ] {
            assert!(sizes.contains(&(dir, t)) && sizes.contains(&(dir, t + 1)));
        }
        assert!(
            sizes
                .iter()
                .take_while(|(d, _)| *d == ProbeDirection::Forward)
                .count()
                > 2
        );
        assert_eq!(sizes.first(), Some(&(ProbeDirection::Forward, 64)));
        // min, max, then ⌈log2(1518 − 64)⌉ = 11 bisection steps at most, per direction.
        assert!(r.trials <= 2 * 13, "{}", r.trials);
        assert_eq!(r.trial_seconds, f64::from(r.trials));
    }

    /// Every threshold from below the range to above it, both directions: exact each time.
    #[test]
    fn exact_for_every_threshold_in_and_around_the_range() {
        for t in 99..=141 {
            let dut = MtuDut::dropping(t, 240 - t);
            let mut s = MtuProbe::new(cfg(100, 140)).unwrap();
            let r = drive(&mut s, |q| dut.trial(q));
            assert_eq!(r.status, Status::Complete);
            let d = directions(&r);
            for (x, limit) in d.iter().zip([t, 240 - t]) {
                let expect = (limit >= 100).then_some(limit.min(140));
                assert_eq!(x.largest_whole, expect, "threshold {limit}");
                let above = x.above.map(|a| a.frame_size);
                let expect_above = match expect {
                    None => Some(100),
                    Some(140) => None,
                    Some(w) => Some(w + 1),
                };
                assert_eq!(above, expect_above, "threshold {limit}");
            }
        }
    }

    #[test]
    fn a_fragmenting_dut_is_told_from_a_dropping_one() {
        let dut = MtuDut {
            above: Crossing::Fragmented,
            ..MtuDut::dropping(1472, 1472)
        };
        let mut s = MtuProbe::new(cfg(64, 1518)).unwrap();
        let d = directions(&drive(&mut s, |t| dut.trial(t)));
        for x in &d {
            assert_eq!(x.largest_whole, Some(1472));
            let a = x.above.unwrap();
            assert_eq!((a.frame_size, a.crossing), (1473, Crossing::Fragmented));
            assert_eq!((a.received, a.fragments), (0, 1000));
        }
        let dropping = MtuDut::dropping(1472, 1472);
        let mut s = MtuProbe::new(cfg(64, 1518)).unwrap();
        let d = directions(&drive(&mut s, |t| dropping.trial(t)));
        assert_eq!(d[0].above.unwrap().crossing, Crossing::Dropped);
    }

    /// A DUT that loses a frame in every trial: nothing crosses whole, and the fate says the
    /// frames were partly lost (not dropped for their size).
    #[test]
    fn loss_at_every_size_is_not_a_threshold() {
        let dut = MtuDut {
            always_lost: 1,
            ..MtuDut::dropping(1500, 1500)
        };
        let mut s = MtuProbe::new(cfg(64, 1518)).unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_eq!(r.trials, 2);
        for x in directions(&r) {
            assert_eq!(x.largest_whole, None);
            let a = x.above.unwrap();
            assert_eq!((a.frame_size, a.crossing), (64, Crossing::Partial));
        }
    }

    /// A DUT wider than the tester's port: the threshold found is the tester's, and the fate
    /// above says the frame was not sent, never that the DUT dropped it.
    #[test]
    fn a_size_the_tester_cannot_send_is_not_blamed_on_the_dut() {
        let dut = MtuDut {
            tester_max: 1514,
            ..MtuDut::dropping(1472, 9000)
        };
        let mut s = MtuProbe::new(cfg(64, 1518)).unwrap();
        let d = directions(&drive(&mut s, |t| dut.trial(t)));
        assert_eq!(d[0].above.unwrap().crossing, Crossing::Dropped);
        assert_eq!(d[1].largest_whole, Some(1514));
        let a = d[1].above.unwrap();
        assert_eq!(
            (a.frame_size, a.crossing, a.sent),
            (1515, Crossing::NotSent, 0)
        );
    }

    #[test]
    fn a_path_wider_than_the_range_passes_at_the_largest_size() {
        let dut = MtuDut::dropping(9000, 9000);
        let mut s = MtuProbe::new(MtuProbeConfig {
            directions: vec![ProbeDirection::Reverse],
            ..cfg(64, 1518)
        })
        .unwrap();
        let r = drive(&mut s, |t| dut.trial(t));
        assert_eq!(r.trials, 2);
        let d = directions(&r);
        assert_eq!(d.len(), 1);
        assert_eq!((d[0].largest_whole, d[0].above), (Some(1518), None));
    }

    #[test]
    fn a_tester_limited_probe_stops_the_search() {
        let dut = MtuDut::dropping(1472, 1472);
        let mut s = MtuProbe::new(cfg(64, 1518)).unwrap();
        let r = drive(&mut s, |t| Outcome {
            offered: LineFraction(0.5),
            ..dut.trial(t)
        });
        assert!(matches!(r.status, Status::TesterLimited { .. }), "{r:?}");
        assert_eq!(r.trials, 1);
    }

    #[test]
    fn resumes_from_recorded_trials() {
        let dut = MtuDut::dropping(1478, 1470);
        let mut full = MtuProbe::new(cfg(64, 1518)).unwrap();
        let mut recorded = Vec::new();
        let want = drive(&mut full, |t| {
            let o = dut.trial(t);
            recorded.push((*t, o, false));
            o
        });
        let json = serde_json::to_string(&recorded).unwrap();
        let back: Vec<(TrialRequest, Outcome, bool)> = serde_json::from_str(&json).unwrap();
        let mut again = MtuProbe::new(cfg(64, 1518)).unwrap();
        assert_eq!(
            super::super::replay(&mut again, &back[..9]).unwrap(),
            Some(back[9].0)
        );
        let got = drive(&mut again, |t| dut.trial(t));
        assert_eq!(got.finding, want.finding);
    }

    #[test]
    fn refuses_configurations_that_cannot_work() {
        assert!(MtuProbe::new(cfg(1519, 1518)).is_err());
        assert!(MtuProbe::new(MtuProbeConfig {
            pps: 0,
            ..cfg(64, 1518)
        })
        .is_err());
        assert!(MtuProbe::new(MtuProbeConfig {
            directions: vec![],
            ..cfg(64, 1518)
        })
        .is_err());
    }
}
