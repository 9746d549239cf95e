//! `wirerate bench rx`: a source sends exactly N signed frames into a veth; our receiver on
//! the peer must count exactly N. The source is trafgen (one static frame, at full speed) or
//! our XDP sender (N numbered frames, unpaced or at a rate); the receiver our AF_PACKET RX ring
//! or our XDP program, whose veth poll runs in a SCHED_FIFO NAPI thread of its own or in the
//! kernel's softirq. What counts as exact is [`crate::verdict::RxVerdict`].

use crate::net::{bench_expect, bench_frame, BenchNet};
use crate::peer::PeerProcess;
use crate::verdict::RxVerdict;
use engine::port::RxRingConfig;
use engine::rx::Receiver;
use engine::stream::{Limit, Rate, StreamConfig};
use engine::unknown::UnknownName;
use engine::xdp::rx_napi::SchedTimes;
use engine::{Error, Result};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wire::template::FrameTemplate;

/// Which receiver `bench rx` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RxBackend {
    /// The TPACKET_V3 RX ring ([`engine::rx::Receiver`]).
    #[default]
    AfPacket,
    /// The XDP program counting in maps ([`engine::xdp::rx::XdpReceiver`]).
    Xdp,
}

impl std::str::FromStr for RxBackend {
    type Err = UnknownName;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "af_packet" | "af-packet" | "afpacket" => Ok(RxBackend::AfPacket),
            "xdp" => Ok(RxBackend::Xdp),
            _ => Err(UnknownName::new("RX backend", s, "af_packet, xdp")),
        }
    }
}

/// What sends the frames `bench rx` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RxSource {
    /// trafgen `-n N` with one static signed frame (every copy has the same sequence number).
    #[default]
    Trafgen,
    /// wirerate's XDP sender ([`engine::xdp::tx`]), unpaced, N frames with consecutive
    /// sequence numbers.
    Xdp,
}

impl std::str::FromStr for RxSource {
    type Err = UnknownName;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "trafgen" => Ok(RxSource::Trafgen),
            "xdp" => Ok(RxSource::Xdp),
            _ => Err(UnknownName::new("RX bench source", s, "trafgen, xdp")),
        }
    }
}

/// Where the XDP receiver's work runs: the receiving veth's NAPI poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RxNapi {
    /// A NAPI thread of its own ([`engine::xdp::rx_napi`]), pinned to `rx_cpu` (default: the
    /// sender's CPU), SCHED_FIFO: it empties the veth's ring after every batch the sender
    /// hands over, whatever else the CPU has to run.
    #[default]
    Thread,
    /// The kernel's default: a softirq on the sender's CPU, which leaves the rest of the ring
    /// to `ksoftirqd` when another task wants the CPU (the veth then refuses frames).
    Softirq,
}

