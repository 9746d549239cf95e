//! One point of the matrix ([`Case`]): its dimensions, its stable id and the variables its
//! hooks see.

use serde::{Deserialize, Serialize};
use wire::encap::IpVersion;

use super::dims::Protocol;
use super::methodology::Methodology;
use super::parse;

/// One point of the matrix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Case {
    /// Stable id derived from the dimensions, e.g. `napt/udp4/64B`.
    pub id: String,
    /// DUT profile.
    pub profile: String,
    /// Protocol.
    pub protocol: Protocol,
    /// IP version.
    pub ip: IpVersion,
    /// UDP frame size (`None` for TCP, and for an IMIX case: [`Case::imix`]).
    pub frame_size: Option<u32>,
    /// A UDP case sending the simple IMIX instead of one size ([`Case::frame`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub imix: bool,
    /// TCP sessions.
    pub sessions: Option<u32>,
    /// TCP MSS.
    pub mss: Option<u32>,
    /// User dimensions (name, value).
    pub vars: Vec<(String, String)>,
    /// Methodologies, in run order.
    pub methodologies: Vec<Methodology>,
    /// Encapsulation of the test frames on the far link, with the case's IP version; `None`
    /// when the block has no `encap` key (plain frames).
    #[serde(default)]
    pub encap: Option<wire::encap::EncapSpec>,
    /// UDP trials run in both directions at once ([`Matrix::bidirectional`]).
    #[serde(default)]
    pub bidirectional: bool,
    /// The DUT's segmentation offloads for this case ([`Matrix::offload`]); `None`: not a
    /// dimension of this case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload: Option<bool>,
    /// The DUT's fast path for this case ([`Matrix::fastpath`]); `None`: not a dimension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fastpath: Option<bool>,
    /// Flows (distinct UDP source ports) of this UDP case ([`Matrix::flows`]); `None`: not a
    /// dimension (`run.src-ports` and the other `[run]` counts apply).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flows: Option<u16>,
    /// ToS / traffic class of this UDP case ([`Matrix::tos`]); `None`: `run.tos`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tos: Option<u8>,
}

/// `on` / `off`, as plans, case ids and hook variables spell a switch.
pub fn on_off(on: bool) -> &'static str {
    if on {
        "on"
    } else {
        "off"
    }
}

fn ip_number(ip: IpVersion) -> u8 {
    match ip {
        IpVersion::V4 => 4,
        IpVersion::V6 => 6,
    }
}

impl Case {
    /// What a UDP case sends: its frame size, or the IMIX; `None` for TCP.
    pub fn frame(&self) -> Option<wire::linerate::FrameSize> {
        if self.imix {
            return Some(wire::linerate::FrameSize::Imix);
        }
        self.frame_size
            .map(|b| wire::linerate::FrameSize::Fixed { bytes: b as usize })
    }

    /// Variables for hook commands: `WR_CASE`, `WR_PROFILE`, `WR_PROTOCOL`, `WR_IP`,
    /// `WR_FRAME_SIZE`, `WR_SESSIONS`, `WR_MSS`, `WR_FLOWS`, `WR_TOS` (when set) and
    /// `WR_<NAME>` per user dimension.
    pub fn env(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("WR_CASE".to_string(), self.id.clone()),
            ("WR_PROFILE".to_string(), self.profile.clone()),
            ("WR_PROTOCOL".to_string(), self.protocol.to_string()),
            ("WR_IP".to_string(), ip_number(self.ip).to_string()),
        ];
        let opt = |k: &str, x: Option<u32>| x.map(|x| (k.to_string(), x.to_string()));
        v.extend(opt("WR_FRAME_SIZE", self.frame_size));
        if self.imix {
            v.push(("WR_FRAME_SIZE".to_string(), "imix".to_string()));
        }
        v.extend(opt("WR_SESSIONS", self.sessions));
        v.extend(opt("WR_MSS", self.mss));
        if let Some(e) = &self.encap {
            v.push(("WR_ENCAP".to_string(), parse::spell_encap(e)));
        }
        if self.bidirectional {
            v.push(("WR_BIDIRECTIONAL".to_string(), "1".to_string()));
        }
        if let Some(o) = self.offload {
            v.push(("WR_OFFLOAD".to_string(), on_off(o).to_string()));
        }
        if let Some(f) = self.fastpath {
            v.push(("WR_FASTPATH".to_string(), on_off(f).to_string()));
        }
        if let Some(n) = self.flows {
            v.push(("WR_FLOWS".to_string(), n.to_string()));
        }
        if let Some(t) = self.tos {
            v.push(("WR_TOS".to_string(), t.to_string()));
        }
        for (k, val) in &self.vars {
            v.push((env_name(k), val.clone()));
        }
        v
    }
}

/// `fast-path` → `WR_FAST_PATH`.
pub fn env_name(var: &str) -> String {
    format!("WR_{}", var.to_ascii_uppercase().replace('-', "_"))
}

/// `profile/proto+ip/size-or-sessions[/mssN][/encap=…][/bidir][/offload=on][/fastpath=on]
/// [/flows=N][/tos=N][/var=value…]`: readable and independent of the case's position in the
/// plan.
pub(super) fn case_id(c: &Case) -> String {
    let mut id = format!("{}/{}{}", c.profile, c.protocol, ip_number(c.ip));
    if let Some(f) = c.frame_size {
        id.push_str(&format!("/{f}B"));
    }
    if c.imix {
        id.push_str("/imix");
    }
    if let Some(s) = c.sessions {
        id.push_str(&format!("/s{s}"));
    }
    if let Some(m) = c.mss {
        id.push_str(&format!("/mss{m}"));
    }
    if let Some(e) = &c.encap {
        id.push_str(&format!("/encap={}", parse::spell_encap(e)));
    }
    if c.bidirectional {
        id.push_str("/bidir");
    }
    if let Some(o) = c.offload {
        id.push_str(&format!("/offload={}", on_off(o)));
    }
    if let Some(f) = c.fastpath {
        id.push_str(&format!("/fastpath={}", on_off(f)));
    }
    if let Some(n) = c.flows {
        id.push_str(&format!("/flows={n}"));
    }
    if let Some(t) = c.tos {
        id.push_str(&format!("/tos={t}"));
    }
    for (k, v) in &c.vars {
        id.push_str(&format!("/{k}={v}"));
    }
    id
}
