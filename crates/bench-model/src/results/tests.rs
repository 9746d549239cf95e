//! Results-store tests in temporary directories, including a simulated `kill -9` mid-write.

use std::io::Write as _;
use std::time::Duration;

use super::*;
use crate::search::sim::SimDut;
use crate::search::{replay, BinaryConfig, BinarySearch, LineFraction, Search};

fn info() -> RunInfo {
    RunInfo {
        plan_name: "t".into(),
        plan_text: "name = \"t\"\n".into(),
        version: "0.1.0".into(),
        started_unix: 1_800_000_000,
        host: [("kernel".to_string(), "6.18".to_string())].into(),
        facts: None,
    }
}

fn search() -> BinarySearch {
    BinarySearch::new(BinaryConfig {
        duration: Duration::from_secs(1),
        ..BinaryConfig::rfc2544()
    })
    .unwrap()
}

fn trial(index: u32, request: TrialRequest, outcome: Outcome) -> Record {
    Record::Trial(TrialRecord {
        key: TrialKey {
            case_id: "napt/udp4/64B".into(),
            repetition: 0,
            methodology: Methodology::Rfc2544Throughput,
            index,
        },
        request,
        outcome,
        tester_limited: false,
        iperf3: None,
        tcp: None,
        engine: None,
        udp: None,
        superseded: false,
        lan_watch: Vec::new(),
        finished_unix_ms: 1_800_000_000_000 + u64::from(index),
    })
}

/// Runs the case's search, recording each trial; stops after `kill_after` trials (if given),
/// leaving a torn half line as a killed process would. Returns the requests it ran.
fn run(run_dir: &mut RunDir, kill_after: Option<usize>) -> Vec<TrialRequest> {
    let mut dut = SimDut::sharp(LineFraction(0.37));
    let mut s = search();
    let mut ran = Vec::new();
    let mut last = None;
    while let Some(req) = s.next(last.as_ref()) {
        if kill_after == Some(ran.len()) {
            let mut torn = serde_json::to_vec(&trial(99, req, dut.trial(&req))).unwrap();
            torn.truncate(torn.len() / 2);
            run_dir.trials.write_all(&torn).unwrap();
            return ran;
        }
        let o = dut.trial(&req);
        run_dir.append(&trial(ran.len() as u32, req, o)).unwrap();
        ran.push(req);
        last = Some(o);
    }
    run_dir
        .append(&Record::Done(MethodologyDone {
            case_id: "napt/udp4/64B".into(),
            repetition: 0,
            methodology: Methodology::Rfc2544Throughput,
            result: Some(s.result()),
            ceiling: None,
            line_pps: None,
        }))
        .unwrap();
    ran
}

#[test]
fn append_and_read_back() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rd = RunDir::create(tmp.path(), &info()).unwrap();
    let mut dut = SimDut::sharp(LineFraction(0.5));
    let req = TrialRequest::rate(LineFraction(0.6), Duration::from_secs(1));
    let rec = trial(0, req, dut.trial(&req));
    rd.append(&rec).unwrap();
    assert_eq!(rd.records().unwrap(), vec![rec]);
    let text = std::fs::read_to_string(tmp.path().join(TRIALS_JSONL)).unwrap();
    assert!(
        text.starts_with("{\"record\":\"trial\",\"case_id\":\"napt/udp4/64B\""),
        "{text}"
    );
    assert!(text.ends_with('\n'));
    let back: RunInfo =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join(RUN_JSON)).unwrap()).unwrap();
    assert_eq!(back, info());
}

#[test]
fn an_existing_run_is_not_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    RunDir::create(tmp.path(), &info()).unwrap();
    let err = RunDir::create(tmp.path(), &info()).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
}

#[test]
fn torn_last_line_is_ignored_and_cut_on_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rd = RunDir::create(tmp.path(), &info()).unwrap();
    let ran = run(&mut rd, Some(3));
    assert_eq!(ran.len(), 3);
    drop(rd);
    let path = tmp.path().join(TRIALS_JSONL);
    let loaded = read_records(&path).unwrap();
    assert_eq!(loaded.records.len(), 3);
    assert!(loaded.torn_tail);
    let (_rd, _, resume) = RunDir::resume(tmp.path()).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), loaded.good_len);
    assert_eq!(resume.finished_trials.len(), 3);
    assert!(!read_records(&path).unwrap().torn_tail);
}

