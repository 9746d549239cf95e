//! Running a sans-I/O control plane (the `emulate` crate's PPPoE server or client, ARP/ND,
//! DS-Lite AFTR or B4) on a real port.
//!
//! A [`ControlPort`] is a plain AF_PACKET socket on one interface. [`ControlPort::step`]
//! sends what the machine wants sent, waits for a frame or the machine's next deadline
//! (whichever is first, at most `max_wait`), feeds every queued frame with the current
//! CLOCK_MONOTONIC time, runs due timers and sends again. The machine never sees a socket or
//! a clock; this loop is the only place that does I/O for it.
//!
//! The socket sees every frame of the interface, so a control plane can run in its own thread
//! next to a trial's RX ring on the same port (each AF_PACKET socket gets its own copy): LCP
//! echoes keep being answered while test traffic flows. Frames the machine does not claim are
//! only counted.

use std::time::{Duration, Instant};

use crate::port::PortSpec;
use crate::sys::{self, PacketSocket};
use crate::tun::{IpRelay, Tun};

/// How many packets one side of a TUN hand-off is served per turn of
/// [`ControlPort::step_relay`] before the other side and the timers get theirs.
pub const RELAY_BATCH: usize = 64;
use crate::{Error, Result};

/// The machines' side of the interface lives with the machines (`emulate`, which has no I/O);
/// this module is the socket side.
pub use emulate::control_plane::ControlPlane;

/// Frame counts of a control port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ControlPortStats {
    pub rx: u64,
    /// Received frames the machine did not claim (test traffic, other protocols).
    pub rx_unclaimed: u64,
    pub tx: u64,
    /// Frames the kernel refused (would block or an error); the machine's timers retry.
    pub tx_failed: u64,
}

/// A control plane's socket on one port.
#[derive(Debug)]
pub struct ControlPort {
    sock: PacketSocket,
    buf: Vec<u8>,
    pub stats: ControlPortStats,
}

/// CLOCK_MONOTONIC as the machines' time (defined with the clocks; re-exported here where
/// the machines are driven).
pub use crate::sys::machine_now as now;

impl ControlPort {
    /// Enters the port's namespace (this thread only) and opens the socket there. Call from
    /// the thread that will run [`step`](Self::step).
    pub fn open(port: &PortSpec) -> Result<ControlPort> {
        let ifindex = port.enter(0)?;
        let sock = port.open_socket(ifindex)?;
        sock.set_ignore_outgoing(true)
            .map_err(|e| Error::io("PACKET_IGNORE_OUTGOING", e))?;
        sock.set_auxdata(true)
            .map_err(|e| Error::io("PACKET_AUXDATA", e))?;
        let _ = sock.set_rcvbuf_force(4 << 20);
        Ok(ControlPort {
            sock,
            buf: vec![0; 65536],
            stats: ControlPortStats::default(),
        })
    }

    /// The interface's MAC address.
    pub fn mac(&self) -> Result<[u8; 6]> {
        self.sock
            .hw_addr()
            .map_err(|e| Error::io("reading the port's MAC", e))
    }

    /// Sends one frame directly (for test harnesses that inject frames).
    pub fn send_raw(&mut self, frame: &[u8]) -> Result<bool> {
        self.sock
            .send_frame(frame)
            .map_err(|e| Error::io("sending a control frame", e))
    }

    /// Sends everything the machine has queued.
    pub fn flush<C: ControlPlane + ?Sized>(&mut self, cp: &mut C) {
        for f in cp.take_transmit() {
            match self.sock.send_frame(&f) {
                Ok(true) => self.stats.tx += 1,
                Ok(false) | Err(_) => self.stats.tx_failed += 1,
            }
        }
    }

