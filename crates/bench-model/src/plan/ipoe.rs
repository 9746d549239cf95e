//! `[ports.NAME.ipoe]`: the port plays the ISP side of an IPoE WAN — a DHCPv4 server, RA +
//! DHCPv6 (address, delegated prefix, DNS), a DNS server at the addresses handed out, and
//! optionally "the Internet" behind it (a TUN device in a namespace the run creates, where
//! iperf3's server runs). `emulate::ipoe` is the machine; [`IpoeSettings::config`] is the one
//! place a plan's keys (and `wirerate ipoe server`'s flags) become its configuration.

use core::time::Duration;
use std::net::{Ipv4Addr, Ipv6Addr};

use emulate::dhcpv4::Dhcpv4Config;
use emulate::dns::{defaults as dns_defaults, DnsConfig};
use emulate::ipoe::IpoeConfig;
use emulate::provision::ProvisionConfig;
use emulate::util::Entropy;
use serde::{Deserialize, Serialize};
use wire::ethernet::MacAddr;

/// `[ports.NAME.ipoe]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IpoeSettings {
    /// Our address on the link: the DHCPv4 server identifier and the gateway's default
    /// router; test frames to this port are addressed to it.
    pub gateway: Ipv4Addr,
    /// The subnet's prefix length (24 in a documentation /24; up to /15 in 198.18.0.0/15).
    pub prefix_len: u8,
    /// The first address leased, and how many.
    pub pool: Ipv4Addr,
    pub pool_size: u32,
    /// The DNS server handed out by DHCPv4 (option 6), where our DNS server answers.
    pub dns: Ipv4Addr,
    #[serde(with = "crate::secs")]
    pub lease_time: Duration,
    /// RA + DHCPv6 (IA_NA, IA_PD, DNS 2001:db8:53::1) on the same link.
    pub ipv6: bool,
    /// The AFTR name given by DHCPv6 option 64 and answered (AAAA [`Self::aftr`]) by our DNS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aftr_name: Option<String>,
    pub aftr: Ipv6Addr,
    /// The Internet host: a TUN device in `wr-inet<pid>-PORT` holds it, iperf3's server runs
    /// there, our DNS answers `internet.example.net` with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internet: Option<Ipv4Addr>,
    /// How long the run waits for the gateway's lease before giving up (nothing is sent).
    #[serde(with = "crate::secs")]
    pub timeout: Duration,
}

impl Default for IpoeSettings {
    /// Gateway 198.51.100.1/24, 240 addresses from 198.51.100.10, DNS 203.0.113.53, one-hour
    /// leases, IPv6 on, no AFTR name (AFTR 2001:db8:d::1 when one is given), 30 s to wait.
    fn default() -> IpoeSettings {
        use emulate::dhcpv4::defaults as d;
        IpoeSettings {
            gateway: d::GATEWAY,
            prefix_len: d::PREFIX_LEN,
            pool: d::POOL_FIRST,
            pool_size: d::POOL_SIZE,
            dns: d::DNS,
            lease_time: Duration::from_secs(u64::from(d::LEASE_TIME)),
            ipv6: true,
            aftr_name: None,
            aftr: Ipv6Addr::new(0x2001, 0xdb8, 0xd, 0, 0, 0, 0, 1),
            internet: None,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Why [`IpoeSettings::config`] refused a port's settings: `emulate`'s own words, which say
/// what would work. Always the plan's to fix.
#[derive(Debug, Clone, PartialEq)]
pub enum IpoeSettingsError {
    /// A name the port's DNS answers for (`aftr-name`, the Internet name) is not a DNS name.
    Name(emulate::dns::HostNameError),
    /// The DHCP side refused the pool, subnet or DNS address.
    Refused(emulate::ipoe::IpoeConfigError),
}

impl std::fmt::Display for IpoeSettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IpoeSettingsError::Name(e) => e.fmt(f),
            IpoeSettingsError::Refused(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for IpoeSettingsError {}

impl IpoeSettings {
    /// The port machine's configuration for a port with `mac`; refused (with what would
    /// work) where `emulate` refuses it: pools, subnet, DNS address outside the lab's ranges
    /// or in the pool, a name that is not a DNS name.
    pub fn config(&self, mac: MacAddr) -> Result<IpoeConfig, IpoeSettingsError> {
        let mut c = IpoeConfig::new(mac);
        c.entropy = Entropy::Os;
        c.dhcp = Dhcpv4Config {
            gateway: self.gateway,
            prefix_len: self.prefix_len,
            pool_first: self.pool,
            pool_size: self.pool_size,
            dns: vec![self.dns],
            lease_time: u32::try_from(self.lease_time.as_secs()).unwrap_or(u32::MAX),
            ..Dhcpv4Config::default()
        };
        c.provision = self.ipv6.then(|| {
            let mut p = ProvisionConfig::ipoe(mac);
            p.dhcp.aftr_name = self.aftr_name.clone();
            p
        });
        let mut names = DnsConfig::new();
        if let Some(n) = &self.aftr_name {
            names
                .add(n, self.aftr.into())
                .map_err(IpoeSettingsError::Name)?;
        }
        if let Some(a) = self.internet {
            names
                .add(dns_defaults::INTERNET_NAME, a.into())
                .map_err(IpoeSettingsError::Name)?;
        }
        c.dns = Some(names);
        c.check().map_err(IpoeSettingsError::Refused)?;
        Ok(c)
    }

    /// Where the Internet namespace routes the subscribers: the gateway's subnet.
    pub fn subnet(&self) -> String {
        emulate::ranges::Ipv4Net::new(self.gateway, self.prefix_len).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_make_a_checked_config_with_names_for_the_aftr_and_the_internet() {
        let mut s = IpoeSettings::default();
        assert!(s.config(MacAddr::ZERO).is_ok());
        s.aftr_name = Some("aftr.example.net".into());
        s.internet = Some(Ipv4Addr::new(203, 0, 113, 1));
        let c = s.config(MacAddr::ZERO).unwrap();
        let names = c.dns.unwrap();
        assert_eq!(names.hosts.len(), 2);
        assert_eq!(
            c.provision.unwrap().dhcp.aftr_name.as_deref(),
            Some("aftr.example.net")
        );
        assert_eq!(s.subnet(), "198.51.100.0/24");
        s.pool_size = 300;
        assert!(s
            .config(MacAddr::ZERO)
            .unwrap_err()
            .to_string()
            .contains("245"));
        s.pool_size = 10;
        s.dns = Ipv4Addr::new(198, 51, 100, 12);
        assert!(s
            .config(MacAddr::ZERO)
            .unwrap_err()
            .to_string()
            .contains("inside the pool"));
    }
}
