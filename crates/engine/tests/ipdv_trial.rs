//! IPDV (RFC 8219 §7.3.2) from whole trials on both backends (#17 item 4): the same paced
//! stream from port A to port B over a veth pair (each end in a namespace of its own,
//! `wr-ipdv-<pid>-<n>-{va,vb}`, removed on drop), once with the XDP backend and once with
//! AF_PACKET. Both trial reports must carry IPDV for the stream, follow the pairing rule
//! (without loss or reordering every frame after the first forms a pair), and give plausible,
//! mutually consistent figures: Dmin ≤ 0 ≤ Dmax and a median near zero, as paced traffic
//! through an idle link must show.
//!
//! Nothing here depends on the machine's speed: no rate is required, only bounds that a
//! correct measurement meets on any machine (a median IPDV of a millisecond would need the
//! one-way delay to grow by a millisecond per frame for half the trial).
//!
//! Needs root (namespaces, AF_PACKET, XDP); without it, or where XDP cannot be attached, the
//! test prints `SKIP: …` and returns.

use engine::rx::IpdvReport;
use engine::stream::{Limit, Rate, StreamConfig};
use engine::trial::{self, Backend, StreamResult};
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wire::template::{FrameTemplate, StreamSpec};
use wire::units::Pps;

mod common;
use common::{is_root, Net};

const ID: u16 = 9;
/// Frames of the stream: half a second at 20 kpps.
const FRAMES: u64 = 10_000;

/// One trial of the paced stream on `backend`; `Err` carries the engine's message.
fn trial_on(net: &Net, backend: Backend) -> Result<StreamResult, String> {
    let mut spec = StreamSpec::new("ipv4".parse().unwrap());
    spec.stream_id = ID;
    let t = FrameTemplate::new(&spec, 64).unwrap();
    let stream = StreamConfig::single(ID, t, Rate::Pps(Pps(20_000.0)), Limit::Frames(FRAMES));
    let mut cfg = net.one_way_trial(stream);
    cfg.backend = backend;
    cfg.drain = Duration::from_millis(300);
    let report = trial::run(&cfg, &AtomicBool::new(false)).map_err(|e| e.to_string())?;
    assert_eq!(report.backend, backend);
    Ok(report.streams.into_iter().next().expect("one stream"))
}

/// What both backends' IPDV must satisfy; returns it.
fn check(backend: Backend, s: &StreamResult) -> IpdvReport {
    let name = backend.name();
    println!(
        "{name}: sent {} received {} lost_by_sequence {} out_of_order {} ipdv {:?}",
        s.tx.sent, s.rx.received, s.rx.lost_by_sequence, s.rx.out_of_order, s.ipdv
    );
    assert!(s.rx.received >= 2, "{name}: too few frames to judge");
    let i = s
        .ipdv
        .unwrap_or_else(|| panic!("{name}: the trial carries no IPDV"));
    // The rule: a pair is two frames with consecutive sequence numbers in order. Without a
    // gap or a reordering, that is every frame after the first.
    assert!(i.pairs < s.rx.received, "{name}: {i:?}");
    if s.rx.lost_by_sequence == 0 && s.rx.out_of_order == 0 && s.rx.duplicates == 0 {
        assert_eq!(i.pairs, s.rx.received - 1, "{name}: {i:?}");
    }
    assert!(
        i.min_ns <= i.median_ns && i.median_ns <= i.max_ns,
        "{name}: {i:?}"
    );
    // Thousands of pairs of real delays: some grow, some shrink.
    assert!(i.min_ns <= 0 && 0 <= i.max_ns, "{name}: {i:?}");
    assert!(
        i.median_ns.abs() < 1_000_000,
        "{name}: |Dmed| ≥ 1 ms: {i:?}"
    );
    i
}

#[test]
fn ipdv_from_both_backends_on_the_same_paced_stream() {
    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET, XDP)");
        return;
    }
    let net = Net::new("ipdv", "iv0", "iv1");
    let xdp = match trial_on(&net, Backend::Xdp) {
        Ok(s) => s,
        Err(e) if e.contains("XDP") => {
            println!("SKIP: the XDP backend cannot run here: {e}");
            return;
        }
        Err(e) => panic!("trial on xdp: {e}"),
    };
    let af = trial_on(&net, Backend::AfPacket).unwrap_or_else(|e| panic!("af_packet: {e}"));
    let x = check(Backend::Xdp, &xdp);
    let a = check(Backend::AfPacket, &af);
    // The same traffic, seen by two receivers: medians within a millisecond of each other
    // (each within one of zero, above), extremes on the same sides of zero.
    assert!(
        x.median_ns.abs_diff(a.median_ns) < 2_000_000,
        "xdp {x:?} af_packet {a:?}"
    );
}
