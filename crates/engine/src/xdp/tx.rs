//! XDP transmit: the kernel stamps and sends each frame (issue 8).
//!
//! `bpf/tx.bpf.c`'s `wr_tx` runs with `BPF_PROG_RUN` and `BPF_F_TEST_XDP_LIVE_FRAMES` over one
//! base frame of one stream ("recipe": a stream and one of its frame sizes), `repeat` = the
//! frames due. Per frame it takes the stream's next frame index from a map, writes the
//! signature's sequence number (reordering on purpose included) and `bpf_ktime_get_ns()` send
//! time, the IPv4 identification and the flow fields (ranges, incrementing or RFC 4814
//! pseudorandom, exactly as [`FrameGen`](crate::stream::FrameGen) computes them), patches the
//! UDP and IPv4 checksums incrementally and returns `XDP_TX`: live mode redirects the frame out
//! of the port. No copy through user space, no skb.
//!
//! **Same streams, same report.** [`open`] takes the same `(FrameGen, &StreamConfig)` pairs as
//! [`crate::tx::run`] (MAC addresses already resolved into the generator) and [`run`] returns
//! the same [`TxPortReport`], so a trial swaps backends in its TX thread:
//! `xdp::tx::open(spec, ifindex, &gens)?` where it would call `tx::open`, then
//! `xdp::tx::run(&mut sender, gens, start, stop)`. [`run_port`] does enter + open + run for
//! streams with fixed MACs.
//!
//! **Pacing** is the engine's absolute schedule ([`StreamPacing`], bursts and burst gaps
//! included): before each run the frames due
//! are collected (up to [`PACED_CAP`] per run when paced, [`UNPACED_CAP`] unpaced), so the run
//! size follows the rate. Frame sizes of an IMIX stream are separate runs, in the proportions
//! of the stream's pattern; sequence numbers stay consecutive across them because the index
//! lives in the stream's map slot. Send timestamps are per frame (not per batch).
//!
//! **Sent = accepted by the device.** Each run's frames are flushed to the device's
//! `ndo_xdp_xmit` inside the same `BPF_PROG_RUN` call, on this thread. A frame the device
//! refuses (a veth peer without NAPI, its ring full, a device without XDP transmit) shows in
//! the kernel tracepoints `xdp:xdp_devmap_xmit` (`drops`) or `xdp:xdp_redirect_err`; two raw
//! tracepoint programs add those frames to the running recipe, filtered on this thread's id.
//! `sent` = frames processed − frames refused. Refused frames are not retried (their sequence
//! numbers are skipped, so a receiver sees them as lost by sequence; `lost = sent − received`
//! stays exact); they are reported in [`TxPortReport::abandoned`], and the runs that refused
//! any in `backpressure_flushes`.
//!
//! **Veth.** A veth accepts XDP-transmitted frames only if its peer runs NAPI: GRO enabled on
//! the peer or an XDP program attached to it (the lab enables GRO). [`open`] sends one probe
//! frame (EtherType IPv4, addressed to the port's own MAC, so nothing
//! forwards it) and fails with what to do if the device refused it.
//!
//! **Not supported** (refused with an error, never ignored): frames above
//! [`MAX_FRAME_LEN`] bytes (live mode takes one page per frame: no jumbo frames), more than
//! 254 frame sizes per port. The `BPF_PROG_RUN` program is never attached to a port's
//! interface (only to a private namespace's loopback, see `keep_in_dispatcher`).
//!
//! **Loaded once** (issue 36): loading `tx.bpf.o` (aya's BTF parse, the verifier, the
//! dispatcher attachment, two tracepoints) cost 0.05–0.2 s per trial. A dropped sender gives
//! its loaded object, still in the dispatcher and on the tracepoints, to `xdp::cache`; the
//! next [`open`] with the same connection-table size takes it. It first points the tracepoint
//! programs at its own thread (`ctl`), then zeroes every other map — recipes, their states,
//! headers, stream states (the next frame index: sequence numbers start at 0 again),
//! schedules, connections — in one `BPF_MAP_UPDATE_BATCH` call each, before writing its own.
//! While idle, a kept object's tracepoint programs count nothing (`ctl.tid` 0), and whatever
//! they might count is zeroed before reuse; the kernel frees it all when the process ends.

use super::sys::{self, Ctl, Header, Recipe, RecipeState, Schedule, StreamState as MapStream};
use crate::pacing::{Pacer, StreamPacing};
use crate::port::PortSpec;
use crate::stream::{FlowMode, FrameGen, StreamConfig};
use crate::tx::{TxPortReport, TxStreamReport};
use crate::{Error, Result};
use aya::maps::{Array, MapData};
use aya::programs::{RawTracePoint, Xdp};
use aya::Ebpf;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use wire::bytes::Fields;
use wire::units::Pps;

/// Largest frame (without FCS) the XDP sender sends: live mode builds each frame in one page
/// with headroom and tailroom, and refuses larger data (net/bpf/test_run.c).
pub const MAX_FRAME_LEN: usize = 3000;
/// What the sender's probe frame carries after its Ethernet header (see [`open`]), so that a
/// capture can tell it from test frames.
pub const PROBE_PAYLOAD: &[u8] = b"wirerate xdp probe";
/// Most frames per `BPF_PROG_RUN` when paced (about 200 µs at 5 Mpps).
pub const PACED_CAP: u64 = 1024;
/// Most frames per `BPF_PROG_RUN` unpaced (a few ms at full speed: the stop flag and the end
/// of a duration are checked between runs).
pub const UNPACED_CAP: u64 = 16384;
/// Frames per batch inside a paced run: the kernel's default (NAPI_POLL_WEIGHT). Each batch is
/// flushed to the device before the next; a veth's ring holds 256. Kept small when paced: an
/// idle iteration counts in the batch too, and a frame waits for its batch's flush.
const LIVE_BATCH: u32 = 64;
/// Frames per batch inside an unpaced run: nearly the most live mode takes
/// (TEST_XDP_MAX_BATCH, 256), a quarter of the flushes and calls into the device per frame of
/// batches of 64. Measured with `wirerate bench tx --backend xdp --against xdp-trafficgen`:
/// 0.72× → 0.85× of xdp-trafficgen (docs/engine.md).
///
/// Why not all 256: a veth's ring has 256 slots, and its consumer releases emptied slots 16 at
/// a time (the kernel's `ptr_ring` batching), so up to 15 slots of an emptied ring can still
/// be taken. A batch of 256 then found one slot short whenever the ring's positions were not a
/// multiple of 16 — after the sender's one probe frame, after any run whose length was not a
/// multiple of 16 (IMIX sizes, a run cut by a signal) — and the veth refused a frame (`bench
/// rx`: 1 refused frame per run, docs/measurements.md "`bench rx` at the sender's top rate").
/// 240 fits an emptied ring in every position.
const LIVE_BATCH_UNPACED: u32 = sys::MAX_LIVE_BATCH - VETH_SLOTS_HELD;
/// Slots of a veth's ring that an emptied ring may still hold (`ptr_ring` releases consumed
/// slots in batches of two cache lines of pointers: 16 on x86-64).
const VETH_SLOTS_HELD: u32 = 16;
const _: () = assert!(LIVE_BATCH <= sys::MAX_LIVE_BATCH);
/// Bytes of metadata in front of the frame: the recipe index, then the call's token (see
/// [`XdpSender::run_recipe`]).
const META_LEN: usize = 8;
/// The recipe slot of the probe frame (the last of the map's 256).
const PROBE_SLOT: u32 = 255;
const RECIPE_PROBE: u32 = 1;
const RECIPE_RANDOM: u32 = 2;
const RECIPE_CONNS: u32 = 4;
const MAX_STREAMS: usize = 256;

