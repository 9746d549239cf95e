//! The findings and conclusions drawn from the results table: rows compared with their
//! baseline or their switched twin, beyond the noise both carry.

use bench_model::plan::{Methodology, Protocol};
use wire::encap::IpVersion;

use crate::model::{beyond_noise, signed_percent, Conclusion, Dims, NoiseBasis, Row, Statement};

/// Whether two rows measure the same thing (methodology and, for multi-goal rows, loss goal),
/// so that their figures may be compared.
fn same_measure(a: &Row, b: &Row) -> bool {
    (a.methodology, a.loss_goal) == (b.methodology, b.loss_goal)
}

/// Two rows compared on frames per second: (subject − reference) / reference and the noise
/// both carry, percent of the reference.
pub(crate) struct Comparison {
    pub(crate) delta: f64,
    pub(crate) noise: f64,
    /// Both rows have a noise measure ([`NoiseBasis::None`] has none).
    pub(crate) measured: bool,
    pub(crate) significant: bool,
    /// Which noise measure(s) the two figures used.
    pub(crate) basis: String,
}

/// `None` when either row has no DUT figure (tester-limited, missing, not finite) or the
/// reference is not positive: nothing can be said.
pub(crate) fn compare_rows(x: &Row, y: &Row) -> Option<Comparison> {
    if x.tester_limited || y.tester_limited {
        return None;
    }
    let (a, b) = (x.pps?.0, y.pps?.0);
    if !(a.is_finite() && b.is_finite() && b > 0.0) {
        return None;
    }
    let (na, nb) = (x.noise_pps.0, y.noise_pps.0);
    let measured = x.noise_basis != NoiseBasis::None
        && y.noise_basis != NoiseBasis::None
        && na.is_finite()
        && nb.is_finite();
    let basis = if x.noise_basis == y.noise_basis {
        x.noise_basis.describe().to_string()
    } else {
        format!(
            "{} and {}",
            x.noise_basis.describe(),
            y.noise_basis.describe()
        )
    };
    Some(Comparison {
        delta: 100.0 * (a - b) / b,
        noise: 100.0 * (na + nb) / b,
        measured,
        significant: measured && beyond_noise(a, na, b, nb),
        basis,
    })
}

/// A profile against the baseline at each point. A difference is stated only when it exceeds
/// the noise of both figures (|a − b| > noise(a) + noise(b)), whichever way each was measured
/// ([`NoiseBasis`]); the sentence names the measure.
pub(crate) fn findings(rows: &[Row], baseline: &str) -> Vec<Statement> {
    let mut out = Vec::new();
    for r in rows {
        if r.dims.profile == baseline || r.tester_limited {
            continue;
        }
        let key = r.dims.without_profile();
        let Some(b) = rows.iter().find(|b| {
            b.dims.profile == baseline && same_measure(b, r) && b.dims.without_profile() == key
        }) else {
            continue;
        };
        let cites = vec![
            (r.case_id.clone(), r.methodology_label()),
            (b.case_id.clone(), b.methodology_label()),
        ];
        let point = format!("{}{}", r.dims.point(), goal_words(r));
        if b.tester_limited {
            let text = format!(
                "{}: no comparison with {baseline} at {point}: {baseline} is tester-limited there",
                r.dims.profile
            );
            out.push(Statement {
                profile: r.dims.profile.clone(),
                baseline: baseline.into(),
                claim: text.clone(),
                text,
                point,
                delta_percent: 0.0,
                noise_percent: 0.0,
                significant: false,
                cites,
                noise: String::new(),
            });
            continue;
        }
        let Some(c) = compare_rows(r, b) else {
            continue;
        };
        let claim = if c.significant {
            format!(
                "{}{}",
                profile_claim(&r.dims.profile, baseline, c.delta, &point),
                methodology_qualifier(r.methodology)
            )
        } else if !c.measured {
            format!(
                "{}: {} vs {baseline} at {point}, not judged",
                r.dims.profile,
                signed_percent(c.delta)
            )
        } else {
            format!(
                "{}: within noise of {baseline} at {point} ({})",
                r.dims.profile,
                signed_percent(c.delta)
            )
        };
        let text = if c.significant {
            format!(
                "{}: {} vs {baseline} at {point} (noise ±{:.1} %: {})",
                r.dims.profile,
                signed_percent(c.delta),
                c.noise,
                c.basis
            )
        } else if !c.measured {
            format!(
                "{}: {} vs {baseline} at {point}, not judged: {}",
                r.dims.profile,
                signed_percent(c.delta),
                c.basis
            )
        } else {
            format!(
                "{}: within noise of {baseline} at {point} ({}, noise ±{:.1} %: {})",
                r.dims.profile,
                signed_percent(c.delta),
                c.noise,
                c.basis
            )
        };
        out.push(Statement {
            profile: r.dims.profile.clone(),
            baseline: baseline.into(),
            point,
            delta_percent: c.delta,
            noise_percent: c.noise,
            significant: c.significant,
            text,
            cites,
            noise: c.basis,
            claim,
        });
    }
    out
}

