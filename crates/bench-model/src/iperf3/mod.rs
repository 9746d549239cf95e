//! The iperf3 driver's pure parts: `-J` report parsing ([`report`]), L4→L2/L1 conversion,
//! command lines for client and server.
//!
//! iperf3 reports L4 goodput; a router is judged in frames and bits on the wire. The conversion
//! needs the payload each frame carries (the TCP payload per segment or the UDP datagram size)
//! and the headers around it; it is arithmetic, kept here so that every run converts the same way.
//!
//! The server is started persistent (no `-1`) and stopped by wirerate: a readiness probe
//! connection ends a one-off (`-1`) iperf3 3.12 server ("unable to receive parameters"), while a
//! persistent server logs it and keeps listening.

use serde::{Deserialize, Serialize};
use wire::encap::IpVersion;
use wire::units::{BitsPerSec, Pps};

use crate::hooks::{shell_quote, Exec};

pub mod report;
pub mod wire_count;

pub use report::{parse, Report, ReportError, L4};

/// Ethernet header (14) + FCS (4).
pub const ETHERNET_OVERHEAD: u32 = 18;
/// Preamble, SFD and inter-frame gap: what L1 adds per frame (DESIGN.md §4).
pub const L1_OVERHEAD: u32 = 20;
/// TCP header without options.
pub const TCP_HEADER: u32 = 20;
/// The TCP timestamps option as Linux sends it (10 B + 2 B of NOP padding).
pub const TCP_TIMESTAMPS: u32 = 12;
/// UDP header.
pub const UDP_HEADER: u32 = 8;
/// The smallest Ethernet frame (with FCS); shorter frames are padded on the wire.
pub const MIN_FRAME: u32 = 64;

fn ip_header(ip: IpVersion) -> u32 {
    match ip {
        IpVersion::V4 => 20,
        IpVersion::V6 => 40,
    }
}

/// The payload a TCP segment carries for a negotiated `mss`: Linux's MSS excludes options, so
/// with timestamps each full segment carries 12 bytes less (MSS 1460 → 1448 B).
pub fn tcp_payload_per_segment(mss: u32, timestamps: bool) -> u32 {
    if timestamps {
        mss.saturating_sub(TCP_TIMESTAMPS)
    } else {
        mss
    }
}

/// Frame length (with FCS) of a TCP segment carrying `payload` bytes.
pub fn tcp_frame_len(payload: u32, ip: IpVersion, timestamps: bool) -> u32 {
    let ts = if timestamps { TCP_TIMESTAMPS } else { 0 };
    (payload + TCP_HEADER + ts + ip_header(ip) + ETHERNET_OVERHEAD).max(MIN_FRAME)
}

/// Frame length (with FCS) of a UDP datagram carrying `payload` bytes.
pub fn udp_frame_len(payload: u32, ip: IpVersion) -> u32 {
    (payload + UDP_HEADER + ip_header(ip) + ETHERNET_OVERHEAD).max(MIN_FRAME)
}

/// One throughput at L4, L2 and L1, and the frame rate behind it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rates {
    /// L4 payload bits per second (what iperf3 reports).
    pub l4: BitsPerSec,
    /// Ethernet frame bits per second (headers + FCS).
    pub l2: BitsPerSec,
    /// Bits on the wire (L2 + 20 B per frame).
    pub l1: BitsPerSec,
    /// Frames per second.
    pub frames: Pps,
    /// The frame length used.
    pub frame_len: u32,
}

/// Converts an L4 rate to L2/L1, assuming every frame carries `payload` bytes in a frame of
/// `frame_len` bytes (full-size segments: bulk TCP, or fixed-size UDP datagrams).
pub fn convert(l4: BitsPerSec, payload: u32, frame_len: u32) -> Rates {
    let frames = if payload == 0 {
        0.0
    } else {
        l4.0 / (8.0 * f64::from(payload))
    };
    Rates {
        l4,
        l2: BitsPerSec(frames * 8.0 * f64::from(frame_len)),
        l1: BitsPerSec(frames * 8.0 * f64::from(frame_len + L1_OVERHEAD)),
        frames: Pps(frames),
        frame_len,
    }
}

