//! Which of a list of intervals sorted by begin reach a given time: the window queries of steps and
//! of the HTML page. A running maximum of the ends sent every query back to the list's start once one
//! long interval (a persistent kernel, a call that never returned) began early, so each step scanned
//! everything before it; here a tree of the largest end over blocks of the list leads a query to the
//! blocks that hold an answer.

use rayon::prelude::*;

/// Intervals per block: a query reads a block's ends in one pass.
const BLOCK: usize = 16;

/// Where a `Reach` reads interval `i`'s end: a list of ends of its own, or the intervals of a table
/// kept elsewhere (a slice of `End`s), so that an index over a table does not copy the table's ends.
/// Read on every thread while the index is made.
pub trait Ends: Sync {
    /// How many intervals there are.
    fn count(&self) -> usize;
    fn end(&self, i: usize) -> u64;
}

impl Ends for Vec<u64> {
    fn count(&self) -> usize {
        self.len()
    }
    fn end(&self, i: usize) -> u64 {
        self[i]
    }
}

/// An interval of a table kept elsewhere (a device span, a slice of the HTML page), whose end a
/// `Reach` over a slice of them reads in place (inlined into the queries' scans).
pub trait End {
    fn end(&self) -> u64;
}

impl<T: End + Sync> Ends for &[T] {
    fn count(&self) -> usize {
        self.len()
    }
    fn end(&self, i: usize) -> u64 {
        self[i].end()
    }
}

pub struct Reach<E = Vec<u64>> {
    ends: E,
    /// Block `b`'s largest end at `leaves + b`; each inner node the larger of its two children's
    /// (node 1 the root); `leaves` a power of two.
    max: Vec<u64>,
    leaves: usize,
}

impl<E: Ends> Reach<E> {
    /// `ends.end(i)` is interval `i`'s end; the intervals are sorted by begin.
    pub fn new(ends: E) -> Reach<E> {
        Reach::made(ends, true)
    }

    /// `new`, its leaves read on every thread (`parallel`: they read every interval, 3.3 M device
    /// spans at 10 M entries, 25 ms on one thread) or on this one.
    fn made(ends: E, parallel: bool) -> Reach<E> {
        let n = ends.count();
        let blocks = n.div_ceil(BLOCK).max(1);
        let leaves = blocks.next_power_of_two();
        let mut max = vec![0u64; 2 * leaves];
        let leaf = |(b, m): (usize, &mut u64)| {
            let block = b * BLOCK..((b + 1) * BLOCK).min(n);
            *m = block.map(|i| ends.end(i)).max().unwrap_or(0);
        };
        let first = &mut max[leaves..leaves + n.div_ceil(BLOCK)];
        if parallel {
            first.par_iter_mut().enumerate().for_each(leaf);
        } else {
            first.iter_mut().enumerate().for_each(leaf);
        }
        for n in (1..leaves).rev() {
            max[n] = max[2 * n].max(max[2 * n + 1]);
        }
        Reach { ends, max, leaves }
    }

    /// The intervals before index `to` whose end is at least `lo`, in index order.
    pub fn reaching(&self, lo: u64, to: usize) -> impl Iterator<Item = usize> + '_ {
        self.reaching_in(lo, 0, to)
    }

    /// The intervals of indices `from..to` whose end (value) is at least `lo`, in index order.
    pub fn reaching_in(&self, lo: u64, from: usize, to: usize) -> impl Iterator<Item = usize> + '_ {
        let to = to.min(self.ends.count());
        // Nodes still to visit, the next on top: (node, its first block, its blocks).
        let mut stack: Vec<(usize, usize, usize)> = Vec::with_capacity(64);
        if from < to {
            stack.push((1, 0, self.leaves));
        }
        let mut block: std::ops::Range<usize> = 0..0;
        std::iter::from_fn(move || loop {
            if let Some(i) = block.next() {
                if self.ends.end(i) >= lo {
                    return Some(i);
                }
                continue;
            }
            let (n, first, width) = stack.pop()?;
            if self.max[n] < lo || first * BLOCK >= to || (first + width) * BLOCK <= from {
                continue;
            }
            if width == 1 {
                block = (first * BLOCK).max(from)..((first + 1) * BLOCK).min(to);
            } else {
                let half = width / 2;
                stack.push((2 * n + 1, first + half, half));
                stack.push((2 * n, first, half));
            }
        })
    }
}

