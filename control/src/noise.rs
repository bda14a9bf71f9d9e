//! How far apart two arms are, and how far apart they could be by chance alone.
//!
//! Each arm of a claim gives, per run, one value per step (a step's wall time, its overlap, the
//! control's lower bound on it) — or one value per run (the process time). Each run is reduced to its
//! **median over its steps** (robust to a stalled step), and the effect is the difference of the two
//! arms' **means of those per-run medians**.
//!
//! The noise is the spread of the per-run medians, which carries both noises the experiment measured:
//! run to run (the machine's drift, which interleaving exposes) and step to step (through how much a
//! run's median moves). The effect's 95 % interval is Welch's: `estimate ± t(0.975, ν) · √(s²ₐ/nₐ +
//! s²ᵦ/nᵦ)` with the Welch–Satterthwaite degrees of freedom ν. Runs are few (5 by default), and a
//! bootstrap over so few runs makes intervals too narrow (on the doubles, 3 runs a side flagged one
//! noise difference in ten); Student's t widens the interval for few runs as it should. Half the
//! interval's width is the experiment's **resolution**: the smallest effect it can tell from none.

use serde::Serialize;

/// The effect of one arm against another, with its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Difference {
    /// mean over a's runs of their medians − the same of b.
    pub estimate: f64,
    /// The interval's lower end.
    pub low: f64,
    /// Its upper end.
    pub high: f64,
    /// (high − low) / 2: effects smaller than this are within the noise this experiment measured.
    pub resolution: f64,
}

impl Difference {
    /// Whether the interval lies wholly above 0 (a is above b beyond the noise).
    pub fn above_zero(&self) -> bool {
        self.low > 0.0
    }

    /// Whether the interval excludes 0 on either side.
    pub fn excludes_zero(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }
}

/// Student's t, 97.5th percentile, for 1..=30 degrees of freedom.
const T975: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
    2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
    2.052, 2.048, 2.045, 2.042,
];

/// t(0.975, ν) for real ν ≥ 1: the table, linear between whole degrees, then towards the normal's
/// 1.960 linearly in 1/ν (exact to the third decimal at ν = 40, 60, 120).
fn t975(nu: f64) -> f64 {
    if !nu.is_finite() || nu > 30.0 {
        let x = if nu.is_finite() { 30.0 / nu } else { 0.0 };
        return 1.960 + (T975[29] - 1.960) * x;
    }
    let nu = nu.max(1.0);
    let lo = nu.floor() as usize;
    let frac = nu - lo as f64;
    let a = T975[lo - 1];
    let b = T975[lo.min(29)];
    a + (b - a) * frac
}

/// The nearest-rank median (the ⌈n/2⌉-th smallest), as everywhere in causeway.
fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    let k = v.len().div_ceil(2) - 1;
    *v.select_nth_unstable_by(k, f64::total_cmp).1
}

/// Each run's median (runs without a finite value left out).
fn run_medians(runs: &[Vec<f64>]) -> Vec<f64> {
    runs.iter()
        .map(|r| {
            r.iter()
                .copied()
                .filter(|x| x.is_finite())
                .collect::<Vec<_>>()
        })
        .filter(|r| !r.is_empty())
        .map(|r| median(&r))
        .collect()
}

/// Mean and sample variance (0 for one value).
fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = if v.len() > 1 {
        v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)
    } else {
        0.0
    };
    (mean, var)
}

