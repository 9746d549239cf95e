//! `wirerate dslite aftr|b4`: run the `emulate` DS-Lite AFTR or B4 (with ND and the tunnel
//! probe of `emulate::softwire`) on a port by hand, parallel to `wirerate pppoe server|client`:
//! events as they happen, statistics at the end. Their loop is `bench::hand::dslite`.

use std::net::Ipv6Addr;

use bench::hand::dslite::{run_b4, serve_aftr, AftrNews, B4News};
use bench::hand::{self};
use bench::session_json as sj;
use emulate::aftr_lookup::AftrName;
use emulate::dslite::TunnelStats;
use emulate::softwire::{AftrConfig, B4Config};
use engine::control::ControlPort;
use wire::ethernet::MacAddr;

use super::hand::{emit, print_syn, print_tun_stats, secs, Stop};
use super::provision::{self, ProvisionArgs};
use crate::error::{CliError, CliResult};

pub use bench::inside::{DEFAULT_AFTR, DEFAULT_B4};

/// Play the ISP's DS-Lite AFTR or a subscriber's B4 on one interface.
///
/// The AFTR answers Neighbor Solicitations for its tunnel address, decapsulates IPv4-in-IPv6
/// from any B4 (reassembling outer IPv6 fragments), learns each softwire from its first packet
/// and answers ICMP echo to its own 192.0.0.1 through the softwire. The B4 (given the AFTR's
/// name with --aftr-name, first looks it up with an AAAA query to --dns) resolves the AFTR
/// with ND and probes the tunnel with an echo to 192.0.0.1 until it is answered (setup time,
/// retries, failure by reason). With --provision the AFTR also provisions the link the way a
/// stock DS-Lite gateway expects: Router Advertisements and a DHCPv6 server giving an address,
/// a delegated prefix, DNS and the AFTR name (option 64). Both stop after --duration (the B4 also --hold seconds after
/// it came up), on Ctrl-C (SIGINT/SIGTERM), or on Enter/Ctrl-D on a terminal, and then print
/// their statistics; a stop by signal exits 0.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    wirerate dslite aftr --netns wr-wan --dev veth0\n  \
    wirerate dslite b4 --netns wr-cpe --dev veth1 --hold 10\n  \
    wirerate dslite b4 --netns wr-cpe --dev veth1 --addr 2001:db8:c::100 \
      --aftr-name aftr.example.net --dns 2001:db8:53::1\n  \
    wirerate dslite aftr --netns wr-wan --dev veth0 --addr 2001:db8:d::1 --json\n  \
    wirerate dslite aftr --netns wr-wan --dev veth0 --provision --aftr-name aftr.example.net\n  \
    wirerate dslite aftr --netns wr-isp --dev veth1 --tun wr-inet0 --tun-netns wr-inet\n  \
    wirerate dslite b4 --netns wr-gw --dev veth0 --tun wr-wan0")]
pub struct DsliteArgs {
    #[command(subcommand)]
    pub role: Role,
}

#[derive(Debug, clap::Subcommand)]
pub enum Role {
    /// The AFTR (ISP side): ND, decapsulation, reassembly, echo answers, softwire table.
    Aftr(AftrArgs),
    /// One B4: resolves the AFTR, probes the tunnel, keeps it until stopped.
    B4(B4Args),
}

