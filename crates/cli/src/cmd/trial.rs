//! `wirerate trial`: one trial of signed streams between two ports (the lab's, or named
//! interfaces/namespaces), as a table or JSON. Streams come from flags or a TOML file.
//! The flags and `--streams` file map into a `bench::spec::TrialSpec`, which is built and
//! executed by the same two calls a plan's trials make (`TrialSpec::build`,
//! `bench::spec::execute`); a session is brought up by `bench::inside`. This module maps the
//! flags and prints.

use super::trial_inside::print as print_inside;
use super::trial_table::print_table;
use crate::error::{CliError, CliResult};
use bench::spec::{Carrier, TrialSpec};
use bench::streams::{parse_streams_file, specs, StreamDef};
use bench::BenchError;
use engine::port::PortSpec;
use engine::trial;
use engine::tx::TxBackend;
use engine::unknown::UnknownName;
use std::net::IpAddr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Run one trial: send signed streams between ports A and B and measure what arrives.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    wirerate lab up && wirerate trial --lab lab --rate 100kpps --duration 5\n  \
    wirerate trial --lab lab --direction both --size imix --rate 50% --link-speed 1G --json\n  \
    wirerate trial --port-a veth0@ns1 --a-addr 192.0.2.1 --b-addr 192.0.2.2 \\\n      \
    --port-b veth1@ns2 --frames 100000 --rate 20kpps\n  \
    wirerate trial --lab lab --streams streams.toml\n\n\
Rates: 10kpps, 1.5Mpps (frames/s); 100M or 1Gbps (L1 bit/s, as on the wire); 100M-l2 (L2,\n\
with FCS); 50% (of the line rate of the stream's path at --link-speed, counting --far-encap).\n\
Bursts: --burst 32 sends 32 frames back to back per slot at the average --rate; add\n\
--burst-gap 5ms to pace each burst's frames at --rate and keep the line idle 5 ms after it.\n\
TOML: [[stream]] tables with the keys direction, encap, far_encap, size, rate, duration, frames,\n\
burst, burst_gap, src_ips, dst_ips, src_ports, dst_ports, random_seed, tos, reorder_every.\n\
The same settings in a one-case plan give the same trial: --json prints what each stream sent\n\
as `sent`, the list a plan's trial record keeps as `engine.streams`. A plan's [run] keys\n\
src-ips, dst-ips, src-ports, dst-ports, random-seed, tos, burst, burst-gap, reorder-every,\n\
tx-method and drain are the flags of the same names (flows = [N] in a [[matrix]] block is\n\
--src-ports N).")]
pub struct TrialArgs {
    /// Use lab NAME's ports A and B (`wirerate lab up` first).
    #[arg(long, value_name = "NAME", conflicts_with_all = ["port_a", "port_b"])]
    lab: Option<String>,
    /// Port A as IFACE or IFACE@NETNS.
    #[arg(long, requires = "port_b")]
    port_a: Option<String>,
    /// Port B as IFACE or IFACE@NETNS.
    #[arg(long, requires = "port_a")]
    port_b: Option<String>,
    /// Port A's own address (IPv4 and/or IPv6; repeat for both).
    #[arg(long)]
    a_addr: Vec<IpAddr>,
    #[arg(long)]
    b_addr: Vec<IpAddr>,
    /// Port A's next hop (default: port B's address, i.e. a direct link).
    #[arg(long)]
    a_next_hop: Vec<IpAddr>,
    #[arg(long)]
    b_next_hop: Vec<IpAddr>,
    /// CPUs to pin the tester's threads to, e.g. 0 or 0,2 (with --lab: the lab's tester CPUs).
    #[arg(long, value_delimiter = ',')]
    cpus: Vec<usize>,
    /// Streams from a TOML file instead of the stream flags below.
    #[arg(long, value_name = "FILE")]
    streams: Option<std::path::PathBuf>,
    /// a-b, b-a, or both (one stream each way).
    #[arg(long, default_value = "a-b")]
    direction: String,
    /// Encapsulation (as in `wirerate linerate`): ipv4, ipv6, vlan+ipv4, ...
    #[arg(long, default_value = "ipv4")]
    encap: String,
    /// The encapsulation the DUT puts the frames in on the far link (a plan's `encap`: plain
    /// frames in, e.g. vlan+ipv4 or pppoe+ipv4 out); percent rates are of that path's line rate.
    #[arg(long, value_name = "ENCAP")]
    far_encap: Option<String>,
    /// Frame size with FCS, or `imix` (7×64, 4×594, 1×1518).
    #[arg(long, default_value = "64")]
    size: String,
    #[arg(long, default_value = "10kpps")]
    rate: String,
    /// Link speed for percent rates (100 % is the line rate of the stream's path at this speed).
    /// The sender also makes up a stall no faster than this link carries the frames (or at twice
    /// the stream's rate, where that is faster).
    #[arg(long, default_value = "1G")]
    link_speed: String,
    /// Seconds to send (ignored with --frames).
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Send exactly this many frames per stream.
    #[arg(long)]
    frames: Option<u64>,
    /// Frames per burst (1 = evenly spaced). Without --burst-gap a burst's frames go back to
    /// back and bursts follow at the average --rate.
    #[arg(long, default_value_t = 1)]
    burst: u32,
    /// Idle time after each burst, e.g. 500us, 5ms (needs --burst 2 or more): the burst's
    /// frames are then paced at --rate, and the next burst starts this long after the end of
    /// the last one. Average rate = burst / (burst/rate + gap).
    #[arg(long, value_name = "TIME")]
    burst_gap: Option<String>,
    /// Distinct source addresses / destination addresses / source ports / destination ports.
    #[arg(long, default_value_t = 1)]
    src_ips: u32,
    #[arg(long, default_value_t = 1)]
    dst_ips: u32,
    #[arg(long, default_value_t = 1)]
    src_ports: u16,
    #[arg(long, default_value_t = 1)]
    dst_ports: u16,
    /// Vary flow fields pseudorandomly (RFC 4814) from this seed instead of incrementing.
    #[arg(long)]
    random_seed: Option<u64>,
    /// IPv4 ToS / IPv6 traffic class byte.
    #[arg(long, default_value_t = 0)]
    tos: u8,
    /// Swap every K-th pair of sequence numbers (tests the receiver's reordering count).
    #[arg(long)]
    reorder_every: Option<u64>,
    /// Seconds the receivers keep counting after the last frame at most (they stop as soon
    /// as every frame sent has arrived).
    #[arg(long, default_value_t = 0.5)]
    drain: f64,
    /// Packet engine: af_packet (the default), xdp (XDP programs send and count in the
    /// kernel; one RX thread per port, frames up to 3000 B, at most 64 streams received per
    /// port), or auto (xdp when the trial fits it and the kernel runs it, else af_packet).
    /// The table's first line says which ran and why.
    #[arg(long, default_value = "af_packet", value_parser = parse_backend)]
    backend: trial::Backend,
    /// How the AF_PACKET backend hands frames to the kernel: ring (PACKET_TX_RING, the
    /// default) or sendmmsg.
    #[arg(long, default_value = "ring", value_parser = parse_tx_method)]
    tx_method: TxBackend,
    /// Transmit threads per sending port, each with its own socket (at most one per stream).
    #[arg(
        long,
        default_value_t = 1,
        value_parser = clap::value_parser!(u16).range(1..=trial::MAX_THREADS as i64)
    )]
    tx_threads: u16,
    /// Receive threads per port, in one PACKET_FANOUT group that steers each stream to one
    /// thread (at most one per stream).
    #[arg(
        long,
        default_value_t = 1,
        value_parser = clap::value_parser!(u16).range(1..=trial::MAX_THREADS as i64)
    )]
    rx_threads: u16,
    /// Streams inside a PPPoE session or DS-Lite softwire between the ports (trial_inside.rs).
    #[command(flatten)]
    inside: super::trial_inside::InsideArgs,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

