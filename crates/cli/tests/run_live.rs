//! `wirerate run` on the real lab (issue 5). Root is needed; without it each test prints
//! `SKIP: …`. Every test uses its own lab name and run directory; they are serialised because
//! they measure.
//!
//! Two ground truths: DUTs whose limit is known from their configuration, so a search's figure is
//! checked against the DUT's property, not against the machine's speed. Both search from far
//! above the limit (tbf: line rate; the policer: 30 % of line rate, 446,429 fps, 9× its limit:
//! at 64 B line rate the XDP sender shares its CPU with the DUT port's receive poll and slipped
//! in every attempt of two dry runs on a loaded machine) on the XDP engine (the plans' default `backend = "auto"`; every trial record must say
//! `xdp`), whose sender the DUT cannot back-pressure, and both check the loss against the DUT's
//! own drop counter. A run that ended tester-limited (no DUT figure) is run again, at most 3
//! times; a tester-limited figure is never used. Each takes 20–50 s.
//!
//! - `tbf_ground_truth`: a bit-rate limit. The DUT's egress is shaped with tc tbf to 20 Mbit/s;
//!   the RFC 2544 throughput search must find it within ±2 % (1518 B frames), and tbf's
//!   `dropped` must be the frames the run lost.
//! - `policer_ground_truth`: a frame-rate limit. An nftables policer in the DUT's forward hook
//!   drops UDP above 50,000 frames/s; the multi-goal search (goal 0 % loss) must find it within
//!   ±2 % (64 B frames at 1 Gb/s), and the rule's counter must be the frames the run lost.
//!
//! The others:
//!
//! - `iperf3_figures_match_iperf3`: the TCP figures in `trials.jsonl` are what iperf3's own JSON
//!   says, the raw JSON is kept per trial, and the SYN's MSS seen at the far port shows the
//!   DUT's MSS clamp (profile `mss-clamp-1200`).
//! - `kill9_then_resume`: `kill -9` in the middle of a search, then `--resume`: every trial recorded
//!   before the kill is still there, no trial is measured twice, and the run completes.
//! - `sigint_stops_cleanly`: SIGINT mid-run exits 1 with the `--resume` hint, after the teardown
//!   hook ran and the lab was removed; `--resume` then finishes.
//! - `run_with_a_closed_stdout_measures_records_and_tears_down`: `run … | head` (issue 19 row
//!   2): every trial recorded, teardown done, lab removed, exit 0.
//! - `bidirectional_records_keep_each_direction`: a policer on one direction only; each trial's
//!   record splits sent/received/lost by direction, and the policer's counter is the B→A loss.
//! - `a_case_without_the_fastpath_dimension_gets_its_profile_again`: after a case with the fast
//!   path on, a case without the dimension runs with it off (its profile re-applied), and the
//!   DUT's receive polls are threaded on its CPU in both.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bench::results::{read_records, MethodologyDone, Record, TrialRecord};
use bench::search::{Finding, Status};

mod common_run;
use common_run::{has_tool, is_root, plan_file, run, run_ok, run_plan_ok, trials, WIRERATE};

static SERIAL: Mutex<()> = Mutex::new(());

fn skip() -> bool {
    if !is_root() {
        println!("SKIP: run tests need root (network namespaces, AF_PACKET)");
        return true;
    }
    for tool in ["iperf3", "tcpdump", "tc"] {
        if !has_tool(tool) {
            println!("SKIP: {tool} not installed (scripts/install-deps.sh)");
            return true;
        }
    }
    false
}

/// How many times a ground-truth plan runs at most. A run whose search ended tester-limited
/// (the tester did not keep its schedule even after the runner measured a stalled trial again,
/// so the run has no DUT figure) is run again; its figure is never used.
const GROUND_TRUTH_ATTEMPTS: u32 = 3;

/// A ground-truth run that ended with a DUT figure.
struct GroundTruthRun {
    out: PathBuf,
    stdout: String,
    /// Goal 0's throughput, a fraction of the case's line rate.
    fraction: f64,
    /// Trials the search counted (superseded ones not included).
    search_trials: u32,
    /// Every trial record of the run, superseded ones included (their frames crossed the DUT).
    trials: Vec<TrialRecord>,
    /// Which attempt this was, from 1.
    attempt: u32,
}

