//! What one measurement window counts: a sender's frames/s and bytes/frame from the sending
//! veth's counters after a warm-up, and the CPU time the sender's threads got meanwhile
//! (`/proc/…/schedstat`); the medians over rounds and the machine's load around a run.

use crate::net::BenchNet;
use engine::xdp::rx_napi::SchedTimes;
use engine::Result;
use std::time::{Duration, Instant};

/// One measurement window: frames/s and bytes/frame from the veth's `tx_packets`/`tx_bytes`,
/// and the CPU time the sender's own threads got during it (`schedstat`'s run time; with no
/// separate IRQ time accounting in the kernel, the softirq work that runs in the sender's
/// context, the dropping peer's NAPI included, is charged to it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    pub(crate) pps: f64,
    pub(crate) len: f64,
    pub(crate) frames: u64,
    pub(crate) secs: f64,
    pub(crate) cpu_secs: Option<f64>,
}

/// The nanoseconds on a CPU in a `schedstat` file.
pub(crate) fn task_cpu_ns(path: &str) -> Option<u64> {
    SchedTimes::read(path).map(|t| t.run_ns)
}

/// The CPU time of every thread of process `pid` (ns).
pub(crate) fn process_cpu_ns(pid: u32) -> Option<u64> {
    let dir = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut sum = 0;
    for e in dir.flatten() {
        sum += task_cpu_ns(&format!("{}/schedstat", e.path().display()))?;
    }
    Some(sum)
}

/// The sending veth's frames/s over one window after the warm-up.
pub(crate) fn counter_rate(net: &BenchNet, warmup: Duration, window: Duration) -> Result<f64> {
    counter_window(net, warmup, window, &|| None).map(|w| w.pps)
}

/// `tx_packets`, `tx_bytes` and the sender's CPU time (`cpu`) over one window after the
/// warm-up.
pub(crate) fn counter_window(
    net: &BenchNet,
    warmup: Duration,
    window: Duration,
    cpu: &dyn Fn() -> Option<u64>,
) -> Result<Window> {
    // The warm-up starts when the sender does: loading and verifying a sender's programs takes
    // a varying part of a second on a loaded machine, and must not fall into the window.
    let start = net.tx_counter("tx_packets")?;
    let give_up = Instant::now() + Duration::from_secs(10);
    while net.tx_counter("tx_packets")? < start + 1000 && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(warmup);
    let b0 = net.tx_counter("tx_bytes")?;
    let p0 = net.tx_counter("tx_packets")?;
    let c0 = cpu();
    let t0 = Instant::now();
    std::thread::sleep(window);
    let c1 = cpu();
    let dt = t0.elapsed().as_secs_f64();
    let p1 = net.tx_counter("tx_packets")?;
    let b1 = net.tx_counter("tx_bytes")?;
    let frames = p1.saturating_sub(p0);
    let len = if frames > 0 {
        b1.saturating_sub(b0) as f64 / frames as f64
    } else {
        0.0
    };
    Ok(Window {
        pps: frames as f64 / dt,
        len,
        frames,
        secs: dt,
        cpu_secs: match (c0, c1) {
            (Some(a), Some(b)) if b > a => Some((b - a) as f64 / 1e9),
            _ => None,
        },
    })
}

/// One window's CPU share and frames per CPU-second.
pub(crate) struct CpuShare {
    pub(crate) share: f64,
    pub(crate) pps_per_cpu: f64,
}

impl CpuShare {
    pub(crate) fn of(w: &Window) -> Option<CpuShare> {
        let c = w.cpu_secs?;
        Some(CpuShare {
            share: c / w.secs,
            pps_per_cpu: w.frames as f64 / c,
        })
    }
}

pub(crate) fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        0.0
    } else if v.len() % 2 == 1 {
        v[v.len() / 2]
    } else {
        (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
    }
}

/// `/proc/loadavg`'s three averages.
pub(crate) fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedstat_gives_this_threads_cpu_time_and_it_grows_while_it_runs() {
        let me = format!("/proc/self/task/{}/schedstat", engine::sys::gettid());
        let a = task_cpu_ns(&me).expect("schedstat of this thread");
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let b = task_cpu_ns(&me).unwrap();
        assert!(b > a, "run time {a} → {b} after 30 ms of spinning");
        assert!(process_cpu_ns(std::process::id()).unwrap() >= b);
        assert_eq!(task_cpu_ns("/proc/self/no-such-file"), None);
    }

    #[test]
    fn frames_per_cpu_second_and_share_of_a_window() {
        let w = Window {
            pps: 3e6,
            len: 60.0,
            frames: 6_000_000,
            secs: 2.0,
            cpu_secs: Some(1.5),
        };
        let c = CpuShare::of(&w).unwrap();
        assert!((c.share - 0.75).abs() < 1e-12);
        assert!((c.pps_per_cpu - 4e6).abs() < 1e-6);
        let none = Window {
            cpu_secs: None,
            ..w
        };
        assert!(CpuShare::of(&none).is_none());
    }
}
