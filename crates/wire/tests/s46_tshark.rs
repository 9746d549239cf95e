//! Cross-checks the S46 options (RFC 7598) against tshark, an independent implementation: a
//! DHCPv6 Reply written by `wire` carrying OPTION_S46_CONT_MAPE with two S46_RULEs (an FMR
//! with S46_PORTPARAMS, a BMR without) and two S46_BRs, in UDP/IPv6, is stored as a pcap file
//! and decoded by Wireshark's DHCPv6 dissector; every field must be what was meant.
//!
//! Without tshark the test prints `SKIP: …` and passes, except under `CI`, where
//! `scripts/install-deps.sh` installs it.

use core::net::{Ipv4Addr, Ipv6Addr};
use std::process::Command;

use wire::dhcpv6::{self, Dhcpv6Packet, OptionWriter};
use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::ipv6::{Ipv6Packet, Ipv6Repr, NEXT_HEADER_UDP};
use wire::map_rule::PortParams;
use wire::s46::S46Rule;
use wire::udp::{UdpPacket, UdpRepr};

fn have_tshark() -> bool {
    if Command::new("tshark").arg("--version").output().is_ok() {
        return true;
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "tshark is missing in CI: scripts/install-deps.sh must install it"
    );
    println!("SKIP: tshark not installed (run scripts/install-deps.sh)");
    false
}

const SERVER: &str = "fe80::a";
const CLIENT: &str = "fe80::b";

fn v6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// The two rules: RFC 7597 Appendix A's as an FMR with port parameters (offset 6, PSID
/// length 8, PSID 0x34: field 0x3400), and a BMR for 198.18.0.0/15 with an odd IPv6 prefix
/// length (/37) and port parameters offset 4, PSID length 4, PSID 0xa (field 0xa000).
fn rules() -> [S46Rule; 2] {
    [
        S46Rule {
            fmr: true,
            ea_len: 16,
            prefix4_len: 24,
            ipv4_prefix: Ipv4Addr::new(192, 0, 2, 0),
            prefix6_len: 40,
            ipv6_prefix: v6("2001:db8::"),
            port_params: Some(PortParams {
                offset: 6,
                psid_len: 8,
                psid: 0x34,
            }),
        },
        S46Rule {
            fmr: false,
            ea_len: 21,
            prefix4_len: 15,
            ipv4_prefix: Ipv4Addr::new(198, 18, 0, 0),
            prefix6_len: 37,
            ipv6_prefix: v6("2001:db8:a800::"),
            port_params: Some(PortParams {
                offset: 4,
                psid_len: 4,
                psid: 0xa,
            }),
        },
    ]
}

const BRS: [&str; 2] = ["2001:db8:ffff::1", "2001:db8:ffff::2"];

/// A DHCPv6 Reply with the container, in Ethernet/IPv6/UDP from server to client.
fn reply_frame() -> Vec<u8> {
    let mut msg = vec![0u8; 200];
    let mut p = Dhcpv6Packet::new_unchecked(&mut msg[..]);
    p.set_msg_type(dhcpv6::msg::REPLY);
    p.set_transaction_id(0x00_3838);
    let mut w = OptionWriter::new(&mut msg, dhcpv6::HEADER_LEN);
    w.put(dhcpv6::opt::SERVERID, &[0, 3, 0, 1, 2, 0, 0, 0, 0, 0x0a])
        .unwrap();
    w.s46_cont_mape(&rules(), &BRS.map(v6)).unwrap();
    let n = w.len();
    msg.truncate(n);

    let mut f = vec![0u8; 14 + 40 + 8 + msg.len()];
    EthernetRepr {
        src: MacAddr([0x02, 0, 0, 0, 0, 0x0a]),
        dst: MacAddr([0x02, 0, 0, 0, 0, 0x0b]),
        ethertype: EtherType::IPV6,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]))
    .unwrap();
    Ipv6Repr {
        src: v6(SERVER),
        dst: v6(CLIENT),
        next_header: NEXT_HEADER_UDP,
        payload_len: 8 + msg.len(),
        hop_limit: 64,
        traffic_class: 0,
        flow_label: 0,
    }
    .emit(&mut Ipv6Packet::new_unchecked(&mut f[14..]))
    .unwrap();
    let mut u = UdpPacket::new_unchecked(&mut f[54..]);
    UdpRepr {
        src_port: dhcpv6::SERVER_PORT,
        dst_port: dhcpv6::CLIENT_PORT,
    }
    .emit(&mut u, msg.len())
    .unwrap();
    u.payload_mut().copy_from_slice(&msg);
    u.fill_checksum_v6(v6(SERVER), v6(CLIENT));
    f
}