#[derive(Debug, clap::Args)]
pub struct Common {
    /// Network namespace of the interface (a name under /run/netns or a path).
    #[arg(long)]
    pub netns: Option<String>,
    /// The interface.
    #[arg(long)]
    pub dev: String,
    /// Largest outer IPv6 packet: DS-Lite fragments bigger ones (RFC 6333 §5.3), the MAP-E BR
    /// drops them (counted `TooBig`).
    #[arg(long, default_value_t = 1500)]
    pub mtu: usize,
    /// Stop after this many seconds (default: until Ctrl-C, or Enter/Ctrl-D on a terminal).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Events and statistics as JSON lines.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct AftrArgs {
    #[command(flatten)]
    pub common: Common,
    /// Our tunnel endpoint address.
    #[arg(long, default_value_t = DEFAULT_AFTR)]
    pub addr: Ipv6Addr,
    /// Do not answer ICMP echo to 192.0.0.1 (B4 probes then time out).
    #[arg(long)]
    pub no_echo: bool,
    #[command(flatten)]
    pub provision: ProvisionArgs,
    /// Hand the IPv4 packets out of the softwires to a TUN device of this name ("the
    /// Internet") and send what the kernel routes into it down the softwire the destination
    /// last came from as a source (there is no NAT44 here). The device gets --tun-addr/32 and
    /// a route to 192.0.0.0/29 (the B4s' addresses); client SYNs crossing it are printed.
    #[arg(long, value_name = "NAME")]
    pub tun: Option<String>,
    /// Namespace of the TUN device (default: --netns).
    #[arg(long, value_name = "NS")]
    pub tun_netns: Option<String>,
    /// The Internet host's address, put on the TUN device as a /32.
    #[arg(long, value_name = "ADDR", default_value = "203.0.113.1")]
    pub tun_addr: std::net::Ipv4Addr,
}

#[derive(Debug, clap::Args)]
pub struct B4Args {
    #[command(flatten)]
    pub common: Common,
    /// Our tunnel endpoint address.
    #[arg(long, default_value_t = DEFAULT_B4)]
    pub addr: Ipv6Addr,
    /// The AFTR's tunnel endpoint address.
    #[arg(long, default_value_t = DEFAULT_AFTR, conflicts_with = "aftr_name")]
    pub aftr: Ipv6Addr,
    /// Look the AFTR up by this name (what DHCPv6 option 64 gives a gateway) with an AAAA
    /// query to --dns, and tunnel to the answer's address (RFC 6334), as a stock DS-Lite
    /// gateway does.
    #[arg(long, value_name = "NAME", requires = "dns")]
    pub aftr_name: Option<String>,
    /// The DNS server to ask for --aftr-name (DHCPv6 option 23), on this link.
    #[arg(long, value_name = "ADDR", requires = "aftr_name")]
    pub dns: Option<Ipv6Addr>,
    /// Echo probes through the tunnel, one a second, before giving up (0: up once the AFTR's
    /// MAC is known, for an AFTR that does not answer 192.0.0.1).
    #[arg(long, default_value_t = 5)]
    pub probes: u32,
    /// Stop this many seconds after the softwire came up.
    #[arg(long)]
    pub hold: Option<f64>,
    /// Expose the softwire as a TUN device of this name in --netns: once up it gets
    /// 192.0.0.2 (peer 192.0.0.1), the largest IPv4 packet the tunnel carries whole as MTU
    /// (1460 at --mtu 1500) and the default route, so a router in that namespace (nft NAPT,
    /// MSS clamp) can use it as its WAN. Client SYNs crossing it are printed.
    #[arg(long, value_name = "NAME")]
    pub tun: Option<String>,
}

pub fn run(a: DsliteArgs) -> CliResult {
    match a.role {
        Role::Aftr(x) => aftr(x),
        Role::B4(x) => b4(x),
    }
}

pub(crate) fn open(c: &Common) -> CliResult<(ControlPort, MacAddr)> {
    if !(1280..=65_535).contains(&c.mtu) {
        return Err(CliError::Usage(format!(
            "--mtu {}: IPv6 needs 1280..65535",
            c.mtu
        )));
    }
    Ok(hand::open_port("dslite", &c.dev, c.netns.as_deref())?)
}

fn tunnel_text(t: &TunnelStats) {
    outln!(
        "tunnel: encapsulated {} ({} fragmented into {} frames), decapsulated {} \
         ({} fragments in, {} reassembled)",
        t.encapsulated,
        t.fragmented,
        t.fragments_tx,
        t.decapsulated,
        t.fragments_rx,
        t.reassembled
    );
    for (k, v) in t.dropped.iter() {
        outln!("dropped {k:?}: {v}");
    }
}

