//! What a driver tells `ethtool` about an interface's queues (`SIOCETHTOOL`).

use super::*;

/// `SIOCETHTOOL` of <linux/sockios.h>.
const SIOCETHTOOL: libc::c_ulong = 0x8946;
/// `ETHTOOL_GCHANNELS` of <linux/ethtool.h>: get the channel (queue) counts.
const ETHTOOL_GCHANNELS: u32 = 0x3c;

/// `struct ethtool_channels` of <linux/ethtool.h>.
#[repr(C)]
#[derive(Default)]
struct EthtoolChannels {
    cmd: u32,
    max_rx: u32,
    max_tx: u32,
    max_other: u32,
    max_combined: u32,
    rx_count: u32,
    tx_count: u32,
    other_count: u32,
    combined_count: u32,
}

/// The receive queues interface `ifname` (in the calling thread's namespace) has in use: its
/// receive-only channels plus its combined ones, as `ethtool -l` shows them. Each is polled
/// by a NAPI instance of its own, possibly on its own CPU. An error if the driver does not
/// say (`EOPNOTSUPP`) or there is no such interface.
pub fn rx_queues(ifname: &str) -> io::Result<u32> {
    let mut req = ifreq_named(ifname)?;
    // SAFETY: plain system call with constant arguments; the result is checked.
    let raw =
        cvt(unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: `raw` is a fresh descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut ch = EthtoolChannels {
        cmd: ETHTOOL_GCHANNELS,
        ..Default::default()
    };
    req.ifr_ifru.ifru_data = (&mut ch as *mut EthtoolChannels).cast();
    // SAFETY: `req` is a valid ifreq with a NUL-terminated name (zeroed tail) whose data
    // pointer points at `ch`, a `struct ethtool_channels` that lives across the call; for
    // ETHTOOL_GCHANNELS the kernel writes only that struct.
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), SIOCETHTOOL as _, &mut req) })?;
    Ok(ch.rx_count + ch.combined_count)
}
