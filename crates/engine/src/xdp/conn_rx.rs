//! XDP receive of the load on N connections (`bpf/conn_rx.bpf.c`): every frame of the
//! expected stream is checked against the tuple its connection must arrive with (its sequence
//! number is the connection's index, `engine::nat::load`) and counted per connection in the
//! kernel; a frame on another tuple is *misdirected*, never received.
//!
//! Why not [`super::rx::XdpReceiver`]: it keeps a sequence window per stream, which a sequence
//! number that repeats every N frames would read as duplicates; this one checks tuples.
//! Everything that is not a signed test frame (ARP, ND) passes on to the stack, where the
//! trial's AF_PACKET socket answers it. The program is detached when the receiver is dropped
//! (a BPF link owned by the process, so also on Ctrl-C or any exit).

use super::rx::XdpMode;
use super::sys::Conn;
pub use super::sys::Totals;
use crate::port::PortSpec;
use crate::{Error, Result};
use aya::maps::{Array, MapData, PerCpuArray};
use aya::programs::Xdp;
use aya::{Ebpf, EbpfLoader};

/// The program attached to one port, expecting one stream on N connections.
pub struct ConnReceiver {
    bpf: Ebpf,
    n: u32,
    mode: XdpMode,
    mode_note: Option<String>,
}

impl std::fmt::Debug for ConnReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnReceiver")
            .field("connections", &self.n)
            .field("mode", &self.mode)
            .finish()
    }
}

fn err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Bpf(format!("XDP connection receiver: {what}: {e}"))
}

impl ConnReceiver {
    /// Attaches the receiver to `port`'s interface (native mode, SKB mode if the driver
    /// refuses), from a short-lived thread that enters the port's namespace. Frame k of
    /// `stream` counts only if it arrives as `expected[k]` (host-order IPv4 tuple).
    pub fn attach(port: &PortSpec, stream: u16, expected: &[Conn]) -> Result<ConnReceiver> {
        let n = u32::try_from(expected.len())
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| {
                Error::Config("XDP connection receiver: connections: give 1 to 2^32 − 1".into())
            })?;
        std::thread::scope(|s| {
            s.spawn(|| Self::attach_here(port, stream, expected, n))
                .join()
                .map_err(|_| Error::Thread("XDP attach thread panicked".into()))?
        })
    }

    fn attach_here(port: &PortSpec, stream: u16, expected: &[Conn], n: u32) -> Result<Self> {
        let ifindex = port.enter(0)?;
        let stream = u32::from(stream);
        let mut bpf = EbpfLoader::new()
            .set_max_entries("wr_crx_expect", n)
            .set_max_entries("wr_crx_per_conn", n)
            .set_global("wr_crx_stream", &stream, true)
            .set_global("wr_crx_n", &n, true)
            .load(super::objects::CONN_RX)
            .map_err(|e| err("loading conn_rx.bpf.o", e))?;
        {
            let mut m: Array<&mut MapData, Conn> = Array::try_from(
                bpf.map_mut("wr_crx_expect")
                    .ok_or_else(|| err("map missing", "wr_crx_expect"))?,
            )
            .map_err(|e| err("wr_crx_expect", e))?;
            for (i, c) in expected.iter().enumerate() {
                m.set(i as u32, c, 0).map_err(|e| err("wr_crx_expect", e))?;
            }
        }
        let prog: &mut Xdp = bpf
            .program_mut("wr_conn_rx")
            .ok_or_else(|| err("program missing", "wr_conn_rx"))?
            .try_into()
            .map_err(|e| err("wr_conn_rx", e))?;
        prog.load()
            .map_err(|e| err("the kernel refused the program", e))?;
        let (mode, mode_note) = super::attach::native_else_skb(prog, ifindex, port, "running")?;
        Ok(ConnReceiver {
            bpf,
            n,
            mode,
            mode_note,
        })
    }

    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// Why the receiver runs in SKB mode, when native mode was refused.
    pub fn mode_note(&self) -> Option<&str> {
        self.mode_note.as_deref()
    }

    /// The counts so far, summed over the CPUs.
    pub fn totals(&self) -> Result<Totals> {
        let m = self
            .bpf
            .map("wr_crx_totals")
            .ok_or_else(|| err("map missing", "wr_crx_totals"))?;
        let arr: PerCpuArray<&MapData, Totals> =
            PerCpuArray::try_from(m).map_err(|e| err("wr_crx_totals", e))?;
        let per_cpu = arr.get(&0, 0).map_err(|e| err("wr_crx_totals", e))?;
        Ok(per_cpu.iter().fold(Totals::default(), |a, t| Totals {
            received: a.received + t.received,
            misdirected: a.misdirected + t.misdirected,
            out_of_range: a.out_of_range + t.out_of_range,
            other_streams: a.other_streams + t.other_streams,
        }))
    }

    /// Frames received on each connection's tuple, by connection index (one map read per
    /// connection: about a second per million).
    pub fn per_connection(&self) -> Result<Vec<u64>> {
        let m = self
            .bpf
            .map("wr_crx_per_conn")
            .ok_or_else(|| err("map missing", "wr_crx_per_conn"))?;
        let arr: Array<&MapData, u64> =
            Array::try_from(m).map_err(|e| err("wr_crx_per_conn", e))?;
        (0..self.n)
            .map(|i| arr.get(&i, 0).map_err(|e| err("wr_crx_per_conn", e)))
            .collect()
    }
}

/// Frames connection `k` of `n` was sent when a sender cycled through them `sent` times in
/// order from connection 0 (frame i is connection i mod n).
pub fn sent_to(k: u64, n: u64, sent: u64) -> u64 {
    sent / n + u64::from(k < sent % n)
}

/// The connections that received fewer frames than were sent to them, given the frames each
/// received and the frames sent in total: (how many, the first such index).
pub fn short_connections(per_conn: &[u64], sent: u64) -> (u64, Option<u64>) {
    let n = per_conn.len() as u64;
    let mut short = 0;
    let mut first = None;
    for (k, &got) in per_conn.iter().enumerate() {
        if got < sent_to(k as u64, n, sent) {
            short += 1;
            first.get_or_insert(k as u64);
        }
    }
    (short, first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_per_connection_follow_the_cycle() {
        // 10 frames over 4 connections: 3, 3, 2, 2.
        let got: Vec<u64> = (0..4).map(|k| sent_to(k, 4, 10)).collect();
        assert_eq!(got, vec![3, 3, 2, 2]);
        assert_eq!(got.iter().sum::<u64>(), 10);
        assert_eq!(short_connections(&got, 10), (0, None));
        assert_eq!(short_connections(&[3, 2, 2, 2], 10), (1, Some(1)));
        // More received than sent (a duplicating DUT) is not "short".
        assert_eq!(short_connections(&[4, 3, 2, 2], 10), (0, None));
        assert_eq!(sent_to(0, 1, 0), 0);
    }
}
