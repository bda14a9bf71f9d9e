//! Text interning for NVTX: message, domain and registered strings become small ids (1, 2, …) that
//! entries carry in their argument words, with one `StrKind::Text` record per id in the ring's string
//! area. The table is fixed-size, open-addressing and lock-free, and keeps its own copy of each string
//! in a fixed arena, so a lookup compares the bytes (a hash collision never merges two strings) and
//! the hot path never allocates. A full table or arena yields id 0 and counts `NVTX_MISSED`.
//!
//! Ids are handed to the application as NVTX domain and registered-string handles, so they must stay
//! valid for the life of the process, across `fork` too. `reset` therefore does not forget the strings:
//! it starts a new generation, and each string's record is written again into the new ring the next
//! time the string (or its id) is used.

use causeway_ring::layout::counter;
use causeway_ring::{StrKind, Writer};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// Longest string kept, in bytes; longer ones are cut.
pub const MAX_LEN: usize = 1024;
/// Slots probed before a lookup gives up (the table counts as full).
const PROBES: usize = 64;
/// Low half of a slot word while its inserter is still filling it in.
const BUSY: u64 = 0xffff_ffff;
/// Low half of a slot word whose insert failed (arena full) or whose inserter died in a fork: the slot
/// stays taken, so the probe sequences of strings stored past it stay unbroken.
const TOMB: u64 = 0xffff_fffe;
const LOW: u64 = 0xffff_ffff;

/// A fast 64-bit hash of `bytes`, eight bytes at a time (FxHash's step, murmur3's finalizer so that
/// both halves of the result are well mixed: the low bits pick the slot, the high half is kept in it).
/// Collisions only cost a byte comparison.
pub fn hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let step = |h: u64, w: u64| (h.rotate_left(5) ^ w).wrapping_mul(K);
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        h = step(h, u64::from_le_bytes(w));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        w[..rest.len()].copy_from_slice(rest);
        h = step(h, u64::from_le_bytes(w));
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// An interning table of `SLOTS` strings (a power of two) holding `ARENA` bytes of text.
pub struct Table<const SLOTS: usize, const ARENA: usize> {
    hash: fn(&[u8]) -> u64,
    /// 0 = empty; otherwise high half = high half of the hash, low half = id, `BUSY` or `TOMB`.
    words: [AtomicU64; SLOTS],
    /// Where the slot's bytes are in the arena: `offset << 16 | len`. Written before the word.
    locs: [AtomicU64; SLOTS],
    /// The generation whose ring already holds the slot's record.
    emitted: [AtomicU32; SLOTS],
    /// Slot of id `i + 1`.
    by_id: [AtomicU32; SLOTS],
    next_id: AtomicU32,
    generation: AtomicU32,
    cursor: AtomicUsize,
    arena: UnsafeCell<[u8; ARENA]>,
}

// SAFETY: the arena is only written in ranges that one inserter reserved (atomic cursor) and only read
// after an Acquire load of a slot word published with Release after the write; everything else is
// atomic.
unsafe impl<const SLOTS: usize, const ARENA: usize> Sync for Table<SLOTS, ARENA> {}

/// The process-wide table: 16384 strings, 1 MiB of text.
pub static TEXT: Table<{ 1 << 14 }, { 1 << 20 }> = Table::new(hash);

/// Starts a new generation (a fork child's new ring has an empty string area): every string's record
/// is written again on its next use. Ids and handles stay valid. Allocation-free and lock-free, for the
/// single-threaded child right after `fork`.
pub fn reset() {
    TEXT.reset();
}

impl<const SLOTS: usize, const ARENA: usize> Table<SLOTS, ARENA> {
    pub const fn new(hash: fn(&[u8]) -> u64) -> Self {
        assert!(SLOTS.is_power_of_two() && SLOTS < u32::MAX as usize);
        assert!(ARENA < 1 << 48);
        Table {
            hash,
            words: [const { AtomicU64::new(0) }; SLOTS],
            locs: [const { AtomicU64::new(0) }; SLOTS],
            emitted: [const { AtomicU32::new(0) }; SLOTS],
            by_id: [const { AtomicU32::new(0) }; SLOTS],
            next_id: AtomicU32::new(1),
            generation: AtomicU32::new(1),
            cursor: AtomicUsize::new(0),
            arena: UnsafeCell::new([0; ARENA]),
        }
    }

