//! `wirerate craft`: the frames a stream would send, written to a pcap file.
//! Frames come from `wire::template` exactly as the engine sends them.

use std::io::Write;
use std::net::{IpAddr, Ipv6Addr};
use std::path::PathBuf;

use wire::encap::EncapSpec;
use wire::ethernet::{EtherType, MacAddr};
use wire::linerate::{self, Fate, Link};
use wire::template::{FrameTemplate, MplsLabelSpec, StreamSpec, VlanTagSpec};
use wire::units::BitsPerSec;

use crate::error::{CliError, CliResult};

/// Write the frames a stream would send to a pcap file, for Wireshark or tshark.
///
/// Every length and checksum is filled; the signature's sequence number advances from
/// --seq-start and its timestamp by 1e9/--rate ns per frame (also the pcap time).
/// --size is the plain reference frame with FCS; the written frame is larger by the
/// encapsulation's bytes (and carries no FCS, as captures do not).
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Examples:\n  wirerate craft --encap pppoe --size 64 --count 10 -o x.pcap\n  \
    wirerate craft --encap qinq+ipv6 --vlan 200,100 --vlan-pcp 5,3 --size 128 -o q.pcap\n  \
    wirerate craft --encap mpls:2 --mpls 1000,2000 --size 1518 -o m.pcap"
)]
pub struct CraftArgs {
    /// Encapsulation: ipv4, ipv6, vlan, qinq, mpls:N, pppoe, dslite, joined with '+'.
    #[arg(long, default_value = "ipv4")]
    pub encap: String,
    /// Reference frame size in bytes (plain frame with FCS).
    #[arg(long, default_value_t = 64)]
    pub size: usize,
    /// Number of frames to write.
    #[arg(long, default_value_t = 10)]
    pub count: u64,
    /// Output pcap file; `-` writes the pcap to standard output.
    #[arg(short, long)]
    pub output: PathBuf,
    #[arg(long)]
    pub src_mac: Option<MacAddr>,
    #[arg(long)]
    pub dst_mac: Option<MacAddr>,
    /// Source address of the test packet (inner packet for dslite).
    #[arg(long)]
    pub src_ip: Option<IpAddr>,
    #[arg(long)]
    pub dst_ip: Option<IpAddr>,
    #[arg(long)]
    pub src_port: Option<u16>,
    #[arg(long)]
    pub dst_port: Option<u16>,
    /// VLAN ids, outermost first (one for vlan, two for qinq).
    #[arg(long, value_delimiter = ',')]
    pub vlan: Vec<u16>,
    /// VLAN priorities (PCP 0..7), outermost first.
    #[arg(long, value_delimiter = ',')]
    pub vlan_pcp: Vec<u8>,
    /// Outer TPID of qinq: 0x88a8 (802.1ad) or 0x8100.
    #[arg(long, default_value = "0x88a8", value_parser = parse_hex_u16)]
    pub qinq_tpid: u16,
    /// MPLS labels, top of stack first (as many as mpls:N).
    #[arg(long, value_delimiter = ',')]
    pub mpls: Vec<u32>,
    /// MPLS traffic class for every label.
    #[arg(long, default_value_t = 0)]
    pub mpls_tc: u8,
    /// MPLS TTL for every label.
    #[arg(long, default_value_t = 64)]
    pub mpls_ttl: u8,
    /// PPPoE session id (1..0xfffe; decimal or 0x-hex).
    #[arg(long, value_parser = parse_hex_u16)]
    pub pppoe_session: Option<u16>,
    /// DS-Lite outer source (B4) address.
    #[arg(long)]
    pub tunnel_src: Option<Ipv6Addr>,
    /// DS-Lite outer destination (AFTR) address.
    #[arg(long)]
    pub tunnel_dst: Option<Ipv6Addr>,
    /// IPv4 TOS / IPv6 traffic class byte.
    #[arg(long, default_value_t = 0)]
    pub tos: u8,
    /// IPv4 TTL / IPv6 hop limit.
    #[arg(long, default_value_t = 64)]
    pub ttl: u8,
    /// Stream id carried in the signature.
    #[arg(long, default_value_t = 0)]
    pub stream_id: u16,
    /// First sequence number.
    #[arg(long, default_value_t = 0)]
    pub seq_start: u64,
    /// Frames per second that the timestamps advance by.
    #[arg(long, default_value_t = 1_000_000.0)]
    pub rate: f64,
    /// Set IPv4 Don't Fragment.
    #[arg(long)]
    pub dont_fragment: bool,
}

fn parse_hex_u16(s: &str) -> Result<u16, String> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => u16::from_str_radix(h, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("'{s}' is not a 16-bit number (decimal or 0x-hex)"))
}

