//! `wirerate bench tx --against xdp-trafficgen`: our sender and xdp-trafficgen (xdp-tools),
//! each alone on the same core at the same nice value, in alternating windows into the same
//! veth, whose peer drops every frame with an XDP program (`wr_drop`) for both; rates from
//! one counter, and per second of each sender's own CPU time.

use crate::net::{bench_frame, lab_failed, BenchNet};
use crate::peer::PeerProcess;
use crate::tx::{measure_ours_window, TxBenchConfig};
use crate::window::{counter_window, loadavg, median, process_cpu_ns, CpuShare, Window};
use engine::{Error, Result};
use serde::Serialize;
use std::process::Stdio;

/// `bench tx --against xdp-trafficgen`: our sender and xdp-trafficgen (xdp-tools), each alone
/// on the same core at the same nice value, in alternating windows into the same veth, whose
/// peer drops every frame with an XDP program (`wr_drop`) for both.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VsXdpTrafficgenReport {
    pub config: TxBenchConfig,
    /// The xdp-trafficgen binary that ran.
    pub tool: String,
    /// Our frames/s from the veth's `tx_packets` over each window, and their median.
    pub wirerate_rounds: Vec<f64>,
    pub wirerate_pps: f64,
    /// Mean bytes per frame each sender put on the veth (`tx_bytes / tx_packets`, no FCS):
    /// xdp-trafficgen sends IPv6/UDP, whose smallest frame is 62 bytes (66 with FCS), where
    /// ours at 64 B is IPv4, 60 bytes.
    pub wirerate_frame_len: f64,
    pub tool_frame_len: f64,
    pub tool_rounds: Vec<f64>,
    pub tool_pps: f64,
    /// Median nanoseconds our `wr_tx` ran per frame, when the kernel's BPF statistics are on
    /// (`sysctl kernel.bpf_stats_enabled=1`: they add two clock reads to every program run,
    /// xdp-trafficgen's and the dropping peer's too, so rates measured with them on are lower).
    pub wirerate_prog_ns: Option<f64>,
    /// The same windows per second of CPU time each sender's threads got (see [`CpuNormalised`]),
    /// when the kernel's `schedstat` could be read for every window.
    pub cpu: Option<CpuNormalised>,
    /// Ours over theirs (medians).
    pub ratio: f64,
    /// `/proc/loadavg` before and after.
    pub load_before: String,
    pub load_after: String,
}

/// Frames per second of the sender's own CPU time: on a machine shared with other work, each
/// sender gets a varying share of its CPU, and frames per CPU-second compare the senders' cost
/// per frame without that share. The CPU time is the scheduler's run time of the sender's
/// threads (`/proc/…/schedstat`: ours is the sending thread, xdp-trafficgen's all of its
/// threads), which includes the softirq work done in their context (the veth peer's NAPI and
/// its XDP drop) but not work deferred to `ksoftirqd`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CpuNormalised {
    /// Median share of the window each sender ran (1.0 = the whole CPU).
    pub wirerate_share: f64,
    pub tool_share: f64,
    /// Medians of frames per CPU-second, and their ratio (ours over theirs).
    pub wirerate_pps_per_cpu: f64,
    pub tool_pps_per_cpu: f64,
    pub ratio: f64,
    pub wirerate_rounds: Vec<f64>,
    pub tool_rounds: Vec<f64>,
}

