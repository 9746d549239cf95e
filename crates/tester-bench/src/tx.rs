//! `wirerate bench tx`: our sender, one core, 64-byte signed frames, into a veth whose peer
//! drops every frame at nftables netdev ingress; then trafgen with the same static frame on
//! the same veth for the same time, on the same core at the same nice value (−10, as our
//! threads). Both rates come from the veth's `tx_packets` counter over the same kind of window
//! (after a warm-up); ours is cross-checked with our own exact accepted count. With the XDP
//! backend the peer drops with an XDP program (`wr_drop`, which also gives the veth the NAPI
//! it needs to accept XDP frames) for both senders, and trafgen gets one more window per round
//! on the nftables peer without NAPI (its best case). `tx_packets` counts XDP frames (the
//! peer's `xdp_packets`) and skbs alike, each once.

use crate::net::{bench_frame, BenchNet};
use crate::peer::PeerProcess;
use crate::window::{counter_rate, counter_window, median, task_cpu_ns, Window};
use engine::port::{PortSpec, TxRingConfig};
use engine::stream::{FrameGen, Limit, Rate, StreamConfig};
use engine::tx::TxBackend;
use engine::unknown::UnknownName;
use engine::{Error, Result};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use wire::template::FrameTemplate;

/// Our sender in `bench tx`: one of the AF_PACKET backends ([`TxBackend`]) or XDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TxBenchBackend {
    /// The AF_PACKET TX ring (the AF_PACKET default).
    #[default]
    Ring,
    /// AF_PACKET `sendmmsg`.
    Sendmmsg,
    /// The XDP sender ([`engine::xdp::tx`]). The peer then drops with an XDP program (`wr_drop`)
    /// instead of nftables, for trafgen as well: the same drop for both, and the NAPI a veth
    /// needs to accept XDP frames.
    Xdp,
}

impl TxBenchBackend {
    pub fn name(self) -> &'static str {
        match self {
            TxBenchBackend::Ring => "ring",
            TxBenchBackend::Sendmmsg => "sendmmsg",
            TxBenchBackend::Xdp => "xdp",
        }
    }

    /// The AF_PACKET backend, if this is one.
    pub fn af_packet(self) -> Option<TxBackend> {
        match self {
            TxBenchBackend::Ring => Some(TxBackend::Ring),
            TxBenchBackend::Sendmmsg => Some(TxBackend::Sendmmsg),
            TxBenchBackend::Xdp => None,
        }
    }

    /// The backend `--both-backends` measures next to this one.
    pub fn other(self) -> TxBenchBackend {
        match self {
            TxBenchBackend::Ring => TxBenchBackend::Sendmmsg,
            TxBenchBackend::Sendmmsg | TxBenchBackend::Xdp => TxBenchBackend::Ring,
        }
    }
}

