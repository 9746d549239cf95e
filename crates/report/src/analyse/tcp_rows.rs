//! The results table's iperf3 rows: one per case, over its repetitions (one run each; the
//! last trial with a parsable report counts), in frames of the MSS (or as the wire counted
//! them) against that frame's line rate.

use bench_model::iperf3;
use bench_model::plan::Methodology;
use wire::units::{BitsPerSec, Pps};

use super::index::Index;
use super::notes::unsaturated_tcp_note;
use crate::analyse::udp_rows::CaseSamples;
use crate::model::{half_spread, iperf3_interval_spread, mean, Dims, NoiseBasis, Row};

/// The iperf3 row of `case_id`, `None` when none of its trials has a report; a note when the
/// figure looks like the tester's.
#[allow(clippy::too_many_arguments)]
pub(crate) fn row(
    index: &Index,
    case_id: &str,
    m: Methodology,
    dims: Dims,
    samples: CaseSamples,
    speed: BitsPerSec,
    reps: u32,
    notes: &mut Vec<String>,
) -> Option<Row> {
    let CaseSamples {
        dut_cpu_percent,
        dut_power_watts,
    } = samples;
    let mut rep_pps = Vec::new();
    let mut rep_l2 = Vec::new();
    let mut rep_l4 = Vec::new();
    let mut frame_len = 0.0;
    let mut directions = 1;
    let mut max_pps = 0.0;
    let mut rep_cpu = Vec::new();
    let mut rep_spread = Vec::new();
    for ((c, _, mm), ts) in &index.trials {
        if c != case_id || *mm != m {
            continue;
        }
        // The runner's TCP figures when it recorded them (MSS as captured on the wire),
        // else the raw iperf3 JSON.
        let Some(t) = ts
            .iter()
            .rev()
            .find(|t| t.tcp.is_some() || t.iperf3.is_some())
        else {
            continue;
        };
        let rep = t
            .iperf3
            .as_ref()
            .and_then(|v| iperf3::report::parse(&v.to_string()).ok());
        let Some((l4, mss, facts)) = crate::compat::tcp_of(t, rep.as_ref(), &dims, speed) else {
            continue;
        };
        let rates = iperf3::tcp_rates(l4, mss, dims.ip, true);
        frame_len = facts.frame_len;
        directions = facts.directions;
        max_pps = facts.max_pps().0;
        // What a tester port's counters saw, where the runner read them: iperf3's own
        // figure can exceed what the link carried (bench_model::iperf3::wire_count).
        let wire = t
            .tcp
            .as_ref()
            .and_then(|f| f.wire_count)
            .filter(|w| w.frames > 0 && w.seconds > 0.0);
        rep_pps.push(wire.map_or(rates.frames.0, |w| w.fps()));
        if let Some(c) = t
            .tcp
            .as_ref()
            .and_then(|f| f.dut)
            .and_then(|d| d.cpu_busy_percent())
            .filter(|c| c.is_finite())
        {
            rep_cpu.push(c);
        }
        if let Some(s) = t.iperf3.as_ref().and_then(iperf3_interval_spread) {
            rep_spread.push(s);
        }
        rep_l2.push(t.tcp.as_ref().map_or(rates.l2.0, |f| f.l2_bps.0));
        rep_l4.push(l4.0);
    }
    if rep_pps.is_empty() {
        return None;
    }
    let pps = mean(&rep_pps);
    let (noise_pps, noise_basis) = match (rep_pps.len(), rep_spread.as_slice(), pps) {
        (n, _, _) if n >= 2 => (half_spread(&rep_pps), NoiseBasis::Repetitions),
        (1, [s], Some(p)) => (s * p, NoiseBasis::Iperf3Intervals),
        _ => (0.0, NoiseBasis::None),
    };
    let dut_cpu_percent = mean(&rep_cpu).or(dut_cpu_percent);
    let row = Row {
        case_id: case_id.to_string(),
        dims,
        methodology: m,
        loss_goal: None,
        sporadic_loss: false,
        repetitions: rep_pps.len(),
        repetitions_planned: reps,
        directions,
        frame_len,
        pps: pps.map(Pps),
        l2_bps: mean(&rep_l2).map(BitsPerSec),
        l4_bps: mean(&rep_l4).map(BitsPerSec),
        noise_pps: Pps(noise_pps),
        noise_basis,
        resolution_pps: Pps(0.0),
        rep_pps: rep_pps.into_iter().map(Pps).collect(),
        max_pps: Pps(max_pps),
        max_l2_bps: BitsPerSec(max_pps * frame_len * 8.0),
        bottleneck: "link".into(),
        path_encap: None,
        percent: pps.map(|p| 100.0 * p / max_pps),
        tester_limited: false,
        tester_reached_percent: None,
        dut_cpu_percent,
        dut_power_watts,
        per_direction: Vec::new(),
        engine: String::new(),
        trial_frames_lost: None,
        dut_ingress_drops: None,
        trial_frames_invalid: None,
        conditional_pps: None,
        irregular_repetitions: 0,
        above_line: None,
    };
    let lab_cpu = mean(&rep_cpu);
    if let Some(n) = unsaturated_tcp_note(&row, lab_cpu) {
        notes.push(n);
    }
    Some(row)
}
