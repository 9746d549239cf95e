//! A plan's UDP case and a search's request as a [`TrialSpec`]: the plan front door's mapping
//! (the `wirerate trial` one is [`crate::streams::StreamDef::spec`]).

use engine::stream::Limit;
use wire::encap::EncapSpec;
use wire::linerate::FrameSize;

use super::{Direction, Load, StreamSpec, TrialSpec};
use crate::plan::{Case, Plan};
use crate::search::{ProbeDirection, TrialRequest};
use crate::trial::engine_backend;

/// How long receivers keep counting after a UDP trial's last frame: far longer than any lab
/// or home-gateway queue holds a frame (the lab DUT's backlog of 1,000 frames drains in a few
/// ms); a frame later than this is lost, as RFC 2544 §26.1 asks.
pub const UDP_DRAIN: std::time::Duration = std::time::Duration::from_millis(100);

/// Whether port `i` of the plan plays a PPPoE session or DS-Lite softwire (it then sends
/// inside it, through the testbed's [`super::Carrier`]).
fn plays_session(plan: &Plan, i: usize) -> bool {
    plan.ports
        .get(i)
        .is_some_and(|p| p.pppoe.is_some() || p.dslite.is_some())
}

/// The encapsulation port A sends `case`'s frames in: PPPoE or DS-Lite when it plays the
/// session or softwire, else plain (a plan's `encap` is the far link's, which the DUT adds).
fn sent_encap(plan: &Plan, case: &Case) -> EncapSpec {
    let mut e = EncapSpec::plain(case.ip);
    if let Some(p) = plan.ports.first() {
        e.pppoe = p.pppoe.is_some();
        e.dslite = p.dslite.is_some();
    }
    e
}

/// The spec of one UDP trial of `case` at `request`: one stream from A at `request.load` of the
/// path's line rate (of the far link's encapsulation, [`Plan::path_encap`]), or at the probe's
/// own rate for an `mtu-probe` trial; both ways when the case is bidirectional and port B is
/// plain. When port B plays a session or softwire its reverse stream is the testbed's to add
/// (it is built from the session's headers, known only once the session is up). A reverse
/// probe is built like a bidirectional trial; the caller drops the forward stream.
pub fn udp_spec(plan: &Plan, case: &Case, request: &TrialRequest) -> Result<TrialSpec, String> {
    let (bytes, load) = match request.probe {
        Some(p) => (
            p.frame_size,
            Load::Pps((request.load.0 * f64::from(p.pps)).max(1.0)),
        ),
        None => (
            case.frame_size
                .ok_or_else(|| format!("{}: UDP case without a frame size", case.id))?,
            Load::from(request.load),
        ),
    };
    let reverse_probe = request
        .probe
        .is_some_and(|p| p.direction == ProbeDirection::Reverse);
    let both = request.probe.map_or(case.bidirectional, |_| reverse_probe);
    let limit = match request.burst_frames {
        Some(n) => Limit::Frames(n),
        None => Limit::DurationNs(request.duration.as_nanos() as u64),
    };
    let mut s = StreamSpec::new(
        sent_encap(plan, case),
        FrameSize::Fixed {
            bytes: bytes as usize,
        },
        load,
        limit,
    );
    s.far_encap = Some(plan.path_encap(case));
    if both && !plays_session(plan, 1) {
        s.direction = Direction::Both;
    }
    let mut spec = TrialSpec::new(vec![s], plan.speed());
    spec.drain = UDP_DRAIN;
    spec.backend = engine_backend(plan.run.backend);
    spec.tx_threads = usize::from(plan.run.tx_threads);
    spec.rx_threads = usize::from(plan.run.rx_threads);
    Ok(spec)
}
