//! `wirerate mape br|ce`: run the `emulate` MAP-E BR (`emulate::mape_port`) on a port by
//! hand, or a MAP-E CE — our B4's tunnel from the CE's MAP address to the BR, with the shared
//! IPv4 address on its TUN — parallel to `wirerate dslite aftr|b4`. Their loops are
//! `bench::hand::mape` and `bench::hand::dslite`.

use std::net::{Ipv4Addr, Ipv6Addr};

use bench::hand::mape::{serve_br, BrNews};
use bench::hand::{self};
use bench::session_json as sj;
use emulate::mape::BrConfig;
use emulate::mape_port::BrPortConfig;
use emulate::softwire::B4Config;
use wire::map_rule::{CeMapping, MapRule, PortParams, DEFAULT_PSID_OFFSET};

use super::dslite::{drive_b4, open, Common};
use super::hand::{emit, print_syn, print_tun_stats, secs, Stop};
use super::provision::{self, ProvisionArgs};
use crate::error::{CliError, CliResult};

/// The BR's address by default (RFC 7598's S46_BR): the AFTR's, as a MAP-E ISP's BR sits
/// where its DS-Lite AFTR does.
pub const DEFAULT_BR: Ipv6Addr = Ipv6Addr::new(0x2001, 0xdb8, 0xd, 0, 0, 0, 0, 1);

/// Play the ISP's MAP-E Border Relay or a subscriber's MAP-E CE on one interface.
///
/// The BR answers Neighbor Solicitations for its address and decapsulates IPv4-in-IPv6 from
/// any CE whose IPv6 source is the MAP address of the IPv4 source address and port (RFC 7597
/// §8.1); the rest it counts by reason (another CE's port, a port in no set, a spoofed IPv4
/// address, …). Towards a CE it encapsulates to the MAP address the rule computes from the
/// destination address and port. With --provision it also provisions the link the way a MAP-E
/// CE expects: Router Advertisements and a DHCPv6 server giving an address, a delegated
/// prefix, DNS and OPTION_S46_CONT_MAPE (94: the rule and the BR's address); the provisioning
/// flags are `wirerate dslite aftr`'s, except that no AFTR name (option 64) is sent, so
/// --aftr-name is not used here.
///
/// The CE computes its MAP address, shared IPv4 address and port set from --prefix (its
/// delegated prefix) and the rule, prints them, and with --dev runs the tunnel to the BR;
/// its --tun device gets the shared address, so a router behind it NAPTs into the port set.
#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  \
    wirerate mape br --netns wr-isp --dev veth1 --provision\n  \
    wirerate mape br --netns wr-isp --dev veth1 --tun wr-inet0 --tun-netns wr-inet\n  \
    wirerate mape ce --prefix 2001:db8:100:300::/56\n  \
    wirerate mape ce --prefix 2001:db8:100:300::/56 --netns wr-gw --dev veth0 --tun wr-wan0")]
pub struct MapeArgs {
    #[command(subcommand)]
    pub role: Role,
}

#[derive(Debug, clap::Subcommand)]
pub enum Role {
    /// The BR (ISP side): ND, the §8.1 checks, encapsulation by the rule, counters by reason.
    Br(BrArgs),
    /// One CE: its mapping from a delegated prefix, then (with --dev) its tunnel to the BR.
    Ce(CeArgs),
}

/// The Basic Mapping Rule (RFC 7597 §5), as option 94 carries it.
#[derive(Debug, Clone, clap::Args)]
pub struct RuleArgs {
    /// The rule's IPv6 prefix.
    #[arg(long, value_name = "PREFIX", default_value = "2001:db8:100::/40")]
    pub rule_ipv6: String,
    /// The rule's IPv4 prefix (the shared addresses).
    #[arg(long, value_name = "PREFIX", default_value = "198.51.100.0/24")]
    pub rule_ipv4: String,
    /// EA-bits length: the bits of a delegated prefix past the rule prefix that give the IPv4
    /// suffix and the PSID.
    #[arg(long, value_name = "BITS", default_value_t = 16)]
    pub ea_bits: u8,
    /// PSID offset a (RFC 7597 §5.1; 6 keeps ports 0–1023 out of every set).
    #[arg(long, value_name = "BITS", default_value_t = DEFAULT_PSID_OFFSET)]
    pub psid_offset: u8,
}

fn prefix<A: std::str::FromStr>(s: &str, flag: &str) -> CliResult<(A, u8)> {
    let bad = || CliError::Usage(format!("{flag} {s}: expected ADDRESS/LENGTH"));
    let (a, l) = s.split_once('/').ok_or_else(bad)?;
    Ok((a.parse().map_err(|_| bad())?, l.parse().map_err(|_| bad())?))
}

