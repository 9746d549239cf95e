//! `wirerate run` of the connection methodologies on the lab DUT (issue #15), checked against
//! ground truths that do not depend on this machine's speed. Root is needed; without it each
//! test prints `SKIP: …`.
//!
//! - `capacity_search_finds_the_configured_table_size`: the napt profile's table is capped at
//!   1,500 connections (`table-size`); `nat-table-capacity` must find exactly 1,500 (1,501
//!   fails, the newest dropped), and in every trial the DUT's own table held what the tester's
//!   responder learned, and its cap refused the rest.
//! - `connection_rate_is_confirmed_by_the_dut_table`: `nat-connection-rate` on
//!   filter-stateful-10000 (every new connection walks 10,000 rules, so the DUT's insertion
//!   rate, not the tester's, sets the limit on this machine); whatever rate it finds, the DUT's
//!   table after every preliminary phase holds exactly the connections the responder learned,
//!   and at the rate found, all N.
//!
//! Rates and N are far below what this machine does. A run that ended tester-limited (the
//! tester could not keep its schedule even after the runner measured a stalled trial again) is
//! run again, at most 3 times; its figure is never used.

use std::path::Path;
use std::sync::Mutex;

use bench::results::{read_records, ConnDone, ConnTrialRecord, Record};
use bench::search::{ConnFinding, ConnStatus, PastCapacity};

mod common_run;
use common_run::{has_tool, is_root, plan_file, run_plan_ok};

static SERIAL: Mutex<()> = Mutex::new(());

fn skip() -> bool {
    if !is_root() {
        println!("SKIP: run tests need root (network namespaces, AF_PACKET)");
        return true;
    }
    if !has_tool("conntrack") {
        println!("SKIP: conntrack (conntrack-tools) not installed (scripts/install-deps.sh)");
        return true;
    }
    false
}

fn records(dir: &Path) -> (Vec<ConnTrialRecord>, Vec<ConnDone>) {
    let mut t = Vec::new();
    let mut d = Vec::new();
    for r in read_records(&dir.join("trials.jsonl")).unwrap().records {
        match r {
            Record::ConnTrial(x) => t.push(x),
            Record::ConnDone(x) => d.push(x),
            _ => {}
        }
    }
    (t, d)
}

/// Runs `plan` until its one connection search completes (at most 3 times); returns the run's
/// trials and result.
fn run_until_complete(text: &str) -> (Vec<ConnTrialRecord>, ConnDone, String) {
    for attempt in 1..=3 {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan_file(dir.path(), text);
        let out = dir.path().join("run");
        let stdout = run_plan_ok(&plan, &out);
        println!("attempt {attempt}:\n{stdout}");
        let (trials, done) = records(&out);
        assert_eq!(done.len(), 1, "one search: {stdout}");
        let done = done.into_iter().next().unwrap();
        if done.result.status == ConnStatus::Complete {
            let csv = std::fs::read_to_string(out.join("connections.csv")).unwrap();
            return (trials, done, csv);
        }
    }
    panic!("the search ended tester-limited in 3 runs: no DUT figure on this machine now");
}

fn plan(lab: &str, profile: &str, table: u64, methodology: &str, settings: &str) -> String {
    format!(
        r#"name = "nat-ground-truth"
[topology]
kind = "lab"
lab = "forward"
name = "{lab}"
speed = "1G"
[dut]
kind = "lab"
[dut.profiles.{profile}]
table-size = {table}
udp-timeout = "120s"
[run]
settle = "100ms"
profile-settle = "300ms"
{settings}
[[matrix]]
profile = ["{profile}"]
protocol = ["udp"]
ip = [4]
frame-size = [64]
methodologies = ["{methodology}"]
"#
    )
}

#[test]
fn capacity_search_finds_the_configured_table_size() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    let limit = 1_500u64;
    let text = plan(
        "naptrun1",
        "napt",
        limit,
        "nat-table-capacity",
        "[methodology.nat-table-capacity]\nstart-connections = 200\nmax-connections = 4000\nresolution-connections = 1\npreliminary-rate = 2000\nvalidation-rate = 4000\nphase-gap = \"200ms\"\n",
    );
    let (trials, done, csv) = run_until_complete(&text);
    let ConnFinding::TableCapacity {
        lower, upper, past, ..
    } = done.result.finding
    else {
        panic!("{:?}", done.result)
    };
    assert_eq!(lower, Some(limit), "the configured table size, exactly");
    assert_eq!(upper, Some(limit + 1));
    assert_eq!(past, Some(PastCapacity::NewDropped));
    for t in trials.iter().filter(|t| !t.superseded) {
        let dut = t.dut.expect("DUT counters in every lab trial").preliminary;
        let n = t.request.connections;
        // The DUT's own count agrees with the tester's, trial by trial.
        assert_eq!(dut.entries, t.phases.learned, "{t:?}");
        assert_eq!(dut.entries, n.min(limit), "{t:?}");
        assert_eq!(dut.refused, n.saturating_sub(limit), "{t:?}");
        assert_eq!(
            t.phases.translated, t.phases.learned,
            "NAPT translated every one"
        );
        assert_eq!(t.phases.validated, t.phases.learned, "{t:?}");
    }
    assert!(
        csv.lines()
            .any(|l| l.starts_with("napt/udp4/64B,nat-table-capacity,0,1500,connections,1501,")),
        "{csv}"
    );
}

