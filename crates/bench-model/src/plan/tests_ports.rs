//! Plans on real ports: addresses, the endpoint topology, PPPoE and DS-Lite sections, and
//! what a matrix may not ask of an emulated ISP port. Every error names file, line and key.

use super::*;
use core::time::Duration;
use std::net::{Ipv4Addr, Ipv6Addr};

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
timeout = "20s"
[dut]
kind = "device"
[dut.profiles.default]
[[matrix]]
protocol = ["udp"]
ip = [4]
encap = ["pppoe"]
frame-size = [64, 1472]
methodologies = ["rfc2544-throughput"]
"#;

#[test]
fn cpe_plan_with_a_pppoe_server_port() {
    let plan = Plan::parse(CPE, "cpe.toml").unwrap();
    let wan = &plan.ports[1];
    let pp = wan.pppoe.as_ref().unwrap();
    assert_eq!(pp.role, PppoeRole::Server);
    assert_eq!(pp.mru, 1454);
    assert_eq!(pp.auth, [PppAuth::Pap]);
    assert_eq!(pp.users, [("cpe".to_string(), "secret".to_string())]);
    assert_eq!(pp.timeout, Duration::from_secs(20));
    assert_eq!(pp.gateway, Ipv4Addr::new(198, 51, 100, 1));
    assert_eq!(
        plan.ports[0].gateway_v4,
        Some(Ipv4Addr::new(192, 168, 1, 1))
    );
    let cases = plan.cases().unwrap();
    // The line rate is that of the PPPoE link: frame + 8 bytes.
    let c64 = cases
        .iter()
        .find(|c| c.frame().and_then(|f| f.fixed()) == Some(64))
        .unwrap();
    let expect = 1e9 / ((64.0 + 8.0 + 20.0) * 8.0);
    assert!(
        (plan.line_pps(c64).0 - expect).abs() < 1e-6,
        "{:?}",
        plan.line_pps(c64)
    );
    assert!(plan.path_encap(c64).pppoe);
    // One PPPoE session's start-up is in the estimate.
    let e = plan.estimate().unwrap();
    assert!(e.startup >= STARTUP.pppoe_session, "{e:?}");
}

#[test]
fn pppoe_sections_are_checked_key_by_key() {
    let errs = errors(&CPE.replace("role = \"server\"", "role = \"svr\""));
    assert!(
        has(&errs, "ports.wan.pppoe.role", "unknown value `svr`"),
        "{errs:?}"
    );
    assert_eq!(errs[0].line, 15);
    let errs = errors(&CPE.replace("mru = 1454", "mtu = 1454"));
    assert!(
        errs[0].hint.as_deref() == Some("did you mean `mru`?"),
        "{errs:?}"
    );
    let errs = errors(&CPE.replace("users = [{ user = \"cpe\", password = \"secret\" }]\n", ""));
    assert!(
        has(&errs, "ports.wan.pppoe.users", "credentials"),
        "{errs:?}"
    );
    let errs = errors(&CPE.replace("auth = [\"pap\"]", "auth = [\"mschap\"]"));
    assert!(
        has(&errs, "ports.wan.pppoe.auth[0]", "unknown value"),
        "{errs:?}"
    );
    let errs = errors(&CPE.replace("mru = 1454", "mru = 9000"));
    assert!(
        has(&errs, "ports.wan.pppoe.mru", "between 64 and 1500"),
        "{errs:?}"
    );
}

#[test]
fn a_pppoe_port_refuses_tcp_ipv6_and_frames_above_its_mru() {
    // 1518 B carries a 1500-byte packet: above the MRU 1454, it would be fragmented.
    let errs = errors(&CPE.replace("[64, 1472]", "[64, 1518]"));
    let e = errs
        .iter()
        .find(|e| e.key == "matrix[0].frame-size")
        .unwrap();
    assert!(e.message.contains("exceeds the MRU 1454"), "{e}");
    assert!(e.message.contains("fragmented (2 frames there)"), "{e}");
    // The IMIX's 1518 B frames likewise.
    let errs = errors(&CPE.replace("[64, 1472]", "[64, \"imix\"]"));
    let i = errs
        .iter()
        .find(|e| e.key == "matrix[0].frame-size")
        .unwrap();
    assert!(
        i.message
            .contains("largest frame that crosses whole is 1472 B"),
        "{i}"
    );
    assert!(
        e.message
            .contains("largest frame that crosses whole is 1472 B"),
        "{e}"
    );
    let errs = errors(
        &CPE.replace("ip = [4]", "ip = [4, 6]")
            .replace("[64, 1472]", "[82]"),
    );
    assert!(has(&errs, "matrix[0].ip", "carries IPv4 only"), "{errs:?}");
    let errs = errors(
        &CPE.replace("protocol = [\"udp\"]", "protocol = [\"udp\", \"tcp\"]")
            .replace(
                "[\"rfc2544-throughput\"]",
                "[\"rfc2544-throughput\", \"iperf3\"]",
            ),
    );
    assert!(
        has(&errs, "matrix[0].protocol", "TCP cannot cross port `wan`"),
        "{errs:?}"
    );
    assert!(
        has(
            &errs,
            "matrix[0].protocol",
            "add `internet = \"203.0.113.1\"`"
        ),
        "{errs:?}"
    );
}

