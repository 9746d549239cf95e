//! `bench rx --against xdp-bench`: our XDP receiver next to the cheapest receiver there is,
//! xdp-tools' `xdp-bench drop -p no-touch` (an XDP program that drops every frame without
//! reading it; `read-data` and `parse-ip` read it first), behind the same sender at the same rate on the same veth, with the receive
//! poll in the same SCHED_FIFO NAPI thread on the same CPU, in alternating rounds.
//!
//! Why: `bench rx` is exact only when the veth refuses none of the N frames, and a veth
//! refuses whenever its receive poll is away for longer than its fixed 256-frame ring lasts,
//! whatever the receiver costs. Frames refused behind a receiver that does no work at all are
//! the floor the machine sets; frames refused behind ours above that floor are what our
//! receiver's own cost adds. One counter decides for both: the frames the XDP sender had the
//! veth accept (N − accepted = refused), and every accepted frame reaches the receiver's
//! program (the peer's `rx_packets` is waited for until it has them all).

use crate::net::{bench_frame, lab_failed, BenchNet};
use crate::peer::PeerProcess;
use crate::rx::{xdp_source, NapiThreads, RxBackend, RxBenchConfig, RxNapi, RxSource};
use crate::window::{loadavg, median};
use engine::unknown::UnknownName;
use engine::{Error, Result};
use serde::Serialize;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How long xdp-bench may take to load and attach its program.
const ATTACH_TIMEOUT: Duration = Duration::from_secs(10);

/// One receiver's figures in one round.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RxRoundFigures {
    /// Frames the veth accepted from the sender (of the N asked).
    pub sent: u64,
    /// N − `sent`: frames the veth refused because its ring was full.
    pub refused: u64,
    /// Flushes in which the veth refused frames.
    pub refusal_events: u64,
    /// The sender's achieved rate.
    pub source_pps: f64,
    /// Frames the receiver counted: ours, its distinct sequence numbers plus duplicates;
    /// xdp-bench, the "Packets received" of its summary (it counts every frame it sees, the
    /// veth's few foreign frames too), `None` when it printed none.
    pub counted: Option<u64>,
    /// Ours only: every frame put on the wire counted exactly once.
    pub counted_once: Option<bool>,
    /// Time the receive NAPI thread was runnable but not running, nanoseconds.
    pub napi_wait_ns: Option<u64>,
}

impl RxRoundFigures {
    /// Refused as a share of the N frames asked.
    pub fn refused_share(&self, frames: u64) -> f64 {
        if frames == 0 {
            0.0
        } else {
            self.refused as f64 / frames as f64
        }
    }
}

/// One round: ours, then xdp-bench.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RxVsRound {
    pub wirerate: RxRoundFigures,
    pub tool: RxRoundFigures,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VsXdpBenchReport {
    pub config: RxBenchConfig,
    /// The xdp-bench binary that ran, and what its `drop` program did to each frame.
    pub tool: String,
    pub tool_op: XdpBenchOp,
    pub rounds: Vec<RxVsRound>,
    /// Medians over the rounds of the refused share (refused / N) behind each receiver.
    pub wirerate_refused_share: f64,
    pub tool_refused_share: f64,
    /// Our receiver counted every frame put on the wire exactly once in every round (its
    /// correctness; refusals are the measurement).
    pub counted_once_every_round: bool,
    pub load_before: String,
    pub load_after: String,
}

/// What xdp-bench's `drop` program does to a frame before dropping it (its `-p`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum XdpBenchOp {
    /// Nothing: the least a receiver can do, so the frames refused behind it are the floor.
    #[default]
    NoTouch,
    /// Reads the frame's first bytes: the cache miss every receiver that looks at a frame
    /// written on another CPU pays.
    ReadData,
    /// Parses the Ethernet and IP headers.
    ParseIp,
}

impl XdpBenchOp {
    pub fn name(self) -> &'static str {
        match self {
            XdpBenchOp::NoTouch => "no-touch",
            XdpBenchOp::ReadData => "read-data",
            XdpBenchOp::ParseIp => "parse-ip",
        }
    }
}

impl std::str::FromStr for XdpBenchOp {
    type Err = UnknownName;
    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        [
            XdpBenchOp::NoTouch,
            XdpBenchOp::ReadData,
            XdpBenchOp::ParseIp,
        ]
        .into_iter()
        .find(|o| o.name() == s)
        .ok_or_else(|| {
            UnknownName::new(
                "xdp-bench packet operation",
                s,
                "no-touch, read-data, parse-ip",
            )
        })
    }
}

/// `wirerate bench rx --backend xdp --source xdp --against xdp-bench`: `rounds` alternating
/// rounds of our receiver and of `tool` behind the same paced (or unpaced) XDP sender.
pub fn rx_against_xdp_bench(
    cfg: &RxBenchConfig,
    tag: &str,
    tool: &Path,
    op: XdpBenchOp,
    rounds: u32,
) -> Result<VsXdpBenchReport> {
    if cfg.backend != RxBackend::Xdp || cfg.source != RxSource::Xdp || cfg.napi != RxNapi::Thread {
        return Err(Error::Config(
            "bench rx --against xdp-bench compares XDP receivers behind the XDP sender: give \
             --backend xdp --source xdp (and the default NAPI thread)"
                .into(),
        ));
    }
    let load_before = loadavg();
    let mut out = Vec::new();
    for _ in 0..rounds.max(1) {
        let ours = crate::rx::rx(cfg, tag)?;
        let wirerate = RxRoundFigures {
            sent: ours.sent,
            refused: ours.refused,
            refusal_events: ours.source.map_or(0, |s| s.refusal_events),
            source_pps: ours.source_pps.unwrap_or(0.0),
            counted: Some(ours.counted),
            counted_once: Some(ours.counted_once),
            napi_wait_ns: ours.napi_sched.map(|s| s.wait_ns),
        };
        let tool = xdp_bench_round(cfg, tag, tool, op)?;
        out.push(RxVsRound { wirerate, tool });
    }
    let share = |f: &dyn Fn(&RxVsRound) -> &RxRoundFigures| {
        median(
            &out.iter()
                .map(|r| f(r).refused_share(cfg.frames))
                .collect::<Vec<_>>(),
        )
    };
    Ok(VsXdpBenchReport {
        config: *cfg,
        tool: tool.display().to_string(),
        tool_op: op,
        wirerate_refused_share: share(&|r| &r.wirerate),
        tool_refused_share: share(&|r| &r.tool),
        counted_once_every_round: out.iter().all(|r| r.wirerate.counted_once == Some(true)),
        rounds: out,
        load_before,
        load_after: loadavg(),
    })
}

