//! A stream: what it sends (base frames per size, flow variation, reordering on purpose), how
//! fast (rate, bursts) and for how long. [`FrameGen`] writes frame number `i` of a stream into
//! a buffer: copy of the base frame, signature stamped by the frame's
//! [`FrameTemplate::stamp`], flow fields patched in place with the checksums updated
//! incrementally (RFC 1624) — no allocation, no full checksum per frame.

use crate::Error;
use serde::Serialize;
use std::net::IpAddr;
use wire::bytes::Fields;
use wire::checksum;
use wire::dissect::Dissection;
use wire::template::FrameTemplate;
use wire::units::{BitsPerSec, Pps};

/// How fast a stream sends.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rate {
    /// Frames per second.
    Pps(Pps),
    /// Bits per second counting preamble, SFD and inter-frame gap (20 B) and the FCS.
    L1Bps(BitsPerSec),
    /// Bits per second of the frame including FCS.
    L2Bps(BitsPerSec),
    /// As fast as the port can send (for measuring the tester itself).
    Unlimited,
}

impl Rate {
    /// Frames per second for frames of `avg_len_with_fcs` bytes on average.
    pub fn pps(&self, avg_len_with_fcs: f64) -> Pps {
        match *self {
            Rate::Pps(p) => p,
            Rate::L1Bps(b) => Pps(b.0 / ((avg_len_with_fcs + 20.0) * 8.0)),
            Rate::L2Bps(b) => Pps(b.0 / (avg_len_with_fcs * 8.0)),
            Rate::Unlimited => Pps(f64::INFINITY),
        }
    }
}

/// When a stream stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// Send for this many nanoseconds.
    DurationNs(u64),
    /// Send exactly this many frames.
    Frames(u64),
}

/// How flow fields vary from frame to frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowMode {
    /// Every varying field steps by one per frame (modulo its count).
    #[default]
    Increment,
    /// Each field takes a pseudorandom value in its range per frame (RFC 4814 §4.5), from a
    /// fixed seed so that a trial is repeatable. Fields vary independently, so a tuple may
    /// repeat before every combination was sent.
    Random { seed: u64 },
    /// The frames cycle through every combination of the varying fields — N = the product of
    /// the counts distinct 5-tuples — in counting order (source port fastest, then destination
    /// port, source address, destination address); no tuple repeats within a cycle of N frames.
    /// What a NAT or stateful firewall needs to create N connections (issue #15).
    Tuples,
    /// Like [`FlowMode::Tuples`], in an RFC 4814 pseudorandom order: position p of a cycle
    /// sends tuple perm(p) of a seeded bijective permutation of 0..N
    /// ([`crate::flowset::TuplePermutation`]), so no tuple repeats within a cycle.
    PermutedTuples { seed: u64 },
}

/// Flow variation: how many distinct values each field takes, starting at the base frame's
/// value. Addresses vary in their last 32 bits (IPv4 whole, IPv6 the low 32 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Flows {
    pub src_ip_count: u32,
    pub dst_ip_count: u32,
    pub src_port_count: u16,
    pub dst_port_count: u16,
    pub mode: FlowMode,
}

impl Flows {
    /// The flow set of a tuple mode ([`FlowMode::Tuples`], [`FlowMode::PermutedTuples`]);
    /// `None` for the per-field modes, or when the product of the counts exceeds
    /// [`crate::flowset::MAX_FLOW_SET`].
    pub fn flow_set(&self) -> Option<crate::flowset::FlowSet> {
        let seed = match self.mode {
            FlowMode::Increment | FlowMode::Random { .. } => return None,
            FlowMode::Tuples => None,
            FlowMode::PermutedTuples { seed } => Some(seed),
        };
        crate::flowset::FlowSet::new(
            self.src_ip_count,
            self.dst_ip_count,
            self.src_port_count,
            self.dst_port_count,
            seed,
        )
    }

    /// Whether the mode cycles through a flow set of combined tuples.
    pub fn is_tuple_set(&self) -> bool {
        matches!(
            self.mode,
            FlowMode::Tuples | FlowMode::PermutedTuples { .. }
        )
    }
}

impl Default for Flows {
    fn default() -> Self {
        Flows {
            src_ip_count: 1,
            dst_ip_count: 1,
            src_port_count: 1,
            dst_port_count: 1,
            mode: FlowMode::Increment,
        }
    }
}