impl std::str::FromStr for RxNapi {
    type Err = UnknownName;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "thread" => Ok(RxNapi::Thread),
            "softirq" => Ok(RxNapi::Softirq),
            _ => Err(UnknownName::new("receive NAPI mode", s, "thread, softirq")),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RxBenchConfig {
    pub frames: u64,
    pub frame_len: usize,
    /// CPU of the sender; our AF_PACKET receiver runs on `rx_cpu` (default: another CPU).
    /// The XDP receiver runs where the veth's NAPI runs: with [`RxNapi::Thread`] on `rx_cpu`
    /// (default: the sender's CPU), with [`RxNapi::Softirq`] on the sender's CPU.
    pub tx_cpu: usize,
    pub rx_cpu: Option<usize>,
    pub backend: RxBackend,
    pub source: RxSource,
    /// XDP backend: where the receiving veth's NAPI poll runs.
    pub napi: RxNapi,
    /// The XDP source's rate in frames/s; `None`: unpaced, as fast as it can. Pacing is how
    /// the receiver is checked at a given sender's rate (e.g. `bench tx`'s median) when the
    /// sender, with a CPU of its own here, could go faster than it does in `bench tx`.
    pub source_pps: Option<f64>,
}

impl Default for RxBenchConfig {
    fn default() -> Self {
        RxBenchConfig {
            frames: 1_000_000,
            frame_len: 60,
            tx_cpu: 0,
            rx_cpu: None,
            backend: RxBackend::AfPacket,
            source: RxSource::Trafgen,
            napi: RxNapi::Thread,
            source_pps: None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RxBenchReport {
    pub config: RxBenchConfig,
    /// Frames the source put on the veth (trafgen: the veth's tx_packets counter; the XDP
    /// sender: frames the device accepted, its own exact count).
    pub sent: u64,
    /// Signed frames of the bench stream our receiver counted (received + duplicates: trafgen's
    /// frames are identical, so all but the first are "duplicates" to the sequence tracker).
    pub counted: u64,
    /// Distinct sequence numbers received and duplicates (the XDP source numbers its frames).
    pub received: u64,
    pub duplicates: u64,
    pub foreign: u64,
    /// RX ring overflow (AF_PACKET backend only; 0 for XDP).
    pub ring_drops: u64,
    /// The peer's own receive drops (backlog), if any.
    pub peer_rx_dropped: u64,
    /// Frames the sending veth dropped (e.g. the XDP peer's ring full).
    pub tx_dropped: u64,
    /// Frames the source was asked to send that the veth did not take (N − `sent`): the XDP
    /// sender's frames the veth refused (their sequence numbers are skipped, never sent).
    pub refused: u64,
    /// XDP backend: where the receive poll ran ("softirq on CPU 0", "thread on CPU 0,
    /// SCHED_FIFO 50").
    pub napi: Option<String>,
    /// XDP backend, NAPI thread: what the scheduler says of the receive thread from the
    /// source's start to the end of the drain: its time on the CPU, its time runnable but
    /// waiting for the CPU, and its runs ([`SchedTimes`]). Waits are what lets the veth's
    /// 256-frame ring fill while the receiver is not slower than the sender.
    pub napi_sched: Option<SchedTimes>,
    /// The XDP sender's own achieved rate (first to last send timestamp), when it is the source.
    pub source_pps: Option<f64>,
    /// XDP source: why frames were refused, if any. Refusals come in events (one per flush
    /// the veth could not take whole): few events of many frames are the receiver away for a
    /// while; each event's frames arrived while the 256-frame ring was full.
    pub source: Option<RxSourceFacts>,
    /// XDP source: how long counted frames took from their send stamps to the receiver (their
    /// latency; on a veth mostly time in the ring). A ring full of frames sent at R frames/s
    /// is 256 / R seconds deep: waits that long are the receiver falling behind.
    pub wait: Option<engine::rx::LatencyReport>,
    /// XDP backend: how the program ran (native or SKB mode) and why, if not native.
    pub xdp_mode: Option<engine::xdp::rx::XdpMode>,
    /// XDP backend: the program kept its sequence state without atomic operations (native
    /// mode on one receive queue: `XdpReceiver::one_at_a_time`).
    pub xdp_one_at_a_time: Option<bool>,
    pub xdp_note: Option<String>,
    /// Mean nanoseconds the XDP receiver program ran per frame, when the kernel's BPF
    /// statistics are on (`sysctl kernel.bpf_stats_enabled=1`).
    pub xdp_ns_per_frame: Option<f64>,
    /// The receive window: trafgen source, from its start to its exit; XDP source, from the
    /// first to the last frame received (the receiver's timestamps).
    pub seconds: f64,
    pub rx_pps: f64,
    /// Every frame put on the wire counted exactly once ([`RxVerdict::counted_once`]).
    pub counted_once: bool,
    /// Counted once, and nothing refused: all N frames sent and counted.
    pub exact: bool,
}

/// Frames a veth's receive ring holds (the kernel's fixed `VETH_RING_SIZE`): at R frames/s it
/// lasts `VETH_RING_FRAMES / R` seconds of a receiver away.
pub const VETH_RING_FRAMES: u64 = 256;

/// What the XDP sender saw while it was `bench rx`'s source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct RxSourceFacts {
    /// Flushes in which the veth refused frames (it takes what fits, refuses the rest).
    pub refusal_events: u64,
    /// The most frames the paced sender owed its schedule at once, sent back to back after it
    /// had been held up (0 unpaced): a burst faster than the rate asked.
    pub max_catch_up: u64,
}

/// `wirerate bench rx`: the configured source sends exactly `frames` frames at full speed;
/// the configured receiver must count exactly that many.
pub fn rx(cfg: &RxBenchConfig, tag: &str) -> Result<RxBenchReport> {
    match (cfg.backend, cfg.source) {
        (RxBackend::AfPacket, RxSource::Trafgen) => rx_af_packet(cfg, tag),
        (RxBackend::Xdp, RxSource::Trafgen) if cfg.source_pps.is_some() => Err(Error::Config(
            "bench rx: a source rate paces the XDP sender (--source xdp); trafgen sends at \
             full speed"
                .into(),
        )),
        (RxBackend::Xdp, _) => rx_xdp(cfg, tag),
        (RxBackend::AfPacket, RxSource::Xdp) => Err(Error::Config(
            "bench rx: the XDP source is for the XDP receiver (--backend xdp); the AF_PACKET \
             ring cannot keep up with it"
                .into(),
        )),
    }
}

fn rx_af_packet(cfg: &RxBenchConfig, tag: &str) -> Result<RxBenchReport> {
    let net = BenchNet::new(tag, false, None)?;
    let frame = bench_frame(cfg.frame_len, 2)?;
    // By default the receiver gets a CPU of its own (not trafgen's), if there is one.
    let rx_cpu = cfg.rx_cpu.or_else(|| {
        engine::sys::allowed_cpus()
            .ok()?
            .into_iter()
            .find(|&c| c != cfg.tx_cpu)
    });
    let port = net.rx_port(rx_cpu);
    let expect = bench_expect(&frame, cfg.frames);
    let stop = AtomicBool::new(false);
    let tx0 = net.tx_counter("tx_packets")?;
    let drop0 = net.rx_counter("rx_dropped")?;
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let (rep, secs) = std::thread::scope(|sc| -> Result<_> {
        let h = sc.spawn(|| -> Result<(Receiver, u64)> {
            let setup = (|| {
                let ifindex = port.enter(1)?;
                port.open_rx(ifindex, &RxRingConfig::default())
            })();
            let mut ring = match setup {
                Ok(r) => {
                    let _ = ready_tx.send(Ok(()));
                    r
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(Error::Thread(e.to_string())));
                    return Err(e);
                }
            };
            let _ = ring.socket().take_stats();
            let mut rx = Receiver::with_expect(&[(2, expect)], 0);
            while !stop.load(Ordering::Relaxed) {
                ring.drain(5, |_, p| {
                    rx.on_frame_len(p.data, p.len_on_wire(), 0);
                })
                .map_err(|e| Error::io("RX ring", e))?;
            }
            ring.drain(0, |_, p| {
                rx.on_frame_len(p.data, p.len_on_wire(), 0);
            })
            .map_err(|e| Error::io("RX ring", e))?;
            let drops = ring.socket().take_stats().map(|(_, d)| d).unwrap_or(0);
            Ok((rx, drops))
        });
        ready_rx
            .recv()
            .map_err(|_| Error::Thread("receiver did not start".into()))??;
        let t0 = Instant::now();
        let mut tg = PeerProcess::trafgen(&net, frame.bytes(), cfg.tx_cpu, Some(cfg.frames))?;
        let status = tg
            .child
            .wait()
            .map_err(|e| Error::io("waiting for trafgen", e));
        let secs = t0.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::Relaxed);
        let r = h
            .join()
            .map_err(|_| Error::Thread("receiver panicked".into()))??;
        let status = status?;
        if !status.success() {
            let err = tg.stderr_text();
            return Err(Error::Config(format!("trafgen failed ({status}): {}", err)));
        }
        Ok((r, secs))
    })?;
    let (rx, ring_drops) = rep;
    let sent = net.tx_counter("tx_packets")? - tx0;
    let peer_rx_dropped = net.rx_counter("rx_dropped")? - drop0;
    let (received, duplicates) = rx
        .stream(2)
        .map(|s| {
            let r = s.report(2, None);
            (r.received, r.duplicates)
        })
        .unwrap_or((0, 0));
    let counted = received + duplicates;
    let verdict = RxVerdict::of(cfg.frames, sent, counted, received, duplicates, false);
    Ok(RxBenchReport {
        config: *cfg,
        sent,
        counted,
        received,
        duplicates,
        foreign: rx.foreign(),
        ring_drops,
        peer_rx_dropped,
        tx_dropped: 0,
        refused: cfg.frames.saturating_sub(sent),
        napi: None,
        napi_sched: None,
        source_pps: None,
        source: None,
        wait: None,
        xdp_mode: None,
        xdp_one_at_a_time: None,
        xdp_note: None,
        xdp_ns_per_frame: None,
        seconds: secs,
        rx_pps: counted as f64 / secs,
        counted_once: verdict.counted_once,
        exact: verdict.exact,
    })
}

/// `bench rx`'s receiving veth polled in SCHED_FIFO NAPI threads of its own pinned to one CPU
/// (`xdp::rx_napi`), with the scheduler's account of them from when they were pinned (before
/// the first frame is sent).
pub(crate) struct NapiThreads {
    tids: Vec<libc::pid_t>,
    cpu: usize,
    before: Option<SchedTimes>,
}

impl NapiThreads {
    /// On `cfg.rx_cpu`, by default the sender's CPU. The veth must already run NAPI (an XDP
    /// program attached to it).
    pub(crate) fn pin(net: &BenchNet, cfg: &RxBenchConfig) -> Result<Self> {
        let cpu = cfg.rx_cpu.unwrap_or(cfg.tx_cpu);
        let tids = engine::xdp::rx_napi::thread_on_cpu(Some(net.rx_netns()), net.rx_if(), cpu)?;
        let before = SchedTimes::of_threads(&tids);
        Ok(NapiThreads { tids, cpu, before })
    }

