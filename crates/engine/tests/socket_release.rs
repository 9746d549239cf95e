//! A dropped packet socket is closed on the engine's releasing thread (the kernel's close of
//! a packet socket waits for an RCU grace period), and muted first: until that thread gets to
//! it, it takes no copy of what the port carries next. Checked on a real veth: a duplicate of
//! the dropped socket's descriptor keeps the socket alive, and receives nothing of a frame that
//! a socket left open on the same port receives.

mod common;

use common::{is_root, Net};
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

/// An ethertype reserved for local experiments (IEEE 802): nothing else on the pair sends it.
const PROBE_TYPE: [u8; 2] = [0x88, 0xb5];

fn probe_frame(src: [u8; 6]) -> Vec<u8> {
    let mut f = vec![0xff; 6];
    f.extend_from_slice(&src);
    f.extend_from_slice(&PROBE_TYPE);
    f.resize(60, 0x5a);
    f
}

fn is_probe(frame: &[u8]) -> bool {
    frame.len() >= 14 && frame[12..14] == PROBE_TYPE
}

/// Every frame waiting on `fd` now, without blocking.
fn queued(fd: &OwnedFd) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut buf = [0u8; 2048];
    loop {
        // SAFETY: `buf` is writable for its length; `fd` is an open socket.
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n < 0 {
            return out;
        }
        out.push(buf[..n as usize].to_vec());
    }
}

#[test]
fn a_dropped_packet_socket_is_muted_at_once() {
    if !is_root() {
        eprintln!(
            "SKIP a_dropped_packet_socket_is_muted_at_once: needs root for network namespaces"
        );
        return;
    }
    let net = Net::new("sockrel", "sra", "srb");
    let (a, b) = net.ports();
    // Port B: one socket left open, one dropped (kept alive by a duplicate descriptor).
    let (kept, dup) = std::thread::spawn(move || {
        let ifindex = b.enter(0).expect("enter b");
        let kept = b.open_socket(ifindex).expect("kept socket");
        let dropped = b.open_socket(ifindex).expect("socket to drop");
        // SAFETY: the descriptor is open for the duration of this borrow (`dropped` lives).
        let dup = unsafe { BorrowedFd::borrow_raw(dropped.raw_fd()) }
            .try_clone_to_owned()
            .expect("dup");
        drop(dropped);
        (kept, dup)
    })
    .join()
    .expect("port b thread");
    // What reached it before the drop (IPv6 ND of the link coming up, say) is not the question.
    queued(&dup);
    std::thread::spawn(move || {
        let ifindex = a.enter(0).expect("enter a");
        let sock = a.open_socket(ifindex).expect("socket a");
        let frame = probe_frame(sock.hw_addr().expect("MAC of a"));
        assert!(
            sock.send_frame(&frame).expect("send"),
            "the probe was not sent"
        );
    })
    .join()
    .expect("port a thread");
    // The socket left open sees the probe: it crossed the pair, so the dropped one had it
    // offered too (both are on the same port's receive path).
    let until = Instant::now() + Duration::from_secs(5);
    let mut buf = [0u8; 2048];
    let mut seen = false;
    while !seen && Instant::now() < until {
        if kept.poll_readable(100).expect("poll") {
            while let Some(n) = kept.recv_frame(&mut buf).expect("recv") {
                seen |= is_probe(&buf[..n]);
            }
        }
    }
    assert!(seen, "the probe never reached port b's open socket");
    let leaked: Vec<_> = queued(&dup).into_iter().filter(|f| is_probe(f)).collect();
    assert!(
        leaked.is_empty(),
        "the dropped socket still received {} probe frame(s)",
        leaked.len()
    );
}
