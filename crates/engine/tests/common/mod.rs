//! Shared by the engine's namespace tests: running a command, the root check, and a veth pair
//! between two namespaces of the test's own (`wr-<tag>-<pid>-<n>-{va,vb}`, removed on drop):
//! lab's one veth fixture ([`lab::veth::VethPair`]) with the addresses and ports the tests use.

#![allow(dead_code)] // each test binary uses its own part

use engine::port::PortSpec;
use engine::stream::StreamConfig;
use engine::trial::{TrialConfig, TrialStream};
use lab::veth::{End, VethPair, VethPairSpec};
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Runs `args`, failing the test with its stderr if it fails; returns stdout.
pub fn sh(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .expect("spawn");
    assert!(
        out.status.success(),
        "{args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub use lab::is_root;

/// `if_a` (192.0.2.1) in namespace `…-va` ⇄ `if_b` (192.0.2.2) in `…-vb`, IPv6 off. Removed on
/// drop (the veth pair goes with its namespaces).
pub struct Net {
    pub a: String,
    pub b: String,
    pub if_a: &'static str,
    pub if_b: &'static str,
    _pair: VethPair,
}

impl Net {
    /// A new pair; `tag` names the test in the namespaces, so concurrent tests never collide.
    pub fn new(tag: &str, if_a: &'static str, if_b: &'static str) -> Net {
        Net::with_queues(tag, if_a, if_b, 1)
    }

    /// The pair with `queues` transmit and receive queues on each end (1: the kernel's
    /// default).
    pub fn with_queues(tag: &str, if_a: &'static str, if_b: &'static str, queues: usize) -> Net {
        static N: AtomicUsize = AtomicUsize::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let base = format!("wr-{tag}-{}-{n}", std::process::id());
        let pair = VethPair::up(&VethPairSpec {
            addrs: Some(("192.0.2.1/24", "192.0.2.2/24")),
            queues: if queues > 1 { queues } else { 0 },
            ..VethPairSpec::new(&base, if_a, if_b)
        })
        .unwrap_or_else(|e| panic!("veth pair {base}: {e}"));
        Net {
            a: pair.netns(End::A).to_string(),
            b: pair.netns(End::B).to_string(),
            if_a,
            if_b,
            _pair: pair,
        }
    }

    /// Port A and port B as the engine sees them.
    pub fn ports(&self) -> (PortSpec, PortSpec) {
        let mut a = PortSpec::new("a", self.if_a);
        a.netns = Some(self.a.clone());
        a.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 1));
        a.next_hop_v4 = Some(Ipv4Addr::new(192, 0, 2, 2));
        let mut b = PortSpec::new("b", self.if_b);
        b.netns = Some(self.b.clone());
        b.ipv4 = Some(Ipv4Addr::new(192, 0, 2, 2));
        b.next_hop_v4 = Some(Ipv4Addr::new(192, 0, 2, 1));
        (a, b)
    }
}

impl Net {
    /// A trial of one stream from port A to port B of this pair.
    pub fn one_way_trial(&self, stream: StreamConfig) -> TrialConfig {
        let (a, b) = self.ports();
        TrialConfig::new(
            vec![a, b],
            vec![TrialStream {
                config: stream,
                tx_port: 0,
                rx_port: 1,
            }],
        )
    }
}
