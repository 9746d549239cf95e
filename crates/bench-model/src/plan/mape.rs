//! `[ports.NAME.mape]`: the port plays a MAP-E Border Relay (RFC 7597), with one basic mapping
//! rule; with `provision` it also gives the CE its WAN, its delegated prefix and the rule over
//! DHCPv6 (option 94), the way a MAP-E ISP does.

use core::time::Duration;
use std::net::{Ipv4Addr, Ipv6Addr};

use serde::{Deserialize, Serialize};
use wire::map_rule::{MapRule, PortParams, DEFAULT_PSID_OFFSET};

/// `[ports.NAME.mape]` (role `br`, the only one so far).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapeSettings {
    /// The BR's IPv6 address (S46_BR): the tunnel endpoint CEs send to.
    pub address: Ipv6Addr,
    /// The basic mapping rule: its IPv6 prefix, IPv4 prefix, EA-bits length, PSID offset.
    pub rule_ipv6: (Ipv6Addr, u8),
    pub rule_ipv4: (Ipv4Addr, u8),
    pub ea_bits: u8,
    pub psid_offset: u8,
    /// Option 94's F flag: the rule is also a forwarding mapping rule.
    #[serde(default)]
    pub fmr: bool,
    /// Also provision the link (RA + DHCPv6: an address, a delegated /56 out of
    /// 2001:db8:100::/40, DNS and option 94), so a stock MAP-E CE comes up by itself.
    #[serde(default)]
    pub provision: bool,
    /// The Internet host's address: the BR hands the tunnel's IPv4 to a TUN device in a
    /// namespace the run creates, where iperf3's server runs (TCP crosses the BR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internet: Option<Ipv4Addr>,
    /// How long the run waits for the first CE packet.
    #[serde(with = "crate::secs")]
    pub timeout: Duration,
    /// The largest outer IPv6 packet on the link (default 1500).
    pub mtu: usize,
}

impl MapeSettings {
    /// The rule for `wire::map_rule`'s arithmetic.
    pub fn rule(&self) -> Result<MapRule, wire::Error> {
        let params = (self.psid_offset != DEFAULT_PSID_OFFSET).then_some(PortParams {
            offset: self.psid_offset,
            psid_len: 0,
            psid: 0,
        });
        MapRule::new(
            self.rule_ipv6.0,
            self.rule_ipv6.1,
            self.rule_ipv4.0,
            self.rule_ipv4.1,
            self.ea_bits,
            params,
        )
    }

    /// What DHCPv6 option 94 carries for this port.
    pub fn provision_option(&self) -> Result<emulate::dhcpv6::MapeProvision, wire::Error> {
        Ok(emulate::dhcpv6::MapeProvision::new(
            &self.rule()?,
            self.fmr,
            self.address,
        ))
    }
}
