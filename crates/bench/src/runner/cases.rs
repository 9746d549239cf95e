//! Cases in order, grouped by profile: the profile's lab settings and hooks, per case its
//! DUT switches, hooks and samplers, and every repetition × methodology.

use crate::hooks::Sampler;
use crate::plan::{Case, DutKind};

use super::*;

pub(super) fn case_finished(ctx: &Ctx, case: &Case) -> bool {
    (0..ctx.plan.run.repetitions).all(|rep| {
        case.methodologies
            .iter()
            .all(|m| ctx.resume.is_done(&case.id, rep, *m))
    })
}

pub(super) fn run_cases(ctx: &mut Ctx, cases: &[Case]) -> Result<(), RunError> {
    let total = cases.len();
    let mut i = 0;
    while i < cases.len() {
        let profile_name = cases[i].dims.profile.clone();
        let end = cases[i..]
            .iter()
            .position(|c| c.dims.profile != profile_name)
            .map_or(cases.len(), |p| i + p);
        let group = &cases[i..end];
        if group.iter().all(|c| case_finished(ctx, c)) {
            for (k, c) in group.iter().enumerate() {
                ctx.est_done += ctx.plan.case_estimate(c).1;
                (ctx.opts.progress)(Event::Case {
                    index: i + k + 1,
                    cases: total,
                    case: c,
                    skipped: true,
                });
            }
            i = end;
            continue;
        }
        let profile = ctx
            .plan
            .dut
            .profiles
            .iter()
            .find(|p| p.name == profile_name)
            .cloned()
            .ok_or_else(|| failed(format!("profile {profile_name} is not in the plan")))?;
        if let (DutKind::Lab, Some(lab)) = (ctx.plan.dut.kind, ctx.bed.dut_switches()) {
            let lp = lab::Profile::parse(profile.lab.as_deref().unwrap_or(&profile.name))
                .map_err(failed)?;
            ctx.note(format!(
                "profile {}: applying lab profile {lp}",
                profile.name
            ));
            lab.apply_profile(&lp)
                .map_err(|e| failed(format!("profile {}: {e}", profile.name)))?;
            ctx.lab_profile = Some(lp);
            ctx.fastpath_switched = false;
            // The connection table's cap and timeout belong to this profile (none: no cap).
            lab.set_conn_table(profile.table_size, profile.udp_timeout)
                .map_err(|e| failed(format!("profile {}: connection table: {e}", profile.name)))?;
            if let Some(n) = profile.table_size {
                ctx.note(format!(
                    "profile {}: connection table capped at {n} (a set of {n} connections, lab::conntrack)",
                    profile.name
                ));
            }
        }
        let env = vec![("WR_PROFILE".to_string(), profile.name.clone())];
        let setup = ctx.run_hooks(
            None,
            &profile.name,
            "setup",
            &profile.hooks.setup,
            &env,
            true,
        );
        let body = setup.and_then(|()| {
            if !nap(ctx.plan.run.profile_settle, ctx.opts.stop) {
                return Err(RunError::Interrupted);
            }
            for (k, case) in group.iter().enumerate() {
                run_case(ctx, case, i + k + 1, total)?;
            }
            Ok(())
        });
        // Teardown runs whatever happened (also on Ctrl-C).
        let teardown = ctx.run_hooks(
            None,
            &profile.name,
            "teardown",
            &profile.hooks.teardown,
            &env,
            false,
        );
        body?;
        teardown?;
        i = end;
    }
    Ok(())
}

/// The case's DUT switches on a lab DUT: offloads as the case asks, off where it does not
/// say (the lab's default), switched only when that changes (profile switches leave them);
/// the fast path where the case has the dimension, before every such case, since a profile
/// switch turns it off. A real DUT gets them as `WR_OFFLOAD` / `WR_FASTPATH` in its hooks'
/// environment instead.
pub(super) fn apply_lab_switches(ctx: &mut Ctx, case: &Case) -> Result<(), RunError> {
    let Some(lab) = ctx.bed.dut_switches() else {
        return Ok(());
    };
    if ctx.plan.dut.kind != DutKind::Lab || !lab.has_dut() {
        return Ok(());
    }
    let offload = case.dims.offload.unwrap_or(false);
    if ctx.lab_offload != Some(offload) {
        lab.set_offload(offload)
            .map_err(|e| failed(format!("{}: DUT offload: {e}", case.id)))?;
        ctx.lab_offload = Some(offload);
    }
    // A case without the dimension gets the fast path as its profile sets it (the lab
    // profile `fastpath` turns it on; every other profile turns it off): after a case that
    // switched it, the profile is applied again.
    match case.dims.fastpath {
        Some(on) => {
            lab.set_fastpath(on)
                .map_err(|e| failed(format!("{}: fast path: {e}", case.id)))?;
            ctx.fastpath_switched = true;
        }
        None if ctx.fastpath_switched => {
            if let Some(lp) = ctx.lab_profile {
                lab.apply_profile(&lp)
                    .map_err(|e| failed(format!("{}: re-applying profile {lp}: {e}", case.id)))?;
            }
            ctx.fastpath_switched = false;
        }
        None => {}
    }
    Ok(())
}

pub(super) fn run_case(
    ctx: &mut Ctx,
    case: &Case,
    index: usize,
    total: usize,
) -> Result<(), RunError> {
    let est = ctx.plan.case_estimate(case).1;
    let skipped = case_finished(ctx, case);
    (ctx.opts.progress)(Event::Case {
        index,
        cases: total,
        case,
        skipped,
    });
    if skipped {
        ctx.est_done += est;
        return Ok(());
    }
    let profile = ctx
        .plan
        .dut
        .profiles
        .iter()
        .find(|p| p.name == case.dims.profile)
        .cloned()
        .ok_or_else(|| failed(format!("profile {} is not in the plan", case.dims.profile)))?;
    apply_lab_switches(ctx, case)?;
    let env = case.env();
    ctx.run_hooks(
        Some(case),
        &profile.name,
        "stats-before",
        &profile.hooks.stats_before,
        &env,
        false,
    )?;
    let mut samplers = Vec::new();
    for hook in &profile.hooks.samplers {
        match Sampler::start(&ctx.plan.dut.exec, hook, &env) {
            Ok(s) => samplers.push(s),
            Err(e) => ctx.note(format!("sampler `{}` did not start: {e}", hook.command)),
        }
    }
    let mut result = Ok(());
    'reps: for rep in 0..ctx.plan.run.repetitions {
        for &m in &case.methodologies {
            if let Err(e) = run_methodology(ctx, case, rep, m, index, total) {
                result = Err(e);
                break 'reps;
            }
        }
    }
    for s in samplers {
        let command = s.command().to_string();
        match s.stop() {
            Ok(out) => {
                ctx.record_hook(Some(case), &profile.name, "sampler", &out);
                if out.sampler_ended_early() {
                    ctx.note(format!(
                        "WARNING {}",
                        out.sampler_ended_warning(&case.id, &command)
                    ));
                }
            }
            Err(e) => ctx.note(format!(
                "WARNING {}: sampler `{command}` could not be stopped and read: {e}",
                case.id
            )),
        }
    }
    ctx.run_hooks(
        Some(case),
        &profile.name,
        "stats-after",
        &profile.hooks.stats_after,
        &env,
        false,
    )?;
    ctx.est_done += est;
    result
}
