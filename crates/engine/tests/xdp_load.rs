//! The XDP toolchain end to end: the object clang built loads through aya and attaches to a
//! veth between two namespaces this test creates (lab's veth pair, removed on drop).

use lab::veth::{End, VethPair, VethPairSpec};
use std::process::Command;

#[test]
fn probe_program_loads_and_attaches_to_a_veth() {
    if !lab::is_root() {
        println!("SKIP: needs root (creates a network namespace and attaches XDP)");
        return;
    }
    let base = format!("wr-xdpload-{}", std::process::id());
    let pair = VethPair::up(&VethPairSpec::new(&base, "wr0", "wr1"))
        .unwrap_or_else(|e| panic!("veth pair {base}: {e}"));
    let ns = pair.netns(End::A).to_string();
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
        // `prog/xdp id N`, not any "xdp": the peer's namespace (`link-netns wr-xdpload-…`)
        // carries that too.
        shown.contains("prog/xdp"),
        "ip link shows no XDP program on wr0: {shown}"
    );
}
