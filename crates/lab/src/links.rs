//! Wire-like links: a veth has no speed of its own and moves 64 KB segments as one packet, so a
//! TCP test through the lab would measure the kernel's memory bandwidth, not a device on a
//! cable. Two switches make the lab's links behave like cables of the plan's reference speed:
//!
//! - **The tester ports' egress is shaped to the line rate** ([`Lab::set_wire_speed`]): a `tbf`
//!   qdisc on each tester port (`wr-a`, `wr-b`) that charges every frame its wire cost — the
//!   frame with FCS plus preamble, SFD and inter-frame gap (`overhead 24`, since the kernel's
//!   length includes the 14-byte header but not the 4-byte FCS) and at least 84 bytes
//!   (`mpu 84`, a 64-byte frame's wire cost). Segmentation offloads (TSO/GSO) are turned off on
//!   those ports, so the qdisc sees the frames a wire would carry, not 64 KB super-packets.
//!   Only traffic of the kernel's own stack goes through it (iperf3, ARP/ND): the engine sends
//!   with qdisc bypass (AF_PACKET) or from XDP, paced by its own schedule and never faster than
//!   the line rate, a catch-up after a stall included (`engine::stream::StreamConfig::
//!   link_l1_bps`), so the shaper never stands between the engine and the DUT.
//! - **The DUT's offloads are off unless asked for** ([`Lab::set_dut_offload`]): off means GRO
//!   merges nothing on the DUT's ports (`gro_max_size 0`; GRO itself stays enabled because a
//!   veth without NAPI refuses the frames the engine's XDP backend transmits) and TSO/GSO are
//!   off, so the DUT pays its per-packet cost for every MSS-sized segment as a device without
//!   offloads does. On means GRO up to 64 KB and TSO/GSO on, like a NIC with LRO/GRO and TSO.
//!
//! docs/lab.md has the measurements (what the shaper costs, how it was verified).

use serde::{Deserialize, Serialize};

use crate::cmd;
use crate::error::{LabError, Result};
use crate::lab::Lab;
use crate::topology::{self, Node};

/// Bytes a frame costs on the wire beyond what the kernel counts for it: FCS (4) + preamble
/// and SFD (8) + inter-frame gap (12).
pub const WIRE_OVERHEAD: u32 = 24;

/// The smallest wire cost of a frame: 64 bytes with FCS + 20.
pub const WIRE_MIN: u32 = 84;

/// `gro_max_size` that lets GRO build 64 KB packets (the kernel's default).
const GRO_DEFAULT: u32 = 65_536;

/// Lowest shaped speed accepted: below 1 Mb/s a single 1518-byte frame takes over 12 ms.
pub const MIN_WIRE_BPS: u64 = 1_000_000;

/// Highest: 400 Gb/s, beyond any port this lab stands in for.
pub const MAX_WIRE_BPS: u64 = 400_000_000_000;

/// How the lab's links are set, as `lab status` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkState {
    /// Line rate the tester ports are shaped to, bits/s; `None` when not shaped.
    pub wire_bps: Option<u64>,
    /// Whether the DUT's segmentation offloads are on (`None` without a DUT).
    pub dut_offload: Option<bool>,
}

