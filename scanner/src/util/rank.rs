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

/// A 16-bit sample type, numbered in order from 0 to 65 535 (the bins of [`Counts`]).
pub trait Bin: Sample {
    fn bin(self) -> usize;
    fn from_bin(b: usize) -> Self;
}

impl Bin for u16 {
    #[inline(always)]
    fn bin(self) -> usize {
        self as usize
    }
    #[inline(always)]
    fn from_bin(b: usize) -> Self {
        b as u16
    }
}

impl Bin for i16 {
    #[inline(always)]
    fn bin(self) -> usize {
        // Flipping the sign bit orders negatives before positives.
        (self as u16 ^ 0x8000) as usize
    }
    #[inline(always)]
    fn from_bin(b: usize) -> Self {
        (b as u16 ^ 0x8000) as i16
    }
}

/// A sample type with a 32-bit and a 16-bit form that most of its values fit (`Samples`).
pub trait Wide: Sample + TryInto<Self::Narrow> + TryInto<Self::Short> {
    type Narrow: Sample + Into<Self>;
    type Short: Bin + Into<Self> + Into<Self::Narrow>;
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
/// touches; percentiles of a narrower form are the same values (widening keeps the order). Past
/// `COUNT_FROM` samples, 16-bit ones are counted per value instead (`Counted`: 256 KiB however
/// many, where the launch rows of a 10 M-entry capture held 6.5 MB each), which gives the same
/// percentiles and total.
pub enum Samples<W: Wide> {
    Short(Vec<W::Short>),
    Counted(Counts<W::Short>),
    Narrow(Vec<W::Narrow>),
    Wide(Vec<W>),
}

/// 16-bit samples past this many are counted rather than kept: the counts' table takes the memory
/// of this many samples.
pub const COUNT_FROM: usize = BINS * size_of::<u32>() / size_of::<u16>();

/// Bins of [`Counts`]: one per 16-bit value.
const BINS: usize = 1 << 16;

/// The most samples a [`Counts`] holds: then no bin can pass `u32::MAX`. (Lower in the unit tests,
/// so that what happens past it can be tested without 2^32 samples.)
const COUNTS_HOLD: u64 = if cfg!(test) {
    3 * COUNT_FROM as u64
} else {
    u32::MAX as u64
};

/// 16-bit samples as a count per value: their nearest-rank percentiles and total are read off the
/// counts exactly.
pub struct Counts<S> {
    /// How many samples of each value (`Bin::bin`'s order), `BINS` of them.
    bins: Box<[u32]>,
    /// How many samples in all, at most `COUNTS_HOLD`.
    n: u64,
    _values: std::marker::PhantomData<S>,
}

impl<S: Bin> Counts<S> {
    /// The counts of `v`'s values (at most `COUNTS_HOLD` of them).
    fn of(v: &[S]) -> Self {
        let mut c = Counts {
            bins: vec![0u32; BINS].into_boxed_slice(),
            n: 0,
            _values: std::marker::PhantomData,
        };
        debug_assert!(c.room(v.len()));
        v.iter().for_each(|&x| c.count(x));
        c
    }

    /// Whether `more` samples can be counted in.
    fn room(&self, more: usize) -> bool {
        self.n.saturating_add(more as u64) <= COUNTS_HOLD
    }

    /// Counts one more `x`, if there is room (false: not counted).
    #[inline(always)]
    fn add(&mut self, x: S) -> bool {
        let room = self.n < COUNTS_HOLD;
        if room {
            self.count(x);
        }
        room
    }

    /// Counts one more `x`; the caller saw to the room.
    #[inline(always)]
    fn count(&mut self, x: S) {
        // The mask changes nothing (a bin is below BINS) but spares the bounds check.
        self.bins[x.bin() & (BINS - 1)] += 1;
        self.n += 1;
    }

    /// Every sample, in ascending order, in a wider type.
    fn values<T: Copy>(&self) -> Vec<T>
    where
        S: Into<T>,
    {
        let mut v = Vec::with_capacity(self.n as usize);
        for (b, &c) in self.bins.iter().enumerate() {
            v.extend(std::iter::repeat_n(S::from_bin(b).into(), c as usize));
        }
        v
    }

