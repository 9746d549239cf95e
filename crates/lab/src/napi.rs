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
//! The tester's ports get the same on the tester's CPUs (session 10). A frame the DUT forwards
//! out of `wr-dut-b` is received by the tester's `wr-b` in a poll that, by default, runs on
//! the CPU that transmitted: the DUT's. That poll runs the tester's receive work — the XDP
//! receiver's program, which on a veth first turns the DUT's skb into an XDP buffer (a copy
//! when the skb lacks headroom), or GRO and the skb for an AF_PACKET receiver — so the DUT's
//! CPU paid for the tester's counting, and every forwarding figure was the DUT's capacity minus
//! that cost. Threaded NAPI on `wr-a` and `wr-b`, pinned to the tester's CPUs at the same
//! real-time priority, moves it there. The priority matters: a receive poll that fell behind
//! would let the tester port's ring fill and the DUT's transmit into it fail, which would read
//! as the DUT's loss; at real-time priority the poll preempts the tester's senders instead,
//! whose slipped schedule the engine detects (tester-limited, never a DUT figure).
//!
//! What it changes for the tester: the DUT drains its 256-frame veth ring at its own pace, so
//! an overloaded DUT's ring fills, and this kernel's veth refuses frames then (its queue stops,
//! or it drops them: docs/engine.md, "When the DUT's port refuses a frame"). Every sender
//! counts such a frame as offered and lost at the DUT's port (`refused_by_dut`, DESIGN.md §7)
//! instead of waiting for room — before session 9 the AF_PACKET senders waited, and this was
//! only done while the fast path was on.

use crate::error::{LabError, Result};

/// Threaded NAPI on `ifaces` (in `ns`) with their threads pinned to the DUT's CPU at
/// real-time priority. Idempotent. Nothing to pin on a one-CPU machine (the threads exist but
/// there is no other CPU to keep them off).
pub(crate) fn receive_on_dut_cpu(ns: &str, ifaces: &[&str]) -> Result<()> {
    let Some(cpu) = crate::cpu::dut_cpu() else {
        return Ok(());
    };
    threaded(ns, ifaces)?;
    pin_napi_threads(&[DUT_THREADS], &[cpu])
}

/// Threaded NAPI on the tester's port interfaces `ifaces` (in `ns`), their threads pinned to
/// the tester's CPUs at real-time priority (see the module documentation). Idempotent.
/// Nothing to do on a one-CPU machine.
pub(crate) fn receive_on_tester_cpus(ns: &str, ifaces: &[&str]) -> Result<()> {
    let cpus = crate::cpu::tester_cpus();
    if crate::cpu::dut_cpu().is_none() || cpus.is_empty() {
        return Ok(());
    }
    threaded(ns, ifaces)?;
    pin_napi_threads(TESTER_THREADS, &cpus)
}

/// The NAPI threads of every lab DUT's interfaces (`napi/wr-dut-a-…`; a thread's name is
/// `napi/<interface>-<NAPI id>`, cut to 15 bytes).
const DUT_THREADS: &str = "napi/wr-dut-";

/// The NAPI threads of the tester ports' interfaces (`wr-a`, `wr-b`) of every lab.
const TESTER_THREADS: &[&str] = &["napi/wr-a-", "napi/wr-b-"];

/// Threaded NAPI on `ifaces` in `ns`.
fn threaded(ns: &str, ifaces: &[&str]) -> Result<()> {
    if ifaces.is_empty() {
        return Ok(());
    }
    let script: Vec<String> = ifaces
        .iter()
        .map(|i| format!("echo 1 > /sys/class/net/{i}/threaded"))
        .collect();
    crate::netns::sh(ns, &script.join("; ")).map(drop)
}

/// Real-time priority of the DUT's NAPI threads: above every ordinary process, as a softirq.
const NAPI_PRIORITY: i32 = 50;

/// Pin every NAPI thread whose name starts with one of `prefixes` to `cpus`, SCHED_FIFO.
/// Threads of other labs are included: the DUT's and the tester's CPUs are the same for every
/// lab.
fn pin_napi_threads(prefixes: &[&str], cpus: &[usize]) -> Result<()> {
    let procs = std::fs::read_dir("/proc").map_err(|e| LabError::io("reading /proc", e))?;
    for entry in procs.filter_map(|e| e.ok()) {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<libc::pid_t>() else {
            continue;
        };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if !prefixes.iter().any(|p| comm.starts_with(p)) {
            continue;
        }
        let what = format!("pinning the NAPI thread {} (pid {pid})", comm.trim());
        // A thread that ended meanwhile (another lab switched its fast path off) is fine.
        let gone = |e: &std::io::Error| e.raw_os_error() == Some(libc::ESRCH);
        for r in [
            crate::cpu::set_affinity_of(pid, cpus),
            crate::cpu::set_fifo(pid, NAPI_PRIORITY),
        ] {
            match r {
                Err(e) if !gone(&e) => return Err(LabError::io(&what, e)),
                _ => {}
            }
        }
    }
    Ok(())
}
