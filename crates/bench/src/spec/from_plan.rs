//! A plan's UDP case and a search's request as a [`TrialSpec`]: the plan front door's mapping
//! (the `wirerate trial` one is [`crate::streams::StreamDef::spec`]).

use engine::stream::{FlowMode, Flows, Limit};
use engine::tx::TxBackend;
use wire::encap::EncapSpec;
use wire::linerate::FrameSize;

use super::{Direction, Load, SpecError, StreamSpec, TrialSpec};
use crate::plan::{Case, Plan, StreamSettings, TxMethod};
use crate::search::{ProbeDirection, TrialRequest};
use crate::trial::engine_backend;

/// How long receivers keep counting after a UDP trial's last frame unless the plan's
/// `run.drain` says otherwise ([`crate::plan::DEFAULT_DRAIN`]).
pub const UDP_DRAIN: std::time::Duration = crate::plan::DEFAULT_DRAIN;

/// Whether port `i` of the plan plays a PPPoE session, DS-Lite softwire, IPoE link or MAP-E
/// BR (it then sends inside it, through the testbed's [`super::Carrier`] or reverse stream).
fn plays_session(plan: &Plan, i: usize) -> bool {
    plan.ports.get(i).is_some_and(|p| {
        p.pppoe.is_some() || p.dslite.is_some() || p.ipoe.is_some() || p.mape.is_some()
    })
}

/// The encapsulation port A sends `case`'s frames in: PPPoE or DS-Lite when it plays the
/// session or softwire, else plain (a plan's `encap` is the far link's, which the DUT adds).
fn sent_encap(plan: &Plan, case: &Case) -> EncapSpec {
    let mut e = EncapSpec::plain(case.dims.ip);
    if let Some(p) = plan.ports.first() {
        e.pppoe = p.pppoe.is_some();
        e.dslite = p.dslite.is_some();
    }
    e
}

/// The flows of `case`'s streams: `[run]`'s counts, its `flows` dimension as the source ports,
/// stepped or pseudorandom from `run.random-seed` (RFC 4814), as `wirerate trial --src-ips`
/// … `--random-seed` give them.
fn flows(s: &StreamSettings, case: &Case) -> Flows {
    Flows {
        src_ip_count: s.src_ips,
        dst_ip_count: s.dst_ips,
        src_port_count: case.dims.flows.unwrap_or(s.src_ports),
        dst_port_count: s.dst_ports,
        mode: s
            .random_seed
            .map_or(FlowMode::Increment, |seed| FlowMode::Random { seed }),
    }
}

/// The spec of one UDP trial of `case` at `request`: one stream from A at `request.load` of the
/// path's line rate (of the far link's encapsulation, [`Plan::path_encap`]), or at the probe's
/// own rate for an `mtu-probe` trial; both ways when the case is bidirectional and port B is
/// plain. When port B plays a session, softwire or IPoE lease its reverse stream is the
/// testbed's to add (it is built from the session's headers or the lease, known only once it
/// is up). A reverse
/// probe is built like a bidirectional trial; the caller drops the forward stream.
pub fn udp_spec(plan: &Plan, case: &Case, request: &TrialRequest) -> Result<TrialSpec, SpecError> {
    let (size, load) = match request.probe {
        Some(p) => (
            FrameSize::Fixed {
                bytes: p.frame_size as usize,
            },
            Load::Pps((request.load.0 * f64::from(p.pps)).max(1.0)),
        ),
        None => (
            case.frame().ok_or_else(|| SpecError::NoFrameSize {
                case: case.id.clone(),
            })?,
            Load::from(request.load),
        ),
    };
    let reverse_probe = request
        .probe
        .is_some_and(|p| p.direction == ProbeDirection::Reverse);
    let both = request
        .probe
        .map_or(case.dims.bidirectional, |_| reverse_probe);
    let limit = match request.burst_frames {
        Some(n) => Limit::Frames(n),
        None => Limit::DurationNs(request.duration.as_nanos() as u64),
    };
    let mut s = StreamSpec::new(sent_encap(plan, case), size, load, limit);
    s.far_encap = Some(plan.path_encap(case));
    if both && !plays_session(plan, 1) {
        s.direction = Direction::Both;
    }
    let st = &plan.run.stream;
    s.flows = flows(st, case);
    s.tos = case.dims.tos.unwrap_or(st.tos);
    s.reorder_every = st.reorder_every;
    // A back-to-back trial is one burst of its own; plan check refuses `run.burst` with it.
    if request.burst_frames.is_none() {
        s.burst = st.burst;
        s.burst_gap = st.burst_gap;
    }
    let mut spec = TrialSpec::new(vec![s], plan.speed());
    spec.drain = st.drain;
    spec.tx_method = match st.tx_method {
        TxMethod::Ring => TxBackend::Ring,
        TxMethod::Sendmmsg => TxBackend::Sendmmsg,
    };
    spec.backend = engine_backend(plan.run.backend);
    spec.tx_threads = usize::from(plan.run.tx_threads);
    spec.rx_threads = usize::from(plan.run.rx_threads);
    Ok(spec)
}
