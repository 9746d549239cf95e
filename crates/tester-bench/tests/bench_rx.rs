//! `wirerate bench rx` in short, on the bench's own veth pair (`wr-bench-<tag>-{va,vb}`, removed
//! when each bench ends): exact counts from trafgen and from our XDP sender, our receiver next
//! to xdp-bench behind the same sender, and the verdict fed real counts. Counts only: no speed
//! or ratio is asserted (those are what `wirerate bench` prints, and docs/engine.md quotes).

use engine::xdp::rx::{XdpReceiver, XdpRxConfig};
use lab::is_root;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The benches that turn on threaded NAPI run one at a time. Each bench's receiving veth end is
/// `wrb1` in a namespace of its own, and the bench finds its NAPI threads as the `napi/wrb1-*`
/// kernel threads that appear when it turns threading on: a second bench doing the same at that
/// moment lends it a thread that then vanishes (seen once in the suite: xdp-bench's round had
/// no scheduler figures, "its NAPI thread was found and pinned" failed).
static NAPI: Mutex<()> = Mutex::new(());

fn one_napi_bench_at_a_time() -> MutexGuard<'static, ()> {
    NAPI.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `args`, failing the test with its stderr if it fails; returns stdout.
fn sh(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("spawn");
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `wirerate bench rx --backend xdp` in short: trafgen sends exactly N frames at full speed,
/// the XDP receiver counts exactly N.
#[test]
fn bench_rx_xdp_counts_trafgen_exactly() {
    let _napi = one_napi_bench_at_a_time();
    if !is_root() {
        println!("SKIP: needs root (network namespaces, XDP)");
        return;
    }
    if Command::new("trafgen").arg("-v").output().is_err() {
        println!("SKIP: trafgen (netsniff-ng) is not installed");
        return;
    }
    let cfg = tester_bench::RxBenchConfig {
        frames: 300_000,
        backend: tester_bench::RxBackend::Xdp,
        ..Default::default()
    };
    let tag = format!("rxtg-{}", std::process::id());
    let r = tester_bench::rx(&cfg, &tag).unwrap();
    println!("{r:?}");
    assert_eq!(r.sent, 300_000, "trafgen sent");
    assert_eq!(r.counted, 300_000, "XDP counted");
    assert_eq!((r.received, r.duplicates), (1, 299_999), "one static frame");
    assert!(r.exact);
}

/// `wirerate bench rx --backend xdp --source xdp` in short: the XDP sender's N numbered frames
/// at full speed into the XDP receiver, whose veth poll runs in a SCHED_FIFO NAPI thread on
/// the sender's CPU (the default). The accounting adds up (sent + refused = N, counted =
/// distinct = sent, no duplicates) and, with the poll in its thread, the veth refuses none:
/// the ring is emptied after every batch whatever else runs on the CPU. Counts only.
#[test]
fn bench_rx_xdp_source_counts_every_frame_once_and_refuses_none() {
    let _napi = one_napi_bench_at_a_time();
    if !is_root() {
        println!("SKIP: needs root (network namespaces, XDP)");
        return;
    }
    let n = 400_000;
    let cfg = tester_bench::RxBenchConfig {
        frames: n,
        backend: tester_bench::RxBackend::Xdp,
        source: tester_bench::RxSource::Xdp,
        ..Default::default()
    };
    assert_eq!(cfg.napi, tester_bench::RxNapi::Thread, "the default");
    let tag = format!("rxxdp-{}", std::process::id());
    let r = tester_bench::rx(&cfg, &tag).unwrap();
    println!("{r:?}");
    assert_eq!(r.sent + r.refused, n, "sent + refused = N");
    assert_eq!(r.counted, r.sent, "counted = sent");
    assert_eq!((r.received, r.duplicates), (r.sent, 0), "distinct = sent");
    assert_eq!((r.refused, r.tx_dropped), (0, 0), "the veth refused frames");
    assert!(r.counted_once && r.exact);
    // The receive thread's scheduler figures cover the run: it was put on its CPU and ran.
    let t = r
        .napi_sched
        .expect("the receive thread's /proc/<tid>/schedstat");
    assert!(t.run_ns > 0 && t.runs > 0, "{t:?}");
    assert!(
        r.napi
            .as_deref()
            .unwrap_or("")
            .starts_with("thread on CPU 0"),
        "{:?}",
        r.napi
    );
    // The sender's own account: nothing refused means no refusal event; unpaced, it never
    // owed its schedule anything.
    let s = r.source.expect("the XDP source's facts");
    assert_eq!((s.refusal_events, s.max_catch_up), (0, 0), "{s:?}");
    // Every counted frame's wait, send stamp to count, in order.
    let w = r.wait.expect("the counted frames' waits");
    assert!(
        w.min_ns <= w.p50_ns
            && w.p50_ns <= w.p99_ns
            && w.p99_ns <= w.p999_ns
            && w.p999_ns <= w.max_ns
            && w.max_ns > 0,
        "{w:?}"
    );
}

/// xdp-tools' xdp-bench beside the checkout (`../shared/tools/xdp-tools`), if it is there.
fn xdp_bench_beside_the_checkout() -> Option<std::path::PathBuf> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    root.ancestors()
        .map(|d| d.join("shared/tools/xdp-tools/xdp-bench"))
        .find(|p| p.is_file())
}

