//! The statistics `compare` needs to judge two runs over their repetitions: the two-sample
//! t-test of two small samples, and Holm's step-down adjustment that keeps the chance of any
//! false alarm over all the cases of a plan at the level asked for (docs/report.md,
//! "compare").
//!
//! Pure arithmetic on `f64`, no dependencies: the Student t distribution's tail comes from the
//! regularized incomplete beta function (a continued fraction, as in Numerical Recipes §6.4).

/// A two-sample t-test: the statistic, its degrees of freedom and the two-sided p-value of
/// "both have the same mean".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TTest {
    /// (mean(b) − mean(a)) / standard error of that difference.
    pub t: f64,
    /// Degrees of freedom (not a whole number in general).
    pub df: f64,
    /// Two-sided p-value.
    pub p: f64,
}

/// The t-test of `b` against `a`, each with at least two values: the statistic
/// (mean(b) − mean(a)) / √(s²a/na + s²b/nb). With samples of one size (as two runs of one plan
/// have) that is Student's pooled-variance t on na + nb − 2 degrees of freedom, which stays
/// close to its level when the two variances differ (equal sizes make it so); with sizes that
/// differ, Welch's test, on the Welch–Satterthwaite degrees of freedom. With three repetitions
/// a side Welch's degrees of freedom fall towards 2 whenever one side happens to spread less,
/// and its test then calls almost nothing at a plan-wide level (docs/report.md, "compare").
///
/// `floor_a` and `floor_b` are added to each sample's variance: what one observation is
/// uncertain by whatever its repetitions show (a search's lower bound lies anywhere in its
/// final step, so w²/12 for a step of w), so three identical figures do not make an infinitely
/// sure mean. `None` with fewer than two values on a side or values that are not finite.
pub fn t_test(a: &[f64], b: &[f64], floor_a: f64, floor_b: f64) -> Option<TTest> {
    let (ma, va) = mean_var(a)?;
    let (mb, vb) = mean_var(b)?;
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = ((va + floor_a.max(0.0)) / na, (vb + floor_b.max(0.0)) / nb);
    let se2 = sa + sb;
    let diff = mb - ma;
    if se2 <= 0.0 {
        // No spread at all on either side: equal means are no change, unequal ones certain.
        let (t, p) = if diff == 0.0 {
            (0.0, 1.0)
        } else {
            (diff.signum() * f64::INFINITY, 0.0)
        };
        return Some(TTest {
            t,
            df: na + nb - 2.0,
            p,
        });
    }
    let df = if a.len() == b.len() {
        na + nb - 2.0
    } else {
        se2 * se2 / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0))
    };
    let t = diff / se2.sqrt();
    Some(TTest {
        t,
        df,
        p: student_t_two_sided(t, df),
    })
}

/// One case of two runs on a log scale: how far B's mean lies from A's, and how sure the
/// repetitions are of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogRatio {
    /// ln(mean(b) / mean(a)).
    pub d: f64,
    /// Its variance from the repetitions (delta method): s²/(n·m²) of each side, the floor
    /// added to each s².
    pub v: f64,
    /// Degrees of freedom of `v`: na + nb − 2 for samples of one size, Welch–Satterthwaite's
    /// otherwise (as [`t_test`]).
    pub df: f64,
}

/// The [`LogRatio`] of `b` against `a` (each at least two finite values with a positive mean;
/// floors as in [`t_test`]). A ratio, not a difference, so that cases of any rate share one
/// scale and the runs' drift can be estimated over all of them ([`drift_variance`]).
pub fn log_ratio(a: &[f64], b: &[f64], floor_a: f64, floor_b: f64) -> Option<LogRatio> {
    let (ma, va) = mean_var(a)?;
    let (mb, vb) = mean_var(b)?;
    if ma <= 0.0 || mb <= 0.0 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let sa = (va + floor_a.max(0.0)) / (na * ma * ma);
    let sb = (vb + floor_b.max(0.0)) / (nb * mb * mb);
    let df = if a.len() == b.len() || sa + sb <= 0.0 {
        na + nb - 2.0
    } else {
        (sa + sb).powi(2) / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0))
    };
    Some(LogRatio {
        d: (mb / ma).ln(),
        v: sa + sb,
        df,
    })
}

