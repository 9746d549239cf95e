//! `wirerate compare`: the same cases in two runs, improved / regressed / within noise.
//!
//! A case counts as changed only when both hold: the relative change exceeds the threshold,
//! and the absolute change exceeds the noise of both runs (|b − a| > noise(a) + noise(b)).

use serde::{Deserialize, Serialize};

use crate::model::{beyond_noise, signed_percent, Analysis};
use crate::text::num;

/// What happened to one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// B is faster, beyond threshold and noise.
    Improved,
    /// B is slower, beyond threshold and noise.
    Regressed,
    /// The change is below the threshold or inside the noise.
    WithinNoise,
    /// No DUT figure in one run (tester-limited, missing or unfinished).
    NotComparable,
}

impl Verdict {
    /// The word printed.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Improved => "improved",
            Verdict::Regressed => "regressed",
            Verdict::WithinNoise => "within noise",
            Verdict::NotComparable => "not comparable",
        }
    }
}

/// One case in both runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    /// Case id.
    pub case_id: String,
    /// Methodology.
    pub methodology: String,
    /// Frames per second in A and B.
    pub a_pps: Option<f64>,
    /// See `a_pps`.
    pub b_pps: Option<f64>,
    /// Noise of A and B, frames per second.
    pub a_noise: f64,
    /// See `a_noise`.
    pub b_noise: f64,
    /// (B − A) / A, percent.
    pub delta_percent: Option<f64>,
    /// Verdict.
    pub verdict: Verdict,
    /// Why it is not comparable.
    pub reason: Option<String>,
    /// The unit of `a_pps`/`b_pps` when it is not frames/s: `connections` (table capacity) or
    /// `connections/s` (connection rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

