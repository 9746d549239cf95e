//! The streams of `trial --inside` whose packets the session or tunnel does not carry whole:
//! refused as a plan refuses them, or with `--fragment-oversize` taken out of the fast path,
//! sent fragmented through the control planes by [`Inside::finish`], and counted as they are
//! reassembled at the far end.

use std::time::{Duration, Instant};

use engine::control;
use engine::stream::Limit;
use engine::trial::TrialStream;
use wire::linerate::{Fate, FrameSize, Path};
use wire::template::{FrameTemplate, StreamSpec};

use super::{failed, Inside, SessionError, MAX_SLOW};

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
    ) -> Result<Vec<TrialStream>, SessionError> {
        let mut keep = Vec::new();
        for s in streams {
            let max = self.max_datagram(s.tx_port);
            let big = |t: &FrameTemplate| t.reference_size() - 18 > max;
            let Some(too_big) = s.config.frames.iter().find(|t| big(t)) else {
                keep.push(s);
                continue;
            };
            if !self.fragment_oversize {
                return Err(SessionError::Usage(format!(
                    "stream {}: {}",
                    s.config.id,
                    self.refusal(too_big.reference_size(), s.tx_port)
                )));
            }
            if s.config.frames.len() > 1 {
                return Err(SessionError::Usage(format!(
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
                .map_err(|e| SessionError::Usage(e.to_string()))?;
            let wan = &rate.links[rate.links.len() - 1];
            let pps = s.config.rate.pps(s.config.avg_len_with_fcs()).min(1e9);
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
fn plain_template(t: &FrameTemplate, size: usize) -> Result<FrameTemplate, SessionError> {
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

/// How long the receiving end must stay silent before what it reassembled of an oversize
/// stream is final, and the longest the wait may take in all.
const QUIET: Duration = Duration::from_millis(300);
const SETTLE_MAX: Duration = Duration::from_secs(5);

/// Waits for the whole datagrams of a stream after it was sent: `take` returns how many more
/// arrived since it was last called. Returns when `want` are in, or when nothing arrived for
/// [`QUIET`], at most [`SETTLE_MAX`] after the start: a busy machine's late datagrams still
/// count (a fixed 300 ms wait counted them lost), a stream whose datagrams are dropped ends
/// the wait after the quiet time, as before.
pub(super) fn collect_until(want: u64, mut take: impl FnMut() -> u64) -> u64 {
    let start = Instant::now();
    let mut last_arrival = start;
    let mut got = 0;
    loop {
        std::thread::sleep(Duration::from_millis(10));
        let more = take();
        if more > 0 {
            got += more;
            last_arrival = Instant::now();
        }
        if got >= want || last_arrival.elapsed() >= QUIET || start.elapsed() >= SETTLE_MAX {
            return got;
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collecting_ends_when_all_arrived_or_after_a_quiet_time() {
        // Datagrams trickle in over several calls: all of them count.
        let mut arrivals = [2u64, 0, 0, 3, 0, 1].into_iter();
        assert_eq!(collect_until(6, || arrivals.next().unwrap_or(0)), 6);
        // Some never arrive: the wait ends after the quiet time with what came.
        let t0 = Instant::now();
        let mut arrivals = [4u64].into_iter();
        assert_eq!(collect_until(10, || arrivals.next().unwrap_or(0)), 4);
        assert!(t0.elapsed() >= QUIET);
        // Nothing at all (a stream the path drops).
        assert_eq!(collect_until(5, || 0), 0);
    }
}