/// `internet` gives the AC a TUN with a kernel behind it: TCP then crosses the port (MSS
/// sweep included), even with both tester ports in one namespace (iperf3's server runs in the
/// run's own Internet namespace). Bad addresses are refused at the key.
#[test]
fn a_pppoe_server_with_an_internet_side_accepts_tcp() {
    let tcp = CPE.replace("timeout = \"20s\"", "timeout = \"20s\"\ninternet = \"203.0.113.1\"")
        + "[[matrix]]\nprotocol = [\"tcp\"]\nip = [4]\nmss = [1414, 1200, 800, 400]\nmethodologies = [\"iperf3\"]\n";
    let plan = Plan::parse(&tcp, "cpe.toml").unwrap();
    let pp = plan.ports[1].pppoe.as_ref().unwrap();
    assert_eq!(pp.internet, Some(Ipv4Addr::new(203, 0, 113, 1)));
    let one_ns = tcp.replace("namespace = \"wr-wan\"", "namespace = \"wr-lan\"");
    assert!(Plan::parse(&one_ns, "cpe.toml").is_ok());
    // Still no IPv6 through it.
    let errs = errors(&tcp.replace("ip = [4]\nmss", "ip = [4, 6]\nmss"));
    assert!(has(&errs, "matrix[1].ip", "carries IPv4 only"), "{errs:?}");
    let errs = errors(&tcp.replace(
        "internet = \"203.0.113.1\"",
        "internet = \"198.51.100.200\"",
    ));
    assert!(
        has(&errs, "ports.wan.pppoe.internet", "pool's /24"),
        "{errs:?}"
    );
    let errs = errors(&tcp.replace("internet = \"203.0.113.1\"", "internet = \"10.0.0.1\""));
    assert!(
        has(&errs, "ports.wan.pppoe.internet", "documentation address"),
        "{errs:?}"
    );
    // The iperf3 client runs at the first port: an AC with `internet` there cannot serve it.
    let (head, rest) = tcp.split_once("[ports.lan]").unwrap();
    let (lan, rest) = rest.split_once("[ports.wan]").unwrap();
    let (wan, tail) = rest.split_once("[dut]").unwrap();
    let swapped = format!("{head}[ports.wan]{wan}[ports.lan]{lan}[dut]{tail}");
    let errs = errors(&swapped);
    assert!(
        has(&errs, "matrix[1].protocol", "make this port the second"),
        "{errs:?}"
    );
    // A client has no Internet side.
    let errs = errors(&tcp.replace("role = \"server\"", "role = \"client\""));
    assert!(
        has(&errs, "ports.wan.pppoe.internet", "applies to the server"),
        "{errs:?}"
    );
}

#[test]
fn real_ports_need_addresses_for_what_the_matrix_sends() {
    // Without PPPoE the far port needs its own address (the frames' destination).
    let plain = CPE.split("[ports.wan.pppoe]").next().unwrap().to_string()
        + "[dut]\nkind = \"device\"\n[dut.profiles.default]\n[[matrix]]\nprotocol = [\"udp\"]\nip = [4, 6]\nframe-size = [512]\nmethodologies = [\"rfc2544-throughput\"]\n";
    let errs = errors(&plain);
    assert!(
        has(&errs, "ports.wan.ipv4", "addressed to this port"),
        "{errs:?}"
    );
    assert!(has(&errs, "ports.lan.ipv6", "source address"), "{errs:?}");
    assert!(has(&errs, "ports.lan.gateway-v6", "next hop"), "{errs:?}");
    // The errors point at the port's table.
    let e = errs.iter().find(|e| e.key == "ports.wan.ipv4").unwrap();
    assert_eq!(e.line, 10, "{e}");
    let errs = errors(&CPE.replace(
        "gateway-v4 = \"192.168.1.1\"",
        "gateway-v4 = \"192.168.1.1/24\"",
    ));
    assert!(
        has(&errs, "ports.lan.gateway-v4", "without a prefix length"),
        "{errs:?}"
    );
    // iperf3 between two ports in one namespace would never cross the DUT.
    let same = plain
        .replace(
            "namespace = \"wr-wan\"\n",
            "namespace = \"wr-lan\"\nipv4 = \"203.0.113.2\"\n",
        )
        .replace(
            "ip = [4, 6]\nframe-size = [512]\nmethodologies = [\"rfc2544-throughput\"]",
            "ip = [4]\nprotocol = [\"tcp\"]\nmethodologies = [\"iperf3\"]",
        )
        .replace("protocol = [\"udp\"]\nip = [4]", "ip = [4]");
    let errs = errors(&same);
    assert!(
        has(&errs, "ports.wan.namespace", "different network namespaces"),
        "{errs:?}"
    );
}

