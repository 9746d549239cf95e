//! The dimensions of the matrix: a `[[matrix]]` block's values per dimension ([`Matrix`])
//! and the types of those values that are the plan's own ([`Protocol`]).

use std::fmt;

use serde::{Deserialize, Serialize};
use wire::encap::IpVersion;

use super::methodology::Methodology;

/// L4 protocol of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// TCP (iperf3).
    Tcp,
    /// UDP (packet engine or iperf3).
    Udp,
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        })
    }
}

/// One `[[matrix]]` block: a cartesian product of dimensions and the methodologies to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    /// Optional label.
    pub name: Option<String>,
    /// Line of the block in the plan (for errors found during expansion).
    pub line: usize,
    /// Protocols.
    pub protocol: Vec<Protocol>,
    /// IP versions.
    pub ip: Vec<IpVersion>,
    /// UDP frame sizes (reference frame, with FCS).
    pub frame_size: Vec<u32>,
    /// `"imix"` among the frame sizes: one more case per position, sending the simple IMIX
    /// (7 × 64, 4 × 594, 1 × 1518 B), as `wirerate trial --size imix`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub imix: bool,
    /// TCP parallel sessions.
    pub sessions: Vec<u32>,
    /// TCP MSS values (`-M`); empty = iperf3's default.
    pub mss: Vec<u32>,
    /// Profiles (all when the plan omits the key).
    pub profile: Vec<String>,
    /// User-defined dimensions, handed to hooks as `WR_<NAME>` variables.
    pub vars: Vec<(String, Vec<String>)>,
    /// Methodologies per case.
    pub methodologies: Vec<Methodology>,
    /// Encapsulations of the test frames on the far link (`encap` key; the IP version comes
    /// from `ip`). Empty: the key is absent and frames are plain (no `encap=` in case ids).
    #[serde(default)]
    pub encap: Vec<wire::encap::EncapSpec>,
    /// UDP trials send A→B and B→A at once, each at the search's load (RFC 2544 §14).
    #[serde(default)]
    pub bidirectional: bool,
    /// The DUT's segmentation offloads (GRO/GSO/TSO) off and/or on, as a dimension (`offload`
    /// key). Empty: the key is absent (the lab DUT keeps them off; a real DUT as it is).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub offload: Vec<bool>,
    /// The DUT's fast path off and/or on, as a dimension (`fastpath` key). Empty: absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fastpath: Vec<bool>,
    /// Flows per UDP stream, as a dimension (`flows` key): that many distinct UDP source
    /// ports (`run.src-ports` per case). Empty: absent (`[run]`'s counts).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flows: Vec<u16>,
    /// The ToS / traffic class byte of UDP test frames, as a dimension (`tos` key; overrides
    /// `run.tos`). Empty: absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tos: Vec<u8>,
}
