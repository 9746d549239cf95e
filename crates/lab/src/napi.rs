//! The DUT's receive work on the DUT's CPU, in every lab.
//!
//! A veth's receive NAPI poll — turning the frames its peer sent into packets (for frames an
//! XDP sender redirected: building every skb), GRO, and any XDP program on it — runs by
//! default on the CPU that *transmitted* into the veth: for the DUT's ingress ports, the
//! tester's CPU. RPS steers the stack's forwarding to the DUT's CPU only after that
//! (docs/lab.md, "CPU isolation"). So every lab DUT's interfaces get threaded NAPI
//! (`/sys/class/net/IF/threaded`) on `lab up` and on every profile switch, and every lab DUT's
//! NAPI thread (`napi/wr-dut-*`) is pinned to the DUT's CPU, SCHED_FIFO, like the softirq that
//! does the stack's forwarding there (a NAPI thread without real-time priority lost the CPU to
//! other engineers' compilers). The fast path's XDP program runs in that poll, so with it on
//! and off the DUT pays the same CPU for its receive work.
//!
//! What it changes for the tester: the DUT drains its 256-frame veth ring at its own pace, so
//! an overloaded DUT's ring fills, and this kernel's veth refuses frames then (its queue stops,
//! or it drops them: docs/engine.md, "When the DUT's port refuses a frame"). Every sender
//! counts such a frame as offered and lost at the DUT's port (`refused_by_dut`, DESIGN.md §7)
//! instead of waiting for room — before 5679a37 the AF_PACKET senders waited, and this was
//! only done while the fast path was on.

use crate::error::{LabError, Result};

/// Threaded NAPI on `ifaces` (in `ns`) with their threads pinned to the DUT's CPU at
/// real-time priority. Idempotent. Nothing to pin on a one-CPU machine (the threads exist but
/// there is no other CPU to keep them off).
pub(crate) fn receive_on_dut_cpu(ns: &str, ifaces: &[&str]) -> Result<()> {
    if ifaces.is_empty() {
        return Ok(());
    }
    let script: Vec<String> = ifaces
        .iter()
        .map(|i| format!("echo 1 > /sys/class/net/{i}/threaded"))
        .collect();
    crate::netns::sh(ns, &script.join("; "))?;
    pin_napi_threads()
}

/// Real-time priority of the DUT's NAPI threads: above every ordinary process, as a softirq.
const NAPI_PRIORITY: i32 = 50;

/// Pin every lab DUT interface's NAPI thread to the DUT's CPU, SCHED_FIFO. Threads of other
/// labs' DUTs are included: the DUT's CPU is the same for every lab. Nothing to do on one CPU.
fn pin_napi_threads() -> Result<()> {
    let Some(cpu) = crate::cpu::dut_cpu() else {
        return Ok(());
    };
    let procs = std::fs::read_dir("/proc").map_err(|e| LabError::io("reading /proc", e))?;
    for entry in procs.filter_map(|e| e.ok()) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<libc::pid_t>() else {
            continue;
        };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("napi/wr-dut-") {
            continue;
        }
        let what = format!("pinning the NAPI thread {} (pid {pid})", comm.trim());
        // A thread that ended meanwhile (another lab switched its fast path off) is fine.
        let gone = |e: &std::io::Error| e.raw_os_error() == Some(libc::ESRCH);
        for r in [
            crate::sys::set_affinity_of(pid, &[cpu]),
            crate::sys::set_fifo(pid, NAPI_PRIORITY),
        ] {
            match r {
                Err(e) if !gone(&e) => return Err(LabError::io(&what, e)),
                _ => {}
            }
        }
    }
    Ok(())
}
