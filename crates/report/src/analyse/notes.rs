//! The notes a results row or a run carries beside its figures: what limited a TCP figure,
//! PPPoE session drops, the CPU at a load, invalid frames by reason, lost frames against the
//! DUT's own drops, and which engines sent.

use bench_model::results::{InvalidCounts, TrialRecord};

use crate::model::{at_load, mean, Row};

/// Below this share of line rate a TCP figure is not the link's.
const TCP_LINE_BOUND: f64 = 95.0;
/// Below this busy share of its CPU the lab DUT was not what limited a TCP run.
const DUT_CPU_BOUND: f64 = 90.0;

/// A note for an iperf3 row that neither the link nor the lab DUT's CPU limited (it read below
/// [`TCP_LINE_BOUND`] % of line rate while the DUT's CPU, from the lab's counters over the run,
/// was busy less than [`DUT_CPU_BOUND`] %): something else set the pace, on the lab usually the
/// tester's own CPU, which runs iperf3's client, server and both ports' receive polls. The
/// figure is then a lower bound for the DUT. `None` without lab CPU counters.
pub(crate) fn unsaturated_tcp_note(r: &Row, lab_cpu: Option<f64>) -> Option<String> {
    let (pct, cpu) = (r.percent?, lab_cpu?);
    (pct < TCP_LINE_BOUND && cpu < DUT_CPU_BOUND).then(|| {
        format!(
            "{}: {:.1} % of line rate while the DUT's CPU was busy {:.0} %: neither the link nor the DUT's CPU was the limit, so the pace was probably the tester's (its CPU runs iperf3's client and server and both ports' receive polls); read it as at least this much for the DUT",
            r.case_id, pct, cpu
        )
    })
}

/// One note per trial during which a PPPoE session of the run went down (#14 item 5): when,
/// on which port and why, in trial order. Superseded trials count too (the caller passes every
/// trial record): the device dropped its session whatever the tester did in that trial.
pub(crate) fn session_drop_notes<'a>(trials: impl Iterator<Item = &'a TrialRecord>) -> Vec<String> {
    let mut hit: Vec<&TrialRecord> = trials
        .filter(|t| {
            t.engine
                .as_ref()
                .is_some_and(|e| !e.session_drops.is_empty())
        })
        .collect();
    hit.sort_by_key(|t| t.finished_unix_ms);
    hit.iter()
        .map(|t| {
            let drops: Vec<String> = t
                .engine
                .iter()
                .flat_map(|e| &e.session_drops)
                .map(|d| {
                    format!(
                        "the PPPoE session on port {} went down at {} UTC ({})",
                        d.port,
                        clock_utc(d.unix_ms),
                        d.reason
                    )
                })
                .collect();
            format!(
                "{} ({}, repetition {}, trial {}): {} while the trial ran; its loss is the DUT's, and the run waited for the session to come back before the next trial{}",
                t.key.case_id,
                t.key.methodology.name(),
                t.key.repetition,
                t.key.index,
                drops.join("; "),
                if t.superseded {
                    " (the tester also fell behind in that trial, so it was measured again and is not used for any figure)"
                } else {
                    ""
                }
            )
        })
        .collect()
}

