//! Hand-written SVG charts: grouped bars and lines. No scripts, no external fonts.

/// Okabe–Ito colours (distinguishable with the common colour-vision deficiencies).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
];

/// Escapes text for XML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A "nice" axis maximum and tick step at or above `max`.
pub fn nice_axis(max: f64) -> (f64, f64) {
    if max.is_nan() || max <= 0.0 || !max.is_finite() {
        return (1.0, 0.2);
    }
    let raw = max / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| s * 5.0 >= max * 0.999)
        .unwrap_or(10.0 * mag);
    ((max / step).ceil() * step, step)
}

/// Tick label: compact, with SI suffix for large values.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    let (x, s) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let t = format!("{x:.2}");
    let t = t.trim_end_matches('0').trim_end_matches('.');
    format!("{t}{s}")
}

/// One bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bar {
    /// Height.
    pub value: f64,
    /// Half-height of the noise whisker.
    pub noise: f64,
    /// Tester-limited: drawn hatched, labelled "TL", no DUT figure.
    pub tester_limited: bool,
    /// Only a lower bound ("at least"): drawn hatched, labelled "≥".
    pub lower_bound: bool,
}

const W: f64 = 600.0;
const H: f64 = 330.0;
const L: f64 = 70.0;
const R: f64 = 20.0;
const T: f64 = 36.0;
const B: f64 = 64.0;

/// Width of one character of an 11 px label, pixels: on the wide side of common sans-serif
/// fonts (DejaVu Sans digits are 7.0 px), so a label the layout thinks fits does fit.
pub const CHAR_PX: f64 = 7.0;
/// Line height of a wrapped category label, pixels.
pub const LINE_PX: f64 = 12.0;

/// How a grouped-bar chart writes its category (x axis) labels.
#[derive(Debug, Clone, PartialEq)]
pub struct CategoryLabels {
    /// The lines of each label, top to bottom (one line when it fits its slot).
    pub lines: Vec<Vec<String>>,
    /// Slots too narrow even for wrapped words: the labels run vertically, cut to
    /// [`VERTICAL_CHARS`] characters with an ellipsis (the full name is in the bar's and the
    /// label's tooltip).
    pub vertical: bool,
    /// Pixels the labels need below one line's height (the x-axis title and legend move down).
    pub extra: f64,
}

/// The most characters a vertical category label keeps.
pub const VERTICAL_CHARS: usize = 18;

/// Lays out category labels for slots `slot` pixels wide. Long profile names such as
/// `filter-stateful-10000` side by side ran into each other (issue 13): a label wider than its
/// slot is wrapped after `-`, `_`, `/`, `.` or spaces (a word longer than the slot is cut
/// where it must), so each line stays inside the slot and neighbours cannot touch; only when
/// a slot cannot hold four characters do the labels turn vertical.
pub fn category_labels(groups: &[String], slot: f64) -> CategoryLabels {
    let fit = ((slot - 6.0) / CHAR_PX).floor();
    if fit < 4.0 {
        let lines: Vec<Vec<String>> = groups
            .iter()
            .map(|g| {
                let n = g.chars().count();
                vec![if n > VERTICAL_CHARS {
                    let cut: String = g.chars().take(VERTICAL_CHARS - 1).collect();
                    format!("{cut}…")
                } else {
                    g.clone()
                }]
            })
            .collect();
        let longest = lines
            .iter()
            .map(|l| l[0].chars().count())
            .max()
            .unwrap_or(0);
        return CategoryLabels {
            lines,
            vertical: true,
            extra: (longest as f64 * CHAR_PX - LINE_PX).max(0.0),
        };
    }
    let fit = fit as usize;
    let lines: Vec<Vec<String>> = groups.iter().map(|g| wrap(g, fit)).collect();
    let most = lines.iter().map(Vec::len).max().unwrap_or(1).max(1);
    CategoryLabels {
        lines,
        vertical: false,
        extra: (most - 1) as f64 * LINE_PX,
    }
}

/// `text` in lines of at most `width` characters, broken after separators where possible.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    // Words keep their separator at their end: `filter-`, `stateful-`, `10000`.
    let mut words: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in text.chars() {
        cur.push(c);
        if matches!(c, '-' | '_' | '/' | '.' | ' ') {
            words.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        words.push(cur);
    }
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for w in words {
        if !line.is_empty() && line.chars().count() + w.chars().count() > width {
            lines.push(std::mem::take(&mut line).trim_end().to_string());
        }
        line.push_str(&w);
        // A word longer than a line is cut.
        while line.chars().count() > width {
            let head: String = line.chars().take(width).collect();
            let tail: String = line.chars().skip(width).collect();
            lines.push(head);
            line = tail;
        }
    }
    if !line.trim_end().is_empty() || lines.is_empty() {
        lines.push(line.trim_end().to_string());
    }
    lines
}

