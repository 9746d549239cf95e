//! What the tester knows of the link under each of its real ports, and what that means for a
//! figure: the port's wire speed (or that it has none), the offloads that change what the
//! kernel counts, and which of the port's own counters say the tester lost frames.
//!
//! The preflight of a run on real interfaces reads these facts (`bench::iface`), refuses a
//! link slower than the plan's `speed`, and records them in `run.json`
//! ([`crate::results::RunFacts::links`]). A figure above 100 % of line rate cannot have crossed
//! a wire of that speed: the report labels it ([`AboveLine`]) instead of calling it `ok`. On a
//! port without a wire (a veth, a TUN) the plan's `speed` is only the reference the
//! arithmetic uses, and a kernel moving 64 KB segments between namespaces easily reports ten
//! times it (issue 33: TCP at 11.38 Gb/s read "1138.59 % line, ok" on veths called `1G`).

use serde::{Deserialize, Serialize};
use wire::units::BitsPerSec;

/// A port's wire speed, as the host reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum WireSpeed {
    /// A physical link at this speed, bits/s.
    Known {
        /// Bits per second.
        bps: f64,
    },
    /// No wire speed: a virtual interface, or a driver that reports none.
    Unknown {
        /// Why, in a reader's words.
        why: String,
    },
}

/// Drivers of interfaces that have no wire of their own, whatever speed they report (a veth
/// says 10,000 Mb/s, a TUN 10 Mb/s: constants of their drivers).
pub const VIRTUAL_DRIVERS: [&str; 8] = [
    "veth", "tun", "bridge", "dummy", "macvlan", "ipvlan", "vxlan", "bonding",
];

impl WireSpeed {
    /// The wire speed from what sysfs says about an interface: `speed` is the text of
    /// `/sys/class/net/IF/speed` in Mb/s (`None` when it could not be read: the kernel answers
    /// EINVAL for a link that is down or a driver without a speed), `virtual_driver` the
    /// driver of an interface without a `device` of its own (`/sys/class/net/IF/device` is
    /// missing for veths, TUNs, bridges): such an interface has no wire, whatever its driver
    /// reports.
    pub fn from_sysfs(speed: Option<&str>, virtual_driver: Option<&str>) -> WireSpeed {
        let mbps = speed.and_then(|s| s.trim().parse::<i64>().ok());
        if let Some(driver) = virtual_driver {
            let reported = match mbps {
                Some(m) if m > 0 => format!("its driver reports a nominal {m} Mb/s"),
                _ => "its driver reports no speed".to_string(),
            };
            return WireSpeed::Unknown {
                why: format!("a virtual interface ({driver}) has no wire; {reported}"),
            };
        }
        match mbps {
            Some(m) if m > 0 => WireSpeed::Known {
                bps: m as f64 * 1e6,
            },
            Some(_) => WireSpeed::Unknown {
                why: "the driver reports no link speed (-1: unknown, or the link is down)".into(),
            },
            None => WireSpeed::Unknown {
                why: "the link speed cannot be read (the link is down, or the driver has none)"
                    .into(),
            },
        }
    }

    /// Bits per second, for a known speed.
    pub fn bps(&self) -> Option<f64> {
        match self {
            WireSpeed::Known { bps } => Some(*bps),
            WireSpeed::Unknown { .. } => None,
        }
    }

    /// Why a port on this link cannot run at `plan` (its `speed`): a known wire speed below
    /// it, with both figures. `None` when it can, or when the speed is unknown (said once at
    /// the start of the run instead, and figures above line rate are labelled).
    pub fn refusal(&self, plan: BitsPerSec) -> Option<String> {
        let bps = self.bps()?;
        // Within a part per million: the same speed spelled two ways.
        (bps < plan.0 * (1.0 - 1e-6)).then(|| {
            format!(
                "the link runs at {}, below the plan's speed {}: every load would be a fraction of a rate this wire cannot carry; set `speed = \"{}\"` for this port, or bring the link up at {} (`ethtool IF`)",
                speed_text(bps),
                speed_text(plan.0),
                speed_value(bps),
                speed_text(plan.0)
            )
        })
    }
}

