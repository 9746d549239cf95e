//! One iperf3 run on the testbed (the executor's side of a TCP trial): where its ends run
//! ([`Iperf3Ends`]), the run itself with its SYN capture ([`iperf3_trial`]), and the child
//! processes it starts. The runner decides which runs to make and records them
//! (`runner::tcp`); the testbed makes them through this module, so neither imports the other.

use std::io::Read;
use std::net::IpAddr;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use wire::encap::IpVersion;
use wire::units::BitsPerSec;

use crate::hooks::{self, Exec, Hook, Sampler};
use crate::iperf3::{self, ClientOptions};
use crate::plan::{Case, Plan, Protocol};
use crate::results::TcpFigures;

/// The TCP port of the iperf3 server wirerate starts in the far tester namespace.
pub const IPERF3_PORT: u16 = 5201;

/// Where iperf3's ends run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iperf3Ends {
    /// The client (the sending tester port's namespace).
    pub client: Exec,
    /// The server (the receiving port's namespace, or the DUT in the endpoint topology).
    pub server: Exec,
    /// `tcpdump` of the client SYNs where they arrive: (where, interface). `None` when the
    /// far end is a remote DUT (its interfaces are not ours to name).
    pub capture: Option<(Exec, String)>,
    /// The port whose counters give the run's wire rate, and which side of it
    /// (crate::iperf3::wire_count says why); `None`: iperf3's own figure stands.
    pub wire_port: Option<(Exec, String, crate::iperf3::wire_count::Side)>,
    /// The server's addresses the client connects to.
    pub target_v4: Option<IpAddr>,
    pub target_v6: Option<IpAddr>,
}

impl Iperf3Ends {
    /// The server address for `ip`.
    pub fn target(&self, ip: IpVersion) -> Result<IpAddr, NoIperf3Target> {
        match ip {
            IpVersion::V4 => self.target_v4,
            IpVersion::V6 => self.target_v6,
        }
        .ok_or(NoIperf3Target { ip })
    }
}

/// The iperf3 server has no address of the case's IP version ([`Iperf3Ends::target`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NoIperf3Target {
    pub ip: IpVersion,
}

impl std::fmt::Display for NoIperf3Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "no {} address for the iperf3 server", self.ip)
    }
}

impl std::error::Error for NoIperf3Target {}

/// Why an iperf3 run gave no figures ([`iperf3_trial`]); its `Display` is the text the run
/// records and users read.
#[derive(Debug)]
pub enum Iperf3TrialError {
    /// The server has no address of the case's IP version.
    NoTarget(NoIperf3Target),
    /// The server could not be started.
    ServerStart(std::io::Error),
    /// The server did not say it listens in time: what it wrote to stderr.
    ServerSilent { stderr: String },
    /// The client failed, or was stopped.
    Client(ClientError),
    /// The client's `-J` output is not JSON.
    NotJson(serde_json::Error),
    /// The JSON is not an iperf3 report this reader knows.
    Report(iperf3::report::ReportError),
}

impl std::fmt::Display for Iperf3TrialError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Iperf3TrialError::NoTarget(e) => e.fmt(f),
            Iperf3TrialError::ServerStart(e) => write!(f, "iperf3 server: {e}"),
            Iperf3TrialError::ServerSilent { stderr } => {
                write!(f, "iperf3 server did not start: {stderr}")
            }
            Iperf3TrialError::Client(e) => e.fmt(f),
            Iperf3TrialError::NotJson(e) => write!(f, "iperf3 -J output is not JSON: {e}"),
            Iperf3TrialError::Report(e) => write!(f, "iperf3: {e}"),
        }
    }
}

impl std::error::Error for Iperf3TrialError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Iperf3TrialError::NoTarget(e) => Some(e),
            Iperf3TrialError::ServerStart(e) => Some(e),
            Iperf3TrialError::ServerSilent { .. } => None,
            Iperf3TrialError::Client(e) => Some(e),
            Iperf3TrialError::NotJson(e) => Some(e),
            Iperf3TrialError::Report(e) => Some(e),
        }
    }
}

/// MSS values from `tcpdump -v` output (`options [mss 1460,…]`), in order.
pub fn parse_syn_mss(text: &str) -> Vec<u32> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(p) = rest.find("mss ") {
        rest = &rest[p + 4..];
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if let Ok(v) = digits.parse() {
            out.push(v);
        }
    }
    out
}

/// Client SYNs (SYN without ACK) to the iperf3 port, IPv4 or IPv6 (no extension headers).
pub(crate) fn syn_filter(port: u16) -> String {
    format!(
        "(ip and tcp dst port {port} and tcp[13] & 0x12 == 0x02) or (ip6 and ip6[6] == 6 and ip6[42:2] == {port} and ip6[53] & 0x12 == 0x02)"
    )
}

pub(crate) fn default_mss(ip: IpVersion) -> u32 {
    match ip {
        IpVersion::V4 => 1460,
        IpVersion::V6 => 1440,
    }
}