/// [`convert`] for bulk TCP with negotiated `mss`.
pub fn tcp_rates(l4: BitsPerSec, mss: u32, ip: IpVersion, timestamps: bool) -> Rates {
    let payload = tcp_payload_per_segment(mss, timestamps);
    convert(l4, payload, tcp_frame_len(payload, ip, timestamps))
}

/// [`convert`] for UDP datagrams of `payload` bytes (`-l`).
pub fn udp_rates(l4: BitsPerSec, payload: u32, ip: IpVersion) -> Rates {
    convert(l4, payload, udp_frame_len(payload, ip))
}

/// Options of one iperf3 client run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientOptions {
    /// Server address.
    pub server: String,
    /// Server port.
    pub port: u16,
    /// TCP or UDP.
    pub protocol: L4,
    /// Test length (whole seconds; iperf3 3.12's `-t` takes an integer).
    pub seconds: u32,
    /// Seconds omitted at the start (`-O`, TCP slow start).
    pub omit: u32,
    /// Parallel streams (`-P`).
    pub parallel: u32,
    /// `-R`: the server sends.
    pub reverse: bool,
    /// `--bidir`: both send.
    pub bidir: bool,
    /// `-M`: TCP MSS.
    pub mss: Option<u32>,
    /// `-b`: target bit rate (UDP; 0 = unlimited).
    pub bitrate: Option<BitsPerSec>,
    /// `-l`: block / datagram size.
    pub length: Option<u32>,
    /// `-B`: local address to bind.
    pub bind: Option<String>,
}

impl ClientOptions {
    /// A TCP run of `seconds` against `server:port`.
    pub fn tcp(server: &str, port: u16, seconds: u32) -> ClientOptions {
        ClientOptions {
            server: server.to_string(),
            port,
            protocol: L4::Tcp,
            seconds,
            omit: 0,
            parallel: 1,
            reverse: false,
            bidir: false,
            mss: None,
            bitrate: None,
            length: None,
            bind: None,
        }
    }

    /// The argument vector (always with `-J`).
    pub fn argv(&self) -> Vec<String> {
        let mut v: Vec<String> = vec![
            "iperf3".into(),
            "-c".into(),
            self.server.clone(),
            "-p".into(),
            self.port.to_string(),
            "-t".into(),
            self.seconds.max(1).to_string(),
            "-J".into(),
        ];
        if self.protocol == L4::Udp {
            v.push("-u".into());
        }
        let mut push = |a: &str, b: String| {
            v.push(a.to_string());
            v.push(b);
        };
        if self.omit > 0 {
            push("-O", self.omit.to_string());
        }
        if self.parallel > 1 {
            push("-P", self.parallel.to_string());
        }
        if let Some(m) = self.mss {
            push("-M", m.to_string());
        }
        if let Some(b) = self.bitrate {
            push("-b", format!("{}", b.0.round() as u64));
        }
        if let Some(l) = self.length {
            push("-l", l.to_string());
        }
        if let Some(b) = &self.bind {
            push("-B", b.clone());
        }
        if self.reverse {
            v.push("-R".into());
        }
        if self.bidir {
            v.push("--bidir".into());
        }
        v
    }
}

/// The server's argument vector: persistent (see the module docs), flushing its "Server
/// listening" line at once.
pub fn server_argv(port: u16, bind: Option<&str>) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "iperf3".into(),
        "-s".into(),
        "-p".into(),
        port.to_string(),
        "--forceflush".into(),
    ];
    if let Some(b) = bind {
        v.push("-B".into());
        v.push(b.to_string());
    }
    v
}

