//! What the NAT tests read in the lab DUT: commands run there, its connection table's size
//! and its nftables counters (shared by nat_trial.rs and nat_real.rs).

use lab::{Lab, Node};

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
