//! The results store (DESIGN.md §7): a run directory that survives `kill -9`.
//!
//! - `run.json`: what ran (plan text, versions, host facts), written once, atomically.
//! - `trials.jsonl`: one JSON object per line, appended and `fsync`ed after every trial, so a
//!   crash loses at most the trial in flight.
//!
//! Reading back tolerates a torn last line (the process died mid-write); any other bad line is
//! an error, because it means the file was edited or corrupted, not interrupted. Resuming cuts
//! the torn tail off before appending, and [`Resume`] tells the runner which (case, repetition,
//! methodology) are finished and which trials of an unfinished search can be replayed into it
//! ([`crate::search::replay`]) so nothing is measured twice.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use wire::units::{BitsPerSec, Pps};

use crate::plan::Methodology;
use crate::search::{ConnOutcome, ConnTrial, Outcome, SearchResult, TrialRequest};
/// Invalid frames by reason, as [`EngineFacts::invalid`] records them.
pub use wire::invalid::InvalidCounts;

mod conn;
pub use conn::{ConnDone, ConnDutCounters, ConnPhases, ConnTrialRecord, PreliminaryEngines};
mod facts;
mod lan_watch;
pub use crate::line_rate::LineRate;
pub use facts::{RunFacts, TcpFacts, UdpFacts};
pub use lan_watch::{LanGap, LanWatch, Probe, LAN_GAP_THRESHOLD, LAN_WATCH_PERIOD};
mod sent;
pub use sent::SentStream;

/// File names inside a run directory.
pub const RUN_JSON: &str = "run.json";
/// See [`RUN_JSON`].
pub const TRIALS_JSONL: &str = "trials.jsonl";

/// Facts about the run, written to `run.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Plan name.
    pub plan_name: String,
    /// The plan file's text, verbatim (so a result can always be traced to its plan).
    pub plan_text: String,
    /// wirerate version.
    pub version: String,
    /// Start time, Unix seconds.
    pub started_unix: u64,
    /// Host facts (kernel, CPUs, tool versions …), free-form.
    #[serde(default)]
    pub host: BTreeMap<String, String>,
    /// What the run measures, typed (the cases as expanded, speed, repetitions, profiles), so
    /// the report need not parse `plan_text`; absent in runs recorded before eb18b68.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<RunFacts>,
}

/// Identifies one trial within a run.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TrialKey {
    /// [`crate::plan::Case::id`].
    pub case_id: String,
    /// Repetition, from 0.
    pub repetition: u32,
    /// Methodology.
    pub methodology: Methodology,
    /// Trial index within this (case, repetition, methodology), from 0.
    pub index: u32,
}

/// One finished trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRecord {
    /// Which trial.
    #[serde(flatten)]
    pub key: TrialKey,
    /// What the search asked for.
    pub request: TrialRequest,
    /// What was measured.
    pub outcome: Outcome,
    /// Whether the tester, not the DUT, set the pace (never a DUT figure).
    pub tester_limited: bool,
    /// Raw iperf3 JSON, for iperf3 trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iperf3: Option<serde_json::Value>,
    /// TCP figures of an iperf3 trial (from the raw JSON above, plus the SYN's MSS as captured
    /// at the far tester port).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tcp: Option<TcpFigures>,
    /// How the packet engine ran a UDP trial (absent for iperf3 trials and in older runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineFacts>,
    /// What a UDP trial's numbers mean: frame size, encapsulation, the path's 100 % and the
    /// offered rate (absent for iperf3 trials and in runs recorded before eb18b68).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub udp: Option<UdpFacts>,
    /// The tester fell behind its schedule during this trial (it slipped frames or offered
    /// less than asked), so it says nothing about the DUT: the same request was measured again
    /// under the same key, and the search never saw this one. Kept so that nothing measured
    /// is hidden.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub superseded: bool,
    /// The LAN health watch over this trial, one entry per gateway address watched (#35
    /// item 5; UDP and iperf3 trials alike): a gateway that stopped answering its LAN port
    /// shows as a gap. Empty when nothing was watched (the lab, `[run] lan-watch = false`, a
    /// port without a gateway address) and in older runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lan_watch: Vec<LanWatch>,
    /// Completion time, Unix milliseconds.
    pub finished_unix_ms: u64,
}