/// One note per trial during which the LAN health watch found a gateway silent for at least
/// a second (#35 item 5): which trial, which port and address, when and for how long. As for
/// session drops, superseded trials count too; the trial's figure is not a clean DUT figure
/// (the gateway rebooted, hung, or lost its LAN link while it ran).
pub(crate) fn lan_gap_notes<'a>(trials: impl Iterator<Item = &'a TrialRecord>) -> Vec<String> {
    let mut hit: Vec<&TrialRecord> = trials.filter(|t| t.lan_gaps().next().is_some()).collect();
    hit.sort_by_key(|t| t.finished_unix_ms);
    hit.iter()
        .map(|t| {
            let gaps: Vec<String> = t
                .lan_gaps()
                .flat_map(|w| {
                    w.gaps.iter().map(move |g| {
                        format!(
                            "the gateway {} did not answer ARP/ND on port {} for {:.1} s from {} UTC ({} probes unanswered)",
                            w.gateway,
                            w.port,
                            g.length_ms as f64 / 1e3,
                            clock_utc(g.unix_ms),
                            g.unanswered
                        )
                    })
                })
                .collect();
            format!(
                "{} ({}, repetition {}, trial {}): {} while the trial ran (LAN watch); the gateway rebooted, hung or lost its LAN link, so the trial's figure is not a clean one of the DUT forwarding{}",
                t.key.case_id,
                t.key.methodology.name(),
                t.key.repetition,
                t.key.index,
                gaps.join("; "),
                if t.superseded {
                    " (the tester also fell behind in that trial, so it was measured again and is not used for any figure)"
                } else {
                    ""
                }
            )
        })
        .collect()
}

/// `HH:MM:SS.mmm` of a Unix time in milliseconds.
fn clock_utc(unix_ms: u64) -> String {
    let ms = unix_ms % 1000;
    let s = (unix_ms / 1000) % 86_400;
    format!("{:02}:{:02}:{:02}.{ms:03}", s / 3600, s / 60 % 60, s % 60)
}

/// The lab DUT's CPU over the trials of one search that ran at `load` (the reported result's
/// load: its lower bound), mean over them. Latency and burst trials are not the search's.
pub(crate) fn cpu_at_load(trials: Option<&Vec<&TrialRecord>>, load: f64) -> Option<f64> {
    let v: Vec<f64> = trials?
        .iter()
        .filter(|t| at_load(t, load))
        .filter_map(|t| t.engine.as_ref()?.dut?.cpu_busy_percent())
        .filter(|p| p.is_finite())
        .collect();
    mean(&v)
}

/// Invalid frames over `trials`, by reason.
pub(crate) fn invalid_of<'a>(trials: impl Iterator<Item = &'a TrialRecord>) -> InvalidCounts {
    let mut t = InvalidCounts::default();
    for e in trials.filter_map(|t| t.engine.as_ref()) {
        t.merge(&e.invalid);
    }
    t
}

/// Frames lost over `trials`, and the DUT's ingress drops over those that recorded them (the
/// second only when every trial did).
pub(crate) fn loss_accounting<'a>(
    trials: impl Iterator<Item = &'a TrialRecord>,
) -> (Option<u64>, Option<u64>) {
    let (mut lost, mut drops, mut n, mut with_dut) = (0u64, 0u64, 0usize, 0usize);
    for t in trials {
        n += 1;
        lost += t.outcome.lost;
        if let Some(d) = t.engine.as_ref().and_then(|e| e.dut) {
            with_dut += 1;
            drops += d.ingress_drops;
        }
    }
    match n {
        0 => (None, None),
        _ => (Some(lost), (with_dut == n).then_some(drops)),
    }
}

