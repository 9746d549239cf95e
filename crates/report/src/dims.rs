//! The dimensions of a case as the report groups, labels and charts it ([`Dims`]): the typed
//! values of `bench_model::plan` (`Protocol`, `IpVersion`, the encapsulation on the path as
//! `wire`'s `EncapSpec`, `FrameSize`), parsed once where records are loaded
//! (`crate::analyse::dims`, `crate::compat` for older runs) and asked, never re-read as text.
//!
//! `summary.json` keeps the flat form reports have always written (`"protocol": "udp"`,
//! `"ip": 4`, `"encap": "vlan+ipv4"`, `"frame_size": 64` with `"imix"` beside it) through
//! `DimsRecord`, so its bytes do not change with the types.

use std::cmp::Ordering;

use bench_model::plan::Protocol;
use serde::{Deserialize, Serialize};
use wire::encap::{EncapSpec, IpVersion};
use wire::linerate::FrameSize;

/// The dimensions of a case, as the report groups them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "DimsRecord", try_from = "DimsRecord")]
pub struct Dims {
    /// DUT profile.
    pub profile: String,
    /// UDP or TCP.
    pub protocol: Protocol,
    /// IP version of the test traffic (the inner packet, for DS-Lite).
    pub ip: IpVersion,
    /// Encapsulation on the far link: what the case's UDP trials recorded on their path
    /// (`UdpFacts::encap`), else the case's `encap` dimension, else (runs before that
    /// dimension) an `encap` user variable `wire` can read, else the plain frame of `ip`.
    pub encap: EncapSpec,
    /// What a UDP case sent: a reference frame size (with FCS) or the IMIX; `None` for TCP.
    pub frame: Option<FrameSize>,
    /// TCP sessions.
    pub sessions: Option<u32>,
    /// TCP MSS.
    pub mss: Option<u32>,
    /// What labels a case beside its columns, as `name=value`: the stream dimensions `flows`
    /// and `tos`, then the user dimensions (`plan::Dims::labels`).
    pub vars: Vec<(String, String)>,
    /// UDP trials ran A→B and B→A at once (`bidir` in the case id): rates are sums of both.
    pub bidirectional: bool,
    /// The DUT's segmentation offloads (`offload=on|off` in the case id); `None` where the
    /// plan has no such dimension (older runs, or blocks without it).
    pub offload: Option<bool>,
    /// The DUT's fast path (`fastpath=on|off`); `None` where not a dimension.
    pub fastpath: Option<bool>,
}

impl Dims {
    /// Plain UDP over IPv4 of `profile`, nothing else set: what a case id without more
    /// segments names.
    pub fn new(profile: impl Into<String>) -> Dims {
        Dims {
            profile: profile.into(),
            protocol: Protocol::Udp,
            ip: IpVersion::V4,
            encap: EncapSpec::plain(IpVersion::V4),
            frame: None,
            sessions: None,
            mss: None,
            vars: Vec::new(),
            bidirectional: false,
            offload: None,
            fastpath: None,
        }
    }

    /// `IPv4 UDP`, `IPv6 TCP`, with the encapsulation when it is not plain and
    /// `bidirectional` when both directions ran at once.
    pub fn family(&self) -> String {
        let mut base = format!("IPv{} {}", self.ip.number(), self.protocol.title());
        if !self.has_plain_encap() {
            base = format!("{base} over {}", self.encap);
        }
        if self.bidirectional {
            base.push_str(", bidirectional");
        }
        base
    }

    /// Whether the frames crossed the path as the plain frame of the case's IP version.
    pub fn has_plain_encap(&self) -> bool {
        self.encap.is_plain() && self.encap.ip == self.ip
    }

    /// What a UDP case sent: its frame size or the IMIX; `None` for TCP.
    pub fn frame(&self) -> Option<FrameSize> {
        self.frame
    }

    /// A fixed frame size in bytes; `None` for the IMIX and for TCP.
    pub fn frame_bytes(&self) -> Option<u32> {
        bench_model::plan::Dims::frame_fields(self.frame).0
    }

    /// Whether the case sent the IMIX.
    pub fn is_imix(&self) -> bool {
        matches!(self.frame, Some(FrameSize::Imix))
    }

