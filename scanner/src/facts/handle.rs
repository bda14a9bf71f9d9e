//! A handle (stream, event, graph) as a call keeps it: a 4-byte number into the process-wide table
//! of the handles seen, rather than the 8-byte value. A timeline holds two per call, millions of
//! calls, while a capture names few distinct streams, events and graphs: at 10 M entries the calls
//! are 53 MB smaller (56 bytes each instead of 64). Only the handles the model reads are kept
//! (`Call::stream`, `Call::handle`), so the table holds those, not every pointer a call passed.

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

/// `v`'s number (non-zero `v`), given out once under the lock. What the table costs is bounded by
/// the distinct handles of the captures read (at most one per entry).
fn intern(v: u64) -> u32 {
    static NUMBERS: Mutex<Option<crate::util::fastmap::HashMap<u64, u32>>> = Mutex::new(None);
    // A poisoned lock still holds a consistent map (an insert is the only change).
    let mut g = NUMBERS.lock().unwrap_or_else(|e| e.into_inner());
    let map = g.get_or_insert_with(Default::default);
    if let Some(&n) = map.get(&v) {
        return n;
    }
    let n = u32::try_from(map.len() + 1).expect("fewer than 2^32 distinct handles");
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

    /// Sets value number `n` (from 1); called once per number, under `intern`'s lock.
    pub(super) fn put(n: usize, v: u64) {
        let (c, at) = place(n);
        let mut chunk = CHUNK[c].load(Ordering::Acquire);
        if chunk.is_null() {
            let slots: Box<[AtomicU64]> = (0..1usize << c).map(|_| AtomicU64::new(0)).collect();
            chunk = Box::leak(slots).as_mut_ptr();
            // Only `intern`, under its lock, makes chunks: nothing else can have set this one.
            CHUNK[c].store(chunk, Ordering::Release);
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
        let here: Vec<Handle> = values.iter().map(|&v| Handle::of(v)).collect();
        let there: Vec<Handle> = std::thread::scope(|s| {
            s.spawn(|| {
                values
                    .iter()
                    .rev()
                    .map(|&v| Handle::of(v))
                    .collect::<Vec<_>>()
            })
            .join()
            .unwrap()
        });
        for ((v, h), t) in values.iter().zip(&here).zip(there.iter().rev()) {
            assert_eq!(h.get(), *v);
            assert_eq!(h, t, "{v:#x} got two numbers");
            assert_eq!(Handle::of(*v), *h);
        }
    }
}
