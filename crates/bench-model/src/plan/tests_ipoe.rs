//! `[ports.NAME.ipoe]`: the shipped plan parses with its keys, the line rate is the plain
//! frame's, and what cannot work is refused at its key.

use super::*;
use core::time::Duration;
use std::net::Ipv4Addr;
use wire::linerate::FrameSize;

fn errors(text: &str) -> Vec<PlanError> {
    match Plan::parse(text, "plan.toml") {
        Ok(_) => panic!("plan accepted:\n{text}"),
        Err(e) => {
            println!("{e}");
            e.0
        }
    }
}

fn has(errs: &[PlanError], key: &str, needle: &str) -> bool {
    errs.iter()
        .any(|e| e.key == key && e.message.contains(needle))
}

const SHIPPED: &str = include_str!("../../../../plans/cpe-ipoe.toml");

#[test]
fn the_shipped_ipoe_plan_parses_with_its_keys() {
    let plan = Plan::parse(SHIPPED, "plans/cpe-ipoe.toml").unwrap();
    let i = plan.ports[1].ipoe.as_ref().unwrap();
    assert_eq!(i.gateway, Ipv4Addr::new(198, 51, 100, 1));
    assert_eq!(
        (i.pool, i.pool_size),
        (Ipv4Addr::new(198, 51, 100, 10), 240)
    );
    assert_eq!(i.dns, Ipv4Addr::new(203, 0, 113, 53));
    assert_eq!(i.lease_time, Duration::from_secs(3600));
    assert_eq!(i.timeout, Duration::from_secs(60));
    assert_eq!(i.internet, Some(Ipv4Addr::new(203, 0, 113, 1)));
    assert!(i.ipv6);
    let cases = plan.cases().unwrap();
    // Plain Ethernet on the WAN: the 64 B line rate of 1 Gb/s, 1518 B allowed.
    let c64 = cases
        .iter()
        .find(|c| c.frame() == Some(FrameSize::Fixed { bytes: 64 }))
        .unwrap();
    assert!((plan.line_pps(c64).0 - 1_488_095.238).abs() < 0.01);
    assert!(plan.path_encap(c64).is_plain());
    assert!(cases
        .iter()
        .any(|c| c.frame() == Some(FrameSize::Fixed { bytes: 1518 })));
    let tcp: Vec<_> = cases
        .iter()
        .filter(|c| c.dims.protocol == Protocol::Tcp)
        .collect();
    assert_eq!(tcp.len(), 4, "one TCP case per MSS");
}

fn with_ipoe(table: &str, matrix: &str) -> String {
    SHIPPED
        .split("[ports.wan.ipoe]")
        .next()
        .unwrap()
        .to_string()
        + "[ports.wan.ipoe]\n"
        + table
        + "\n[dut]\nkind = \"device\"\n[dut.profiles.default]\n"
        + matrix
}

const UDP: &str = "[[matrix]]\nprotocol = [\"udp\"]\nip = [4]\nframe-size = [64]\nmethodologies = [\"rfc2544-throughput\"]\n";

#[test]
fn bad_ipoe_keys_are_refused_where_they_are_written() {
    let e = errors(&with_ipoe("pool-size = 300", UDP));
    assert!(has(
        &e,
        "ports.wan.ipoe",
        "the largest pool from there is 245"
    ));
    let e = errors(&with_ipoe(
        "gateway = \"10.0.0.1\"\npool = \"10.0.0.10\"",
        UDP,
    ));
    assert!(has(&e, "ports.wan.ipoe", "198.18.0.0/15"));
    let e = errors(&with_ipoe("dns = \"198.51.100.20\"", UDP));
    assert!(has(&e, "ports.wan.ipoe", "inside the pool"));
    let e = errors(&with_ipoe("internet = \"198.51.100.200\"", UDP));
    assert!(has(&e, "ports.wan.ipoe.internet", "subnet"));
    let e = errors(&with_ipoe("aftr-name = \"a..b\"", UDP));
    assert!(has(&e, "ports.wan.ipoe.aftr-name", "not a DNS name"));
    let e = errors(&with_ipoe("aftr = \"2001:db8:d::1\"", UDP));
    assert!(has(&e, "ports.wan.ipoe.aftr-name", "missing key"));
    let e = errors(&with_ipoe("lease = \"1h\"", UDP));
    assert!(
        e[0].key == "ports.wan.ipoe.lease"
            && e[0].hint.as_ref().is_some_and(|h| h.contains("lease-time"))
    );
    assert_eq!(e.len(), 1, "nothing else reported for it: {e:?}");
    // The benchmarking range takes a big pool.
    let big =
        "gateway = \"198.18.0.1\"\nprefix-len = 15\npool = \"198.18.0.10\"\npool-size = 100000";
    assert!(Plan::parse(&with_ipoe(big, UDP), "plan.toml").is_ok());
}

#[test]
fn what_an_ipoe_port_cannot_carry_is_refused() {
    let tcp = "[[matrix]]\nprotocol = [\"tcp\"]\nip = [4]\nmethodologies = [\"iperf3\"]\n";
    let e = errors(&with_ipoe("", tcp));
    assert!(has(
        &e,
        "matrix[0].protocol",
        "add `internet = \"203.0.113.1\"` under [ports.wan.ipoe]"
    ));
    assert!(Plan::parse(&with_ipoe("internet = \"203.0.113.1\"", tcp), "plan.toml").is_ok());
    let v6 = UDP.replace("ip = [4]", "ip = [6]");
    let e = errors(&with_ipoe("", &v6));
    assert!(has(
        &e,
        "matrix[0].ip",
        "IPv6 is provisioned on it, not routed"
    ));
    let first = with_ipoe("", UDP).replace("[ports.wan]\n", "[ports.lan.ipoe]\n[ports.wan]\n");
    let e = errors(&first);
    assert!(has(&e, "ports.lan.ipoe", "make it the second port"));
    let e = errors(&with_ipoe(
        "",
        &UDP.replace("frame-size", "encap = [\"pppoe\"]\nframe-size"),
    ));
    assert!(has(
        &e,
        "matrix[0].encap",
        "needs a port that plays the PPPoE session"
    ));
}
