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
/// BR (it then sends inside it, through the testbed's [`super::Carrier`]).
pub fn plays_session(plan: &Plan, i: usize) -> bool {
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
/// own rate for an `mtu-probe` trial. A bidirectional case adds the B→A stream at the same
/// load (RFC 2544 §14): the same definition both ways when port B is plain; when port B plays
/// a session, softwire, BR or IPoE lease, a stream of its own in B's encapsulation
/// ([`reply_encap`]), which the testbed's [`super::Carrier`] puts inside what B plays (the
/// reply to what the DUT made of the forward stream). A reverse probe sends the B→A stream
/// alone, as stream 2 like in a bidirectional trial.
pub fn udp_spec(plan: &Plan, case: &Case, request: &TrialRequest) -> Result<TrialSpec, SpecError> {
    let forward = forward_stream(plan, case, request, probe_or_case_size(case, request)?)?;
    let reverse_probe = request
        .probe
        .is_some_and(|p| p.direction == ProbeDirection::Reverse);
    let both = request
        .probe
        .map_or(case.dims.bidirectional, |_| reverse_probe);
    let streams = match (both, plays_session(plan, 1)) {
        (false, _) => vec![forward],
        (true, false) if reverse_probe => vec![StreamSpec {
            direction: Direction::BToA,
            first_id: Some(2),
            ..forward
        }],
        (true, false) => vec![StreamSpec {
            direction: Direction::Both,
            ..forward
        }],
        (true, true) => {
            let reverse = StreamSpec {
                direction: Direction::BToA,
                encap: reply_encap(plan, case),
                first_id: Some(2),
                ..forward.clone()
            };
            if reverse_probe {
                vec![reverse]
            } else {
                vec![forward, reverse]
            }
        }
    };
    Ok(trial_spec(plan, streams))
}

/// How many frames RFC 2544 §11 learning sends before a trial that needs it, and how fast
/// ([`learning_spec`]).
pub const LEARNING_FRAMES: u64 = 20;
pub const LEARNING_PPS: f64 = 1000.0;

/// The learning frames of `case` at `request` (RFC 2544 §11): a few frames of the forward
/// stream only, so a CPE's NAPT holds the mapping a reverse stream's frames are the reply to,
/// and an AFTR or BR has heard from the CPE. A reverse probe's size may be one the forward
/// direction does not carry, so it learns with the smallest frame instead. Sent on AF_PACKET,
/// whose receiver leaves the frames to the port's control plane too (an XDP receiver would
/// take them from under the AFTR), with a short drain: what arrives is not counted.
pub fn learning_spec(
    plan: &Plan,
    case: &Case,
    request: &TrialRequest,
) -> Result<TrialSpec, SpecError> {
    let size = match request.probe {
        Some(p) if p.direction == ProbeDirection::Reverse => FrameSize::Fixed {
            bytes: wire::encap::min_frame_size(case.dims.ip),
        },
        _ => probe_or_case_size(case, request)?,
    };
    let stream = StreamSpec {
        load: Load::Pps(LEARNING_PPS),
        limit: Limit::Frames(LEARNING_FRAMES),
        ..forward_stream(plan, case, request, size)?
    };
    let mut spec = trial_spec(plan, vec![stream]);
    spec.backend = engine::trial::Backend::AfPacket;
    spec.drain = std::time::Duration::from_millis(50);
    Ok(spec)
}

/// The encapsulation port B sends its reverse stream in when it plays a session (PPPoE), a
/// softwire (DS-Lite), a BR (MAP-E, whose softwires carry IPv4) or an IPoE lease (plain).
pub fn reply_encap(plan: &Plan, case: &Case) -> EncapSpec {
    let mut e = EncapSpec::plain(case.dims.ip);
    if let Some(p) = plan.ports.get(1) {
        if p.pppoe.is_some() {
            e.pppoe = true;
        } else if p.dslite.is_some() {
            e.dslite = true;
        } else if p.mape.is_some() {
            e = EncapSpec::plain(wire::encap::IpVersion::V4);
            e.mape = true;
        }
    }
    e
}

/// The reference frame size of `case`'s trial at `request`: the probe's, or the case's.
fn probe_or_case_size(case: &Case, request: &TrialRequest) -> Result<FrameSize, SpecError> {
    match request.probe {
        Some(p) => Ok(FrameSize::Fixed {
            bytes: p.frame_size as usize,
        }),
        None => case.frame().ok_or_else(|| SpecError::NoFrameSize {
            case: case.id.clone(),
        }),
    }
}

/// The A→B stream of `case` at `request` in frames of `size`: at the probe's rate or the
/// request's load, in port A's encapsulation, its 100 % the far link's.
fn forward_stream(
    plan: &Plan,
    case: &Case,
    request: &TrialRequest,
    size: FrameSize,
) -> Result<StreamSpec, SpecError> {
    let load = match request.probe {
        Some(p) => Load::Pps((request.load.0 * f64::from(p.pps)).max(1.0)),
        None => Load::from(request.load),
    };
    let limit = match request.burst_frames {
        Some(n) => Limit::Frames(n),
        None => Limit::DurationNs(request.duration.as_nanos() as u64),
    };
    let mut s = StreamSpec::new(sent_encap(plan, case), size, load, limit);
    s.far_encap = Some(plan.path_encap(case));
    let st = &plan.run.stream;
    s.flows = flows(st, case);
    s.tos = case.dims.tos.unwrap_or(st.tos);
    s.reorder_every = st.reorder_every;
    // A back-to-back trial is one burst of its own; plan check refuses `run.burst` with it.
    if request.burst_frames.is_none() {
        s.burst = st.burst;
        s.burst_gap = st.burst_gap;
    }
    Ok(s)
}

/// `streams` with the plan's engine settings.
fn trial_spec(plan: &Plan, streams: Vec<StreamSpec>) -> TrialSpec {
    let st = &plan.run.stream;
    let mut spec = TrialSpec::new(streams, plan.speed());
    spec.drain = st.drain;
    spec.tx_method = match st.tx_method {
        TxMethod::Ring => TxBackend::Ring,
        TxMethod::Sendmmsg => TxBackend::Sendmmsg,
    };
    spec.backend = engine_backend(plan.run.backend);
    spec.tx_threads = usize::from(plan.run.tx_threads);
    spec.rx_threads = usize::from(plan.run.rx_threads);
    spec
}
