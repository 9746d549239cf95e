//! The XDP programs are loaded once per process and reused trial after trial (issue 36): three
//! trials back to back in this process, over one veth pair (`wr-xreuse-<pid>-<n>-{va,vb}`,
//! removed on drop), each with other streams, ids, slots and rates than the one before. Each
//! trial's counts must be its own — exactly the frames it sent, sequence numbers from 0, no
//! duplicates, nothing invalid — while the receiver and the sender object were loaded only
//! once. A reset that missed the counters, the duplicate window, the slots map or the sender's
//! stream state would show as the previous trial's frames, as duplicates, or as a sequence
//! number that does not start at 0.
//!
//! This binary holds this one test, so nothing else in the process takes the kept objects.
//! Needs root (namespaces, XDP); without it, or where XDP cannot attach, it prints `SKIP: …`.

use engine::stream::{Limit, Rate, StreamConfig};
use engine::trial::{self, Backend, StreamResult, TrialConfig, TrialStream};
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wire::template::{FrameTemplate, StreamSpec};
use wire::units::Pps;

mod common;
use common::{is_root, Net};

/// A stream of `frames` 64-byte IPv4 frames at `pps` from port A to port B.
fn stream(id: u16, pps: f64, frames: u64) -> TrialStream {
    let mut spec = StreamSpec::new("ipv4".parse().unwrap());
    spec.stream_id = id;
    let t = FrameTemplate::new(&spec, 64).unwrap();
    TrialStream {
        config: StreamConfig::single(id, t, Rate::Pps(Pps(pps)), Limit::Frames(frames)),
        tx_port: 0,
        rx_port: 1,
    }
}

/// Runs the streams (id, pps, frames) as one XDP trial; `Err`: the engine's message.
fn trial_of(net: &Net, streams: &[(u16, f64, u64)]) -> Result<Vec<StreamResult>, String> {
    let (a, b) = net.ports();
    let mut cfg = TrialConfig::new(
        vec![a, b],
        streams
            .iter()
            .map(|&(id, pps, n)| stream(id, pps, n))
            .collect(),
    );
    cfg.backend = Backend::Xdp;
    cfg.drain = Duration::from_millis(200);
    let r = trial::run(&cfg, &AtomicBool::new(false)).map_err(|e| e.to_string())?;
    assert_eq!(r.backend, Backend::Xdp, "{}", r.backend_note);
    Ok(r.streams)
}

/// Every stream of the trial counted exactly its own frames.
fn exact(what: &str, streams: &[(u16, f64, u64)], got: &[StreamResult]) {
    assert_eq!(got.len(), streams.len(), "{what}");
    for (&(id, _, frames), s) in streams.iter().zip(got) {
        println!(
            "{what} stream {id}: sent {} received {} duplicates {} highest {:?} invalid {:?}",
            s.tx.sent, s.rx.received, s.rx.duplicates, s.rx.highest_seq, s.rx.invalid
        );
        assert_eq!(s.stream_id, id, "{what}");
        assert_eq!(s.tx.sent, frames, "{what} stream {id}: frames sent");
        assert_eq!(s.rx.received, frames, "{what} stream {id}: frames received");
        assert_eq!(s.rx.lost, Some(0), "{what} stream {id}");
        assert_eq!(s.rx.duplicates, 0, "{what} stream {id}: duplicates");
        assert_eq!(s.rx.out_of_order, 0, "{what} stream {id}: out of order");
        assert_eq!(
            s.rx.highest_seq,
            Some(frames - 1),
            "{what} stream {id}: sequence numbers must start at 0"
        );
        assert_eq!(s.rx.lost_by_sequence, 0, "{what} stream {id}");
        assert_eq!(
            s.rx.invalid.total(),
            0,
            "{what} stream {id}: invalid frames"
        );
        assert_eq!(
            s.rx.bytes,
            frames * 64 - frames * 4,
            "{what} stream {id}: bytes (frames without FCS)"
        );
    }
}

#[test]
fn back_to_back_trials_on_one_loaded_program_count_only_their_own_frames() {
    if !is_root() {
        println!("SKIP: needs root (network namespaces, XDP)");
        return;
    }
    let net = Net::new("xreuse", "xr0", "xr1");
    // Three streams (slots 0-2), then one whose id was slot 1's and now takes slot 0 (where
    // the first trial counted 3,000 frames), then two in the other order, at other rates.
    let trials: [&[(u16, f64, u64)]; 3] = [
        &[
            (1, 20_000.0, 3_000),
            (2, 10_000.0, 1_500),
            (3, 5_000.0, 750),
        ],
        &[(2, 7_000.0, 700)],
        &[(3, 12_000.0, 1_200), (1, 4_000.0, 400)],
    ];
    let (rx0, tx0) = (engine::xdp::rx::loads(), engine::xdp::tx::loads());
    for (i, streams) in trials.iter().enumerate() {
        let got = match trial_of(&net, streams) {
            Ok(g) => g,
            Err(e) if i == 0 => {
                println!("SKIP: the XDP backend cannot run here: {e}");
                return;
            }
            Err(e) => panic!("trial {i}: {e}"),
        };
        exact(&format!("trial {i}"), streams, &got);
    }
    // One receiver and one sender at a time: each object was loaded once, then reused.
    assert_eq!(engine::xdp::rx::loads() - rx0, 1, "receiver loads");
    assert_eq!(engine::xdp::tx::loads() - tx0, 1, "sender loads");
}
