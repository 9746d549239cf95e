//! The XDP backend's `unsafe`: every block carries a `// SAFETY:` line.
//!
//! - [`test_run_live`]: `bpf(BPF_PROG_TEST_RUN)` with `BPF_F_TEST_XDP_LIVE_FRAMES`, which runs
//!   an XDP program `repeat` times over a frame and sends what it returns `XDP_TX` for out of
//!   the ingress interface (kernel ≥ 5.18; net/bpf/test_run.c).
//! - [`zero_entries`]: `bpf(BPF_MAP_UPDATE_BATCH)` zeroing a range of an array map's entries in
//!   one call (a loaded program's maps reset between trials, `xdp::cache`).
//! - The map value types shared with `bpf/tx.bpf.c` and `bpf/conn_rx.bpf.c` (`#[repr(C)]`,
//!   [`aya::Pod`]).

use std::os::fd::{AsRawFd, BorrowedFd};

const BPF_PROG_TEST_RUN: libc::c_long = 10;
/// `BPF_F_TEST_XDP_LIVE_FRAMES` (include/uapi/linux/bpf.h).
const BPF_F_TEST_XDP_LIVE_FRAMES: u32 = 1 << 1;
/// The largest `batch_size` live mode accepts (TEST_XDP_MAX_BATCH).
pub const MAX_LIVE_BATCH: u32 = 256;

/// The `test` member of `union bpf_attr`, in the kernel's layout.
#[repr(C)]
#[derive(Default)]
struct TestRunAttr {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
    ctx_size_in: u32,
    ctx_size_out: u32,
    ctx_in: u64,
    ctx_out: u64,
    flags: u32,
    cpu: u32,
    batch_size: u32,
    _pad: u32,
}

/// `struct xdp_md` as BPF_PROG_TEST_RUN takes it in `ctx_in`: offsets into `data_in`.
#[repr(C)]
#[derive(Default)]
struct XdpMd {
    data: u32,
    data_end: u32,
    data_meta: u32,
    ingress_ifindex: u32,
    rx_queue_index: u32,
    egress_ifindex: u32,
}