    /// The values at nearest-rank percentiles `ps` (ascending).
    fn percentiles<const N: usize>(&self, ps: [u64; N]) -> [Option<S>; N] {
        if self.n == 0 {
            return [None; N];
        }
        let mut out = [None; N];
        // `below`: the samples in bins before `b`.
        let (mut b, mut below) = (0usize, 0u64);
        for (j, &p) in ps.iter().enumerate() {
            let k = rank_index(self.n, p) as u64;
            debug_assert!(
                j == 0 || ps[j - 1] <= p,
                "percentiles asked in ascending order"
            );
            while below + u64::from(self.bins[b]) <= k {
                below += u64::from(self.bins[b]);
                b += 1;
            }
            out[j] = Some(S::from_bin(b));
        }
        out
    }

    /// The saturating sum of the samples.
    fn total(&self) -> u64
    where
        S: Into<u64>,
    {
        self.bins.iter().enumerate().fold(0u64, |t, (b, &c)| {
            let v: u64 = S::from_bin(b).into();
            t.saturating_add(v.saturating_mul(u64::from(c)))
        })
    }
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
                Ok(x) if s.len() < COUNT_FROM => s.push(x),
                _ => self.push_wider(v),
            },
            Samples::Counted(c) => match TryInto::<W::Short>::try_into(v) {
                Ok(x) if c.add(x) => {}
                _ => self.push_wider(v),
            },
            Samples::Narrow(n) => match TryInto::<W::Narrow>::try_into(v) {
                Ok(x) => n.push(x),
                Err(_) => self.widened().push(v),
            },
            Samples::Wide(w) => w.push(v),
        }
    }

    /// Pushes `v`, which the 16-bit form at hand does not take: a 16-bit value onto `COUNT_FROM`
    /// kept samples starts their counts; a wider one, or a 16-bit one that the counts have no room
    /// for, takes the samples to 32 bits if it fits there, else to 64 (converted once).
    #[cold]
    #[inline(never)]
    fn push_wider(&mut self, v: W) {
        if let (Samples::Short(s), Ok(x)) = (&*self, TryInto::<W::Short>::try_into(v)) {
            if (s.len() as u64) < COUNTS_HOLD {
                let mut c = Counts::of(s);
                c.count(x);
                *self = Samples::Counted(c);
                return;
            }
        }
        if TryInto::<W::Narrow>::try_into(v).is_ok() {
            self.narrowed();
            self.push(v);
        } else {
            self.widened().push(v);
        }
    }

    /// The samples in 32 bits or more, converted (once) if they were in 16.
    fn narrowed(&mut self) {
        match self {
            Samples::Short(s) => *self = Samples::Narrow(widen(s)),
            Samples::Counted(c) => *self = Samples::Narrow(c.values()),
            _ => {}
        }
    }

    /// The samples in 64 bits, converted (once) if they were not.
    #[cold]
    #[inline(never)]
    fn widened(&mut self) -> &mut Vec<W> {
        match self {
            Samples::Short(s) => *self = Samples::Wide(widen(s)),
            Samples::Counted(c) => *self = Samples::Wide(c.values()),
            Samples::Narrow(n) => *self = Samples::Wide(widen(n)),
            Samples::Wide(_) => {}
        }
        match self {
            Samples::Wide(w) => w,
            _ => unreachable!("widened above"),
        }
    }

    /// 0 for 16 bits (kept or counted), 1 for 32, 2 for 64.
    fn width(&self) -> u8 {
        match self {
            Samples::Short(_) | Samples::Counted(_) => 0,
            Samples::Narrow(_) => 1,
            Samples::Wide(_) => 2,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Samples::Short(s) => s.len(),
            Samples::Counted(c) => c.n as usize,
            Samples::Narrow(n) => n.len(),
            Samples::Wide(w) => w.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Adds another row's samples (another key, another process), in the wider form of the two.
    pub fn append(&mut self, mut other: Samples<W>) {
        // Kept 16-bit samples and counts of them: counted in, where the counts have room.
        if matches!((&*self, &other), (Samples::Short(_), Samples::Counted(_))) {
            std::mem::swap(self, &mut other);
        }
        match (&mut *self, &other) {
            (Samples::Counted(a), Samples::Short(b)) if a.room(b.len()) => {
                b.iter().for_each(|&x| a.count(x));
                return;
            }
            (Samples::Counted(a), Samples::Counted(b)) if a.room(b.n as usize) => {
                a.bins
                    .iter_mut()
                    .zip(&b.bins[..])
                    .for_each(|(x, y)| *x += y);
                a.n += b.n;
                return;
            }
            _ => {}
        }
        let counted = matches!(self, Samples::Counted(_)) || matches!(other, Samples::Counted(_));
        // Counts without room for the other's samples go to 32 bits, as a count too many does.
        match self.width().max(other.width()).max(u8::from(counted)) {
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
            (Samples::Short(a), Samples::Short(b)) => {
                append(a, b);
                if a.len() >= COUNT_FROM && a.len() as u64 <= COUNTS_HOLD {
                    *self = Samples::Counted(Counts::of(a));
                }
            }
            (Samples::Narrow(a), Samples::Narrow(b)) => append(a, b),
            (Samples::Wide(a), Samples::Wide(b)) => append(a, b),
            _ => unreachable!("both made one width above"),
        }
    }

    /// [`percentiles`] of the samples.
    pub fn percentiles<const N: usize>(&mut self, ps: [u64; N]) -> [Option<W>; N] {
        match self {
            Samples::Short(s) => percentiles(s, ps).map(|x| x.map(Into::into)),
            Samples::Counted(c) => c.percentiles(ps).map(|x| x.map(Into::into)),
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
            Samples::Counted(c) => c.total(),
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

    /// The summaries a plain 64-bit vector gives, for comparing a row with.
    fn plain<T: Sample>(v: &[T]) -> ([Option<T>; 4], usize) {
        (percentiles(&mut v.to_vec(), [1, 50, 99, 100]), v.len())
    }

    /// Rows of more than `COUNT_FROM` 16-bit samples are counted, and give the percentiles, total
    /// and length of the kept values: alone, after a wider value (32 and 64 bits), past the counts'
    /// room, and appended in every pairing with the other forms.
    #[test]
    fn counted_samples_summarize_as_kept_ones_do() {
        let mut next = xorshift(0x51_7cc1_b727_220a);
        let n = COUNT_FROM + 12_345;
        let short = u16::MAX as u64;
        let shapes: [Vec<u64>; 4] = [
            (0..n).map(|_| 900 + next() % 300).collect(),
            (0..n).map(|_| next() % (short + 1)).collect(),
            (0..n).map(|i| if i % 2 == 0 { 0 } else { short }).collect(),
            vec![7; n],
        ];
        for (c, v) in shapes.iter().enumerate() {
            let mut s: Samples<u64> = Samples::default();
            v[..COUNT_FROM].iter().for_each(|&x| s.push(x));
            assert!(
                matches!(s, Samples::Short(_)),
                "shape {c}: kept up to COUNT_FROM"
            );
            s.push(v[COUNT_FROM]);
            assert!(
                matches!(s, Samples::Counted(_)),
                "shape {c}: counted past it"
            );
            v[COUNT_FROM + 1..].iter().for_each(|&x| s.push(x));
            assert_eq!(
                (s.percentiles([1, 50, 99, 100]), s.len()),
                plain(v),
                "shape {c}"
            );
            assert_eq!(s.total(), total(v), "shape {c}");
            // Then a 32-bit value, then a 64-bit one: the counts are expanded once.
            for (extra, width) in [(short + 1, 1), (u32::MAX as u64 + 1, 2)] {
                s.push(extra);
                let mut w = v.clone();
                w.push(short + 1);
                if width == 2 {
                    w.push(extra);
                }
                assert_eq!(s.width(), width, "shape {c}");
                assert_eq!(
                    (s.percentiles([1, 50, 99, 100]), s.len()),
                    plain(&w),
                    "shape {c}"
                );
                assert_eq!(s.total(), total(&w), "shape {c}");
            }
        }
        // Signed, both ends of i16 and around 0.
        let v: Vec<i64> = (0..n)
            .map(|i| match i % 5 {
                0 => i16::MIN as i64,
                1 => i16::MAX as i64,
                _ => (next() % 41) as i64 - 20,
            })
            .collect();
        let mut s: Samples<i64> = Samples::default();
        v.iter().for_each(|&x| s.push(x));
        assert!(matches!(s, Samples::Counted(_)));
        assert_eq!((s.percentiles([1, 50, 99, 100]), s.len()), plain(&v));
        s.push(i16::MIN as i64 - 1);
        let w: Vec<i64> = v.iter().copied().chain([i16::MIN as i64 - 1]).collect();
        assert!(matches!(s, Samples::Narrow(_)));
        assert_eq!((s.percentiles([1, 50, 99, 100]), s.len()), plain(&w));
        // Past the counts' room: the next 16-bit value takes the row to 32 bits.
        let v: Vec<u64> = (0..COUNTS_HOLD + 1).map(|i| i % 1000).collect();
        let mut s: Samples<u64> = Samples::default();
        v.iter().take(COUNTS_HOLD as usize).for_each(|&x| s.push(x));
        assert!(matches!(s, Samples::Counted(_)));
        s.push(v[COUNTS_HOLD as usize]);
        assert_eq!(s.width(), 1);
        assert_eq!((s.percentiles([1, 50, 99, 100]), s.len()), plain(&v));
        // Kept samples as many as the counts hold (a form only a direct construction makes):
        // the next 16-bit value takes them to 32 bits, not to counts that would overflow.
        let mut s: Samples<u64> = Samples::Short(vec![5; COUNTS_HOLD as usize]);
        s.push(6);
        assert_eq!(s.width(), 1);
        assert_eq!(s.percentiles([100]), [Some(6)]);
        assert_eq!(s.len(), COUNTS_HOLD as usize + 1);
        // Appends: kept and counted rows in every pairing, and counted with wider ones; the
        // counted pairs also past the counts' room (to 32 bits).
        let parts: [(usize, u64); 6] = [
            (100, 0),
            (COUNT_FROM - 1, 0),
            (COUNT_FROM + 1, 0),
            (2 * COUNT_FROM, 0),
            (COUNTS_HOLD as usize - 50, 0),
            (10, u32::MAX as u64 + 5),
        ];
        let row = |len: usize, wide: u64, next: &mut dyn FnMut() -> u64| -> Vec<u64> {
            let mut r: Vec<u64> = (0..len).map(|_| 1000 + next() % 5000).collect();
            if wide > 0 {
                r.push(wide);
            }
            r
        };
        for &(la, wa) in &parts {
            for &(lb, wb) in &parts {
                let (a, b) = (row(la, wa, &mut next), row(lb, wb, &mut next));
                let (mut s, mut t): (Samples<u64>, Samples<u64>) = Default::default();
                a.iter().for_each(|&x| s.push(x));
                b.iter().for_each(|&x| t.push(x));
                s.append(t);
                let all: Vec<u64> = a.iter().chain(&b).copied().collect();
                let what = format!("{la}+{wa} then {lb}+{wb}");
                assert_eq!(
                    (s.percentiles([1, 50, 99, 100]), s.len()),
                    plain(&all),
                    "{what}"
                );
                assert_eq!(s.total(), total(&all), "{what}");
                let width = match (wa.max(wb), all.len() as u64) {
                    (0, m) if m > COUNTS_HOLD => 1,
                    (0, _) => 0,
                    _ => 2,
                };
                assert_eq!(s.width(), width, "{what}");
                let counted = width == 0 && all.len() >= COUNT_FROM;
                assert_eq!(matches!(s, Samples::Counted(_)), counted, "{what}");
            }
        }
        // A count's total at full bins (no overflow on the way).
        let mut c = Counts::<u16>::of(&[u16::MAX; 10]);
        c.bins.fill(u32::MAX);
        let want: u128 = (0..BINS as u128).sum::<u128>() * u32::MAX as u128;
        assert_eq!(c.total() as u128, want);
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