/// One base frame: what `BPF_PROG_RUN` gets (metadata + frame), and its length.
#[derive(Debug)]
struct Run {
    data: Vec<u8>,
    len: usize,
}

/// A loaded sender object: the object, and the private namespace whose `lo` holds `wr_tx`
/// attached (see [`keep_in_dispatcher`]).
struct LoadedTx {
    bpf: Ebpf,
    _dispatcher_ns: std::fs::File,
}

/// Loaded sender objects not in use, by the size of their `conns` map.
static IDLE: super::cache::Idle<u32, LoadedTx> = super::cache::Idle::new();

/// The maps a sender writes or its reports read, zeroed before a kept object is reused: every
/// map of `tx.bpf.o` but `ctl` (set first, see [`XdpSender::set_thread`]).
const PER_SENDER_MAPS: [&str; 6] = [
    "recipes",
    "recipe_states",
    "headers",
    "streams",
    "schedules",
    "conns",
];

/// An XDP sender, loaded and checked on one port.
pub struct XdpSender {
    /// `Some` until drop, which gives it back to [`IDLE`].
    loaded: Option<LoadedTx>,
    ifindex: u32,
    ifname: String,
    runs: Vec<Run>,
    /// Per stream: its recipes (indices into `runs`) and the frame length of each.
    stream_runs: Vec<Vec<usize>>,
    /// The time one idle iteration of a kernel-paced call takes (ns), measured at `open` when
    /// the sender has one stream of one frame size.
    idle_ns: Option<f64>,
    /// The port's peer is the DUT's port ([`PortSpec::faces_dut`]).
    faces_dut: bool,
    /// The token of the last `BPF_PROG_RUN` call ([`Self::run_recipe`]).
    call_token: u32,
    /// The size of the object's `conns` map (its key in [`IDLE`]).
    conn_slots: u32,
}

impl Drop for XdpSender {
    /// Keeps the loaded object for the next sender, its tracepoint programs counting no
    /// thread; if that cannot be set, closes it instead.
    fn drop(&mut self) {
        if self.set_ctl_thread(0).is_err() {
            return;
        }
        if let Some(loaded) = self.loaded.take() {
            IDLE.put(self.conn_slots, loaded);
        }
    }
}

impl std::fmt::Debug for XdpSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpSender")
            .field("ifname", &self.ifname)
            .field("ifindex", &self.ifindex)
            .field("recipes", &self.runs.len())
            .finish()
    }
}

fn off16(v: usize) -> u16 {
    // Every offset is inside a frame of at most MAX_FRAME_LEN bytes.
    v as u16
}

/// The recipe of one base frame (`frame` with the port's MACs) of stream slot `slot`.
fn recipe(cfg: &StreamConfig, slot: usize, frame: &[u8], sig_off: usize) -> Result<Recipe> {
    let bad = |what: &str| Error::Config(format!("stream {}: {what}", cfg.id));
    let (d, _) = wire::dissect::signature(frame)
        .ok_or_else(|| bad("base frame carries no signature after a UDP header"))?;
    let udp = d
        .udp_offset
        .ok_or_else(|| bad("base frame has no UDP header"))?;
    if d.udp_payload_offset() != Some(sig_off) {
        return Err(bad("base frame's headers do not match its template"));
    }
    let ip = d.ip_offset;
    let v4 = d.src.is_ipv4();
    let (src_addr_off, dst_addr_off) = if v4 {
        (ip + 12, ip + 16)
    } else {
        (ip + 8 + 12, ip + 24 + 12)
    };
    let f = cfg.flows;
    let (flags, seed) = match f.mode {
        FlowMode::Increment => (0, 0),
        FlowMode::Random { seed } => (RECIPE_RANDOM, seed),
        // The BPF sender varies each field on its own; the combined flow set (and its Feistel
        // permutation) is not in the program yet.
        FlowMode::Tuples | FlowMode::PermutedTuples { .. } => return Err(bad(
            "flow sets of combined tuples are not in the XDP sender yet; use the AF_PACKET backend",
        )),
    };
    Ok(Recipe {
        seed,
        reorder_every: cfg.reorder_every.unwrap_or(0),
        stream: slot as u32,
        flags,
        src_ip_count: f.src_ip_count,
        dst_ip_count: f.dst_ip_count,
        src_ip_base: frame.u32_at(src_addr_off..src_addr_off + 4),
        dst_ip_base: frame.u32_at(dst_addr_off..dst_addr_off + 4),
        src_port_count: u32::from(f.src_port_count),
        dst_port_count: u32::from(f.dst_port_count),
        src_port_base: frame.u16_at(udp..udp + 2),
        dst_port_base: frame.u16_at(udp + 2..udp + 4),
        sig_off: off16(sig_off),
        udp_csum_off: off16(udp + 6),
        udp_csum_base: frame.u16_at(udp + 6..udp + 8),
        ip_csum_off: if v4 { off16(ip + 10) } else { 0 },
        ip_csum_base: if v4 {
            frame.u16_at(ip + 10..ip + 12)
        } else {
            0
        },
        ip_ident_off: if v4 { off16(ip + 4) } else { 0 },
        src_addr_off: off16(src_addr_off),
        dst_addr_off: off16(dst_addr_off),
        udp_off: off16(udp),
        ip_is_v4: u16::from(v4),
        conn_count: 0,
        pad: 0,
    })
}

