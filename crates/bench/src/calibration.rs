//! The tester's own ceiling per frame size (DESIGN.md §1: "a tester must first prove that it
//! reaches that rate itself"), measured on the lab's `direct` topology (port A — port B, no
//! DUT) and stored as JSON.
//!
//! The ceiling is the highest rate at which the tester both sends and receives *exactly*: every
//! scheduled frame sent (none slipped), every one received once. Line rate is tried first;
//! below it a few trials step down from what was reached. A trial that came within
//! [`STALL_BAND`] of its load without being exact is a stall of the machine rather than the
//! tester's ceiling (a run measures such a trial again, [`crate::stall::MAX_STALL_RETRIES`] times):
//! it is measured again at the same load before stepping down, as often as a run would. On a
//! shared machine one stall in a one-second line-rate trial put a 512 B ceiling at 97.8 % —
//! and every DUT result near line rate at that size was then flagged tester-limited. When the ceiling is line rate, the
//! tester is proven for every load a plan can ask and no result is flagged against it; below
//! line rate, a DUT result within [`CEILING_MARGIN`] of the ceiling says more about the tester
//! than about the DUT and is flagged tester-limited.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use wire::encap::IpVersion;
use wire::units::BitsPerSec;

use crate::error::BenchError;
use wire::linerate::FrameSize;

/// A result at or above `(1 − CEILING_MARGIN) ×` the ceiling is tester-limited.
pub const CEILING_MARGIN: f64 = 0.10;

/// One measured ceiling.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CeilingEntry {
    /// IP version (4 or 6).
    pub ip: u8,
    /// Frame size with FCS.
    pub frame_size: u32,
    /// Frames/s the tester offered when asked for line rate.
    pub offered_pps: f64,
    /// Frames/s that arrived at the other port.
    pub received_pps: f64,
    /// The ceiling: the highest rate sent and received exactly (the offered rate of that
    /// trial); without an exact trial, the smaller of offered and received at line rate.
    pub ceiling_pps: f64,
    /// 100 % of the reference speed at this frame size, frames/s (0 in old files).
    #[serde(default)]
    pub line_pps: f64,
    /// Whether the ceiling comes from an exact trial (none slipped, lost or duplicated).
    #[serde(default)]
    pub exact: bool,
    /// The packet engine that ran the ceiling's trial (and why, when `auto` chose).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub backend: String,
    /// Trials it took.
    #[serde(default)]
    pub trials: u32,
}

impl CeilingEntry {
    /// The ceiling as a fraction of line rate (1.0 = the tester reaches line rate).
    pub fn fraction(&self) -> Option<f64> {
        (self.line_pps > 0.0).then(|| self.ceiling_pps / self.line_pps)
    }
}

/// A ceiling this close to line rate counts as line rate (the sender's own rate figure is a
/// measurement, within a few parts per million of the schedule).
pub const LINE_RATE_EPSILON: f64 = 0.001;

/// A stored calibration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// When it was measured, Unix seconds.
    pub measured_unix: u64,
    /// Where (lab name and topology).
    pub lab: String,
    /// Trial length per size, seconds.
    pub trial_seconds: f64,
    /// Reference line rate the trials asked for.
    pub speed_bps: f64,
    /// One entry per (IP version, frame size).
    pub entries: Vec<CeilingEntry>,
}

/// `$XDG_DATA_HOME/wirerate/calibration.json`, or `~/.local/share/wirerate/calibration.json`.
pub fn default_path() -> PathBuf {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("wirerate").join("calibration.json")
}

fn ip_number(ip: IpVersion) -> u8 {
    match ip {
        IpVersion::V4 => 4,
        IpVersion::V6 => 6,
    }
}