/// Runs `argv` where `exec` says: as is, under `ip netns exec NS`, or over `ssh HOST`.
pub fn wrap(exec: &Exec, argv: &[String]) -> Vec<String> {
    match exec {
        Exec::Local => argv.to_vec(),
        Exec::Netns { name } => {
            let mut v = vec!["ip".into(), "netns".into(), "exec".into(), name.clone()];
            v.extend(argv.iter().cloned());
            v
        }
        Exec::Ssh { host, port } => {
            let mut v: Vec<String> = vec!["ssh".into(), "-o".into(), "BatchMode=yes".into()];
            if let Some(p) = port {
                v.push("-p".into());
                v.push(p.to_string());
            }
            v.push(host.clone());
            v.push("--".into());
            v.push(
                argv.iter()
                    .map(|a| shell_quote(a))
                    .collect::<Vec<_>>()
                    .join(" "),
            );
            v
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tcp_frame_arithmetic() {
        // MSS 1460 with timestamps: 1448 B payload in a 1518 B frame.
        assert_eq!(tcp_payload_per_segment(1460, true), 1448);
        assert_eq!(tcp_frame_len(1448, IpVersion::V4, true), 1518);
        assert_eq!(tcp_frame_len(1460, IpVersion::V4, false), 1518);
        assert_eq!(tcp_frame_len(1428, IpVersion::V6, true), 1518);
        // Tiny payloads are padded to 64 B.
        assert_eq!(tcp_frame_len(1, IpVersion::V4, false), 64);
        assert_eq!(udp_frame_len(64, IpVersion::V4), 110);
        assert_eq!(udp_frame_len(18, IpVersion::V4), 64);
    }

    #[test]
    fn l4_to_l2_and_l1() {
        // 1448 B payload at 1448·8·1000 bit/s = 1000 frames/s of 1518 B.
        let r = tcp_rates(BitsPerSec(1448.0 * 8.0 * 1000.0), 1460, IpVersion::V4, true);
        assert!((r.frames.0 - 1000.0).abs() < 1e-9);
        assert!((r.l2.0 - 1518.0 * 8.0 * 1000.0).abs() < 1e-6);
        assert!((r.l1.0 - 1538.0 * 8.0 * 1000.0).abs() < 1e-6);
        // A gigabit of 1518 B frames at L1 is 81,274 frames/s (DESIGN.md §4).
        let l4 = BitsPerSec(1e9 * 1448.0 / 1538.0);
        let r = tcp_rates(l4, 1460, IpVersion::V4, true);
        assert!((r.l1.0 - 1e9).abs() < 1e-3);
        assert_eq!(r.frames.0.round(), 81_274.0);
    }

    #[test]
    fn client_and_server_command_lines() {
        let mut o = ClientOptions::tcp("2001:db8::2", 5301, 10);
        o.parallel = 4;
        o.mss = Some(1200);
        o.reverse = true;
        assert_eq!(
            o.argv().join(" "),
            "iperf3 -c 2001:db8::2 -p 5301 -t 10 -J -P 4 -M 1200 -R"
        );
        let u = ClientOptions {
            protocol: L4::Udp,
            bitrate: Some(BitsPerSec(10e6)),
            length: Some(64),
            bidir: true,
            ..ClientOptions::tcp("192.0.2.2", 5301, 1)
        };
        assert_eq!(
            u.argv().join(" "),
            "iperf3 -c 192.0.2.2 -p 5301 -t 1 -J -u -b 10000000 -l 64 --bidir"
        );
        let s = server_argv(5301, Some("192.0.2.2"));
        assert_eq!(s.join(" "), "iperf3 -s -p 5301 --forceflush -B 192.0.2.2");
        assert_eq!(
            wrap(
                &Exec::Netns {
                    name: "wr-demo-b".into()
                },
                &s
            )[..4],
            ["ip", "netns", "exec", "wr-demo-b"]
        );
        let ssh = wrap(
            &Exec::Ssh {
                host: "root@192.0.2.1".into(),
                port: None,
            },
            &s,
        );
        assert_eq!(
            ssh.last().unwrap(),
            "iperf3 -s -p 5301 --forceflush -B 192.0.2.2"
        );
    }
}
