//! The lab's only `unsafe`: the few system calls the standard library does not wrap, each
//! behind a safe function. Every block carries a `// SAFETY:` line (DESIGN.md §3: one `sys`
//! module per crate that needs system calls).
//!
//! | wrapper | used by |
//! |---|---|
//! | [`is_root`] (geteuid) | `cmd::is_root` |
//! | [`note_termination_signals`], [`termination_signalled`] (signal) | `cmd`'s interrupt flag |
//! | [`kill`], [`process_exists`] (kill) | `cmd`'s deadline, `netns::delete` |
//! | [`try_lock_exclusive`] (flock) | `lock` |
//! | [`set_affinity_of`], [`set_fifo`] (sched_setaffinity, sched_setscheduler) | `napi` |
//! | [`run_on_cpus`] (pre_exec + sched_setaffinity) | `netns::command` |
//! | [`enter_netns`], [`netlink_socket`], [`send`], [`recv`] (setns, socket, send, recv) | `ctnetlink` |

use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the effective user is root.
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Set by the handler [`note_termination_signals`] installs.
static TERMINATION_SIGNALLED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_termination_signal(_sig: libc::c_int) {
    TERMINATION_SIGNALLED.store(true, Ordering::SeqCst);
}

/// Turns SIGINT and SIGTERM into a flag ([`termination_signalled`]) instead of the default
/// exit.
pub fn note_termination_signals() {
    let handler: extern "C" fn(libc::c_int) = on_termination_signal;
    for sig in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            libc::signal(sig, handler as libc::sighandler_t);
        }
    }
}

/// True once SIGINT or SIGTERM arrived after [`note_termination_signals`].
pub fn termination_signalled() -> bool {
    TERMINATION_SIGNALLED.load(Ordering::SeqCst)
}

/// Sends `sig` to process `pid` (a negative `pid`: to that process group). The caller makes
/// sure the id is one of its own (a child not yet reaped, a process in its own namespace).
pub fn kill(pid: libc::pid_t, sig: libc::c_int) -> io::Result<()> {
    // SAFETY: kill(2) takes no memory from us; which process it reaches is the caller's
    // concern (see above), not memory safety.
    if unsafe { libc::kill(pid, sig) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Whether process `pid` exists (signal 0 only checks).
pub fn process_exists(pid: libc::pid_t) -> bool {
    kill(pid, 0).is_ok()
}

/// Tries once to take an exclusive `flock` on `file`: `Ok(true)` taken, `Ok(false)` held
/// elsewhere. The kernel releases it when the descriptor is closed or the process ends.
pub fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    // SAFETY: flock on a file descriptor we own; it has no memory effects.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EWOULDBLOCK) => Ok(false),
        _ => Err(e),
    }
}

/// Restricts thread `pid` (0: the caller) to `cpus`. Allocates nothing, so it may run in a
/// forked child before exec ([`run_on_cpus`]).
pub fn set_affinity_of(pid: libc::pid_t, cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; zeroed is its empty value. CPU_SET only writes inside
    // the set for indices below CPU_SETSIZE, which we check. sched_setaffinity reads the set
    // we pass, of the size we pass, during the call only.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            if c < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(c, &mut set);
            }
        }
        if libc::sched_setaffinity(pid, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Runs thread `pid` with the real-time policy SCHED_FIFO at `priority` (1..99).
pub fn set_fifo(pid: libc::pid_t, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: sched_setscheduler reads the sched_param we pass by reference for the duration
    // of the call only.
    if unsafe { libc::sched_setscheduler(pid, libc::SCHED_FIFO, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Makes `cmd`'s process (and whatever it execs) run only on `cpus`, set in the child between
/// fork and exec.
pub fn run_on_cpus(cmd: &mut Command, cpus: Vec<usize>) {
    // SAFETY: the closure runs in the forked child before exec; it only calls
    // sched_setaffinity (async-signal-safe) on a CPU set built from data moved in, and
    // allocates nothing.
    unsafe {
        cmd.pre_exec(move || set_affinity_of(0, &cpus));
    }
}

/// Moves the calling thread (only) into the network namespace of `ns_file` (a file under
/// /run/netns).
pub fn enter_netns(ns_file: &File) -> io::Result<()> {
    // SAFETY: plain system call on a descriptor we own; only the calling thread changes
    // namespace.
    if unsafe { libc::setns(ns_file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// A raw netlink socket of `protocol` (e.g. `NETLINK_NETFILTER`) in the calling thread's
/// network namespace, closed when dropped.
pub fn netlink_socket(protocol: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: plain system call; the descriptor is checked before use.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            protocol,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by socket(2) and nothing else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Sends `buf` on `sock` as one message; the bytes the kernel took.
pub fn send(sock: &OwnedFd, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `buf` is a valid buffer of its length; the socket is ours and open.
    let n = unsafe { libc::send(sock.as_raw_fd(), buf.as_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// Receives one message from `sock` into `buf`; its length (cut at `buf`'s).
pub fn recv(sock: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is writable for its length; the socket is ours and open.
    let n = unsafe { libc::recv(sock.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_exists_and_a_reaped_child_does_not() {
        assert!(process_exists(std::process::id() as libc::pid_t));
        let mut child = Command::new("true").spawn().expect("spawn true");
        let pid = child.id() as libc::pid_t;
        child.wait().expect("wait");
        assert!(!process_exists(pid), "pid {pid} reaped but still there");
    }

    #[test]
    fn a_second_exclusive_lock_on_one_file_is_refused_until_the_first_closes() {
        let path = std::env::temp_dir().join(format!("wr-lab-sys-{}.lock", std::process::id()));
        let first = File::create(&path).expect("create");
        let second = File::open(&path).expect("open");
        assert!(try_lock_exclusive(&first).unwrap());
        assert!(!try_lock_exclusive(&second).unwrap());
        drop(first);
        assert!(try_lock_exclusive(&second).unwrap());
        let _ = std::fs::remove_file(&path);
    }
}