/// Compares every (case, methodology) present in either run. `threshold` is relative (0.05 = 5 %).
pub fn compare(a: &Analysis, b: &Analysis, threshold: f64) -> Vec<CompareRow> {
    let mut out = Vec::new();
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in a.rows.iter().chain(&b.rows) {
        let k = (r.case_id.clone(), r.methodology_label());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    for (case, m) in keys {
        let find = |x: &Analysis| {
            x.rows
                .iter()
                .find(|r| r.case_id == case && r.methodology_label() == m)
                .cloned()
        };
        let (ra, rb) = (find(a), find(b));
        let pps = |r: &Option<crate::model::Row>| r.as_ref().and_then(|r| r.pps);
        let noise = |r: &Option<crate::model::Row>| r.as_ref().map_or(0.0, |r| r.noise_pps);
        let (ap, bp) = (pps(&ra), pps(&rb));
        let (an, bn) = (noise(&ra), noise(&rb));
        let reason = match (&ra, &rb) {
            (None, _) => Some("missing in A".to_string()),
            (_, None) => Some("missing in B".to_string()),
            (Some(x), _) if x.tester_limited => Some("tester-limited in A".into()),
            (_, Some(y)) if y.tester_limited => Some("tester-limited in B".into()),
            _ if ap.is_none() || bp.is_none() => Some("no figure".into()),
            _ if ap == Some(0.0) => Some("zero throughput in A".into()),
            _ => None,
        };
        let (delta, verdict) = match (reason.is_none(), ap, bp) {
            (true, Some(x), Some(y)) => judge(x, an, y, bn, threshold),
            _ => (None, Verdict::NotComparable),
        };
        out.push(CompareRow {
            case_id: case,
            methodology: m,
            a_pps: ap,
            b_pps: bp,
            a_noise: an,
            b_noise: bn,
            delta_percent: delta,
            verdict,
            reason,
            unit: None,
        });
    }
    out.extend(compare_connections(a, b, threshold));
    out
}

/// The connection methodologies' rows (first repetition of each): a larger table or a higher
/// connection rate is an improvement. The searches give a bracket, not a noise figure, so the
/// noise is taken as half the bracket's width (lower to first failing), which is how far the
/// figure could move without a different trial failing.
fn compare_connections(a: &Analysis, b: &Analysis, threshold: f64) -> Vec<CompareRow> {
    use crate::connections::ConnRow;
    // Throughput has a row per N: N is part of the key (its bits, to keep the key `Eq`).
    let mut keys: Vec<(String, bench_model::plan::Methodology, u64)> = Vec::new();
    for r in a.connections.iter().chain(&b.connections) {
        let k = (r.case_id.clone(), r.methodology, at_key(r));
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let noise = |r: &ConnRow| match (r.value, r.upper) {
        (Some(v), Some(u)) => (u - v).abs() / 2.0,
        _ => 0.0,
    };
    keys.into_iter()
        .map(|(case, m, at)| {
            let find = |x: &Analysis| {
                x.connections
                    .iter()
                    .filter(|r| r.case_id == case && r.methodology == m && at_key(r) == at)
                    .min_by_key(|r| r.repetition)
                    .cloned()
            };
            let (ra, rb) = (find(a), find(b));
            let reason = match (&ra, &rb) {
                (None, _) => Some("missing in A".to_string()),
                (_, None) => Some("missing in B".to_string()),
                (Some(x), _) if x.tester_limited => Some("tester-limited in A".into()),
                (_, Some(y)) if y.tester_limited => Some("tester-limited in B".into()),
                (Some(x), Some(y)) if x.value.is_none() || y.value.is_none() => {
                    Some("no figure".into())
                }
                (Some(x), Some(y)) if lower_bound(x) || lower_bound(y) => {
                    Some("a lower bound only (\"at least\")".into())
                }
                _ => None,
            };
            let (av, bv) = (
                ra.as_ref().and_then(|r| r.value),
                rb.as_ref().and_then(|r| r.value),
            );
            let (an, bn) = (
                ra.as_ref().map_or(0.0, noise),
                rb.as_ref().map_or(0.0, noise),
            );
            let (delta, verdict) = match (reason.is_none(), av, bv) {
                (true, Some(x), Some(y)) if x > 0.0 => judge(x, an, y, bn, threshold),
                _ => (None, Verdict::NotComparable),
            };
            CompareRow {
                case_id: if m == bench_model::plan::Methodology::NatThroughput {
                    format!("{case} N={}", f64::from_bits(at))
                } else {
                    case
                },
                methodology: m.name().to_string(),
                a_pps: av,
                b_pps: bv,
                a_noise: an,
                b_noise: bn,
                delta_percent: delta,
                verdict,
                reason,
                unit: Some(crate::connections::unit(m).into()),
            }
        })
        .collect()
}

/// Whether a connection row's figure is only "at least" (rows recorded before `lower_bound`
/// existed: a bracket without an upper end).
fn lower_bound(r: &crate::connections::ConnRow) -> bool {
    r.lower_bound
        || (r.methodology != bench_model::plan::Methodology::NatTeardownRate && r.upper.is_none())
}

/// The part of a connection row's key beyond case and methodology: N for throughput rows.
fn at_key(r: &crate::connections::ConnRow) -> u64 {
    if r.methodology == bench_model::plan::Methodology::NatThroughput {
        r.at.to_bits()
    } else {
        0
    }
}

/// What makes the two runs less than comparable as a whole, one sentence each: different
/// plans (by name, reference speed, repetitions or DUT profiles), and runs that did not
/// finish everything their plan asked for. Empty when they compare like for like.
pub fn caveats(a: &Analysis, b: &Analysis) -> Vec<String> {
    let mut out = Vec::new();
    if a.plan_name != b.plan_name {
        out.push(format!(
            "different plans: A ran `{}`, B ran `{}`; only cases with the same id are compared",
            a.plan_name, b.plan_name
        ));
    }
    if a.speed_bps != b.speed_bps {
        out.push(format!(
            "different reference speeds ({} b/s against {} b/s): percentages of line rate differ in meaning",
            a.speed_bps, b.speed_bps
        ));
    }
    if a.repetitions != b.repetitions {
        out.push(format!(
            "different repetitions ({} against {}): the noise estimates are not alike",
            a.repetitions, b.repetitions
        ));
    }
    if a.profiles != b.profiles {
        out.push(format!(
            "different DUT profiles ([{}] against [{}])",
            a.profiles.join(", "),
            b.profiles.join(", ")
        ));
    }
    for (which, r) in [("A", a), ("B", b)] {
        let c = &r.completeness;
        if !c.is_complete() {
            let mut why = Vec::new();
            if let Some(e) = &c.plan_error {
                why.push(format!("its plan cannot be read ({e})"));
            }
            if c.expected > 0 {
                why.push(format!(
                    "{} of {} searches finished",
                    c.finished, c.expected
                ));
            }
            if c.torn_tail {
                why.push("its last record is torn (killed mid-write)".into());
            }
            out.push(format!(
                "run {which} is unfinished: {}; cases it lacks are not comparable (`wirerate run … --resume` completes it)",
                why.join(", ")
            ));
        }
    }
    out
}

/// The comparison as a text table with a one-line tally.
pub fn compare_text(a: &Analysis, b: &Analysis, rows: &[CompareRow], threshold: f64) -> String {
    let mut o = format!(
        "A: {} (wirerate {}, started {})\nB: {} (wirerate {}, started {})\nrule: changed when |Δ| > {} % and |B − A| > noise(A) + noise(B)\n",
        a.plan_name,
        a.version,
        a.started_unix,
        b.plan_name,
        b.version,
        b.started_unix,
        threshold * 100.0
    );
    for c in caveats(a, b) {
        o.push_str(&format!("CAVEAT: {c}\n"));
    }
    o.push('\n');
    let head = ["case", "A pps", "±", "B pps", "±", "Δ", "verdict"];
    let mut table: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
    for r in rows {
        // Connection rows: whole connections (or connections/s), the unit named with the case.
        let (fmt, case): (fn(f64) -> String, String) = match &r.unit {
            None => (num::pps, format!("{} [{}]", r.case_id, r.methodology)),
            Some(u) => (
                |x| format!("{x:.0}"),
                format!("{} [{}, {u}]", r.case_id, r.methodology),
            ),
        };
        table.push(vec![
            case,
            r.a_pps.map(fmt).unwrap_or_else(|| "-".into()),
            fmt(r.a_noise),
            r.b_pps.map(fmt).unwrap_or_else(|| "-".into()),
            fmt(r.b_noise),
            r.delta_percent
                .map(signed_percent)
                .unwrap_or_else(|| "-".into()),
            match &r.reason {
                Some(why) => format!("{} ({why})", r.verdict.word()),
                None => r.verdict.word().into(),
            },
        ]);
    }
    let mut w = vec![0usize; head.len()];
    for row in &table {
        for (i, c) in row.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    for row in &table {
        for (i, c) in row.iter().enumerate() {
            let pad = " ".repeat(w[i] - c.chars().count());
            if i == 0 || i == 6 {
                o.push_str(&format!("{c}{pad}"));
            } else {
                o.push_str(&format!("{pad}{c}"));
            }
            o.push_str(if i + 1 < row.len() { "  " } else { "\n" });
        }
    }
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    o.push_str(&format!(
        "\n{} improved, {} regressed, {} within noise, {} not comparable\n",
        count(Verdict::Improved),
        count(Verdict::Regressed),
        count(Verdict::WithinNoise),
        count(Verdict::NotComparable)
    ));
    o
}

/// B's figure `y` (noise `bn`) against A's `x` (noise `an`, `x` > 0): the change in percent,
/// and an improvement or a regression only beyond both the threshold and the noise.
fn judge(x: f64, an: f64, y: f64, bn: f64, threshold: f64) -> (Option<f64>, Verdict) {
    let rel = (y - x) / x;
    let v = if rel.abs() > threshold && beyond_noise(y, bn, x, an) {
        if rel > 0.0 {
            Verdict::Improved
        } else {
            Verdict::Regressed
        }
    } else {
        Verdict::WithinNoise
    };
    (Some(rel * 100.0), v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An analysis with one table-capacity row: `value` passed, `upper` failed.
    fn run(value: f64, upper: Option<f64>, tester_limited: bool) -> Analysis {
        serde_json::from_value(serde_json::json!({
            "plan_name": "lab-nat-capacity", "description": null, "version": "x",
            "started_unix": 0, "host": {}, "speed_bps": 1e9, "repetitions": 1,
            "profiles": ["napt"], "baseline": "napt", "rows": [], "loss_curves": [],
            "latency": [], "findings": [], "notes": [],
            "completeness": serde_json::to_value(crate::model::Completeness::default()).unwrap(),
            "connections": [{
                "case_id": "napt/udp4/64B", "methodology": "nat-table-capacity",
                "repetition": 0, "value": value, "upper": upper, "at": 5000.0,
                "past": "new connections dropped", "trials": 12,
                "tester_limited": tester_limited, "dut_entries": null, "dut_refused": null,
                "learned": null, "summary": ""
            }]
        }))
        .unwrap()
    }

    #[test]
    fn connection_rows_compare_with_their_unit() {
        let a = run(3000.0, Some(3001.0), false);
        let rows = compare(&a, &run(6000.0, Some(6001.0), false), 0.05);
        assert_eq!(rows.len(), 1);
        let r = &rows[0];
        assert_eq!(
            (r.verdict, r.unit.as_deref()),
            (Verdict::Improved, Some("connections"))
        );
        assert_eq!(r.delta_percent, Some(100.0));
        let text = compare_text(&a, &a, &rows, 0.05);
        assert!(
            text.contains("napt/udp4/64B [nat-table-capacity, connections]"),
            "{text}"
        );
        assert!(text.contains("3000"), "{text}");
        // Same table: within noise; a lower bound only or a tester-limited run: no verdict.
        assert_eq!(compare(&a, &a, 0.05)[0].verdict, Verdict::WithinNoise);
        let open = compare(&a, &run(6000.0, None, false), 0.05);
        assert_eq!(open[0].verdict, Verdict::NotComparable);
        let tl = compare(&a, &run(6000.0, Some(6001.0), true), 0.05);
        assert_eq!(tl[0].reason.as_deref(), Some("tester-limited in B"));
    }
}