fn aftr(a: AftrArgs) -> CliResult {
    let c = &a.common;
    let duration = c.duration.map(|d| secs(d, "--duration")).transpose()?;
    // Refuse bad provisioning flags before opening the port.
    a.provision.config(MacAddr::ZERO, c.mtu)?;
    if a.tun.is_some() && a.tun_addr.octets()[..3] == [192, 0, 0] {
        return Err(CliError::Usage(format!(
            "--tun-addr {}: inside 192.0.0.0/24, where the B4s are; use e.g. 203.0.113.1",
            a.tun_addr
        )));
    }
    let tun_ns = a.tun_netns.as_deref().or(c.netns.as_deref());
    let tun = match &a.tun {
        Some(name) => Some(hand::internet_tun(
            name,
            tun_ns,
            1500,
            a.tun_addr,
            vec!["192.0.0.0/29".into()],
        )?),
        None => None,
    };
    let (port, mac) = open(c)?;
    let mut cfg = AftrConfig::new(a.addr, mac);
    cfg.tunnel.mtu = c.mtu;
    cfg.answer_echo = !a.no_echo;
    cfg.provision = a.provision.config(mac, c.mtu)?;
    let stop = Stop::new(duration);
    if !c.json {
        errln!(
            "DS-Lite AFTR {} on {} ({mac}); Ctrl-C, Enter or Ctrl-D stops",
            a.addr,
            c.dev
        );
    }
    let done = serve_aftr(port, cfg, tun, &mut || stop.now(), &mut |n| match n {
        AftrNews::Softwire { b4, info } => {
            let mut v = sj::softwire(&info);
            v["event"] = "softwire".into();
            emit(
                c.json,
                v,
                format!("softwire  B4 {b4} ({})  MTU {}", info.peer_mac, info.mtu),
            );
        }
        AftrNews::Provision(p) => provision::print_event(c.json, &p),
        AftrNews::Syn(s) => print_syn(&s, c.json),
    })?;
    let (m, port, tun) = (&done.machine, &done.port, &done.tun);
    let st = &m.stats;
    let nd = &m.neighbors().stats;
    if c.json {
        let mut v = serde_json::json!({
            "event": "stats", "softwires": st.softwires_up, "echo_replies": st.echo_replies,
            "na_tx": nd.na_tx, "tunnel": sj::tunnel(m.tunnel_stats()),
            "frames_rx": port.stats.rx, "frames_tx": port.stats.tx,
            "frames_unclaimed": port.stats.rx_unclaimed, "tx_failed": port.stats.tx_failed,
            "tun": tun.as_ref().map(sj::tun),
        });
        if let Some(p) = m.provisioner() {
            v["provision"] = provision::stats_json(p);
        }
        outln!("{v}");
    } else {
        if let Some(t) = &tun {
            print_tun_stats(t);
        }
        outln!(
            "softwires: {}, echo replies {}, neighbor advertisements {}",
            st.softwires_up,
            st.echo_replies,
            nd.na_tx
        );
        tunnel_text(m.tunnel_stats());
        outln!(
            "frames: rx {} (not ND/DS-Lite {}), tx {} (failed {})",
            port.stats.rx,
            port.stats.rx_unclaimed,
            port.stats.tx,
            port.stats.tx_failed
        );
        if let Some(p) = m.provisioner() {
            provision::stats_text(p);
        }
    }
    Ok(())
}

fn b4(a: B4Args) -> CliResult {
    let c = &a.common;
    let duration = c.duration.map(|d| secs(d, "--duration")).transpose()?;
    let hold = a.hold.map(|d| secs(d, "--hold")).transpose()?;
    let tun = a
        .tun
        .as_deref()
        .map(|name| hand::create_tun(name, c.netns.as_deref()))
        .transpose()?;
    // Refuse a name that is not one before opening the port.
    let aftr_name = match (&a.aftr_name, a.dns) {
        (Some(n), Some(dns)) => {
            Some(AftrName::new(n, dns).map_err(|e| CliError::Usage(format!("--aftr-name: {e}")))?)
        }
        _ => None,
    };
    let (port, mac) = open(c)?;
    let mut cfg = B4Config::new(a.addr, mac, a.aftr);
    cfg.tunnel.mtu = c.mtu;
    cfg.probe_attempts = a.probes;
    cfg.aftr_name = aftr_name;
    if !c.json {
        let aftr = match (&a.aftr_name, a.dns) {
            (Some(n), Some(dns)) => format!("{n} (asking {dns})"),
            _ => a.aftr.to_string(),
        };
        errln!(
            "DS-Lite B4 {} -> AFTR {aftr} on {} ({mac}); Ctrl-C, Enter or Ctrl-D stops",
            a.addr,
            c.dev
        );
    }
    drive_b4(c, port, cfg, tun, hold, duration)
}