#[test]
fn connection_rate_is_confirmed_by_the_dut_table() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    // More connections than the DUT's input queue holds (its backlog takes 1,000 frames), or
    // the queue absorbs the whole preliminary phase at any rate.
    let n = 3_000u64;
    let text = plan(
        "naptrun2",
        "filter-stateful-10000",
        100_000,
        "nat-connection-rate",
        &format!("[methodology.nat-connection-rate]\nconnections = {n}\nmin-rate = 250\nmax-rate = 32000\nresolution = 0.1\nvalidation-rate = 4000\nphase-gap = \"200ms\"\n"),
    );
    let (trials, done, _) = run_until_complete(&text);
    let ConnFinding::ConnectionRate { lower, .. } = done.result.finding else {
        panic!("{:?}", done.result)
    };
    let lower = lower.expect("some rate passed (250/s at least)");
    println!("connection rate found: {:.0}/s", lower.0);
    for t in trials.iter().filter(|t| !t.superseded) {
        // The table read after the phase gap may still miss connections the DUT had queued
        // (a loaded DUT drains its 1,000-frame backlog slower than the gap), so the tester's
        // learned count is checked against the table at the trial's end: every connection
        // that crossed the DUT is in its table, and no more (none is opened during validation).
        let counters = t.dut.expect("DUT counters in every lab trial");
        let dut = counters.preliminary;
        assert!(dut.entries <= t.phases.learned, "{t:?}");
        assert_eq!(counters.trial.entries, t.phases.learned, "{t:?}");
        assert_eq!(dut.refused, 0, "far below the table size");
        assert_eq!(
            t.phases.translated, 0,
            "a stateful filter translates nothing"
        );
    }
    let at = trials
        .iter()
        .rev()
        .find(|t| !t.superseded && t.request.rate.0 == lower.0)
        .expect("the trial at the rate found");
    assert!(at.outcome.passed());
    assert_eq!(at.dut.unwrap().trial.entries, n);
}

/// `nat-teardown-rate` and `nat-throughput` through `wirerate run` on napt with a table of 800:
/// every tear-down found the DUT's table holding exactly N and left it empty; every throughput
/// trial's load ran on a table holding exactly its N (1 and `"table"` = 800) afterwards, with
/// not one frame misdirected; the report has a row per N. The figures are not asserted.
#[test]
fn teardown_and_throughput_run_on_a_table_holding_n() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if skip() {
        return;
    }
    let table = 800u64;
    let mut text = plan(
        "n15r1",
        "napt",
        table,
        "nat-teardown-rate",
        "[methodology.nat-teardown-rate]\nconnections = 800\nrepetitions = 3\npreliminary-rate = 4000\nphase-gap = \"200ms\"\n[methodology.nat-throughput]\nconnections = [1, \"table\"]\nmin-rate = 1000\nmax-rate = 8000\nresolution = 0.2\nduration = \"500ms\"\npreliminary-rate = 4000\nphase-gap = \"200ms\"\n",
    );
    text = text.replace(
        "methodologies = [\"nat-teardown-rate\"]",
        "methodologies = [\"nat-teardown-rate\", \"nat-throughput\"]",
    );
    for attempt in 1..=3 {
        let dir = tempfile::tempdir().unwrap();
        let plan = plan_file(dir.path(), &text);
        let out = dir.path().join("run");
        let stdout = run_plan_ok(&plan, &out);
        println!("attempt {attempt}:\n{stdout}");
        let (trials, done) = records(&out);
        assert_eq!(done.len(), 2, "two searches: {stdout}");
        if done.iter().any(|d| d.result.status != ConnStatus::Complete) {
            continue; // tester-limited: no figure to check on this machine now
        }
        let td: Vec<_> = trials
            .iter()
            .filter(|t| !t.superseded && t.outcome.teardown.is_some())
            .collect();
        assert_eq!(td.len(), 3);
        for t in &td {
            let d = t.outcome.teardown.unwrap();
            assert!(t.outcome.passed(), "{t:?}");
            assert_eq!((d.entries_before, d.entries_after), (table, 0), "{t:?}");
        }
        let ConnFinding::TeardownRate {
            valid, at_least, ..
        } = done[0].result.finding.clone()
        else {
            panic!("{:?}", done[0].result)
        };
        assert_eq!(valid, 3);
        assert!(at_least.is_some());
        let loads: Vec<_> = trials
            .iter()
            .filter(|t| !t.superseded && t.outcome.load.is_some())
            .collect();
        assert!(loads.len() >= 2);
        for t in &loads {
            let l = t.outcome.load.unwrap();
            assert_eq!(l.dut_entries, Some(t.request.connections), "{t:?}");
            assert_eq!(l.misdirected, 0, "{t:?}");
            assert!(l.forward_received <= l.forward_sent, "{t:?}");
        }
        let ConnFinding::Throughput { points } = done[1].result.finding.clone() else {
            panic!("{:?}", done[1].result)
        };
        if points.iter().any(|p| p.tester_limited.is_some()) {
            continue; // an N the tester ended: no DUT figure to check there now
        }
        assert_eq!(
            points.iter().map(|p| p.connections).collect::<Vec<_>>(),
            [1, table]
        );
        assert!(points.iter().all(|p| p.established && p.lower.is_some()));
        let csv = std::fs::read_to_string(out.join("connections.csv")).unwrap();
        assert!(csv.contains(",nat-teardown-rate,0,"), "{csv}");
        assert!(csv.contains("frames/s each way"), "{csv}");
        assert!(csv.contains("N = 800"), "{csv}");
        return;
    }
    panic!("the searches ended tester-limited in 3 runs: no DUT figure on this machine now");
}
