//! `[methodology.mtu-probe]`: the settings of [`search::MtuProbe`] and the search they give
//! for a case.
//!
//! The probe runs once per matrix block position, in the case with the block's largest frame
//! size ([`super::Plan::cases`] keeps `mtu-probe` only there): that size is the top of the
//! search, `min-size` (raised to the IP version's smallest test frame) the bottom. The
//! reverse direction is probed when the block is `bidirectional` (port B then sends, as in
//! every bidirectional trial, with the same checks of its next hop and encapsulation).

use core::time::Duration;

use serde::{Deserialize, Serialize};

use super::Case;
use crate::search::{self, MtuProbeConfig, ProbeDirection};

/// `[methodology.mtu-probe]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct MtuProbeSettings {
    /// The smallest reference frame size probed (bytes with FCS).
    pub min_size: u32,
    /// Frames per second of every probe trial: low, so the rate never decides the answer.
    pub rate: u32,
    /// Length of every probe trial.
    #[serde(with = "crate::secs")]
    pub duration: Duration,
}

impl Default for MtuProbeSettings {
    fn default() -> Self {
        MtuProbeSettings {
            min_size: 64,
            rate: 1000,
            duration: Duration::from_secs(1),
        }
    }
}

/// The probe's bounds and directions for `case`: from `min-size` (at least the smallest test
/// frame of the case's IP version) to the case's frame size.
/// `tester_tolerance` is the run's; a probe uses [`search::PROBE_TESTER_TOLERANCE`] when that
/// is wider.
pub fn config(s: &MtuProbeSettings, case: &Case, tester_tolerance: f64) -> MtuProbeConfig {
    let max_size = case
        .dims
        .frame
        .and_then(|f| f.fixed())
        .map_or(1518, |b| b as u32);
    let smallest = wire::encap::min_frame_size(case.dims.ip) as u32;
    let mut directions = vec![ProbeDirection::Forward];
    if case.dims.bidirectional {
        directions.push(ProbeDirection::Reverse);
    }
    MtuProbeConfig {
        min_size: s.min_size.max(smallest).min(max_size),
        max_size,
        pps: s.rate,
        duration: s.duration,
        directions,
        tester_tolerance: tester_tolerance.max(search::PROBE_TESTER_TOLERANCE),
    }
}

/// The search for `case`; `None` only on a bug (the parser checked the settings).
pub fn search(s: &MtuProbeSettings, case: &Case, tol: f64) -> Option<search::MtuProbe> {
    search::MtuProbe::new(config(s, case, tol)).ok()
}