#[test]
fn one_port_is_the_endpoint_topology() {
    let text = r#"name = "ep"
[topology]
kind = "interfaces"
[ports.a]
interface = "eth1"
gateway-v4 = "192.0.2.1"
speed = "1G"
[dut]
kind = "device"
ssh = "root@192.0.2.1"
[dut.profiles.default]
[[matrix]]
protocol = ["tcp"]
ip = [4]
methodologies = ["iperf3"]
"#;
    let plan = Plan::parse(text, "ep.toml").unwrap();
    assert!(parse::is_endpoint(&plan.topology, &plan.ports));
    let errs = errors(&text.replace(
        "protocol = [\"tcp\"]\nip = [4]\nmethodologies = [\"iperf3\"]",
        "protocol = [\"udp\"]\nip = [4]\nframe-size = [64]\nmethodologies = [\"rfc2544-throughput\"]",
    ));
    assert!(
        has(&errs, "matrix[0].methodologies", "one tester port"),
        "{errs:?}"
    );
    let errs = errors(&text.replace("gateway-v4 = \"192.0.2.1\"\n", ""));
    assert!(
        has(&errs, "ports.a.gateway-v4", "DUT is the endpoint"),
        "{errs:?}"
    );
    // The lab's endpoint topology too.
    let lab = r#"name = "ep"
[topology]
kind = "lab"
lab = "endpoint"
name = "epports"
[dut]
kind = "lab"
profiles = ["forward"]
[[matrix]]
protocol = ["udp"]
frame-size = [64]
methodologies = ["rfc2544-throughput"]
"#;
    let errs = errors(lab);
    assert!(
        has(&errs, "matrix[0].methodologies", "one tester port"),
        "{errs:?}"
    );
}

#[test]
fn dslite_sections_parse() {
    let text = CPE
        .replace(
            "[ports.wan.pppoe]\nrole = \"server\"\nmru = 1454\nauth = [\"pap\"]\nusers = [{ user = \"cpe\", password = \"secret\" }]\ntimeout = \"20s\"\n",
            "ipv4 = \"203.0.113.2\"\n[ports.wan.dslite]\nrole = \"aftr\"\naddress = \"2001:db8:d::1\"\n",
        )
        .replace("[64, 1472]", "[64, 1478]")
        .replace("encap = [\"pppoe\"]", "encap = [\"dslite\"]");
    let plan = Plan::parse(&text, "cpe.toml").unwrap();
    let d = plan.ports[1].dslite.as_ref().unwrap();
    assert_eq!(d.role, DsliteRole::Aftr);
    assert_eq!(d.address, "2001:db8:d::1".parse::<Ipv6Addr>().unwrap());
    let errs = errors(&text.replace("role = \"aftr\"", "role = \"b4\""));
    assert!(
        has(&errs, "ports.wan.dslite.peer", "AFTR's address"),
        "{errs:?}"
    );
    assert!(!d.provision && d.aftr_name.is_none());
    // The AFTR may provision the CPE's WAN link (RA + DHCPv6 with the AFTR name).
    let prov = text.replace(
        "address = \"2001:db8:d::1\"\n",
        "address = \"2001:db8:d::1\"\nprovision = true\naftr-name = \"aftr.isp.example\"\n",
    );
    let plan = Plan::parse(&prov, "cpe.toml").unwrap();
    let d = plan.ports[1].dslite.as_ref().unwrap();
    assert!(d.provision);
    assert_eq!(d.aftr_name.as_deref(), Some("aftr.isp.example"));
    let errs = errors(&prov.replace("aftr.isp.example", "a..b"));
    assert!(
        has(&errs, "ports.wan.dslite.aftr-name", "not a DNS name"),
        "{errs:?}"
    );
    let errs = errors(&prov.replace("role = \"aftr\"", "role = \"b4\"\npeer = \"2001:db8:d::2\""));
    assert!(
        has(&errs, "ports.wan.dslite.provision", "applies to the AFTR"),
        "{errs:?}"
    );
}