/// A speed for a reader: `1 Gb/s`, `2.5 Gb/s`, `100 Mb/s`.
pub fn speed_text(bps: f64) -> String {
    let v = speed_value(bps);
    let (n, unit) = v.split_at(v.len() - 1);
    format!("{n} {unit}b/s")
}

/// A speed as a plan writes it (`wire::linerate::parse_speed` reads it back): `1G`, `2.5G`,
/// `100M`.
pub fn speed_value(bps: f64) -> String {
    let (v, unit) = if bps >= 1e9 {
        (bps / 1e9, "G")
    } else if bps >= 1e6 {
        (bps / 1e6, "M")
    } else {
        (bps / 1e3, "k")
    };
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}{unit}")
}

/// One offload of a tester port as `ethtool -k` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Offload {
    /// `ethtool -k`'s name (`generic-receive-offload`).
    pub name: String,
    /// On or off.
    pub on: bool,
}

/// The link under one of the plan's real ports, as the preflight found it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortLink {
    /// The plan's port name.
    pub port: String,
    /// Interface name.
    pub interface: String,
    /// Its namespace, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Its driver (`ethtool -i`), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Its wire speed.
    pub wire: WireSpeed,
    /// Segmentation and receive offloads (GRO, GSO, TSO, LRO) as they were: with them on, the
    /// kernel counts 64 KB segments where a wire carries frames.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offloads: Vec<Offload>,
    /// The port's own drop counters (`ethtool -S`) read around every UDP trial: any rise
    /// makes the trial tester-limited (`bench::iface::counters` says which count).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tester_counters: Vec<String>,
}

impl PortLink {
    /// `lan (enp1s0 in wr-lan)`.
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} ({} in {ns})", self.port, self.interface),
            None => format!("{} ({})", self.port, self.interface),
        }
    }
}

/// A figure above 100 % of line rate, which no wire of that speed carries: what it is instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum AboveLine {
    /// A port of the run has no wire speed (a veth, a TUN): the plan's `speed` is only a
    /// reference, and nothing limits the figure to it.
    #[serde(rename = "no wire speed on this port")]
    NoWireSpeed,
    /// Every port has a wire (or the lab shapes its links to the plan's speed), yet the figure
    /// is above what it carries: counted above the wire (a TCP figure of iperf3's own, with
    /// segmentation offloads), not a rate the link carried.
    #[serde(rename = "above line rate")]
    AboveWireSpeed,
}

/// The percentage of line rate above which a figure is labelled: above 100 % as reports print
/// it (two decimals), so 100.00 % stays a line-rate figure.
pub const ABOVE_LINE_PERCENT: f64 = 100.005;

impl AboveLine {
    /// The label of a figure at `percent` of line rate in a run whose real ports are `links`
    /// (empty for a lab run: its links are shaped to the plan's speed); `None` at or below
    /// 100 %.
    pub fn of(percent: f64, links: &[PortLink]) -> Option<AboveLine> {
        if percent.is_nan() || percent < ABOVE_LINE_PERCENT {
            return None;
        }
        Some(
            if links
                .iter()
                .any(|l| matches!(l.wire, WireSpeed::Unknown { .. }))
            {
                AboveLine::NoWireSpeed
            } else {
                AboveLine::AboveWireSpeed
            },
        )
    }

