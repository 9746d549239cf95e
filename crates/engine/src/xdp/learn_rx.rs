//! XDP learner of a connection trial's preliminary phase (`bpf/learn_rx.bpf.c`, used by
//! `engine::nat`): the tuple each preliminary frame arrived with — after a NAPT, the address
//! and port the DUT chose — recorded in the kernel by the frame's creation index (its
//! sequence number) as the frame arrives, and read by user space after the phase.
//!
//! Why not the AF_PACKET learner alone: a frame the DUT forwarded must never look like a
//! connection the DUT failed to establish. On AF_PACKET every frame waits in a ring for a
//! user-space thread; on a loaded 2-vCPU machine that thread is not always scheduled in time,
//! the ring drops, and the trial is the tester's (`rx_ring_drops`). Here no frame waits for
//! user space. Everything that is not a signed test frame passes on to the stack, where the
//! trial's AF_PACKET socket answers ARP. The program is detached when the learner is dropped
//! (a BPF link owned by the process, so also on any exit).

use super::mode::XdpMode;
/// What the learner counted, summed over the CPUs.
pub use super::sys::LearnTotals as Totals;
use super::sys::{Conn, LearnSlot, LEARN_SLOT_LEARNED};
use crate::port::PortSpec;
use crate::{Error, Result};
use aya::maps::{Array, MapData, PerCpuArray};
use aya::programs::Xdp;
use aya::{Ebpf, EbpfLoader};

/// The program attached to one port, learning one stream of N connections.
pub struct XdpLearner {
    bpf: Ebpf,
    n: u32,
    mode: XdpMode,
    mode_note: Option<String>,
}

impl std::fmt::Debug for XdpLearner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpLearner")
            .field("connections", &self.n)
            .field("mode", &self.mode)
            .finish()
    }
}

fn err(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Bpf(format!("XDP learner: {what}: {e}"))
}

impl XdpLearner {
    /// Attaches the learner to `port`'s interface (native mode, SKB mode if the driver
    /// refuses), from a short-lived thread that enters the port's namespace: frames of
    /// `stream` with index k < `connections` are learned into slot k.
    pub fn attach(port: &PortSpec, stream: u16, connections: u64) -> Result<XdpLearner> {
        let n = u32::try_from(connections)
            .ok()
            .filter(|&n| n > 0)
            .ok_or_else(|| Error::Config("XDP learner: connections: give 1 to 2^32 − 1".into()))?;
        std::thread::scope(|s| {
            s.spawn(|| Self::attach_here(port, stream, n))
                .join()
                .map_err(|_| Error::Thread("XDP attach thread panicked".into()))?
        })
    }

    fn attach_here(port: &PortSpec, stream: u16, n: u32) -> Result<Self> {
        let ifindex = port.enter(0)?;
        let stream = u32::from(stream);
        let mut bpf = EbpfLoader::new()
            .set_max_entries("wr_lrn_slots", n)
            .set_global("wr_lrn_stream", &stream, true)
            .set_global("wr_lrn_n", &n, true)
            .load(super::objects::LEARN_RX)
            .map_err(|e| err("loading learn_rx.bpf.o", e))?;
        let prog: &mut Xdp = bpf
            .program_mut("wr_learn_rx")
            .ok_or_else(|| err("program missing", "wr_learn_rx"))?
            .try_into()
            .map_err(|e| err("wr_learn_rx", e))?;
        prog.load()
            .map_err(|e| err("the kernel refused the program", e))?;
        let (mode, mode_note) = super::attach::native_else_skb(prog, ifindex, port, "learning")?;
        Ok(XdpLearner {
            bpf,
            n,
            mode,
            mode_note,
        })
    }

    pub fn mode(&self) -> XdpMode {
        self.mode
    }

    /// Why the learner runs in SKB mode, when native mode was refused.
    pub fn mode_note(&self) -> Option<&str> {
        self.mode_note.as_deref()
    }

    /// The counts so far, summed over the CPUs.
    pub fn totals(&self) -> Result<Totals> {
        let m = self
            .bpf
            .map("wr_lrn_totals")
            .ok_or_else(|| err("map missing", "wr_lrn_totals"))?;
        let arr: PerCpuArray<&MapData, Totals> =
            PerCpuArray::try_from(m).map_err(|e| err("wr_lrn_totals", e))?;
        let per_cpu = arr.get(&0, 0).map_err(|e| err("wr_lrn_totals", e))?;
        Ok(per_cpu.iter().fold(Totals::default(), |a, t| Totals {
            learned: a.learned + t.learned,
            duplicates: a.duplicates + t.duplicates,
            out_of_range: a.out_of_range + t.out_of_range,
            other_streams: a.other_streams + t.other_streams,
        }))
    }

    /// The learned connections in creation order: (index, tuple as it arrived, host order).
    /// One map read per connection (about a second per million); call after the phase.
    pub fn learned(&self) -> Result<Vec<(u64, Conn)>> {
        let m = self
            .bpf
            .map("wr_lrn_slots")
            .ok_or_else(|| err("map missing", "wr_lrn_slots"))?;
        let arr: Array<&MapData, LearnSlot> =
            Array::try_from(m).map_err(|e| err("wr_lrn_slots", e))?;
        let mut out = Vec::new();
        for k in 0..self.n {
            let s = arr.get(&k, 0).map_err(|e| err("wr_lrn_slots", e))?;
            if s.state == LEARN_SLOT_LEARNED {
                out.push((u64::from(k), s.conn));
            }
        }
        Ok(out)
    }
}