/// `internet` on an AFTR: a TUN with a kernel behind the softwires, so TCP (with the MSS
/// sweep) crosses it; without it the refusal names the key to add; a B4 has no Internet side.
#[test]
fn a_dslite_aftr_with_an_internet_side_accepts_tcp() {
    let udp = CPE
        .replace(
            "[ports.wan.pppoe]\nrole = \"server\"\nmru = 1454\nauth = [\"pap\"]\nusers = [{ user = \"cpe\", password = \"secret\" }]\ntimeout = \"20s\"\n",
            "ipv4 = \"203.0.113.2\"\n[ports.wan.dslite]\nrole = \"aftr\"\naddress = \"2001:db8:d::1\"\n",
        )
        .replace("[64, 1472]", "[64, 1478]")
        .replace("encap = [\"pppoe\"]", "encap = [\"dslite\"]");
    let tcp_block =
        "[[matrix]]\nprotocol = [\"tcp\"]\nip = [4]\nmss = [1420, 1200, 400]\nmethodologies = [\"iperf3\"]\n";
    let errs = errors(&format!("{udp}{tcp_block}"));
    assert!(
        has(
            &errs,
            "matrix[1].protocol",
            "add `internet = \"203.0.113.1\"` under [ports.wan.dslite]"
        ),
        "{errs:?}"
    );
    let tcp = format!("{udp}{tcp_block}").replace(
        "address = \"2001:db8:d::1\"\n",
        "address = \"2001:db8:d::1\"\ninternet = \"203.0.113.1\"\n",
    );
    let plan = Plan::parse(&tcp, "cpe.toml").unwrap();
    assert_eq!(
        plan.ports[1].dslite.as_ref().unwrap().internet,
        Some(Ipv4Addr::new(203, 0, 113, 1))
    );
    assert_eq!(
        plan.ports[1].internet(),
        Some(Ipv4Addr::new(203, 0, 113, 1))
    );
    assert_eq!(
        plan.cases()
            .unwrap()
            .iter()
            .filter(|c| c.id.contains("/tcp4/"))
            .count(),
        3
    );
    let errs = errors(&tcp.replace("internet = \"203.0.113.1\"", "internet = \"192.0.0.9\""));
    assert!(
        has(&errs, "ports.wan.dslite.internet", "documentation address"),
        "{errs:?}"
    );
    let errs = errors(&tcp.replace("role = \"aftr\"", "role = \"b4\"\npeer = \"2001:db8:d::2\""));
    assert!(
        has(&errs, "ports.wan.dslite.internet", "applies to the AFTR"),
        "{errs:?}"
    );
}

#[test]
fn a_dslite_port_takes_its_link_mtu_and_refuses_frames_above_it() {
    let text = CPE
        .replace(
            "[ports.wan.pppoe]\nrole = \"server\"\nmru = 1454\nauth = [\"pap\"]\nusers = [{ user = \"cpe\", password = \"secret\" }]\ntimeout = \"20s\"\n",
            "ipv4 = \"203.0.113.2\"\n[ports.wan.dslite]\nrole = \"aftr\"\naddress = \"2001:db8:d::1\"\n",
        )
        .replace("[64, 1472]", "[64, 1478]")
        .replace("encap = [\"pppoe\"]", "encap = [\"dslite\"]");
    assert_eq!(
        Plan::parse(&text, "cpe.toml").unwrap().ports[1]
            .dslite
            .as_ref()
            .unwrap()
            .mtu,
        1500,
        "an Ethernet link's MTU by default"
    );
    // A 1400-byte tunnel MTU carries 1378 B frames whole; 1478 B is refused with the text
    // `wirerate trial --inside dslite --inside-mtu 1400` gives for it.
    let small = text.replace(
        "address = \"2001:db8:d::1\"\n",
        "address = \"2001:db8:d::1\"\nmtu = 1400\n",
    );
    let errs = errors(&small);
    let e = errs
        .iter()
        .find(|e| e.key == "matrix[0].frame-size")
        .unwrap_or_else(|| panic!("{errs:?}"));
    assert_eq!(
        e.message,
        crate::oversize::dslite_refusal(1478, 1400, "wan"),
        "{e}"
    );
    assert!(e.message.contains("crosses whole is 1378 B"), "{e}");
    let ok = Plan::parse(&small.replace("[64, 1478]", "[64, 1378]"), "cpe.toml").unwrap();
    assert_eq!(ok.ports[1].dslite.as_ref().unwrap().mtu, 1400);
    let errs = errors(&small.replace("mtu = 1400", "mtu = 1000"));
    assert!(
        has(&errs, "ports.wan.dslite.mtu", "between 1280 and 9000"),
        "{errs:?}"
    );
}