/// One round with xdp-bench's program on the receiving veth instead of ours: the same
/// namespace layout, NAPI thread and sender as `bench rx --backend xdp --source xdp`.
fn xdp_bench_round(
    cfg: &RxBenchConfig,
    tag: &str,
    tool: &Path,
    op: XdpBenchOp,
) -> Result<RxRoundFigures> {
    let net = BenchNet::new(tag, false, None)?;
    let frame = bench_frame(cfg.frame_len, 2)?;
    // `-i 60`: only the summary it prints when interrupted is read; a long interval keeps it
    // from writing a line a second into a pipe nobody reads meanwhile.
    let tool_arg = tool.to_string_lossy();
    let argv = [
        tool_arg.as_ref(),
        "drop",
        "-p",
        op.name(),
        "-i",
        "60",
        net.rx_if(),
    ];
    let mut c = lab::netns::command(net.rx_netns(), &argv, &[]).map_err(lab_failed)?;
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut xb = PeerProcess::spawn(c, tool)?;
    wait_attached(&net, &mut xb, tool)?;
    let napi = NapiThreads::pin(&net, cfg)?;
    let rx0 = net.rx_counter("rx_packets")?;
    let (sent, pps, facts) = xdp_source(&net, &frame, cfg)?;
    // Every accepted frame reaches the program; wait until the peer has polled them all.
    engine::settle::until_count(sent, || Ok::<_, Error>(net.rx_counter("rx_packets")? - rx0))?;
    let napi_wait_ns = napi.sched().map(|t| t.wait_ns);
    xb.kill_group();
    let text = xb.stdout_text();
    Ok(RxRoundFigures {
        sent,
        refused: cfg.frames.saturating_sub(sent),
        refusal_events: facts.refusal_events,
        source_pps: pps,
        counted: packets_received(&text),
        counted_once: None,
        napi_wait_ns,
    })
}

/// Waits until the receiving veth carries an XDP program (xdp-bench attached it), or says why
/// not: xdp-bench exited (its error), or [`ATTACH_TIMEOUT`] passed.
fn wait_attached(net: &BenchNet, xb: &mut PeerProcess, tool: &Path) -> Result<()> {
    let t0 = Instant::now();
    loop {
        if net.rx_has_xdp()? {
            return Ok(());
        }
        if let Ok(Some(st)) = xb.child.try_wait() {
            let err = match xb.stderr_text() {
                e if e.is_empty() => "it printed nothing".to_string(),
                e => e,
            };
            return Err(Error::Config(format!(
                "{} exited before attaching its program ({st}): {err}; is it xdp-tools' \
                 xdp-bench, version 1.6 or later? (Debian's 1.3.1 cannot load its programs on \
                 new kernels)",
                tool.display(),
            )));
        }
        if t0.elapsed() > ATTACH_TIMEOUT {
            return Err(Error::Config(format!(
                "{} did not attach an XDP program to {} within {} s",
                tool.display(),
                net.rx_if(),
                ATTACH_TIMEOUT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// "Packets received : N" from xdp-bench's closing summary.
fn packets_received(summary: &str) -> Option<u64> {
    summary.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "Packets received")
            .then(|| v.trim().parse().ok())
            .flatten()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xdp_bench_summary_gives_its_received_count() {
        let s = "Dropping packets on wrb1 (ifindex 2; driver veth)\n\
                 Summary                 2 rx/s                  0 err/s\n\
                 \x20 Duration            : 2.0s\n\
                 \x20 Packets received    : 9812345   \n\
                 \x20 Average packets/s   : 2\n\
                 \x20 Rx dropped          : 9812345\n";
        assert_eq!(packets_received(s), Some(9_812_345));
        assert_eq!(packets_received("Dropping packets on wrb1\n"), None);
        assert_eq!(packets_received("  Packets received    : many\n"), None);
    }

    #[test]
    fn packet_operations_are_xdp_bench_s_own_words() {
        for op in [
            XdpBenchOp::NoTouch,
            XdpBenchOp::ReadData,
            XdpBenchOp::ParseIp,
        ] {
            assert_eq!(op.name().parse::<XdpBenchOp>(), Ok(op));
        }
        let e = "swap".parse::<XdpBenchOp>().unwrap_err().to_string();
        assert!(e.contains("no-touch, read-data, parse-ip"), "{e}");
    }

    #[test]
    fn refused_share_is_of_the_frames_asked() {
        let f = RxRoundFigures {
            sent: 9_000,
            refused: 1_000,
            refusal_events: 3,
            source_pps: 1e6,
            counted: None,
            counted_once: None,
            napi_wait_ns: None,
        };
        assert!((f.refused_share(10_000) - 0.1).abs() < 1e-12);
        assert_eq!(f.refused_share(0), 0.0);
    }
}