    /// Receives one frame into `buf` as it would be on a wire: a frame a kernel on the other
    /// end of a veth handed over with checksum offload gets its UDP or TCP checksum
    /// completed, so the machines can verify checksums as they must.
    fn recv(&mut self) -> Result<Option<usize>> {
        match self.sock.recv_frame_aux(&mut self.buf) {
            Ok(Some((n, pending))) => {
                if pending {
                    complete_checksum(&mut self.buf[..n]);
                }
                Ok(Some(n))
            }
            Ok(None) => Ok(None),
            Err(e) => Err(Error::io("receiving control frames", e)),
        }
    }

    /// One turn of the loop: send, wait (at most `max_wait` or until the machine's next
    /// deadline), feed what arrived, run due timers, send.
    pub fn step<C: ControlPlane + ?Sized>(&mut self, cp: &mut C, max_wait: Duration) -> Result<()> {
        self.flush(cp);
        let t = now();
        let mut wait = max_wait;
        if let Some(d) = cp.next_deadline() {
            wait = wait.min(Duration::from_nanos(d.0.saturating_sub(t.0)));
        }
        // poll() takes milliseconds: round up so that we never spin before a deadline.
        let ms = wait.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
        self.sock
            .poll_readable(ms)
            .map_err(|e| Error::io("waiting for control frames", e))?;
        while let Some(n) = self.recv()? {
            self.stats.rx += 1;
            if !cp.handle_frame(now(), &self.buf[..n]) {
                self.stats.rx_unclaimed += 1;
            }
            self.flush(cp);
        }
        let t = now();
        if cp.next_deadline().is_some_and(|d| d <= t) {
            cp.poll(t);
        }
        self.flush(cp);
        Ok(())
    }

    /// [`step`](Self::step) with a TUN hand-off: waits on the port *and* the TUN device, feeds
    /// frames (writing what the machine decapsulated into the TUN after each) and encapsulates
    /// what the kernel routed into the TUN. Each side is served at most [`RELAY_BATCH`]
    /// packets per turn before the other gets its turn, so neither direction starves the
    /// other; a turn that left packets waiting does not sleep.
    pub fn step_relay<C: IpRelay + ?Sized>(
        &mut self,
        cp: &mut C,
        tun: &mut Tun,
        max_wait: Duration,
    ) -> Result<()> {
        self.flush(cp);
        tun.hand_up(cp);
        let t = now();
        let mut wait = max_wait;
        if let Some(d) = cp.next_deadline() {
            wait = wait.min(Duration::from_nanos(d.0.saturating_sub(t.0)));
        }
        let ms = wait.as_nanos().div_ceil(1_000_000).min(i32::MAX as u128) as i32;
        // What is left after a batch keeps its descriptor readable: the next turn's poll
        // returns at once, after the other side and the timers had their turn.
        sys::tun::poll_readable(&[self.sock.raw_fd(), tun.fd.raw_fd()], ms)
            .map_err(|e| Error::io("waiting for control frames and the TUN", e))?;
        for _ in 0..RELAY_BATCH {
            let n = match self.recv()? {
                Some(n) => n,
                None => break,
            };
            self.stats.rx += 1;
            if !cp.handle_frame(now(), &self.buf[..n]) {
                self.stats.rx_unclaimed += 1;
            }
            self.flush(cp);
            tun.hand_up(cp);
        }
        tun.hand_down(cp, RELAY_BATCH)?;
        self.flush(cp);
        let t = now();
        if cp.next_deadline().is_some_and(|d| d <= t) {
            cp.poll(t);
        }
        self.flush(cp);
        tun.hand_up(cp);
        Ok(())
    }

