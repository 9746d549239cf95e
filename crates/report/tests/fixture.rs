//! Generates the fixture run directories under `tests/fixtures/` from simulated DUTs, so their
//! records are exactly what `bench` serialises. Run with `WIRERATE_REGEN_FIXTURE=1 cargo test -p
//! report --test fixture`; without the variable the test only checks that the fixtures parse.
//!
//! - `run-demo`: a complete run (3 profiles, UDP v4/v6, TCP, 3 repetitions, latency, loss
//!   curves, one tester-limited cell, DUT CPU from a `vmstat` sampler in `hooks.jsonl`).
//! - `run-demo-b`: the same plan again, NAPT faster, filter-stateful-100 slower at 64 B and
//!   128 B, the rest re-measured with other noise (for `compare`).
//! - `run-demo-killed`: `run-demo` killed after 40 % of its records, last line torn.
//! - `run-wan`: a real-device plan (`run-wan.plan.toml`): UDP throughput and latency per frame
//!   size over plain, VLAN, QinQ and MPLS on the WAN link, and plain bidirectional cases.
//! - `run-matrix`: issue 13's matrix (`run-matrix.plan.toml`), one repetition: six profiles
//!   with long names, UDP IPv4/IPv6, fast path off/on, TCP MSS × offload, the lab DUT's CPU in
//!   every trial record, iperf3 reports with per-interval rates.
//! - `run-demo-v1` (not generated): `run-demo` as recorded before trials carried latency
//!   percentiles and a direction count, kept to show that old runs still render.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bench_model::hooks::parse::{CpuSamples, Parsed};
use bench_model::hooks::HookOutput;
use bench_model::plan::{Methodology, Plan};
use bench_model::results::{
    read_records, DutCounters, EngineFacts, MethodologyDone, Record, RunFacts, RunInfo, TcpFacts,
    TcpFigures, TrialKey, TrialRecord, UdpFacts,
};
use bench_model::search::sim::{SimDut, XorShift};
use bench_model::search::{
    drive, LatencySearch, LatencySummary, LineFraction, Outcome, Percentiles, TrialRequest,
};
use report::HookRecord;
use wire::units::Nanos;

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Forwarding capacity of a profile in frames per second (the DUT is per-packet limited).
fn capacity_pps(profile: &str, variant: char, frame: u32) -> f64 {
    let base: f64 = match profile {
        "forward" => 560e3,
        "filter-stateful-100" => 290e3,
        _ => 450e3,
    };
    match (variant, profile) {
        ('b', "napt") => base * 1.15,
        ('b', "filter-stateful-100") if frame <= 128 => base * 0.88,
        _ => base,
    }
}

fn line_pps(frame: u32) -> f64 {
    wire::linerate::max_frame_rate(wire::units::BitsPerSec(1e9), frame as usize).0
}

