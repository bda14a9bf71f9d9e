//! The hash map and set the scanner's per-entry passes use: std's map with aHash instead of SipHash (SipHash
//! was a tenth of a large report), still seeded at random so a hostile capture cannot pick colliding
//! keys.

pub type HashMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;
pub type HashSet<T> = std::collections::HashSet<T, ahash::RandomState>;

/// Rows keyed by `K`, for a pass that adds to a row per entry and usually to the same row as the
/// entry before (a launch loop, a kernel's intervals): the last row is checked before hashing.
pub struct Rows<K, V> {
    index: HashMap<K, usize>,
    rows: Vec<(K, V)>,
    last: Option<usize>,
}

impl<K, V> Default for Rows<K, V> {
    fn default() -> Self {
        Rows {
            index: HashMap::default(),
            rows: Vec::new(),
            last: None,
        }
    }
}

impl<K: std::hash::Hash + Eq + Copy, V: Default> Rows<K, V> {
    /// The row of `key`, created empty the first time.
    #[inline]
    pub fn row(&mut self, key: K) -> &mut V {
        let i = match self.last {
            Some(i) if self.rows[i].0 == key => i,
            _ => {
                let rows = &mut self.rows;
                let i = *self.index.entry(key).or_insert_with(|| {
                    rows.push((key, V::default()));
                    rows.len() - 1
                });
                self.last = Some(i);
                i
            }
        };
        &mut self.rows[i].1
    }
}

impl<K, V> IntoIterator for Rows<K, V> {
    type Item = (K, V);
    type IntoIter = std::vec::IntoIter<(K, V)>;

    /// The rows in the order they were created.
    fn into_iter(self) -> Self::IntoIter {
        self.rows.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_add_to_the_right_row_in_any_order() {
        let mut r: Rows<u64, u64> = Rows::default();
        for (k, v) in [(7, 1), (7, 2), (3, 10), (7, 4), (3, 20), (9, 100), (9, 1)] {
            *r.row(k) += v;
        }
        let rows: Vec<(u64, u64)> = r.into_iter().collect();
        assert_eq!(rows, [(7, 7), (3, 30), (9, 101)]);
    }
}
