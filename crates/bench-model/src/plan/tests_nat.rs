//! `nat-table-capacity` and `nat-connection-rate` in plans: names, settings with file:line
//! errors, the case list and time estimate, and the refusal to run them until the runner can.

use super::*;
use core::time::Duration;

use super::tests::{demo, errors, line_of};

/// The demo plan with the UDP IPv4 block asking for both NAT methodologies, and `extra`
/// methodology tables.
fn nat_plan(extra: &str) -> String {
    let text = demo().replacen(
        "frame-size = [64, 512, 1518]\nmethodologies = [\"rfc2544-throughput\"]",
        "frame-size = [64]\nmethodologies = [\"nat-table-capacity\", \"nat-connection-rate\"]",
        1,
    );
    assert!(text.contains("nat-table-capacity"));
    text.replace(
        "[methodology.iperf3]",
        &format!("{extra}\n[methodology.iperf3]"),
    )
}

const SETTINGS: &str = r#"
[methodology.nat-table-capacity]
max-connections = 2000000
start-connections = 4096
resolution-connections = 100
preliminary-rate = 50000
validation-rate = 100000
phase-gap = "500ms"

[methodology.nat-connection-rate]
connections = 20000
min-rate = 500
max-rate = 400000
resolution = 0.02
validation-rate = 20000
phase-gap = "2s"
"#;

#[test]
fn nat_methodologies_parse_with_their_settings() {
    let plan = Plan::parse(&nat_plan(SETTINGS), "plan.toml").unwrap();
    let c = &plan.methodology.nat_table_capacity;
    assert_eq!(c.max_connections, 2_000_000);
    assert_eq!(c.start_connections, Some(4096));
    assert_eq!(c.resolution_connections, 100);
    assert_eq!(c.preliminary_rate, 50_000.0);
    assert_eq!(c.validation_rate, Some(100_000.0));
    assert_eq!(c.phase_gap, Duration::from_millis(500));
    let r = &plan.methodology.nat_connection_rate;
    assert_eq!(r.connections, 20_000);
    assert_eq!((r.min_rate, r.max_rate), (500.0, 400_000.0));
    assert_eq!(r.resolution, 0.02);
    assert_eq!(r.validation_rate, 20_000.0);
    assert_eq!(r.phase_gap, Duration::from_secs(2));
    let cases = plan.cases().unwrap();
    let nat = cases.iter().find(|c| c.id == "forward/udp4/64B").unwrap();
    assert_eq!(
        nat.methodologies,
        [
            Methodology::NatTableCapacity,
            Methodology::NatConnectionRate
        ]
    );
    assert!(plan
        .conn_search(nat, Methodology::NatTableCapacity)
        .is_some());
    assert!(plan
        .conn_search(nat, Methodology::NatConnectionRate)
        .is_some());
    assert!(plan
        .conn_search(nat, Methodology::Rfc2544Throughput)
        .is_none());
    assert!(plan.search(nat, Methodology::NatTableCapacity).is_none());
    // Run files written before these settings existed still load, with the defaults.
    let mut v = serde_json::to_value(&plan.methodology).unwrap();
    let o = v.as_object_mut().unwrap();
    assert!(o.remove("nat_table_capacity").is_some());
    assert!(o.remove("nat_connection_rate").is_some());
    let old: MethodologySettings = serde_json::from_value(v).unwrap();
    assert_eq!(old.nat_table_capacity, TableCapacitySettings::default());
    assert_eq!(old.nat_connection_rate, ConnectionRateSettings::default());
}

#[test]
fn defaults_without_tables() {
    let plan = Plan::parse(&nat_plan(""), "plan.toml").unwrap();
    let c = plan.methodology.nat_table_capacity.config(0.01);
    assert_eq!((c.start, c.max, c.resolution), (1000, 1_000_000, 1));
    assert_eq!(c.validation_rate, c.rate);
    let cases = plan.cases().unwrap();
    assert!(plan
        .conn_search(&cases[0], Methodology::NatConnectionRate)
        .is_some());
}

/// The case list's estimate counts the NAT searches' trials and seconds (driven against the
/// estimate's stateful DUT), so `plan check` shows what a run would cost.
#[test]
fn nat_cases_have_an_estimate() {
    let plan = Plan::parse(&nat_plan(SETTINGS), "plan.toml").unwrap();
    let cases = plan.cases().unwrap();
    let nat = cases.iter().find(|c| c.id == "forward/udp4/64B").unwrap();
    let (trials, seconds) = plan.case_estimate(nat);
    // Capacity: doubling from 4096 to past 1,000,000, then bisecting to 100 connections;
    // rate: bisecting 500…400,000 to 2 %.
    assert!((15..80).contains(&trials), "{trials}");
    assert!(seconds > 10.0, "{seconds}");
    let e = plan.estimate().unwrap();
    assert!(e.trials >= trials);
}