fn with_meta(index: u32, frame: &[u8]) -> Vec<u8> {
    let mut data = Vec::with_capacity(META_LEN + frame.len());
    data.extend_from_slice(&index.to_ne_bytes());
    data.extend_from_slice(&0u32.to_ne_bytes());
    data.extend_from_slice(frame);
    data
}

fn bpf_err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Bpf(format!("XDP TX: {what}: {e}"))
}

/// A connection table the request asks for that the XDP sender cannot carry: the user's to fix.
fn conn_refused(what: &str) -> Error {
    Error::Config(format!("XDP TX: connections: {what}"))
}

fn array<'a, V: aya::Pod>(bpf: &'a mut Ebpf, name: &str) -> Result<Array<&'a mut MapData, V>> {
    let map = bpf
        .map_mut(name)
        .ok_or_else(|| bpf_err("map missing from the object", name))?;
    Array::try_from(map).map_err(|e| bpf_err(name, e))
}

fn array_ro<'a, V: aya::Pod>(bpf: &'a Ebpf, name: &str) -> Result<Array<&'a MapData, V>> {
    let map = bpf
        .map(name)
        .ok_or_else(|| bpf_err("map missing from the object", name))?;
    Array::try_from(map).map_err(|e| bpf_err(name, e))
}

/// Loads the XDP sender for `gens` on `ifindex` and checks that the port accepts
/// XDP-transmitted frames. The calling thread must be in the port's namespace
/// ([`PortSpec::enter`]); [`run`] must be called from a thread in the same namespace.
pub fn open(
    spec: &PortSpec,
    ifindex: u32,
    gens: &[(FrameGen, &StreamConfig)],
) -> Result<XdpSender> {
    open_with_conns(spec, ifindex, gens, &[])
}

/// [`open`] for one stream of one IPv4 frame size whose frame i is connection i mod N of
/// `conns` (its addresses and ports), carrying the connection's index as its sequence number
/// (`RECIPE_CONNS` of `bpf/tx.bpf.c`; the load of [`crate::nat`] on the XDP backend). Empty
/// `conns`: plain [`open`].
pub(crate) fn open_with_conns(
    spec: &PortSpec,
    ifindex: u32,
    gens: &[(FrameGen, &StreamConfig)],
    conns: &[sys::Conn],
) -> Result<XdpSender> {
    if gens.len() > MAX_STREAMS {
        return Err(Error::Config(format!(
            "XDP TX: {} streams on port {}; at most {MAX_STREAMS} per port",
            gens.len(),
            spec.name
        )));
    }
    let mut runs = Vec::new();
    let mut recipes = Vec::new();
    let mut headers = Vec::new();
    let mut stream_runs = Vec::new();
    let mut own_mac = None;
    for (slot, (gen, cfg)) in gens.iter().enumerate() {
        // The generator holds the MACs the trial resolved: take them from its frame 0.
        let mut buf = vec![0u8; gen.max_len()];
        gen.write(0, 0, &mut buf);
        let macs: [u8; 12] = buf[..12]
            .try_into()
            .expect("a frame has an Ethernet header");
        own_mac.get_or_insert([macs[6], macs[7], macs[8], macs[9], macs[10], macs[11]]);
        let mut mine = Vec::new();
        for t in &cfg.frames {
            if t.len() > MAX_FRAME_LEN {
                return Err(Error::Config(format!(
                    "stream {}: {}-byte frames are above the XDP backend's largest, {MAX_FRAME_LEN} B \
                     (live frames live in one page); use the AF_PACKET backend for jumbo frames",
                    cfg.id,
                    t.len()
                )));
            }
            if runs.len() >= PROBE_SLOT as usize {
                return Err(Error::Config(format!(
                    "XDP TX: more than {PROBE_SLOT} frame sizes on port {}",
                    spec.name
                )));
            }
            let mut frame = t.bytes().to_vec();
            frame[..12].copy_from_slice(&macs);
            recipes.push(recipe(cfg, slot, &frame, t.signature_offset())?);
            let hl = t.signature_offset().min(frame.len());
            if hl > sys::HDR_MAX {
                return Err(Error::Config(format!(
                    "stream {}: its headers end at byte {hl}, beyond the {} bytes the XDP \
                     backend restores per frame; use the AF_PACKET backend",
                    cfg.id,
                    sys::HDR_MAX
                )));
            }
            let mut header = Header {
                len: hl as u32,
                ..Default::default()
            };
            // Beyond `len` too: the program restores whole 8-byte words (bpf/tx.bpf.c).
            let n = frame.len().min(sys::HDR_MAX);
            header.bytes[..n].copy_from_slice(&frame[..n]);
            headers.push(header);
            mine.push(runs.len());
            runs.push(Run {
                data: with_meta(runs.len() as u32, &frame),
                len: frame.len(),
            });
        }
        stream_runs.push(mine);
    }

    if !conns.is_empty() {
        conn_recipe(&mut recipes, conns.len())?;
    }
    let conn_slots =
        u32::try_from(conns.len().max(1)).map_err(|_| conn_refused("more than 2^32"))?;
    let (loaded, reused) = match IDLE.take(&conn_slots) {
        Some(l) => (l, true),
        None => (load(conn_slots)?, false),
    };
    let mut sender = XdpSender {
        loaded: Some(loaded),
        ifindex,
        ifname: spec.ifname.clone(),
        runs,
        stream_runs,
        idle_ns: None,
        faces_dut: spec.faces_dut,
        call_token: 0,
        conn_slots,
    };
    // The tracepoints count this thread's refusals from now on; then everything else starts
    // from zero, as in a freshly loaded object.
    sender.set_thread()?;
    if reused {
        sender.reset()?;
    }
    {
        let bpf = sender.bpf_mut();
        let mut m = array::<Recipe>(bpf, "recipes")?;
        for (i, r) in recipes.iter().enumerate() {
            m.set(i as u32, r, 0).map_err(|e| bpf_err("recipes", e))?;
        }
        let mut hm = array::<Header>(bpf, "headers")?;
        for (i, h) in headers.iter().enumerate() {
            hm.set(i as u32, h, 0).map_err(|e| bpf_err("headers", e))?;
        }
        let mut cm = array::<sys::Conn>(bpf, "conns")?;
        for (i, c) in conns.iter().enumerate() {
            cm.set(i as u32, c, 0).map_err(|e| bpf_err("conns", e))?;
        }
        let mut m = array::<Recipe>(bpf, "recipes")?;
        m.set(
            PROBE_SLOT,
            Recipe {
                flags: RECIPE_PROBE,
                ..Default::default()
            },
            0,
        )
        .map_err(|e| bpf_err("recipes", e))?;
    }
    sender.probe(spec, own_mac.unwrap_or([2, 0, 0, 0, 0, 0]))?;
    if sender.stream_runs.len() == 1 && sender.stream_runs[0].len() == 1 {
        sender.idle_ns = Some(sender.idle_iteration_ns(sender.stream_runs[0][0])?);
    }
    Ok(sender)
}

