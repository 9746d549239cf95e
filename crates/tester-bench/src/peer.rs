//! The peer tools' processes: trafgen (netsniff-ng), xdp-trafficgen and xdp-bench
//! (xdp-tools), each started inside one of the bench's namespaces (`lab::netns::command`) in a
//! process group of its own, so that it and every child it forks are stopped on every way
//! out, and with what it said on standard error kept for the error message.

use crate::net::{lab_failed, BenchNet};
use engine::{Error, Result};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A trafgen configuration sending `frame` unchanged.
pub fn trafgen_config(frame: &[u8]) -> String {
    let bytes: Vec<String> = frame.iter().map(|b| format!("0x{b:02x}")).collect();
    format!("{{ {} }}\n", bytes.join(", "))
}

/// A peer tool running in its own process group (its children die with it), with its
/// configuration file if it has one.
pub(crate) struct PeerProcess {
    pub(crate) child: Child,
    _cfg: Option<TempFile>,
}

/// A file under /tmp removed on drop.
struct TempFile(std::path::PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl PeerProcess {
    /// trafgen sending `frame` out of the sending end, from `cpu` at nice −10, `count` frames
    /// or until stopped.
    pub(crate) fn trafgen(
        net: &BenchNet,
        frame: &[u8],
        cpu: usize,
        count: Option<u64>,
    ) -> Result<Self> {
        let ifname = net.tx_if();
        let path =
            std::env::temp_dir().join(format!("wr-trafgen-{}-{}.cfg", std::process::id(), ifname));
        std::fs::write(&path, trafgen_config(frame))
            .map_err(|e| Error::io("writing trafgen config", e))?;
        let cfg = TempFile(path);
        let cfg_path = cfg.0.display().to_string();
        let count = count.map(|n| n.to_string());
        // The same core and nice value as our sender threads (`PortSpec::enter`: nice −10), so
        // that neither gets more of a shared CPU than the other. One process, no CPU
        // statistics; qdisc bypass is trafgen's default.
        let mut argv = vec![
            "nice", "-n", "-10", "trafgen", "-o", ifname, "-i", &cfg_path, "-P", "1", "-C",
        ];
        if let Some(n) = &count {
            argv.extend(["-n", n.as_str()]);
        }
        let mut c = lab::netns::command(net.tx_netns(), &argv, &[cpu]).map_err(lab_failed)?;
        c.stdout(Stdio::null()).stderr(Stdio::piped());
        let mut p = Self::spawn(c, Path::new("trafgen (is netsniff-ng installed?)"))?;
        p._cfg = Some(cfg);
        Ok(p)
    }

    /// Starts `c` (a measuring tool, usually from `lab::netns::command`) in a process group of
    /// its own, so that it and its children are killed on every way out (see `Drop`). `tool`
    /// names it in the error.
    pub(crate) fn spawn(mut c: Command, tool: &Path) -> Result<Self> {
        let child = c
            .process_group(0)
            .spawn()
            .map_err(|e| Error::io(format!("starting {}", tool.display()), e))?;
        Ok(PeerProcess { child, _cfg: None })
    }

    /// What it wrote to its (piped) standard error, once it has exited; empty if not piped.
    pub(crate) fn stderr_text(&mut self) -> String {
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        err.trim().to_string()
    }

    /// What it wrote to its (piped) standard output, once it has exited; empty if not piped.
    pub(crate) fn stdout_text(&mut self) -> String {
        let mut out = String::new();
        if let Some(mut o) = self.child.stdout.take() {
            let _ = std::io::Read::read_to_string(&mut o, &mut out);
        }
        out
    }

    /// SIGINT to the whole group (tools print their summary on it), SIGKILL after 3 s.
    pub(crate) fn kill_group(&mut self) {
        let pgid = self.child.id() as i32;
        let quiet = |sig: &str| {
            let _ = Command::new("kill")
                .args([sig, "--", &format!("-{pgid}")])
                .stderr(Stdio::null())
                .status();
        };
        quiet("-INT");
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        quiet("-KILL");
        let _ = self.child.wait();
    }
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.kill_group();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trafgen_gets_the_frame_byte_for_byte() {
        assert_eq!(trafgen_config(&[0, 0xa5, 0xff]), "{ 0x00, 0xa5, 0xff }\n");
    }
}
