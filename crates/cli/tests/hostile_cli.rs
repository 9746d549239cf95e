//! Issue 19, re-run as written: the rows of the hostile probe that a command line reproduces,
//! each a clear error or a correct figure, never a hang, a panic or a leak. Every command runs
//! under a deadline (a hang fails the test instead of stalling the suite). Rows needing the lab
//! run as root only and print `SKIP: <reason>` otherwise.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_wirerate");

use lab::is_root;

/// `wirerate ARGS` with a 60 s deadline: a hang is a failure, not a stalled suite.
fn wr(args: &[&str]) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("`wirerate {}` hung (over 60 s)", args.join(" "));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Exit status 2 (the request was wrong), one `wirerate:` line naming `needle`, no panic.
#[track_caller]
fn refused(o: &Output, needle: &str) {
    let e = stderr(o);
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains(needle), "expected `{needle}` in: {e}");
    assert!(!e.contains("panicked"), "{e}");
}

fn namespaces_of(lab: &str) -> Vec<String> {
    let o = Command::new("ip").args(["netns", "list"]).output().unwrap();
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("wr-{lab}-")))
        .map(str::to_string)
        .collect()
}

fn mkfifo(p: &Path) {
    let st = Command::new("mkfifo").arg(p).status().unwrap();
    assert!(st.success());
}

/// Row 14: a plan or streams file that is a FIFO is refused at once (it hung on open).
#[test]
fn fifo_plan_and_streams_files_are_refused() {
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("plan.toml");
    mkfifo(&fifo);
    let f = fifo.to_str().unwrap();
    refused(&wr(&["plan", "check", f]), "is a FIFO, not a regular file");
    refused(&wr(&["run", f]), "is a FIFO, not a regular file");
    refused(
        &wr(&["trial", "--port-a", "x", "--port-b", "y", "--streams", f]),
        "is a FIFO, not a regular file",
    );
    refused(&wr(&["plan", "check", "/dev/zero"]), "a device");
}

/// Row 14, for outputs: a FIFO or device given as `craft -o`, `calibrate --out` or
/// `run --out` is refused before anything is built, measured or written. `craft -o FIFO`
/// hung; `calibrate --out /dev/null` replaced the host's /dev/null with a regular file (its
/// write-then-rename); `run --out FIFO` failed late with a bare "File exists". Devices are
/// made in a temporary directory (as root), never the host's own.
#[test]
fn fifo_or_device_outputs_are_refused_untouched() {
    use std::os::unix::fs::FileTypeExt;
    let d = tempfile::tempdir().unwrap();
    let fifo = d.path().join("out");
    mkfifo(&fifo);
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plans/lab-demo.toml");
    let mut outputs = vec![fifo.clone()];
    if is_root() {
        let null = d.path().join("null");
        let st = Command::new("mknod")
            .args([null.to_str().unwrap(), "c", "1", "3"])
            .status()
            .unwrap();
        assert!(st.success());
        outputs.push(null);
    } else {
        println!("SKIP (part): a device node needs root; the FIFO is checked");
    }
    for out in &outputs {
        let o = out.to_str().unwrap();
        let what = if out == &fifo { "a FIFO" } else { "a device" };
        refused(&wr(&["craft", "-o", o]), what);
        refused(
            &wr(&["calibrate", "--lab", "hos14", "--out", o, "--sizes", "64"]),
            what,
        );
        refused(
            &wr(&["run", plan.to_str().unwrap(), "--out", o]),
            &format!("is {what}, not a directory"),
        );
    }
    assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    if let Some(null) = outputs.get(1) {
        assert!(std::fs::metadata(null)
            .unwrap()
            .file_type()
            .is_char_device());
    }
    assert!(namespaces_of("hos14").is_empty());
}