/// Sender objects this process has loaded.
static LOADS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// How many times this process has loaded `tx.bpf.o` for a sender (tests, diagnostics).
pub fn loads() -> u64 {
    LOADS.load(Ordering::Relaxed)
}

/// Loads `tx.bpf.o` with `conn_slots` connection entries: `wr_tx` through the verifier and into
/// the dispatcher, the two tracepoint programs loaded and attached (counting no thread yet).
fn load(conn_slots: u32) -> Result<LoadedTx> {
    LOADS.fetch_add(1, Ordering::Relaxed);
    let mut bpf = aya::EbpfLoader::new()
        .set_max_entries("conns", conn_slots)
        .load(super::objects::TX)
        .map_err(|e| bpf_err("loading tx.bpf.o", e))?;
    {
        let prog: &mut Xdp = bpf
            .program_mut("wr_tx")
            .ok_or_else(|| bpf_err("program missing", "wr_tx"))?
            .try_into()
            .map_err(|e| bpf_err("wr_tx", e))?;
        prog.load()
            .map_err(|e| bpf_err("the verifier refused wr_tx", e))?;
    }
    let dispatcher_ns = keep_in_dispatcher(&mut bpf)?;
    for (name, tp) in [
        ("wr_tx_xmit", "xdp_devmap_xmit"),
        ("wr_tx_redirect_err", "xdp_redirect_err"),
    ] {
        let prog: &mut RawTracePoint = bpf
            .program_mut(name)
            .ok_or_else(|| bpf_err("program missing", name))?
            .try_into()
            .map_err(|e| bpf_err(name, e))?;
        prog.load()
            .map_err(|e| bpf_err(&format!("the verifier refused {name}"), e))?;
        prog.attach(tp)
            .map_err(|e| bpf_err(&format!("attaching {name} to tracepoint xdp:{tp}"), e))?;
    }
    Ok(LoadedTx {
        bpf,
        _dispatcher_ns: dispatcher_ns,
    })
}

/// Turns the only recipe into one that cycles through `n` connections (`RECIPE_CONNS`).
fn conn_recipe(recipes: &mut [Recipe], n: usize) -> Result<()> {
    let [r] = recipes else {
        return Err(conn_refused(
            "a connection table needs exactly one stream of one frame size",
        ));
    };
    if r.ip_is_v4 == 0 {
        return Err(conn_refused(
            "the connection table is IPv4 only; use the AF_PACKET backend for IPv6",
        ));
    }
    r.flags |= RECIPE_CONNS;
    r.conn_count = u32::try_from(n).map_err(|_| conn_refused("more than 2^32"))?;
    Ok(())
}

/// Attaches `wr_tx` (generic mode) to the loopback of a new, private network namespace, which
/// nothing else uses, and returns that namespace (it lives as long as the file).
///
/// Why: for `repeat > 1`, BPF_PROG_RUN adds the program to the kernel's XDP dispatcher before
/// the run and removes it after, and each change waits for an RCU grace period
/// (`bpf_dispatcher_change_prog` → `synchronize_rcu`, seen in the thread's kernel stack): 20–40
/// ms per run on this machine, whatever the run's size. A program that is attached somewhere is
/// already in the dispatcher, so the runs only take a reference and no longer wait. In its own
/// namespace, the attachment touches no interface of the user's; closing the file and the
/// program's link (when the sender is dropped, or the process dies) removes both.
fn keep_in_dispatcher(bpf: &mut Ebpf) -> Result<std::fs::File> {
    let prog: &mut Xdp = bpf
        .program_mut("wr_tx")
        .ok_or_else(|| bpf_err("program missing", "wr_tx"))?
        .try_into()
        .map_err(|e| bpf_err("wr_tx", e))?;
    std::thread::scope(|sc| {
        sc.spawn(|| -> Result<std::fs::File> {
            sys::unshare_netns().map_err(|e| Error::io("XDP TX: a private netns (unshare)", e))?;
            let ns = std::fs::File::open("/proc/thread-self/ns/net")
                .map_err(|e| Error::io("XDP TX: /proc/thread-self/ns/net", e))?;
            prog.attach("lo", aya::programs::XdpFlags::SKB_MODE)
                .map_err(|e| bpf_err("attaching wr_tx to a private loopback", e))?;
            Ok(ns)
        })
        .join()
        .map_err(|_| Error::Thread("XDP TX setup thread panicked".into()))?
    })
}

impl XdpSender {
    /// The loaded object (held from open to drop).
    fn bpf(&self) -> &Ebpf {
        &self
            .loaded
            .as_ref()
            .expect("an XDP sender holds its object until drop")
            .bpf
    }

    fn bpf_mut(&mut self) -> &mut Ebpf {
        &mut self
            .loaded
            .as_mut()
            .expect("an XDP sender holds its object until drop")
            .bpf
    }

    /// Makes the tracepoint programs count the refusals of the calling thread's runs (and
    /// nothing else: the running recipe and the bad-recipe count start at 0).
    fn set_thread(&mut self) -> Result<()> {
        self.set_ctl_thread(crate::sys::gettid())
    }

