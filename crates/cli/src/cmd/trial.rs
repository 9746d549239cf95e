//! `wirerate trial`: one trial of signed streams between two ports (the lab's, or named
//! interfaces/namespaces), as a table or JSON. Streams come from flags or a TOML file.
//! All measurement lives in `engine::trial`; this module parses and prints.

use crate::error::{CliError, CliResult};
use engine::port::PortSpec;
use engine::stream::{FlowMode, Flows, Limit, Rate, StreamConfig};
use engine::trial::{self, TrialConfig, TrialReport, TrialStream};
use engine::tx::TxBackend;
use serde::Deserialize;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use wire::encap::{EncapSpec, IpVersion};
use wire::template::{FrameTemplate, StreamSpec};

/// Run one trial: send signed streams between ports A and B and measure what arrives.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    wirerate lab up && wirerate trial --lab lab --rate 100kpps --duration 5\n  \
    wirerate trial --lab lab --direction both --size imix --rate 50% --link-speed 1G --json\n  \
    wirerate trial --port-a veth0@ns1 --a-addr 192.0.2.1 --b-addr 192.0.2.2 \\\n      \
    --port-b veth1@ns2 --frames 100000 --rate 20kpps\n  \
    wirerate trial --lab lab --streams streams.toml\n\n\
Rates: 10kpps, 1.5Mpps (frames/s); 100M or 1Gbps (L1 bit/s, as on the wire); 100M-l2 (L2,\n\
with FCS); 50% (of --link-speed).\n\
Bursts: --burst 32 sends 32 frames back to back per slot at the average --rate; add\n\
--burst-gap 5ms to pace each burst's frames at --rate and keep the line idle 5 ms after it.\n\
TOML: [[stream]] tables with the keys direction, encap, size, rate, duration, frames, burst,\n\
burst_gap, src_ips, dst_ips, src_ports, dst_ports, random_seed, tos, reorder_every.")]
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
    /// Frame size with FCS, or `imix` (7×64, 4×594, 1×1518).
    #[arg(long, default_value = "64")]
    size: String,
    #[arg(long, default_value = "10kpps")]
    rate: String,
    /// Link speed for percent rates.
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
    /// Seconds the receivers keep counting after the last frame.
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

/// One stream as written in TOML (or assembled from flags).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamDef {
    #[serde(default = "d_direction")]
    direction: String,
    #[serde(default = "d_encap")]
    encap: String,
    #[serde(default = "d_size")]
    size: String,
    #[serde(default = "d_rate")]
    rate: String,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    frames: Option<u64>,
    #[serde(default = "one32")]
    burst: u32,
    #[serde(default)]
    burst_gap: Option<String>,
    #[serde(default = "one32")]
    src_ips: u32,
    #[serde(default = "one32")]
    dst_ips: u32,
    #[serde(default = "one16")]
    src_ports: u16,
    #[serde(default = "one16")]
    dst_ports: u16,
    #[serde(default)]
    random_seed: Option<u64>,
    #[serde(default)]
    tos: u8,
    #[serde(default)]
    reorder_every: Option<u64>,
}

fn d_direction() -> String {
    "a-b".into()
}
fn d_encap() -> String {
    "ipv4".into()
}
fn d_size() -> String {
    "64".into()
}
fn d_rate() -> String {
    "10kpps".into()
}
fn one32() -> u32 {
    1
}
fn one16() -> u16 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StreamsFile {
    #[serde(default)]
    stream: Vec<StreamDef>,
}

fn parse_backend(s: &str) -> Result<trial::Backend, String> {
    s.parse()
}

fn parse_tx_method(s: &str) -> Result<TxBackend, String> {
    s.parse()
}

fn usage(m: impl Into<String>) -> CliError {
    CliError::Usage(m.into())
}