#[test]
fn iperf3_duration_and_omit() {
    let plan = Plan::parse(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../plans/lab-demo.toml"
        ))
        .unwrap(),
        "lab-demo.toml",
    )
    .unwrap();
    assert_eq!(plan.methodology.iperf3_duration, Duration::from_secs(3));
    // The demo omits nothing: its TCP figures are counted on the wire from 0.3 s of the run,
    // long after slow start (the plan's comment). "0s" is read, not the default.
    assert_eq!(plan.methodology.iperf3_omit, Duration::ZERO);
    let e = plan.estimate().unwrap();
    assert!(
        e.seconds + e.startup < 600.0,
        "lab-demo must fit ten minutes: {e:?}"
    );
    let d = MethodologySettings::default();
    assert_eq!(d.iperf3_duration, Duration::from_secs(10));
    assert_eq!(d.iperf3_omit, Duration::from_secs(1));
}

/// Both directions at once through an emulated port: port B sends the reverse stream into
/// its PPPoE session or DS-Lite softwire (an AFTR needs no next hop for it), so `plan check`
/// accepts it; each direction's 100 % is the encapsulated frame's line rate. Tags on the WAN
/// link are still refused for the reverse stream.
#[test]
fn bidirectional_udp_through_pppoe_and_dslite_ports() {
    let both = CPE.replace(
        "encap = [\"pppoe\"]",
        "encap = [\"pppoe\"]\nbidirectional = true",
    );
    let plan = Plan::parse(&both, "cpe.toml").unwrap();
    let cases = plan.cases().unwrap();
    assert!(cases.iter().all(|c| c.dims.bidirectional), "{cases:?}");
    let c64 = cases
        .iter()
        .find(|c| c.frame().and_then(|f| f.fixed()) == Some(64))
        .unwrap();
    let expect = 1e9 / ((64.0 + 8.0 + 20.0) * 8.0);
    assert!((plan.line_pps(c64).0 - expect).abs() < 1e-6);
    // Each trial is preceded by learning frames: a second engine start in the estimate.
    let one_way = Plan::parse(CPE, "cpe.toml").unwrap();
    let c1 = one_way.cases().unwrap()[0].clone();
    assert!(
        (plan.case_startup(c64) - 2.0 * one_way.case_startup(&c1)).abs() < 1e-9,
        "{} vs {}",
        plan.case_startup(c64),
        one_way.case_startup(&c1)
    );
    let dslite = both
        .replace(
            "[ports.wan.pppoe]\nrole = \"server\"\nmru = 1454\nauth = [\"pap\"]\nusers = [{ user = \"cpe\", password = \"secret\" }]\ntimeout = \"20s\"\n",
            "ipv4 = \"203.0.113.2\"\n[ports.wan.dslite]\nrole = \"aftr\"\naddress = \"2001:db8:d::1\"\n",
        )
        .replace("[64, 1472]", "[64, 1478]")
        .replace("encap = [\"pppoe\"]", "encap = [\"dslite\"]");
    let plan = Plan::parse(&dslite, "cpe.toml").unwrap();
    let c64 = plan
        .cases()
        .unwrap()
        .into_iter()
        .find(|c| c.frame().and_then(|f| f.fixed()) == Some(64))
        .unwrap();
    assert!(c64.dims.bidirectional);
    let expect = 1e9 / ((64.0 + 40.0 + 20.0) * 8.0);
    assert!((plan.line_pps(&c64).0 - expect).abs() < 1e-6);
    // More than one flow both ways: the reverse stream has one mapping to ride.
    let flows = both.replace(
        "bidirectional = true",
        "bidirectional = true\nflows = [1, 100]",
    );
    let errs = errors(&flows);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "matrix[0].flows");
    assert!(
        errs[0].message.contains("the one mapping"),
        "{}",
        errs[0].message
    );
    let run = both.replace("[dut]\n", "[run]\ndst-ports = 4\n[dut]\n");
    let errs = errors(&run);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "run.dst-ports");
    assert!(Plan::parse(&both.replace("[dut]\n", "[run]\ntos = 46\n[dut]\n"), "p").is_ok());
    assert!(Plan::parse(
        &CPE.replace("[dut]\n", "[run]\nsrc-ports = 64\n[dut]\n"),
        "p"
    )
    .is_ok());
    let errs = errors(&both.replace("encap = [\"pppoe\"]", "encap = [\"pppoe+vlan\"]"));
    assert!(
        has(
            &errs,
            "matrix[0].bidirectional",
            "encap `vlan+pppoe` it would have to resolve"
        ),
        "{errs:?}"
    );
}

