//! Plan parsing and expansion tests, on the shipped lab-demo plan and variations of it.

use super::*;
use crate::hooks::Exec;
use crate::search;
use core::time::Duration;

pub(super) fn demo() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/lab-demo.toml"
    ))
    .unwrap()
}

/// 1-based line of the first line containing `needle`.
pub(super) fn line_of(text: &str, needle: &str) -> usize {
    text.lines().position(|l| l.contains(needle)).unwrap() + 1
}

pub(super) fn errors(text: &str) -> Vec<PlanError> {
    match Plan::parse(text, "plan.toml") {
        Ok(_) => panic!("plan accepted:\n{text}"),
        Err(e) => {
            println!("{e}");
            e.0
        }
    }
}

#[test]
fn lab_demo_expands_to_the_forwarding_matrix() {
    let plan = Plan::parse(&demo(), "lab-demo.toml").unwrap();
    assert_eq!(plan.name, "lab-demo");
    let names: Vec<&str> = plan.dut.profiles.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "forward",
            "filter-stateful-1",
            "filter-stateful-100",
            "filter-stateful-10000",
            "filter-stateless-100",
            "napt"
        ]
    );
    assert_eq!(
        plan.dut.exec,
        Exec::Netns {
            name: "wr-demo-dut".into()
        }
    );
    let cases = plan.cases().unwrap();
    // 6 profiles × (UDP: 2 IP × 3 sizes + TCP: 2 IP × 3 session counts).
    assert_eq!(cases.len(), 72);
    let ids: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), 72, "ids are unique");
    assert_eq!(cases[0].id, "forward/udp4/64B");
    assert!(ids.contains("napt/tcp6/s4"));
    assert!(ids.contains("filter-stateful-10000/udp6/82B"));
    // Grouped by profile, so each profile's setup runs once.
    let mut switches = 1;
    for w in cases.windows(2) {
        switches += usize::from(w[0].dims.profile != w[1].dims.profile);
    }
    assert_eq!(switches, 6);
    let udp = cases
        .iter()
        .find(|c| c.dims.protocol == Protocol::Udp)
        .unwrap();
    assert_eq!(udp.methodologies, [Methodology::Rfc2544Throughput]);
    let tcp = cases
        .iter()
        .find(|c| c.dims.protocol == Protocol::Tcp)
        .unwrap();
    assert_eq!(tcp.methodologies, [Methodology::Iperf3]);

    let e = plan.estimate().unwrap();
    println!(
        "lab-demo: {} cases, {} trials, {} profile switches, estimated {:.0} s",
        e.cases, e.trials, e.profile_switches, e.seconds
    );
    assert_eq!(e.cases, 72);
    assert_eq!(e.profile_switches, 6);
    assert!(e.seconds < 600.0, "the demo must fit in ten minutes: {e:?}");
}

#[test]
fn case_ids_do_not_depend_on_block_order() {
    let text = demo();
    let a = Plan::parse(&text, "a").unwrap().cases().unwrap();
    // Move the TCP block first.
    let tcp_at = text.find("[[matrix]]\nname = \"tcp\"").unwrap();
    let first_at = text.find("[[matrix]]").unwrap();
    let reordered = format!(
        "{}{}\n{}",
        &text[..first_at],
        &text[tcp_at..],
        &text[first_at..tcp_at]
    );
    let b = Plan::parse(&reordered, "b").unwrap().cases().unwrap();
    let set = |c: &[Case]| {
        c.iter()
            .map(|c| c.id.clone())
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert_eq!(set(&a), set(&b));
}

#[test]
fn typo_in_a_key_names_line_key_and_suggestion() {
    let text = demo().replace("trial-duration = \"1s\"", "trial-duraton = \"1s\"");
    let errs = errors(&text);
    assert_eq!(errs.len(), 1);
    let e = &errs[0];
    assert_eq!(e.file, "plan.toml");
    assert_eq!(e.line, line_of(&text, "trial-duraton"));
    assert_eq!(e.column, 1);
    assert_eq!(e.key, "run.trial-duraton");
    assert_eq!(e.hint.as_deref(), Some("did you mean `trial-duration`?"));
    assert_eq!(
        e.to_string(),
        format!(
            "plan.toml:{}:1: `run.trial-duraton`: unknown key (did you mean `trial-duration`?)",
            e.line
        )
    );
}

#[test]
fn missing_hook_command_is_reported_at_the_hook() {
    let text = demo().replace(
        "stats-after = [{ command = \"nft list ruleset\", parse = \"nft\" }]",
        "stats-after = [{ parse = \"nft\" }]",
    );
    let errs = errors(&text);
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].key,
        "dut.profiles.filter-stateful-100.stats-after[0].command"
    );
    assert_eq!(errs[0].message, "missing key");
    assert_eq!(errs[0].line, line_of(&text, "stats-after = [{ parse"));
    // An empty command is no command either.
    let text = demo().replace("command = \"nft list ruleset\"", "command = \"  \"");
    let errs = errors(&text);
    assert_eq!(
        errs[0].key,
        "dut.profiles.filter-stateful-100.stats-after[0].command"
    );
    assert_eq!(errs[0].message, "must not be empty");
}

