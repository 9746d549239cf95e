//! The text form of `wirerate trial`'s streams: one definition per stream (from the command's
//! flags or a `--streams` TOML file), turned into a [`crate::spec::StreamSpec`]. The values
//! are parsed by the vocabulary's own parsers: rates by [`Load::parse`], times by
//! `wire::units::parse_time` (as in plans), sizes by `wire::linerate::parse_sizes` (as in
//! `wirerate linerate`) and checked by `wire::template` (as in plans) when the spec is built.

use engine::stream::{FlowMode, Flows, Limit};
use serde::Deserialize;
use wire::encap::EncapSpec;
use wire::linerate::{parse_sizes, FrameSize};
use wire::units::parse_time;

use crate::error::BenchError;
use crate::spec::{Direction, Load, StreamSpec};

/// One stream as written in TOML (or assembled from flags).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamDef {
    #[serde(default = "d_direction")]
    pub direction: String,
    #[serde(default = "d_encap")]
    pub encap: String,
    /// The far link's encapsulation when the DUT changes it (a plan's `encap`); percent rates
    /// count it.
    #[serde(default)]
    pub far_encap: Option<String>,
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
pub fn parse_streams_file(text: &str) -> Result<Vec<StreamDef>, BenchError> {
    let f: StreamsFile = toml::from_str(text).map_err(|e| BenchError::Usage(e.to_string()))?;
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

fn parse_encap(text: &str) -> Result<EncapSpec, String> {
    text.parse().map_err(|e| format!("encap '{text}': {e}"))
}

impl StreamDef {
    /// The stream this definition describes, its values parsed and checked (the numbers that
    /// cannot run are refused by [`crate::spec::TrialSpec::build`], with the texts a plan's
    /// trials get).
    pub fn spec(&self) -> Result<StreamSpec, BenchError> {
        let encap = parse_encap(&self.encap).map_err(BenchError::Usage)?;
        let far_encap = match &self.far_encap {
            Some(t) => {
                let e = parse_encap(t).map_err(BenchError::Usage)?;
                if e.ip != encap.ip {
                    return Err(BenchError::Usage(format!(
                        "far encap '{t}': the far link carries the same {} packet as encap '{}'",
                        encap.ip, self.encap
                    )));
                }
                Some(e)
            }
            None => None,
        };
        let direction = Direction::parse(&self.direction)?;
        let load = Load::parse(&self.rate)?;
        let limit = match (self.frames, self.duration) {
            (Some(n), _) => Limit::Frames(n),
            (None, Some(s)) if s > 0.0 && s <= 86_400.0 => Limit::DurationNs((s * 1e9) as u64),
            (None, Some(s)) => {
                return Err(BenchError::Usage(format!(
                    "duration {s}: give 0 < seconds ≤ 86400"
                )))
            }
            (None, None) => Limit::DurationNs(5_000_000_000),
        };
        let burst_gap = match &self.burst_gap {
            Some(t) => {
                Some(parse_time(t).map_err(|e| BenchError::Usage(format!("burst gap: {e}")))?)
            }
            None => None,
        };
        let mut s = StreamSpec::new(
            encap,
            frame_size(&self.size, &encap).map_err(BenchError::Usage)?,
            load,
            limit,
        );
        s.direction = direction;
        s.far_encap = far_encap;
        s.burst = self.burst;
        s.burst_gap = burst_gap;
        s.flows = Flows {
            src_ip_count: self.src_ips,
            dst_ip_count: self.dst_ips,
            src_port_count: self.src_ports,
            dst_port_count: self.dst_ports,
            mode: self
                .random_seed
                .map_or(FlowMode::Increment, |seed| FlowMode::Random { seed }),
        };
        s.tos = self.tos;
        s.reorder_every = self.reorder_every;
        Ok(s)
    }
}

/// The stream specs of `defs`, in order.
pub fn specs(defs: &[StreamDef]) -> Result<Vec<StreamSpec>, BenchError> {
    defs.iter().map(StreamDef::spec).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::port::PortSpec;
    use engine::trial::TrialStream;
    use std::net::{Ipv4Addr, Ipv6Addr};
    use std::time::Duration;

    /// The engine streams of `defs` between `a` and `b` at 1 Gb/s: what `wirerate trial` runs.
    fn build_streams(
        defs: &[StreamDef],
        a: &PortSpec,
        b: &PortSpec,
    ) -> Result<Vec<TrialStream>, String> {
        let specs = specs(defs).map_err(|e| e.to_string())?;
        let spec = crate::spec::TrialSpec::new(specs, wire::units::BitsPerSec(1e9));
        Ok(spec
            .build(a, b, None)
            .map_err(|e| e.to_string())?
            .config
            .streams)
    }

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
        let s = build_streams(&f, &a, &b).unwrap();
        assert_eq!(s[0].config.burst, 16);
        assert_eq!(s[0].config.burst_gap, Some(Duration::from_millis(2)));
        // A gap with bursts of one frame, or of zero length, or without a unit, is refused.
        for bad in [
            "[[stream]]\nburst_gap = \"2ms\"\n",
            "[[stream]]\nburst = 4\nburst_gap = \"0ms\"\n",
            "[[stream]]\nburst = 4\nburst_gap = \"2\"\n",
        ] {
            let f = parse_streams_file(bad).unwrap();
            assert!(build_streams(&f, &a, &b).is_err(), "{bad}");
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
        let s = build_streams(&f, &a, &b).unwrap();
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
            build_streams(&f, &a, &b)
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

    /// `far_encap` is the far link's encapsulation of the same packet: it sets the 100 %, not
    /// the frames; one of another IP version, or that does not parse, is refused.
    #[test]
    fn a_far_encapsulation_sets_the_line_rate_not_the_frames() {
        let one = |extra: &str| {
            parse_streams_file(&format!("[[stream]]\nrate = \"50%\"\n{extra}"))
                .unwrap()
                .remove(0)
                .spec()
        };
        let s = one("far_encap = \"pppoe+ipv4\"\n").unwrap();
        assert!(s.far_encap.unwrap().pppoe && !s.encap.pppoe);
        let (a, b) = ports();
        let f =
            parse_streams_file("[[stream]]\nrate = \"50%\"\nfar_encap = \"pppoe+ipv4\"\n").unwrap();
        let built = build_streams(&f, &a, &b).unwrap();
        assert_eq!(built[0].config.frames[0].len(), 60, "plain as sent");
        assert_eq!(
            built[0].config.pps().0,
            0.5 * 1e9 / ((64.0 + 8.0 + 20.0) * 8.0)
        );
        let e = one("far_encap = \"vlan+ipv6\"\n").unwrap_err().to_string();
        assert!(e.contains("far encap 'vlan+ipv6'"), "{e}");
        assert!(one("far_encap = \"bogus\"\n")
            .unwrap_err()
            .to_string()
            .contains("encap 'bogus'"));
    }
}
