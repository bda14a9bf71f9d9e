//! Arithmetic on half-open time intervals `(begin, end)` in nanoseconds: merging, measuring,
//! intersecting, clipping. The steps and gaps views and the control harness's busy times use it.

/// Sorts and merges half-open intervals (touching ones merge); empty ones are dropped.
pub fn union(mut v: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    v.retain(|&(b, e)| e > b);
    v.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
    for (b, e) in v {
        match out.last_mut() {
            Some(last) if b <= last.1 => last.1 = last.1.max(e),
            _ => out.push((b, e)),
        }
    }
    out
}

/// Total length of merged intervals.
pub fn measure(u: &[(u64, u64)]) -> u64 {
    u.iter().map(|&(b, e)| e - b).sum()
}

/// The non-empty pieces of a ∩ b for two merged (sorted, disjoint) interval lists, in order.
fn overlaps<'a>(a: &'a [(u64, u64)], b: &'a [(u64, u64)]) -> impl Iterator<Item = (u64, u64)> + 'a {
    let (mut i, mut j) = (0, 0);
    std::iter::from_fn(move || {
        while i < a.len() && j < b.len() {
            let lo = a[i].0.max(b[j].0);
            let hi = a[i].1.min(b[j].1);
            if a[i].1 < b[j].1 {
                i += 1;
            } else {
                j += 1;
            }
            if hi > lo {
                return Some((lo, hi));
            }
        }
        None
    })
}

/// |a ∩ b| for two merged (sorted, disjoint) interval lists.
pub fn intersection(a: &[(u64, u64)], b: &[(u64, u64)]) -> u64 {
    overlaps(a, b).map(|(lo, hi)| hi - lo).sum()
}

/// a ∩ b for two merged (sorted, disjoint) interval lists, as a merged list.
pub fn intersect(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    overlaps(a, b).collect()
}

/// Intervals sorted by begin, each ending at or before the next begins, with the running total of
/// their lengths: how much of them lies in a window, and how many meet it, in O(log n). For windows
/// that hold much of a capture (a step as long as the run, nested steps of one name each holding
/// those inside it), where clipping and merging each window's intervals was quadratic in all.
pub struct Measured {
    iv: Vec<(u64, u64)>,
    /// `before[k]`: the total length of the first `k` intervals (disjoint, so it cannot overflow).
    before: Vec<u64>,
}

impl Measured {
    /// `iv` as it is, when it is sorted and disjoint (`b ≤ e`, each end at or before the next
    /// begin); `iv` back otherwise.
    pub fn new(iv: Vec<(u64, u64)>) -> Result<Measured, Vec<(u64, u64)>> {
        let ordered = iv.iter().all(|&(b, e)| b <= e) && iv.windows(2).all(|w| w[0].1 <= w[1].0);
        if !ordered {
            return Err(iv);
        }
        let mut before = Vec::with_capacity(iv.len() + 1);
        before.push(0);
        let mut total = 0u64;
        for &(b, e) in &iv {
            total += e - b;
            before.push(total);
        }
        Ok(Measured { iv, before })
    }

    /// `union(v)`, measured.
    pub fn of_union(v: Vec<(u64, u64)>) -> Measured {
        Measured::new(union(v)).expect("a union is sorted and disjoint")
    }

    /// The length of the intervals' part in [lo, hi), and how many of them meet it (begin < hi and
    /// end > lo): what clipping them to the window and merging the parts gives.
    pub fn within(&self, lo: u64, hi: u64) -> (u64, u64) {
        let from = self.iv.partition_point(|&(_, e)| e <= lo);
        let to = self.iv.partition_point(|&(b, _)| b < hi);
        if to <= from {
            return (0, 0);
        }
        let mut total = self.before[to] - self.before[from];
        let (first, _) = self.iv[from];
        let (_, last) = self.iv[to - 1];
        total -= lo.saturating_sub(first) + last.saturating_sub(hi);
        (total, (to - from) as u64)
    }
}

pub fn clip(b: u64, e: u64, lo: u64, hi: u64) -> (u64, u64) {
    (b.max(lo), e.min(hi))
}

/// The share of the smaller of two measures that overlaps the other; `None` when either is 0.
pub fn overlap_ratio(overlap: u64, a: u64, b: u64) -> Option<f64> {
    let m = a.min(b);
    (m > 0).then(|| overlap as f64 / m as f64)
}
