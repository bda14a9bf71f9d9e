//! A handle (stream, event, graph) as a call keeps it: a 4-byte number into the process-wide table
//! of the handles seen, rather than the 8-byte value. A timeline holds two per call, millions of
//! calls, while a capture names few distinct streams, events and graphs: at 10 M entries the calls
//! are 53 MB smaller (56 bytes each instead of 64). Only the handles the model reads are kept
//! (`Call::stream`, `Call::handle`), so the table holds those, not every pointer a call passed.
//! A capture whose calls name millions of distinct handles costs ~24 bytes each, kept for the life
//! of the process (as names are), interned on every thread through 64 shards.

use std::cell::Cell;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::Mutex;

/// A handle's number; 0 stands for the value 0 (no handle), without the table.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Handle(u32);

impl Handle {
    /// The value 0.
    pub const ZERO: Handle = Handle(0);

    /// `v`'s number: the same for the same value, for the life of the process.
    #[inline]
    pub fn of(v: u64) -> Handle {
        if v == 0 {
            return Handle::ZERO;
        }
        // Most calls name one of a few streams: a thread's recent handles answer without the lock.
        let slot = (v.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - RECENT.ilog2())) as usize;
        let hit = RECENT_IDS.with(|r| {
            let (value, n) = r[slot].get();
            (value == v && n != 0).then_some(n)
        });
        let n = hit.unwrap_or_else(|| {
            let n = intern(v);
            RECENT_IDS.with(|r| r[slot].set((v, n)));
            n
        });
        Handle(n)
    }

    /// The value.
    #[inline]
    pub fn get(self) -> u64 {
        match self.0 {
            0 => 0,
            n => table::get(n as usize),
        }
    }
}

impl std::fmt::Debug for Handle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#x}", self.get())
    }
}

/// Slots of each thread's table of recent handles (a power of two).
const RECENT: usize = 64;

thread_local! {
    /// (value, number) by the value's hash; number 0: empty.
    static RECENT_IDS: [Cell<(u64, u32)>; RECENT] = const { [const { Cell::new((0, 0)) }; RECENT] };
}

/// Shards of the map from values to numbers (a power of two): a capture whose every call names
/// another handle interns millions of them, from every thread at once.
const SHARDS: usize = 64;

/// `v`'s number (non-zero `v`), given out once, under the lock of `v`'s shard. What the table costs
/// is bounded by the distinct handles of the captures read (at most two per entry, ~24 bytes each).
fn intern(v: u64) -> u32 {
    use std::sync::atomic::AtomicU32;
    type Map = Option<crate::util::fastmap::HashMap<u64, u32>>;
    static NUMBERS: [Mutex<Map>; SHARDS] = [const { Mutex::new(None) }; SHARDS];
    static NEXT: AtomicU32 = AtomicU32::new(1);
    let shard = &NUMBERS[(v.wrapping_mul(0xff51_afd7_ed55_8ccd) >> 58) as usize % SHARDS];
    // A poisoned lock still holds a consistent map (an insert is the only change).
    let mut g = shard.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(Default::default);
    if let Some(&n) = map.get(&v) {
        return n;
    }
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    assert!(n != 0 && n != u32::MAX, "fewer than 2^32 distinct handles");
    // Set before the number is handed out: whoever reads it finds the value.
    table::put(n as usize, v);
    map.insert(v, n);
    n
}

/// The values by number: chunks of doubling size (chunk `c` holds numbers `2^c..2^(c+1)`), each
/// made once and never moved or freed, so that a handle reads its value without a lock.
mod table {
    use super::*;

    const CHUNKS: usize = 32;

    static CHUNK: [AtomicPtr<AtomicU64>; CHUNKS] =
        [const { AtomicPtr::new(std::ptr::null_mut()) }; CHUNKS];

    fn place(n: usize) -> (usize, usize) {
        let c = n.ilog2() as usize;
        (c, n - (1 << c))
    }

    /// Value number `n` (from 1), which `put` gave out.
    #[inline]
    pub(super) fn get(n: usize) -> u64 {
        let (c, at) = place(n);
        let chunk = CHUNK[c].load(Ordering::Acquire);
        assert!(!chunk.is_null(), "a handle's number was given out by `put`");
        // SAFETY: chunk `c` is an array of `2^c` values (made in `put`, never freed), `at < 2^c`.
        unsafe { &*chunk.add(at) }.load(Ordering::Acquire)
    }

    /// Sets value number `n` (from 1); called once per number (`intern` gives each out once).
    pub(super) fn put(n: usize, v: u64) {
        let (c, at) = place(n);
        let mut chunk = CHUNK[c].load(Ordering::Acquire);
        if chunk.is_null() {
            let slots: Box<[AtomicU64]> = (0..1usize << c).map(|_| AtomicU64::new(0)).collect();
            let made = Box::into_raw(slots).cast::<AtomicU64>();
            // Shards intern side by side: the first chunk set is the one every thread uses.
            chunk = match CHUNK[c].compare_exchange(
                std::ptr::null_mut(),
                made,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => made,
                Err(theirs) => {
                    // SAFETY: `made` came from `Box::into_raw` of `2^c` values just above and was
                    // never shared: it is freed once, here.
                    drop(unsafe {
                        Box::from_raw(std::ptr::slice_from_raw_parts_mut(made, 1usize << c))
                    });
                    theirs
                }
            };
        }
        // SAFETY: as in `get`: the chunk holds `2^c` values, `at < 2^c`.
        unsafe { &*chunk.add(at) }.store(v, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value reads back as itself, from any thread, and one value has one number; 0 needs no
    /// number. Many distinct values (past the recent table and several chunks), in any order.
    #[test]
    fn handles_read_back_as_their_values_and_one_value_has_one_number() {
        assert_eq!(Handle::of(0), Handle::ZERO);
        assert_eq!(Handle::ZERO.get(), 0);
        let values: Vec<u64> = (1..5000u64)
            .map(|i| i.wrapping_mul(0x5851_f42d_4c95_7f2d) | 1)
            .chain([u64::MAX, 1, 0x7f00_0000_1000])
            .collect();
        // Eight threads at once, each in its own order: chunks of the table made side by side.
        let seen: Vec<Vec<Handle>> = std::thread::scope(|s| {
            let runs: Vec<_> = (0..8)
                .map(|k| {
                    let values = &values;
                    s.spawn(move || {
                        let mut order: Vec<usize> = (0..values.len()).collect();
                        order.rotate_left(k * values.len() / 8);
                        if k % 2 == 1 {
                            order.reverse();
                        }
                        let mut got = vec![Handle::ZERO; values.len()];
                        for i in order {
                            got[i] = Handle::of(values[i]);
                        }
                        got
                    })
                })
                .collect();
            runs.into_iter().map(|r| r.join().unwrap()).collect()
        });
        for (i, v) in values.iter().enumerate() {
            let h = seen[0][i];
            assert_eq!(h.get(), *v);
            for other in &seen[1..] {
                assert_eq!(other[i], h, "{v:#x} got two numbers");
            }
            assert_eq!(Handle::of(*v), h);
        }
    }
}