/// The token bucket for `bps`. The wire cost is charged by tbf's own rate table (`overhead`,
/// `mpu`: exact per byte) rather than a size table (`stab`), through which TCP measured
/// 100.2–100.3 % of line rate (cause not pinned down; its 4-byte cells are one candidate). Burst: two full frames or 250 µs at the
/// rate, whichever is more — smaller buckets lose tokens to the VM's timer slack (6 KB at
/// 1 Gb/s: 98.3 %; 3 KB: 73.5 %), and tokens accrue at the rate, so over a measured window the
/// bucket adds at most one burst. Queue: 5 ms, like a switch port's buffer.
fn tbf_args(bps: u64) -> Vec<String> {
    let burst = (bps / 8 / 4_000).max(2 * 1538);
    [
        "tbf",
        "rate",
        &format!("{bps}bit"),
        "burst",
        &burst.to_string(),
        "latency",
        "5ms",
        "overhead",
        &WIRE_OVERHEAD.to_string(),
        "mpu",
        &WIRE_MIN.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn ethtool_k(ns: &str, ifname: &str, on: bool, features: &[&str]) -> Result<()> {
    let value = if on { "on" } else { "off" };
    let mut argv = vec!["ip", "netns", "exec", ns, "ethtool", "-K", ifname];
    for f in features {
        argv.push(f);
        argv.push(value);
    }
    cmd::run(&argv).map(drop)
}

impl Lab {
    /// The tester ports (nodes A and B), as (namespace, interface).
    fn tester_ports(&self) -> Result<Vec<(String, &'static str)>> {
        topology::ifaces(self.topology())
            .into_iter()
            .filter(|i| i.node != Node::Dut)
            .map(|i| Ok((self.netns(i.node)?, i.ifname)))
            .collect()
    }

    /// Shape every tester port's egress to `bps` bits/s of line rate (L1, see the module
    /// doc), or remove the shaping with `None`. Idempotent.
    pub fn set_wire_speed(&self, bps: Option<u64>) -> Result<()> {
        if let Some(b) = bps {
            if !(MIN_WIRE_BPS..=MAX_WIRE_BPS).contains(&b) {
                return Err(LabError::InvalidSpeed {
                    bps: b,
                    min: MIN_WIRE_BPS,
                    max: MAX_WIRE_BPS,
                });
            }
        }
        for (ns, ifname) in self.tester_ports()? {
            match bps {
                Some(b) => {
                    ethtool_k(&ns, ifname, false, &["tso", "gso"])?;
                    let mut argv: Vec<String> = ["ip", "netns", "exec", &ns, "tc", "qdisc"]
                        .iter()
                        .map(|s| s.to_string())
                        .collect();
                    argv.extend(
                        ["replace", "dev", ifname, "root", "handle", "1:"].map(String::from),
                    );
                    argv.extend(tbf_args(b));
                    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
                    cmd::run(&argv)?;
                }
                None => {
                    // Deleting the root qdisc puts the default back; none there is fine.
                    let _ = cmd::run(&[
                        "ip", "netns", "exec", &ns, "tc", "qdisc", "del", "dev", ifname, "root",
                    ]);
                    ethtool_k(&ns, ifname, true, &["tso", "gso"])?;
                }
            }
        }
        Ok(())
    }

    /// Turn the DUT's segmentation offloads on or off (see the module doc). Without a DUT
    /// (the direct topology) there is nothing to switch: an error says so.
    pub fn set_dut_offload(&self, on: bool) -> Result<()> {
        let ns = self.netns(Node::Dut)?;
        let gro = if on { GRO_DEFAULT } else { 0 }.to_string();
        for i in topology::dut_ifaces(self.topology()) {
            // `gro_max_size` also sets the IPv4 limit when it is at most 64 KB (the kernel's
            // netif_set_gro_max_size), which iproute2 6.1 cannot name on its own.
            cmd::run(&[
                "ip",
                "-n",
                &ns,
                "link",
                "set",
                "dev",
                i.ifname,
                "gro_max_size",
                &gro,
            ])?;
            ethtool_k(&ns, i.ifname, on, &["tso", "gso"])?;
        }
        Ok(())
    }

    /// How the links are set now, read from the kernel.
    pub fn link_state(&self) -> Result<LinkState> {
        let mut wire_bps = None;
        if let Some((ns, ifname)) = self.tester_ports()?.into_iter().next() {
            let out = cmd::run(&[
                "ip", "netns", "exec", &ns, "tc", "-j", "qdisc", "show", "dev", ifname,
            ])?;
            wire_bps = parse_tbf_rate(&out);
        }
        let dut_offload = match self.topology().has(Node::Dut) {
            true => {
                let ns = self.netns(Node::Dut)?;
                let i = topology::dut_ifaces(self.topology())
                    .into_iter()
                    .next()
                    .map(|i| i.ifname)
                    .unwrap_or("wr-dut-a");
                let out = cmd::run(&["ip", "-n", &ns, "-d", "-j", "link", "show", "dev", i])?;
                parse_gro_max_size(&out).map(|g| g > 0)
            }
            false => None,
        };
        Ok(LinkState {
            wire_bps,
            dut_offload,
        })
    }
}

/// The rate of a root `tbf` in `tc -j qdisc show` output, bits/s.
fn parse_tbf_rate(json: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v.as_array()?
        .iter()
        .find(|q| q["kind"] == "tbf" && q["root"] == true)
        .and_then(|q| q["options"]["rate"].as_u64())
        .map(|bytes_per_sec| bytes_per_sec * 8)
}

/// `gro_max_size` of the first link in `ip -d -j link show` output.
fn parse_gro_max_size(json: &str) -> Option<u64> {
    let v: serde_json::Value = serde_json::from_str(json).ok()?;
    v.get(0)?.get("gro_max_size")?.as_u64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_bucket_charges_the_wire_cost_and_holds_two_frames() {
        let a = tbf_args(1_000_000_000).join(" ");
        assert_eq!(
            a,
            "tbf rate 1000000000bit burst 31250 latency 5ms overhead 24 mpu 84"
        );
        // Slow links still hold two full frames.
        assert!(tbf_args(10_000_000).join(" ").contains("burst 3076 "));
    }

    #[test]
    fn kernel_output_is_read_back() {
        // As printed by iproute2 6.1 (`tc -j qdisc show`): the rate in bytes/s.
        let tc = r#"[{"kind":"tbf","handle":"1:","root":true,"refcnt":3,"options":{"rate":125000000,"burst":12500,"lat":5000}}]"#;
        assert_eq!(parse_tbf_rate(tc), Some(1_000_000_000));
        assert_eq!(parse_tbf_rate(r#"[{"kind":"noqueue","root":true}]"#), None);
        assert_eq!(parse_tbf_rate("not json"), None);
        let ip = r#"[{"ifname":"wr-dut-a","gro_max_size":0,"gso_max_size":65536}]"#;
        assert_eq!(parse_gro_max_size(ip), Some(0));
        assert_eq!(parse_gro_max_size("[]"), None);
    }
}
