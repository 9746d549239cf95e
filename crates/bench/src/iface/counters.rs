//! The tester's own drop counters in `ethtool -S`: which of a driver's counters say that the
//! tester, not the DUT, lost or failed to send frames, and whether they rose over a trial.
//!
//! A tester port that misses frames the DUT forwarded (its receive ring full, no buffer, a
//! FIFO overrun) or fails to send what it scheduled says nothing about the DUT: such a trial
//! is tester-limited, measured again, never a DUT figure (docs/methodology.md, "Tester-limited
//! trials"). Which counters count depends on the driver:
//!
//! - **NICs**: names with `missed`, `no_buf` (`rx_no_buffer_count`, `rx_no_bufs`),
//!   `out_of_buffer`, `fifo`, `discard` (`rx_discards_phy`, `port.rx_discards`), `tx_error`,
//!   `tx_timeout`, and per-queue `…_drops` — the drivers' own words for a ring, buffer or FIFO
//!   of this port that overflowed, or a transmit that failed. XDP verdict counters (`xdp` in
//!   the name) do not count: they are what a program decided, and CRC or length errors do not
//!   either: a corrupted frame came off the wire, it was not the tester's doing.
//! - **veth** ([`VETH`]): `rx_queue_N_drops` (this end's receive path failed to build or
//!   redirect a frame it was handed) and `rx_queue_N_xdp_tx_errors` (it failed to send what
//!   an XDP program bounced) count. `rx_queue_N_xdp_drops` does not (our receiver program's
//!   own verdict on frames it had counted), nor `tx_queue_N_xdp_xmit_errors`: those are frames
//!   the *peer* — the DUT's port — refused because its ring was full, which DESIGN.md §7
//!   counts as offered and lost by the DUT (the engine reports them as `refused_by_dut`).
//!   A frame the DUT's kernel forwards into our end while our ring is full is dropped and
//!   counted on the DUT's device, not here: our receive thread's lateness shows as loss, as
//!   on a NIC whose `rx_missed` the test cannot read.
//! - Other virtual drivers (TUN, bridge, …) have no such counters.

use std::collections::BTreeMap;

/// The veth driver's name in `ethtool -i`.
pub const VETH: &str = "veth";

/// `ethtool -S` output as counter name → value; lines that are not `name: number` (the
/// `NIC statistics:` heading) are skipped.
pub fn parse(text: &str) -> BTreeMap<String, u64> {
    text.lines()
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(':')?;
            let v = value.trim().parse::<u64>().ok()?;
            let n = name.trim();
            (!n.is_empty()).then(|| (n.to_string(), v))
        })
        .collect()
}

/// Whether counter `name` of a port with `driver` says the tester lost or failed to send
/// frames (the rules above).
pub fn counts(driver: Option<&str>, name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    if driver == Some(VETH) {
        return n.starts_with("rx_queue_")
            && (n.ends_with("_drops") && !n.ends_with("_xdp_drops")
                || n.ends_with("_xdp_tx_errors"));
    }
    if n.contains("xdp") {
        return false;
    }
    [
        "missed",
        "no_buf",
        "out_of_buffer",
        "fifo",
        "discard",
        "tx_error",
        "tx_timeout",
    ]
    .iter()
    .any(|w| n.contains(w))
        || (n.contains("queue") && n.ends_with("_drops"))
}

/// The counters of `all` that count, in name order.
pub fn counted(driver: Option<&str>, all: &BTreeMap<String, u64>) -> Vec<String> {
    all.keys().filter(|n| counts(driver, n)).cloned().collect()
}

