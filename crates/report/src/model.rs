//! What the analysis of a run is made of: [`Analysis`] and its rows, the dimensions a case is
//! grouped by ([`Dims`]), and the helpers the analysis and exporters share; `crate::analyse`
//! computes it.
//!
//! Every number the exporters show is computed once, so HTML, CSV, Markdown and JSON cannot
//! disagree. Rates are turned from line fractions into frames and bits per second with the
//! 100 % the runner recorded for the case's path (`UdpFacts::line`; DESIGN.md §4), never
//! hard-coded.
use std::collections::BTreeMap;

use bench_model::plan::Methodology;
use bench_model::results::{LineRate, Record, RunInfo, TrialRecord};
use serde::{Deserialize, Serialize};
use wire::encap::EncapSpec;
use wire::linerate::FrameSize;
use wire::units::{BitsPerSec, Pps};

/// Link speed assumed when the plan cannot be read (it names none).
pub const DEFAULT_SPEED: f64 = 1e9;

/// Per-case DUT statistics, derived from the hook outputs the runner records in `hooks.jsonl`
/// ([`dut_stats_from_hooks`]). A run without CPU hooks has no CPU figures, one without a power
/// meter's sampler no power figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseStats {
    /// Case id.
    pub case_id: String,
    /// Repetition, from 0.
    pub repetition: u32,
    /// DUT CPU busy percent during the case (e.g. from a `proc-stat` before/after pair).
    #[serde(default)]
    pub dut_cpu_percent: Option<f64>,
    /// DUT power in watts during the case: the mean of a `power` sampler's readings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut_power_watts: Option<f64>,
    /// What a reader must know about the case's hooks: a sampler that ended by itself before
    /// the case did (`HookOutput::sampler_ended_warning`), shown in the report's notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hook_warning: Option<String>,
}

/// One line of `hooks.jsonl` as the runner writes it (`bench_model::runner`): a DUT hook's output,
/// with its case when it ran for one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookRecord {
    /// Case id, for per-case hooks (`stats-before`, `stats-after`, `sampler`).
    #[serde(default)]
    pub case_id: Option<String>,
    /// Profile.
    pub profile: String,
    /// `setup`, `teardown`, `stats-before`, `stats-after` or `sampler`.
    pub stage: String,
    /// What the hook printed, raw and parsed.
    pub output: bench_model::hooks::HookOutput,
}

/// DUT CPU and power per case from hook outputs: a `vmstat` sampler's mean, or a `/proc/stat`
/// `stats-before`/`stats-after` pair of the same case, for CPU; a `power` sampler's mean for
/// power. The n-th CPU (power) figure of a case is repetition n.
pub fn dut_stats_from_hooks(lines: &[HookRecord]) -> Vec<CaseStats> {
    use bench_model::hooks::parse::{cpu_busy_percent, Parsed};
    let mut out: Vec<CaseStats> = Vec::new();
    let mut before: BTreeMap<&str, &Vec<bench_model::hooks::parse::CpuTimes>> = BTreeMap::new();
    let push = |case: &str, cpu: Option<f64>, power: Option<f64>, out: &mut Vec<CaseStats>| {
        let repetition = out
            .iter()
            .filter(|s| {
                s.case_id == case
                    && s.dut_cpu_percent.is_some() == cpu.is_some()
                    && s.dut_power_watts.is_some() == power.is_some()
            })
            .count() as u32;
        out.push(CaseStats {
            case_id: case.into(),
            repetition,
            dut_cpu_percent: cpu,
            dut_power_watts: power,
            hook_warning: None,
        });
    };
    let mut warnings = Vec::new();
    for l in lines {
        let Some(case) = l.case_id.as_deref() else {
            continue;
        };
        if l.stage == "sampler" && l.output.sampler_ended_early() {
            warnings.push(CaseStats {
                case_id: case.into(),
                repetition: 0,
                dut_cpu_percent: None,
                dut_power_watts: None,
                hook_warning: Some(l.output.sampler_ended_warning(case, l.output.command())),
            });
        }
        match (l.stage.as_str(), &l.output.parsed) {
            ("sampler", Some(Parsed::Vmstat(s))) => {
                if let Some(m) = s.mean() {
                    push(case, Some(m), None, &mut out);
                }
            }
            ("sampler", Some(Parsed::Power(p))) => {
                if let Some(w) = p.mean() {
                    push(case, None, Some(w), &mut out);
                }
            }
            ("stats-before", Some(Parsed::ProcStat(t))) => {
                before.insert(case, t);
            }
            ("stats-after", Some(Parsed::ProcStat(t))) => {
                if let Some(b) = before.remove(case) {
                    if let Some(p) = cpu_busy_percent(b, t, "cpu") {
                        push(case, Some(p), None, &mut out);
                    }
                }
            }
            _ => {}
        }
    }
    out.extend(warnings);
    out
}

