//! Receive-side accounting: classify a frame by its signature, then per stream count frames and
//! bytes, duplicates, out-of-order arrivals, latency (HDR histogram) and RFC 3550 jitter.
//!
//! Sequence accounting keeps a bitmap of the last [`WINDOW`] sequence numbers below the highest
//! seen: a frame inside the window whose bit is set is a duplicate (not counted as received);
//! one below the highest whose bit is clear is out of order (counted as received); one older
//! than the window cannot be checked and is counted as received, out of order *and* `late`.
//!
//! Before any of that, [`Receiver`] validates each signed frame of an expected stream
//! ([`crate::validate`]): headers, sequence range and timestamp. An invalid frame is counted by
//! reason in [`StreamRxReport::invalid`] and goes no further (not received, no latency).

use hdrhistogram::Histogram;
use serde::Serialize;
use wire::signature::SeqExtender;

use crate::validate::{self, Expect, Invalid, InvalidCounts};

/// Sequence numbers remembered for duplicate detection.
pub const WINDOW: u64 = 1 << 16;
/// Largest latency the histogram records exactly (10 s); larger values are clamped.
const HIST_MAX_NS: u64 = 10_000_000_000;

/// Counters of one stream at one receiving port.
#[derive(Debug, Clone)]
pub struct StreamRx {
    ext: SeqExtender,
    highest: Option<u64>,
    bitmap: Vec<u64>,
    received: u64,
    bytes: u64,
    duplicates: u64,
    out_of_order: u64,
    late: u64,
    hist: Histogram<u64>,
    lat_sum: u128,
    lat_min: u64,
    lat_max: u64,
    negative_latency: u64,
    last_transit: Option<i64>,
    jitter: f64,
    first_rx_ns: u64,
    last_rx_ns: u64,
    /// IPDV: the last in-order frame's (sequence, transit time), and D(i) − D(i−1) of frames
    /// with consecutive sequence numbers, signed: the differences ≥ 0 and the magnitudes of
    /// those < 0 in two histograms (recorded + 1, as a histogram holds no 0), and the extremes.
    last_in_order: Option<(u64, i64)>,
    ipdv_up: Histogram<u64>,
    ipdv_down: Histogram<u64>,
    ipdv_min: i64,
    ipdv_max: i64,
}

impl Default for StreamRx {
    fn default() -> Self {
        Self::new()
    }
}

impl StreamRx {
    pub fn new() -> Self {
        StreamRx {
            ext: SeqExtender::new(),
            highest: None,
            bitmap: vec![0; (WINDOW / 64) as usize],
            received: 0,
            bytes: 0,
            duplicates: 0,
            out_of_order: 0,
            late: 0,
            hist: Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid histogram bounds"),
            lat_sum: 0,
            lat_min: u64::MAX,
            lat_max: 0,
            negative_latency: 0,
            last_transit: None,
            jitter: 0.0,
            first_rx_ns: 0,
            last_rx_ns: 0,
            last_in_order: None,
            ipdv_up: Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid histogram bounds"),
            ipdv_down: Histogram::new_with_bounds(1, HIST_MAX_NS, 3)
                .expect("valid histogram bounds"),
            ipdv_min: i64::MAX,
            ipdv_max: i64::MIN,
        }
    }

    #[inline]
    fn bit(&mut self, seq: u64) -> (&mut u64, u64) {
        let i = seq % WINDOW;
        (&mut self.bitmap[(i / 64) as usize], 1u64 << (i % 64))
    }

