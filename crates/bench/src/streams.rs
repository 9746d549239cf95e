//! The streams of `wirerate trial`: one definition per stream (from the command's flags or a
//! `--streams` TOML file), turned into the engine's [`TrialStream`]s between two ports —
//! addressed from the ports, inside a session when there is one ([`crate::inside`]). The values
//! are parsed by the vocabulary's own parsers: rates by `engine::stream::Rate::parse`, times by
//! `wire::units::parse_time` (as in plans), sizes by `wire::linerate::parse_sizes` (as in
//! `wirerate linerate`) and checked by `wire::template` (as in plans).

use std::net::{IpAddr, Ipv4Addr};

use engine::port::PortSpec;
use engine::stream::{FlowMode, Flows, Limit, Rate, StreamConfig};
use engine::trial::TrialStream;
use serde::Deserialize;
use wire::encap::{EncapSpec, IpVersion};
use wire::linerate::{parse_sizes, FrameSize};
use wire::template::{FrameTemplate, StreamSpec};
use wire::units::parse_time;

use crate::inside::Inside;

/// One stream as written in TOML (or assembled from flags).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamDef {
    #[serde(default = "d_direction")]
    pub direction: String,
    #[serde(default = "d_encap")]
    pub encap: String,
    #[serde(default = "d_size")]
    pub size: String,
    #[serde(default = "d_rate")]
    pub rate: String,
    #[serde(default)]
    pub duration: Option<f64>,
    #[serde(default)]
    pub frames: Option<u64>,
    #[serde(default = "one32")]
    pub burst: u32,
    #[serde(default)]
    pub burst_gap: Option<String>,
    #[serde(default = "one32")]
    pub src_ips: u32,
    #[serde(default = "one32")]
    pub dst_ips: u32,
    #[serde(default = "one16")]
    pub src_ports: u16,
    #[serde(default = "one16")]
    pub dst_ports: u16,
    #[serde(default)]
    pub random_seed: Option<u64>,
    #[serde(default)]
    pub tos: u8,
    #[serde(default)]
    pub reorder_every: Option<u64>,
}

fn d_direction() -> String {
    "a-b".into()
}
fn d_encap() -> String {
    "ipv4".into()
}
fn d_size() -> String {
    "64".into()
}
fn d_rate() -> String {
    "10kpps".into()
}
fn one32() -> u32 {
    1
}
fn one16() -> u16 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamsFile {
    #[serde(default)]
    stream: Vec<StreamDef>,
}

/// Parses a stream file's `[[stream]]` tables.
pub fn parse_streams_file(text: &str) -> Result<Vec<StreamDef>, String> {
    let f: StreamsFile = toml::from_str(text).map_err(|e| e.to_string())?;
    Ok(f.stream)
}

/// One stream's size: bytes or `imix` (checked against the encapsulation when its frames are
/// built).
fn frame_size(text: &str, encap: &EncapSpec) -> Result<FrameSize, String> {
    let mut sizes = parse_sizes(text, encap.ip).map_err(|e| format!("size: {e}"))?;
    if sizes.len() != 1 {
        return Err(format!(
            "size '{text}': give one size in bytes or 'imix' per stream"
        ));
    }
    Ok(sizes.remove(0))
}

fn addr(p: &PortSpec, v: IpVersion) -> Result<IpAddr, String> {
    match v {
        IpVersion::V4 => p.ipv4.map(IpAddr::V4),
        IpVersion::V6 => p.ipv6.map(IpAddr::V6),
    }
    .ok_or_else(|| {
        format!(
            "port {} has no {v} address (give --{}-addr)",
            p.name, p.name
        )
    })
}

