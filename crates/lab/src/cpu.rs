//! CPU isolation of the DUT: which CPU the DUT's packet processing runs on, which CPUs the
//! tester may use, and the receive-packet-steering (RPS) masks that make it so.
//!
//! Why: on veth a sender's softirq would otherwise forward the packet through the DUT on the
//! sender's own CPU, so an overloaded DUT slows the tester down instead of dropping (DESIGN.md
//! §8). With RPS on the DUT's ingress veths, every packet entering the DUT is queued to the
//! last CPU's backlog and processed there; when that CPU cannot keep up the backlog overflows
//! and the DUT drops, like a separate box. Tester processes are pinned to the other CPUs.

use std::collections::BTreeSet;

use crate::error::{LabError, Result};

/// Parse a kernel CPU list such as `0-3,6,8-9`.
pub fn parse_cpu_list(s: &str) -> Result<BTreeSet<usize>> {
    let mut set = BTreeSet::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        let bad = || LabError::parse("a CPU list", s.to_string());
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) =
                    (a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?);
                set.extend(a..=b);
            }
            None => {
                set.insert(part.parse().map_err(|_| bad())?);
            }
        }
    }
    Ok(set)
}

/// The online CPUs (from /sys/devices/system/cpu/online).
pub fn online_cpus() -> Result<BTreeSet<usize>> {
    let path = "/sys/devices/system/cpu/online";
    let s =
        std::fs::read_to_string(path).map_err(|e| LabError::io(format!("reading {path}"), e))?;
    parse_cpu_list(&s)
}

/// The CPU reserved for the DUT: the last online CPU, or `None` on a one-CPU machine, where
/// isolation is impossible and skipped.
pub fn dut_cpu() -> Option<usize> {
    let cpus = online_cpus().ok()?;
    if cpus.len() < 2 {
        return None;
    }
    cpus.last().copied()
}

/// The CPUs the tester (traffic generators, iperf3 clients, captures) should run on: every
/// online CPU except [`dut_cpu`]. On a one-CPU machine, that one CPU.
pub fn tester_cpus() -> Vec<usize> {
    let cpus = online_cpus().unwrap_or_else(|_| BTreeSet::from([0]));
    match dut_cpu() {
        Some(d) => cpus.into_iter().filter(|&c| c != d).collect(),
        None => cpus.into_iter().collect(),
    }
}

/// Format a CPU set the way `rps_cpus` expects: comma-separated 32-bit hex groups, most
/// significant first (e.g. CPU 1 → `2`, CPU 33 → `2,00000000`).
pub fn rps_mask(cpus: &[usize]) -> String {
    let max = cpus.iter().copied().max().unwrap_or(0);
    let groups = max / 32 + 1;
    let mut words = vec![0u32; groups];
    for &c in cpus {
        words[c / 32] |= 1 << (c % 32);
    }
    let mut out = String::new();
    for (i, w) in words.iter().rev().enumerate() {
        if i == 0 {
            out.push_str(&format!("{w:x}"));
        } else {
            out.push_str(&format!(",{w:08x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        let s = parse_cpu_list("0-3,6,8-9\n").unwrap();
        assert_eq!(s.into_iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 6, 8, 9]);
        assert!(parse_cpu_list("x").is_err());
    }

    #[test]
    fn rps_masks() {
        assert_eq!(rps_mask(&[1]), "2");
        assert_eq!(rps_mask(&[0]), "1");
        assert_eq!(rps_mask(&[0, 1, 2, 3]), "f");
        assert_eq!(rps_mask(&[33]), "2,00000000");
        assert_eq!(rps_mask(&[0, 32]), "1,00000001");
    }

    #[test]
    fn dut_and_tester_cpus_are_disjoint() {
        if let Some(d) = dut_cpu() {
            assert!(!tester_cpus().contains(&d));
            assert!(!tester_cpus().is_empty());
        }
    }
}