    /// Accounts one frame: `seq32` and `tx_ns` from its signature, `rx_ns` on the same clock
    /// (CLOCK_MONOTONIC), `len` its length without FCS.
    pub fn on_frame(&mut self, seq32: u32, tx_ns: u64, rx_ns: u64, len: usize) {
        let seq = self.ext.extend(seq32);
        match self.highest {
            None => {
                self.highest = Some(seq);
                let (w, m) = self.bit(seq);
                *w |= m;
            }
            Some(h) if seq > h => {
                // Clear the bits of the sequence numbers we step over (they are now missing).
                if seq - h >= WINDOW {
                    self.bitmap.iter_mut().for_each(|w| *w = 0);
                } else {
                    for s in h + 1..seq {
                        let (w, m) = self.bit(s);
                        *w &= !m;
                    }
                }
                let (w, m) = self.bit(seq);
                *w |= m;
                self.highest = Some(seq);
            }
            Some(h) => {
                if h - seq >= WINDOW {
                    self.late += 1;
                } else {
                    let (w, m) = self.bit(seq);
                    if *w & m != 0 {
                        self.duplicates += 1;
                        return;
                    }
                    *w |= m;
                }
                self.out_of_order += 1;
            }
        }
        self.received += 1;
        self.bytes += len as u64;
        if self.first_rx_ns == 0 {
            self.first_rx_ns = rx_ns;
        }
        self.last_rx_ns = rx_ns;
        // Latency.
        let lat = if rx_ns >= tx_ns {
            rx_ns - tx_ns
        } else {
            self.negative_latency += 1;
            0
        };
        self.hist.saturating_record(lat.clamp(1, HIST_MAX_NS));
        self.lat_sum += u128::from(lat);
        self.lat_min = self.lat_min.min(lat);
        self.lat_max = self.lat_max.max(lat);
        // RFC 3550 §6.4.1 interarrival jitter, in arrival order. Wrapping: a timestamp is
        // bytes off the wire (validation bounds it, but this type must not panic on any).
        let transit = (rx_ns as i64).wrapping_sub(tx_ns as i64);
        if let Some(prev) = self.last_transit {
            let d = transit.wrapping_sub(prev).unsigned_abs() as f64;
            self.jitter += (d - self.jitter) / 16.0;
        }
        self.last_transit = Some(transit);
        // IPDV (RFC 8219 §7.3.2, RFC 5481): delay difference of frames with consecutive
        // sequence numbers; a loss or reordering breaks the pair.
        match self.last_in_order {
            Some((prev_seq, prev)) if prev_seq.checked_add(1) == Some(seq) => {
                let d = transit.wrapping_sub(prev);
                let (negative, v) = ipdv_sample(d);
                let h = if negative {
                    &mut self.ipdv_down
                } else {
                    &mut self.ipdv_up
                };
                h.saturating_record(v);
                self.ipdv_min = self.ipdv_min.min(d);
                self.ipdv_max = self.ipdv_max.max(d);
                self.last_in_order = Some((seq, transit));
            }
            Some((prev_seq, _)) if seq <= prev_seq => {}
            _ => self.last_in_order = Some((seq, transit)),
        }
    }

    /// Inter-packet delay variation of the frames received so far; `None` before two frames
    /// with consecutive sequence numbers arrived in order.
    pub fn ipdv(&self) -> Option<IpdvReport> {
        ipdv_report(&self.ipdv_up, &self.ipdv_down, self.ipdv_min, self.ipdv_max)
    }

    pub fn received(&self) -> u64 {
        self.received
    }

    /// The 64-bit sequence number [`on_frame`](Self::on_frame) would give `seq32`, without
    /// accounting anything (validation looks before it counts).
    pub fn peek_seq(&self, seq32: u32) -> u64 {
        self.ext.peek(seq32)
    }

    /// The stream's figures; `sent` (from the sender, if known) gives the exact loss.
    pub fn report(&self, stream_id: u16, sent: Option<u64>) -> StreamRxReport {
        let latency = (self.received > 0).then(|| LatencyReport {
            min_ns: self.lat_min,
            avg_ns: (self.lat_sum / u128::from(self.received)) as u64,
            max_ns: self.lat_max,
            p50_ns: self.hist.value_at_quantile(0.50),
            p90_ns: self.hist.value_at_quantile(0.90),
            p99_ns: self.hist.value_at_quantile(0.99),
            p999_ns: self.hist.value_at_quantile(0.999),
            jitter_ns: self.jitter,
        });
        let lost_by_seq = self
            .highest
            .map_or(0, |h| (h + 1).saturating_sub(self.received));
        StreamRxReport {
            stream_id,
            received: self.received,
            bytes: self.bytes,
            lost: sent.map(|s| s.saturating_sub(self.received)),
            lost_by_sequence: lost_by_seq,
            duplicates: self.duplicates,
            out_of_order: self.out_of_order,
            late: self.late,
            negative_latency: self.negative_latency,
            highest_seq: self.highest,
            first_rx_ns: self.first_rx_ns,
            last_rx_ns: self.last_rx_ns,
            latency,
            invalid: InvalidCounts::default(),
        }
    }
}

/// What an IPDV histogram records of one difference `d` (ns): whether it is negative, and
/// |d| + 1 (a histogram holds no 0) clamped to the histogram's range. The XDP receiver's
/// `ipdv_record` (`bpf/rx.bpf.c`) records the same value, so both backends bucket alike.
pub(crate) fn ipdv_sample(d: i64) -> (bool, u64) {
    (d < 0, d.unsigned_abs().saturating_add(1).min(HIST_MAX_NS))
}

