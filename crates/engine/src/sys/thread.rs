//! Threads and namespaces: which network namespace a thread works in, which CPU it runs on,
//! at which priority, and how late the kernel may wake it.

use super::cvt;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

/// Interface index of `name` in the calling thread's network namespace.
pub fn ifindex(name: &str) -> io::Result<u32> {
    let c = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in name"))?;
    // SAFETY: `c` is a valid NUL-terminated string.
    let i = unsafe { libc::if_nametoindex(c.as_ptr()) };
    if i == 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(i)
}

/// Moves the calling thread into the network namespace of `ns_file` (e.g. `/run/netns/NAME`
/// or `/proc/PID/ns/net`). Other threads are unaffected.
pub fn enter_netns(ns_file: &File) -> io::Result<()> {
    // SAFETY: plain system call on a descriptor we own; only this thread changes namespace.
    cvt(unsafe { libc::setns(ns_file.as_raw_fd(), libc::CLONE_NEWNET) }).map(drop)
}

/// Pins the calling thread to one CPU.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    pin_thread_to_cpu(0, cpu)
}

/// Pins thread `tid` (0: the calling thread) to one CPU. Another process's thread too, e.g. a
/// kernel NAPI thread ([`crate::xdp::rx_napi`]).
pub fn pin_thread_to_cpu(tid: libc::pid_t, cpu: usize) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "cpu out of range",
        ));
    }
    // SAFETY: `cpu` is below CPU_SETSIZE, so CPU_SET stays inside `set`.
    unsafe { libc::CPU_SET(cpu, &mut set) };
    // SAFETY: `set` is a valid cpu_set_t of the size passed; the kernel only reads it.
    cvt(unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) })
        .map(drop)
}

/// Runs thread `tid` (0: the calling thread) under the real-time policy SCHED_FIFO at
/// `priority` (1..=99; needs root or CAP_SYS_NICE): it then runs before every ordinary
/// (CFS/EEVDF) thread of its CPU whenever it has work.
pub fn set_thread_fifo(tid: libc::pid_t, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sched_setscheduler only reads the sched_param passed, during the call.
    cvt(unsafe { libc::sched_setscheduler(tid, libc::SCHED_FIFO, &param) }).map(drop)
}

/// The CPUs the calling thread may run on.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is plain old data; all-zero is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a writable cpu_set_t of the size passed.
    cvt(unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) })?;
    // SAFETY: CPU_ISSET only reads inside `set` for indices below CPU_SETSIZE.
    Ok((0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &set) })
        .collect())
}

/// The calling thread's id (what `bpf_get_current_pid_tgid()` returns in its low 32 bits, and
/// the name of its `/proc/self/task/TID`).
pub fn gettid() -> u32 {
    // SAFETY: gettid(2) has no arguments and cannot fail.
    unsafe { libc::gettid() as u32 }
}

/// Sets the calling thread's nice value (Linux: per thread). Negative values need root; the
/// engine asks for a higher weight so that a busy machine delays its threads less.
pub fn set_thread_nice(nice: i32) -> io::Result<()> {
    let tid = gettid();
    // SAFETY: plain system call on our own thread id.
    cvt(unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) }).map(drop)
}

/// Sets the calling thread's timer slack (how late the kernel may wake it), in nanoseconds.
pub fn set_timer_slack_ns(ns: u64) -> io::Result<()> {
    // SAFETY: PR_SET_TIMERSLACK takes an unsigned long value; no pointers involved.
    cvt(unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) }).map(drop)
}
