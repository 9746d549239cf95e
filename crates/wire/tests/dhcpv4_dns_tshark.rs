//! Cross-checks against tshark, an independent implementation: a DHCPv4 OFFER, ACK and NAK
//! and DNS answers (A, AAAA, NXDOMAIN) written by `wire` are put in UDP/IPv4 frames, stored
//! as a pcap file and decoded by Wireshark's dissectors; every field must be what was meant.
//!
//! Without tshark the test prints `SKIP: …` and passes, except under `CI`, where
//! `scripts/install-deps.sh` installs it.

use core::net::{Ipv4Addr, Ipv6Addr};
use std::process::Command;

use wire::dhcpv4::{self, Dhcpv4Packet, Dhcpv4Repr, Ipv4List, MessageType};
use wire::dns::{self, DnsRepr, Flags, Name, Question, RData, Record};
use wire::ethernet::{EtherType, EthernetFrame, EthernetRepr, MacAddr};
use wire::ipv4::{Ipv4Packet, Ipv4Repr};
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

const SERVER_MAC: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 0x0a]);
const CLIENT_MAC: MacAddr = MacAddr([0x0e, 0x2a, 0x5f, 0x32, 0x0c, 0xaf]);
const SERVER: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 1);
const LEASED: Ipv4Addr = Ipv4Addr::new(198, 51, 100, 10);

/// Ethernet + IPv4 + UDP (checksummed) around `payload`.
fn frame(src: Ipv4Addr, dst: Ipv4Addr, sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 14 + 20 + 8 + payload.len()];
    EthernetRepr {
        src: SERVER_MAC,
        dst: CLIENT_MAC,
        ethertype: EtherType::IPV4,
    }
    .emit(&mut EthernetFrame::new_unchecked(&mut f[..]))
    .unwrap();
    Ipv4Repr {
        src,
        dst,
        protocol: 17,
        payload_len: 8 + payload.len(),
        ttl: 64,
        tos: 0,
        ident: 1,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
    }
    .emit(&mut Ipv4Packet::new_unchecked(&mut f[14..]))
    .unwrap();
    let mut u = UdpPacket::new_unchecked(&mut f[34..]);
    UdpRepr {
        src_port: sport,
        dst_port: dport,
    }
    .emit(&mut u, payload.len())
    .unwrap();
    u.payload_mut().copy_from_slice(payload);
    u.fill_checksum_v4(src, dst);
    f
}

fn dhcp(kind: MessageType) -> Vec<u8> {
    let mut r = Dhcpv4Repr::new(dhcpv4::op::REPLY, 0xa480_ea77, CLIENT_MAC);
    r.message_type = Some(kind);
    r.server_id = Some(SERVER);
    if kind == MessageType::Nak {
        r.message = Some(b"requested address not leased here");
    } else {
        r.yiaddr = LEASED;
        r.lease_time = Some(3600);
        r.renewal_time = Some(1800);
        r.rebinding_time = Some(3150);
        r.subnet_mask = Some(Ipv4Addr::new(255, 255, 255, 0));
        r.routers = Some(Ipv4List::new(&[198, 51, 100, 1]).unwrap());
        r.dns_servers = Some(Ipv4List::new(&[203, 0, 113, 53]).unwrap());
    }
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut Dhcpv4Packet::new_unchecked(&mut b[..]))
        .unwrap();
    frame(SERVER, LEASED, 67, 68, &b)
}

fn dns_answer(qtype: u16, data: Option<RData<'static>>, rcode: u8) -> Vec<u8> {
    let name = Name::from_dotted("aftr.example.net").unwrap();
    let q = [Question {
        name,
        qtype,
        qclass: dns::CLASS_IN,
    }];
    let a: Vec<Record<'_>> = data
        .into_iter()
        .map(|data| Record {
            name,
            rtype: qtype,
            class: dns::CLASS_IN,
            ttl: 300,
            data,
        })
        .collect();
    let r = DnsRepr {
        id: 0x1234,
        flags: Flags {
            response: true,
            authoritative: true,
            recursion_desired: true,
            rcode,
            ..Flags::default()
        },
        questions: &q,
        answers: &a,
        authority: &[],
        additional: &[],
    };
    let mut b = vec![0u8; r.buffer_len()];
    r.emit(&mut b).unwrap();
    frame(Ipv4Addr::new(203, 0, 113, 53), LEASED, 53, 40000, &b)
}

