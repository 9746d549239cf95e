//! XDP receive (see the module table in `xdp`): `bpf/rx.bpf.c` on the receiving port counts
//! the test frames of each expected stream in maps, inside the kernel, and drops them; every
//! other frame goes on to the stack (ARP, ND, PPPoE discovery keep working).
//!
//! [`XdpReceiver`] loads the program, tells it the expected streams, attaches it to the port's
//! interface (inside the port's namespace) and turns the maps into the same
//! [`StreamRxReport`]s as the AF_PACKET receiver ([`crate::rx::Receiver`]), with the same
//! counting rules (docs/engine.md, "Counting rules"):
//!
//! - received, bytes, duplicates, out of order, late, negative latency, first/last receive
//!   time, latency min/mean/max are exact sums (and minima/maxima) of per-CPU counters;
//! - sequence state (the highest sequence number and the 2^16 duplicate window) is shared by
//!   all CPUs and updated atomically, so duplicates are exact whichever CPU sees a frame —
//!   except where no two CPUs can account the port's frames at once (**one at a time**:
//!   native XDP on an interface with one receive queue, [`accounts_one_at_a_time`]), where
//!   plain loads and stores give the same values without the atomic operations' cost;
//! - percentiles come from a log-linear histogram with 128 sub-buckets per power of two
//!   (exact below 128 ns, otherwise within 1/256 of the value, i.e. ±0.4 %);
//! - invalid frames (`engine::validate`) are counted per stream by reason, per CPU; the program
//!   checks everything [`crate::validate::check_headers`] does, the UDP checksum included
//!   (since 8e9d469; see docs/engine.md, "Receive-side validation");
//! - jitter (RFC 3550) is kept per CPU in the RFC's integer form (J×16): exact in arrival
//!   order when one CPU receives the stream (one veth RX queue); with several, the mean of the
//!   per-CPU values weighted by frames;
//! - IPDV (RFC 8219 §7.3.2; [`XdpReceiver::stream_ipdv`]) pairs frames with consecutive
//!   sequence numbers by the AF_PACKET receiver's rules, from per-stream state shared by all
//!   CPUs beside the highest sequence number: the frame that raised the highest leaves its
//!   delay there, and the compare-and-swap that raises it tells the next frame whether the
//!   last raiser was its predecessor (so a pair whose frames were received on two CPUs still
//!   counts: on veth the receiving CPU follows the sending thread from CPU to CPU); the values go to
//!   per-CPU histograms of the same buckets as latency, one per sign, and the extremes are
//!   exact. Pairs, minimum and maximum equal the AF_PACKET receiver's for the same frames in
//!   the same order; the median agrees within the bucket width (±0.4 %, exact below 128 ns).
//!
//! Detaching: the program is attached through a BPF link, which the kernel removes when its
//! last file descriptor closes. Dropping the receiver closes it; so does the process ending in
//! any way (Ctrl-C, a panic, SIGKILL), so no program is ever left behind on an interface.
//!
//! **Loaded once** (issue 36): loading `rx.bpf.o` (aya's BTF parse and the verifier) took
//! about a quarter of a second, once per trial. A dropped receiver detaches its program and
//! gives the loaded object to `xdp::cache`; the next receiver whose streams fit the same
//! slot capacity (`slot_capacity`) takes it instead of loading. Before it attaches, it
//! resets what it will read: the slots map of the previous receiver's streams, and the
//! counters, histograms, sequence state and duplicate window of the slots it will use (one
//! `BPF_MAP_UPDATE_BATCH` call per map), the port counters, and the trial's own values in
//! `wr_rx_cfg` (`not_before`, `pass_ours`, `one_at_a_time`, `ifindex`). Nothing reaches the
//! program between the reset and the attach, so a trial counts only its own frames.

use crate::port::PortSpec;
use crate::rx::{IpdvReport, LatencyReport, StreamRxReport};
use crate::validate::{Expect, Invalid, InvalidCounts};
use crate::{Error, Result};
use aya::maps::{Array, Map, MapData, PerCpuArray};
use aya::programs::xdp::XdpLinkId;
use aya::programs::{Xdp, XdpFlags};
use aya::{Ebpf, EbpfLoader};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::os::fd::{AsFd, BorrowedFd};

/// Streams one XDP receiver can count (the maps are sized to `slot_capacity` of the streams
/// actually expected).
pub const MAX_STREAMS: usize = 64;
/// The fewest stream slots a receiver is loaded with: trials of 1 to 4 streams share one
/// loaded program.
const MIN_SLOTS: usize = 4;
/// Sequence numbers remembered for duplicate detection (as [`crate::rx::WINDOW`]).
pub const WINDOW: u64 = 1 << 16;

/// Histogram geometry, mirrored from `bpf/rx.bpf.c`.
const SUB_BITS: u32 = 7;
const SUB: u64 = 1 << SUB_BITS;
const MAX_EXP: u32 = 33;
const NBUCKETS: usize = ((MAX_EXP - SUB_BITS + 2) as usize) * SUB as usize;
const HIST_MAX_NS: u64 = 10_000_000_000;

/// Per-stream counter indices, mirrored from `bpf/rx.bpf.c` (what every received frame
/// writes first, in one 64-byte run).
mod c {
    pub const RECEIVED: usize = 0;
    pub const BYTES: usize = 1;
    pub const LAST_RX: usize = 2;
    pub const LAT_SUM: usize = 3;
    pub const LAT_MIN: usize = 4;
    pub const LAT_MAX: usize = 5;
    pub const JITTER16: usize = 6;
    /// IPDV pairs of this CPU and their extremes (signed, as u64).
    pub const IPDV_PAIRS: usize = 8;
    pub const IPDV_MIN: usize = 9;
    pub const IPDV_MAX: usize = 10;
    pub const FIRST_RX: usize = 11;
    pub const DUPLICATES: usize = 12;
    pub const OUT_OF_ORDER: usize = 13;
    pub const LATE: usize = 14;
    pub const NEGATIVE: usize = 15;
    /// The first of the invalid-by-reason counters (in `validate::Invalid` order).
    pub const INV: usize = 16;
    pub const N: usize = 24;
}

