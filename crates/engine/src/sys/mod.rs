//! The only place in the engine with `unsafe`: Linux system calls for the AF_PACKET backend.
//!
//! - [`PacketSocket`]: an `AF_PACKET`/`SOCK_RAW` socket bound to one interface, with the options
//!   the engine needs (qdisc bypass, forced send buffer, ignore-outgoing).
//! - [`TxRing`]: a `PACKET_TX_RING` (TPACKET_V2) mapped into our memory; frames are written in
//!   place, marked `SEND_REQUEST`, and flushed with one non-blocking `send`.
//! - [`RxRing`]: a `PACKET_RX_RING` (TPACKET_V3) whose blocks we walk and hand back.
//! - Thread placement: [`enter_netns`] (setns), [`pin_to_cpu`], [`set_timer_slack_ns`].
//! - Clocks: [`monotonic_ns`], [`realtime_ns`], [`sleep_until`].
//!
//! Every `unsafe` block carries a `// SAFETY:` line.

pub mod tun;

use std::ffi::CString;
use std::fs::File;
use std::io;
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

/// An `AF_PACKET` raw socket bound to one interface of the calling thread's network namespace.
#[derive(Debug)]
pub struct PacketSocket {
    fd: OwnedFd,
    ifindex: u32,
}

impl PacketSocket {
    /// Opens a socket for `protocol` (host order, e.g. [`ETH_P_ALL`]) bound to `ifindex`.
    pub fn open(ifindex: u32, protocol: u16) -> io::Result<Self> {
        // SAFETY: plain system call with constant arguments; the result is checked.
        let raw = cvt(unsafe {
            libc::socket(
                libc::AF_PACKET,
                libc::SOCK_RAW | libc::SOCK_CLOEXEC,
                libc::c_int::from(protocol.to_be()),
            )
        })?;
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let sock = PacketSocket { fd, ifindex };
        sock.bind(protocol)?;
        Ok(sock)
    }

    fn bind(&self, protocol: u16) -> io::Result<()> {
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = protocol.to_be();
        sll.sll_ifindex = self.ifindex as i32;
        // SAFETY: `sll` is a valid sockaddr_ll and the length matches it.
        cvt(unsafe {
            libc::bind(
                self.fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        })
        .map(drop)
    }

    pub fn ifindex(&self) -> u32 {
        self.ifindex
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The interface's hardware address, as the kernel reports it for the bound socket.
    pub fn hw_addr(&self) -> io::Result<[u8; 6]> {
        // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        let mut len = std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t;
        // SAFETY: `sll` and `len` are valid for writes and `len` is the buffer size.
        cvt(unsafe {
            libc::getsockname(
                self.fd.as_raw_fd(),
                (&mut sll as *mut libc::sockaddr_ll).cast(),
                &mut len,
            )
        })?;
        if sll.sll_halen != 6 {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "interface is not Ethernet-like",
            ));
        }
        let mut mac = [0u8; 6];
        mac.copy_from_slice(&sll.sll_addr[..6]);
        Ok(mac)
    }

