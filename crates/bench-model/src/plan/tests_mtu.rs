//! `mtu-probe` in plans: its settings, the one case per block it runs in, its bounds and
//! directions, the MRU check it is exempt from when alone, and its time estimate.

use super::*;
use crate::search;
use core::time::Duration;
use wire::encap::IpVersion;

const CPE: &str = r#"name = "cpe"
[topology]
kind = "interfaces"
[ports.lan]
interface = "eth1"
namespace = "wr-lan"
ipv4 = "192.168.1.100"
gateway-v4 = "192.168.1.1"
speed = "1G"
[ports.wan]
interface = "eth2"
namespace = "wr-wan"
speed = "1G"
[ports.wan.pppoe]
role = "server"
mru = 1454
auth = ["pap"]
users = [{ user = "cpe", password = "secret" }]
[dut]
kind = "device"
[dut.profiles.default]
[methodology.mtu-probe]
min-size = 1280
rate = 500
duration = "0.5s"
[[matrix]]
protocol = ["udp"]
ip = [4]
encap = ["pppoe"]
bidirectional = true
frame-size = [1500, 1518]
methodologies = ["mtu-probe"]
"#;

#[test]
fn the_probe_runs_once_per_block_up_to_its_largest_size_both_ways() {
    let plan = Plan::parse(CPE, "cpe.toml").unwrap();
    let m = &plan.methodology.mtu_probe;
    assert_eq!((m.min_size, m.rate), (1280, 500));
    assert_eq!(m.duration, Duration::from_millis(500));
    let cases = plan.cases().unwrap();
    let with: Vec<&Case> = cases
        .iter()
        .filter(|c| c.methodologies.contains(&Methodology::MtuProbe))
        .collect();
    assert_eq!(with.len(), 1, "{cases:?}");
    assert_eq!(with[0].frame().and_then(|f| f.fixed()), Some(1518));
    let c = mtu_probe::config(m, with[0], plan.run.tester_tolerance);
    assert_eq!((c.min_size, c.max_size, c.pps), (1280, 1518, 500));
    assert_eq!(
        c.directions,
        [
            search::ProbeDirection::Forward,
            search::ProbeDirection::Reverse
        ]
    );
    // The 1500 B case has nothing left to run.
    assert!(cases
        .iter()
        .any(|c| c.frame().and_then(|f| f.fixed()) == Some(1500) && c.methodologies.is_empty()));
    // Estimate: a path one byte below the top, both directions bisected to the byte.
    let (trials, _) = plan.case_estimate(with[0]);
    assert_eq!(
        trials,
        2 * (2 + 8),
        "⌈log2(1518 − 1280)⌉ = 8 steps after min and max"
    );
}

#[test]
fn one_way_blocks_probe_forward_only_and_min_size_is_raised_to_the_smallest_frame() {
    let text = CPE
        .replace("bidirectional = true\n", "")
        .replace("min-size = 1280", "min-size = 64");
    let plan = Plan::parse(&text, "cpe.toml").unwrap();
    let case = plan
        .cases()
        .unwrap()
        .into_iter()
        .find(|c| c.methodologies.contains(&Methodology::MtuProbe))
        .unwrap();
    let c = mtu_probe::config(&plan.methodology.mtu_probe, &case, 0.01);
    assert_eq!(c.directions, [search::ProbeDirection::Forward]);
    assert_eq!(c.min_size, 64);
    assert!(c.tester_tolerance >= search::PROBE_TESTER_TOLERANCE);
    let mut v6 = case.clone();
    v6.dims.ip = IpVersion::V6;
    assert_eq!(
        mtu_probe::config(&plan.methodology.mtu_probe, &v6, 0.01).min_size,
        82
    );
}

/// Above the session's MRU: refused where a throughput search would run, allowed where the
/// probe runs alone (it goes there on purpose).
#[test]
fn sizes_above_the_mru_only_in_a_block_that_probes_alone() {
    assert!(Plan::parse(CPE, "cpe.toml").is_ok());
    let mixed = CPE.replace(
        "methodologies = [\"mtu-probe\"]",
        "methodologies = [\"mtu-probe\", \"rfc2544-throughput\"]",
    );
    let e = Plan::parse(&mixed, "cpe.toml").unwrap_err().0;
    assert!(
        e.iter()
            .any(|e| e.key == "matrix[0].frame-size" && e.message.contains("exceeds the MRU 1454")),
        "{e:?}"
    );
}

#[test]
fn settings_are_checked_at_their_key() {
    for (good, bad, key) in [
        (
            "min-size = 1280",
            "min-size = 10",
            "methodology.mtu-probe.min-size",
        ),
        ("rate = 500", "rate = 0", "methodology.mtu-probe.rate"),
        (
            "duration = \"0.5s\"",
            "duration = \"0s\"",
            "methodology.mtu-probe.duration",
        ),
        ("rate = 500", "sizes = 3", "methodology.mtu-probe.sizes"),
    ] {
        let text = CPE.replace(good, bad);
        let e = Plan::parse(&text, "cpe.toml").unwrap_err().0;
        assert!(e.iter().any(|e| e.key == key), "{bad}: {e:?}");
    }
}
