//! `wirerate report` on the fixture run, rendered by headless Chromium: the page loads from
//! disk without errors, has its charts and axis labels, and a screenshot is saved at
//! `target/report-screenshot.png` (under the cargo target directory) for a person to look at.
//!
//! Without Chromium this prints `SKIP: …`, except in CI (`CI` set), where it fails.

use std::path::{Path, PathBuf};
use std::process::Command;

const CHROMIUM: &str = "/usr/bin/chromium";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../report/tests/fixtures")
        .join(name)
}

fn out_dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn wirerate(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_wirerate"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs Chromium headless on `html` with `extra` arguments; returns (stdout, stderr).
fn chromium(html: &Path, extra: &[String]) -> (String, String) {
    // One profile per call: parallel tests must not share Chromium's profile lock.
    static CALLS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let profile = out_dir(&format!("chromium-profile-{n}"));
    let mut cmd = Command::new("timeout");
    cmd.arg("120")
        .arg(CHROMIUM)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(format!("file://{}", html.display()));
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn console_errors(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("Uncaught")
                || l.contains(":CONSOLE")
                || l.contains("Failed to load resource")
                || l.contains("net::ERR_")
        })
        .collect()
}

#[test]
fn report_renders_in_chromium_with_its_charts_and_no_errors() {
    let dir = out_dir("report-html");
    let (ok, stdout, stderr) = wirerate(&[
        "report",
        fixture("run-demo").to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("filter-stateful-100 costs 48 % of forward's rate at 128 B, IPv4 UDP"),
        "{stdout}"
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md
        .contains("- filter-stateful-100 costs 48 % of forward's rate at 128 B, IPv4 UDP ± 1.5 %"));
    for f in [
        "report.html",
        "results.csv",
        "summary.md",
        "summary.json",
        "latency.csv",
    ] {
        assert!(dir.join(f).exists(), "{f}");
    }
    let html_path = dir.join("report.html");
    let html = std::fs::read_to_string(&html_path).unwrap();
    // Self-contained: nothing fetched, nothing executed.
    for banned in [
        "<script", "http://", "https://", "@import", "url(http", "<link",
    ] {
        assert!(!html.contains(banned), "report.html contains {banned}");
    }

    if !Path::new(CHROMIUM).exists() {
        if std::env::var_os("CI").is_some() {
            panic!("{CHROMIUM} is missing; scripts/install-deps.sh installs it");
        }
        println!("SKIP: {CHROMIUM} is missing (run scripts/install-deps.sh as root)");
        return;
    }

    // Control: the error check sees a page error when there is one.
    let bad = out_dir("report-bad").join("bad.html");
    std::fs::write(
        &bad,
        "<html><body><script>throw new Error('boom')</script></body></html>",
    )
    .unwrap();
    let (_, stderr) = chromium(&bad, &["--dump-dom".to_string()]);
    assert!(
        !console_errors(&stderr).is_empty(),
        "the console check is blind: {stderr}"
    );

    // The DOM Chromium built: every chart is an SVG with its axis labels.
    let (dom, stderr) = chromium(&html_path, &["--dump-dom".to_string()]);
    let errors = console_errors(&stderr);
    assert!(errors.is_empty(), "page errors: {errors:#?}");
    let svgs = dom.matches("<svg class=\"chart\"").count();
    // 3 families × (Mb/s, pps) + CPU for 2 IPv4 families + 2 vs-frame-size × 2 UDP families
    // + TCP vs MSS + a loss-curve chart per IPv4 frame size + a latency chart per profile.
    assert_eq!(svgs, 6 + 2 + 4 + 1 + 5 + 3, "charts in the rendered DOM");
    assert!(dom.matches("class=\"bar\"").count() > 80);
    for label in [
        "Mb/s (L2, frames with FCS)",
        "frames per second",
        "DUT CPU %",
        "% of line rate",
        "frame size, bytes",
        "MSS, bytes",
        "offered load, % of line rate",
        "one-way latency, µs",
        "theoretical max",
        "napt: latency percentiles",
        ">p99.9<",
        ">p50<",
    ] {
        assert!(
            dom.contains(label),
            "axis or legend label {label:?} missing"
        );
    }
    // Percentile lines are drawn: 4 solid series with points in each of the 3 latency charts.
    assert!(
        dom.contains("p99.9: 1.52k →"),
        "the 1518 B p99.9 point of a profile"
    );
    assert!(dom.contains(">TL<"), "the tester-limited bar is marked");
    assert!(dom.contains("id=\"results\""));

    // Issue 33 item 5: the first 1400×900 px show the headline tables, all three of the demo's,
    // above the first chart and the findings. Control: pushed down by a tall block, the same
    // check sees the table leave the screen.
    let pushed = html.replacen("<body>", "<body><div style=\"height:1200px\"></div>", 1);
    let control = first_screen(&pushed, "report-first-screen-control");
    assert!(
        control.table_bottoms[0] > control.viewport.1,
        "the check is blind: {control:?}"
    );
    let seen = first_screen(&html, "report-first-screen");
    // Headless Chromium's page is 1400 px wide and at most 900 px high (less with --dump-dom:
    // the window's own bars), so fitting it fits the 1400×900 screenshot.
    assert!(
        seen.viewport.0 == 1400.0 && seen.viewport.1 > 0.0 && seen.viewport.1 <= 900.0,
        "{seen:?}"
    );
    assert_eq!(seen.table_bottoms.len(), 3, "{seen:?}");
    assert!(seen.table_top >= 0.0, "{seen:?}");
    for bottom in &seen.table_bottoms {
        assert!(
            *bottom <= seen.viewport.1,
            "a headline table below the first screen: {seen:?}"
        );
    }
    let last = seen.table_bottoms.iter().copied().fold(0.0, f64::max);
    assert!(
        seen.chart_top > last && seen.findings_top > seen.chart_top,
        "{seen:?}"
    );

    // The screenshot, for a person to look at.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let png = target.join("report-screenshot.png");
    let _ = std::fs::remove_file(&png);
    let (_, stderr) = chromium(
        &html_path,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1280,2400".to_string(),
        ],
    );
    let errors = console_errors(&stderr);
    assert!(errors.is_empty(), "page errors: {errors:#?}");
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert_eq!(&bytes[1..4], b"PNG");
    assert!(bytes.len() > 50_000, "a blank page would be tiny");
    println!("screenshot: {}", png.display());
}