/// Parses a rate: `10kpps`, `1.5Mpps`, `100M`/`1Gbps` (L1), `100M-l2`, `50%`.
fn parse_rate(text: &str, link_bps: f64) -> CliResult<Rate> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    if let Some(p) = lower.strip_suffix('%') {
        let percent: f64 = p
            .trim()
            .parse()
            .map_err(|_| usage(format!("rate '{t}': bad percentage")))?;
        if !(percent > 0.0 && percent <= 100.0) {
            return Err(usage(format!("rate '{t}': give a percentage in (0, 100]")));
        }
        return Ok(Rate::PercentOfLine { percent, link_bps });
    }
    if let Some(p) = lower.strip_suffix("pps") {
        let (num, mult) = match p.chars().last() {
            Some('k') => (&p[..p.len() - 1], 1e3),
            Some('m') => (&p[..p.len() - 1], 1e6),
            Some('g') => (&p[..p.len() - 1], 1e9),
            _ => (p, 1.0),
        };
        let v: f64 = num
            .trim()
            .parse()
            .map_err(|_| usage(format!("rate '{t}': bad number")))?;
        if v.is_nan() || v <= 0.0 {
            return Err(usage(format!("rate '{t}': must be positive")));
        }
        return Ok(Rate::Pps(v * mult));
    }
    let (bits, l2) = match lower.strip_suffix("-l2") {
        Some(b) => (b, true),
        None => (lower.strip_suffix("-l1").unwrap_or(&lower), false),
    };
    let bps = wire::linerate::parse_speed(bits)
        .map_err(|e| usage(format!("rate '{t}': {e}; or use 10kpps, 50%, 100M-l2")))?
        .0;
    Ok(if l2 {
        Rate::L2Bps(bps)
    } else {
        Rate::L1Bps(bps)
    })
}