impl TrialRecord {
    /// The watched gateway addresses that went silent during the trial ([`LanWatch::gaps`]).
    pub fn lan_gaps(&self) -> impl Iterator<Item = &LanWatch> {
        self.lan_watch.iter().filter(|w| w.flagged())
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// The packet engine's side of one UDP trial: which backend ran it and why, and whether the
/// sender kept its schedule, so that a reader can tell a DUT figure from a tester figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EngineFacts {
    /// `xdp` or `af_packet`.
    pub backend: String,
    /// How it was chosen (`auto: xdp (…)`, `auto: af_packet, as XDP cannot run this trial (…)`).
    pub note: String,
    /// Frames sent (all streams), i.e. handed to the DUT's port.
    pub sent: u64,
    /// Frames the sender dropped from its schedule after stalls (tester-limited when > 0).
    pub slipped: u64,
    /// Frames the DUT's port refused (its receive queue full): offered and lost by the DUT.
    #[serde(default)]
    pub refused_by_dut: u64,
    /// The most frames any stream's sender owed its schedule at once (the engine's `max_debt`):
    /// after a stall it sends them at the trial's line rate (the port's share of it), or at
    /// up to twice the stream's own rate where that is faster, near line rate; runs before
    /// 9bbdc5d sent them back to back. A catch-up larger than the DUT's receive ring (a
    /// veth's holds 256) can still overflow it near line rate, so a trial that lost frames
    /// with a large catch-up may show the tester's burst, not the DUT's limit (docs/engine.md,
    /// "Catch-up after a stall"). Absent when zero (and in older runs).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub max_catch_up: u64,
    /// The DUT's own counters over the trial (lab DUTs), for checking the figure against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut: Option<DutCounters>,
    /// Signed frames the receivers did not count because they were not valid for their
    /// stream (corrupted, foreign destination, unexpected encapsulation, fragment, sequence
    /// number or timestamp out of range), by reason (`engine::validate`). A DUT that corrupts
    /// frames shows here, not as forwarding. Absent when zero (and in older runs).
    #[serde(default, skip_serializing_if = "InvalidCounts::is_zero")]
    pub invalid: InvalidCounts,
    /// Each direction of a bidirectional trial (RFC 2544 §14) on its own, A→B first: the
    /// outcome sums frames over both and offers the slower direction's load, which hides a
    /// DUT that forwards one way only. Empty for one-way trials (and in older runs).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_direction: Vec<DirectionFacts>,
    /// PPPoE sessions of the run's ports that went down while the trial ran (#14 item 5): the
    /// DUT dropped its uplink, or stopped answering it. The trial's loss is the DUT's; the run
    /// waited for the session to come back before the next trial. Empty in older runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session_drops: Vec<SessionDrop>,
    /// What each stream sent, as configured (the trial's deterministic part; empty in older
    /// runs): `wirerate trial --json` prints the same list as `sent`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streams: Vec<SentStream>,
    /// Rises of the tester's own drop counters on its real ports over the trial (`ethtool -S`:
    /// a NIC's missed or no-buffer frames, a veth end's receive failures): frames the tester
    /// lost or failed to send, so the trial is tester-limited. Empty when none rose (and in
    /// lab runs and older runs, where none were read).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tester_port_drops: Vec<TesterPortDrop>,
}

/// One of the tester's own drop counters that rose over a trial (`bench::iface::counters`
/// says which count).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TesterPortDrop {
    /// The plan's name of the port.
    pub port: String,
    /// The counter, as `ethtool -S` names it (`rx_missed_errors`).
    pub counter: String,
    /// How much it rose.
    pub frames: u64,
}

/// A PPPoE session of one of the run's ports going down (`bench::isp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionDrop {
    /// The plan's name of the port.
    pub port: String,
    /// When the port's control plane saw it end, Unix milliseconds.
    pub unix_ms: u64,
    /// Why, as the control plane says it (`PadtReceived`, `EchoTimeout`, …).
    pub reason: String,
}

/// One direction of a bidirectional trial, as its sending and receiving ports counted it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectionFacts {
    /// Sending port (`a`, `b`).
    pub tx_port: String,
    /// Receiving port.
    pub rx_port: String,
    /// Frames handed to the DUT's port in this direction.
    pub sent: u64,
    /// Frames that arrived valid for their stream.
    pub received: u64,
    /// Frames lost in this direction.
    pub lost: u64,
    /// The load this direction offered, from its sender's timestamps, as a fraction of one
    /// direction's line rate on the case's path.
    pub offered: f64,
    /// Received frames/s over the sending interval (`engine::trial::StreamResult::rx_pps`).
    pub rx_pps: Pps,
}

