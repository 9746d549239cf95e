//! Measuring the tester itself, side by side with trafgen (netsniff-ng).
//!
//! - [`tx`]: our sender, one core, 64-byte signed frames, into a veth whose peer drops every
//!   frame at nftables netdev ingress; then trafgen with the same static frame on the same veth
//!   for the same time, on the same core at the same nice value (−10, as our threads). Both rates come from the veth's `tx_packets` counter over the same kind
//!   of window (after a warm-up); ours is cross-checked with our own exact accepted count.
//!   With the XDP backend the peer drops with an XDP program (`wr_drop`, which also gives the
//!   veth the NAPI it needs to accept XDP frames) for both senders, and trafgen gets one more
//!   window per round on the nftables peer without NAPI (its best case). `tx_packets` counts
//!   XDP frames (the peer's `xdp_packets`) and skbs alike, each once.
//! - [`rx`]: trafgen sends exactly N signed frames at full speed into a veth; our receiver on
//!   the peer must count exactly N.
//! - [`rx_against_xdp_bench`] (`rx_against`): our XDP receiver and xdp-tools' `xdp-bench
//!   drop` behind the same XDP sender at the same rate: the frames the veth refuses behind a
//!   receiver that does no work are the floor the machine sets.
//!
//! The fixture ([`BenchNet`]) is a namespace `wr-bench-<pid>` with one veth pair
//! `wrb0`/`wrb1`, removed on drop. External tools run through `ip netns exec`.

use crate::port::{PortSpec, RxRingConfig, TxRingConfig};
use crate::rx::Receiver;
use crate::stream::{FrameGen, Limit, Rate, StreamConfig};
use crate::sys;
use crate::tx::TxBackend;
use crate::xdp::rx_napi::SchedTimes;
use crate::{Error, Result};
use serde::Serialize;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use wire::template::FrameTemplate;

mod rx_against;
pub use rx_against::{
    rx_against_xdp_bench, RxRoundFigures, RxVsRound, VsXdpBenchReport, XdpBenchOp,
};