/// Everything read from a run directory; the CLI fills it, the report never touches files.
#[derive(Debug, Clone, Copy)]
pub struct RunInput<'a> {
    /// `run.json`.
    pub info: &'a RunInfo,
    /// Complete records of `trials.jsonl`.
    pub records: &'a [Record],
    /// The last line of `trials.jsonl` was torn (the run was killed mid-write).
    pub torn_tail: bool,
    /// DUT statistics per case ([`dut_stats_from_hooks`] of `hooks.jsonl`).
    pub stats: &'a [CaseStats],
}

pub use crate::dims::Dims;

/// One throughput figure of one case (a throughput search or iperf3), over all repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Case id.
    pub case_id: String,
    /// Dimensions.
    pub dims: Dims,
    /// Methodology (`rfc2544-throughput`, `multi-goal`, `forwarding-rate`, `iperf3`).
    pub methodology: Methodology,
    /// A multi-goal row's loss goal (0 for NDR, 0.005 for PDR 0.5 %): such a search has a row
    /// per goal. `None` for the other methodologies (and in summaries written before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss_goal: Option<f64>,
    /// Repetitions that produced a DUT figure.
    pub repetitions: usize,
    /// Repetitions planned.
    pub repetitions_planned: u32,
    /// Directions summed (2 for a bidirectional UDP case or an iperf3 `--bidir` run); the
    /// rates and maxima of the row are sums over them.
    pub directions: u8,
    /// Frame length on the reference link, bytes with FCS (mean for TCP: full segments).
    pub frame_len: f64,
    /// Measured frames per second (mean over repetitions, directions summed).
    pub pps: Option<Pps>,
    /// Measured L2 bits per second (frame bytes with FCS).
    pub l2_bps: Option<BitsPerSec>,
    /// L4 bits per second (iperf3 only).
    pub l4_bps: Option<BitsPerSec>,
    /// Per-repetition frames per second.
    pub rep_pps: Vec<Pps>,
    /// Noise in frames per second, the ± that findings and comparisons allow the figure
    /// ([`NoiseBasis`] says how it was measured): with two or more repetitions, half the
    /// spread over them plus half the search's final interval (its resolution); with one, the
    /// search's whole final bracket (UDP) or the spread of iperf3's per-interval rates (TCP).
    pub noise_pps: Pps,
    /// How `noise_pps` was measured.
    #[serde(default)]
    pub noise_basis: NoiseBasis,
    /// A UDP search's resolution: the mean width of its repetitions' final brackets, frames/s
    /// (0 for iperf3 and forwarding rates). Each repetition's figure is a lower bound anywhere
    /// within such a step, which `compare`'s test over repetitions counts; not exported.
    #[serde(skip)]
    pub resolution_pps: Pps,
    /// Theoretical maximum frames per second on the bottleneck link (directions summed).
    pub max_pps: Pps,
    /// Theoretical maximum L2 bits per second at the reference link (directions summed).
    pub max_l2_bps: BitsPerSec,
    /// Bottleneck link name.
    pub bottleneck: String,
    /// The headers the row's frames carried on the path (UDP: the records' `UdpFacts::encap`),
    /// for the charts' theoretical curves; not exported.
    #[serde(skip)]
    pub path_encap: Option<EncapSpec>,
    /// Percent of the theoretical maximum reached.
    pub percent: Option<f64>,
    /// The tester, not the DUT, set the pace in some repetition: no DUT figure.
    pub tester_limited: bool,
    /// For tester-limited cells: what the tester reached, percent of line rate.
    pub tester_reached_percent: Option<f64>,
    /// Mean DUT CPU busy percent, when captured.
    pub dut_cpu_percent: Option<f64>,
    /// Mean DUT power in watts over the case, when a `power` sampler measured it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut_power_watts: Option<f64>,
    /// A bidirectional case's figure direction by direction (A→B first), at the reported
    /// result: `pps` and `percent` are the sum of these. Empty for one-way cases, for
    /// tester-limited ones and for runs recorded before trials kept their directions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_direction: Vec<DirectionFigure>,
    /// The packet engine(s) the case's UDP trials ran on (`xdp`, `af_packet`, with auto's
    /// reason for AF_PACKET); empty for iperf3 and for runs recorded before engines were.
    #[serde(default)]
    pub engine: String,
    /// Frames lost over all of the case's UDP trials (every load its searches tried).
    #[serde(default)]
    pub trial_frames_lost: Option<u64>,
    /// The lab DUT's own count of frames it dropped at its ingress port over the same trials
    /// (its queue full): where it equals `trial_frames_lost`, the DUT's counters account for
    /// every lost frame. `None` without a lab DUT or in older runs.
    #[serde(default)]
    pub dut_ingress_drops: Option<u64>,
    /// Signed frames of the case's UDP trials that the receivers did not count because they
    /// were not valid for their stream (corrupted, re-encapsulated, fragmented, foreign
    /// destination, forged sequence or timestamp): part of `trial_frames_lost`. `None` when
    /// there were none; a note names the reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trial_frames_invalid: Option<u64>,
    /// Multi-goal only: RFC 9971 conditional throughput of goal 0 (frames/s, directions
    /// summed), mean over the repetitions that have it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditional_pps: Option<Pps>,
    /// The figure's own trials show sporadic loss well below what the device forwarded
    /// (`crate::sporadic`; a note says where): its noise is that range, and summaries compare
    /// another loss goal where there is one.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sporadic_loss: bool,
    /// Multi-goal only: repetitions whose goal 0 result is irregular (RFC 9971); a note names
    /// them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub irregular_repetitions: usize,
    /// A figure above 100 % of line rate, which no wire of that speed carries: what it is
    /// instead (`bench_model::port_link::AboveLine`, from the run's port links). Its label is
    /// the row's status, never `ok`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub above_line: Option<bench_model::port_link::AboveLine>,
}

