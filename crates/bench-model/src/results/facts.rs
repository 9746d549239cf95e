//! Typed facts a run directory carries so that a report reads them instead of re-deriving
//! them (#18 item 3): what the run measured (`run.json`'s [`RunFacts`]: the cases as the
//! runner expanded them, the link speed, repetitions, profiles), and per trial what its
//! numbers mean ([`UdpFacts`]: frame size, encapsulation on the path, the path's 100 % and the
//! offered rate; [`TcpFacts`]: frame length, directions and the line rate of an iperf3 run).
//!
//! Every figure here is computed by one function that both the runner (when it records) and
//! the report's compatibility reader (for runs recorded before these facts existed) call, so
//! old and new runs cannot disagree on the arithmetic.

use serde::{Deserialize, Serialize};
use wire::encap::{EncapSpec, IpVersion};
use wire::linerate::FrameSize;
use wire::units::{BitsPerSec, Pps};

use crate::iperf3::wire_count::WireCount;
use crate::line_rate::LineRate;
use crate::plan::{Case, Plan};

/// What a run measures, written once to `run.json` from the runner's one expansion of the
/// plan, so a report needs neither the plan parser nor the matrix expansion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunFacts {
    /// The reference link speed (`Plan::speed`), bits/s.
    pub speed_bps: BitsPerSec,
    /// Repetitions per case.
    pub repetitions: u32,
    /// DUT profiles in plan order (the first is the findings' baseline).
    pub profiles: Vec<String>,
    /// The plan's description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The plan's port names in order (the first two name an MTU probe's directions).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<String>,
    /// Every case of the plan, as expanded (ids, dimensions, methodologies).
    pub cases: Vec<Case>,
    /// The links under the plan's real ports as the preflight found them (wire speed,
    /// offloads, the tester's own drop counters); empty for a lab run, whose links are shaped
    /// to `speed_bps`, and in runs recorded before these facts existed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<crate::port_link::PortLink>,
}

impl RunFacts {
    /// The facts of `plan`, whose expanded cases are `cases`.
    pub fn of(plan: &Plan, cases: &[Case]) -> RunFacts {
        RunFacts {
            speed_bps: plan.speed(),
            repetitions: plan.run.repetitions,
            profiles: plan.dut.profiles.iter().map(|p| p.name.clone()).collect(),
            description: plan.description.clone(),
            ports: plan.ports.iter().map(|p| p.name.clone()).collect(),
            cases: cases.to_vec(),
            links: Vec::new(),
        }
    }
}

/// What the numbers of one UDP trial mean, as the runner knew it when it recorded the trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UdpFacts {
    /// The reference frame size (`{"kind": "fixed", "bytes": 64}`, or `{"kind": "imix"}`).
    pub frame: FrameSize,
    /// The headers the test frames carry on the path's far link (`Plan::path_encap`).
    pub encap: EncapSpec,
    /// The 100 % every load of the trial is a fraction of, per direction.
    pub line: LineRate,
    /// The rate the tester offered, frames/s per direction (`Outcome::offered` × `line.pps`).
    pub offered_pps: Pps,
}

impl UdpFacts {
    /// The facts of a trial of `case` that offered `offered` of line rate; `None` for a case
    /// without a frame size.
    pub fn of(plan: &Plan, case: &Case, offered: f64) -> Option<UdpFacts> {
        let frame = case.frame()?;
        let encap = plan.path_encap(case);
        let line = plan.line_rate(case);
        Some(UdpFacts {
            frame,
            encap,
            offered_pps: line.pps * offered,
            line,
        })
    }

    /// The frame size in bytes, `None` for a mix.
    pub fn frame_bytes(&self) -> Option<u32> {
        match self.frame {
            FrameSize::Fixed { bytes } => u32::try_from(bytes).ok(),
            FrameSize::Imix => None,
        }
    }
}

/// What the numbers of one iperf3 run mean: the frame they are counted in and its line rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TcpFacts {
    /// 1, or 2 when data flowed both ways at once (`--bidir`): rates are sums of both.
    pub directions: u8,
    /// Mean frame length with FCS the rates are counted in: the port counters' mean when the
    /// runner counted the wire, else the full-size segment frame of the MSS (timestamps
    /// assumed, payload = MSS − 12).
    pub frame_len: f64,
    /// Line rate of that frame, frames/s per direction, at the reference link speed.
    pub line_pps: Pps,
}

impl TcpFacts {
    /// The facts of an iperf3 run that moved `l4` with segments of `mss` over `ip`, counted on
    /// the wire as `wire` when it was, at link `speed`.
    pub fn derive(
        speed: BitsPerSec,
        ip: IpVersion,
        l4: BitsPerSec,
        mss: u32,
        wire: Option<&WireCount>,
        directions: u8,
    ) -> TcpFacts {
        let rates = crate::iperf3::tcp_rates(l4, mss, ip, true);
        let frame_len = match wire.filter(|w| w.frames > 0 && w.seconds > 0.0) {
            Some(w) => w.mean_frame_len(),
            None => f64::from(rates.frame_len),
        };
        TcpFacts {
            directions,
            frame_len,
            line_pps: wire::linerate::max_frame_rate(speed, frame_len as usize),
        }
    }

    /// The 100 % of all directions, frames/s.
    pub fn max_pps(&self) -> Pps {
        self.line_pps * f64::from(self.directions.max(1))
    }
}
