//! Line-rate arithmetic (DESIGN.md §4), derived from first principles, never from a table.
//!
//! Every Ethernet frame costs its length (headers + payload + 4 B FCS, at least 64 B) plus 20 B
//! on the wire (7 preamble + 1 SFD + 12 inter-frame gap). A test packet is sized by its plain
//! frame on the reference link; on a link with encapsulation it grows by the encapsulation's
//! bytes and, where a tunnel makes it exceed the link MTU, it is fragmented (IPv4 inside PPPoE,
//! the outer IPv6 of DS-Lite and MAP-E) or cannot be forwarded at all (IPv6 is never fragmented by
//! routers). The theoretical rate of a path is the minimum over its links.

use core::fmt;
use serde::{Deserialize, Serialize};

use crate::encap::{
    min_frame_size, EncapSpec, IpVersion, ETHERNET_HEADER, FCS, IPV4_HEADER, IPV6_FRAGMENT_HEADER,
    IPV6_HEADER, MIN_FRAME, PPPOE_SESSION,
};
use crate::units::{BitsPerSec, Pps};

/// Preamble (7) + start-of-frame delimiter (1) + minimum inter-frame gap (12).
pub const WIRE_OVERHEAD: usize = 20;
/// The IP MTU of a standard Ethernet link.
pub const ETHERNET_MTU: usize = 1500;
/// Link speeds this calculator accepts (the range of real Ethernet, 10 Mb/s to 400 Gb/s).
pub const MIN_SPEED: f64 = 10e6;
pub const MAX_SPEED: f64 = 400e9;

/// Bits one frame of `frame_len` bytes (with FCS) occupies on the wire.
pub fn wire_bits(frame_len: usize) -> f64 {
    ((frame_len.max(MIN_FRAME) + WIRE_OVERHEAD) * 8) as f64
}

/// Maximum frames per second of `frame_len` bytes (with FCS) on a link of `speed`.
pub fn max_frame_rate(speed: BitsPerSec, frame_len: usize) -> Pps {
    Pps(speed.0 / wire_bits(frame_len))
}

/// 100 % load of a stream of `size` over the usual router path ([`Path::router`] at the
/// standard MTU): the test packets per second its slowest link carries, counting the
/// encapsulation's bytes where it has any. The one place a load in "% of line rate" gets its
/// unit, for plans and `wirerate trial` alike. Sizes the path cannot carry (below the smallest
/// test frame, jumbo frames above the reference MTU, packets a tunnel would drop) fall back to
/// the frame as sent on one link of `speed`, so every size still has a 100 %.
pub fn path_max_pps(speed: BitsPerSec, encap: EncapSpec, size: &FrameSize) -> Pps {
    match Path::router(speed, encap, ETHERNET_MTU).rate(size, false) {
        Ok(r) if r.max_pps.0 > 0.0 => r.max_pps,
        _ => {
            let parts = size.parts(encap.ip);
            let weight: f64 = parts.iter().map(|p| f64::from(p.1)).sum();
            let bits: f64 = parts
                .iter()
                .map(|(s, w)| f64::from(*w) * wire_bits(s + encap.overhead()))
                .sum();
            Pps(speed.0 * weight / bits)
        }
    }
}

/// An error in a speed, size or path; the message says what is wrong and what would work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinerateError(pub String);

impl fmt::Display for LinerateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LinerateError {}

