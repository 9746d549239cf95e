//! The kernel capabilities a lab profile may need. A profile names what it needs
//! ([`crate::profile`]); the lab's probe finds out what this kernel has (`lab::probe`). The
//! vocabulary lives here so that neither of those two modules imports the other's job.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A kernel capability a profile may need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Feature {
    /// nf_tables itself (a base chain on the forward hook).
    Nftables,
    /// Connection tracking (`ct state`).
    Conntrack,
    /// NAT (`masquerade` in a nat postrouting chain).
    Nat,
    /// nftables TCP option rewriting (`tcp option maxseg size set`, the exthdr expression).
    NftExthdr,
    /// The xtables TCPMSS target through iptables-nft.
    XtablesTcpmss,
    /// Native XDP on a veth with `bpf_fib_lookup` and `bpf_redirect`: the fast path's
    /// forward program loads.
    XdpFastpath,
    /// Conntrack lookups from XDP (the `bpf_xdp_ct_lookup` kfunc): the fast path's conntrack
    /// program loads.
    XdpConntrack,
}

impl Feature {
    /// The name used in "unsupported on this kernel: <feature>".
    pub fn describe(self) -> &'static str {
        match self {
            Feature::Nftables => "nf_tables (CONFIG_NF_TABLES)",
            Feature::Conntrack => "connection tracking (CONFIG_NF_CONNTRACK, CONFIG_NFT_CT)",
            Feature::Nat => "NAT masquerade (CONFIG_NF_NAT, CONFIG_NFT_MASQ)",
            Feature::NftExthdr => "nftables TCP option rewriting (exthdr)",
            Feature::XtablesTcpmss => "xtables TCPMSS target (CONFIG_NETFILTER_XT_TARGET_TCPMSS)",
            Feature::XdpFastpath => "native XDP on veth with bpf_fib_lookup (CONFIG_BPF, XDP)",
            Feature::XdpConntrack => {
                "conntrack lookups from XDP (bpf_xdp_ct_lookup kfunc, CONFIG_NF_CONNTRACK, BTF)"
            }
        }
    }
}

impl fmt::Display for Feature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}