/// Row 8: calibrate with no usable size (`--sizes 64 --ip 6`, `--sizes 0`) is an error before
/// a lab is built, and the stored calibration stays as it was (it "saved" an empty one over
/// it, exit 0). Needs no root: nothing reaches the network.
#[test]
fn calibrate_with_no_usable_size_keeps_the_stored_calibration() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("cal.json");
    std::fs::write(&out, "{\"kept\": true}\n").unwrap();
    for sizes in [&["--sizes", "64", "--ip", "6"][..], &["--sizes", "0"]] {
        let args = [
            &["calibrate", "--lab", "hos8", "--out", out.to_str().unwrap()][..],
            sizes,
        ]
        .concat();
        refused(&wr(&args), "no frame size fits the IP versions asked for");
        assert_eq!(
            std::fs::read_to_string(&out).unwrap(),
            "{\"kept\": true}\n",
            "{sizes:?}"
        );
    }
    assert!(namespaces_of("hos8").is_empty());
}

/// Rows 4 and 7: frames the lab cannot carry and durations past a day, in a plan.
#[test]
fn plan_bounds_are_refused_by_plan_check() {
    let d = tempfile::tempdir().unwrap();
    let demo = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plans/lab-demo.toml"),
    )
    .unwrap();
    let big = d.path().join("big.toml");
    std::fs::write(&big, demo.replacen("[64, 512, 1518]", "[64, 512, 1600]", 1)).unwrap();
    refused(
        &wr(&["plan", "check", big.to_str().unwrap()]),
        "1600 B does not fit the lab's links",
    );
    let long = d.path().join("long.toml");
    std::fs::write(
        &long,
        demo.replace(
            "trial-duration = \"0.5s\"",
            "trial-duration = \"99999999999h\"",
        ),
    )
    .unwrap();
    refused(
        &wr(&["plan", "check", long.to_str().unwrap()]),
        "longer than a day",
    );
}

/// Rows 3 and 6, and the small bounds: on a lab, a frame above the MTU is refused on every
/// backend before anything is sent (the TX ring spun at 100 % CPU, XDP sent 0 and exited 0);
/// a rate that would wait for ages and counts of 0 are refused.
#[test]
fn trial_bounds_and_oversize_frames_are_refused() {
    if !is_root() {
        println!("SKIP: needs root (network namespaces)");
        return;
    }
    let lab = "hos3";
    let up = wr(&["lab", "up", "--name", lab]);
    assert!(up.status.success(), "{}", stderr(&up));
    let trial = |extra: &[&str]| wr(&[&["trial", "--lab", lab], extra].concat());
    for backend in [
        &["--backend", "af_packet"][..],
        &["--backend", "af_packet", "--tx-method", "sendmmsg"],
        &["--backend", "xdp"],
        &["--backend", "auto"],
    ] {
        let o = trial(&[&["--size", "1600", "--frames", "10"], backend].concat());
        let e = stderr(&o);
        assert!(!o.status.success(), "{backend:?}: {e}");
        assert!(
            e.contains("a 1600 B frame (with FCS) does not fit port a (wr-a): its MTU 1500 carries frames of at most 1518 B"),
            "{backend:?}: {e}"
        );
    }
    refused(
        &trial(&["--rate", "1e-300pps", "--frames", "2"]),
        "less than one frame a day",
    );
    refused(
        &trial(&["--rate", "1pps", "--frames", "100000000"]),
        "more than a day",
    );
    // A paced rate no link carries never slipped, so the stream never ended; a huge burst
    // sent for minutes in a 1 s trial.
    refused(
        &trial(&["--rate", "1e30pps", "--duration", "1"]),
        "more than any Ethernet link carries",
    );
    refused(
        &trial(&["--burst", "100000000", "--duration", "1"]),
        "a burst of 100000000 frames",
    );
    refused(&trial(&["--frames", "0"]), "at least 1 frame");
    refused(&trial(&["--burst", "0"]), "burst 0: give at least 1");
    refused(&trial(&["--src-ips", "0"]), "src-ips 0: give at least 1");
    // The largest frame that fits still goes through, every frame counted.
    let ok = trial(&["--size", "1518", "--frames", "100", "--rate", "10kpps"]);
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert!(
        String::from_utf8_lossy(&ok.stdout).contains("sent 100 received 100 lost 0"),
        "{}",
        String::from_utf8_lossy(&ok.stdout)
    );
    let down = wr(&["lab", "down", "--name", lab]);
    assert!(down.status.success());
}