/// Parses a link speed such as `10M`, `2.5G`, `400G`, `100Mbps`, `1Gb/s` or `1000000000`
/// (decimal SI prefixes, bits per second).
pub fn parse_speed(text: &str) -> Result<BitsPerSec, LinerateError> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    let stripped = ["bit/s", "bps", "b/s", "bit", "b"]
        .iter()
        .find_map(|suffix| lower.strip_suffix(suffix))
        .unwrap_or(&lower);
    let (number, multiplier) = match stripped.chars().last() {
        Some('k') => (&stripped[..stripped.len() - 1], 1e3),
        Some('m') => (&stripped[..stripped.len() - 1], 1e6),
        Some('g') => (&stripped[..stripped.len() - 1], 1e9),
        Some('t') => (&stripped[..stripped.len() - 1], 1e12),
        _ => (stripped, 1.0),
    };
    let value: f64 = number.trim().parse().map_err(|_| {
        LinerateError(format!(
            "speed '{t}' is not a number with an optional k/M/G/T suffix (e.g. 1G, 2.5G, 100M)"
        ))
    })?;
    let bps = value * multiplier;
    if !bps.is_finite() || !(MIN_SPEED..=MAX_SPEED).contains(&bps) {
        return Err(LinerateError(format!(
            "speed '{t}' is outside 10M..400G; give an Ethernet link speed such as 1G or 2.5G"
        )));
    }
    Ok(BitsPerSec(bps))
}

/// A frame size as a plan or the command line gives it: one size, or a weighted mix.
/// Deserialize too: trial records carry it (`bench_model::results::UdpFacts`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum FrameSize {
    Fixed {
        bytes: usize,
    },
    /// "Simple IMIX": 7 × 64 B, 4 × 594 B, 1 × 1518 B (IP packets of 40/46, 576 and 1500 B).
    /// Sizes below the IP version's minimum test frame are raised to it.
    Imix,
}

impl FrameSize {
    /// The (reference frame size, weight) parts of this size for `ip`.
    pub fn parts(&self, ip: IpVersion) -> Vec<(usize, u32)> {
        match self {
            FrameSize::Fixed { bytes } => vec![(*bytes, 1)],
            FrameSize::Imix => vec![(min_frame_size(ip).max(64), 7), (594, 4), (1518, 1)],
        }
    }

    /// The one size of a fixed frame size; `None` for a mix.
    pub fn fixed(&self) -> Option<usize> {
        match self {
            FrameSize::Fixed { bytes } => Some(*bytes),
            FrameSize::Imix => None,
        }
    }

    /// The largest frame it sends for `ip` (the IMIX's 1518 B): what a path must carry whole.
    pub fn largest(&self, ip: IpVersion) -> usize {
        self.parts(ip).iter().map(|p| p.0).max().unwrap_or(0)
    }

    /// Mean frame size of the parts, weighted.
    pub fn mean(&self, ip: IpVersion) -> f64 {
        let parts = self.parts(ip);
        let w: u32 = parts.iter().map(|p| p.1).sum();
        parts
            .iter()
            .map(|(s, n)| (*s * *n as usize) as f64)
            .sum::<f64>()
            / f64::from(w)
    }
}

impl fmt::Display for FrameSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameSize::Fixed { bytes } => write!(f, "{bytes}"),
            FrameSize::Imix => f.write_str("imix"),
        }
    }
}

/// The RFC 2544 §9 frame sizes plus IMIX; for IPv6 the first size is raised to the smallest
/// frame that carries the signature (RFC 5180 likewise replaces 64 B for IPv6).
pub fn default_sizes(ip: IpVersion) -> Vec<FrameSize> {
    let min = min_frame_size(ip);
    let mut out: Vec<FrameSize> = Vec::new();
    for s in [64, 128, 256, 512, 1024, 1280, 1518] {
        let bytes = s.max(min);
        if !out.contains(&FrameSize::Fixed { bytes }) {
            out.push(FrameSize::Fixed { bytes });
        }
    }
    out.push(FrameSize::Imix);
    out
}

/// Most rows a size list may expand to (a range with a step of 1 is easy to mistype).
pub const MAX_SIZES: usize = 10_000;