    /// The id of `bytes` (cut to `MAX_LEN`), interning it on first sight; 0 when the table or arena is
    /// full. With a writer, makes sure the current ring holds the id's record.
    pub fn intern(&self, bytes: &[u8], w: Option<Writer>) -> u64 {
        let bytes = &bytes[..bytes.len().min(MAX_LEN)];
        let h = (self.hash)(bytes);
        let high = h & !LOW;
        for probe in 0..PROBES.min(SLOTS) {
            let s = (h as usize).wrapping_add(probe) & (SLOTS - 1);
            let word = &self.words[s];
            let mut cur = word.load(Ordering::Acquire);
            if cur == 0 {
                match word.compare_exchange(0, high | BUSY, Ordering::Acquire, Ordering::Acquire) {
                    Ok(_) => return self.fill(s, high, bytes, w),
                    Err(now) => cur = now,
                }
            }
            if cur & !LOW == high {
                cur = wait_ready(word, cur);
                let tag = cur & LOW;
                if tag != BUSY && tag != TOMB && self.holds(s, bytes) {
                    let id = tag as u32;
                    self.emit(s, id, w);
                    return id as u64;
                }
            }
        }
        missed(w);
        0
    }

    /// Fills the slot `s` that this thread just claimed.
    #[cold]
    fn fill(&self, s: usize, high: u64, bytes: &[u8], w: Option<Writer>) -> u64 {
        let len = bytes.len();
        let reserved = self
            .cursor
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                c.checked_add(len).filter(|&end| end <= ARENA)
            });
        let Ok(off) = reserved else {
            return self.give_up(s, w);
        };
        // SAFETY: [off, off + len) lies inside the arena and the cursor reservation made it ours alone.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                (self.arena.get() as *mut u8).add(off),
                len,
            )
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        if id == 0 || id as usize > SLOTS {
            return self.give_up(s, w);
        }
        self.locs[s].store((off as u64) << 16 | len as u64, Ordering::Relaxed);
        self.by_id[id as usize - 1].store(s as u32, Ordering::Relaxed);
        self.words[s].store(high | id as u64, Ordering::Release);
        self.emit(s, id, w);
        id as u64
    }

    #[cold]
    fn give_up(&self, s: usize, w: Option<Writer>) -> u64 {
        let high = self.words[s].load(Ordering::Relaxed) & !LOW;
        self.words[s].store(high | TOMB, Ordering::Release);
        missed(w);
        0
    }

    /// The bytes of a published slot. Call only after an Acquire load saw the slot's id.
    fn bytes(&self, s: usize) -> &[u8] {
        let loc = self.locs[s].load(Ordering::Relaxed);
        let (off, len) = ((loc >> 16) as usize, (loc & 0xffff) as usize);
        match off.checked_add(len) {
            Some(end) if end <= ARENA => {}
            _ => return &[],
        }
        // SAFETY: in bounds (checked above); written once before the slot was published and never
        // again, so no one writes these bytes while the slice lives.
        unsafe { std::slice::from_raw_parts((self.arena.get() as *const u8).add(off), len) }
    }

    fn holds(&self, s: usize, bytes: &[u8]) -> bool {
        self.bytes(s) == bytes
    }

    /// Writes the record of id `id` (in slot `s`) into the current ring, once per generation.
    #[inline(always)]
    fn emit(&self, s: usize, id: u32, w: Option<Writer>) {
        let Some(w) = w else { return };
        let g = self.generation.load(Ordering::Relaxed);
        let e = &self.emitted[s];
        let old = e.load(Ordering::Relaxed);
        if old != g
            && e.compare_exchange(old, g, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            w.intern(StrKind::Text, id as u64, 0, self.bytes(s));
        }
    }

    /// Makes sure the current ring holds the record of `id`, an id this table handed out (a domain or
    /// registered-string handle); anything else is ignored.
    #[inline(always)]
    pub fn touch(&self, id: u64, w: Option<Writer>) {
        if id == 0 || id > SLOTS as u64 {
            return;
        }
        let s = self.by_id[id as usize - 1].load(Ordering::Relaxed) as usize;
        let Some(word) = self.words.get(s) else {
            return;
        };
        if word.load(Ordering::Acquire) & LOW == id {
            self.emit(s, id as u32, w);
        }
    }

    /// See the module-level `reset`. Also retires slots left half-filled by threads that did not
    /// survive the fork, so that no lookup waits on them.
    pub fn reset(&self) {
        let g = self
            .generation
            .load(Ordering::Relaxed)
            .wrapping_add(1)
            .max(1);
        self.generation.store(g, Ordering::Relaxed);
        for word in self.words.iter() {
            let cur = word.load(Ordering::Relaxed);
            if cur & LOW == BUSY {
                word.store(cur & !LOW | TOMB, Ordering::Relaxed);
            }
        }
    }
}

