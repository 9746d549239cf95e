//! The preliminary phase of a connection trial on XDP (issue #37 item 3), on the lab's real
//! NAPT: the XDP sender opens the connections, the XDP learner on the responder records each
//! one's translated tuple, and what was learned is exactly what the DUT created — checked
//! against the DUT's own connection table (`conntrack -C`) and an nftables counter of the
//! frames it forwarded, also when the DUT is overloaded. When XDP cannot run a half of the
//! phase, that half runs on AF_PACKET, decided before the first frame, with the reason in the
//! report. Root is needed; without it each test prints `SKIP`. Nothing here asserts a speed.

use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::Duration;
use wire::units::Pps;

use engine::nat::priority::SenderPriority;
use engine::nat::{self, ConnTrialConfig, LoadEngine};
use engine::trial::Backend;
use lab::Lab;
use wire::encap::IpVersion;

static SERIAL: Mutex<()> = Mutex::new(());

mod common_nat;
use common_nat::{conntrack_count, counter, nft, sh};
use lab::LabGuard;

fn napt_lab(name: &str) -> Option<LabGuard> {
    common_nat::napt_lab(name, "XDP preliminary phase")
}

/// N connections in RFC 4814 pseudorandom order at `pps`, the preliminary phase on `backend`.
fn trial(lab: &Lab, ip: IpVersion, n: u64, pps: f64, backend: Backend) -> ConnTrialConfig {
    let (a, b) = bench::trial::lab_ports(lab).expect("lab ports");
    let mut c = ConnTrialConfig::new(a, b, ip);
    c.connections = n;
    // The smallest frame that carries the signature (IPv6: 82 B).
    c.frame_size = if ip == IpVersion::V4 { 64 } else { 82 };
    c.rate_pps = Pps(pps);
    c.validation_rate_pps = Pps(5_000.0);
    // A second between the phases and after the last frame: a busy machine that holds the
    // DUT or the responder for a few hundred ms must not turn late frames into lost ones.
    c.gap = Duration::from_secs(1);
    c.drain = Duration::from_secs(1);
    c.permutation_seed = Some(37);
    c.preliminary_backend = backend;
    c
}

/// Counts every UDP frame from the initiator the DUT forwards (`from_a`), independently of
/// the tester.
fn count_forwarded(lab: &Lab, a: std::net::IpAddr) {
    let family = if a.is_ipv4() { "ip" } else { "ip6" };
    nft(
        lab,
        &format!(
            "table inet n37pc {{\n counter from_a {{\n }}\n chain f {{\n  type filter hook forward priority 10; policy accept;\n  {family} saddr {a} meta l4proto udp counter name \"from_a\"\n }}\n}}\n"
        ),
    );
}

/// Runs `cfg` on an empty table; the report and the DUT's table size after the preliminary
/// phase (read where the runner reads its counters).
fn run(lab: &Lab, cfg: &ConnTrialConfig) -> (nat::ConnTrialReport, u64) {
    let _ = sh(lab, &["conntrack", "-F"]);
    let mut in_table = None;
    let r = nat::run(cfg, &AtomicBool::new(false), &mut || {
        in_table = Some(conntrack_count(lab));
    })
    .expect("trial");
    println!("{r:?}");
    (r, in_table.expect("the between hook ran"))
}

/// What every XDP preliminary phase must show, whatever the DUT did: the tester sent N,
/// each frame the DUT's port took became one entry of its table and one learned connection,
/// each frame it refused is counted as refused, and nothing was learned twice.
fn assert_exact(lab: &Lab, cfg: &ConnTrialConfig, r: &nat::ConnTrialReport, in_table: u64) {
    let n = cfg.connections;
    let e = &r.preliminary_engines;
    assert_eq!(
        (e.sender, e.learner),
        (LoadEngine::Xdp, LoadEngine::Xdp),
        "{}",
        e.note
    );
    assert_eq!(r.preliminary.sent, n, "the tester sent every connection");
    assert_eq!(r.learned, in_table, "learned = the DUT's table entries");
    assert_eq!(
        r.learned,
        counter(lab, "n37pc", "from_a"),
        "learned = the frames the DUT forwarded (none lost in the tester)"
    );
    assert_eq!(
        r.learned + r.preliminary.refused_by_peer,
        n,
        "every frame sent was learned or refused by the DUT's port"
    );
    assert_eq!(r.learned_duplicates, 0);
    assert_eq!(
        r.translated, r.learned,
        "the NAPT translated every connection"
    );
    assert_eq!(
        r.validated, r.learned,
        "every learned translation was right"
    );
    assert_eq!(r.misdirected, 0);
}

#[test]
fn xdp_preliminary_phase_learns_exactly_the_connections_the_napt_created() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = napt_lab("n37p1") else { return };
    let lab = lab.0.as_ref().unwrap();
    let n = 3_000;
    let cfg = trial(lab, IpVersion::V4, n, 5_000.0, Backend::Xdp);
    count_forwarded(lab, cfg.initiator.ipv4.unwrap().into());
    let (r, in_table) = run(lab, &cfg);
    assert_exact(lab, &cfg, &r, in_table);
    // Far below the DUT's rate: all N.
    assert_eq!((r.learned, r.validated), (n, n));
    assert_eq!(r.preliminary_engines.note, "");
    // A 0.6 s phase above 2,560/s: the port's nice −10, not real-time (nat::priority).
    assert_sender_priority(&r, SenderPriority::Nice { nice: -10 });
}

