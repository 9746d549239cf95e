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
use bench_model::results::{InvalidCounts, LineRate, Record, RunInfo, TrialRecord};
use serde::{Deserialize, Serialize};
use wire::encap::EncapSpec;
use wire::linerate::FrameSize;
use wire::units::BitsPerSec;

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

/// The dimensions of a case, as the report groups them.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Dims {
    /// DUT profile.
    pub profile: String,
    /// `udp` or `tcp`.
    pub protocol: String,
    /// 4 or 6.
    pub ip: u8,
    /// Encapsulation on the far link in `wire`'s spelling with the IP version (`ipv4`,
    /// `vlan+ipv6`, `pppoe+ipv4`, …): the case's `encap` dimension (`encap=` in its id), or the
    /// `encap` user variable of runs before that dimension existed, else plain IP.
    pub encap: String,
    /// UDP frame size.
    pub frame_size: Option<u32>,
    /// A UDP case that sent the simple IMIX (`imix` in the case id; `frame_size` is `None`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub imix: bool,
    /// TCP sessions.
    pub sessions: Option<u32>,
    /// TCP MSS.
    pub mss: Option<u32>,
    /// User dimensions other than `encap`, after the stream dimensions `flows` and `tos`.
    pub vars: Vec<(String, String)>,
    /// UDP trials ran A→B and B→A at once (`bidir` in the case id): rates are sums of both.
    #[serde(default)]
    pub bidirectional: bool,
    /// The DUT's segmentation offloads (`offload=on|off` in the case id); `None` where the
    /// plan has no such dimension (older runs, or blocks without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offload: Option<bool>,
    /// The DUT's fast path (`fastpath=on|off`); `None` where not a dimension.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fastpath: Option<bool>,
}

impl Dims {
    /// `IPv4 UDP`, `IPv6 TCP`, with the encapsulation when it is not plain and
    /// `bidirectional` when both directions ran at once.
    pub fn family(&self) -> String {
        let mut base = format!("IPv{} {}", self.ip, self.protocol.to_uppercase());
        if self.encap != format!("ipv{}", self.ip) {
            base = format!("{base} over {}", self.encap);
        }
        if self.bidirectional {
            base.push_str(", bidirectional");
        }
        base
    }

    /// What a UDP case sent: its frame size or the IMIX; `None` for TCP.
    pub fn frame(&self) -> Option<wire::linerate::FrameSize> {
        if self.imix {
            return Some(wire::linerate::FrameSize::Imix);
        }
        self.frame_size
            .map(|b| wire::linerate::FrameSize::Fixed { bytes: b as usize })
    }

    /// Where in the matrix, without the profile: `64 B, IPv4 UDP`.
    pub fn point(&self) -> String {
        let mut parts = Vec::new();
        if let Some(f) = self.frame_size {
            parts.push(format!("{f} B"));
        }
        if self.imix {
            parts.push("IMIX".to_string());
        }
        if let Some(s) = self.sessions {
            parts.push(format!("{s} session{}", if s == 1 { "" } else { "s" }));
        }
        if let Some(m) = self.mss {
            parts.push(format!("MSS {m}"));
        }
        parts.extend(self.switches());
        for (k, v) in &self.vars {
            parts.push(format!("{k}={v}"));
        }
        parts.push(self.family());
        parts.join(", ")
    }

    /// The switch dimensions the case has, as a reader says them: `offload on`, `fastpath off`.
    pub fn switches(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(o) = self.offload {
            v.push(format!("offload {}", bench_model::plan::on_off(o)));
        }
        if let Some(f) = self.fastpath {
            v.push(format!("fastpath {}", bench_model::plan::on_off(f)));
        }
        v
    }

    /// The same case without its point in the matrix (frame size, sessions, MSS): what a
    /// summary compares across.
    fn context(&self) -> Dims {
        Dims {
            frame_size: None,
            imix: false,
            sessions: None,
            mss: None,
            ..self.clone()
        }
    }

    /// The same point with another profile (for findings and grouping).
    pub fn without_profile(&self) -> Dims {
        Dims {
            profile: String::new(),
            ..self.clone()
        }
    }
}

/// One throughput figure of one case (a throughput search or iperf3), over all repetitions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Case id.
    pub case_id: String,
    /// Dimensions.
    pub dims: Dims,
    /// Methodology name (`rfc2544-throughput`, `multi-goal`, `iperf3`).
    pub methodology: String,
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
    pub pps: Option<f64>,
    /// Measured L2 bits per second (frame bytes with FCS).
    pub l2_bps: Option<f64>,
    /// L4 bits per second (iperf3 only).
    pub l4_bps: Option<f64>,
    /// Per-repetition frames per second.
    pub rep_pps: Vec<f64>,
    /// Noise in frames per second, the ± that findings and comparisons allow the figure
    /// ([`NoiseBasis`] says how it was measured): with two or more repetitions, half the
    /// spread over them plus half the search's final interval (its resolution); with one, the
    /// search's whole final bracket (UDP) or the spread of iperf3's per-interval rates (TCP).
    pub noise_pps: f64,
    /// How `noise_pps` was measured.
    #[serde(default)]
    pub noise_basis: NoiseBasis,
    /// A UDP search's resolution: the mean width of its repetitions' final brackets, frames/s
    /// (0 for iperf3 and forwarding rates). Each repetition's figure is a lower bound anywhere
    /// within such a step, which `compare`'s test over repetitions counts; not exported.
    #[serde(skip)]
    pub resolution_pps: f64,
    /// Theoretical maximum frames per second on the bottleneck link (directions summed).
    pub max_pps: f64,
    /// Theoretical maximum L2 bits per second at the reference link (directions summed).
    pub max_l2_bps: f64,
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
    pub conditional_pps: Option<f64>,
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
        label(&self.methodology, self.loss_goal)
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

