//! Where a veth's receive work runs: the receiving interface's NAPI poll in a kernel thread of
//! its own, pinned to one CPU at real-time priority.
//!
//! Why: by default a veth's receive poll (the XDP receiver's program included) runs as a
//! softirq on the CPU that *transmitted* into the veth, after each batch the XDP sender hands
//! over. The softirq polls 64 frames at a time and gives up when the CPU is wanted by another
//! task (`need_resched`), leaving the rest of the veth's 256-slot ring to `ksoftirqd`, an
//! ordinary thread with less weight than the sender (nice −10). The sender's next batch then
//! finds the ring partly full and the veth refuses the excess (`tx_dropped`, whole 16-frame
//! bulks): seen with `perf record -e napi:napi_poll -e sched:sched_switch` as two polls of 64,
//! a `ksoftirqd/0` wake-up, and 128 frames refused by the next batch (docs/measurements.md,
//! "`bench rx` at the sender's top rate").
//!
//! In a SCHED_FIFO thread the poll runs before any ordinary task of its CPU whenever the ring
//! has frames, and is not cut short for them. The lab does the same for its DUT's interfaces
//! (`lab::napi`, which pins `napi/wr-dut-*` threads; this module pins the threads of one
//! interface).

use crate::{Error, Result};
use std::collections::BTreeSet;
use std::process::Command;

/// Real-time priority of a receive NAPI thread: above every ordinary process, as a softirq
/// (the lab's DUT threads use the same).
pub const NAPI_PRIORITY: i32 = 50;

/// The NAPI threads of `ifname` now running on the host (in any namespace: a kernel thread
/// is named `napi/<ifname>-<napi id>`, cut to 15 characters).
fn napi_threads(ifname: &str) -> BTreeSet<libc::pid_t> {
    let prefix: String = format!("napi/{ifname}-").chars().take(15).collect();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return BTreeSet::new();
    };
    procs
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let pid = e
                .file_name()
                .to_string_lossy()
                .parse::<libc::pid_t>()
                .ok()?;
            let comm = std::fs::read_to_string(e.path().join("comm")).ok()?;
            comm.starts_with(&prefix).then_some(pid)
        })
        .collect()
}