/// The IPDV summary of both receivers, from the histogram of [`ipdv_sample`] values of the
/// differences ≥ 0 (`up`), that of the negative ones (`down`) and the exact extremes; `None`
/// without pairs. One function for both backends, so the same differences give the same
/// median whichever receiver bucketed them.
pub(crate) fn ipdv_report(
    up: &Histogram<u64>,
    down: &Histogram<u64>,
    min_ns: i64,
    max_ns: i64,
) -> Option<IpdvReport> {
    let (down_n, up_n) = (down.len(), up.len());
    let pairs = down_n + up_n;
    if pairs == 0 {
        return None;
    }
    // The median of the signed differences: ascending, the negative ones come first
    // (largest magnitude first), then the others; rank (pairs − 1) / 2.
    let rank = (pairs - 1) / 2;
    let at = |h: &Histogram<u64>, r: u64| {
        let v = h.value_at_quantile((r as f64 + 0.5) / h.len() as f64);
        h.highest_equivalent(v).saturating_sub(1) as i64
    };
    let median = if rank < down_n {
        -at(down, down_n - 1 - rank)
    } else {
        at(up, rank - down_n)
    };
    Some(IpdvReport {
        pairs,
        min_ns,
        median_ns: median.clamp(min_ns.min(max_ns), max_ns.max(min_ns)),
        max_ns,
    })
}

/// Inter-packet delay variation of one stream as RFC 8219 §7.3.2 reports it: IPDV(i) =
/// D(i) − D(i−1) over frames i − 1, i with consecutive sequence numbers received in order
/// (signed, nanoseconds), summarised by its minimum, median and maximum.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct IpdvReport {
    /// Pairs of consecutive frames measured.
    pub pairs: u64,
    /// Dmin, Dmed, Dmax of RFC 8219: the smallest (most negative), median and largest IPDV.
    pub min_ns: i64,
    pub median_ns: i64,
    pub max_ns: i64,
}

/// Latency figures of one stream, nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct LatencyReport {
    pub min_ns: u64,
    pub avg_ns: u64,
    pub max_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    /// RFC 3550 interarrival jitter estimate.
    pub jitter_ns: f64,
}

/// What one port received of one stream.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamRxReport {
    pub stream_id: u16,
    /// Distinct frames received (duplicates excluded).
    pub received: u64,
    /// Bytes of those frames, without FCS.
    pub bytes: u64,
    /// `sent - received` when the sender's count is known: the exact loss.
    pub lost: Option<u64>,
    /// Gaps below the highest sequence number seen (what the receiver alone can tell).
    pub lost_by_sequence: u64,
    pub duplicates: u64,
    /// Frames that arrived after a higher sequence number.
    pub out_of_order: u64,
    /// Out-of-order frames too old for the duplicate window (could not be checked).
    pub late: u64,
    /// Frames whose receive time preceded their send time (clock trouble; recorded as 0).
    pub negative_latency: u64,
    pub highest_seq: Option<u64>,
    pub first_rx_ns: u64,
    pub last_rx_ns: u64,
    pub latency: Option<LatencyReport>,
    /// Signed frames of the stream that were not counted (bad headers, sequence number out of
    /// range, forged timestamp), by reason: see [`crate::validate`].
    pub invalid: InvalidCounts,
}

/// What a frame turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// One of the expected streams (index into the receiver's stream table).
    Ours { slot: usize },
    /// Signed as an expected stream, but not valid for it: counted by `reason`, not received.
    Invalid { slot: usize, reason: Invalid },
    /// Carries a signature, but of a stream this receiver does not expect.
    UnexpectedStream,
    /// Anything else.
    Foreign,
}

/// Per-port receive accounting for a set of expected streams.
#[derive(Debug, Clone)]
pub struct Receiver {
    /// stream id -> slot + 1 (0 = not expected).
    index: Vec<u32>,
    ids: Vec<u16>,
    streams: Vec<StreamRx>,
    expect: Vec<Expect>,
    invalid: Vec<InvalidCounts>,
    /// CLOCK_MONOTONIC when the receiver started: earlier send times are forged.
    not_before_ns: u64,
    foreign: u64,
    foreign_bytes: u64,
    unexpected: u64,
}

impl Receiver {
    /// Frames counted as received over all expected streams so far (duplicates and invalid
    /// frames not included): what a trial's drain compares with what was sent.
    pub fn received_total(&self) -> u64 {
        self.streams.iter().map(|s| s.received).sum()
    }

