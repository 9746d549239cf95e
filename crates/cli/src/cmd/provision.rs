//! `wirerate dslite aftr --provision …`: the flags of the AFTR port's IPv6 provisioning (RA +
//! DHCPv6, `emulate::provision`) turned into its configuration, and its events and statistics
//! printed. Parsing and printing only; the machine is `emulate`'s.

use std::net::Ipv6Addr;

use emulate::dhcpv6::{AddressPool, Dhcpv6Event, Leased, PrefixPool};
use emulate::pppoe_v6::PppoeProvisioning;
use emulate::provision::{defaults, ProvisionConfig, ProvisionEvent, Provisioner};
use wire::ethernet::MacAddr;
use wire::routerdisc::PrefixInfo;

use super::hand::emit;
use crate::error::{CliError, CliResult};
use bench::session_json::counts as counts_json;

#[derive(Debug, Clone, clap::Args)]
pub struct ProvisionArgs {
    /// Provision the link like an ISP: Router Advertisements (M and O set, the --link-prefix
    /// with L and A, the MTU, RDNSS) and a stateful DHCPv6 server (an address from the
    /// --na-first pool, a prefix from the --pd-pool, DNS, and the AFTR's name, option 64),
    /// from the port's link-local address. A stock DS-Lite gateway then configures its WAN by
    /// itself; wirerate answers no DNS, so it must reach the AFTR by address or resolve the
    /// name elsewhere.
    #[arg(long)]
    pub provision: bool,
    /// The AFTR name sent in DHCPv6 option 64 (RFC 6334) to clients that ask for it.
    #[arg(long, default_value = defaults::AFTR_NAME, requires = "provision")]
    pub aftr_name: String,
    /// DNS servers (RA RDNSS and DHCPv6 option 23), comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "2001:db8:53::1",
        requires = "provision"
    )]
    pub dns: Vec<Ipv6Addr>,
    /// The link's prefix in the RA (on-link, autonomous), a /64 in 2001:db8::/32.
    #[arg(long, default_value = "2001:db8:c::/64", requires = "provision")]
    pub link_prefix: String,
    /// The first IA_NA address handed out.
    #[arg(long, default_value_t = defaults::FIRST_ADDRESS, requires = "provision")]
    pub na_first: Ipv6Addr,
    /// How many IA_NA addresses (0: none; IA_NA is answered NoAddrsAvail).
    #[arg(long, default_value_t = 256, requires = "provision")]
    pub na_count: u32,
    /// The pool delegated prefixes are carved from.
    #[arg(long, default_value = "2001:db8:100::/40", requires = "provision")]
    pub pd_pool: String,
    /// Length of each delegated prefix.
    #[arg(long, default_value_t = defaults::PD_LEN, requires = "provision")]
    pub pd_len: u8,
    /// How many prefixes (0: none; IA_PD is answered NoPrefixAvail).
    #[arg(long, default_value_t = 256, requires = "provision")]
    pub pd_count: u32,
}

fn prefix(s: &str, flag: &str) -> CliResult<(Ipv6Addr, u8)> {
    let bad = || {
        CliError::Usage(format!(
            "{flag} {s}: expected ADDRESS/LENGTH, e.g. 2001:db8:100::/40"
        ))
    };
    let (a, l) = s.split_once('/').ok_or_else(bad)?;
    let a: Ipv6Addr = a.parse().map_err(|_| bad())?;
    let l: u8 = l.parse().map_err(|_| bad())?;
    if l > 128 {
        return Err(bad());
    }
    Ok((a, l))
}

impl ProvisionArgs {
    /// The configuration, or None without `--provision`; refuses (exit 2) what
    /// [`ProvisionConfig::check`] refuses, before a port is opened.
    pub fn config(&self, mac: MacAddr, mtu: usize) -> CliResult<Option<ProvisionConfig>> {
        if !self.provision {
            return Ok(None);
        }
        let mut c = ProvisionConfig::dslite(mac, u32::try_from(mtu).unwrap_or(u32::MAX));
        let (lp, ll) = prefix(&self.link_prefix, "--link-prefix")?;
        if let Some(p) = c.ra.prefixes.first_mut() {
            *p = PrefixInfo {
                prefix: lp,
                prefix_len: ll,
                ..*p
            };
        }
        c.ra.rdnss = self.dns.clone();
        c.dhcp.dns = self.dns.clone();
        c.dhcp.aftr_name = Some(self.aftr_name.clone());
        c.dhcp.addresses = (self.na_count > 0).then_some(AddressPool {
            first: self.na_first,
            size: self.na_count,
        });
        let (base, base_len) = prefix(&self.pd_pool, "--pd-pool")?;
        c.dhcp.prefixes = (self.pd_count > 0).then_some(PrefixPool {
            base,
            base_len,
            delegated_len: self.pd_len,
            size: self.pd_count,
        });
        c.check()
            .map_err(|e| CliError::Usage(format!("--provision: {e}")))?;
        Ok(Some(c))
    }
}