/// Waits (bounded) while a slot is being filled; returns its word.
fn wait_ready(word: &AtomicU64, mut cur: u64) -> u64 {
    let mut spins = 0u32;
    while cur & LOW == BUSY {
        if spins >= 1 << 16 {
            break;
        }
        if spins % 64 == 63 {
            std::thread::yield_now();
        } else {
            std::hint::spin_loop();
        }
        spins += 1;
        cur = word.load(Ordering::Acquire);
    }
    cur
}

#[cold]
fn missed(w: Option<Writer>) {
    if let Some(w) = w {
        w.bump(counter::NVTX_MISSED);
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use causeway_ring::layout::{self, hdr};
    use causeway_ring::{clock, ClockKind, Params, Policy, RingView};

    /// A ring in heap memory, for checking what the shim writes.
    pub(crate) struct TestRing {
        buf: Vec<u64>,
        pub w: Writer,
    }

    impl TestRing {
        pub(crate) fn new() -> TestRing {
            let (capacity, strings) = (1024u64, 64 * 1024u64);
            let size = layout::file_size(capacity, strings) as usize;
            let mut buf = vec![0u64; size / 8];
            let p = Params {
                capacity,
                strings_size: strings,
                policy: Policy::Drop,
                pid: 1,
                ppid: 0,
                level: 1,
                clock: ClockKind::Monotonic,
                ticks_per_sec: 1_000_000_000,
                anchor: clock::anchor(),
                exe: b"test",
                host: b"host",
                flags: 0,
            };
            // SAFETY: a zero-filled, 8-aligned buffer of the size the layout asks for, kept alive (and
            // never moved: a Vec's heap block stays put) as long as the writer.
            let w = unsafe { Writer::init(buf.as_mut_ptr() as *mut u8, &p) };
            TestRing { buf, w }
        }

        pub(crate) fn bytes(&self) -> &[u8] {
            // SAFETY: the Vec's memory, viewed as bytes.
            unsafe {
                std::slice::from_raw_parts(self.buf.as_ptr() as *const u8, self.buf.len() * 8)
            }
        }

        pub(crate) fn counter(&self, c: usize) -> u64 {
            let off = hdr::COUNTERS + 8 * c;
            u64::from_le_bytes(self.bytes()[off..off + 8].try_into().unwrap())
        }

        /// (kind, key, text) of every string record.
        pub(crate) fn strings(&self) -> Vec<(StrKind, u64, String)> {
            let v = RingView::parse(self.bytes()).expect("ring parses");
            v.strings
                .iter()
                .map(|r| (r.kind, r.key, r.text.clone()))
                .collect()
        }

        pub(crate) fn texts(&self) -> Vec<(u64, String)> {
            self.strings()
                .into_iter()
                .filter(|s| s.0 == StrKind::Text)
                .map(|s| (s.1, s.2))
                .collect()
        }
    }

    fn same_hash(_: &[u8]) -> u64 {
        0x1234_5678_0000_0003
    }

    #[test]
    fn same_text_same_id_and_one_record() {
        let t: Box<Table<64, 4096>> = Box::new(Table::new(hash));
        let r = TestRing::new();
        let a = t.intern(b"forward", Some(r.w));
        let b = t.intern(b"backward", Some(r.w));
        assert_eq!((a, b), (1, 2));
        assert_eq!(t.intern(b"forward", Some(r.w)), a);
        assert_eq!(t.intern(b"backward", None), b);
        assert_ne!(t.intern(b"forwar", Some(r.w)), a);
        assert_eq!(
            r.texts(),
            vec![
                (1, "forward".into()),
                (2, "backward".into()),
                (3, "forwar".into())
            ]
        );
    }

    #[test]
    fn colliding_hashes_keep_strings_apart() {
        let t: Box<Table<8, 4096>> = Box::new(Table::new(same_hash));
        let ids: Vec<u64> = ["a", "b", "c", ""]
            .iter()
            .map(|s| t.intern(s.as_bytes(), None))
            .collect();
        assert_eq!(ids, vec![1, 2, 3, 4]);
        for (s, id) in ["a", "b", "c", ""].iter().zip(&ids) {
            assert_eq!(t.intern(s.as_bytes(), None), *id, "{s:?}");
        }
    }

    #[test]
    fn full_table_gives_zero_and_counts() {
        let r = TestRing::new();
        let t: Box<Table<4, 4096>> = Box::new(Table::new(hash));
        for i in 0..4 {
            assert_eq!(t.intern(format!("s{i}").as_bytes(), Some(r.w)), i + 1);
        }
        assert_eq!(t.intern(b"one too many", Some(r.w)), 0);
        assert_eq!(r.counter(counter::NVTX_MISSED), 1);
        // Known strings still resolve.
        assert_eq!(t.intern(b"s2", Some(r.w)), 3);
    }

    #[test]
    fn full_arena_gives_zero_and_counts() {
        let r = TestRing::new();
        let t: Box<Table<16, 8>> = Box::new(Table::new(hash));
        assert_eq!(t.intern(b"12345", Some(r.w)), 1);
        assert_eq!(t.intern(b"6789", Some(r.w)), 0);
        assert_eq!(t.intern(b"678", Some(r.w)), 2);
        assert_eq!(r.counter(counter::NVTX_MISSED), 1);
        assert_eq!(t.intern(b"12345", None), 1);
    }

    #[test]
    fn long_strings_are_cut() {
        let t: Box<Table<16, 8192>> = Box::new(Table::new(hash));
        let long = vec![b'x'; 3000];
        let id = t.intern(&long, None);
        assert_eq!(t.intern(&long[..MAX_LEN], None), id);
        let s = t.by_id[id as usize - 1].load(Ordering::Relaxed) as usize;
        assert_eq!(t.bytes(s).len(), MAX_LEN);
    }

    #[test]
    fn reset_rewrites_records_into_the_new_ring_and_keeps_ids() {
        let t: Box<Table<64, 4096>> = Box::new(Table::new(hash));
        let parent = TestRing::new();
        let dom = t.intern(b"domain", Some(parent.w));
        let msg = t.intern(b"step", Some(parent.w));
        // Interned while no ring is active: recorded on first use with a ring.
        let late = t.intern(b"late", None);
        t.touch(late, Some(parent.w));
        assert_eq!(parent.texts().len(), 3);

        t.reset();
        let child = TestRing::new();
        assert!(child.texts().is_empty());
        assert_eq!(t.intern(b"step", Some(child.w)), msg);
        t.touch(dom, Some(child.w));
        t.touch(dom, Some(child.w));
        t.touch(999, Some(child.w));
        t.touch(0, Some(child.w));
        assert_eq!(
            child.texts(),
            vec![(msg, "step".into()), (dom, "domain".into())]
        );
        assert_eq!(parent.texts().len(), 3);
    }

    #[test]
    fn reset_retires_slots_left_busy_without_breaking_probes() {
        let t: Box<Table<8, 4096>> = Box::new(Table::new(same_hash));
        // A thread claimed slot 3 (where every string of this hash starts) and died in a fork; "b"
        // went on to slot 4. Before the reset, a lookup waits on slot 3 (bounded), then moves on.
        t.words[3].store(same_hash(b"") & !LOW | BUSY, Ordering::Relaxed);
        assert_eq!(t.intern(b"b", None), 1);
        assert_eq!(t.by_id[0].load(Ordering::Relaxed), 4);
        t.reset();
        assert_eq!(t.words[3].load(Ordering::Relaxed) & LOW, TOMB);
        assert_eq!(t.intern(b"b", None), 1);
        assert_eq!(t.intern(b"c", None), 2);
        assert_eq!(t.by_id[1].load(Ordering::Relaxed), 5);
    }

    #[test]
    fn a_failed_insert_leaves_later_strings_reachable() {
        let r = TestRing::new();
        let t: Box<Table<8, 4>> = Box::new(Table::new(same_hash));
        assert_eq!(t.intern(b"ab", Some(r.w)), 1);
        assert_eq!(t.intern(b"toolong", Some(r.w)), 0);
        assert_eq!(t.intern(b"cd", Some(r.w)), 2);
        assert_eq!(t.intern(b"cd", Some(r.w)), 2);
        assert_eq!(t.intern(b"ab", Some(r.w)), 1);
        assert_eq!(r.counter(counter::NVTX_MISSED), 1);
    }

    #[test]
    fn concurrent_interning_agrees() {
        let t: &'static Table<1024, 65536> = Box::leak(Box::new(Table::new(hash)));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                std::thread::spawn(move || {
                    (0..200)
                        .map(|i| t.intern(format!("n{i}").as_bytes(), None))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let all: Vec<Vec<u64>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        for v in &all[1..] {
            assert_eq!(v, &all[0]);
        }
        let mut ids = all[0].clone();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), 200);
        assert!(!ids.contains(&0));
    }
}