    /// A receiver for `expected` streams that checks only what holds for any stream
    /// ([`Expect::default`]).
    pub fn new(expected: &[u16]) -> Self {
        let e: Vec<(u16, Expect)> = expected.iter().map(|&id| (id, Expect::default())).collect();
        Self::with_expect(&e, 0)
    }

    /// A receiver for streams with what each one's frames must look like
    /// ([`Expect::of`] its configuration); `not_before_ns` (CLOCK_MONOTONIC, 0: none) is
    /// when the trial started, before which no frame can have been sent.
    pub fn with_expect(expected: &[(u16, Expect)], not_before_ns: u64) -> Self {
        let mut index = vec![0u32; 1 << 16];
        let mut ids = Vec::new();
        let mut expect = Vec::new();
        for &(id, e) in expected {
            if index[usize::from(id)] == 0 {
                ids.push(id);
                expect.push(e);
                index[usize::from(id)] = ids.len() as u32;
            }
        }
        let streams = ids.iter().map(|_| StreamRx::new()).collect();
        Receiver {
            index,
            invalid: vec![InvalidCounts::default(); ids.len()],
            ids,
            streams,
            expect,
            not_before_ns,
            foreign: 0,
            foreign_bytes: 0,
            unexpected: 0,
        }
    }

    /// Classifies and accounts one frame received at `rx_ns` (CLOCK_MONOTONIC).
    #[inline]
    pub fn on_frame(&mut self, frame: &[u8], rx_ns: u64) -> Class {
        self.on_frame_len(frame, frame.len(), rx_ns)
    }

    /// As [`Receiver::on_frame`], for a frame that was `len` bytes on the wire (more than
    /// `frame.len()` when the kernel took its VLAN tag off: [`crate::sys::RxPacket::len_on_wire`]).
    #[inline]
    pub fn on_frame_len(&mut self, frame: &[u8], len: usize, rx_ns: u64) -> Class {
        let Some((d, sig)) = wire::dissect::signature(frame) else {
            self.foreign += 1;
            self.foreign_bytes += len as u64;
            return Class::Foreign;
        };
        match self.index[usize::from(sig.stream_id())] {
            0 => {
                self.unexpected += 1;
                Class::UnexpectedStream
            }
            i => {
                let slot = i as usize - 1;
                let (seq32, tx_ns) = (sig.seq32(), sig.timestamp_ns());
                let exp = &self.expect[slot];
                let st = &mut self.streams[slot];
                let valid = validate::check_headers(frame, &d, len, exp).and_then(|()| {
                    let seq = st.peek_seq(seq32);
                    validate::check_seq_time(seq, tx_ns, rx_ns, self.not_before_ns, exp)
                });
                if let Err(reason) = valid {
                    self.invalid[slot].add(reason);
                    return Class::Invalid { slot, reason };
                }
                st.on_frame(seq32, tx_ns, rx_ns, len);
                Class::Ours { slot }
            }
        }
    }

    /// Counts a frame that was not even looked at (e.g. control traffic answered elsewhere).
    pub fn count_foreign(&mut self, len: usize) {
        self.foreign += 1;
        self.foreign_bytes += len as u64;
    }

    pub fn stream(&self, id: u16) -> Option<&StreamRx> {
        let i = self.index[usize::from(id)];
        (i != 0).then(|| &self.streams[i as usize - 1])
    }

    /// Invalid frames of stream `id` by reason (`None` if it is not expected).
    pub fn invalid(&self, id: u16) -> Option<&InvalidCounts> {
        let i = self.index[usize::from(id)];
        (i != 0).then(|| &self.invalid[i as usize - 1])
    }

    /// Invalid frames of all expected streams, by reason.
    pub fn invalid_total(&self) -> InvalidCounts {
        let mut t = InvalidCounts::default();
        self.invalid.iter().for_each(|c| t.merge(c));
        t
    }

    /// Stream `id`'s report ([`StreamRx::report`]) with its invalid frames.
    pub fn report(&self, id: u16, sent: Option<u64>) -> Option<StreamRxReport> {
        let mut r = self.stream(id)?.report(id, sent);
        r.invalid = *self.invalid(id)?;
        Some(r)
    }

    pub fn foreign(&self) -> u64 {
        self.foreign
    }

    pub fn foreign_bytes(&self) -> u64 {
        self.foreign_bytes
    }

    /// Signed frames of streams this receiver was not told to expect.
    pub fn unexpected(&self) -> u64 {
        self.unexpected
    }