#[test]
fn nat_methodologies_run_on_the_lab_dut_and_are_refused_on_a_device() {
    // The demo plan's lab DUT: executable, nothing pending.
    let plan = Plan::parse(&nat_plan(""), "plan.toml").unwrap();
    assert!(plan.not_yet_executable().is_empty());
    // A real device: refused at the methodology's place, saying why.
    let text = super::tests::DEVICE_PLAN.replace(
        "methodologies = [\"multi-goal\", \"rfc2544-latency\", \"iperf3\"]",
        "methodologies = [\"multi-goal\", \"nat-table-capacity\", \"iperf3\"]",
    );
    let plan = Plan::parse(&text, "cpe.toml").unwrap();
    let pending = plan.not_yet_executable();
    assert_eq!(pending.len(), 1, "{pending:?}");
    let (key, msg) = &pending[0];
    assert_eq!(key, "matrix[0].methodologies[1]");
    assert!(msg.contains("lab's DUT"), "{msg}");
    let (line, _) = locate(&text, key).unwrap();
    assert_eq!(
        line,
        line_of(&text, "methodologies = [\"multi-goal\", \"nat")
    );
}

#[test]
fn table_size_and_udp_timeout_size_a_stateful_lab_profile() {
    let text = nat_plan("").replace(
        "[dut.profiles.napt]",
        "[dut.profiles.napt]\ntable-size = 4096\nudp-timeout = \"90s\"",
    );
    let plan = Plan::parse(&text, "plan.toml").unwrap();
    let p = plan.dut.profiles.iter().find(|p| p.name == "napt").unwrap();
    assert_eq!(p.table_size, Some(4096));
    assert_eq!(p.udp_timeout, Some(Duration::from_secs(90)));
    // A profile without a connection table has nothing to size.
    let bad = nat_plan("").replace(
        "[dut.profiles.forward]",
        "[dut.profiles.forward]\ntable-size = 10",
    );
    let errs = errors(&bad);
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert_eq!(errs[0].key, "dut.profiles.forward.table-size");
    assert!(
        errs[0].message.contains("keeps no connection table"),
        "{}",
        errs[0]
    );
    assert_eq!(errs[0].line, line_of(&bad, "table-size = 10"));
    let zero = nat_plan("").replace("[dut.profiles.napt]", "[dut.profiles.napt]\ntable-size = 0");
    assert_eq!(errors(&zero)[0].key, "dut.profiles.napt.table-size");
}

#[test]
fn bad_settings_name_file_line_and_key() {
    for (bad, key, needle) in [
        (
            "max-connections = 0",
            "methodology.nat-table-capacity.max-connections",
            "between 1 and",
        ),
        (
            "max-connections = 5000000000",
            "methodology.nat-table-capacity.max-connections",
            "between 1 and",
        ),
        (
            "preliminary-rate = -5",
            "methodology.nat-table-capacity.preliminary-rate",
            "between",
        ),
        (
            "phase-gap = \"soon\"",
            "methodology.nat-table-capacity.phase-gap",
            "not a duration",
        ),
        (
            "resolution-connections = 1.5",
            "methodology.nat-table-capacity.resolution-connections",
            "an integer",
        ),
    ] {
        let text = nat_plan(&format!("[methodology.nat-table-capacity]\n{bad}\n"));
        let errs = errors(&text);
        assert_eq!(errs.len(), 1, "{bad}: {errs:?}");
        assert_eq!(errs[0].key, key);
        assert_eq!(errs[0].line, line_of(&text, bad));
        assert!(errs[0].message.contains(needle), "{}", errs[0].message);
    }
}

