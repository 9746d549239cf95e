//! One point of the matrix ([`Case`]): its dimensions, its stable id and the methodologies it
//! runs; and the one form `run.json` gives it ([`CaseRecord`]).

use serde::{Deserialize, Serialize};
use wire::encap::{EncapSpec, IpVersion};
use wire::linerate::FrameSize;

use super::dims::{Dims, Protocol};
use super::methodology::Methodology;

/// One point of the matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "CaseRecord", into = "CaseRecord")]
pub struct Case {
    /// Stable id derived from the dimensions ([`Dims::id`]), e.g. `napt/udp4/64B`.
    pub id: String,
    /// The value of each dimension.
    pub dims: Dims,
    /// Methodologies, in run order.
    pub methodologies: Vec<Methodology>,
}

impl Case {
    /// The case at `dims`, its id written from them.
    pub fn new(dims: Dims, methodologies: Vec<Methodology>) -> Case {
        Case {
            id: dims.id(),
            dims,
            methodologies,
        }
    }

    /// What a UDP case sends: its frame size, or the IMIX; `None` for TCP.
    pub fn frame(&self) -> Option<FrameSize> {
        self.dims.frame
    }

    /// Variables for hook commands: `WR_CASE`, then each dimension's ([`Dims::env`]:
    /// `WR_PROFILE`, `WR_PROTOCOL`, `WR_IP`, `WR_FRAME_SIZE`, `WR_SESSIONS`, `WR_MSS`,
    /// `WR_ENCAP`, `WR_BIDIRECTIONAL`, `WR_OFFLOAD`, `WR_FASTPATH`, `WR_FLOWS`, `WR_TOS` when
    /// set, and `WR_<NAME>` per user dimension).
    pub fn env(&self) -> Vec<(String, String)> {
        let mut v = vec![("WR_CASE".to_string(), self.id.clone())];
        v.extend(self.dims.env());
        v
    }
}

/// A case as `run.json` writes it (its facts' `cases`), field for field as runs have always
/// written it: the frame as `frame_size` and `imix`, every dimension flat beside the id.
#[derive(Serialize, Deserialize)]
struct CaseRecord {
    id: String,
    profile: String,
    protocol: Protocol,
    ip: IpVersion,
    frame_size: Option<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    imix: bool,
    sessions: Option<u32>,
    mss: Option<u32>,
    vars: Vec<(String, String)>,
    methodologies: Vec<Methodology>,
    #[serde(default)]
    encap: Option<EncapSpec>,
    #[serde(default)]
    bidirectional: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    offload: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fastpath: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    flows: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    tos: Option<u8>,
}

impl From<Case> for CaseRecord {
    fn from(c: Case) -> CaseRecord {
        let d = c.dims;
        let (frame_size, imix) = Dims::frame_fields(d.frame);
        CaseRecord {
            id: c.id,
            profile: d.profile,
            protocol: d.protocol,
            ip: d.ip,
            frame_size,
            imix,
            sessions: d.sessions,
            mss: d.mss,
            vars: d.vars,
            methodologies: c.methodologies,
            encap: d.encap,
            bidirectional: d.bidirectional,
            offload: d.offload,
            fastpath: d.fastpath,
            flows: d.flows,
            tos: d.tos,
        }
    }
}

impl From<CaseRecord> for Case {
    fn from(r: CaseRecord) -> Case {
        Case {
            id: r.id,
            dims: Dims {
                profile: r.profile,
                protocol: r.protocol,
                ip: r.ip,
                frame: Dims::frame_of_fields(r.frame_size, r.imix),
                sessions: r.sessions,
                mss: r.mss,
                encap: r.encap,
                bidirectional: r.bidirectional,
                offload: r.offload,
                fastpath: r.fastpath,
                flows: r.flows,
                tos: r.tos,
                vars: r.vars,
            },
            methodologies: r.methodologies,
        }
    }
}