impl Row {
    /// The methodology as tables show it: a multi-goal row names its goal (`multi-goal NDR`,
    /// `multi-goal PDR 0.5 %`).
    pub fn methodology_label(&self) -> String {
        label(self.methodology.name(), self.loss_goal)
    }

    /// Whether this is a figure of case `case` by methodology `m`.
    pub fn is_figure_of(&self, case: &str, m: Methodology) -> bool {
        self.case_id == case && m == self.methodology
    }
}

/// How a row's noise was measured. One figure has no spread of its own, so a single-repetition
/// run takes the uncertainty each measurement carries: a search knows its result only to within
/// its final bracket, and an iperf3 run's rate wanders from interval to interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NoiseBasis {
    /// Two or more repetitions: half their spread (+ half the search resolution for UDP).
    Repetitions,
    /// One repetition of a search: the result lies between the final bracket's lower bound
    /// (the figure) and its upper bound, so the noise is the bracket's whole width.
    SearchBracket,
    /// One iperf3 run: the standard deviation of its per-interval rates
    /// (`intervals[].sum.bits_per_second`, the first interval left out as TCP's ramp-up when
    /// there are three or more), relative to their mean, applied to the figure.
    Iperf3Intervals,
    /// A forwarding rate's trials at the offered load (every repetition's): half their
    /// spread.
    Trials,
    /// The search's own trials disagree: frames were lost below a rate the device forwarded in
    /// another trial, which a capacity limit cannot do (`crate::sporadic`). The figure may be
    /// anywhere from itself to what the device was seen to forward, and that range is the
    /// noise. Sporadic loss (on the lab VM: the DUT's vCPU delayed) shows this way, and so does a
    /// capacity that wobbles from trial to trial.
    SporadicLoss,
    /// Nothing to measure noise with (no bracket, no intervals, older records).
    #[default]
    None,
}

