//! The `causeway` binary's allocator: the system allocator, except that large blocks get a mapping of
//! their own, aligned to huge pages and advised to use them.
//!
//! A report on a large capture grows tables of hundreds of megabytes (durations per row, the waits'
//! device table). Faulting them in 4 KiB pages, and copying or splitting them as they grow, was a
//! fifth of a 10 M-entry report's time (see docs/results, scanner throughput). glibc can do the same
//! (`GLIBC_TUNABLES=glibc.malloc.hugetlb=1`), but only when set before the process starts.
//!
//! A large block grows with `mremap`, onto a huge-page-aligned address when it has to move, so the
//! pages it already has move whole instead of being copied or split.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ptr;

/// A huge page on x86-64 and (with 4 KiB base pages) aarch64.
const HUGE: usize = 2 << 20;

/// Blocks this large or larger are mapped on their own; smaller ones are `System`'s. Well below a huge
/// page: a vector that grows through a mapping of its own is never copied (glibc copies a block
/// below its mmap threshold, which rises to 32 MiB as blocks are freed).
const BIG: usize = 256 << 10;

/// The base page size mappings are counted in (the kernel rounds up to its own).
const PAGE: usize = 4 << 10;

/// The allocator (`#[global_allocator]` in the `causeway` binary).
pub struct HugeAlloc;

/// Whether a block of this layout is mapped on its own. Decided by the layout alone, so that `dealloc`
/// and `realloc` know where a block came from.
#[inline]
fn big(l: &Layout) -> bool {
    l.size() >= BIG && l.align() <= HUGE
}

/// The length of the mapping of a big block of `size` bytes: whole huge pages from one huge page on
/// (the last one is backed whole anyway when touched), whole base pages below.
#[inline]
fn mapped(size: usize) -> usize {
    if size >= HUGE {
        size.next_multiple_of(HUGE)
    } else {
        size.next_multiple_of(PAGE)
    }
}

/// A fresh zeroed mapping of `len` bytes (a multiple of `PAGE`) at a `HUGE`-aligned address (so that
/// it can use huge pages as it grows), advised to use them; `prot` is its protection. Null on failure.
fn map_aligned(len: usize, prot: libc::c_int) -> *mut u8 {
    let Some(over) = len.checked_add(HUGE) else {
        return ptr::null_mut();
    };
    // SAFETY: a fresh private anonymous mapping at an address the kernel picks; nothing else is
    // touched.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            over,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return ptr::null_mut();
    }
    let start = p as usize;
    let aligned = start.next_multiple_of(HUGE);
    // SAFETY: both trimmed ranges lie inside the mapping just made, outside [aligned, aligned + len).
    unsafe {
        if aligned > start {
            libc::munmap(p, aligned - start);
        }
        let tail = start + over - (aligned + len);
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
    }
    advise(aligned, len);
    aligned as *mut u8
}