impl Eq for DirectionFacts {}

impl EngineFacts {
    /// Frames the tester's own receive backlog dropped over the trial (lab runs; 0 without
    /// the DUT's counters): forwarded by the DUT, lost by the tester.
    pub fn tester_receive_drops(&self) -> u64 {
        self.dut.map_or(0, |d| d.tester_backlog_drops)
    }

    /// How much the tester's own port counters rose over the trial, all counters summed
    /// ([`EngineFacts::tester_port_drops`]).
    pub fn tester_port_drop_total(&self) -> u64 {
        self.tester_port_drops.iter().map(|d| d.frames).sum()
    }

    /// Slipped frames as a share of the schedule (sent + slipped).
    pub fn slipped_ratio(&self) -> f64 {
        let planned = self.sent + self.slipped;
        if planned == 0 {
            0.0
        } else {
            self.slipped as f64 / planned as f64
        }
    }
}

/// Deltas of the lab DUT's counters over one trial.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DutCounters {
    /// Packets the DUT's ingress port (facing the sender) received.
    pub ingress_rx: u64,
    /// Packets dropped at the DUT's ingress port (its rx_dropped: the kernel counts there the
    /// frames its full backlog queue refused, as a NIC counts a full receive ring).
    pub ingress_drops: u64,
    /// Backlog drops of the DUT's CPU (softnet "dropped"; the same frames as `ingress_drops`
    /// when the DUT's receive is steered to it, plus any other interface's).
    #[serde(default)]
    pub backlog_drops: u64,
    /// Backlog drops of the tester's CPUs over the trial (softnet "dropped"). The lab's tester
    /// ports receive on the tester's CPUs through that backlog (docs/lab.md, "CPU isolation"):
    /// a frame dropped there was forwarded by the DUT and lost by the tester, so a trial with
    /// any is the tester's, never a DUT figure. Absent when zero (and in older runs).
    #[serde(default, skip_serializing_if = "crate::search::is_zero")]
    pub tester_backlog_drops: u64,
    /// Packets the DUT's egress port (facing the receiver) transmitted.
    pub egress_tx: u64,
    /// Packets the DUT's egress port could not hand to the tester's port (its tx_dropped: on
    /// a veth, the tester port's receive ring was full). The DUT forwarded them and the
    /// tester lost them, so a trial that failed with any is the tester's, never a DUT figure.
    /// Absent when zero (and in older runs).
    #[serde(default, skip_serializing_if = "crate::search::is_zero")]
    pub egress_drops: u64,
    /// Ticks (USER_HZ) the DUT's CPU was busy over the trial, and all its ticks (`/proc/stat`
    /// of the CPU the lab gives the DUT; 0 and 0 on a one-CPU machine, where there is none).
    #[serde(default)]
    pub cpu_busy_ticks: u64,
    /// See `cpu_busy_ticks`.
    #[serde(default)]
    pub cpu_total_ticks: u64,
}

impl DutCounters {
    /// The DUT's CPU load over the trial, in percent of one CPU; `None` when not measured.
    /// It counts everything that ran on that CPU: the lab keeps the tester off it, but not
    /// other processes of the host.
    pub fn cpu_busy_percent(&self) -> Option<f64> {
        (self.cpu_total_ticks > 0).then(|| {
            100.0 * self.cpu_busy_ticks.min(self.cpu_total_ticks) as f64
                / self.cpu_total_ticks as f64
        })
    }
}

/// A (case, repetition, methodology) that finished, with its result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MethodologyDone {
    /// Case id.
    pub case_id: String,
    /// Repetition.
    pub repetition: u32,
    /// Methodology.
    pub methodology: Methodology,
    /// The search result (none for iperf3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<SearchResult>,
    /// Comparison of the result with the tester's calibrated ceiling (when a calibration was
    /// available): a result within 10 % of the ceiling is tester-limited, not a DUT figure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling: Option<CeilingCheck>,
    /// The case's 100 % load as the runner offered it, frames/s per direction on the case's
    /// path (`Plan::line_pps`: the slowest link, each with its encapsulation's bytes), for the
    /// UDP searches: every load of the search is a fraction of it. The report turns fractions
    /// into rates with it instead of redoing the path arithmetic (#18 item 3); absent in runs
    /// recorded before 3fcea2d and for methodologies without a load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line_pps: Option<Pps>,
}

