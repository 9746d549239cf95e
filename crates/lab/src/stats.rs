//! Stats snapshots of the lab, taken before and after a trial so later code can diff them:
//! the profile's nftables counters, conntrack entries, per-interface counters, softnet
//! drops per CPU, and the CPU time of the DUT's CPU.
//!
//! Parsers are separate pure functions over the text the kernel or tool prints, so they are
//! tested without a lab.

use serde::{Deserialize, Serialize};

use crate::error::{LabError, Result};
use crate::topology::Node;

/// Everything measured at one instant.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StatsSnapshot {
    /// Wall clock, milliseconds since the Unix epoch.
    pub taken_unix_ms: u64,
    /// Named counters of the profile's table (`established`, `accepted`, `masqueraded`, …).
    pub nft_counters: Vec<NftCounter>,
    /// Conntrack entries in the DUT namespace (`None` when conntrack never loaded there).
    pub conntrack_entries: Option<u64>,
    pub interfaces: Vec<IfaceStats>,
    /// /proc/net/softnet_stat, one entry per CPU (host-wide: softnet is per CPU, not per
    /// namespace).
    pub softnet: Vec<SoftnetCpu>,
    /// /proc/stat line of the DUT's CPU (`None` on a one-CPU machine).
    pub dut_cpu: Option<CpuTimes>,
    /// The XDP fast path's counters (`None` when it is off): packets it forwarded never show
    /// in the stack's counters (nft, `Ip:ForwDatagrams`).
    #[serde(default)]
    pub fastpath: Option<crate::fastpath::FastpathStats>,
}

/// One named nftables counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NftCounter {
    pub name: String,
    pub packets: u64,
    pub bytes: u64,
}

/// Counters of one interface (`ip -s link`, 64-bit).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IfaceStats {
    pub node: Option<Node>,
    pub ifname: String,
    pub rx_packets: u64,
    pub rx_bytes: u64,
    pub rx_dropped: u64,
    pub rx_errors: u64,
    pub tx_packets: u64,
    pub tx_bytes: u64,
    pub tx_dropped: u64,
    pub tx_errors: u64,
}

/// One CPU's line of /proc/net/softnet_stat.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SoftnetCpu {
    pub cpu: usize,
    /// Packets processed by this CPU's backlog.
    pub processed: u64,
    /// Packets dropped because the backlog queue was full — the DUT's overload drops.
    pub dropped: u64,
    /// Times the NAPI budget ran out with work left.
    pub time_squeeze: u64,
    /// Times this CPU was woken by RPS from another CPU.
    pub received_rps: u64,
}

/// CPU time of one CPU in USER_HZ ticks (usually 1/100 s), from /proc/stat.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    pub cpu: usize,
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
}

impl CpuTimes {
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }

    pub fn busy(&self) -> u64 {
        self.total() - self.idle - self.iowait
    }

    /// Fraction of time busy between `before` and `self` (0.0..=1.0).
    pub fn busy_fraction_since(&self, before: &CpuTimes) -> f64 {
        let total = self.total().saturating_sub(before.total());
        if total == 0 {
            return 0.0;
        }
        self.busy().saturating_sub(before.busy()) as f64 / total as f64
    }
}

impl StatsSnapshot {
    pub fn counter(&self, name: &str) -> Option<&NftCounter> {
        self.nft_counters.iter().find(|c| c.name == name)
    }

    pub fn iface(&self, node: Node, ifname: &str) -> Option<&IfaceStats> {
        self.interfaces
            .iter()
            .find(|i| i.node == Some(node) && i.ifname == ifname)
    }
}

fn json(context: &str, text: &str) -> Result<serde_json::Value> {
    serde_json::from_str(text).map_err(|e| LabError::parse(context, e.to_string()))
}

/// Parse `nft -j list counters table inet wirerate`.
pub fn parse_nft_counters(text: &str) -> Result<Vec<NftCounter>> {
    let v = json("nft counter JSON", text)?;
    let items = v["nftables"].as_array().cloned().unwrap_or_default();
    Ok(items
        .iter()
        .filter_map(|i| i.get("counter"))
        .map(|c| NftCounter {
            name: c["name"].as_str().unwrap_or("").to_string(),
            packets: c["packets"].as_u64().unwrap_or(0),
            bytes: c["bytes"].as_u64().unwrap_or(0),
        })
        .collect())
}

