//! The tester's own ceiling per frame size (DESIGN.md §1: "a tester must first prove that it
//! reaches that rate itself"), measured on the lab's `direct` topology (port A — port B, no
//! DUT) and stored as JSON. A DUT result within [`CEILING_MARGIN`] of the ceiling says more
//! about the tester than about the DUT and is flagged tester-limited.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use wire::encap::IpVersion;
use wire::units::BitsPerSec;

use crate::search::{LineFraction, TrialRequest};
use crate::trial::UdpTrial;

/// A result at or above `(1 − CEILING_MARGIN) ×` the ceiling is tester-limited.
pub const CEILING_MARGIN: f64 = 0.10;

/// One measured ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CeilingEntry {
    /// IP version (4 or 6).
    pub ip: u8,
    /// Frame size with FCS.
    pub frame_size: u32,
    /// Frames/s the tester offered when asked for line rate.
    pub offered_pps: f64,
    /// Frames/s that arrived at the other port.
    pub received_pps: f64,
    /// The ceiling: the smaller of the two.
    pub ceiling_pps: f64,
}

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
    pub fn load(path: &Path) -> Result<Calibration, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// Writes it (creating the directory), atomically.
    pub fn save(&self, path: &Path) -> Result<(), String> {
        if let Some(d) = path.parent() {
            std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        let tmp = path.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        std::fs::write(&tmp, text + "\n").map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The ceiling for a frame size and IP version: the measured size itself, else the nearest
    /// measured size above it scaled by frame length (a larger frame never goes faster in
    /// frames/s), else `None`.
    pub fn ceiling_pps(&self, ip: IpVersion, frame_size: u32) -> Option<f64> {
        let ip = ip_number(ip);
        let same: Vec<&CeilingEntry> = self.entries.iter().filter(|e| e.ip == ip).collect();
        if let Some(e) = same.iter().find(|e| e.frame_size == frame_size) {
            return Some(e.ceiling_pps);
        }
        same.iter()
            .filter(|e| e.frame_size < frame_size)
            .max_by_key(|e| e.frame_size)
            .map(|e| e.ceiling_pps)
    }

    /// Whether a result of `pps` is within [`CEILING_MARGIN`] of the ceiling.
    pub fn is_tester_limited(&self, ip: IpVersion, frame_size: u32, pps: f64) -> Option<bool> {
        self.ceiling_pps(ip, frame_size)
            .map(|c| pps >= c * (1.0 - CEILING_MARGIN))
    }
}

/// Measures the ceiling on lab `lab` (which must use the `direct` topology): per IP version and
/// frame size, one trial of `duration` asking for line rate of `speed`.
pub fn measure(
    lab: &lab::Lab,
    ips: &[IpVersion],
    sizes: &[u32],
    speed: BitsPerSec,
    duration: Duration,
    stop: &AtomicBool,
    mut progress: impl FnMut(&CeilingEntry),
) -> Result<Calibration, String> {
    if lab.topology() != lab::Topology::Direct {
        return Err(format!(
            "calibration needs the direct topology (lab {} is {})",
            lab.name(),
            lab.topology()
        ));
    }
    let (a, b) = crate::trial::lab_ports(lab).map_err(|e| e.to_string())?;
    let mut entries = Vec::new();
    for &ip in ips {
        let encap: wire::encap::EncapSpec = match ip {
            IpVersion::V4 => "ipv4",
            IpVersion::V6 => "ipv6",
        }
        .parse()
        .map_err(|e| format!("{e}"))?;
        for &frame_size in sizes {
            if (frame_size as usize) < encap.min_frame_size() {
                continue; // too small for this IP version plus the signature
            }
            let t = UdpTrial {
                ip,
                frame_size,
                speed,
                drain: Duration::from_millis(300),
            };
            let req = TrialRequest::rate(LineFraction::FULL, duration);
            let (_, report) = t.run(&a, &b, &req, stop)?;
            if stop.load(std::sync::atomic::Ordering::SeqCst) {
                return Err("interrupted".into());
            }
            let s = report
                .streams
                .first()
                .ok_or("the engine reported no stream")?;
            let secs = duration.as_secs_f64();
            let offered = s.tx.achieved_pps;
            let received = s.rx.received as f64 / secs;
            let e = CeilingEntry {
                ip: ip_number(ip),
                frame_size,
                offered_pps: offered,
                received_pps: received,
                ceiling_pps: offered.min(received),
            };
            progress(&e);
            entries.push(e);
        }
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
    fn save_and_load_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/calibration.json");
        cal().save(&p).unwrap();
        assert_eq!(Calibration::load(&p).unwrap(), cal());
    }
}