/// What an iperf3 trial measured, converted for a router test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TcpFigures {
    /// L4 throughput iperf3 reported as received (sum over directions for `--bidir`).
    pub l4_bps: BitsPerSec,
    /// The same at L2 (Ethernet frames with FCS) and L1 (+20 B per frame).
    pub l2_bps: BitsPerSec,
    /// See `l2_bps`.
    pub l1_bps: BitsPerSec,
    /// The MSS used for the conversion.
    pub mss: u32,
    /// Retransmits (sender side).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retransmits: Option<u64>,
    /// MSS options of the client SYNs captured at the far tester port, in arrival order
    /// (control connection first, then the data connections): what the DUT let through.
    pub syn_mss: Vec<u32>,
    /// Sender and receiver CPU %, as iperf3 reported them.
    pub cpu_local: f64,
    /// See `cpu_local`.
    pub cpu_remote: f64,
    /// What the receiving port's counters saw over the middle of the measured period; when
    /// present, `l1_bps` and `l2_bps` are from it (crate::iperf3::wire_count says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wire_count: Option<crate::iperf3::wire_count::WireCount>,
    /// The lab DUT's counters over the run (both ports both ways: TCP data and ACKs), with
    /// its CPU load; `None` without a lab DUT.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dut: Option<DutCounters>,
    /// The frame the rates are counted in, the directions and their line rate; absent in runs
    /// recorded before eb18b68.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub facts: Option<TcpFacts>,
}

/// A throughput result compared with the tester's own calibrated ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CeilingCheck {
    /// The tester's ceiling for this frame size and IP version, frames/s.
    pub ceiling_pps: Pps,
    /// The result (goal 0), frames/s.
    pub result_pps: Pps,
    /// True when the result is within 10 % of the ceiling: a tester figure, not a DUT figure.
    pub tester_limited: bool,
}

/// One line of `trials.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "kebab-case")]
// Trial records outnumber Done records many times over, so boxing the big variant would add an
// allocation to the common case to save space in the rare one.
#[allow(clippy::large_enum_variant)]
pub enum Record {
    /// A trial.
    Trial(TrialRecord),
    /// A methodology finished for a case and repetition.
    Done(MethodologyDone),
    /// A two-phase trial of a connection methodology.
    ConnTrial(ConnTrialRecord),
    /// A connection methodology finished for a case and repetition.
    ConnDone(ConnDone),
}

/// What [`read_records`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// Complete records in file order.
    pub records: Vec<Record>,
    /// True when the last line was torn (and ignored).
    pub torn_tail: bool,
    /// Byte length of the complete lines (where appending must continue).
    pub good_len: u64,
}

/// What [`read_records`] has read so far, to refuse records that cannot both be true.
#[derive(Default)]
struct Seen {
    /// Line of each trial key measured (superseded trials share their key with the trial that
    /// replaced them and are not counted).
    trials: std::collections::HashMap<TrialKey, usize>,
    /// Line of each finished search.
    done: std::collections::HashMap<SearchKey, usize>,
}

