//! What a trial runs: its ports, streams and settings ([`TrialConfig`]), and which engine
//! runs it ([`Backend`]). Shared by the AF_PACKET side ([`super`]) and the XDP side
//! ([`crate::xdp::trial`]), so neither imports the other for it.

use crate::port::{PortSpec, RxRingConfig, TxRingConfig};
use crate::stream::StreamConfig;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use wire::units::BitsPerSec;

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
    type Err = crate::unknown::UnknownName;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "auto" => Ok(Backend::Auto),
            "af_packet" | "af-packet" | "afpacket" | "packet" => Ok(Backend::AfPacket),
            "xdp" => Ok(Backend::Xdp),
            _ => Err(crate::unknown::UnknownName::new(
                "backend",
                s,
                "auto, af_packet, xdp",
            )),
        }
    }
}

/// Most transmit or receive threads per port.
pub const MAX_THREADS: usize = 16;

#[derive(Debug, Clone)]
pub struct TrialConfig {
    pub ports: Vec<PortSpec>,
    pub streams: Vec<TrialStream>,
    /// How long receivers keep counting after the last frame was sent, at most: they stop as
    /// soon as they have counted every frame sent (`trial::drain`).
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

    /// The streams as their senders pace them: a port is one link, however many streams
    /// leave by it, so where several paced streams share a sending port each gets the part of
    /// its [`link_l1_bps`](StreamConfig::link_l1_bps) that its own average bit rate (L1) is of
    /// the port's total. A catch-up after a stall, which all streams of a thread make at
    /// once, then leaves the port no faster than the link together (each stream's pacer
    /// alone would allow the whole link). A stream alone on its port, or unpaced, keeps its
    /// link as configured; in the order of [`streams`](Self::streams).
    pub fn paced_streams(&self) -> Vec<StreamConfig> {
        let totals = self.port_l1_totals();
        self.streams
            .iter()
            .map(|s| {
                let own = paced_l1_bps(&s.config);
                let port_total = totals.get(s.tx_port).copied().unwrap_or(own);
                let mut c = s.config.clone();
                if own.0 > 0.0 && port_total > own {
                    c.link_l1_bps = c.link_l1_bps.map(|link| link * (own.0 / port_total.0));
                }
                c
            })
            .collect()
    }

    /// The sending ports whose paced streams together ask more than the port's link carries:
    /// (port index, their average L1 bits/s together, the link's). A veth carries such a load
    /// (it has no line rate), but no real port of the link's speed could offer it, so a caller
    /// warns. A single stream asked above its link counts too.
    pub fn ports_over_their_link(&self) -> Vec<(usize, BitsPerSec, BitsPerSec)> {
        self.port_l1_totals()
            .into_iter()
            .enumerate()
            .filter_map(|(p, asked)| {
                let link = self
                    .streams
                    .iter()
                    .filter(|s| s.tx_port == p)
                    .filter_map(|s| s.config.link_l1_bps)
                    .fold(BitsPerSec(0.0), |a, b| if b > a { b } else { a });
                (link.0 > 0.0 && asked > link * (1.0 + 1e-9)).then_some((p, asked, link))
            })
            .collect()
    }

