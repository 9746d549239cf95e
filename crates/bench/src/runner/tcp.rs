//! iperf3 runs: the server and SYN capture at the far end, the client, and the record with
//! its TCP figures and their facts.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use wire::encap::IpVersion;
use wire::units::BitsPerSec;

use crate::hooks::{self, Hook, Sampler};
use crate::iperf3::{self, ClientOptions};
use crate::plan::{Case, Methodology, Plan, Protocol};
use crate::results::{MethodologyDone, Record, TcpFigures, TrialKey, TrialRecord};
use crate::search::{LineFraction, Outcome, TrialRequest};
use crate::testbed::Iperf3Ends;

use super::*;

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
pub(super) fn syn_filter(port: u16) -> String {
    format!(
        "(ip and tcp dst port {port} and tcp[13] & 0x12 == 0x02) or (ip6 and ip6[6] == 6 and ip6[42:2] == {port} and ip6[53] & 0x12 == 0x02)"
    )
}

/// What to say when the data connections' SYNs reached the far port with another MSS than
/// the case asked iperf3 for (`-M`): something on the path (the DUT's MSS clamp) rewrote it.
/// The first SYN is iperf3's control connection, which keeps the interface's MSS.
pub(super) fn mss_mismatch(case: &Case, syn_mss: &[u32]) -> Option<String> {
    let asked = case.mss?;
    let data = syn_mss.get(1..)?;
    let other: Vec<u32> = data.iter().copied().filter(|&m| m != asked).collect();
    (!other.is_empty()).then(|| {
        format!(
            "asked for MSS {asked}, the far port saw SYNs with MSS {other:?}: the path rewrote it (an MSS clamp on the DUT?)"
        )
    })
}

