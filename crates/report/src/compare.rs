//! `wirerate compare`: the same cases in two runs, improved / regressed / within noise.
//!
//! A case counts as changed only when the relative change exceeds the threshold and the
//! evidence says the change is real. How it says so depends on what the runs measured
//! (docs/report.md, "compare"):
//!
//! - **Three or more repetitions on both sides**: a t-test of the ratio of the two means over
//!   the repetitions ([`crate::stats::log_ratio`], each figure also uncertain by its search's
//!   final step), with the drift between the two runs that the plan's cases show beyond their
//!   repetitions counted as noise too ([`crate::stats::drift_variance`]: repetitions taken back
//!   to back share the moment's conditions, two runs do not), and the p-values of all the
//!   cases so tested adjusted with Holm's method ([`crate::stats::holm`]): a change is called
//!   only where the adjusted p is below [`FAMILY_ALPHA`], so the chance that a plan's cases
//!   raise even one false alarm between two runs of one device stays near 5 % however many
//!   cases the plan has. A shift of nearly every case alike is drift to that test; [`drift`]
//!   names it, and the text says it in a CAVEAT line.
//! - **Fewer**: the absolute change must exceed the noise of both figures
//!   (|b − a| > noise(a) + noise(b)); with one or two measurements per side that is a
//!   judgement, not a test, so such a verdict is marked tentative.

use bench_model::plan::Methodology;
use serde::{Deserialize, Serialize};

use crate::model::{beyond_noise, signed_percent, Analysis, Row};
use crate::stats::{drift_variance, holm, log_ratio, student_t_two_sided, LogRatio};
use crate::text::num;

/// The family-wise error rate of the test over repetitions: the chance, for two runs of an
/// unchanged device, that any case of the plan is called improved or regressed.
pub const FAMILY_ALPHA: f64 = 0.05;

/// Repetitions per side from which a verdict is a test over them rather than the noise rule.
pub const MIN_REPETITIONS_FOR_TEST: usize = 3;

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
    /// Why the verdict is tentative, when it rests on fewer than
    /// [`MIN_REPETITIONS_FOR_TEST`] repetitions on a side and so on the noise rule:
    /// `one measurement each`, `one measurement in A`, `2 repetitions in B`, ….
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tentative: Option<String>,
    /// With enough repetitions on both sides: the t-test's p-value after Holm's adjustment over
    /// every case so tested in this comparison (a change needs it below [`FAMILY_ALPHA`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p_adjusted: Option<f64>,
}

impl CompareRow {
    /// The verdict as the table prints it: a tentative change says why (`regressed (one
    /// measurement each: tentative)`), a case without a verdict says why not.
    pub fn verdict_text(&self) -> String {
        match (&self.reason, &self.tentative, self.verdict) {
            (Some(why), _, _) => format!("{} ({why})", self.verdict.word()),
            (None, Some(t), Verdict::Improved | Verdict::Regressed) => {
                format!("{} ({t}: tentative)", self.verdict.word())
            }
            _ => self.verdict.word().into(),
        }
    }
}

/// The (case, methodology) keys of the throughput rows of either run, in order.
fn keys(a: &Analysis, b: &Analysis) -> Vec<(String, String)> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for r in a.rows.iter().chain(&b.rows) {
        let k = (r.case_id.clone(), r.methodology_label());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    keys
}

/// The row of `x` for a key.
fn find<'a>(x: &'a Analysis, (case, m): &(String, String)) -> Option<&'a Row> {
    x.rows
        .iter()
        .find(|r| &r.case_id == case && &r.methodology_label() == m)
}

/// Why two rows have no verdict, if they have none.
fn not_comparable(ra: Option<&Row>, rb: Option<&Row>) -> Option<String> {
    let pps = |r: Option<&Row>| r.and_then(|r| r.pps).map(|p| p.0);
    match (ra, rb) {
        (None, _) => Some("missing in A".to_string()),
        (_, None) => Some("missing in B".to_string()),
        (Some(x), _) if x.tester_limited => Some("tester-limited in A".into()),
        (_, Some(y)) if y.tester_limited => Some("tester-limited in B".into()),
        _ if pps(ra).is_none() || pps(rb).is_none() => Some("no figure".into()),
        _ if pps(ra) == Some(0.0) => Some("zero throughput in A".into()),
        _ => None,
    }
}