/// Parses `64,128,1518`, `64-1518:64` (range with step), `imix` and `rfc2544` (the default set),
/// in any comma-separated combination.
pub fn parse_sizes(text: &str, ip: IpVersion) -> Result<Vec<FrameSize>, LinerateError> {
    let mut out = Vec::new();
    for raw in text.split(',') {
        let item = raw.trim().to_ascii_lowercase();
        if item.is_empty() {
            continue;
        }
        if item == "imix" {
            out.push(FrameSize::Imix);
        } else if item == "rfc2544" {
            out.extend(
                default_sizes(ip)
                    .into_iter()
                    .filter(|s| *s != FrameSize::Imix),
            );
        } else if let Some((from, rest)) = item.split_once('-') {
            let (to, step) = rest.split_once(':').unwrap_or((rest, "1"));
            let num = |s: &str| -> Result<usize, LinerateError> {
                s.trim().parse().map_err(|_| {
                    LinerateError(format!(
                        "size range '{item}' is not FROM-TO[:STEP], e.g. 64-1518:64"
                    ))
                })
            };
            let (a, b, st) = (num(from)?, num(to)?, num(step)?);
            if st == 0 || a > b {
                return Err(LinerateError(format!(
                    "size range '{item}' needs FROM <= TO and a STEP above 0, e.g. 64-1518:64"
                )));
            }
            if (b - a) / st + 1 + out.len() > MAX_SIZES {
                return Err(LinerateError(format!(
                    "size range '{item}' expands to more than {MAX_SIZES} sizes; give a larger STEP"
                )));
            }
            out.extend((a..=b).step_by(st).map(|bytes| FrameSize::Fixed { bytes }));
        } else {
            let bytes = item.parse().map_err(|_| {
                LinerateError(format!(
                    "frame size '{}' is not a number, a FROM-TO[:STEP] range, 'imix' or 'rfc2544'",
                    raw.trim()
                ))
            })?;
            out.push(FrameSize::Fixed { bytes });
        }
    }
    if out.is_empty() {
        return Err(LinerateError(
            "no frame sizes given; e.g. --sizes 64,512,1518".into(),
        ));
    }
    Ok(out)
}

/// One link a test stream crosses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Link {
    pub name: String,
    pub speed: BitsPerSec,
    /// The headers frames carry on this link (plain on the reference link).
    pub encap: EncapSpec,
    /// The IP MTU of the underlying Ethernet (1500; 1508 with an RFC 4638 PPPoE baby jumbo).
    pub mtu: usize,
}

/// What becomes of one test packet on a link.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "fate", rename_all = "lowercase")]
pub enum Fate {
    /// Carried in one frame.
    Whole,
    /// Too large for the link MTU inside its tunnel: split into this many frames.
    Fragmented { frames: usize, what: &'static str },
    /// Too large and not fragmentable in transit: a router drops it.
    Dropped { reason: String },
}

/// The frames (sizes with FCS, padded to 64) that carry one IP packet of `ip_len` bytes on
/// `link`, and its fate there.
pub fn frames_on_link(ip_len: usize, link: &Link) -> (Vec<usize>, Fate) {
    let e = &link.encap;
    let pad = |n: usize| n.max(MIN_FRAME);
    let l2 = ETHERNET_HEADER + e.l2_extra() + FCS;
    // The IP MTU left for the outermost IP packet once PPPoE has taken its 8 bytes.
    let ip_mtu = link
        .mtu
        .saturating_sub(if e.pppoe { PPPOE_SESSION } else { 0 });
    // Splits `payload` bytes into fragments of at most `room` bytes, multiples of 8 but the last.
    let split = |payload: usize, room: usize, per_fragment: usize| -> Vec<usize> {
        let chunk = (room / 8) * 8;
        if chunk == 0 {
            return Vec::new();
        }
        let mut left = payload;
        let mut frames = Vec::new();
        while left > 0 {
            let take = left.min(chunk);
            frames.push(pad(l2 + per_fragment + take));
            left -= take;
        }
        frames
    };
    if e.ipv4_in_ipv6() {
        let outer = IPV6_HEADER + ip_len;
        if outer <= ip_mtu {
            return (vec![pad(l2 + outer)], Fate::Whole);
        }
        // RFC 6333 §5.3: the tunnel endpoint fragments the encapsulating IPv6 packet.
        let per = IPV6_HEADER + IPV6_FRAGMENT_HEADER;
        let frames = split(ip_len, ip_mtu.saturating_sub(per), per);
        let n = frames.len();
        return (
            frames,
            Fate::Fragmented {
                frames: n,
                what: if e.mape {
                    "outer IPv6 (MAP-E tunnel)"
                } else {
                    "outer IPv6 (DS-Lite tunnel)"
                },
            },
        );
    }
    if ip_len <= ip_mtu {
        return (vec![pad(l2 + ip_len)], Fate::Whole);
    }
    match e.ip {
        IpVersion::V4 => {
            let frames =
                split(ip_len - IPV4_HEADER, ip_mtu.saturating_sub(IPV4_HEADER), IPV4_HEADER);
            let n = frames.len();
            (frames, Fate::Fragmented { frames: n, what: "IPv4" })
        }
        IpVersion::V6 => (
            Vec::new(),
            Fate::Dropped {
                reason: format!(
                    "IPv6 packet of {ip_len} B exceeds the {ip_mtu} B MTU of link {}; routers do not \
                     fragment IPv6 (the sender gets Packet Too Big)",
                    link.name
                ),
            },
        ),
    }
}

/// The load one test packet (on average, for a mix) puts on one link.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkLoad {
    pub link: String,
    pub encap: String,
    /// Frame sizes (with FCS) carrying one packet; for a mix, those of its first part.
    pub frames: Vec<usize>,
    pub fate: Fate,
    /// Test packets per second this link alone can carry (0 if it drops them).
    pub max_pps: Pps,
    /// Frames per second on this link at the path's maximum packet rate.
    pub frames_per_sec: Pps,
    /// Bit rates on this link at the path's maximum packet rate: L2 counts frame bytes with
    /// FCS, L1 adds preamble, SFD and inter-frame gap.
    pub l2: BitsPerSec,
    pub l1: BitsPerSec,
}

