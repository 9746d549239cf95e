//! DUT profiles: names, parsing, and the nftables ruleset each one generates.
//!
//! A profile is applied as ONE `nft -f` transaction that creates (or replaces) the lab's own
//! table `inet wirerate` in the DUT namespace, so switching profiles is atomic and removing a
//! profile is deleting that table. Generation is pure, so rulesets are unit-tested as text.
//!
//! Rules that must be "walked but never match" test only addresses the lab never uses
//! (192.0.2.0/24 and 2001:db8:ffff::/48 as sources), so they cost a comparison per packet
//! without ever changing a verdict.

use std::fmt;
use std::fmt::Write as _;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::feature::Feature;
use crate::topology::Topology;

/// Name of the nftables table (in the DUT's namespace) that holds the active profile.
pub const TABLE: &str = "wirerate";

/// Largest rule count accepted: generation is linear and ~10,000 rules load in ~0.2 s, so a
/// million rules is still a usable (if slow) experiment; beyond that is a typo.
pub const MAX_RULES: u32 = 1_000_000;

/// One DUT configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "String", try_from = "String")]
pub enum Profile {
    /// Plain routing: no netfilter hooks at all.
    Forward,
    /// Connection tracking; established/related accepted first, then `rules` non-matching
    /// rules, then accept — only a flow's first packets walk the rules.
    FilterStateful { rules: u32 },
    /// `rules` non-matching rules walked by every packet, no connection tracking.
    FilterStateless { rules: u32 },
    /// Masquerade (NAPT) towards port B, optionally with a stateful filter of `filter` rules.
    Napt { filter: Option<u32> },
    /// TCP MSS on forwarded SYNs clamped to `mss` (lowered only, like TCPMSS `--set-mss`).
    MssClamp { mss: u16 },
    /// `forward` with the XDP fast path on. The fast path is a switch that composes with other
    /// profiles (`lab::Lab::set_fastpath`); this name is kept so plans written when it was
    /// a profile of its own still parse. Applying it applies `forward` and turns the fast path
    /// on, so the lab then reports profile `forward` with the fast path on.
    Fastpath,
}

/// How the MSS clamp is installed. nftables' TCP-option expression keeps everything in one
/// table; the xtables TCPMSS target (through iptables-nft) is the fallback for kernels whose
/// nftables lacks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum MssBackend {
    NftExthdr,
    XtablesTcpmss,
}

impl Profile {
    /// Parse a profile name such as `filter-stateful-100` or `napt+filter-stateful-10`.
    pub fn parse(s: &str) -> Result<Profile> {
        let given = s.trim();
        let invalid = |reason: String| Error::InvalidProfile {
            given: given.to_string(),
            reason,
        };
        let count = |digits: &str| -> Result<u32> {
            let n: u64 = digits
                .parse()
                .map_err(|_| invalid(format!("`{digits}` is not a rule count")))?;
            if n > u64::from(MAX_RULES) {
                return Err(invalid(format!("at most {MAX_RULES} rules")));
            }
            Ok(n as u32)
        };
        match given {
            "forward" => return Ok(Profile::Forward),
            "napt" => return Ok(Profile::Napt { filter: None }),
            "fastpath" => return Ok(Profile::Fastpath),
            _ => {}
        }
        if let Some(n) = given.strip_prefix("napt+filter-stateful-") {
            return Ok(Profile::Napt {
                filter: Some(count(n)?),
            });
        }
        if let Some(n) = given.strip_prefix("filter-stateful-") {
            return Ok(Profile::FilterStateful { rules: count(n)? });
        }
        if let Some(n) = given.strip_prefix("filter-stateless-") {
            return Ok(Profile::FilterStateless { rules: count(n)? });
        }
        if let Some(m) = given.strip_prefix("mss-clamp-") {
            let mss: u16 = m
                .parse()
                .map_err(|_| invalid(format!("`{m}` is not an MSS (1..65535)")))?;
            if mss == 0 {
                return Err(invalid("the MSS must be at least 1".into()));
            }
            return Ok(Profile::MssClamp { mss });
        }
        Err(Error::UnknownProfile {
            given: given.to_string(),
            valid: PATTERNS.join(", "),
        })
    }

