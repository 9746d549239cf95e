//! The BPF objects `build.rs` compiles from `crates/engine/bpf/`, embedded in the binary so a
//! wirerate executable needs no files beside it. (`include_bytes_aligned!`: the ELF parser
//! needs the object 8-byte aligned, which plain `include_bytes!` does not promise.)

/// Passes every frame: proves that a port accepts an XDP program at all.
pub const PROBE: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/probe.bpf.o"));

/// The receiver: counts test frames per stream in maps, passes everything else (`xdp::rx`).
pub const RX: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/rx.bpf.o"));

/// The transmitter (`bpf/tx.bpf.c`): `wr_tx`, run with BPF_PROG_RUN over live frames, stamps
/// and sends; two raw tracepoint programs count the frames the device refused.
pub const TX: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/tx.bpf.o"));

/// The receiver of the load on N connections (`bpf/conn_rx.bpf.c`, `xdp::conn_rx`): checks
/// every frame against its connection's tuple and counts it per connection.
pub const CONN_RX: &[u8] = aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/conn_rx.bpf.o"));

/// The learner of a connection trial's preliminary phase (`bpf/learn_rx.bpf.c`,
/// `xdp::learn_rx`): records the tuple each preliminary frame arrived with by its index.
pub const LEARN_RX: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("OUT_DIR"), "/learn_rx.bpf.o"));
