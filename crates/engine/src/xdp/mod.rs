//! The XDP backend (issue 8): frames generated and counted inside the kernel.
//!
//! | module | job |
//! |---|---|
//! | `cache` | loaded objects kept for the next trial of the process: each program loaded once |
//! | [`objects`] | the compiled BPF objects, built from `crates/engine/bpf/*.bpf.c` by `build.rs` |
//! | [`sys`] | the only `unsafe` of this backend (BPF_PROG_RUN with live frames, ...) |
//! | [`tx`] | TX: an XDP program run over live frames stamps each frame's signature and sends it |
//! | [`conn_rx`] | RX of the load on N connections (`engine::nat`): each frame checked against its connection's tuple |
//! | [`learn_rx`] | RX of a connection trial's preliminary phase (`engine::nat`): each frame's tuple learned by its index |
//! | [`mode`] | native or SKB (generic) XDP: named by ports and receivers alike |
//! | `prog_stats` | a loaded program's runs and run time from the kernel's BPF statistics |
//! | [`rx`] | RX: an XDP program on the receiving port counts test frames per stream in maps |
//! | [`rx_napi`] | where a veth's receive poll runs: a NAPI thread pinned to a CPU, SCHED_FIFO |
//! | [`turns`] | senders sharing one CPU take turns call by call (the NAT load's two directions) |
//! | [`trial`] | trials on this backend (`--backend xdp`): attach, control path, same report |

mod attach;
mod cache;
pub mod conn_rx;
pub mod learn_rx;
pub mod mode;
pub mod objects;
mod prog_stats;
pub mod rx;
pub mod rx_napi;
#[allow(unsafe_code)]
pub(crate) mod sys;
pub(crate) mod trial;
pub mod turns;
pub mod tx;
