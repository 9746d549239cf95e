//! The only place in the engine with `unsafe`: Linux system calls for the AF_PACKET backend.
//!
//! - [`PacketSocket`]: an `AF_PACKET`/`SOCK_RAW` socket bound to one interface, with the options
//!   the engine needs (qdisc bypass, forced send buffer, ignore-outgoing).
//! - [`TxRing`]: a `PACKET_TX_RING` (TPACKET_V2) mapped into our memory; frames are written in
//!   place, marked `SEND_REQUEST`, and flushed with one non-blocking `send`.
//! - [`RxRing`]: a `PACKET_RX_RING` (TPACKET_V3) whose blocks we walk and hand back.
//! - [`MmsgBatch`] (`mmsg.rs`): the sendmmsg backend's reusable frames and headers.
//! - Thread placement (`thread.rs`): [`enter_netns`] (setns), [`pin_to_cpu`],
//!   [`set_timer_slack_ns`], [`gettid`].
//! - Queues (`ethtool.rs`): [`rx_queues`], what the driver tells `ethtool -l`.
//! - Clocks (`clock.rs`): [`monotonic_ns`], [`realtime_ns`], [`sleep_until`].
//!
//! Every `unsafe` block carries a `// SAFETY:` line.

mod clock;
mod ethtool;
mod mmsg;
mod release;
mod socket;
mod thread;
pub mod tun;

pub use clock::{
    machine_now, monotonic_ns, realtime_minus_monotonic_ns, realtime_ns, sleep_until, wait_for_due,
};
pub use ethtool::rx_queues;
pub use mmsg::MmsgBatch;
pub use socket::PacketSocket;
pub use thread::{
    allowed_cpus, enter_netns, gettid, ifindex, pin_thread_to_cpu, pin_to_cpu, set_thread_fifo,
    set_thread_nice, set_timer_slack_ns,
};

use std::io;
use std::mem::ManuallyDrop;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, Ordering};

// Constants from <linux/if_packet.h> and <linux/if_ether.h>, spelled out so that the backend
// does not depend on which of them a given `libc` release exports.
const SOL_PACKET: libc::c_int = 263;
const PACKET_RX_RING: libc::c_int = 5;
const PACKET_STATISTICS: libc::c_int = 6;
const PACKET_VERSION: libc::c_int = 10;
const PACKET_TX_RING: libc::c_int = 13;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_LOSS: libc::c_int = 14;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const PACKET_AUXDATA: libc::c_int = 8;
/// `tp_status` of a received frame whose transport checksum is left to the device.
const TP_STATUS_CSUMNOTREADY: u32 = 1 << 3;
const PACKET_VNET_HDR: libc::c_int = 15;
const PACKET_FANOUT: libc::c_int = 18;
const PACKET_FANOUT_DATA: libc::c_int = 22;
/// Fanout mode: a classic BPF program picks the member (`return value % members`).
const PACKET_FANOUT_CBPF: u32 = 6;
/// Fanout flag: the kernel picks a free group id (first member only).
const PACKET_FANOUT_FLAG_UNIQUEID: u32 = 0x2000;
/// Fanout flag: the group does not see frames sent from this host (Linux 6.9+).
const PACKET_FANOUT_FLAG_IGNORE_OUTGOING: u32 = 0x4000;
/// Classic BPF loads relative to the link-layer (MAC) header start at this offset.
pub const SKF_LL_OFF: i32 = -0x20_0000;
/// `sizeof(struct virtio_net_hdr)`.
const VNET_HDR_LEN: usize = 10;
const TPACKET_V2: libc::c_int = 1;
const TPACKET_V3: libc::c_int = 2;
/// `ETH_P_ALL`: every protocol.
pub const ETH_P_ALL: u16 = 0x0003;

