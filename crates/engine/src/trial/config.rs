//! What a trial runs: its ports, streams and settings ([`TrialConfig`]), and which engine
//! runs it ([`Backend`]). Shared by the AF_PACKET side ([`super`]) and the XDP side
//! ([`crate::xdp::trial`]), so neither imports the other for it.

use crate::port::{PortSpec, RxRingConfig, TxRingConfig};
use crate::stream::StreamConfig;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// A stream and the ports it runs between (indexes into [`TrialConfig::ports`]).
#[derive(Debug, Clone)]
pub struct TrialStream {
    pub config: StreamConfig,
    pub tx_port: usize,
    pub rx_port: usize,
}

/// Which packet engine runs a trial's ports (`wirerate trial --backend`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// XDP when the trial fits it and the kernel and driver run it, else AF_PACKET, with the
    /// reason in [`TrialReport::backend_note`] (see [`run`]).
    Auto,
    /// AF_PACKET: TX ring or sendmmsg ([`TxRingConfig::backend`]), TPACKET_V3 receive. The
    /// default: every plan, the runner's search and calibration were validated on it.
    #[default]
    AfPacket,
    /// XDP (issue 8): [`crate::xdp::tx`] sends, [`crate::xdp::rx`] counts in the kernel; an
    /// AF_PACKET socket per port still answers ARP/ND ([`crate::xdp::trial`]).
    Xdp,
}

impl Backend {
    pub fn name(self) -> &'static str {
        match self {
            Backend::Auto => "auto",
            Backend::AfPacket => "af_packet",
            Backend::Xdp => "xdp",
        }
    }
}

impl std::str::FromStr for Backend {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(Backend::Auto),
            "af_packet" | "af-packet" | "afpacket" | "packet" => Ok(Backend::AfPacket),
            "xdp" => Ok(Backend::Xdp),
            _ => Err(format!("unknown backend {s:?} (auto, af_packet, xdp)")),
        }
    }
}

/// Most transmit or receive threads per port.
pub const MAX_THREADS: usize = 16;

#[derive(Debug, Clone)]
pub struct TrialConfig {
    pub ports: Vec<PortSpec>,
    pub streams: Vec<TrialStream>,
    /// How long receivers keep counting after the last frame was sent.
    pub drain: Duration,
    /// Delay between "all senders ready" and the common start instant.
    pub start_delay: Duration,
    pub tx_ring: TxRingConfig,
    pub rx_ring: RxRingConfig,
    /// How long to wait for the next hop to answer ARP/ND.
    pub resolve_timeout: Duration,
    /// The packet engine (default AF_PACKET).
    pub backend: Backend,
    /// Transmit threads per sending port (1..=[`MAX_THREADS`]; at most one per stream).
    pub tx_threads: usize,
    /// Receive threads per port (1..=[`MAX_THREADS`]; at most one per expected stream).
    pub rx_threads: usize,
    /// What the receivers require of a stream's frames when they do not arrive as they were
    /// sent (a DUT that encapsulates or decapsulates PPPoE or DS-Lite on the way), by stream
    /// id. A stream not listed must arrive as [`Expect::of`](crate::validate::Expect::of) its
    /// configuration says (see [`crate::validate`]).
    pub expect: Vec<(u16, crate::validate::Expect)>,
}

impl TrialConfig {
    pub fn new(ports: Vec<PortSpec>, streams: Vec<TrialStream>) -> Self {
        TrialConfig {
            ports,
            streams,
            drain: Duration::from_millis(500),
            start_delay: Duration::from_millis(20),
            tx_ring: TxRingConfig::default(),
            rx_ring: RxRingConfig::default(),
            resolve_timeout: Duration::from_secs(3),
            backend: Backend::AfPacket,
            tx_threads: 1,
            rx_threads: 1,
            expect: Vec::new(),
        }
    }

    /// What the receiver of `s` requires of its frames: the override in
    /// [`expect`](Self::expect), else [`Expect::of`](crate::validate::Expect::of) its config.
    pub fn expect_of(&self, s: &StreamConfig) -> crate::validate::Expect {
        self.expect
            .iter()
            .find(|(id, _)| *id == s.id)
            .map_or_else(|| crate::validate::Expect::of(s), |(_, e)| *e)
    }
}
