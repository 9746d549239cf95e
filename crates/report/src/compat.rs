//! The one compatibility reader (#18 item 3). Runs recorded by today's runner carry typed
//! facts: `run.json` its expanded cases, link speed, repetitions and profiles
//! ([`RunFacts`]), each UDP trial its frame size, encapsulation, the path's 100 % and the
//! offered rate ([`bench_model::results::UdpFacts`]), each iperf3 run the frame its rates are
//! counted in ([`TcpFacts`]). Runs recorded before lack some or all of them; this module
//! derives what they lack the way earlier reports did — by parsing the plan text kept in
//! `run.json`, case ids and encapsulation strings — and nothing else in the report parses
//! those. A record that has its facts passes through untouched.

use bench_model::iperf3;
use bench_model::plan::{Case, Methodology, Plan, Protocol};
use bench_model::results::{LineRate, RunFacts, RunInfo, TcpFacts, TrialRecord};
use wire::encap::{EncapSpec, IpVersion};
use wire::linerate::FrameSize;
use wire::units::{BitsPerSec, Pps};

use crate::model::{Dims, DEFAULT_SPEED};

/// `run.json`'s facts: as the runner wrote them, else from its plan text (runs recorded
/// before eb18b68). The second value is why the plan text could not be read, when it
/// could not: the facts are then empty, the speed [`DEFAULT_SPEED`] and one repetition.
pub(crate) fn run_facts(info: &RunInfo) -> (RunFacts, Option<String>) {
    if let Some(f) = &info.facts {
        return (f.clone(), None);
    }
    match Plan::parse_expanded(&info.plan_text, "run.json") {
        Ok((plan, cases)) => (RunFacts::of(&plan, &cases), None),
        Err(e) => (
            RunFacts {
                speed_bps: BitsPerSec(DEFAULT_SPEED),
                repetitions: 1,
                profiles: Vec::new(),
                description: None,
                ports: Vec::new(),
                cases: Vec::new(),
                links: Vec::new(),
            },
            Some(e.to_string()),
        ),
    }
}

/// The encapsulation a case's `encap` text names (an `encap=` case-id segment, or the `encap`
/// user variable of runs before that dimension existed), with the case's IP version: `vlan` on
/// an IPv6 case is `vlan+ipv6`; a value that names its IP version (`ipv4+pppoe`) or is DS-Lite or MAP-E
/// keeps its own. `None` when `wire` cannot read it (the caller keeps it as a label).
pub(crate) fn encap_of_text(value: &str, ip: IpVersion) -> Option<EncapSpec> {
    let names_ip = value
        .split('+')
        .any(|p| matches!(p.trim(), "ipv4" | "ipv6" | "ip4" | "ip6"));
    let spec = value.parse::<EncapSpec>().ok()?;
    Some(if names_ip || spec.ipv4_in_ipv6() {
        spec
    } else {
        spec.with_ip(ip)
    })
}

/// A recorded case's dimensions. The case's typed `encap` names its encapsulation; runs
/// recorded before that dimension existed had a user variable named `encap`, read here (a
/// value `wire` cannot read stays a label).
pub(crate) fn dims_of_case(c: &Case) -> Dims {
    let old_encap = c.dims.vars.iter().find(|(k, _)| k == "encap");
    let old_spec = old_encap.and_then(|(_, v)| encap_of_text(v, c.dims.ip));
    let encap = old_spec.unwrap_or_else(|| c.dims.encap_or_plain());
    Dims {
        profile: c.dims.profile.clone(),
        protocol: c.dims.protocol,
        ip: c.dims.ip,
        encap,
        frame: c.dims.frame,
        sessions: c.dims.sessions,
        mss: c.dims.mss,
        // The dimensions the table of dimensions shows as labels (the stream dimensions
        // `flows`, `tos`, then the user dimensions, as their case-id segments read) group like
        // user dimensions, so two cases that differ only in them are two rows, as for a run
        // `run.json` does not list (its id parsed).
        vars: c
            .dims
            .labels()
            .into_iter()
            .filter(|(k, _)| k != "encap" || old_spec.is_none())
            .collect(),
        bidirectional: c.dims.bidirectional,
        offload: c.dims.offload,
        fastpath: c.dims.fastpath,
    }
}

