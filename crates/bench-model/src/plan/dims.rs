//! The dimensions of the matrix as types: a `[[matrix]]` block's values per dimension
//! ([`Matrix`]) and one case's value of each ([`Dims`]), from the plan to the report's chart.
//! What each dimension's key, syntax, case-id segment, hook variable and report column are is
//! declared once, in [`super::dimension::DIMENSIONS`].

use std::fmt;

use serde::{Deserialize, Serialize};
use wire::encap::{EncapSpec, IpVersion};
use wire::linerate::FrameSize;

use super::methodology::Methodology;

/// L4 protocol of a case.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// TCP (iperf3).
    Tcp,
    /// UDP (packet engine or iperf3); a case id without a protocol reads as UDP.
    #[default]
    Udp,
}

impl Protocol {
    /// As plans, case ids and hook variables write it: `udp`, `tcp`.
    pub fn name(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
        }
    }

    /// As a reader says it: `UDP`, `TCP`.
    pub fn title(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One case's value of every dimension of the matrix. The plan's expansion fills it
/// ([`super::Plan::cases`]), the case id is written from it and read back into it, hooks get
/// it as `WR_*` variables, and the report groups, labels and charts by it: one typed value per
/// dimension all the way, never its text.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Dims {
    /// DUT profile.
    pub profile: String,
    /// Protocol.
    pub protocol: Protocol,
    /// IP version of the test traffic.
    pub ip: IpVersion,
    /// What a UDP case sends: one reference frame size (with FCS) or the IMIX; `None` for TCP.
    pub frame: Option<FrameSize>,
    /// TCP parallel sessions.
    pub sessions: Option<u32>,
    /// TCP MSS (`-M`); `None`: iperf3's default.
    pub mss: Option<u32>,
    /// Encapsulation of the test frames on the far link, with the case's IP version; `None`
    /// when the block has no `encap` key (plain frames, no `encap=` in the case id). The report
    /// sets it to what the trials recorded on the path (`results::UdpFacts::encap`).
    pub encap: Option<EncapSpec>,
    /// UDP trials run A→B and B→A at once (RFC 2544 §14).
    pub bidirectional: bool,
    /// The DUT's segmentation offloads; `None`: not a dimension of this case.
    pub offload: Option<bool>,
    /// The DUT's fast path; `None`: not a dimension of this case.
    pub fastpath: Option<bool>,
    /// Flows (distinct UDP source ports) of a UDP case; `None`: `[run]`'s counts.
    pub flows: Option<u16>,
    /// ToS / traffic class of a UDP case's test frames; `None`: `run.tos`.
    pub tos: Option<u8>,
    /// User dimensions (name, value), handed to hooks as `WR_<NAME>`.
    pub vars: Vec<(String, String)>,
}

impl Dims {
    /// The encapsulation on the far link: the case's own, else the plain frame of its IP
    /// version.
    pub fn encap_or_plain(&self) -> EncapSpec {
        self.encap.unwrap_or(EncapSpec::plain(self.ip))
    }

    /// `frame` as today's records write it: (`frame_size`, `imix`), the bytes of a fixed
    /// size and whether it is the IMIX.
    pub fn frame_fields(frame: Option<FrameSize>) -> (Option<u32>, bool) {
        match frame {
            Some(FrameSize::Fixed { bytes }) => (u32::try_from(bytes).ok(), false),
            Some(FrameSize::Imix) => (None, true),
            None => (None, false),
        }
    }

    /// The frame of records' (`frame_size`, `imix`) fields ([`Dims::frame_fields`]).
    pub fn frame_of_fields(frame_size: Option<u32>, imix: bool) -> Option<FrameSize> {
        if imix {
            return Some(FrameSize::Imix);
        }
        frame_size.map(|b| FrameSize::Fixed { bytes: b as usize })
    }
}

/// One `[[matrix]]` block: per dimension the values to take, and the methodologies to run at
/// each point of their product.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Matrix {
    /// Optional label.
    pub name: Option<String>,
    /// Line of the block in the plan (for errors found during expansion).
    pub line: usize,
    /// Profiles (all when the plan omits the key).
    pub profile: Vec<String>,
    /// Protocols.
    pub protocol: Vec<Protocol>,
    /// IP versions.
    pub ip: Vec<IpVersion>,
    /// UDP frame sizes (reference frame, with FCS), the IMIX (`"imix"`: 7 × 64, 4 × 594,
    /// 1 × 1518 B, as `wirerate trial --size imix`) after them.
    pub frame_size: Vec<FrameSize>,
    /// TCP parallel sessions.
    pub sessions: Vec<u32>,
    /// TCP MSS values (`-M`); empty = iperf3's default.
    pub mss: Vec<u32>,
    /// Encapsulations of the test frames on the far link (`encap` key; the IP version comes
    /// from `ip`). Empty: the key is absent and frames are plain (no `encap=` in case ids).
    pub encap: Vec<EncapSpec>,
    /// UDP trials send A→B and B→A at once, each at the search's load (RFC 2544 §14).
    pub bidirectional: bool,
    /// The DUT's segmentation offloads (GRO/GSO/TSO) off and/or on, as a dimension (`offload`
    /// key). Empty: the key is absent (the lab DUT keeps them off; a real DUT as it is).
    pub offload: Vec<bool>,
    /// The DUT's fast path off and/or on, as a dimension (`fastpath` key). Empty: absent.
    pub fastpath: Vec<bool>,
    /// Flows per UDP stream, as a dimension (`flows` key): that many distinct UDP source
    /// ports (`run.src-ports` per case). Empty: absent (`[run]`'s counts).
    pub flows: Vec<u16>,
    /// The ToS / traffic class byte of UDP test frames, as a dimension (`tos` key; overrides
    /// `run.tos`). Empty: absent.
    pub tos: Vec<u8>,
    /// User-defined dimensions, handed to hooks as `WR_<NAME>` variables.
    pub vars: Vec<(String, Vec<String>)>,
    /// Methodologies per case.
    pub methodologies: Vec<Methodology>,
}

impl Matrix {
    /// A block with no values yet (the parser fills them dimension by dimension).
    pub fn new(name: Option<String>, line: usize) -> Matrix {
        Matrix {
            name,
            line,
            profile: Vec::new(),
            protocol: Vec::new(),
            ip: Vec::new(),
            frame_size: Vec::new(),
            sessions: Vec::new(),
            mss: Vec::new(),
            encap: Vec::new(),
            bidirectional: false,
            offload: Vec::new(),
            fastpath: Vec::new(),
            flows: Vec::new(),
            tos: Vec::new(),
            vars: Vec::new(),
            methodologies: Vec::new(),
        }
    }

    /// Whether the block sends the IMIX.
    pub fn has_imix(&self) -> bool {
        self.frame_size.contains(&FrameSize::Imix)
    }

    /// The largest frame any of its sizes sends for `ip` (the IMIX's 1518 B included).
    pub fn largest_frame(&self, ip: IpVersion) -> Option<usize> {
        self.frame_size.iter().map(|f| f.largest(ip)).max()
    }

    /// The largest fixed frame size of the block (an `mtu-probe` runs once, at it).
    pub fn largest_fixed(&self) -> Option<FrameSize> {
        self.frame_size
            .iter()
            .filter_map(|f| f.fixed())
            .max()
            .map(|bytes| FrameSize::Fixed { bytes })
    }
}
