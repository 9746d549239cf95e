//! What the hand-run session commands (`wirerate pppoe`, `wirerate dslite`) share: when to
//! stop, and how a line is printed (text, or one JSON object per line with --json). The
//! machines and their loops are `bench::hand`.

use std::io::{BufRead, IsTerminal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bench::session_json as sj;
use engine::tun::{SynSeen, Tun};

use crate::error::{CliError, CliResult};

pub(crate) fn secs(s: f64, what: &str) -> CliResult<Duration> {
    Duration::try_from_secs_f64(s)
        .map_err(|_| CliError::Usage(format!("{what} {s}: not a number of seconds")))
}

/// When a hand-run machine stops: after `--duration`, on SIGINT or SIGTERM, or when a line
/// (Enter) or end of file (Ctrl-D) arrives on stdin if stdin is a terminal (a
/// non-interactive stdin, a script or `< /dev/null`, is ignored). The command then closes its
/// sessions and prints its statistics, so Ctrl-C is a clean stop: PADT for every open
/// session, exit status 0.
pub(crate) struct Stop {
    stdin: Arc<AtomicBool>,
    start: Instant,
    duration: Option<Duration>,
}

impl Stop {
    pub(crate) fn new(duration: Option<Duration>) -> Stop {
        lab::install_interrupt_handler();
        let stdin = Arc::new(AtomicBool::new(false));
        if std::io::stdin().is_terminal() {
            let s = stdin.clone();
            std::thread::spawn(move || {
                let mut line = String::new();
                let _ = std::io::stdin().lock().read_line(&mut line);
                s.store(true, Ordering::Relaxed);
            });
        }
        Stop {
            stdin,
            start: Instant::now(),
            duration,
        }
    }

    /// Whether it is time to stop.
    pub(crate) fn now(&self) -> bool {
        self.stdin.load(Ordering::Relaxed)
            || lab::cmd::interrupted()
            || self.duration.is_some_and(|d| self.start.elapsed() >= d)
    }
}

/// Prints a client SYN the TUN hand-off saw (a `syn` line).
pub(crate) fn print_syn(s: &SynSeen, json: bool) {
    let dir = sj::direction(s.direction);
    let mss = s.mss.map_or("-".to_string(), |m| m.to_string());
    emit(
        json,
        sj::syn(s),
        format!(
            "syn   {dir:<4} {}:{} -> {}:{}  mss {mss}",
            s.src, s.src_port, s.dst, s.dst_port
        ),
    );
}

pub(crate) fn print_tun_stats(t: &Tun) {
    let st = &t.stats;
    outln!(
        "tun {}: to the kernel {} packets ({} B, dropped {}), from the kernel {} packets ({} B), \
         client SYNs {}",
        t.name(),
        st.up_packets,
        st.up_bytes,
        st.up_dropped,
        st.down_packets,
        st.down_bytes,
        st.syns
    );
    for (k, v) in &st.down_dropped {
        outln!("tun not sent {k:?}: {v}");
    }
}

pub(crate) fn emit(json: bool, v: serde_json::Value, text: String) {
    if json {
        outln!("{v}");
    } else {
        outln!("{text}");
    }
}
