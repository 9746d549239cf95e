//! `wirerate bench`: measure the tester itself, side by side with trafgen (docs/engine.md).

mod against;
mod print;

use against::{xdp_tool, xdp_trafficgen};

use crate::error::{CliError, CliResult};
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    what: What,
}

#[derive(Debug, clap::Subcommand)]
enum What {
    /// TX frames/s of 64-byte signed frames from one core into a veth whose peer drops at
    /// ingress, then trafgen with the same static frame on the same veth; prints both and
    /// the ratio.
    Tx(TxArgs),
    /// trafgen (or the XDP sender) sends exactly N signed frames at full speed; our receiver
    /// (AF_PACKET ring or XDP) must count exactly N.
    Rx(RxArgs),
}

#[derive(Debug, clap::Args)]
struct TxArgs {
    /// Measurement window per sender, seconds (after a 0.5 s warm-up).
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Frame size with FCS, bytes.
    #[arg(long, default_value_t = 64)]
    size: usize,
    /// CPU both senders run on.
    #[arg(long, default_value_t = 0)]
    cpu: usize,
    /// Steer the dropping peer's receive processing to this CPU (RPS), for both senders.
    #[arg(long)]
    rps_cpu: Option<usize>,
    /// Alternating windows per sender (medians are reported).
    #[arg(long, default_value_t = 3)]
    rounds: u32,
    /// Our TX backend compared with trafgen: ring (the default; af_packet is the same),
    /// sendmmsg, or xdp (the kernel stamps and sends each frame; the peer then drops with an
    /// XDP program, for trafgen too).
    #[arg(long, default_value = "ring")]
    backend: tester_bench::TxBenchBackend,
    /// Also measure our other backend, in the same rounds.
    #[arg(long)]
    both_backends: bool,
    /// Old spelling of `--both-backends` (the sendmmsg sender is now a backend).
    #[arg(long, hide = true)]
    sendmmsg: bool,
    /// The sender to compare with: trafgen (the default), or xdp-trafficgen (xdp-tools ≥ 1.6:
    /// the first on PATH, else shared/tools/xdp-tools/xdp-trafficgen in a folder above the
    /// working directory or this binary; or give it: xdp-trafficgen=PATH, or a path with a
    /// `/`). Against xdp-trafficgen the veth's peer drops with XDP for both senders and both
    /// rates come from the same counter, the sending veth's tx_packets.
    #[arg(
        long,
        default_value = "trafgen",
        value_name = "trafgen|xdp-trafficgen[=PATH]|PATH"
    )]
    against: String,
    /// With --against xdp-trafficgen: sender threads on CPUs --cpu, --cpu + 1, … (ours: one
    /// stream each; xdp-trafficgen: -t N), into a veth with N queues.
    #[arg(long, default_value_t = 1)]
    tx_threads: usize,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, clap::Args)]
struct RxArgs {
    /// Frames the source sends.
    #[arg(short = 'n', long, default_value_t = 1_000_000)]
    frames: u64,
    /// Frame size with FCS, bytes.
    #[arg(long, default_value_t = 64)]
    size: usize,
    /// CPU the source (trafgen or the XDP sender) runs on.
    #[arg(long, default_value_t = 0)]
    tx_cpu: usize,
    /// CPU our receiver runs on. AF_PACKET: the ring's thread (default: the first CPU other
    /// than trafgen's). XDP: the receiving veth's NAPI thread (default: the sender's CPU, see
    /// --rx-napi).
    #[arg(long)]
    rx_cpu: Option<usize>,
    /// XDP only: where the receiving veth's poll (and so the XDP receiver) runs: thread (the
    /// default: a NAPI thread of its own at SCHED_FIFO 50, on --rx-cpu) or softirq (the
    /// kernel's default, on the sender's CPU; it falls behind when other tasks want the CPU
    /// and the veth then refuses frames).
    #[arg(long)]
    rx_napi: Option<tester_bench::RxNapi>,
    /// Our receiver: af_packet (the RX ring, the default) or xdp (a BPF program counting in
    /// maps on the receiving veth).
    #[arg(long, default_value = "af_packet")]
    backend: tester_bench::RxBackend,
    /// What sends the N frames: trafgen (the default), or xdp (wirerate's XDP sender, with
    /// consecutive sequence numbers; needs --backend xdp).
    #[arg(long, default_value = "trafgen")]
    source: tester_bench::RxSource,
    /// XDP source only: send at this rate (frames/s: 4Mpps, 4000000pps; or bit/s: 2.5G)
    /// instead of as fast as it can, e.g. at the median `bench tx --backend xdp` measured: with
    /// a CPU of its own here the sender can outrun the rate it reaches in `bench tx`.
    #[arg(long)]
    rate: Option<String>,
    /// Compare with the cheapest receiver there is: xdp-bench (xdp-tools ≥ 1.6, found like
    /// `bench tx --against xdp-trafficgen`; or xdp-bench=PATH) dropping every frame unread
    /// (`drop -p no-touch`) on the same veth, in the same NAPI thread on the same CPU, behind
    /// the same sender at the same --rate, in alternating --rounds. Frames the veth refuses
    /// behind it are the floor this machine sets; needs --backend xdp --source xdp.
    #[arg(long, value_name = "xdp-bench[=PATH]|PATH")]
    against: Option<String>,
    /// With --against: alternating rounds per receiver (medians are reported; default 3).
    #[arg(long)]
    rounds: Option<u32>,
    /// With --against: what xdp-bench's program does to each frame before dropping it:
    /// no-touch (the default, the floor), read-data (reads the frame: the cache miss of a
    /// frame written on the sender's CPU) or parse-ip.
    #[arg(long, value_name = "no-touch|read-data|parse-ip")]
    xdp_bench_op: Option<tester_bench::XdpBenchOp>,
    #[arg(long)]
    json: bool,
}