fn leased_text(l: &Leased) -> String {
    match l {
        Leased::Address(a) => format!("address {a}"),
        Leased::Prefix(p, n) => format!("prefix {p}/{n}"),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// One line per binding change: `lease`, `renew`, `release`, `expire`.
pub fn print_event(json: bool, e: &ProvisionEvent) {
    let ProvisionEvent::Dhcp { mac, event } = e;
    let (what, client, iaid, leased) = match event {
        Dhcpv6Event::Bound {
            client,
            iaid,
            leased,
        } => ("lease", client, iaid, leased),
        Dhcpv6Event::Renewed {
            client,
            iaid,
            leased,
        } => ("renew", client, iaid, leased),
        Dhcpv6Event::Released {
            client,
            iaid,
            leased,
        } => ("release", client, iaid, leased),
        Dhcpv6Event::Expired {
            client,
            iaid,
            leased,
        } => ("expire", client, iaid, leased),
    };
    let mut v = serde_json::json!({
        "event": what, "client_duid": hex(client), "iaid": iaid,
    });
    if *mac != MacAddr::ZERO {
        v["mac"] = mac.to_string().into();
    }
    match leased {
        Leased::Address(a) => v["address"] = a.to_string().into(),
        Leased::Prefix(p, n) => v["prefix"] = format!("{p}/{n}").into(),
    }
    emit(
        json,
        v,
        format!(
            "{what:<8} {} iaid {iaid} {}",
            if *mac == MacAddr::ZERO {
                hex(client)
            } else {
                mac.to_string()
            },
            leased_text(leased)
        ),
    );
}

fn type_name(t: u8) -> String {
    use wire::dhcpv6::msg;
    match t {
        msg::SOLICIT => "Solicit".into(),
        msg::ADVERTISE => "Advertise".into(),
        msg::REQUEST => "Request".into(),
        msg::CONFIRM => "Confirm".into(),
        msg::RENEW => "Renew".into(),
        msg::REBIND => "Rebind".into(),
        msg::REPLY => "Reply".into(),
        msg::RELEASE => "Release".into(),
        msg::DECLINE => "Decline".into(),
        msg::INFORMATION_REQUEST => "Information-Request".into(),
        t => format!("type {t}"),
    }
}

fn by_type(c: &emulate::util::Counter<u8>) -> serde_json::Map<String, serde_json::Value> {
    c.iter().map(|(k, v)| (type_name(k), v.into())).collect()
}

/// The provisioning statistics, as a JSON object or lines of text.
pub fn stats_json(p: &Provisioner) -> serde_json::Value {
    let ra = &p.advertiser().stats;
    let d = &p.dhcp().stats;
    serde_json::json!({
        "link_local": p.link_local().to_string(),
        "rs_rx": p.stats.rs_rx, "ra_unsolicited": ra.unsolicited_tx,
        "ra_solicited": ra.solicited_tx, "ra_rate_limited": ra.rate_limited,
        "dhcp_rx": by_type(&d.rx), "dhcp_tx": by_type(&d.tx),
        "dhcp_dropped": counts_json(&d.dropped), "dropped": counts_json(&p.stats.dropped),
        "no_addrs_avail": d.no_addrs, "no_prefix_avail": d.no_prefix,
        "bindings": d.bindings_now, "expired": d.expired,
    })
}

pub fn stats_text(p: &Provisioner) {
    let ra = &p.advertiser().stats;
    let d = &p.dhcp().stats;
    outln!(
        "provisioning from {}: RS {}, RA {} unsolicited + {} solicited ({} rate-limited), bindings {} (expired {}), NoAddrsAvail {}, NoPrefixAvail {}",
        p.link_local(),
        p.stats.rs_rx,
        ra.unsolicited_tx,
        ra.solicited_tx,
        ra.rate_limited,
        d.bindings_now,
        d.expired,
        d.no_addrs,
        d.no_prefix
    );
    let list = |c: &emulate::util::Counter<u8>| {
        c.iter()
            .map(|(k, v)| format!("{} {v}", type_name(k)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    outln!("dhcpv6: in {}; out {}", list(&d.rx), list(&d.tx));
    for (k, v) in d.dropped.iter() {
        outln!("dhcpv6 dropped {k:?}: {v}");
    }
    for (k, v) in p.stats.dropped.iter() {
        outln!("provisioning dropped {k:?}: {v}");
    }
}

/// The statistics of the provisioning inside PPPoE sessions.
pub fn print_pppoe_stats(p: &PppoeProvisioning, json: bool) {
    let d = &p.dhcp().stats;
    let v = serde_json::json!({
        "event": "provision_stats", "ra_tx": p.ra_tx, "rs_rx": p.stats.rs_rx,
        "dhcp_rx": by_type(&d.rx), "dhcp_tx": by_type(&d.tx),
        "dhcp_dropped": counts_json(&d.dropped), "dropped": counts_json(&p.stats.dropped),
        "bindings": d.bindings_now, "expired": d.expired,
        "no_addrs_avail": d.no_addrs, "no_prefix_avail": d.no_prefix,
    });
    let list = |c: &emulate::util::Counter<u8>| {
        c.iter()
            .map(|(k, v)| format!("{} {v}", type_name(k)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    emit(
        json,
        v,
        format!(
            "IPv6 in sessions: RA {} (RS {}), bindings {} (expired {}); dhcpv6 in {}; out {}",
            p.ra_tx,
            p.stats.rs_rx,
            d.bindings_now,
            d.expired,
            list(&d.rx),
            list(&d.tx)
        ),
    );
}
