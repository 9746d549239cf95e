//! One search of a UDP methodology, trial by trial: each trial recorded (with its typed
//! facts) before the search sees it, a tester stall measured again, then the `done` record;
//! connection and iperf3 methodologies are handed to their own modules.

use crate::plan::{Case, Methodology};
use crate::results::{CeilingCheck, MethodologyDone, Record, TrialKey, TrialRecord};
use crate::search::{LatencySearch, LineFraction, Search, Status};

use super::*;

pub(super) fn run_methodology(
    ctx: &mut Ctx,
    case: &Case,
    rep: u32,
    m: Methodology,
    index: usize,
    total: usize,
) -> Result<(), RunError> {
    if ctx.resume.is_done(&case.id, rep, m) {
        return Ok(());
    }
    let plan = ctx.plan;
    if m.is_connection() {
        return run_conn(ctx, case, rep, m);
    }
    let mut search: Box<dyn Search> = match m {
        Methodology::Iperf3 => return run_iperf3(ctx, case, rep, index, total),
        Methodology::Rfc2544Latency => {
            let base = [Methodology::Rfc2544Throughput, Methodology::MultiGoal]
                .into_iter()
                .find_map(|t| ctx.done_results.get(&(case.id.clone(), rep, t)).cloned());
            let built = match base {
                Some(r) => LatencySearch::at_throughput(
                    &r,
                    0,
                    plan.methodology.latency_trials,
                    plan.methodology.latency_duration,
                )
                .map_err(|e| e.to_string()),
                None => Err("latency needs a throughput methodology first in the case".into()),
            };
            match built {
                Ok(s) => Box::new(s),
                Err(why) => {
                    ctx.note(format!("{} rep {rep} {}: {why}", case.id, m.name()));
                    return ctx.done_without_result(case, rep, m);
                }
            }
        }
        _ => plan
            .search(case, m)
            .ok_or_else(|| failed(format!("no search for {}", m.name())))?,
    };
    let recorded = ctx.resume.recorded(&case.id, rep, m);
    let mut next = crate::search::replay(search.as_mut(), &recorded).map_err(|e| {
        failed(format!(
            "{} rep {rep} {}: {e}; start a new run instead of --resume",
            case.id,
            m.name()
        ))
    })?;
    let mut trial_index = recorded.len() as u32;
    // The calibration's ceilings are per size; an IMIX case has none to compare with.
    let frame_size = case.frame().and_then(|f| f.fixed()).map(|b| b as u32);
    // Stalls measured again, counted apart: at loads the tester has not shown it carries (its
    // ceiling may be there) and at loads it has (a shared machine's transients).
    let mut ceiling_retries = 0u32;
    let mut transient_retries = 0u32;
    // A stall that persisted after the retries: the search stops there, tester-limited.
    let mut stalled_at: Option<(LineFraction, LineFraction)> = None;
    // The highest load whose trial the tester kept (no stall) in this search.
    let mut kept_max: Option<f64> = None;
    while let Some(request) = next {
        if ctx.stopped() {
            return Err(RunError::Interrupted);
        }
        let res = ctx.bed.udp_trial(plan, case, &request, ctx.opts.stop);
        let lan_watch = ctx.bed.take_lan_watch();
        if ctx.stopped() {
            return Err(RunError::Interrupted);
        }
        let (outcome, engine) = match res {
            Ok(o) => o,
            Err(e) => {
                let m = format!("{} rep {rep} {}: {e}", case.id, m.name());
                ctx.note(format!("FAILED {m} (not marked done; --resume retries it)"));
                ctx.summary.failures.push(m);
                return Ok(());
            }
        };
        // A trial in which the tester fell behind its schedule (frames slipped, or a stall
        // that shows as a lower offered rate, e.g. 10 ms late near the end of a 0.5 s trial)
        // says nothing about the DUT: record it as superseded and measure the same request
        // again, a few times per search at most, so a tester that cannot keep up still ends
        // tester-limited.
        // An `mtu-probe` trial counts whether the frames sent arrived whole; its rate is only
        // kept low, so only a tester far below it counts as stalled.
        // A trial whose frames the tester's own receive backlog dropped (the lab's tester
        // CPUs, `DutCounters::tester_backlog_drops`) lost them in the tester: the same; and
        // one in which a real port's own drop counters rose (a NIC's missed or no-buffer
        // frames, `EngineFacts::tester_port_drops`).
        let stalled = match request.probe {
            Some(_) => outcome.is_tester_limited(crate::search::PROBE_TESTER_TOLERANCE),
            None => {
                engine.slipped_ratio() > SLIP_TOLERANCE
                    || outcome.is_tester_limited(plan.run.tester_tolerance)
            }
        } || engine.tester_receive_drops() > 0
            || engine.tester_port_drop_total() > 0;
        // A stall at or below a load the tester already kept in this search is a transient
        // of the machine, not the tester's ceiling: it gets more re-measurements, and if it
        // persists the search stops tester-limited instead of taking a ceiling the tester
        // has disproved (on a loaded machine one stall at 3 % would otherwise end a search
        // at 0.6 % "tester-limited"). So is a stall at a load the tester's calibration carried
        // on a direct link (a demo run's 64 B search at 50 % of line rate, on a tester
        // calibrated exact at 100 %, was left tester-limited after two retries).
        let below_kept = kept_max.is_some_and(|k| request.load.0 <= k);
        let carried = below_kept
            || (request.probe.is_none()
                && calibrated_to_carry(
                    ctx.opts.calibration.as_ref(),
                    case,
                    frame_size,
                    request.load.to_pps(plan.line_pps(case)),
                ));
        let superseded = stalled
            && if carried {
                transient_retries < MAX_TRANSIENT_RETRIES
            } else {
                ceiling_retries < MAX_STALL_RETRIES
            };
        let rec = TrialRecord {
            key: TrialKey {
                case_id: case.id.clone(),
                repetition: rep,
                methodology: m,
                index: trial_index,
            },
            request,
            outcome,
            // Tester-limited means one thing: the tester did not keep its own schedule (it
            // slipped frames, offered less than asked, or its receive backlog dropped frames
            // the DUT forwarded), never the DUT's loss.
            tester_limited: stalled,
            iperf3: None,
            tcp: None,
            udp: crate::results::UdpFacts::of(plan, case, outcome.offered.0),
            engine: Some(engine),
            superseded,
            lan_watch,
            finished_unix_ms: now_ms(),
        };
        ctx.note_lan_gaps(&rec);
        if superseded {
            if carried {
                transient_retries += 1;
            } else {
                ceiling_retries += 1;
            }
            let why = match rec.engine.as_ref() {
                Some(e) if e.tester_port_drop_total() > 0 => {
                    let each: Vec<String> = e
                        .tester_port_drops
                        .iter()
                        .map(|d| format!("{} +{} on port {}", d.counter, d.frames, d.port))
                        .collect();
                    format!("the tester's own port counters rose ({})", each.join(", "))
                }
                Some(e) if e.tester_receive_drops() > 0 => format!(
                    "the tester's receive backlog dropped {} frames",
                    e.tester_receive_drops()
                ),
                _ => "the tester fell behind its schedule".to_string(),
            };
            ctx.append(&Record::Trial(rec))?;
            ctx.note(format!(
                "{} rep {rep} {} trial {trial_index}: {why}; measuring it again",
                case.id,
                m.name()
            ));
            if !nap(plan.run.settle, ctx.opts.stop) {
                return Err(RunError::Interrupted);
            }
            continue;
        }
        ctx.append(&Record::Trial(rec.clone()))?;
        ctx.summary.trials_run += 1;
        trial_index += 1;
        let eta = ctx.eta();
        (ctx.opts.progress)(Event::Trial {
            index,
            cases: total,
            record: &rec,
            eta,
        });
        if stalled {
            // The search itself only compares offered with intended load, which a short stall
            // or the tester's own receive drops barely move: tell it. A bisection goes on
            // below this load (a DUT failure found there is the DUT's; an upper bound left
            // at it says tester-limited per goal); any other search stops here, so no figure
            // rests on a trial the tester stalled in.
            if !search.bounds_tester_ceiling() || below_kept {
                stalled_at = Some((request.load, outcome.offered));
                break;
            }
            next = search.next_tester_limited(&outcome);
        } else {
            kept_max = Some(kept_max.map_or(request.load.0, |k| k.max(request.load.0)));
            next = search.next(Some(&outcome));
        }
        if next.is_some() && !nap(plan.settle_after(m), ctx.opts.stop) {
            return Err(RunError::Interrupted);
        }
    }
    let mut result = search.result();
    if let Some((intended, achieved)) = stalled_at {
        result.status = Status::TesterLimited { intended, achieved };
    }
    let ceiling = match (&ctx.opts.calibration, result.throughput(0), frame_size) {
        (Some(cal), Some(t), Some(frame_size)) => {
            let pps = t.to_pps(plan.line_pps(case)).0;
            // A result at line rate is the most a search can find: the tester offered it on
            // schedule (a stalled trial is never a figure), and there is no higher load it
            // might have failed to offer. So it is the DUT's whatever the calibration's ceiling
            // says (a calibration whose trials stalled can put that lower: a demo run's 64 B
            // ceiling of 87.8 % flagged a 100 % result its own search had offered exactly).
            let at_line_rate = t.0 >= 1.0 - crate::calibration::LINE_RATE_EPSILON;
            cal.ceiling_pps(case.dims.ip, frame_size)
                .map(|c| CeilingCheck {
                    ceiling_pps: wire::units::Pps(c),
                    result_pps: wire::units::Pps(pps),
                    tester_limited: !at_line_rate
                        && cal
                            .is_tester_limited(case.dims.ip, frame_size, pps)
                            .unwrap_or(false),
                })
        }
        _ => None,
    };
    let d = MethodologyDone {
        case_id: case.id.clone(),
        repetition: rep,
        methodology: m,
        result: Some(result.clone()),
        ceiling,
        // The 100 % every load of this search was a fraction of (UDP cases have a size; an
        // MTU probe's loads are fractions of its own probe rate).
        line_pps: case
            .frame()
            .filter(|_| m != Methodology::MtuProbe)
            .map(|_| plan.line_pps(case)),
    };
    ctx.append(&Record::Done(d.clone()))?;
    ctx.done_results.insert((case.id.clone(), rep, m), result);
    (ctx.opts.progress)(Event::Done(&d));
    Ok(())
}

/// Whether the tester's calibration carried `load` of this case exactly on a direct link: its
/// ceiling measured at this frame size (and IP version) is at or above the load's frame rate.
/// Loads of sizes it did not measure, of cases without one fixed size (IMIX), or without a
/// calibration are not known to be carried.
fn calibrated_to_carry(
    calibration: Option<&Calibration>,
    case: &Case,
    frame_size: Option<u32>,
    load: wire::units::Pps,
) -> bool {
    let (Some(cal), Some(size)) = (calibration, frame_size) else {
        return false;
    };
    cal.measured_ceiling_pps(case.dims.ip, size)
        .is_some_and(|c| load.0 <= c)
}
