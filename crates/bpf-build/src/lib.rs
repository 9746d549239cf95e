//! Compiles a crate's BPF programs (`<dir>/*.bpf.c`) with clang (`-target bpf`) into
//! `$OUT_DIR/<stem>.bpf.o`, for the crate to embed with `include_bytes!`.
//!
//! Used from build scripts only (the engine's XDP ports, the lab's XDP fast path), so that
//! both build their programs with the same flags and the same error messages. Failures panic,
//! which is how a build script reports them; each message says what to install.
//!
//! Why C and clang rather than Rust: BPF programs in Rust need a nightly toolchain
//! (`bpf-linker`), which this project cannot assume; Debian's clang is one package away
//! (`scripts/install-deps.sh` installs it together with libbpf-dev for `bpf_helpers.h`).

// No `unsafe` here: system calls live in the `sys` modules of `engine` and `lab`.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Build every `*.bpf.c` in `src_dir` (relative to the crate's manifest directory) into
/// `$OUT_DIR`, and tell cargo to rebuild when any of them (or `WIRERATE_CLANG`) changes.
/// Headers in `src_dir` are found with `-I src_dir`. Returns the objects built.
pub fn compile_dir(src_dir: &str) -> Vec<PathBuf> {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let src_dir = Path::new(src_dir);
    println!("cargo:rerun-if-changed={}", src_dir.display());
    let clang = std::env::var("WIRERATE_CLANG").unwrap_or_else(|_| "clang".to_string());
    println!("cargo:rerun-if-env-changed=WIRERATE_CLANG");
    let mut files: Vec<PathBuf> = std::fs::read_dir(src_dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", src_dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    files.sort();
    for f in &files {
        // Headers too: a change in a shared header must rebuild the programs.
        println!("cargo:rerun-if-changed={}", f.display());
    }
    let sources: Vec<&PathBuf> = files
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".bpf.c"))
        .collect();
    let multiarch = multiarch_include();
    let mut built = Vec::new();
    for src in sources {
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
        cmd.arg("-c").arg(src).arg("-o").arg(&obj);
        let status = cmd.status().unwrap_or_else(|e| {
            panic!(
                "cannot run `{clang}` to build the BPF program {}: {e}.\n\
                 wirerate's XDP programs are compiled from C with clang: run \
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
        built.push(obj);
    }
    built
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