#[test]
fn cross_checks_point_at_the_key_that_breaks_them() {
    let text = nat_plan(
        "[methodology.nat-table-capacity]\nmax-connections = 1000\nstart-connections = 5000\n",
    );
    let errs = errors(&text);
    assert_eq!(errs.len(), 1);
    assert_eq!(
        errs[0].key,
        "methodology.nat-table-capacity.start-connections"
    );
    assert_eq!(errs[0].line, line_of(&text, "start-connections = 5000"));
    assert!(errs[0].message.contains("starting connections 5000"));

    let text = nat_plan("[methodology.nat-connection-rate]\nmin-rate = 2000000\n");
    let errs = errors(&text);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].key, "methodology.nat-connection-rate.min-rate");
    assert_eq!(errs[0].line, line_of(&text, "min-rate = 2000000"));
    assert!(errs[0].message.contains("below the maximum"));

    // A small max with the default start is not an error: the start follows the max.
    let plan = Plan::parse(
        &nat_plan("[methodology.nat-table-capacity]\nmax-connections = 300\n"),
        "plan.toml",
    )
    .unwrap();
    assert_eq!(plan.methodology.nat_table_capacity.config(0.01).start, 300);
}

#[test]
fn unknown_keys_get_suggestions() {
    let text = nat_plan("[methodology.nat-connection-rate]\nmax-rates = 1000\n");
    let errs = errors(&text);
    assert_eq!(errs[0].key, "methodology.nat-connection-rate.max-rates");
    assert_eq!(errs[0].hint.as_deref(), Some("did you mean `max-rate`?"));
    let text = demo().replacen(
        "methodologies = [\"rfc2544-throughput\"]",
        "methodologies = [\"nat-table-capacty\"]",
        1,
    );
    let errs = errors(&text);
    assert!(
        errs[0]
            .hint
            .as_deref()
            .unwrap_or("")
            .contains("nat-table-capacity"),
        "{errs:?}"
    );
}

/// The demo plan with the UDP IPv4 block asking for `nat-teardown-rate` and `nat-throughput`.
fn real_plan(extra: &str) -> String {
    nat_plan(extra).replacen(
        "methodologies = [\"nat-table-capacity\", \"nat-connection-rate\"]",
        "methodologies = [\"nat-teardown-rate\", \"nat-throughput\"]",
        1,
    )
}

const REAL_SETTINGS: &str = r#"
[methodology.nat-teardown-rate]
connections = 5000
repetitions = 7
preliminary-rate = 4000
validation-rate = 8000
phase-gap = "300ms"

[methodology.nat-throughput]
connections = [1, 1000, "table"]
min-rate = 2000
max-rate = 300000
resolution = 0.02
duration = "2s"
preliminary-rate = 6000
phase-gap = "400ms"
"#;

#[test]
fn teardown_and_throughput_parse_and_resolve_table_per_case() {
    let text = real_plan(REAL_SETTINGS).replace(
        "[dut.profiles.napt]",
        "[dut.profiles.napt]\ntable-size = 6000",
    );
    let plan = Plan::parse(&text, "plan.toml").unwrap();
    let t = &plan.methodology.nat_teardown_rate;
    assert_eq!((t.connections, t.repetitions), (5000, 7));
    assert_eq!(
        (t.preliminary_rate, t.validation_rate),
        (4000.0, Some(8000.0))
    );
    assert_eq!(t.phase_gap, Duration::from_millis(300));
    let p = &plan.methodology.nat_throughput;
    assert_eq!(
        p.connections,
        [
            ConnCount::N(1),
            ConnCount::N(1000),
            ConnCount::Table(TableWord::Table)
        ]
    );
    assert_eq!(
        (p.min_rate, p.max_rate, p.resolution),
        (2000.0, 300_000.0, 0.02)
    );
    assert_eq!(p.duration, Duration::from_secs(2));
    // "table" is the case's profile's table-size; without one it cannot be resolved.
    assert_eq!(
        p.config(0.01, Some(6000)).unwrap().connections,
        [1, 1000, 6000]
    );
    assert!(p
        .config(0.01, None)
        .unwrap_err()
        .to_string()
        .contains("table-size"));
    let cases = plan.cases().unwrap();
    let napt = cases
        .iter()
        .find(|c| c.dims.profile == "napt" && c.methodologies.contains(&Methodology::NatThroughput))
        .unwrap();
    assert!(plan.conn_search(napt, Methodology::NatThroughput).is_some());
    assert!(plan
        .conn_search(napt, Methodology::NatTeardownRate)
        .is_some());
    // Estimates count their trials.
    let (trials, seconds) = plan.case_estimate(napt);
    assert!(trials >= 7 + 3, "{trials}");
    assert!(seconds > 7.0, "{seconds}");
    // Run files written before these settings existed still load, with the defaults.
    let mut v = serde_json::to_value(&plan.methodology).unwrap();
    let o = v.as_object_mut().unwrap();
    assert!(o.remove("nat_teardown_rate").is_some());
    assert!(o.remove("nat_throughput").is_some());
    let old: MethodologySettings = serde_json::from_value(v).unwrap();
    assert_eq!(old.nat_throughput, NatThroughputSettings::default());
    // And the settings round-trip through run.json.
    let back: MethodologySettings =
        serde_json::from_value(serde_json::to_value(&plan.methodology).unwrap()).unwrap();
    assert_eq!(back, plan.methodology);
}