/// Runs a B4 (or a MAP-E CE, whose tunnel is a B4's: `wirerate mape ce`) on `port`, prints
/// its events as they come and its statistics at the end; fails when it did not come up.
pub(crate) fn drive_b4(
    c: &Common,
    port: ControlPort,
    cfg: B4Config,
    tun: Option<engine::tun::Tun>,
    hold: Option<std::time::Duration>,
    duration: Option<std::time::Duration>,
) -> CliResult {
    let stop = Stop::new(duration);
    let news = &mut |n| match n {
        B4News::AftrResolved { name, aftr } => emit(
            c.json,
            serde_json::json!({"event": "aftr", "name": name, "address": aftr.to_string()}),
            format!("aftr  {name} is {aftr}"),
        ),
        B4News::Up { info, setup_ms } => {
            let mut v = sj::softwire(&info);
            v["event"] = "up".into();
            v["setup_ms"] = setup_ms.into();
            emit(
                c.json,
                v,
                format!(
                    "up    AFTR {} ({})  MTU {} (IPv4 up to {} B whole)  setup {setup_ms:.1} ms",
                    info.remote,
                    info.peer_mac,
                    info.mtu,
                    info.max_datagram()
                ),
            );
        }
        B4News::Failed(why) => emit(
            c.json,
            serde_json::json!({"event": "failed", "reason": format!("{why:?}")}),
            format!("failed  {why:?}"),
        ),
        B4News::Syn(s) => print_syn(&s, c.json),
    };
    let (done, failed) = run_b4(
        port,
        cfg,
        tun,
        c.netns.as_deref(),
        hold,
        &mut || stop.now(),
        news,
    )?;
    let (m, port, tun) = (&done.machine, &done.port, &done.tun);
    let st = &m.stats;
    let setup_ms = st.setup.map(|s| s.0 as f64 / 1e6);
    let failures = sj::counts(&st.failed);
    let tunnel = m.tunnel_stats().cloned().unwrap_or_default();
    if c.json {
        let v = serde_json::json!({
            "event": "stats", "setup_ms": setup_ms, "probes_tx": st.probes_tx,
            "probe_replies": st.probe_replies, "retries": st.retries, "failed": failures,
            "dns": m.lookup_stats().map(|l| serde_json::json!({
                "queries_tx": l.queries_tx, "answers_rx": l.answers_rx, "ignored": l.ignored,
            })),
            "tunnel": sj::tunnel(&tunnel),
            "frames_rx": port.stats.rx, "frames_tx": port.stats.tx,
            "tun": tun.as_ref().map(sj::tun),
        });
        outln!("{v}");
    } else {
        if let Some(t) = &tun {
            print_tun_stats(t);
        }
        outln!(
            "probes: sent {}, answered {}, retries {}{}",
            st.probes_tx,
            st.probe_replies,
            st.retries,
            setup_ms.map_or(String::new(), |s| format!("; setup (start → up) {s:.1} ms"))
        );
        if let Some(l) = m.lookup_stats() {
            outln!(
                "AFTR name: {} queries, {} answered, {} other responses ignored",
                l.queries_tx,
                l.answers_rx,
                l.ignored
            );
        }
        for (k, v) in st.failed.iter() {
            outln!("failed {k:?}: {v}");
        }
        tunnel_text(&tunnel);
    }
    match failed {
        Some(why) => Err(CliError::Failed(format!("softwire not up: {why:?}"))),
        None if st.setup.is_none() => Err(CliError::Failed("softwire did not come up".into())),
        None => Ok(()),
    }
}