/// Asks for `[start, start + len)`, a page-aligned range of a mapping of ours, to be backed by huge
/// pages where it holds whole ones.
fn advise(start: usize, len: usize) {
    // SAFETY: the range is one of our own mappings; MADV_HUGEPAGE only hints how to back its pages and
    // changes no contents. Without THP in the kernel it fails, which leaves ordinary pages: ignored.
    unsafe {
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

/// Grows or shrinks a big block's mapping from `old` to `new` bytes (multiples of `PAGE`): in place
/// when the addresses after it are free, else moved onto a reserved aligned range. Null on failure,
/// with the block left as it was.
///
/// # Safety
/// `p` must be the start of a live mapping of exactly `old` bytes made by this allocator.
unsafe fn remap(p: *mut u8, old: usize, new: usize) -> *mut u8 {
    // SAFETY: per the contract, `p` maps `old` bytes; without MREMAP_MAYMOVE the mapping grows or
    // shrinks where it is or the call fails, leaving it alone.
    let q = unsafe { libc::mremap(p.cast(), old, new, 0) };
    if q != libc::MAP_FAILED {
        if new > old {
            advise(p as usize + old, new - old);
        }
        return p;
    }
    let to = map_aligned(new, libc::PROT_NONE);
    if to.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: `to` is a reservation of `new` bytes of ours; MREMAP_FIXED replaces it with the block's
    // pages (and their advice), moved, not copied. On failure the reservation is given back.
    let q = unsafe {
        libc::mremap(
            p.cast(),
            old,
            new,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            to.cast::<libc::c_void>(),
        )
    };
    if q == libc::MAP_FAILED {
        // SAFETY: the reservation is ours and unused.
        unsafe { libc::munmap(to.cast(), new) };
        return ptr::null_mut();
    }
    advise(to as usize, new);
    to
}

// SAFETY: small blocks are `System`'s, which upholds `GlobalAlloc`'s contract. A big block is a
// mapping of its own, zeroed, aligned to HUGE (≥ the layout's alignment, which `big` checks), of at
// least the asked size, live until `dealloc` unmaps it; `big(layout)` tells the two kinds apart
// consistently, because `dealloc` and `realloc` receive the layout the block was made with.
unsafe impl GlobalAlloc for HugeAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if big(&layout) {
            map_aligned(mapped(layout.size()), libc::PROT_READ | libc::PROT_WRITE)
        } else {
            // SAFETY: the caller's contract for `alloc` is passed on unchanged.
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if big(&layout) {
            // A fresh anonymous mapping is zeroed already.
            map_aligned(mapped(layout.size()), libc::PROT_READ | libc::PROT_WRITE)
        } else {
            // SAFETY: as for `alloc`.
            unsafe { System.alloc_zeroed(layout) }
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        if big(&layout) {
            // SAFETY: a big block is a mapping of `mapped(size)` bytes at `p`, no longer used.
            unsafe { libc::munmap(p.cast(), mapped(layout.size())) };
        } else {
            // SAFETY: as for `alloc`.
            unsafe { System.dealloc(p, layout) }
        }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        // SAFETY (whole body): the caller guarantees `p` was made by this allocator with `layout` and
        // that `new` is a valid size for its alignment.
        let to = unsafe { Layout::from_size_align_unchecked(new, layout.align()) };
        match (big(&layout), big(&to)) {
            (false, false) => unsafe { System.realloc(p, layout, new) },
            (true, true) => {
                let (old_len, new_len) = (mapped(layout.size()), mapped(new));
                if old_len == new_len {
                    p
                } else {
                    unsafe { remap(p, old_len, new_len) }
                }
            }
            // Crossing the threshold: a new block, the bytes both hold copied, the old one freed.
            _ => {
                let q = unsafe { self.alloc(to) };
                if !q.is_null() {
                    unsafe {
                        ptr::copy_nonoverlapping(p, q, layout.size().min(new));
                        self.dealloc(p, layout);
                    }
                }
                q
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks of both kinds, grown, shrunk and across the threshold, keep their bytes and alignment.
    #[test]
    fn blocks_keep_their_bytes_through_growth_and_shrinking() {
        let a = HugeAlloc;
        let sizes = [
            100,
            HUGE - 1,
            HUGE + 1,
            BIG - 1,
            BIG,
            BIG + 1,
            3 * BIG + 12345,
            64 * BIG,
            BIG + 7,
            BIG - 3,
            1000,
        ];
        let layout = |n| Layout::from_size_align(n, 64).unwrap();
        // SAFETY: each block is used within its current size, and reallocated and freed with the
        // layout it was last given.
        unsafe {
            let mut p = a.alloc(layout(sizes[0]));
            assert!(!p.is_null());
            let fill = |p: *mut u8, n: usize| {
                for i in (0..n).step_by(4093) {
                    *p.add(i) = (i % 251) as u8;
                }
            };
            let check = |p: *mut u8, n: usize| {
                for i in (0..n).step_by(4093) {
                    assert_eq!(*p.add(i), (i % 251) as u8, "byte {i} of {n}");
                }
            };
            fill(p, sizes[0]);
            for w in sizes.windows(2) {
                let (from, to) = (w[0], w[1]);
                p = a.realloc(p, layout(from), to);
                assert!(!p.is_null(), "{from} -> {to}");
                assert!((p as usize).is_multiple_of(64));
                if to >= BIG {
                    assert!(
                        (p as usize).is_multiple_of(HUGE),
                        "a big block is huge-page aligned"
                    );
                }
                // Blocks past a huge page end on one, below it on a page.
                assert!(mapped(to) >= to && mapped(to).is_multiple_of(PAGE));
                check(p, from.min(to));
                fill(p, to);
            }
            a.dealloc(p, layout(*sizes.last().unwrap()));
            let z = a.alloc_zeroed(layout(2 * BIG));
            assert!((0..2 * BIG).step_by(4096).all(|i| *z.add(i) == 0));
            a.dealloc(z, layout(2 * BIG));
        }
    }

    /// A big vector grown by pushes, as the report's tables are, holds what was pushed.
    #[test]
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
}