/// Everything about one stream. `frames` are the base frames, one per frame size, each
/// carrying a signature with this stream's id; `weights` gives each size's share (IMIX), one
/// entry per frame.
#[derive(Debug, Clone)]
pub struct StreamConfig {
    pub id: u16,
    pub frames: Vec<FrameTemplate>,
    pub weights: Vec<u32>,
    pub flows: Flows,
    pub rate: Rate,
    /// Frames per burst; 1 = evenly spaced. Without [`burst_gap`](Self::burst_gap) the frames
    /// of a burst go back to back and bursts follow each other at the average `rate`.
    pub burst: u32,
    /// Idle time after each burst (needs `burst` ≥ 2): the frames of a burst are then paced at
    /// `rate` (back to back if `Rate::Unlimited`), and the next burst starts this long after
    /// the end of the previous one (the due time of its last frame plus one frame time at
    /// `rate`). The average rate is `burst / (burst/rate + gap)`. See [`crate::pacing`].
    pub burst_gap: Option<std::time::Duration>,
    pub limit: Limit,
    /// Every `k`-th pair of sequence numbers is sent swapped (k ≥ 2), to test the receiver's
    /// reordering count (this kernel has no netem).
    pub reorder_every: Option<u64>,
    /// Overwrite the destination MAC with the resolved next hop and the source MAC with the
    /// port's own (the default); `false` sends the base frames' MACs unchanged.
    pub rewrite_macs: bool,
    /// The line rate of the link the stream leaves by, bits/s as on the wire (L1: preamble,
    /// SFD, inter-frame gap and FCS counted, as [`Rate::L1Bps`]). A paced stream never gets
    /// frames faster than that link carries them, also when it catches up after a stall —
    /// except that a catch-up may go at twice the stream's own rate where that is faster
    /// ([`crate::pacing::Pacer::with_link`]). `None`: no limit (a bench measuring the
    /// tester). A trial sets the link's reference speed: a veth has no line rate of its own.
    /// Several streams leaving one port share its link: a trial paces each at its part of it
    /// ([`crate::trial::TrialConfig::paced_streams`]).
    pub link_l1_bps: Option<BitsPerSec>,
}

impl StreamConfig {
    /// The plain case: one frame template sent at a constant `rate` until `limit`, no flow
    /// variation, bursts or reordering, MACs resolved by the trial (`rewrite_macs`). Callers
    /// change the fields they need on top.
    pub fn single(id: u16, frame: FrameTemplate, rate: Rate, limit: Limit) -> StreamConfig {
        StreamConfig {
            id,
            frames: vec![frame],
            weights: vec![1],
            flows: Flows::default(),
            rate,
            burst: 1,
            burst_gap: None,
            limit,
            reorder_every: None,
            rewrite_macs: true,
            link_l1_bps: None,
        }
    }

    /// The most frames/s the stream's link carries of its frames (their weighted mean wire
    /// cost), if it has a line rate.
    pub fn link_pps(&self) -> Option<Pps> {
        let bps = self.link_l1_bps.filter(|b| b.0.is_finite() && b.0 > 0.0)?;
        Some(Rate::L1Bps(bps).pps(self.avg_len_with_fcs()))
    }

    /// Average frame length including the 4-byte FCS, weighted by `weights`.
    pub fn avg_len_with_fcs(&self) -> f64 {
        let total: u64 = self.weights.iter().map(|&w| u64::from(w)).sum();
        if total == 0 {
            return 0.0;
        }
        self.frames
            .iter()
            .zip(&self.weights)
            .map(|(f, &w)| (f.len() + 4) as f64 * f64::from(w))
            .sum::<f64>()
            / total as f64
    }

    /// Frames/s of `rate` (inside a burst when a burst gap is set).
    pub fn pps(&self) -> Pps {
        self.rate.pps(self.avg_len_with_fcs())
    }

    /// Longest burst gap accepted.
    pub const MAX_BURST_GAP: std::time::Duration = std::time::Duration::from_secs(3600);