#[test]
fn a_pppoe_server_takes_a_subscriber_table_relative_to_the_plan() {
    let dir = std::env::temp_dir().join(format!("wr-plan-subs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = CPE.replace(
        "users = [{ user = \"cpe\", password = \"secret\" }]",
        "subscribers = \"subs.txt\"",
    );
    let plan_path = dir.join("cpe.toml");
    std::fs::write(&plan_path, &text).unwrap();
    std::fs::write(dir.join("subs.txt"), "cpe secret ipv4=192.0.2.7\n").unwrap();
    let plan = Plan::load(&plan_path).unwrap();
    let pp = plan.ports[1].pppoe.as_ref().unwrap();
    assert_eq!(
        pp.subscribers.as_deref(),
        Some(dir.join("subs.txt").as_path())
    );
    assert!(pp.users.is_empty());
    // A bad line is a plan error naming the table, its line and the plan key.
    std::fs::write(dir.join("subs.txt"), "cpe secret\ncpe again\n").unwrap();
    let errs = Plan::load(&plan_path).unwrap_err().0;
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "ports.wan.pppoe.subscribers");
    assert_eq!(errs[0].line, 2);
    assert_eq!(errs[0].file, dir.join("subs.txt").display().to_string());
    assert!(errs[0].message.contains("first on line 1"), "{errs:?}");
    std::fs::remove_file(dir.join("subs.txt")).unwrap();
    let errs = Plan::load(&plan_path).unwrap_err().0;
    assert!(
        has(&errs, "ports.wan.pppoe.subscribers", "cannot read"),
        "{errs:?}"
    );
    // Only the access concentrator has one.
    let client = text.replace("role = \"server\"", "role = \"client\"");
    let errs = errors(&client);
    assert!(
        has(&errs, "ports.wan.pppoe.subscribers", "role = \"server\""),
        "{errs:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_lan_watch_asks_each_gateway_of_a_plain_port_and_can_be_switched_off() {
    let plan = Plan::parse(CPE, "cpe.toml").unwrap();
    assert!(plan.run.lan_watch, "on by default");
    // The LAN port's gateway-v4, from its ipv4; the PPPoE AC port is its session's to watch.
    assert_eq!(
        plan.lan_watched_gateways(),
        vec![WatchedGateway {
            port: "lan".into(),
            from: Ipv4Addr::new(192, 168, 1, 100).into(),
            gateway: Ipv4Addr::new(192, 168, 1, 1).into(),
        }]
    );
    let v6 = CPE.replace(
        "gateway-v4 = \"192.168.1.1\"\n",
        "gateway-v4 = \"192.168.1.1\"\nipv6 = \"2001:db8:1::100\"\ngateway-v6 = \"2001:db8:1::1\"\n",
    );
    let w = Plan::parse(&v6, "cpe.toml").unwrap().lan_watched_gateways();
    assert_eq!(w.len(), 2, "{w:?}");
    assert_eq!(w[1].gateway, "2001:db8:1::1".parse::<Ipv6Addr>().unwrap());
    assert_eq!(w[1].from, "2001:db8:1::100".parse::<Ipv6Addr>().unwrap());
    let off = CPE.replace("[dut]\n", "[run]\nlan-watch = false\n[dut]\n");
    let plan = Plan::parse(&off, "cpe.toml").unwrap();
    assert!(!plan.run.lan_watch);
    assert!(plan.lan_watched_gateways().is_empty());
    // A value that is not a boolean names its key.
    let errs = errors(&CPE.replace("[dut]\n", "[run]\nlan-watch = \"no\"\n[dut]\n"));
    assert!(errs.iter().any(|e| e.key == "run.lan-watch"), "{errs:?}");
    // The lab is not watched.
    let lab = Plan::parse(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../plans/lab-demo.toml"
        ))
        .unwrap(),
        "lab-demo.toml",
    )
    .unwrap();
    assert!(lab.run.lan_watch && lab.lan_watched_gateways().is_empty());
}