impl RuleArgs {
    /// The rule, or a usage error naming the flags.
    pub fn rule(&self) -> CliResult<MapRule> {
        let (p6, l6) = prefix::<Ipv6Addr>(&self.rule_ipv6, "--rule-ipv6")?;
        let (p4, l4) = prefix::<Ipv4Addr>(&self.rule_ipv4, "--rule-ipv4")?;
        let params = (self.psid_offset != DEFAULT_PSID_OFFSET).then_some(PortParams {
            offset: self.psid_offset,
            psid_len: 0,
            psid: 0,
        });
        MapRule::new(p6, l6, p4, l4, self.ea_bits, params).map_err(|e| {
            CliError::Usage(format!(
                "--rule-ipv6/--rule-ipv4/--ea-bits/--psid-offset: {e}"
            ))
        })
    }
}

#[derive(Debug, clap::Args)]
pub struct BrArgs {
    #[command(flatten)]
    pub common: Common,
    /// The BR's address (the tunnel endpoint CEs send to; S46_BR in option 94).
    #[arg(long, default_value_t = DEFAULT_BR)]
    pub addr: Ipv6Addr,
    #[command(flatten)]
    pub rule: RuleArgs,
    /// Send the rule in option 94 with the F flag (also a Forwarding Mapping Rule: CEs of the
    /// same rule talk directly).
    #[arg(long)]
    pub fmr: bool,
    #[command(flatten)]
    pub provision: ProvisionArgs,
    /// Hand the IPv4 packets out of the tunnel to a TUN device of this name ("the
    /// Internet"); what the kernel routes into it goes to the CE the rule names. The device
    /// gets --tun-addr/32 and a route to the rule's IPv4 prefix.
    #[arg(long, value_name = "NAME")]
    pub tun: Option<String>,
    /// Namespace of the TUN device (default: --netns).
    #[arg(long, value_name = "NS")]
    pub tun_netns: Option<String>,
    /// The Internet host's address, put on the TUN device as a /32.
    #[arg(long, value_name = "ADDR", default_value = "203.0.113.1")]
    pub tun_addr: Ipv4Addr,
}

#[derive(Debug, clap::Args)]
pub struct CeArgs {
    /// The CE's delegated prefix (DHCPv6 IA_PD), e.g. 2001:db8:100:300::/56.
    #[arg(long, value_name = "PREFIX")]
    pub prefix: String,
    #[command(flatten)]
    pub rule: RuleArgs,
    /// The BR's address.
    #[arg(long, default_value_t = DEFAULT_BR)]
    pub br: Ipv6Addr,
    /// Network namespace of --dev.
    #[arg(long)]
    pub netns: Option<String>,
    /// Run the CE's tunnel on this interface (without: print the mapping and exit).
    #[arg(long)]
    pub dev: Option<String>,
    /// Largest outer IPv6 packet.
    #[arg(long, default_value_t = 1500)]
    pub mtu: usize,
    /// Stop after this many seconds.
    #[arg(long)]
    pub duration: Option<f64>,
    /// Stop this many seconds after the tunnel came up.
    #[arg(long)]
    pub hold: Option<f64>,
    /// Expose the tunnel as a TUN device of this name in --netns: once up it gets the shared
    /// IPv4 address, the largest IPv4 packet carried whole as MTU and the default route.
    #[arg(long, value_name = "NAME", requires = "dev")]
    pub tun: Option<String>,
    /// Events and statistics as JSON lines.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: MapeArgs) -> CliResult {
    match a.role {
        Role::Br(x) => br(x),
        Role::Ce(x) => ce(x),
    }
}

fn mapping_text(ce: Ipv6Addr, m: &CeMapping) -> String {
    format!(
        "CE {ce}: IPv4 {}/{} PSID {:#x}/{} ports {}",
        m.ipv4,
        m.ipv4_len,
        m.ports.psid(),
        m.ports.psid_len(),
        sj::port_ranges(&m.ports).join(",")
    )
}

