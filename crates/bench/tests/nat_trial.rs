//! The engine's two-phase connection trial (`engine::nat`, issue #15) against the lab's real
//! NAPT (nftables masquerade in the DUT namespace): the responder learns the translated tuples
//! and every validation frame crosses the NAT back to the tuple its connection was opened
//! from; with the lab's capacity rule of L the DUT holds exactly L connections and the newest are
//! the ones that fail. Every figure is checked against the DUT's own counters (conntrack's
//! entry count, nftables rule counters). Root is needed; without it each test prints `SKIP`.
//!
//! N and rates are far below what this machine does (a few thousand connections at a few
//! thousand per second), so the assertions do not depend on its speed.

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;
use wire::units::Pps;

use engine::nat::{self, ConnTrialConfig, Failed};
use engine::port::PortSpec;
use lab::{Lab, Node};
use wire::encap::IpVersion;

static SERIAL: Mutex<()> = Mutex::new(());

mod common_nat;
use common_nat::{conntrack_count, counter, sh};
use lab::LabGuard;

fn napt_lab(name: &str) -> Option<LabGuard> {
    common_nat::napt_lab(name, "NAT trial")
}

fn ports(lab: &Lab) -> (PortSpec, PortSpec) {
    bench::trial::lab_ports(lab).expect("lab ports")
}

fn trial(lab: &Lab, n: u64, pps: f64) -> ConnTrialConfig {
    let (a, b) = ports(lab);
    let mut c = ConnTrialConfig::new(a, b, IpVersion::V4);
    c.connections = n;
    c.rate_pps = Pps(pps);
    c.validation_rate_pps = Pps(pps);
    // A second between the phases and after the last frame: a busy machine that holds the
    // DUT or the responder for a few hundred ms must not turn late frames into lost ones.
    c.gap = Duration::from_secs(1);
    c.drain = Duration::from_secs(1);
    c
}

#[test]
fn responder_learns_napt_translations_and_every_reply_crosses_back() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = napt_lab("napt-conn1") else {
        return;
    };
    let lab = lab.0.as_ref().unwrap();
    let _ = sh(lab, &["conntrack", "-F"]);
    let n = 2_000;
    let cfg = trial(lab, n, 5_000.0);
    let before = counter(lab, "wirerate", "masqueraded");
    let mut in_table = None;
    let r = nat::run(&cfg, &AtomicBool::new(false), &mut || {
        in_table = Some(conntrack_count(lab));
    })
    .expect("trial");
    println!("{r:?}");
    assert_eq!(r.preliminary.sent, n);
    assert_eq!(r.learned, n, "every connection reached the responder");
    // Masquerade rewrote every source to the DUT's own address on port B's side.
    assert_eq!(r.translated, n);
    assert_eq!((r.learned_duplicates, r.misdirected), (0, 0));
    assert_eq!(r.validation.sent, n);
    assert_eq!(r.validated, n, "every reply crossed the NAT back");
    assert_eq!(r.failed, None);
    // The DUT's own counts: one table entry and one masquerade per connection.
    assert_eq!(in_table, Some(n));
    assert_eq!(counter(lab, "wirerate", "masqueraded") - before, n);
}

/// The lab's own capacity rule (`lab::conntrack::limit_ruleset`, a set of `size L` per family):
/// the DUT holds exactly L connections and refuses the newest, and the rule counts them.
#[test]
fn the_labs_capacity_rule_holds_exactly_that_many_and_drops_the_newest() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = napt_lab("napt-conn2") else {
        return;
    };
    let lab = lab.0.as_ref().unwrap();
    let limit = 700u64;
    let n = 1_000u64;
    let script = lab::conntrack::limit_ruleset(Some(limit));
    let mut c = lab.command(Node::Dut, &["nft", "-f", "-"]).unwrap();
    use std::io::Write;
    let mut child = c.stdin(std::process::Stdio::piped()).spawn().expect("nft");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    let _ = sh(lab, &["conntrack", "-F"]);
    let cfg = trial(lab, n, 5_000.0);
    let mut in_table = None;
    let r = nat::run(&cfg, &AtomicBool::new(false), &mut || {
        in_table = Some(conntrack_count(lab));
    })
    .expect("trial");
    println!("{r:?}");
    assert_eq!(r.preliminary.sent, n);
    assert_eq!(r.learned, limit);
    assert_eq!(r.validated, limit);
    assert_eq!(
        r.failed,
        Some(Failed {
            count: n - limit,
            first: limit,
            last: n - 1
        }),
        "counting order: exactly the newest were refused"
    );
    assert_eq!(in_table, Some(limit));
    assert_eq!(counter(lab, lab::conntrack::TABLE, "refused"), n - limit);
}

#[test]
fn pseudorandom_order_validates_every_connection() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = napt_lab("napt-conn3") else {
        return;
    };
    let lab = lab.0.as_ref().unwrap();
    let _ = sh(lab, &["conntrack", "-F"]);
    // More connections than source ports: the flow set also walks destination ports.
    let n = nat::SOURCE_PORTS + 500;
    let mut cfg = trial(lab, n, 10_000.0);
    cfg.permutation_seed = Some(4814);
    let r = nat::run(&cfg, &AtomicBool::new(false), &mut || {}).expect("trial");
    println!("{r:?}");
    assert_eq!(r.learned, n);
    assert_eq!(r.validated, n);
    assert_eq!(r.failed, None);
    assert_eq!(r.translated, n);
}
