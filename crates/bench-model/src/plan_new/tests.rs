//! Every template parses unedited and expands to the cases its comments promise.

use super::*;
use crate::plan::{Methodology, Plan};

fn port(name: &str, ns: Option<&str>, v4: Option<&str>, v6: Option<&str>) -> PortFacts {
    let ipv4 = v4.map(|a| (a.parse::<Ipv4Addr>().unwrap(), 24));
    let ipv6 = v6.map(|a| (a.parse::<Ipv6Addr>().unwrap(), 64));
    PortFacts {
        interface: name.into(),
        namespace: ns.map(String::from),
        gateway_v4: ipv4
            .and_then(|(a, p)| subnet_guess_v4(a, p))
            .map(|addr| NextHop {
                addr,
                source: Source::DefaultRoute,
            }),
        gateway_v6: ipv6
            .and_then(|(a, p)| subnet_guess_v6(a, p))
            .map(|addr| NextHop {
                addr,
                source: Source::Route,
            }),
        ipv4,
        ipv6,
        mtu: Some(1500),
        wire: WireSpeed::Unknown {
            why: "a virtual interface (veth) has no wire".into(),
        },
    }
}

fn router_ports() -> Vec<PortFacts> {
    vec![
        port(
            "wrpna",
            Some("wr-pn-a"),
            Some("198.51.100.2"),
            Some("2001:db8:a::2"),
        ),
        port(
            "wrpnb",
            Some("wr-pn-b"),
            Some("203.0.113.2"),
            Some("2001:db8:b::2"),
        ),
    ]
}

fn request(setup: Setup, ports: Vec<PortFacts>) -> Request {
    Request {
        setup,
        ports,
        speed: Some(BitsPerSec(1e9)),
        ssh: None,
        quick: false,
    }
}

/// The plan's text parsed as `plan check` parses it, and its case ids.
fn parsed(text: &str) -> (Plan, Vec<String>) {
    let (plan, cases) = Plan::parse_expanded(text, "new.toml")
        .unwrap_or_else(|e| panic!("the written plan does not parse:\n{e}\n{text}"));
    let ids = cases.iter().map(|c| c.id.clone()).collect();
    (plan, ids)
}