impl NoiseBasis {
    /// How a reader is told which noise measure a figure used.
    pub fn describe(self) -> &'static str {
        match self {
            NoiseBasis::Repetitions => "spread over repetitions",
            NoiseBasis::SearchBracket => "the search's final bracket",
            NoiseBasis::Iperf3Intervals => "iperf3's per-interval spread",
            NoiseBasis::Trials => "spread over the trials at the offered load",
            NoiseBasis::SporadicLoss => {
                "its trials' disagreement (frames lost below a rate forwarded elsewhere)"
            }
            NoiseBasis::None => "no noise measured",
        }
    }

    /// What the measure is, for a legend that explains it once for every line that uses it.
    pub fn explain(self) -> &'static str {
        match self {
            NoiseBasis::Repetitions => {
                "half the spread of the repetitions' figures, plus half the search's final step for UDP"
            }
            NoiseBasis::SearchBracket => {
                "one repetition of a search: its final bracket, the figure being the bracket's lower bound and the device's rate anywhere up to its upper bound"
            }
            NoiseBasis::Iperf3Intervals => {
                "one iperf3 run: the standard deviation of its per-interval rates (slow start left out), relative to their mean"
            }
            NoiseBasis::Trials => "a forwarding rate: half the spread of its trials at the offered load",
            NoiseBasis::SporadicLoss => {
                "the search's own trials disagree: frames were lost below a rate forwarded in another trial, so the figure may lie anywhere up to the best forwarded"
            }
            NoiseBasis::None => "nothing measured it (older records); such lines are not judged",
        }
    }
}

/// The relative spread of one iperf3 run: the standard deviation of its per-interval rates
/// over their mean, from the raw JSON (`intervals[].sum.bits_per_second`). The first interval
/// is left out when there are three or more (slow start makes it low, not noisy). `None` when
/// fewer than two usable intervals remain or the JSON lacks them.
pub fn iperf3_interval_spread(raw: &serde_json::Value) -> Option<f64> {
    let mut v: Vec<f64> = raw
        .get("intervals")?
        .as_array()?
        .iter()
        .filter_map(|i| i.get("sum")?.get("bits_per_second")?.as_f64())
        .filter(|x| x.is_finite() && *x >= 0.0)
        .collect();
    if v.len() >= 3 {
        v.remove(0);
    }
    if v.len() < 2 {
        return None;
    }
    let m = v.iter().sum::<f64>() / v.len() as f64;
    if m <= 0.0 {
        return None;
    }
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (v.len() - 1) as f64;
    Some(var.sqrt() / m)
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// Whether `t` is one of a search's own trials (not latency, not a burst) at `load`.
pub(crate) fn at_load(t: &TrialRecord, load: f64) -> bool {
    let l = t.request.load.0;
    !t.request.latency
        && t.request.burst_frames.is_none()
        && (l - load).abs() <= 1e-9 * l.abs().max(load.abs()).max(1.0)
}

/// The frame-loss-rate curve of one case (mean over repetitions per load).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LossCurveRow {
    /// Case id.
    pub case_id: String,
    /// Dimensions.
    pub dims: Dims,
    /// (offered load percent, loss percent), highest load first.
    pub points: Vec<(f64, f64)>,
}

/// Latency of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyRow {
    /// Case id.
    pub case_id: String,
    /// Dimensions.
    pub dims: Dims,
    /// The load the latency trials ran at, percent of line rate.
    pub load_percent: f64,
    /// Smallest one-way latency, microseconds.
    pub min_us: f64,
    /// Mean of the trials' means, microseconds.
    pub mean_us: f64,
    /// Largest, microseconds.
    pub max_us: f64,
    /// Frames that contributed.
    pub samples: u64,
    /// Percentiles p50, p90, p99 and p99.9 in microseconds: per percentile, the mean of the
    /// trials' values weighted by their frames (the trials' histograms are not kept, so this
    /// is not the percentile of all frames pooled). `None` when any trial lacks them (runs
    /// recorded before percentiles were kept).
    #[serde(default)]
    pub percentiles_us: Option<[f64; 4]>,
    /// RFC 8219 §7.2 Typical Latency (each trial's median), the median over the trials, µs.
    #[serde(default)]
    pub typical_us: Option<f64>,
    /// RFC 8219 §7.2 Worst Case Latency (each trial's 99.9th percentile), median over trials, µs.
    #[serde(default)]
    pub worst_case_us: Option<f64>,
    /// RFC 8219 §7.3.1 PDV (each trial's 99.9th percentile minus its minimum), median over the
    /// trials, µs. `None`, like the two above, when any trial lacks percentiles.
    #[serde(default)]
    pub pdv_us: Option<f64>,
    /// RFC 8219 §7.3.2 IPDV of the measured stream, IPDV(i) = D(i) − D(i−1) over frames with
    /// consecutive sequence numbers: each trial's Dmin, Dmed and Dmax, each the median over
    /// the trials (as the RFC summarises repetitions), µs, signed. `None` when any trial lacks
    /// it: fewer than two consecutive frames received, or records from before the XDP
    /// receiver measured IPDV.
    #[serde(default)]
    pub ipdv_us: Option<IpdvUs>,
}