/// The trial's streams from their definitions, between ports `a` (0) and `b` (1), numbered
/// from 1 in order; percent rates are of `link_bps`. With `inside`, the streams are pointed at
/// the session or softwire (`wirerate trial --inside`). Every error is the user's to fix.
pub fn build_streams(
    defs: &[StreamDef],
    a: &PortSpec,
    b: &PortSpec,
    link_bps: f64,
    inside: Option<&Inside>,
) -> Result<Vec<TrialStream>, String> {
    let mut out = Vec::new();
    for d in defs {
        let encap: EncapSpec = d
            .encap
            .parse()
            .map_err(|e| format!("encap '{}': {e}", d.encap))?;
        let dirs: &[(usize, usize)] = match d.direction.as_str() {
            "a-b" => &[(0, 1)],
            "b-a" => &[(1, 0)],
            "both" => &[(0, 1), (1, 0)],
            o => return Err(format!("direction '{o}': give a-b, b-a or both")),
        };
        let rate = Rate::parse(&d.rate, link_bps)?;
        let limit = match (d.frames, d.duration) {
            (Some(n), _) => Limit::Frames(n),
            (None, Some(s)) if s > 0.0 && s <= 86_400.0 => Limit::DurationNs((s * 1e9) as u64),
            (None, Some(s)) => return Err(format!("duration {s}: give 0 < seconds ≤ 86400")),
            (None, None) => Limit::DurationNs(5_000_000_000),
        };
        if let Some(k) = d.reorder_every {
            if k < 2 {
                return Err("reorder_every: give K ≥ 2".into());
            }
        }
        for (what, n) in [
            ("burst", d.burst),
            ("src-ips", d.src_ips),
            ("dst-ips", d.dst_ips),
            ("src-ports", u32::from(d.src_ports)),
            ("dst-ports", u32::from(d.dst_ports)),
        ] {
            if n == 0 {
                return Err(format!("{what} 0: give at least 1"));
            }
        }
        let burst_gap = match &d.burst_gap {
            Some(t) => Some(parse_time(t).map_err(|e| format!("burst gap: {e}"))?),
            None => None,
        };
        for &(tx, rx) in dirs {
            let (src, dst) = if tx == 0 { (a, b) } else { (b, a) };
            let id = out.len() as u16 + 1;
            let mut spec = StreamSpec::new(encap);
            spec.stream_id = id;
            if encap.dslite {
                spec.src_ip = IpAddr::V4(Ipv4Addr::new(192, 0, 0, 2));
                spec.dst_ip =
                    addr(dst, IpVersion::V4).unwrap_or(IpAddr::V4(Ipv4Addr::new(203, 0, 113, 2)));
                if let (Some(s6), Some(d6)) = (src.ipv6, dst.ipv6) {
                    spec.tunnel_src = s6;
                    spec.tunnel_dst = d6;
                }
            } else {
                spec.src_ip = addr(src, encap.ip)?;
                spec.dst_ip = addr(dst, encap.ip)?;
            }
            spec.tos = d.tos;
            spec.dst_port = 9;
            if let Some(i) = inside {
                i.apply(&mut spec, tx)?;
            }
            let mut frames = Vec::new();
            let mut weights = Vec::new();
            for (size, w) in frame_size(&d.size, &encap)?.parts(encap.ip) {
                let t = FrameTemplate::new(&spec, size).map_err(|e| format!("stream {id}: {e}"))?;
                frames.push(t);
                weights.push(w);
            }
            let rewrite_macs = !encap.pppoe && inside.is_none();
            let config = StreamConfig {
                id,
                frames,
                weights,
                flows: Flows {
                    src_ip_count: d.src_ips,
                    dst_ip_count: d.dst_ips,
                    src_port_count: d.src_ports,
                    dst_port_count: d.dst_ports,
                    mode: d
                        .random_seed
                        .map_or(FlowMode::Increment, |seed| FlowMode::Random { seed }),
                },
                rate,
                burst: d.burst,
                burst_gap,
                limit,
                reorder_every: d.reorder_every,
                rewrite_macs,
            };
            config.check().map_err(|e| e.to_string())?;
            out.push(TrialStream {
                config,
                tx_port: tx,
                rx_port: rx,
            });
        }
    }
    if out.is_empty() {
        return Err("no streams: the TOML file needs at least one [[stream]]".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;
    use std::time::Duration;

    fn ports() -> (PortSpec, PortSpec) {
        let mut a = PortSpec::new("a", "x");
        a.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 1));
        a.ipv6 = Some(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1));
        let mut b = PortSpec::new("b", "y");
        b.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 2));
        b.ipv6 = Some(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2));
        (a, b)
    }

    #[test]
    fn burst_gaps_parse_and_nonsense_is_refused() {
        let (a, b) = ports();
        let f = parse_streams_file("[[stream]]\nburst = 16\nburst_gap = \"2ms\"\nframes = 160\n")
            .unwrap();
        let s = build_streams(&f, &a, &b, 1e9, None).unwrap();
        assert_eq!(s[0].config.burst, 16);
        assert_eq!(s[0].config.burst_gap, Some(Duration::from_millis(2)));
        // A gap with bursts of one frame, or of zero length, or without a unit, is refused.
        for bad in [
            "[[stream]]\nburst_gap = \"2ms\"\n",
            "[[stream]]\nburst = 4\nburst_gap = \"0ms\"\n",
            "[[stream]]\nburst = 4\nburst_gap = \"2\"\n",
        ] {
            let f = parse_streams_file(bad).unwrap();
            assert!(build_streams(&f, &a, &b, 1e9, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn toml_streams_parse() {
        let f = parse_streams_file(
            "[[stream]]\ndirection = \"both\"\nrate = \"20kpps\"\nframes = 1000\n\n[[stream]]\nsize = \"imix\"\nencap = \"ipv6\"\n",
        )
        .unwrap();
        assert_eq!(f.len(), 2);
        assert_eq!(f[0].frames, Some(1000));
        assert_eq!(f[1].size, "imix");
        assert!(parse_streams_file("[[stream]]\nbogus = 1\n").is_err());
        let (a, b) = ports();
        let s = build_streams(&f, &a, &b, 1e9, None).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].tx_port, s[1].tx_port), (0, 1));
        assert_eq!(s[2].config.frames.len(), 3);
        assert_eq!(s[2].config.weights, vec![7, 4, 1]);
        assert_eq!(s[2].config.frames[0].len(), 78); // IPv6 minimum (82 with FCS)
    }

    /// Sizes: one number or `imix`; the bounds and their texts are `wire::template`'s, the
    /// same a plan's frame sizes get.
    #[test]
    fn sizes_are_one_number_or_imix_within_the_templates_bounds() {
        let (a, b) = ports();
        let one = |size: &str, encap: &str| {
            let f = parse_streams_file(&format!(
                "[[stream]]\nsize = \"{size}\"\nencap = \"{encap}\"\n"
            ))
            .unwrap();
            build_streams(&f, &a, &b, 1e9, None)
        };
        assert_eq!(one("1518", "ipv4").unwrap()[0].config.frames[0].len(), 1514);
        assert_eq!(one("9018", "ipv4").unwrap()[0].config.frames[0].len(), 9014);
        let e = one("9019", "ipv4").unwrap_err();
        assert!(e.contains("above the largest supported, 9018 B"), "{e}");
        let e = one("64", "ipv6").unwrap_err();
        assert!(e.contains("the smallest that works is 82 B"), "{e}");
        for bad in ["abc", "64,128", "64-128", ""] {
            assert!(one(bad, "ipv4").is_err(), "{bad}");
        }
    }
}