/// `[ports.wan.mape]`: a BR with its rule; TCP crosses its `internet`; the rule is checked
/// where it is written, and with `provision` against the /56s the port delegates.
#[test]
fn a_mape_br_port_with_its_rule_and_an_internet_side() {
    let mape = "ipv4 = \"203.0.113.2\"\n[ports.wan.mape]\nrole = \"br\"\naddress = \"2001:db8:d::1\"\nrule-ipv6-prefix = \"2001:db8:100::/40\"\nrule-ipv4-prefix = \"198.51.100.0/24\"\nea-bits = 16\nprovision = true\nfmr = true\ninternet = \"203.0.113.1\"\n";
    let base = CPE.replace(
        "[ports.wan.pppoe]\nrole = \"server\"\nmru = 1454\nauth = [\"pap\"]\nusers = [{ user = \"cpe\", password = \"secret\" }]\ntimeout = \"20s\"\n",
        mape,
    );
    let tcp = base.replace(
        "[[matrix]]\nprotocol = [\"udp\"]\nip = [4]\nencap = [\"pppoe\"]\nframe-size = [64, 1472]\nmethodologies = [\"rfc2544-throughput\"]\n",
        "[[matrix]]\nprotocol = [\"tcp\"]\nip = [4]\nmss = [1420, 1200, 400]\nmethodologies = [\"iperf3\"]\n",
    );
    let plan = Plan::parse(&tcp, "cpe-mape.toml").unwrap();
    let m = plan.ports[1].mape.as_ref().unwrap();
    assert_eq!(
        m.rule_ipv6,
        ("2001:db8:100::".parse::<Ipv6Addr>().unwrap(), 40)
    );
    assert_eq!(
        (m.ea_bits, m.psid_offset, m.fmr, m.provision),
        (16, 6, true, true)
    );
    assert_eq!(m.rule().unwrap().psid_len(), 8);
    assert_eq!(
        plan.ports[1].internet(),
        Some(Ipv4Addr::new(203, 0, 113, 1))
    );
    assert_eq!(plan.cases().unwrap().len(), 3);
    // UDP crosses the BR inside IPv6: the block must say `mape` (not another encapsulation).
    let errs = errors(&base);
    assert!(
        has(&errs, "matrix[0].encap", "plays a MAP-E BR"),
        "{errs:?}"
    );
    assert!(has(&errs, "matrix[0].encap", "write `mape`"), "{errs:?}");
    // EA bits that the delegated /56 cannot carry (/40 + 18 = /58 > /56).
    let errs = errors(&tcp.replace("ea-bits = 16", "ea-bits = 18"));
    assert!(
        has(&errs, "ports.wan.mape.rule-ipv6-prefix", "cannot map"),
        "{errs:?}"
    );
    // A rule outside the delegated pool.
    let errs = errors(&tcp.replace("2001:db8:100::/40", "2001:db8:200::/40"));
    assert!(
        has(
            &errs,
            "ports.wan.mape.rule-ipv6-prefix",
            "not inside the MAP-E rule"
        ),
        "{errs:?}"
    );
    // Without provisioning the same rule is fine (the CE's prefix is configured by hand).
    Plan::parse(
        &tcp.replace("2001:db8:100::/40", "2001:db8:200::/40")
            .replace("provision = true\n", ""),
        "p.toml",
    )
    .unwrap();
    // Bad values name their key.
    let errs = errors(&tcp.replace("198.51.100.0/24", "10.0.0.0/24"));
    assert!(
        has(
            &errs,
            "ports.wan.mape.rule-ipv4-prefix",
            "documentation prefix"
        ),
        "{errs:?}"
    );
    let errs = errors(&tcp.replace("198.51.100.0/24", "198.51.100.0"));
    assert!(
        has(&errs, "ports.wan.mape.rule-ipv4-prefix", "ADDRESS/LENGTH"),
        "{errs:?}"
    );
    let errs = errors(&tcp.replace("ea-bits = 16", "ea-bits = 60"));
    assert!(
        has(&errs, "ports.wan.mape.ea-bits", "between 0 and 48"),
        "{errs:?}"
    );
    let errs = errors(&tcp.replace("role = \"br\"", "role = \"ce\""));
    assert!(has(&errs, "ports.wan.mape.role", ""), "{errs:?}");
    let errs = errors(
        &tcp.replace("psid-offset", "x")
            .replace("fmr = true", "psid-offset = 16"),
    );
    assert!(has(&errs, "ports.wan.mape.psid-offset", ""), "{errs:?}");
}

