//! The connection methodologies' rows (`nat-table-capacity`, `nat-connection-rate`,
//! `nat-teardown-rate`, `nat-throughput`, issue #15): one row per (case, methodology,
//! repetition) — per N for `nat-throughput` — with the search's bracket, what failed past
//! the capacity, and the DUT's own connection counters from the trial the figure rests on, so a
//! reader can check the tester's count against the DUT's; and how it was measured: which engine
//! ran the preliminary phase (`phases.preliminary_engines`), and the DUT's egress drops when it
//! had any — frames the DUT forwarded that the tester's port could not take, the tester's loss,
//! not the DUT's (DESIGN.md §7). Pure: records in, rows and bytes out.

use std::collections::BTreeMap;

use bench_model::plan::Methodology;
use bench_model::results::{ConnDone, ConnTrialRecord};
use bench_model::search::{ConnFinding, ConnStatus, LoadBackend};
use serde::{Deserialize, Serialize};

/// One finished connection search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnRow {
    pub case_id: String,
    pub methodology: Methodology,
    pub repetition: u32,
    /// The figure: connections (capacity), connections/s (connection and tear-down rate) or
    /// frames/s each way (throughput); `None` when nothing passed.
    pub value: Option<f64>,
    /// The figure is only a lower bound ("at least"): the most tried passed, the search was
    /// stopped by the tester, or the tear-down was too fast to separate from the deleting
    /// command's own cost.
    #[serde(default)]
    pub lower_bound: bool,
    /// The smallest failing N or rate (`None`: the most tried passed).
    pub upper: Option<f64>,
    /// N of every trial (connection rate, tear-down, throughput) or the preliminary rate of
    /// every trial (capacity).
    pub at: f64,
    /// What the failing trial at the upper bound showed (capacity only).
    pub past: Option<String>,
    pub trials: u32,
    /// The search stopped because the tester could not keep the asked rate: no DUT figure.
    pub tester_limited: bool,
    /// The DUT's connection table after the preliminary phase of the trial at the figure
    /// (its entries) and what the lab's capacity rule refused then; absent without a lab DUT.
    pub dut_entries: Option<u64>,
    pub dut_refused: Option<u64>,
    /// The tester's count in that trial: connections learned by the responder.
    pub learned: Option<u64>,
    /// `nat-throughput`: the engine that sent and counted the load at this N (`xdp`,
    /// `af_packet`), from the trial at the figure or else the N's last trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_engine: Option<String>,
    /// `nat-throughput`: the DUT's own ingress drops (both ports, from the end of the
    /// preliminary phase to the end of the load) in the trial at the figure — 0 when the
    /// figure is the DUT's lossless rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut_drops_at_figure: Option<u64>,
    /// `nat-throughput`: frames lost (both directions) in the trial at the first failing
    /// rate, and the DUT's own ingress drops over it: equal when the DUT dropped them at its
    /// input queue, which is what makes the failure the DUT's. `nat-connection-rate`: the
    /// connections lost there (N − learned) and the DUT's ingress drops over that trial's
    /// preliminary phase, alike.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lost_at_upper: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut_drops_at_upper: Option<u64>,
    /// `nat-throughput`: what the tester fell short of at this N (the search went on with the
    /// next N), as the status cell says it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tester_short: Option<String>,
    /// Which engine ran the preliminary phase (`xdp`, `af_packet`, or `sender …, learner …`
    /// when the two halves differed), from the trial at the figure or else the search's last
    /// trial; `None` in records written before it was recorded (AF_PACKET then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preliminary_engine: Option<String>,
    /// The DUT's egress drops in the trial at the first failing value (preliminary phase, and
    /// validation and load), only when non-zero: frames the DUT forwarded and the tester's
    /// port refused, so that failure was the tester's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut_egress_drops_at_upper: Option<u64>,
    /// The same sentence the run printed (bench_model::search::nat::describe).
    pub summary: String,
}

