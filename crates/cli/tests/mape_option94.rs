//! Issue 38: DHCPv6 option 94 as `wirerate mape br --provision` sends it, read by independent
//! implementations. A scapy client (Debian's `/usr/bin/python3`) on the far end of a veth
//! pair solicits a prefix (IA_PD, Rapid Commit) and asks for options 23 and 94 in its ORO;
//! tcpdump captures the exchange and tshark's DHCPv6 dissector decodes the answer: the
//! delegated /56, and OPTION_S46_CONT_MAPE with the rule as configured (F flag, EA bits, both
//! prefixes, S46_PORTPARAMS for the non-default offset 4 with PSID length 8) and the BR.
//!
//! Root, tcpdump, tshark and scapy are needed (else `SKIP: …`; a missing tool fails in CI).
//! Namespaces `wr-m94<pid>{a,b}`, removed on drop.

#[path = "common_cpe/mod.rs"]
mod common_cpe;
mod common_isp;

use std::process::{Command, Stdio};

use common_cpe::Proc;
use common_isp::{Capture, NsPair};

const WIRERATE: &str = env!("CARGO_BIN_EXE_wirerate");
const PYTHON: &str = "/usr/bin/python3";

fn can_run() -> bool {
    if !common_isp::root_and_tools(&["tcpdump", "tshark"]) {
        return false;
    }
    let scapy = Command::new(PYTHON)
        .args(["-c", "import scapy.layers.dhcp6"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !scapy {
        if std::env::var_os("CI").is_some() {
            panic!("scapy is missing for {PYTHON} (apt-get install python3-scapy)");
        }
        println!("SKIP: {PYTHON} has no scapy (apt-get install python3-scapy)");
        return false;
    }
    true
}

/// Solicits on argv[1] with Rapid Commit, IA_PD and ORO (23, 94) once a second until an answer
/// arrives (a few tries while the server starts); exits 0 once one did.
const CLIENT: &str = r#"
import sys
from scapy.all import Ether, IPv6, UDP, sendp, get_if_hwaddr, conf
from scapy.layers.dhcp6 import (DHCP6_Solicit, DHCP6OptClientId, DUID_LL, DHCP6OptRapidCommit,
    DHCP6OptIA_PD, DHCP6OptOptReq, DHCP6OptElapsedTime)
conf.verb = 0
iface = sys.argv[1]
mac = get_if_hwaddr(iface)
sol = (Ether(src=mac, dst="33:33:00:01:00:02") / IPv6(src="fe80::b", dst="ff02::1:2")
       / UDP(sport=546, dport=547) / DHCP6_Solicit(trid=0x0a0b0c)
       / DHCP6OptClientId(duid=DUID_LL(lladdr=mac)) / DHCP6OptRapidCommit()
       / DHCP6OptIA_PD(iaid=1) / DHCP6OptOptReq(reqopts=[23, 94]) / DHCP6OptElapsedTime())
sys.exit(0 if solicit(iface, sol) is not None else 1)
"#;

#[test]
fn tshark_decodes_option_94_as_our_br_provisions_it() {
    if !can_run() {
        return;
    }
    let lab = NsPair::new("wr-m94", "m94v", "");
    let d = tempfile::tempdir().unwrap();
    let pcap = d.path().join("dhcpv6.pcap");
    let dump = Capture::start({
        let mut c = Command::new("ip");
        c.args([
            "netns", "exec", &lab.b, "tcpdump", "-i", "m94v1", "-U", "-w",
        ])
        .arg(&pcap)
        .arg("udp port 546 or udp port 547");
        c
    });
    let br = Proc::spawn(
        Command::new(WIRERATE)
            .args(["mape", "br", "--netns", &lab.a, "--dev", "m94v0"])
            .args(["--provision", "--fmr", "--psid-offset", "4"])
            .args(["--duration", "60"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let client = Command::new("ip")
        .args(["netns", "exec", &lab.b, PYTHON, "-c"])
        .arg(format!("{}{CLIENT}", common_isp::SCAPY_SOLICIT))
        .arg("m94v1")
        .output()
        .unwrap();
    assert!(
        client.status.success(),
        "no DHCPv6 answer: {}",
        String::from_utf8_lossy(&client.stderr)
    );
    // The client saw the answer; wait until tcpdump has written it too.
    common_cpe::wait_until(
        "the Reply in the capture",
        std::time::Duration::from_secs(20),
        || {
            Command::new("tshark")
                .args(["-n", "-r"])
                .arg(&pcap)
                .args(["-Y", "dhcpv6.msgtype == 7"])
                .output()
                .is_ok_and(|o| !o.stdout.is_empty())
        },
    );
    br.signal("-INT");
    let (_, err) = dump.stop();
    eprintln!("tcpdump: {err}");
    let fields = [
        "dhcpv6.msgtype",
        "dhcpv6.iaprefix.pref_addr",
        "dhcpv6.iaprefix.pref_len",
        "dhcpv6.s46_rule.flags.fmr",
        "dhcpv6.s46_rule.ea_len",
        "dhcpv6.s46_rule.ipv4_pref_len",
        "dhcpv6.s46_rule.ipv4_prefix",
        "dhcpv6.s46_rule.ipv6_prefix_len",
        "dhcpv6.s46_rule.ipv6_prefix",
        "dhcpv6.s46_portparam.offset",
        "dhcpv6.s46_portparam.psid_len",
        "dhcpv6.s46_br.address",
    ];
    let mut cmd = Command::new("tshark");
    cmd.args(["-n", "-r"]).arg(&pcap).args([
        "-Y",
        "dhcpv6.msgtype == 7",
        "-T",
        "fields",
        "-E",
        "separator=|",
    ]);
    for f in fields {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let first = text.lines().next().unwrap_or_else(|| {
        let all = Command::new("tshark")
            .arg("-n")
            .arg("-r")
            .arg(&pcap)
            .output()
            .unwrap();
        panic!(
            "no Reply captured: {}{}",
            String::from_utf8_lossy(&all.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let row: Vec<&str> = first.split('|').collect();
    let get = |f: &str| row[fields.iter().position(|x| *x == f).unwrap()];
    assert_eq!(get("dhcpv6.msgtype"), "7", "{first}");
    // The delegated prefix is one the rule maps: /40 + 16 EA bits = /56.
    assert_eq!(
        get("dhcpv6.iaprefix.pref_addr"),
        "2001:db8:100::",
        "{first}"
    );
    assert_eq!(get("dhcpv6.iaprefix.pref_len"), "56", "{first}");
    assert!(
        matches!(get("dhcpv6.s46_rule.flags.fmr"), "1" | "True"),
        "{first}"
    );
    assert_eq!(get("dhcpv6.s46_rule.ea_len"), "16", "{first}");
    assert_eq!(get("dhcpv6.s46_rule.ipv4_pref_len"), "24", "{first}");
    assert_eq!(
        get("dhcpv6.s46_rule.ipv4_prefix"),
        "198.51.100.0",
        "{first}"
    );
    assert_eq!(get("dhcpv6.s46_rule.ipv6_prefix_len"), "40", "{first}");
    assert_eq!(
        get("dhcpv6.s46_rule.ipv6_prefix"),
        "2001:db8:100::",
        "{first}"
    );
    assert_eq!(get("dhcpv6.s46_portparam.offset"), "4", "{first}");
    assert_eq!(get("dhcpv6.s46_portparam.psid_len"), "8", "{first}");
    assert_eq!(get("dhcpv6.s46_br.address"), "2001:db8:d::1", "{first}");
}