impl Seen {
    /// Refuses a record that repeats one already read, or whose figures cannot be (negative or
    /// non-finite loads, more frames received than sent): a report must not average a trial
    /// twice or show a gain.
    fn admit(&mut self, r: &Record, line: usize) -> Result<(), String> {
        match r {
            Record::Trial(t) => {
                let o = &t.outcome;
                for (what, x) in [("intended", o.intended.0), ("offered", o.offered.0)] {
                    if !(x.is_finite() && x >= 0.0) {
                        return Err(format!("trial {:?}: {what} load {x} is not a load", t.key));
                    }
                }
                if let Some(e) = &t.engine {
                    if o.received > e.sent {
                        return Err(format!(
                            "trial {:?}: {} frames received of {} sent (a negative loss); the record is corrupt",
                            t.key, o.received, e.sent
                        ));
                    }
                }
                if !t.superseded {
                    if let Some(first) = self.trials.insert(t.key.clone(), line) {
                        return Err(format!(
                            "trial {:?} is recorded twice (also on line {first}); the file was edited or two runs wrote to it",
                            t.key
                        ));
                    }
                }
            }
            Record::ConnTrial(t) => {
                let o = &t.outcome;
                if o.preliminary_received > o.preliminary_sent
                    || o.validation_received > o.validation_sent
                {
                    return Err(format!(
                        "trial {:?}: more frames received than sent in a phase; the record is corrupt",
                        t.key
                    ));
                }
                if t.superseded {
                    return Ok(());
                }
                if let Some(first) = self.trials.insert(t.key.clone(), line) {
                    return Err(format!(
                        "trial {:?} is recorded twice (also on line {first}); the file was edited or two runs wrote to it",
                        t.key
                    ));
                }
            }
            Record::ConnDone(d) => {
                let key = (d.case_id.clone(), d.repetition, d.methodology);
                if let Some(first) = self.done.insert(key, line) {
                    return Err(format!(
                        "{} repetition {} {} is recorded as finished twice (also on line {first})",
                        d.case_id,
                        d.repetition,
                        d.methodology.name()
                    ));
                }
            }
            Record::Done(d) => {
                let key = (d.case_id.clone(), d.repetition, d.methodology);
                if let Some(first) = self.done.insert(key, line) {
                    return Err(format!(
                        "{} repetition {} {} is recorded as finished twice (also on line {first})",
                        d.case_id,
                        d.repetition,
                        d.methodology.name()
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Reads `trials.jsonl`, ignoring a torn last line. A bad line that is not the last one, a
/// record repeated or one whose figures cannot be ([`Seen::admit`]) is an `InvalidData` error
/// naming the line.
pub fn read_records(path: &Path) -> io::Result<Loaded> {
    let mut text = Vec::new();
    crate::files::open_regular(path)?.read_to_end(&mut text)?;
    let mut records = Vec::new();
    let mut good_len = 0u64;
    let mut torn_tail = false;
    let mut start = 0usize;
    let mut line_no = 0usize;
    let mut seen = Seen::default();
    while start < text.len() {
        line_no += 1;
        let end = text[start..]
            .iter()
            .position(|b| *b == b'\n')
            .map(|i| start + i);
        let line = &text[start..end.unwrap_or(text.len())];
        let parsed = std::str::from_utf8(line)
            .ok()
            .and_then(|s| serde_json::from_str::<Record>(s).ok());
        match (parsed, end) {
            (Some(r), Some(e)) => {
                if let Err(why) = seen.admit(&r, line_no) {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("{}:{line_no}: {why}", path.display()),
                    ));
                }
                records.push(r);
                good_len = (e + 1) as u64;
                start = e + 1;
            }
            // No newline: the write was cut short, whether or not the JSON happens to parse.
            (_, None) => {
                torn_tail = true;
                break;
            }
            (None, Some(_)) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("{}:{line_no}: not a trial record", path.display()),
                ));
            }
        }
    }
    Ok(Loaded {
        records,
        torn_tail,
        good_len,
    })
}

/// (case id, repetition, methodology): one search of one case.
pub type SearchKey = (String, u32, Methodology);

/// What a resumed run already has.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resume {
    /// Every recorded trial.
    pub finished_trials: BTreeSet<TrialKey>,
    /// Finished (case, repetition, methodology).
    pub finished: BTreeSet<SearchKey>,
    trials: BTreeMap<SearchKey, BTreeMap<u32, (TrialRequest, Outcome, bool)>>,
    conn_trials: BTreeMap<SearchKey, BTreeMap<u32, (ConnTrial, ConnOutcome)>>,
}

impl Resume {
    /// Builds the resume index from records.
    pub fn from_records(records: &[Record]) -> Resume {
        let mut r = Resume::default();
        for rec in records {
            match rec {
                // A trial measured again after a tester stall: the search never saw it.
                Record::Trial(t) if t.superseded => {}
                Record::Trial(t) => {
                    r.finished_trials.insert(t.key.clone());
                    r.trials
                        .entry((t.key.case_id.clone(), t.key.repetition, t.key.methodology))
                        .or_default()
                        .insert(t.key.index, (t.request, t.outcome, t.tester_limited));
                }
                Record::Done(d) => {
                    r.finished
                        .insert((d.case_id.clone(), d.repetition, d.methodology));
                }
                Record::ConnTrial(t) if t.superseded => {}
                Record::ConnTrial(t) => {
                    r.finished_trials.insert(t.key.clone());
                    r.conn_trials
                        .entry((t.key.case_id.clone(), t.key.repetition, t.key.methodology))
                        .or_default()
                        .insert(t.key.index, (t.request, t.outcome));
                }
                Record::ConnDone(d) => {
                    r.finished
                        .insert((d.case_id.clone(), d.repetition, d.methodology));
                }
            }
        }
        r
    }

