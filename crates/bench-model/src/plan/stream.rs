//! What a plan's UDP test streams carry besides their size and load: `wirerate trial`'s stream
//! flags (`--src-ips` … `--random-seed`, `--tos`, `--burst`, `--burst-gap`, `--reorder-every`,
//! `--tx-method`, `--drain`) as `[run]` keys, the defaults of every UDP case. Two of them are
//! also matrix dimensions (`flows`, `tos`: [`super::Case::flows`], [`super::Case::tos`]),
//! because they change what a router does with the same load — a NAT or a stateful firewall
//! with 1 flow is not the one with 10,000, a QoS rule matches on ToS — so one plan compares
//! them. The others change how the tester sends, not what is tested: run-wide settings.
//!
//! `bench::spec::from_plan::udp_spec` is the one place these become a trial.

use core::time::Duration;

use serde::{Deserialize, Serialize};

/// The receivers' drain of a plan's UDP trials unless `run.drain` says otherwise: far longer
/// than any lab or home-gateway queue holds a frame (the lab DUT's backlog of 1,000 frames
/// drains in a few ms); a frame later than this is lost, as RFC 2544 §26.1 asks.
pub const DEFAULT_DRAIN: Duration = Duration::from_millis(100);

/// The longest `run.drain`: receivers wait this long after every trial at most.
pub const MAX_DRAIN: Duration = Duration::from_secs(10);

/// `run.tx-method`: how the AF_PACKET backend hands frames to the kernel (`wirerate trial
/// --tx-method`). The XDP backend has its own send path; `sendmmsg` makes `run.backend =
/// "auto"` run AF_PACKET.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TxMethod {
    /// `PACKET_TX_RING` (the engine's default).
    #[default]
    Ring,
    /// `sendmmsg` from a buffer pool.
    Sendmmsg,
}

impl TxMethod {
    /// Every value with its plan name (`wirerate trial --tx-method`'s).
    pub const ALL: [(&'static str, TxMethod); 2] =
        [("ring", TxMethod::Ring), ("sendmmsg", TxMethod::Sendmmsg)];
}

/// The stream settings of `[run]`, each as `wirerate trial`'s flag of the same name gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct StreamSettings {
    /// Distinct source / destination addresses and UDP ports (`src-ips`, `dst-ips`,
    /// `src-ports`, `dst-ports`; 1 each by default). A block's `flows` dimension gives
    /// `src-ports` per case instead.
    pub src_ips: u32,
    pub dst_ips: u32,
    pub src_ports: u16,
    pub dst_ports: u16,
    /// Vary the flow fields pseudorandomly from this seed (RFC 4814) instead of stepping them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub random_seed: Option<u64>,
    /// IPv4 ToS / IPv6 traffic class byte (a block's `tos` dimension overrides it).
    pub tos: u8,
    /// Frames per burst (1: evenly spaced; more: back to back at the search's average load).
    pub burst: u32,
    /// Idle time after each burst: the burst's frames are paced at the load and the average
    /// is lower (only with `forwarding-rate`; see `parse/stream.rs`).
    #[serde(
        with = "crate::secs_opt",
        skip_serializing_if = "Option::is_none",
        default
    )]
    pub burst_gap: Option<Duration>,
    /// Swap every K-th pair of sequence numbers (K ≥ 2; only with `forwarding-rate`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reorder_every: Option<u64>,
    /// How AF_PACKET sends.
    pub tx_method: TxMethod,
    /// How long receivers keep counting after a trial's last frame.
    #[serde(with = "crate::secs")]
    pub drain: Duration,
}

impl Default for StreamSettings {
    fn default() -> StreamSettings {
        StreamSettings {
            src_ips: 1,
            dst_ips: 1,
            src_ports: 1,
            dst_ports: 1,
            random_seed: None,
            tos: 0,
            burst: 1,
            burst_gap: None,
            reorder_every: None,
            tx_method: TxMethod::Ring,
            drain: DEFAULT_DRAIN,
        }
    }
}

impl StreamSettings {
    /// What differs from one evenly spaced flow with ToS 0, on the ring, drained 100 ms, as
    /// `plan check` prints it (`None` when nothing does): `src-ports 16 (pseudorandom, seed 7),
    /// tos 184, burst 32, drain 2s`.
    pub fn describe(&self) -> Option<String> {
        let d = StreamSettings::default();
        let mut v = Vec::new();
        for (key, n, one) in [
            ("src-ips", self.src_ips, d.src_ips),
            ("dst-ips", self.dst_ips, d.dst_ips),
            (
                "src-ports",
                u32::from(self.src_ports),
                u32::from(d.src_ports),
            ),
            (
                "dst-ports",
                u32::from(self.dst_ports),
                u32::from(d.dst_ports),
            ),
        ] {
            if n != one {
                v.push(format!("{key} {n}"));
            }
        }
        if let Some(seed) = self.random_seed {
            v.push(format!("pseudorandom flow fields (RFC 4814, seed {seed})"));
        }
        if self.tos != d.tos {
            v.push(format!("tos {}", self.tos));
        }
        if self.burst != d.burst {
            v.push(format!("burst {}", self.burst));
        }
        if let Some(g) = self.burst_gap {
            v.push(format!("burst-gap {g:?}"));
        }
        if let Some(k) = self.reorder_every {
            v.push(format!("reorder-every {k}"));
        }
        if self.tx_method != d.tx_method {
            v.push("tx-method sendmmsg".to_string());
        }
        if self.drain != d.drain {
            v.push(format!("drain {:?}", self.drain));
        }
        (!v.is_empty()).then(|| v.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn describe_names_what_differs_from_the_defaults() {
        assert_eq!(StreamSettings::default().describe(), None);
        let s = StreamSettings {
            src_ports: 16,
            random_seed: Some(7),
            tos: 184,
            burst_gap: Some(Duration::from_millis(1)),
            burst: 4,
            drain: Duration::from_secs(2),
            ..StreamSettings::default()
        };
        assert_eq!(
            s.describe().as_deref(),
            Some("src-ports 16, pseudorandom flow fields (RFC 4814, seed 7), tos 184, burst 4, burst-gap 1ms, drain 2s")
        );
    }
}
