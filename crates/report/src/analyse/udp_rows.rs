//! The results table's rows of the UDP searches (RFC 2544 throughput, multi-goal, forwarding
//! rate at overload): one row per case and methodology, and for a multi-goal search one per
//! loss goal, since a user who asks for NDR and PDR wants to see both.
//!
//! Part of [`crate::analyse`], which indexes the records and calls [`rows`] once
//! per (case, methodology).

use std::collections::BTreeMap;

use bench_model::plan::Methodology;
use bench_model::results::{TrialRecord, UdpFacts};
use bench_model::search::{Finding, GoalResult, LineFraction, SearchResult, Status};
use wire::units::{BitsPerSec, Pps};

use super::notes::{cpu_at_load, engines_of, invalid_of, loss_accounting};
use crate::model::{direction_figures, half_spread, label, mean, Dims, NoiseBasis, Row};
use crate::sporadic::{self, SporadicLoss};

/// Trials and results of one repetition of one search: (case, repetition, methodology).
pub(crate) type SearchKey = (String, u32, Methodology);

/// What the rows are built from: the run's records, indexed by search.
pub(crate) struct Records<'a> {
    /// Each search's trials (superseded ones left out).
    pub trials: &'a BTreeMap<SearchKey, Vec<&'a TrialRecord>>,
    /// Each finished search's result (`None`: finished without a load result).
    pub done: &'a BTreeMap<SearchKey, Option<&'a SearchResult>>,
    /// Results the runner found within 10 % of the tester's calibrated ceiling: pps per
    /// direction.
    pub ceiling: &'a BTreeMap<(String, Methodology), Pps>,
    /// What each case's trials recorded about their frames and path, with the 100 % their
    /// loads are fractions of (absent in runs recorded before eb18b68).
    pub udp_facts: &'a BTreeMap<String, &'a UdpFacts>,
    /// For runs without those facts ([`crate::compat::udp_line`]): the 100 % per direction
    /// each search's loads were fractions of, as the runner recorded it in its `done` record
    /// (`MethodologyDone::line_pps`, runs from 3fcea2d to eb18b68), and the reference link speed.
    pub line_pps: &'a BTreeMap<(String, Methodology), Pps>,
    /// See `line_pps`.
    pub speed: BitsPerSec,
    /// Repetitions planned.
    pub reps: u32,
}

/// The DUT's CPU and power over the case, from its hooks (when the trials did not record them).
#[derive(Clone, Copy, Default)]
pub(crate) struct CaseSamples {
    pub dut_cpu_percent: Option<f64>,
    pub dut_power_watts: Option<f64>,
}