impl std::str::FromStr for TxBenchBackend {
    type Err = UnknownName;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "xdp" => Ok(TxBenchBackend::Xdp),
            // `af_packet` means the AF_PACKET default, the TX ring.
            "af_packet" | "af-packet" | "afpacket" => Ok(TxBenchBackend::Ring),
            _ => match s.parse::<TxBackend>() {
                Ok(TxBackend::Ring) => Ok(TxBenchBackend::Ring),
                Ok(TxBackend::Sendmmsg) => Ok(TxBenchBackend::Sendmmsg),
                Err(_) => Err(UnknownName::new(
                    "TX backend",
                    s,
                    "ring, sendmmsg, af_packet = ring, xdp",
                )),
            },
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TxBenchConfig {
    pub duration: Duration,
    /// Frame length without FCS (60 = a 64-byte frame).
    pub frame_len: usize,
    /// The core both senders run on.
    pub cpu: usize,
    /// Steer the dropping peer's receive processing to this CPU.
    pub rps_cpu: Option<usize>,
    /// Warm-up excluded from the measurement window.
    pub warmup: Duration,
    /// Our backend whose figure is compared with trafgen's.
    pub backend: TxBenchBackend,
    /// Also measure our other backend.
    pub both_backends: bool,
    /// Alternating windows per sender; medians are reported.
    pub rounds: u32,
    /// XDP against xdp-trafficgen: sender threads, on CPUs `cpu`, `cpu + 1`, …, each with its
    /// own stream (ours) or `-t` threads (xdp-trafficgen), into a veth with as many queues.
    pub tx_threads: usize,
}

impl Default for TxBenchConfig {
    fn default() -> Self {
        TxBenchConfig {
            duration: Duration::from_secs(5),
            frame_len: 60,
            cpu: 0,
            rps_cpu: None,
            warmup: Duration::from_millis(500),
            backend: TxBenchBackend::default(),
            both_backends: false,
            rounds: 3,
            tx_threads: 1,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TxBenchReport {
    pub config: TxBenchConfig,
    /// Our frames/s from the veth counter over the measurement window (median of rounds).
    pub wirerate_pps: f64,
    pub wirerate_rounds: Vec<f64>,
    /// Our own exact count (frames the kernel accepted) over the whole run, and its rate.
    pub wirerate_sent: u64,
    pub wirerate_own_pps: f64,
    pub wirerate_mean_batch: f64,
    /// Our other backend on the same veth, if asked for: (backend, median, rounds).
    pub other_backend: Option<(TxBenchBackend, f64, Vec<f64>)>,
    /// trafgen's frames/s from the same counter over the same window length.
    pub trafgen_pps: f64,
    pub trafgen_rounds: Vec<f64>,
    /// Why trafgen produced no figure (it aborts when the ring meets back-pressure).
    pub trafgen_error: Option<String>,
    /// trafgen windows that ended in such an abort (each round retries up to twice).
    pub trafgen_aborts: u32,
    /// XDP backend only: trafgen also into the AF_PACKET bench's peer (nftables drop, no NAPI),
    /// its best case here: (median, rounds).
    pub trafgen_nft: Option<(f64, Vec<f64>)>,
    pub ratio: f64,
}

/// One window of our sender on `backend`: (counter rate, our report).
fn measure_ours(
    net: &BenchNet,
    cfg: &TxBenchConfig,
    backend: TxBenchBackend,
    frame: &FrameTemplate,
) -> Result<(f64, engine::tx::TxPortReport)> {
    measure_ours_window(net, cfg, backend, frame).map(|(w, rep)| (w.pps, rep))
}

/// One window of our sender on `backend`, with the CPU time of its sending thread over the
/// window: (window, our report).
pub(crate) fn measure_ours_window(
    net: &BenchNet,
    cfg: &TxBenchConfig,
    backend: TxBenchBackend,
    frame: &FrameTemplate,
) -> Result<(Window, engine::tx::TxPortReport)> {
    // Long enough for any start-up delay: `stop` ends the sender right after the window.
    let limit =
        Limit::DurationNs((cfg.warmup + cfg.duration + Duration::from_secs(15)).as_nanos() as u64);
    let stream = StreamConfig {
        rewrite_macs: false,
        ..StreamConfig::single(1, frame.clone(), Rate::Unlimited, limit)
    };
    let port = net.tx_port(Some(cfg.cpu));
    let stop = AtomicBool::new(false);
    let tid = std::sync::atomic::AtomicU32::new(0);
    // More XDP sender threads: each its own stream (ids 2, 3, …) on the next CPU.
    let extra = if backend == TxBenchBackend::Xdp {
        cfg.tx_threads.max(1) - 1
    } else {
        0
    };
    let extra_streams = (0..extra)
        .map(|i| {
            let id = 2 + i as u16;
            Ok(StreamConfig {
                rewrite_macs: false,
                ..StreamConfig::single(id, bench_frame(cfg.frame_len, id)?, Rate::Unlimited, limit)
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let extra_tids: Vec<std::sync::atomic::AtomicU32> = (0..extra)
        .map(|_| std::sync::atomic::AtomicU32::new(0))
        .collect();
    std::thread::scope(|sc| -> Result<_> {
        let more: Vec<_> = extra_streams
            .iter()
            .zip(&extra_tids)
            .enumerate()
            .map(|(i, (st, t))| {
                let port = net.tx_port(Some(cfg.cpu + 1 + i));
                let stop = &stop;
                sc.spawn(move || -> Result<_> {
                    t.store(engine::sys::gettid(), Ordering::Relaxed);
                    xdp_run_with_stats(&port, st, stop)
                })
            })
            .collect();
        let h = sc.spawn(|| -> Result<_> {
            tid.store(engine::sys::gettid(), Ordering::Relaxed);
            let Some(backend) = backend.af_packet() else {
                return xdp_run_with_stats(&port, &stream, &stop);
            };
            let ifindex = port.enter(0)?;
            let mut sender = engine::tx::open(
                &port,
                ifindex,
                &TxRingConfig::default(),
                backend,
                frame.len(),
            )?;
            let gen = FrameGen::new(&stream)?;
            engine::tx::run(
                &mut sender,
                vec![(gen, &stream)],
                engine::sys::monotonic_ns(),
                &stop,
            )
        });
        let cpu = || {
            let mut sum = 0;
            for t in std::iter::once(&tid).chain(&extra_tids) {
                let t = t.load(Ordering::Relaxed);
                if t == 0 {
                    return None;
                }
                sum += task_cpu_ns(&format!("/proc/self/task/{t}/schedstat"))?;
            }
            Some(sum)
        };
        let rate = counter_window(net, cfg.warmup, cfg.duration, &cpu);
        stop.store(true, Ordering::Relaxed);
        let mut rep = h
            .join()
            .map_err(|_| Error::Thread("sender panicked".into()))??;
        for m in more {
            let r = m
                .join()
                .map_err(|_| Error::Thread("sender panicked".into()))??;
            rep.streams.extend(r.streams);
            rep.prog_ns_per_frame = match (rep.prog_ns_per_frame, r.prog_ns_per_frame) {
                (Some(a), Some(b)) => Some((a + b) / 2.0),
                (a, b) => a.or(b),
            };
        }
        Ok((rate?, rep))
    })
}

/// The XDP sender on `port` (as [`engine::xdp::tx::run_port`]), with the nanoseconds `wr_tx`
/// ran per frame put into the report's `prog_ns_per_frame` when BPF statistics are on.
fn xdp_run_with_stats(
    port: &PortSpec,
    stream: &StreamConfig,
    stop: &AtomicBool,
) -> Result<engine::tx::TxPortReport> {
    let ifindex = port.enter(0)?;
    let gens = vec![(FrameGen::new(stream)?, stream)];
    let mut sender = engine::xdp::tx::open(port, ifindex, &gens)?;
    let before = sender.run_stats();
    let mut rep = engine::xdp::tx::run(&mut sender, gens, engine::sys::monotonic_ns(), stop)?;
    if let (Some((c0, t0)), Some((c1, t1))) = (before, sender.run_stats()) {
        if c1 > c0 {
            rep.prog_ns_per_frame = Some((t1 - t0) as f64 / (c1 - c0) as f64);
        }
    }
    Ok(rep)
}

/// One window of trafgen: its counter rate, or why it gave none.
fn measure_trafgen(
    net: &BenchNet,
    cfg: &TxBenchConfig,
    frame: &FrameTemplate,
) -> Result<std::result::Result<f64, String>> {
    let mut tg = PeerProcess::trafgen(net, frame.bytes(), cfg.cpu, None)?;
    let rate = counter_rate(net, cfg.warmup, cfg.duration);
    if let Ok(Some(st)) = tg.child.try_wait() {
        let err = tg.stderr_text();
        return Ok(Err(format!("trafgen exited early ({st}): {}", err)));
    }
    tg.kill_group();
    Ok(Ok(rate?))
}

/// `wirerate bench tx`: `rounds` alternating windows of our sender and trafgen (so that a
/// machine whose load changes hurts both alike); medians and their ratio.
pub fn tx(cfg: &TxBenchConfig, tag: &str) -> Result<TxBenchReport> {
    let xdp = cfg.backend == TxBenchBackend::Xdp;
    // XDP: the peer drops in its driver with `wr_drop` (for trafgen too), before the nftables
    // chain; each round trafgen also gets a window without it (nftables drop, no NAPI).
    let net = BenchNet::new(tag, true, cfg.rps_cpu)?;
    let drop_port = net.rx_port(None);
    let mut xdp_drop = if xdp {
        Some(engine::xdp::tx::XdpDrop::attach(&drop_port)?)
    } else {
        None
    };
    let mut theirs_nft = Vec::new();
    let frame = bench_frame(cfg.frame_len, 1)?;
    let (mut ours, mut theirs, mut others) = (Vec::new(), Vec::new(), Vec::new());
    let (mut sent, mut own, mut batch) = (0u64, Vec::new(), Vec::new());
    let (mut trafgen_error, mut trafgen_aborts) = (None, 0);
    let other = cfg.backend.other();
    for _ in 0..cfg.rounds.max(1) {
        let (pps, rep) = measure_ours(&net, cfg, cfg.backend, &frame)?;
        ours.push(pps);
        sent += rep.streams[0].sent;
        own.push(rep.streams[0].achieved_pps.0);
        batch.push(rep.mean_batch);
        if cfg.both_backends {
            others.push(measure_ours(&net, cfg, other, &frame)?.0);
        }
        // trafgen aborts when its ring meets back-pressure (DESIGN.md §8), which a machine
        // busy with other work brings about now and then: retry the window up to twice.
        for _ in 0..3 {
            match measure_trafgen(&net, cfg, &frame)? {
                Ok(p) => {
                    theirs.push(p);
                    break;
                }
                Err(e) => {
                    trafgen_aborts += 1;
                    trafgen_error = Some(e);
                }
            }
        }
        if xdp {
            // trafgen's own best case: the AF_PACKET bench's peer (nftables drop, no NAPI).
            drop(xdp_drop.take());
            for _ in 0..3 {
                match measure_trafgen(&net, cfg, &frame)? {
                    Ok(p) => {
                        theirs_nft.push(p);
                        break;
                    }
                    Err(_) => trafgen_aborts += 1,
                }
            }
            xdp_drop = Some(engine::xdp::tx::XdpDrop::attach(&drop_port)?);
        }
    }
    drop(xdp_drop);
    let wirerate_pps = median(&ours);
    let trafgen_pps = median(&theirs);
    if !theirs.is_empty() {
        trafgen_error = None;
    }
    Ok(TxBenchReport {
        config: *cfg,
        wirerate_pps,
        wirerate_rounds: ours,
        wirerate_sent: sent,
        wirerate_own_pps: median(&own),
        wirerate_mean_batch: median(&batch),
        other_backend: cfg
            .both_backends
            .then(|| (other, median(&others), others.clone())),
        trafgen_pps,
        trafgen_rounds: theirs,
        trafgen_error,
        trafgen_aborts,
        trafgen_nft: (!theirs_nft.is_empty()).then(|| (median(&theirs_nft), theirs_nft.clone())),
        ratio: if trafgen_pps > 0.0 {
            wirerate_pps / trafgen_pps
        } else {
            0.0
        },
    })
}