    /// Rejects settings that make no sense: a burst gap that is zero, longer than
    /// [`Self::MAX_BURST_GAP`], or given with bursts of one frame (that is only a lower
    /// rate); a reorder interval below 2; bursts of 0 frames or above [`Self::MAX_BURST`], no
    /// frame sizes; a rate of 0, below a frame a day, above [`Self::MAX_PPS`] or not a number;
    /// 0 frames or 0 s; a stream that would send for longer than [`Self::MAX_STREAM_TIME`].
    pub fn check(&self) -> Result<(), Error> {
        let bad = |m: String| Err(Error::Config(format!("stream {}: {m}", self.id)));
        if let Some(gap) = self.burst_gap {
            if gap.is_zero() {
                return bad("a burst gap must be longer than 0 (or leave it out)".into());
            }
            if gap > Self::MAX_BURST_GAP {
                return bad(format!(
                    "burst gap {gap:?} is longer than {:?}",
                    Self::MAX_BURST_GAP
                ));
            }
            if self.burst < 2 {
                return bad(
                    "a burst gap needs bursts of at least 2 frames (with 1 it is only a lower rate)"
                        .into(),
                );
            }
        }
        if let Some(k) = self.reorder_every {
            if k < 2 {
                return bad("reorder interval must be ≥ 2".into());
            }
        }
        if self.burst == 0 {
            return bad("a burst needs at least 1 frame".into());
        }
        if self.burst > Self::MAX_BURST {
            return bad(format!(
                "a burst of {} frames is more than {} (the frames of a burst go back to back, whatever the trial's duration)",
                self.burst,
                Self::MAX_BURST
            ));
        }
        if self.flows.is_tuple_set() && self.flows.flow_set().is_none() {
            return bad(format!(
                "the flow set (the product of the address and port counts) is larger than {} tuples",
                crate::flowset::MAX_FLOW_SET
            ));
        }
        if self.frames.is_empty() || self.weights.iter().all(|&w| w == 0) {
            return bad("a stream needs at least one frame size with a non-zero weight".into());
        }
        // Every wait has a bound: a rate so low, or a stream so long, that the sender would
        // wait for more than a day is refused, not waited out.
        let pps = self.pps().0;
        if pps.is_nan() || pps <= 0.0 {
            return bad(format!(
                "the rate must be above 0 (it gives {pps} frames/s)"
            ));
        }
        if pps.is_finite() && pps > Self::MAX_PPS.0 {
            return bad(format!(
                "{pps:e} frames/s is more than any Ethernet link carries (400 Gb/s carries 595 M frames/s of 64 B); give at most {:e}, or an unlimited rate",
                Self::MAX_PPS.0
            ));
        }
        let day = Self::MAX_STREAM_TIME.as_secs_f64();
        if pps < 1.0 / day {
            return bad(format!(
                "{pps:e} frames/s is less than one frame a day; give a higher rate"
            ));
        }
        let average = match self.burst_gap {
            Some(gap) => {
                let b = f64::from(self.burst);
                b / (b / pps + gap.as_secs_f64())
            }
            None => pps,
        };
        let secs = match self.limit {
            Limit::Frames(0) => return bad("send at least 1 frame".into()),
            Limit::Frames(n) => n as f64 / average,
            Limit::DurationNs(0) => return bad("send for longer than 0 s".into()),
            Limit::DurationNs(ns) => ns as f64 / 1e9,
        };
        if secs > day {
            return bad(format!(
                "it would send for {secs:.0} s, more than a day ({day:.0} s); send fewer frames, faster, or for less time"
            ));
        }
        Ok(())
    }

    /// The highest paced rate: above any Ethernet link's 64-byte frame rate. A paced schedule
    /// faster than this never slips (its catch-up cap, 10 ms worth of frames, overflows), so a
    /// stream of `--rate 1e30pps --duration 1` had to send 2^64 frames: it never ended.
    pub const MAX_PPS: Pps = Pps(1e9);

    /// The largest burst: a burst's frames are due together and go back to back, so
    /// `--burst 100000000` made a 1 s trial send for minutes. 2^20 frames is 0.7 s of 64-byte
    /// frames at 1 Gb/s.
    pub const MAX_BURST: u32 = 1 << 20;

    /// The longest a stream may send: a day.
    pub const MAX_STREAM_TIME: std::time::Duration = std::time::Duration::from_secs(86_400);
}

/// One base frame: its template (which stamps the signature), its bytes with this port's MACs
/// and where its flow fields are.
#[derive(Debug, Clone)]
struct Recipe {
    template: FrameTemplate,
    base: Vec<u8>,
    flow: FlowFields,
}

/// Where the fields that flows vary sit in a frame, and the checksums that cover them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FlowFields {
    /// The low 32 bits of the source and destination addresses of the test packet's IP header.
    src_addr_low: usize,
    dst_addr_low: usize,
    /// The UDP source port; the destination port follows it.
    udp: usize,
    /// The IPv4 header checksum (None for IPv6, which has none).
    ip_csum: Option<usize>,
    udp_csum: usize,
}

impl FlowFields {
    /// From the dissection of a UDP frame; None if it has no UDP header.
    fn of(d: &Dissection) -> Option<FlowFields> {
        let udp = d.udp_offset?;
        let ip = d.ip_offset;
        // IPv4: addresses at 12 and 16, checksum at 10. IPv6: addresses at 8 and 24 (16 bytes).
        let (ip_csum, src_addr_low, dst_addr_low) = match d.src {
            IpAddr::V4(_) => (Some(ip + 10), ip + 12, ip + 16),
            IpAddr::V6(_) => (None, ip + 8 + 12, ip + 24 + 12),
        };
        Some(FlowFields {
            src_addr_low,
            dst_addr_low,
            udp,
            ip_csum,
            udp_csum: udp + 6,
        })
    }
}