const FIELDS: &[&str] = &[
    "ip.checksum.status",
    "udp.checksum.status",
    "dhcp.cookie",
    "dhcp.option.dhcp",
    "dhcp.ip.your",
    "dhcp.hw.mac_addr",
    "dhcp.option.dhcp_server_id",
    "dhcp.option.ip_address_lease_time",
    "dhcp.option.renewal_time_value",
    "dhcp.option.rebinding_time_value",
    "dhcp.option.subnet_mask",
    "dhcp.option.router",
    "dhcp.option.domain_name_server",
    "dhcp.option.message",
    "dns.flags.response",
    "dns.flags.authoritative",
    "dns.flags.rcode",
    "dns.qry.name",
    "dns.count.answers",
    "dns.resp.name",
    "dns.resp.ttl",
    "dns.a",
    "dns.aaaa",
];

#[test]
fn tshark_reads_our_dhcp_and_dns_messages_as_meant() {
    if !have_tshark() {
        return;
    }
    let frames = [
        dhcp(MessageType::Offer),
        dhcp(MessageType::Ack),
        dhcp(MessageType::Nak),
        dns_answer(
            dns::rtype::AAAA,
            Some(RData::Aaaa("2001:db8:d::1".parse::<Ipv6Addr>().unwrap())),
            0,
        ),
        dns_answer(
            dns::rtype::A,
            Some(RData::A(Ipv4Addr::new(203, 0, 113, 1))),
            0,
        ),
        dns_answer(dns::rtype::A, None, dns::rcode::NXDOMAIN),
    ];
    let path = std::env::temp_dir().join(format!("wr-dhcp-dns-{}.pcap", std::process::id()));
    let mut file = wire::pcap::global_header(65535).to_vec();
    for (i, f) in frames.iter().enumerate() {
        file.extend(wire::pcap::record_header(
            i as u64 * 1000,
            f.len() as u32,
            f.len() as u32,
        ));
        file.extend(f);
    }
    std::fs::write(&path, &file).unwrap();
    let mut cmd = Command::new("tshark");
    cmd.arg("-r").arg(&path).args([
        "-o",
        "ip.check_checksum:TRUE",
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
    let rows: Vec<Vec<&str>> = text.lines().map(|l| l.split('|').collect()).collect();
    assert_eq!(rows.len(), frames.len(), "{text}");
    let get = |row: usize, f: &str| rows[row][FIELDS.iter().position(|x| *x == f).unwrap()];
    for row in 0..rows.len() {
        assert_eq!(
            get(row, "ip.checksum.status"),
            "1",
            "good IPv4 checksum, row {row}"
        );
        assert_eq!(
            get(row, "udp.checksum.status"),
            "1",
            "good UDP checksum, row {row}"
        );
    }
    // OFFER (2), ACK (5), NAK (6).
    for (row, kind) in [(0, "2"), (1, "5"), (2, "6")] {
        assert_eq!(get(row, "dhcp.cookie"), "99.130.83.99");
        assert_eq!(get(row, "dhcp.option.dhcp"), kind);
        assert_eq!(get(row, "dhcp.hw.mac_addr"), "0e:2a:5f:32:0c:af");
        assert_eq!(get(row, "dhcp.option.dhcp_server_id"), "198.51.100.1");
    }
    for row in [0, 1] {
        assert_eq!(get(row, "dhcp.ip.your"), "198.51.100.10");
        assert_eq!(get(row, "dhcp.option.ip_address_lease_time"), "3600");
        assert_eq!(get(row, "dhcp.option.renewal_time_value"), "1800");
        assert_eq!(get(row, "dhcp.option.rebinding_time_value"), "3150");
        assert_eq!(get(row, "dhcp.option.subnet_mask"), "255.255.255.0");
        assert_eq!(get(row, "dhcp.option.router"), "198.51.100.1");
        assert_eq!(get(row, "dhcp.option.domain_name_server"), "203.0.113.53");
    }
    assert_eq!(get(2, "dhcp.ip.your"), "0.0.0.0");
    assert_eq!(
        get(2, "dhcp.option.message"),
        "requested address not leased here"
    );
    for row in 3..6 {
        assert_eq!(get(row, "dns.flags.response"), "1");
        assert_eq!(get(row, "dns.flags.authoritative"), "1");
        assert_eq!(get(row, "dns.qry.name"), "aftr.example.net");
    }
    assert_eq!(get(3, "dns.aaaa"), "2001:db8:d::1");
    assert_eq!(get(3, "dns.resp.name"), "aftr.example.net");
    assert_eq!(get(3, "dns.resp.ttl"), "300");
    assert_eq!(get(4, "dns.a"), "203.0.113.1");
    assert_eq!(
        (get(4, "dns.flags.rcode"), get(5, "dns.flags.rcode")),
        ("0", "3")
    );
    assert_eq!((get(5, "dns.count.answers"), get(5, "dns.a")), ("0", ""));
}