    /// Where in the matrix, without the profile: `64 B, IPv4 UDP`.
    pub fn point(&self) -> String {
        let mut parts = Vec::new();
        match self.frame {
            Some(FrameSize::Fixed { bytes }) => parts.push(format!("{bytes} B")),
            Some(FrameSize::Imix) => parts.push("IMIX".to_string()),
            None => {}
        }
        if let Some(s) = self.sessions {
            parts.push(format!("{s} session{}", if s == 1 { "" } else { "s" }));
        }
        if let Some(m) = self.mss {
            parts.push(format!("MSS {m}"));
        }
        parts.extend(self.switches());
        for (k, v) in &self.vars {
            parts.push(format!("{k}={v}"));
        }
        parts.push(self.family());
        parts.join(", ")
    }

    /// The switch dimensions the case has, as a reader says them: `offload on`, `fastpath off`.
    pub fn switches(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(o) = self.offload {
            v.push(format!("offload {}", bench_model::plan::on_off(o)));
        }
        if let Some(f) = self.fastpath {
            v.push(format!("fastpath {}", bench_model::plan::on_off(f)));
        }
        v
    }

    /// The same case without its point in the matrix (frame size, sessions, MSS): what a
    /// summary compares across.
    pub(crate) fn context(&self) -> Dims {
        Dims {
            frame: None,
            sessions: None,
            mss: None,
            ..self.clone()
        }
    }

    /// The same point with another profile (for findings and grouping).
    pub fn without_profile(&self) -> Dims {
        Dims {
            profile: String::new(),
            ..self.clone()
        }
    }

    /// The same point of the matrix over IP version `ip`: its encapsulation carries that
    /// version too (`vlan+ipv6` → `vlan+ipv4`). What the IPv4/IPv6 finding compares.
    pub fn over_ip(&self, ip: IpVersion) -> Dims {
        Dims {
            ip,
            encap: self.encap.with_ip(ip),
            ..self.clone()
        }
    }

    /// These dimensions as the plan's (`bench_model::plan::Dims`), for what the table of
    /// dimensions declares about them (the report's columns). The labels (`flows`, `tos`,
    /// user dimensions) go as user dimensions: none of them has a column.
    pub fn plan_dims(&self) -> bench_model::plan::Dims {
        bench_model::plan::Dims {
            profile: self.profile.clone(),
            protocol: self.protocol,
            ip: self.ip,
            frame: self.frame,
            sessions: self.sessions,
            mss: self.mss,
            encap: Some(self.encap),
            bidirectional: self.bidirectional,
            offload: self.offload,
            fastpath: self.fastpath,
            vars: self.vars.clone(),
            ..bench_model::plan::Dims::default()
        }
    }

    /// The order reports have always listed cases in: by profile, protocol, IP version, the
    /// encapsulation's spelling, frame size (the IMIX before fixed sizes), sessions, MSS,
    /// labels, then the switches.
    #[allow(clippy::type_complexity)]
    fn order_key(
        &self,
    ) -> (
        &str,
        Protocol,
        IpVersion,
        String,
        (Option<u32>, bool),
        (Option<u32>, Option<u32>),
        &[(String, String)],
        (bool, Option<bool>, Option<bool>),
    ) {
        (
            &self.profile,
            self.protocol,
            self.ip,
            self.encap.to_string(),
            bench_model::plan::Dims::frame_fields(self.frame),
            (self.sessions, self.mss),
            &self.vars,
            (self.bidirectional, self.offload, self.fastpath),
        )
    }
}