/// One iperf3 run: server at the far end (port B's namespace, or the DUT in the endpoint
/// topology; started and stopped here, its port awaited), SYN capture there, client in port
/// A's namespace.
pub fn iperf3_trial(
    ends: &Iperf3Ends,
    case: &Case,
    plan: &Plan,
    stop: &AtomicBool,
) -> Result<(serde_json::Value, TcpFigures, Duration), Iperf3TrialError> {
    let target = ends
        .target(case.dims.ip)
        .map_err(Iperf3TrialError::NoTarget)?
        .to_string();
    let (ns_a, ns_b) = (&ends.client, &ends.server);
    let server_cmd = iperf3::server_argv(IPERF3_PORT, None)
        .iter()
        .map(|a| hooks::shell_quote(a))
        .collect::<Vec<_>>()
        .join(" ");
    let server = Sampler::start(
        ns_b,
        &Hook {
            command: format!("exec {server_cmd}"),
            parse: None,
        },
        &[],
    )
    .map_err(Iperf3TrialError::ServerStart)?;
    if !server.wait_for_output("Server listening", Duration::from_secs(5)) {
        let out = server.stop().map(|o| o.stderr).unwrap_or_default();
        return Err(Iperf3TrialError::ServerSilent {
            stderr: out.trim().to_string(),
        });
    }
    let sessions = case.dims.sessions.unwrap_or(1);
    let capture = ends.capture.as_ref().and_then(|(exec, ifname)| {
        Sampler::start(
            exec,
            &Hook {
                command: format!(
                    "exec tcpdump -i {} --immediate-mode -nn -v -l -c {} {} 2>&1",
                    hooks::shell_quote(ifname),
                    sessions + 1,
                    hooks::shell_quote(&syn_filter(IPERF3_PORT))
                ),
                parse: None,
            },
            &[],
        )
        .ok()
    });
    let capture = match capture {
        Some(c) if c.wait_for_output("listening on", Duration::from_secs(5)) => Some(c),
        Some(c) => {
            let _ = c.stop();
            None
        }
        None => None,
    };
    let seconds = plan
        .methodology
        .iperf3_duration
        .as_secs_f64()
        .ceil()
        .max(1.0) as u32;
    let mut opts = ClientOptions::tcp(&target, IPERF3_PORT, seconds);
    opts.parallel = sessions;
    opts.mss = case.dims.mss;
    opts.omit = plan.methodology.iperf3_omit.as_secs_f64().ceil() as u32;
    opts.reverse = plan.methodology.iperf3_reverse;
    opts.bidir = plan.methodology.iperf3_bidir;
    // UDP cases with `iperf3` listed: datagrams sized to the case's frame size.
    let udp_payload = match (
        case.dims.protocol,
        case.frame().and_then(|f| f.fixed()).map(|b| b as u32),
    ) {
        (Protocol::Udp, Some(f)) => {
            let ip_header = match case.dims.ip {
                IpVersion::V4 => 20,
                IpVersion::V6 => 40,
            };
            let overhead = iperf3::UDP_HEADER + ip_header + iperf3::ETHERNET_OVERHEAD;
            let p = f.saturating_sub(overhead).max(16);
            opts.protocol = iperf3::L4::Udp;
            opts.bitrate = Some(
                plan.methodology
                    .iperf3_udp_bitrate
                    .unwrap_or(BitsPerSec(0.0)),
            );
            opts.length = Some(p);
            opts.mss = None;
            Some(p)
        }
        _ => None,
    };
    let argv = iperf3::wrap(ns_a, &opts.argv());
    let started = Instant::now();
    // Counted on the wire while iperf3 runs, one way only (with -R or --bidir the data also
    // flows the other way, which these counters do not see).
    let counting = match (&ends.wire_port, opts.reverse || opts.bidir) {
        (Some(port), false) => iperf3::wire_count::window(
            plan.methodology.iperf3_omit,
            Duration::from_secs(u64::from(seconds)),
        )
        .map(|w| iperf3::wire_count::count_in_background(port.clone(), started, w)),
        _ => None,
    };
    let client = run_interruptible(&argv, stop);
    let elapsed = started.elapsed();
    // tcpdump exits by itself after the control and data connections' SYNs ("N packets
    // captured"); give it a moment, then stop it whatever it saw.
    let syn_text = capture
        .and_then(|c| {
            c.wait_for_output("packets captured", Duration::from_secs(1));
            c.stop().ok()
        })
        .map(|o| o.stdout)
        .unwrap_or_default();
    let _ = server.stop();
    let json_text = client.map_err(Iperf3TrialError::Client)?;
    let raw: serde_json::Value =
        serde_json::from_str(&json_text).map_err(Iperf3TrialError::NotJson)?;
    let report = iperf3::parse(&json_text).map_err(Iperf3TrialError::Report)?;
    let mss = report
        .tcp_mss
        .map(|m| m as u32)
        .or(case.dims.mss)
        .unwrap_or_else(|| default_mss(case.dims.ip));
    let l4 = report.total_received();
    let rates = match udp_payload {
        Some(p) => iperf3::udp_rates(l4, p, case.dims.ip),
        None => iperf3::tcp_rates(l4, mss, case.dims.ip, true),
    };
    let wire_count = counting.and_then(|c| c.join().ok().flatten());
    let (l2_bps, l1_bps) = match &wire_count {
        Some(w) if w.frames > 0 => (w.l2_bps(), w.l1_bps()),
        _ => (rates.l2, rates.l1),
    };
    let retransmits = match (&report.forward.retransmits, &report.backward) {
        (Some(f), Some(b)) => Some(f + b.retransmits.unwrap_or(0)),
        (f, _) => *f,
    };
    // What the report counts these rates in (the same arithmetic its compatibility reader
    // applies to older records).
    let facts = crate::results::TcpFacts::derive(
        plan.speed(),
        case.dims.ip,
        l4,
        mss,
        wire_count.as_ref(),
        if report.backward.is_some() { 2 } else { 1 },
    );
    Ok((
        raw,
        TcpFigures {
            l4_bps: l4,
            l2_bps,
            l1_bps,
            wire_count,
            mss,
            retransmits,
            syn_mss: parse_syn_mss(&syn_text),
            cpu_local: report.cpu.host_total,
            cpu_remote: report.cpu.remote_total,
            dut: None,
            facts: Some(facts),
        },
        elapsed,
    ))
}