/// RFC 8219 §7.3.2 IPDV summary of a latency row, µs (signed).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct IpdvUs {
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

/// RFC 2544 §26.4 / RFC 9004 back-to-back result of one case (mean over repetitions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BackToBackRow {
    /// Case id.
    pub case_id: String,
    /// Dimensions.
    pub dims: Dims,
    /// Repetitions that completed.
    pub repetitions: usize,
    /// Average back-to-back frames (the longest loss-free burst at the minimum gap).
    pub mean_frames: f64,
    /// Maximum theoretical frame rate of one direction, frames/s.
    pub max_pps: Pps,
    /// Throughput of the same case (one direction, frames/s) from a completed
    /// `rfc2544-throughput` search, else the first goal of a completed `multi-goal` search.
    pub throughput_pps: Option<Pps>,
    /// RFC 9004 Implied DUT Buffer Time, ms.
    pub implied_buffer_ms: f64,
    /// RFC 9004 Corrected DUT Buffer Time, ms; `None` with [`Self::corrected_refused`].
    pub corrected_buffer_ms: Option<f64>,
    /// Why the corrected buffer time is not given.
    pub corrected_refused: Option<String>,
}

/// Names of [`LatencyRow::percentiles_us`], in order, as tables and CSV head them.
pub const PERCENTILES: [&str; 4] = ["p50", "p90", "p99", "p99.9"];

/// One statement about a profile against the baseline profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    /// Profile.
    pub profile: String,
    /// Baseline profile.
    pub baseline: String,
    /// The matrix point (`64 B, IPv4 UDP`).
    pub point: String,
    /// (profile − baseline) / baseline, percent.
    pub delta_percent: f64,
    /// The noise both figures carry, percent of the baseline.
    pub noise_percent: f64,
    /// Whether the difference exceeds the noise.
    pub significant: bool,
    /// The sentence.
    pub text: String,
    /// The rows compared, (case id, methodology): the profile's first, the baseline's second,
    /// so a reader (and a test) can check the sentence against the table.
    #[serde(default)]
    pub cites: Vec<(String, String)>,
    /// How the noise of the two figures was measured ([`NoiseBasis::describe`]).
    #[serde(default)]
    pub noise: String,
    /// The sentence without its noise, for the report's one list of findings
    /// ([`crate::finding_list`]), which gives the noise as `± N %` and its measure in a legend
    /// once; `text` keeps the whole sentence for summary.json. Not exported.
    #[serde(skip)]
    pub claim: String,
}

/// A summary of one dimension of the matrix, as a person would write it ("fastpath on: +80 %
/// for napt at 64 B, IPv4 UDP"). Each compares two rows of the results table that differ only
/// in that dimension, at the point where a per-packet cost shows most (the smallest frame
/// size, or the smallest MSS with the fewest sessions, that both rows measured), and exists
/// only where the difference exceeds both figures' noise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Conclusion {
    /// `profile`, `fastpath`, `offload` or `ip`.
    pub dimension: String,
    /// The rows compared, (case id, methodology): the subject (a profile, the switch on,
    /// IPv6) first, its reference (the baseline, the switch off, IPv4) second.
    pub cites: Vec<(String, String)>,
    /// (subject − reference) / reference, percent, of frames per second.
    pub delta_percent: f64,
    /// The noise both figures carry, percent of the reference.
    pub noise_percent: f64,
    /// How that noise was measured.
    pub noise: String,
    /// The sentence.
    pub text: String,
    /// The sentence without its noise (see [`Statement::claim`]). Not exported.
    #[serde(skip)]
    pub claim: String,
}