    pub fn stream_ids(&self) -> &[u16] {
        &self.ids
    }
}

/// Steering the frames of a port to several receive threads (`rx_threads` > 1).
///
/// Per-stream accounting (duplicates, reordering, loss by sequence) needs every frame of a
/// stream to reach the *same* thread: two threads that each saw half of a stream could not
/// tell a duplicate from a frame the other one saw, nor order across them. Merging per-thread
/// state afterwards cannot fix that (the duplicate window slides). So the port's receive
/// sockets form one `PACKET_FANOUT` group in `PACKET_FANOUT_CBPF` mode, and this classic BPF
/// program assigns each frame by its **signature's stream id**: for every offset at which an
/// expected stream carries its signature (ascending), it checks the signature's magic there,
/// loads the stream id after it and returns the thread that counts that stream. Anything else
/// (ARP/ND, foreign traffic) returns 0: thread 0 also answers ARP/ND.
///
/// Loads are relative to the MAC header (`SKF_LL_OFF`). Offsets are checked from the smallest
/// up because a load beyond the frame ends the program with 0: a frame always passes the
/// smaller offsets before its own. A stream whose stack starts with an 802.1Q/802.1ad tag is
/// also looked for 4 bytes earlier, since the receive path may strip that tag into metadata
/// before packet sockets see the frame. A frame could only be steered wrongly if, at a smaller
/// offset than its own, it carried the magic followed by the id of a stream expected there;
/// the thread that received it would then count it as `unexpected_streams` (visible, never
/// silently counted).
pub mod steering {
    use crate::stream::StreamConfig;
    use crate::sys::{SockFilter, SKF_LL_OFF};
    use crate::{Error, Result};

    const LD_H_ABS: u16 = 0x28;
    const JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;

    fn insn(code: u16, jt: u8, jf: u8, k: u32) -> SockFilter {
        SockFilter { code, jt, jf, k }
    }

