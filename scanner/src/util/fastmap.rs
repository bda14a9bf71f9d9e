//! The maps the scanner's per-entry passes use: std's map with aHash instead of SipHash (SipHash
//! was a tenth of a large report), still seeded at random so a hostile capture cannot pick colliding
//! keys.

pub type HashMap<K, V> = std::collections::HashMap<K, V, ahash::RandomState>;

/// Slots of `Rows`' table of recent rows: a power of two, picked by the hash's top bits.
const RECENT_ROWS: usize = 64;
const _: () = assert!(RECENT_ROWS.is_power_of_two());

/// Rows keyed by `K`, for a pass that adds to a row per entry, cycling among a few rows (a training
/// loop's kernels, interleaved): a 64-slot table of recent rows, picked by an unseeded one-multiply
/// hash of the key, answers most lookups before the seeded map is hashed. Keys a hostile capture
/// makes share a slot only go to the map.
pub struct Rows<K, V> {
    index: HashMap<K, usize>,
    rows: Vec<(K, V)>,
    /// Row index + 1 by slot (0: none).
    recent: [usize; RECENT_ROWS],
}

impl<K, V> Default for Rows<K, V> {
    fn default() -> Self {
        Rows {
            index: HashMap::default(),
            rows: Vec::new(),
            recent: [0; RECENT_ROWS],
        }
    }
}

impl<K: std::hash::Hash + Eq + Copy, V: Default> Rows<K, V> {
    /// The row of `key`, created empty the first time. The recent-row check is inlined into the
    /// pass (a call cost as much as the check); the map lookup behind it is not.
    #[inline(always)]
    pub fn row(&mut self, key: K) -> &mut V {
        let i = self.index_of(key);
        &mut self.rows[i].1
    }

    /// The index of `key`'s row (made empty the first time): rows keep their index for good.
    #[inline(always)]
    pub fn index_of(&mut self, key: K) -> usize {
        let slot = recent_slot(&key);
        self.recent_row(&key, slot)
            .unwrap_or_else(|| self.miss(key, slot))
    }

    /// The row of `key` if it has one (none is created: a key only looked up never becomes a row).
    #[inline(always)]
    pub fn get(&mut self, key: K) -> Option<&V> {
        let slot = recent_slot(&key);
        let i = match self.recent_row(&key, slot) {
            Some(i) => i,
            None => {
                let i = *self.index.get(&key)?;
                self.recent[slot] = i + 1;
                i
            }
        };
        Some(&self.rows[i].1)
    }

    /// `key`'s row index when it is the slot's recent row.
    #[inline(always)]
    fn recent_row(&self, key: &K, slot: usize) -> Option<usize> {
        match self.recent[slot] {
            r if r > 0 && self.rows[r - 1].0 == *key => Some(r - 1),
            _ => None,
        }
    }

    /// The row index of `key` from the map (created empty the first time), made the slot's recent row.
    #[cold]
    #[inline(never)]
    fn miss(&mut self, key: K, slot: usize) -> usize {
        let rows = &mut self.rows;
        let i = *self.index.entry(key).or_insert_with(|| {
            rows.push((key, V::default()));
            rows.len() - 1
        });
        self.recent[slot] = i + 1;
        i
    }
}

/// The slot of `key` in a table of `RECENT_ROWS`.
#[inline]
fn recent_slot<K: std::hash::Hash>(key: &K) -> usize {
    let mut h = SlotHasher(0);
    key.hash(&mut h);
    (h.0 >> (64 - RECENT_ROWS.trailing_zeros())) as usize
}

/// FxHash's mixing (rotate, xor, multiply) per word: for picking a slot of a small table, where a
/// collision costs one hashed lookup, not a wrong answer.
struct SlotHasher(u64);

impl SlotHasher {
    #[inline]
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl std::hash::Hasher for SlotHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.add(u64::from(b));
        }
    }
    #[inline]
    fn write_u8(&mut self, x: u8) {
        self.add(u64::from(x));
    }
    #[inline]
    fn write_u16(&mut self, x: u16) {
        self.add(u64::from(x));
    }
    #[inline]
    fn write_u32(&mut self, x: u32) {
        self.add(u64::from(x));
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.add(x);
    }
    #[inline]
    fn write_usize(&mut self, x: usize) {
        self.add(x as u64);
    }
    #[inline]
    fn write_isize(&mut self, x: isize) {
        self.add(x as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl<K, V> Rows<K, V> {
    /// Row `i` (`index_of`'s).
    pub fn at(&self, i: usize) -> &(K, V) {
        &self.rows[i]
    }

    pub fn at_mut(&mut self, i: usize) -> &mut V {
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
    /// The value of `tid`, `new()` the first time. The recent table's answer is inlined (this runs
    /// once per call entry, and that table nearly always answers); the map's lookup is kept apart.
    #[inline(always)]
    pub fn get_or_insert_with(&mut self, tid: u32, new: impl FnOnce() -> V) -> V {
        match self.recent[tid as usize % RECENT] {
            Some((t, v)) if t == tid => v,
            _ => self.look_up(tid, new),
        }
    }

    #[cold]
    #[inline(never)]
    fn look_up(&mut self, tid: u32, new: impl FnOnce() -> V) -> V {
        let v = *self.map.entry(tid).or_insert_with(new);
        self.recent[tid as usize % RECENT] = Some((tid, v));
        v
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

    /// `get` finds rows made by `row` (through the recent table and behind it) and makes none.
    #[test]
    fn rows_get_finds_without_creating() {
        let mut r: Rows<u64, u64> = Rows::default();
        for k in 0..100u64 {
            *r.row(k * 0x1000) = k + 1;
        }
        for k in 0..200u64 {
            let want = (k < 100).then_some(k + 1);
            assert_eq!(r.get(k * 0x1000).copied(), want, "key {k}");
            assert_eq!(r.get(k * 0x1000).copied(), want, "key {k}, again");
        }
        assert_eq!(r.into_iter().count(), 100);
    }

    #[test]
    fn rows_keep_keys_apart_when_more_than_the_recent_table_interleave() {
        // 1000 keys cycled in turn: most share a recent slot with another, so every lookup tests
        // the slot's key before trusting it.
        let mut r: Rows<u64, u64> = Rows::default();
        for round in 0..3u64 {
            for k in 0..1000u64 {
                *r.row(k * 0x1000) += k + round;
            }
        }
        let rows: Vec<(u64, u64)> = r.into_iter().collect();
        assert_eq!(rows.len(), 1000);
        for (i, &(k, v)) in rows.iter().enumerate() {
            assert_eq!(k, i as u64 * 0x1000);
            assert_eq!(v, 3 * i as u64 + 3, "row {k:#x}");
        }
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