/// Parses a case id (`profile/udp4/64B/s2/mss1200/k=v`), for a case `run.json` does not list
/// (its plan unreadable).
pub(crate) fn dims_of_case_id(id: &str) -> Dims {
    let mut parts = id.split('/');
    let mut d = Dims::new(parts.next().unwrap_or(""));
    let proto = parts.next().unwrap_or("udp4");
    let version = if let Some(v) = proto.strip_prefix("tcp") {
        d.protocol = Protocol::Tcp;
        v
    } else {
        proto.strip_prefix("udp").unwrap_or("4")
    };
    if version == "6" {
        d.ip = IpVersion::V6;
        d.encap = EncapSpec::plain(IpVersion::V6);
    }
    let switch = |v: &str| match v {
        "on" => Some(true),
        "off" => Some(false),
        _ => None,
    };
    for p in parts {
        if p == "bidir" {
            d.bidirectional = true;
        } else if p == "imix" {
            d.frame = Some(FrameSize::Imix);
        } else if let Some((k, v)) = p.split_once('=') {
            // The built-in switches are spelt `on`/`off`; a user dimension of the same
            // name with other values (older plans: `fastpath=1`) stays a user dimension.
            let encap = (k == "encap").then(|| encap_of_text(v, d.ip)).flatten();
            if k == "offload" && switch(v).is_some() {
                d.offload = switch(v);
            } else if k == "fastpath" && switch(v).is_some() {
                d.fastpath = switch(v);
            } else if let Some(e) = encap {
                d.encap = e;
            } else {
                d.vars.push((k.into(), v.into()));
            }
        } else if let Some(n) = p.strip_suffix('B').and_then(|x| x.parse().ok()) {
            d.frame = Some(FrameSize::Fixed { bytes: n });
        } else if let Some(n) = p.strip_prefix("mss").and_then(|x| x.parse().ok()) {
            d.mss = Some(n);
        } else if let Some(n) = p.strip_prefix('s').and_then(|x| x.parse().ok()) {
            d.sessions = Some(n);
        }
    }
    d
}

/// One direction's 100 % of a UDP case whose trials did not record it: the path arithmetic on its
/// encapsulation string, or the runner's `MethodologyDone::line_pps` where it recorded that (runs
/// from 3fcea2d to eb18b68) and it disagrees (a note says so). `None`, with a note, when the size
/// does not fit the path.
pub(crate) fn udp_line(
    speed: BitsPerSec,
    recorded_pps: Option<Pps>,
    dims: &Dims,
    frame: &FrameSize,
    label: (&str, Methodology),
    notes: &mut Vec<String>,
) -> Option<LineRate> {
    let (case_id, m) = label;
    let Some(computed) = LineRate::on_path(speed, dims.encap, frame) else {
        notes.push(format!(
            "{case_id}: frame size {frame} B does not fit the path; no theoretical maximum"
        ));
        return None;
    };
    // The loads are fractions of what the runner offered as 100 %: turn them into rates with
    // that, and say so where this path arithmetic disagrees (a run recorded by another
    // version, or a path the report does not know).
    let directions = if dims.bidirectional { 2 } else { 1 };
    match recorded_pps {
        Some(recorded) if (recorded.0 - computed.pps.0).abs() > 1e-6 * computed.pps.0 => {
            let (all, _) = computed.times(directions);
            notes.push(format!(
                "{case_id} ({}): the run offered {:.0} frames/s as 100 % of line rate, this report's path arithmetic gives {:.0}; the figures use the run's",
                m.name(),
                recorded.0 * f64::from(directions),
                all.0
            ));
            Some(LineRate {
                pps: recorded,
                l2_bps: computed.l2_bps * (recorded.0 / computed.pps.0),
                bottleneck: computed.bottleneck,
            })
        }
        _ => Some(computed),
    }
}