/// The XDP sender ran at `want` and the report says so (unless the environment overrides the
/// choice: then only that it was recorded).
fn assert_sender_priority(r: &nat::ConnTrialReport, want: SenderPriority) {
    let got = r.preliminary_engines.sender_priority;
    if std::env::var_os(nat::priority::PRELIMINARY_ENV).is_some() {
        println!(
            "SKIP (priority only): {} overrides it",
            nat::priority::PRELIMINARY_ENV
        );
        assert!(got.is_some(), "the XDP sender's priority is recorded");
        return;
    }
    assert_eq!(got, Some(want));
}

#[test]
fn xdp_preliminary_phase_through_an_overloaded_napt_learns_only_what_it_created() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = napt_lab("n37p2") else { return };
    let lab = lab.0.as_ref().unwrap();
    // Far above what the lab DUT establishes on this machine (it may still take them all on
    // a fast one: nothing below depends on how many it refused).
    let cfg = trial(lab, IpVersion::V4, 4_000, 1_000_000.0, Backend::Xdp);
    count_forwarded(lab, cfg.initiator.ipv4.unwrap().into());
    let (r, in_table) = run(lab, &cfg);
    println!(
        "refused by the DUT's port: {}; learned {}",
        r.preliminary.refused_by_peer, r.learned
    );
    assert_exact(lab, &cfg, &r, in_table);
    // A 4 ms phase: real-time (nat::priority).
    assert_sender_priority(&r, SenderPriority::Fifo { priority: 1 });
}

#[test]
fn an_ipv6_preliminary_phase_falls_back_to_af_packet_with_the_reason() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = napt_lab("n37p3") else { return };
    let lab = lab.0.as_ref().unwrap();
    let n = 500;
    // Auto: XDP cannot run it (IPv4 only), so both halves run on AF_PACKET, and say why.
    let cfg = trial(lab, IpVersion::V6, n, 2_000.0, Backend::Auto);
    count_forwarded(lab, cfg.initiator.ipv6.unwrap().into());
    let (r, in_table) = run(lab, &cfg);
    let e = &r.preliminary_engines;
    assert_eq!(
        (e.sender, e.learner),
        (LoadEngine::AfPacket, LoadEngine::AfPacket)
    );
    assert!(
        e.note.contains("preliminary sender: af_packet")
            && e.note.contains("preliminary learner: af_packet")
            && e.note.contains("IPv4 only"),
        "{}",
        e.note
    );
    assert_eq!(
        e.sender_priority, None,
        "AF_PACKET keeps the port thread's priority"
    );
    assert_eq!((r.preliminary.sent, r.learned, r.validated), (n, n, n));
    assert_eq!(in_table, n);
    assert_eq!(counter(lab, "n37pc", "from_a"), n);
    // Forced onto XDP, the same trial is refused before a frame is sent.
    let forced = trial(lab, IpVersion::V6, n, 2_000.0, Backend::Xdp);
    let _ = sh(lab, &["conntrack", "-F"]);
    let e = nat::run(&forced, &AtomicBool::new(false), &mut || {}).unwrap_err();
    assert!(e.to_string().contains("IPv4 only"), "{e}");
    assert_eq!(counter(lab, "n37pc", "from_a"), n, "nothing was sent");
}

#[test]
fn a_responder_port_that_holds_another_xdp_program_learns_on_af_packet() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(lab) = napt_lab("n37p4") else { return };
    let lab = lab.0.as_ref().unwrap();
    let n = 1_000;
    let cfg = trial(lab, IpVersion::V4, n, 5_000.0, Backend::Auto);
    // Someone else's program (one that passes every frame) on the responder's interface: the
    // learner cannot attach, in either mode, so the phase learns on AF_PACKET.
    let obj = std::env::temp_dir().join(format!("n37p4-pass-{}.o", std::process::id()));
    std::fs::write(&obj, engine::xdp::objects::PROBE).unwrap();
    let b = lab.port(lab::PortId::B).unwrap();
    let out = std::process::Command::new("ip")
        .args([
            "-n", &b.netns, "link", "set", "dev", &b.ifname, "xdpdrv", "obj",
        ])
        .arg(&obj)
        .args(["sec", "xdp"])
        .output()
        .expect("ip link set xdp");
    let _ = std::fs::remove_file(&obj);
    assert!(
        out.status.success(),
        "attaching a pass program: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    count_forwarded(lab, cfg.initiator.ipv4.unwrap().into());
    let (r, in_table) = run(lab, &cfg);
    let _ = std::process::Command::new("ip")
        .args([
            "-n", &b.netns, "link", "set", "dev", &b.ifname, "xdpdrv", "off",
        ])
        .status();
    let e = &r.preliminary_engines;
    assert_eq!(
        (e.sender, e.learner),
        (LoadEngine::Xdp, LoadEngine::AfPacket)
    );
    assert!(
        e.note
            .contains("preliminary learner: af_packet, as XDP cannot run it"),
        "{}",
        e.note
    );
    // Not real-time: the AF_PACKET learner reads its ring on the same tester CPU.
    assert_sender_priority(&r, SenderPriority::Nice { nice: -10 });
    assert_eq!(r.rx_ring_drops, 0, "the tester's ring dropped frames");
    assert_eq!((r.learned, r.validated), (n, n));
    assert_eq!(in_table, n);
    assert_eq!(counter(lab, "n37pc", "from_a"), n);
}
