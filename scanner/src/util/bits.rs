//! A set of indices kept as bits, each set index's rank (how many are set before it) read from a
//! count kept per 64 bits: 1.5 bits an index where a table of 4-byte numbers took 32.

use rayon::prelude::*;

pub struct Ranked {
    words: Vec<u64>,
    /// The set bits in the words before each word.
    before: Vec<u32>,
}

impl Ranked {
    /// The indices `0..n` for which `f` holds (`n` below 2^32), found on every thread.
    pub fn from_fn(n: usize, f: impl Fn(usize) -> bool + Sync) -> Ranked {
        let words: Vec<u64> = (0..n.div_ceil(64))
            .into_par_iter()
            .map(|w| {
                let bits = (w * 64..(w * 64 + 64).min(n)).enumerate();
                bits.fold(0u64, |x, (b, i)| x | u64::from(f(i)) << b)
            })
            .collect();
        Ranked::from_words(words)
    }

    /// The set whose bit `i` is bit `i % 64` of `words[i / 64]` (fewer than 2^32 set).
    pub fn from_words(words: Vec<u64>) -> Ranked {
        let mut set = 0u32;
        let before = (words.iter())
            .map(|w| {
                let s = set;
                set = set
                    .checked_add(w.count_ones())
                    .expect("fewer than 2^32 indices");
                s
            })
            .collect();
        Ranked { words, before }
    }

    /// Whether `i` is in the set (never past its end).
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| w >> (i % 64) & 1 != 0)
    }

    /// How many indices below `i` are in the set (`i` within it).
    #[inline]
    pub fn rank(&self, i: usize) -> u32 {
        let (w, b) = (i / 64, i % 64);
        self.before[w] + (self.words[w] & ((1u64 << b) - 1)).count_ones()
    }

    /// How many indices are in the set.
    pub fn count(&self) -> usize {
        (self.before.last()).map_or(0, |&s| {
            s as usize + self.words.last().map_or(0, |w| w.count_ones() as usize)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Ranked;

    #[test]
    fn ranks_count_the_set_indices_before() {
        for n in [0usize, 1, 63, 64, 65, 200] {
            let f = |i: usize| i.is_multiple_of(3) || i == 64;
            let r = Ranked::from_fn(n, f);
            let mut seen = 0;
            for i in 0..n {
                assert_eq!(r.contains(i), f(i), "n {n}, {i}");
                if f(i) {
                    assert_eq!(r.rank(i), seen, "n {n}, {i}");
                    seen += 1;
                }
            }
            assert_eq!(r.count(), seen as usize);
            assert!(!r.contains(n) && !r.contains(n + 64));
        }
    }
}
