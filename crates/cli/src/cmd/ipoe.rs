//! `wirerate ipoe server`: the ISP side of an IPoE WAN on one interface by hand (DHCPv4, RA +
//! DHCPv6, DNS), parallel to `wirerate pppoe server` and `wirerate dslite aftr`: events as
//! they happen, statistics at the end. The flags map to a plan's `[ports.NAME.ipoe]`
//! (`bench_model::plan::IpoeSettings`), so both are checked and built the same way; the loop
//! is `bench::hand::ipoe`.

use std::net::{Ipv4Addr, Ipv6Addr};

use bench::hand::ipoe::{serve, IpoeNews};
use bench::hand::{self};
use bench::plan::IpoeSettings;
use bench::session_json as sj;
use emulate::dhcpv4::Dhcpv4Event;
use wire::ethernet::MacAddr;

use super::hand::{emit, print_syn, print_tun_stats, secs, Stop};
use super::provision;
use crate::error::{CliError, CliResult};

/// Play the ISP side of an IPoE WAN (a home gateway's "DHCP" WAN mode) on one interface.
///
/// A DHCPv4 server gives the gateway an address from the pool, the mask, --gateway as its
/// default router and --dns as its DNS server (RFC 2131: every client state, RELEASE,
/// DECLINE, NAK; leases expire on time). Unless --no-ipv6, Router Advertisements and a DHCPv6
/// server give it an address, a delegated /56 and DNS 2001:db8:53::1 (and with --aftr-name
/// the AFTR name, option 64). A DNS server answers at the DNS addresses handed out, UDP and
/// TCP: authoritative for --aftr-name (AAAA --aftr) and, with --tun, internet.example.net
/// (A --tun-addr); NXDOMAIN for other names in their domain, REFUSED for the rest (no
/// recursion). ICMP echo to --gateway is answered. Stops after --duration, on Ctrl-C
/// (SIGINT/SIGTERM), or on Enter/Ctrl-D on a terminal, then prints its statistics.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    wirerate ipoe server --netns wr-isp --dev veth1\n  \
    wirerate ipoe server --netns wr-isp --dev veth1 --aftr-name aftr.example.net --json\n  \
    wirerate ipoe server --netns wr-isp --dev veth1 --tun wr-inet0 --tun-netns wr-inet")]
pub struct IpoeArgs {
    #[command(subcommand)]
    pub role: Role,
}

#[derive(Debug, clap::Subcommand)]
pub enum Role {
    /// The ISP side: DHCPv4, RA + DHCPv6, DNS, the default router.
    Server(ServerArgs),
}

#[derive(Debug, clap::Args)]
pub struct ServerArgs {
    /// Network namespace of the interface (a name under /run/netns or a path).
    #[arg(long)]
    pub netns: Option<String>,
    /// The interface.
    #[arg(long)]
    pub dev: String,
    /// Our address on the link: DHCP server identifier and the gateway's default router.
    #[arg(long, default_value = "198.51.100.1")]
    pub gateway: Ipv4Addr,
    /// The subnet's prefix length (a documentation /24, or up to /15 in 198.18.0.0/15).
    #[arg(long, default_value_t = 24)]
    pub prefix_len: u8,
    /// The first address leased.
    #[arg(long, default_value = "198.51.100.10")]
    pub pool: Ipv4Addr,
    /// How many addresses the pool holds.
    #[arg(long, default_value_t = 240)]
    pub pool_size: u32,
    /// The DNS server handed out (DHCPv4 option 6); our DNS server answers there.
    #[arg(long, default_value = "203.0.113.53")]
    pub dns: Ipv4Addr,
    /// Lease time, seconds (T1 and T2 are 1/2 and 7/8 of it).
    #[arg(long, default_value_t = 3600)]
    pub lease_time: u32,
    /// No Router Advertisements, no DHCPv6 (IPv4 only).
    #[arg(long)]
    pub no_ipv6: bool,
    /// An AFTR name: sent in DHCPv6 option 64 and answered by our DNS with --aftr.
    #[arg(long, value_name = "NAME")]
    pub aftr_name: Option<String>,
    /// The AFTR's address our DNS gives for --aftr-name.
    #[arg(long, default_value = "2001:db8:d::1", requires = "aftr_name")]
    pub aftr: Ipv6Addr,
    /// Hand the IPv4 packets the gateway routes through us to a TUN device of this name
    /// ("the Internet"); what the kernel sends back goes to the lease holding its destination.
    /// The device gets --tun-addr/32 and a route to the gateway's subnet; client SYNs
    /// crossing it are printed.
    #[arg(long, value_name = "NAME")]
    pub tun: Option<String>,
    /// Namespace of the TUN device (default: --netns).
    #[arg(long, value_name = "NS", requires = "tun")]
    pub tun_netns: Option<String>,
    /// The Internet host's address, put on the TUN device as a /32 (our DNS answers
    /// internet.example.net with it).
    #[arg(long, value_name = "ADDR", default_value = "203.0.113.1")]
    pub tun_addr: Ipv4Addr,
    /// Stop after this many seconds (default: until Ctrl-C, or Enter/Ctrl-D on a terminal).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Events and statistics as JSON lines.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: IpoeArgs) -> CliResult {
    match a.role {
        Role::Server(x) => server(x),
    }
}

