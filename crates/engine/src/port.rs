//! A port: one tester attachment (an interface, maybe inside a network namespace).
//!
//! Sockets are opened *inside* the port's namespace by the thread that will use them: the
//! worker thread calls [`PortSpec::enter`] (setns for that thread only, plus CPU pinning) and
//! then opens its ring. The process's other threads stay in the host namespace.

use crate::sys::{self, PacketSocket, RxRing, TxRing, ETH_P_ALL};
use crate::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Where a port is and how it is addressed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PortSpec {
    /// A short label for reports ("a", "b", ...).
    pub name: String,
    pub ifname: String,
    /// Network namespace: a name under /run/netns, or a path (`/proc/PID/ns/net`); `None` for
    /// the caller's own.
    pub netns: Option<String>,
    /// The tester's own addresses on this port (answered for ARP/ND).
    pub ipv4: Option<Ipv4Addr>,
    pub ipv6: Option<Ipv6Addr>,
    /// The L2 next hop whose MAC is resolved before sending (the DUT's interface, or the
    /// other port in a direct topology).
    pub next_hop_v4: Option<Ipv4Addr>,
    pub next_hop_v6: Option<Ipv6Addr>,
    /// CPUs to pin this port's threads to (empty = no pinning).
    pub cpus: Vec<usize>,
    /// This port is a veth whose peer *is* the DUT's port (the lab's forward and endpoint
    /// topologies). A frame the peer refuses (its receive queue full) was then handed to the
    /// DUT and lost there, as a frame on a cable whose receiver's ring is full: it counts as
    /// sent and as refused by the DUT, not as the tester's shortfall. On a real NIC, or a veth
    /// to the tester's own port, a refused frame stays the tester's (DESIGN.md §7).
    pub faces_dut: bool,
    /// How an XDP receiver attaches to this port; `None`: natively, falling back to SKB mode.
    ///
    /// A veth's native XDP program runs in the veth's receive poll, and that poll runs on the
    /// CPU that *transmitted* into it. For a lab port facing a kernel DUT, that is the DUT's
    /// CPU: it would pay the tester's receive work (turning each forwarded skb into an XDP
    /// buffer, the program, returning the pages). In SKB mode the skb is queued by receive
    /// packet steering to the tester's CPU, and the program runs there (docs/lab.md, "CPU
    /// isolation"). The lab sets it (`bench::trial::lab_port`).
    pub xdp_rx_mode: Option<crate::xdp::mode::XdpMode>,
}

impl PortSpec {
    /// A port on `ifname` in the caller's namespace, without addresses.
    pub fn new(name: &str, ifname: &str) -> Self {
        PortSpec {
            name: name.into(),
            ifname: ifname.into(),
            netns: None,
            ipv4: None,
            ipv6: None,
            next_hop_v4: None,
            next_hop_v6: None,
            cpus: Vec::new(),
            faces_dut: false,
            xdp_rx_mode: None,
        }
    }

    /// Moves the calling thread into the port's namespace, pins it to the port's CPU for
    /// `role` (`role % cpus.len()`), and returns the interface index there.
    pub fn enter(&self, role: usize) -> Result<u32> {
        if let Some(ns) = &self.netns {
            let path = if ns.contains('/') {
                ns.clone()
            } else {
                format!("/run/netns/{ns}")
            };
            let f = File::open(&path).map_err(|e| Error::io(format!("opening netns {path}"), e))?;
            sys::enter_netns(&f).map_err(|e| Error::io(format!("entering netns {path}"), e))?;
        }
        // Best effort: a higher scheduling weight than ordinary work on a shared machine.
        let _ = sys::set_thread_nice(-10);
        if !self.cpus.is_empty() {
            let cpu = self.cpus[role % self.cpus.len()];
            sys::pin_to_cpu(cpu).map_err(|e| Error::io(format!("pinning to CPU {cpu}"), e))?;
        }
        sys::ifindex(&self.ifname).map_err(|e| {
            Error::io(
                format!("interface {} of port {}", self.ifname, self.name),
                e,
            )
        })
    }

    /// A plain socket on the port (call from a thread that has [`entered`](Self::enter) it).
    pub fn open_socket(&self, ifindex: u32) -> Result<PacketSocket> {
        PacketSocket::open(ifindex, ETH_P_ALL).map_err(|e| {
            Error::io(
                format!("AF_PACKET socket on {} (are you root?)", self.ifname),
                e,
            )
        })
    }