/// Parses a time with a unit: `250ns`, `100us` (or `µs`), `5ms`, `1.5s`.
fn parse_time(text: &str) -> CliResult<Duration> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let scale = match unit.trim() {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "" => return Err(usage(format!("time '{t}': give a unit: 500us, 5ms, 1s"))),
        u => {
            return Err(usage(format!(
                "time '{t}': unknown unit '{u}' (ns, us, ms, s)"
            )))
        }
    };
    let v: f64 = num
        .parse()
        .map_err(|_| usage(format!("time '{t}': bad number")))?;
    let secs = v * scale;
    if !secs.is_finite() || secs > 1e6 {
        return Err(usage(format!("time '{t}': too long")));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn sizes(text: &str, encap: &EncapSpec) -> CliResult<Vec<(usize, u32)>> {
    let min = encap.min_frame_size();
    if text.trim().eq_ignore_ascii_case("imix") {
        return Ok(vec![(64.max(min), 7), (594.max(min), 4), (1518, 1)]);
    }
    let s: usize = text
        .trim()
        .parse()
        .map_err(|_| usage(format!("size '{text}': give bytes or 'imix'")))?;
    if s < min || s > 9018 {
        return Err(usage(format!(
            "size {s}: {encap} frames need {min}..=9018 bytes"
        )));
    }
    Ok(vec![(s, 1)])
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

fn addr(p: &PortSpec, v: IpVersion) -> CliResult<IpAddr> {
    match v {
        IpVersion::V4 => p.ipv4.map(IpAddr::V4),
        IpVersion::V6 => p.ipv6.map(IpAddr::V6),
    }
    .ok_or_else(|| {
        usage(format!(
            "port {} has no {v} address (give --{}-addr)",
            p.name, p.name
        ))
    })
}

#[cfg(test)]
fn build_streams(
    defs: &[StreamDef],
    a: &PortSpec,
    b: &PortSpec,
    link_bps: f64,
) -> CliResult<Vec<TrialStream>> {
    build_streams_with(defs, a, b, link_bps, None)
}

/// As `build_streams`, with the streams pointed at a session or softwire (`--inside`).
fn build_streams_with(
    defs: &[StreamDef],
    a: &PortSpec,
    b: &PortSpec,
    link_bps: f64,
    inside: Option<&super::trial_inside::Inside>,
) -> CliResult<Vec<TrialStream>> {
    let mut out = Vec::new();
    for d in defs {
        let encap: EncapSpec = d
            .encap
            .parse()
            .map_err(|e| usage(format!("encap '{}': {e}", d.encap)))?;
        let dirs: &[(usize, usize)] = match d.direction.as_str() {
            "a-b" => &[(0, 1)],
            "b-a" => &[(1, 0)],
            "both" => &[(0, 1), (1, 0)],
            o => return Err(usage(format!("direction '{o}': give a-b, b-a or both"))),
        };
        let rate = parse_rate(&d.rate, link_bps)?;
        let limit = match (d.frames, d.duration) {
            (Some(n), _) => Limit::Frames(n),
            (None, Some(s)) if s > 0.0 && s <= 86_400.0 => Limit::DurationNs((s * 1e9) as u64),
            (None, Some(s)) => {
                return Err(usage(format!("duration {s}: give 0 < seconds ≤ 86400")))
            }
            (None, None) => Limit::DurationNs(5_000_000_000),
        };
        if let Some(k) = d.reorder_every {
            if k < 2 {
                return Err(usage("reorder_every: give K ≥ 2"));
            }
        }
        for (what, n) in [
            ("burst", d.burst),
            ("src-ips", d.src_ips),
            ("dst-ips", d.dst_ips),
            ("src-ports", u32::from(d.src_ports)),
            ("dst-ports", u32::from(d.dst_ports)),
        ] {
            if n == 0 {
                return Err(usage(format!("{what} 0: give at least 1")));
            }
        }
        let burst_gap = match &d.burst_gap {
            Some(t) => Some(parse_time(t).map_err(|e| usage(format!("burst gap: {e}")))?),
            None => None,
        };
        for &(tx, rx) in dirs {
            let (src, dst) = if tx == 0 { (a, b) } else { (b, a) };
            let id = out.len() as u16 + 1;
            let mut spec = StreamSpec::new(encap);
            spec.stream_id = id;
            if encap.dslite {
                spec.src_ip = IpAddr::V4(Ipv4Addr::new(192, 0, 0, 2));
                spec.dst_ip =
                    addr(dst, IpVersion::V4).unwrap_or(IpAddr::V4(Ipv4Addr::new(203, 0, 113, 2)));
                if let (Some(s6), Some(d6)) = (src.ipv6, dst.ipv6) {
                    spec.tunnel_src = s6;
                    spec.tunnel_dst = d6;
                }
            } else {
                spec.src_ip = addr(src, encap.ip)?;
                spec.dst_ip = addr(dst, encap.ip)?;
            }
            spec.tos = d.tos;
            spec.dst_port = 9;
            if let Some(i) = inside {
                i.apply(&mut spec, tx).map_err(usage)?;
            }
            let mut frames = Vec::new();
            let mut weights = Vec::new();
            for (size, w) in sizes(&d.size, &encap)? {
                let t = FrameTemplate::new(&spec, size)
                    .map_err(|e| usage(format!("stream {id}: {e}")))?;
                frames.push(t);
                weights.push(w);
            }
            let rewrite_macs = !encap.pppoe && inside.is_none();
            let config = StreamConfig {
                id,
                frames,
                weights,
                flows: Flows {
                    src_ip_count: d.src_ips,
                    dst_ip_count: d.dst_ips,
                    src_port_count: d.src_ports,
                    dst_port_count: d.dst_ports,
                    mode: d
                        .random_seed
                        .map_or(FlowMode::Increment, |seed| FlowMode::Random { seed }),
                },
                rate,
                burst: d.burst,
                burst_gap,
                limit,
                reorder_every: d.reorder_every,
                rewrite_macs,
            };
            config.check().map_err(|e| usage(e.to_string()))?;
            out.push(TrialStream {
                config,
                tx_port: tx,
                rx_port: rx,
            });
        }
    }
    if out.is_empty() {
        return Err(usage(
            "no streams: the TOML file needs at least one [[stream]]",
        ));
    }
    Ok(out)
}

fn si(v: f64) -> String {
    wire::units::si(v)
}

fn print_table(r: &TrialReport) {
    outln!(
        "{:>6} {:>5} {:>12} {:>12} {:>10} {:>10} {:>8} {:>6} {:>6} {:>10} {:>10} {:>10}",
        "stream",
        "dir",
        "intended",
        "offered",
        "sent",
        "received",
        "lost",
        "dup",
        "ooo",
        "lat p50",
        "lat p99",
        "lat max"
    );
    for s in &r.streams {
        let (p50, p99, max) =
            s.rx.latency
                .map(|l| {
                    (
                        format!("{:.1}us", l.p50_ns as f64 / 1e3),
                        format!("{:.1}us", l.p99_ns as f64 / 1e3),
                        format!("{:.1}us", l.max_ns as f64 / 1e3),
                    )
                })
                .unwrap_or_else(|| ("-".into(), "-".into(), "-".into()));
        outln!(
            "{:>6} {:>5} {:>12} {:>12} {:>10} {:>10} {:>8} {:>6} {:>6} {:>10} {:>10} {:>10}",
            s.stream_id,
            format!("{}>{}", s.tx_port, s.rx_port),
            format!("{}pps", si(s.tx.intended_pps)),
            format!("{}pps", si(s.tx.achieved_pps)),
            s.tx.sent,
            s.rx.received,
            s.rx.lost.unwrap_or(0),
            s.rx.duplicates,
            s.rx.out_of_order,
            p50,
            p99,
            max
        );
    }
    outln!();
    for t in r.directions.iter().chain(std::iter::once(&r.total)) {
        outln!(
            "{:>8}: sent {} received {} lost {} ({:.4} %)  rx {}pps  {}b/s L2  {}b/s L1",
            t.label,
            t.sent,
            t.received,
            t.lost,
            if t.sent > 0 {
                t.lost as f64 * 100.0 / t.sent as f64
            } else {
                0.0
            },
            si(t.rx_pps),
            si(t.rx_l2_bps),
            si(t.rx_l1_bps)
        );
    }
    for (p, tx) in &r.tx_ports {
        outln!(
            "  port {p} sender: {} flushes, mean batch {:.1}, max batch {}, back-pressured flushes {}, slipped {}",
            tx.flushes,
            tx.mean_batch,
            tx.max_batch,
            tx.backpressure_flushes,
            tx.streams.iter().map(|s| s.slipped).sum::<u64>()
        );
    }
    for p in &r.rx_ports {
        let per_thread = if p.frames_per_thread.len() > 1 {
            format!(
                ", frames per RX thread {}",
                p.frames_per_thread
                    .iter()
                    .map(|n| n.to_string())
                    .collect::<Vec<_>>()
                    .join("/")
            )
        } else {
            String::new()
        };
        outln!(
            "  port {} receiver: foreign {}, unexpected streams {}, ARP/ND answered {}, ring drops {}{per_thread}",
            p.port, p.foreign, p.unexpected_streams, p.answered, p.ring_drops
        );
        if p.ring_drops > 0 {
            outln!(
                "  WARNING: port {} RX ring overflowed: receive counts are not exact",
                p.port
            );
        }
    }
    for s in &r.streams {
        if !s.rx.invalid.is_zero() {
            outln!(
                "  WARNING: stream {} at port {}: {} signed frames not valid for the stream, not counted as received ({})",
                s.stream_id,
                s.rx_port,
                s.rx.invalid.total(),
                s.rx.invalid.describe()
            );
        }
    }
    for s in &r.streams {
        if s.tx.slipped > 0 {
            outln!(
                "  WARNING: stream {} could not keep its schedule ({} frames slipped): tester-limited",
                s.stream_id, s.tx.slipped
            );
        }
    }
}

pub fn run(args: TrialArgs) -> CliResult {
    let link_bps = wire::linerate::parse_speed(&args.link_speed)
        .map_err(|e| usage(format!("--link-speed: {e}")))?
        .0;
    let defs = match &args.streams {
        Some(path) => {
            let text = bench::files::read_text(path)
                .map_err(|e| usage(format!("--streams {}: {e}", path.display())))?;
            let f: StreamsFile = toml::from_str(&text)
                .map_err(|e| usage(format!("--streams {}: {e}", path.display())))?;
            f.stream
        }
        None => vec![StreamDef {
            direction: args.direction.clone(),
            encap: args.encap.clone(),
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
        }],
    };
    if !(args.drain >= 0.0 && args.drain <= 60.0) {
        return Err(usage("--drain: give 0..60 seconds"));
    }
    // One lab, one user: a second trial on the same lab would count this one's frames.
    let _lock = match &args.lab {
        Some(name) => Some(
            lab::LabLock::acquire(name, "wirerate trial", lab::lock::USER_WAIT)
                .map_err(|e| usage(format!("--lab {name}: {e}")))?,
        ),
        None => None,
    };
    let (mut a, mut b) = ports(&args)?;
    let mut inside = super::trial_inside::Inside::up(&args.inside, &mut a, &mut b)?;
    let mut streams = build_streams_with(&defs, &a, &b, link_bps, inside.as_ref())?;
    if let Some(i) = &mut inside {
        streams = i.split_oversize(streams)?;
        if streams.is_empty() {
            // Every size needs fragmenting: only the control planes send.
            return inside.map_or(Ok(()), |i| i.finish(None, args.json, print_table));
        }
    }
    let mut cfg = TrialConfig::new(vec![a, b], streams);
    cfg.drain = Duration::from_secs_f64(args.drain);
    cfg.backend = args.backend;
    cfg.tx_ring.backend = args.tx_method;
    cfg.tx_threads = usize::from(args.tx_threads);
    cfg.rx_threads = usize::from(args.rx_threads);
    let stop = AtomicBool::new(false);
    let r = trial::run(&cfg, &stop).map_err(|e| match e {
        engine::Error::Config(m) => usage(m),
        e => CliError::Failed(format!("trial: {e}")),
    })?;
    if let Some(i) = inside {
        return i.finish(Some(&r), args.json, print_table);
    }
    if args.json {
        let s = serde_json::to_string_pretty(&r).map_err(|e| CliError::Failed(e.to_string()))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;

    #[test]
    fn rates_parse() {
        assert_eq!(parse_rate("10kpps", 1e9).unwrap(), Rate::Pps(10_000.0));
        assert_eq!(parse_rate("1.5Mpps", 1e9).unwrap(), Rate::Pps(1_500_000.0));
        assert_eq!(parse_rate("1G", 1e9).unwrap(), Rate::L1Bps(1e9));
        assert_eq!(parse_rate("100M-l2", 1e9).unwrap(), Rate::L2Bps(100e6));
        assert_eq!(
            parse_rate("50%", 1e9).unwrap(),
            Rate::PercentOfLine {
                percent: 50.0,
                link_bps: 1e9
            }
        );
        assert!(parse_rate("fast", 1e9).is_err());
        assert!(parse_rate("0pps", 1e9).is_err());
        assert!(parse_rate("150%", 1e9).is_err());
    }

    #[test]
    fn burst_gaps_parse_and_nonsense_is_refused() {
        assert_eq!(parse_time("5ms").unwrap(), Duration::from_millis(5));
        assert_eq!(parse_time("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_time("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_time("100ns").unwrap(), Duration::from_nanos(100));
        for bad in ["5", "ms", "5 parsecs", "-1ms", "1e999s"] {
            assert!(parse_time(bad).is_err(), "{bad}");
        }
        let f: StreamsFile =
            toml::from_str("[[stream]]\nburst = 16\nburst_gap = \"2ms\"\nframes = 160\n").unwrap();
        let mut a = PortSpec::new("a", "x");
        a.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 1));
        let mut b = PortSpec::new("b", "y");
        b.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 2));
        let s = build_streams(&f.stream, &a, &b, 1e9).unwrap();
        assert_eq!(s[0].config.burst, 16);
        assert_eq!(s[0].config.burst_gap, Some(Duration::from_millis(2)));
        // A gap with bursts of one frame, or of zero length, is refused as bad input.
        for bad in [
            "[[stream]]\nburst_gap = \"2ms\"\n",
            "[[stream]]\nburst = 4\nburst_gap = \"0ms\"\n",
        ] {
            let f: StreamsFile = toml::from_str(bad).unwrap();
            assert!(matches!(
                build_streams(&f.stream, &a, &b, 1e9),
                Err(CliError::Usage(_))
            ));
        }
    }

    #[test]
    fn toml_streams_parse() {
        let f: StreamsFile = toml::from_str(
            "[[stream]]\ndirection = \"both\"\nrate = \"20kpps\"\nframes = 1000\n\n[[stream]]\nsize = \"imix\"\nencap = \"ipv6\"\n",
        )
        .unwrap();
        assert_eq!(f.stream.len(), 2);
        assert_eq!(f.stream[0].frames, Some(1000));
        assert_eq!(f.stream[1].size, "imix");
        assert!(toml::from_str::<StreamsFile>("[[stream]]\nbogus = 1\n").is_err());
        let mut a = PortSpec::new("a", "x");
        a.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 1));
        a.ipv6 = Some(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 1));
        let mut b = PortSpec::new("b", "y");
        b.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 2));
        b.ipv6 = Some(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 2));
        let s = build_streams(&f.stream, &a, &b, 1e9).unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!((s[0].tx_port, s[1].tx_port), (0, 1));
        assert_eq!(s[2].config.frames.len(), 3);
        assert_eq!(s[2].config.frames[0].len(), 78); // IPv6 minimum (82 with FCS)
    }
}
