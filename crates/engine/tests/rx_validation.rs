//! Receive-side validation during a real trial (#19 row 12), on both backends: while a good
//! stream runs from port A to port B over a veth pair (each end in a namespace of its own,
//! `wr-rxval-<pid>-<n>-{va,vb}`, removed on drop), another socket on A injects frames that carry
//! the same stream's valid signature but are malformed in one way each: a corrupted payload or
//! IPv4 header, a wrong UDP length, trailing bytes, a VLAN tag the stream does not have, a
//! first fragment, a foreign destination address or port, a sequence number beyond what the
//! stream sends, a timestamp from long ago or from the future. Every one must be counted as
//! invalid by its reason, and the good stream's figures must stay exact (every frame sent
//! received once, nothing lost, duplicated or reordered, no forged latency).
//!
//! Needs root (namespaces, AF_PACKET, XDP); without it each test prints `SKIP: …`.

use engine::stream::{Limit, Rate, StreamConfig};
use engine::trial::{self, Backend};
use engine::validate::InvalidCounts;
use std::net::Ipv4Addr;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use wire::checksum;
use wire::encap::EncapSpec;
use wire::template::{FrameTemplate, StreamSpec};
use wire::units::Pps;

mod common;
use common::{is_root, sh, Net};

/// What this test reads of the pair besides what `common::Net` gives.
trait Counters {
    fn wait_for_traffic(&self);
}

/// An interface counter (`/sys/class/net/<if>/statistics/<what>`) inside namespace `ns`.
fn counter(ns: &str, ifname: &str, what: &str) -> u64 {
    let path = format!("/sys/class/net/{ifname}/statistics/{what}");
    sh(&["ip", "netns", "exec", ns, "cat", &path])
        .trim()
        .parse()
        .unwrap_or(0)
}