/// `bench rx --against xdp-bench` compares XDP receivers behind the XDP sender: asked of the
/// other receivers, sources or poll modes, it is refused before anything is set up (no root
/// needed), and so is `--xdp-bench-op` without it.
#[test]
fn bench_rx_against_xdp_bench_refuses_what_it_cannot_compare() {
    let rx = |extra: &[&str]| wr(&[&["bench", "rx", "-n", "1000"], extra].concat());
    // The XDP receiver behind the XDP sender, and more.
    let xdp = |extra: &[&str]| rx(&[&["--backend", "xdp", "--source", "xdp"], extra].concat());
    refused(
        &rx(&["--against", "xdp-bench"]),
        "compares XDP receivers behind the XDP sender: add --backend xdp --source xdp",
    );
    refused(
        &rx(&["--backend", "xdp", "--against", "xdp-bench"]),
        "add --backend xdp --source xdp",
    );
    refused(
        &xdp(&["--rx-napi", "softirq", "--against", "xdp-bench"]),
        "drop --rx-napi softirq",
    );
    refused(
        &xdp(&["--xdp-bench-op", "parse-ip"]),
        "it needs --against xdp-bench",
    );
    refused(
        &xdp(&["--rounds", "2"]),
        "--rounds alternates our receiver with xdp-bench",
    );
    refused(
        &xdp(&["--against", "xdp-bench", "--xdp-bench-op", "swap"]),
        "no-touch, read-data, parse-ip",
    );
}

/// Row 5: calibrate with a size the link cannot carry is an error before anything is measured, and SIGTERM in the middle
/// of a calibration removes its lab (it died with its namespaces left behind).
#[test]
fn calibrate_refuses_and_cleans_up_after_sigterm() {
    if !is_root() {
        println!("SKIP: needs root (network namespaces)");
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("cal.json");
    let lab = "hos5";
    let o = wr(&[
        "calibrate",
        "--lab",
        lab,
        "--sizes",
        "64,9018",
        "--out",
        out.to_str().unwrap(),
    ]);
    // Refused before the lab is built and the 64 B trials are measured (they were, first).
    refused(&o, "9018 B does not fit the lab's links");
    assert!(
        o.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert!(!out.exists(), "nothing is saved");
    assert!(namespaces_of(lab).is_empty(), "{:?}", namespaces_of(lab));
    let child = Command::new(BIN)
        .args([
            "calibrate",
            "--lab",
            lab,
            "--sizes",
            "64,512,1518",
            "--duration",
            "2",
            "--out",
            out.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while namespaces_of(lab).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the calibration lab never came up"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(800));
    let st = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(st.success());
    let o = child.wait_with_output().unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("interrupted"), "{}", stderr(&o));
    assert!(
        namespaces_of(lab).is_empty(),
        "left behind: {:?}",
        namespaces_of(lab)
    );
    assert!(!out.exists(), "an interrupted calibration saves nothing");
}

/// `plan new` (issue 33) with ports it cannot use: a name that could become an option or a
/// path, an interface that does not exist, one without an address to send from. Each is a
/// clear error with exit status 2, and nothing is written.
#[test]
fn plan_new_refuses_ports_it_cannot_use() {
    refused(
        &wr(&["plan", "new", "router", "--a=-x", "--b", "lo"]),
        "`-x` is not an interface name",
    );
    refused(
        &wr(&["plan", "new", "router", "--a", "a/b", "--b", "lo"]),
        "`a/b` is not an interface name",
    );
    refused(
        &wr(&["plan", "new", "router", "--a", "lo@../x", "--b", "lo"]),
        "`../x` is not a network namespace name",
    );
    refused(
        &wr(&[
            "plan",
            "new",
            "router",
            "--a",
            "wr-nosuch0",
            "--b",
            "lo",
            "--speed",
            "1G",
        ]),
        "port a: interface wr-nosuch0",
    );
    // The loopback has no global address: nothing to send test frames from.
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("plan.toml");
    refused(
        &wr(&[
            "plan",
            "new",
            "router",
            "--a",
            "lo",
            "--b",
            "lo",
            "--speed",
            "1G",
            "-o",
            out.to_str().unwrap(),
        ]),
        "port a (lo) needs an address and a next hop",
    );
    assert!(!out.exists(), "a plan was written");
}