    /// The MTU of interface `ifname` (in the calling thread's namespace), by `SIOCGIFMTU` on
    /// this socket.
    pub fn mtu(&self, ifname: &str) -> io::Result<u32> {
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
        // SAFETY: `req` is a valid ifreq with a NUL-terminated name (zeroed tail); SIOCGIFMTU
        // writes only `ifr_ifru.ifru_mtu` inside it.
        cvt(unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SIOCGIFMTU, &mut req) })?;
        // SAFETY: SIOCGIFMTU filled the `ifru_mtu` member of the union.
        let mtu = unsafe { req.ifr_ifru.ifru_mtu };
        Ok(mtu.max(0) as u32)
    }

    /// Frames sent on this socket skip the qdisc layer (`PACKET_QDISC_BYPASS`).
    pub fn set_qdisc_bypass(&self, on: bool) -> io::Result<()> {
        setsockopt(
            self.raw_fd(),
            SOL_PACKET,
            PACKET_QDISC_BYPASS,
            &libc::c_int::from(on),
        )
    }

    /// Do not deliver our own outgoing frames to this socket (`PACKET_IGNORE_OUTGOING`).
    pub fn set_ignore_outgoing(&self, on: bool) -> io::Result<()> {
        setsockopt(
            self.raw_fd(),
            SOL_PACKET,
            PACKET_IGNORE_OUTGOING,
            &libc::c_int::from(on),
        )
    }

    /// Sets the send buffer, ignoring `wmem_max` (needs CAP_NET_ADMIN: `SO_SNDBUFFORCE`).
    pub fn set_sndbuf_force(&self, bytes: usize) -> io::Result<()> {
        let v = bytes.min(i32::MAX as usize) as libc::c_int;
        setsockopt(self.raw_fd(), libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, &v)
    }

    /// Sets the receive buffer, ignoring `rmem_max` (`SO_RCVBUFFORCE`).
    pub fn set_rcvbuf_force(&self, bytes: usize) -> io::Result<()> {
        let v = bytes.min(i32::MAX as usize) as libc::c_int;
        setsockopt(self.raw_fd(), libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, &v)
    }

    /// Sends one frame without blocking. `Ok(false)` when the kernel would have blocked.
    pub fn send_frame(&self, frame: &[u8]) -> io::Result<bool> {
        // SAFETY: `frame` is a valid readable buffer of `frame.len()` bytes.
        let r = unsafe {
            libc::send(
                self.raw_fd(),
                frame.as_ptr().cast(),
                frame.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(false);
            }
            return Err(e);
        }
        Ok(true)
    }

    /// Sends up to `frames.len()` frames with one `sendmmsg(MSG_DONTWAIT)`; returns how many
    /// the kernel accepted (0 when it would have blocked).
    pub fn send_batch(&self, frames: &[&[u8]]) -> io::Result<usize> {
        if frames.is_empty() {
            return Ok(0);
        }
        let mut iovs: Vec<libc::iovec> = frames
            .iter()
            .map(|f| libc::iovec {
                iov_base: f.as_ptr() as *mut libc::c_void,
                iov_len: f.len(),
            })
            .collect();
        let mut msgs: Vec<libc::mmsghdr> = iovs
            .iter_mut()
            .map(|iov| {
                // SAFETY: mmsghdr is plain old data; all-zero is a valid value.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = iov;
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        // SAFETY: `msgs` holds `msgs.len()` valid headers whose iovecs point into `frames`,
        // all alive for the duration of the call.
        let r = unsafe {
            libc::sendmmsg(
                self.raw_fd(),
                msgs.as_mut_ptr(),
                msgs.len() as u32,
                libc::MSG_DONTWAIT,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(0);
            }
            return Err(e);
        }
        Ok(r as usize)
    }

    /// Receives one frame without blocking into `buf` (`None` when nothing is queued).
    pub fn recv_frame(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: `buf` is a valid writable buffer of `buf.len()` bytes.
        let r = unsafe {
            libc::recv(
                self.raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(None);
            }
            return Err(e);
        }
        Ok(Some(r as usize))
    }

    /// Waits up to `timeout_ms` for the socket to become readable.
    pub fn poll_readable(&self, timeout_ms: i32) -> io::Result<bool> {
        let mut pfd = libc::pollfd {
            fd: self.raw_fd(),
            events: libc::POLLIN | libc::POLLERR,
            revents: 0,
        };
        // SAFETY: `pfd` is one valid pollfd.
        let r = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(false);
            }
            return Err(e);
        }
        Ok(r > 0)
    }

    /// Creates a `PACKET_FANOUT` group in `PACKET_FANOUT_CBPF` mode with a group id the kernel
    /// picks, joins it, installs `prog` as the group's steering program and returns the id
    /// for the other members ([`PacketSocket::join_cbpf_fanout`]). The group ignores frames
    /// sent from this host where the kernel supports that (6.9+). Call after the socket's
    /// ring is set up.
    pub fn create_cbpf_fanout(&self, prog: &[SockFilter]) -> io::Result<(u16, u32)> {
        let mut flags = PACKET_FANOUT_FLAG_IGNORE_OUTGOING;
        let arg = |flags: u32| (PACKET_FANOUT_CBPF | flags | PACKET_FANOUT_FLAG_UNIQUEID) << 16;
        if setsockopt(self.raw_fd(), SOL_PACKET, PACKET_FANOUT, &arg(flags)).is_err() {
            flags = 0;
            setsockopt(self.raw_fd(), SOL_PACKET, PACKET_FANOUT, &arg(flags))?;
        }
        let mut v: u32 = 0;
        let mut len = std::mem::size_of::<u32>() as libc::socklen_t;
        // SAFETY: `v` is writable for `len` bytes; `len` is updated by the kernel.
        cvt(unsafe {
            libc::getsockopt(
                self.raw_fd(),
                SOL_PACKET,
                PACKET_FANOUT,
                (&mut v as *mut u32).cast(),
                &mut len,
            )
        })?;
        let fprog = libc::sock_fprog {
            len: u16::try_from(prog.len())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "BPF program too long"))?,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        // The kernel copies the program during the call; `prog` outlives it.
        setsockopt(self.raw_fd(), SOL_PACKET, PACKET_FANOUT_DATA, &fprog)?;
        Ok(((v & 0xffff) as u16, flags))
    }

    /// Joins the `PACKET_FANOUT_CBPF` group `id` made by [`PacketSocket::create_cbpf_fanout`]
    /// (on the same interface and network namespace), with the `flags` it returned.
    pub fn join_cbpf_fanout(&self, id: u16, flags: u32) -> io::Result<()> {
        let arg = u32::from(id) | ((PACKET_FANOUT_CBPF | flags) << 16);
        setsockopt(self.raw_fd(), SOL_PACKET, PACKET_FANOUT, &arg)
    }

    /// `PACKET_STATISTICS` (TPACKET_V3 layout): packets seen and packets dropped since the
    /// last call (the kernel resets them on read).
    pub fn take_stats(&self) -> io::Result<(u64, u64)> {
        let mut st = TpacketStatsV3::default();
        let mut len = std::mem::size_of::<TpacketStatsV3>() as libc::socklen_t;
        // SAFETY: `st` is writable for `len` bytes; `len` is updated by the kernel.
        cvt(unsafe {
            libc::getsockopt(
                self.raw_fd(),
                SOL_PACKET,
                PACKET_STATISTICS,
                (&mut st as *mut TpacketStatsV3).cast(),
                &mut len,
            )
        })?;
        Ok((u64::from(st.packets), u64::from(st.drops)))
    }
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
        // SAFETY: unmapping exactly what `new` mapped; no slices outlive the ring.
        unsafe {
            libc::munmap(self.ptr.as_ptr().cast(), self.len);
        }
    }
}

