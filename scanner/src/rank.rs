//! Summaries of samples: nearest-rank percentiles of sorted values (`nearest_rank`) and of unsorted
//! ones without sorting them (`percentiles`), and their saturating sum (`total`). A report's largest
//! rows hold millions of samples (one per launch call), and sorting them for three values was a sixth
//! of a report's instructions.

/// The nearest-rank percentile `p` (1..=100) of sorted `v`: the smallest value with at least p% of
/// the values at or below it; `None` for no values.
pub fn nearest_rank<T: Copy>(sorted: &[T], p: u64) -> Option<T> {
    let n = sorted.len() as u64;
    if n == 0 {
        return None;
    }
    Some(sorted[rank_index(n, p)])
}

/// The sum of durations, saturating at `u64::MAX` (a hostile capture can make it overflow).
pub(crate) fn total<T: Copy + Into<u64>>(v: &[T]) -> u64 {
    v.iter().fold(0u64, |s, &x| s.saturating_add(x.into()))
}

/// The index in sorted order of the nearest-rank percentile `p` of `n > 0` values.
fn rank_index(n: u64, p: u64) -> usize {
    (p.saturating_mul(n).div_ceil(100).clamp(1, n) - 1) as usize
}

/// A sample type `percentiles` can bucket: `key` maps it to a u64 in the same order, and
/// `from_key` back (for any key of a value of the type).
pub trait Sample: Ord + Copy {
    fn key(self) -> u64;
    fn from_key(k: u64) -> Self;
}

impl Sample for u64 {
    #[inline(always)]
    fn key(self) -> u64 {
        self
    }
    #[inline(always)]
    fn from_key(k: u64) -> Self {
        k
    }
}

impl Sample for i64 {
    #[inline(always)]
    fn key(self) -> u64 {
        // Flipping the sign bit orders negatives before positives.
        (self as u64) ^ (1 << 63)
    }
    #[inline(always)]
    fn from_key(k: u64) -> Self {
        (k ^ (1 << 63)) as i64
    }
}

/// The narrow forms, keyed through the 64-bit type of their sign (the same order, the same keys).
macro_rules! narrow_samples {
    ($($t:ty => $wide:ty),*) => {$(
        impl Sample for $t {
            #[inline(always)]
            fn key(self) -> u64 {
                (self as $wide).key()
            }
            #[inline(always)]
            fn from_key(k: u64) -> Self {
                <$wide>::from_key(k) as $t
            }
        }
    )*};
}

narrow_samples!(u32 => u64, i32 => i64, u16 => u64, i16 => i64);

/// A sample type with a 32-bit and a 16-bit form that most of its values fit (`Samples`).
pub trait Wide: Sample + TryInto<Self::Narrow> + TryInto<Self::Short> {
    type Narrow: Sample + Into<Self>;
    type Short: Sample + Into<Self> + Into<Self::Narrow>;
}

impl Wide for u64 {
    type Narrow = u32;
    type Short = u16;
}

impl Wide for i64 {
    type Narrow = i32;
    type Short = i16;
}

/// `v`'s values in a wider type.
fn widen<A: Copy + Into<B>, B>(v: &[A]) -> Vec<B> {
    v.iter().map(|&x| x.into()).collect()
}

/// The samples of one row (call durations, kernel durations, launch latencies), in 16 bits while
/// every one fits (durations under 65 µs: launch calls, short kernels), in 32 while every one fits
/// (durations under 4.29 s, latencies within ±2.1 s: nearly all), else in 64. A large capture's
/// rows hold a sample per call, and on the machines measured a report's time follows the memory it
/// touches; percentiles of a narrower form are the same values (widening keeps the order).
pub enum Samples<W: Wide> {
    Short(Vec<W::Short>),
    Narrow(Vec<W::Narrow>),
    Wide(Vec<W>),
}

impl<W: Wide> Default for Samples<W> {
    fn default() -> Self {
        Samples::Short(Vec::new())
    }
}

impl<W: Wide> Samples<W> {
    #[inline(always)]
    pub fn push(&mut self, v: W) {
        match self {
            Samples::Short(s) => match TryInto::<W::Short>::try_into(v) {
                Ok(x) => s.push(x),
                Err(_) => self.push_wider(v),
            },
            Samples::Narrow(n) => match TryInto::<W::Narrow>::try_into(v) {
                Ok(x) => n.push(x),
                Err(_) => self.widened().push(v),
            },
            Samples::Wide(w) => w.push(v),
        }
    }

