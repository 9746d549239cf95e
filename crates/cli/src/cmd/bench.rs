//! `wirerate bench`: measure the tester itself, side by side with trafgen (docs/engine.md).

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
    backend: engine::bench::TxBenchBackend,
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

/// Where xdp-tools' binaries sit beside a checkout (the shared tools folder next to the repo).
const SHARED_XDP_TOOLS: &str = "shared/tools/xdp-tools";

/// Where `--against` names xdp-trafficgen: `xdp-trafficgen=PATH` or a path (with a `/`) is
/// taken as given; plain `xdp-trafficgen` is the first on PATH, else the first
/// `shared/tools/xdp-tools/xdp-trafficgen` in a folder above the working directory or above
/// this executable (`../shared/tools/xdp-tools` seen from a checkout).
fn xdp_trafficgen(against: &str) -> CliResult<Option<std::path::PathBuf>> {
    let path_var = std::env::var_os("PATH");
    let roots: Vec<std::path::PathBuf> =
        [std::env::current_dir().ok(), std::env::current_exe().ok()]
            .into_iter()
            .flatten()
            .collect();
    resolve_against(against, path_var.as_deref(), &roots)
}

/// [`xdp_trafficgen`] with PATH and the folders to search above given.
fn resolve_against(
    against: &str,
    path_var: Option<&std::ffi::OsStr>,
    roots: &[std::path::PathBuf],
) -> CliResult<Option<std::path::PathBuf>> {
    if against == "trafgen" {
        return Ok(None);
    }
    let given = against
        .strip_prefix("xdp-trafficgen=")
        .or_else(|| against.contains('/').then_some(against));
    if let Some(g) = given {
        let p = std::path::PathBuf::from(g);
        return if p.is_file() {
            Ok(Some(p))
        } else {
            Err(CliError::Usage(format!(
                "--against {against}: no such file"
            )))
        };
    }
    if against != "xdp-trafficgen" {
        return Err(CliError::Usage(format!(
            "--against {against}: give trafgen, xdp-trafficgen, xdp-trafficgen=PATH or the path of an xdp-trafficgen binary"
        )));
    }
    let on_path = path_var
        .into_iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("xdp-trafficgen"));
    let shared = roots
        .iter()
        .flat_map(|r| r.ancestors())
        .map(|d| d.join(SHARED_XDP_TOOLS).join("xdp-trafficgen"));
    on_path
        .chain(shared)
        .find(|p| p.is_file())
        .map(Some)
        .ok_or_else(|| {
            CliError::Usage(format!(
                "--against xdp-trafficgen: not on PATH nor in {SHARED_XDP_TOOLS} above the working directory; give --against xdp-trafficgen=PATH (xdp-tools ≥ 1.6: Debian's 1.3.1 cannot load its programs on new kernels)"
            ))
        })
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
    rx_napi: Option<engine::bench::RxNapi>,
    /// Our receiver: af_packet (the RX ring, the default) or xdp (a BPF program counting in
    /// maps on the receiving veth).
    #[arg(long, default_value = "af_packet")]
    backend: engine::bench::RxBackend,
    /// What sends the N frames: trafgen (the default), or xdp (wirerate's XDP sender, with
    /// consecutive sequence numbers; needs --backend xdp).
    #[arg(long, default_value = "trafgen")]
    source: engine::bench::RxSource,
    #[arg(long)]
    json: bool,
}