fn br(a: BrArgs) -> CliResult {
    let c = &a.common;
    let duration = c.duration.map(|d| secs(d, "--duration")).transpose()?;
    let rule = a.rule.rule()?;
    let mut br_cfg = BrConfig::new(a.addr, vec![rule]);
    br_cfg.mtu = c.mtu;
    // Refuse bad provisioning flags (and a rule that cannot map the pool) before opening the port.
    let provision_of = |mac| -> CliResult<_> {
        let Some(mut p) = a.provision.config(mac, c.mtu)? else {
            return Ok(None);
        };
        p.dhcp.aftr_name = None;
        p.dhcp.mape = Some(emulate::dhcpv6::MapeProvision::new(&rule, a.fmr, a.addr));
        p.check()
            .map_err(|e| CliError::Usage(format!("--provision with the rule: {e}")))?;
        Ok(Some(p))
    };
    provision_of(wire::ethernet::MacAddr::ZERO)?;
    let tun_ns = a.tun_netns.as_deref().or(c.netns.as_deref());
    let (p4, l4) = rule.ipv4_prefix();
    let tun = match &a.tun {
        Some(name) => Some(hand::internet_tun(
            name,
            tun_ns,
            1500,
            a.tun_addr,
            vec![format!("{p4}/{l4}")],
        )?),
        None => None,
    };
    let (port, mac) = open(c)?;
    let mut cfg = BrPortConfig::new(br_cfg, mac);
    cfg.provision = provision_of(mac)?;
    let stop = Stop::new(duration);
    if !c.json {
        errln!(
            "MAP-E BR {} on {} ({mac}), rule {} {} EA {} offset {}; Ctrl-C, Enter or Ctrl-D stops",
            a.addr,
            c.dev,
            a.rule.rule_ipv6,
            a.rule.rule_ipv4,
            a.rule.ea_bits,
            rule.psid_offset()
        );
    }
    let done = serve_br(port, cfg, tun, &mut || stop.now(), &mut |n| match n {
        BrNews::Ce { ce, mapping, info } => {
            let mut v = sj::ce_mapping(ce, &mapping);
            v["event"] = "ce".into();
            v["mac"] = info.peer_mac.to_string().into();
            emit(c.json, v, format!("ce  {}", mapping_text(ce, &mapping)));
        }
        BrNews::Provision(p) => provision::print_event(c.json, &p),
        BrNews::Syn(s) => print_syn(&s, c.json),
    })?;
    let (m, port, tun) = (&done.machine, &done.port, &done.tun);
    let (st, bs) = (&m.stats, m.br().stats());
    if c.json {
        let mut v = serde_json::json!({
            "event": "stats", "ces": st.ces_up, "no_neighbor": st.no_neighbor,
            "br": sj::br(bs), "na_tx": m.neighbors().stats.na_tx,
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
            "CEs: {}; decapsulated {}, encapsulated {}, towards unknown CEs {}",
            st.ces_up,
            bs.decapsulated,
            bs.encapsulated,
            st.no_neighbor
        );
        for (k, v) in bs.upstream_dropped.iter() {
            outln!("from CEs dropped {k:?}: {v}");
        }
        for (k, v) in bs.downstream_dropped.iter() {
            outln!("towards CEs dropped {k:?}: {v}");
        }
        outln!(
            "frames: rx {} (not ND/DHCPv6/MAP-E {}), tx {} (failed {})",
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

fn ce(a: CeArgs) -> CliResult {
    let rule = a.rule.rule()?;
    let (p, l) = prefix::<Ipv6Addr>(&a.prefix, "--prefix")?;
    let m = rule
        .ce_mapping(p, l)
        .map_err(|e| CliError::Usage(format!("--prefix {}: {e}", a.prefix)))?;
    let ce = m.ipv6_address();
    let mut v = sj::ce_mapping(ce, &m);
    v["event"] = "mapping".into();
    v["br"] = a.br.to_string().into();
    emit(
        a.json,
        v,
        format!("mapping  {}  BR {}", mapping_text(ce, &m), a.br),
    );
    let Some(dev) = a.dev.clone() else {
        return Ok(());
    };
    let c = Common {
        netns: a.netns.clone(),
        dev,
        mtu: a.mtu,
        duration: a.duration,
        json: a.json,
    };
    let duration = a.duration.map(|d| secs(d, "--duration")).transpose()?;
    let hold = a.hold.map(|d| secs(d, "--hold")).transpose()?;
    let tun = a
        .tun
        .as_deref()
        .map(|name| hand::create_tun(name, a.netns.as_deref()))
        .transpose()?;
    let (port, mac) = open(&c)?;
    let mut cfg = B4Config::new(ce, mac, a.br);
    cfg.tunnel.mtu = a.mtu;
    // The BR answers no echo: the tunnel is up once the BR's MAC is resolved.
    cfg.probe_attempts = 0;
    cfg.ipv4 = m.ipv4;
    if !a.json {
        errln!(
            "MAP-E CE {ce} -> BR {} on {} ({mac}); Ctrl-C, Enter or Ctrl-D stops",
            a.br,
            c.dev
        );
    }
    drive_b4(&c, port, cfg, tun, hold, duration)
}
