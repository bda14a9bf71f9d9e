//! The `causeway` binary's allocator (`hugealloc`): blocks keep their bytes, alignment and exact
//! mapping through growth, shrinking and moves; impossible sizes fail cleanly. One test function, so
//! that no other test of this binary maps or unmaps memory beside it: the checks look at which
//! pages around a block are mapped.

#![cfg(target_os = "linux")]

use causeway_scanner::util::hugealloc::{mapped, page, HugeAlloc, BIG, HUGE};
use std::alloc::{GlobalAlloc, Layout};
use std::sync::OnceLock;

#[test]
fn huge_alloc_blocks_keep_their_bytes_alignment_and_mapping() {
    // This thread's malloc arena is made by its first allocation: made now, it is a mapping that
    // was there before any block.
    drop(vec![1u8; 4096]);
    FOREIGN.get_or_init(|| mappings().iter().map(|m| m.0).collect());
    blocks_keep_their_bytes_through_growth_and_shrinking();
    a_block_hemmed_in_moves_whole();
    alignments_are_honoured();
    impossible_sizes_fail_and_leave_the_block();
    a_vector_grown_through_the_allocator_holds_its_values();
    a_block_below_a_huge_page_made_again_reuses_memory();
}

fn layout(n: usize, align: usize) -> Layout {
    Layout::from_size_align(n, align).unwrap()
}

/// Writes a pattern with no zero byte (a block left zeroed cannot pass for it).
unsafe fn fill(p: *mut u8, n: usize) {
    for i in (0..n).step_by(4093).chain(n.checked_sub(1)) {
        // SAFETY: i < n, inside the block.
        unsafe { *p.add(i) = (i % 251 + 1) as u8 };
    }
}

/// Checks the pattern `fill(p, filled)` wrote, in the first `n` bytes.
unsafe fn check(p: *mut u8, n: usize, filled: usize) {
    let last = filled.checked_sub(1).filter(|&l| l < n);
    for i in (0..n.min(filled)).step_by(4093).chain(last) {
        // SAFETY: i < n, inside the block.
        assert_eq!(unsafe { *p.add(i) }, (i % 251 + 1) as u8, "byte {i} of {n}");
    }
}

/// Whether the page at `addr` is mapped (mincore fails with ENOMEM on an unmapped one).
fn mapped_at(addr: usize) -> bool {
    let mut v = [0u8; 1];
    let page = addr / page() * page();
    // SAFETY: mincore only reports on the range; an unmapped one is an error, not a fault.
    unsafe { libc::mincore(page as *mut libc::c_void, 1, v.as_mut_ptr()) == 0 }
}

/// The lines of `/proc/self/maps` as (start, end) address ranges.
fn mappings() -> Vec<(usize, usize)> {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("/proc/self/maps");
    maps.lines()
        .filter_map(|line| {
            let (lo, hi) = line.split_whitespace().next()?.split_once('-')?;
            Some((
                usize::from_str_radix(lo, 16).ok()?,
                usize::from_str_radix(hi, 16).ok()?,
            ))
        })
        .collect()
}

/// Where each mapping began when the test began, before it made any block.
static FOREIGN: OnceLock<Vec<usize>> = OnceLock::new();

/// A big block's mapping is exactly `mapped(size)` long: the mapping that holds its first byte
/// begins there and ends at `mapped(size)`, and the page after it is either unmapped or the first
/// page of a mapping that was there before the test made any block. (The kernel places and grows a
/// block up to other mappings, a malloc arena's heap say, so "the next page is unmapped" does not
/// hold; the block's huge-page advice keeps the kernel from merging it with such a neighbour.)
fn assert_mapping(p: *mut u8, size: usize) {
    let (start, end) = (p as usize, p as usize + mapped(size));
    let now = mappings();
    let holding = |a: usize| now.iter().copied().find(|&(lo, hi)| lo <= a && a < hi);
    assert_eq!(
        holding(start),
        Some((start, end)),
        "the mapping of a {size}-byte block; mappings: {now:x?}"
    );
    if let Some(next) = holding(end) {
        let foreign = FOREIGN.get().expect("the test's first mappings read");
        assert!(
            foreign.contains(&next.0),
            "the page after a {size}-byte block is mapped by {next:x?}, which was not there before"
        );
    }
}

/// Blocks of both kinds, grown, shrunk, kept and across the threshold, keep their bytes and
/// alignment, and big ones their exact mapping.
fn blocks_keep_their_bytes_through_growth_and_shrinking() {
    let a = HugeAlloc;
    let sizes = [
        100,
        BIG - 1,
        BIG,
        HUGE - 1,
        HUGE + 1,
        HUGE + 2,
        3 * HUGE + 12345,
        16 * HUGE,
        HUGE + 7,
        BIG + 3,
        BIG - 3,
        1000,
    ];
    // SAFETY: each block is used within its current size, and reallocated and freed with the
    // layout it was last given.
    unsafe {
        let mut p = a.alloc(layout(sizes[0], 64));
        assert!(!p.is_null());
        fill(p, sizes[0]);
        for w in sizes.windows(2) {
            let (from, to) = (w[0], w[1]);
            let before = p;
            p = a.realloc(p, layout(from, 64), to);
            assert!(!p.is_null(), "{from} -> {to}");
            assert!((p as usize).is_multiple_of(64));
            if from >= BIG && to >= BIG {
                assert!(
                    (p as usize).is_multiple_of(HUGE),
                    "a big block is huge-page aligned"
                );
                if mapped(from) == mapped(to) {
                    assert_eq!(p, before, "same mapping length: the block stays");
                }
                assert_mapping(p, to);
            }
            check(p, to, from);
            fill(p, to);
        }
        let last = *sizes.last().unwrap();
        a.dealloc(p, layout(last, 64));

        let z = a.alloc_zeroed(layout(2 * HUGE, 8));
        assert!((0..2 * HUGE).step_by(4096).all(|i| *z.add(i) == 0));
        assert_mapping(z, 2 * HUGE);
        a.dealloc(z, layout(2 * HUGE, 8));
        assert!(!mapped_at(z as usize), "a freed big block is unmapped");
        assert!(!mapped_at(z as usize + mapped(2 * HUGE) - 1), "all of it");
    }
}