fn ids(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn router_parses_and_expands_to_the_seed_matrix() {
    let text = write(&request(Setup::Router, router_ports())).unwrap();
    let (plan, cases) = parsed(&text);
    assert_eq!(plan.ports[0].namespace.as_deref(), Some("wr-pn-a"));
    assert_eq!(plan.ports[0].ipv4, Some("198.51.100.2".parse().unwrap()));
    assert_eq!(
        plan.ports[0].gateway_v4,
        Some("198.51.100.1".parse().unwrap())
    );
    assert_eq!(
        plan.ports[1].gateway_v6,
        Some("2001:db8:b::1".parse().unwrap())
    );
    assert_eq!(plan.speed().0, 1e9);
    let mut want: Vec<String> = RFC2544_SIZES
        .iter()
        .map(|s| format!("default/udp4/{s}B"))
        .collect();
    want.extend(
        RFC2544_SIZES_V6
            .iter()
            .map(|s| format!("default/udp6/{s}B")),
    );
    for ip in [4, 6] {
        for s in [1, 2, 4] {
            want.push(format!("default/tcp{ip}/s{s}"));
        }
    }
    let (mut got, mut want) = (cases, want);
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(plan.methodology.goals.len(), 2, "NDR and PDR");
    // The speed's reason, the hooks' stage rules and the no-wire label are explained.
    assert!(
        text.contains("this port has no wire speed (a virtual interface (veth)"),
        "{text}"
    );
    assert!(text.contains("no wire speed on this port"), "{text}");
    assert!(text.contains("# samplers = [{ command = \"vmstat 1\", parse = \"vmstat\" }]"));
    assert!(text.contains("from the default route"), "{text}");
}

#[test]
fn quick_is_one_size_per_ip_version_short_trials_one_session() {
    let mut r = request(Setup::Router, router_ports());
    r.quick = true;
    let text = write(&r).unwrap();
    let (plan, cases) = parsed(&text);
    assert_eq!(
        cases,
        ids(&[
            "default/udp4/64B",
            "default/udp6/82B",
            "default/tcp4/s1",
            "default/tcp6/s1"
        ])
    );
    assert_eq!(plan.run.trial_duration.as_secs_f64(), 3.0);
    assert_eq!(plan.run.repetitions, 1);
}

#[test]
fn router_without_v6_on_both_ports_is_ipv4_only() {
    let mut ports = router_ports();
    ports[1].ipv6 = None;
    ports[1].gateway_v6 = None;
    let mut r = request(Setup::Router, ports);
    r.quick = true;
    let (_, cases) = parsed(&write(&r).unwrap());
    assert_eq!(cases, ids(&["default/udp4/64B", "default/tcp4/s1"]));
}

#[test]
fn router_ports_in_one_namespace_get_no_tcp_and_say_why() {
    let mut ports = router_ports();
    ports[1].namespace = Some("wr-pn-a".into());
    let text = write(&request(Setup::Router, ports)).unwrap();
    let (_, cases) = parsed(&text);
    assert!(cases.iter().all(|c| !c.contains("tcp")), "{cases:?}");
    assert!(
        text.contains("# no TCP block: iperf3 needs the two ports in different network namespaces")
    );
}

#[test]
fn speeds_unknown_known_and_lower() {
    // No wire speed and no --speed: refused, saying what to give.
    let mut r = request(Setup::Router, router_ports());
    r.speed = None;
    let e = write(&r).unwrap_err().to_string();
    assert!(
        e.contains("port a (wrpna in wr-pn-a) has no wire speed"),
        "{e}"
    );
    assert!(e.contains("--speed"), "{e}");
    // Known: the link's own speed, without --speed.
    let mut ports = router_ports();
    for p in &mut ports {
        p.wire = WireSpeed::Known { bps: 2.5e9 };
    }
    r.ports = ports;
    let text = write(&r).unwrap();
    assert!(text.contains("speed = \"2.5G\""), "{text}");
    assert!(text.contains("the link's speed (2.5 Gb/s)"), "{text}");
    assert_eq!(parsed(&text).0.speed().0, 2.5e9);
    // --speed above the link's: refused with both figures.
    r.speed = Some(BitsPerSec(1e10));
    let e = write(&r).unwrap_err().to_string();
    assert!(e.contains("2.5 Gb/s") && e.contains("10 Gb/s"), "{e}");
    // Below it: the plan's reference, the link's speed said beside it.
    r.speed = Some(BitsPerSec(1e9));
    let text = write(&r).unwrap();
    assert!(
        text.contains("--speed (the link runs at 2.5 Gb/s)"),
        "{text}"
    );
}

#[test]
fn a_port_without_addresses_is_refused_with_what_to_do() {
    let mut ports = router_ports();
    ports[0] = port("wrpna", Some("wr-pn-a"), None, None);
    let e = write(&request(Setup::Router, ports))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ip -n wr-pn-a addr add 192.0.2.2/24 dev wrpna"),
        "{e}"
    );
}

#[test]
fn guessed_next_hops_say_check_and_small_mtus_drop_sizes() {
    let mut ports = router_ports();
    for p in &mut ports {
        p.gateway_v4 = p.gateway_v4.map(|h| NextHop {
            source: Source::SubnetGuess,
            ..h
        });
        p.mtu = Some(1400);
    }
    let text = write(&request(Setup::Router, ports)).unwrap();
    let (plan, cases) = parsed(&text);
    assert!(text.contains("CHECK: a guess"), "{text}");
    // The receiving port's guessed next hop is left out: it would be asked before each trial.
    assert_eq!(plan.ports[1].gateway_v4, None);
    assert!(!cases.iter().any(|c| c.contains("1518B")), "{cases:?}");
    assert!(text.contains("up to 1418 B"), "{text}");
}

