//! The connection methodologies (RFC 9693): two-phase trials on the lab DUT's table.

use std::time::Duration;

use crate::plan::{Case, Methodology};
use crate::results::{ConnDone, ConnTrialRecord, Record, TrialKey};

use super::*;

/// A connection methodology (RFC 9693) on the lab DUT: each trial empties the DUT's table,
/// runs the two phases ([`Testbed::conn_trial`]) and is recorded before the search sees it;
/// `--resume` replays the recorded trials into a fresh search.
pub(super) fn run_conn(
    ctx: &mut Ctx,
    case: &Case,
    rep: u32,
    m: Methodology,
) -> Result<(), RunError> {
    let plan = ctx.plan;
    let mut search = plan
        .conn_search(case, m)
        .ok_or_else(|| failed(format!("no search for {} in case {}", m.name(), case.id)))?;
    let table_size = plan.table_size(case);
    let recorded = ctx.resume.recorded_conn(&case.id, rep, m);
    let mut next = crate::search::replay_conn(search.as_mut(), &recorded).map_err(|e| {
        failed(format!(
            "{} rep {rep} {}: {e}; start a new run instead of --resume",
            case.id,
            m.name()
        ))
    })?;
    let mut trial_index = recorded.len() as u32;
    let mut stalls_retried = 0u32;
    let mut last_n = None;
    while let Some(trial) = next {
        if ctx.stopped() {
            return Err(RunError::Interrupted);
        }
        // `nat-throughput` is one bisection per N: each N gets its own re-measurements.
        if m == Methodology::NatThroughput && last_n != Some(trial.connections) {
            stalls_retried = 0;
        }
        last_n = Some(trial.connections);
        let res = ctx.bed.conn_trial(
            case,
            &trial,
            table_size,
            crate::trial::engine_backend(ctx.plan.run.backend),
            ctx.opts.stop,
        );
        if ctx.stopped() {
            return Err(RunError::Interrupted);
        }
        let (outcome, phases, dut) = match res {
            Ok(x) => x,
            Err(e) => {
                let msg = format!("{} rep {rep} {}: {e}", case.id, m.name());
                ctx.note(format!(
                    "FAILED {msg} (not marked done; --resume retries it)"
                ));
                ctx.summary.failures.push(msg);
                return Ok(());
            }
        };
        // A preliminary phase whose sender stalled and then handed the DUT the frames due in
        // the meantime at once: the DUT's port refused part of that burst, which says nothing
        // about the asked rate (2026-11-26: stalls of 150–970 ms at load 7.5, 28–585
        // connections refused, napt's capacity read as 3,415 instead of 6,000). Its average
        // rate hides it; the lateness and the refusals show it.
        let burst = phases.preliminary_refused_by_dut > 0
            && phases.preliminary_max_late_ns > CONN_STALL.as_nanos() as u64;
        // Frames the tester's own receive rings dropped (a receiver not scheduled in time):
        // connections the tester lost, not the DUT (2026-11-26, load 11: 120 of 4,000 replies
        // lost with the DUT's ports dropping none).
        let rx_drops = phases.tester_rx_drops > 0 && !outcome.passed();
        // Preliminary frames the DUT forwarded that the responder's port refused (its receive
        // ring full: the DUT's egress tx_dropped) or that the tester's receive backlog
        // dropped: connections the DUT established and the tester did not learn. The XDP
        // learner has no user-space ring to drop, so these are its only tester losses.
        let port_drops = dut
            .and_then(|d| d.ports)
            .map_or(0, |p| p.egress_drops + p.tester_backlog_drops);
        let refused_by_tester = port_drops > 0 && !outcome.passed();
        let tester_limited = outcome.is_tester_limited(plan.run.tester_tolerance)
            || burst
            || rx_drops
            || refused_by_tester;
        // As for the load searches: a trial the tester could not pace is measured again, a
        // few times per search, before the search is allowed to stop tester-limited. A
        // `nat-throughput` load is one second of both directions at once from the one tester
        // CPU: on a shared machine it misses its rate by a percent or more in about one trial
        // of six at the rates that overload the lab DUT (docs/engine.md, "The NAT load on
        // XDP"), so it gets twice the re-measurements, per N.
        let retries = if m == Methodology::NatThroughput {
            2 * MAX_STALL_RETRIES
        } else {
            MAX_STALL_RETRIES
        };
        // A `nat-throughput` load that lost frames after sending every one is the DUT's
        // failure however its rate reads (the search takes it so): nothing to measure again.
        let dut_loss = outcome
            .load
            .zip(trial.load_frames())
            .is_some_and(|(l, f)| outcome.passed() && l.loss_is_the_duts(f));
        let superseded = tester_limited && !dut_loss && stalls_retried < retries;
        let rec = ConnTrialRecord {
            key: TrialKey {
                case_id: case.id.clone(),
                repetition: rep,
                methodology: m,
                index: trial_index,
            },
            request: trial,
            outcome,
            tester_limited,
            phases: phases.clone(),
            dut,
            superseded,
            finished_unix_ms: now_ms(),
        };
        ctx.append(&Record::ConnTrial(rec.clone()))?;
        if superseded {
            stalls_retried += 1;
            let why = match outcome.load {
                _ if rx_drops && !burst => format!(
                    "the tester's receive rings dropped {} frames",
                    phases.tester_rx_drops
                ),
                _ if refused_by_tester && !burst => format!(
                    "the responder's port refused or its backlog dropped {port_drops} preliminary frames the DUT forwarded",
                ),
                _ if burst => format!(
                    "the tester's sender stalled {:.0} ms and the DUT's port refused {} of the frames it then sent at once",
                    phases.preliminary_max_late_ns as f64 / 1e6,
                    phases.preliminary_refused_by_dut
                ),
                Some(l) if l.is_tester_limited(plan.run.tester_tolerance) => format!(
                    "the tester offered {:.0} and {:.0} frames/s of {:.0} each way, its receive rings dropped {}",
                    l.forward_pps.0, l.reverse_pps.0, l.intended_pps.0, l.tester_drops
                ),
                _ => format!(
                    "the tester offered {:.0}/s of {:.0}/s",
                    outcome.offered_rate.0, trial.rate.0
                ),
            };
            ctx.note(format!(
                "{} rep {rep} {} trial {trial_index}: {why}; measuring it again",
                case.id,
                m.name(),
            ));
            if !nap(plan.settle_after(m), ctx.opts.stop) {
                return Err(RunError::Interrupted);
            }
            continue;
        }
        ctx.summary.trials_run += 1;
        trial_index += 1;
        ctx.note(format!(
            "{} rep {rep} {} trial {}: {} connections at {:.0}/s (offered {:.0}/s): {} of {} arrived, {} of {} validated{}{}",
            case.id,
            m.name(),
            rec.key.index,
            trial.connections,
            trial.rate.0,
            outcome.offered_rate.0,
            outcome.preliminary_received,
            outcome.preliminary_sent,
            outcome.validation_received,
            outcome.validation_sent,
            if outcome.passed() { ": pass" } else { ": FAIL" },
            if rec.tester_limited { " (tester-limited)" } else { "" },
        ));
        if let Some(d) = outcome.teardown {
            ctx.note(format!(
                "  tear-down: the DUT's table held {} entries, {} after deleting them in {:.0} µs ({:.0} µs on the empty table)",
                d.entries_before,
                d.entries_after,
                d.delete_ns as f64 / 1e3,
                d.empty_ns as f64 / 1e3
            ));
        }
        if let Some(l) = outcome.load {
            ctx.note(format!(
                "  load {:.0} frames/s each way: A→B {} of {}, B→A {} of {}{}{}{}{}",
                l.intended_pps.0,
                l.forward_received,
                l.forward_sent,
                l.reverse_received,
                l.reverse_sent,
                l.dut_entries
                    .map(|e| format!("; DUT table {e} entries after"))
                    .unwrap_or_default(),
                rec.dut
                    .and_then(|d| d.load_ports)
                    .map(|p| format!("; DUT ingress drops {}", p.ingress_drops))
                    .unwrap_or_default(),
                match l.sender_priority {
                    Some(crate::search::LoadPriority::Unraised) => {
                        "; the senders' priority could not be raised (not root?)"
                    }
                    _ => "",
                },
                if l.lossless() { ": pass" } else { ": loss" },
            ));
        }
        next = search.next(Some(&outcome));
        if next.is_some() && !nap(plan.run.settle, ctx.opts.stop) {
            return Err(RunError::Interrupted);
        }
    }
    let d = ConnDone {
        case_id: case.id.clone(),
        repetition: rep,
        methodology: m,
        result: search.result(),
    };
    ctx.append(&Record::ConnDone(d.clone()))?;
    ctx.note(format!(
        "{} rep {rep} {}: {}",
        case.id,
        m.name(),
        crate::search::nat::describe(&d.result)
    ));
    Ok(())
}

/// A connection trial's preliminary sender later than this on some frame, while the DUT's port
/// refused frames, burst them (see `run_conn`): measured again, as a tester stall. Normal
/// lateness on the loaded machine was 4–10 ms; the bursts that lost connections, 150–970 ms.
pub const CONN_STALL: Duration = Duration::from_millis(20);