/// `--rate` of `bench rx` in frames/s for frames of `size` bytes with FCS. A percentage has
/// no link to be a percentage of here (two veths).
fn source_pps(text: &str, size: usize) -> CliResult<f64> {
    let rate =
        bench::spec::Load::parse(text).map_err(|e| CliError::Usage(format!("--rate: {e}")))?;
    if matches!(rate, bench::spec::Load::LineFraction(_)) {
        return Err(CliError::Usage(format!(
            "--rate '{text}': bench rx has no line rate to take a percentage of; give frames/s \
             (e.g. 4Mpps) or bit/s"
        )));
    }
    // No line rate: a fraction was refused above, so the maximum is never used.
    Ok(rate.pps(wire::units::Pps(0.0), &[(size, 1)]))
}

fn root() -> CliResult {
    if lab::is_root() {
        Ok(())
    } else {
        Err(CliError::Usage(
            "bench needs root (network namespaces, AF_PACKET); run it with sudo".into(),
        ))
    }
}

fn frame_len(size: usize) -> CliResult<usize> {
    if !(64..=1518).contains(&size) {
        return Err(CliError::Usage(format!(
            "--size {size}: give a frame size 64..1518 (with FCS)"
        )));
    }
    Ok(size - 4)
}

fn json<T: serde::Serialize>(v: &T) -> CliResult {
    let s = serde_json::to_string_pretty(v).map_err(|e| CliError::Failed(e.to_string()))?;
    outln!("{s}");
    Ok(())
}

pub fn run(args: BenchArgs) -> CliResult {
    let tag = std::process::id().to_string();
    match args.what {
        What::Tx(a) => {
            if !(a.duration > 0.0 && a.duration <= 600.0) {
                return Err(CliError::Usage("--duration: give 0 < seconds ≤ 600".into()));
            }
            root()?;
            let cfg = tester_bench::TxBenchConfig {
                duration: Duration::from_secs_f64(a.duration),
                frame_len: frame_len(a.size)?,
                cpu: a.cpu,
                rps_cpu: a.rps_cpu,
                backend: a.backend,
                both_backends: a.both_backends || a.sendmmsg,
                rounds: a.rounds.clamp(1, 20),
                tx_threads: a.tx_threads,
                ..Default::default()
            };
            if a.tx_threads == 0
                || (a.tx_threads > 1
                    && (a.against == "trafgen" || a.backend != tester_bench::TxBenchBackend::Xdp))
            {
                return Err(CliError::Usage(
                    "--tx-threads: give N ≥ 1; more than one only with --backend xdp --against xdp-trafficgen".into(),
                ));
            }
            if let Some(tool) = xdp_trafficgen(&a.against)? {
                let r = tester_bench::tx_against_xdp_trafficgen(&cfg, &tag, &tool)
                    .map_err(|e| CliError::Failed(format!("bench tx: {e}")))?;
                if a.json {
                    return json(&r);
                }
                print::tx_against(&a, &cfg, &r);
                return Ok(());
            }
            let r = tester_bench::tx(&cfg, &tag)
                .map_err(|e| CliError::Failed(format!("bench tx: {e}")))?;
            if a.json {
                return json(&r);
            }
            print::tx(&a, &cfg, &r);
            Ok(())
        }
        What::Rx(a) => {
            if a.frames == 0 {
                return Err(CliError::Usage("-n: give at least one frame".into()));
            }
            if a.rx_napi.is_some() && a.backend != tester_bench::RxBackend::Xdp {
                return Err(CliError::Usage(
                    "--rx-napi places the XDP receiver's poll; it needs --backend xdp".into(),
                ));
            }
            against_usage(&a)?;
            let source_pps = a
                .rate
                .as_deref()
                .map(|r| source_pps(r, a.size))
                .transpose()?;
            root()?;
            let cfg = tester_bench::RxBenchConfig {
                frames: a.frames,
                frame_len: frame_len(a.size)?,
                tx_cpu: a.tx_cpu,
                rx_cpu: a.rx_cpu,
                backend: a.backend,
                source: a.source,
                napi: a.rx_napi.unwrap_or_default(),
                source_pps,
            };
            if let Some(against) = &a.against {
                return rx_against(&a, &cfg, against, &tag);
            }
            let r = tester_bench::rx(&cfg, &tag)
                .map_err(|e| CliError::Failed(format!("bench rx: {e}")))?;
            if a.json {
                json(&r)?;
            } else {
                print::rx(&a, &r);
            }
            if r.exact {
                Ok(())
            } else if r.counted_once {
                Err(CliError::Failed(format!(
                    "every frame put on the wire was counted once, but the veth refused {} of {} \
                     frames (sender veth tx_dropped {})",
                    r.refused, a.frames, r.tx_dropped
                )))
            } else {
                Err(CliError::Failed(format!(
                    "counted {} of {} frames put on the wire ({} distinct, {} duplicates)",
                    r.counted, r.sent, r.received, r.duplicates
                )))
            }
        }
    }
}