/// `wirerate bench rx --backend xdp --source xdp --against xdp-bench` in short: one round of
/// each receiver behind the same paced sender. Both rounds account for every frame asked
/// (sent + refused = N), ours counts every frame put on the wire once, and xdp-bench's own
/// summary shows its program saw every accepted frame plus the sender's one probe frame (so
/// it was attached before the first frame and the round waited for the last). Counts only.
#[test]
fn bench_rx_against_xdp_bench_puts_both_receivers_behind_the_same_sender() {
    let _napi = one_napi_bench_at_a_time();
    if !is_root() {
        println!("SKIP: needs root (network namespaces, XDP)");
        return;
    }
    let Some(tool) = xdp_bench_beside_the_checkout() else {
        println!(
            "SKIP: no xdp-bench in shared/tools/xdp-tools above {}",
            env!("CARGO_MANIFEST_DIR")
        );
        return;
    };
    let n = 200_000;
    let cfg = tester_bench::RxBenchConfig {
        frames: n,
        backend: tester_bench::RxBackend::Xdp,
        source: tester_bench::RxSource::Xdp,
        source_pps: Some(400_000.0),
        ..Default::default()
    };
    let tag = format!("rxvs-{}", std::process::id());
    let r =
        tester_bench::rx_against_xdp_bench(&cfg, &tag, &tool, tester_bench::XdpBenchOp::NoTouch, 1)
            .unwrap();
    println!("{r:?}");
    assert_eq!(r.rounds.len(), 1);
    let (ours, theirs) = (r.rounds[0].wirerate, r.rounds[0].tool);
    for f in [ours, theirs] {
        assert_eq!(f.sent + f.refused, n, "sent + refused = N: {f:?}");
        assert!(f.source_pps > 0.0, "{f:?}");
    }
    assert_eq!(
        ours.counted,
        Some(ours.sent),
        "ours counted what was put on the wire"
    );
    assert_eq!(ours.counted_once, Some(true));
    assert!(r.counted_once_every_round);
    let seen = theirs
        .counted
        .expect("xdp-bench's summary: Packets received");
    assert_eq!(
        seen,
        theirs.sent + 1,
        "xdp-bench saw every accepted frame and the probe"
    );
    assert_eq!(
        theirs.counted_once, None,
        "xdp-bench does not check sequence numbers"
    );
    assert!(
        theirs.napi_wait_ns.is_some(),
        "its NAPI thread was found and pinned"
    );
    // Nothing of either run is left behind.
    let left = sh(&["ip", "netns", "list"]);
    assert!(!left.contains(&format!("wr-bench-{tag}")), "{left}");
}

/// The bench's verdict ([`tester_bench::RxVerdict`]) fed real counts: 1,000 numbered frames
/// through the veth into the XDP receiver pass; the same stream's first frame sent once more
/// (a frame counted twice: the totals still add up, the distinct count does not) fails.
#[test]
fn bench_rx_verdict_catches_a_frame_counted_twice() {
    let _napi = one_napi_bench_at_a_time();
    use engine::stream::{Limit, Rate, StreamConfig};
    use tester_bench::{bench_frame, BenchNet, RxVerdict};
    if !is_root() {
        println!("SKIP: needs root (network namespaces, XDP)");
        return;
    }
    let net = BenchNet::new(&format!("rxvd-{}", std::process::id()), false, None).unwrap();
    let frame = bench_frame(60, 2).unwrap();
    let rx = XdpReceiver::attach(&net.rx_port(None), &[2], &XdpRxConfig::default()).unwrap();
    engine::xdp::rx_napi::thread_on_cpu(Some(net.rx_netns()), net.rx_if(), 0).unwrap();
    let send = |frames: u64| -> u64 {
        let stream = StreamConfig {
            rewrite_macs: false,
            ..StreamConfig::single(2, frame.clone(), Rate::Unlimited, Limit::Frames(frames))
        };
        let port = net.tx_port(Some(0));
        let stop = AtomicBool::new(false);
        let rep = std::thread::scope(|s| {
            s.spawn(|| engine::xdp::tx::run_port(&port, std::slice::from_ref(&stream), 0, &stop))
                .join()
                .unwrap()
        })
        .unwrap();
        rep.streams[0].sent
    };
    let verdict = |frames: u64, sent: u64| {
        // Until every frame sent is counted (a hang guard of 20 s, not a fixed wait).
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(20) {
            let r = rx.stream_report(2, Some(sent)).unwrap().unwrap();
            if r.received + r.duplicates >= sent {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        std::thread::sleep(Duration::from_millis(50)); // a duplicate would land meanwhile
        let r = rx.stream_report(2, Some(sent)).unwrap().unwrap();
        let v = RxVerdict::of(
            frames,
            sent,
            r.received + r.duplicates,
            r.received,
            r.duplicates,
            true,
        );
        (r.received, r.duplicates, v)
    };
    let sent = send(1000);
    assert_eq!(sent, 1000);
    let (distinct, dups, v) = verdict(1000, sent);
    assert_eq!((distinct, dups), (1000, 0));
    assert!(v.counted_once && v.exact, "{v:?}");
    // The stream again, one frame: sequence number 0 a second time.
    let again = send(1);
    assert_eq!(again, 1);
    let (distinct, dups, v) = verdict(1001, sent + again);
    assert_eq!((distinct, dups), (1000, 1));
    assert!(
        !v.counted_once && !v.exact,
        "a frame counted twice passed: {v:?}"
    );
}
