//! TUN devices (`/dev/net/tun`, `IFF_TUN | IFF_NO_PI`): the system calls behind
//! [`crate::tun::Tun`]. Every `unsafe` block carries a `// SAFETY:` line.
//!
//! The device is not made persistent: it exists while the descriptor is open, so the kernel
//! removes it when the process exits however it exits (Ctrl-C, SIGTERM, a panic, SIGKILL).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

/// `TUNSETIFF` = `_IOW('T', 202, int)` from <linux/if_tun.h>.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TUN: libc::c_short = 0x0001;
const IFF_NO_PI: libc::c_short = 0x1000;

/// An open TUN device: one IP packet per read or write, no packet-information header.
#[derive(Debug)]
pub struct TunFd {
    fd: OwnedFd,
    name: String,
}

impl TunFd {
    /// Creates the TUN device `name` in the calling thread's network namespace (the namespace
    /// of the thread that opens `/dev/net/tun` is the device's), non-blocking.
    pub fn create(name: &str) -> io::Result<TunFd> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("TUN name {name:?}: 1 to {} bytes", libc::IFNAMSIZ - 1),
            ));
        }
        let path = CString::new("/dev/net/tun").expect("no NUL");
        // SAFETY: `path` is a valid NUL-terminated string; open(2) has no other requirement.
        let raw = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a descriptor open(2) just returned to us and nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: ifreq is plain old data; all-zero is a valid value.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (d, s) in req.ifr_name.iter_mut().zip(name.bytes()) {
            *d = s as libc::c_char;
        }
        req.ifr_ifru.ifru_flags = IFF_TUN | IFF_NO_PI;
        // SAFETY: TUNSETIFF reads and writes one `struct ifreq`, which `req` is, for the call.
        let r = unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF, &mut req) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fcntl(2) on a descriptor we own.
        let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) };
        if flags < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fcntl(2) on a descriptor we own, with flags it just returned.
        if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(TunFd {
            fd,
            name: name.to_string(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Reads one packet without blocking (`None` when nothing is queued).
    pub fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: `buf` is a valid writable buffer of `buf.len()` bytes.
        let r = unsafe { libc::read(self.raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
                _ => Err(e),
            };
        }
        Ok(Some(r as usize))
    }

    /// Writes one packet; `false` when the kernel would block (the packet is dropped, as a
    /// full queue on a link would drop it).
    pub fn write(&self, packet: &[u8]) -> io::Result<bool> {
        // SAFETY: `packet` is a valid readable buffer of `packet.len()` bytes.
        let r = unsafe { libc::write(self.raw_fd(), packet.as_ptr().cast(), packet.len()) };
        if r < 0 {
            let e = io::Error::last_os_error();
            return match e.kind() {
                io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(false),
                _ => Err(e),
            };
        }
        Ok(true)
    }
}

/// Waits up to `timeout_ms` until one of `fds` is readable; returns which are (same order).
/// An interrupted wait (a signal) returns all `false`.
pub fn poll_readable(fds: &[RawFd], timeout_ms: i32) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN | libc::POLLERR,
            revents: 0,
        })
        .collect();
    // SAFETY: `pfds` is a valid array of `pfds.len()` pollfd structures for the call.
    let r = unsafe { libc::poll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(vec![false; fds.len()]);
        }
        return Err(e);
    }
    Ok(pfds.iter().map(|p| p.revents != 0).collect())
}
