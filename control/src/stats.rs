//! Spreads (min / median / max) and the comparisons the marks are made of.
//!
//! Medians are nearest-rank (the ⌈n/2⌉-th smallest value: the lower of the two middle values for an
//! even count), the rule used everywhere else in causeway. Values that are not finite are ignored.

use serde::Serialize;

/// min, median and max of `n` values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    pub n: usize,
    pub min: f64,
    pub median: f64,
    pub max: f64,
}

impl Spread {
    /// `None` without any finite value.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
        v.sort_by(f64::total_cmp);
        Some(Spread {
            n: v.len(),
            min: *v.first()?,
            median: median_sorted(&v)?,
            max: *v.last()?,
        })
    }

    /// Whether every value of `self` is above every value of `other` (`self.min > other.max`).
    pub fn above(&self, other: &Spread) -> bool {
        self.min > other.max
    }

    /// Whether the two ranges [min, max] have no value in common.
    pub fn disjoint(&self, other: &Spread) -> bool {
        self.above(other) || other.above(self)
    }
}

fn median_sorted(v: &[f64]) -> Option<f64> {
    let n = v.len();
    (n > 0).then(|| v[n.div_ceil(2) - 1])
}

/// The nearest-rank median of `values` (finite ones), `None` when there is none.
pub fn median(values: &[f64]) -> Option<f64> {
    Spread::of(values).map(|s| s.median)
}

/// `a / b`, `None` when `b` is 0 or either is not finite.
pub fn ratio(a: f64, b: f64) -> Option<f64> {
    (b != 0.0 && a.is_finite() && b.is_finite()).then(|| a / b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_of_fixed_values() {
        let s = Spread::of(&[3.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!(
            s,
            Spread {
                n: 4,
                min: 1.0,
                median: 2.0, // nearest rank: the 2nd of 4
                max: 10.0
            }
        );
        let s = Spread::of(&[5.0, f64::NAN, 4.0, 6.0, f64::INFINITY]).unwrap();
        assert_eq!((s.n, s.min, s.median, s.max), (3, 4.0, 5.0, 6.0));
        assert_eq!(Spread::of(&[]), None);
        assert_eq!(Spread::of(&[f64::NAN]), None);
        assert_eq!(median(&[7.0]), Some(7.0));
    }

    #[test]
    fn ranges_compare_by_their_ends() {
        let low = Spread::of(&[0.0, 0.05, 0.1]).unwrap();
        let high = Spread::of(&[0.9, 0.95]).unwrap();
        let touching = Spread::of(&[0.1, 0.5]).unwrap();
        assert!(high.above(&low) && !low.above(&high));
        assert!(low.disjoint(&high) && high.disjoint(&low));
        // Sharing one value is not excluding.
        assert!(!touching.above(&low) && !low.disjoint(&touching));
    }

    #[test]
    fn ratios() {
        assert_eq!(ratio(3.0, 2.0), Some(1.5));
        assert_eq!(ratio(3.0, 0.0), None);
        assert_eq!(ratio(f64::NAN, 2.0), None);
    }
}