/// The cases judged over their repetitions: comparable, with at least
/// [`MIN_REPETITIONS_FOR_TEST`] on both sides; (key, their log ratio).
fn over_repetitions(a: &Analysis, b: &Analysis) -> Vec<((String, String), LogRatio)> {
    keys(a, b)
        .into_iter()
        .filter_map(|k| {
            let (ra, rb) = (find(a, &k), find(b, &k));
            if not_comparable(ra, rb).is_some() {
                return None;
            }
            let e = log_ratio_of(ra?, rb?)?;
            Some((k, e))
        })
        .collect()
}

/// B's repetitions against A's on a log scale ([`crate::stats::log_ratio`]), when both sides
/// have at least [`MIN_REPETITIONS_FOR_TEST`]; each figure is also uncertain by its search's
/// final step (a lower bound anywhere in a step of width w: variance w²/12).
fn log_ratio_of(a: &Row, b: &Row) -> Option<LogRatio> {
    if a.rep_pps.len() < MIN_REPETITIONS_FOR_TEST || b.rep_pps.len() < MIN_REPETITIONS_FOR_TEST {
        return None;
    }
    let floor = |r: &Row| r.resolution_pps.0.powi(2) / 12.0;
    let reps = |r: &Row| r.rep_pps.iter().map(|p| p.0).collect::<Vec<f64>>();
    log_ratio(&reps(a), &reps(b), floor(a), floor(b))
}

/// How the two runs differ as a whole, over the cases judged over their repetitions: the
/// drift between them beyond what the repetitions spread, and the shift of the typical case.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Drift {
    /// Cases judged over their repetitions.
    pub cases: usize,
    /// The drift (one standard deviation, percent of a figure) the verdicts count as noise;
    /// `None` with fewer than [`crate::stats::DRIFT_MIN_CASES`] cases.
    pub percent: Option<f64>,
    /// The median case's change, percent (B against A).
    pub median_shift_percent: f64,
    /// Cases that moved the median's way by more than the threshold.
    pub alike: usize,
}

impl Drift {
    /// Nearly every case moved the same way by more than the threshold (three quarters of at
    /// least [`crate::stats::DRIFT_MIN_CASES`]): to the per-case test that is drift, so it is
    /// said of the runs as a whole.
    pub fn uniform(&self) -> bool {
        self.cases >= crate::stats::DRIFT_MIN_CASES && 4 * self.alike >= 3 * self.cases
    }
}

/// The [`Drift`] between `a` and `b` (`threshold` relative, as for [`compare`]).
pub fn drift(a: &Analysis, b: &Analysis, threshold: f64) -> Drift {
    let e: Vec<LogRatio> = over_repetitions(a, b).into_iter().map(|(_, e)| e).collect();
    let mut d: Vec<f64> = e.iter().map(|e| e.d).collect();
    d.sort_by(f64::total_cmp);
    let median = match d.len() {
        0 => 0.0,
        n if n % 2 == 1 => d[n / 2],
        n => (d[n / 2 - 1] + d[n / 2]) / 2.0,
    };
    let bound = (1.0 + threshold).ln();
    Drift {
        cases: e.len(),
        percent: drift_variance(&e).map(|t2| 100.0 * (t2.sqrt().exp() - 1.0)),
        median_shift_percent: 100.0 * (median.exp() - 1.0),
        alike: d
            .iter()
            .filter(|x| x.abs() > bound && x.signum() == median.signum())
            .count(),
    }
}

