//! Vectors with one element per entry (tens of millions for a large capture). Their pages are asked
//! to be huge pages where the kernel allows it (`madvise`; transparent huge pages are often set to
//! "madvise"), and they are filled by writing, never left as calloc's untouched zero pages: a page
//! first read and then written faults twice and flushes every core's TLB on the second fault. Page
//! faults were 40 % of a 10 M-entry report before this.

/// Below this, huge pages would not be used anyway.
const HUGE: usize = 2 << 20;

/// An empty vector with room for `n` elements, its buffer advised to use huge pages.
pub fn with_capacity<T>(n: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(n);
    let bytes = v.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes >= 2 * HUGE {
        let start = v.as_ptr() as usize;
        let first = start.next_multiple_of(HUGE);
        let last = (start + bytes) / HUGE * HUGE;
        if last > first {
            // SAFETY: [first, last) lies inside the vector's own allocation; MADV_HUGEPAGE is only
            // a hint about how to back those pages and changes no contents. A failure (no THP in
            // this kernel) leaves ordinary pages, which is fine, so the result is ignored.
            unsafe {
                libc::madvise(
                    first as *mut libc::c_void,
                    last - first,
                    libc::MADV_HUGEPAGE,
                );
            }
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