fn parse_backend(s: &str) -> Result<trial::Backend, UnknownName> {
    s.parse()
}

fn parse_tx_method(s: &str) -> Result<TxBackend, UnknownName> {
    s.parse()
}

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

fn parse_port(text: &str, name: &str) -> PortSpec {
    let (ifname, ns) = match text.split_once('@') {
        Some((i, n)) => (i, Some(n.to_string())),
        None => (text, None),
    };
    let mut p = PortSpec::new(name, ifname);
    p.netns = ns;
    p
}

fn set_addrs(p: &mut PortSpec, addrs: &[IpAddr]) {
    for a in addrs {
        match a {
            IpAddr::V4(v) => p.ipv4 = Some(*v),
            IpAddr::V6(v) => p.ipv6 = Some(*v),
        }
    }
}

fn set_hops(p: &mut PortSpec, hops: &[IpAddr]) {
    for a in hops {
        match a {
            IpAddr::V4(v) => p.next_hop_v4 = Some(*v),
            IpAddr::V6(v) => p.next_hop_v6 = Some(*v),
        }
    }
}

fn ports(args: &TrialArgs) -> CliResult<(PortSpec, PortSpec)> {
    if let Some(name) = &args.lab {
        let l = lab::Lab::attach(name).map_err(|e| usage(format!("--lab {name}: {e}")))?;
        let (mut a, mut b) =
            bench::trial::lab_ports(&l).map_err(|e| CliError::Failed(e.to_string()))?;
        if !args.cpus.is_empty() {
            a.cpus = args.cpus.clone();
            b.cpus = args.cpus.clone();
        }
        return Ok((a, b));
    }
    let (Some(pa), Some(pb)) = (&args.port_a, &args.port_b) else {
        return Err(usage("give --lab NAME, or --port-a and --port-b"));
    };
    let mut a = parse_port(pa, "a");
    let mut b = parse_port(pb, "b");
    set_addrs(&mut a, &args.a_addr);
    set_addrs(&mut b, &args.b_addr);
    // Default next hop: the other port (a direct link).
    a.next_hop_v4 = b.ipv4;
    a.next_hop_v6 = b.ipv6;
    b.next_hop_v4 = a.ipv4;
    b.next_hop_v6 = a.ipv6;
    set_hops(&mut a, &args.a_next_hop);
    set_hops(&mut b, &args.b_next_hop);
    a.cpus = args.cpus.clone();
    b.cpus = args.cpus.clone();
    Ok((a, b))
}

