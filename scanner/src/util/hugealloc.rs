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
pub const HUGE: usize = 2 << 20;

/// Blocks this large or larger are mapped on their own; smaller ones are `System`'s. One huge page:
/// the tables that grow to hundreds of megabytes get huge pages and grow without a copy from their
/// first huge page on, while blocks made and freed over and over (an export's buffers of a few hundred
/// KiB per batch and column) are reused from glibc's arenas. Mapped on their own (the threshold was
/// 256 KiB), each was faulted in again page by page and unmapped: 530 k page faults and 2.8 s of
/// system time in a 10 M-entry Parquet export on the H200 machine, 16 % of its wall time
/// (docs/results/2026-12-03-allocator-h200.md).
pub const BIG: usize = HUGE;

/// The base page size (4 KiB on x86-64; 16 or 64 KiB on some aarch64 kernels).
pub fn page() -> usize {
    // SAFETY: sysconf only reads a value (glibc keeps it from the auxiliary vector).
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p)
        .ok()
        .filter(|p| p.is_power_of_two())
        .unwrap_or(4 << 10)
}

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
pub fn mapped(size: usize) -> usize {
    if size >= HUGE {
        size.next_multiple_of(HUGE)
    } else {
        size.next_multiple_of(page())
    }
}

/// A fresh zeroed mapping of `len` bytes (a multiple of the page size) at a `HUGE`-aligned address
/// (so that it can use huge pages as it grows); `prot` is its protection. Null on failure.
fn map_aligned(len: usize, prot: libc::c_int) -> *mut u8 {
    let Some(over) = len.checked_add(HUGE) else {
        return ptr::null_mut();
    };
    // SAFETY: a fresh private anonymous mapping at an address the kernel picks; nothing else is
    // touched. Committed, not MAP_NORESERVE: an impossible size fails here, as malloc's would,
    // instead of the process being killed when it touches the pages.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            over,
            prot,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
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
    aligned as *mut u8
}

/// A fresh zeroed read-write mapping for a big block of `len` bytes, advised to use huge pages. The
/// advice is a flag of the mapping: it goes with it when it grows or moves.
fn map_block(len: usize) -> *mut u8 {
    let p = map_aligned(len, libc::PROT_READ | libc::PROT_WRITE);
    if !p.is_null() {
        advise(p as usize, len);
    }
    p
}

/// Asks for `[start, start + len)`, a page-aligned range of memory of ours, to be backed by huge
/// pages where it holds whole ones (also `bigvec`'s per-entry vectors).
pub(crate) fn advise(start: usize, len: usize) {
    // SAFETY: the range is the caller's own memory; MADV_HUGEPAGE only hints how to back its pages
    // and changes no contents. Without THP in the kernel it fails, which leaves ordinary pages:
    // ignored.
    unsafe {
        libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
    }
}

/// Grows or shrinks a big block's mapping from `old` to `new` bytes (multiples of the page size): in
/// place when it shrinks or the addresses after it are free, else moved onto a reserved aligned
/// range. Null on failure, with the block left as it was.
///
/// # Safety
/// `p` must be the start of a live mapping of exactly `old` bytes made by this allocator.
unsafe fn remap(p: *mut u8, old: usize, new: usize) -> *mut u8 {
    // SAFETY: per the contract, `p` maps `old` bytes; without MREMAP_MAYMOVE the mapping grows or
    // shrinks where it is (keeping its flags, the huge-page advice among them) or the call fails,
    // leaving it alone.
    let q = unsafe { libc::mremap(p.cast(), old, new, 0) };
    if q != libc::MAP_FAILED {
        return p;
    }
    if new < old {
        return ptr::null_mut();
    }
    let to = map_aligned(new, libc::PROT_NONE);
    if to.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: `to` is a reservation of `new` bytes of ours; MREMAP_FIXED replaces it with the block's
    // pages (and its flags: protection, advice), moved, not copied.
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
        // The reservation is left mapped, not given back: a failed MREMAP_FIXED may already have
        // unmapped it, and another thread may have mapped something there since. Only address
        // space is lost, on a path where memory has run out.
        return ptr::null_mut();
    }
    to
}

// SAFETY: small blocks are `System`'s, which upholds `GlobalAlloc`'s contract. A big block is a
// mapping of its own, zeroed, aligned to HUGE (≥ the layout's alignment, which `big` checks), of at
// least the asked size, live until `dealloc` unmaps it; `big(layout)` tells the two kinds apart
// consistently, because `dealloc` and `realloc` receive the layout the block was made with.
unsafe impl GlobalAlloc for HugeAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if big(&layout) {
            map_block(mapped(layout.size()))
        } else {
            // SAFETY: the caller's contract for `alloc` is passed on unchanged.
            unsafe { System.alloc(layout) }
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if big(&layout) {
            // A fresh anonymous mapping is zeroed already.
            map_block(mapped(layout.size()))
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
