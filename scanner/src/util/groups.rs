//! Indices grouped by a small integer key, as one flat table: a counting sort, where a vector per
//! group was most of a large table's allocations.

use super::bits::Ranked;
use rayon::prelude::*;

/// A key that puts its index in no group.
pub const NONE: u32 = u32::MAX;

/// The indices `0..keys.len()` by key: group k's are `items[start[k]..start[k + 1]]`, in index order.
pub struct Groups {
    pub start: Vec<u32>,
    pub items: Vec<u32>,
}

impl Groups {
    /// `groups` groups of the indices of `keys` (each below `groups`, or `NONE`).
    pub fn by_key(groups: usize, keys: &[u32]) -> Groups {
        let mut start = vec![0u32; groups + 1];
        for &k in keys.iter().filter(|&&k| k != NONE) {
            start[k as usize + 1] += 1;
        }
        for k in 0..groups {
            start[k + 1] += start[k];
        }
        // Filled with `start[k]` as group k's cursor, which ends at group k + 1's start: shifted back
        // after (no second table).
        let mut items = vec![0u32; start[groups] as usize];
        for (i, &k) in keys.iter().enumerate() {
            if k != NONE {
                let at = &mut start[k as usize];
                items[*at as usize] = i as u32;
                *at += 1;
            }
        }
        start.copy_within(0..groups, 1);
        start[0] = 0;
        Groups { start, items }
    }

    /// Group `k`'s indices (none past the table).
    pub fn of(&self, k: usize) -> &[u32] {
        match (self.start.get(k), self.start.get(k + 1)) {
            (Some(&a), Some(&b)) => &self.items[a as usize..b as usize],
            _ => &[],
        }
    }
}

/// `Groups` of keys most of which have no index (the spans each call issued: most calls issue
/// none, or are nested in one that does): `Groups` by the key's rank among the keys with any, and a
/// bit per key, where `Groups` by key keeps a start for every key (26 MB for the calls of a
/// 10 M-entry capture).
pub struct Sparse {
    /// The keys with an index.
    keys: Ranked,
    /// The indices by their key's rank in `keys`.
    by_rank: Groups,
}

impl Sparse {
    /// `groups` groups of the indices of `keys` (each below `groups`, or `NONE`).
    pub fn by_key(groups: usize, keys: &[u32]) -> Sparse {
        let mut words = vec![0u64; groups.div_ceil(64)];
        for &k in keys.iter().filter(|&&k| k != NONE) {
            words[k as usize / 64] |= 1 << (k % 64);
        }
        let has = Ranked::from_words(words);
        let ranks: Vec<u32> = (keys.par_iter())
            .map(|&k| {
                if k == NONE {
                    NONE
                } else {
                    has.rank(k as usize)
                }
            })
            .collect();
        Sparse {
            by_rank: Groups::by_key(has.count(), &ranks),
            keys: has,
        }
    }

    /// Group `k`'s indices, in index order (none past the table).
    #[inline]
    pub fn of(&self, k: usize) -> &[u32] {
        if !self.keys.contains(k) {
            return &[];
        }
        self.by_rank.of(self.keys.rank(k) as usize)
    }

    /// Every index in a group, by group.
    pub fn items(&self) -> &[u32] {
        &self.by_rank.items
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Sparse` holds `Groups`' lists, with a start only for the keys with any: keys with none,
    /// several, at both ends of the table, and no keys at all.
    #[test]
    fn sparse_groups_are_the_groups() {
        for keys in [
            vec![],
            vec![NONE; 5],
            vec![0, 0, 3, NONE, 7, 3, 0, 7, 7],
            (0..300).map(|j| (j * 7 % 130) as u32).collect(),
            (0..1000)
                .map(|j| if j % 3 == 0 { NONE } else { 999 - j })
                .collect(),
        ] {
            let groups =
                8.max((keys.iter().filter(|&&k| k != NONE).max()).map_or(0, |&k| k as usize + 1));
            let g = Groups::by_key(groups, &keys);
            let s = Sparse::by_key(groups, &keys);
            for k in 0..groups + 2 {
                assert_eq!(s.of(k), g.of(k), "{keys:?} key {k}");
            }
            assert_eq!(s.items(), g.items);
            let with_any = (0..groups).filter(|&k| !g.of(k).is_empty()).count();
            assert_eq!(s.by_rank.start.len(), with_any + 1, "{keys:?}");
        }
    }

    #[test]
    fn indices_are_grouped_in_order_and_none_are_left_out() {
        let g = Groups::by_key(4, &[2, NONE, 0, 2, 3, NONE, 0, 2]);
        let got: Vec<&[u32]> = (0..5).map(|k| g.of(k)).collect();
        assert_eq!(got, [&[2, 6][..], &[], &[0, 3, 7], &[4], &[]]);
        assert_eq!(g.start, [0, 2, 2, 5, 6]);
        assert!(Groups::by_key(0, &[]).of(0).is_empty());
    }
}