/// Frame status values of the TX ring (TPACKET_V2).
pub const TP_STATUS_AVAILABLE: u32 = 0;
pub const TP_STATUS_SEND_REQUEST: u32 = 1;
pub const TP_STATUS_SENDING: u32 = 2;
pub const TP_STATUS_WRONG_FORMAT: u32 = 4;
/// Block status bits of the RX ring (TPACKET_V3).
const TP_STATUS_KERNEL: u32 = 0;
const TP_STATUS_USER: u32 = 1;
/// Per-packet status bit: the ring was full and earlier packets were dropped.
pub const TP_STATUS_LOSING: u32 = 1 << 2;
/// Per-packet status bit: the kernel moved the frame's outer 802.1Q/802.1ad tag into the
/// packet's metadata, so the bytes handed over are 4 fewer than the frame on the wire.
pub const TP_STATUS_VLAN_VALID: u32 = 1 << 4;

/// `struct tpacket_req` (TX ring, V2).
#[repr(C)]
#[derive(Default)]
struct TpacketReq {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
}

/// `struct tpacket_req3` (RX ring, V3).
#[repr(C)]
#[derive(Default)]
struct TpacketReq3 {
    block_size: u32,
    block_nr: u32,
    frame_size: u32,
    frame_nr: u32,
    retire_blk_tov: u32,
    sizeof_priv: u32,
    feature_req_word: u32,
}

/// One classic BPF instruction (`struct sock_filter`), e.g. for a fanout steering program.
pub type SockFilter = libc::sock_filter;

/// `struct tpacket_stats_v3`.
#[repr(C)]
#[derive(Default)]
struct TpacketStatsV3 {
    packets: u32,
    drops: u32,
    freeze_q_cnt: u32,
}

/// Offsets inside `struct tpacket2_hdr` (32 bytes; frame data at 32 for TX).
mod v2 {
    pub const STATUS: usize = 0;
    pub const LEN: usize = 4;
    /// TX data starts at `TPACKET2_HDRLEN - sizeof(struct sockaddr_ll)` = 52 - 20.
    pub const TX_DATA: usize = 32;
}

/// Offsets inside `struct tpacket_block_desc` / `tpacket_hdr_v1` and `struct tpacket3_hdr`.
mod v3 {
    pub const BLOCK_STATUS: usize = 8;
    pub const NUM_PKTS: usize = 12;
    pub const OFFSET_TO_FIRST_PKT: usize = 16;
    pub const PKT_NEXT_OFFSET: usize = 0;
    pub const PKT_SEC: usize = 4;
    pub const PKT_NSEC: usize = 8;
    pub const PKT_SNAPLEN: usize = 12;
    pub const PKT_LEN: usize = 16;
    pub const PKT_STATUS: usize = 20;
    pub const PKT_MAC: usize = 24;
}

/// An all-zero `ifreq` naming interface `ifname` (NUL-terminated by the zeroed tail), for the
/// interface ioctls (`SIOCGIFMTU`, `SIOCETHTOOL`); an error if the name is not 1 to 15 bytes.
fn ifreq_named(ifname: &str) -> io::Result<libc::ifreq> {
    let name = ifname.as_bytes();
    if name.is_empty() || name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name `{ifname}` is not 1 to 15 bytes"),
        ));
    }
    // SAFETY: ifreq is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name) {
        *d = *s as libc::c_char;
    }
    Ok(req)
}

fn cvt(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

fn setsockopt<T>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live `T` of exactly `size_of::<T>()` bytes for the call.
    cvt(unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    })
    .map(drop)
}

/// A memory mapping owned by a ring; unmapped on drop.
#[derive(Debug)]
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain shared memory; access is coordinated through the ring protocol
// by the single owner of the ring.
unsafe impl Send for Mapping {}

impl Mapping {
    /// Moves the mapping out, leaving one of no bytes in its place (which unmaps nothing):
    /// for a ring's `Drop`, which hands its mapping to the releasing thread.
    fn take(&mut self) -> Mapping {
        std::mem::replace(
            self,
            Mapping {
                ptr: NonNull::dangling(),
                len: 0,
            },
        )
    }