/// The packet engines a case's trials ran on, as one cell: `xdp`, `af_packet (why)`, or both.
pub(crate) fn engines_of<'a>(trials: impl Iterator<Item = &'a TrialRecord>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for t in trials {
        let Some(e) = &t.engine else { continue };
        let cell = match e.note.strip_prefix("auto: af_packet, as ") {
            Some(why) if e.backend == "af_packet" => format!("af_packet ({why})"),
            _ => e.backend.clone(),
        };
        if !seen.contains(&cell) {
            seen.push(cell);
        }
    }
    seen.join(" + ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench_model::plan::Methodology;
    use bench_model::results::{DutCounters, EngineFacts, TrialKey};
    use bench_model::search::{LineFraction, Outcome, TrialRequest};

    #[test]
    fn a_tcp_figure_neither_the_link_nor_the_duts_cpu_limited_gets_a_note() {
        let text = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/run-matrix/expected/summary.json"),
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let tcp = v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["methodology"] == "iperf3")
            .unwrap();
        let mut r: Row = serde_json::from_value(tcp.clone()).unwrap();
        r.percent = Some(79.1);
        let note = unsaturated_tcp_note(&r, Some(58.0)).expect("a note");
        assert!(
            note.ends_with("79.1 % of line rate while the DUT's CPU was busy 58 %: neither the link nor the DUT's CPU was the limit, so the pace was probably the tester's (its CPU runs iperf3's client and server and both ports' receive polls); read it as at least this much for the DUT"),
            "{note}"
        );
        // The DUT's CPU saturated, or the link: the figure is the DUT's or the link's.
        assert_eq!(unsaturated_tcp_note(&r, Some(97.0)), None);
        r.percent = Some(98.9);
        assert_eq!(unsaturated_tcp_note(&r, Some(58.0)), None);
        // Without lab counters nothing is said.
        r.percent = Some(79.1);
        assert_eq!(unsaturated_tcp_note(&r, None), None);
    }

    #[test]
    fn a_session_drop_is_a_note_with_its_trial_port_time_and_reason() {
        let mut e = facts("af_packet", "", None);
        e.session_drops = vec![bench_model::results::SessionDrop {
            port: "wan".into(),
            unix_ms: 1_795_300_000_000 + 3_723_456,
            reason: "PadtReceived".into(),
        }];
        let hit = udp_trial(400, Some(e));
        let calm = udp_trial(0, Some(facts("af_packet", "", None)));
        let notes = session_drop_notes([&calm, &hit, &calm].into_iter());
        assert_eq!(notes.len(), 1, "{notes:?}");
        // 1_795_300_000 s is 22:26:40 UTC; + 1 h 2 min 3.456 s.
        assert_eq!(
            notes[0],
            "forward/udp4/64B (multi-goal, repetition 0, trial 0): the PPPoE session on port wan went down at 23:28:43.456 UTC (PadtReceived) while the trial ran; its loss is the DUT's, and the run waited for the session to come back before the next trial"
        );
    }

    #[test]
    fn a_lan_gap_is_a_note_with_its_trial_port_length_and_time() {
        use bench_model::results::{LanWatch, Probe};
        let gw: std::net::IpAddr = "192.0.2.1".parse().unwrap();
        // 30 probes every 100 ms, the last 18 unanswered: silent from 1.2 s to the end of
        // the watch at 3.0 s.
        let probes: Vec<Probe> = (0..30)
            .map(|i| Probe {
                sent_ms: i * 100,
                answered: i < 12,
            })
            .collect();
        let start = 1_795_300_000_000 + 3_723_000;
        let mut hit = udp_trial(400, Some(facts("af_packet", "", None)));
        hit.key.index = 2;
        hit.lan_watch = vec![LanWatch::of("lan", gw, start, &probes, 3000)];
        let mut calm = udp_trial(0, Some(facts("af_packet", "", None)));
        let all: Vec<Probe> = probes
            .iter()
            .map(|p| Probe {
                answered: true,
                ..*p
            })
            .collect();
        calm.lan_watch = vec![LanWatch::of("lan", gw, start, &all, 3000)];
        let notes = lan_gap_notes([&calm, &hit, &calm].into_iter());
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert_eq!(
            notes[0],
            "forward/udp4/64B (multi-goal, repetition 0, trial 2): the gateway 192.0.2.1 did not answer ARP/ND on port lan for 1.8 s from 23:28:44.200 UTC (18 probes unanswered) while the trial ran (LAN watch); the gateway rebooted, hung or lost its LAN link, so the trial's figure is not a clean one of the DUT forwarding"
        );
        // Nothing watched (the lab, older runs): no note.
        assert!(lan_gap_notes([&udp_trial(0, None)].into_iter()).is_empty());
    }

    fn udp_trial(lost: u64, engine: Option<EngineFacts>) -> TrialRecord {
        let load = LineFraction(0.5);
        TrialRecord {
            udp: None,
            key: TrialKey {
                case_id: "forward/udp4/64B".into(),
                repetition: 0,
                methodology: Methodology::MultiGoal,
                index: 0,
            },
            request: TrialRequest::rate(load, core::time::Duration::from_secs(1)),
            outcome: Outcome {
                intended: load,
                offered: load,
                received: 1000 - lost,
                lost,
                fragments: 0,
                directions: 1,
                duration: core::time::Duration::from_secs(1),
                latency: None,
            },
            tester_limited: false,
            iperf3: None,
            tcp: None,
            engine,
            superseded: false,
            lan_watch: Vec::new(),
            finished_unix_ms: 0,
        }
    }

    fn facts(backend: &str, note: &str, ingress_drops: Option<u64>) -> EngineFacts {
        EngineFacts {
            backend: backend.into(),
            note: note.into(),
            sent: 1000,
            slipped: 0,
            refused_by_dut: 0,
            max_catch_up: 0,
            invalid: Default::default(),
            per_direction: Vec::new(),
            dut: ingress_drops.map(|d| DutCounters {
                ingress_rx: 1000,
                ingress_drops: d,
                backlog_drops: d,
                egress_tx: 1000 - d,
                ..Default::default()
            }),
            session_drops: Vec::new(),
            streams: Vec::new(),
            tester_port_drops: Vec::new(),
        }
    }

    #[test]
    fn engine_cell_names_each_backend_once_with_autos_reason() {
        let ts = [
            udp_trial(0, Some(facts("xdp", "auto: xdp (the trial fits it)", None))),
            udp_trial(0, Some(facts("xdp", "auto: xdp (the trial fits it)", None))),
            udp_trial(
                0,
                Some(facts(
                    "af_packet",
                    "auto: af_packet, as XDP cannot run this trial (jumbo)",
                    None,
                )),
            ),
            udp_trial(0, None),
        ];
        assert_eq!(
            engines_of(ts.iter()),
            "xdp + af_packet (XDP cannot run this trial (jumbo))"
        );
        assert_eq!(engines_of(ts[3..].iter()), "");
    }

    #[test]
    fn lost_frames_are_set_against_the_duts_own_ingress_drops() {
        let ts = [
            udp_trial(0, Some(facts("xdp", "", Some(0)))),
            udp_trial(120, Some(facts("xdp", "", Some(120)))),
            udp_trial(7, Some(facts("xdp", "", Some(5)))),
        ];
        assert_eq!(loss_accounting(ts.iter()), (Some(127), Some(125)));
        // One trial without the DUT's counters: no drop figure (it would undercount).
        let mixed = [
            udp_trial(3, Some(facts("xdp", "", Some(3)))),
            udp_trial(4, None),
        ];
        assert_eq!(loss_accounting(mixed.iter()), (Some(7), None));
        assert_eq!(loss_accounting([].iter()), (None, None));
    }

    /// RFC 8219 figures of a case are the median over its trials of each trial's figure.
    #[test]
    fn invalid_frames_are_summed_by_reason_and_survive_a_round_trip() {
        let mut bad = facts("xdp", "", None);
        bad.invalid.checksum = 3;
        bad.invalid.sequence = 1;
        let ts = [
            udp_trial(4, Some(bad.clone())),
            udp_trial(0, Some(facts("xdp", "", None))),
            udp_trial(1, Some(bad)),
            udp_trial(0, None),
        ];
        let t = invalid_of(ts.iter());
        assert_eq!(
            (t.total(), t.describe()),
            (8, "6 checksum, 2 sequence".into())
        );
        assert!(invalid_of(ts[1..2].iter()).is_zero());
        // trials.jsonl: written only when not zero, read back (older records: zero).
        let line = serde_json::to_string(&ts[0]).unwrap();
        assert!(line.contains("\"invalid\":{\"checksum\":3"), "{line}");
        let back: TrialRecord = serde_json::from_str(&line).unwrap();
        assert_eq!(back.engine.unwrap().invalid.total(), 4);
        assert!(!serde_json::to_string(&ts[1]).unwrap().contains("invalid"));
    }
}
