//! An AF_PACKET trial across steps of the machine's realtime clock (the kernel's receive stamps
//! are CLOCK_REALTIME, signatures CLOCK_MONOTONIC; module `engine::rx_clock`). Before the
//! receive clock followed steps, stepping the clock back 0.5 s in the middle of a 2 s trial
//! made 21,528 of 40,000 frames "invalid: timestamp" and lost.
//!
//! Ignored by default: it steps **the machine's** realtime clock back 0.5 s and forward again
//! 0.7 s later (net change under a millisecond), which other programs on the machine see.
//! Run it by hand, as root:
//! `cargo test --release -p engine --test clock_step -- --ignored --nocapture`.

use engine::stream::{Limit, Rate, StreamConfig};
use engine::trial::{self, Backend};
use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wire::encap::EncapSpec;
use wire::template::{FrameTemplate, StreamSpec};
use wire::units::Pps;

mod common;
use common::{is_root, Net};

/// Frames of the stream at 20 kpps: two seconds.
const FRAMES: u64 = 40_000;
const STEP_NS: i64 = 500_000_000;

/// Moves CLOCK_REALTIME by `by_ns` (negative: back).
fn step_realtime(by_ns: i64) {
    let ns = engine::sys::realtime_ns() as i64 + by_ns;
    let to = libc::timespec {
        tv_sec: ns.div_euclid(1_000_000_000),
        tv_nsec: ns.rem_euclid(1_000_000_000),
    };
    // SAFETY: `to` is a valid timespec; setting the clock needs CAP_SYS_TIME (root).
    let rc = unsafe { libc::clock_settime(libc::CLOCK_REALTIME, &to) };
    assert_eq!(rc, 0, "clock_settime: {}", std::io::Error::last_os_error());
}

#[test]
#[ignore = "steps the machine's realtime clock back 0.5 s and forward again: run by hand"]
fn af_packet_trial_follows_steps_of_the_realtime_clock() {
    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET, setting the clock)");
        return;
    }
    let net = Net::new("clkstep", "cs0", "cs1");
    let mut spec = StreamSpec::new("ipv4".parse::<EncapSpec>().unwrap());
    spec.stream_id = 5;
    spec.src_ip = Ipv4Addr::new(192, 0, 2, 1).into();
    spec.dst_ip = Ipv4Addr::new(192, 0, 2, 2).into();
    let stream = StreamConfig::single(
        5,
        FrameTemplate::new(&spec, 128).unwrap(),
        Rate::Pps(Pps(20_000.0)),
        Limit::Frames(FRAMES),
    );
    let mut cfg = net.one_way_trial(stream);
    cfg.backend = Backend::AfPacket;
    cfg.drain = Duration::from_millis(300);
    let stop = AtomicBool::new(false);
    let report = std::thread::scope(|sc| {
        let h = sc.spawn(|| trial::run(&cfg, &stop));
        std::thread::sleep(Duration::from_millis(800));
        step_realtime(-STEP_NS);
        std::thread::sleep(Duration::from_millis(700));
        step_realtime(STEP_NS);
        h.join().unwrap()
    })
    .expect("trial");
    let s = &report.streams[0];
    let port_b = report.rx_ports.iter().find(|p| p.port == "b").unwrap();
    println!(
        "received {} of {} sent, invalid {:?}, latency {:?}, negative {}; port b: {} clock steps, largest {} ns",
        s.rx.received,
        s.tx.sent,
        s.rx.invalid,
        s.rx.latency,
        s.rx.negative_latency,
        port_b.clock_steps,
        port_b.largest_clock_step_ns
    );
    assert_eq!(s.tx.sent, FRAMES);
    assert_eq!(
        (s.rx.received, s.rx.lost, s.rx.invalid.total()),
        (FRAMES, Some(0), 0),
        "every frame received and valid across the steps"
    );
    assert_eq!(s.rx.negative_latency, 0);
    // A frame placed by the wrong offset would show half a second of latency or arrive before
    // it was sent.
    let lat = s.rx.latency.expect("latency");
    assert!(lat.max_ns < (STEP_NS / 2) as u64, "{lat:?}");
    assert!(port_b.clock_steps >= 2, "both steps seen");
    assert!(
        port_b.largest_clock_step_ns.abs_diff(STEP_NS as u64) < 50_000_000,
        "{}",
        port_b.largest_clock_step_ns
    );
}