fn root() -> CliResult {
    let st = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let uid0 = st
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"));
    if uid0 {
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
            let cfg = engine::bench::TxBenchConfig {
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
                    && (a.against == "trafgen" || a.backend != engine::bench::TxBenchBackend::Xdp))
            {
                return Err(CliError::Usage(
                    "--tx-threads: give N ≥ 1; more than one only with --backend xdp --against xdp-trafficgen".into(),
                ));
            }
            if let Some(tool) = xdp_trafficgen(&a.against)? {
                let r = engine::bench::tx_against_xdp_trafficgen(&cfg, &tag, &tool)
                    .map_err(|e| CliError::Failed(format!("bench tx: {e}")))?;
                if a.json {
                    return json(&r);
                }
                let rounds = |v: &[f64]| {
                    v.iter()
                        .map(|x| format!("{x:.0}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                if a.tx_threads > 1 {
                    outln!(
                        "{} sender threads each, on CPUs {}..={}",
                        a.tx_threads,
                        a.cpu,
                        a.cpu + a.tx_threads - 1
                    );
                }
                outln!(
                    "bench tx against {}: CPU {}, {} alternating rounds of {:.1} s per sender; the peer drops every frame with XDP for both; both rates from one counter, the sending veth's tx_packets (= frames the peer's XDP program received), medians; load {} → {}",
                    r.tool, a.cpu, cfg.rounds, a.duration, r.load_before, r.load_after
                );
                outln!(
                    "  wirerate ({:<8}, signed, {:.0} B + FCS) {:>9.0} frames/s   rounds: {}",
                    cfg.backend.name(),
                    r.wirerate_frame_len,
                    r.wirerate_pps,
                    rounds(&r.wirerate_rounds)
                );
                outln!(
                    "  xdp-trafficgen (static, {:.0} B + FCS) {:>9.0} frames/s   rounds: {}",
                    r.tool_frame_len,
                    r.tool_pps,
                    rounds(&r.tool_rounds)
                );
                outln!(
                    "  ratio (wirerate / xdp-trafficgen) {:.2}x (target ≥ 1.0)",
                    r.ratio
                );
                if let Some(c) = &r.cpu {
                    outln!(
                        "  per CPU-second of each sender's own threads (schedstat; they ran {:.0} % and {:.0} % of the window): wirerate {:.0}, xdp-trafficgen {:.0} frames/CPU-s, ratio {:.2}x",
                        100.0 * c.wirerate_share,
                        100.0 * c.tool_share,
                        c.wirerate_pps_per_cpu,
                        c.tool_pps_per_cpu,
                        c.ratio
                    );
                }
                if let Some(ns) = r.wirerate_prog_ns {
                    outln!(
                        "  wr_tx ran {ns:.1} ns per frame (kernel BPF statistics are on: every program run, both senders' and the peer's, pays two clock reads, so these rates are lower than with them off)"
                    );
                }
                return Ok(());
            }
            let r = engine::bench::tx(&cfg, &tag)
                .map_err(|e| CliError::Failed(format!("bench tx: {e}")))?;
            if a.json {
                return json(&r);
            }
            outln!(
                "bench tx: {}-byte frames, CPU {}, {} alternating rounds of {:.1} s per sender (veth tx_packets; medians)",
                a.size, a.cpu, cfg.rounds, a.duration
            );
            let rounds = |v: &[f64]| {
                v.iter()
                    .map(|x| format!("{x:.0}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            outln!(
                "  wirerate ({:<8}, signed) {:>9.0} frames/s   rounds: {}",
                cfg.backend.name(),
                r.wirerate_pps,
                rounds(&r.wirerate_rounds)
            );
            outln!(
                "    own count: {} frames accepted in all rounds; {:.0} frames/s, mean batch {:.1}",
                r.wirerate_sent,
                r.wirerate_own_pps,
                r.wirerate_mean_batch
            );
            if let Some((b, p, v)) = &r.other_backend {
                outln!(
                    "  wirerate ({:<8}, signed) {:>9.0} frames/s   rounds: {}",
                    b.name(),
                    p,
                    rounds(v)
                );
            }
            if r.trafgen_aborts > 0 {
                outln!(
                    "  trafgen aborted {} window(s) on back-pressure (retried)",
                    r.trafgen_aborts
                );
            }
            match &r.trafgen_error {
                None => {
                    outln!(
                        "  trafgen (static frame)       {:>9.0} frames/s   rounds: {}",
                        r.trafgen_pps,
                        rounds(&r.trafgen_rounds)
                    );
                    outln!(
                        "  ratio ({:<8} / trafgen)  {:>9.2}x (target ≥ {})",
                        cfg.backend.name(),
                        r.ratio,
                        // Issue 4's target for AF_PACKET, issue 8's for XDP.
                        if cfg.backend == engine::bench::TxBenchBackend::Xdp {
                            "6x"
                        } else {
                            "1.10x"
                        }
                    );
                }
                Some(e) => outln!("  trafgen: no figure: {e}"),
            }
            if let Some((p, v)) = &r.trafgen_nft {
                outln!(
                    "  trafgen, peer dropping at nftables without NAPI (its best case here) {p:.0} frames/s   rounds: {}",
                    rounds(v)
                );
                if *p > 0.0 {
                    outln!("  ratio (xdp / that trafgen) {:.2}x", r.wirerate_pps / p);
                }
            }
            Ok(())
        }
        What::Rx(a) => {
            if a.frames == 0 {
                return Err(CliError::Usage("-n: give at least one frame".into()));
            }
            if a.rx_napi.is_some() && a.backend != engine::bench::RxBackend::Xdp {
                return Err(CliError::Usage(
                    "--rx-napi places the XDP receiver's poll; it needs --backend xdp".into(),
                ));
            }
            root()?;
            let cfg = engine::bench::RxBenchConfig {
                frames: a.frames,
                frame_len: frame_len(a.size)?,
                tx_cpu: a.tx_cpu,
                rx_cpu: a.rx_cpu,
                backend: a.backend,
                source: a.source,
                napi: a.rx_napi.unwrap_or_default(),
            };
            let r = engine::bench::rx(&cfg, &tag)
                .map_err(|e| CliError::Failed(format!("bench rx: {e}")))?;
            if a.json {
                json(&r)?;
            } else {
                let (src, rcv) = match (a.source, a.backend) {
                    (engine::bench::RxSource::Trafgen, _) => ("trafgen", "trafgen -n"),
                    (engine::bench::RxSource::Xdp, _) => ("XDP sender", "XDP sender, N ="),
                };
                let backend = match a.backend {
                    engine::bench::RxBackend::AfPacket => "AF_PACKET RX ring",
                    engine::bench::RxBackend::Xdp => "XDP receiver",
                };
                outln!(
                    "bench rx: {rcv} {} ({}-byte frames) into the {backend}",
                    a.frames,
                    a.size
                );
                outln!("  {:<26}{:>10}", format!("{src} put on the wire"), r.sent);
                outln!(
                    "  refused by the veth       {:>10}   (N − put on the wire; never sent)",
                    r.refused
                );
                outln!("  wirerate counted          {:>10}", r.counted);
                if a.source == engine::bench::RxSource::Xdp {
                    outln!(
                        "    distinct / duplicates   {:>10} / {}",
                        r.received,
                        r.duplicates
                    );
                }
                outln!("  foreign frames            {:>10}", r.foreign);
                if a.backend == engine::bench::RxBackend::AfPacket {
                    outln!("  RX ring drops             {:>10}", r.ring_drops);
                }
                outln!("  peer backlog drops        {:>10}", r.peer_rx_dropped);
                if a.backend == engine::bench::RxBackend::Xdp {
                    outln!("  sender veth tx_dropped    {:>10}", r.tx_dropped);
                    if let Some(pps) = r.source_pps {
                        outln!("  XDP sender achieved       {:>10.0} frames/s", pps);
                    }
                    if let Some(n) = &r.napi {
                        outln!("  receive poll              {n}");
                    }
                    if let Some(m) = r.xdp_mode {
                        outln!("  XDP mode                  {:>10}", format!("{m:?}"));
                    }
                    if let Some(n) = &r.xdp_note {
                        outln!("  note: {n}");
                    }
                    match r.xdp_ns_per_frame {
                        Some(ns) => outln!("  XDP program per frame     {:>10.1} ns", ns),
                        None => outln!(
                            "  XDP program per frame            n/a (sysctl kernel.bpf_stats_enabled=1 to measure)"
                        ),
                    }
                }
                outln!("  {:.3} s, {:.0} frames/s", r.seconds, r.rx_pps);
                let once = if a.source == engine::bench::RxSource::Xdp {
                    "every sequence number put on the wire counted once, no duplicates"
                } else {
                    "every frame put on the wire counted"
                };
                outln!(
                    "  counted once: {}   ({once})",
                    if r.counted_once { "yes" } else { "NO" }
                );
                outln!(
                    "  {}   (exact: counted once, and the veth refused none of the N frames)",
                    if r.exact { "EXACT" } else { "NOT EXACT" }
                );
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A scratch folder `<tmp>/wr-against-<pid>-<name>` holding `files` (made executable-looking
    /// plain files), removed on drop.
    struct Scratch(PathBuf);
    impl Scratch {
        fn new(name: &str, files: &[&str]) -> Scratch {
            let d = std::env::temp_dir().join(format!("wr-against-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            for f in files {
                let p = d.join(f);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, b"").unwrap();
            }
            Scratch(d)
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn usage(r: CliResult<Option<PathBuf>>) -> String {
        match r {
            Err(CliError::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn against_finds_xdp_trafficgen_on_path_then_in_shared_tools_above() {
        let s = Scratch::new(
            "find",
            &[
                "bin/xdp-trafficgen",
                "shared/tools/xdp-tools/xdp-trafficgen",
                "wt/crate/x",
            ],
        );
        let bin = s.0.join("bin");
        let shared = s.0.join("shared/tools/xdp-tools/xdp-trafficgen");
        let below = s.0.join("wt/crate");
        // PATH first.
        let got = resolve_against(
            "xdp-trafficgen",
            Some(bin.as_os_str()),
            std::slice::from_ref(&below),
        );
        assert_eq!(got.unwrap(), Some(bin.join("xdp-trafficgen")));
        // Not on PATH: the shared tools folder above the working directory.
        let empty = s.0.join("nothing");
        let got = resolve_against("xdp-trafficgen", Some(empty.as_os_str()), &[below]);
        assert_eq!(got.unwrap(), Some(shared));
        // Neither: a usage error that says how to give it.
        let m = usage(resolve_against(
            "xdp-trafficgen",
            Some(empty.as_os_str()),
            &[],
        ));
        assert!(m.contains("xdp-trafficgen=PATH"), "{m}");
    }

    #[test]
    fn against_takes_a_given_path_and_refuses_what_is_not_there() {
        let s = Scratch::new("given", &["tools/xdp-trafficgen"]);
        let tool = s.0.join("tools/xdp-trafficgen");
        let arg = format!("xdp-trafficgen={}", tool.display());
        assert_eq!(
            resolve_against(&arg, None, &[]).unwrap(),
            Some(tool.clone())
        );
        let plain = tool.display().to_string();
        assert_eq!(resolve_against(&plain, None, &[]).unwrap(), Some(tool));
        let missing = format!("xdp-trafficgen={}", s.0.join("no/such").display());
        assert!(usage(resolve_against(&missing, None, &[])).contains("no such file"));
        assert!(usage(resolve_against("pktgen", None, &[])).contains("give trafgen"));
        assert_eq!(resolve_against("trafgen", None, &[]).unwrap(), None);
    }
}