    fn new(fd: RawFd, len: usize) -> io::Result<Self> {
        // SAFETY: mapping a packet ring of the socket's configured size; the result is checked.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_LOCKED | libc::MAP_POPULATE,
                fd,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            // MAP_LOCKED may exceed RLIMIT_MEMLOCK for non-root; retry without it.
            // SAFETY: as above.
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_POPULATE,
                    fd,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
            return Ok(Mapping {
                ptr: NonNull::new(p.cast()).expect("mmap returned null"),
                len,
            });
        }
        Ok(Mapping {
            ptr: NonNull::new(p.cast()).expect("mmap returned null"),
            len,
        })
    }

    /// The 32-bit word at `off`, as an atomic (ring status words are shared with the kernel).
    fn status(&self, off: usize) -> &AtomicU32 {
        assert!(off + 4 <= self.len && off.is_multiple_of(4));
        // SAFETY: in bounds and 4-aligned (mmap is page-aligned, `off` is a multiple of 4);
        // the kernel only ever accesses it as a u32.
        unsafe { &*(self.ptr.as_ptr().add(off) as *const AtomicU32) }
    }

    fn read_u32(&self, off: usize) -> u32 {
        assert!(off + 4 <= self.len);
        // SAFETY: in bounds; read_unaligned tolerates any alignment.
        unsafe { std::ptr::read_unaligned(self.ptr.as_ptr().add(off) as *const u32) }
    }

    fn read_u16(&self, off: usize) -> u16 {
        assert!(off + 2 <= self.len);
        // SAFETY: in bounds; read_unaligned tolerates any alignment.
        unsafe { std::ptr::read_unaligned(self.ptr.as_ptr().add(off) as *const u16) }
    }

    fn write_u32(&self, off: usize, v: u32) {
        assert!(off + 4 <= self.len);
        // SAFETY: in bounds; the slot is owned by user space while we write it.
        unsafe { std::ptr::write_unaligned(self.ptr.as_ptr().add(off) as *mut u32, v) }
    }

    fn slice(&self, off: usize, len: usize) -> &[u8] {
        assert!(off.checked_add(len).is_some_and(|e| e <= self.len));
        // SAFETY: in bounds; the ring protocol gives user space this range for now.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(off), len) }
    }

    /// `&mut self`: the returned slice borrows the mapping mutably, so no other slice of it
    /// (from [`slice`](Self::slice) or this) can alias it while it lives (issue 18: with
    /// `&self` this was a safe function whose soundness depended on its callers).
    fn slice_mut(&mut self, off: usize, len: usize) -> &mut [u8] {
        assert!(off.checked_add(len).is_some_and(|e| e <= self.len));
        // SAFETY: in bounds; the ring protocol gives user space exclusive use of this slot
        // (status AVAILABLE), and `&mut self` makes this the only slice of the mapping alive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr().add(off), len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        if self.len == 0 {
            return;
        }
        // SAFETY: unmapping exactly what `new` mapped; no slices outlive the ring.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// A `PACKET_TX_RING` (TPACKET_V2) on a [`PacketSocket`], released like an [`RxRing`] when
/// dropped.
///
/// Protocol: a slot whose status is `AVAILABLE` belongs to us; we write the frame, its length,
/// then set `SEND_REQUEST` (release). [`TxRing::flush`] asks the kernel to send every requested
/// slot in ring order without blocking; a slot the kernel took leaves `SEND_REQUEST`
/// (`SENDING`, then `AVAILABLE` once the skb is freed). A slot the kernel could not take (send
/// buffer full, or refused by the device: [`Handover`]) stays `SEND_REQUEST` and goes out on a
/// later flush, unless it is [withdrawn](TxRing::withdraw).
#[derive(Debug)]
pub struct TxRing {
    sock: PacketSocket,
    map: Mapping,
    frame_size: usize,
    frame_nr: usize,
    /// Bytes of `virtio_net_hdr` in front of each frame (0 or 10), see [`TxRing::new`].
    vnet: usize,
    /// `PACKET_LOSS` is on: a slot can be [withdrawn](TxRing::withdraw).
    withdrawable: bool,
}