    /// Steps until `done(machine)` is true (returns `true`) or `timeout` passes (`false`).
    pub fn run_until<C: ControlPlane + ?Sized>(
        &mut self,
        cp: &mut C,
        timeout: Duration,
        mut done: impl FnMut(&mut C) -> bool,
    ) -> Result<bool> {
        let end = Instant::now() + timeout;
        loop {
            if done(cp) {
                return Ok(true);
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            self.step(cp, left.min(Duration::from_millis(20)))?;
        }
    }
}

/// Computes the UDP or TCP checksum of an Ethernet frame carrying IPv4 or IPv6 (no
/// extension headers): what a NIC does for a sender that left it to the device. Frames of any
/// other kind, or too short, are left as they are.
pub fn complete_checksum(frame: &mut [u8]) {
    use wire::ipv4::Ipv4Packet;
    use wire::ipv6::Ipv6Packet;
    let l3 = wire::ethernet::HEADER_LEN;
    let Some(ethertype) = wire::bytes::be16(frame, 12) else {
        return;
    };
    let (src, dst, proto, seg) = match ethertype {
        0x0800 => {
            let Ok(ip) = Ipv4Packet::new_checked(&frame[l3..]) else {
                return;
            };
            let (h, total) = (ip.header_len(), usize::from(ip.total_len()));
            let addrs = (
                std::net::IpAddr::V4(ip.src_addr()),
                std::net::IpAddr::V4(ip.dst_addr()),
            );
            if ip.more_frags() || ip.frag_offset() != 0 {
                return;
            }
            (addrs.0, addrs.1, ip.protocol(), l3 + h..l3 + total)
        }
        0x86dd => {
            let Ok(ip) = Ipv6Packet::new_checked(&frame[l3..]) else {
                return;
            };
            let len = usize::from(ip.payload_len());
            let h = wire::ipv6::HEADER_LEN;
            (
                std::net::IpAddr::V6(ip.src_addr()),
                std::net::IpAddr::V6(ip.dst_addr()),
                ip.next_header(),
                l3 + h..l3 + h + len,
            )
        }
        _ => return,
    };
    let seg = &mut frame[seg];
    match (proto, src, dst) {
        (17, std::net::IpAddr::V4(s), std::net::IpAddr::V4(d)) if seg.len() >= 8 => {
            wire::udp::UdpPacket::new_unchecked(seg).fill_checksum_v4(s, d)
        }
        (17, std::net::IpAddr::V6(s), std::net::IpAddr::V6(d)) if seg.len() >= 8 => {
            wire::udp::UdpPacket::new_unchecked(seg).fill_checksum_v6(s, d)
        }
        (6, std::net::IpAddr::V4(s), std::net::IpAddr::V4(d)) if seg.len() >= 20 => {
            wire::tcp::TcpPacket::new_unchecked(seg).fill_checksum_v4(s, d)
        }
        (6, std::net::IpAddr::V6(s), std::net::IpAddr::V6(d)) if seg.len() >= 20 => {
            wire::tcp::TcpPacket::new_unchecked(seg).fill_checksum_v6(s, d)
        }
        _ => {}
    }
}

/// A control plane running on a port in its own thread, shared with the caller through a
/// mutex: the thread steps the machine (answering echoes, keepalives, ND) while a trial runs
/// on the same port, and the caller reads session state or queues frames between steps with
/// [`with`](Self::with). This is how a PPPoE session or a DS-Lite softwire stays up under
/// test traffic (`wirerate trial --pppoe/--dslite`, plans with an ISP-side WAN port).
///
/// std's `Mutex` is not fair: a thread that unlocks and locks again at once keeps the lock
/// ahead of a caller the unlock woke, which first has to be scheduled (on an idle vCPU here
/// that can take more than 10 ms), so a caller could wait through hundreds of steps (a test
/// making 2,000 `with` calls took 515 s so). The thread therefore gives way: a caller in
/// `with` says it is waiting (a count of such callers), and the thread does not take the
/// lock again until that caller has had it. A caller waits at most for the step in progress.
#[derive(Debug)]
pub struct Background<C: ControlPlane + Send + 'static> {
    machine: std::sync::Arc<std::sync::Mutex<C>>,
    /// Callers waiting in [`with`](Self::with) for the lock; the thread waits while any do.
    callers: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: Option<std::thread::JoinHandle<ThreadEnd>>,
}

/// What a [`Background`] thread hands back: its port's counts and its TUN device, if any.
type ThreadEnd = Result<(ControlPortStats, Option<Tun>)>;

