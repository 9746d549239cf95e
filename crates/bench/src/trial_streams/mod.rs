//! The whole stream set of one UDP trial of a plan, assembled once ([`assemble`]): the
//! forward stream, the reverse stream of a bidirectional trial (plain, or inside what port B
//! plays), the learning frames sent before it, and what the receivers expect — every one built
//! by [`crate::spec::TrialSpec::build`] from the plan's one spec ([`from_plan::udp_spec`],
//! [`from_plan::learning_spec`]), the frames each port sends inside its session, softwire or
//! lease put there by one [`Carrier`] ([`PortHeaders`]).
//!
//! Pure: the headers of what the ports play ([`ARides`], [`BReplies`]) are given, so the
//! testbed assembles a trial from the sessions it brought up, and a test from headers of its
//! own (`tests.rs`, and the runner on the simulated executor in `runner/sim_tests.rs`).

use std::fmt;
use std::net::Ipv4Addr;

use emulate::ipoe::LeaseInfo;
use emulate::pppoe::SessionInfo;
use emulate::softwire::SoftwireInfo;
use engine::port::PortSpec;
use engine::trial::{StreamResult, TrialConfig};
use wire::template::TemplateError;
use wire::units::Pps;

use crate::plan::{Case, Plan};
use crate::results::{EngineFacts, SentStream};
use crate::search::{LineFraction, Outcome, TrialRequest};
use crate::spec::{from_plan, Carrier, CarryError, SpecError};

#[cfg(test)]
pub(crate) mod tests;

/// The session or softwire port A's frames ride (a PPPoE subscriber or DS-Lite B4).
#[derive(Debug, Clone, Copy)]
pub enum ARides {
    Session(SessionInfo),
    /// A softwire from port A's B4 (its frames' inner source is the B4's 192.0.0.2).
    Softwire(SoftwireInfo),
}

/// What port B plays, with the headers its reverse stream goes out in: the reply to what the
/// DUT made of the forward stream, the forward tuple mirrored (UDP ports swapped).
#[derive(Debug, Clone, Copy)]
pub enum BReplies {
    /// A PPPoE session: from an access concentrator (`isp_side`) to the subscriber's IPCP
    /// address (the CPE's WAN address, whose NAPT maps it back to port A; port A's own when
    /// IPCP gave the peer none); from a subscriber to port A behind the concentrator.
    Session { info: SessionInfo, isp_side: bool },
    /// An IPoE port: plain, from our gateway address to the gateway's lease, at its MAC.
    Lease(LeaseInfo),
    /// A DS-Lite softwire: inner IPv4 from port B (the B4's 192.0.0.2 when B plays the B4,
    /// `b4_side`) to port A, in IPv6 between the tunnel's ends.
    Softwire { info: SoftwireInfo, b4_side: bool },
    /// A MAP-E BR: inner IPv4 from port B to the CE's shared address and the port its NAPT
    /// mapped the forward source to (`ce`, learned by the BR), in IPv6 from the BR to the CE's
    /// MAP address (`info`).
    Br {
        ce: (Ipv4Addr, u16),
        info: SoftwireInfo,
    },
}

impl BReplies {
    /// How messages name what B plays.
    fn name(&self) -> &'static str {
        match self {
            BReplies::Session { .. } => "PPPoE",
            BReplies::Lease(_) => "IPoE",
            BReplies::Softwire { .. } => "DS-Lite",
            BReplies::Br { .. } => "MAP-E",
        }
    }

    /// Whether the DUT's NAPT rewrites the reverse stream's destination back to port A (the
    /// receiver then does not check it).
    fn napt_reply(&self) -> bool {
        match self {
            BReplies::Session { isp_side, .. } => *isp_side,
            BReplies::Lease(_) | BReplies::Br { .. } => true,
            BReplies::Softwire { .. } => false,
        }
    }
}

/// The ports of a trial and the headers of what they play.
#[derive(Debug, Clone)]
pub struct PortHeaders {
    pub a: PortSpec,
    pub b: PortSpec,
    pub a_rides: Option<ARides>,
    /// `None`: port B is plain, or the trial sends nothing from it inside what it plays.
    pub b_replies: Option<BReplies>,
}

