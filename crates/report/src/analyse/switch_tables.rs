//! The switch tables: MSS × offload, and fast path off against on, per profile and fixed
//! dimensions.

use super::findings::compare_rows;
use crate::model::{Dims, Row, SwitchCell, SwitchRow, SwitchTable};

/// The MSS × offload tables and the fast-path on/off comparisons ([`SwitchTable`]): one table
/// per profile and fixed dimensions, only where both settings of the switch were measured.
pub(crate) fn switch_tables(rows: &[Row], profiles: &[String]) -> Vec<SwitchTable> {
    let cell = |r: &Row| SwitchCell {
        case_id: r.case_id.clone(),
        l2_bps: r.l2_bps,
        percent: r.percent,
        dut_cpu_percent: r.dut_cpu_percent,
        dut_power_watts: r.dut_power_watts,
        tester_limited: r.tester_limited,
    };
    let mut out = Vec::new();
    for switch in ["offload", "fastpath"] {
        let get = |d: &Dims| {
            if switch == "offload" {
                d.offload
            } else {
                d.fastpath
            }
        };
        // (fixed dimensions, methodology) → (row point → (off, on)), in the rows' order.
        type Lines<'a> = Vec<(
            (Option<u32>, Option<u32>, Option<u32>),
            [Option<&'a Row>; 2],
        )>;
        let mut groups: Vec<((Dims, String), Lines)> = Vec::new();
        for r in rows {
            let Some(on) = get(&r.dims) else { continue };
            let mut k = r.dims.clone();
            k.offload = if switch == "offload" { None } else { k.offload };
            k.fastpath = if switch == "fastpath" {
                None
            } else {
                k.fastpath
            };
            // The fixed sizes are the table's rows; an IMIX case stays a table of its own.
            if !k.is_imix() {
                k.frame = None;
            }
            k.mss = None;
            // The MSS table keeps sessions fixed (its rows are MSS); the fast-path table
            // runs over frame sizes or sessions.
            if switch == "fastpath" {
                k.sessions = None;
            }
            let point = (
                r.dims.frame_bytes(),
                if switch == "fastpath" {
                    r.dims.sessions
                } else {
                    None
                },
                r.dims.mss,
            );
            let key = (k, r.methodology_label());
            let lines = match groups.iter_mut().find(|(g, _)| *g == key) {
                Some((_, l)) => l,
                None => {
                    groups.push((key, Vec::new()));
                    &mut groups.last_mut().expect("just pushed").1
                }
            };
            let slot = match lines.iter_mut().find(|(p, _)| *p == point) {
                Some((_, s)) => s,
                None => {
                    lines.push((point, [None, None]));
                    &mut lines.last_mut().expect("just pushed").1
                }
            };
            slot[usize::from(on)] = Some(r);
        }
        for ((k, methodology), mut lines) in groups {
            if !lines.iter().any(|(_, [a, b])| a.is_some() && b.is_some()) {
                continue;
            }
            if switch == "offload" {
                // As published: the largest MSS first.
                lines.sort_by_key(|l| (l.0 .0, std::cmp::Reverse(l.0 .2)));
            } else {
                lines.sort_by_key(|l| l.0);
            }
            let rows = lines
                .into_iter()
                .map(|((frame, sessions, mss), [off, on])| {
                    let mut p = Vec::new();
                    p.extend(frame.map(|f| format!("{f} B")));
                    p.extend(
                        sessions.map(|s| format!("{s} session{}", if s == 1 { "" } else { "s" })),
                    );
                    p.extend(mss.map(|m| format!("MSS {m}")));
                    let c = match (on, off) {
                        (Some(a), Some(b)) => compare_rows(a, b),
                        _ => None,
                    };
                    SwitchRow {
                        point: p.join(", "),
                        off: off.map(cell),
                        on: on.map(cell),
                        delta_percent: c.as_ref().map(|c| c.delta),
                        significant: c.is_some_and(|c| c.significant),
                    }
                })
                .collect();
            let mut fixed = k.clone();
            fixed.profile = String::new();
            out.push(SwitchTable {
                switch: switch.into(),
                profile: k.profile.clone(),
                title: format!("{}: {}", k.profile, fixed.point()),
                methodology,
                rows,
            });
        }
    }
    let order = |p: &str| profiles.iter().position(|x| x == p).unwrap_or(usize::MAX);
    // Stable: keeps the rows' family order within a switch and profile.
    out.sort_by_key(|t| (t.switch != "offload", order(&t.profile)));
    out
}
