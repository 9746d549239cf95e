//! `wirerate plan check` / `wirerate run` refuse a broken plan before any traffic (issue 5): a
//! typo (file:line:col, key, did-you-mean), a hook command that does not exist, a DUT host that
//! ssh cannot reach. Each check asserts that no run directory and no lab namespace was created.
//! No root needed: every error is found before the lab would be built.

use std::path::Path;
use std::process::{Command, Output};

const WIRERATE: &str = env!("CARGO_BIN_EXE_wirerate");

fn plan(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn wirerate(args: &[&str]) -> Output {
    Command::new(WIRERATE).args(args).output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn no_namespace(lab: &str) {
    let out = Command::new("ip").args(["netns", "list"]).output();
    if let Ok(o) = out {
        let list = String::from_utf8_lossy(&o.stdout);
        assert!(
            !list.contains(&format!("wr-{lab}-")),
            "a lab namespace was created: {list}"
        );
    }
}

const BASE: &str = r#"name = "bad"
[topology]
kind = "lab"
lab = "forward"
name = "badplan"
[dut]
kind = "lab"
[dut.profiles.forward]
[run]
trial-duration = "1s"
[[matrix]]
protocol = ["udp"]
ip = [4]
frame-size = [64]
methodologies = ["rfc2544-throughput"]
"#;

#[test]
fn fixture_and_shipped_plan_check_ok() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // The shipped demo adds the fast-path and MSS × offload blocks to the fixture's matrix.
    for (p, cases, case) in [
        (
            root.join("plans/lab-demo.toml"),
            "76 cases",
            "gateway/tcp4/s1/mss400/offload=on",
        ),
        (
            root.join("crates/bench-model/tests/fixtures/lab-demo.toml"),
            "72 cases",
            "napt/tcp6/s4",
        ),
    ] {
        let o = wirerate(&["plan", "check", p.to_str().unwrap()]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains(cases), "{out}");
        assert!(out.contains("napt/tcp6/s4") && out.contains(case), "{out}");
        assert!(out.contains("estimated"), "{out}");
    }
}

/// Every plan shipped in plans/ checks OK, and the CPE plans say what they play.
#[test]
fn every_shipped_plan_checks_ok() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plans");
    let mut seen = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        // The CPE plans are templates for another machine (EDIT the interface names):
        // `--offline` checks the file alone; without it, this host's missing interfaces are
        // named at their lines.
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let template = name.starts_with("cpe-");
        if template {
            let here = wirerate(&["plan", "check", p.to_str().unwrap()]);
            assert_eq!(here.status.code(), Some(2), "{}", stderr(&here));
            let text = std::fs::read_to_string(&p).unwrap();
            let line = text
                .lines()
                .position(|l| l.contains("interface = \"enp1s0\""))
                .unwrap()
                + 1;
            assert!(
                stderr(&here).contains(&format!(
                    "{name}:{line}:13: `ports.lan.interface`: interface `enp1s0` not found"
                )),
                "{}",
                stderr(&here)
            );
        }
        let args: &[&str] = if template { &["--offline"] } else { &[] };
        let o = wirerate(&[&["plan", "check", p.to_str().unwrap()], args].concat());
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{}: {}", p.display(), stderr(&o));
        assert!(out.contains(": OK"), "{out}");
        assert!(out.contains("of start-up"), "{out}");
        seen.push(p.file_name().unwrap().to_string_lossy().into_owned());
        if seen.last().unwrap() == "cpe-pppoe.toml" {
            assert!(out.contains("wan (enp2s0, pppoe server mru 1454)"), "{out}");
            assert!(out.contains("encap=pppoe"), "{out}");
        }
        if seen.last().unwrap() == "cpe-dslite.toml" {
            // TCP through the AFTR's Internet side, with the MSS sweep.
            for m in [1420, 1200, 800, 400] {
                assert!(out.contains(&format!("default/tcp4/s1/mss{m}")), "{out}");
            }
        }
        if seen.last().unwrap() == "cpe-mape.toml" {
            // UDP one way and both ways in IPv4-in-IPv6 (+40 B), TCP through the BR's
            // Internet side with the MSS sweep, and the MTU probe both ways.
            for size in [64, 1478] {
                assert!(
                    out.contains(&format!("default/udp4/{size}B/encap=mape ")),
                    "{out}"
                );
                assert!(
                    out.contains(&format!("default/udp4/{size}B/encap=mape/bidir ")),
                    "{out}"
                );
            }
            for m in [1420, 1200, 800, 400] {
                assert!(out.contains(&format!("default/tcp4/s1/mss{m}")), "{out}");
            }
            assert!(
                out.lines()
                    .any(|l| l.contains("default/udp4/1518B/encap=mape/bidir ")
                        && l.contains("mtu-probe")),
                "{out}"
            );
            assert!(
                out.contains("MAP-E BR 2001:db8:d::1 rule 2001:db8:100::/40 198.51.100.0/24 EA 16"),
                "{out}"
            );
        }
        if seen.last().unwrap() == "cpe-ipoe.toml" {
            assert!(out.contains("default/tcp4/s1/mss400"), "{out}");
            assert!(
                out.contains("wan (enp2s0, ipoe server 198.51.100.1 (pool 198.51.100.10 +240))"),
                "{out}"
            );
            assert!(out.contains("mtu-probe"), "{out}");
        }
        if seen.last().unwrap() == "lab-flows.toml" {
            assert!(out.contains("napt/udp4/imix/flows=10000"), "{out}");
            assert!(
                out.contains("UDP test streams ([run]): pseudorandom flow fields (RFC 4814, seed 4814), tos 184"),
                "{out}"
            );
        }
    }
    seen.sort();
    assert_eq!(
        seen,
        [
            "cpe-dslite.toml",
            "cpe-ipoe.toml",
            "cpe-mape.toml",
            "cpe-pppoe.toml",
            "lab-demo.toml",
            "lab-flows.toml",
            "lab-nat-capacity.toml"
        ]
    );
}