/// The rows of one UDP search methodology for one case: one, or one per loss goal of a
/// multi-goal search. Empty when the case has no frame size or the size does not fit its
/// path (a note says so).
pub(crate) fn rows(
    rec: &Records,
    case_id: &str,
    m: Methodology,
    mut dims: Dims,
    samples: CaseSamples,
    notes: &mut Vec<String>,
) -> Vec<Row> {
    let Some(frame) = dims.frame() else {
        return Vec::new();
    };
    let mine = |(c, _, mm): &&SearchKey| c == case_id && *mm == m;
    // How many directions the trials really ran (records before `directions` existed
    // read as 1); that, not the plan, decides whether rates are sums of two.
    let recorded = rec
        .trials
        .iter()
        .filter(|(k, _)| mine(k))
        .flat_map(|(_, ts)| ts.iter().map(|t| t.outcome.directions))
        .max();
    if let Some(n) = recorded {
        if dims.bidirectional && n < 2 {
            notes.push(format!(
                "{case_id}: the plan asks for both directions, but its trials ran one way; shown as one-way figures"
            ));
        }
        dims.bidirectional = n >= 2;
    }
    // The loads are fractions of the 100 % the runner offered: the trials recorded it with
    // the path it was computed for (older runs: crate::compat).
    let facts = rec.udp_facts.get(case_id);
    let line = match facts {
        Some(f) => f.line.clone(),
        None => {
            let recorded = rec.line_pps.get(&(case_id.to_string(), m)).copied();
            match crate::compat::udp_line(rec.speed, recorded, &dims, &frame, (case_id, m), notes) {
                Some(l) => l,
                None => return Vec::new(),
            }
        }
    };
    let (max_pps, max_l2) = line.times(if dims.bidirectional { 2 } else { 1 });
    let limits = Limits {
        max_pps: max_pps.0,
        max_l2: max_l2.0,
        bottleneck: line.bottleneck,
        encap: facts.map_or(dims.encap, |f| f.encap),
    };
    // This case's trials (every repetition), for the engine and loss columns.
    let case_trials: Vec<&TrialRecord> = rec
        .trials
        .iter()
        .filter(|(k, _)| mine(k))
        .flat_map(|(_, ts)| ts.iter().copied())
        .collect();
    note_capped_searches(rec, case_id, m, notes);
    let invalid = invalid_of(case_trials.iter().copied());
    if !invalid.is_zero() {
        notes.push(format!(
            "{case_id}: {} frame{} carrying a test signature {} not counted as received because {} not valid for {} stream ({}); they count as lost: the DUT corrupted, fragmented, re-encapsulated or misdirected them, or something forged them (engine::validate)",
            invalid.total(),
            if invalid.total() == 1 { "" } else { "s" },
            if invalid.total() == 1 { "was" } else { "were" },
            if invalid.total() == 1 { "it was" } else { "they were" },
            if invalid.total() == 1 { "its" } else { "their" },
            invalid.describe()
        ));
    }
    // A multi-goal search reports every goal; the others have one figure.
    let goal_count = if m == Methodology::MultiGoal {
        rec.done
            .iter()
            .filter(|(k, _)| mine(k))
            .filter_map(|(_, res)| match res.map(|r| &r.finding) {
                Some(Finding::Throughput { goals }) => Some(goals.len()),
                _ => None,
            })
            .max()
            .unwrap_or(1)
    } else {
        1
    };
    let mut out = Vec::new();
    for goal in 0..goal_count.max(1) {
        let f = figure(rec, case_id, m, goal, &dims, &limits);
        if f.irregular > 0 {
            notes.push(format!(
                "{case_id} ({}): {} repetition(s) with an irregular result (RFC 9971: the maximum load met the loss goal or the minimum load missed it; the figure is a bound, not a bracket)",
                label(m.name(), f.loss_goal),
                f.irregular
            ));
        }
        if let Some(s) = f.sporadic.as_ref().filter(|s| s.well_below_capacity()) {
            notes.push(format!(
                "{case_id} ({}): {}",
                label(m.name(), f.loss_goal),
                s.describe()
            ));
        }
        let mut r = row(
            case_id,
            m,
            &dims,
            &limits,
            f,
            samples,
            &case_trials,
            &invalid,
        );
        r.repetitions_planned = rec.reps;
        out.push(r);
    }
    out
}

/// The case's theoretical maximum on its path.
struct Limits {
    max_pps: f64,
    max_l2: f64,
    bottleneck: String,
    /// The path's encapsulation, for the charts' theoretical curves.
    encap: wire::encap::EncapSpec,
}

/// One figure (a goal of a search, over its repetitions) before it becomes a row.
struct Figure<'a> {
    /// The goal's loss ratio, for multi-goal rows.
    loss_goal: Option<f64>,
    rep_pps: Vec<f64>,
    noise_pps: f64,
    noise_basis: NoiseBasis,
    /// The mean width of the final brackets (the search's resolution), frames/s.
    resolution_pps: f64,
    /// Percent of line rate the tester reached, when it (not the DUT) set the pace.
    limited: Option<f64>,
    conditional: Vec<f64>,
    irregular: usize,
    rep_cpu: Vec<f64>,
    /// Each repetition's result load and its trials, for the per-direction figures.
    result_trials: Vec<Option<&'a Vec<&'a TrialRecord>>>,
    result_loads: Vec<f64>,
    sporadic: Option<SporadicLoss>,
}