    /// Kernel features the profile needs, in the order they are checked.
    pub fn needs(&self) -> Vec<Feature> {
        match self {
            Profile::Forward | Profile::FilterStateless { .. } => vec![Feature::Nftables],
            Profile::FilterStateful { .. } => vec![Feature::Nftables, Feature::Conntrack],
            Profile::Napt { .. } => vec![Feature::Nftables, Feature::Conntrack, Feature::Nat],
            // Either backend will do; `Lab` picks one with the probe.
            Profile::MssClamp { .. } => vec![Feature::Nftables],
            Profile::Fastpath => vec![Feature::Nftables, Feature::XdpFastpath],
        }
    }

    /// Whether the profile means anything on `topology`. Filters hook `forward` (or `input`
    /// when the DUT is the endpoint); NAPT, the MSS clamp and the fast path act on forwarded
    /// traffic only; the direct topology has no DUT.
    pub fn fits(&self, topology: Topology) -> bool {
        match topology {
            Topology::Forward => true,
            Topology::Endpoint => matches!(
                self,
                Profile::Forward | Profile::FilterStateful { .. } | Profile::FilterStateless { .. }
            ),
            Topology::Direct => false,
        }
    }

    /// The complete `nft -f` input that installs this profile, replacing any earlier one.
    /// `mss` chooses how an MSS clamp is done (with [`MssBackend::XtablesTcpmss`] the clamp
    /// itself is installed separately by iptables-restore and the table stays empty).
    pub fn ruleset(&self, topology: Topology, mss: MssBackend) -> String {
        let hook = if topology == Topology::Endpoint {
            "input"
        } else {
            "forward"
        };
        let mut s = String::with_capacity(256 + 64 * self.rule_count() as usize);
        // Create-then-delete makes the replace work whether or not the table exists, all in
        // one transaction: either the new profile is complete or the old one stays.
        let _ = writeln!(s, "table inet {TABLE} {{\n}}");
        let _ = writeln!(s, "delete table inet {TABLE}");
        let _ = writeln!(s, "table inet {TABLE} {{");
        match *self {
            Profile::Forward => {}
            Profile::FilterStateless { rules } => {
                counters(&mut s, &["accepted"]);
                chain_head(&mut s, "filter", hook, 0);
                never_matching_rules(&mut s, rules);
                let _ = writeln!(s, "    counter name \"accepted\" accept");
                chain_end(&mut s);
            }
            Profile::FilterStateful { rules } => {
                counters(&mut s, &["established", "accepted"]);
                stateful_chain(&mut s, hook, rules);
            }
            Profile::Napt { filter } => {
                counters(&mut s, &["masqueraded"]);
                if let Some(rules) = filter {
                    counters(&mut s, &["established", "accepted"]);
                    stateful_chain(&mut s, hook, rules);
                }
                chain_head(&mut s, "nat_postrouting", "postrouting", 100);
                // NAPT as a home gateway does it: IPv4 only, towards the "WAN" side (port B).
                let _ = writeln!(
                    s,
                    "    meta nfproto ipv4 oifname \"wr-dut-b\" counter name \"masqueraded\" masquerade"
                );
                chain_end(&mut s);
            }
            Profile::MssClamp { mss: m } => {
                if mss == MssBackend::NftExthdr {
                    counters(&mut s, &["mss_clamped"]);
                    // Mangle priority, before any filter; only SYNs whose MSS is above M are
                    // rewritten, matching xtables TCPMSS `--set-mss` (it never raises an MSS).
                    chain_head(&mut s, "mangle_forward", "forward", -150);
                    let _ = writeln!(
                        s,
                        "    tcp flags & (syn | rst) == syn tcp option maxseg size > {m} counter name \"mss_clamped\" tcp option maxseg size set {m}"
                    );
                    chain_end(&mut s);
                }
            }
            // The fast path is not nftables: `fastpath` is `forward`'s empty table plus the XDP
            // program that `Lab::apply_profile` attaches.
            Profile::Fastpath => {}
        }
        let _ = writeln!(s, "}}");
        s
    }

    /// Rules walked by a packet in the worst case (for sizing and display).
    pub fn rule_count(&self) -> u32 {
        match *self {
            Profile::FilterStateful { rules } | Profile::FilterStateless { rules } => rules,
            Profile::Napt { filter } => filter.unwrap_or(0),
            _ => 0,
        }
    }
}

/// The profile name patterns, as shown in errors and `lab profiles`.
pub const PATTERNS: &[&str] = &[
    "forward",
    "filter-stateful-N",
    "filter-stateless-N",
    "napt",
    "napt+filter-stateful-N",
    "mss-clamp-M",
    "fastpath",
];