/// Per-port counter indices, mirrored from `bpf/rx.bpf.c`. (Index 3 is unused: frames of
/// expected streams are the sum of their streams' counters, see
/// [`XdpReceiver::port_counters`].)
mod p {
    pub const FOREIGN: usize = 0;
    pub const FOREIGN_BYTES: usize = 1;
    pub const UNEXPECTED: usize = 2;
    /// Test frames outside the one receive queue of a one-at-a-time receiver.
    pub const OUTSIDE_ONE_QUEUE: usize = 4;
    pub const N: usize = 8;
}

type Ctr = [u64; c::N];
/// `struct expect` of `bpf/rx.bpf.c` (40 bytes), as plain words.
type ExpectWords = [u64; 5];

/// Packs `e` into the layout of `struct expect` in `bpf/rx.bpf.c`.
fn expect_words(e: &Expect) -> ExpectWords {
    let mut b = [0u8; 40];
    if let Some(sh) = e.shape {
        b[..6].copy_from_slice(&[
            1,
            sh.vlan_tags,
            sh.mpls_labels,
            sh.pppoe.into(),
            sh.tunnel.into(),
            sh.ipv6.into(),
        ]);
    }
    b[6] = e.fragments.into();
    if let Some(d) = e.dst {
        b[7] = 1;
        match d.addr {
            std::net::IpAddr::V4(a) => b[8..12].copy_from_slice(&a.octets()),
            std::net::IpAddr::V6(a) => b[8..24].copy_from_slice(&a.octets()),
        }
        b[24..28].copy_from_slice(&d.addr_count.max(1).to_ne_bytes());
        b[28..30].copy_from_slice(&d.port.to_ne_bytes());
        b[30..32].copy_from_slice(&d.port_count.max(1).to_ne_bytes());
    }
    b[32..40].copy_from_slice(&e.seq_limit.unwrap_or(u64::MAX).to_ne_bytes());
    let mut w = [0u64; 5];
    for (i, c) in b.chunks_exact(8).enumerate() {
        w[i] = u64::from_ne_bytes(c.try_into().expect("8 bytes"));
    }
    w
}
type PortCtr = [u64; p::N];
/// `struct seq_state` of `bpf/rx.bpf.c`: the highest sequence number + 1, and the IPDV word of
/// the frame that raised it.
type SeqState = [u64; 2];
type Hist = [u64; NBUCKETS];

pub use super::mode::XdpMode;

/// Options of an [`XdpReceiver`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XdpRxConfig {
    /// Pass test frames on to the stack after counting them instead of dropping them (so an
    /// AF_PACKET receiver on the same port sees the very same frames: cross-checks).
    pub pass_ours: bool,
    /// Attach in this mode only; `None`: native, falling back to SKB mode.
    pub mode: Option<XdpMode>,
    /// Keep the sequence state one frame at a time (`Some(true)`) or atomically
    /// (`Some(false)`) whatever the port; `None` (the default): as [`accounts_one_at_a_time`]
    /// decides. Forced on a port whose frames arrive on several queues, the receiver still
    /// notices every such frame and refuses its counts (tests use it to show that).
    pub one_at_a_time: Option<bool>,
}

/// The port-level counters (the XDP side of `trial::PortRxSummary`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct XdpPortCounters {
    /// Frames that are not test frames (passed to the stack).
    pub foreign: u64,
    pub foreign_bytes: u64,
    /// Signed frames of streams this port was not told to expect.
    pub unexpected_streams: u64,
    /// Frames of expected streams, duplicates included.
    pub ours: u64,
}

/// The XDP receiver of one port; detached on drop, its loaded object then kept for the next
/// receiver of the process (the module's "Loaded once").
pub struct XdpReceiver {
    /// `Some` until drop, which gives it back to [`IDLE`].
    bpf: Option<Ebpf>,
    /// The program's link on the port's interface.
    link: Option<XdpLinkId>,
    /// The stream slots the maps were sized for ([`slot_capacity`]).
    capacity: u32,
    ids: Vec<u16>,
    ifname: String,
    mode: XdpMode,
    mode_note: Option<String>,
    /// The program accounts this port's frames without atomic operations
    /// ([`accounts_one_at_a_time`]).
    one_at_a_time: bool,
    /// The program's run statistics when this receiver attached (a reused program's earlier
    /// runs are not this receiver's).
    stats_base: Option<(u64, u64)>,
}

/// A detached receiver object kept for reuse: the object, and the stream ids its slots map
/// still holds.
struct LoadedRx {
    bpf: Ebpf,
    ids: Vec<u16>,
}

/// Loaded receiver objects not attached now, by slot capacity.
static IDLE: super::cache::Idle<u32, LoadedRx> = super::cache::Idle::new();

/// The stream slots a receiver of `n` streams is loaded with: the next power of two, at least
/// [`MIN_SLOTS`] (so one loaded program serves trials of nearby stream counts), at most
/// [`MAX_STREAMS`].
fn slot_capacity(n: usize) -> u32 {
    n.next_power_of_two().clamp(MIN_SLOTS, MAX_STREAMS) as u32
}

impl std::fmt::Debug for XdpReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpReceiver")
            .field("ifname", &self.ifname)
            .field("ids", &self.ids)
            .field("mode", &self.mode)
            .finish()
    }
}

/// An error and its causes on one line (aya's errors keep the kernel's reason in `source`).
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