/// What `--against` and `--xdp-bench-op` of `bench rx` need of the other options (checked
/// before anything is set up).
fn against_usage(a: &RxArgs) -> CliResult {
    if a.against.is_none() {
        if a.xdp_bench_op.is_some() {
            return Err(CliError::Usage(
                "--xdp-bench-op says what xdp-bench does to each frame; it needs --against xdp-bench".into(),
            ));
        }
        if a.rounds.is_some() {
            return Err(CliError::Usage(
                "--rounds alternates our receiver with xdp-bench; it needs --against xdp-bench (without it bench rx makes one run)".into(),
            ));
        }
        return Ok(());
    }
    if a.backend != tester_bench::RxBackend::Xdp || a.source != tester_bench::RxSource::Xdp {
        return Err(CliError::Usage(
            "--against xdp-bench compares XDP receivers behind the XDP sender: add --backend xdp --source xdp".into(),
        ));
    }
    if a.rx_napi == Some(tester_bench::RxNapi::Softirq) {
        return Err(CliError::Usage(
            "--against xdp-bench runs both receivers in a NAPI thread of their own; drop --rx-napi softirq".into(),
        ));
    }
    Ok(())
}

/// `bench rx --against xdp-bench`: fails only when our receiver miscounted in a round (its
/// correctness); the frames the veth refused behind either receiver are the measurement.
fn rx_against(
    a: &RxArgs,
    cfg: &tester_bench::RxBenchConfig,
    against: &str,
    tag: &str,
) -> CliResult {
    let tool = xdp_tool(against, "xdp-bench")?;
    let r = tester_bench::rx_against_xdp_bench(
        cfg,
        tag,
        &tool,
        a.xdp_bench_op.unwrap_or_default(),
        a.rounds.unwrap_or(3).clamp(1, 20),
    )
    .map_err(|e| CliError::Failed(format!("bench rx: {e}")))?;
    if a.json {
        json(&r)?;
    } else {
        print::rx_against(&r);
    }
    if r.counted_once_every_round {
        Ok(())
    } else {
        Err(CliError::Failed(
            "our receiver did not count every frame put on the wire exactly once in every round (see the rounds above)".into(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::source_pps;

    #[test]
    fn bench_rx_rate_is_frames_per_second_and_refuses_a_percentage() {
        assert_eq!(source_pps("4Mpps", 64).unwrap(), 4e6);
        // 1 Gbit/s on the wire of 64-byte frames (84 bytes with preamble and gap).
        assert!((source_pps("1G", 64).unwrap() - 1e9 / 672.0).abs() < 1e-6);
        let e = source_pps("50%", 64).unwrap_err().to_string();
        assert!(e.contains("no line rate") && e.contains("4Mpps"), "{e}");
        assert!(source_pps("fast", 64)
            .unwrap_err()
            .to_string()
            .contains("--rate"));
    }
}