impl Calibration {
    /// Reads a calibration file.
    pub fn load(path: &Path) -> Result<Calibration, BenchError> {
        let text = crate::files::read_text(path)
            .map_err(|e| BenchError::Failed(format!("{}: {e}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|e| BenchError::Failed(format!("{}: {e}", path.display())))
    }

    /// Writes it (creating the directory), atomically. A path that exists and is not a regular
    /// file is refused ([`crate::files::check_output`]): the rename would replace it.
    pub fn save(&self, path: &Path) -> Result<(), BenchError> {
        crate::files::check_output(path)
            .map_err(|e| BenchError::Failed(format!("{}: {e}", path.display())))?;
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d)
                .map_err(|e| BenchError::Failed(format!("{}: {e}", d.display())))?;
        }
        let tmp = path.with_extension("json.tmp");
        let text =
            serde_json::to_string_pretty(self).map_err(|e| BenchError::Failed(e.to_string()))?;
        std::fs::write(&tmp, text + "\n")
            .map_err(|e| BenchError::Failed(format!("{}: {e}", tmp.display())))?;
        std::fs::rename(&tmp, path)
            .map_err(|e| BenchError::Failed(format!("{}: {e}", path.display())))
    }

    /// The ceiling for a frame size and IP version: the measured size itself, else the frames/s
    /// of the nearest measured size below it (a larger frame never goes faster in frames/s, so
    /// that bounds it from above), else `None`.
    pub fn ceiling_pps(&self, ip: IpVersion, frame_size: u32) -> Option<f64> {
        self.measured_ceiling_pps(ip, frame_size).or_else(|| {
            let ip = ip_number(ip);
            self.entries
                .iter()
                .filter(|e| e.ip == ip && e.frame_size < frame_size)
                .max_by_key(|e| e.frame_size)
                .map(|e| e.ceiling_pps)
        })
    }

    /// The ceiling measured at exactly this frame size and IP version, `None` when the
    /// calibration did not measure it: what the tester is known to carry, where
    /// [`Calibration::ceiling_pps`] also bounds unmeasured sizes from a smaller one.
    pub fn measured_ceiling_pps(&self, ip: IpVersion, frame_size: u32) -> Option<f64> {
        let ip = ip_number(ip);
        self.entries
            .iter()
            .find(|e| e.ip == ip && e.frame_size == frame_size)
            .map(|e| e.ceiling_pps)
    }

    /// Whether a result of `pps` is within [`CEILING_MARGIN`] of the ceiling. Never when the
    /// ceiling is line rate at `frame_size`: the tester is then proven for any load.
    pub fn is_tester_limited(&self, ip: IpVersion, frame_size: u32, pps: f64) -> Option<bool> {
        let line =
            wire::linerate::max_frame_rate(BitsPerSec(self.speed_bps), frame_size as usize).0;
        self.ceiling_pps(ip, frame_size)
            .map(|c| c < line * (1.0 - LINE_RATE_EPSILON) && pps >= c * (1.0 - CEILING_MARGIN))
    }
}

/// Most trials per (IP version, frame size): line rate, then steps down, plus the stalls
/// measured again.
const MAX_TRIALS: u32 = 4 + crate::stall::MAX_STALL_RETRIES;

/// A trial that was not exact but reached at least this share of its load fell behind for a
/// moment (a stall) and is measured again at the same load; below it, the tester's ceiling is
/// below the load and the next trial steps down.
pub const STALL_BAND: f64 = 0.98;

/// What the calibration does after a trial.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Next {
    /// The ceiling is found (an exact trial), or nothing was received at all.
    Done,
    /// A stall: the same load again.
    Again,
    /// The next trial, at this load.
    Down(f64),
}

/// After a trial at `load` that reached `reached` (the smaller of offered and received, as a
/// fraction of line rate) and was or was not `exact`, with `stalls_left` re-measurements of
/// stalls left for this frame size.
fn next_step(load: f64, reached: f64, exact: bool, stalls_left: u32) -> Next {
    if exact || reached <= 0.0 {
        Next::Done
    } else if stalls_left > 0 && reached >= load * STALL_BAND {
        Next::Again
    } else {
        Next::Down((reached * 0.98).min(load * 0.98))
    }
}

/// What one calibration trial showed.
struct Tried {
    load: f64,
    offered: f64,
    received: f64,
    exact: bool,
    backend: String,
}