/// The theoretical rates of one frame size over a path.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SizeRate {
    pub size: FrameSize,
    /// Mean reference frame size (equals the size for a fixed size).
    pub mean_frame: f64,
    pub links: Vec<LinkLoad>,
    /// Index in `links` of the link that limits the rate.
    pub bottleneck: usize,
    /// Maximum test packets per second in one direction.
    pub max_pps: Pps,
    /// 1, or 2 with `bidirectional`; the totals sum both directions.
    pub directions: u8,
    pub total_pps: Pps,
    /// Totals at the reference (first) link.
    pub total_l2: BitsPerSec,
    pub total_l1: BitsPerSec,
}

/// A path's links from the reference port to the far port. The first link is the reference.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Path {
    pub links: Vec<Link>,
}

impl Path {
    /// The usual router test: a plain reference link, and (if the encapsulation adds anything)
    /// a second link that carries it, both at `speed` and standard MTU.
    pub fn router(speed: BitsPerSec, encap: EncapSpec, encap_link_mtu: usize) -> Path {
        let mut links = vec![Link {
            name: if encap.is_plain() {
                "link".into()
            } else {
                "lan".into()
            },
            speed,
            encap: EncapSpec::plain(encap.ip),
            mtu: ETHERNET_MTU,
        }];
        if !encap.is_plain() {
            links.push(Link {
                name: "wan".into(),
                speed,
                encap,
                mtu: encap_link_mtu,
            });
        }
        Path { links }
    }

