//! The sendmmsg transmit backend's reusable batch of frames.

use super::{Handover, PacketSocket};
use std::io;

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