const FIELDS: &[&str] = &[
    "udp.checksum.status",
    "dhcpv6.msgtype",
    "dhcpv6.s46_rule.flags.fmr",
    "dhcpv6.s46_rule.ea_len",
    "dhcpv6.s46_rule.ipv4_pref_len",
    "dhcpv6.s46_rule.ipv4_prefix",
    "dhcpv6.s46_rule.ipv6_prefix_len",
    "dhcpv6.s46_rule.ipv6_prefix",
    "dhcpv6.s46_portparam.offset",
    "dhcpv6.s46_portparam.psid_len",
    "dhcpv6.s46_portparam.psid",
    "dhcpv6.s46_br.address",
    "_ws.malformed",
];

#[test]
fn tshark_reads_our_s46_mape_container_as_meant() {
    if !have_tshark() {
        return;
    }
    let f = reply_frame();
    let path = std::env::temp_dir().join(format!("wr-s46-{}.pcap", std::process::id()));
    let mut file = wire::pcap::global_header(65535).to_vec();
    file.extend(wire::pcap::record_header(0, f.len() as u32, f.len() as u32));
    file.extend(&f);
    std::fs::write(&path, &file).unwrap();
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(&path).args([
        "-o",
        "udp.check_checksum:TRUE",
        "-T",
        "fields",
        "-E",
        "separator=|",
        "-E",
        "occurrence=a",
        "-E",
        "aggregator=,",
    ]);
    for f in FIELDS {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("tshark");
    let _ = std::fs::remove_file(&path);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let row: Vec<&str> = text.trim_end().split('|').collect();
    assert_eq!(row.len(), FIELDS.len(), "{text}");
    let get = |f: &str| row[FIELDS.iter().position(|x| *x == f).unwrap()];
    assert_eq!(get("udp.checksum.status"), "1", "good UDP checksum");
    assert_eq!(get("dhcpv6.msgtype"), "7");
    // Booleans print as True/False or 1/0 depending on the tshark version.
    let fmr: Vec<bool> = get("dhcpv6.s46_rule.flags.fmr")
        .split(',')
        .map(|b| matches!(b, "1" | "True"))
        .collect();
    assert_eq!(fmr, [true, false]);
    assert_eq!(get("dhcpv6.s46_rule.ea_len"), "16,21");
    assert_eq!(get("dhcpv6.s46_rule.ipv4_pref_len"), "24,15");
    assert_eq!(get("dhcpv6.s46_rule.ipv4_prefix"), "192.0.2.0,198.18.0.0");
    assert_eq!(get("dhcpv6.s46_rule.ipv6_prefix_len"), "40,37");
    assert_eq!(
        get("dhcpv6.s46_rule.ipv6_prefix"),
        "2001:db8::,2001:db8:a800::"
    );
    assert_eq!(get("dhcpv6.s46_portparam.offset"), "6,4");
    assert_eq!(get("dhcpv6.s46_portparam.psid_len"), "8,4");
    // Wireshark shows the PSID as its k-bit value read from the left-aligned field: 0x34
    // from 0x3400 and 0xa from 0xa000 (a right-aligned field would read 0 for both).
    assert_eq!(get("dhcpv6.s46_portparam.psid"), "52,10");
    assert_eq!(get("dhcpv6.s46_br.address"), BRS.join(","));
    assert_eq!(
        get("_ws.malformed"),
        "",
        "tshark found the packet malformed"
    );
}