#[test]
fn a_corrupt_middle_line_is_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rd = RunDir::create(tmp.path(), &info()).unwrap();
    run(&mut rd, None);
    let path = tmp.path().join(TRIALS_JSONL);
    let text = std::fs::read_to_string(&path).unwrap();
    let broken = text
        .replacen("{\"record\"", "{\"recor", 2)
        .replacen("{\"recor", "{\"record\"", 1);
    std::fs::write(&path, broken).unwrap();
    let err = read_records(&path).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().ends_with(":2: not a trial record"), "{err}");
}

/// Issue 19: a record written twice, or one claiming a load that is no load, is refused with
/// its line instead of being averaged into the report.
#[test]
fn repeated_or_impossible_records_are_refused_with_their_line() {
    let tmp = tempfile::tempdir().unwrap();
    let mut rd = RunDir::create(tmp.path(), &info()).unwrap();
    run(&mut rd, None);
    let path = tmp.path().join(TRIALS_JSONL);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    // The second trial again, at the end.
    std::fs::write(&path, format!("{text}{}\n", lines[1])).unwrap();
    let err = read_records(&path).unwrap_err().to_string();
    assert!(
        err.contains(&format!(":{}: trial", n + 1))
            && err.contains("recorded twice (also on line 2)"),
        "{err}"
    );
    // The finished search again.
    std::fs::write(&path, format!("{text}{}\n", lines[n - 1])).unwrap();
    let err = read_records(&path).unwrap_err().to_string();
    assert!(err.contains("recorded as finished twice"), "{err}");
    // A negative load.
    let mut v: serde_json::Value = serde_json::from_str(lines[0]).unwrap();
    v["outcome"]["offered"] = serde_json::json!(-0.5);
    let bad = text.replacen(lines[0], &v.to_string(), 1);
    std::fs::write(&path, bad).unwrap();
    let err = read_records(&path).unwrap_err().to_string();
    assert!(
        err.contains(":1: trial") && err.contains("offered load -0.5"),
        "{err}"
    );
    std::fs::write(&path, &text).unwrap();
    assert_eq!(read_records(&path).unwrap().records.len(), n);
}