impl XdpReceiver {
    /// Loads the receiver for `expected` streams and attaches it to `port`'s interface.
    ///
    /// The namespace is entered by a short-lived thread ([`PortSpec::enter`]); the link it
    /// creates lives on in this process, wherever the receiver is used or dropped.
    pub fn attach(port: &PortSpec, expected: &[u16], cfg: &XdpRxConfig) -> Result<Self> {
        let e: Vec<(u16, Expect)> = expected.iter().map(|&id| (id, Expect::default())).collect();
        Self::attach_with(port, &e, 0, cfg)
    }

    /// As [`attach`](Self::attach), with what each stream's frames must look like
    /// ([`Expect::of`]) and the trial's start (CLOCK_MONOTONIC, 0: none): signed frames of an
    /// expected stream that are not valid for it are counted by reason, not received.
    pub fn attach_with(
        port: &PortSpec,
        expected: &[(u16, Expect)],
        not_before_ns: u64,
        cfg: &XdpRxConfig,
    ) -> Result<Self> {
        let mut ids: Vec<u16> = Vec::new();
        let mut expect: Vec<Expect> = Vec::new();
        for &(id, e) in expected {
            if !ids.contains(&id) {
                ids.push(id);
                expect.push(e);
            }
        }
        if ids.is_empty() {
            return Err(Error::Config("XDP receiver: no streams to expect".into()));
        }
        if ids.len() > MAX_STREAMS {
            return Err(Error::Config(format!(
                "XDP receiver on {}: {} streams expected, at most {MAX_STREAMS} per port",
                port.ifname,
                ids.len()
            )));
        }
        let port = port.clone();
        let cfg = *cfg;
        std::thread::scope(|s| {
            s.spawn(|| Self::attach_here(&port, ids, &expect, not_before_ns, &cfg))
                .join()
                .map_err(|_| Error::Thread("XDP attach thread panicked".into()))?
        })
    }

