//! The lab DUT's connection table as a test object (issue #15): a plan-settable capacity,
//! UDP timeouts, emptying it between trials, and its own counters.
//!
//! **Capacity.** `nf_conntrack_max` is global and read-only inside a network namespace on this
//! kernel (docs/methodology.md, "Ground truth in the lab"), so the lab caps its DUT with
//! nftables instead, in a forward-hook chain of its own table `inet wirerate_ct`: every new
//! connection adds its 5-tuple to a set of `size N` (one per IP family), and one that finds the
//! set full is counted and dropped — a drop-new table of exactly N (the kernel refuses an
//! element past `size` atomically). The table is separate from the profile's `inet wirerate` so
//! that it composes with any conntrack profile.
//!
//! Why a set and not `ct state new ct count over N drop` (until ffbda4b): nf_conncount keeps the
//! counted connections in one list that it walks on insertion to drop the gone ones, so setting up
//! a connection cost more the fuller the table was — measured through the 10,000-rule firewall at
//! 8,000 connections, load 7–8: 6,211 and 5,133 connections/s with the rule, 7,828 and 6,930
//! without it, and near the cap its set-up fell behind the capacity search's 2,500/s (a run of
//! 2026-11-26 found 9,999 of 10,000). A hash set's insertion costs the same at any fill. What the
//! set does not do is forget: a connection that ends (times out, or is deleted) keeps its place
//! until the table is reset, so a trial must be shorter than the DUT's timeouts — which RFC 9693
//! asks anyway.
//!
//! **Emptying it.** `conntrack -F` empties the kernel's table, and the limit table is created
//! afresh, which empties its sets.
//!
//! **Timeouts.** `nf_conntrack_udp_timeout` (unreplied UDP) is per namespace and writable: a
//! trial longer than it would see its oldest connections expire, which looks like eviction.

use std::fmt::Write as _;
use std::time::Duration;

use crate::cmd;
use crate::error::{LabError, Result};

/// The lab's own table for the capacity rule.
pub const TABLE: &str = "wirerate_ct";
/// Its counter of connections refused because the table was full.
pub const REFUSED: &str = "refused";

/// The lab's sets of counted connections, IPv4 and IPv6 (a trial uses one family).
pub const SETS: [&str; 2] = ["conns4", "conns6"];

/// The `nft -f` input that installs the capacity rule for `limit` connections afresh (its
/// sets empty), or removes it (`None`). One transaction either way.
pub fn limit_ruleset(limit: Option<u64>) -> String {
    let mut s = String::new();
    // Create-then-delete: works whether or not the table exists.
    let _ = writeln!(s, "table inet {TABLE} {{\n}}");
    let _ = writeln!(s, "delete table inet {TABLE}");
    if let Some(n) = limit {
        let _ = writeln!(s, "table inet {TABLE} {{");
        let _ = writeln!(s, "  counter {REFUSED} {{\n  }}");
        for (set, addr) in SETS.iter().zip(["ipv4_addr", "ipv6_addr"]) {
            let _ = writeln!(
                s,
                "  set {set} {{\n    type {addr} . inet_proto . inet_service . {addr} . inet_service\n    size {n}\n    flags dynamic\n  }}"
            );
        }
        // Not `limit`: a keyword in nftables 1.0.6, as is `fwd`.
        let _ = writeln!(s, "  chain conn_cap {{");
        let _ = writeln!(
            s,
            "    type filter hook forward priority -10; policy accept;"
        );
        let _ = writeln!(s, "    ct state != new accept");
        // A full set refuses the element, which ends the rule before `accept`.
        for (set, ip) in SETS.iter().zip(["ip", "ip6"]) {
            let _ = writeln!(
                s,
                "    add @{set} {{ {ip} saddr . meta l4proto . th sport . {ip} daddr . th dport }} accept"
            );
        }
        let _ = writeln!(s, "    counter name \"{REFUSED}\" drop");
        let _ = writeln!(s, "  }}");
        let _ = writeln!(s, "}}");
    }
    s
}

/// The counters themselves are vocabulary (trial records embed them): `lab-model`.
pub use lab_model::conntrack::ConntrackStats;

/// Sums `conntrack -S` lines (`cpu=0 found=0 invalid=0 insert=0 insert_failed=0 drop=0 …`).
pub fn parse_stats(text: &str) -> ConntrackStats {
    let mut s = ConntrackStats::default();
    for (k, v) in text
        .split_whitespace()
        .filter_map(|w| w.split_once('='))
        .filter_map(|(k, v)| v.parse::<u64>().ok().map(|v| (k, v)))
    {
        match k {
            "insert" => s.insert += v,
            "insert_failed" => s.insert_failed += v,
            "drop" => s.drop += v,
            "early_drop" => s.early_drop += v,
            _ => {}
        }
    }
    s
}