/// Refuses, before a lab is built or anything measured, what cannot give a calibration:
/// frame sizes the lab's links cannot carry (MTU [`lab::LINK_MTU`], no jumbo frames:
/// `calibrate --sizes 64,9018` measured 64 B first, then failed), and sizes of which none
/// fits an IP version asked for (`--sizes 64 --ip 6`, `--sizes 0`: [`measure`] refuses them
/// too, but only after building its lab).
pub fn check_sizes(ips: &[IpVersion], sizes: &[u32]) -> Result<(), BenchError> {
    let largest = lab::LINK_MTU + 18;
    if let Some(bad) = sizes.iter().find(|&&s| s > largest) {
        return Err(BenchError::Usage(format!(
            "{bad} B does not fit the lab's links: their MTU {} carries frames of at most {largest} B (with FCS); the lab does not do jumbo frames",
            lab::LINK_MTU
        )));
    }
    let mut skipped = Vec::new();
    for &ip in ips {
        let min = wire::encap::EncapSpec::plain(ip).min_frame_size();
        for &size in sizes {
            if (size as usize) < min {
                skipped.push(format!("{size} B over {ip} (the smallest is {min} B)"));
            } else {
                return Ok(());
            }
        }
    }
    Err(BenchError::Usage(format!(
        "no frame size fits the IP versions asked for: {}; nothing measured, nothing saved",
        skipped.join(", ")
    )))
}

/// Why [`measure`] stopped without a calibration.
#[derive(Debug)]
pub enum MeasureError {
    /// The lab is not of the `direct` topology.
    NotDirect {
        lab: String,
        topology: lab::Topology,
    },
    /// The lab's ports could not be read.
    Lab(lab::LabError),
    /// A trial's spec could not be built.
    Spec(crate::spec::SpecError),
    /// A trial failed on the engine.
    Trial(BenchError),
    /// `stop` was set.
    Interrupted,
    /// The engine's report had no stream.
    NoStream,
    /// Every frame size asked for is too small for its IP version (each: what and why).
    NothingFits { skipped: Vec<String> },
}

impl std::fmt::Display for MeasureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MeasureError::NotDirect { lab, topology } => write!(
                f,
                "calibration needs the direct topology (lab {lab} is {topology})"
            ),
            MeasureError::Lab(e) => e.fmt(f),
            MeasureError::Spec(e) => e.fmt(f),
            MeasureError::Trial(e) => write!(f, "engine trial: {e}"),
            MeasureError::Interrupted => f.write_str("interrupted"),
            MeasureError::NoStream => f.write_str("the engine reported no stream"),
            MeasureError::NothingFits { skipped } => write!(
                f,
                "no frame size fits the IP versions asked for: {}; nothing measured, nothing saved",
                skipped.join(", ")
            ),
        }
    }
}

impl std::error::Error for MeasureError {}