/// A parser where its output is never read (issue 33: `cat /proc/stat` as a sampler ran, ended
/// at once, and the CPU column stayed empty without a word) is refused at its `parse` key,
/// naming the stages it fits.
#[test]
fn a_parser_in_a_stage_it_cannot_read_names_the_stage_that_fits() {
    let text = demo().replace(
        "stats-after = [{ command = \"nft list ruleset\", parse = \"nft\" }]",
        "samplers = [{ command = \"cat /proc/stat\", parse = \"proc-stat\" }]",
    );
    let errs = errors(&text);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(
        errs[0].key,
        "dut.profiles.filter-stateful-100.samplers[0].parse"
    );
    assert_eq!(
        errs[0].line,
        line_of(&text, "samplers = [{ command = \"cat")
    );
    assert!(
        errs[0]
            .message
            .contains("it fits `stats-before` and `stats-after`, not `samplers`"),
        "{}",
        errs[0].message
    );
    // A stream parser once, to completion: refused the other way round.
    let text = demo().replace("parse = \"nft\"", "parse = \"power\"");
    let errs = errors(&text);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(
        errs[0].key,
        "dut.profiles.filter-stateful-100.stats-after[0].parse"
    );
    assert!(
        errs[0]
            .message
            .contains("it fits `samplers`, not `stats-after`"),
        "{}",
        errs[0].message
    );
    // Where they fit, they parse.
    let text = demo().replace(
        "stats-after = [{ command = \"nft list ruleset\", parse = \"nft\" }]",
        "samplers = [{ command = \"vmstat 1\", parse = \"vmstat\" }]\nstats-before = [{ command = \"cat /proc/stat\", parse = \"proc-stat\" }]",
    );
    assert!(Plan::parse(&text, "plan.toml").is_ok());
}

#[test]
fn wrong_type_names_expected_and_found() {
    let text = demo().replace("repetitions = 1", "repetitions = \"two\"");
    let errs = errors(&text);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].key, "run.repetitions");
    assert_eq!(errs[0].message, "expected an integer, found a string");
    assert_eq!(errs[0].line, line_of(&text, "repetitions = \"two\""));
    assert_eq!(errs[0].column, 15, "points at the value");
}

#[test]
fn several_errors_are_reported_together() {
    let text = demo()
        .replace("repetitions = 1", "repetitions = 0")
        .replace("resolution = 0.02", "resolutoin = 0.02")
        .replace(
            "frame-size = [64, 512, 1518]",
            "frame-size = [64, 512, 1518, 9999]",
        );
    let errs = errors(&text);
    let keys: Vec<&str> = errs.iter().map(|e| e.key.as_str()).collect();
    assert!(keys.contains(&"run.repetitions"), "{keys:?}");
    assert!(
        keys.contains(&"methodology.rfc2544-throughput.resolutoin"),
        "{keys:?}"
    );
    assert!(keys.contains(&"matrix[0].frame-size[3]"), "{keys:?}");
}