/// A profile against the baseline as findings say it: `napt costs 19 % of forward's rate at
/// 128 B, IPv4 UDP` or `napt forwards 15 % more than forward at …` (`at`: the point, with its
/// loss goal).
fn profile_claim(profile: &str, baseline: &str, delta: f64, at: &str) -> String {
    if delta < 0.0 {
        format!(
            "{profile} costs {} of {baseline}'s rate at {at}",
            pct_word(delta)
        )
    } else {
        format!(
            "{profile} forwards {} more than {baseline} at {at}",
            pct_word(delta)
        )
    }
}

/// A multi-goal row's loss goal as statements name it (`, at zero loss`, `, at ≤ 0.5 % loss`);
/// empty for rows of one figure.
pub(crate) fn goal_words(r: &Row) -> String {
    match r.loss_goal {
        Some(g) if g <= 0.0 => ", at zero loss".into(),
        Some(g) => format!(", at ≤ {} % loss", g * 100.0),
        None => String::new(),
    }
}

/// Whether a summary speaks of `r`'s loss goal: one goal per multi-goal case, the lowest whose
/// comparison with its reference (`want`) neither figure's sporadic loss decides
/// (`Row::sporadic_loss`), else the lowest. Per-case findings list every goal; the summary
/// would otherwise say each thing once per goal, and a zero-loss figure that sporadic loss
/// decides says nothing about the device's cost.
fn is_summarised_goal(rows: &[Row], r: &Row, want: &Dims) -> bool {
    if r.loss_goal.is_none() {
        return true;
    }
    let mut goals: Vec<(&Row, Option<&Row>)> = rows
        .iter()
        .filter(|g| g.is_figure_of(&r.case_id, r.methodology))
        .map(|g| {
            let reference = rows.iter().find(|o| o.dims == *want && same_measure(o, g));
            (g, reference)
        })
        .filter(|(g, reference)| reference.is_some_and(|o| compare_rows(g, o).is_some()))
        .collect();
    goals.sort_by(|a, b| {
        a.0.loss_goal
            .unwrap_or(0.0)
            .total_cmp(&b.0.loss_goal.unwrap_or(0.0))
    });
    let clean = goals
        .iter()
        .find(|(g, o)| !g.sporadic_loss && !o.is_some_and(|o| o.sporadic_loss));
    clean
        .or(goals.first())
        .is_some_and(|(g, _)| g.loss_goal == r.loss_goal)
}

/// What a conclusion adds when its figures are not throughput: a forwarding rate at overload
/// and a zero-loss throughput can disagree (docs/methodology.md), so the sentence says which.
fn methodology_qualifier(methodology: Methodology) -> &'static str {
    if matches!(methodology, Methodology::ForwardingRate) {
        ", in forwarding rate at the maximum offered load"
    } else {
        ""
    }
}

/// A percentage as conclusions print it: whole percent from 10 up, one decimal below.
fn pct_word(x: f64) -> String {
    let x = x.abs();
    if x >= 9.95 {
        format!("{x:.0} %")
    } else {
        format!("{x:.1} %")
    }
}

/// Signed [`pct_word`] with a real minus sign.
fn signed_word(x: f64) -> String {
    format!("{}{}", if x < 0.0 { "\u{2212}" } else { "+" }, pct_word(x))
}

/// Where a summary looks first in a context: the smallest frame size, else the smallest MSS
/// with the fewest sessions (per-packet costs show most there).
fn point_order(d: &Dims) -> (Option<u32>, Option<u32>, Option<u32>) {
    (d.frame_bytes(), d.mss, d.sessions)
}

/// True when `r` has a switch on (other than `except`) and the same case with it off exists:
/// summaries of the other dimensions then speak of the switch-off case only, the switch has
/// its own summary.
fn switched_twin_exists(rows: &[Row], r: &Row, except: &str) -> bool {
    let mut off = r.dims.clone();
    let mut any = false;
    if except != "offload" && off.offload == Some(true) {
        off.offload = Some(false);
        any = true;
    }
    if except != "fastpath" && off.fastpath == Some(true) {
        off.fastpath = Some(false);
        any = true;
    }
    any && rows.iter().any(|o| o.dims == off && same_measure(o, r))
}

