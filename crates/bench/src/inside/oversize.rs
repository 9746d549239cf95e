//! The streams of `trial --inside` whose packets the session or tunnel does not carry whole:
//! refused as a plan refuses them, or with `--fragment-oversize` taken out of the fast path,
//! sent fragmented through the control planes by [`Inside::finish`], and counted as they are
//! reassembled at the far end.

use std::time::Duration;

use engine::control;
use engine::stream::Limit;
use engine::trial::TrialStream;
use wire::linerate::{Fate, FrameSize, Path};
use wire::template::{FrameTemplate, StreamSpec};

use super::{failed, BenchError, Inside, MAX_SLOW};

/// A stream whose packets must be fragmented inside the tunnel.
pub(super) struct Oversize {
    pub(super) id: u16,
    pub(super) size: usize,
    pub(super) tx_port: usize,
    pub(super) packets: u64,
    pub(super) capped: bool,
    pub(super) template: FrameTemplate,
    pub(super) fate: Fate,
    pub(super) frames_on_link: Vec<usize>,
}

impl Inside {
    /// Refuses streams whose packets do not fit the session or tunnel (the text a plan gives,
    /// `bench_model::oversize`), or with `--fragment-oversize` takes them out of `streams`:
    /// they are sent fragmented by [`finish`](Self::finish). Streams mixing such sizes with
    /// others (IMIX) are refused then: their fragmented part could not be told apart in the
    /// counts.
    pub fn split_oversize(
        &mut self,
        streams: Vec<TrialStream>,
    ) -> Result<Vec<TrialStream>, BenchError> {
        let mut keep = Vec::new();
        for s in streams {
            let max = self.max_datagram(s.tx_port);
            let big = |t: &FrameTemplate| t.reference_size() - 18 > max;
            let Some(too_big) = s.config.frames.iter().find(|t| big(t)) else {
                keep.push(s);
                continue;
            };
            if !self.fragment_oversize {
                return Err(BenchError::Usage(format!(
                    "stream {}: {}",
                    s.config.id,
                    self.refusal(too_big.reference_size(), s.tx_port)
                )));
            }
            if s.config.frames.len() > 1 {
                return Err(BenchError::Usage(format!(
                    "stream {}: a size mix with packets above the {max} B the {} carries whole; \
                     give fixed sizes (the big ones are sent fragmented)",
                    s.config.id,
                    if self.is_pppoe() { "session" } else { "tunnel" }
                )));
            }
            let t = s.config.frames[0].clone();
            let size = t.reference_size();
            let pppoe = self.is_pppoe();
            let encap = if pppoe { "pppoe" } else { "dslite" };
            // The link that carries the encapsulation: PPPoE's MRU plus its 8 bytes, or the
            // tunnel MTU.
            let mtu = if pppoe { max + 8 } else { max + 40 };
            let path = Path::router(
                wire::units::BitsPerSec(1e9),
                encap.parse().expect("encap"),
                mtu,
            );
            let rate = path
                .rate(&FrameSize::Fixed { bytes: size }, false)
                .map_err(|e| BenchError::Usage(e.to_string()))?;
            let wan = &rate.links[rate.links.len() - 1];
            let pps = s.config.pps().0.min(1e9);
            let wanted = match s.config.limit {
                Limit::Frames(n) => n,
                Limit::DurationNs(ns) => (pps * ns as f64 / 1e9) as u64,
            };
            self.oversize.push(Oversize {
                id: s.config.id,
                size,
                tx_port: s.tx_port,
                packets: wanted.min(MAX_SLOW),
                capped: wanted > MAX_SLOW,
                template: plain_template(&t, size)?,
                fate: wan.fate.clone(),
                frames_on_link: wan.frames.clone(),
            });
        }
        Ok(keep)
    }
}

/// The plain IPv4 template of the same stream and size (the packet before encapsulation).
fn plain_template(t: &FrameTemplate, size: usize) -> Result<FrameTemplate, BenchError> {
    let d = wire::dissect::dissect(t.bytes()).map_err(|e| failed(e.to_string()))?;
    let sig = wire::signature::Signature::new_checked(&t.bytes()[t.signature_offset()..])
        .map_err(|e| failed(e.to_string()))?;
    let mut spec = StreamSpec::new("ipv4".parse().expect("encap"));
    spec.stream_id = sig.stream_id();
    spec.src_ip = d.src;
    spec.dst_ip = d.dst;
    spec.dst_port = 9;
    FrameTemplate::new(&spec, size).map_err(|e| failed(e.to_string()))
}

/// Stream id of a signed IPv4/UDP packet.
pub(super) fn signature_id(p: &[u8]) -> Option<u16> {
    wire::signature::Signature::new_checked(p.get(28..)?)
        .ok()
        .map(|s| s.stream_id())
}

/// Sends `o.packets` stamped packets through `send` (which returns the frames it queued), 25
/// at a time with a pause, so that the control sockets keep up. (packets, fragments).
pub(super) fn send_slow(o: &Oversize, mut send: impl FnMut(&[u8]) -> usize) -> (u64, u64) {
    let mut frame = o.template.bytes().to_vec();
    let mut frags = 0u64;
    for seq in 0..o.packets {
        o.template.stamp(&mut frame, seq, control::now().0);
        frags += send(&frame[14..]) as u64;
        if seq % 25 == 24 {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    (o.packets, frags)
}

/// The whole datagrams of a stream that arrive after it was sent: `take` returns how many more
/// came since it was last called; collected until `want` are in or none came for a while
/// (`engine::settle`).
pub(super) fn collect_until(want: u64, mut take: impl FnMut() -> u64) -> u64 {
    let mut got = 0;
    let settled = engine::settle::until_count(want, || {
        got += take();
        Ok::<_, std::convert::Infallible>(got)
    });
    match settled {
        Ok(n) => n,
        Err(never) => match never {},
    }
}

pub(super) fn row(o: &Oversize, sent: u64, frags: u64, whole: u64) -> serde_json::Value {
    let fate = match &o.fate {
        Fate::Whole => "whole".to_string(),
        Fate::Fragmented { frames, what } => format!("fragmented into {frames} ({what})"),
        Fate::Dropped { reason } => format!("dropped: {reason}"),
    };
    serde_json::json!({
        "stream": o.id, "size": o.size, "from": if o.tx_port == 0 { "a" } else { "b" },
        "fate": fate, "frames_on_link": o.frames_on_link, "packets": sent,
        "fragments": frags, "reassembled": whole, "capped": o.capped,
    })
}
