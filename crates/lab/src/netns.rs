//! Network namespaces: listing ours, creating, deleting (with the processes inside), and
//! building commands that run inside one with the right CPU affinity.
//!
//! Namespaces are the lab's source of truth: there is no state file to go stale after a
//! crash. Everything the lab creates lives inside `wr-` namespaces, so deleting them removes
//! every veth too.

use std::process::Command;
use std::time::{Duration, Instant};

use crate::cmd;
use crate::error::Result;
use crate::sys;
use crate::topology::PREFIX;

/// Every named network namespace whose name starts with `wr-`.
pub fn list_ours() -> Result<Vec<String>> {
    // `ip netns list` prints "name (id: N)" for namespaces with an id; keep the name.
    let out = cmd::run(&["ip", "netns", "list"])?;
    let mut v: Vec<String> = out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(PREFIX))
        .map(str::to_string)
        .collect();
    v.sort();
    Ok(v)
}

/// Whether namespace `ns` exists (a bind mount under /run/netns).
pub fn exists(ns: &str) -> bool {
    std::path::Path::new("/run/netns").join(ns).exists()
}

/// Create `ns` (fails if it exists).
pub fn add(ns: &str) -> Result<()> {
    cmd::run(&["ip", "netns", "add", ns]).map(drop)
}

/// Stop the processes inside `ns` (SIGTERM, then SIGKILL after a short grace) and delete it.
/// Without stopping them first, a leftover iperf3 server would keep the namespace — and its
/// veths — alive after the name is gone.
pub fn delete(ns: &str) -> Result<()> {
    if !exists(ns) {
        return Ok(());
    }
    let pids = pids(ns);
    if !pids.is_empty() {
        signal_all(&pids, libc::SIGTERM);
        let deadline = Instant::now() + Duration::from_millis(1000);
        while Instant::now() < deadline && pids.iter().any(|&p| alive(p)) {
            std::thread::sleep(Duration::from_millis(20));
        }
        signal_all(&pids, libc::SIGKILL);
    }
    match cmd::run(&["ip", "netns", "del", ns]) {
        Ok(_) => Ok(()),
        // Lost a race with another `down`: the goal is reached.
        Err(_) if !exists(ns) => Ok(()),
        Err(e) => Err(e),
    }
}

fn pids(ns: &str) -> Vec<i32> {
    cmd::run(&["ip", "netns", "pids", ns])
        .map(|out| {
            out.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// `pids` are what `ip netns pids` reported inside our own lab namespace.
fn signal_all(pids: &[i32], sig: libc::c_int) {
    for &p in pids {
        if p > 1 {
            let _ = sys::kill(p, sig);
        }
    }
}

fn alive(pid: i32) -> bool {
    sys::process_exists(pid)
}

/// A command that runs `argv` inside `ns`, restricted to `cpus` (empty = no restriction).
pub fn command(ns: &str, argv: &[&str], cpus: &[usize]) -> Result<Command> {
    let ip = cmd::tool("ip")?;
    let mut c = Command::new(ip);
    c.args(["netns", "exec", ns]).args(argv);
    if !cpus.is_empty() {
        sys::run_on_cpus(&mut c, cpus.to_vec());
    }
    Ok(c)
}

/// Run a shell script inside `ns` (for /proc/sys and /sys writes: sysfs is per namespace, and
/// `ip netns exec` mounts the namespace's own /sys).
pub fn sh(ns: &str, script: &str) -> Result<String> {
    cmd::run(&["ip", "netns", "exec", ns, "sh", "-ec", script])
}
