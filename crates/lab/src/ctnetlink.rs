//! Deleting a namespace's whole connection table over ctnetlink and timing it from inside the
//! process (`nat-teardown-rate`): the same request `conntrack -F` sends — one
//! `IPCTNL_MSG_CT_DELETE` without a tuple, which makes the kernel delete every entry — but
//! without a process start inside the timed interval, whose milliseconds of noise on a loaded
//! machine are larger than the deletion of a few thousand entries.
//!
//! A short-lived thread enters the namespace (setns affects only the calling thread), reads
//! `nf_conntrack_count`, sends the request, waits for the kernel's acknowledgement (sent after
//! the deletion is done), reads the count again, and times the same request on the now empty
//! table (the round trip's own cost).

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::sys;

/// nfnetlink subsystem of conntrack, and its "delete" message (linux/netfilter/nfnetlink.h,
/// nfnetlink_conntrack.h).
const NFNL_SUBSYS_CTNETLINK: u16 = 1;
const IPCTNL_MSG_CT_DELETE: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLMSG_ERROR: u16 = 2;
const NFNETLINK_V0: u8 = 0;

/// The flush request: nlmsghdr + nfgenmsg with family AF_UNSPEC (every family), no attributes.
fn flush_request(seq: u32) -> [u8; 20] {
    let mut m = [0u8; 20];
    m[0..4].copy_from_slice(&20u32.to_ne_bytes());
    m[4..6].copy_from_slice(&((NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_DELETE).to_ne_bytes());
    m[6..8].copy_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    m[8..12].copy_from_slice(&seq.to_ne_bytes());
    // pid 0 (the kernel), family 0 = AF_UNSPEC, version, res_id 0.
    m[17] = NFNETLINK_V0;
    m
}

/// The kernel's answer to request `seq`: `Ok` for an acknowledgement with error 0.
fn parse_ack(buf: &[u8], seq: u32) -> io::Result<()> {
    let bad = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
    if buf.len() < 20 {
        return Err(bad("short netlink answer"));
    }
    let typ = u16::from_ne_bytes([buf[4], buf[5]]);
    let got_seq = u32::from_ne_bytes([buf[8], buf[9], buf[10], buf[11]]);
    if typ != NLMSG_ERROR || got_seq != seq {
        return Err(bad("unexpected netlink answer"));
    }
    let err = i32::from_ne_bytes([buf[16], buf[17], buf[18], buf[19]]);
    if err == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(-err))
    }
}

fn count() -> io::Result<u64> {
    std::fs::read_to_string("/proc/sys/net/netfilter/nf_conntrack_count")?
        .trim()
        .parse()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "nf_conntrack_count"))
}

/// One flush request, answered; the time from sending to the acknowledgement, ns.
fn flush(sock: &OwnedFd, seq: u32) -> io::Result<u64> {
    let req = flush_request(seq);
    let mut buf = [0u8; 256];
    let t0 = Instant::now();
    sys::send(sock, &req)?;
    let n = sys::recv(sock, &mut buf);
    let dt = t0.elapsed().as_nanos() as u64;
    parse_ack(&buf[..n?], seq)?;
    Ok(dt.max(1))
}

/// What one timed deletion of the whole table measured (RFC 9693 "connection tear-down
/// rate"), all from inside the DUT's namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Teardown {
    /// `nf_conntrack_count` just before the deletion and just after it.
    pub entries_before: u64,
    pub entries_after: u64,
    /// The flush request on the full table, ns, from sending it to the kernel's
    /// acknowledgement (sent once every entry is deleted).
    pub delete_ns: u64,
    /// The same request on the empty table right after: the round trip's own cost.
    pub empty_ns: u64,
}

/// Deletes every connection of network namespace `ns` (a name under /run/netns) and times it.
pub fn teardown(ns: &str) -> io::Result<Teardown> {
    let path = format!("/run/netns/{ns}");
    let f = File::open(&path)?;
    std::thread::scope(|s| {
        s.spawn(move || -> io::Result<Teardown> {
            // Only this thread, which ends here, changes namespace.
            sys::enter_netns(&f)?;
            let sock = sys::netlink_socket(libc::NETLINK_NETFILTER)?;
            let entries_before = count()?;
            let delete_ns = flush(&sock, 1)?;
            let entries_after = count()?;
            let empty_ns = flush(&sock, 2)?;
            Ok(Teardown {
                entries_before,
                entries_after,
                delete_ns,
                empty_ns,
            })
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("tear-down thread panicked")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_bytes_and_acks() {
        let r = flush_request(7);
        assert_eq!(u32::from_ne_bytes(r[0..4].try_into().unwrap()), 20);
        assert_eq!(u16::from_ne_bytes(r[4..6].try_into().unwrap()), 0x0102);
        assert_eq!(u16::from_ne_bytes(r[6..8].try_into().unwrap()), 5);
        assert_eq!(u32::from_ne_bytes(r[8..12].try_into().unwrap()), 7);
        assert_eq!(&r[16..20], &[0, 0, 0, 0]);
        let mut ack = [0u8; 36];
        ack[4..6].copy_from_slice(&2u16.to_ne_bytes());
        ack[8..12].copy_from_slice(&7u32.to_ne_bytes());
        assert!(parse_ack(&ack, 7).is_ok());
        assert!(parse_ack(&ack, 8).is_err());
        ack[16..20].copy_from_slice(&(-1i32).to_ne_bytes());
        assert_eq!(parse_ack(&ack, 7).unwrap_err().raw_os_error(), Some(1));
        for short in 0..20 {
            assert!(parse_ack(&ack[..short], 7).is_err());
        }
    }
}