/// A `PACKET_TX_RING` (TPACKET_V2) on a [`PacketSocket`].
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
            for _ in 0..num {
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

/// Interface index of `name` in the calling thread's network namespace.
pub fn ifindex(name: &str) -> io::Result<u32> {
    let c = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in name"))?;
    // SAFETY: `c` is a valid NUL-terminated string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(i)
}

/// Moves the calling thread into the network namespace of `ns_file` (e.g. `/run/netns/NAME`
/// or `/proc/PID/ns/net`). Other threads are unaffected.
pub fn enter_netns(ns_file: &File) -> io::Result<()> {
    // SAFETY: plain system call on a descriptor we own; only this thread changes namespace.
    cvt(unsafe { libc::setns(ns_file.as_raw_fd(), libc::CLONE_NEWNET) }).map(drop)
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    pin_thread_to_cpu(0, cpu)
}

/// Pins thread `tid` (0: the calling thread) to one CPU. Another process's thread too, e.g. a
/// kernel NAPI thread ([`crate::xdp::rx_napi`]).
pub fn pin_thread_to_cpu(tid: libc::pid_t, cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "cpu out of range",
        ));
    }
    // SAFETY: `cpu` is below CPU_SETSIZE, so CPU_SET stays inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; the kernel only reads it.
    cvt(unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) })
        .map(drop)
}

/// Runs thread `tid` (0: the calling thread) under the real-time policy SCHED_FIFO at
/// `priority` (1..=99; needs root or CAP_SYS_NICE): it then runs before every ordinary
/// (CFS/EEVDF) thread of its CPU whenever it has work.
pub fn set_thread_fifo(tid: libc::pid_t, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sched_setscheduler only reads the sched_param passed, during the call.
    cvt(unsafe { libc::sched_setscheduler(tid, libc::SCHED_FIFO, &param) }).map(drop)
}

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a writable cpu_set_t of the size passed.
    cvt(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    // SAFETY: CPU_ISSET only reads inside `set` for indices below CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// Sets the calling thread's nice value (Linux: per thread). Negative values need root; the
/// engine asks for a higher weight so that a busy machine delays its threads less.
pub fn set_thread_nice(nice: i32) -> io::Result<()> {
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    // SAFETY: plain system call on our own thread id.
    cvt(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) }).map(drop)
}

/// Sets the calling thread's timer slack (how late the kernel may wake it), in nanoseconds.
pub fn set_timer_slack_ns(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long value; no pointers involved.
    cvt(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) }).map(drop)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_MONOTONIC in nanoseconds (the clock the signature timestamp uses).
#[inline]
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME in nanoseconds (the clock of AF_PACKET receive timestamps).
#[inline]
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

/// A sender's wait for its next frame due at `due_ns` (CLOCK_MONOTONIC): sleeps when it is
/// more than 60 µs away (until 50 µs before it, since a sleep may wake late), else spins once
/// and returns, so the caller re-checks its schedule.
///
/// Short waits spin rather than `sched_yield`: on a loaded machine a yield hands the CPU to
/// every other runnable thread for up to a scheduler slice (milliseconds), which showed as
/// stalls inside bursts and rates several % low at 100 kpps. Both transmit backends use this.
pub fn wait_for_due(due_ns: u64) {
    let now = monotonic_ns();
    if due_ns > now + 60_000 {
        sleep_until(due_ns - 50_000);
    } else {
        std::hint::spin_loop();
    }
}