    /// Theoretical rates for one frame size. Fails if the size is below the smallest test frame
    /// or above what the reference link's MTU allows.
    pub fn rate(&self, size: &FrameSize, bidirectional: bool) -> Result<SizeRate, LinerateError> {
        let reference = self
            .links
            .first()
            .ok_or_else(|| LinerateError("a path needs a link".into()))?;
        let ip = reference.encap.ip;
        let parts = size.parts(ip);
        let min = min_frame_size(ip);
        let max = reference.mtu + ETHERNET_HEADER + FCS;
        for (s, _) in &parts {
            if *s < min {
                return Err(LinerateError(format!(
                    "frame size {s} B is too small for {ip} UDP plus the {}-byte signature; the smallest that works is {min} B",
                    crate::signature::LEN
                )));
            }
            if *s > max {
                return Err(LinerateError(format!(
                    "frame size {s} B exceeds the {} B MTU of link {} (largest {max} B); give a larger MTU for jumbo frames",
                    reference.mtu, reference.name
                )));
            }
        }
        let weight: f64 = parts.iter().map(|p| f64::from(p.1)).sum();
        let mut loads = Vec::with_capacity(self.links.len());
        // Per link: mean L1 bits, L2 bits and frames per test packet.
        let mut per_packet = Vec::with_capacity(self.links.len());
        for link in &self.links {
            let (mut l1, mut l2, mut nframes) = (0.0, 0.0, 0.0);
            let mut first: Option<(Vec<usize>, Fate)> = None;
            let mut dropped: Option<Fate> = None;
            for (s, w) in &parts {
                let (frames, fate) = frames_on_link(s - ETHERNET_HEADER - FCS, link);
                if matches!(fate, Fate::Dropped { .. }) {
                    dropped.get_or_insert(fate.clone());
                }
                let w = f64::from(*w);
                l1 += w * frames.iter().map(|f| wire_bits(*f)).sum::<f64>();
                l2 += w * frames.iter().map(|f| (*f * 8) as f64).sum::<f64>();
                nframes += w * frames.len() as f64;
                first.get_or_insert((frames, fate));
            }
            let (frames, fate) = first.unwrap_or((Vec::new(), Fate::Whole));
            let fate = dropped.unwrap_or(fate);
            let (l1, l2, nframes) = (l1 / weight, l2 / weight, nframes / weight);
            let max_pps = if matches!(fate, Fate::Dropped { .. }) || l1 == 0.0 {
                Pps(0.0)
            } else {
                Pps(link.speed.0 / l1)
            };
            per_packet.push((l1, l2, nframes));
            loads.push(LinkLoad {
                link: link.name.clone(),
                encap: link.encap.to_string(),
                frames,
                fate,
                max_pps,
                frames_per_sec: Pps(0.0),
                l2: BitsPerSec(0.0),
                l1: BitsPerSec(0.0),
            });
        }
        let bottleneck = loads
            .iter()
            .enumerate()
            .min_by(|a, b| a.1.max_pps.0.total_cmp(&b.1.max_pps.0))
            .map(|(i, _)| i)
            .unwrap_or(0);
        let max_pps = loads[bottleneck].max_pps;
        for (load, (l1, l2, nframes)) in loads.iter_mut().zip(&per_packet) {
            load.frames_per_sec = Pps(max_pps.0 * nframes);
            load.l1 = BitsPerSec(max_pps.0 * l1);
            load.l2 = BitsPerSec(max_pps.0 * l2);
        }
        let directions: u8 = if bidirectional { 2 } else { 1 };
        let d = f64::from(directions);
        Ok(SizeRate {
            size: *size,
            mean_frame: size.mean(ip),
            total_pps: Pps(max_pps.0 * d),
            total_l2: BitsPerSec(loads[0].l2.0 * d),
            total_l1: BitsPerSec(loads[0].l1.0 * d),
            links: loads,
            bottleneck,
            max_pps,
            directions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(s: &str) -> EncapSpec {
        s.parse().unwrap()
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn gigabit_64_byte_is_the_textbook_figure() {
        // DESIGN.md §1: 1 Gb/s / ((64 + 20) * 8) = 1,488,095.2 frames/s.
        let r = max_frame_rate(BitsPerSec(1e9), 64);
        assert!(close(r.0, 1e9 / 672.0));
        assert_eq!(r.0.floor(), 1_488_095.0);
    }

    #[test]
    fn speeds_parse_with_si_prefixes() {
        assert_eq!(parse_speed("2.5G").unwrap().0, 2.5e9);
        assert_eq!(parse_speed("10M").unwrap().0, 10e6);
        assert_eq!(parse_speed("400G").unwrap().0, 400e9);
        assert_eq!(parse_speed("100Mbps").unwrap().0, 100e6);
        assert_eq!(parse_speed("1Gb/s").unwrap().0, 1e9);
        assert_eq!(parse_speed("25000000000").unwrap().0, 25e9);
        for bad in ["fast", "1X", "", "-1G", "9M", "401G", "1e400", "NaN"] {
            assert!(parse_speed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_parse_lists_ranges_and_sets() {
        let v4 = IpVersion::V4;
        assert_eq!(parse_sizes("64, 1518", v4).unwrap().len(), 2);
        assert_eq!(
            parse_sizes("64-1518:64", v4).unwrap().len(),
            (1518 - 64) / 64 + 1
        );
        assert_eq!(parse_sizes("rfc2544,imix", v4).unwrap(), default_sizes(v4));
        assert!(parse_sizes("64-1518:0", v4).is_err());
        assert!(parse_sizes("abc", v4).is_err());
        assert!(parse_sizes("1-100000", v4).is_err());
        assert_eq!(
            default_sizes(IpVersion::V6)[0],
            FrameSize::Fixed { bytes: 82 }
        );
    }

    #[test]
    fn plain_path_rates_follow_the_formula() {
        for (speed, size) in [
            (1e9, 64usize),
            (10e9, 128),
            (2.5e9, 1518),
            (100e6, 512),
            (400e9, 1280),
        ] {
            let path = Path::router(BitsPerSec(speed), enc("ipv4"), ETHERNET_MTU);
            let r = path.rate(&FrameSize::Fixed { bytes: size }, false).unwrap();
            let pps = speed / ((size + 20) * 8) as f64;
            assert!(close(r.max_pps.0, pps), "{speed} {size}");
            assert!(close(r.total_l2.0, pps * (size * 8) as f64));
            assert!(close(r.total_l1.0, speed)); // a full link at line rate
            assert_eq!(r.links.len(), 1);
        }
    }

    #[test]
    fn encapsulated_link_is_the_bottleneck() {
        for (e, extra) in [
            ("vlan", 4usize),
            ("qinq", 8),
            ("mpls:3", 12),
            ("pppoe", 8),
            ("pppoe+vlan", 12),
            ("dslite", 40),
            ("mape", 40),
        ] {
            let path = Path::router(BitsPerSec(1e9), enc(e), ETHERNET_MTU);
            let r = path.rate(&FrameSize::Fixed { bytes: 128 }, false).unwrap();
            assert_eq!(r.bottleneck, 1, "{e}");
            assert_eq!(r.links[1].frames, vec![128 + extra], "{e}");
            assert!(
                close(r.max_pps.0, 1e9 / ((128 + extra + 20) * 8) as f64),
                "{e}"
            );
            // The reference link then runs below its line rate.
            assert!(r.links[0].l1.0 < 1e9);
            assert!(close(r.links[1].l1.0, 1e9));
        }
    }

    #[test]
    fn bidirectional_sums_both_directions() {
        let path = Path::router(BitsPerSec(1e9), enc("pppoe"), ETHERNET_MTU);
        let one = path.rate(&FrameSize::Fixed { bytes: 64 }, false).unwrap();
        let two = path.rate(&FrameSize::Fixed { bytes: 64 }, true).unwrap();
        let pps = 1e9 / ((64 + 8 + 20) * 8) as f64;
        assert!(close(one.total_pps.0, pps));
        assert!(close(two.total_pps.0, 2.0 * pps));
        assert!(close(two.total_l2.0, 2.0 * pps * 64.0 * 8.0));
    }

    #[test]
    fn pppoe_fragments_full_size_ipv4_and_drops_ipv6() {
        let link = Link {
            name: "wan".into(),
            speed: BitsPerSec(1e9),
            encap: enc("pppoe"),
            mtu: 1500,
        };
        // 1500-byte IPv4 packet, PPPoE IP MTU 1492: 1472 + 8 payload bytes.
        let (frames, fate) = frames_on_link(1500, &link);
        assert_eq!(
            fate,
            Fate::Fragmented {
                frames: 2,
                what: "IPv4"
            }
        );
        assert_eq!(frames, vec![14 + 8 + 20 + 1472 + 4, 64]);
        // The largest whole packet: 1492.
        assert_eq!(frames_on_link(1492, &link), (vec![1518], Fate::Whole));
        let v6 = Link {
            encap: enc("pppoe+ipv6"),
            ..link.clone()
        };
        assert!(matches!(frames_on_link(1500, &v6).1, Fate::Dropped { .. }));
        // RFC 4638 baby jumbo: a 1508-byte Ethernet MTU carries 1500 bytes of IP.
        let jumbo = Link { mtu: 1508, ..link };
        assert_eq!(frames_on_link(1500, &jumbo), (vec![1526], Fate::Whole));
    }

    #[test]
    fn dslite_fragments_the_outer_ipv6() {
        let link = Link {
            name: "wan".into(),
            speed: BitsPerSec(1e9),
            encap: enc("dslite"),
            mtu: 1500,
        };
        let (frames, fate) = frames_on_link(1500, &link);
        assert!(matches!(fate, Fate::Fragmented { frames: 2, .. }));
        // 1452 bytes of room after 40 + 8: 1448 (a multiple of 8), then 52.
        assert_eq!(frames, vec![14 + 48 + 1448 + 4, 14 + 48 + 52 + 4]);
        assert_eq!(frames_on_link(1460, &link), (vec![1518], Fate::Whole));
    }

    #[test]
    fn mape_fragments_the_outer_ipv6_like_dslite() {
        // RFC 7597 §8.3.1: the CE and BR fragment the encapsulating IPv6 packet as DS-Lite's
        // endpoints do; the frames on the WAN link are the same sizes.
        let link = Link {
            name: "wan".into(),
            speed: BitsPerSec(1e9),
            encap: enc("mape"),
            mtu: 1500,
        };
        let (frames, fate) = frames_on_link(1500, &link);
        assert_eq!(
            fate,
            Fate::Fragmented {
                frames: 2,
                what: "outer IPv6 (MAP-E tunnel)"
            }
        );
        assert_eq!(frames, vec![14 + 48 + 1448 + 4, 14 + 48 + 52 + 4]);
        assert_eq!(frames_on_link(1460, &link), (vec![1518], Fate::Whole));
        // 64-byte reference frames are 104 bytes on the tunnel link.
        assert_eq!(frames_on_link(46, &link), (vec![104], Fate::Whole));
    }

    #[test]
    fn fragmented_sizes_cost_every_fragment() {
        let path = Path::router(BitsPerSec(1e9), enc("pppoe"), ETHERNET_MTU);
        let r = path.rate(&FrameSize::Fixed { bytes: 1518 }, false).unwrap();
        let bits = ((1518 + 20) + (64 + 20)) as f64 * 8.0;
        assert!(close(r.max_pps.0, 1e9 / bits));
        assert!(close(r.links[1].frames_per_sec.0, 2.0 * r.max_pps.0));
    }

    #[test]
    fn imix_weights_its_parts() {
        let path = Path::router(BitsPerSec(1e9), enc("ipv4"), ETHERNET_MTU);
        let r = path.rate(&FrameSize::Imix, false).unwrap();
        let bits = (7 * (64 + 20) + 4 * (594 + 20) + (1518 + 20)) as f64 * 8.0 / 12.0;
        assert!(close(r.max_pps.0, 1e9 / bits));
        assert!(close(r.mean_frame, (7 * 64 + 4 * 594 + 1518) as f64 / 12.0));
    }

    #[test]
    fn sizes_out_of_range_name_what_works() {
        let v6 = Path::router(BitsPerSec(1e9), enc("ipv6"), ETHERNET_MTU);
        let e = v6.rate(&FrameSize::Fixed { bytes: 64 }, false).unwrap_err();
        assert!(e.0.contains("82 B"), "{e}");
        let v4 = Path::router(BitsPerSec(1e9), enc("ipv4"), ETHERNET_MTU);
        assert!(v4
            .rate(&FrameSize::Fixed { bytes: 63 }, false)
            .unwrap_err()
            .0
            .contains("64 B"));
        assert!(v4.rate(&FrameSize::Fixed { bytes: 1519 }, false).is_err());
    }
}