/// A frame size is checked once, where the frame-size row stores it: out of range (zero,
/// negative, above a jumbo frame, beyond 64 bits) the text of every integer key, too small for
/// the block's IP version the template's; each at the item's line and key.
#[test]
fn frame_size_errors_name_the_item_with_one_text_each() {
    let range = "must be between 1 and 9018";
    let too_small = "frame size 20 B is too small for ipv4 UDP plus the 16-byte signature; the smallest that works is 64 B";
    for (size, message) in [
        ("0", range),
        ("-64", range),
        ("9019", range),
        ("99999999999999999999", range),
        ("20", too_small),
    ] {
        let text = demo().replace(
            "frame-size = [64, 512, 1518]",
            &format!("frame-size = [64, {size}, 1518]"),
        );
        let errs = errors(&text);
        assert_eq!(errs.len(), 1, "{size}: {errs:?}");
        assert_eq!(errs[0].key, "matrix[0].frame-size[1]", "{size}");
        assert_eq!(errs[0].message, message, "{size}");
        assert_eq!(errs[0].line, line_of(&text, "frame-size = [64, "), "{size}");
        assert_eq!(errs[0].file, "plan.toml");
    }
}

#[test]
fn syntax_error_has_a_line() {
    let text = demo().replace("name = \"demo\"", "name = \"demo");
    let errs = errors(&text);
    assert_eq!(errs[0].line, line_of(&text, "name = \"demo"));
    assert!(
        errs[0].message.starts_with("TOML syntax"),
        "{}",
        errs[0].message
    );
}

#[test]
fn unknown_profile_and_methodology_get_suggestions() {
    let text = demo()
        .replace(
            "ip = [4, 6]\nsessions",
            "ip = [4, 6]\nprofile = [\"naptt\"]\nsessions",
        )
        .replace(
            "methodologies = [\"iperf3\"]",
            "methodologies = [\"iperf\"]",
        );
    let errs = errors(&text);
    let hints: Vec<_> = errs.iter().filter_map(|e| e.hint.as_deref()).collect();
    assert!(hints.contains(&"did you mean `napt`?"), "{errs:?}");
    assert!(hints.contains(&"did you mean `iperf3`?"), "{errs:?}");
}

#[test]
fn protocol_specific_rules() {
    // TCP cannot run the engine's UDP methodologies.
    let text = demo().replace(
        "methodologies = [\"iperf3\"]",
        "methodologies = [\"rfc2544-throughput\"]",
    );
    assert!(errors(&text)[0]
        .message
        .contains("TCP cases run with iperf3"));
    // 64 B cannot carry IPv6 + UDP + signature.
    let text = demo().replace(
        "frame-size = [82, 512, 1518]",
        "frame-size = [64, 512, 1518]",
    );
    let e = &errors(&text)[0];
    assert!(e.message.contains("the smallest that works is 82 B"), "{e}");
    // Latency needs a throughput search in the same case.
    let text = demo().replace(
        "frame-size = [64, 512, 1518]\nmethodologies = [\"rfc2544-throughput\"]",
        "frame-size = [64, 512, 1518]\nmethodologies = [\"rfc2544-latency\"]",
    );
    assert!(errors(&text)[0]
        .message
        .contains("needs rfc2544-throughput or multi-goal"));
}

#[test]
fn duplicate_cases_across_blocks_are_an_error() {
    let text = format!(
        "{}\n[[matrix]]\nprotocol = [\"udp\"]\nframe-size = [512]\nprofile = [\"napt\"]\nmethodologies = [\"multi-goal\"]\n",
        demo()
    );
    let errs = errors(&text);
    assert!(
        errs[0]
            .message
            .contains("case `napt/udp4/512B` is also produced"),
        "{}",
        errs[0]
    );
    assert_eq!(errs[0].file, "plan.toml");
}