impl Counters for Net {
    /// Waits until the good stream flows (its frames leave A or reach B), so that the
    /// receivers are counting (they start before the senders): at most 20 s.
    fn wait_for_traffic(&self) {
        let t0 = Instant::now();
        while counter(&self.a, "rv0", "tx_packets") < 2_000
            && counter(&self.b, "rv1", "rx_packets") < 2_000
        {
            assert!(
                t0.elapsed() < Duration::from_secs(20),
                "the good stream did not start"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

const ID: u16 = 7;
/// Frames of the good stream (at 20 kpps: two seconds).
const FRAMES: u64 = 40_000;

fn template(encap: &str) -> FrameTemplate {
    let mut spec = StreamSpec::new(encap.parse::<EncapSpec>().unwrap());
    spec.stream_id = ID;
    spec.src_ip = Ipv4Addr::new(192, 0, 2, 1).into();
    spec.dst_ip = Ipv4Addr::new(192, 0, 2, 2).into();
    spec.dst_port = 9;
    FrameTemplate::new(&spec, 128).unwrap()
}

/// Recomputes the IPv4 header and UDP checksums of a plain IPv4/UDP frame (or one with a
/// VLAN tag) after an edit, from its own length fields: a forger who knows the checksums.
fn refresh(f: &mut [u8]) {
    let ip = if f[12..14] == [0x81, 0x00] { 18 } else { 14 };
    let hl = usize::from(f[ip] & 0x0f) * 4;
    f[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
    let c = checksum::checksum(&f[ip..ip + hl]);
    f[ip + 10..ip + 12].copy_from_slice(&c.to_be_bytes());
    let udp = ip + hl;
    let len = usize::from(u16::from_be_bytes([f[udp + 4], f[udp + 5]]));
    let end = (udp + len).min(f.len());
    f[udp + 6..udp + 8].copy_from_slice(&[0, 0]);
    let src: [u8; 4] = f[ip + 12..ip + 16].try_into().unwrap();
    let dst: [u8; 4] = f[ip + 16..ip + 20].try_into().unwrap();
    let ph = checksum::pseudo_header_v4(src.into(), dst.into(), 17, len as u16);
    let c = checksum::udp_nonzero(!checksum::fold(ph + checksum::sum(&f[udp..end])));
    f[udp + 6..udp + 8].copy_from_slice(&c.to_be_bytes());
}

/// The malformed frames, each with the reason it must be counted under. Built at `now`
/// (CLOCK_MONOTONIC), after the receivers started.
fn malformed(now: u64) -> Vec<(&'static str, Vec<u8>)> {
    let t = template("ipv4");
    let good = |seq: u64, ts: u64| {
        let mut f = t.bytes().to_vec();
        t.stamp(&mut f, seq, ts);
        f
    };
    let edited = |seq: u64, edit: &dyn Fn(&mut Vec<u8>), fix: bool| {
        let mut f = good(seq, now);
        edit(&mut f);
        if fix {
            refresh(&mut f);
        }
        f
    };
    let (ip, udp) = (14, 34);
    let mut v = Vec::new();
    for k in 0..3u64 {
        // Sequence numbers inside the good stream's range: counted, they would be received or
        // duplicates of its frames.
        let s = 100 + k;
        v.push((
            "checksum",
            edited(s, &|f| *f.last_mut().unwrap() ^= 0x5a, false),
        ));
        v.push(("checksum", edited(s, &|f| f[ip + 1] = 0x10, false)));
        v.push((
            "length",
            edited(
                s,
                &|f| {
                    let l = u16::from_be_bytes([f[udp + 4], f[udp + 5]]) - 4;
                    f[udp + 4..udp + 6].copy_from_slice(&l.to_be_bytes());
                },
                true,
            ),
        ));
        v.push((
            "length",
            edited(s, &|f| f.extend_from_slice(&[0u8; 8]), false),
        ));
        v.push((
            "encapsulation",
            edited(
                s,
                &|f| {
                    f.splice(12..12, [0x81, 0x00, 0x00, 0x2a]);
                },
                true,
            ),
        ));
        v.push(("fragment", edited(s, &|f| f[ip + 6] |= 0x20, true)));
        v.push((
            "address",
            edited(
                s,
                &|f| f[ip + 16..ip + 20].copy_from_slice(&[203, 0, 113, 9]),
                true,
            ),
        ));
        v.push((
            "address",
            edited(s, &|f| f[udp + 2..udp + 4].copy_from_slice(&[0, 53]), true),
        ));
        v.push(("sequence", good(FRAMES + 1000 + k, now)));
        v.push(("sequence", good(0xffff_fff0 + k, now)));
        v.push(("timestamp", good(s, 1)));
        v.push(("timestamp", good(s, now + 3_600_000_000_000)));
    }
    v
}

fn expected(frames: &[(&str, Vec<u8>)]) -> InvalidCounts {
    let mut c = InvalidCounts::default();
    for (why, _) in frames {
        match *why {
            "checksum" => c.checksum += 1,
            "length" => c.length += 1,
            "encapsulation" => c.encapsulation += 1,
            "fragment" => c.fragment += 1,
            "address" => c.address += 1,
            "sequence" => c.sequence += 1,
            "timestamp" => c.timestamp += 1,
            other => panic!("{other}"),
        }
    }
    c
}

fn malformed_frames_are_counted_by_reason(backend: Backend) {
    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET, XDP)");
        return;
    }
    let net = Net::new("rxval", "rv0", "rv1");
    let (a, _) = net.ports();
    let stream = StreamConfig::single(
        ID,
        template("ipv4"),
        Rate::Pps(Pps(20_000.0)),
        Limit::Frames(FRAMES),
    );
    let mut cfg = net.one_way_trial(stream);
    cfg.backend = backend;
    // The receivers count for a second after the good stream ends: the injection (made about
    // 0.1 s into the stream's 2 s) still counts on a machine that holds this thread that long.
    cfg.drain = Duration::from_secs(1);
    // Blocks handed over after 50 ms rather than 2 ms: the ring then holds seconds of this
    // stream, not 0.13 s, so a receive thread held off its CPU loses nothing (ring drops are
    // printed on failure).
    cfg.rx_ring.retire_ms = 50;
    let stop = AtomicBool::new(false);
    let injected = std::sync::Mutex::new(Vec::new());
    let report = std::thread::scope(|sc| {
        let h = sc.spawn(|| trial::run(&cfg, &stop));
        // Inject while the good stream runs.
        net.wait_for_traffic();
        let frames = malformed(engine::sys::monotonic_ns());
        let port = a.clone();
        let sent = sc
            .spawn(move || {
                let ifindex = port.enter(0).unwrap();
                let sock = engine::sys::PacketSocket::open(ifindex, 0).unwrap();
                for (_, f) in &frames {
                    let t0 = Instant::now();
                    while !sock.send_frame(f).unwrap() {
                        assert!(t0.elapsed() < Duration::from_secs(5), "send stalled");
                        std::thread::sleep(Duration::from_micros(50));
                    }
                }
                frames
            })
            .join()
            .unwrap();
        *injected.lock().unwrap() = sent;
        h.join().unwrap()
    })
    .unwrap_or_else(|e| panic!("trial on {}: {e}", backend.name()));
    let injected = injected.into_inner().unwrap();
    let want = expected(&injected);
    assert_eq!(report.backend, backend);
    let s = &report.streams[0];
    let port_b = report.rx_ports.iter().find(|p| p.port == "b").unwrap();
    // Everything a failure needs to be read from the CI log alone.
    let seen = format!(
        "{}: sent {} received {} lost {:?} duplicates {} out of order {} invalid {:?} \
         negative latency {} latency {:?}; port b ring drops {}, clock steps {} (largest {} ns)",
        backend.name(),
        s.tx.sent,
        s.rx.received,
        s.rx.lost,
        s.rx.duplicates,
        s.rx.out_of_order,
        s.rx.invalid,
        s.rx.negative_latency,
        s.rx.latency,
        port_b.ring_drops,
        port_b.clock_steps,
        port_b.largest_clock_step_ns
    );
    println!("{seen}");
    // The good stream's figures are exact.
    assert_eq!(s.tx.sent, FRAMES, "{seen}");
    assert_eq!(
        (s.rx.received, s.rx.lost, s.rx.duplicates, s.rx.out_of_order),
        (FRAMES, Some(0), 0, 0),
        "good stream: {seen}"
    );
    assert_eq!(s.rx.highest_seq, Some(FRAMES - 1), "{seen}");
    assert_eq!(s.rx.negative_latency, 0, "{seen}");
    // No forged latency: every measured frame was sent during this trial (a bound of
    // correctness, not of speed: the whole trial takes about a second).
    let lat = s.rx.latency.expect("latency");
    assert!(lat.max_ns < 30_000_000_000, "{seen}");
    // Every malformed frame counted by its reason, for the stream and for its port.
    assert_eq!(s.rx.invalid, want, "by reason: {seen}");
    assert_eq!(port_b.invalid, want, "{seen}");
    assert_eq!(report.total.invalid, want.total());
}

#[test]
fn malformed_frames_are_counted_by_reason_af_packet() {
    malformed_frames_are_counted_by_reason(Backend::AfPacket);
}

#[test]
fn malformed_frames_are_counted_by_reason_xdp() {
    malformed_frames_are_counted_by_reason(Backend::Xdp);
}