    /// Whether this methodology already finished for this case and repetition.
    pub fn is_done(&self, case_id: &str, repetition: u32, m: Methodology) -> bool {
        self.finished
            .contains(&(case_id.to_string(), repetition, m))
    }

    /// Recorded trials of an unfinished search, in index order, to replay into a fresh search.
    /// Stops at the first gap (a trial whose record was lost cannot be skipped).
    pub fn recorded(
        &self,
        case_id: &str,
        repetition: u32,
        m: Methodology,
    ) -> Vec<(TrialRequest, Outcome, bool)> {
        up_to_first_gap(self.trials.get(&(case_id.to_string(), repetition, m)))
    }
}

/// A search's recorded trials by index, from index 0 up to the first missing one.
fn up_to_first_gap<T: Copy>(map: Option<&BTreeMap<u32, T>>) -> Vec<T> {
    let Some(map) = map else {
        return Vec::new();
    };
    map.iter()
        .enumerate()
        .take_while(|(i, (idx, _))| *i as u32 == **idx)
        .map(|(_, (_, t))| *t)
        .collect()
}

impl Resume {
    /// Recorded trials of an unfinished connection search, in index order, to replay into a
    /// fresh search ([`crate::search::replay_conn`]); stops at the first gap.
    pub fn recorded_conn(
        &self,
        case_id: &str,
        repetition: u32,
        m: Methodology,
    ) -> Vec<(ConnTrial, ConnOutcome)> {
        up_to_first_gap(self.conn_trials.get(&(case_id.to_string(), repetition, m)))
    }
}

/// An open run directory.
#[derive(Debug)]
pub struct RunDir {
    dir: PathBuf,
    trials: File,
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

impl RunDir {
    /// Creates a new run in `dir` (created if missing; refused if it already holds a run).
    pub fn create(dir: &Path, info: &RunInfo) -> io::Result<RunDir> {
        crate::files::check_output_dir(dir)
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        std::fs::create_dir_all(dir)?;
        if dir.join(RUN_JSON).exists() || dir.join(TRIALS_JSONL).exists() {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!(
                    "{} already holds a run; use --resume or another directory",
                    dir.display()
                ),
            ));
        }
        let tmp = dir.join(".run.json.tmp");
        {
            let mut f = File::create(&tmp)?;
            serde_json::to_writer_pretty(&mut f, info)?;
            f.write_all(b"\n")?;
            f.sync_all()?;
        }
        std::fs::rename(&tmp, dir.join(RUN_JSON))?;
        let trials = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(dir.join(TRIALS_JSONL))?;
        sync_dir(dir)?;
        Ok(RunDir {
            dir: dir.to_path_buf(),
            trials,
        })
    }

    /// Reopens the run in `dir` for `--resume`: reads what is there, cuts a torn last line off,
    /// and returns the run info and the resume index.
    pub fn resume(dir: &Path) -> io::Result<(RunDir, RunInfo, Resume)> {
        let info: RunInfo =
            serde_json::from_reader(crate::files::open_regular(&dir.join(RUN_JSON))?)?;
        let path = dir.join(TRIALS_JSONL);
        let loaded = read_records(&path)?;
        let mut trials = OpenOptions::new().read(true).write(true).open(&path)?;
        if loaded.torn_tail {
            trials.set_len(loaded.good_len)?;
            trials.sync_all()?;
        }
        trials.seek(SeekFrom::End(0))?;
        let resume = Resume::from_records(&loaded.records);
        Ok((
            RunDir {
                dir: dir.to_path_buf(),
                trials,
            },
            info,
            resume,
        ))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// Appends one record as a line and forces it to disk before returning.
    pub fn append(&mut self, record: &Record) -> io::Result<()> {
        let mut line = serde_json::to_vec(record)?;
        line.push(b'\n');
        self.trials.write_all(&line)?;
        self.trials.sync_data()
    }

    /// Every complete record so far.
    pub fn records(&self) -> io::Result<Vec<Record>> {
        Ok(read_records(&self.dir.join(TRIALS_JSONL))?.records)
    }
}

#[cfg(test)]
mod tests;