pub(super) const DEVICE_PLAN: &str = r#"
name = "cpe"
[topology]
kind = "interfaces"
[ports.lan]
interface = "enp1s0"
ipv4 = "192.168.1.100"
gateway-v4 = "192.168.1.1"
speed = "1G"
[ports.wan]
interface = "enp2s0"
namespace = "wr-wan"
ipv4 = "203.0.113.2"
speed = "1G"
[dut]
kind = "device"
ssh = "root@192.0.2.1"
ssh-port = 2222
[dut.profiles.pf-on]
setup = ["pfctl -f /etc/pf.conf && pfctl -e", "sysctl net.inet.ip.fastforwarding=$WR_FASTPATH"]
teardown = ["pfctl -d"]
stats-before = ["pfctl -si", { command = "netstat -s" }]
stats-after = ["pfctl -si"]
samplers = [{ command = "vmstat 1", parse = "vmstat" }]
[run]
trial-duration = "30s"
[[matrix]]
protocol = ["tcp", "udp"]
ip = [4]
frame-size = [64]
sessions = [1, 4]
mss = [1414, 800]
methodologies = ["multi-goal", "rfc2544-latency", "iperf3"]
[matrix.vars]
fastpath = [0, 1]
"#;

#[test]
fn device_plan_with_ssh_hooks_and_user_dimensions() {
    let plan = Plan::parse(DEVICE_PLAN, "cpe.toml").unwrap();
    assert_eq!(
        plan.dut.exec,
        Exec::Ssh {
            host: "root@192.0.2.1".into(),
            port: Some(2222)
        }
    );
    assert_eq!(plan.ports.len(), 2);
    assert_eq!(plan.ports[1].namespace.as_deref(), Some("wr-wan"));
    let hooks = &plan.dut.profiles[0].hooks;
    assert_eq!(hooks.setup.len(), 2);
    assert_eq!(hooks.stats_before[1].command, "netstat -s");
    assert_eq!(hooks.samplers[0].parse, Some(crate::hooks::Parser::Vmstat));
    let cases = plan.cases().unwrap();
    // TCP: 2 sessions × 2 MSS × 2 fastpath; UDP: 1 size × 2 fastpath.
    assert_eq!(cases.len(), 10);
    let tcp = cases
        .iter()
        .find(|c| c.id == "pf-on/tcp4/s4/mss800/fastpath=1")
        .unwrap();
    assert_eq!(
        tcp.methodologies,
        [Methodology::Iperf3],
        "engine methodologies are UDP-only"
    );
    let env = tcp.env();
    assert!(env.contains(&("WR_FASTPATH".into(), "1".into())));
    assert!(env.contains(&("WR_MSS".into(), "800".into())));
    assert!(env.contains(&("WR_CASE".into(), tcp.id.clone())));
    let udp = cases
        .iter()
        .find(|c| c.id == "pf-on/udp4/64B/fastpath=0")
        .unwrap();
    assert_eq!(
        udp.methodologies,
        [
            Methodology::MultiGoal,
            Methodology::Rfc2544Latency,
            Methodology::Iperf3
        ]
    );
    assert!(plan.search(udp, Methodology::MultiGoal).is_some());
    assert!(plan.search(udp, Methodology::Iperf3).is_none());
}

#[test]
fn real_interfaces_need_ports_with_speeds() {
    let text = DEVICE_PLAN.replace("speed = \"1G\"\n[ports.wan]", "[ports.wan]");
    let errs = errors(&text);
    assert_eq!(errs[0].key, "ports.lan.speed");
    let text = DEVICE_PLAN.replace("ssh-port = 2222", "ssh-port = 2222\nnetns = \"x\"");
    assert!(errors(&text)[0].message.contains("either `ssh` or `netns`"));
}

#[test]
fn run_backend_defaults_to_auto_and_a_bad_value_names_line_and_choices() {
    let plan = Plan::parse(&demo(), "lab-demo.toml").unwrap();
    assert_eq!(plan.run.backend, TxBackend::Auto);
    let xdp = demo().replace("[run]\n", "[run]\nbackend = \"af_packet\"\n");
    assert_eq!(
        Plan::parse(&xdp, "p").unwrap().run.backend,
        TxBackend::AfPacket
    );
    let bad = demo().replace("[run]\n", "[run]\nbackend = \"xpd\"\n");
    let errs = errors(&bad);
    assert_eq!(errs.len(), 1, "{errs:?}");
    let e = &errs[0];
    assert_eq!(e.key, "run.backend");
    assert_eq!(e.line, line_of(&bad, "backend = \"xpd\""));
    assert_eq!(e.hint.as_deref(), Some("did you mean `xdp`?"));
}