/// Goal `goal` of `m`'s searches of `case_id`, over the repetitions.
fn figure<'a>(
    rec: &Records<'a>,
    case_id: &str,
    m: Methodology,
    goal: usize,
    dims: &Dims,
    limits: &Limits,
) -> Figure<'a> {
    let max_pps = limits.max_pps;
    let directions = if dims.bidirectional { 2.0 } else { 1.0 };
    let mut f = Figure {
        loss_goal: None,
        rep_pps: Vec::new(),
        noise_pps: 0.0,
        noise_basis: NoiseBasis::None,
        resolution_pps: 0.0,
        limited: None,
        conditional: Vec::new(),
        irregular: 0,
        rep_cpu: Vec::new(),
        result_trials: Vec::new(),
        result_loads: Vec::new(),
        sporadic: None,
    };
    let mut widths = Vec::new();
    let mut single_bracket = None;
    // Forwarding rate: every trial's rate (all repetitions), for its noise.
    let mut trial_pps = Vec::new();
    for (key, res) in rec.done.iter() {
        let (c, _, mm) = key;
        if c != case_id || *mm != m {
            continue;
        }
        let Some(res) = res else { continue };
        let these = rec.trials.get(key);
        // The goal's name, also for a search the tester stopped (its row says so per goal).
        if let (Methodology::MultiGoal, Finding::Throughput { goals }) = (m, &res.finding) {
            if let Some(g) = goals.get(goal) {
                f.loss_goal = Some(g.loss_ratio);
            }
        }
        match (&res.status, &res.finding) {
            (Status::TesterLimited { achieved, .. }, _) => {
                f.limited = Some(achieved.percent());
            }
            (Status::Complete, Finding::Throughput { goals }) => {
                let Some(g) = goals.get(goal) else { continue };
                if g.tester_bound {
                    // The tester could not keep the goal's upper bound: its lower bound is
                    // what the tester reached with the DUT passing, no DUT figure.
                    f.limited = Some(g.lower.map_or(0.0, |l| l.percent()));
                    continue;
                }
                let lower = g.lower.map_or(0.0, |l| l.0);
                f.rep_pps.push(lower * max_pps);
                f.result_trials.push(these);
                f.result_loads.push(lower);
                if let Some(c) = g.lower.and_then(|l| cpu_at_load(these, l.0)) {
                    f.rep_cpu.push(c);
                }
                // One repetition: the whole bracket (0 when the maximum load met the goal:
                // the figure is then the maximum itself).
                single_bracket = Some(g.upper.map_or(0.0, |u| (u.0 - lower).max(0.0)) * max_pps);
                if let Some(c) = g.conditional_throughput {
                    f.conditional.push(c.0 * max_pps);
                }
                if g.regular == Some(false) {
                    f.irregular += 1;
                }
                if let Some(u) = g.upper {
                    widths.push((u.0 - lower) * max_pps);
                }
                if let Some(s) = these.and_then(|ts| sporadic_of(ts, g)) {
                    // The worst repetition speaks for the figure.
                    if f.sporadic.as_ref().is_none_or(|o| s.spread() > o.spread()) {
                        f.sporadic = Some(s);
                    }
                }
            }
            (
                Status::Complete,
                Finding::ForwardingRate {
                    load,
                    rates,
                    mean: Some(m_rate),
                },
            ) if goal == 0 => {
                f.rep_pps.push(m_rate.0 * max_pps);
                trial_pps.extend(rates.iter().map(|r| r.0 * max_pps));
                f.result_trials.push(these);
                f.result_loads.push(load.0);
                if let Some(c) = cpu_at_load(these, load.0) {
                    f.rep_cpu.push(c);
                }
            }
            _ => {}
        }
    }
    if f.limited.is_none() {
        if let Some(p) = rec.ceiling.get(&(case_id.to_string(), m)) {
            // The calibrated ceiling is per direction.
            f.limited = Some(100.0 * p.0 * directions / max_pps);
        }
    }
    (f.noise_pps, f.noise_basis) = match (f.rep_pps.len(), single_bracket) {
        // A forwarding rate has no bracket: its trials at the one load are the noise.
        _ if m == Methodology::ForwardingRate => {
            if trial_pps.len() >= 2 {
                (half_spread(&trial_pps), NoiseBasis::Trials)
            } else {
                (0.0, NoiseBasis::None)
            }
        }
        (n, _) if n >= 2 => (
            half_spread(&f.rep_pps) + mean(&widths).unwrap_or(0.0) / 2.0,
            NoiseBasis::Repetitions,
        ),
        (1, Some(w)) if w.is_finite() => (w, NoiseBasis::SearchBracket),
        _ => (mean(&widths).unwrap_or(0.0) / 2.0, NoiseBasis::None),
    };
    f.resolution_pps = mean(&widths).unwrap_or(0.0);
    // Sporadic loss makes the figure as uncertain as the range its trials contradict
    // themselves over, when that is wider than what else measured its noise (and only then
    // is it worth a note).
    let range = f.sporadic.as_ref().map_or(0.0, |s| s.spread() * max_pps);
    if range > f.noise_pps && !f.rep_pps.is_empty() {
        f.noise_pps = range;
        f.noise_basis = NoiseBasis::SporadicLoss;
    } else {
        f.sporadic = None;
    }
    f
}