/// Runs the XDP program `prog` `repeat` times in live-frames mode over `data` (`meta_len`
/// bytes of metadata, a multiple of 4 up to 32, then the frame), as if received on
/// `ifindex` queue 0 of the calling thread's network namespace, `batch` frames per batch
/// (1..=[`MAX_LIVE_BATCH`]). The kernel sends every frame the program returns `XDP_TX` for
/// out of `ifindex`. On `EINTR` (a signal) an unknown number of frames were processed: the
/// program's own counters tell.
pub fn test_run_live(
    prog: BorrowedFd<'_>,
    ifindex: u32,
    data: &[u8],
    meta_len: u32,
    repeat: u32,
    batch: u32,
) -> std::io::Result<()> {
    let ctx = XdpMd {
        data: meta_len,
        data_end: data.len() as u32,
        ingress_ifindex: ifindex,
        ..Default::default()
    };
    let mut attr = TestRunAttr {
        prog_fd: prog.as_raw_fd() as u32,
        data_size_in: data.len() as u32,
        data_in: data.as_ptr() as u64,
        repeat,
        ctx_size_in: std::mem::size_of::<XdpMd>() as u32,
        ctx_in: &ctx as *const XdpMd as u64,
        flags: BPF_F_TEST_XDP_LIVE_FRAMES,
        batch_size: batch,
        ..Default::default()
    };
    // SAFETY: `attr` is a properly laid out, zero-padded bpf_attr prefix whose pointers
    // (`data`, `ctx`) stay valid for the call; the kernel only reads them (no data_out/ctx_out
    // in live mode) and writes `retval`/`duration` inside `attr`, which we own mutably.
    let r = unsafe {
        libc::syscall(
            libc::SYS_bpf,
            BPF_PROG_TEST_RUN,
            &mut attr as *mut TestRunAttr,
            std::mem::size_of::<TestRunAttr>() as u32,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `BPF_MAP_UPDATE_BATCH` (include/uapi/linux/bpf.h, `enum bpf_cmd`).
const BPF_MAP_UPDATE_BATCH: libc::c_long = 26;

/// The `batch` member of `union bpf_attr`, in the kernel's layout.
#[repr(C)]
#[derive(Default)]
struct BatchAttr {
    in_batch: u64,
    out_batch: u64,
    keys: u64,
    values: u64,
    count: u32,
    map_fd: u32,
    elem_flags: u64,
    flags: u64,
}

/// Most entries [`zero_entries`] writes per call (bounds its buffers to a few MiB).
const ZERO_CHUNK: u32 = 1 << 16;

/// Sets entries `keys` of the array map `map` (u32 keys) to zero in one `BPF_MAP_UPDATE_BATCH`
/// call per [`ZERO_CHUNK`] entries: the kernel walks the entries itself, where one update
/// syscall per entry would cost more than loading the program afresh (a receiver's duplicate
/// window is 2^16 entries per stream). `value_len` is what the kernel copies per entry: the
/// value size, or for a per-CPU map the value size rounded up to 8 times the possible CPUs.
pub fn zero_entries(
    map: BorrowedFd<'_>,
    keys: std::ops::Range<u32>,
    value_len: usize,
) -> std::io::Result<()> {
    let mut first = keys.start;
    while first < keys.end {
        let n = (keys.end - first).min(ZERO_CHUNK);
        let ks: Vec<u32> = (first..first + n).collect();
        let values = vec![0u8; n as usize * value_len];
        let mut attr = BatchAttr {
            keys: ks.as_ptr() as u64,
            values: values.as_ptr() as u64,
            count: n,
            map_fd: map.as_raw_fd() as u32,
            ..Default::default()
        };
        // SAFETY: `attr` is a zero-padded bpf_attr `batch` member; `keys` holds `n` u32 keys
        // and `values` `n * value_len` bytes, both alive for the call; the kernel reads them
        // and writes only `attr.count` (entries done), which we own mutably.
        let r = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                BPF_MAP_UPDATE_BATCH,
                &mut attr as *mut BatchAttr,
                std::mem::size_of::<BatchAttr>() as u32,
            )
        };
        if r < 0 {
            return Err(std::io::Error::last_os_error());
        }
        if attr.count != n {
            return Err(std::io::Error::other(format!(
                "BPF_MAP_UPDATE_BATCH zeroed {} of {n} entries",
                attr.count
            )));
        }
        first += n;
    }
    Ok(())
}

/// Moves the calling thread (only) into a new, empty network namespace.
pub fn unshare_netns() -> std::io::Result<()> {
    // SAFETY: unshare(2) with CLONE_NEWNET only changes the calling thread's namespace; it
    // takes no pointers.
    let r = unsafe { libc::unshare(libc::CLONE_NEWNET) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// `struct rx_cfg` of `bpf/rx.bpf.c`: what one trial tells the receiver program (`xdp::rx`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RxCfg {
    /// CLOCK_MONOTONIC when the receiver was attached; earlier send timestamps are forged.
    pub not_before: u64,
    /// 1: pass test frames on after counting them.
    pub pass_ours: u32,
    /// 1: no two CPUs account this port's frames at once (native XDP, one receive queue), so
    /// the sequence state needs no atomic operations ([`super::rx`], "One at a time").
    pub one_at_a_time: u32,
    /// The port's interface: with `one_at_a_time`, frames must come from its queue 0.
    pub ifindex: u32,
    pub pad: u32,
}

/// `struct recipe` of `bpf/tx.bpf.c`: one base frame of one stream and where its variable
/// fields are.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Recipe {
    pub seed: u64,
    pub reorder_every: u64,
    pub stream: u32,
    pub flags: u32,
    pub src_ip_count: u32,
    pub dst_ip_count: u32,
    pub src_ip_base: u32,
    pub dst_ip_base: u32,
    pub src_port_count: u32,
    pub dst_port_count: u32,
    pub src_port_base: u16,
    pub dst_port_base: u16,
    pub sig_off: u16,
    pub udp_csum_off: u16,
    pub udp_csum_base: u16,
    pub ip_csum_off: u16,
    pub ip_csum_base: u16,
    pub ip_ident_off: u16,
    pub src_addr_off: u16,
    pub dst_addr_off: u16,
    pub udp_off: u16,
    pub ip_is_v4: u16,
    /// With `RECIPE_CONNS`: the connections of the `conns` map the frames cycle through.
    pub conn_count: u32,
    pub pad: u32,
}

/// `struct conn` of `bpf/tx.bpf.c`: one connection's IPv4 4-tuple as the tester sends it, in
/// host order (the load of `engine::nat` on the XDP backend).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Conn {
    pub src_addr: u32,
    pub dst_addr: u32,
    pub src_port: u16,
    pub dst_port: u16,
}

/// `struct stream_state` of `bpf/tx.bpf.c`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StreamState {
    pub next: u64,
    pub first_ns: u64,
    pub last_ns: u64,
    /// The clock reading the current group of frames carries, its call's token and how
    /// many more frames of the group may carry it (`CLOCK_GROUP` of bpf/tx.bpf.c).
    pub group_ns: u64,
    pub group_token: u32,
    pub group_left: u32,
}

/// `struct schedule` of `bpf/tx.bpf.c`: a stream's absolute schedule, kept by the program
/// (times in ns, period and spacing in ns << 16).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Schedule {
    pub start_ns: u64,
    pub period_fp: u64,
    pub spacing_fp: u64,
    pub burst: u64,
    pub limit: u64,
    pub max_debt: u64,
    pub slipped: u64,
    pub max_seen_debt: u64,
    pub on: u32,
    pub slips_use_limit: u32,
    pub link_gap_fp: u64,
    pub link_tolerance_fp: u64,
    pub link_tat_fp: u64,
}

/// `struct recipe_state` of `bpf/tx.bpf.c`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RecipeState {
    pub processed: u64,
    pub refused: u64,
    pub refused_events: u64,
    pub last_err: i64,
}