/// A block that cannot grow in place (a page of someone else's right after it) moves, onto a
/// huge-page boundary, with its bytes and write access.
fn a_block_hemmed_in_moves_whole() {
    let a = HugeAlloc;
    let n = 3 * HUGE;
    // SAFETY: the guard is a fresh mapping at a free address (MAP_FIXED_NOREPLACE fails rather
    // than replace anything); the block is used within its size and freed with its layout.
    unsafe {
        let p = a.alloc(layout(n, 8));
        assert!(!p.is_null());
        fill(p, n);
        let end = p as usize + mapped(n);
        let guard = libc::mmap(
            end as *mut libc::c_void,
            page(),
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        );
        assert_eq!(guard as usize, end, "guard page placed after the block");
        let q = a.realloc(p, layout(n, 8), 2 * n);
        assert!(!q.is_null());
        assert_ne!(q, p, "it had to move");
        assert!((q as usize).is_multiple_of(HUGE));
        check(q, 2 * n, n);
        fill(q, 2 * n);
        check(q, 2 * n, 2 * n);
        assert_mapping(q, 2 * n);
        assert!(!mapped_at(p as usize), "the old place is given back");
        a.dealloc(q, layout(2 * n, 8));
        libc::munmap(guard, page());
    }
}

/// Alignments: up to a huge page a big block is ours (huge-page aligned); beyond, and for small
/// blocks, the system allocator's, which honours them.
fn alignments_are_honoured() {
    let a = HugeAlloc;
    for (size, align) in [
        (BIG, 1 << 20),
        (4 * HUGE, HUGE),
        (4 * HUGE, 2 * HUGE),
        (100, 4096),
    ] {
        let l = layout(size, align);
        // SAFETY: allocated, written within its size and freed with its layout.
        unsafe {
            let p = a.alloc(l);
            assert!(!p.is_null());
            assert!(
                (p as usize).is_multiple_of(align),
                "{size} bytes aligned to {align}"
            );
            fill(p, size);
            check(p, size, size);
            a.dealloc(p, l);
        }
    }
}

/// An impossible size is refused (null), as malloc refuses it, and a block asked to grow to one
/// is left as it was.
fn impossible_sizes_fail_and_leave_the_block() {
    let a = HugeAlloc;
    let huge = 1usize << 62;
    // SAFETY: null results are not used; the block is used within its size and freed with its
    // layout.
    unsafe {
        assert!(a.alloc(layout(huge, 8)).is_null());
        assert!(a.alloc_zeroed(layout(huge, 8)).is_null());
        let p = a.alloc(layout(2 * HUGE, 8));
        fill(p, 2 * HUGE);
        assert!(a.realloc(p, layout(2 * HUGE, 8), huge).is_null());
        check(p, 2 * HUGE, 2 * HUGE);
        assert_mapping(p, 2 * HUGE);
        a.dealloc(p, layout(2 * HUGE, 8));
    }
}

/// A big vector grown by pushes, as the report's tables are, holds what was pushed.
fn a_vector_grown_through_the_allocator_holds_its_values() {
    let a = HugeAlloc;
    let n = 3 * HUGE;
    // SAFETY: the block is written within its capacity and freed with its layout.
    unsafe {
        let mut cap = 16usize;
        let mut p = a.alloc(Layout::array::<u64>(cap).unwrap()) as *mut u64;
        for i in 0..n {
            if i == cap {
                let old = Layout::array::<u64>(cap).unwrap();
                cap *= 2;
                p = a.realloc(p.cast(), old, cap * 8) as *mut u64;
                assert!(!p.is_null());
            }
            *p.add(i) = i as u64 * 7;
        }
        assert!((0..n).all(|i| *p.add(i) == i as u64 * 7));
        a.dealloc(p.cast(), Layout::array::<u64>(cap).unwrap());
    }
}

/// Page faults this thread has taken so far.
fn thread_faults() -> i64 {
    // SAFETY: rusage is plain integers and timevals, for which all zero bytes is a valid value.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage only writes the struct it is given; RUSAGE_THREAD counts this thread's
    // faults only.
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut u) }, 0);
    u.ru_minflt
}

/// A block of a few hundred KiB made, written whole and freed again and again (an export's buffers,
/// batch after batch) comes back with its pages: a block mapped on its own each time was faulted in
/// again page by page, every time.
fn a_block_below_a_huge_page_made_again_reuses_memory() {
    let a = HugeAlloc;
    let (n, times) = (300 << 10, 50);
    let l = layout(n, 8);
    // Once, so that glibc's own threshold has seen a block of this size freed.
    // SAFETY: the block is written within its size and freed with its layout.
    unsafe { a.dealloc(a.alloc(l), l) };
    let before = thread_faults();
    for _ in 0..times {
        // SAFETY: as above.
        unsafe {
            let p = a.alloc(l);
            assert!(!p.is_null());
            std::ptr::write_bytes(p, 7, n);
            a.dealloc(p, l);
        }
    }
    let faults = thread_faults() - before;
    let one_block = (n / page()) as i64;
    assert!(
        faults < 2 * one_block,
        "{times} blocks of {n} bytes took {faults} page faults: at most two blocks' worth \
         ({one_block} pages each) when the memory is reused"
    );
}