    /// Per port (by index), the average L1 bits/s its paced streams with a link send together.
    fn port_l1_totals(&self) -> Vec<BitsPerSec> {
        let mut totals = vec![BitsPerSec(0.0); self.ports.len()];
        for s in &self.streams {
            if let Some(t) = totals.get_mut(s.tx_port) {
                *t += paced_l1_bps(&s.config);
            }
        }
        totals
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

/// A paced stream's average rate in L1 bits/s (preamble, SFD, inter-frame gap and FCS
/// counted), 0 for an unpaced stream or one without a link.
fn paced_l1_bps(c: &StreamConfig) -> BitsPerSec {
    let p = crate::pacing::StreamPacing::for_stream(c, 0);
    if p.unpaced || c.link_pps().is_none() {
        BitsPerSec(0.0)
    } else {
        BitsPerSec(p.intended_pps.0 * (c.avg_len_with_fcs() + 20.0) * 8.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{Limit, Rate};

    fn stream(id: u16, tx_port: usize, size: usize, rate: Rate) -> TrialStream {
        let mut spec = wire::template::StreamSpec::new(wire::encap::EncapSpec::default());
        spec.stream_id = id;
        let frame = wire::template::FrameTemplate::new(&spec, size).unwrap();
        let mut config = StreamConfig::single(id, frame, rate, Limit::Frames(1_000));
        config.link_l1_bps = Some(BitsPerSec(1e9));
        TrialStream {
            config,
            tx_port,
            rx_port: 1 - tx_port,
        }
    }

    fn links(cfg: &TrialConfig) -> Vec<Option<BitsPerSec>> {
        cfg.paced_streams().iter().map(|s| s.link_l1_bps).collect()
    }

    #[test]
    fn streams_of_one_port_share_its_link_by_their_bit_rates() {
        // Port 0: 300 and 100 Mb/s (L1) of 64 B frames; port 1: one stream, alone.
        let cfg = TrialConfig::new(
            vec![PortSpec::new("a", "a0"), PortSpec::new("b", "b0")],
            vec![
                stream(1, 0, 64, Rate::L1Bps(BitsPerSec(300e6))),
                stream(2, 1, 64, Rate::L1Bps(BitsPerSec(500e6))),
                stream(3, 0, 64, Rate::L1Bps(BitsPerSec(100e6))),
            ],
        );
        let l = links(&cfg);
        assert!((l[0].unwrap().0 - 750e6).abs() < 1.0, "{l:?}");
        assert_eq!(
            l[1],
            Some(BitsPerSec(1e9)),
            "a stream alone on its port keeps the link"
        );
        assert!((l[2].unwrap().0 - 250e6).abs() < 1.0, "{l:?}");
        // Shares by bits, not frames: 1518 B frames at the same L1 rate as 64 B ones get the
        // same half, though they are 20 times fewer frames.
        let cfg = TrialConfig::new(
            vec![PortSpec::new("a", "a0")],
            vec![
                stream(1, 0, 64, Rate::L1Bps(BitsPerSec(200e6))),
                stream(2, 0, 1518, Rate::L1Bps(BitsPerSec(200e6))),
            ],
        );
        let l = links(&cfg);
        assert!((l[0].unwrap().0 - 500e6).abs() < 1.0, "{l:?}");
        assert!((l[1].unwrap().0 - 500e6).abs() < 1.0, "{l:?}");
    }

    #[test]
    fn ports_asked_more_than_their_link_are_named() {
        let ports = || vec![PortSpec::new("a", "a0"), PortSpec::new("b", "b0")];
        // 60 + 60 % on port A; 100 % exactly on port B (a search's top load): only A.
        let cfg = TrialConfig::new(
            ports(),
            vec![
                stream(1, 0, 64, Rate::L1Bps(BitsPerSec(600e6))),
                stream(2, 0, 1518, Rate::L1Bps(BitsPerSec(600e6))),
                stream(3, 1, 64, Rate::L1Bps(BitsPerSec(1e9))),
            ],
        );
        let over = cfg.ports_over_their_link();
        assert_eq!(over.len(), 1, "{over:?}");
        let (port, asked, link) = over[0];
        assert_eq!(port, 0);
        assert!((asked.0 - 1.2e9).abs() < 1.0 && link.0 == 1e9, "{over:?}");
        // Within the link together: nothing to say.
        let cfg = TrialConfig::new(
            ports(),
            vec![
                stream(1, 0, 64, Rate::L1Bps(BitsPerSec(500e6))),
                stream(2, 0, 64, Rate::L1Bps(BitsPerSec(500e6))),
            ],
        );
        assert!(cfg.ports_over_their_link().is_empty());
    }

    #[test]
    fn unpaced_and_linkless_streams_take_no_share() {
        let mut linkless = stream(3, 0, 64, Rate::L1Bps(BitsPerSec(400e6)));
        linkless.config.link_l1_bps = None;
        let cfg = TrialConfig::new(
            vec![PortSpec::new("a", "a0")],
            vec![
                stream(1, 0, 64, Rate::L1Bps(BitsPerSec(100e6))),
                stream(2, 0, 64, Rate::Unlimited),
                linkless,
            ],
        );
        // The paced stream with a link is the only one the link is shared by.
        assert_eq!(
            links(&cfg),
            vec![Some(BitsPerSec(1e9)), Some(BitsPerSec(1e9)), None]
        );
        // Everything but the link is the stream's own.
        let paced = cfg.paced_streams();
        assert_eq!(paced[0].id, 1);
        assert_eq!(paced[0].rate, cfg.streams[0].config.rate);
    }
}