impl<C: ControlPlane + Send + 'static> Background<C> {
    /// Opens a control port on `port` in a new thread and runs `make(port MAC)` there until
    /// [`finish`](Self::finish) (or drop). Fails if the port cannot be opened.
    pub fn start(port: PortSpec, make: impl FnOnce([u8; 6]) -> C + Send + 'static) -> Result<Self> {
        Self::start_with(port, make, |_| {})
    }

    /// As [`start`](Self::start), calling `each_step` on the machine after every step (under
    /// the lock): e.g. to throw away the data events test traffic causes, which would
    /// otherwise pile up while nobody reads them.
    pub fn start_with(
        port: PortSpec,
        make: impl FnOnce([u8; 6]) -> C + Send + 'static,
        mut each_step: impl FnMut(&mut C) + Send + 'static,
    ) -> Result<Self> {
        Self::launch(port, make, None, move |cp, m, _| {
            cp.step(m, Duration::from_millis(5))?;
            each_step(m);
            Ok(())
        })
    }

    /// As [`start_with`](Self::start_with), with the machine's IP packets relayed through
    /// `tun` ([`ControlPort::step_relay`]): what an ISP port with a kernel behind it (iperf3's
    /// server, an MSS clamp's far end) needs while test streams use the same port.
    /// `each_step` also sees the device (the SYNs it read). The machine must have its relay
    /// enabled (`enable_ip_relay`). [`finish_relay`](Self::finish_relay) hands the device
    /// back for its counts.
    pub fn start_relay(
        port: PortSpec,
        tun: Tun,
        make: impl FnOnce([u8; 6]) -> C + Send + 'static,
        mut each_step: impl FnMut(&mut C, &mut Tun) + Send + 'static,
    ) -> Result<Self>
    where
        C: IpRelay,
    {
        Self::launch(port, make, Some(tun), move |cp, m, tun| {
            if let Some(t) = tun.as_mut() {
                cp.step_relay(m, t, Duration::from_millis(5))?;
                each_step(m, t);
            }
            Ok(())
        })
    }

    /// The thread of both: opens the port, makes the machine, and runs `turn` until stopped.
    fn launch(
        port: PortSpec,
        make: impl FnOnce([u8; 6]) -> C + Send + 'static,
        mut tun: Option<Tun>,
        mut turn: impl FnMut(&mut ControlPort, &mut C, &mut Option<Tun>) -> Result<()> + Send + 'static,
    ) -> Result<Self> {
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use std::sync::{mpsc, Arc, Mutex};
        let stop = Arc::new(AtomicBool::new(false));
        let callers = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel::<Result<Arc<Mutex<C>>>>();
        let stop2 = stop.clone();
        let callers2 = callers.clone();
        let handle = std::thread::spawn(move || -> ThreadEnd {
            let opened = ControlPort::open(&port).and_then(|p| p.mac().map(|m| (p, m)));
            let (mut cp, mac) = match opened {
                Ok(x) => x,
                Err(e) => {
                    let msg = e.to_string();
                    let _ = tx.send(Err(e));
                    return Err(Error::Thread(msg));
                }
            };
            let m = Arc::new(Mutex::new(make(mac)));
            let _ = tx.send(Ok(m.clone()));
            while !stop2.load(Ordering::Relaxed) {
                {
                    let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
                    turn(&mut cp, &mut g, &mut tun)?;
                }
                // A caller waiting in `with` takes the lock before the next step (see the
                // type's doc). It unparks this thread once it has the lock; the timeout only
                // bounds a wake-up that raced with the check.
                while callers2.load(Ordering::Acquire) > 0 && !stop2.load(Ordering::Relaxed) {
                    std::thread::park_timeout(Duration::from_millis(5));
                }
            }
            // Send what the caller queued last (a PADT after close, say).
            let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
            cp.flush(&mut *g);
            Ok((cp.stats, tun))
        });
        let machine = rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| Error::Timeout("the control thread did not start".into()))??;
        Ok(Background {
            machine,
            callers,
            stop,
            handle: Some(handle),
        })
    }

    /// Runs `f` on the machine between two steps of its thread: waits at most for the step
    /// in progress (the thread gives way to a waiting caller, see the type's doc).
    pub fn with<R>(&self, f: impl FnOnce(&mut C) -> R) -> R {
        use std::sync::atomic::Ordering;
        self.callers.fetch_add(1, Ordering::AcqRel);
        let mut g = self.machine.lock().unwrap_or_else(|p| p.into_inner());
        self.callers.fetch_sub(1, Ordering::AcqRel);
        if let Some(h) = &self.handle {
            h.thread().unpark();
        }
        f(&mut g)
    }

    /// Calls `f` every few milliseconds until it returns `Some` (returned) or `timeout` passes.
    pub fn wait_for<R>(
        &self,
        timeout: Duration,
        mut f: impl FnMut(&mut C) -> Option<R>,
    ) -> Option<R> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(r) = self.with(&mut f) {
                return Some(r);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Stops the thread and returns the machine and its port's frame counts.
    pub fn finish(self) -> Result<(C, ControlPortStats)> {
        self.finish_relay().map(|(m, s, _)| (m, s))
    }

    /// As [`finish`](Self::finish), with the TUN device of [`start_relay`](Self::start_relay)
    /// (closing it removes it).
    pub fn finish_relay(mut self) -> Result<(C, ControlPortStats, Option<Tun>)> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let (stats, tun) = match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r?,
            _ => return Err(Error::Thread("the control thread panicked".into())),
        };
        let m = std::sync::Arc::clone(&self.machine);
        drop(self);
        let m = std::sync::Arc::try_unwrap(m)
            .map_err(|_| Error::Thread("control machine still shared".into()))?;
        Ok((
            m.into_inner().unwrap_or_else(|p| p.into_inner()),
            stats,
            tun,
        ))
    }
}