    fn attach_here(
        port: &PortSpec,
        ids: Vec<u16>,
        expect: &[Expect],
        not_before_ns: u64,
        cfg: &XdpRxConfig,
    ) -> Result<Self> {
        let ifindex = port.enter(0)?;
        let capacity = slot_capacity(ids.len());
        let (mut bpf, previous) = match IDLE.take(&capacity) {
            Some(LoadedRx { bpf, ids }) => (bpf, Some(ids)),
            None => (load(capacity)?, None),
        };
        if let Some(previous) = previous {
            reset(&mut bpf, &previous, ids.len() as u32)?;
        }
        prepare(&mut bpf, &ids, expect)?;
        // Asked here, inside the port's namespace; a driver that does not say is taken to
        // have several queues.
        let rx_queues = crate::sys::rx_queues(&port.ifname).ok();
        let stats_base = super::prog_stats::runs_and_time(&bpf, "wr_rx");
        let tries: &[XdpMode] = match cfg.mode {
            Some(XdpMode::Native) => &[XdpMode::Native],
            Some(XdpMode::Skb) => &[XdpMode::Skb],
            None => &[XdpMode::Native, XdpMode::Skb],
        };
        let mut refusals = Vec::new();
        for &mode in tries {
            let flags = match mode {
                XdpMode::Native => XdpFlags::DRV_MODE,
                XdpMode::Skb => XdpFlags::SKB_MODE,
            };
            // The trial's values, for the mode this attach tries: frames reach the program
            // from the moment it is attached.
            let one_at_a_time = cfg
                .one_at_a_time
                .unwrap_or_else(|| accounts_one_at_a_time(mode, rx_queues));
            set_trial_values(&mut bpf, not_before_ns, cfg, one_at_a_time, ifindex)?;
            let prog = wr_rx(&mut bpf)?;
            match prog.attach_to_if_index(ifindex, flags) {
                Ok(link) => {
                    // The link stays owned by the program (and so by `bpf`) until drop.
                    let mode_note = (!refusals.is_empty()).then(|| {
                        format!(
                            "{}: native XDP refused ({}); running in SKB mode",
                            port.ifname,
                            refusals.join("; ")
                        )
                    });
                    return Ok(XdpReceiver {
                        bpf: Some(bpf),
                        link: Some(link),
                        capacity,
                        ids,
                        ifname: port.ifname.clone(),
                        mode,
                        mode_note,
                        one_at_a_time,
                        stats_base,
                    });
                }
                Err(e) => refusals.push(format!("{mode:?} mode: {}", chain(&e))),
            }
        }
        Err(Error::Bpf(format!(
            "cannot attach XDP to {} (port {}): {}",
            port.ifname,
            port.name,
            refusals.join("; ")
        )))
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// Whether the program accounts this port's frames one at a time, without atomic
    /// operations ([`accounts_one_at_a_time`]).
    pub fn one_at_a_time(&self) -> bool {
        self.one_at_a_time
    }

    /// Why the receiver runs in SKB mode, when native mode was refused.
    pub fn mode_note(&self) -> Option<&str> {
        self.mode_note.as_deref()
    }

    /// The expected streams, in slot order.
    pub fn stream_ids(&self) -> &[u16] {
        &self.ids
    }

    /// The loaded object (held from attach to drop).
    fn bpf(&self) -> &Ebpf {
        self.bpf
            .as_ref()
            .expect("an XDP receiver holds its object until drop")
    }

    fn per_cpu<V: aya::Pod>(&self, map: &str, index: u32) -> Result<Vec<V>> {
        let m = self
            .bpf()
            .map(map)
            .ok_or_else(|| Error::Bpf(format!("rx.bpf.o has no map {map}")))?;
        let arr: PerCpuArray<&MapData, V> =
            PerCpuArray::try_from(m).map_err(|e| Error::Bpf(format!("{map}: {}", chain(&e))))?;
        let v = arr
            .get(&index, 0)
            .map_err(|e| Error::Bpf(format!("reading {map}: {}", chain(&e))))?;
        Ok(v.iter().copied().collect())
    }

    /// The port's counters so far. `ours` is summed from the streams' own counters (every
    /// frame of an expected stream is exactly one of received, duplicate or invalid), so the
    /// program spends no write on it per frame.
    pub fn port_counters(&self) -> Result<XdpPortCounters> {
        let mut out = XdpPortCounters::default();
        for v in self.per_cpu::<PortCtr>("wr_rx_port", 0)? {
            out.foreign += v[p::FOREIGN];
            out.foreign_bytes += v[p::FOREIGN_BYTES];
            out.unexpected_streams += v[p::UNEXPECTED];
        }
        for slot in 0..self.ids.len() as u32 {
            for v in self.per_cpu::<Ctr>("wr_rx_ctr", slot)? {
                out.ours += frames_of_stream(&v);
            }
        }
        Ok(out)
    }

    /// Frames of the expected streams counted as received so far (duplicates and invalid
    /// frames not included), as [`crate::rx::Receiver::received_total`]: what a trial's
    /// drain compares with what was sent.
    pub fn received_total(&self) -> Result<u64> {
        let mut n = 0;
        for slot in 0..self.ids.len() as u32 {
            for v in self.per_cpu::<Ctr>("wr_rx_ctr", slot)? {
                n += v[c::RECEIVED];
            }
        }
        Ok(n)
    }

    /// What this port received of stream `id` so far (`None` if it is not expected); `sent`
    /// (from the sender) gives the exact loss, as in [`crate::rx::StreamRx::report`].
    pub fn stream_report(&self, id: u16, sent: Option<u64>) -> Result<Option<StreamRxReport>> {
        let Some(slot) = self.ids.iter().position(|&i| i == id) else {
            return Ok(None);
        };
        let slot = slot as u32;
        self.check_one_at_a_time()?;
        let ctrs = self.per_cpu::<Ctr>("wr_rx_ctr", slot)?;
        let hists = self.per_cpu::<Hist>("wr_rx_hist", slot)?;
        let seq: Array<&MapData, SeqState> = Array::try_from(
            self.bpf()
                .map("wr_rx_seq")
                .ok_or_else(|| Error::Bpf("rx.bpf.o has no map wr_rx_seq".into()))?,
        )
        .map_err(|e| Error::Bpf(format!("wr_rx_seq: {}", chain(&e))))?;
        let [high1, _ipdv] = seq
            .get(&slot, 0)
            .map_err(|e| Error::Bpf(format!("reading wr_rx_seq: {}", chain(&e))))?;
        let mut buckets = vec![0u64; NBUCKETS];
        for h in &hists {
            for (b, n) in buckets.iter_mut().zip(h.iter()) {
                *b += n;
            }
        }
        Ok(Some(summarize(id, &ctrs, &buckets, high1, sent)))
    }

    /// An error if this receiver was attached to count one frame at a time and a test frame
    /// it checked (each CPU's first of a stream and every 64th: `bpf/rx.bpf.c`,
    /// `one_at_a_time`) reached it from elsewhere than its interface's receive queue 0 (a
    /// driver that runs the program on rings `ethtool -l` does not show, or a receiver forced
    /// to count one at a time): two CPUs may then have written the sequence state at once
    /// without atomic operations, and its counts are not exact. The program accounted such
    /// frames atomically and counted them; no report is given while there are any.
    fn check_one_at_a_time(&self) -> Result<()> {
        if !self.one_at_a_time {
            return Ok(());
        }
        let outside: u64 = self
            .per_cpu::<PortCtr>("wr_rx_port", 0)?
            .iter()
            .map(|v| v[p::OUTSIDE_ONE_QUEUE])
            .sum();
        if outside == 0 {
            return Ok(());
        }
        Err(Error::Config(format!(
            "XDP receiver on {}: {outside} of the test frames it checked (a CPU's first of a \
             stream and every 64th) arrived outside receive queue 0, though \
             the interface had one receive queue when the receiver was attached (does its \
             driver run XDP on more rings than `ethtool -l` shows?). Its sequence state was \
             kept without atomic operations, so duplicates and losses may be miscounted: \
             measure again with the receiver told to count atomically",
            self.ifname
        )))
    }

    /// Inter-packet delay variation of stream `id` so far, as
    /// [`crate::rx::StreamRx::ipdv`] computes it (`None`: not expected, or no pair yet).
    pub fn stream_ipdv(&self, id: u16) -> Result<Option<IpdvReport>> {
        let Some(slot) = self.ids.iter().position(|&i| i == id) else {
            return Ok(None);
        };
        let slot = slot as u32;
        let ctrs = self.per_cpu::<Ctr>("wr_rx_ctr", slot)?;
        let mut sums = [vec![0u64; NBUCKETS], vec![0u64; NBUCKETS]];
        for (sign, sum) in sums.iter_mut().enumerate() {
            for h in self.per_cpu::<Hist>("wr_rx_ipdv_hist", 2 * slot + sign as u32)? {
                for (b, n) in sum.iter_mut().zip(h.iter()) {
                    *b += n;
                }
            }
        }
        let [up, down] = sums;
        Ok(summarize_ipdv(&ctrs, &up, &down))
    }

    /// Reports of every expected stream, in slot order; `sent(id)` as in
    /// [`stream_report`](Self::stream_report).
    pub fn reports(&self, sent: impl Fn(u16) -> Option<u64>) -> Result<Vec<StreamRxReport>> {
        let mut out = Vec::with_capacity(self.ids.len());
        for &id in &self.ids {
            if let Some(r) = self.stream_report(id, sent(id))? {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// Runs of the program since this receiver attached and the nanoseconds it spent in them,
    /// from the kernel's BPF statistics (`/proc/self/fdinfo` of the program). `None` unless the
    /// statistics are on (`sysctl kernel.bpf_stats_enabled=1`, which costs two clock reads per
    /// run).
    pub fn run_stats(&self) -> Option<(u64, u64)> {
        let (runs, ns) = super::prog_stats::runs_and_time(self.bpf(), "wr_rx")?;
        let (runs0, ns0) = self.stats_base.unwrap_or((0, 0));
        Some((runs.saturating_sub(runs0), ns.saturating_sub(ns0)))
    }

    /// Detaches now (dropping does the same; this is for callers that want it explicit).
    pub fn detach(self) {
        drop(self);
    }
}

impl Drop for XdpReceiver {
    /// Detaches the program from the port and keeps the loaded object for the next receiver;
    /// if detaching fails, closes it instead (which detaches it too), so no kept object is
    /// ever attached anywhere.
    fn drop(&mut self) {
        let Some(mut bpf) = self.bpf.take() else {
            return;
        };
        let detached = match (self.link.take(), wr_rx(&mut bpf)) {
            (Some(link), Ok(prog)) => prog.detach(link).is_ok(),
            _ => false,
        };
        if detached {
            let ids = std::mem::take(&mut self.ids);
            IDLE.put(self.capacity, LoadedRx { bpf, ids });
        }
    }
}

/// Receiver objects this process has loaded (each one is reused, so a run of many trials
/// loads about as many as it attaches receivers at once).
static LOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times this process has loaded `rx.bpf.o` (tests, diagnostics).
pub fn loads() -> u64 {
    LOADS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Loads `rx.bpf.o` with its per-stream maps sized for `capacity` stream slots, and its
/// program into the kernel (the verifier), not attached.
fn load(capacity: u32) -> Result<Ebpf> {
    LOADS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let n = capacity;
    let mut bpf = EbpfLoader::new()
        .set_max_entries("wr_rx_ctr", n)
        .set_max_entries("wr_rx_hist", n)
        .set_max_entries("wr_rx_ipdv_hist", 2 * n)
        .set_max_entries("wr_rx_seq", n)
        .set_max_entries("wr_rx_win", n * WINDOW as u32)
        .set_max_entries("wr_rx_expect", n)
        .load(super::objects::RX)
        .map_err(|e| Error::Bpf(format!("loading the XDP receiver object: {}", chain(&e))))?;
    wr_rx(&mut bpf)?.load().map_err(|e| {
        Error::Bpf(format!(
            "the kernel refused the XDP receiver program: {}",
            chain(&e)
        ))
    })?;
    Ok(bpf)
}

/// The receiver program of a loaded object.
fn wr_rx(bpf: &mut Ebpf) -> Result<&mut Xdp> {
    bpf.program_mut("wr_rx")
        .ok_or_else(|| Error::Bpf("rx.bpf.o has no program wr_rx".into()))?
        .try_into()
        .map_err(|e: aya::programs::ProgramError| Error::Bpf(chain(&e)))
}

/// The file descriptor of array map `name` (plain or per CPU).
fn map_fd<'a>(bpf: &'a Ebpf, name: &str) -> Result<BorrowedFd<'a>> {
    match bpf.map(name) {
        Some(Map::Array(d) | Map::PerCpuArray(d)) => Ok(d.fd().as_fd()),
        Some(_) => Err(Error::Bpf(format!("rx.bpf.o: {name} is not an array"))),
        None => Err(Error::Bpf(format!("rx.bpf.o has no map {name}"))),
    }
}

/// Makes a detached, reused object count like a fresh one for `n` streams in slots `0..n`:
/// `previous` (the stream ids its slots map still holds) unmapped, and every value of slots
/// `0..n` and of the port zeroed (the only ones the next receiver's program writes or its
/// reports read).
fn reset(bpf: &mut Ebpf, previous: &[u16], n: u32) -> Result<()> {
    set_all(
        bpf,
        "wr_rx_slots",
        previous.iter().map(|&id| (u32::from(id), 0u32)),
    )?;
    let cpus = aya::util::nr_cpus()
        .map_err(|(what, e)| Error::Bpf(format!("possible CPUs ({what}): {e}")))?;
    let per_cpu = |len: usize| len.next_multiple_of(8) * cpus;
    let zero = |name: &str, keys: std::ops::Range<u32>, value_len: usize| {
        super::sys::zero_entries(map_fd(bpf, name)?, keys, value_len)
            .map_err(|e| Error::Bpf(format!("resetting {name}: {e}")))
    };
    zero("wr_rx_ctr", 0..n, per_cpu(std::mem::size_of::<Ctr>()))?;
    zero("wr_rx_hist", 0..n, per_cpu(std::mem::size_of::<Hist>()))?;
    zero(
        "wr_rx_ipdv_hist",
        0..2 * n,
        per_cpu(std::mem::size_of::<Hist>()),
    )?;
    zero("wr_rx_seq", 0..n, std::mem::size_of::<SeqState>())?;
    zero(
        "wr_rx_win",
        0..n * WINDOW as u32,
        std::mem::size_of::<u32>(),
    )?;
    zero("wr_rx_port", 0..1, per_cpu(std::mem::size_of::<PortCtr>()))?;
    Ok(())
}

/// Whether no two CPUs can run the program on frames of a port attached in `mode` with
/// `rx_queues` receive queues (`None`: the driver did not say), so that its sequence state may
/// be kept with plain loads and stores. Only native XDP on one queue: that queue's one NAPI
/// instance is polled by one CPU at a time, its scheduled bit taken and released by atomic
/// operations that order everything the previous poll wrote. In SKB mode
/// the program runs wherever the skb is received (the sending CPU's backlog on a veth), and
/// several queues are polled on several CPUs at once.
pub fn accounts_one_at_a_time(mode: XdpMode, rx_queues: Option<u32>) -> bool {
    mode == XdpMode::Native && rx_queues == Some(1)
}

/// The trial's values in `wr_rx_cfg`: written before each attach.
fn set_trial_values(
    bpf: &mut Ebpf,
    not_before_ns: u64,
    cfg: &XdpRxConfig,
    one_at_a_time: bool,
    ifindex: u32,
) -> Result<()> {
    let v = super::sys::RxCfg {
        not_before: not_before_ns,
        pass_ours: cfg.pass_ours.into(),
        one_at_a_time: one_at_a_time.into(),
        ifindex,
        pad: 0,
    };
    set_all(bpf, "wr_rx_cfg", [(0, v)])
}

/// Tells a detached object this receiver's streams (slot i: `ids[i]`, which its frames must
/// look like), before it is attached.
fn prepare(bpf: &mut Ebpf, ids: &[u16], expect: &[Expect]) -> Result<()> {
    set_all(
        bpf,
        "wr_rx_slots",
        ids.iter()
            .enumerate()
            .map(|(slot, &id)| (u32::from(id), slot as u32 + 1)),
    )?;
    set_all(
        bpf,
        "wr_rx_expect",
        expect
            .iter()
            .enumerate()
            .map(|(slot, e)| (slot as u32, expect_words(e))),
    )
}

/// Writes `entries` (index, value) into the receiver object's array map `name`.
fn set_all<V: aya::Pod>(
    bpf: &mut Ebpf,
    name: &str,
    entries: impl IntoIterator<Item = (u32, V)>,
) -> Result<()> {
    let mut map: Array<&mut MapData, V> = Array::try_from(
        bpf.map_mut(name)
            .ok_or_else(|| Error::Bpf(format!("rx.bpf.o has no map {name}")))?,
    )
    .map_err(|e| Error::Bpf(format!("{name}: {}", chain(&e))))?;
    for (k, v) in entries {
        map.set(k, v, 0)
            .map_err(|e| Error::Bpf(format!("{name}: {}", chain(&e))))?;
    }
    Ok(())
}

/// Frames of one stream a CPU's counters account for: each is exactly one of received,
/// duplicate or invalid (by one reason).
fn frames_of_stream(v: &Ctr) -> u64 {
    v[c::RECEIVED] + v[c::DUPLICATES] + v[c::INV..c::INV + Invalid::ALL.len()].iter().sum::<u64>()
}

/// The lowest latency (ns) a histogram bucket holds and its width, mirrored from `bucket_of`
/// in `bpf/rx.bpf.c`.
fn bucket_range(b: usize) -> (u64, u64) {
    let b = b as u64;
    if b < SUB {
        return (b, 1);
    }
    let e = (b >> SUB_BITS) + u64::from(SUB_BITS) - 1;
    let sub = b & (SUB - 1);
    let shift = e - u64::from(SUB_BITS);
    ((SUB + sub) << shift, 1 << shift)
}

/// A histogram of the bucket counts `buckets` (each bucket's count at its midpoint), for the
/// percentile arithmetic of the AF_PACKET receiver.
fn hdr_of(buckets: &[u64]) -> Histogram<u64> {
    let mut hist: Histogram<u64> =
        Histogram::new_with_bounds(1, HIST_MAX_NS, 3).expect("valid histogram bounds");
    for (b, &n) in buckets.iter().enumerate() {
        if n > 0 {
            let (lo, width) = bucket_range(b);
            let _ = hist.record_n((lo + (width - 1) / 2).clamp(1, HIST_MAX_NS), n);
        }
    }
    hist
}

/// The IPDV of one stream from its per-CPU counters and the summed histograms of IPDV ≥ 0
/// (`up`) and of the magnitudes of IPDV < 0 (`down`), as [`crate::rx::StreamRx::ipdv`]: the
/// same median arithmetic ([`crate::rx::ipdv_report`]) on the bucket midpoints, the exact
/// extremes of the CPUs that measured pairs.
fn summarize_ipdv(ctrs: &[Ctr], up: &[u64], down: &[u64]) -> Option<IpdvReport> {
    let active = || ctrs.iter().filter(|v| v[c::IPDV_PAIRS] > 0);
    let min = active().map(|v| v[c::IPDV_MIN] as i64).min()?;
    let max = active().map(|v| v[c::IPDV_MAX] as i64).max()?;
    crate::rx::ipdv_report(&hdr_of(up), &hdr_of(down), min, max)
}

/// The per-CPU counters, summed histogram and shared highest (+1) of one stream, as a report
/// with the fields and semantics of [`crate::rx::StreamRx::report`].
fn summarize(
    id: u16,
    ctrs: &[Ctr],
    buckets: &[u64],
    high1: u64,
    sent: Option<u64>,
) -> StreamRxReport {
    let sum = |i: usize| ctrs.iter().map(|v| v[i]).sum::<u64>();
    let active = || ctrs.iter().filter(|v| v[c::RECEIVED] > 0);
    let received = sum(c::RECEIVED);
    let latency = (received > 0).then(|| {
        let min_ns = active().map(|v| v[c::LAT_MIN]).min().unwrap_or(0);
        let max_ns = active().map(|v| v[c::LAT_MAX]).max().unwrap_or(0);
        let hist = hdr_of(buckets);
        // Bucket midpoints may fall outside what was measured; the exact extremes bound them.
        let q = |x: f64| hist.value_at_quantile(x).clamp(min_ns, max_ns);
        let weighted: f64 = active()
            .map(|v| v[c::JITTER16] as f64 / 16.0 * v[c::RECEIVED] as f64)
            .sum();
        LatencyReport {
            min_ns,
            avg_ns: sum(c::LAT_SUM) / received,
            max_ns,
            p50_ns: q(0.50),
            p90_ns: q(0.90),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            jitter_ns: weighted / received as f64,
        }
    });
    let highest_seq = high1.checked_sub(1);
    let mut invalid = InvalidCounts::default();
    for r in Invalid::ALL {
        invalid.add_n(r, sum(c::INV + r.index()));
    }
    StreamRxReport {
        stream_id: id,
        received,
        bytes: sum(c::BYTES),
        lost: sent.map(|s| s.saturating_sub(received)),
        lost_by_sequence: highest_seq.map_or(0, |h| (h + 1).saturating_sub(received)),
        duplicates: sum(c::DUPLICATES),
        out_of_order: sum(c::OUT_OF_ORDER),
        late: sum(c::LATE),
        negative_latency: sum(c::NEGATIVE),
        highest_seq,
        first_rx_ns: active().map(|v| v[c::FIRST_RX]).min().unwrap_or(0),
        last_rx_ns: active().map(|v| v[c::LAST_RX]).max().unwrap_or(0),
        latency,
        invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_native_xdp_on_one_queue_accounts_one_frame_at_a_time() {
        assert!(accounts_one_at_a_time(XdpMode::Native, Some(1)));
        assert!(!accounts_one_at_a_time(XdpMode::Native, Some(2)));
        assert!(!accounts_one_at_a_time(XdpMode::Native, Some(0)));
        assert!(!accounts_one_at_a_time(XdpMode::Native, None));
        assert!(!accounts_one_at_a_time(XdpMode::Skb, Some(1)));
        assert!(!accounts_one_at_a_time(XdpMode::Skb, None));
    }

    /// `bucket_of` from rx.bpf.c, for checking the inverse.
    fn bucket_of(v: u64) -> usize {
        if v < SUB {
            return v as usize;
        }
        let e = 63 - v.leading_zeros();
        let b = (((e - SUB_BITS + 1) as u64) << SUB_BITS) + ((v >> (e - SUB_BITS)) & (SUB - 1));
        (b as usize).min(NBUCKETS - 1)
    }

    #[test]
    fn buckets_cover_the_range_and_invert() {
        assert_eq!(bucket_of(HIST_MAX_NS), bucket_of(HIST_MAX_NS));
        assert!(bucket_of(HIST_MAX_NS) < NBUCKETS);
        for v in [
            1u64,
            5,
            127,
            128,
            129,
            255,
            256,
            1000,
            12_345,
            1 << 20,
            999_999_937,
            HIST_MAX_NS,
        ] {
            let (lo, w) = bucket_range(bucket_of(v));
            assert!(lo <= v && v < lo + w, "{v}: [{lo}, {})", lo + w);
            // Relative width at most 1/128.
            assert!(
                w == 1 || (w as f64) / (lo as f64) <= 1.0 / 128.0 + 1e-12,
                "{v}"
            );
        }
        // Buckets are contiguous and increasing.
        for b in 1..NBUCKETS {
            let (lo0, w0) = bucket_range(b - 1);
            let (lo1, _) = bucket_range(b);
            assert_eq!(lo0 + w0, lo1, "bucket {b}");
        }
    }

    /// `ipdv_record` of rx.bpf.c: which histogram (0: IPDV ≥ 0, 1: IPDV < 0) and bucket an
    /// IPDV of `d` ns goes to.
    fn ipdv_bucket(d: i64) -> (usize, usize) {
        let neg = d < 0;
        let mag = if neg {
            0u64.wrapping_sub(d as u64)
        } else {
            d as u64
        };
        let v = if mag >= HIST_MAX_NS {
            HIST_MAX_NS
        } else {
            mag + 1
        };
        // The software receiver records the same value in the histogram of the same sign.
        assert_eq!(crate::rx::ipdv_sample(d), (neg, v), "{d}");
        (usize::from(neg), bucket_of(v))
    }

    /// The signed bucketing at its boundaries: zero is "up" (its own bucket), −1 is the first
    /// "down" value, the exact range ends at |d| = 126 (value 127), the last bucket takes
    /// everything from 10 s on, and no magnitude overflows (i64::MIN).
    #[test]
    fn ipdv_buckets_are_signed_and_bounded() {
        assert_eq!(ipdv_bucket(0), (0, 1));
        assert_eq!(ipdv_bucket(1), (0, 2));
        assert_eq!(ipdv_bucket(-1), (1, 2));
        assert_eq!(ipdv_bucket(-2), (1, 3));
        assert_eq!(ipdv_bucket(126), (0, 127));
        assert_eq!(ipdv_bucket(-126), (1, 127));
        assert_eq!(ipdv_bucket(127), (0, 128)); // value 128: the first log-linear bucket
        assert_eq!(ipdv_bucket(128), (0, 129));
        let top = bucket_of(HIST_MAX_NS);
        for d in [
            HIST_MAX_NS as i64 - 1,
            HIST_MAX_NS as i64,
            i64::MAX,
            -(HIST_MAX_NS as i64),
            i64::MIN,
        ] {
            assert_eq!(ipdv_bucket(d).1, top, "{d}");
        }
        assert_eq!(ipdv_bucket(i64::MIN).0, 1);
        // Each bucket holds |d| + 1, so its range minus one brackets |d|, whatever the sign.
        for d in [
            3i64,
            -3,
            999,
            -999,
            65_537,
            -65_537,
            123_456_789,
            -123_456_789,
        ] {
            let (_, b) = ipdv_bucket(d);
            let (lo, w) = bucket_range(b);
            let m = d.unsigned_abs();
            assert!(lo <= m + 1 && m + 1 < lo + w, "{d}: [{lo}, {})", lo + w);
        }
    }

    /// The XDP summary of bucketed, per-CPU IPDV equals the software receiver's for the same
    /// delays: pairs and extremes exactly, the median within a bucket (1/128) — including
    /// medians among the negative values, zeros, and pairs broken by a loss and a reordering.
    #[test]
    fn ipdv_summary_matches_the_software_receiver() {
        let cases: [&[(u32, u64)]; 3] = [
            // seq, one-way delay (ns)
            &[
                (0, 10_000),
                (1, 13_000),
                (2, 11_000),
                (4, 30_000),
                (5, 31_000),
            ],
            &[
                (0, 50_000),
                (1, 40_000),
                (2, 30_000),
                (3, 30_000),
                (5, 7),
                (4, 9),
            ],
            &[
                (0, 100),
                (1, 90),
                (2, 1_000_090),
                (3, 95),
                (4, 97),
                (5, 96),
                (6, 96),
            ],
        ];
        for delays in cases {
            let mut sw = crate::rx::StreamRx::new();
            for &(seq, delay) in delays {
                let tx = 1_000_000_000 * u64::from(seq);
                sw.on_frame(seq, tx, tx + delay, 64);
            }
            let want = sw.ipdv().unwrap();
            // The pairs the program forms, spread over two CPUs alternately.
            let (mut up, mut down) = (vec![0u64; NBUCKETS], vec![0u64; NBUCKETS]);
            let mut cpus = [[0u64; c::N]; 2];
            let mut last: Option<(u32, i64)> = None;
            let mut k = 0;
            for &(seq, delay) in delays {
                let t = delay as i64;
                match last {
                    Some((p, pt)) if seq == p + 1 => {
                        let d = t - pt;
                        let (sign, b) = ipdv_bucket(d);
                        [&mut up, &mut down][sign][b] += 1;
                        let v = &mut cpus[k % 2];
                        k += 1;
                        if v[c::IPDV_PAIRS] == 0 {
                            v[c::IPDV_MIN] = d as u64;
                            v[c::IPDV_MAX] = d as u64;
                        }
                        v[c::IPDV_MIN] = (v[c::IPDV_MIN] as i64).min(d) as u64;
                        v[c::IPDV_MAX] = (v[c::IPDV_MAX] as i64).max(d) as u64;
                        v[c::IPDV_PAIRS] += 1;
                        last = Some((seq, t));
                    }
                    Some((p, _)) if seq <= p => {}
                    _ => last = Some((seq, t)),
                }
            }
            let got = summarize_ipdv(&[cpus[0], [0; c::N], cpus[1]], &up, &down).unwrap();
            assert_eq!(
                (got.pairs, got.min_ns, got.max_ns),
                (want.pairs, want.min_ns, want.max_ns),
                "{delays:?}"
            );
            let tol = want.median_ns.unsigned_abs() / 128 + 1;
            assert!(
                got.median_ns.abs_diff(want.median_ns) <= tol,
                "{delays:?}: xdp {got:?} software {want:?}"
            );
        }
        // No pairs: no figures.
        assert_eq!(
            summarize_ipdv(&[[0; c::N]], &[0; NBUCKETS], &[0; NBUCKETS]),
            None
        );
    }

    fn ctr(f: impl FnOnce(&mut Ctr)) -> Ctr {
        let mut v = [0u64; c::N];
        f(&mut v);
        v
    }

    #[test]
    fn summary_sums_cpus_like_the_software_receiver() {
        let a = ctr(|v| {
            v[c::RECEIVED] = 6;
            v[c::BYTES] = 360;
            v[c::DUPLICATES] = 1;
            v[c::OUT_OF_ORDER] = 2;
            v[c::LAT_SUM] = 6_000;
            v[c::LAT_MIN] = 500;
            v[c::LAT_MAX] = 2_000;
            v[c::FIRST_RX] = 100;
            v[c::LAST_RX] = 900;
            v[c::JITTER16] = 160;
        });
        let b = ctr(|v| {
            v[c::RECEIVED] = 2;
            v[c::BYTES] = 120;
            v[c::LAT_SUM] = 2_000;
            v[c::LAT_MIN] = 1_000;
            v[c::LAT_MAX] = 1_000;
            v[c::FIRST_RX] = 50;
            v[c::LAST_RX] = 950;
            v[c::JITTER16] = 0;
        });
        let idle = [0u64; c::N];
        let mut buckets = vec![0u64; NBUCKETS];
        buckets[bucket_of(500)] += 1;
        buckets[bucket_of(1_000)] += 6;
        buckets[bucket_of(2_000)] += 1;
        // Highest seq 9 (stored +1): 10 numbers, 8 received.
        let r = summarize(7, &[a, idle, b], &buckets, 10, Some(12));
        assert_eq!(
            (r.received, r.bytes, r.duplicates, r.out_of_order),
            (8, 480, 1, 2)
        );
        assert_eq!(
            (r.lost, r.lost_by_sequence, r.highest_seq),
            (Some(4), 2, Some(9))
        );
        assert_eq!((r.first_rx_ns, r.last_rx_ns), (50, 950));
        let l = r.latency.unwrap();
        assert_eq!((l.min_ns, l.avg_ns, l.max_ns), (500, 1_000, 2_000));
        assert!(l.p50_ns.abs_diff(1_000) <= 1_000 / 200, "{}", l.p50_ns);
        assert_eq!(l.p999_ns, 2_000);
        // Jitter: 10 ns on the CPU with 6 frames, 0 on the one with 2.
        assert!((l.jitter_ns - 7.5).abs() < 1e-9, "{}", l.jitter_ns);
        // Nothing received: no latency, no highest.
        let r = summarize(7, &[idle], &vec![0; NBUCKETS], 0, None);
        assert_eq!((r.received, r.highest_seq, r.latency), (0, None, None));
    }
}
