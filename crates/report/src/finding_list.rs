//! The report's one list of findings: every difference beyond noise said once, one line each,
//! ending in its noise (`± N %`), with what that noise measures said once in a legend.
//!
//! The analysis draws two kinds of statement ([`crate::model::Conclusion`], a summary per
//! dimension, and [`crate::model::Statement`], each profile against the baseline per case); a
//! summary and the per-case statement it rests on cite the same two rows, and the list keeps
//! such a pair once. A multi-goal case's goals that say the same thing (the same difference and
//! noise as printed) share one line that names both goals. Comparisons within noise or
//! without a verdict are kept apart, for a reader who asks about them.

use crate::analyse::findings::goal_words;
use crate::model::{Analysis, NoiseBasis, Row};

/// One line of the list.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// The sentence without its noise.
    pub claim: String,
    /// The noise of the two figures compared, percent of the reference; `None` when the line
    /// has no comparison (a tester-limited baseline).
    pub noise_percent: Option<f64>,
    /// How the noise of each cited figure was measured, each once.
    pub bases: Vec<NoiseBasis>,
    /// The rows compared, (case id, methodology as the results table shows it): the subject
    /// first, its reference second; a line that speaks for more than one loss goal has a pair
    /// per goal.
    pub cites: Vec<(String, String)>,
}

/// The findings, the other comparisons, and the noise measures the legend explains.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct List {
    /// Differences beyond noise: the per-dimension summaries first, then the per-case
    /// statements no summary already made.
    pub findings: Vec<Line>,
    /// Comparisons within noise, not judged, or without a figure to compare with.
    pub others: Vec<Line>,
    /// The noise measures of every line, in order of first use: a line's marks are
    /// positions in this list, from 1.
    pub bases: Vec<NoiseBasis>,
}

impl List {
    /// The legend marks of `line` (1-based positions in [`List::bases`]); none when the list
    /// uses a single measure, which the legend then names for every line.
    pub fn marks(&self, line: &Line) -> Vec<usize> {
        if self.bases.len() < 2 {
            return Vec::new();
        }
        line.bases
            .iter()
            .filter_map(|b| self.bases.iter().position(|x| x == b).map(|i| i + 1))
            .collect()
    }

    /// The legend's sentence on what `± N %` is, and one entry per measure.
    pub fn legend(&self) -> (String, Vec<LegendEntry>) {
        let head = "± N % ends each line: the noise of the two figures compared (each figure's own, added), as a percentage of the second figure; a difference is a finding only where it is larger.".to_string();
        let one = self.bases.len() < 2;
        let entries = self
            .bases
            .iter()
            .enumerate()
            .map(|(i, b)| LegendEntry {
                mark: (!one).then_some(i + 1),
                name: b.describe(),
                what: b.explain(),
            })
            .collect();
        (head, entries)
    }
}

/// One noise measure in the legend.
#[derive(Debug, Clone, PartialEq)]
pub struct LegendEntry {
    /// Its mark after a line's noise; `None` when the list uses this measure only.
    pub mark: Option<usize>,
    /// Its name ([`NoiseBasis::describe`]).
    pub name: &'static str,
    /// What it is ([`NoiseBasis::explain`]).
    pub what: &'static str,
}

/// The noise as a line ends with it: `± 1.5 %`.
pub fn noise_text(p: f64) -> String {
    format!("± {p:.1} %")
}

/// The list of `a`'s findings.
pub fn list(a: &Analysis) -> List {
    let row = |(case, m): &(String, String)| -> Option<&Row> {
        a.rows
            .iter()
            .find(|r| &r.case_id == case && &r.methodology_label() == m)
    };
    let bases = |cites: &[(String, String)]| -> Vec<NoiseBasis> {
        let mut v = Vec::new();
        for b in cites.iter().filter_map(row).map(|r| r.noise_basis) {
            if !v.contains(&b) {
                v.push(b);
            }
        }
        v
    };
    let mut out = List::default();
    for c in &a.conclusions {
        out.findings.push(Line {
            claim: claim_or_text(&c.claim, &c.text),
            noise_percent: Some(c.noise_percent),
            bases: bases(&c.cites),
            cites: c.cites.clone(),
        });
    }
    for f in &a.findings {
        let line = Line {
            claim: claim_or_text(&f.claim, &f.text),
            noise_percent: (!f.noise.is_empty()).then_some(f.noise_percent),
            bases: if f.noise.is_empty() {
                Vec::new()
            } else {
                bases(&f.cites)
            },
            cites: f.cites.clone(),
        };
        if !f.significant {
            out.others.push(line);
        } else if out
            .findings
            .iter()
            .any(|l| l.cites.chunks(2).any(|pair| pair == line.cites.as_slice()))
        {
            // A summary already says it.
        } else if !merge_goal(&mut out.findings, &line, &row) {
            out.findings.push(line);
        }
    }
    for l in out.findings.iter().chain(&out.others) {
        for b in &l.bases {
            if !out.bases.contains(b) {
                out.bases.push(*b);
            }
        }
    }
    out
}

/// Puts `line` into a line of `lines` that says the same of another loss goal of the same
/// case (the claim without its goal words and the printed noise alike): `…, at zero loss and at
/// ≤ 0.5 % loss ± 2.1 %`. False when there is none.
fn merge_goal<'a>(
    lines: &mut [Line],
    line: &Line,
    row: &impl Fn(&(String, String)) -> Option<&'a Row>,
) -> bool {
    let goal = |l: &Line| -> Option<String> {
        let r = row(l.cites.first()?)?;
        let g = goal_words(r);
        (!g.is_empty() && l.claim.contains(&g)).then_some(g)
    };
    let Some(g) = goal(line) else {
        return false;
    };
    let bare = line.claim.replacen(&g, "", 1);
    let noise = line.noise_percent.map(noise_text);
    for l in lines.iter_mut() {
        let Some(h) = goal(l) else { continue };
        let same_case = l.cites.first().map(|c| &c.0) == line.cites.first().map(|c| &c.0);
        if same_case
            && l.claim.replacen(&h, "", 1) == bare
            && l.noise_percent.map(noise_text) == noise
        {
            l.claim = l
                .claim
                .replacen(&h, &format!("{h} and{}", g.trim_start_matches(',')), 1);
            l.cites.extend(line.cites.iter().cloned());
            for b in &line.bases {
                if !l.bases.contains(b) {
                    l.bases.push(*b);
                }
            }
            return true;
        }
    }
    false
}

/// A statement's claim; its whole text when it has none (an analysis read back from JSON,
/// where claims are not kept).
fn claim_or_text(claim: &str, text: &str) -> String {
    if claim.is_empty() {
        text.to_string()
    } else {
        claim.to_string()
    }
}
