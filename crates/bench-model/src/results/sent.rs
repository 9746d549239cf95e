//! What a UDP trial sent, as configured: the deterministic part of a trial record. The same
//! settings give the same [`SentStream`]s whether the trial came from `wirerate trial` or from
//! a plan's case (`bench::spec` builds both), so comparing them says whether two trials sent
//! the same thing; what was measured (received, latency, achieved rate) differs run to run.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use wire::encap::EncapSpec;
use wire::units::Pps;

/// One engine stream of a UDP trial as it was configured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SentStream {
    /// The signature's stream id.
    pub stream_id: u16,
    /// Sending and receiving port (`a`, `b`).
    pub tx_port: String,
    pub rx_port: String,
    /// The headers of the frames as sent.
    pub encap: EncapSpec,
    /// Reference frame sizes (the plain frame with FCS, as plans and `--size` give them) and
    /// their weights (IMIX: three sizes 7:4:1).
    pub sizes: Vec<u32>,
    pub weights: Vec<u32>,
    /// The frames' lengths as sent, with FCS (the reference size plus the encapsulation).
    pub lengths: Vec<u32>,
    /// The test packet's addresses and UDP ports (the first flow's).
    pub src: IpAddr,
    pub dst: IpAddr,
    pub src_port: u16,
    pub dst_port: u16,
    /// 100 % of this stream: the path-aware line rate of its size, frames/s.
    pub max_pps: Pps,
    /// The rate it was asked to send at, frames/s.
    pub pps: Pps,
    /// Exactly this many frames, or for this long.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frames: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ns: Option<u64>,
    /// Distinct source/destination addresses and ports, and the random seed when they vary
    /// pseudorandomly (RFC 4814).
    pub flows: [u32; 4],
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub random_seed: Option<u64>,
    pub burst: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_gap_ns: Option<u64>,
    pub tos: u8,
}
