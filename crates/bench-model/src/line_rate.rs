//! A path's 100 %: the figure every load of a UDP trial is a fraction of. Its own module
//! because the plan computes it (`Plan::line_rate`) and the results record it
//! (`results::UdpFacts::line`): in either, the plan and the results would import each other.

use serde::{Deserialize, Serialize};
use wire::encap::EncapSpec;
use wire::linerate::FrameSize;
use wire::units::{BitsPerSec, Pps};

/// 100 % load of one direction of a path: the slowest link's frame rate, with the bytes of
/// its encapsulation (DESIGN.md §4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LineRate {
    /// Test frames per second, one direction.
    pub pps: Pps,
    /// The same at L2 (frames with FCS) on the reference link, bits/s.
    pub l2_bps: BitsPerSec,
    /// The link that limits the rate (`wire::linerate::LinkLoad::link`).
    pub bottleneck: String,
}

impl LineRate {
    /// One direction of `wire::linerate::Path::router(speed, encap, 1500)` for `frame`;
    /// `None` when the frame does not fit the path.
    pub fn on_path(speed: BitsPerSec, encap: EncapSpec, frame: &FrameSize) -> Option<LineRate> {
        let path = wire::linerate::Path::router(speed, encap, wire::linerate::ETHERNET_MTU);
        let r = path.rate(frame, false).ok()?;
        Some(LineRate {
            pps: r.max_pps,
            l2_bps: r.total_l2,
            bottleneck: r
                .links
                .get(r.bottleneck)
                .map(|l| l.link.clone())
                .unwrap_or_default(),
        })
    }

    /// This rate times `directions` (a bidirectional trial's 100 % is the sum of both).
    pub fn times(&self, directions: u8) -> (Pps, BitsPerSec) {
        let d = f64::from(directions.max(1));
        (self.pps * d, self.l2_bps * d)
    }
}