/// How much each of `watched` rose from `before` to `after` (rises only; a counter missing on
/// either side, or that went down — a driver reset — does not count).
pub fn rises(
    watched: &[String],
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> Vec<(String, u64)> {
    watched
        .iter()
        .filter_map(|n| {
            let (b, a) = (before.get(n)?, after.get(n)?);
            (a > b).then(|| (n.clone(), a - b))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const VETH_S: &str = "NIC statistics:
     peer_ifindex: 2
     rx_queue_0_xdp_packets: 1200
     rx_queue_0_xdp_bytes: 76800
     rx_queue_0_drops: 0
     rx_queue_0_xdp_redirect: 0
     rx_queue_0_xdp_drops: 1200
     rx_queue_0_xdp_tx: 0
     rx_queue_0_xdp_tx_errors: 0
     tx_queue_0_xdp_xmit: 5000
     tx_queue_0_xdp_xmit_errors: 7
";

    /// An Intel 82599 (ixgbe) port's counters, abridged.
    const IXGBE_S: &str = "NIC statistics:
     rx_packets: 100
     tx_packets: 100
     rx_errors: 0
     tx_errors: 0
     rx_crc_errors: 3
     rx_missed_errors: 0
     rx_no_buffer_count: 0
     rx_fifo_errors: 0
     tx_fifo_errors: 0
     tx_timeout_count: 0
     rx_queue_0_packets: 100
     rx_queue_0_bytes: 6400
     tx_queue_0_packets: 100
";

    #[test]
    fn parses_ethtool_s() {
        let c = parse(VETH_S);
        assert_eq!(c.get("peer_ifindex"), Some(&2));
        assert_eq!(c.get("tx_queue_0_xdp_xmit_errors"), Some(&7));
        assert!(!c.contains_key("NIC statistics"));
        assert!(parse("garbage\n: 3\nx: -1\n").is_empty());
    }

    #[test]
    fn veth_counts_its_own_receive_failures_not_the_duts_refusals() {
        let c = parse(VETH_S);
        assert_eq!(
            counted(Some(VETH), &c),
            ["rx_queue_0_drops", "rx_queue_0_xdp_tx_errors"]
        );
        assert!(!counts(Some(VETH), "tx_queue_0_xdp_xmit_errors"));
        assert!(!counts(Some(VETH), "rx_queue_0_xdp_drops"));
    }

    #[test]
    fn a_nic_counts_missed_no_buffer_fifo_and_tx_errors() {
        let c = parse(IXGBE_S);
        assert_eq!(
            counted(Some("ixgbe"), &c),
            [
                "rx_fifo_errors",
                "rx_missed_errors",
                "rx_no_buffer_count",
                "tx_errors",
                "tx_fifo_errors",
                "tx_timeout_count"
            ]
        );
        // The wire's errors and the packet counts are not the tester's losses.
        for n in ["rx_crc_errors", "rx_errors", "rx_queue_0_packets"] {
            assert!(!counts(Some("ixgbe"), n), "{n}");
        }
        // Other drivers' words for the same.
        for n in [
            "rx_out_of_buffer",
            "rx_discards_phy",
            "port.rx_discards",
            "rx_queue_3_drops",
        ] {
            assert!(counts(Some("mlx5_core"), n), "{n}");
        }
        assert!(!counts(Some("virtio_net"), "rx_queue_0_xdp_drops"));
    }

    #[test]
    fn any_rise_counts_and_nothing_else() {
        let watched = vec!["rx_missed_errors".to_string(), "tx_errors".to_string()];
        let before = parse(IXGBE_S);
        let mut after = before.clone();
        assert!(rises(&watched, &before, &after).is_empty());
        after.insert("rx_missed_errors".into(), 12);
        after.insert("rx_crc_errors".into(), 99);
        assert_eq!(
            rises(&watched, &before, &after),
            [("rx_missed_errors".to_string(), 12)]
        );
        // A counter that went down (the driver reset it) or vanished is no rise.
        let mut reset = before.clone();
        reset.insert("tx_errors".into(), 0);
        let mut higher = before.clone();
        higher.insert("tx_errors".into(), 5);
        assert!(rises(&watched, &higher, &reset).is_empty());
        assert!(rises(&watched, &before, &BTreeMap::new()).is_empty());
    }
}