/// The preliminary phase's engine as the row says it: one name when both halves ran on it.
fn engine_cell(t: &ConnTrialRecord) -> Option<String> {
    let e = t.phases.preliminary_engines.as_ref()?;
    let name = |b: LoadBackend| match b {
        LoadBackend::Xdp => "xdp",
        LoadBackend::AfPacket => "af_packet",
    };
    Some(if e.sender == e.learner {
        name(e.sender).to_string()
    } else {
        format!("sender {}, learner {}", name(e.sender), name(e.learner))
    })
}

/// The DUT's egress drops over the whole trial (preliminary phase, then validation and load);
/// `None` when none were counted or the record has no port counters.
fn egress_drops(t: &ConnTrialRecord) -> Option<u64> {
    let d = t.dut?;
    let n = d.ports.map_or(0, |c| c.egress_drops) + d.load_ports.map_or(0, |c| c.egress_drops);
    (n > 0).then_some(n)
}

/// Rows from the records of a run, in record order of the finished searches.
pub fn rows(trials: &[&ConnTrialRecord], done: &[&ConnDone]) -> Vec<ConnRow> {
    let mut by_search: BTreeMap<(&str, u32, Methodology), Vec<&ConnTrialRecord>> = BTreeMap::new();
    for t in trials {
        by_search
            .entry((&t.key.case_id, t.key.repetition, t.key.methodology))
            .or_default()
            .push(t);
    }
    let mut out = Vec::new();
    for d in done {
        let ts = by_search
            .get(&(d.case_id.as_str(), d.repetition, d.methodology))
            .cloned()
            .unwrap_or_default();
        let r = &d.result;
        let tester_limited = matches!(r.status, ConnStatus::TesterLimited { .. });
        let summary = bench_model::search::nat::describe(r);
        let row = |value: Option<f64>,
                   upper: Option<f64>,
                   at: f64,
                   past: Option<String>,
                   lower_bound: bool,
                   at_figure: Option<&&ConnTrialRecord>| ConnRow {
            case_id: d.case_id.clone(),
            methodology: d.methodology,
            repetition: d.repetition,
            value,
            lower_bound: value.is_some() && (lower_bound || tester_limited),
            upper,
            at,
            past,
            trials: r.trials,
            tester_limited,
            dut_entries: at_figure.and_then(|t| match t.outcome.load {
                // Throughput: the table after the load, which must still hold N.
                Some(l) => l.dut_entries,
                None => t.dut.map(|c| c.preliminary.entries),
            }),
            dut_refused: at_figure.and_then(|t| t.dut.map(|c| c.preliminary.refused)),
            learned: at_figure.map(|t| t.phases.learned),
            load_engine: None,
            dut_drops_at_figure: None,
            lost_at_upper: None,
            dut_drops_at_upper: None,
            tester_short: None,
            preliminary_engine: at_figure
                .or(ts.iter().rev().find(|t| !t.superseded))
                .and_then(|t| engine_cell(t)),
            dut_egress_drops_at_upper: None,
            summary: summary.clone(),
        };
        match &r.finding {
            ConnFinding::TableCapacity {
                lower,
                upper,
                past,
                rate,
            } => {
                let value = lower.map(|x| x as f64);
                let at_figure = ts
                    .iter()
                    .rev()
                    .find(|t| t.outcome.passed() && value == Some(t.request.connections as f64));
                let mut r = row(
                    value,
                    upper.map(|x| x as f64),
                    rate.0,
                    past.map(|p| p.to_string()),
                    upper.is_none(),
                    at_figure,
                );
                let at_upper = ts
                    .iter()
                    .rev()
                    .find(|t| !t.superseded && upper.is_some_and(|u| t.request.connections == u));
                r.dut_egress_drops_at_upper = at_upper.and_then(|t| egress_drops(t));
                out.push(r);
            }
            ConnFinding::ConnectionRate {
                connections,
                lower,
                upper,
                tester_limited: short,
            } => {
                let value = lower.map(|x| x.0);
                let at_figure = ts.iter().rev().find(|t| {
                    t.outcome.passed()
                        && value.is_some_and(|v| (t.request.rate.0 - v).abs() <= 1e-9 * v.max(1.0))
                });
                let mut r = row(
                    value,
                    upper.map(|x| x.0),
                    *connections as f64,
                    None,
                    upper.is_none(),
                    at_figure,
                );
                // The first failing rate: connections lost there beside the DUT's port's
                // refusals, and egress drops if the DUT had any.
                let at_upper = ts.iter().rev().find(|t| {
                    !t.superseded
                        && upper
                            .is_some_and(|u| (t.request.rate.0 - u.0).abs() <= 1e-9 * u.0.max(1.0))
                });
                if let Some(t) = at_upper {
                    r.lost_at_upper = Some(t.request.connections.saturating_sub(t.phases.learned));
                    r.dut_drops_at_upper = t.dut.and_then(|d| d.ports).map(|c| c.ingress_drops);
                    r.dut_egress_drops_at_upper = egress_drops(t);
                }
                // The tester bounded the bracket: "at least", not the DUT's figure.
                if let Some(short) = short {
                    r.tester_limited = true;
                    r.lower_bound = r.value.is_some();
                    r.tester_short = Some(short.to_string());
                }
                out.push(r);
            }
            ConnFinding::TeardownRate {
                connections,
                rate,
                at_least,
                ..
            } => {
                let value = rate.or(*at_least).map(|x| x.0);
                let at_figure = ts.iter().rev().find(|t| {
                    t.outcome.passed() && t.outcome.teardown.is_some_and(|d| d.entries_after == 0)
                });
                out.push(row(
                    value,
                    None,
                    *connections as f64,
                    None,
                    rate.is_none(),
                    at_figure,
                ));
            }
            ConnFinding::Throughput { points } => {
                for p in points {
                    let at_figure = ts.iter().rev().find(|t| {
                        t.request.connections == p.connections
                            && t.outcome.load.is_some_and(|l| {
                                l.lossless()
                                    && p.lower.is_some_and(|v| {
                                        (l.intended_pps.0 - v).abs() <= 1e-9 * v.max(1.0)
                                    })
                            })
                    });
                    let mut r = row(
                        p.lower,
                        p.upper,
                        p.connections as f64,
                        (!p.established).then(|| "not all connections established".to_string()),
                        p.upper.is_none(),
                        at_figure,
                    );
                    let at_n: Vec<&&ConnTrialRecord> = ts
                        .iter()
                        .filter(|t| t.request.connections == p.connections && !t.superseded)
                        .collect();
                    // The trials at this N (the search's total covers every N).
                    r.trials = at_n.len() as u32;
                    let at_upper = at_n.iter().rev().find(|t| {
                        t.outcome.load.is_some_and(|l| {
                            p.upper
                                .is_some_and(|u| (l.intended_pps.0 - u).abs() <= 1e-9 * u.max(1.0))
                        })
                    });
                    let drops = |t: &&&ConnTrialRecord| {
                        t.dut.and_then(|d| d.load_ports).map(|c| c.ingress_drops)
                    };
                    r.load_engine = at_figure
                        .or(at_n.last().copied())
                        .and_then(|t| t.outcome.load)
                        .and_then(|l| l.engine)
                        .map(|e| {
                            match e {
                                bench_model::search::LoadBackend::Xdp => "xdp",
                                bench_model::search::LoadBackend::AfPacket => "af_packet",
                            }
                            .to_string()
                        });
                    r.dut_drops_at_figure = at_figure.and_then(|t| drops(&t));
                    r.lost_at_upper = at_upper.and_then(|t| t.outcome.load).map(|l| {
                        l.forward_sent.saturating_sub(l.forward_received)
                            + l.reverse_sent.saturating_sub(l.reverse_received)
                    });
                    r.dut_drops_at_upper = at_upper.and_then(drops);
                    r.dut_egress_drops_at_upper = at_upper.and_then(|t| egress_drops(t));
                    // Per N: an N the tester ended is not a DUT figure, whatever the others.
                    if let Some(short) = p.tester_limited {
                        r.tester_limited = true;
                        r.lower_bound = r.value.is_some();
                        r.tester_short = Some(short.to_string());
                    }
                    out.push(r);
                }
            }
        }
    }
    out
}