/// How one hand-over to the kernel (`send` on a TX ring, `sendmmsg`) ended.
///
/// `refused`: the device refused the frame after the ones taken (`ENOBUFS`). On a veth that
/// means its peer's receive ring was full: the veth dropped the frame (counted in the sending
/// veth's `tx_dropped`) or, with a qdisc on the sending veth, its queue was stopped and the
/// frame never reached the device (counted nowhere). docs/engine.md, "When the DUT's port
/// refuses a frame", has the experiment. The frame was not sent; on a TX ring its slot is back
/// at `SEND_REQUEST` and the kernel will retry it unless it is [withdrawn](TxRing::withdraw).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Handover {
    /// Frames taken (`sendmmsg`; a TX ring's slots say it themselves, so 0 there).
    pub accepted: usize,
    pub refused: bool,
}

impl Drop for TxRing {
    fn drop(&mut self) {
        // As `RxRing`'s: the mapping first, then (the field) the socket.
        release::later(self.map.take());
    }
}

impl TxRing {
    /// Configures a TX ring of at least `frames` slots of `frame_size` bytes (a power of two
    /// ≥ 2048 is typical) on `sock`.
    ///
    /// Each slot carries a `virtio_net_hdr` (`PACKET_VNET_HDR`) in front of the frame, whose
    /// `hdr_len` is the whole frame: the kernel then copies the frame into the skb's linear
    /// part instead of attaching the ring page as a fragment. A page fragment costs a page
    /// reference per frame and, on veth, a copy into a fresh page (`skb_copy_ubufs`), which
    /// is more than copying a small frame. If the option is refused, frames go out as
    /// fragments as before.
    ///
    /// `withdrawable` turns `PACKET_LOSS` on (it must be set before the ring exists), so that a
    /// refused frame can be [withdrawn](Self::withdraw) instead of retried. It also makes the
    /// kernel skip a malformed slot (status `AVAILABLE`) instead of marking it
    /// `WRONG_FORMAT`.
    pub fn new(
        sock: PacketSocket,
        frame_size: usize,
        frames: usize,
        withdrawable: bool,
    ) -> io::Result<Self> {
        if withdrawable {
            setsockopt(sock.raw_fd(), SOL_PACKET, PACKET_LOSS, &1i32)?;
        }
        let vnet = match setsockopt(sock.raw_fd(), SOL_PACKET, PACKET_VNET_HDR, &1i32) {
            Ok(()) => VNET_HDR_LEN,
            Err(_) => 0,
        };
        setsockopt(sock.raw_fd(), SOL_PACKET, PACKET_VERSION, &TPACKET_V2)?;
        let page = 4096usize;
        let block_size = frame_size.max(page).next_power_of_two().max(1 << 16);
        let per_block = block_size / frame_size;
        let block_nr = frames.div_ceil(per_block).max(1);
        let req = TpacketReq {
            block_size: block_size as u32,
            block_nr: block_nr as u32,
            frame_size: frame_size as u32,
            frame_nr: (block_nr * per_block) as u32,
        };
        setsockopt(sock.raw_fd(), SOL_PACKET, PACKET_TX_RING, &req)?;
        let map = Mapping::new(sock.raw_fd(), block_size * block_nr)?;
        Ok(TxRing {
            sock,
            map,
            frame_size,
            frame_nr: block_nr * per_block,
            vnet,
            withdrawable,
        })
    }

    pub fn socket(&self) -> &PacketSocket {
        &self.sock
    }

    pub fn slots(&self) -> usize {
        self.frame_nr
    }

    /// Largest frame a slot holds.
    pub fn max_frame_len(&self) -> usize {
        self.frame_size - v2::TX_DATA - self.vnet
    }

    /// The status word of slot `i` (acquire).
    pub fn status(&self, i: usize) -> u32 {
        self.map
            .status(i * self.frame_size + v2::STATUS)
            .load(Ordering::Acquire)
    }

    /// The data area of slot `i`; only valid to write while its status is `AVAILABLE`.
    pub fn data_mut(&mut self, i: usize) -> &mut [u8] {
        self.map.slice_mut(
            i * self.frame_size + v2::TX_DATA + self.vnet,
            self.frame_size - v2::TX_DATA - self.vnet,
        )
    }

