//! Ring writer benchmarks (divan): the cost of recording one call — two clock reads, a slot
//! reservation, the entry and its completion — per policy, on 1 to 16 threads (slot reservation is
//! one atomic add on a shared head, so more threads measure its contention), and the clock read alone.
//!
//!     cargo bench -p causeway-ring --bench writer
//!
//! The ring is in ordinary memory here, large enough that the drop policy never drops during a
//! benchmark (each benchmark gets a fresh ring); the end-to-end cost through LD_PRELOAD and the hooks is
//! `bench/hotpath.sh` and `control-experiments/device/costs.sh`.

use causeway_ring::clock::{self, Anchor};
use causeway_ring::layout::{self, ClockKind, Kind, Policy};
use causeway_ring::{Fields, Params, Writer};
use divan::Bencher;

/// 2^22 slots (256 MiB): more than the samples below ever take, on 16 threads.
const CAPACITY: u64 = 1 << 22;
const SAMPLES: u32 = 50;
const SAMPLE_SIZE: u32 = 2_000;

struct Ring {
    _buf: Vec<u64>,
    w: Writer,
}

fn ring(policy: Policy) -> Ring {
    let strings = 1u64 << 16;
    let size = layout::file_size(CAPACITY, strings);
    // Written out, not calloc'd: as the shim pre-faults its ring, no page fault may land in a sample
    // (16 threads faulting fresh pages measure the kernel's page-fault path, not the writer).
    let mut buf: Vec<u64> = vec![0; size.div_ceil(8) as usize];
    for page in buf.chunks_mut(512) {
        // SAFETY: a valid, aligned element of the buffer; volatile so the store of a zero into
        // calloc'd memory is not optimised away (it is what faults the page in).
        unsafe { std::ptr::write_volatile(page.as_mut_ptr(), 0) };
    }
    let p = Params {
        capacity: CAPACITY,
        strings_size: strings,
        policy,
        pid: 1,
        ppid: 0,
        level: 4,
        clock: ClockKind::Monotonic,
        ticks_per_sec: 1_000_000_000,
        anchor: Anchor::default(),
        exe: b"bench",
        host: b"bench",
        flags: 0,
    };
    // SAFETY: `buf` is zeroed, 8-aligned, `file_size` bytes long, and lives as long as the writer
    // (both are in the returned `Ring`; the Vec's heap buffer does not move when the Vec does).
    let w = unsafe { Writer::init(buf.as_mut_ptr() as *mut u8, &p) };
    Ring { _buf: buf, w }
}

fn record_call(w: &Writer) {
    let f = Fields {
        t_begin: clock::ticks(),
        tid: 7,
        api: 3,
        kind: Kind::Call as u8,
        a0: 0x5000,
        a1: 0x1000,
        a2: 1,
        ..Fields::default()
    };
    if let Some(seq) = w.begin(&f) {
        w.end(seq, clock::ticks(), 0);
    }
}

#[divan::bench(threads = [1, 2, 4, 8, 16], sample_count = SAMPLES, sample_size = SAMPLE_SIZE)]
fn call_drop(b: Bencher) {
    let r = ring(Policy::Drop);
    b.bench(|| record_call(&r.w));
    assert_eq!(r.w_dropped(), 0, "the ring was too small for the benchmark");
}

#[divan::bench(threads = [1, 2, 4, 8, 16], sample_count = SAMPLES, sample_size = SAMPLE_SIZE)]
fn call_overwrite(b: Bencher) {
    let r = ring(Policy::Overwrite);
    b.bench(|| record_call(&r.w));
}

#[divan::bench(sample_count = SAMPLES, sample_size = SAMPLE_SIZE)]
fn clock_read() -> u64 {
    clock::ticks()
}

impl Ring {
    fn w_dropped(&self) -> u64 {
        // SAFETY: the header's dropped counter is an aligned u64 inside the buffer.
        unsafe {
            (self._buf.as_ptr() as *const u8)
                .add(layout::hdr::DROPPED)
                .cast::<u64>()
                .read_volatile()
        }
    }
}

fn main() {
    clock::init(false);
    divan::main();
}