/// Compares every (case, methodology) present in either run. `threshold` is relative (0.05 = 5 %).
pub fn compare(a: &Analysis, b: &Analysis, threshold: f64) -> Vec<CompareRow> {
    let tested = over_repetitions(a, b);
    let cases: Vec<LogRatio> = tested.iter().map(|(_, e)| *e).collect();
    let drift2 = drift_variance(&cases).unwrap_or(0.0);
    let p: Vec<f64> = cases
        .iter()
        .map(|e| {
            let var = e.v + drift2;
            if var > 0.0 {
                student_t_two_sided(e.d / var.sqrt(), e.df)
            } else if e.d == 0.0 {
                1.0
            } else {
                0.0
            }
        })
        .collect();
    let adjusted = holm(&p);
    let mut out = Vec::new();
    for k in keys(a, b) {
        let (ra, rb) = (find(a, &k), find(b, &k));
        let (ap, bp) = (
            ra.and_then(|r| r.pps).map(|p| p.0),
            rb.and_then(|r| r.pps).map(|p| p.0),
        );
        let (an, bn) = (
            ra.map_or(0.0, |r| r.noise_pps.0),
            rb.map_or(0.0, |r| r.noise_pps.0),
        );
        let reason = not_comparable(ra, rb);
        let mut row = CompareRow {
            case_id: k.0.clone(),
            methodology: k.1.clone(),
            a_pps: ap,
            b_pps: bp,
            a_noise: an,
            b_noise: bn,
            delta_percent: None,
            verdict: Verdict::NotComparable,
            reason,
            unit: None,
            tentative: None,
            p_adjusted: None,
        };
        if let (None, Some(x), Some(y), Some(ra), Some(rb)) = (&row.reason, ap, bp, ra, rb) {
            let rel = (y - x) / x;
            row.delta_percent = Some(100.0 * rel);
            match tested.iter().position(|(t, _)| *t == k) {
                Some(i) => {
                    let p = adjusted[i];
                    row.p_adjusted = Some(p);
                    row.verdict = if p < FAMILY_ALPHA && rel.abs() > threshold {
                        if rel > 0.0 {
                            Verdict::Improved
                        } else {
                            Verdict::Regressed
                        }
                    } else {
                        Verdict::WithinNoise
                    };
                }
                None => {
                    row.verdict = judge(x, an, y, bn, threshold).1;
                    row.tentative = Some(few_repetitions(ra.rep_pps.len(), rb.rep_pps.len()));
                }
            }
        }
        out.push(row);
    }
    out.extend(compare_connections(a, b, threshold));
    out
}

/// Why a verdict judged by the noise rule is tentative: how few measurements each side had.
fn few_repetitions(na: usize, nb: usize) -> String {
    let side = |n: usize, which: &str| match n {
        1 => format!("one measurement in {which}"),
        n => format!("{n} repetitions in {which}"),
    };
    match (na, nb) {
        (1, 1) => "one measurement each".into(),
        (a, b) if a == b => format!("{a} repetitions each"),
        (a, b) if a < MIN_REPETITIONS_FOR_TEST && b < MIN_REPETITIONS_FOR_TEST => {
            format!("{}, {}", side(a, "A"), side(b, "B"))
        }
        (a, _) if a < MIN_REPETITIONS_FOR_TEST => side(a, "A"),
        (_, b) => side(b, "B"),
    }
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
                    .filter(|r| {
                        (r.case_id.as_str(), r.methodology, at_key(r)) == (case.as_str(), m, at)
                    })
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
                // Connection searches are compared on their first repetition.
                tentative: Some("one measurement each".into()),
                p_adjusted: None,
            }
        })
        .collect()
}

/// Whether a connection row's figure is only "at least" (rows recorded before `lower_bound`
/// existed: a bracket without an upper end).
fn lower_bound(r: &crate::connections::ConnRow) -> bool {
    r.lower_bound || (!matches!(r.methodology, Methodology::NatTeardownRate) && r.upper.is_none())
}