/// UDP through a MAP-E BR port (`encap = ["mape"]`), one way and both ways, and the MTU probe:
/// each direction's 100 % is the line rate of the tunnelled frame, 40 bytes more on the WAN
/// link (as DS-Lite's), the BR needs no next hop for the reverse stream, and a frame whose
/// IPv4 packet plus 40 bytes exceeds the port's MTU is refused unless the block only probes.
#[test]
fn udp_and_the_mtu_probe_through_a_mape_br_port() {
    let mape = "ipv4 = \"203.0.113.2\"\n[ports.wan.mape]\nrole = \"br\"\naddress = \"2001:db8:d::1\"\nrule-ipv6-prefix = \"2001:db8:100::/40\"\nrule-ipv4-prefix = \"198.51.100.0/24\"\nea-bits = 16\n";
    let base = CPE.replace(
        "[ports.wan.pppoe]\nrole = \"server\"\nmru = 1454\nauth = [\"pap\"]\nusers = [{ user = \"cpe\", password = \"secret\" }]\ntimeout = \"20s\"\n",
        mape,
    );
    let udp = base.replace(
        "encap = [\"pppoe\"]\nframe-size = [64, 1472]",
        "encap = [\"mape\"]\nbidirectional = true\nframe-size = [64, 1478]",
    );
    let plan = Plan::parse(&udp, "cpe-mape.toml").unwrap();
    let cases = plan.cases().unwrap();
    assert_eq!(cases.len(), 2);
    assert!(cases
        .iter()
        .all(|c| c.dims.bidirectional && c.dims.encap.is_some_and(|e| e.mape)));
    let at = |bytes: usize| {
        cases
            .iter()
            .find(|c| c.frame().and_then(|f| f.fixed()) == Some(bytes))
            .unwrap()
    };
    // 64 B on the LAN is 104 B on the WAN link, the bottleneck.
    assert_eq!(plan.path_encap(at(64)).overhead(), 40);
    let expect = 1e9 / ((64.0 + 40.0 + 20.0) * 8.0);
    assert!(
        (plan.line_pps(at(64)).0 - expect).abs() < 1e-6,
        "{}",
        plan.line_pps(at(64)).0
    );
    // 1478 B: a 1460-byte IPv4 packet, 1500 bytes with the outer header: the largest whole.
    let expect = 1e9 / ((1478.0 + 40.0 + 20.0) * 8.0);
    assert!((plan.line_pps(at(1478)).0 - expect).abs() < 1e-6);
    // One byte more would be fragmented by the CE: refused, naming the largest whole frame.
    let errs = errors(&udp.replace("[64, 1478]", "[64, 1479]"));
    assert!(
        has(&errs, "matrix[0].frame-size", "crosses whole is 1478 B"),
        "{errs:?}"
    );
    // ... unless the block only probes for that threshold.
    let probe = udp
        .replace("[64, 1478]", "[1518]")
        .replace("\"rfc2544-throughput\"", "\"mtu-probe\"");
    Plan::parse(&probe, "p.toml").unwrap();
    // `mape` needs a MAP-E port; `dslite` is not the BR's frame; ip = 6 is not carried.
    let errs = errors(&CPE.replace("encap = [\"pppoe\"]", "encap = [\"mape\"]"));
    assert!(
        has(&errs, "matrix[0].encap", "plays the MAP-E Border Relay"),
        "{errs:?}"
    );
    let errs = errors(&udp.replace("[\"mape\"]", "[\"dslite\"]"));
    assert!(has(&errs, "matrix[0].encap", "write `mape`"), "{errs:?}");
    let errs = errors(&udp.replace("ip = [4]", "ip = [4, 6]"));
    assert!(
        has(
            &errs,
            "matrix[0].encap",
            "mape carries IPv4 test traffic inside IPv6"
        ),
        "{errs:?}"
    );
}

/// Port A riding a session of its own towards a DUT that ends it (a subscriber facing a BNG,
/// a B4 facing an AFTR) with a plain port B: both ways would send the reverse stream from
/// port B inside a session or softwire it does not have. Refused at `bidirectional`; one way
/// and a port B that plays the other end are accepted.
#[test]
fn both_ways_from_a_riding_subscriber_need_port_b_to_play_the_other_end() {
    let subscriber = r#"name = "bng"
[topology]
kind = "interfaces"
[ports.lan]
interface = "eth1"
speed = "1G"
[ports.lan.pppoe]
role = "client"
user = "sub"
password = "secret"
[ports.wan]
interface = "eth2"
ipv4 = "198.51.100.2"
gateway-v4 = "198.51.100.1"
speed = "1G"
[dut]
kind = "device"
[dut.profiles.default]
[[matrix]]
protocol = ["udp"]
ip = [4]
encap = ["pppoe"]
frame-size = [64]
methodologies = ["rfc2544-throughput"]
"#;
    Plan::parse(subscriber, "bng.toml").expect("one way from a subscriber port is fine");
    let both = subscriber.replace(
        "encap = [\"pppoe\"]",
        "encap = [\"pppoe\"]\nbidirectional = true",
    );
    let errs = errors(&both);
    assert!(
        has(
            &errs,
            "matrix[0].bidirectional",
            "port `lan` rides a PPPoE session of its own, but port `wan` plays no end of it"
        ),
        "{errs:?}"
    );
    assert!(errs[0].line > 0, "{errs:?}");
    // Port B as our access concentrator (both ends ours): accepted.
    let ours = both
        .replace(
            "ipv4 = \"198.51.100.2\"\ngateway-v4 = \"198.51.100.1\"\n",
            "",
        )
        .replace(
            "[dut]",
            "[ports.wan.pppoe]\nrole = \"server\"\nusers = [{ user = \"sub\", password = \"secret\" }]\n[dut]",
        );
    Plan::parse(&ours, "loop.toml").expect("both ends ours");
}