/// The unit of a methodology's figure.
pub fn unit(m: Methodology) -> &'static str {
    match m {
        Methodology::NatTableCapacity => "connections",
        Methodology::NatThroughput => "frames/s each way",
        _ => "connections/s",
    }
}

/// Columns shared by CSV, Markdown and HTML.
pub const COLUMNS: [&str; 18] = [
    "case",
    "methodology",
    "repetition",
    "value",
    "unit",
    "upper",
    "at",
    "past_capacity",
    "trials",
    "status",
    "dut_entries",
    "dut_refused",
    "load_engine",
    "dut_drops_at_figure",
    "lost_at_upper",
    "dut_drops_at_upper",
    "preliminary_engine",
    "dut_egress_drops_at_upper",
];

/// Header as Markdown and HTML show it.
pub const TITLES: [&str; 18] = [
    "case",
    "methodology",
    "rep",
    "result",
    "unit",
    "first failing",
    "at (rate or N)",
    "past the capacity",
    "trials",
    "status",
    "DUT table entries",
    "DUT refused",
    "load engine",
    "DUT drops at the result",
    "lost at first failing",
    "DUT drops at first failing",
    "preliminary engine",
    "DUT egress drops at first failing",
];

/// Columns whose cells are numbers (right-aligned in HTML).
pub const NUMERIC: [usize; 9] = [3, 5, 8, 10, 11, 13, 14, 15, 17];