/// What an iperf3 trial moved and what it means: (L4 bits/s, MSS, facts). From the runner's
/// TCP figures, with their facts or (before eb18b68) derived from them; from the raw iperf3
/// JSON alone for the oldest runs. `None` when the trial has neither.
pub(crate) fn tcp_of(
    t: &TrialRecord,
    report: Option<&iperf3::report::Report>,
    dims: &Dims,
    speed: BitsPerSec,
) -> Option<(BitsPerSec, u32, TcpFacts)> {
    let (l4, mss) = match (&t.tcp, report) {
        (Some(f), _) => (f.l4_bps, f.mss),
        (None, Some(r)) => (
            r.total_received(),
            r.tcp_mss
                .map(|x| x as u32)
                .or(dims.mss)
                .unwrap_or(match dims.ip {
                    IpVersion::V4 => 1460,
                    IpVersion::V6 => 1440,
                }),
        ),
        (None, None) => return None,
    };
    let facts = match t.tcp.as_ref().and_then(|f| f.facts) {
        Some(f) => f,
        None => TcpFacts::derive(
            speed,
            dims.ip,
            l4,
            mss,
            t.tcp.as_ref().and_then(|f| f.wire_count.as_ref()),
            if report.is_some_and(|r| r.backward.is_some()) {
                2
            } else {
                1
            },
        ),
    };
    Some((l4, mss, facts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(s: &str) -> EncapSpec {
        s.parse().unwrap()
    }

    /// The theoretical maximum of an old run's case, from its dimensions.
    fn max_of(d: &Dims, frame: u32) -> Option<(f64, f64, String)> {
        crate::model::udp_max(1e9, d.encap, d.bidirectional, frame)
    }

    #[test]
    fn theoretical_maximum_follows_the_encapsulation() {
        let plain = dims_of_case_id("forward/udp4/64B");
        assert_eq!(plain.encap, spec("ipv4"));
        let (pps, _, link) = max_of(&plain, 64).unwrap();
        assert_eq!(pps.round(), 1_488_095.0);
        assert_eq!(link, "link");
        // PPPoE adds 8 B on the WAN link: 1e9 / ((64 + 8 + 20) × 8).
        let pppoe = dims_of_case_id("forward/udp4/64B/encap=ipv4+pppoe");
        assert_eq!(pppoe.encap, spec("ipv4+pppoe"));
        let (pps, _, link) = max_of(&pppoe, 64).unwrap();
        assert_eq!(pps.round(), (1e9f64 / (92.0 * 8.0)).round());
        assert_eq!(link, "wan");
        // Said in `wire`'s canonical spelling, whatever order the case id wrote.
        assert_eq!(pppoe.family(), "IPv4 UDP over pppoe+ipv4");
    }

    #[test]
    fn encap_dimension_and_bidirectional_come_from_the_case_id() {
        let d = dims_of_case_id("cpe/udp6/128B/encap=qinq/bidir");
        assert_eq!(d.encap, spec("qinq+ipv6"));
        assert!(d.bidirectional);
        assert_eq!(d.family(), "IPv6 UDP over qinq+ipv6, bidirectional");
        // 1e9 / ((128 + 8 + 20) × 8), both directions.
        let (pps, _, link) = max_of(&d, 128).unwrap();
        assert_eq!(pps.round(), (2.0 * 1e9f64 / (156.0 * 8.0)).round());
        assert_eq!(link, "wan");
        assert_eq!(
            dims_of_case_id("x/udp4/64B/encap=plain").encap,
            spec("ipv4")
        );
        assert_eq!(encap_of_text("dslite", IpVersion::V6), Some(spec("dslite")));
        // Old runs' user variable keeps the IP version it names; a value `wire` cannot read
        // is no encapsulation but stays a label, so its cases stay apart.
        assert_eq!(
            encap_of_text("ipv4+pppoe", IpVersion::V6),
            Some(spec("pppoe+ipv4"))
        );
        assert_eq!(encap_of_text("gre", IpVersion::V4), None);
        let gre = dims_of_case_id("x/udp4/64B/encap=gre");
        assert!(gre.has_plain_encap());
        assert_eq!(gre.vars, [("encap".to_string(), "gre".to_string())]);
    }

    #[test]
    fn switch_dimensions_parse_from_case_ids_and_read_in_points() {
        let d = dims_of_case_id("napt/tcp4/s1/mss400/offload=on/fastpath=off");
        assert_eq!(
            (d.offload, d.fastpath, d.mss),
            (Some(true), Some(false), Some(400))
        );
        assert!(d.vars.is_empty());
        assert_eq!(
            d.point(),
            "1 session, MSS 400, offload on, fastpath off, IPv4 TCP"
        );
        // Older plans' user dimension of the same name with other values stays one.
        let d = dims_of_case_id("pf-on/udp4/64B/fastpath=1");
        assert_eq!(d.fastpath, None);
        assert_eq!(d.vars, [("fastpath".to_string(), "1".to_string())]);
    }

    /// Two cases that differ only in a stream dimension (`flows`, `tos`) are two points of the
    /// report, from `run.json`'s cases and from their ids alike.
    #[test]
    fn stream_dimensions_keep_cases_apart() {
        let plan = bench_model::plan::Plan::parse(
            "name = \"f\"\n[topology]\nkind = \"lab\"\nlab = \"forward\"\nspeed = \"1G\"\n[dut]\nkind = \"lab\"\n[dut.profiles.napt]\n[[matrix]]\nprotocol = [\"udp\"]\nframe-size = [64]\nflows = [1, 1000]\ntos = [184]\nmethodologies = [\"rfc2544-throughput\"]\n",
            "f.toml",
        )
        .unwrap();
        let cases = plan.cases().unwrap();
        let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "napt/udp4/64B/flows=1/tos=184",
                "napt/udp4/64B/flows=1000/tos=184"
            ]
        );
        let (a, b) = (dims_of_case(&cases[0]), dims_of_case(&cases[1]));
        assert_ne!(a, b);
        assert_eq!(b.point(), "64 B, flows=1000, tos=184, IPv4 UDP");
        assert_eq!(dims_of_case_id(&cases[1].id), b);
    }

    /// An IMIX case is a point of its own beside the sizes, its frame the mix.
    #[test]
    fn imix_cases_are_their_own_point() {
        let d = dims_of_case_id("napt/udp6/imix/tos=46");
        assert!(d.is_imix());
        assert_eq!(d.frame_bytes(), None);
        assert_eq!(d.frame(), Some(FrameSize::Imix));
        assert_eq!(d.point(), "IMIX, tos=46, IPv6 UDP");
        assert_ne!(d, dims_of_case_id("napt/udp6/82B/tos=46"));
    }

    #[test]
    fn case_ids_parse_back_into_dimensions() {
        let d = dims_of_case_id("napt/tcp6/s4/mss1200/fast-path=on");
        assert_eq!(
            (d.protocol, d.ip, d.sessions, d.mss),
            (Protocol::Tcp, IpVersion::V6, Some(4), Some(1200))
        );
        assert_eq!(d.vars, [("fast-path".to_string(), "on".to_string())]);
        assert_eq!(d.point(), "4 sessions, MSS 1200, fast-path=on, IPv6 TCP");
    }
}