/// The effect of `a` against `b` and its 95 % interval (module documentation). `a[r]` is run r's
/// per-step values (non-finite values ignored); `None` when an arm has no value at all. With one run
/// on a side, that side's spread is unknown: the interval is unbounded.
pub fn difference(a: &[Vec<f64>], b: &[Vec<f64>]) -> Option<Difference> {
    let (ma, mb) = (run_medians(a), run_medians(b));
    if ma.is_empty() || mb.is_empty() {
        return None;
    }
    let ((xa, va), (xb, vb)) = (mean_var(&ma), mean_var(&mb));
    let estimate = xa - xb;
    let (na, nb) = (ma.len() as f64, mb.len() as f64);
    let half = if ma.len() < 2 || mb.len() < 2 {
        f64::INFINITY
    } else {
        let (qa, qb) = (va / na, vb / nb);
        let se2 = qa + qb;
        if se2 == 0.0 {
            0.0
        } else {
            let nu = se2 * se2 / (qa * qa / (na - 1.0) + qb * qb / (nb - 1.0));
            t975(nu) * se2.sqrt()
        }
    };
    Some(Difference {
        estimate,
        low: estimate - half,
        high: estimate + half,
        resolution: half,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs of `steps` values around `centre`: a per-run offset (run-to-run drift) plus a per-step
    /// wobble, both deterministic.
    fn arm(centre: f64, runs: usize, steps: usize, drift: f64, wobble: f64) -> Vec<Vec<f64>> {
        (0..runs)
            .map(|r| {
                let off = drift * ((r as f64 * 1.37 + 0.2).sin());
                (0..steps)
                    .map(|s| centre + off + wobble * ((s as f64 * 1.7 + r as f64).sin()))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn t_quantiles() {
        assert!((t975(1.0) - 12.706).abs() < 1e-9);
        assert!((t975(4.0) - 2.776).abs() < 1e-9);
        assert!((t975(4.5) - (2.776 + 2.571) / 2.0).abs() < 1e-9);
        assert!((t975(40.0) - 2.021).abs() < 0.002);
        assert!((t975(120.0) - 1.980).abs() < 0.002);
        assert!((t975(f64::INFINITY) - 1.960).abs() < 1e-9);
    }

    #[test]
    fn a_clear_effect_is_resolved_and_noise_is_not() {
        // Control bound 0.95, instrumented 0.55: 300 steps x 5 runs, a hundredth of drift.
        let d = difference(
            &arm(0.95, 5, 300, 0.01, 0.03),
            &arm(0.55, 5, 300, 0.01, 0.05),
        )
        .unwrap();
        assert!((d.estimate - 0.40).abs() < 0.02, "{d:?}");
        assert!(d.above_zero() && d.excludes_zero(), "{d:?}");
        assert!(d.resolution < 0.03, "{d:?}");
        // The same arm against itself: an effect of 0 within its own resolution.
        let same = arm(0.7, 5, 300, 0.02, 0.05);
        let d = difference(&same, &same).unwrap();
        assert_eq!(d.estimate, 0.0);
        assert!(!d.excludes_zero(), "{d:?}");
        assert!(d.resolution > 0.0);
    }

    #[test]
    fn more_noise_and_fewer_runs_mean_a_coarser_resolution() {
        let quiet = difference(
            &arm(1.0, 5, 300, 0.001, 0.01),
            &arm(1.0, 5, 300, 0.001, 0.01),
        )
        .unwrap();
        let loud = difference(&arm(1.0, 5, 300, 0.05, 0.2), &arm(1.0, 5, 300, 0.05, 0.2)).unwrap();
        assert!(
            loud.resolution > 5.0 * quiet.resolution,
            "{quiet:?} {loud:?}"
        );
        // An effect of 0.03 stands out of the quiet experiment, not out of the loud one.
        let q = difference(
            &arm(1.03, 5, 300, 0.001, 0.01),
            &arm(1.0, 5, 300, 0.001, 0.01),
        )
        .unwrap();
        let l = difference(&arm(1.03, 5, 300, 0.05, 0.2), &arm(1.0, 5, 300, 0.05, 0.2)).unwrap();
        assert!(q.above_zero(), "{q:?}");
        assert!(!l.excludes_zero(), "{l:?}");
        // Three runs a side: the same spread, a wider interval than with five.
        let three = difference(&arm(1.0, 3, 300, 0.05, 0.2), &arm(1.0, 3, 300, 0.05, 0.2)).unwrap();
        assert!(three.resolution > loud.resolution, "{three:?} {loud:?}");
    }

    #[test]
    fn one_value_per_run_and_edge_cases() {
        let a = vec![vec![10.0], vec![11.0], vec![12.0], vec![10.5], vec![11.5]];
        let b = vec![vec![20.0], vec![21.0], vec![22.0], vec![20.5], vec![21.5]];
        let d = difference(&a, &b).unwrap();
        assert!((d.estimate + 10.0).abs() < 1e-9, "{d:?}");
        assert!(d.high < 0.0 && d.excludes_zero(), "{d:?}");
        assert_eq!(difference(&[], &b), None);
        assert_eq!(difference(&[vec![f64::NAN]], &b), None);
        // One run on a side: no spread known, nothing resolved.
        let d = difference(&[vec![100.0]], &b).unwrap();
        assert!(!d.excludes_zero() && d.resolution.is_infinite(), "{d:?}");
        // No spread at all: the effect stands as it is.
        let d = difference(
            &[vec![1.0], vec![1.0], vec![1.0]],
            &[vec![0.5], vec![0.5], vec![0.5]],
        )
        .unwrap();
        assert_eq!((d.low, d.high, d.resolution), (0.5, 0.5, 0.0));
    }
}