/// Whether `t` is one of a search's own trials (not latency, not a burst) at `load`.
fn at_load(t: &TrialRecord, load: f64) -> bool {
    let l = t.request.load.0;
    !t.request.latency
        && t.request.burst_frames.is_none()
        && (l - load).abs() <= 1e-9 * l.abs().max(load.abs()).max(1.0)
}

/// Invalid frames over `trials`, by reason.
pub(crate) fn invalid_of<'a>(trials: impl Iterator<Item = &'a TrialRecord>) -> InvalidCounts {
    let mut t = InvalidCounts::default();
    for e in trials.filter_map(|t| t.engine.as_ref()) {
        t.merge(&e.invalid);
    }
    t
}

fn is_zero(n: &usize) -> bool {
    *n == 0
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
    pub max_pps: f64,
    /// Throughput of the same case (one direction, frames/s) from a completed
    /// `rfc2544-throughput` search, else the first goal of a completed `multi-goal` search.
    pub throughput_pps: Option<f64>,
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
    pub pps: f64,
    /// L2 bits per second (frames with FCS).
    pub l2_bps: f64,
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
                s.rx_pps.push(d.rx_pps);
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
                pps,
                l2_bps: pps * frame_len * 8.0,
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
    pub l2_bps: Option<f64>,
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
    pub speed_bps: f64,
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
    Some((pps, l2, line.bottleneck))
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

/// Whether two rows measure the same thing (methodology and, for multi-goal rows, loss goal),
/// so that their figures may be compared.
fn same_measure(a: &Row, b: &Row) -> bool {
    a.methodology == b.methodology && a.loss_goal == b.loss_goal
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

/// Two rows compared on frames per second: (subject − reference) / reference and the noise
/// both carry, percent of the reference.
struct Comparison {
    delta: f64,
    noise: f64,
    /// Both rows have a noise measure ([`NoiseBasis::None`] has none).
    measured: bool,
    significant: bool,
    /// Which noise measure(s) the two figures used.
    basis: String,
}

/// `None` when either row has no DUT figure (tester-limited, missing, not finite) or the
/// reference is not positive: nothing can be said.
fn compare_rows(x: &Row, y: &Row) -> Option<Comparison> {
    if x.tester_limited || y.tester_limited {
        return None;
    }
    let (a, b) = (x.pps?, y.pps?);
    if !(a.is_finite() && b.is_finite() && b > 0.0) {
        return None;
    }
    let (na, nb) = (x.noise_pps, y.noise_pps);
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
                methodology_qualifier(&r.methodology)
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
        .filter(|g| g.case_id == r.case_id && g.methodology == r.methodology)
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
fn methodology_qualifier(methodology: &str) -> &'static str {
    if methodology == Methodology::ForwardingRate.name() {
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
    (d.frame_size, d.mss, d.sessions)
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
            (d.ip == 6 && d.protocol == "udp").then(|| Dims {
                ip: 4,
                encap: d.encap.replace("ipv6", "ipv4"),
                ..d.clone()
            })
        }),
    ];
    let mut out = Vec::new();
    for (dimension, twin) in dims {
        // (context, methodology) → the first pair, by point order.
        let mut best: Vec<((Dims, String), &Row, &Row)> = Vec::new();
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
            let key = (r.dims.context(), r.methodology.clone());
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
                    at.extend(s.dims.frame_size.map(|f| format!("{f} B")));
                    at.extend(s.dims.switches());
                    at.extend(s.dims.vars.iter().map(|(k, v)| format!("{k}={v}")));
                    if s.dims.encap != format!("ipv{}", s.dims.ip) {
                        at.push(format!("over {}", s.dims.encap));
                    }
                    if s.dims.bidirectional {
                        at.push("bidirectional".into());
                    }
                    at.push(s.dims.protocol.to_uppercase());
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
                    methodology_qualifier(&s.methodology),
                    c.noise,
                    c.basis
                ),
                noise: c.basis,
                claim: format!("{text}{}", methodology_qualifier(&s.methodology)),
            });
        }
    }
    out
}

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
            k.frame_size = None;
            k.mss = None;
            // The MSS table keeps sessions fixed (its rows are MSS); the fast-path table
            // runs over frame sizes or sessions.
            if switch == "fastpath" {
                k.sessions = None;
            }
            let point = (
                r.dims.frame_size,
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
