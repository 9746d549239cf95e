//! What the NAT tests read in the lab DUT: commands run there, its connection table's size
//! and its nftables counters, and a napt lab to run them on (shared by nat_trial.rs,
//! nat_real.rs and nat_xdp.rs).

#![allow(dead_code)] // each test file uses part of this

use std::io::Write;

use lab::{Lab, LabConfig, Node, Profile, Topology};

use lab::{is_root, LabGuard};

/// A forward lab named `name` with the `napt` profile, rebuilt from scratch; `None` (after a
/// `SKIP: the <what> tests need root …` line) when not root.
pub fn napt_lab(name: &str, what: &str) -> Option<LabGuard> {
    if !is_root() {
        println!("SKIP: the {what} tests need root (network namespaces, nftables)");
        return None;
    }
    let _ = lab::down(name);
    let cfg = LabConfig {
        name: name.into(),
        topology: Topology::Forward,
        profile: Some(Profile::parse("napt").unwrap()),
    };
    Some(LabGuard(Some(Lab::up(&cfg).expect("lab up"))))
}

/// Feeds `script` to `nft -f -` in the DUT's namespace; fails the test if nft refuses it.
pub fn nft(lab: &Lab, script: &str) {
    let mut c = lab.command(Node::Dut, &["nft", "-f", "-"]).unwrap();
    let mut child = c.stdin(std::process::Stdio::piped()).spawn().expect("nft");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(script.as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success(), "nft refused:\n{script}");
}

/// Runs `argv` in the DUT's namespace; its stdout, or a panic with its stderr.
pub fn sh(lab: &Lab, argv: &[&str]) -> String {
    let out = lab.exec(Node::Dut, argv).expect("exec in the DUT");
    assert!(
        out.status.success(),
        "{}: {}",
        argv.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Entries in the DUT namespace's connection table.
pub fn conntrack_count(lab: &Lab) -> u64 {
    sh(lab, &["conntrack", "-C"])
        .trim()
        .parse()
        .expect("conntrack -C")
}

/// Packets of the named nftables counter `name` in the DUT's `inet` table `table`.
#[allow(dead_code)] // not every test binary reads counters
pub fn counter(lab: &Lab, table: &str, name: &str) -> u64 {
    let j = sh(
        lab,
        &["nft", "-j", "list", "counters", "table", "inet", table],
    );
    lab::stats::parse_nft_counters(&j)
        .expect("counters")
        .into_iter()
        .find(|c| c.name == name)
        .map(|c| c.packets)
        .unwrap_or_else(|| panic!("no counter {name} in {j}"))
}