    fn set_ctl_thread(&mut self, tid: u32) -> Result<()> {
        let mut c = array::<Ctl>(self.bpf_mut(), "ctl")?;
        let v = Ctl {
            tid,
            ..Default::default()
        };
        c.set(0, v, 0).map_err(|e| bpf_err("ctl", e))
    }

    /// Zeroes every map but `ctl` of a reused object ([`PER_SENDER_MAPS`]).
    fn reset(&mut self) -> Result<()> {
        let bpf = self.bpf();
        for name in PER_SENDER_MAPS {
            let Some(aya::maps::Map::Array(m)) = bpf.map(name) else {
                return Err(bpf_err("not an array map", name));
            };
            let info = m.info().map_err(|e| bpf_err(name, e))?;
            sys::zero_entries(
                m.fd().as_fd(),
                0..info.max_entries(),
                info.value_size() as usize,
            )
            .map_err(|e| bpf_err(&format!("resetting {name}"), e))?;
        }
        Ok(())
    }

    fn prog_run(&self, data: &[u8], repeat: u32) -> std::io::Result<()> {
        self.prog_run_batched(data, repeat, LIVE_BATCH)
    }

    /// Runs recipe `r` for `repeat` frames, `batch` per flush, under a new call token in the
    /// frame's metadata: every page of a call is initialised from this data (live mode makes a
    /// page pool per call), so the program can tell a call's first frame of a stream from the
    /// rest, and never reuses a clock reading taken in an earlier call (bpf/tx.bpf.c,
    /// `CLOCK_GROUP`).
    fn run_recipe(&mut self, r: usize, repeat: u32, batch: u32) -> std::io::Result<()> {
        self.call_token = self.call_token.wrapping_add(1);
        self.runs[r].data[4..META_LEN].copy_from_slice(&self.call_token.to_ne_bytes());
        self.prog_run_batched(&self.runs[r].data, repeat, batch)
    }

    /// [`Self::prog_run`] with `batch` frames per flush inside the run.
    fn prog_run_batched(&self, data: &[u8], repeat: u32, batch: u32) -> std::io::Result<()> {
        let prog: &Xdp = self
            .bpf()
            .program("wr_tx")
            .and_then(|p| p.try_into().ok())
            .expect("open loaded wr_tx");
        let fd = prog
            .fd()
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        sys::test_run_live(
            fd.as_fd(),
            self.ifindex,
            data,
            META_LEN as u32,
            repeat,
            batch,
        )
    }

    fn schedule(&self, i: u32) -> Result<Schedule> {
        array_ro::<Schedule>(self.bpf(), "schedules")?
            .get(&i, 0)
            .map_err(|e| bpf_err("schedules", e))
    }

    fn set_schedule(&mut self, i: u32, s: &Schedule) -> Result<()> {
        array::<Schedule>(self.bpf_mut(), "schedules")?
            .set(i, s, 0)
            .map_err(|e| bpf_err("schedules", e))
    }

    /// The time one idle iteration of a kernel-paced call takes (ns), measured with a schedule
    /// that starts far in the future, so that nothing is sent: a call's length in iterations
    /// is sized from it. The stream's state is untouched (no frame is counted).
    fn idle_iteration_ns(&mut self, run: usize) -> Result<f64> {
        const PROBE: u32 = 20_000;
        let never = Schedule {
            start_ns: u64::MAX / 2,
            period_fp: 1 << 16,
            burst: 1,
            limit: u64::MAX,
            max_debt: 1,
            on: 1,
            ..Default::default()
        };
        self.set_schedule(0, &never)?;
        let mut best = f64::MAX;
        for _ in 0..3 {
            let t0 = crate::sys::monotonic_ns();
            self.run_recipe(run, PROBE, LIVE_BATCH)
                .map_err(|e| Error::io(format!("XDP TX: BPF_PROG_RUN on {}", self.ifname), e))?;
            best = best.min((crate::sys::monotonic_ns() - t0) as f64 / f64::from(PROBE));
        }
        // Off again: a sender that then paces in user space (deliberate reordering, say) must
        // find the program sending every frame it is given.
        self.set_schedule(0, &Schedule::default())?;
        Ok(best.max(1.0))
    }

    /// The kernel's run statistics of `wr_tx` so far, (runs, ns), when BPF statistics are on
    /// (`sysctl kernel.bpf_stats_enabled=1`; they cost two clock reads per run, so they are
    /// off for rate measurements). A run is one frame (or one idle iteration when paced).
    pub fn run_stats(&self) -> Option<(u64, u64)> {
        super::prog_stats::runs_and_time(self.bpf(), "wr_tx")
    }

    fn recipe_state(&self, i: u32) -> Result<RecipeState> {
        array_ro::<RecipeState>(self.bpf(), "recipe_states")?
            .get(&i, 0)
            .map_err(|e| bpf_err("recipe_states", e))
    }

    fn stream_state(&self, i: u32) -> Result<MapStream> {
        array_ro::<MapStream>(self.bpf(), "streams")?
            .get(&i, 0)
            .map_err(|e| bpf_err("streams", e))
    }

    /// Sends one frame nobody forwards (EtherType IPv4 to our own MAC) and fails if the
    /// device refused it.
    fn probe(&self, spec: &PortSpec, mac: [u8; 6]) -> Result<()> {
        let mut frame = vec![0u8; 60];
        frame[..6].copy_from_slice(&mac);
        frame[6..12].copy_from_slice(&mac);
        // IPv4, not an unassigned EtherType: a DUT drops a frame for another host's MAC as
        // "otherhost" (its own counter), while a frame no protocol takes would move its
        // rx_dropped, the counter a trial's loss is checked against (one per trial, seen).
        frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        frame[14..14 + PROBE_PAYLOAD.len()].copy_from_slice(PROBE_PAYLOAD);
        self.prog_run(&with_meta(PROBE_SLOT, &frame), 1)
            .map_err(|e| {
                let hint = match e.raw_os_error() {
                    Some(libc::EINVAL) => {
                        " (BPF_PROG_RUN with live frames needs kernel 5.18 or later)"
                    }
                    Some(libc::EPERM) => " (needs root: CAP_BPF and CAP_NET_ADMIN)",
                    _ => "",
                };
                Error::io(
                    format!(
                        "XDP TX: BPF_PROG_RUN on {} of port {}{hint}",
                        spec.ifname, spec.name
                    ),
                    e,
                )
            })?;
        let st = self.recipe_state(PROBE_SLOT)?;
        if st.processed != 1 {
            return Err(bpf_err(
                "the probe run did not reach the program",
                format!("{} runs", st.processed),
            ));
        }
        if st.refused > 0 {
            let why = if st.last_err == -i64::from(libc::ENXIO) {
                "ENXIO: on a veth, its peer runs no NAPI"
            } else if st.last_err == -i64::from(libc::EOPNOTSUPP) {
                "EOPNOTSUPP: the device does not take XDP frames now; a veth only does when \
                 its peer runs NAPI"
            } else {
                "see the error number"
            };
            return Err(Error::Config(format!(
                "port {}: {} refused an XDP-transmitted frame (error {}, {why}). On a veth, \
                 the PEER must accept XDP frames: enable GRO on the peer (`ethtool -K <peer> \
                 gro on` in the peer's namespace; `wirerate lab up` does this) or attach an XDP \
                 program to it; or use the AF_PACKET backend",
                spec.name, spec.ifname, st.last_err
            )));
        }
        Ok(())
    }
}