impl PartialOrd for Dims {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Dims {
    fn cmp(&self, other: &Self) -> Ordering {
        self.order_key().cmp(&other.order_key())
    }
}

/// [`Dims`] as `summary.json` writes it (the layout of reports before the types).
#[derive(Serialize, Deserialize)]
struct DimsRecord {
    profile: String,
    protocol: Protocol,
    ip: u8,
    encap: String,
    frame_size: Option<u32>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    imix: bool,
    sessions: Option<u32>,
    mss: Option<u32>,
    vars: Vec<(String, String)>,
    #[serde(default)]
    bidirectional: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    offload: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    fastpath: Option<bool>,
}

impl From<Dims> for DimsRecord {
    fn from(d: Dims) -> DimsRecord {
        let (frame_size, imix) = bench_model::plan::Dims::frame_fields(d.frame);
        DimsRecord {
            profile: d.profile,
            protocol: d.protocol,
            ip: d.ip.number(),
            encap: d.encap.to_string(),
            frame_size,
            imix,
            sessions: d.sessions,
            mss: d.mss,
            vars: d.vars,
            bidirectional: d.bidirectional,
            offload: d.offload,
            fastpath: d.fastpath,
        }
    }
}

impl TryFrom<DimsRecord> for Dims {
    type Error = String;

    fn try_from(r: DimsRecord) -> Result<Dims, String> {
        let ip = match r.ip {
            4 => IpVersion::V4,
            6 => IpVersion::V6,
            n => return Err(format!("dims: ip {n} is neither 4 nor 6")),
        };
        let encap = r
            .encap
            .parse::<EncapSpec>()
            .map_err(|e| format!("dims: encap `{}`: {e}", r.encap))?;
        Ok(Dims {
            profile: r.profile,
            protocol: r.protocol,
            ip,
            encap,
            frame: bench_model::plan::Dims::frame_of_fields(r.frame_size, r.imix),
            sessions: r.sessions,
            mss: r.mss,
            vars: r.vars,
            bidirectional: r.bidirectional,
            offload: r.offload,
            fastpath: r.fastpath,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vlan6() -> Dims {
        Dims {
            ip: IpVersion::V6,
            encap: "vlan+ipv6".parse().unwrap(),
            frame: Some(FrameSize::Fixed { bytes: 128 }),
            ..Dims::new("forward")
        }
    }

    #[test]
    fn summary_json_keeps_its_flat_form_and_reads_back() {
        let d = Dims {
            bidirectional: true,
            ..vlan6()
        };
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(
            json,
            r#"{"profile":"forward","protocol":"udp","ip":6,"encap":"vlan+ipv6","frame_size":128,"sessions":null,"mss":null,"vars":[],"bidirectional":true}"#
        );
        assert_eq!(serde_json::from_str::<Dims>(&json).unwrap(), d);
        let imix = Dims {
            frame: Some(FrameSize::Imix),
            ..Dims::new("p")
        };
        let json = serde_json::to_string(&imix).unwrap();
        assert!(json.contains(r#""frame_size":null,"imix":true"#), "{json}");
        assert_eq!(serde_json::from_str::<Dims>(&json).unwrap(), imix);
        let bad = json.replace(r#""encap":"ipv4""#, r#""encap":"gre""#);
        let err = serde_json::from_str::<Dims>(&bad).unwrap_err().to_string();
        assert!(err.contains("encap `gre`"), "{err}");
    }

    #[test]
    fn the_ipv4_counterpart_is_typed() {
        let v4 = vlan6().over_ip(IpVersion::V4);
        assert_eq!(v4.ip, IpVersion::V4);
        assert_eq!(v4.encap, "vlan+ipv4".parse().unwrap());
        assert_eq!(v4.frame, vlan6().frame);
        assert_eq!(v4.family(), "IPv4 UDP over vlan+ipv4");
        assert!(Dims::new("p").over_ip(IpVersion::V6).has_plain_encap());
    }

    #[test]
    fn cases_keep_the_order_reports_listed_them_in() {
        let with = |e: &str| Dims {
            encap: e.parse().unwrap(),
            ..Dims::new("p")
        };
        let mut v = [
            with("vlan+ipv4"),
            with("qinq+ipv4"),
            with("ipv4"),
            with("mpls:1+ipv4"),
        ];
        v.sort();
        let order: Vec<String> = v.iter().map(|d| d.encap.to_string()).collect();
        assert_eq!(order, ["ipv4", "mpls:1+ipv4", "qinq+ipv4", "vlan+ipv4"]);
        let imix = Dims {
            frame: Some(FrameSize::Imix),
            ..Dims::new("p")
        };
        let b64 = Dims {
            frame: Some(FrameSize::Fixed { bytes: 64 }),
            ..Dims::new("p")
        };
        assert!(imix < b64);
    }
}
