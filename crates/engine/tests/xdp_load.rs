//! The XDP toolchain end to end: the object clang built loads through aya and attaches to a
//! veth inside a namespace this test creates (and removes).

use std::process::Command;

fn sh(args: &[&str]) {
    let ok = Command::new(args[0])
        .args(&args[1..])
        .status()
        .expect("spawn")
        .success();
    assert!(ok, "{args:?} failed");
}

#[test]
fn probe_program_loads_and_attaches_to_a_veth() {
    if effective_uid() != 0 {
        println!("SKIP: needs root (creates a network namespace and attaches XDP)");
        return;
    }
    let ns = format!("wr-xdpload-{}", std::process::id());
    sh(&["ip", "netns", "add", &ns]);
    let _cleanup = Cleanup(ns.clone());
    sh(&[
        "ip", "-n", &ns, "link", "add", "wr0", "type", "veth", "peer", "name", "wr1",
    ]);
    sh(&["ip", "-n", &ns, "link", "set", "wr0", "up"]);
    sh(&["ip", "-n", &ns, "link", "set", "wr1", "up"]);
    let t = std::thread::spawn(move || {
        let f = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
        engine::sys::enter_netns(&f).unwrap();
        let mut bpf = aya::Ebpf::load(engine::xdp::objects::PROBE).expect("load object");
        let prog: &mut aya::programs::Xdp =
            bpf.program_mut("wr_probe").unwrap().try_into().unwrap();
        prog.load().expect("verifier accepts wr_probe");
        let link = prog
            .attach("wr0", aya::programs::XdpFlags::DRV_MODE)
            .expect("attach");
        let out = Command::new("ip")
            .args(["link", "show", "wr0"])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        prog.detach(link).unwrap();
        text
    });
    let shown = t.join().unwrap();
    assert!(
        shown.contains("xdp"),
        "ip link shows no XDP program on wr0: {shown}"
    );
}

fn effective_uid() -> u32 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap()
}

struct Cleanup(String);
impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}
