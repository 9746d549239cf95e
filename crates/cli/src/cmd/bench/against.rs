//! `wirerate bench tx --against`: where the xdp-trafficgen binary to compare with is.

use crate::error::{CliError, CliResult};

/// Where xdp-tools' binaries sit beside a checkout (the shared tools folder next to the repo).
const SHARED_XDP_TOOLS: &str = "shared/tools/xdp-tools";

/// Where `--against` names xdp-trafficgen: `xdp-trafficgen=PATH` or a path (with a `/`) is
/// taken as given; plain `xdp-trafficgen` is the first on PATH, else the first
/// `shared/tools/xdp-tools/xdp-trafficgen` in a folder above the working directory or above
/// this executable (`../shared/tools/xdp-tools` seen from a checkout).
pub(super) fn xdp_trafficgen(against: &str) -> CliResult<Option<std::path::PathBuf>> {
    let path_var = std::env::var_os("PATH");
    let roots: Vec<std::path::PathBuf> =
        [std::env::current_dir().ok(), std::env::current_exe().ok()]
            .into_iter()
            .flatten()
            .collect();
    resolve_against(against, path_var.as_deref(), &roots)
}

/// [`xdp_trafficgen`] with PATH and the folders to search above given.
fn resolve_against(
    against: &str,
    path_var: Option<&std::ffi::OsStr>,
    roots: &[std::path::PathBuf],
) -> CliResult<Option<std::path::PathBuf>> {
    if against == "trafgen" {
        return Ok(None);
    }
    let given = against
        .strip_prefix("xdp-trafficgen=")
        .or_else(|| against.contains('/').then_some(against));
    if let Some(g) = given {
        let p = std::path::PathBuf::from(g);
        return if p.is_file() {
            Ok(Some(p))
        } else {
            Err(CliError::Usage(format!(
                "--against {against}: no such file"
            )))
        };
    }
    if against != "xdp-trafficgen" {
        return Err(CliError::Usage(format!(
            "--against {against}: give trafgen, xdp-trafficgen, xdp-trafficgen=PATH or the path of an xdp-trafficgen binary"
        )));
    }
    let on_path = path_var
        .into_iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join("xdp-trafficgen"));
    let shared = roots
        .iter()
        .flat_map(|r| r.ancestors())
        .map(|d| d.join(SHARED_XDP_TOOLS).join("xdp-trafficgen"));
    on_path
        .chain(shared)
        .find(|p| p.is_file())
        .map(Some)
        .ok_or_else(|| {
            CliError::Usage(format!(
                "--against xdp-trafficgen: not on PATH nor in {SHARED_XDP_TOOLS} above the working directory; give --against xdp-trafficgen=PATH (xdp-tools ≥ 1.6: Debian's 1.3.1 cannot load its programs on new kernels)"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    /// A scratch folder `<tmp>/wr-against-<pid>-<name>` holding `files` (made executable-looking
    /// plain files), removed on drop.
    struct Scratch(PathBuf);
    impl Scratch {
        fn new(name: &str, files: &[&str]) -> Scratch {
            let d = std::env::temp_dir().join(format!("wr-against-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            for f in files {
                let p = d.join(f);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, b"").unwrap();
            }
            Scratch(d)
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn usage(r: CliResult<Option<PathBuf>>) -> String {
        match r {
            Err(CliError::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn against_finds_xdp_trafficgen_on_path_then_in_shared_tools_above() {
        let s = Scratch::new(
            "find",
            &[
                "bin/xdp-trafficgen",
                "shared/tools/xdp-tools/xdp-trafficgen",
                "wt/crate/x",
            ],
        );
        let bin = s.0.join("bin");
        let shared = s.0.join("shared/tools/xdp-tools/xdp-trafficgen");
        let below = s.0.join("wt/crate");
        // PATH first.
        let got = resolve_against(
            "xdp-trafficgen",
            Some(bin.as_os_str()),
            std::slice::from_ref(&below),
        );
        assert_eq!(got.unwrap(), Some(bin.join("xdp-trafficgen")));
        // Not on PATH: the shared tools folder above the working directory.
        let empty = s.0.join("nothing");
        let got = resolve_against("xdp-trafficgen", Some(empty.as_os_str()), &[below]);
        assert_eq!(got.unwrap(), Some(shared));
        // Neither: a usage error that says how to give it.
        let m = usage(resolve_against(
            "xdp-trafficgen",
            Some(empty.as_os_str()),
            &[],
        ));
        assert!(m.contains("xdp-trafficgen=PATH"), "{m}");
    }

    #[test]
    fn against_takes_a_given_path_and_refuses_what_is_not_there() {
        let s = Scratch::new("given", &["tools/xdp-trafficgen"]);
        let tool = s.0.join("tools/xdp-trafficgen");
        let arg = format!("xdp-trafficgen={}", tool.display());
        assert_eq!(
            resolve_against(&arg, None, &[]).unwrap(),
            Some(tool.clone())
        );
        let plain = tool.display().to_string();
        assert_eq!(resolve_against(&plain, None, &[]).unwrap(), Some(tool));
        let missing = format!("xdp-trafficgen={}", s.0.join("no/such").display());
        assert!(usage(resolve_against(&missing, None, &[])).contains("no such file"));
        assert!(usage(resolve_against("pktgen", None, &[])).contains("give trafgen"));
        assert_eq!(resolve_against("trafgen", None, &[]).unwrap(), None);
    }
}