/// One window of xdp-trafficgen in UDP mode on the sending end, pinned like our sender, or why
/// it gave no figure.
fn measure_xdp_trafficgen(
    net: &BenchNet,
    cfg: &TxBenchConfig,
    tool: &std::path::Path,
    peer_mac: &str,
) -> Result<std::result::Result<Window, String>> {
    // IPv6/UDP is xdp-trafficgen's only UDP mode, and its `-s` counts the FCS: 66 bytes is
    // its smallest frame (62 on the veth).
    let len = (cfg.frame_len + 4).max(66).to_string();
    let threads = cfg.tx_threads.max(1);
    let cpus: Vec<usize> = (cfg.cpu..cfg.cpu + threads).collect();
    let (tool_arg, threads_arg) = (tool.to_string_lossy(), threads.to_string());
    let argv = [
        "nice",
        "-n",
        "-10",
        tool_arg.as_ref(),
        "udp",
        "-m",
        peer_mac,
        "-a",
        "2001:db8::2",
        "-A",
        "2001:db8::1",
        "-s",
        len.as_str(),
        "-t",
        threads_arg.as_str(),
        net.tx_if(),
    ];
    let mut c = lab::netns::command(net.tx_netns(), &argv, &cpus).map_err(lab_failed)?;
    c.stdout(Stdio::null()).stderr(Stdio::piped());
    let mut tg = PeerProcess::spawn(c, tool)?;
    let pid = tg.child.id();
    let rate = counter_window(net, cfg.warmup, cfg.duration, &|| process_cpu_ns(pid));
    if let Ok(Some(st)) = tg.child.try_wait() {
        let err = tg.stderr_text();
        return Ok(Err(format!("xdp-trafficgen exited early ({st}): {}", err)));
    }
    tg.kill_group();
    Ok(Ok(rate?))
}

/// `wirerate bench tx --against xdp-trafficgen`: `rounds` alternating windows of our sender on
/// `cfg.backend` and of `tool`, the peer dropping with XDP for both; medians and their ratio.
pub fn tx_against_xdp_trafficgen(
    cfg: &TxBenchConfig,
    tag: &str,
    tool: &std::path::Path,
) -> Result<VsXdpTrafficgenReport> {
    let load_before = loadavg();
    let net = BenchNet::with_queues(tag, true, cfg.rps_cpu, cfg.tx_threads.max(1))?;
    let drop_port = net.rx_port(None);
    let _drop = engine::xdp::tx::XdpDrop::attach(&drop_port)?;
    let mac = net.rx_mac()?;
    let frame = bench_frame(cfg.frame_len, 1)?;
    let (mut ours, mut our_len, mut theirs, mut their_len) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut prog_ns = Vec::new();
    let (mut our_cpu, mut their_cpu) = (Vec::new(), Vec::new());
    for _ in 0..cfg.rounds.max(1) {
        let (w, rep) = measure_ours_window(&net, cfg, cfg.backend, &frame)?;
        ours.push(w.pps);
        our_cpu.extend(CpuShare::of(&w));
        prog_ns.extend(rep.prog_ns_per_frame);
        // Our frame length is the template's (the counter window is of our own frames).
        our_len.push(frame.len() as f64);
        match measure_xdp_trafficgen(&net, cfg, tool, &mac)? {
            Ok(w) => {
                theirs.push(w.pps);
                their_len.push(w.len);
                their_cpu.extend(CpuShare::of(&w));
            }
            Err(e) => return Err(Error::Config(e)),
        }
    }
    let (wirerate_pps, tool_pps) = (median(&ours), median(&theirs));
    let per_cpu = |v: &[CpuShare]| median(&v.iter().map(|c| c.pps_per_cpu).collect::<Vec<_>>());
    let share = |v: &[CpuShare]| median(&v.iter().map(|c| c.share).collect::<Vec<_>>());
    let cpu = (our_cpu.len() == theirs.len() && their_cpu.len() == theirs.len()).then(|| {
        let (o, t) = (per_cpu(&our_cpu), per_cpu(&their_cpu));
        CpuNormalised {
            wirerate_share: share(&our_cpu),
            tool_share: share(&their_cpu),
            wirerate_pps_per_cpu: o,
            tool_pps_per_cpu: t,
            ratio: if t > 0.0 { o / t } else { 0.0 },
            wirerate_rounds: our_cpu.iter().map(|c| c.pps_per_cpu).collect(),
            tool_rounds: their_cpu.iter().map(|c| c.pps_per_cpu).collect(),
        }
    });
    Ok(VsXdpTrafficgenReport {
        config: *cfg,
        tool: tool.display().to_string(),
        wirerate_pps,
        wirerate_rounds: ours,
        wirerate_frame_len: median(&our_len),
        tool_frame_len: median(&their_len),
        tool_pps,
        tool_rounds: theirs,
        wirerate_prog_ns: (!prog_ns.is_empty()).then(|| median(&prog_ns)),
        cpu,
        ratio: if tool_pps > 0.0 {
            wirerate_pps / tool_pps
        } else {
            0.0
        },
        load_before,
        load_after: loadavg(),
    })
}