pub(super) fn default_mss(ip: IpVersion) -> u32 {
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
) -> Result<(serde_json::Value, TcpFigures, Duration), String> {
    let target = ends.target(case.ip)?.to_string();
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
    .map_err(|e| format!("iperf3 server: {e}"))?;
    if !server.wait_for_output("Server listening", Duration::from_secs(5)) {
        let out = server.stop().map(|o| o.stderr).unwrap_or_default();
        return Err(format!("iperf3 server did not start: {}", out.trim()));
    }
    let sessions = case.sessions.unwrap_or(1);
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
    opts.mss = case.mss;
    opts.omit = plan.methodology.iperf3_omit.as_secs_f64().ceil() as u32;
    opts.reverse = plan.methodology.iperf3_reverse;
    opts.bidir = plan.methodology.iperf3_bidir;
    // UDP cases with `iperf3` listed: datagrams sized to the case's frame size.
    let udp_payload = match (case.protocol, case.frame_size) {
        (Protocol::Udp, Some(f)) => {
            let ip_header = match case.ip {
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
    let json_text = client?;
    let raw: serde_json::Value = serde_json::from_str(&json_text)
        .map_err(|e| format!("iperf3 -J output is not JSON: {e}"))?;
    let report = iperf3::parse(&json_text).map_err(|e| format!("iperf3: {e}"))?;
    let mss = report
        .tcp_mss
        .map(|m| m as u32)
        .or(case.mss)
        .unwrap_or_else(|| default_mss(case.ip));
    let l4 = report.total_received();
    let rates = match udp_payload {
        Some(p) => iperf3::udp_rates(l4, p, case.ip),
        None => iperf3::tcp_rates(l4, mss, case.ip, true),
    };
    let wire_count = counting.and_then(|c| c.join().ok().flatten());
    let (l2_bps, l1_bps) = match &wire_count {
        Some(w) if w.frames > 0 => (w.l2_bps(), w.l1_bps()),
        _ => (rates.l2.0, rates.l1.0),
    };
    let retransmits = match (&report.forward.retransmits, &report.backward) {
        (Some(f), Some(b)) => Some(f + b.retransmits.unwrap_or(0)),
        (f, _) => *f,
    };
    // What the report counts these rates in (the same arithmetic its compatibility reader
    // applies to older records).
    let facts = crate::results::TcpFacts::derive(
        plan.speed(),
        case.ip,
        l4,
        mss,
        wire_count.as_ref(),
        if report.backward.is_some() { 2 } else { 1 },
    );
    Ok((
        raw,
        TcpFigures {
            l4_bps: l4.0,
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
pub(super) fn run_interruptible(argv: &[String], stop: &AtomicBool) -> Result<String, String> {
    let mut child = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", argv[0]))?;
    let mut out = child.stdout.take().ok_or("no stdout")?;
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out.read_to_string(&mut s);
        s
    });
    let status = loop {
        if stop.load(Ordering::SeqCst) {
            let _ = child.kill();
            let _ = child.wait();
            return Err("interrupted".into());
        }
        match child.try_wait() {
            Ok(Some(st)) => break st,
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(e.to_string()),
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
        return Err(format!(
            "iperf3 client failed ({status}): {}",
            j.unwrap_or_else(|| err.trim().to_string())
        ));
    }
    Ok(text)
}

pub(super) fn iperf3_file(case: &Case, rep: u32) -> String {
    let safe: String = case
        .id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}-r{rep}.json")
}

pub(super) fn run_iperf3(
    ctx: &mut Ctx,
    case: &Case,
    rep: u32,
    index: usize,
    total: usize,
) -> Result<(), RunError> {
    let m = Methodology::Iperf3;
    let key = TrialKey {
        case_id: case.id.clone(),
        repetition: rep,
        methodology: m,
        index: 0,
    };
    // Recorded but not marked done (killed between the two lines): the trial counts.
    if !ctx.resume.finished_trials.contains(&key) {
        if ctx.stopped() {
            return Err(RunError::Interrupted);
        }
        let (res, dut) = ctx.bed.tcp_trial(case, ctx.plan, ctx.opts.stop);
        if ctx.stopped() {
            return Err(RunError::Interrupted);
        }
        let (raw, mut tcp, elapsed) = match res {
            Ok(x) => x,
            Err(e) => {
                let msg = format!("{} rep {rep} iperf3: {e}", case.id);
                ctx.note(format!(
                    "FAILED {msg} (not marked done; --resume retries it)"
                ));
                ctx.summary.failures.push(msg);
                return Ok(());
            }
        };
        tcp.dut = dut;
        if let Some(note) = mss_mismatch(case, &tcp.syn_mss) {
            ctx.note(format!("{} rep {rep}: {note}", case.id));
        }
        let path = ctx.opts.dir.join(IPERF3_DIR).join(iperf3_file(case, rep));
        std::fs::write(&path, serde_json::to_vec_pretty(&raw).unwrap_or_default())
            .map_err(|e| failed(format!("{}: {e}", path.display())))?;
        let speed: BitsPerSec = ctx.plan.speed();
        let load = LineFraction(tcp.l1_bps / speed.0);
        let rec = TrialRecord {
            key,
            request: TrialRequest::rate(load, ctx.plan.methodology.iperf3_duration),
            outcome: Outcome {
                intended: load,
                offered: load,
                received: 0,
                lost: 0,
                fragments: 0,
                directions: 1,
                duration: elapsed,
                latency: None,
            },
            tester_limited: false,
            iperf3: Some(raw),
            tcp: Some(tcp),
            engine: None,
            udp: None,
            superseded: false,
            finished_unix_ms: now_ms(),
        };
        ctx.append(&Record::Trial(rec.clone()))?;
        ctx.summary.trials_run += 1;
        let eta = ctx.eta();
        (ctx.opts.progress)(Event::Trial {
            index,
            cases: total,
            record: &rec,
            eta,
        });
        if !nap(ctx.plan.run.settle, ctx.opts.stop) {
            return Err(RunError::Interrupted);
        }
    }
    let d = MethodologyDone {
        case_id: case.id.clone(),
        repetition: rep,
        methodology: m,
        result: None,
        ceiling: None,
        line_pps: None,
    };
    ctx.append(&Record::Done(d.clone()))?;
    (ctx.opts.progress)(Event::Done(&d));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mss_the_path_rewrote_is_named() {
        let plan = crate::plan::Plan::parse(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../plans/lab-demo.toml"
            ))
            .unwrap(),
            "lab-demo.toml",
        )
        .unwrap();
        let cases = plan.cases().unwrap();
        let c = cases
            .iter()
            .find(|c| c.id == "gateway/tcp4/s1/mss1414/offload=on")
            .unwrap();
        assert_eq!(mss_mismatch(c, &[1460, 1414]), None);
        let n = mss_mismatch(c, &[1460, 1200]).unwrap();
        assert!(
            n.contains("asked for MSS 1414") && n.contains("[1200]"),
            "{n}"
        );
        // Nothing captured, or a case without `mss`: nothing to say.
        assert_eq!(mss_mismatch(c, &[]), None);
        let no_mss = cases.iter().find(|c| c.id == "napt/tcp4/s1").unwrap();
        assert_eq!(mss_mismatch(no_mss, &[1460, 1200]), None);
    }

    #[test]
    fn syn_mss_from_tcpdump() {
        let t = "listening on wr-b, link-type EN10MB\n12:00:00.1 IP (tos 0x0, ttl 63, id 1, offset 0, flags [DF], proto TCP (6), length 60)\n    198.51.100.2.40000 > 203.0.113.2.5201: Flags [S], cksum 0x1 (correct), seq 1, win 64240, options [mss 1460,sackOK,TS val 1 ecr 0,nop,wscale 7], length 0\n    x > y: Flags [S], options [mss 1200,nop], length 0\n";
        assert_eq!(parse_syn_mss(t), vec![1460, 1200]);
    }
}