/// What a pattern does, for `lab profiles`.
pub fn describe(pattern: &str) -> &'static str {
    match pattern {
        "forward" => "plain routing, no netfilter hooks",
        "filter-stateful-N" => {
            "conntrack; established/related accepted first, then N non-matching rules, then \
             accept (rules walked only by a flow's first packets)"
        }
        "filter-stateless-N" => "N non-matching rules walked by every packet, no conntrack",
        "napt" => "IPv4 masquerade (NAPT) towards port B, with conntrack",
        "napt+filter-stateful-N" => "napt plus filter-stateful-N",
        "mss-clamp-M" => "TCP MSS of forwarded SYNs clamped to M (lowered only)",
        "fastpath" => {
            "forward with the XDP fast path on; the fast path is also a switch on \
             filter-stateful-N, napt, napt+filter-stateful-N and mss-clamp-M \
             (`wirerate lab fastpath on|off`)"
        }
        _ => "",
    }
}

/// An example instance of each pattern, used to probe support.
pub fn example(pattern: &str) -> Profile {
    match pattern {
        "filter-stateful-N" => Profile::FilterStateful { rules: 1 },
        "filter-stateless-N" => Profile::FilterStateless { rules: 1 },
        "napt" => Profile::Napt { filter: None },
        "napt+filter-stateful-N" => Profile::Napt { filter: Some(1) },
        "mss-clamp-M" => Profile::MssClamp { mss: 1200 },
        "fastpath" => Profile::Fastpath,
        _ => Profile::Forward,
    }
}

/// iptables-restore input for the xtables MSS clamp (mangle FORWARD, SYNs only). Restoring
/// the mangle table replaces it as a whole, atomically.
pub fn xtables_mss_rules(mss: u16) -> String {
    format!(
        "*mangle\n:FORWARD ACCEPT [0:0]\n-A FORWARD -p tcp -m tcp --tcp-flags SYN,RST SYN \
         -j TCPMSS --set-mss {mss}\nCOMMIT\n"
    )
}

fn counters(s: &mut String, names: &[&str]) {
    for n in names {
        // nft 1.0.6 needs a newline (or `;`) after a closing brace.
        let _ = writeln!(s, "  counter {n} {{\n  }}");
    }
}

fn chain_head(s: &mut String, name: &str, hook: &str, priority: i32) {
    let kind = if hook == "postrouting" || hook == "prerouting" {
        "nat"
    } else {
        "filter"
    };
    let _ = writeln!(s, "  chain {name} {{");
    let _ = writeln!(
        s,
        "    type {kind} hook {hook} priority {priority}; policy accept;"
    );
}

fn chain_end(s: &mut String) {
    let _ = writeln!(s, "  }}");
}

fn stateful_chain(s: &mut String, hook: &str, rules: u32) {
    chain_head(s, "filter", hook, 0);
    let _ = writeln!(
        s,
        "    ct state established,related counter name \"established\" accept"
    );
    never_matching_rules(s, rules);
    let _ = writeln!(s, "    counter name \"accepted\" accept");
    chain_end(s);
}

/// `n` distinct rules alternating IPv4 and IPv6 sources from ranges the lab never uses, each
/// with a destination port, so each costs a real comparison but never matches.
fn never_matching_rules(s: &mut String, n: u32) {
    for i in 0..n {
        let k = i / 2;
        let host = k % 256;
        let port = 1 + k / 256;
        if i % 2 == 0 {
            let _ = writeln!(s, "    ip saddr 192.0.2.{host} th dport {port} drop");
        } else {
            let _ = writeln!(
                s,
                "    ip6 saddr 2001:db8:ffff::{host:x} th dport {port} drop"
            );
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Profile::Forward => f.write_str("forward"),
            Profile::FilterStateful { rules } => write!(f, "filter-stateful-{rules}"),
            Profile::FilterStateless { rules } => write!(f, "filter-stateless-{rules}"),
            Profile::Napt { filter: None } => f.write_str("napt"),
            Profile::Napt { filter: Some(n) } => write!(f, "napt+filter-stateful-{n}"),
            Profile::MssClamp { mss } => write!(f, "mss-clamp-{mss}"),
            Profile::Fastpath => f.write_str("fastpath"),
        }
    }
}

impl FromStr for Profile {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        Profile::parse(s)
    }
}