/// The part of a connection row's key beyond case and methodology: N for throughput rows.
fn at_key(r: &crate::connections::ConnRow) -> u64 {
    if matches!(r.methodology, Methodology::NatThroughput) {
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
            a.speed_bps.0, b.speed_bps.0
        ));
    }
    if a.repetitions != b.repetitions {
        out.push(format!(
            "different repetitions ({} against {}): the noise estimates are not alike",
            a.repetitions, b.repetitions
        ));
    }
    let few = |n: u32| (n as usize) < MIN_REPETITIONS_FOR_TEST;
    if few(a.repetitions) || few(b.repetitions) {
        let each = if a.repetitions == 1 && b.repetitions == 1 {
            "one repetition per case in A and in B: every verdict compares one measurement per side"
                .to_string()
        } else {
            format!(
                "{} and {} repetitions per case in A and B: below {MIN_REPETITIONS_FOR_TEST} on a side there is no test over repetitions",
                a.repetitions, b.repetitions
            )
        };
        out.push(format!(
            "{each}, judged against the noise each figure carries (a search's final bracket, iperf3's per-interval spread), so an \"improved\" or \"regressed\" there is tentative; run both with repetitions >= {MIN_REPETITIONS_FOR_TEST} for a test whose false alarms over the whole plan stay below {} %",
            FAMILY_ALPHA * 100.0
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

/// What the runs' [`Drift`] means for the verdicts, one sentence each: drift counted as noise,
/// and a shift of nearly every case alike, which the per-case verdicts cannot call.
pub fn drift_caveats(d: &Drift, threshold: f64) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(p) = d.percent.filter(|p| *p >= 0.5) {
        out.push(format!(
            "the cases moved between the runs by about ±{p:.0} % more than their repetitions spread (the median over {} cases): the runs' conditions differ, as on a shared or busy machine, and the verdicts count that drift as noise",
            d.cases
        ));
    }
    if d.uniform() && d.median_shift_percent.abs() > threshold * 100.0 {
        out.push(format!(
            "B is {} against A in {} of {} cases alike: a change of everything (the build, the kernel, the device) and a change of the machine's conditions between the runs look the same here, and the per-case verdicts count such a shift as drift; run A again beside B, or compare on a quiet machine",
            signed_percent(d.median_shift_percent),
            d.alike,
            d.cases
        ));
    }
    out
}

/// The comparison as a text table with a one-line tally.
pub fn compare_text(a: &Analysis, b: &Analysis, rows: &[CompareRow], threshold: f64) -> String {
    let mut o = format!(
        "A: {} (wirerate {}, started {})\nB: {} (wirerate {}, started {})\n",
        a.plan_name, a.version, a.started_unix, b.plan_name, b.version, b.started_unix,
    );
    let tested = rows.iter().filter(|r| r.p_adjusted.is_some()).count();
    let judged = rows.iter().filter(|r| r.tentative.is_some()).count();
    let d = drift(a, b, threshold);
    if tested > 0 {
        o.push_str(&format!(
            "rule ({tested} case{} with >= {MIN_REPETITIONS_FOR_TEST} repetitions per side): changed when |Δ| > {} % and a t-test over the repetitions, with the runs' drift ({}) as noise too, Holm-adjusted over those {tested}, gives p < {FAMILY_ALPHA}\n",
            if tested == 1 { "" } else { "s" },
            threshold * 100.0,
            match d.percent {
                Some(p) => format!("±{p:.1} %"),
                None => format!(
                    "not estimated: fewer than {} cases",
                    crate::stats::DRIFT_MIN_CASES
                ),
            }
        ));
    }
    if judged > 0 || tested == 0 {
        o.push_str(&format!(
            "rule{}: changed when |Δ| > {} % and |B − A| > noise(A) + noise(B); tentative\n",
            if judged > 0 {
                format!(
                    " ({judged} case{} with fewer repetitions)",
                    if judged == 1 { "" } else { "s" }
                )
            } else {
                String::new()
            },
            threshold * 100.0
        ));
    }
    for c in caveats(a, b)
        .into_iter()
        .chain(drift_caveats(&d, threshold))
    {
        o.push_str(&format!("CAVEAT: {c}\n"));
    }
    o.push('\n');
    let mut head = vec!["case", "A pps", "±", "B pps", "±", "Δ"];
    if tested > 0 {
        head.push("p (Holm)");
    }
    head.push("verdict");
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
        let mut line = vec![
            case,
            r.a_pps.map(fmt).unwrap_or_else(|| "-".into()),
            fmt(r.a_noise),
            r.b_pps.map(fmt).unwrap_or_else(|| "-".into()),
            fmt(r.b_noise),
            r.delta_percent
                .map(signed_percent)
                .unwrap_or_else(|| "-".into()),
        ];
        if tested > 0 {
            line.push(r.p_adjusted.map_or_else(|| "-".into(), p_cell));
        }
        line.push(r.verdict_text());
        table.push(line);
    }
    let last = head.len() - 1;
    let mut w = vec![0usize; head.len()];
    for row in &table {
        for (i, c) in row.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    for row in &table {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate() {
            let pad = " ".repeat(w[i] - c.chars().count());
            if i == 0 || i == last {
                line.push_str(&format!("{c}{pad}"));
            } else {
                line.push_str(&format!("{pad}{c}"));
            }
            if i + 1 < row.len() {
                line.push_str("  ");
            }
        }
        o.push_str(line.trim_end());
        o.push('\n');
    }
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    let tentative = rows
        .iter()
        .filter(|r| {
            r.tentative.is_some() && matches!(r.verdict, Verdict::Improved | Verdict::Regressed)
        })
        .count();
    o.push_str(&format!(
        "\n{} improved, {} regressed{}, {} within noise, {} not comparable\n",
        count(Verdict::Improved),
        count(Verdict::Regressed),
        if tentative > 0 {
            format!(" ({tentative} of these tentative)")
        } else {
            String::new()
        },
        count(Verdict::WithinNoise),
        count(Verdict::NotComparable)
    ));
    o
}

/// An adjusted p-value as the table prints it: three decimals, `<0.001` below.
fn p_cell(p: f64) -> String {
    if p < 0.001 {
        "<0.001".into()
    } else {
        format!("{p:.3}")
    }
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
