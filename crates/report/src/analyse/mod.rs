//! From a run's records to the figures every exporter prints: one [`Analysis`]
//! ([`crate::model`] has its types).
//!
//! One job per module: `index` (the records by search), `dims` (each case's dimensions, with
//! what its trials recorded), `completeness` (what is missing), [`crate::analyse::udp_rows`] and
//! `tcp_rows` (the results table), `notes` (what a row or the run carries beside its figures),
//! `curves` (loss curves, latency, back-to-back), `findings` (findings and conclusions),
//! `switch_tables` (MSS × offload, fast path off/on); this module puts them together and
//! orders the rows. Facts a run recorded are read as recorded; what older runs lack comes from
//! [`crate::compat`].

use std::collections::{BTreeMap, BTreeSet};

use bench_model::plan::Methodology;

use crate::model::{mean, Analysis, Completeness, Dims, RunInput, DEFAULT_SPEED};

mod completeness;
mod curves;
mod dims;
pub(crate) mod findings;
mod index;
mod notes;
mod switch_tables;
mod tcp_rows;
pub(crate) mod udp_rows;

use dims::CaseDims;
use findings::{conclusions, findings};
use index::Index;
use notes::{lan_gap_notes, session_drop_notes};
use switch_tables::switch_tables;

/// Methodologies whose result is one rate per case: a row of the results table (throughput
/// searches, and the forwarding rate at the maximum offered load).
fn is_throughput(m: Methodology) -> bool {
    matches!(
        m,
        Methodology::Rfc2544Throughput | Methodology::MultiGoal | Methodology::ForwardingRate
    )
}