/// `run.tx-threads` / `run.rx-threads`: `wirerate trial`'s `--tx-threads` / `--rx-threads` for
/// a plan's UDP trials; 1 by default, 1..=16, a bad value named at its line.
#[test]
fn run_threads_default_to_one_and_out_of_range_is_refused_at_its_line() {
    let plan = Plan::parse(&demo(), "lab-demo.toml").unwrap();
    assert_eq!((plan.run.tx_threads, plan.run.rx_threads), (1, 1));
    let two = demo().replace("[run]\n", "[run]\ntx-threads = 2\nrx-threads = 3\n");
    let run = Plan::parse(&two, "p").unwrap().run;
    assert_eq!((run.tx_threads, run.rx_threads), (2, 3));
    for bad in ["tx-threads = 0", "rx-threads = 17", "tx-threads = \"2\""] {
        let text = demo().replace("[run]\n", &format!("[run]\n{bad}\n"));
        let errs = errors(&text);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].line, line_of(&text, bad), "{bad}");
        assert!(errs[0].key.starts_with("run.") && errs[0].key.ends_with("-threads"));
    }
}

/// Issue 19 rows 13 and 15: a string handed to ssh or `ip` can never become an option, and a
/// lab profile the lab does not know is refused at its line by `plan check`, not by the run.
#[test]
fn names_handed_to_programs_cannot_be_options() {
    let bad = DEVICE_PLAN.replace("root@192.0.2.1", "-oProxyCommand=touch /tmp/x");
    let errs = errors(&bad);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "dut.ssh");
    assert_eq!(errs[0].line, line_of(&bad, "-oProxyCommand"));
    assert!(errs[0].message.contains("not an ssh destination"));
    for host in ["root@-x", "a;b", "a b", "$(id)"] {
        let errs = errors(&DEVICE_PLAN.replace("root@192.0.2.1", host));
        assert_eq!(errs[0].key, "dut.ssh", "{host}");
    }
    for host in [
        "router",
        "root@192.0.2.1",
        "root@[2001:db8::1]",
        "2001:db8::1",
        "a.b-c_d",
    ] {
        let ok = DEVICE_PLAN.replace("root@192.0.2.1", host);
        assert!(Plan::parse(&ok, "p").is_ok(), "{host} refused");
    }
    let errs = errors(&DEVICE_PLAN.replace("\"wr-wan\"", "\"-all\""));
    assert_eq!(errs[0].key, "ports.wan.namespace");
    let errs = errors(&DEVICE_PLAN.replace("\"enp2s0\"", "\"-enp2s0\""));
    assert_eq!(errs[0].key, "ports.wan.interface");
}

#[test]
fn lab_profiles_are_checked_where_they_are_written() {
    for (profile, why) in [
        ("filter-stateful-99999999999", "at most"),
        ("mss-clamp-0", "at least 1"),
        ("forwrd", "unknown"),
    ] {
        let bad = demo().replace("[dut.profiles.napt]", &format!("[dut.profiles.{profile}]"));
        let errs = errors(&bad);
        assert_eq!(errs.len(), 1, "{errs:?}");
        assert_eq!(errs[0].key, format!("dut.profiles.{profile}"));
        assert_eq!(
            errs[0].line,
            line_of(&bad, &format!("[dut.profiles.{profile}]"))
        );
        assert!(
            errs[0].message.to_lowercase().contains(why),
            "{}",
            errs[0].message
        );
    }
    let named = demo().replace(
        "[dut.profiles.napt]",
        "[dut.profiles.mine]\nlab = \"mss-clamp-0\"",
    );
    let errs = errors(&named);
    assert_eq!(errs[0].key, "dut.profiles.mine.lab");
}

