//! The connection methodologies' rows (`nat-table-capacity`, `nat-connection-rate`, issue
//! #15): one row per (case, methodology, repetition) with the search's bracket, what failed past
//! the capacity, and the DUT's own connection counters from the trial the figure rests on, so a
//! reader can check the tester's count against the DUT's. Pure: records in, rows and bytes out.

use std::collections::BTreeMap;

use bench::plan::Methodology;
use bench::results::{ConnDone, ConnTrialRecord};
use bench::search::{ConnFinding, ConnStatus};
use serde::{Deserialize, Serialize};

/// One finished connection search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConnRow {
    pub case_id: String,
    pub methodology: Methodology,
    pub repetition: u32,
    /// The figure: connections (capacity) or connections/s (rate); `None` when nothing passed.
    pub value: Option<f64>,
    /// The smallest failing N or rate (`None`: the most tried passed).
    pub upper: Option<f64>,
    /// N of every trial (connection rate) or the preliminary rate of every trial (capacity).
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
    /// The same sentence the run printed (bench::search::nat::describe).
    pub summary: String,
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
    done.iter()
        .map(|d| {
            let ts = by_search
                .get(&(d.case_id.as_str(), d.repetition, d.methodology))
                .cloned()
                .unwrap_or_default();
            let r = &d.result;
            let (value, upper, at, past) = match r.finding {
                ConnFinding::TableCapacity {
                    lower,
                    upper,
                    past,
                    rate,
                } => (
                    lower.map(|x| x as f64),
                    upper.map(|x| x as f64),
                    rate.0,
                    past.map(|p| p.to_string()),
                ),
                ConnFinding::ConnectionRate {
                    connections,
                    lower,
                    upper,
                } => (
                    lower.map(|x| x.0),
                    upper.map(|x| x.0),
                    connections as f64,
                    None,
                ),
            };
            // The trial the figure rests on: the passing one at the figure.
            let at_figure = ts.iter().rev().find(|t| {
                t.outcome.passed()
                    && value.is_some_and(|v| match d.methodology {
                        Methodology::NatTableCapacity => t.request.connections as f64 == v,
                        _ => (t.request.rate.0 - v).abs() <= 1e-9 * v.max(1.0),
                    })
            });
            ConnRow {
                case_id: d.case_id.clone(),
                methodology: d.methodology,
                repetition: d.repetition,
                value,
                upper,
                at,
                past,
                trials: r.trials,
                tester_limited: matches!(r.status, ConnStatus::TesterLimited { .. }),
                dut_entries: at_figure.and_then(|t| t.dut.map(|c| c.preliminary.entries)),
                dut_refused: at_figure.and_then(|t| t.dut.map(|c| c.preliminary.refused)),
                learned: at_figure.map(|t| t.phases.learned),
                summary: bench::search::nat::describe(r),
            }
        })
        .collect()
}

/// Columns shared by CSV, Markdown and HTML.
pub const COLUMNS: [&str; 12] = [
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
];

/// Header as Markdown and HTML show it.
pub const TITLES: [&str; 12] = [
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
];

fn opt(x: Option<impl ToString>) -> String {
    x.map(|v| v.to_string()).unwrap_or_default()
}

/// One row's cells.
pub fn cells(r: &ConnRow) -> Vec<String> {
    let capacity = r.methodology == Methodology::NatTableCapacity;
    let num = |x: f64| format!("{x:.0}");
    vec![
        r.case_id.clone(),
        r.methodology.name().to_string(),
        r.repetition.to_string(),
        r.value.map(num).unwrap_or_default(),
        if capacity {
            "connections"
        } else {
            "connections/s"
        }
        .to_string(),
        r.upper.map(num).unwrap_or_default(),
        if capacity {
            format!("{} /s", num(r.at))
        } else {
            format!("N = {}", num(r.at))
        },
        r.past.clone().unwrap_or_default(),
        r.trials.to_string(),
        if r.tester_limited {
            "tester-limited"
        } else {
            "ok"
        }
        .to_string(),
        opt(r.dut_entries),
        opt(r.dut_refused),
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
                "0"
            ]
        );
    }
}