#[test]
fn kill_then_resume_loses_nothing_and_repeats_nothing() {
    // Reference: the uninterrupted run.
    let tmp = tempfile::tempdir().unwrap();
    let mut full_dir = RunDir::create(&tmp.path().join("full"), &info()).unwrap();
    let full = run(&mut full_dir, None);
    assert!(full.len() > 5);

    for kill_after in [0, 1, 4, full.len() - 1] {
        let dir = tmp.path().join(format!("killed-{kill_after}"));
        let mut rd = RunDir::create(&dir, &info()).unwrap();
        let before = run(&mut rd, Some(kill_after));
        drop(rd); // kill -9: nothing flushed beyond what append already synced

        let (mut rd, info_back, resume) = RunDir::resume(&dir).unwrap();
        assert_eq!(info_back, info());
        assert!(!resume.is_done("napt/udp4/64B", 0, Methodology::Rfc2544Throughput));
        let recorded = resume.recorded("napt/udp4/64B", 0, Methodology::Rfc2544Throughput);
        assert_eq!(recorded.len(), before.len());

        // Replay the recorded outcomes into a fresh search, then continue for real.
        let mut s = search();
        let mut dut = SimDut::sharp(LineFraction(0.37));
        let mut next = replay(&mut s, &recorded).unwrap();
        let mut after = Vec::new();
        while let Some(req) = next {
            let o = dut.trial(&req);
            rd.append(&trial((recorded.len() + after.len()) as u32, req, o))
                .unwrap();
            after.push(req);
            next = s.next(Some(&o));
        }
        rd.append(&Record::Done(MethodologyDone {
            case_id: "napt/udp4/64B".into(),
            repetition: 0,
            methodology: Methodology::Rfc2544Throughput,
            result: Some(s.result()),
            ceiling: None,
            line_pps: None,
        }))
        .unwrap();

        // Nothing lost, nothing repeated: before + after is exactly the uninterrupted sequence.
        let mut all = before.clone();
        all.extend(after);
        assert_eq!(all, full, "kill after {kill_after}");
        let records = rd.records().unwrap();
        let keys: BTreeSet<TrialKey> = records
            .iter()
            .filter_map(|r| match r {
                Record::Trial(t) => Some(t.key.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(keys.len(), full.len(), "one record per trial");
        assert_eq!(records.len(), full.len() + 1);
        // The results equal the uninterrupted run's.
        assert_eq!(records.last(), full_dir.records().unwrap().last());

        // A second resume finds the methodology done.
        let (_, _, again) = RunDir::resume(&dir).unwrap();
        assert!(again.is_done("napt/udp4/64B", 0, Methodology::Rfc2544Throughput));
    }
}

#[test]
fn replay_refuses_records_from_another_plan() {
    let mut dut = SimDut::sharp(LineFraction(0.37));
    let req = TrialRequest::rate(LineFraction(0.8), Duration::from_secs(1));
    let o = dut.trial(&req);
    let err = replay(&mut search(), &[(req, o, false)]).unwrap_err();
    assert_eq!(err.index, 0);
    assert_eq!(err.expected.unwrap().load, LineFraction(1.0));
}

#[test]
fn resume_skips_trials_superseded_after_a_tester_stall() {
    let req = TrialRequest::rate(LineFraction(1.0), Duration::from_secs(1));
    let outcome = |lost| Outcome {
        intended: LineFraction(1.0),
        offered: LineFraction(1.0),
        received: 1000 - lost,
        lost,
        fragments: 0,
        directions: 1,
        duration: Duration::from_secs(1),
        latency: None,
    };
    let mut stalled = trial(0, req, outcome(900));
    if let Record::Trial(t) = &mut stalled {
        t.superseded = true;
        t.tester_limited = true;
    }
    let records = vec![stalled, trial(0, req, outcome(3))];
    let r = Resume::from_records(&records);
    let got = r.recorded("napt/udp4/64B", 0, Methodology::Rfc2544Throughput);
    assert_eq!(got.len(), 1, "only the trial measured again counts");
    assert_eq!(got[0].1.lost, 3);
}

/// A connection trial record of `n` connections of which `learned` arrived and validated.
fn conn_trial(index: u32, n: u64, learned: u64, superseded: bool) -> Record {
    use crate::search::{ConnOutcome, ConnRate, ConnTrial};
    let request = ConnTrial {
        connections: n,
        rate: ConnRate(5000.0),
        validation_rate: ConnRate(5000.0),
        gap: Duration::from_millis(300),
        real: None,
    };
    Record::ConnTrial(ConnTrialRecord {
        key: TrialKey {
            case_id: "napt/udp4/64B".into(),
            repetition: 0,
            methodology: Methodology::NatTableCapacity,
            index,
        },
        request,
        outcome: ConnOutcome {
            connections: n,
            intended_rate: ConnRate(5000.0),
            offered_rate: ConnRate(if superseded { 2000.0 } else { 5000.0 }),
            preliminary_sent: n,
            preliminary_received: learned,
            validation_sent: learned,
            validation_received: learned,
            failed: None,
            teardown: None,
            load: None,
        },
        tester_limited: superseded,
        phases: ConnPhases {
            preliminary_sent: n,
            preliminary_pps: wire::units::Pps(5000.0),
            preliminary_max_late_ns: 0,
            preliminary_refused_by_dut: 0,
            learned,
            translated: learned,
            learned_duplicates: 0,
            validation_sent: learned,
            validation_pps: wire::units::Pps(5000.0),
            validation_max_late_ns: 0,
            validated: learned,
            misdirected: 0,
            validated_duplicates: 0,
            tester_rx_drops: 0,
            preliminary_engines: None,
        },
        dut: None,
        superseded,
        finished_unix_ms: 1,
    })
}

#[test]
fn connection_trials_round_trip_and_resume_skips_superseded_ones() {
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("run");
    let mut rd = RunDir::create(&dir, &info()).unwrap();
    let records = vec![
        conn_trial(0, 1000, 1000, false),
        conn_trial(1, 2000, 2000, true),
        conn_trial(1, 2000, 1500, false),
    ];
    for r in &records {
        rd.append(r).unwrap();
    }
    let (_, _, resume) = RunDir::resume(&dir).unwrap();
    let got = resume.recorded_conn("napt/udp4/64B", 0, Methodology::NatTableCapacity);
    assert_eq!(got.len(), 2, "the superseded trial is not replayed");
    assert_eq!(got[1].1.preliminary_received, 1500);
    assert!(!resume.is_done("napt/udp4/64B", 0, Methodology::NatTableCapacity));
    // The same key twice, neither superseded, is a corrupt file.
    let mut rd = RunDir::resume(&dir).unwrap().0;
    rd.append(&conn_trial(1, 2000, 1500, false)).unwrap();
    assert!(RunDir::resume(&dir).is_err());
}

/// #18 item 3: a UDP trial's facts as the runner records them for a case through an emulated
/// PPPoE port: the frame size, the PPPoE encapsulation on the path, the path's 100 % (the WAN
/// link's frame is 8 B longer, so it is the bottleneck) and the offered rate; they survive a
/// round trip through `trials.jsonl`'s JSON.
#[test]
fn udp_facts_name_the_path_and_survive_a_round_trip() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../plans/cpe-pppoe.toml"
    ))
    .unwrap();
    let (plan, cases) = crate::plan::Plan::parse_expanded(&text, "cpe-pppoe.toml").unwrap();
    let case = cases
        .iter()
        .find(|c| {
            c.frame().and_then(|f| f.fixed()) == Some(128)
                && c.dims.ip == wire::encap::IpVersion::V4
        })
        .expect("a 128 B IPv4 case");
    let f = UdpFacts::of(&plan, case, 0.5).expect("a UDP case has facts");
    assert_eq!(f.frame_bytes(), Some(128));
    assert!(f.encap.pppoe, "{:?}", f.encap);
    // 1e9 / ((128 + 8 + 20) × 8) on the PPPoE link.
    assert_eq!(f.line.pps.0.round(), (1e9f64 / (156.0 * 8.0)).round());
    assert_ne!(f.line.bottleneck, "link");
    assert_eq!(f.line.pps, plan.line_pps(case));
    assert_eq!(f.offered_pps, f.line.pps * 0.5);
    let json = serde_json::to_string(&f).unwrap();
    assert!(
        json.contains("\"frame\":{\"kind\":\"fixed\",\"bytes\":128}"),
        "{json}"
    );
    let back: UdpFacts = serde_json::from_str(&json).unwrap();
    assert_eq!(back, f);
    // A TCP case has none.
    let tcp = cases
        .iter()
        .find(|c| c.frame().and_then(|f| f.fixed()).is_none());
    if let Some(t) = tcp {
        assert_eq!(UdpFacts::of(&plan, t, 0.5), None);
    }
}

#[test]
fn the_largest_catch_up_is_kept_and_absent_when_zero() {
    let mut facts = EngineFacts {
        backend: "xdp".into(),
        note: String::new(),
        sent: 297_620,
        slipped: 0,
        refused_by_dut: 2_159,
        max_catch_up: 723,
        dut: None,
        invalid: Default::default(),
        per_direction: Vec::new(),
        session_drops: Vec::new(),
        streams: Vec::new(),
        tester_port_drops: Vec::new(),
    };
    let json = serde_json::to_string(&facts).unwrap();
    assert!(json.contains("\"max_catch_up\":723"), "{json}");
    assert_eq!(serde_json::from_str::<EngineFacts>(&json).unwrap(), facts);
    // Zero is left out, and a record without the key (older runs) reads as zero.
    facts.max_catch_up = 0;
    let json = serde_json::to_string(&facts).unwrap();
    assert!(!json.contains("max_catch_up"), "{json}");
    assert_eq!(serde_json::from_str::<EngineFacts>(&json).unwrap(), facts);
}