    /// A TX ring with qdisc bypass and a large send buffer; on a port that faces the DUT, one
    /// whose refused frames can be withdrawn ([`TxRing::withdraw`]: they are the DUT's loss,
    /// never retried).
    pub fn open_tx(&self, ifindex: u32, cfg: &TxRingConfig) -> Result<TxRing> {
        // Protocol 0: a send-only socket that receives nothing.
        let sock = PacketSocket::open(ifindex, 0).map_err(|e| {
            Error::io(
                format!("AF_PACKET socket on {} (are you root?)", self.ifname),
                e,
            )
        })?;
        sock.set_qdisc_bypass(cfg.qdisc_bypass)
            .map_err(|e| Error::io("PACKET_QDISC_BYPASS", e))?;
        if cfg.sndbuf > 0 {
            sock.set_sndbuf_force(cfg.sndbuf)
                .map_err(|e| Error::io("SO_SNDBUFFORCE", e))?;
        }
        TxRing::new(sock, cfg.frame_size, cfg.frames, self.faces_dut)
            .map_err(|e| Error::io("PACKET_TX_RING", e))
    }

    /// A TPACKET_V3 RX ring that ignores our own outgoing frames.
    pub fn open_rx(&self, ifindex: u32, cfg: &RxRingConfig) -> Result<RxRing> {
        let sock = self.open_socket(ifindex)?;
        sock.set_ignore_outgoing(true)
            .map_err(|e| Error::io("PACKET_IGNORE_OUTGOING", e))?;
        RxRing::new(sock, cfg.block_size, cfg.blocks, cfg.retire_ms)
            .map_err(|e| Error::io("PACKET_RX_RING", e))
    }
}

/// TX ring geometry and socket options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TxRingConfig {
    /// Bytes per slot (frame + 32 bytes of header); 2048 holds a 1518-byte frame.
    pub frame_size: usize,
    pub frames: usize,
    pub qdisc_bypass: bool,
    /// SO_SNDBUFFORCE bytes (0 = leave the default). Every frame in flight is charged to it.
    pub sndbuf: usize,
    /// How frames reach the kernel: this TX ring (default) or `sendmmsg`.
    pub backend: TxBackend,
}

impl TxRingConfig {
    /// The default geometry with slots just large enough for `max_frame_len` bytes: small
    /// slots keep many frames per page, which the kernel's per-frame work likes.
    pub fn sized_for(self, max_frame_len: usize) -> Self {
        let frame_size = (32 + max_frame_len).next_power_of_two().max(128);
        let frames = ((8usize << 20) / frame_size).clamp(1024, 65536);
        TxRingConfig {
            frame_size,
            frames,
            ..self
        }
    }
}

impl Default for TxRingConfig {
    fn default() -> Self {
        TxRingConfig {
            frame_size: 2048,
            frames: 4096,
            qdisc_bypass: true,
            sndbuf: 64 << 20,
            backend: TxBackend::default(),
        }
    }
}

/// RX ring geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RxRingConfig {
    pub block_size: usize,
    pub blocks: usize,
    /// A partly filled block is handed over after this many milliseconds.
    pub retire_ms: u32,
}

impl Default for RxRingConfig {
    fn default() -> Self {
        RxRingConfig {
            block_size: 1 << 20,
            blocks: 64,
            retire_ms: 2,
        }
    }
}

/// How a port hands frames to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TxBackend {
    /// `PACKET_TX_RING` (TPACKET_V2) with linear skbs, qdisc bypass: the default, the faster
    /// of the two on veth (docs/engine.md, "Measured figures").
    #[default]
    Ring,
    /// `sendmmsg` from a reused buffer pool, qdisc bypass.
    Sendmmsg,
}

impl TxBackend {
    pub fn name(self) -> &'static str {
        match self {
            TxBackend::Sendmmsg => "sendmmsg",
            TxBackend::Ring => "ring",
        }
    }
}

impl std::str::FromStr for TxBackend {
    type Err = crate::unknown::UnknownName;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "sendmmsg" | "mmsg" => Ok(TxBackend::Sendmmsg),
            "ring" | "tx-ring" => Ok(TxBackend::Ring),
            _ => Err(crate::unknown::UnknownName::new(
                "TX backend",
                s,
                "sendmmsg, ring",
            )),
        }
    }
}
