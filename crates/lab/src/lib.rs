//! The built-in lab: the Linux kernel, in a network namespace, as a device under test.
//!
//! A lab is a set of namespaces named `wr-<name>-a`, `wr-<name>-dut` and `wr-<name>-b`
//! joined by veth pairs ([`Topology`]), with dual-stack documentation addresses, the DUT's
//! receive processing steered to its own CPU ([`dut_cpu`], [`tester_cpus`]), and a DUT
//! configuration ([`Profile`]) applied as one atomic nftables transaction, optionally with an
//! XDP fast path on top ([`Lab::set_fastpath`], [`fastpath`]). The lab never
//! generates traffic; the engine and the iperf3 driver do that through [`Lab::port`] and
//! [`Lab::command`], and read [`Lab::snapshot`] before and after a trial.
//!
//! ```no_run
//! use lab::{Lab, LabConfig, Node, PortId, Profile, Topology};
//! let lab = Lab::up(&LabConfig {
//!     name: "demo".into(),
//!     topology: Topology::Forward,
//!     profile: Some(Profile::parse("filter-stateful-100")?),
//! })?;
//! let b = lab.port(PortId::B)?;
//! println!("port B {} in {} at {}", b.ifname, b.netns, b.ipv4);
//! let before = lab.snapshot()?;
//! lab.exec(Node::A, &["ping", "-c1", &b.ipv4.to_string()])?;
//! let after = lab.snapshot()?;
//! # let _ = (before, after);
//! lab.down()?;
//! # Ok::<(), lab::LabError>(())
//! ```
//!
//! Without a DUT, [`veth::VethPair`] is two namespaces joined by one veth pair, for the tester
//! measured against peer tools and the engine's namespace tests.
//!
//! See docs/lab.md for the topologies, the profiles, CPU isolation and its limits. The few
//! system calls the standard library does not wrap (flock, signals, kill, CPU affinity and
//! priority, setns, netlink) are the only `unsafe` and live in one private module, `sys`.

// `unsafe` only in `sys`, which allows it.
#![deny(unsafe_code)]

pub mod cmd;
pub mod conntrack;
pub mod cpu;
pub mod ctnetlink;
mod error;
pub mod fastpath;
mod guard;
mod lab;
pub mod links;
pub mod lock;
mod napi;
pub mod netns;
pub mod probe;
pub mod stats;
#[allow(unsafe_code)]
mod sys;
pub mod tun;
pub mod veth;

/// The lab's vocabulary, at the paths it always had (`lab::profile`, `lab::topology`, …): it
/// lives in the pure crate `lab-model`, which plans and reports use without this crate.
pub use lab_model::{feature, profile, topology, Error as ModelError, LINK_MTU};

pub use cmd::{install_interrupt_handler, is_root};
pub use cpu::{dut_cpu, tester_cpus};
pub use error::{LabError, Result};
pub use fastpath::FastpathStats;
pub use guard::LabGuard;
pub use lab::{
    down, down_all, inventory, status, DutSample, Inventory, Lab, LabConfig, LabStatus, PeerInfo,
    PortInfo, DEFAULT_NAME,
};
pub use links::LinkState;
pub use lock::LabLock;
pub use probe::{catalogue, features, CatalogueEntry, Feature, Features, Support};
pub use profile::{MssBackend, Profile};
pub use stats::StatsSnapshot;
pub use topology::{Node, PortId, Topology};

/// Alias so `lab::profiles::catalogue()` reads naturally.
pub mod profiles {
    pub use crate::probe::catalogue;
    pub use crate::profile::{describe, PATTERNS};
}
