//! The `AF_PACKET` socket both rings and the sendmmsg backend send and receive on, with the
//! options the engine sets on it.

use super::*;

/// An `AF_PACKET` raw socket bound to one interface of the calling thread's network namespace.
///
/// Dropping it mutes it and closes it on the releasing thread ([`super::release`]): the
/// kernel's close of a packet socket waits for an RCU grace period.
#[derive(Debug)]
pub struct PacketSocket {
    /// Taken out only by `drop`.
    fd: ManuallyDrop<OwnedFd>,
    ifindex: u32,
}

impl PacketSocket {
    /// Opens a socket for `protocol` (host order, e.g. [`ETH_P_ALL`]) bound to `ifindex`.
    ///
    /// The socket is created for no protocol and given `protocol` by the bind: created for
    /// one, it would already be receiving from every interface, and the bind would then
    /// unhook it and wait for an RCU grace period (`synchronize_net`, 8 ms here) before
    /// hooking it to `ifindex`; created for none, the bind hooks it once, at once.
    pub fn open(ifindex: u32, protocol: u16) -> io::Result<Self> {
        // SAFETY: plain system call with constant arguments; the result is checked.
        let raw =
            cvt(unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) })?;
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        let fd = ManuallyDrop::new(unsafe { OwnedFd::from_raw_fd(raw) });
        let sock = PacketSocket { fd, ifindex };
        sock.bind(protocol)?;
        Ok(sock)
    }

    /// Refuses every frame from now on (a classic BPF filter of one `ret 0`), so a socket
    /// waiting to be closed takes no more copies of the port's traffic. Cheap: unlike
    /// unbinding, attaching a filter waits for no grace period.
    fn mute(&self) -> io::Result<()> {
        self.attach_filter(&[libc::sock_filter {
            code: (libc::BPF_RET | libc::BPF_K) as u16,
            jt: 0,
            jf: 0,
            k: 0,
        }])
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
        let mut req = ifreq_named(ifname)?;
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

    /// Asks for `PACKET_AUXDATA` with every received frame, which [`recv_frame_aux`]
    /// reads ([`recv_frame_aux`]: Self::recv_frame_aux).
    pub fn set_auxdata(&self, on: bool) -> io::Result<()> {
        setsockopt(
            self.raw_fd(),
            SOL_PACKET,
            PACKET_AUXDATA,
            &libc::c_int::from(on),
        )
    }

    /// Receives one frame without blocking into `buf` (`None` when nothing is queued), and
    /// whether its transport checksum is still to be computed: a frame a local sender (a
    /// kernel on the other end of a veth) handed over with checksum offload carries only the
    /// pseudo-header sum in the checksum field (`TP_STATUS_CSUMNOTREADY`; needs
    /// [`set_auxdata`](Self::set_auxdata)).
    pub fn recv_frame_aux(&self, buf: &mut [u8]) -> io::Result<Option<(usize, bool)>> {
        let mut iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // Room for one tpacket_auxdata control message, aligned for cmsghdr.
        let mut control = [0u64; 8];
        // SAFETY: msghdr is plain old data; all-zero is a valid value.
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&control);
        // SAFETY: `msg` points at `iov` (one valid writable buffer of `buf.len()` bytes) and
        // at `control` (64 writable bytes), both alive for the call.
        let r = unsafe { libc::recvmsg(self.raw_fd(), &mut msg, libc::MSG_DONTWAIT) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::WouldBlock {
                return Ok(None);
            }
            return Err(e);
        }
        let mut pending = false;
        // SAFETY: `msg` was filled by recvmsg; CMSG_FIRSTHDR/CMSG_NXTHDR walk its control
        // buffer within `msg_controllen`, and CMSG_DATA of an auxdata message has at least
        // the 4 bytes of `tp_status` (read unaligned).
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(&msg);
            while !c.is_null() {
                if (*c).cmsg_level == SOL_PACKET && (*c).cmsg_type == PACKET_AUXDATA {
                    let status = std::ptr::read_unaligned(libc::CMSG_DATA(c).cast::<u32>());
                    pending = status & TP_STATUS_CSUMNOTREADY != 0;
                }
                c = libc::CMSG_NXTHDR(&msg, c);
            }
        }
        Ok(Some((r as usize, pending)))
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

    /// Installs `prog` as the socket's classic BPF filter (`SO_ATTACH_FILTER`): frames it
    /// refuses never reach the socket's queue, so a socket that listens for a few control
    /// frames is not filled by a trial's test traffic.
    pub fn attach_filter(&self, prog: &[SockFilter]) -> io::Result<()> {
        let fprog = libc::sock_fprog {
            len: u16::try_from(prog.len())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "BPF program too long"))?,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        // The kernel copies the program during the call; `prog` outlives it.
        setsockopt(
            self.raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_ATTACH_FILTER,
            &fprog,
        )
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

impl Drop for PacketSocket {
    fn drop(&mut self) {
        // Muted first, so that until the releasing thread gets to it the socket copies no
        // frame of what the port carries next (a failure only leaves it listening a little
        // longer).
        let _ = self.mute();
        // SAFETY: `drop` runs once, and `self.fd` is not used after this line.
        let fd = unsafe { ManuallyDrop::take(&mut self.fd) };
        super::release::later(fd);
    }
}