/// Issue 19 rows 4 and 7: frames the lab's links cannot carry and durations past a day are
/// refused by `plan check`, in either spelling.
#[test]
fn lab_frames_and_durations_have_bounds() {
    let big = demo().replacen(
        "frame-size = [64, 512, 1518]",
        "frame-size = [64, 512, 1522]",
        1,
    );
    let errs = errors(&big);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "matrix[0].frame-size");
    assert!(
        errs[0].message.contains("at most 1518 B"),
        "{}",
        errs[0].message
    );
    for long in ["\"99999999999h\"", "\"25h\"", "86401"] {
        let bad = demo().replace(
            "trial-duration = \"1s\"",
            &format!("trial-duration = {long}"),
        );
        let errs = errors(&bad);
        assert_eq!(errs[0].key, "run.trial-duration", "{long}");
        assert_eq!(errs[0].line, line_of(&bad, "trial-duration ="));
    }
    let day = demo().replace("trial-duration = \"1s\"", "trial-duration = \"24h\"");
    assert!(Plan::parse(&day, "p").is_ok());
}

#[test]
fn locate_finds_keys_as_errors_spell_them() {
    let text = demo();
    assert_eq!(
        locate(&text, "dut.profiles.filter-stateful-100.stats-after[0]"),
        Some((line_of(&text, "stats-after = [{ command = \"nft"), 16))
    );
    assert_eq!(
        locate(&text, "run.trial-duration").map(|x| x.0),
        Some(line_of(&text, "trial-duration"))
    );
    assert_eq!(locate(&text, "dut.profiles.nosuch"), None);
    assert_eq!(locate(&text, "matrix[9].name"), None);
    assert_eq!(locate("not = [toml", "a"), None);
}

#[test]
fn duplicate_keys_are_named() {
    let twice = demo().replace("[run]\n", "[run]\nrepetitions = 3\nrepetitions = 2\n");
    let errs = errors(&twice);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "repetitions");
    assert!(
        errs[0].message.contains("duplicate key `repetitions`"),
        "{}",
        errs[0].message
    );
    assert_eq!(errs[0].line, line_of(&twice, "repetitions = 2"));
    let table = demo().replace("[dut.profiles.napt]", "[dut.profiles.forward]");
    let errs = errors(&table);
    assert!(
        errs[0].message.contains("duplicate key `forward`"),
        "{}",
        errs[0].message
    );
}

/// The demo plan with a `[methodology.multi-goal]` table holding `body`.
fn with_multi_goal(body: &str) -> String {
    demo().replace(
        "[methodology.iperf3]",
        &format!("[methodology.multi-goal]\n{body}\n\n[methodology.iperf3]"),
    )
}

#[test]
fn multi_goal_settings_per_goal_and_by_name() {
    let text = with_multi_goal(
        r#"goals = [0.0, "rfc2544", { loss-ratio = 0.005, exceed-ratio = 0.5, duration-sum = "3s", width = 0.01 }]
exceed-ratio = 0.0
search-time-cap = "10m""#,
    );
    let plan = Plan::parse(&text, "plan.toml").unwrap();
    let m = &plan.methodology;
    let goals: Vec<search::Goal> = m.goals.iter().map(|g| g.resolve(m, &plan.run)).collect();
    // Plain ratio: the methodology's settings, final = run.trial-duration (1 s in the demo).
    assert_eq!(
        goals[0],
        search::Goal::new(0.0, 0.005, Duration::from_secs(1), Duration::from_secs(1))
    );
    // By name: RFC 2544 (one loss-free 60 s trial).
    assert_eq!((goals[1].loss_ratio, goals[1].exceed_ratio), (0.0, 0.0));
    assert_eq!(goals[1].final_duration, Duration::from_secs(60));
    assert_eq!(goals[1].duration_sum, Duration::from_secs(60));
    // A table: its own exceed ratio, sum and width over the defaults.
    assert_eq!(goals[2].exceed_ratio, 0.5);
    assert_eq!(goals[2].duration_sum, Duration::from_secs(3));
    assert_eq!(goals[2].width, 0.01);
    assert_eq!(m.search_time_cap, Some(Duration::from_secs(600)));
    // The settings survive run.json, and older run files with bare ratios still read.
    let j = serde_json::to_string(m).unwrap();
    let back: MethodologySettings = serde_json::from_str(&j).unwrap();
    assert_eq!(&back, m);
    let old = j.replace(&serde_json::to_string(&m.goals).unwrap(), "[0.0,0.005]");
    let old: MethodologySettings = serde_json::from_str(&old).unwrap();
    assert_eq!(
        old.goals,
        [GoalSetting::ratio(0.0), GoalSetting::ratio(0.005)]
    );
}