impl<C: ControlPlane + Send + 'static> Drop for Background<C> {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::complete_checksum;
    use wire::checksum;
    use wire::udp::UdpPacket;

    /// An Ethernet + IPv4 + UDP frame with a correct checksum.
    fn udp_frame() -> Vec<u8> {
        let mut f = vec![0u8; 14 + 20 + 8 + 5];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&33u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[12..16].copy_from_slice(&[198, 51, 100, 10]);
        ip[16..20].copy_from_slice(&[203, 0, 113, 53]);
        let c = checksum::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
        let u = &mut f[34..];
        u[..4].copy_from_slice(&[0x9c, 0x40, 0, 53]);
        u[4..6].copy_from_slice(&13u16.to_be_bytes());
        u[8..].copy_from_slice(b"query");
        UdpPacket::new_unchecked(&mut f[34..])
            .fill_checksum_v4([198, 51, 100, 10].into(), [203, 0, 113, 53].into());
        f
    }

    #[test]
    fn an_offloaded_udp_checksum_is_completed_and_others_are_left_alone() {
        let good = udp_frame();
        // What a kernel hands a veth with checksum offload: the folded pseudo-header sum in
        // the checksum field (not complemented), the device to finish it.
        let mut partial = good.clone();
        let ph = checksum::fold(checksum::pseudo_header_v4(
            [198, 51, 100, 10].into(),
            [203, 0, 113, 53].into(),
            17,
            13,
        ));
        partial[40..42].copy_from_slice(&ph.to_be_bytes());
        assert_ne!(partial, good);
        complete_checksum(&mut partial);
        assert_eq!(partial, good);
        // ARP, a truncated frame, an IPv4 fragment: untouched.
        let mut arp = good.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let keep = arp.clone();
        complete_checksum(&mut arp);
        assert_eq!(arp, keep);
        for n in 0..good.len() {
            let mut cut = good[..n].to_vec();
            complete_checksum(&mut cut);
        }
        let mut frag = good.clone();
        frag[20] = 0x20; // more fragments
        frag[40] ^= 0xff;
        let keep = frag.clone();
        complete_checksum(&mut frag);
        assert_eq!(frag, keep);
    }
}