/// The largest of a list of values over a range of indices, in O(log n): the same tree over blocks,
/// for the largest conversion bound of the device spans that begin inside a step.
pub struct RangeMax {
    values: Vec<u64>,
    max: Vec<u64>,
    leaves: usize,
}

impl RangeMax {
    /// Made on this thread only: it is made inside a `OnceLock`'s initialisation (the steps'
    /// unions), which a rayon worker waiting on parallel work could enter again by taking up
    /// another step meanwhile (a deadlock).
    pub fn new(values: Vec<u64>) -> RangeMax {
        let Reach { ends, max, leaves } = Reach::made(values, false);
        RangeMax {
            values: ends,
            max,
            leaves,
        }
    }

    /// The largest value at indices `from..to` (0 when the range is empty).
    pub fn max(&self, from: usize, to: usize) -> u64 {
        let to = to.min(self.values.len());
        if from >= to {
            return 0;
        }
        let (first, last) = (from / BLOCK, (to - 1) / BLOCK);
        let scan = |r: std::ops::Range<usize>| self.values[r].iter().copied().max().unwrap_or(0);
        if first == last {
            return scan(from..to);
        }
        let mut m = scan(from..(first + 1) * BLOCK).max(scan(last * BLOCK..to));
        // The whole blocks between, bottom-up over the tree's leaves [l, r).
        let (mut l, mut r) = (self.leaves + first + 1, self.leaves + last);
        while l < r {
            if l % 2 == 1 {
                m = m.max(self.max[l]);
                l += 1;
            }
            if r % 2 == 1 {
                r -= 1;
                m = m.max(self.max[r]);
            }
            l /= 2;
            r /= 2;
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An interval kept elsewhere, as a table's row.
    struct Pair {
        _begin: u64,
        end: u64,
    }

    impl End for Pair {
        fn end(&self) -> u64 {
            self.end
        }
    }

    /// Every query answers as the scan of every interval does, with long intervals early, late
    /// and none, across block and tree boundaries.
    /// A deterministic stream of numbers (a linear congruential generator's high bits).
    fn numbers(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            seed >> 33
        }
    }

    #[test]
    fn reaching_is_every_interval_before_to_that_ends_at_or_after_lo() {
        let mut next = numbers(7);
        for n in [0usize, 1, 15, 16, 17, 100, 1000] {
            for long in [None, Some(0), Some(n / 2)] {
                let ends: Vec<u64> = (0..n as u64)
                    .map(|i| match long {
                        Some(l) if l as u64 == i => u64::MAX / 2,
                        _ => i * 10 + next() % 40,
                    })
                    .collect();
                let r = Reach::new(ends.clone());
                // The same ends read from intervals kept elsewhere (their second field).
                let pairs: Vec<Pair> = (ends.iter())
                    .map(|&e| Pair {
                        _begin: e / 2,
                        end: e,
                    })
                    .collect();
                let of = Reach::new(&pairs[..]);
                for _ in 0..50 {
                    let lo = next() % (n as u64 * 10 + 50);
                    let to = (next() % (n as u64 + 2)) as usize;
                    let want: Vec<usize> = (0..to.min(n)).filter(|&i| ends[i] >= lo).collect();
                    let got: Vec<usize> = r.reaching(lo, to).collect();
                    assert_eq!(got, want, "n {n}, long {long:?}, lo {lo}, to {to}");
                    let got: Vec<usize> = of.reaching(lo, to).collect();
                    assert_eq!(
                        got, want,
                        "in place: n {n}, long {long:?}, lo {lo}, to {to}"
                    );
                    let from = (next() % (n as u64 + 2)) as usize;
                    let want: Vec<usize> = want.into_iter().filter(|&i| i >= from).collect();
                    let got: Vec<usize> = r.reaching_in(lo, from, to).collect();
                    assert_eq!(got, want, "n {n}, lo {lo}, from {from}, to {to}");
                }
            }
        }
    }

    #[test]
    fn range_max_is_the_scan_of_the_range() {
        let mut next = numbers(11);
        for n in [0usize, 1, 15, 16, 17, 33, 100, 1000] {
            let values: Vec<u64> = (0..n).map(|_| next() % 1000).collect();
            let m = RangeMax::new(values.clone());
            for from in (0..=n).step_by(7) {
                for to in (from..=n + 3).step_by(5) {
                    let want = values[from.min(n)..to.min(n)]
                        .iter()
                        .copied()
                        .max()
                        .unwrap_or(0);
                    assert_eq!(m.max(from, to), want, "n {n} from {from} to {to}");
                }
            }
        }
    }
}