fn run_cmd(argv: &[&str], stdin: Option<&str>) -> Result<String> {
    let mut c = Command::new(argv[0]);
    c.args(&argv[1..])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if stdin.is_some() {
        c.stdin(Stdio::piped());
    }
    let mut child = c
        .spawn()
        .map_err(|e| Error::io(format!("running {}", argv[0]), e))?;
    if let Some(s) = stdin {
        child
            .stdin
            .take()
            .expect("piped")
            .write_all(s.as_bytes())
            .map_err(|e| Error::io("stdin", e))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| Error::io(format!("waiting for {}", argv[0]), e))?;
    if !out.status.success() {
        return Err(Error::Config(format!(
            "`{}` failed: {}",
            argv.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A private namespace with one veth pair; removed on drop.
#[derive(Debug)]
pub struct BenchNet {
    pub netns: String,
    /// The sending side.
    pub tx_if: String,
    /// The peer (drops at ingress in the TX bench, receives in the RX bench).
    pub rx_if: String,
}

impl BenchNet {
    /// Creates `wr-bench-<tag>` with `wrb0` ⇄ `wrb1`; with `drop_at_peer` an nftables netdev
    /// ingress chain on `wrb1` drops everything. `rps_cpu` steers `wrb1`'s receive processing
    /// to that CPU (RPS), so it does not run on the sender's core.
    pub fn new(tag: &str, drop_at_peer: bool, rps_cpu: Option<usize>) -> Result<Self> {
        Self::with_queues(tag, drop_at_peer, rps_cpu, 1)
    }

    /// [`BenchNet::new`] with `queues` TX and RX queues on each end of the veth (a veth's XDP
    /// frames go to the peer's queue of the sending CPU: one per sender thread).
    pub fn with_queues(
        tag: &str,
        drop_at_peer: bool,
        rps_cpu: Option<usize>,
        queues: usize,
    ) -> Result<Self> {
        let netns = format!("wr-bench-{tag}");
        let _ = run_cmd(&["ip", "netns", "del", &netns], None);
        run_cmd(&["ip", "netns", "add", &netns], None)?;
        let net = BenchNet {
            netns,
            tx_if: "wrb0".into(),
            rx_if: "wrb1".into(),
        };
        let ns = net.netns.as_str();
        let q = queues.max(1).to_string();
        run_cmd(
            &[
                "ip",
                "-n",
                ns,
                "link",
                "add",
                "wrb0",
                "numtxqueues",
                &q,
                "numrxqueues",
                &q,
                "type",
                "veth",
                "peer",
                "name",
                "wrb1",
                "numtxqueues",
                &q,
                "numrxqueues",
                &q,
            ],
            None,
        )?;
        run_cmd(&["ip", "-n", ns, "link", "set", "wrb0", "up"], None)?;
        run_cmd(&["ip", "-n", ns, "link", "set", "wrb1", "up"], None)?;
        // No IPv6 autoconfiguration chatter on the measured link.
        let _ = run_cmd(
            &[
                "ip",
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                "net.ipv6.conf.all.disable_ipv6=1",
            ],
            None,
        );
        if drop_at_peer {
            run_cmd(
                &["ip", "netns", "exec", ns, "nft", "-f", "-"],
                Some(
                    "table netdev wr_bench {\n chain in {\n  type filter hook ingress device \"wrb1\" priority 0; policy drop;\n }\n}\n",
                ),
            )?;
        }
        if let Some(cpu) = rps_cpu {
            let mask = format!("{:x}", 1u64 << cpu);
            run_cmd(
                &[
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    "sh",
                    "-c",
                    &format!("echo {mask} > /sys/class/net/wrb1/queues/rx-0/rps_cpus"),
                ],
                None,
            )?;
        }
        Ok(net)
    }

    /// `tx_packets` (or another counter) of an interface in the namespace.
    pub fn counter(&self, ifname: &str, name: &str) -> Result<u64> {
        let s = run_cmd(
            &[
                "ip",
                "netns",
                "exec",
                &self.netns,
                "cat",
                &format!("/sys/class/net/{ifname}/statistics/{name}"),
            ],
            None,
        )?;
        s.trim()
            .parse()
            .map_err(|_| Error::Config(format!("unreadable counter {name}: {s}")))
    }

    pub fn port(&self, ifname: &str, cpu: Option<usize>) -> PortSpec {
        let mut p = PortSpec::new(ifname, ifname);
        p.netns = Some(self.netns.clone());
        p.cpus = cpu.into_iter().collect();
        p
    }
}

impl Drop for BenchNet {
    fn drop(&mut self) {
        let _ = run_cmd(&["ip", "netns", "del", &self.netns], None);
    }
}

/// A 64-byte-class signed IPv4/UDP frame (no FCS) for benches: `len` bytes, stream `id`.
pub fn bench_frame(len: usize, id: u16) -> Result<FrameTemplate> {
    let mut spec = wire::template::StreamSpec::new(wire::encap::EncapSpec::default());
    spec.stream_id = id;
    FrameTemplate::new(&spec, len + 4).map_err(|e| Error::Config(e.to_string()))
}

/// What the bench receivers require of the bench stream's frames (as a trial's would: the
/// frame's headers, destination and a sequence number below `frames`), so that `bench rx`
/// measures the receive path with its validation.
fn bench_expect(frame: &FrameTemplate, frames: u64) -> crate::validate::Expect {
    let cfg = StreamConfig::single(2, frame.clone(), Rate::Unlimited, Limit::Frames(frames));
    crate::validate::Expect::of(&cfg)
}

/// A trafgen configuration sending `frame` unchanged.
pub fn trafgen_config(frame: &[u8]) -> String {
    let bytes: Vec<String> = frame.iter().map(|b| format!("0x{b:02x}")).collect();
    format!("{{ {} }}\n", bytes.join(", "))
}

/// trafgen (or xdp-trafficgen, xdp-bench) running in its own process group (its children die
/// with it), with its configuration file if it has one.
struct Trafgen {
    child: Child,
    _cfg: Option<tempfile_lite::TempFile>,
}

mod tempfile_lite {
    /// A file under /tmp removed on drop.
    pub struct TempFile(pub std::path::PathBuf);
    impl Drop for TempFile {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

impl Trafgen {
    fn spawn(
        net: &BenchNet,
        ifname: &str,
        frame: &[u8],
        cpu: usize,
        count: Option<u64>,
    ) -> Result<Self> {
        let path =
            std::env::temp_dir().join(format!("wr-trafgen-{}-{}.cfg", std::process::id(), ifname));
        std::fs::write(&path, trafgen_config(frame))
            .map_err(|e| Error::io("writing trafgen config", e))?;
        let cfg = tempfile_lite::TempFile(path);
        let mut c = Command::new("ip");
        // The same core and nice value as our sender threads (`PortSpec::enter`: nice −10), so
        // that neither gets more of a shared CPU than the other.
        c.args([
            "netns",
            "exec",
            &net.netns,
            "nice",
            "-n",
            "-10",
            "taskset",
            "-c",
            &cpu.to_string(),
            "trafgen",
        ]);
        // One process, no CPU statistics; qdisc bypass is trafgen's default.
        c.args(["-o", ifname, "-i"])
            .arg(&cfg.0)
            .args(["-P", "1", "-C"]);
        if let Some(n) = count {
            c.args(["-n", &n.to_string()]);
        }
        c.stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0);
        let child = c
            .spawn()
            .map_err(|e| Error::io("starting trafgen (is netsniff-ng installed?)", e))?;
        Ok(Trafgen {
            child,
            _cfg: Some(cfg),
        })
    }

    /// Starts `c` (a measuring tool, usually under `ip netns exec`) in a process group of its
    /// own, so that it and its children are killed on every way out (see `Drop`). `tool`
    /// names it in the error.
    fn spawn_tool(mut c: Command, tool: &std::path::Path) -> Result<Self> {
        let child = c
            .process_group(0)
            .spawn()
            .map_err(|e| Error::io(format!("starting {}", tool.display()), e))?;
        Ok(Trafgen { child, _cfg: None })
    }

    /// What it wrote to its (piped) standard error, once it has exited; empty if not piped.
    fn stderr_text(&mut self) -> String {
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        err.trim().to_string()
    }

    fn kill_group(&mut self) {
        let pgid = self.child.id() as i32;
        let quiet = |sig: &str| {
            let _ = Command::new("kill")
                .args([sig, "--", &format!("-{pgid}")])
                .stderr(Stdio::null())
                .status();
        };
        quiet("-INT");
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        quiet("-KILL");
        let _ = self.child.wait();
    }
}

impl Drop for Trafgen {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill_group();
        }
    }
}

/// Our sender in `bench tx`: one of the AF_PACKET backends ([`TxBackend`]) or XDP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TxBenchBackend {
    /// The AF_PACKET TX ring (the AF_PACKET default).
    #[default]
    Ring,
    /// AF_PACKET `sendmmsg`.
    Sendmmsg,
    /// The XDP sender ([`crate::xdp::tx`]). The peer then drops with an XDP program (`wr_drop`)
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
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "xdp" => Ok(TxBenchBackend::Xdp),
            // `af_packet` means the AF_PACKET default, the TX ring.
            "af_packet" | "af-packet" | "afpacket" => Ok(TxBenchBackend::Ring),
            _ => match s.parse::<TxBackend>() {
                Ok(TxBackend::Ring) => Ok(TxBenchBackend::Ring),
                Ok(TxBackend::Sendmmsg) => Ok(TxBenchBackend::Sendmmsg),
                Err(_) => Err(format!(
                    "unknown TX backend {s:?} (ring, sendmmsg, af_packet = ring, xdp)"
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

fn counter_rate(net: &BenchNet, warmup: Duration, window: Duration) -> Result<f64> {
    counter_window(net, warmup, window, &|| None).map(|w| w.pps)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    }
}

/// One window of our sender on `backend`: (counter rate, our report).
fn measure_ours(
    net: &BenchNet,
    cfg: &TxBenchConfig,
    backend: TxBenchBackend,
    frame: &FrameTemplate,
) -> Result<(f64, crate::tx::TxPortReport)> {
    measure_ours_window(net, cfg, backend, frame).map(|(w, rep)| (w.pps, rep))
}

/// One window of our sender on `backend`, with the CPU time of its sending thread over the
/// window: (window, our report).
fn measure_ours_window(
    net: &BenchNet,
    cfg: &TxBenchConfig,
    backend: TxBenchBackend,
    frame: &FrameTemplate,
) -> Result<(Window, crate::tx::TxPortReport)> {
    // Long enough for any start-up delay: `stop` ends the sender right after the window.
    let limit =
        Limit::DurationNs((cfg.warmup + cfg.duration + Duration::from_secs(15)).as_nanos() as u64);
    let stream = StreamConfig {
        rewrite_macs: false,
        ..StreamConfig::single(1, frame.clone(), Rate::Unlimited, limit)
    };
    let port = net.port(&net.tx_if, Some(cfg.cpu));
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
                let port = net.port(&net.tx_if, Some(cfg.cpu + 1 + i));
                let stop = &stop;
                sc.spawn(move || -> Result<_> {
                    t.store(crate::xdp::sys::gettid(), Ordering::Relaxed);
                    xdp_run_with_stats(&port, st, stop)
                })
            })
            .collect();
        let h = sc.spawn(|| -> Result<_> {
            tid.store(crate::xdp::sys::gettid(), Ordering::Relaxed);
            let Some(backend) = backend.af_packet() else {
                return xdp_run_with_stats(&port, &stream, &stop);
            };
            let ifindex = port.enter(0)?;
            let mut sender = crate::tx::open(
                &port,
                ifindex,
                &TxRingConfig::default(),
                backend,
                frame.len(),
            )?;
            let gen = FrameGen::new(&stream)?;
            crate::tx::run(
                &mut sender,
                vec![(gen, &stream)],
                sys::monotonic_ns(),
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

/// One measurement window: frames/s and bytes/frame from the veth's `tx_packets`/`tx_bytes`,
/// and the CPU time the sender's own threads got during it (`schedstat`'s run time; with no
/// separate IRQ time accounting in the kernel, the softirq work that runs in the sender's
/// context, the dropping peer's NAPI included, is charged to it).
#[derive(Debug, Clone, Copy)]
struct Window {
    pps: f64,
    len: f64,
    frames: u64,
    secs: f64,
    cpu_secs: Option<f64>,
}

/// The nanoseconds on a CPU in a `schedstat` file.
fn task_cpu_ns(path: &str) -> Option<u64> {
    SchedTimes::read(path).map(|t| t.run_ns)
}

/// The CPU time of every thread of process `pid` (ns).
fn process_cpu_ns(pid: u32) -> Option<u64> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut sum = 0;
    for e in dir.flatten() {
        sum += task_cpu_ns(&format!("{}/schedstat", e.path().display()))?;
    }
    Some(sum)
}

/// `tx_packets`, `tx_bytes` and the sender's CPU time (`cpu`) over one window after the
/// warm-up.
fn counter_window(
    net: &BenchNet,
    warmup: Duration,
    window: Duration,
    cpu: &dyn Fn() -> Option<u64>,
) -> Result<Window> {
    // The warm-up starts when the sender does: loading and verifying a sender's programs takes
    // a varying part of a second on a loaded machine, and must not fall into the window.
    let start = net.counter(&net.tx_if, "tx_packets")?;
    let give_up = Instant::now() + Duration::from_secs(10);
    while net.counter(&net.tx_if, "tx_packets")? < start + 1000 && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(warmup);
    let b0 = net.counter(&net.tx_if, "tx_bytes")?;
    let p0 = net.counter(&net.tx_if, "tx_packets")?;
    let c0 = cpu();
    let t0 = Instant::now();
    std::thread::sleep(window);
    let c1 = cpu();
    let dt = t0.elapsed().as_secs_f64();
    let p1 = net.counter(&net.tx_if, "tx_packets")?;
    let b1 = net.counter(&net.tx_if, "tx_bytes")?;
    let frames = p1.saturating_sub(p0);
    let len = if frames > 0 {
        b1.saturating_sub(b0) as f64 / frames as f64
    } else {
        0.0
    };
    Ok(Window {
        pps: frames as f64 / dt,
        len,
        frames,
        secs: dt,
        cpu_secs: match (c0, c1) {
            (Some(a), Some(b)) if b > a => Some((b - a) as f64 / 1e9),
            _ => None,
        },
    })
}

/// The XDP sender on `port` (as [`crate::xdp::tx::run_port`]), with the nanoseconds `wr_tx`
/// ran per frame put into the report's `prog_ns_per_frame` when BPF statistics are on.
fn xdp_run_with_stats(
    port: &PortSpec,
    stream: &StreamConfig,
    stop: &AtomicBool,
) -> Result<crate::tx::TxPortReport> {
    let ifindex = port.enter(0)?;
    let gens = vec![(FrameGen::new(stream)?, stream)];
    let mut sender = crate::xdp::tx::open(port, ifindex, &gens)?;
    let before = sender.run_stats();
    let mut rep = crate::xdp::tx::run(&mut sender, gens, sys::monotonic_ns(), stop)?;
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
    let mut tg = Trafgen::spawn(net, &net.tx_if, frame.bytes(), cfg.cpu, None)?;
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
    let drop_port = net.port(&net.rx_if, None);
    let mut xdp_drop = if xdp {
        Some(crate::xdp::tx::XdpDrop::attach(&drop_port)?)
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
        own.push(rep.streams[0].achieved_pps);
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
            xdp_drop = Some(crate::xdp::tx::XdpDrop::attach(&drop_port)?);
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

/// One window's CPU share and frames per CPU-second.
struct CpuShare {
    share: f64,
    pps_per_cpu: f64,
}

impl CpuShare {
    fn of(w: &Window) -> Option<CpuShare> {
        let c = w.cpu_secs?;
        Some(CpuShare {
            share: c / w.secs,
            pps_per_cpu: w.frames as f64 / c,
        })
    }
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

/// One window of xdp-trafficgen in UDP mode on `net.tx_if`, pinned like our sender, or why it
/// gave no figure.
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
    let cpu = (cfg.cpu..cfg.cpu + threads)
        .map(|c| c.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let mut c = Command::new("ip");
    c.args([
        "netns", "exec", &net.netns, "nice", "-n", "-10", "taskset", "-c", &cpu,
    ])
    .arg(tool)
    .args([
        "udp",
        "-m",
        peer_mac,
        "-a",
        "2001:db8::2",
        "-A",
        "2001:db8::1",
        "-s",
        &len,
        "-t",
        &threads.to_string(),
    ])
    .arg(&net.tx_if)
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    let mut tg = Trafgen::spawn_tool(c, tool)?;
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
    let drop_port = net.port(&net.rx_if, None);
    let _drop = crate::xdp::tx::XdpDrop::attach(&drop_port)?;
    let mac = run_cmd(
        &[
            "ip",
            "netns",
            "exec",
            &net.netns,
            "cat",
            &format!("/sys/class/net/{}/address", net.rx_if),
        ],
        None,
    )?
    .trim()
    .to_string();
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

/// Which receiver `bench rx` measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RxBackend {
    /// The TPACKET_V3 RX ring ([`crate::rx::Receiver`]).
    #[default]
    AfPacket,
    /// The XDP program counting in maps ([`crate::xdp::rx::XdpReceiver`]).
    Xdp,
}

impl std::str::FromStr for RxBackend {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "af_packet" | "af-packet" | "afpacket" => Ok(RxBackend::AfPacket),
            "xdp" => Ok(RxBackend::Xdp),
            _ => Err(format!("unknown RX backend {s:?} (af_packet, xdp)")),
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
    /// wirerate's XDP sender ([`crate::xdp::tx`]), unpaced, N frames with consecutive
    /// sequence numbers.
    Xdp,
}

impl std::str::FromStr for RxSource {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "trafgen" => Ok(RxSource::Trafgen),
            "xdp" => Ok(RxSource::Xdp),
            _ => Err(format!("unknown RX bench source {s:?} (trafgen, xdp)")),
        }
    }
}

/// Where the XDP receiver's work runs: the receiving veth's NAPI poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RxNapi {
    /// A NAPI thread of its own ([`crate::xdp::rx_napi`]), pinned to `rx_cpu` (default: the
    /// sender's CPU), SCHED_FIFO: it empties the veth's ring after every batch the sender
    /// hands over, whatever else the CPU has to run.
    #[default]
    Thread,
    /// The kernel's default: a softirq on the sender's CPU, which leaves the rest of the ring
    /// to `ksoftirqd` when another task wants the CPU (the veth then refuses frames).
    Softirq,
}

impl std::str::FromStr for RxNapi {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "thread" => Ok(RxNapi::Thread),
            "softirq" => Ok(RxNapi::Softirq),
            _ => Err(format!("unknown receive NAPI mode {s:?} (thread, softirq)")),
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
    pub wait: Option<crate::rx::LatencyReport>,
    /// XDP backend: how the program ran (native or SKB mode) and why, if not native.
    pub xdp_mode: Option<crate::xdp::rx::XdpMode>,
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

/// What `bench rx` checks, from its counts alone (so that a test can show it fails when a
/// frame is counted twice or missed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RxVerdict {
    /// Every frame put on the wire was counted exactly once: counted = sent, and when the
    /// source numbers its frames, distinct sequence numbers = sent and no duplicates.
    pub counted_once: bool,
    /// [`Self::counted_once`] and sent = N (the veth refused none).
    pub exact: bool,
}

impl RxVerdict {
    /// `numbered`: the source gives every frame its own sequence number (the XDP sender;
    /// trafgen repeats one frame).
    pub fn of(
        frames: u64,
        sent: u64,
        counted: u64,
        distinct: u64,
        duplicates: u64,
        numbered: bool,
    ) -> RxVerdict {
        let distinct_ok = !numbered || (distinct == sent && duplicates == 0);
        let counted_once = counted == sent && distinct_ok;
        RxVerdict {
            counted_once,
            exact: counted_once && sent == frames,
        }
    }
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
        sys::allowed_cpus()
            .ok()?
            .into_iter()
            .find(|&c| c != cfg.tx_cpu)
    });
    let port = net.port(&net.rx_if, rx_cpu);
    let expect = bench_expect(&frame, cfg.frames);
    let stop = AtomicBool::new(false);
    let tx0 = net.counter(&net.tx_if, "tx_packets")?;
    let drop0 = net.counter(&net.rx_if, "rx_dropped")?;
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
        let mut tg = Trafgen::spawn(
            &net,
            &net.tx_if,
            frame.bytes(),
            cfg.tx_cpu,
            Some(cfg.frames),
        )?;
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
    let sent = net.counter(&net.tx_if, "tx_packets")? - tx0;
    let peer_rx_dropped = net.counter(&net.rx_if, "rx_dropped")? - drop0;
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
struct NapiThreads {
    tids: Vec<libc::pid_t>,
    cpu: usize,
    before: Option<SchedTimes>,
}

impl NapiThreads {
    /// On `cfg.rx_cpu`, by default the sender's CPU. The veth must already run NAPI (an XDP
    /// program attached to it).
    fn pin(net: &BenchNet, cfg: &RxBenchConfig) -> Result<Self> {
        let cpu = cfg.rx_cpu.unwrap_or(cfg.tx_cpu);
        let tids = crate::xdp::rx_napi::thread_on_cpu(Some(&net.netns), &net.rx_if, cpu)?;
        let before = SchedTimes::of_threads(&tids);
        Ok(NapiThreads { tids, cpu, before })
    }

    /// Their run time, wait for the CPU and runs since they were pinned.
    fn sched(&self) -> Option<SchedTimes> {
        let before = self.before?;
        SchedTimes::of_threads(&self.tids).map(|t| t.since(&before))
    }
}

/// `bench rx --backend xdp`: the XDP receiver on the peer counts in maps; the source is
/// trafgen or the XDP sender. Exact: see [`RxVerdict`]. The receiving veth's poll runs as
/// `cfg.napi` says (default: a SCHED_FIFO NAPI thread on the sender's CPU).
fn rx_xdp(cfg: &RxBenchConfig, tag: &str) -> Result<RxBenchReport> {
    use crate::xdp::rx::{XdpReceiver, XdpRxConfig};
    let net = BenchNet::new(tag, false, None)?;
    let frame = bench_frame(cfg.frame_len, 2)?;
    let rx = XdpReceiver::attach_with(
        &net.port(&net.rx_if, None),
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
                crate::xdp::rx_napi::NAPI_PRIORITY
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
    let tx0 = net.counter(&net.tx_if, "tx_packets")?;
    let txd0 = net.counter(&net.tx_if, "tx_dropped")?;
    let drop0 = net.counter(&net.rx_if, "rx_dropped")?;
    let t0 = Instant::now();
    let (sent, source_pps, source) = match cfg.source {
        RxSource::Trafgen => {
            let mut tg = Trafgen::spawn(
                &net,
                &net.tx_if,
                frame.bytes(),
                cfg.tx_cpu,
                Some(cfg.frames),
            )?;
            let status = tg
                .child
                .wait()
                .map_err(|e| Error::io("waiting for trafgen", e))?;
            if !status.success() {
                let err = tg.stderr_text();
                return Err(Error::Config(format!("trafgen failed ({status}): {}", err)));
            }
            (net.counter(&net.tx_if, "tx_packets")? - tx0, None, None)
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
    crate::settle::until_count(sent, || {
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
        peer_rx_dropped: net.counter(&net.rx_if, "rx_dropped")? - drop0,
        tx_dropped: net.counter(&net.tx_if, "tx_dropped")? - txd0,
        refused: cfg.frames.saturating_sub(sent),
        napi: Some(napi),
        napi_sched,
        source_pps,
        source,
        wait: source.and(r.latency),
        xdp_mode: Some(rx.mode()),
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
fn xdp_source(
    net: &BenchNet,
    frame: &FrameTemplate,
    cfg: &RxBenchConfig,
) -> Result<(u64, f64, RxSourceFacts)> {
    let rate = cfg.source_pps.map_or(Rate::Unlimited, Rate::Pps);
    let stream = StreamConfig {
        rewrite_macs: false,
        ..StreamConfig::single(2, frame.clone(), rate, Limit::Frames(cfg.frames))
    };
    let port = net.port(&net.tx_if, Some(cfg.tx_cpu));
    let stop = AtomicBool::new(false);
    let rep = std::thread::scope(|s| {
        s.spawn(|| crate::xdp::tx::run_port(&port, std::slice::from_ref(&stream), 0, &stop))
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
    Ok((s.sent, s.achieved_pps, facts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_gives_this_threads_cpu_time_and_it_grows_while_it_runs() {
        let me = format!("/proc/self/task/{}/schedstat", crate::xdp::sys::gettid());
        let a = task_cpu_ns(&me).expect("schedstat of this thread");
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let b = task_cpu_ns(&me).unwrap();
        assert!(b > a, "run time {a} → {b} after 30 ms of spinning");
        assert!(process_cpu_ns(std::process::id()).unwrap() >= b);
        assert_eq!(task_cpu_ns("/proc/self/no-such-file"), None);
    }

    #[test]
    fn rx_verdict_needs_every_frame_on_the_wire_counted_once_and_none_refused() {
        // All 1000 sent, counted once each.
        let ok = RxVerdict::of(1000, 1000, 1000, 1000, 0, true);
        assert!(ok.counted_once && ok.exact);
        // One frame counted twice (another missed): the totals agree, the distinct count not.
        let twice = RxVerdict::of(1000, 1000, 1000, 999, 1, true);
        assert!(!twice.counted_once && !twice.exact);
        // One frame counted twice on top of all the others.
        let extra = RxVerdict::of(1000, 1000, 1001, 1000, 1, true);
        assert!(!extra.counted_once && !extra.exact);
        // One frame put on the wire and never counted.
        let missed = RxVerdict::of(1000, 1000, 999, 999, 0, true);
        assert!(!missed.counted_once && !missed.exact);
        // Two frames refused by the veth: what was sent was counted once, but not exact.
        let refused = RxVerdict::of(1000, 998, 998, 998, 0, true);
        assert!(refused.counted_once && !refused.exact);
        // trafgen repeats one frame: only the total counts.
        let trafgen = RxVerdict::of(1000, 1000, 1000, 1, 999, false);
        assert!(trafgen.counted_once && trafgen.exact);
    }

    #[test]
    fn rx_napi_modes_parse() {
        assert_eq!("thread".parse::<RxNapi>(), Ok(RxNapi::Thread));
        assert_eq!("softirq".parse::<RxNapi>(), Ok(RxNapi::Softirq));
        assert!("busy"
            .parse::<RxNapi>()
            .unwrap_err()
            .contains("thread, softirq"));
        assert_eq!(RxNapi::default(), RxNapi::Thread);
    }

    #[test]
    fn frames_per_cpu_second_and_share_of_a_window() {
        let w = Window {
            pps: 3e6,
            len: 60.0,
            frames: 6_000_000,
            secs: 2.0,
            cpu_secs: Some(1.5),
        };
        let c = CpuShare::of(&w).unwrap();
        assert!((c.share - 0.75).abs() < 1e-12);
        assert!((c.pps_per_cpu - 4e6).abs() < 1e-6);
        let none = Window {
            cpu_secs: None,
            ..w
        };
        assert!(CpuShare::of(&none).is_none());
    }
}