/// Writes the frames of one stream.
#[derive(Debug, Clone)]
pub struct FrameGen {
    id: u16,
    recipes: Vec<Recipe>,
    /// IMIX pattern: recipe index per frame number modulo its length.
    pattern: Vec<u8>,
    flows: Flows,
    /// The flow set of a tuple mode (checked to exist in [`FrameGen::new`]).
    flow_set: Option<crate::flowset::FlowSet>,
    reorder_every: Option<u64>,
}

#[inline]
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl FrameGen {
    pub fn new(cfg: &StreamConfig) -> Result<Self, Error> {
        if cfg.frames.is_empty() || cfg.frames.len() != cfg.weights.len() || cfg.frames.len() > 255
        {
            return Err(Error::Config(format!(
                "stream {}: need 1..=255 base frames with one weight each",
                cfg.id
            )));
        }
        cfg.check()?;
        let mut recipes = Vec::new();
        for t in &cfg.frames {
            let (d, sig) = wire::dissect::signature(t.bytes()).ok_or_else(|| {
                Error::Config(format!(
                    "stream {}: base frame carries no signature after a UDP header",
                    cfg.id
                ))
            })?;
            if sig.stream_id() != cfg.id {
                return Err(Error::Config(format!(
                    "stream {}: base frame's signature says stream {}",
                    cfg.id,
                    sig.stream_id()
                )));
            }
            // The flow fields are found by dissection and the signature by the template: they
            // must describe the same frame.
            let flow = FlowFields::of(&d)
                .filter(|fl| {
                    d.udp_payload_offset() == Some(t.signature_offset())
                        && t.udp_checksum().0 == fl.udp_csum
                })
                .ok_or_else(|| {
                    Error::Config(format!(
                        "stream {}: base frame's headers do not match its template",
                        cfg.id
                    ))
                })?;
            recipes.push(Recipe {
                template: t.clone(),
                base: t.bytes().to_vec(),
                flow,
            });
        }
        // A short deterministic interleaving of the sizes in proportion to the weights.
        let total: u64 = cfg.weights.iter().map(|&w| u64::from(w)).sum();
        if total == 0 || total > 1 << 16 {
            return Err(Error::Config(format!(
                "stream {}: weights must sum to 1..=65536",
                cfg.id
            )));
        }
        let mut pattern = Vec::with_capacity(total as usize);
        let mut credit: Vec<f64> = vec![0.0; cfg.weights.len()];
        for _ in 0..total {
            for (c, &w) in credit.iter_mut().zip(&cfg.weights) {
                *c += f64::from(w) / total as f64;
            }
            let (best, _) =
                credit.iter().enumerate().fold(
                    (0, f64::MIN),
                    |acc, (i, &c)| if c > acc.1 { (i, c) } else { acc },
                );
            credit[best] -= 1.0;
            pattern.push(best as u8);
        }
        Ok(FrameGen {
            id: cfg.id,
            recipes,
            pattern,
            flows: cfg.flows,
            flow_set: cfg.flows.flow_set(),
            reorder_every: cfg.reorder_every,
        })
    }

    pub fn stream_id(&self) -> u16 {
        self.id
    }

    /// The base frames of its recipes, one per size (before flow and signature patching).
    pub fn base_frames(&self) -> impl Iterator<Item = &[u8]> {
        self.recipes.iter().map(|r| r.base.as_slice())
    }

    /// The largest frame this stream sends.
    pub fn max_len(&self) -> usize {
        self.recipes.iter().map(|r| r.base.len()).max().unwrap_or(0)
    }

    /// Rewrites the Ethernet addresses of every base frame.
    pub fn set_macs(&mut self, dst: [u8; 6], src: [u8; 6]) {
        for r in &mut self.recipes {
            r.base[0..6].copy_from_slice(&dst);
            r.base[6..12].copy_from_slice(&src);
        }
    }

    /// The sequence number sent as the `index`-th frame (equal unless reordering on purpose).
    #[inline]
    pub fn seq_for_index(&self, index: u64) -> u64 {
        match self.reorder_every {
            Some(k) => match index % k {
                r if r == k - 2 => index + 1,
                r if r == k - 1 => index - 1,
                _ => index,
            },
            None => index,
        }
    }

    /// Whether stopping after `sent` frames would leave a swapped pair half sent.
    pub fn mid_pair(&self, sent: u64) -> bool {
        matches!(self.reorder_every, Some(k) if sent % k == k - 1)
    }

    /// How many swapped pairs the first `sent` frames contain (the reorderings a receiver
    /// should count on a lossless path).
    pub fn swapped_pairs(&self, sent: u64) -> u64 {
        self.reorder_every.map_or(0, |k| sent / k)
    }

    /// Length of the `index`-th frame.
    #[inline]
    pub fn len_for_index(&self, index: u64) -> usize {
        let seq = self.seq_for_index(index);
        self.recipes[usize::from(self.pattern[(seq % self.pattern.len() as u64) as usize])]
            .base
            .len()
    }

    /// The offset of flow field `field` (0 source address, 1 destination address, 2 source
    /// port, 3 destination port) in frame `seq`; `tuple`: the frame's offsets in a tuple mode.
    #[inline]
    fn field_index(
        &self,
        seq: u64,
        field: u64,
        count: u64,
        tuple: Option<&crate::flowset::TupleOffsets>,
    ) -> u64 {
        match (self.flows.mode, tuple) {
            (_, Some(t)) => match field {
                0 => t.src_ip,
                1 => t.dst_ip,
                2 => t.src_port,
                _ => t.dst_port,
            },
            (FlowMode::Random { seed }, None) => {
                splitmix(seed ^ splitmix(seq.wrapping_mul(4).wrapping_add(field))) % count
            }
            _ => seq % count,
        }
    }

    /// The flow set a tuple-mode stream cycles through (`None` for per-field modes): a
    /// receiver uses it to map a tuple back to its position in the cycle.
    pub fn flow_set(&self) -> Option<&crate::flowset::FlowSet> {
        self.flow_set.as_ref()
    }

    /// Steps the varying flow fields of frame `seq` (written and stamped in `f`) and patches
    /// the checksums that cover them (RFC 1624).
    #[inline]
    fn vary_flows(&self, at: &FlowFields, seq: u64, f: &mut [u8]) {
        let fl = self.flows;
        let mut udp = f.u16_at(at.udp_csum..at.udp_csum + 2);
        let mut ip = at.ip_csum.map(|c| f.u16_at(c..c + 2));
        let mut changed = false;
        let tuple = self.flow_set.as_ref().map(|fs| fs.offsets(seq));
        for (field, count, pos, is_addr) in [
            (0u64, u64::from(fl.src_ip_count), at.src_addr_low, true),
            (1, u64::from(fl.dst_ip_count), at.dst_addr_low, true),
            (2, u64::from(fl.src_port_count), at.udp, false),
            (3, u64::from(fl.dst_port_count), at.udp + 2, false),
        ] {
            if count <= 1 {
                continue;
            }
            changed = true;
            let k = self.field_index(seq, field, count, tuple.as_ref());
            if is_addr {
                let old = [f[pos], f[pos + 1], f[pos + 2], f[pos + 3]];
                let new = u32::from_be_bytes(old).wrapping_add(k as u32).to_be_bytes();
                f[pos..pos + 4].copy_from_slice(&new);
                udp = checksum::update_bytes(udp, &old, &new);
                ip = ip.map(|c| checksum::update_bytes(c, &old, &new));
            } else {
                let old = f.u16_at(pos..pos + 2);
                let new = old.wrapping_add(k as u16);
                f[pos..pos + 2].copy_from_slice(&new.to_be_bytes());
                udp = checksum::update_word(udp, old, new);
            }
        }
        if changed {
            f[at.udp_csum..at.udp_csum + 2]
                .copy_from_slice(&checksum::udp_nonzero(udp).to_be_bytes());
            if let (Some(c), Some(v)) = (at.ip_csum, ip) {
                f[c..c + 2].copy_from_slice(&v.to_be_bytes());
            }
        }
    }

    /// Writes the `index`-th frame into `out`, stamped with `timestamp_ns`; returns its length.
    /// `out` must hold [`FrameGen::max_len`] bytes.
    #[inline]
    pub fn write(&self, index: u64, timestamp_ns: u64, out: &mut [u8]) -> usize {
        let seq = self.seq_for_index(index);
        let r =
            &self.recipes[usize::from(self.pattern[(seq % self.pattern.len() as u64) as usize])];
        let len = r.base.len();
        let f = &mut out[..len];
        f.copy_from_slice(&r.base);
        // Sequence, timestamp, IPv4 ident and both checksums, from the template's bases.
        r.template.stamp(f, seq, timestamp_ns);
        self.vary_flows(&r.flow, seq, f);
        len
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    use std::net::Ipv4Addr;
    use wire::encap::EncapSpec;
    use wire::template::{FrameTemplate, StreamSpec};

    /// An IPv4/UDP frame of `len` bytes (no FCS), 192.0.2.1:1024 → 198.51.100.1:7, with a
    /// signature for `stream` and valid checksums.
    pub(crate) fn signed_frame(len: usize, stream: u16) -> FrameTemplate {
        let mut spec = StreamSpec::new(EncapSpec::default());
        spec.stream_id = stream;
        spec.src_ip = Ipv4Addr::new(192, 0, 2, 1).into();
        spec.dst_ip = Ipv4Addr::new(198, 51, 100, 1).into();
        spec.src_port = 1024;
        spec.dst_port = 7;
        let t = FrameTemplate::new(&spec, len + wire::encap::FCS).expect("template");
        assert_eq!(t.len(), len);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::signature;

    use super::tests_support::signed_frame;

    fn udp_verifies(f: &[u8]) -> bool {
        let src: [u8; 4] = f[26..30].try_into().unwrap();
        let dst: [u8; 4] = f[30..34].try_into().unwrap();
        let ph = checksum::pseudo_header_v4(src.into(), dst.into(), 17, (f.len() - 34) as u16);
        checksum::fold(ph + checksum::sum(&f[34..])) == 0xffff
    }

    fn cfg(frames: Vec<FrameTemplate>, weights: Vec<u32>) -> StreamConfig {
        StreamConfig {
            id: 7,
            frames,
            weights,
            flows: Flows::default(),
            rate: Rate::Pps(Pps(1000.0)),
            burst: 1,
            burst_gap: None,
            limit: Limit::Frames(10),
            reorder_every: None,
            rewrite_macs: true,
            link_l1_bps: None,
        }
    }

    #[test]
    fn stamps_signature_and_keeps_checksums_valid() {
        let g = FrameGen::new(&cfg(vec![signed_frame(60, 7)], vec![1])).unwrap();
        let mut buf = vec![0xa5; 2048];
        for (i, ts) in [(0u64, 0u64), (1, 123_456_789), (0xffff_ffff_1234, u64::MAX)] {
            let n = g.write(i, ts, &mut buf);
            assert_eq!(n, 60);
            let sig = signature::Signature::new_checked(&buf[42..58]).unwrap();
            assert_eq!(sig.stream_id(), 7);
            assert_eq!(sig.seq32(), i as u32);
            assert_eq!(sig.timestamp_ns(), ts);
            assert!(udp_verifies(&buf[..n]), "frame {i}");
            assert!(checksum::verifies(&buf[14..34]));
        }
    }

    #[test]
    fn flow_variation_patches_addresses_ports_and_checksums() {
        let mut c = cfg(vec![signed_frame(60, 7)], vec![1]);
        c.flows = Flows {
            src_ip_count: 3,
            dst_ip_count: 5,
            src_port_count: 7,
            dst_port_count: 1,
            mode: FlowMode::Increment,
        };
        let g = FrameGen::new(&c).unwrap();
        let mut buf = vec![0; 2048];
        for i in 0..40u64 {
            g.write(i, i * 1000, &mut buf);
            assert_eq!(buf[29], 1 + (i % 3) as u8);
            assert_eq!(buf[33], 1 + (i % 5) as u8);
            assert_eq!(
                u16::from_be_bytes([buf[34], buf[35]]),
                1024 + (i % 7) as u16
            );
            assert_eq!(u16::from_be_bytes([buf[36], buf[37]]), 7);
            assert!(udp_verifies(&buf[..60]));
            assert!(checksum::verifies(&buf[14..34]));
        }
        c.flows.mode = FlowMode::Random { seed: 42 };
        let g = FrameGen::new(&c).unwrap();
        let mut seen = std::collections::HashSet::new();
        for i in 0..200u64 {
            g.write(i, 5, &mut buf);
            assert!((1..=3).contains(&buf[29]));
            seen.insert((buf[29], buf[33], buf[35]));
            assert!(udp_verifies(&buf[..60]));
            assert!(checksum::verifies(&buf[14..34]));
        }
        assert!(
            seen.len() > 50,
            "pseudorandom flows cover the space: {}",
            seen.len()
        );
    }

    /// Reads the four flow fields of a written IPv4/UDP frame as offsets from the base frame's
    /// (192.0.2.1:1024 → 198.51.100.1:7), packed into one number.
    fn tuple_key(f: &[u8]) -> (u32, u32, u16, u16) {
        let ip = |at: usize| u32::from_be_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]]);
        (
            ip(26).wrapping_sub(u32::from_be_bytes([192, 0, 2, 1])),
            ip(30).wrapping_sub(u32::from_be_bytes([198, 51, 100, 1])),
            u16::from_be_bytes([f[34], f[35]]).wrapping_sub(1024),
            u16::from_be_bytes([f[36], f[37]]).wrapping_sub(7),
        )
    }

    /// Tuple modes: every combination once per cycle, for sizes that are not powers of two,
    /// with valid checksums; the next cycle repeats the first; the flow set maps a tuple back
    /// to its position.
    #[test]
    fn tuple_modes_send_every_combination_once_per_cycle() {
        for mode in [FlowMode::Tuples, FlowMode::PermutedTuples { seed: 9 }] {
            let mut c = cfg(vec![signed_frame(60, 7)], vec![1]);
            c.flows = Flows {
                src_ip_count: 3,
                dst_ip_count: 5,
                src_port_count: 7,
                dst_port_count: 11,
                mode,
            };
            let g = FrameGen::new(&c).unwrap();
            let fs = *g.flow_set().unwrap();
            assert_eq!(fs.size(), 1155);
            let mut buf = vec![0xa5; 2048];
            let mut first = Vec::new();
            let mut seen = std::collections::HashSet::new();
            for i in 0..1155u64 {
                g.write(i, i, &mut buf);
                assert!(udp_verifies(&buf[..60]), "{mode:?} {i}");
                assert!(checksum::verifies(&buf[14..34]));
                let k = tuple_key(&buf);
                assert!(k.0 < 3 && k.1 < 5 && k.2 < 7 && k.3 < 11, "{k:?}");
                assert!(seen.insert(k), "{mode:?}: {k:?} twice in one cycle");
                let o = crate::flowset::TupleOffsets {
                    src_ip: u64::from(k.0),
                    dst_ip: u64::from(k.1),
                    src_port: u64::from(k.2),
                    dst_port: u64::from(k.3),
                };
                assert_eq!(fs.position_of(o), Some(i));
                first.push(k);
            }
            for i in 0..1155u64 {
                g.write(1155 + i, 0, &mut buf);
                assert_eq!(tuple_key(&buf), first[i as usize]);
            }
        }
    }

    /// A million distinct source address × port tuples in pseudorandom order, none repeated
    /// within the cycle; the same seed gives the same frames.
    #[test]
    fn a_million_permuted_tuples_are_distinct_and_repeatable() {
        let mut c = cfg(vec![signed_frame(60, 7)], vec![1]);
        c.flows = Flows {
            src_ip_count: 1000,
            dst_ip_count: 1,
            src_port_count: 1000,
            dst_port_count: 1,
            mode: FlowMode::PermutedTuples { seed: 15 },
        };
        let g = FrameGen::new(&c).unwrap();
        let g2 = FrameGen::new(&c).unwrap();
        let mut buf = vec![0; 2048];
        let mut buf2 = vec![0; 2048];
        let mut seen = vec![false; 1_000_000];
        for i in 0..1_000_000u64 {
            g.write(i, 0, &mut buf);
            let (ip, _, port, _) = tuple_key(&buf);
            let k = ip as usize * 1000 + port as usize;
            assert!(!seen[k], "tuple {k} twice");
            seen[k] = true;
            if i % 9973 == 0 {
                assert!(udp_verifies(&buf[..60]));
                g2.write(i, 0, &mut buf2);
                assert_eq!(buf[..60], buf2[..60]);
            }
        }
        // Pseudorandom, not counting: the first frames are not consecutive ports.
        g.write(0, 0, &mut buf);
        let a = tuple_key(&buf);
        g.write(1, 0, &mut buf);
        let b = tuple_key(&buf);
        assert_ne!((a.0, a.2 + 1), (b.0, b.2));
    }

    #[test]
    fn tuple_sets_larger_than_the_limit_are_refused() {
        let mut c = cfg(vec![signed_frame(60, 7)], vec![1]);
        c.flows = Flows {
            src_ip_count: u32::MAX,
            dst_ip_count: u32::MAX,
            src_port_count: 2,
            dst_port_count: 1,
            mode: FlowMode::Tuples,
        };
        let e = FrameGen::new(&c).unwrap_err().to_string();
        assert!(e.contains("flow set"), "{e}");
    }

    #[test]
    fn imix_pattern_follows_weights() {
        let c = cfg(
            vec![
                signed_frame(60, 7),
                signed_frame(590, 7),
                signed_frame(1514, 7),
            ],
            vec![7, 4, 1],
        );
        let g = FrameGen::new(&c).unwrap();
        let mut counts = [0u32; 3];
        for i in 0..12 * 10 {
            match g.len_for_index(i) {
                60 => counts[0] += 1,
                590 => counts[1] += 1,
                _ => counts[2] += 1,
            }
        }
        assert_eq!(counts, [70, 40, 10]);
        let avg = c.avg_len_with_fcs();
        assert!((avg - (7.0 * 64.0 + 4.0 * 594.0 + 1518.0) / 12.0).abs() < 1e-9);
    }

    #[test]
    fn reordering_swaps_pairs() {
        let mut c = cfg(vec![signed_frame(60, 7)], vec![1]);
        c.reorder_every = Some(4);
        let g = FrameGen::new(&c).unwrap();
        let seqs: Vec<u64> = (0..8).map(|i| g.seq_for_index(i)).collect();
        assert_eq!(seqs, [0, 1, 3, 2, 4, 5, 7, 6]);
        assert!(g.mid_pair(3));
        assert!(!g.mid_pair(4));
        assert_eq!(g.swapped_pairs(8), 2);
    }

    #[test]
    fn burst_gap_nonsense_is_rejected() {
        use std::time::Duration;
        let mut c = cfg(vec![signed_frame(60, 7)], vec![1]);
        c.burst = 10;
        c.burst_gap = Some(Duration::from_millis(5));
        assert!(FrameGen::new(&c).is_ok());
        c.burst_gap = Some(Duration::ZERO);
        assert!(c.check().is_err());
        c.burst_gap = Some(Duration::from_secs(3601));
        assert!(c.check().is_err());
        c.burst_gap = Some(Duration::from_millis(5));
        c.burst = 1;
        assert!(FrameGen::new(&c).is_err());
    }

    /// Issue 19 rows 6 and small items: every wait has a bound, and nothing is silently
    /// turned into something else.
    #[test]
    fn streams_that_would_wait_forever_or_send_nothing_are_refused() {
        use std::time::Duration;
        let ok = cfg(vec![signed_frame(60, 7)], vec![1]);
        assert!(ok.check().is_ok());
        let refused = |f: &dyn Fn(&mut StreamConfig), why: &str| {
            let mut c = ok.clone();
            f(&mut c);
            let e = c.check().expect_err(why).to_string();
            assert!(e.contains(why), "{e}");
        };
        refused(
            &|c| c.rate = Rate::Pps(Pps(1e-300)),
            "less than one frame a day",
        );
        refused(&|c| c.rate = Rate::Pps(Pps(0.0)), "above 0");
        refused(&|c| c.rate = Rate::Pps(Pps(f64::NAN)), "above 0");
        refused(&|c| c.limit = Limit::Frames(0), "at least 1 frame");
        refused(&|c| c.limit = Limit::DurationNs(0), "longer than 0");
        refused(&|c| c.burst = 0, "at least 1 frame");
        refused(
            &|c| c.rate = Rate::Pps(Pps(1e30)),
            "more than any Ethernet link carries",
        );
        refused(
            &|c| c.rate = Rate::L1Bps(BitsPerSec(1e30)),
            "more than any Ethernet link carries",
        );
        refused(&|c| c.burst = 100_000_000, "a burst of 100000000 frames");
        let mut top = ok.clone();
        top.rate = Rate::Pps(StreamConfig::MAX_PPS);
        top.burst = StreamConfig::MAX_BURST;
        assert!(top.check().is_ok());
        refused(&|c| c.weights = vec![0], "non-zero weight");
        refused(
            &|c| {
                c.rate = Rate::Pps(Pps(1.0));
                c.limit = Limit::Frames(86_401);
            },
            "more than a day",
        );
        // Bursts with gaps: the average rate decides (2 frames per 1 h gap: ~48 frames a day).
        let mut gappy = ok.clone();
        gappy.burst = 2;
        gappy.burst_gap = Some(Duration::from_secs(3600));
        gappy.limit = Limit::Frames(46);
        assert!(gappy.check().is_ok());
        gappy.limit = Limit::Frames(50);
        assert!(gappy
            .check()
            .unwrap_err()
            .to_string()
            .contains("more than a day"));
        let mut fast = ok.clone();
        fast.rate = Rate::Unlimited;
        fast.limit = Limit::Frames(u64::MAX);
        assert!(
            fast.check().is_ok(),
            "unpaced streams end when the port is done"
        );
    }

    #[test]
    fn rejects_unsigned_or_foreign_frames() {
        assert!(FrameGen::new(&cfg(vec![signed_frame(60, 8)], vec![1])).is_err());
        assert!(FrameGen::new(&cfg(vec![], vec![])).is_err());
    }

    #[test]
    fn rates_convert_per_frame_size() {
        assert!((Rate::L1Bps(BitsPerSec(1e9)).pps(64.0).0 - 1_488_095.238).abs() < 0.01);
        assert!((Rate::L2Bps(BitsPerSec(512e3)).pps(64.0).0 - 1000.0).abs() < 1e-9);
    }
}
