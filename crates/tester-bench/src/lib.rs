//! # tester-bench
//!
//! The tester measured side by side with peer tools (`wirerate bench tx|rx`, docs/engine.md):
//! our senders and receivers from `engine`, and trafgen (netsniff-ng), xdp-trafficgen and
//! xdp-bench (xdp-tools), on the same veth, the same CPU and the same counters, in alternating
//! rounds so that a machine whose load changes hurts both alike. The engine sends and
//! receives; this crate only arranges the comparison and reads the figures.
//!
//! | module | job |
//! |---|---|
//! | [`net`] | the bench's link ([`BenchNet`]): lab's two-namespace veth pair (`lab::veth`), the peer's drop, the bench frame |
//! | [`peer`] | the peer tools' processes: started in a namespace, in a process group of their own, stopped on every way out |
//! | [`window`] | one measurement window: a sender's frames/s from the veth's counters, its CPU time, medians |
//! | [`tx`] | `bench tx`: our sender against trafgen |
//! | [`tx_against`] | `bench tx --against xdp-trafficgen`, also per second of each sender's CPU |
//! | [`rx`] | `bench rx`: exactly N frames from trafgen or our XDP sender, counted by our receiver |
//! | [`verdict`] | what `bench rx` calls exact, from the counts alone |
//! | [`rx_against`] | `bench rx --against xdp-bench`: our XDP receiver next to one that does no work |
//!
//! Everything runs in namespaces `wr-bench-<tag>-va` (the sender) and `wr-bench-<tag>-vb` (the
//! peer), removed with the processes in them when a bench ends, however it ends.

#![forbid(unsafe_code)]

pub mod net;
pub mod peer;
pub mod rx;
pub mod rx_against;
pub mod tx;
pub mod tx_against;
pub mod verdict;
pub mod window;

pub use net::{bench_frame, BenchNet};
pub use peer::trafgen_config;
pub use rx::{
    rx, RxBackend, RxBenchConfig, RxBenchReport, RxNapi, RxSource, RxSourceFacts, VETH_RING_FRAMES,
};
pub use rx_against::{
    rx_against_xdp_bench, RxRoundFigures, RxVsRound, VsXdpBenchReport, XdpBenchOp,
};
pub use tx::{tx, TxBenchBackend, TxBenchConfig, TxBenchReport};
pub use tx_against::{tx_against_xdp_trafficgen, CpuNormalised, VsXdpTrafficgenReport};
pub use verdict::RxVerdict;
