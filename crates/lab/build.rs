//! Builds the lab's XDP fast path (`bpf/*.bpf.c`) with clang into `$OUT_DIR`, where
//! `lab::fastpath` embeds it (shared helper: the `bpf-build` crate) — only with the `fastpath`
//! feature, so that crates needing only the lab's vocabulary build without clang.

fn main() {
    if std::env::var_os("CARGO_FEATURE_FASTPATH").is_some() {
        bpf_build::compile_dir("bpf");
    }
}
