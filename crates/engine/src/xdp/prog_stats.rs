//! A loaded program's runs and run time, as the kernel's BPF statistics count them
//! (`kernel.bpf_stats_enabled`): read from the program fd's `/proc/self/fdinfo` entry. The
//! receiver and the sender report them (`run_stats`) for `bench rx/tx`.

use std::os::fd::{AsFd, AsRawFd};

use aya::programs::Xdp;
use aya::Ebpf;

/// Runs and run time (ns) of the XDP program `name` of `bpf` so far; `None` when the kernel's
/// statistics are off or the program is not there.
pub(crate) fn runs_and_time(bpf: &Ebpf, name: &str) -> Option<(u64, u64)> {
    if std::fs::read_to_string("/proc/sys/kernel/bpf_stats_enabled")
        .ok()?
        .trim()
        != "1"
    {
        return None;
    }
    let prog: &Xdp = bpf.program(name)?.try_into().ok()?;
    let fd = prog.fd().ok()?.as_fd().as_raw_fd();
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
    let field = |k: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(k))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some((field("run_cnt:")?, field("run_time_ns:")?))
}