/// Each port's frames inside what it plays: port A's in its session or softwire, port B's
/// reverse stream as the reply [`BReplies`] describes.
impl Carrier for PortHeaders {
    fn carry(
        &self,
        frame: &mut wire::template::StreamSpec,
        tx_port: usize,
    ) -> Result<(), CarryError> {
        if tx_port == 0 {
            match &self.a_rides {
                Some(ARides::Session(info)) => info.apply_to(frame),
                Some(ARides::Softwire(info)) => info.apply_to(frame, true),
                None => {}
            }
            return Ok(());
        }
        let Some(reply) = &self.b_replies else {
            return Ok(());
        };
        // The reply to the forward tuple: its UDP ports swapped.
        std::mem::swap(&mut frame.src_port, &mut frame.dst_port);
        match reply {
            BReplies::Session { info, isp_side } => {
                if let (true, Some(peer), true) =
                    (*isp_side, info.negotiated.peer_ipv4, frame.src_ip.is_ipv4())
                {
                    frame.dst_ip = peer.into();
                }
                info.apply_to(frame);
            }
            BReplies::Lease(info) => info.apply_to(frame),
            BReplies::Softwire { info, b4_side } => {
                if !b4_side {
                    // The AFTR's side sends from port B's own address, not a B4's.
                    frame.src_ip = match self.b.ipv4 {
                        Some(v4) => v4.into(),
                        None => wire::template::StreamSpec::new(frame.encap).src_ip,
                    };
                }
                info.apply_to(frame, *b4_side);
            }
            BReplies::Br {
                ce: (ce_ipv4, ce_port),
                info,
            } => {
                frame.dst_ip = (*ce_ipv4).into();
                frame.dst_port = *ce_port;
                info.apply_to(frame, false);
            }
        }
        Ok(())
    }

    /// A port's frames keep the MACs of what it plays. While port A rides a session every
    /// stream keeps its built MACs; a bidirectional trial then has port B play the other end
    /// (a plain port B cannot send inside port A's session: `plan check` refuses it).
    fn sets_macs(&self, tx_port: usize) -> bool {
        self.a_rides.is_some() || (tx_port == 1 && self.b_replies.is_some())
    }

    /// An access concentrator's port B may have no address of its own (IPCP gives it one).
    fn addresses_sender(&self, tx_port: usize) -> bool {
        tx_port == 1 && self.b_replies.is_some()
    }
}

/// One UDP trial's streams, finished: what the engine runs, what the record keeps of it, and
/// the learning frames that go first where the path needs them.
#[derive(Debug, Clone)]
pub struct TrialStreams {
    /// The trial: the forward stream (id 1) and the reverse one (id 2) of a bidirectional
    /// trial, or a probe's one, with the receivers' expectations.
    pub config: TrialConfig,
    /// What each stream of `config` sends, in its order (the record's `engine.streams`).
    pub sent: Vec<SentStream>,
    /// 100 % of the trial's streams: one direction's line rate on the path.
    pub max: Pps,
    /// The learning frames ([`from_plan::learning_spec`]), ready to run.
    pub learning: TrialConfig,
    /// Whether the reverse stream is a reply the DUT's NAPT maps back to port A, so the
    /// forward direction's mapping must exist first (learning frames before the trial).
    pub napt_reply: bool,
}

impl TrialStreams {
    /// The outcome of this trial at `request` from the engine's results per stream, and the
    /// engine's facts for its record (`backend` and its `note` as the engine reports them):
    /// what was sent, per direction, and what each stream was. The DUT's counters, session
    /// drops and tester port drops are the testbed's to add.
    pub fn record(
        self,
        request: &TrialRequest,
        backend: &str,
        note: &str,
        results: &[StreamResult],
    ) -> (Outcome, EngineFacts) {
        let max = self.max;
        let facts = EngineFacts {
            backend: backend.to_string(),
            note: note.to_string(),
            sent: results.iter().map(|s| s.tx.sent).sum(),
            slipped: results.iter().map(|s| s.tx.slipped).sum(),
            refused_by_dut: results.iter().map(|s| s.tx.refused_by_peer).sum(),
            max_catch_up: results.iter().map(|s| s.tx.max_debt).max().unwrap_or(0),
            invalid: {
                let mut t = engine::validate::InvalidCounts::default();
                results.iter().for_each(|s| t.merge(&s.rx.invalid));
                t
            },
            dut: None,
            per_direction: crate::trial::per_direction(results, max),
            session_drops: Vec::new(),
            streams: self.sent,
            tester_port_drops: Vec::new(),
        };
        let mut o = crate::trial::outcome(request, results, max);
        if let (Some(c), Some(r)) = (self.config.streams.first(), results.first()) {
            o.intended = crate::trial::intended_with_gaps(o.intended, &c.config, &r.tx);
        }
        let sent = results.first().map_or(0, |s| s.tx.sent);
        if let Some(p) = request.probe {
            // A probe's load is a fraction of its own rate.
            let achieved = results.first().map_or(0.0, |s| s.tx.achieved_pps.0);
            if sent > 1 && p.pps > 0 {
                o.offered = LineFraction(achieved / f64::from(p.pps));
            }
        }
        (o, facts)
    }
}