/// Runs `plan` (one case, one throughput methodology) until a run ends with a DUT figure, at
/// most [`GROUND_TRUTH_ATTEMPTS`] times: a run whose search ended tester-limited, used a trial
/// recorded as tester-limited, or used a trial below `truth_fps` (the rule's own rate) whose
/// whole loss was at the DUT's port ingress, is run again. `line_fps` (the case's line rate) only labels the
/// trial tables printed for each run.
fn run_ground_truth(plan: &Path, dir: &Path, line_fps: f64, truth_fps: f64) -> GroundTruthRun {
    for attempt in 1..=GROUND_TRUTH_ATTEMPTS {
        let out = dir.join(format!("run{attempt}"));
        let stdout = run_plan_ok(plan, &out);
        let records = read_records(&out.join("trials.jsonl")).unwrap().records;
        let done: MethodologyDone = records
            .iter()
            .find_map(|r| match r {
                Record::Done(d) => Some(d.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no done record\n{stdout}"));
        let result = done.result.expect("a search result");
        let trials = trials(&out);
        println!(
            "attempt {attempt}: {}\n{}",
            result.status,
            trial_table(&trials, line_fps)
        );
        if let Status::TesterLimited { .. } = result.status {
            continue;
        }
        // The runner measures a stalled trial again at most twice per search; a third stall is
        // recorded as tester-limited but, when its offered load stayed within the tolerance, the
        // search goes on with it and ends "complete". Its figure then rests on a trial the tester
        // did not keep the schedule of: not a DUT figure either.
        if let Some(t) = trials.iter().find(|t| t.tester_limited && !t.superseded) {
            println!(
                "attempt {attempt}: trial {} is tester-limited ({} frames slipped) yet was used \
                 by the search; not a DUT figure",
                t.key.index,
                t.engine.as_ref().map_or(0, |e| e.slipped)
            );
            continue;
        }
        // Below the truth only the lab's plumbing can lose frames. A search trial offered
        // clearly below it (2 %) whose every lost frame was dropped at the DUT's port (its
        // full ingress backlog: the lab namespace's CPU held up) measured the VM's hiccup, and
        // the search went below the truth on it: not a figure of the rule under test. Seen once
        // in a suite run: 717 lost = 717 ingress drops at 45,175 frames/s, the policer
        // (50,000/s) dropping none, the search ending at -10 %.
        if let Some(t) = trials.iter().find(|t| {
            let ingress = t
                .engine
                .as_ref()
                .and_then(|e| e.dut)
                .map_or(0, |d| d.ingress_drops);
            let intended_fps = t.outcome.intended.0 * line_fps;
            !t.superseded
                && t.outcome.lost > 0
                && ingress >= t.outcome.lost
                && intended_fps < truth_fps * 0.98
        }) {
            println!(
                "attempt {attempt}: trial {} lost {} frames below the truth ({truth_fps:.0} \
                 frames/s), all at the DUT's port ingress; not a figure of the rule",
                t.key.index, t.outcome.lost
            );
            continue;
        }
        // The figure: a throughput search's first goal, or a forwarding rate's mean.
        let fraction = match (&result.status, &result.finding) {
            (Status::Complete, Finding::ForwardingRate { mean: Some(m), .. }) => Some(*m),
            _ => result.throughput(0),
        }
        .unwrap_or_else(|| panic!("the search found no figure ({})\n{stdout}", result.status))
        .0;
        // A calibration file on this host may say the figure is within 10 % of the tester's own
        // ceiling: then it is not a DUT figure either (never the case at these rates).
        assert!(
            !done.ceiling.is_some_and(|c| c.tester_limited),
            "{:?}\n{stdout}",
            done.ceiling
        );
        return GroundTruthRun {
            out,
            stdout,
            fraction,
            search_trials: result.trials,
            trials,
            attempt,
        };
    }
    panic!(
        "every one of {GROUND_TRUTH_ATTEMPTS} runs ended tester-limited (no DUT figure): the \
         tester kept missing its schedule; see the trial tables above (slipped, offered)"
    );
}

/// One line per trial: when it finished, what was asked and offered (frames/s), sent, slipped
/// and lost, and the DUT's own counters over the trial.
fn trial_table(trials: &[TrialRecord], line_fps: f64) -> String {
    let mut s = String::from(
        "  done(UTC)  idx      superseded  tl  secs  intended/s   offered/s       sent  slipped  refused      lost   loss %   dut_in  in_drops   dut_eg\n",
    );
    for t in trials {
        let e = t.engine.as_ref();
        let d = e.and_then(|e| e.dut).unwrap_or_default();
        s += &format!(
            "  {:02}:{:02}:{:02}   {:<3} {:>15} {:>3} {:>5.2} {:>11.0} {:>11.0} {:>10} {:>8} {:>8} {:>9} {:>8.4} {:>8} {:>9} {:>8}  {}\n",
            t.finished_unix_ms / 3_600_000 % 24,
            t.finished_unix_ms / 60_000 % 60,
            t.finished_unix_ms / 1000 % 60,
            t.key.index,
            if t.superseded { "superseded" } else { "" },
            if t.tester_limited { "TL" } else { "" },
            t.outcome.duration.as_secs_f64(),
            t.outcome.intended.0 * line_fps,
            t.outcome.offered.0 * line_fps,
            e.map_or(0, |e| e.sent),
            e.map_or(0, |e| e.slipped),
            e.map_or(0, |e| e.refused_by_dut),
            t.outcome.lost,
            t.outcome.loss_ratio() * 100.0,
            d.ingress_rx,
            d.ingress_drops,
            d.egress_tx,
            e.map_or("no engine facts", |e| e.backend.as_str()),
        );
    }
    s
}

/// Every trial ran on the XDP engine (the sender the DUT cannot back-pressure), superseded ones
/// included, and its receiver ran in SKB mode, on the tester's CPU (docs/lab.md, "CPU
/// isolation"): the DUT's drop counters then account for the loss with the tester's receive
/// work off the DUT's CPU.
#[track_caller]
fn assert_all_on_xdp(trials: &[TrialRecord], stdout: &str) {
    assert!(!trials.is_empty(), "{stdout}");
    for t in trials {
        let backend = t.engine.as_ref().map(|e| e.backend.as_str());
        assert_eq!(
            backend,
            Some("xdp"),
            "trial {} ran on {backend:?}: {:?}\n{stdout}",
            t.key.index,
            t.engine.as_ref().map(|e| &e.note)
        );
        let note = t.engine.as_ref().map_or("", |e| e.note.as_str());
        assert!(
            note.contains("receives in SKB (generic) XDP mode") && !note.contains("native XDP"),
            "trial {}: {note}",
            t.key.index
        );
    }
}

/// The range a DUT drop counter (tbf's `dropped`, an nft rule's counter) must lie in when it
/// accounts for every test frame lost in the run and nothing else: at most all frames lost, at
/// least those the DUT did not drop elsewhere — at its full ingress backlog (`ingress_drops`,
/// which also counts the XDP sender's one probe frame per trial, so this end is that loose) or
/// by refusing them at its port (`refused_by_dut`) — or that the DUT forwarded and the
/// tester's own receive backlog dropped (`tester_receive_drops`, what makes the runner
/// supersede a trial on a busy machine). Superseded trials count: their frames crossed the DUT
/// like any other.
fn loss_the_dut_must_account_for(trials: &[TrialRecord]) -> (u64, u64) {
    let lost: u64 = trials.iter().map(|t| t.outcome.lost).sum();
    let elsewhere: u64 = trials
        .iter()
        .filter_map(|t| t.engine.as_ref())
        .map(|e| e.refused_by_dut + e.dut.map_or(0, |d| d.ingress_drops) + e.tester_receive_drops())
        .sum();
    (lost.saturating_sub(elsewhere), lost)
}

/// The `stdout` of the run's last `stats-after` hook (`hooks.jsonl`).
fn stats_after(out: &Path) -> String {
    let hooks = std::fs::read_to_string(out.join("hooks.jsonl")).unwrap();
    hooks
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .rfind(|h| h["stage"] == "stats-after")
        .and_then(|h| h["output"]["stdout"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no stats-after hook output in {hooks}"))
}

/// The number after `key` in `text` (`"dropped "` → 28340 in `(dropped 28340, overlimits …`).
fn number_after(text: &str, key: &str) -> u64 {
    text.split(key)
        .nth(1)
        .and_then(|s| {
            s.split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or_else(|| panic!("no `{key}N` in {text}"))
}

/// Ground truth for a bit-rate limit: tbf at 20 Mbit/s on the DUT's egress towards port B; the
/// RFC 2544 throughput search (loss tolerance 0, resolution 0.5 %), from line rate down, must
/// find it within ±2 %.
///
/// Conversion: tbf counts each packet's length as the kernel sees it on egress, i.e. the L2
/// frame with its 14-byte Ethernet header and without the 4-byte FCS. A 1518-byte test frame
/// (with FCS) is 1514 bytes to tbf, so the rate limit in frames/s is 20e6 / (1514 × 8) =
/// 1651.3 fps. The search's result is a fraction of the L1 line rate of the plan's 100 Mbit/s
/// reference link at 1518 B (100e6 / ((1518 + 20) × 8) = 8127.4 fps); result fps = fraction ×
/// 8127.4, compared with 1651.3 fps.
///
/// Bias: tbf's bucket (`burst 32kb`, 32 KiB) and queue (`limit 32kb`) let 64 KiB more through a
/// trial than the rate, 524,288 bit: +0.87 % over a 3 s trial at 20 Mbit/s (43 frames of 4,954).
/// A lossless trial is a lower bound, so the figure lies between +0.37 % and +0.87 %
/// (resolution 0.5 %).
///
/// Why it runs in CI again: the plan runs on the XDP engine (`backend = "auto"`, asserted per
/// trial). Its sender keeps its schedule inside the kernel, and a frame the DUT's port refuses
/// is offered and lost by the DUT, so the DUT's full tbf queue cannot slow it. The AF_PACKET
/// sender used before was back-pressured by that queue (its skbs stay charged to its socket
/// while the DUT holds them, DESIGN.md §8), and on 2 shared vCPUs every attempt could end
/// tester-limited. So the search now starts at line rate (100 %, 5× the limit) instead of a
/// 17–25 % window around the answer: about 11 trials of 3 s, ~40 s.
///
/// The DUT agrees: tbf's own `dropped` counter (stats-after hook) equals the frames lost over all
/// trials, less any the DUT dropped at its ingress instead (one frame of slack per trial for the
/// DUT's own ARP replies to port B, which cross the same qdisc).
///
/// A run that ends tester-limited (no DUT figure) is run again, at most 3 times in all; its
/// figure is never used.
#[test]
fn tbf_ground_truth() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    let t0 = Instant::now();
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(
        d.path(),
        r#"name = "tbf"
[topology]
kind = "lab"
lab = "forward"
name = "tbftruth"
speed = "100M"
[dut]
kind = "lab"
[dut.profiles.shaped]
lab = "forward"
setup = ["tc qdisc replace dev wr-dut-b root tbf rate 20mbit burst 32kb limit 32kb"]
teardown = ["tc qdisc del dev wr-dut-b root"]
stats-after = ["tc -s qdisc show dev wr-dut-b"]
[run]
trial-duration = "3s"
settle = "300ms"
profile-settle = "0s"
[methodology.rfc2544-throughput]
loss-tolerance = 0.0
resolution = 0.005
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [1518]
methodologies = ["rfc2544-throughput"]
"#,
    );
    let line_fps = 100e6 / ((1518.0 + 20.0) * 8.0);
    let tbf_fps = 20e6 / (1514.0 * 8.0);
    let run = run_ground_truth(&plan, d.path(), line_fps, tbf_fps);
    let stdout = &run.stdout;
    assert_all_on_xdp(&run.trials, stdout);
    let found_fps = run.fraction * line_fps;
    let err = (found_fps - tbf_fps) / tbf_fps;
    println!(
        "tbf ground truth: found {found_fps:.1} fps ({:.3} Mbit/s as tbf counts), tbf {tbf_fps:.1} fps (20 Mbit/s): error {:+.2} % in {} trials ({} records), attempt {}, {:.0} s",
        found_fps * 1514.0 * 8.0 / 1e6,
        err * 100.0,
        run.search_trials,
        run.trials.len(),
        run.attempt,
        t0.elapsed().as_secs_f64()
    );
    assert!(err.abs() <= 0.02, "error {:.2} %\n{stdout}", err * 100.0);
    // The qdisc was there, and its drops are the frames the run lost.
    let qdisc = stats_after(&run.out);
    assert!(qdisc.contains("qdisc tbf"), "{qdisc}");
    let dropped = number_after(&qdisc, "dropped ");
    let (lo, hi) = loss_the_dut_must_account_for(&run.trials);
    let hi = hi + run.trials.len() as u64;
    println!(
        "tbf dropped {dropped}; frames lost and not dropped elsewhere by the DUT: {lo}..={hi}"
    );
    assert!(
        (lo..=hi).contains(&dropped),
        "tbf dropped {dropped}, want {lo}..={hi}\n{qdisc}\n{stdout}"
    );
}

/// A plan of the lab DUT with an nftables policer in its forward hook (50,000 UDP frames/s,
/// burst 1,000, counted) under a load of at most 30 % of 1 Gb/s, with `rest` (methodology
/// and matrix) appended: the ground truth of [`policer_ground_truth`] and
/// [`forwarding_rate_ground_truth`].
fn policer_plan(name: &str, lab: &str, rest: &str) -> String {
    format!(
        r#"name = "{name}"
[topology]
kind = "lab"
lab = "forward"
name = "{lab}"
speed = "1G"
[dut]
kind = "lab"
[dut.profiles.policed]
lab = "forward"
setup = [
  "nft add table inet wrpolice",
  "nft 'add chain inet wrpolice fwpolice {{ type filter hook forward priority 0; }}'",
  "nft add rule inet wrpolice fwpolice meta l4proto udp limit rate over 50000/second burst 1000 packets counter drop",
]
teardown = ["nft delete table inet wrpolice"]
stats-after = ["nft list table inet wrpolice"]
[run]
trial-duration = "2s"
settle = "200ms"
profile-settle = "0s"
max-load = 0.3
{rest}"#
    )
}

/// Ground truth for a frame-rate limit: an nftables policer in the DUT's forward hook drops UDP
/// above N = 50,000 frames/s (`limit rate over 50000/second burst 1000 packets counter drop`);
/// the multi-goal search (goal 0 % loss, width 0.5 %), from line rate down, must find N within
/// ±2 %. The plan runs on the XDP engine (asserted per trial), as `tbf_ground_truth`.
///
/// Conversion: the result is a fraction of the line rate of 1 Gb/s at 64 B, 1e9 / ((64 + 20) ×
/// 8) = 1,488,095.2 fps; N is 3.36 % of it. The kernel's limit charges every packet 1e9 / N =
/// 20,000 ns of a token bucket that holds B = 1,000 packets' worth, so over a trial of T s it
/// passes at most N × T + B frames: a final 2 s trial at rate r loses nothing only if
/// r ≤ N × (1 + B / (N × T)) = N × (1 + 1,000 / 100,000): bias +1.0 %. A lossless full-length
/// trial is a lower bound, so the figure lies between +0.5 % and +1.0 % (width 0.5 %).
///
/// Why B = 1,000: it is 20 ms of frames at N, the same as the DUT's own ingress backlog
/// (`netdev_max_backlog` 1,000 frames), so a stall of the DUT's CPU that the DUT itself survives
/// does not become policer drops below N. A smaller burst makes such stalls (seen on this
/// 2-vCPU machine) show as loss below N; a larger one only adds bias.
///
/// The DUT agrees: the rule's counter (stats-after hook) equals the frames lost over all trials,
/// less any the DUT dropped at its ingress instead (the lab carries no other UDP), and no trial
/// got more frames through than N × T + B (+2 % of N × T: the arrival window of the DUT may
/// stretch by a stall at its end).
///
/// A run that ends tester-limited (no DUT figure; most likely in the first trial, at line rate)
/// is run again, at most 3 times in all; its figure is never used.
#[test]
fn policer_ground_truth() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    if !has_tool("nft") {
        println!("SKIP: nft not installed (scripts/install-deps.sh)");
        return;
    }
    const N: f64 = 50_000.0;
    const BURST: u64 = 1_000;
    let t0 = Instant::now();
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(
        d.path(),
        &policer_plan(
            "policer",
            "policergoal",
            r#"[methodology.multi-goal]
goals = [0.0]
width = 0.005
initial-duration = "500ms"
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [64]
methodologies = ["multi-goal"]
"#,
        ),
    );
    let line_fps = 1e9 / ((64.0 + 20.0) * 8.0);
    let run = run_ground_truth(&plan, d.path(), line_fps, N);
    let stdout = &run.stdout;
    assert_all_on_xdp(&run.trials, stdout);
    let found_fps = run.fraction * line_fps;
    let err = (found_fps - N) / N;
    println!(
        "policer ground truth: found {found_fps:.0} fps, policer {N:.0} fps: error {:+.2} % in {} trials ({} records), attempt {}, {:.0} s",
        err * 100.0,
        run.search_trials,
        run.trials.len(),
        run.attempt,
        t0.elapsed().as_secs_f64()
    );
    assert!(err.abs() <= 0.02, "error {:.2} %\n{stdout}", err * 100.0);
    // The rule was there and dropped exactly the frames the run lost (less any the DUT dropped
    // at its ingress instead).
    let table = stats_after(&run.out);
    assert!(
        table.contains("limit rate over 50000/second burst 1000 packets"),
        "{table}"
    );
    let counted = number_after(&table, "counter packets ");
    let (lo, hi) = loss_the_dut_must_account_for(&run.trials);
    println!(
        "policer dropped {counted}; frames lost and not dropped elsewhere by the DUT: {lo}..={hi}"
    );
    assert!(counted > 0, "the policer dropped nothing\n{table}");
    assert!(
        (lo..=hi).contains(&counted),
        "policer counted {counted}, want {lo}..={hi}\n{table}\n{stdout}"
    );
    // What got through the policer: never more than its rate and burst allow.
    for t in &run.trials {
        let allowed = N * t.outcome.duration.as_secs_f64();
        let most = allowed + BURST as f64 + 0.02 * allowed;
        assert!(
            (t.outcome.received as f64) <= most,
            "trial {}: {} frames through in {:?}, at most {most:.0} allowed\n{}",
            t.key.index,
            t.outcome.received,
            t.outcome.duration,
            trial_table(&run.trials, line_fps)
        );
    }
}

/// Ground truth for the forwarding rate at overload (`forwarding-rate`, RFC 2889 §5.1): the
/// same nftables policer as [`policer_ground_truth`] (N = 50,000 frames/s, burst 1,000) under
/// an offered load of 30 % of 1 Gb/s at 64 B (446,429 frames/s, nine times N). A DUT that
/// forwards at most N × T + B frames per trial of T s must show a forwarding rate of N × (1 +
/// B / (N × T)) = 50,500 frames/s for T = 2 s, whatever the tester's speed — the figure is the
/// policer's, not the machine's: the test allows −2 % (a DUT stall longer than the bucket's
/// 20 ms) to +2 % on top of the burst. Every trial ran at the plan's load, and the policer's
/// counter equals the frames lost (less the DUT's ingress drops), as in the throughput test.
#[test]
fn forwarding_rate_ground_truth() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    if !has_tool("nft") {
        println!("SKIP: nft not installed (scripts/install-deps.sh)");
        return;
    }
    const N: f64 = 50_000.0;
    const BURST: f64 = 1_000.0;
    const T: f64 = 2.0;
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(
        d.path(),
        &policer_plan(
            "policer-fr",
            "policerfr",
            r#"[methodology.forwarding-rate]
trials = 2
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [64]
methodologies = ["forwarding-rate"]
"#,
        ),
    );
    let line_fps = 1e9 / ((64.0 + 20.0) * 8.0);
    let run = run_ground_truth(&plan, d.path(), line_fps, N);
    let stdout = &run.stdout;
    assert_all_on_xdp(&run.trials, stdout);
    assert!(
        stdout.contains("forwarding-rate at 30.000 % offered"),
        "the terminal line names the methodology and its load\n{stdout}"
    );
    let used: Vec<_> = run.trials.iter().filter(|t| !t.superseded).collect();
    assert_eq!(used.len(), 2, "two trials\n{stdout}");
    for t in &used {
        assert!((t.request.load.0 - 0.3).abs() < 1e-9, "{:?}", t.request);
    }
    let expected = N * (1.0 + BURST / (N * T));
    let found = run.fraction * line_fps;
    let err = (found - expected) / expected;
    println!(
        "forwarding rate: {found:.0} fps, policer allows {expected:.0} fps: {:+.2} %",
        err * 100.0
    );
    assert!(
        (-0.02..=0.02).contains(&err),
        "forwarding rate {found:.0} fps, want {expected:.0} ±2 %\n{}\n{stdout}",
        trial_table(&run.trials, line_fps)
    );
    let table = stats_after(&run.out);
    let counted = number_after(&table, "counter packets ");
    let (lo, hi) = loss_the_dut_must_account_for(&run.trials);
    assert!(
        (lo..=hi).contains(&counted),
        "policer counted {counted}, want {lo}..={hi}\n{table}\n{stdout}"
    );
}

/// The TCP figures of an iperf3 run are iperf3's own (see the module's list). Each run measures
/// 2 s after the default 1 s omitted (`[methodology.iperf3] duration`), not the default 10 s:
/// nothing here judges a rate's steadiness, and 2 s still holds the wire-count window (1.3 s to
/// 2.9 s of the run, `iperf3::wire_count::window`) the sending port's counters are read over.
#[test]
fn iperf3_figures_match_iperf3() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(
        d.path(),
        r#"name = "tcp"
[topology]
kind = "lab"
lab = "forward"
name = "iperf3match"
[dut]
kind = "lab"
[dut.profiles.forward]
[dut.profiles.mss-clamp-1200]
[run]
trial-duration = "1s"
settle = "100ms"
profile-settle = "0s"
[methodology.iperf3]
duration = "2s"
[[matrix]]
protocol = ["tcp"]
ip = [4, 6]
sessions = [2]
methodologies = ["iperf3"]
"#,
    );
    let out = d.path().join("run");
    let stdout = run_plan_ok(&plan, &out);
    let ts = trials(&out);
    assert_eq!(ts.len(), 4, "{stdout}");
    for t in &ts {
        let tcp = t.tcp.as_ref().expect("tcp figures");
        let raw = t.iperf3.as_ref().expect("raw iperf3 JSON in the record");
        // Raw JSON kept as a file too, identical to the record's.
        let name: String = t
            .key
            .case_id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let file: serde_json::Value = serde_json::from_slice(
            &std::fs::read(out.join("iperf3").join(format!("{name}-r0.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(&file, raw);
        // What iperf3 itself reported as received, and its retransmits and CPU figures.
        let end = &raw["end"];
        let received = end["sum_received"]["bits_per_second"].as_f64().unwrap();
        assert_eq!(tcp.l4_bps.0, received, "{}", t.key.case_id);
        assert_eq!(
            tcp.retransmits,
            end["sum_sent"]["retransmits"].as_u64(),
            "{}",
            t.key.case_id
        );
        assert_eq!(
            tcp.cpu_local,
            end["cpu_utilization_percent"]["host_total"]
                .as_f64()
                .unwrap()
        );
        // Issue 13: the lab's links are 1 Gb/s cables (the plan's default speed), so what the
        // sending port counted on the wire is at most the line rate (2 % for the counters'
        // window), and l1/l2 are those counts, not iperf3's socket-level figure.
        let wire = tcp.wire_count.expect("wire counted at the sending port");
        assert!(wire.frames > 0, "{}: {wire:?}", t.key.case_id);
        assert_eq!(tcp.l1_bps, wire.l1_bps());
        assert!(tcp.l1_bps > tcp.l2_bps, "{}", t.key.case_id);
        assert!(
            tcp.l1_bps.0 <= 1.02e9,
            "{}: {} b/s on a 1 Gb/s link",
            t.key.case_id,
            tcp.l1_bps.0
        );
        // The DUT's counters over the run, with its CPU where the lab gives it one.
        let dut = tcp.dut.expect("DUT counters over an iperf3 run");
        assert!(dut.ingress_rx >= wire.frames, "{}: {dut:?}", t.key.case_id);
        if lab::dut_cpu().is_some() {
            let cpu = dut.cpu_busy_percent().expect("DUT CPU measured");
            assert!((0.0..=100.0).contains(&cpu), "{cpu}");
        }
        // Control connection + 2 data connections seen at the far port, with the MSS the DUT
        // let through: clamped to 1200 by mss-clamp-1200, the interface's own otherwise.
        assert_eq!(tcp.syn_mss.len(), 3, "{}: {:?}", t.key.case_id, tcp.syn_mss);
        let want = if t.key.case_id.starts_with("mss-clamp-1200") {
            1200
        } else if t.key.case_id.contains("tcp6") {
            1440
        } else {
            1460
        };
        assert!(
            tcp.syn_mss.iter().all(|m| *m == want),
            "{}: SYN MSS {:?}, want {want}",
            t.key.case_id,
            tcp.syn_mss
        );
        println!(
            "{}: {:.3} Gb/s L4 (iperf3 said {:.3}), SYN MSS {:?}",
            t.key.case_id,
            tcp.l4_bps.0 / 1e9,
            received / 1e9,
            tcp.syn_mss
        );
    }
}

#[test]
fn kill9_then_resume() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    // Four repetitions of a binary search against a tbf-shaped DUT (several trials each), 300 ms
    // trials: the kill lands in the middle of a search, whose recorded trials must be replayed.
    // Four, not two: a repetition whose first trial is tester-limited stops after it, and with
    // two such the run could end before its third trial, leaving nothing to kill. Resolution
    // 10 %: the limit (20 Mbit/s, 20.3 % of 100 Mb/s at 1518 B) is bracketed from 30 % in five
    // trials per search (30, 20, 25, 22.5, 21.25 %): several per search, as the kill needs; no
    // figure is asserted, so a finer bracket only added trials (seven per search at 2 %).
    let plan = plan_file(
        d.path(),
        r#"name = "k9"
[topology]
kind = "lab"
lab = "forward"
name = "kill9resume"
speed = "100M"
[dut]
kind = "lab"
[dut.profiles.shaped]
lab = "forward"
setup = ["tc qdisc replace dev wr-dut-b root tbf rate 20mbit burst 16kb limit 16kb"]
[run]
repetitions = 4
trial-duration = "300ms"
settle = "50ms"
profile-settle = "0s"
min-load = 0.10
max-load = 0.30
tester-tolerance = 0.05
[methodology.rfc2544-throughput]
resolution = 0.1
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [1518]
methodologies = ["rfc2544-throughput"]
"#,
    );
    let out = d.path().join("run");
    let mut child = Command::new(WIRERATE)
        .args([
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(d.path().join("first.stdout")).unwrap())
        .stderr(std::fs::File::create(d.path().join("first.stderr")).unwrap())
        .spawn()
        .unwrap();
    // What the first run printed and recorded, for a failure message.
    let first_run = || {
        let read = |f: &str| std::fs::read_to_string(d.path().join(f)).unwrap_or_default();
        format!(
            "stdout:\n{}\nstderr:\n{}\ntrials.jsonl:\n{}",
            read("first.stdout"),
            read("first.stderr"),
            std::fs::read_to_string(out.join("trials.jsonl")).unwrap_or_default()
        )
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let n = if out.join("trials.jsonl").exists() {
            trials(&out).len()
        } else {
            0
        };
        if n >= 3 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no 3 trials within 60 s\n{}",
            first_run()
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the run ended early\n{}",
            first_run()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SIGKILL: no handler, no cleanup.
    child.kill().unwrap();
    child.wait().unwrap();
    let before = trials(&out);
    assert!(before.len() >= 3);
    // A changed plan is refused and adds nothing (issue 19: it appended under the old
    // run.json); a comment is not a change.
    let text = std::fs::read_to_string(&plan).unwrap();
    let changed = d.path().join("changed.toml");
    std::fs::write(&changed, text.replace("repetitions = 4", "repetitions = 5")).unwrap();
    let refused = run(&[
        "run",
        changed.to_str().unwrap(),
        "--resume",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains("differs from the plan this run started with"),
        "{err}"
    );
    assert_eq!(trials(&out), before, "a refused resume recorded nothing");
    std::fs::write(&plan, format!("# a comment added after the kill\n{text}")).unwrap();
    let stdout = run_ok(&[
        "run",
        plan.to_str().unwrap(),
        "--resume",
        out.to_str().unwrap(),
    ]);
    assert!(
        stdout.contains(&format!("{} kept from before", before.len())),
        "the summary counts every kept trial: {stdout}"
    );
    let after = trials(&out);
    // Nothing lost: the records from before the kill are still the first ones, unchanged.
    assert_eq!(&after[..before.len()], &before[..]);
    // Nothing repeated: every trial key exactly once. A trial recorded as superseded (the
    // tester stalled; measured again under the same key, never used) is not a repetition.
    let after: Vec<_> = after.into_iter().filter(|t| !t.superseded).collect();
    let mut keys: Vec<_> = after.iter().map(|t| t.key.clone()).collect();
    keys.sort();
    let n = keys.len();
    keys.dedup();
    assert_eq!(keys.len(), n, "a trial was measured twice");
    // And the run is complete: every repetition done, each search's trial indices 0..k
    // contiguous.
    let records = read_records(&out.join("trials.jsonl")).unwrap().records;
    let done = records
        .iter()
        .filter(|r| matches!(r, Record::Done(_)))
        .count();
    assert_eq!(done, 4, "{stdout}");
    for rep in 0..4 {
        let idx: Vec<u32> = after
            .iter()
            .filter(|t| t.key.repetition == rep)
            .map(|t| t.key.index)
            .collect();
        // One trial is enough when it was tester-limited: the search then stops by design.
        let stopped_tester_limited = after
            .iter()
            .any(|t| t.key.repetition == rep && t.tester_limited);
        assert!(
            idx.len() >= 2 || (idx.len() == 1 && stopped_tester_limited),
            "repetition {rep}: {idx:?} (a single trial must be tester-limited)"
        );
        assert_eq!(
            idx,
            (0..idx.len() as u32).collect::<Vec<_>>(),
            "repetition {rep}"
        );
    }
    println!(
        "killed after {} trials; resume added {} (total {n}); stdout of the resumed run:\n{stdout}",
        before.len(),
        after.len().saturating_sub(before.len())
    );
}

/// SIGINT (what Ctrl-C sends) in the middle of a run: exit status 1 with the `--resume` hint,
/// the profile's teardown hook ran, the lab's namespaces are gone, and `--resume` finishes.
/// Three repetitions of a one-trial search: the signal goes as soon as the first trial is
/// recorded, with two searches still to run, so the run is stopped early; every further
/// repetition only lengthened the resume.
#[test]
fn sigint_stops_cleanly() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    const REPETITIONS: usize = 3;
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(
        d.path(),
        &format!(
            r#"name = "int"
[topology]
kind = "lab"
lab = "forward"
name = "sigintstop"
[dut]
kind = "lab"
[dut.profiles.forward]
teardown = ["echo torn-down"]
[run]
repetitions = {REPETITIONS}
trial-duration = "500ms"
settle = "50ms"
profile-settle = "0s"
max-load = 0.01
tester-tolerance = 0.05
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [512]
methodologies = ["rfc2544-throughput"]
"#
        ),
    );
    let out = d.path().join("run");
    let child = Command::new(WIRERATE)
        .args([
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !out.join("trials.jsonl").exists() || trials(&out).is_empty() {
        assert!(Instant::now() < deadline, "no trial within 60 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let st = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("interrupted") && stderr.contains("--resume"),
        "{stderr}"
    );
    let hooks = std::fs::read_to_string(out.join("hooks.jsonl")).unwrap();
    assert!(
        hooks.contains("torn-down"),
        "teardown hook did not run: {hooks}"
    );
    let ns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let ns = String::from_utf8_lossy(&ns.stdout);
    assert!(!ns.contains("wr-sigintstop-"), "lab left behind: {ns}");
    let before = trials(&out);
    assert!(
        searches_done(&out) < REPETITIONS,
        "the run was not stopped early"
    );
    let o = run(&[
        "run",
        plan.to_str().unwrap(),
        "--resume",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let after = trials(&out);
    assert_eq!(&after[..before.len()], &before[..]);
    // One search per repetition. Each is one trial at 1 % load, or more on a loaded machine:
    // a trial the tester stalled in is measured again (counts of trials are not asserted).
    assert_eq!(searches_done(&out), REPETITIONS);
    assert!(after.len() >= REPETITIONS, "{}", after.len());
}

/// The searches a run finished (its `done` records).
fn searches_done(dir: &Path) -> usize {
    read_records(&dir.join("trials.jsonl"))
        .unwrap()
        .records
        .iter()
        .filter(|r| matches!(r, Record::Done(_)))
        .count()
}

/// Issue 19 row 2: `wirerate run … | head -2`. Standard output is closed before the run
/// prints its first progress line; the run must still measure every trial, record it, run
/// the teardown hook, remove its lab and exit 0 (it panicked at the first progress line,
/// leaving the lab up and no trial recorded). The reading end is closed at once rather than
/// after two lines, the harder case: every line is written to a closed pipe.
#[test]
fn run_with_a_closed_stdout_measures_records_and_tears_down() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(
        d.path(),
        r#"name = "pipe"
[topology]
kind = "lab"
lab = "forward"
name = "closedstdout"
[dut]
kind = "lab"
[dut.profiles.forward]
teardown = ["echo torn-down"]
[run]
repetitions = 2
trial-duration = "200ms"
settle = "50ms"
profile-settle = "0s"
max-load = 0.01
tester-tolerance = 0.05
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [512]
methodologies = ["rfc2544-throughput"]
"#,
    );
    let out = d.path().join("run");
    let mut child = Command::new(WIRERATE)
        .args([
            "run",
            plan.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let o = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(o.status.success(), "{:?}: {stderr}", o.status);
    // Both repetitions' searches finished and recorded (one trial each at 1 % load, more if
    // the tester stalled in one and it was measured again: the count is not asserted).
    assert_eq!(searches_done(&out), 2, "{stderr}");
    assert!(trials(&out).len() >= 2, "{stderr}");
    let hooks = std::fs::read_to_string(out.join("hooks.jsonl")).unwrap();
    assert!(
        hooks.contains("torn-down"),
        "teardown hook did not run: {hooks}"
    );
    assert!(out.join("report.html").exists(), "no report");
    let ns = Command::new("ip").args(["netns", "list"]).output().unwrap();
    let ns = String::from_utf8_lossy(&ns.stdout);
    assert!(!ns.contains("wr-closedstdout-"), "lab left behind: {ns}");
}

/// Issue 14 item 1 (plain lab cases): a bidirectional trial's record keeps each direction on
/// its own, and the DUT's counters say the split is right. An nftables policer drops UDP that
/// comes in from port B's side above 50,000 frames/s; port A's side is not policed. At 100 Mb/s
/// (148,810 fps of 64 B per direction) the search starts at line rate, so the first trials lose
/// B→A frames to the policer. Over all trials: the policer's counter is frames lost B→A (less
/// any the DUT dropped at its ports instead), nothing A→B is lost beyond the DUT's own port
/// drops, each direction's counts add up to the trial's, and the report shows both directions.
/// The search's resolution (20 %) is coarse: no assertion reads its figure, and each finer
/// step was one more trial checked the same way (13 trials at 5 %).
#[test]
fn bidirectional_records_keep_each_direction() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    if !has_tool("nft") {
        println!("SKIP: nft not installed (scripts/install-deps.sh)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(
        d.path(),
        r#"name = "bidir"
[topology]
kind = "lab"
lab = "forward"
name = "bidirrecords"
speed = "100M"
[dut]
kind = "lab"
[dut.profiles.policed-b]
lab = "forward"
setup = [
  "nft add table inet wrpolb",
  "nft 'add chain inet wrpolb fw { type filter hook forward priority 0; }'",
  "nft add rule inet wrpolb fw iifname wr-dut-b meta l4proto udp limit rate over 50000/second burst 1000 packets counter drop",
]
teardown = ["nft delete table inet wrpolb"]
stats-after = ["nft list table inet wrpolb"]
[run]
trial-duration = "1s"
settle = "200ms"
profile-settle = "0s"
[methodology.rfc2544-throughput]
resolution = 0.2
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [64]
bidirectional = true
methodologies = ["rfc2544-throughput"]
"#,
    );
    let out = d.path().join("run");
    let stdout = run_plan_ok(&plan, &out);
    let ts = trials(&out);
    assert!(!ts.is_empty(), "{stdout}");
    let (mut lost_ab, mut lost_ba, mut drops) = (0u64, 0u64, 0u64);
    for t in &ts {
        let e = t.engine.as_ref().expect("engine facts");
        let dirs: Vec<(&str, &str)> = e
            .per_direction
            .iter()
            .map(|d| (d.tx_port.as_str(), d.rx_port.as_str()))
            .collect();
        assert_eq!(dirs, [("a", "b"), ("b", "a")], "trial {}", t.key.index);
        let sum = |f: fn(&bench::results::DirectionFacts) -> u64| -> u64 {
            e.per_direction.iter().map(f).sum()
        };
        assert_eq!(sum(|d| d.sent), e.sent, "trial {}", t.key.index);
        assert_eq!(sum(|d| d.received), t.outcome.received);
        assert_eq!(sum(|d| d.lost), t.outcome.lost);
        lost_ab += e.per_direction[0].lost;
        lost_ba += e.per_direction[1].lost;
        // Lost elsewhere than the policer: at the DUT's ports, or forwarded and dropped by
        // the tester's own receive backlog (a busy machine).
        drops += e.refused_by_dut + e.dut.map_or(0, |d| d.ingress_drops) + e.tester_receive_drops();
    }
    let table = stats_after(&out);
    let policed = number_after(&table, "counter packets ");
    println!(
        "bidirectional: {} trials, lost a→b {lost_ab}, b→a {lost_ba}; policer dropped {policed}; DUT port and tester backlog drops {drops}",
        ts.len()
    );
    assert!(
        policed > 0,
        "the first trial at line rate must meet the policer\n{table}"
    );
    assert!(
        lost_ba >= policed && lost_ba - policed <= drops,
        "b→a lost {lost_ba}, policer {policed}, DUT port and tester backlog drops {drops}"
    );
    assert!(
        lost_ab <= drops,
        "a→b is not policed: lost {lost_ab}, DUT port and tester backlog drops {drops}"
    );
    // The report shows each direction of the case, when the case has a DUT figure (a search
    // that ended tester-limited has none to split; exporters::bidirectional_rows_… checks the
    // report's side on its own).
    let csv = std::fs::read_to_string(out.join("results.csv")).unwrap();
    if csv.contains(",tester-limited,") {
        println!("report side not checked: the search ended tester-limited on this machine\n{csv}");
        return;
    }
    let head: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    assert!(head.contains(&"per_direction"), "{csv}");
    let terminal = stdout
        .lines()
        .filter(|l| l.starts_with("  a→b ") || l.starts_with("  b→a "))
        .count();
    assert_eq!(terminal, 2, "{stdout}");
}

/// A case without the `fastpath` dimension after one that switched the fast path on gets its
/// profile applied again (runner, `apply_lab_switches`): it runs as its profile sets the DUT —
/// fast path off for `forward` — not with the previous case's switch. And the DUT's receive
/// polls are on its CPU (threaded NAPI) in both cases (lab::napi). Seen from inside the DUT by
/// a stats-before hook, which runs after the case's switches are applied.
#[test]
fn a_case_without_the_fastpath_dimension_gets_its_profile_again() {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    match lab::features() {
        Ok(f) if f.xdp_fastpath => {}
        other => {
            println!("SKIP: no XDP fast path on this kernel ({other:?})");
            return;
        }
    }
    let d = tempfile::tempdir().unwrap();
    let plan = plan_file(
        d.path(),
        r#"name = "fastpath-then-plain"
[topology]
kind = "lab"
lab = "forward"
name = "fastpathagain"
speed = "1G"
[dut]
kind = "lab"
[dut.profiles.forward]
stats-before = ["ip link show wr-dut-a; echo threaded=$(cat /sys/class/net/wr-dut-a/threaded)"]
[run]
trial-duration = "0.2s"
settle = "100ms"
profile-settle = "0s"
max-load = 0.02
[methodology.forwarding-rate]
trials = 1
[[matrix]]
name = "on"
protocol = ["udp"]
ip = [4]
frame-size = [64]
fastpath = ["on"]
methodologies = ["forwarding-rate"]
[[matrix]]
name = "plain"
protocol = ["udp"]
ip = [4]
frame-size = [64]
methodologies = ["forwarding-rate"]
"#,
    );
    let out = d.path().join("run");
    let stdout = run_plan_ok(&plan, &out);
    let hooks = std::fs::read_to_string(out.join("hooks.jsonl")).unwrap();
    let before: Vec<(String, String)> = hooks
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|h| h["stage"] == "stats-before")
        .map(|h| {
            (
                h["case_id"].as_str().unwrap_or_default().to_string(),
                h["output"]["stdout"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
            )
        })
        .collect();
    let ids: Vec<&str> = before.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(
        ids,
        ["forward/udp4/64B/fastpath=on", "forward/udp4/64B"],
        "cases in plan order\n{hooks}\n{stdout}"
    );
    let (on, plain) = (&before[0].1, &before[1].1);
    assert!(on.contains("prog/xdp"), "the fast path is on:\n{on}");
    assert!(
        !plain.contains("prog/xdp"),
        "the plain case inherited the fast path:\n{plain}"
    );
    for (id, text) in &before {
        assert!(
            text.contains("threaded=1"),
            "{id}: receive polls threaded\n{text}"
        );
    }
}
