//! Vectors with one element per entry (tens of millions for a large capture). Their pages are asked
//! to be huge pages where the kernel allows it (`madvise`; transparent huge pages are often set to
//! "madvise"), and they are filled by writing, never left as calloc's untouched zero pages: a page
//! first read and then written faults twice and flushes every core's TLB on the second fault. Page
//! faults were 40 % of a 10 M-entry report before this.

use crate::util::hugealloc::{advise, HUGE};

/// An empty vector with room for `n` elements, its buffer advised to use huge pages.
pub fn with_capacity<T>(n: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(n);
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    // Below two huge pages, one whole huge page may not fit inside: not worth a system call.
    if bytes >= 2 * HUGE {
        let start = v.as_ptr() as usize;
        let first = start.next_multiple_of(HUGE);
        let last = (start + bytes) / HUGE * HUGE;
        if last > first {
            // Only whole huge pages inside the vector's own allocation.
            advise(first, last - first);
        }
    }
    v
}

/// `n` copies of `value`, written out.
pub fn filled<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = with_capacity(n);
    v.resize(n, value);
    v
}
