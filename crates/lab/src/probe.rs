//! What this kernel supports, found by trying: each feature is loaded for real in a scratch
//! namespace (`wr-probe-<pid>`) that is deleted at once. Config files and module lists lie
//! (built-ins, backports, missing /proc/config.gz); a real load does not.
//!
//! The result is cached for the life of the process.

use std::fmt;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::cmd;
use crate::error::{LabError, Result};
pub use crate::feature::Feature;
use crate::profile::{self, MssBackend, Profile};

/// Result of probing each feature.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Features {
    pub nftables: bool,
    pub conntrack: bool,
    pub nat: bool,
    pub nft_exthdr: bool,
    pub xtables_tcpmss: bool,
    pub xdp_fastpath: bool,
    pub xdp_conntrack: bool,
}

impl Features {
    pub fn has(&self, f: Feature) -> bool {
        match f {
            Feature::Nftables => self.nftables,
            Feature::Conntrack => self.conntrack,
            Feature::Nat => self.nat,
            Feature::NftExthdr => self.nft_exthdr,
            Feature::XtablesTcpmss => self.xtables_tcpmss,
            Feature::XdpFastpath => self.xdp_fastpath,
            Feature::XdpConntrack => self.xdp_conntrack,
        }
    }

    /// The MSS clamp backend to use: nftables when it can, else xtables.
    pub fn mss_backend(&self) -> Option<MssBackend> {
        if self.nft_exthdr {
            Some(MssBackend::NftExthdr)
        } else if self.xtables_tcpmss {
            Some(MssBackend::XtablesTcpmss)
        } else {
            None
        }
    }

    /// `Ok` if `profile` can run here, else the first missing feature.
    pub fn check(&self, profile: &Profile) -> std::result::Result<(), Feature> {
        for f in profile.needs() {
            if !self.has(f) {
                return Err(f);
            }
        }
        if matches!(profile, Profile::MssClamp { .. }) && self.mss_backend().is_none() {
            return Err(Feature::NftExthdr);
        }
        Ok(())
    }
}

const PROBE_NFT: &str = "table inet wr_probe_nft {\n  chain f {\n    type filter hook forward priority 0; policy accept;\n    counter accept\n  }\n}\n";
const PROBE_CT: &str = "table inet wr_probe_ct {\n  chain f {\n    type filter hook forward priority 0; policy accept;\n    ct state established,related accept\n  }\n}\n";
const PROBE_NAT: &str = "table ip wr_probe_nat {\n  chain p {\n    type nat hook postrouting priority 100; policy accept;\n    oifname \"wr-p0\" masquerade\n  }\n}\n";
const PROBE_EXTHDR: &str = "table inet wr_probe_exthdr {\n  chain f {\n    type filter hook forward priority -150; policy accept;\n    tcp flags & (syn | rst) == syn tcp option maxseg size > 1200 tcp option maxseg size set 1200\n  }\n}\n";

static CACHE: OnceLock<Features> = OnceLock::new();
/// Held while probing: the probe namespace is named by the process id, so two threads
/// probing at once would share it and one would delete it under the other (a CI run saw
/// "Cannot open network namespace wr-probe-<pid>" and NAT wrongly reported unsupported).
static PROBING: Mutex<()> = Mutex::new(());

/// Probe (once per process) what this kernel supports. Needs root and iproute2 + nftables.
pub fn features() -> Result<Features> {
    if let Some(f) = CACHE.get() {
        return Ok(f.clone());
    }
    let _one_prober = PROBING.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(f) = CACHE.get() {
        return Ok(f.clone());
    }
    let f = probe_now()?;
    Ok(CACHE.get_or_init(|| f).clone())
}

fn probe_now() -> Result<Features> {
    cmd::require_root()?;
    cmd::tool("ip")?;
    cmd::tool("nft")?;
    let ns = format!("wr-probe-{}", std::process::id());
    // A leftover from a killed earlier probe with our pid is ours to replace.
    let _ = cmd::run(&["ip", "netns", "del", &ns]);
    cmd::run(&["ip", "netns", "add", &ns])?;
    let result = probe_in(&ns);
    let _ = cmd::run(&["ip", "netns", "del", &ns]);
    result
}

fn probe_in(ns: &str) -> Result<Features> {
    cmd::run(&[
        "ip", "-n", ns, "link", "add", "wr-p0", "type", "veth", "peer", "name", "wr-p1",
    ])?;
    let loads = |ruleset: &str| {
        cmd::run_with(
            &["ip", "netns", "exec", ns, "nft", "-f", "-"],
            Some(ruleset.as_bytes()),
            cmd::DEFAULT_TIMEOUT,
        )
        .is_ok()
    };
    let xtables = cmd::tool("iptables-restore").is_ok()
        && cmd::run_with(
            &["ip", "netns", "exec", ns, "iptables-restore"],
            Some(profile::xtables_mss_rules(1200).as_bytes()),
            cmd::DEFAULT_TIMEOUT,
        )
        .is_ok();
    let f = Features {
        nftables: loads(PROBE_NFT),
        conntrack: loads(PROBE_CT),
        nat: loads(PROBE_NAT),
        nft_exthdr: loads(PROBE_EXTHDR),
        xtables_tcpmss: xtables,
        xdp_fastpath: crate::fastpath::probe(ns, "wr-p0", crate::fastpath::Program::Forward),
        xdp_conntrack: crate::fastpath::probe(ns, "wr-p0", crate::fastpath::Program::Conntrack),
    };
    if !f.nftables {
        // Without nf_tables nothing else means anything; report the real reason.
        cmd::run_with(
            &["ip", "netns", "exec", ns, "nft", "-f", "-"],
            Some(PROBE_NFT.as_bytes()),
            cmd::DEFAULT_TIMEOUT,
        )?;
    }
    Ok(f)
}

/// Whether a catalogue entry can run here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Support {
    Supported,
    /// Missing kernel feature.
    Unsupported {
        feature: String,
    },
    /// Could not probe (not root, tools missing).
    Unknown {
        reason: String,
    },
}

impl fmt::Display for Support {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Support::Supported => f.write_str("supported"),
            Support::Unsupported { feature } => {
                write!(f, "unsupported on this kernel: {feature}")
            }
            Support::Unknown { reason } => write!(f, "unknown ({reason})"),
        }
    }
}

/// One line of `lab profiles`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CatalogueEntry {
    /// Pattern such as `filter-stateful-N`.
    pub name: String,
    pub description: String,
    pub support: Support,
}

/// Every profile pattern with its description and whether this kernel supports it.
pub fn catalogue() -> Vec<CatalogueEntry> {
    let feats = features();
    profile::PATTERNS
        .iter()
        .map(|&pat| {
            let support = match &feats {
                Err(e) => Support::Unknown {
                    reason: e.to_string(),
                },
                Ok(f) => match f.check(&profile::example(pat)) {
                    Ok(()) => Support::Supported,
                    Err(missing) => Support::Unsupported {
                        feature: missing.describe().to_string(),
                    },
                },
            };
            CatalogueEntry {
                name: pat.to_string(),
                description: profile::describe(pat).to_string(),
                support,
            }
        })
        .collect()
}

/// Fail with [`LabError::Unsupported`] if `profile` needs something this kernel lacks.
pub fn require(profile: &Profile) -> Result<Features> {
    let f = features()?;
    f.check(profile).map_err(|missing| LabError::Unsupported {
        profile: profile.to_string(),
        feature: missing.describe().to_string(),
    })?;
    Ok(f)
}