/// Builds the stream spec from the flags; errors are the user's (exit 2).
fn spec_from(args: &CraftArgs) -> CliResult<StreamSpec> {
    let encap: EncapSpec = args
        .encap
        .parse()
        .map_err(|e: wire::encap::EncapError| CliError::Usage(e.0))?;
    let mut spec = StreamSpec::new(encap);
    spec.stream_id = args.stream_id;
    if let Some(m) = args.src_mac {
        spec.src_mac = m;
    }
    if let Some(m) = args.dst_mac {
        spec.dst_mac = m;
    }
    if let Some(a) = args.src_ip {
        spec.src_ip = a;
    }
    if let Some(a) = args.dst_ip {
        spec.dst_ip = a;
    }
    if let Some(p) = args.src_port {
        spec.src_port = p;
    }
    if let Some(p) = args.dst_port {
        spec.dst_port = p;
    }
    let tags = encap.tagging.tags();
    if !args.vlan.is_empty() {
        if args.vlan.len() != tags {
            return Err(CliError::Usage(format!(
                "--vlan gives {} id(s) but encapsulation {encap} has {tags} tag(s); use --encap vlan for one, qinq for two",
                args.vlan.len()
            )));
        }
        for (t, vid) in spec.vlans.iter_mut().zip(&args.vlan) {
            t.vid = *vid;
        }
    }
    if !args.vlan_pcp.is_empty() {
        if args.vlan_pcp.len() != tags {
            return Err(CliError::Usage(format!(
                "--vlan-pcp gives {} priorit(ies) but encapsulation {encap} has {tags} tag(s)",
                args.vlan_pcp.len()
            )));
        }
        for (t, pcp) in spec.vlans.iter_mut().zip(&args.vlan_pcp) {
            *t = VlanTagSpec { pcp: *pcp, ..*t };
        }
    }
    spec.qinq_tpid = EtherType(args.qinq_tpid);
    if !args.mpls.is_empty() && args.mpls.len() != usize::from(encap.mpls_labels) {
        return Err(CliError::Usage(format!(
            "--mpls gives {} label(s) but encapsulation {encap} has {}; use --encap mpls:{}",
            args.mpls.len(),
            encap.mpls_labels,
            args.mpls.len()
        )));
    }
    for (i, l) in spec.mpls.iter_mut().enumerate() {
        *l = MplsLabelSpec {
            label: args.mpls.get(i).copied().unwrap_or(l.label),
            tc: args.mpls_tc,
            ttl: args.mpls_ttl,
        };
    }
    if let Some(s) = args.pppoe_session {
        spec.pppoe_session = s;
    }
    if let Some(a) = args.tunnel_src {
        spec.tunnel_src = a;
    }
    if let Some(a) = args.tunnel_dst {
        spec.tunnel_dst = a;
    }
    spec.tos = args.tos;
    spec.ttl = args.ttl;
    spec.dont_fragment = args.dont_fragment;
    Ok(spec)
}

pub fn run(args: CraftArgs) -> CliResult {
    if args.count == 0 {
        return Err(CliError::Usage("--count must be at least 1".into()));
    }
    if !(args.rate.is_finite() && args.rate > 0.0) {
        return Err(CliError::Usage(
            "--rate must be a positive number of frames per second".into(),
        ));
    }
    let spec = spec_from(&args)?;
    let template =
        FrameTemplate::new(&spec, args.size).map_err(|e| CliError::Usage(e.to_string()))?;

    // Say so when this frame would not cross a standard 1500-byte-MTU link whole.
    let link = Link {
        name: "a 1500-MTU link".into(),
        speed: BitsPerSec(1e9),
        encap: spec.encap,
        mtu: linerate::ETHERNET_MTU,
    };
    match linerate::frames_on_link(args.size - 18, &link) {
        (_, Fate::Whole) => {}
        (frames, Fate::Fragmented { what, .. }) => errln!(
            "note: on a 1500-byte-MTU link this {what} packet is fragmented into {} frames; the capture holds it whole",
            frames.len()
        ),
        (_, Fate::Dropped { reason }) => errln!("note: {reason}"),
    }

    let interval_ns = 1e9 / args.rate;
    // Streamed, not built in memory: --count is not bounded by RAM. `-o -` writes the pcap to
    // standard output (for `| tshark -r -`), and the summary then goes to standard error.
    let to_stdout = args.output.as_os_str() == "-";
    let name = if to_stdout {
        "standard output".to_string()
    } else {
        args.output.display().to_string()
    };
    let write_err = |e: std::io::Error| CliError::Failed(format!("cannot write {name}: {e}"));
    let write_all = |w: &mut dyn Write| -> std::io::Result<()> {
        w.write_all(&wire::pcap::global_header(65535))?;
        let mut frame = template.bytes().to_vec();
        for i in 0..args.count {
            let ts = (i as f64 * interval_ns) as u64;
            template.stamp(&mut frame, args.seq_start.wrapping_add(i), ts);
            w.write_all(&wire::pcap::record_header(
                ts,
                frame.len() as u32,
                frame.len() as u32,
            ))?;
            w.write_all(&frame)?;
        }
        w.flush()
    };
    if to_stdout {
        write_all(&mut std::io::BufWriter::new(std::io::stdout().lock())).map_err(write_err)?;
    } else {
        // Only a regular file: a FIFO without a reader blocked here forever.
        bench::files::check_output(&args.output)
            .map_err(|e| CliError::Usage(format!("-o {name}: {e}")))?;
        let file = bench::files::create_regular(&args.output)
            .map_err(|e| CliError::Failed(format!("cannot create {name}: {e}")))?;
        let mut w = std::io::BufWriter::with_capacity(1 << 16, file);
        write_all(&mut w).map_err(write_err)?;
        w.get_ref().sync_all().map_err(write_err)?;
    }
    let summary = format!(
        "wrote {} frame(s) of {} B ({} B with FCS; {}, reference frame {} B) to {name}",
        args.count,
        template.len(),
        template.wire_size(),
        spec.encap,
        args.size,
    );
    if to_stdout {
        errln!("{summary}");
    } else {
        outln!("{summary}");
    }
    Ok(())
}