/// Measures the ceiling on lab `lab` (which must use the `direct` topology): per IP version and
/// frame size, line rate of `speed` first, then (if that was not exact) trials stepping down
/// to 98 % of what the last one reached, a stall measured again at its load first
/// ([`next_step`]), at most [`MAX_TRIALS`] in all, each of `duration`, on `backend`.
#[allow(clippy::too_many_arguments)]
pub fn measure(
    lab: &lab::Lab,
    ips: &[IpVersion],
    sizes: &[u32],
    speed: BitsPerSec,
    duration: Duration,
    backend: engine::trial::Backend,
    stop: &AtomicBool,
    mut progress: impl FnMut(&CeilingEntry),
) -> Result<Calibration, MeasureError> {
    if lab.topology() != lab::Topology::Direct {
        return Err(MeasureError::NotDirect {
            lab: lab.name().to_string(),
            topology: lab.topology(),
        });
    }
    let (a, b) = crate::trial::lab_ports(lab).map_err(MeasureError::Lab)?;
    let mut entries = Vec::new();
    let mut skipped = Vec::new();
    for &ip in ips {
        let encap = wire::encap::EncapSpec::plain(ip);
        for &frame_size in sizes {
            if (frame_size as usize) < encap.min_frame_size() {
                skipped.push(format!(
                    "{frame_size} B over {ip} (the smallest is {} B)",
                    encap.min_frame_size()
                ));
                continue;
            }
            // One plain A→B stream at a fraction of line rate: the spec both front doors use.
            let trial = |load: f64| -> crate::spec::TrialSpec {
                let stream = crate::spec::StreamSpec::new(
                    encap,
                    FrameSize::Fixed {
                        bytes: frame_size as usize,
                    },
                    crate::spec::Load::LineFraction(load),
                    engine::stream::Limit::DurationNs(duration.as_nanos() as u64),
                );
                let mut spec = crate::spec::TrialSpec::new(vec![stream], speed);
                spec.drain = Duration::from_millis(300);
                spec.backend = backend;
                spec
            };
            let line = trial(1.0).streams[0].max_pps(speed).0;
            let mut tried: Vec<Tried> = Vec::new();
            let mut load = 1.0;
            let mut stalls_left = crate::stall::MAX_STALL_RETRIES;
            while tried.len() < MAX_TRIALS as usize {
                let built = trial(load)
                    .build(&a, &b, None)
                    .map_err(MeasureError::Spec)?;
                let report =
                    crate::spec::execute(&built.config, stop).map_err(MeasureError::Trial)?;
                if stop.load(std::sync::atomic::Ordering::SeqCst) {
                    return Err(MeasureError::Interrupted);
                }
                let s = report.streams.first().ok_or(MeasureError::NoStream)?;
                let exact = s.tx.slipped == 0
                    && s.rx.received == s.tx.sent
                    && s.rx.lost.unwrap_or(0) == 0
                    && s.rx.duplicates == 0
                    && s.tx.sent > 0;
                let secs = duration.as_secs_f64();
                let this = Tried {
                    load,
                    offered: s.tx.achieved_pps.0,
                    received: s.rx.received as f64 / secs,
                    exact,
                    backend: report.backend_note.clone(),
                };
                let reached = this.offered.min(this.received) / line;
                tried.push(this);
                match next_step(load, reached, exact, stalls_left) {
                    Next::Done => break,
                    Next::Again => stalls_left -= 1,
                    Next::Down(next) => load = next,
                }
            }
            let best = tried
                .iter()
                .filter(|t| t.exact)
                .max_by(|x, y| x.load.total_cmp(&y.load));
            let first = &tried[0];
            let e = match best {
                Some(t) => CeilingEntry {
                    ip: ip_number(ip),
                    frame_size,
                    offered_pps: t.offered,
                    received_pps: t.received,
                    // An exact trial at line rate proves line rate (its rate figure is a
                    // measurement a few ppm off the schedule).
                    ceiling_pps: if t.load >= 1.0 { line } else { t.offered },
                    line_pps: line,
                    exact: true,
                    backend: t.backend.clone(),
                    trials: tried.len() as u32,
                },
                None => CeilingEntry {
                    ip: ip_number(ip),
                    frame_size,
                    offered_pps: first.offered,
                    received_pps: first.received,
                    ceiling_pps: first.offered.min(first.received),
                    line_pps: line,
                    exact: false,
                    backend: first.backend.clone(),
                    trials: tried.len() as u32,
                },
            };
            progress(&e);
            entries.push(e);
        }
    }
    if entries.is_empty() {
        return Err(MeasureError::NothingFits { skipped });
    }
    Ok(Calibration {
        measured_unix: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        lab: format!("{} ({})", lab.name(), lab.topology()),
        trial_seconds: duration.as_secs_f64(),
        speed_bps: speed.0,
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cal() -> Calibration {
        let e = |frame_size, ceiling_pps| CeilingEntry {
            ip: 4,
            frame_size,
            offered_pps: ceiling_pps,
            received_pps: ceiling_pps,
            ceiling_pps,
            line_pps: wire::linerate::max_frame_rate(BitsPerSec(1e9), frame_size as usize).0,
            exact: true,
            backend: String::new(),
            trials: 1,
        };
        Calibration {
            measured_unix: 0,
            lab: "cal".into(),
            trial_seconds: 1.0,
            speed_bps: 1e9,
            entries: vec![e(64, 500_000.0), e(1518, 80_000.0)],
        }
    }

    #[test]
    fn ceiling_lookup_and_margin() {
        let c = cal();
        assert_eq!(c.ceiling_pps(IpVersion::V4, 64), Some(500_000.0));
        // 512 B: not measured; the 64 B ceiling bounds it from above.
        assert_eq!(c.ceiling_pps(IpVersion::V4, 512), Some(500_000.0));
        assert_eq!(c.ceiling_pps(IpVersion::V6, 64), None);
        assert_eq!(
            c.is_tester_limited(IpVersion::V4, 64, 460_000.0),
            Some(true)
        );
        assert_eq!(
            c.is_tester_limited(IpVersion::V4, 64, 440_000.0),
            Some(false)
        );
    }

    #[test]
    fn a_tester_proven_at_line_rate_flags_nothing() {
        let mut c = cal();
        let line = wire::linerate::max_frame_rate(BitsPerSec(1e9), 64).0;
        c.entries[0].ceiling_pps = line;
        // The DUT forwarding line rate is a DUT figure, not the tester's limit.
        assert_eq!(c.is_tester_limited(IpVersion::V4, 64, line), Some(false));
        // 512 B borrows the 64 B ceiling, which is above 512 B's line rate.
        assert_eq!(
            c.is_tester_limited(IpVersion::V4, 512, 234_962.0),
            Some(false)
        );
        // 1518 B: 80 kpps measured, below its 81,274 fps line rate: still flagged near it.
        assert_eq!(
            c.is_tester_limited(IpVersion::V4, 1518, 79_000.0),
            Some(true)
        );
    }

    #[test]
    fn a_stall_is_measured_again_before_stepping_down() {
        // Exact: done, at any load.
        assert_eq!(next_step(1.0, 1.0, true, 2), Next::Done);
        assert_eq!(next_step(0.5, 0.5, true, 0), Next::Done);
        // Nothing arrived: no step down can help.
        assert_eq!(next_step(1.0, 0.0, false, 2), Next::Done);
        // 99.8 % of line rate with a few frames slipped: a stall, line rate again.
        assert_eq!(next_step(1.0, 0.998, false, 2), Next::Again);
        assert_eq!(next_step(1.0, 0.998, false, 1), Next::Again);
        // ... until the stalls' budget is spent: then down to 98 % of what was reached.
        match next_step(1.0, 0.998, false, 0) {
            Next::Down(l) => assert!((l - 0.998 * 0.98).abs() < 1e-12, "{l}"),
            other => panic!("{other:?}"),
        }
        // 84 % of line rate: the tester's ceiling, not a stall; down at once.
        match next_step(1.0, 0.84, false, 2) {
            Next::Down(l) => assert!((l - 0.84 * 0.98).abs() < 1e-12, "{l}"),
            other => panic!("{other:?}"),
        }
        // The band is relative to the load asked: 81 % of line rate at a load of 82 % is a
        // stall there.
        assert_eq!(next_step(0.82, 0.81, false, 2), Next::Again);
    }

    #[test]
    fn sizes_the_lab_cannot_carry_are_refused_before_measuring() {
        let both = [IpVersion::V4, IpVersion::V6];
        check_sizes(&both, &[64, 82, 512, 1518]).unwrap();
        check_sizes(&[IpVersion::V6], &[64, 82]).unwrap();
        let e = check_sizes(&both, &[64, 9018]).unwrap_err();
        assert!(matches!(e, BenchError::Usage(_)), "the user's sizes: {e:?}");
        let e = e.to_string();
        assert!(
            e.contains("9018 B does not fit") && e.contains("1518 B"),
            "{e}"
        );
        // Issue 19 row 8: nothing usable is an error, never an empty calibration saved.
        let e = check_sizes(&[IpVersion::V6], &[64])
            .unwrap_err()
            .to_string();
        assert!(e.contains("64 B over ipv6 (the smallest is 82 B)"), "{e}");
        let e = check_sizes(&both, &[0]).unwrap_err().to_string();
        assert!(e.contains("nothing saved"), "{e}");
        assert!(check_sizes(&both, &[]).is_err());
    }

    #[test]
    fn a_fifo_or_device_is_never_replaced_by_save() {
        // A FIFO stands in for /dev/null, which this test must never risk replacing.
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("calibration.json");
        let st = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("running mkfifo (coreutils)");
        assert!(st.success(), "mkfifo: {st}");
        let e = cal().save(&fifo).unwrap_err();
        assert!(matches!(e, BenchError::Failed(_)), "{e:?}");
        assert!(e.to_string().contains("a FIFO"), "{e}");
        use std::os::unix::fs::FileTypeExt;
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
        assert!(!dir.path().join("calibration.json.tmp").exists());
    }

    #[test]
    fn save_and_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/calibration.json");
        cal().save(&p).unwrap();
        assert_eq!(Calibration::load(&p).unwrap(), cal());
    }
}