/// `struct ctl` of `bpf/tx.bpf.c`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ctl {
    pub tid: u32,
    pub current: u32,
    pub bad_recipe: u64,
}

/// Header bytes restored per frame (`HDR_MAX` of `bpf/tx.bpf.c`).
pub const HDR_MAX: usize = 256;

/// `struct header` of `bpf/tx.bpf.c`: a recipe's base frame up to its signature, written over
/// every frame before it is patched (a recycled page may hold what the DUT wrote into it).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub len: u32,
    pub bytes: [u8; HDR_MAX],
}

impl Default for Header {
    fn default() -> Self {
        Header {
            len: 0,
            bytes: [0; HDR_MAX],
        }
    }
}

// SAFETY: #[repr(C)] u32 followed by a u8 array whose size is a multiple of 4: no padding, any
// bit pattern is valid.
unsafe impl aya::Pod for Header {}

/// `struct totals` of `bpf/conn_rx.bpf.c`, summed over the CPUs (the connection receiver,
/// `super::conn_rx`, reads it).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Frames that arrived on their connection's tuple.
    pub received: u64,
    /// Frames of the stream on another tuple than their connection's.
    pub misdirected: u64,
    /// Frames of the stream with an index past N.
    pub out_of_range: u64,
    /// Signed frames of another stream.
    pub other_streams: u64,
}

// SAFETY: #[repr(C)], four u64: no padding, any bit pattern valid.
unsafe impl aya::Pod for Totals {}

/// `struct slot` of `bpf/learn_rx.bpf.c`: the tuple connection k's preliminary frame arrived
/// with (host order) and whether it did (`state` [`LEARN_SLOT_LEARNED`]; the learner of
/// `engine::nat`'s preliminary phase, `super::learn_rx`).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LearnSlot {
    pub conn: Conn,
    pub state: u32,
}

/// `LearnSlot::state` of a slot whose tuple is written.
pub const LEARN_SLOT_LEARNED: u32 = 2;

/// `struct totals` of `bpf/learn_rx.bpf.c`, summed over the CPUs.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LearnTotals {
    /// First frames of their connection (slots written).
    pub learned: u64,
    /// Further frames of a connection already learned.
    pub duplicates: u64,
    /// Frames of the stream with an index past N.
    pub out_of_range: u64,
    /// Signed frames of another stream.
    pub other_streams: u64,
}

// SAFETY: #[repr(C)], a 12-byte Conn (no padding) then a u32: 16 bytes, no padding (checked
// below), any bit pattern valid.
unsafe impl aya::Pod for LearnSlot {}
// SAFETY: #[repr(C)], four u64: no padding, any bit pattern valid.
unsafe impl aya::Pod for LearnTotals {}

// SAFETY: #[repr(C)], a u64 then two u32: 16 bytes, no padding (checked below), any bit
// pattern valid.
unsafe impl aya::Pod for RxCfg {}
// SAFETY: plain #[repr(C)] integers with no padding holes (sizes checked by the test below),
// so any bit pattern is a valid value and the bytes the kernel copies are exactly the fields.
unsafe impl aya::Pod for Recipe {}
// SAFETY: as above: #[repr(C)], integers only, no padding (two u32 then two u16: 12 bytes).
unsafe impl aya::Pod for Conn {}
// SAFETY: as above: #[repr(C)], integers only, no padding.
unsafe impl aya::Pod for StreamState {}
// SAFETY: as above: #[repr(C)], integers only, no padding.
unsafe impl aya::Pod for RecipeState {}
// SAFETY: as above: #[repr(C)], integers only, no padding.
unsafe impl aya::Pod for Ctl {}
// SAFETY: as above: #[repr(C)], integers only, no padding.
unsafe impl aya::Pod for Schedule {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_values_have_the_c_layout_without_padding() {
        // Sums of the field sizes: any padding would make the sizes differ.
        assert_eq!(
            std::mem::size_of::<Recipe>(),
            8 * 2 + 4 * 8 + 2 * 12 + 4 * 2
        );
        assert_eq!(std::mem::size_of::<Conn>(), 12);
        assert_eq!(std::mem::size_of::<RxCfg>(), 24);
        assert_eq!(std::mem::size_of::<BatchAttr>(), 8 * 4 + 4 * 2 + 8 * 2);
        assert_eq!(std::mem::size_of::<LearnSlot>(), 16);
        assert_eq!(std::mem::size_of::<LearnTotals>(), 32);
        assert_eq!(std::mem::size_of::<StreamState>(), 40);
        assert_eq!(std::mem::size_of::<RecipeState>(), 32);
        assert_eq!(std::mem::size_of::<Ctl>(), 16);
        assert_eq!(std::mem::size_of::<Schedule>(), 8 * 8 + 4 * 2 + 8 * 3);
        assert_eq!(std::mem::size_of::<XdpMd>(), 24);
        assert_eq!(std::mem::size_of::<TestRunAttr>(), 80);
    }
}