/// How much the cases of two runs moved beyond what their repetitions allow, as a variance on
/// the log scale: the median over the cases of d² − v, 0 when that is negative. Under "no
/// case changed" each d has variance v + τ², where τ² is the runs' drift (a shared or busy
/// machine, a different moment: what repetitions taken back to back cannot see), so d² − v
/// estimates τ²; the median keeps up to half of the cases changing from passing for drift.
/// `None` for fewer than [`DRIFT_MIN_CASES`] cases, too few to estimate it.
pub fn drift_variance(cases: &[LogRatio]) -> Option<f64> {
    if cases.len() < DRIFT_MIN_CASES {
        return None;
    }
    let mut excess: Vec<f64> = cases.iter().map(|c| c.d * c.d - c.v).collect();
    excess.sort_by(f64::total_cmp);
    let n = excess.len();
    let median = if n % 2 == 1 {
        excess[n / 2]
    } else {
        (excess[n / 2 - 1] + excess[n / 2]) / 2.0
    };
    Some(median.max(0.0))
}

/// Cases a run pair needs before [`drift_variance`] estimates the drift between them.
pub const DRIFT_MIN_CASES: usize = 4;

/// Mean and sample variance (n − 1), for two or more finite values.
fn mean_var(v: &[f64]) -> Option<(f64, f64)> {
    if v.len() < 2 || v.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let n = v.len() as f64;
    let m = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    Some((m, var))
}

/// P(|T| ≥ |t|) for Student's t with `df` degrees of freedom: I_{df/(df+t²)}(df/2, 1/2).
pub fn student_t_two_sided(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return 1.0;
    }
    if t.is_infinite() {
        return 0.0;
    }
    let x = df / (df + t * t);
    incomplete_beta(df / 2.0, 0.5, x).clamp(0.0, 1.0)
}

