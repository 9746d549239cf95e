//! RFC 9693's real tests on the lab's real NAPT (issue #15): the tear-down of N established
//! connections (`nat-teardown-rate`) and the load on N established connections
//! (`nat-throughput`), each checked against the DUT's own counts — its conntrack table, the
//! masquerade rule's counter (one per new connection) and an nftables counter of every UDP frame
//! it forwarded. Root is needed; without it each test prints `SKIP`. Nothing here asserts a
//! speed: the rates are far below what this machine does.

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;
use wire::units::Pps;

use engine::nat::{self, ConnTrialConfig, LoadPhase};
use engine::trial::Backend;
use lab::Lab;
use wire::encap::IpVersion;

static SERIAL: Mutex<()> = Mutex::new(());

mod common_nat;
use common_nat::{conntrack_count, counter, nft, sh};
use lab::LabGuard;

fn napt_lab(name: &str) -> Option<LabGuard> {
    common_nat::napt_lab(name, "NAT real-test")
}

fn trial(lab: &Lab, n: u64, pps: f64) -> ConnTrialConfig {
    let (a, b) = bench::trial::lab_ports(lab).expect("lab ports");
    let mut c = ConnTrialConfig::new(a, b, IpVersion::V4);
    c.connections = n;
    c.rate_pps = Pps(pps);
    c.validation_rate_pps = Pps(pps);
    // A second between the phases and after the last frame: a busy machine that holds the
    // DUT or the responder for a few hundred ms must not turn late frames into lost ones.
    c.gap = Duration::from_secs(1);
    c.drain = Duration::from_secs(1);
    c.permutation_seed = Some(4814);
    c
}

#[test]
fn teardown_deletes_every_established_connection_and_times_it() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = napt_lab("n15t1") else { return };
    let lab = lab.0.as_ref().unwrap();
    let _ = sh(lab, &["conntrack", "-F"]);
    let n = 3_000;
    let r = nat::run(&trial(lab, n, 5_000.0), &AtomicBool::new(false), &mut || {}).expect("trial");
    assert_eq!((r.learned, r.validated), (n, n), "{r:?}");
    assert_eq!(conntrack_count(lab), n, "the DUT holds the N connections");
    let t = lab.teardown_conn_table().expect("tear-down");
    println!("{t:?}");
    // The DUT's own count before and after the deletion: all N, then none.
    assert_eq!(t.entries_before, n);
    assert_eq!(t.entries_after, 0);
    assert!(t.delete_ns > 0 && t.empty_ns > 0, "{t:?}");
    assert_eq!(conntrack_count(lab), 0);
    // A second tear-down finds the table empty: nothing removed, so no rate.
    let again = lab.teardown_conn_table().expect("tear-down");
    assert_eq!((again.entries_before, again.entries_after), (0, 0));
}

#[test]
fn load_on_n_established_connections_crosses_exactly_and_opens_none() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = napt_lab("n15t2") else { return };
    let lab = lab.0.as_ref().unwrap();
    // Every UDP frame the DUT forwards, both ways, by an independent counter.
    nft(
        lab,
        "table inet n15cnt {\n counter fwd_udp {\n }\n chain f {\n  type filter hook forward priority 10; policy accept;\n  meta l4proto udp counter name \"fwd_udp\"\n }\n}\n",
    );
    let _ = sh(lab, &["conntrack", "-F"]);
    let n = 1_000;
    // The AF_PACKET load (nat_xdp.rs holds the XDP one to the same counts).
    let load = LoadPhase {
        backend: Backend::AfPacket,
        ..LoadPhase::new(Pps(4_000.0), Duration::from_secs(2))
    };
    let mut cfg = trial(lab, n, 5_000.0);
    cfg.load = Some(load);
    let masq_before = counter(lab, "wirerate", "masqueraded");
    let fwd_before = counter(lab, "n15cnt", "fwd_udp");
    let r = nat::run(&cfg, &AtomicBool::new(false), &mut || {}).expect("trial");
    println!("{r:?}");
    assert_eq!((r.learned, r.validated), (n, n));
    let l = r.load.clone().expect("a load after a complete validation");
    let frames = load.frames();
    assert_eq!(frames, 8_000);
    assert_eq!((l.forward.sent, l.reverse.sent), (frames, frames));
    assert_eq!(l.rx_ring_drops, 0, "the tester's own rings dropped frames");
    // Exact: every load frame arrived, each on its own connection's tuple.
    assert_eq!((l.forward_received, l.reverse_received), (frames, frames));
    assert_eq!((l.forward_misdirected, l.reverse_misdirected), (0, 0));
    // The DUT: still exactly N connections after the load, not one new connection opened by it
    // (masquerade runs once per new connection), and it forwarded exactly the preliminary, the
    // validation and both directions of the load.
    assert_eq!(conntrack_count(lab), n);
    assert_eq!(counter(lab, "wirerate", "masqueraded") - masq_before, n);
    assert_eq!(
        counter(lab, "n15cnt", "fwd_udp") - fwd_before,
        2 * n + 2 * frames
    );
}

#[test]
fn no_load_when_a_connection_is_missing() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = napt_lab("n15t3") else { return };
    let lab = lab.0.as_ref().unwrap();
    // A table capped below N: the newest connections are refused, validation fails, and no
    // load runs on a table that lacks connections (RFC 9693: every real-test frame must
    // belong to an existing connection).
    lab.set_conn_table(Some(300), None).expect("cap");
    let _ = sh(lab, &["conntrack", "-F"]);
    lab.reset_conn_table(Some(300)).expect("reset");
    let mut cfg = trial(lab, 500, 5_000.0);
    cfg.load = Some(LoadPhase::new(Pps(1_000.0), Duration::from_secs(1)));
    let r = nat::run(&cfg, &AtomicBool::new(false), &mut || {}).expect("trial");
    assert_eq!(r.validated, 300);
    assert_eq!(r.load, None);
}
