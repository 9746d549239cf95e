//! Loss curves, latency rows and back-to-back rows: per case, from its finished searches.

use std::collections::BTreeMap;

use bench_model::plan::Methodology;
use bench_model::results::LineRate;
use bench_model::search::{Finding, Status};
use wire::units::{BitsPerSec, Pps};

use super::dims::CaseDims;
use super::index::Index;
use crate::model::{mean, BackToBackRow, IpdvUs, LatencyRow, LossCurveRow, Row};

/// What [`of`] returns.
pub(crate) struct Curves {
    pub loss_curves: Vec<LossCurveRow>,
    pub latency: Vec<LatencyRow>,
    pub back_to_back: Vec<BackToBackRow>,
}

/// The loss curves, latency and back-to-back rows of the run; `rows` are the throughput rows
/// (a back-to-back row's corrected buffer time needs the case's throughput).
pub(crate) fn of(index: &Index, dims: &mut CaseDims, rows: &[Row], speed: BitsPerSec) -> Curves {
    let mut loss_curves = Vec::new();
    let mut latency = Vec::new();
    let mut curve_acc: BTreeMap<String, BTreeMap<i64, Vec<f64>>> = BTreeMap::new();
    let mut lat_acc: BTreeMap<String, Vec<(f64, bench_model::search::LatencySummary)>> =
        BTreeMap::new();
    let mut b2b_acc: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for ((case, _, _), res) in &index.done {
        let Some(res) = res else { continue };
        if res.status != Status::Complete {
            continue;
        }
        match &res.finding {
            Finding::LossCurve { points } => {
                let acc = curve_acc.entry(case.clone()).or_default();
                for p in points {
                    acc.entry((p.load.percent() * 1000.0).round() as i64)
                        .or_default()
                        .push(p.loss_ratio * 100.0);
                }
            }
            Finding::BackToBack {
                mean: Some(mean), ..
            } => {
                b2b_acc.entry(case.clone()).or_default().push(*mean);
            }
            Finding::Latency { load, trials, .. } => {
                for t in trials {
                    lat_acc
                        .entry(case.clone())
                        .or_default()
                        .push((load.percent(), *t));
                }
            }
            _ => {}
        }
    }
    for (case, acc) in curve_acc {
        let dims = dims.get(&case);
        let mut points: Vec<(f64, f64)> = acc
            .into_iter()
            .map(|(k, v)| (k as f64 / 1000.0, mean(&v).unwrap_or(0.0)))
            .collect();
        points.reverse();
        loss_curves.push(LossCurveRow {
            case_id: case,
            dims,
            points,
        });
    }
    for (case, acc) in lat_acc {
        let dims = dims.get(&case);
        let samples: u64 = acc.iter().map(|(_, t)| t.samples).sum();
        let weighted: f64 = acc
            .iter()
            .map(|(_, t)| t.mean.0 as f64 * t.samples as f64)
            .sum();
        latency.push(LatencyRow {
            case_id: case,
            dims,
            load_percent: mean(&acc.iter().map(|x| x.0).collect::<Vec<_>>()).unwrap_or(0.0),
            min_us: acc.iter().map(|x| x.1.min.0).min().unwrap_or(0) as f64 / 1e3,
            mean_us: if samples > 0 {
                weighted / samples as f64 / 1e3
            } else {
                0.0
            },
            max_us: acc.iter().map(|x| x.1.max.0).max().unwrap_or(0) as f64 / 1e3,
            samples,
            percentiles_us: pooled_percentiles(&acc),
            typical_us: rfc8219_median(&acc, |r| r.typical),
            worst_case_us: rfc8219_median(&acc, |r| r.worst_case),
            pdv_us: rfc8219_median(&acc, |r| r.pdv),
            ipdv_us: ipdv_medians(&acc),
        });
    }
    let mut back_to_back = Vec::new();
    for (case, means) in b2b_acc {
        let dims = dims.get(&case);
        // One direction's 100 %: as the trials recorded it, else from the case's dimensions.
        let line = match index.udp_facts.get(&case) {
            Some(f) => Some(f.line.clone()),
            None => dims
                .frame()
                .filter(|f| f.fixed().is_some())
                .and_then(|f| LineRate::on_path(speed, dims.encap, &f)),
        };
        let Some(max_pps) = line.map(|l| l.pps.0) else {
            continue;
        };
        // The same case's throughput: RFC 2544 first, else multi-goal's first goal (the
        // rows are in goal order).
        let throughput_pps = [Methodology::Rfc2544Throughput, Methodology::MultiGoal]
            .into_iter()
            .find_map(|m| {
                rows.iter()
                    .find(|r| r.is_figure_of(&case, m) && !r.tester_limited)
                    .and_then(|r| r.pps.map(|p| p.0 / f64::from(r.directions)))
            });
        let mean_frames = mean(&means).unwrap_or(0.0);
        let bt = bench_model::search::buffer_time(mean_frames, max_pps, throughput_pps);
        back_to_back.push(BackToBackRow {
            case_id: case,
            dims,
            repetitions: means.len(),
            mean_frames,
            max_pps: Pps(max_pps),
            throughput_pps: throughput_pps.map(Pps),
            implied_buffer_ms: bt.implied_secs * 1e3,
            corrected_buffer_ms: bt.corrected_secs.as_ref().ok().map(|s| s * 1e3),
            corrected_refused: bt.corrected_secs.err().map(|why| why.to_string()),
        });
    }
    Curves {
        loss_curves,
        latency,
        back_to_back,
    }
}