/// Parse `ip -j -s link show` (interfaces other than loopback).
pub fn parse_ip_link_stats(text: &str, node: Option<Node>) -> Result<Vec<IfaceStats>> {
    let v = json("`ip -j -s link` output", text)?;
    let links = v.as_array().cloned().unwrap_or_default();
    Ok(links
        .iter()
        .filter(|l| l["ifname"].as_str() != Some("lo"))
        .map(|l| {
            let s = &l["stats64"];
            let g = |dir: &str, k: &str| s[dir][k].as_u64().unwrap_or(0);
            IfaceStats {
                node,
                ifname: l["ifname"].as_str().unwrap_or("").to_string(),
                rx_packets: g("rx", "packets"),
                rx_bytes: g("rx", "bytes"),
                rx_dropped: g("rx", "dropped"),
                rx_errors: g("rx", "errors"),
                tx_packets: g("tx", "packets"),
                tx_bytes: g("tx", "bytes"),
                tx_dropped: g("tx", "dropped"),
                tx_errors: g("tx", "errors"),
            }
        })
        .collect())
}

/// Parse /proc/net/softnet_stat (hex columns; column 13, where present, is the CPU number).
pub fn parse_softnet(text: &str) -> Result<Vec<SoftnetCpu>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            let cols: Vec<u64> = l
                .split_whitespace()
                .map(|c| u64::from_str_radix(c, 16))
                .collect::<std::result::Result<_, _>>()
                .map_err(|_| LabError::parse("/proc/net/softnet_stat", l.to_string()))?;
            let col = |k: usize| cols.get(k).copied().unwrap_or(0);
            Ok(SoftnetCpu {
                cpu: if cols.len() > 12 { col(12) as usize } else { i },
                processed: col(0),
                dropped: col(1),
                time_squeeze: col(2),
                received_rps: col(9),
            })
        })
        .collect()
}

/// The `cpuN` line of /proc/stat.
pub fn parse_proc_stat(text: &str, cpu: usize) -> Option<CpuTimes> {
    let tag = format!("cpu{cpu}");
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some(tag.as_str()))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    let g = |k: usize| v.get(k).copied().unwrap_or(0);
    Some(CpuTimes {
        cpu,
        user: g(0),
        nice: g(1),
        system: g(2),
        idle: g(3),
        iowait: g(4),
        irq: g(5),
        softirq: g(6),
        steal: g(7),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nft_counters() {
        let t = r#"{"nftables": [{"metainfo": {"version": "1.0.6"}}, {"counter": {"family": "inet", "name": "accepted", "table": "wirerate", "handle": 3, "packets": 1, "bytes": 84}}]}"#;
        let c = parse_nft_counters(t).unwrap();
        assert_eq!(
            c,
            vec![NftCounter {
                name: "accepted".into(),
                packets: 1,
                bytes: 84
            }]
        );
    }

    #[test]
    fn link_stats() {
        let t = r#"[{"ifindex":1,"ifname":"lo","stats64":{"rx":{"bytes":0,"packets":0}}},{"ifindex":2,"ifname":"wr-b","stats64":{"rx":{"bytes":1172604594,"packets":721279,"errors":0,"dropped":3},"tx":{"bytes":882510,"packets":13266,"errors":0,"dropped":0}}}]"#;
        let s = parse_ip_link_stats(t, Some(Node::B)).unwrap();
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].rx_packets, 721279);
        assert_eq!(s[0].rx_dropped, 3);
        assert_eq!(s[0].tx_packets, 13266);
    }

    #[test]
    fn softnet() {
        let t = "0015ac05 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n\
                 0000c73d 00000010 00000002 00000000 00000000 00000000 00000000 00000000 00000000 00000007 00000000 00000000 00000001 00000000 00000000\n";
        let s = parse_softnet(t).unwrap();
        assert_eq!(s[1].cpu, 1);
        assert_eq!(s[1].processed, 0xc73d);
        assert_eq!(s[1].dropped, 16);
        assert_eq!(s[1].received_rps, 7);
    }

    #[test]
    fn proc_stat() {
        let t =
            "cpu  10 0 10 100 0 0 0 0 0 0\ncpu0 5 0 5 50 0 0 0 0 0 0\ncpu1 1 2 3 4 5 6 7 8 0 0\n";
        let c = parse_proc_stat(t, 1).unwrap();
        assert_eq!((c.user, c.softirq, c.steal), (1, 7, 8));
        assert_eq!(c.total(), 36);
        assert_eq!(c.busy(), 36 - 4 - 5);
        assert!(parse_proc_stat(t, 2).is_none());
        let later = CpuTimes {
            softirq: 17,
            ..c.clone()
        };
        assert!((later.busy_fraction_since(&c) - 1.0).abs() < 1e-9);
    }
}
