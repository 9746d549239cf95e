//! The streams `Testbed::udp_trial` built before `crate::trial_streams` (the forward spec, the
//! reverse stream hand-built by `reverse.rs` and appended, a reverse probe's forward stream
//! removed), transcribed from it, against the assembly: byte for byte, record for record.

use engine::trial::TrialConfig;
use wire::linerate::FrameSize;
use wire::units::Pps;

use super::reverse::{
    reverse_from_br, reverse_in_session, reverse_in_softwire, reverse_to_lease, sent_of_reverse,
};
use crate::plan::{Case, Plan};
use crate::results::SentStream;
use crate::search::{ProbeDirection, TrialRequest};
use crate::spec::{from_plan, Built, Carrier, CarryError, Direction, StreamSpec, TrialSpec};
use crate::trial_streams::tests::*;
use crate::trial_streams::{assemble, ARides, BReplies, PortHeaders};

/// Port A's carrier as it was: only when A plays something.
struct OldA(ARides);

impl Carrier for OldA {
    fn carry(&self, frame: &mut wire::template::StreamSpec, tx: usize) -> Result<(), CarryError> {
        if tx == 0 {
            match self.0 {
                ARides::Session(i) => i.apply_to(frame),
                ARides::Softwire(i) => i.apply_to(frame, true),
            }
        }
        Ok(())
    }
}

/// The spec `from_plan::udp_spec` gave before: the forward stream (both ways when B is
/// plain), never B's reverse stream; a reverse probe built as a bidirectional trial.
fn old_udp_spec(plan: &Plan, case: &Case, request: &TrialRequest) -> TrialSpec {
    let mut spec = from_plan::udp_spec(plan, case, request).unwrap();
    let learning = from_plan::learning_spec(plan, case, request).unwrap();
    let plays_b = from_plan::plays_session(plan, 1);
    let first = spec.streams[0].clone();
    spec.streams = match (first.direction, plays_b) {
        (Direction::BToA, true) => vec![StreamSpec {
            direction: Direction::AToB,
            encap: learning.streams[0].encap,
            first_id: None,
            ..first
        }],
        (Direction::BToA, false) => vec![StreamSpec {
            direction: Direction::Both,
            first_id: None,
            ..first
        }],
        _ => vec![first],
    };
    spec
}

/// `Testbed::udp_trial`'s stream building as it was, with port B's headers already known.
fn old_assembly(
    plan: &Plan,
    case: &Case,
    request: &TrialRequest,
    ports: &PortHeaders,
) -> (Built, TrialConfig) {
    let (a, b) = (&ports.a, &ports.b);
    let probe = request.probe;
    let spec = old_udp_spec(plan, case, request);
    let frame_size = spec.streams[0].size;
    let old_a = ports.a_rides.map(OldA);
    let carrier = old_a.as_ref().map(|c| c as &dyn Carrier);
    let built = spec.build(a, b, carrier).unwrap();
    let max = built.max_pps.first().copied().unwrap_or(Pps(0.0));
    let mut sent = built.sent;
    let mut cfg = built.config;
    let reverse_probe = probe.is_some_and(|p| p.direction == ProbeDirection::Reverse);
    let learning = if reverse_probe {
        let mut small = spec.clone();
        for s in &mut small.streams {
            s.size = FrameSize::Fixed {
                bytes: wire::encap::min_frame_size(case.dims.ip),
            };
            s.direction = Direction::AToB;
        }
        small.build(a, b, carrier).unwrap().config
    } else {
        cfg.clone()
    };
    let mut rewritten = false;
    let with_reverse = probe.map_or(case.dims.bidirectional, |_| reverse_probe);
    if with_reverse {
        let forward = cfg.streams.first().unwrap();
        let ip = case.dims.ip;
        let reverse = match ports.b_replies {
            None => None,
            Some(BReplies::Session { info, isp_side }) => {
                rewritten = isp_side;
                Some(reverse_in_session(ip, frame_size, forward, a, b, &info, isp_side).unwrap())
            }
            Some(BReplies::Lease(info)) => {
                rewritten = true;
                Some(reverse_to_lease(ip, frame_size, forward, a, b, &info).unwrap())
            }
            Some(BReplies::Softwire { info, b4_side }) => {
                Some(reverse_in_softwire(ip, frame_size, forward, a, b, &info, b4_side).unwrap())
            }
            Some(BReplies::Br { ce, info }) => {
                rewritten = true;
                Some(reverse_from_br(frame_size, forward, a, b, ce, &info).unwrap())
            }
        };
        if let Some(r) = reverse {
            if let Some(f) = sent.first() {
                let mut rs = sent_of_reverse(f, &r);
                if matches!(ports.b_replies, Some(BReplies::Br { .. })) {
                    rs.encap.dslite = false;
                    rs.encap.mape = true;
                }
                sent.push(rs);
            }
            cfg.streams.push(r)
        }
        if reverse_probe {
            cfg.streams.remove(0);
            if !sent.is_empty() {
                sent.remove(0);
            }
        }
    }
    if plan
        .ports
        .iter()
        .take(2)
        .any(|p| p.pppoe.is_some() || p.dslite.is_some() || p.ipoe.is_some() || p.mape.is_some())
    {
        for s in &cfg.streams {
            let base = cfg.expect_of(&s.config);
            let e = engine::validate::Expect {
                shape: None,
                dst: base.dst.filter(|_| !(rewritten && s.tx_port == 1)),
                ..base
            };
            cfg.expect.push((s.config.id, e));
        }
    }
    // `learn`'s own edits of the learning configuration.
    let mut l = learning;
    l.streams.truncate(1);
    if let Some(s) = l.streams.first_mut() {
        s.config.rate = engine::stream::Rate::Pps(1000.0);
        s.config.limit = engine::stream::Limit::Frames(20);
    }
    l.backend = engine::trial::Backend::AfPacket;
    l.drain = std::time::Duration::from_millis(50);
    l.expect = l
        .streams
        .iter()
        .map(|s| (s.config.id, engine::validate::Expect::default()))
        .collect();
    (
        Built {
            config: cfg,
            max_pps: vec![max],
            sent,
        },
        l,
    )
}

