//! The connection rows say how they were measured: the preliminary phase's engine, and the
//! DUT's egress drops when it had any (issue 37), in every format a reader opens.
//!
//! The records are shaped as `wirerate run plans/lab-nat-capacity.toml` writes them
//! (`trials.jsonl` of a run of 2026-11-29: napt's connection rate bracketed by a failing trial
//! whose lost connections were the DUT port's refusals), on the demo fixture's plan, which has
//! the napt profile.

use std::path::Path;

use bench_model::results::{read_records, Record, RunInfo};
use report::{analyse, RunInput};

/// One preliminary phase's record: `learned` of 5,000 connections at `rate`, the DUT's port
/// refusing `ingress_drops` and its egress dropping `egress_drops`, sent and learned by
/// `sender` and `learner`.
fn trial(
    rep: u32,
    index: u32,
    rate: f64,
    learned: u64,
    (ingress_drops, egress_drops): (u64, u64),
    (sender, learner): (&str, &str),
) -> Record {
    let n = 5000u64;
    let failed = if learned < n {
        serde_json::json!({"count": n - learned, "first": 2348, "last": 4995})
    } else {
        serde_json::Value::Null
    };
    let mut ports = serde_json::json!({"ingress_rx": learned + 3, "ingress_drops": ingress_drops,
        "backlog_drops": 0, "egress_tx": learned + 1, "cpu_busy_ticks": 73,
        "cpu_total_ticks": 73});
    if egress_drops > 0 {
        ports["egress_drops"] = egress_drops.into();
    }
    let table = serde_json::json!({"entries": learned, "insert": 0, "insert_failed": 0,
        "drop": 0, "early_drop": 0, "refused": 0});
    serde_json::from_value(serde_json::json!({
        "record": "conn-trial", "case_id": "napt/udp4/64B", "repetition": rep,
        "methodology": "nat-connection-rate", "index": index,
        "request": {"connections": n, "rate": rate, "validation_rate": 10000.0, "gap": 0.3},
        "outcome": {"connections": n, "intended_rate": rate, "offered_rate": rate,
            "preliminary_sent": n, "preliminary_received": learned,
            "validation_sent": learned, "validation_received": learned, "failed": failed},
        "tester_limited": false,
        "phases": {"preliminary_sent": n, "preliminary_pps": rate,
            "preliminary_max_late_ns": 50000, "preliminary_refused_by_dut": ingress_drops,
            "learned": learned, "translated": learned, "learned_duplicates": 0,
            "validation_sent": learned, "validation_pps": 10000.0,
            "validation_max_late_ns": 16000000, "validated": learned, "misdirected": 0,
            "validated_duplicates": 0, "tester_rx_drops": 0,
            "preliminary_engines": {"sender": sender, "learner": learner,
                "sender_priority": {"kind": "fifo", "priority": 1}}},
        "dut": {"preliminary": table, "trial": table, "ports": ports},
        "finished_unix_ms": 1795922715508u64 + u64::from(index)
    }))
    .unwrap()
}

fn done(rep: u32, lower: f64, upper: f64, trials: u32) -> Record {
    serde_json::from_value(serde_json::json!({
        "record": "conn-done", "case_id": "napt/udp4/64B", "repetition": rep,
        "methodology": "nat-connection-rate",
        "result": {"status": {"state": "complete"},
            "finding": {"kind": "connection-rate", "connections": 5000, "lower": lower,
                "upper": upper},
            "trials": trials, "trial_seconds": 4.1}
    }))
    .unwrap()
}

