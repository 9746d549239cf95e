//! Parsing `iperf3 -J` output into the figures a trial records.
//!
//! iperf3's JSON differs by mode: TCP end sums carry `retransmits`, UDP ones `jitter_ms` and
//! `lost_packets`; `-R` flips which side sends; `--bidir` adds `*_bidir_reverse` sums and mixes
//! both directions' streams in one array, told apart by each stream's `sender` flag (true when
//! the *client* sends). This module hides all of that behind [`Report`] with one [`Direction`] per
//! data direction. Only what iperf3 reported is returned — nothing is recomputed.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use wire::units::BitsPerSec;

/// L4 protocol of an iperf3 test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum L4 {
    /// TCP.
    Tcp,
    /// UDP.
    Udp,
}

/// Why a JSON document is not a usable iperf3 report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportError(pub String);

impl std::fmt::Display for ReportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "iperf3 report: {}", self.0)
    }
}

impl std::error::Error for ReportError {}

/// One end-of-test sum.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sum {
    /// Bytes.
    pub bytes: u64,
    /// Seconds measured.
    pub seconds: f64,
    /// L4 throughput.
    pub bits_per_second: BitsPerSec,
}

/// UDP receiver figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct UdpFigures {
    /// Datagrams lost.
    pub lost_packets: u64,
    /// Datagrams sent.
    pub packets: u64,
    /// Lost percent as iperf3 computed it.
    pub lost_percent: f64,
    /// Jitter in milliseconds.
    pub jitter_ms: f64,
}

/// Per-stream figures.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StreamFigures {
    /// Socket number (iperf3's stream id).
    pub socket: i64,
    /// Throughput seen by the sender (TCP) or the stream's only figure (UDP).
    pub sender_bits_per_second: BitsPerSec,
    /// Throughput seen by the receiver (TCP only).
    pub receiver_bits_per_second: Option<BitsPerSec>,
    /// TCP retransmits of this stream, when reported.
    pub retransmits: Option<u64>,
    /// UDP loss and jitter of this stream.
    pub udp: Option<UdpFigures>,
}

/// One data direction of a test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Direction {
    /// True when the client sends in this direction.
    pub client_sends: bool,
    /// Sender-side sum.
    pub sent: Sum,
    /// Receiver-side sum: the throughput that arrived.
    pub received: Sum,
    /// TCP retransmits (sender side).
    pub retransmits: Option<u64>,
    /// UDP loss and jitter (receiver side).
    pub udp: Option<UdpFigures>,
    /// The streams of this direction.
    pub streams: Vec<StreamFigures>,
}

/// CPU utilisation of both ends, in percent.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cpu {
    /// Client total.
    pub host_total: f64,
    /// Client user.
    pub host_user: f64,
    /// Client system.
    pub host_system: f64,
    /// Server total.
    pub remote_total: f64,
    /// Server user.
    pub remote_user: f64,
    /// Server system.
    pub remote_system: f64,
}

/// What one `iperf3 -c … -J` run reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// `iperf 3.12`.
    pub version: String,
    /// TCP or UDP.
    pub protocol: L4,
    /// Parallel streams (`-P`).
    pub num_streams: u32,
    /// `-R`.
    pub reverse: bool,
    /// `--bidir`.
    pub bidir: bool,
    /// Block / datagram size (`-l`).
    pub blksize: u64,
    /// MSS: `tcp_mss` when set with `-M`, else `tcp_mss_default` (TCP only).
    pub tcp_mss: Option<u64>,
    /// The main direction (client→server, or server→client with `-R`).
    pub forward: Direction,
    /// With `--bidir`, the other direction.
    pub backward: Option<Direction>,
    /// CPU of both ends.
    pub cpu: Cpu,
}

impl Report {
    /// Sum of the received L4 throughput of all directions (what a bidirectional test reports).
    pub fn total_received(&self) -> BitsPerSec {
        let back = self
            .backward
            .as_ref()
            .map_or(0.0, |d| d.received.bits_per_second.0);
        BitsPerSec(self.forward.received.bits_per_second.0 + back)
    }
}

fn field<'a>(v: &'a Value, path: &[&str]) -> Result<&'a Value, ReportError> {
    let mut cur = v;
    for k in path {
        cur = cur
            .get(k)
            .ok_or_else(|| ReportError(format!("missing `{}`", path.join("."))))?;
    }
    Ok(cur)
}

fn f64_at(v: &Value, path: &[&str]) -> Result<f64, ReportError> {
    field(v, path)?
        .as_f64()
        .ok_or_else(|| ReportError(format!("`{}` is not a number", path.join("."))))
}

fn u64_at(v: &Value, path: &[&str]) -> Result<u64, ReportError> {
    let x = field(v, path)?;
    x.as_u64()
        .or_else(|| x.as_f64().map(|f| f as u64))
        .ok_or_else(|| ReportError(format!("`{}` is not a count", path.join("."))))
}