/// Runs `argv`, collecting stdout; killed (this child, by its handle) when `stop` is set.
pub(crate) fn run_interruptible(argv: &[String], stop: &AtomicBool) -> Result<String, ClientError> {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| ClientError::Spawn {
            program: argv[0].clone(),
            source,
        })?;
    let mut out = child.stdout.take().ok_or(ClientError::NoStdout)?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let status = loop {
        if stop.load(Ordering::SeqCst) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(ClientError::Interrupted);
        }
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(ClientError::Wait(e)),
        }
    };
    let text = reader.join().unwrap_or_default();
    if !status.success() {
        let mut err = String::new();
        if let Some(mut e) = child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        // iperf3 -J reports its errors inside the JSON.
        let j = serde_json::from_str::<serde_json::Value>(&text)
            .ok()
            .and_then(|v| v.get("error").and_then(|e| e.as_str()).map(String::from));
        return Err(ClientError::Failed {
            status,
            message: j.unwrap_or_else(|| err.trim().to_string()),
        });
    }
    Ok(text)
}

/// Why the iperf3 client gave no output ([`run_interruptible`]).
#[derive(Debug)]
pub enum ClientError {
    /// The program could not be started.
    Spawn {
        program: String,
        source: std::io::Error,
    },
    /// Its standard output could not be taken.
    NoStdout,
    /// `stop` was set: the child was killed.
    Interrupted,
    /// Waiting for the child failed.
    Wait(std::io::Error),
    /// It exited unsuccessfully: iperf3's own error (from its JSON, else its stderr).
    Failed {
        status: std::process::ExitStatus,
        message: String,
    },
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Spawn { program, source } => write!(f, "{program}: {source}"),
            ClientError::NoStdout => f.write_str("no stdout"),
            ClientError::Interrupted => f.write_str("interrupted"),
            ClientError::Wait(e) => e.fmt(f),
            ClientError::Failed { status, message } => {
                write!(f, "iperf3 client failed ({status}): {message}")
            }
        }
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ClientError::Spawn { source, .. } => Some(source),
            ClientError::Wait(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The typed error's texts are those the run recorded when the error was a string.
    #[test]
    fn iperf3_trial_errors_keep_their_texts() {
        let text = |e: Iperf3TrialError| e.to_string();
        assert_eq!(
            text(Iperf3TrialError::NoTarget(NoIperf3Target {
                ip: IpVersion::V6
            })),
            "no ipv6 address for the iperf3 server"
        );
        assert_eq!(
            text(Iperf3TrialError::ServerStart(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "no such namespace"
            ))),
            "iperf3 server: no such namespace"
        );
        assert_eq!(
            text(Iperf3TrialError::ServerSilent {
                stderr: "iperf3: error - unable to start listener".into()
            }),
            "iperf3 server did not start: iperf3: error - unable to start listener"
        );
        assert_eq!(
            text(Iperf3TrialError::Client(ClientError::Interrupted)),
            "interrupted"
        );
        let not_json = serde_json::from_str::<serde_json::Value>("iperf3: error").unwrap_err();
        let expected = format!("iperf3 -J output is not JSON: {not_json}");
        assert_eq!(text(Iperf3TrialError::NotJson(not_json)), expected);
        // As before: the report reader's own text after `iperf3: `.
        assert_eq!(
            text(Iperf3TrialError::Report(iperf3::ReportError(
                "missing `end`".into()
            ))),
            "iperf3: iperf3 report: missing `end`"
        );
    }

    /// A client that cannot be started is the client's error, its program named.
    #[test]
    fn a_client_that_cannot_start_names_its_program() {
        let stop = AtomicBool::new(false);
        let e = run_interruptible(&["/nonexistent/iperf3".to_string()], &stop).unwrap_err();
        let e = Iperf3TrialError::Client(e);
        assert!(e.to_string().starts_with("/nonexistent/iperf3: "), "{e}");
        assert!(std::error::Error::source(&e).is_some());
    }
}