/// The connection table's rows of a Markdown summary, as cells.
fn md_rows(md: &str) -> Vec<Vec<String>> {
    let start = md.find("## Connections").expect("a connections section");
    md[start..]
        .lines()
        .skip_while(|l| !l.starts_with("| case"))
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn connection_rows_name_the_preliminary_engine_and_the_duts_egress_drops() {
    let d = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-demo");
    let info: RunInfo =
        serde_json::from_str(&std::fs::read_to_string(d.join("run.json")).unwrap()).unwrap();
    let mut records = read_records(&d.join("trials.jsonl")).unwrap().records;
    // Repetition 0: both halves on XDP; the failing trial lost 845 connections, all refused by
    // the DUT's port, none dropped at its egress — the DUT's failure.
    records.push(trial(0, 0, 400_000.0, 4155, (845, 0), ("xdp", "xdp")));
    records.push(trial(0, 1, 375_062.5, 5000, (0, 0), ("xdp", "xdp")));
    records.push(done(0, 375_062.5, 400_000.0, 2));
    // Repetition 1: learned on AF_PACKET; the failing trial's losses include 37 frames the
    // DUT forwarded and the tester's port refused (its egress drops).
    records.push(trial(1, 0, 400_000.0, 4900, (63, 37), ("xdp", "af_packet")));
    records.push(trial(1, 1, 375_062.5, 5000, (0, 0), ("xdp", "af_packet")));
    records.push(done(1, 375_062.5, 400_000.0, 2));
    let a = analyse(RunInput {
        info: &info,
        records: &records,
        torn_tail: false,
        stats: &[],
    });
    assert_eq!(a.connections.len(), 2, "{:?}", a.connections);
    let (r0, r1) = (&a.connections[0], &a.connections[1]);
    assert_eq!(r0.preliminary_engine.as_deref(), Some("xdp"));
    assert_eq!(
        (r0.lost_at_upper, r0.dut_drops_at_upper),
        (Some(845), Some(845))
    );
    assert_eq!(r0.dut_egress_drops_at_upper, None, "zero is not shown");
    assert_eq!(
        r1.preliminary_engine.as_deref(),
        Some("sender xdp, learner af_packet")
    );
    assert_eq!(
        (r1.lost_at_upper, r1.dut_drops_at_upper),
        (Some(100), Some(63))
    );
    assert_eq!(r1.dut_egress_drops_at_upper, Some(37));

    let files = report::render_all(&a);
    let file = |name: &str| {
        String::from_utf8(
            files
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap_or_else(|| panic!("{name} written"))
                .1
                .clone(),
        )
        .unwrap()
    };
    // CSV: by column name.
    let csv = file(report::CONNECTIONS_CSV);
    let mut lines = csv.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| head.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2, "{csv}");
    let (engine, egress, lost, drops) = (
        col("preliminary_engine"),
        col("dut_egress_drops_at_upper"),
        col("lost_at_upper"),
        col("dut_drops_at_upper"),
    );
    assert_eq!(
        [
            rows[0][engine],
            rows[0][egress],
            rows[0][lost],
            rows[0][drops]
        ],
        ["xdp", "", "845", "845"],
        "{csv}"
    );
    // The engine cell holds a comma: quoted in CSV.
    assert!(csv.contains("\"sender xdp, learner af_packet\""), "{csv}");
    assert!(csv.lines().nth(2).unwrap().ends_with(",37"), "{csv}");

    // Markdown: the titles and the cells of both rows.
    let md = md_rows(&file(report::SUMMARY_MD));
    let titles = &md[0];
    let at = |t: &str| titles.iter().position(|h| h == t).unwrap();
    let (engine, egress) = (
        at("preliminary engine"),
        at("DUT egress drops at first failing"),
    );
    let body: Vec<&Vec<String>> = md.iter().skip(2).collect();
    assert_eq!(body.len(), 2);
    assert_eq!(
        (body[0][engine].as_str(), body[0][egress].as_str()),
        ("xdp", "")
    );
    assert_eq!(
        (body[1][engine].as_str(), body[1][egress].as_str()),
        ("sender xdp, learner af_packet", "37")
    );

    // HTML: the cells by their data-k.
    let html = file(report::REPORT_HTML);
    assert!(html.contains("<th>preliminary engine</th>"), "no title");
    assert!(html.contains("<th>DUT egress drops at first failing</th>"));
    assert!(html.contains("<td data-k=\"preliminary_engine\">xdp</td>"));
    assert!(html.contains("<td data-k=\"preliminary_engine\">sender xdp, learner af_packet</td>"));
    assert!(html.contains("<td class=\"n\" data-k=\"dut_egress_drops_at_upper\">37</td>"));
    assert!(html.contains("<td class=\"n\" data-k=\"dut_egress_drops_at_upper\"></td>"));
}
