//! `wirerate linerate`: the theoretical rates of DESIGN.md §4 as a table or JSON.
//! All arithmetic lives in `wire::linerate`; this module parses flags and formats.

use serde::Serialize;
use wire::encap::EncapSpec;
use wire::linerate::{self, Fate, FrameSize, Path, SizeRate};
use wire::units::si;

use crate::error::{CliError, CliResult};

/// Print, per frame size, the frame on each link, the maximum frames/s, the L1 and L2 bit rates
/// and which link is the bottleneck.
///
/// The frame size is that of the plain frame on the reference ("lan") link, with FCS. An
/// encapsulation other than plain IP adds a second ("wan") link that carries it; a packet too
/// large for that link's MTU is shown fragmented (IPv4 in PPPoE, the outer IPv6 of DS-Lite) or
/// dropped (IPv6, which routers never fragment), never silently resized.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  wirerate linerate --speed 1G\n  \
    wirerate linerate --speed 2.5G --encap pppoe+vlan --sizes 64,1518 --bidirectional\n  \
    wirerate linerate --encap dslite --sizes 64-1518:64 --json")]
pub struct LinerateArgs {
    /// Link speed in bits/s with an SI suffix: 10M … 400G, e.g. 1G, 2.5G, 100M.
    #[arg(long, default_value = "1G")]
    pub speed: String,
    /// Speed of the encapsulated (wan) link if it differs from --speed.
    #[arg(long)]
    pub wan_speed: Option<String>,
    /// Encapsulation: ipv4, ipv6, vlan, qinq, mpls:N, pppoe, dslite, joined with '+'.
    #[arg(long, default_value = "ipv4")]
    pub encap: String,
    /// Frame sizes: a list (64,128), a range (64-1518:64), 'imix', 'rfc2544'. Default: the
    /// RFC 2544 set plus IMIX.
    #[arg(long)]
    pub sizes: Option<String>,
    /// IP MTU of the encapsulated link's Ethernet (1508 for an RFC 4638 PPPoE baby jumbo).
    #[arg(long, default_value_t = linerate::ETHERNET_MTU)]
    pub wan_mtu: usize,
    /// Traffic in both directions at once: add columns that sum the two directions.
    #[arg(long)]
    pub bidirectional: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    encap: String,
    bidirectional: bool,
    path: &'a Path,
    rows: &'a [SizeRate],
}

pub fn run(args: LinerateArgs) -> CliResult {
    let usage = |e: &dyn std::fmt::Display| CliError::Usage(e.to_string());
    let speed = linerate::parse_speed(&args.speed).map_err(|e| usage(&e))?;
    let encap: EncapSpec = args.encap.parse().map_err(|e| usage(&e))?;
    let sizes = match &args.sizes {
        Some(s) => linerate::parse_sizes(s, encap.ip).map_err(|e| usage(&e))?,
        None => linerate::default_sizes(encap.ip),
    };
    if args.wan_mtu < 576 || args.wan_mtu > 9216 {
        return Err(CliError::Usage(format!(
            "--wan-mtu {} is outside 576..9216; Ethernet uses 1500 (1508 for RFC 4638 PPPoE)",
            args.wan_mtu
        )));
    }
    let mut path = Path::router(speed, encap, args.wan_mtu);
    if let Some(w) = &args.wan_speed {
        let wan = linerate::parse_speed(w).map_err(|e| usage(&e))?;
        match path.links.get_mut(1) {
            Some(link) => link.speed = wan,
            None => {
                return Err(CliError::Usage(
                    "--wan-speed needs an encapsulation that adds a wan link (e.g. --encap pppoe)"
                        .into(),
                ))
            }
        }
    }
    let rows = sizes
        .iter()
        .map(|s| path.rate(s, args.bidirectional))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| usage(&e))?;
    if args.json {
        let report = Report {
            encap: encap.to_string(),
            bidirectional: args.bidirectional,
            path: &path,
            rows: &rows,
        };
        let text =
            serde_json::to_string_pretty(&report).map_err(|e| CliError::Failed(e.to_string()))?;
        outln!("{text}");
    } else {
        out!("{}", table(&path, &rows, args.bidirectional));
    }
    Ok(())
}

/// Renders the human table.
fn table(path: &Path, rows: &[SizeRate], bidirectional: bool) -> String {
    let mut out = String::new();
    let links: Vec<String> = path
        .links
        .iter()
        .map(|l| {
            format!(
                "{} {}b/s {} (MTU {})",
                l.name,
                si(l.speed.0).replace(' ', ""),
                l.encap,
                l.mtu
            )
        })
        .collect();
    out.push_str(&format!("links: {}\n", links.join("  →  ")));
    if bidirectional {
        out.push_str("rates are per direction; the sum columns add both directions\n");
    }
    out.push('\n');
    let mut header: Vec<String> = vec!["size".into()];
    for l in &path.links {
        header.push(format!("{} frame", l.name));
    }
    header.push("max frames/s".into());
    for l in &path.links {
        header.push(format!("{} L2", l.name));
        header.push(format!("{} L1", l.name));
    }
    header.push("bottleneck".into());
    if bidirectional {
        header.extend(["sum pps".into(), "sum L2".into(), "sum L1".into()]);
    }
    let mut lines: Vec<Vec<String>> = vec![header];
    let mut notes: Vec<String> = Vec::new();
    for r in rows {
        let mut cells = vec![match &r.size {
            FrameSize::Fixed { bytes } => bytes.to_string(),
            FrameSize::Imix => format!("imix({:.1})", r.mean_frame),
        }];
        for load in &r.links {
            cells.push(match &load.fate {
                _ if r.size == FrameSize::Imix => "mix".into(),
                Fate::Whole => load
                    .frames
                    .first()
                    .map(|f| f.to_string())
                    .unwrap_or_default(),
                Fate::Fragmented { what, .. } => {
                    notes.push(format!(
                        "{} B on {}: {what} fragmented into {} frames",
                        r.size,
                        load.link,
                        load.frames.len()
                    ));
                    load.frames
                        .iter()
                        .map(|f| f.to_string())
                        .collect::<Vec<_>>()
                        .join("+")
                }
                Fate::Dropped { reason } => {
                    notes.push(format!("{} B: {reason}", r.size));
                    "dropped".into()
                }
            });
        }
        cells.push(si(r.max_pps.0).trim_end().to_string());
        for load in &r.links {
            cells.push(format!("{}b/s", si(load.l2.0).replace(' ', "")));
            cells.push(format!("{}b/s", si(load.l1.0).replace(' ', "")));
        }
        cells.push(r.links[r.bottleneck].link.clone());
        if bidirectional {
            cells.push(si(r.total_pps.0).trim_end().to_string());
            cells.push(format!("{}b/s", si(r.total_l2.0).replace(' ', "")));
            cells.push(format!("{}b/s", si(r.total_l1.0).replace(' ', "")));
        }
        lines.push(cells);
    }
    let widths: Vec<usize> = (0..lines[0].len())
        .map(|c| {
            lines
                .iter()
                .map(|l| l[c].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for line in &lines {
        let cells: Vec<String> = line
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    if !notes.is_empty() {
        out.push('\n');
        for n in notes {
            out.push_str(&format!("note: {n}\n"));
        }
    }
    out
}