#[test]
fn gateway_pppoe_has_both_ways_tcp_with_mss_and_the_mtu_probe() {
    let ports = vec![
        port("enp1s0", Some("wr-lan"), Some("192.168.1.100"), None),
        port("enp2s0", Some("wr-wan"), None, None),
    ];
    let text = write(&request(Setup::GatewayPppoe, ports)).unwrap();
    let (plan, cases) = parsed(&text);
    assert!(plan.ports[1].pppoe.is_some());
    let count = |m: Methodology| {
        Plan::parse_expanded(&text, "new.toml")
            .unwrap()
            .1
            .iter()
            .filter(|c| c.methodologies.contains(&m))
            .count()
    };
    assert_eq!(
        count(Methodology::MultiGoal),
        14,
        "7 sizes one way and both ways"
    );
    assert_eq!(count(Methodology::MtuProbe), 1);
    assert_eq!(
        count(Methodology::Iperf3),
        3 + 4,
        "sessions 1/2/4 and the MSS sweep"
    );
    assert!(cases.iter().any(|c| c.contains("1472B")), "{cases:?}");
    // 1518 B only in the MTU probe: through MRU 1454 it would be fragmented.
    let (_, expanded) = Plan::parse_expanded(&text, "new.toml").unwrap();
    for c in expanded
        .iter()
        .filter(|c| c.frame().and_then(|f| f.fixed()) == Some(1518))
    {
        assert_eq!(c.methodologies, [Methodology::MtuProbe], "{}", c.id);
    }
    assert!(text.contains("CHECK: the login configured on the gateway"));
}

#[test]
fn gateway_dslite_has_no_tcp_and_says_why() {
    let ports = vec![
        port("enp1s0", None, Some("192.168.1.100"), None),
        port("enp2s0", None, None, None),
    ];
    let mut r = request(Setup::GatewayDslite, ports);
    let text = write(&r).unwrap();
    let (plan, cases) = parsed(&text);
    assert!(plan.ports[1].dslite.is_some());
    assert!(cases.iter().any(|c| c.contains("1478B")), "{cases:?}");
    assert!(!cases.iter().any(|c| c.contains("tcp")), "{cases:?}");
    assert!(text.contains("# no TCP block: the softwire lives in wirerate"));
    r.quick = true;
    let (_, cases) = parsed(&write(&r).unwrap());
    assert_eq!(cases.len(), 2, "one size one way and both ways: {cases:?}");
}

#[test]
fn endpoint_is_tcp_to_the_device_over_ssh() {
    let ports = vec![port("enp1s0", None, Some("192.0.2.2"), None)];
    let mut r = request(Setup::Endpoint, ports);
    let e = write(&r).unwrap_err().to_string();
    assert!(e.contains("--ssh"), "{e}");
    r.ssh = Some("root@192.0.2.1".into());
    let (plan, cases) = parsed(&write(&r).unwrap());
    assert_eq!(
        cases,
        ids(&["default/tcp4/s1", "default/tcp4/s2", "default/tcp4/s4"])
    );
    assert!(matches!(plan.dut.exec, crate::hooks::Exec::Ssh { .. }));
}

#[test]
fn every_setup_and_mode_parses() {
    for (_, setup) in Setup::ALL {
        for quick in [false, true] {
            let ports: Vec<PortFacts> = match setup {
                Setup::Endpoint => router_ports().into_iter().take(1).collect(),
                _ => router_ports(),
            };
            let r = Request {
                setup,
                ports,
                speed: Some(BitsPerSec(1e9)),
                ssh: Some("admin@192.0.2.1".into()),
                quick,
            };
            let text = write(&r).unwrap();
            let (_, cases) = parsed(&text);
            assert!(!cases.is_empty(), "{}", setup.name());
        }
    }
}

#[test]
fn subnet_guesses_skip_our_own_address() {
    let g = |a: &str, p| subnet_guess_v4(a.parse().unwrap(), p);
    assert_eq!(g("198.51.100.2", 24), Some("198.51.100.1".parse().unwrap()));
    assert_eq!(g("198.51.100.1", 24), Some("198.51.100.2".parse().unwrap()));
    assert_eq!(g("198.51.100.1", 31), None);
    let g6 = subnet_guess_v6("2001:db8::1".parse().unwrap(), 64);
    assert_eq!(g6, Some("2001:db8::2".parse().unwrap()));
}