    /// Hands slot `i`, holding a frame of `len` bytes, to the kernel.
    pub fn request(&mut self, i: usize, len: usize) {
        let base = i * self.frame_size;
        if self.vnet > 0 {
            // virtio_net_hdr: flags 0, gso_type NONE, hdr_len = the frame (little-endian),
            // no GSO, no checksum offload.
            let hdr = self.map.slice_mut(base + v2::TX_DATA, self.vnet);
            hdr.fill(0);
            hdr[2..4].copy_from_slice(&(len as u16).to_le_bytes());
        }
        self.map.write_u32(base + v2::LEN, (len + self.vnet) as u32);
        fence(Ordering::Release);
        self.map
            .status(base + v2::STATUS)
            .store(TP_STATUS_SEND_REQUEST, Ordering::Release);
    }

    /// Whether slot `i` is ours to write (neither requested nor in flight).
    pub fn is_available(&self, i: usize) -> bool {
        self.status(i) & (TP_STATUS_SEND_REQUEST | TP_STATUS_SENDING | TP_STATUS_WRONG_FORMAT) == 0
    }

    /// Takes slot `i` back (after a malformed frame, or a request never flushed).
    pub fn reset(&mut self, i: usize) {
        self.map
            .status(i * self.frame_size + v2::STATUS)
            .store(TP_STATUS_AVAILABLE, Ordering::Release);
    }

    /// Takes back slot `i`, requested but refused by the device (a [`Handover`] with
    /// `refused`; the kernel stopped there and left it at `SEND_REQUEST`), without sending it:
    /// its length becomes 0, which the kernel's next pass drops as malformed — silently, with
    /// `PACKET_LOSS` on — setting it `AVAILABLE` and moving on to the next slot. Clearing the
    /// status instead would leave the kernel waiting at this slot for good (it only walks
    /// slots that are `SEND_REQUEST`). Only for a ring made `withdrawable`.
    pub fn withdraw(&mut self, i: usize) {
        assert!(self.withdrawable, "TX ring without PACKET_LOSS");
        self.map.write_u32(i * self.frame_size + v2::LEN, 0);
        fence(Ordering::Release);
    }

    /// Asks the kernel to send all requested slots, without blocking. Would-block (send buffer
    /// full) is not an error: the slots stay requested.
    pub fn flush(&self) -> io::Result<Handover> {
        // SAFETY: a zero-length send on a TX-ring socket; no user buffer is read.
        let r = unsafe { libc::send(self.sock.raw_fd(), std::ptr::null(), 0, libc::MSG_DONTWAIT) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(Handover::default()),
                _ if e.raw_os_error() == Some(libc::ENOBUFS) => Ok(Handover {
                    accepted: 0,
                    refused: true,
                }),
                _ => Err(e),
            };
        }
        Ok(Handover::default())
    }
}

/// A `PACKET_RX_RING` (TPACKET_V3) on a [`PacketSocket`].
///
/// Dropped, its mapping and then its socket are released on the releasing thread
/// ([`release`]): a mapped ring keeps the socket open until it is unmapped.
#[derive(Debug)]
pub struct RxRing {
    sock: PacketSocket,
    map: Mapping,
    block_size: usize,
    block_nr: usize,
    next: usize,
}

/// One received packet inside a retired block.
#[derive(Debug, Clone, Copy)]
pub struct RxPacket<'a> {
    /// The captured bytes, starting at the Ethernet header.
    pub data: &'a [u8],
    /// Length on the wire (may exceed `data.len()` if truncated by the snap length).
    pub wire_len: usize,
    /// Kernel receive timestamp, CLOCK_REALTIME nanoseconds.
    pub ts_realtime_ns: u64,
    /// The packet's status bits (e.g. [`TP_STATUS_LOSING`]).
    pub status: u32,
    /// The first packet of a block just handed over: every packet of the block was received
    /// (and stamped) before the caller sees this one, so a clock read now bounds their stamps.
    pub first_in_block: bool,
}