fn iperf3_json(
    template: &serde_json::Value,
    l4: f64,
    sessions: u32,
    mss: u32,
) -> serde_json::Value {
    let mut v = template.clone();
    let old = v["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap();
    let k = l4 / old;
    fn scale(v: &mut serde_json::Value, k: f64) {
        match v {
            serde_json::Value::Object(m) => {
                for (key, x) in m.iter_mut() {
                    if key == "bits_per_second" || key == "bytes" {
                        if let Some(f) = x.as_f64() {
                            *x = serde_json::json!((f * k).round());
                        }
                    } else {
                        scale(x, k);
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter_mut().for_each(|x| scale(x, k)),
            _ => {}
        }
    }
    scale(&mut v["end"], k);
    v["start"]["tcp_mss"] = serde_json::json!(mss);
    v["start"]["test_start"]["num_streams"] = serde_json::json!(sessions);
    v
}

fn generate(variant: char) -> (RunInfo, Vec<Record>, Vec<HookRecord>) {
    let plan_text = std::fs::read_to_string(dir().join("run-demo.plan.toml")).unwrap();
    let plan = Plan::parse(&plan_text, "run-demo.plan.toml").unwrap();
    let template: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../bench-model/tests/fixtures/iperf3/tcp-1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let started = if variant == 'a' {
        1_795_000_000
    } else {
        1_795_090_000
    };
    let info = RunInfo {
        facts: Some(RunFacts::of(&plan, &plan.cases().unwrap())),
        plan_name: plan.name.clone(),
        plan_text,
        version: "0.1.0".into(),
        started_unix: started,
        host: [
            ("kernel".to_string(), "6.18.0".to_string()),
            ("cpus".to_string(), "2".to_string()),
            ("iperf3".to_string(), "3.12".to_string()),
        ]
        .into_iter()
        .collect(),
    };
    let mut records = Vec::new();
    let mut stats = Vec::new();
    let mut clock = started * 1000;
    let mut rng = XorShift::new(if variant == 'a' { 7 } else { 11 });
    let mut seed = if variant == 'a' { 100 } else { 900 };
    for case in plan.cases().unwrap() {
        for rep in 0..plan.run.repetitions {
            let mut throughput = None;
            let mut cpu = None;
            for &m in &case.methodologies {
                let mut index = 0u32;
                let mut push_trial =
                    |req: &TrialRequest, out: &Outcome, iperf3: Option<serde_json::Value>| {
                        clock += (req.duration.as_secs_f64() * 1000.0) as u64 + 200;
                        records.push(Record::Trial(TrialRecord {
                            // As the runner records them: UDP search trials only.
                            udp: (m != Methodology::Iperf3)
                                .then(|| UdpFacts::of(&plan, &case, out.offered.0))
                                .flatten(),
                            key: TrialKey {
                                case_id: case.id.clone(),
                                repetition: rep,
                                methodology: m,
                                index,
                            },
                            request: *req,
                            outcome: *out,
                            tester_limited: out.is_tester_limited(plan.run.tester_tolerance),
                            iperf3,
                            tcp: None,
                            engine: None,
                            superseded: false,
                            lan_watch: Vec::new(),
                            finished_unix_ms: clock,
                        }));
                        index += 1;
                    };
                let result = match (m, case.frame().and_then(|f| f.fixed()).map(|b| b as u32)) {
                    (Methodology::Iperf3, _) => {
                        let mss = case.dims.mss.unwrap_or(1460);
                        let sessions = case.dims.sessions.unwrap_or(1);
                        let payload = f64::from(mss - 12);
                        let frame = mss + 12 + 20 + 20 + 14 + 4;
                        // TCP costs the DUT more per packet than UDP test frames.
                        let cap = capacity_pps(&case.dims.profile, variant, frame)
                            * 0.35
                            * (1.0 + 0.04 * f64::from(sessions.min(4) - 1));
                        let pps = cap.min(line_pps(frame)) * 0.97 * (1.0 + 0.015 * rng.symmetric());
                        let l4 = pps * payload * 8.0;
                        cpu = Some(
                            if case.dims.profile == "forward" {
                                71.0
                            } else {
                                96.0
                            } + 3.0 * rng.symmetric(),
                        );
                        let req = TrialRequest::rate(LineFraction::FULL, Duration::from_secs(10));
                        let out = Outcome {
                            intended: LineFraction::FULL,
                            offered: LineFraction::FULL,
                            received: 0,
                            lost: 0,
                            fragments: 0,
                            directions: 1,
                            duration: Duration::from_secs(10),
                            latency: None,
                        };
                        push_trial(&req, &out, Some(iperf3_json(&template, l4, sessions, mss)));
                        None
                    }
                    (_, Some(frame)) => {
                        let line = line_pps(frame);
                        let capacity =
                            (capacity_pps(&case.dims.profile, variant, frame) / line).min(1.0);
                        seed += 1;
                        let mut dut = SimDut::noisy(LineFraction(capacity), 0.015, seed);
                        dut.line_pps = line;
                        if case.id == "forward/udp4/64B" {
                            // The tester cannot offer more than ~0.45 Mpps (DESIGN.md §8), below
                            // this DUT's capacity (~0.56 Mpps): a bisection stays under the
                            // tester's ceiling and finds no DUT figure.
                            dut = dut.with_tester_ceiling(LineFraction(0.30));
                        }
                        let profile = case.dims.profile.clone();
                        let mut run = |req: &TrialRequest| {
                            let mut out = dut.trial(req);
                            if req.latency {
                                let base = match profile.as_str() {
                                    "forward" => 18_000.0,
                                    "filter-stateful-100" => 41_000.0,
                                    _ => 27_000.0,
                                } + f64::from(frame) * 9.0;
                                let j = 1.0 + 0.05 * rng.symmetric();
                                out.latency = Some(LatencySummary {
                                    min: Nanos((base * 0.55 * j) as u64),
                                    mean: Nanos((base * j) as u64),
                                    max: Nanos((base * 4.2 * j) as u64),
                                    samples: out.received.min(200_000),
                                    ipdv: None,
                                    percentiles: Some(percentiles(base * j)),
                                });
                            }
                            out
                        };
                        match m {
                            Methodology::Rfc2544Latency => throughput
                                .as_ref()
                                .and_then(|t| {
                                    LatencySearch::at_throughput(
                                        t,
                                        0,
                                        plan.methodology.latency_trials,
                                        plan.methodology.latency_duration,
                                    )
                                    .ok()
                                })
                                .map(|mut s| {
                                    drive(&mut s, |r| {
                                        let o = run(r);
                                        push_trial(r, &o, None);
                                        o
                                    })
                                }),
                            _ => {
                                let mut s = plan.search(&case, m).unwrap();
                                let r = drive(s.as_mut(), |r| {
                                    let o = run(r);
                                    push_trial(r, &o, None);
                                    o
                                });
                                if m == Methodology::Rfc2544Throughput {
                                    throughput = Some(r.clone());
                                    if let Some(t) = r.throughput(0) {
                                        let load = t.0 * line
                                            / capacity_pps(&case.dims.profile, variant, frame);
                                        cpu = Some(
                                            (100.0 * load).min(100.0) * 0.98 + rng.symmetric(),
                                        );
                                    }
                                }
                                Some(r)
                            }
                        }
                    }
                    _ => unreachable!("UDP cases have a frame size"),
                };
                records.push(Record::Done(MethodologyDone {
                    case_id: case.id.clone(),
                    repetition: rep,
                    methodology: m,
                    line_pps: result
                        .as_ref()
                        .and(case.frame().and_then(|f| f.fixed()))
                        .map(|_| plan.line_pps(&case)),
                    result,
                    ceiling: None,
                }));
            }
            // DUT CPU is captured for IPv4 only (the napt and forward profiles' proc-stat hooks).
            if case.dims.ip == wire::encap::IpVersion::V4 {
                if let Some(c) = cpu {
                    // A `vmstat 1` sampler's samples around the case's mean.
                    let busy: Vec<f64> = (0..3)
                        .map(|i| (c + [-1.0, 0.0, 1.0][i]).clamp(0.0, 100.0).round())
                        .collect();
                    let _ = rep;
                    stats.push(HookRecord {
                        case_id: Some(case.id.clone()),
                        profile: case.dims.profile.clone(),
                        stage: "sampler".into(),
                        output: HookOutput {
                            argv: vec!["sh".into(), "-c".into(), "vmstat 1".into()],
                            status: None,
                            stdout: String::new(),
                            stderr: String::new(),
                            parsed: Some(Parsed::Vmstat(CpuSamples { busy_percent: busy })),
                        },
                    });
                }
            }
        }
    }
    (info, records, stats)
}

/// A plausible latency distribution around a mean of `mean` ns (a long right tail).
fn percentiles(mean: f64) -> Percentiles {
    Percentiles {
        p50: Nanos((mean * 0.92) as u64),
        p90: Nanos((mean * 1.35) as u64),
        p99: Nanos((mean * 2.1) as u64),
        p99_9: Nanos((mean * 3.4) as u64),
    }
}

/// `run-wan`: a per-packet limited CPE (420 kpps plain, less per tag it handles), searched
/// for throughput then latency; bidirectional cases share that capacity between directions.
fn generate_wan() -> (RunInfo, Vec<Record>) {
    let plan_text = std::fs::read_to_string(dir().join("run-wan.plan.toml")).unwrap();
    let plan = Plan::parse(&plan_text, "run-wan.plan.toml").unwrap();
    let info = RunInfo {
        facts: Some(RunFacts::of(&plan, &plan.cases().unwrap())),
        plan_name: plan.name.clone(),
        plan_text,
        version: "0.1.0".into(),
        started_unix: 1_795_200_000,
        host: [("kernel".to_string(), "6.18.0".to_string())]
            .into_iter()
            .collect(),
    };
    let mut records = Vec::new();
    let mut clock = info.started_unix * 1000;
    let mut rng = XorShift::new(23);
    let mut seed = 500;
    for case in plan.cases().unwrap() {
        let frame = case
            .frame()
            .and_then(|f| f.fixed())
            .map(|b| b as u32)
            .unwrap();
        let line = plan.line_pps(&case).0;
        let tags = case.id.matches("vlan").count()
            + 2 * case.id.matches("qinq").count()
            + case.id.matches("mpls").count();
        let dirs: u32 = if case.id.ends_with("/bidir") { 2 } else { 1 };
        // Packets per second per direction the DUT forwards.
        let capacity = 420e3 * (1.0 - 0.08 * tags as f64) / f64::from(dirs);
        for rep in 0..plan.run.repetitions {
            let mut throughput = None;
            for &m in &case.methodologies {
                seed += 1;
                let mut dut = SimDut::noisy(LineFraction((capacity / line).min(1.0)), 0.01, seed);
                dut.line_pps = line;
                let mut index = 0u32;
                let mut run = |req: &TrialRequest| {
                    let mut out = dut.trial(req);
                    out.directions = dirs;
                    out.received *= u64::from(dirs);
                    out.lost *= u64::from(dirs);
                    if req.latency {
                        let base = (22_000.0 + 7_000.0 * tags as f64 + f64::from(frame) * 8.0)
                            * (1.0 + 0.03 * rng.symmetric());
                        out.latency = Some(LatencySummary {
                            min: Nanos((base * 0.6) as u64),
                            mean: Nanos(base as u64),
                            max: Nanos((base * 4.5) as u64),
                            samples: out.received.min(100_000),
                            ipdv: None,
                            percentiles: Some(percentiles(base)),
                        });
                    }
                    clock += (req.duration.as_secs_f64() * 1000.0) as u64 + 200;
                    records.push(Record::Trial(TrialRecord {
                        udp: UdpFacts::of(&plan, &case, out.offered.0),
                        key: TrialKey {
                            case_id: case.id.clone(),
                            repetition: rep,
                            methodology: m,
                            index,
                        },
                        request: *req,
                        outcome: out,
                        tester_limited: out.is_tester_limited(plan.run.tester_tolerance),
                        iperf3: None,
                        tcp: None,
                        engine: None,
                        superseded: false,
                        lan_watch: Vec::new(),
                        finished_unix_ms: clock,
                    }));
                    index += 1;
                    out
                };
                let result = match m {
                    Methodology::Rfc2544Latency => throughput
                        .as_ref()
                        .and_then(|t| {
                            LatencySearch::at_throughput(
                                t,
                                0,
                                plan.methodology.latency_trials,
                                plan.methodology.latency_duration,
                            )
                            .ok()
                        })
                        .map(|mut s| drive(&mut s, &mut run)),
                    _ => {
                        let mut s = plan.search(&case, m).unwrap();
                        let r = drive(s.as_mut(), &mut run);
                        throughput = Some(r.clone());
                        Some(r)
                    }
                };
                records.push(Record::Done(MethodologyDone {
                    case_id: case.id.clone(),
                    repetition: rep,
                    methodology: m,
                    line_pps: result
                        .as_ref()
                        .and(case.frame().and_then(|f| f.fixed()))
                        .map(|_| plan.line_pps(&case)),
                    result,
                    ceiling: None,
                }));
            }
        }
    }
    (info, records)
}

/// `run-matrix`: per-packet capacities of the simulated kernel DUT, frames/s (IPv4, fast path
/// off); IPv6 costs 15 % more per packet, the fast path gives +80 % to NAPT and +60 % to plain
/// forwarding, the offloads +50 % to TCP.
fn matrix_capacity(profile: &str, ip: u8, fastpath: bool) -> f64 {
    let base: f64 = match profile {
        "forward" => 560e3,
        "filter-stateful-1" => 470e3,
        "filter-stateful-100" => 290e3,
        "filter-stateful-10000" => 15e3,
        "filter-stateless-100" => 230e3,
        _ => 450e3,
    };
    let fast = match (fastpath, profile) {
        (true, "napt") => 1.8,
        (true, _) => 1.6,
        _ => 1.0,
    };
    base * fast * if ip == 6 { 0.85 } else { 1.0 }
}

/// The lab DUT's counters over a trial: its CPU busy in proportion to the share of its
/// capacity the offered load took (0.5 s of USER_HZ ticks), frames as the outcome says.
fn dut_counters(offered_pps: f64, capacity_pps: f64, secs: f64, out: &Outcome) -> DutCounters {
    let total = (secs * 100.0).round().max(1.0) as u64;
    let share = (offered_pps / capacity_pps).min(1.0);
    DutCounters {
        ingress_rx: out.received + out.lost,
        ingress_drops: out.lost,
        backlog_drops: out.lost,
        tester_backlog_drops: 0,
        egress_tx: out.received,
        egress_drops: 0,
        cpu_busy_ticks: (total as f64 * (0.03 + 0.95 * share)).round() as u64,
        cpu_total_ticks: total,
    }
}

/// `run-matrix` (`run-matrix.plan.toml`): one repetition; UDP by multi-goal search with the
/// lab DUT's counters on every trial, TCP by iperf3 with the runner's TCP figures, the DUT's
/// counters and a raw report whose per-interval rates wander by about 1 % (its first interval
/// is slow start).
fn generate_matrix() -> (RunInfo, Vec<Record>) {
    let plan_text = std::fs::read_to_string(dir().join("run-matrix.plan.toml")).unwrap();
    let plan = Plan::parse(&plan_text, "run-matrix.plan.toml").unwrap();
    let template: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../bench-model/tests/fixtures/iperf3/tcp-1.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let info = RunInfo {
        facts: Some(RunFacts::of(&plan, &plan.cases().unwrap())),
        plan_name: plan.name.clone(),
        plan_text,
        version: "0.1.0".into(),
        started_unix: 1_795_300_000,
        host: [("kernel".to_string(), "6.18.0".to_string())]
            .into_iter()
            .collect(),
    };
    let mut records = Vec::new();
    let mut clock = info.started_unix * 1000;
    let mut rng = XorShift::new(31);
    let mut seed = 700;
    for case in plan.cases().unwrap() {
        let ip = if case.dims.ip == wire::encap::IpVersion::V6 {
            6
        } else {
            4
        };
        let capacity = matrix_capacity(&case.dims.profile, ip, case.dims.fastpath == Some(true));
        for &m in &case.methodologies {
            let mut index = 0u32;
            let mut push = |req: &TrialRequest,
                            out: &Outcome,
                            engine: Option<EngineFacts>,
                            tcp: Option<TcpFigures>,
                            iperf3: Option<serde_json::Value>| {
                clock += (req.duration.as_secs_f64() * 1000.0) as u64 + 200;
                records.push(Record::Trial(TrialRecord {
                    udp: (m != Methodology::Iperf3)
                        .then(|| UdpFacts::of(&plan, &case, out.offered.0))
                        .flatten(),
                    key: TrialKey {
                        case_id: case.id.clone(),
                        repetition: 0,
                        methodology: m,
                        index,
                    },
                    request: *req,
                    outcome: *out,
                    tester_limited: false,
                    iperf3,
                    tcp,
                    engine,
                    superseded: false,
                    lan_watch: Vec::new(),
                    finished_unix_ms: clock,
                }));
                index += 1;
            };
            let result = if m == Methodology::Iperf3 {
                let mss = case.dims.mss.unwrap_or(if ip == 6 { 1440 } else { 1460 });
                let sessions = case.dims.sessions.unwrap_or(1);
                let rates = bench_model::iperf3::tcp_rates(
                    wire::units::BitsPerSec(1.0),
                    mss,
                    case.dims.ip,
                    true,
                );
                let frame = rates.frame_len;
                let cap = capacity
                    * 0.35
                    * if case.dims.offload == Some(true) {
                        1.5
                    } else {
                        1.0
                    }
                    * (1.0 + 0.04 * f64::from(sessions.min(4) - 1));
                let pps = cap.min(line_pps(frame)) * 0.97 * (1.0 + 0.01 * rng.symmetric());
                let payload = f64::from(mss - 12);
                let l4 = pps * payload * 8.0;
                let secs = 3.0;
                let out = Outcome {
                    intended: LineFraction::FULL,
                    offered: LineFraction::FULL,
                    received: 0,
                    lost: 0,
                    fragments: 0,
                    directions: 1,
                    duration: Duration::from_secs(3),
                    latency: None,
                };
                let mut raw = iperf3_json(&template, l4, sessions, mss);
                let interval = template["intervals"][0].clone();
                let factors: Vec<f64> = (0..4)
                    .map(|i| {
                        if i == 0 {
                            0.6
                        } else {
                            1.0 + 0.012 * rng.symmetric()
                        }
                    })
                    .collect();
                raw["intervals"] = serde_json::Value::Array(
                    factors
                        .iter()
                        .map(|f| {
                            let mut v = interval.clone();
                            v["sum"]["bits_per_second"] = serde_json::json!((l4 * f).round());
                            v
                        })
                        .collect(),
                );
                let directions = match bench_model::iperf3::report::parse(&raw.to_string()) {
                    Ok(r) if r.backward.is_some() => 2,
                    _ => 1,
                };
                let tcp = TcpFigures {
                    facts: Some(TcpFacts::derive(
                        plan.speed(),
                        case.dims.ip,
                        wire::units::BitsPerSec(l4),
                        mss,
                        None,
                        directions,
                    )),
                    l4_bps: wire::units::BitsPerSec(l4),
                    l2_bps: wire::units::BitsPerSec(pps * f64::from(frame) * 8.0),
                    l1_bps: wire::units::BitsPerSec(pps * f64::from(frame + 20) * 8.0),
                    mss,
                    retransmits: Some(0),
                    syn_mss: vec![mss; sessions as usize + 1],
                    cpu_local: 20.0,
                    cpu_remote: 30.0,
                    wire_count: None,
                    dut: Some(dut_counters(pps, cap, secs, &out)),
                };
                let req = TrialRequest::rate(LineFraction::FULL, Duration::from_secs(3));
                push(&req, &out, None, Some(tcp), Some(raw));
                None
            } else {
                let frame = case
                    .frame()
                    .and_then(|f| f.fixed())
                    .map(|b| b as u32)
                    .unwrap();
                let line = line_pps(frame);
                seed += 1;
                let mut dut = SimDut::noisy(LineFraction((capacity / line).min(1.0)), 0.01, seed);
                dut.line_pps = line;
                let mut s = plan.search(&case, m).unwrap();
                Some(drive(s.as_mut(), |req| {
                    let out = dut.trial(req);
                    let offered = out.offered.0 * line;
                    let secs = req.duration.as_secs_f64();
                    let engine = EngineFacts {
                        backend: "xdp".into(),
                        note: "auto: xdp (the trial fits it)".into(),
                        sent: out.received + out.lost,
                        slipped: 0,
                        refused_by_dut: 0,
                        max_catch_up: 0,
                        invalid: Default::default(),
                        per_direction: Vec::new(),
                        dut: Some(dut_counters(offered, capacity, secs, &out)),
                        session_drops: Vec::new(),
                        streams: Vec::new(),
                        tester_port_drops: Vec::new(),
                    };
                    push(req, &out, Some(engine), None, None);
                    out
                }))
            };
            records.push(Record::Done(MethodologyDone {
                case_id: case.id.clone(),
                repetition: 0,
                methodology: m,
                line_pps: result
                    .as_ref()
                    .and(case.frame().and_then(|f| f.fixed()))
                    .map(|_| plan.line_pps(&case)),
                result,
                ceiling: None,
            }));
        }
    }
    (info, records)
}

fn jsonl<T: serde::Serialize>(items: &[T]) -> String {
    items
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect()
}

/// The files of a generated run: (file name, contents).
fn run_files(info: &RunInfo, trials: &str, stats: Option<&str>) -> Vec<(&'static str, String)> {
    let mut files = vec![
        (
            "run.json",
            serde_json::to_string_pretty(info).unwrap() + "\n",
        ),
        ("trials.jsonl", trials.to_string()),
    ];
    if let Some(s) = stats {
        files.push(("hooks.jsonl", s.to_string()));
    }
    files
}

/// Writes a generated run when `WIRERATE_REGEN_FIXTURE` is set; otherwise checks that the
/// stored fixture is exactly what the generator makes now (a record field added to the
/// runner's output, or a changed simulated DUT, must reach the fixtures, and the snapshots
/// rendered from them).
fn write_or_check(name: &str, info: &RunInfo, trials: &str, stats: Option<&str>) {
    let d = dir().join(name);
    let regen = std::env::var_os("WIRERATE_REGEN_FIXTURE").is_some();
    for (file, want) in run_files(info, trials, stats) {
        let path = d.join(file);
        if regen {
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(&path, want).unwrap();
            continue;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} is not what the generator makes now; regenerate with WIRERATE_REGEN_FIXTURE=1 cargo test -p report --test fixture, then WIRERATE_BLESS=1 cargo test -p report --test exporters, and review the diff",
            path.display()
        );
    }
}

#[test]
fn fixtures_are_current_and_parse() {
    let (info, records, stats) = generate('a');
    let trials = jsonl(&records);
    write_or_check("run-demo", &info, &trials, Some(&jsonl(&stats)));
    let (info_b, records_b, stats_b) = generate('b');
    write_or_check(
        "run-demo-b",
        &info_b,
        &jsonl(&records_b),
        Some(&jsonl(&stats_b)),
    );
    // Killed: 40 % of the lines, then half of the next one.
    let lines: Vec<&str> = trials.lines().collect();
    let keep = lines.len() * 2 / 5;
    let mut cut: String = lines[..keep].iter().map(|l| format!("{l}\n")).collect();
    cut.push_str(&lines[keep][..lines[keep].len() / 2]);
    write_or_check("run-demo-killed", &info, &cut, None);
    let (info_w, records_w) = generate_wan();
    write_or_check("run-wan", &info_w, &jsonl(&records_w), None);
    let (info_m, records_m) = generate_matrix();
    write_or_check("run-matrix", &info_m, &jsonl(&records_m), None);
    for name in [
        "run-demo",
        "run-demo-b",
        "run-demo-killed",
        "run-wan",
        "run-matrix",
        "run-demo-v1",
    ] {
        let d = dir().join(name);
        let loaded = read_records(&d.join("trials.jsonl")).unwrap();
        assert!(!loaded.records.is_empty(), "{name}");
        assert_eq!(loaded.torn_tail, name == "run-demo-killed", "{name}");
        let _: RunInfo =
            serde_json::from_str(&std::fs::read_to_string(d.join("run.json")).unwrap()).unwrap();
    }
}