#[test]
fn typo_is_reported_with_line_key_and_hint_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    let p = plan(
        d.path(),
        "typo.toml",
        &BASE.replace("trial-duration", "trial-duraton"),
    );
    let o = wirerate(&["plan", "check", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("typo.toml:10:1"), "{e}");
    assert!(e.contains("run.trial-duraton"), "{e}");
    assert!(e.contains("did you mean `trial-duration`"), "{e}");
    let out = d.path().join("out");
    let o = wirerate(&["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("did you mean"), "{}", stderr(&o));
    assert!(!out.exists(), "a run directory was created");
    no_namespace("badplan");
}

/// A frame size is refused once, at its item's file, line, column and key: out of range with
/// the text of every integer key, too small for the block's IP version with the template's.
#[test]
fn a_bad_frame_size_is_one_error_at_its_item() {
    let d = tempfile::tempdir().unwrap();
    let range = "must be between 1 and 9018";
    for (size, message) in [
        ("0", range),
        ("-1", range),
        ("9019", range),
        ("20", "frame size 20 B is too small for ipv4 UDP plus the 16-byte signature; the smallest that works is 64 B"),
    ] {
        let p = plan(
            d.path(),
            "size.toml",
            &BASE.replace("frame-size = [64]", &format!("frame-size = [{size}]")),
        );
        let o = wirerate(&["plan", "check", p.to_str().unwrap()]);
        assert_eq!(o.status.code(), Some(2), "{size}: {}", stderr(&o));
        let e = stderr(&o);
        let at = format!("size.toml:14:15: `matrix[0].frame-size[0]`: {message}");
        assert!(e.contains(&at), "{size}: {e}");
        assert_eq!(e.matches("frame-size").count(), 1, "{size}: {e}");
    }
    no_namespace("badplan");
}

#[test]
fn missing_hook_command_is_named_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    let p = plan(
        d.path(),
        "hook.toml",
        &BASE.replace(
            "[dut.profiles.forward]\n",
            "[dut.profiles.forward]\nsetup = [\"wr-no-such-command --on\"]\n",
        ),
    );
    let out = d.path().join("out");
    let o = wirerate(&["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(e.contains("nothing was sent"), "{e}");
    assert!(
        e.contains("hook.toml:9:10: `dut.profiles.forward.setup[0]`: command `wr-no-such-command` not found"),
        "{e}"
    );
    assert!(!out.exists(), "a run directory was created");
    no_namespace("badplan");
    // Issue 19 row 15: plan check finds it too, at the same place, with no root needed.
    let c = wirerate(&["plan", "check", p.to_str().unwrap()]);
    assert_eq!(c.status.code(), Some(2));
    assert!(
        stderr(&c).contains("hook.toml:9:10: `dut.profiles.forward.setup[0]`"),
        "{}",
        stderr(&c)
    );
}

#[test]
fn unreachable_ssh_host_is_named_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    // A name under .invalid never resolves (RFC 6761): no packet reaches any real host.
    let p = plan(
        d.path(),
        "ssh.toml",
        &BASE
            .replace(
                "kind = \"lab\"\n[dut.profiles",
                "kind = \"device\"\nssh = \"wr-nohost.invalid\"\n[dut.profiles",
            )
            .replace(
                "[dut.profiles.forward]\n",
                "[dut.profiles.forward]\nsetup = [\"true\"]\n",
            ),
    );
    let out = d.path().join("out");
    let o = wirerate(&["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    let e = stderr(&o);
    assert!(
        e.contains("DUT host `wr-nohost.invalid` is unreachable over ssh"),
        "{e}"
    );
    assert!(!out.exists(), "a run directory was created");
    no_namespace("badplan");
}

/// Issue 19 rows 1–2: a command whose standard output is a closed pipe (`| head -1`) ends
/// cleanly, without a panic: what it prints is discarded, what it does is done.
#[test]
fn closed_stdout_is_not_a_panic() {
    let shipped = concat!(env!("CARGO_MANIFEST_DIR"), "/../../plans/lab-demo.toml");
    for args in [
        vec!["plan", "check", shipped],
        vec!["linerate", "--speed", "1G", "--sizes", "rfc2544"],
        vec!["completions", "bash"],
        vec!["--help"],
    ] {
        let mut child = Command::new(WIRERATE)
            .args(&args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Close the reading end before the command writes anything.
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{args:?}: {err}");
        assert!(out.status.success(), "{args:?}: {:?} {err}", out.status);
    }
}

/// Issue 33: a snapshot parser given as a sampler (`cat /proc/stat` with `parse = "proc-stat"`
/// ran, ended at once, and the DUT CPU column stayed empty without a word) is refused by `plan
/// check` and by `run` at its `parse` key, naming the stages that fit; where it fits, the
/// same hook checks OK.
#[test]
fn a_snapshot_parser_as_a_sampler_is_refused_naming_the_stage() {
    let d = tempfile::tempdir().unwrap();
    let hook = "samplers = [{ command = \"cat /proc/stat\", parse = \"proc-stat\" }]";
    let text = BASE.replace(
        "[dut.profiles.forward]\n",
        &format!("[dut.profiles.forward]\n{hook}\n"),
    );
    let p = plan(d.path(), "sampler.toml", &text);
    let col = hook.find("\"proc-stat\"").unwrap() + 1;
    let c = wirerate(&["plan", "check", p.to_str().unwrap()]);
    assert_eq!(c.status.code(), Some(2), "{}", stderr(&c));
    let e = stderr(&c);
    assert!(
        e.contains(&format!(
            "sampler.toml:9:{col}: `dut.profiles.forward.samplers[0].parse`: `proc-stat` reads counters at one instant"
        )),
        "{e}"
    );
    assert!(
        e.contains("it fits `stats-before` and `stats-after`, not `samplers`"),
        "{e}"
    );
    let out = d.path().join("out");
    let o = wirerate(&["run", p.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not `samplers`"), "{}", stderr(&o));
    assert!(!out.exists(), "a run directory was created");
    no_namespace("badplan");
    // In the stages that read it, the same command and parser check OK.
    let fixed = BASE.replace(
        "[dut.profiles.forward]\n",
        "[dut.profiles.forward]\nstats-before = [{ command = \"cat /proc/stat\", parse = \"proc-stat\" }]\nstats-after = [{ command = \"cat /proc/stat\", parse = \"proc-stat\" }]\n",
    );
    let p = plan(d.path(), "fixed.toml", &fixed);
    let c = wirerate(&["plan", "check", p.to_str().unwrap()]);
    assert!(c.status.success(), "{}", stderr(&c));
}