/// The chart's frame; below the plot: (legend rows, extra pixels for wrapped x labels).
fn frame(
    title: &str,
    y_label: &str,
    x_label: &str,
    y_max: f64,
    step: f64,
    (legend_rows, extra): (usize, f64),
    o: &mut String,
) {
    let h = H + extra + 16.0 * legend_rows.saturating_sub(1) as f64;
    o.push_str(&format!(
        r#"<svg class="chart" viewBox="0 0 {W} {h}" width="{W}" height="{h}" role="img" aria-label="{t}">"#,
        t = esc(title)
    ));
    o.push_str(&format!(
        r#"<text class="title" x="{}" y="20" text-anchor="middle">{}</text>"#,
        W / 2.0,
        esc(title)
    ));
    let ph = H - T - B;
    let mut v = 0.0;
    while v <= y_max * 1.0001 {
        let y = T + ph - v / y_max * ph;
        o.push_str(&format!(
            r##"<line x1="{L}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text class="tick" x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - R,
            L - 6.0,
            y + 4.0,
            tick(v)
        ));
        v += step;
    }
    o.push_str(&format!(
        r##"<line x1="{L}" x2="{L}" y1="{T}" y2="{}" stroke="#333"/><line x1="{L}" x2="{}" y1="{}" y2="{}" stroke="#333"/>"##,
        T + ph,
        W - R,
        T + ph,
        T + ph
    ));
    o.push_str(&format!(
        r#"<text class="axis-label" transform="translate(16 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        T + ph / 2.0,
        esc(y_label)
    ));
    o.push_str(&format!(
        r#"<text class="axis-label" x="{}" y="{}" text-anchor="middle">{}</text>"#,
        L + (W - L - R) / 2.0,
        T + ph + 30.0 + extra,
        esc(x_label)
    ));
}

/// Legend entries laid out in rows that fit the chart width: (x, row) per entry.
fn legend_layout(names: &[String]) -> (Vec<(f64, usize)>, usize) {
    let mut x = L;
    let mut row = 0;
    let mut out = Vec::new();
    for n in names {
        let w = 30.0 + 6.5 * n.chars().count() as f64;
        if x + w > W - R + 10.0 && x > L {
            x = L;
            row += 1;
        }
        out.push((x, row));
        x += w;
    }
    (out, if names.is_empty() { 0 } else { row + 1 })
}

fn legend(names: &[String], dashed: &[bool], colors: &[usize], extra: f64, o: &mut String) {
    let (pos, _) = legend_layout(names);
    for (i, n) in names.iter().enumerate() {
        let (x, row) = pos[i];
        let y = T + (H - T - B) + 48.0 + extra + 16.0 * row as f64;
        let c = PALETTE[colors.get(i).copied().unwrap_or(i) % PALETTE.len()];
        if dashed.get(i).copied().unwrap_or(false) {
            o.push_str(&format!(
                r#"<line x1="{x}" x2="{}" y1="{}" y2="{}" stroke="{c}" stroke-width="2" stroke-dasharray="5 3"/>"#,
                x + 14.0,
                y - 4.0,
                y - 4.0
            ));
        } else {
            o.push_str(&format!(
                r#"<rect x="{x}" y="{}" width="12" height="10" fill="{c}"/>"#,
                y - 9.0
            ));
        }
        o.push_str(&format!(
            r#"<text class="legend" x="{}" y="{y}">{}</text>"#,
            x + 17.0,
            esc(n)
        ));
    }
}