/// One stream's schedule and progress.
struct Sched<'a> {
    gen: FrameGen,
    cfg: &'a StreamConfig,
    pacer: Pacer,
    end_ns: Option<u64>,
    next: u64,
    intended: Pps,
    unpaced: bool,
    finishing_pair: bool,
}

impl Sched<'_> {
    fn done(&self, now: u64) -> bool {
        !self.finishing_pair && (self.pacer.done() || self.end_ns.is_some_and(|e| now >= e))
    }
}

fn schedules<'a>(gens: Vec<(FrameGen, &'a StreamConfig)>, start_ns: u64) -> Vec<Sched<'a>> {
    gens.into_iter()
        .map(|(gen, cfg)| {
            // The same schedule as the AF_PACKET backend (rate, bursts, burst gap, limits).
            let p = StreamPacing::for_stream(cfg, start_ns);
            Sched {
                gen,
                cfg,
                pacer: p.pacer,
                end_ns: p.end_ns,
                next: 0,
                intended: p.intended_pps,
                unpaced: p.unpaced,
                finishing_pair: false,
            }
        })
        .collect()
}

/// Waits until shortly before the earliest frame due ([`crate::sys::wait_for_due`]).
fn wait_for_next_due(streams: &[Sched<'_>], now: u64) {
    let next = streams
        .iter()
        .filter(|s| !s.done(now))
        .map(|s| s.pacer.next_due_ns())
        .min();
    if let Some(next) = next {
        crate::sys::wait_for_due(next);
    }
}

/// Runs `gens` (the pairs given to [`open`], in the same order) on `sender` from `start_ns`
/// until every stream is done or `stop` is set. Call it from a thread in the port's namespace.
pub fn run(
    sender: &mut XdpSender,
    gens: Vec<(FrameGen, &StreamConfig)>,
    start_ns: u64,
    stop: &AtomicBool,
) -> Result<TxPortReport> {
    run_taking_turns(sender, gens, start_ns, stop, None)
}

/// [`run`], and when the program keeps the schedule, each call only in `turns` (this sender
/// is party `.1`): senders sharing one CPU alternate call by call instead of being
/// time-shared in scheduler slices ([`super::turns`]). Calls keep their length (about 1 ms
/// of schedule): with 250 µs calls the NAT load's senders fell short of 140,000–150,000
/// frames/s each way in 7 of 13 trials, with 1 ms calls in 2 of 13 (more calls, more page
/// pools for the kernel to release on this CPU, see [`run_kernel_paced`]).
pub(crate) fn run_taking_turns(
    sender: &mut XdpSender,
    gens: Vec<(FrameGen, &StreamConfig)>,
    start_ns: u64,
    stop: &AtomicBool,
    turns: Option<(&super::turns::Turns, usize)>,
) -> Result<TxPortReport> {
    run_with(sender, gens, start_ns, stop, turns, None)
}

/// [`run`] for one paced stream that never catches up more than `max_catch_up` frames at once
/// after a stall (the schedule's debt cap, [`Pacer::with_max_debt`]): frames due beyond it
/// slip, so a frame-limited stream ends later and its achieved rate shows the stall instead
/// of a burst the receiver never asked for. The preliminary phase of `engine::nat` sends so:
/// a burst of 10 ms of connections would be refused by the DUT's port and read as the DUT's
/// failure at a rate it was never offered.
pub(crate) fn run_catching_up_at_most(
    sender: &mut XdpSender,
    gens: Vec<(FrameGen, &StreamConfig)>,
    start_ns: u64,
    stop: &AtomicBool,
    max_catch_up: u64,
) -> Result<TxPortReport> {
    run_with(sender, gens, start_ns, stop, None, Some(max_catch_up))
}

fn run_with(
    sender: &mut XdpSender,
    gens: Vec<(FrameGen, &StreamConfig)>,
    start_ns: u64,
    stop: &AtomicBool,
    turns: Option<(&super::turns::Turns, usize)>,
    max_debt: Option<u64>,
) -> Result<TxPortReport> {
    if gens.len() != sender.stream_runs.len() {
        return Err(Error::Config(format!(
            "XDP TX: {} streams given, {} opened",
            gens.len(),
            sender.stream_runs.len()
        )));
    }
    sender.set_thread()?;
    let _ = crate::sys::set_timer_slack_ns(1);
    let mut streams = schedules(gens, start_ns);
    if let Some(d) = max_debt {
        for s in &mut streams {
            s.pacer = s.pacer.clone().with_max_debt(d);
        }
    }
    if kernel_paced_fits(sender, &streams) {
        return run_kernel_paced(sender, streams, stop, turns);
    }
    let (mut runs_done, mut max_batch, mut processed_total) = (0u64, 0u64, 0u64);
    // Frames of each recipe due in this round (IMIX streams split by size).
    let mut per_recipe = vec![0u64; sender.runs.len()];
    'outer: loop {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let now = crate::sys::monotonic_ns();
        if streams.iter().all(|s| s.done(now)) {
            break;
        }
        let mut any = false;
        for (si, s) in streams.iter_mut().enumerate() {
            if s.done(now) {
                continue;
            }
            let cap = if s.unpaced { UNPACED_CAP } else { PACED_CAP };
            let mut due = 0;
            loop {
                let n = s.pacer.due(now).min(cap - due);
                if n == 0 {
                    break;
                }
                s.pacer.issue(n);
                due += n;
            }
            if s.finishing_pair && due == 0 {
                // Never stop between the two frames of a swapped pair.
                s.pacer.issue(1);
                due = 1;
            }
            if due == 0 {
                continue;
            }
            any = true;
            let mine = &sender.stream_runs[si];
            if mine.len() == 1 {
                per_recipe[mine[0]] = due;
            } else {
                for i in s.next..s.next + due {
                    let len = s.gen.len_for_index(i);
                    let r = mine
                        .iter()
                        .copied()
                        .find(|&r| sender.runs[r].len == len)
                        .unwrap_or(mine[0]);
                    per_recipe[r] += 1;
                }
            }
            for k in 0..sender.stream_runs[si].len() {
                let r = sender.stream_runs[si][k];
                let n = std::mem::take(&mut per_recipe[r]);
                if n == 0 {
                    continue;
                }
                let batch = if s.unpaced {
                    LIVE_BATCH_UNPACED
                } else {
                    LIVE_BATCH
                };
                let done = match sender.run_recipe(r, n as u32, batch) {
                    Ok(()) => n,
                    Err(e) if e.raw_os_error() == Some(libc::EINTR) => {
                        // A signal cut the run short: the program's count says how far it got.
                        let st = sender.stream_state(si as u32)?;
                        let got = st.next.saturating_sub(s.next).min(n);
                        s.next += got;
                        processed_total += got;
                        runs_done += 1;
                        max_batch = max_batch.max(got);
                        // The rest were never processed, so never counted as sent.
                        if stop.load(Ordering::Relaxed) {
                            break 'outer;
                        }
                        continue;
                    }
                    Err(e) => {
                        return Err(Error::io(
                            format!("XDP TX: BPF_PROG_RUN on {}", sender.ifname),
                            e,
                        ))
                    }
                };
                s.next += done;
                processed_total += done;
                runs_done += 1;
                max_batch = max_batch.max(done);
            }
            s.finishing_pair = s.gen.mid_pair(s.next);
        }
        if !any {
            wait_for_next_due(&streams, now);
        }
    }
    report(sender, &streams, runs_done, max_batch, processed_total)
}