/// Summaries per dimension ([`Conclusion`]): each profile against the baseline, the fast path
/// and the offloads on against off, IPv6 against IPv4 (UDP at the same frame size; of the
/// baseline profile when it has both). In each
/// context (the case's dimensions without its point) the pair at the first point both rows
/// measured ([`point_order`]) is compared; only differences beyond both figures' noise are
/// kept. Every figure comes from two rows of the results table, cited by case id.
pub(crate) fn conclusions(rows: &[Row], baseline: &str) -> Vec<Conclusion> {
    type Twin = fn(&Dims, &str) -> Option<Dims>;
    let dims: [(&str, Twin); 4] = [
        ("profile", |d, base| {
            (d.profile != base).then(|| Dims {
                profile: base.to_string(),
                ..d.clone()
            })
        }),
        ("fastpath", |d, _| {
            (d.fastpath == Some(true)).then(|| Dims {
                fastpath: Some(false),
                ..d.clone()
            })
        }),
        ("offload", |d, _| {
            (d.offload == Some(true)).then(|| Dims {
                offload: Some(false),
                ..d.clone()
            })
        }),
        ("ip", |d, _| {
            matches!((d.ip, d.protocol), (IpVersion::V6, Protocol::Udp))
                .then(|| d.over_ip(IpVersion::V4))
        }),
    ];
    let mut out = Vec::new();
    for (dimension, twin) in dims {
        // (context, methodology) → the first pair, by point order.
        let mut best: Vec<((Dims, Methodology), &Row, &Row)> = Vec::new();
        for r in rows {
            let Some(want) = twin(&r.dims, baseline) else {
                continue;
            };
            if switched_twin_exists(rows, r, dimension) {
                continue;
            }
            let Some(reference) = rows.iter().find(|o| o.dims == want && same_measure(o, r)) else {
                continue;
            };
            if compare_rows(r, reference).is_none() {
                continue;
            }
            if !is_summarised_goal(rows, r, &want) {
                continue;
            }
            let key = (r.dims.context(), r.methodology);
            match best.iter_mut().find(|(k, _, _)| *k == key) {
                Some(slot) if point_order(&r.dims) < point_order(&slot.1.dims) => {
                    slot.1 = r;
                    slot.2 = reference;
                }
                Some(_) => {}
                None => best.push((key, r, reference)),
            }
        }
        // IPv6 against IPv4 is said of the baseline profile (the router itself) when it has
        // that comparison; the profiles' own costs have their lines above.
        if dimension == "ip" && best.iter().any(|(_, s, _)| s.dims.profile == baseline) {
            best.retain(|(_, s, _)| s.dims.profile == baseline);
        }
        for (_, s, r) in best {
            let Some(c) = compare_rows(s, r) else {
                continue;
            };
            if !c.significant {
                continue;
            }
            let profile = &s.dims.profile;
            let text = match dimension {
                "profile" => profile_claim(
                    profile,
                    baseline,
                    c.delta,
                    &format!("{}{}", s.dims.point(), goal_words(s)),
                ),
                "ip" => {
                    let mut at = Vec::new();
                    at.extend(s.dims.frame_bytes().map(|f| format!("{f} B")));
                    at.extend(s.dims.switches());
                    at.extend(s.dims.vars.iter().map(|(k, v)| format!("{k}={v}")));
                    if !s.dims.has_plain_encap() {
                        at.push(format!("over {}", s.dims.encap));
                    }
                    if s.dims.bidirectional {
                        at.push("bidirectional".into());
                    }
                    at.push(s.dims.protocol.title().to_string());
                    at.extend(goal_words(s).strip_prefix(", ").map(String::from));
                    format!(
                        "IPv6 forwards {} {} than IPv4 for {profile} at {}",
                        pct_word(c.delta),
                        if c.delta < 0.0 { "less" } else { "more" },
                        at.join(", ")
                    )
                }
                switch => {
                    let mut at = s.dims.clone();
                    if switch == "offload" {
                        at.offload = None;
                    } else {
                        at.fastpath = None;
                    }
                    format!(
                        "{switch} on: {} for {profile} at {}{}",
                        signed_word(c.delta),
                        at.point(),
                        goal_words(s)
                    )
                }
            };
            out.push(Conclusion {
                dimension: dimension.into(),
                cites: vec![
                    (s.case_id.clone(), s.methodology_label()),
                    (r.case_id.clone(), r.methodology_label()),
                ],
                delta_percent: c.delta,
                noise_percent: c.noise,
                text: format!(
                    "{text}{} (noise ±{:.1} %: {})",
                    methodology_qualifier(s.methodology),
                    c.noise,
                    c.basis
                ),
                noise: c.basis,
                claim: format!("{text}{}", methodology_qualifier(s.methodology)),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use wire::linerate::FrameSize;
    use wire::units::{BitsPerSec, Pps};

    use super::*;

    /// A throughput row of `case` with these dimensions and figure (noise ±1,000 frames/s over
    /// repetitions).
    fn row(case: &str, dims: Dims, m: Methodology, pps: f64) -> Row {
        let path_encap = Some(dims.encap);
        Row {
            case_id: case.into(),
            dims,
            methodology: m,
            loss_goal: None,
            repetitions: 2,
            repetitions_planned: 2,
            directions: 1,
            frame_len: 128.0,
            pps: Some(Pps(pps)),
            l2_bps: Some(BitsPerSec(pps * 128.0 * 8.0)),
            l4_bps: None,
            rep_pps: vec![Pps(pps), Pps(pps)],
            noise_pps: Pps(1_000.0),
            noise_basis: NoiseBasis::Repetitions,
            resolution_pps: Pps(0.0),
            max_pps: Pps(844_594.0),
            max_l2_bps: BitsPerSec(1e9),
            bottleneck: "link".into(),
            path_encap,
            percent: Some(100.0 * pps / 844_594.0),
            tester_limited: false,
            tester_reached_percent: None,
            dut_cpu_percent: None,
            dut_power_watts: None,
            per_direction: Vec::new(),
            engine: String::new(),
            trial_frames_lost: None,
            dut_ingress_drops: None,
            trial_frames_invalid: None,
            conditional_pps: None,
            sporadic_loss: false,
            irregular_repetitions: 0,
            above_line: None,
        }
    }

    fn at(ip: IpVersion, encap: &str) -> Dims {
        Dims {
            ip,
            encap: encap.parse().unwrap(),
            frame: Some(FrameSize::Fixed { bytes: 128 }),
            ..Dims::new("forward")
        }
    }

    /// The IPv6 finding compares a case with its IPv4 counterpart found by type: the same
    /// headers over IPv4 (`Dims::over_ip`, `EncapSpec::with_ip`), not the encapsulation's
    /// text edited; and which measure it is (the forwarding rate's words) is asked of the
    /// methodology's type, not its name.
    #[test]
    fn the_ipv6_finding_compares_the_typed_ipv4_counterpart() {
        let fr = Methodology::ForwardingRate;
        let rows = [
            row(
                "forward/udp6/128B/encap=vlan",
                at(IpVersion::V6, "vlan+ipv6"),
                fr,
                500_000.0,
            ),
            // Same figure as IPv6: were this the counterpart, nothing would be said.
            row(
                "forward/udp4/128B",
                at(IpVersion::V4, "ipv4"),
                fr,
                500_000.0,
            ),
            row(
                "forward/udp4/128B/encap=vlan",
                at(IpVersion::V4, "vlan+ipv4"),
                fr,
                800_000.0,
            ),
            // Another methodology's figure at the same point is not compared with it.
            row(
                "forward/udp4/128B/encap=vlan",
                at(IpVersion::V4, "vlan+ipv4"),
                Methodology::Rfc2544Throughput,
                500_000.0,
            ),
        ];
        let ip: Vec<Conclusion> = conclusions(&rows, "forward")
            .into_iter()
            .filter(|c| c.dimension == "ip")
            .collect();
        assert_eq!(ip.len(), 1, "{ip:?}");
        let c = &ip[0];
        assert_eq!(
            c.cites,
            [
                (
                    "forward/udp6/128B/encap=vlan".to_string(),
                    "forwarding-rate".to_string()
                ),
                (
                    "forward/udp4/128B/encap=vlan".to_string(),
                    "forwarding-rate".to_string()
                ),
            ]
        );
        assert!((c.delta_percent + 37.5).abs() < 1e-9, "{}", c.delta_percent);
        assert_eq!(
            c.claim,
            "IPv6 forwards 38 % less than IPv4 for forward at 128 B, over vlan+ipv6, UDP, \
             in forwarding rate at the maximum offered load"
        );
    }
}