fn opt(x: Option<impl ToString>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// One row's cells. A lower bound reads "at least X".
pub fn cells(r: &ConnRow) -> Vec<String> {
    let capacity = matches!(r.methodology, Methodology::NatTableCapacity);
    let num = |x: f64| format!("{x:.0}");
    vec![
        r.case_id.clone(),
        r.methodology.name().to_string(),
        r.repetition.to_string(),
        r.value
            .map(|v| {
                if r.lower_bound {
                    format!("at least {}", num(v))
                } else {
                    num(v)
                }
            })
            .unwrap_or_default(),
        unit(r.methodology).to_string(),
        r.upper.map(num).unwrap_or_default(),
        if capacity {
            format!("{} /s", num(r.at))
        } else {
            format!("N = {}", num(r.at))
        },
        r.past.clone().unwrap_or_default(),
        r.trials.to_string(),
        match (&r.tester_short, r.tester_limited) {
            (Some(s), _) => s.clone(),
            (None, true) => "tester-limited".to_string(),
            (None, false) => "ok".to_string(),
        },
        opt(r.dut_entries),
        opt(r.dut_refused),
        r.load_engine.clone().unwrap_or_default(),
        opt(r.dut_drops_at_figure),
        opt(r.lost_at_upper),
        opt(r.dut_drops_at_upper),
        r.preliminary_engine.clone().unwrap_or_default(),
        opt(r.dut_egress_drops_at_upper),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A capacity trial record of N connections at 5,000/s: `learned` arrived and validated.
    fn trial(index: u32, n: u64, learned: u64) -> ConnTrialRecord {
        serde_json::from_value(serde_json::json!({
            "case_id": "napt/udp4/64B", "repetition": 0, "methodology": "nat-table-capacity",
            "index": index,
            "request": {"connections": n, "rate": 5000.0, "validation_rate": 5000.0, "gap": 0.3},
            "outcome": {"connections": n, "intended_rate": 5000.0, "offered_rate": 5000.0,
                "preliminary_sent": n, "preliminary_received": learned,
                "validation_sent": learned, "validation_received": learned},
            "tester_limited": false,
            "phases": {"preliminary_sent": n, "preliminary_pps": 5000.0,
                "preliminary_max_late_ns": 0, "learned": learned, "translated": learned,
                "learned_duplicates": 0, "validation_sent": learned, "validation_pps": 5000.0,
                "validation_max_late_ns": 0, "validated": learned, "misdirected": 0,
                "validated_duplicates": 0},
            "dut": {
                "preliminary": {"entries": learned, "insert": 0, "insert_failed": 0, "drop": 0,
                    "early_drop": 0, "refused": n - learned},
                "trial": {"entries": learned, "insert": 0, "insert_failed": 0, "drop": 0,
                    "early_drop": 0, "refused": n - learned}},
            "finished_unix_ms": 1
        }))
        .unwrap()
    }

    #[test]
    fn a_capacity_row_carries_the_dut_count_of_the_trial_at_the_figure() {
        let trials = [
            trial(0, 1000, 1000),
            trial(1, 2000, 1500),
            trial(2, 1500, 1500),
        ];
        let done: ConnDone = serde_json::from_value(serde_json::json!({
            "case_id": "napt/udp4/64B", "repetition": 0, "methodology": "nat-table-capacity",
            "result": {"status": {"state": "complete"},
                "finding": {"kind": "table-capacity", "lower": 1500, "upper": 1501,
                    "past": "new-dropped", "rate": 5000.0},
                "trials": 3, "trial_seconds": 2.0}
        }))
        .unwrap();
        let refs: Vec<&ConnTrialRecord> = trials.iter().collect();
        let rows = rows(&refs, &[&done]);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!((r.value, r.upper), (Some(1500.0), Some(1501.0)));
        assert_eq!(
            (r.dut_entries, r.dut_refused, r.learned),
            (Some(1500), Some(0), Some(1500))
        );
        assert!(
            r.summary.starts_with("table capacity 1500 connections"),
            "{}",
            r.summary
        );
        let c = cells(r);
        assert_eq!(c.len(), COLUMNS.len());
        assert_eq!(
            c,
            [
                "napt/udp4/64B",
                "nat-table-capacity",
                "0",
                "1500",
                "connections",
                "1501",
                "5000 /s",
                "new connections dropped",
                "3",
                "ok",
                "1500",
                "0",
                "",
                "",
                "",
                "",
                "",
                ""
            ]
        );
    }

    #[test]
    fn teardown_and_throughput_rows_say_at_least_for_lower_bounds() {
        let done = |finding: serde_json::Value, m: &str| -> ConnDone {
            serde_json::from_value(serde_json::json!({
                "case_id": "napt/udp4/64B", "repetition": 0, "methodology": m,
                "result": {"status": {"state": "complete"}, "finding": finding,
                    "trials": 4, "trial_seconds": 2.0}
            }))
            .unwrap()
        };
        let td = done(
            serde_json::json!({"kind": "teardown-rate", "connections": 5000,
                "rate": 900000.0, "at_least": 400000.0, "valid": 5, "repetitions": 5}),
            "nat-teardown-rate",
        );
        let td_bound = done(
            serde_json::json!({"kind": "teardown-rate", "connections": 5000,
                "rate": null, "at_least": 400000.0, "valid": 5, "repetitions": 5}),
            "nat-teardown-rate",
        );
        let tp = done(
            serde_json::json!({"kind": "throughput", "points": [
                {"connections": 1, "lower": 40000.0, "upper": null, "established": true},
                {"connections": 6000, "lower": 30000.0, "upper": 32000.0, "established": true},
                {"connections": 9000, "lower": null, "upper": null, "established": false}]}),
            "nat-throughput",
        );
        let rows = rows(&[], &[&td, &td_bound, &tp]);
        assert_eq!(rows.len(), 5, "a row per N for throughput");
        let value = |r: &ConnRow| cells(r)[3].clone();
        assert_eq!(value(&rows[0]), "900000");
        assert_eq!(cells(&rows[0])[4], "connections/s");
        assert_eq!(value(&rows[1]), "at least 400000");
        assert_eq!(value(&rows[2]), "at least 40000");
        assert_eq!(cells(&rows[2])[4], "frames/s each way");
        assert_eq!(cells(&rows[2])[6], "N = 1");
        assert_eq!(value(&rows[3]), "30000");
        assert_eq!(cells(&rows[3])[5], "32000");
        assert_eq!(value(&rows[4]), "");
        assert_eq!(cells(&rows[4])[7], "not all connections established");
    }

    /// A throughput trial record at N connections and `pps` each way: `lost` frames of the
    /// forward direction lost, `drops` counted by the DUT's ingress over the load.
    fn load_trial(index: u32, n: u64, pps: f64, lost: u64, drops: u64) -> ConnTrialRecord {
        let sent = pps as u64;
        let mut t = trial(index, n, n);
        t.key.methodology = Methodology::NatThroughput;
        t.request.real = Some(bench_model::search::RealTest::Load {
            pps,
            duration: std::time::Duration::from_secs(1),
        });
        t.outcome.load = Some(
            serde_json::from_value(serde_json::json!({
                "intended_pps": pps, "forward_sent": sent, "forward_received": sent - lost,
                "forward_pps": pps, "reverse_sent": sent, "reverse_received": sent,
                "reverse_pps": pps, "dut_entries": n, "engine": "xdp"
            }))
            .unwrap(),
        );
        let ports: bench_model::results::DutCounters = serde_json::from_value(serde_json::json!({
            "ingress_rx": 2 * sent, "ingress_drops": drops, "egress_tx": 2 * sent - drops
        }))
        .unwrap();
        if let Some(d) = t.dut.as_mut() {
            d.load_ports = Some(ports);
        }
        t
    }

    #[test]
    fn throughput_rows_show_the_engine_the_duts_drops_and_a_per_n_tester_limit() {
        let trials = [
            load_trial(0, 1, 150_000.0, 0, 0),
            load_trial(1, 1, 140_000.0, 0, 0),
            load_trial(2, 1000, 150_000.0, 700, 700),
            load_trial(3, 1000, 100_000.0, 0, 0),
        ];
        let done: ConnDone = serde_json::from_value(serde_json::json!({
            "case_id": "napt/udp4/64B", "repetition": 0, "methodology": "nat-throughput",
            "result": {"status": {"state": "complete"},
                "finding": {"kind": "throughput", "points": [
                    {"connections": 1, "lower": 140000.0, "upper": null, "established": true,
                     "tester_limited": {"phase": "load", "intended": 150000.0,
                        "achieved": 141000.0}},
                    {"connections": 1000, "lower": 100000.0, "upper": 150000.0,
                     "established": true}]},
                "trials": 4, "trial_seconds": 8.0}
        }))
        .unwrap();
        let refs: Vec<&ConnTrialRecord> = trials.iter().collect();
        let rows = rows(&refs, &[&done]);
        assert_eq!(rows.len(), 2);
        let (one, full) = (cells(&rows[0]), cells(&rows[1]));
        assert_eq!(one.len(), COLUMNS.len());
        // N = 1: the tester's limit, in its own row only; an "at least" figure.
        assert!(rows[0].tester_limited && !rows[1].tester_limited);
        assert_eq!(one[3], "at least 140000");
        assert_eq!(
            one[9],
            "tester-limited (asked 150000, sent 141000 frames/s each way)"
        );
        assert_eq!(&one[12..], ["xdp", "0", "", "", "", ""]);
        // N = 1,000: the DUT's figure; the frames lost at the first failing rate are the
        // DUT's own ingress drops.
        assert_eq!((full[3].as_str(), full[9].as_str()), ("100000", "ok"));
        assert_eq!(&full[12..], ["xdp", "0", "700", "700", "", ""]);
        // JSON keeps them too.
        let j = serde_json::to_value(&rows[1]).unwrap();
        assert_eq!(j["dut_drops_at_upper"], 700);
        assert_eq!(j["load_engine"], "xdp");
    }
}