impl From<Profile> for String {
    fn from(p: Profile) -> String {
        p.to_string()
    }
}

impl TryFrom<String> for Profile {
    type Error = Error;
    fn try_from(s: String) -> Result<Self> {
        Profile::parse(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for name in [
            "forward",
            "filter-stateful-0",
            "filter-stateful-100",
            "filter-stateless-10000",
            "napt",
            "napt+filter-stateful-1",
            "mss-clamp-1200",
            "fastpath",
        ] {
            assert_eq!(Profile::parse(name).unwrap().to_string(), name);
        }
    }

    #[test]
    fn bad_names_explain_themselves() {
        let e = Profile::parse("filter-fancy").unwrap_err();
        assert!(matches!(e, Error::UnknownProfile { .. }));
        let msg = e.to_string();
        assert!(
            msg.contains("filter-stateless-N") && msg.contains("mss-clamp-M"),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
        assert!(matches!(
            Profile::parse("mss-clamp-0").unwrap_err(),
            Error::InvalidProfile { .. }
        ));
        assert!(matches!(
            Profile::parse("filter-stateless-x").unwrap_err(),
            Error::InvalidProfile { .. }
        ));
        assert!(Profile::parse("filter-stateless-1000001").is_err());
    }

    #[test]
    fn stateless_ruleset_has_n_distinct_rules() {
        let p = Profile::FilterStateless { rules: 10_000 };
        let rs = p.ruleset(Topology::Forward, MssBackend::NftExthdr);
        let rules: Vec<&str> = rs.lines().filter(|l| l.ends_with(" drop")).collect();
        assert_eq!(rules.len(), 10_000);
        let distinct: std::collections::HashSet<_> = rules.iter().collect();
        assert_eq!(distinct.len(), 10_000);
        assert!(!rs.contains("ct state"), "stateless must not use conntrack");
        assert!(rs.contains("hook forward"));
        // Never a lab address as a source.
        assert!(!rs.contains("198.51.100.") && !rs.contains("203.0.113."));
    }

    #[test]
    fn stateful_accepts_established_first() {
        let rs =
            Profile::FilterStateful { rules: 3 }.ruleset(Topology::Forward, MssBackend::NftExthdr);
        let est = rs.find("ct state established,related").unwrap();
        let first_rule = rs.find("saddr 192.0.2.0").unwrap();
        let accept = rs.find("counter name \"accepted\" accept").unwrap();
        assert!(est < first_rule && first_rule < accept);
        // In the endpoint topology the DUT filters its own input.
        let rs =
            Profile::FilterStateful { rules: 3 }.ruleset(Topology::Endpoint, MssBackend::NftExthdr);
        assert!(rs.contains("hook input"));
    }

    #[test]
    fn replace_is_one_transaction() {
        let rs =
            Profile::Napt { filter: Some(2) }.ruleset(Topology::Forward, MssBackend::NftExthdr);
        assert!(rs.starts_with("table inet wirerate {\n}\ndelete table inet wirerate\n"));
        assert!(rs.contains("masquerade") && rs.contains("ct state established"));
        // nft 1.0.6: no closing brace followed by anything but a newline.
        assert!(!rs.contains("} "));
    }

    #[test]
    fn mss_clamp_backends() {
        let nft = Profile::MssClamp { mss: 1200 }.ruleset(Topology::Forward, MssBackend::NftExthdr);
        assert!(nft.contains("maxseg size > 1200") && nft.contains("maxseg size set 1200"));
        let xt =
            Profile::MssClamp { mss: 1200 }.ruleset(Topology::Forward, MssBackend::XtablesTcpmss);
        assert!(!xt.contains("maxseg"));
        assert!(xtables_mss_rules(1200).contains("--set-mss 1200"));
    }

    #[test]
    fn topology_fit() {
        assert!(Profile::Napt { filter: None }.fits(Topology::Forward));
        assert!(!Profile::Napt { filter: None }.fits(Topology::Endpoint));
        assert!(Profile::FilterStateless { rules: 1 }.fits(Topology::Endpoint));
        assert!(!Profile::Forward.fits(Topology::Direct));
    }

    #[test]
    fn serde_uses_the_name() {
        let p = Profile::FilterStateful { rules: 100 };
        let j = serde_json::to_string(&p).unwrap();
        assert_eq!(j, "\"filter-stateful-100\"");
        assert_eq!(serde_json::from_str::<Profile>(&j).unwrap(), p);
    }
}
