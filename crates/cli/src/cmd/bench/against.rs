//! `wirerate bench … --against`: where the xdp-tools binary to compare with is
//! (xdp-trafficgen for `bench tx`, xdp-bench for `bench rx`).

use crate::error::{CliError, CliResult};

/// Where xdp-tools' binaries sit beside a checkout (the shared tools folder next to the repo).
const SHARED_XDP_TOOLS: &str = "shared/tools/xdp-tools";

/// `bench tx --against`: `trafgen` (no xdp-tools binary) or xdp-trafficgen, see [`xdp_tool`].
pub(super) fn xdp_trafficgen(against: &str) -> CliResult<Option<std::path::PathBuf>> {
    if against == "trafgen" {
        return Ok(None);
    }
    xdp_tool(against, "xdp-trafficgen").map(Some).map_err(|e| match e {
        CliError::Usage(m) if m.contains(": give ") => CliError::Usage(format!(
            "--against {against}: give trafgen, xdp-trafficgen, xdp-trafficgen=PATH or the path of an xdp-trafficgen binary"
        )),
        e => e,
    })
}

/// Where `--against` names the xdp-tools binary `tool`: `TOOL=PATH` or a path (with a `/`)
/// is taken as given; plain `TOOL` is the first on PATH, else the first
/// `shared/tools/xdp-tools/TOOL` in a folder above the working directory or above this
/// executable (`../shared/tools/xdp-tools` seen from a checkout).
pub(super) fn xdp_tool(against: &str, tool: &str) -> CliResult<std::path::PathBuf> {
    let path_var = std::env::var_os("PATH");
    let roots: Vec<std::path::PathBuf> =
        [std::env::current_dir().ok(), std::env::current_exe().ok()]
            .into_iter()
            .flatten()
            .collect();
    resolve_against(against, tool, path_var.as_deref(), &roots)
}

/// [`xdp_tool`] with PATH and the folders to search above given.
fn resolve_against(
    against: &str,
    tool: &str,
    path_var: Option<&std::ffi::OsStr>,
    roots: &[std::path::PathBuf],
) -> CliResult<std::path::PathBuf> {
    let given = against
        .strip_prefix(&format!("{tool}="))
        .or_else(|| against.contains('/').then_some(against));
    if let Some(g) = given {
        let p = std::path::PathBuf::from(g);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(CliError::Usage(format!(
                "--against {against}: no such file"
            )))
        };
    }
    if against != tool {
        return Err(CliError::Usage(format!(
            "--against {against}: give {tool}, {tool}=PATH or a path to {tool}"
        )));
    }
    let on_path = path_var
        .into_iter()
        .flat_map(std::env::split_paths)
        .map(|d| d.join(tool));
    let shared = roots
        .iter()
        .flat_map(|r| r.ancestors())
        .map(|d| d.join(SHARED_XDP_TOOLS).join(tool));
    on_path.chain(shared).find(|p| p.is_file()).ok_or_else(|| {
        CliError::Usage(format!(
            "--against {tool}: not on PATH nor in {SHARED_XDP_TOOLS} above the working directory; give --against {tool}=PATH (xdp-tools ≥ 1.6: Debian's 1.3.1 cannot load its programs on new kernels)"
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

    fn usage<T: std::fmt::Debug>(r: CliResult<T>) -> String {
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
            "xdp-trafficgen",
            Some(bin.as_os_str()),
            std::slice::from_ref(&below),
        );
        assert_eq!(got.unwrap(), bin.join("xdp-trafficgen"));
        // Not on PATH: the shared tools folder above the working directory.
        let empty = s.0.join("nothing");
        let got = resolve_against(
            "xdp-trafficgen",
            "xdp-trafficgen",
            Some(empty.as_os_str()),
            std::slice::from_ref(&below),
        );
        assert_eq!(got.unwrap(), shared);
        // Another tool of the same folder is found the same way, and only that tool.
        let m = usage(resolve_against(
            "xdp-bench",
            "xdp-bench",
            Some(empty.as_os_str()),
            std::slice::from_ref(&below),
        ));
        assert!(m.contains("xdp-bench=PATH"), "{m}");
        // Neither: a usage error that says how to give it.
        let m = usage(resolve_against(
            "xdp-trafficgen",
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
        let t = "xdp-trafficgen";
        assert_eq!(resolve_against(&arg, t, None, &[]).unwrap(), tool);
        let plain = tool.display().to_string();
        assert_eq!(resolve_against(&plain, t, None, &[]).unwrap(), tool);
        let missing = format!("xdp-trafficgen={}", s.0.join("no/such").display());
        assert!(usage(resolve_against(&missing, t, None, &[])).contains("no such file"));
        let m = usage(resolve_against("pktgen", t, None, &[]));
        assert!(
            m.contains("give xdp-trafficgen, xdp-trafficgen=PATH"),
            "{m}"
        );
        // `bench tx`'s own sender name is no xdp-tools binary; its error names it too.
        assert_eq!(xdp_trafficgen("trafgen").unwrap(), None);
        assert!(usage(xdp_trafficgen("pktgen")).contains("give trafgen, xdp-trafficgen"));
    }
}
