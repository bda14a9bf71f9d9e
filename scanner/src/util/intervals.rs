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

/// |a ∩ b| for two merged (sorted, disjoint) interval lists.
pub fn intersection(a: &[(u64, u64)], b: &[(u64, u64)]) -> u64 {
    let (mut i, mut j, mut total) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if hi > lo {
            total += hi - lo;
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
    total
}

pub fn clip(b: u64, e: u64, lo: u64, hi: u64) -> (u64, u64) {
    (b.max(lo), e.min(hi))
}

/// The share of the smaller of two measures that overlaps the other; `None` when either is 0.
pub fn overlap_ratio(overlap: u64, a: u64, b: u64) -> Option<f64> {
    let m = a.min(b);
    (m > 0).then(|| overlap as f64 / m as f64)
}