/// The trials' percentiles combined (see [`LatencyRow::percentiles_us`]), microseconds.
fn pooled_percentiles(acc: &[(f64, bench_model::search::LatencySummary)]) -> Option<[f64; 4]> {
    let mut sum = [0.0; 4];
    let mut weight = 0.0;
    for (_, t) in acc {
        let p = t.percentiles?;
        let w = t.samples.max(1) as f64;
        for (s, v) in sum.iter_mut().zip([p.p50, p.p90, p.p99, p.p99_9]) {
            *s += v.0 as f64 * w;
        }
        weight += w;
    }
    (weight > 0.0).then(|| sum.map(|s| s / weight / 1e3))
}

/// The median over the trials of one RFC 8219 figure, µs (RFC 8219 reports the median of the
/// trials' values); `None` when any trial lacks percentiles.
fn rfc8219_median(
    acc: &[(f64, bench_model::search::LatencySummary)],
    figure: impl Fn(&bench_model::search::Rfc8219) -> wire::units::Nanos,
) -> Option<f64> {
    let v: Vec<f64> = acc
        .iter()
        .map(|(_, t)| t.rfc8219().map(|r| figure(&r).0 as f64 / 1e3))
        .collect::<Option<_>>()?;
    median(v)
}

/// RFC 8219 §7.3.2: each trial's IPDV Dmin, Dmed and Dmax, each the median over the trials,
/// µs; `None` when any trial lacks IPDV.
fn ipdv_medians(acc: &[(f64, bench_model::search::LatencySummary)]) -> Option<IpdvUs> {
    let all: Vec<bench_model::search::Ipdv> =
        acc.iter().map(|(_, t)| t.ipdv).collect::<Option<_>>()?;
    let of = |f: fn(&bench_model::search::Ipdv) -> i64| {
        median(all.iter().map(|i| f(i) as f64 / 1e3).collect())
    };
    Some(IpdvUs {
        min: of(|i| i.min_ns)?,
        median: of(|i| i.median_ns)?,
        max: of(|i| i.max_ns)?,
    })
}

/// The median of `v` (mean of the middle two for an even count); `None` when empty.
fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc8219_figures_are_medians_over_trials() {
        use bench_model::search::{LatencySummary, Percentiles};
        use wire::units::Nanos;
        let t = |min: u64, p50: u64, p999: u64| {
            (
                10.0,
                LatencySummary {
                    min: Nanos(min),
                    mean: Nanos(p50),
                    max: Nanos(p999 * 2),
                    samples: 100,
                    ipdv: None,
                    percentiles: Some(Percentiles {
                        p50: Nanos(p50),
                        p90: Nanos(p50),
                        p99: Nanos(p999),
                        p99_9: Nanos(p999),
                    }),
                },
            )
        };
        let acc = [
            t(10_000, 20_000, 50_000),
            t(12_000, 30_000, 90_000),
            t(11_000, 25_000, 60_000),
        ];
        assert_eq!(rfc8219_median(&acc, |r| r.typical), Some(25.0));
        assert_eq!(rfc8219_median(&acc, |r| r.worst_case), Some(60.0));
        // PDVs 40, 78, 49 µs: median 49.
        assert_eq!(rfc8219_median(&acc, |r| r.pdv), Some(49.0));
        // Even count: mean of the middle two.
        assert_eq!(rfc8219_median(&acc[..2], |r| r.typical), Some(25.0));
        let mut old = acc[0];
        old.1.percentiles = None;
        assert_eq!(rfc8219_median(&[acc[1], old], |r| r.typical), None);
    }
}
