//! Builds the XDP programs in `bpf/*.bpf.c` with clang (`-target bpf`) into `$OUT_DIR`, where
//! `engine::xdp::objects` embeds them with `include_bytes!`. The compiling is shared with the
//! lab's fast path in the `bpf-build` crate (why C and clang: see there).

fn main() {
    bpf_build::compile_dir("bpf");
}