/// One direction of a bidirectional case's figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectionFigure {
    /// `a→b` or `b→a` (sending port → receiving port).
    pub direction: String,
    /// Frames/s received in this direction (mean over repetitions of the trials at the result).
    pub pps: Pps,
    /// L2 bits per second (frames with FCS).
    pub l2_bps: BitsPerSec,
    /// Percent of one direction's line rate on the case's path.
    pub percent: f64,
    /// The load this direction's sender offered, percent of the same line rate (mean over
    /// repetitions): beside `percent`, what was asked of the DUT this way.
    #[serde(default)]
    pub offered_percent: f64,
    /// Frames sent, received and lost this way, summed over the trials at the result (every
    /// repetition): received + lost = sent.
    #[serde(default)]
    pub sent: u64,
    #[serde(default)]
    pub received: u64,
    #[serde(default)]
    pub lost: u64,
}

/// Each direction of a bidirectional case at its result: for each repetition's result load
/// (`loads`), the receive rate of each direction in the trials that ran at that load, as the
/// runner recorded them (`EngineFacts::per_direction`); the mean over repetitions. `one_way`
/// is one direction's line rate in frames/s.
pub(crate) fn direction_figures(
    trials: &[Option<&Vec<&TrialRecord>>],
    loads: &[f64],
    one_way: f64,
    frame_len: f64,
) -> Vec<DirectionFigure> {
    /// One direction's figures over the result trials.
    #[derive(Default)]
    struct Seen {
        rx_pps: Vec<f64>,
        offered: Vec<f64>,
        counts: [u64; 3],
    }
    let mut seen: Vec<(String, Seen)> = Vec::new();
    for (ts, &load) in trials.iter().zip(loads) {
        let Some(ts) = ts else { continue };
        for t in ts.iter().filter(|t| at_load(t, load)) {
            let Some(e) = &t.engine else { continue };
            for d in &e.per_direction {
                let name = format!("{}→{}", d.tx_port, d.rx_port);
                let at = match seen.iter().position(|(n, _)| *n == name) {
                    Some(i) => i,
                    None => {
                        seen.push((name, Seen::default()));
                        seen.len() - 1
                    }
                };
                let s = &mut seen[at].1;
                s.rx_pps.push(d.rx_pps.0);
                s.offered.push(d.offered);
                s.counts[0] += d.sent;
                s.counts[1] += d.received;
                s.counts[2] += d.lost;
            }
        }
    }
    seen.into_iter()
        .filter_map(|(direction, s)| {
            let pps = mean(&s.rx_pps)?;
            Some(DirectionFigure {
                direction,
                pps: Pps(pps),
                l2_bps: BitsPerSec(pps * frame_len * 8.0),
                percent: if one_way > 0.0 {
                    100.0 * pps / one_way
                } else {
                    0.0
                },
                offered_percent: 100.0 * mean(&s.offered).unwrap_or(0.0),
                sent: s.counts[0],
                received: s.counts[1],
                lost: s.counts[2],
            })
        })
        .collect()
}

/// One figure of a switch table: the row of the results table it comes from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchCell {
    /// Case id.
    pub case_id: String,
    /// Measured L2 bits per second; `None` when tester-limited.
    pub l2_bps: Option<BitsPerSec>,
    /// Percent of line rate.
    pub percent: Option<f64>,
    /// DUT CPU busy percent.
    pub dut_cpu_percent: Option<f64>,
    /// DUT power in watts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut_power_watts: Option<f64>,
    /// No DUT figure: the tester set the pace.
    pub tester_limited: bool,
}

/// One line of a switch table: the same point with the switch off and on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchRow {
    /// The point (`64 B`, `MSS 400`, `4 sessions`).
    pub point: String,
    /// The switch off.
    pub off: Option<SwitchCell>,
    /// The switch on.
    pub on: Option<SwitchCell>,
    /// (on − off) / off of frames per second, percent, when both are DUT figures.
    pub delta_percent: Option<f64>,
    /// Whether that difference exceeds both figures' noise.
    pub significant: bool,
}

/// A switch dimension side by side: the MSS × offload table of TCP runs (rows MSS, columns
/// offload off/on) and the fast-path on/off comparison (rows frame size or sessions), one
/// table per profile and the rest of the case's dimensions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SwitchTable {
    /// `offload` or `fastpath`.
    pub switch: String,
    /// Profile.
    pub profile: String,
    /// The profile and what the table holds fixed (`forward: 1 session, IPv4 TCP`).
    pub title: String,
    /// Methodology of its rows.
    pub methodology: String,
    /// Lines.
    pub rows: Vec<SwitchRow>,
}