impl ServerArgs {
    /// The plan's settings these flags stand for.
    fn settings(&self) -> CliResult<IpoeSettings> {
        let s = IpoeSettings {
            gateway: self.gateway,
            prefix_len: self.prefix_len,
            pool: self.pool,
            pool_size: self.pool_size,
            dns: self.dns,
            lease_time: std::time::Duration::from_secs(u64::from(self.lease_time)),
            ipv6: !self.no_ipv6,
            aftr_name: self.aftr_name.clone(),
            aftr: self.aftr,
            internet: self.tun.as_ref().map(|_| self.tun_addr),
            ..IpoeSettings::default()
        };
        if self.tun.is_some() && s.config(MacAddr::ZERO).is_ok() {
            let subnet = emulate::ranges::Ipv4Net::new(self.gateway, self.prefix_len);
            if subnet.contains(self.tun_addr) || self.tun_addr == self.dns {
                return Err(CliError::Usage(format!(
                    "--tun-addr {}: inside the gateway's subnet {subnet} or the DNS server; use e.g. 203.0.113.1",
                    self.tun_addr
                )));
            }
        }
        s.config(MacAddr::ZERO).map_err(|e| {
            CliError::Usage(format!(
                "{e} (--gateway, --prefix-len, --pool, --pool-size, --dns, --lease-time, --aftr-name)"
            ))
        })?;
        Ok(s)
    }
}

fn lease_text(e: &Dhcpv4Event) -> String {
    match e {
        Dhcpv4Event::Bound {
            mac, addr, lease, ..
        } => format!("lease    {mac} {addr} ({lease} s)"),
        Dhcpv4Event::Renewed {
            mac, addr, lease, ..
        } => format!("renew    {mac} {addr} ({lease} s)"),
        Dhcpv4Event::Released { mac, addr, .. } => format!("release  {mac} {addr}"),
        Dhcpv4Event::Declined { mac, addr, .. } => format!("decline  {mac} {addr} (held out)"),
        Dhcpv4Event::Expired { mac, addr, .. } => format!("expire   {mac} {addr}"),
        Dhcpv4Event::Nak {
            mac,
            requested,
            why,
        } => format!(
            "nak      {mac} {} ({why:?})",
            requested.map_or("-".into(), |a| a.to_string())
        ),
    }
}

fn server(a: ServerArgs) -> CliResult {
    let duration = a.duration.map(|d| secs(d, "--duration")).transpose()?;
    let settings = a.settings()?;
    let tun_ns = a.tun_netns.as_deref().or(a.netns.as_deref());
    let tun = match &a.tun {
        Some(name) => Some(hand::internet_tun(
            name,
            tun_ns,
            1500,
            a.tun_addr,
            vec![settings.subnet()],
        )?),
        None => None,
    };
    let (port, mac) = hand::open_port("ipoe", &a.dev, a.netns.as_deref())?;
    let cfg = settings
        .config(mac)
        .map_err(|e| CliError::Usage(e.to_string()))?;
    let stop = Stop::new(duration);
    if !a.json {
        errln!(
            "IPoE server {}/{} on {} ({mac}): pool {} + {}, DNS {}; Ctrl-C, Enter or Ctrl-D stops",
            a.gateway,
            a.prefix_len,
            a.dev,
            a.pool,
            a.pool_size,
            a.dns
        );
    }
    let done = serve(port, cfg, tun, &mut || stop.now(), &mut |n| match n {
        IpoeNews::Lease(e) => emit(a.json, sj::lease(&e), lease_text(&e)),
        IpoeNews::Provision(p) => provision::print_event(a.json, &p),
        IpoeNews::Syn(s) => print_syn(&s, a.json),
    })?;
    let (m, port, tun) = (&done.machine, &done.port, &done.tun);
    if a.json {
        let mut v = sj::ipoe_stats(m);
        v["event"] = "stats".into();
        v["frames_rx"] = port.stats.rx.into();
        v["frames_tx"] = port.stats.tx.into();
        v["frames_unclaimed"] = port.stats.rx_unclaimed.into();
        v["tun"] = tun.as_ref().map(sj::tun).into();
        if let Some(p) = m.provisioner() {
            v["provision"] = provision::stats_json(p);
        }
        outln!("{v}");
        return Ok(());
    }
    if let Some(t) = tun {
        print_tun_stats(t);
    }
    let d = &m.dhcp().stats;
    let list = |c: &emulate::util::Counter<wire::dhcpv4::MessageType>| {
        c.iter()
            .map(|(k, v)| format!("{k:?} {v}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    outln!(
        "dhcpv4: in {}; out {}; leases {} (expired {}, declined {})",
        list(&d.rx),
        list(&d.tx),
        d.leases_now,
        d.expired,
        d.declined
    );
    for (k, v) in d.naks.iter() {
        outln!("dhcpv4 nak {k:?}: {v}");
    }
    for (k, v) in d.dropped.iter() {
        outln!("dhcpv4 dropped {k:?}: {v}");
    }
    if let Some(s) = m.dns() {
        let r = &s.responder().stats;
        let outcomes = r
            .outcomes
            .iter()
            .map(|(k, v)| format!("{k:?} {v}"))
            .collect::<Vec<_>>()
            .join(", ");
        outln!(
            "dns: {} queries ({outcomes}); udp in {} out {}, tcp segments in {} out {}",
            r.queries,
            s.stats.udp_rx,
            s.stats.udp_tx,
            s.stats.tcp_rx,
            s.stats.tcp_tx
        );
    }
    outln!(
        "echo replies {}; relayed to the kernel {}, from it {}",
        m.stats.echo_replies,
        m.stats.relayed_up,
        m.stats.relayed_down
    );
    if let Some(p) = m.provisioner() {
        provision::stats_text(p);
    }
    outln!(
        "frames: rx {} (not ours {}), tx {} (failed {})",
        port.stats.rx,
        port.stats.rx_unclaimed,
        port.stats.tx,
        port.stats.tx_failed
    );
    Ok(())
}