/// The trial's specification from the flags or the `--streams` file.
/// `--json`: the engine's report, then what each stream sent as configured (the list a plan's
/// trial record keeps as `engine.streams`).
#[derive(serde::Serialize)]
struct TrialJson<'a> {
    #[serde(flatten)]
    report: &'a trial::TrialReport,
    sent: &'a [bench::results::SentStream],
}

pub(super) fn spec(args: &TrialArgs) -> CliResult<TrialSpec> {
    let speed = wire::linerate::parse_speed(&args.link_speed)
        .map_err(|e| usage(format!("--link-speed: {e}")))?;
    let streams = match &args.streams {
        Some(path) => {
            let text = bench::files::read_text(path)
                .map_err(|e| usage(format!("--streams {}: {e}", path.display())))?;
            parse_streams_file(&text)
                .and_then(|defs| specs(&defs))
                .map_err(|e| usage(format!("--streams {}: {e}", path.display())))?
        }
        None => specs(&[StreamDef {
            direction: args.direction.clone(),
            encap: args.encap.clone(),
            far_encap: args.far_encap.clone(),
            size: args.size.clone(),
            rate: args.rate.clone(),
            duration: Some(args.duration),
            frames: args.frames,
            burst: args.burst,
            burst_gap: args.burst_gap.clone(),
            src_ips: args.src_ips,
            dst_ips: args.dst_ips,
            src_ports: args.src_ports,
            dst_ports: args.dst_ports,
            random_seed: args.random_seed,
            tos: args.tos,
            reorder_every: args.reorder_every,
        }])
        .map_err(|e| usage(e.to_string()))?,
    };
    if !(args.drain >= 0.0 && args.drain <= 60.0) {
        return Err(usage("--drain: give 0..60 seconds"));
    }
    let mut spec = TrialSpec::new(streams, speed);
    spec.drain = Duration::from_secs_f64(args.drain);
    spec.backend = args.backend;
    spec.tx_method = args.tx_method;
    spec.tx_threads = usize::from(args.tx_threads);
    spec.rx_threads = usize::from(args.rx_threads);
    Ok(spec)
}

pub fn run(args: TrialArgs) -> CliResult {
    let spec = spec(&args)?;
    // One lab, one user: a second trial on the same lab would count this one's frames.
    let _lock = match &args.lab {
        Some(name) => Some(
            lab::LabLock::acquire(name, "wirerate trial", lab::lock::USER_WAIT)
                .map_err(|e| usage(format!("--lab {name}: {e}")))?,
        ),
        None => None,
    };
    let (mut a, mut b) = ports(&args)?;
    let inside_opts = args.inside.options()?;
    let mut inside = bench::inside::Inside::up(&inside_opts, &mut a, &mut b)?;
    let carrier = inside.as_ref().map(|i| i as &dyn Carrier);
    let built = spec
        .build(&a, &b, carrier)
        .map_err(|e| usage(e.to_string()))?;
    for (port, asked, link) in built.config.ports_over_their_link() {
        eprintln!(
            "wirerate: port {} is asked {:.1} % of its {} link ({} of L1 bits with its streams together): more than a link of that speed carries; the veth carries it, but no real port of that speed could offer this load",
            built.config.ports[port].name,
            100.0 * asked.0 / link.0,
            link,
            asked
        );
    }
    let mut cfg = built.config;
    if let Some(i) = &mut inside {
        cfg.streams = i.split_oversize(std::mem::take(&mut cfg.streams))?;
        if cfg.streams.is_empty() {
            // Every size needs fragmenting: only the control planes send.
            return match inside {
                Some(i) => print_inside(&i.finish()?, None, args.json, print_table),
                None => Ok(()),
            };
        }
    }
    let stop = AtomicBool::new(false);
    let r = bench::spec::execute(&cfg, &stop).map_err(|e| match e {
        BenchError::Usage(m) => usage(m),
        BenchError::Failed(m) => CliError::Failed(format!("trial: {m}")),
    })?;
    if let Some(i) = inside {
        return print_inside(&i.finish()?, Some(&r), args.json, print_table);
    }
    if args.json {
        let json = TrialJson {
            report: &r,
            sent: &built.sent,
        };
        let s = serde_json::to_string_pretty(&json).map_err(|e| CliError::Failed(e.to_string()))?;
        outln!("{s}");
    } else {
        let tx = match r.backend {
            trial::Backend::Xdp => "BPF_PROG_RUN live frames",
            _ => cfg.tx_ring.backend.name(),
        };
        outln!(
            "backend {} (TX {tx}), up to {} TX and {} RX threads per port; {}",
            r.backend.name(),
            r.tx_threads,
            r.rx_threads,
            r.backend_note
        );
        print_table(&r);
    }
    Ok(())
}