/// Holm's step-down adjustment of `p` (any order): the adjusted p-value of each test, so that
/// rejecting where it is below α keeps the chance of one or more false rejections among all of
/// them at most α, whatever their dependence. The i-th smallest gets max over j ≤ i of
/// min(1, (m − j + 1) · p_(j)).
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&i, &j| p[i].total_cmp(&p[j]));
    let mut out = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in order.iter().enumerate() {
        let adjusted = ((m - rank) as f64 * p[i]).min(1.0);
        running = running.max(adjusted);
        out[i] = running;
    }
    out
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, nine coefficients; about 15 digits).
fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1 − x) = π / sin(πx).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = C[0];
    let t = x + G + 0.5;
    for (i, c) in C.iter().enumerate().skip(1) {
        a += c / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function I_x(a, b), 0 ≤ x ≤ 1.
fn incomplete_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    // The continued fraction converges fast for x < (a + 1) / (a + b + 2); else use symmetry.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(a, b, x) / a
    } else {
        1.0 - front * beta_fraction(b, a, 1.0 - x) / b
    }
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_fraction(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const EPS: f64 = 1e-15;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..=300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < EPS {
            break;
        }
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two-sided 5 % critical values of Student's t from the printed tables give p = 0.05, and
    /// 1 % ones p = 0.01; t = 0 gives 1.
    #[test]
    fn student_t_tails_match_the_printed_tables() {
        for (t, df, p) in [
            (12.706, 1.0, 0.05),
            (4.303, 2.0, 0.05),
            (2.776, 4.0, 0.05),
            (2.228, 10.0, 0.05),
            (1.960, 1e6, 0.05),
            (9.925, 2.0, 0.01),
            (4.604, 4.0, 0.01),
        ] {
            let got = student_t_two_sided(t, df);
            assert!((got - p).abs() < 2e-4, "t={t} df={df}: {got}");
        }
        assert!((student_t_two_sided(0.0, 3.0) - 1.0).abs() < 1e-12);
        assert_eq!(student_t_two_sided(f64::INFINITY, 3.0), 0.0);
        assert_eq!(student_t_two_sided(f64::NAN, 3.0), 1.0);
    }

    /// A textbook case worked by hand: a = 1, 2, 3 and b = 4, 5, 6 have t = 3/√(2/3) = 3.674
    /// on 4 degrees of freedom, p ≈ 0.0213.
    #[test]
    fn t_test_of_two_small_samples() {
        let w = t_test(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 0.0, 0.0).unwrap();
        assert!((w.t - 3.674_234_6).abs() < 1e-6, "{w:?}");
        assert!((w.df - 4.0).abs() < 1e-9, "{w:?}");
        assert!((w.p - 0.021_311).abs() < 1e-4, "{w:?}");
        // Symmetric, and the floor widens the error: the same difference is less sure.
        let back = t_test(&[4.0, 5.0, 6.0], &[1.0, 2.0, 3.0], 0.0, 0.0).unwrap();
        assert!((back.t + w.t).abs() < 1e-12 && (back.p - w.p).abs() < 1e-12);
        let floored = t_test(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0], 1.0, 1.0).unwrap();
        assert!(floored.p > w.p, "{floored:?}");
        // Equal sizes keep n_a + n_b − 2 degrees of freedom however the spreads differ;
        // unequal sizes take Welch's: 1, 2, 3 against 10, 10, 10, 10 (variance 0) has the
        // first sample's 2.
        let lopsided = t_test(&[1.0, 2.0, 3.0], &[10.0, 10.5, 9.5], 0.0, 0.0).unwrap();
        assert!((lopsided.df - 4.0).abs() < 1e-12, "{lopsided:?}");
        let welch = t_test(&[1.0, 2.0, 3.0], &[10.0; 4], 0.0, 0.0).unwrap();
        assert!((welch.df - 2.0).abs() < 1e-9, "{welch:?}");
        assert!(
            (welch.t - 8.0 / (1.0f64 / 3.0).sqrt()).abs() < 1e-9,
            "{welch:?}"
        );
        // No spread anywhere: equal is no change, unequal certain; too few values: no test.
        assert_eq!(t_test(&[5.0; 3], &[5.0; 3], 0.0, 0.0).unwrap().p, 1.0);
        assert_eq!(t_test(&[5.0; 3], &[6.0; 3], 0.0, 0.0).unwrap().p, 0.0);
        assert!(t_test(&[5.0], &[6.0, 7.0], 0.0, 0.0).is_none());
        assert!(t_test(&[5.0, f64::NAN], &[6.0, 7.0], 0.0, 0.0).is_none());
    }

    /// ln of the ratio of means with the delta method's variance: 1, 2, 3 against 2, 4, 6 is
    /// ln 2, and each side contributes s²/(n·m²) = 1/(3·4) and 4/(3·16).
    #[test]
    fn log_ratio_and_the_drift_the_cases_show() {
        let r = log_ratio(&[1.0, 2.0, 3.0], &[2.0, 4.0, 6.0], 0.0, 0.0).unwrap();
        assert!((r.d - 2f64.ln()).abs() < 1e-12, "{r:?}");
        assert!((r.v - (1.0 / 12.0 + 4.0 / 48.0)).abs() < 1e-12, "{r:?}");
        assert_eq!(r.df, 4.0);
        assert!(log_ratio(&[0.0, 0.0], &[1.0, 2.0], 0.0, 0.0).is_none());
        // Drift: the median of d² − v; cases that moved no more than their repetitions say
        // give none, and two cases that moved a lot among five do not make the others drift.
        let case = |d: f64, v: f64| LogRatio { d, v, df: 4.0 };
        let quiet = [
            case(0.01, 0.0004),
            case(-0.02, 0.0004),
            case(0.0, 0.0001),
            case(0.015, 0.0009),
        ];
        assert_eq!(drift_variance(&quiet), Some(0.0));
        let two_changed = [quiet.to_vec(), vec![case(0.3, 0.0004)]].concat();
        let two_changed = [two_changed, vec![case(-0.4, 0.0004)]].concat();
        assert_eq!(drift_variance(&two_changed), Some(0.0));
        // Every case moved by about 0.1 beyond its spread of 0.01: drift of 0.1.
        let drifted: Vec<LogRatio> = [0.1, -0.1, 0.1, -0.1, 0.1]
            .iter()
            .map(|d| case(*d, 0.0001))
            .collect();
        let t2 = drift_variance(&drifted).unwrap();
        assert!(
            (t2.sqrt() - (0.01f64 - 0.0001).sqrt()).abs() < 1e-12,
            "{t2}"
        );
        assert_eq!(drift_variance(&drifted[..3]), None);
    }

    /// Holm multiplies the smallest p by m, the next by m − 1, …, never letting an adjusted p
    /// fall below one before it, and caps at 1; the order of the input is kept.
    #[test]
    fn holm_steps_down_and_keeps_order() {
        let adj = holm(&[0.04, 0.001, 0.03, 0.5]);
        let want = [0.09, 0.004, 0.09, 0.5];
        for (g, w) in adj.iter().zip(want) {
            assert!((g - w).abs() < 1e-12, "{adj:?}");
        }
        assert!(holm(&[]).is_empty());
        assert_eq!(holm(&[0.7, 0.9]), vec![1.0, 1.0]);
    }
}