fn sum(v: &Value) -> Result<Sum, ReportError> {
    Ok(Sum {
        bytes: u64_at(v, &["bytes"])?,
        seconds: f64_at(v, &["seconds"])?,
        bits_per_second: BitsPerSec(f64_at(v, &["bits_per_second"])?),
    })
}

fn udp(v: &Value) -> Result<UdpFigures, ReportError> {
    Ok(UdpFigures {
        lost_packets: u64_at(v, &["lost_packets"])?,
        packets: u64_at(v, &["packets"])?,
        lost_percent: f64_at(v, &["lost_percent"])?,
        jitter_ms: f64_at(v, &["jitter_ms"])?,
    })
}

fn stream(s: &Value, protocol: L4) -> Result<(bool, StreamFigures), ReportError> {
    match protocol {
        L4::Udp => {
            let u = field(s, &["udp"])?;
            Ok((
                field(u, &["sender"])?.as_bool().unwrap_or(true),
                StreamFigures {
                    socket: field(u, &["socket"])?.as_i64().unwrap_or(-1),
                    sender_bits_per_second: BitsPerSec(f64_at(u, &["bits_per_second"])?),
                    receiver_bits_per_second: None,
                    retransmits: None,
                    udp: Some(udp(u)?),
                },
            ))
        }
        L4::Tcp => {
            let snd = field(s, &["sender"])?;
            let rcv = field(s, &["receiver"])?;
            Ok((
                field(snd, &["sender"])?.as_bool().unwrap_or(true),
                StreamFigures {
                    socket: field(snd, &["socket"])?.as_i64().unwrap_or(-1),
                    sender_bits_per_second: BitsPerSec(f64_at(snd, &["bits_per_second"])?),
                    receiver_bits_per_second: Some(BitsPerSec(f64_at(rcv, &["bits_per_second"])?)),
                    retransmits: snd.get("retransmits").and_then(Value::as_u64),
                    udp: None,
                },
            ))
        }
    }
}

/// Parses the JSON printed by `iperf3 -c … -J`.
pub fn parse(json: &str) -> Result<Report, ReportError> {
    let v: Value = serde_json::from_str(json).map_err(|e| ReportError(format!("not JSON: {e}")))?;
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return Err(ReportError(format!("iperf3 failed: {e}")));
    }
    let ts = field(&v, &["start", "test_start"])?;
    let protocol = match field(ts, &["protocol"])?.as_str() {
        Some("TCP") => L4::Tcp,
        Some("UDP") => L4::Udp,
        other => return Err(ReportError(format!("unsupported protocol {other:?}"))),
    };
    let reverse = u64_at(ts, &["reverse"])? != 0;
    let end = field(&v, &["end"])?;
    let bidir = end.get("sum_sent_bidir_reverse").is_some();
    let mut streams: Vec<(bool, StreamFigures)> = Vec::new();
    for s in field(end, &["streams"])?
        .as_array()
        .ok_or_else(|| ReportError("`end.streams` is not an array".into()))?
    {
        streams.push(stream(s, protocol)?);
    }
    let direction = |suffix: &str, client_sends: bool| -> Result<Direction, ReportError> {
        let sent = field(end, &[&format!("sum_sent{suffix}")])?;
        let received = field(end, &[&format!("sum_received{suffix}")])?;
        Ok(Direction {
            client_sends,
            sent: sum(sent)?,
            received: sum(received)?,
            retransmits: sent.get("retransmits").and_then(Value::as_u64),
            udp: match protocol {
                L4::Udp => Some(udp(received)?),
                L4::Tcp => None,
            },
            streams: streams
                .iter()
                .filter(|(flag, _)| *flag == client_sends)
                .map(|(_, s)| *s)
                .collect(),
        })
    };
    let forward = direction("", !reverse)?;
    let backward = if bidir {
        Some(direction("_bidir_reverse", reverse)?)
    } else {
        None
    };
    let cpu_v = field(end, &["cpu_utilization_percent"])?;
    let cpu = Cpu {
        host_total: f64_at(cpu_v, &["host_total"])?,
        host_user: f64_at(cpu_v, &["host_user"])?,
        host_system: f64_at(cpu_v, &["host_system"])?,
        remote_total: f64_at(cpu_v, &["remote_total"])?,
        remote_user: f64_at(cpu_v, &["remote_user"])?,
        remote_system: f64_at(cpu_v, &["remote_system"])?,
    };
    let start = field(&v, &["start"])?;
    Ok(Report {
        version: start
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        protocol,
        num_streams: u64_at(ts, &["num_streams"])? as u32,
        reverse,
        bidir,
        blksize: u64_at(ts, &["blksize"])?,
        tcp_mss: start
            .get("tcp_mss")
            .or_else(|| start.get("tcp_mss_default"))
            .and_then(Value::as_u64),
        forward,
        backward,
        cpu,
    })
}