/// Grouped bars: `values[group][series]`. `y_max` lets charts that belong together share an
/// axis.
pub fn bar_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    groups: &[String],
    series: &[String],
    values: &[Vec<Option<Bar>>],
    y_max: f64,
) -> String {
    let (y_max, step) = nice_axis(y_max);
    let ph = H - T - B;
    let pw = W - L - R;
    let gw = pw / groups.len().max(1) as f64;
    let labels = category_labels(groups, gw);
    let mut o = String::new();
    frame(
        title,
        y_label,
        x_label,
        y_max,
        step,
        (legend_layout(series).1, labels.extra),
        &mut o,
    );
    o.push_str(r##"<defs><pattern id="tl" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#eee"/><line x1="0" y1="0" x2="0" y2="6" stroke="#999" stroke-width="3"/></pattern></defs>"##);
    let bw = (gw * 0.8 / series.len().max(1) as f64).min(40.0);
    for (gi, g) in groups.iter().enumerate() {
        let gx = L + gi as f64 * gw;
        let used = bw * series.len() as f64;
        let x0 = gx + (gw - used) / 2.0;
        for (si, s) in series.iter().enumerate() {
            let Some(b) = values.get(gi).and_then(|v| v.get(si)).copied().flatten() else {
                continue;
            };
            let x = x0 + si as f64 * bw;
            let h = (b.value / y_max * ph).clamp(0.0, ph);
            let y = T + ph - h;
            let fill = if b.tester_limited || b.lower_bound {
                "url(#tl)".to_string()
            } else {
                PALETTE[si % PALETTE.len()].to_string()
            };
            o.push_str(&format!(
                r#"<rect class="bar" x="{x:.1}" y="{y:.1}" width="{:.1}" height="{h:.1}" fill="{fill}"><title>{}: {} {}</title></rect>"#,
                bw - 2.0,
                esc(g),
                esc(s),
                tick(b.value)
            ));
            if b.tester_limited || b.lower_bound {
                o.push_str(&format!(
                    r#"<text class="tl" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                    x + bw / 2.0 - 1.0,
                    y - 3.0,
                    if b.tester_limited { "TL" } else { "≥" }
                ));
            } else if b.noise > 0.0 {
                let cx = x + bw / 2.0 - 1.0;
                let y1 = T + ph - ((b.value + b.noise) / y_max * ph).clamp(0.0, ph);
                let y2 = T + ph - ((b.value - b.noise).max(0.0) / y_max * ph).clamp(0.0, ph);
                o.push_str(&format!(
                    r##"<path class="whisker" d="M{:.1} {y1:.1}H{:.1}M{cx:.1} {y1:.1}V{y2:.1}M{:.1} {y2:.1}H{:.1}" stroke="#222" fill="none"/>"##,
                    cx - 3.0,
                    cx + 3.0,
                    cx - 3.0,
                    cx + 3.0
                ));
            }
        }
        let cx = gx + gw / 2.0;
        let lines = labels.lines.get(gi).cloned().unwrap_or_default();
        if labels.vertical {
            let y = T + ph + 6.0;
            o.push_str(&format!(
                r#"<text class="group" x="{cx:.1}" y="{y}" text-anchor="end" dominant-baseline="middle" transform="rotate(-90 {cx:.1} {y})"><title>{}</title>{}</text>"#,
                esc(g),
                esc(&lines.concat())
            ));
        } else {
            o.push_str(&format!(
                r#"<text class="group" x="{cx:.1}" y="{}" text-anchor="middle"><title>{}</title>"#,
                T + ph + 14.0,
                esc(g)
            ));
            for (i, l) in lines.iter().enumerate() {
                o.push_str(&format!(
                    r#"<tspan x="{cx:.1}" dy="{}">{}</tspan>"#,
                    if i == 0 { 0.0 } else { LINE_PX },
                    esc(l)
                ));
            }
            o.push_str("</text>");
        }
    }
    legend(series, &[], &[], labels.extra, &mut o);
    o.push_str("</svg>");
    o
}

/// One line of a line chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend name.
    pub name: String,
    /// Points (x, y), drawn in order.
    pub points: Vec<(f64, f64)>,
    /// Dashed (theoretical curves, min/max).
    pub dashed: bool,
    /// Palette index; `None` = the series' position.
    pub color: Option<usize>,
}

