//! A case's path and its 100 %: the reference link speed, the encapsulation test frames carry
//! on the far link, and the line rate the testbed paces to and the records carry.

use wire::units::BitsPerSec;

use super::case::Case;
use super::vocabulary::Topology;
use super::Plan;

impl Plan {
    /// Reference link speed of the case's path.
    pub fn speed(&self) -> BitsPerSec {
        match &self.topology {
            Topology::Lab { speed, .. } => *speed,
            Topology::Interfaces => self
                .ports
                .iter()
                .filter_map(|p| p.speed)
                .reduce(|a, b| if b.0 < a.0 { b } else { a })
                .unwrap_or(BitsPerSec(1e9)),
        }
    }

    /// The encapsulation test frames of `case` carry on the far link: PPPoE when a port
    /// plays a PPPoE session, else the plain frame.
    pub fn path_encap(&self, case: &Case) -> wire::encap::EncapSpec {
        // The case's own `encap` (plan check made it agree with the ports) comes first.
        if let Some(e) = case.dims.encap {
            return e;
        }
        let plain = wire::encap::EncapSpec::plain(case.dims.ip);
        if self.ports.iter().any(|p| p.pppoe.is_some()) {
            let mut e = plain;
            e.pppoe = true;
            e
        } else {
            plain
        }
    }

    /// 100 % load of a UDP `case` in frames/s: the slowest link of its path, each link's
    /// frames with the bytes its encapsulation adds (a PPPoE link carries frame + 8),
    /// DESIGN.md §4.
    pub fn line_pps(&self, case: &Case) -> wire::units::Pps {
        self.line_rate(case).pps
    }

    /// [`Plan::line_pps`] with its L2 rate and bottleneck link, as trial records carry it
    /// ([`crate::results::UdpFacts::line`]); its frames/s are always
    /// `wire::linerate::path_max_pps`'s, the 100 % `wirerate trial` uses too (a size the path
    /// cannot carry falls back to the frame as sent on one link).
    pub fn line_rate(&self, case: &Case) -> crate::line_rate::LineRate {
        let frame = case
            .frame()
            .unwrap_or(wire::linerate::FrameSize::Fixed { bytes: 64 });
        let size = frame.mean(case.dims.ip);
        match crate::line_rate::LineRate::on_path(self.speed(), self.path_encap(case), &frame) {
            Some(r) if r.pps.0 > 0.0 => r,
            _ => {
                // The one 100 % of a size the path cannot carry (wire::linerate::path_max_pps):
                // the frame as sent, its encapsulation included, on one link.
                let encap = self.path_encap(case);
                let pps = wire::linerate::path_max_pps(self.speed(), encap, &frame);
                crate::line_rate::LineRate {
                    pps,
                    l2_bps: wire::units::BitsPerSec(pps.0 * (size + encap.overhead() as f64) * 8.0),
                    bottleneck: "link".into(),
                }
            }
        }
    }
}