/// Sleeps until CLOCK_MONOTONIC reaches `deadline_ns` (absolute, so no drift accumulates).
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null with TIMER_ABSTIME.
    unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        );
    }
}

/// `REALTIME - MONOTONIC` in nanoseconds, measured as tightly as we can (the smallest bracket
/// of several tries): converts kernel receive timestamps to the monotonic clock.
pub fn realtime_minus_monotonic_ns() -> i64 {
    let mut best = (u64::MAX, 0i64);
    for _ in 0..16 {
        let a = monotonic_ns();
        let r = realtime_ns();
        let b = monotonic_ns();
        let width = b - a;
        if width < best.0 {
            best = (width, r as i64 - (a + width / 2) as i64);
        }
    }
    best.1
}

/// A reusable pool of frame buffers with their `sendmmsg` headers built once: the sendmmsg TX
/// backend writes frames in place ([`MmsgBatch::frame_mut`]) and hands a contiguous range of
/// them to the kernel with one `sendmmsg(MSG_DONTWAIT)` ([`MmsgBatch::send`]). Nothing is
/// allocated per call.
#[derive(Debug)]
pub struct MmsgBatch {
    /// `slots × stride` bytes; never resized, so the iovecs' pointers stay valid.
    buf: Box<[u8]>,
    stride: usize,
    iovs: Box<[libc::iovec]>,
    msgs: Box<[libc::mmsghdr]>,
}

// SAFETY: the raw pointers inside `iovs`/`msgs` point only into `buf`, which the batch owns;
// moving the batch to another thread moves that ownership with it.
unsafe impl Send for MmsgBatch {}

impl MmsgBatch {
    /// `slots` buffers (at most 1024, the kernel's `UIO_MAXIOV` per `sendmmsg`) of
    /// `max_len` bytes each.
    pub fn new(slots: usize, max_len: usize) -> Self {
        let slots = slots.clamp(1, 1024);
        let stride = max_len.max(1).next_multiple_of(64);
        let mut buf = vec![0u8; slots * stride].into_boxed_slice();
        let base = buf.as_mut_ptr();
        let mut iovs: Box<[libc::iovec]> = (0..slots)
            .map(|i| libc::iovec {
                // The pointer is only computed here; `i * stride` stays inside `buf`.
                iov_base: base.wrapping_add(i * stride).cast(),
                iov_len: 0,
            })
            .collect();
        let iov_base = iovs.as_mut_ptr();
        let msgs = (0..slots)
            .map(|i| {
                // SAFETY: mmsghdr is plain old data; all-zero is a valid value.
                let mut m: libc::mmsghdr = unsafe { std::mem::zeroed() };
                m.msg_hdr.msg_iov = iov_base.wrapping_add(i);
                m.msg_hdr.msg_iovlen = 1;
                m
            })
            .collect();
        MmsgBatch {
            buf,
            stride,
            iovs,
            msgs,
        }
    }

    pub fn slots(&self) -> usize {
        self.iovs.len()
    }

    /// The buffer of slot `i` (`stride` bytes, at least the `max_len` asked for).
    #[inline]
    pub fn frame_mut(&mut self, i: usize) -> &mut [u8] {
        &mut self.buf[i * self.stride..(i + 1) * self.stride]
    }

    /// Sets how many bytes of slot `i` are sent.
    #[inline]
    pub fn set_len(&mut self, i: usize, len: usize) {
        self.iovs[i].iov_len = len.min(self.stride);
    }

    /// Sends slots `from..to` with one `sendmmsg(MSG_DONTWAIT)` on `sock`: how many of them
    /// (from `from` on) the kernel accepted, and whether the device refused the next one
    /// ([`Handover`]; the kernel reports that only for the first frame of a call, so `refused`
    /// comes with `accepted` 0). Would-block is 0 accepted, not refused. The caller retries
    /// or gives up the frames not accepted.
    pub fn send(&mut self, sock: &PacketSocket, from: usize, to: usize) -> io::Result<Handover> {
        assert!(from <= to && to <= self.msgs.len(), "slot range");
        if from == to {
            return Ok(Handover::default());
        }
        // SAFETY: `msgs[from..to]` are valid headers, each pointing at one iovec of `iovs`,
        // which in turn points at `iov_len ≤ stride` bytes of `buf`; all are owned by `self`,
        // which is borrowed mutably for the duration of the call.
        let r = unsafe {
            libc::sendmmsg(
                sock.raw_fd(),
                self.msgs.as_mut_ptr().add(from),
                (to - from) as u32,
                libc::MSG_DONTWAIT,
            )
        };
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
        Ok(Handover {
            accepted: r as usize,
            refused: false,
        })
    }
}
