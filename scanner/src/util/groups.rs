//! Indices grouped by a small integer key, as one flat table: a counting sort, where a vector per
//! group was most of a large table's allocations.

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_are_grouped_in_order_and_none_are_left_out() {
        let g = Groups::by_key(4, &[2, NONE, 0, 2, 3, NONE, 0, 2]);
        let got: Vec<&[u32]> = (0..5).map(|k| g.of(k)).collect();
        assert_eq!(got, [&[2, 6][..], &[], &[0, 3, 7], &[4], &[]]);
        assert_eq!(g.start, [0, 2, 2, 5, 6]);
        assert!(Groups::by_key(0, &[]).of(0).is_empty());
    }
}
