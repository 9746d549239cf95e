//! `wirerate mape ce` without a device: the CE's mapping from its delegated prefix and the
//! rule, and clear refusals of what cannot be mapped (no root needed).

use std::process::Command;

const WIRERATE: &str = env!("CARGO_BIN_EXE_wirerate");

fn mape(args: &[&str]) -> std::process::Output {
    Command::new(WIRERATE)
        .arg("mape")
        .args(args)
        .output()
        .unwrap()
}

/// 2001:db8:112:300::/56 under 2001:db8:100::/40 with 16 EA bits carries EA = 0x1203: IPv4
/// suffix 0x12 (198.51.100.18) and PSID 3; with offset 0 the set is 768–1023, with the
/// default offset 6 it is 63 runs of 4 ports from 1036 (RFC 7597 §5.1: A·1024 + PSID·4 + j).
#[test]
fn the_ce_mapping_of_a_delegated_prefix() {
    let o = mape(&[
        "ce",
        "--prefix",
        "2001:db8:112:300::/56",
        "--psid-offset",
        "0",
        "--json",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ce"], "2001:db8:112:300:0:c633:6412:3");
    assert_eq!(v["ipv4"], "198.51.100.18");
    assert_eq!(v["psid"], 3);
    assert_eq!(v["ports"], serde_json::json!(["768-1023"]));
    let o = mape(&["ce", "--prefix", "2001:db8:112:300::/56", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ports = v["ports"].as_array().unwrap();
    assert_eq!(ports.len(), 63);
    assert_eq!(
        (ports[0].as_str(), ports[62].as_str()),
        (Some("1036-1039"), Some("64524-64527"))
    );
}

#[test]
fn what_cannot_be_mapped_is_refused_naming_the_flag() {
    for (args, needle) in [
        (
            vec!["ce", "--prefix", "2001:db8:200::/56"],
            "--prefix 2001:db8:200::/56",
        ),
        (
            vec!["ce", "--prefix", "2001:db8:100::/48"],
            "shorter than the rule prefix",
        ),
        (
            vec!["ce", "--prefix", "2001:db8:100::"],
            "--prefix 2001:db8:100::: expected ADDRESS/LENGTH",
        ),
        (
            vec!["ce", "--prefix", "2001:db8:100::/56", "--ea-bits", "60"],
            "--ea-bits",
        ),
        (
            vec!["br", "--dev", "lo", "--provision", "--pd-len", "48"],
            "cannot carry the MAP-E rule's EA bits",
        ),
    ] {
        let o = mape(&args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(needle), "{args:?}: {e}");
    }
}