/// Why a trial's streams could not be assembled.
#[derive(Debug)]
pub enum AssemblyError {
    /// The spec of a stream cannot be built.
    Spec(SpecError),
    /// Port B plays a session the caller has no headers of (`case`: the case's id).
    NoReplyHeaders { case: String },
    /// The reverse stream inside what port B plays (`inside`) cannot carry frames of `size`.
    ReverseFrame {
        size: usize,
        inside: &'static str,
        source: TemplateError,
    },
}

impl fmt::Display for AssemblyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AssemblyError::Spec(e) => e.fmt(f),
            AssemblyError::NoReplyHeaders { case } => write!(
                f,
                "{case}: port B plays a session the testbed has no headers of, so the reverse stream has nothing to ride; nothing was measured"
            ),
            AssemblyError::ReverseFrame {
                size,
                inside,
                source,
            } => write!(f, "frame size {size} in {inside}: {source}"),
        }
    }
}

impl std::error::Error for AssemblyError {}

impl From<SpecError> for AssemblyError {
    fn from(e: SpecError) -> AssemblyError {
        AssemblyError::Spec(e)
    }
}

/// The learning frames of `case` at `request` between `ports` (only port A's headers are
/// used): what the testbed sends while it waits for port B's softwire or BR to learn the CPE,
/// before the rest of the trial can be assembled.
pub fn learning_frames(
    plan: &Plan,
    case: &Case,
    request: &TrialRequest,
    ports: &PortHeaders,
) -> Result<TrialConfig, SpecError> {
    let forward_only = PortHeaders {
        b_replies: None,
        ..ports.clone()
    };
    let mut config = from_plan::learning_spec(plan, case, request)?
        .build(&ports.a, &ports.b, Some(&forward_only))?
        .config;
    // The forward frames arrive re-encapsulated; the learning counts nothing, so accept any.
    config.expect = config
        .streams
        .iter()
        .map(|s| (s.config.id, engine::validate::Expect::default()))
        .collect();
    Ok(config)
}

/// The streams of one UDP trial of `case` at `request` between `ports`: the plan's spec
/// ([`from_plan::udp_spec`]) built through the ports' headers, its learning frames, and the
/// receivers' expectations — relaxed where a port plays a session, softwire, BR or lease, as
/// the DUT then encapsulates or decapsulates on the way (the receiver checks lengths,
/// checksums, fragments, destination, sequence and timestamp, not the header stack; nor the
/// destination of a reply the DUT's NAPT maps back).
pub fn assemble(
    plan: &Plan,
    case: &Case,
    request: &TrialRequest,
    ports: &PortHeaders,
) -> Result<TrialStreams, AssemblyError> {
    let spec = from_plan::udp_spec(plan, case, request)?;
    let reverse_in_b = spec
        .streams
        .iter()
        .any(|s| s.direction != crate::spec::Direction::AToB)
        && from_plan::plays_session(plan, 1);
    if reverse_in_b && ports.b_replies.is_none() {
        return Err(AssemblyError::NoReplyHeaders {
            case: case.id.clone(),
        });
    }
    let built =
        spec.build(&ports.a, &ports.b, Some(ports))
            .map_err(|e| match (e, &ports.b_replies) {
                // Stream 2 is the reverse one: its frames are B's reply headers' to carry.
                (
                    SpecError::Template {
                        stream: 2,
                        size,
                        source,
                    },
                    Some(reply),
                ) if reverse_in_b => AssemblyError::ReverseFrame {
                    size,
                    inside: reply.name(),
                    source,
                },
                (e, _) => AssemblyError::Spec(e),
            })?;
    let napt_reply = reverse_in_b && ports.b_replies.is_some_and(|r| r.napt_reply());
    let mut config = built.config;
    if (0..2).any(|i| from_plan::plays_session(plan, i)) {
        let expect: Vec<_> = config
            .streams
            .iter()
            .map(|s| {
                let base = config.expect_of(&s.config);
                let e = engine::validate::Expect {
                    shape: None,
                    dst: base.dst.filter(|_| !(napt_reply && s.tx_port == 1)),
                    ..base
                };
                (s.config.id, e)
            })
            .collect();
        config.expect.extend(expect);
    }
    Ok(TrialStreams {
        config,
        sent: built.sent,
        max: built.max_pps.first().copied().unwrap_or(Pps(0.0)),
        learning: learning_frames(plan, case, request, ports)?,
        napt_reply,
    })
}

/// The UDP source and destination ports of a stream's first frame.
pub fn udp_ports(stream: &engine::trial::TrialStream) -> Option<(u16, u16)> {
    let bytes = stream.config.frames.first()?.bytes();
    let d = wire::dissect::dissect(bytes).ok()?;
    let udp = bytes.get(d.udp_offset?..)?;
    Some((
        u16::from_be_bytes([*udp.first()?, *udp.get(1)?]),
        u16::from_be_bytes([*udp.get(2)?, *udp.get(3)?]),
    ))
}
