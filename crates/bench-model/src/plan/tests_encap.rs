//! The `encap` and `bidirectional` matrix keys: expansion, case ids, hook variables, and the
//! combinations plan check refuses before any traffic.

use super::*;

fn errors(text: &str) -> Vec<PlanError> {
    match Plan::parse(text, "plan.toml") {
        Ok(_) => panic!("plan accepted:\n{text}"),
        Err(e) => {
            println!("{e}");
            e.0
        }
    }
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

/// A real DUT between two tester ports, with a matrix block `block`.
fn device(block: &str) -> String {
    format!(
        r#"name = "encap"
[topology]
kind = "interfaces"
[ports.lan]
interface = "enp1s0"
speed = "1G"
ipv4 = "198.51.100.2"
gateway-v4 = "198.51.100.1"
ipv6 = "2001:db8:1::2"
gateway-v6 = "2001:db8:1::1"
[ports.wan]
interface = "enp2s0"
namespace = "wr-wan"
speed = "1G"
ipv4 = "203.0.113.2"
ipv6 = "2001:db8:2::2"
gateway-v4 = "203.0.113.1"
gateway-v6 = "2001:db8:2::1"
[dut]
kind = "device"
[dut.profiles.cpe]
setup = ["true"]
[[matrix]]
{block}
"#
    )
}

fn lab(block: &str) -> String {
    format!(
        r#"name = "lab-encap"
[topology]
kind = "lab"
lab = "forward"
name = "t"
speed = "1G"
[dut]
kind = "lab"
[dut.profiles.forward]
[[matrix]]
{block}
"#
    )
}

#[test]
fn encap_and_bidirectional_are_case_dimensions() {
    let text = device(
        r#"protocol = ["udp"]
ip = [4, 6]
frame-size = [128]
encap = ["plain", "vlan", "qinq"]
methodologies = ["rfc2544-throughput"]
[[matrix]]
protocol = ["udp"]
ip = [4, 6]
frame-size = [128]
bidirectional = true
methodologies = ["rfc2544-throughput"]"#,
    );
    let plan = Plan::parse(&text, "plan.toml").unwrap();
    let cases = plan.cases().unwrap();
    assert_eq!(cases.len(), 8);
    let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    assert!(ids.contains(&"cpe/udp4/128B/encap=plain"), "{ids:?}");
    assert!(ids.contains(&"cpe/udp6/128B/encap=qinq"), "{ids:?}");
    assert!(ids.contains(&"cpe/udp6/128B/bidir"), "{ids:?}");
    let v6vlan = cases
        .iter()
        .find(|c| c.id == "cpe/udp6/128B/encap=vlan")
        .unwrap();
    let e = v6vlan.dims.encap.unwrap();
    assert_eq!(
        e.to_string(),
        "vlan+ipv6",
        "the case's IP version goes into the encap"
    );
    assert!(!v6vlan.dims.bidirectional);
    assert_eq!(plan.path_encap(v6vlan), e);
    let env = v6vlan.env();
    assert!(env.contains(&("WR_ENCAP".into(), "vlan".into())), "{env:?}");
    let bidir = cases
        .iter()
        .find(|c| c.id == "cpe/udp4/128B/bidir")
        .unwrap();
    assert!(bidir.dims.bidirectional && bidir.dims.encap.is_none());
    assert!(bidir
        .env()
        .contains(&("WR_BIDIRECTIONAL".into(), "1".into())));
    // The encapsulated link limits the rate: 1e9 / ((128 + 4 + 20) × 8).
    let pps = plan.line_pps(v6vlan).0;
    assert!((pps - 1e9 / (152.0 * 8.0)).abs() < 1e-6, "{pps}");
    // Without the keys nothing changes: no encap in ids, one direction.
    let plain = device(
        r#"protocol = ["udp"]
frame-size = [128]
methodologies = ["rfc2544-throughput"]"#,
    );
    let c = &Plan::parse(&plain, "p.toml").unwrap().cases().unwrap()[0];
    assert_eq!(c.id, "cpe/udp4/128B");
    assert_eq!((c.dims.encap, c.dims.bidirectional), (None, false));
}

#[test]
fn the_lab_refuses_what_its_kernel_dut_cannot_forward() {
    let text = lab(r#"protocol = ["udp"]
frame-size = [128]
encap = ["plain", "vlan"]
methodologies = ["rfc2544-throughput"]"#);
    let e = errors(&text);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(e[0].key, "matrix[0].encap");
    assert_eq!(e[0].line, line_of(&text, "encap ="));
    assert!(
        e[0].message.contains("cannot run on the lab"),
        "{}",
        e[0].message
    );
    // Plain forwarding, both ways at once, is what the lab can do.
    let ok = lab(r#"protocol = ["udp"]
frame-size = [128]
encap = ["plain"]
bidirectional = true
methodologies = ["rfc2544-throughput"]"#);
    assert_eq!(
        Plan::parse(&ok, "p.toml").unwrap().cases().unwrap().len(),
        1
    );
}

#[test]
fn impossible_encapsulations_are_refused_at_their_key() {
    // PPPoE and DS-Lite need a port that plays the session or softwire.
    let text = device(
        r#"protocol = ["udp"]
frame-size = [128]
encap = ["pppoe", "dslite"]
methodologies = ["rfc2544-throughput"]"#,
    );
    let e = errors(&text);
    assert!(e.iter().all(|x| x.key == "matrix[0].encap"), "{e:?}");
    assert!(e.iter().any(|x| x.message.contains("PPPoE session")));
    assert!(e.iter().any(|x| x.message.contains("DS-Lite softwire")));
    // The IP version is the `ip` key's job; typos get the list of parts.
    for (bad, says) in [
        ("ipv6+vlan", "give the IP version"),
        ("vlna", "unknown encapsulation part"),
        ("mpls:9", "label count"),
    ] {
        let text = device(&format!(
            "protocol = [\"udp\"]\nframe-size = [128]\nencap = [\"{bad}\"]\nmethodologies = [\"rfc2544-throughput\"]"
        ));
        let e = errors(&text);
        assert_eq!(e[0].key, "matrix[0].encap[0]", "{bad}");
        assert!(e[0].message.contains(says), "{bad}: {}", e[0].message);
        assert_eq!(e[0].line, line_of(&text, "encap ="));
    }
    // DS-Lite carries IPv4; TCP runs on plain interfaces; `encap` is no longer a user dimension
    // when the key is there; `bidirectional` is for UDP test frames.
    let e = errors(&device(
        r#"protocol = ["udp"]
ip = [6]
frame-size = [128]
encap = ["dslite"]
methodologies = ["rfc2544-throughput"]"#,
    ));
    assert!(
        e.iter().any(|x| x.message.contains("carries IPv4")),
        "{e:?}"
    );
    let e = errors(&device(
        r#"protocol = ["tcp"]
encap = ["vlan"]
methodologies = ["iperf3"]"#,
    ));
    assert!(
        e.iter().any(|x| x.message.contains("UDP test frames only")),
        "{e:?}"
    );
    let e = errors(&device(
        r#"protocol = ["udp"]
frame-size = [128]
encap = ["vlan"]
methodologies = ["rfc2544-throughput"]
[matrix.vars]
encap = ["x"]"#,
    ));
    assert_eq!(e[0].key, "matrix[0].vars.encap", "{e:?}");
    let e = errors(&device(
        r#"protocol = ["tcp"]
bidirectional = true
methodologies = ["iperf3"]"#,
    ));
    assert_eq!(e[0].key, "matrix[0].bidirectional", "{e:?}");
    // The reverse stream is plain and sent from the second port, which must resolve its hop.
    let e = errors(&device(
        r#"protocol = ["udp"]
frame-size = [128]
encap = ["vlan"]
bidirectional = true
methodologies = ["rfc2544-throughput"]"#,
    ));
    assert!(
        e.iter()
            .any(|x| x.key == "matrix[0].bidirectional" && x.message.contains("encap `vlan`")),
        "{e:?}"
    );
    let no_gw = device(
        r#"protocol = ["udp"]
frame-size = [128]
bidirectional = true
methodologies = ["rfc2544-throughput"]"#,
    )
    .replace("gateway-v4 = \"203.0.113.1\"\n", "");
    let e = errors(&no_gw);
    assert!(
        e.iter().any(|x| x.key.ends_with(".gateway-v4")
            && x.message
                .contains("bidirectional IPv4 trials also send from this port")),
        "{e:?}"
    );
}

#[test]
fn old_plans_with_an_encap_user_dimension_still_parse() {
    let text = lab(r#"protocol = ["udp"]
frame-size = [128]
methodologies = ["rfc2544-throughput"]
[matrix.vars]
encap = ["ipv4"]"#);
    let c = &Plan::parse(&text, "p.toml").unwrap().cases().unwrap()[0];
    assert_eq!(c.id, "forward/udp4/128B/encap=ipv4");
    assert_eq!(c.dims.encap, None);
}