#[test]
fn table_without_a_table_size_is_refused_at_the_key() {
    // The demo's profiles set no table-size.
    let plan = Plan::parse(&real_plan(REAL_SETTINGS), "plan.toml").unwrap();
    let pending = plan.not_yet_executable();
    assert!(!pending.is_empty());
    assert!(
        pending
            .iter()
            .all(|(k, m)| k == "methodology.nat-throughput.connections"
                && m.contains("sets no `table-size`")),
        "{pending:?}"
    );
    // Without "table" nothing is pending.
    let plan = Plan::parse(
        &real_plan(&REAL_SETTINGS.replace(", \"table\"]", "]")),
        "plan.toml",
    )
    .unwrap();
    assert!(plan.not_yet_executable().is_empty());
}

#[test]
fn bad_teardown_and_throughput_settings_name_file_line_and_key() {
    for (table, bad, key, needle) in [
        (
            "nat-teardown-rate",
            "repetitions = 0",
            "methodology.nat-teardown-rate.repetitions",
            "between 1 and 1000",
        ),
        (
            "nat-teardown-rate",
            "connections = -1",
            "methodology.nat-teardown-rate.connections",
            "between 1 and",
        ),
        (
            "nat-teardown-rate",
            "phase-gap = \"later\"",
            "methodology.nat-teardown-rate.phase-gap",
            "not a duration",
        ),
        (
            "nat-throughput",
            "connections = [1, \"tabel\"]",
            "methodology.nat-throughput.connections[1]",
            "unknown value `tabel`",
        ),
        (
            "nat-throughput",
            "connections = [0]",
            "methodology.nat-throughput.connections[0]",
            "between 1 and",
        ),
        (
            "nat-throughput",
            "connections = []",
            "methodology.nat-throughput.connections",
            "must not be empty",
        ),
        (
            "nat-throughput",
            "duration = \"0s\"",
            "methodology.nat-throughput.duration",
            "above 0",
        ),
        (
            "nat-throughput",
            "min-rate = 500000",
            "methodology.nat-throughput.min-rate",
            "below the maximum",
        ),
        (
            "nat-throughput",
            "resolution = 2",
            "methodology.nat-throughput.resolution",
            "between",
        ),
    ] {
        let text = real_plan(&format!("[methodology.{table}]\n{bad}\n"));
        let errs = errors(&text);
        assert_eq!(errs.len(), 1, "{bad}: {errs:?}");
        assert_eq!(errs[0].key, key, "{bad}");
        assert_eq!(errs[0].line, line_of(&text, bad), "{bad}");
        assert!(
            errs[0].message.contains(needle),
            "{bad}: {}",
            errs[0].message
        );
    }
    let errs = errors(&real_plan("[methodology.nat-throughput]\nmax-rates = 5\n"));
    assert_eq!(errs[0].key, "methodology.nat-throughput.max-rates");
    assert_eq!(errs[0].hint.as_deref(), Some("did you mean `max-rate`?"));
}

#[test]
fn teardown_on_a_device_is_unsupported_for_its_kind() {
    let text = super::tests::DEVICE_PLAN.replace(
        "methodologies = [\"multi-goal\", \"rfc2544-latency\", \"iperf3\"]",
        "methodologies = [\"nat-teardown-rate\", \"nat-throughput\", \"iperf3\"]",
    );
    let plan = Plan::parse(&text, "cpe.toml").unwrap();
    let pending = plan.not_yet_executable();
    let msgs: Vec<&str> = pending
        .iter()
        .filter(|(k, _)| k.starts_with("matrix[0].methodologies"))
        .map(|(_, m)| m.as_str())
        .collect();
    assert_eq!(msgs.len(), 2, "{pending:?}");
    assert!(
        msgs[0].contains("`nat-teardown-rate` is unsupported for this DUT kind"),
        "{}",
        msgs[0]
    );
    assert!(msgs[0].contains("deleting it on command and reading its entry count"));
    assert!(msgs[1].contains("`nat-throughput` is unsupported for this DUT kind"));
}