/// Installs (or removes) the capacity rule in namespace `ns` and sets its unreplied-UDP
/// timeout.
pub fn configure(ns: &str, limit: Option<u64>, udp_timeout: Option<Duration>) -> Result<()> {
    if let Some(t) = udp_timeout {
        let secs = t.as_secs().max(1);
        cmd::run(&[
            "ip",
            "netns",
            "exec",
            ns,
            "sysctl",
            "-q",
            "-w",
            &format!("net.netfilter.nf_conntrack_udp_timeout={secs}"),
        ])?;
    }
    cmd::run_with(
        &["ip", "netns", "exec", ns, "nft", "-f", "-"],
        Some(limit_ruleset(limit).as_bytes()),
        cmd::DEFAULT_TIMEOUT,
    )
    .map(|_| ())
}

/// Empties the connection table of `ns` and restarts the capacity rule's count (`limit` as
/// configured). Needs conntrack-tools.
pub fn reset(ns: &str, limit: Option<u64>) -> Result<()> {
    cmd::tool("conntrack").map_err(|_| LabError::Unsupported {
        profile: "a connection table test".into(),
        feature: "the `conntrack` tool (conntrack-tools) to empty the table between trials".into(),
    })?;
    // conntrack -F prints a summary on stderr and exits 0 even on an empty table.
    cmd::run(&["ip", "netns", "exec", ns, "conntrack", "-F"])?;
    if limit.is_some() {
        configure(ns, limit, None)?;
    }
    Ok(())
}

pub use crate::ctnetlink::Teardown;

/// Deletes every connection of `ns` and times it, over ctnetlink from inside this process
/// ([`crate::ctnetlink`]: no process start inside the timed interval).
pub fn teardown(ns: &str) -> Result<Teardown> {
    crate::ctnetlink::teardown(ns).map_err(|e| LabError::Io {
        context: format!("deleting the connection table of {ns} over ctnetlink"),
        source: e,
    })
}

/// The counters of `ns` now.
pub fn stats(ns: &str) -> Result<ConntrackStats> {
    let mut s = parse_stats(&cmd::run(&["ip", "netns", "exec", ns, "conntrack", "-S"])?);
    s.entries = cmd::run(&["ip", "netns", "exec", ns, "conntrack", "-C"])?
        .trim()
        .parse()
        .unwrap_or(0);
    if let Ok(j) = cmd::run(&[
        "ip", "netns", "exec", ns, "nft", "-j", "list", "counters", "table", "inet", TABLE,
    ]) {
        if let Ok(cs) = crate::stats::parse_nft_counters(&j) {
            s.refused = cs
                .iter()
                .find(|c| c.name == REFUSED)
                .map_or(0, |c| c.packets);
        }
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limit_rule_and_its_removal() {
        let on = limit_ruleset(Some(4096));
        assert!(on.contains("size 4096"));
        assert!(on.contains(
            "add @conns4 { ip saddr . meta l4proto . th sport . ip daddr . th dport } accept"
        ));
        assert!(on.contains("add @conns6 { ip6 saddr"));
        assert!(on.contains("counter name \"refused\" drop"));
        assert!(on.contains("hook forward"));
        assert!(on.starts_with("table inet wirerate_ct {\n}\ndelete table inet wirerate_ct\n"));
        let off = limit_ruleset(None);
        assert_eq!(
            off,
            "table inet wirerate_ct {\n}\ndelete table inet wirerate_ct\n"
        );
    }

    #[test]
    fn stats_sum_over_cpus() {
        let t = "cpu=0   \tfound=0 invalid=3 insert=5 insert_failed=1 drop=2 early_drop=0 error=0 \n\
                 cpu=1   \tfound=0 invalid=0 insert=7 insert_failed=0 drop=4 early_drop=9 error=0 \n";
        let s = parse_stats(t);
        assert_eq!(
            (s.insert, s.insert_failed, s.drop, s.early_drop),
            (12, 1, 6, 9)
        );
        let later = ConntrackStats {
            insert: 20,
            entries: 3,
            ..s
        };
        assert_eq!(later.since(&s).insert, 8);
        assert_eq!(later.since(&s).entries, 3);
    }
}