    /// Their run time, wait for the CPU and runs since they were pinned.
    pub(crate) fn sched(&self) -> Option<SchedTimes> {
        let before = self.before?;
        SchedTimes::of_threads(&self.tids).map(|t| t.since(&before))
    }
}

/// `bench rx --backend xdp`: the XDP receiver on the peer counts in maps; the source is
/// trafgen or the XDP sender. Exact: see [`RxVerdict`]. The receiving veth's poll runs as
/// `cfg.napi` says (default: a SCHED_FIFO NAPI thread on the sender's CPU).
fn rx_xdp(cfg: &RxBenchConfig, tag: &str) -> Result<RxBenchReport> {
    use engine::xdp::rx::{XdpReceiver, XdpRxConfig};
    let net = BenchNet::new(tag, false, None)?;
    let frame = bench_frame(cfg.frame_len, 2)?;
    let rx = XdpReceiver::attach_with(
        &net.rx_port(None),
        &[(2, bench_expect(&frame, cfg.frames))],
        0,
        &XdpRxConfig::default(),
    )?;
    let mut napi_threads = None;
    let napi = match cfg.napi {
        RxNapi::Thread => {
            let t = NapiThreads::pin(&net, cfg)?;
            let n = format!(
                "thread on CPU {}, SCHED_FIFO {}",
                t.cpu,
                engine::xdp::rx_napi::NAPI_PRIORITY
            );
            napi_threads = Some(t);
            n
        }
        RxNapi::Softirq => {
            if cfg.rx_cpu.is_some() {
                return Err(Error::Config(
                    "bench rx: --rx-cpu places the XDP receiver's NAPI thread; with the \
                     softirq the poll runs on the sender's CPU (--tx-cpu)"
                        .into(),
                ));
            }
            format!("softirq on CPU {} (the sender's)", cfg.tx_cpu)
        }
    };
    let tx0 = net.tx_counter("tx_packets")?;
    let txd0 = net.tx_counter("tx_dropped")?;
    let drop0 = net.rx_counter("rx_dropped")?;
    let t0 = Instant::now();
    let (sent, source_pps, source) = match cfg.source {
        RxSource::Trafgen => {
            let mut tg = PeerProcess::trafgen(&net, frame.bytes(), cfg.tx_cpu, Some(cfg.frames))?;
            let status = tg
                .child
                .wait()
                .map_err(|e| Error::io("waiting for trafgen", e))?;
            if !status.success() {
                let err = tg.stderr_text();
                return Err(Error::Config(format!("trafgen failed ({status}): {}", err)));
            }
            (net.tx_counter("tx_packets")? - tx0, None, None)
        }
        RxSource::Xdp => {
            let (sent, pps, facts) = xdp_source(&net, &frame, cfg)?;
            (sent, Some(pps), Some(facts))
        }
    };
    let mut secs = t0.elapsed().as_secs_f64();
    // Let the peer's NAPI finish what is queued: until every frame put on the wire is counted,
    // or the count stood still for 300 ms (a fixed 300 ms could end before a receive thread
    // held off its CPU caught up), at most 5 s.
    engine::settle::until_count(sent, || {
        Ok(rx
            .stream_report(2, Some(sent))?
            .map_or(0, |r| r.received + r.duplicates))
    })?;
    let napi_sched = napi_threads.as_ref().and_then(NapiThreads::sched);
    let r = rx
        .stream_report(2, Some(sent))?
        .ok_or_else(|| Error::Config("bench stream missing from the XDP receiver".into()))?;
    let port = rx.port_counters()?;
    let counted = r.received + r.duplicates;
    let mut rx_pps = counted as f64 / secs;
    if cfg.source == RxSource::Xdp && r.received > 1 && r.last_rx_ns > r.first_rx_ns {
        // The sender's start-up (loading, verifying, probing) is not receive time.
        secs = (r.last_rx_ns - r.first_rx_ns) as f64 / 1e9;
        rx_pps = (r.received - 1) as f64 / secs;
    }
    let verdict = RxVerdict::of(
        cfg.frames,
        sent,
        counted,
        r.received,
        r.duplicates,
        cfg.source == RxSource::Xdp,
    );
    Ok(RxBenchReport {
        config: *cfg,
        sent,
        counted,
        received: r.received,
        duplicates: r.duplicates,
        foreign: port.foreign,
        ring_drops: 0,
        peer_rx_dropped: net.rx_counter("rx_dropped")? - drop0,
        tx_dropped: net.tx_counter("tx_dropped")? - txd0,
        refused: cfg.frames.saturating_sub(sent),
        napi: Some(napi),
        napi_sched,
        source_pps,
        source,
        wait: source.and(r.latency),
        xdp_mode: Some(rx.mode()),
        xdp_one_at_a_time: Some(rx.one_at_a_time()),
        xdp_note: rx.mode_note().map(str::to_string),
        xdp_ns_per_frame: rx
            .run_stats()
            .filter(|&(runs, _)| runs > 0)
            .map(|(runs, ns)| ns as f64 / runs as f64),
        seconds: secs,
        rx_pps,
        counted_once: verdict.counted_once,
        exact: verdict.exact,
    })
}

/// The XDP sender as the bench's source: `frames` frames from `tx_cpu`, unpaced or at
/// `cfg.source_pps`. Returns the frames the device accepted, the sender's achieved rate and
/// what it saw of refusals and catch-ups.
pub(crate) fn xdp_source(
    net: &BenchNet,
    frame: &FrameTemplate,
    cfg: &RxBenchConfig,
) -> Result<(u64, f64, RxSourceFacts)> {
    let rate = cfg
        .source_pps
        .map_or(Rate::Unlimited, |p| Rate::Pps(wire::units::Pps(p)));
    let stream = StreamConfig {
        rewrite_macs: false,
        ..StreamConfig::single(2, frame.clone(), rate, Limit::Frames(cfg.frames))
    };
    let port = net.tx_port(Some(cfg.tx_cpu));
    let stop = AtomicBool::new(false);
    let rep = std::thread::scope(|s| {
        s.spawn(|| engine::xdp::tx::run_port(&port, std::slice::from_ref(&stream), 0, &stop))
            .join()
            .map_err(|_| Error::Thread("XDP sender panicked".into()))?
    })?;
    let s = rep
        .streams
        .first()
        .ok_or_else(|| Error::Config("the XDP sender reported no stream".into()))?;
    let facts = RxSourceFacts {
        refusal_events: rep.backpressure_flushes,
        max_catch_up: s.max_debt,
    };
    Ok((s.sent, s.achieved_pps.0, facts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rx_napi_modes_parse() {
        assert_eq!("thread".parse::<RxNapi>(), Ok(RxNapi::Thread));
        assert_eq!("softirq".parse::<RxNapi>(), Ok(RxNapi::Softirq));
        assert!("busy"
            .parse::<RxNapi>()
            .unwrap_err()
            .to_string()
            .contains("thread, softirq"));
        assert_eq!(RxNapi::default(), RxNapi::Thread);
    }
}