/// What a killed or unfinished run lacks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Completeness {
    /// (case, repetition, methodology) searches the plan asks for (0 when unknown).
    pub expected: usize,
    /// Searches that finished.
    pub finished: usize,
    /// The last line of `trials.jsonl` was torn.
    pub torn_tail: bool,
    /// Searches that started but did not finish: `case (methodology, repetition N): K trials`.
    pub in_progress: Vec<String>,
    /// Searches not started: `case (methodology): N of M repetitions missing`.
    pub missing: Vec<String>,
    /// Why the plan in `run.json` could not be read, if it could not.
    pub plan_error: Option<String>,
}

impl Completeness {
    /// True when everything the plan asked for is there.
    pub fn is_complete(&self) -> bool {
        self.plan_error.is_none()
            && !self.torn_tail
            && self.in_progress.is_empty()
            && self.missing.is_empty()
    }
}

/// The whole report, ready to export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Plan name.
    pub plan_name: String,
    /// Plan description.
    pub description: Option<String>,
    /// wirerate version that ran.
    pub version: String,
    /// Start, Unix seconds.
    pub started_unix: u64,
    /// Host facts.
    pub host: BTreeMap<String, String>,
    /// Reference link speed, bits per second.
    pub speed_bps: BitsPerSec,
    /// Repetitions per case.
    pub repetitions: u32,
    /// Profiles in plan order.
    pub profiles: Vec<String>,
    /// The profile the others are compared with (the plan's first).
    pub baseline: Option<String>,
    /// Throughput rows.
    pub rows: Vec<Row>,
    /// Loss curves.
    pub loss_curves: Vec<LossCurveRow>,
    /// Latency.
    pub latency: Vec<LatencyRow>,
    /// Back-to-back (RFC 2544 §26.4 with RFC 9004's buffer times).
    #[serde(default)]
    pub back_to_back: Vec<BackToBackRow>,
    /// Connection methodologies (NAT table capacity, connection rate); absent when none ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connections: Vec<crate::connections::ConnRow>,
    /// `mtu-probe` results, per case and direction (crate::mtu).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mtu: Vec<MtuRow>,
    /// Findings: each profile against the baseline, per case.
    pub findings: Vec<Statement>,
    /// Findings summarised per dimension ([`Conclusion`]).
    #[serde(default)]
    pub conclusions: Vec<Conclusion>,
    /// MSS × offload and fast-path tables ([`SwitchTable`]); empty without those dimensions.
    #[serde(default)]
    pub switch_tables: Vec<SwitchTable>,
    /// What is missing.
    pub completeness: Completeness,
    /// Things a reader must know (assumptions, records the run did not have).
    pub notes: Vec<String>,
}

/// Theoretical maximum of a UDP frame size on a path with `encap`, summed over both
/// directions when `bidirectional` (`wire::linerate`'s `rate(size, bidirectional)`): (pps, L2
/// bps at the reference link, bottleneck name). `None` when the size does not fit. For the
/// charts' theoretical curves; rows take their maximum from the records
/// (`UdpFacts::line`).
pub fn udp_max(
    speed: f64,
    encap: EncapSpec,
    bidirectional: bool,
    frame: u32,
) -> Option<(f64, f64, String)> {
    let line = LineRate::on_path(
        BitsPerSec(speed),
        encap,
        &FrameSize::Fixed {
            bytes: frame as usize,
        },
    )?;
    let (pps, l2) = line.times(if bidirectional { 2 } else { 1 });
    Some((pps.0, l2.0, line.bottleneck))
}

pub(crate) fn mean(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        None
    } else {
        Some(v.iter().sum::<f64>() / v.len() as f64)
    }
}

pub(crate) fn half_spread(v: &[f64]) -> f64 {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if v.len() < 2 {
        0.0
    } else {
        (hi - lo) / 2.0
    }
}

/// Whether `a` and `b` differ by more than their noise: |a − b| > noise(a) + noise(b).
pub fn beyond_noise(a: f64, noise_a: f64, b: f64, noise_b: f64) -> bool {
    (a - b).abs() > noise_a + noise_b
}

/// Signed percent with a real minus sign: `−48 %`, `+12 %`.
pub fn signed_percent(p: f64) -> String {
    let r = p.round();
    if r == 0.0 {
        "±0 %".into()
    } else if r < 0.0 {
        format!("\u{2212}{} %", -r)
    } else {
        format!("+{r} %")
    }
}

