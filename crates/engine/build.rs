//! Builds the XDP programs in `bpf/*.bpf.c` with clang (`-target bpf`) into `$OUT_DIR`, where
//! `engine::xdp::objects` embeds them with `include_bytes!`.
//!
//! Why C and clang rather than Rust: BPF programs in Rust need a nightly toolchain
//! (`bpf-linker`), which this project cannot assume; Debian's clang is one package away
//! (`scripts/install-deps.sh` installs it together with libbpf-dev for `bpf_helpers.h`).

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let src_dir = Path::new("bpf");
    println!("cargo:rerun-if-changed=bpf");
    let clang = std::env::var("WIRERATE_CLANG").unwrap_or_else(|_| "clang".to_string());
    println!("cargo:rerun-if-env-changed=WIRERATE_CLANG");
    let mut sources: Vec<PathBuf> = std::fs::read_dir(src_dir)
        .expect("crates/engine/bpf is part of the source tree")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".bpf.c"))
        .collect();
    sources.sort();
    let multiarch = multiarch_include();
    for src in sources {
        println!("cargo:rerun-if-changed={}", src.display());
        let stem = src
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".bpf.c"))
            .expect("filtered on .bpf.c")
            .to_string();
        let obj = out.join(format!("{stem}.bpf.o"));
        let mut cmd = Command::new(&clang);
        cmd.args([
            "-target", "bpf", "-O2", "-g", "-mcpu=v3", "-Wall", "-Werror",
        ])
        .arg("-I")
        .arg(src_dir);
        if let Some(dir) = &multiarch {
            cmd.arg("-I").arg(dir);
        }
        cmd.arg("-c").arg(&src).arg("-o").arg(&obj);
        let status = cmd.status().unwrap_or_else(|e| {
            panic!(
                "cannot run `{clang}` to build the XDP program {}: {e}.\n\
                 wirerate's XDP backend is compiled from C with clang: run \
                 `sudo ./scripts/install-deps.sh` (installs clang and libbpf-dev), \
                 or point WIRERATE_CLANG at a clang binary.",
                src.display()
            )
        });
        assert!(
            status.success(),
            "clang failed on {} (see the messages above); headers come from libbpf-dev: \
             run `sudo ./scripts/install-deps.sh`",
            src.display()
        );
    }
}

/// Debian keeps `asm/types.h` under the multiarch directory, which clang's BPF target does not
/// search by itself.
fn multiarch_include() -> Option<PathBuf> {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").ok()?;
    let triple = match arch.as_str() {
        "x86_64" => "x86_64-linux-gnu",
        "aarch64" => "aarch64-linux-gnu",
        _ => return None,
    };
    let dir = PathBuf::from("/usr/include").join(triple);
    dir.is_dir().then_some(dir)
}
