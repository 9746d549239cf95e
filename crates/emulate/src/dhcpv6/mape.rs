//! What a [`super::Dhcpv6Server`] sends in OPTION_S46_CONT_MAPE (94, RFC 7598 §5), and the
//! check that its rule can map the prefixes the server delegates.

use core::net::Ipv6Addr;
use std::fmt;

use wire::map_rule::{MapRule, PortParams, DEFAULT_PSID_OFFSET, MAX_END_USER_PREFIX_LEN};
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
    pub fn check(&self, pool: Option<&PrefixPool>) -> Result<(), MapeProvisionError> {
        use MapeProvisionError as E;
        let rule = self.rule.map_rule().map_err(E::Rule)?;
        let Some(p) = pool else {
            return Err(E::NoPrefixPool);
        };
        let (r6, r6_len) = rule.ipv6_prefix();
        if p.base_len < r6_len || !in_prefix(p.base, r6, r6_len) {
            return Err(E::PoolOutsideRule {
                base: p.base,
                base_len: p.base_len,
                rule_prefix: r6,
                rule_len: r6_len,
            });
        }
        let need = rule.end_user_len();
        if p.delegated_len < need || p.delegated_len > MAX_END_USER_PREFIX_LEN {
            return Err(E::DelegatedTooShortOrLong {
                delegated_len: p.delegated_len,
                rule_len: r6_len,
                ea_len: rule.ea_len(),
                need,
            });
        }
        Ok(())
    }
}

/// Why [`MapeProvision::check`] refused a rule for a prefix pool; the message says what the
/// pool or rule would need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapeProvisionError {
    /// The option's rule is not a valid MAP rule.
    Rule(wire::Error),
    /// No prefix pool: nothing is delegated for the rule to map.
    NoPrefixPool,
    /// The pool's base is not inside the rule's IPv6 prefix.
    PoolOutsideRule {
        base: Ipv6Addr,
        base_len: u8,
        rule_prefix: Ipv6Addr,
        rule_len: u8,
    },
    /// The delegated length cannot carry the rule's EA bits (`need` is the shortest that can)
    /// or is longer than an end-user prefix may be.
    DelegatedTooShortOrLong {
        delegated_len: u8,
        rule_len: u8,
        ea_len: u8,
        need: u8,
    },
}

impl fmt::Display for MapeProvisionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use MapeProvisionError as E;
        match self {
            E::Rule(e) => write!(f, "the MAP-E rule: {e}"),
            E::NoPrefixPool => f.write_str(
                "the MAP-E rule needs delegated prefixes (IA_PD) to map: no prefix pool",
            ),
            E::PoolOutsideRule {
                base,
                base_len,
                rule_prefix,
                rule_len,
            } => write!(
                f,
                "the prefix pool {base}/{base_len} is not inside the MAP-E rule's IPv6 prefix {rule_prefix}/{rule_len}"
            ),
            E::DelegatedTooShortOrLong {
                delegated_len,
                rule_len,
                ea_len,
                need,
            } => write!(
                f,
                "a delegated /{delegated_len} cannot carry the MAP-E rule's EA bits: the rule prefix /{rule_len} plus {ea_len} EA bits needs a delegated length of /{need} to /{MAX_END_USER_PREFIX_LEN}"
            ),
        }
    }
}

impl std::error::Error for MapeProvisionError {}