/// The sporadic loss `g`'s result rests on, from one repetition's trials.
fn sporadic_of(trials: &[&TrialRecord], g: &GoalResult) -> Option<SporadicLoss> {
    let lower = g.lower.map_or(0.0, |l| l.0);
    let points = trials
        .iter()
        .filter(|t| !t.tester_limited && !t.request.latency && t.request.burst_frames.is_none())
        .map(|t| sporadic::Point {
            offered: t.outcome.offered,
            lost: t.outcome.lost,
            sent: t.outcome.received + t.outcome.lost,
            catch_up: t.engine.as_ref().map_or(0, |e| e.max_catch_up),
            // The tester's refusals and the lab DUT's rx_dropped count the same frames on a
            // veth (the trials of the small lab check read 76 and 76): the larger, not the sum.
            dut_port_drops: t.engine.as_ref().map_or(0, |e| {
                e.refused_by_dut.max(e.dut.map_or(0, |d| d.ingress_drops))
            }),
        });
    sporadic::find(points, g.loss_ratio, LineFraction(lower))
}

#[allow(clippy::too_many_arguments)]
fn row(
    case_id: &str,
    m: Methodology,
    dims: &Dims,
    limits: &Limits,
    f: Figure,
    samples: CaseSamples,
    case_trials: &[&TrialRecord],
    invalid: &bench_model::results::InvalidCounts,
) -> Row {
    let directions: u8 = if dims.bidirectional { 2 } else { 1 };
    // An IMIX row's frame is the mix's mean (7:4:1), as its line rate counts it.
    let frame_len = dims.frame().map_or(0.0, |f| f.mean(dims.ip));
    let pps = mean(&f.rep_pps);
    let limited = f.limited;
    let per_direction = if dims.bidirectional && limited.is_none() {
        direction_figures(
            &f.result_trials,
            &f.result_loads,
            limits.max_pps / f64::from(directions),
            frame_len,
        )
    } else {
        Vec::new()
    };
    let accounted = loss_accounting(case_trials.iter().copied());
    let dut = |v: Option<f64>| if limited.is_some() { None } else { v };
    Row {
        case_id: case_id.to_string(),
        dims: dims.clone(),
        methodology: m,
        loss_goal: f.loss_goal,
        sporadic_loss: f.sporadic.as_ref().is_some_and(|s| s.well_below_capacity()),
        repetitions: f.rep_pps.len(),
        repetitions_planned: 0, // set by the caller, which knows the plan
        directions,
        frame_len,
        pps: dut(pps).map(Pps),
        l2_bps: dut(pps.map(|p| p * frame_len * 8.0)).map(BitsPerSec),
        l4_bps: None,
        noise_pps: Pps(f.noise_pps),
        noise_basis: f.noise_basis,
        resolution_pps: Pps(f.resolution_pps),
        rep_pps: f.rep_pps.into_iter().map(Pps).collect(),
        max_pps: Pps(limits.max_pps),
        max_l2_bps: BitsPerSec(limits.max_l2),
        bottleneck: limits.bottleneck.clone(),
        path_encap: Some(limits.encap),
        percent: dut(pps.map(|p| 100.0 * p / limits.max_pps)),
        tester_limited: limited.is_some(),
        tester_reached_percent: limited,
        // The lab DUT's CPU at each repetition's result; else the case's sampler.
        dut_cpu_percent: mean(&f.rep_cpu).or(samples.dut_cpu_percent),
        dut_power_watts: samples.dut_power_watts,
        per_direction,
        engine: engines_of(case_trials.iter().copied()),
        trial_frames_lost: accounted.0,
        dut_ingress_drops: accounted.1,
        trial_frames_invalid: (!invalid.is_zero()).then(|| invalid.total()),
        conditional_pps: dut(mean(&f.conditional)).map(Pps),
        irregular_repetitions: f.irregular,
        above_line: None,
    }
}

/// A search stopped by its time cap has brackets, not a figure: a note gives them.
fn note_capped_searches(rec: &Records, case_id: &str, m: Methodology, notes: &mut Vec<String>) {
    for ((c, rep, mm), res) in rec.done.iter() {
        if c != case_id || *mm != m {
            continue;
        }
        let Some(SearchResult {
            status: Status::TimeCapped { cap },
            finding: Finding::Throughput { goals },
            ..
        }) = res
        else {
            continue;
        };
        let b =
            |x: Option<LineFraction>| x.map_or("–".into(), |x| format!("{:.3} %", x.percent()));
        let brackets: Vec<String> = goals
            .iter()
            .map(|g| {
                format!(
                    "loss {} %: [{}, {}]",
                    g.loss_ratio * 100.0,
                    b(g.lower),
                    b(g.upper)
                )
            })
            .collect();
        notes.push(format!(
            "{case_id} ({}, repetition {rep}): stopped at the search-time cap of {} s with these brackets, not counted as a DUT figure: {}",
            m.name(),
            cap.as_secs_f64(),
            brackets.join("; ")
        ));
    }
}