/// How a row's methodology reads in tables: a multi-goal row names its goal (NDR for zero
/// loss, PDR with the loss it allows).
pub fn label(methodology: &str, loss_goal: Option<f64>) -> String {
    match loss_goal {
        Some(r) if r <= 0.0 => format!("{methodology} NDR"),
        Some(r) => format!("{methodology} PDR {} %", r * 100.0),
        None => methodology.to_string(),
    }
}

/// One direction of one `mtu-probe` search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MtuRow {
    pub case_id: String,
    pub dims: Dims,
    pub repetition: u32,
    /// `forward` / `reverse`.
    pub direction: String,
    /// The plan's ports, sender→receiver (`lan→wan`), or `A→B` / `B→A` without names.
    pub path: String,
    /// Sizes searched (reference frames with FCS).
    pub min_size: u32,
    pub max_size: u32,
    /// The largest size that crossed whole; `None`: not even `min_size`.
    pub largest_whole: Option<u32>,
    /// The size probed above it (one byte up, or `min_size`), and what its frames did.
    pub above_size: Option<u32>,
    pub above_fate: Option<String>,
    pub above_sent: Option<u64>,
    pub above_received: Option<u64>,
    pub above_fragments: Option<u64>,
    /// `complete`, or why the figure is not a DUT figure (tester-limited, incomplete).
    pub status: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One iperf3 run's noise: the spread of its per-interval rates without the slow-start
    /// interval; odd reports (no intervals, one interval, strings, zeros) give none.
    #[test]
    fn iperf3_interval_spread_skips_slow_start_and_odd_reports() {
        let run = |v: &[serde_json::Value]| serde_json::json!({ "intervals": v.iter().map(|b| serde_json::json!({ "sum": { "bits_per_second": b } })).collect::<Vec<_>>() });
        let j = |x: f64| serde_json::json!(x);
        // 100, 102, 98 after a slow 40: sd 2 of mean 100.
        let s = iperf3_interval_spread(&run(&[j(40.0), j(100.0), j(102.0), j(98.0)])).unwrap();
        assert!((s - 0.02).abs() < 1e-12, "{s}");
        // Two intervals: both count.
        let s = iperf3_interval_spread(&run(&[j(90.0), j(110.0)])).unwrap();
        assert!((s - (200.0f64).sqrt() / 100.0).abs() < 1e-12, "{s}");
        assert_eq!(iperf3_interval_spread(&run(&[j(100.0)])), None);
        assert_eq!(iperf3_interval_spread(&run(&[j(0.0), j(0.0)])), None);
        assert_eq!(iperf3_interval_spread(&serde_json::json!({})), None);
        assert_eq!(
            iperf3_interval_spread(&serde_json::json!({ "intervals": 3 })),
            None
        );
        let odd = run(&[
            serde_json::json!("fast"),
            j(100.0),
            serde_json::Value::Null,
            j(100.0),
        ]);
        assert_eq!(iperf3_interval_spread(&odd), Some(0.0));
    }

    /// A sampler that ended by itself (issue 33: `cat /proc/stat` given as a sampler) is a
    /// note; one the runner stopped is not.
    #[test]
    fn a_sampler_that_ended_by_itself_is_a_note() {
        let line = |status: &str| -> HookRecord {
            serde_json::from_str(&format!(
                r#"{{"case_id": "default/udp4/64B", "profile": "default", "stage": "sampler",
                   "output": {{"argv": ["sh", "-c", "cat /proc/stat"], "status": {status},
                               "stdout": "cpu  1 2 3 4\n", "stderr": ""}}}}"#
            ))
            .unwrap()
        };
        let stats = dut_stats_from_hooks(&[line("null"), line("0")]);
        let warned: Vec<&String> = stats
            .iter()
            .filter_map(|s| s.hook_warning.as_ref())
            .collect();
        assert_eq!(warned.len(), 1, "{stats:?}");
        assert!(
            warned[0].starts_with(
                "default/udp4/64B: sampler `cat /proc/stat` ended by itself (exit status 0)"
            ),
            "{}",
            warned[0]
        );
        assert!(
            warned[0].contains("its first words: cpu  1 2 3 4"),
            "{}",
            warned[0]
        );
    }

    #[test]
    fn signed_percents_round_and_use_a_minus_sign() {
        assert_eq!(signed_percent(-47.6), "\u{2212}48 %");
        assert_eq!(signed_percent(-0.2), "±0 %");
    }
}