    /// Where a stream's signature may sit in a received frame (see the module doc).
    fn signature_offsets(cfg: &StreamConfig) -> Vec<usize> {
        let mut out = Vec::new();
        for t in &cfg.frames {
            let b = t.bytes();
            let off = t.signature_offset();
            out.push(off);
            if b.len() >= 14 && matches!([b[12], b[13]], [0x81, 0x00] | [0x88, 0xa8]) {
                out.push(off - 4);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The program for `streams` given as (stream id, thread that counts it); thread numbers
    /// are returned as they are (the kernel takes them modulo the group's size).
    pub fn program(streams: &[(&StreamConfig, u32)]) -> Result<Vec<SockFilter>> {
        let mut by_offset: Vec<(usize, Vec<(u16, u32)>)> = Vec::new();
        for (cfg, thread) in streams {
            for off in signature_offsets(cfg) {
                match by_offset.iter_mut().find(|(o, _)| *o == off) {
                    Some((_, v)) => v.push((cfg.id, *thread)),
                    None => by_offset.push((off, vec![(cfg.id, *thread)])),
                }
            }
        }
        by_offset.sort_by_key(|(o, _)| *o);
        let magic = u32::from(u16::from_be_bytes(wire::signature::MAGIC));
        let mut prog = Vec::new();
        for (off, ids) in &by_offset {
            // Jump offsets are 8 bits: the magic check skips the id load and 2 per stream.
            let skip = u8::try_from(1 + 2 * ids.len()).map_err(|_| {
                Error::Config(format!(
                    "too many streams ({}) at one signature offset for several receive threads",
                    ids.len()
                ))
            })?;
            let at = |o: usize| (SKF_LL_OFF + o as i32) as u32;
            prog.push(insn(LD_H_ABS, 0, 0, at(*off)));
            prog.push(insn(JEQ_K, 0, skip, magic));
            prog.push(insn(LD_H_ABS, 0, 0, at(off + 2)));
            for &(id, thread) in ids {
                prog.push(insn(JEQ_K, 0, 1, u32::from(id)));
                prog.push(insn(RET_K, 0, 0, thread));
            }
        }
        prog.push(insn(RET_K, 0, 0, 0));
        if prog.len() > 4096 {
            return Err(Error::Config(
                "too many streams for the receive threads' steering program".into(),
            ));
        }
        Ok(prog)
    }

    /// Runs `prog` on `frame` as the kernel would for the instructions [`program`] emits
    /// (a load beyond the frame returns 0). For tests.
    #[cfg(test)]
    pub(crate) fn run(prog: &[SockFilter], frame: &[u8]) -> u32 {
        let (mut pc, mut a) = (0usize, 0u32);
        while let Some(i) = prog.get(pc) {
            match i.code {
                LD_H_ABS => {
                    let off = (i.k as i32).wrapping_sub(SKF_LL_OFF) as usize;
                    match frame.get(off..off + 2) {
                        Some(b) => a = u32::from(u16::from_be_bytes([b[0], b[1]])),
                        None => return 0,
                    }
                }
                JEQ_K => {
                    pc += usize::from(if a == i.k { i.jt } else { i.jf });
                }
                RET_K => return i.k,
                _ => return 0,
            }
            pc += 1;
        }
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream::{FrameGen, Limit, Rate, StreamConfig};
    use wire::units::Pps;

    fn rx_seqs(seqs: &[u32]) -> StreamRxReport {
        let mut s = StreamRx::new();
        for (i, &q) in seqs.iter().enumerate() {
            s.on_frame(q, 1_000, 2_000 + i as u64 * 10, 60);
        }
        s.report(1, None)
    }

    #[test]
    fn in_order_lossless() {
        let r = rx_seqs(&(0..1000).collect::<Vec<_>>());
        assert_eq!(
            (r.received, r.duplicates, r.out_of_order, r.lost_by_sequence),
            (1000, 0, 0, 0)
        );
        assert_eq!(r.bytes, 60_000);
    }

    #[test]
    fn loss_duplicates_and_reordering() {
        // 0..10 with 3 and 7 lost, 5 duplicated twice, 8/9 swapped.
        let r = rx_seqs(&[0, 1, 2, 4, 5, 5, 5, 6, 9, 8]);
        assert_eq!(r.received, 8);
        assert_eq!(r.duplicates, 2);
        assert_eq!(r.out_of_order, 1);
        assert_eq!(r.lost_by_sequence, 2);
        assert_eq!(r.highest_seq, Some(9));
        let mut s = StreamRx::new();
        for q in [0u32, 1, 2, 4, 5, 5, 5, 6, 9, 8] {
            s.on_frame(q, 0, 1, 60);
        }
        assert_eq!(s.report(1, Some(10)).lost, Some(2));
    }

    #[test]
    fn late_frame_after_gap_fills_it_and_duplicate_of_it_is_caught() {
        let r = rx_seqs(&[0, 5, 3, 3, 1, 2, 4]);
        assert_eq!(r.received, 6);
        assert_eq!(r.duplicates, 1);
        assert_eq!(r.out_of_order, 4);
        assert_eq!(r.lost_by_sequence, 0);
    }

    #[test]
    fn window_and_wrap() {
        let mut seqs: Vec<u32> = (0..10).collect();
        seqs.push(10 + WINDOW as u32 * 2); // jump far ahead (loss)
        seqs.push(5); // far behind: late, cannot be checked
        let r = rx_seqs(&seqs);
        assert_eq!(r.late, 1);
        assert_eq!(r.received, 12);
        // A stepped-over sequence number is not mistaken for a duplicate after a big jump.
        let r = rx_seqs(&[0, 1, 70_000, 69_999, 69_999]);
        assert_eq!((r.received, r.duplicates, r.out_of_order), (4, 1, 1));
        // Across the 32-bit wrap.
        let r = rx_seqs(&[u32::MAX - 1, u32::MAX, 0, 1]);
        assert_eq!((r.received, r.out_of_order, r.duplicates), (4, 0, 0));
        assert_eq!(r.highest_seq, Some((1u64 << 32) + 1));
    }

    #[test]
    fn ipdv_of_consecutive_frames_only() {
        let mut s = StreamRx::new();
        // Delays 10, 13, 11 µs for seq 0..2, then seq 4 (3 lost) at 30 µs, seq 5 at 31 µs.
        for (seq, delay) in [
            (0u32, 10_000u64),
            (1, 13_000),
            (2, 11_000),
            (4, 30_000),
            (5, 31_000),
        ] {
            let tx = 1_000_000 * u64::from(seq);
            s.on_frame(seq, tx, tx + delay, 64);
        }
        let i = s.ipdv().unwrap();
        // Pairs (0,1): +3 µs, (1,2): −2 µs, (4,5): +1 µs; (2,4) is not a pair. RFC 8219 §7.3.2
        // reports Dmin, Dmed, Dmax of the signed IPDV(i) = D(i) − D(i−1).
        assert_eq!(i.pairs, 3);
        assert_eq!((i.min_ns, i.max_ns), (-2_000, 3_000));
        assert!((995..=1_005).contains(&i.median_ns), "{i:?}");
        assert_eq!(StreamRx::new().ipdv(), None);
        // A median among the negative ones, and zero differences (equal delays).
        let mut s = StreamRx::new();
        for (seq, delay) in [(0u32, 50_000u64), (1, 40_000), (2, 30_000), (3, 30_000)] {
            let tx = 1_000_000 * u64::from(seq);
            s.on_frame(seq, tx, tx + delay, 64);
        }
        let i = s.ipdv().unwrap();
        assert_eq!((i.pairs, i.min_ns, i.max_ns), (3, -10_000, 0));
        assert!((-10_010..=-9_990).contains(&i.median_ns), "{i:?}");
    }

    #[test]
    fn latency_and_jitter() {
        let mut s = StreamRx::new();
        // Constant 5 µs latency: jitter stays 0.
        for i in 0..100u64 {
            s.on_frame(i as u32, i * 1000, i * 1000 + 5_000, 60);
        }
        let r = s.report(1, Some(100));
        let l = r.latency.unwrap();
        assert_eq!((l.min_ns, l.max_ns, l.avg_ns), (5_000, 5_000, 5_000));
        assert!(l.p50_ns.abs_diff(5_000) <= 5 && l.p999_ns.abs_diff(5_000) <= 5);
        assert_eq!(l.jitter_ns, 0.0);
        // Alternating 1 µs / 3 µs: |D| = 2 µs every frame, jitter converges to 2 µs.
        let mut s = StreamRx::new();
        for i in 0..1000u64 {
            let lat = if i % 2 == 0 { 1_000 } else { 3_000 };
            s.on_frame(i as u32, i * 10_000, i * 10_000 + lat, 60);
        }
        let l = s.report(1, None).latency.unwrap();
        assert!((l.jitter_ns - 2_000.0).abs() < 1.0, "{}", l.jitter_ns);
        assert_eq!(l.avg_ns, 2_000);
        // Clock trouble is counted, not hidden.
        let mut s = StreamRx::new();
        s.on_frame(0, 10, 5, 60);
        assert_eq!(s.report(1, None).negative_latency, 1);
    }

    #[test]
    fn receiver_classifies_ours_unexpected_and_foreign() {
        let cfg = |id| {
            let frame = crate::stream::tests_support::signed_frame(60, id);
            StreamConfig::single(id, frame, Rate::Pps(Pps(1.0)), Limit::Frames(1))
        };
        let g3 = FrameGen::new(&cfg(3)).unwrap();
        let g4 = FrameGen::new(&cfg(4)).unwrap();
        let mut rx = Receiver::new(&[3]);
        let mut buf = vec![0u8; 128];
        for i in 0..5 {
            let n = g3.write(i, 100, &mut buf);
            assert_eq!(rx.on_frame(&buf[..n], 200), Class::Ours { slot: 0 });
        }
        let n = g4.write(0, 100, &mut buf);
        assert_eq!(rx.on_frame(&buf[..n], 200), Class::UnexpectedStream);
        assert_eq!(rx.on_frame(&[0u8; 42], 200), Class::Foreign);
        assert_eq!(rx.stream(3).unwrap().received(), 5);
        assert_eq!((rx.unexpected(), rx.foreign()), (1, 1));
        assert!(rx.stream(4).is_none());
    }

    /// Where `wire::dissect` finds the signature of a 60-byte signed IPv4/UDP frame under the
    /// encapsulations the receiver must see through (offsets from the frame's start).
    #[test]
    fn signature_found_through_vlan_mpls_and_ipv4_in_ipv6() {
        let payload = |f: &[u8]| {
            let (d, sig) = wire::dissect::signature(f).expect("signature found");
            assert_eq!(sig.stream_id(), 3);
            (
                d.ip_offset,
                d.udp_offset.unwrap(),
                d.udp_payload_offset().unwrap(),
            )
        };
        let t = crate::stream::tests_support::signed_frame(60, 3);
        let f = t.bytes();
        assert_eq!(payload(f), (14, 34, 42));
        // Insert a VLAN tag.
        let mut v = f[..12].to_vec();
        v.extend_from_slice(&[0x81, 0x00, 0x00, 0x0a]);
        v.extend_from_slice(&f[12..]);
        assert_eq!(payload(&v).2, 46);
        // Replace the ethertype with two MPLS labels.
        let mut m = f[..12].to_vec();
        m.extend_from_slice(&[0x88, 0x47, 0, 0x10, 0x00, 64, 0, 0x20, 0x01, 64]);
        m.extend_from_slice(&f[14..]);
        assert_eq!(payload(&m).2, 50);
        // IPv4 in IPv6 (DS-Lite).
        let mut t6 = f[..12].to_vec();
        t6.extend_from_slice(&[0x86, 0xdd]);
        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        v6[4..6].copy_from_slice(&((f.len() - 14) as u16).to_be_bytes());
        v6[6] = 4;
        t6.extend_from_slice(&v6);
        t6.extend_from_slice(&f[14..]);
        let (ip, _, at) = payload(&t6);
        assert_eq!((ip, at), (54, 82));
    }

    #[test]
    fn never_panics_on_garbage() {
        let mut rx = Receiver::new(&[3]);
        for len in 0..80 {
            for fill in [0x00u8, 0x45, 0x60, 0x81, 0x88, 0xff] {
                let mut f = vec![fill; len];
                if len > 14 {
                    f[12] = 0x08;
                    f[13] = 0x00;
                }
                rx.on_frame(&f, 0);
            }
        }
        let t = crate::stream::tests_support::signed_frame(60, 3);
        for cut in 0..t.len() {
            rx.on_frame(&t.bytes()[..cut], 0);
        }
        assert_eq!(rx.stream(3).unwrap().received(), 0);
    }

    #[test]
    fn steering_program_sends_each_stream_to_its_thread() {
        use crate::stream::{FlowMode, Flows};
        use std::net::Ipv6Addr;
        use wire::encap::EncapSpec;
        use wire::template::{FrameTemplate, StreamSpec};
        let template = |encap: &str, id: u16, size: usize| {
            let encap: EncapSpec = encap.parse().unwrap();
            let mut spec = StreamSpec::new(encap);
            spec.stream_id = id;
            if encap.ip == wire::encap::IpVersion::V6 {
                spec.src_ip = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0x5752, 1).into();
                spec.dst_ip = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2).into();
            }
            FrameTemplate::new(&spec, size).unwrap()
        };
        let stream = |encap: &str, id: u16, sizes: &[usize]| StreamConfig {
            id,
            frames: sizes.iter().map(|&n| template(encap, id, n)).collect(),
            weights: vec![1; sizes.len()],
            flows: Flows {
                src_ip_count: 1000,
                dst_port_count: 50,
                mode: FlowMode::Random { seed: 3 },
                ..Flows::default()
            },
            rate: Rate::Pps(Pps(1.0)),
            burst: 1,
            burst_gap: None,
            limit: Limit::Frames(1),
            reorder_every: None,
            rewrite_macs: true,
            link_l1_bps: None,
        };
        let streams = [
            (stream("ipv4", 1, &[64, 594, 1518]), 0u32),
            (stream("ipv4", 3, &[64]), 1),
            (stream("ipv6", 2, &[128]), 1),
            (stream("vlan+ipv4", 5, &[68]), 0),
            (stream("vlan+ipv4", 7, &[68]), 1),
            (stream("ipv6", 0x5752, &[90]), 0),
        ];
        let pairs: Vec<(&StreamConfig, u32)> = streams.iter().map(|(c, t)| (c, *t)).collect();
        let prog = steering::program(&pairs).unwrap();
        let mut buf = vec![0u8; 2048];
        for (cfg, thread) in &streams {
            let g = FrameGen::new(cfg).unwrap();
            for i in 0..300u64 {
                let n = g.write(i * 7919, i, &mut buf);
                let f = &buf[..n];
                assert_eq!(
                    steering::run(&prog, f),
                    *thread,
                    "stream {} frame {i}",
                    cfg.id
                );
                if f[12..14] == [0x81, 0x00] {
                    // The same frame with its tag stripped by the receive path.
                    let stripped: Vec<u8> = f[..12].iter().chain(&f[16..]).copied().collect();
                    assert_eq!(
                        steering::run(&prog, &stripped),
                        *thread,
                        "stripped {}",
                        cfg.id
                    );
                }
            }
        }
        // Not ours: thread 0.
        assert_eq!(steering::run(&prog, &[0u8; 60]), 0);
        assert_eq!(steering::run(&prog, &[0u8; 10]), 0);
        let g = FrameGen::new(&stream("ipv4", 9, &[64])).unwrap();
        let n = g.write(0, 0, &mut buf);
        assert_eq!(steering::run(&prog, &buf[..n]), 0, "an unexpected stream");
    }
}