/// Whether the program can keep this sender's schedule itself ([`run_kernel_paced`]): one
/// paced stream of one frame size, without deliberate reordering (a run carries one base
/// frame, so several recipes would have to take turns in user space).
fn kernel_paced_fits(sender: &XdpSender, streams: &[Sched<'_>]) -> bool {
    streams.len() == 1
        && sender.stream_runs.first().is_some_and(|r| r.len() == 1)
        && !streams[0].unpaced
        && streams[0].cfg.reorder_every.unwrap_or(0) < 2
}

/// About how long one [`run_kernel_paced`] call lasts when it sends nothing.
const KERNEL_PACED_WINDOW_NS: u64 = 1_000_000;
/// The sender sleeps only when its next frame is further away than this, and wakes this much
/// before it. Why not sleep between every two frames at low rates: an idle vCPU halts, and
/// the hypervisor may take over 10 ms to run it again (seen at 1 kpps: 9–90 frames slipped in
/// 2 of 8 runs with a 1 ms sleep between frames, none while the CPU was kept busy). A tester
/// CPU spins, as DPDK generators do.
const KERNEL_PACED_SLEEP_NS: u64 = 20_000_000;

/// The schedule kept by the program (`struct schedule` of `bpf/tx.bpf.c`): every iteration of a
/// call reads the clock and sends the stream's next frame only when it is due. User space
/// only sizes the calls (about [`KERNEL_PACED_WINDOW_NS`] of schedule each, from the measured
/// cost of an idle iteration), sleeps when the next frame is far, and watches `stop`.
///
/// Why: with user-space batches of ~50 µs, a sender made ~20,000 calls/s; each call creates a
/// page pool, and a pool whose pages are still in the device under test when the call ends is
/// freed later by a kernel worker on the sender's CPU at a cost that grows with the number of
/// pools waiting. Through the lab DUT that worker took the whole tester CPU for stretches of
/// 5–150 ms (perf: page_pool_release_retry → mem_allocator_disconnect) and the sender slipped
/// its schedule at any rate. One call per millisecond keeps that work negligible, and frames
/// now leave at their due time instead of in 50 µs batches.
fn run_kernel_paced(
    sender: &mut XdpSender,
    mut streams: Vec<Sched<'_>>,
    stop: &AtomicBool,
    turns: Option<(&super::turns::Turns, usize)>,
) -> Result<TxPortReport> {
    let run = sender.stream_runs[0][0];
    let shape = streams[0].pacer.shape();
    let fixed = |ns: f64| (ns * 65536.0).round() as u64;
    let schedule = Schedule {
        start_ns: shape.start_ns,
        period_fp: fixed(shape.period_ns).max(1),
        spacing_fp: fixed(shape.spacing_ns),
        burst: shape.burst,
        limit: shape.limit,
        max_debt: shape.max_debt,
        on: 1,
        slips_use_limit: u32::from(shape.slips_use_limit),
        link_gap_fp: fixed(shape.link_gap_ns),
        link_tolerance_fp: fixed(shape.link_tolerance_ns),
        ..Default::default()
    };
    // Measured in `open`, before the start instant.
    let idle_ns = sender.idle_ns.unwrap_or(50.0);
    sender.set_schedule(0, &schedule)?;
    let repeat = (KERNEL_PACED_WINDOW_NS as f64 / idle_ns)
        .ceil()
        .clamp(64.0, (1 << 20) as f64) as u32;
    let (mut calls, mut max_per_call) = (0u64, 0u64);
    let s = &mut streams[0];
    loop {
        let st = sender.stream_state(0)?;
        let sc = sender.schedule(0)?;
        s.pacer.sync(st.next, sc.slipped, sc.max_seen_debt);
        max_per_call = max_per_call.max(st.next - s.next);
        s.next = st.next;
        if s.pacer.done() || stop.load(Ordering::Relaxed) {
            break;
        }
        let due = s.pacer.next_due_ns();
        let now = crate::sys::monotonic_ns();
        if due > now + KERNEL_PACED_SLEEP_NS {
            // Far ahead: sleep (at most 10 ms at a time, to watch `stop`).
            crate::sys::sleep_until((due - KERNEL_PACED_SLEEP_NS / 2).min(now + 10_000_000));
            continue;
        }
        if let Some((t, me)) = turns {
            t.take(me);
        }
        let called = sender.run_recipe(run, repeat, LIVE_BATCH);
        if let Some((t, _)) = turns {
            t.release();
        }
        match called {
            Ok(()) => {}
            // A signal cut the call short: the program's state says how far it got.
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => {
                return Err(Error::io(
                    format!("XDP TX: BPF_PROG_RUN on {}", sender.ifname),
                    e,
                ))
            }
        }
        calls += 1;
    }
    sender.set_schedule(
        0,
        &Schedule {
            on: 0,
            ..sender.schedule(0)?
        },
    )?;
    let processed = streams[0].next;
    report(sender, &streams, calls, max_per_call, processed)
}

fn report(
    sender: &XdpSender,
    streams: &[Sched<'_>],
    runs_done: u64,
    max_batch: u64,
    processed_total: u64,
) -> Result<TxPortReport> {
    let ctl = array_ro::<Ctl>(sender.bpf(), "ctl")?
        .get(&0, 0)
        .map_err(|e| bpf_err("ctl", e))?;
    if ctl.bad_recipe > 0 {
        return Err(bpf_err(
            "the program met runs without a valid recipe",
            ctl.bad_recipe,
        ));
    }
    let (mut abandoned, mut refused_runs) = (0u64, 0u64);
    let mut out = Vec::new();
    for (si, s) in streams.iter().enumerate() {
        let st = sender.stream_state(si as u32)?;
        let (mut sent, mut bytes, mut processed, mut refused) = (0u64, 0u64, 0u64, 0u64);
        for &r in &sender.stream_runs[si] {
            let rs = sender.recipe_state(r as u32)?;
            // Refused by the DUT's own port: handed over and lost there (DESIGN.md §7).
            let ok = if sender.faces_dut {
                rs.processed
            } else {
                rs.processed.saturating_sub(rs.refused)
            };
            sent += ok;
            bytes += ok * sender.runs[r].len as u64;
            processed += rs.processed;
            refused += rs.refused;
            refused_runs += rs.refused_events;
        }
        if !sender.faces_dut {
            abandoned += refused;
        }
        if processed != st.next {
            return Err(bpf_err(
                "frame counts disagree",
                format!(
                    "stream {}: {processed} processed, next index {}",
                    s.cfg.id, st.next
                ),
            ));
        }
        out.push(TxStreamReport {
            stream_id: s.gen.stream_id(),
            sent,
            bytes,
            bytes_with_fcs: bytes + 4 * sent,
            intended_pps: if s.unpaced { Pps(0.0) } else { s.intended },
            achieved_pps: if sent >= 2 && st.last_ns > st.first_ns {
                Pps((sent - 1) as f64 / ((st.last_ns - st.first_ns) as f64 * 1e-9))
            } else {
                Pps(0.0)
            },
            first_tx_ns: if sent > 0 { st.first_ns } else { 0 },
            last_tx_ns: if sent > 0 { st.last_ns } else { 0 },
            slipped: if s.unpaced { 0 } else { s.pacer.slipped() },
            max_debt: if s.unpaced {
                0
            } else {
                s.pacer.max_seen_debt()
            },
            swapped_pairs: s.gen.swapped_pairs(processed),
            refused_by_peer: if sender.faces_dut { refused } else { 0 },
        });
    }
    Ok(TxPortReport {
        streams: out,
        flushes: runs_done,
        max_batch,
        mean_batch: if runs_done > 0 {
            processed_total as f64 / runs_done as f64
        } else {
            0.0
        },
        backpressure_flushes: refused_runs,
        abandoned,
        wrong_format: 0,
        prog_ns_per_frame: None,
    })
}

/// Enters `spec`'s namespace (pinning to its first CPU), opens an XDP sender for `streams`
/// and runs them from `start_ns` (0 = now). The streams' frames are sent with the MACs they
/// carry (no next-hop resolution: for benches and tests; a trial resolves first and calls
/// [`open`] and [`run`]).
pub fn run_port(
    spec: &PortSpec,
    streams: &[StreamConfig],
    start_ns: u64,
    stop: &AtomicBool,
) -> Result<TxPortReport> {
    let ifindex = spec.enter(0)?;
    let gens = streams
        .iter()
        .map(|c| Ok((FrameGen::new(c)?, c)))
        .collect::<Result<Vec<_>>>()?;
    let mut sender = open(spec, ifindex, &gens)?;
    let start = if start_ns == 0 {
        crate::sys::monotonic_ns()
    } else {
        start_ns
    };
    run(&mut sender, gens, start, stop)
}

/// `wr_drop` attached to an interface: drops every frame in the driver (the dropping peer of
/// `wirerate bench tx --backend xdp`; on a veth it also gives the interface NAPI, so its peer's
/// XDP frames are accepted). Detached when dropped.
pub struct XdpDrop {
    // Owns the program; its link (and with it the attachment) ends when this is dropped.
    _bpf: Ebpf,
}

impl std::fmt::Debug for XdpDrop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("XdpDrop")
    }
}

impl XdpDrop {
    /// Attaches `wr_drop` (driver mode) to `spec`'s interface, from a thread of its own that
    /// enters the port's namespace.
    pub fn attach(spec: &PortSpec) -> Result<XdpDrop> {
        std::thread::scope(|sc| {
            sc.spawn(|| -> Result<XdpDrop> {
                spec.enter(0)?;
                let mut bpf =
                    Ebpf::load(super::objects::TX).map_err(|e| bpf_err("loading tx.bpf.o", e))?;
                let prog: &mut Xdp = bpf
                    .program_mut("wr_drop")
                    .ok_or_else(|| bpf_err("program missing", "wr_drop"))?
                    .try_into()
                    .map_err(|e| bpf_err("wr_drop", e))?;
                prog.load().map_err(|e| bpf_err("wr_drop", e))?;
                prog.attach(&spec.ifname, aya::programs::XdpFlags::DRV_MODE)
                    .map_err(|e| bpf_err(&format!("attaching wr_drop to {}", spec.ifname), e))?;
                Ok(XdpDrop { _bpf: bpf })
            })
            .join()
            .map_err(|_| Error::Thread("XDP attach thread panicked".into()))?
        })
    }
}
