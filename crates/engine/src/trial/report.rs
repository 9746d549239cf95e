//! What a trial measured ([`TrialReport`]: per stream, per direction, per port), and the
//! receivers' and senders' hand-over both backends assemble it from. Shared by the AF_PACKET
//! side ([`super`]) and the XDP side ([`crate::xdp::trial`]).

use super::config::{Backend, TrialConfig, TrialStream};

use crate::rx::{IpdvReport, Receiver, StreamRxReport};
use crate::tx::{TxPortReport, TxStreamReport};
use serde::Serialize;
use wire::units::{BitsPerSec, Pps};

/// One stream's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StreamResult {
    pub stream_id: u16,
    pub tx_port: String,
    pub rx_port: String,
    pub tx: TxStreamReport,
    pub rx: StreamRxReport,
    /// Inter-packet delay variation (RFC 8219 §7.3.2) from either backend's receiver, with
    /// the same pairing rules (`rx::StreamRx::ipdv`, `xdp::rx::XdpReceiver::stream_ipdv`);
    /// `None` before two frames with consecutive sequence numbers arrived in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ipdv: Option<IpdvReport>,
    /// Received frames/s over the sending interval (`received / (last_tx − first_tx + 1/rate)`).
    pub rx_pps: Pps,
    /// Received L2 bit/s (with FCS) over the same interval.
    pub rx_l2_bps: BitsPerSec,
    /// Received L1 bit/s (with FCS, preamble, SFD and inter-frame gap).
    pub rx_l1_bps: BitsPerSec,
}

/// Sums over a set of streams (one direction, or everything).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Totals {
    pub label: String,
    pub streams: usize,
    pub intended_pps: Pps,
    pub offered_pps: Pps,
    pub sent: u64,
    pub received: u64,
    pub lost: u64,
    pub duplicates: u64,
    pub out_of_order: u64,
    /// Signed frames of the streams not counted as received ([`StreamRxReport::invalid`]).
    pub invalid: u64,
    pub rx_pps: Pps,
    pub rx_l2_bps: BitsPerSec,
    pub rx_l1_bps: BitsPerSec,
}

/// What one port's receiver saw besides our streams.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PortRxSummary {
    pub port: String,
    /// Frames that are not test frames (ARP, ICMP, anything else).
    pub foreign: u64,
    /// Test frames of streams this port was not expecting.
    pub unexpected_streams: u64,
    /// Signed frames of expected streams that were not valid for them, by reason (the sum of
    /// the port's [`StreamRxReport::invalid`]).
    pub invalid: crate::validate::InvalidCounts,
    /// ARP/ND requests for our addresses that we answered.
    pub answered: u64,
    /// Frames the kernel dropped because the RX ring was full: if not 0, counts are not exact.
    pub ring_drops: u64,
    /// Frames each receive thread of the port saw (one entry per thread).
    pub frames_per_thread: Vec<u64>,
    /// Steps of the machine's realtime clock its AF_PACKET receive threads saw (the most any
    /// one saw: every thread sees the same step) and the largest, in nanoseconds. Receive times follow
    /// the steps (module `rx_clock`), so latencies stay right; a step is said because a frame
    /// waiting in the ring across a step smaller than its wait may be misplaced by the step.
    pub clock_steps: u64,
    pub largest_clock_step_ns: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrialReport {
    pub streams: Vec<StreamResult>,
    pub directions: Vec<Totals>,
    pub total: Totals,
    pub rx_ports: Vec<PortRxSummary>,
    pub tx_ports: Vec<(String, TxPortReport)>,
    pub drain_ms: u64,
    /// The packet engine that ran the trial (never `auto`).
    pub backend: Backend,
    /// How the backend was chosen (and, for XDP, the receive mode of each port).
    pub backend_note: String,
    /// Threads asked for per port (a port uses at most one per stream).
    pub tx_threads: usize,
    pub rx_threads: usize,
}

pub(crate) struct RxDone {
    pub(crate) port: usize,
    pub(crate) thread: usize,
    pub(crate) receiver: Receiver,
    pub(crate) answered: u64,
    pub(crate) ring_drops: u64,
    pub(crate) frames: u64,
    /// Steps of the realtime clock the thread's receive clock followed, and the largest.
    pub(crate) clock_steps: u64,
    pub(crate) largest_clock_step_ns: u64,
}

/// The sender's report of trial stream `s`.
pub(crate) fn tx_of<'a>(
    tx_done: &'a [(usize, TxPortReport)],
    s: &TrialStream,
) -> Option<&'a TxStreamReport> {
    tx_done
        .iter()
        .filter(|(p, _)| *p == s.tx_port)
        .flat_map(|(_, r)| r.streams.iter())
        .find(|t| t.stream_id == s.config.id)
}

/// Per port: what its AF_PACKET receive threads saw besides expected streams, what they
/// answered, ring drops and frames per thread.
pub(crate) fn control_ports(cfg: &TrialConfig, rx_done: &[RxDone]) -> Vec<PortRxSummary> {
    let mut rx_ports: Vec<PortRxSummary> = Vec::new();
    let mut threads = rx_done.iter().collect::<Vec<_>>();
    threads.sort_by_key(|r| (r.port, r.thread));
    for r in threads {
        let name = &cfg.ports[r.port].name;
        if rx_ports.last().is_none_or(|l| &l.port != name) {
            rx_ports.push(PortRxSummary {
                port: name.clone(),
                foreign: 0,
                unexpected_streams: 0,
                invalid: Default::default(),
                answered: 0,
                ring_drops: 0,
                frames_per_thread: Vec::new(),
                clock_steps: 0,
                largest_clock_step_ns: 0,
            });
        }
        let l = rx_ports.last_mut().expect("pushed above");
        l.foreign += r.receiver.foreign();
        l.unexpected_streams += r.receiver.unexpected();
        l.invalid.merge(&r.receiver.invalid_total());
        l.answered += r.answered;
        l.ring_drops += r.ring_drops;
        l.frames_per_thread.push(r.frames);
        l.clock_steps = l.clock_steps.max(r.clock_steps);
        l.largest_clock_step_ns = l.largest_clock_step_ns.max(r.largest_clock_step_ns);
    }
    rx_ports
}
