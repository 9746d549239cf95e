//! Independent cross-check of `wirerate craft`: frames of every encapsulation and size are
//! decoded by tshark (Wireshark's dissectors, not our parsers) and every field must be what was
//! asked: addresses, ports, lengths, checksums, VLAN ids and priorities, MPLS labels and
//! bottom-of-stack, PPPoE code/session/length, PPP protocol, inner and outer IP headers, and the
//! signature's stream id and sequence number.
//!
//! Expected values come from the layout arithmetic of DESIGN.md §4, written out here, not from
//! the library under test.

use std::path::PathBuf;
use std::process::Command;

const WIRERATE: &str = env!("CARGO_BIN_EXE_wirerate");

/// Returns false (after saying why) when tshark is missing outside CI; in CI it must be there.
fn have_tshark() -> bool {
    if Command::new("tshark").arg("--version").output().is_ok() {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("tshark is missing in CI: scripts/install-deps.sh must install it");
    }
    eprintln!("SKIP: tshark not installed (run scripts/install-deps.sh)");
    false
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("wirerate-craft-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const FIELDS: &[&str] = &[
    "frame.len",
    "eth.src",
    "eth.dst",
    "eth.type",
    "ieee8021ad.id",
    "ieee8021ad.priority",
    "vlan.id",
    "vlan.priority",
    "mpls.label",
    "mpls.bottom",
    "mpls.exp",
    "mpls.ttl",
    "pppoe.code",
    "pppoe.session_id",
    "pppoe.payload_length",
    "ppp.protocol",
    "ip.src",
    "ip.dst",
    "ip.len",
    "ip.id",
    "ip.checksum.status",
    "ip.ttl",
    "ip.dsfield",
    "ipv6.src",
    "ipv6.dst",
    "ipv6.plen",
    "ipv6.nxt",
    "ipv6.tclass",
    "udp.srcport",
    "udp.dstport",
    "udp.length",
    "udp.checksum.status",
    "data.data",
];

/// One decoded frame: field name -> tshark's value (several occurrences joined with ',').
struct Row(Vec<(String, String)>);

impl Row {
    fn get(&self, f: &str) -> &str {
        &self.0.iter().find(|(k, _)| k == f).unwrap().1
    }
}

fn decode(pcap: &PathBuf) -> Vec<Row> {
    let mut cmd = Command::new("tshark");
    cmd.args(["-r"]).arg(pcap).args([
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
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            Row(FIELDS
                .iter()
                .map(|f| f.to_string())
                .zip(l.split('|').map(str::to_string))
                .collect())
        })
        .collect()
}

struct Case {
    encap: &'static str,
    v6: bool,
    vlans: usize,
    mpls: usize,
    pppoe: bool,
    dslite: bool,
}

const CASES: &[Case] = &[
    Case {
        encap: "ipv4",
        v6: false,
        vlans: 0,
        mpls: 0,
        pppoe: false,
        dslite: false,
    },
    Case {
        encap: "ipv6",
        v6: true,
        vlans: 0,
        mpls: 0,
        pppoe: false,
        dslite: false,
    },
    Case {
        encap: "vlan",
        v6: false,
        vlans: 1,
        mpls: 0,
        pppoe: false,
        dslite: false,
    },
    Case {
        encap: "vlan+ipv6",
        v6: true,
        vlans: 1,
        mpls: 0,
        pppoe: false,
        dslite: false,
    },
    Case {
        encap: "qinq",
        v6: false,
        vlans: 2,
        mpls: 0,
        pppoe: false,
        dslite: false,
    },
    Case {
        encap: "qinq+ipv6",
        v6: true,
        vlans: 2,
        mpls: 0,
        pppoe: false,
        dslite: false,
    },
    Case {
        encap: "mpls:1",
        v6: false,
        vlans: 0,
        mpls: 1,
        pppoe: false,
        dslite: false,
    },
    Case {
        encap: "mpls:3+ipv6",
        v6: true,
        vlans: 0,
        mpls: 3,
        pppoe: false,
        dslite: false,
    },
    Case {
        encap: "vlan+mpls:2",
        v6: false,
        vlans: 1,
        mpls: 2,
        pppoe: false,
        dslite: false,
    },
    Case {
        encap: "pppoe",
        v6: false,
        vlans: 0,
        mpls: 0,
        pppoe: true,
        dslite: false,
    },
    Case {
        encap: "pppoe+ipv6",
        v6: true,
        vlans: 0,
        mpls: 0,
        pppoe: true,
        dslite: false,
    },
    Case {
        encap: "pppoe+vlan",
        v6: false,
        vlans: 1,
        mpls: 0,
        pppoe: true,
        dslite: false,
    },
    Case {
        encap: "pppoe+qinq+ipv6",
        v6: true,
        vlans: 2,
        mpls: 0,
        pppoe: true,
        dslite: false,
    },
    Case {
        encap: "dslite",
        v6: false,
        vlans: 0,
        mpls: 0,
        pppoe: false,
        dslite: true,
    },
    Case {
        encap: "dslite+pppoe",
        v6: false,
        vlans: 0,
        mpls: 0,
        pppoe: true,
        dslite: true,
    },
    Case {
        encap: "dslite+vlan",
        v6: false,
        vlans: 1,
        mpls: 0,
        pppoe: false,
        dslite: true,
    },
];

const COUNT: u64 = 5;
const SEQ_START: u64 = 65533; // wraps the 16-bit IPv4 identification mid-capture
const STREAM: u16 = 0x0abc;
const LABELS: [u32; 3] = [1000, 2000, 1048575];

fn craft(c: &Case, size: usize, out: &PathBuf) -> std::process::Output {
    let (src, dst) = if c.v6 {
        ("2001:db8:1::10", "2001:db8:2::20")
    } else {
        ("192.0.2.10", "198.51.100.20")
    };
    let mut cmd = Command::new(WIRERATE);
    cmd.args([
        "craft",
        "--encap",
        c.encap,
        "--size",
        &size.to_string(),
        "--count",
        &COUNT.to_string(),
    ]);
    cmd.args([
        "--src-mac",
        "02:11:22:33:44:55",
        "--dst-mac",
        "02:66:77:88:99:aa",
    ]);
    cmd.args([
        "--src-ip",
        src,
        "--dst-ip",
        dst,
        "--src-port",
        "4000",
        "--dst-port",
        "5000",
    ]);
    cmd.args(["--tos", "184", "--ttl", "33"]); // 184 = 0xb8, DSCP EF
    cmd.args([
        "--stream-id",
        &STREAM.to_string(),
        "--seq-start",
        &SEQ_START.to_string(),
    ]);
    match c.vlans {
        1 => {
            cmd.args(["--vlan", "300", "--vlan-pcp", "5"]);
        }
        2 => {
            cmd.args(["--vlan", "300,42", "--vlan-pcp", "5,3"]);
        }
        _ => {}
    }
    if c.mpls > 0 {
        let labels: Vec<String> = LABELS[..c.mpls].iter().map(|l| l.to_string()).collect();
        cmd.args([
            "--mpls",
            &labels.join(","),
            "--mpls-tc",
            "6",
            "--mpls-ttl",
            "17",
        ]);
    }
    if c.pppoe {
        cmd.args(["--pppoe-session", "0x1234"]);
    }
    if c.dslite {
        cmd.args([
            "--tunnel-src",
            "2001:db8:c::2",
            "--tunnel-dst",
            "2001:db8:d::1",
        ]);
    }
    cmd.arg("-o").arg(out);
    cmd.output().expect("run wirerate craft")
}

/// Crafts `c` at `size` into its own pcap file; the file's bytes.
fn craft_file(c: &Case, size: usize) -> Vec<u8> {
    let out = tmp(&format!("{}-{size}.pcap", c.encap.replace([':', '+'], "_")));
    let run = craft(c, size, &out);
    assert!(
        run.status.success(),
        "{} {size}: {}",
        c.encap,
        String::from_utf8_lossy(&run.stderr)
    );
    std::fs::read(&out).unwrap()
}

/// Length of a classic pcap file's global header, and of each record's header.
const PCAP_HEADER: usize = 24;
const PCAP_RECORD_HEADER: usize = 16;

/// How many records the classic pcap file `bytes` holds, walking its record headers (its
/// `incl_len` field, in the byte order its magic number says).
fn pcap_records(bytes: &[u8], ctx: &str) -> u64 {
    assert!(bytes.len() >= PCAP_HEADER, "{ctx}: no pcap header");
    let little = match bytes[..4] {
        [0xd4, 0xc3, 0xb2, 0xa1] | [0x4d, 0x3c, 0xb2, 0xa1] => true,
        [0xa1, 0xb2, 0xc3, 0xd4] | [0xa1, 0xb2, 0x3c, 0x4d] => false,
        _ => panic!(
            "{ctx}: not a classic pcap file (magic {:02x?})",
            &bytes[..4]
        ),
    };
    let (mut at, mut n) = (PCAP_HEADER, 0);
    while at < bytes.len() {
        assert!(
            at + PCAP_RECORD_HEADER <= bytes.len(),
            "{ctx}: a truncated record header"
        );
        let field: [u8; 4] = bytes[at + 8..at + 12].try_into().unwrap();
        let incl = if little {
            u32::from_le_bytes(field)
        } else {
            u32::from_be_bytes(field)
        };
        at += PCAP_RECORD_HEADER + incl as usize;
        n += 1;
    }
    assert_eq!(at, bytes.len(), "{ctx}: a truncated record");
    n
}

/// Checks the `rows` tshark decoded from the frames `wirerate craft` wrote for `c` at `size`.
fn check(c: &Case, size: usize, rows: &[Row]) {
    assert_eq!(rows.len() as u64, COUNT, "{} {size}", c.encap);
    let ip_len = size - 18; // plain frame: Ethernet 14 + FCS 4
    let overhead =
        4 * c.vlans + 4 * c.mpls + if c.pppoe { 8 } else { 0 } + if c.dslite { 40 } else { 0 };
    let ip_hdr = if c.v6 { 40 } else { 20 };
    let ctx = format!("{} {size}", c.encap);
    for (i, r) in rows.iter().enumerate() {
        let seq = SEQ_START + i as u64;
        assert_eq!(
            r.get("frame.len"),
            (size - 4 + overhead).to_string(),
            "{ctx}: frame length"
        );
        assert_eq!(r.get("eth.src"), "02:11:22:33:44:55", "{ctx}");
        assert_eq!(r.get("eth.dst"), "02:66:77:88:99:aa", "{ctx}");
        match c.vlans {
            0 => assert_eq!(r.get("vlan.id"), "", "{ctx}"),
            1 => {
                assert_eq!(r.get("eth.type"), "0x8100", "{ctx}");
                assert_eq!(
                    (r.get("vlan.id"), r.get("vlan.priority")),
                    ("300", "5"),
                    "{ctx}"
                );
            }
            _ => {
                assert_eq!(r.get("eth.type"), "0x88a8", "{ctx}");
                assert_eq!(
                    (r.get("ieee8021ad.id"), r.get("ieee8021ad.priority")),
                    ("300", "5"),
                    "{ctx}"
                );
                assert_eq!(
                    (r.get("vlan.id"), r.get("vlan.priority")),
                    ("42", "3"),
                    "{ctx}"
                );
            }
        }
        if c.mpls > 0 {
            let labels: Vec<String> = LABELS[..c.mpls].iter().map(|l| l.to_string()).collect();
            assert_eq!(r.get("mpls.label"), labels.join(","), "{ctx}: labels");
            let bottom: Vec<&str> = (0..c.mpls)
                .map(|i| if i + 1 == c.mpls { "1" } else { "0" })
                .collect();
            assert_eq!(
                r.get("mpls.bottom"),
                bottom.join(","),
                "{ctx}: bottom of stack"
            );
            assert_eq!(r.get("mpls.exp"), vec!["6"; c.mpls].join(","), "{ctx}");
            assert_eq!(r.get("mpls.ttl"), vec!["17"; c.mpls].join(","), "{ctx}");
        } else {
            assert_eq!(r.get("mpls.label"), "", "{ctx}");
        }
        if c.pppoe {
            assert_eq!(r.get("pppoe.code"), "0x00", "{ctx}");
            assert_eq!(r.get("pppoe.session_id"), "0x1234", "{ctx}");
            let ppp_len = 2 + ip_len + if c.dslite { 40 } else { 0 };
            assert_eq!(
                r.get("pppoe.payload_length"),
                ppp_len.to_string(),
                "{ctx}: PPPoE length"
            );
            let proto = if c.v6 || c.dslite { "0x0057" } else { "0x0021" };
            assert_eq!(r.get("ppp.protocol"), proto, "{ctx}: PPP protocol");
        } else {
            assert_eq!(r.get("pppoe.session_id"), "", "{ctx}");
        }
        if c.dslite {
            assert_eq!(r.get("ipv6.src"), "2001:db8:c::2", "{ctx}: tunnel source");
            assert_eq!(
                r.get("ipv6.dst"),
                "2001:db8:d::1",
                "{ctx}: tunnel destination"
            );
            assert_eq!(
                r.get("ipv6.plen"),
                ip_len.to_string(),
                "{ctx}: outer payload length"
            );
            assert_eq!(r.get("ipv6.nxt"), "4", "{ctx}: IPv4-in-IPv6");
        }
        if c.v6 {
            assert_eq!(r.get("ipv6.src"), "2001:db8:1::10", "{ctx}");
            assert_eq!(r.get("ipv6.dst"), "2001:db8:2::20", "{ctx}");
            assert_eq!(
                r.get("ipv6.plen"),
                (ip_len - 40).to_string(),
                "{ctx}: payload length"
            );
            assert_eq!(r.get("ipv6.nxt"), "17", "{ctx}");
            assert_eq!(r.get("ipv6.tclass"), "0x000000b8", "{ctx}: traffic class");
            assert_eq!(r.get("ip.src"), "", "{ctx}");
        } else {
            assert_eq!(r.get("ip.src"), "192.0.2.10", "{ctx}");
            assert_eq!(r.get("ip.dst"), "198.51.100.20", "{ctx}");
            assert_eq!(r.get("ip.len"), ip_len.to_string(), "{ctx}: total length");
            assert_eq!(
                r.get("ip.id"),
                format!("{:#06x}", seq as u16),
                "{ctx}: identification = sequence"
            );
            assert_eq!(
                r.get("ip.checksum.status"),
                "1",
                "{ctx}: IPv4 header checksum good"
            );
            assert_eq!(r.get("ip.ttl"), "33", "{ctx}");
            assert_eq!(r.get("ip.dsfield"), "0xb8", "{ctx}");
        }
        assert_eq!(r.get("udp.srcport"), "4000", "{ctx}");
        assert_eq!(r.get("udp.dstport"), "5000", "{ctx}");
        assert_eq!(
            r.get("udp.length"),
            (ip_len - ip_hdr).to_string(),
            "{ctx}: UDP length"
        );
        assert_eq!(
            r.get("udp.checksum.status"),
            "1",
            "{ctx}: UDP checksum good"
        );
        // Signature: "WR", stream id, low 32 bits of the sequence.
        let sig = format!("5752{STREAM:04x}{:08x}", seq as u32);
        assert!(
            r.get("data.data").starts_with(&sig),
            "{ctx}: signature {} vs {sig}",
            r.get("data.data")
        );
    }
}

#[test]
fn every_encapsulation_and_size_decodes_as_asked() {
    if !have_tshark() {
        return;
    }
    // Every case and size is crafted into a file of its own (one `craft` each, as a user runs
    // it); the files are then joined into one capture that tshark decodes in one pass: its
    // start-up, not the decoding, is what each file cost when each had its own tshark. The
    // files share their pcap header (asserted), so joining is appending their records in
    // order, and tshark's rows come back in that order: the first COUNT rows are the first
    // file's, and so on.
    let mut crafted: Vec<(&Case, usize)> = Vec::new();
    let mut joined: Vec<u8> = Vec::new();
    for c in CASES {
        let min = if c.v6 { 82 } else { 64 };
        // The largest frame whose packet crosses a 1500-byte-MTU link whole (PPPoE takes 8,
        // the DS-Lite tunnel 40).
        let largest = 1518 - if c.pppoe { 8 } else { 0 } - if c.dslite { 40 } else { 0 };
        let mut sizes = vec![min, min + 1, 128, 1518, largest];
        sizes.dedup();
        for size in sizes {
            let bytes = craft_file(c, size);
            let ctx = format!("{} {size}", c.encap);
            assert_eq!(pcap_records(&bytes, &ctx), COUNT, "{ctx}: frames written");
            if joined.is_empty() {
                joined.extend_from_slice(&bytes);
            } else {
                assert_eq!(
                    bytes[..PCAP_HEADER],
                    joined[..PCAP_HEADER],
                    "{ctx}: pcap header differs from the first file's"
                );
                joined.extend_from_slice(&bytes[PCAP_HEADER..]);
            }
            crafted.push((c, size));
        }
    }
    let all = tmp("all.pcap");
    std::fs::write(&all, &joined).unwrap();
    let rows = decode(&all);
    assert_eq!(
        rows.len(),
        crafted.len() * COUNT as usize,
        "tshark decoded every frame of the joined capture"
    );
    for ((c, size), rows) in crafted.iter().zip(rows.chunks(COUNT as usize)) {
        check(c, *size, rows);
    }
}

#[test]
fn ipv6_sizes_below_the_signature_minimum_are_refused() {
    for size in ["64", "65"] {
        let out = Command::new(WIRERATE)
            .args(["craft", "--encap", "ipv6", "--size", size, "-o"])
            .arg(tmp("refused.pcap"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("smallest that works is 82 B"), "{err}");
        assert_eq!(err.lines().count(), 1, "one clear line: {err}");
    }
}
