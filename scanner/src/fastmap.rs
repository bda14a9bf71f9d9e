//! The maps the scanner's per-entry passes use: std's map with aHash instead of SipHash (SipHash
//! was a tenth of a large report), still seeded at random so a hostile capture cannot pick colliding
//! keys.

pub type HashMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;

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

/// Slots of `ByThread`'s table.
const RECENT: usize = 64;

/// A value per thread id, for a pass over entries whose threads interleave (a thread changes every
/// few entries): a 64-slot table by the id's low bits answers most lookups without hashing; the map
/// holds every id.
pub struct ByThread<V> {
    map: HashMap<u32, V>,
    recent: [Option<(u32, V)>; RECENT],
}

impl<V: Copy> Default for ByThread<V> {
    fn default() -> Self {
        ByThread {
            map: HashMap::default(),
            recent: [None; RECENT],
        }
    }
}

impl<V: Copy> ByThread<V> {
    /// The value of `tid`, `new()` the first time.
    #[inline]
    pub fn get_or_insert_with(&mut self, tid: u32, new: impl FnOnce() -> V) -> V {
        let near = &mut self.recent[tid as usize % RECENT];
        match *near {
            Some((t, v)) if t == tid => v,
            _ => {
                let v = *self.map.entry(tid).or_insert_with(new);
                *near = Some((tid, v));
                v
            }
        }
    }

    /// Thread ids seen.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// The thread ids seen, in no order.
    pub fn ids(&self) -> impl Iterator<Item = u32> + '_ {
        self.map.keys().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_thread_keeps_ids_that_share_a_slot_apart() {
        let mut t: ByThread<u32> = ByThread::default();
        let mut made = 0;
        let mut new = || {
            made += 1;
            made
        };
        // 1, 65 and 129 share slot 1 of the table.
        let got: Vec<u32> = [1, 65, 1, 129, 65, 1]
            .iter()
            .map(|&tid| t.get_or_insert_with(tid, &mut new))
            .collect();
        assert_eq!(got, [1, 2, 1, 3, 2, 1]);
        assert_eq!(t.len(), 3);
        let mut ids: Vec<u32> = t.ids().collect();
        ids.sort();
        assert_eq!(ids, [1, 65, 129]);
    }

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
