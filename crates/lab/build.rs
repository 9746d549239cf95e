//! Builds the lab's XDP fast path (`bpf/*.bpf.c`) with clang into `$OUT_DIR`, where
//! `lab::fastpath` embeds it (shared helper: the `bpf-build` crate).

fn main() {
    bpf_build::compile_dir("bpf");
}