/// The WAN fixture (encapsulations per case, bidirectional sums), rendered: one family of
/// charts per encapsulation with its own theoretical curve, the bidirectional family against
/// twice the line rate, latency percentiles per encapsulation. Screenshot at
/// `target/report-wan-screenshot.png`.
#[test]
fn wan_report_has_a_chart_family_per_encapsulation_and_bidirectional_sums() {
    let dir = out_dir("report-wan");
    let (ok, _, stderr) = wirerate(&[
        "report",
        fixture("run-wan").to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    let html_path = dir.join("report.html");
    let html = std::fs::read_to_string(&html_path).unwrap();
    for fam in [
        "IPv4 UDP over vlan+ipv4",
        "IPv4 UDP over qinq+ipv4",
        "IPv4 UDP over mpls:1+ipv4",
        "IPv4 UDP, bidirectional",
    ] {
        assert!(html.contains(&format!("<h3>{fam}</h3>")), "{fam}");
    }
    if !Path::new(CHROMIUM).exists() {
        if std::env::var_os("CI").is_some() {
            panic!("{CHROMIUM} is missing; scripts/install-deps.sh installs it");
        }
        println!("SKIP: {CHROMIUM} is missing (run scripts/install-deps.sh as root)");
        return;
    }
    let (dom, stderr) = chromium(&html_path, &["--dump-dom".to_string()]);
    let errors = console_errors(&stderr);
    assert!(errors.is_empty(), "page errors: {errors:#?}");
    // 5 families (plain, vlan, qinq, mpls, bidirectional) × (Mb/s, pps) + 2 vs-frame-size
    // charts each + a latency chart per encapsulation (the bidirectional cases measured none).
    let svgs = dom.matches("<svg class=\"chart\"").count();
    assert_eq!(svgs, 10 + 10 + 4, "charts in the rendered DOM");
    assert!(dom.contains("cpe: latency percentiles"));
    assert!(dom.contains("theoretical max"));
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let png = target.join("report-wan-screenshot.png");
    let _ = std::fs::remove_file(&png);
    let (_, stderr) = chromium(
        &html_path,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1280,3200".to_string(),
        ],
    );
    assert!(console_errors(&stderr).is_empty());
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert_eq!(&bytes[1..4], b"PNG");
    assert!(bytes.len() > 50_000, "a blank page would be tiny");
    println!("screenshot: {}", png.display());
}

#[test]
fn killed_run_report_says_what_is_missing() {
    let dir = out_dir("report-killed");
    let (ok, stdout, stderr) = wirerate(&[
        "report",
        fixture("run-demo-killed").to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("UNFINISHED RUN"), "{stdout}");
    assert!(stderr.contains("unfinished"), "{stderr}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("## What is missing"));
}

#[test]
fn compare_cli_reports_verdicts() {
    let (ok, stdout, stderr) = wirerate(&[
        "compare",
        fixture("run-demo").to_str().unwrap(),
        fixture("run-demo-b").to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(stdout.contains("improved") && stdout.contains("regressed"));
    let (ok, _, stderr) = wirerate(&[
        "compare",
        "--fail-on-regression",
        fixture("run-demo").to_str().unwrap(),
        fixture("run-demo-b").to_str().unwrap(),
    ]);
    assert!(!ok && stderr.contains("regressed"), "{stderr}");
    let (ok, _, stderr) = wirerate(&["report", "/nonexistent-run-dir"]);
    assert!(!ok && stderr.contains("run.json"), "{stderr}");
}

/// Where the headline tables, the first chart and the findings lie in a 1400×900 window, as
/// Chromium lays the page out; a `<pre id="first-screen">` with JSON that `--dump-dom`
/// returns. Injected into a copy of the page, like [`GEOMETRY_SCRIPT`].
const FIRST_SCREEN_SCRIPT: &str = r#"<script>
(() => {
  const box = s => { const e = document.querySelector(s); return e ? e.getBoundingClientRect() : null; };
  const tables = [...document.querySelectorAll('table.headline')].map(t => t.getBoundingClientRect());
  const pre = document.createElement('pre');
  pre.id = 'first-screen';
  pre.textContent = JSON.stringify({
    viewport: [window.innerWidth, window.innerHeight],
    table_top: tables.length ? tables[0].top : -1,
    table_bottoms: tables.map(t => t.bottom),
    chart_top: (box('svg.chart') || { top: -1 }).top,
    findings_top: (box('#findings') || { top: -1 }).top,
  });
  document.body.appendChild(pre);
})();
</script>"#;

/// What [`FIRST_SCREEN_SCRIPT`] measured, CSS pixels from the top of the window.
#[derive(Debug)]
struct FirstScreen {
    viewport: (f64, f64),
    table_top: f64,
    table_bottoms: Vec<f64>,
    chart_top: f64,
    findings_top: f64,
}

/// Lays `html` out in Chromium at 1400×900 with [`FIRST_SCREEN_SCRIPT`] and reads the result.
fn first_screen(html: &str, name: &str) -> FirstScreen {
    let page = out_dir(name).join("first-screen.html");
    let with = html.replace("</body>", &format!("{FIRST_SCREEN_SCRIPT}</body>"));
    assert_ne!(with, html, "the page has a </body>");
    std::fs::write(&page, with).unwrap();
    let (dom, stderr) = chromium(
        &page,
        &[
            "--dump-dom".to_string(),
            "--window-size=1400,900".to_string(),
        ],
    );
    let errors = console_errors(&stderr);
    assert!(errors.is_empty(), "page errors: {errors:#?}");
    let open = "<pre id=\"first-screen\">";
    let start = dom.find(open).expect("the script ran") + open.len();
    let json = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    let v: serde_json::Value = serde_json::from_str(&json.replace("&amp;", "&")).unwrap();
    let f = |k: &str| v[k].as_f64().unwrap();
    FirstScreen {
        viewport: (
            v["viewport"][0].as_f64().unwrap(),
            v["viewport"][1].as_f64().unwrap(),
        ),
        table_top: f("table_top"),
        table_bottoms: v["table_bottoms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect(),
        chart_top: f("chart_top"),
        findings_top: f("findings_top"),
    }
}

/// Measures, in the page Chromium laid out, every grouped-bar chart's category labels: pairs
/// whose boxes intersect, and labels that touch the x-axis title or the legend or leave the
/// chart. Injected into a copy of the page (the report itself has no scripts); the result is
/// a `<pre id="geometry">` with JSON that `--dump-dom` returns.
const GEOMETRY_SCRIPT: &str = r#"<script>
(() => {
  const hit = (p, q) => p.left < q.right && q.left < p.right && p.top < q.bottom && q.top < p.bottom;
  const problems = [];
  let labels = 0;
  document.querySelectorAll('svg.chart').forEach((svg, i) => {
    const groups = [...svg.querySelectorAll('text.group')];
    if (!groups.length) return;
    const title = svg.getAttribute('aria-label');
    const boxes = groups.map(t => t.getBoundingClientRect());
    labels += boxes.length;
    for (let a = 0; a < boxes.length; a++)
      for (let b = a + 1; b < boxes.length; b++)
        if (hit(boxes[a], boxes[b])) problems.push(`${title}: labels ${a} and ${b} overlap`);
    const others = [...svg.querySelectorAll('text.axis-label, text.legend')].map(t => t.getBoundingClientRect());
    const s = svg.getBoundingClientRect();
    boxes.forEach((p, a) => {
      if (others.some(q => hit(p, q))) problems.push(`${title}: label ${a} touches an axis title or the legend`);
      if (p.left < s.left || p.right > s.right || p.bottom > s.bottom) problems.push(`${title}: label ${a} leaves the chart`);
    });
  });
  const pre = document.createElement('pre');
  pre.id = 'geometry';
  pre.textContent = JSON.stringify({ labels, problems });
  document.body.appendChild(pre);
})();
</script>"#;

/// Runs [`GEOMETRY_SCRIPT`] on `html` (a copy with the script appended) in Chromium: (labels
/// measured, problems found).
fn label_geometry(html: &str, name: &str) -> (u64, Vec<String>) {
    let page = out_dir(name).join("geometry.html");
    let with = html.replace("</body>", &format!("{GEOMETRY_SCRIPT}</body>"));
    assert_ne!(with, html, "the page has a </body>");
    std::fs::write(&page, with).unwrap();
    let (dom, stderr) = chromium(&page, &["--dump-dom".to_string()]);
    let errors = console_errors(&stderr);
    assert!(errors.is_empty(), "page errors: {errors:#?}");
    let open = "<pre id=\"geometry\">";
    let start = dom.find(open).expect("the script ran") + open.len();
    let json = &dom[start..start + dom[start..].find("</pre>").unwrap()];
    let v: serde_json::Value = serde_json::from_str(&json.replace("&amp;", "&")).unwrap();
    let problems = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap().to_string())
        .collect();
    (v["labels"].as_u64().unwrap(), problems)
}

/// Issue 13 item 7: six long profile names (`run-matrix`: filter-stateful-1/100/10000, …) on
/// the x axis of the grouped-bar charts do not overlap each other, the axis title or the
/// legend, as Chromium lays them out; a control page with the old one-line labels shows the
/// check sees an overlap. Screenshot at `target/report-matrix-screenshot.png`.
#[test]
fn long_profile_names_on_the_x_axis_do_not_overlap() {
    let dir = out_dir("report-matrix");
    let (ok, stdout, stderr) = wirerate(&[
        "report",
        fixture("run-matrix").to_str().unwrap(),
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert!(ok, "{stderr}");
    assert!(
        stdout.contains("fastpath on: +80 % for napt at 64 B, IPv4 UDP"),
        "{stdout}"
    );
    let html_path = dir.join("report.html");
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert!(html.contains("<title>filter-stateful-10000</title>"));
    assert!(html.contains("TCP throughput against MSS, offload off and on"));
    assert!(html.contains("Fast path off and on"));
    if !Path::new(CHROMIUM).exists() {
        if std::env::var_os("CI").is_some() {
            panic!("{CHROMIUM} is missing; scripts/install-deps.sh installs it");
        }
        println!("SKIP: {CHROMIUM} is missing (run scripts/install-deps.sh as root)");
        return;
    }
    // Control: one-line labels as they were drawn before, 85 px apart.
    let control = "<!DOCTYPE html><html><body><svg class=\"chart\" aria-label=\"control\" viewBox=\"0 0 600 100\" width=\"600\" height=\"100\"><text class=\"group\" x=\"282.5\" y=\"40\" text-anchor=\"middle\" style=\"font-size:11px\">filter-stateful-100</text><text class=\"group\" x=\"367.5\" y=\"40\" text-anchor=\"middle\" style=\"font-size:11px\">filter-stateful-10000</text></svg></body></html>";
    let (n, problems) = label_geometry(control, "report-matrix-control");
    assert_eq!(n, 2);
    assert!(
        problems.iter().any(|p| p.contains("overlap")),
        "the geometry check is blind: {problems:?}"
    );
    let (n, problems) = label_geometry(&html, "report-matrix-geometry");
    // 6 profiles on the per-profile charts of 4 families (Mb/s, pps, CPU), and the two
    // profiles of the fast-path and MSS families.
    assert!(n >= 6 * 3 * 3, "measured {n} labels");
    assert!(problems.is_empty(), "{problems:#?}");

    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .unwrap()
        .to_path_buf();
    let png = target.join("report-matrix-screenshot.png");
    let _ = std::fs::remove_file(&png);
    let (_, stderr) = chromium(
        &html_path,
        &[
            format!("--screenshot={}", png.display()),
            "--window-size=1280,2400".to_string(),
        ],
    );
    assert!(console_errors(&stderr).is_empty());
    let bytes = std::fs::read(&png).expect("screenshot written");
    assert_eq!(&bytes[1..4], b"PNG");
    println!("screenshot: {}", png.display());
}
