//! `bench`: executes a plan — the runner that walks its cases and searches, the testbed that
//! brings up the lab and the ISP side and runs each trial on the packet engine or iperf3, and
//! the tester's own ceiling (calibration).
//!
//! What a plan, a search and a result *are* lives in `bench-model` (pure, tested without a
//! network); its modules are re-exported here so an executor's caller needs one crate.
//!
//! - [`runner`]: the unattended loop over cases, repetitions and searches, resume, ceilings.
//! - [`executor`]: the seam between the runner and what it measures on (tests simulate it).
//! - [`spec`]: what a UDP trial sends, for `wirerate trial` and plans alike; its builder and
//!   executor call.
//! - [`testbed`], [`trial`]: one trial on the lab with the packet engine; [`trial_streams`]:
//!   the streams of a plan's UDP trial, assembled once from the spec and the ports' headers.
//! - [`isp`]: the emulated ISP side of a port (PPPoE access concentrator, DS-Lite AFTR);
//!   [`ipoe_port`]: an IPoE WAN's (DHCPv4, RA + DHCPv6, DNS).
//! - [`calibration`]: the tester's own ceiling per frame size.
//! - [`stall`]: when the tester fell behind its schedule, and how often such a trial is
//!   measured again (the runner and the calibration alike).
//! - [`sessions`]: many PPPoE subscribers at once and their setup statistics.
//! - [`iface`]: what the host says about an interface (addresses, next hops, wire speed,
//!   offloads, the driver's counters), for `plan new`, the preflight and the testbed.

// No `unsafe` here: system calls live in the `sys` modules of `engine` and `lab`.
#![forbid(unsafe_code)]

pub use bench_model::{files, hooks, iperf3, oversize, plan, plan_new, port_link, results, search};
pub use error::BenchError;

pub mod calibration;
pub mod error;
pub mod executor;
pub mod hand;
pub mod iface;
pub mod inside;
pub mod iperf3_run;
pub mod ipoe_port;
pub mod isp;
pub mod mtu_probe;
pub mod port_error;
pub mod runner;
pub mod session_json;
pub mod sessions;
pub mod spec;
pub mod stall;
pub mod streams;
pub mod testbed;
pub mod trial;
pub mod trial_streams;