#[test]
fn multi_goal_errors_name_file_line_and_goal() {
    let text = with_multi_goal(r#"goals = [0.0, "rfc2545"]"#);
    let errs = errors(&text);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].key, "methodology.multi-goal.goals[1]");
    assert_eq!(errs[0].line, line_of(&text, "rfc2545"));
    assert_eq!(errs[0].hint.as_deref(), Some("did you mean `rfc2544`?"));

    let text = with_multi_goal(r#"goals = [{ loss-ratio = 0.0, widht = 0.01 }]"#);
    let errs = errors(&text);
    assert_eq!(errs[0].key, "methodology.multi-goal.goals[0].widht");
    assert_eq!(errs[0].message, "unknown key");

    // A duration sum below the goal's final trial duration (run.trial-duration, 1 s).
    let text = with_multi_goal(r#"goals = [0.0, { loss-ratio = 0.005, duration-sum = "500ms" }]"#);
    let errs = errors(&text);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].key, "methodology.multi-goal.goals[1]");
    assert_eq!(errs[0].line, line_of(&text, "duration-sum"));
    assert!(
        errs[0].message.contains("duration sum"),
        "{}",
        errs[0].message
    );

    let text = with_multi_goal("exceed-ratio = 1.5");
    assert_eq!(errors(&text)[0].key, "methodology.multi-goal.exceed-ratio");
    let text = with_multi_goal(r#"search-time-cap = "0s""#);
    let errs = errors(&text);
    assert_eq!(errs[0].key, "methodology.multi-goal.search-time-cap");
    assert_eq!(errs[0].line, line_of(&text, "search-time-cap"));
}