    /// The words a report's status column shows.
    pub fn label(self) -> &'static str {
        match self {
            AboveLine::NoWireSpeed => "no wire speed on this port",
            AboveLine::AboveWireSpeed => "above line rate",
        }
    }

    /// What a reader must know, once per run, when a figure carries this label.
    pub fn note(self) -> &'static str {
        match self {
            AboveLine::NoWireSpeed => "no wire speed on this port: a port of this run has no wire (a veth, a TUN; run.json's facts.links says which and why), so the plan's speed is only the reference of the line-rate arithmetic, and figures above 100 % of it are what the kernel moved between namespaces, not a rate a cable of that speed carries; shape the links, or measure on NICs",
            AboveLine::AboveWireSpeed => "above line rate: a figure above 100 % of line rate was counted above the wire (iperf3's own TCP figure, with segmentation offloads), not a rate the link carried",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(wire: WireSpeed) -> PortLink {
        PortLink {
            port: "lan".into(),
            interface: "enp1s0".into(),
            namespace: None,
            driver: None,
            wire,
            offloads: Vec::new(),
            tester_counters: Vec::new(),
        }
    }

    #[test]
    fn sysfs_speed_known_unknown_and_virtual() {
        assert_eq!(
            WireSpeed::from_sysfs(Some("1000\n"), None),
            WireSpeed::Known { bps: 1e9 }
        );
        assert_eq!(WireSpeed::from_sysfs(Some("2500"), None).bps(), Some(2.5e9));
        // A NIC whose driver reports no speed, or whose link is down (EINVAL on read).
        for (text, says) in [
            (Some("-1"), "-1"),
            (None, "cannot be read"),
            (Some("x"), "cannot"),
        ] {
            match WireSpeed::from_sysfs(text, None) {
                WireSpeed::Unknown { why } => assert!(why.contains(says), "{why}"),
                k => panic!("{k:?}"),
            }
        }
        // A veth reports 10,000 Mb/s, a TUN 10: neither has a wire.
        match WireSpeed::from_sysfs(Some("10000"), Some("veth")) {
            WireSpeed::Unknown { why } => {
                assert!(why.contains("virtual interface (veth)"), "{why}");
                assert!(why.contains("nominal 10000 Mb/s"), "{why}");
            }
            k => panic!("{k:?}"),
        }
        assert!(WireSpeed::from_sysfs(None, Some("tun")).bps().is_none());
    }

    #[test]
    fn a_link_slower_than_the_plan_is_refused_with_both_figures() {
        let plan = BitsPerSec(1e9);
        let slow = WireSpeed::Known { bps: 1e8 };
        let why = slow.refusal(plan).unwrap();
        assert!(why.contains("100 Mb/s"), "{why}");
        assert!(why.contains("1 Gb/s"), "{why}");
        assert!(why.contains("speed = \"100M\""), "{why}");
        assert_eq!(WireSpeed::Known { bps: 1e9 }.refusal(plan), None);
        assert_eq!(WireSpeed::Known { bps: 1e10 }.refusal(plan), None);
        let unknown = WireSpeed::Unknown { why: "veth".into() };
        assert_eq!(unknown.refusal(plan), None);
        assert_eq!(speed_value(2.5e9), "2.5G");
        assert_eq!(speed_text(1e10), "10 Gb/s");
    }

    #[test]
    fn figures_above_line_rate_are_labelled_never_ok() {
        let veth = [link(WireSpeed::Unknown { why: "veth".into() })];
        let nic = [link(WireSpeed::Known { bps: 1e9 })];
        assert_eq!(AboveLine::of(1138.59, &veth), Some(AboveLine::NoWireSpeed));
        assert_eq!(AboveLine::of(100.01, &veth), Some(AboveLine::NoWireSpeed));
        assert_eq!(AboveLine::of(100.0, &veth), None);
        assert_eq!(AboveLine::of(99.2, &veth), None);
        assert_eq!(AboveLine::of(101.0, &nic), Some(AboveLine::AboveWireSpeed));
        assert_eq!(AboveLine::of(101.0, &[]), Some(AboveLine::AboveWireSpeed));
        assert_eq!(AboveLine::of(f64::NAN, &veth), None);
        assert_eq!(AboveLine::NoWireSpeed.label(), "no wire speed on this port");
        assert_eq!(
            serde_json::to_string(&AboveLine::NoWireSpeed).unwrap(),
            "\"no wire speed on this port\""
        );
    }
}