impl RxPacket<'_> {
    /// The frame's length as it was on the wire (without FCS): the bytes handed over plus the
    /// outer VLAN tag the kernel took off into metadata ([`TP_STATUS_VLAN_VALID`]), so byte
    /// counts of tagged streams match what was sent and what the XDP receiver counts.
    pub fn len_on_wire(&self) -> usize {
        self.data.len()
            + if self.status & TP_STATUS_VLAN_VALID != 0 {
                4
            } else {
                0
            }
    }
}

impl Drop for RxRing {
    fn drop(&mut self) {
        // Handed over before the socket (the field, dropped after this): unmapped first.
        release::later(self.map.take());
    }
}

impl RxRing {
    /// Configures a V3 RX ring of `block_nr` blocks of `block_size` bytes; a block is handed to
    /// user space when full or after `retire_ms` milliseconds.
    pub fn new(
        sock: PacketSocket,
        block_size: usize,
        block_nr: usize,
        retire_ms: u32,
    ) -> io::Result<Self> {
        setsockopt(sock.raw_fd(), SOL_PACKET, PACKET_VERSION, &TPACKET_V3)?;
        let frame_size = 2048usize;
        let req = TpacketReq3 {
            block_size: block_size as u32,
            block_nr: block_nr as u32,
            frame_size: frame_size as u32,
            frame_nr: (block_size / frame_size * block_nr) as u32,
            retire_blk_tov: retire_ms,
            sizeof_priv: 0,
            feature_req_word: 0,
        };
        setsockopt(sock.raw_fd(), SOL_PACKET, PACKET_RX_RING, &req)?;
        let map = Mapping::new(sock.raw_fd(), block_size * block_nr)?;
        Ok(RxRing {
            sock,
            map,
            block_size,
            block_nr,
            next: 0,
        })
    }

    pub fn socket(&self) -> &PacketSocket {
        &self.sock
    }

    /// Calls `f` for every packet of every block that is ready now, returning blocks to the
    /// kernel as it goes; waits up to `timeout_ms` first if none is ready. Returns the number of
    /// packets seen.
    pub fn drain<F: FnMut(&PacketSocket, RxPacket<'_>)>(
        &mut self,
        timeout_ms: i32,
        mut f: F,
    ) -> io::Result<usize> {
        let mut seen = 0usize;
        let mut waited = false;
        loop {
            let base = self.next * self.block_size;
            let st = self
                .map
                .status(base + v3::BLOCK_STATUS)
                .load(Ordering::Acquire);
            if st & TP_STATUS_USER == 0 {
                if seen > 0 || waited || timeout_ms == 0 {
                    return Ok(seen);
                }
                self.sock.poll_readable(timeout_ms)?;
                waited = true;
                continue;
            }
            let num = self.map.read_u32(base + v3::NUM_PKTS) as usize;
            let mut off = self.map.read_u32(base + v3::OFFSET_TO_FIRST_PKT) as usize;
            for i in 0..num {
                let p = base + off;
                let snap = self.map.read_u32(p + v3::PKT_SNAPLEN) as usize;
                let mac = usize::from(self.map.read_u16(p + v3::PKT_MAC));
                let pkt = RxPacket {
                    data: self
                        .map
                        .slice(p + mac, snap.min(self.block_size.saturating_sub(off + mac))),
                    wire_len: self.map.read_u32(p + v3::PKT_LEN) as usize,
                    ts_realtime_ns: u64::from(self.map.read_u32(p + v3::PKT_SEC)) * 1_000_000_000
                        + u64::from(self.map.read_u32(p + v3::PKT_NSEC)),
                    status: self.map.read_u32(p + v3::PKT_STATUS),
                    first_in_block: i == 0,
                };
                f(&self.sock, pkt);
                seen += 1;
                let next = self.map.read_u32(p + v3::PKT_NEXT_OFFSET) as usize;
                if next == 0 {
                    break;
                }
                off += next;
            }
            self.map
                .status(base + v3::BLOCK_STATUS)
                .store(TP_STATUS_KERNEL, Ordering::Release);
            self.next = (self.next + 1) % self.block_nr;
        }
    }
}
