//! What the tests of wirerate's ISP-side machines (`emulate_pppoe`, `emulate_dslite`,
//! `trial_inside`) share: the root check, `ip`, and a veth pair between two `wr-` namespaces.
//! Each test file uses its own namespace prefix and device names, so they can run at once.

#![allow(dead_code)] // each test file uses part of this

use std::process::{Command, Stdio};

use engine::port::PortSpec;

/// Whether we are root (namespaces, AF_PACKET); the tests print `SKIP: …` otherwise.
pub use lab::is_root;

/// Whether a test that plays an uplink with real kernels can run: root, and each of `tools`
/// on PATH. Prints the `SKIP: …` reason when not; a missing tool fails the test in CI, where
/// `scripts/install-deps.sh` installs every one of them.
pub fn root_and_tools(tools: &[&str]) -> bool {
    if !is_root() {
        println!("SKIP: needs root (network namespaces, AF_PACKET, TUN)");
        return false;
    }
    for tool in tools {
        if lab::cmd::tool(tool).is_err() {
            if std::env::var_os("CI").is_some() {
                panic!("{tool} is missing in CI: scripts/install-deps.sh must install it");
            }
            println!("SKIP: {tool} is missing");
            return false;
        }
    }
    true
}

/// Runs `script` with `sh -ec` in namespace `ns`; fails the test with its stderr when it fails,
/// else returns its stdout.
pub fn ns_sh(ns: &str, script: &str) -> String {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "sh", "-ec", script])
        .output()
        .expect("ip netns exec");
    assert!(
        out.status.success(),
        "{ns}: {script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs `ip ARGS`; fails the test with ip's message when it fails.
pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("running ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Two namespaces `PREFIX<pid>TAGa` and `PREFIX<pid>TAGb` joined by a veth pair (`DEV0` in
/// `a`, `DEV1` in `b`), kernel IPv6 off on it so that only our machines speak (no
/// autoconfiguration chatter, only our ND); removed on drop, also when the test fails.
pub struct NsPair {
    pub a: String,
    pub b: String,
    dev_a: String,
    dev_b: String,
}

impl NsPair {
    pub fn new(prefix: &str, dev: &str, tag: &str) -> NsPair {
        let id = std::process::id() % 100_000;
        let pair = NsPair {
            a: format!("{prefix}{id}{tag}a"),
            b: format!("{prefix}{id}{tag}b"),
            dev_a: format!("{dev}0"),
            dev_b: format!("{dev}1"),
        };
        pair.remove();
        ip(&["netns", "add", &pair.a]);
        ip(&["netns", "add", &pair.b]);
        ip(&[
            "link",
            "add",
            "name",
            &pair.dev_a,
            "netns",
            &pair.a,
            "type",
            "veth",
            "peer",
            "name",
            &pair.dev_b,
            "netns",
            &pair.b,
        ]);
        for (ns, dev) in [(&pair.a, &pair.dev_a), (&pair.b, &pair.dev_b)] {
            let _ = Command::new("ip")
                .args(["netns", "exec", ns, "sysctl", "-qw"])
                .arg(format!("net.ipv6.conf.{dev}.disable_ipv6=1"))
                .status();
            ip(&["-n", ns, "link", "set", dev, "up"]);
        }
        pair
    }

    fn remove(&self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip")
                .args(["netns", "del", ns])
                .stderr(Stdio::null())
                .status();
        }
    }

    /// Side `a`'s device as a port named `name`.
    pub fn port_a(&self, name: &str) -> PortSpec {
        let mut p = PortSpec::new(name, &self.dev_a);
        p.netns = Some(self.a.clone());
        p
    }

    /// Side `b`'s device as a port named `name`.
    pub fn port_b(&self, name: &str) -> PortSpec {
        let mut p = PortSpec::new(name, &self.dev_b);
        p.netns = Some(self.b.clone());
        p
    }
}

impl Drop for NsPair {
    fn drop(&mut self) {
        self.remove();
    }
}

/// A tcpdump that is capturing. [`Capture::start`] returns once tcpdump has said "listening
/// on" (device opened, filter set), so a frame sent after it returns is captured: a fixed
/// sleep before the first frame was a guess that a busy machine can outlast. Its standard
/// error is kept for [`Capture::stop`] / [`Capture::wait`] (the drop count it prints at exit).
/// Killed if dropped still running (a failed assertion).
pub struct Capture {
    child: Option<std::process::Child>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// How long tcpdump may take to start listening.
const CAPTURE_START: std::time::Duration = std::time::Duration::from_secs(20);

impl Capture {
    /// Spawns `cmd` (a tcpdump, usually under `ip netns exec`) with its standard error piped
    /// and waits for its "listening on" line; panics with what it printed if none comes.
    pub fn start(mut cmd: Command) -> Capture {
        use std::io::BufRead;
        let mut child = cmd.stderr(Stdio::piped()).spawn().expect("tcpdump");
        let err = child.stderr.take().expect("piped stderr");
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let kept = stderr.clone();
        let reader = std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                let listening = line.contains("listening on");
                let mut k = kept.lock().unwrap();
                k.push_str(&line);
                k.push('\n');
                drop(k);
                if listening {
                    let _ = tx.send(());
                }
            }
        });
        let cap = Capture {
            child: Some(child),
            stderr,
            reader: Some(reader),
        };
        if rx.recv_timeout(CAPTURE_START).is_err() {
            panic!(
                "tcpdump did not start listening within {CAPTURE_START:?}: {}",
                cap.stderr.lock().unwrap()
            );
        }
        cap
    }

    /// SIGINT, then what it wrote: standard output and standard error.
    pub fn stop(self) -> (Vec<u8>, String) {
        if let Some(c) = &self.child {
            let _ = Command::new("kill")
                .args(["-INT", &c.id().to_string()])
                .status();
        }
        self.wait()
    }

    /// Waits (at most 30 s, then kills it) for it to exit by itself (`-c N`), then what it
    /// wrote: standard output and standard error.
    pub fn wait(mut self) -> (Vec<u8>, String) {
        let mut child = self.child.take().expect("running");
        let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while child.try_wait().expect("try_wait").is_none() {
            if std::time::Instant::now() > end {
                let _ = child.kill();
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = child.wait_with_output().expect("tcpdump's output");
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
        let err = self.stderr.lock().unwrap().clone();
        (out.stdout, err)
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A scapy (Debian's `/usr/bin/python3`) function for the DHCPv6 clients of the MAP-E tests:
/// `solicit(iface, sol)` sends `sol` once a second, up to 20 times, until an answer to port 546
/// arrives, and returns its UDP payload (or None). One sniffer listens before the first Solicit
/// goes out: our servers answer within milliseconds, faster than a sniffer started per try
/// compiles its filter (such a sniffer missed every answer in one suite run).
pub const SCAPY_SOLICIT: &str = r#"
import threading
from scapy.all import UDP, AsyncSniffer, sendp

def solicit(iface, sol):
    ready = threading.Event()
    s = AsyncSniffer(iface=iface, filter="udp and dst port 546", count=1, timeout=25,
                     started_callback=ready.set)
    s.start()
    ready.wait(10)
    for _ in range(20):
        sendp(sol, iface=iface)
        s.join(timeout=1)
        if not s.running:
            break
    if s.running:
        s.stop()
    return bytes(s.results[0][UDP].payload) if s.results else None
"#;