fn only_config(config: TrialConfig) -> Built {
    Built {
        config,
        max_pps: Vec::new(),
        sent: Vec::<SentStream>::new(),
    }
}

/// Old and new for one case of each plan, every request kind.
fn same(what: &str, plan: &Plan, cases: &[Case], a: Option<ARides>, b: Option<BReplies>) {
    let requests = [
        request(),
        probe(1400, ProbeDirection::Forward),
        probe(1400, ProbeDirection::Reverse),
    ];
    for case in cases {
        for r in &requests {
            let ports = headers(plan, a, b);
            let (old, old_learning) = old_assembly(plan, case, r, &ports);
            let new = assemble(plan, case, r, &ports).unwrap();
            assert_eq!(new.max, old.max_pps[0], "{what} {}: 100 %", case.id);
            let new_learning = new.learning.clone();
            let new = Built {
                config: new.config,
                max_pps: vec![new.max],
                sent: new.sent,
            };
            let d = crate::spec::differences(&old, &new, 0.0);
            assert!(d.is_empty(), "{what} {} {r:?}: {d:#?}", case.id);
            assert!(!new.config.streams.is_empty());
            let d = crate::spec::differences(
                &only_config(old_learning),
                &only_config(new_learning),
                0.0,
            );
            assert!(d.is_empty(), "{what} {} learning: {d:#?}", case.id);
        }
    }
}

/// `same` for one-way and bidirectional plans between `lan` and `wan`.
fn same_both_ways(
    what: &str,
    (lan, wan, encap): (&str, &str, &str),
    a: Option<ARides>,
    b: Option<BReplies>,
) {
    for bidi in [false, true] {
        let m = format!("frame-size = [64, 1400]\nbidirectional = {bidi}\nencap = [\"{encap}\"]");
        let (p, c) = plan(lan, wan, &m);
        same(what, &p, &c, a, b);
    }
}

#[test]
fn the_assembly_sends_what_the_hand_built_reverse_streams_sent() {
    same_both_ways("plain", (LAN_PLAIN, WAN_PLAIN, "plain"), None, None);
    let ac = BReplies::Session {
        info: ac_session(),
        isp_side: true,
    };
    same_both_ways("pppoe AC", (LAN_PLAIN, WAN_PPPOE, "pppoe"), None, Some(ac));
    let ipoe = Some(BReplies::Lease(lease()));
    same_both_ways("ipoe", (LAN_PLAIN, WAN_IPOE, "plain"), None, ipoe);
    let aftr = BReplies::Softwire {
        info: softwire(),
        b4_side: false,
    };
    same_both_ways(
        "dslite AFTR",
        (LAN_PLAIN, WAN_DSLITE, "dslite"),
        None,
        Some(aftr),
    );
    let br = BReplies::Br {
        ce: CE,
        info: softwire(),
    };
    same_both_ways("mape BR", (LAN_PLAIN, WAN_MAPE, "mape"), None, Some(br));
    // Both ends ours: port A our subscriber in the AC's session.
    let sub = ARides::Session(session(
        CPE_MAC,
        AC_MAC,
        std::net::Ipv4Addr::new(198, 51, 100, 10),
        Some(std::net::Ipv4Addr::new(198, 51, 100, 1)),
    ));
    let ours = (LAN_PPPOE, WAN_PPPOE, "pppoe");
    same_both_ways("pppoe both ours", ours, Some(sub), Some(ac));
    // Port A our subscriber, port B plain (the plain B→A copy keeps its built MACs).
    let sub_plain = (LAN_PPPOE, WAN_PLAIN, "pppoe");
    same_both_ways("pppoe subscriber", sub_plain, Some(sub), None);
}
