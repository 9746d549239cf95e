//! `wirerate trial --inside pppoe|dslite` (issue 7): the trial's streams ride a PPPoE session
//! or DS-Lite softwire that wirerate brings up between its two ports. 1518-byte frames, too
//! big for the session's MRU or the tunnel's MTU, are refused with the text a plan gives
//! (issue 18), and with `--fragment-oversize` reported as fragmented (sent through the control
//! planes, fragmented and reassembled) instead of as lost frames. Root is needed
//! (else `SKIP: …`). Namespaces `wr-tins<pid><tag>a/b`, removed on drop.

mod common_isp;

use common_isp::{is_root, NsPair};
use std::process::Command;

/// Runs `wirerate trial --inside KIND` with streams of 64 and 1518 B both ways (a TOML file).
fn run_inside_output(kind: &str, tag: &str, extra: &[&str]) -> std::process::Output {
    let ns = NsPair::new("wr-tins", "wrti", tag);
    let dir = tempfile::tempdir().unwrap();
    let toml = dir.path().join("streams.toml");
    std::fs::write(
        &toml,
        format!(
            "[[stream]]\ndirection = \"both\"\nencap = \"{kind}\"\nsize = \"64\"\nframes = 3000\nrate = \"5kpps\"\n\n\
             [[stream]]\ndirection = \"both\"\nencap = \"{kind}\"\nsize = \"1518\"\nframes = 400\nrate = \"5kpps\"\n"
        ),
    )
    .unwrap();
    Command::new(env!("CARGO_BIN_EXE_wirerate"))
        .args(["trial", "--port-a", &format!("wrti0@{}", ns.a)])
        .args(["--port-b", &format!("wrti1@{}", ns.b), "--inside", kind])
        .arg("--streams")
        .arg(&toml)
        .args(extra)
        .args(["--json"])
        .output()
        .expect("wirerate trial")
}

/// [`run_inside_output`] that must succeed: its JSON.
fn run_inside(kind: &str, tag: &str, extra: &[&str]) -> serde_json::Value {
    let out = run_inside_output(kind, tag, extra);
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!(
        "stderr: {}\nstdout: {stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success());
    serde_json::from_str(&stdout).expect("JSON")
}

/// The checks both kinds share: 64 B exact through the fast path, 1518 B fragmented (two
/// fragments each) and every packet reassembled with its signature, nothing counted lost.
fn check(v: &serde_json::Value, what: &str) {
    let streams = v["trial"]["streams"].as_array().expect("streams");
    assert_eq!(
        streams.len(),
        2,
        "only the 64 B streams run in the fast path"
    );
    for s in streams {
        assert_eq!(s["tx"]["sent"], 3000);
        assert_eq!(s["rx"]["received"], 3000);
    }
    assert_eq!(v["trial"]["total"]["lost"], 0);
    let frag = v["fragmented"].as_array().expect("fragmented");
    assert_eq!(frag.len(), 2, "1518 B both ways");
    for f in frag {
        assert_eq!(f["size"], 1518);
        assert!(
            f["fate"].as_str().unwrap().starts_with("fragmented into 2")
                && f["fate"].as_str().unwrap().contains(what),
            "{f}"
        );
        assert_eq!(f["packets"], 400);
        assert_eq!(f["fragments"], 800);
        assert_eq!(f["reassembled"], 400, "{f}");
    }
}

#[test]
fn trial_inside_pppoe_reports_1518_as_fragmented() {
    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET)");
        return;
    }
    let v = run_inside("pppoe", "p", &["--fragment-oversize"]);
    check(&v, "IPv4");
    let i = &v["inside"];
    assert_eq!(i["kind"], "pppoe");
    assert_eq!(i["max_datagram_b_to_a"], 1454, "the AC's MRU");
    assert_eq!(i["max_datagram_a_to_b"], 1492, "the client's MRU");
    assert_eq!(
        i["ended"]["PeerPadt"].as_u64().unwrap_or(0)
            + i["ended"]["PeerTerminate"].as_u64().unwrap_or(0),
        1,
        "{i}"
    );
    // From the AC the client's MRU (1492) applies, from the client the AC's (1454): 1500-byte
    // packets split 1472 + 8 and 1432 + 48 bytes of data, plus 20 (IPv4) + 26 (Ethernet,
    // PPPoE, PPP, FCS) per fragment, padded to 64.
    for f in v["fragmented"].as_array().unwrap() {
        let expect = if f["from"] == "a" {
            [1518, 64]
        } else {
            [1478, 94]
        };
        assert_eq!(f["frames_on_link"], serde_json::json!(expect), "{f}");
    }
}

#[test]
fn trial_inside_dslite_reports_1518_as_fragmented() {
    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET)");
        return;
    }
    let v = run_inside("dslite", "d", &["--fragment-oversize"]);
    check(&v, "DS-Lite");
    assert_eq!(v["inside"]["kind"], "dslite");
    assert_eq!(v["inside"]["mtu"], 1500);
    let f = &v["fragmented"][0];
    assert_eq!(f["frames_on_link"], serde_json::json!([1514, 118]), "{f}");
}

/// Without `--fragment-oversize`, a size the session or tunnel does not carry whole is refused
/// before anything is sent, with the plan's text for it (`bench::oversize`), naming the stream
/// and the port it leaves: here the first 1518 B stream, from A (the ISP side), where the
/// client's MRU 1492 or the 1500-byte tunnel MTU applies.
#[test]
fn trial_inside_refuses_oversize_frames_as_a_plan_does() {
    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET)");
        return;
    }
    for (kind, tag, text) in [
        (
            "pppoe",
            "rp",
            bench::oversize::pppoe_refusal(1518, 1492, "a"),
        ),
        (
            "dslite",
            "rd",
            bench::oversize::dslite_refusal(1518, 1500, "a"),
        ),
    ] {
        let out = run_inside_output(kind, tag, &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        println!("{kind}: {err}");
        assert_eq!(out.status.code(), Some(2), "a usage error: {err}");
        assert!(err.contains(&format!("stream 3: {text}")), "{err}");
        assert!(out.stdout.is_empty(), "nothing measured");
    }
}
