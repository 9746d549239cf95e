//! iperf3 runs: the server and SYN capture at the far end, the client, and the record with
//! its TCP figures and their facts.

use wire::units::BitsPerSec;

pub use crate::iperf3_run::{iperf3_trial, parse_syn_mss};
use crate::plan::{Case, Methodology};
use crate::results::{Record, TrialKey, TrialRecord};
use crate::search::{LineFraction, Outcome, TrialRequest};

use super::*;

/// What to say when the data connections' SYNs reached the far port with another MSS than
/// the case asked iperf3 for (`-M`): something on the path (the DUT's MSS clamp) rewrote it.
/// The first SYN is iperf3's control connection, which keeps the interface's MSS.
pub(super) fn mss_mismatch(case: &Case, syn_mss: &[u32]) -> Option<String> {
    let asked = case.dims.mss?;
    let data = syn_mss.get(1..)?;
    let other: Vec<u32> = data.iter().copied().filter(|&m| m != asked).collect();
    (!other.is_empty()).then(|| {
        format!(
            "asked for MSS {asked}, the far port saw SYNs with MSS {other:?}: the path rewrote it (an MSS clamp on the DUT?)"
        )
    })
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
        let lan_watch = ctx.bed.take_lan_watch();
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
        let load = LineFraction(tcp.l1_bps.0 / speed.0);
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
            lan_watch,
            finished_unix_ms: now_ms(),
        };
        ctx.note_lan_gaps(&rec);
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
    ctx.done_without_result(case, rep, m)
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