    /// Pushes `v`, which the 16-bit form does not hold: the samples go to 32 bits if it fits
    /// there, else to 64 (converted once).
    #[cold]
    #[inline(never)]
    fn push_wider(&mut self, v: W) {
        if TryInto::<W::Narrow>::try_into(v).is_ok() {
            self.narrowed();
            self.push(v);
        } else {
            self.widened().push(v);
        }
    }

    /// The samples in 32 bits or more, converted (once) if they were in 16.
    fn narrowed(&mut self) {
        if let Samples::Short(s) = self {
            *self = Samples::Narrow(widen(s));
        }
    }

    /// The samples in 64 bits, converted (once) if they were not.
    #[cold]
    #[inline(never)]
    fn widened(&mut self) -> &mut Vec<W> {
        match self {
            Samples::Short(s) => *self = Samples::Wide(widen(s)),
            Samples::Narrow(n) => *self = Samples::Wide(widen(n)),
            Samples::Wide(_) => {}
        }
        match self {
            Samples::Wide(w) => w,
            _ => unreachable!("widened above"),
        }
    }

    /// 0 for 16 bits, 1 for 32, 2 for 64.
    fn width(&self) -> u8 {
        match self {
            Samples::Short(_) => 0,
            Samples::Narrow(_) => 1,
            Samples::Wide(_) => 2,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Samples::Short(s) => s.len(),
            Samples::Narrow(n) => n.len(),
            Samples::Wide(w) => w.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds another row's samples (another key, another process), in the wider form of the two.
    pub fn append(&mut self, mut other: Samples<W>) {
        match self.width().max(other.width()) {
            0 => {}
            1 => {
                self.narrowed();
                other.narrowed();
            }
            _ => {
                self.widened();
                other.widened();
            }
        }
        match (&mut *self, other) {
            (Samples::Short(a), Samples::Short(b)) => append(a, b),
            (Samples::Narrow(a), Samples::Narrow(b)) => append(a, b),
            (Samples::Wide(a), Samples::Wide(b)) => append(a, b),
            _ => unreachable!("both made one width above"),
        }
    }

    /// [`percentiles`] of the samples.
    pub fn percentiles<const N: usize>(&mut self, ps: [u64; N]) -> [Option<W>; N] {
        match self {
            Samples::Short(s) => percentiles(s, ps).map(|x| x.map(Into::into)),
            Samples::Narrow(n) => percentiles(n, ps).map(|x| x.map(Into::into)),
            Samples::Wide(w) => percentiles(w, ps),
        }
    }
}

impl Samples<u64> {
    /// [`total`] of the samples.
    pub fn total(&self) -> u64 {
        match self {
            Samples::Short(s) => total(s),
            Samples::Narrow(n) => total(n),
            Samples::Wide(w) => total(w),
        }
    }
}

/// Moves `from`'s values to the end of `to`: the vector itself when `to` is empty (per-row samples
/// run to millions, and a copy of them is as much fresh memory again).
pub(crate) fn append<T>(to: &mut Vec<T>, mut from: Vec<T>) {
    if to.is_empty() {
        *to = from;
    } else {
        to.append(&mut from);
    }
}

/// Below this many values, selection alone (bucketing costs two passes and a table to clear).
const SELECT_BELOW: usize = 1 << 12;
/// Buckets of the counting pass: their counts fit in the first-level cache.
const BUCKET_BITS: u32 = 12;

/// The nearest-rank percentiles `ps` (ascending, 1..=100) of unsorted `v`, exactly as
/// `nearest_rank` of `v` sorted gives them. Many values: see [`ranked`]. May reorder `v`.
pub fn percentiles<T: Sample, const N: usize>(v: &mut [T], ps: [u64; N]) -> [Option<T>; N] {
    let n = v.len();
    if n < SELECT_BELOW {
        return by_selection(v, ps);
    }
    let ranks = ps.map(|p| rank_index(n as u64, p));
    debug_assert!(ranks.is_sorted(), "percentiles asked in ascending order");
    ranked(v, ranks).map(Some)
}

/// The values at `ranks` (ascending, each below `v.len()`) of `v` in sorted order, by radix
/// selection: one pass for the range, one that counts the values per bucket of the range's top
/// bits, one that takes out the buckets holding the ranks asked for. Buckets of one value each (the
/// range is narrow: durations clustered within a few nanoseconds) need neither the third pass nor
/// a selection; a large bucket is bucketed again by its own range (measured durations are long-tailed,
/// so most values share the bucket of the median), a small one selected. May reorder `v`.
fn ranked<T: Sample, const N: usize>(v: &mut [T], ranks: [usize; N]) -> [T; N] {
    let (lo, hi) = v.iter().fold((u64::MAX, 0), |(lo, hi), x| {
        let k = x.key();
        (lo.min(k), hi.max(k))
    });
    if lo == hi {
        return [v[0]; N];
    }
    let shift = (64 - (hi - lo).leading_zeros()).saturating_sub(BUCKET_BITS);
    // The mask changes nothing (the shift leaves BUCKET_BITS bits) but spares the bounds checks.
    let bucket = |x: &T| ((x.key() - lo) >> shift) as usize & ((1 << BUCKET_BITS) - 1);
    let mut counts = vec![0usize; 1 << BUCKET_BITS];
    for x in v.iter() {
        counts[bucket(x)] += 1;
    }
    // Per rank, its bucket and its rank among that bucket's values (buckets are ordered by value).
    let mut at = [(0usize, 0usize); N];
    let (mut b, mut below) = (0, 0);
    for (j, &k) in ranks.iter().enumerate() {
        while below + counts[b] <= k {
            below += counts[b];
            b += 1;
        }
        at[j] = (b, k - below);
    }
    // With no shift a bucket is one value, lo + its number: no value need be taken out.
    if shift == 0 {
        return at.map(|(b, _)| T::from_key(lo + b as u64));
    }
    if N == 1 {
        // One rank (a bucket bucketed again): its bucket's values are moved to the front in place,
        // so that nested levels hold no copies (a hostile row could nest five or six).
        let (b, r) = at[0];
        let mut w = 0;
        for j in 0..v.len() {
            if bucket(&v[j]) == b {
                v.swap(w, j);
                w += 1;
            }
        }
        return [in_bucket(&mut v[..w], r); N];
    }
    // The values of each distinct bucket asked for (at most N), taken out in one pass; `into` is,
    // per bucket, where its values go (`NOT_TAKEN`: nowhere), reusing the counts' table.
    const NOT_TAKEN: usize = usize::MAX;
    let mut taken: Vec<Vec<T>> = Vec::with_capacity(N);
    let mut which = [0usize; N];
    for (j, &(b, _)) in at.iter().enumerate() {
        if j == 0 || at[j - 1].0 != b {
            taken.push(Vec::with_capacity(counts[b]));
        }
        which[j] = taken.len() - 1;
    }
    let mut into = counts;
    into.fill(NOT_TAKEN);
    for (j, &(b, _)) in at.iter().enumerate() {
        into[b] = which[j];
    }
    for x in v.iter() {
        let w = into[bucket(x)];
        if w != NOT_TAKEN {
            taken[w].push(*x);
        }
    }
    let mut out = [v[0]; N];
    for (j, &(_, r)) in at.iter().enumerate() {
        out[j] = in_bucket(&mut taken[which[j]], r);
    }
    out
}

/// The value at rank `r` of one bucket's values `t`: selected when they are few, else bucketed
/// again by their own range.
fn in_bucket<T: Sample>(t: &mut [T], r: usize) -> T {
    if t.len() < SELECT_BELOW {
        *t.select_nth_unstable(r).1
    } else {
        ranked(t, [r])[0]
    }
}

/// `percentiles` by selection alone: each rank, highest first, selected among the values below the
/// last one selected.
fn by_selection<T: Ord + Copy, const N: usize>(v: &mut [T], ps: [u64; N]) -> [Option<T>; N] {
    let mut out = [None; N];
    let n = v.len() as u64;
    if n == 0 {
        return out;
    }
    // Everything at and past `bound` is at least everything before it; each selection keeps that.
    let mut bound = v.len();
    for (j, &p) in ps.iter().enumerate().rev() {
        let k = rank_index(n, p);
        debug_assert!(k <= bound, "percentiles asked in ascending order");
        if k < bound {
            v[..bound].select_nth_unstable(k);
            bound = k;
        }
        out[j] = Some(v[k]);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rows whose samples stay narrow, turn wide mid-way, or are appended in every pairing of
    /// forms give the percentiles, total and length that plain 64-bit vectors give.
    #[test]
    fn samples_narrow_or_wide_summarize_as_64_bit_vectors_do() {
        let big = u32::MAX as u64;
        let short = u16::MAX as u64;
        let cases: [Vec<u64>; 7] = [
            (0..5000).map(|i| (i * 7919) % 100_003).collect(),
            (0..5000)
                .map(|i| if i == 2500 { big + 1 } else { i * 3 })
                .collect(),
            vec![big, 0, big, 1],
            vec![u64::MAX, u64::MAX, 5],
            // All in 16 bits, the largest one included.
            (0..5000).map(|i| (i * 7919) % (short + 1)).collect(),
            // 16 bits, then one past it, then 64.
            (0..5000)
                .map(|i| match i {
                    3000 => short + 1,
                    4000 => big + 7,
                    _ => i % 300,
                })
                .collect(),
            vec![short, short + 1, 0],
        ];
        for (c, v) in cases.iter().enumerate() {
            for cut in [0, 1, v.len() / 2, v.len()] {
                let (a, b) = v.split_at(cut);
                let mut s: Samples<u64> = Samples::default();
                a.iter().for_each(|&x| s.push(x));
                let mut t: Samples<u64> = Samples::default();
                b.iter().for_each(|&x| t.push(x));
                s.append(t);
                let mut plain = v.clone();
                let ps = [1, 50, 99, 100];
                assert_eq!(s.len(), v.len());
                assert_eq!(
                    s.percentiles(ps),
                    percentiles(&mut plain, ps),
                    "case {c} cut {cut}"
                );
                assert_eq!(s.total(), total(v), "case {c} cut {cut}");
                // The narrowest form that holds every value.
                let width = match v.iter().max() {
                    Some(&m) if m > big => 2,
                    Some(&m) if m > short => 1,
                    _ => 0,
                };
                assert_eq!(s.width(), width, "case {c} cut {cut}");
            }
        }
        // Signed: negatives, and past ±2^31.
        let v: Vec<i64> = (0..6000)
            .map(|i| (i - 3000) * 1_000)
            .chain([i32::MIN as i64 - 1, i32::MAX as i64 + 1])
            .collect();
        let mut s: Samples<i64> = Samples::default();
        v.iter().take(6000).for_each(|&x| s.push(x));
        assert!(matches!(s, Samples::Narrow(_)));
        let mut plain: Vec<i64> = v[..6000].to_vec();
        assert_eq!(
            s.percentiles([1, 50, 99]),
            percentiles(&mut plain, [1, 50, 99])
        );
        v[6000..].iter().for_each(|&x| s.push(x));
        assert!(matches!(s, Samples::Wide(_)));
        let mut plain = v.clone();
        assert_eq!(
            s.percentiles([1, 50, 100]),
            percentiles(&mut plain, [1, 50, 100])
        );
        assert_eq!(s.percentiles([100])[0], Some(i32::MAX as i64 + 1));
        assert_eq!(s.len(), 6002);
        // Signed, in 16 bits: both ends of i16, then one below it.
        let v: Vec<i64> = (0..5000)
            .map(|i| (i * 37) % 65_536 - 32_768)
            .chain([i16::MIN as i64, i16::MAX as i64])
            .collect();
        let mut s: Samples<i64> = Samples::default();
        v.iter().for_each(|&x| s.push(x));
        assert!(matches!(s, Samples::Short(_)));
        let mut plain = v.clone();
        assert_eq!(
            s.percentiles([1, 50, 99, 100]),
            percentiles(&mut plain, [1, 50, 99, 100])
        );
        s.push(i16::MIN as i64 - 1);
        assert!(matches!(s, Samples::Narrow(_)));
        let mut plain: Vec<i64> = v.iter().copied().chain([i16::MIN as i64 - 1]).collect();
        assert_eq!(
            s.percentiles([1, 50, 100]),
            percentiles(&mut plain, [1, 50, 100])
        );
        assert_eq!(s.len(), 5003);
    }

    /// `from_key` undoes `key` at both ends and around 0 of every sample type, and 32-bit rows
    /// of few distinct values (the path that builds values from keys) give what sorting gives.
    #[test]
    fn keys_map_back_to_their_values() {
        fn round<T: Sample + std::fmt::Debug>(xs: &[T]) {
            for &x in xs {
                assert_eq!(T::from_key(x.key()), x);
            }
        }
        round(&[0u64, 1, u64::MAX]);
        round(&[0u32, 1, u32::MAX]);
        round(&[i64::MIN, -1, 0, 1, i64::MAX]);
        round(&[i32::MIN, -1, 0, 1, i32::MAX]);
        let mut next = xorshift(7);
        let v: Vec<i32> = (0..SELECT_BELOW * 3)
            .map(|_| (next() % 9) as i32 - 4)
            .collect();
        check(&v, "i32 around 0");
        let v: Vec<u32> = (0..SELECT_BELOW * 3)
            .map(|_| u32::MAX - (next() % 5) as u32)
            .collect();
        check(&v, "u32 near u32::MAX");
    }

    fn xorshift(seed: u64) -> impl FnMut() -> u64 {
        let mut x = seed;
        move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        }
    }

    /// What sorting gives, for the ranks a report asks and both ends.
    fn check<T: Sample + std::fmt::Debug>(v: &[T], what: &str) {
        let mut sorted = v.to_vec();
        sorted.sort_unstable();
        let ps = [1, 50, 99, 100];
        let want = ps.map(|p| nearest_rank(&sorted, p));
        assert_eq!(
            percentiles(&mut v.to_vec(), ps),
            want,
            "{what}, n {}",
            v.len()
        );
        let want = [99, 100].map(|p| nearest_rank(&sorted, p));
        assert_eq!(percentiles(&mut v.to_vec(), [99, 100]), want, "{what}");
        let want = [50, 50].map(|p| nearest_rank(&sorted, p));
        assert_eq!(percentiles(&mut v.to_vec(), [50, 50]), want, "{what}");
    }

    /// The bucketed path (from `SELECT_BELOW` values) on the shapes that stress it: few distinct
    /// values (ranks fall inside one bucket), wide and narrow ranges, far outliers (almost every
    /// value in the first bucket, bucketed again), both ends of u64, negatives, all equal.
    #[test]
    fn bucketed_percentiles_are_those_of_the_sorted_values() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15);
        for n in [SELECT_BELOW, SELECT_BELOW + 1, 5_001, 20_000, 100_003] {
            for spread in [1u64, 3, 1000, 1 << 40, u64::MAX] {
                let v: Vec<u64> = (0..n).map(|_| next() % spread.max(1)).collect();
                check(&v, &format!("u64 spread {spread}"));
            }
            let mut v: Vec<u64> = (0..n).map(|_| 1_000 + next() % 500).collect();
            v[n / 2] = u64::MAX;
            check(&v, "one outlier");
            // Bucketed again twice: the bulk shares the first bucket with 2^40, then its own.
            v[n / 3] = 1 << 40;
            check(&v, "two outliers");
            let v: Vec<u64> = (0..n).map(|_| u64::MAX - next() % 7).collect();
            check(&v, "near u64::MAX");
            let v: Vec<i64> = (0..n).map(|_| (next() % 2001) as i64 - 1000).collect();
            check(&v, "i64 around 0");
            let v: Vec<i64> = (0..n).map(|_| next() as i64).collect();
            check(&v, "i64 full range");
            check(&vec![42u64; n], "all equal");
            let v: Vec<u64> = (0..n as u64).collect();
            check(&v, "sorted");
            let v: Vec<u64> = (0..n as u64).rev().collect();
            check(&v, "reversed");
        }
    }

    #[test]
    fn selected_percentiles_are_those_of_the_sorted_values() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1d);
        for n in 0..300 {
            for spread in [3u64, 1 << 40] {
                let v: Vec<i64> = (0..n).map(|_| (next() % spread) as i64 - 1).collect();
                check(&v, &format!("spread {spread}"));
            }
        }
    }
}