/// Turns on threaded NAPI for `ifname` (inside `netns`, if given) and pins the threads this
/// creates to `cpu` at [`NAPI_PRIORITY`], SCHED_FIFO. Returns their thread ids.
///
/// The interface must already run NAPI (a veth does once an XDP program is attached to it)
/// and must not be threaded yet: its threads are told from other namespaces' interfaces of the
/// same name by being the ones that appear when the switch is turned on.
pub fn thread_on_cpu(netns: Option<&str>, ifname: &str, cpu: usize) -> Result<Vec<libc::pid_t>> {
    let what = format!("threaded receive NAPI on {ifname}");
    let before = napi_threads(ifname);
    let script = format!("echo 1 > /sys/class/net/{ifname}/threaded");
    let mut cmd = match netns {
        Some(ns) => {
            let mut c = Command::new("ip");
            c.args(["netns", "exec", ns, "sh", "-c", &script]);
            c
        }
        None => {
            let mut c = Command::new("sh");
            c.args(["-c", &script]);
            c
        }
    };
    let out = cmd
        .output()
        .map_err(|e| Error::io(format!("{what}: running sh"), e))?;
    if !out.status.success() {
        return Err(Error::Config(format!(
            "{what}: `{script}` failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let new: Vec<libc::pid_t> = napi_threads(ifname).difference(&before).copied().collect();
    if new.is_empty() {
        return Err(Error::Config(format!(
            "{what}: no NAPI thread appeared (the interface must run NAPI, e.g. a veth with an \
             XDP program attached, and must not be threaded already)"
        )));
    }
    for &tid in &new {
        crate::sys::pin_thread_to_cpu(tid, cpu)
            .map_err(|e| Error::io(format!("{what}: pinning thread {tid} to CPU {cpu}"), e))?;
        crate::sys::set_thread_fifo(tid, NAPI_PRIORITY).map_err(|e| {
            Error::io(
                format!("{what}: SCHED_FIFO {NAPI_PRIORITY} for thread {tid}"),
                e,
            )
        })?;
    }
    Ok(new)
}

/// What the scheduler says of a set of threads over an interval (`/proc/<tid>/schedstat`):
/// time on a CPU, time runnable but waiting for one, and how many times they were put on a
/// CPU.
///
/// Why: a receive thread that waits for its CPU while frames arrive lets the veth's ring
/// (256 frames, fixed) fill, and the veth then refuses frames. On a kernel without forced
/// preemption (`PREEMPT_NONE`, as this development VM's) a real-time thread woken while
/// another task runs kernel code waits until that code reaches a preemption point: traced at
/// up to 280 µs (a kworker, a compiler's page faults), six ring-fulls at 6.4 Mpps. The wait
/// time says whether refused frames are the receiver's cost or the machine's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SchedTimes {
    /// Nanoseconds on a CPU.
    pub run_ns: u64,
    /// Nanoseconds runnable but not running (the kernel's `run_delay`).
    pub wait_ns: u64,
    /// Times put on a CPU (one per wake-up for a thread that sleeps when idle).
    pub runs: u64,
}

impl SchedTimes {
    /// Parses `/proc/<tid>/schedstat` ("run_ns wait_ns runs").
    pub fn parse(text: &str) -> Option<SchedTimes> {
        let mut f = text.split_whitespace().map(|v| v.parse::<u64>().ok());
        Some(SchedTimes {
            run_ns: f.next()??,
            wait_ns: f.next()??,
            runs: f.next()??,
        })
    }

    /// The figures in the `schedstat` file at `path` (`/proc/<tid>/schedstat`,
    /// `/proc/<pid>/task/<tid>/schedstat`).
    pub fn read(path: &str) -> Option<SchedTimes> {
        SchedTimes::parse(&std::fs::read_to_string(path).ok()?)
    }

    /// The sum over `tids` now; `None` if any thread's figures cannot be read (the kernel lacks
    /// `CONFIG_SCHED_INFO`, or the thread is gone).
    pub fn of_threads(tids: &[libc::pid_t]) -> Option<SchedTimes> {
        tids.iter().try_fold(SchedTimes::default(), |acc, tid| {
            let t = SchedTimes::read(&format!("/proc/{tid}/schedstat"))?;
            Some(SchedTimes {
                run_ns: acc.run_ns + t.run_ns,
                wait_ns: acc.wait_ns + t.wait_ns,
                runs: acc.runs + t.runs,
            })
        })
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &SchedTimes) -> SchedTimes {
        SchedTimes {
            run_ns: self.run_ns.saturating_sub(earlier.run_ns),
            wait_ns: self.wait_ns.saturating_sub(earlier.wait_ns),
            runs: self.runs.saturating_sub(earlier.runs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_parses_and_differences() {
        let a = SchedTimes::parse("229612786 42314403 1759\n").unwrap();
        assert_eq!(
            a,
            SchedTimes {
                run_ns: 229_612_786,
                wait_ns: 42_314_403,
                runs: 1759
            }
        );
        let b = SchedTimes::parse("300000000 42414403 1800").unwrap();
        assert_eq!(
            b.since(&a),
            SchedTimes {
                run_ns: 70_387_214,
                wait_ns: 100_000,
                runs: 41
            }
        );
        assert_eq!(SchedTimes::parse("12 x 3"), None);
        assert_eq!(SchedTimes::parse("12 13"), None);
        assert_eq!(SchedTimes::parse(""), None);
    }

    #[test]
    fn this_threads_schedstat_is_readable_and_grows() {
        let me = crate::sys::gettid() as libc::pid_t;
        let Some(a) = SchedTimes::of_threads(&[me]) else {
            eprintln!("SKIP: /proc/<tid>/schedstat unreadable (kernel without CONFIG_SCHED_INFO)");
            return;
        };
        let t = std::time::Instant::now();
        let mut x = 0u64;
        while t.elapsed() < std::time::Duration::from_millis(20) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let b = SchedTimes::of_threads(&[me]).unwrap();
        assert!(b.since(&a).run_ns > 0, "{a:?} → {b:?}");
        assert_eq!(SchedTimes::of_threads(&[me, -1]), None);
    }
}