/// Issue 13: `offload` and `fastpath` are switch dimensions (`"off"`/`"on"`), in case ids
/// and hook variables; a bad value or a switch hidden in `[matrix.vars]` is refused at its
/// line and key.
#[test]
fn offload_and_fastpath_are_switch_dimensions() {
    let block = "[[matrix]]\nname = \"sw\"\nprofile = [\"forward\"]\nprotocol = [\"tcp\"]\nip = [4]\nsessions = [1]\nmss = [1414, 400]\nmethodologies = [\"iperf3\"]\n";
    let text = format!(
        "{}\n{block}offload = [\"off\", \"on\"]\nfastpath = [\"on\"]\n",
        demo()
    );
    let plan = Plan::parse(&text, "plan.toml").unwrap();
    let cases: Vec<Case> = plan
        .cases()
        .unwrap()
        .into_iter()
        .filter(|c| c.dims.offload.is_some())
        .collect();
    let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "forward/tcp4/s1/mss1414/offload=off/fastpath=on",
            "forward/tcp4/s1/mss1414/offload=on/fastpath=on",
            "forward/tcp4/s1/mss400/offload=off/fastpath=on",
            "forward/tcp4/s1/mss400/offload=on/fastpath=on",
        ]
    );
    let env = cases[1].env();
    assert!(env.contains(&("WR_OFFLOAD".into(), "on".into())), "{env:?}");
    assert!(
        env.contains(&("WR_FASTPATH".into(), "on".into())),
        "{env:?}"
    );
    assert!(env.contains(&("WR_MSS".into(), "1414".into())), "{env:?}");
    // Blocks without the keys have no such dimension.
    assert!(plan
        .cases()
        .unwrap()
        .iter()
        .any(|c| c.dims.offload.is_none() && c.dims.fastpath.is_none()));

    let bad = format!("{}\n{block}offload = [\"maybe\"]\n", demo());
    let e = &errors(&bad)[0];
    assert_eq!(e.key, "matrix[3].offload[0]", "{e}");
    assert_eq!(e.line, line_of(&bad, "\"maybe\""), "{e}");
    assert!(e.to_string().contains("expected one of: off, on"), "{e}");
    let bad = format!("{}\n{block}fastpath = true\n", demo());
    assert_eq!(errors(&bad)[0].key, "matrix[3].fastpath");
    let bad = format!("{}\n{block}[matrix.vars]\nfastpath = [\"on\"]\n", demo());
    let e = &errors(&bad)[0];
    assert!(e.message.contains("a dimension of its own"), "{e}");
    assert_eq!(e.line, line_of(&bad, "fastpath = [\"on\"]"), "{e}");
    // On the lab, a fast path that would let packets skip a stateless filter is refused at
    // the key, naming the profile; off is always fine.
    let skip = block.replace(
        "profile = [\"forward\"]",
        "profile = [\"forward\", \"filter-stateless-100\"]",
    );
    let bad = format!("{}\n{skip}fastpath = [\"off\", \"on\"]\n", demo());
    let e = &errors(&bad)[0];
    assert_eq!(e.key, "matrix[3].fastpath", "{e}");
    assert!(
        e.message.contains("filter-stateless-100") && e.message.contains("walk"),
        "{e}"
    );
    let ok = format!("{}\n{skip}fastpath = [\"off\"]\n", demo());
    assert!(Plan::parse(&ok, "plan.toml").is_ok());
    // A device keeps its own `fastpath` user dimension (DEVICE_PLAN has one) unless the block
    // also has the built-in key.
    assert!(Plan::parse(DEVICE_PLAN, "cpe.toml").is_ok());
    let both = DEVICE_PLAN.replace("[matrix.vars]", "fastpath = [\"on\"]\n[matrix.vars]");
    assert!(errors(&both)[0].message.contains("a dimension of its own"));
}

/// `forwarding-rate` (RFC 2889 §5.1) is a methodology of UDP cases: its trial count is a plan
/// key checked with file:line, and the search it builds runs every trial at the plan's
/// maximum load for the trial duration.
#[test]
fn forwarding_rate_is_planned_at_the_maximum_load() {
    let text = demo()
        .replacen(
            "methodologies = [\"rfc2544-throughput\"]",
            "methodologies = [\"rfc2544-throughput\", \"forwarding-rate\"]",
            1,
        )
        .replacen(
            "[methodology.iperf3]",
            "[methodology.forwarding-rate]\ntrials = 4\n[methodology.iperf3]",
            1,
        );
    let plan = Plan::parse(&text, "lab-demo.toml").unwrap();
    assert_eq!(plan.methodology.forwarding_rate_trials, 4);
    let case = plan
        .cases()
        .unwrap()
        .into_iter()
        .find(|c| c.methodologies.contains(&Methodology::ForwardingRate))
        .expect("a case with forwarding-rate");
    let mut s = plan.search(&case, Methodology::ForwardingRate).unwrap();
    let mut dut = crate::search::sim::SimDut::sharp(crate::search::LineFraction(0.4));
    let r = crate::search::drive(s.as_mut(), |t| {
        assert_eq!(t.load, plan.run.max_load);
        assert_eq!(t.duration, plan.run.trial_duration);
        dut.trial(t)
    });
    assert_eq!(r.trials, 4);
    // Zero trials: refused where it is written.
    let bad = text.replacen("trials = 4", "trials = 0", 1);
    let e = &errors(&bad)[0];
    assert_eq!(e.key, "methodology.forwarding-rate.trials");
    assert_eq!(e.line, line_of(&bad, "trials = 0"));
    let bad = text.replacen("trials = 4", "trails = 4", 1);
    let e = &errors(&bad)[0];
    assert_eq!(e.key, "methodology.forwarding-rate.trails");
    assert!(e.to_string().contains("did you mean `trials`"), "{e}");
}
