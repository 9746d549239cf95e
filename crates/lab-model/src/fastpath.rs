//! Which XDP fast path goes with a DUT profile, or why none may: the part of the fast path a
//! plan is checked against. Building, loading and reading the program is `lab::fastpath`'s job
//! (docs/lab.md, "The fast path").

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::profile::Profile;
use crate::topology::Topology;

/// Which build of the fast path runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Program {
    /// No conntrack lookups: everything routable is forwarded (no netfilter on the DUT).
    Forward,
    /// Only confirmed, established conntrack entries' packets, with their NAT applied.
    Conntrack,
}

impl Program {
    /// The program's name in the kernel (`ip link` shows it), which is how an attached fast
    /// path is recognised.
    pub fn kernel_name(self) -> &'static str {
        match self {
            Program::Forward => "wr_fp_fwd",
            Program::Conntrack => "wr_fp_ct",
        }
    }

    /// The program with kernel name `name`, if it is one of ours.
    pub fn from_kernel_name(name: &str) -> Option<Program> {
        [Program::Forward, Program::Conntrack]
            .into_iter()
            .find(|p| p.kernel_name() == name)
    }
}

impl std::fmt::Display for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Program::Forward => "forward",
            Program::Conntrack => "conntrack",
        })
    }
}

/// Which fast path goes with `profile` on `topology`, or why the combination is refused.
///
/// Refused: any topology but `forward` (nothing is forwarded), and `filter-stateless-N`, whose
/// rules every packet must walk (the fast path would let packets skip the firewall). The MSS
/// clamp is allowed: it acts on TCP SYNs only, and both programs hand every SYN to the stack.
pub fn program_for(profile: &Profile, topology: Topology) -> Result<Program> {
    let refuse = |reason: String| Error::FastpathRefused {
        profile: profile.to_string(),
        reason,
    };
    if topology != Topology::Forward {
        return Err(refuse(format!(
            "the `{topology}` topology forwards nothing (the fast path needs --topology forward)"
        )));
    }
    match *profile {
        Profile::Forward | Profile::Fastpath | Profile::MssClamp { .. } => Ok(Program::Forward),
        Profile::FilterStateful { .. } | Profile::Napt { .. } => Ok(Program::Conntrack),
        Profile::FilterStateless { rules } => Err(refuse(format!(
            "every packet must walk its {rules} rules, and the fast path would let packets skip \
             them; use filter-stateful-N (established flows skip the rules, as with the \
             kernel's flowtable) or turn the fast path off"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations() {
        let f = Topology::Forward;
        let p = |s: &str| Profile::parse(s).unwrap();
        assert_eq!(program_for(&p("forward"), f).unwrap(), Program::Forward);
        assert_eq!(program_for(&p("fastpath"), f).unwrap(), Program::Forward);
        assert_eq!(
            program_for(&p("mss-clamp-1200"), f).unwrap(),
            Program::Forward
        );
        for s in ["filter-stateful-0", "napt", "napt+filter-stateful-100"] {
            assert_eq!(program_for(&p(s), f).unwrap(), Program::Conntrack, "{s}");
        }
        let e = program_for(&p("filter-stateless-100"), f).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::FastpathRefused { .. }));
        assert!(
            msg.contains("filter-stateless-100") && msg.contains("100 rules"),
            "{msg}"
        );
        let e = program_for(&p("forward"), Topology::Endpoint).unwrap_err();
        assert!(e.to_string().contains("endpoint"), "{e}");
    }

    #[test]
    fn kernel_names_round_trip() {
        for p in [Program::Forward, Program::Conntrack] {
            assert_eq!(Program::from_kernel_name(p.kernel_name()), Some(p));
        }
        assert_eq!(Program::from_kernel_name("xdp_dispatcher"), None);
    }
}