/// Analyses a run. Never fails: what cannot be read is reported in [`Analysis::completeness`].
pub fn analyse(input: RunInput<'_>) -> Analysis {
    let info = input.info;
    let mut completeness = Completeness {
        torn_tail: input.torn_tail,
        ..Completeness::default()
    };
    let mut notes = Vec::new();
    let (run, plan_error) = crate::compat::run_facts(info);
    if let Some(e) = plan_error {
        completeness.plan_error = Some(e);
        notes.push(format!(
            "the plan in run.json could not be read; dimensions come from case ids and the link speed is assumed to be {} Gb/s",
            DEFAULT_SPEED / 1e9
        ));
    }
    let (cases, speed, reps) = (&run.cases, run.speed_bps, run.repetitions);
    let description = run.description.clone();
    let index = Index::of(input.records);
    let mut dims = CaseDims::new(cases, &index.udp_facts);
    let mut profiles: Vec<String> = run.profiles.clone();

    // Every trial, superseded ones too: a session that went down is a fact about the device
    // even when the tester also fell behind in that trial and measured it again.
    notes.extend(session_drop_notes(input.records.iter().filter_map(
        |r| match r {
            bench_model::results::Record::Trial(t) => Some(t),
            _ => None,
        },
    )));
    notes.extend(lan_gap_notes(input.records.iter().filter_map(
        |r| match r {
            bench_model::results::Record::Trial(t) => Some(t),
            _ => None,
        },
    )));
    notes.extend(input.stats.iter().filter_map(|s| s.hook_warning.clone()));
    let superseded = index.superseded;
    if superseded > 0 {
        notes.push(format!(
            "{superseded} trial{} measured again because the tester fell behind its schedule during {} (frames slipped, or less offered than asked); kept in trials.jsonl as superseded, not used for any figure",
            if superseded == 1 { " was" } else { "s were" },
            if superseded == 1 { "it" } else { "them" }
        ));
    }

    let connections = crate::connections::rows(&index.conn_trials, &index.conn_done);
    completeness::check(&mut completeness, &index, cases, reps);

    // DUT CPU and power per case.
    let mut cpu: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    let mut power: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for s in input.stats {
        if let Some(p) = s.dut_cpu_percent {
            cpu.entry(s.case_id.as_str()).or_default().push(p);
        }
        if let Some(w) = s.dut_power_watts {
            power.entry(s.case_id.as_str()).or_default().push(w);
        }
    }

    // Throughput rows, keyed by (case, methodology).
    let mut keys: BTreeSet<(String, Methodology)> = BTreeSet::new();
    for (c, _, m) in index.done.keys().chain(index.trials.keys()) {
        if is_throughput(*m) || *m == Methodology::Iperf3 {
            keys.insert((c.clone(), *m));
        }
    }
    let mut rows = Vec::new();
    let mut tcp_timestamps_note = false;
    for (case_id, m) in &keys {
        let d = dims.get(case_id);
        let dut_cpu_percent = cpu.get(case_id.as_str()).and_then(|v| mean(v));
        let dut_power_watts = power.get(case_id.as_str()).and_then(|v| mean(v));
        if is_throughput(*m) {
            let records = crate::analyse::udp_rows::Records {
                trials: &index.trials,
                done: &index.done,
                ceiling: &index.ceiling,
                udp_facts: &index.udp_facts,
                line_pps: &index.line_pps,
                speed,
                reps,
            };
            let samples = crate::analyse::udp_rows::CaseSamples {
                dut_cpu_percent,
                dut_power_watts,
            };
            rows.extend(crate::analyse::udp_rows::rows(
                &records, case_id, *m, d, samples, &mut notes,
            ));
        } else {
            let samples = crate::analyse::udp_rows::CaseSamples {
                dut_cpu_percent,
                dut_power_watts,
            };
            if let Some(r) = tcp_rows::row(&index, case_id, *m, d, samples, speed, reps, &mut notes)
            {
                tcp_timestamps_note = true;
                rows.push(r);
            }
        }
    }
    // A figure above line rate did not cross a wire of that speed: labelled, never `ok`.
    let mut above = BTreeSet::new();
    for r in &mut rows {
        r.above_line = r
            .percent
            .and_then(|p| bench_model::port_link::AboveLine::of(p, &run.links));
        above.extend(r.above_line);
    }
    notes.extend(above.into_iter().map(|a| a.note().to_string()));
    if tcp_timestamps_note {
        notes.push(
            "TCP frame rates assume full-size segments with TCP timestamps (Linux's default): payload = MSS − 12 B".into(),
        );
    }

    // Loss curves, latency and back-to-back bursts.
    let curves::Curves {
        mut loss_curves,
        mut latency,
        mut back_to_back,
    } = curves::of(&index, &mut dims, &rows, speed);

    let without = latency
        .iter()
        .filter(|l| l.percentiles_us.is_none())
        .count();
    if without > 0 {
        notes.push(format!(
            "latency: {without} of {} cases were recorded without percentiles (trials written before wirerate kept them); they show min, mean and max only",
            latency.len()
        ));
    }

    // Profiles seen but not in the plan.
    for r in &rows {
        if !profiles.contains(&r.dims.profile) {
            profiles.push(r.dims.profile.clone());
        }
    }
    let order = |p: &str| profiles.iter().position(|x| x == p).unwrap_or(usize::MAX);
    let sort_key = |d: &Dims| {
        (
            d.protocol,
            d.ip,
            // Encapsulations in the order of their spelling, as reports have listed them.
            d.encap.to_string(),
            order(&d.profile),
            // The sizes in order, then the IMIX.
            d.is_imix(),
            d.frame_bytes(),
            d.sessions,
            d.mss,
            d.offload,
            d.fastpath,
            d.vars.clone(),
        )
    };
    rows.sort_by(|a, b| {
        sort_key(&a.dims)
            .cmp(&sort_key(&b.dims))
            // A case's methodologies in the order of their names, as reports have listed them.
            .then(a.methodology.name().cmp(b.methodology.name()))
            .then(
                a.loss_goal
                    .unwrap_or(0.0)
                    .total_cmp(&b.loss_goal.unwrap_or(0.0)),
            )
    });
    loss_curves.sort_by_key(|a| sort_key(&a.dims));
    latency.sort_by_key(|a| sort_key(&a.dims));
    back_to_back.sort_by_key(|a| sort_key(&a.dims));

    let baseline = profiles
        .iter()
        .find(|p| rows.iter().any(|r| &r.dims.profile == *p))
        .cloned();
    let findings = baseline
        .as_deref()
        .map(|b| findings(&rows, b))
        .unwrap_or_default();
    let conclusions = baseline
        .as_deref()
        .map(|b| conclusions(&rows, b))
        .unwrap_or_default();
    let switch_tables = switch_tables(&rows, &profiles);
    if reps < 2 && !findings.is_empty() {
        notes.push(
            "one repetition per case: there is no spread over repetitions, so findings judge each difference against what one measurement is sure of: a search's final bracket (its result lies between the bracket's bounds) or the spread of an iperf3 run's per-interval rates; set repetitions >= 2 for the spread over repetitions".into(),
        );
    }
    if rows.iter().any(|r| r.dut_cpu_percent.is_some()) {
        notes.push(
            "DUT CPU: the lab DUT's busy share of its CPU over the trials at each search's result (its lower bound) or over each iperf3 run, mean over repetitions; for DUTs without lab counters, the mean of the case's vmstat/proc-stat hooks".into(),
        );
    }

    let mtu_done: Vec<_> = index
        .done
        .iter()
        .filter_map(|((c, r, m), res)| res.map(|res| (c.clone(), *r, *m, res)))
        .collect();
    let mtu = crate::mtu::rows(&run.ports, &mtu_done, &mut |id| dims.get(id));

    Analysis {
        plan_name: info.plan_name.clone(),
        description,
        version: info.version.clone(),
        started_unix: info.started_unix,
        host: info.host.clone(),
        speed_bps: speed,
        repetitions: reps,
        profiles,
        baseline,
        rows,
        loss_curves,
        latency,
        back_to_back,
        connections,
        mtu,
        findings,
        conclusions,
        switch_tables,
        completeness,
        notes,
    }
}
