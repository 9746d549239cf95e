//! What a [`super::Dhcpv6Server`] sends in OPTION_S46_CONT_MAPE (94, RFC 7598 §5), and the
//! check that its rule can map the prefixes the server delegates.

use core::net::Ipv6Addr;

use wire::map_rule::{MapRule, PortParams, DEFAULT_PSID_OFFSET};
use wire::s46::S46Rule;

use super::pools::{in_prefix, PrefixPool};

/// What OPTION_S46_CONT_MAPE carries: one Basic Mapping Rule (its F flag set when it is also
/// a Forwarding Mapping Rule) and the BR's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MapeProvision {
    pub rule: S46Rule,
    pub br: Ipv6Addr,
}

impl MapeProvision {
    /// The option for `rule` and `br`; an S46_PORTPARAMS goes inside the rule only when the
    /// rule's offset differs from RFC 7597's default 6 (with a PSID to place) or its PSID is
    /// provisioned beside the EA bits: otherwise a CE derives the same port set without it.
    pub fn new(rule: &MapRule, fmr: bool, br: Ipv6Addr) -> MapeProvision {
        let (ipv6_prefix, prefix6_len) = rule.ipv6_prefix();
        let (ipv4_prefix, prefix4_len) = rule.ipv4_prefix();
        let needs_params = rule.explicit_psid().is_some()
            || (rule.psid_len() > 0 && rule.psid_offset() != DEFAULT_PSID_OFFSET);
        let port_params = needs_params.then(|| PortParams {
            offset: rule.psid_offset(),
            psid_len: rule.psid_len(),
            psid: rule.explicit_psid().unwrap_or(0),
        });
        MapeProvision {
            rule: S46Rule {
                fmr,
                ea_len: rule.ea_len(),
                prefix4_len,
                ipv4_prefix,
                prefix6_len,
                ipv6_prefix,
                port_params,
            },
            br,
        }
    }

    /// Refuses a rule that cannot map the pool's prefixes: every delegated prefix must lie in
    /// the rule's IPv6 prefix and be at least as long as the rule prefix plus the EA bits
    /// (and at most 64 bits), else the CE has no address or port set to derive.
    pub fn check(&self, pool: Option<&PrefixPool>) -> Result<(), String> {
        let rule = self
            .rule
            .map_rule()
            .map_err(|e| format!("the MAP-E rule: {e}"))?;
        let Some(p) = pool else {
            return Err(
                "the MAP-E rule needs delegated prefixes (IA_PD) to map: no prefix pool".into(),
            );
        };
        let (r6, r6_len) = rule.ipv6_prefix();
        if p.base_len < r6_len || !in_prefix(p.base, r6, r6_len) {
            return Err(format!(
                "the prefix pool {}/{} is not inside the MAP-E rule's IPv6 prefix {r6}/{r6_len}",
                p.base, p.base_len
            ));
        }
        let need = rule.end_user_len();
        if p.delegated_len < need || p.delegated_len > wire::map_rule::MAX_END_USER_PREFIX_LEN {
            return Err(format!(
                "a delegated /{} cannot carry the MAP-E rule's EA bits: the rule prefix /{r6_len} plus {} EA bits needs a delegated length of /{need} to /{}",
                p.delegated_len,
                rule.ea_len(),
                wire::map_rule::MAX_END_USER_PREFIX_LEN
            ));
        }
        Ok(())
    }
}