/// Lines over a linear x axis from 0 (or the smallest x) to the largest x.
pub fn line_chart(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    y_max: Option<f64>,
) -> String {
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut x_lo, mut x_hi, mut y_hi) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for (x, y) in all {
        x_lo = x_lo.min(*x);
        x_hi = x_hi.max(*x);
        y_hi = y_hi.max(*y);
    }
    if !x_lo.is_finite() {
        x_lo = 0.0;
        x_hi = 1.0;
    }
    if x_hi <= x_lo {
        x_hi = x_lo + 1.0;
    }
    let (y_max, step) = nice_axis(y_max.unwrap_or(y_hi));
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    let mut o = String::new();
    frame(
        title,
        y_label,
        x_label,
        y_max,
        step,
        (legend_layout(&names).1, 0.0),
        &mut o,
    );
    let ph = H - T - B;
    let pw = W - L - R - 10.0;
    let px = |x: f64| L + 5.0 + (x - x_lo) / (x_hi - x_lo) * pw;
    let py = |y: f64| T + ph - (y / y_max * ph).clamp(0.0, ph);
    // X ticks at the data's distinct x values (at most 8).
    let mut xs: Vec<f64> = series
        .iter()
        .filter(|s| !s.dashed)
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    xs.sort_by(f64::total_cmp);
    xs.dedup();
    if xs.len() > 8 {
        let (_, st) = nice_axis(x_hi - x_lo);
        xs = (0..)
            .map(|i| x_lo + st * i as f64)
            .take_while(|x| *x <= x_hi)
            .collect();
    }
    for x in xs {
        o.push_str(&format!(
            r#"<text class="tick" x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            px(x),
            T + ph + 14.0,
            tick(x)
        ));
    }
    for (i, s) in series.iter().enumerate() {
        let c = PALETTE[s.color.unwrap_or(i) % PALETTE.len()];
        let d: Vec<String> = s
            .points
            .iter()
            .enumerate()
            .map(|(k, (x, y))| {
                format!(
                    "{}{:.1} {:.1}",
                    if k == 0 { "M" } else { "L" },
                    px(*x),
                    py(*y)
                )
            })
            .collect();
        let dash = if s.dashed {
            r#" stroke-dasharray="6 4""#
        } else {
            ""
        };
        o.push_str(&format!(
            r#"<path class="line" d="{}" stroke="{c}" stroke-width="2" fill="none"{dash}/>"#,
            d.join("")
        ));
        if !s.dashed {
            for (x, y) in &s.points {
                o.push_str(&format!(
                    r#"<circle class="point" cx="{:.1}" cy="{:.1}" r="3" fill="{c}"><title>{}: {} → {}</title></circle>"#,
                    px(*x),
                    py(*y),
                    esc(&s.name),
                    tick(*x),
                    tick(*y)
                ));
            }
        }
    }
    let dashed: Vec<bool> = series.iter().map(|s| s.dashed).collect();
    let colors: Vec<usize> = series
        .iter()
        .enumerate()
        .map(|(i, s)| s.color.unwrap_or(i))
        .collect();
    legend(&names, &dashed, &colors, 0.0, &mut o);
    o.push_str("</svg>");
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    /// Issue 13 item 7: six long profile names side by side. Every line of every label, at
    /// the layout's (generous) character width, stays inside its slot, so two neighbours
    /// centred one slot apart keep a gap; the lines join back into the name.
    #[test]
    fn long_category_labels_wrap_inside_their_slots() {
        let groups = names(&[
            "forward",
            "filter-stateful-1",
            "filter-stateful-100",
            "filter-stateful-10000",
            "filter-stateless-100",
            "napt",
        ]);
        let slot = (W - L - R) / groups.len() as f64;
        let l = category_labels(&groups, slot);
        assert!(!l.vertical);
        for (g, lines) in groups.iter().zip(&l.lines) {
            assert_eq!(&lines.concat(), g);
            for line in lines {
                let w = line.chars().count() as f64 * CHAR_PX;
                assert!(w <= slot - 6.0, "{line:?}: {w} px in a {slot} px slot");
            }
        }
        assert_eq!(l.lines[3], ["filter-", "stateful-", "10000"]);
        assert_eq!(l.lines[0], ["forward"]);
        assert_eq!(l.extra, 2.0 * LINE_PX);
        // The drawn chart: the x-axis title and the legend move below the third line.
        let bars = vec![
            vec![Some(Bar {
                value: 1.0,
                noise: 0.0,
                tester_limited: false,
                lower_bound: false,
            })];
            6
        ];
        let svg = bar_chart("t", "profile", "y", &groups, &names(&["64 B"]), &bars, 1.0);
        assert!(
            svg.contains(r#"<tspan x="367.5" dy="12">stateful-</tspan>"#),
            "{svg}"
        );
        assert!(svg.contains(&format!(r#"height="{}""#, H + 2.0 * LINE_PX)));
        assert!(svg.contains("<title>filter-stateful-10000</title>"));
        // Short names stay on one line.
        let l = category_labels(&names(&["forward", "napt"]), (W - L - R) / 2.0);
        assert_eq!(l.lines, [vec!["forward"], vec!["napt"]]);
        assert_eq!(l.extra, 0.0);
    }

    #[test]
    fn words_longer_than_a_line_are_cut_and_narrow_slots_turn_vertical() {
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "efgh", "ij"]);
        assert_eq!(wrap("a b", 10), ["a b"]);
        assert_eq!(wrap("", 5), [""]);
        let many: Vec<String> = (0..60).map(|i| format!("profile-{i}")).collect();
        let l = category_labels(&many, (W - L - R) / 60.0);
        assert!(l.vertical);
        assert!(l
            .lines
            .iter()
            .all(|x| x[0].chars().count() <= VERTICAL_CHARS));
        let long = names(&["a-very-long-profile-name-indeed"]);
        let l = category_labels(&long, 5.0);
        assert_eq!(l.lines[0][0].chars().count(), VERTICAL_CHARS);
        assert!(l.lines[0][0].ends_with('…'));
    }
}
